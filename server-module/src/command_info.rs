//! The C structs `RedisModule_SetCommandInfo` reads (Redis ≥ 7.0), laid out as `redismodule.h`
//! declares them: `RedisModuleCommandInfo`, its version record, key specs (with their two unions) and
//! arguments, plus the constants this module uses. Layout facts only; what RATELOCK declares through
//! them is in `command_docs`.
//!
//! The server reads arrays of key specs and arguments by the element sizes given in
//! [`CommandInfoVersion`], and each array ends with an all-zero element. The server copies everything
//! it is given, so the structs need only live for the call.
//!
//! [`Arg`] is Redis 7.0's `RedisModuleCommandArg` with the `display_text` field that Redis 7.2 (and
//! so Valkey) appended: those servers read it from every argument, where a 7.0-sized argument would
//! hand them the next argument's name; Redis 7.0 steps over it by `sizeof_arg`.

use std::ffi::{c_char, c_int};
use std::mem::size_of;

/// `REDISMODULE_CMD_KEY_RO`: the key is only read.
pub const KEY_RO: u64 = 1 << 0;
/// `REDISMODULE_CMD_KEY_RW`: the key is read and written.
pub const KEY_RW: u64 = 1 << 1;
/// `REDISMODULE_CMD_KEY_ACCESS`: the key's data is returned or used.
pub const KEY_ACCESS: u64 = 1 << 4;
/// `REDISMODULE_CMD_KEY_UPDATE`: the key's value is updated, the new one depending on the old.
pub const KEY_UPDATE: u64 = 1 << 5;

/// `REDISMODULE_KSPEC_BS_INDEX` (of the `RedisModuleKeySpecBeginSearchType` enum).
pub const BEGIN_SEARCH_INDEX: c_int = 2;
/// `REDISMODULE_KSPEC_FK_KEYNUM` (of the `RedisModuleKeySpecFindKeysType` enum).
pub const FIND_KEYS_KEYNUM: c_int = 3;

/// `REDISMODULE_ARG_TYPE_STRING` (of the `RedisModuleCommandArgType` enum).
pub const ARG_STRING: c_int = 0;
/// `REDISMODULE_ARG_TYPE_INTEGER`.
pub const ARG_INTEGER: c_int = 1;
/// `REDISMODULE_ARG_TYPE_KEY`.
pub const ARG_KEY: c_int = 3;
/// `REDISMODULE_CMD_ARG_OPTIONAL`.
pub const ARG_OPTIONAL: c_int = 1 << 0;
/// `REDISMODULE_CMD_ARG_MULTIPLE`.
pub const ARG_MULTIPLE: c_int = 1 << 1;

/// `RedisModuleCommand`: opaque, from `RedisModule_GetCommand`.
#[repr(C)]
pub struct Command {
    _private: [u8; 0],
}

/// `RedisModuleCommandHistoryEntry`: only its size is used (in the version record).
#[repr(C)]
pub struct HistoryEntry {
    /// `since`.
    pub since: *const c_char,
    /// `changes`.
    pub changes: *const c_char,
}

/// `bs.index` of a key spec: the argv index the key search starts at.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BeginSearchIndex {
    /// `pos`.
    pub pos: c_int,
}

/// `bs.keyword` of a key spec (unused here; it sets the union's size).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct BeginSearchKeyword {
    /// `keyword`.
    pub keyword: *const c_char,
    /// `startfrom`.
    pub startfrom: c_int,
}

/// The `bs` union of a key spec.
#[repr(C)]
#[derive(Clone, Copy)]
pub union BeginSearch {
    /// `index`, for [`BEGIN_SEARCH_INDEX`].
    pub index: BeginSearchIndex,
    /// `keyword`.
    pub keyword: BeginSearchKeyword,
}

/// `fk.range` of a key spec (unused here).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct FindKeysRange {
    /// `lastkey`.
    pub lastkey: c_int,
    /// `keystep`.
    pub keystep: c_int,
    /// `limit`.
    pub limit: c_int,
}

/// `fk.keynum` of a key spec: a key count argument, then the keys; all relative to the begin search.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct FindKeysKeynum {
    /// `keynumidx`: where the key count is.
    pub keynumidx: c_int,
    /// `firstkey`: where the first key is.
    pub firstkey: c_int,
    /// `keystep`: the distance from one key to the next.
    pub keystep: c_int,
}

/// The `fk` union of a key spec.
#[repr(C)]
#[derive(Clone, Copy)]
pub union FindKeys {
    /// `range`.
    pub range: FindKeysRange,
    /// `keynum`, for [`FIND_KEYS_KEYNUM`].
    pub keynum: FindKeysKeynum,
}

/// `RedisModuleCommandKeySpec`.
#[repr(C)]
pub struct KeySpec {
    /// `notes` (optional).
    pub notes: *const c_char,
    /// `flags`: the `KEY_*` bits.
    pub flags: u64,
    /// `begin_search_type`.
    pub begin_search_type: c_int,
    /// `bs`.
    pub bs: BeginSearch,
    /// `find_keys_type`.
    pub find_keys_type: c_int,
    /// `fk`.
    pub fk: FindKeys,
}

/// `RedisModuleCommandArg`.
#[repr(C)]
pub struct Arg {
    /// `name`.
    pub name: *const c_char,
    /// `type`: an `ARG_*` type.
    pub arg_type: c_int,
    /// `key_spec_index`: for a key, its key spec's index; else -1.
    pub key_spec_index: c_int,
    /// `token` (optional).
    pub token: *const c_char,
    /// `summary` (optional).
    pub summary: *const c_char,
    /// `since` (optional).
    pub since: *const c_char,
    /// `flags`: the `ARG_OPTIONAL`/`ARG_MULTIPLE` bits.
    pub flags: c_int,
    /// `deprecated_since` (optional).
    pub deprecated_since: *const c_char,
    /// `subargs` (optional, zero-terminated).
    pub subargs: *mut Arg,
    /// `display_text` (optional; Redis ≥ 7.2 reads it, 7.0 skips it).
    pub display_text: *const c_char,
}

/// `RedisModuleCommandInfoVersion`: tells the server the sizes of this module's structs.
#[repr(C)]
pub struct CommandInfoVersion {
    /// `version`: 1.
    pub version: c_int,
    /// `sizeof_historyentry`.
    pub sizeof_historyentry: usize,
    /// `sizeof_keyspec`.
    pub sizeof_keyspec: usize,
    /// `sizeof_arg`.
    pub sizeof_arg: usize,
}

/// `REDISMODULE_COMMAND_INFO_VERSION`: version 1 with this module's struct sizes.
pub static COMMAND_INFO_VERSION: CommandInfoVersion = CommandInfoVersion {
    version: 1,
    sizeof_historyentry: size_of::<HistoryEntry>(),
    sizeof_keyspec: size_of::<KeySpec>(),
    sizeof_arg: size_of::<Arg>(),
};

/// `RedisModuleCommandInfo` (its version 1 fields).
#[repr(C)]
pub struct CommandInfo {
    /// `version`: always [`COMMAND_INFO_VERSION`].
    pub version: *const CommandInfoVersion,
    /// `summary` (optional).
    pub summary: *const c_char,
    /// `complexity` (optional).
    pub complexity: *const c_char,
    /// `since` (optional): the module version the command came in.
    pub since: *const c_char,
    /// `history` (optional, zero-terminated).
    pub history: *mut HistoryEntry,
    /// `tips` (optional).
    pub tips: *const c_char,
    /// `arity`: the argument count with the name, -N for at least N; 0 leaves it unchecked.
    pub arity: c_int,
    /// `key_specs` (optional, zero-terminated).
    pub key_specs: *mut KeySpec,
    /// `args` (optional, zero-terminated).
    pub args: *mut Arg,
}

// The offsets and sizes a C compiler gives these structs on an LP64 target (x86_64, aarch64 Linux
// and macOS), so that a field moved by mistake fails the build rather than confuse the server.
#[cfg(target_pointer_width = "64")]
const _: () = {
    use std::mem::offset_of;
    assert!(size_of::<HistoryEntry>() == 16);
    assert!(size_of::<BeginSearch>() == 16 && size_of::<FindKeys>() == 12);
    assert!(offset_of!(KeySpec, flags) == 8);
    assert!(offset_of!(KeySpec, begin_search_type) == 16);
    assert!(offset_of!(KeySpec, bs) == 24);
    assert!(offset_of!(KeySpec, find_keys_type) == 40);
    assert!(offset_of!(KeySpec, fk) == 44);
    assert!(size_of::<KeySpec>() == 56);
    assert!(offset_of!(Arg, arg_type) == 8 && offset_of!(Arg, key_spec_index) == 12);
    assert!(offset_of!(Arg, flags) == 40 && offset_of!(Arg, deprecated_since) == 48);
    assert!(offset_of!(Arg, display_text) == 64 && size_of::<Arg>() == 72);
    assert!(offset_of!(CommandInfoVersion, sizeof_historyentry) == 8);
    assert!(size_of::<CommandInfoVersion>() == 32);
    assert!(offset_of!(CommandInfo, arity) == 48 && offset_of!(CommandInfo, key_specs) == 56);
    assert!(size_of::<CommandInfo>() == 72);
};
