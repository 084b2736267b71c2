//! A server out of memory (`maxmemory` reached under `noeviction`) refuses what would grow its data but
//! still runs what gives memory back: a lock's or a permit's release, a lease's new end, a forced
//! release. On every server path: the module, the Functions library and EVALSHA. A release refused
//! there left the lock taken until its lease ran out, and a refused renewal lost a live hold, just
//! when freeing keys helps. (The module's commands and the library's functions were refused; the
//! EVALSHA scripts ran.)

use std::time::Duration;

use ratelock::store::ServerCode;
use ratelock::{DistributedLock, Extended, LockOptions, Released, Semaphore, Store, StoreOptions};
use ratelock_testkit::module::server_with_module;

/// Sets the server's `maxmemory` (`0`: no bound).
fn max_memory(connection: &mut redis::Connection, bytes: &str) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(bytes)
        .query(connection)
        .unwrap();
}

#[tokio::test]
async fn a_full_server_still_takes_back_locks_and_extends_leases_on_every_path() {
    let server = server_with_module(&[]);
    let mut connection = server.connection();
    let options = LockOptions::default()
        .with_ttl(Duration::from_secs(30))
        .with_auto_renew(false);
    for code in [ServerCode::Module, ServerCode::Lua, ServerCode::Scripts] {
        let store = Store::connect(&server.url(), &StoreOptions::default().with_server_code(code))
            .await
            .unwrap();
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
