//! The adapter core's shared vectors against the Rust core: every answer, client key and scoped key.

use ratelock_testkit::http_vectors::{answer, load, AnswerFile, ClientKeyFile, ScopedKeyFile};

#[test]
fn answers_match_the_vectors() {
    let file: AnswerFile = load("answers.json");
    assert!(file.cases.len() >= 40);
    for case in &file.cases {
        assert_eq!(answer(case), case.expect, "{}", case.name);
    }
}

#[test]
fn client_keys_match_the_vectors() {
    let file: ClientKeyFile = load("client_keys.json");
    for case in &file.cases {
        assert_eq!(case.key(), case.expect, "{}", case.name);
    }
}

#[test]
fn scoped_keys_match_the_vectors() {
    let file: ScopedKeyFile = load("scoped_keys.json");
    for case in &file.cases {
        assert_eq!(case.joined(), case.expect, "{}:{}", case.scope, case.key);
    }
}
