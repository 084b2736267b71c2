//! `make demo`: multi-rule rate limiting on the embedded memory store, with every decision printed.
//! A simulated clock (explicit `now`) keeps the story readable and the output the same on every run.

use std::time::Duration;

use ratelock::{Decision, Limiter, Rules};

const START_US: u64 = 1_763_800_000_000_000;

fn at(seconds: f64) -> u64 {
    START_US + (seconds * 1_000_000.0).round() as u64
}

fn show(seconds: f64, who: &str, cost: u64, rules: &Rules, d: &Decision) {
    let verdict = if d.allowed { "allowed" } else { "DENIED " };
    let rule = &rules[d.rule_index];
    let wait = if d.allowed {
        String::new()
    } else {
        format!("  retry in {:.3} s", d.retry_after.as_secs_f64())
    };
    println!(
        "  t={seconds:>6.3}s  {who:<8} cost {cost}  {verdict}  remaining {:>2} of {:<2} ({rule}){wait}",
        d.remaining, d.limit
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), ratelock::Error> {
    let limiter = Limiter::memory();
    println!("ratelock demo: embedded memory store, simulated clock\n");

    let api: Rules = "5/second; 8/minute".parse()?;
    println!("1) One key, two rules checked together, all or nothing: \"{api}\"");
    let traffic = [
        (0.0, "user:42"),
        (0.0, "user:42"),
        (0.0, "user:42"),
        (0.0, "user:7"),
        (0.1, "user:42"),
        (0.1, "user:42"),
        (0.1, "user:42"),
        (0.5, "user:42"),
        (1.5, "user:42"),
        (1.6, "user:42"),
        (2.0, "user:42"),
        (2.0, "user:7"),
    ];
    for (seconds, who) in traffic {
        let d = limiter.hit_at(who, &api, 1, at(seconds)).await?;
        show(seconds, who, 1, &api, &d);
    }
    let d = limiter.peek_at("user:42", &api, 1, at(2.0)).await?;
    println!(
        "  peek at t=2s (spends nothing): allowed={} — the 8/minute rule waits {:.1} s more\n",
        d.allowed,
        d.retry_after.as_secs_f64()
    );

    println!("2) Weighted requests: an upload costs 3 units of \"10/second burst 4 using token_bucket\"");
    let uploads: Rules = "10/second burst 4 using token_bucket".parse()?;
    for (seconds, cost) in [(10.0, 3), (10.0, 3), (10.25, 3), (10.3, 1)] {
        let d = limiter.hit_at("uploads", &uploads, cost, at(seconds)).await?;
        show(seconds, "uploads", cost, &uploads, &d);
    }
    match limiter.hit_at("uploads", &uploads, 5, at(11.0)).await {
        Err(err) => println!("  cost 5 > burst 4 is an error, not a denial: {err}\n"),
        Ok(d) => println!("  unexpected: {d:?}\n"),
    }

    println!("3) The boundary double burst: 3/second, 3 requests just before and 3 just after a second ends");
    for algorithm in ["fixed_window", "sliding_window", "sliding_log", "gcra"] {
        let rules: Rules = format!("3/second using {algorithm}").parse()?;
        let key = format!("boundary:{algorithm}");
        let mut admitted = 0;
        for seconds in [20.999, 20.999, 20.999, 21.0, 21.0, 21.0] {
            admitted += limiter.hit_at(&key, &rules, 1, at(seconds)).await?.allowed as u32;
        }
        println!("  {algorithm:<15} admitted {admitted} of 6 within 2 ms");
    }

    let d = limiter.hit("live:clock", &"2/second".parse()?, 1).await?;
    println!(
        "\nOn the real clock: allowed={}, reset after {:?}. Point Limiter::connect at redis://... to share limits.",
        d.allowed,
        Duration::from_millis(d.reset_after.as_millis() as u64)
    );
    Ok(())
}
