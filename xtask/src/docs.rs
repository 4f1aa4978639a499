//! The README check of `cargo xtask ci`: the commands README documents, the
//! config keys the configuration reference (`docs/config.md`) documents, and
//! README's test command must match the code.
//!
//! Convention (the docs are written to match): README has a section
//! `## Commands` with a table whose first column is a backticked command line
//! (`eonyx sessions delete ID…`), and a section `## Quick start` with the test
//! command (`TEST_COMMAND`, the command ci step `test` runs) alone on a line of
//! a fenced code block; `docs/config.md` has a section `## Configuration
//! reference` with a table whose first column is a backticked dotted key
//! (`models.<key>.base_url`) and whose second column is the default in
//! backticks, or `—` when there is none.
//!
//! Checks, against the freshly built debug binary:
//! - every documented command path exists (`eonyx <words> --help` exits 0),
//!   and every `--flag` written in the row appears in that help;
//! - every subcommand the code offers under a documented command is itself
//!   documented (hidden ones are not listed by clap, so they are exempt);
//! - every config key, set to its documented default (or, with no default, to
//!   the first of a few typed sample values that the loader accepts), is
//!   accepted by `eonyx config` run in temp config/data/home dirs;
//! - README's quick start gives `TEST_COMMAND` verbatim.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

pub const COMMANDS_SECTION: &str = "Commands";
pub const CONFIG_SECTION: &str = "Configuration reference";
pub const QUICK_START_SECTION: &str = "Quick start";
/// The test command README's quick start gives, and ci step `test` runs.
pub const TEST_COMMAND: &[&str] = &["cargo", "test", "--workspace"];

/// Whether `text` (a section) has `command` alone on a line of a fenced code
/// block (a trailing `# comment` allowed).
pub fn has_fenced_command(text: &str, command: &str) -> bool {
    let mut fenced = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let code = t.split_once(" #").map_or(t, |(c, _)| c).trim();
        if fenced && code == command {
            return true;
        }
    }
    false
}

/// One row of the README's command table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandDoc {
    /// As written, for messages.
    pub text: String,
    /// The subcommand path (without `eonyx`).
    pub words: Vec<String>,
    /// Long and short flags written in the row (`--focus`, `-s`).
    pub flags: Vec<String>,
}

/// One row of the configuration reference's table (docs/config.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigDoc {
    pub key: String,
    /// The documented default; `None` for `—`.
    pub default: Option<String>,
}

/// The body of the `## <title>` section (up to the next heading of level 1
/// or 2), or `None` if README has no such section.
pub fn section<'a>(readme: &'a str, title: &str) -> Option<&'a str> {
    let mut start = None;
    let mut offset = 0;
    for line in readme.split_inclusive('\n') {
        let trimmed = line.trim_end();
        let is_top = trimmed.starts_with("# ") || trimmed.starts_with("## ");
        match start {
            None if trimmed.strip_prefix("## ").map(str::trim) == Some(title) => {
                start = Some(offset + line.len());
            }
            Some(s) if is_top => return Some(&readme[s..offset]),
            _ => {}
        }
        offset += line.len();
    }
    start.map(|s| &readme[s..])
}

/// Cells of every body row of the markdown tables in `text` (header and
/// separator rows dropped). Cells split on unescaped `|`.
pub fn table_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut in_table = false;
    let mut header_seen = false;
    for line in text.lines() {
        let line = line.trim();
        if !line.starts_with('|') {
            in_table = false;
            header_seen = false;
            continue;
        }
        let cells = split_cells(line);
        if !in_table {
            // The header row.
            in_table = true;
            continue;
        }
        if !header_seen
            && cells
                .iter()
                .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
        {
            header_seen = true;
            continue;
        }
        rows.push(cells);
    }
    rows
}

fn split_cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cur.push('|');
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cur).trim().to_string()),
            _ => cur.push(c),
        }
    }
    cells.push(cur.trim().to_string());
    cells
}

/// The text of the first code span in a cell (`` `x` `` → `x`).
pub fn code_span(cell: &str) -> Option<&str> {
    let start = cell.find('`')?;
    let rest = &cell[start + 1..];
    let end = rest.find('`')?;
    Some(&rest[..end])
}

/// Parse a command cell: `eonyx sessions delete ID…` → path `sessions delete`.
/// The path ends at the first argument placeholder: an ALLCAPS word, a word
/// starting with `[`, `<`, `-` or `…`.
pub fn parse_command(cell: &str) -> Result<CommandDoc> {
    let Some(text) = code_span(cell) else {
        bail!("command cell `{cell}` has no backticked command");
    };
    let mut tokens = text.split_whitespace();
    if tokens.next() != Some("eonyx") {
        bail!("command `{text}` does not start with `eonyx`");
    }
    let mut words = Vec::new();
    let mut flags = Vec::new();
    let mut in_path = true;
    for tok in tokens {
        let is_placeholder = tok.starts_with(['[', '<', '-', '…', '.', '|'])
            || (tok.chars().any(|c| c.is_ascii_uppercase())
                && !tok.chars().any(|c| c.is_ascii_lowercase()));
        if is_placeholder {
            in_path = false;
        }
        if in_path {
            words.push(tok.to_string());
        }
        let flag = tok.trim_start_matches(['[', '(']);
        if flag.starts_with('-') && flag.len() > 1 && flag != "-" {
            let flag: String = flag
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            if flag.len() > 1 && flag != "--" && !flags.contains(&flag) {
                flags.push(flag);
            }
        }
    }
    Ok(CommandDoc {
        text: text.to_string(),
        words,
        flags,
    })
}

/// Parse a config row: first cell the key, second the default.
pub fn parse_config(cells: &[String]) -> Result<ConfigDoc> {
    let first = cells.first().map(String::as_str).unwrap_or_default();
    let Some(key) = code_span(first) else {
        bail!(
            "config row `{}` has no backticked key in its first column",
            cells.join(" | ")
        );
    };
    let valid_segment = |s: &str| {
        (s.starts_with('<') && s.ends_with('>') && s.len() > 2)
            || (!s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
    };
    if !key.split('.').all(valid_segment) {
        bail!("config key `{key}` is not a dotted key like `compaction.threshold_percent`");
    }
    let default = cells.get(1).and_then(|c| code_span(c)).map(str::to_string);
    Ok(ConfigDoc {
        key: key.to_string(),
        default,
    })
}

/// The key as written into a test config: placeholders (`<key>`, `<name>`)
/// become `m`.
pub fn concrete_key(key: &str) -> String {
    key.split('.')
        .map(|s| if s.starts_with('<') { "m" } else { s })
        .collect::<Vec<_>>()
        .join(".")
}

/// A documented default as a TOML value: as written when it is a TOML value
/// (`80`, `true`, `"local"`, `4.0`, `[]`), else as a TOML string (`ask`).
pub fn toml_value(default: &str) -> String {
    if toml::from_str::<toml::Table>(&format!("v = {default}")).is_ok() {
        default.to_string()
    } else {
        toml::Value::String(default.to_string()).to_string()
    }
}

/// Values tried for a key documented without a default (a URL for keys
/// such as `mcp_servers.<name>.url` that must be one; an effort level for
/// `reasoning_effort`; a thinking budget, at least 1024; a price table; a
/// native-compaction mode).
const SAMPLES: &[&str] = &[
    "\"x\"",
    "1",
    "true",
    "1.5",
    "[]",
    "{}",
    "\"https://example.com/x\"",
    "\"low\"",
    "4096",
    // A price table (`models.<key>.pricing` needs `input` and `output`).
    "{ input = 1.0, output = 2.0 }",
    // A mode (`models.<key>.compaction_native`: `"off"` | `"auto"`).
    "\"auto\"",
];

/// Subcommands listed in a clap `--help` under `Commands:` (without `help`).
pub fn help_subcommands(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_commands = false;
    for line in help.lines() {
        if line.trim_end() == "Commands:" {
            in_commands = true;
            continue;
        }
        if in_commands {
            if line.trim().is_empty() || !line.starts_with(' ') {
                break;
            }
            // Only the entry lines (2-space indent), not wrapped descriptions.
            if line.starts_with("  ")
                && !line.starts_with("   ")
                && let Some(name) = line.split_whitespace().next()
                && name != "help"
            {
                out.push(name.trim_end_matches(',').to_string());
            }
        }
    }
    out
}

/// An isolated place to run the binary: temp config, data, home and cwd.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Result<Self> {
        let dir =
            tempfile::tempdir().context("could not create a temp dir for the README check")?;
        for sub in ["config", "data", "home", "work"] {
            std::fs::create_dir_all(dir.path().join(sub))
                .with_context(|| format!("could not create {sub} in the temp dir"))?;
        }
        Ok(Self { dir })
    }

    fn command(&self, bin: &Path) -> Command {
        let mut cmd = Command::new(bin);
        let p = self.dir.path();
        cmd.current_dir(p.join("work"))
            .env("EONYX_CONFIG_DIR", p.join("config"))
            .env("EONYX_DATA_DIR", p.join("data"))
            .env("HOME", p.join("home"))
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null());
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy();
            let strip =
                (k.starts_with("EONYX_") && k != "EONYX_CONFIG_DIR" && k != "EONYX_DATA_DIR")
                    || k.starts_with("OPENAI_")
                    || k.starts_with("ANTHROPIC_")
                    || k.starts_with("XDG_");
            if strip {
                cmd.env_remove(k.as_ref());
            }
        }
        cmd
    }

    fn write_config(&self, text: &str) -> Result<()> {
        let path = self.dir.path().join("config").join("config.toml");
        std::fs::write(&path, text).with_context(|| format!("could not write {}", path.display()))
    }
}

struct Outcome {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn run_bin(cmd: &mut Command) -> Result<Outcome> {
    let out = cmd
        .output()
        .with_context(|| format!("could not run {:?}", cmd.get_program()))?;
    Ok(Outcome {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

fn first_line(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no output)")
        .trim()
}

/// Run the whole README check. `bin` is the debug `eonyx`; `config_path` the
/// page holding the configuration reference.
pub fn check(readme_path: &Path, config_path: &Path, bin: &Path) -> Result<()> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).with_context(|| {
            format!(
                "could not read {} (it is part of the docs check)",
                path.display()
            )
        })
    };
    let readme = read(readme_path)?;
    let config_doc = read(config_path)?;
    let config_name = config_path.file_name().map_or_else(
        || config_path.display().to_string(),
        |n| format!("docs/{}", n.to_string_lossy()),
    );
    if !bin.exists() {
        bail!(
            "{} does not exist; build it with `cargo build -p eonyx-cli`",
            bin.display()
        );
    }
    let mut problems = Vec::new();
    let test_command = TEST_COMMAND.join(" ");
    match section(&readme, QUICK_START_SECTION) {
        Some(s) if has_fenced_command(s, &test_command) => {}
        Some(_) => problems.push(format!(
            "README `## {QUICK_START_SECTION}` does not give the test command `{test_command}` on a line of its own in a code block"
        )),
        None => problems.push(format!("README has no `## {QUICK_START_SECTION}` section")),
    }
    let commands = match section(&readme, COMMANDS_SECTION) {
        Some(s) => table_rows(s),
        None => {
            problems.push(format!("README has no `## {COMMANDS_SECTION}` section"));
            Vec::new()
        }
    };
    let config = match section(&config_doc, CONFIG_SECTION) {
        Some(s) => table_rows(s),
        None => {
            problems.push(format!(
                "{config_name} has no `## {CONFIG_SECTION}` section"
            ));
            Vec::new()
        }
    };
    let sandbox = Sandbox::new()?;

    // Commands.
    let mut docs = Vec::new();
    for row in &commands {
        match parse_command(row.first().map(String::as_str).unwrap_or_default()) {
            Ok(doc) => docs.push(doc),
            Err(e) => problems.push(format!("README `## {COMMANDS_SECTION}`: {e}")),
        }
    }
    if docs.is_empty() && section(&readme, COMMANDS_SECTION).is_some() {
        problems.push(format!("README `## {COMMANDS_SECTION}` has no table rows"));
    }
    let documented: Vec<&Vec<String>> = docs.iter().map(|d| &d.words).collect();
    let mut checked_paths: Vec<Vec<String>> = Vec::new();
    for doc in &docs {
        let out = run_bin(sandbox.command(bin).args(&doc.words).arg("--help"))?;
        if !out.ok {
            problems.push(format!(
                "README documents `{}` but `eonyx {} --help` fails: {}",
                doc.text,
                doc.words.join(" "),
                first_line(&out.stderr)
            ));
            continue;
        }
        for flag in &doc.flags {
            let found = out
                .stdout
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                .any(|w| w == flag);
            if !found {
                problems.push(format!(
                    "README documents `{}` but `eonyx {} --help` has no `{flag}`",
                    doc.text,
                    doc.words.join(" ")
                ));
            }
        }
        if checked_paths.contains(&doc.words) {
            continue;
        }
        checked_paths.push(doc.words.clone());
        for sub in help_subcommands(&out.stdout) {
            let mut path = doc.words.clone();
            path.push(sub);
            if !documented.contains(&&path) {
                problems.push(format!(
                    "`eonyx {}` exists but README's `## {COMMANDS_SECTION}` table has no row for it",
                    path.join(" ")
                ));
            }
        }
    }

    // Config keys.
    let mut n_keys = 0;
    for row in &config {
        let doc = match parse_config(row) {
            Ok(doc) => doc,
            Err(e) => {
                problems.push(format!("{config_name} `## {CONFIG_SECTION}`: {e}"));
                continue;
            }
        };
        n_keys += 1;
        let key = concrete_key(&doc.key);
        let candidates: Vec<String> = match &doc.default {
            Some(d) => vec![toml_value(d)],
            None => SAMPLES.iter().map(|s| s.to_string()).collect(),
        };
        let mut first_err = None;
        let mut accepted = false;
        for value in &candidates {
            sandbox.write_config(&format!("{key} = {value}\n"))?;
            let out = run_bin(sandbox.command(bin).arg("config"))?;
            if out.ok {
                accepted = true;
                break;
            }
            first_err.get_or_insert(out.stderr);
        }
        if !accepted {
            let tried = match &doc.default {
                Some(d) => format!("its documented default `{d}`"),
                None => format!("any of {}", SAMPLES.join(", ")),
            };
            problems.push(format!(
                "{config_name} documents config key `{}` but `eonyx config` rejects `{key}` set to {tried}: {}",
                doc.key,
                first_line(first_err.as_deref().unwrap_or_default())
            ));
        }
    }
    if n_keys == 0 && section(&config_doc, CONFIG_SECTION).is_some() {
        problems.push(format!(
            "{config_name} `## {CONFIG_SECTION}` has no table rows"
        ));
    }

    if problems.is_empty() {
        eprintln!(
            "README check: {} commands, {n_keys} config keys ({config_name}) and the test command `{test_command}` match the code",
            docs.len()
        );
        return Ok(());
    }
    for p in &problems {
        eprintln!("  - {p}");
    }
    bail!(
        "README or {config_name} and the code disagree in {} place(s) (listed above)",
        problems.len()
    )
}

#[cfg(test)]
mod tests;
