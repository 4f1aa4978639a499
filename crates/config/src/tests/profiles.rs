//! Profiles through [`crate::load()`]: the built-ins, a configured table
//! merged over one, the active profile's compaction, what an untrusted
//! project may set, and validation of a profile's tools.

use super::*;

#[test]
fn profiles_are_built_in_merged_over_and_apply_their_compaction_when_active() {
    let s = Sandbox::new();
    s.global(&format!(
        "{GLOBAL}\n[profiles.general]\ninstructions = \"Be thorough.\"\n[profiles.review]\ndescription = \"reviews\"\ntools = [\"read_file\"]\n[tasks]\nmax_parallel = 2\n"
    ));
    let c = s.load(&[]);
    assert_eq!(
        c.profiles.keys().collect::<Vec<_>>(),
        ["explore", "general", "review"]
    );
    assert_eq!(c.profiles["general"].instructions, "Be thorough.");
    assert!(
        !c.profiles["general"].description.is_empty(),
        "built-in kept"
    );
    assert!(c.profiles["explore"].tools.is_some());
    assert_eq!(c.tasks.max_parallel, 2);
    assert_eq!(c.tasks.max_depth, 1);
    assert!(c.tools.task);
    assert_eq!(c.compaction.threshold_percent, 75.0, "model override");

    // Active: the built-in explore's 50 %, which its configured table may
    // change field by field (GLOBAL sets threshold_percent = 50 too, so use
    // another key's absence to see the built-in).
    s.global(&format!("{GLOBAL}\n"))
        .project(r#"{"profiles": {"review": {"compaction": {"keep_turns": 1}}}}"#);
    let mut o = s.opts(&[]);
    o.profile = Some("general".into());
    let c = load(&o).unwrap();
    assert_eq!(c.active_profile().map(|p| p.name.as_str()), Some("general"));
    assert_eq!(
        c.compaction.threshold_percent, 75.0,
        "general has no override"
    );
    s.global("[models.local]\nname = \"m\"\n").project("{}");
    let c = s.load_profile("explore");
    assert_eq!(c.compaction.threshold_percent, 50.0);
    assert_eq!(
        c.source("compaction.threshold_percent"),
        Source::Builtin {
            profile: "explore".into()
        }
    );
    // An untrusted project may reword a profile and turn tasks off, and
    // set how many run at once.
    s.project(
        r#"{"profiles": {"explore": {"instructions": "List files first."}}, "tools": {"task": false}, "tasks": {"max_parallel": 1}}"#,
    );
    let c = s.load(&[]);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(c.profiles["explore"].instructions, "List files first.");
    assert!(!c.tools.task);
    assert_eq!(c.tasks.max_parallel, 1);

    let err = parse_global(
        "[profiles.x]\ntools = [\"read_file\", \"sh\"]\n",
        Utf8Path::new("/c/config.toml"),
    )
    .unwrap_err();
    assert!(
        err.to_string().starts_with(
            "/c/config.toml: invalid value for `profiles.x.tools`: unknown tool `sh`; tools: read_file,"
        ),
        "{err}"
    );
    assert!(parse_global("[tasks]\nmax_parallel = 0\n", Utf8Path::new("/c")).is_err());
}

#[test]
fn a_profile_may_name_mcp_tools_exactly_or_by_prefix() {
    let s = Sandbox::new();
    s.global(&format!(
        "{GLOBAL}\n[profiles.clock]\ntools = [\"read_file\", \"mcp__time__get_current_time\", \"mcp__git__*\"]\n"
    ));
    let c = s.load(&[]);
    let p = &c.profiles["clock"];
    assert_eq!(
        p.tools.as_deref(),
        Some(&[eonyx_core::ToolName::ReadFile][..])
    );
    assert!(p.allows_mcp("mcp__time__get_current_time"));
    assert!(!p.allows_mcp("mcp__time__convert_time"));
    assert!(p.allows_mcp("mcp__git__git_log"));
    // No allow-list: every MCP tool of the session; explore's: none.
    assert!(c.profiles["general"].allows_mcp("mcp__time__convert_time"));
    assert!(!c.profiles["explore"].allows_mcp("mcp__time__convert_time"));

    let err = parse_global(
        "[profiles.x]\ntools = [\"mcp__time\"]\n",
        Utf8Path::new("/c/config.toml"),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("`mcp__time` is not an MCP tool name; write `mcp__<server>__<tool>`"),
        "{err}"
    );
}
