//! The server's own time per call, as a ladder: each command's latency histogram (`LATENCY HISTOGRAM`,
//! Redis ≥ 7), which times every call's execution alone (no queueing, no network) in buckets bounded by
//! powers of two. Read right after a path's saturating run, since `CONFIG RESETSTAT` clears it; shown
//! as a table of each path's mean (from `INFO commandstats`), its p50, p99 and p99.9 bucket bounds, the
//! share of its calls above three times its mean (the calls a client sees in its own tail whatever it
//! does), and the share above one bound for every path (66 µs), which compares paths within a run.

use redis::Value;

/// One command's histogram: its calls, and each bucket's upper bound in µs with the calls up to it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServerTail {
    pub(crate) calls: u64,
    /// (upper bound in µs, calls at or under it), ascending.
    pub(crate) cumulative: Vec<(u64, u64)>,
}

impl ServerTail {
    /// The smallest bucket bound that holds at least `quantile` of the calls.
    pub(crate) fn bound_at(&self, quantile: f64) -> Option<u64> {
        let wanted = (quantile * self.calls as f64).ceil() as u64;
        self.cumulative
            .iter()
            .find(|(_, calls)| *calls >= wanted)
            .map(|(bound, _)| *bound)
    }

    /// The share of calls above `bound_us`, one of Redis's bucket bounds. A bucket no call fell in is
    /// left out of the reply, so the calls at or under it are those of the last bound listed under it.
    pub(crate) fn share_above_bound(&self, bound_us: u64) -> f64 {
        let under = self
            .cumulative
            .iter()
            .rev()
            .find(|(bound, _)| *bound <= bound_us)
            .map_or(0, |(_, calls)| *calls);
        (self.calls - under) as f64 / self.calls.max(1) as f64
    }

    /// The first bucket bound listed at or above `floor_us`, and the share of calls above it.
    pub(crate) fn share_above(&self, floor_us: f64) -> Option<(u64, f64)> {
        let bound = self
            .cumulative
            .iter()
            .map(|(bound, _)| *bound)
            .find(|bound| *bound as f64 >= floor_us)?;
        Some((bound, self.share_above_bound(bound)))
    }
}

/// `command`'s histogram since the last `CONFIG RESETSTAT`; `None` before Redis 7 or with no calls.
pub(crate) fn read(connection: &mut redis::Connection, command: &str) -> Option<ServerTail> {
    let reply: Value = redis::cmd("LATENCY")
        .arg("HISTOGRAM")
        .arg(command)
        .query(connection)
        .ok()?;
    // RESP2: [name, [calls, n, histogram_usec, [bound, count, ...]]]; RESP3: maps in their place.
    let entry = pairs(&reply)?.into_iter().next()?.1;
    let fields = pairs(entry)?;
    let field = |name: &str| {
        fields
            .iter()
            .find(|(key, _)| {
                matches!(key, Value::BulkString(bytes) if bytes == name.as_bytes())
                    || matches!(key, Value::SimpleString(text) if text == name)
            })
            .map(|(_, value)| *value)
    };
    let calls = number(field("calls")?)?;
    let mut cumulative: Vec<(u64, u64)> = pairs(field("histogram_usec")?)?
        .into_iter()
        .map(|(bound, count)| Some((number(bound)?, number(count)?)))
        .collect::<Option<_>>()?;
    cumulative.sort_unstable();
    (calls > 0).then_some(ServerTail { calls, cumulative })
}

/// A flat array of keys and values, or a map, as (key, value) pairs.
fn pairs(value: &Value) -> Option<Vec<(&Value, &Value)>> {
    match value {
        Value::Array(items) if items.len() % 2 == 0 => {
            Some(items.chunks(2).map(|pair| (&pair[0], &pair[1])).collect())
        }
        Value::Map(entries) => Some(entries.iter().map(|(key, value)| (key, value)).collect()),
        _ => None,
    }
}

fn number(value: &Value) -> Option<u64> {
    match value {
        Value::Int(n) => u64::try_from(*n).ok(),
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
        _ => None,
    }
}

/// How far above its mean a call counts as the tail.
const TAIL_OVER_MEAN: f64 = 3.0;

/// One bucket bound every path is read against too (Redis's bucket for 2^16 ns), so that paths of
/// different means compare within a run; where it falls against a path's mean depends on the machine.
const FIXED_BOUND_US: u64 = 66;

/// One path's server time per call as a histogram: its name, mean µs (from `INFO commandstats`) and
/// buckets.
pub(crate) type Tail = (String, Option<f64>, ServerTail);

/// The table: one line per path with its name, mean µs and histogram.
pub(crate) fn table(paths: &[Tail]) -> String {
    let mut out = format!(
        "| path | calls | mean µs | p50 ≤ µs | p99 ≤ µs | p99.9 ≤ µs | calls above {TAIL_OVER_MEAN}× the mean (bucket bound) | calls above {FIXED_BOUND_US} µs |\n\
         |:--|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    let bound = |tail: &ServerTail, q: f64| tail.bound_at(q).map_or("-".into(), |b| b.to_string());
    for (name, mean, tail) in paths {
        let above = mean
            .and_then(|mean| tail.share_above(mean * TAIL_OVER_MEAN))
            .map_or("-".into(), |(bound, share)| {
                format!("{:.2}% (> {bound} µs)", share * 100.0)
            });
        let above_fixed = format!("{:.2}%", tail.share_above_bound(FIXED_BOUND_US) * 100.0);
        out.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {} | {above} | {above_fixed} |\n",
            tail.calls,
            mean.map_or("-".into(), |m| format!("{m:.1}")),
            bound(tail, 0.5),
            bound(tail, 0.99),
            bound(tail, 0.999),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail() -> ServerTail {
        // 1,000 calls: 900 at or under 16 µs, 980 under 33, 995 under 66, all under 132.
        ServerTail {
            calls: 1000,
            cumulative: vec![(16, 900), (33, 980), (66, 995), (132, 1000)],
        }
    }

    #[test]
    fn a_quantile_reads_the_first_bucket_that_holds_it() {
        assert_eq!(tail().bound_at(0.5), Some(16));
        assert_eq!(tail().bound_at(0.99), Some(66));
        assert_eq!(tail().bound_at(0.999), Some(132));
    }

    #[test]
    fn the_share_above_counts_from_the_first_bound_at_or_over_the_floor() {
        assert_eq!(tail().share_above(30.0), Some((33, 0.02)));
        assert_eq!(tail().share_above(33.0), Some((33, 0.02)));
        assert_eq!(tail().share_above(500.0), None);
    }

    #[test]
    fn a_bucket_left_out_of_the_reply_counts_as_empty() {
        // Nothing fell between 33 and 66 µs, so Redis lists no 66 bucket: 20 calls are above 66 µs.
        let sparse = ServerTail {
            calls: 1000,
            cumulative: vec![(16, 900), (33, 980), (132, 1000)],
        };
        assert_eq!(sparse.share_above_bound(66), 0.02);
        assert_eq!(sparse.share_above_bound(132), 0.0);
        assert_eq!(sparse.share_above_bound(8), 1.0);
        assert_eq!(tail().share_above_bound(66), 0.005);
    }

    #[test]
    fn a_resp2_reply_reads_as_pairs() {
        let resp2 = Value::Array(vec![
            Value::BulkString(b"fcall".to_vec()),
            Value::Array(vec![
                Value::BulkString(b"calls".to_vec()),
                Value::Int(3),
                Value::BulkString(b"histogram_usec".to_vec()),
                Value::Array(vec![Value::Int(8), Value::Int(2), Value::Int(16), Value::Int(3)]),
            ]),
        ]);
        let entry = pairs(&resp2).unwrap()[0].1;
        let fields = pairs(entry).unwrap();
        assert_eq!(fields.len(), 2);
        assert_eq!(number(fields[0].1), Some(3));
    }
}
