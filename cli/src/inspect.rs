//! `ratelock inspect KEY [RULES]`: what a key holds in the store, read without changing anything (its
//! entry, its override, each rule's state and time to live), and what the next hit would answer (a
//! peek). `--lock NAME`: the lock's state. Reads one server: a redis:// or rediss:// URL.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ratelock::algorithm::{overrides, standing};
use ratelock::{Algorithm, AnyLockStore, DistributedLock, LockOptions, Rule, StoreOptions};
use redis::aio::MultiplexedConnection;
use redis::Value;
use serde_json::{json, Value as Json};

use crate::args::{InspectArgs, StoreArgs};
use crate::exit::Exit;
use crate::output::{self, decision_json, decision_line, human};
use crate::store_url;

pub async fn run(store: &StoreArgs, args: InspectArgs, json: bool) -> Result<i32, Exit> {
    if args.lock {
        return inspect_lock(store, &args.key, json).await;
    }
    let mut connection = connect(&store.url, store.timeout, "inspect").await?;
    let mut base = Vec::new();
    ratelock::key::write_base(&mut base, &store.prefix, args.key.as_bytes());
    // The server's clock, which every stored time was read from: the local one may be off.
    let now = server_now_us(&mut connection).await?;
    let entry = read_entry(&mut connection, &base, now).await?;
    let (override_json, override_phrase, held_override) = read_override(&mut connection, &base).await?;
    let limiter = crate::limit::limiter(store).await?;
    let mut rules_json = Vec::new();
    let mut lines = vec![
        format!("key {:?} under prefix {:?}", args.key, store.prefix),
        format!("  entry: {}", entry.1),
        format!("  override: {override_phrase}"),
    ];
    let mut next = None;
    if let Some(text) = &args.rules {
        let rules = limiter.rules(text)?;
        for rule in rules.iter() {
            let key = ratelock::key::storage_key(&store.prefix, args.key.as_bytes(), rule);
            let (fields, ttl) = read_state(&mut connection, &key).await?;
            // Under an override, the rule decides with the override's limit and burst (a token
            // bucket in fields of its own): its state is read as that rule's.
            let applied = held_override.as_ref().and_then(|held| held.applied(rule));
            let deciding = applied.as_ref().unwrap_or(rule);
            let tokens = overrides::token_fields(rule, deciding);
            let described = describe(deciding, &fields, now, tokens.as_ref());
            let under = applied.as_ref().map_or_else(String::new, |applied| {
                format!(", as {applied} under the override")
            });
            lines.push(format!(
                "  {rule} ({}{under}): {described}{}",
                String::from_utf8_lossy(&key),
                ttl.map_or_else(String::new, |ttl| format!("; expires in {}", human(ttl)))
            ));
            rules_json.push(json!({
                "rule": rule.to_string(),
                "deciding_rule": deciding.to_string(),
                "storage_key": String::from_utf8_lossy(&key),
                "fields": fields.iter().map(|(k, v)| (k.clone(), Json::from(v.clone()))).collect::<serde_json::Map<_, _>>(),
                "ttl_ms": ttl.map(|ttl| ttl.as_millis() as u64),
                "state": described,
            }));
        }
        let decision = limiter.peek(&args.key, &rules, 1).await?;
        lines.push(format!("  the next hit: {}", decision_line(&decision, &rules)));
        next = Some(decision_json(&decision, &rules));
    }
    if json {
        output::line(
            &json!({
                "key": args.key,
                "prefix": store.prefix,
                "entry": entry.0,
                "override": override_json,
                "rules": rules_json,
                "next_hit": next,
            })
            .to_string(),
        )?;
    } else {
        output::line(&lines.join("\n"))?;
    }
    Ok(0)
}

/// One connection to the server of `url` (a single node: `command` names the command that needs one),
/// each reply waited for `timeout` at most, as the connection itself.
pub async fn connect(url: &str, timeout: Duration, command: &str) -> Result<MultiplexedConnection, Exit> {
    let shown = store_url::shown(url);
    if !(url.starts_with("redis://")
        || url.starts_with("rediss://")
        || url.starts_with("redis+unix://")
        || url.starts_with("unix://"))
    {
        return Err(Exit::Failed(format!(
            "{command} reads one server: give a redis://, rediss:// or redis+unix:// URL (the node that holds the key), not {shown:?}"
        )));
    }
    let client = redis::Client::open(url).map_err(|err| Exit::Failed(format!("{shown:?}: {err}")))?;
    // redis-rs's own limits (500 ms a reply, 1 s to connect) would otherwise cut `--timeout` short.
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(timeout))
        .set_response_timeout(Some(timeout));
    tokio::time::timeout(
        timeout,
        client.get_multiplexed_async_connection_with_config(&config),
    )
    .await
    .map_err(|_| Exit::Failed(format!("connecting to {shown:?} took longer than {timeout:?}")))?
    .map_err(|err| Exit::Failed(format!("connecting to {shown:?}: {err}")))
}

pub async fn query(connection: &mut MultiplexedConnection, cmd: &redis::Cmd) -> Result<Value, Exit> {
    cmd.query_async(connection)
        .await
        .map_err(|err| Exit::Failed(format!("reading the store: {err}")))
}

/// The server's clock (`TIME`), in µs since the Unix epoch.
pub async fn server_now_us(connection: &mut MultiplexedConnection) -> Result<u64, Exit> {
    let (seconds, micros): (u64, u64) = redis::cmd("TIME")
        .query_async(connection)
        .await
        .map_err(|err| Exit::Failed(format!("reading the server's clock: {err}")))?;
    Ok(seconds * 1_000_000 + micros)
}

/// The key's entry at `now` (µs, the server's clock): as JSON and as a phrase.
async fn read_entry(
    connection: &mut MultiplexedConnection,
    base: &[u8],
    now: u64,
) -> Result<(Json, String), Exit> {
    let mut key = base.to_vec();
    key.extend_from_slice(standing::KEY_SUFFIX);
    let raw = match query(connection, redis::cmd("GET").arg(&key)).await? {
        Value::BulkString(raw) => raw,
        _ => return Ok((Json::Null, "none".into())),
    };
    let Some(entry) = standing::Entry::parse(&raw) else {
        return Ok((
            json!({ "unreadable": String::from_utf8_lossy(&raw) }),
            format!(
                "unreadable text {:?} (no ratelock code writes it)",
                String::from_utf8_lossy(&raw)
            ),
        ));
    };
    let kind = entry.standing.reason().name();
    let left = entry.until_us.saturating_sub(now);
    let phrase = if left == 0 {
        format!("{kind}, ended")
    } else {
        format!("{kind} for {} more", human(Duration::from_micros(left)))
    };
    Ok((json!({ "kind": kind, "until_us": entry.until_us }), phrase))
}

/// The key's override: as JSON, as a phrase, and the override itself when it is readable.
async fn read_override(
    connection: &mut MultiplexedConnection,
    base: &[u8],
) -> Result<(Json, String, Option<overrides::Overrides>), Exit> {
    let mut key = base.to_vec();
    key.extend_from_slice(overrides::KEY_SUFFIX);
    let raw = match query(connection, redis::cmd("GET").arg(&key)).await? {
        Value::BulkString(raw) => raw,
        _ => return Ok((Json::Null, "none".into(), None)),
    };
    match overrides::Overrides::parse(&raw) {
        Some(held) => {
            let texts: Vec<String> = held.rules().iter().map(ToString::to_string).collect();
            Ok((json!({ "rules": texts }), texts.join("; "), Some(held)))
        }
        None => Ok((
            json!({ "unreadable": String::from_utf8_lossy(&raw) }),
            format!("unreadable text {:?}", String::from_utf8_lossy(&raw)),
            None,
        )),
    }
}

/// A rule key's fields (a string's value under "value"; a sorted set's count, oldest and newest) and
/// its time to live.
async fn read_state(
    connection: &mut MultiplexedConnection,
    key: &[u8],
) -> Result<(Vec<(String, String)>, Option<Duration>), Exit> {
    let text = |value: &Value| match value {
        Value::BulkString(raw) => String::from_utf8_lossy(raw).into_owned(),
        Value::Int(n) => n.to_string(),
        Value::Double(x) => x.to_string(),
        other => format!("{other:?}"),
    };
    let kind = match query(connection, redis::cmd("TYPE").arg(key)).await? {
        Value::SimpleString(kind) => kind,
        other => text(&other),
    };
    let fields = match kind.as_str() {
        "string" => vec![(
            "value".into(),
            text(&query(connection, redis::cmd("GET").arg(key)).await?),
        )],
        "hash" => match query(connection, redis::cmd("HGETALL").arg(key)).await? {
            Value::Array(items) => items
                .chunks(2)
                .map(|pair| (text(&pair[0]), text(&pair[1])))
                .collect(),
            Value::Map(pairs) => pairs.iter().map(|(k, v)| (text(k), text(v))).collect(),
            _ => Vec::new(),
        },
        "zset" => {
            let count = text(&query(connection, redis::cmd("ZCARD").arg(key)).await?);
            let end = |at: i64| {
                redis::cmd("ZRANGE")
                    .arg(key)
                    .arg(at)
                    .arg(at)
                    .arg("WITHSCORES")
                    .clone()
            };
            let score = |value: Value| match value {
                Value::Array(items) if items.len() == 2 => text(&items[1]),
                _ => String::new(),
            };
            vec![
                ("entries".into(), count),
                ("oldest_us".into(), score(query(connection, &end(0)).await?)),
                ("newest_us".into(), score(query(connection, &end(-1)).await?)),
            ]
        }
        _ => Vec::new(),
    };
    let ttl = match query(connection, redis::cmd("PTTL").arg(key)).await? {
        Value::Int(ms) if ms >= 0 => Some(Duration::from_millis(ms as u64)),
        _ => None,
    };
    Ok((fields, ttl))
}

/// What a rule's stored fields mean at `now` (µs, the server's clock), in words; `tokens`: the fields
/// of a token bucket under an override (its own bucket), in place of `t` and `l`.
fn describe(rule: &Rule, fields: &[(String, String)], now: u64, tokens: Option<&(String, String)>) -> String {
    if fields.is_empty() {
        return "nothing stored (fresh: the whole limit is available)".into();
    }
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.parse::<u64>().ok())
    };
    let until = |us: u64| human(Duration::from_micros(us.saturating_sub(now)));
    match rule.algorithm() {
        Algorithm::Gcra => field("value").map_or_else(String::new, |tat| {
            format!(
                "theoretical arrival time {tat} µs: the burst is whole again in {}",
                until(tat)
            )
        }),
        Algorithm::TokenBucket => {
            match tokens.map_or((field("t"), field("l")), |(t, l)| (field(t), field(l))) {
                (Some(tokens), Some(last)) => {
                    let period = rule.period().as_micros() as u64;
                    let scale = period / gcd(rule.limit(), period);
                    format!(
                        "{:.3} tokens of {} as of {} ago (before refill)",
                        tokens as f64 / scale as f64,
                        rule.burst(),
                        human(Duration::from_micros(now.saturating_sub(last)))
                    )
                }
                _ => format!("fields {fields:?}"),
            }
        }
        Algorithm::LeakyBucket => match field("v") {
            Some(level) => format!(
                "the funnel drains in {} from its last update",
                human(Duration::from_micros(level))
            ),
            None => format!("fields {fields:?}"),
        },
        Algorithm::FixedWindow => match (field("w"), field("c")) {
            (Some(window), Some(count)) => format!("window {window}: {count} of {} counted", rule.limit()),
            _ => format!("fields {fields:?}"),
        },
        Algorithm::SlidingWindow => match (field("w"), field("c"), field("p")) {
            (Some(window), Some(current), Some(previous)) => format!(
                "window {window}: {current} counted, {previous} in the window before (weighted by overlap)"
            ),
            _ => format!("fields {fields:?}"),
        },
        Algorithm::SlidingLog => format!(
            "{} entries in the log (oldest at {} µs, newest at {} µs)",
            field("entries").unwrap_or(0),
            field("oldest_us").map_or("-".into(), |v| v.to_string()),
            field("newest_us").map_or("-".into(), |v| v.to_string()),
        ),
        _ => format!("fields {fields:?}"),
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_micros() as u64)
}

/// `--lock NAME`: the lock's state.
async fn inspect_lock(store: &StoreArgs, name: &str, json: bool) -> Result<i32, Exit> {
    let options = StoreOptions::default().with_timeout(store.timeout);
    let locks = AnyLockStore::connect(&store.url, &options).await?;
    store_url::require_shared(locks.does_io(), &store.url)?;
    let lock = DistributedLock::new(
        locks,
        name.as_bytes(),
        LockOptions::default().with_prefix(store.prefix.clone()),
    )?;
    let state = lock.state().await?;
    if json {
        output::line(
            &json!({
                "lock": name,
                "held": state.held,
                "remaining_ms": state.remaining_us / 1000,
                "holder_fencing_token": (state.held).then_some(state.holder_fence),
                "last_fencing_token": state.last_fence,
            })
            .to_string(),
        )?;
    } else if state.held {
        output::line(&format!(
            "lock {name:?}: held, fencing token {}, lease ends in {}; last token minted {}",
            state.holder_fence,
            human(Duration::from_micros(state.remaining_us)),
            state.last_fence
        ))?;
    } else {
        output::line(&format!(
            "lock {name:?}: free; last token minted {}",
            state.last_fence
        ))?;
    }
    Ok(0)
}
