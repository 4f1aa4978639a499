//! The `# Memory` section of the stable prefix (docs/memory.md, section "Using memory"): global entries,
//! then the project's, each with its id, capped at `memory.max_bytes` with
//! the newest kept and a visible note saying how many older ones were left
//! out.

use eonyx_core::SystemPrompt;
use eonyx_core::memory::{MemoryEntry, MemoryScope};

/// Heading of the memory section.
pub const MEMORY_HEADING: &str = "# Memory";

/// The rendered section and what went into it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemorySection {
    /// The section (starting with [`MEMORY_HEADING`]); empty when there is
    /// nothing to show.
    pub text: String,
    /// Entries shown.
    pub shown: usize,
    /// Older entries left out by the cap.
    pub omitted: usize,
    /// Bytes of the entry lines shown (what `max_bytes` caps).
    pub entry_bytes: u64,
}

impl MemorySection {
    /// The section as it is when memory is turned off: a short note, so
    /// the model knows why there is no memory tool.
    pub fn disabled() -> Self {
        Self {
            text: format!(
                "{MEMORY_HEADING}\n\nMemory is off (memory.enabled = false): there is no memory tool."
            ),
            ..Self::default()
        }
    }

    /// A section that could not be read: says so instead of going silent.
    pub fn unreadable(reason: &str) -> Self {
        Self {
            text: format!("{MEMORY_HEADING}\n\n[eonyx: memory could not be read: {reason}]"),
            ..Self::default()
        }
    }

    /// Append the section to the stable prefix of `prompt` (after the
    /// context files, before the cache boundary and the date line).
    pub fn append_to(&self, prompt: &mut SystemPrompt) {
        if !self.text.is_empty() {
            prompt.stable.push_str("\n\n");
            prompt.stable.push_str(&self.text);
        }
    }
}

/// One prompt line for an entry: `- [id] text`, or a malformed line as-is.
fn line(e: &MemoryEntry) -> String {
    match &e.id {
        Some(id) => format!("- [{id}] {}", e.text),
        None => e.text.clone(),
    }
}

/// The entries `max_bytes` leaves out of the section (oldest first), so
/// that accepting an entry can say what it pushed out.
pub fn memory_left_out(entries: &[MemoryEntry], max_bytes: u64) -> Vec<MemoryEntry> {
    let lines: Vec<String> = entries.iter().map(line).collect();
    let (keep, _) = kept(entries, &lines, max_bytes);
    entries
        .iter()
        .zip(keep)
        .filter(|(_, k)| !k)
        .map(|(e, _)| e.clone())
        .collect()
}

/// Which entries fit in `max_bytes`, newest first (see
/// [`memory_section`]), and the bytes they take.
fn kept(entries: &[MemoryEntry], lines: &[String], max_bytes: u64) -> (Vec<bool>, u64) {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    // Newest first.
    order.sort_by(|&a, &b| {
        let key = |i: usize| {
            let e = &entries[i];
            (e.created.clone().unwrap_or_default(), e.scope, i)
        };
        key(b).cmp(&key(a))
    });
    let mut keep = vec![false; entries.len()];
    let mut used: u64 = 0;
    for i in order {
        let len = lines[i].len() as u64 + 1;
        if used + len > max_bytes {
            break;
        }
        used += len;
        keep[i] = true;
    }
    (keep, used)
}

/// Render `entries` (global and project, in file order: oldest first within
/// each file) into the `# Memory` section. Past `max_bytes` of entry lines
/// the newest are kept: newer date first, and on the same date the later
/// line, project over global; malformed lines, which have no date, count as
/// oldest.
pub fn memory_section(entries: &[MemoryEntry], max_bytes: u64) -> MemorySection {
    if entries.is_empty() {
        return MemorySection::default();
    }
    let lines: Vec<String> = entries.iter().map(line).collect();
    let (keep, used) = kept(entries, &lines, max_bytes);
    let shown = keep.iter().filter(|k| **k).count();
    let omitted = entries.len() - shown;

    let mut text = String::from(MEMORY_HEADING);
    for (scope, title) in [
        (MemoryScope::Global, "## Global"),
        (MemoryScope::Project, "## Project"),
    ] {
        let mut any = false;
        for (i, e) in entries.iter().enumerate() {
            if e.scope != scope || !keep[i] {
                continue;
            }
            if !any {
                text.push_str("\n\n");
                text.push_str(title);
                text.push('\n');
                any = true;
            }
            text.push('\n');
            text.push_str(&lines[i]);
        }
    }
    if omitted > 0 {
        text.push_str(&format!(
            "\n\n[eonyx: {omitted} older memory entr{} left out (memory.max_bytes = {max_bytes}); `eonyx memory` lists all]",
            if omitted == 1 { "y" } else { "ies" }
        ));
    }
    MemorySection {
        text,
        shown,
        omitted,
        entry_bytes: used,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, scope: MemoryScope, date: &str, text: &str) -> MemoryEntry {
        MemoryEntry {
            id: Some(id.into()),
            scope,
            text: text.into(),
            created: Some(date.into()),
            session: Some("cli".into()),
        }
    }

    #[test]
    fn global_then_project_with_ids_and_malformed_lines_as_is() {
        let entries = vec![
            entry(
                "aaaaaa",
                MemoryScope::Global,
                "2026-01-01",
                "Answer briefly.",
            ),
            entry(
                "bbbbbb",
                MemoryScope::Project,
                "2026-01-02",
                "Staging is read-only.",
            ),
            MemoryEntry {
                id: None,
                scope: MemoryScope::Project,
                text: "written by hand".into(),
                created: None,
                session: None,
            },
        ];
        let s = memory_section(&entries, 8192);
        assert_eq!(
            s.text,
            "# Memory\n\n## Global\n\n- [aaaaaa] Answer briefly.\n\n## Project\n\n- [bbbbbb] Staging is read-only.\nwritten by hand"
        );
        assert_eq!((s.shown, s.omitted), (3, 0));
        assert_eq!(memory_section(&[], 8192), MemorySection::default());
    }

    #[test]
    fn the_cap_keeps_the_newest_and_says_how_many_were_left_out() {
        let entries: Vec<_> = (0..10)
            .map(|i| {
                let scope = if i % 2 == 0 {
                    MemoryScope::Project
                } else {
                    MemoryScope::Global
                };
                entry(
                    &format!("id{i:04}"),
                    scope,
                    &format!("2026-01-{:02}", i + 1),
                    &format!("entry {i}"),
                )
            })
            .collect();
        // Each line is "- [id0000] entry N" (18 bytes) plus a newline.
        let s = memory_section(&entries, 19 * 3 + 5);
        assert_eq!((s.shown, s.omitted), (3, 7));
        assert!(
            s.text.contains("entry 9") && s.text.contains("entry 8") && s.text.contains("entry 7")
        );
        assert!(!s.text.contains("entry 6"));
        assert!(s.text.ends_with(
            "[eonyx: 7 older memory entries left out (memory.max_bytes = 62); `eonyx memory` lists all]"
        ));
        assert!(s.entry_bytes <= 62);
    }
}
