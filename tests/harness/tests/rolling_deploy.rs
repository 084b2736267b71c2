//! A rolling deploy: the previous release's client (its Lua exactly as it sent it, from
//! tests/compat/previous, called with its arguments) and this version's client on one Redis share one
//! limit and one lock holder, and the lock's fencing tokens keep rising across the two.

use std::time::Duration;

use ratelock::{DistributedLock, Limiter, LockOptions, Store, StoreOptions};
use ratelock_testkit::RedisServer;
use redis::AsyncCommands;

/// The previous release's client: its scripts, called by EVAL with its arguments and call tag.
struct PreviousClient {
    connection: redis::aio::MultiplexedConnection,
}

fn previous_script(name: &str) -> String {
    let path = format!("{}/../compat/previous/{name}.lua", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

impl PreviousClient {
    /// Runs a previous script and checks its call-tag envelope: `{tag, reply}`.
    async fn call(&mut self, name: &str, keys: &[&str], args: &[&str]) -> Vec<i64> {
        let tag = "previous-release-tag";
        let mut command = redis::cmd("EVAL");
        command
            .arg(previous_script(name))
            .arg(keys.len())
            .arg(keys)
            .arg(args)
            .arg(tag);
        let (echoed, reply): (String, Vec<i64>) = command.query_async(&mut self.connection).await.unwrap();
        assert_eq!(echoed, tag);
        reply
    }

    /// `hit` of one GCRA rule `limit` per `period_us` for `key` under prefix `rl`, as the previous
    /// release laid keys out: `rl:{<key>}:g<limit>/<period ms>`.
    async fn hit(&mut self, key: &str, limit: u64, period_us: u64) -> bool {
        let storage = format!("rl:{{{key}}}:g{limit}/{}", period_us / 1000);
        let (limit, period) = (limit.to_string(), period_us.to_string());
        let reply = self
            .call(
                "limit",
                &[&storage],
                &["hit", "", "1", "g", &limit, &period, &limit],
            )
            .await;
        reply[0] == 1
    }
}

#[tokio::test]
async fn the_previous_release_and_this_one_share_one_limit_and_one_lock() {
    let server = RedisServer::start();
    let client = redis::Client::open(server.url()).unwrap();
    let mut previous = PreviousClient {
        connection: client.get_multiplexed_async_connection().await.unwrap(),
    };
    let limiter = Limiter::connect(&server.url()).await.unwrap();
    let rules = "5/minute".parse().unwrap();

    // One limit: hits from both versions, in turns, admit exactly 5 in all.
    let mut admitted = 0;
    for turn in 0..8 {
        let allowed = if turn % 2 == 0 {
            previous.hit("user:7", 5, 60_000_000).await
        } else {
            limiter.hit("user:7", &rules, 1).await.unwrap().allowed
        };
        admitted += u32::from(allowed);
    }
    assert_eq!(admitted, 5, "the two versions count one limit");

    // One lock: held by the previous release, this version cannot take it; released, it can, and its
    // fencing token is above the previous holder's.
    let store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let lock = DistributedLock::new(&store, "orders:9", LockOptions::default()).unwrap();
    let (lease, fence, channel) = (
        "rl:{orders:9}:lock",
        "rl:{orders:9}:fence",
        "rl:{orders:9}:released",
    );
    let granted = previous
        .call(
            "lock_acquire",
            &[lease, fence],
            &["previous-owner", "10000000", "0", ""],
        )
        .await;
    assert_eq!(granted[0], 1, "the previous release takes the free lock");
    assert!(
        lock.try_acquire().await.unwrap().is_none(),
        "held by the previous release"
    );
    let released = previous
        .call(
            "lock_release",
            &[lease],
            &["previous-owner", channel, &granted[1].to_string()],
        )
        .await;
    assert_eq!(released[0], 1);
    let guard = lock.acquire(Duration::from_secs(2)).await.unwrap();
    assert!(
        guard.fencing_token() > granted[1] as u64,
        "tokens keep rising across the versions"
    );
    guard.release().await.unwrap();
    let mut raw = client.get_multiplexed_async_connection().await.unwrap();
    let owner: Option<String> = raw.hget(lease, "o").await.unwrap();
    assert_eq!(
        owner, None,
        "released by this version, the lease is gone for both"
    );
}
