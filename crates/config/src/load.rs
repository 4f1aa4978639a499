//! Reading, validating and merging config files (README, section "Configuration
//! reference").
//!
//! [`parse_global`] and [`parse_project`] are pure (text in, typed file or a
//! positioned error out) so that the fuzz target and tests can drive them
//! without a filesystem. [`load`] reads the files, applies trust, merges the
//! layers field by field and records a [`Source`] for every resolved key.

use std::collections::{BTreeMap, BTreeSet};

use camino::{Utf8Path, Utf8PathBuf};

use crate::paths::Env;
use crate::{
    CompactionConfig, CompactionFile, Config, ConfigError, ContextFile, ModelConfig, ModelFile,
    ProfileFile, ProviderKind, ReplFile, SkillsFile, Source, ToolsFile,
};

/// File name of the global config inside the config dir.
pub const GLOBAL_FILE: &str = "config.toml";

/// Default base URL of the zero-config model.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Key of the implicit model used when no model is configured.
pub const IMPLICIT_MODEL_KEY: &str = "default";

/// Inputs of [`load`].
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub cwd: Utf8PathBuf,
    pub env: Env,
    /// `--model KEY`.
    pub model: Option<String>,
    /// `--profile NAME`.
    pub profile: Option<String>,
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

/// Parse and validate a global `config.toml`. `path` is only used in error
/// messages.
pub fn parse_global(text: &str, path: &Utf8Path) -> Result<crate::ConfigFile, ConfigError> {
    let file = match toml::from_str::<crate::ConfigFile>(text) {
        Ok(file) => file,
        Err(e) => {
            let offset = e.span().map_or(0, |s| s.start);
            let (line, column) = line_col(text, offset);
            return Err(positioned_error(
                text,
                path,
                e.message(),
                line,
                column,
                || {
                    toml::from_str::<toml::Table>(text)
                        .ok()
                        .and_then(|t| serde_json::to_value(t).ok())
                },
            ));
        }
    };
    validate(&file, path)?;
    Ok(file)
}

/// Parse and validate a project `eonyx.json`. An empty (or whitespace-only)
/// file counts as `{}`, so `touch eonyx.json` marks a project root.
pub fn parse_project(text: &str, path: &Utf8Path) -> Result<crate::ConfigFile, ConfigError> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Ok(crate::ConfigFile::default());
    }
    if !trimmed.starts_with('{') {
        let (line, column) = line_col(text, text.len() - trimmed.len());
        return Err(ConfigError::Parse {
            path: path.to_path_buf(),
            line,
            column,
            message: "the project config must be a JSON object, e.g. {}".to_owned(),
        });
    }
    let file = match serde_json::from_str::<crate::ConfigFile>(text) {
        Ok(file) => file,
        Err(e) => {
            let (line, column) = (e.line().max(1), e.column().max(1));
            let full = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            let message = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
            return Err(positioned_error(text, path, &message, line, column, || {
                serde_json::from_str::<serde_json::Value>(text).ok()
            }));
        }
    };
    validate(&file, path)?;
    Ok(file)
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Turn a serde error into [`ConfigError::UnknownKey`] (with the full dotted
/// key and a hint) or [`ConfigError::Parse`] (with the offending line).
fn positioned_error(
    text: &str,
    path: &Utf8Path,
    message: &str,
    line: usize,
    column: usize,
    generic: impl FnOnce() -> Option<serde_json::Value>,
) -> ConfigError {
    if let Some(field) = unknown_field_name(message) {
        let unknown = generic().map(|v| unknown_keys(&v)).unwrap_or_default();
        let found = unknown
            .iter()
            .find(|u| u.key.last().is_some_and(|k| k == field));
        let (key, hint) = match found {
            Some(u) => (u.key.join("."), hint_for(&u.key, &u.known)),
            None => (field.to_owned(), String::new()),
        };
        return ConfigError::UnknownKey {
            path: path.to_path_buf(),
            line,
            key,
            hint,
        };
    }
    let mut message = message.trim().to_owned();
    if let Some(src) = text.lines().nth(line.saturating_sub(1)) {
        let src = src.trim();
        if !src.is_empty() {
            let shown = eonyx_core::text::ellipsize(src, 80);
            message.push_str(&format!(" (in `{shown}`)"));
        }
    }
    ConfigError::Parse {
        path: path.to_path_buf(),
        line,
        column,
        message,
    }
}

/// `unknown field `x`, expected …` → `x`.
fn unknown_field_name(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    let end = rest.find('`')?;
    Some(&rest[..end])
}

/// An unknown key found by walking a parsed document against the schema.
#[derive(Debug)]
struct UnknownKey {
    key: Vec<String>,
    known: Vec<String>,
}

/// Field names of a file section, taken from the types themselves so the
/// list never drifts from what serde accepts.
fn field_names<T: serde::Serialize + Default>() -> Vec<String> {
    match serde_json::to_value(T::default()) {
        Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

#[derive(Clone, Copy)]
enum Section {
    Root,
    Models,
    Model,
    Profiles,
    Profile,
    Compaction,
    Context,
    Tools,
    Memory,
    Repl,
    Skills,
    Leaf,
}

impl Section {
    fn known(self) -> Option<Vec<String>> {
        match self {
            Section::Root => Some(field_names::<crate::ConfigFile>()),
            Section::Model => Some(field_names::<ModelFile>()),
            Section::Profile => Some(field_names::<ProfileFile>()),
            Section::Compaction => Some(field_names::<CompactionFile>()),
            Section::Context => Some(field_names::<ContextFile>()),
            Section::Tools => Some(field_names::<ToolsFile>()),
            Section::Memory => Some(field_names::<crate::MemoryFile>()),
            Section::Repl => Some(field_names::<ReplFile>()),
            Section::Skills => Some(field_names::<SkillsFile>()),
            Section::Models | Section::Profiles | Section::Leaf => None,
        }
    }

    fn child(self, key: &str) -> Section {
        match (self, key) {
            (Section::Root, "models") => Section::Models,
            (Section::Root, "profiles") => Section::Profiles,
            (Section::Root, "compaction") => Section::Compaction,
            (Section::Root, "context") => Section::Context,
            (Section::Root, "tools") => Section::Tools,
            (Section::Root, "memory") => Section::Memory,
            (Section::Root, "repl") => Section::Repl,
            (Section::Root, "skills") => Section::Skills,
            (Section::Models, _) => Section::Model,
            (Section::Profiles, _) => Section::Profile,
            (Section::Model | Section::Profile, "compaction") => Section::Compaction,
            _ => Section::Leaf,
        }
    }
}

fn unknown_keys(doc: &serde_json::Value) -> Vec<UnknownKey> {
    fn walk(
        value: &serde_json::Value,
        section: Section,
        path: &mut Vec<String>,
        out: &mut Vec<UnknownKey>,
    ) {
        let serde_json::Value::Object(map) = value else {
            return;
        };
        let known = section.known();
        for (key, child) in map {
            path.push(key.clone());
            match &known {
                Some(known) if !known.iter().any(|k| k == key) => out.push(UnknownKey {
                    key: path.clone(),
                    known: known.clone(),
                }),
                _ => walk(child, section.child(key), path, out),
            }
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(doc, Section::Root, &mut Vec::new(), &mut out);
    out
}

/// "; did you mean `x`?" for a close known key, or a pointer to the section
/// a key belongs in.
fn hint_for(key: &[String], known: &[String]) -> String {
    let Some(name) = key.last() else {
        return String::new();
    };
    let best = known
        .iter()
        .map(|k| (edit_distance(name, k), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min_by_key(|(d, _)| *d);
    if let Some((_, k)) = best {
        return format!("; did you mean `{k}`?");
    }
    // A known key at the wrong level (e.g. `threshold_percent` at the top).
    let sections: [(&str, Vec<String>); 6] = [
        ("compaction", field_names::<CompactionFile>()),
        ("context", field_names::<ContextFile>()),
        ("tools", field_names::<ToolsFile>()),
        ("memory", field_names::<crate::MemoryFile>()),
        ("repl", field_names::<ReplFile>()),
        ("skills", field_names::<SkillsFile>()),
    ];
    for (section, fields) in sections {
        if fields.iter().any(|f| f == name) {
            return format!("; `{name}` belongs in the [{section}] table");
        }
    }
    if field_names::<ModelFile>().iter().any(|f| f == name) {
        return format!("; `{name}` belongs in a [models.KEY] table");
    }
    format!("; known keys here: {}", known.join(", "))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

/// Check value ranges of a parsed file; errors name the file and the dotted
/// key.
pub fn validate(file: &crate::ConfigFile, path: &Utf8Path) -> Result<(), ConfigError> {
    let invalid = |key: String, message: &str| ConfigError::Invalid {
        path: path.to_path_buf(),
        key,
        message: message.to_owned(),
    };
    if let Some(m) = &file.model
        && m.trim().is_empty()
    {
        return Err(invalid("model".into(), "the model key must not be empty"));
    }
    if file.max_steps == Some(0) {
        return Err(invalid("max_steps".into(), "must be at least 1"));
    }
    if let Some(c) = &file.compaction {
        validate_compaction(c, "compaction", path)?;
    }
    if let Some(c) = &file.context {
        if c.max_file_bytes == Some(0) {
            return Err(invalid(
                "context.max_file_bytes".into(),
                "must be at least 1",
            ));
        }
        if c.max_total_bytes == Some(0) {
            return Err(invalid(
                "context.max_total_bytes".into(),
                "must be at least 1",
            ));
        }
    }
    if let Some(t) = &file.tools {
        if t.output_cap_bytes == Some(0) {
            return Err(invalid(
                "tools.output_cap_bytes".into(),
                "must be at least 1",
            ));
        }
        if t.shell_timeout_secs == Some(0) {
            return Err(invalid(
                "tools.shell_timeout_secs".into(),
                "must be at least 1",
            ));
        }
        if t.max_edit_bytes == Some(0) {
            return Err(invalid("tools.max_edit_bytes".into(), "must be at least 1"));
        }
    }
    if let Some(m) = &file.memory
        && m.max_bytes == Some(0)
    {
        return Err(invalid(
            "memory.max_bytes".into(),
            "must be at least 1; set memory.enabled = false to turn memory off",
        ));
    }
    if let Some(r) = &file.repl
        && r.history_size == Some(0)
    {
        return Err(invalid(
            "repl.history_size".into(),
            "must be at least 1; to keep no history set `repl.history = false`",
        ));
    }
    for (key, m) in &file.models {
        let k = |field: &str| format!("models.{key}.{field}");
        if key.trim().is_empty() {
            return Err(invalid("models".into(), "a model key must not be empty"));
        }
        if let Some(url) = &m.base_url {
            let lower = url.to_ascii_lowercase();
            if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                return Err(invalid(
                    k("base_url"),
                    &format!("{url:?} is not an http:// or https:// URL"),
                ));
            }
        }
        if m.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return Err(invalid(k("name"), "must not be empty"));
        }
        if let Some(var) = &m.api_key_env
            && (var.is_empty()
                || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                || var.starts_with(|c: char| c.is_ascii_digit()))
        {
            return Err(invalid(
                k("api_key_env"),
                "must be the NAME of an environment variable (letters, digits, _), \
                 e.g. \"OPENAI_API_KEY\" — never the key itself",
            ));
        }
        for (field, v) in [
            ("context_window", m.context_window),
            ("max_input_tokens", m.max_input_tokens),
            ("max_output_tokens", m.max_output_tokens),
            ("connect_timeout_secs", m.connect_timeout_secs),
            ("idle_timeout_secs", m.idle_timeout_secs),
        ] {
            if v == Some(0) {
                return Err(invalid(k(field), "must be at least 1"));
            }
        }
        if let Some(t) = m.temperature
            && (!t.is_finite() || !(0.0..=2.0).contains(&t))
        {
            return Err(invalid(k("temperature"), "must be between 0 and 2"));
        }
        if let Some(c) = &m.compaction {
            validate_compaction(c, &k("compaction"), path)?;
        }
    }
    for (name, p) in &file.profiles {
        if let Some(m) = &p.model
            && m.trim().is_empty()
        {
            return Err(invalid(
                format!("profiles.{name}.model"),
                "the model key must not be empty",
            ));
        }
        if let Some(c) = &p.compaction {
            validate_compaction(c, &format!("profiles.{name}.compaction"), path)?;
        }
    }
    if file.trusted_projects.iter().any(|p| p.trim().is_empty()) {
        return Err(invalid(
            "trusted_projects".into(),
            "entries must be non-empty paths",
        ));
    }
    Ok(())
}

fn validate_compaction(
    c: &CompactionFile,
    prefix: &str,
    path: &Utf8Path,
) -> Result<(), ConfigError> {
    let invalid = |field: &str, message: &str| ConfigError::Invalid {
        path: path.to_path_buf(),
        key: format!("{prefix}.{field}"),
        message: message.to_owned(),
    };
    if let Some(t) = c.threshold_percent
        && (!t.is_finite() || !(1.0..=100.0).contains(&t))
    {
        return Err(invalid(
            "threshold_percent",
            &format!("{t} is out of range; use a percentage from 1 to 100 (fractions allowed)"),
        ));
    }
    if let Some(r) = c.chars_per_token
        && (!r.is_finite() || r <= 0.0)
    {
        return Err(invalid(
            "chars_per_token",
            &format!("{r} must be a number greater than 0, e.g. 4.0"),
        ));
    }
    if c.summary_max_tokens == Some(0) {
        return Err(invalid("summary_max_tokens", "must be at least 1"));
    }
    if c.keep_turns == Some(0) {
        return Err(invalid(
            "keep_turns",
            "must be at least 1: the turn in progress is always kept verbatim (to summarize as much as possible, use 1)",
        ));
    }
    if let Some(t) = c.temperature
        && (!t.is_finite() || !(0.0..=2.0).contains(&t))
    {
        return Err(invalid(
            "temperature",
            &format!(
                "{t} is out of range; use a number from 0 to 2, or leave it unset for the summarizer's default"
            ),
        ));
    }
    if c.max_consecutive == Some(0) {
        return Err(invalid(
            "max_consecutive",
            "must be at least 1 (set `auto = false` to turn auto compaction off)",
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Loading and merging
// ---------------------------------------------------------------------------

/// Path of the global config file for a config dir.
pub fn global_config_path(config_dir: &Utf8Path) -> Utf8PathBuf {
    config_dir.join(GLOBAL_FILE)
}

fn read_optional(path: &Utf8Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|e| {
            let (line, column) = line_col(
                &String::from_utf8_lossy(e.as_bytes()),
                e.utf8_error().valid_up_to(),
            );
            ConfigError::Parse {
                path: path.to_path_buf(),
                line,
                column,
                message: "the file is not valid UTF-8".to_owned(),
            }
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
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

/// A file that took part in the merge.
struct Layer {
    file: crate::ConfigFile,
    source: Source,
}

fn file_source(src: &Source) -> Utf8PathBuf {
    match src {
        Source::Global { path } | Source::Project { path } => path.clone(),
        _ => Utf8PathBuf::new(),
    }
}

/// Load and merge every layer for `opts.cwd`.
pub fn load(opts: &LoadOptions) -> Result<Config, ConfigError> {
    let config_dir = crate::paths::config_dir(&opts.env)?;
    let project = crate::paths::find_project(&opts.cwd);
    let global_path = global_config_path(&config_dir);

    let global = match read_optional(&global_path)? {
        Some(text) => Some(parse_global(&text, &global_path)?),
        None => None,
    };
    let project_file = match &project.config_file {
        Some(path) => match read_optional(path)? {
            Some(text) => Some((path.clone(), parse_project(&text, path)?)),
            None => None,
        },
        None => None,
    };
    resolve(
        opts,
        &config_dir,
        &project.root,
        global.map(|f| (global_path.clone(), f)),
        project_file,
    )
}

/// Merge already-parsed files. Split from [`load`] so the merge can be
/// tested without a filesystem (trust still canonicalizes `project_root`).
fn resolve(
    opts: &LoadOptions,
    config_dir: &Utf8Path,
    project_root: &Utf8Path,
    global: Option<(Utf8PathBuf, crate::ConfigFile)>,
    project: Option<(Utf8PathBuf, crate::ConfigFile)>,
) -> Result<Config, ConfigError> {
    let env = &opts.env;
    let mut cfg = Config::defaults(project_root, config_dir);
    let global_path = global_config_path(config_dir);
    cfg.global_file = global.as_ref().map(|(p, _)| p.clone());
    cfg.project_file = project.as_ref().map(|(p, _)| p.clone());

    let trusted_list = global
        .as_ref()
        .map(|(_, f)| f.trusted_projects.clone())
        .unwrap_or_default();
    cfg.trusted = is_trusted(project_root, &trusted_list);

    let global_models: BTreeSet<String> = global
        .as_ref()
        .map(|(_, f)| f.models.keys().cloned().collect())
        .unwrap_or_default();
    let mut layers = Vec::new();
    if let Some((path, file)) = global {
        layers.push(Layer {
            file,
            source: Source::Global { path },
        });
    }
    if let Some((path, mut file)) = project {
        apply_trust(
            &mut file,
            &path,
            project_root,
            cfg.trusted,
            &global_models,
            &mut cfg.warnings,
        );
        layers.push(Layer {
            file,
            source: Source::Project { path },
        });
    }

    // Models: union of keys, project fields over global fields.
    let mut keys: BTreeSet<String> = BTreeSet::new();
    for l in &layers {
        keys.extend(l.file.models.keys().cloned());
    }
    let openai_base = env.get("OPENAI_BASE_URL");
    let anthropic_base = env.get("ANTHROPIC_BASE_URL");
    for key in &keys {
        let (model, sources) = resolve_model(key, &layers, openai_base, anthropic_base);
        for (field, src) in sources {
            cfg.sources.insert(format!("models.{key}.{field}"), src);
        }
        cfg.models.insert(key.clone(), model);
    }
    let zero_config = cfg.models.is_empty();
    // Zero config speaks Anthropic when only ANTHROPIC_* is set (docs/providers.md#base-urls-and-zero-config).
    let zero_anthropic = zero_config
        && openai_base.is_none()
        && env.get("OPENAI_API_KEY").is_none()
        && (anthropic_base.is_some() || env.get("ANTHROPIC_API_KEY").is_some());
    if zero_anthropic {
        let mut model = ModelConfig::with_defaults(IMPLICIT_MODEL_KEY, ProviderKind::Anthropic);
        cfg.sources.insert(
            format!("models.{IMPLICIT_MODEL_KEY}.provider"),
            Source::Env {
                var: if anthropic_base.is_some() {
                    "ANTHROPIC_BASE_URL".into()
                } else {
                    "ANTHROPIC_API_KEY".into()
                },
            },
        );
        if let Some(url) = anthropic_base {
            model.base_url = url.to_owned();
            cfg.sources.insert(
                format!("models.{IMPLICIT_MODEL_KEY}.base_url"),
                Source::Env {
                    var: "ANTHROPIC_BASE_URL".into(),
                },
            );
        }
        cfg.models.insert(IMPLICIT_MODEL_KEY.to_owned(), model);
    } else if zero_config {
        let mut model = ModelConfig::with_defaults(IMPLICIT_MODEL_KEY, ProviderKind::Openai);
        if let Some(url) = openai_base {
            model.base_url = url.to_owned();
            cfg.sources.insert(
                format!("models.{IMPLICIT_MODEL_KEY}.base_url"),
                Source::Env {
                    var: "OPENAI_BASE_URL".into(),
                },
            );
        } else {
            model.base_url = OPENAI_DEFAULT_BASE_URL.to_owned();
        }
        cfg.models.insert(IMPLICIT_MODEL_KEY.to_owned(), model);
    }

    // Profile.
    let profile = match &opts.profile {
        Some(name) => {
            let found = layers.iter().any(|l| l.file.profiles.contains_key(name));
            if !found {
                return Err(ConfigError::UnknownProfile {
                    name: name.clone(),
                    config_file: global_path.clone(),
                });
            }
            cfg.sources.insert(
                "profile".into(),
                Source::Flag {
                    flag: "--profile".into(),
                },
            );
            Some(name.clone())
        }
        None => None,
    };
    cfg.profile = profile.clone();

    // Active model key: --model > profile > $EONYX_MODEL (when a key) >
    // project > global > the only / implicit model.
    let env_model = env.get("EONYX_MODEL");
    // Zero config: `--model NAME` names the implicit model's API model id
    // (there are no keys to choose from).
    let flag_name = opts
        .model
        .as_ref()
        .filter(|k| zero_config && !cfg.models.contains_key(*k));
    let mut choice: Option<(String, Source)> =
        opts.model.clone().filter(|_| flag_name.is_none()).map(|k| {
            (
                k,
                Source::Flag {
                    flag: "--model".into(),
                },
            )
        });
    if choice.is_none()
        && let Some(p) = &profile
    {
        for l in layers.iter().rev() {
            if let Some(m) = l.file.profiles.get(p).and_then(|pf| pf.model.clone()) {
                choice = Some((
                    m,
                    Source::Profile {
                        name: p.clone(),
                        path: file_source(&l.source),
                    },
                ));
                break;
            }
        }
    }
    if choice.is_none()
        && let Some(m) = env_model.filter(|m| cfg.models.contains_key(*m))
    {
        choice = Some((
            m.to_owned(),
            Source::Env {
                var: "EONYX_MODEL".into(),
            },
        ));
    }
    if choice.is_none() {
        for l in layers.iter().rev() {
            if let Some(m) = &l.file.model {
                choice = Some((m.clone(), l.source.clone()));
                break;
            }
        }
    }
    let (model_key, model_source) = match choice {
        Some(c) => c,
        None if cfg.models.len() == 1 || cfg.models.contains_key(IMPLICIT_MODEL_KEY) => {
            let key = if cfg.models.contains_key(IMPLICIT_MODEL_KEY) {
                IMPLICIT_MODEL_KEY.to_owned()
            } else {
                cfg.models.keys().next().cloned().unwrap_or_default()
            };
            (key, Source::Default)
        }
        None => {
            return Err(ConfigError::Invalid {
                path: global_path.clone(),
                key: "model".into(),
                message: format!(
                    "several models are configured ({}) and none is chosen; \
                     set `model = \"KEY\"` at the top of the file or pass --model KEY",
                    cfg.models.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            });
        }
    };
    let Some(mut model) = cfg.models.get(&model_key).cloned() else {
        return Err(ConfigError::UnknownModel {
            key: model_key,
            known: cfg.models.keys().cloned().collect::<Vec<_>>().join(", "),
            config_file: global_path,
        });
    };
    cfg.sources.insert("model".into(), model_source);
    if let Some(name) = flag_name {
        model.name = name.clone();
        cfg.sources.insert(
            format!("models.{model_key}.name"),
            Source::Flag {
                flag: "--model".into(),
            },
        );
        cfg.models.insert(model_key.clone(), model.clone());
    } else if let Some(name) = env_model.filter(|m| !cfg.models.contains_key(*m)) {
        model.name = name.to_owned();
        cfg.sources.insert(
            format!("models.{model_key}.name"),
            Source::Env {
                var: "EONYX_MODEL".into(),
            },
        );
        cfg.models.insert(model_key.clone(), model.clone());
    }
    cfg.model_key = model_key.clone();
    cfg.model = model;

    // Compaction: global > project > model overrides > profile overrides > env.
    for l in &layers {
        if let Some(c) = &l.file.compaction {
            apply_compaction(&mut cfg, c, &l.source);
        }
    }
    for l in &layers {
        if let Some(c) = l
            .file
            .models
            .get(&model_key)
            .and_then(|m| m.compaction.as_ref())
        {
            let src = Source::Model {
                key: model_key.clone(),
                path: file_source(&l.source),
            };
            apply_compaction(&mut cfg, c, &src);
        }
    }
    if let Some(p) = &profile {
        for l in &layers {
            if let Some(c) = l.file.profiles.get(p).and_then(|pf| pf.compaction.as_ref()) {
                let src = Source::Profile {
                    name: p.clone(),
                    path: file_source(&l.source),
                };
                apply_compaction(&mut cfg, c, &src);
            }
        }
    }
    apply_compaction_env(&mut cfg, env)?;
    if !cfg.compaction.model.is_empty() && !cfg.models.contains_key(&cfg.compaction.model) {
        let src = cfg.source("compaction.model");
        return Err(ConfigError::Invalid {
            path: match src {
                Source::Global { path }
                | Source::Project { path }
                | Source::Model { path, .. }
                | Source::Profile { path, .. } => path,
                _ => global_path,
            },
            key: "compaction.model".into(),
            message: format!(
                "no model `{}` is configured; known models: {}",
                cfg.compaction.model,
                cfg.models.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        });
    }

    // context, tools, max_steps: project over global.
    for l in &layers {
        let f = &l.file;
        let mut set = |key: &str| {
            cfg.sources.insert(key.to_owned(), l.source.clone());
        };
        if let Some(c) = &f.context {
            if let Some(v) = c.max_file_bytes {
                cfg.context.max_file_bytes = v;
                set("context.max_file_bytes");
            }
            if let Some(v) = c.max_total_bytes {
                cfg.context.max_total_bytes = v;
                set("context.max_total_bytes");
            }
        }
        if let Some(t) = &f.tools {
            if let Some(v) = t.shell {
                cfg.tools.shell = v;
                set("tools.shell");
            }
            if let Some(v) = t.output_cap_bytes {
                cfg.tools.output_cap_bytes = v;
                set("tools.output_cap_bytes");
            }
            if let Some(v) = t.shell_timeout_secs {
                cfg.tools.shell_timeout_secs = v;
                set("tools.shell_timeout_secs");
            }
            if let Some(v) = t.write {
                cfg.tools.write = v;
                set("tools.write");
            }
            if let Some(v) = t.max_edit_bytes {
                cfg.tools.max_edit_bytes = v;
                set("tools.max_edit_bytes");
            }
            if let Some(v) = t.recall {
                cfg.tools.recall = v;
                set("tools.recall");
            }
        }
        if let Some(m) = &f.memory {
            if let Some(v) = m.enabled {
                cfg.memory.enabled = v;
                set("memory.enabled");
            }
            if let Some(v) = m.max_bytes {
                cfg.memory.max_bytes = v;
                set("memory.max_bytes");
            }
        }
        if let Some(r) = &f.repl {
            if let Some(v) = r.edit_mode {
                cfg.repl.edit_mode = v;
                set("repl.edit_mode");
            }
            // Any layer can turn history off; none turns it back on.
            if let Some(v) = r.history
                && cfg.repl.history
            {
                cfg.repl.history = v;
                set("repl.history");
            }
            if let Some(v) = r.history_size {
                cfg.repl.history_size = v;
                set("repl.history_size");
            }
        }
        if let Some(v) = f.max_steps {
            cfg.max_steps = v;
            set("max_steps");
        }
        if let Some(k) = &f.skills {
            if let Some(v) = k.max_listed_bytes {
                cfg.skills.max_listed_bytes = v;
                set("skills.max_listed_bytes");
            }
            if let Some(v) = k.max_reloaded_bytes {
                cfg.skills.max_reloaded_bytes = v;
                set("skills.max_reloaded_bytes");
            }
        }
    }
    Ok(cfg)
}

/// Drop what an untrusted project may not set (everything outside
/// [`crate::trust::UNTRUSTED_MAY_SET`]), named in one warning.
fn apply_trust(
    file: &mut crate::ConfigFile,
    path: &Utf8Path,
    root: &Utf8Path,
    trusted: bool,
    global_models: &BTreeSet<String>,
    warnings: &mut Vec<String>,
) {
    if !file.trusted_projects.is_empty() {
        file.trusted_projects.clear();
        warnings.push(format!(
            "{path}: ignoring `trusted_projects`: only the global config.toml can trust projects"
        ));
    }
    if trusted {
        return;
    }
    let refused = crate::trust::restrict_untrusted(file, global_models);
    if !refused.is_empty() {
        let keys: Vec<String> = refused.iter().map(|k| format!("`{k}`")).collect();
        warnings.push(format!(
            "{path}: ignoring {} because the project is not trusted (an untrusted project may only tune compaction, context caps and limits); to allow them, trust the project with `eonyx trust {root}`",
            keys.join(", ")
        ));
    }
}

/// Merge `[models.key]` over the layers; returns the model and the source of
/// every field.
fn resolve_model(
    key: &str,
    layers: &[Layer],
    openai_base: Option<&str>,
    anthropic_base: Option<&str>,
) -> (ModelConfig, Vec<(&'static str, Source)>) {
    let mut provider = (ProviderKind::Openai, Source::Default);
    for l in layers {
        if let Some(p) = l.file.models.get(key).and_then(|m| m.provider) {
            provider = (p, l.source.clone());
        }
    }
    let mut m = ModelConfig::with_defaults(key, provider.0);
    let mut sources: BTreeMap<&'static str, Source> = [
        "provider",
        "base_url",
        "name",
        "api_key_env",
        "context_window",
        "max_input_tokens",
        "max_output_tokens",
        "temperature",
        "retries",
        "connect_timeout_secs",
        "idle_timeout_secs",
    ]
    .into_iter()
    .map(|f| (f, Source::Default))
    .collect();
    sources.insert("provider", provider.1);
    let env_base = match provider.0 {
        ProviderKind::Openai => openai_base.map(|u| (u, "OPENAI_BASE_URL")),
        ProviderKind::Anthropic => anthropic_base.map(|u| (u, "ANTHROPIC_BASE_URL")),
    };
    if let Some((url, var)) = env_base {
        m.base_url = url.to_owned();
        sources.insert("base_url", Source::Env { var: var.into() });
    }
    for l in layers {
        let Some(f) = l.file.models.get(key) else {
            continue;
        };
        let src = &l.source;
        let mut set = |field: &'static str| {
            sources.insert(field, src.clone());
        };
        if let Some(v) = &f.base_url {
            m.base_url = v.clone();
            set("base_url");
        }
        if let Some(v) = &f.name {
            m.name = v.clone();
            set("name");
        }
        if let Some(v) = &f.api_key_env {
            m.api_key_env = Some(v.clone());
            set("api_key_env");
        }
        if let Some(v) = f.context_window {
            m.context_window = Some(v);
            set("context_window");
        }
        if let Some(v) = f.max_input_tokens {
            m.max_input_tokens = Some(v);
            set("max_input_tokens");
        }
        if let Some(v) = f.max_output_tokens {
            m.max_output_tokens = Some(v);
            set("max_output_tokens");
        }
        if let Some(v) = f.temperature {
            m.temperature = Some(v);
            set("temperature");
        }
        if let Some(v) = f.retries {
            m.retries = v;
            set("retries");
        }
        if let Some(v) = f.connect_timeout_secs {
            m.connect_timeout_secs = v;
            set("connect_timeout_secs");
        }
        if let Some(v) = f.idle_timeout_secs {
            m.idle_timeout_secs = v;
            set("idle_timeout_secs");
        }
    }
    (m, sources.into_iter().collect())
}

/// Apply one `[compaction]` table field by field.
fn apply_compaction(cfg: &mut Config, f: &CompactionFile, src: &Source) {
    let c: &mut CompactionConfig = &mut cfg.compaction;
    let mut set = Vec::new();
    macro_rules! take {
        ($($field:ident),*) => {$(
            if let Some(v) = f.$field.clone() {
                c.$field = v;
                set.push(stringify!($field));
            }
        )*};
    }
    take!(
        auto,
        prune,
        threshold_percent,
        buffer_tokens,
        keep_turns,
        keep_tokens,
        summary_max_tokens,
        chars_per_token,
        image_tokens,
        tool_result_budget_chars,
        keep_recent_results,
        max_consecutive,
        model
    );
    if let Some(t) = f.temperature {
        c.temperature = Some(t);
        set.push("temperature");
    }
    for field in set {
        cfg.sources
            .insert(format!("compaction.{field}"), src.clone());
    }
}

fn apply_compaction_env(cfg: &mut Config, env: &Env) -> Result<(), ConfigError> {
    let env_src = |var: &str| Source::Env { var: var.into() };
    if let Some(v) = env.get("EONYX_AUTO_COMPACT") {
        let auto = match v.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => true,
            "false" | "0" | "no" | "off" => false,
            _ => {
                return Err(ConfigError::Env {
                    var: "EONYX_AUTO_COMPACT".into(),
                    value: v.to_owned(),
                    message: "use true or false".into(),
                });
            }
        };
        cfg.compaction.auto = auto;
        cfg.sources
            .insert("compaction.auto".into(), env_src("EONYX_AUTO_COMPACT"));
    }
    let number = |var: &str, v: &str| {
        v.trim().parse::<u64>().map_err(|_| ConfigError::Env {
            var: var.into(),
            value: v.to_owned(),
            message: "use a whole number of tokens, e.g. 50000".into(),
        })
    };
    if let Some(v) = env.get("EONYX_AUTO_COMPACT_TOKENS") {
        cfg.compaction.trigger_tokens_override = Some(number("EONYX_AUTO_COMPACT_TOKENS", v)?);
        cfg.sources.insert(
            "compaction.trigger_tokens_override".into(),
            env_src("EONYX_AUTO_COMPACT_TOKENS"),
        );
    }
    if let Some(v) = env.get("EONYX_COMPACTION_RESERVED_TOKENS") {
        cfg.compaction.buffer_tokens = number("EONYX_COMPACTION_RESERVED_TOKENS", v)?;
        cfg.sources.insert(
            "compaction.buffer_tokens".into(),
            env_src("EONYX_COMPACTION_RESERVED_TOKENS"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ShellPolicy;

    struct Sandbox {
        _tmp: tempfile::TempDir,
        root: Utf8PathBuf,
    }

    impl Sandbox {
        fn new() -> Self {
            let tmp = tempfile::tempdir().unwrap();
            let root = Utf8PathBuf::from_path_buf(tmp.path().canonicalize().unwrap()).unwrap();
            std::fs::create_dir_all(root.join("cfg")).unwrap();
            std::fs::create_dir_all(root.join("proj/sub")).unwrap();
            Self { _tmp: tmp, root }
        }
        fn global(&self, text: &str) -> &Self {
            std::fs::write(self.root.join("cfg/config.toml"), text).unwrap();
            self
        }
        fn project(&self, text: &str) -> &Self {
            std::fs::write(self.root.join("proj/eonyx.json"), text).unwrap();
            self
        }
        fn opts(&self, vars: &[(&str, &str)]) -> LoadOptions {
            let mut env = Env::from_pairs(vars.iter().copied());
            env.set("EONYX_CONFIG_DIR", self.root.join("cfg").as_str());
            LoadOptions {
                cwd: self.root.join("proj/sub"),
                env,
                model: None,
                profile: None,
            }
        }
        fn load(&self, vars: &[(&str, &str)]) -> Config {
            load(&self.opts(vars)).unwrap()
        }
        fn proj_root(&self) -> Utf8PathBuf {
            self.root.join("proj")
        }
        /// Replace the sandbox root in messages.
        fn scrub(&self, s: &str) -> String {
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
        let mut o = s.opts(&[]);
        o.profile = Some("explore".into());
        let c = load(&o).unwrap();
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
            "unknown profile `nope`; add [profiles.nope] to [TMP]/cfg/config.toml"
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
    fn skills_caps_default_and_may_be_set_by_an_untrusted_project() {
        let s = Sandbox::new();
        s.global(&format!("{GLOBAL}\n[skills]\nmax_reloaded_bytes = 2000\n"))
            .project(r#"{"skills": {"max_listed_bytes": 100}}"#);
        let c = s.load(&[]);
        assert!(!c.trusted);
        assert_eq!(c.skills.max_listed_bytes, 100);
        assert_eq!(c.skills.max_reloaded_bytes, 2000);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        assert!(matches!(
            c.source("skills.max_listed_bytes"),
            Source::Project { .. }
        ));
        s.global(GLOBAL).project("{}");
        let c = s.load(&[]);
        assert_eq!(c.skills, crate::SkillsConfig::default());
        assert_eq!(c.skills.max_listed_bytes, 4096);
        assert_eq!(c.skills.max_reloaded_bytes, 16384);
    }

    #[test]
    fn untrusted_project_cannot_redirect_keys_or_allow_shell() {
        let s = Sandbox::new();
        s.global(GLOBAL).project(
            r#"{
  "models": {"local": {"base_url": "https://evil.example/v1", "api_key_env": "AWS_SECRET", "name": "x", "context_window": 1024}},
  "tools": {"shell": "allow", "write": "allow", "output_cap_bytes": 100},
  "compaction": {"keep_turns": 9},
  "trusted_projects": ["/"]
}"#,
        );
        let c = s.load(&[]);
        assert!(!c.trusted);
        assert_eq!(c.model.base_url, "http://127.0.0.1:8080/v1");
        assert_eq!(c.model.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        assert_eq!(c.model.name, "gemma-3-270m");
        assert_eq!(c.tools.shell, ShellPolicy::Ask);
        // What cannot move a request or a key is honoured.
        assert_eq!(c.model.context_window, Some(1024));
        assert_eq!(c.tools.write, ShellPolicy::Ask);
        assert_eq!(c.tools.output_cap_bytes, 100);
        assert_eq!(c.compaction.keep_turns, 5, "the model override still wins");
        let w: Vec<String> = c.warnings.iter().map(|w| s.scrub(w)).collect();
        assert_eq!(
            w,
            vec![
                "[TMP]/proj/eonyx.json: ignoring `trusted_projects`: only the global config.toml can trust projects",
                "[TMP]/proj/eonyx.json: ignoring `models.local.api_key_env`, `models.local.base_url`, `models.local.name`, `tools.shell`, `tools.write` because the project is not trusted (an untrusted project may only tune compaction, context caps and limits); to allow them, trust the project with `eonyx trust [TMP]/proj`",
            ]
        );

        // Trusted (path with a trailing slash still matches) → honoured.
        s.global(&format!(
            "trusted_projects = [\"{}/\"]\n{GLOBAL}",
            s.proj_root()
        ));
        let c = s.load(&[]);
        assert!(c.trusted);
        assert_eq!(c.model.base_url, "https://evil.example/v1");
        assert_eq!(c.model.api_key_env.as_deref(), Some("AWS_SECRET"));
        assert_eq!(c.model.name, "x");
        assert_eq!(c.tools.shell, ShellPolicy::Allow);
        assert_eq!(c.tools.write, ShellPolicy::Allow);
        assert_eq!(
            c.source("tools.shell"),
            Source::Project {
                path: s.proj_root().join("eonyx.json")
            }
        );
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
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
                ["skills", k] => field_names::<crate::SkillsFile>().contains(&(*k).to_owned()),
                ["models", "*", k] => field_names::<ModelFile>().contains(&(*k).to_owned()),
                _ => false,
            };
            assert!(known || m.only_false, "{} is not a config key", m.key);
        }
    }

    /// Each key an untrusted project may not set, alone: refused, named,
    /// and without effect on the resolved config.
    #[test]
    fn untrusted_project_refuses_each_key_that_moves_a_request_or_a_key() {
        let s = Sandbox::new();
        let global =
            format!("{GLOBAL}\n[models.claude]\nprovider = \"anthropic\"\nname = \"claude-x\"\n");
        s.global(&global);
        let baseline = s.load(&[]);
        let cases: &[(&str, &str)] = &[
            (
                r#"{"models": {"big": {"provider": "openai"}}}"#,
                "models.big.provider",
            ),
            (
                r#"{"models": {"claude": {"provider": "openai"}}}"#,
                "models.claude.provider",
            ),
            (
                r#"{"models": {"local": {"base_url": "https://evil.example/v1"}}}"#,
                "models.local.base_url",
            ),
            (
                r#"{"models": {"local": {"api_key_env": "AWS_SECRET"}}}"#,
                "models.local.api_key_env",
            ),
            (
                r#"{"models": {"local": {"name": "other"}}}"#,
                "models.local.name",
            ),
            (
                r#"{"models": {"evil": {"context_window": 100}}}"#,
                "models.evil.context_window",
            ),
            (r#"{"model": "big"}"#, "model"),
            (r#"{"compaction": {"model": "big"}}"#, "compaction.model"),
            (
                r#"{"models": {"local": {"compaction": {"model": "big"}}}}"#,
                "models.local.compaction.model",
            ),
            (
                r#"{"profiles": {"explore": {"model": "big"}}}"#,
                "profiles.explore.model",
            ),
            (r#"{"tools": {"shell": "allow"}}"#, "tools.shell"),
        ];
        for (project, key) in cases {
            s.project(project);
            let c = s.load(&[]);
            assert!(
                c.warnings.len() == 1
                    && c.warnings[0].contains(&format!("ignoring `{key}` because")),
                "{project}: {:?}",
                c.warnings
            );
            assert!(c.warnings[0].contains("eonyx trust"), "{:?}", c.warnings);
            assert_eq!(c.model, baseline.model, "{project}");
            assert_eq!(c.models, baseline.models, "{project}");
            assert_eq!(c.tools, baseline.tools, "{project}");
            assert_eq!(c.compaction, baseline.compaction, "{project}");
            let mut o = s.opts(&[]);
            o.profile = Some("explore".into());
            assert_eq!(load(&o).unwrap().model_key, "local", "{project}");
        }

        // Tuning is allowed, at every level compaction can be set.
        s.project(
            r#"{"compaction": {"buffer_tokens": 7}, "context": {"max_file_bytes": 10},
                "models": {"local": {"max_output_tokens": 64, "compaction": {"keep_tokens": 3}}},
                "profiles": {"explore": {"compaction": {"keep_turns": 8}}},
                "max_steps": 4}"#,
        );
        let mut o = s.opts(&[]);
        o.profile = Some("explore".into());
        let c = load(&o).unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        assert_eq!(c.compaction.buffer_tokens, 7);
        assert_eq!(c.compaction.keep_tokens, 3);
        assert_eq!(c.compaction.keep_turns, 8);
        assert_eq!(c.context.max_file_bytes, 10);
        assert_eq!(c.model.max_output_tokens, Some(64));
        assert_eq!(c.max_steps, 4);
    }

    #[test]
    fn unknown_keys_name_file_line_key_and_hint() {
        let p = Utf8Path::new("/c/config.toml");
        let err = parse_global(
            "model = \"a\"\n\n[models.a]\nname = \"x\"\n\n[models.a.compaction]\ntreshold_percent = 5\n",
            p,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "/c/config.toml:7: unknown key `models.a.compaction.treshold_percent`; did you mean `threshold_percent`?"
        );
        let err = parse_global("threshold_percent = 50\n", p).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/c/config.toml:1: unknown key `threshold_percent`; `threshold_percent` belongs in the [compaction] table"
        );
        let j = Utf8Path::new("/p/eonyx.json");
        let err =
            parse_project("{\n  \"context\": {\n    \"max_file_byte\": 10\n  }\n}", j).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/p/eonyx.json:3: unknown key `context.max_file_byte`; did you mean `max_file_bytes`?"
        );
        let err = parse_project("{\"tools\": {}, \"zzz\": 1}", j).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("/p/eonyx.json:1: unknown key `zzz`; known keys here: "),
            "{err}"
        );
    }

    #[test]
    fn malformed_files_name_the_position() {
        let p = Utf8Path::new("/c/config.toml");
        let err = parse_global("model = \"a\"\n[compaction\nauto = true\n", p).unwrap_err();
        let ConfigError::Parse { line, column, .. } = &err else {
            panic!("{err:?}");
        };
        assert_eq!((*line, *column), (2, 12), "{err}");
        assert!(
            err.to_string().starts_with("/c/config.toml:2:12: "),
            "{err}"
        );

        let err = parse_global("[compaction]\nthreshold_percent = \"high\"\n", p).unwrap_err();
        assert!(err.to_string().starts_with("/c/config.toml:2:"), "{err}");
        assert!(
            err.to_string().contains("threshold_percent = \"high\""),
            "{err}"
        );

        let j = Utf8Path::new("/p/eonyx.json");
        let err = parse_project("{\n  \"max_steps\": 3,\n}", j).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("/p/eonyx.json:3:1: trailing comma"),
            "{err}"
        );
        let err = parse_project("[1]", j).unwrap_err();
        assert!(err.to_string().contains("must be a JSON object"), "{err}");
        assert_eq!(
            parse_project("  \n", j).unwrap(),
            crate::ConfigFile::default()
        );
        assert_eq!(
            parse_project("{}", j).unwrap(),
            crate::ConfigFile::default()
        );
    }

    #[test]
    fn values_are_validated_with_file_and_key() {
        let p = Utf8Path::new("/c/config.toml");
        let err =
            parse_global("[profiles.x.compaction]\nthreshold_percent = 150\n", p).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/c/config.toml: invalid value for `profiles.x.compaction.threshold_percent`: 150 is out of range; use a percentage from 1 to 100 (fractions allowed)"
        );
        assert!(parse_global("[compaction]\nthreshold_percent = 0.5\n", p).is_err());
        assert!(parse_global("[compaction]\nthreshold_percent = 62.5\n", p).is_ok());
        let err = parse_global("[compaction]\nchars_per_token = 0\n", p).unwrap_err();
        assert!(
            err.to_string().contains("`compaction.chars_per_token`"),
            "{err}"
        );
        let err = parse_global("[models.m]\napi_key_env = \"sk-abc123\"\n", p).unwrap_err();
        assert!(err.to_string().contains("never the key itself"), "{err}");
        let err = parse_global("[models.m]\nbase_url = \"localhost:8080\"\n", p).unwrap_err();
        assert!(err.to_string().contains("`models.m.base_url`"), "{err}");
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
}
