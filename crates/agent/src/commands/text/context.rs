//! What `eonyx context` and `/context` say about the prompt on stderr: the
//! context files, the skills, memory and kept lines, MCP's catalog.

use eonyx_prompt::Skills;

use crate::{Agent, PromptReport};

/// One row per file, then the total. Absolute paths under `home` are
/// shown as `~/…`.
pub fn table(report: &PromptReport, home: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    if report.files.is_empty() {
        out.push("no context files (AGENTS.md, *.context.md) found".to_owned());
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
                    super::tilde(&f.display, home),
                    f.bytes.to_string(),
                    f.tokens.to_string(),
                    truncated,
                ]
            })
            .collect();
        let header = ["FILE", "BYTES", "TOKENS", "TRUNCATED"].map(str::to_owned);
        let [w0, w1, w2, _] = super::column_widths(&header, &rows);
        for r in std::iter::once(&header).chain(&rows) {
            out.push(format!(
                "{:<w0$}  {:>w1$}  {:>w2$}  {}",
                r[0], r[1], r[2], r[3]
            ));
        }
    }
    let file_bytes: u64 = report.files.iter().map(|f| f.bytes).sum();
    let file_tokens: u64 = report.files.iter().map(|f| f.tokens).sum();
    let n = report.files.len();
    out.push(format!(
        "total: {n} file{}, {file_bytes} bytes, ~{file_tokens} tokens of context; \
         system prompt ~{} tokens ({} bytes)",
        if n == 1 { "" } else { "s" },
        report.prompt_tokens,
        report.prompt.text().len()
    ));
    out
}

/// The `# Skills` section's size and how many skills it lists.
pub fn skills_line(skills: &Skills) -> String {
    let total = skills.skills.len();
    let mut s = format!(
        "skills: {} listed in the # Skills section, {} bytes, ~{} tokens",
        skills.listed,
        skills.section.len(),
        eonyx_core::tokens::estimate_text(
            &skills.section,
            eonyx_core::tokens::DEFAULT_CHARS_PER_TOKEN
        )
    );
    if skills.listed < total {
        s.push_str(&format!(
            "; {} more not listed (skills.max_listed_bytes)",
            total - skills.listed
        ));
    }
    s
}

/// The memory section's size, like a context file's.
pub fn memory_line(report: &PromptReport) -> String {
    let memory = &report.memory;
    if memory.text.is_empty() {
        return "memory: no entries".to_owned();
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
    line
}

/// What the compaction in force keeps verbatim for the user
/// (docs/compaction.md#what-the-user-said), and the pins in force; none
/// when there is neither.
pub fn kept_lines(report: &PromptReport) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(u) = &report.user_words {
        out.push(format!(
            "what the user said: {} message(s) kept verbatim after the summary, {} left out (`recall` returns them), ~{} tokens",
            u.kept, u.left_out, report.user_words_tokens
        ));
    }
    if !report.pins.is_empty() {
        out.push(format!("pins: {}", super::pins(&report.pins)));
    }
    out
}

/// What the MCP tools cost every request.
pub fn catalog_line(cat: &crate::mcp::Catalog) -> String {
    let n = cat.entries().len();
    if cat.deferred() {
        format!(
            "MCP: {n} tools, ~{} tokens of schemas, past mcp.defer_above_tokens ({}): deferred, so every request carries ~{} tokens (the # MCP tools listing, mcp_describe and mcp_call)",
            cat.schema_tokens(),
            cat.limit(),
            cat.tokens()
        )
    } else {
        format!(
            "MCP: {n} tools, ~{} tokens in every request (schemas are deferred past mcp.defer_above_tokens = {})",
            cat.tokens(),
            cat.limit()
        )
    }
}

/// `/context`: the table, the skills, memory and MCP lines, then the
/// context estimate.
pub fn lines(agent: &Agent, home: Option<&str>) -> Vec<String> {
    let report = agent.prompt_report();
    let mut out = table(&report, home);
    if !report.skills.is_empty() {
        out.push(skills_line(&report.skills));
    }
    out.push(memory_line(&report));
    out.extend(kept_lines(&report));
    if !agent.mcp().catalog().is_empty() {
        out.push(catalog_line(agent.mcp().catalog()));
    }
    let ahead = match (agent.trigger().ahead, agent.context_status().summary_ready) {
        (_, true) => "; a summary written ahead is ready".to_owned(),
        (Some(a), false) => format!("; summaries written ahead from ~{a} tokens"),
        (None, false) => String::new(),
    };
    out.push(format!("{}{ahead}", super::context_estimate(agent)));
    if let Some(s) = agent.summary() {
        out.push(format!("summary: {} characters", s.chars().count()));
    }
    out
}
