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

mod blocks;
mod inline;
mod table;

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
