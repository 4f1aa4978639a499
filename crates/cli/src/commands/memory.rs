//! `eonyx memory`: list, add, forget, edit memory (docs/memory.md, section "Using memory"). The files
//! belong to the store crate; this module only parses, dispatches and
//! prints.

use anyhow::Context as _;
use eonyx_agent::commands::text::lists;
use eonyx_config::Config;
use eonyx_config::paths::{self, Env};
use eonyx_core::memory::MemoryScope;
use eonyx_store::memory::{MemoryStore, parse_line};
use serde_json::json;

use super::mining;
use crate::cli::{GlobalArgs, MemoryArgs, MemoryCommand};
use crate::exit::{Status, usage};
use crate::printer::Printer;

pub fn run(
    printer: &mut Printer,
    global: &GlobalArgs,
    args: &MemoryArgs,
) -> anyhow::Result<Status> {
    let super::Setup { cwd, env, config } = super::setup(printer, global)?;
    let project = paths::find_project(&cwd);
    let store = MemoryStore::new(&paths::data_dir(&env)?, &project.root);
    if !config.memory.enabled {
        printer.warn(
            "memory is off (memory.enabled = false): entries are kept but not sent to the model",
        );
    }
    let scope = |global: bool| {
        if global {
            MemoryScope::Global
        } else {
            MemoryScope::Project
        }
    };
    match &args.command {
        None => list(printer, &store),
        Some(MemoryCommand::Add { global, text }) => add(
            printer,
            &store,
            &config,
            &env,
            scope(*global),
            &text.join(" "),
        ),
        Some(MemoryCommand::Forget { ids }) => {
            let ids: Vec<&str> = ids
                .iter()
                .map(|i| i.trim().trim_matches(['[', ']']))
                .collect();
            let removed = store.forget(&ids).map_err(memory_error)?;
            for e in removed {
                printer.info(&format!(
                    "forgot [{}] ({}): {}",
                    e.id.as_deref().unwrap_or_default(),
                    e.scope,
                    e.text
                ));
            }
            Ok(Status::Success)
        }
        Some(MemoryCommand::Edit { global }) => edit(printer, &store, &env, scope(*global)),
        Some(MemoryCommand::Mine { session, all }) => {
            let opts = mining::options(global, cwd, env);
            mining::mine(printer, config, opts, session.as_deref(), *all)
        }
        Some(MemoryCommand::Review { flags }) => {
            let opts = mining::options(global, cwd, env);
            mining::review(printer, &config, &opts, flags)
        }
        Some(MemoryCommand::Path) => {
            let (g, p) = (
                store.path(MemoryScope::Global),
                store.path(MemoryScope::Project),
            );
            if printer.json() {
                printer.json_line(&json!({"dir": store.dir(), "global": g, "project": p}))?;
            } else {
                printer.outln(g.as_str())?;
                printer.outln(p.as_str())?;
            }
            Ok(Status::Success)
        }
    }
}

/// Memory refusals (empty, secret, unknown id) are the user's to fix: exit 2.
fn memory_error(e: eonyx_store::memory::MemoryError) -> anyhow::Error {
    use eonyx_store::memory::MemoryError;
    match e {
        MemoryError::Io { .. } => anyhow::Error::new(e),
        other => usage(other.to_string()),
    }
}

fn list(printer: &mut Printer, store: &MemoryStore) -> anyhow::Result<Status> {
    let entries = lists::newest_last(store.list().map_err(memory_error)?);
    if printer.json() {
        printer.json_array_line(entries.iter().map(|e| EntryJson {
            created: e.created.as_deref(),
            id: e.id.as_deref(),
            scope: e.scope,
            session: e.session.as_deref(),
            text: &e.text,
        }))?;
        return Ok(Status::Success);
    }
    if entries.is_empty() {
        printer.info("no memory entries yet; add one with `eonyx memory add TEXT`");
        return Ok(Status::Success);
    }
    for row in lists::memory_rows(&entries) {
        printer.outln(&row)?;
    }
    Ok(Status::Success)
}

/// A `memory list --json` entry, its fields declared in the alphabetical
/// order its keys are written in ([`Printer::json_array_line`]).
#[derive(serde::Serialize)]
struct EntryJson<'a> {
    created: Option<&'a str>,
    id: Option<&'a str>,
    scope: MemoryScope,
    session: Option<&'a str>,
    text: &'a str,
}

fn add(
    printer: &mut Printer,
    store: &MemoryStore,
    config: &Config,
    env: &Env,
    scope: MemoryScope,
    text: &str,
) -> anyhow::Result<Status> {
    let secrets = eonyx_config::secrets::configured_key_values(config, env);
    let entry = store
        .add(scope, text, "cli", &secrets)
        .map_err(memory_error)?;
    let id = entry.id.as_deref().unwrap_or_default();
    if printer.json() {
        printer.json_line(&json!(entry))?;
    } else {
        printer.info(&format!("remembered [{id}] ({scope}): {}", entry.text));
    }
    Ok(Status::Success)
}

fn edit(
    printer: &mut Printer,
    store: &MemoryStore,
    env: &Env,
    scope: MemoryScope,
) -> anyhow::Result<Status> {
    let editor = env
        .get("VISUAL")
        .or_else(|| env.get("EDITOR"))
        .ok_or_else(|| usage("set $VISUAL or $EDITOR to the editor to use, e.g. EDITOR=vi"))?
        .to_owned();
    let path = store.ensure_file(scope).map_err(memory_error)?;
    // Through the shell, so an editor with arguments (`code -w`) works.
    let status = if cfg!(windows) {
        let mut words = editor.split_whitespace();
        let program = words.next().unwrap_or_default();
        std::process::Command::new(program)
            .args(words)
            .arg(path.as_str())
            .status()
    } else {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{editor} \"$1\""))
            .arg("sh")
            .arg(path.as_str())
            .status()
    }
    .with_context(|| format!("cannot start the editor `{editor}`"))?;
    store.fix_permissions(scope).map_err(memory_error)?;
    if !status.success() {
        anyhow::bail!(
            "the editor `{editor}` exited with {status}; {path} was left as the editor saved it"
        );
    }
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let malformed = text
        .lines()
        .filter_map(|l| parse_line(l, scope))
        .filter(|e| !e.is_well_formed())
        .count();
    if malformed > 0 {
        printer.warn(&format!(
            "{malformed} line(s) of {path} are not entries like `- [id] YYYY-MM-DD session: text`; they are kept and shown as they are"
        ));
    }
    Ok(Status::Success)
}
