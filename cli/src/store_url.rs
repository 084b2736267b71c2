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
    let (address, query) = match url.split_once('?') {
        Some((address, query)) => (address, Some(query)),
        None => (url, None),
    };
    let mut shown = without_user_password(address);
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

fn without_user_password(address: &str) -> String {
    let Some((scheme, rest)) = address.split_once("://") else {
        return address.to_owned();
    };
    // The user part ends at the last '@' before the path (a password may hold '@' too).
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return address.to_owned();
    };
    match rest[..at].split_once(':') {
        Some((name, _password)) => format!("{scheme}://{name}:***@{}", &rest[at + 1..]),
        // A user name alone is no secret.
        None => address.to_owned(),
    }
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
    }

    #[test]
    fn only_a_store_that_talks_to_a_server_is_taken() {
        assert!(matches!(require_shared(false, ""), Err(Exit::Usage(_))));
        assert!(require_shared(true, "redis://127.0.0.1/").is_ok());
    }
}
