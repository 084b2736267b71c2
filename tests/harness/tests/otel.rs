//! OpenTelemetry metrics through the SDK's in-memory exporter after real calls on a real redis-server:
//! decisions by outcome, reason and rule; the store's round trips; store errors; lock waits, holds and
//! losses; and no key among the attributes.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::metrics::MeterProvider;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use ratelock::otel::Metrics;
use ratelock::{AnyLockStore, DistributedLock, Limiter, LimiterOptions, LockOptions, Store, StoreOptions};
use ratelock_testkit::RedisServer;

/// Every data point of `name`: its attributes as `key=value` strings, and its value (a sum's, or a
/// histogram's count).
fn points(finished: &[ResourceMetrics], name: &str) -> Vec<(Vec<String>, u64)> {
    let mut found = Vec::new();
    for resource in finished {
        for scope in resource.scope_metrics() {
            for metric in scope.metrics().filter(|metric| metric.name() == name) {
                let attributes = |attrs: &mut dyn Iterator<Item = &opentelemetry::KeyValue>| {
                    let mut shown: Vec<String> = attrs.map(|kv| format!("{}={}", kv.key, kv.value)).collect();
                    shown.sort();
                    shown
                };
                match metric.data() {
                    AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                        for point in sum.data_points() {
                            found.push((attributes(&mut point.attributes()), point.value()));
                        }
                    }
                    AggregatedMetrics::F64(MetricData::Histogram(histogram)) => {
                        for point in histogram.data_points() {
                            found.push((attributes(&mut point.attributes()), point.count()));
                        }
                    }
                    other => panic!("{name}: unexpected data {other:?}"),
                }
            }
        }
    }
    found
}

/// A meter provider whose reader exports to memory on `force_flush`, and ratelock's instruments on it.
fn in_memory() -> (InMemoryMetricExporter, SdkMeterProvider, Arc<Metrics>) {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let metrics = Arc::new(Metrics::new(&provider.meter("ratelock")));
    (exporter, provider, metrics)
}

fn total(points: &[(Vec<String>, u64)], with: &[&str]) -> u64 {
    points
        .iter()
        .filter(|(attributes, _)| with.iter().all(|wanted| attributes.iter().any(|a| a == wanted)))
        .map(|(_, value)| value)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_round_trips_errors_and_locks_are_recorded() {
    let (exporter, provider, metrics) = in_memory();
    let server = RedisServer::start();
    let store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let options = LimiterOptions::default().with_hook(metrics.clone());
    let limiter = Limiter::with_store(store, options).unwrap();
    let rules = limiter.rules("2/minute").unwrap();
    for _ in 0..3 {
        limiter.hit("user:secret-key", &rules, 1).await.unwrap();
    }
    limiter.peek("user:secret-key", &rules, 1).await.unwrap();
    limiter.block("banned", Duration::from_secs(60)).await.unwrap();
    limiter.hit("banned", &rules, 1).await.unwrap();
    // The same server with the scripts forced: the route attribute says EVALSHA.
    let scripts = Store::connect(
        &format!("{}?server_code=scripts", server.url()),
        &StoreOptions::default(),
    )
    .await
    .unwrap();
    let by_script =
        Limiter::with_store(scripts, LimiterOptions::default().with_hook(metrics.clone())).unwrap();
    by_script.hit("other", &rules, 1).await.unwrap();

    let locks = AnyLockStore::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let lock_options = LockOptions::default()
        .with_hook(metrics.clone())
        .with_ttl(Duration::from_millis(600));
    let lock = DistributedLock::new(locks.clone(), "job", lock_options.clone()).unwrap();
    let guard = lock.acquire(Duration::from_secs(1)).await.unwrap();
    guard.release().await.unwrap();
    let lost = lock.acquire(Duration::from_secs(1)).await.unwrap();
    let other = DistributedLock::new(locks, "job", LockOptions::default()).unwrap();
    assert!(other.force_release().await.unwrap());
    tokio::time::timeout(Duration::from_secs(3), lost.lost())
        .await
        .unwrap();
    drop(lost);

    // An outage: the server stops, the call fails (on_error raises by default).
    let mut server = server;
    server.stop();
    let failed = limiter.hit("user:secret-key", &rules, 1).await;
    assert!(failed.is_err());

    provider.force_flush().unwrap();
    let finished = exporter.get_finished_metrics().unwrap();
    let decisions = points(&finished, "ratelock.decisions");
    assert_eq!(
        total(
            &decisions,
            &["outcome=allowed", "operation=hit", "rule=g2/60000", "store=redis"]
        ),
        3
    );
    assert_eq!(
        total(&decisions, &["outcome=denied", "reason=rule"]),
        2,
        "{decisions:?}"
    );
    assert_eq!(total(&decisions, &["operation=peek"]), 1);
    assert_eq!(total(&decisions, &["outcome=denied", "reason=ban"]), 1);
    // Redis 7 has Functions: every call but the forced one went by FCALL.
    assert_eq!(total(&decisions, &["route=fcall"]), 5, "{decisions:?}");
    assert_eq!(total(&decisions, &["route=evalsha"]), 1, "{decisions:?}");
    assert!(
        decisions
            .iter()
            .all(|(attributes, _)| attributes.iter().all(|a| !a.contains("secret"))),
        "no key is an attribute: {decisions:?}"
    );
    let round_trips = points(&finished, "ratelock.store.duration");
    assert_eq!(total(&round_trips, &["store=redis"]), 7, "{round_trips:?}");
    assert_eq!(total(&round_trips, &["route=evalsha"]), 1, "{round_trips:?}");
    let errors = points(&finished, "ratelock.store.errors");
    assert!(total(&errors, &["store=redis"]) >= 1, "{errors:?}");
    let waits = points(&finished, "ratelock.lock.wait.duration");
    assert_eq!(total(&waits, &["kind=lock", "outcome=granted"]), 2, "{waits:?}");
    let held = points(&finished, "ratelock.lock.held.duration");
    assert_eq!(total(&held, &["outcome=released"]), 1, "{held:?}");
    assert_eq!(total(&held, &["outcome=lost"]), 1, "{held:?}");
    assert_eq!(total(&points(&finished, "ratelock.lock.lost"), &["kind=lock"]), 1);
    // Buckets for seconds (the SDK's defaults, 0, 5, 10 ... 10000, were made for milliseconds: every
    // round trip fell into one), and units on the counters.
    for resource in &finished {
        for scope in resource.scope_metrics() {
            for metric in scope.metrics() {
                let wanted = ratelock::metrics::Instrument::ALL
                    .into_iter()
                    .find(|instrument| instrument.name() == metric.name())
                    .unwrap();
                assert_eq!(metric.unit(), wanted.unit(), "{}", metric.name());
                if let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = metric.data() {
                    for point in histogram.data_points() {
                        let bounds: Vec<f64> = point.bounds().collect();
                        assert_eq!(bounds, wanted.boundaries(), "{}", metric.name());
                    }
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_the_failure_policy_answers_is_still_a_store_error() {
    // Under on_error allow, deny or local the outage becomes a degraded decision before any hook sees
    // an answer: ratelock.store.errors stayed at 0 in exactly the deployments that fail open.
    use ratelock::FailurePolicy;
    for policy in [FailurePolicy::Allow, FailurePolicy::Deny, FailurePolicy::Local] {
        let (exporter, provider, metrics) = in_memory();
        let mut server = RedisServer::start();
        let store = Store::connect(
            &server.url(),
            &StoreOptions::default().with_timeout(Duration::from_millis(300)),
        )
        .await
        .unwrap();
        let options = LimiterOptions::default()
            .with_hook(metrics.clone())
            .with_on_error(policy);
        let limiter = Limiter::with_store(store, options).unwrap();
        let rules = limiter.rules("2/minute").unwrap();
        server.stop();
        let answer = limiter.hit("k", &rules, 1).await.unwrap();
        assert!(answer.degraded, "{policy:?}");
        provider.force_flush().unwrap();
        let finished = exporter.get_finished_metrics().unwrap();
        let errors = points(&finished, "ratelock.store.errors");
        assert_eq!(
            total(&errors, &["kind=store_unavailable", "store=redis"]),
            1,
            "{policy:?}: {errors:?}"
        );
        let decisions = points(&finished, "ratelock.decisions");
        assert_eq!(
            total(&decisions, &["outcome=degraded"]),
            1,
            "{policy:?}: {decisions:?}"
        );
        assert_eq!(
            total(&points(&finished, "ratelock.store.duration"), &[]),
            0,
            "{policy:?}: no round trip"
        );
    }
}

#[tokio::test]
async fn a_callers_mistake_is_no_store_error_on_either_store() {
    // The memory store counted a cost over the capacity as a store error, with a round trip; Redis,
    // which checks it before the call, as neither.
    let server = RedisServer::start();
    for url in ["memory://".to_owned(), server.url()] {
        let (exporter, provider, metrics) = in_memory();
        let store = Store::connect(&url, &StoreOptions::default()).await.unwrap();
        let limiter = Limiter::with_store(store, LimiterOptions::default().with_hook(metrics)).unwrap();
        let rules = limiter.rules("5/minute").unwrap();
        let refused = limiter.hit("k", &rules, 10).await.unwrap_err();
        assert!(refused.is_cost_exceeds_capacity(), "{refused}");
        limiter.hit("k", &rules, 1).await.unwrap();
        provider.force_flush().unwrap();
        let finished = exporter.get_finished_metrics().unwrap();
        assert_eq!(
            total(&points(&finished, "ratelock.store.errors"), &[]),
            0,
            "{url}"
        );
        assert_eq!(
            total(&points(&finished, "ratelock.store.duration"), &[]),
            1,
            "{url}"
        );
    }
}

#[tokio::test]
async fn a_wait_its_caller_gives_up_is_measured_as_cancelled() {
    // A dropped wait (a timeout around it, an AbortSignal, an asyncio cancellation) made no measurement.
    let (exporter, provider, metrics) = in_memory();
    let locks = AnyLockStore::connect("memory://", &StoreOptions::default())
        .await
        .unwrap();
    let options = LockOptions::default().with_hook(metrics);
    let holder = DistributedLock::new(locks.clone(), "busy", options.clone()).unwrap();
    let held = holder.acquire(Duration::from_secs(1)).await.unwrap();
    let waiter = DistributedLock::new(locks, "busy", options).unwrap();
    let gave_up =
        tokio::time::timeout(Duration::from_millis(50), waiter.acquire(Duration::from_secs(10))).await;
    assert!(gave_up.is_err(), "the wait was still going");
    held.release().await.unwrap();
    provider.force_flush().unwrap();
    let finished = exporter.get_finished_metrics().unwrap();
    let waits = points(&finished, "ratelock.lock.wait.duration");
    assert_eq!(total(&waits, &["outcome=cancelled"]), 1, "{waits:?}");
    assert_eq!(total(&waits, &["outcome=granted"]), 1, "{waits:?}");
}
