//! The connection core: what every path to Redis decides the same way, with no I/O of its own. The
//! async pipelined connection, the blocking lane and Node's wire client only move bytes; they ask this
//! module what a failure means ([`server_error`], the error table), whether a call may go out again
//! ([`CallAttempt`]), and whether to go to the server at all ([`SharedBreaker`], one per store and
//! process, shared by all of them).

mod attempt;
mod breaker;
mod error_table;

pub use attempt::{CallAttempt, Next, Written};
pub use breaker::{Admission, Breaker, BreakerState, SharedBreaker};
#[cfg(feature = "cluster")]
pub(crate) use error_table::setting_named;
#[cfg(feature = "redis")]
pub(crate) use error_table::transport_error;
pub use error_table::{
    client_refused, connect_timed_out, connection_failure, noscript_after_load, preamble_unanswered,
    server_closes_after, server_error, PROXY_OUTAGES, SETTING_ACL, SETTING_CLIENT_CERTIFICATE,
    SETTING_CLUSTER_URL, SETTING_COMMANDS, SETTING_CREDENTIALS, SETTING_DB, SETTING_SCRIPT_CACHE,
    SETTING_SENTINEL_ACL, SETTING_SENTINEL_CREDENTIALS, SETTING_TLS, SETTING_TLS_VERSIONS,
};
#[cfg(feature = "redis")]
pub(crate) use error_table::{connect_error, redis_error};
