//! `eonyx completions SHELL` (clap_complete) and the hidden `eonyx manpage`
//! (clap_mangen roff), both generated from the one clap definition in
//! `cli.rs`, so they never drift from the real command line.

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};
use crate::exit::Status;
use crate::printer::Printer;

/// Completion script for `shell`, as bytes.
pub fn script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "eonyx", &mut buf);
    buf
}

/// The man page, as roff.
pub fn man_page() -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut buf)?;
    Ok(buf)
}

pub fn run(printer: &mut Printer, args: &CompletionsArgs) -> anyhow::Result<Status> {
    printer.out_bytes(&script(args.shell))?;
    Ok(Status::Success)
}

pub fn manpage(printer: &mut Printer) -> anyhow::Result<Status> {
    printer.out_bytes(&man_page()?)?;
    Ok(Status::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_completion_offers_the_subcommands() {
        let s = String::from_utf8(script(clap_complete::Shell::Bash)).unwrap();
        assert!(s.contains("_eonyx()"), "defines the bash function");
        for sub in [
            "run",
            "sessions",
            "context",
            "compact",
            "config",
            "completions",
        ] {
            assert!(s.contains(sub), "bash completion lacks {sub}");
        }
    }

    #[test]
    fn every_shell_gets_a_script() {
        use clap::ValueEnum;
        for shell in clap_complete::Shell::value_variants() {
            assert!(!script(*shell).is_empty(), "{shell} script is empty");
        }
    }

    #[test]
    fn man_page_is_roff_with_name_and_commands() {
        let man = String::from_utf8(man_page().unwrap()).unwrap();
        assert!(
            man.contains(".TH eonyx 1"),
            "{}",
            &man[..200.min(man.len())]
        );
        assert!(man.contains(".SH NAME"));
        assert!(man.contains("sessions"));
        assert!(man.contains(env!("EONYX_VERSION")));
    }
}
