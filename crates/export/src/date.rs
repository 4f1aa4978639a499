//! Times as the readable exports show them: `2026-07-05 09:15 UTC`.

use std::fmt::Write as _;

/// `2026-07-05 09:15 UTC`, or the text as stored when it is not RFC 3339.
pub(crate) fn short_date(ts: &str) -> String {
    let mut out = String::with_capacity(20);
    push_date(&mut out, ts);
    out
}

/// [`short_date`] written to `out`. A time as eonyx writes it
/// (`2026-07-05T09:15:00Z`, maybe with a fraction) is already in UTC: its
/// date and minute are copied; any other form is parsed.
pub(crate) fn push_date(out: &mut String, ts: &str) {
    if let Some((date, minute)) = utc_parts(ts) {
        out.push_str(date);
        out.push(' ');
        out.push_str(minute);
        out.push_str(" UTC");
        return;
    }
    match eonyx_core::time::parse_rfc3339(ts) {
        Some(t) => {
            let _ = write!(out, "{}", t.strftime("%Y-%m-%d %H:%M UTC"));
        }
        None => out.push_str(ts),
    }
}

/// `("2026-07-05", "09:15")` of a valid `YYYY-MM-DDTHH:MM:SS[.F]Z` (year
/// 1000 to 9998, the fraction 1 to 9 digits); `None` for anything else.
fn utc_parts(ts: &str) -> Option<(&str, &str)> {
    let b = ts.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        b.get(r)?.iter().try_fold(0u32, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
        })
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    if !(at(4, b'-') && at(7, b'-') && at(10, b'T') && at(13, b':') && at(16, b':')) {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        1..=12 => 31,
        _ => return None,
    };
    let fraction = match b.get(19) {
        Some(b'.') => b.len().saturating_sub(21),
        _ => 0,
    };
    let tail_ok = match fraction {
        0 => b.len() == 20,
        1..=9 => num(20..20 + fraction).is_some(),
        _ => false,
    };
    let valid = (1000..=9998).contains(&year)
        && (1..=days).contains(&day)
        && hour < 24
        && minute < 60
        && second < 60
        && tail_ok
        && b.last() == Some(&b'Z');
    valid.then(|| (&ts[..10], &ts[11..16]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_by_hand_read_as_the_parser_reads_them() {
        let slow = |ts: &str| {
            eonyx_core::time::parse_rfc3339(ts)
                .map(|t| t.strftime("%Y-%m-%d %H:%M UTC").to_string())
                .unwrap_or_else(|| ts.to_owned())
        };
        let cases = [
            "2026-07-05T09:15:00Z",
            "2026-07-05T09:15:59.123456789Z",
            "2026-07-05T09:15:59.1234567890Z",
            "2026-07-05T09:15:59.Z",
            "2026-07-05T09:15:60Z",
            "2026-07-05T24:00:00Z",
            "2024-02-29T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2000-02-29T23:59:59Z",
            "2026-13-01T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-07-05T09:15:00+02:00",
            "2026-07-05t09:15:00z",
            "2026-07-05 09:15:00Z",
            "0999-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
            "2026-07-05T09:15:00",
            "2026-07-05T09:15:00ZZ",
            "2026-07-05T09:1x:00Z",
            "not a date",
            "",
        ];
        for ts in cases {
            assert_eq!(short_date(ts), slow(ts), "{ts:?}");
        }
        assert!(utc_parts("2026-07-05T09:15:00.5Z").is_some());
    }
}
