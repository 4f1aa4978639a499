//! `eonyx mcp` (docs/mcp.md#eonyx-mcp): start the configured MCP servers
//! as a session would, then list each one's state, its tools and the
//! tokens they add to every request (stdout; `--json` for scripts), and
//! stop them. Servers that could not start are warned about on stderr.

use eonyx_agent::mcp::{McpReport, inspect};
use serde_json::json;

use crate::cli::{GlobalArgs, McpArgs};
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(printer: &mut Printer, global: &GlobalArgs, _args: &McpArgs) -> anyhow::Result<Status> {
    let super::Setup { env, config, .. } = super::setup(printer, global)?;
    if config.mcp.servers.is_empty() {
        if printer.json() {
            printer.json_pretty(&json!({
                "servers": [],
                "deferred": false,
                "tokens": 0,
            }))?;
        } else {
            printer.info(NONE);
        }
        return Ok(Status::Success);
    }
    let mut warnings = Vec::new();
    let window = eonyx_agent::limits::cached_window(&config, &env, &mut warnings);
    let report = super::runtime()?.block_on(inspect(&config, &env, window));
    for w in warnings.iter().chain(&report.warnings) {
        printer.warn(w);
    }
    if printer.json() {
        printer.json_pretty(&report_json(&report))?;
    } else {
        for line in table(&report) {
            printer.outln(&line)?;
        }
        printer.info(&summary_line(&report));
    }
    Ok(Status::Success)
}

const NONE: &str =
    "no MCP servers configured; add one as [mcp_servers.NAME] in config.toml (see docs/mcp.md)";

/// The servers table, then each ready server's tools.
fn table(report: &McpReport) -> Vec<String> {
    let cat = &report.catalog;
    let rows: Vec<[String; 5]> = report
        .servers
        .iter()
        .map(|s| {
            let mut tools = s.tools.to_string();
            if s.hidden > 0 {
                tools.push_str(&format!(" (+{} off)", s.hidden));
            }
            [
                s.name.clone(),
                s.transport.to_owned(),
                s.state.label().to_owned(),
                tools,
                cat.server_tokens(&s.name).to_string(),
            ]
        })
        .collect();
    let header = ["SERVER", "TRANSPORT", "STATE", "TOOLS", "TOKENS"].map(str::to_owned);
    let [w0, w1, w2, w3, _] = super::column_widths(&header, &rows);
    let mut out: Vec<String> = std::iter::once(&header)
        .chain(&rows)
        .map(|r| {
            format!(
                "{:<w0$}  {:<w1$}  {:<w2$}  {:>w3$}  {}",
                r[0], r[1], r[2], r[3], r[4]
            )
        })
        .collect();
    for s in &report.servers {
        let entries: Vec<_> = cat
            .entries()
            .iter()
            .filter(|e| e.server == s.name)
            .collect();
        if entries.is_empty() {
            continue;
        }
        out.push(String::new());
        out.push(format!("{}:", s.name));
        let width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
        for e in entries {
            let first = e.description.lines().next().unwrap_or("").trim();
            out.push(
                format!(
                    "  {:<width$}  {:>5}  {}",
                    e.name,
                    e.tokens,
                    eonyx_core::text::ellipsize(first, 100)
                )
                .trim_end()
                .to_owned(),
            );
        }
    }
    out
}

/// What MCP adds to every request, and whether the schemas are deferred.
pub(crate) fn summary_line(report: &McpReport) -> String {
    eonyx_agent::commands::text::context::catalog_line(&report.catalog)
}

fn report_json(report: &McpReport) -> serde_json::Value {
    let cat = &report.catalog;
    let servers: Vec<_> = report
        .servers
        .iter()
        .map(|s| {
            let tools: Vec<_> = cat
                .entries()
                .iter()
                .filter(|e| e.server == s.name)
                .map(|e| {
                    json!({
                        "name": e.name,
                        "tool": e.tool,
                        "description": e.description,
                        "tokens": e.tokens,
                    })
                })
                .collect();
            json!({
                "name": s.name,
                "transport": s.transport,
                "state": s.state.label(),
                "reason": s.state.reason(),
                "required": s.required,
                "tools": tools,
                "tools_off": s.hidden,
                "tokens": cat.server_tokens(&s.name),
            })
        })
        .collect();
    json!({
        "servers": servers,
        "deferred": cat.deferred(),
        "defer_above_tokens": cat.limit(),
        "schema_tokens": cat.schema_tokens(),
        "tokens": cat.tokens(),
    })
}
