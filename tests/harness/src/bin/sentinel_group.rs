//! `sentinel_group`: the test kit's Sentinel setup (a master, a replica, three sentinels) as a process,
//! for drivers in other languages. `sentinel_group secured` secures it: the password `s3cret` on the
//! master, the replica and the sentinels, and TLS on every process. `sentinel_group split` gives the
//! master and replica the password `m4ster` and the sentinels `s3ntinel` (no TLS). It prints one line
//! with the setup's URL (`url <redis+sentinel://...>`, `url <rediss+sentinel://:s3cret@...> ca <the CA's
//! PEM file>`, or `url <redis+sentinel://:m4ster@...>`), then reads commands on stdin, one per line,
//! answering `ok` to each:
//!
//! ```text
//! failover     (plays the Rust suite's `sentinel_failover`: the master killed, the replica promoted;
//!               answers ok when the sentinels name the replica and a second has passed)
//! ```
//!
//! It stops every process it started when stdin closes.

use ratelock_testkit::fault::server::sentinel_failover;
use ratelock_testkit::kit_process::serve;
use ratelock_testkit::sentinel::Secured;
use ratelock_testkit::tls::TestCertificates;
use ratelock_testkit::RedisSentinels;

fn main() {
    let mode = std::env::args().nth(1);
    // Kept until the end: dropping them removes the files the servers read.
    let certificates = (mode.as_deref() == Some("secured")).then(|| TestCertificates::make("sentinel-group"));
    let mut setup = match (&certificates, mode.as_deref()) {
        (Some(certificates), _) => RedisSentinels::start_secured(Secured {
            password: Some("s3cret"),
            sentinel_password: Some("s3cret"),
            tls: Some(certificates),
            asking_clients: false,
        }),
        (None, Some("split")) => RedisSentinels::start_secured(Secured {
            password: Some("m4ster"),
            sentinel_password: Some("s3ntinel"),
            tls: None,
            asking_clients: false,
        }),
        (None, None) => RedisSentinels::start(),
        (None, Some(other)) => panic!("sentinel_group: unknown mode {other:?} (secured or split)"),
    };
    let ready = match &certificates {
        Some(certificates) => format!("url {} ca {}", setup.url(), certificates.ca().display()),
        None => format!("url {}", setup.url()),
    };
    serve(&ready, |words| match words {
        ["failover"] => {
            (sentinel_failover(&mut setup).play)();
            true
        }
        _ => false,
    });
}
