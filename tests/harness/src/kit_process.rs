//! The protocol of the test kit's processes for drivers in other languages (`fault_proxy`,
//! `sentinel_group`): one line saying what is ready, then one command per stdin line, each answered
//! `ok` once done (`unknown command ...` for one the process does not know), until stdin closes.

use std::io::{BufRead, Write};

/// Prints `ready`, then hands each command's words to `run`, which answers whether it knew the
/// command. Returns when stdin closes (the caller then stops what it started).
pub fn serve(ready: &str, mut run: impl FnMut(&[&str]) -> bool) {
    let mut out = std::io::stdout();
    writeln!(out, "{ready}").unwrap();
    out.flush().unwrap();
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap_or_default();
        let words: Vec<&str> = line.split_whitespace().collect();
        if run(&words) {
            writeln!(out, "ok").unwrap();
        } else {
            writeln!(out, "unknown command {line:?}").unwrap();
        }
        out.flush().unwrap();
    }
}
