//! Splitting a file into top-level chunks that parse independently.
//!
//! A chunk starts at a line whose first character is code at column 0,
//! outside brackets, strings and backslash continuations, that does not
//! continue the previous statement (`else`, `elif`, …) or follow a
//! decorator. At such a line the layout pass is back in its initial state
//! (no open bracket, indentation stack `[0]`), so parsing the chunks one by
//! one gives the same statements as parsing the whole file. The database
//! parses chunks separately, so an edit re-parses only the chunk it touches.

use std::ops::Range;

use tessera_base::{FileId, Span};

use crate::{parse, spans, Parse};

/// The byte ranges of the top-level chunks of `text`: they are contiguous,
/// cover the whole text, and each but the first starts at a line start.
pub fn chunk_ranges(text: &str) -> Vec<Range<usize>> {
    let starts = chunk_starts(text.as_bytes());
    let mut ranges = Vec::with_capacity(starts.len());
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(text.len());
        ranges.push(start..end);
    }
    ranges
}

/// Parses `text` chunk by chunk and puts the results together: the same
/// tree as [`parse`] gives, the reference this is tested against.
pub fn parse_by_chunks(file: FileId, text: &str) -> Parse {
    let mut out = Parse {
        module: crate::ast::Module {
            body: Vec::new(),
            span: Span::new(0, text.len() as u32),
        },
        diagnostics: Vec::new(),
    };
    for range in chunk_ranges(text) {
        let offset = range.start as u32;
        let chunk = parse(file, &text[range]);
        let shift = &mut |span: &mut Span| *span = Span::new(span.start + offset, span.end + offset);
        for mut stmt in chunk.module.body {
            spans::map_stmt_spans(&mut stmt, shift);
            out.module.body.push(stmt);
        }
        for mut diag in chunk.diagnostics {
            diag.map_spans(&mut |fs| shift(&mut fs.span));
            out.diagnostics.push(diag);
        }
    }
    out
}

fn chunk_starts(text: &[u8]) -> Vec<usize> {
    let mut starts = vec![0];
    let mut depth = 0usize;
    let mut in_triple: Option<u8> = None;
    let mut continued = false;
    let mut after_decorator = false;
    // The last byte of code seen, outside strings and comments: a line that
    // ends with `:` opens a block, and the next line belongs to it even when
    // it is (wrongly) not indented.
    let mut last_code = b'\n';
    let mut i = 0;
    while i < text.len() {
        // `i` is at the start of a line.
        if in_triple.is_none() && depth == 0 && !continued && last_code != b':' {
            let starts_chunk = match text[i] {
                b' ' | b'\t' | b'\x0c' | b'\r' | b'\n' | b'#' => false,
                _ if continues_statement(&text[i..]) => {
                    after_decorator = false;
                    false
                }
                b => !std::mem::replace(&mut after_decorator, b == b'@'),
            };
            if starts_chunk && i > 0 {
                starts.push(i);
            }
        }
        continued = false;
        while i < text.len() {
            let b = text[i];
            if let Some(quote) = in_triple {
                match b {
                    b'\\' if text[i + 1..].starts_with(b"\r\n") => i += 3,
                    b'\\' if i + 1 < text.len() && text[i + 1] != b'\n' => i += 2,
                    b'\n' => {
                        i += 1;
                        break;
                    }
                    _ if b == quote && text[i..].starts_with(&[quote; 3]) => {
                        in_triple = None;
                        i += 3;
                    }
                    _ => i += 1,
                }
                continue;
            }
            match b {
                b'\n' => {
                    i += 1;
                    break;
                }
                b'#' => {
                    while i < text.len() && text[i] != b'\n' {
                        i += 1;
                    }
                }
                b'\\' if text[i + 1..].starts_with(b"\n") || text[i + 1..].starts_with(b"\r\n") => {
                    continued = true;
                    i += if text[i + 1] == b'\r' { 3 } else { 2 };
                    break;
                }
                b'(' | b'[' | b'{' => {
                    depth += 1;
                    last_code = b;
                    i += 1;
                }
                b')' | b']' | b'}' => {
                    depth = depth.saturating_sub(1);
                    last_code = b;
                    i += 1;
                }
                b'"' | b'\'' if text[i + 1..].starts_with(&[b; 2]) => {
                    in_triple = Some(b);
                    last_code = b;
                    i += 3;
                }
                b'"' | b'\'' => {
                    last_code = b;
                    i = single_quoted_end(text, i);
                }
                b' ' | b'\t' | b'\x0c' | b'\r' => i += 1,
                _ => {
                    last_code = b;
                    i += 1;
                }
            }
        }
    }
    starts
}

/// Where a single-quoted string opened at `open` ends: after its closing
/// quote, or at the end of its line (as the lexer scans it).
fn single_quoted_end(text: &[u8], open: usize) -> usize {
    let quote = text[open];
    let mut i = open + 1;
    while i < text.len() {
        match text[i] {
            b'\\' if text[i + 1..].starts_with(b"\r\n") => i += 3,
            b'\\' if i + 1 < text.len() && text[i + 1] != b'\n' => i += 2,
            b'\n' => return i,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    text.len()
}

/// Lines that continue the statement before them: `else:` after an `if`.
fn continues_statement(line: &[u8]) -> bool {
    ["else", "elif", "except", "finally"].iter().any(|kw| {
        line.starts_with(kw.as_bytes())
            && !line
                .get(kw.len())
                .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn starts(text: &str) -> Vec<usize> {
        chunk_ranges(text).iter().map(|r| r.start).collect()
    }

    #[test]
    fn splits_at_top_level_statements() {
        let text = "import a\n\n@kernel\n# note\n@deterministic\ndef f():\n    x = (1,\n2)\n    pass\nif x:\n    y\nelse:\n    z\nq = 1\n";
        assert_eq!(starts(text), [0, 10, 73, 97]);
    }

    #[test]
    fn brackets_strings_and_continuations_do_not_split() {
        let text = "x = (1,\n2)\ns = \"\"\"\ndef g():\n\"\"\"\nt = '(' \\\n+ 1\nu = ')' # (\nv = 2\n";
        assert_eq!(starts(text), [0, 11, 32, 46, 58]);
    }
}
