//! `sentinel_group`: the test kit's Sentinel setup (a master, a replica, three sentinels) as a process,
//! for drivers in other languages. It prints one line with the setup's `redis+sentinel://` URL, then
//! reads commands on stdin, one per line, answering `ok` to each:
//!
//! ```text
//! failover     (plays the Rust suite's `sentinel_failover`: the master killed, the replica promoted;
//!               answers ok when the sentinels name the replica and a second has passed)
//! ```
//!
//! It stops every process it started when stdin closes.

use ratelock_testkit::fault::server::sentinel_failover;
use ratelock_testkit::kit_process::serve;
use ratelock_testkit::RedisSentinels;

fn main() {
    let mut setup = RedisSentinels::start();
    let ready = format!("url {}", setup.url());
    serve(&ready, |words| match words {
        ["failover"] => {
            (sentinel_failover(&mut setup).play)();
            true
        }
        _ => false,
    });
}
