//! What each RATELOCK command tells Redis ≥ 7.0 about itself (`RedisModule_SetCommandInfo`): key
//! spec, arity, summary, since and arguments, as `COMMAND INFO` and `COMMAND DOCS` show them. So a
//! cluster client that routes by key specs sends a call to the node holding its keys.
//!
//! Derived from the registration's flags string, for every command alike: a command flagged
//! `getkeys-api` takes `numkeys key... arg...`, so its keys are declared as one key spec (begin at
//! argv[1], the key count there, the keys right after it, one apart), read-write (`RW ACCESS UPDATE`)
//! when flagged `write`, else read-only (`RO ACCESS`). Only the summary is per command, looked up by
//! name. The getkeys-api answer (`scripted::scripted`) stays for servers without key specs.

use std::ffi::{c_int, CStr};
use std::ptr::{null, null_mut};

use crate::api::{self, api, Ctx};
use crate::command_info::{
    Arg, BeginSearch, BeginSearchIndex, CommandInfo, FindKeys, FindKeysKeynum, KeySpec, ARG_INTEGER, ARG_KEY,
    ARG_MULTIPLE, ARG_OPTIONAL, ARG_STRING, BEGIN_SEARCH_INDEX, COMMAND_INFO_VERSION, FIND_KEYS_KEYNUM,
    KEY_ACCESS, KEY_RO, KEY_RW, KEY_UPDATE,
};

/// The module version every command came in, as `COMMAND DOCS` shows it.
const SINCE: &CStr = c"1.0.0";

/// The arity of a `numkeys key... arg...` command: its name and `numkeys` at least.
const KEYED_ARITY: c_int = -2;

/// Per command: its one-line summary and its arity. A command missing here is declared without a
/// summary, with [`KEYED_ARITY`] when it takes keys and its argument count unchecked (0) otherwise.
const DOCS: &[(&CStr, &CStr, c_int)] = &[
    (
        c"RATELOCK.VERSION",
        c"Returns the version of the RATELOCK.* contract the module answers.",
        1,
    ),
    (
        c"RATELOCK.LIMIT",
        c"Checks, and for `hit` spends, rate limits on the given keys (core/lua/limit.lua as a command).",
        KEYED_ARITY,
    ),
    (
        c"RATELOCK.LOCK_ACQUIRE",
        c"Takes or re-enters a lock and mints a fencing token (core/lua/lock_acquire.lua as a command).",
        KEYED_ARITY,
    ),
    (
        c"RATELOCK.LOCK_RELEASE",
        c"Gives back one hold of a lock, for the grant that holds it (core/lua/lock_release.lua as a command).",
        KEYED_ARITY,
    ),
    (
        c"RATELOCK.LOCK_EXTEND",
        c"Moves a held lock's lease end, never re-acquiring it (core/lua/lock_extend.lua as a command).",
        KEYED_ARITY,
    ),
    (
        c"RATELOCK.LOCK_STATE",
        c"Reads a lock: held, time left, its token and the last token minted (core/lua/lock_state.lua).",
        KEYED_ARITY,
    ),
    (
        c"RATELOCK.LOCK_FORCE_RELEASE",
        c"Deletes a lock's lease whoever holds it (core/lua/lock_force_release.lua as a command).",
        KEYED_ARITY,
    ),
    (
        c"RATELOCK.SEMAPHORE_ACQUIRE",
        c"Takes one of N permits, reclaiming expired ones (core/lua/semaphore_acquire.lua as a command).",
        KEYED_ARITY,
    ),
    (
        c"RATELOCK.SEMAPHORE_RELEASE",
        c"Gives back one permit (core/lua/semaphore_release.lua as a command).",
        KEYED_ARITY,
    ),
    (
        c"RATELOCK.SEMAPHORE_EXTEND",
        c"Moves one permit's lease end, never re-taking it (core/lua/semaphore_extend.lua as a command).",
        KEYED_ARITY,
    ),
    (
        c"RATELOCK.SEMAPHORE_STATE",
        c"Counts the permits in use (core/lua/semaphore_state.lua as a command).",
        KEYED_ARITY,
    ),
    (
        c"RATELOCK.FAIR_LOCK",
        c"Every operation of a first-come-first-served lock (core/lua/fair_lock.lua as a command).",
        KEYED_ARITY,
    ),
    (
        c"RATELOCK.RW_LOCK",
        c"Every operation of a read-write lock (core/lua/rw_lock.lua as a command).",
        KEYED_ARITY,
    ),
];

/// Declares `name`'s key spec, arity and docs, as its registration `flags` imply. Never refuses the
/// module: where the server lacks the API or turns the declaration down, it logs a warning and the
/// command goes on with its getkeys-api answer alone.
///
/// # Safety
/// `ctx` must be the load context, after [`api::Api::load`], and `name` a command registered in it.
pub unsafe fn declare(ctx: *mut Ctx, name: &CStr, flags: &CStr) {
    let api = api();
    let (Some(get_command), Some(set_command_info)) = (api.get_command, api.set_command_info) else {
        let why = "this server has no RedisModule_SetCommandInfo (Redis < 7.0)";
        return api::log_warning(ctx, &format!("ratelock: {name:?} declares no key specs: {why}"));
    };
    let command = get_command(ctx, name.as_ptr());
    let takes_keys = has_flag(flags, "getkeys-api");
    let (summary, arity) = DOCS.iter().find(|(known, _, _)| *known == name).map_or(
        (null(), if takes_keys { KEYED_ARITY } else { 0 }),
        |(_, summary, arity)| (summary.as_ptr(), *arity),
    );
    let mut key_specs = [keys_after_numkeys(has_flag(flags, "write")), zeroed_key_spec()];
    let mut args = numkeys_key_arg_args();
    let info = CommandInfo {
        version: &COMMAND_INFO_VERSION,
        summary,
        complexity: null(),
        since: SINCE.as_ptr(),
        history: null_mut(),
        tips: null(),
        arity,
        key_specs: if takes_keys {
            key_specs.as_mut_ptr()
        } else {
            null_mut()
        },
        args: if takes_keys { args.as_mut_ptr() } else { null_mut() },
    };
    if command.is_null() || set_command_info(command, &info) != api::OK {
        api::log_warning(
            ctx,
            &format!(
                "ratelock: the server refused {name:?}'s key specs and docs; COMMAND GETKEYS still answers"
            ),
        );
    }
}

/// Whether the space-separated registration `flags` include `flag`.
fn has_flag(flags: &CStr, flag: &str) -> bool {
    flags
        .to_bytes()
        .split(|&b| b == b' ')
        .any(|word| word == flag.as_bytes())
}

/// The key spec of `numkeys key...`: the search begins at argv[1], which holds the key count; the
/// keys follow it one apart. `writes`: `RW ACCESS UPDATE`, else `RO ACCESS`.
fn keys_after_numkeys(writes: bool) -> KeySpec {
    KeySpec {
        notes: null(),
        flags: if writes {
            KEY_RW | KEY_ACCESS | KEY_UPDATE
        } else {
            KEY_RO | KEY_ACCESS
        },
        begin_search_type: BEGIN_SEARCH_INDEX,
        bs: BeginSearch {
            index: BeginSearchIndex { pos: 1 },
        },
        find_keys_type: FIND_KEYS_KEYNUM,
        fk: FindKeys {
            keynum: FindKeysKeynum {
                keynumidx: 0,
                firstkey: 1,
                keystep: 1,
            },
        },
    }
}

/// The all-zero key spec that ends the array.
fn zeroed_key_spec() -> KeySpec {
    KeySpec {
        notes: null(),
        flags: 0,
        begin_search_type: 0,
        bs: BeginSearch {
            index: BeginSearchIndex { pos: 0 },
        },
        find_keys_type: 0,
        fk: FindKeys {
            keynum: FindKeysKeynum {
                keynumidx: 0,
                firstkey: 0,
                keystep: 0,
            },
        },
    }
}

/// `COMMAND DOCS`' arguments of `numkeys key... arg...`, ending with the all-zero argument.
fn numkeys_key_arg_args() -> [Arg; 4] {
    let arg = |name: &'static CStr, arg_type: c_int, key_spec_index: c_int, flags: c_int| Arg {
        name: if name.is_empty() { null() } else { name.as_ptr() },
        arg_type,
        key_spec_index,
        token: null(),
        summary: null(),
        since: null(),
        flags,
        deprecated_since: null(),
        subargs: null_mut(),
        display_text: null(),
    };
    [
        arg(c"numkeys", ARG_INTEGER, -1, 0),
        arg(c"key", ARG_KEY, 0, ARG_OPTIONAL | ARG_MULTIPLE),
        arg(c"arg", ARG_STRING, -1, ARG_OPTIONAL | ARG_MULTIPLE),
        arg(c"", 0, 0, 0),
    ]
}
