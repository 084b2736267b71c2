//! `answering_proxy UPSTREAM_PORT REPLY`: the test kit's answering proxy as a process, for drivers in
//! other languages: it prints `port N`, then forwards to the server on UPSTREAM_PORT and answers every
//! script call with REPLY (e.g. `-no upstream host`) until stdin closes.

use std::io::{Read, Write};

use ratelock_testkit::answering_proxy::AnsweringProxy;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(upstream), Some(reply)) = (args.next(), args.next()) else {
        panic!("answering_proxy UPSTREAM_PORT REPLY");
    };
    let proxy = AnsweringProxy::start(upstream.parse().expect("UPSTREAM_PORT: a port"), &reply);
    println!("port {}", proxy.port());
    std::io::stdout().flush().unwrap();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}
