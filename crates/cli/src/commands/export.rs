//! Exporting a session (docs/sessions.md, section "Export and cost"): `eonyx
//! sessions export` and the REPL's `/export` both come here, and the
//! rendering is `eonyx_export`'s.

use anyhow::Context as _;
use camino::Utf8Path;
use eonyx_config::Config;
use eonyx_core::SessionId;
use eonyx_core::fs::{AtomicWrite, write_atomic};
use eonyx_export::{ExportError, Format, Options, Release};
use eonyx_store::Store;

use crate::printer::Printer;

/// `--format NAME` as a format, or a usage error listing them.
pub fn parse_format(name: &str) -> anyhow::Result<Format> {
    Format::parse(name).ok_or_else(|| {
        crate::exit::usage(format!(
            "unknown export format {name:?}; use one of: {}",
            Format::NAMES.join(", ")
        ))
    })
}

/// Write session `id` as `format` to `output` (atomically) or stdout.
/// The chart and the cost come from `config`; what could not be read is
/// said on stderr. Without a config the chart has no window or trigger
/// and no cost is shown. `release`: [`Release::AtExit`] when the process
/// ends right after (`sessions export`), [`Release::Free`] in the REPL.
pub fn export(
    printer: &mut Printer,
    store: &Store,
    config: Option<&Config>,
    id: &SessionId,
    format: Format,
    output: Option<&Utf8Path>,
    release: Release,
) -> anyhow::Result<()> {
    let opts = |h: &eonyx_core::SessionHeader| {
        config.map_or_else(Options::default, |c| {
            eonyx_agent::cost::export_options(store, c, h)
        })
    };
    let mut bytes = Vec::new();
    let result = match output {
        Some(_) => eonyx_export::export(store, id, format, &opts, &mut bytes, release),
        None => eonyx_export::export(
            store,
            id,
            format,
            &opts,
            &mut printer.stdout_writer(),
            release,
        ),
    };
    let skipped = result.map_err(|e| match e {
        ExportError::Store(s) if s.is_not_found() => crate::exit::usage(format!(
            "no session {id}; `eonyx sessions --all` lists the sessions there are"
        )),
        e => anyhow::Error::new(e),
    })?;
    if let Some(path) = output {
        write_atomic(
            path,
            &bytes,
            AtomicWrite {
                durable: true,
                private: true,
            },
        )
        .with_context(|| format!("could not write the export of {id} to {path}"))?;
    }
    skipped_warnings(printer, id, &skipped);
    if let Some(path) = output {
        printer.info(&format!(
            "exported session {id} as {} to {path}",
            format.as_str()
        ));
    }
    Ok(())
}

/// The warnings for what an export could not read.
fn skipped_warnings(printer: &Printer, id: &SessionId, skipped: &eonyx_export::Skipped) {
    for w in eonyx_agent::commands::text::skipped(id, skipped) {
        printer.warn(&w);
    }
}
