//! `tools.web_fetch_private_hosts` entries in the one form web fetch
//! compares (the URL's `host:port` as the URL parser writes it): `127.1:8000`
//! is `127.0.0.1:8000`, `[0:0:0:0:0:0:0:1]:8080` is `[::1]:8080`,
//! `LocalHost:3000` is `localhost:3000`. An entry without a port, or whose
//! host is no host, is refused with the reason.

/// The canonical `host:port` of `entry`, or why it is not one.
pub fn canonical(entry: &str) -> Result<String, String> {
    let entry = entry.trim();
    let Some((host, port)) = entry.rsplit_once(':') else {
        return Err(format!(
            "{entry:?} has no port; write host:port as the URL spells it, e.g. \"localhost:3000\" or \"127.0.0.1:8000\""
        ));
    };
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Err(format!(
            "{entry:?} is not host:port; write an IPv6 address in brackets, e.g. \"[::1]:8080\""
        ));
    }
    let port: u16 = port.parse().map_err(|_| {
        format!("{entry:?} is not host:port: {port:?} is not a port number (1 to 65535)")
    })?;
    let host = url::Host::parse(host).map_err(|e| {
        format!("{entry:?} is not host:port: {host:?} is not a host name or address ({e})")
    })?;
    let host = match host {
        url::Host::Domain(d) => d.to_ascii_lowercase(),
        other => other.to_string(),
    };
    Ok(format!("{host}:{port}"))
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn entries_are_written_as_the_url_parser_writes_them() {
        for (entry, want) in [
            ("localhost:3000", "localhost:3000"),
            ("LocalHost:3000", "localhost:3000"),
            ("127.1:8000", "127.0.0.1:8000"),
            ("2130706433:81", "127.0.0.1:81"),
            ("0x7f.1:82", "127.0.0.1:82"),
            ("[0:0:0:0:0:0:0:1]:8080", "[::1]:8080"),
            ("[::ffff:127.0.0.1]:9", "[::ffff:7f00:1]:9"),
            (" dev.internal:443 ", "dev.internal:443"),
        ] {
            assert_eq!(canonical(entry).as_deref(), Ok(want), "{entry}");
        }
    }

    #[test]
    fn entries_that_are_not_host_port_are_refused_with_the_reason() {
        for (entry, says) in [
            ("localhost", "has no port"),
            ("::1:8080", "in brackets"),
            ("localhost:http", "not a port number"),
            ("localhost:70000", "not a port number"),
            (":3000", "not a host name"),
            ("a b:3000", "not a host name"),
        ] {
            let err = canonical(entry).unwrap_err();
            assert!(err.contains(says), "{entry}: {err}");
        }
    }
}
