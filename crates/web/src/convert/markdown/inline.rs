//! Inline text: what is owed before content (breaks, prefixes, markers,
//! inline openings), words, images and inline code.

use super::{
    Container, Kind, MAX_PREFIX, Marker, Writer, is_space, longest_run, push_href,
    starts_like_markdown,
};

impl Writer<'_> {
    pub(super) fn resolve(&self, href: &str) -> String {
        match self.base {
            Some(base) if !href.starts_with('#') => base
                .join(href)
                .map_or_else(|_| href.to_owned(), String::from),
            _ => href.to_owned(),
        }
    }

    pub(super) fn request_break(&mut self, n: u8) {
        if self.in_cell() {
            self.space = true;
        } else if self.marker.is_none() {
            self.breaks = self.breaks.max(n);
        }
    }

    pub(super) fn line_break(&mut self) {
        if let Some(pre) = &mut self.pre {
            pre.buf.push('\n');
        } else if let Some(code) = &mut self.code {
            code.push(' ');
        } else {
            self.request_break(1);
        }
    }

    pub(super) fn set_marker(&mut self, text: String, upto: usize) {
        if self.in_cell() {
            // A cell is one line: no list or heading marks in it.
            self.space = true;
            return;
        }
        self.marker = Some(match self.marker.take() {
            Some(mut m) => {
                m.text.push_str(&text);
                m
            }
            None => Marker { text, upto },
        });
    }

    pub(super) fn push_prefix(&mut self, containers: std::ops::Range<usize>) {
        let end = containers.end.min(MAX_PREFIX);
        for c in self.containers.get(containers.start..end).unwrap_or(&[]) {
            match c {
                Container::Quote(_) => self.out.push_str("> "),
                Container::Indent(_, n) => {
                    for _ in 0..*n {
                        self.out.push(' ');
                    }
                }
            }
        }
    }

    /// Writes what is owed before content: newlines and the line's
    /// prefix and marker, or a space; then inline openings.
    pub(super) fn flush(&mut self) {
        if self.breaks > 0 || self.marker.is_some() {
            if !self.out.is_empty() {
                if self.breaks > 1 {
                    self.out.push('\n');
                    let shared = self
                        .containers
                        .iter()
                        .zip(&self.last_line)
                        .take_while(|(a, b)| a == b)
                        .count();
                    let start = self.out.len();
                    self.push_prefix(0..shared);
                    let trimmed = self.out[start..].trim_end().len();
                    self.out.truncate(start + trimmed);
                }
                self.out.push('\n');
            }
            match self.marker.take() {
                Some(m) => {
                    self.push_prefix(0..m.upto);
                    self.out.push_str(&m.text);
                    self.line_start = false;
                }
                None => {
                    self.push_prefix(0..self.containers.len());
                    self.line_start = true;
                }
            }
            self.breaks = 0;
            self.space = false;
            self.last_line.clear();
            let depth = self.containers.len().min(MAX_PREFIX);
            self.last_line.extend_from_slice(&self.containers[..depth]);
        } else if self.space {
            if !self.out.is_empty() && !self.out.ends_with([' ', '\n']) {
                self.out.push(' ');
            }
            self.space = false;
        }
        if self.unopened > 0 {
            for o in &mut self.stack {
                if !o.opened && !o.silent {
                    o.opened = true;
                    self.out.push_str(match o.kind {
                        Kind::Delim(d) => d,
                        _ => "[",
                    });
                    self.line_start = false;
                }
            }
            self.unopened = 0;
        }
    }

    /// Writes `text` as it is, after what is owed.
    pub(super) fn content(&mut self, text: &str) {
        self.flush();
        self.out.push_str(text);
        self.line_start = false;
    }

    pub(super) fn text(&mut self, text: &str) {
        if self.skip.is_some() {
            return;
        }
        if let Some(pre) = &mut self.pre {
            let text = if pre.first {
                pre.first = false;
                text.strip_prefix('\n').unwrap_or(text)
            } else {
                text
            };
            pre.buf.push_str(text);
            return;
        }
        if let Some(code) = &mut self.code {
            for (i, word) in text.split(is_space).enumerate() {
                if i > 0 && !code.ends_with(' ') {
                    code.push(' ');
                }
                code.push_str(word);
            }
            return;
        }
        for (i, word) in text.split(is_space).enumerate() {
            if i > 0 {
                self.space = true;
            }
            if !word.is_empty() {
                self.word(word);
            }
        }
    }

    pub(super) fn word(&mut self, word: &str) {
        self.flush();
        if self.line_start && starts_like_markdown(word) {
            self.out.push('\\');
        }
        if self.in_cell() && word.contains('|') {
            self.out.push_str(&word.replace('|', "\\|"));
        } else {
            self.out.push_str(word);
        }
        self.line_start = false;
    }

    pub(super) fn image(&mut self) {
        let src = self.tag.src.trim();
        let alt = self
            .tag
            .alt
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if self.pre.is_some() || self.code.is_some() {
            return;
        }
        if src.is_empty() || src.starts_with("data:") {
            if !alt.is_empty() {
                self.text(&alt);
            }
            return;
        }
        let src = self.resolve(src);
        self.flush();
        self.out.push_str("![");
        self.out.push_str(&alt.replace(['[', ']'], ""));
        self.out.push_str("](");
        push_href(&mut self.out, &src);
        self.out.push(')');
        self.line_start = false;
    }

    pub(super) fn end_code(&mut self) {
        let Some(code) = self.code.take() else {
            return;
        };
        let code = code.trim();
        if code.is_empty() {
            return;
        }
        let ticks = "`".repeat(longest_run(code, '`') + 1);
        let pad = if code.starts_with('`') || code.ends_with('`') {
            " "
        } else {
            ""
        };
        self.flush();
        let cell = self.in_cell();
        self.out.push_str(&ticks);
        self.out.push_str(pad);
        if cell && code.contains('|') {
            self.out.push_str(&code.replace('|', "\\|"));
        } else {
            self.out.push_str(code);
        }
        self.out.push_str(pad);
        self.out.push_str(&ticks);
        self.line_start = false;
    }
}
