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
use eonyx_agent::commands::text::context;
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
        for line in context::table(&report, env.get("HOME")) {
            printer.info(&line);
        }
        if !report.skills.is_empty() {
            printer.info(&context::skills_line(&report.skills));
        }
        printer.info(&context::memory_line(&report));
        for line in context::kept_lines(&report) {
            printer.info(&line);
        }
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
