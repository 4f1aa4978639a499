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

use eonyx_agent::PromptReport;
use eonyx_core::SessionId;

use crate::cli::{ContextArgs, GlobalArgs};
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(
    printer: &mut Printer,
    global: &GlobalArgs,
    args: &ContextArgs,
) -> anyhow::Result<Status> {
    let super::Setup { cwd, env, config } = super::setup(printer, global)?;
    let session = args.session.as_deref().map(SessionId::parse).transpose()?;
    let report = super::runtime()?.block_on(eonyx_agent::context_report(
        &config,
        &env,
        &cwd,
        session.as_ref(),
    ))?;
    if let Some(w) = &report.memory_warning {
        printer.warn(w);
    }

    if printer.json() {
        let mut report_json = json_report(&report);
        report_json["skills"] = super::skills::section_json(&report.skills);
        printer.json_line(&report_json)?;
    } else {
        printer.out(&report.prompt.text())?;
        if printer.stdout_is_terminal() {
            printer.out("\n")?;
        }
        printer.flush()?;
        print_table(printer, &report, env.get("HOME"));
        if !report.skills.is_empty() {
            printer.info(&super::skills::section_line(&report.skills));
        }
        print_memory_line(printer, &report);
        print_kept_lines(printer, &report);
        printer.info(&tools_line(&report));
    }
    for w in report.mcp.iter().flat_map(|r| &r.warnings) {
        printer.warn(w);
    }
    for w in &report.warnings {
        printer.warn(w);
    }
    Ok(Status::Success)
}

/// `tools: …; fixed request size ~N tokens` for stderr.
fn tools_line(report: &PromptReport) -> String {
    let t = &report.tools;
    let mut s = format!(
        "tools: {} built-in, ~{} tokens",
        t.builtin, t.builtin_tokens
    );
    if t.mcp > 0 {
        s.push_str(&format!(
            "; {} MCP from {} server{}, ~{} tokens{}",
            t.mcp,
            t.mcp_servers,
            if t.mcp_servers == 1 { "" } else { "s" },
            t.mcp_tokens,
            if t.mcp_deferred {
                " (schemas deferred: mcp_describe and mcp_call, listed under # MCP tools)"
            } else {
                ""
            }
        ));
    }
    s.push_str(&format!(
        "; fixed request size ~{} tokens (system prompt and tool definitions)",
        report.fixed_tokens()
    ));
    s
}

/// The memory section's size on stderr, like a context file's. Also used
/// by the REPL's `/context`.
pub(crate) fn print_memory_line(printer: &Printer, report: &PromptReport) {
    let memory = &report.memory;
    if memory.text.is_empty() {
        printer.info("memory: no entries");
        return;
    }
    let mut line = format!(
        "memory: {} entr{}, {} bytes, ~{} tokens",
        memory.shown,
        if memory.shown == 1 { "y" } else { "ies" },
        memory.text.len(),
        report.memory_tokens
    );
    if memory.omitted > 0 {
        line.push_str(&format!(
            "; {} older left out (memory.max_bytes); `eonyx memory` lists all",
            memory.omitted
        ));
    }
    printer.info(&line);
}

/// What the compaction in force keeps verbatim for the user
/// (docs/compaction.md#what-the-user-said), and the pins in force, on
/// stderr; nothing when there is neither.
fn print_kept_lines(printer: &Printer, report: &PromptReport) {
    if let Some(u) = &report.user_words {
        printer.info(&format!(
            "what the user said: {} message(s) kept verbatim after the summary, {} left out (`recall` returns them), ~{} tokens",
            u.kept, u.left_out, report.user_words_tokens
        ));
    }
    if !report.pins.is_empty() {
        let pins: Vec<String> = report
            .pins
            .iter()
            .map(|p| format!("{}. {}", p.id, eonyx_core::text::ellipsize(&p.text, 60)))
            .collect();
        printer.info(&format!("pins: {}", pins.join(" · ")));
    }
}

fn json_report(report: &PromptReport) -> serde_json::Value {
    let files: Vec<serde_json::Value> = report
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
    let (memory, tools) = (&report.memory, &report.tools);
    serde_json::json!({
        "files": files,
        "stable_prefix": report.prompt.stable,
        "suffix": report.prompt.suffix,
        "total_tokens": report.prompt_tokens,
        "memory": {
            "bytes": memory.text.len(),
            "tokens": report.memory_tokens,
            "entries": memory.shown,
            "omitted": memory.omitted,
        },
        "tools": {
            "builtin": tools.builtin,
            "builtin_tokens": tools.builtin_tokens,
            "mcp": tools.mcp,
            "mcp_servers": tools.mcp_servers,
            "mcp_tokens": tools.mcp_tokens,
            "mcp_deferred": tools.mcp_deferred,
        },
        "fixed_tokens": report.fixed_tokens(),
        "user_words": report.user_words.as_ref().map(|u| serde_json::json!({
            "kept": u.kept,
            "left_out": u.left_out,
            "tokens": report.user_words_tokens,
        })),
        "pins": report.pins,
    })
}

/// One row per file, then the total, on stderr. Absolute paths under
/// `home` are shown as `~/…`. Also used by the REPL's `/context`.
pub(crate) fn print_table(printer: &Printer, report: &PromptReport, home: Option<&str>) {
    let tilde = |display: &str| super::tilde(display, home);
    if report.files.is_empty() {
        printer.info("no context files (AGENTS.md, *.context.md) found");
    } else {
        let rows: Vec<[String; 4]> = report
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
    let file_bytes: u64 = report.files.iter().map(|f| f.bytes).sum();
    let file_tokens: u64 = report.files.iter().map(|f| f.tokens).sum();
    let n = report.files.len();
    printer.info(&format!(
        "total: {n} file{}, {file_bytes} bytes, ~{file_tokens} tokens of context; \
         system prompt ~{} tokens ({} bytes)",
        if n == 1 { "" } else { "s" },
        report.prompt_tokens,
        report.prompt.text().len()
    ));
}

/// `/context` in the REPL and batch runs: the table, the skills, memory
/// and MCP lines, then the context estimate.
pub fn print_for_repl(printer: &Printer, agent: &eonyx_agent::Agent) {
    let report = agent.prompt_report();
    print_table(printer, &report, std::env::var("HOME").ok().as_deref());
    if !report.skills.is_empty() {
        printer.info(&super::skills::section_line(&report.skills));
    }
    print_memory_line(printer, &report);
    print_kept_lines(printer, &report);
    if !agent.mcp().catalog().is_empty() {
        printer.info(&super::mcp::catalog_line(agent.mcp().catalog()));
    }
    let ahead = match (agent.trigger().ahead, agent.context_status().summary_ready) {
        (_, true) => "; a summary written ahead is ready".to_owned(),
        (Some(a), false) => format!("; summaries written ahead from ~{a} tokens"),
        (None, false) => String::new(),
    };
    printer.info(&format!(
        "{}{ahead}",
        eonyx_agent::commands::text::context_estimate(agent)
    ));
    if let Some(s) = agent.summary() {
        printer.info(&format!("summary: {} characters", s.chars().count()));
    }
}
