//! Skills (docs/skills.md, section "Skills") through the real binary against the fake provider:
//! the listing in the first request, the `skill` tool (body, files,
//! confinement), malformed skills, project over global, the visible cap,
//! bodies kept through two compactions and a resume, `eonyx skills`,
//! `eonyx context` and `/skills`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use std::process::Output;

use eonyx_tests::Reply;
use serde_json::{Value, json};

use crate::agent::Fx;
use crate::util::{stderr, stdout};

const DEPLOY_BODY: &str =
    "# Deploy\n\nDEPLOY-BODY-MARKER: run scripts/deploy.sh, then check references/checklist.md.";

/// Skills' helpers on the shared fixture.
impl Fx {
    /// A skill under the sandbox root: `dir` is e.g. `work/.agents/skills`.
    fn skill(&self, dir: &str, name: &str, description: &str, body: &str) {
        self.sb.write(
            format!("{dir}/{name}/SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}\n"),
        );
    }

    /// The `deploy` project skill with a script and a reference file.
    fn deploy(&self) {
        self.skill(
            "work/.agents/skills",
            "deploy",
            "Deploy the shop to production.",
            DEPLOY_BODY,
        );
        self.sb.write(
            "work/.agents/skills/deploy/scripts/deploy.sh",
            "echo deploying\n",
        );
        self.sb.write(
            "work/.agents/skills/deploy/references/checklist.md",
            "CHECKLIST-MARKER: tests green, changelog written.\n",
        );
    }
}

fn ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(o));
}

#[test]
fn a_description_is_in_the_first_request_and_the_body_is_not() {
    let fx = Fx::new();
    fx.deploy();
    fx.fake.push(Reply::text("ok"));
    let o = fx.run(&["run", "hello"], "");
    ok(&o);
    let first = &fx.agent_requests()[0];
    let system = first.system_text();
    assert!(
        system.contains("# Skills\n\n")
            && system.contains("\n- deploy: Deploy the shop to production."),
        "{system}"
    );
    assert!(!system.contains("DEPLOY-BODY-MARKER"), "{system}");
    assert!(!first.all_text().contains("DEPLOY-BODY-MARKER"));
    assert!(first.tool_names().contains(&"skill".to_owned()));
    // In the stable prefix, before the date line.
    let skills_at = system.find("# Skills").unwrap();
    let date_at = system.find("Current date (UTC): ").unwrap();
    assert!(skills_at < date_at);
}

#[test]
fn without_skills_there_is_no_section_no_tool_and_the_first_request_stays_small() {
    let fx = Fx::replying([Reply::text("ok")]);
    let o = fx.run(&["run", "hello"], "");
    ok(&o);
    let first = &fx.agent_requests()[0];
    assert!(!first.system_text().contains("# Skills"));
    assert!(!first.tool_names().contains(&"skill".to_owned()));
    // (1,500 until the `plan` tool, which every session is offered; 1,600
    // until the background jobs' tools.)
    assert!(
        first.prompt_tokens < 1800,
        "the fixed first request is {} tokens (fake count)",
        first.prompt_tokens
    );
}

#[test]
fn a_skill_call_returns_the_body_and_a_resource_file() {
    let fx = Fx::new();
    fx.deploy();
    fx.fake
        .push(Reply::tool_calls([
            ("skill", json!({"name": "deploy"})),
            (
                "skill",
                json!({"name": "deploy", "path": "references/checklist.md"}),
            ),
        ]))
        .push(Reply::text("Deployed."));
    let o = fx.run(&["run", "deploy the shop"], "");
    ok(&o);
    assert_eq!(stdout(&o), "Deployed.\n");
    let turns = fx.agent_requests();
    let results = turns[1].tool_results();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].starts_with(DEPLOY_BODY), "{}", results[0]);
    assert!(!results[0].contains("description:"), "no front matter");
    assert!(
        results[0].contains("- references/checklist.md\n- scripts/deploy.sh"),
        "{}",
        results[0]
    );
    assert!(
        results[0].contains(".agents/skills/deploy"),
        "the directory is named"
    );
    assert_eq!(
        results[1],
        "CHECKLIST-MARKER: tests green, changelog written.\n"
    );
    // Reading a skill needs no approval, even in a batch run.
    assert!(!stderr(&o).contains("denied"), "{}", stderr(&o));
}

#[test]
fn a_path_escaping_the_skill_directory_is_refused() {
    let fx = Fx::new();
    fx.deploy();
    fx.sb.write("work/secret.txt", "SECRET-MARKER\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        fx.sb.work.join("secret.txt"),
        fx.sb.work.join(".agents/skills/deploy/references/leak.md"),
    )
    .unwrap();
    fx.fake
        .push(Reply::tool_calls([
            (
                "skill",
                json!({"name": "deploy", "path": "../../../secret.txt"}),
            ),
            (
                "skill",
                json!({"name": "deploy", "path": "references/leak.md"}),
            ),
        ]))
        .push(Reply::text("Could not."));
    let o = fx.run(&["run", "read the secret"], "");
    ok(&o);
    let results = fx.agent_requests()[1].tool_results();
    assert_eq!(results.len(), 2);
    assert!(
        results[0].starts_with(
            "refused: `../../../secret.txt` is outside the directory of skill `deploy`"
        ),
        "{}",
        results[0]
    );
    if cfg!(unix) {
        assert!(
            results[1].starts_with("refused: `references/leak.md` is outside"),
            "{}",
            results[1]
        );
    }
    for r in &results {
        assert!(!r.contains("SECRET-MARKER"), "{r}");
    }
}

#[test]
fn a_malformed_skill_is_skipped_with_a_warning_and_the_run_goes_on() {
    let fx = Fx::new();
    fx.deploy();
    let bad = fx.sb.write(
        "work/.agents/skills/broken/SKILL.md",
        "---\nname: broken\n---\nbody\n",
    );
    fx.sb.write(
        "work/.agents/skills/Wrong/SKILL.md",
        "---\nname: wrong\ndescription: x\n---\n",
    );
    fx.fake.push(Reply::text("fine"));
    let o = fx.run(&["run", "hello"], "");
    ok(&o);
    assert_eq!(stdout(&o), "fine\n");
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "warning: skipped skill {}: the front matter has no `description`",
            bad.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("Wrong/SKILL.md: `name: wrong` does not match its directory `Wrong`"),
        "{err}"
    );
    let system = fx.agent_requests()[0].system_text();
    assert!(system.contains("- deploy: "));
    assert!(
        !system.contains("broken") && !system.contains("wrong"),
        "{system}"
    );

    // `eonyx skills` lists the good one and warns about the same files.
    let o = fx.run(&["skills"], "");
    ok(&o);
    let out = stdout(&o);
    assert!(out.starts_with("NAME "), "{out}");
    assert!(out.contains("deploy "), "{out}");
    assert!(!out.contains("broken"), "{out}");
    assert!(stderr(&o).contains("skipped skill"), "{}", stderr(&o));
}

#[test]
fn a_project_skill_overrides_a_global_one_of_the_same_name() {
    let fx = Fx::new();
    fx.deploy();
    fx.skill("config/skills", "deploy", "GLOBAL deploy", "GLOBAL-BODY");
    fx.skill(
        "home/.agents/skills",
        "notes",
        "Keep release notes.",
        "NOTES-BODY",
    );
    fx.fake
        .push(Reply::tool_call("skill", json!({"name": "deploy"})))
        .push(Reply::text("done"));
    let o = fx.run(&["run", "deploy"], "");
    ok(&o);
    let turns = fx.agent_requests();
    let system = turns[0].system_text();
    assert!(
        system.contains("- deploy: Deploy the shop to production.\n- notes: Keep release notes."),
        "{system}"
    );
    assert!(!system.contains("GLOBAL"), "{system}");
    let result = &turns[1].tool_results()[0];
    assert!(result.starts_with(DEPLOY_BODY), "{result}");

    let o = fx.run(&["skills", "--json"], "");
    ok(&o);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows: Vec<(&str, &str, &str)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap(),
                s["scope"].as_str().unwrap(),
                s["description"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("deploy", "project", "Deploy the shop to production."),
            ("notes", "global", "Keep release notes."),
        ]
    );
    let path = v[0]["path"].as_str().unwrap();
    assert_eq!(
        path,
        fx.sb
            .work
            .join(".agents/skills/deploy/SKILL.md")
            .to_str()
            .unwrap()
    );
}

#[test]
fn after_two_compactions_a_skill_loaded_before_them_is_in_every_later_request() {
    let fx = Fx::with(|c| c.merge_top_toml("[compaction]\nkeep_turns = 1\n").unwrap());
    fx.deploy();
    fx.fake
        .set_summarizer(|_| Reply::text("SUMMARY: the user is deploying."));
    fx.fake
        .push(Reply::tool_call("skill", json!({"name": "deploy"})))
        .push(Reply::text("A"))
        .push(Reply::text("B"))
        .push(Reply::text("C"))
        .push(Reply::text("D"))
        .push(Reply::text("E"));
    let o = fx.run(
        &[],
        "deploy the shop\nsecond\n/compact\nthird\n/compact\nfourth\n/skills\n",
    );
    ok(&o);
    assert_eq!(stdout(&o), "A\nB\nC\nD\n");
    let turns = fx.agent_requests();
    assert_eq!(turns.len(), 5);
    // Before any compaction the body came only as the tool result.
    for t in &turns[..3] {
        assert!(!t.system_text().contains("# Skills in use"));
    }
    for t in &turns[3..] {
        let system = t.system_text();
        let summary_at = system.find("# Summary of earlier conversation").unwrap();
        let in_use_at = system.find("# Skills in use").expect(&system);
        assert!(summary_at < in_use_at, "{system}");
        assert!(
            system.contains(&format!("## Skill: deploy\n\n{DEPLOY_BODY}")),
            "{system}"
        );
        assert!(
            !t.all_text().contains("\"name\":\"deploy\""),
            "the call itself was compacted away"
        );
    }
    // Each compaction record lists the skill.
    let session = std::fs::read_dir(fx.sb.data.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let records: Vec<Value> = std::fs::read_to_string(&session)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &Value| r["type"] == "compaction")
        .collect();
    assert_eq!(records.len(), 2);
    for r in &records {
        assert_eq!(r["skills"], json!(["deploy"]), "{r}");
    }
    // `/skills` shows it in use.
    assert!(
        stderr(&o)
            .contains("in use since the last compaction (re-attached after the summary): deploy"),
        "{}",
        stderr(&o)
    );

    // `eonyx context -s ID` shows the section as the next request carries it.
    let id = session.file_stem().unwrap().to_str().unwrap().to_owned();
    let o = fx.run(&["context", "-s", &id], "");
    ok(&o);
    assert!(
        stdout(&o).contains("# Skills in use\n") && stdout(&o).contains(DEPLOY_BODY),
        "{}",
        stdout(&o)
    );

    // A resumed session re-attaches it too.
    let o = fx.run(&["run", "-c", "fifth"], "");
    ok(&o);
    let last = fx.agent_requests().pop().unwrap();
    assert!(last.system_text().contains(DEPLOY_BODY));
}

#[test]
fn the_listing_is_capped_visibly() {
    let fx = Fx::new();
    fx.sb
        .write("work/eonyx.json", r#"{"skills": {"max_listed_bytes": 60}}"#);
    for n in ["alpha", "bravo", "charlie", "delta"] {
        fx.skill(
            "work/.agents/skills",
            n,
            &format!("Handles {n} work."),
            "body",
        );
    }
    fx.fake.push(Reply::text("ok"));
    let o = fx.run(&["run", "hello"], "");
    ok(&o);
    let system = fx.agent_requests()[0].system_text();
    assert!(
        system.contains("- alpha: Handles alpha work.\n- bravo: Handles bravo work.\n"),
        "{system}"
    );
    assert!(!system.contains("- charlie"), "{system}");
    assert!(
        system.contains(
            "[eonyx: 2 more skills not listed (skills.max_listed_bytes = 60): charlie, delta]"
        ),
        "{system}"
    );
    assert!(
        stderr(&o).contains("warning: the skills listing is capped by skills.max_listed_bytes = 60: 2 of 4 skills are not listed (charlie, delta)"),
        "{}",
        stderr(&o)
    );
    // `eonyx skills` still shows all four, marking those left out.
    let o = fx.run(&["skills"], "");
    ok(&o);
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 5, "{out}");
    assert!(out.contains("(not listed) Handles delta work."), "{out}");
}

#[test]
fn context_shows_the_skills_section_and_its_size() {
    let fx = Fx::new();
    fx.deploy();
    let o = fx.run(&["context"], "");
    ok(&o);
    assert!(stdout(&o).contains("# Skills\n"), "{}", stdout(&o));
    assert!(stdout(&o).contains("- deploy: Deploy the shop to production."));
    let err = stderr(&o);
    assert!(
        err.contains("skills: 1 listed in the # Skills section, "),
        "{err}"
    );
    let o = fx.run(&["context", "--json"], "");
    ok(&o);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["skills"]["listed"], 1);
    assert!(v["skills"]["bytes"].as_u64().unwrap() > 40);
    assert!(
        v["stable_prefix"]
            .as_str()
            .unwrap()
            .ends_with("- deploy: Deploy the shop to production.")
    );
}
