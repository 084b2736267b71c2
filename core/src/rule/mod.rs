//! Rules: `limit` per `period` under an algorithm (and a burst for the bucket algorithms),
//! validated once when built, so nothing downstream re-checks them.

mod algorithm;
mod cache;
mod calendar;
mod display;
mod parse;
mod prepared;
mod rules;

use std::sync::Arc;
use std::time::Duration;

pub use algorithm::Algorithm;
pub use cache::RuleCache;
pub use calendar::{Calendar, CalendarUnit, MAX_OFFSET_MINUTES};
pub(crate) use prepared::PreparedCache;
pub use prepared::PreparedRules;
pub use rules::Rules;

use crate::error::{Error, Result};

/// Largest accepted `limit` and `burst`.
pub const MAX_LIMIT: u64 = 1_000_000_000;
/// Largest accepted `limit` for `sliding_log`, which stores one entry per admitted unit.
pub const MAX_SLIDING_LOG_LIMIT: u64 = 10_000;
/// Most rules one limit checks together (one call, one key): a bound on the work a single call can ask
/// of a server (Redis runs a call alone). The Lua scripts and the module refuse more as well.
pub const MAX_RULES: usize = 100;
/// The error for `count` rules in one limit (`text` shows the first ones): more than [`MAX_RULES`].
pub(crate) fn too_many(text: &str, count: usize) -> Error {
    Error::invalid_rule(
        text,
        text,
        format!("{count} rules in one limit; at most {MAX_RULES} are checked together"),
    )
}

/// Longest accepted period: 366 days.
pub const MAX_PERIOD: Duration = Duration::from_secs(366 * 24 * 3600);
/// Bound on every stored quantity, so that Lua's doubles stay exact (2^53 would be the hard limit).
pub(crate) const MAX_SCALED: u64 = 1 << 50;

/// One rate-limiting rule. Build it from text (`"10/second"`) or in code; either way it is checked once.
///
/// ```
/// use std::time::Duration;
/// use ratelock::{Algorithm, Rule};
///
/// let rule = Rule::new(100, Duration::from_secs(60))?.with_burst(20)?;
/// assert_eq!(rule.to_string(), "100/minute burst 20");
/// let log = Rule::new(5, Duration::from_secs(1))?.using(Algorithm::SlidingLog)?;
/// assert_eq!(log.to_string(), "5/second using sliding_log");
/// # Ok::<(), ratelock::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Rule {
    algorithm: Algorithm,
    limit: u64,
    period_us: u64,
    burst: u64,
    /// µs a denial of this rule bans the key for (0: no ban).
    block_us: u64,
    /// Whether the rule only reports what it would deny (`shadow`): see [`Rule::with_shadow`].
    shadow: bool,
    /// The calendar its fixed windows follow (`calendar`): see [`Rule::on_calendar`].
    calendar: Option<Calendar>,
    id: Arc<str>,
    /// The id the memory store keeps this rule's state under when another rule's state is meant (an
    /// override keeps the state of the rule it replaces): `None` for its own id.
    stored_as: Option<Arc<str>>,
    /// A hash of [`storage_id`](Self::storage_id), the same in every process: the memory store finds
    /// the rule's state by it and the user key's hash, without hashing the whole storage key.
    storage_hash: u64,
    /// The rule's five arguments of a limit call (code, limit, period, burst, block) as RESP bytes,
    /// written by the Redis store on its first call with the rule and reused by every later one.
    #[cfg(feature = "redis")]
    call_args: CallArgs,
    /// Derived once at build time: GCRA/leaky emission interval (µs per unit).
    emission_interval_us: u64,
    /// Derived once at build time: token-bucket (scale, rate), see `token_scale`.
    token_scale: (u64, u64),
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.block_us == other.block_us && self.shadow == other.shadow
    }
}

impl Eq for Rule {}

impl std::hash::Hash for Rule {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl Rule {
    /// `limit` per `period` with the default algorithm (GCRA) and `burst == limit`.
    pub fn new(limit: u64, period: Duration) -> Result<Self> {
        Self::build(Algorithm::Gcra, limit, period, limit)
    }

    /// The same rule with another algorithm. Fails if the burst would be meaningless for it.
    pub fn using(&self, algorithm: Algorithm) -> Result<Self> {
        if self.calendar.is_some() && algorithm != Algorithm::FixedWindow {
            return Err(calendar_is_fixed_window(&self.to_string(), algorithm.name()));
        }
        let burst = if algorithm.uses_burst() {
            self.burst
        } else {
            self.limit
        };
        if !algorithm.uses_burst() && self.burst != self.limit {
            return Err(Error::invalid_rule(
                &self.to_string(),
                algorithm.name(),
                "burst applies only to gcra, token_bucket and leaky_bucket",
            ));
        }
        Ok(Self::build(algorithm, self.limit, self.period(), burst)?.keep_policies(self))
    }

    /// The same rule with another burst (how many units may be taken at once).
    pub fn with_burst(&self, burst: u64) -> Result<Self> {
        if !self.algorithm.uses_burst() && burst != self.limit {
            return Err(Error::invalid_rule(
                &self.to_string(),
                &format!("burst {burst}"),
                "burst applies only to gcra, token_bucket and leaky_bucket",
            ));
        }
        Ok(Self::build(self.algorithm, self.limit, self.period(), burst)?.keep_policies(self))
    }

    /// The same rule, banning the key for `block` once it denies a hit (the `block` word of the rule
    /// text): from 1 ms to [`MAX_PERIOD`], in whole milliseconds. While banned, every hit and peek on
    /// the key is denied with [`Reason::Ban`](crate::Reason::Ban) and the ban's end as its wait.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rule: ratelock::Rule = "5/minute".parse()?;
    /// let strict = rule.with_block(Duration::from_secs(900))?;
    /// assert_eq!(strict.to_string(), "5/minute block 15 minutes");
    /// assert_eq!(strict.block(), Some(Duration::from_secs(900)));
    /// assert_eq!(strict.id(), rule.id(), "a ban is kept beside the rule's state, not in it");
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn with_block(&self, block: Duration) -> Result<Self> {
        if self.shadow {
            return Err(shadow_cannot_block(self));
        }
        if block < Duration::from_millis(1)
            || block > MAX_PERIOD
            || !block.subsec_nanos().is_multiple_of(1_000_000)
        {
            return Err(Error::invalid_rule(
                &self.to_string(),
                &format!("block {block:?}"),
                "block must be a whole number of milliseconds from 1 ms to 366 days",
            ));
        }
        let mut rule = self.clone();
        rule.block_us = block.as_micros() as u64;
        Ok(rule)
    }

    /// How long a denial of this rule bans the key, if it does.
    pub fn block(&self) -> Option<Duration> {
        self.block_us().map(Duration::from_micros)
    }

    pub(crate) fn block_us(&self) -> Option<u64> {
        (self.block_us > 0).then_some(self.block_us)
    }

    /// The same rule in shadow (the `shadow` word of the rule text): it is decided and spent as when it
    /// enforces (charged for what it admits, not for what it denies), but a request only shadow rules
    /// deny is allowed, with [`Decision::would_deny`](crate::Decision::would_deny) set and the figures
    /// enforcement would have answered, and the enforcing rules beside it are charged for it. A rule
    /// that enforces still denies beside it. A shadow rule cannot `block` (the ban would enforce it).
    ///
    /// ```
    /// let rule: ratelock::Rule = "100/minute".parse()?;
    /// let trial = rule.with_shadow()?;
    /// assert_eq!(trial.to_string(), "100/minute shadow");
    /// assert!(trial.is_shadow() && trial.id() == rule.id());
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn with_shadow(&self) -> Result<Self> {
        if self.block_us > 0 {
            return Err(shadow_cannot_block(self));
        }
        let mut rule = self.clone();
        rule.shadow = true;
        Ok(rule)
    }

    /// Whether the rule is in shadow: it reports what it would deny instead of denying.
    pub fn is_shadow(&self) -> bool {
        self.shadow
    }

    /// `limit` per calendar window (the `calendar` word of the rule text: `"10000/month calendar"`,
    /// `"500/day calendar at +02:00"`): a fixed window that starts and ends on the calendar's boundaries,
    /// so a month is as long as that month and a day starts at the offset's midnight.
    /// [`Decision::reset_after`](crate::Decision) and a denial's `retry_after` reach the next boundary.
    /// The rule's [`period`](Rule::period) is the unit's longest (31 days for a month).
    ///
    /// ```
    /// use ratelock::{Calendar, CalendarUnit, Rule};
    ///
    /// let monthly = Rule::on_calendar(10_000, Calendar::new(CalendarUnit::Month))?;
    /// assert_eq!(monthly.to_string(), "10000/month calendar");
    /// let daily = Rule::on_calendar(500, Calendar::new(CalendarUnit::Day).at_offset(120)?)?;
    /// assert_eq!(daily, "500/day calendar at +02:00".parse()?);
    /// assert_eq!(daily.id(), "fw500/day+120");
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn on_calendar(limit: u64, calendar: Calendar) -> Result<Self> {
        let period = Duration::from_micros(calendar.unit().longest_us());
        let mut rule = Self::build(Algorithm::FixedWindow, limit, period, limit)?;
        rule.calendar = Some(calendar);
        rule.set_id();
        Ok(rule)
    }

    /// The calendar the rule's windows follow, if it is a calendar rule.
    pub fn calendar(&self) -> Option<Calendar> {
        self.calendar
    }

    /// A fixed window's index at `now_us` and the µs since the epoch it ends at: the calendar's
    /// window for a calendar rule, else `floor(now / period)`.
    pub(crate) fn fixed_window_at(&self, now_us: u64) -> (u64, u64) {
        match self.calendar {
            Some(calendar) => calendar.window(now_us),
            None => {
                let window = now_us / self.period_us;
                (window, (window + 1) * self.period_us)
            }
        }
    }

    /// The rule's code and period as `limit.lua` and the server module take them: a calendar rule
    /// sends its unit's code and its offset from UTC in minutes (see `limit.lua`'s header).
    pub fn wire_code_and_period(&self) -> (&'static str, i64) {
        match self.calendar {
            Some(calendar) => (calendar.unit().code(), i64::from(calendar.offset_minutes())),
            None => (self.algorithm.code(), self.period_us as i64),
        }
    }

    /// The rule of `limit.lua`'s arguments ([`Rule::wire_code_and_period`] and the limit and burst),
    /// without ban or shadow; `None` when they name no rule ratelock accepts.
    ///
    /// ```
    /// let rule: ratelock::Rule = "500/day calendar at +02:00".parse()?;
    /// let (code, period) = rule.wire_code_and_period();
    /// assert_eq!(ratelock::Rule::from_wire(code, 500, period, 500), Some(rule));
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn from_wire(code: &str, limit: u64, period: i64, burst: u64) -> Option<Rule> {
        if let Some(unit) = CalendarUnit::from_code(code.as_bytes()) {
            let calendar = Calendar::new(unit).at_offset(i32::try_from(period).ok()?).ok()?;
            return (burst == limit).then(|| Rule::on_calendar(limit, calendar).ok())?;
        }
        let algorithm = Algorithm::ALL.into_iter().find(|a| a.code() == code)?;
        let period = Duration::from_micros(u64::try_from(period).ok()?);
        let burst = if algorithm.uses_burst() { burst } else { limit };
        Rule::build(algorithm, limit, period, burst).ok()
    }

    /// `self` with `other`'s ban and shadow (a rule rebuilt from another keeps what it said; an
    /// override keeps the overridden rule's).
    pub(crate) fn keep_policies(mut self, other: &Rule) -> Self {
        #[cfg(feature = "redis")]
        {
            self.call_args = CallArgs::default();
        }
        self.block_us = other.block_us;
        self.shadow = other.shadow;
        self
    }

    /// This rule's share for one of `instances` processes, for the local fallback, so that across all
    /// processes the rate stays the rule's:
    /// - gcra, token_bucket, leaky_bucket: the period times `instances` (at most [`MAX_PERIOD`]) and the
    ///   burst divided among them, rounded up to at least 1 (so cost 1 always fits);
    /// - fixed_window, sliding_window, sliding_log: the same window with the limit divided among them,
    ///   rounded up to at least 1 (a longer window would let every process spend a whole limit at once).
    ///
    /// ```
    /// let rule: ratelock::Rule = "100/minute burst 10".parse()?;
    /// let share = rule.local_share(4)?;
    /// assert_eq!((share.limit(), share.period().as_secs(), share.burst()), (100, 240, 3));
    /// assert_eq!("1/second".parse::<ratelock::Rule>()?.local_share(8)?.burst(), 1);
    /// let window = "10/minute using fixed_window".parse::<ratelock::Rule>()?.local_share(4)?;
    /// assert_eq!((window.limit(), window.period().as_secs()), (3, 60));
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn local_share(&self, instances: u64) -> Result<Self> {
        let instances = instances.max(1);
        if !self.algorithm.uses_burst() {
            let limit = self.limit.div_ceil(instances).max(1);
            let share = match self.calendar {
                Some(calendar) => Self::on_calendar(limit, calendar)?,
                None => Self::build(self.algorithm, limit, self.period(), limit)?,
            };
            return Ok(share.keep_policies(self));
        }
        let period = self
            .period()
            .saturating_mul(u32::try_from(instances).unwrap_or(u32::MAX))
            .min(MAX_PERIOD);
        let burst = self.burst.div_ceil(instances).max(1);
        Ok(Self::build(self.algorithm, self.limit, period, burst)?.keep_policies(self))
    }

    /// Builds and validates a rule from all its parts.
    pub fn build(algorithm: Algorithm, limit: u64, period: Duration, burst: u64) -> Result<Self> {
        let shown = || format!("{limit} per {period:?}");
        if limit == 0 || limit > MAX_LIMIT {
            return Err(Error::invalid_rule(
                &shown(),
                &limit.to_string(),
                format!("limit must be between 1 and {MAX_LIMIT}"),
            ));
        }
        if period < Duration::from_millis(1) || period > MAX_PERIOD {
            return Err(Error::invalid_rule(
                &shown(),
                &format!("{period:?}"),
                "period must be between 1 ms and 366 days",
            ));
        }
        if !period.subsec_nanos().is_multiple_of(1_000_000) {
            return Err(Error::invalid_rule(
                &shown(),
                &format!("{period:?}"),
                "period must be a whole number of milliseconds",
            ));
        }
        if burst == 0 || burst > MAX_LIMIT {
            return Err(Error::invalid_rule(
                &shown(),
                &format!("burst {burst}"),
                format!("burst must be between 1 and {MAX_LIMIT}"),
            ));
        }
        if !algorithm.uses_burst() && burst != limit {
            return Err(Error::invalid_rule(
                &shown(),
                &format!("burst {burst}"),
                "burst applies only to gcra, token_bucket and leaky_bucket",
            ));
        }
        let period_us = period.as_micros() as u64;
        let g = gcd(limit, period_us);
        let mut rule = Rule {
            algorithm,
            limit,
            period_us,
            burst,
            block_us: 0,
            shadow: false,
            calendar: None,
            id: Arc::from(""),
            stored_as: None,
            storage_hash: 0,
            #[cfg(feature = "redis")]
            call_args: CallArgs::default(),
            emission_interval_us: period_us.div_ceil(limit),
            token_scale: (period_us / g, limit / g),
        };
        rule.check_ranges()?;
        rule.set_id();
        Ok(rule)
    }

    fn check_ranges(&self) -> Result<()> {
        let fail = |part: String, reason: &str| Err(Error::invalid_rule(&self.to_string(), &part, reason));
        match self.algorithm {
            Algorithm::Gcra | Algorithm::LeakyBucket => {
                if self.period_us < self.limit {
                    return fail(
                        self.limit.to_string(),
                        "rate too fine: more than one unit per microsecond",
                    );
                }
                if (self.burst as u128) * (self.emission_interval_us() as u128) > MAX_SCALED as u128 {
                    return fail(format!("burst {}", self.burst), "burst × period is too large");
                }
            }
            Algorithm::TokenBucket => {
                let (scale, _) = self.token_scale();
                if (self.burst as u128) * (scale as u128) > MAX_SCALED as u128 {
                    return fail(format!("burst {}", self.burst), "burst × period is too large");
                }
            }
            Algorithm::SlidingLog if self.limit > MAX_SLIDING_LOG_LIMIT => {
                return fail(
                    self.limit.to_string(),
                    "sliding_log keeps one entry per unit: limit must be at most 10000",
                );
            }
            _ => {}
        }
        Ok(())
    }

    /// The algorithm that decides this rule.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// How many units per period.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The period.
    pub fn period(&self) -> Duration {
        Duration::from_micros(self.period_us)
    }

    /// The burst (bucket algorithms) — equal to `limit` for the window algorithms.
    pub fn burst(&self) -> u64 {
        self.burst
    }

    /// The most units one request can ever take: `burst` for buckets, `limit` for windows.
    pub fn capacity(&self) -> u64 {
        if self.algorithm.uses_burst() {
            self.burst
        } else {
            self.limit
        }
    }

    /// The stable identifier of the rule's shape, the last part of its storage key.
    ///
    /// ```
    /// let rule: ratelock::Rule = "100/minute burst 20".parse()?;
    /// assert_eq!(rule.id(), "g100/60000b20");
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn id(&self) -> &str {
        &self.id
    }

    /// [`Rule::id`], shared (a clone is one reference count): for a metric attribute per decision.
    pub fn shared_id(&self) -> Arc<str> {
        self.id.clone()
    }

    pub(crate) fn period_us(&self) -> u64 {
        self.period_us
    }

    /// GCRA / leaky bucket: µs per unit, rounded up (never admits faster than the rule).
    pub(crate) fn emission_interval_us(&self) -> u64 {
        self.emission_interval_us
    }

    /// Token bucket: (scaled units per token, scaled units refilled per µs), reduced by their gcd.
    pub(crate) fn token_scale(&self) -> (u64, u64) {
        self.token_scale
    }

    /// The id the memory store keeps the rule's state under: its own, or, for a rule an override put
    /// in place of another, what [`Rule::stored_as`] said.
    pub(crate) fn storage_id(&self) -> &str {
        self.stored_as.as_deref().unwrap_or(&self.id)
    }

    /// The rule's limit-call arguments as RESP bytes, written by `write` the first time.
    #[cfg(feature = "redis")]
    pub(crate) fn call_args(&self, write: impl FnOnce() -> Box<[u8]>) -> &[u8] {
        self.call_args.0.get_or_init(write)
    }

    /// [`storage_id`](Self::storage_id)'s hash (see the field).
    #[inline]
    pub(crate) fn storage_hash(&self) -> u64 {
        self.storage_hash
    }

    /// The same rule, its state kept under `id` in the memory store.
    pub(crate) fn stored_as(mut self, id: &str) -> Self {
        self.stored_as = Some(Arc::from(id));
        self.storage_hash = hash_of_id(id);
        self
    }

    /// Writes the rule's id from its figures (and the hash its state is found by).
    fn set_id(&mut self) {
        self.id = Arc::from(self.id_text());
        self.storage_hash = hash_of_id(self.storage_id());
    }

    fn id_text(&self) -> String {
        let period_ms = self.period_us / 1000;
        let code = self.algorithm.code();
        if let Some(calendar) = self.calendar {
            return format!("{code}{}/{}", self.limit, calendar.id_part());
        }
        // The burst is written only when it differs from the limit: shorter keys for the common case.
        if self.algorithm.uses_burst() && self.burst != self.limit {
            format!("{code}{}/{period_ms}b{}", self.limit, self.burst)
        } else {
            format!("{code}{}/{period_ms}", self.limit)
        }
    }
}

fn calendar_is_fixed_window(rule: &str, part: &str) -> Error {
    Error::invalid_rule(
        rule,
        part,
        "a calendar window counts with fixed_window (it is one window per calendar unit)",
    )
}

fn shadow_cannot_block(rule: &Rule) -> Error {
    Error::invalid_rule(
        &rule.to_string(),
        "shadow",
        "a shadow rule cannot block (the ban would enforce it)",
    )
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl std::str::FromStr for Rule {
    type Err = Error;

    /// Parses exactly one rule (see [`Rules`] for several).
    fn from_str(text: &str) -> Result<Self> {
        let rules = Rules::parse_with_default(text, Algorithm::Gcra)?;
        match rules.as_slice() {
            [one] => Ok(one.clone()),
            _ => Err(Error::invalid_rule(text, text, "expected exactly one rule")),
        }
    }
}

/// A storage id's hash, with a fixed seed: the same in every process and every run.
fn hash_of_id(id: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x5241_5445_4c4f_434b).hash_one(id)
}

/// A rule's limit-call arguments once written (see `Rule::call_args`). A clone starts empty: a clone
/// is how a rule with other figures is made (`with_block`, `keep_policies`), and it must not keep the
/// bytes of the rule it came from.
#[cfg(feature = "redis")]
#[derive(Debug, Default)]
struct CallArgs(std::sync::OnceLock<Box<[u8]>>);

#[cfg(feature = "redis")]
impl Clone for CallArgs {
    fn clone(&self) -> Self {
        CallArgs::default()
    }
}
