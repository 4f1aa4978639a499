//! Memory mined from past sessions (docs/memory.md#mining): which sessions
//! are eligible, the request that reads one (`transcript`, `reply`), what
//! becomes of its reply, and the background pass a frontend starts after
//! it opened its session (`background`). The state (marks, inbox,
//! rejections, costs) is `eonyx_store::mining`'s; frontends render
//! [`MiningEvent`]s.
//!
//! Invariants:
//! - Nothing reaches the `# Memory` section unseen: in `review` mode a
//!   proposal waits for `eonyx memory review`; in `auto` mode it is
//!   accepted and the next start announces it. Either way the section
//!   changes only when a session starts or compacts.
//! - A session open in any process (its lock held), a task's child, a
//!   session of another project, and a fork's copied history are never
//!   mined; a session is mined once.
//! - One process mines at a time (`mining/run.lock`), one session at a
//!   time, on its own thread and runtime: a turn never waits for it.
//! - A request that fails (no model, refused, cancelled) leaves the
//!   session unmarked for a later start; only a reply that is not the JSON
//!   asked for counts as an attempt.

mod background;
mod inbox;
mod reply;
pub mod review;
pub mod review_loop;
mod transcript;

use std::sync::Arc;

use camino::Utf8PathBuf;
use eonyx_config::{Config, LoadOptions, MineMode};
use eonyx_core::paths::Env;
use eonyx_core::provider::CancellationToken;
use eonyx_core::{ChatRequest, ErrorClass, ModelConfig, Provider, SessionId, SystemPrompt, Usage};
use eonyx_store::memory::MemoryStore;
use eonyx_store::mining::{Learned, MinedStatus, MiningStore, Proposal, ProposalSource};
use eonyx_store::{SessionSummary, Store, StoreError};

pub use background::{MiningHandle, start_background};
pub use inbox::{Accepted, Inbox};
pub use transcript::RESULT_CHARS;

use crate::secrets::Redactor;

/// What went wrong mining. Messages say what failed and what to do.
#[derive(Debug, thiserror::Error)]
pub enum MineError {
    #[error(transparent)]
    Config(#[from] eonyx_config::ConfigError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    State(#[from] eonyx_store::mining::MiningError),
    #[error(transparent)]
    Memory(#[from] eonyx_store::memory::MemoryError),
    #[error(
        "memory.mine_model `{key}` is not a configured model; set it to a key under [models] or leave it empty for the session's model"
    )]
    UnknownModel { key: String },
    #[error("the mining model could not be reached: {0}; mining is tried again at the next start")]
    Provider(#[from] eonyx_core::ProviderError),
    #[error("session {id} is open in another eonyx process (pid {}); mine it once that process ends", .pid.map_or_else(|| "unknown".to_owned(), |p| p.to_string()))]
    Open { id: SessionId, pid: Option<u32> },
    #[error("session {id} is a task's child session; only the session that started it is mined")]
    Child { id: SessionId },
    #[error("no session {id} in this data dir; `eonyx sessions` lists them")]
    NoSession { id: SessionId },
    #[error(
        "session {id} belongs to another project ({project}); mining stays in its project: run `eonyx memory mine --session {id}` in {project}"
    )]
    OtherProject { id: SessionId, project: String },
}

impl MineError {
    /// Its class: the user's to correct (an unknown proposal id, an entry
    /// refused as empty or holding a secret, a session that is another
    /// project's, a task's or in use) or a failure of what mining runs on.
    pub fn class(&self) -> ErrorClass {
        match self {
            MineError::Config(_) | MineError::UnknownModel { .. } => ErrorClass::Config,
            MineError::Store(e) => e.class(),
            MineError::State(e) => e.class(),
            MineError::Memory(e) => e.class(),
            MineError::Provider(e) => e.class(),
            MineError::Open { .. } => ErrorClass::SessionInUse,
            MineError::NoSession { .. } => ErrorClass::NotFound,
            MineError::Child { .. } | MineError::OtherProject { .. } => ErrorClass::Usage,
        }
    }
}

/// Where a frontend's process runs, to find its project and config.
#[derive(Clone)]
pub struct MineOptions {
    pub cwd: Utf8PathBuf,
    pub env: Env,
    /// `--model KEY`, `--profile NAME`, as the session was opened with.
    pub model: Option<String>,
    pub profile: Option<String>,
    /// Used instead of building an HTTP client (tests).
    pub provider: Option<Arc<dyn Provider>>,
}

/// Which sessions a pass looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// A start's background pass: eligible ones, at most
    /// `memory.mine_per_start`.
    Start,
    /// `eonyx memory mine`: like a start, in the foreground.
    Foreground,
    /// `--all`: every eligible session of this project.
    All,
    /// `--session ID`: this one, idle and minimum rules aside.
    Session(SessionId),
}

/// What a frontend shows of mining (`--json`: `memory_mined`,
/// `memory_proposed`).
#[derive(Debug, Clone, PartialEq)]
pub enum MiningEvent {
    /// A session is about to be read and sent.
    Started { session: String, title: String },
    /// A proposal kept (waiting for review, or accepted at once with
    /// `auto`: then `entry` is the memory entry's id).
    Proposed {
        proposal: Proposal,
        entry: Option<String>,
    },
    /// A session's request came back and was handled.
    Mined {
        session: String,
        title: String,
        /// Proposals kept.
        proposals: u64,
        usage: Usage,
        cost_usd: Option<f64>,
        /// The reply was not the JSON asked for: retried at a later start
        /// (`Retry`) or given up (`Failed`).
        status: MinedStatus,
    },
    /// Something that stopped the pass or a session; said once.
    Warning(String),
}

/// What a start shows before the first prompt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StartupNotes {
    /// Proposals of this project waiting for review.
    pub waiting: usize,
    /// Entries `auto` accepted since the last start (announced once: they
    /// are cleared from the state here).
    pub learned: Vec<Learned>,
}

/// One mining pass's tools: the config, the stores, the model.
pub struct Miner {
    config: Config,
    store: Store,
    mining: MiningStore,
    memory: MemoryStore,
    project: String,
    /// The model client, built on first use: a start's pass that finds no
    /// session to mine never builds it (nor its TLS roots).
    provider: std::sync::OnceLock<Arc<dyn Provider>>,
    env: Env,
    model: ModelConfig,
    redactor: Redactor,
    secrets: Vec<String>,
}

/// Load the configuration as a session in `opts.cwd` would.
pub fn load_config(opts: &MineOptions) -> Result<Config, MineError> {
    Ok(eonyx_config::load(&LoadOptions {
        cwd: opts.cwd.clone(),
        env: opts.env.clone(),
        model: opts.model.clone(),
        profile: opts.profile.clone(),
    })?)
}

/// Whether `config` mines at all (`memory.mine` not `off`, memory on).
pub fn enabled(config: &Config) -> bool {
    config.memory.enabled && config.memory.mine != MineMode::Off
}

/// The waiting count and the entries to announce, for this project; the
/// announced ones are cleared. Errors are the caller's to show as one
/// warning.
pub fn startup_notes(config: &Config, opts: &MineOptions) -> Result<StartupNotes, MineError> {
    let data = eonyx_config::paths::data_dir(&opts.env)
        .map_err(|e| MineError::Config(eonyx_config::ConfigError::Path(e)))?;
    let project = eonyx_config::paths::find_project(&opts.cwd)
        .root
        .to_string();
    let mining = MiningStore::new(&data);
    let state = mining.read()?;
    let waiting = state.proposals_of(&project).count();
    let mut learned = Vec::new();
    if config.memory.enabled && state.learned.iter().any(|l| l.project == project) {
        learned = mining.update(|s| {
            let (mine, rest): (Vec<Learned>, Vec<Learned>) = std::mem::take(&mut s.learned)
                .into_iter()
                .partition(|l| l.project == project);
            s.learned = rest;
            Ok(mine)
        })?;
    }
    Ok(StartupNotes { waiting, learned })
}

impl Miner {
    /// The miner for `config` (loaded for `opts.cwd`), its model client
    /// built (a configuration it cannot connect with fails here).
    pub fn new(config: Config, opts: &MineOptions) -> Result<Self, MineError> {
        let miner = Self::unconnected(config, opts)?;
        miner.provider()?;
        Ok(miner)
    }

    /// The miner for `config`, its model client left to the first session
    /// it mines (a start's background pass).
    pub fn unconnected(config: Config, opts: &MineOptions) -> Result<Self, MineError> {
        let data = eonyx_config::paths::data_dir(&opts.env)
            .map_err(|e| MineError::Config(eonyx_config::ConfigError::Path(e)))?;
        let store = Store::open(&data)?;
        let project = eonyx_config::paths::find_project(&opts.cwd).root;
        let model = if config.memory.mine_model.is_empty() {
            config.model.clone()
        } else {
            config
                .model_by_key(&config.memory.mine_model)
                .cloned()
                .ok_or_else(|| MineError::UnknownModel {
                    key: config.memory.mine_model.clone(),
                })?
        };
        let provider = std::sync::OnceLock::new();
        if let Some(p) = &opts.provider {
            let _ = provider.set(p.clone());
        }
        let key_vars = eonyx_config::secrets::key_env_vars(&config);
        Ok(Self {
            redactor: Redactor::new(&key_vars, &opts.env),
            secrets: eonyx_config::secrets::configured_key_values(&config, &opts.env),
            memory: MemoryStore::new(&data, &project),
            mining: MiningStore::new(&data),
            project: project.to_string(),
            store,
            provider,
            env: opts.env.clone(),
            model,
            config,
        })
    }

    /// The model client, built on the first call.
    fn provider(&self) -> Result<&Arc<dyn Provider>, MineError> {
        if let Some(p) = self.provider.get() {
            return Ok(p);
        }
        let built: Arc<dyn Provider> =
            Arc::from(eonyx_provider::from_config(&self.model, &self.env)?);
        Ok(self.provider.get_or_init(|| built))
    }

    pub fn mode(&self) -> MineMode {
        self.config.memory.mine
    }

    /// The mining state's files.
    pub fn state(&self) -> &MiningStore {
        &self.mining
    }

    /// The sessions `pick` mines, in the order they would be mined
    /// (oldest activity first). Session files are not read here.
    pub fn candidates(&self, pick: &Pick) -> Result<Vec<SessionSummary>, MineError> {
        let all = self.store.list()?;
        if let Pick::Session(id) = pick {
            let s = all
                .into_iter()
                .find(|s| &s.id == id)
                .ok_or_else(|| MineError::NoSession { id: id.clone() })?;
            if s.parent.is_some() {
                return Err(MineError::Child { id: id.clone() });
            }
            if s.project != self.project {
                return Err(MineError::OtherProject {
                    id: id.clone(),
                    project: s.project,
                });
            }
            if self.store.is_open(id) {
                return Err(MineError::Open {
                    id: id.clone(),
                    pid: None,
                });
            }
            return Ok(vec![s]);
        }
        let state = self.mining.read()?;
        let now_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        let idle_ns = (self.config.memory.mine_idle_hours * 3600.0 * 1e9) as i128;
        let mut out: Vec<SessionSummary> = all
            .into_iter()
            .filter(|s| s.project == self.project && s.parent.is_none())
            .filter(|s| !state.is_done(s.id.as_str()))
            .filter(|s| {
                // Short last time and not grown since: not read again.
                state.short.get(s.id.as_str()) != Some(&s.message_count)
            })
            .filter(|s| s.activity_ns.is_some_and(|t| now_ns - t >= idle_ns))
            .filter(|s| s.message_count >= u64::from(self.config.memory.mine_min_user_messages))
            .collect();
        out.reverse();
        out.retain(|s| !self.store.is_open(&s.id));
        Ok(out)
    }

    /// Mine one session: read it, send the request, handle the reply.
    /// `Ok(None)`: the session turned out too short (recorded, so it is
    /// read again only once it has grown).
    pub async fn mine(
        &self,
        session: &SessionSummary,
        pick: &Pick,
        cancel: CancellationToken,
        sink: &mut (dyn FnMut(MiningEvent) + Send),
    ) -> Result<Option<MinedStatus>, MineError> {
        let id = session.id.clone();
        let budget_chars = (self.config.memory.mine_budget_tokens as f64
            * self.config.compaction.chars_per_token) as usize;
        // What a rewind left out was taken back: never sent. Rewinds come
        // after what they rewind, so they are read first.
        let mut rewinds = Vec::new();
        self.store.read_each(&id, |r| {
            if let eonyx_core::Record::Rewind(r) = r {
                rewinds.push(r);
            }
        })?;
        let timeline = eonyx_core::timeline::Timeline::from_rewinds(&rewinds);
        let mut t = transcript::Transcript::new(budget_chars, self.redactor.clone());
        self.store.read_each(&id, |r| t.push(r, &timeline))?;
        let forced = matches!(pick, Pick::Session(_));
        if !forced && t.user_messages < u64::from(self.config.memory.mine_min_user_messages) {
            let count = session.message_count;
            self.mining.update(|s| {
                s.short.insert(id.to_string(), count);
                Ok(())
            })?;
            return Ok(None);
        }
        sink(MiningEvent::Started {
            session: id.to_string(),
            title: session.title.clone(),
        });
        let entries = self.memory.list().unwrap_or_default();
        let mut request = ChatRequest::new(
            self.model.name.clone(),
            SystemPrompt {
                stable: reply::system_prompt(),
                suffix: String::new(),
            },
            vec![eonyx_core::Message::user(reply::user_message(
                &session.title,
                &entries,
                &t.render(),
            ))],
        );
        request.cancel = cancel;
        request.temperature = Some(0.0);
        request.json_schema = Some(eonyx_core::JsonSchema {
            name: "eonyx_memories".into(),
            schema: reply::schema(),
        });
        let response = self.provider()?.send(&request, &mut |_| {}).await?;
        let usage = response.usage.unwrap_or_default();
        let cost_usd = self.model.pricing.as_ref().map(|p| p.cost_usd(&usage));
        let parsed = reply::parse(&response.message.content.text());
        let source = ProposalSource {
            session: id.as_str(),
            title: &session.title,
            project: &self.project,
        };
        let auto = self.config.memory.mine == MineMode::Auto;
        let seqs = &t.seqs;
        let (status, kept, accepted, secrets) = self.mining.update(|s| {
            s.record_cost(eonyx_store::mining::RequestCost {
                session: id.to_string(),
                at: eonyx_core::time::now_rfc3339(),
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
                cost_usd,
            });
            let candidates = match &parsed {
                Ok(c) => c.clone(),
                Err(_) => {
                    return Ok((s.mark(id.as_str(), Err(())), Vec::new(), Vec::new(), 0));
                }
            };
            let proposed = s.propose(&source, candidates, &entries, &self.secrets, |q| {
                seqs.contains(&q)
            });
            let mut accepted = Vec::new();
            if auto {
                let ids: Vec<&str> = proposed.kept.iter().map(|p| p.id.as_str()).collect();
                for p in s.take(&ids)? {
                    let entry =
                        eonyx_store::mining::accept_into(&self.memory, &p, None, &self.secrets)?;
                    let entry_id = entry.id.clone().unwrap_or_default();
                    s.learned.push(Learned {
                        entry: entry_id.clone(),
                        text: entry.text.clone(),
                        scope: entry.scope,
                        session: p.session.clone(),
                        title: p.title.clone(),
                        project: p.project.clone(),
                    });
                    accepted.push(Some(entry_id));
                }
            } else {
                accepted = vec![None; proposed.kept.len()];
            }
            let n = proposed.kept.len() as u64;
            Ok((
                s.mark(id.as_str(), Ok(n)),
                proposed.kept,
                accepted,
                proposed.secrets,
            ))
        })?;
        if secrets > 0 {
            sink(MiningEvent::Warning(format!(
                "mining session {id} (\"{}\"): dropped {secrets} proposal{} holding a secret (never stored)",
                session.title,
                if secrets == 1 { "" } else { "s" }
            )));
        }
        if let Err(why) = &parsed {
            sink(MiningEvent::Warning(format!(
                "mining session {} (\"{}\"): {why}; {}",
                id,
                session.title,
                if status == MinedStatus::Failed {
                    "it is not tried again"
                } else {
                    "it is tried again at a later start"
                }
            )));
        }
        for (proposal, entry) in kept.iter().cloned().zip(accepted) {
            sink(MiningEvent::Proposed { proposal, entry });
        }
        sink(MiningEvent::Mined {
            session: id.to_string(),
            title: session.title.clone(),
            proposals: kept.len() as u64,
            usage,
            cost_usd,
            status,
        });
        Ok(Some(status))
    }

    /// Mine what `pick` names, one session at a time, under the run lock
    /// (waited for in the foreground; a start whose lock is taken mines
    /// nothing). Stops at the first error that is not about one session
    /// (no model, refused): one warning, a later retry.
    pub async fn run(
        &self,
        pick: &Pick,
        cancel: CancellationToken,
        sink: &mut (dyn FnMut(MiningEvent) + Send),
    ) -> Result<usize, MineError> {
        let _lock = match pick {
            Pick::Start => match self.mining.try_run_lock()? {
                Some(l) => l,
                None => return Ok(0),
            },
            _ => self.mining.run_lock()?,
        };
        let limit = match pick {
            Pick::Start | Pick::Foreground => self.config.memory.mine_per_start as usize,
            Pick::All | Pick::Session(_) => usize::MAX,
        };
        let mut mined = 0;
        for s in self.candidates(pick)? {
            if mined >= limit || cancel.is_cancelled() {
                break;
            }
            // Checked again under the run lock: another process may have
            // mined it since the list was made.
            if !matches!(pick, Pick::Session(_)) && self.mining.read()?.is_done(s.id.as_str()) {
                continue;
            }
            if self.mine(&s, pick, cancel.clone(), sink).await?.is_some() {
                mined += 1;
            }
        }
        Ok(mined)
    }
}
