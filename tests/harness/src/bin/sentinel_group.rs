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

use std::io::{BufRead, Write};

use ratelock_testkit::fault::server::sentinel_failover;
use ratelock_testkit::RedisSentinels;

fn main() {
    let mut setup = RedisSentinels::start();
    let mut out = std::io::stdout();
    writeln!(out, "url {}", setup.url()).unwrap();
    out.flush().unwrap();
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap_or_default();
        match line.trim() {
            "failover" => (sentinel_failover(&mut setup).play)(),
            _ => {
                writeln!(out, "unknown command {line:?}").unwrap();
                out.flush().unwrap();
                continue;
            }
        }
        writeln!(out, "ok").unwrap();
        out.flush().unwrap();
    }
}
