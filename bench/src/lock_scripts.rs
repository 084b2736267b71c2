//! The two EVALSHA calls ratelock's Redis store sends for one lock acquire and one release, rebuilt
//! from the lock scripts' headers (KEYS/ARGV) so redis-benchmark can send the same calls.

use ratelock::key::LockKeys;

use std::sync::LazyLock;

use crate::script_call::BENCH_TAG;

/// `lock_acquire.lua`: KEYS lease, fence; ARGV owner, ttl in µs, re-entrant "1"/"0", now ("" = TIME),
/// then the call tag (the store's envelope, as sent).
pub static ACQUIRE_SCRIPT: LazyLock<String> =
    LazyLock::new(|| ratelock::store::tagged_script(include_str!("../../core/lua/lock_acquire.lua")));
/// `lock_release.lua`: KEYS lease; ARGV owner, channel, the grant's fencing token, then the call tag.
pub static RELEASE_SCRIPT: LazyLock<String> =
    LazyLock::new(|| ratelock::store::tagged_script(include_str!("../../core/lua/lock_release.lua")));

/// The words after `EVALSHA` of one script call: `<sha> <numkeys> <keys...> <argv...>`.
pub struct ScriptWords {
    pub sha: String,
    pub keys: Vec<String>,
    pub argv: Vec<String>,
}

impl ScriptWords {
    /// `EVALSHA` and everything after it, as redis-benchmark's command words.
    pub fn command(&self) -> Vec<String> {
        let mut words = vec![
            "EVALSHA".to_owned(),
            self.sha.clone(),
            self.keys.len().to_string(),
        ];
        words.extend(self.keys.iter().cloned());
        words.extend(self.argv.iter().cloned());
        words
    }

    /// The call as one line, an empty argument shown as `''`.
    pub fn display(&self) -> String {
        let words: Vec<String> = self
            .command()
            .into_iter()
            .map(|word| if word.is_empty() { "''".to_owned() } else { word })
            .collect();
        words.join(" ")
    }
}

/// A non-re-entrant acquire of the lease `lease` (fencing counter `fence`) for `owner`, server clock.
pub fn acquire(sha: &str, lease: &str, fence: &str, owner: &str, ttl_us: u128) -> ScriptWords {
    ScriptWords {
        sha: sha.to_owned(),
        keys: vec![lease.to_owned(), fence.to_owned()],
        argv: vec![
            owner.to_owned(),
            ttl_us.to_string(),
            "0".to_owned(),
            String::new(),
            BENCH_TAG.to_owned(),
        ],
    }
}

/// A release of `lease` by grant (`owner`, `fence`), telling `channel`.
pub fn release(sha: &str, lease: &str, owner: &str, channel: &str, fence: i64) -> ScriptWords {
    ScriptWords {
        sha: sha.to_owned(),
        keys: vec![lease.to_owned()],
        argv: vec![
            owner.to_owned(),
            channel.to_owned(),
            fence.to_string(),
            BENCH_TAG.to_owned(),
        ],
    }
}

/// The lease key, fence key and channel of lock `name` under prefix `rl`, as text.
pub fn keys_of(name: &str) -> [String; 3] {
    let keys = LockKeys::new("rl", name.as_bytes());
    [keys.lease, keys.fence, keys.channel]
        .map(|key| String::from_utf8(key).expect("the bench lock names are ASCII"))
}
