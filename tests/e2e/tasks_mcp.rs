//! MCP tools in a task's child (issues 25 and 28): a child gets only the
//! MCP tools of its parent that its profile's `tools` names, calls them
//! through the parent's servers with the parent's approvals, and `explore`
//! gets none.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure is a test failure

use eonyx_tests::Reply;
use serde_json::json;

use crate::agent::*;
use crate::mcp::{TEST_TOOLS, server, with_servers_and};
use crate::tasks::{child_requests, parent_requests, task};
use crate::util::stderr;

#[test]
fn a_child_sees_the_mcp_tools_its_profile_names_and_calls_them_through_the_parents_servers() {
    let fx = with_servers_and(&server("t", &[], ""), |c| {
        c.merge_top_toml(
            "[profiles.clock]\ndescription = \"echoes\"\ntools = [\"read_file\", \"mcp__t__echo\", \"mcp__nope__*\"]\n",
        )
        .unwrap()
    });
    fx.fake.push_all([
        Reply::tool_call("task", task("Echo it.", "echo", Some("clock"))),
        Reply::tool_call("mcp__t__echo", json!({"text": "from the child"})),
        Reply::text("echoed"),
        Reply::tool_call("task", task("Look around.", "look", Some("explore"))),
        Reply::text("looked"),
        Reply::tool_call("task", task("Do it all.", "all", Some("general"))),
        Reply::text("did"),
        Reply::text("all done"),
    ]);
    let o = fx.run(&["run", "--allow-mcp", "go"], "");
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));

    let parent = parent_requests(&fx);
    let child = child_requests(&fx);
    assert_eq!((parent.len(), child.len()), (4, 4), "{:#?}", fx.chats());
    // The parent: built-ins, `task`, then the server's tools sorted; the
    // same array in every request, tasks or not.
    let parent_tools = parent[0].tool_names();
    let mcp: Vec<String> = TEST_TOOLS.iter().map(|t| format!("mcp__t__{t}")).collect();
    assert_eq!(parent_tools[parent_tools.len() - mcp.len()..], mcp[..]);
    assert_eq!(parent_tools[parent_tools.len() - mcp.len() - 1], "task");
    for r in &parent {
        assert_eq!(r.tools(), parent[0].tools());
    }
    // clock: what it names of the parent's (a server the parent lacks
    // adds nothing), and the call goes through the parent's server with
    // the parent's --allow-mcp.
    assert_eq!(child[0].tool_names(), ["read_file", "plan", "mcp__t__echo"]);
    assert_eq!(child[1].tools(), child[0].tools());
    assert_eq!(child[1].tool_results(), ["from the child"]);
    // explore names no MCP tool, so it gets none.
    assert_eq!(
        child[2].tool_names(),
        ["read_file", "list_dir", "grep", "recall", "plan"]
    );
    // general has no allow-list: the parent's tools but `task`, MCP ones
    // included, in the parent's order.
    let without_task: Vec<String> = parent_tools.into_iter().filter(|t| t != "task").collect();
    assert_eq!(child[3].tool_names(), without_task);
}
