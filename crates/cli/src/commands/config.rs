//! `eonyx config` (the effective configuration and where each value came
//! from) and `eonyx trust` (let a project's eonyx.json set any key,
//! not only the untrusted allow-list).

use camino::Utf8PathBuf;
use eonyx_agent::limits::{self as window, Window};
use eonyx_config::paths::{self, Env};
use eonyx_config::{Config, TrustChange};
use eonyx_store::limits::LimitsCache;
use serde_json::{Value, json};

use crate::cli::{ConfigArgs, GlobalArgs, TrustArgs};
use crate::exit::Status;
use crate::printer::Printer;

/// One line of the listing.
struct Entry {
    key: String,
    value: Value,
    source: String,
    origin: Option<&'static str>,
}

pub fn run(
    printer: &mut Printer,
    global: &GlobalArgs,
    args: &ConfigArgs,
) -> anyhow::Result<Status> {
    if args.reset_limits {
        return reset_limits(printer, &Env::from_process());
    }
    let super::Setup { env, config, .. } = super::setup(printer, global)?;
    let cache = match paths::data_dir(&env) {
        Ok(dir) => {
            let mut warnings = Vec::new();
            let cache = window::open_cache(&dir, &mut warnings);
            for w in &warnings {
                printer.warn(w);
            }
            Some(cache)
        }
        Err(e) => {
            printer.warn(&format!("cannot read learned context windows: {e}"));
            None
        }
    };
    let resolved = window::resolve_cached(&config.model, cache.as_ref());
    let configured_src = window::configured_source(&config, &config.model_key);
    if let Some(w) = resolved.override_warning(&configured_src) {
        printer.warn(&w);
    }
    let learned_responses = cache.as_ref().is_some_and(|c| {
        c.quirks(&config.model.base_url, &config.model.name)
            .responses_api
    });
    let mut entries = entries(&config, window_entry(&resolved, &configured_src));
    if let Some(e) = api_entry(&config, learned_responses) {
        entries.insert(4, e);
    }
    // How `shell` commands run here (docs/using-tools.md, section "Sandbox").
    let sandbox = eonyx_sandbox::Sandbox::new(
        config.tools.sandbox.clone(),
        &config.project_root,
        &env,
        std::env::current_exe().ok(),
    );
    let plan = sandbox.plan();
    let sandbox_line = sandbox.describe(&plan);
    // The shell commands run with, whose grammar the permission rules use.
    let shell = eonyx_sandbox::shell_program();
    let backend = match &plan {
        eonyx_sandbox::Plan::Confined(b) => Some(b.name()),
        _ => None,
    };

    if printer.json() {
        let mut values = serde_json::Map::new();
        for e in &entries {
            let mut v = json!({ "value": e.value, "source": e.source });
            if let (Some(origin), Some(obj)) = (e.origin, v.as_object_mut()) {
                obj.insert("origin".into(), origin.into());
            }
            values.insert(e.key.clone(), v);
        }
        let out = json!({
            "values": values,
            "files": {
                "config_dir": config.config_dir,
                "global": config.global_file,
                "project": config.project_file,
                "project_root": config.project_root,
                "trusted": config.trusted,
            },
            "sandbox": { "backend": backend, "status": sandbox_line },
            "shell": { "name": shell.name(), "path": shell.path },
            "warnings": config.warnings,
        });
        printer.json_pretty(&out)?;
        return Ok(Status::Success);
    }

    let global_file = eonyx_config::load::global_config_path(&config.config_dir);
    let mut out = String::new();
    out.push_str(&format!(
        "# global config:  {global_file}{}\n",
        if config.global_file.is_some() {
            ""
        } else {
            " (not found)"
        }
    ));
    match &config.project_file {
        Some(p) => out.push_str(&format!(
            "# project config: {p} ({})\n",
            if config.trusted {
                "trusted"
            } else {
                "not trusted"
            }
        )),
        None => out.push_str("# project config: (none)\n"),
    }
    out.push_str(&format!("# project root:   {}\n", config.project_root));
    out.push_str(&format!("# sandbox:        {sandbox_line}\n"));
    out.push_str(&format!(
        "# shell:          {} ({}; permission rules read lines as {0} does)\n",
        shell.name(),
        shell.path.display()
    ));
    let lines: Vec<(String, &str)> = entries
        .iter()
        .map(|e| {
            (
                format!("{} = {}", e.key, render(&e.value)),
                e.source.as_str(),
            )
        })
        .collect();
    let width = lines
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0);
    for (line, source) in lines {
        let pad = width - line.chars().count();
        out.push_str(&format!("{line}{}  # {source}\n", " ".repeat(pad)));
    }
    printer.out(&out)?;
    Ok(Status::Success)
}

/// A value for the text listing: long text (a profile's instructions) is
/// cut to keep the columns readable; `--json` has it whole.
fn render(v: &Value) -> String {
    match v {
        Value::Null => "(unset)".to_owned(),
        Value::String(s) if s.chars().count() > MAX_SHOWN_CHARS => format!(
            "{}… ({} chars)",
            Value::String(
                eonyx_core::text::cut_chars(s, MAX_SHOWN_CHARS)
                    .unwrap_or(s)
                    .to_owned()
            ),
            s.chars().count()
        ),
        other => other.to_string(),
    }
}

/// Longest text value shown whole in the text listing.
const MAX_SHOWN_CHARS: usize = 48;

/// The effective `context_window`: value, where it came from, origin tag.
fn window_entry(w: &Window, configured_src: &str) -> (u64, String, &'static str) {
    (w.tokens, w.describe(configured_src), w.tag())
}

/// `models.KEY.api` of an OpenAI model: the wire in use and why
/// (configured, the default for its base URL, or learned from a 400 and
/// remembered in limits.json).
fn api_entry(config: &Config, learned_responses: bool) -> Option<Entry> {
    let m = &config.model;
    if m.provider != eonyx_config::ProviderKind::Openai {
        return None;
    }
    let key = format!("models.{}.api", config.model_key);
    let (value, source) = if learned_responses {
        (
            "responses",
            "learned: Chat Completions said the model is served only by the Responses API (limits.json; `eonyx config --reset-limits` forgets it)".to_owned(),
        )
    } else if m.api.is_some() {
        (m.default_api().as_str(), config.source(&key).to_string())
    } else if m.is_openai_api() {
        ("responses", "default (OpenAI's own API)".to_owned())
    } else {
        ("chat", "default (not OpenAI's own API)".to_owned())
    };
    Some(Entry {
        key,
        value: json!(value),
        source,
        origin: None,
    })
}

/// `eonyx config --reset-limits`: forget detected and learned windows and
/// the parameters models refused.
fn reset_limits(printer: &mut Printer, env: &Env) -> anyhow::Result<Status> {
    let dir = paths::data_dir(env)?;
    let path = dir.join(eonyx_store::limits::LIMITS_FILE);
    let existed = LimitsCache::reset(&dir)?;
    if printer.json() {
        printer.outln(&json!({"reset": existed, "file": path}).to_string())?;
    } else if existed {
        printer.info(&format!(
            "forgot the detected and learned context windows ({path} removed); they are asked again on the next run"
        ));
    } else {
        printer.info(&format!("nothing to forget: {path} does not exist"));
    }
    Ok(Status::Success)
}

fn entries(config: &Config, window: (u64, String, &'static str)) -> Vec<Entry> {
    let entry = |key: String, value: Value| Entry {
        source: config.source(&key).to_string(),
        key,
        value,
        origin: None,
    };
    let m = &config.model;
    let k = |f: &str| format!("models.{}.{f}", config.model_key);
    let c = &config.compaction;
    let ck = |f: &str| format!("compaction.{f}");
    let (window, window_source, window_origin) = window;
    let sb = &config.tools.sandbox;
    let mut out = vec![
        entry("model".into(), json!(config.model_key)),
        entry("profile".into(), json!(config.profile)),
        entry(k("provider"), json!(m.provider.as_str())),
        entry(k("base_url"), json!(m.base_url)),
        entry(k("name"), json!(m.name)),
        entry(k("api_key_env"), json!(m.api_key_env)),
        Entry {
            key: k("context_window"),
            value: json!(window),
            source: window_source,
            origin: Some(window_origin),
        },
        entry(k("max_input_tokens"), json!(m.max_input_tokens)),
        entry(k("max_output_tokens"), json!(m.max_output_tokens)),
        entry(k("temperature"), json!(m.temperature)),
        entry(k("retries"), json!(m.retries)),
        entry(k("connect_timeout_secs"), json!(m.connect_timeout_secs)),
        entry(k("idle_timeout_secs"), json!(m.idle_timeout_secs)),
        entry(k("reasoning_effort"), json!(m.reasoning_effort)),
        entry(k("thinking_budget_tokens"), json!(m.thinking_budget_tokens)),
        entry(k("reasoning_summary"), json!(m.reasoning_summary)),
        entry(k("pricing"), json!(m.pricing)),
        entry(k("compaction_native"), json!(m.compaction_native)),
        entry(ck("auto"), json!(c.auto)),
        entry(ck("prune"), json!(c.prune)),
        entry(ck("threshold_percent"), json!(c.threshold_percent)),
        Entry {
            source: match c.ahead_percent {
                Some(_) => config.source(&ck("ahead_percent")).to_string(),
                None => "default (from threshold_percent)".to_owned(),
            },
            key: ck("ahead_percent"),
            value: json!(c.ahead_percent()),
            origin: None,
        },
        entry(ck("buffer_tokens"), json!(c.buffer_tokens)),
        entry(ck("keep_turns"), json!(c.keep_turns)),
        entry(ck("keep_tokens"), json!(c.keep_tokens)),
        entry(ck("summary_max_tokens"), json!(c.summary_max_tokens)),
        entry(ck("chars_per_token"), json!(c.chars_per_token)),
        entry(ck("image_tokens"), json!(c.image_tokens)),
        entry(
            ck("tool_result_budget_chars"),
            json!(c.tool_result_budget_chars),
        ),
        entry(ck("keep_recent_results"), json!(c.keep_recent_results)),
        entry(ck("max_consecutive"), json!(c.max_consecutive)),
        entry(ck("model"), json!(c.model)),
        entry(ck("temperature"), json!(c.temperature)),
        entry(ck("reasoning_effort"), json!(c.reasoning_effort)),
        entry(ck("native"), json!(c.native)),
        entry(
            ck("trigger_tokens_override"),
            json!(c.trigger_tokens_override),
        ),
        entry(
            "context.max_file_bytes".into(),
            json!(config.context.max_file_bytes),
        ),
        entry(
            "context.max_total_bytes".into(),
            json!(config.context.max_total_bytes),
        ),
        entry(
            "skills.max_listed_bytes".into(),
            json!(config.skills.max_listed_bytes),
        ),
        entry(
            "skills.max_reloaded_bytes".into(),
            json!(config.skills.max_reloaded_bytes),
        ),
        entry("tools.shell".into(), json!(config.tools.shell)),
        entry(
            "tools.output_cap_bytes".into(),
            json!(config.tools.output_cap_bytes),
        ),
        entry(
            "tools.shell_timeout_secs".into(),
            json!(config.tools.shell_timeout_secs),
        ),
        entry("tools.write".into(), json!(config.tools.write)),
        entry(
            "tools.max_edit_bytes".into(),
            json!(config.tools.max_edit_bytes),
        ),
        entry("tools.max_jobs".into(), json!(config.tools.max_jobs)),
        entry(
            "tools.job_log_max_bytes".into(),
            json!(config.tools.job_log_max_bytes),
        ),
        entry("tools.sandbox".into(), json!(sb.mode)),
        entry("tools.sandbox_backend".into(), json!(sb.backend)),
        entry("tools.sandbox_writable".into(), json!(sb.writable)),
        entry("tools.sandbox_network".into(), json!(sb.network)),
        entry("tools.sandbox_required".into(), json!(sb.required)),
        entry(
            "tools.max_image_bytes".into(),
            json!(config.tools.max_image_bytes),
        ),
        entry("tools.recall".into(), json!(config.tools.recall)),
        entry("tools.task".into(), json!(config.tools.task)),
        entry("tools.web_fetch".into(), json!(config.tools.web.policy)),
        entry(
            "tools.web_fetch_max_bytes".into(),
            json!(config.tools.web.max_bytes),
        ),
        entry(
            "tools.web_fetch_timeout_secs".into(),
            json!(config.tools.web.timeout_secs),
        ),
        entry(
            "tools.web_fetch_domains".into(),
            json!(config.tools.web.domains),
        ),
        entry(
            "tools.web_fetch_private_hosts".into(),
            json!(config.tools.web.private_hosts),
        ),
        entry("tasks.max_depth".into(), json!(config.tasks.max_depth)),
        entry(
            "tasks.max_parallel".into(),
            json!(config.tasks.max_parallel),
        ),
        entry("goals.max_turns".into(), json!(config.goals.max_turns)),
        entry("memory.enabled".into(), json!(config.memory.enabled)),
        entry("memory.max_bytes".into(), json!(config.memory.max_bytes)),
        entry("repl.edit_mode".into(), json!(config.repl.edit_mode)),
        entry("repl.history".into(), json!(config.repl.history)),
        entry("repl.history_size".into(), json!(config.repl.history_size)),
        entry("ui.reasoning".into(), json!(config.ui.reasoning)),
        entry("max_steps".into(), json!(config.max_steps)),
        entry(
            "mcp.defer_above_tokens".into(),
            json!(config.mcp.defer_above_tokens),
        ),
    ];
    out.extend(
        config
            .mcp
            .servers
            .values()
            .flat_map(|s| mcp_entries(config, s)),
    );
    // Every profile a task may name (docs/using-tools.md, section "Tasks").
    for (name, p) in &config.profiles {
        let key = |f: &str| format!("profiles.{name}.{f}");
        let tools = p.tools.as_ref().map(|t| {
            t.iter()
                .map(|t| t.as_str())
                .chain(p.mcp_tools.iter().map(String::as_str))
                .collect::<Vec<_>>()
        });
        out.push(entry(key("description"), json!(p.description)));
        out.push(entry(key("instructions"), json!(p.instructions)));
        out.push(entry(key("tools"), json!(tools)));
        if let Some(m) = &p.model {
            out.push(entry(key("model"), json!(m)));
        }
    }
    out.extend(hook_entries(config));
    out
}

/// One entry per hook (docs/hooks.md#configuration), `hooks.EVENT[i]`
/// numbered per event across the files, with its file as the source.
fn hook_entries(config: &Config) -> Vec<Entry> {
    let mut seen: std::collections::BTreeMap<&str, usize> = Default::default();
    config
        .hooks
        .hooks
        .iter()
        .map(|h| {
            let n = seen.entry(h.event.as_str()).or_default();
            let key = format!("hooks.{}[{n}]", h.event);
            *n += 1;
            let mut value = json!({
                "matcher": h.matcher,
                "command": h.command,
                "timeout": h.timeout_secs,
            });
            if let Some(v) = value.as_object_mut()
                && !h.runs
            {
                v.insert("runs".into(), json!(false));
            }
            Entry {
                key,
                value,
                source: if h.runs {
                    h.file.to_string()
                } else {
                    format!("{} (not run: the project is not trusted)", h.file)
                },
                origin: None,
            }
        })
        .collect()
}

/// The keys of one `[mcp_servers.NAME]`. `env` and `headers` show their
/// names only: their values may be tokens.
fn mcp_entries(config: &Config, s: &eonyx_config::McpServerConfig) -> Vec<Entry> {
    use eonyx_config::McpTransport;
    let entry = |field: &str, value: Value| {
        let key = format!("mcp_servers.{}.{field}", s.name);
        Entry {
            source: config.source(&key).to_string(),
            key,
            value,
            origin: None,
        }
    };
    let names =
        |m: &std::collections::BTreeMap<String, String>| json!(m.keys().collect::<Vec<_>>());
    let mut out = match &s.transport {
        Some(McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        }) => vec![
            entry("command", json!(command)),
            entry("args", json!(args)),
            entry("env", names(env)),
            entry("cwd", json!(cwd)),
        ],
        Some(McpTransport::Http {
            url,
            headers,
            bearer_token_env_var,
        }) => vec![
            entry("url", json!(url)),
            entry("headers", names(headers)),
            entry("bearer_token_env_var", json!(bearer_token_env_var)),
        ],
        None => vec![entry("command", Value::Null), entry("url", Value::Null)],
    };
    out.extend([
        entry("enabled", json!(s.enabled)),
        entry("enabled_tools", json!(s.enabled_tools)),
        entry("disabled_tools", json!(s.disabled_tools)),
        entry("startup_timeout_secs", json!(s.startup_timeout_secs)),
        entry("tool_timeout_secs", json!(s.tool_timeout_secs)),
        entry("required", json!(s.required)),
        entry("approval", json!(s.approval)),
    ]);
    out
}

pub fn trust(
    printer: &mut Printer,
    _global: &GlobalArgs,
    args: &TrustArgs,
) -> anyhow::Result<Status> {
    let env = Env::from_process();
    let config_dir = paths::config_dir(&env)?;
    let cwd = paths::current_dir()?;
    let root: Utf8PathBuf = match &args.path {
        Some(p) if p.is_absolute() => p.clone(),
        Some(p) => cwd.join(p),
        None => paths::find_project(&cwd).root,
    };
    let (root, change) = eonyx_config::trust_project(&config_dir, &root, args.remove)?;
    let file = eonyx_config::load::global_config_path(&config_dir);
    if printer.json() {
        let trusted = matches!(change, TrustChange::Added | TrustChange::AlreadyTrusted);
        let changed = matches!(change, TrustChange::Added | TrustChange::Removed);
        printer.outln(
            &json!({
                "root": root,
                "trusted": trusted,
                "changed": changed,
                "config_file": file,
            })
            .to_string(),
        )?;
        return Ok(Status::Success);
    }
    match change {
        TrustChange::Added => printer.info(&format!(
            "trusted {root}: its eonyx.json may now set any key, including provider, base_url, api_key_env, models and tool permissions (recorded in {file})"
        )),
        TrustChange::AlreadyTrusted => printer.info(&format!("{root} is already trusted ({file})")),
        TrustChange::Removed => printer.info(&format!("{root} is no longer trusted ({file})")),
        TrustChange::NotListed => printer.info(&format!("{root} was not trusted; nothing to remove")),
    }
    Ok(Status::Success)
}
