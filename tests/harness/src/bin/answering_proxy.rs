//! `answering_proxy UPSTREAM_PORT REPLY [ARGUMENT]`: the test kit's answering proxy as a process, for
//! drivers in other languages: it prints `port N`, then forwards to the server on UPSTREAM_PORT and
//! answers every script call (only those with ARGUMENT among their arguments, when given, e.g.
//! `extend`) with REPLY (e.g. `-no upstream host`) until stdin closes.

use std::io::{Read, Write};

use ratelock_testkit::answering_proxy::AnsweringProxy;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(upstream), Some(reply)) = (args.next(), args.next()) else {
        panic!("answering_proxy UPSTREAM_PORT REPLY [ARGUMENT]");
    };
    let argument = args.next().unwrap_or_default();
    let upstream = upstream.parse().expect("UPSTREAM_PORT: a port");
    let proxy = AnsweringProxy::start_matching(upstream, &reply, &argument);
    println!("port {}", proxy.port());
    std::io::stdout().flush().unwrap();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}
