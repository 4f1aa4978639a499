//! Memory across sessions (docs/memory.md, section "Using memory") through the real binary against the
//! fake provider: `eonyx memory`, the `memory` tool, `/remember`, the
//! `# Memory` section of the stable prefix, the cap, secrets and file modes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use eonyx_tests::{RecordedRequest, Reply};
use serde_json::{Value, json};

use crate::agent::{Fx, run_with_stdin};
use crate::util::{stderr, stdout};

const DATE_LINE: &str = "Current date (UTC): ";

/// Memory's helpers on the shared fixture.
impl Fx {
    /// `eonyx ARGS` in `work/<dir>` with `input` on stdin.
    fn run_in(&self, dir: &str, args: &[&str], input: &str, vars: &[(&str, &str)]) -> Output {
        let mut cmd = self.sb.eonyx();
        let cwd = self.sb.work.join(dir);
        std::fs::create_dir_all(&cwd).unwrap();
        cmd.current_dir(cwd).args(args);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        run_with_stdin(cmd, input)
    }

    fn ok(&self, args: &[&str]) -> Output {
        self.ok_in("", args)
    }

    fn ok_in(&self, dir: &str, args: &[&str]) -> Output {
        let out = self.run_in(dir, args, "", &[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "eonyx {args:?} failed: {}",
            stderr(&out)
        );
        out
    }

    fn last_system(&self) -> String {
        self.agent_requests().last().unwrap().system_text()
    }

    /// `eonyx memory --json`.
    fn entries(&self) -> Vec<Value> {
        let out = self.ok(&["memory", "--json"]);
        serde_json::from_str::<Value>(&stdout(&out))
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }

    fn memory_files(&self) -> Vec<PathBuf> {
        let mut files = vec![self.sb.data.join("memory/global.md")];
        let dir = self.sb.data.join("memory/projects");
        if let Ok(rd) = std::fs::read_dir(dir) {
            files.extend(rd.map(|e| e.unwrap().path()));
        }
        files.into_iter().filter(|p| p.exists()).collect()
    }
}

/// The id `memory add` reported: `remembered [ID] (scope): text`.
fn added_id(out: &Output) -> String {
    let err = stderr(out);
    let start = err.find("remembered [").expect(&err) + "remembered [".len();
    err[start..start + 6].to_owned()
}

/// The `# Memory` section of a system prompt.
fn memory_section(system: &str) -> &str {
    let start = system.find("\n# Memory\n").expect(system) + 1;
    let date = system.find(DATE_LINE).unwrap();
    assert!(start < date, "memory after the date line: {system}");
    // Up to the next top-level section (skills) or the date line.
    let end = system[start..date]
        .find("\n\n# ")
        .map_or(date, |i| start + i);
    system[start..end].trim_end()
}

fn session_id(path: &Path) -> String {
    path.file_stem().unwrap().to_str().unwrap().to_owned()
}

// 1.
#[test]
fn an_entry_added_by_the_cli_is_in_the_next_sessions_stable_prefix_before_the_date_line() {
    let fx = Fx::new();
    fx.sb.write("work/AGENTS.md", "Project rule: use tabs.\n");
    fx.sb.write(
        "work/.agents/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Deploy the shop.\n---\n\nRun make ship.\n",
    );
    let out = fx.ok(&["memory", "add", "Staging", "is", "read-only"]);
    let id = added_id(&out);
    fx.ok(&["run", "hello"]);

    let system = fx.last_system();
    let section = memory_section(&system);
    assert_eq!(
        section,
        format!("# Memory\n\n## Project\n\n- [{id}] Staging is read-only")
    );
    // After the context files, before the date line.
    let rule = system.find("Project rule: use tabs.").unwrap();
    let mem = system.find("\n# Memory\n").unwrap();
    let skills = system.find("\n# Skills").unwrap();
    let date = system.find(DATE_LINE).unwrap();
    assert!(rule < mem && mem < skills && skills < date, "{system}");

    // The listing shows it, and `eonyx context` shows the section and its size.
    let list = stdout(&fx.ok(&["memory"]));
    assert!(
        list.contains(&format!("{id}  project  ")) && list.contains("Staging is read-only"),
        "{list}"
    );
    let ctx = fx.ok(&["context"]);
    assert!(stdout(&ctx).contains(section), "{}", stdout(&ctx));
    assert!(
        stderr(&ctx).contains(&format!("memory: 1 entry, {} bytes", section.len())),
        "{}",
        stderr(&ctx)
    );
}

// 2.
#[test]
fn an_entry_the_model_saves_reaches_the_next_session_with_its_session_id() {
    let fx = Fx::new();
    fx.fake.push_all([
        Reply::tool_call(
            "memory",
            json!({"action": "add", "text": "Deploys go through `make ship`.", "scope": "project"}),
        ),
        Reply::text("noted"),
    ]);
    let out = fx.run_in("", &["run", "--json", "remember how we deploy"], "", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // One stderr line for the change, and a memory_changed event.
    assert!(
        stderr(&out).contains("memory: remembered [")
            && stderr(&out).contains("(project): Deploys go through `make ship`."),
        "{}",
        stderr(&out)
    );
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let changed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "memory_changed")
        .collect();
    assert_eq!(changed.len(), 1, "{events:#?}");
    assert_eq!(changed[0]["action"], "add");
    assert_eq!(changed[0]["scope"], "project");
    // The memory tool is offered, and needed no approval (no --allow-shell).
    let first = &fx.agent_requests()[0];
    assert!(
        first
            .tools()
            .iter()
            .any(|t| t["function"]["name"] == "memory")
    );

    let session = session_id(&fx.session_files()[0]);
    let entries = fx.entries();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["session"], session.as_str());
    assert_eq!(entries[0]["scope"], "project");
    assert_eq!(entries[0]["text"], "Deploys go through `make ship`.");
    let id = entries[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(changed[0]["id"], id.as_str());

    // The saving session, opened again, would carry it: `--effective` shows
    // the next request as the agent would build it.
    let effective = stdout(&fx.ok(&["sessions", "show", &session, "--effective"]));
    assert!(
        effective.contains(&format!("- [{id}] Deploys go through `make ship`.")),
        "{effective}"
    );

    fx.ok(&["run", "how do we deploy?"]);
    assert!(
        fx.last_system()
            .contains(&format!("- [{id}] Deploys go through `make ship`.")),
        "{}",
        fx.last_system()
    );
}

// 3.
#[test]
fn within_the_saving_session_every_request_keeps_a_byte_identical_system_prompt() {
    let fx = Fx::new();
    fx.ok(&["memory", "add", "--global", "Answer briefly."]);
    fx.fake.push_all([
        Reply::tool_call(
            "memory",
            json!({"action": "add", "text": "The CI runs on Fridays."}),
        ),
        Reply::text("saved"),
        Reply::text("second answer"),
    ]);
    let out = fx.run_in(
        "",
        &[],
        "remember the CI day\n/remember Use British English.\n/memory\nanother question\n",
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("memory: remembered ["),
        "{}",
        stderr(&out)
    );
    // `/memory` lists what is on disk now, the global entry first.
    let err = stderr(&out);
    let listed = err.find("  global   ").unwrap();
    assert!(err[listed..].contains("Answer briefly."), "{err}");
    assert!(
        err[listed..].contains("  project  ") && err[listed..].contains("Use British English."),
        "{err}"
    );

    let reqs = fx.agent_requests();
    assert_eq!(reqs.len(), 3);
    let first = reqs[0].system_text();
    assert!(first.contains("Answer briefly."));
    for r in &reqs {
        assert_eq!(
            r.system_text(),
            first,
            "the system prompt changed mid-session"
        );
        assert!(!r.system_text().contains("Fridays"));
        assert!(!r.system_text().contains("British"));
    }
    // Both were saved, by this session, and the next session has them.
    let session = session_id(&fx.session_files()[0]);
    let entries = fx.entries();
    let saved: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| (e["text"].as_str().unwrap(), e["session"].as_str().unwrap()))
        .collect();
    assert!(
        saved.contains(&("The CI runs on Fridays.", session.as_str())),
        "{saved:?}"
    );
    assert!(
        saved.contains(&("Use British English.", session.as_str())),
        "{saved:?}"
    );
    fx.ok(&["run", "next"]);
    let next = fx.last_system();
    assert!(
        next.contains("Fridays") && next.contains("British"),
        "{next}"
    );
}

// 4.
#[test]
fn a_second_project_sees_global_entries_but_not_the_first_projects() {
    let fx = Fx::new();
    fx.sb.write("work/a/eonyx.json", "{}");
    fx.sb.write("work/b/eonyx.json", "{}");
    fx.ok_in("a", &["memory", "add", "Only for project A."]);
    fx.ok_in("a", &["memory", "add", "--global", "For every project."]);

    fx.ok_in("b", &["run", "hi"]);
    let b = fx.last_system();
    assert!(b.contains("For every project."), "{b}");
    assert!(!b.contains("Only for project A."), "{b}");

    fx.ok_in("a", &["run", "hi"]);
    let a = memory_section(&fx.last_system()).to_owned();
    let (g, p) = (a.find("## Global").unwrap(), a.find("## Project").unwrap());
    assert!(g < p, "global entries come first: {a}");
    assert!(a[g..p].contains("For every project.") && a[p..].contains("Only for project A."));

    let paths = stdout(&fx.ok_in("b", &["memory", "path"]));
    let lines: Vec<&str> = paths.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].ends_with("memory/global.md"), "{paths}");
    assert!(lines[1].contains("memory/projects/b-"), "{paths}");
}

// 5.
#[test]
fn forget_removes_an_entry_from_later_prompts() {
    let fx = Fx::new();
    let keep = added_id(&fx.ok(&["memory", "add", "Keep me."]));
    let drop = added_id(&fx.ok(&["memory", "add", "Forget me."]));
    let out = fx.ok(&["memory", "forget", &drop]);
    assert!(
        stderr(&out).contains(&format!("forgot [{drop}]")),
        "{}",
        stderr(&out)
    );
    fx.ok(&["run", "hi"]);
    let system = fx.last_system();
    assert!(system.contains(&format!("[{keep}] Keep me.")));
    assert!(!system.contains("Forget me."), "{system}");
    // An unknown id changes nothing and says so.
    let out = fx.run_in("", &["memory", "forget", "zzzzzz"], "", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no memory entry with id zzzzzz"),
        "{}",
        stderr(&out)
    );

    // The model can forget too.
    fx.fake.push_all([
        Reply::tool_call("memory", json!({"action": "forget", "id": keep})),
        Reply::text("done"),
    ]);
    fx.ok(&["run", "forget the first note"]);
    assert!(fx.entries().is_empty());
    fx.ok(&["run", "hi"]);
    assert!(
        !fx.last_system().contains("\n# Memory\n"),
        "{}",
        fx.last_system()
    );
}

// 6.
#[test]
fn after_compactions_every_request_still_carries_the_memory() {
    let fx = Fx::with(|c| c.merge_top_toml("[compaction]\nkeep_turns = 1\n").unwrap());
    fx.fake
        .set_summarizer(|_| Reply::text("## Active goal\nchat\n## Progress\nsome"));
    fx.ok(&["memory", "add", "--global", "Always answer in haiku."]);
    // Turn 1 saves an entry through the tool; later turns are long enough
    // for the fixed trigger to compact every turn or two.
    fx.fake.push_all([
        Reply::tool_call(
            "memory",
            json!({"action": "add", "text": "Saved mid-session."}),
        ),
        Reply::text("saved"),
    ]);
    let long = "x".repeat(3000);
    let input = format!("save a note\n{long} one\n{long} two\n{long} three\n{long} four\n");
    let out = fx.run_in("", &[], &input, &[("EONYX_AUTO_COMPACT_TOKENS", "2500")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let all = fx.fake.chat_requests();
    let compactions = all.iter().filter(|r| r.is_summarizer()).count();
    assert!(
        compactions >= 2,
        "expected several compactions, got {compactions}"
    );
    let first_compaction = all.iter().position(RecordedRequest::is_summarizer).unwrap();
    for (i, r) in all.iter().enumerate().filter(|(_, r)| !r.is_summarizer()) {
        let system = r.system_text();
        assert!(
            system.contains("Always answer in haiku."),
            "request {i} lost memory"
        );
        memory_section(&system);
        // The entry saved mid-session joins the prefix at the first
        // compaction, not before.
        assert_eq!(
            system.contains("Saved mid-session."),
            i > first_compaction,
            "request {i}"
        );
    }
}

// 7.
#[test]
fn entries_past_the_cap_are_cut_visibly_and_the_newest_are_kept() {
    let fx = Fx::new();
    fx.ok(&["memory", "add", "first"]);
    let project_file = fx
        .memory_files()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("projects"))
        .unwrap();
    // 120 entries of ~100 bytes, oldest first, over 120 days.
    let mut text = String::from("# eonyx memory: project (by hand)\n\n");
    for i in 0..120u32 {
        let month = 1 + i / 28;
        let day = 1 + i % 28;
        text.push_str(&format!(
            "- [e{i:04}] 2026-{month:02}-{day:02} cli: entry number {i:03} {}\n",
            "p".repeat(70)
        ));
    }
    std::fs::write(&project_file, text).unwrap();

    fx.ok(&["run", "hi"]);
    let system = fx.last_system();
    let section = memory_section(&system);
    assert!(section.contains("entry number 119"), "newest kept");
    assert!(!section.contains("entry number 000"), "oldest left out");
    let shown = section.matches("entry number").count();
    assert!((60..120).contains(&shown), "{shown} shown");
    let entry_bytes: usize = section
        .lines()
        .filter(|l| l.starts_with("- ["))
        .map(|l| l.len() + 1)
        .sum();
    assert!(entry_bytes <= 8192, "{entry_bytes}");
    // The kept ones are the newest: every shown number is above every cut one.
    let lowest_shown = (0..120)
        .find(|i| section.contains(&format!("entry number {i:03}")))
        .unwrap();
    assert_eq!(lowest_shown, 120 - shown);
    assert!(
        section.ends_with(&format!(
            "[eonyx: {} older memory entries left out (memory.max_bytes = 8192); `eonyx memory` lists all]",
            120 - shown
        )),
        "{section}"
    );
    // The listing has all of them, newest last.
    let list = stdout(&fx.ok(&["memory"]));
    assert_eq!(list.lines().count(), 120);
    assert!(list.lines().last().unwrap().contains("entry number 119"));
    let ctx = stderr(&fx.ok(&["context"]));
    assert!(
        ctx.contains(&format!("{} older left out", 120 - shown)),
        "{ctx}"
    );
}

// 8.
#[test]
fn an_entry_holding_an_api_key_is_refused_by_the_tool_and_the_cli() {
    let key = "sk-fake-secret-0123456789";
    let fx = Fx::with(|c| c.set("api_key_env", "FAKE_PROVIDER_KEY"));
    let vars = [("FAKE_PROVIDER_KEY", key)];
    let out = fx.run_in(
        "",
        &["memory", "add", &format!("the key is {key}")],
        "",
        &vars,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("refused"), "{}", stderr(&out));
    assert!(!stderr(&out).contains(key));

    fx.fake.push_all([
        Reply::tool_call(
            "memory",
            json!({"action": "add", "text": format!("key: {key}")}),
        ),
        Reply::text("ok"),
    ]);
    let out = fx.run_in("", &["run", "remember the key"], "", &vars);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("memory: remembered"));
    // The model was told why.
    let last = fx.agent_requests().last().unwrap().clone();
    let tool = &last.tool_results()[0];
    assert!(tool.contains("refused"), "{tool}");
    assert!(fx.entries().is_empty());
    for f in fx.memory_files() {
        assert!(!std::fs::read_to_string(f).unwrap().contains(key));
    }
}

// 9.
#[cfg(unix)]
#[test]
fn memory_files_are_0600_and_the_directory_0700() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fx::new();
    fx.ok(&["memory", "add", "--global", "g"]);
    fx.fake.push_all([
        Reply::tool_call("memory", json!({"action": "add", "text": "p"})),
        Reply::text("ok"),
    ]);
    fx.ok(&["run", "save p"]);
    let files = fx.memory_files();
    assert_eq!(files.len(), 2, "{files:?}");
    for f in &files {
        let mode = std::fs::metadata(f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", f.display());
    }
    let mode = std::fs::metadata(fx.sb.data.join("memory"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);

    // `memory edit` keeps it private even when the editor replaces the file.
    let out = fx.run_in(
        "",
        &["memory", "edit", "--global"],
        "",
        &[("VISUAL", "f() { cp \"$1\" \"$1.new\"; echo 'hand-written note' >> \"$1.new\"; chmod 644 \"$1.new\"; mv \"$1.new\" \"$1\"; }; f")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let global = fx.sb.data.join("memory/global.md");
    let mode = std::fs::metadata(&global).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(stderr(&out).contains("1 line(s)"), "{}", stderr(&out));
    // The hand-written line is kept and listed as-is.
    let list = stdout(&fx.ok(&["memory"]));
    assert!(
        list.contains("-       global   -           hand-written note"),
        "{list}"
    );
}

#[test]
fn an_untrusted_project_may_turn_memory_off_but_not_on() {
    let fx = Fx::new();
    fx.ok(&["memory", "add", "A note."]);
    fx.sb
        .write("work/eonyx.json", r#"{"memory": {"enabled": false}}"#);
    fx.ok(&["run", "hi"]);
    let r = fx.agent_requests().last().unwrap().clone();
    assert!(!r.system_text().contains("A note."));
    assert!(r.system_text().contains("Memory is off"));
    assert!(!r.tools().iter().any(|t| t["function"]["name"] == "memory"));

    // Off in the user's config: the project cannot turn it back on.
    let cfg = fx.sb.config.join("config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, format!("{text}\n[memory]\nenabled = false\n")).unwrap();
    fx.sb
        .write("work/eonyx.json", r#"{"memory": {"enabled": true}}"#);
    let out = fx.ok(&["run", "hi"]);
    assert!(
        stderr(&out).contains("ignoring `memory.enabled`"),
        "{}",
        stderr(&out)
    );
    assert!(!fx.last_system().contains("A note."));
}

#[test]
fn concurrent_eonyx_processes_never_lose_an_entry() {
    let fx = Fx::new();
    let children: Vec<_> = (0..16)
        .map(|i| {
            let mut cmd = fx.sb.eonyx();
            let scope = if i % 2 == 0 { "--global" } else { "--" };
            cmd.args(["memory", "add", scope, &format!("note {i}")])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let entries = fx.entries();
    let mut texts: Vec<&str> = entries
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    texts.sort_unstable();
    let mut want: Vec<String> = (0..16).map(|i| format!("note {i}")).collect();
    want.sort_unstable();
    assert_eq!(texts, want);
}
