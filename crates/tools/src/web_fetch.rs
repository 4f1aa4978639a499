//! `web_fetch` (docs/tools.md#web-fetch): the tool's side of `crates/web`:
//! arguments, approval per host, cancellation, and the result and event.

use eonyx_core::ToolName;
use serde::Deserialize;
use serde_json::Value;

use super::{
    ApprovalKind, CallEnv, Count, Decision, ToolError, ToolEvent, ToolOutput, approve, parse_args,
};

/// The result text of a fetch from `host` denied by config or for want of
/// someone to ask (a denial by a permission rule names the rule instead).
pub fn web_denied(host: &str) -> String {
    format!(
        "denied: web_fetch needs the user's approval; the user can run eonyx with --allow-web, \
         set tools.web_fetch = \"allow\", list the host in tools.web_fetch_domains, or add the \
         permission rule `web_fetch({host})` to [permissions] allow (tools.web_fetch = \"deny\" \
         wins over the flag and the domains)"
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    url: String,
    max_chars: Option<Count>,
}

pub(crate) async fn run(args: &Value, env: CallEnv<'_>) -> Result<ToolOutput, ToolError> {
    let args: Args = parse_args(ToolName::WebFetch, args)?;
    let url = eonyx_web::parse_url(&args.url).map_err(|e| ToolError::Usage(e.to_string()))?;
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let kind = ApprovalKind::WebFetch {
        host: host.clone(),
        url: url.to_string(),
    };
    if approve(env.approver, &kind, env.cancel).await? == Decision::Deny {
        return Err(ToolError::Denied(
            env.approver
                .rule_denial(&kind)
                .unwrap_or_else(|| web_denied(&host)),
        ));
    }
    let fetched = tokio::select! {
        biased;
        () = env.cancel.cancelled() => return Err(ToolError::Interrupted),
        r = env.ctx.web.fetch(&url) => r,
    };
    let fetched = match fetched {
        Ok(f) => f,
        Err(e) => return Ok(ToolOutput::error(e.to_string())),
    };
    let page = &fetched.page;
    let limits = eonyx_web::Limits {
        max_chars: args
            .max_chars
            .map(|n| usize::try_from(n.get()).unwrap_or(usize::MAX)),
        cap_bytes: usize::try_from(env.ctx.output_cap_bytes).unwrap_or(usize::MAX),
    };
    let mut out = ToolOutput::ok(eonyx_web::render(page, limits));
    out.is_error = page.status >= 400;
    out.event = Some(ToolEvent::WebFetch {
        url: page.url.clone(),
        status: page.status,
        bytes: page.bytes,
        cached: fetched.cached,
    });
    Ok(out)
}
