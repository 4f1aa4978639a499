//! The MCP tools as the model is offered them (docs/mcp.md#tool-names-and-order):
//! named `mcp__<server>__<tool>` and sorted, with their definitions; or,
//! past the deferral limit, only `mcp_describe` and `mcp_call` plus the
//! `# MCP tools` listing for the stable prefix (docs/mcp.md#deferred-schemas).
//!
//! Invariant: a catalog is a pure function of the servers' tools, the
//! limit and the chars-per-token ratio, so the same servers give a
//! byte-identical tools array and listing. The agent builds one when a
//! session opens and again only at a compaction or a new session.

use std::collections::HashMap;

use eonyx_core::tool::{arg, mcp_tool_name, with_hash_suffix};
use eonyx_core::{ToolDef, ToolName};
use serde_json::{Value, json};

use crate::client::McpTool;

/// Heading of the listing in the stable prefix when schemas are deferred.
pub const MCP_TOOLS_HEADING: &str = "# MCP tools";
/// A description in the listing is cut to this many characters.
const LISTED_DESCRIPTION_CHARS: usize = 200;

/// One MCP tool the model can call.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The name the model uses (`mcp__git__git_status`).
    pub name: String,
    pub server: String,
    /// The server's own name for it.
    pub tool: String,
    pub description: String,
    pub schema: Value,
    /// Tokens its definition takes in a request.
    pub tokens: u64,
}

impl Entry {
    /// The definition sent when schemas are not deferred.
    pub fn definition(&self) -> ToolDef {
        ToolDef {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: object_schema(&self.schema),
        }
    }

    /// Its line in the `# MCP tools` listing.
    fn listed(&self) -> String {
        let first = self.description.lines().next().unwrap_or("").trim();
        let d = eonyx_core::text::ellipsize(first, LISTED_DESCRIPTION_CHARS);
        if d.is_empty() {
            format!("- {}", self.name)
        } else {
            format!("- {} — {d}", self.name)
        }
    }
}

/// The MCP part of every request of a session, between compactions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    /// Sorted by `name`.
    entries: Vec<Entry>,
    deferred: bool,
    limit: u64,
    chars_per_token: f64,
}

impl Catalog {
    /// The catalog of `servers` (name and offered tools): deferred when
    /// the definitions take more than `limit` tokens.
    pub fn build(servers: &[(String, Vec<McpTool>)], limit: u64, chars_per_token: f64) -> Self {
        let mut entries: Vec<Entry> = servers
            .iter()
            .flat_map(|(server, tools)| {
                tools.iter().map(move |t| Entry {
                    name: mcp_tool_name(server, &t.name),
                    server: server.clone(),
                    tool: t.name.clone(),
                    description: t.description.clone(),
                    schema: t.input_schema.clone(),
                    tokens: 0,
                })
            })
            .collect();
        // Two tools whose names sanitize to the same one both get a hash.
        let mut count: HashMap<String, usize> = HashMap::new();
        for e in &entries {
            *count.entry(e.name.clone()).or_default() += 1;
        }
        for e in &mut entries {
            if count[&e.name] > 1 {
                e.name = with_hash_suffix(&e.name, &format!("{}\0{}", e.server, e.tool));
            }
        }
        for e in &mut entries {
            e.tokens = eonyx_core::tokens::estimate(e.definition().chars(), chars_per_token);
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let total: u64 = entries.iter().map(|e| e.tokens).sum();
        Self {
            deferred: !entries.is_empty() && total > limit,
            entries,
            limit,
            chars_per_token,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every MCP tool, sorted by name.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The tool the model named (by its `mcp__…` name).
    pub fn find(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// Whether the schemas are deferred.
    pub fn deferred(&self) -> bool {
        self.deferred
    }

    /// The deferral limit this catalog was built with.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Tokens of all the MCP definitions (as if none were deferred).
    pub fn schema_tokens(&self) -> u64 {
        self.entries.iter().map(|e| e.tokens).sum()
    }

    /// Tokens the MCP part adds to every request: the definitions, or with
    /// deferral the two tools and the listing.
    pub fn tokens(&self) -> u64 {
        if !self.deferred {
            return self.schema_tokens();
        }
        let defs: usize = deferred_definitions().iter().map(ToolDef::chars).sum();
        eonyx_core::tokens::estimate(defs + self.listing().chars().count(), self.chars_per_token)
    }

    /// The tools to offer after the built-ins: the MCP tools, or with
    /// deferral `mcp_describe` and `mcp_call`.
    pub fn definitions(&self) -> Vec<ToolDef> {
        if self.deferred {
            deferred_definitions()
        } else {
            self.entries.iter().map(Entry::definition).collect()
        }
    }

    /// The `# MCP tools` section for the stable prefix; empty unless
    /// deferred.
    pub fn listing(&self) -> String {
        if !self.deferred {
            return String::new();
        }
        let mut s = format!(
            "{MCP_TOOLS_HEADING}\n\nThese tools come from MCP servers. Their parameters are not listed here: call `{}` with a tool's name to read its description and input schema, then `{}` with `{}` (the name) and `{}` (an object matching the schema).\n",
            ToolName::McpDescribe,
            ToolName::McpCall,
            arg::TOOL,
            arg::ARGUMENTS
        );
        for e in &self.entries {
            s.push('\n');
            s.push_str(&e.listed());
        }
        s
    }

    /// Tokens `server`'s tools add to every request: their definitions, or
    /// with deferral their lines in the listing.
    pub fn server_tokens(&self, server: &str) -> u64 {
        let mine = self.entries.iter().filter(|e| e.server == server);
        if self.deferred {
            let chars: usize = mine.map(|e| e.listed().chars().count() + 1).sum();
            eonyx_core::tokens::estimate(chars, self.chars_per_token)
        } else {
            mine.map(|e| e.tokens).sum()
        }
    }

    /// What `mcp_describe` returns for `name`.
    pub fn describe(&self, name: &str) -> Result<String, String> {
        let e = self.find(name).ok_or_else(|| self.unknown(name))?;
        let schema = serde_json::to_string_pretty(&object_schema(&e.schema))
            .unwrap_or_else(|_| e.schema.to_string());
        Ok(format!(
            "{} (tool `{}` of MCP server `{}`)\n\n{}\n\nInput schema (pass the arguments to `{}` as `{}`):\n{schema}",
            e.name,
            e.tool,
            e.server,
            if e.description.trim().is_empty() {
                "(no description)"
            } else {
                e.description.trim()
            },
            ToolName::McpCall,
            arg::ARGUMENTS
        ))
    }

    /// The error text for a name that is no MCP tool.
    pub fn unknown(&self, name: &str) -> String {
        let names: Vec<&str> = self.entries.iter().map(|e| e.name.as_str()).collect();
        if names.is_empty() {
            return format!("error: `{name}` is not an MCP tool; no MCP tools are available");
        }
        let shown = names
            .iter()
            .take(50)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        let more = names.len().saturating_sub(50);
        format!(
            "error: `{name}` is not an MCP tool; available: {shown}{}",
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )
    }
}

/// `mcp_describe` and `mcp_call`.
pub fn deferred_definitions() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: ToolName::McpDescribe.as_str().into(),
            description: "Read the description and input schema of one tool listed under \
                          `# MCP tools` in the system prompt, before calling it with mcp_call."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    arg::TOOL: { "type": "string", "description": "The tool's name as listed, e.g. `mcp__git__git_status`." }
                },
                "required": [arg::TOOL],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: ToolName::McpCall.as_str().into(),
            description: "Call a tool listed under `# MCP tools` in the system prompt. Read its \
                          schema with mcp_describe first. May need the user's approval."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    arg::TOOL: { "type": "string", "description": "The tool's name as listed." },
                    arg::ARGUMENTS: { "type": "object", "description": "The tool's arguments, matching its input schema." }
                },
                "required": [arg::TOOL],
                "additionalProperties": false
            }),
        },
    ]
}

/// A tool's schema as providers take it: an object schema (`type:
/// "object"` added when missing; anything else wrapped in none at all).
fn object_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(m) if m.contains_key("type") => schema.clone(),
        Value::Object(m) => {
            let mut m = m.clone();
            m.insert("type".into(), "object".into());
            Value::Object(m)
        }
        _ => json!({"type": "object"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, desc: &str) -> McpTool {
        McpTool {
            name: name.into(),
            description: desc.into(),
            input_schema: json!({"type": "object", "properties": {"x": {"type": "string"}}}),
        }
    }

    fn servers() -> Vec<(String, Vec<McpTool>)> {
        vec![
            (
                "zeta".into(),
                vec![tool("b", "Second."), tool("a", "First line.\nMore.")],
            ),
            ("alpha".into(), vec![tool("run.it", "")]),
        ]
    }

    #[test]
    fn tools_are_named_and_sorted_and_the_catalog_is_deterministic() {
        let c = Catalog::build(&servers(), 10_000, 4.0);
        let names: Vec<&str> = c.entries().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            ["mcp__alpha__run_it", "mcp__zeta__a", "mcp__zeta__b"]
        );
        assert!(!c.deferred());
        assert_eq!(c.listing(), "");
        let defs = c.definitions();
        assert_eq!(defs.len(), 3);
        assert_eq!(defs[1].description, "First line.\nMore.");
        // Same input, same bytes; the order servers come in does not matter.
        let mut reversed = servers();
        reversed.reverse();
        assert_eq!(Catalog::build(&reversed, 10_000, 4.0), c);
        assert_eq!(c.find("mcp__zeta__a").map(|e| e.tool.as_str()), Some("a"));
        assert_eq!(c.tokens(), c.schema_tokens());
    }

    #[test]
    fn names_that_collide_after_sanitizing_both_get_a_hash() {
        let s = vec![("s".into(), vec![tool("a.b", ""), tool("a_b", "")])];
        let c = Catalog::build(&s, 10_000, 4.0);
        let names: Vec<&str> = c.entries().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names.len(), 2);
        assert_ne!(names[0], names[1]);
        assert!(
            names
                .iter()
                .all(|n| n.starts_with("mcp__s__a_b_") && n.len() == 20),
            "{names:?}"
        );
    }

    #[test]
    fn past_the_limit_schemas_are_deferred_to_describe_and_call() {
        let c = Catalog::build(&servers(), 10, 4.0);
        assert!(c.deferred());
        let names: Vec<String> = c.definitions().into_iter().map(|d| d.name).collect();
        assert_eq!(names, ["mcp_describe", "mcp_call"]);
        let listing = c.listing();
        assert!(listing.starts_with("# MCP tools\n"), "{listing}");
        assert!(
            listing.contains("\n- mcp__zeta__a — First line.\n"),
            "{listing}"
        );
        assert!(listing.ends_with("\n- mcp__zeta__b — Second."), "{listing}");
        assert!(listing.contains("\n- mcp__alpha__run_it\n"), "{listing}");
        let d = c.describe("mcp__zeta__a").unwrap();
        assert!(
            d.starts_with("mcp__zeta__a (tool `a` of MCP server `zeta`)"),
            "{d}"
        );
        assert!(d.contains("\"properties\""), "{d}");
        let e = c.describe("mcp__nope").unwrap_err();
        assert!(
            e.contains("available: mcp__alpha__run_it, mcp__zeta__a"),
            "{e}"
        );
        // A big server costs a small part of its schemas.
        let big: Vec<McpTool> = (0..60)
            .map(|i| McpTool {
                name: format!("tool_{i}"),
                description: format!("Tool number {i}."),
                input_schema: json!({"type": "object", "properties": {
                    "a": {"type": "string", "description": "x".repeat(200)},
                    "b": {"type": "integer", "description": "y".repeat(200)}
                }}),
            })
            .collect();
        let c = Catalog::build(&[("big".into(), big)], 1000, 4.0);
        assert!(c.deferred());
        assert!(
            c.tokens() * 10 < c.schema_tokens(),
            "{} vs {}",
            c.tokens(),
            c.schema_tokens()
        );
        // No tools: nothing to defer.
        assert!(!Catalog::build(&[], 0, 4.0).deferred());
    }

    #[test]
    fn schemas_without_a_type_become_object_schemas() {
        let t = McpTool {
            name: "t".into(),
            description: "d".into(),
            input_schema: json!({"properties": {}}),
        };
        let c = Catalog::build(&[("s".into(), vec![t])], 10_000, 4.0);
        assert_eq!(c.definitions()[0].parameters["type"], "object");
    }
}
