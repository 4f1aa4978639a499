//! Time formatting in one place: RFC 3339 UTC timestamps for records and the
//! UTC date for the prompt's date line.

/// Now as RFC 3339 UTC with second precision, e.g. `2026-07-05T09:15:00Z`.
pub fn now_rfc3339() -> String {
    format_rfc3339(jiff::Timestamp::now())
}

/// Now as RFC 3339 UTC with nanosecond precision (always nine digits),
/// e.g. `2026-07-05T09:15:00.123456789Z`: what the store writes as a
/// record's `ts`, so that "most recent" is exact even within one second.
pub fn now_rfc3339_nanos() -> String {
    format_rfc3339_nanos(jiff::Timestamp::now())
}

pub fn format_rfc3339_nanos(ts: jiff::Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%S%.9fZ").to_string()
}

pub fn format_rfc3339(ts: jiff::Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Today's UTC date, `YYYY-MM-DD`.
pub fn today_utc() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%d").to_string()
}

/// Parse an RFC 3339 timestamp; `None` when it is not one.
pub fn parse_rfc3339(s: &str) -> Option<jiff::Timestamp> {
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_utc() {
        let ts = jiff::Timestamp::from_second(1_700_000_000).unwrap();
        assert_eq!(super::format_rfc3339(ts), "2023-11-14T22:13:20Z");
        assert_eq!(super::parse_rfc3339("2023-11-14T22:13:20Z"), Some(ts));
        let precise = jiff::Timestamp::new(1_700_000_000, 5_000).unwrap();
        let s = super::format_rfc3339_nanos(precise);
        assert_eq!(s, "2023-11-14T22:13:20.000005000Z");
        assert_eq!(super::parse_rfc3339(&s), Some(precise));
        assert_eq!(
            super::format_rfc3339_nanos(ts),
            "2023-11-14T22:13:20.000000000Z"
        );
    }
}
