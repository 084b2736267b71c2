//! Memory-store calls answered at once on the JavaScript thread (`hitSync`, `peekSync`, and `hit` on
//! the memory store), through a free function of handles (`handle.rs`). A method of a class instance
//! pays napi-rs's bookkeeping for its receiver on every call (unwrapping it, checking its type tag,
//! registering and releasing the borrow: about 4,000 instructions, four times the decision itself); a
//! handle is read back with one lookup. The decision's numbers go into the `Float64Array` the checker
//! was made with, so no typed array is looked up per call either.

use std::sync::Arc;

use napi::bindgen_prelude::Float64Array;
use napi_derive::napi;

use crate::convert;
use crate::decision_numbers::{numbers, DECISION_FIELDS};
use crate::errors::{invalid_argument, to_js};
use crate::handle::{Handed, Handle};
use crate::key_arg::KeyArg;
use crate::limiter::NativeLimiter;
use crate::runtime::guarded_sync;

/// A limiter on the memory store and the numbers it answers into (see [`check_in_memory`]).
pub struct MemoryChecker {
    limiter: ratelock::Limiter,
    out: Float64Array,
}

/// The TypeScript name of [`MemoryChecker`] inside `ExternalObject` (opaque to JavaScript).
mod declaration {
    #[napi_derive::napi(object, object_from_js = false)]
    #[allow(
        dead_code,
        reason = "only its TypeScript declaration is used, as ExternalObject<MemoryChecker>"
    )]
    pub struct MemoryChecker {}
}

/// A checker of `limiter`'s calls, writing each decision's `DECISION_FIELDS` numbers into `out`
/// (allowed, limit, remaining, resetAfterMs, retryAfterMs, degraded, ruleIndex, …: `decisionLayout()`).
/// Only for a limiter on the memory store.
#[napi(ts_return_type = "ExternalObject<MemoryChecker>")]
pub fn memory_checker(limiter: &NativeLimiter, out: Float64Array) -> napi::Result<Handed<MemoryChecker>> {
    if !limiter.is_local() {
        return Err(invalid_argument(
            "store",
            "a memory checker needs the memory store",
        ));
    }
    if out.len() < DECISION_FIELDS {
        return Err(invalid_argument(
            "out",
            format!("expected a Float64Array of {DECISION_FIELDS} numbers"),
        ));
    }
    Ok(Handed(MemoryChecker {
        limiter: limiter.core().clone(),
        out,
    }))
}

/// `hit` (spend) or `peek` of `key` against prepared `rules`, answered at once into the checker's
/// numbers. Nothing is copied or kept: the key and the rules are borrowed for the call.
#[napi(
    ts_args_type = "checker: ExternalObject<MemoryChecker>, key: string | Buffer, rules: ExternalObject<PreparedRules>, cost: number | undefined | null, nowMs: number | undefined | null, spend: boolean"
)]
pub fn check_in_memory(
    mut checker: Handle<MemoryChecker>,
    key: KeyArg,
    rules: Handle<Arc<ratelock::PreparedRules>>,
    cost: Option<f64>,
    now_ms: Option<f64>,
    spend: bool,
) -> napi::Result<()> {
    guarded_sync(|| {
        let key = key.bytes();
        let (cost, now_us) = (convert::cost(cost)?, convert::now_us(now_ms)?);
        let checker = &mut *checker;
        let decision = checker
            .limiter
            .try_check_blocking(key, rules.rules(), cost, spend, now_us)
            .ok_or_else(|| invalid_argument("store", "a memory checker needs the memory store"))?
            .map_err(to_js)?;
        // SAFETY: a synchronous call on the JavaScript thread: no JavaScript runs while we write. The
        // length was checked when the checker was made.
        let out = unsafe { checker.out.as_mut() };
        out[..DECISION_FIELDS].copy_from_slice(&numbers(&decision));
        Ok(())
    })
}
