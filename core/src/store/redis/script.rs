//! The Lua scripts compiled into the crate (from `core/lua/`, which `lua/` at the top links to),
//! each with its SHA1 computed once, and each wrapped in the call-tag envelope: the client appends a
//! per-call tag as the last ARGV (the script's own code never sees it), and the reply comes back with
//! it: a table reply with the tag appended as its last element, any other as `{tag, reply}` (error
//! replies pass through as they are). See `call_tag.rs`. Inside the envelope,
//! `lua/prelude.lua` (the clock and integer helpers every script uses) comes before the script's body,
//! and `lua/fence.lua` (fencing tokens) too when the body calls `mint_fence`.

use std::sync::{LazyLock, OnceLock};

/// A script (its tagged form, as sent to Redis) and its SHA1, for EVALSHA with a load on NOSCRIPT.
pub(crate) struct LuaScript {
    /// Its name, the middle of its function's name (`lock_acquire` for `lock_acquire.lua`).
    pub(crate) name: &'static str,
    /// The script as written (what the Functions library builds its function from).
    pub(crate) source: &'static str,
    /// The script in its call-tag envelope, as EVALSHA runs it.
    pub(crate) body: String,
    pub(crate) sha: String,
    /// The ratelock module's command that stands in for it (same arguments and reply), if any.
    pub(crate) module_command: Option<&'static str>,
    /// Its function's name in the library, made on first use (see `functions.rs`, which names it).
    pub(super) function: OnceLock<String>,
}

impl LuaScript {
    fn new(name: &'static str, source: &'static str) -> Self {
        let body = tagged_script(source);
        let sha = redis::Script::new(&body).get_hash().to_owned();
        LuaScript {
            name,
            sha,
            source,
            body,
            module_command: None,
            function: OnceLock::new(),
        }
    }

    /// The same script, served by the module's command `name` where the server has it.
    fn with_module_command(mut self, name: &'static str) -> Self {
        self.module_command = Some(name);
        self
    }
}

/// `source` inside the call-tag envelope, after the shared prelude (`lua/prelude.lua`): the last ARGV
/// (the tag) is taken off before the script runs; a table reply goes back with the tag appended (one
/// table fewer for the server to turn into RESP than `{tag, reply}`, about 4,000 of its instructions
/// per call), any other reply as `{tag, reply}`, an error reply as it is. This is the text the Redis
/// store loads and runs for each script of `lua/` (public for tools that send the same calls, e.g.
/// benchmarks).
///
/// ```
/// let sent = ratelock::store::tagged_script("return 7");
/// assert!(sent.contains("return 7") && sent.contains("table.remove(ARGV)"));
/// ```
pub fn tagged_script(source: &str) -> String {
    let fence = if source.contains("mint_fence(") { FENCE } else { "" };
    format!(
        "local ratelock_call_tag = table.remove(ARGV)\n\
         local ratelock_reply = (function()\n{PRELUDE}\n{fence}\n{source}\nend)()\n\
         {REPLY_WITH_TAG}"
    )
}

/// The end of the call-tag envelope, in the EVALSHA text and in each function of the library: the
/// reply in `ratelock_reply` goes back with the tag in `ratelock_call_tag` (see [`tagged_script`]).
pub(crate) const REPLY_WITH_TAG: &str = "\
if type(ratelock_reply) ~= 'table' then return { ratelock_call_tag, ratelock_reply } end
if ratelock_reply.err then return ratelock_reply end
ratelock_reply[#ratelock_reply + 1] = ratelock_call_tag
return ratelock_reply
";

/// The script `name`, served by the module's command `module_command` where the server has it.
fn script(name: &'static str, source: &'static str, module_command: &'static str) -> LuaScript {
    LuaScript::new(name, source).with_module_command(module_command)
}

/// What every script's body may use (`now_us`, `stored`, `int`).
pub(crate) const PRELUDE: &str = include_str!("../../../lua/prelude.lua");
/// `mint_fence`, placed after the prelude only in front of the scripts that call it.
pub(crate) const FENCE: &str = include_str!("../../../lua/fence.lua");

/// `limit.lua`: hit and peek over all rules of a key.
pub(crate) static LIMIT: LazyLock<LuaScript> =
    LazyLock::new(|| script("limit", include_str!("../../../lua/limit.lua"), "RATELOCK.LIMIT"));
/// `lock_acquire.lua`: take or re-enter a lock, minting a fencing token.
pub(crate) static LOCK_ACQUIRE: LazyLock<LuaScript> = LazyLock::new(|| {
    script(
        "lock_acquire",
        include_str!("../../../lua/lock_acquire.lua"),
        "RATELOCK.LOCK_ACQUIRE",
    )
});
/// `lock_release.lua`: give back one hold, owner-checked.
pub(crate) static LOCK_RELEASE: LazyLock<LuaScript> = LazyLock::new(|| {
    script(
        "lock_release",
        include_str!("../../../lua/lock_release.lua"),
        "RATELOCK.LOCK_RELEASE",
    )
});
/// `lock_extend.lua`: move the lease's end, owner-checked, never re-acquiring.
pub(crate) static LOCK_EXTEND: LazyLock<LuaScript> = LazyLock::new(|| {
    script(
        "lock_extend",
        include_str!("../../../lua/lock_extend.lua"),
        "RATELOCK.LOCK_EXTEND",
    )
});
/// `lock_state.lua`: read a lock in one step.
pub(crate) static LOCK_STATE: LazyLock<LuaScript> = LazyLock::new(|| {
    script(
        "lock_state",
        include_str!("../../../lua/lock_state.lua"),
        "RATELOCK.LOCK_STATE",
    )
});
/// `lock_force_release.lua`: delete a lease whoever holds it.
pub(crate) static LOCK_FORCE_RELEASE: LazyLock<LuaScript> = LazyLock::new(|| {
    script(
        "lock_force_release",
        include_str!("../../../lua/lock_force_release.lua"),
        "RATELOCK.LOCK_FORCE_RELEASE",
    )
});
/// `semaphore_acquire.lua`: take one of N permits (leases), reclaiming expired ones.
pub(crate) static SEMAPHORE_ACQUIRE: LazyLock<LuaScript> = LazyLock::new(|| {
    script(
        "semaphore_acquire",
        include_str!("../../../lua/semaphore_acquire.lua"),
        "RATELOCK.SEMAPHORE_ACQUIRE",
    )
});
/// `semaphore_release.lua`: give back one permit.
pub(crate) static SEMAPHORE_RELEASE: LazyLock<LuaScript> = LazyLock::new(|| {
    script(
        "semaphore_release",
        include_str!("../../../lua/semaphore_release.lua"),
        "RATELOCK.SEMAPHORE_RELEASE",
    )
});
/// `semaphore_extend.lua`: move one permit's lease end, never re-taking it.
pub(crate) static SEMAPHORE_EXTEND: LazyLock<LuaScript> = LazyLock::new(|| {
    script(
        "semaphore_extend",
        include_str!("../../../lua/semaphore_extend.lua"),
        "RATELOCK.SEMAPHORE_EXTEND",
    )
});
/// `semaphore_state.lua`: count permits in use.
pub(crate) static SEMAPHORE_STATE: LazyLock<LuaScript> = LazyLock::new(|| {
    script(
        "semaphore_state",
        include_str!("../../../lua/semaphore_state.lua"),
        "RATELOCK.SEMAPHORE_STATE",
    )
});
/// `fair_lock.lua`: every operation of a fair (first come, first served) lock.
pub(crate) static FAIR_LOCK: LazyLock<LuaScript> = LazyLock::new(|| {
    script(
        "fair_lock",
        include_str!("../../../lua/fair_lock.lua"),
        "RATELOCK.FAIR_LOCK",
    )
});
/// `rw_lock.lua`: every operation of a read-write lock.
pub(crate) static RW_LOCK: LazyLock<LuaScript> = LazyLock::new(|| {
    script(
        "rw_lock",
        include_str!("../../../lua/rw_lock.lua"),
        "RATELOCK.RW_LOCK",
    )
});
/// `fair_lock.lua` again, for every operation but an acquire (release, withdraw, extend, state): its
/// function runs while the server is out of memory (`functions.rs`'s `FREEING`), as the module's
/// command does for them and as a plain lock's release and extend do, so a full server can still free
/// its fair locks and keep their leases.
pub(crate) static FAIR_LOCK_FREEING: LazyLock<LuaScript> = LazyLock::new(|| {
    script(
        "fair_lock_freeing",
        include_str!("../../../lua/fair_lock.lua"),
        "RATELOCK.FAIR_LOCK",
    )
});
/// `rw_lock.lua` again, for every operation but an acquire (see [`FAIR_LOCK_FREEING`]).
pub(crate) static RW_LOCK_FREEING: LazyLock<LuaScript> = LazyLock::new(|| {
    script(
        "rw_lock_freeing",
        include_str!("../../../lua/rw_lock.lua"),
        "RATELOCK.RW_LOCK",
    )
});

/// Every script, in one list (the `ratelock` function library holds them all).
/// Puts or removes a key's ban or list entry: rare calls, so there is no module command for it (with
/// the module loaded it runs as a function or a script).
pub(crate) static STANDING: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new("standing", include_str!("../../../lua/standing.lua")));

pub(crate) static ALL: [&LazyLock<LuaScript>; 15] = [
    &LIMIT,
    &STANDING,
    &LOCK_ACQUIRE,
    &LOCK_RELEASE,
    &LOCK_EXTEND,
    &LOCK_STATE,
    &LOCK_FORCE_RELEASE,
    &SEMAPHORE_ACQUIRE,
    &SEMAPHORE_RELEASE,
    &SEMAPHORE_EXTEND,
    &SEMAPHORE_STATE,
    &FAIR_LOCK,
    &RW_LOCK,
    &FAIR_LOCK_FREEING,
    &RW_LOCK_FREEING,
];
