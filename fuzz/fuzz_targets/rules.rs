//! Rule text from anywhere: parsing gives rules or a typed error, never a panic; rules that parse print
//! as text that parses back to the same rules.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ratelock::Rules;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match text.parse::<Rules>() {
        Ok(rules) => {
            let printed = rules.to_string();
            let again: Rules = printed.parse().expect("printed rules parse again");
            assert_eq!(again.to_string(), printed, "printing is stable");
        }
        Err(err) => assert!(err.is_invalid_rule() || err.is_invalid_argument(), "{err}"),
    }
});
