//! The floor under a call's server cost: the same keyspace reads and writes as Redis's own commands,
//! queued in one MULTI/EXEC per call. `INFO commandstats` times an EXEC with the commands it runs, so
//! its µs per call is what Redis itself spends on that work, none of it a script's or a module's own
//! cost (the EXEC adds a little of its own: a reply per command, its loop). Rows set a module call
//! against the floor of its work, and a target ratio against the same ratio of the floors.

use crate::redis_benchmark::command_stat;

/// How many transactions one floor measures; sent in pipelines of [`BATCH`].
const TRANSACTIONS: u64 = 100_000;
const BATCH: u64 = 500;

/// The commands of one call's keyspace work, for draw `n` (a key number below the keyspace).
pub type Work<'a> = &'a dyn Fn(u64) -> Vec<redis::Cmd>;

/// Server µs per EXEC of `work` over draws from `0..keyspace` (a fixed xorshift sequence, as
/// redis-benchmark's `-r` draws), on a server with its stats reset first.
pub fn exec_micros(connection: &mut redis::Connection, work: Work<'_>, keyspace: u64) -> Option<f64> {
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(connection).ok()?;
    let mut draw = 0x9E37_79B9_7F4A_7C15u64;
    let mut sent = 0;
    while sent < TRANSACTIONS {
        let mut pipe = redis::pipe();
        for _ in 0..BATCH.min(TRANSACTIONS - sent) {
            draw ^= draw << 13;
            draw ^= draw >> 7;
            draw ^= draw << 17;
            pipe.cmd("MULTI").ignore();
            for command in work(draw % keyspace) {
                pipe.add_command(command).ignore();
            }
            pipe.cmd("EXEC").ignore();
            sent += 1;
        }
        let _: () = pipe.query(connection).ok()?;
    }
    command_stat(connection, "exec", "usec_per_call")
}

/// Server µs per EXEC of `count` PINGs: an upper bound on what an EXEC of `count` commands spends on
/// itself (its loop, a reply per command, the commands' dispatch) rather than on their keyspace work.
pub fn exec_of_pings(connection: &mut redis::Connection, count: usize) -> Option<f64> {
    let pings = |_: u64| (0..count).map(|_| redis::cmd("PING")).collect();
    exec_micros(connection, &pings, 1)
}

/// A command from its words.
pub fn command(words: &[&str]) -> redis::Cmd {
    let mut command = redis::cmd(words[0]);
    for word in &words[1..] {
        command.arg(*word);
    }
    command
}

/// The 12-digit key number redis-benchmark writes for `__rand_int__`, put into `pattern`.
pub fn drawn(pattern: &str, n: u64) -> String {
    pattern.replace("__rand_int__", &format!("{n:012}"))
}
