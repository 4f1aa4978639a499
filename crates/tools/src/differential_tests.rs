use super::*;

/// Pieces of the shell language the generator strings together: words,
/// quotes, operators, substitutions, redirections, control characters.
const PIECES: &[&str] = &[
    "ok",
    "ok",
    "ok",
    "ok",
    " ",
    " ",
    " ",
    "x",
    "touch",
    "evil",
    "'ok'",
    "\"ok\"",
    "o\\k",
    "'x y'",
    "\"$x\"",
    "$x",
    "${x}",
    "${x:-touch}",
    "~",
    "-c",
    "sh",
    "bash",
    "eval",
    "env",
    "timeout 1",
    "nice",
    "command",
    "exec",
    "xargs",
    "git",
    ";",
    "&&",
    "||",
    "|",
    "|&",
    "&",
    "\n",
    "(",
    ")",
    "{",
    "}",
    "{ ",
    " }",
    "$(",
    "`",
    "'",
    "\"",
    "\\",
    "<",
    ">",
    ">>",
    "&>",
    "&>>",
    "2>&1",
    ">&2",
    "/dev/null",
    "<<<",
    "<<EOF",
    "EOF",
    "{x}",
    "{$(touch y)}",
    "\r",
    "\t",
    "#",
    "=",
    "x=1",
    "$((1))",
    "<(",
    ">(",
    "$'\\x74ouch'",
    "*",
    "?",
    "[a]",
    "!",
    "if",
    "then",
    "fi",
    "for",
    "in",
    "do",
    "done",
    "case",
    "esac",
    "\u{1b}",
    "\u{a0}",
    "t${x}ouch",
    "-e",
    "--",
    "f()",
    "\\\n",
];

/// A line of `len` pieces, mostly starting with `ok ` so many are allowed.
fn line(next: &mut impl FnMut() -> u64, len: usize) -> String {
    let mut s = String::new();
    if !next().is_multiple_of(4) {
        s.push_str("ok ");
    }
    for _ in 0..len {
        s.push_str(PIECES[(next() % PIECES.len() as u64) as usize]);
        if !next().is_multiple_of(3) {
            s.push(' ');
        }
    }
    s
}

/// The property of the `shell_differential` fuzz target on generated
/// lines (a few thousand here; `EONYX_DIFFERENTIAL_LINES` raises it,
/// `EONYX_DIFFERENTIAL_SEED` changes them):
/// whatever the rules allow under `shell(ok:*)` runs only `ok` and writes
/// nothing, in `sh` and in `bash`.
#[test]
fn what_ok_allows_runs_only_ok_in_sh_and_bash() {
    let lines: usize = std::env::var("EONYX_DIFFERENTIAL_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let matcher = ok_matcher();
    let stubs = Stubs::new().unwrap();
    let mut state: u64 = std::env::var("EONYX_DIFFERENTIAL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|s| *s != 0)
        .unwrap_or(0x9e37_79b9_7f4a_7c15);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut allowed = 0;
    for _ in 0..lines {
        let len = (next() % 6) as usize;
        let l = line(&mut next, len);
        if let Some(d) = check_line(&matcher, &stubs, &l) {
            panic!("{d}");
        }
        if allowed_under_ok(&matcher, &l, Dialect::Bash) {
            allowed += 1;
        }
    }
    // The check means something only when many lines are allowed.
    assert!(allowed * 10 >= lines, "only {allowed} of {lines} allowed");
}

#[test]
fn the_stubs_see_what_slips_through() {
    let stubs = Stubs::new().unwrap();
    let sh = find_shell("sh").unwrap();
    assert_eq!(stubs.disagreement(&sh, "ok a b"), None);
    assert!(
        stubs
            .disagreement(&sh, "ok; touch y")
            .unwrap()
            .contains("touch")
    );
    assert!(
        stubs
            .disagreement(&sh, "ok > made")
            .unwrap()
            .contains("made")
    );
}
