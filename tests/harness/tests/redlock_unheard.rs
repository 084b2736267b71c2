//! Redlock servers that did not answer an acquire may have granted it all the same. Their grants
//! used to stay until the lease ran out, with no token to release them by (each server mints its own).
//! Here two of three servers sit behind fault proxies that throw replies away while the servers run
//! the scripts: a grant made where nobody heard of it is given back soon after the server answers
//! again, whether the acquire won or failed, and the server's part of the handle's live grant is kept.
//! A release a server did not get (cut off by a partition) is sent there again.

use std::future::Future;
use std::time::{Duration, Instant};

use ratelock::algorithm::lease::Extended;
use ratelock::key::LockKeys;
use ratelock::store::LockState;
use ratelock::{AnyLockStore, DistributedLock, LockOptions, Store, StoreOptions};
use ratelock_testkit::fault::{Fault, FaultProxy};
use ratelock_testkit::RedisServer;

/// Much longer than the test: a grant still there at its end was never given back.
const TTL: Duration = Duration::from_secs(30);

/// Three servers, the second and third behind a proxy each; `redlock` reaches them that way, and
/// `seen[i]` reaches server `i` straight.
struct Setup {
    servers: Vec<RedisServer>,
    proxies: Vec<FaultProxy>,
    redlock: AnyLockStore,
    seen: Vec<Store>,
}

async fn setup() -> Setup {
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let proxies: Vec<FaultProxy> = servers[1..]
        .iter()
        .map(|server| FaultProxy::start(server.port(), 1, 5))
        .collect();
    let hosts =
        [servers[0].port(), proxies[0].port(0), proxies[1].port(0)].map(|port| format!("127.0.0.1:{port}"));
    let options = StoreOptions::default().with_timeout(Duration::from_millis(300));
    let redlock = AnyLockStore::connect(&format!("redlock://{}", hosts.join(",")), &options)
        .await
        .unwrap();
    // Connections made and scripts loaded on every server before any fault.
    let warm = DistributedLock::new(&redlock, "unheard:warm", LockOptions::default()).unwrap();
    warm.try_acquire()
        .await
        .unwrap()
        .expect("free")
        .release()
        .await
        .unwrap();
    let mut seen = Vec::new();
    for server in &servers {
        seen.push(
            Store::connect(&server.url(), &StoreOptions::default())
                .await
                .unwrap(),
        );
    }
    Setup {
        servers,
        proxies,
        redlock,
        seen,
    }
}

impl Setup {
    /// The lock `name` as server `at` holds it.
    async fn state_on(&self, at: usize, name: &str) -> LockState {
        DistributedLock::new(&self.seen[at], name, LockOptions::default())
            .unwrap()
            .state()
            .await
            .unwrap()
    }

    /// Throws away the replies of the proxied servers in `muted` (1 or 2) while `call` runs.
    async fn unheard_on<T>(&self, muted: &[usize], call: impl Future<Output = T>) -> T {
        for at in muted {
            self.proxies[at - 1].set(0, Fault::DROP_REPLIES);
        }
        let answer = call.await;
        for at in muted {
            self.proxies[at - 1].set(0, Fault::default());
        }
        answer
    }

    /// Polls server `at` until it no longer holds `name`, for at most 5 s; whether it let go.
    async fn let_go(&self, at: usize, name: &str) -> bool {
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if !self.state_on(at, name).await.held {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }
}

fn options() -> LockOptions {
    LockOptions::default().with_ttl(TTL)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_won_acquires_unheard_grant_is_given_back_and_the_grant_holds() {
    let setup = setup().await;
    let lock = DistributedLock::new(&setup.redlock, "unheard:won", options()).unwrap();
    let guard = setup
        .unheard_on(&[2], lock.try_acquire())
        .await
        .unwrap()
        .expect("a majority granted");
    assert!(
        setup.let_go(2, "unheard:won").await,
        "the server that was not heard still holds the lock: {:?}",
        setup.state_on(2, "unheard:won").await
    );
    assert!(setup.state_on(0, "unheard:won").await.held);
    assert!(setup.state_on(1, "unheard:won").await.held);
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_acquires_unheard_grants_are_given_back() {
    let setup = setup().await;
    let lock = DistributedLock::new(&setup.redlock, "unheard:lost", options()).unwrap();
    let err = setup
        .unheard_on(&[1, 2], lock.try_acquire())
        .await
        .expect_err("only one of three servers answered");
    assert!(err.is_store_failure(), "{err}");
    for at in 0..3 {
        assert!(
            setup.let_go(at, "unheard:lost").await,
            "server {at} still holds the lock: {:?}",
            setup.state_on(at, "unheard:lost").await
        );
    }
    lock.acquire(Duration::from_secs(5))
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_part_of_a_live_grant_is_kept() {
    let setup = setup().await;
    let lock = DistributedLock::new(&setup.redlock, "unheard:live", options()).unwrap();
    let guard = lock.try_acquire().await.unwrap().expect("free");
    let before = setup.state_on(2, "unheard:live").await;
    assert!(before.held);
    let again = setup.unheard_on(&[2], lock.try_acquire()).await.unwrap();
    assert!(again.is_none(), "held by this handle already");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = setup.state_on(2, "unheard:live").await;
    assert!(
        after.held && after.holder_fence == before.holder_fence,
        "the live grant's part was taken: {before:?} then {after:?}"
    );
    guard.release().await.unwrap();
    for at in 0..3 {
        assert!(setup.let_go(at, "unheard:live").await, "server {at}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_a_server_did_not_answer_is_sent_there_again() {
    let setup = setup().await;
    let lock = DistributedLock::new(&setup.redlock, "unheard:release", options()).unwrap();
    let guard = lock.try_acquire().await.unwrap().expect("free");
    // The release never reaches server 2: held back by a partition, then lost with its connection.
    let proxy = &setup.proxies[1];
    proxy.set(
        0,
        Fault {
            partitioned: true,
            ..Fault::default()
        },
    );
    guard.release().await.expect("a majority released");
    proxy.cut(0);
    proxy.set(0, Fault::default());
    for at in 0..3 {
        assert!(
            setup.let_go(at, "unheard:release").await,
            "server {at} still holds the lock: {:?}",
            setup.state_on(at, "unheard:release").await
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_try_beside_a_live_grant_leaves_that_grant_whole() {
    // The handle holds servers 0 and 1; another owner holds server 2 with a later (higher) token. A
    // second try of the handle that two servers do not answer fails: what it may have been granted is
    // given back per server, and the live grant keeps both its servers. (A lock-wide look named server
    // 2's token, which the Redlock store then released as the live grant, on every server.)
    let setup = setup().await;
    let name = "unheard:beside";
    let lock = DistributedLock::new(&setup.redlock, name, options()).unwrap();
    let other = DistributedLock::new(&setup.seen[2], name, options()).unwrap();
    let held_two = other.try_acquire().await.unwrap().expect("server 2 free");
    let guard = lock.try_acquire().await.unwrap().expect("servers 0 and 1");
    held_two.release().await.unwrap();
    let taken_two = other.try_acquire().await.unwrap().expect("server 2 free again");
    let err = setup
        .unheard_on(&[1, 2], lock.try_acquire())
        .await
        .expect_err("only one of three servers answered");
    assert!(err.is_store_failure(), "{err}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        setup.state_on(0, name).await.held,
        "server 0's part of the live grant was released"
    );
    assert!(
        setup.state_on(1, name).await.held,
        "server 1's part of the live grant was released"
    );
    assert!(!guard.is_lost());
    taken_two.release().await.unwrap();
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reentry_a_server_did_not_answer_keeps_the_outer_guard_whole() {
    // Server 2's token is the grant's largest. A re-entry that server 2 does not answer wins on servers
    // 0 and 1: it is the same grant, so both guards name server 2's token, and the outer guard still
    // renews and releases on every server. (The re-entry's record replaced the grant's, and the outer
    // guard's token then matched no record: its renewal answered HeldByOther, and its release left
    // servers 0 and 1 held with no guard.)
    let setup = setup().await;
    let name = "unheard:reentry";
    let _: () = redis::cmd("SET")
        .arg(LockKeys::new("rl", name.as_bytes()).fence)
        .arg(4_000_000_000_000_000u64)
        .query(&mut setup.servers[2].connection())
        .unwrap();
    let options = options().with_reentrant(true).with_auto_renew(false);
    let lock = DistributedLock::new(&setup.redlock, name, options).unwrap();
    let outer = lock.try_acquire().await.unwrap().expect("free");
    let inner = setup
        .unheard_on(&[2], lock.try_acquire())
        .await
        .unwrap()
        .expect("re-entered on servers 0 and 1");
    assert_eq!(
        inner.fencing_token(),
        outer.fencing_token(),
        "one grant, one token"
    );
    // Server 2's breaker closes once it answers again.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let renewed = outer.extend(TTL).await.unwrap();
    assert_eq!(renewed, Extended::Extended, "the outer guard's renewal");
    inner.release().await.unwrap();
    outer.release().await.unwrap();
    for at in 0..3 {
        assert!(setup.let_go(at, name).await, "server {at} still holds the lock");
    }
}
