//! Client overhead and tails, computed as the Python and Node benches compute them: each call is
//! timed right after a PING over a bare socket (interleaved, so both see the same machine at the same
//! moment), and the server's µs per call come from `INFO commandstats` over the same loop, counting
//! only the commands the client sent (a short MONITOR sample tells them from those a script ran:
//! commandstats counts both, and a script's µs already hold its commands').
//!
//! `overhead(p) = call latency at p − PING latency at p − server µs per call`
//!
//! The peer is redis-rs's multiplexed connection sending the minimal GCRA script by EVALSHA: the
//! least a hand-written Rust client could do for the same decision.

use std::collections::HashMap;
use std::future::Future;
use std::io::{Read, Write};
use std::pin::Pin;
use std::time::{Duration, Instant};

use ratelock::{Limiter, Rules};
use ratelock_testkit::RedisServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::report::{Row, Target, Unit};
use crate::server_cost::MINIMAL_GCRA;

const CALLS: usize = 20_000;
const SECONDS: Duration = Duration::from_secs(4);
const WARM_UP_CALLS: usize = 2_000;
const MONITOR_CALLS: usize = 200;
const LADDER: [f64; 4] = [0.50, 0.90, 0.99, 0.999];
/// Band edges in µs; the last band is "above 800 µs".
const BANDS_US: [f64; 5] = [50.0, 100.0, 200.0, 400.0, 800.0];
const NOT_SERVER_WORK: [&str; 4] = ["ping", "config|resetstat", "config", "info"];
const OVERHEAD_TARGET_RATIO: f64 = 1.0;

type Call<'a> = Box<dyn FnMut() -> Pin<Box<dyn Future<Output = ()> + 'a>> + 'a>;

/// One path's sorted call latencies, the PING latencies interleaved with them (ns), and its server µs.
struct Tails {
    name: String,
    calls: Vec<u64>,
    pings: Vec<u64>,
    server_us: f64,
}

impl Tails {
    fn call_us(&self, fraction: f64) -> f64 {
        percentile_us(&self.calls, fraction)
    }

    fn ping_us(&self, fraction: f64) -> f64 {
        percentile_us(&self.pings, fraction)
    }

    /// The client's own µs at `fraction`: the call less the round trip and the server's work.
    fn overhead_us(&self, fraction: f64) -> f64 {
        self.call_us(fraction) - self.ping_us(fraction) - self.server_us
    }

    /// The share of calls in each band of `BANDS_US`, and one more above the last edge.
    fn band_shares(&self) -> Vec<f64> {
        let mut counts = vec![0usize; BANDS_US.len() + 1];
        for &ns in &self.calls {
            let micros = ns as f64 / 1000.0;
            counts[BANDS_US
                .iter()
                .position(|&edge| micros <= edge)
                .unwrap_or(BANDS_US.len())] += 1;
        }
        counts
            .iter()
            .map(|&count| count as f64 / self.calls.len() as f64)
            .collect()
    }
}

fn percentile_us(sorted: &[u64], fraction: f64) -> f64 {
    let index = ((fraction * sorted.len() as f64) as usize).min(sorted.len() - 1);
    sorted[index] as f64 / 1000.0
}

/// The rows (our overhead against the peer's at p50 and p99) and the ladder table, in markdown.
pub async fn rows(server: &RedisServer, rules: &Rules, notes: &mut Vec<String>) -> (Vec<Row>, String) {
    let limiter = Limiter::connect(&server.url())
        .await
        .expect("connect the limiter to the bench redis-server");
    let client = redis::Client::open(server.url()).expect("redis-rs client");
    let peer = client
        .get_multiplexed_async_connection()
        .await
        .expect("redis-rs multiplexed connection");
    let script = redis::Script::new(MINIMAL_GCRA);
    let ours = measure(server, "ratelock Limiter::hit (gcra, FCALL)", {
        let (limiter, rules) = (&limiter, rules);
        Box::new(move || {
            Box::pin(async move {
                let decision = limiter.hit("bench:tails", rules, 1).await.expect("hit");
                std::hint::black_box(decision);
            })
        })
    })
    .await;
    let theirs = measure(
        server,
        "redis-rs multiplexed, the minimal GCRA script (EVALSHA)",
        {
            let script = &script;
            Box::new(move || {
                let mut connection = peer.clone();
                Box::pin(async move {
                    let allowed: i64 = script
                        .key("bench:tails:peer")
                        .arg(1)
                        .arg(60_000)
                        .invoke_async(&mut connection)
                        .await
                        .expect("the minimal GCRA script");
                    std::hint::black_box(allowed);
                })
            })
        },
    )
    .await;
    for tails in [&ours, &theirs] {
        println!(
            "  {:<58} overhead p50 {:6.1} µs   p99 {:6.1} µs   (call p99 {:.1}, PING p99 {:.1}, server {:.1})",
            tails.name,
            tails.overhead_us(0.50),
            tails.overhead_us(0.99),
            tails.call_us(0.99),
            tails.ping_us(0.99),
            tails.server_us
        );
    }
    notes.push(format!(
        "client overhead: {CALLS} calls per path (at most {} s), each right after a raw-socket PING; overhead = \
         call − PING − the server's µs per call (INFO commandstats, the client's own commands only); the ladder is \
         below the table",
        SECONDS.as_secs()
    ));
    let rows = [("p50", 0.50), ("p99", 0.99)]
        .into_iter()
        .map(|(label, fraction)| Row {
            name: format!("Rust hit, client overhead {label} vs redis-rs + the minimal GCRA script"),
            unit: Unit::Micros,
            measured: Some(ours.overhead_us(fraction)),
            baseline: Some(theirs.overhead_us(fraction)),
            target: if label == "p99" {
                Target::RatioAtMost(OVERHEAD_TARGET_RATIO)
            } else {
                Target::None
            },
        })
        .collect();
    (rows, ladder_table(&[ours, theirs]))
}

/// Times `CALLS` calls of `call`, each right after a raw PING, and reads the server's µs for them.
async fn measure(server: &RedisServer, name: &str, mut call: Call<'_>) -> Tails {
    let mut floor = tokio::net::TcpStream::connect(("127.0.0.1", server.port()))
        .await
        .expect("a raw socket to the bench redis-server");
    floor.set_nodelay(true).expect("TCP_NODELAY");
    for _ in 0..WARM_UP_CALLS {
        ping(&mut floor).await;
        call().await;
    }
    let shares = sent_shares(server, &mut call).await;
    let mut stats = server.connection();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut stats)
        .expect("CONFIG RESETSTAT");
    let (mut calls, mut pings) = (Vec::with_capacity(CALLS), Vec::with_capacity(CALLS));
    let deadline = Instant::now() + SECONDS;
    while calls.len() < CALLS {
        let before = Instant::now();
        ping(&mut floor).await;
        let middle = Instant::now();
        call().await;
        let after = Instant::now();
        pings.push((middle - before).as_nanos() as u64);
        calls.push((after - middle).as_nanos() as u64);
        if after > deadline {
            break;
        }
    }
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut stats)
        .expect("INFO");
    let usec: f64 = command_usec(&info)
        .into_iter()
        .filter(|(command, _)| !NOT_SERVER_WORK.contains(&command.as_str()))
        .map(|(command, usec)| {
            usec * shares
                .get(command.split('|').next().unwrap_or(""))
                .copied()
                .unwrap_or(1.0)
        })
        .sum();
    let server_us = usec / calls.len() as f64;
    calls.sort_unstable();
    pings.sort_unstable();
    Tails {
        name: name.to_owned(),
        calls,
        pings,
        server_us,
    }
}

async fn ping(socket: &mut tokio::net::TcpStream) {
    socket.write_all(b"PING\r\n").await.expect("PING written");
    let mut reply = [0u8; 7];
    socket.read_exact(&mut reply).await.expect("PONG read");
    assert_eq!(&reply, b"+PONG\r\n", "PING answered {reply:?}");
}

/// Each command's usec in an `INFO commandstats` text, by its lower-case name.
fn command_usec(info: &str) -> Vec<(String, f64)> {
    info.lines()
        .filter_map(|line| {
            let (name, fields) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let usec = fields.split(',').find_map(|field| field.strip_prefix("usec="))?;
            Some((name.to_ascii_lowercase(), usec.trim().parse().ok()?))
        })
        .collect()
}

/// For each command MONITOR saw during `MONITOR_CALLS` calls, the share of its runs the client sent
/// (the rest ran inside a script: MONITOR marks those `[0 lua]`).
async fn sent_shares(server: &RedisServer, call: &mut Call<'_>) -> HashMap<String, f64> {
    let mut monitor = std::net::TcpStream::connect(("127.0.0.1", server.port())).expect("MONITOR socket");
    monitor.write_all(b"MONITOR\r\n").expect("MONITOR written");
    let mut ok = [0u8; 5];
    monitor.read_exact(&mut ok).expect("MONITOR answered");
    assert_eq!(&ok, b"+OK\r\n", "MONITOR answered {ok:?}");
    for _ in 0..MONITOR_CALLS {
        call().await;
    }
    let mut marker = server.connection();
    let _: String = redis::cmd("ECHO")
        .arg("end of sample")
        .query(&mut marker)
        .expect("ECHO");
    monitor
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    let mut text = Vec::new();
    let mut chunk = [0u8; 65536];
    while !String::from_utf8_lossy(&text).contains("\"ECHO\" \"end of sample\"") {
        let read = monitor.read(&mut chunk).expect("MONITOR lines");
        assert!(read > 0, "MONITOR closed before the end of the sample");
        text.extend_from_slice(&chunk[..read]);
    }
    let (mut sent, mut seen) = (HashMap::<String, f64>::new(), HashMap::<String, f64>::new());
    for line in String::from_utf8_lossy(&text).lines() {
        let Some((origin, command)) = line.split_once("] \"") else {
            continue;
        };
        let name = command.split('"').next().unwrap_or("").to_ascii_lowercase();
        *seen.entry(name.clone()).or_default() += 1.0;
        if !origin.ends_with(" lua") {
            *sent.entry(name).or_default() += 1.0;
        }
    }
    seen.into_iter()
        .map(|(name, count)| {
            let share = sent.get(&name).copied().unwrap_or(0.0) / count;
            (name, share)
        })
        .collect()
}

/// The ladder of every path as a markdown table.
fn ladder_table(measured: &[Tails]) -> String {
    let mut header = vec!["path".to_owned()];
    header.extend(LADDER.iter().map(|fraction| format!("p{}", fraction * 100.0)));
    header.extend(
        [
            "max",
            "PING p50",
            "PING p99",
            "server",
            "overhead p50",
            "overhead p99",
        ]
        .map(str::to_owned),
    );
    header.extend(BANDS_US.iter().map(|edge| format!("≤{edge} µs")));
    header.push(format!(">{} µs", BANDS_US[BANDS_US.len() - 1]));
    let mut text = format!(
        "| {} |\n|:--|{}\n",
        header.join(" | "),
        "--:|".repeat(header.len() - 1)
    );
    for tails in measured {
        let mut cells = vec![tails.name.clone()];
        cells.extend(
            LADDER
                .iter()
                .map(|&fraction| format!("{:.1}", tails.call_us(fraction))),
        );
        cells.push(format!(
            "{:.0}",
            tails.calls[tails.calls.len() - 1] as f64 / 1000.0
        ));
        cells.extend(
            [
                tails.ping_us(0.5),
                tails.ping_us(0.99),
                tails.server_us,
                tails.overhead_us(0.5),
                tails.overhead_us(0.99),
            ]
            .map(|value| format!("{value:.1}")),
        );
        cells.extend(
            tails
                .band_shares()
                .iter()
                .map(|share| format!("{:.1}%", share * 100.0)),
        );
        text.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    text
}
