//! The EVALSHA call ratelock's Redis store sends for one `hit` of one key, rebuilt from the public
//! API (key layout, rule parts, the key's entry and override, as documented in limit.lua) so redis-benchmark can
//! send the same.

use ratelock::Rule;

/// The script the Redis store runs for `hit` and `peek` (in its call-tag envelope, as the store sends it).
pub static LIMIT_SCRIPT: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| ratelock::store::tagged_script(include_str!("../../core/lua/limit.lua")));

/// The call tag the benchmark's calls carry (the store sends a fresh one per call; the server's work is
/// the same).
pub const BENCH_TAG: &str = "1";

/// KEYS and ARGV of one `hit` with cost 1, the server's clock (`now` = "") and one or more rules; the
/// call tag is the last ARGV.
pub struct ScriptCall {
    pub keys: Vec<String>,
    pub argv: Vec<String>,
}

impl ScriptCall {
    /// One rule.
    pub fn hit(prefix: &str, user_key: &str, rule: &Rule) -> Self {
        ScriptCall::hit_all(prefix, user_key, [rule])
    }

    /// Every rule of `rules`, checked together.
    pub fn hit_all<'a>(prefix: &str, user_key: &str, rules: impl IntoIterator<Item = &'a Rule>) -> Self {
        let (mut keys, mut argv) = (Vec::new(), vec!["hit".to_owned(), String::new(), "1".to_owned()]);
        for rule in rules {
            let key = ratelock::key::storage_key(prefix, user_key.as_bytes(), rule);
            keys.push(String::from_utf8(key).expect("the bench key and rule id are ASCII"));
            let (code, period) = rule.wire_code_and_period();
            argv.push(code.to_owned());
            argv.push(rule.limit().to_string());
            argv.push(period.to_string());
            argv.push(rule.burst().to_string());
            argv.push(rule.block().map_or(0, |block| block.as_micros()).to_string());
        }
        // The key's ban or list entry, then its override (limit.lua's KEYS[n+1] and KEYS[n+2]).
        for suffix in [
            ratelock::algorithm::standing::KEY_SUFFIX,
            ratelock::algorithm::overrides::KEY_SUFFIX,
        ] {
            let mut key = Vec::new();
            ratelock::key::write_base(&mut key, prefix, user_key.as_bytes());
            key.extend_from_slice(suffix);
            keys.push(String::from_utf8(key).expect("the bench key is ASCII"));
        }
        argv.push(BENCH_TAG.to_owned());
        ScriptCall { keys, argv }
    }

    /// The storage key of the first rule.
    pub fn key(&self) -> &str {
        &self.keys[0]
    }

    /// Everything after the word EVALSHA: `<sha> <numkeys> <keys...> <argv...>`.
    pub fn evalsha_args(&self, sha: &str) -> Vec<String> {
        let mut args = vec![sha.to_owned(), self.keys.len().to_string()];
        args.extend(self.keys.iter().cloned());
        args.extend(self.argv.iter().cloned());
        args
    }

    /// The same call to the module: `RATELOCK.LIMIT <numkeys> <keys...> <argv...>`, without the tag.
    pub fn module_command(&self) -> Vec<String> {
        let mut command = vec!["RATELOCK.LIMIT".to_owned(), self.keys.len().to_string()];
        command.extend(self.keys.iter().cloned());
        command.extend(self.argv[..self.argv.len() - 1].iter().cloned());
        command
    }

    /// The call as one line, the empty argument shown as `''`.
    pub fn display(&self, sha: &str) -> String {
        let words: Vec<String> = self
            .evalsha_args(sha)
            .into_iter()
            .map(|word| if word.is_empty() { "''".to_owned() } else { word })
            .collect();
        format!("EVALSHA {}", words.join(" "))
    }
}
