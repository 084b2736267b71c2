//! Memory-store calls answered at once on the JavaScript thread (`hitSync`, `peekSync`, and `hit` on
//! the memory store), through one function of handles (`handle.rs`) made by hand, with no per-call
//! bookkeeping of napi-rs's. A method of a class instance pays that bookkeeping for its receiver on
//! every call (unwrapping it, checking its type tag, registering and releasing the borrow: about 4,000
//! instructions, four times the decision itself); a handle is read back with one lookup. The
//! decision's numbers go into the `Float64Array` the checker was made with, so no typed array is
//! looked up per call either.

use std::sync::Arc;

use napi::bindgen_prelude::{Float64Array, FromNapiValue, ToNapiValue};
use napi::{sys, Env};
use napi_derive::napi;

use crate::convert;
use crate::decision_numbers::{numbers, DECISION_FIELDS};
use crate::errors::{bug, invalid_argument, made_here, to_js, Result};
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
pub fn memory_checker(limiter: &NativeLimiter, out: Float64Array) -> Result<Handed<MemoryChecker>> {
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

/// The function `hitSync`, `peekSync` and a memory-store `hit` call:
/// `(checker, key, rules, cost, nowMs, spend) => void`, a `hit` (spend) or `peek` of `key` against
/// prepared `rules`, answered at once into the checker's numbers. Nothing is copied or kept: the key
/// and the rules are borrowed for the call.
///
/// It is made by hand rather than by `#[napi]`: napi-rs wraps every function of one or more arguments
/// in a borrow scope (an `Arc` and a mutex allocated, pushed on a thread-local stack and freed, per
/// call), which this call needs none of: its arguments are read and dropped before it returns, and it
/// starts nothing that outlives it. The arguments are read with the same conversions napi-rs uses, and
/// an error is thrown as napi-rs throws one.
#[napi(
    ts_return_type = "(checker: ExternalObject<MemoryChecker>, key: string | Buffer, rules: ExternalObject<PreparedRules>, cost: number | undefined | null, nowMs: number | undefined | null, spend: boolean) => void"
)]
pub fn memory_check_function(env: &Env) -> Result<RawFunction> {
    let name = "checkInMemory";
    let mut function = std::ptr::null_mut();
    // SAFETY: `env` is this call's; the name is valid UTF-8 of the length given, and the callback
    // lives as long as the addon.
    let status = unsafe {
        sys::napi_create_function(
            env.raw(),
            name.as_ptr().cast(),
            name.len() as isize,
            Some(check_in_memory),
            std::ptr::null_mut(),
            &mut function,
        )
    };
    if status != sys::Status::napi_ok {
        return Err(bug("napi_create_function failed for checkInMemory"));
    }
    Ok(RawFunction(function))
}

/// A function made with `napi_create_function`, handed to JavaScript as it is.
pub struct RawFunction(sys::napi_value);

impl ToNapiValue for RawFunction {
    unsafe fn to_napi_value(_env: sys::napi_env, function: Self) -> napi::Result<sys::napi_value> {
        Ok(function.0)
    }
}

/// Arguments `checkInMemory` takes.
const CHECK_ARGUMENTS: usize = 6;

/// The callback of [`memory_check_function`]'s function: reads its arguments, checks, and throws
/// what failed.
unsafe extern "C" fn check_in_memory(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: `env` and `info` are the ones the engine hands this callback; the arguments it reads
    // are alive for the call, which returns before any JavaScript runs.
    let answered = guarded_sync(|| Ok(unsafe { check_with_arguments(env, info) }))
        .unwrap_or_else(|panic| Err(made_here(env, panic)));
    if let Err(error) = answered {
        // SAFETY: as above; the engine takes over the pending exception when the callback returns.
        unsafe { napi::JsError::from(error).throw_into(env) };
    }
    // `undefined`.
    std::ptr::null_mut()
}

/// Reads the call's arguments (a missing one is `undefined`, as N-API fills them) and checks.
///
/// # Safety
/// `env` and `info` must be those of a callback running now on the JavaScript thread.
unsafe fn check_with_arguments(env: sys::napi_env, info: sys::napi_callback_info) -> napi::Result<()> {
    let mut count = CHECK_ARGUMENTS;
    let mut values = [std::ptr::null_mut(); CHECK_ARGUMENTS];
    let status = unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut count,
            values.as_mut_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    if status != sys::Status::napi_ok {
        return Err(made_here(env, bug("napi_get_cb_info failed for checkInMemory")));
    }
    let [checker, key, rules, cost, now_ms, spend] = values;
    unsafe {
        check(
            Handle::from_napi_value(env, checker)?,
            KeyArg::from_napi_value(env, key)?,
            Handle::from_napi_value(env, rules)?,
            Option::<f64>::from_napi_value(env, cost)?,
            Option::<f64>::from_napi_value(env, now_ms)?,
            bool::from_napi_value(env, spend)?,
        )
    }
    .map_err(|error| made_here(env, error))
}

/// One check, its decision's numbers written into the checker's `out`.
fn check(
    mut checker: Handle<MemoryChecker>,
    key: KeyArg,
    rules: Handle<Arc<ratelock::PreparedRules>>,
    cost: Option<f64>,
    now_ms: Option<f64>,
    spend: bool,
) -> Result<()> {
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
}
