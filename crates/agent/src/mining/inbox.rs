//! The inbox of proposed memories (docs/memory.md#review): listing,
//! accepting (an ordinary memory entry naming its source session), editing
//! then accepting, rejecting (never proposed again), and what the cap
//! leaves out once an entry was accepted. `eonyx memory review` and
//! `/memory review` work through it (`review`).

use eonyx_config::Config;
use eonyx_core::memory::MemoryEntry;
use eonyx_store::memory::MemoryStore;
use eonyx_store::mining::{CostTotals, MiningStore, Proposal, accept_into};

use super::{MineError, MineOptions};

/// The proposals of one project, and its memory.
pub struct Inbox {
    mining: MiningStore,
    memory: MemoryStore,
    project: String,
    secrets: Vec<String>,
    max_bytes: u64,
}

/// An accepted proposal.
#[derive(Debug, Clone)]
pub struct Accepted {
    pub proposal: Proposal,
    pub entry: MemoryEntry,
}

impl Inbox {
    /// The inbox of the project `opts.cwd` is in.
    pub fn open(config: &Config, opts: &MineOptions) -> Result<Self, MineError> {
        let data = eonyx_config::paths::data_dir(&opts.env)
            .map_err(|e| MineError::Config(eonyx_config::ConfigError::Path(e)))?;
        let project = eonyx_config::paths::find_project(&opts.cwd).root;
        Ok(Self {
            mining: MiningStore::new(&data),
            memory: MemoryStore::new(&data, &project),
            project: project.to_string(),
            secrets: eonyx_config::secrets::configured_key_values(config, &opts.env),
            max_bytes: config.memory.max_bytes,
        })
    }

    /// The inbox of the project at `root`, in the data dir `data`, with
    /// the key values an entry must not hold (a session's, for
    /// `/memory review`).
    pub fn at(
        config: &Config,
        data: &camino::Utf8Path,
        root: &camino::Utf8Path,
        secrets: &[String],
    ) -> Self {
        Self {
            mining: MiningStore::new(data),
            memory: MemoryStore::new(data, root),
            project: root.to_string(),
            secrets: secrets.to_vec(),
            max_bytes: config.memory.max_bytes,
        }
    }

    /// The proposals waiting, oldest first. One holding a secret (filed
    /// before the detector knew its kind) is dropped here, never shown.
    pub fn pending(&self) -> Result<Vec<Proposal>, MineError> {
        let held = |p: &Proposal| eonyx_store::secret::find(&p.text, &self.secrets).is_some();
        let state = self.mining.read()?;
        let bad: Vec<String> = state
            .proposals_of(&self.project)
            .filter(|p| held(p))
            .map(|p| p.id.clone())
            .collect();
        if !bad.is_empty() {
            let ids: Vec<&str> = bad.iter().map(String::as_str).collect();
            self.mining.update(|s| s.take(&ids).map(|_| ()))?;
        }
        Ok(state
            .proposals_of(&self.project)
            .filter(|p| !held(p))
            .cloned()
            .collect())
    }

    /// What every mining request so far cost.
    pub fn costs(&self) -> Result<CostTotals, MineError> {
        Ok(self.mining.read()?.totals())
    }

    /// Accept proposal `id` (with `edited` text instead of its own): it
    /// becomes a memory entry whose session is the source. A refused entry
    /// (empty, a secret) leaves the proposal in the inbox.
    pub fn accept(&self, id: &str, edited: Option<&str>) -> Result<Accepted, MineError> {
        let memory = &self.memory;
        let secrets = &self.secrets;
        let project = &self.project;
        Ok(self.mining.update(|s| {
            let proposal = s
                .proposals_of(project)
                .find(|p| p.id == id)
                .cloned()
                .ok_or_else(|| eonyx_store::mining::MiningError::UnknownIds {
                    ids: vec![id.to_owned()],
                })?;
            let entry = accept_into(memory, &proposal, edited, secrets)?;
            s.take(&[id])?;
            Ok(Accepted { proposal, entry })
        })?)
    }

    /// Reject proposals `ids`: gone, and never proposed again.
    pub fn reject(&self, ids: &[&str]) -> Result<Vec<Proposal>, MineError> {
        let project = &self.project;
        Ok(self.mining.update(|s| {
            let unknown: Vec<String> = ids
                .iter()
                .filter(|id| !s.proposals_of(project).any(|p| p.id == **id))
                .map(|s| (*s).to_owned())
                .collect();
            if !unknown.is_empty() {
                return Err(eonyx_store::mining::MiningError::UnknownIds { ids: unknown });
            }
            s.reject(ids)
        })?)
    }

    /// The memory entries `memory.max_bytes` now leaves out of a
    /// session's `# Memory` section (oldest first).
    pub fn left_out(&self) -> Result<Vec<MemoryEntry>, MineError> {
        let entries = self.memory.list()?;
        Ok(eonyx_prompt::memory_left_out(&entries, self.max_bytes))
    }
}
