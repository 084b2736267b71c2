//! Bytes from a socket, in any chunks: the RESP reader hands out whole replies or a typed protocol
//! error, never panics, never spins (each reply consumes input), and reads the same replies whatever
//! the chunks (one push of every byte, or pieces of 1 to 16 bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ratelock::store::wire::{Reply, ReplyReader};

/// Every reply the reader hands out for `bytes` pushed in pieces of `chunk`, and whether it broke.
fn read_all(bytes: &[u8], chunk: usize) -> (Vec<Reply>, bool) {
    let mut reader = ReplyReader::new();
    let mut replies = Vec::new();
    for piece in bytes.chunks(chunk) {
        reader.push(piece);
        for _ in 0..=bytes.len() {
            match reader.next_reply() {
                Ok(Some(reply)) => replies.push(reply),
                Ok(None) => break,
                Err(err) => {
                    assert!(err.is_protocol(), "{err}");
                    assert!(reader.is_broken());
                    return (replies, true);
                }
            }
        }
    }
    (replies, false)
}

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, bytes)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(chunk % 16) + 1;
    let (pieces, broke) = read_all(bytes, chunk);
    let (whole, whole_broke) = read_all(bytes, bytes.len().max(1));
    // Pieces may stop short of a reply still missing bytes; what both read is the same, and a stream
    // that breaks in pieces breaks whole.
    assert_eq!(&whole[..pieces.len().min(whole.len())], &pieces[..pieces.len().min(whole.len())]);
    assert_eq!(pieces.len(), whole.len(), "the same replies whatever the chunks");
    assert_eq!(broke, whole_broke);
    for reply in pieces {
        let _ = reply.into_result();
    }
});
