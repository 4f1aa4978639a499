//! A `SKILL.md`'s YAML front matter: splitting it from the body and
//! checking `name` and `description`; reading a skill's body.

use std::io;

use serde::Deserialize;

use super::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, MAX_SKILL_FILE_BYTES, Skill};
use crate::reader::ContextReader;

#[derive(Debug, Default, Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
}

/// Split a `SKILL.md` into its YAML front matter and body. `None` when it
/// does not start with a `---` line. The front matter ends at the next
/// `---` (or `...`) line; `Some((yaml, None))` when it never does.
pub fn split_front_matter(text: &str) -> Option<(&str, Option<&str>)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    if first.trim_end() != "---" {
        return None;
    }
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            return Some((&rest[..at], Some(&rest[at + line.len()..])));
        }
        at += line.len();
    }
    Some((rest, None))
}

/// The Markdown body of a `SKILL.md` (everything after the front matter),
/// trimmed; the whole text when it has no front matter.
pub fn body_of(text: &str) -> &str {
    match split_front_matter(text) {
        Some((_, Some(body))) => body.trim(),
        _ => text.trim(),
    }
}

/// Check a `SKILL.md` found in directory `dir_name`; the description with
/// whitespace folded, or what is wrong.
pub fn validate(text: &str, dir_name: &str) -> Result<String, String> {
    let Some((yaml, body)) = split_front_matter(text) else {
        return Err(
            "it does not start with YAML front matter (a `---` line, then `name:` and `description:`, then `---`)"
                .to_owned(),
        );
    };
    if body.is_none() {
        return Err(
            "its YAML front matter has no closing `---` line (within the first 64 KiB)".to_owned(),
        );
    }
    let fm: FrontMatter = if yaml.trim().is_empty() {
        FrontMatter::default()
    } else {
        serde_yaml_ng::from_str(yaml).map_err(|e| format!("invalid YAML front matter: {e}"))?
    };
    let Some(name) = fm.name.filter(|n| !n.trim().is_empty()) else {
        return Err(format!(
            "the front matter has no `name` (it must be `name: {dir_name}`)"
        ));
    };
    if !valid_name(&name) {
        return Err(format!(
            "`name: {name}` is not a valid skill name: use 1 to {MAX_NAME_CHARS} lowercase letters, digits and hyphens, not starting or ending with a hyphen and without `--`"
        ));
    }
    if name != dir_name {
        return Err(format!(
            "`name: {name}` does not match its directory `{dir_name}`; they must be the same"
        ));
    }
    let description = fm
        .description
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    if description.is_empty() {
        return Err(
            "the front matter has no `description` (it tells the model when to use the skill)"
                .to_owned(),
        );
    }
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "its `description` is {chars} characters; at most {MAX_DESCRIPTION_CHARS} are allowed"
        ));
    }
    Ok(description)
}

/// Lowercase ASCII letters, digits and single inner hyphens, 1 to 64.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// Read a skill's `SKILL.md` (at most [`MAX_SKILL_FILE_BYTES`]; invalid
/// UTF-8 replaced) and return its body.
pub fn read_body(skill: &Skill, reader: &dyn ContextReader) -> io::Result<String> {
    let content = reader.read_file(&skill.path, MAX_SKILL_FILE_BYTES)?;
    let text = String::from_utf8_lossy(&content.bytes);
    let mut body = body_of(&text).to_owned();
    if content.size > content.bytes.len() as u64 {
        body.push_str(&format!(
            "\n\n[eonyx: {} is {} bytes; only the first {MAX_SKILL_FILE_BYTES} were read]",
            skill.path, content.size
        ));
    }
    Ok(body)
}
