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
    if let Some(h) = &file.hooks {
        crate::hooks::validate(h, path)?;
    }
    if let Some(p) = &file.permissions {
        crate::permissions::validate(p, path)?;
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
        if t.max_jobs == Some(0) {
            return Err(invalid(
                "tools.max_jobs".into(),
                "must be at least 1 (set tools.shell = \"deny\" to run no commands)",
            ));
        }
        if t.job_log_max_bytes.is_some_and(|b| b < 2 * 1024 * 1024) {
            return Err(invalid(
                "tools.job_log_max_bytes".into(),
                "must be at least 2097152 (2 MiB: the log keeps its first MiB and the newest bytes)",
            ));
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
        if t.web_fetch_max_bytes == Some(0) {
            return Err(invalid(
                "tools.web_fetch_max_bytes".into(),
                "must be at least 1",
            ));
        }
        if t.web_fetch_timeout_secs == Some(0) {
            return Err(invalid(
                "tools.web_fetch_timeout_secs".into(),
                "must be at least 1",
            ));
        }
        if let Some(bad) = t
            .web_fetch_private_hosts
            .iter()
            .flatten()
            .find(|h| !is_host_port(h))
        {
            return Err(invalid(
                "tools.web_fetch_private_hosts".into(),
                &format!(
                    "{bad:?} is not host:port; write each entry as the URL spells it, e.g. \"localhost:3000\" or \"127.0.0.1:8000\""
                ),
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
    if let Some(m) = &file.memory
        && let Some(h) = m.mine_idle_hours
        && !(h.is_finite() && h >= 0.0)
    {
        return Err(invalid(
            "memory.mine_idle_hours".into(),
            "must be a number of hours, 0 or more",
        ));
    }
    if let Some(m) = &file.memory
        && m.mine_budget_tokens.is_some_and(|t| t < 1000)
    {
        return Err(invalid(
            "memory.mine_budget_tokens".into(),
            "must be at least 1000; set memory.mine = \"off\" to stop mining",
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
        if let Some(url) = &m.base_url
            && !is_http_url(url)
        {
            return Err(invalid(
                k("base_url"),
                &format!("{url:?} is not an http:// or https:// URL"),
            ));
        }
        if m.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return Err(invalid(k("name"), "must not be empty"));
        }
        if let Some(var) = &m.api_key_env
            && !is_env_var_name(var)
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
        if let Some(b) = m.thinking_budget_tokens
            && b < 1024
        {
            return Err(invalid(
                k("thinking_budget_tokens"),
                "must be at least 1024 (Anthropic's smallest thinking budget)",
            ));
        }
        if m.api.is_some() && m.provider == Some(crate::ProviderKind::Anthropic) {
            return Err(invalid(
                k("api"),
                "applies to provider = \"openai\" only (an Anthropic model speaks the Messages API); remove it",
            ));
        }
        if let Some(c) = &m.compaction {
            validate_compaction(c, &k("compaction"), path)?;
        }
        if let Some(p) = &m.pricing {
            for (field, v) in [
                ("input", p.input),
                ("cached_input", p.cached_input),
                ("output", p.output),
                ("cache_write", p.cache_write),
            ] {
                if let Some(v) = v
                    && !(v.is_finite() && v >= 0.0)
                {
                    return Err(invalid(
                        k(&format!("pricing.{field}")),
                        &format!(
                            "{v} is not a price; give USD per million tokens, 0 or more, e.g. 3.0"
                        ),
                    ));
                }
            }
            for (field, v) in [("input", p.input), ("output", p.output)] {
                if v.is_none() {
                    return Err(invalid(
                        k(&format!("pricing.{field}")),
                        "is required with pricing (USD per million tokens); cached_input and cache_write default to input",
                    ));
                }
            }
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
            // An MCP tool cannot be checked here (the servers are asked only
            // when a session opens); its name only needs a server and a tool.
            if eonyx_core::tool::is_mcp_tool(tool) {
                let rest = &tool[eonyx_core::tool::MCP_PREFIX.len()..];
                if !rest.contains("__") && !rest.ends_with('*') {
                    return Err(invalid(
                        format!("profiles.{name}.tools"),
                        &format!(
                            "`{tool}` is not an MCP tool name; write `mcp__<server>__<tool>` as `eonyx mcp` lists it, or `mcp__<server>__*` for all of a server's tools"
                        ),
                    ));
                }
                continue;
            }
            if eonyx_core::ToolName::parse(tool).is_none() {
                let known: Vec<&str> = eonyx_core::ToolName::ALL
                    .iter()
                    .map(|t| t.as_str())
                    .collect();
                return Err(invalid(
                    format!("profiles.{name}.tools"),
                    &format!(
                        "unknown tool `{tool}`; tools: {}, and MCP tools as `mcp__<server>__<tool>`",
                        known.join(", ")
                    ),
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
    if let Some(g) = &file.goals
        && g.max_turns == Some(0)
    {
        return Err(invalid(
            "goals.max_turns".into(),
            "must be at least 1 (the continuation turns a goal may use)",
        ));
    }
    for (name, server) in &file.mcp_servers {
        validate_mcp_server(name, server, path)?;
    }
    if file.trusted_projects.iter().any(|p| p.trim().is_empty()) {
        return Err(invalid(
            "trusted_projects".into(),
            "entries must be non-empty paths",
        ));
    }
    Ok(())
}

/// A name of an environment variable: letters, digits and `_`, not starting
/// with a digit.
pub(crate) fn is_env_var_name(var: &str) -> bool {
    !var.is_empty()
        && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !var.starts_with(|c: char| c.is_ascii_digit())
}

/// Whether `s` is an http:// or https:// URL (as far as config can tell).
pub(crate) fn is_http_url(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// `[mcp_servers.NAME]` of one file: the name, one transport, the values.
/// That a server has a transport at all is checked after the merge (a
/// trusted project may change one field of a global server).
fn validate_mcp_server(
    name: &str,
    s: &crate::McpServerFile,
    path: &Utf8Path,
) -> Result<(), ConfigError> {
    let invalid = |field: &str, message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        key: if field.is_empty() {
            format!("mcp_servers.{name}")
        } else {
            format!("mcp_servers.{name}.{field}")
        },
        message,
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(invalid(
            "",
            format!(
                "{name:?} is not a server name: use letters, digits, `_` and `-` (it becomes part of the tool names, mcp__{name}__TOOL)"
            ),
        ));
    }
    if s.command.is_some() && s.url.is_some() {
        return Err(invalid(
            "url",
            "a server has either `command` (a program eonyx starts, speaking stdio) or `url` (streamable HTTP), not both".into(),
        ));
    }
    if s.command.as_deref().is_some_and(|c| c.trim().is_empty()) {
        return Err(invalid("command", "must not be empty".into()));
    }
    if let Some(url) = &s.url
        && !is_http_url(url)
    {
        return Err(invalid(
            "url",
            format!("{url:?} is not an http:// or https:// URL"),
        ));
    }
    if s.url.is_some() {
        for (field, set) in [
            ("args", s.args.is_some()),
            ("env", s.env.is_some()),
            ("cwd", s.cwd.is_some()),
        ] {
            if set {
                return Err(invalid(
                    field,
                    format!("`{field}` is for servers eonyx starts (`command`), not for a `url`"),
                ));
            }
        }
    }
    if s.command.is_some() {
        for (field, set) in [
            ("headers", s.headers.is_some()),
            ("bearer_token_env_var", s.bearer_token_env_var.is_some()),
        ] {
            if set {
                return Err(invalid(
                    field,
                    format!(
                        "`{field}` is for streamable HTTP servers (`url`), not for a `command`"
                    ),
                ));
            }
        }
    }
    if let Some(var) = &s.bearer_token_env_var
        && !is_env_var_name(var)
    {
        return Err(invalid(
            "bearer_token_env_var",
            "must be the NAME of an environment variable (letters, digits, _) holding the token, never the token itself".into(),
        ));
    }
    for var in s.env.iter().flat_map(|e| e.keys()) {
        if var.is_empty() || var.contains(['=', '\0']) {
            return Err(invalid(
                "env",
                format!("{var:?} is not an environment variable name"),
            ));
        }
    }
    for header in s.headers.iter().flat_map(|h| h.keys()) {
        let token = !header.is_empty()
            && header
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token {
            return Err(invalid(
                "headers",
                format!("{header:?} is not an HTTP header name"),
            ));
        }
    }
    for (field, v) in [
        ("startup_timeout_secs", s.startup_timeout_secs),
        ("tool_timeout_secs", s.tool_timeout_secs),
    ] {
        if v == Some(0) {
            return Err(invalid(field, "must be at least 1".into()));
        }
    }
    Ok(())
}

/// The largest `compaction.user_words_tokens` accepted.
const USER_WORDS_TOKENS_MAX: u64 = 1_000_000;

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
    if let Some(t) = c.user_words_tokens
        && t > USER_WORDS_TOKENS_MAX
    {
        return Err(invalid(
            "user_words_tokens",
            &format!(
                "{t} is out of range; use a number of tokens from 0 (off) to {USER_WORDS_TOKENS_MAX} (it is never more than half the context window), or leave it unset for a fifth of the window, at most 20000"
            ),
        ));
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

/// `host:port` with a non-empty host and a port number (`[::1]:8080` too).
fn is_host_port(entry: &str) -> bool {
    entry
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
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
        assert!(parse_global("[compaction]\nuser_words_tokens = 0\n", p).is_ok());
        assert!(parse_global("[compaction]\nuser_words_tokens = 8000\n", p).is_ok());
        let err = parse_global("[compaction]\nuser_words_tokens = 2000000\n", p).unwrap_err();
        assert!(
            err.to_string()
                .contains("`compaction.user_words_tokens`: 2000000 is out of range"),
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
