//! A client setup measured beside the redis-benchmark setup it is compared with (the limiter and lock
//! comparisons use the same pairs of setups, each with its own target ratio).

/// `tasks` client tasks against redis-benchmark with `clients` connections and `pipeline` depth.
pub struct Pairing {
    pub tasks: usize,
    pub clients: u32,
    pub pipeline: u32,
    pub target_ratio: f64,
}
