//! The Redis module API, reached by hand: a small FFI with no bindgen, no libclang, no C header.
//!
//! How it works: the `RedisModuleCtx` that redis-server hands to `RedisModule_OnLoad` starts with a
//! pointer to the server's `RedisModule_GetApi(name, &fnptr)`. The C header's static-inline
//! `RedisModule_Init` reads that pointer and asks it for every API function by name; [`Api::load`]
//! does the same for the ~40 functions this module needs, then calls `RedisModule_SetModuleAttribs`.
//! Why: the module API is a table of function pointers looked up at load time, not symbols to link
//! against, so a few typed pointers are all a Rust cdylib needs; generating bindings from
//! `redismodule.h` would pull in libclang for a handful of signatures.

use std::ffi::{c_char, c_int, c_longlong, c_void, CStr};
use std::sync::OnceLock;

use crate::command_info::{Command, CommandInfo};

/// `REDISMODULE_OK`.
pub const OK: c_int = 0;
/// `REDISMODULE_ERR`.
pub const ERR: c_int = 1;
/// `REDISMODULE_APIVER_1`.
const APIVER_1: c_int = 1;

/// `REDISMODULE_REPLY_STRING`.
pub const REPLY_STRING: c_int = 0;
/// `REDISMODULE_REPLY_ERROR`.
pub const REPLY_ERROR: c_int = 1;
/// `REDISMODULE_REPLY_INTEGER`.
pub const REPLY_INTEGER: c_int = 2;
/// `REDISMODULE_REPLY_ARRAY`.
pub const REPLY_ARRAY: c_int = 3;
/// `REDISMODULE_REPLY_NULL`.
pub const REPLY_NULL: c_int = 4;

/// `REDISMODULE_READ`: `RedisModule_OpenKey` mode for reading only.
pub const KEY_READ: c_int = 1;
/// `REDISMODULE_WRITE`: `RedisModule_OpenKey` mode for writing (with `KEY_READ`, reading and writing).
pub const KEY_WRITE: c_int = 1 << 1;

/// `REDISMODULE_NOTIFY_GENERIC`: keyspace events of the generic commands (`del`, `expire`).
pub const NOTIFY_GENERIC: c_int = 1 << 2;
/// `REDISMODULE_NOTIFY_STRING`: keyspace events of the string commands (`set`).
pub const NOTIFY_STRING: c_int = 1 << 3;
/// `REDISMODULE_NOTIFY_HASH`: keyspace events of the hash commands (`hset`).
pub const NOTIFY_HASH: c_int = 1 << 6;
/// `REDISMODULE_NOTIFY_ZSET`: keyspace events of the sorted-set commands (`zadd`, `zremrangebyscore`).
pub const NOTIFY_ZSET: c_int = 1 << 7;

/// `REDISMODULE_KEYTYPE_EMPTY`: no such key (also what a null key answers).
pub const KEYTYPE_EMPTY: c_int = 0;
/// `REDISMODULE_KEYTYPE_STRING`.
pub const KEYTYPE_STRING: c_int = 1;
/// `REDISMODULE_KEYTYPE_HASH`.
pub const KEYTYPE_HASH: c_int = 3;
/// `REDISMODULE_KEYTYPE_ZSET`.
pub const KEYTYPE_ZSET: c_int = 5;

/// `REDISMODULE_HASH_NONE`: `RedisModule_HashGet` / `HashSet` field names are RedisModuleStrings.
pub const HASH_NONE: c_int = 0;

/// `REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED`: closing a key opened for writing does not signal
/// it as modified by itself; the module signals each key it really changed
/// (`RedisModule_SignalModifiedKey`).
pub const OPTION_NO_IMPLICIT_SIGNAL_MODIFIED: c_int = 1 << 1;

/// `REDISMODULE_NO_EXPIRE`: what `RedisModule_GetExpire` answers for a key without a TTL (or none).
pub const NO_EXPIRE: c_longlong = -1;

/// `RedisModuleCtx`: opaque, only ever behind a pointer.
#[repr(C)]
pub struct Ctx {
    _private: [u8; 0],
}

/// `RedisModuleString`: opaque.
#[repr(C)]
pub struct RString {
    _private: [u8; 0],
}

/// `RedisModuleKey`: opaque, an open key.
#[repr(C)]
pub struct Key {
    _private: [u8; 0],
}

/// `RedisModuleCallReply`: opaque.
#[repr(C)]
pub struct CallReply {
    _private: [u8; 0],
}

/// `RedisModuleCmdFunc`: a command's implementation.
pub type CmdFunc = unsafe extern "C" fn(*mut Ctx, *mut *mut RString, c_int) -> c_int;

type GetApiFn = unsafe extern "C" fn(*const c_char, *mut c_void) -> c_int;

/// The module API functions this module uses, looked up once at load.
#[allow(clippy::type_complexity)]
pub struct Api {
    /// `RedisModule_SetModuleAttribs(ctx, name, ver, apiver)`.
    pub set_module_attribs: unsafe extern "C" fn(*mut Ctx, *const c_char, c_int, c_int),
    /// `RedisModule_CreateCommand(ctx, name, func, flags, firstkey, lastkey, keystep)`.
    pub create_command:
        unsafe extern "C" fn(*mut Ctx, *const c_char, CmdFunc, *const c_char, c_int, c_int, c_int) -> c_int,
    /// `RedisModule_WrongArity(ctx)`.
    pub wrong_arity: unsafe extern "C" fn(*mut Ctx) -> c_int,
    /// `RedisModule_AutoMemory(ctx)`: strings and call replies of this call are freed by Redis.
    pub auto_memory: unsafe extern "C" fn(*mut Ctx),
    /// `RedisModule_ReplyWithError(ctx, "CODE message")`.
    pub reply_with_error: unsafe extern "C" fn(*mut Ctx, *const c_char) -> c_int,
    /// `RedisModule_ReplyWithLongLong(ctx, n)`.
    pub reply_with_long_long: unsafe extern "C" fn(*mut Ctx, c_longlong) -> c_int,
    /// `RedisModule_ReplyWithStringBuffer(ctx, ptr, len)`: a bulk string reply.
    pub reply_with_string_buffer: unsafe extern "C" fn(*mut Ctx, *const c_char, usize) -> c_int,
    /// `RedisModule_ReplyWithNull(ctx)`.
    pub reply_with_null: unsafe extern "C" fn(*mut Ctx) -> c_int,
    /// `RedisModule_ReplyWithArray(ctx, len)`.
    pub reply_with_array: unsafe extern "C" fn(*mut Ctx, std::ffi::c_long) -> c_int,
    /// `RedisModule_StringPtrLen(str, &len)`.
    pub string_ptr_len: unsafe extern "C" fn(*const RString, *mut usize) -> *const c_char,
    /// `RedisModule_CreateString(ctx, ptr, len)`.
    pub create_string: unsafe extern "C" fn(*mut Ctx, *const c_char, usize) -> *mut RString,
    /// `RedisModule_Call(ctx, cmd, fmt, ...)`: used only with the `v` format (an argv array and its length).
    pub call: unsafe extern "C" fn(*mut Ctx, *const c_char, *const c_char, ...) -> *mut CallReply,
    /// `RedisModule_CallReplyType(reply)`.
    pub call_reply_type: unsafe extern "C" fn(*mut CallReply) -> c_int,
    /// `RedisModule_CallReplyInteger(reply)`.
    pub call_reply_integer: unsafe extern "C" fn(*mut CallReply) -> c_longlong,
    /// `RedisModule_CallReplyStringPtr(reply, &len)`: the bytes of a string or error reply.
    pub call_reply_string_ptr: unsafe extern "C" fn(*mut CallReply, *mut usize) -> *const c_char,
    /// `RedisModule_CallReplyLength(reply)`.
    pub call_reply_length: unsafe extern "C" fn(*mut CallReply) -> usize,
    /// `RedisModule_CallReplyArrayElement(reply, i)`.
    pub call_reply_array_element: unsafe extern "C" fn(*mut CallReply, usize) -> *mut CallReply,
    /// `RedisModule_OpenKey(ctx, keyname, mode)`: null when a key opened for reading does not exist.
    pub open_key: unsafe extern "C" fn(*mut Ctx, *mut RString, c_int) -> *mut Key,
    /// `RedisModule_CloseKey(key)` (takes null).
    pub close_key: unsafe extern "C" fn(*mut Key),
    /// `RedisModule_KeyType(key)`: a `REDISMODULE_KEYTYPE_*` (EMPTY for null).
    pub key_type: unsafe extern "C" fn(*mut Key) -> c_int,
    /// `RedisModule_StringDMA(key, &len, mode)`: the bytes of a string key, null for another type.
    pub string_dma: unsafe extern "C" fn(*mut Key, *mut usize, c_int) -> *mut c_char,
    /// `RedisModule_GetExpire(key)`: ms left, or `REDISMODULE_NO_EXPIRE`.
    pub get_expire: unsafe extern "C" fn(*mut Key) -> c_longlong,
    /// `RedisModule_GetAbsExpire(key)`: ms since the epoch when the key ends, or
    /// `REDISMODULE_NO_EXPIRE` (Redis ≥ 6.2).
    pub get_abs_expire: unsafe extern "C" fn(*mut Key) -> c_longlong,
    /// `RedisModule_HashGet(key, flags, field, &value, ..., NULL)`: used only with
    /// `REDISMODULE_HASH_NONE`, string field names and `*mut *mut RString` out-pointers.
    pub hash_get: unsafe extern "C" fn(*mut Key, c_int, ...) -> c_int,
    /// `RedisModule_StringSet(key, value)`: the key becomes that string, without a TTL.
    pub string_set: unsafe extern "C" fn(*mut Key, *mut RString) -> c_int,
    /// `RedisModule_HashSet(key, flags, field, value, ..., NULL)`: used only with
    /// `REDISMODULE_HASH_NONE`, string field names and values.
    pub hash_set: unsafe extern "C" fn(*mut Key, c_int, ...) -> c_int,
    /// `RedisModule_SetAbsExpire(key, ms since the epoch)` (Redis ≥ 7.0).
    pub set_abs_expire: unsafe extern "C" fn(*mut Key, c_longlong) -> c_int,
    /// `RedisModule_SetExpire(key, ms)`: a TTL relative to now, or `NO_EXPIRE` to drop it.
    pub set_expire: unsafe extern "C" fn(*mut Key, c_longlong) -> c_int,
    /// `RedisModule_StringTruncate(key, len)`: resizes a string key's value (creating it when absent),
    /// as a raw string whose bytes `StringDMA` can then write.
    pub string_truncate: unsafe extern "C" fn(*mut Key, usize) -> c_int,
    /// `RedisModule_SignalModifiedKey(ctx, name)`: WATCH and client-side caching learn the key changed.
    pub signal_modified_key: unsafe extern "C" fn(*mut Ctx, *mut RString) -> c_int,
    /// `RedisModule_SetModuleOptions(ctx, options)`.
    pub set_module_options: unsafe extern "C" fn(*mut Ctx, c_int),
    /// `RedisModule_PublishMessage(ctx, channel, message)`: PUBLISH to this server's subscribers (and,
    /// in a cluster, the other nodes'), without dispatching the command.
    pub publish_message: unsafe extern "C" fn(*mut Ctx, *mut RString, *mut RString) -> c_int,
    /// `RedisModule_GetContextFlags(ctx)`: `REDISMODULE_CTX_FLAGS_*` of the server and the call.
    pub get_context_flags: unsafe extern "C" fn(*mut Ctx) -> c_int,
    /// `RedisModule_ZsetAdd(key, score, member, &flags)`: adds or rescores one member.
    pub zset_add: unsafe extern "C" fn(*mut Key, f64, *mut RString, *mut c_int) -> c_int,
    /// `RedisModule_ZsetRem(key, member, &deleted)`: removes one member (and the key once empty).
    pub zset_rem: unsafe extern "C" fn(*mut Key, *mut RString, *mut c_int) -> c_int,
    /// `RedisModule_DeleteKey(key)`.
    pub delete_key: unsafe extern "C" fn(*mut Key) -> c_int,
    /// `RedisModule_Replicate(ctx, cmd, fmt, ...)`: used only with the `v` format (an argv array and
    /// its length).
    pub replicate: unsafe extern "C" fn(*mut Ctx, *const c_char, *const c_char, ...) -> c_int,
    /// `RedisModule_NotifyKeyspaceEvent(ctx, type, event, key)`.
    pub notify_keyspace_event: unsafe extern "C" fn(*mut Ctx, c_int, *const c_char, *mut RString) -> c_int,
    /// `RedisModule_ZsetFirstInScoreRange(key, min, max, minex, maxex)`: starts a walk of a sorted
    /// set by score (ERR when the key is not a sorted set).
    pub zset_first_in_score_range: unsafe extern "C" fn(*mut Key, f64, f64, c_int, c_int) -> c_int,
    /// `RedisModule_ZsetRangeCurrentElement(key, &score)`: the walk's member (a new string) and score.
    pub zset_range_current_element: unsafe extern "C" fn(*mut Key, *mut f64) -> *mut RString,
    /// `RedisModule_ZsetRangeNext(key)`: 0 once the walk has passed its last element.
    pub zset_range_next: unsafe extern "C" fn(*mut Key) -> c_int,
    /// `RedisModule_ZsetRangeEndReached(key)`: 1 when the walk has no (more) element.
    pub zset_range_end_reached: unsafe extern "C" fn(*mut Key) -> c_int,
    /// `RedisModule_ZsetRangeStop(key)`: ends the walk.
    pub zset_range_stop: unsafe extern "C" fn(*mut Key),
    /// `RedisModule_FreeString(ctx, str)`.
    pub free_string: unsafe extern "C" fn(*mut Ctx, *mut RString),
    /// `RedisModule_Milliseconds()`: the server's clock, ms since the Unix epoch.
    pub milliseconds: unsafe extern "C" fn() -> c_longlong,
    /// `RedisModule_IsKeysPositionRequest(ctx)`: the call only asks where the keys are (getkeys-api).
    pub is_keys_position_request: unsafe extern "C" fn(*mut Ctx) -> c_int,
    /// `RedisModule_KeyAtPos(ctx, pos)`: answers such a request, one key position at a time.
    pub key_at_pos: unsafe extern "C" fn(*mut Ctx, c_int),
    /// `RedisModule_Log(ctx, level, fmt, ...)`: used only with the `%s` format and one string.
    pub log: unsafe extern "C" fn(*mut Ctx, *const c_char, *const c_char, ...),
    /// `RedisModule_GetCommand(ctx, name)` (Redis ≥ 7.0; `None` on older servers).
    pub get_command: Option<unsafe extern "C" fn(*mut Ctx, *const c_char) -> *mut Command>,
    /// `RedisModule_SetCommandInfo(command, info)` (Redis ≥ 7.0; `None` on older servers).
    pub set_command_info: Option<unsafe extern "C" fn(*mut Command, *const CommandInfo) -> c_int>,
}

static API: OnceLock<Api> = OnceLock::new();

/// The API table. Only valid after a successful [`Api::load`], which `RedisModule_OnLoad` does first.
pub fn api() -> &'static Api {
    API.get()
        .expect("ratelock module: API used before RedisModule_OnLoad")
}

/// Looks one function up through `RedisModule_GetApi` as a function pointer of type `F` (`None` when
/// the server does not export it).
///
/// # Safety
/// `F` must be the C signature of the function called `name`.
unsafe fn lookup<F: Copy>(get_api: GetApiFn, name: &CStr) -> Option<F> {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    let mut slot: *mut c_void = std::ptr::null_mut();
    if get_api(name.as_ptr(), (&mut slot as *mut *mut c_void).cast()) != OK || slot.is_null() {
        return None;
    }
    Some(std::mem::transmute_copy::<*mut c_void, F>(&slot))
}

impl Api {
    /// Fills the table from `ctx` (the `RedisModule_Init` step) and registers the module's name.
    /// Fails, naming the function, when the server does not export one of them.
    ///
    /// # Safety
    /// `ctx` must be the context redis-server passed to `RedisModule_OnLoad`.
    pub unsafe fn load(ctx: *mut Ctx, name: &CStr, version: c_int) -> Result<&'static Api, String> {
        // The first word of the context is the GetApi function pointer.
        let get_api: GetApiFn = std::mem::transmute::<*mut c_void, GetApiFn>(*(ctx as *mut *mut c_void));
        macro_rules! get {
            ($name:literal) => {
                lookup(get_api, $name).ok_or_else(|| format!("redis-server does not export {:?}", $name))?
            };
        }
        let table = Api {
            set_module_attribs: get!(c"RedisModule_SetModuleAttribs"),
            create_command: get!(c"RedisModule_CreateCommand"),
            wrong_arity: get!(c"RedisModule_WrongArity"),
            auto_memory: get!(c"RedisModule_AutoMemory"),
            reply_with_error: get!(c"RedisModule_ReplyWithError"),
            reply_with_long_long: get!(c"RedisModule_ReplyWithLongLong"),
            reply_with_string_buffer: get!(c"RedisModule_ReplyWithStringBuffer"),
            reply_with_null: get!(c"RedisModule_ReplyWithNull"),
            reply_with_array: get!(c"RedisModule_ReplyWithArray"),
            string_ptr_len: get!(c"RedisModule_StringPtrLen"),
            create_string: get!(c"RedisModule_CreateString"),
            call: get!(c"RedisModule_Call"),
            call_reply_type: get!(c"RedisModule_CallReplyType"),
            call_reply_integer: get!(c"RedisModule_CallReplyInteger"),
            call_reply_string_ptr: get!(c"RedisModule_CallReplyStringPtr"),
            call_reply_length: get!(c"RedisModule_CallReplyLength"),
            call_reply_array_element: get!(c"RedisModule_CallReplyArrayElement"),
            open_key: get!(c"RedisModule_OpenKey"),
            close_key: get!(c"RedisModule_CloseKey"),
            key_type: get!(c"RedisModule_KeyType"),
            string_dma: get!(c"RedisModule_StringDMA"),
            get_expire: get!(c"RedisModule_GetExpire"),
            get_abs_expire: get!(c"RedisModule_GetAbsExpire"),
            hash_get: get!(c"RedisModule_HashGet"),
            string_set: get!(c"RedisModule_StringSet"),
            hash_set: get!(c"RedisModule_HashSet"),
            set_abs_expire: get!(c"RedisModule_SetAbsExpire"),
            delete_key: get!(c"RedisModule_DeleteKey"),
            zset_add: get!(c"RedisModule_ZsetAdd"),
            zset_rem: get!(c"RedisModule_ZsetRem"),
            publish_message: get!(c"RedisModule_PublishMessage"),
            get_context_flags: get!(c"RedisModule_GetContextFlags"),
            set_expire: get!(c"RedisModule_SetExpire"),
            string_truncate: get!(c"RedisModule_StringTruncate"),
            signal_modified_key: get!(c"RedisModule_SignalModifiedKey"),
            set_module_options: get!(c"RedisModule_SetModuleOptions"),
            replicate: get!(c"RedisModule_Replicate"),
            notify_keyspace_event: get!(c"RedisModule_NotifyKeyspaceEvent"),
            zset_first_in_score_range: get!(c"RedisModule_ZsetFirstInScoreRange"),
            zset_range_current_element: get!(c"RedisModule_ZsetRangeCurrentElement"),
            zset_range_next: get!(c"RedisModule_ZsetRangeNext"),
            zset_range_end_reached: get!(c"RedisModule_ZsetRangeEndReached"),
            zset_range_stop: get!(c"RedisModule_ZsetRangeStop"),
            free_string: get!(c"RedisModule_FreeString"),
            milliseconds: get!(c"RedisModule_Milliseconds"),
            is_keys_position_request: get!(c"RedisModule_IsKeysPositionRequest"),
            key_at_pos: get!(c"RedisModule_KeyAtPos"),
            log: get!(c"RedisModule_Log"),
            get_command: lookup(get_api, c"RedisModule_GetCommand"),
            set_command_info: lookup(get_api, c"RedisModule_SetCommandInfo"),
        };
        let api = API.get_or_init(|| table);
        (api.set_module_attribs)(ctx, name.as_ptr(), version, APIVER_1);
        Ok(api)
    }
}

/// Writes `message` to the server's log at the `warning` level (a NUL byte cuts it short).
///
/// # Safety
/// `ctx` must be a live context (the load context or a command's), after [`Api::load`].
pub unsafe fn log_warning(ctx: *mut Ctx, message: &str) {
    let text = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
    (api().log)(ctx, c"warning".as_ptr(), c"%s".as_ptr(), text.as_ptr());
}
