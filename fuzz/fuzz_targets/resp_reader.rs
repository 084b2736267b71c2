//! Bytes from a socket, in any chunks: the RESP reader hands out whole replies or a typed protocol
//! error, never panics, and never spins (each reply consumes input).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ratelock::store::wire::ReplyReader;

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, bytes)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(chunk % 16) + 1;
    let mut reader = ReplyReader::new();
    for piece in bytes.chunks(chunk) {
        reader.push(piece);
        for _ in 0..=bytes.len() {
            match reader.next_reply() {
                Ok(Some(reply)) => {
                    let _ = reply.into_result();
                }
                Ok(None) => break,
                Err(err) => {
                    assert!(err.is_protocol(), "{err}");
                    assert!(reader.is_broken());
                    return;
                }
            }
        }
    }
});
