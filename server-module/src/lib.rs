//! ratelock as a Redis module: `redis-server --loadmodule libratelock_module.so` adds RATELOCK.VERSION
//! and a command for every script of `core/lua/` (RATELOCK.LIMIT, the lock, semaphore, fair-lock and
//! read-write-lock commands), each a drop-in for its script: same arguments, replies and stored state,
//! so a deployment can switch between script and module with no reset.
//!
//! Files: `api` (the hand-made FFI table), `ctx` (one call's context made safe), `commands`
//! (registration, panic guard), `command_info` (the C structs of Redis 7's command info),
//! `command_docs` (each command's key spec, arity and docs, from its flags), `args` (argument
//! parsing), `keyspace` (Redis encoding of each state), `limit_command` (the command's flow over the
//! core's algorithms); for the locks and semaphores (RATELOCK.LOCK_* and RATELOCK.SEMAPHORE_*,
//! drop-ins for `core/lua/lock_*.lua` and `semaphore_*.lua`), `lease_args` (their arguments),
//! `lock_keys` and `permit_keys` (their Redis encoding), `lock_command` and `semaphore_command`
//! (their flow over the core's lease and permit functions); for the fair and read-write locks,
//! `queued_lock_args` (their shared arguments), `lease_fields` (their shared Redis encodings), `fair_keys` /
//! `rw_keys` (each lock's keys read into the core's state and written back), `fair_command` /
//! `rw_command` (each command's flow over the core's `apply`).

mod api;
mod args;
mod command_docs;
mod command_info;
mod commands;
mod ctx;
mod digits;
mod fair_command;
mod fair_keys;
mod key_read;
mod key_write;
mod keyspace;
mod lease_args;
mod lease_fields;
mod limit_command;
mod lock_command;
mod lock_keys;
mod override_cache;
mod permit_keys;
mod publish;
mod queued_lock_args;
mod rule_cache;
mod rw_command;
mod rw_keys;
mod scripted;
mod semaphore_command;
mod shared_strings;

use std::ffi::{c_int, CStr};

/// The module's name, as `MODULE LIST` shows it.
const MODULE_NAME: &CStr = c"ratelock";
/// The module's version, as `MODULE LIST` shows it.
const MODULE_VERSION: c_int = 1;

/// The entry point redis-server calls when it loads the module.
///
/// # Safety
/// Called by redis-server with its load context.
#[no_mangle]
pub unsafe extern "C" fn RedisModule_OnLoad(
    ctx: *mut api::Ctx,
    _argv: *mut *mut api::RString,
    _argc: c_int,
) -> c_int {
    let loaded = std::panic::catch_unwind(|| {
        // SAFETY: `ctx` is the load context handed to us by redis-server.
        unsafe {
            let Ok(api) = api::Api::load(ctx, MODULE_NAME, MODULE_VERSION) else {
                return false;
            };
            // Keys are signalled as modified only when the module wrote them (`key_write`).
            (api.set_module_options)(ctx, api::OPTION_NO_IMPLICIT_SIGNAL_MODIFIED);
            shared_strings::create();
            commands::register(ctx)
        }
    });
    match loaded {
        Ok(true) => api::OK,
        _ => api::ERR,
    }
}
