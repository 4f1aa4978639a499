//! `read_file`: a text file with line numbers, optionally a window of lines.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};

use eonyx_core::ToolName;
use serde::Deserialize;
use serde_json::Value;

use super::{
    CallEnv, CancellationToken, Count, ToolError, ToolOutput, blocking, looks_binary, metadata,
    parse_args, resolve_approved,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    offset: Option<Count>,
    limit: Option<Count>,
}

/// Bytes looked at to decide whether a file is binary.
const SNIFF_BYTES: usize = 8 * 1024;

pub(super) async fn run(args: &Value, env: CallEnv<'_>) -> Result<ToolOutput, ToolError> {
    let args: Args = parse_args(ToolName::ReadFile, args)?;
    let offset = args.offset.map_or(1, Count::get);
    if offset == 0 {
        return Err(ToolError::bad_args(
            ToolName::ReadFile,
            "offset is 1-based; use offset=1 for the first line",
        ));
    }
    let limit = args.limit.map(Count::get);
    if limit == Some(0) {
        return Err(ToolError::bad_args(
            ToolName::ReadFile,
            "limit must be at least 1",
        ));
    }
    let resolved = resolve_approved(ToolName::ReadFile, &args.path, env).await?;
    let window = Window {
        offset,
        limit,
        max_bytes: env.ctx.max_read_bytes.max(1),
    };
    let cancel = env.cancel.clone();
    let path = resolved.path.clone();
    let out = match env.ctx.files.clone() {
        // The client's text of a file that exists (an unsaved buffer
        // counts); the disk tells what is missing or a directory.
        Some(files) if path.is_file() => {
            let shown = resolved.display();
            let text = files.read_text(&path).await.map_err(|e| {
                ToolError::io("cannot read", shown.clone(), std::io::Error::other(e))
            })?;
            let len = text.len() as u64;
            let source = std::io::Cursor::new(text.into_bytes());
            read_from(source, len, &shown, window, &cancel)?
        }
        _ => {
            blocking(env.cancel, move || {
                read(&resolved.path, &resolved.display(), window, &cancel)
            })
            .await?
        }
    };
    if !out.is_error {
        // What the model has seen, for the stale-edit warning.
        env.ctx.seen.record(&path);
    }
    Ok(out)
}

/// Which lines a call shows: from line `offset` (1-based), at most `limit`
/// lines and `max_bytes` bytes.
#[derive(Clone, Copy)]
struct Window {
    offset: u64,
    limit: Option<u64>,
    max_bytes: u64,
}

fn read(
    path: &camino::Utf8Path,
    shown: &str,
    window: Window,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let meta = metadata(
        path,
        shown,
        "cannot read",
        "no such file; check the path with list_dir",
    )?;
    if meta.is_dir() {
        return Err(ToolError::Usage(format!(
            "{shown} is a directory; use list_dir to see its entries"
        )));
    }
    let file = File::open(path).map_err(|e| ToolError::io("cannot open", shown, e))?;
    read_from(file, meta.len(), shown, window, cancel)
}

/// [`read`]'s work on any source of `len` bytes (a file, or the text an
/// ACP client sent).
fn read_from(
    source: impl Read,
    len: u64,
    shown: &str,
    window: Window,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let Window {
        offset,
        limit,
        max_bytes,
    } = window;
    let mut reader = BufReader::with_capacity(64 * 1024, source);

    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut reader)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| ToolError::io("cannot read", shown, e))?;
    if looks_binary(&head) {
        return Ok(ToolOutput::error(format!(
            "{shown} is a binary file ({} bytes); read_file shows text files only",
            len
        )));
    }
    let mut reader = BufReader::new(std::io::Cursor::new(head).chain(reader));

    let width = line_number_width(offset, limit);
    let io_err = |e| ToolError::io("cannot read", shown, e);
    let mut number = 0u64;
    while number + 1 < offset {
        if number.is_multiple_of(4096) && cancel.is_cancelled() {
            return Err(ToolError::Interrupted);
        }
        if !skip_line(&mut reader).map_err(io_err)? {
            break;
        }
        number += 1;
    }

    let mut out = String::new();
    let mut line = Vec::new();
    let mut bytes_shown = 0u64;
    let mut shown_lines = 0u64;
    let mut stop_note = None;
    loop {
        if shown_lines.is_multiple_of(4096) && cancel.is_cancelled() {
            return Err(ToolError::Interrupted);
        }
        let more = !reader.fill_buf().map_err(io_err)?.is_empty();
        if !more {
            break;
        }
        if limit.is_some_and(|l| shown_lines >= l) {
            stop_note = Some(format!(
                "[more lines follow; continue with offset={}]",
                number + 1
            ));
            break;
        }
        if bytes_shown >= max_bytes {
            stop_note = Some(read_limit_note(max_bytes, shown, len, number + 1));
            break;
        }
        // Never hold more than the guard in memory, even for one huge line.
        line.clear();
        let n = (&mut reader)
            .take(max_bytes - bytes_shown)
            .read_until(b'\n', &mut line)
            .map_err(io_err)?;
        bytes_shown += n as u64;
        if line.last() != Some(&b'\n') && !reader.fill_buf().map_err(io_err)?.is_empty() {
            if shown_lines > 0 {
                // The next call starts with this line.
                stop_note = Some(read_limit_note(max_bytes, shown, len, number + 1));
                break;
            }
            // A single line longer than the limit: show its start, move on.
            // (Cut at the byte limit while reading, not `ellipsize`d: the
            // line is never held whole.)
            skip_line(&mut reader).map_err(io_err)?;
            number += 1;
            let text = String::from_utf8_lossy(&line);
            let _ = writeln!(out, "{number:>width$}\t{text}…");
            stop_note = Some(format!(
                "[line {number} is longer than the read limit of {max_bytes} bytes and was cut; continue with offset={}]",
                number + 1
            ));
            shown_lines += 1;
            break;
        }
        number += 1;
        let text = String::from_utf8_lossy(&line);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let _ = writeln!(out, "{number:>width$}\t{text}");
        shown_lines += 1;
    }

    if shown_lines == 0 && stop_note.is_none() {
        if number == 0 {
            return Ok(ToolOutput::ok(format!("{shown} is empty")));
        }
        return Err(ToolError::Usage(format!(
            "offset {offset} is past the end of {shown}, which has {number} lines"
        )));
    }
    if let Some(note) = stop_note {
        out.push_str(&note);
        out.push('\n');
    }
    Ok(ToolOutput::ok(out))
}

fn read_limit_note(max_bytes: u64, shown: &str, len: u64, next: u64) -> String {
    format!(
        "[stopped after {max_bytes} bytes, the read limit; {shown} is {len} bytes. Continue with offset={next}]"
    )
}

/// Consumes one line without keeping it; false at the end of the file.
fn skip_line(reader: &mut impl BufRead) -> std::io::Result<bool> {
    let mut seen = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(seen);
        }
        seen = true;
        if let Some(i) = buf.iter().position(|&b| b == b'\n') {
            reader.consume(i + 1);
            return Ok(true);
        }
        let len = buf.len();
        reader.consume(len);
    }
}

/// Width of the line-number column, so numbers line up in one call.
fn line_number_width(offset: u64, limit: Option<u64>) -> usize {
    let last = limit.map_or(offset.saturating_add(9999), |l| offset.saturating_add(l));
    last.to_string().len().max(4)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::*;
    use super::super::*;

    /// Calls `read_file` with `args`.
    async fn read(f: &Fixture, args: serde_json::Value) -> ToolOutput {
        f.run("read_file", args).await
    }

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[tokio::test]
    async fn whole_file_with_line_numbers() {
        let f = Fixture::new();
        f.write("a.txt", "alpha\r\nbeta\ngamma");
        let out = read(&f, json!({"path": "a.txt"})).await;
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(out.text, "    1\talpha\n    2\tbeta\n    3\tgamma\n");
    }

    #[tokio::test]
    async fn offset_and_limit_select_a_window_and_say_how_to_continue() {
        let f = Fixture::new();
        f.write("n.txt", numbered(10));
        let out = read(&f, json!({"path": "n.txt", "offset": 3, "limit": 2})).await;
        assert_eq!(
            out.text,
            "   3\tline 3\n   4\tline 4\n[more lines follow; continue with offset=5]\n"
        );
        // Numbers given as strings (some models do that) work too.
        let out = read(&f, json!({"path": "n.txt", "offset": "9", "limit": "5"})).await;
        assert_eq!(out.text, "   9\tline 9\n  10\tline 10\n");
    }

    #[tokio::test]
    async fn bad_windows_are_explained() {
        let f = Fixture::new();
        f.write("n.txt", numbered(3));
        let out = read(&f, json!({"path": "n.txt", "offset": 7})).await;
        assert!(out.is_error);
        assert_eq!(
            out.text,
            "offset 7 is past the end of n.txt, which has 3 lines"
        );
        let out = read(&f, json!({"path": "n.txt", "offset": 0})).await;
        assert!(out.is_error);
        assert!(out.text.contains("offset is 1-based"));
        let out = read(&f, json!({"path": "n.txt", "limit": -2})).await;
        assert!(out.is_error);
        assert!(
            out.text.starts_with("invalid arguments for read_file"),
            "{}",
            out.text
        );
    }

    #[tokio::test]
    async fn binary_files_are_refused_with_a_note() {
        let f = Fixture::new();
        f.write("img.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
        let out = read(&f, json!({"path": "img.png"})).await;
        assert!(out.is_error);
        assert_eq!(
            out.text,
            "img.png is a binary file (16 bytes); read_file shows text files only"
        );
    }

    #[tokio::test]
    async fn missing_files_directories_and_empty_files() {
        let f = Fixture::new();
        f.write("dir/x", "");
        let out = read(&f, json!({"path": "nope.rs"})).await;
        assert!(out.is_error);
        assert_eq!(
            out.text,
            "nope.rs: no such file; check the path with list_dir"
        );
        let out = read(&f, json!({"path": "dir"})).await;
        assert!(out.is_error);
        assert!(out.text.contains("is a directory; use list_dir"));
        let out = read(&f, json!({"path": "dir/x"})).await;
        assert!(!out.is_error);
        assert_eq!(out.text, "dir/x is empty");
    }

    #[tokio::test]
    async fn huge_files_stop_at_the_read_limit_with_a_note() {
        let mut f = Fixture::new();
        f.ctx.max_read_bytes = 100;
        f.write("big.txt", numbered(1000));
        let out = read(&f, json!({"path": "big.txt"})).await;
        assert!(!out.is_error);
        let lines: Vec<_> = out.text.lines().collect();
        // 7-8 bytes per line: about 13 lines fit in 100 bytes.
        assert!(lines.len() < 20, "{}", out.text);
        let note = lines.last().unwrap();
        assert!(
            note.starts_with("[stopped after 100 bytes, the read limit"),
            "{note}"
        );
        let next: u64 = note
            .rsplit('=')
            .next()
            .unwrap()
            .trim_end_matches(']')
            .parse()
            .unwrap();
        assert_eq!(
            lines[lines.len() - 2],
            format!("{:>5}\tline {}", next - 1, next - 1)
        );
        // One giant line is not held in memory either.
        f.write("one.txt", format!("{}\nnext\n", "x".repeat(10_000)));
        let out = read(&f, json!({"path": "one.txt"})).await;
        assert!(out.text.len() < 300, "{}", out.text.len());
        assert!(
            out.text
                .starts_with(&format!("    1\t{}…\n", "x".repeat(100))),
            "{}",
            out.text
        );
        assert!(
            out.text.ends_with("and was cut; continue with offset=2]\n"),
            "{}",
            out.text
        );
        let out = read(&f, json!({"path": "one.txt", "offset": 2})).await;
        assert_eq!(out.text, "    2\tnext\n");
    }

    #[tokio::test]
    async fn invalid_utf8_is_shown_lossily() {
        let f = Fixture::new();
        f.write("latin1.txt", b"caf\xe9\n");
        let out = read(&f, json!({"path": "latin1.txt"})).await;
        assert_eq!(out.text, "    1\tcaf\u{fffd}\n");
    }

    #[tokio::test]
    async fn outside_paths_need_approval() {
        let f = Fixture::new();
        std::fs::write(f.outside().join("secret.txt"), "s3cret\n").unwrap();
        let rec = Recorder::new(Decision::Deny);
        let out = f
            .run_with("read_file", json!({"path": "../secret.txt"}), &rec)
            .await;
        assert!(out.is_error);
        assert!(out.text.starts_with("denied: "), "{}", out.text);
        assert!(out.text.contains("outside the project root"));
        assert!(!out.text.contains("s3cret"));
        let real = f.outside().canonicalize_utf8().unwrap();
        assert_eq!(
            rec.asked(),
            vec![ApprovalKind::OutsideProject {
                tool: ToolName::ReadFile,
                path: real.join("secret.txt"),
            }]
        );
        let rec = Recorder::new(Decision::Allow);
        let out = f
            .run_with("read_file", json!({"path": "../secret.txt"}), &rec)
            .await;
        assert!(!out.is_error);
        assert!(out.text.contains("s3cret"));
        // Inside the project, nobody is asked.
        f.write("in.txt", "x");
        let rec = Recorder::new(Decision::Deny);
        let out = f
            .run_with("read_file", json!({"path": "in.txt"}), &rec)
            .await;
        assert!(!out.is_error);
        assert!(rec.asked().is_empty());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn symlink_escapes_need_approval() {
        let f = Fixture::new();
        std::fs::write(f.outside().join("secret.txt"), "s3cret\n").unwrap();
        std::os::unix::fs::symlink(f.outside().join("secret.txt"), f.root().join("link")).unwrap();
        let out = f
            .run_with("read_file", json!({"path": "link"}), &DenyAll)
            .await;
        assert!(out.is_error);
        assert!(out.text.starts_with("denied: "));
        assert!(!out.text.contains("s3cret"));
    }
}
