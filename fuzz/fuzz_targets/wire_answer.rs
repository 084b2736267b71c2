//! Any reply to a limiter's wire call, including another call's and malformed ones: the limiter answers
//! a decision, "no script", or a typed error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ratelock::store::wire::{ReplyReader, WireCall};
use ratelock::Limiter;

fuzz_target!(|data: &[u8]| {
    let limiter = Limiter::memory();
    let rules = limiter
        .rules("10/second; 100/minute using sliding_log")
        .expect("valid rules");
    let command = limiter
        .wire_command(b"user:42", &rules, 1, None, true)
        .expect("a command");
    let call = WireCall {
        key: b"user:42",
        rules: &rules,
        cost: 1,
        spend: true,
    };
    let mut reader = ReplyReader::new();
    reader.push(data);
    for _ in 0..=data.len() {
        match reader.next_reply() {
            Ok(Some(reply)) => {
                let _ = limiter.wire_answer(reply, &command, &call, data.first() == Some(&b'r'));
            }
            Ok(None) | Err(_) => break,
        }
    }
});
