//! One word of a command as the shell reads it (brush's word grammar):
//! its value after quote removal when nothing in it expands, and the
//! bodies of the command substitutions in it (to be parsed in turn).

use brush_parser::ParserOptions;
use brush_parser::word::{Parameter, ParameterExpr, WordPiece, WordPieceWithSource};

/// What a word holds.
#[derive(Debug, Default)]
pub(super) struct Word {
    /// The value after quote removal; `None` when something in it expands
    /// (a parameter, `~`, a substitution), so it is known only at run time.
    pub literal: Option<String>,
    /// Runs code when expanded (command or arithmetic substitution, a
    /// parameter expansion with operators).
    pub runs: bool,
    /// Holds code this module cannot look into (arithmetic, `${…}` with
    /// operators): deny and ask rules scan the line's loose words.
    pub blind: bool,
    /// Bodies of `$(…)` and `` `…` `` in it.
    pub substitutions: Vec<String>,
    /// The word did not parse.
    pub bad: bool,
}

/// Reads `raw` (a word as written, quotes included).
pub(super) fn read(raw: &str, options: &ParserOptions) -> Word {
    let mut w = Word::default();
    let mut value = String::new();
    let mut literal = true;
    match brush_parser::word::parse(raw, options) {
        Ok(pieces) => pieces_into(&pieces, &mut value, &mut literal, &mut w),
        Err(_) => {
            w.bad = true;
            literal = false;
        }
    }
    if literal {
        w.literal = Some(value);
    }
    w
}

/// A here-document's body (when it expands): its substitutions.
pub(super) fn read_heredoc(body: &str, options: &ParserOptions) -> Word {
    let mut w = Word::default();
    let mut value = String::new();
    let mut literal = true;
    match brush_parser::word::parse_heredoc(body, options) {
        Ok(pieces) => pieces_into(&pieces, &mut value, &mut literal, &mut w),
        Err(_) => w.bad = true,
    }
    w
}

fn pieces_into(
    pieces: &[WordPieceWithSource],
    value: &mut String,
    literal: &mut bool,
    w: &mut Word,
) {
    for p in pieces {
        match &p.piece {
            WordPiece::Text(s) | WordPiece::SingleQuotedText(s) => value.push_str(s),
            WordPiece::EscapeSequence(s) => {
                let rest = s.strip_prefix('\\').unwrap_or(s);
                if rest != "\n" {
                    value.push_str(rest);
                }
            }
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                pieces_into(inner, value, literal, w);
            }
            WordPiece::AnsiCQuotedText(_) | WordPiece::TildeExpansion(_) => *literal = false,
            WordPiece::ParameterExpansion(expr) => {
                *literal = false;
                if !plain_parameter(expr) {
                    w.runs = true;
                    w.blind = true;
                }
            }
            WordPiece::CommandSubstitution(body)
            | WordPiece::BackquotedCommandSubstitution(body) => {
                *literal = false;
                w.runs = true;
                w.substitutions.push(body.clone());
            }
            WordPiece::ArithmeticExpression(_) => {
                *literal = false;
                w.runs = true;
                w.blind = true;
            }
        }
    }
}

/// `$name`, `${name}`, `$1`, `$?`: expands, runs nothing.
fn plain_parameter(expr: &ParameterExpr) -> bool {
    matches!(
        expr,
        ParameterExpr::Parameter {
            parameter: Parameter::Named(_) | Parameter::Positional(_) | Parameter::Special(_),
            indirect: false,
        }
    )
}
