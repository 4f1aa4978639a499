//! Block structure: start and end tags, the stack of open elements, and
//! what closing each kind writes (breaks, list and quote containers, code
//! blocks).

use super::{
    Container, DROPPED, Kind, ListState, MAX_OPEN, Open, Pre, SEARCH, TableState, Writer, kind_of,
    language, longest_run, push_href,
};

impl Writer<'_> {
    pub(super) fn start(&mut self, name: &'static str, self_closing: bool) {
        if let Some((skipped, depth)) = &mut self.skip {
            if *skipped == name && !self_closing {
                *depth += 1;
            }
            return;
        }
        if DROPPED.contains(&name) {
            // `<svg/>` holds nothing; `<script/>` still opens a script.
            let raw = matches!(
                name,
                "script" | "style" | "title" | "textarea" | "noscript" | "iframe"
            );
            if !self_closing || raw {
                self.skip = Some((name, 1));
            }
            return;
        }
        if name == "br" {
            return self.line_break();
        }
        if self.pre.is_some() {
            // Inside a code block only the language is of interest.
            if name == "code"
                && let Some(pre) = &mut self.pre
                && pre.lang.is_empty()
            {
                pre.lang = language(&self.tag.class).unwrap_or_default();
            }
            return;
        }
        match name {
            "hr" => {
                self.close_para();
                self.request_break(2);
                self.content("---");
                self.request_break(2);
                return;
            }
            "img" => return self.image(),
            _ => {}
        }
        let Some(kind) = kind_of(name) else {
            return;
        };
        if self.code.is_some() && kind.inline() {
            return;
        }
        match kind {
            Kind::Para
            | Kind::Block
            | Kind::Heading
            | Kind::List
            | Kind::Quote
            | Kind::Pre
            | Kind::Table => self.close_para(),
            _ => {}
        }
        match kind {
            Kind::Item => self.close_through(&["li"], &["ul", "ol", "menu", "table"]),
            Kind::Term => self.close_through(&["dt", "dd"], &["dl", "table"]),
            Kind::Row => self.close_through(&["tr"], &["table"]),
            Kind::Cell => self.close_through(&["td", "th"], &["tr", "table"]),
            Kind::Link => self.close_through(&["a"], &[]),
            Kind::Heading => {
                self.close_through(&["h1", "h2", "h3", "h4", "h5", "h6"], &["li", "td", "th"]);
            }
            _ => {}
        }
        if self.stack.len() >= MAX_OPEN {
            self.overflow += 1;
            return;
        }
        let mut open = Open {
            name,
            kind,
            opened: true,
            silent: false,
        };
        match kind {
            Kind::Block | Kind::Para => self.request_break(2),
            Kind::Heading => {
                self.request_break(2);
                let level = name.as_bytes().get(1).map_or(1, |b| usize::from(b - b'0'));
                self.set_marker(format!("{} ", "#".repeat(level)), self.containers.len());
            }
            Kind::List => {
                let nested = self.stack.iter().any(|o| o.kind == Kind::Item);
                self.request_break(if nested { 1 } else { 2 });
                let next = if name == "ol" {
                    self.tag
                        .start
                        .trim()
                        .parse::<u64>()
                        .unwrap_or(1)
                        .min(1 << 40)
                } else {
                    1
                };
                self.lists.push(ListState {
                    ordered: name == "ol",
                    next,
                });
            }
            Kind::Item => {
                if self.marker.is_some() {
                    // An item holding only a list: its marker on a line
                    // of its own.
                    self.flush();
                }
                self.request_break(1);
                let marker = match self.lists.last_mut() {
                    Some(list) if list.ordered => {
                        let n = list.next;
                        list.next = list.next.saturating_add(1);
                        format!("{n}. ")
                    }
                    _ => "- ".to_owned(),
                };
                let upto = self.containers.len();
                self.serial = self.serial.wrapping_add(1);
                self.containers
                    .push(Container::Indent(self.serial, marker.len()));
                self.set_marker(marker, upto);
            }
            Kind::Term => {
                self.request_break(1);
                if name == "dd" {
                    self.set_marker(": ".to_owned(), self.containers.len());
                }
            }
            Kind::Quote => {
                self.request_break(2);
                self.serial = self.serial.wrapping_add(1);
                self.containers.push(Container::Quote(self.serial));
            }
            Kind::Pre => {
                self.request_break(2);
                self.pre = Some(Pre {
                    lang: language(&self.tag.class).unwrap_or_default(),
                    buf: String::new(),
                    first: true,
                });
            }
            Kind::Code => self.code = Some(String::new()),
            Kind::Delim(d) => {
                open.silent = self
                    .stack
                    .iter()
                    .any(|o| o.kind == Kind::Delim(d) && !o.silent);
                open.opened = false;
            }
            Kind::Link => {
                let href = self.tag.href.trim();
                open.silent = href.is_empty() || href.starts_with("javascript:");
                open.opened = false;
                let href = self.resolve(href);
                self.hrefs.push(href);
            }
            Kind::Table => {
                self.request_break(2);
                self.tables.push(TableState::default());
            }
            Kind::Row => self.start_row(),
            Kind::Cell => self.start_cell(),
        }
        if !open.opened && !open.silent {
            self.unopened += 1;
        }
        self.stack.push(open);
    }

    pub(super) fn end(&mut self, name: &'static str) {
        if let Some((skipped, depth)) = &mut self.skip {
            if *skipped == name {
                *depth -= 1;
                if *depth == 0 {
                    self.skip = None;
                }
            }
            return;
        }
        if name == "br" {
            // `</br>` is read as `<br>`.
            return self.line_break();
        }
        if self.overflow > 0 && kind_of(name).is_some() {
            self.overflow -= 1;
            return;
        }
        if let Some(i) = self.find(name, &[]) {
            self.pop_to(i);
        }
    }

    /// The index of the nearest open `name` above any of `bounds`.
    pub(super) fn find(&self, name: &str, bounds: &[&str]) -> Option<usize> {
        for (i, o) in self.stack.iter().enumerate().rev().take(SEARCH) {
            if o.name == name {
                return Some(i);
            }
            if bounds.contains(&o.name) {
                return None;
            }
        }
        None
    }

    /// Closes the nearest open element named in `names` (and everything
    /// above it), unless one of `bounds` comes first.
    pub(super) fn close_through(&mut self, names: &[&str], bounds: &[&str]) {
        for (i, o) in self.stack.iter().enumerate().rev().take(SEARCH) {
            if names.contains(&o.name) {
                return self.pop_to(i);
            }
            if bounds.contains(&o.name) {
                return;
            }
        }
    }

    /// A block start closes an open `p` (through inline elements only).
    pub(super) fn close_para(&mut self) {
        for (i, o) in self.stack.iter().enumerate().rev().take(SEARCH) {
            if o.kind == Kind::Para {
                return self.pop_to(i);
            }
            if !o.kind.inline() {
                return;
            }
        }
    }

    pub(super) fn pop_to(&mut self, i: usize) {
        while self.stack.len() > i {
            if let Some(open) = self.stack.pop() {
                self.close(open);
            }
        }
    }

    pub(super) fn close(&mut self, open: Open) {
        match open.kind {
            Kind::Block | Kind::Para | Kind::Heading => {
                if open.kind == Kind::Heading {
                    self.marker = None;
                }
                self.request_break(2);
            }
            Kind::List => {
                self.lists.pop();
                let nested = self.stack.iter().any(|o| o.kind == Kind::Item);
                self.request_break(if nested { 1 } else { 2 });
            }
            Kind::Item => {
                self.containers.pop();
                self.marker = None;
                self.request_break(1);
            }
            Kind::Term => {
                self.marker = None;
                self.request_break(1);
            }
            Kind::Quote => {
                self.containers.pop();
                self.request_break(2);
            }
            Kind::Pre => self.end_pre(),
            Kind::Code => self.end_code(),
            Kind::Delim(d) => {
                if open.silent {
                } else if open.opened {
                    self.out.push_str(d);
                } else {
                    self.unopened -= 1;
                }
            }
            Kind::Link => {
                let href = self.hrefs.pop().unwrap_or_default();
                if open.silent {
                } else if open.opened {
                    self.out.push_str("](");
                    push_href(&mut self.out, &href);
                    self.out.push(')');
                } else {
                    self.unopened -= 1;
                }
            }
            Kind::Table => {
                self.end_row();
                self.tables.pop();
                self.request_break(2);
            }
            Kind::Row => self.end_row(),
            Kind::Cell => self.end_cell(),
        }
    }

    pub(super) fn end_pre(&mut self) {
        let Some(pre) = self.pre.take() else {
            return;
        };
        let code = pre.buf.trim_end();
        if code.trim().is_empty() {
            self.request_break(2);
            return;
        }
        if self.in_cell() {
            // A cell is one line: the block as inline code.
            self.code = Some(code.split_whitespace().collect::<Vec<_>>().join(" "));
            return self.end_code();
        }
        let fence = "`".repeat(longest_run(code, '`').max(2) + 1);
        self.request_break(2);
        self.content(&fence);
        self.out.push_str(&pre.lang);
        for line in code.lines() {
            self.out.push('\n');
            self.push_prefix(0..self.containers.len());
            self.out.push_str(line);
        }
        self.out.push('\n');
        self.push_prefix(0..self.containers.len());
        self.out.push_str(&fence);
        self.request_break(2);
    }
}
