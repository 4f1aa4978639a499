//! The bubblewrap backend run for real, and the plans and lines of a
//! sandbox with no backend. (The Landlock helper needs the `eonyx`
//! executable: tests/e2e/sandbox.rs runs both backends through it.)

use std::process::Output;

use camino::Utf8PathBuf;

use super::*;

/// A project under /tmp (its `.git` and `eonyx.json`), and a directory
/// outside every writable root (/var/tmp is not the temp dir).
struct Fx {
    _dir: tempfile::TempDir,
    root: Utf8PathBuf,
    outside: tempfile::TempDir,
}

impl Fx {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root =
            Utf8PathBuf::from_path_buf(dir.path().canonicalize().unwrap().join("work")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join("eonyx.json"), "{}\n").unwrap();
        let outside = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
        Self {
            _dir: dir,
            root,
            outside,
        }
    }

    fn sandbox(&self, config: SandboxConfig) -> Sandbox {
        Sandbox::new(config, &self.root, &Env::default(), None)
    }

    fn run(&self, sb: &Sandbox, command: &str) -> (Plan, Output) {
        let plan = sb.plan();
        let out = sb
            .command(&plan, command, self.root.as_std_path())
            .output()
            .unwrap();
        (plan, out)
    }
}

fn bwrap_config() -> SandboxConfig {
    SandboxConfig {
        backend: SandboxBackend::Bwrap,
        ..SandboxConfig::default()
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// bwrap must be installed to run these (CI's `.ci/run` installs it).
fn require_bwrap(plan: &Plan) {
    assert!(
        matches!(plan, Plan::Confined(Backend::Bwrap(_))),
        "bubblewrap does not work here ({plan:?}); install it (apt-get install bubblewrap) — \
         .ci/run does — to run the sandbox tests"
    );
}

#[test]
fn bwrap_lets_commands_write_the_project_and_temp_dir_only() {
    let fx = Fx::new();
    let sb = fx.sandbox(bwrap_config());
    let outside = fx.outside.path().join("x");
    let tmp = tempfile::tempdir().unwrap();
    let cmd = format!(
        "echo a > inside.txt; echo b > {tmp}/t.txt; echo c > {out}; echo d > .git/hook; \
         echo e > eonyx.json; echo f > /dev/null && echo devnull-ok; echo $EONYX_SANDBOX",
        tmp = tmp.path().display(),
        out = outside.display()
    );
    let (plan, out) = fx.run(&sb, &cmd);
    require_bwrap(&plan);
    let t = text(&out);
    assert!(fx.root.join("inside.txt").exists(), "{t}");
    assert!(tmp.path().join("t.txt").exists(), "{t}");
    assert!(!outside.exists(), "{t}");
    assert!(!fx.root.join(".git/hook").exists(), "{t}");
    assert_eq!(
        std::fs::read_to_string(fx.root.join("eonyx.json")).unwrap(),
        "{}\n"
    );
    assert!(t.contains("devnull-ok\nbwrap\n"), "{t}");
    assert_eq!(t.matches("Read-only file system").count(), 3, "{t}");
    let note = sb.denial_note(&t).unwrap();
    assert!(
        note.contains(&format!("writing {}", outside.display())),
        "{note}"
    );
}

#[test]
fn bwrap_read_only_writes_nothing_and_off_writes_everywhere() {
    let fx = Fx::new();
    let ro = fx.sandbox(SandboxConfig {
        mode: SandboxMode::ReadOnly,
        ..bwrap_config()
    });
    let (plan, out) = fx.run(&ro, "echo a > inside.txt");
    require_bwrap(&plan);
    assert!(!out.status.success());
    assert!(!fx.root.join("inside.txt").exists());

    let off = Sandbox::off(&fx.root);
    let outside = fx.outside.path().join("x");
    let (plan, out) = fx.run(&off, &format!("echo c > {}", outside.display()));
    assert_eq!(plan, Plan::Off);
    assert!(out.status.success(), "{}", text(&out));
    assert!(outside.exists());
}

#[test]
fn bwrap_keeps_the_network_off_unless_allowed() {
    let fx = Fx::new();
    // A listener on the host's loopback: unreachable from inside.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5); print(\"connected\")'"
    );
    let sb = fx.sandbox(bwrap_config());
    let (plan, out) = fx.run(&sb, &connect);
    require_bwrap(&plan);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(!t.contains("connected"), "{t}");
    assert!(
        sb.denial_note(&t)
            .unwrap()
            .contains("tools.sandbox_network = true"),
        "{t}"
    );

    let open = fx.sandbox(SandboxConfig {
        network: true,
        ..bwrap_config()
    });
    let (_, out) = fx.run(&open, &connect);
    assert!(text(&out).contains("connected"), "{}", text(&out));
}

#[test]
fn killing_bwrap_ends_the_processes_its_command_started() {
    let fx = Fx::new();
    let sb = fx.sandbox(bwrap_config());
    let plan = sb.plan();
    require_bwrap(&plan);
    let mut cmd = sb.command(
        &plan,
        "sleep 300 & echo started; wait",
        fx.root.as_std_path(),
    );
    let mut child = cmd.stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    assert_eq!(line, "started\n");
    child.kill().unwrap();
    child.wait().unwrap();
    // The pipe closes once every process holding it (the `sleep`) is gone.
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(rest, "");
}

#[test]
fn without_a_backend_the_plan_says_why_and_what_happens() {
    let fx = Fx::new();
    let sb = fx.sandbox(SandboxConfig {
        backend: SandboxBackend::Landlock,
        ..SandboxConfig::default()
    });
    let plan = sb.plan();
    let Plan::Unavailable { reason } = &plan else {
        panic!("{plan:?}");
    };
    assert!(
        reason.starts_with("landlock: no eonyx executable"),
        "{reason}"
    );
    assert!(
        sb.describe(&plan).ends_with("commands run unconfined"),
        "{}",
        sb.describe(&plan)
    );
    assert!(
        sb.unconfined_warning(reason)
            .contains("tools.sandbox_required = true")
    );
    let required = fx.sandbox(SandboxConfig {
        backend: SandboxBackend::Landlock,
        required: true,
        ..SandboxConfig::default()
    });
    assert!(required.describe(&plan).contains("commands are refused"));
    let refusal = required.refusal(reason);
    assert!(
        refusal.starts_with("denied: the sandbox is required"),
        "{refusal}"
    );
    assert!(refusal.contains("apt-get install bubblewrap"), "{refusal}");
    // The command still runs unconfined when asked to (the caller refuses).
    let out = sb
        .command(&plan, "echo ran", fx.root.as_std_path())
        .output()
        .unwrap();
    assert_eq!(text(&out), "ran\n");
}

#[test]
fn the_first_unconfined_command_of_a_process_is_warned_about_once() {
    let first = first_unconfined();
    assert!(!first_unconfined());
    assert!(!first_unconfined());
    // Another test of this process may have taken the first one.
    let _ = first;
}
