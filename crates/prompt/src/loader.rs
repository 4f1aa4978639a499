//! Context-file discovery (docs/prompt.md#context-files) and the stable prefix built from it.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::io;

use camino::{Utf8Path, Utf8PathBuf};
use eonyx_core::config::ContextConfig;
use eonyx_core::paths::Project;

use crate::reader::{ContextReader, FileContent, FsReader};

/// Name of the instructions file looked for in every directory.
pub const AGENTS_FILE: &str = "AGENTS.md";
/// Suffix of the extra context files (`*.context.md`).
pub const CONTEXT_SUFFIX: &str = ".context.md";

/// Characters per token for the per-file estimates shown to the user.
const CHARS_PER_TOKEN: f64 = eonyx_core::tokens::DEFAULT_CHARS_PER_TOKEN;

/// One context file that made it into the prompt (possibly truncated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFileInfo {
    /// Where the file is.
    pub path: Utf8PathBuf,
    /// How it is named to the user: relative to the project root, absolute
    /// when it lies above the root; the global file by its full path.
    pub display: String,
    /// Size of the file on disk.
    pub bytes: u64,
    /// Bytes of its text that are in the prompt.
    pub included_bytes: u64,
    /// Estimated tokens of the included text (4 characters per token).
    pub tokens: u64,
    /// Whether a cap cut some or all of it.
    pub truncated: bool,
    /// The global `<config dir>/AGENTS.md`.
    pub global: bool,
}

/// The result of one [`ContextLoader::load`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Files in prompt order: global first, then outermost to nearest.
    pub files: Vec<ContextFileInfo>,
    /// Things the user should hear about on stderr: truncations, non-UTF-8
    /// files, unreadable files and directories.
    pub warnings: Vec<String>,
    /// Display paths of files added, changed or removed since the previous
    /// load of the same loader; empty on the first load.
    pub changed: Vec<String>,
    /// Base instructions followed by every context section.
    pub stable_prefix: String,
}

/// Finds, reads and caps the context files of one working directory.
///
/// Keep one per session and call [`load`](Self::load) before each user
/// turn: files are re-read every time, and [`Loaded::changed`] names those
/// that differ from the previous load.
pub struct ContextLoader {
    cwd: Utf8PathBuf,
    project: Project,
    config_dir: Utf8PathBuf,
    caps: ContextConfig,
    reader: Box<dyn ContextReader>,
    previous: Option<BTreeMap<String, u64>>,
}

impl std::fmt::Debug for ContextLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextLoader")
            .field("cwd", &self.cwd)
            .field("project", &self.project)
            .field("config_dir", &self.config_dir)
            .field("caps", &self.caps)
            .finish_non_exhaustive()
    }
}

/// A file found by the walk, before reading.
struct Candidate {
    path: Utf8PathBuf,
    display: String,
    global: bool,
}

/// A file read and capped per file, before the total cap.
struct ReadFile {
    candidate: Candidate,
    size: u64,
    text: String,
    /// The per-file cap cut it.
    file_cut: bool,
    fingerprint: u64,
}

impl ContextLoader {
    /// A loader for `cwd`, whose project (from
    /// [`eonyx_core::paths::find_project`]) gives the directories to search;
    /// `config_dir` holds the global `AGENTS.md`.
    pub fn new(
        cwd: &Utf8Path,
        project: &Project,
        config_dir: &Utf8Path,
        caps: ContextConfig,
    ) -> Self {
        Self {
            cwd: cwd.to_path_buf(),
            project: project.clone(),
            config_dir: config_dir.to_path_buf(),
            caps,
            reader: Box::new(FsReader),
            previous: None,
        }
    }

    /// Read files through `reader` instead of the real filesystem.
    pub fn with_reader(mut self, reader: impl ContextReader + 'static) -> Self {
        self.reader = Box::new(reader);
        self
    }

    pub fn cwd(&self) -> &Utf8Path {
        &self.cwd
    }

    pub fn project(&self) -> &Project {
        &self.project
    }

    /// Re-read every context file and assemble the stable prefix.
    pub fn load(&mut self) -> Loaded {
        let mut warnings = Vec::new();
        let candidates = self.discover(&mut warnings);
        let files: Vec<ReadFile> = candidates
            .into_iter()
            .filter_map(|c| self.read(c, &mut warnings))
            .collect();

        let fingerprints: BTreeMap<String, u64> = files
            .iter()
            .map(|f| (f.candidate.display.clone(), f.fingerprint))
            .collect();
        let changed = match &self.previous {
            None => Vec::new(),
            Some(prev) => {
                let mut changed: Vec<String> = files
                    .iter()
                    .filter(|f| prev.get(&f.candidate.display) != Some(&f.fingerprint))
                    .map(|f| f.candidate.display.clone())
                    .collect();
                changed.extend(
                    prev.keys()
                        .filter(|k| !fingerprints.contains_key(*k))
                        .cloned(),
                );
                changed
            }
        };
        self.previous = Some(fingerprints);

        let (infos, stable_prefix) = self.assemble(files, &mut warnings);
        Loaded {
            files: infos,
            warnings,
            changed,
            stable_prefix,
        }
    }

    /// The global file, then for each directory outermost first:
    /// `AGENTS.md`, then `*.context.md` sorted by name.
    fn discover(&self, warnings: &mut Vec<String>) -> Vec<Candidate> {
        let global = self.config_dir.join(AGENTS_FILE);
        let mut out = vec![Candidate {
            display: global.to_string(),
            path: global.clone(),
            global: true,
        }];
        for dir in &self.project.dirs {
            let names = match self.reader.list_dir(dir) {
                Ok(names) => names,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => {
                    warnings.push(format!(
                        "cannot read directory {dir}: {e}; its context files are skipped"
                    ));
                    continue;
                }
            };
            let mut extra: Vec<&String> = names
                .iter()
                .filter(|n| n.len() > CONTEXT_SUFFIX.len() && n.ends_with(CONTEXT_SUFFIX))
                .collect();
            extra.sort();
            let agents = names.iter().find(|n| *n == AGENTS_FILE);
            for name in agents.into_iter().chain(extra) {
                let path = dir.join(name);
                if path == global {
                    continue;
                }
                out.push(Candidate {
                    display: self.display(&path),
                    path,
                    global: false,
                });
            }
        }
        out
    }

    /// Relative to the project root; absolute when above it.
    fn display(&self, path: &Utf8Path) -> String {
        match path.strip_prefix(&self.project.root) {
            Ok(rel) => rel.to_string(),
            Err(_) => path.to_string(),
        }
    }

    /// Read one file, apply the per-file cap on a character boundary and
    /// decode it. `None` when it is missing, empty or unreadable.
    fn read(&self, candidate: Candidate, warnings: &mut Vec<String>) -> Option<ReadFile> {
        let cap = self.caps.max_file_bytes;
        // Three bytes past the cap show whether a character straddles it.
        let content = match self
            .reader
            .read_file(&candidate.path, cap.saturating_add(3))
        {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => {
                warnings.push(format!(
                    "skipped context file {}: cannot read it: {e}",
                    candidate.display
                ));
                return None;
            }
        };
        let FileContent { bytes, size } = content;
        let fingerprint = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            size.hash(&mut h);
            bytes.hash(&mut h);
            h.finish()
        };
        let file_cut = size > cap;
        let keep = if file_cut {
            floor_boundary_bytes(&bytes, usize::try_from(cap).unwrap_or(usize::MAX))
        } else {
            bytes.len()
        };
        let kept = &bytes[..keep.min(bytes.len())];
        let text = match std::str::from_utf8(kept) {
            Ok(s) => s.to_owned(),
            Err(_) => {
                warnings.push(format!(
                    "context file {} is not valid UTF-8; invalid bytes were replaced with U+FFFD",
                    candidate.display
                ));
                String::from_utf8_lossy(kept).into_owned()
            }
        };
        let text = text.trim_end().to_owned();
        if text.trim_start().is_empty() && !file_cut {
            return None;
        }
        if file_cut {
            warnings.push(format!(
                "context file {} is {size} bytes; only the first {} are included (context.max_file_bytes = {cap})",
                candidate.display,
                kept.len()
            ));
        }
        Some(ReadFile {
            candidate,
            size,
            text,
            file_cut,
            fingerprint,
        })
    }

    /// Apply the total cap (nearest files kept whole first) and render the
    /// stable prefix.
    fn assemble(
        &self,
        files: Vec<ReadFile>,
        warnings: &mut Vec<String>,
    ) -> (Vec<ContextFileInfo>, String) {
        let total_cap = usize::try_from(self.caps.max_total_bytes).unwrap_or(usize::MAX);
        let mut remaining = total_cap;
        let mut shown = vec![0usize; files.len()];
        for (i, f) in files.iter().enumerate().rev() {
            let take = floor_boundary_str(&f.text, remaining.min(f.text.len()));
            shown[i] = take;
            remaining -= take;
        }

        let mut prefix = String::from(crate::base_instructions());
        let mut infos = Vec::with_capacity(files.len());
        for (f, &take) in files.iter().zip(&shown) {
            let total_cut = take < f.text.len();
            if total_cut {
                warnings.push(format!(
                    "context file {}: {} of its {} bytes were cut to keep all context within context.max_total_bytes = {} (nearer files are kept whole first)",
                    f.candidate.display,
                    f.text.len() - take,
                    f.text.len(),
                    self.caps.max_total_bytes
                ));
            }
            let body = f.text[..take].trim_end();
            prefix.push_str("\n\n");
            if f.candidate.global {
                prefix.push_str("# Global context: AGENTS.md");
            } else {
                prefix.push_str("# Project context: ");
                prefix.push_str(&f.candidate.display);
            }
            if !body.is_empty() {
                prefix.push_str("\n\n");
                prefix.push_str(body);
            }
            if f.file_cut || total_cut {
                let mut reasons = Vec::new();
                if f.file_cut {
                    reasons.push(format!(
                        "context.max_file_bytes = {}",
                        self.caps.max_file_bytes
                    ));
                }
                if total_cut {
                    reasons.push(format!(
                        "context.max_total_bytes = {}",
                        self.caps.max_total_bytes
                    ));
                }
                prefix.push_str(&format!(
                    "\n\n[eonyx: {} truncated: {} of its {} bytes shown, {} bytes cut ({})]",
                    f.candidate.display,
                    body.len(),
                    f.size,
                    f.size.saturating_sub(body.len() as u64),
                    reasons.join(", ")
                ));
            }
            infos.push(ContextFileInfo {
                path: f.candidate.path.clone(),
                display: f.candidate.display.clone(),
                bytes: f.size,
                included_bytes: body.len() as u64,
                tokens: eonyx_core::tokens::estimate_text(body, CHARS_PER_TOKEN),
                truncated: f.file_cut || total_cut,
                global: f.candidate.global,
            });
        }
        (infos, prefix)
    }
}

/// The largest cut `<= at` that does not split a UTF-8 sequence (invalid
/// bytes count as boundaries).
fn floor_boundary_bytes(bytes: &[u8], at: usize) -> usize {
    if at >= bytes.len() {
        return bytes.len();
    }
    let mut cut = at;
    // At most three continuation bytes follow a lead byte.
    while cut > 0 && at - cut < 3 && (bytes[cut] & 0b1100_0000) == 0b1000_0000 {
        cut -= 1;
    }
    if (bytes[cut] & 0b1100_0000) == 0b1000_0000 {
        // Not a valid sequence anyway: any cut is as good as another.
        at
    } else {
        cut
    }
}

/// The largest char boundary of `s` that is `<= at`.
fn floor_boundary_str(s: &str, at: usize) -> usize {
    let mut cut = at.min(s.len());
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}
