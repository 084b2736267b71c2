//! The adapter core's shared vectors (`tests/vectors/http/*.json`, format in
//! `tests/vectors/http/README.md`): what every adapter answers for a decision, an outage or an unusable
//! key, which key a client address becomes, and how a scope joins a key. The Rust core, Python, Node
//! and WebAssembly run the same files.

use std::path::PathBuf;
use std::time::Duration;

use ratelock::http::{
    scoped_key, ClientAddress, DeniedBody, HeaderOptions, HttpAnswer, HttpOptions, TrustedProxies,
};
use ratelock::{Decision, Rules};
use serde::{Deserialize, Serialize};

/// The directory of the adapter core's vector files.
pub fn http_vectors_dir() -> PathBuf {
    crate::vectors::vectors_dir().join("http")
}

/// Reads one file of the adapter core's vectors.
pub fn load<T: for<'de> Deserialize<'de>>(name: &str) -> T {
    let path = http_vectors_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `answers.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnswerFile {
    pub description: String,
    pub cases: Vec<AnswerCase>,
}

/// One answer an adapter must give.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnswerCase {
    pub name: String,
    #[serde(default)]
    pub options: OptionsSpec,
    /// `decision`, `failure` (with `error_code`) or `bad_key`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<DecisionSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// `null` when the adapter must raise (a failure that is not an outage).
    pub expect: Option<ExpectedAnswer>,
}

/// An adapter's answer options, spelled as every binding spells them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OptionsSpec {
    /// A draft's name, `true` (the latest) or `false` (none).
    pub standard_headers: serde_json::Value,
    pub legacy_headers: bool,
    pub partition_key: bool,
    pub denied_body: String,
    pub status_code: u16,
}

impl Default for OptionsSpec {
    fn default() -> Self {
        OptionsSpec {
            standard_headers: serde_json::Value::String("draft-11".into()),
            legacy_headers: false,
            partition_key: false,
            denied_body: "text".into(),
            status_code: 429,
        }
    }
}

impl OptionsSpec {
    /// The core's options.
    pub fn options(&self) -> HttpOptions {
        let standard = match &self.standard_headers {
            serde_json::Value::Bool(false) => None,
            serde_json::Value::Bool(true) => Some("latest".parse().unwrap()),
            serde_json::Value::String(style) => Some(style.parse().unwrap()),
            other => panic!("standard_headers {other}"),
        };
        let mut options = HttpOptions::default().with_status(self.status_code).unwrap();
        options.headers = HeaderOptions::default();
        options.headers.standard = standard;
        options.headers.legacy = self.legacy_headers;
        options.headers.partition_key = self.partition_key;
        options.denied_body = self.denied_body.parse::<DeniedBody>().unwrap();
        options
    }
}

/// A decision's figures, durations in µs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionSpec {
    pub allowed: bool,
    pub limit: u64,
    pub remaining: u64,
    pub reset_after_us: u64,
    pub retry_after_us: u64,
    pub rule_index: usize,
    #[serde(default)]
    pub degraded: bool,
}

impl DecisionSpec {
    pub fn decision(&self) -> Decision {
        Decision::summary(
            self.allowed,
            self.limit,
            self.remaining,
            Duration::from_micros(self.reset_after_us),
            Duration::from_micros(self.retry_after_us),
            self.rule_index,
            self.degraded,
        )
    }
}

/// What the adapter answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedAnswer {
    pub proceed: bool,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub content_type: String,
    pub body: String,
}

impl From<HttpAnswer> for ExpectedAnswer {
    fn from(answer: HttpAnswer) -> Self {
        ExpectedAnswer {
            proceed: answer.proceed,
            status: answer.status,
            headers: answer
                .headers
                .into_iter()
                .map(|(n, v)| (n.to_owned(), v))
                .collect(),
            content_type: answer.content_type.to_owned(),
            body: answer.body,
        }
    }
}

/// The core's answer to one case.
pub fn answer(case: &AnswerCase) -> Option<ExpectedAnswer> {
    let options = case.options.options();
    match case.kind.as_str() {
        "decision" => {
            let rules: Rules = case.rules.as_deref().expect("rules").parse().unwrap();
            let decision = case.decision.as_ref().expect("decision").decision();
            let key = case.key.as_deref().unwrap_or("k");
            Some(
                options
                    .answer(&decision, &rules, key.as_bytes(), case.now_ms.unwrap_or(0))
                    .into(),
            )
        }
        "failure" => options
            .failure(case.error_code.as_deref().expect("error_code"))
            .map(Into::into),
        "bad_key" => Some(options.bad_key().into()),
        other => panic!("unknown kind {other:?} in {}", case.name),
    }
}

/// `client_keys.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientKeyFile {
    pub description: String,
    pub cases: Vec<ClientKeyCase>,
}

/// One request's connection and proxy header, and the key it must get.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientKeyCase {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv6_subnet: Option<u8>,
    /// `null` (no proxy trusted), a hop count, or a list of networks.
    #[serde(default)]
    pub trusted_proxies: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_header: Option<String>,
    pub peer: String,
    #[serde(default)]
    pub forwarded: Option<String>,
    pub expect: String,
}

impl ClientKeyCase {
    pub fn client_address(&self) -> ClientAddress {
        let mut address = ClientAddress::default();
        if let Some(bits) = self.ipv6_subnet {
            address = address.with_ipv6_subnet(bits).unwrap();
        }
        if let Some(header) = &self.proxy_header {
            address = address.with_header(header.parse().unwrap());
        }
        match &self.trusted_proxies {
            serde_json::Value::Null => address,
            serde_json::Value::Number(hops) => {
                address.with_trusted(TrustedProxies::Hops(hops.as_u64().unwrap() as u32))
            }
            serde_json::Value::Array(networks) => address
                .trust_networks(networks.iter().map(|n| n.as_str().unwrap()))
                .unwrap(),
            other => panic!("trusted_proxies {other}"),
        }
    }

    pub fn key(&self) -> String {
        self.client_address().key(&self.peer, self.forwarded.as_deref())
    }
}

/// `scoped_keys.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScopedKeyFile {
    pub description: String,
    pub cases: Vec<ScopedKeyCase>,
}

/// A scope, a key and their joined form.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScopedKeyCase {
    pub scope: String,
    pub key: String,
    pub expect: String,
}

impl ScopedKeyCase {
    pub fn joined(&self) -> String {
        String::from_utf8(scoped_key(&self.scope, self.key.as_bytes()).unwrap()).unwrap()
    }
}
