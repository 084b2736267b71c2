//! Native values JavaScript holds between calls (a memory checker, a wire codec, prepared rules), as
//! external values this addon makes itself and reads back with one look into a registry of this
//! thread's live values. napi-rs's `&External<T>` argument costs more: a type check in a global
//! registry hashed with SipHash, then a borrow registered in a global map behind a mutex and released
//! after the call. Measured with callgrind, a memory-store check (two such arguments) took 5.02k
//! instructions with them and 4.60k with handles.
//!
//! Safety rests on three facts: a pointer is read back only if this thread's registry holds it (so it
//! is a live value made here, never a foreign external's data); every value starts with its type's id
//! (`#[repr(C)]`), checked before the value is used; and a handle lives for one synchronous call on the
//! JavaScript thread, during which no JavaScript runs and so the external cannot be collected.

use std::any::TypeId;
use std::cell::RefCell;
use std::collections::HashSet;
use std::ffi::c_void;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::{Deref, DerefMut};
use std::ptr::{self, NonNull};
use std::sync::Arc;

use napi::bindgen_prelude::{FromNapiValue, ToNapiValue};
use napi::sys;

use crate::errors::{bug, invalid_argument, made_here};

/// What an external value points to: the value, after its type's id.
#[repr(C)]
struct Slot<T> {
    kind: TypeId,
    value: T,
}

/// Hashes a value's address: a multiply that spreads the bits, high into low (addresses share their
/// low, aligned bits).
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_usize(&mut self, address: usize) {
        self.0 = (address as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

thread_local! {
    /// The addresses of the slots made on this thread and not yet finalized.
    static LIVE: RefCell<HashSet<usize, BuildHasherDefault<AddressHasher>>> =
        RefCell::new(HashSet::default());
}

/// A value handed to JavaScript as an external value (what a function returns, or a field of a
/// returned object). Read it back in a later call as a [`Handle`].
pub struct Handed<T: 'static>(pub T);

impl<T: 'static> ToNapiValue for Handed<T> {
    unsafe fn to_napi_value(env: sys::napi_env, handed: Self) -> napi::Result<sys::napi_value> {
        let slot = Box::into_raw(Box::new(Slot {
            kind: TypeId::of::<T>(),
            value: handed.0,
        }));
        let mut external = ptr::null_mut();
        // SAFETY: `env` is the one napi-rs converts this return value in; `slot` is ours until the
        // finalizer takes it back.
        let status = unsafe {
            sys::napi_create_external(
                env,
                slot.cast(),
                Some(finalize::<T>),
                ptr::null_mut(),
                &mut external,
            )
        };
        if status != sys::Status::napi_ok {
            // SAFETY: the external was not made, so nothing else holds `slot`.
            drop(unsafe { Box::from_raw(slot) });
            return Err(made_here(env, bug("napi_create_external failed")));
        }
        LIVE.with(|live| live.borrow_mut().insert(slot as usize));
        Ok(external)
    }
}

/// Drops a slot once its external value is collected.
unsafe extern "C" fn finalize<T: 'static>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // At the thread's very end the registry may be gone already: the slot is dropped all the same.
    let _ = LIVE.try_with(|live| live.borrow_mut().remove(&(data as usize)));
    // SAFETY: `data` is the slot `Handed::to_napi_value` leaked for this external, finalized once.
    drop(unsafe { Box::from_raw(data.cast::<Slot<T>>()) });
}

/// An argument that is an external value made by [`Handed`] with a `T`, for one synchronous call (not
/// for `async` functions: JavaScript could collect the value while they wait). A call takes at most
/// one handle of each type, so `&mut` access never aliases.
pub struct Handle<T: 'static>(NonNull<T>);

impl<T: 'static> FromNapiValue for Handle<T> {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
        let mut data = ptr::null_mut();
        // SAFETY: `env` and `value` are the ones napi-rs hands a callback's argument.
        let status = unsafe { sys::napi_get_value_external(env, value, &mut data) };
        let ours = status == sys::Status::napi_ok
            && !data.is_null()
            && LIVE.with(|live| live.borrow().contains(&(data as usize)));
        // SAFETY: a registered address is a live slot made here; every slot starts with its type id.
        if !ours || unsafe { *data.cast::<TypeId>() } != TypeId::of::<T>() {
            let problem = format!("expected the addon's {} value", short_type_name::<T>());
            return Err(made_here(env, invalid_argument("handle", problem)));
        }
        let slot = data.cast::<Slot<T>>();
        // SAFETY: checked above: `slot` is a live `Slot<T>`.
        Ok(Handle(unsafe {
            NonNull::new_unchecked(ptr::addr_of_mut!((*slot).value))
        }))
    }
}

impl<T: 'static> Deref for Handle<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the slot outlives the call this handle lives in (see the module docs).
        unsafe { self.0.as_ref() }
    }
}

impl<T: 'static> DerefMut for Handle<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for `deref`; no other handle to this slot exists in the call.
        unsafe { self.0.as_mut() }
    }
}

/// Prepared rules as an argument of any call, `async` ones included: the core's rules, shared (an
/// `Arc` clone of the handed value, so they outlive an `await`).
pub struct RulesArg(Arc<ratelock::PreparedRules>);

impl FromNapiValue for RulesArg {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
        // SAFETY: as for `Handle`.
        let rules = unsafe { Handle::<Arc<ratelock::PreparedRules>>::from_napi_value(env, value) }?;
        Ok(RulesArg(Arc::clone(&rules)))
    }
}

impl Deref for RulesArg {
    type Target = ratelock::PreparedRules;

    fn deref(&self) -> &ratelock::PreparedRules {
        &self.0
    }
}

/// `T`'s name with each path cut to its last part (`Arc<PreparedRules>`), for an error message.
fn short_type_name<T>() -> String {
    let mut short = String::new();
    let mut word = String::new();
    for c in std::any::type_name::<T>().chars().chain(std::iter::once(' ')) {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
            continue;
        }
        short.push_str(word.rsplit("::").next().unwrap_or(&word));
        word.clear();
        short.push(c);
    }
    short.trim_end().to_owned()
}
