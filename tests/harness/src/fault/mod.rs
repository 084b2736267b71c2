//! Faults between clients and servers, for the fault suite: a proxy whose doors add latency, stall or
//! drop replies, partition, reset or throttle connections (`proxy.rs`), and seeded plans that switch
//! those faults on and off so a run can be replayed from its seed (`plan.rs`).

mod plan;
mod proxy;
pub mod scenarios;
pub mod server;

pub use plan::{FaultKind, FaultPlan, SplitMix, Step, EVERY_FAULT};
pub use proxy::{Fault, FaultProxy};
