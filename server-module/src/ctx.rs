//! One command invocation's context, made safe to use: its arguments as bytes, calls into Redis
//! (`RedisModule_Call`) with their replies as plain values, and the reply it sends back.

use std::cell::{Cell, OnceCell};
use std::ffi::{c_int, CString};

use crate::api::{self, api, CallReply, Ctx, RString};
use crate::shared_strings;

/// A reply of a command called through `RedisModule_Call` (RESP2 shapes: what a Lua script sees).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A nil bulk string or nil array.
    Nil,
    /// An integer reply.
    Int(i64),
    /// A bulk or simple string.
    Bytes(Vec<u8>),
    /// An array.
    Array(Vec<Value>),
}

/// Whether a write is propagated to replicas and the AOF (`!` in the call's format), as the effect
/// itself rather than the module command that caused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// A read: nothing to propagate.
    Read,
    /// A write: propagated as this exact command.
    Replicated,
}

/// The context of one command call. Redis frees its strings and call replies (auto memory).
pub struct Context {
    ctx: *mut Ctx,
    /// The call's argument strings, once [`Context::args`] has read them.
    argv: Cell<*mut *mut RString>,
    /// Their bytes (valid while the call runs: Redis keeps the arguments until the command returns).
    args: OnceCell<Vec<&'static [u8]>>,
}

impl Context {
    /// Wraps the context of a command call and turns on auto memory for it.
    ///
    /// # Safety
    /// `ctx` must be the live context of the command call being served.
    pub unsafe fn new(ctx: *mut Ctx) -> Context {
        (api().auto_memory)(ctx);
        Context {
            ctx,
            argv: Cell::new(std::ptr::null_mut()),
            args: OnceCell::new(),
        }
    }

    /// The raw context, for the key API wrappers (`key_read`). Valid while this `Context` is.
    pub fn raw(&self) -> *mut Ctx {
        self.ctx
    }

    /// The command's arguments (the command name first) as byte slices, read once.
    ///
    /// # Safety
    /// `argv` and `argc` must be the ones Redis passed with this context.
    pub unsafe fn args(&self, argv: *mut *mut RString, argc: c_int) -> &[&[u8]] {
        self.args.get_or_init(|| {
            self.argv.set(argv);
            (0..argc.max(0) as usize)
                .map(|i| {
                    let mut len = 0usize;
                    let ptr = (api().string_ptr_len)(*argv.add(i), &mut len);
                    // The arguments outlive every use: they are Redis's until the command returns,
                    // and this context does not outlive the command.
                    std::slice::from_raw_parts::<'static, u8>(ptr.cast::<u8>(), len)
                })
                .collect()
        })
    }

    /// A Redis string of `bytes` for the key API or a propagated command, allocating only when it must:
    /// a string shared since load for a field name or replicated word (`shared_strings`), the call's
    /// own argument string when `bytes` is one of the call's arguments (a key name), else a new one
    /// (freed by auto memory when the command returns).
    pub fn string_of(&self, bytes: &[u8]) -> *mut RString {
        if let Some(shared) = shared_strings::shared(bytes) {
            return shared;
        }
        if let Some(i) = self.args.get().and_then(|args| {
            args.iter()
                .position(|arg| arg.as_ptr() == bytes.as_ptr() && arg.len() == bytes.len())
        }) {
            // SAFETY: argument `i` of this call, alive until the command returns.
            return unsafe { *self.argv.get().add(i) };
        }
        // SAFETY: a live context; the bytes are copied.
        unsafe { (api().create_string)(self.ctx, bytes.as_ptr().cast(), bytes.len()) }
    }

    /// Runs `command args...` inside Redis. An error reply (e.g. WRONGTYPE) comes back as `Err`.
    pub fn call(&self, effect: Effect, command: &str, args: &[&[u8]]) -> Result<Value, String> {
        let api = api();
        let name =
            CString::new(command).map_err(|_| format!("ERR ratelock module: bad command name {command}"))?;
        let format = match effect {
            Effect::Read => c"v",
            Effect::Replicated => c"!v",
        };
        let mut argv: Vec<*mut RString> = args
            .iter()
            // SAFETY: the context is live; the bytes are copied into a new Redis string.
            .map(|arg| unsafe { (api.create_string)(self.ctx, arg.as_ptr().cast(), arg.len()) })
            .collect();
        // SAFETY: the `v` format takes an array of RedisModuleString pointers and its length.
        let reply = unsafe {
            (api.call)(
                self.ctx,
                name.as_ptr(),
                format.as_ptr(),
                argv.as_mut_ptr(),
                argv.len(),
            )
        };
        if reply.is_null() {
            let why = std::io::Error::last_os_error();
            return Err(format!(
                "ERR ratelock module: {command} could not be called ({why})"
            ));
        }
        // SAFETY: a non-null reply of this call, kept alive by auto memory until the command returns.
        match unsafe { read_reply(reply) } {
            Ok(value) => Ok(value),
            Err(message) => Err(message),
        }
    }

    /// Refuses, with Redis's own `OOM` error, a call that would grow the data of a server past its
    /// `maxmemory` (after the evictions Redis ran before the command): what a `deny-oom` command gets,
    /// for a command that is `deny-oom` only in some of its operations (an acquire, not a release).
    pub fn refuse_when_full(&self) -> Result<(), String> {
        /// `REDISMODULE_CTX_FLAGS_OOM`: the server is past its `maxmemory`.
        const OUT_OF_MEMORY: c_int = 1 << 10;
        // SAFETY: a live context.
        let flags = unsafe { (api().get_context_flags)(self.ctx) };
        if flags & OUT_OF_MEMORY != 0 {
            return Err("OOM command not allowed when used memory > 'maxmemory'.".into());
        }
        Ok(())
    }

    /// The server's clock in ms since the Unix epoch (what PXAT and PEXPIREAT compare against).
    pub fn server_ms(&self) -> u64 {
        // SAFETY: a plain clock read.
        unsafe { (api().milliseconds)() }.max(0) as u64
    }

    /// Replies with `value`, in the shape a Lua script's return value takes (a Lua script's `false` is
    /// `Nil`, its numbers `Int`).
    pub fn reply_value(&self, value: &Value) -> c_int {
        let api = api();
        // SAFETY: the context is live; an array header is followed by exactly that many elements.
        unsafe {
            match value {
                Value::Nil => (api.reply_with_null)(self.ctx),
                Value::Int(n) => (api.reply_with_long_long)(self.ctx, *n),
                Value::Bytes(bytes) => {
                    (api.reply_with_string_buffer)(self.ctx, bytes.as_ptr().cast(), bytes.len())
                }
                Value::Array(items) => {
                    (api.reply_with_array)(self.ctx, items.len() as std::ffi::c_long);
                    items.iter().for_each(|item| {
                        self.reply_value(item);
                    });
                    api::OK
                }
            }
        }
    }

    /// Replies with `value` as a tagged call gets it (the scripts' call-tag envelope): an array with
    /// `tag` appended, anything else as `[tag, value]`. Nothing is copied.
    pub fn reply_tagged(&self, value: &Value, tag: &[u8]) -> c_int {
        let api = api();
        // SAFETY: the context is live; an array header is followed by exactly that many elements.
        unsafe {
            match value {
                Value::Array(items) => {
                    (api.reply_with_array)(self.ctx, (items.len() + 1) as std::ffi::c_long);
                    items.iter().for_each(|item| {
                        self.reply_value(item);
                    });
                }
                other => {
                    (api.reply_with_array)(self.ctx, 2);
                    (api.reply_with_string_buffer)(self.ctx, tag.as_ptr().cast(), tag.len());
                    return self.reply_value(other);
                }
            }
            (api.reply_with_string_buffer)(self.ctx, tag.as_ptr().cast(), tag.len())
        }
    }

    /// Replies with an error; `message` starts with its code (`ERR ...`). Never fails: a message with
    /// a NUL byte is cut there.
    pub fn reply_error(&self, message: &str) -> c_int {
        let clean: String = message
            .chars()
            .take_while(|&c| c != '\0' && c != '\r' && c != '\n')
            .collect();
        let text = CString::new(clean).unwrap_or_default();
        // SAFETY: the context is live and the text NUL-terminated.
        unsafe { (api().reply_with_error)(self.ctx, text.as_ptr()) }
    }

    /// Replies "wrong number of arguments".
    pub fn wrong_arity(&self) -> c_int {
        // SAFETY: the context is live.
        unsafe { (api().wrong_arity)(self.ctx) }
    }

    /// Whether Redis only asks where this call's keys are (`getkeys-api`), rather than running it.
    pub fn is_keys_position_request(&self) -> bool {
        // SAFETY: the context is live.
        unsafe { (api().is_keys_position_request)(self.ctx) != 0 }
    }

    /// Answers a key-position request: argument `position` is a key.
    pub fn key_at(&self, position: usize) {
        // SAFETY: the context is live and asks for key positions.
        unsafe { (api().key_at_pos)(self.ctx, position as c_int) }
    }
}

/// Turns a call reply into a [`Value`], or its error text.
///
/// # Safety
/// `reply` must be a live call reply.
unsafe fn read_reply(reply: *mut CallReply) -> Result<Value, String> {
    let api = api();
    let bytes = |reply: *mut CallReply| {
        let mut len = 0usize;
        let ptr = (api.call_reply_string_ptr)(reply, &mut len);
        if ptr.is_null() {
            Vec::new()
        } else {
            std::slice::from_raw_parts(ptr.cast::<u8>(), len).to_vec()
        }
    };
    match (api.call_reply_type)(reply) {
        api::REPLY_NULL => Ok(Value::Nil),
        api::REPLY_INTEGER => Ok(Value::Int((api.call_reply_integer)(reply))),
        api::REPLY_STRING => Ok(Value::Bytes(bytes(reply))),
        api::REPLY_ERROR => Err(String::from_utf8_lossy(&bytes(reply)).into_owned()),
        api::REPLY_ARRAY => {
            let len = (api.call_reply_length)(reply);
            let mut items = Vec::with_capacity(len);
            for i in 0..len {
                items.push(read_reply((api.call_reply_array_element)(reply, i))?);
            }
            Ok(Value::Array(items))
        }
        other => Err(format!("ERR ratelock module: unexpected reply type {other}")),
    }
}
