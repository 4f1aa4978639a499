//! What the agent benches share: the dirs, the config and the options of
//! an agent against an in-process provider, every tool call allowed.

use std::sync::Arc;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_agent::AgentOptions;
use eonyx_agent::tools::AllowAll;
use eonyx_core::paths::Env;
use eonyx_tests::ScriptedProvider;

/// The one model of every bench config (its provider is never called: the
/// agent is given an in-process one).
const MODEL: &str = "model = \"bench\"\n[models.bench]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\nname = \"bench-model\"\ncontext_window = 1000000\n";

/// Where one bench agent keeps its config, home, project and data.
pub struct Dirs {
    pub config: Utf8PathBuf,
    pub home: Utf8PathBuf,
    pub project: Utf8PathBuf,
    pub data: Utf8PathBuf,
}

impl Dirs {
    /// `config`, `home` and `project` under `root`, created, the project
    /// marked by an empty `eonyx.json`; the data dir is `data` (created by
    /// the agent when missing).
    pub fn create(root: &Utf8Path, data: Utf8PathBuf) -> Dirs {
        let dirs = Dirs {
            config: root.join("config"),
            home: root.join("home"),
            project: root.join("project"),
            data,
        };
        for d in [&dirs.config, &dirs.home, &dirs.project] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(dirs.project.join("eonyx.json"), "{}\n").unwrap();
        dirs
    }

    /// Writes `config.toml`: the bench model, then `extra`.
    pub fn write_config(&self, extra: &str) {
        std::fs::write(self.config.join("config.toml"), format!("{MODEL}{extra}")).unwrap();
    }

    /// The options of an agent in the project, answered by `provider`,
    /// every tool call allowed.
    pub fn options(&self, provider: ScriptedProvider) -> AgentOptions {
        let env = Env::from_pairs([
            ("HOME", self.home.as_str()),
            ("EONYX_DATA_DIR", self.data.as_str()),
            ("EONYX_CONFIG_DIR", self.config.as_str()),
        ]);
        AgentOptions {
            cwd: self.project.clone(),
            env,
            model: None,
            profile: None,
            permissions: eonyx_agent::tools::Permissions::NONE,
            approver: Some(Arc::new(AllowAll)),
            provider: Some(Arc::new(provider)),
            mcp: None,
            mcp_servers: Vec::new(),
            sandbox_helper: None,
        }
    }
}
