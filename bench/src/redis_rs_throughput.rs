//! Commands per second of redis-rs's multiplexed connection (the Rust peer a user would otherwise
//! call the module with): tokio tasks sharing one connection, each sending the same command and
//! awaiting its reply, one after another, until the measuring window closes. The module row's yardstick
//! for what a Rust client does on the same runtime, beside redis-benchmark's single event loop.

use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;

use crate::client_throughput::{total_of_tasks, Window};

/// Replies per second of `tasks` tasks sending `command` (its name first) over one multiplexed
/// connection to `url`; the first error reply panics (the bench sends only commands that succeed).
pub async fn commands_per_second(url: &str, command: &[String], tasks: usize, window: Window) -> f64 {
    // The limiter's reply timeout (1 s) rather than redis-rs's 500 ms: one stall of the busy machine
    // must not end the run.
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(1)));
    let connection = redis::Client::open(url)
        .expect("a redis-rs client")
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("a redis-rs multiplexed connection");
    let mut call = redis::cmd(&command[0]);
    for argument in &command[1..] {
        call.arg(argument);
    }
    run_tasks(&connection, &call, tasks, Instant::now() + window.warm_up).await;
    let started = Instant::now();
    let replies = run_tasks(&connection, &call, tasks, started + window.measure).await;
    replies as f64 / started.elapsed().as_secs_f64()
}

/// Runs the tasks until `deadline`; returns the number of replies they received.
async fn run_tasks(
    connection: &MultiplexedConnection,
    call: &redis::Cmd,
    tasks: usize,
    deadline: Instant,
) -> u64 {
    total_of_tasks(tasks, |_| {
        let (mut connection, call) = (connection.clone(), call.clone());
        async move {
            let mut replies = 0u64;
            while Instant::now() < deadline {
                let reply: redis::Value = call
                    .query_async(&mut connection)
                    .await
                    .expect("the command on the bench redis-server");
                std::hint::black_box(reply);
                replies += 1;
            }
            replies
        }
    })
    .await
}
