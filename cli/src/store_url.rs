//! The store as the command line takes and shows it: a shared server only (an in-process memory store
//! would be a store of this process alone), and never a password in what is printed.

use crate::exit::Exit;

/// `Ok` for a store that talks to a server (`does_io`, asked of the store the URL opened: every
/// spelling of the memory store, an empty URL included, is refused alike), else the usage error that
/// says why: two `lock run`s would each hold "the" lock, and every `limit hit` would start full.
pub fn require_shared(does_io: bool, url: &str) -> Result<(), Exit> {
    if does_io {
        return Ok(());
    }
    Err(Exit::Usage(format!(
        "{:?} is a store inside this process alone: give the URL of the Redis server the services share (redis://, rediss://, redis+cluster://, redis+sentinel://, ...)",
        shown(url)
    )))
}

/// A failure met while opening (or first using) the store of `url`, naming the server: "store
/// unavailable: connecting: Connection refused" did not say which one. Bad input stays a usage error.
pub fn failed_at(url: &str) -> impl Fn(ratelock::Error) -> Exit + '_ {
    move |err| naming(url, Exit::from(err))
}

/// `exit`, a store failure's message led by the (shown) URL of the server it met.
pub fn naming(url: &str, exit: Exit) -> Exit {
    match exit {
        Exit::Failed(why) => Exit::Failed(format!("{}: {why}", shown(url))),
        other => other,
    }
}

/// `url` with every password in it replaced by `***`: the user part's (`user:password@`) and the
/// `pass` or `password` query parameter's (unix-socket URLs), for output and error messages.
///
/// ```ignore
/// assert_eq!(shown("redis://app:s3cret@db:6379/0"), "redis://app:***@db:6379/0");
/// ```
pub fn shown(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = match user_part_end(rest).map(|at| (at, rest[..at].split_once(':'))) {
        Some((at, Some((name, _password)))) => format!("{name}:***@{}", &rest[at + 1..]),
        // A user name alone is no secret.
        _ => rest.to_owned(),
    };
    let mut shown = if scheme.is_empty() {
        String::new()
    } else {
        format!("{scheme}://")
    };
    let (address, query) = match rest.split_once('?') {
        Some((address, query)) => (address, Some(query)),
        None => (rest.as_str(), None),
    };
    shown.push_str(address);
    if let Some(query) = query {
        let masked: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) if name == "pass" || name == "password" => format!("{name}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        shown.push('?');
        shown.push_str(&masked.join("&"));
    }
    shown
}

/// Where the user part of `rest` (a URL after its `scheme://`) ends: the last '@' that is not in the
/// query (a password may hold '@', '/' or '?' too; a query's `password=p@ss` is no user part).
fn user_part_end(rest: &str) -> Option<usize> {
    rest.match_indices('@').map(|(at, _)| at).rev().find(|&at| {
        let before = &rest[..at];
        !before
            .find('?')
            .is_some_and(|query| before[query..].contains('='))
    })
}

/// `text` (an error message, which may quote the URL it was given) with every URL in it `shown`.
pub fn masked(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(found) = rest.find("://") {
        let start = rest[..found]
            .char_indices()
            .rev()
            .find(|&(_, c)| !(c.is_ascii_alphanumeric() || "+-.".contains(c)))
            .map_or(0, |(at, c)| at + c.len_utf8());
        // The URL ends at a space or a quote; an escaped quote (`\"` in a quoted URL) is part of it.
        let bytes = rest.as_bytes();
        let end = (found..rest.len())
            .find(|&at| {
                let c = bytes[at];
                c.is_ascii_whitespace() || (b"\"'`".contains(&c) && (at == 0 || bytes[at - 1] != b'\\'))
            })
            .unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        out.push_str(&shown(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(shown("redis://app:s3cret@db:6379/0"), "redis://app:***@db:6379/0");
        assert_eq!(shown("rediss://:p@ss@db/"), "rediss://:***@db/");
        assert_eq!(shown("redis://app@db"), "redis://app@db");
        assert_eq!(shown("redis://db:6379/"), "redis://db:6379/");
        assert_eq!(
            shown("redis+sentinel://u:pw@s1,s2/mymaster"),
            "redis+sentinel://u:***@s1,s2/mymaster"
        );
        assert_eq!(
            shown("redis+unix:///run/redis.sock?db=1&user=app&pass=s3cret"),
            "redis+unix:///run/redis.sock?db=1&user=app&pass=***"
        );
        assert_eq!(shown("unix:///s.sock?password=x"), "unix:///s.sock?password=***");
        // A password holding '/' or '?' was shown whole, or in part.
        assert_eq!(shown("redis://app:pa/ss@db:1/"), "redis://app:***@db:1/");
        assert_eq!(shown("redis://app:pa?ss@db:1/"), "redis://app:***@db:1/");
        // An '@' in the query's password is no user part.
        assert_eq!(
            shown("redis://db:6379/0?password=p@ss"),
            "redis://db:6379/0?password=***"
        );
    }

    #[test]
    fn every_url_quoted_in_a_message_is_shown_without_its_password() {
        assert_eq!(
            masked(r#"unsupported URL "reds://app:s3cret@h:1/" (expected redis://)"#),
            r#"unsupported URL "reds://app:***@h:1/" (expected redis://)"#
        );
        assert_eq!(
            masked("a: redis://u:p@x/ and b: rediss://v:q@y/"),
            "a: redis://u:***@x/ and b: rediss://v:***@y/"
        );
        assert_eq!(masked("no address here"), "no address here");
        assert_eq!(masked("«redis://u:p@x/»"), "«redis://u:***@x/»");
        // A quote inside the password, escaped as Debug quotes it.
        assert_eq!(masked(r#""redis://app:ab\"cd@h/""#), r#""redis://app:***@h/""#);
    }

    #[test]
    fn only_a_store_that_talks_to_a_server_is_taken() {
        assert!(matches!(require_shared(false, ""), Err(Exit::Usage(_))));
        assert!(require_shared(true, "redis://127.0.0.1/").is_ok());
    }
}
