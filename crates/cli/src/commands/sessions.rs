//! `eonyx sessions`: list, search, delete, rename, show, export, fork, doctor.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;

use anyhow::Context as _;
use eonyx_core::SessionId;
use eonyx_store::{SessionRow, SessionSummary};
use serde_json::json;

use super::open_store;

mod show;
use crate::cli::{GlobalArgs, SessionsArgs, SessionsCommand};
use crate::exit::Status;
use crate::printer::Printer;

pub fn run(
    printer: &mut Printer,
    global: &GlobalArgs,
    args: &SessionsArgs,
) -> anyhow::Result<Status> {
    let json = global.json;
    match &args.command {
        None => list(
            printer,
            global,
            &ListArgs {
                search: args.search.as_deref(),
                limit: args.limit,
                all: args.all,
            },
        ),
        Some(cmd) => {
            if args.search.is_some() || args.limit.is_some() || args.all {
                return Err(crate::exit::usage(
                    "--search, --limit and --all apply to the listing; put them before no subcommand, e.g. `eonyx sessions --search TEXT`",
                ));
            }
            match cmd {
                SessionsCommand::Delete { ids } => delete(printer, ids),
                SessionsCommand::Rename { id, title } => {
                    let id = SessionId::parse(id)?;
                    open_store()?.rename(&id, title)?;
                    printer.info(&format!("renamed {id} to {:?}", title.trim()));
                    Ok(Status::Success)
                }
                SessionsCommand::Show { id, effective } => {
                    let id = SessionId::parse(id)?;
                    if *effective {
                        show::show_effective(printer, global, &id)
                    } else {
                        show::show(printer, global, &id)
                    }
                }
                SessionsCommand::Export { id, format, output } => {
                    let format = super::export::parse_format(format)?;
                    let id = SessionId::parse(id)?;
                    let store = open_store()?;
                    // The JSONL needs no config; the readable formats take the
                    // chart's window and the cost from it when it loads.
                    let config = match format {
                        eonyx_export::Format::Jsonl => None,
                        _ => super::lenient_config(
                            printer,
                            global,
                            "exported without the window and the cost",
                        ),
                    };
                    let output = output.as_deref().map(camino::Utf8Path::new);
                    // The process ends right after: the records read are
                    // left to its exit rather than freed one by one.
                    super::export::export(
                        printer,
                        &store,
                        config.as_ref(),
                        &id,
                        format,
                        output,
                        eonyx_export::Release::AtExit,
                    )?;
                    Ok(Status::Success)
                }
                SessionsCommand::Fork { id, at } => fork(printer, json, id, *at),
                SessionsCommand::Doctor => super::doctor::doctor(printer, json),
            }
        }
    }
}

/// `YYYY-MM-DD HH:MM` in UTC, or the input when it is not RFC 3339.
fn short_date(ts: &str) -> String {
    eonyx_core::time::parse_rfc3339(ts)
        .map(|t| t.strftime("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|| ts.to_owned())
}

/// One listed session as `--json` shows it, appended to `out`: an object
/// of serde_json's pretty layout inside the array, its keys in
/// alphabetical order, byte for byte what serializing the whole document
/// with sorted keys gave (the e2e test `listing_json` checks it). Written
/// by hand because the listing is most of the command's time: the keys
/// are constants, a number is formatted without `fmt`, and a string that
/// needs no escaping is copied as it is (else serde_json escapes it). At
/// 10,000 sessions this took the JSON from 1.5x to 1.1x of the table's
/// time (`cargo xtask bench`: eonyx_sessions_json_*, docs/cli.md#listing-sessions).
fn push_json_row(out: &mut Vec<u8>, r: &SessionRow<'_>, cost_usd: Option<f64>) {
    out.extend_from_slice(b"{\n    \"children\": ");
    push_u64(out, r.children);
    if let Some(c) = cost_usd {
        out.extend_from_slice(b",\n    \"cost_usd\": ");
        // serde_json's float form (and `null` for a non-finite one).
        let _ = serde_json::to_writer(&mut *out, &c);
    }
    out.extend_from_slice(b",\n    \"created\": ");
    push_json_str(out, &r.created);
    out.extend_from_slice(b",\n    \"cwd\": ");
    push_json_str(out, &r.cwd);
    out.extend_from_slice(b",\n    \"id\": ");
    push_json_str(out, r.id);
    out.extend_from_slice(b",\n    \"last_activity\": ");
    push_json_str(out, &r.last_activity);
    out.extend_from_slice(b",\n    \"message_count\": ");
    push_u64(out, r.message_count);
    out.extend_from_slice(b",\n    \"parent\": ");
    match r.parent {
        Some(p) => push_json_str(out, p),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\n    \"profile\": ");
    match &r.profile {
        Some(p) => push_json_str(out, p),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\n    \"project\": ");
    push_json_str(out, &r.project);
    out.extend_from_slice(b",\n    \"title\": ");
    push_json_str(out, &r.title);
    out.extend_from_slice(b"\n  }");
}

/// `n` in decimal, appended to `out`.
fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// `s` as a JSON string, appended to `out`: as it is when no byte needs
/// escaping (a control character, `"` or a backslash), else as serde_json
/// escapes it.
fn push_json_str(out: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// `YYYY-MM-DD HH:MM` of an RFC 3339 time, appended to `out`: sliced out
/// of the UTC times eonyx writes (`…T…Z`), else through [`short_date`].
fn push_short_date(out: &mut String, ts: &str) {
    let b = ts.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let utc = b.len() >= 20
        && ts.ends_with('Z')
        && (b[4], b[7], b[10], b[13], b[16]) == (b'-', b'-', b'T', b':', b':')
        && digits(0..4)
        && digits(5..7)
        && digits(8..10)
        && digits(11..13)
        && digits(14..16);
    if utc {
        out.push_str(&ts[..10]);
        out.push(' ');
        out.push_str(&ts[11..16]);
    } else {
        out.push_str(&short_date(ts));
    }
}

/// `s` then spaces up to `width` characters.
fn push_padded(out: &mut String, s: &str, width: usize) {
    out.push_str(s);
    for _ in s.chars().count()..width {
        out.push(' ');
    }
}

/// `s` after spaces up to `width` characters.
fn push_right(out: &mut String, s: &str, width: usize) {
    for _ in s.chars().count()..width {
        out.push(' ');
    }
    out.push_str(s);
}

/// What the listing shows.
struct ListArgs<'a> {
    search: Option<&'a str>,
    limit: Option<usize>,
    /// Child sessions too (`--all`).
    all: bool,
}

fn list(printer: &mut Printer, global: &GlobalArgs, what: &ListArgs<'_>) -> anyhow::Result<Status> {
    let json = global.json;
    let store = open_store()?;
    // Costs are shown with `--json` when some model has pricing.
    let costs = match json
        .then(|| super::lenient_config(printer, global, "listed without costs"))
        .flatten()
    {
        Some(config) => super::cost::costs(&store, &config)?,
        None => None,
    };
    let limit = what.limit.unwrap_or(usize::MAX);
    let keep = |r: &SessionRow<'_>| what.all || r.parent.is_none();
    // Rows borrowed from the index text (or from the search's summaries):
    // nothing is allocated per session.
    match what.search {
        Some(text) => {
            let found = store.search(text)?;
            let rows = || {
                found
                    .iter()
                    .map(SessionSummary::row)
                    .filter(keep)
                    .take(limit)
            };
            show_rows(printer, json, costs.as_ref(), true, rows)
        }
        None => {
            let listing = store.listing()?;
            let rows = || listing.rows().filter(keep).take(limit);
            show_rows(printer, json, costs.as_ref(), false, rows)
        }
    }
}

/// The listing as JSON or as the table, through one 64 KB buffer: 10,000
/// sessions list in a few milliseconds (`cargo xtask bench`:
/// eonyx_sessions_*). `rows` gives the rows to show, each time it is called.
fn show_rows<'a, I: Iterator<Item = SessionRow<'a>>>(
    printer: &mut Printer,
    json: bool,
    costs: Option<&HashMap<String, Option<f64>>>,
    searched: bool,
    rows: impl Fn() -> I,
) -> anyhow::Result<Status> {
    if json {
        // serde_json's pretty layout of the array ([`push_json_row`]).
        let mut out = std::io::BufWriter::with_capacity(64 * 1024, printer.stdout_writer());
        let mut item = Vec::with_capacity(512);
        let mut any = false;
        for row in rows() {
            item.clear();
            item.extend_from_slice(if any { b",\n  " } else { b"[\n  " });
            any = true;
            let cost = costs.and_then(|c| c.get(row.id).copied().flatten());
            push_json_row(&mut item, &row, cost);
            out.write_all(&item)?;
        }
        out.write_all(if any { b"\n]\n" } else { b"[]\n" })?;
        out.flush()?;
        return Ok(Status::Success);
    }
    let Some(max) = rows().map(|s| s.message_count).max() else {
        printer.info(if searched {
            "no session matches"
        } else {
            "no sessions yet; run `eonyx` to start one"
        });
        return Ok(Status::Success);
    };
    let digits = |n: u64| n.checked_ilog10().map_or(1, |d| d as usize + 1);
    let w = digits(max).max(4);
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, printer.stdout_writer());
    let mut line = format!(
        "{:<24}  {:<16}  {:>w$}  {:>5}  TITLE\n",
        "ID", "DATE", "MSGS", "TASKS"
    );
    let mut number = String::new();
    for s in rows() {
        out.write_all(line.as_bytes())?;
        line.clear();
        push_padded(&mut line, s.id, 24);
        line.push_str("  ");
        let at = line.len();
        push_short_date(&mut line, &s.last_activity);
        let shown = line[at..].chars().count();
        for _ in shown..16 {
            line.push(' ');
        }
        line.push_str("  ");
        number.clear();
        let _ = write!(number, "{}", s.message_count);
        push_right(&mut line, &number, w);
        line.push_str("  ");
        number.clear();
        let _ = write!(number, "{}", s.children);
        push_right(&mut line, &number, 5);
        line.push_str("  ");
        line.push_str(&s.title);
        if let (Some(p), Some(_)) = (&s.profile, s.parent) {
            let _ = write!(line, " (task, {p})");
        }
        line.push('\n');
    }
    out.write_all(line.as_bytes())?;
    out.flush()?;
    Ok(Status::Success)
}

/// `sessions fork ID [--at SEQ]`: the new session's id on stdout (its
/// summary as JSON with `--json`).
fn fork(printer: &mut Printer, json: bool, id: &str, at: Option<u64>) -> anyhow::Result<Status> {
    let id = SessionId::parse(id)?;
    let f = open_store()?.fork(&id, at)?;
    if json {
        printer.json_pretty(&json!({
            "id": f.id,
            "title": f.title,
            "forked_from": {"id": id, "seq": f.seq},
        }))?;
    } else {
        printer.outln(f.id.as_str())?;
    }
    printer.info(&format!(
        "forked {id} as of #{} into session {} ({}); continue it with `eonyx -s {}`",
        f.seq, f.title, f.id, f.id
    ));
    Ok(Status::Success)
}

/// Delete the sessions named, each with the child sessions of its tasks
/// (the store deletes them; they are named on stderr as they go).
fn delete(printer: &mut Printer, ids: &[String]) -> anyhow::Result<Status> {
    // Validate every id before touching anything.
    let ids = ids
        .iter()
        .map(|s| SessionId::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let store = open_store()?;
    for id in &ids {
        if !store.session_path(id).exists() {
            return Err(eonyx_store::StoreError::NotFound { id: id.clone() })
                .context("nothing was deleted");
        }
    }
    let mut deleted: Vec<SessionId> = Vec::new();
    for id in &ids {
        if deleted.contains(id) {
            continue;
        }
        let below = store.delete_with(id, |child| {
            printer.info(&format!(
                "deleted {} \"{}\" (a task of {id})",
                child.id, child.title
            ));
            deleted.push(child.id.clone());
        })?;
        printer.info(&match below.len() {
            0 => format!("deleted {id}"),
            n => format!("deleted {id} and its {n} task session(s)"),
        });
        deleted.push(id.clone());
    }
    Ok(Status::Success)
}
