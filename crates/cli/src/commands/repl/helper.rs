//! What the line editor asks of the REPL: Tab completion (slash commands,
//! session ids, `@` paths), the "N lines" marker, the highlighted
//! `{ctx N%}`, and the keys eonyx binds itself.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use eonyx_store::Store;
use rustyline::completion::{Completer, Pair};
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{
    Cmd, ConditionalEventHandler, Event, EventContext, EventHandler, KeyCode, KeyEvent, Modifiers,
    Movement, RepeatCount,
};

use eonyx_agent::commands::{self, ArgCompletion, Surface};

/// Completion, hints and prompt colour for one editor.
#[derive(Default)]
pub struct ReplHelper {
    /// Where `/resume` finds session ids; none before the agent is open.
    pub store: Option<Store>,
    /// What `@` paths are relative to; none before the agent is open.
    pub cwd: Option<camino::Utf8PathBuf>,
    /// `$HOME`, for `@~/`.
    pub home: Option<String>,
    /// Colour the `{ctx N%}` label of the current prompt.
    pub highlight_ctx: bool,
    /// Completion off (approval questions).
    pub plain: bool,
    /// Set when a summary written ahead became ready during the read: the
    /// prompt's [`WRITING_MARK`] is drawn as [`READY_MARK`] from then on.
    pub summary_ready: Arc<AtomicBool>,
    /// The ready mark has been drawn in this read (until then the next key
    /// asks the editor for a full redraw instead of its fast path).
    pub ready_drawn: AtomicBool,
    /// The text being edited, as of the last redraw (the editor asks for a
    /// hint after every change): a read the REPL ends from outside gives
    /// it back instead of losing it.
    pub line: Arc<Mutex<String>>,
}

/// In `{ctx N% ✓}`: a summary written ahead is ready, the next compaction
/// needs no wait (docs/compaction.md#ahead-of-time-summaries).
pub const READY_MARK: char = '✓';
/// In `{ctx N% …}`: a summary is being written in the background.
pub const WRITING_MARK: char = '…';

/// The prompt with its writing mark shown as ready (same width: one column
/// for one), or `None` when it has no such mark.
pub fn ready_prompt(prompt: &str) -> Option<String> {
    let end = prompt.find('}')?;
    let label = &prompt[..end];
    label.ends_with(WRITING_MARK).then(|| {
        format!(
            "{}{READY_MARK}{}",
            &label[..label.len() - WRITING_MARK.len_utf8()],
            &prompt[end..]
        )
    })
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        if self.plain {
            return Ok((0, Vec::new()));
        }
        let before = &line[..pos];
        if let (Some((start, typed)), Some(cwd)) = (at_word(before), &self.cwd) {
            let found = eonyx_agent::attach::complete(typed, cwd, self.home.as_deref());
            return Ok((start, path_pairs(found)));
        }
        let ids = || {
            self.store
                .as_ref()
                .and_then(|s| s.list().ok())
                .unwrap_or_default()
                .into_iter()
                .map(|s| (s.id.to_string(), s.title))
                .collect()
        };
        Ok(complete(&line[..pos], ids))
    }
}

/// The `@` word the cursor ends: where its `@` is and the path typed after
/// it (an opening `"` dropped). `None` when the word does not start with `@`
/// (an email, `\@`).
pub fn at_word(before: &str) -> Option<(usize, &str)> {
    // An open `@"…` (its path may hold spaces).
    if let Some(q) = before.rfind("@\"")
        && !before[q + 2..].contains('"')
        && before[..q]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace)
    {
        return Some((q, &before[q + 2..]));
    }
    let start = before.rfind(char::is_whitespace).map_or(0, |i| {
        i + before[i..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &before[start..];
    let typed = word.strip_prefix('@')?;
    Some((start, typed.strip_prefix('"').unwrap_or(typed)))
}

/// Completions of an `@` path as the editor inserts them: `@src/` for a
/// directory (Tab again goes on), `@main.rs ` for a file, and `@"…"` for a
/// path with spaces.
pub fn path_pairs(found: Vec<eonyx_agent::attach::Candidate>) -> Vec<Pair> {
    found
        .into_iter()
        .map(|c| {
            let quoted = c.path.contains(char::is_whitespace);
            let replacement = match (quoted, c.is_dir) {
                (false, true) => format!("@{}", c.path),
                (false, false) => format!("@{} ", c.path),
                (true, true) => format!("@\"{}", c.path),
                (true, false) => format!("@\"{}\" ", c.path),
            };
            Pair {
                display: c.name,
                replacement,
            }
        })
        .collect()
}

/// Candidates for the text before the cursor: slash commands while the
/// first word is typed, session ids after `/resume `. `ids` gives
/// `(id, title)` pairs, newest first; it is called only when needed.
pub fn complete(before: &str, ids: impl FnOnce() -> Vec<(String, String)>) -> (usize, Vec<Pair>) {
    if !before.starts_with('/') || before.contains('\n') {
        return (0, Vec::new());
    }
    let Some((name, rest)) = before.split_once(' ') else {
        let pairs = commands::offered(Surface::Repl)
            .filter(|c| c.name.starts_with(before))
            .map(|c| Pair {
                display: c.name.to_owned(),
                replacement: if c.args.is_empty() {
                    c.name.to_owned()
                } else {
                    format!("{} ", c.name)
                },
            })
            .collect();
        return (0, pairs);
    };
    let completion = commands::find(name, Surface::Repl).map(|c| c.completion);
    match completion {
        Some(ArgCompletion::SessionId) if !rest.contains(' ') => {
            let start = before.len() - rest.len();
            let pairs = ids()
                .into_iter()
                .filter(|(id, _)| id.starts_with(rest))
                .map(|(id, title)| Pair {
                    display: format!("{id}  {title}"),
                    replacement: id,
                })
                .collect();
            (start, pairs)
        }
        _ => (0, Vec::new()),
    }
}

/// Shown after the text while it holds more than one line.
pub struct LinesHint(String);

impl rustyline::hint::Hint for LinesHint {
    fn display(&self) -> &str {
        &self.0
    }
    fn completion(&self) -> Option<&str> {
        None
    }
}

impl Hinter for ReplHelper {
    type Hint = LinesHint;

    fn hint(&self, line: &str, _pos: usize, _ctx: &rustyline::Context<'_>) -> Option<LinesHint> {
        if let Ok(mut seen) = self.line.lock()
            && *seen != line
        {
            seen.clear();
            seen.push_str(line);
        }
        lines_marker(line).map(LinesHint)
    }
}

/// `  [N lines]` for a buffer of several lines.
pub fn lines_marker(line: &str) -> Option<String> {
    let n = line.split('\n').count();
    (n > 1).then(|| format!("  [{n} lines]"))
}

impl Highlighter for ReplHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        default: bool,
    ) -> Cow<'b, str> {
        let ready = (default && self.summary_ready.load(Ordering::SeqCst))
            .then(|| ready_prompt(prompt))
            .flatten();
        if ready.is_some() {
            self.ready_drawn.store(true, Ordering::SeqCst);
        }
        let prompt: Cow<'b, str> = match ready {
            Some(p) => Cow::Owned(p),
            None => Cow::Borrowed(prompt),
        };
        // Same width as the plain prompt: only the label is wrapped.
        if self.highlight_ctx
            && default
            && let Some(end) = prompt.find('}')
            && prompt.starts_with("{ctx ")
        {
            let (label, rest) = prompt.split_at(end + 1);
            return Cow::Owned(format!("\x1b[1;33m{label}\x1b[0m{rest}"));
        }
        prompt
    }

    /// Only to redraw the prompt once a summary became ready during the
    /// read (a typed character is otherwise just appended).
    fn highlight_char(&self, _line: &str, _pos: usize, _kind: CmdKind) -> bool {
        self.summary_ready.load(Ordering::SeqCst) && !self.ready_drawn.load(Ordering::SeqCst)
    }
}

impl Validator for ReplHelper {}

impl rustyline::Helper for ReplHelper {}

/// Ctrl-C: clears a non-empty line in place (the editor stays); on an
/// empty line the default applies, which ends the read as interrupted, and
/// the key is recorded in the flag (an interrupted read without it was
/// ended by a signal, not by the user).
struct CtrlC(Arc<AtomicBool>);

impl ConditionalEventHandler for CtrlC {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if ctx.line().is_empty() {
            self.0.store(true, Ordering::SeqCst);
            return None;
        }
        Some(Cmd::Kill(Movement::WholeBuffer))
    }
}

/// Byte offsets of the `\` of each continuation typed during one read.
pub type Continuations = Arc<Mutex<Vec<usize>>>;

/// Enter after a trailing `\` (cursor at the end) continues the input on a
/// new line, as in a shell: the `\` stays on screen and is dropped from
/// the text when it is accepted ([`strip_continuations`]). A `\` at a line
/// end inside pasted text is never touched: only typed ones are recorded.
struct BackslashEnter(Continuations);

impl ConditionalEventHandler for BackslashEnter {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        let line = ctx.line();
        if ctx.pos() == line.len() && line.ends_with('\\') {
            if let Ok(mut c) = self.0.lock() {
                c.push(line.len() - 1);
            }
            return Some(Cmd::Insert(1, "\n".to_owned()));
        }
        None
    }
}

/// Drop the `\` of each recorded continuation that is still followed by
/// its line break (later edits may have moved one; that one stays).
pub fn strip_continuations(line: &str, at: &[usize]) -> String {
    let mut at: Vec<usize> = at.to_vec();
    at.sort_unstable();
    at.dedup();
    let mut out = line.to_owned();
    for &p in at.iter().rev() {
        if out.get(p..).is_some_and(|rest| rest.starts_with("\\\n")) {
            out.remove(p);
        }
    }
    out
}

/// eonyx's own keys on top of the editor's emacs or vi bindings;
/// `ctrl_c` is set when Ctrl-C ends a read.
pub fn bind_keys<H: rustyline::Helper, I: rustyline::history::History>(
    editor: &mut rustyline::Editor<H, I>,
    continuations: Continuations,
    ctrl_c: Arc<AtomicBool>,
) {
    editor.bind_sequence(
        KeyEvent::ctrl('C'),
        EventHandler::Conditional(Box::new(CtrlC(ctrl_c))),
    );
    editor.bind_sequence(
        KeyEvent(KeyCode::Enter, Modifiers::NONE),
        EventHandler::Conditional(Box::new(BackslashEnter(continuations))),
    );
    editor.bind_sequence(
        KeyEvent(KeyCode::Enter, Modifiers::ALT),
        EventHandler::Simple(Cmd::Newline),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(c: (usize, Vec<Pair>)) -> (usize, Vec<String>) {
        (c.0, c.1.into_iter().map(|p| p.replacement).collect())
    }

    #[test]
    fn the_writing_mark_turns_ready_in_the_same_width() {
        assert_eq!(
            ready_prompt("{ctx 72% …} > ").as_deref(),
            Some("{ctx 72% ✓} > ")
        );
        assert_eq!(ready_prompt("{ctx 72%} > "), None);
        assert_eq!(ready_prompt("{ctx 72% ✓} > "), None);
        let h = ReplHelper::default();
        assert_eq!(h.highlight_prompt("{ctx 72% …} > ", true), "{ctx 72% …} > ");
        h.summary_ready.store(true, Ordering::SeqCst);
        // The next key redraws the prompt, once.
        assert!(h.highlight_char("x", 1, CmdKind::Other));
        assert_eq!(h.highlight_prompt("{ctx 72% …} > ", true), "{ctx 72% ✓} > ");
        assert!(!h.highlight_char("x", 1, CmdKind::Other));
        // Not in other prompts (reverse search), nor with no mark.
        assert_eq!(
            h.highlight_prompt("{ctx 72% …} > ", false),
            "{ctx 72% …} > "
        );
        assert_eq!(h.highlight_prompt("{ctx 72%} > ", true), "{ctx 72%} > ");
    }

    #[test]
    fn tab_completes_slash_commands_and_session_ids_after_resume() {
        let none = || -> Vec<(String, String)> { panic!("ids not needed") };
        assert_eq!(
            names(complete("/comp", none)),
            (0, vec!["/compact ".to_owned()])
        );
        assert_eq!(
            names(complete("/s", none)).1,
            ["/summarize", "/sessions", "/skills", "/status"]
        );
        assert!(complete("hello /comp", none).1.is_empty());
        assert!(complete("/compact fo", none).1.is_empty());
        let ids = || {
            vec![
                ("20260101-aaaa".to_owned(), "one".to_owned()),
                ("20260102-bbbb".to_owned(), "two".to_owned()),
            ]
        };
        assert_eq!(
            names(complete("/resume 20260102", ids)),
            (8, vec!["20260102-bbbb".to_owned()])
        );
        assert_eq!(names(complete("/resume ", ids)).1.len(), 2);
    }

    #[test]
    fn tab_after_at_completes_paths_emails_are_left_alone() {
        assert_eq!(at_word("look at @src/ma"), Some((8, "src/ma")));
        assert_eq!(at_word("@"), Some((0, "")));
        assert_eq!(at_word("see @\"my no"), Some((4, "my no")));
        assert_eq!(at_word("mail bob@exa"), None);
        assert_eq!(at_word("\\@lit"), None);
        assert_eq!(at_word("é @x"), Some((3, "x")));
        let dir = tempfile::tempdir().unwrap();
        let cwd = camino::Utf8Path::from_path(dir.path()).unwrap();
        std::fs::create_dir(cwd.join("src")).unwrap();
        std::fs::write(cwd.join("src/main.rs"), "").unwrap();
        std::fs::write(cwd.join("my notes.md"), "").unwrap();
        let h = ReplHelper {
            cwd: Some(cwd.to_path_buf()),
            ..Default::default()
        };
        let history = rustyline::history::MemHistory::new();
        let ctx = rustyline::Context::new(&history);
        let got = |line: &str| {
            let (start, pairs) = h.complete(line, line.len(), &ctx).unwrap();
            (
                start,
                pairs.into_iter().map(|p| p.replacement).collect::<Vec<_>>(),
            )
        };
        assert_eq!(got("read @sr"), (5, vec!["@src/".to_owned()]));
        assert_eq!(got("read @src/"), (5, vec!["@src/main.rs ".to_owned()]));
        assert_eq!(got("@my"), (0, vec!["@\"my notes.md\" ".to_owned()]));
        assert_eq!(got("mail bob@s").1, Vec::<String>::new());
    }

    #[test]
    fn typed_continuations_lose_their_backslash_pasted_ones_keep_it() {
        // "a \" typed + Enter, then a pasted "x \\\ny", then "b".
        let line = "a \\\nx \\\ny\nb";
        assert_eq!(strip_continuations(line, &[2]), "a \nx \\\ny\nb");
        assert_eq!(strip_continuations(line, &[]), line);
        // A recorded offset no longer on a continuation is left alone.
        assert_eq!(strip_continuations("ab\\\n", &[0]), "ab\\\n");
    }

    #[test]
    fn several_lines_are_marked_with_their_count() {
        assert_eq!(lines_marker("one line"), None);
        assert_eq!(lines_marker("a\nb").as_deref(), Some("  [2 lines]"));
        assert_eq!(lines_marker("a\nb\n").as_deref(), Some("  [3 lines]"));
    }

    #[test]
    fn the_ctx_label_is_coloured_without_changing_the_width() {
        let h = ReplHelper {
            highlight_ctx: true,
            ..Default::default()
        };
        let p = h.highlight_prompt("{ctx 85%} > ", true);
        assert_eq!(p, "\x1b[1;33m{ctx 85%}\x1b[0m > ");
        let h = ReplHelper::default();
        assert_eq!(h.highlight_prompt("{ctx 85%} > ", true), "{ctx 85%} > ");
    }
}
