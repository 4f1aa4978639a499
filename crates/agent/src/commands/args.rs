//! How a slash command's arguments read (docs/repl.md#slash-commands): a
//! small grammar with shell-like quoting. Words are split on whitespace;
//! `"…"` (with `\"` and `\\`) and `'…'` make one word of what they
//! enclose. A keyword is a bare word, so quoting text makes it text:
//! `/goal pause` pauses the goal, `/goal "pause the deploy"` sets one.
//! Free text that is not one quoted word (`/goal don't break the build`)
//! is taken as written. Every command reads its arguments here; one that
//! does not read is declined with a line naming what and the usage.

use std::borrow::Cow;

use crate::{GoalChange, RewindOptions};

pub const RESUME_USAGE: &str = "usage: /resume ID (see /sessions)";
pub const RENAME_USAGE: &str = "usage: /rename TITLE";
pub const REMEMBER_USAGE: &str = "usage: /remember TEXT";
pub const REWIND_USAGE: &str = "usage: /rewind [N] [--keep-files] (N user turns, default 1)";
pub const MEMORY_USAGE: &str =
    "usage: /memory [review [--accept-all | --accept ID… | --reject ID…]]";
pub const PERMISSIONS_USAGE: &str =
    "usage: /permissions [forget N] (N as /permissions numbers the rules)";
pub const MODEL_USAGE: &str = "usage: /model [KEY] [EFFORT]";
pub const FORK_USAGE: &str =
    "usage: /fork [N] (fork before the last N user turns; default: as it is now)";
pub const JOBS_USAGE: &str = "usage: /jobs, or /jobs stop N";
pub const UNPIN_USAGE: &str = "usage: /unpin N (N as /pins numbers the pins)";

/// One word of the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word<'a> {
    pub text: Cow<'a, str>,
    /// Written in quotes (never a keyword).
    pub quoted: bool,
}

/// `args` split into words; `Err` names what does not read (a quote that
/// is not closed).
pub fn words(args: &str) -> Result<Vec<Word<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = args.trim_start();
    while !rest.is_empty() {
        let (word, after) = match rest.chars().next() {
            Some(q @ ('"' | '\'')) => quoted(rest, q)?,
            _ => {
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                let (bare, after) = rest.split_at(end);
                (
                    Word {
                        text: Cow::Borrowed(bare),
                        quoted: false,
                    },
                    after,
                )
            }
        };
        out.push(word);
        rest = after.trim_start();
    }
    Ok(out)
}

/// The quoted word at the start of `s` (opened by `q`) and what follows.
fn quoted(s: &str, q: char) -> Result<(Word<'_>, &str), String> {
    let body = &s[q.len_utf8()..];
    let mut text = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == q {
            let after = &body[i + c.len_utf8()..];
            if after.starts_with(|c: char| !c.is_whitespace()) {
                return Err(format!(
                    "text right after a closing {q} (put a space between words): {s}"
                ));
            }
            let word = Word {
                text: Cow::Owned(text),
                quoted: true,
            };
            return Ok((word, after));
        }
        if c == '\\' && q == '"' {
            match chars.next() {
                Some((_, e @ ('"' | '\\'))) => text.push(e),
                Some((_, other)) => {
                    text.push('\\');
                    text.push(other);
                }
                None => text.push('\\'),
            }
            continue;
        }
        text.push(c);
    }
    Err(format!("the quote {q} is not closed: {s}"))
}

/// `args` split into words, or the one line a command declines with:
/// what does not read, then its `usage`.
pub fn words_or<'a>(args: &'a str, usage: &str) -> Result<Vec<Word<'a>>, String> {
    words(args).map_err(|why| format!("{why}; {usage}"))
}

/// Free text (`/rename TITLE`, `/remember TEXT`, `/pin TEXT`, `/compact
/// FOCUS`, `/export FILE`, `/goal TEXT`): one quoted word's text, else the
/// arguments as written; `None` when there are none.
pub fn text(args: &str) -> Option<Cow<'_, str>> {
    let args = args.trim();
    if args.is_empty() {
        return None;
    }
    Some(match words(args).as_deref() {
        Ok([w]) if w.quoted => Cow::Owned(w.text.clone().into_owned()),
        _ => Cow::Borrowed(args),
    })
}

/// A positive count (`/rewind N`, `/fork N`, `/jobs stop N`,
/// `/permissions forget N`, `/unpin N`), bare or quoted.
pub fn count<T: std::str::FromStr + PartialOrd + Default>(w: &Word<'_>) -> Option<T> {
    w.text.parse::<T>().ok().filter(|n| *n > T::default())
}

/// Whether `w` is the keyword `k` (bare, never quoted).
pub fn is(w: &Word<'_>, k: &str) -> bool {
    !w.quoted && w.text == k
}

/// One word, the command's only argument (`/resume ID`, `/unpin N`).
fn one(args: &str, usage: &str) -> Result<String, String> {
    match words_or(args, usage)?.as_slice() {
        [w] => Ok(w.text.clone().into_owned()),
        _ => Err(usage.to_owned()),
    }
}

/// `/resume ID`: the id, as typed.
pub fn resume(args: &str) -> Result<String, String> {
    one(args, RESUME_USAGE)
}

/// `/unpin N`: the pin's number, as typed (the pins room reads it).
pub fn unpin(args: &str) -> Result<String, String> {
    one(args, UNPIN_USAGE)
}

/// `/rewind [N] [--keep-files]`: `N` and `--keep-files` in any order.
pub fn rewind(args: &str) -> Result<RewindOptions, String> {
    let mut opts = RewindOptions {
        turns: 1,
        keep_files: false,
    };
    let mut turns = None;
    for word in words_or(args, REWIND_USAGE)? {
        if is(&word, "--keep-files") {
            opts.keep_files = true;
            continue;
        }
        match count(&word) {
            Some(n) if turns.is_none() => turns = Some(n),
            _ => return Err(REWIND_USAGE.to_owned()),
        }
    }
    opts.turns = turns.unwrap_or(1);
    Ok(opts)
}

/// `/fork [N]`: 0 (as it is now) or N.
pub fn fork(args: &str) -> Result<usize, String> {
    match words_or(args, FORK_USAGE)?.as_slice() {
        [] => Ok(0),
        [n] => count(n).ok_or_else(|| FORK_USAGE.to_owned()),
        _ => Err(FORK_USAGE.to_owned()),
    }
}

/// `/jobs [stop N]`: `None` lists the jobs, `Some(N)` stops job N.
pub fn jobs(args: &str) -> Result<Option<u32>, String> {
    match words_or(args, JOBS_USAGE)?.as_slice() {
        [] => Ok(None),
        [stop, n] if is(stop, "stop") => {
            n.text.parse().map(Some).map_err(|_| JOBS_USAGE.to_owned())
        }
        _ => Err(JOBS_USAGE.to_owned()),
    }
}

/// `/permissions [forget N]`: `None` lists the rules, `Some(N)` forgets
/// rule N.
pub fn permissions(args: &str) -> Result<Option<usize>, String> {
    match words_or(args, PERMISSIONS_USAGE)?.as_slice() {
        [] => Ok(None),
        [forget, n] if is(forget, "forget") => n
            .text
            .parse()
            .map(Some)
            .map_err(|_| PERMISSIONS_USAGE.to_owned()),
        _ => Err(PERMISSIONS_USAGE.to_owned()),
    }
}

/// `/memory [review FLAGS…]`: `None` lists the entries, `Some(flags)` is
/// the review with the words after `review` (the review's flags read them).
pub fn memory(args: &str) -> Result<Option<Vec<String>>, String> {
    match words_or(args, MEMORY_USAGE)?.split_first() {
        None => Ok(None),
        Some((review, flags)) if is(review, "review") => Ok(Some(
            flags.iter().map(|w| w.text.clone().into_owned()).collect(),
        )),
        Some(_) => Err(MEMORY_USAGE.to_owned()),
    }
}

/// `/model [KEY] [EFFORT]`: the words (the agent knows the keys).
pub fn model(args: &str) -> Result<Vec<String>, String> {
    Ok(words_or(args, MODEL_USAGE)?
        .into_iter()
        .map(|w| w.text.into_owned())
        .collect())
}

/// What `/goal`'s arguments ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoalArgs<'a> {
    /// Nothing: show the goal.
    Show,
    /// `pause`, `resume` or `clear`, bare.
    Change(GoalChange),
    /// Set this goal: one quoted word's text, else the arguments as
    /// written.
    Set(Cow<'a, str>),
}

/// Read `/goal`'s arguments.
pub fn goal(args: &str) -> GoalArgs<'_> {
    let args = args.trim();
    if args.is_empty() {
        return GoalArgs::Show;
    }
    match words(args).as_deref() {
        Ok([w]) if is(w, "pause") => GoalArgs::Change(GoalChange::Pause),
        Ok([w]) if is(w, "resume") => GoalArgs::Change(GoalChange::Resume),
        Ok([w]) if is(w, "clear") => GoalArgs::Change(GoalChange::Clear),
        _ => GoalArgs::Set(text(args).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(args: &str) -> Vec<(String, bool)> {
        words(args)
            .unwrap()
            .into_iter()
            .map(|w| (w.text.into_owned(), w.quoted))
            .collect()
    }

    #[test]
    fn words_split_on_whitespace_and_quotes_make_one_word() {
        assert_eq!(
            texts(r#"  stop  "a b"  'c "d"' "e \"f\" \\ \n" "#),
            [
                ("stop".to_owned(), false),
                ("a b".to_owned(), true),
                ("c \"d\"".to_owned(), true),
                ("e \"f\" \\ \\n".to_owned(), true),
            ]
        );
        assert_eq!(texts(""), []);
        assert_eq!(texts(r#""""#), [(String::new(), true)]);
    }

    #[test]
    fn an_open_quote_or_text_glued_to_a_closing_one_does_not_read() {
        assert!(
            words(r#""pause the deploy"#)
                .unwrap_err()
                .contains("not closed")
        );
        assert!(words("'a'b").unwrap_err().contains("right after"));
    }

    #[test]
    fn a_bare_keyword_changes_the_goal_and_quoted_text_sets_it() {
        assert_eq!(goal(""), GoalArgs::Show);
        assert_eq!(goal(" pause "), GoalArgs::Change(GoalChange::Pause));
        assert_eq!(goal("resume"), GoalArgs::Change(GoalChange::Resume));
        assert_eq!(goal("clear"), GoalArgs::Change(GoalChange::Clear));
        assert_eq!(
            goal(r#""pause the deploy""#),
            GoalArgs::Set("pause the deploy".into())
        );
        assert_eq!(goal("'pause'"), GoalArgs::Set("pause".into()));
        assert_eq!(
            goal("pause the deploy"),
            GoalArgs::Set("pause the deploy".into())
        );
        // Free text is taken as written, quotes and apostrophes included.
        assert_eq!(
            goal(r#"fix the "login" bug"#),
            GoalArgs::Set(r#"fix the "login" bug"#.into())
        );
        assert_eq!(
            goal("don't break the build"),
            GoalArgs::Set("don't break the build".into())
        );
    }
    #[test]
    fn free_text_is_one_quoted_words_text_or_as_written() {
        assert_eq!(text("  "), None);
        assert_eq!(text(r#""Better title""#).as_deref(), Some("Better title"));
        assert_eq!(text("Better title").as_deref(), Some("Better title"));
        assert_eq!(
            text(r#"the "sky" is blue"#).as_deref(),
            Some(r#"the "sky" is blue"#)
        );
        assert_eq!(text("it's 'open").as_deref(), Some("it's 'open"));
    }

    #[test]
    fn rewind_takes_a_count_and_keep_files_in_any_order() {
        let o = |s| rewind(s).ok();
        let opts = |turns, keep_files| Some(RewindOptions { turns, keep_files });
        assert_eq!(o(""), opts(1, false));
        assert_eq!(o("3"), opts(3, false));
        assert_eq!(o(r#""3""#), opts(3, false));
        assert_eq!(o("--keep-files 2"), opts(2, true));
        assert_eq!(o("2 --keep-files"), opts(2, true));
        for bad in ["0", "-1", "x", "2 3", "--keep", r#""--keep-files""#] {
            assert_eq!(rewind(bad), Err(REWIND_USAGE.to_owned()), "{bad}");
        }
        let open = rewind(r#""2"#).unwrap_err();
        assert!(
            open.contains("not closed") && open.ends_with(REWIND_USAGE),
            "{open}"
        );
        assert!(!open.contains('\n'), "{open}");
    }

    #[test]
    fn fork_takes_nothing_or_a_positive_count() {
        assert_eq!(fork(""), Ok(0));
        assert_eq!(fork(" 2 "), Ok(2));
        assert_eq!(fork("'2'"), Ok(2));
        for bad in ["0", "x", "1 2"] {
            assert_eq!(fork(bad), Err(FORK_USAGE.to_owned()), "{bad}");
        }
        assert!(fork("'2").unwrap_err().ends_with(FORK_USAGE));
    }

    #[test]
    fn jobs_lists_or_stops_one() {
        assert_eq!(jobs(""), Ok(None));
        assert_eq!(jobs("stop 3"), Ok(Some(3)));
        assert_eq!(jobs(r#"stop "3""#), Ok(Some(3)));
        for bad in ["stop", "stop x", "3", "stop 1 2", r#""stop" 3"#, "halt 3"] {
            assert_eq!(jobs(bad), Err(JOBS_USAGE.to_owned()), "{bad}");
        }
        assert!(jobs(r#"stop "3"#).unwrap_err().ends_with(JOBS_USAGE));
    }

    #[test]
    fn permissions_lists_or_forgets_one() {
        assert_eq!(permissions(""), Ok(None));
        assert_eq!(permissions("forget 2"), Ok(Some(2)));
        assert_eq!(permissions("forget '2'"), Ok(Some(2)));
        for bad in ["please", "forget", "forget x", "'forget' 2", "forget 1 2"] {
            assert_eq!(permissions(bad), Err(PERMISSIONS_USAGE.to_owned()), "{bad}");
        }
        assert!(
            permissions("forget '2")
                .unwrap_err()
                .ends_with(PERMISSIONS_USAGE)
        );
    }

    #[test]
    fn memory_lists_or_reviews_with_the_flags_unquoted() {
        assert_eq!(memory(""), Ok(None));
        assert_eq!(memory("review"), Ok(Some(vec![])));
        assert_eq!(
            memory(r#"review --accept "[a1]" b2"#),
            Ok(Some(vec!["--accept".into(), "[a1]".into(), "b2".into()]))
        );
        for bad in ["please", "'review'", "reviews"] {
            assert_eq!(memory(bad), Err(MEMORY_USAGE.to_owned()), "{bad}");
        }
        assert!(
            memory("review --accept 'a1")
                .unwrap_err()
                .ends_with(MEMORY_USAGE)
        );
    }

    #[test]
    fn model_resume_and_unpin_read_their_words_quoted_or_not() {
        assert_eq!(model(""), Ok(vec![]));
        assert_eq!(
            model(r#"fast "high""#),
            Ok(vec!["fast".into(), "high".into()])
        );
        assert!(model(r#"fast "high"#).unwrap_err().ends_with(MODEL_USAGE));
        assert_eq!(
            resume(r#""20260101T000000-abcdef12""#).as_deref(),
            Ok("20260101T000000-abcdef12")
        );
        assert_eq!(resume(""), Err(RESUME_USAGE.to_owned()));
        assert_eq!(resume("a b"), Err(RESUME_USAGE.to_owned()));
        assert_eq!(unpin(" 2 ").as_deref(), Ok("2"));
        assert_eq!(unpin("1 2"), Err(UNPIN_USAGE.to_owned()));
        assert!(unpin("'2").unwrap_err().ends_with(UNPIN_USAGE));
    }
}
