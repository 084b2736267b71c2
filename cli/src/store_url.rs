//! The store URL as the command line takes and shows it: a shared server only (an in-process memory
//! store would be a store of this process alone), and never its password in what is printed.

use crate::exit::Exit;

/// `url`, or a usage error when it names no shared server (`memory://`): two `lock run`s would each
/// hold "the" lock, and every `limit hit` would start from a full bucket.
pub fn shared(url: &str) -> Result<&str, Exit> {
    if url.starts_with("memory:") {
        return Err(Exit::Usage(format!(
            "{url:?} is a store inside this process alone: give the URL of the Redis server the services share (redis://, rediss://, redis+cluster://, redis+sentinel://, ...)"
        )));
    }
    Ok(url)
}

/// `url` with the password of its user part (`user:password@`) replaced by `***`, for output and
/// error messages.
///
/// ```ignore
/// assert_eq!(shown("redis://app:s3cret@db:6379/0"), "redis://app:***@db:6379/0");
/// ```
pub fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    // The user part ends at the last '@' before the path (a password may hold '@' too).
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_owned();
    };
    let user = &rest[..at];
    match user.split_once(':') {
        Some((name, _password)) => format!("{scheme}://{name}:***@{}", &rest[at + 1..]),
        // A user name alone is no secret.
        None => url.to_owned(),
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
    }

    #[test]
    fn memory_is_refused() {
        assert!(matches!(shared("memory://"), Err(Exit::Usage(_))));
        assert_eq!(shared("redis://127.0.0.1/").ok(), Some("redis://127.0.0.1/"));
    }
}
