use super::*;

const README: &str = "\
# eonyx

Intro | with a pipe.

## Commands

| command | does |
| --- | --- |
| `eonyx` | REPL |
| `eonyx run [PROMPT]` | one turn; `-c` continues |
| `eonyx sessions delete ID…` | delete |
| `eonyx compact [-s ID] [--focus TEXT]` | compact now |

### Slash commands

Not a table.

## Configuration reference

| key | default | meaning |
|-----|:-------:|---------|
| `compaction.threshold_percent` | `80` | percent \\| of window |
| `models.<key>.base_url` | — | where |
| `tools.shell` | `ask` | shell policy |

## Next

| `not` | `in section` |
| --- | --- |
| `x` | `y` |
";

#[test]
fn sections_end_at_the_next_level_two_heading() {
    let cmds = section(README, "Commands").unwrap();
    assert!(cmds.contains("eonyx sessions delete"));
    assert!(
        cmds.contains("### Slash commands"),
        "level-3 headings stay inside"
    );
    assert!(!cmds.contains("Configuration reference"));
    let cfg = section(README, "Configuration reference").unwrap();
    assert!(cfg.contains("tools.shell"));
    assert!(!cfg.contains("in section"));
    assert!(section(README, "Install").is_none());
}

#[test]
fn table_rows_skip_header_and_separator_and_honour_escaped_pipes() {
    let rows = table_rows(section(README, "Configuration reference").unwrap());
    assert_eq!(rows.len(), 3);
    assert_eq!(
        rows[0],
        [
            "`compaction.threshold_percent`",
            "`80`",
            "percent | of window"
        ]
    );
    assert_eq!(rows[1][1], "—");
}

#[test]
fn command_paths_stop_at_the_first_placeholder() {
    let rows = table_rows(section(README, "Commands").unwrap());
    let docs: Vec<CommandDoc> = rows.iter().map(|r| parse_command(&r[0]).unwrap()).collect();
    assert_eq!(docs.len(), 4);
    assert!(docs[0].words.is_empty());
    assert_eq!(docs[1].words, ["run"]);
    assert_eq!(docs[2].words, ["sessions", "delete"]);
    assert_eq!(docs[3].words, ["compact"]);
    assert_eq!(docs[3].flags, ["-s", "--focus"]);
}

#[test]
fn command_cells_must_be_eonyx_commands() {
    assert!(parse_command("`cargo run`").is_err());
    assert!(parse_command("eonyx run").is_err(), "not backticked");
    let doc = parse_command("`eonyx sessions show ID --effective`").unwrap();
    assert_eq!(doc.words, ["sessions", "show"]);
    assert_eq!(doc.flags, ["--effective"]);
    let doc = parse_command("`eonyx sessions --search=TEXT`").unwrap();
    assert_eq!(doc.flags, ["--search"]);
}

#[test]
fn config_rows_give_key_and_default() {
    let rows = table_rows(section(README, "Configuration reference").unwrap());
    let docs: Vec<ConfigDoc> = rows.iter().map(|r| parse_config(r).unwrap()).collect();
    assert_eq!(docs[0].key, "compaction.threshold_percent");
    assert_eq!(docs[0].default.as_deref(), Some("80"));
    assert_eq!(docs[1].default, None);
    assert_eq!(concrete_key(&docs[1].key), "models.m.base_url");
    assert!(parse_config(&["EONYX_MODEL".into(), "`x`".into()]).is_err());
    assert!(parse_config(&["`EONYX_MODEL`".into(), "`x`".into()]).is_err());
}

#[test]
fn defaults_become_toml_values() {
    assert_eq!(toml_value("80"), "80");
    assert_eq!(toml_value("4.0"), "4.0");
    assert_eq!(toml_value("true"), "true");
    assert_eq!(toml_value("\"\""), "\"\"");
    assert_eq!(toml_value("ask"), "\"ask\"");
    assert_eq!(
        toml_value("http://127.0.0.1:8080/v1"),
        "\"http://127.0.0.1:8080/v1\""
    );
    assert_eq!(toml_value("[]"), "[]");
}

#[test]
fn help_subcommands_are_read_from_clap_help() {
    let help = "\
eonyx: a terminal LLM agent

Usage: eonyx [OPTIONS] [COMMAND]

Commands:
  run          Run one turn and print the answer
  sessions     List, search and manage sessions
  completions  Print shell completions
                 (wrapped description line)
  help         Print this message or the help of the given subcommand(s)

Options:
  -c, --continue  Continue
";
    assert_eq!(help_subcommands(help), ["run", "sessions", "completions"]);
    assert!(help_subcommands("Usage: eonyx config\n\nOptions:\n  -h\n").is_empty());
}

#[test]
fn the_test_command_must_stand_alone_in_a_code_block() {
    let quick = "Run the tests:\n\n```sh\ncargo test --workspace   # all of them\n```\n";
    assert!(has_fenced_command(quick, "cargo test --workspace"));
    assert!(
        !has_fenced_command("Run `cargo test --workspace`.\n", "cargo test --workspace"),
        "prose is not the command"
    );
    assert!(!has_fenced_command(
        "```sh\ncargo test --workspace --release\n```\n",
        "cargo test --workspace"
    ));
}

#[test]
fn the_workspace_readme_gives_the_test_command_and_config_doc_has_its_table() {
    let root = crate::util::workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let quick = section(&readme, QUICK_START_SECTION).expect("README has a quick start");
    assert!(has_fenced_command(quick, &TEST_COMMAND.join(" ")));
    assert!(section(&readme, COMMANDS_SECTION).is_some_and(|s| !table_rows(s).is_empty()));
    let config = std::fs::read_to_string(root.join("docs/config.md")).unwrap();
    let rows =
        table_rows(section(&config, CONFIG_SECTION).expect("docs/config.md has the reference"));
    assert!(rows.iter().all(|r| parse_config(r).is_ok()));
    assert!(rows.len() > 50, "{} config rows", rows.len());
}
