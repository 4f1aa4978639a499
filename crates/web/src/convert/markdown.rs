//! One pass from HTML to Markdown: html5gum's tokenizer events are written
//! out as Markdown as they come, with a stack of the open elements that
//! matter; no tree is built (building html5ever's DOM alone took longer
//! than the whole conversion's budget, docs/tools.md#web-fetch).
//!
//! Invariants:
//! - No recursion and no tree: memory is the output plus a stack bounded
//!   by [`MAX_OPEN`]; time is linear in the input (every search of the
//!   stack looks at most [`SEARCH`] entries).
//! - Dropped elements ([`DROPPED`]) leave nothing of their content.
//! - Tables are pipe tables without padding; every line of a list item or
//!   quote carries its prefix; code blocks are fenced longer than any run
//!   of backticks inside them.

use std::borrow::Cow;
use std::convert::Infallible;

use html5gum::emitters::callback::{CallbackEmitter, CallbackEvent};
use html5gum::{Emitter, ForwardingEmitter, Span, Tokenizer};

/// Elements whose content is never part of the text a reader wants.
pub(super) const DROPPED: &[&str] = &[
    "script", "style", "noscript", "template", "nav", "iframe", "svg", "canvas", "object",
    "button", "select", "dialog", "title", "textarea", "math",
];

/// Open elements kept at most; deeper ones are treated as plain inline
/// elements (their text still comes out).
const MAX_OPEN: usize = 512;
/// How far down the stack an end tag looks for its start tag.
const SEARCH: usize = 64;
/// Containers (list items, quotes) that indent; deeper ones do not.
const MAX_PREFIX: usize = 8;
/// A base URL longer than this is not used to resolve relative links (the
/// output must stay bounded by the input).
const MAX_BASE: usize = 256;

/// The Markdown of `html`; relative links and images resolved against
/// `base` when given.
pub(super) fn convert(html: &str, base: Option<&url::Url>) -> String {
    let mut w = Writer::new(html.len(), base.filter(|b| b.as_str().len() <= MAX_BASE));
    {
        let mut emitter = CallbackEmitter::new(
            |event: CallbackEvent<'_>, _: Span<()>| -> Option<Infallible> {
                w.event(event);
                None
            },
        );
        emitter.naively_switch_states(true);
        // Reading a `&str` cannot fail.
        let _ = Tokenizer::new_with_emitter(html, Quiet(emitter)).finish();
    }
    w.finish()
}

/// An emitter that asks the tokenizer for no parse errors: they are
/// ignored here, and checking every character for them costs a fifth of
/// the tokenizer's time.
struct Quiet<E>(E);

impl<E: Emitter> ForwardingEmitter for Quiet<E> {
    type Token = E::Token;

    fn inner(&mut self) -> &mut impl Emitter<Token = Self::Token> {
        &mut self.0
    }

    fn should_emit_errors(&mut self) -> bool {
        false
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `p`, `div`, `section`…: a paragraph break on each side.
    Block,
    /// `p` itself (closed by the next block, as HTML does).
    Para,
    Heading,
    List,
    Item,
    /// `dt`, `dd`.
    Term,
    Quote,
    Pre,
    /// Inline code (`code`, `kbd`, `samp`, `tt`).
    Code,
    /// `**`, `*`, `~~`.
    Delim(&'static str),
    Link,
    Table,
    Row,
    Cell,
}

impl Kind {
    fn inline(self) -> bool {
        matches!(self, Kind::Code | Kind::Delim(_) | Kind::Link)
    }
}

#[derive(Debug)]
struct Open {
    name: &'static str,
    kind: Kind,
    /// An inline element's opening (`**`, `[`) has been written.
    opened: bool,
    /// Writes nothing (the same emphasis is already open, or a link has
    /// no usable target).
    silent: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    /// `> `; its number tells one quote from another.
    Quote(u32),
    /// A list item's indent; its number tells one item from another.
    Indent(u32, usize),
}

#[derive(Debug)]
struct ListState {
    ordered: bool,
    next: u64,
}

#[derive(Debug, Default)]
struct TableState {
    /// Rows written.
    rows: usize,
    /// Cells written in the current row.
    cells: usize,
    cell_open: bool,
}

/// A line start waiting for content: a list marker, `## `, `: `.
#[derive(Debug)]
struct Marker {
    text: String,
    /// Containers whose prefix goes before it.
    upto: usize,
}

#[derive(Debug, Default)]
struct Pre {
    lang: String,
    buf: String,
    /// Nothing read yet (a newline right after `<pre>` is dropped).
    first: bool,
}

/// The start tag being read: its name and the attributes we use.
#[derive(Debug, Default)]
struct Tag {
    name: Vec<u8>,
    attr: Option<Attr>,
    href: String,
    src: String,
    alt: String,
    class: String,
    start: String,
}

#[derive(Debug, Clone, Copy)]
enum Attr {
    Href,
    Src,
    Alt,
    Class,
    Start,
}

struct Writer<'b> {
    out: String,
    base: Option<&'b url::Url>,
    stack: Vec<Open>,
    /// Targets of the open links, in stack order.
    hrefs: Vec<String>,
    containers: Vec<Container>,
    /// Containers of the last line written (a blank line after it carries
    /// only the quotes both lines share).
    last_line: Vec<Container>,
    /// Numbers containers.
    serial: u32,
    lists: Vec<ListState>,
    tables: Vec<TableState>,
    /// Newlines owed before the next content (0, 1 or 2).
    breaks: u8,
    /// A space owed before the next content.
    space: bool,
    /// Inline openings not yet written.
    unopened: usize,
    marker: Option<Marker>,
    /// The last thing written started a line (so `#`, `>`, `-` at the
    /// start of a word would read as Markdown).
    line_start: bool,
    /// Inside a dropped element: its name and nesting.
    skip: Option<(&'static str, usize)>,
    pre: Option<Pre>,
    /// Inline code being read.
    code: Option<String>,
    /// Start tags ignored because the stack was full.
    overflow: usize,
    tag: Tag,
}

fn utf8(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

macro_rules! known_names {
    ($($name:literal)*) => {
        /// The name as one of the `&'static str` this writer knows, if it
        /// does.
        fn known(name: &[u8]) -> Option<&'static str> {
            match std::str::from_utf8(name).ok()? {
                $($name => Some($name),)*
                _ => None,
            }
        }
    };
}

// Every name of `kind_of`, `DROPPED` and `VOID`.
known_names!(
    "p" "div" "section" "article" "main" "header" "footer" "aside" "address" "figure"
    "figcaption" "details" "summary" "fieldset" "legend" "center" "hgroup" "caption" "dl"
    "form" "body" "h1" "h2" "h3" "h4" "h5" "h6" "ul" "ol" "menu" "li" "dt" "dd" "blockquote"
    "pre" "code" "kbd" "samp" "tt" "strong" "b" "em" "i" "del" "s" "strike" "a" "table" "tr"
    "td" "th" "thead" "tbody" "tfoot"
    "script" "style" "noscript" "template" "nav" "iframe" "svg" "canvas" "object" "button"
    "select" "dialog" "title" "textarea" "math"
    "area" "base" "br" "col" "embed" "hr" "img" "input" "link" "meta" "source" "track" "wbr"
    "param"
);

fn kind_of(name: &str) -> Option<Kind> {
    Some(match name {
        "p" => Kind::Para,
        "div" | "section" | "article" | "main" | "header" | "footer" | "aside" | "address"
        | "figure" | "figcaption" | "details" | "summary" | "fieldset" | "legend" | "center"
        | "hgroup" | "caption" | "dl" | "form" | "body" => Kind::Block,
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => Kind::Heading,
        "ul" | "ol" | "menu" => Kind::List,
        "li" => Kind::Item,
        "dt" | "dd" => Kind::Term,
        "blockquote" => Kind::Quote,
        "pre" => Kind::Pre,
        "code" | "kbd" | "samp" | "tt" => Kind::Code,
        "strong" | "b" => Kind::Delim("**"),
        "em" | "i" => Kind::Delim("*"),
        "del" | "s" | "strike" => Kind::Delim("~~"),
        "a" => Kind::Link,
        "table" => Kind::Table,
        "tr" => Kind::Row,
        "td" | "th" => Kind::Cell,
        _ => return None,
    })
}

/// The language of a code block from a `class` such as `language-rust`.
fn language(class: &str) -> Option<String> {
    class
        .split_ascii_whitespace()
        .find_map(|c| {
            c.strip_prefix("language-")
                .or_else(|| c.strip_prefix("lang-"))
        })
        .filter(|l| {
            !l.is_empty()
                && l.len() <= 32
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-_.#".contains(&b))
        })
        .map(str::to_owned)
}

impl<'b> Writer<'b> {
    fn new(input: usize, base: Option<&'b url::Url>) -> Self {
        Self {
            out: String::with_capacity(input / 2),
            base,
            stack: Vec::new(),
            hrefs: Vec::new(),
            containers: Vec::new(),
            last_line: Vec::new(),
            serial: 0,
            lists: Vec::new(),
            tables: Vec::new(),
            breaks: 0,
            space: false,
            unopened: 0,
            marker: None,
            line_start: true,
            skip: None,
            pre: None,
            code: None,
            overflow: 0,
            tag: Tag::default(),
        }
    }

    fn event(&mut self, event: CallbackEvent<'_>) {
        match event {
            CallbackEvent::OpenStartTag { name } => {
                self.tag.name.clear();
                self.tag.name.extend_from_slice(name);
                self.tag.attr = None;
                for s in [
                    &mut self.tag.href,
                    &mut self.tag.src,
                    &mut self.tag.alt,
                    &mut self.tag.class,
                    &mut self.tag.start,
                ] {
                    s.clear();
                }
            }
            CallbackEvent::AttributeName { name } => {
                self.tag.attr = match (self.tag.name.as_slice(), name) {
                    (b"a", b"href") => Some(Attr::Href),
                    (b"img", b"src") => Some(Attr::Src),
                    (b"img", b"alt") => Some(Attr::Alt),
                    (b"pre" | b"code", b"class") => Some(Attr::Class),
                    (b"ol", b"start") => Some(Attr::Start),
                    _ => None,
                };
            }
            CallbackEvent::AttributeValue { value } => {
                let field = match self.tag.attr {
                    Some(Attr::Href) => &mut self.tag.href,
                    Some(Attr::Src) => &mut self.tag.src,
                    Some(Attr::Alt) => &mut self.tag.alt,
                    Some(Attr::Class) => &mut self.tag.class,
                    Some(Attr::Start) => &mut self.tag.start,
                    None => return,
                };
                field.push_str(&utf8(value));
            }
            CallbackEvent::CloseStartTag { self_closing } => {
                let name = std::mem::take(&mut self.tag.name);
                if let Some(known) = known(&name) {
                    self.start(known, self_closing);
                }
                self.tag.name = name;
            }
            CallbackEvent::EndTag { name } => {
                if let Some(known) = known(name) {
                    self.end(known);
                }
            }
            CallbackEvent::String { value } => self.text(&utf8(value)),
            CallbackEvent::Comment { .. }
            | CallbackEvent::Doctype { .. }
            | CallbackEvent::Error(_) => {}
        }
    }

    fn start(&mut self, name: &'static str, self_closing: bool) {
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

    fn end(&mut self, name: &'static str) {
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
    fn find(&self, name: &str, bounds: &[&str]) -> Option<usize> {
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
    fn close_through(&mut self, names: &[&str], bounds: &[&str]) {
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
    fn close_para(&mut self) {
        for (i, o) in self.stack.iter().enumerate().rev().take(SEARCH) {
            if o.kind == Kind::Para {
                return self.pop_to(i);
            }
            if !o.kind.inline() {
                return;
            }
        }
    }

    fn pop_to(&mut self, i: usize) {
        while self.stack.len() > i {
            if let Some(open) = self.stack.pop() {
                self.close(open);
            }
        }
    }

    fn close(&mut self, open: Open) {
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

    fn resolve(&self, href: &str) -> String {
        match self.base {
            Some(base) if !href.starts_with('#') => base
                .join(href)
                .map_or_else(|_| href.to_owned(), String::from),
            _ => href.to_owned(),
        }
    }

    /// Inside a cell of the outermost table (where a line break would end
    /// the row).
    fn in_cell(&self) -> bool {
        self.tables.first().is_some_and(|t| t.cell_open)
    }

    fn request_break(&mut self, n: u8) {
        if self.in_cell() {
            self.space = true;
        } else if self.marker.is_none() {
            self.breaks = self.breaks.max(n);
        }
    }

    fn line_break(&mut self) {
        if let Some(pre) = &mut self.pre {
            pre.buf.push('\n');
        } else if let Some(code) = &mut self.code {
            code.push(' ');
        } else {
            self.request_break(1);
        }
    }

    fn set_marker(&mut self, text: String, upto: usize) {
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

    fn push_prefix(&mut self, containers: std::ops::Range<usize>) {
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
    fn flush(&mut self) {
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
    fn content(&mut self, text: &str) {
        self.flush();
        self.out.push_str(text);
        self.line_start = false;
    }

    fn text(&mut self, text: &str) {
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

    fn word(&mut self, word: &str) {
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

    fn image(&mut self) {
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

    fn end_pre(&mut self) {
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

    fn end_code(&mut self) {
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

    fn start_row(&mut self) {
        match self.tables.len() {
            0 => self.request_break(1),
            1 => {
                self.end_row();
                self.request_break(1);
            }
            _ => self.space = true,
        }
    }

    fn start_cell(&mut self) {
        match self.tables.len() {
            1 => {}
            _ => {
                self.space = true;
                return;
            }
        }
        let Some(t) = self.tables.first_mut() else {
            return;
        };
        t.cell_open = false;
        let first = t.cells == 0;
        if first {
            self.request_break(1);
            self.content("|");
        }
        self.out.push(' ');
        self.space = false;
        if let Some(t) = self.tables.first_mut() {
            t.cell_open = true;
        }
    }

    fn end_cell(&mut self) {
        if self.tables.len() != 1 {
            self.space = true;
            return;
        }
        if let Some(t) = self.tables.first_mut()
            && t.cell_open
        {
            t.cell_open = false;
            t.cells += 1;
            self.space = false;
            self.out.push_str(" |");
        }
    }

    /// Ends the outermost table's row: the header's separator after the
    /// first one.
    fn end_row(&mut self) {
        if self.tables.len() != 1 {
            return;
        }
        self.end_cell();
        let Some(t) = self.tables.first_mut() else {
            return;
        };
        if t.cells == 0 {
            return;
        }
        let (cells, first) = (t.cells, t.rows == 0);
        t.rows += 1;
        t.cells = 0;
        if first {
            self.out.push('\n');
            self.push_prefix(0..self.containers.len());
            self.out.push('|');
            for _ in 0..cells {
                self.out.push_str(" --- |");
            }
        }
        self.breaks = self.breaks.max(1);
    }

    fn finish(mut self) -> String {
        self.skip = None;
        self.pop_to(0);
        self.end_pre();
        self.end_code();
        let end = self.out.trim_end().len();
        self.out.truncate(end);
        self.out
    }
}

fn is_space(c: char) -> bool {
    c.is_whitespace()
}

/// Whether a word at the start of a line would be read as Markdown
/// syntax (a heading, quote, list item, fence or rule).
fn starts_like_markdown(word: &str) -> bool {
    word.starts_with(['#', '>', '`', '='])
        || matches!(word, "-" | "+" | "*" | "---" | "***" | "___")
        || word
            .strip_suffix(['.', ')'])
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn longest_run(text: &str, c: char) -> usize {
    let (mut longest, mut run) = (0, 0);
    for ch in text.chars() {
        if ch == c {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    longest
}

/// A link target as Markdown reads it: spaces and parentheses escaped.
fn push_href(out: &mut String, href: &str) {
    for c in href.chars() {
        match c {
            ' ' => out.push_str("%20"),
            '(' => out.push_str("%28"),
            ')' => out.push_str("%29"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
}
