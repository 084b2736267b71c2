//! A call's key read straight from its JavaScript value, for the calls made per request: a string's
//! UTF-8 written into a buffer on the stack (keys are short; a long one is read again into the heap),
//! a Buffer's bytes borrowed where they are. napi-rs's `String` allocates for every key, and an
//! `Either` of two types asks twice what the value is.

use napi::bindgen_prelude::FromNapiValue;
use napi::sys;

use crate::errors::{bug, invalid_argument, made_here, Result};

/// Keys up to this many bytes of UTF-8 stay on the stack.
const INLINE: usize = 256;
/// The most bytes one character takes in UTF-8: a string read into a buffer with less room left than
/// this may have been cut short before its next character.
const MAX_CHAR_BYTES: usize = 4;

/// A key: a string (as UTF-8) or a Buffer's bytes, for the length of one synchronous call.
#[allow(
    clippy::large_enum_variant,
    reason = "a short key on the stack, for one call, is the point"
)]
pub(crate) enum KeyArg {
    /// A short string's UTF-8: the first `.1` bytes.
    Inline([u8; INLINE], usize),
    /// A long string's UTF-8.
    Heap(Vec<u8>),
    /// A Buffer's bytes, where they are: valid while the call runs (no JavaScript runs meanwhile).
    Borrowed(*const u8, usize),
}

impl KeyArg {
    /// The key's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            KeyArg::Inline(bytes, len) => &bytes[..*len],
            KeyArg::Heap(bytes) => bytes,
            // SAFETY: the Buffer outlives the call this value lives in (see `Borrowed`); an empty
            // Buffer may give a null pointer.
            KeyArg::Borrowed(data, len) if *len > 0 => unsafe { std::slice::from_raw_parts(*data, *len) },
            KeyArg::Borrowed(..) => &[],
        }
    }
}

/// A status other than `napi_ok` as an error naming what failed.
fn checked(status: sys::napi_status, what: &str) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(bug(format!("reading the key: {what} failed")))
    }
}

impl FromNapiValue for KeyArg {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
        // SAFETY: as this function's.
        unsafe { KeyArg::read(env, value) }.map_err(|error| made_here(env, error))
    }
}

impl KeyArg {
    /// The key `value` holds.
    ///
    /// # Safety
    /// `env` and `value` must be those napi-rs hands a callback's argument.
    unsafe fn read(env: sys::napi_env, value: sys::napi_value) -> Result<Self> {
        let mut kind = 0;
        // SAFETY (every call below): `env` and `value` are the ones napi-rs hands a callback's argument.
        checked(unsafe { sys::napi_typeof(env, value, &mut kind) }, "napi_typeof")?;
        if kind == sys::ValueType::napi_string {
            let mut inline = [0u8; INLINE];
            let mut len = 0;
            let read = unsafe {
                sys::napi_get_value_string_utf8(env, value, inline.as_mut_ptr().cast(), INLINE, &mut len)
            };
            checked(read, "napi_get_value_string_utf8")?;
            if len + 1 + MAX_CHAR_BYTES <= INLINE {
                return Ok(KeyArg::Inline(inline, len));
            }
            // Perhaps cut short: its whole length, then all of it.
            let length =
                unsafe { sys::napi_get_value_string_utf8(env, value, std::ptr::null_mut(), 0, &mut len) };
            checked(length, "napi_get_value_string_utf8")?;
            let mut heap = vec![0u8; len + 1];
            let read = unsafe {
                sys::napi_get_value_string_utf8(env, value, heap.as_mut_ptr().cast(), len + 1, &mut len)
            };
            checked(read, "napi_get_value_string_utf8")?;
            heap.truncate(len);
            return Ok(KeyArg::Heap(heap));
        }
        let mut is_buffer = false;
        checked(
            unsafe { sys::napi_is_buffer(env, value, &mut is_buffer) },
            "napi_is_buffer",
        )?;
        if !is_buffer {
            return Err(invalid_argument("key", "expected a string or a Buffer"));
        }
        let (mut data, mut len) = (std::ptr::null_mut(), 0);
        checked(
            unsafe { sys::napi_get_buffer_info(env, value, &mut data, &mut len) },
            "napi_get_buffer_info",
        )?;
        Ok(KeyArg::Borrowed(data.cast_const().cast(), len))
    }
}
