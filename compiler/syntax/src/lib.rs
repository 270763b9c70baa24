//! Text to abstract syntax tree: lexer (logos), layout pass and grammar
//! (lalrpop).
//!
//! Parsing never fails: [`parse`] always returns a tree, with `Error` nodes
//! where the input did not parse, and every problem as a [`Diagnostic`].
//! No salsa, no file I/O and no knowledge of types live here.

pub mod ast;
mod chunks;
mod dump;
mod fstring;
mod layout;
mod lexer;
mod mistakes;
mod parser;
mod spans;
mod token;
mod validate;

use tessera_base::{FileId, LineIndex, Span};
use tessera_diagnostics::{Code, Diagnostic};

pub use chunks::{chunk_ranges, parse_by_chunks};
pub use dump::dump;
pub use spans::map_stmt_spans;

/// The result of parsing one file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Parse {
    pub module: ast::Module,
    /// Lexical, layout and syntax errors, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses `text` (the contents of `file`).
pub fn parse(file: FileId, text: &str) -> Parse {
    let (tokens, mut diagnostics) = layout::tokens(file, text);
    let tokens = fstring::expand(file, text, tokens, &mut diagnostics);
    let (body, parse_diags) = parser::parse_tokens(file, text, &tokens);
    let module = ast::Module {
        body,
        span: Span::new(0, text.len() as u32),
    };
    let index = LineIndex::new(text);
    merge_parse_errors(&mut diagnostics, parse_diags, &index);
    merge_parse_errors(&mut diagnostics, validate::validate(file, &module), &index);
    diagnostics.sort_by_key(|d| d.primary_span().map(|s| (s.span.start, s.span.end)));
    Parse { module, diagnostics }
}

/// Adds parse (or validation) errors, dropping the echoes of errors
/// already reported: the first error on a line explains it (a stray
/// character also fails to parse), and everything between an unclosed
/// bracket and the point where the layout pass closed it is garbled by it.
fn merge_parse_errors(diags: &mut Vec<Diagnostic>, parse_diags: Vec<Diagnostic>, index: &LineIndex) {
    let line_of = |d: &Diagnostic| index.line_col(d.primary_span().map_or(0, |s| s.span.start)).line;
    let mut lines: Vec<u32> = diags.iter().map(line_of).collect();
    let garbled: Vec<Span> = diags
        .iter()
        .filter(|d| d.code == Code::E0020)
        .map(|d| {
            d.labels
                .iter()
                .fold(d.labels[0].span.span, |acc, l| acc.cover(l.span.span))
        })
        .collect();
    for diag in parse_diags {
        let line = line_of(&diag);
        let start = diag.primary_span().map_or(0, |s| s.span.start);
        let in_garbled = garbled.iter().any(|g| g.start <= start && start <= g.end);
        if !lines.contains(&line) && !in_garbled {
            lines.push(line);
            diags.push(diag);
        }
    }
}
