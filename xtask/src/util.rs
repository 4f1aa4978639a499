//! Small helpers shared by the tasks: locating the workspace, running
//! commands with an echo, and formatting durations.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

use anyhow::{Context, Result, bail};

/// The workspace root (the parent of `xtask/`).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Cargo's target dir: `$CARGO_TARGET_DIR` or `<root>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace_root().join(dir)
            }
        }
        _ => workspace_root().join("target"),
    }
}

/// The `cargo` that runs us (so `cargo +toolchain xtask` stays consistent).
pub fn cargo() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_root());
    cmd
}

/// Human-readable form of a command for echoing and error messages.
pub fn describe(cmd: &Command) -> String {
    let mut s = String::new();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            // CARGO_ENCODED_RUSTFLAGS separates flags with 0x1f; show spaces.
            let v = v.to_string_lossy().replace('\x1f', " ");
            let v = if v.contains(' ') { format!("'{v}'") } else { v };
            s.push_str(&format!("{}={v} ", k.to_string_lossy()));
        }
    }
    let prog = cmd.get_program().to_string_lossy();
    let prog = Path::new(prog.as_ref())
        .file_name()
        .map_or_else(|| prog.to_string(), |n| n.to_string_lossy().into_owned());
    s.push_str(&prog);
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Echo `+ cmd` to stderr, run it with inherited stdio, and fail unless it
/// exits 0.
pub fn run(cmd: &mut Command) -> Result<()> {
    let what = describe(cmd);
    eprintln!("+ {what}");
    let status = cmd
        .status()
        .with_context(|| format!("could not start `{what}` (is it installed and on PATH?)"))?;
    if !status.success() {
        bail!("`{what}` failed ({status})");
    }
    Ok(())
}

/// Run and capture stdout (stderr is inherited); fail unless it exits 0.
pub fn output(cmd: &mut Command) -> Result<String> {
    let what = describe(cmd);
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("could not start `{what}`"))?;
    if !out.status.success() {
        bail!("`{what}` failed ({})", out.status);
    }
    String::from_utf8(out.stdout).with_context(|| format!("`{what}` printed non-UTF-8 output"))
}

/// `1.2 ms`, `35 µs`, `2.41 s`.
pub fn human_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 1.0 {
        format!("{secs:.2} s")
    } else if secs >= 1e-3 {
        format!("{:.1} ms", secs * 1e3)
    } else {
        format!("{:.0} µs", secs * 1e6)
    }
}

/// Lower-case hex of some bytes.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// SHA-256 of a byte slice, hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(bytes))
}

/// Wait for `child` to exit, polling: its status, or `None` when it ran
/// longer than `limit` (then it is killed and reaped).
pub fn wait_or_kill(child: &mut Child, limit: Duration) -> Result<Option<ExitStatus>> {
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().context("waiting for a child process")? {
            return Ok(Some(status));
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_duration(Duration::from_micros(35)), "35 µs");
        assert_eq!(human_duration(Duration::from_micros(1234)), "1.2 ms");
        assert_eq!(human_duration(Duration::from_millis(2410)), "2.41 s");
    }

    #[test]
    fn sha256_matches_known_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
