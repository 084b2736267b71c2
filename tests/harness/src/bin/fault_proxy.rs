//! `fault_proxy`: the test kit's fault proxy as a process, for drivers in other languages. It prints
//! one line with its doors' ports, then reads commands on stdin, one per line, answering `ok` to each:
//!
//! ```text
//! fault_proxy UPSTREAM_PORT DOORS SEED
//! set DOOR latency_ms jitter_ms stall(0|1) drop(0|1) partitioned(0|1) bandwidth(0: none)
//! cut DOOR
//! clear
//! plan SEED COUNT LONGEST_MS     (plays a seeded plan of every proxy fault; answers ok when it ends)
//! ```
//!
//! It stops when stdin closes.

use std::time::Duration;

use ratelock_testkit::fault::{Fault, FaultPlan, FaultProxy, EVERY_FAULT};
use ratelock_testkit::kit_process::serve;

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("fault_proxy UPSTREAM_PORT DOORS SEED (numbers)"))
        .collect();
    let [upstream, doors, seed] = args[..] else {
        panic!("fault_proxy UPSTREAM_PORT DOORS SEED");
    };
    let proxy = FaultProxy::start(upstream as u16, doors as usize, seed);
    let ports: Vec<String> = (0..proxy.doors()).map(|d| proxy.port(d).to_string()).collect();
    serve(&format!("ports {}", ports.join(" ")), |words| {
        let n = |i: usize| words.get(i).and_then(|w| w.parse::<u64>().ok()).unwrap_or(0);
        match words.first().copied() {
            Some("set") => proxy.set(
                n(1) as usize,
                Fault {
                    latency: Duration::from_millis(n(2)),
                    jitter: Duration::from_millis(n(3)),
                    stall_replies: n(4) == 1,
                    drop_replies: n(5) == 1,
                    partitioned: n(6) == 1,
                    bandwidth: (n(7) > 0).then_some(n(7)),
                },
            ),
            Some("cut") => proxy.cut(n(1) as usize),
            Some("clear") => proxy.set_all(Fault::default()),
            Some("plan") => {
                let plan = FaultPlan::seeded(
                    n(1),
                    proxy.doors(),
                    &EVERY_FAULT,
                    n(2) as usize,
                    Duration::from_millis(n(3)),
                );
                plan.play(&proxy);
            }
            _ => return false,
        }
        true
    });
}
