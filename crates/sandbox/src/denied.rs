//! The "sandbox denied" line: one line added to a failed command's result
//! when its output shows the sandbox stopped it, saying what was denied and
//! which key widens it (docs/tools.md#sandbox).
//!
//! The heuristic, kept narrow so the line rarely appears for other
//! failures:
//! - a write: a line saying `Read-only file system`, `Permission denied` or
//!   `Operation not permitted` that names a path (a word holding `/`, or
//!   `.git…` / `eonyx.json`) which the policy does not let commands write;
//!   a `Read-only file system` line naming no path counts too (nothing
//!   else in the sandbox is a read-only disk);
//! - the network, only when it is off: a line saying `Network is
//!   unreachable`, `Connection refused` (the session's own loopback has
//!   no servers but its jobs'), a name-resolution failure, or a `Permission denied` line
//!   naming no path in output that mentions `socket` or `connect` (what
//!   the seccomp filter's `EACCES` looks like).

use camino::Utf8Path;
use eonyx_core::config::SandboxMode;

use crate::policy::{PROTECTED_NAMES, Policy, Verdict};

const FS_DENIED: [&str; 3] = [
    "Read-only file system",
    "Permission denied",
    "Operation not permitted",
];

const NET_DENIED: [&str; 7] = [
    "Network is unreachable",
    "Connection refused",
    "Temporary failure in name resolution",
    "Could not resolve host",
    "Name or service not known",
    "No address associated with hostname",
    "Address family not supported",
];

#[derive(Debug, PartialEq, Eq)]
enum Denial {
    Protected(String),
    Outside(String),
    /// A read-only file system error naming no path.
    Write,
    Network,
}

/// The added line for a failed command's `output`, if the sandbox looks
/// like the cause.
pub fn note(policy: &Policy, output: &str) -> Option<String> {
    let mut write = None;
    let mut network = false;
    let lower = output.to_ascii_lowercase();
    let mentions_sockets = lower.contains("socket") || lower.contains("connect");
    for line in output.lines() {
        if write.is_none()
            && let Some(d) = write_denial(policy, line)
        {
            write = Some(d);
        }
        if !policy.network && !network {
            network = network_denial(line, mentions_sockets);
        }
        if write.is_some() && network {
            break;
        }
    }
    let mut parts: Vec<String> = write.iter().map(|d| describe(policy, d)).collect();
    if network {
        parts.push(describe(policy, &Denial::Network));
    }
    (!parts.is_empty()).then(|| format!("[sandbox denied {}]", parts.join("; also ")))
}

fn write_denial(policy: &Policy, line: &str) -> Option<Denial> {
    if !FS_DENIED.iter().any(|p| line.contains(p)) {
        return None;
    }
    // bash names itself by its path (`/usr/bin/bash: line 1: …`).
    let shell = format!("{}: ", crate::shell_program().path.display());
    let line = line.strip_prefix(shell.as_str()).unwrap_or(line);
    let mut named = false;
    for word in line.split_whitespace() {
        let word = word.trim_matches(|c: char| {
            matches!(
                c,
                '\'' | '"' | '`' | ':' | ',' | ';' | '(' | ')' | '[' | ']' | '‘' | '’'
            )
        });
        let is_path =
            word.contains('/') || PROTECTED_NAMES.contains(&word) || word.starts_with(".git");
        if !is_path || word.contains("://") {
            continue;
        }
        named = true;
        match policy.verdict(Utf8Path::new(word)) {
            Verdict::Protected => return Some(Denial::Protected(word.to_owned())),
            Verdict::Outside => return Some(Denial::Outside(word.to_owned())),
            Verdict::Writable => {}
        }
    }
    (!named && line.contains("Read-only file system")).then_some(Denial::Write)
}

fn network_denial(line: &str, mentions_sockets: bool) -> bool {
    NET_DENIED.iter().any(|p| line.contains(p))
        || (mentions_sockets && line.contains("Permission denied") && !line.contains('/'))
}

fn describe(policy: &Policy, d: &Denial) -> String {
    const OFF: &str = "tools.sandbox = \"off\"";
    match d {
        Denial::Protected(path) => format!(
            "writing {path}: .git/ and eonyx.json stay read-only inside the sandbox, whatever \
             else may be written; only {OFF} lifts that, or ask the user to make the change"
        ),
        Denial::Outside(path) if policy.mode == SandboxMode::ReadOnly => format!(
            "writing {path}: tools.sandbox = \"read-only\" allows no writes; \
             tools.sandbox = \"workspace-write\" allows the project and the temp dir"
        ),
        Denial::Outside(path) => format!(
            "writing {path}: commands may write only in the project, the temp dir and \
             tools.sandbox_writable; add the directory to tools.sandbox_writable or set {OFF}"
        ),
        Denial::Write => format!(
            "a write outside the writable paths (the project, the temp dir, \
             tools.sandbox_writable); tools.sandbox_writable widens them, {OFF} lifts the sandbox"
        ),
        Denial::Network => format!(
            "network access: commands reach nothing but the session's own loopback, \
             where only its jobs serve; tools.sandbox_network = true allows it, {OFF} lifts the sandbox"
        ),
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use camino::Utf8PathBuf;
    use eonyx_core::config::SandboxConfig;
    use eonyx_core::paths::Env;

    use super::*;

    fn policy(mode: SandboxMode, network: bool) -> (tempfile::TempDir, Policy) {
        let dir = tempfile::tempdir().unwrap();
        let root = Utf8PathBuf::from_path_buf(dir.path().join("work")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let config = SandboxConfig {
            mode,
            network,
            ..SandboxConfig::default()
        };
        let p = Policy::new(&config, &root, &Env::default());
        (dir, p)
    }

    #[test]
    fn writes_the_policy_refuses_are_explained_with_the_key_that_widens_them() {
        let (_d, p) = policy(SandboxMode::WorkspaceWrite, false);
        let n = note(
            &p,
            "sh: 1: cannot create /etc/eonyx-x: Read-only file system\n",
        )
        .unwrap();
        assert!(
            n.starts_with("[sandbox denied writing /etc/eonyx-x:"),
            "{n}"
        );
        assert!(n.contains("tools.sandbox_writable"), "{n}");
        let n = note(
            &p,
            "sh: 1: cannot create .git/hooks/x: Read-only file system",
        )
        .unwrap();
        assert!(n.contains(".git/ and eonyx.json stay read-only"), "{n}");
        let n = note(
            &p,
            "PermissionError: [Errno 13] Permission denied: '/usr/lib/x'",
        )
        .unwrap();
        assert!(n.contains("writing /usr/lib/x"), "{n}");
        let n = note(
            &p,
            "touch: cannot touch 'eonyx.json': Read-only file system",
        )
        .unwrap();
        assert!(n.contains("writing eonyx.json"), "{n}");
        let (_d, ro) = policy(SandboxMode::ReadOnly, false);
        let n = note(&ro, "sh: 1: cannot create out.txt/x: Read-only file system").unwrap();
        assert!(n.contains("tools.sandbox = \"workspace-write\""), "{n}");
    }

    #[test]
    fn the_network_is_explained_only_when_it_is_off() {
        let (_d, p) = policy(SandboxMode::WorkspaceWrite, false);
        let n = note(&p, "ConnectionRefusedError: [Errno 111] Connection refused").unwrap();
        assert!(n.contains("tools.sandbox_network = true"), "{n}");
        let seccomp =
            "    sock = socket(af, socktype, proto)\nPermissionError: [Errno 13] Permission denied";
        let n = note(&p, seccomp).unwrap();
        assert!(n.contains("network access"), "{n}");
        let n = note(&p, "connect: Permission denied").unwrap();
        assert!(n.contains("network access"), "{n}");
        let (_d, open) = policy(SandboxMode::WorkspaceWrite, true);
        assert_eq!(note(&open, "curl: (7) Connection refused"), None);
    }

    #[test]
    fn other_failures_get_no_line() {
        let (_d, p) = policy(SandboxMode::WorkspaceWrite, false);
        assert_eq!(note(&p, "error[E0425]: cannot find value `x`"), None);
        // Inside the project: a real permission problem, not the sandbox.
        assert_eq!(note(&p, "sh: 1: ./run.sh: Permission denied"), None);
        assert_eq!(note(&p, "/tmp/x: Permission denied"), None);
        assert_eq!(note(&p, "Permission denied"), None);
    }
}
