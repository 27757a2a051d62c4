//! A destination as the client named it, in one canonical spelling so that
//! policy matching and records agree.

use std::fmt;
use std::net::IpAddr;

/// Host (lower case, no trailing dot, IPv6 without brackets) and port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    host: String,
    port: u16,
}

impl Target {
    /// `None` when the host is empty after normalising.
    pub fn new(host: &str, port: u16) -> Option<Target> {
        let host = normalize_host(host);
        (!host.is_empty()).then_some(Target { host, port })
    }

    /// Parses `host:port` or `[v6]:port`; a missing port takes `default_port`.
    pub fn parse(authority: &str, default_port: Option<u16>) -> Option<Target> {
        let authority = authority.trim();
        let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
            let (host, after) = rest.split_once(']')?;
            (host, after)
        } else {
            match authority.rsplit_once(':') {
                // An unbracketed IPv6 address has no port to split off.
                Some((host, _)) if host.contains(':') => return None,
                Some((host, _)) => (host, &authority[host.len()..]),
                None => (authority, ""),
            }
        };
        let port = match port.strip_prefix(':') {
            Some(digits) => digits.parse().ok()?,
            None if port.is_empty() => default_port?,
            None => return None,
        };
        Target::new(host, port)
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The host as an address when it is an IP literal (no lookup needed).
    pub fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }

    /// Value for a `Host` header: the port is left out when it is HTTP's default.
    pub fn host_header(&self) -> String {
        let host = self.bracketed_host();
        if self.port == 80 { host } else { format!("{host}:{}", self.port) }
    }

    /// The authority of an `https` URI: the port is left out when it is 443.
    pub fn https_authority(&self) -> String {
        let host = self.bracketed_host();
        if self.port == 443 { host } else { format!("{host}:{}", self.port) }
    }

    fn bracketed_host(&self) -> String {
        if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.bracketed_host(), self.port)
    }
}

/// Lower case, surrounding whitespace and one trailing dot removed: `Example.COM.` and
/// `example.com` are the same DNS name.
pub fn normalize_host(host: &str) -> String {
    let host = host.trim();
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_normalizes() {
        type Case = (&'static str, Option<u16>, Option<(&'static str, u16)>);
        let cases: &[Case] = &[
            ("Example.COM.:443", None, Some(("example.com", 443))),
            ("example.com", Some(80), Some(("example.com", 80))),
            ("example.com", None, None),
            ("[::1]:8080", None, Some(("::1", 8080))),
            ("[::1]", Some(80), Some(("::1", 80))),
            ("::1:8080", None, None),
            ("example.com:notaport", None, None),
            ("example.com:70000", None, None),
            ("[::1]x", Some(80), None),
            (":443", None, None),
            ("", Some(80), None),
        ];
        for (input, default_port, want) in cases {
            let got = Target::parse(input, *default_port);
            let got = got.as_ref().map(|t| (t.host(), t.port()));
            assert_eq!(got, *want, "{input}");
        }
    }

    #[test]
    fn displays_host_and_port() {
        assert_eq!(Target::parse("[::1]:80", None).unwrap().to_string(), "[::1]:80");
        assert_eq!(Target::parse("a.b:8080", None).unwrap().to_string(), "a.b:8080");
        assert_eq!(Target::parse("a.b:80", None).unwrap().host_header(), "a.b");
        assert_eq!(Target::parse("[::1]:81", None).unwrap().host_header(), "[::1]:81");
    }

    #[test]
    fn ip_literal() {
        assert_eq!(Target::parse("127.0.0.1:1", None).unwrap().ip(), Some("127.0.0.1".parse().unwrap()));
        assert_eq!(Target::parse("localhost:1", None).unwrap().ip(), None);
    }
}
