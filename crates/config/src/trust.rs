//! Project trust. An untrusted project's `eonyx.json` may set only the
//! keys in [`UNTRUSTED_MAY_SET`] (an allow-list: a key not listed, including
//! every key added later, is refused); [`restrict_untrusted`] applies it.
//! `eonyx trust` adds (or removes) a project root in the global config's
//! `trusted_projects`, editing `config.toml` in place so its comments and
//! layout survive. The file is replaced atomically (temp file + rename).

use std::collections::BTreeSet;

use camino::{Utf8Path, Utf8PathBuf};
use serde_json::Value;

use crate::options::global_config_path;
use crate::{ConfigError, DirPrivacy, write_config_file};

/// A key an untrusted project may set, and with which values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaySet {
    /// Dotted key; `*` stands for one model key (`models.*`) or profile
    /// name (`profiles.*`).
    pub key: &'static str,
    /// Which values are accepted.
    pub values: Values,
}

/// The values an untrusted project may give a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// Any value (limits and tuning).
    Any,
    /// Only `false` (keys that may turn a feature off, never on).
    OnlyFalse,
    /// Only `true` (keys that may turn a restriction on, never off).
    OnlyTrue,
    /// Only these strings (the strictest settings of a key).
    OnlyStr(&'static [&'static str]),
}

impl Values {
    fn accepts(self, value: &Value) -> bool {
        match self {
            Values::Any => true,
            Values::OnlyFalse => *value == Value::Bool(false),
            Values::OnlyTrue => *value == Value::Bool(true),
            Values::OnlyStr(allowed) => value.as_str().is_some_and(|v| allowed.contains(&v)),
        }
    }
}

const fn any(key: &'static str) -> MaySet {
    MaySet {
        key,
        values: Values::Any,
    }
}

const fn off_only(key: &'static str) -> MaySet {
    MaySet {
        key,
        values: Values::OnlyFalse,
    }
}

const fn on_only(key: &'static str) -> MaySet {
    MaySet {
        key,
        values: Values::OnlyTrue,
    }
}

const fn only(key: &'static str, allowed: &'static [&'static str]) -> MaySet {
    MaySet {
        key,
        values: Values::OnlyStr(allowed),
    }
}

/// **The** list of what an untrusted project's `eonyx.json` may set. Only
/// keys that cannot change where a request goes, which key it carries,
/// what a tool may do, or where memory lives belong here: never `provider`,
/// `base_url`, `api_key_env`, `name`, `model` (picks which configured
/// endpoint gets the conversation), `compaction.model` (likewise, for the
/// summary), a new `[models.KEY]` (a `models.*` key applies only to a model
/// the global config defines), tool permissions (`tools.shell`,
/// `tools.write`…) or `memory.*` locations. Everything not listed is
/// refused, so a new config key stays refused until it is added here.
/// A `compaction.X` entry also covers `models.*.compaction.X` and
/// `profiles.*.compaction.X`.
pub const UNTRUSTED_MAY_SET: &[MaySet] = &[
    any("max_steps"),
    // Compaction tuning.
    any("compaction.auto"),
    any("compaction.prune"),
    any("compaction.threshold_percent"),
    any("compaction.ahead_percent"),
    any("compaction.buffer_tokens"),
    any("compaction.keep_turns"),
    any("compaction.keep_tokens"),
    any("compaction.summary_max_tokens"),
    any("compaction.chars_per_token"),
    any("compaction.image_tokens"),
    any("compaction.tool_result_budget_chars"),
    any("compaction.keep_recent_results"),
    any("compaction.max_consecutive"),
    // Only sizes the prompt (docs/compaction.md#what-the-user-said).
    any("compaction.user_words_tokens"),
    // Only the summary's style (issue 12).
    any("compaction.temperature"),
    // Native compaction may only be turned off (docs/compaction.md#native-compaction).
    only("compaction.native", &["off"]),
    only("models.*.compaction_native", &["off"]),
    // Context-file caps.
    any("context.max_file_bytes"),
    any("context.max_total_bytes"),
    // Tool output and time limits (not permissions).
    any("tools.output_cap_bytes"),
    any("tools.shell_timeout_secs"),
    any("tools.max_edit_bytes"),
    any("tools.max_jobs"),
    any("tools.job_log_max_bytes"),
    any("tools.max_image_bytes"),
    any("tools.web_fetch_max_bytes"),
    any("tools.web_fetch_timeout_secs"),
    // The memory cap (where memory lives has no key at all).
    any("memory.max_bytes"),
    // Skills: prompt sizing only.
    any("skills.max_listed_bytes"),
    any("skills.max_reloaded_bytes"),
    // Limits and sampling of a model the global config defines.
    any("models.*.context_window"),
    any("models.*.max_input_tokens"),
    any("models.*.max_output_tokens"),
    any("models.*.temperature"),
    any("models.*.retries"),
    any("models.*.connect_timeout_secs"),
    any("models.*.idle_timeout_secs"),
    // Tasks: how many run at once is a limit; a profile's words are
    // prompt text like a context file. Not `tasks.max_depth` (deeper trees
    // give children the task tool), nor a profile's `tools` or `model`.
    any("tasks.max_parallel"),
    // A goal's continuation budget is a limit, like `max_steps`.
    any("goals.max_turns"),
    any("profiles.*.description"),
    any("profiles.*.instructions"),
    // The REPL's key bindings (not `repl.history_size`: the history is
    // shared by every project, so a project may not bound it).
    any("repl.edit_mode"),
    // How reasoning is shown: display only.
    any("ui.reasoning"),
    // Features a project may only turn off.
    off_only("memory.enabled"),
    // Mining may only be turned off (docs/memory.md#mining).
    only("memory.mine", &["off"]),
    off_only("tools.recall"),
    off_only("tools.task"),
    off_only("repl.history"),
    // The sandbox may only be tightened (docs/using-tools.md, section "Sandbox"):
    // `read-only` is at least as strict as any other mode, the network
    // can only be turned off and the sandbox only be made required.
    // `tools.sandbox_backend` and `tools.sandbox_writable` are not listed.
    only("tools.sandbox", &["read-only"]),
    off_only("tools.sandbox_network"),
    on_only("tools.sandbox_required"),
    // `web_fetch` may only be made stricter: "deny" or "ask" here, and
    // the merge ignores "ask" over the user's "deny" (resolve/mod.rs).
    // `tools.web_fetch_domains` and `tools.web_fetch_private_hosts` are
    // not listed.
    only("tools.web_fetch", &["deny", "ask"]),
];

/// Whether an untrusted project may set `key` (dotted segments) to `value`.
fn untrusted_may_set(key: &[String], value: &Value) -> bool {
    // `models.K.compaction.X` and `profiles.P.compaction.X` are judged as
    // `compaction.X`.
    let key: &[String] = match key {
        [top, _, section, ..]
            if (top == "models" || top == "profiles") && section == "compaction" =>
        {
            &key[2..]
        }
        _ => key,
    };
    UNTRUSTED_MAY_SET.iter().any(|m| {
        let pattern: Vec<&str> = m.key.split('.').collect();
        pattern.len() == key.len()
            && pattern.iter().zip(key).all(|(p, k)| *p == "*" || p == k)
            && m.values.accepts(value)
    })
}

/// Drop from an untrusted project's file everything [`UNTRUSTED_MAY_SET`]
/// does not allow, and every key of a model the global config does not
/// define (`global_models`). Returns the refused dotted keys, sorted.
pub fn restrict_untrusted(
    file: &mut crate::ConfigFile,
    global_models: &BTreeSet<String>,
) -> Vec<String> {
    let Ok(mut doc) = serde_json::to_value(&*file) else {
        // Not reachable for these plain types; refuse everything if it were.
        *file = crate::ConfigFile::default();
        return vec!["(the whole file)".to_owned()];
    };
    let mut refused = Vec::new();
    filter(&mut doc, &mut Vec::new(), global_models, &mut refused);
    *file = serde_json::from_value(doc).unwrap_or_default();
    refused.sort();
    refused
}

fn filter(
    value: &mut Value,
    path: &mut Vec<String>,
    global_models: &BTreeSet<String>,
    refused: &mut Vec<String>,
) {
    let Value::Object(map) = value else {
        return;
    };
    let keys: Vec<String> = map.keys().cloned().collect();
    for key in keys {
        path.push(key.clone());
        let remove = match map.get_mut(&key) {
            None | Some(Value::Null) => false,
            Some(child @ Value::Object(_)) => {
                filter(child, path, global_models, refused);
                // An emptied `[models.K]` would still declare model K, and
                // an emptied `[mcp_servers.S]` server S.
                path.len() == 2
                    && (path[0] == "models" || path[0] == "mcp_servers")
                    && child.as_object().is_some_and(|m| {
                        m.values().all(|v| match v {
                            Value::Null => true,
                            Value::Object(o) => o.is_empty(),
                            Value::Array(a) => a.is_empty(),
                            _ => false,
                        })
                    })
            }
            // Unset collections (`trusted_projects` is handled by the caller).
            Some(Value::Array(a)) if a.is_empty() => false,
            Some(leaf) => {
                let new_model =
                    path.len() > 2 && path[0] == "models" && !global_models.contains(&path[1]);
                if new_model || !untrusted_may_set(path, leaf) {
                    refused.push(path.join("."));
                    true
                } else {
                    false
                }
            }
        };
        if remove {
            map.remove(&key);
        }
        path.pop();
    }
}

/// The canonical form of a directory for trust comparisons (falls back to
/// the path as given when it cannot be resolved).
pub fn canonical_dir(path: &Utf8Path) -> Utf8PathBuf {
    std::fs::canonicalize(path)
        .ok()
        .and_then(|p| Utf8PathBuf::from_path_buf(p).ok())
        .unwrap_or_else(|| path.to_path_buf())
}

/// Whether `root` is listed in `trusted` (both compared canonically).
pub fn is_trusted(root: &Utf8Path, trusted: &[String]) -> bool {
    let root = canonical_dir(root);
    trusted.iter().any(|t| {
        let trimmed = t.trim_end_matches(['/', '\\']);
        let t = if trimmed.is_empty() {
            t.as_str()
        } else {
            trimmed
        };
        canonical_dir(Utf8Path::new(t)) == root
    })
}

/// What [`trust_project`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustChange {
    Added,
    AlreadyTrusted,
    Removed,
    /// `remove` was asked for a root that was not listed.
    NotListed,
}

/// Trust (or with `remove`, untrust) the project at `root`. The canonical
/// path is stored. Returns the canonical root and what changed.
pub fn trust_project(
    config_dir: &Utf8Path,
    root: &Utf8Path,
    remove: bool,
) -> Result<(Utf8PathBuf, TrustChange), ConfigError> {
    let canonical = match std::fs::canonicalize(root) {
        Ok(p) => Utf8PathBuf::from_path_buf(p)
            .map_err(|p| ConfigError::Path(crate::paths::PathError::NotUtf8(p)))?,
        // An untrust may name a directory that no longer exists.
        Err(_) if remove => root.to_path_buf(),
        Err(source) => {
            return Err(ConfigError::TrustPath {
                path: root.to_path_buf(),
                source,
            });
        }
    };
    if !remove && !canonical.is_dir() {
        return Err(ConfigError::TrustPath {
            path: root.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        });
    }
    let path = global_config_path(config_dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(ConfigError::Read { path, source }),
    };
    let (new_text, change) = edit_trusted(&text, &path, &canonical, remove)?;
    if matches!(change, TrustChange::Added | TrustChange::Removed) {
        write_config_file(&path, &new_text, DirPrivacy::Umask)?;
    }
    Ok((canonical, change))
}

/// The pure edit behind [`trust_project`].
pub fn edit_trusted(
    text: &str,
    path: &Utf8Path,
    root: &Utf8Path,
    remove: bool,
) -> Result<(String, TrustChange), ConfigError> {
    let mut doc = text.parse::<toml_edit::DocumentMut>().map_err(|e| {
        ConfigError::parse_at(path, text, e.span().map_or(0, |s| s.start), e.message())
    })?;
    let not_array = || ConfigError::Invalid {
        path: path.to_path_buf(),
        key: "trusted_projects".into(),
        message: "must be an array of paths, e.g. trusted_projects = [\"/home/me/project\"]".into(),
    };
    let listed = |v: &toml_edit::Value| {
        v.as_str()
            .is_some_and(|s| canonical_dir(Utf8Path::new(s)) == root || s == root.as_str())
    };
    if !doc.contains_key("trusted_projects") {
        if remove {
            return Ok((text.to_owned(), TrustChange::NotListed));
        }
        let has_root_values = doc.iter().any(|(_, item)| item.is_value());
        let mut item = toml_edit::value(toml_edit::Array::new());
        if let Some(kv) = item.as_value_mut() {
            kv.decor_mut().clear();
        }
        doc.insert("trusted_projects", item);
        if let Some(mut key) = doc.key_mut("trusted_projects") {
            let prefix = if has_root_values { "\n" } else { "" };
            key.leaf_decor_mut().set_prefix(format!(
                "{prefix}# Projects whose eonyx.json may set any key (provider, base_url, api_key_env, tool permissions)\n"
            ));
        }
    }
    let array = doc
        .get_mut("trusted_projects")
        .and_then(|i| i.as_array_mut())
        .ok_or_else(not_array)?;
    let change = if remove {
        let before = array.len();
        array.retain(|v| !listed(v));
        if array.len() == before {
            TrustChange::NotListed
        } else {
            TrustChange::Removed
        }
    } else if array.iter().any(listed) {
        TrustChange::AlreadyTrusted
    } else {
        array.push(root.as_str());
        TrustChange::Added
    };
    Ok((doc.to_string(), change))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::field_names;
    use crate::{CompactionFile, ContextFile, ModelFile, ReplFile, ToolsFile};

    fn utf8(p: &std::path::Path) -> Utf8PathBuf {
        Utf8PathBuf::from_path_buf(p.to_path_buf()).unwrap()
    }

    #[test]
    fn allow_list_matches_whole_keys_wildcards_and_off_only_values() {
        let k = |s: &str| s.split('.').map(str::to_owned).collect::<Vec<_>>();
        let yes = Value::Bool(true);
        let no = Value::Bool(false);
        assert!(untrusted_may_set(&k("compaction.keep_turns"), &yes));
        assert!(untrusted_may_set(
            &k("models.m.compaction.keep_turns"),
            &yes
        ));
        assert!(untrusted_may_set(&k("profiles.p.compaction.prune"), &no));
        assert!(untrusted_may_set(&k("profiles.p.instructions"), &yes));
        // A profile's tools could hand a read-only profile the shell.
        assert!(!untrusted_may_set(&k("profiles.explore.tools"), &yes));
        assert!(!untrusted_may_set(&k("profiles.p.model"), &yes));
        assert!(untrusted_may_set(&k("tasks.max_parallel"), &yes));
        assert!(!untrusted_may_set(&k("tasks.max_depth"), &yes));
        assert!(untrusted_may_set(&k("tools.task"), &no));
        assert!(!untrusted_may_set(&k("tools.task"), &yes));
        assert!(untrusted_may_set(&k("models.m.context_window"), &yes));
        assert!(!untrusted_may_set(&k("compaction.model"), &yes));
        assert!(!untrusted_may_set(&k("models.m.provider"), &yes));
        assert!(!untrusted_may_set(&k("models.m"), &yes));
        assert!(!untrusted_may_set(&k("compaction"), &yes));
        // A key nobody listed (e.g. one added later) is refused.
        assert!(!untrusted_may_set(&k("tools.write"), &yes));
        assert!(!untrusted_may_set(&k("memory.dir"), &yes));
        // Off-only keys: `false` yes, anything else no.
        assert!(untrusted_may_set(&k("memory.enabled"), &no));
        assert!(!untrusted_may_set(&k("memory.enabled"), &yes));
        assert!(!untrusted_may_set(
            &k("tools.recall"),
            &Value::from("allow")
        ));
    }

    #[test]
    fn trust_appends_and_keeps_comments_and_layout() {
        let cfg = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let cfg_dir = utf8(cfg.path());
        let original = "# my settings\nmodel = \"local\" # the default\n\n[models.local]\n# a local server\nbase_url = \"http://127.0.0.1:8080/v1\"\n";
        std::fs::write(cfg_dir.join("config.toml"), original).unwrap();

        let (root, change) = trust_project(&cfg_dir, &utf8(proj.path()), false).unwrap();
        assert_eq!(change, TrustChange::Added);
        let text = std::fs::read_to_string(cfg_dir.join("config.toml")).unwrap();
        assert!(text.starts_with("# my settings\nmodel = \"local\" # the default\n"));
        assert!(text.contains("# a local server\nbase_url"));
        // Still valid, and the root is now listed (so it lands before the
        // first table).
        let parsed = crate::parse_global(&text, &cfg_dir).unwrap();
        assert_eq!(parsed.trusted_projects, vec![root.to_string()]);

        let (_, again) = trust_project(&cfg_dir, &utf8(proj.path()), false).unwrap();
        assert_eq!(again, TrustChange::AlreadyTrusted);

        let (_, removed) = trust_project(&cfg_dir, &utf8(proj.path()), true).unwrap();
        assert_eq!(removed, TrustChange::Removed);
        let text = std::fs::read_to_string(cfg_dir.join("config.toml")).unwrap();
        let parsed = crate::parse_global(&text, &cfg_dir).unwrap();
        assert!(parsed.trusted_projects.is_empty());
        assert!(text.contains("# a local server"));
    }

    #[test]
    fn trust_creates_missing_config_and_rejects_missing_dir() {
        let cfg = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let cfg_dir = utf8(cfg.path()).join("nested/eonyx");
        let (root, change) = trust_project(&cfg_dir, &utf8(proj.path()), false).unwrap();
        assert_eq!(change, TrustChange::Added);
        let text = std::fs::read_to_string(cfg_dir.join("config.toml")).unwrap();
        assert!(text.contains(root.as_str()), "{text}");

        let err = trust_project(&cfg_dir, &utf8(proj.path()).join("nope"), false).unwrap_err();
        assert!(err.to_string().contains("cannot trust"), "{err}");
    }

    #[test]
    fn trusted_projects_of_wrong_type_is_an_error_naming_the_key() {
        let err = edit_trusted(
            "trusted_projects = \"/x\"\n",
            Utf8Path::new("/c/config.toml"),
            Utf8Path::new("/p"),
            false,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "/c/config.toml: invalid value for `trusted_projects`: must be an array of paths, e.g. trusted_projects = [\"/home/me/project\"]"
        );
    }

    /// A typo in the allow-list would silently refuse a safe key: every
    /// entry names a real key (off-only entries may name a key still to
    /// come).
    #[test]
    fn every_allow_list_entry_names_a_config_key() {
        for m in crate::trust::UNTRUSTED_MAY_SET {
            let parts: Vec<&str> = m.key.split('.').collect();
            let known = match parts.as_slice() {
                [k] => field_names::<crate::ConfigFile>().contains(&(*k).to_owned()),
                ["compaction", k] => field_names::<CompactionFile>().contains(&(*k).to_owned()),
                ["context", k] => field_names::<ContextFile>().contains(&(*k).to_owned()),
                ["tools", k] => field_names::<ToolsFile>().contains(&(*k).to_owned()),
                ["memory", k] => field_names::<crate::MemoryFile>().contains(&(*k).to_owned()),
                ["repl", k] => field_names::<ReplFile>().contains(&(*k).to_owned()),
                ["ui", k] => field_names::<crate::file::UiFile>().contains(&(*k).to_owned()),
                ["skills", k] => field_names::<crate::SkillsFile>().contains(&(*k).to_owned()),
                ["models", "*", k] => field_names::<ModelFile>().contains(&(*k).to_owned()),
                ["profiles", "*", k] => {
                    field_names::<crate::ProfileFile>().contains(&(*k).to_owned())
                }
                ["tasks", k] => field_names::<crate::TasksFile>().contains(&(*k).to_owned()),
                ["goals", k] => field_names::<crate::GoalsFile>().contains(&(*k).to_owned()),
                _ => false,
            };
            assert!(
                known || m.values == crate::trust::Values::OnlyFalse,
                "{} is not a config key",
                m.key
            );
        }
    }
}
