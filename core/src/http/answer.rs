//! What an adapter sends back: for a decision, pass (with headers) or a denial (status, headers, body);
//! for a store outage, 503; for a request without a usable key, 400. Every adapter in every language
//! renders responses here, so they agree byte for byte.

use std::str::FromStr;

use super::headers::{ceil_seconds, Header, HeaderOptions};
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::excerpt;
use crate::rule::Rules;

/// The problem type of the rate-limit headers draft for a request over its quota.
pub const QUOTA_EXCEEDED: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";

/// The body of a refused request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[non_exhaustive]
pub enum DeniedBody {
    /// `text/plain`: one sentence with the wait (the default).
    #[default]
    Text,
    /// `application/json`: `{"error": "rate_limited", "policy": ..., "retry_after": seconds}`.
    Json,
    /// RFC 9457 `application/problem+json` with the draft's `quota-exceeded` type and the
    /// `violated-policies` member.
    Problem,
}

impl FromStr for DeniedBody {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "text" => Ok(DeniedBody::Text),
            "json" => Ok(DeniedBody::Json),
            "problem" => Ok(DeniedBody::Problem),
            _ => Err(Error::invalid_argument(
                "denied_body",
                format!("expected text, json or problem, got {:?}", excerpt::of(text)),
            )),
        }
    }
}

impl DeniedBody {
    /// The body's name as every binding spells it: `text`, `json`, `problem`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeniedBody::Text => "text",
            DeniedBody::Json => "json",
            DeniedBody::Problem => "problem",
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            DeniedBody::Text => "text/plain; charset=utf-8",
            DeniedBody::Json => "application/json",
            DeniedBody::Problem => "application/problem+json",
        }
    }
}

/// How an adapter answers: its headers, the body of a denial and the denial's status.
///
/// ```
/// use ratelock::http::{DeniedBody, HttpOptions};
/// let options = HttpOptions::default().with_status(403)?;
/// assert_eq!(options.denied_body, DeniedBody::Text);
/// assert!(HttpOptions::default().with_status(99).is_err());
/// # Ok::<(), ratelock::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct HttpOptions {
    /// Which rate-limit headers every limited response carries.
    pub headers: HeaderOptions,
    /// The body of a denial.
    pub denied_body: DeniedBody,
    /// The status of a denial; `None` is 429.
    status: Option<u16>,
}

/// The response an adapter gives (or the headers it adds to the app's own response, when `proceed`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpAnswer {
    /// True when the request goes on to the app; `headers` are then added to its response.
    pub proceed: bool,
    /// The status to answer with when the request does not pass.
    pub status: u16,
    /// Headers, in order.
    pub headers: Vec<Header>,
    /// The body's media type (empty when the request passes).
    pub content_type: &'static str,
    /// The body (empty when the request passes).
    pub body: String,
}

impl HttpOptions {
    /// The same options refusing with `status` (400 to 599) instead of 429.
    pub fn with_status(mut self, status: u16) -> Result<Self> {
        if !(400..=599).contains(&status) {
            return Err(Error::invalid_argument(
                "status_code",
                format!("expected an HTTP error status from 400 to 599, got {status}"),
            ));
        }
        self.status = Some(status);
        Ok(self)
    }

    /// The status of a denial.
    pub fn status(&self) -> u16 {
        self.status.unwrap_or(429)
    }

    /// The answer to `decision` over `rules` for the request keyed `key`, at `now_unix_ms` (read by
    /// the caller). A denial carries `Retry-After` in whole seconds, rounded up, at least 1.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use ratelock::http::HttpOptions;
    /// let limiter = ratelock::Limiter::memory();
    /// let rules = "1/minute".parse()?;
    /// limiter.hit("203.0.113.7", &rules, 1).await?;
    /// let denied = limiter.hit("203.0.113.7", &rules, 1).await?;
    /// let answer = HttpOptions::default().answer(&denied, &rules, b"203.0.113.7", 0);
    /// assert_eq!((answer.proceed, answer.status), (false, 429));
    /// assert!(answer.headers.contains(&("Retry-After", "60".to_string())));
    /// # Ok::<(), ratelock::Error>(()) }).unwrap();
    /// ```
    pub fn answer(&self, decision: &Decision, rules: &Rules, key: &[u8], now_unix_ms: u64) -> HttpAnswer {
        let mut headers = Vec::with_capacity(5);
        self.headers
            .write(decision, rules, key, now_unix_ms, &mut headers);
        if decision.allowed {
            return HttpAnswer {
                proceed: true,
                status: 200,
                headers,
                content_type: "",
                body: String::new(),
            };
        }
        let wait = ceil_seconds(decision.retry_after).max(1);
        headers.push(("Retry-After", wait.to_string()));
        // A degraded denial (the store failed, the policy said deny) names no rule: none was checked.
        let policy = rules
            .get(decision.rule_index)
            .filter(|_| !decision.degraded)
            .map(|rule| rule.to_string());
        let status = self.status();
        let over = policy
            .as_ref()
            .map_or(String::new(), |policy| format!(": over the limit of {policy}"));
        let body = match self.denied_body {
            DeniedBody::Text => format!("Too many requests{over}; retry in {wait} s.\n"),
            DeniedBody::Json => format!(
                "{{\"error\":\"rate_limited\",\"policy\":{},\"retry_after\":{wait}}}",
                policy.as_deref().map_or("null".into(), json_string)
            ),
            DeniedBody::Problem => format!(
                "{{\"type\":\"{QUOTA_EXCEEDED}\",\"title\":\"Quota exceeded\",\"status\":{status},\
                 \"detail\":{},\"violated-policies\":[{}],\"retry_after\":{wait}}}",
                json_string(&format!("Too many requests{over}; retry in {wait} s.")),
                policy.as_deref().map_or(String::new(), json_string)
            ),
        };
        self.denied(status, headers, body)
    }

    /// The answer when the limiter raised `code` (an [`Error::code`]): 503 with `Retry-After: 1` for an
    /// outage (`STORE_UNAVAILABLE`, `TIMEOUT`), which the failure policy `raise` left to the adapter;
    /// `None` for anything else, which is a bug or a misconfiguration the adapter must raise.
    ///
    /// ```
    /// use ratelock::http::HttpOptions;
    /// assert_eq!(HttpOptions::default().failure("TIMEOUT").unwrap().status, 503);
    /// assert!(HttpOptions::default().failure("PROTOCOL").is_none());
    /// ```
    pub fn failure(&self, code: &str) -> Option<HttpAnswer> {
        if !matches!(code, "STORE_UNAVAILABLE" | "TIMEOUT") {
            return None;
        }
        Some(self.refusal(
            503,
            "store_unavailable",
            "Service Unavailable",
            "The rate limiter cannot reach its store; retry shortly.",
        ))
    }

    /// The answer to a request the adapter could not key (the key function gave no key, or one
    /// longer than [`MAX_KEY_BYTES`](crate::MAX_KEY_BYTES)): 400. The reason is for the server's log,
    /// never the client.
    pub fn bad_key(&self) -> HttpAnswer {
        self.refusal(
            400,
            "invalid_key",
            "Bad Request",
            "The request has no usable rate-limit key.",
        )
    }

    /// A request turned away with `status`, in this adapter's body style.
    fn denied(&self, status: u16, headers: Vec<(&'static str, String)>, body: String) -> HttpAnswer {
        HttpAnswer {
            proceed: false,
            status,
            headers,
            content_type: self.denied_body.content_type(),
            body,
        }
    }

    fn refusal(&self, status: u16, error: &str, title: &str, detail: &str) -> HttpAnswer {
        let body = match self.denied_body {
            DeniedBody::Text => format!("{detail}\n"),
            DeniedBody::Json => format!("{{\"error\":\"{error}\"}}"),
            DeniedBody::Problem => format!(
                "{{\"type\":\"about:blank\",\"title\":\"{title}\",\"status\":{status},\"detail\":{}}}",
                json_string(detail)
            ),
        };
        let headers = if status == 503 {
            vec![("Retry-After", "1".to_string())]
        } else {
            Vec::new()
        };
        self.denied(status, headers, body)
    }
}

/// A JSON string literal of `text`.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Outcome;

    fn denied() -> Decision {
        Decision::from_outcomes(smallvec::smallvec![Outcome {
            allowed: false,
            limit: 3,
            remaining: 0,
            reset_after_us: 30_000_000,
            retry_after_us: 9_500_000,
        }])
    }

    fn answer(body: DeniedBody) -> HttpAnswer {
        let options = HttpOptions {
            denied_body: body,
            ..HttpOptions::default()
        };
        options.answer(&denied(), &"3/30s".parse().unwrap(), b"k", 0)
    }

    #[test]
    fn a_denial_has_retry_after_and_the_chosen_body() {
        let text = answer(DeniedBody::Text);
        assert_eq!((text.proceed, text.status), (false, 429));
        assert_eq!(text.headers.last().unwrap(), &("Retry-After", "10".to_string()));
        assert_eq!(
            text.body,
            "Too many requests: over the limit of 3 per 30 seconds; retry in 10 s.\n"
        );
        let json = answer(DeniedBody::Json);
        assert_eq!(
            json.body,
            r#"{"error":"rate_limited","policy":"3 per 30 seconds","retry_after":10}"#
        );
        let problem = answer(DeniedBody::Problem);
        assert_eq!(problem.content_type, "application/problem+json");
        assert!(
            problem
                .body
                .contains(r#""violated-policies":["3 per 30 seconds"]"#),
            "{}",
            problem.body
        );
        assert!(problem
            .body
            .starts_with(&format!(r#"{{"type":"{QUOTA_EXCEEDED}""#)));
    }

    #[test]
    fn outages_answer_503_and_bugs_are_left_to_raise() {
        for code in ["STORE_UNAVAILABLE", "TIMEOUT"] {
            let answer = HttpOptions::default().failure(code).unwrap();
            assert_eq!(answer.status, 503);
            assert_eq!(answer.headers, vec![("Retry-After", "1".to_string())]);
        }
        for code in ["PROTOCOL", "CONFIGURATION", "INVALID_RULE", "SOMETHING_NEW"] {
            assert!(HttpOptions::default().failure(code).is_none(), "{code}");
        }
    }

    #[test]
    fn json_strings_escape_what_json_needs() {
        assert_eq!(json_string("a\"b\\c\n"), r#""a\"b\\c\u000a""#);
    }
}
