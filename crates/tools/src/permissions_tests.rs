use eonyx_core::permissions::{PermissionRule, RuleOrigin};

use super::*;

fn rule(list: RuleList, text: &str, rule: Rule) -> PermissionRule {
    PermissionRule {
        list,
        rule,
        text: text.to_owned(),
        file: "/c/config.toml".into(),
        origin: RuleOrigin::Global,
        active: true,
    }
}

fn shell(list: RuleList, text: &str) -> PermissionRule {
    let inner = text
        .strip_prefix("shell(")
        .and_then(|t| t.strip_suffix(')'));
    let shell = match inner {
        None => ShellRule::Any,
        Some(i) => match i.strip_suffix(":*") {
            Some(p) => ShellRule::Prefix(p.to_owned()),
            None => ShellRule::Exact(i.to_owned()),
        },
    };
    rule(list, text, Rule::Shell { shell })
}

fn matcher(rules: Vec<PermissionRule>) -> RuleMatcher {
    RuleMatcher::new(&PermissionRules {
        rules,
        project_root: "/p".into(),
        home: Some("/home/u".into()),
    })
}

use RuleList::{Allow, Ask, Deny};

#[test]
fn a_prefix_allows_its_command_and_nothing_chained_to_it() {
    let m = matcher(vec![shell(Allow, "shell(cargo test:*)")]);
    assert_eq!(m.shell("cargo test"), Verdict::Allow);
    assert_eq!(m.shell("cargo test --all  -q"), Verdict::Allow);
    for line in [
        "cargo testx",
        "cargo",
        "cargo test && touch x",
        "cargo test; touch x",
        "cargo test | sh",
        "cargo test $(touch x)",
        "cargo test `touch x`",
        "cargo test > file",
        "cargo test & touch x",
        "cargo test\ntouch x",
        "(cargo test; touch x)",
        "cargo test 'unbalanced",
        "eval cargo test",
    ] {
        assert_eq!(m.shell(line), Verdict::Unmatched, "{line:?}");
    }
    assert_eq!(m.shell("cargo test 2>&1 > /dev/null"), Verdict::Allow);
}

#[test]
fn every_command_of_a_line_must_be_allowed() {
    let m = matcher(vec![
        shell(Allow, "shell(cargo test:*)"),
        shell(Allow, "shell(git status)"),
    ]);
    assert_eq!(m.shell("git status && cargo test -q"), Verdict::Allow);
    assert_eq!(m.shell("git status -s && cargo test"), Verdict::Unmatched);
}

#[test]
fn exact_rules_match_exactly_and_may_cover_what_a_prefix_cannot() {
    let m = matcher(vec![shell(Allow, "shell(ls > out.txt)")]);
    assert_eq!(m.shell("ls  >  out.txt"), Verdict::Allow);
    assert_eq!(m.shell("ls > out.txt"), Verdict::Allow);
    assert_eq!(m.shell("ls > out2.txt"), Verdict::Unmatched);
    assert_eq!(m.shell("ls"), Verdict::Unmatched);
}

#[test]
fn bare_shell_covers_every_line_it_understands_and_none_it_does_not() {
    let m = matcher(vec![shell(Allow, "shell")]);
    assert_eq!(m.shell("ls && rm -rf x"), Verdict::Allow);
    assert_eq!(m.shell("echo $(date) > out.txt"), Verdict::Allow);
    for line in [
        "npm test \r# ; touch x",
        "git status {$(touch x)}</dev/null",
        "ls \u{200b}; x",
    ] {
        assert_eq!(m.shell(line), Verdict::Unmatched, "{line:?}");
    }
}

#[test]
fn deny_beats_ask_beats_allow_and_looks_everywhere() {
    let m = matcher(vec![
        shell(Allow, "shell"),
        shell(Ask, "shell(git push:*)"),
        shell(Deny, "shell(rm:*)"),
    ]);
    assert_eq!(m.shell("ls"), Verdict::Allow);
    assert!(matches!(m.shell("git push origin"), Verdict::Ask(r) if r.text == "shell(git push:*)"));
    for line in [
        "rm -rf x",
        "ls && rm x",
        "echo $(rm x)",
        "echo `rm x`",
        "sudo -u root rm x",
        "FOO=1 rm x",
        "timeout 5 rm x",
        "sh -c 'rm x'",
        "eval 'rm x'",
        "/bin/rm x",
        "case a in a) rm x;; esac",
        "git push; rm x",
    ] {
        let v = m.shell(line);
        assert!(
            matches!(&v, Verdict::Deny(r) if r.text == "shell(rm:*)"),
            "{line:?}: {v:?}"
        );
    }
    assert_eq!(m.shell("echo rm"), Verdict::Allow);
    assert_eq!(m.shell("rmdir x"), Verdict::Allow);
}

#[test]
fn write_globs_are_relative_to_the_root_and_match_resolved_paths() {
    let m = matcher(vec![
        rule(
            Allow,
            "write(src/**)",
            Rule::Write {
                glob: "src/**".into(),
            },
        ),
        rule(
            Deny,
            "write(src/secret/**)",
            Rule::Write {
                glob: "src/secret/**".into(),
            },
        ),
        rule(
            Allow,
            "read(~/notes/**)",
            Rule::Read {
                glob: "~/notes/**".into(),
            },
        ),
    ]);
    assert_eq!(m.write(Utf8Path::new("/p/src/a/b.rs")), Verdict::Allow);
    assert_eq!(m.write(Utf8Path::new("/p/docs/a.md")), Verdict::Unmatched);
    assert_eq!(
        m.write(Utf8Path::new("/other/src/a.rs")),
        Verdict::Unmatched
    );
    assert!(matches!(
        m.write(Utf8Path::new("/p/src/secret/k")),
        Verdict::Deny(_)
    ));
    assert_eq!(m.read(Utf8Path::new("/home/u/notes/x.md")), Verdict::Allow);
    assert_eq!(m.read(Utf8Path::new("/p/src/a.rs")), Verdict::Unmatched);
    assert_eq!(
        m.write(Utf8Path::new("/home/u/notes/x.md")),
        Verdict::Unmatched
    );
}

#[test]
fn hosts_and_mcp_tools() {
    let m = matcher(vec![
        rule(
            Allow,
            "web_fetch(docs.rs)",
            Rule::WebFetch {
                host: "docs.rs".into(),
            },
        ),
        rule(
            Allow,
            "web_fetch(*.example.com)",
            Rule::WebFetch {
                host: "*.example.com".into(),
            },
        ),
        rule(
            Allow,
            "mcp(files.*)",
            Rule::Mcp {
                server: "files".into(),
                tool: None,
            },
        ),
        rule(
            Deny,
            "mcp(files.delete)",
            Rule::Mcp {
                server: "files".into(),
                tool: Some("delete".into()),
            },
        ),
    ]);
    assert_eq!(m.web_fetch("Docs.rs"), Verdict::Allow);
    assert_eq!(m.web_fetch("docs.rs:443"), Verdict::Allow);
    assert_eq!(m.web_fetch("a.example.com"), Verdict::Allow);
    assert_eq!(m.web_fetch("example.com"), Verdict::Unmatched);
    assert_eq!(m.web_fetch("evil-example.com"), Verdict::Unmatched);
    assert_eq!(m.web_fetch("notdocs.rs"), Verdict::Unmatched);
    assert_eq!(m.mcp("files", "read"), Verdict::Allow);
    assert!(matches!(m.mcp("files", "delete"), Verdict::Deny(_)));
    assert_eq!(m.mcp("other", "read"), Verdict::Unmatched);
}

#[test]
fn inactive_rules_do_not_apply() {
    let mut r = shell(Allow, "shell(ls:*)");
    r.active = false;
    assert_eq!(matcher(vec![r]).shell("ls"), Verdict::Unmatched);
}

#[test]
fn project_rules_are_the_narrowest() {
    assert_eq!(
        project_shell_rule("git status -s").as_deref(),
        Some("shell(git status:*)")
    );
    assert_eq!(project_shell_rule("ls").as_deref(), Some("shell(ls:*)"));
    assert_eq!(project_shell_rule("ls && pwd"), None);
    assert_eq!(project_shell_rule("ls > x"), None);
    assert_eq!(project_shell_rule("echo $(id)"), None);
    assert_eq!(
        project_write_rule("src/a[1].rs").as_deref(),
        Some("write(src/a[[]1[]].rs)")
    );
}

/// The property of the `shell_split` fuzz target, on lines built from
/// shell-significant pieces by a fixed generator (runs in every CI): no
/// panic, and a prefix rule naming the first word of every command never
/// allows a line that did not parse or holds an opaque command.
#[test]
fn generated_lines_never_slip_past_a_prefix_rule() {
    const PIECES: &[&str] = &[
        "ls",
        " ",
        "  ",
        "git",
        "status",
        "&&",
        "&",
        "||",
        "|",
        "|&",
        ";",
        ";;",
        "\n",
        "(",
        ")",
        "{",
        "}",
        "$(",
        "`",
        "'",
        "\"",
        "\\",
        "$",
        "${",
        "}",
        "$((",
        "))",
        "<",
        ">",
        ">>",
        "2>&1",
        "/dev/null",
        "<<",
        "EOF",
        "<<<",
        "eval",
        "if",
        "then",
        "fi",
        "do",
        "done",
        "for",
        "in",
        "case",
        "esac",
        "#",
        "=",
        "x",
        "-c",
        "sh",
        "*",
        "~",
        "$'",
        "<(",
        ">(",
        "\t",
        "é",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..20_000 {
        let len = (next() % 12) as usize;
        let line: String = (0..len)
            .map(|_| PIECES[(next() % PIECES.len() as u64) as usize])
            .collect();
        let parsed = split(&line);
        let rules = parsed
            .commands
            .iter()
            .filter_map(|c| c.words.first())
            .filter(|w| !w.trim().is_empty())
            .map(|w| shell(Allow, &format!("shell({w}:*)")))
            .collect();
        if matcher(rules).shell(&line) == Verdict::Allow {
            assert!(parsed.parsed, "{line:?}");
            assert!(parsed.commands.iter().all(|c| !c.opaque), "{line:?}");
        }
    }
}

/// The repros of the attack probe (issue 55): each ran a command under a
/// rule that should have stopped it.
#[test]
fn hidden_characters_and_fd_words_leave_a_line_uncovered() {
    let m = matcher(vec![
        shell(Allow, "shell(npm test:*)"),
        shell(Allow, "shell(git status)"),
    ]);
    for line in [
        "npm test \r# ; touch x",
        "git status \r# ; touch x",
        "npm test {$(touch x)}>/dev/null",
        "{`touch x`}>/dev/null git status",
        "git status {$(touch x)}</dev/null",
        "npm test\u{1b}[2K",
        "git\nstatus",
    ] {
        assert_eq!(m.shell(line), Verdict::Unmatched, "{line:?}");
    }
    assert_eq!(m.shell("git status"), Verdict::Allow);
    assert_eq!(m.shell("git  'status'"), Verdict::Allow);
}

#[test]
fn deny_and_ask_see_through_hidden_characters_wrappers_and_global_options() {
    let m = matcher(vec![
        shell(Allow, "shell(git:*)"),
        shell(Allow, "shell"),
        shell(Ask, "shell(git push:*)"),
        shell(Deny, "shell(touch:*)"),
    ]);
    for line in [
        "npm test \r# ; touch x",
        "npm test {$(touch x)}>/dev/null",
        "{`touch x`}>/dev/null git status",
        "env sh -c 'touch x'",
        "timeout 5 sh -c 'touch x'",
        "nice sh -c 'touch x'",
        "nohup bash -c 'touch x'",
        "command eval 'touch x'",
        "bash -c -- 'touch x'",
        "xargs -I{} sh -c 'touch x'",
        "stdbuf -o0 /usr/bin/touch x",
    ] {
        assert!(
            matches!(m.shell(line), Verdict::Deny(ref r) if r.text == "shell(touch:*)"),
            "{line:?}"
        );
    }
    for line in [
        "git -C . push",
        "git --no-pager push",
        "git -c push.default=current push",
        "git --git-dir=.git push",
        "git push \r# x",
        "env git -C . push origin",
    ] {
        assert!(
            matches!(m.shell(line), Verdict::Ask(ref r) if r.text == "shell(git push:*)"),
            "{line:?}"
        );
    }
}

#[test]
fn no_prefix_covers_an_option_that_runs_code_or_writes() {
    let m = matcher(
        [
            "npm test",
            "cargo test",
            "git diff",
            "git log",
            "git grep",
            "find .",
            "python3 -c",
            "git",
            "sed",
            "rg",
        ]
        .iter()
        .map(|p| shell(Allow, &format!("shell({p}:*)")))
        .collect(),
    );
    for line in [
        "npm test --node-options=\"--import=data:text/javascript,x\"",
        "cargo test --config \"target.'cfg(all())'.runner=['touch','x']\"",
        "git diff --output=F",
        "git log --output=F",
        "git grep -O'touch x' y",
        "find . -exec touch x ';'",
        "find . -fprint F",
        "python3 -c 'print(1)'",
        "git -c core.pager='touch x' log",
        "sed -i s/a/b/ f",
        "sed 's/a/touch x/e' f",
        "rg --pre 'touch' x",
    ] {
        assert_eq!(m.shell(line), Verdict::Unmatched, "{line:?}");
    }
    assert_eq!(m.shell("find . -name '*.txt'"), Verdict::Allow);
    assert_eq!(m.shell("git log --oneline"), Verdict::Allow);
}

#[test]
fn a_prefix_never_covers_options_put_before_its_words_and_wrappers_are_transparent() {
    let m = matcher(vec![
        shell(Allow, "shell(git status:*)"),
        shell(Allow, "shell(cargo test:*)"),
    ]);
    assert_eq!(m.shell("git -C /tmp status"), Verdict::Unmatched);
    assert_eq!(m.shell("git status -s"), Verdict::Allow);
    assert_eq!(m.shell("timeout 60 cargo test -q"), Verdict::Allow);
    assert_eq!(m.shell("nice -n 5 cargo test"), Verdict::Allow);
    assert_eq!(m.shell("timeout 60 sh -c 'cargo test'"), Verdict::Unmatched);
    assert_eq!(m.shell("sudo cargo test"), Verdict::Unmatched);
    assert_eq!(m.shell("env -S 'cargo test' x"), Verdict::Unmatched);
}

#[test]
fn p_saves_an_exact_rule_for_options_interpreters_and_wrappers() {
    assert_eq!(
        project_shell_rule("python3 -c 'print(1)'").as_deref(),
        Some("shell(python3 -c 'print(1)')")
    );
    assert_eq!(
        project_shell_rule("git -C . status").as_deref(),
        Some("shell(git -C . status)")
    );
    assert_eq!(
        project_shell_rule("timeout 5 cargo test").as_deref(),
        Some("shell(timeout 5 cargo test)")
    );
    assert_eq!(
        project_shell_rule("find . -name '*.txt'").as_deref(),
        Some("shell(find .:*)")
    );
    // The exact rule it saves covers that command, and only it.
    let m = matcher(vec![shell(Allow, "shell(python3 -c 'print(1)')")]);
    assert_eq!(m.shell("python3 -c 'print(1)'"), Verdict::Allow);
    assert_eq!(m.shell("python3 -c \"print(1)\""), Verdict::Allow);
    assert_eq!(m.shell("python3 -c 'print(2)'"), Verdict::Unmatched);
}
