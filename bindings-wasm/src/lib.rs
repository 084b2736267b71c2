//! ratelock's sans-IO core for WebAssembly (browsers, edge runtimes, Node): an in-memory `Limiter`
//! with the rule syntax, algorithms and decisions of every other ratelock package. Time is always an
//! argument to the core; here it is the caller's `nowMs` or `Date.now()`. No Redis, no threads.

use std::collections::HashMap;

use js_sys::{Error as JsError, Object, Reflect};
use wasm_bindgen::prelude::*;

/// Parsed rule texts kept per limiter before the cache starts over.
const RULE_CACHE_LIMIT: usize = 1024;

/// An in-memory limiter: every rule of a key checked at once, all or nothing.
#[wasm_bindgen]
pub struct Limiter {
    inner: ratelock::Limiter,
    rules: HashMap<String, ParsedRules>,
}

/// Rule text parsed once, with each rule's canonical text.
struct ParsedRules {
    rules: ratelock::Rules,
    texts: Vec<String>,
}

/// The answer to `hit` or `peek` (the same fields as the Node package's decisions).
#[wasm_bindgen(getter_with_clone)]
pub struct Decision {
    pub allowed: bool,
    pub limit: f64,
    pub remaining: f64,
    #[wasm_bindgen(js_name = resetAfterMs)]
    pub reset_after_ms: f64,
    #[wasm_bindgen(js_name = retryAfterMs)]
    pub retry_after_ms: f64,
    pub degraded: bool,
    /// The deciding rule, as canonical text.
    pub rule: String,
    #[wasm_bindgen(js_name = ruleIndex)]
    pub rule_index: u32,
    #[wasm_bindgen(js_name = periodMs)]
    pub period_ms: f64,
}

#[wasm_bindgen]
impl Limiter {
    /// A limiter with its own memory. `options`: `{ prefix?: string, defaultAlgorithm?: string,
    /// maxKeys?: number }`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: Option<Object>) -> Result<Limiter, JsValue> {
        let mut settings = ratelock::LimiterOptions::default();
        let mut max_keys = settings.store.max_keys;
        if let Some(options) = options {
            if let Some(prefix) = option_string(&options, "prefix")? {
                settings = settings.with_prefix(prefix);
            }
            if let Some(algorithm) = option_string(&options, "defaultAlgorithm")? {
                settings = settings.with_default_algorithm(algorithm.parse().map_err(to_js)?);
            }
            if let Some(keys) = option_number(&options, "maxKeys")? {
                if keys.fract() != 0.0 || !(1.0..=1e9).contains(&keys) {
                    return Err(invalid_argument(
                        "maxKeys",
                        format!("expected an integer >= 1, got {keys}"),
                    ));
                }
                max_keys = keys as usize;
            }
        }
        let store = ratelock::Store::Memory(ratelock::store::MemoryStore::new(max_keys));
        Ok(Limiter {
            inner: ratelock::Limiter::with_store(store, settings).map_err(to_js)?,
            rules: HashMap::new(),
        })
    }

    /// Takes `cost` units (default 1) from every rule for `key` if all allow it, at `nowMs`
    /// (default `Date.now()`); otherwise takes nothing.
    pub fn hit(
        &mut self,
        key: &str,
        rules: &str,
        cost: Option<f64>,
        #[wasm_bindgen(js_name = nowMs)] now_ms: Option<f64>,
    ) -> Result<Decision, JsValue> {
        self.check(key, rules, cost, now_ms, true)
    }

    /// Answers what `hit` would answer, without taking anything.
    pub fn peek(
        &mut self,
        key: &str,
        rules: &str,
        cost: Option<f64>,
        #[wasm_bindgen(js_name = nowMs)] now_ms: Option<f64>,
    ) -> Result<Decision, JsValue> {
        self.check(key, rules, cost, now_ms, false)
    }

    /// Forgets the state of every given rule for `key`.
    pub fn reset(&mut self, key: &str, rules: &str) -> Result<(), JsValue> {
        let inner = self.inner.clone();
        let parsed = self.parse(rules)?;
        if let ratelock::Store::Memory(store) = inner.store() {
            store.reset(&inner.options().prefix, key.as_bytes(), &parsed.rules);
        }
        Ok(())
    }
}

impl Limiter {
    fn check(
        &mut self,
        key: &str,
        rules: &str,
        cost: Option<f64>,
        now_ms: Option<f64>,
        spend: bool,
    ) -> Result<Decision, JsValue> {
        let cost = match cost {
            None => 1,
            Some(n) if n.fract() == 0.0 && (1.0..=9_007_199_254_740_991.0).contains(&n) => n as u64,
            Some(n) => {
                return Err(invalid_argument(
                    "cost",
                    format!("expected an integer >= 1, got {n}"),
                ))
            }
        };
        let now_ms = now_ms.unwrap_or_else(js_sys::Date::now);
        if !(now_ms.is_finite() && now_ms >= 0.0 && now_ms * 1000.0 <= 9_007_199_254_740_991.0) {
            return Err(invalid_argument(
                "nowMs",
                format!("expected milliseconds since the Unix epoch, got {now_ms}"),
            ));
        }
        let now_us = Some((now_ms * 1000.0).round() as u64);
        let inner = self.inner.clone();
        let parsed = self.parse(rules)?;
        let answer = if spend {
            inner.try_hit_blocking(key, &parsed.rules, cost, now_us)
        } else {
            inner.try_peek_blocking(key, &parsed.rules, cost, now_us)
        };
        // The memory store always answers on the spot.
        let decision = answer.ok_or_else(|| JsError::new("ratelock: the memory store did not answer"))?;
        let decision = decision.map_err(to_js)?;
        let index = decision.rule_index;
        Ok(Decision {
            allowed: decision.allowed,
            limit: decision.limit as f64,
            remaining: decision.remaining as f64,
            reset_after_ms: decision.reset_after.as_secs_f64() * 1000.0,
            retry_after_ms: decision.retry_after.as_secs_f64() * 1000.0,
            degraded: decision.degraded,
            rule: parsed.texts[index].clone(),
            rule_index: index as u32,
            period_ms: parsed.rules[index].period().as_secs_f64() * 1000.0,
        })
    }

    fn parse(&mut self, text: &str) -> Result<&ParsedRules, JsValue> {
        if !self.rules.contains_key(text) {
            let rules = self.inner.rules(text).map_err(to_js)?;
            let texts = rules.iter().map(ToString::to_string).collect();
            if self.rules.len() >= RULE_CACHE_LIMIT {
                self.rules.clear();
            }
            self.rules.insert(text.to_owned(), ParsedRules { rules, texts });
        }
        Ok(&self.rules[text])
    }
}

/// A core error as a JavaScript `Error` with a `name` and a stable `code` (as in the Node package).
fn to_js(err: ratelock::Error) -> JsValue {
    let name = match err.code() {
        "INVALID_RULE" => "InvalidRuleError",
        "INVALID_ARGUMENT" => "InvalidArgumentError",
        "COST_EXCEEDS_CAPACITY" => "CostExceedsCapacityError",
        _ => "RatelockError",
    };
    coded(name, &format!("ERR_RATELOCK_{}", err.code()), &err.to_string())
}

fn invalid_argument(name: &str, problem: String) -> JsValue {
    coded(
        "InvalidArgumentError",
        "ERR_RATELOCK_INVALID_ARGUMENT",
        &format!("invalid argument `{name}`: {problem}"),
    )
}

fn coded(name: &str, code: &str, message: &str) -> JsValue {
    let error = JsError::new(message);
    error.set_name(name);
    let _ = Reflect::set(&error, &"code".into(), &code.into());
    error.into()
}

fn option_string(options: &Object, name: &str) -> Result<Option<String>, JsValue> {
    let value = Reflect::get(options, &name.into())?;
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    value
        .as_string()
        .map(Some)
        .ok_or_else(|| invalid_argument(name, "expected a string".to_owned()))
}

fn option_number(options: &Object, name: &str) -> Result<Option<f64>, JsValue> {
    let value = Reflect::get(options, &name.into())?;
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    value
        .as_f64()
        .map(Some)
        .ok_or_else(|| invalid_argument(name, "expected a number".to_owned()))
}
