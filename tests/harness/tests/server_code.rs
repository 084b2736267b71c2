//! Which server code serves the Redis store's calls: the ratelock module where the server loads it,
//! else the scripts as Redis Functions (FCALL), else EVALSHA, or whichever the store option forces.
//! The shared vectors give the same decisions through memory (tests/vectors.rs), the module, Functions
//! and EVALSHA; the servers' command statistics show which code actually ran. The choice is checked
//! again after a reconnect, and a refusal (the module unloaded, a function flushed, an ACL denial)
//! moves the call to the next route without failing it. On a cluster, each module call goes to its
//! key's node.

use ratelock::store::{LimitRequest, LimitStore, ServerCode};
use ratelock::{Store, StoreOptions};
use ratelock_testkit::module::{command_calls, server_with_module};
use ratelock_testkit::vectors::{assert_store_matches, Via};
use ratelock_testkit::RedisServer;

async fn store(server: &RedisServer, code: ServerCode) -> Store {
    let options = StoreOptions::default().with_server_code(code);
    Store::connect(&server.url(), &options).await.unwrap()
}

async fn store_at(url: &str, code: ServerCode) -> Store {
    let options = StoreOptions::default().with_server_code(code);
    Store::connect(url, &options).await.unwrap()
}

/// `MODULE UNLOAD ratelock` on the server behind `admin`.
fn unload_module(admin: &mut redis::Connection) {
    let _: () = redis::cmd("MODULE")
        .arg("UNLOAD")
        .arg("ratelock")
        .query(admin)
        .unwrap();
}

/// A hit of `rules` on `key`, under the prefix `code`.
fn hit_request<'r>(key: &'r str, rules: &'r ratelock::Rules) -> LimitRequest<'r> {
    LimitRequest {
        prefix: "code",
        key: key.as_bytes(),
        rules,
        cost: 1,
        spend: true,
        max_wait_us: None,
        now_us: None,
    }
}

/// One hit of a 100/second GCRA rule on `key`: allowed or not, or the error.
async fn hit(store: &Store, key: &str) -> ratelock::Result<bool> {
    let rules: ratelock::Rules = "100/second".parse().unwrap();
    let outcomes = store.check(&hit_request(key, &rules)).await?;
    Ok(outcomes.outcomes.iter().all(|o| o.allowed))
}

#[tokio::test]
async fn the_module_serves_the_vectors_when_loaded() {
    let server = server_with_module(&[]);
    let store = store(&server, ServerCode::Auto).await;
    assert_store_matches(&store, Via::Async).await;
    assert!(command_calls(&server, "ratelock.limit") > 500);
    assert_eq!(command_calls(&server, "evalsha"), 0, "no call went to Lua");
}

#[tokio::test]
async fn the_module_serves_the_vectors_through_the_blocking_connection() {
    let server = server_with_module(&[]);
    let store = store(&server, ServerCode::Auto).await;
    assert_store_matches(&store, Via::Blocking).await;
    assert!(command_calls(&server, "ratelock.limit") > 500);
    assert_eq!(command_calls(&server, "evalsha"), 0, "no call went to Lua");
}

#[tokio::test]
async fn functions_serve_the_vectors_when_lua_is_forced_on_a_server_with_the_module() {
    let server = server_with_module(&[]);
    let store = store(&server, ServerCode::Lua).await;
    assert_store_matches(&store, Via::Async).await;
    assert_eq!(command_calls(&server, "ratelock.limit"), 0);
    assert!(command_calls(&server, "fcall") > 500);
    assert_eq!(command_calls(&server, "evalsha"), 0);
}

#[tokio::test]
async fn functions_serve_the_vectors_through_the_blocking_connection() {
    let server = RedisServer::start();
    let store = store(&server, ServerCode::Auto).await;
    assert_store_matches(&store, Via::Blocking).await;
    assert!(command_calls(&server, "fcall") > 500);
    assert_eq!(command_calls(&server, "evalsha"), 0);
}

#[tokio::test]
async fn scripts_serve_the_vectors_when_forced_and_nothing_is_checked() {
    let server = server_with_module(&[]);
    let store = store(&server, ServerCode::Scripts).await;
    assert_store_matches(&store, Via::Async).await;
    assert!(command_calls(&server, "evalsha") > 500);
    assert_eq!(
        command_calls(&server, "ratelock.limit") + command_calls(&server, "fcall"),
        0
    );
    assert_eq!(
        command_calls(&server, "command|info"),
        0,
        "a forced choice never checks"
    );
}

#[tokio::test]
async fn a_flushed_function_library_is_loaded_again_and_the_call_still_answers() {
    let server = RedisServer::start();
    let store = store(&server, ServerCode::Auto).await;
    assert!(hit(&store, "a").await.unwrap());
    let _: () = redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query(&mut server.connection())
        .unwrap();
    assert!(hit(&store, "a").await.unwrap());
    assert!(hit(&store, "a").await.unwrap());
    assert_eq!(command_calls(&server, "fcall"), 3, "every call ran as a function");
    assert_eq!(command_calls(&server, "evalsha"), 0);
    assert_eq!(
        command_calls(&server, "function|load"),
        2,
        "loaded once, then again after the flush"
    );
}

#[tokio::test]
async fn without_the_module_auto_takes_functions_and_forcing_the_module_is_a_configuration_error() {
    let server = RedisServer::start();
    let auto = store(&server, ServerCode::Auto).await;
    assert!(hit(&auto, "a").await.unwrap());
    assert_eq!(command_calls(&server, "fcall"), 1);
    let forced = store(&server, ServerCode::Module).await;
    let err = hit(&forced, "b").await.unwrap_err();
    assert!(err.is_configuration(), "{err}");
    assert!(err.to_string().contains("module"), "{err}");
}

#[tokio::test]
async fn a_module_unloaded_under_the_store_falls_back_and_a_reconnect_finds_it_again() {
    let server = server_with_module(&["--enable-module-command", "yes"]);
    let store = store(&server, ServerCode::Auto).await;
    assert!(hit(&store, "a").await.unwrap());
    assert_eq!(command_calls(&server, "ratelock.limit"), 1);

    let mut admin = server.connection();
    unload_module(&mut admin);
    // The module call meets "unknown command" (it did not run) and goes out again as a function.
    assert!(hit(&store, "a").await.unwrap());
    assert!(hit(&store, "a").await.unwrap());
    assert_eq!(command_calls(&server, "fcall"), 2);

    let module = ratelock_testkit::module::module_path().display().to_string();
    let _: () = redis::cmd("MODULE")
        .arg("LOAD")
        .arg(&module)
        .query(&mut admin)
        .unwrap();
    // Still on the function until the connection is replaced; the new connection checks again.
    assert!(hit(&store, "a").await.unwrap());
    server.kill_clients();
    for _ in 0..3 {
        let _ = hit(&store, "a").await;
    }
    assert!(
        command_calls(&server, "ratelock.limit") >= 1,
        "after the reconnect the module serves the calls again"
    );
}

#[tokio::test]
async fn an_acl_that_denies_the_module_selects_lua() {
    let server = server_with_module(&[]);
    let mut admin = server.connection();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("app")
        .arg("on")
        .arg(">secret")
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .arg("-ratelock.limit")
        .query(&mut admin)
        .unwrap();
    let url = format!("redis://app:secret@127.0.0.1:{}/", server.port());
    let store = store_at(&url, ServerCode::Auto).await;
    assert!(hit(&store, "a").await.unwrap());
    assert!(hit(&store, "a").await.unwrap());
    assert_eq!(
        command_calls(&server, "fcall"),
        2,
        "both calls ran in Lua, as functions"
    );

    // A user who may not even ask (COMMAND denied): the check's NOPERM rules the module out too.
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("app")
        .arg("-command")
        .query(&mut admin)
        .unwrap();
    let store = store_at(&url, ServerCode::Auto).await;
    assert!(hit(&store, "b").await.unwrap());
    assert_eq!(command_calls(&server, "fcall"), 3);

    // Functions denied as well: EVALSHA.
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("app")
        .arg("-function")
        .arg("-fcall")
        .query(&mut admin)
        .unwrap();
    let store = store_at(&url, ServerCode::Auto).await;
    assert!(hit(&store, "c").await.unwrap());
    assert!(hit(&store, "c").await.unwrap());
    assert_eq!(command_calls(&server, "evalsha"), 2);
    assert_eq!(command_calls(&server, "fcall"), 3);
}

#[tokio::test]
async fn locks_and_semaphores_run_on_the_module_where_loaded() {
    use ratelock::{DistributedLock, LockOptions, Semaphore};
    let server = server_with_module(&[]);
    let store = store(&server, ServerCode::Auto).await;
    let lock = DistributedLock::new(&store, "door", LockOptions::default()).unwrap();
    let guard = lock.try_acquire().await.unwrap().expect("a free lock");
    assert!(lock.state().await.unwrap().held);
    guard
        .extend(std::time::Duration::from_secs(5))
        .await
        .unwrap()
        .or_lost("door")
        .unwrap();
    guard.release().await.unwrap().or_lost("door").unwrap();
    let pool = Semaphore::new(&store, "pool", 2, LockOptions::default()).unwrap();
    let permit = pool.try_acquire().await.unwrap().expect("a free permit");
    assert_eq!(pool.in_use().await.unwrap(), 1);
    permit.release().await.unwrap().or_lost("door").unwrap();
    for command in [
        "ratelock.lock_acquire",
        "ratelock.lock_state",
        "ratelock.lock_extend",
        "ratelock.lock_release",
        "ratelock.semaphore_acquire",
        "ratelock.semaphore_state",
        "ratelock.semaphore_release",
    ] {
        assert_eq!(command_calls(&server, command), 1, "{command}");
    }
    assert_eq!(
        command_calls(&server, "fcall") + command_calls(&server, "evalsha"),
        0
    );
}

/// On a cluster the library is loaded on every master (redis-rs sends FUNCTION LOAD to all of them),
/// so calls whose keys live on any master run as functions.
#[tokio::test]
async fn on_a_cluster_every_master_runs_the_functions() {
    let cluster = ratelock_testkit::RedisCluster::start(3, 0);
    let store = store_at(&cluster.url(), ServerCode::Auto).await;
    for user in 0..60 {
        assert!(hit(&store, &format!("user-{user}")).await.unwrap());
    }
    let per_master: Vec<(u64, u64)> = cluster
        .nodes()
        .iter()
        .map(|node| (command_calls(node, "fcall"), command_calls(node, "evalsha")))
        .collect();
    assert!(
        per_master
            .iter()
            .all(|&(fcall, evalsha)| fcall > 0 && evalsha == 0),
        "(FCALL, EVALSHA) per master: {per_master:?}"
    );
}

/// One blocking hit (the blocking connection, as Python's sync calls take it) of a 100/second rule.
fn hit_blocking(store: &Store, key: &str) -> ratelock::Result<bool> {
    let rules: ratelock::Rules = "100/second".parse().unwrap();
    let request = hit_request(key, &rules);
    let verdict = ratelock_testkit::eventually("opening the blocking connection", || {
        store.check_blocking(&request)
    })?;
    Ok(verdict.outcomes.iter().all(|o| o.allowed))
}

#[tokio::test]
async fn the_blocking_connection_walks_on_when_its_route_refuses_a_call() {
    let server = server_with_module(&["--enable-module-command", "yes"]);
    let store = store(&server, ServerCode::Auto).await;
    assert!(hit_blocking(&store, "a").unwrap());
    assert_eq!(command_calls(&server, "ratelock.limit"), 1);
    let mut admin = server.connection();
    unload_module(&mut admin);
    // The module call meets "unknown command" (it did not run) and goes out again as a function.
    assert!(hit_blocking(&store, "a").unwrap());
    assert!(hit_blocking(&store, "a").unwrap());
    assert_eq!(command_calls(&server, "fcall"), 2);
    // A flushed library is loaded again and the call sent once more, still as a function.
    let _: () = redis::cmd("FUNCTION").arg("FLUSH").query(&mut admin).unwrap();
    assert!(hit_blocking(&store, "a").unwrap());
    assert_eq!(
        command_calls(&server, "fcall"),
        3,
        "the call ran once, as a function"
    );
    assert_eq!(
        command_calls(&server, "function|load"),
        2,
        "loaded once, then again after the flush"
    );
    assert_eq!(command_calls(&server, "evalsha"), 0);
}

/// A one-rule request at a fixed time (so that two stores can be asked the same).
fn request_at<'r>(key: &'r str, rules: &'r ratelock::Rules, cost: u64, now_us: u64) -> LimitRequest<'r> {
    LimitRequest {
        cost,
        now_us: Some(now_us),
        ..hit_request(key, rules)
    }
}

/// The same request to both stores: the same verdict, or both fail.
async fn assert_same_verdict(functions: &Store, memory: &Store, request: &LimitRequest<'_>) {
    let (got, want) = (functions.check(request).await, memory.check(request).await);
    match (&got, &want) {
        (Ok(got), Ok(want)) => assert_eq!(got, want, "{:?} cost {}", request.key, request.cost),
        (Err(_), Err(_)) => {}
        _ => panic!("functions {got:?}, memory {want:?} for cost {}", request.cost),
    }
}

#[tokio::test]
async fn the_functions_library_keeps_each_rule_texts_own_reading() {
    // The library keeps the rule it read from a one-rule call's arguments, by their text. Calls that
    // differ only in the cost or the rule's block must each get their own reading, and the kept
    // readings must stay right once more texts came than it keeps (it starts anew).
    let server = RedisServer::start();
    let functions = store(&server, ServerCode::Lua).await;
    let memory = Store::connect("memory://", &StoreOptions::default())
        .await
        .unwrap();
    let now = 1_700_000_000_000_000;
    let plain: ratelock::Rules = "1/minute".parse().unwrap();
    let blocking: ratelock::Rules = "1/minute block 10 minutes".parse().unwrap();
    let burst: ratelock::Rules = "10/minute burst 3".parse().unwrap();
    let steps: [(&str, &ratelock::Rules, u64); 7] = [
        ("plain", &plain, 1),
        ("plain", &plain, 1),
        // The same numbers with a block: a denial bans this key.
        ("blocking", &blocking, 1),
        ("blocking", &blocking, 1),
        ("blocking", &plain, 1),
        // The same rule at a cost within its burst, then above it (an error on both).
        ("burst", &burst, 3),
        ("burst", &burst, 4),
    ];
    for (key, rules, cost) in steps {
        assert_same_verdict(&functions, &memory, &request_at(key, rules, cost, now)).await;
    }
    let many: Vec<ratelock::Rules> = (1..=1_100)
        .map(|limit| format!("{limit}/hour").parse().unwrap())
        .collect();
    for (index, rules) in many.iter().enumerate() {
        let key = format!("many{index}");
        assert_same_verdict(&functions, &memory, &request_at(&key, rules, 1, now)).await;
    }
    for (key, rules, cost) in steps {
        assert_same_verdict(&functions, &memory, &request_at(key, rules, cost, now + 1)).await;
    }
    assert!(command_calls(&server, "fcall") > 1_100);
}

#[tokio::test]
async fn a_function_name_held_by_another_library_sends_the_calls_by_evalsha() {
    // Another library registered the name of our limit function first. Our library cannot load
    // beside it; a call by FCALL would run that other function, so the calls must go by EVALSHA.
    let server = RedisServer::start();
    let ours = ratelock::store::function_library();
    let squatter = format!(
        "#!lua name=squatter\nredis.register_function('{}', function() return 1 end)",
        ours.limit_function
    );
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(squatter)
        .query(&mut server.connection())
        .unwrap();
    let auto = store(&server, ServerCode::Auto).await;
    assert!(hit(&auto, "a").await.unwrap());
    assert!(hit(&auto, "a").await.unwrap());
    assert_eq!(
        command_calls(&server, "fcall"),
        0,
        "no call ran the other library's function"
    );
    assert_eq!(command_calls(&server, "evalsha"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_sends_each_module_call_to_its_keys_node() {
    // redis-rs routes a command it does not know by its first argument: a module call's key count,
    // so most calls went to another node, were answered MOVED and set off a refresh of the slot map.
    let module = ratelock_testkit::module::module_path().display().to_string();
    let cluster = ratelock_testkit::RedisCluster::start_with(3, 0, &["--loadmodule", &module]);
    let store = store_at(&cluster.url(), ServerCode::Auto).await;
    for n in 0..150 {
        assert!(hit(&store, &format!("user:{n}")).await.unwrap());
    }
    let nodes = cluster.nodes();
    let served: u64 = nodes
        .iter()
        .map(|node| command_calls(node, "ratelock.limit"))
        .sum();
    assert!(served >= 150, "the module served {served} of 150 calls");
    let moved: u64 = nodes.iter().map(RedisServer::moved_replies).sum();
    assert!(moved < 5, "{moved} calls were answered MOVED");
}
