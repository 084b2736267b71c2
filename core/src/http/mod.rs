//! The adapter core: everything a framework adapter decides about HTTP, as pure functions, so that
//! Flask, Starlette, FastAPI, Django, Express, Fastify, Koa and Hono (and WebAssembly) answer alike:
//! the client key ([`ClientAddress`]), the key of a scoped limit ([`scoped_key`]), the rate-limit
//! headers ([`HeaderOptions`]), and the response to a denial, an outage or an unusable key
//! ([`HttpOptions`]). Adapters only translate their framework's request and response.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use ratelock::http::{scoped_key, ClientAddress, HttpOptions};
//!
//! let limiter = ratelock::Limiter::memory();
//! let rules = "2/minute".parse()?;
//! let client = ClientAddress::default().key("::ffff:198.51.100.4", None);
//! let key = scoped_key("search", client.as_bytes())?;
//! let decision = limiter.hit(&key, &rules, 1).await?;
//! let answer = HttpOptions::default().answer(&decision, &rules, client.as_bytes(), 0);
//! assert!(answer.proceed);
//! assert_eq!(answer.headers[1], ("RateLimit", "\"2/minute\";r=1;t=30".to_string()));
//! # Ok::<(), ratelock::Error>(()) }).unwrap();
//! ```

mod answer;
mod client_address;
mod headers;
mod scoped_key;
mod structured;

pub use answer::{DeniedBody, HttpAnswer, HttpOptions, QUOTA_EXCEEDED};
pub use client_address::{ClientAddress, Network, ProxyHeader, TrustedProxies, DEFAULT_IPV6_SUBNET};
pub use headers::{Header, HeaderOptions, HeaderStyle};
pub use scoped_key::scoped_key;
