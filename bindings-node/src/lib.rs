//! The native addon of the npm package `ratelock`: thin wrappers over the Rust core (one file per core
//! type), loaded by `index.js`, which adds the error classes, `using()` and the Express middleware.
//! No algorithm, key format or Lua lives here.

// napi-rs registers exports only outside `cfg(test)`; a test build (clippy --all-targets) sees them unused.
#![cfg_attr(test, allow(dead_code))]

mod any_guard;
mod completions;
mod convert;
mod errors;
mod fair_lock;
mod guard;
mod http;
mod limiter;
mod lock;
mod lock_handle;
mod runtime;
mod rwlock;
mod semaphore;
mod stores;
mod wire;

#[napi_derive::module_init]
fn init() {
    runtime::install();
}
