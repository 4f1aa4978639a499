//! Validation: value ranges of a parsed file. Errors name the file and the
//! dotted key, and say what to write instead.

use camino::Utf8Path;

use crate::{CompactionFile, ConfigError, ConfigFile};

/// Check value ranges of a parsed file; errors name the file and the dotted
/// key.
pub fn validate(file: &ConfigFile, path: &Utf8Path) -> Result<(), ConfigError> {
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
        if let Some(bad) = t
            .sandbox_writable
            .iter()
            .flatten()
            .find(|p| !Utf8Path::new(p.as_str()).is_absolute() && !p.starts_with("~/"))
        {
            return Err(invalid(
                "tools.sandbox_writable".into(),
                &format!(
                    "{bad:?} is not an absolute path; give each directory as a full path or under ~/, e.g. \"~/.cache\""
                ),
            ));
        }
        if t.max_image_bytes == Some(0) {
            return Err(invalid(
                "tools.max_image_bytes".into(),
                "must be at least 1",
            ));
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
        for tool in p.tools.iter().flatten() {
            if eonyx_core::ToolName::parse(tool).is_none() {
                let known: Vec<&str> = eonyx_core::ToolName::ALL
                    .iter()
                    .map(|t| t.as_str())
                    .collect();
                return Err(invalid(
                    format!("profiles.{name}.tools"),
                    &format!("unknown tool `{tool}`; tools: {}", known.join(", ")),
                ));
            }
        }
    }
    if let Some(t) = &file.tasks
        && t.max_parallel == Some(0)
    {
        return Err(invalid(
            "tasks.max_parallel".into(),
            "must be at least 1; to turn tasks off set `tools.task = false`",
        ));
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
    if let Some(a) = c.ahead_percent
        && (!a.is_finite() || !(0.0..=100.0).contains(&a) || (a > 0.0 && a < 1.0))
    {
        return Err(invalid(
            "ahead_percent",
            &format!(
                "{a} is out of range; use a percentage from 1 to 100 below threshold_percent (fractions allowed), or 0 to turn ahead-of-time summaries off"
            ),
        ));
    }
    if let (Some(a), Some(t)) = (c.ahead_percent, c.threshold_percent)
        && a > 0.0
        && a >= t
    {
        return Err(invalid(
            "ahead_percent",
            &format!(
                "{a} is not below threshold_percent ({t}): the summary must start before compaction is due; use a smaller value, or 0 to turn it off"
            ),
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

#[cfg(test)]
mod tests {
    use crate::parse::parse_global;
    use camino::Utf8Path;

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
        assert!(parse_global("[compaction]\nahead_percent = 0\n", p).is_ok());
        assert!(parse_global("[compaction]\nahead_percent = 55.5\n", p).is_ok());
        let err = parse_global("[compaction]\nahead_percent = 101\n", p).unwrap_err();
        assert!(
            err.to_string()
                .contains("`compaction.ahead_percent`: 101 is out of range"),
            "{err}"
        );
        let err = parse_global(
            "[models.m.compaction]\nthreshold_percent = 60\nahead_percent = 60\n",
            p,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains(
                "`models.m.compaction.ahead_percent`: 60 is not below threshold_percent (60)"
            ),
            "{err}"
        );
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
}
