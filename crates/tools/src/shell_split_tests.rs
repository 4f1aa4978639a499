use super::*;

fn texts(line: &str) -> Vec<String> {
    let s = split(line);
    assert!(s.parsed, "{line:?} did not parse: {s:?}");
    s.commands.into_iter().map(|c| c.text).collect()
}

fn opaque(line: &str) -> Vec<bool> {
    split(line).commands.into_iter().map(|c| c.opaque).collect()
}

#[test]
fn a_line_splits_on_every_separator() {
    assert_eq!(
        texts("a 1 && b 2 || c; d | e |& f & g\nh"),
        ["a 1", "b 2", "c", "d", "e", "f", "g", "h"]
    );
    assert_eq!(
        texts("(cd x && make) ; { ls; pwd; }"),
        ["cd x", "make", "ls", "pwd"]
    );
    assert_eq!(
        texts("if git diff --quiet; then cargo test; fi"),
        ["git diff --quiet", "cargo test"]
    );
}

#[test]
fn quotes_are_removed_and_keep_separators_inside() {
    let s = split("echo 'a && b' \"c; d\" e\\;f");
    assert!(s.parsed);
    assert_eq!(s.commands.len(), 1);
    assert_eq!(s.commands[0].words, ["echo", "a && b", "c; d", "e;f"]);
    assert!(!s.commands[0].opaque);
    assert_eq!(split("'git' status").commands[0].words, ["git", "status"]);
}

#[test]
fn substitutions_redirections_and_eval_are_opaque() {
    for line in [
        "echo $(touch x)",
        "echo `touch x`",
        "echo \"$(touch x)\"",
        "ls > out.txt",
        "ls >> out.txt",
        "ls 2> err.txt",
        "ls &> out.txt",
        "cat <<EOF",
        "cat <<< hi",
        "eval ls",
        "echo ${x:-$(id)}",
        "echo $((1+2))",
        "echo $'a\\nb'",
        "for f in a b",
    ] {
        assert_eq!(opaque(line).first(), Some(&true), "{line}");
    }
    for line in [
        "ls > /dev/null",
        "ls 2>&1",
        "ls >&2",
        "ls &> /dev/null",
        "ls 2>/dev/null",
        "echo $HOME ${HOME}",
        "grep x < in.txt",
    ] {
        assert_eq!(opaque(line), [false], "{line}");
    }
}

#[test]
fn nested_commands_are_listed() {
    let s = split("echo $(rm -rf x) `rm y`; eval 'rm z'; sh -c 'rm w'");
    let nested: Vec<_> = s.nested.iter().map(|c| c.words.join(" ")).collect();
    assert!(nested.contains(&"rm -rf x".to_owned()), "{nested:?}");
    assert!(nested.contains(&"rm y".to_owned()), "{nested:?}");
    assert!(nested.contains(&"rm z".to_owned()), "{nested:?}");
    assert!(nested.contains(&"rm w".to_owned()), "{nested:?}");
}

#[test]
fn what_is_not_understood_is_unparsed() {
    for line in [
        "echo 'open",
        "echo \"open",
        "(ls",
        "ls)",
        "{ ls",
        "f() { ls; }",
        "a=(1 2)",
        "case x in a) ls;; esac",
        "echo $(ls",
        "echo `ls",
        "ls >",
        "diff <(ls a) <(ls b)",
        "if true; then ls",
        "ls \\",
    ] {
        assert!(!split(line).parsed, "{line:?} parsed");
    }
}

#[test]
fn deep_nesting_neither_panics_nor_parses() {
    let line = "$(".repeat(10_000);
    assert!(!split(&line).parsed);
    let line = format!("{}x{}", "$(".repeat(40), ")".repeat(40));
    assert!(!split(&line).parsed);
}

#[test]
fn comments_and_continuations() {
    assert_eq!(texts("ls # ; rm -rf /"), ["ls"]);
    assert_eq!(
        split("cargo \\\n test").commands[0].words,
        ["cargo", "test"]
    );
    assert_eq!(split("a#b").commands[0].words, ["a#b"]);
}
