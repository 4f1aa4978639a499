//! The learned/detected context-window cache (`<data dir>/limits.json`).
//!
//! Per (base URL, model name) it remembers the window the server reported
//! (`detected from /props`…), the smallest window an overflow or a silent
//! truncation revealed (`learned from an overflow`), each with the time it
//! was learned, and the request-shape changes the model needs (parameters
//! it refused). Only the file lives here; which window applies is decided
//! in one place, `eonyx_agent::limits`.
//!
//! Invariants: the file never holds an API key (base URLs are stored without
//! user info, query or fragment); it is replaced atomically (temp file +
//! rename) with mode 0600; a learned limit only goes down, until the server
//! reports a window different from the one it reported before (a restart
//! with another size), which forgets it.

use std::collections::{BTreeMap, BTreeSet};

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::provider::RequestQuirks;
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
    /// Parameters this model refused, and how the request is shaped instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    quirks: Option<RequestQuirks>,
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
        "the context-window cache {path} is not valid ({source}); the next session replaces it, or run `eonyx config --reset-limits`"
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
    /// Keys whose learned limit was forgotten (saved as is, not merged).
    cleared: BTreeSet<Key>,
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
            cleared: BTreeSet::new(),
        })
    }

    /// An empty cache for `data_dir` (e.g. after [`LimitsError::Corrupt`]);
    /// saving it replaces the file.
    pub fn empty(data_dir: &Utf8Path) -> Self {
        Self {
            dir: data_dir.to_path_buf(),
            entries: BTreeMap::new(),
            dirty: BTreeSet::new(),
            cleared: BTreeSet::new(),
        }
    }

    /// Forget everything: delete the file (`eonyx config --reset-limits`).
    /// Returns whether there was one.
    pub fn reset(data_dir: &Utf8Path) -> Result<bool, LimitsError> {
        let path = data_dir.join(LIMITS_FILE);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(LimitsError::Write { path, source }),
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
    /// detection, up or down. When the server now answers differently than
    /// it did, a learned limit is forgotten (it belonged to the old server).
    /// Returns whether the answer changed.
    pub fn record_detected(
        &mut self,
        base_url: &str,
        name: &str,
        context_window: u64,
        from: &str,
    ) -> bool {
        let k = key(base_url, name);
        let e = self.entry(base_url, name);
        let how = format!("detected from {from}");
        let changed = e
            .detected
            .as_ref()
            .is_none_or(|d| d.context_window != context_window || d.how != how);
        let differs = e
            .detected
            .as_ref()
            .is_some_and(|d| d.context_window != context_window);
        if !changed {
            return false;
        }
        e.detected = Some(Observation {
            context_window,
            how,
            learned_at: eonyx_core::time::now_rfc3339(),
        });
        if differs && e.overflow.take().is_some() {
            self.cleared.insert(k);
        }
        true
    }

    /// Remember the window an overflow revealed. Keeps the minimum of what
    /// was learned so far.
    pub fn record_overflow(&mut self, base_url: &str, name: &str, limit: u64) {
        self.record_learned(base_url, name, limit, "learned from an overflow");
    }

    /// Remember a window learned from the server's behaviour (`how`, e.g.
    /// `learned from a silent truncation`). Keeps the minimum.
    pub fn record_learned(&mut self, base_url: &str, name: &str, limit: u64, how: &str) {
        let e = self.entry(base_url, name);
        if e.overflow
            .as_ref()
            .is_some_and(|o| o.context_window <= limit)
        {
            return;
        }
        e.overflow = Some(Observation {
            context_window: limit,
            how: how.to_owned(),
            learned_at: eonyx_core::time::now_rfc3339(),
        });
    }

    /// The request-shape changes remembered for this model.
    pub fn quirks(&self, base_url: &str, name: &str) -> RequestQuirks {
        self.entries
            .get(&key(base_url, name))
            .and_then(|e| e.quirks)
            .unwrap_or_default()
    }

    /// Remember the request-shape changes this model needs.
    pub fn record_quirks(&mut self, base_url: &str, name: &str, quirks: RequestQuirks) {
        self.entry(base_url, name).quirks = (!quirks.is_empty()).then_some(quirks);
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
            if ours.quirks.is_some() {
                slot.quirks = ours.quirks;
            }
            slot.overflow = match (slot.overflow.take(), ours.overflow.clone()) {
                _ if self.cleared.contains(k) => ours.overflow.clone(),
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
        eonyx_core::fs::create_private_dir(&self.dir).map_err(write_err)?;
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
        assert!(err.to_string().contains("--reset-limits"), "{err}");
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
    fn a_different_server_answer_replaces_the_detection_and_forgets_what_was_learned() {
        let (_t, data) = dir();
        let mut c = LimitsCache::open(&data).unwrap();
        assert!(c.record_detected("http://h", "m", 8192, "/props"));
        c.record_overflow("http://h", "m", 6000);
        c.save().unwrap();
        // Same answer: the learned limit holds.
        let mut c = LimitsCache::open(&data).unwrap();
        assert!(!c.record_detected("http://h", "m", 8192, "/props"));
        assert_eq!(c.get("http://h", "m").unwrap().context_window, 6000);
        // A restart with a larger window: up, and the learned limit goes.
        assert!(c.record_detected("http://h", "m", 16384, "/props"));
        c.save().unwrap();
        let c = LimitsCache::open(&data).unwrap();
        let l = c.get("http://h", "m").unwrap();
        assert_eq!((l.context_window, l.overflow), (16384, None));
        // And down again.
        let mut c = LimitsCache::open(&data).unwrap();
        c.record_detected("http://h", "m", 2048, "/props");
        c.save().unwrap();
        let c = LimitsCache::open(&data).unwrap();
        assert_eq!(c.get("http://h", "m").unwrap().context_window, 2048);
    }

    #[test]
    fn quirks_are_remembered_per_model_and_reset_deletes_the_file() {
        let (_t, data) = dir();
        let mut c = LimitsCache::open(&data).unwrap();
        let q = RequestQuirks {
            drop_temperature: true,
            max_completion_tokens: true,
            no_images: true,
            responses_api: true,
            no_reasoning_effort: true,
            no_reasoning_content: true,
            no_native_compaction: true,
        };
        c.record_quirks("http://h/v1", "o3", q);
        c.save().unwrap();
        let c = LimitsCache::open(&data).unwrap();
        assert_eq!(c.quirks("http://h/v1", "o3"), q);
        assert_eq!(c.quirks("http://h/v1", "other"), RequestQuirks::default());
        assert!(LimitsCache::reset(&data).unwrap());
        assert!(!LimitsCache::reset(&data).unwrap());
        let c = LimitsCache::open(&data).unwrap();
        assert_eq!(c.quirks("http://h/v1", "o3"), RequestQuirks::default());
    }
}
