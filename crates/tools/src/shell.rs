//! `shell`: `sh -c COMMAND` in the project root, with approval, a timeout,
//! cancellation and a memory cap on the combined output, confined by the
//! sandbox (docs/using-tools.md, section "Sandbox").
//!
//! Invariant: [`run_command`] is the one function that spawns a shell
//! command: the `shell` tool calls it after approval, the user's `!command`
//! ([`crate::Agent::run_user_command`]) without (the user typed it); it
//! always goes through [`eonyx_sandbox::Sandbox::plan`], so both are
//! confined: unconfined only with `tools.sandbox = "off"` or (warned once)
//! when no backend works, refused when no backend works and
//! `tools.sandbox_required = true`.

use std::io::Read;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use eonyx_core::ShellOutcome;
use eonyx_core::ToolName;
use serde::Deserialize;
use serde_json::Value;

use eonyx_sandbox::{Backend, Plan};

use super::jobs::Leader;

use super::{
    ApprovalKind, CallEnv, CancellationToken, Decision, SHELL_DENIED, ToolContext, ToolError,
    ToolEvent, ToolOutput, approve, parse_args,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    /// Start it as a background job (docs/tools.md#jobs).
    #[serde(default)]
    background: bool,
    /// With `background`: the REPL starts a turn when it exits.
    #[serde(default)]
    notify: bool,
}

/// Output kept in memory; the rest is counted and dropped with a note.
pub(super) const OUTPUT_CAP_BYTES: usize = 4 * 1024 * 1024;
/// How long to wait for output after the shell exits while background
/// processes it started still hold the pipe open.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

#[derive(Default)]
struct Collected {
    bytes: Vec<u8>,
    dropped: u64,
    done: bool,
}

enum End {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
}

pub(super) async fn run(args: &Value, env: CallEnv<'_>) -> Result<ToolOutput, ToolError> {
    let args: Args = parse_args(ToolName::Shell, args)?;
    if args.command.trim().is_empty() {
        return Err(ToolError::bad_args(ToolName::Shell, "command is empty"));
    }
    let kind = ApprovalKind::Shell {
        command: args.command.clone(),
    };
    if args.notify && !args.background {
        return Err(ToolError::bad_args(
            ToolName::Shell,
            "notify applies to background jobs only: add \"background\": true",
        ));
    }
    let jobs = match (&env.ctx.jobs, args.background) {
        (Some(jobs), true) => Some(jobs),
        (None, true) => {
            return Err(ToolError::Usage(
                "background jobs are not available in this session; run the command without \"background\"".into(),
            ));
        }
        (_, false) => None,
    };
    if approve(env.approver, &kind, env.cancel).await? == Decision::Deny {
        return Err(ToolError::Denied(
            env.approver
                .rule_denial(&kind)
                .unwrap_or_else(|| shell_denied(&kind)),
        ));
    }
    let Some(jobs) = jobs else {
        return run_command(&args.command, env.ctx, env.cancel, None).await;
    };
    let (plan, warning) = prepare(env.ctx).await?;
    let cmd = command_for(&plan, &args.command, env.ctx);
    let mut out = jobs
        .start(
            &args.command,
            cmd,
            leader_of(&plan),
            args.notify,
            env.cancel,
        )
        .await?;
    out.event = warning.map(ToolEvent::Warning);
    Ok(out)
}

/// How a command run as `plan` says takes signals: bwrap runs it in a PID
/// namespace, the Landlock helper makes its own session.
fn leader_of(plan: &Plan) -> Leader {
    match plan {
        Plan::Confined(Backend::Bwrap(_)) => Leader::PidNamespace,
        p if p.starts_session() => Leader::Session,
        _ => Leader::Group,
    }
}

/// How the next command runs, and the warning to show once when it runs
/// unconfined; refused when the sandbox is required and none works.
async fn prepare(ctx: &ToolContext) -> Result<(Plan, Option<String>), ToolError> {
    let sandbox = ctx.sandbox.clone();
    let net = ctx.net.clone();
    let plan = tokio::task::spawn_blocking(move || {
        let plan = sandbox.plan();
        // Without the network: the session's namespace, made once.
        sandbox.hold_net(&plan, &net);
        plan
    })
    .await
    .map_err(|e| ToolError::Usage(format!("the sandbox check failed unexpectedly: {e}")))?;
    let mut warning = None;
    if let Plan::Unavailable { reason } = &plan {
        if ctx.sandbox.config().required {
            return Err(ToolError::Denied(ctx.sandbox.refusal(reason)));
        }
        if eonyx_sandbox::first_unconfined() {
            warning = Some(ctx.sandbox.unconfined_warning(reason));
        }
    }
    Ok((plan, warning))
}

/// `sh -c command` in the project root as `plan` confines it, without the
/// provider key variables and with no pager.
fn command_for(plan: &Plan, command: &str, ctx: &ToolContext) -> std::process::Command {
    let mut cmd = ctx.sandbox.command_in(
        plan,
        command,
        ctx.project_root.as_std_path(),
        Some(&ctx.net),
    );
    cmd.env("PAGER", "cat").env("GIT_PAGER", "cat");
    // The provider keys never reach a command the model runs.
    for var in &ctx.hidden_env {
        cmd.env_remove(var);
    }
    cmd
}

/// The denial of a command no rule denied: how the user can allow it,
/// for this run or (a permission rule) for good.
fn shell_denied(kind: &ApprovalKind) -> String {
    match kind.project_rule() {
        Some(rule) => format!(
            "{SHELL_DENIED}, or allow commands like this one for good with the permission rule \
             [permissions] allow = [\"{rule}\"]"
        ),
        None => SHELL_DENIED.to_owned(),
    }
}

/// Gets the command's output as it arrives (the user's `!command` shows it
/// while it runs); called on a blocking thread.
pub type Tee = Box<dyn FnMut(&[u8]) + Send>;

/// Run `sh -c command` in the project root, confined by `ctx.sandbox`,
/// without the provider key variables, within `tools.shell_timeout_secs`,
/// killed with everything it started on cancel, and what it leaves running
/// stopped when it ends (`crate::foreground`); `tee` also gets the output as
/// it arrives. The result's first line is the [`ShellOutcome`]. Asks no
/// one: the caller has approved the command. The one place a command is
/// spawned.
pub async fn run_command(
    command: &str,
    ctx: &ToolContext,
    cancel: &CancellationToken,
    tee: Option<Tee>,
) -> Result<ToolOutput, ToolError> {
    let (plan, warning) = prepare(ctx).await?;
    let confined = matches!(plan, Plan::Confined(_));
    let spawn_err = |e| ToolError::io("cannot start `sh -c` in", ctx.project_root.as_str(), e);
    // One pipe for stdout and stderr keeps their interleaving.
    let (reader, writer) = std::io::pipe().map_err(spawn_err)?;
    let cmd = command_for(&plan, command, ctx);
    let mut child = crate::foreground::spawn(cmd, ctx.sandbox.helper(), leader_of(&plan), writer)
        .map_err(spawn_err)?;

    let collected = Arc::new(Mutex::new(Collected::default()));
    let sink = Arc::clone(&collected);
    // A thread of its own, not the blocking pool: a reader still blocked
    // when eonyx exits never holds the exit up.
    let (done_tx, reader_done) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("eonyx command output".into())
        .spawn(move || {
            drain(reader, &sink, tee);
            let _ = done_tx.send(());
        })
        .map_err(spawn_err)?;

    let end = tokio::select! {
        biased;
        () = cancel.cancelled() => End::Cancelled,
        waited = tokio::time::timeout(ctx.shell_timeout, child.wait()) => match waited {
            Ok(Ok(status)) => End::Exited(status),
            Ok(Err(e)) => {
                child.kill_and_wait().await;
                return Err(ToolError::io("cannot wait for `sh -c` in", ctx.project_root.as_str(), e));
            }
            Err(_) => End::TimedOut,
        },
    };
    let mut still_open = false;
    match end {
        End::Exited(_) => {
            still_open = tokio::time::timeout(DRAIN_GRACE, reader_done)
                .await
                .is_err();
        }
        End::TimedOut | End::Cancelled => {
            child.kill_and_wait().await;
            // Killing everything closes the pipe; don't hang on escapees.
            let _ = tokio::time::timeout(Duration::from_secs(2), reader_done).await;
        }
    }

    let (output, dropped) = {
        let mut c = collected.lock().unwrap_or_else(PoisonError::into_inner);
        still_open &= !c.done;
        (
            String::from_utf8_lossy(&std::mem::take(&mut c.bytes)).into_owned(),
            c.dropped,
        )
    };
    let (first, is_error) = match end {
        End::Exited(status) => (ShellOutcome::Exited(exit_code(status)), !status.success()),
        End::TimedOut => (ShellOutcome::TimedOut(seconds(ctx.shell_timeout)), true),
        End::Cancelled => (ShellOutcome::Interrupted, true),
    };
    let first = first.to_string();
    let mut text = first;
    text.push('\n');
    text.push_str(&output);
    let failed = matches!(end, End::Exited(status) if !status.success());
    if confined
        && failed
        && let Some(note) = ctx.sandbox.denial_note(&output)
    {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&note);
        text.push('\n');
    }
    if dropped > 0 {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "[output truncated: {dropped} more bytes were not kept (limit {OUTPUT_CAP_BYTES} bytes); redirect to a file and grep it instead]\n"
        ));
    }
    if still_open {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(
            "[background processes still hold the output open; their later output is not shown]\n",
        );
    }
    let mut out = ToolOutput::ok(text);
    out.is_error = is_error;
    out.event = warning.map(ToolEvent::Warning);
    Ok(out)
}

/// Reads the pipe to its end, keeping at most [`OUTPUT_CAP_BYTES`] and
/// passing everything to `tee`.
fn drain(mut reader: std::io::PipeReader, sink: &Mutex<Collected>, mut tee: Option<Tee>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some(t) = tee.as_mut() {
            t(&buf[..n]);
        }
        let mut c = sink.lock().unwrap_or_else(PoisonError::into_inner);
        let room = OUTPUT_CAP_BYTES.saturating_sub(c.bytes.len());
        let keep = room.min(n);
        c.bytes.extend_from_slice(&buf[..keep]);
        c.dropped += (n - keep) as u64;
    }
    sink.lock().unwrap_or_else(PoisonError::into_inner).done = true;
}

/// The exit code, or 128 + the signal number as shells report it.
fn exit_code(status: ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return 128 + sig;
        }
    }
    -1
}

/// `120s`, or `0.5s` for sub-second timeouts.
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

#[cfg(test)]
#[cfg(unix)]
#[path = "shell_tests.rs"]
mod tests;
