//! How a slash command's arguments read (docs/repl.md#slash-commands): a
//! small grammar with shell-like quoting. Words are split on whitespace;
//! `"…"` (with `\"` and `\\`) and `'…'` make one word of what they
//! enclose. A keyword is a bare word, so quoting text makes it text:
//! `/goal pause` pauses the goal, `/goal "pause the deploy"` sets one.
//! Free text that is not one quoted word (`/goal don't break the build`)
//! is taken as written.

use std::borrow::Cow;

use crate::GoalChange;

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
        Ok([w]) if !w.quoted => match w.text.as_ref() {
            "pause" => GoalArgs::Change(GoalChange::Pause),
            "resume" => GoalArgs::Change(GoalChange::Resume),
            "clear" => GoalArgs::Change(GoalChange::Clear),
            _ => GoalArgs::Set(Cow::Borrowed(args)),
        },
        Ok([w]) => GoalArgs::Set(w.text.clone().into_owned().into()),
        _ => GoalArgs::Set(Cow::Borrowed(args)),
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
}
