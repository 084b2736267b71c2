//! The fencing counter on every server path (the module, Redis Functions, EVALSHA) and for every lock
//! kind that mints a token (DistributedLock, FairLock, ReadWriteLock's readers and writers): a token is
//! above the counter's last one and at least the server clock, the counter holds it afterwards, and a
//! counter that can mint no further token (2^53 - 1) or holds what no ratelock code writes fails the
//! acquire as a protocol error, taking no lock and leaving the counter's value as it was.

use ratelock::key::{FairLockKeys, LockKeys, RwLockKeys};
use ratelock::store::ServerCode;
use ratelock::{DistributedLock, FairLock, LockOptions, ReadWriteLock, Store, StoreOptions};
use ratelock_testkit::module::{command_calls, server_with_module};
use ratelock_testkit::RedisServer;

/// The lock kinds that mint fencing tokens.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Lock,
    Fair,
    Reader,
    Writer,
}

const KINDS: [Kind; 4] = [Kind::Lock, Kind::Fair, Kind::Reader, Kind::Writer];

impl Kind {
    /// The name of this kind's lock in these tests.
    fn name(self) -> &'static str {
        match self {
            Kind::Lock => "fenced-lock",
            Kind::Fair => "fenced-fair",
            Kind::Reader | Kind::Writer => "fenced-rw",
        }
    }

    /// The fencing counter's key and the key that holds a grant.
    fn keys(self) -> (Vec<u8>, Vec<u8>) {
        let name = self.name().as_bytes();
        match self {
            Kind::Lock => {
                let keys = LockKeys::new("rl", name);
                (keys.fence, keys.lease)
            }
            Kind::Fair => {
                let keys = FairLockKeys::new("rl", name);
                (keys.fence, keys.holder)
            }
            Kind::Reader => {
                let keys = RwLockKeys::new("rl", name);
                (keys.fence, keys.readers)
            }
            Kind::Writer => {
                let keys = RwLockKeys::new("rl", name);
                (keys.fence, keys.writer)
            }
        }
    }

    /// One grant taken and given back: its fencing token, or the acquire's error.
    async fn grant(self, store: &Store) -> ratelock::Result<u64> {
        let options = LockOptions::default();
        let token = match self {
            Kind::Lock => {
                let guard = DistributedLock::new(store, self.name(), options)?
                    .try_acquire()
                    .await?;
                let guard = guard.expect("a free lock");
                let token = guard.fencing_token();
                guard.release().await?;
                token
            }
            Kind::Fair => {
                let guard = FairLock::new(store, self.name(), options)?.try_acquire().await?;
                let guard = guard.expect("a free fair lock");
                let token = guard.fencing_token();
                guard.release().await?;
                token
            }
            Kind::Reader | Kind::Writer => {
                let lock = ReadWriteLock::new(store, self.name(), options)?;
                let guard = match self {
                    Kind::Reader => lock.try_acquire_read().await?,
                    _ => lock.try_acquire_write().await?,
                };
                let guard = guard.expect("a free read-write lock");
                let token = guard.fencing_token();
                guard.release().await?;
                token
            }
        };
        Ok(token)
    }
}

fn set(server: &RedisServer, key: &[u8], value: &str) {
    let _: () = redis::cmd("SET")
        .arg(key)
        .arg(value)
        .query(&mut server.connection())
        .unwrap();
}

fn get(server: &RedisServer, key: &[u8]) -> Option<String> {
    redis::cmd("GET")
        .arg(key)
        .query(&mut server.connection())
        .unwrap()
}

fn exists(server: &RedisServer, key: &[u8]) -> bool {
    redis::cmd("EXISTS")
        .arg(key)
        .query(&mut server.connection())
        .unwrap()
}

/// The server clock in µs.
fn server_now_us(server: &RedisServer) -> u64 {
    let (seconds, micros): (u64, u64) = redis::cmd("TIME").query(&mut server.connection()).unwrap();
    seconds * 1_000_000 + micros
}

/// Every branch of minting on `kind`'s lock through `store`.
async fn check_the_counter(server: &RedisServer, store: &Store, kind: Kind, path: &str) {
    let (fence, held) = kind.keys();
    let what = format!("{kind:?} via {path}");

    // No counter yet, then one behind the clock: the token is the server clock.
    for last in [None, Some("5")] {
        let _: () = redis::cmd("DEL")
            .arg(&fence)
            .query(&mut server.connection())
            .unwrap();
        if let Some(last) = last {
            set(server, &fence, last);
        }
        let before = server_now_us(server);
        let token = kind.grant(store).await.unwrap();
        assert!(
            token >= before && token <= server_now_us(server),
            "{what}: {token} from {last:?}"
        );
        assert_eq!(get(server, &fence), Some(token.to_string()), "{what}");
    }

    // A counter ahead of the clock: the token is one above it.
    let ahead = server_now_us(server) + 3_600_000_000;
    set(server, &fence, &ahead.to_string());
    assert_eq!(kind.grant(store).await.unwrap(), ahead + 1, "{what}");
    assert_eq!(get(server, &fence), Some((ahead + 1).to_string()), "{what}");

    // The last token every client reads exactly, then none.
    set(server, &fence, "9007199254740990");
    assert_eq!(kind.grant(store).await.unwrap(), 9_007_199_254_740_991, "{what}");
    let exhausted = kind.grant(store).await.unwrap_err();
    assert_eq!(exhausted.code(), "PROTOCOL", "{what}: {exhausted}");
    assert!(exhausted.to_string().contains("exhausted"), "{what}: {exhausted}");
    assert_eq!(get(server, &fence).as_deref(), Some("9007199254740991"), "{what}");
    assert!(!exists(server, &held), "{what}: no grant is left");

    // What no ratelock code writes.
    for planted in ["hello", "-4", "1.5", "9223372036854775807"] {
        set(server, &fence, planted);
        let corrupt = kind.grant(store).await.unwrap_err();
        assert_eq!(corrupt.code(), "PROTOCOL", "{what}, {planted}: {corrupt}");
        assert_eq!(
            get(server, &fence).as_deref(),
            Some(planted),
            "{what}: the counter is kept"
        );
        assert!(!exists(server, &held), "{what}, {planted}: no grant is left");
    }
    let _: () = redis::cmd("DEL")
        .arg(&fence)
        .query(&mut server.connection())
        .unwrap();
}

async fn check_every_kind(code: ServerCode, path: &str, command: &str) {
    let server = server_with_module(&[]);
    let options = StoreOptions::default().with_server_code(code);
    let store = Store::connect(&server.url(), &options).await.unwrap();
    for kind in KINDS {
        check_the_counter(&server, &store, kind, path).await;
    }
    assert!(
        command_calls(&server, command) > 0,
        "{path}: {command} served the calls"
    );
}

#[tokio::test]
async fn the_module_mints_and_guards_the_counter() {
    check_every_kind(ServerCode::Auto, "the module", "ratelock.lock_acquire").await;
}

#[tokio::test]
async fn functions_mint_and_guard_the_counter() {
    check_every_kind(ServerCode::Lua, "Functions", "fcall").await;
}

#[tokio::test]
async fn evalsha_mints_and_guards_the_counter() {
    check_every_kind(ServerCode::Scripts, "EVALSHA", "evalsha").await;
}
