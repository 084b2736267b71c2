//! The command line's grammar (clap): global store options, then one command. `--help` on any command
//! shows this text.

use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::span::{parse_span, parse_timeout};

/// Distributed locks and rate limits on Redis, from the shell.
#[derive(Debug, Parser)]
#[command(name = "ratelock", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// Where the limits and locks live: the same URLs and key prefix as the libraries.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// The store: redis://, rediss://, redis+cluster://, rediss+cluster://, redis+sentinel://,
    /// rediss+sentinel:// (as the libraries take).
    #[arg(
        long,
        env = "RATELOCK_URL",
        default_value = "redis://127.0.0.1:6379/",
        global = true
    )]
    pub url: String,
    /// The key prefix (the libraries' `prefix`).
    #[arg(long, env = "RATELOCK_PREFIX", default_value = "rl", global = true)]
    pub prefix: String,
    /// How long one store call may take (e.g. 1s, 500ms).
    #[arg(long, default_value = "2s", value_parser = parse_timeout, global = true)]
    pub timeout: Duration,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Distributed locks.
    Lock {
        #[command(subcommand)]
        command: LockCommand,
    },
    /// Rate limits: take from or look at a key's rules.
    Limit {
        #[command(subcommand)]
        command: LimitCommand,
    },
    /// Show what a key holds (each rule's state, its entry and override) or a lock's state, and what
    /// the next hit would answer, without spending.
    Inspect(InspectArgs),
    /// Check the server ratelock will run on and print findings with a severity.
    Doctor(DoctorArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
pub enum LockCommand {
    /// Run a command while holding a lock (a distributed `flock`), renewing it until the command
    /// ends. The command sees RATELOCK_FENCING_TOKEN in its environment.
    ///
    /// Exit codes: the command's own (128 + N when a signal N ended it); 75 when the lock is held
    /// and no --wait was given; 76 when --wait ran out; 77 when the lock was lost while the command
    /// ran (the command is sent SIGTERM, then SIGKILL after --grace); 78 when the store failed or the
    /// command could not start; 2 for bad input.
    Run(LockRunArgs),
}

#[derive(Debug, Args)]
pub struct LockRunArgs {
    /// The lock's name (the same lock as `DistributedLock(name)` in every library).
    pub name: String,
    /// The lease: renewed every third of it while the command runs (e.g. 30s, 5m).
    #[arg(long, default_value = "30s", value_parser = parse_span)]
    pub ttl: Duration,
    /// How long to wait for the lock when it is held (default: do not wait).
    #[arg(long, value_parser = parse_span)]
    pub wait: Option<Duration>,
    /// After SIGTERM, how long the command has to stop before SIGKILL (when the lock is lost).
    #[arg(long, default_value = "10s", value_parser = parse_span)]
    pub grace: Duration,
    /// The command and its arguments, after `--`.
    #[arg(required = true, last = true, num_args = 1..)]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum LimitCommand {
    /// Take COST units from every rule if all allow it. Exits 0 when allowed, 1 when denied.
    Hit(LimitArgs),
    /// Answer what `hit` would, spending nothing. Exits 0 when it would be allowed, 1 when not.
    Peek(LimitArgs),
}

#[derive(Debug, Args)]
pub struct LimitArgs {
    /// The key (a user, an IP address, a tenant...).
    pub key: String,
    /// The rules, e.g. "10/second; 1000/hour using fixed_window".
    pub rules: String,
    /// Units to take.
    #[arg(long, default_value_t = 1)]
    pub cost: u64,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The key (or, with --lock, the lock's name).
    pub key: String,
    /// The rules whose state to show (the key's entry and override are shown either way).
    pub rules: Option<String>,
    /// KEY names a lock: show its holder's fencing token, its lease and the last token minted.
    #[arg(long, conflicts_with = "rules")]
    pub lock: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The server to check (default: --url).
    pub url: Option<String>,
}
