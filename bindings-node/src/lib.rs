//! The native addon of the npm package `ratelock`: thin wrappers over the Rust core (one file per core
//! type), loaded by `index.js`, which adds the error classes, `using()` and the Express middleware.
//! No algorithm, key format or Lua lives here.

// napi-rs registers exports only outside `cfg(test)`; a test build (clippy --all-targets) sees them unused.
#![cfg_attr(test, allow(dead_code))]

mod abort_switch;
mod completions;
mod convert;
mod decision_numbers;
mod errors;
mod fair_lock;
mod guard;
mod handle;
mod http;
mod key_arg;
mod limiter;
mod lock;
mod lock_handle;
mod memory_check;
mod metrics;
mod native_wire;
mod option_names;
mod runtime;
mod rwlock;
mod semaphore;
mod stores;

/// The longest key, in bytes, any call accepts (64 KiB); a longer one is an invalid argument.
#[napi_derive::napi]
pub const MAX_KEY_BYTES: u32 = ratelock::MAX_KEY_BYTES as u32;

/// The most rules one call checks together (100); more is an invalid rule.
#[napi_derive::napi]
pub const MAX_RULES: u32 = ratelock::MAX_RULES as u32;

#[napi_derive::module_init]
fn init() {
    runtime::install();
}
