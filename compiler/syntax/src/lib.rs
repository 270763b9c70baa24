//! Text to abstract syntax tree: lexer (logos), layout pass and grammar
//! (lalrpop).
//!
//! Parsing never fails: [`parse`] always returns a tree, with `Error` nodes
//! where the input did not parse, and every problem as a [`Diagnostic`].
//! No salsa, no file I/O and no knowledge of types live here.

pub mod ast;
mod dump;
mod layout;
mod lexer;
mod parser;
mod spans;
mod token;
mod validate;

use tessera_base::{FileId, Span};
use tessera_diagnostics::Diagnostic;

pub use dump::dump;

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
    let (body, parse_diags) = parser::parse_tokens(file, &tokens);
    let module = ast::Module {
        body,
        span: Span::new(0, text.len() as u32),
    };
    merge_parse_errors(&mut diagnostics, parse_diags, text);
    diagnostics.extend(validate::validate(file, &module));
    diagnostics.sort_by_key(|d| d.primary_span().map(|s| (s.span.start, s.span.end)));
    Parse {
        module,
        diagnostics,
    }
}

/// Adds parse errors, dropping those on a line that already has an error:
/// the first error on a line explains it, later ones are its echoes (a
/// stray character also fails to parse, an unclosed bracket breaks the
/// statement around it).
fn merge_parse_errors(diags: &mut Vec<Diagnostic>, parse_diags: Vec<Diagnostic>, text: &str) {
    let line_of = |d: &Diagnostic| {
        let offset = d
            .primary_span()
            .map_or(0, |s| s.span.start as usize)
            .min(text.len());
        text.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
    };
    let mut lines: Vec<usize> = diags.iter().map(line_of).collect();
    for diag in parse_diags {
        let line = line_of(&diag);
        if !lines.contains(&line) {
            lines.push(line);
            diags.push(diag);
        }
    }
}
