//! What a program's options mean to the permission rules: its global
//! options (skipped by deny and ask rules, so `git -C . push` is `git
//! push`), and the options that run code or write files (never covered by
//! an allow prefix, whatever the prefix).

/// A program's name without its directory (`/usr/bin/git` is `git`).
pub fn program(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Shells: `-c` runs a script.
pub fn is_shell(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash"
            | "dash"
            | "zsh"
            | "ksh"
            | "mksh"
            | "ash"
            | "posh"
            | "yash"
            | "fish"
            | "csh"
            | "tcsh"
    )
}

/// Interpreters: their options or first argument run code.
pub fn is_interpreter(name: &str) -> bool {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    matches!(
        base,
        "python"
            | "pypy"
            | "node"
            | "nodejs"
            | "deno"
            | "bun"
            | "perl"
            | "ruby"
            | "irb"
            | "php"
            | "lua"
            | "luajit"
            | "Rscript"
            | "R"
            | "julia"
            | "tclsh"
            | "wish"
            | "guile"
            | "racket"
            | "osascript"
            | "pwsh"
            | "awk"
            | "gawk"
            | "mawk"
            | "nawk"
    ) || is_shell(name)
}

/// Global options that take the next word as their value, per program
/// (what deny and ask rules skip: `git -C DIR push` is `git push`). Any
/// other word starting with `-` before the subcommand is skipped alone.
fn global_valued(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "git" => &[
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--super-prefix",
            "--config-env",
            "--exec-path",
        ],
        "cargo" => &["-Z", "-C", "--config", "--color"],
        "npm" | "pnpm" | "yarn" => &[
            "-C",
            "--prefix",
            "-w",
            "--workspace",
            "--loglevel",
            "--dir",
            "--cwd",
        ],
        "docker" | "podman" => &["-H", "--host", "-c", "--context", "--config", "-l"],
        "kubectl" => &[
            "-n",
            "--namespace",
            "--context",
            "--kubeconfig",
            "-s",
            "--server",
        ],
        _ => return None,
    })
}

/// `words` with the program's global options left out (`git -C . push`
/// is `git push`; `cargo +nightly test` is `cargo test`); `None` when the
/// program has no table or no global option is there.
pub fn without_global_options(words: &[String]) -> Option<Vec<String>> {
    let first = words.first()?;
    let valued = global_valued(program(first))?;
    let mut i = 1;
    while let Some(w) = words.get(i) {
        if w == "--" {
            i += 1;
            break;
        }
        if w.starts_with('+') && program(first) == "cargo" {
            i += 1;
        } else if valued.contains(&w.as_str()) {
            i += 2;
        } else if w.starts_with('-') && w.len() > 1 {
            i += 1;
        } else {
            break;
        }
    }
    (i > 1).then(|| {
        std::iter::once(first.clone())
            .chain(words.iter().skip(i).cloned())
            .collect()
    })
}

/// The option of `words` (a simple command, program first) that runs code
/// or writes a file, if any: such a command is never covered by an allow
/// prefix. Exact rules may still name it.
pub fn dangerous_option(words: &[String]) -> Option<String> {
    let name = program(words.first()?);
    let args = &words[1..];
    let hit = |w: &String| Some(w.clone());
    match name {
        "git" => args.iter().find_map(|w| {
            let danger = [
                "--output",
                "--open-files-in-pager",
                "--exec-path",
                "--upload-pack",
            ]
            .iter()
            .chain(&["--receive-pack", "--exec", "--extcmd", "--config-env"])
            .any(|o| w == o || w.starts_with(&format!("{o}=")))
                || w == "-c"
                || w.starts_with("-O")
                || w.starts_with("-c") && !w.starts_with("--");
            if danger { hit(w) } else { None }
        }),
        "find" => args.iter().find_map(|w| {
            let danger = matches!(
                w.as_str(),
                "-exec" | "-execdir" | "-ok" | "-okdir" | "-fls" | "-delete"
            ) || w.starts_with("-fprint");
            if danger { hit(w) } else { None }
        }),
        "cargo" => args
            .iter()
            .find(|w| *w == "--config" || w.starts_with("--config="))
            .cloned(),
        "npm" | "pnpm" | "yarn" | "npx" => args
            .iter()
            .find(|w| {
                ["--node-options", "--script-shell"]
                    .iter()
                    .any(|o| *w == o || w.starts_with(&format!("{o}=")))
            })
            .cloned(),
        "rg" => args
            .iter()
            .find(|w| *w == "--pre" || w.starts_with("--pre="))
            .cloned(),
        "sed" | "gsed" => sed_danger(args),
        _ if name.contains("awk") && is_interpreter(name) => awk_danger(args),
        _ if is_interpreter(name) => interpreter_danger(name, args),
        _ => None,
    }
}

/// An interpreter's option that runs code given on the command line
/// (`python3 -c`, `node -e`, `perl -ne`, `bash -c`).
fn interpreter_danger(name: &str, args: &[String]) -> Option<String> {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let letters: &[char] = match base {
        "python" | "pypy" => &['c'],
        "perl" => &['e', 'E', 'i', 'M', 'm'],
        "ruby" | "irb" => &['e', 'i', 'r'],
        "php" => &['r', 'B', 'R', 'E', 'F'],
        "lua" | "luajit" => &['e', 'l'],
        "node" | "nodejs" | "bun" | "deno" => &['e', 'p', 'r'],
        "Rscript" | "R" => &['e'],
        "julia" => &['e', 'E'],
        _ => &['c', 'e'],
    };
    let long = [
        "--eval",
        "--print",
        "--require",
        "--import",
        "--loader",
        "--experimental-loader",
        "--command",
        "--expression",
    ];
    args.iter()
        .find(|w| {
            if w.starts_with("--") {
                long.iter()
                    .any(|o| *w == o || w.starts_with(&format!("{o}=")))
            } else if let Some(cluster) = w.strip_prefix('-') {
                cluster.chars().any(|c| letters.contains(&c))
            } else {
                false
            }
        })
        .cloned()
}

/// awk's program is code: `system(…)`, `| "cmd"`, `> "file"` and `-f`
/// files run or write; any of them (or an unreadable program) is
/// dangerous.
fn awk_danger(args: &[String]) -> Option<String> {
    args.iter()
        .find(|w| {
            w.starts_with("-f")
                || w.starts_with("--file")
                || w.starts_with("-i")
                || w.starts_with("--include")
                || w.starts_with("-l")
                || w.starts_with("--load")
                || w.contains("system")
                || w.contains('|')
                || w.contains('>')
                || w.contains("getline")
                || w.contains("@")
        })
        .cloned()
}

/// sed's `-i` (writes files), `-f` (a script not on the line), and the
/// `e` (runs), `w`/`W` (write) commands and `s///e`, `s///w` flags.
fn sed_danger(args: &[String]) -> Option<String> {
    let mut scripts: Vec<&String> = Vec::new();
    let mut first_plain: Option<&String> = None;
    let mut i = 0;
    while let Some(w) = args.get(i) {
        i += 1;
        if w == "--" {
            if first_plain.is_none() {
                first_plain = args.get(i);
            }
            break;
        }
        if let Some(long) = w.strip_prefix("--") {
            if long.starts_with("in-place") || long.starts_with("file") {
                return Some(w.clone());
            }
            if long.starts_with("expression=") {
                scripts.push(w);
            } else if long == "expression" {
                scripts.extend(args.get(i));
                i += 1;
            } else if long.starts_with("line-length") && !long.contains('=') {
                i += 1;
            }
            continue;
        }
        if let Some(cluster) = w.strip_prefix('-').filter(|c| !c.is_empty()) {
            for (at, c) in cluster.char_indices() {
                match c {
                    'i' | 'f' => return Some(w.clone()),
                    'e' | 'l' => {
                        let rest = &cluster[at + 1..];
                        if c == 'e' {
                            if rest.is_empty() {
                                scripts.extend(args.get(i));
                            } else {
                                // `-es/a/b/`: the rest is the script.
                                return (!sed_script_safe(rest)).then(|| w.clone());
                            }
                        }
                        if rest.is_empty() {
                            i += 1;
                        }
                        break;
                    }
                    _ => {}
                }
            }
            continue;
        }
        if first_plain.is_none() {
            first_plain = Some(w);
        }
    }
    if scripts.is_empty() {
        scripts.extend(first_plain);
    }
    scripts
        .into_iter()
        .find(|s| {
            let s = s.strip_prefix("--expression=").unwrap_or(s);
            !sed_script_safe(s)
        })
        .cloned()
}

/// Whether a sed script only reads: every command is one of a known safe
/// set, `s` flags without `e`/`w`. Anything unrecognised is not safe.
fn sed_script_safe(script: &str) -> bool {
    let c: Vec<char> = script.chars().collect();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while c.get(*i).is_some_and(|x| x.is_whitespace() || *x == ';') {
            *i += 1;
        }
    };
    // Reads a delimited part starting after the delimiter `d`.
    let delimited = |i: &mut usize, d: char| -> bool {
        while let Some(&x) = c.get(*i) {
            *i += 1;
            if x == '\\' {
                *i += 1;
            } else if x == d {
                return true;
            } else if x == '\n' {
                return false;
            }
        }
        false
    };
    loop {
        skip_ws(&mut i);
        let Some(&x) = c.get(i) else { return true };
        // Addresses: numbers, `$`, `/re/`, `\cREc`, `,`, `~`, `!`, `+`.
        if x.is_ascii_digit() || matches!(x, '$' | ',' | '~' | '!' | '+') {
            i += 1;
            continue;
        }
        if x == '/' {
            i += 1;
            if !delimited(&mut i, '/') {
                return false;
            }
            while matches!(c.get(i), Some('I' | 'M')) {
                i += 1;
            }
            continue;
        }
        if x == '\\' {
            let Some(&d) = c.get(i + 1) else { return false };
            i += 2;
            if !delimited(&mut i, d) {
                return false;
            }
            continue;
        }
        i += 1;
        match x {
            's' | 'y' => {
                let Some(&d) = c.get(i) else { return false };
                if d == '\\' || d == '\n' {
                    return false;
                }
                i += 1;
                if !delimited(&mut i, d) || !delimited(&mut i, d) {
                    return false;
                }
                if x == 's' {
                    while let Some(&f) = c.get(i) {
                        match f {
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' => i += 1,
                            f if f.is_ascii_digit() => i += 1,
                            _ => break,
                        }
                    }
                }
            }
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | '=' | 'l' | 'q'
            | 'Q' | 'z' | '{' | '}' => {
                while c.get(i).is_some_and(char::is_ascii_digit) {
                    i += 1;
                }
            }
            _ => return false,
        }
    }
}
