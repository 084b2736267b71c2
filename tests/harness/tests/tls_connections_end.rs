//! A TLS connection ends when nothing uses it any more: when its store is dropped, and when a call's
//! timeout gave it up. Over plain TCP, dropping the write half sends a FIN and the server closes; a TLS
//! stream's halves share one socket, so the reader task, blocked on a read the server would never
//! answer (a live Redis keeps an idle client), kept the socket, the task and a server client, one more
//! for every store dropped or connection given up.

use std::time::{Duration, Instant};

use ratelock::store::{LimitRequest, LimitStore};
use ratelock::{Rules, Store, StoreOptions};
use ratelock_testkit::tls::TestCertificates;
use ratelock_testkit::RedisServer;

/// The server's normal clients, the asking connection left out.
fn clients(server: &RedisServer) -> usize {
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("TYPE")
        .arg("normal")
        .query(&mut server.connection())
        .unwrap();
    list.lines().count().saturating_sub(1)
}

/// Waits up to 3 s for the server to have at most `most` clients; how many it has then.
async fn settles_at(server: &RedisServer, most: usize) -> usize {
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        let now = clients(server);
        if now <= most || Instant::now() > until {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One hit on `store`, its answer as it came.
async fn hit(store: &Store, rules: &Rules) -> ratelock::Result<ratelock::algorithm::standing::Verdict> {
    let request = LimitRequest {
        prefix: "tlsend",
        key: b"k",
        rules,
        cost: 1,
        spend: true,
        max_wait_us: None,
        now_us: None,
    };
    store.check(&request).await
}

#[tokio::test]
async fn a_tls_connection_ends_with_its_store_and_when_a_timeout_gives_it_up() {
    let certificates = TestCertificates::make("ends");
    let tls_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let args = certificates.server_args(tls_port);
    let server = RedisServer::start_with(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let url = format!("rediss://localhost:{tls_port}/");
    let mut options = StoreOptions::default().with_timeout(Duration::from_millis(200));
    options.tls_root_ca = Some(certificates.ca_pem());
    let rules: Rules = "100/minute".parse().unwrap();

    for round in 0..3 {
        let store = Store::connect(&url, &options).await.unwrap();
        hit(&store, &rules).await.unwrap();
        assert!(clients(&server) >= 1, "round {round}: connected");
        drop(store);
        assert_eq!(
            settles_at(&server, 0).await,
            0,
            "round {round}: the dropped store's connections"
        );
    }

    let store = Store::connect(&url, &options).await.unwrap();
    hit(&store, &rules).await.unwrap();
    let before = clients(&server);
    for _ in 0..3 {
        // A call that times out gives its connection up; the next goes out on a fresh one.
        let sleeping = std::thread::spawn({
            let mut connection = server.connection();
            move || {
                let _: redis::RedisResult<()> =
                    redis::cmd("DEBUG").arg("SLEEP").arg("0.8").query(&mut connection);
            }
        });
        // Time for the sleep to reach the server, on a slow machine too (the hit times out at 200 ms).
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(hit(&store, &rules).await.is_err(), "the call timed out");
        sleeping.join().unwrap();
        tokio::time::sleep(Duration::from_millis(700)).await; // past the breaker's pause
        let until = Instant::now() + Duration::from_secs(3);
        while hit(&store, &rules).await.is_err() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    assert!(
        settles_at(&server, before).await <= before,
        "connections given up still open: {} against {before}",
        clients(&server)
    );
}
