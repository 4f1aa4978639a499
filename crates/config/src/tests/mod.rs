//! Loading end to end: real files in a temporary config dir and project,
//! through [`crate::load()`] (parse, validate, trust, resolve).

use camino::{Utf8Path, Utf8PathBuf};

use crate::paths::Env;
use crate::{
    CompactionConfig, Config, LoadOptions, ProviderKind, ShellPolicy, Source, load, parse_global,
};

mod profiles;
mod untrusted;

struct Sandbox {
    _tmp: tempfile::TempDir,
    root: Utf8PathBuf,
}

impl Sandbox {
    pub(super) fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = Utf8PathBuf::from_path_buf(tmp.path().canonicalize().unwrap()).unwrap();
        std::fs::create_dir_all(root.join("cfg")).unwrap();
        std::fs::create_dir_all(root.join("proj/sub")).unwrap();
        Self { _tmp: tmp, root }
    }
    pub(super) fn global(&self, text: &str) -> &Self {
        std::fs::write(self.root.join("cfg/config.toml"), text).unwrap();
        self
    }
    pub(super) fn project(&self, text: &str) -> &Self {
        std::fs::write(self.root.join("proj/eonyx.json"), text).unwrap();
        self
    }
    pub(super) fn opts(&self, vars: &[(&str, &str)]) -> LoadOptions {
        let mut env = Env::from_pairs(vars.iter().copied());
        env.set("EONYX_CONFIG_DIR", self.root.join("cfg").as_str());
        LoadOptions {
            cwd: self.root.join("proj/sub"),
            env,
            model: None,
            profile: None,
        }
    }
    pub(super) fn load(&self, vars: &[(&str, &str)]) -> Config {
        load(&self.opts(vars)).unwrap()
    }
    /// Loaded with `--profile NAME`.
    pub(super) fn load_profile(&self, name: &str) -> Config {
        let mut o = self.opts(&[]);
        o.profile = Some(name.into());
        load(&o).unwrap()
    }
    pub(super) fn proj_root(&self) -> Utf8PathBuf {
        self.root.join("proj")
    }
    /// Replace the sandbox root in messages.
    pub(super) fn scrub(&self, s: &str) -> String {
        s.replace(self.root.as_str(), "[TMP]")
    }
}

const GLOBAL: &str = r#"
model = "local"
max_steps = 20

[models.local]
base_url = "http://127.0.0.1:8080/v1"
name = "gemma-3-270m"
context_window = 2048

[models.local.compaction]
threshold_percent = 75
keep_turns = 5

[models.big]
provider = "anthropic"
name = "claude"

[compaction]
threshold_percent = 90
buffer_tokens = 1000
keep_turns = 2
prune = false

[profiles.explore]
compaction = { threshold_percent = 50 }
"#;

#[test]
fn compaction_precedence_is_field_by_field() {
    let s = Sandbox::new();
    s.global(GLOBAL)
        .project(r#"{"compaction": {"buffer_tokens": 3000, "keep_tokens": 7, "prune": true}}"#);
    let c = s.load(&[]);
    let g = Source::Global {
        path: s.root.join("cfg/config.toml"),
    };
    let p = Source::Project {
        path: s.proj_root().join("eonyx.json"),
    };
    let m = Source::Model {
        key: "local".into(),
        path: s.root.join("cfg/config.toml"),
    };
    // model override > project > global > default, per field.
    assert_eq!(c.compaction.threshold_percent, 75.0);
    assert_eq!(c.source("compaction.threshold_percent"), m);
    assert_eq!(c.compaction.keep_turns, 5);
    assert_eq!(c.compaction.buffer_tokens, 3000);
    assert_eq!(c.source("compaction.buffer_tokens"), p);
    assert!(c.compaction.prune);
    assert_eq!(c.compaction.keep_tokens, 7);
    assert_eq!(c.compaction.summary_max_tokens, 4096);
    assert_eq!(c.source("compaction.summary_max_tokens"), Source::Default);
    assert_eq!(c.max_steps, 20);
    assert_eq!(c.source("max_steps"), g);

    // A profile beats the model override, only for the fields it sets.
    let c = s.load_profile("explore");
    assert_eq!(c.compaction.threshold_percent, 50.0);
    assert_eq!(
        c.source("compaction.threshold_percent"),
        Source::Profile {
            name: "explore".into(),
            path: s.root.join("cfg/config.toml")
        }
    );
    assert_eq!(c.compaction.keep_turns, 5);
    assert_eq!(c.profile.as_deref(), Some("explore"));

    // Another model does not get local's override.
    let mut o = s.opts(&[]);
    o.model = Some("big".into());
    let c = load(&o).unwrap();
    assert_eq!(c.compaction.threshold_percent, 90.0);
    assert_eq!(c.compaction.keep_turns, 2);
    assert_eq!(c.model.provider, ProviderKind::Anthropic);
    assert_eq!(c.model.base_url, "https://api.anthropic.com");
    assert_eq!(
        c.source("model"),
        Source::Flag {
            flag: "--model".into()
        }
    );
}

#[test]
fn env_vars_override_files() {
    let s = Sandbox::new();
    s.global(GLOBAL);
    let c = s.load(&[
        ("EONYX_AUTO_COMPACT", "false"),
        ("EONYX_AUTO_COMPACT_TOKENS", "0"),
        ("EONYX_COMPACTION_RESERVED_TOKENS", "512"),
    ]);
    assert!(!c.compaction.auto);
    assert_eq!(c.compaction.trigger_tokens_override, Some(0));
    assert_eq!(c.compaction.buffer_tokens, 512);
    assert_eq!(
        c.source("compaction.buffer_tokens"),
        Source::Env {
            var: "EONYX_COMPACTION_RESERVED_TOKENS".into()
        }
    );
    let err = load(&s.opts(&[("EONYX_AUTO_COMPACT_TOKENS", "lots")])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid value \"lots\" in $EONYX_AUTO_COMPACT_TOKENS: use a whole number of tokens, e.g. 50000"
    );
    let err = load(&s.opts(&[("EONYX_AUTO_COMPACT", "maybe")])).unwrap_err();
    assert!(err.to_string().contains("use true or false"), "{err}");
}

#[test]
fn zero_config_speaks_anthropic_with_only_anthropic_variables() {
    let s = Sandbox::new();
    let c = s.load(&[
        ("ANTHROPIC_API_KEY", "sk-ant"),
        ("ANTHROPIC_BASE_URL", "http://localhost:4000"),
        ("EONYX_MODEL", "claude-sonnet-4-5"),
    ]);
    assert_eq!(c.model.provider, ProviderKind::Anthropic);
    assert_eq!(c.model.base_url, "http://localhost:4000");
    assert_eq!(c.model.name, "claude-sonnet-4-5");
    assert_eq!(c.model.api_key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
    // The key alone: Anthropic's API root.
    let c = s.load(&[("ANTHROPIC_API_KEY", "sk-ant")]);
    assert_eq!(
        (c.model.provider, c.model.base_url.as_str()),
        (ProviderKind::Anthropic, "https://api.anthropic.com")
    );
    // OPENAI_* set too: OpenAI, as before.
    let c = s.load(&[("ANTHROPIC_API_KEY", "a"), ("OPENAI_API_KEY", "o")]);
    assert_eq!(c.model.provider, ProviderKind::Openai);
}

#[test]
fn keep_turns_zero_is_rejected_and_compaction_temperature_is_read() {
    let p = Utf8Path::new("/x/config.toml");
    let err = parse_global("[compaction]\nkeep_turns = 0\n", p).unwrap_err();
    assert!(err.to_string().contains("keep_turns"), "{err}");
    assert!(err.to_string().contains("at least 1"), "{err}");
    let err = parse_global("[compaction]\ntemperature = 9.0\n", p).unwrap_err();
    assert!(err.to_string().contains("temperature"), "{err}");
    let s = Sandbox::new();
    s.global("[compaction]\ntemperature = 0.3\n[models.m]\nname = \"x\"\n");
    let c = s.load(&[]);
    assert_eq!(c.compaction.temperature, Some(0.3));
}

#[test]
fn zero_config_runs_from_env_alone() {
    let s = Sandbox::new();
    let c = s.load(&[
        ("OPENAI_API_KEY", "sk-x"),
        ("OPENAI_BASE_URL", "http://localhost:1234/v1"),
        ("EONYX_MODEL", "qwen"),
    ]);
    assert_eq!(c.model_key, "default");
    assert_eq!(c.model.provider, ProviderKind::Openai);
    assert_eq!(c.model.base_url, "http://localhost:1234/v1");
    assert_eq!(c.model.name, "qwen");
    assert_eq!(c.model.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
    assert_eq!(
        c.source("models.default.name"),
        Source::Env {
            var: "EONYX_MODEL".into()
        }
    );
    assert_eq!(c.global_file, None);
    assert_eq!(c.project_file, None);

    // With no config, --model names the model (there are no keys).
    let mut o = s.opts(&[("EONYX_MODEL", "qwen")]);
    o.model = Some("gpt-4o".into());
    let c = load(&o).unwrap();
    assert_eq!(
        (c.model_key.as_str(), c.model.name.as_str()),
        ("default", "gpt-4o")
    );
    assert_eq!(
        c.source("models.default.name"),
        Source::Flag {
            flag: "--model".into()
        }
    );

    // Nothing at all: the public endpoint and no name (the provider
    // layer says how to configure one).
    let c = s.load(&[]);
    assert_eq!(c.model.base_url, "https://api.openai.com/v1");
    assert_eq!(c.model.name, "");
    assert_eq!(c.max_steps, 50);
    assert_eq!(c.compaction, CompactionConfig::default());
}

#[test]
fn eonyx_model_selects_a_key_or_renames_the_active_model() {
    let s = Sandbox::new();
    s.global(GLOBAL);
    let c = s.load(&[("EONYX_MODEL", "big")]);
    assert_eq!(c.model_key, "big");
    assert_eq!(c.model.name, "claude");
    assert_eq!(
        c.source("model"),
        Source::Env {
            var: "EONYX_MODEL".into()
        }
    );

    let c = s.load(&[("EONYX_MODEL", "gemma-3-1b")]);
    assert_eq!(c.model_key, "local");
    assert_eq!(c.model.name, "gemma-3-1b");
    assert_eq!(
        c.model_by_key("local").map(|m| m.name.as_str()),
        Some("gemma-3-1b")
    );

    // --model beats EONYX_MODEL as a key.
    let mut o = s.opts(&[("EONYX_MODEL", "big")]);
    o.model = Some("local".into());
    assert_eq!(load(&o).unwrap().model_key, "local");
}

#[test]
fn profile_model_selects_unless_model_flag() {
    let s = Sandbox::new();
    s.global(&format!("{GLOBAL}\n[profiles.cloud]\nmodel = \"big\"\n"));
    let mut o = s.opts(&[]);
    o.profile = Some("cloud".into());
    assert_eq!(load(&o).unwrap().model_key, "big");
    o.model = Some("local".into());
    assert_eq!(load(&o).unwrap().model_key, "local");

    o.profile = Some("nope".into());
    let err = load(&o).unwrap_err();
    assert_eq!(
        s.scrub(&err.to_string()),
        "unknown profile `nope`; profiles: cloud, explore, general. Add [profiles.nope] to [TMP]/cfg/config.toml"
    );
    let mut o = s.opts(&[]);
    o.model = Some("gpt".into());
    let err = load(&o).unwrap_err();
    assert_eq!(
        s.scrub(&err.to_string()),
        "unknown model `gpt`; configured models: big, local. Add [models.gpt] to [TMP]/cfg/config.toml"
    );
}

#[test]
fn repl_keys_resolve_and_an_untrusted_project_cannot_bound_the_shared_history() {
    use crate::EditMode;
    let s = Sandbox::new();
    let c = s.load(&[]);
    assert_eq!(c.repl.edit_mode, EditMode::Emacs);
    assert!(c.repl.history);
    assert_eq!(c.repl.history_size, 1000);

    s.global(&format!("{GLOBAL}\n[repl]\nhistory_size = 50\n"))
        .project(r#"{"repl": {"edit_mode": "vi", "history": false, "history_size": 1}}"#);
    let c = s.load(&[]);
    assert_eq!(c.repl.edit_mode, EditMode::Vi);
    assert!(!c.repl.history, "a project may turn history off");
    assert_eq!(c.repl.history_size, 50, "but not bound it while untrusted");
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("ignoring `repl.history_size`")),
        "{:?}",
        c.warnings
    );

    // Off in the global file stays off.
    s.global(&format!("{GLOBAL}\n[repl]\nhistory = false\n"))
        .project(r#"{"repl": {"history": true}}"#);
    assert!(!s.load(&[]).repl.history);

    s.global(&format!("{GLOBAL}\n[repl]\nhistory_size = 0\n"));
    let err = load(&s.opts(&[])).unwrap_err().to_string();
    assert!(err.contains("repl.history_size"), "{err}");
    s.global(&format!("{GLOBAL}\n[repl]\nedit_mod = \"vi\"\n"));
    let err = load(&s.opts(&[])).unwrap_err().to_string();
    assert!(err.contains("did you mean `edit_mode`"), "{err}");
}

#[test]
fn ahead_percent_follows_the_threshold_unless_set_and_an_untrusted_project_may_set_it() {
    let s = Sandbox::new();
    // Unset: ten points below whatever threshold wins (the model's 75).
    s.global(GLOBAL).project("{}");
    let c = s.load(&[]);
    assert_eq!(c.compaction.ahead_percent, None);
    assert_eq!(c.compaction.ahead_percent(), 65.0);
    // Set by the untrusted project (compaction tuning), no warning.
    s.project(r#"{"compaction": {"ahead_percent": 40}}"#);
    let c = s.load(&[]);
    assert!(!c.trusted);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(c.compaction.ahead_percent(), 40.0);
    assert!(matches!(
        c.source("compaction.ahead_percent"),
        Source::Project { .. }
    ));
    // 0 turns it off.
    s.project(r#"{"compaction": {"ahead_percent": 0}}"#);
    assert_eq!(s.load(&[]).compaction.ahead_percent(), 0.0);
    // Not below the threshold another layer set: the default, with a warning
    // naming both files.
    s.project(r#"{"compaction": {"ahead_percent": 80}}"#);
    let c = s.load(&[]);
    assert_eq!(c.compaction.ahead_percent(), 65.0);
    assert_eq!(c.source("compaction.ahead_percent"), Source::Default);
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    let w = s.scrub(&c.warnings[0]);
    assert_eq!(
        w,
        "compaction.ahead_percent = 80 ([TMP]/proj/eonyx.json) is not below compaction.threshold_percent = 75 ([TMP]/cfg/config.toml [models.local]); using the default, 65"
    );
    // A low threshold still gets a point below it.
    let low = CompactionConfig {
        threshold_percent: 12.0,
        ..CompactionConfig::default()
    };
    assert_eq!(low.ahead_percent(), 6.0);
}

#[test]
fn several_models_without_a_choice_is_an_error_and_compaction_model_must_exist() {
    let s = Sandbox::new();
    s.global("[models.a]\nname = \"a\"\n[models.b]\nname = \"b\"\n");
    let err = load(&s.opts(&[])).unwrap_err();
    assert!(
        err.to_string()
            .contains("several models are configured (a, b)"),
        "{err}"
    );
    s.global("[models.a]\nname = \"a\"\n[compaction]\nmodel = \"summ\"\n");
    let err = load(&s.opts(&[])).unwrap_err();
    assert_eq!(
        s.scrub(&err.to_string()),
        "[TMP]/cfg/config.toml: invalid value for `compaction.model`: no model `summ` is configured; known models: a"
    );
}

#[test]
fn project_is_found_by_walking_up_and_openai_base_url_applies_to_openai_models() {
    let s = Sandbox::new();
    s.global("[models.m]\nname = \"n\"\n")
        .project(r#"{"max_steps": 7}"#);
    let c = s.load(&[("OPENAI_BASE_URL", "http://proxy/v1")]);
    assert_eq!(c.project_root, s.proj_root());
    assert_eq!(c.project_file, Some(s.proj_root().join("eonyx.json")));
    assert_eq!(c.max_steps, 7);
    assert_eq!(c.model.base_url, "http://proxy/v1");
    assert_eq!(
        c.source("models.m.base_url"),
        Source::Env {
            var: "OPENAI_BASE_URL".into()
        }
    );
}

mod mcp;
