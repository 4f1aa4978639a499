//! Parsing: the text of a global `config.toml` or a project `eonyx.json` to
//! a typed [`ConfigFile`], or a positioned error. Unknown keys are errors
//! naming the full dotted key, with a "did you mean" hint.
//!
//! [`parse_global`] and [`parse_project`] are pure (text in, typed file or a
//! positioned error out) so that the fuzz target and tests can drive them
//! without a filesystem. Both also [`validate`] the file.

use camino::Utf8Path;

use crate::validate::validate;
use crate::{
    CompactionFile, ConfigError, ConfigFile, ContextFile, GoalsFile, McpFile, McpServerFile,
    MemoryFile, ModelFile, ProfileFile, ReplFile, SkillsFile, TasksFile, ToolsFile, line_col,
};

/// Parse and validate a global `config.toml`. `path` is only used in error
/// messages.
pub fn parse_global(text: &str, path: &Utf8Path) -> Result<ConfigFile, ConfigError> {
    let file = match toml::from_str::<ConfigFile>(text) {
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
pub fn parse_project(text: &str, path: &Utf8Path) -> Result<ConfigFile, ConfigError> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Ok(ConfigFile::default());
    }
    if !trimmed.starts_with('{') {
        return Err(ConfigError::parse_at(
            path,
            text,
            text.len() - trimmed.len(),
            "the project config must be a JSON object, e.g. {}",
        ));
    }
    let file = match serde_json::from_str::<ConfigFile>(text) {
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
pub(crate) fn field_names<T: serde::Serialize + Default>() -> Vec<String> {
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
    Mcp,
    McpServers,
    McpServer,
    Tasks,
    Hooks,
    Goals,
    Permissions,
    Leaf,
}

impl Section {
    fn known(self) -> Option<Vec<String>> {
        match self {
            Section::Root => Some(field_names::<ConfigFile>()),
            Section::Model => Some(field_names::<ModelFile>()),
            Section::Profile => Some(field_names::<ProfileFile>()),
            Section::Compaction => Some(field_names::<CompactionFile>()),
            Section::Context => Some(field_names::<ContextFile>()),
            Section::Tools => Some(field_names::<ToolsFile>()),
            Section::Memory => Some(field_names::<MemoryFile>()),
            Section::Repl => Some(field_names::<ReplFile>()),
            Section::Skills => Some(field_names::<SkillsFile>()),
            Section::Mcp => Some(field_names::<McpFile>()),
            Section::McpServer => Some(field_names::<McpServerFile>()),
            Section::Tasks => Some(field_names::<TasksFile>()),
            Section::Hooks => Some(field_names::<crate::hooks::HooksFile>()),
            Section::Goals => Some(field_names::<GoalsFile>()),
            Section::Permissions => Some(field_names::<crate::permissions::PermissionsFile>()),
            Section::Models | Section::Profiles | Section::McpServers | Section::Leaf => None,
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
            (Section::Root, "mcp") => Section::Mcp,
            (Section::Root, "mcp_servers") => Section::McpServers,
            (Section::McpServers, _) => Section::McpServer,
            (Section::Root, "tasks") => Section::Tasks,
            (Section::Root, "hooks") => Section::Hooks,
            (Section::Root, "goals") => Section::Goals,
            (Section::Root, "permissions") => Section::Permissions,
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
    let sections: [(&str, Vec<String>); 8] = [
        ("compaction", field_names::<CompactionFile>()),
        ("context", field_names::<ContextFile>()),
        ("tools", field_names::<ToolsFile>()),
        ("memory", field_names::<MemoryFile>()),
        ("repl", field_names::<ReplFile>()),
        ("skills", field_names::<SkillsFile>()),
        ("tasks", field_names::<TasksFile>()),
        ("goals", field_names::<GoalsFile>()),
    ];
    for (section, fields) in sections {
        if fields.iter().any(|f| f == name) {
            return format!("; `{name}` belongs in the [{section}] table");
        }
    }
    if field_names::<McpServerFile>().iter().any(|f| f == name) {
        return format!("; `{name}` belongs in a [mcp_servers.NAME] table");
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
