//! Session ids: `20260705T091500-1a2b3c4d`, UTC start time plus 8 random hex
//! digits. They sort by time and can never name a path outside the sessions
//! directory: parsing accepts exactly that shape and nothing else.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A validated session id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(String);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "invalid session id {input:?}: expected the form 20260705T091500-1a2b3c4d (UTC time, '-', 8 hex digits); run `eonyx sessions` to list ids"
)]
pub struct SessionIdError {
    pub input: String,
}

impl SessionId {
    /// A new id for a session starting now.
    pub fn generate() -> Self {
        Self::from_parts(jiff::Timestamp::now(), fastrand::u32(..))
    }

    /// An id from a timestamp and a random number (for tests and tools).
    pub fn from_parts(ts: jiff::Timestamp, random: u32) -> Self {
        SessionId(format!("{}-{:08x}", ts.strftime("%Y%m%dT%H%M%S"), random))
    }

    /// Whether `s` is a valid id (what [`SessionId::parse`] accepts),
    /// without allocating.
    pub fn is_valid(s: &str) -> bool {
        is_valid(s)
    }

    pub fn parse(s: &str) -> Result<Self, SessionIdError> {
        if is_valid(s) {
            Ok(SessionId(s.to_owned()))
        } else {
            Err(SessionIdError {
                input: s.to_owned(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// File name of the session: `<id>.jsonl`.
    pub fn file_name(&self) -> String {
        format!("{}.jsonl", self.0)
    }
}

fn is_valid(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 24 {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(|c| c.is_ascii_digit());
    let hex = b[16..24]
        .iter()
        .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c));
    digits(0..8) && b[8] == b'T' && digits(9..15) && b[15] == b'-' && hex
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for SessionId {
    type Err = SessionIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for SessionId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SessionId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        SessionId::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_parse_and_sort_by_time() {
        let a = SessionId::from_parts(
            jiff::Timestamp::from_second(1_700_000_000).unwrap(),
            0xdead_beef,
        );
        assert_eq!(a.as_str(), "20231114T221320-deadbeef");
        let b = SessionId::from_parts(jiff::Timestamp::from_second(1_700_000_001).unwrap(), 0);
        assert!(a < b);
        assert_eq!(SessionId::parse(a.as_str()).unwrap(), a);
        let g = SessionId::generate();
        assert_eq!(SessionId::parse(g.as_str()).unwrap(), g);
    }

    #[test]
    fn rejects_paths_and_malformed_ids() {
        for bad in [
            "",
            "..",
            "../../x",
            "20260705T091500-1a2b3c4",
            "20260705T091500-1a2b3c4dd",
            "20260705T091500-1A2B3C4D",
            "20260705T091500/1a2b3c4d",
            "2026070aT091500-1a2b3c4d",
            "20260705T091500-../../..",
            "20260705t091500-1a2b3c4d",
        ] {
            assert!(SessionId::parse(bad).is_err(), "{bad} accepted");
        }
        assert!(SessionId::parse("20260705T091500-1a2b3c4d").is_ok());
    }
}
