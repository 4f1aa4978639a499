//! Assembling the system prompt for a working directory 30 levels deep with
//! 30 context files (one `AGENTS.md` per level), against the cost of just
//! reading those files. Goal: under 5 ms.
//!
//! `EONYX_BENCH_SCALE` (default 1) multiplies the number of timed runs.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use camino::Utf8PathBuf;
use eonyx_core::config::ContextConfig;
use eonyx_core::paths::find_project;
use eonyx_prompt::{ContextLoader, system_prompt};

const LEVELS: usize = 30;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn human(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.3} ms")
    }
}

fn main() {
    let scale: usize = std::env::var("EONYX_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1);
    let runs = 200 * scale;

    let tmp = tempfile::tempdir().expect("temp dir");
    let root = Utf8PathBuf::from_path_buf(tmp.path().canonicalize().unwrap()).unwrap();
    let config_dir = root.join("config");
    std::fs::create_dir_all(&config_dir).unwrap();
    let project = root.join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("eonyx.json"), "{}").unwrap();

    // One AGENTS.md in each of the 30 directories from the project root
    // down to the working directory; about 2 KiB of Markdown each.
    let mut dir = project.clone();
    let mut files = Vec::new();
    for level in 0..LEVELS {
        if level > 0 {
            dir = dir.join(format!("level{level:02}"));
            std::fs::create_dir_all(&dir).unwrap();
        }
        let mut text = format!("# Level {level}\n\n");
        while text.len() < 2048 {
            text.push_str("- Keep functions small; run the tests before committing.\n");
        }
        let file = dir.join("AGENTS.md");
        std::fs::write(&file, text).unwrap();
        files.push(file);
    }
    let cwd = dir;

    let assemble = || {
        let project = find_project(&cwd);
        let mut loader = ContextLoader::new(&cwd, &project, &config_dir, ContextConfig::default());
        let loaded = loader.load();
        assert_eq!(loaded.files.len(), LEVELS);
        system_prompt(&loaded, "2026-07-05", None).text()
    };
    let read_only = || {
        let mut n = 0;
        for f in &files {
            n += std::fs::read(f).unwrap().len();
        }
        n
    };

    // Warm the page cache and the allocator.
    for _ in 0..10 {
        std::hint::black_box(assemble());
        std::hint::black_box(read_only());
    }
    let mut ours = Vec::with_capacity(runs);
    let mut base = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        std::hint::black_box(assemble());
        ours.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(read_only());
        base.push(t.elapsed());
    }
    let (ours, base) = (median(ours), median(base));
    let ratio = ours.as_secs_f64() / base.as_secs_f64().max(1e-9);
    println!(
        "BENCH|prompt assemble, 30 levels, 30 context files (vs reading them)|{}|{}|{ratio:.2}x|< 5 ms",
        human(ours),
        human(base)
    );
}
