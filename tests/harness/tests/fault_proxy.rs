//! The fault proxy against a real redis-server, one fault at a time, seen by a plain client: each fault
//! does what it says (and the pass-through does nothing), so the fault suite can trust it.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use ratelock_testkit::fault::{Fault, FaultProxy};
use ratelock_testkit::RedisServer;

/// A raw RESP client on `port` with a read timeout.
fn client(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect through the proxy");
    stream.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    stream.set_nodelay(true).unwrap();
    stream
}

/// Sends one inline command and reads one reply line (or the error that ended the wait).
fn ask(stream: &mut TcpStream, command: &str) -> std::io::Result<String> {
    stream.write_all(format!("{command}\r\n").as_bytes())?;
    read_line(stream)
}

fn read_line(stream: &mut TcpStream) -> std::io::Result<String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        match stream.read(&mut byte)? {
            0 => return Err(ErrorKind::UnexpectedEof.into()),
            _ => line.push(byte[0]),
        }
    }
    Ok(String::from_utf8_lossy(&line).trim_end().to_owned())
}

fn timed_out(answer: std::io::Result<String>) -> bool {
    matches!(answer, Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut))
}

#[test]
fn without_a_fault_every_byte_passes() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 1, 1);
    let mut through = client(proxy.port(0));
    assert_eq!(ask(&mut through, "PING").unwrap(), "+PONG");
    assert_eq!(ask(&mut through, "SET k v").unwrap(), "+OK");
    assert_eq!(ask(&mut through, "GET k").unwrap(), "$1");
}

#[test]
fn latency_delays_each_way_and_jitter_adds_at_most_its_bound() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 1, 2);
    let mut through = client(proxy.port(0));
    proxy.set(
        0,
        Fault {
            latency: Duration::from_millis(40),
            jitter: Duration::from_millis(20),
            ..Fault::default()
        },
    );
    let started = Instant::now();
    assert_eq!(ask(&mut through, "PING").unwrap(), "+PONG");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(80),
        "a request and a reply, 40 ms each: {took:?}"
    );
}

#[test]
fn a_stall_holds_replies_until_it_ends() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 1, 3);
    let mut through = client(proxy.port(0));
    proxy.set(
        0,
        Fault {
            stall_replies: true,
            ..Fault::default()
        },
    );
    assert!(timed_out(ask(&mut through, "PING")), "the reply is held");
    proxy.set(0, Fault::default());
    assert_eq!(
        read_line(&mut through).unwrap(),
        "+PONG",
        "and delivered after the stall"
    );
}

#[test]
fn half_open_drops_replies_while_the_server_goes_on() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 1, 4);
    let mut through = client(proxy.port(0));
    proxy.set(
        0,
        Fault {
            drop_replies: true,
            ..Fault::default()
        },
    );
    assert!(timed_out(ask(&mut through, "SET seen-by-server yes")));
    let value: Option<String> = redis::cmd("GET")
        .arg("seen-by-server")
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(value.as_deref(), Some("yes"), "the command ran");
    assert!(proxy.dropped_bytes() > 0);
    proxy.set(0, Fault::default());
    assert!(timed_out(read_line(&mut through)), "a dropped reply never comes");
}

#[test]
fn a_cut_resets_open_connections_and_new_ones_open() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 1, 5);
    let mut through = client(proxy.port(0));
    assert_eq!(ask(&mut through, "PING").unwrap(), "+PONG");
    proxy.cut(0);
    std::thread::sleep(Duration::from_millis(50));
    let answer = ask(&mut through, "PING").and_then(|_| ask(&mut through, "PING"));
    let err = answer.expect_err("the old connection is gone");
    assert!(
        matches!(
            err.kind(),
            ErrorKind::ConnectionReset | ErrorKind::BrokenPipe | ErrorKind::UnexpectedEof
        ),
        "{err:?}"
    );
    let mut again = client(proxy.port(0));
    assert_eq!(ask(&mut again, "PING").unwrap(), "+PONG");
}

#[test]
fn a_cut_returns_once_the_reset_has_reached_the_client() {
    // Tests and the kit's `cut` command go on at once after a cut: it used to return before the proxy's
    // thread had reset anything, so a call made right after could still go through (or die mid-call).
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 1, 5);
    for round in 0..20 {
        let mut through = client(proxy.port(0));
        assert_eq!(ask(&mut through, "PING").unwrap(), "+PONG");
        proxy.cut(0);
        through.set_nonblocking(true).unwrap();
        let mut byte = [0u8; 1];
        let read = through.read(&mut byte);
        assert!(
            matches!(&read, Ok(0)) || matches!(&read, Err(e) if e.kind() == ErrorKind::ConnectionReset),
            "round {round}: right after the cut the client reads {read:?}, not the reset"
        );
    }
}

#[test]
fn a_partition_of_one_door_spares_the_others_and_heals() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 2, 6);
    proxy.set(
        0,
        Fault {
            partitioned: true,
            ..Fault::default()
        },
    );
    let mut cut_off = client(proxy.port(0));
    let mut other = client(proxy.port(1));
    assert!(
        timed_out(ask(&mut cut_off, "PING")),
        "the partitioned group hears nothing"
    );
    assert_eq!(ask(&mut other, "PING").unwrap(), "+PONG");
    proxy.set(0, Fault::default());
    assert_eq!(read_line(&mut cut_off).unwrap(), "+PONG", "it heals");
}

#[test]
fn a_throttle_narrows_the_pipe() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 1, 7);
    let mut through = client(proxy.port(0));
    through.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    proxy.set(
        0,
        Fault {
            bandwidth: Some(20_000),
            ..Fault::default()
        },
    );
    let value = "x".repeat(8_000);
    let started = Instant::now();
    assert_eq!(ask(&mut through, &format!("SET big {value}")).unwrap(), "+OK");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(350), "8 KB at 20 KB/s: {took:?}");
}
