//! Assembling the system prompt for a working directory 30 levels deep with
//! 30 context files (one `AGENTS.md` per level), against the cost of just
//! reading those files. Goal: under 5 ms.
//!
//! `EONYX_BENCH_SCALE` (default 1) multiplies the number of timed runs.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use camino::Utf8PathBuf;
use eonyx_core::config::ContextConfig;
use eonyx_core::paths::find_project;
use eonyx_prompt::{ContextLoader, system_prompt};
use eonyx_tests::bench::{self, Samples};

const LEVELS: usize = 30;

fn main() {
    let runs = 200 * bench::scale();

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
    // Interleaved, so both see the same machine load.
    let mut ours = Samples::default();
    let mut base = Samples::default();
    for _ in 0..runs {
        std::hint::black_box(ours.time(assemble));
        std::hint::black_box(base.time(read_only));
    }
    let line = bench::Line::timed(
        "prompt assemble, 30 levels, 30 context files (vs reading them)",
        ours.median(),
        base.median(),
        "< 5 ms",
    );
    println!("{line}");
}
