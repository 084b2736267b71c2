//! `sentinel_group`: the test kit's Sentinel setup (a master, a replica, three sentinels) as a process,
//! for drivers in other languages. `sentinel_group secured` secures it: the password `s3cret` on the
//! master, the replica and the sentinels, and TLS on every process. It prints one line with the setup's
//! URL (`url <redis+sentinel://...>`, or `url <rediss+sentinel://:s3cret@...> ca <the CA's PEM file>`),
//! then reads commands on stdin, one per line, answering `ok` to each:
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
    let secured = std::env::args().nth(1).as_deref() == Some("secured");
    // Kept until the end: dropping them removes the files the servers read.
    let certificates = secured.then(|| TestCertificates::make("sentinel-group"));
    let mut setup = match &certificates {
        Some(certificates) => RedisSentinels::start_secured(Secured {
            password: Some("s3cret"),
            sentinel_password: Some("s3cret"),
            tls: Some(certificates),
        }),
        None => RedisSentinels::start(),
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
