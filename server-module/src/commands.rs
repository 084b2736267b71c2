//! The module's commands and their registration. Every command body runs under
//! `std::panic::catch_unwind`: a panic becomes an error reply, never an abort of redis-server.

use std::ffi::{c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::api::{self, api, CmdFunc, Ctx, RString};
use crate::ctx::Context;
use crate::limit_command;

/// The version of the RATELOCK.* contract (arguments, replies, stored layout) this module answers.
pub const CONTRACT_VERSION: i64 = 1;

/// Registers every command; `false` (after logging nothing) when Redis refuses one.
///
/// # Safety
/// `ctx` must be the load context, after [`api::Api::load`].
pub unsafe fn register(ctx: *mut Ctx) -> bool {
    let table: [(&CStr, CmdFunc, &CStr); 2] = [
        (c"RATELOCK.VERSION", version, c"readonly fast"),
        // Keys: argv[2 .. 2 + numkeys], told to Redis through the getkeys API (key positions
        // depend on numkeys, which the (first, last, step) triple cannot say).
        (c"RATELOCK.LIMIT", limit_command, c"write deny-oom getkeys-api"),
    ];
    table.iter().all(|(name, func, flags)| {
        (api().create_command)(ctx, name.as_ptr(), *func, flags.as_ptr(), 0, 0, 0) == api::OK
    })
}

/// Runs `body` with the call's context and arguments, turning a panic into an error reply.
unsafe fn guarded(
    ctx: *mut Ctx,
    argv: *mut *mut RString,
    argc: c_int,
    body: fn(&Context, &[&[u8]]) -> c_int,
) -> c_int {
    let cx = Context::new(ctx);
    let args = cx.args(argv, argc);
    match catch_unwind(AssertUnwindSafe(|| body(&cx, &args))) {
        Ok(status) => status,
        Err(_) => cx.reply_error("ERR ratelock module: internal error (panic), nothing was written after it"),
    }
}

/// RATELOCK.VERSION: the contract version, an integer.
unsafe extern "C" fn version(ctx: *mut Ctx, argv: *mut *mut RString, argc: c_int) -> c_int {
    guarded(ctx, argv, argc, |cx, args| {
        if args.len() != 1 {
            return cx.wrong_arity();
        }
        cx.reply_integer(CONTRACT_VERSION)
    })
}

/// RATELOCK.LIMIT numkeys key... mode now cost [alg limit period burst]...
unsafe extern "C" fn limit_command(ctx: *mut Ctx, argv: *mut *mut RString, argc: c_int) -> c_int {
    guarded(ctx, argv, argc, |cx, args| {
        if args.len() < 2 {
            return cx.wrong_arity();
        }
        if cx.is_keys_position_request() {
            if let Ok((keys, _)) = crate::args::split(args) {
                (0..keys.len()).for_each(|i| cx.key_at(2 + i));
            }
            return api::OK;
        }
        match limit_command::run(cx, args) {
            Ok(values) => cx.reply_integers(&values),
            Err(message) => cx.reply_error(&message),
        }
    })
}
