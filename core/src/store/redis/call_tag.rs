//! Per-call reply tags. Every script call carries a tag as its last argument and every script reply
//! echoes it (appended to a table reply, else `{tag, reply}`), so a reply that belongs to another
//! call — a connection shared across a fork, a reply read out of order, a proxy that mixed two
//! clients — is a protocol error, never a decision. Tags are unique per process: a counter plus a
//! random salt that a forked child draws anew.

use std::sync::atomic::{AtomicU64, Ordering};

use redis::Value;

use crate::error::{Error, Result};
use crate::process::PerProcess;

static COUNTER: AtomicU64 = AtomicU64::new(1);
static SALT: PerProcess<u64> = PerProcess::new();

/// One call's tag: a number below 2^53, sent to the script as decimal text and expected back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallTag(u64);

impl CallTag {
    /// A tag no other call of this process (or of a parent or child process) has.
    pub fn next() -> Self {
        let salt = *SALT.get_or_init(random_salt);
        let count = COUNTER.fetch_add(1, Ordering::Relaxed);
        // Below 2^53, so that even a script that treated it as a number would keep it exact.
        CallTag(salt.wrapping_add(count) & ((1 << 53) - 1))
    }

    /// Appends a fresh tag to `cmd` (a script call) as its last argument, and returns it.
    pub(crate) fn attach(cmd: &mut redis::Cmd) -> Self {
        let tag = Self::next();
        tag.append(cmd);
        tag
    }

    /// Appends this tag to `cmd` (a script call) as its last argument.
    pub(crate) fn append(&self, cmd: &mut redis::Cmd) {
        cmd.arg(self.0);
    }

    /// The tag a packed command carries as its last argument (what [`Limiter::wire_command`] wrote).
    ///
    /// [`Limiter::wire_command`]: crate::Limiter::wire_command
    pub fn of_command(command: &[u8]) -> Result<Self> {
        let bad = || Error::invalid_argument("command", "not a tagged script call's bytes");
        let body = command.strip_suffix(b"\r\n").ok_or_else(bad)?;
        let start = body.iter().rposition(|&b| b == b'\n').ok_or_else(bad)? + 1;
        number(&body[start..]).map(CallTag).ok_or_else(bad)
    }

    /// The tag's number (sent as the script's last argument, in decimal).
    pub(crate) fn number(&self) -> u64 {
        self.0
    }

    /// The reply a tagged script sent back, unwrapped: a table reply with the tag as its last element
    /// (`{a, b, tag}` answers `[a, b]`), any other reply as `{tag, reply}` (the form every reply had
    /// before contract 4, which a previous version's script or module still sends). A missing or
    /// different tag is a protocol error that names both.
    pub(crate) fn open(&self, reply: Value) -> Result<Value> {
        let mut items = match reply {
            Value::Array(items) => items,
            other => {
                return Err(Error::Protocol(format!(
                    "expected a tagged script reply, got {}",
                    excerpt(&other)
                )))
            }
        };
        let ours = |item: Option<&Value>| matches!(item, Some(Value::BulkString(tag)) if number(tag) == Some(self.0));
        // A table reply, the tag appended. (`{tag}` alone is a script that returned nothing: Lua drops a
        // nil from the end of a table, and no ratelock script returns an empty table.)
        if items.len() > 1 && ours(items.last()) {
            items.pop();
            return Ok(Value::Array(items));
        }
        // Any other reply, `{tag, reply}`; a table reply in that form too, from a previous version.
        if items.len() <= 2 && ours(items.first()) {
            return Ok(items.pop().filter(|_| items.len() == 1).unwrap_or(Value::Nil));
        }
        let theirs = [items.last(), items.first()]
            .into_iter()
            .flatten()
            .find(|item| matches!(item, Value::BulkString(tag) if number(tag).is_some()));
        Err(Error::Protocol(match theirs {
            Some(other) => format!(
                "a reply for another call arrived (tag {} instead of {})",
                excerpt(other),
                self.0
            ),
            None => format!(
                "expected a tagged script reply, got {}",
                excerpt(&Value::Array(items))
            ),
        }))
    }
}

/// The decimal digits `text` as a number (`None` for anything else, or an overflow).
fn number(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 20 {
        return None;
    }
    text.iter().try_fold(0u64, |sum, &byte| {
        let digit = byte.is_ascii_digit().then(|| u64::from(byte - b'0'))?;
        sum.checked_mul(10)?.checked_add(digit)
    })
}

/// A short rendering of an unexpected value for an error message.
pub(crate) fn excerpt(value: &Value) -> String {
    crate::excerpt::of(&format!("{value:?}")).into_owned()
}

fn random_salt() -> u64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // No entropy source: the process id and the clock still tell processes apart.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        return nanos ^ (u64::from(std::process::id()) << 32);
    }
    u64::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_differ_and_open_only_their_own_reply() {
        let (first, second) = (CallTag::next(), CallTag::next());
        assert_ne!(first, second);
        let tag = |tag: &CallTag| Value::BulkString(tag.number().to_string().into_bytes());
        let scalar = |of: &CallTag| Value::Array(vec![tag(of), Value::Int(7)]);
        let table = |of: &CallTag| Value::Array(vec![Value::Int(1), Value::Int(2), tag(of)]);
        assert_eq!(first.open(scalar(&first)).unwrap(), Value::Int(7));
        assert_eq!(
            first.open(table(&first)).unwrap(),
            Value::Array(vec![Value::Int(1), Value::Int(2)])
        );
        for crossed in [first.open(scalar(&second)), first.open(table(&second))] {
            let crossed = crossed.unwrap_err();
            assert!(
                crossed.is_protocol() && crossed.to_string().contains("another call"),
                "{crossed}"
            );
        }
        assert!(first.open(Value::Int(7)).unwrap_err().is_protocol());
        assert!(!first.open(Value::Int(7)).unwrap_err().is_store_failure());
        let untagged = first.open(Value::Array(vec![Value::Int(1), Value::Int(2)]));
        assert!(untagged.unwrap_err().is_protocol());
    }

    #[test]
    fn a_reply_in_the_previous_form_still_opens() {
        // A previous version's script or module (contract 3) nests a table reply: `{tag, {a, b}}`.
        let ours = CallTag::next();
        let tag = Value::BulkString(ours.number().to_string().into_bytes());
        let inner = Value::Array(vec![Value::Int(1), Value::Int(0)]);
        assert_eq!(
            ours.open(Value::Array(vec![tag.clone(), inner.clone()])).unwrap(),
            inner
        );
        // A script that returned nothing: `{tag}`.
        assert_eq!(ours.open(Value::Array(vec![tag.clone()])).unwrap(), Value::Nil);
        // A one-element table reply with the tag appended is the table, not a scalar.
        let one = Value::Array(vec![Value::Int(5), tag]);
        assert_eq!(ours.open(one).unwrap(), Value::Array(vec![Value::Int(5)]));
    }
}
