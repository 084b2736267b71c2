//! PUBLISH from a module command, propagated exactly as a script's PUBLISH is: to replicas (or, in a
//! cluster, over the cluster bus) and never into the AOF.
//!
//! With the AOF on, that takes `RedisModule_Call` with `!` (Redis itself keeps PUBLISH out of the
//! AOF). With the AOF off, the same is reached without dispatching a command: `PublishMessage` tells
//! this server's subscribers (and, in a cluster, the other nodes), and outside a cluster
//! `RedisModule_Replicate` hands PUBLISH to the replicas, the only place it can go.

use std::ffi::c_int;

use crate::api::{self, api};
use crate::ctx::{Context, Effect};

/// `REDISMODULE_CTX_FLAGS_CLUSTER`: the server runs in cluster mode.
const CLUSTER: c_int = 1 << 5;
/// `REDISMODULE_CTX_FLAGS_AOF`: the server has the AOF on.
const AOF: c_int = 1 << 6;

/// Publishes `message` on `channel`, as a script's `redis.call('PUBLISH', channel, message)`.
pub fn publish(cx: &Context, channel: &[u8], message: &[u8]) -> Result<(), String> {
    let api = api();
    // SAFETY: a live context.
    let flags = unsafe { (api.get_context_flags)(cx.raw()) };
    if flags & AOF != 0 {
        return cx
            .call(Effect::Replicated, "PUBLISH", &[channel, message])
            .map(drop);
    }
    let (channel, message) = (cx.string_of(channel), cx.string_of(message));
    // SAFETY: a live context and two Redis strings, which PublishMessage only reads.
    unsafe { (api.publish_message)(cx.raw(), channel, message) };
    if flags & CLUSTER != 0 {
        return Ok(());
    }
    let mut argv = [channel, message];
    // SAFETY: the `v` format takes an array of RedisModuleString pointers and its length.
    let status = unsafe {
        (api.replicate)(
            cx.raw(),
            c"PUBLISH".as_ptr(),
            c"v".as_ptr(),
            argv.as_mut_ptr(),
            argv.len(),
        )
    };
    match status {
        api::OK => Ok(()),
        _ => Err("ERR ratelock module: PUBLISH could not be propagated".into()),
    }
}
