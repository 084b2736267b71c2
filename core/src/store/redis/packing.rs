//! A command's RESP bytes, written in one pass into a buffer sized once: the bytes every Redis path
//! sends (the pipelined connection, the blocking lane, the wire path), and a script call written
//! straight onto another route (`FCALL`, the module's command) with no second command built first.

use redis::{Arg, Cmd};

use super::script::LuaScript;
use super::server_code::Route;

/// `cmd` as RESP bytes (what redis-rs's `get_packed_command` gives, written with less work).
pub(crate) fn packed(cmd: &Cmd) -> Vec<u8> {
    let mut out = Vec::new();
    write(cmd, 0, &[], &mut out);
    out
}

/// Appends `cmd`'s RESP bytes to `out`.
pub(crate) fn write_command(cmd: &Cmd, out: &mut Vec<u8>) {
    write(cmd, 0, &[], out);
}

/// Appends `cmd`, a script call (`EVALSHA <sha> …`), as `route` sends it: its arguments after the
/// script's identity behind the route's own (the module's command, or `FCALL <function>`).
pub(crate) fn write_call_on(route: Route, script: &LuaScript, cmd: &Cmd, out: &mut Vec<u8>) {
    write(cmd, 2, route_head(route, script).as_slice(), out)
}

/// The arguments that name what a script call runs on a route: the module's command, `FCALL
/// <function>`, or `EVALSHA <sha>` (also for a script the module does not serve).
pub(crate) fn route_head(route: Route, script: &LuaScript) -> RouteHead<'_> {
    match (route, script.module_command) {
        (Route::Module, Some(name)) => RouteHead([name.as_bytes(), b""], 1),
        (Route::Function, _) => RouteHead([b"FCALL", script.function().as_bytes()], 2),
        _ => RouteHead([b"EVALSHA", script.sha.as_bytes()], 2),
    }
}

/// One or two arguments (see [`route_head`]).
pub(crate) struct RouteHead<'s>([&'s [u8]; 2], usize);

impl<'s> RouteHead<'s> {
    pub(crate) fn as_slice(&self) -> &[&'s [u8]] {
        &self.0[..self.1]
    }
}

/// Appends `head`, then `cmd`'s arguments from the `skip`th on, as one RESP command.
fn write(cmd: &Cmd, skip: usize, head: &[&[u8]], out: &mut Vec<u8>) {
    let args = cmd.args_iter();
    let count = head.len() + args.len().saturating_sub(skip);
    // Each argument's `$<len>\r\n…\r\n` framing is at most 25 bytes beside its own.
    let bytes = |arg: Arg<&[u8]>| match arg {
        Arg::Simple(bytes) => bytes.len(),
        _ => 0,
    };
    let head_bytes: usize = head.iter().map(|arg| arg.len()).sum();
    let arg_bytes: usize = args.clone().skip(skip).map(bytes).sum();
    out.reserve(16 + head_bytes + arg_bytes + count * 25);
    write_array_header(count, out);
    for &arg in head {
        write_bulk(arg, out);
    }
    for arg in args.skip(skip) {
        match arg {
            Arg::Simple(bytes) => write_bulk(bytes, out),
            // No command ratelock sends holds a SCAN cursor: an empty argument keeps the count true.
            _ => write_bulk(b"", out),
        }
    }
}

/// Appends an array's header: `*<count>\r\n`.
pub(crate) fn write_array_header(count: usize, out: &mut Vec<u8>) {
    out.push(b'*');
    write_decimal(count, out);
    out.extend_from_slice(b"\r\n");
}

/// Appends one bulk string: `$<len>\r\n<bytes>\r\n`.
#[inline]
pub(crate) fn write_bulk(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'$');
    write_decimal(bytes.len(), out);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// Appends `value` in decimal.
#[inline]
pub(crate) fn write_decimal(value: usize, out: &mut Vec<u8>) {
    if value < 10 {
        out.push(b'0' + value as u8);
        return;
    }
    let mut digits = [0u8; 20];
    out.extend_from_slice(decimal(value as u64, &mut digits));
}

/// Appends one number as a bulk string: `$<len>\r\n<digits>\r\n`, a `-` first when negative. The
/// whole frame is made on the stack and appended in one copy: a call writes about seven numbers, and
/// five appends each cost more than the digits.
pub(crate) fn write_bulk_number(value: i128, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let number = decimal(value.unsigned_abs() as u64, &mut digits);
    let negative = value < 0;
    let len = number.len() + usize::from(negative);
    // `$`, the length (at most 21: two digits), CRLF, the sign and at most 20 digits, CRLF.
    let mut frame = [0u8; 28];
    frame[0] = b'$';
    let mut at = 1;
    if len >= 10 {
        frame[at] = b'0' + (len / 10) as u8;
        at += 1;
    }
    frame[at] = b'0' + (len % 10) as u8;
    frame[at + 1..at + 3].copy_from_slice(b"\r\n");
    at += 3;
    if negative {
        frame[at] = b'-';
        at += 1;
    }
    frame[at..at + number.len()].copy_from_slice(number);
    at += number.len();
    frame[at..at + 2].copy_from_slice(b"\r\n");
    out.extend_from_slice(&frame[..at + 2]);
}

/// The digit pairs `00` to `99`, for writing a decimal two digits at a time.
const DIGIT_PAIRS: [u8; 200] = {
    let mut pairs = [0u8; 200];
    let mut n = 0;
    while n < 100 {
        pairs[2 * n] = b'0' + (n / 10) as u8;
        pairs[2 * n + 1] = b'0' + (n % 10) as u8;
        n += 1;
    }
    pairs
};

/// `value` in decimal, at the end of `digits` (room for 20 digits), written two digits at a time.
fn decimal(mut value: u64, digits: &mut [u8]) -> &[u8] {
    let mut start = digits.len();
    while value >= 100 {
        let pair = (value % 100) as usize * 2;
        value /= 100;
        start -= 2;
        digits[start..start + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if value >= 10 {
        let pair = value as usize * 2;
        start -= 2;
        digits[start..start + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        start -= 1;
        digits[start] = b'0' + value as u8;
    }
    &digits[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_read_as_rust_writes_them() {
        let mut values = vec![0, 9, 10, 11, 99, 100, 101, 999, 1_000, u64::MAX, u64::MAX - 1];
        values.extend((0..20).map(|power| 10u64.pow(power)));
        values.extend((1..20).map(|power| 10u64.pow(power) - 1));
        values.extend((0..2_000).map(|n| n * 7_919));
        for value in values {
            let mut digits = [0u8; 20];
            assert_eq!(decimal(value, &mut digits), value.to_string().as_bytes());
        }
    }

    #[test]
    fn a_bulk_number_is_its_text_as_a_bulk_string() {
        let mut values: Vec<i128> = vec![
            0,
            1,
            -1,
            9,
            -9,
            10,
            -10,
            99,
            100,
            i128::from(i64::MIN),
            i128::from(u64::MAX),
        ];
        values.extend((0..20).map(|power| i128::from(10u64.pow(power))));
        values.extend((1..20).map(|power| -i128::from(10u64.pow(power)) + 1));
        for value in values {
            let (mut framed, mut expected) = (b"before".to_vec(), b"before".to_vec());
            write_bulk_number(value, &mut framed);
            write_bulk(value.to_string().as_bytes(), &mut expected);
            assert_eq!(
                String::from_utf8_lossy(&framed),
                String::from_utf8_lossy(&expected),
                "{value}"
            );
        }
    }

    use crate::store::redis::script::LIMIT;
    use crate::store::redis::server_code::call_for;

    fn evalsha() -> Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&LIMIT.sha)
            .arg(3)
            .arg(b"k\r\n\0".as_slice())
            .arg("")
            .arg(u64::MAX);
        cmd
    }

    #[test]
    fn the_bytes_are_redis_rs_own() {
        let cmd = evalsha();
        assert_eq!(packed(&cmd), cmd.get_packed_command());
        let mut out = b"before".to_vec();
        write_command(&cmd, &mut out);
        assert_eq!(out[6..], cmd.get_packed_command()[..]);
    }

    #[test]
    fn a_call_on_each_route_is_the_routes_command() {
        let cmd = evalsha();
        for route in [Route::Module, Route::Function, Route::Script] {
            let mut out = Vec::new();
            write_call_on(route, &LIMIT, &cmd, &mut out);
            assert_eq!(
                out,
                call_for(route, &LIMIT, &cmd).get_packed_command(),
                "{route:?}"
            );
        }
    }
}
