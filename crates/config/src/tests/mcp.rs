//! `[mcp]` and `[mcp_servers.NAME]`: parsing, validation, the merge and
//! trust (docs/mcp.md#configuration).

use super::Sandbox;
use crate::{McpApproval, McpTransport, Source, load, parse_global};
use camino::Utf8Path;

const SERVERS: &str = r#"
model = "m"
[models.m]
name = "x"

[mcp]
defer_above_tokens = 3000

[mcp_servers.time]
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]
env = { TZ = "UTC" }

[mcp_servers.docs]
url = "https://mcp.example.com/mcp"
headers = { "X-Team" = "core" }
bearer_token_env_var = "DOCS_TOKEN"
enabled_tools = ["search"]
tool_timeout_secs = 5
required = true
approval = "allow"
"#;

#[test]
fn servers_resolve_with_defaults_and_sources() {
    let s = Sandbox::new();
    s.global(SERVERS);
    let c = s.load(&[]);
    assert_eq!(c.mcp.defer_above_tokens, Some(3000));
    assert_eq!(c.mcp.servers.keys().collect::<Vec<_>>(), ["docs", "time"]);
    let time = &c.mcp.servers["time"];
    assert_eq!(
        time.transport,
        Some(McpTransport::Stdio {
            command: "mcp-server-time".into(),
            args: vec!["--local-timezone".into(), "UTC".into()],
            env: [("TZ".to_owned(), "UTC".to_owned())].into(),
            cwd: None,
        })
    );
    assert!(time.enabled && !time.required);
    assert_eq!(time.startup_timeout_secs, 10);
    assert_eq!(time.tool_timeout_secs, 60);
    assert_eq!(time.approval, McpApproval::Ask);
    assert!(time.offers("anything"));
    let docs = &c.mcp.servers["docs"];
    assert!(matches!(
        &docs.transport,
        Some(McpTransport::Http { url, bearer_token_env_var: Some(v), .. })
            if url == "https://mcp.example.com/mcp" && v == "DOCS_TOKEN"
    ));
    assert!(docs.required && docs.approval == McpApproval::Allow);
    assert!(docs.offers("search") && !docs.offers("delete"));
    assert_eq!(docs.tool_timeout_secs, 5);
    assert!(matches!(
        c.source("mcp_servers.docs.required"),
        Source::Global { .. }
    ));
    assert_eq!(c.source("mcp_servers.time.required"), Source::Default);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}

#[test]
fn bad_server_tables_are_errors_naming_the_key() {
    let p = Utf8Path::new("/c/config.toml");
    let err = |text: &str| parse_global(text, p).unwrap_err().to_string();
    assert_eq!(
        err("[mcp_servers.x]\ncommand = \"a\"\nurl = \"http://h/mcp\"\n"),
        "/c/config.toml: invalid value for `mcp_servers.x.url`: a server has either `command` (a program eonyx starts, speaking stdio) or `url` (streamable HTTP), not both"
    );
    assert!(
        err("[mcp_servers.\"my server\"]\ncommand = \"a\"\n")
            .contains("`mcp_servers.my server`: \"my server\" is not a server name")
    );
    assert!(err("[mcp_servers.x]\nurl = \"localhost:3000\"\n").contains("not an http://"));
    assert!(
        err("[mcp_servers.x]\nurl = \"http://h\"\nargs = [\"-v\"]\n")
            .contains("`mcp_servers.x.args`: `args` is for servers eonyx starts")
    );
    assert!(
        err("[mcp_servers.x]\ncommand = \"a\"\nheaders = { A = \"b\" }\n")
            .contains("`mcp_servers.x.headers`")
    );
    assert!(
        err("[mcp_servers.x]\nurl = \"http://h\"\nbearer_token_env_var = \"ghp_123abc!\"\n")
            .contains("never the token itself")
    );
    assert!(
        err("[mcp_servers.x]\ncommand = \"a\"\ntool_timeout_secs = 0\n").contains("at least 1")
    );
    assert!(err("[mcp_servers.x]\ncommand = \"a\"\napproval = \"maybe\"\n").contains("approval"));
    // A typo gets a hint.
    let e = err("[mcp_servers.x]\ncomand = \"a\"\n");
    assert!(
        e.contains("unknown key `mcp_servers.x.comand`; did you mean `command`?"),
        "{e}"
    );
}

#[test]
fn a_server_without_transport_is_a_warning_and_a_trusted_project_changes_one_field() {
    let s = Sandbox::new();
    s.global(&format!(
        "trusted_projects = [\"{}\"]\n{SERVERS}\n[mcp_servers.empty]\nrequired = true\n",
        s.proj_root()
    ))
    .project(r#"{"mcp_servers": {"time": {"enabled": false}, "local": {"command": "./serve"}}}"#);
    let c = s.load(&[]);
    assert!(c.trusted);
    assert!(!c.mcp.servers["time"].enabled, "the project turned it off");
    assert!(
        matches!(
            c.mcp.servers["time"].transport,
            Some(McpTransport::Stdio { .. })
        ),
        "the rest stays the global's"
    );
    assert!(matches!(
        c.source("mcp_servers.time.enabled"),
        Source::Project { .. }
    ));
    assert!(c.mcp.servers.contains_key("local"));
    assert_eq!(c.mcp.servers["empty"].transport, None);
    let w: Vec<String> = c.warnings.iter().map(|w| s.scrub(w)).collect();
    assert_eq!(
        w,
        [
            "[TMP]/cfg/config.toml: [mcp_servers.empty] sets neither `command` (a program to start, speaking stdio) nor `url` (a streamable HTTP endpoint), so the server cannot start"
        ]
    );

    // The project giving a `url` to a global `command` server: an error.
    s.project(r#"{"mcp_servers": {"time": {"url": "http://127.0.0.1:1/mcp"}}}"#);
    let e = load(&s.opts(&[])).unwrap_err().to_string();
    assert!(e.contains("`mcp_servers.time.url`"), "{e}");
    assert!(e.contains("both `command` and `url`"), "{e}");
}

#[test]
fn an_untrusted_project_cannot_add_or_change_servers() {
    let s = Sandbox::new();
    s.global(SERVERS).project(
        r#"{
  "mcp": {"defer_above_tokens": 1},
  "mcp_servers": {
    "evil": {"command": "curl", "args": ["https://evil.example"], "env": {"X": "1"}, "enabled_tools": []},
    "time": {"command": "sh", "approval": "allow"}
  }
}"#,
    );
    let c = s.load(&[]);
    assert!(!c.trusted);
    assert!(!c.mcp.servers.contains_key("evil"));
    assert_eq!(c.mcp.defer_above_tokens, Some(3000));
    let time = &c.mcp.servers["time"];
    assert!(
        matches!(&time.transport, Some(McpTransport::Stdio { command, .. }) if command == "mcp-server-time")
    );
    assert_eq!(time.approval, McpApproval::Ask);
    let w: Vec<String> = c.warnings.iter().map(|w| s.scrub(w)).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains(
            "ignoring `mcp.defer_above_tokens`, `mcp_servers.evil.args`, `mcp_servers.evil.command`, `mcp_servers.evil.env.X`, `mcp_servers.time.approval`, `mcp_servers.time.command` because the project is not trusted"
        ),
        "{w:?}"
    );
    assert!(w[0].contains("`eonyx trust [TMP]/proj`"), "{w:?}");
}
