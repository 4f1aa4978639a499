//! `hooks` (docs/hooks.md#configuration): Claude Code's shape, the same in
//! `config.toml` and `eonyx.json`: `{EVENT: [{matcher, hooks: [{type,
//! command, timeout}]}]}`. An unknown event is an unknown key (with a "did
//! you mean"); a bad matcher, a missing command or another `type` is an
//! error naming the file and the key. The layers are concatenated, global
//! first; an untrusted project's hooks are kept for `eonyx hooks` to list,
//! marked as not running.

use camino::Utf8Path;
use serde::{Deserialize, Serialize};

use eonyx_core::hooks::{DEFAULT_HOOK_TIMEOUT_SECS, HookDef, HookEvent, matcher_regex};

use crate::ConfigError;

/// `hooks` as written: one optional list per event, named as in Claude
/// Code (`PreToolUse`, …).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksFile {
    #[serde(rename = "SessionStart")]
    pub session_start: Option<Vec<HookMatcherFile>>,
    #[serde(rename = "UserPromptSubmit")]
    pub user_prompt_submit: Option<Vec<HookMatcherFile>>,
    #[serde(rename = "PreToolUse")]
    pub pre_tool_use: Option<Vec<HookMatcherFile>>,
    #[serde(rename = "PostToolUse")]
    pub post_tool_use: Option<Vec<HookMatcherFile>>,
    #[serde(rename = "PreCompact")]
    pub pre_compact: Option<Vec<HookMatcherFile>>,
    #[serde(rename = "PostCompact")]
    pub post_compact: Option<Vec<HookMatcherFile>>,
    #[serde(rename = "Stop")]
    pub stop: Option<Vec<HookMatcherFile>>,
    #[serde(rename = "SubagentStart")]
    pub subagent_start: Option<Vec<HookMatcherFile>>,
    #[serde(rename = "SubagentStop")]
    pub subagent_stop: Option<Vec<HookMatcherFile>>,
    #[serde(rename = "Notification")]
    pub notification: Option<Vec<HookMatcherFile>>,
    #[serde(rename = "SessionEnd")]
    pub session_end: Option<Vec<HookMatcherFile>>,
}

/// One `{matcher, hooks}` entry of an event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookMatcherFile {
    /// A regex over the whole name; unset, empty or `*`: everything.
    pub matcher: Option<String>,
    pub hooks: Option<Vec<HookCommandFile>>,
}

/// One `{type, command, timeout}` of an entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookCommandFile {
    /// Only `"command"` (the default).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub command: Option<String>,
    /// Seconds; default 60.
    pub timeout: Option<u64>,
}

impl HooksFile {
    /// The events written in this file, in [`HookEvent::ALL`] order.
    pub fn events(&self) -> Vec<(HookEvent, &[HookMatcherFile])> {
        let lists = [
            &self.session_start,
            &self.user_prompt_submit,
            &self.pre_tool_use,
            &self.post_tool_use,
            &self.pre_compact,
            &self.post_compact,
            &self.stop,
            &self.subagent_start,
            &self.subagent_stop,
            &self.notification,
            &self.session_end,
        ];
        HookEvent::ALL
            .into_iter()
            .zip(lists)
            .filter_map(|(e, l)| l.as_deref().map(|l| (e, l)))
            .collect()
    }

    /// Number of commands configured.
    pub fn count(&self) -> usize {
        self.events()
            .iter()
            .flat_map(|(_, l)| l.iter())
            .map(|m| m.hooks.as_ref().map_or(0, Vec::len))
            .sum()
    }
}

/// Check every entry; errors name the file and the key
/// (`hooks.PreToolUse[0].hooks[1].command`).
pub(crate) fn validate(file: &HooksFile, path: &Utf8Path) -> Result<(), ConfigError> {
    let invalid = |key: String, message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        key,
        message,
    };
    for (event, list) in file.events() {
        for (i, entry) in list.iter().enumerate() {
            let at = format!("hooks.{event}[{i}]");
            if let Some(m) = &entry.matcher
                && let Some(re) = matcher_regex(m)
                && let Err(e) = regex::Regex::new(&re)
            {
                return Err(invalid(
                    format!("{at}.matcher"),
                    format!(
                        "`{m}` is not a valid regular expression ({e}); write e.g. \"Edit|Write\" or \"*\""
                    ),
                ));
            }
            let Some(hooks) = &entry.hooks else {
                return Err(invalid(
                    format!("{at}.hooks"),
                    "missing: list the commands, e.g. hooks = [{ type = \"command\", command = \"...\" }]".into(),
                ));
            };
            for (j, h) in hooks.iter().enumerate() {
                let at = format!("{at}.hooks[{j}]");
                if let Some(kind) = &h.kind
                    && kind != "command"
                {
                    return Err(invalid(
                        format!("{at}.type"),
                        format!("`{kind}` is not supported; the only type is \"command\""),
                    ));
                }
                match &h.command {
                    Some(c) if !c.trim().is_empty() => {}
                    _ => {
                        return Err(invalid(
                            format!("{at}.command"),
                            "missing or empty: give the shell command to run".into(),
                        ));
                    }
                }
                if h.timeout == Some(0) {
                    return Err(invalid(
                        format!("{at}.timeout"),
                        "must be at least 1 (seconds)".into(),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The hooks of one (validated) file as resolved entries.
pub(crate) fn defs(file: &HooksFile, path: &Utf8Path, runs: bool) -> Vec<HookDef> {
    let mut out = Vec::new();
    for (event, list) in file.events() {
        for entry in list {
            for h in entry.hooks.iter().flatten() {
                let Some(command) = &h.command else { continue };
                out.push(HookDef {
                    event,
                    matcher: entry.matcher.clone().unwrap_or_default(),
                    command: command.clone(),
                    timeout_secs: h.timeout.unwrap_or(DEFAULT_HOOK_TIMEOUT_SECS),
                    file: path.to_path_buf(),
                    runs,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use camino::Utf8Path;

    use crate::{parse_global, parse_project};

    #[test]
    fn toml_and_json_take_claude_codes_shape() {
        let toml = "[[hooks.PostToolUse]]\nmatcher = \"Edit|Write\"\nhooks = [{ type = \"command\", command = \"fmt\", timeout = 5 }]\n[[hooks.Stop]]\nhooks = [{ command = \"check\" }]\n";
        let file = parse_global(toml, Utf8Path::new("/c/config.toml")).unwrap();
        let defs = super::defs(
            file.hooks.as_ref().unwrap(),
            Utf8Path::new("/c/config.toml"),
            true,
        );
        assert_eq!(defs.len(), 2);
        assert_eq!(defs[0].event.as_str(), "PostToolUse");
        assert_eq!(
            (defs[0].matcher.as_str(), defs[0].timeout_secs),
            ("Edit|Write", 5)
        );
        assert_eq!((defs[1].matcher.as_str(), defs[1].timeout_secs), ("", 60));
        let json = r#"{"hooks": {"SessionStart": [{"matcher": "compact", "hooks": [{"type": "command", "command": "cat notes"}]}]}}"#;
        let file = parse_project(json, Utf8Path::new("/p/eonyx.json")).unwrap();
        assert_eq!(file.hooks.unwrap().count(), 1);
    }

    #[test]
    fn bad_hooks_name_the_file_and_the_key() {
        let p = Utf8Path::new("/c/config.toml");
        let err = |t: &str| parse_global(t, p).unwrap_err().to_string();
        assert_eq!(
            err("[[hooks.SessionStrat]]\nhooks = []\n"),
            "/c/config.toml:1: unknown key `hooks.SessionStrat`; did you mean `SessionStart`?"
        );
        let e = err("[[hooks.PreToolUse]]\nmatcher = \"(\"\nhooks = [{ command = \"x\" }]\n");
        assert!(
            e.starts_with("/c/config.toml: invalid value for `hooks.PreToolUse[0].matcher`"),
            "{e}"
        );
        let e = err("[[hooks.PreToolUse]]\nhooks = [{ type = \"prompt\", command = \"x\" }]\n");
        assert!(e.contains("hooks.PreToolUse[0].hooks[0].type"), "{e}");
        let e = err("[[hooks.Stop]]\nhooks = [{ command = \"  \" }]\n");
        assert!(e.contains("hooks.Stop[0].hooks[0].command"), "{e}");
        let e = err("[[hooks.Stop]]\nmatcher = \"*\"\n");
        assert!(e.contains("hooks.Stop[0].hooks"), "{e}");
    }
}
