//! The Redis limiter for a foreign event loop (sans-IO), for a binding that does its socket I/O on its
//! own thread (Node's libuv): [`WireConnection`] is one connection's whole state, from the preamble and
//! the module check to each call's answer, NOSCRIPT, a refused module command, timeouts, a lost or
//! broken connection and the store's circuit breaker; the caller only moves bytes and keeps time. The
//! command, the reply decoding and the failure policy are the ones the Redis store and `Limiter` use.
//!
//! The parts it is made of stay public for a caller that drives them itself:
//! [`Limiter::wire_command_as`](crate::Limiter::wire_command_as) on a [`WireRoute`], a
//! [`ReplyReader`], [`Limiter::wire_answer`](crate::Limiter::wire_answer),
//! [`Limiter::wire_timeout`](crate::Limiter::wire_timeout) and
//! [`Limiter::wire_unavailable`](crate::Limiter::wire_unavailable).

pub use super::endpoint::Endpoint;
pub use super::wire_call::{script_load_command, WireAnswer, WireCall};
pub use super::wire_code::WireRoute;
pub use super::wire_connection::{CallId, Settled, Unsent, WireConnection};
pub use super::wire_reader::{Reply, ReplyReader};
