//! Splitting a shell command line into the simple commands it runs, for
//! the permission rules (docs/tools.md#permission-rules). A careful
//! tokenizer of the POSIX shell language, not a regex: quotes, escapes,
//! line continuations and comments are honoured; the line is split on
//! `&&`, `||`, `;`, `|`, `|&`, `&` and newlines, and inside `( )` and
//! `{ }`.
//!
//! Invariants:
//! - What it does not understand makes the line unparsed
//!   ([`Split::parsed`] is `false`): unbalanced quotes or parentheses,
//!   `case`, function definitions, array assignments, a trailing `\`.
//!   No prefix rule ever covers an unparsed line.
//! - A command is [`Command::opaque`] when it holds a command or process
//!   substitution, backquotes, `${…}` beyond a plain name, arithmetic
//!   expansion, ANSI-C quoting, `eval`, a here-document or here-string, or
//!   a redirection to a file other than `/dev/null`; no prefix rule covers
//!   it either.
//! - The commands inside substitutions, `eval` and `sh -c` are listed in
//!   [`Split::nested`], so a `deny` or `ask` rule sees them.
//! - Never panics, whatever the input (the `shell_split` fuzz target).

/// One simple command of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Its words after quote removal (redirections left out).
    pub words: Vec<String>,
    /// Its text as written, trimmed.
    pub text: String,
    /// Never covered by a prefix rule (see the module doc).
    pub opaque: bool,
}

/// A command line split into its commands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// The simple commands the line runs, in order.
    pub commands: Vec<Command>,
    /// Commands inside substitutions, `eval` and `sh -c` strings.
    pub nested: Vec<Command>,
    /// `false`: the line could not be parsed (see the module doc).
    pub parsed: bool,
}

/// How deep substitutions may nest before a line counts as unparsed.
const MAX_DEPTH: usize = 16;

/// Splits `line` into its simple commands.
pub fn split(line: &str) -> Split {
    split_at_depth(line, 0)
}

fn split_at_depth(line: &str, depth: usize) -> Split {
    let chars: Vec<char> = line.chars().collect();
    let mut lexer = Lexer {
        chars: &chars,
        pos: 0,
        depth,
        nested: Vec::new(),
        ok: depth <= MAX_DEPTH,
    };
    if !lexer.ok {
        return Split::default();
    }
    let tokens = lexer.tokens(false);
    if lexer.pos < chars.len() {
        // A `)` that closes nothing.
        lexer.ok = false;
    }
    let mut out = Split {
        commands: Vec::new(),
        nested: std::mem::take(&mut lexer.nested),
        parsed: lexer.ok,
    };
    let mut builder = Builder::new(&chars, depth);
    builder.run(&tokens);
    out.parsed &= builder.ok;
    out.commands = builder.commands;
    out.nested.extend(builder.nested);
    out
}

/// A lexed token.
#[derive(Debug, Clone)]
enum Token {
    Word {
        value: String,
        start: usize,
        end: usize,
        /// Holds a substitution, `${…}`, arithmetic or ANSI-C quoting.
        opaque: bool,
        /// Had any quoting (`'{'` is not a group).
        quoted: bool,
    },
    /// `&&`, `||`, `;`, `|`, `|&`, `&`, newline.
    Separator,
    Open,
    Close,
    Redirect {
        start: usize,
        end: usize,
        /// Writes to (or reads and writes) a file other than `/dev/null`,
        /// or is a here-document / here-string.
        opaque: bool,
    },
    /// Something never understood (`;;`, `;&`).
    Bad,
}

struct Lexer<'a> {
    chars: &'a [char],
    pos: usize,
    depth: usize,
    nested: Vec<Command>,
    ok: bool,
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\r'
}

fn is_meta(c: char) -> bool {
    matches!(c, ';' | '&' | '|' | '(' | ')' | '<' | '>' | '\n') || is_blank(c)
}

impl Lexer<'_> {
    fn peek(&self, n: usize) -> Option<char> {
        self.chars.get(self.pos + n).copied()
    }

    /// Tokens up to the end, or (`inner`) up to the `)` that closes a
    /// `$(` (`pos` is then just after it).
    fn tokens(&mut self, inner: bool) -> Vec<Token> {
        let mut out = Vec::new();
        let mut parens = 0usize;
        while let Some(c) = self.peek(0) {
            if !self.ok {
                break;
            }
            match c {
                c if is_blank(c) => self.pos += 1,
                '\\' if self.peek(1) == Some('\n') => self.pos += 2,
                '#' => {
                    while let Some(c) = self.peek(0) {
                        if c == '\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                '\n' => {
                    self.pos += 1;
                    out.push(Token::Separator);
                }
                ';' => {
                    if matches!(self.peek(1), Some(';' | '&')) {
                        out.push(Token::Bad);
                        self.pos += 2;
                    } else {
                        out.push(Token::Separator);
                        self.pos += 1;
                    }
                }
                '&' => match self.peek(1) {
                    Some('&') => {
                        self.pos += 2;
                        out.push(Token::Separator);
                    }
                    Some('>') => {
                        let start = self.pos;
                        self.pos += 2;
                        if self.peek(0) == Some('>') {
                            self.pos += 1;
                        }
                        out.push(self.redirect_target(start, Kind::Write));
                    }
                    _ => {
                        self.pos += 1;
                        out.push(Token::Separator);
                    }
                },
                '|' => {
                    self.pos += if matches!(self.peek(1), Some('|' | '&')) {
                        2
                    } else {
                        1
                    };
                    out.push(Token::Separator);
                }
                '(' => {
                    self.pos += 1;
                    parens += 1;
                    out.push(Token::Open);
                }
                ')' => {
                    if inner && parens == 0 {
                        self.pos += 1;
                        return out;
                    }
                    if parens == 0 {
                        // Closes nothing: the caller sees `pos` short of the end.
                        if !inner {
                            self.ok = false;
                        }
                        return out;
                    }
                    parens -= 1;
                    out.push(Token::Close);
                    self.pos += 1;
                }
                '<' | '>' => {
                    let start = self.pos;
                    out.push(self.redirect(start));
                }
                _ => {
                    let word = self.word();
                    // `2>file`, `{fd}>file`: the word was a descriptor.
                    if matches!(self.peek(0), Some('<' | '>'))
                        && let Token::Word {
                            value,
                            start,
                            quoted: false,
                            ..
                        } = &word
                        && (value.chars().all(|c| c.is_ascii_digit())
                            || (value.starts_with('{') && value.ends_with('}')))
                    {
                        let start = *start;
                        out.push(self.redirect(start));
                        continue;
                    }
                    out.push(word);
                }
            }
        }
        if inner {
            // The end came before the `)` of a `$(`.
            self.ok = false;
        }
        out
    }

    /// A redirection operator at `pos` (`<`, `>`, `>>`, `>|`, `<>`, `<&`,
    /// `>&`, `<<`, `<<-`, `<<<`) and its target.
    fn redirect(&mut self, start: usize) -> Token {
        let c = self.peek(0);
        self.pos += 1;
        let kind = match (c, self.peek(0)) {
            (Some('<'), Some('<')) => {
                self.pos += 1;
                // `<<<` (here-string) or `<<-` (indented here-document).
                if matches!(self.peek(0), Some('<' | '-')) {
                    self.pos += 1;
                }
                Kind::Here
            }
            (Some('<'), Some('>')) => {
                self.pos += 1;
                Kind::Write
            }
            (Some(_), Some('&')) => {
                self.pos += 1;
                Kind::Dup
            }
            (Some('>'), Some('>' | '|')) => {
                self.pos += 1;
                Kind::Write
            }
            (Some('<'), _) => Kind::Read,
            _ => Kind::Write,
        };
        self.redirect_target(start, kind)
    }

    fn redirect_target(&mut self, start: usize, kind: Kind) -> Token {
        while self.peek(0).is_some_and(is_blank) {
            self.pos += 1;
        }
        if self.peek(0).is_none_or(|c| is_meta(c) || c == '#') {
            // `>` with nothing to write to.
            self.ok = false;
            return Token::Bad;
        }
        let target = self.word();
        let (value, opaque_word) = match &target {
            Token::Word { value, opaque, .. } => (value.as_str(), *opaque),
            _ => ("", true),
        };
        let opaque = opaque_word
            || match kind {
                Kind::Here => true,
                Kind::Read => false,
                Kind::Dup => !(value == "-" || value.chars().all(|c| c.is_ascii_digit())),
                Kind::Write => value != "/dev/null",
            } && !(kind == Kind::Dup && value == "/dev/null");
        Token::Redirect {
            start,
            end: self.pos,
            opaque,
        }
    }

    /// One word: everything up to an unquoted blank or operator.
    fn word(&mut self) -> Token {
        let start = self.pos;
        let mut value = String::new();
        let mut opaque = false;
        let mut quoted = false;
        while let Some(c) = self.peek(0) {
            if !self.ok || is_meta(c) {
                break;
            }
            match c {
                '\\' => match self.peek(1) {
                    Some('\n') => self.pos += 2,
                    Some(next) => {
                        value.push(next);
                        quoted = true;
                        self.pos += 2;
                    }
                    None => {
                        self.ok = false;
                        self.pos += 1;
                    }
                },
                '\'' => {
                    quoted = true;
                    self.pos += 1;
                    loop {
                        match self.peek(0) {
                            Some('\'') => {
                                self.pos += 1;
                                break;
                            }
                            Some(c) => {
                                value.push(c);
                                self.pos += 1;
                            }
                            None => {
                                self.ok = false;
                                break;
                            }
                        }
                    }
                }
                '"' => {
                    quoted = true;
                    self.pos += 1;
                    self.double_quoted(&mut value, &mut opaque);
                }
                '`' => {
                    opaque = true;
                    self.backquote(&mut value);
                }
                '$' => self.dollar(&mut value, &mut opaque, &mut quoted),
                _ => {
                    value.push(c);
                    self.pos += 1;
                }
            }
        }
        Token::Word {
            value,
            start,
            end: self.pos,
            opaque,
            quoted,
        }
    }

    /// The inside of `"…"` (the opening quote consumed).
    fn double_quoted(&mut self, value: &mut String, opaque: &mut bool) {
        loop {
            match self.peek(0) {
                None => {
                    self.ok = false;
                    return;
                }
                Some('"') => {
                    self.pos += 1;
                    return;
                }
                Some('\\') => match self.peek(1) {
                    Some('\n') => self.pos += 2,
                    Some(c @ ('$' | '`' | '"' | '\\')) => {
                        value.push(c);
                        self.pos += 2;
                    }
                    Some(c) => {
                        value.push('\\');
                        value.push(c);
                        self.pos += 2;
                    }
                    None => {
                        self.ok = false;
                        return;
                    }
                },
                Some('`') => {
                    *opaque = true;
                    self.backquote(value);
                }
                Some('$') => {
                    let mut quoted = true;
                    self.dollar(value, opaque, &mut quoted);
                }
                Some(c) => {
                    value.push(c);
                    self.pos += 1;
                }
            }
            if !self.ok {
                return;
            }
        }
    }

    /// `` `…` ``: a command substitution; its commands are nested.
    fn backquote(&mut self, value: &mut String) {
        self.pos += 1;
        let mut body = String::new();
        loop {
            match self.peek(0) {
                None => {
                    self.ok = false;
                    return;
                }
                Some('`') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => {
                    if let Some(c) = self.peek(1) {
                        if !matches!(c, '`' | '\\' | '$') {
                            body.push('\\');
                        }
                        body.push(c);
                        self.pos += 2;
                    } else {
                        self.ok = false;
                        return;
                    }
                }
                Some(c) => {
                    body.push(c);
                    self.pos += 1;
                }
            }
        }
        value.push_str("`…`");
        self.nest(&body);
    }

    /// Commands of a substitution's body, nested (with theirs).
    fn nest(&mut self, body: &str) {
        let inner = split_at_depth(body, self.depth + 1);
        if !inner.parsed {
            self.ok = false;
        }
        self.nested.extend(inner.commands);
        self.nested.extend(inner.nested);
    }

    /// `$…` (at the `$`).
    fn dollar(&mut self, value: &mut String, opaque: &mut bool, quoted: &mut bool) {
        match self.peek(1) {
            Some('(') if self.peek(2) == Some('(') => {
                // Arithmetic: its subscripts can run commands.
                *opaque = true;
                self.pos += 3;
                self.skip_balanced('(', ')', 2);
                value.push_str("$((…))");
            }
            Some('(') => {
                *opaque = true;
                self.pos += 2;
                let start = self.pos;
                let mut inner = Lexer {
                    chars: self.chars,
                    pos: self.pos,
                    depth: self.depth + 1,
                    nested: Vec::new(),
                    ok: self.depth < MAX_DEPTH,
                };
                let tokens = inner.tokens(true);
                self.pos = inner.pos;
                if !inner.ok {
                    self.ok = false;
                    return;
                }
                let end = self.pos.saturating_sub(1).max(start);
                let mut builder = Builder::new(&self.chars[..end], self.depth + 1);
                builder.run(&tokens);
                if !builder.ok {
                    self.ok = false;
                }
                self.nested.extend(inner.nested);
                self.nested.extend(builder.commands);
                self.nested.extend(builder.nested);
                value.push_str("$(…)");
            }
            Some('[') => {
                *opaque = true;
                self.pos += 2;
                self.skip_balanced('[', ']', 1);
            }
            Some('{') => {
                self.pos += 2;
                let start = self.pos;
                self.skip_balanced('{', '}', 1);
                let end = self.pos.saturating_sub(1).max(start);
                let inside: String = self.chars[start..end.min(self.chars.len())]
                    .iter()
                    .collect();
                let plain = !inside.is_empty()
                    && (inside
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_')
                        || matches!(inside.as_str(), "#" | "?" | "@" | "*" | "$" | "!" | "-"));
                if !plain {
                    *opaque = true;
                }
                value.push_str("${");
                value.push_str(&inside);
                value.push('}');
            }
            Some('\'') => {
                // ANSI-C quoting: escapes the words would need decoding.
                *opaque = true;
                *quoted = true;
                self.pos += 2;
                loop {
                    match self.peek(0) {
                        None => {
                            self.ok = false;
                            return;
                        }
                        Some('\\') => self.pos += 2,
                        Some('\'') => {
                            self.pos += 1;
                            break;
                        }
                        Some(c) => {
                            value.push(c);
                            self.pos += 1;
                        }
                    }
                }
            }
            Some('"') => {
                // Locale translation: a double-quoted string.
                *quoted = true;
                self.pos += 2;
                self.double_quoted(value, opaque);
            }
            _ => {
                value.push('$');
                self.pos += 1;
            }
        }
    }

    /// Skips to the `close` that balances `open` (`depth` already open).
    fn skip_balanced(&mut self, open: char, close: char, mut depth: usize) {
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            if c == '\\' {
                self.pos += 1;
            } else if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
                if depth == 0 {
                    return;
                }
            }
        }
        self.ok = false;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Write,
    Read,
    Dup,
    Here,
}

/// Reserved words that start a command and are not one.
const SKIPPED_KEYWORDS: &[&str] = &[
    "!", "time", "if", "then", "else", "elif", "fi", "while", "until", "do", "done",
];

/// Reserved words this splitter does not follow: the line is unparsed.
const UNPARSED_KEYWORDS: &[&str] = &["case", "esac", "function", "coproc", "select"];

/// Builds commands from tokens.
struct Builder<'a> {
    chars: &'a [char],
    depth: usize,
    commands: Vec<Command>,
    nested: Vec<Command>,
    ok: bool,
    current: Option<Current>,
    /// Open `(`/`{`, as a stack.
    groups: Vec<char>,
    /// `if`…`fi`, `do`…`done` balance.
    ifs: i64,
    loops: i64,
}

struct Current {
    words: Vec<String>,
    start: usize,
    end: usize,
    opaque: bool,
}

impl<'a> Builder<'a> {
    fn new(chars: &'a [char], depth: usize) -> Self {
        Self {
            chars,
            depth,
            commands: Vec::new(),
            nested: Vec::new(),
            ok: true,
            current: None,
            groups: Vec::new(),
            ifs: 0,
            loops: 0,
        }
    }

    fn run(&mut self, tokens: &[Token]) {
        for t in tokens {
            match t {
                Token::Word {
                    value,
                    start,
                    end,
                    opaque,
                    quoted,
                } => self.word(value, *start, *end, *opaque, *quoted),
                Token::Separator => self.finish(),
                Token::Open => {
                    if self.current.is_some() {
                        // `f()`, `a=(…)`, `echo (`.
                        self.ok = false;
                    }
                    self.groups.push('(');
                }
                Token::Close => {
                    self.finish();
                    if self.groups.pop() != Some('(') {
                        self.ok = false;
                    }
                }
                Token::Redirect { start, end, opaque } => {
                    let cur = self.current.get_or_insert(Current {
                        words: Vec::new(),
                        start: *start,
                        end: *end,
                        opaque: false,
                    });
                    cur.end = *end;
                    if *opaque {
                        cur.opaque = true;
                    }
                }
                Token::Bad => self.ok = false,
            }
        }
        self.finish();
        if !self.groups.is_empty() || self.ifs != 0 || self.loops != 0 {
            self.ok = false;
        }
    }

    fn word(&mut self, value: &str, start: usize, end: usize, opaque: bool, quoted: bool) {
        let at_start = self.current.as_ref().is_none_or(|c| c.words.is_empty());
        if at_start && !quoted {
            match value {
                "{" => {
                    self.finish();
                    self.groups.push('{');
                    return;
                }
                "}" => {
                    self.finish();
                    if self.groups.pop() != Some('{') {
                        self.ok = false;
                    }
                    return;
                }
                "if" => self.ifs += 1,
                "fi" => self.ifs -= 1,
                "do" => self.loops += 1,
                "done" => self.loops -= 1,
                _ => {}
            }
            if SKIPPED_KEYWORDS.contains(&value) {
                return;
            }
            if UNPARSED_KEYWORDS.contains(&value) {
                self.ok = false;
            }
        }
        let cur = self.current.get_or_insert(Current {
            words: Vec::new(),
            start,
            end,
            opaque: false,
        });
        if cur.words.is_empty() {
            cur.start = cur.start.min(start);
        }
        cur.end = end;
        cur.opaque |= opaque;
        cur.words.push(value.to_owned());
    }

    /// Ends the command being built.
    fn finish(&mut self) {
        let Some(cur) = self.current.take() else {
            return;
        };
        let s = cur.start.min(self.chars.len());
        let e = cur.end.min(self.chars.len()).max(s);
        let text: String = self.chars[s..e].iter().collect();
        let mut opaque = cur.opaque;
        if cur.words.is_empty() {
            // A redirection alone (`> file`), or after a group (`( … ) >
            // file`): what it writes is the group's; never prefix-covered.
            if opaque {
                self.ok = false;
            }
            return;
        }
        let first = command_word(&cur.words);
        if matches!(first, Some("eval")) {
            opaque = true;
            let body = cur.words[1..].join(" ");
            self.nest(&body);
        }
        if matches!(first, Some("for")) || cur.words.first().is_some_and(|w| w == "[[") {
            // A loop header or a test: its words are not a command's.
            opaque = true;
        }
        if let Some(script) = shell_c_script(&cur.words) {
            let script = script.to_owned();
            self.nest(&script);
        }
        self.commands.push(Command {
            words: cur.words,
            text: text.trim().to_owned(),
            opaque,
        });
    }

    fn nest(&mut self, body: &str) {
        let inner = split_at_depth(body, self.depth + 1);
        if !inner.parsed {
            self.ok = false;
        }
        self.nested.extend(inner.commands);
        self.nested.extend(inner.nested);
    }
}

/// The first word that is not an assignment.
fn command_word(words: &[String]) -> Option<&str> {
    words.iter().map(String::as_str).find(|w| !is_assignment(w))
}

/// `NAME=value`.
pub(crate) fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// The script of `sh -c SCRIPT` (also `bash`, `zsh`, `dash`, `ksh`).
fn shell_c_script(words: &[String]) -> Option<&str> {
    let at = words.iter().position(|w| !is_assignment(w))?;
    let program = words[at].rsplit('/').next().unwrap_or("");
    if !matches!(program, "sh" | "bash" | "zsh" | "dash" | "ksh") {
        return None;
    }
    let rest = &words[at + 1..];
    let c = rest
        .iter()
        .position(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('c'))?;
    rest.get(c + 1).map(String::as_str)
}

#[cfg(test)]
#[path = "shell_split_tests.rs"]
mod tests;
