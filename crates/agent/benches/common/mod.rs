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

/// The header line (with its newline) of a bench session `id` in `project`.
#[allow(dead_code)] // not every bench writes its own session
pub fn header_line(id: &eonyx_core::SessionId, project: &str) -> String {
    use eonyx_core::record::{FORMAT_VERSION, Record, SessionHeader};
    let header = Record::Session(SessionHeader {
        version: FORMAT_VERSION,
        id: id.clone(),
        title: "1".into(),
        created: eonyx_core::time::now_rfc3339(),
        cwd: project.to_owned(),
        project: project.to_owned(),
        model: Some("bench".into()),
        forked_from: None,
        parent: None,
        parent_call: None,
        profile: None,
    });
    let mut out = header.to_line();
    out.push('\n');
    out
}
