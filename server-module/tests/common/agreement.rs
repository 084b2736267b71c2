//! The agreement of RATELOCK.LIMIT with `core/lua/limit.lua`: generated calls (every algorithm and calendar unit, 1 to
//! 3 rules, some that ban when they deny, some in shadow, hit, peek, refund and reserve, explicit `now`, costs up to past capacity, now
//! and then a deny-list or allow-list entry put on the key) sent through the script (by
//! EVALSHA) on one set of keys and through the module on a copy of them, with identical replies and
//! identical stored state (type, value, PTTL within a few ms) asserted after every call.

use std::collections::BTreeSet;

use redis::{Connection, Value};

use super::{key_snapshots, lua_script, run, wall_us, Rng, PTTL_SLACK_MS};

/// One rule as the script takes it: code, limit, period µs (a calendar window's offset from UTC in
/// minutes), burst, block µs (0: no ban; -1: the rule is in shadow).
#[derive(Debug, Clone)]
pub struct Shape {
    pub code: &'static str,
    pub limit: u64,
    pub period: i64,
    pub burst: u64,
    pub block_us: i64,
}

/// A fixed set of rule shapes; every key belongs to one shape, as ratelock's keys do (the rule id).
pub fn shapes(rng: &mut Rng) -> Vec<Shape> {
    let codes = ["g", "tb", "lb", "fw", "sw", "sl"];
    let periods_ms = [7, 250, 1000, 1234, 60_000];
    let mut shapes: Vec<Shape> = (0..24)
        .map(|i| {
            let code = codes[i % codes.len()];
            let limit = 1 + rng.below(12);
            let burst = if matches!(code, "g" | "tb" | "lb") {
                1 + rng.below(15)
            } else {
                limit
            };
            let period_us = periods_ms[rng.below(periods_ms.len() as u64) as usize] * 1000;
            // Some rules ban when they deny, some are in shadow (-1), most do neither.
            let blocks_us = [0, 0, 0, 0, 50_000, 400_000, 2_000_000, -1, -1];
            let block_us = blocks_us[rng.below(blocks_us.len() as u64) as usize];
            Shape {
                code,
                limit,
                period: period_us as i64,
                burst,
                block_us,
            }
        })
        .collect();
    // Calendar windows: the hour's and the day's offsets put a boundary two and four minutes from now,
    // inside a run's drift; the week's, month's and year's are any offset.
    let minute_now = (wall_us() / 60_000_000) as i64;
    let calendar = [
        ("ch", -((minute_now + 2) % 60)),
        ("cd", -((minute_now + 4) % 1440)),
        ("cw", rng.below(2879) as i64 - 1439),
        ("cm", rng.below(2879) as i64 - 1439),
        ("cy", rng.below(2879) as i64 - 1439),
    ];
    for (code, offset) in calendar {
        let limit = 1 + rng.below(12);
        shapes.push(Shape {
            code,
            limit,
            period: offset,
            burst: limit,
            block_us: [0, 0, 400_000, -1][rng.below(4) as usize],
        });
    }
    shapes
}

/// What a run of generated calls came to.
#[derive(Debug)]
pub struct Tally {
    /// Calls every rule of which allowed.
    pub allowed: usize,
    /// Calls some rule of which denied.
    pub denied: usize,
    /// Calls answered with an error (both paths alike).
    pub errors: usize,
    /// Allowed `hit` calls (the ones that wrote).
    pub writes: usize,
    /// The algorithm codes the calls used.
    pub codes: BTreeSet<&'static str>,
    /// Calls of one rule (limit.lua's fast path), per algorithm code.
    pub single_rule_calls: std::collections::BTreeMap<&'static str, usize>,
    /// Replies per reason (0 the rules, 1 a ban, 2 the deny list, 3 the allow list).
    pub reasons: std::collections::BTreeMap<i64, usize>,
}

impl Tally {
    /// Asserts that `calls` calls covered every outcome: allowed, denied and errors.
    pub fn assert_covers_every_outcome(&self, calls: usize) {
        assert!(
            // One rule denies less often than several (about a tenth of the calls deny with this mix).
            self.allowed > calls / 10 && self.denied > calls / 20 && self.errors > 0,
            "the mix should cover every outcome: {self:?}"
        );
        assert_eq!(
            self.single_rule_calls.len(),
            11,
            "every algorithm and calendar unit should be called alone: {self:?}"
        );
        assert_eq!(self.reasons.len(), 4, "every reason should answer: {self:?}");
    }
}

/// Sends `calls` generated calls (replayable from `seed`) through limit.lua and RATELOCK.LIMIT on
/// `con`, asserting after each that the replies and the touched keys agree; what they came to.
pub fn agree_with_lua(con: &mut Connection, calls: usize, seed: u64) -> Tally {
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(lua_script("limit"))
        .query(con)
        .unwrap();
    let mut rng = Rng(seed | 1);
    let shapes = shapes(&mut rng);
    // `now` runs ahead of the wall clock by a growing drift, never behind it: a key that expires in
    // real time has then also stopped mattering at the explicit `now`, on both copies alike.
    let mut drift: u64 = 0;
    let (mut allowed, mut denied, mut errors, mut writes) = (0, 0, 0, 0);
    let mut seen_codes = std::collections::BTreeSet::new();
    let mut single_rule_calls = std::collections::BTreeMap::new();
    let mut reasons = std::collections::BTreeMap::new();

    for call in 0..calls {
        drift += match rng.below(10) {
            0..=4 => rng.below(2_000),
            5..=7 => rng.below(200_000),
            8 => rng.below(3_000_000),
            _ => 0,
        };
        let now = wall_us() + drift;
        let user = rng.below(3);
        // Half the calls have one rule: limit.lua decides those on a path of their own.
        let rules = if rng.below(2) == 0 {
            1
        } else {
            2 + rng.below(2) as usize
        };
        let mut picked: Vec<usize> = Vec::new();
        while picked.len() < rules {
            let s = rng.below(shapes.len() as u64) as usize;
            if !picked.contains(&s) {
                picked.push(s);
            }
            if rules == 1 {
                *single_rule_calls.entry(shapes[picked[0]].code).or_insert(0) += 1;
            }
        }
        let mode = match rng.below(12) {
            0 | 1 => "peek",
            2 => "refund",
            3 | 4 => "reserve",
            _ => "hit",
        };
        let cost = match rng.below(20) {
            0 => 1 + rng.below(20),
            1..=5 => 2 + rng.below(3),
            _ => 1,
        };
        // Most calls name the override key (as every ratelock client does); some leave it out.
        let with_override = rng.below(4) != 0;
        let keys = |side: &str| -> Vec<String> {
            let mut keys: Vec<String> = picked.iter().map(|s| format!("{side}:{{u{user}}}:{s}")).collect();
            keys.push(format!("{side}:{{u{user}}}:standing"));
            if with_override {
                keys.push(format!("{side}:{{u{user}}}:override"));
            }
            keys
        };
        // Now and then the key gets an override of one or two shapes' windows, or loses it.
        if rng.below(30) == 0 {
            let parts: Vec<String> = (0..1 + rng.below(2))
                .map(|_| {
                    let shape = &shapes[rng.below(shapes.len() as u64) as usize];
                    // Mostly raised (a lowered one turns many costs into errors), now and then lowered.
                    let lowered = rng.below(4) == 0;
                    let shift = |n: u64, rng: &mut Rng| {
                        if lowered {
                            n.saturating_sub(rng.below(n)).max(1)
                        } else {
                            n + rng.below(8)
                        }
                    };
                    let limit = shift(shape.limit, &mut rng);
                    let bucket = matches!(shape.code, "g" | "tb" | "lb");
                    let burst = if bucket {
                        shift(shape.burst, &mut rng)
                    } else {
                        limit
                    };
                    format!("{} {limit} {} {burst}", shape.code, shape.period)
                })
                .collect();
            let cleared = rng.below(2) == 0;
            for side in ["lua", "mod"] {
                let key = format!("{side}:{{u{user}}}:override");
                let _: () = if cleared {
                    redis::cmd("DEL").arg(key).query::<i64>(con).map(drop).unwrap()
                } else {
                    redis::cmd("SET")
                        .arg(key)
                        .arg(parts.join(","))
                        .query(con)
                        .unwrap()
                };
            }
        }
        // Now and then the key goes on the deny or the allow list, on both copies alike.
        if rng.below(40) == 0 {
            let entry = format!(
                "{}{}",
                if rng.below(2) == 0 { 'd' } else { 'a' },
                now + 1_000 + rng.below(300_000)
            );
            for side in ["lua", "mod"] {
                let _: () = redis::cmd("SET")
                    .arg(format!("{side}:{{u{user}}}:standing"))
                    .arg(&entry)
                    .arg("PX")
                    .arg(1_000)
                    .query(con)
                    .unwrap();
            }
        }
        let mut argv: Vec<String> = vec![mode.into(), now.to_string(), cost.to_string()];
        for &s in &picked {
            let shape = &shapes[s];
            seen_codes.insert(shape.code);
            argv.extend([
                shape.code.to_string(),
                shape.limit.to_string(),
                shape.period.to_string(),
                shape.burst.to_string(),
                shape.block_us.to_string(),
            ]);
        }
        if mode == "reserve" {
            // The longest wait: none, a moment, or long enough for most slots.
            argv.push([0, rng.below(200_000), rng.below(20_000_000)][rng.below(3) as usize].to_string());
        }
        let (lua_keys, module_keys) = (keys("lua"), keys("mod"));
        // PTTLs may differ by the time the two calls and the reads take (long on a loaded machine).
        let started = std::time::Instant::now();
        let lua_reply = run(
            con,
            redis::cmd("EVALSHA")
                .arg(&sha)
                .arg(lua_keys.len())
                .arg(&lua_keys)
                .arg(&argv),
        );
        let module_reply = run(
            con,
            redis::cmd("RATELOCK.LIMIT")
                .arg(module_keys.len())
                .arg(&module_keys)
                .arg(&argv),
        );
        let context = || format!("call {call} (seed {seed}): keys {module_keys:?} argv {argv:?}");
        assert_eq!(lua_reply, module_reply, "replies differ at {}", context());
        match &lua_reply {
            Ok(Value::Array(items)) => {
                if let Some(Value::Int(reason)) = items.first() {
                    *reasons.entry(*reason).or_insert(0) += 1;
                }
                // The reason first, then five integers per rule.
                let all = items.iter().skip(1).step_by(5).all(|v| *v == Value::Int(1));
                if all {
                    allowed += 1;
                    if mode == "hit" {
                        writes += 1;
                    }
                } else {
                    denied += 1;
                }
            }
            Ok(other) => panic!("unexpected reply {other:?} at {}", context()),
            Err(_) => errors += 1,
        }
        for (lua_key, module_key) in lua_keys.iter().zip(&module_keys) {
            // Both copies in one MULTI: no copy can end between the two looks.
            let mut both = key_snapshots(con, &[lua_key, module_key]).into_iter();
            let (a, b) = (both.next().unwrap(), both.next().unwrap());
            let slack = PTTL_SLACK_MS.max(started.elapsed().as_millis() as i64 + 2);
            // The module's copy was written a moment after Lua's: a key whose TTL ran out within that
            // moment is gone from Lua's copy only (a loaded machine once showed it, with the module's
            // copy about to end). That is time, not a difference.
            if a.kind == "none" && b.kind != "none" && (0..=slack).contains(&b.pttl) {
                continue;
            }
            assert_eq!(
                (&a.kind, &a.contents),
                (&b.kind, &b.contents),
                "stored state differs for {module_key} at {}",
                context()
            );
            let ttls_agree = (a.pttl < 0 && a.pttl == b.pttl)
                || (a.pttl >= 0 && b.pttl >= 0 && (a.pttl - b.pttl).abs() <= slack);
            assert!(
                ttls_agree,
                "PTTL {} (lua) vs {} (module) for {module_key} at {}",
                a.pttl,
                b.pttl,
                context()
            );
        }
    }
    Tally {
        allowed,
        denied,
        errors,
        writes,
        codes: seen_codes,
        reasons,
        single_rule_calls,
    }
}
