//! `cargo xtask ci [STEP...]`: what `.ci/run` calls.

use std::time::Instant;

use anyhow::{Result, bail};

use crate::util::{self, cargo, human_duration};

/// The steps, in the order they run.
pub const STEPS: &[(&str, &str)] = &[
    ("fmt", "cargo fmt --all -- --check"),
    ("print", "tidy: nothing prints outside the cli's Printer"),
    (
        "cites",
        "tidy: every cited doc section exists, no SPEC citations",
    ),
    ("deps", "tidy: no unused dependencies (cargo machete)"),
    (
        "cycles",
        "tidy: no two modules of one crate import each other",
    ),
    (
        "commands",
        "tidy: frontends name no slash command, run no goal loop, hand on no goal",
    ),
    (
        "events",
        "tidy: no function of the agent takes an event callback",
    ),
    (
        "layers",
        "tidy: ARCHITECTURE.md draws exactly the crate arrows of the Cargo.toml files",
    ),
    ("sizes", "tidy: no source file over 600 lines"),
    (
        "clippy",
        "cargo clippy --workspace --all-targets -- -D warnings",
    ),
    ("test", "cargo test --workspace"),
    (
        "doc",
        "RUSTDOCFLAGS='-D warnings' cargo doc --workspace --no-deps",
    ),
    (
        "readme",
        "README's commands and test command, docs/config.md's config keys match the code",
    ),
];

pub fn run(args: &[String]) -> Result<()> {
    let selected: Vec<&str> = if args.is_empty() {
        STEPS.iter().map(|(name, _)| *name).collect()
    } else {
        let mut v = Vec::new();
        for a in args {
            match STEPS.iter().find(|(name, _)| name == a) {
                Some((name, _)) => v.push(*name),
                None => bail!(
                    "unknown ci step `{a}`; steps are {}",
                    STEPS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ),
            }
        }
        v
    };
    let start = Instant::now();
    for (name, what) in STEPS {
        if !selected.contains(name) {
            continue;
        }
        eprintln!("==> ci step `{name}`: {what}");
        let step_start = Instant::now();
        if let Err(err) = step(name) {
            eprintln!(
                "==> ci step `{name}` FAILED after {}",
                human_duration(step_start.elapsed())
            );
            return Err(err.context(format!("ci step `{name}` failed ({what})")));
        }
        eprintln!(
            "==> ci step `{name}` ok ({})",
            human_duration(step_start.elapsed())
        );
    }
    eprintln!(
        "==> ci passed: {} in {}",
        selected.join(", "),
        human_duration(start.elapsed())
    );
    Ok(())
}

fn step(name: &str) -> Result<()> {
    match name {
        "fmt" => util::run(cargo().args(["fmt", "--all", "--", "--check"])),
        "print" => crate::tidy::print_step(&util::workspace_root()),
        "cites" => crate::tidy::cites_step(&util::workspace_root()),
        "deps" => crate::tidy::deps_step(&util::workspace_root()),
        "cycles" => crate::tidy::cycles_step(&util::workspace_root()),
        "commands" => crate::tidy::commands_step(&util::workspace_root()),
        "events" => crate::tidy::events_step(&util::workspace_root()),
        "layers" => crate::tidy::layers_step(&util::workspace_root()),
        "sizes" => crate::tidy::sizes_step(&util::workspace_root()),
        "clippy" => util::run(cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ])),
        // README's test command, verbatim (the `readme` step checks README gives it).
        "test" => util::run(cargo().args(crate::docs::TEST_COMMAND.iter().skip(1))),
        "doc" => util::run(cargo().env("RUSTDOCFLAGS", "-D warnings").args([
            "doc",
            "--workspace",
            "--no-deps",
        ])),
        "readme" => {
            util::run(cargo().args(["build", "-p", "eonyx-cli", "--bin", "eonyx"]))?;
            let bin = util::target_dir()
                .join("debug")
                .join(format!("eonyx{}", std::env::consts::EXE_SUFFIX));
            let root = util::workspace_root();
            crate::docs::check(
                &root.join("README.md"),
                &root.join("docs").join("config.md"),
                &bin,
            )
        }
        other => bail!("unknown ci step `{other}`"),
    }
}
