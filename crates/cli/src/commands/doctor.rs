//! `eonyx sessions doctor`: check every session file, repair torn tails.

use eonyx_store::DoctorStatus;
use serde_json::json;

use crate::exit::Status;
use crate::printer::Printer;

pub fn doctor(printer: &mut Printer, json: bool) -> anyhow::Result<Status> {
    let store = super::open_store()?;
    let report = store.doctor()?;
    if json {
        let files: Vec<_> = report
            .files
            .iter()
            .map(|f| {
                let (status, detail) = match &f.status {
                    DoctorStatus::Ok => ("ok", json!(null)),
                    DoctorStatus::Repaired { torn_bytes } => ("repaired", json!(torn_bytes)),
                    DoctorStatus::RemovedEmpty => ("removed_empty", json!(null)),
                    DoctorStatus::InUse { pid } => ("in_use", json!(pid)),
                    DoctorStatus::Unreadable { reason } => ("unreadable", json!(reason)),
                };
                json!({
                    "id": f.id, "path": f.path, "status": status, "detail": detail,
                    "bad_lines": f.bad_lines, "unknown_lines": f.unknown_lines,
                })
            })
            .collect();
        printer.json_pretty(&json!({
            "files": files,
            "ignored": report.ignored,
            "all_readable": report.all_readable(),
        }))?;
    } else {
        for f in &report.files {
            let mut line = format!("{}  ", f.id);
            line.push_str(&match &f.status {
                DoctorStatus::Ok => "ok".to_owned(),
                DoctorStatus::Repaired { torn_bytes } => {
                    format!("repaired torn tail ({torn_bytes} bytes cut)")
                }
                DoctorStatus::RemovedEmpty => {
                    "removed: no complete line (empty session)".to_owned()
                }
                DoctorStatus::InUse { pid } => match pid {
                    Some(p) => format!("in use by process {p}, not checked"),
                    None => "in use by another process, not checked".to_owned(),
                },
                DoctorStatus::Unreadable { reason } => format!("unreadable: {reason}"),
            });
            if f.bad_lines > 0 {
                line.push_str(&format!(", skipped {} bad line(s)", f.bad_lines));
            }
            if f.unknown_lines > 0 {
                line.push_str(&format!(
                    ", skipped {} record(s) of unknown type",
                    f.unknown_lines
                ));
            }
            printer.outln(&line)?;
        }
        for p in &report.ignored {
            printer.outln(&format!("ignored {p} (not a session file)"))?;
        }
    }
    let n = report.files.len();
    if report.all_readable() {
        printer.info(&format!("{n} session file(s) checked; all readable"));
        Ok(Status::Success)
    } else {
        printer.info(&format!(
            "{n} session file(s) checked; some cannot be read (see above)"
        ));
        Ok(Status::Failed)
    }
}
