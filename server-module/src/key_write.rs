//! Writes of a key's value through the low-level key API (`RedisModule_OpenKey` for writing,
//! `StringSet`, `HashSet`, `SetAbsExpire`, `DeleteKey`) rather than `RedisModule_Call` with `!`: no
//! command lookup, no argument parsing, no reply object.
//!
//! What the `!` Call did besides the write is done here by hand, so that nothing outside the module
//! can tell the two apart: each write is propagated to replicas and the AOF as the very command the
//! Call ran (`RedisModule_Replicate`: `SET key value PXAT ms`, `HSET key f v ...`, `PEXPIREAT key ms`,
//! `DEL key`, always with absolute expiry times), fires the keyspace events that command fires, and
//! a key that was written is signalled as modified (WATCH, client-side caching) when it is closed. A key
//! opened for writing but left as it was is not: the module turns off Redis's implicit signal at load,
//! so a denied hit disturbs no WATCH, as the scripts' denied hit (which writes nothing) does not.
//!
//! A string is written in place where it can be (`StringTruncate` and `StringDMA`): the key keeps its
//! raw string object and only its bytes change, with no new value object and no second lookup.

use std::cell::Cell;
use std::ffi::{c_char, c_int, CStr};

use crate::api::{self, api, Key, RString};
use crate::ctx::Context;
use crate::digits::Digits;
use crate::key_read::{KeyRead, WRONGTYPE};

/// A key opened for reading and writing, closed when dropped (and then signalled as modified if it was
/// written). Open it only once every [`ReadKey`] of the same key is dropped, and only once at a time.
///
/// [`ReadKey`]: crate::key_read::ReadKey
pub struct WriteKey<'cx> {
    /// Never null: `OpenKey` in write mode opens a key that does not exist too.
    key: *mut Key,
    /// The key's name, for the propagated commands and the keyspace events.
    name: *mut RString,
    cx: &'cx Context,
    /// Whether anything was written through this handle.
    written: Cell<bool>,
}

impl<'cx> WriteKey<'cx> {
    /// Opens `name` for writing in the database of the call `cx` serves. Like a write command, this
    /// drops the key first when its TTL has passed.
    pub fn open(cx: &'cx Context, name: &[u8]) -> Result<WriteKey<'cx>, String> {
        let name = cx.string_of(name);
        // SAFETY: a live context and a Redis string (freed by auto memory).
        let key = unsafe { (api().open_key)(cx.raw(), name, api::KEY_READ | api::KEY_WRITE) };
        if key.is_null() {
            return Err("ERR ratelock module: a key could not be opened for writing".into());
        }
        Ok(WriteKey {
            key,
            name,
            cx,
            written: Cell::new(false),
        })
    }

    /// `SET key value PXAT expire_at`: the key becomes the string `value`, ending at `expire_at` (ms
    /// since the epoch), whatever it held before.
    pub fn set_string_until(&self, value: &[u8], expire_at: u64) -> Result<(), String> {
        self.put_string(value)?;
        self.expire_at_quietly(expire_at)?;
        self.replicate(c"SET", &[value, b"PXAT", Digits::of(expire_at).as_bytes()])?;
        self.notify(api::NOTIFY_STRING, c"set");
        self.notify(api::NOTIFY_GENERIC, c"expire");
        Ok(())
    }

    /// `SET key value`: the key becomes the string `value`, with no TTL.
    pub fn set_string_forever(&self, value: &[u8]) -> Result<(), String> {
        self.put_string(value)?;
        // SAFETY: an open key holding a string now.
        unsafe {
            if (api().get_expire)(self.key) != api::NO_EXPIRE {
                (api().set_expire)(self.key, api::NO_EXPIRE);
            }
        }
        self.replicate(c"SET", &[value])?;
        self.notify(api::NOTIFY_STRING, c"set");
        Ok(())
    }

    /// `HSET key field value ...` of one to three fields. The key must be a hash or not exist
    /// (WRONGTYPE otherwise, as HSET answers).
    pub fn hash_set(&self, pairs: &[(&CStr, &[u8])]) -> Result<(), String> {
        // SAFETY: an open key.
        let kind = unsafe { (api().key_type)(self.key) };
        if kind != api::KEYTYPE_EMPTY && kind != api::KEYTYPE_HASH {
            return Err(WRONGTYPE.into());
        }
        if pairs.is_empty() || pairs.len() > 3 {
            return Err(format!(
                "ERR ratelock module: {} hash fields written at once (1 to 3)",
                pairs.len()
            ));
        }
        self.written.set(true);
        // The same strings serve the write and the propagated HSET.
        let mut strings: [*mut RString; 6] = [std::ptr::null_mut(); 6];
        for (i, (field, value)) in pairs.iter().enumerate() {
            strings[2 * i] = self.cx.string_of(field.to_bytes());
            strings[2 * i + 1] = self.cx.string_of(value);
        }
        let hash_set = api().hash_set;
        let [f0, v0, f1, v1, f2, v2] = strings;
        let end: *const c_char = std::ptr::null();
        // SAFETY: a key open for writing, of hash type or empty; HashSet takes (field, value) string
        // pairs ended by a null pointer, and copies both. (Its count of fields updated is 0 for new
        // fields, so it tells no failure apart: the type was checked above.)
        unsafe {
            match pairs.len() {
                1 => hash_set(self.key, api::HASH_NONE, f0, v0, end),
                2 => hash_set(self.key, api::HASH_NONE, f0, v0, f1, v1, end),
                _ => hash_set(self.key, api::HASH_NONE, f0, v0, f1, v1, f2, v2, end),
            }
        };
        self.replicate_strings(c"HSET", &strings[..2 * pairs.len()])?;
        self.notify(api::NOTIFY_HASH, c"hset");
        Ok(())
    }

    /// `SET key value KEEPTTL` of an existing string key: its bytes replaced in place, its TTL kept.
    pub fn set_string_keeping_ttl(&self, value: &[u8]) -> Result<(), String> {
        if self.kind() != api::KEYTYPE_STRING {
            return Err(WRONGTYPE.into());
        }
        self.put_string(value)?;
        self.replicate(c"SET", &[value, b"KEEPTTL"])?;
        self.notify(api::NOTIFY_STRING, c"set");
        Ok(())
    }

    /// `ZPOPMAX key count`, given the `members` it takes (the highest scores, read through this key):
    /// each is removed, and the key with the last of them, as the command does.
    pub fn zset_pop_max(&self, members: &[Vec<u8>]) -> Result<(), String> {
        if members.is_empty() {
            return Ok(());
        }
        let count = Digits::of(members.len() as u64);
        self.remove_members(members, c"ZPOPMAX", &[count.as_bytes()], c"zpopmax")
    }

    /// `PEXPIREAT key expire_at` unless the existing key already ends at or after `expire_at`: a key
    /// that holds two states (a token bucket's own and its override's) lives as long as the longer
    /// needs.
    pub fn expire_at_least(&self, expire_at: u64) -> Result<(), String> {
        // SAFETY: a key open for writing.
        let ends = unsafe { (api().get_abs_expire)(self.key) };
        if ends != api::NO_EXPIRE && u64::try_from(ends).is_ok_and(|ends| ends >= expire_at) {
            return Ok(());
        }
        self.expire_at(expire_at)
    }

    /// `PEXPIREAT key expire_at` (ms since the epoch, after now) of the existing key.
    pub fn expire_at(&self, expire_at: u64) -> Result<(), String> {
        self.expire_at_quietly(expire_at)?;
        self.replicate(c"PEXPIREAT", &[Digits::of(expire_at).as_bytes()])?;
        self.notify(api::NOTIFY_GENERIC, c"expire");
        Ok(())
    }

    /// `ZREMRANGEBYSCORE key -inf through`, given the `members` that range holds (read through this
    /// key): each is removed, and the key with the last of them, as the command does.
    pub fn zset_remove_through(&self, members: &[Vec<u8>], through: &[u8]) -> Result<(), String> {
        if members.is_empty() {
            return Ok(());
        }
        self.remove_members(
            members,
            c"ZREMRANGEBYSCORE",
            &[b"-inf", through],
            c"zremrangebyscore",
        )
    }

    /// Removes `members` (read through this key just before), propagated as `command key args...` with
    /// its keyspace `event`, and the key's `del` when it is left empty, as the command does.
    fn remove_members(
        &self,
        members: &[Vec<u8>],
        command: &CStr,
        args: &[&[u8]],
        event: &CStr,
    ) -> Result<(), String> {
        self.written.set(true);
        for member in members {
            let mut deleted = 0;
            // SAFETY: a key open for writing, a sorted set (read through it just before).
            if unsafe { (api().zset_rem)(self.key, self.cx.string_of(member), &mut deleted) } != api::OK {
                return Err(WRONGTYPE.into());
            }
        }
        self.replicate(command, args)?;
        self.notify(api::NOTIFY_ZSET, event);
        if self.kind() == api::KEYTYPE_EMPTY {
            self.notify(api::NOTIFY_GENERIC, c"del");
        }
        Ok(())
    }

    /// `ZADD key score member ...`: every member of `members` scored `score` (given as its text too,
    /// for the propagated command). The key must be a sorted set or not exist.
    pub fn zset_add(&self, score: f64, score_text: &[u8], members: &[Vec<u8>]) -> Result<(), String> {
        if members.is_empty() {
            return Ok(());
        }
        self.written.set(true);
        let score_string = self.cx.string_of(score_text);
        let mut argv: Vec<*mut RString> = Vec::with_capacity(1 + 2 * members.len());
        argv.push(self.name);
        for member in members {
            let member = self.cx.string_of(member);
            let mut flags = 0;
            // SAFETY: a key open for writing; ZsetAdd copies the member.
            if unsafe { (api().zset_add)(self.key, score, member, &mut flags) } != api::OK {
                return Err(WRONGTYPE.into());
            }
            argv.extend([score_string, member]);
        }
        // SAFETY: the `v` format takes an array of RedisModuleString pointers and its length.
        let status = unsafe {
            (api().replicate)(
                self.cx.raw(),
                c"ZADD".as_ptr(),
                c"v".as_ptr(),
                argv.as_mut_ptr(),
                argv.len(),
            )
        };
        if status != api::OK {
            return Err("ERR ratelock module: ZADD could not be propagated".into());
        }
        self.notify(api::NOTIFY_ZSET, c"zadd");
        Ok(())
    }

    /// `DEL key` of the existing key.
    pub fn delete(&self) -> Result<(), String> {
        self.written.set(true);
        // SAFETY: a key open for writing.
        if unsafe { (api().delete_key)(self.key) } != api::OK {
            return Err("ERR ratelock module: a key could not be deleted".into());
        }
        self.replicate(c"DEL", &[])?;
        self.notify(api::NOTIFY_GENERIC, c"del");
        Ok(())
    }

    /// Stores `value` as the key's string, propagating nothing. A string key (or no key) is written in
    /// place: resized when the length changes, then its bytes copied; it keeps its TTL, which the
    /// caller sets or drops. A key of another type is replaced, as `SET` replaces it.
    fn put_string(&self, value: &[u8]) -> Result<(), String> {
        self.written.set(true);
        let api = api();
        let kind = self.kind();
        if value.is_empty() || (kind != api::KEYTYPE_EMPTY && kind != api::KEYTYPE_STRING) {
            // SAFETY: a key open for writing and a Redis string, which StringSet copies.
            return match unsafe { (api.string_set)(self.key, self.cx.string_of(value)) } {
                api::OK => Ok(()),
                _ => Err("ERR ratelock module: a string could not be written".into()),
            };
        }
        // SAFETY: a key open for writing, empty or a string: StringTruncate creates or resizes it (a
        // raw string of `value.len()` bytes), and StringDMA in write mode hands out exactly those bytes,
        // valid until the key is written again.
        unsafe {
            let mut len = 0usize;
            let same_length = kind == api::KEYTYPE_STRING
                && !(api.string_dma)(self.key, &mut len, api::KEY_READ).is_null()
                && len == value.len();
            if !same_length && (api.string_truncate)(self.key, value.len()) != api::OK {
                return Err("ERR ratelock module: a string could not be resized".into());
            }
            let bytes = (api.string_dma)(self.key, &mut len, api::KEY_READ | api::KEY_WRITE);
            if bytes.is_null() || len != value.len() {
                return Err("ERR ratelock module: a string could not be written".into());
            }
            std::ptr::copy_nonoverlapping(value.as_ptr(), bytes.cast::<u8>(), len);
        }
        Ok(())
    }

    /// Sets the existing key's absolute expiry, propagating nothing.
    fn expire_at_quietly(&self, expire_at: u64) -> Result<(), String> {
        self.written.set(true);
        let at = i64::try_from(expire_at).map_err(|_| "ERR ratelock module: expiry out of range")?;
        // SAFETY: a key open for writing.
        match unsafe { (api().set_abs_expire)(self.key, at) } {
            api::OK => Ok(()),
            _ => Err("ERR ratelock module: an expiry could not be set".into()),
        }
    }

    /// Propagates `command key args...` to replicas and the AOF.
    fn replicate(&self, command: &CStr, args: &[&[u8]]) -> Result<(), String> {
        let mut strings: [*mut RString; 4] = [std::ptr::null_mut(); 4];
        if args.len() > strings.len() {
            return Err(format!(
                "ERR ratelock module: {} arguments to propagate",
                args.len()
            ));
        }
        for (slot, arg) in strings.iter_mut().zip(args) {
            *slot = self.cx.string_of(arg);
        }
        self.replicate_strings(command, &strings[..args.len()])
    }

    /// [`WriteKey::replicate`] of arguments that are Redis strings already.
    fn replicate_strings(&self, command: &CStr, args: &[*mut RString]) -> Result<(), String> {
        let mut argv: [*mut RString; 8] = [std::ptr::null_mut(); 8];
        argv[0] = self.name;
        argv[1..=args.len()].copy_from_slice(args);
        // SAFETY: the `v` format takes an array of RedisModuleString pointers and its length.
        let status = unsafe {
            (api().replicate)(
                self.cx.raw(),
                command.as_ptr(),
                c"v".as_ptr(),
                argv.as_mut_ptr(),
                args.len() + 1,
            )
        };
        match status {
            api::OK => Ok(()),
            _ => Err(format!(
                "ERR ratelock module: {} could not be propagated",
                command.to_string_lossy()
            )),
        }
    }

    /// Fires the keyspace event `event` of class `kind` for the key, as the command it stands for does.
    fn notify(&self, kind: c_int, event: &CStr) {
        // SAFETY: a live context, a NUL-terminated event name and the key's name.
        unsafe { (api().notify_keyspace_event)(self.cx.raw(), kind, event.as_ptr(), self.name) };
    }
}

impl KeyRead for WriteKey<'_> {
    fn open_key(&self) -> *mut Key {
        self.key
    }

    fn context(&self) -> &Context {
        self.cx
    }
}

impl Drop for WriteKey<'_> {
    fn drop(&mut self) {
        // SAFETY: a key this wrapper opened and has not closed, and its name. A written key is
        // signalled as modified (WATCH, client-side caching); Redis no longer does it on close.
        unsafe {
            (api().close_key)(self.key);
            if self.written.get() {
                (api().signal_modified_key)(self.cx.raw(), self.name);
            }
        }
    }
}
