//! The baseline: `redis-benchmark` sending the same EVALSHA to the same server (no shell, so the
//! empty `now` argument survives), with its requests/second read from the `--csv` output.

use std::process::Command;

/// One redis-benchmark run: total requests, parallel connections, requests pipelined per connection,
/// and (`-r`) the keyspace each `__rand_int__` in the command is replaced from, if any.
pub struct BenchmarkRun {
    pub requests: u64,
    pub clients: u32,
    pub pipeline: u32,
    pub keyspace: Option<u64>,
}

impl BenchmarkRun {
    pub fn describe(&self) -> String {
        if self.pipeline > 1 {
            format!("-c {} -P {}", self.clients, self.pipeline)
        } else {
            format!("-c {}", self.clients)
        }
    }
}

/// SCRIPT LOAD of the script body; returns its SHA1.
pub fn load_script(connection: &mut redis::Connection, body: &str) -> String {
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(body)
        .query(connection)
        .expect("SCRIPT LOAD")
}

/// Runs redis-benchmark against 127.0.0.1:`port` with `command` (e.g. `["EVALSHA", sha, ...]`).
pub fn requests_per_second(port: u16, command: &[String], run: &BenchmarkRun) -> Result<f64, String> {
    let mut benchmark = Command::new("redis-benchmark");
    benchmark
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-n", &run.requests.to_string()])
        .args(["-c", &run.clients.to_string()])
        .args(["-P", &run.pipeline.to_string()]);
    if let Some(keyspace) = run.keyspace {
        benchmark.args(["-r", &keyspace.to_string()]);
    }
    let output = benchmark
        .arg("--csv")
        .args(command)
        .output()
        .map_err(|e| format!("cannot run redis-benchmark ({e}); install redis-tools"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "redis-benchmark failed ({}): {stderr}{stdout}",
            output.status
        ));
    }
    rps_from_csv(&stdout).ok_or_else(|| format!("no requests/second in redis-benchmark output: {stdout:?}"))
}

/// Reads the "rps" column of the last data row. Fields are counted from the end of the line, so a
/// test name containing commas cannot shift them.
fn rps_from_csv(output: &str) -> Option<f64> {
    let mut lines = output.lines().map(str::trim).filter(|line| line.starts_with('"'));
    let header: Vec<&str> = lines.next()?.split(',').collect();
    let rps_from_end = header.len() - header.iter().position(|field| *field == "\"rps\"")?;
    let row: Vec<&str> = lines.next_back()?.split(',').collect();
    let field = row.get(row.len().checked_sub(rps_from_end)?)?;
    field.trim_matches('"').parse().ok()
}

/// Field `field` of command `command`'s line in `INFO commandstats` (e.g. `evalsha`, `calls`); the
/// command's name is matched without case (Redis names a module's commands as they were registered).
pub fn command_stat(connection: &mut redis::Connection, command: &str, field: &str) -> Option<f64> {
    let info: String = redis::cmd("INFO").arg("commandstats").query(connection).ok()?;
    let wanted = format!("cmdstat_{command}:");
    let line = info
        .lines()
        .find(|line| line.to_ascii_lowercase().starts_with(&wanted))?;
    let prefix = format!("{field}=");
    line.split([':', ','])
        .find_map(|part| part.strip_prefix(prefix.as_str()))
        .and_then(|value| value.trim().parse().ok())
}
