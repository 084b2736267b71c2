//! A RATELOCK command carries the client's call tag as one argument past its script's contract, and
//! answers with it exactly as the scripts' call-tag envelope does (an array reply with the tag
//! appended, any other as `[tag, reply]`); an error is never wrapped, and a call without the tag is
//! answered as the script alone would answer it.

mod common;

use common::{connect, run, start_server, tagged};
use redis::Value;

fn limit_call(key: &str, tag: Option<&str>) -> redis::Cmd {
    let mut cmd = redis::cmd("RATELOCK.LIMIT");
    cmd.arg(2)
        .arg(key)
        .arg(format!("{key}:standing"))
        .arg("hit")
        .arg("")
        .arg(1)
        .arg("g")
        .arg(5)
        .arg(1_000_000)
        .arg(5)
        .arg(0);
    if let Some(tag) = tag {
        cmd.arg(tag);
    }
    cmd
}

#[test]
fn a_tagged_call_is_answered_with_its_tag() {
    let server = start_server();
    let mut con = connect(&server);
    let plain = run(&mut con, &limit_call("{a}:1", None)).unwrap();
    let Value::Array(ref figures) = plain else {
        panic!("untagged reply {plain:?}")
    };
    // The reason (0: the rules decided), then the rule's five figures.
    assert_eq!(figures.len(), 6, "{plain:?}");
    assert_eq!(figures[0], Value::Int(0));
    assert_eq!(figures[1], Value::Int(1));

    let answered = run(&mut con, &limit_call("{a}:2", Some("90071992547"))).unwrap();
    let Value::Array(ref parts) = answered else {
        panic!("tagged reply {answered:?}")
    };
    // The tag appended: the untagged reply's six items, then the tag.
    assert_eq!(parts.len(), 7, "{answered:?}");
    assert_eq!(parts[6], Value::BulkString(b"90071992547".to_vec()));
    assert_eq!(
        answered,
        tagged("90071992547", plain),
        "the tagged reply is the untagged one, tag appended"
    );
}

#[test]
fn an_error_is_never_wrapped_in_the_tag() {
    let server = start_server();
    let mut con = connect(&server);
    let mut bad = redis::cmd("RATELOCK.LIMIT");
    bad.arg(2)
        .arg("{a}:1")
        .arg("{a}:1:standing")
        .arg("hit")
        .arg("")
        .arg(0)
        .arg("g")
        .arg(5)
        .arg(1_000_000)
        .arg(5)
        .arg(0)
        .arg("7");
    let err = run(&mut con, &bad).unwrap_err();
    assert!(err.contains("cost must be an integer"), "{err}");
}
