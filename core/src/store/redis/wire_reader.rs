//! The incremental RESP reply reader of every Redis connection: bytes go in as a socket hands them
//! over, complete replies come out in order. A plain reply (an integer, a bulk string, an array of
//! them: every limit reply) that arrived whole is read in one pass; any other is framed element by
//! element as its bytes come, then parsed here when plain, else by redis-rs's `parse_redis_value`.

use redis::Value;

use super::reply::{classify, Failure};
use crate::error::{Error, Result};

/// One complete reply read off the wire, for [`Limiter::wire_answer`](crate::Limiter::wire_answer) or
/// [`Reply::into_result`].
#[derive(Debug, Clone, PartialEq)]
pub struct Reply(pub(crate) Value);

impl Reply {
    /// `Ok` for any reply but an error reply; an error reply as the store error it stands for.
    /// For the replies whose content does not matter (`AUTH`, `SELECT`, `SCRIPT LOAD`).
    ///
    /// ```
    /// let mut reader = ratelock::store::wire::ReplyReader::new();
    /// reader.push(b"+OK\r\n-WRONGPASS invalid password\r\n");
    /// assert!(reader.next_reply()?.expect("a whole reply").into_result().is_ok());
    /// let refused = reader.next_reply()?.expect("a whole reply").into_result().unwrap_err();
    /// assert!(refused.is_configuration() && refused.to_string().contains("WRONGPASS"));
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn into_result(self) -> Result<()> {
        match classify(Ok(self.0), std::time::Duration::ZERO) {
            Ok(_) => Ok(()),
            // No command whose reply is read here runs a script.
            Err(Failure::NoScript) => Err(Error::Protocol(
                "NOSCRIPT in reply to a command that runs no script".into(),
            )),
            Err(Failure::Other(err)) => Err(err),
        }
    }
}

/// Splits a stream of RESP bytes (RESP2, and the RESP3 types) into replies, across chunks of any
/// size: a frame is handed out only when all of its bytes have arrived. Work is linear in the bytes
/// read: an unfinished frame is resumed where its scan stopped, not rescanned.
///
/// ```
/// use ratelock::store::wire::ReplyReader;
/// let mut reader = ReplyReader::new();
/// reader.push(b"*2\r\n:1\r");
/// assert!(reader.next_reply()?.is_none()); // not all there yet
/// reader.push(b"\n$3\r\nabc\r\n:7\r\n");
/// assert!(reader.next_reply()?.is_some()); // the array
/// assert!(reader.next_reply()?.is_some()); // then :7
/// assert!(reader.next_reply()?.is_none());
/// # Ok::<(), ratelock::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct ReplyReader {
    buffer: Vec<u8>,
    /// Where the frame being read starts (everything before it was handed out).
    start: usize,
    /// Where the next element of that frame starts.
    cursor: usize,
    /// Elements the frame still lacks (0: no frame begun).
    missing: usize,
    /// A protocol error was met: the stream cannot be read further (close the connection).
    broken: bool,
}

impl ReplyReader {
    /// An empty reader (one per connection).
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends bytes read from the connection.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start * 2 >= self.buffer.len() {
            self.buffer.drain(..self.start);
            self.cursor -= self.start;
            self.start = 0;
        }
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete reply, `None` until all of its bytes have arrived. A protocol error means
    /// the stream is out of step: it is returned now and for every later call.
    pub fn next_reply(&mut self) -> Result<Option<Reply>> {
        if self.broken {
            return Err(protocol_error("the stream broke earlier"));
        }
        if self.missing == 0 {
            if self.start == self.buffer.len() {
                return Ok(None);
            }
            // Nearly every reply is plain and arrives whole: read in one pass. Any other (not all
            // here yet, another shape, malformed) is framed element by element below, and this is
            // not tried again for it, so the work stays linear in the bytes read.
            if let Some((value, end)) = plain(&self.buffer[self.start..]) {
                self.start += end;
                self.drop_handed_out();
                return Ok(Some(Reply(value)));
            }
            self.missing = 1;
            self.cursor = self.start;
        }
        while self.missing > 0 {
            match self.element(self.cursor) {
                Ok(Some((end, children))) => {
                    self.cursor = end;
                    self.missing = (self.missing - 1).saturating_add(children);
                }
                Ok(None) => return Ok(None),
                Err(err) => {
                    self.broken = true;
                    return Err(err);
                }
            }
        }
        let frame = &self.buffer[self.start..self.cursor];
        // Integers, bulk strings and arrays of them (every limit.lua reply) are read here; any
        // other shape (errors, RESP3 types) by redis-rs.
        let value = match plain(frame) {
            Some((value, end)) if end == frame.len() => value,
            _ => redis::parse_redis_value(frame).map_err(|err| {
                self.broken = true;
                protocol_error(err)
            })?,
        };
        self.start = self.cursor;
        self.drop_handed_out();
        Ok(Some(Reply(value)))
    }

    /// Once everything read was handed out, the buffer starts again from empty.
    fn drop_handed_out(&mut self) {
        if self.start == self.buffer.len() {
            self.buffer.clear();
            (self.start, self.cursor) = (0, 0);
        }
    }

    /// Whether a protocol error stopped the reader (the connection should be closed).
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// The element whose header starts at `at`: where it ends and how many elements it contains;
    /// `None` while some of it has not arrived.
    fn element(&self, at: usize) -> Result<Option<(usize, usize)>> {
        let Some(line_end) = find_crlf(&self.buffer, at + 1) else {
            return Ok(None);
        };
        let after_line = line_end + 2;
        let line = &self.buffer[at + 1..line_end];
        Ok(Some(match self.buffer[at] {
            b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => (after_line, 0),
            b'$' | b'!' | b'=' => match length(line)? {
                None => (after_line, 0),
                Some(len) => {
                    let end = after_line.saturating_add(len).saturating_add(2);
                    if self.buffer.len() < end {
                        return Ok(None);
                    }
                    if &self.buffer[end - 2..end] != b"\r\n" {
                        return Err(protocol_error("a bulk string does not end with CRLF"));
                    }
                    (end, 0)
                }
            },
            b'*' | b'~' | b'>' => (after_line, length(line)?.unwrap_or(0)),
            b'%' => (after_line, length(line)?.unwrap_or(0).saturating_mul(2)),
            // An attribute map comes before the value it describes: its pairs, then that value.
            b'|' => (
                after_line,
                length(line)?.unwrap_or(0).saturating_mul(2).saturating_add(1),
            ),
            other => return Err(protocol_error(format!("unknown reply type {:?}", other as char))),
        }))
    }
}

/// The RESP2 integer, bulk string or array (of those) at the start of `frame`, and where it ends;
/// `None` for any other shape, and for one not all there yet (the framing reads those). Each line is
/// read once: its number digit by digit up to its CRLF.
fn plain(frame: &[u8]) -> Option<(Value, usize)> {
    let (kind, number, after) = header(frame)?;
    match (kind, number) {
        (b':', Number::Integer(value)) => Some((Value::Int(value), after)),
        (b'$' | b'*', Number::MinusOne) => Some((Value::Nil, after)),
        (b'$', Number::Count(len)) => {
            let end = after.checked_add(len)?;
            if frame.get(end..end.checked_add(2)?)? != b"\r\n" {
                return None;
            }
            Some((Value::BulkString(frame[after..end].to_vec()), end + 2))
        }
        (b'*', Number::Count(count)) => {
            let mut items = Vec::with_capacity(count.min(1024));
            let mut at = after;
            for _ in 0..count {
                let (item, end) = plain(frame.get(at..)?)?;
                items.push(item);
                at += end;
            }
            Some((Value::Array(items), at))
        }
        _ => None,
    }
}

/// What a header line's number is: an integer reply's value, `-1` (a RESP2 null) or a length.
enum Number {
    Integer(i64),
    MinusOne,
    Count(usize),
}

/// The header line at the start of `frame`: its type byte, its number (for `:`, an optional sign and
/// digits; for `$` and `*`, at most 19 digits or exactly `-1`) and where the line ends, past its CRLF. `None` when
/// the line is not all there or holds anything else.
fn header(frame: &[u8]) -> Option<(u8, Number, usize)> {
    let (&kind, rest) = frame.split_first()?;
    let (negative, signed) = match rest.first()? {
        b'-' => (true, true),
        b'+' if kind == b':' => (false, true),
        _ => (false, false),
    };
    let first_digit = 1 + usize::from(signed);
    let mut value: i64 = 0;
    let mut at = first_digit;
    loop {
        let byte = *frame.get(at)?;
        if byte == b'\r' {
            break;
        }
        if !byte.is_ascii_digit() {
            return None;
        }
        let digit = i64::from(byte - b'0');
        value = if negative {
            value.checked_mul(10)?.checked_sub(digit)?
        } else {
            value.checked_mul(10)?.checked_add(digit)?
        };
        at += 1;
    }
    // A length or count takes at most 19 digits, as the framing's `count` reads it (leading zeros too).
    let digits = at - first_digit;
    if digits == 0 || (kind != b':' && digits > 19) || frame.get(at + 1) != Some(&b'\n') {
        return None;
    }
    let number = match kind {
        b':' => Number::Integer(value),
        _ if negative => (value == -1 && at == first_digit + 1).then_some(Number::MinusOne)?,
        _ => Number::Count(usize::try_from(value).ok()?),
    };
    Some((kind, number, at + 2))
}

/// The index of the next `\r\n` at or after `from`.
fn find_crlf(buffer: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        at += buffer.get(at..)?.iter().position(|&b| b == b'\r')?;
        if buffer.get(at + 1) == Some(&b'\n') {
            return Some(at);
        }
        at += 1;
    }
}

/// The decimal digits `line` as a count (`None` for anything else, or an overflow).
fn count(line: &[u8]) -> Option<usize> {
    if line.is_empty() || line.len() > 19 {
        return None;
    }
    line.iter().try_fold(0usize, |sum, &byte| {
        byte.is_ascii_digit().then(|| sum * 10 + usize::from(byte - b'0'))
    })
}

/// A length or count header: `None` for -1 (a RESP2 null), an error for anything else not a count.
fn length(line: &[u8]) -> Result<Option<usize>> {
    if line == b"-1" {
        return Ok(None);
    }
    count(line)
        .map(Some)
        .ok_or_else(|| protocol_error(format!("bad length {:?}", String::from_utf8_lossy(line))))
}

/// A stream out of step is a bug (ours or the server's), never an outage: no failure policy covers it.
fn protocol_error(what: impl std::fmt::Display) -> Error {
    Error::Protocol(format!("a Redis reply out of step: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replies of every shape the reader must frame, back to back.
    const STREAM: &[u8] = b"+OK\r\n-NOSCRIPT No matching script\r\n:42\r\n$5\r\nhe\r\nl\r\n$-1\r\n$0\r\n\r\n\
        *5\r\n:1\r\n:10\r\n:9\r\n:100000\r\n:0\r\n*-1\r\n*0\r\n*2\r\n*1\r\n$1\r\nx\r\n+y\r\n\
        %1\r\n+k\r\n:1\r\n_\r\n,1.5\r\n#t\r\n!3\r\nbad\r\n|1\r\n+a\r\n+b\r\n:5\r\n";

    fn all(reader: &mut ReplyReader) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(reply) = reader.next_reply().expect("well-formed") {
            out.push(reply.0);
        }
        out
    }

    fn whole() -> Vec<Value> {
        let mut reader = ReplyReader::new();
        reader.push(STREAM);
        all(&mut reader)
    }

    #[test]
    fn a_whole_stream_gives_every_reply_in_order() {
        let replies = whole();
        assert_eq!(replies.len(), 16);
        assert_eq!(replies[2], Value::Int(42));
        assert_eq!(replies[3], Value::BulkString(b"he\r\nl".to_vec()));
        assert_eq!(replies[4], Value::Nil);
        assert!(matches!(&replies[6], Value::Array(items) if items.len() == 5));
        assert!(matches!(&replies[1], Value::ServerError(err) if err.code() == "NOSCRIPT"));
    }

    #[test]
    fn split_at_every_byte_boundary_gives_the_same_replies() {
        let want = whole();
        for cut in 0..=STREAM.len() {
            let mut reader = ReplyReader::new();
            reader.push(&STREAM[..cut]);
            let mut got = all(&mut reader);
            reader.push(&STREAM[cut..]);
            got.extend(all(&mut reader));
            assert_eq!(got, want, "split at byte {cut}");
        }
    }

    #[test]
    fn one_byte_at_a_time_gives_the_same_replies() {
        let mut reader = ReplyReader::new();
        let mut got = Vec::new();
        for byte in STREAM {
            reader.push(std::slice::from_ref(byte));
            got.extend(all(&mut reader));
        }
        assert_eq!(got, whole());
        assert!(reader.buffer.is_empty(), "everything handed out is dropped");
    }

    #[test]
    fn the_fast_path_reads_what_redis_rs_reads() {
        for frame in [
            &b":42\r\n"[..],
            b":-7\r\n",
            b"$5\r\nhe\r\nl\r\n",
            b"$-1\r\n",
            b"$0\r\n\r\n",
            b"*5\r\n:1\r\n:10\r\n:9\r\n:100000\r\n:0\r\n",
            b"*-1\r\n",
            b"*0\r\n",
            b"*2\r\n*1\r\n$1\r\nx\r\n:3\r\n",
        ] {
            let (value, end) = plain(frame).expect("a plain frame");
            assert_eq!(end, frame.len());
            assert_eq!(value, redis::parse_redis_value(frame).unwrap());
        }
        assert!(
            plain(b"*2\r\n:1\r\n+y\r\n").is_none(),
            "other shapes go to redis-rs"
        );
    }

    #[test]
    fn integers_and_counts_read_as_redis_rs_reads_them() {
        for line in [
            "0",
            "7",
            "-7",
            "+7",
            "9223372036854775807",
            "-9223372036854775808",
        ] {
            let frame = format!(":{line}\r\n");
            let (value, _) = plain(frame.as_bytes()).expect("an integer");
            assert_eq!(
                value,
                redis::parse_redis_value(frame.as_bytes()).unwrap(),
                "{line}"
            );
        }
        for bad in ["", "-", "1x", " 1", "9223372036854775808", "-9223372036854775809"] {
            assert_eq!(plain(format!(":{bad}\r\n").as_bytes()), None, "{bad:?}");
        }
        for (frame, plain_reads_it) in [
            (&b"$+1\r\nx\r\n"[..], false),
            (b"*-01\r\n", false),
            (b"*-2\r\n", false),
            (b"$1\r\nxy\r\n", false),
            (b"$1\r\nx\r", false),
            (b"$1\r\nx\r\n", true),
            // Found by the resp_reader fuzz target: a count of 105 zeros was an empty array when read
            // whole but a protocol error when framed (the framing takes at most 19 digits).
            (b"*0000000000000000000\r\n", true),
            (b"*00000000000000000000\r\n", false),
        ] {
            assert_eq!(
                plain(frame).is_some(),
                plain_reads_it,
                "{:?}",
                String::from_utf8_lossy(frame)
            );
        }
        assert_eq!(count(b"123"), Some(123));
        for bad in ["", "-1", "+1", "12a", "99999999999999999999"] {
            assert_eq!(count(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(find_crlf(b"ab\rc\r\n", 0), Some(4), "a lone CR is not a line end");
    }

    #[test]
    fn garbage_breaks_the_reader_for_good() {
        let mut reader = ReplyReader::new();
        reader.push(b":1\r\n?what\r\n");
        assert_eq!(reader.next_reply().unwrap(), Some(Reply(Value::Int(1))));
        let err = reader.next_reply().unwrap_err();
        assert!(
            err.is_protocol() && err.to_string().contains("out of step"),
            "{err}"
        );
        assert!(reader.is_broken());
        reader.push(b":2\r\n");
        assert!(reader.next_reply().is_err());
    }

    /// Found by the `resp_reader` fuzz target: a reply type the reader does not know came back as an
    /// outage (which a failure policy would have let through) instead of a protocol error.
    #[test]
    fn an_unknown_reply_type_is_a_protocol_error_not_an_outage() {
        let mut reader = ReplyReader::new();
        reader.push(b"*2\r\nOK\r\n-ERR x\r\n");
        let err = reader.next_reply().unwrap_err();
        assert!(err.is_protocol() && !err.is_store_failure(), "{err}");
    }

    #[test]
    fn a_bad_length_or_missing_crlf_is_a_protocol_error() {
        for bad in [&b"$x\r\n"[..], b"*-2\r\n", b"$2\r\nabcd\r\n"] {
            let mut reader = ReplyReader::new();
            reader.push(bad);
            let err = reader.next_reply().unwrap_err();
            assert!(err.is_protocol(), "{:?}: {err}", String::from_utf8_lossy(bad));
        }
    }
}
