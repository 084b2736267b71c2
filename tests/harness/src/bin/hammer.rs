//! Worker for the concurrency truth test: `hammer <redis url> <start at µs> <run ms> <tasks>` hits one key
//! per algorithm with `100 per 2 seconds` from `tasks` tasks per algorithm and prints every admission as
//! `<algorithm> <µs before the call> <µs after the reply>` (the server's decision time lies in between).

use std::time::Duration;

use ratelock::clock::now_us;
use ratelock::{Algorithm, Limiter};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, start_at, run_ms, tasks] = &args[..] else {
        eprintln!("usage: hammer <redis url> <start at µs> <run ms> <tasks per algorithm>");
        std::process::exit(2);
    };
    let (start_at, run_ms, tasks): (u64, u64, usize) = (
        start_at.parse().unwrap(),
        run_ms.parse().unwrap(),
        tasks.parse().unwrap(),
    );
    let limiter = Limiter::connect(url).await.expect("connect");
    let stop_at = start_at + run_ms * 1000;
    let mut handles = Vec::new();
    for algorithm in Algorithm::ALL {
        let rules = Limiter::memory()
            .rules(&format!("100 per 2 seconds using {algorithm}"))
            .unwrap();
        for _ in 0..tasks {
            let (limiter, rules) = (limiter.clone(), rules.clone());
            handles.push(tokio::spawn(async move {
                let wait = start_at.saturating_sub(now_us());
                tokio::time::sleep(Duration::from_micros(wait)).await;
                let mut admitted = Vec::new();
                while now_us() < stop_at {
                    let before = now_us();
                    let decision = limiter.hit(format!("hammer:{algorithm}"), &rules, 1).await;
                    let after = now_us();
                    if decision.expect("hit").allowed {
                        admitted.push((before, after));
                    }
                }
                (algorithm, admitted)
            }));
        }
    }
    let mut out = String::new();
    for handle in handles {
        let (algorithm, admitted) = handle.await.unwrap();
        for (before, after) in admitted {
            out += &format!("{algorithm} {before} {after}\n");
        }
    }
    print!("{out}");
}
