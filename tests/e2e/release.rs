//! Release polish seen by users: `eonyx --version`, `eonyx completions SHELL`
//! and the hidden `eonyx manpage`.
#![allow(clippy::unwrap_used)] // test helpers: a failure to spawn is a test failure

use std::path::Path;
use std::process::{Command, Output};

use crate::util::{Sandbox, stderr, stdout};

/// Run the real binary with data/config/home in a temp dir.
fn eonyx(args: &[&str]) -> Output {
    Sandbox::new().eonyx().args(args).output().unwrap()
}

#[test]
fn version_names_the_release_and_the_commit_it_was_built_from() {
    let out = eonyx(&["--version"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let line = stdout(&out);
    let expected = format!("eonyx {}", env!("CARGO_PKG_VERSION"));
    assert!(line.starts_with(&expected), "{line:?}");
    let rest = line[expected.len()..].trim_end_matches('\n');
    // Built from a checkout: ` (abc1234)`, the short commit of HEAD.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let head = Command::new("git")
        .args(["rev-parse", "--short=7", "HEAD"])
        .current_dir(&root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match head {
        Some(commit) if std::env::var_os("EONYX_BUILD_COMMIT").is_none() => {
            assert_eq!(rest, format!(" ({commit})"), "{line:?}");
        }
        _ => assert!(
            rest.is_empty() || (rest.starts_with(" (") && rest.ends_with(')') && rest.len() > 4),
            "{line:?}"
        ),
    }
    // `-V` is the same.
    assert_eq!(stdout(&eonyx(&["-V"])), line);
}

#[test]
fn completions_are_printed_for_bash_zsh_and_fish() {
    for (shell, marker) in [
        ("bash", "complete -F _eonyx"),
        ("zsh", "#compdef eonyx"),
        ("fish", "complete -c eonyx"),
        ("elvish", "edit:completion:arg-completer[eonyx]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let out = eonyx(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(script.contains(marker), "{shell} script lacks {marker:?}");
        assert!(
            script.contains("sessions"),
            "{shell} script does not complete `sessions`"
        );
        assert!(
            stderr(&out).is_empty(),
            "{shell}: stderr {:?}",
            stderr(&out)
        );
    }
}

#[test]
fn unknown_shell_is_a_usage_error_listing_the_shells() {
    let out = eonyx(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing on stdout");
    insta::assert_snapshot!(stderr(&out));
}

#[test]
fn man_page_is_roff_for_eonyx() {
    let out = eonyx(&["manpage"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let man = stdout(&out);
    assert!(
        man.contains(".TH eonyx 1"),
        "{}",
        &man[..man.len().min(300)]
    );
    assert!(
        man.contains(".SH SUBCOMMANDS") || man.contains(".SH COMMANDS"),
        "lists subcommands"
    );
    // Hidden from help and completions.
    assert!(!stdout(&eonyx(&["--help"])).contains("manpage"));
}
