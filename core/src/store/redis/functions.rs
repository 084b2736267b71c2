//! The scripts as one Redis Functions library (Redis ≥ 7): loaded once with `FUNCTION LOAD`, called
//! with `FCALL`. A library persists and replicates with the data, so a failover to a replica or a
//! restart that kept its data never meets NOSCRIPT; servers without Functions (or an ACL that denies
//! them) keep EVALSHA.
//!
//! Each function is a script's tagged body (the same text EVALSHA runs) as the callback's body, with
//! its parameters named `KEYS` and `ARGV`, so the script's code cannot tell the two apart. Names carry
//! a hash of the code: two client versions during a rolling deploy each find their own functions, and
//! neither replaces the other's library.

use std::sync::LazyLock;

use redis::Cmd;

use super::script::ALL;

/// The library: its name and its code.
pub(crate) struct Library {
    pub(crate) name: String,
    pub(crate) code: String,
}

/// The one library holding every script (the hash of all their code in its name).
pub(crate) static LIBRARY: LazyLock<Library> = LazyLock::new(|| {
    let mut hashed = String::new();
    for script in ALL {
        hashed.push_str(&script.sha);
    }
    let name = format!("ratelock_{}", &redis::Script::new(&hashed).get_hash()[..12]);
    let mut code = format!("#!lua name={name}\n");
    for script in ALL {
        code.push_str(&format!(
            "redis.register_function('{}', function(KEYS, ARGV)\n{}\nend)\n",
            script.function, script.body
        ));
    }
    Library { name, code }
});

/// The function library the Redis store loads, for tools that send the same calls (benchmarks): its
/// name, its code (what `FUNCTION LOAD` takes) and the name of `limit.lua`'s function in it (what
/// `FCALL` takes, before the same arguments as EVALSHA's after the SHA1).
///
/// ```
/// let library = ratelock::store::function_library();
/// assert!(library.code.starts_with("#!lua name=ratelock_"));
/// assert!(library.code.contains(library.limit_function));
/// ```
pub fn function_library() -> FunctionLibrary {
    FunctionLibrary {
        name: &LIBRARY.name,
        code: &LIBRARY.code,
        limit_function: &super::script::LIMIT.function,
    }
}

/// See [`function_library`].
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct FunctionLibrary {
    /// The library's name, `ratelock_<hash of its code>`.
    pub name: &'static str,
    /// Its code, for `FUNCTION LOAD`.
    pub code: &'static str,
    /// The function that runs `limit.lua`.
    pub limit_function: &'static str,
}

/// `FUNCTION LIST LIBRARYNAME <name>`: whether the library is there (an empty list when not).
pub(crate) fn list_command() -> Cmd {
    let mut cmd = redis::cmd("FUNCTION");
    cmd.arg("LIST").arg("LIBRARYNAME").arg(&LIBRARY.name);
    cmd
}

/// `FUNCTION LOAD <code>` (no REPLACE: a library of this name already holds this very code).
pub(crate) fn load_command() -> Cmd {
    let mut cmd = redis::cmd("FUNCTION");
    cmd.arg("LOAD").arg(&LIBRARY.code);
    cmd
}

/// Whether the library's name is in `FUNCTION LIST`'s reply.
pub(crate) fn is_listed(reply: &redis::Value) -> bool {
    matches!(reply, redis::Value::Array(libraries) if !libraries.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_names_itself_and_registers_every_script() {
        assert!(LIBRARY
            .code
            .starts_with(&format!("#!lua name={}\n", LIBRARY.name)));
        for script in ALL {
            assert!(LIBRARY.code.contains(&format!("'{}'", script.function)));
        }
        assert!(LIBRARY.name.starts_with("ratelock_"));
    }
}
