//! The fair lock and the read-write lock give the same replies from the memory store (the functions of
//! `algorithm::fair` / `algorithm::rwlock`), from Redis (`fair_lock.lua` / `rw_lock.lua`, as functions)
//! and from the ratelock module (RATELOCK.FAIR_LOCK / RATELOCK.RW_LOCK): seeded random timelines of
//! every operation, with explicit times, replayed on each and compared step by step.

use ratelock::algorithm::fair::FairCall;
use ratelock::algorithm::rwlock::{RwCall, RwMode};
use ratelock::key::{FairLockKeys, RwLockKeys};
use ratelock::{LockKindStore, Store, StoreOptions};
use ratelock_testkit::module::{command_calls, server_with_module};
use ratelock_testkit::RedisServer;

const STEPS: usize = 400;
const IDS: [&str; 4] = ["a", "b", "c", "d"];
/// Lease and place lengths in µs: seconds, so no key's real TTL runs out while a timeline replays.
const TTL_US: u64 = 5_000_000;
const WAITER_TTL_US: u64 = 3_000_000;
/// Timelines start in 2096: later than the real clock, which the memory store's sweep goes by (it must
/// not drop state that the explicit times still call live), and below 2^53 µs.
const FAR_FUTURE_US: u64 = 4_000_000_000_000_000;

/// A small deterministic generator (xorshift), so a failing timeline can be replayed from its seed.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len() as u64) as usize]
    }
}

async fn stores(server: &RedisServer) -> (Store, Store) {
    let memory = Store::connect("memory://", &StoreOptions::default())
        .await
        .unwrap();
    let redis = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    (memory, redis)
}

#[tokio::test]
async fn fair_lock_replies_agree() {
    fair_lock_agrees_on(&RedisServer::start()).await;
}

#[tokio::test]
async fn fair_lock_replies_agree_through_the_module() {
    let server = server_with_module(&[]);
    fair_lock_agrees_on(&server).await;
    assert!(command_calls(&server, "ratelock.fair_lock") >= 5 * STEPS as u64);
}

async fn fair_lock_agrees_on(server: &RedisServer) {
    let (memory, redis) = stores(server).await;
    for seed in 1..=5u64 {
        let keys = FairLockKeys::new("agree", format!("fair-{seed}").as_bytes());
        let mut dice = Dice(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut now = FAR_FUTURE_US + seed * 1_000_000_000;
        let mut grants: Vec<(&str, u64)> = Vec::new();
        for step in 0..STEPS {
            now += dice.below(1_500_000);
            let id = dice.pick(&IDS);
            let fence = match dice.below(4) {
                0 => dice.below(3) + now - 2_000_000,
                _ => grants.iter().rev().find(|(g, _)| *g == id).map_or(0, |&(_, f)| f),
            };
            let call = match dice.below(10) {
                0..=3 => FairCall::Acquire {
                    id,
                    ttl_us: TTL_US,
                    waiter_ttl_us: WAITER_TTL_US,
                    queue: dice.below(4) != 0,
                },
                4 | 5 => FairCall::Release { id, fence },
                6 => FairCall::Extend {
                    id,
                    fence,
                    ttl_us: TTL_US,
                },
                7 | 8 => FairCall::Withdraw { id },
                _ => FairCall::State,
            };
            let expected = memory.fair_lock(&keys, call, Some(now)).await.unwrap();
            let got = redis.fair_lock(&keys, call, Some(now)).await.unwrap();
            assert_eq!(got, expected, "seed {seed} step {step}: {call:?} at {now}");
            if let ratelock::algorithm::fair::FairReply::Granted { fence } = got {
                grants.push((id, fence));
            }
        }
        assert!(
            grants.len() > 10,
            "seed {seed}: too few grants ({}) to mean much",
            grants.len()
        );
    }
}

#[tokio::test]
async fn read_write_lock_replies_agree() {
    read_write_lock_agrees_on(&RedisServer::start()).await;
}

#[tokio::test]
async fn read_write_lock_replies_agree_through_the_module() {
    let server = server_with_module(&[]);
    read_write_lock_agrees_on(&server).await;
    assert!(command_calls(&server, "ratelock.rw_lock") >= 5 * STEPS as u64);
}

async fn read_write_lock_agrees_on(server: &RedisServer) {
    let (memory, redis) = stores(server).await;
    for seed in 1..=5u64 {
        let keys = RwLockKeys::new("agree", format!("rw-{seed}").as_bytes());
        let mut dice = Dice(seed.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let mut now = FAR_FUTURE_US + seed * 1_000_000_000;
        let mut grants: Vec<(&str, RwMode, u64)> = Vec::new();
        let (mut reads, mut writes) = (0, 0);
        for step in 0..STEPS {
            now += dice.below(1_500_000);
            let id = dice.pick(&IDS);
            let mode = if dice.below(3) == 0 {
                RwMode::Write
            } else {
                RwMode::Read
            };
            let fence = match dice.below(4) {
                0 => dice.below(3) + now - 2_000_000,
                _ => grants
                    .iter()
                    .rev()
                    .find(|(g, m, _)| *g == id && *m == mode)
                    .map_or(0, |g| g.2),
            };
            let call = match dice.below(10) {
                0..=3 => RwCall::Acquire {
                    id,
                    mode,
                    ttl_us: TTL_US,
                    waiter_ttl_us: WAITER_TTL_US,
                    prefer_writers: seed % 2 == 1,
                    queue: dice.below(4) != 0,
                },
                4 | 5 => RwCall::Release { id, mode, fence },
                6 => RwCall::Extend {
                    id,
                    mode,
                    fence,
                    ttl_us: TTL_US,
                },
                7 => RwCall::Withdraw { id },
                _ => RwCall::State,
            };
            let expected = memory.rw_lock(&keys, call, Some(now)).await.unwrap();
            let got = redis.rw_lock(&keys, call, Some(now)).await.unwrap();
            assert_eq!(got, expected, "seed {seed} step {step}: {call:?} at {now}");
            if let ratelock::algorithm::rwlock::RwReply::Granted { fence } = got {
                grants.push((id, mode, fence));
                match mode {
                    RwMode::Read => reads += 1,
                    RwMode::Write => writes += 1,
                }
            }
        }
        assert!(
            reads > 10 && writes > 2,
            "seed {seed}: {reads} reads, {writes} writes granted"
        );
    }
}
