//! The Lua scripts compiled into the crate (from `core/lua/`, which `lua/` at the top links to),
//! each with its SHA1 computed once.

use std::sync::LazyLock;

/// A script body and its SHA1, for EVALSHA with a load on NOSCRIPT.
pub(crate) struct LuaScript {
    pub(crate) body: &'static str,
    pub(crate) sha: String,
}

impl LuaScript {
    fn new(body: &'static str) -> Self {
        LuaScript {
            body,
            sha: redis::Script::new(body).get_hash().to_owned(),
        }
    }
}

/// `limit.lua`: hit and peek over all rules of a key.
pub(crate) static LIMIT: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(include_str!("../../lua/limit.lua")));
