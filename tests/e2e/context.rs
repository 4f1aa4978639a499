//! `eonyx context`: the assembled system prompt on stdout, the file table on
//! stderr, `--json`, and the summary of `-s ID`.
#![allow(clippy::unwrap_used)] // test helpers: a failure to spawn is a test failure

use std::process::Output;

use camino::Utf8PathBuf;

/// The config dir, relative to the sandbox root (under HOME, so the file
/// table shows it as `~/.config/eonyx/…` whatever the temp dir is).
const CONFIG: &str = "home/.config/eonyx";

/// A temp dir holding a project tree, the config dir, the data dir and HOME.
/// (The shared [`eonyx_tests::Sandbox`] with its config dir under HOME.)
struct Sandbox {
    sb: eonyx_tests::Sandbox,
    root: Utf8PathBuf,
}

impl Sandbox {
    fn new() -> Self {
        let sb = eonyx_tests::Sandbox::new();
        let root = Utf8PathBuf::from_path_buf(sb.root.clone()).unwrap();
        std::fs::create_dir_all(root.join(CONFIG)).unwrap();
        Self { sb, root }
    }

    fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    /// `eonyx ARGS` run in `root/<cwd>`.
    fn eonyx(&self, cwd: &str, args: &[&str]) -> Output {
        let cwd = self.root.join(cwd);
        std::fs::create_dir_all(&cwd).unwrap();
        self.sb
            .command(env!("CARGO_BIN_EXE_eonyx"))
            .args(args)
            .current_dir(&cwd)
            .env("EONYX_CONFIG_DIR", self.root.join(CONFIG))
            .output()
            .unwrap()
    }

    /// Temp paths and today's date replaced, for snapshots.
    fn filter(&self, s: &str) -> String {
        let s = s.replace(self.root.as_str(), "[TMP]");
        match s.find("Current date (UTC): ") {
            Some(i) => {
                let start = i + "Current date (UTC): ".len();
                format!("{}[DATE]{}", &s[..start], &s[start + 10..])
            }
            None => s,
        }
    }

    /// A shop project: marker, two levels of context, a global file.
    fn shop(&self) {
        self.write(&format!("{CONFIG}/AGENTS.md"), "Prefer short answers.\n");
        self.write("shop/eonyx.json", "{}");
        self.write(
            "shop/AGENTS.md",
            "# Project: Shop\n\n## Rules\n- Run `go test ./...` before committing.\n",
        );
        self.write("shop/tone.context.md", "Answer plainly.\n");
        self.write(
            "shop/services/billing/AGENTS.md",
            "Never run migrations without confirmation.\n",
        );
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn today_line(prompt: &str) -> &str {
    prompt
        .lines()
        .find(|l| l.starts_with("Current date (UTC): "))
        .unwrap()
}

#[test]
fn context_prints_the_prompt_on_stdout_and_the_files_on_stderr() {
    let sb = Sandbox::new();
    sb.shop();
    let out = sb.eonyx("shop/services/billing", &["context"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let prompt = stdout(&out);
    // Exactly as sent: it ends with the date line, no summary.
    let date = today_line(&prompt);
    assert!(prompt.ends_with(&format!("\n\n{date}")), "{prompt:?}");
    assert_eq!(date.len(), "Current date (UTC): YYYY-MM-DD".len());
    insta::assert_snapshot!("context_stdout", sb.filter(&prompt));
    insta::assert_snapshot!("context_stderr", sb.filter(&stderr(&out)));
}

#[test]
fn context_json_has_files_parts_and_total() {
    let sb = Sandbox::new();
    sb.shop();
    let plain = stdout(&sb.eonyx("shop/services/billing", &["context"]));
    let out = sb.eonyx("shop/services/billing", &["context", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let files: Vec<(&str, u64, bool)> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap(),
                f["bytes"].as_u64().unwrap(),
                f["truncated"].as_bool().unwrap(),
            )
        })
        .collect();
    let global = sb.root.join(CONFIG).join("AGENTS.md");
    assert_eq!(
        files,
        [
            (global.as_str(), 22, false),
            ("AGENTS.md", 67, false),
            ("tone.context.md", 16, false),
            ("services/billing/AGENTS.md", 43, false),
        ]
    );
    // 42 bytes of "Never run migrations…" at 4 chars per token.
    assert_eq!(v["files"][3]["tokens"], 11);
    let stable = v["stable_prefix"].as_str().unwrap();
    let suffix = v["suffix"].as_str().unwrap();
    assert_eq!(format!("{stable}\n\n{suffix}"), plain);
    assert!(suffix.starts_with("Current date (UTC): "));
    let total = v["total_tokens"].as_u64().unwrap();
    assert_eq!(total, (plain.chars().count() as u64).div_ceil(4));
}

#[test]
fn context_with_a_session_shows_its_latest_summary() {
    let sb = Sandbox::new();
    sb.shop();
    let id = "20260705T091500-1a2b3c4d";
    let cwd = sb.root.join("shop");
    let lines = [
        serde_json::json!({"type":"session","version":1,"id":id,"title":"1",
            "created":"2026-07-05T09:15:00Z","cwd":cwd,"project":cwd}),
        serde_json::json!({"type":"message","seq":1,"ts":"2026-07-05T09:15:01Z",
            "role":"user","content":"add invoices"}),
        serde_json::json!({"type":"compaction","seq":2,"ts":"2026-07-05T09:20:00Z",
            "summary":"Goal: old summary.","first_kept_seq":2,"trigger":"auto",
            "tokens_before":900,"tokens_after":100}),
        serde_json::json!({"type":"message","seq":2,"ts":"2026-07-05T09:21:01Z",
            "role":"user","content":"now the tests"}),
        serde_json::json!({"type":"compaction","seq":3,"ts":"2026-07-05T09:30:00Z",
            "summary":"Goal: add invoices.\nNext: tests.","first_kept_seq":3,
            "trigger":"manual","tokens_before":800,"tokens_after":120}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    sb.write(&format!("data/sessions/{id}.jsonl"), text);

    let out = sb.eonyx("shop", &["context", "-s", id]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let prompt = stdout(&out);
    let date = today_line(&prompt);
    assert!(
        prompt.ends_with(&format!(
            "\n\n{date}\n\n# Summary of earlier conversation\n\nGoal: add invoices.\nNext: tests.\n\n{}",
            eonyx_prompt::RECALL_HINT
        )),
        "{prompt:?}"
    );
    assert!(!prompt.contains("old summary"));
}

#[test]
fn context_with_an_unknown_or_invalid_session_fails_with_a_message() {
    let sb = Sandbox::new();
    sb.shop();
    let out = sb.eonyx("shop", &["context", "-s", "20260705T091500-00000000"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stdout(&out).is_empty());
    assert!(
        stderr(&out).contains("20260705T091500-00000000"),
        "{}",
        stderr(&out)
    );

    let out = sb.eonyx("shop", &["context", "-s", "../../etc/passwd"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
}

#[test]
fn context_warns_about_truncation_and_unreadable_files() {
    let sb = Sandbox::new();
    sb.write("p/eonyx.json", "{}");
    sb.write(
        &format!("{CONFIG}/config.toml"),
        "[context]\nmax_file_bytes = 16\nmax_total_bytes = 1000\n",
    );
    sb.write("p/AGENTS.md", "0123456789abcdefTHIS PART IS CUT");
    sb.write("p/bad.context.md", b"caf\xe9\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink("loop.context.md", sb.root.join("p/loop.context.md")).unwrap();
    let out = sb.eonyx("p", &["context"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let prompt = stdout(&out);
    assert!(prompt.contains(
        "0123456789abcdef\n\n[eonyx: AGENTS.md truncated: 16 of its 32 bytes shown, \
         16 bytes cut (context.max_file_bytes = 16)]"
    ));
    assert!(!prompt.contains("THIS PART IS CUT"));
    assert!(prompt.contains("caf\u{FFFD}"));
    let err = stderr(&out);
    assert!(
        err.contains("warning: context file AGENTS.md is 32 bytes; only the first 16 are included"),
        "{err}"
    );
    assert!(err.contains("warning: context file bad.context.md is not valid UTF-8"));
    #[cfg(unix)]
    assert!(
        err.contains("warning: skipped context file loop.context.md: cannot read it:"),
        "{err}"
    );
    let row = err
        .lines()
        .find(|l| l.starts_with("AGENTS.md "))
        .unwrap_or_else(|| panic!("no AGENTS.md row in {err}"));
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        [
            "AGENTS.md",
            "32",
            "4",
            "yes",
            "(16",
            "of",
            "32",
            "bytes",
            "kept)"
        ]
    );
}
