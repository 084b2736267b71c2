//! A seeded fault plan: which fault goes on which door when, drawn from one seed, so a failing run is
//! replayed exactly by running the same seed again. `SplitMix` is the generator (SplitMix64: small,
//! fast, and the same sequence on every machine).

use std::time::Duration;

use super::proxy::{Fault, FaultProxy};

/// SplitMix64: a seeded generator for plans and jitter (not for secrets).
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            0
        } else {
            self.next_u64() % bound
        }
    }
}

/// Every kind of fault the proxy makes, for plans that draw from all of them.
pub const EVERY_FAULT: [FaultKind; 6] = [
    FaultKind::Latency,
    FaultKind::Stall,
    FaultKind::HalfOpen,
    FaultKind::Partition,
    FaultKind::Cut,
    FaultKind::Throttle,
];

/// The kinds of fault a plan draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Latency with jitter on every chunk.
    Latency,
    /// Replies held, then delivered (black hole while it lasts).
    Stall,
    /// Replies thrown away (half-open).
    HalfOpen,
    /// Nothing passes either way; new connections held.
    Partition,
    /// Every open connection reset (RST).
    Cut,
    /// A narrow pipe.
    Throttle,
}

impl FaultKind {
    /// The fault this kind puts on a door (`None` for a cut, which is an action, not a state).
    fn fault(self, rng: &mut SplitMix) -> Option<Fault> {
        let ms =
            |rng: &mut SplitMix, low: u64, high: u64| Duration::from_millis(low + rng.below(high - low + 1));
        Some(match self {
            FaultKind::Latency => Fault {
                latency: ms(rng, 1, 20),
                jitter: ms(rng, 0, 10),
                ..Fault::default()
            },
            FaultKind::Stall => Fault {
                stall_replies: true,
                ..Fault::default()
            },
            FaultKind::HalfOpen => Fault {
                drop_replies: true,
                ..Fault::default()
            },
            FaultKind::Partition => Fault {
                partitioned: true,
                ..Fault::default()
            },
            FaultKind::Throttle => Fault {
                bandwidth: Some(2_000 + rng.below(20_000)),
                ..Fault::default()
            },
            FaultKind::Cut => return None,
        })
    }
}

/// One step of a plan: at `at` from the start, door `door` gets `fault` (`None`: its connections are
/// cut), and the fault is lifted `lasts` later.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// When the fault starts, from the plan's start.
    pub at: Duration,
    /// Which door.
    pub door: usize,
    /// What it is.
    pub kind: FaultKind,
    /// The fault put on the door (`None` for a cut).
    pub fault: Option<Fault>,
    /// How long it lasts.
    pub lasts: Duration,
}

/// A seeded schedule of faults over a proxy's doors.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultPlan {
    /// The seed it was drawn from.
    pub seed: u64,
    /// The steps, in time order; no two overlap on one door.
    pub steps: Vec<Step>,
}

impl FaultPlan {
    /// `count` faults of the given kinds over `doors` doors, each lasting 50–`longest`, with quiet gaps
    /// of 20–200 ms between them, all drawn from `seed`.
    pub fn seeded(seed: u64, doors: usize, kinds: &[FaultKind], count: usize, longest: Duration) -> Self {
        let mut rng = SplitMix::new(seed);
        let mut at = Duration::ZERO;
        let steps = (0..count)
            .map(|_| {
                at += Duration::from_millis(20 + rng.below(181));
                let kind = kinds[rng.below(kinds.len() as u64) as usize];
                let door = rng.below(doors.max(1) as u64) as usize;
                let lasts = Duration::from_millis(50 + rng.below(longest.as_millis().max(51) as u64 - 49));
                let step = Step {
                    at,
                    door,
                    kind,
                    fault: kind.fault(&mut rng),
                    lasts,
                };
                at += lasts;
                step
            })
            .collect();
        FaultPlan { seed, steps }
    }

    /// How long the whole plan runs.
    pub fn length(&self) -> Duration {
        self.steps
            .last()
            .map_or(Duration::ZERO, |step| step.at + step.lasts)
    }

    /// The plan as the faults a scenario runs its clients through.
    pub fn on<'a>(&'a self, proxy: &'a FaultProxy) -> super::scenarios::Faults<impl FnOnce() + 'a> {
        super::scenarios::Faults {
            length: self.length(),
            play: move || self.play(proxy),
        }
    }

    /// Plays the plan against `proxy` on this thread: each fault on at its time, off at its end.
    pub fn play(&self, proxy: &FaultProxy) {
        let start = std::time::Instant::now();
        for step in &self.steps {
            sleep_until(start + step.at);
            match step.fault {
                Some(fault) => proxy.set(step.door, fault),
                None => proxy.cut(step.door),
            }
            sleep_until(start + step.at + step.lasts);
            proxy.set(step.door, Fault::default());
        }
    }
}

fn sleep_until(deadline: std::time::Instant) {
    let now = std::time::Instant::now();
    if deadline > now {
        std::thread::sleep(deadline - now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_seed_gives_one_plan_and_another_seed_another() {
        let kinds = [
            FaultKind::Latency,
            FaultKind::Stall,
            FaultKind::Cut,
            FaultKind::Partition,
        ];
        let plan = FaultPlan::seeded(7, 3, &kinds, 20, Duration::from_millis(400));
        assert_eq!(
            plan,
            FaultPlan::seeded(7, 3, &kinds, 20, Duration::from_millis(400))
        );
        assert_ne!(
            plan.steps,
            FaultPlan::seeded(8, 3, &kinds, 20, Duration::from_millis(400)).steps
        );
        assert!(plan.steps.windows(2).all(|w| w[0].at + w[0].lasts <= w[1].at));
        assert!(plan
            .steps
            .iter()
            .all(|s| s.door < 3 && s.lasts <= Duration::from_millis(400)));
    }
}
