//! The scripts as one Redis Functions library (Redis ≥ 7): loaded once with `FUNCTION LOAD`, called
//! with `FCALL`. A library persists and replicates with the data, so a failover to a replica or a
//! restart that kept its data never meets NOSCRIPT; servers without Functions (or an ACL that denies
//! them) keep EVALSHA.
//!
//! The library is lean: what every call would otherwise build again is built once, when the library
//! loads. The prelude (`now_us`, `stored`, `int`, `mint_fence`) and each script's definitions (the
//! part between `-- ratelock: definitions` and `-- ratelock: end of definitions`: functions and
//! constant tables that use nothing of the call) run at load; each function then runs the rest of its
//! script, the very text EVALSHA runs, with its parameters named `KEYS` and `ARGV`, inside the same
//! call-tag envelope. The library's name and every function's name carry a hash of the library's
//! whole code: two client versions during a rolling deploy each load their own library, side by side,
//! even when most scripts are the same in both. A function name already held by another library
//! leaves ours unloaded: the calls then go by EVALSHA, with a warning ("…; using the Lua scripts").

use std::sync::LazyLock;

use redis::Cmd;

use super::script::{LuaScript, ALL, FENCE, PRELUDE, REPLY_WITH_TAG};

/// The library: its name, its code, and the hash of that code its names carry.
pub(crate) struct Library {
    pub(crate) name: String,
    pub(crate) code: String,
    code_hash: String,
}

/// Where the code's hash goes in the library's names while the code is written (it is hashed with this
/// in place, then put in).
const HASH_PLACE: &str = "@code@";

/// The one library holding every script. Its name and every function's name carry a hash of the
/// library's whole code, so a build that changed any script (or the envelope) renames every function:
/// two client versions during a rolling deploy each load their own library and neither finds a name
/// of its own already taken by the other's.
pub(crate) static LIBRARY: LazyLock<Library> =
    LazyLock::new(|| build(ALL.iter().map(|script| (script.name, script.source))));

/// The scripts that only give memory back (a release, a lease's new end, all by DEL, ZREM, PUBLISH,
/// PEXPIRE or a lower count): registered `allow-oom`, they run while the server is out of memory, as
/// their EVALSHA form and the module's commands do, so a full server can still free its locks. (A
/// function without flags is refused then, and a refused release left a lock taken until its lease
/// ran out.)
const FREEING: [&str; 6] = [
    "lock_release",
    "lock_extend",
    "lock_force_release",
    "semaphore_release",
    "fair_lock_freeing",
    "rw_lock_freeing",
];

/// The library of `scripts` (each a name and its source). A source given twice (a script registered a
/// second time under another name and flags) is written once; both functions call it.
fn build<'s>(scripts: impl Iterator<Item = (&'s str, &'s str)>) -> Library {
    let mut code = format!("#!lua name=ratelock_{HASH_PLACE}\n{PRELUDE}\n{FENCE}\n");
    let mut written: Vec<&str> = Vec::new();
    for (name, source) in scripts {
        let flags = if FREEING.contains(&name) {
            "'allow-oom'"
        } else {
            ""
        };
        let index = match written.iter().position(|earlier| *earlier == source) {
            Some(index) => index,
            None => {
                let (definitions, body) = split_definitions(source);
                code.push_str(&definitions);
                code.push_str(&format!(
                    "local function script_{}(KEYS, ARGV)\n{body}\nend\n",
                    written.len()
                ));
                written.push(source);
                written.len() - 1
            }
        };
        code.push_str(&format!(
            "redis.register_function{{function_name = 'ratelock_{name}_{HASH_PLACE}', flags = {{{flags}}}, \
             callback = function(KEYS, ARGV)\n\
             local ratelock_call_tag = table.remove(ARGV)\n\
             local ratelock_reply = script_{index}(KEYS, ARGV)\n\
             {REPLY_WITH_TAG}\
             end}}\n"
        ));
    }
    let code_hash = redis::Script::new(&code).get_hash().to_owned();
    let code = code
        .replacen(HASH_PLACE, &code_hash[..12], 1)
        .replace(HASH_PLACE, &code_hash[..8]);
    Library {
        name: format!("ratelock_{}", &code_hash[..12]),
        code,
        code_hash,
    }
}

impl LuaScript {
    /// Its function's name in the library: `ratelock_<name>_<first 8 of the hash of the library's
    /// whole code>`, so that two builds whose code differs in any script share no function name and
    /// their libraries load side by side. (The library names it: a script alone cannot know it.)
    pub(crate) fn function(&self) -> &str {
        self.function
            .get_or_init(|| format!("ratelock_{}_{}", self.name, &LIBRARY.code_hash[..8]))
    }
}

/// The line that opens a script's definitions, and the one that closes them.
const DEFINITIONS: &str = "-- ratelock: definitions";
const END_OF_DEFINITIONS: &str = "-- ratelock: end of definitions";

/// A script's definitions (run once, at load), and the rest of its text (run on every call): the whole
/// text when it has none. A script may have several blocks of definitions; they keep their order.
fn split_definitions(source: &str) -> (String, String) {
    let mut definitions = String::new();
    let mut rest = String::new();
    let mut remaining = source;
    while let Some(start) = remaining.find(DEFINITIONS) {
        let end = remaining[start..]
            .find(END_OF_DEFINITIONS)
            .map(|at| start + at)
            .expect("a script's definitions end with the line that says so");
        let after = end
            + remaining[end..]
                .find('\n')
                .map_or(remaining.len() - end, |at| at + 1);
        rest.push_str(&remaining[..start]);
        definitions.push_str(&remaining[start..end]);
        remaining = &remaining[after..];
    }
    rest.push_str(remaining);
    (definitions, rest)
}

/// The function library the Redis store loads, for tools that send the same calls (benchmarks): its
/// name, its code (what `FUNCTION LOAD` takes) and the names of `limit.lua`'s, `lock_acquire.lua`'s and
/// `lock_release.lua`'s functions in it (what `FCALL` takes, before the same arguments as EVALSHA's
/// after the SHA1).
///
/// ```
/// let library = ratelock::store::function_library();
/// assert!(library.code.starts_with("#!lua name=ratelock_"));
/// assert!(library.code.contains(library.limit_function));
/// assert!(library.code.contains(library.lock_release_function));
/// ```
pub fn function_library() -> FunctionLibrary {
    FunctionLibrary {
        name: &LIBRARY.name,
        code: &LIBRARY.code,
        limit_function: super::script::LIMIT.function(),
        lock_acquire_function: super::script::LOCK_ACQUIRE.function(),
        lock_release_function: super::script::LOCK_RELEASE.function(),
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
    /// The function that runs `lock_acquire.lua`.
    pub lock_acquire_function: &'static str,
    /// The function that runs `lock_release.lua`.
    pub lock_release_function: &'static str,
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
            assert!(LIBRARY.code.contains(&format!("'{}'", script.function())));
        }
        assert!(LIBRARY.name.starts_with("ratelock_"));
    }

    #[test]
    fn a_change_to_any_script_renames_every_function() {
        for script in ALL {
            assert!(script
                .function()
                .ends_with(&format!("_{}", &LIBRARY.code_hash[..8])));
        }
        assert_eq!(LIBRARY.name, format!("ratelock_{}", &LIBRARY.code_hash[..12]));
        // Another build whose limit.lua differs by a comment: not one function name in common, so the
        // two libraries load side by side.
        let other = build(ALL.iter().map(|script| {
            let source = if script.name == "limit" {
                "-- another build\nreturn 1"
            } else {
                script.source
            };
            (script.name, source)
        }));
        let names = |code: &str| -> Vec<String> {
            code.lines()
                .filter_map(|line| line.strip_prefix("redis.register_function{function_name = '"))
                .map(|rest| rest.split('\'').next().unwrap_or_default().to_owned())
                .collect()
        };
        let (ours, theirs) = (names(&LIBRARY.code), names(&other.code));
        assert_eq!(ours.len(), ALL.len());
        assert!(
            ours.iter().all(|name| !theirs.contains(name)),
            "{ours:?} {theirs:?}"
        );
        assert_ne!(LIBRARY.name, other.name);
    }

    #[test]
    fn helpers_are_defined_once_at_load_not_in_every_call() {
        // Before the first script's function: at the library's top level.
        let first_function = LIBRARY.code.find("local function script_").unwrap();
        for helper in [
            "local function now_us(",
            "local function mint_fence(",
            "local function idiv(",
            "local function rule_token(",
            "local rules_by_code = {",
        ] {
            let at = LIBRARY
                .code
                .find(helper)
                .unwrap_or_else(|| panic!("{helper} is in the library"));
            assert!(at < first_function, "{helper} is defined at load");
            assert_eq!(LIBRARY.code.matches(helper).count(), 1, "{helper} once");
        }
        // What runs on every call is the rest of the script: its fast path and its general path.
        let (definitions, rest) = split_definitions(super::super::script::LIMIT.source);
        assert!(definitions.contains("local function rule_gcra("));
        assert!(rest.contains("local mode = ARGV[1]") && !rest.contains("local function idiv("));
        assert_eq!(
            split_definitions("return 1"),
            (String::new(), "return 1".to_owned())
        );
        // Several blocks: each is taken out, in order, and the text around them is kept.
        let two = format!(
            "a\n{DEFINITIONS}\nlocal x = 1\n{END_OF_DEFINITIONS}\nb\n{DEFINITIONS}\nlocal y = 2\n\
             {END_OF_DEFINITIONS}\nc\n"
        );
        let (definitions, rest) = split_definitions(&two);
        assert_eq!(rest, "a\nb\nc\n");
        assert!(definitions.find("local x").unwrap() < definitions.find("local y").unwrap());
    }
}
