//! A line through brush's parser, walked into the simple commands it runs
//! (see the module doc of [`super`] for what fails closed).

use brush_parser::ast::{
    AndOr, Command as AstCommand, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList,
    IoFileRedirectKind, IoFileRedirectTarget, IoRedirect, Pipeline, SimpleCommand,
};
use brush_parser::{Parser, ParserImpl, ParserOptions};

use super::options::program;
use super::words::{self, Word};
use super::wrappers::{scripts, views};
use super::{Command, Dialect, Split};

/// How deep scripts (substitutions, `sh -c`, `eval`) may nest before the
/// line counts as not understood.
const MAX_DEPTH: usize = 8;

/// How deep brackets may nest, and how long a line may be, before it is
/// not understood without being parsed: the parser recurses, and it
/// backtracks exponentially on brackets left open (each `(` it tries as a
/// subshell and as arithmetic): `[[z<` and 28 `(` took 18 s, each more
/// doubling it (found by fuzzing `shell_split`). At 16 the worst found
/// takes milliseconds.
const MAX_BRACKETS: usize = 16;
const MAX_LEN: usize = 64 * 1024;

/// The deepest nesting of `(`, `{`, `[` and backquotes in `line`, quoted
/// or not (over-counting only makes a line unclear).
fn bracket_depth(line: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for c in line.chars() {
        match c {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        max = max.max(depth);
    }
    max
}

/// How deep `${…}` expansions may nest before a line is not parsed:
/// brush-parser 0.4 backtracks exponentially on nested subscripts
/// (`${a[${b[${c[${d[${e[1]}]}]}]}]}` took 6 s, one level more over a
/// minute; found by fuzzing `shell_split`).
const MAX_EXPANSIONS: usize = 3;

/// The deepest nesting of `${` in `line`, quoted or not (over-counting
/// only makes a line unclear).
fn expansion_depth(line: &str) -> usize {
    let mut open: Vec<bool> = Vec::new();
    let (mut prev, mut max) = ('\0', 0usize);
    for c in line.chars() {
        match c {
            '{' => open.push(prev == '$'),
            '}' => {
                open.pop();
            }
            _ => {}
        }
        max = max.max(open.iter().filter(|dollar| **dollar).count());
        prev = c;
    }
    max
}

/// Whether `line` has a run of digits right before `<` or `>` too large
/// for a file descriptor (over-counting a word that ends in digits only
/// makes a line unclear): brush-parser 0.4 panics on it as an `io_number`
/// (`9999999999999>>2>`, found by fuzzing), and no shell would run it.
fn huge_fd(line: &str) -> bool {
    let bytes = line.as_bytes();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if b.is_ascii_digit() {
            continue;
        }
        let digits = std::str::from_utf8(&bytes[start..i]).unwrap_or("");
        if matches!(b, b'<' | b'>')
            && i > start
            && digits.parse::<brush_parser::ast::IoFd>().is_err()
        {
            return true;
        }
        start = i + 1;
    }
    false
}

/// Why `line` is not to be parsed at all, if it is not: on these lines
/// brush-parser 0.4 recurses too deep, panics, backtracks exponentially or
/// allocates without end (each found by fuzzing or the differential
/// test). `hidden`: the line's first hidden character.
fn not_to_parse(line: &str, depth: usize, hidden: Option<char>) -> Option<String> {
    if depth > MAX_DEPTH || line.len() > MAX_LEN || bracket_depth(line) > MAX_BRACKETS {
        return Some("it nests too deep or is too long".to_owned());
    }
    if expansion_depth(line) > MAX_EXPANSIONS {
        return Some("`${…}` expansions nested too deep".to_owned());
    }
    if huge_fd(line) {
        return Some("a file descriptor number out of range".to_owned());
    }
    if line.contains("<<") {
        // The tokenizer runs out of memory on a here-document whose
        // delimiter opens a substitution (`<<E$( <x`) or is nothing but
        // carriage returns or form feeds, which it trims away
        // (`<<\r\t<\r\t`).
        if let Some(c) = hidden {
            return Some(control_character(c));
        }
        if line.contains("$(") {
            return Some("a here-document with a command substitution".to_owned());
        }
    }
    None
}

/// Why a line with the hidden character `c` is not understood.
fn control_character(c: char) -> String {
    format!(
        "the control character {}",
        eonyx_core::text::escape_controls(&c.to_string(), false)
    )
}

fn options(dialect: Dialect) -> ParserOptions {
    let sh = dialect == Dialect::Sh;
    ParserOptions {
        // `bash -c` runs without extglob, as sh has none.
        enable_extended_globbing: false,
        posix_mode: sh,
        sh_mode: sh,
        tilde_expansion_at_word_start: true,
        tilde_expansion_after_colon: false,
        parser_impl: ParserImpl::Peg,
    }
}

/// A line this module panics on in tests, standing for a panic of the
/// parser on a line nobody foresaw ([`super::split_as`] must survive it).
#[cfg(test)]
pub(super) const PANICS_IN_TESTS: &str = "a line the parser panics on";

/// Splits `line` as `dialect` reads it; `depth`: how many scripts it is
/// inside.
pub(super) fn split(line: &str, dialect: Dialect, depth: usize) -> Split {
    #[cfg(test)]
    if line.contains(PANICS_IN_TESTS) {
        panic!("the parser's panic, for the test");
    }
    let mut w = Walk {
        options: options(dialect),
        dialect,
        depth,
        nesting: 0,
        out: Split {
            parsed: true,
            ..Split::default()
        },
    };
    let hidden = line.chars().find(|c| eonyx_core::text::is_hidden_char(*c));
    if let Some(why) = not_to_parse(line, depth, hidden) {
        w.unclear(why);
        w.out.loose.push(line.to_owned());
        return w.out;
    }
    if let Some(c) = hidden {
        w.unclear(control_character(c));
    }
    let chars: Vec<char> = line.chars().collect();
    if chars
        .windows(2)
        .any(|p| p[0] == '}' && matches!(p[1], '<' | '>'))
    {
        w.unclear("a `{name}>` descriptor word");
    }
    if dialect == Dialect::Sh && line.contains("&>") {
        w.unclear("`&>`, bash's, while commands run with sh");
    }
    match Parser::new(line.as_bytes(), &w.options).parse_program() {
        Ok(program) => {
            for list in &program.complete_commands {
                w.list(list);
            }
        }
        Err(e) => w.unclear(format!("it does not parse ({e})")),
    }
    if !w.out.parsed || w.out.blind {
        w.out.loose.push(line.to_owned());
    }
    w.out
}

struct Walk {
    options: ParserOptions,
    dialect: Dialect,
    depth: usize,
    /// Inside a process substitution: commands go to `nested`.
    nesting: usize,
    out: Split,
}

impl Walk {
    fn unclear(&mut self, why: impl Into<String>) {
        self.out.parsed = false;
        self.out.blind = true;
        if self.out.unclear.is_none() {
            self.out.unclear = Some(why.into());
        }
    }

    fn list(&mut self, list: &CompoundList) {
        for item in &list.0 {
            self.pipeline(&item.0.first);
            for next in &item.0.additional {
                match next {
                    AndOr::And(p) | AndOr::Or(p) => self.pipeline(p),
                }
            }
        }
    }

    fn pipeline(&mut self, p: &Pipeline) {
        for c in &p.seq {
            self.command(c);
        }
    }

    fn command(&mut self, c: &AstCommand) {
        match c {
            AstCommand::Simple(s) => self.simple(s),
            AstCommand::Compound(cc, redirects) => {
                self.compound(cc);
                if let Some(r) = redirects {
                    self.group_redirects(&r.0);
                }
            }
            AstCommand::Function(f) => {
                self.unclear("a function definition");
                self.compound(&f.body.0);
            }
            AstCommand::ExtendedTest(_, redirects) => {
                self.unclear("`[[ … ]]`");
                if let Some(r) = redirects {
                    self.group_redirects(&r.0);
                }
            }
        }
    }

    fn compound(&mut self, cc: &CompoundCommand) {
        match cc {
            CompoundCommand::BraceGroup(g) => self.list(&g.list),
            CompoundCommand::Subshell(s) => self.list(&s.list),
            CompoundCommand::IfClause(i) => {
                self.list(&i.condition);
                self.list(&i.then);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.list(c);
                    }
                    self.list(&e.body);
                }
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.list(&w.0);
                self.list(&w.1.list);
            }
            CompoundCommand::ForClause(f) => {
                for v in f.values.iter().flatten() {
                    let word = self.read(&v.value);
                    if word.runs {
                        self.unclear("a substitution in a `for` list");
                    }
                }
                self.list(&f.body.list);
            }
            CompoundCommand::CaseClause(c) => {
                self.unclear("`case`");
                for item in &c.cases {
                    if let Some(list) = &item.cmd {
                        self.list(list);
                    }
                }
            }
            CompoundCommand::Arithmetic(_) | CompoundCommand::ArithmeticForClause(_) => {
                self.unclear("arithmetic `(( … ))`");
            }
            CompoundCommand::Coprocess(c) => {
                self.unclear("`coproc`");
                self.command(&c.body);
            }
        }
    }

    /// Redirections of a group: one that writes a file makes the line
    /// not understood (no command of it carries the write).
    fn group_redirects(&mut self, redirects: &[IoRedirect]) {
        let mut probe = Command::default();
        for r in redirects {
            self.redirect(r, &mut probe);
        }
        if probe.opaque {
            self.unclear("a redirection of a group");
        }
    }

    /// Reads a word, parsing the scripts of its substitutions.
    fn read(&mut self, raw: &str) -> Word {
        let word = words::read(raw, &self.options);
        if word.bad {
            self.unclear(format!("the word `{raw}` does not parse"));
        }
        self.absorb(&word);
        word
    }

    fn absorb(&mut self, word: &Word) {
        if word.bad {
            self.out.blind = true;
        }
        if word.blind {
            self.out.blind = true;
        }
        for body in &word.substitutions {
            self.nest(body);
        }
    }

    /// Parses `script` and keeps its commands as nested ones.
    fn nest(&mut self, script: &str) {
        let inner = split(script, self.dialect, self.depth + 1);
        if inner.blind || !inner.parsed {
            self.out.blind = true;
        }
        self.out.nested.extend(inner.commands);
        self.out.nested.extend(inner.nested);
        self.out.loose.extend(inner.loose);
    }

    fn word(&mut self, raw: &str, cmd: &mut Command) {
        let word = self.read(raw);
        cmd.opaque |= word.runs;
        cmd.literal.push(word.literal.is_some());
        cmd.words
            .push(word.literal.unwrap_or_else(|| raw.to_owned()));
    }

    fn simple(&mut self, s: &SimpleCommand) {
        let mut cmd = Command::default();
        let items = s
            .prefix
            .iter()
            .flat_map(|p| &p.0)
            .map(Some)
            .chain(std::iter::once(None))
            .chain(s.suffix.iter().flat_map(|p| &p.0).map(Some));
        for item in items {
            match item {
                None => {
                    if let Some(w) = &s.word_or_name {
                        self.word(&w.value, &mut cmd);
                    }
                }
                Some(CommandPrefixOrSuffixItem::IoRedirect(r)) => self.redirect(r, &mut cmd),
                Some(
                    CommandPrefixOrSuffixItem::Word(w)
                    | CommandPrefixOrSuffixItem::AssignmentWord(_, w),
                ) => self.word(&w.value, &mut cmd),
                Some(CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub)) => {
                    cmd.opaque = true;
                    cmd.words.push(sub.to_string());
                    cmd.literal.push(false);
                    self.substituted(&sub.list);
                }
            }
        }
        if cmd.words.is_empty() && cmd.redirects.is_empty() {
            return;
        }
        cmd.text = s.to_string().trim().to_owned();
        // `eval` and what a shell is handed: parsed too, for deny and ask.
        for start in views(&cmd.words) {
            if program(&cmd.words[start]) == "eval" {
                cmd.opaque = true;
            }
        }
        for script in scripts(&cmd.words) {
            self.nest(&script);
        }
        if self.nesting > 0 {
            self.out.nested.push(cmd);
        } else {
            self.out.commands.push(cmd);
        }
    }

    /// The commands of a process substitution: nested.
    fn substituted(&mut self, list: &CompoundList) {
        self.nesting += 1;
        self.list(list);
        self.nesting -= 1;
    }

    fn redirect(&mut self, r: &IoRedirect, cmd: &mut Command) {
        cmd.redirects.push(r.to_string());
        match r {
            IoRedirect::File(_, kind, target) => match target {
                IoFileRedirectTarget::Filename(w) | IoFileRedirectTarget::Duplicate(w) => {
                    let word = self.read(&w.value);
                    let to_null = word.literal.as_deref() == Some("/dev/null");
                    let fd = word.literal.as_deref().is_some_and(|v| {
                        v == "-" || (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                    });
                    let writes = match kind {
                        IoFileRedirectKind::Read => false,
                        IoFileRedirectKind::DuplicateInput
                        | IoFileRedirectKind::DuplicateOutput => !fd && !to_null,
                        IoFileRedirectKind::Write
                        | IoFileRedirectKind::Append
                        | IoFileRedirectKind::Clobber
                        | IoFileRedirectKind::ReadAndWrite => !to_null,
                    };
                    // A read from a named file is fine; any expansion in a
                    // target is not (`> $f` may name anything).
                    if writes || word.runs || (word.literal.is_none() && kind_writes(kind)) {
                        cmd.opaque = true;
                    }
                }
                IoFileRedirectTarget::Fd(_) => {}
                IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                    cmd.opaque = true;
                    self.substituted(&sub.list);
                }
            },
            IoRedirect::HereDocument(_, doc) => {
                cmd.opaque = true;
                if doc.requires_expansion {
                    let word = words::read_heredoc(&doc.doc.value, &self.options);
                    self.absorb(&word);
                }
            }
            IoRedirect::HereString(_, w) => {
                cmd.opaque = true;
                self.read(&w.value);
            }
            IoRedirect::OutputAndError(w, _) => {
                if self.dialect == Dialect::Sh {
                    self.unclear("`&>`, bash's, while commands run with sh");
                }
                let word = self.read(&w.value);
                if word.literal.as_deref() != Some("/dev/null") || word.runs {
                    cmd.opaque = true;
                }
            }
        }
    }
}

fn kind_writes(kind: &IoFileRedirectKind) -> bool {
    !matches!(kind, IoFileRedirectKind::Read)
}
