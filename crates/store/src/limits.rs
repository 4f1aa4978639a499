//! The learned/detected context-window cache (`<data dir>/limits.json`).
//!
//! Per (base URL, model name) it remembers the window the server reported
//! (`detected from /props`…) and the smallest window an overflow revealed
//! (`learned from an overflow`), each with the time it was learned, so the
//! next session starts with the right window without asking again.
//!
//! Invariants: the file never holds an API key (base URLs are stored without
//! user info, query or fragment); it is replaced atomically (temp file +
//! rename) with mode 0600; a learned overflow limit only ever goes down.

use std::collections::{BTreeMap, BTreeSet};

use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

/// File name inside the data dir.
pub const LIMITS_FILE: &str = "limits.json";

const VERSION: u32 = 1;

/// How a window came to be known, with its value and time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    pub context_window: u64,
    /// `detected from /props`, `learned from an overflow`…
    pub how: String,
    /// RFC 3339 UTC.
    pub learned_at: String,
}

/// What the cache knows about one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnedLimit {
    /// The window to use: the smaller of the detected and learned values.
    pub context_window: u64,
    /// How [`Self::context_window`] was learned.
    pub how: String,
    /// When [`Self::context_window`] was learned (RFC 3339 UTC).
    pub learned_at: String,
    pub detected: Option<Observation>,
    pub overflow: Option<Observation>,
}

impl LearnedLimit {
    /// The window the server reported, if it was asked.
    pub fn detected(&self) -> Option<u64> {
        self.detected.as_ref().map(|o| o.context_window)
    }

    /// The smallest window an overflow revealed.
    pub fn learned_from_overflow(&self) -> Option<u64> {
        self.overflow.as_ref().map(|o| o.context_window)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    base_url: String,
    model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detected: Option<Observation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    overflow: Option<Observation>,
    /// When the server was last asked for its window (RFC 3339 UTC), even
    /// if it did not say: the server is asked once, not on every start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    probed_at: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct FileFormat {
    version: u32,
    #[serde(default)]
    models: Vec<Entry>,
}

#[derive(Debug, thiserror::Error)]
pub enum LimitsError {
    #[error("cannot read the context-window cache {path}: {source}")]
    Read {
        path: Utf8PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the context-window cache {path} is not valid ({source}); delete it and eonyx will learn the windows again"
    )]
    Corrupt {
        path: Utf8PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot write the context-window cache {path}: {source}")]
    Write {
        path: Utf8PathBuf,
        #[source]
        source: std::io::Error,
    },
}

type Key = (String, String);

/// The cache, loaded in memory. Change it with the `record_*` methods, then
/// [`LimitsCache::save`].
#[derive(Debug, Clone)]
pub struct LimitsCache {
    dir: Utf8PathBuf,
    entries: BTreeMap<Key, Entry>,
    dirty: BTreeSet<Key>,
}

/// `base_url` without credentials, query, fragment or trailing slash.
pub fn normalize_base_url(base_url: &str) -> String {
    let mut s = base_url.trim();
    if let Some(i) = s.find(['?', '#']) {
        s = &s[..i];
    }
    let (scheme, rest) = match s.find("://") {
        Some(i) => (&s[..i + 3], &s[i + 3..]),
        None => ("", s),
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let path = path.trim_end_matches('/');
    format!("{scheme}{}{path}", authority.to_ascii_lowercase())
}

fn key(base_url: &str, name: &str) -> Key {
    (normalize_base_url(base_url), name.to_owned())
}

fn read_entries(path: &Utf8Path) -> Result<BTreeMap<Key, Entry>, LimitsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(source) => {
            return Err(LimitsError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let file: FileFormat = serde_json::from_str(&text).map_err(|source| LimitsError::Corrupt {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(file
        .models
        .into_iter()
        .map(|e| (key(&e.base_url, &e.model), e))
        .collect())
}

impl LimitsCache {
    /// Load `<data_dir>/limits.json`; a missing file is an empty cache.
    pub fn open(data_dir: &Utf8Path) -> Result<Self, LimitsError> {
        let entries = read_entries(&data_dir.join(LIMITS_FILE))?;
        Ok(Self {
            dir: data_dir.to_path_buf(),
            entries,
            dirty: BTreeSet::new(),
        })
    }

    /// An empty cache for `data_dir` (e.g. after [`LimitsError::Corrupt`]);
    /// saving it replaces the file.
    pub fn empty(data_dir: &Utf8Path) -> Self {
        Self {
            dir: data_dir.to_path_buf(),
            entries: BTreeMap::new(),
            dirty: BTreeSet::new(),
        }
    }

    pub fn path(&self) -> Utf8PathBuf {
        self.dir.join(LIMITS_FILE)
    }

    /// What is known about `name` at `base_url`.
    pub fn get(&self, base_url: &str, name: &str) -> Option<LearnedLimit> {
        let e = self.entries.get(&key(base_url, name))?;
        let best = match (&e.detected, &e.overflow) {
            (Some(d), Some(o)) if d.context_window < o.context_window => d,
            (_, Some(o)) => o,
            (Some(d), None) => d,
            (None, None) => return None,
        };
        Some(LearnedLimit {
            context_window: best.context_window,
            how: best.how.clone(),
            learned_at: best.learned_at.clone(),
            detected: e.detected.clone(),
            overflow: e.overflow.clone(),
        })
    }

    fn entry(&mut self, base_url: &str, name: &str) -> &mut Entry {
        let k = key(base_url, name);
        self.dirty.insert(k.clone());
        self.entries.entry(k.clone()).or_insert_with(|| Entry {
            base_url: k.0,
            model: k.1,
            ..Entry::default()
        })
    }

    /// Remember the window the server reported; `from` names where, e.g.
    /// `/props` (stored as `detected from /props`). Replaces an earlier
    /// detection.
    pub fn record_detected(&mut self, base_url: &str, name: &str, context_window: u64, from: &str) {
        self.entry(base_url, name).detected = Some(Observation {
            context_window,
            how: format!("detected from {from}"),
            learned_at: eonyx_core::time::now_rfc3339(),
        });
    }

    /// Whether the server was already asked for this model's window
    /// (whatever it answered).
    pub fn probed(&self, base_url: &str, name: &str) -> bool {
        self.entries
            .get(&key(base_url, name))
            .is_some_and(|e| e.probed_at.is_some() || e.detected.is_some())
    }

    /// Remember that the server was asked (call whether or not it answered).
    pub fn record_probe(&mut self, base_url: &str, name: &str) {
        self.entry(base_url, name).probed_at = Some(eonyx_core::time::now_rfc3339());
    }

    /// Remember the window an overflow revealed. Keeps the minimum of what
    /// was learned so far.
    pub fn record_overflow(&mut self, base_url: &str, name: &str, limit: u64) {
        let e = self.entry(base_url, name);
        if e.overflow
            .as_ref()
            .is_some_and(|o| o.context_window <= limit)
        {
            return;
        }
        e.overflow = Some(Observation {
            context_window: limit,
            how: "learned from an overflow".to_owned(),
            learned_at: eonyx_core::time::now_rfc3339(),
        });
    }

    /// Write the cache: re-reads the file so concurrent sessions do not undo
    /// each other's entries, merges this cache's changes, and replaces the
    /// file atomically (0600, data dir 0700).
    pub fn save(&self) -> Result<(), LimitsError> {
        let path = self.path();
        let write_err = |source| LimitsError::Write {
            path: path.clone(),
            source,
        };
        let mut merged = match read_entries(&path) {
            Ok(m) => m,
            Err(LimitsError::Corrupt { .. }) => BTreeMap::new(),
            Err(e) => return Err(e),
        };
        for k in &self.dirty {
            let Some(ours) = self.entries.get(k) else {
                continue;
            };
            let slot = merged.entry(k.clone()).or_insert_with(|| ours.clone());
            if ours.detected.is_some() {
                slot.detected = ours.detected.clone();
            }
            if ours.probed_at.is_some() {
                slot.probed_at = ours.probed_at.clone();
            }
            slot.overflow = match (slot.overflow.take(), ours.overflow.clone()) {
                (Some(a), Some(b)) => Some(if b.context_window < a.context_window {
                    b
                } else {
                    a
                }),
                (a, b) => a.or(b),
            };
        }
        let file = FileFormat {
            version: VERSION,
            models: merged.into_values().collect(),
        };
        let mut json =
            serde_json::to_string_pretty(&file).map_err(|e| write_err(std::io::Error::other(e)))?;
        json.push('\n');
        create_private_dir(&self.dir).map_err(write_err)?;
        eonyx_core::fs::write_atomic(
            &path,
            json.as_bytes(),
            eonyx_core::fs::AtomicWrite {
                durable: true,
                private: true,
            },
        )
        .map_err(write_err)?;
        Ok(())
    }
}

fn create_private_dir(dir: &Utf8Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

/// Where the effective context window comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowOrigin {
    /// `context_window` in the config.
    Configured,
    /// Reported by the server (the cache's `how`, e.g. `detected from /props`).
    Detected { how: String, learned_at: String },
    /// Learned from an overflow.
    Overflow { learned_at: String },
    /// Nothing known: [`eonyx_core::config::FALLBACK_CONTEXT_WINDOW`].
    Fallback,
}

/// The window to compact against: the smallest of the configured, detected
/// and learned values, else the fallback. Also returns the configured value
/// when something smaller overrode it (worth a warning).
pub fn effective_window(
    configured: Option<u64>,
    learned: Option<&LearnedLimit>,
) -> (u64, WindowOrigin, Option<u64>) {
    let mut best: Option<(u64, WindowOrigin)> = configured.map(|c| (c, WindowOrigin::Configured));
    let mut consider = |w: u64, origin: WindowOrigin| {
        if best.as_ref().is_none_or(|(b, _)| w < *b) {
            best = Some((w, origin));
        }
    };
    if let Some(l) = learned {
        if let Some(d) = &l.detected {
            consider(
                d.context_window,
                WindowOrigin::Detected {
                    how: d.how.clone(),
                    learned_at: d.learned_at.clone(),
                },
            );
        }
        if let Some(o) = &l.overflow {
            consider(
                o.context_window,
                WindowOrigin::Overflow {
                    learned_at: o.learned_at.clone(),
                },
            );
        }
    }
    match best {
        Some((w, origin)) => {
            let overridden = configured.filter(|c| *c != w);
            (w, origin, overridden)
        }
        None => (
            eonyx_core::config::FALLBACK_CONTEXT_WINDOW,
            WindowOrigin::Fallback,
            None,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> (tempfile::TempDir, Utf8PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let p = Utf8PathBuf::from_path_buf(t.path().join("data")).unwrap();
        (t, p)
    }

    #[test]
    fn detected_and_overflow_survive_a_reopen_and_overflow_keeps_the_minimum() {
        let (_t, data) = dir();
        let mut c = LimitsCache::open(&data).unwrap();
        assert_eq!(c.get("http://h/v1", "m"), None);
        c.record_detected("http://h/v1/", "m", 8192, "/props");
        c.record_overflow("http://h/v1", "m", 4096);
        c.record_overflow("http://h/v1", "m", 6000);
        c.save().unwrap();

        let c = LimitsCache::open(&data).unwrap();
        let l = c.get("http://h/v1", "m").unwrap();
        assert_eq!(l.context_window, 4096);
        assert_eq!(l.how, "learned from an overflow");
        assert_eq!(l.detected(), Some(8192));
        assert_eq!(l.learned_from_overflow(), Some(4096));
        assert_eq!(
            l.detected.as_ref().map(|d| d.how.as_str()),
            Some("detected from /props")
        );
        assert!(eonyx_core::time::parse_rfc3339(&l.learned_at).is_some());
        // Another model at the same server is separate.
        assert_eq!(c.get("http://h/v1", "other"), None);
    }

    #[test]
    fn file_is_private_and_never_holds_credentials() {
        let (_t, data) = dir();
        let mut c = LimitsCache::open(&data).unwrap();
        c.record_detected(
            "https://user:sk-secret@Example.com/v1/?api-key=sk-2#x",
            "m",
            100,
            "/v1/models",
        );
        c.save().unwrap();
        let text = std::fs::read_to_string(data.join(LIMITS_FILE)).unwrap();
        assert!(!text.contains("sk-"), "{text}");
        assert!(text.contains("\"https://example.com/v1\""), "{text}");
        let c = LimitsCache::open(&data).unwrap();
        assert_eq!(
            c.get("https://example.com/v1", "m")
                .map(|l| l.context_window),
            Some(100)
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(data.join(LIMITS_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = std::fs::metadata(&data).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }

    #[test]
    fn concurrent_saves_merge_instead_of_overwriting() {
        let (_t, data) = dir();
        let mut a = LimitsCache::open(&data).unwrap();
        let mut b = LimitsCache::open(&data).unwrap();
        a.record_overflow("http://h", "m", 3000);
        b.record_detected("http://h", "n", 9000, "/props");
        b.record_overflow("http://h", "m", 5000);
        a.save().unwrap();
        b.save().unwrap();
        let c = LimitsCache::open(&data).unwrap();
        assert_eq!(c.get("http://h", "m").map(|l| l.context_window), Some(3000));
        assert_eq!(c.get("http://h", "n").map(|l| l.context_window), Some(9000));
    }

    #[test]
    fn corrupt_file_is_an_error_that_says_what_to_do() {
        let (_t, data) = dir();
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join(LIMITS_FILE), "{not json").unwrap();
        let err = LimitsCache::open(&data).unwrap_err();
        assert!(err.to_string().contains("delete it"), "{err}");
        // An empty cache can replace it.
        let mut c = LimitsCache::empty(&data);
        c.record_overflow("http://h", "m", 10);
        c.save().unwrap();
        assert!(
            LimitsCache::open(&data)
                .unwrap()
                .get("http://h", "m")
                .is_some()
        );
    }

    #[test]
    fn effective_window_takes_the_smallest_known_value() {
        let (_t, data) = dir();
        assert_eq!(
            effective_window(None, None),
            (120_000, WindowOrigin::Fallback, None)
        );
        assert_eq!(
            effective_window(Some(8192), None),
            (8192, WindowOrigin::Configured, None)
        );
        let mut c = LimitsCache::empty(&data);
        c.record_detected("http://h", "m", 4096, "/props");
        let l = c.get("http://h", "m").unwrap();
        let (w, origin, overridden) = effective_window(Some(8192), Some(&l));
        assert_eq!((w, overridden), (4096, Some(8192)));
        assert!(
            matches!(origin, WindowOrigin::Detected { how, .. } if how == "detected from /props")
        );
        let (w, origin, _) = effective_window(Some(2048), Some(&l));
        assert_eq!((w, origin), (2048, WindowOrigin::Configured));
        c.record_overflow("http://h", "m", 3000);
        let l = c.get("http://h", "m").unwrap();
        let (w, origin, _) = effective_window(None, Some(&l));
        assert_eq!(w, 3000);
        assert!(matches!(origin, WindowOrigin::Overflow { .. }));
    }
}
