//! `eonyx context`: the system prompt exactly as it would be sent from the
//! current directory (stdout), and the context files that went into it with
//! sizes and token estimates (stderr), then the tool definitions and the
//! fixed size of every request. `--json` puts all of it on stdout.
//!
//! With MCP servers configured, they are started here as a session would
//! start them (and stopped again), because their tools are part of every
//! request: their definitions count in the fixed size, and past
//! `mcp.defer_above_tokens` the `# MCP tools` listing is in the prompt
//! (docs/mcp.md#eonyx-context). No model is asked.

use eonyx_config::paths::{self, Env};
use eonyx_core::tokens::{DEFAULT_CHARS_PER_TOKEN, estimate};
use eonyx_core::{SessionId, SystemPrompt};
use eonyx_prompt::{ContextLoader, Loaded};

use crate::cli::{ContextArgs, GlobalArgs};
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(
    printer: &mut Printer,
    global: &GlobalArgs,
    args: &ContextArgs,
) -> anyhow::Result<Status> {
    let super::Setup { cwd, env, config } = super::setup(printer, global)?;

    let (summary, in_use) = match &args.session {
        Some(id) => {
            let id = SessionId::parse(id)?;
            let store = eonyx_store::Store::open(&paths::data_dir(&env)?)?;
            store
                .load_effective(&id)?
                .compaction
                .map(|c| {
                    let summary = eonyx_prompt::summary_for_prompt(
                        &c.pinned_section(),
                        &c.summary,
                        config.tools.recall,
                    );
                    (Some(summary), c.skills)
                })
                .unwrap_or_default()
        }
        None => (None, Vec::new()),
    };

    let project = paths::find_project(&cwd);
    let mut loader = ContextLoader::new(&cwd, &project, &config.config_dir, config.context.clone());
    let loaded = loader.load();
    let memory = memory_section(&config, &env, &project.root, printer);
    let date = eonyx_core::time::today_utc();
    let mut prompt = eonyx_prompt::system_prompt(&loaded, &date, summary.as_deref());
    memory.append_to(&mut prompt);
    let skills = eonyx_prompt::skills::discover(
        &project,
        &config.config_dir,
        eonyx_prompt::skills::home_dir(&env).as_deref(),
        &config.skills,
    );
    let in_use = eonyx_prompt::skills::skills_in_use(
        &skills,
        &in_use,
        config.skills.max_reloaded_bytes,
        &eonyx_prompt::FsReader,
    );
    eonyx_prompt::skills::add_to_prompt(&mut prompt, &skills.section, &in_use.section);
    let mcp = if config.mcp.enabled().next().is_some() {
        let window = super::mcp::context_window(&config, &env);
        Some(super::ui::runtime()?.block_on(eonyx_agent::mcp::inspect(&config, &env, window)))
    } else {
        None
    };
    if let Some(r) = &mcp {
        eonyx_prompt::add_mcp_listing(&mut prompt, &r.catalog.listing());
    }
    let total_tokens = estimate(prompt.chars(), DEFAULT_CHARS_PER_TOKEN);
    let tools = ToolSizes::new(
        &eonyx_agent::mcp::builtin_tools(&config, &skills),
        mcp.as_ref(),
    );

    if printer.json() {
        let mut report = json_report(&loaded, &prompt, total_tokens);
        report["memory"] = serde_json::json!({
            "bytes": memory.text.len(),
            "tokens": estimate(memory.text.chars().count(), DEFAULT_CHARS_PER_TOKEN),
            "entries": memory.shown,
            "omitted": memory.omitted,
        });
        report["skills"] = super::skills::section_json(&skills);
        report["tools"] = serde_json::json!({
            "builtin": tools.builtin,
            "builtin_tokens": tools.builtin_tokens,
            "mcp": tools.mcp,
            "mcp_servers": tools.mcp_servers,
            "mcp_tokens": tools.mcp_tokens,
            "mcp_deferred": tools.mcp_deferred,
        });
        report["fixed_tokens"] = (total_tokens + tools.builtin_tokens + tools.mcp_tokens).into();
        printer.json_line(&report)?;
    } else {
        printer.out(&prompt.text())?;
        if printer.stdout_is_terminal() {
            printer.out("\n")?;
        }
        printer.flush()?;
        print_table(printer, &loaded, &prompt, total_tokens, env.get("HOME"));
        if !skills.is_empty() {
            printer.info(&super::skills::section_line(&skills));
        }
        print_memory_line(printer, &memory);
        printer.info(&tools.line(total_tokens));
    }
    for w in mcp.iter().flat_map(|r| &r.warnings) {
        printer.warn(w);
    }
    for w in loaded
        .warnings
        .iter()
        .chain(&skills.warnings)
        .chain(&in_use.warnings)
    {
        printer.warn(w);
    }
    Ok(Status::Success)
}

/// The tool definitions of every request: the built-in ones and the MCP
/// part (its definitions, or with deferral `mcp_describe` and `mcp_call`;
/// the listing is in the system prompt then).
struct ToolSizes {
    builtin: usize,
    builtin_tokens: u64,
    mcp: usize,
    mcp_servers: usize,
    mcp_tokens: u64,
    mcp_deferred: bool,
}

impl ToolSizes {
    fn new(builtin: &[eonyx_core::ToolDef], mcp: Option<&eonyx_agent::mcp::McpReport>) -> Self {
        let tokens = |defs: &[eonyx_core::ToolDef]| {
            estimate(
                defs.iter().map(eonyx_core::ToolDef::chars).sum(),
                DEFAULT_CHARS_PER_TOKEN,
            )
        };
        let (mcp_defs, mcp_tools, servers, deferred) = match mcp {
            Some(r) => (
                r.catalog.definitions(),
                r.catalog.entries().len(),
                r.servers
                    .iter()
                    .filter(|s| s.state == eonyx_agent::mcp::ServerState::Ready)
                    .count(),
                r.catalog.deferred(),
            ),
            None => (Vec::new(), 0, 0, false),
        };
        Self {
            builtin: builtin.len(),
            builtin_tokens: tokens(builtin),
            mcp: mcp_tools,
            mcp_servers: servers,
            mcp_tokens: tokens(&mcp_defs),
            mcp_deferred: deferred,
        }
    }

    /// `tools: …; fixed request size ~N tokens` for stderr.
    fn line(&self, prompt_tokens: u64) -> String {
        let mut s = format!(
            "tools: {} built-in, ~{} tokens",
            self.builtin, self.builtin_tokens
        );
        if self.mcp > 0 {
            s.push_str(&format!(
                "; {} MCP from {} server{}, ~{} tokens{}",
                self.mcp,
                self.mcp_servers,
                if self.mcp_servers == 1 { "" } else { "s" },
                self.mcp_tokens,
                if self.mcp_deferred {
                    " (schemas deferred: mcp_describe and mcp_call, listed under # MCP tools)"
                } else {
                    ""
                }
            ));
        }
        s.push_str(&format!(
            "; fixed request size ~{} tokens (system prompt and tool definitions)",
            prompt_tokens + self.builtin_tokens + self.mcp_tokens
        ));
        s
    }
}

/// The `# Memory` section a new session would start with.
fn memory_section(
    config: &eonyx_config::Config,
    env: &Env,
    root: &camino::Utf8Path,
    printer: &Printer,
) -> eonyx_prompt::MemorySection {
    if !config.memory.enabled {
        return eonyx_prompt::MemorySection::disabled();
    }
    let store = match paths::data_dir(env) {
        Ok(d) => eonyx_store::memory::MemoryStore::new(&d, root),
        Err(e) => return eonyx_prompt::MemorySection::unreadable(&e.to_string()),
    };
    match store.list() {
        Ok(entries) => eonyx_prompt::memory_section(&entries, config.memory.max_bytes),
        Err(e) => {
            printer.warn(&format!("memory: {e}"));
            eonyx_prompt::MemorySection::unreadable(&e.to_string())
        }
    }
}

/// The memory section's size on stderr, like a context file's. Also used
/// by the REPL's `/context`.
pub(crate) fn print_memory_line(printer: &Printer, memory: &eonyx_prompt::MemorySection) {
    if memory.text.is_empty() {
        printer.info("memory: no entries");
        return;
    }
    let mut line = format!(
        "memory: {} entr{}, {} bytes, ~{} tokens",
        memory.shown,
        if memory.shown == 1 { "y" } else { "ies" },
        memory.text.len(),
        estimate(memory.text.chars().count(), DEFAULT_CHARS_PER_TOKEN)
    );
    if memory.omitted > 0 {
        line.push_str(&format!(
            "; {} older left out (memory.max_bytes); `eonyx memory` lists all",
            memory.omitted
        ));
    }
    printer.info(&line);
}

fn json_report(loaded: &Loaded, prompt: &SystemPrompt, total_tokens: u64) -> serde_json::Value {
    let files: Vec<serde_json::Value> = loaded
        .files
        .iter()
        .map(|f| {
            serde_json::json!({
                "path": f.display,
                "bytes": f.bytes,
                "tokens": f.tokens,
                "truncated": f.truncated,
            })
        })
        .collect();
    serde_json::json!({
        "files": files,
        "stable_prefix": prompt.stable,
        "suffix": prompt.suffix,
        "total_tokens": total_tokens,
    })
}

/// One row per file, then the total, on stderr. Absolute paths under
/// `home` are shown as `~/…`. Also used by the REPL's `/context`.
pub(crate) fn print_table(
    printer: &Printer,
    loaded: &Loaded,
    prompt: &SystemPrompt,
    total_tokens: u64,
    home: Option<&str>,
) {
    let tilde = |display: &str| super::tilde(display, home);
    if loaded.files.is_empty() {
        printer.info("no context files (AGENTS.md, *.context.md) found");
    } else {
        let rows: Vec<[String; 4]> = loaded
            .files
            .iter()
            .map(|f| {
                let truncated = if f.truncated {
                    format!("yes ({} of {} bytes kept)", f.included_bytes, f.bytes)
                } else {
                    "no".to_owned()
                };
                [
                    tilde(&f.display),
                    f.bytes.to_string(),
                    f.tokens.to_string(),
                    truncated,
                ]
            })
            .collect();
        let header = ["FILE", "BYTES", "TOKENS", "TRUNCATED"].map(str::to_owned);
        let [w0, w1, w2, _] = super::column_widths(&header, &rows);
        for r in std::iter::once(&header).chain(&rows) {
            printer.info(&format!(
                "{:<w0$}  {:>w1$}  {:>w2$}  {}",
                r[0], r[1], r[2], r[3]
            ));
        }
    }
    let file_bytes: u64 = loaded.files.iter().map(|f| f.bytes).sum();
    let file_tokens: u64 = loaded.files.iter().map(|f| f.tokens).sum();
    let n = loaded.files.len();
    printer.info(&format!(
        "total: {n} file{}, {file_bytes} bytes, ~{file_tokens} tokens of context; \
         system prompt ~{total_tokens} tokens ({} bytes)",
        if n == 1 { "" } else { "s" },
        prompt.text().len()
    ));
}
