//! Reads of a key's value through the low-level key API (`RedisModule_OpenKey`, `StringDMA`, `HashGet`,
//! `GetExpire`) rather than `RedisModule_Call`: no argument strings, no command lookup, no reply object,
//! which made up most of a command's server time. Writes go through `key_write` (strings and hashes) or
//! `Context::call` with `!` (the rest), propagated either way as the commands the scripts send.
//!
//! A key of another type answers the error text `GET`/`HMGET` answer through `RedisModule_Call`, so a
//! caller sees the same reply either way.

use std::ffi::{c_char, CStr};
use std::ptr::null_mut;

use crate::api::{self, api, Key, RString};
use crate::ctx::Context;

/// The error a read of a key of the wrong type answers, as Redis words it (`-WRONGTYPE ...`).
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// A key opened for reading, closed when dropped. Drop it before any write to the same key (through
/// `Context::call` or a `WriteKey`): an open key must not see its value changed under it.
pub struct ReadKey<'cx> {
    /// Null when the key does not exist (what `OpenKey` answers in read mode).
    key: *mut Key,
    cx: &'cx Context,
}

impl<'cx> ReadKey<'cx> {
    /// Opens `name` for reading in the database of the call `cx` serves. Like a read command, this
    /// drops the key first when its TTL has passed.
    pub fn open(cx: &'cx Context, name: &[u8]) -> ReadKey<'cx> {
        // SAFETY: the context is live and the name a Redis string (`Context::string_of`); OpenKey in
        // read mode answers an open key or null.
        let key = unsafe { (api().open_key)(cx.raw(), cx.string_of(name), api::KEY_READ) };
        ReadKey { key, cx }
    }
}

impl KeyRead for ReadKey<'_> {
    fn open_key(&self) -> *mut Key {
        self.key
    }

    fn context(&self) -> &Context {
        self.cx
    }
}

/// The reads of an open key, shared by a key opened for reading ([`ReadKey`]) and one opened for
/// reading and writing (`key_write::WriteKey`), so a call that writes a key reads it through the same
/// handle: one lookup in the keyspace, not two.
pub trait KeyRead {
    /// The open key; null when a key opened for reading does not exist.
    fn open_key(&self) -> *mut Key;

    /// The context of the call the key was opened in.
    fn context(&self) -> &Context;

    /// The key's `REDISMODULE_KEYTYPE_*`.
    fn kind(&self) -> std::ffi::c_int {
        if self.open_key().is_null() {
            return api::KEYTYPE_EMPTY;
        }
        // SAFETY: an open key.
        unsafe { (api().key_type)(self.open_key()) }
    }

    /// The value of a string key, as `GET` gives it: `None` when there is no key. Redis gives direct
    /// access only to a plain (raw) string, so it first stores an int- or embstr-encoded value again
    /// as raw: the same bytes and TTL, nothing propagated, a few bytes more until the next write.
    fn string(&self) -> Result<Option<&[u8]>, String> {
        match self.kind() {
            api::KEYTYPE_EMPTY => Ok(None),
            api::KEYTYPE_STRING => {
                let mut len = 0usize;
                // SAFETY: an open string key; the bytes stay valid while it is open and unchanged,
                // which `&self` ensures for the slice.
                unsafe {
                    let ptr = (api().string_dma)(self.open_key(), &mut len, api::KEY_READ);
                    if ptr.is_null() {
                        return Err(WRONGTYPE.into());
                    }
                    Ok(Some(std::slice::from_raw_parts(ptr.cast::<u8>(), len)))
                }
            }
            _ => Err(WRONGTYPE.into()),
        }
    }

    /// The values of one to three `fields` of a hash key, as `HMGET` gives them: `None` for a field (or
    /// a key) that is not there.
    fn hash<const N: usize>(&self, fields: &[&CStr; N]) -> Result<[Option<&[u8]>; N], String> {
        match self.kind() {
            api::KEYTYPE_EMPTY => return Ok([None; N]),
            api::KEYTYPE_HASH => {}
            _ => return Err(WRONGTYPE.into()),
        }
        let hash_get = api().hash_get;
        let key = self.open_key();
        let mut out: [*mut RString; 3] = [null_mut(); 3];
        let cx = self.context();
        let name = |i: usize| cx.string_of(fields[i].to_bytes());
        let end: *const c_char = std::ptr::null();
        let [a, b, c] = &mut out;
        // SAFETY: an open hash key; HashGet takes (field, &mut RString*) pairs ended by a null pointer,
        // and stores each value (auto memory frees it) or null for a missing field.
        let status = unsafe {
            match N {
                1 => hash_get(key, api::HASH_NONE, name(0), a as *mut _, end),
                2 => hash_get(
                    key,
                    api::HASH_NONE,
                    name(0),
                    a as *mut _,
                    name(1),
                    b as *mut _,
                    end,
                ),
                3 => hash_get(
                    key,
                    api::HASH_NONE,
                    name(0),
                    a as *mut _,
                    name(1),
                    b as *mut _,
                    name(2),
                    c as *mut _,
                    end,
                ),
                n => {
                    return Err(format!(
                        "ERR ratelock module: {n} hash fields asked for at once (1 to 3)"
                    ))
                }
            }
        };
        if status != api::OK {
            return Err(WRONGTYPE.into());
        }
        Ok(std::array::from_fn(|i| {
            let value = out[i];
            (!value.is_null()).then(|| {
                let mut len = 0usize;
                // SAFETY: a string HashGet returned, alive until the command returns.
                unsafe {
                    let ptr = (api().string_ptr_len)(value, &mut len);
                    std::slice::from_raw_parts(ptr.cast::<u8>(), len)
                }
            })
        }))
    }

    /// Walks the members of a sorted-set key scored from `min` to `max` (both included), lowest score
    /// first and, within a score, in member order, as `ZRANGEBYSCORE key min max WITHSCORES` lists
    /// them; `each` gets a member's bytes and its score. Nothing is walked when there is no key.
    fn zset_scored(
        &self,
        min: f64,
        max: f64,
        mut each: impl FnMut(&[u8], f64) -> Result<(), String>,
    ) -> Result<(), String> {
        match self.kind() {
            api::KEYTYPE_EMPTY => return Ok(()),
            api::KEYTYPE_ZSET => {}
            _ => return Err(WRONGTYPE.into()),
        }
        let api = api();
        // SAFETY: an open sorted-set key; the walk is stopped before returning, and each member
        // string is freed once `each` has seen it (the slice does not outlive the call).
        unsafe {
            if (api.zset_first_in_score_range)(self.open_key(), min, max, 0, 0) != api::OK {
                return Err(WRONGTYPE.into());
            }
            let mut result = Ok(());
            while result.is_ok() && (api.zset_range_end_reached)(self.open_key()) == 0 {
                let mut score = 0f64;
                let member = (api.zset_range_current_element)(self.open_key(), &mut score);
                if member.is_null() {
                    break;
                }
                let mut len = 0usize;
                let ptr = (api.string_ptr_len)(member, &mut len);
                result = each(std::slice::from_raw_parts(ptr.cast::<u8>(), len), score);
                (api.free_string)(self.context().raw(), member);
                if (api.zset_range_next)(self.open_key()) == 0 {
                    break;
                }
            }
            (api.zset_range_stop)(self.open_key());
            result
        }
    }

    /// [`ReadKey::zset_scored`] over every member, as `ZRANGE key 0 -1 WITHSCORES` lists them.
    fn zset_all(&self, each: impl FnMut(&[u8], f64) -> Result<(), String>) -> Result<(), String> {
        self.zset_scored(f64::NEG_INFINITY, f64::INFINITY, each)
    }

    /// The key's time to live in ms, as `PTTL` gives it: -1 when it has no expiry, -2 when there is
    /// no key.
    fn pttl(&self) -> i64 {
        if self.open_key().is_null() {
            return -2;
        }
        // SAFETY: an open key.
        match unsafe { (api().get_expire)(self.open_key()) } {
            api::NO_EXPIRE => -1,
            ms => ms.max(0),
        }
    }
}

impl Drop for ReadKey<'_> {
    fn drop(&mut self) {
        if !self.key.is_null() {
            // SAFETY: a key this wrapper opened and has not closed.
            unsafe { (api().close_key)(self.key) }
        }
    }
}
