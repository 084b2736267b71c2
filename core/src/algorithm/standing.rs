//! A key's standing: a ban, a deny-list entry or an allow-list entry, which answers before any rule
//! is looked at. Pure: what an entry answers, the ban a blocking rule's denial starts, and the text an
//! entry is stored as. `lua/limit.lua`, `lua/standing.lua` and the server module read and write the
//! same text; `tests/vectors/policies.json` proves they agree.
//!
//! A key has at most one entry under a prefix (the latest write wins), kept beside its rules' state
//! (`<prefix>:{<escaped key>}:standing`, the same cluster slot), with its own end.

use super::{Outcome, Outcomes};
use crate::rule::Rule;

/// Why a decision came out as it did.
///
/// ```
/// assert_eq!(ratelock::Reason::DenyList.name(), "deny_list");
/// assert_eq!(ratelock::Reason::from_code(1), Some(ratelock::Reason::Ban));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Reason {
    /// The rules decided (or the failure policy did: see `Decision::degraded`).
    #[default]
    Rule,
    /// The key is banned: by a rule's `block`, or by `Limiter::block`.
    Ban,
    /// The key is on the deny list (`Limiter::deny`).
    DenyList,
    /// The key is on the allow list (`Limiter::allow`): it passes and spends nothing.
    AllowList,
}

impl Reason {
    /// Every reason, in code order.
    pub const ALL: [Reason; 4] = [Reason::Rule, Reason::Ban, Reason::DenyList, Reason::AllowList];

    /// The name every language uses: `rule`, `ban`, `deny_list`, `allow_list`.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Rule => "rule",
            Reason::Ban => "ban",
            Reason::DenyList => "deny_list",
            Reason::AllowList => "allow_list",
        }
    }

    /// The number a server reply carries (0 to 3, in [`Reason::ALL`]'s order).
    pub fn code(self) -> u64 {
        match self {
            Reason::Rule => 0,
            Reason::Ban => 1,
            Reason::DenyList => 2,
            Reason::AllowList => 3,
        }
    }

    /// The reason a reply's number stands for.
    pub fn from_code(code: u64) -> Option<Reason> {
        Reason::ALL.get(usize::try_from(code).ok()?).copied()
    }
}

/// The kind of a key's entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Standing {
    /// Denied until the entry ends (a rule's `block`, or `Limiter::block`).
    Banned,
    /// On the deny list until the entry ends.
    Denied,
    /// On the allow list until the entry ends.
    Allowed,
}

impl Standing {
    /// The letter that starts the stored text.
    pub fn letter(self) -> u8 {
        match self {
            Standing::Banned => b'b',
            Standing::Denied => b'd',
            Standing::Allowed => b'a',
        }
    }

    fn of_letter(letter: u8) -> Option<Standing> {
        Some(match letter {
            b'b' => Standing::Banned,
            b'd' => Standing::Denied,
            b'a' => Standing::Allowed,
            _ => return None,
        })
    }

    /// The reason a decision this entry answers carries.
    pub fn reason(self) -> Reason {
        match self {
            Standing::Banned => Reason::Ban,
            Standing::Denied => Reason::DenyList,
            Standing::Allowed => Reason::AllowList,
        }
    }
}

/// A key's entry: its kind and when it ends.
///
/// ```
/// use ratelock::algorithm::standing::{Entry, Standing};
/// let entry = Entry { standing: Standing::Banned, until_us: 1_700_000_000_000_000 };
/// assert_eq!(entry.to_text(), "b1700000000000000");
/// assert_eq!(Entry::parse(b"b1700000000000000"), Some(entry));
/// assert_eq!(Entry::parse(b"x12"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Entry {
    /// What the entry says.
    pub standing: Standing,
    /// µs since the Unix epoch at which it ends.
    pub until_us: u64,
}

impl Entry {
    /// The stored text: the kind's letter, then the end in decimal µs.
    pub fn to_text(&self) -> String {
        format!("{}{}", self.standing.letter() as char, self.until_us)
    }

    /// Reads the stored text; `None` for anything no ratelock code writes.
    pub fn parse(raw: &[u8]) -> Option<Entry> {
        let (&letter, digits) = raw.split_first()?;
        let standing = Standing::of_letter(letter)?;
        if digits.is_empty() || digits.len() > 16 || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let until_us = std::str::from_utf8(digits).ok()?.parse().ok()?;
        (until_us < 1 << 53).then_some(Entry { standing, until_us })
    }

    /// What this entry answers for `rules` at `now`, or `None` once it has ended (the rules decide).
    ///
    /// A ban or a deny-list entry denies every rule, with nothing left and the entry's end as the
    /// wait; an allow-list entry admits every rule with its whole capacity left, spending nothing.
    pub fn answer(&self, rules: &[Rule], now: u64) -> Option<Verdict> {
        if self.until_us <= now {
            return None;
        }
        let wait = self.until_us - now;
        let outcomes = match self.standing {
            Standing::Allowed => rules.iter().map(admitted).collect(),
            Standing::Banned | Standing::Denied => rules.iter().map(|rule| denied(rule, wait)).collect(),
        };
        Some(Verdict {
            reason: self.standing.reason(),
            outcomes,
        })
    }
}

/// A store's answer to one check: why, and every rule's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What decided.
    pub reason: Reason,
    /// One outcome per rule, in order.
    pub outcomes: Outcomes,
}

impl From<Outcomes> for Verdict {
    /// The rules' own answer.
    fn from(outcomes: Outcomes) -> Self {
        Verdict {
            reason: Reason::Rule,
            outcomes,
        }
    }
}

/// The ban a hit's answer starts: the longest `block` among the rules that denied it, in µs (`None`
/// when no denying rule blocks, or nothing was denied).
///
/// ```
/// use ratelock::algorithm::{decide, outcomes, standing::ban_after};
/// let rules: ratelock::Rules = "1/minute block 10 minutes; 100/hour".parse()?;
/// let spent = [decide(&rules[0], None, 0, 1)?.outcome, decide(&rules[1], None, 0, 1)?.outcome];
/// assert_eq!(ban_after(&rules, &spent), None);
/// let mut denied = spent;
/// denied[0].allowed = false;
/// assert_eq!(ban_after(&rules, &denied), Some(600_000_000));
/// # Ok::<(), ratelock::Error>(())
/// ```
pub fn ban_after(rules: &[Rule], outcomes: &[Outcome]) -> Option<u64> {
    rules
        .iter()
        .zip(outcomes)
        .filter(|(_, outcome)| !outcome.allowed)
        .filter_map(|(rule, _)| rule.block_us())
        .max()
}

/// The answer of the hit that starts a ban of `block_us`: every rule denied, waiting out the ban.
pub fn banned(rules: &[Rule], block_us: u64) -> Verdict {
    Verdict {
        reason: Reason::Ban,
        outcomes: rules.iter().map(|rule| denied(rule, block_us)).collect(),
    }
}

fn denied(rule: &Rule, wait: u64) -> Outcome {
    Outcome {
        allowed: false,
        limit: rule.limit(),
        remaining: 0,
        reset_after_us: wait,
        retry_after_us: wait,
    }
}

fn admitted(rule: &Rule) -> Outcome {
    Outcome {
        allowed: true,
        limit: rule.limit(),
        remaining: rule.capacity(),
        reset_after_us: 0,
        retry_after_us: 0,
    }
}

/// An entry's key: `<prefix>:{<escaped key>}:standing`, written after the base every rule key shares.
pub const KEY_SUFFIX: &[u8] = b"standing";

/// A change to a key's entry, as `Limiter::block`, `unblock`, `deny`, `allow` and `clear` ask it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StandingCall {
    /// Puts an entry of this kind ending `for_us` from now, replacing any entry the key had.
    Set {
        /// The kind.
        standing: Standing,
        /// µs from now until it ends.
        for_us: u64,
    },
    /// Removes the key's entry if it is of one of these kinds (`unblock`: a ban; `clear`: a list
    /// entry); any other entry stays.
    Remove(&'static [Standing]),
}

/// What `clear` removes: a deny-list or an allow-list entry.
pub const LIST_ENTRIES: &[Standing] = &[Standing::Denied, Standing::Allowed];
/// What `unblock` removes: a ban.
pub const BANS: &[Standing] = &[Standing::Banned];

/// A span an entry or an override is kept for, in µs: from 1 ms to 366 days, else an invalid argument
/// named `name`.
pub fn span_us(name: &'static str, span: std::time::Duration) -> crate::Result<u64> {
    if span < std::time::Duration::from_millis(1) || span > crate::rule::MAX_PERIOD {
        return Err(crate::Error::invalid_argument(
            name,
            "must be from 1 ms to 366 days",
        ));
    }
    Ok(span.as_micros() as u64)
}

impl StandingCall {
    /// A [`StandingCall::Set`] of `span` (1 ms to 366 days; the error names the argument `name`).
    pub fn set(standing: Standing, name: &'static str, span: std::time::Duration) -> crate::Result<Self> {
        Ok(StandingCall::Set {
            standing,
            for_us: span_us(name, span)?,
        })
    }

    /// Applies the call to the key's `entry` at `now`: true when it put or removed an entry.
    ///
    /// ```
    /// use ratelock::algorithm::standing::{Entry, Standing, StandingCall, BANS, LIST_ENTRIES};
    /// let mut entry = None;
    /// assert!(StandingCall::Set { standing: Standing::Banned, for_us: 5 }.apply(&mut entry, 10));
    /// assert_eq!(entry, Some(Entry { standing: Standing::Banned, until_us: 15 }));
    /// assert!(!StandingCall::Remove(LIST_ENTRIES).apply(&mut entry, 11), "clear leaves a ban");
    /// assert!(StandingCall::Remove(BANS).apply(&mut entry, 11));
    /// assert_eq!(entry, None);
    /// ```
    pub fn apply(self, entry: &mut Option<Entry>, now: u64) -> bool {
        if entry.is_some_and(|live| live.until_us <= now) {
            *entry = None;
        }
        match self {
            StandingCall::Set { standing, for_us } => {
                *entry = Some(Entry {
                    standing,
                    until_us: now.saturating_add(for_us),
                });
                true
            }
            StandingCall::Remove(kinds) => match entry {
                Some(live) if kinds.contains(&live.standing) => {
                    *entry = None;
                    true
                }
                _ => false,
            },
        }
    }

    /// The call a binding names by its method: `block`, `deny` or `allow` (with a span, which the
    /// binding calls `span_name`: its errors name it), `unblock` or `clear` (with none).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratelock::algorithm::standing::{Standing, StandingCall, BANS};
    /// let ban = StandingCall::named("block", Some(Duration::from_secs(2)), "duration")?;
    /// assert_eq!(ban, StandingCall::Set { standing: Standing::Banned, for_us: 2_000_000 });
    /// assert_eq!(StandingCall::named("unblock", None, "duration")?, StandingCall::Remove(BANS));
    /// let missing = StandingCall::named("deny", None, "ttlMs").unwrap_err();
    /// assert!(missing.is_invalid_argument() && missing.to_string().contains("`ttlMs`"));
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn named(
        op: &str,
        span: Option<std::time::Duration>,
        span_name: &'static str,
    ) -> crate::Result<Self> {
        let standing = match op {
            "block" => Standing::Banned,
            "deny" => Standing::Denied,
            "allow" => Standing::Allowed,
            "unblock" | "clear" if span.is_some() => {
                return Err(crate::Error::invalid_argument(
                    span_name,
                    "only block, deny and allow take one",
                ))
            }
            "unblock" => return Ok(StandingCall::Remove(BANS)),
            "clear" => return Ok(StandingCall::Remove(LIST_ENTRIES)),
            _ => {
                return Err(crate::Error::invalid_argument(
                    "op",
                    "expected block, unblock, deny, allow or clear",
                ))
            }
        };
        match span {
            Some(span) => StandingCall::set(standing, span_name, span),
            None => Err(crate::Error::invalid_argument(span_name, "is needed")),
        }
    }

    /// The letters of the kinds a removal takes, as `standing.lua` and the module read them.
    pub fn letters(kinds: &[Standing]) -> String {
        kinds.iter().map(|kind| kind.letter() as char).collect()
    }
}
