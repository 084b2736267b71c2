//! A command that stands in for a script, and the panic guard every command body runs under.
//!
//! Each RATELOCK command that stands in for a script takes that script's call as it is
//! (`numkeys key... arg...`) and may carry one more argument at the end: the client's call tag (see
//! `core/src/store/redis/call_tag.rs`). A tagged call is answered as the scripts' call-tag envelope
//! answers it: an array reply with the tag appended, any other as `[tag, reply]` (contract 4; before
//! it, every reply was `[tag, reply]`); an error reply is never wrapped. Whether the last argument is a tag
//! is told by the count: one more than the script's contract expects.

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::api::{self, Ctx, RString};
use crate::args;
use crate::ctx::{Context, Value};

/// A command standing in for a script: its body, given the context, KEYS and ARGV (the tag taken off)
/// answers the script's reply or an error text (`ERR ...`).
pub type ScriptBody = fn(&Context, &[&[u8]], &[&[u8]]) -> Result<Value, String>;

/// How many ARGV the script's contract expects for these KEYS and ARGV (a tag not counted), or `None`
/// when the call is malformed anyway (then no tag is taken off, and the body names what is wrong).
pub type ContractArgs = fn(usize, &[&[u8]]) -> Option<usize>;

/// Runs `body` with the call's context and arguments, turning a panic into an error reply.
pub unsafe fn guarded(
    ctx: *mut Ctx,
    argv: *mut *mut RString,
    argc: c_int,
    body: impl FnOnce(&Context, &[&[u8]]) -> c_int,
) -> c_int {
    let cx = Context::new(ctx);
    let args = cx.args(argv, argc);
    match catch_unwind(AssertUnwindSafe(|| body(&cx, args))) {
        Ok(status) => status,
        Err(_) => cx.reply_error("ERR ratelock module: internal error (panic), nothing was written after it"),
    }
}

/// Serves a command that stands in for a script: key positions, the tag, the body, the reply.
///
/// # Safety
/// `ctx`, `argv` and `argc` must be the ones Redis passed to the command.
pub unsafe fn scripted(
    ctx: *mut Ctx,
    argv: *mut *mut RString,
    argc: c_int,
    contract_args: ContractArgs,
    body: ScriptBody,
) -> c_int {
    guarded(ctx, argv, argc, |cx, args| {
        if args.len() < 2 {
            // A key-position request has no client to tell (RedisModule_WrongArity reads it): it can
            // come this short only where the command's arity was not set, and it names no keys.
            if cx.is_keys_position_request() {
                return api::OK;
            }
            return cx.wrong_arity();
        }
        let (keys, argv) = match args::split(args) {
            Ok(split) => split,
            // A malformed call has no keys to report.
            Err(_) if cx.is_keys_position_request() => return api::OK,
            Err(message) => return cx.reply_error(&message),
        };
        if cx.is_keys_position_request() {
            (0..keys.len()).for_each(|i| cx.key_at(2 + i));
            return api::OK;
        }
        let (argv, tag) = match contract_args(keys.len(), argv) {
            Some(expected) if argv.len() == expected + 1 => (&argv[..expected], argv.last()),
            _ => (argv, None),
        };
        match body(cx, keys, argv) {
            Ok(reply) => match tag {
                Some(tag) => cx.reply_tagged(&reply, tag),
                None => cx.reply_value(&reply),
            },
            Err(message) => cx.reply_error(&message),
        }
    })
}
