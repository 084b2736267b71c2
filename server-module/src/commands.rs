//! The module's commands and their registration. Every command body runs under
//! `std::panic::catch_unwind` (`scripted.rs`): a panic becomes an error reply, never an abort of
//! redis-server.

use std::ffi::{c_int, CStr};

use crate::api::{self, api, CmdFunc, Ctx, RString};
use crate::command_docs;
use crate::ctx::Value;
use crate::limit_command;
use crate::lock_command::{lock_acquire, lock_extend, lock_force_release, lock_release, lock_state};
use crate::scripted::{guarded, scripted};
use crate::semaphore_command::{semaphore_acquire, semaphore_extend, semaphore_release, semaphore_state};
use crate::{fair_command, rw_command};

/// The version of the RATELOCK.* contract (arguments, replies, stored layout) this module answers.
pub const CONTRACT_VERSION: i64 = 5;

/// The flags of a command standing in for a script that writes.
const WRITER: &CStr = c"write deny-oom getkeys-api";
/// The flags of a command standing in for a script that only gives memory back (a release, a lease's new
/// end): it runs while the server is out of memory, as the script does, so a full server can still free
/// its locks and keep their leases.
const FREEING: &CStr = c"write getkeys-api";
/// The flags of a command standing in for a script that only reads.
const READER: &CStr = c"readonly getkeys-api";

/// Registers every command; `false` when Redis refuses one.
///
/// # Safety
/// `ctx` must be the load context, after [`api::Api::load`].
pub unsafe fn register(ctx: *mut Ctx) -> bool {
    // Keys: argv[2 .. 2 + numkeys], told to Redis through the getkeys API (key positions depend on
    // numkeys, which the (first, last, step) triple cannot say) and, on Redis >= 7.0, as a key spec
    // that `command_docs` derives from the flags.
    let table: &[(&CStr, CmdFunc, &CStr)] = &[
        (c"RATELOCK.VERSION", version, c"readonly fast"),
        (c"RATELOCK.LIMIT", limit, c"write deny-oom getkeys-api"),
        (c"RATELOCK.LOCK_ACQUIRE", lock_acquire, WRITER),
        (c"RATELOCK.LOCK_RELEASE", lock_release, FREEING),
        (c"RATELOCK.LOCK_EXTEND", lock_extend, FREEING),
        (c"RATELOCK.LOCK_STATE", lock_state, READER),
        (c"RATELOCK.LOCK_FORCE_RELEASE", lock_force_release, FREEING),
        (c"RATELOCK.SEMAPHORE_ACQUIRE", semaphore_acquire, WRITER),
        (c"RATELOCK.SEMAPHORE_RELEASE", semaphore_release, FREEING),
        (c"RATELOCK.SEMAPHORE_EXTEND", semaphore_extend, WRITER),
        (c"RATELOCK.SEMAPHORE_STATE", semaphore_state, READER),
        // Each refuses its acquire on a full server itself (`Context::refuse_when_full`): its release,
        // extend and withdraw give memory back.
        (c"RATELOCK.FAIR_LOCK", fair_lock, FREEING),
        (c"RATELOCK.RW_LOCK", rw_lock, FREEING),
    ];
    table.iter().all(|(name, func, flags)| {
        let created = (api().create_command)(ctx, name.as_ptr(), *func, flags.as_ptr(), 0, 0, 0) == api::OK;
        if created {
            command_docs::declare(ctx, name, flags);
        }
        created
    })
}

/// RATELOCK.VERSION: the contract version, an integer.
unsafe extern "C" fn version(ctx: *mut Ctx, argv: *mut *mut RString, argc: c_int) -> c_int {
    guarded(ctx, argv, argc, |cx, args| {
        if args.len() != 1 {
            return cx.wrong_arity();
        }
        cx.reply_value(&Value::Int(CONTRACT_VERSION))
    })
}

/// RATELOCK.LIMIT numkeys key... mode now cost [alg limit period burst]... [tag]
unsafe extern "C" fn limit(ctx: *mut Ctx, argv: *mut *mut RString, argc: c_int) -> c_int {
    scripted(ctx, argv, argc, limit_command::contract_args, limit_command::run)
}

/// RATELOCK.FAIR_LOCK 4 holder queue places counter op now id fence ttl_us place_ttl_us wake_prefix [tag]
unsafe extern "C" fn fair_lock(ctx: *mut Ctx, argv: *mut *mut RString, argc: c_int) -> c_int {
    scripted(ctx, argv, argc, fair_command::contract_args, fair_command::run)
}

/// RATELOCK.RW_LOCK 4 readers writer waiting counter op now id mode fence ttl_us mark_ttl_us
/// prefer_writers mark channel [tag]
unsafe extern "C" fn rw_lock(ctx: *mut Ctx, argv: *mut *mut RString, argc: c_int) -> c_int {
    scripted(ctx, argv, argc, rw_command::contract_args, rw_command::run)
}
