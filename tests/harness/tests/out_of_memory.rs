//! A server out of memory (`maxmemory` reached under `noeviction`) refuses what would grow its data but
//! still runs what gives memory back: a lock's or a permit's release, a lease's new end, a forced
//! release. On every server path: the module, the Functions library and EVALSHA. A release refused
//! there left the lock taken until its lease ran out, and a refused renewal lost a live hold, just
//! when freeing keys helps. (The module's commands and the library's functions were refused; the
//! EVALSHA scripts ran.)

use std::time::Duration;

use ratelock::store::ServerCode;
use ratelock::{
    DistributedLock, Extended, FairLock, LockOptions, ReadWriteLock, Released, Semaphore, Store, StoreOptions,
};
use ratelock_testkit::module::server_with_module;
use ratelock_testkit::RedisServer;

/// Sets the server's `maxmemory` (`0`: no bound).
fn max_memory(connection: &mut redis::Connection, bytes: &str) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(bytes)
        .query(connection)
        .unwrap();
}

/// A lease of 30 s, not renewed (each renewal the test makes is its own).
fn options() -> LockOptions {
    LockOptions::default()
        .with_ttl(Duration::from_secs(30))
        .with_auto_renew(false)
}

/// A store on `server` for each server path: the module, the Functions library, EVALSHA.
async fn stores_on_every_path(server: &RedisServer) -> Vec<(ServerCode, Store)> {
    let mut stores = Vec::new();
    for code in [ServerCode::Module, ServerCode::Lua, ServerCode::Scripts] {
        let options = StoreOptions::default().with_server_code(code);
        stores.push((code, Store::connect(&server.url(), &options).await.unwrap()));
    }
    stores
}

#[tokio::test]
async fn a_full_server_still_takes_back_locks_and_extends_leases_on_every_path() {
    let server = server_with_module(&[]);
    let mut connection = server.connection();
    let options = options();
    for (code, store) in stores_on_every_path(&server).await {
        let lock = DistributedLock::new(&store, format!("oom:{code:?}:lock"), options.clone()).unwrap();
        let forced = DistributedLock::new(&store, format!("oom:{code:?}:forced"), options.clone()).unwrap();
        let permits = Semaphore::new(&store, format!("oom:{code:?}:permits"), 2, options.clone()).unwrap();
        let held = lock.try_acquire().await.unwrap().unwrap();
        let _forced = forced.try_acquire().await.unwrap().unwrap();
        let permit = permits.try_acquire().await.unwrap().unwrap();

        max_memory(&mut connection, "1");
        let fresh = DistributedLock::new(&store, format!("oom:{code:?}:fresh"), options.clone()).unwrap();
        let refused = fresh.try_acquire().await;
        let extended = held.extend(Duration::from_secs(60)).await;
        let released = held.release().await;
        let permit_released = permit.release().await;
        let force_released = forced.force_release().await;
        max_memory(&mut connection, "0");

        assert!(
            refused.is_err(),
            "{code:?}: an acquire on a full server: {refused:?}"
        );
        assert_eq!(extended.unwrap(), Extended::Extended, "{code:?}: extend");
        assert_eq!(released.unwrap(), Released::Released, "{code:?}: release");
        assert_eq!(permit_released.unwrap(), Released::Released, "{code:?}: permit");
        assert!(force_released.unwrap(), "{code:?}: force release");
        assert!(!lock.is_locked().await.unwrap(), "{code:?}");
        assert_eq!(permits.in_use().await.unwrap(), 0, "{code:?}");
    }
}

#[tokio::test]
async fn a_full_server_still_takes_back_fair_and_read_write_holds_on_every_path() {
    let server = server_with_module(&[]);
    let mut connection = server.connection();
    let options = options();
    for (code, store) in stores_on_every_path(&server).await {
        let fair = FairLock::new(&store, format!("oom:{code:?}:fair"), options.clone()).unwrap();
        let readers = ReadWriteLock::new(&store, format!("oom:{code:?}:read"), options.clone()).unwrap();
        let writers = ReadWriteLock::new(&store, format!("oom:{code:?}:write"), options.clone()).unwrap();
        let fair_held = fair.try_acquire().await.unwrap().unwrap();
        let read_held = readers.try_acquire_read().await.unwrap().unwrap();
        let write_held = writers.try_acquire_write().await.unwrap().unwrap();

        max_memory(&mut connection, "1");
        let fresh = FairLock::new(&store, format!("oom:{code:?}:fresh"), options.clone()).unwrap();
        let refused = fresh.try_acquire().await;
        let fresh_rw = ReadWriteLock::new(&store, format!("oom:{code:?}:fresh_rw"), options.clone()).unwrap();
        let refused_rw = fresh_rw.try_acquire_write().await;
        let extended = [
            fair_held.extend(Duration::from_secs(60)).await,
            read_held.extend(Duration::from_secs(60)).await,
            write_held.extend(Duration::from_secs(60)).await,
        ];
        let released = [
            fair_held.release().await,
            read_held.release().await,
            write_held.release().await,
        ];
        max_memory(&mut connection, "0");

        for (what, released) in ["fair", "read", "write"].iter().zip(released) {
            assert_eq!(released.unwrap(), Released::Released, "{code:?}: {what} release");
        }
        // The module and the library refuse an acquire, which grows the data, and run a renewal, which
        // rewrites a hold's end in place, as a plain lock's. An EVALSHA script follows Redis's rule for
        // scripts instead: its first HSET or ZADD is refused unless it has written before (clearing
        // lapsed holds), so some of its acquires run there and some renewals do not.
        if code != ServerCode::Scripts {
            assert!(
                refused.is_err(),
                "{code:?}: a fair acquire on a full server: {refused:?}"
            );
            assert!(
                refused_rw.is_err(),
                "{code:?}: a write acquire on a full server: {refused_rw:?}"
            );
            for (what, extended) in ["fair", "read", "write"].iter().zip(extended) {
                assert_eq!(extended.unwrap(), Extended::Extended, "{code:?}: {what} extend");
            }
        }
        assert!(!fair.is_locked().await.unwrap(), "{code:?}");
        assert!(
            writers.try_acquire_write().await.unwrap().is_some(),
            "{code:?}: the write lock is free"
        );
        assert!(
            readers.try_acquire_write().await.unwrap().is_some(),
            "{code:?}: the readers are gone"
        );
    }
}
