//! Memory mining's state on disk (docs/memory.md#mining): which sessions
//! were mined (or failed, or wait for a retry), the inbox of proposals,
//! the hashes of what was rejected, the entries `auto` accepted that the
//! next start announces, and what every mining request cost.
//!
//! Everything lives in `<data dir>/mining/`:
//! - `state.json`: [`MiningState`], replaced atomically under the
//!   exclusive lock on `.lock` (readers take it shared);
//! - `run.lock`: held by the one process that mines at a time, for its
//!   whole pass, so two processes never mine the same session.
//!
//! Invariants:
//! - Nothing dropped or rejected is kept as text: a rejected proposal
//!   leaves only the SHA-256 of its normalized text ([`text_hash`]), and a
//!   duplicate or a proposal holding a secret leaves nothing at all.
//! - Duplicates are judged by one comparison, [`normalize`] (case and
//!   runs of whitespace aside), against the memory entries, the inbox and
//!   the rejected hashes alike.
//! - A session is marked (mined or failed) only after its reply was
//!   handled; a request abandoned half-way leaves the session unmarked.
//! - Directories 0700, files 0600.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::memory::{MemoryEntry, MemoryScope};
use serde::{Deserialize, Serialize};

use crate::IoFailure;
use crate::fsutil::{atomic_write, create_private_dir, lock_file, try_lock_file};
use crate::memory::{MemoryError, MemoryStore};

/// Name of the mining directory under the data dir.
pub const MINING_DIR: &str = "mining";
/// The most request costs kept (the oldest go first).
const MAX_REQUESTS_KEPT: usize = 1000;
/// A reply that is not the JSON asked for is tried this many times in
/// all (at different starts) before the session is marked failed.
pub const MAX_ATTEMPTS: u32 = 2;

/// What went wrong with the mining state. Messages say what to do.
#[derive(Debug, thiserror::Error)]
pub enum MiningError {
    #[error(transparent)]
    Io(#[from] IoFailure),
    #[error(
        "the mining state {path} is damaged ({reason}); move it away and mining starts over (every session may be mined again)"
    )]
    Damaged { path: Utf8PathBuf, reason: String },
    #[error("no proposed memory with id {}; run `eonyx memory review --json` to list them", .ids.join(", "))]
    UnknownIds { ids: Vec<String> },
    #[error(transparent)]
    Memory(#[from] MemoryError),
}

impl From<crate::StoreError> for MiningError {
    fn from(e: crate::StoreError) -> Self {
        MiningError::Memory(MemoryError::from(e))
    }
}

impl MiningError {
    /// Its class: an unknown proposal id is the user's to correct, a
    /// memory entry refused is as [`MemoryError::class`] says, and a state
    /// file that cannot be read, written or parsed is a failure of the
    /// store.
    pub fn class(&self) -> eonyx_core::ErrorClass {
        match self {
            MiningError::UnknownIds { .. } => eonyx_core::ErrorClass::Usage,
            MiningError::Memory(e) => e.class(),
            MiningError::Io(_) | MiningError::Damaged { .. } => eonyx_core::ErrorClass::Store,
        }
    }
}

fn io(action: &'static str, path: &Utf8Path) -> impl FnOnce(std::io::Error) -> MiningError {
    IoFailure::of(action, path)
}

/// Where a session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MinedStatus {
    /// Mined: never again.
    Mined,
    /// The reply was not the JSON asked for; tried again at a later start.
    Retry,
    /// Tried [`MAX_ATTEMPTS`] times without a usable reply: never again.
    Failed,
}

/// One session's mining record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMining {
    pub status: MinedStatus,
    /// Requests whose reply was not usable.
    #[serde(default)]
    pub attempts: u32,
    /// RFC 3339 UTC of the last change.
    pub at: String,
    /// Proposals kept from it.
    #[serde(default)]
    pub proposals: u64,
}

/// A memory proposed from a session, waiting in the inbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// Short id for `--accept` / `--reject`.
    pub id: String,
    pub text: String,
    pub scope: MemoryScope,
    /// The session it came from.
    pub session: String,
    /// The record the model named as evidence; `None` when it named one
    /// that does not exist.
    pub seq: Option<u64>,
    /// That session's title, for display.
    #[serde(default)]
    pub title: String,
    /// The project root the session ran in.
    pub project: String,
    /// RFC 3339 UTC.
    pub proposed: String,
}

/// An entry `auto` accepted, announced once at the next start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Learned {
    /// The memory entry's id.
    pub entry: String,
    pub text: String,
    pub scope: MemoryScope,
    pub session: String,
    #[serde(default)]
    pub title: String,
    pub project: String,
}

/// What one mining request cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestCost {
    pub session: String,
    /// RFC 3339 UTC.
    pub at: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// `None` when the model has no pricing.
    pub cost_usd: Option<f64>,
}

/// Mining requests summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CostTotals {
    pub requests: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// `None` before any request, and once one request had no pricing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// A proposal as the model made it, before it is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub text: String,
    pub scope: MemoryScope,
    pub seq: Option<u64>,
}

/// What [`MiningState::propose`] did with a session's candidates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proposed {
    /// Kept (in the inbox, or for `auto` to accept).
    pub kept: Vec<Proposal>,
    /// Dropped as duplicates of an entry, a proposal or a rejection.
    pub duplicates: usize,
    /// Dropped because they hold a secret value.
    pub secrets: usize,
}

/// Everything in `state.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MiningState {
    #[serde(default)]
    pub sessions: BTreeMap<String, SessionMining>,
    /// Sessions found too short, with the message count they had then
    /// (read again only once they have grown).
    #[serde(default)]
    pub short: BTreeMap<String, u64>,
    #[serde(default)]
    pub proposals: Vec<Proposal>,
    /// SHA-256 of each rejected proposal's normalized text.
    #[serde(default)]
    pub rejected: BTreeSet<String>,
    #[serde(default)]
    pub learned: Vec<Learned>,
    #[serde(default)]
    pub requests: Vec<RequestCost>,
}

impl MiningState {
    /// Whether session `id` needs no (more) mining.
    pub fn is_done(&self, id: &str) -> bool {
        self.sessions
            .get(id)
            .is_some_and(|s| s.status != MinedStatus::Retry)
    }

    /// The proposals of `project`, oldest first.
    pub fn proposals_of<'a>(&'a self, project: &'a str) -> impl Iterator<Item = &'a Proposal> {
        self.proposals.iter().filter(move |p| p.project == project)
    }

    /// Check `candidates` from session `session` and keep the good ones
    /// (with fresh ids): duplicates of `existing` entries, of the inbox,
    /// of a rejection or of each other, and any holding one of `secrets`,
    /// are dropped without a trace. `valid_seq` says whether a `seq`
    /// exists in the session.
    pub fn propose(
        &mut self,
        source: &ProposalSource<'_>,
        candidates: Vec<Candidate>,
        existing: &[MemoryEntry],
        secrets: &[String],
        valid_seq: impl Fn(u64) -> bool,
    ) -> Proposed {
        let mut seen: BTreeSet<String> = existing.iter().map(|e| normalize(&e.text)).collect();
        seen.extend(self.proposals.iter().map(|p| normalize(&p.text)));
        let mut out = Proposed::default();
        for c in candidates {
            let text = one_line(&c.text);
            if text.is_empty() {
                continue;
            }
            if crate::secret::find(&text, secrets).is_some() {
                out.secrets += 1;
                continue;
            }
            let norm = normalize(&text);
            if seen.contains(&norm) || self.rejected.contains(&text_hash(&text)) {
                out.duplicates += 1;
                continue;
            }
            seen.insert(norm);
            let proposal = Proposal {
                id: self.fresh_id(),
                text,
                scope: c.scope,
                session: source.session.to_owned(),
                seq: c.seq.filter(|s| valid_seq(*s)),
                title: source.title.to_owned(),
                project: source.project.to_owned(),
                proposed: eonyx_core::time::now_rfc3339(),
            };
            self.proposals.push(proposal.clone());
            out.kept.push(proposal);
        }
        out
    }

    /// Reject proposals: removed from the inbox, their hashes kept so the
    /// same words are never proposed again.
    pub fn reject(&mut self, ids: &[&str]) -> Result<Vec<Proposal>, MiningError> {
        self.check_ids(ids)?;
        let (gone, kept): (Vec<Proposal>, Vec<Proposal>) = std::mem::take(&mut self.proposals)
            .into_iter()
            .partition(|p| ids.contains(&p.id.as_str()));
        self.proposals = kept;
        for p in &gone {
            self.rejected.insert(text_hash(&p.text));
        }
        Ok(gone)
    }

    /// Remove proposals from the inbox (accepted ones), returning them.
    pub fn take(&mut self, ids: &[&str]) -> Result<Vec<Proposal>, MiningError> {
        self.check_ids(ids)?;
        let (gone, kept): (Vec<Proposal>, Vec<Proposal>) = std::mem::take(&mut self.proposals)
            .into_iter()
            .partition(|p| ids.contains(&p.id.as_str()));
        self.proposals = kept;
        Ok(gone)
    }

    fn check_ids(&self, ids: &[&str]) -> Result<(), MiningError> {
        let unknown: Vec<String> = ids
            .iter()
            .filter(|id| !self.proposals.iter().any(|p| p.id == **id))
            .map(|s| (*s).to_owned())
            .collect();
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(MiningError::UnknownIds { ids: unknown })
        }
    }

    /// Record what a request cost (the oldest records go past
    /// `MAX_REQUESTS_KEPT`).
    pub fn record_cost(&mut self, cost: RequestCost) {
        self.requests.push(cost);
        if self.requests.len() > MAX_REQUESTS_KEPT {
            let extra = self.requests.len() - MAX_REQUESTS_KEPT;
            self.requests.drain(..extra);
        }
    }

    /// Mark session `id`: `Ok(kept)` mined with `kept` proposals, or a
    /// failed attempt (retried until [`MAX_ATTEMPTS`], then failed).
    pub fn mark(&mut self, id: &str, outcome: Result<u64, ()>) -> MinedStatus {
        let now = eonyx_core::time::now_rfc3339();
        let entry = self.sessions.entry(id.to_owned()).or_insert(SessionMining {
            status: MinedStatus::Retry,
            attempts: 0,
            at: now.clone(),
            proposals: 0,
        });
        entry.at = now;
        match outcome {
            Ok(kept) => {
                entry.status = MinedStatus::Mined;
                entry.proposals = kept;
            }
            Err(()) => {
                entry.attempts += 1;
                entry.status = if entry.attempts >= MAX_ATTEMPTS {
                    MinedStatus::Failed
                } else {
                    MinedStatus::Retry
                };
            }
        }
        self.short.remove(id);
        entry.status
    }

    /// Every recorded request summed.
    pub fn totals(&self) -> CostTotals {
        let mut t = CostTotals {
            cost_usd: Some(0.0),
            ..CostTotals::default()
        };
        for r in &self.requests {
            t.requests += 1;
            t.prompt_tokens += r.prompt_tokens;
            t.completion_tokens += r.completion_tokens;
            t.cost_usd = match (t.cost_usd, r.cost_usd) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
        }
        if t.requests == 0 {
            t.cost_usd = None;
        }
        t
    }

    fn fresh_id(&self) -> String {
        const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyz23456789";
        loop {
            let id: String = std::iter::once('p')
                .chain((0..5).map(|_| char::from(ALPHABET[fastrand::usize(..ALPHABET.len())])))
                .collect();
            if !self.proposals.iter().any(|p| p.id == id) {
                return id;
            }
        }
    }
}

/// The session a batch of candidates came from.
#[derive(Debug, Clone, Copy)]
pub struct ProposalSource<'a> {
    pub session: &'a str,
    pub title: &'a str,
    pub project: &'a str,
}

/// Accept `proposal` (its text replaced by `edited` when given) into the
/// memory of its project: an ordinary entry whose session is the source.
pub fn accept_into(
    memory: &MemoryStore,
    proposal: &Proposal,
    edited: Option<&str>,
    secrets: &[String],
) -> Result<MemoryEntry, MiningError> {
    let text = edited.unwrap_or(&proposal.text);
    Ok(memory.add(proposal.scope, text, &proposal.session, secrets)?)
}

/// The comparison duplicates and rejections use: lowercase, runs of
/// whitespace as one space, trimmed.
pub fn normalize(text: &str) -> String {
    text.split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// SHA-256 (hex) of [`normalize`]d text: what a rejection keeps.
pub fn text_hash(text: &str) -> String {
    crate::sha256_hex(normalize(text).as_bytes())
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The mining files of one data dir.
#[derive(Debug, Clone)]
pub struct MiningStore {
    dir: Utf8PathBuf,
}

/// The lock of the one process mining now; released on drop or exit.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

impl MiningStore {
    pub fn new(data_dir: &Utf8Path) -> Self {
        Self {
            dir: data_dir.join(MINING_DIR),
        }
    }

    /// `<data dir>/mining/state.json`.
    pub fn state_path(&self) -> Utf8PathBuf {
        self.dir.join("state.json")
    }

    /// The state now (empty when there is none yet).
    pub fn read(&self) -> Result<MiningState, MiningError> {
        if !self.dir.is_dir() {
            return Ok(MiningState::default());
        }
        let _lock = lock_file(&self.dir.join(".lock"), false)?;
        self.read_unlocked()
    }

    /// Change the state under the exclusive lock and save it atomically
    /// when `f` succeeds.
    pub fn update<T>(
        &self,
        f: impl FnOnce(&mut MiningState) -> Result<T, MiningError>,
    ) -> Result<T, MiningError> {
        create_private_dir(&self.dir)?;
        let _lock = lock_file(&self.dir.join(".lock"), true)?;
        let mut state = self.read_unlocked()?;
        let out = f(&mut state)?;
        let path = self.state_path();
        let bytes = serde_json::to_vec_pretty(&state).map_err(|e| MiningError::Damaged {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        atomic_write(&path, &bytes, true)?;
        Ok(out)
    }

    /// The run lock if no other process holds it.
    pub fn try_run_lock(&self) -> Result<Option<RunLock>, MiningError> {
        create_private_dir(&self.dir)?;
        Ok(try_lock_file(&self.dir.join("run.lock"))?.map(|f| RunLock { _file: f }))
    }

    /// The run lock, waiting for another process's pass to end.
    pub fn run_lock(&self) -> Result<RunLock, MiningError> {
        create_private_dir(&self.dir)?;
        let file = lock_file(&self.dir.join("run.lock"), true)?;
        Ok(RunLock { _file: file })
    }

    fn read_unlocked(&self) -> Result<MiningState, MiningError> {
        let path = self.state_path();
        match std::fs::read(&path) {
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(MiningState::default()),
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| MiningError::Damaged {
                path,
                reason: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(MiningState::default()),
            Err(e) => Err(io("read", &path)(e)),
        }
    }
}

#[cfg(test)]
mod tests;
