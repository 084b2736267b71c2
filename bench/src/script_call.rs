//! The EVALSHA call ratelock's Redis store sends for one `hit` of one key, rebuilt from the public
//! API (key layout and rule parts, as documented in limit.lua) so redis-benchmark can send the same.

use ratelock::{Algorithm, Rule};

/// The script the Redis store runs for `hit` and `peek` (in its call-tag envelope, as the store sends it).
pub static LIMIT_SCRIPT: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| ratelock::store::tagged_script(include_str!("../../core/lua/limit.lua")));

/// The call tag the benchmark's calls carry (the store sends a fresh one per call; the server's work is
/// the same).
pub const BENCH_TAG: &str = "1";

/// KEYS and ARGV of one `hit` with cost 1, the server's clock (`now` = "") and one rule.
pub struct ScriptCall {
    pub key: String,
    pub argv: Vec<String>,
}

impl ScriptCall {
    pub fn hit(prefix: &str, user_key: &str, rule: &Rule) -> Self {
        let key = ratelock::key::storage_key(prefix, user_key.as_bytes(), rule);
        let argv = vec![
            "hit".to_owned(),
            String::new(),
            "1".to_owned(),
            Algorithm::code(rule.algorithm()).to_owned(),
            rule.limit().to_string(),
            rule.period().as_micros().to_string(),
            rule.burst().to_string(),
            BENCH_TAG.to_owned(),
        ];
        ScriptCall {
            key: String::from_utf8(key).expect("the bench key and rule id are ASCII"),
            argv,
        }
    }

    /// Everything after the word EVALSHA: `<sha> 1 <key> <argv...>`.
    pub fn evalsha_args(&self, sha: &str) -> Vec<String> {
        let mut args = vec![sha.to_owned(), "1".to_owned(), self.key.clone()];
        args.extend(self.argv.iter().cloned());
        args
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
