//! The address check: which IP addresses `web_fetch` may connect to.
//!
//! Every address eonyx is about to connect to (a literal in the URL or one
//! a name resolved to) goes through [`refused_range`]; an address in any
//! range below is refused unless the URL's `host:port` is listed in
//! `tools.web_fetch_private_hosts`. IPv6 forms that carry an IPv4 address
//! (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`,
//! 6to4 `2002::/16`) are judged by the IPv4 address they carry.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A range of addresses `web_fetch` does not reach without a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    Unspecified,
    Loopback,
    Private,
    LinkLocal,
    Cgnat,
    Multicast,
    Broadcast,
    /// Documentation, benchmarking, protocol-assignment and future-use
    /// blocks: never a public web server.
    Reserved,
    UniqueLocal,
    /// fec0::/10, deprecated but still routed on some networks.
    SiteLocal,
}

impl Range {
    /// As said in a refusal: "127.0.0.1 is a loopback address".
    pub fn describe(self) -> &'static str {
        match self {
            Range::Unspecified => "an unspecified address",
            Range::Loopback => "a loopback address",
            Range::Private => "a private address",
            Range::LinkLocal => "a link-local address (cloud metadata lives there)",
            Range::Cgnat => "a carrier-grade NAT (shared) address",
            Range::Multicast => "a multicast address",
            Range::Broadcast => "the broadcast address",
            Range::Reserved => "a reserved address",
            Range::UniqueLocal => "a unique-local address",
            Range::SiteLocal => "a site-local address",
        }
    }
}

/// The range `ip` falls in when `web_fetch` must not reach it by default;
/// `None` for a public address.
pub fn refused_range(ip: IpAddr) -> Option<Range> {
    match ip {
        IpAddr::V4(v4) => v4_range(v4),
        IpAddr::V6(v6) => v6_range(v6),
    }
}

fn v4_range(ip: Ipv4Addr) -> Option<Range> {
    let [a, b, c, _] = ip.octets();
    let range = match (a, b, c) {
        (0, ..) => Range::Unspecified,
        (127, ..) => Range::Loopback,
        (10, ..) | (172, 16..=31, _) | (192, 168, _) => Range::Private,
        (169, 254, _) => Range::LinkLocal,
        (100, 64..=127, _) => Range::Cgnat,
        (224..=239, ..) => Range::Multicast,
        (255, 255, 255) if ip == Ipv4Addr::BROADCAST => Range::Broadcast,
        // 192.0.0.0/24 protocol assignments, 192.0.2.0/24, 198.51.100.0/24
        // and 203.0.113.0/24 documentation, 198.18.0.0/15 benchmarking,
        // 240.0.0.0/4 future use.
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113) | (198, 18..=19, _) => {
            Range::Reserved
        }
        (240..=255, ..) => Range::Reserved,
        _ => return None,
    };
    Some(range)
}

fn v6_range(ip: Ipv6Addr) -> Option<Range> {
    if let Some(v4) = embedded_v4(ip) {
        return v4_range(v4);
    }
    let s = ip.segments();
    let range = if ip.is_unspecified() {
        Range::Unspecified
    } else if ip.is_loopback() {
        Range::Loopback
    } else if s[0] & 0xfe00 == 0xfc00 {
        Range::UniqueLocal
    } else if s[0] & 0xffc0 == 0xfe80 {
        Range::LinkLocal
    } else if s[0] & 0xffc0 == 0xfec0 {
        Range::SiteLocal
    } else if s[0] & 0xff00 == 0xff00 {
        Range::Multicast
    } else if (s[0] == 0x2001 && s[1] == 0x0db8) || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) {
        // 2001:db8::/32 documentation, 100::/64 discard.
        Range::Reserved
    } else {
        return None;
    };
    Some(range)
}

/// The IPv4 address an IPv6 one carries: `::ffff:a.b.c.d` (mapped),
/// `::a.b.c.d` (compatible; not `::` and `::1`), `64:ff9b::a.b.c.d`
/// (NAT64) and `2002:AABB:CCDD::/48` (6to4).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = || Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(tail()),
        [0, 0, 0, 0, 0, 0, hi, _] if hi != 0 => Some(tail()),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(tail()),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(s: &str) -> Option<Range> {
        refused_range(s.parse().unwrap())
    }

    #[test]
    fn every_refused_ipv4_range_is_refused_at_its_edges() {
        let cases = [
            ("0.0.0.0", Range::Unspecified),
            ("0.255.255.255", Range::Unspecified),
            ("127.0.0.1", Range::Loopback),
            ("127.255.255.254", Range::Loopback),
            ("10.0.0.0", Range::Private),
            ("10.255.255.255", Range::Private),
            ("172.16.0.1", Range::Private),
            ("172.31.255.255", Range::Private),
            ("192.168.0.1", Range::Private),
            ("192.168.255.255", Range::Private),
            ("169.254.169.254", Range::LinkLocal),
            ("169.254.0.0", Range::LinkLocal),
            ("100.64.0.0", Range::Cgnat),
            ("100.127.255.255", Range::Cgnat),
            ("224.0.0.1", Range::Multicast),
            ("239.255.255.255", Range::Multicast),
            ("255.255.255.255", Range::Broadcast),
            ("240.0.0.1", Range::Reserved),
            ("192.0.0.8", Range::Reserved),
            ("192.0.2.1", Range::Reserved),
            ("198.51.100.7", Range::Reserved),
            ("203.0.113.9", Range::Reserved),
            ("198.18.0.1", Range::Reserved),
            ("198.19.255.255", Range::Reserved),
        ];
        for (ip, want) in cases {
            assert_eq!(range(ip), Some(want), "{ip}");
        }
    }

    #[test]
    fn public_ipv4_neighbours_of_the_ranges_pass() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "11.0.0.0",
            "9.255.255.255",
            "172.15.255.255",
            "172.32.0.0",
            "192.167.255.255",
            "192.169.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "223.255.255.255",
            "128.0.0.1",
            "126.255.255.255",
            "198.17.255.255",
            "198.20.0.0",
            "192.0.1.1",
            "192.0.3.1",
        ] {
            assert_eq!(range(ip), None, "{ip}");
        }
    }

    #[test]
    fn every_refused_ipv6_range_is_refused() {
        let cases = [
            ("::", Range::Unspecified),
            ("::1", Range::Loopback),
            ("fc00::1", Range::UniqueLocal),
            ("fdff:ffff::1", Range::UniqueLocal),
            ("fe80::1", Range::LinkLocal),
            ("febf::1", Range::LinkLocal),
            ("fec0::1", Range::SiteLocal),
            ("ff02::1", Range::Multicast),
            ("ff0e::1", Range::Multicast),
            ("2001:db8::1", Range::Reserved),
            ("100::1", Range::Reserved),
        ];
        for (ip, want) in cases {
            assert_eq!(range(ip), Some(want), "{ip}");
        }
    }

    #[test]
    fn ipv6_forms_carrying_ipv4_are_judged_by_it() {
        let cases = [
            ("::ffff:127.0.0.1", Some(Range::Loopback)),
            ("::ffff:7f00:1", Some(Range::Loopback)),
            ("::ffff:10.1.2.3", Some(Range::Private)),
            ("::ffff:169.254.169.254", Some(Range::LinkLocal)),
            ("::ffff:100.64.0.1", Some(Range::Cgnat)),
            ("::ffff:0.0.0.0", Some(Range::Unspecified)),
            ("::ffff:224.0.0.1", Some(Range::Multicast)),
            ("::127.0.0.1", Some(Range::Loopback)),
            ("::192.168.1.1", Some(Range::Private)),
            ("64:ff9b::7f00:1", Some(Range::Loopback)),
            ("64:ff9b::a9fe:a9fe", Some(Range::LinkLocal)),
            ("2002:7f00:1::", Some(Range::Loopback)),
            ("2002:c0a8:101::1", Some(Range::Private)),
            ("::ffff:8.8.8.8", None),
            ("64:ff9b::808:808", None),
            ("2002:808:808::1", None),
        ];
        for (ip, want) in cases {
            assert_eq!(range(ip), want, "{ip}");
        }
    }

    #[test]
    fn public_ipv6_passes() {
        for ip in [
            "2606:4700:4700::1111",
            "2a00:1450:4001:82a::200e",
            "fe00::1",
        ] {
            assert_eq!(range(ip), None, "{ip}");
        }
    }
}
