//! The agent's integration tests, as one test binary (one link instead of
//! one per file: a clean build of the workspace is dominated by linking
//! and compiling test targets).

mod ahead;
mod goals;
mod resume;
mod turn_loop;

use std::sync::Arc;

use camino::Utf8PathBuf;
use eonyx_agent::AgentOptions;
use eonyx_core::Provider;
use eonyx_core::paths::Env;

/// The options of an agent working in `cwd` with the given home, data and
/// config directories, answering through `provider`: no flags, no one to
/// ask, no MCP servers, no sandbox helper.
pub(crate) fn options(
    cwd: Utf8PathBuf,
    [home, data, config]: [&str; 3],
    provider: Arc<dyn Provider>,
) -> AgentOptions {
    AgentOptions {
        cwd,
        env: Env::from_pairs([
            ("HOME", home),
            ("EONYX_DATA_DIR", data),
            ("EONYX_CONFIG_DIR", config),
        ]),
        model: None,
        profile: None,
        permissions: eonyx_agent::tools::Permissions::NONE,
        approver: None,
        provider: Some(provider),
        mcp: None,
        mcp_servers: Vec::new(),
        sandbox_helper: None,
    }
}
