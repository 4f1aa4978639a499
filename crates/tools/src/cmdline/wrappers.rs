//! Programs that run another command (`env`, `timeout`, `nice`…), and the
//! scripts a command hands to a shell (`sh -c SCRIPT`, `eval WORDS`).
//!
//! Two readings, on purpose: deny and ask rules look at every later word
//! as a possible start of the wrapped command ([`views`]) and parse every
//! word after a shell's name as a script ([`scripts`]), so no option
//! syntax hides a command from them; allow rules see through a wrapper
//! only where its options are known exactly ([`wrapped`]).

use super::options::{is_shell, program};

/// Programs that run the command after them (deny and ask see through
/// all of them).
pub const WRAPPERS: &[&str] = &[
    "sudo", "doas", "env", "command", "builtin", "exec", "nohup", "nice", "ionice", "timeout",
    "time", "xargs", "stdbuf", "setsid", "watch", "strace", "unbuffer", "chrt", "taskset", "flock",
    "busybox", "nsenter", "unshare", "chroot", "su", "runuser", "script", "parallel",
];

/// `NAME=value`.
pub fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Where the command of `words` may start, for deny and ask rules: at 0,
/// after each leading assignment, and, behind a wrapper, at every later
/// word (`sudo -u root rm` is also seen as `rm`).
pub fn views(words: &[String]) -> Vec<usize> {
    let mut starts = vec![0];
    let mut i = 0;
    while i < words.len() {
        let word = words[i].as_str();
        if is_assignment(word) {
            i += 1;
            starts.push(i);
        } else if WRAPPERS.contains(&program(word)) {
            starts.extend(i + 1..words.len());
            break;
        } else {
            break;
        }
    }
    starts.retain(|s| *s < words.len());
    starts.dedup();
    starts
}

/// The scripts the command of `words` runs, seen from every view: the
/// words after `eval` joined, and each word after a shell's name (`sh -c
/// SCRIPT`, `bash -c -- SCRIPT`, `sh -xc SCRIPT`: whichever is the script,
/// it is among them). For deny and ask rules only.
pub fn scripts(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for s in views(words) {
        let name = program(&words[s]);
        if name == "eval" && s + 1 < words.len() {
            out.push(words[s + 1..].join(" "));
        } else if is_shell(name) {
            out.extend(
                words[s + 1..]
                    .iter()
                    .filter(|w| !w.starts_with('-') && !w.starts_with('+'))
                    .cloned(),
            );
        }
    }
    out.sort();
    out.dedup();
    out
}

/// How an allow rule sees a wrapper: `None`, `words` does not start with
/// one; `Some(Some(i))`, the wrapped command starts at `i` (its options
/// are known and harmless); `Some(None)`, no allow prefix covers it (an
/// unknown option, `sudo`, `xargs`, a wrapper with nothing to run).
pub fn wrapped(words: &[String]) -> Option<Option<usize>> {
    let first = words.first()?;
    let name = program(first);
    if !WRAPPERS.contains(&name) {
        return None;
    }
    // Options without a value, and options that take the next word.
    let (flags, valued): (&[&str], &[&str]) = match name {
        "env" => (
            &["-i", "--ignore-environment", "-0", "--null", "-v"],
            &["-u", "-C"],
        ),
        "timeout" => (
            &["--preserve-status", "--foreground", "-v", "--verbose"],
            &["-s", "-k", "--signal", "--kill-after"],
        ),
        "nice" => (&[], &["-n", "--adjustment"]),
        "nohup" | "builtin" => (&[], &[]),
        "command" => (&["-p", "-v", "-V"], &[]),
        "exec" => (&["-c", "-l"], &["-a"]),
        "time" => (&["-p", "--portability", "-v", "--verbose"], &[]),
        "stdbuf" => (&[], &["-i", "-o", "-e"]),
        "setsid" => (&["-c", "--ctty", "-f", "--fork", "-w", "--wait"], &[]),
        _ => return Some(None),
    };
    let mut i = 1;
    while let Some(w) = words.get(i) {
        let w = w.as_str();
        if w == "--" {
            i += 1;
            break;
        }
        if !w.starts_with('-') || w == "-" {
            break;
        }
        let long_valued = valued
            .iter()
            .any(|v| v.starts_with("--") && w.starts_with(&format!("{v}=")));
        let short_attached = valued
            .iter()
            .any(|v| v.len() == 2 && w.len() > 2 && w.starts_with(v) && !w.starts_with("--"));
        if flags.contains(&w) || long_valued || short_attached {
            i += 1;
        } else if valued.contains(&w) {
            i += 2;
        } else if name == "nice" && w[1..].chars().all(|c| c.is_ascii_digit()) {
            // `nice -10 cmd`.
            i += 1;
        } else {
            return Some(None);
        }
    }
    if name == "env" {
        while words.get(i).is_some_and(|w| is_assignment(w)) {
            i += 1;
        }
    }
    if name == "timeout" {
        // The duration.
        i += 1;
    }
    Some((i < words.len()).then_some(i))
}
