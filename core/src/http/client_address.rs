//! The default rate-limit key of an HTTP request: the client's address. IPv6 addresses are grouped by
//! network (a /56 by default, since one subscriber is usually handed a whole prefix), IPv4-mapped IPv6
//! addresses are folded to IPv4, and proxy headers are read only through proxies the user trusts.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::excerpt;

/// The IPv6 prefix length that groups addresses into one key unless configured otherwise.
pub const DEFAULT_IPV6_SUBNET: u8 = 56;

/// Which header a trusted proxy writes the client's address into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ProxyHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2` (the common one).
    #[default]
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=client, for=proxy1` (only its `for=` parameters are read).
    Forwarded,
}

impl ProxyHeader {
    /// The header's name in lower case, as frameworks that lower-case names store it.
    pub fn name(self) -> &'static str {
        match self {
            ProxyHeader::XForwardedFor => "x-forwarded-for",
            ProxyHeader::Forwarded => "forwarded",
        }
    }
}

impl FromStr for ProxyHeader {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text.to_ascii_lowercase().as_str() {
            "x-forwarded-for" => Ok(ProxyHeader::XForwardedFor),
            "forwarded" => Ok(ProxyHeader::Forwarded),
            _ => Err(Error::invalid_argument(
                "proxy_header",
                format!(
                    "expected x-forwarded-for or forwarded, got {:?}",
                    excerpt::of(text)
                ),
            )),
        }
    }
}

/// An IP network (`10.0.0.0/8`, `fd00::/8`, or one address) whose addresses are trusted proxies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    base: IpAddr,
    prefix: u8,
}

impl Network {
    /// Whether `address` lies in this network (an IPv4-mapped IPv6 address counts as its IPv4 form).
    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.base, fold_mapped(address)) {
            (IpAddr::V4(base), IpAddr::V4(address)) => {
                mask_v4(address, self.prefix) == mask_v4(base, self.prefix)
            }
            (IpAddr::V6(base), IpAddr::V6(address)) => {
                mask_v6(address, self.prefix) == mask_v6(base, self.prefix)
            }
            _ => false,
        }
    }
}

impl FromStr for Network {
    type Err = Error;

    /// `address` or `address/prefix`; the named ranges `loopback`, `private` (RFC 1918 and fc00::/7)
    /// and `linklocal` are expanded by [`ClientAddress::trust_networks`], not here.
    fn from_str(text: &str) -> Result<Self> {
        let bad =
            |why: &str| Error::invalid_argument("trusted_proxies", format!("{:?} {why}", excerpt::of(text)));
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let base = fold_mapped(
            IpAddr::from_str(address.trim()).map_err(|_| bad("is not an IP address or network"))?,
        );
        let width = if base.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => width,
            Some(prefix) => prefix
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|&prefix| prefix <= width)
                .ok_or_else(|| bad("has a prefix length out of range"))?,
        };
        Ok(Network { base, prefix })
    }
}

/// How far proxy headers are believed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TrustedProxies {
    /// Proxy headers are ignored: the client is the peer of the connection (the default).
    #[default]
    None,
    /// This many proxies stand in front of the app; each appended one address to the header.
    Hops(u32),
    /// Proxies are the peers whose addresses lie in these networks.
    Networks(Vec<Network>),
}

/// How the client address of a request becomes its rate-limit key.
///
/// ```
/// use ratelock::http::{ClientAddress, TrustedProxies};
///
/// let direct = ClientAddress::default();
/// assert_eq!(direct.key("::ffff:203.0.113.7", None), "203.0.113.7");
/// assert_eq!(direct.key("2001:db8:1:2ff::9", None), "2001:db8:1:200::/56");
/// // A forged header is ignored until a proxy is trusted.
/// assert_eq!(direct.key("10.0.0.2", Some("198.51.100.1")), "10.0.0.2");
///
/// let behind_one_proxy = ClientAddress::default().with_trusted(TrustedProxies::Hops(1));
/// assert_eq!(behind_one_proxy.key("10.0.0.2", Some("6.6.6.6, 198.51.100.1")), "198.51.100.1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientAddress {
    /// IPv6 addresses sharing their first `ipv6_subnet` bits share a key (1 to 128).
    pub ipv6_subnet: u8,
    /// Which proxies' headers are believed.
    pub trusted: TrustedProxies,
    /// The header those proxies write.
    pub header: ProxyHeader,
}

impl Default for ClientAddress {
    fn default() -> Self {
        ClientAddress {
            ipv6_subnet: DEFAULT_IPV6_SUBNET,
            trusted: TrustedProxies::None,
            header: ProxyHeader::XForwardedFor,
        }
    }
}

impl ClientAddress {
    /// The same settings grouping IPv6 addresses by `bits` (1 to 128; 128 keeps each address).
    pub fn with_ipv6_subnet(mut self, bits: u8) -> Result<Self> {
        if !(1..=128).contains(&bits) {
            return Err(Error::invalid_argument(
                "ipv6_subnet",
                format!("expected a prefix length from 1 to 128, got {bits}"),
            ));
        }
        self.ipv6_subnet = bits;
        Ok(self)
    }

    /// The same settings believing the given proxies.
    pub fn with_trusted(mut self, trusted: TrustedProxies) -> Self {
        self.trusted = trusted;
        self
    }

    /// The same settings reading `header`.
    pub fn with_header(mut self, header: ProxyHeader) -> Self {
        self.header = header;
        self
    }

    /// Trusted networks from their text forms: addresses, `address/prefix`, or the named ranges
    /// `loopback`, `private` (RFC 1918, fc00::/7) and `linklocal`.
    ///
    /// ```
    /// use ratelock::http::ClientAddress;
    /// let address = ClientAddress::default().trust_networks(["loopback", "10.0.0.0/8"])?;
    /// assert_eq!(address.key("10.1.2.3", Some("192.0.2.1, 127.0.0.1")), "192.0.2.1");
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn trust_networks<'a>(mut self, texts: impl IntoIterator<Item = &'a str>) -> Result<Self> {
        let mut networks = Vec::new();
        for text in texts {
            match text.trim() {
                "loopback" => networks.extend(named(&["127.0.0.0/8", "::1"])),
                "private" => networks.extend(named(&[
                    "10.0.0.0/8",
                    "172.16.0.0/12",
                    "192.168.0.0/16",
                    "fc00::/7",
                ])),
                "linklocal" => networks.extend(named(&["169.254.0.0/16", "fe80::/10"])),
                other => networks.push(other.parse()?),
            }
        }
        self.trusted = TrustedProxies::Networks(networks);
        Ok(self)
    }

    /// The key of a request whose connection comes from `peer` (as the server reports it: with or
    /// without a port, brackets or a zone) and whose proxy header (see [`ClientAddress::header`]; several
    /// lines joined by commas) reads `forwarded`.
    ///
    /// An IPv4 client is its address; an IPv6 client is its network (`2001:db8:1:200::/56`), or its
    /// address when the subnet is 128. A peer that is not an IP address (a Unix socket) is used as
    /// given, or `unknown` when empty; but with a hop count of trusted proxies it is the first of them
    /// (nginx in front over a Unix socket), and the header is walked from its nearest entry. Walking
    /// the header, an entry that is not an IP address ends the walk at the last trusted address before
    /// it, so a malformed header never picks the key.
    pub fn key(&self, peer: &str, forwarded: Option<&str>) -> String {
        let Some(peer_ip) = parse_address(peer) else {
            if let (TrustedProxies::Hops(count), Some(header)) = (&self.trusted, forwarded) {
                if let Some(client) = self.walk_without_peer(header, *count) {
                    return self.group(client);
                }
            }
            let peer = peer.trim();
            return if peer.is_empty() {
                "unknown".into()
            } else {
                excerpt::of(peer).into_owned()
            };
        };
        let client = match (&self.trusted, forwarded) {
            (TrustedProxies::None, _) | (_, None) => peer_ip,
            (trusted, Some(header)) => self.walk(peer_ip, header, trusted),
        };
        self.group(client)
    }

    /// The client address: the peer, then the header's entries from the right, while trusted.
    fn walk(&self, peer: IpAddr, header: &str, trusted: &TrustedProxies) -> IpAddr {
        let mut client = peer;
        for (hops, entry) in self.entries(header).rev().enumerate() {
            let trusts_current = match trusted {
                TrustedProxies::None => false,
                TrustedProxies::Hops(count) => (hops as u64) < u64::from(*count),
                TrustedProxies::Networks(networks) => networks.iter().any(|network| network.contains(client)),
            };
            if !trusts_current {
                break;
            }
            match parse_address(entry) {
                Some(next) => client = next,
                None => break,
            }
        }
        client
    }

    /// [`walk`](Self::walk) for a peer that is no IP address but the first of `count` trusted hops:
    /// the header's entries from the right, one per trusted hop; `None` when its nearest names none.
    fn walk_without_peer(&self, header: &str, count: u32) -> Option<IpAddr> {
        let mut client = None;
        for (hops, entry) in self.entries(header).rev().enumerate() {
            if hops as u64 >= u64::from(count) {
                break;
            }
            match parse_address(entry) {
                Some(next) => client = Some(next),
                None => break,
            }
        }
        client
    }

    /// The addresses a header lists, left (client) to right (nearest proxy).
    fn entries<'h>(&self, header: &'h str) -> Box<dyn DoubleEndedIterator<Item = &'h str> + 'h> {
        match self.header {
            ProxyHeader::XForwardedFor => Box::new(header.split(',').map(str::trim)),
            ProxyHeader::Forwarded => Box::new(header.split(',').map(|element| {
                element
                    .split(';')
                    .filter_map(|pair| pair.split_once('='))
                    .find(|(name, _)| name.trim().eq_ignore_ascii_case("for"))
                    .map_or("", |(_, value)| value.trim().trim_matches('"'))
            })),
        }
    }

    fn group(&self, address: IpAddr) -> String {
        match fold_mapped(address) {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) if self.ipv6_subnet >= 128 => v6.to_string(),
            IpAddr::V6(v6) => format!("{}/{}", mask_v6(v6, self.ipv6_subnet), self.ipv6_subnet),
        }
    }
}

fn named(texts: &[&str]) -> Vec<Network> {
    texts
        .iter()
        .map(|text| text.parse().expect("a named range is a valid network"))
        .collect()
}

/// An address as servers and proxies write it: `1.2.3.4`, `1.2.3.4:80`, `::1`, `[::1]:80`,
/// `fe80::1%eth0`. None for anything else (`unknown`, `_hidden`, a Unix socket path, garbage).
fn parse_address(text: &str) -> Option<IpAddr> {
    let text = text.trim();
    if let Ok(address) = IpAddr::from_str(text) {
        return Some(address);
    }
    let without_zone = |s: &str| s.split_once('%').map_or(s, |(address, _)| address).to_owned();
    if let Some(rest) = text.strip_prefix('[') {
        let inside = rest.split_once(']')?.0;
        return Ipv6Addr::from_str(&without_zone(inside)).ok().map(IpAddr::V6);
    }
    if let Some((host, port)) = text.rsplit_once(':') {
        if !host.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) {
            return Ipv4Addr::from_str(host).ok().map(IpAddr::V4);
        }
    }
    Ipv6Addr::from_str(&without_zone(text)).ok().map(IpAddr::V6)
}

/// `::ffff:a.b.c.d` is the IPv4 client `a.b.c.d`.
fn fold_mapped(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

fn mask_v4(address: Ipv4Addr, prefix: u8) -> u32 {
    let bits = u32::from(address);
    if prefix == 0 {
        0
    } else {
        bits & (u32::MAX << (32 - u32::from(prefix.min(32))))
    }
}

fn mask_v6(address: Ipv6Addr, prefix: u8) -> Ipv6Addr {
    let bits = u128::from(address);
    let masked = if prefix == 0 {
        0
    } else {
        bits & (u128::MAX << (128 - u32::from(prefix.min(128))))
    };
    Ipv6Addr::from(masked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_addresses_of_one_subnet_share_a_key_and_others_do_not() {
        let address = ClientAddress::default();
        let one = address.key("2001:db8:aa:bb01::1", None);
        assert_eq!(one, address.key("2001:db8:aa:bbff:ffff::2", None));
        assert_ne!(one, address.key("2001:db8:aa:bc00::1", None));
        let exact = ClientAddress::default().with_ipv6_subnet(128).unwrap();
        assert_ne!(exact.key("2001:db8::1", None), exact.key("2001:db8::2", None));
        assert!(ClientAddress::default().with_ipv6_subnet(0).is_err());
        assert!(ClientAddress::default().with_ipv6_subnet(129).is_err());
    }

    #[test]
    fn ipv4_mapped_addresses_fold_to_ipv4_in_every_spelling() {
        let address = ClientAddress::default();
        for peer in [
            "::ffff:192.0.2.9",
            "[::ffff:192.0.2.9]:443",
            "::FFFF:c000:209",
            "192.0.2.9:5000",
        ] {
            assert_eq!(address.key(peer, None), "192.0.2.9", "{peer}");
        }
    }

    #[test]
    fn headers_are_ignored_unless_a_proxy_is_trusted() {
        let forged = Some("1.1.1.1, 2.2.2.2");
        assert_eq!(ClientAddress::default().key("10.0.0.1", forged), "10.0.0.1");
    }

    #[test]
    fn hop_counts_pick_the_address_the_outermost_trusted_proxy_saw() {
        let two = ClientAddress::default().with_trusted(TrustedProxies::Hops(2));
        // client sent a forged 6.6.6.6; proxy A saw 198.51.100.1; proxy B saw A (10.0.0.5).
        assert_eq!(
            two.key("10.0.0.9", Some("6.6.6.6, 198.51.100.1, 10.0.0.5")),
            "198.51.100.1"
        );
        // Fewer entries than hops: the leftmost one.
        assert_eq!(two.key("10.0.0.9", Some("198.51.100.1")), "198.51.100.1");
    }

    #[test]
    fn networks_are_walked_from_the_right_while_trusted() {
        let trusted = ClientAddress::default().trust_networks(["10.0.0.0/8"]).unwrap();
        assert_eq!(
            trusted.key("10.0.0.9", Some("6.6.6.6, 198.51.100.1, 10.2.3.4")),
            "198.51.100.1"
        );
        // An untrusted peer's header is not read at all.
        assert_eq!(trusted.key("203.0.113.1", Some("6.6.6.6")), "203.0.113.1");
        // Garbage ends the walk at the last trusted address.
        assert_eq!(trusted.key("10.0.0.9", Some("6.6.6.6, nonsense")), "10.0.0.9");
    }

    #[test]
    fn forwarded_header_for_parameters_are_read_with_quotes_brackets_and_ports() {
        let trusted = ClientAddress::default()
            .with_trusted(TrustedProxies::Hops(1))
            .with_header(ProxyHeader::Forwarded);
        let header = r#"for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https;by=10.0.0.1"#;
        assert_eq!(trusted.key("10.0.0.1", Some(header)), "2001:db8:cafe::/56");
        assert_eq!(
            trusted.key("10.0.0.1", Some("for=192.0.2.60;proto=http")),
            "192.0.2.60"
        );
        assert_eq!(trusted.key("10.0.0.1", Some("proto=http")), "10.0.0.1");
    }

    #[test]
    fn peers_that_are_not_addresses_are_used_as_given() {
        let address = ClientAddress::default();
        assert_eq!(address.key("", None), "unknown");
        assert_eq!(address.key("/run/app.sock", None), "/run/app.sock");
        assert_eq!(address.key("fe80::1%eth0", None), "fe80::/56");
        // Behind one trusted proxy on a Unix socket, the header names the client.
        let proxied = ClientAddress::default().with_trusted(TrustedProxies::Hops(1));
        assert_eq!(proxied.key("/run/app.sock", Some("203.0.113.5")), "203.0.113.5");
        assert_eq!(proxied.key("", Some("198.51.100.1, 203.0.113.5")), "203.0.113.5");
        assert_eq!(proxied.key("/run/app.sock", Some("unknown")), "/run/app.sock");
    }

    #[test]
    fn bad_networks_name_what_is_wrong() {
        let error = ClientAddress::default()
            .trust_networks(["10.0.0.0/33"])
            .unwrap_err();
        assert!(error.to_string().contains("trusted_proxies"), "{error}");
        assert!("10.0.0.0/8"
            .parse::<Network>()
            .unwrap()
            .contains("::ffff:10.9.9.9".parse().unwrap()));
    }
}
