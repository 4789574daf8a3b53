//! Where the workers' egress proxy may connect: public addresses, never the host's own.
//!
//! A destination is resolved once and refused when any of its addresses is the host's
//! (loopback, unspecified, an address of one of its interfaces) or is not routed past the link
//! (link-local, cloud metadata services, multicast, broadcast); the proxy then connects to an
//! address it checked, so a name that resolves differently a moment later changes nothing.

use std::{
    io,
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs},
};

/// Why an address is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    Loopback,
    Unspecified,
    LinkLocal,
    Metadata,
    Multicast,
    Broadcast,
    HostInterface,
}

impl Refusal {
    /// What the address is, as the end of "X is …".
    pub(super) fn reason(self) -> &'static str {
        match self {
            Refusal::Loopback => "a loopback address of the host",
            Refusal::Unspecified => "an unspecified address (it reaches the host itself)",
            Refusal::LinkLocal => {
                "a link-local address (169.254.0.0/16, fe80::/10: the cloud metadata service and \
                 the local link)"
            }
            Refusal::Metadata => "a cloud metadata service's address",
            Refusal::Multicast => "a multicast address",
            Refusal::Broadcast => "the broadcast address",
            Refusal::HostInterface => "an address of one of the host's own network interfaces",
        }
    }
}

/// Why `ip` is refused (None: it is allowed), `own` being the host's interface addresses.
pub(super) fn refusal(ip: IpAddr, own: &[IpAddr]) -> Option<Refusal> {
    let ip = canonical(ip);
    let kind = match ip {
        IpAddr::V4(v4) => refusal_v4(v4),
        IpAddr::V6(v6) => refusal_v6(v6),
    };
    kind.or_else(|| own.iter().any(|o| canonical(*o) == ip).then_some(Refusal::HostInterface))
}

fn refusal_v4(ip: Ipv4Addr) -> Option<Refusal> {
    if ip.is_loopback() {
        Some(Refusal::Loopback)
    } else if ip.octets()[0] == 0 {
        // 0.0.0.0/8, "this network": Linux connects 0.0.0.0 to the host itself.
        Some(Refusal::Unspecified)
    } else if ip.is_link_local() {
        Some(Refusal::LinkLocal)
    } else if ip == Ipv4Addr::new(100, 100, 100, 200) {
        Some(Refusal::Metadata) // Alibaba Cloud's, outside the link-local range
    } else if ip.is_multicast() {
        Some(Refusal::Multicast)
    } else if ip.is_broadcast() {
        Some(Refusal::Broadcast)
    } else {
        None
    }
}

fn refusal_v6(ip: Ipv6Addr) -> Option<Refusal> {
    if ip.is_loopback() {
        Some(Refusal::Loopback)
    } else if ip.is_unspecified() {
        Some(Refusal::Unspecified)
    } else if ip.segments()[0] & 0xffc0 == 0xfe80 {
        Some(Refusal::LinkLocal)
    } else if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        Some(Refusal::Metadata) // AWS's IPv6 one, a unique local address
    } else if ip.is_multicast() {
        Some(Refusal::Multicast)
    } else {
        None
    }
}

/// An IPv4 address written as IPv6 (`::ffff:127.0.0.1`, or the deprecated `::127.0.0.1`) as the
/// IPv4 address it reaches.
fn canonical(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else { return ip };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return IpAddr::V4(v4);
    }
    let octets = v6.octets();
    let compatible =
        octets[..12].iter().all(|b| *b == 0) && !v6.is_unspecified() && !v6.is_loopback();
    if compatible {
        return IpAddr::V4(Ipv4Addr::new(octets[12], octets[13], octets[14], octets[15]));
    }
    ip
}

/// Why the proxy does not connect a request: its HTTP status and a sentence for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Denial {
    pub(super) status: Status,
    pub(super) sentence: String,
}

/// The HTTP status of a [`Denial`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    BadRequest,
    Forbidden,
    BadGateway,
    Unavailable,
}

impl Status {
    pub(super) fn code(self) -> u16 {
        match self {
            Status::BadRequest => 400,
            Status::Forbidden => 403,
            Status::BadGateway => 502,
            Status::Unavailable => 503,
        }
    }
}

impl Denial {
    pub(super) fn new(status: Status, sentence: String) -> Denial {
        Denial { status, sentence }
    }
}

/// The addresses of `host:port`, resolved once, each allowed; or why the proxy refuses it.
pub(super) fn check(host: &str, port: u16) -> Result<Vec<SocketAddr>, Denial> {
    let target =
        if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
    let addresses: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| {
            Denial::new(Status::BadGateway, format!("cannot resolve {target} ({e}): no such host"))
        })?
        .collect();
    if addresses.is_empty() {
        let sentence = format!("cannot resolve {target}: the name has no address");
        return Err(Denial::new(Status::BadGateway, sentence));
    }
    let own = host_addresses().map_err(|e| {
        Denial::new(
            Status::Unavailable,
            format!("cannot read the host's own addresses to check {target} against ({e})"),
        )
    })?;
    for address in &addresses {
        let Some(why) = refusal(address.ip(), &own) else { continue };
        let ip = address.ip();
        let what = match host.parse::<IpAddr>() {
            Ok(_) => format!("{ip} is {}", why.reason()),
            Err(_) => format!("{host} resolves to {ip}, {}", why.reason()),
        };
        return Err(Denial::new(
            Status::Forbidden,
            format!(
                "agent-tools' egress proxy refused {target}: {what}; a worker reaches public \
                 addresses only (its model's API), never the host's own services"
            ),
        ));
    }
    Ok(addresses)
}

/// The addresses of the host's network interfaces, read now (they change: a VPN, a container
/// bridge).
pub(super) fn host_addresses() -> io::Result<Vec<IpAddr>> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list it allocated into `list`, freed below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut found = Vec::new();
    let mut at = list;
    while !at.is_null() {
        // SAFETY: a node of the list getifaddrs made, alive until freeifaddrs.
        let entry = unsafe { &*at };
        if !entry.ifa_addr.is_null() {
            // SAFETY: ifa_addr points at a sockaddr whose family says its real type.
            let family = i32::from(unsafe { (*entry.ifa_addr).sa_family });
            if family == libc::AF_INET {
                // SAFETY: an AF_INET address is a sockaddr_in.
                let sin = unsafe { &*entry.ifa_addr.cast::<libc::sockaddr_in>() };
                found.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))));
            } else if family == libc::AF_INET6 {
                // SAFETY: an AF_INET6 address is a sockaddr_in6.
                let sin6 = unsafe { &*entry.ifa_addr.cast::<libc::sockaddr_in6>() };
                found.push(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
            }
        }
        at = entry.ifa_next;
    }
    // SAFETY: the list getifaddrs allocated, freed once.
    unsafe { libc::freeifaddrs(list) };
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn the_hosts_own_addresses_and_those_not_routed_past_the_link_are_refused() {
        let own = [ip("192.0.2.2"), ip("fd00::2")];
        for (address, expected) in [
            ("127.0.0.1", Refusal::Loopback),
            ("127.1.2.3", Refusal::Loopback),
            ("::1", Refusal::Loopback),
            ("::ffff:127.0.0.1", Refusal::Loopback),
            ("::127.0.0.1", Refusal::Loopback),
            ("0.0.0.0", Refusal::Unspecified),
            ("::", Refusal::Unspecified),
            ("::ffff:0.0.0.0", Refusal::Unspecified),
            ("169.254.169.254", Refusal::LinkLocal),
            ("::ffff:169.254.169.254", Refusal::LinkLocal),
            ("fe80::1", Refusal::LinkLocal),
            ("fd00:ec2::254", Refusal::Metadata),
            ("224.0.0.1", Refusal::Multicast),
            ("ff02::1", Refusal::Multicast),
            ("255.255.255.255", Refusal::Broadcast),
            ("192.0.2.2", Refusal::HostInterface),
            ("::ffff:192.0.2.2", Refusal::HostInterface),
            ("fd00::2", Refusal::HostInterface),
        ] {
            assert_eq!(refusal(ip(address), &own), Some(expected), "{address}");
        }
    }

    #[test]
    fn public_addresses_and_other_machines_are_allowed() {
        let own = [ip("192.0.2.2")];
        for address in ["203.0.113.80", "151.101.0.223", "2606:4700::6810:84e5", "192.0.2.3"] {
            assert_eq!(refusal(ip(address), &own), None, "{address}");
        }
    }

    #[test]
    fn the_hosts_interface_addresses_are_read_and_refused() {
        let own = host_addresses().expect("getifaddrs");
        assert!(own.iter().any(IpAddr::is_loopback), "the loopback is an interface: {own:?}");
        for address in own {
            assert!(refusal(address, &host_addresses().unwrap()).is_some(), "{address}");
        }
    }

    #[test]
    fn a_name_is_checked_by_every_address_it_resolves_to() {
        let refused = check("localhost", 8080).expect_err("localhost is the host");
        assert_eq!(refused.status, Status::Forbidden);
        assert!(
            refused.sentence.contains("refused localhost:8080: localhost resolves to")
                && refused.sentence.contains("a loopback address of the host"),
            "{}",
            refused.sentence
        );
        let refused = check("::ffff:127.0.0.1", 22).expect_err("a mapped loopback");
        let sentence = &refused.sentence;
        assert!(
            sentence.contains("refused [::ffff:127.0.0.1]:22: ::ffff:127.0.0.1 is a loopback"),
            "{sentence}"
        );
    }
}
