//! The layout pass: physical lines to NEWLINE / INDENT / DEDENT tokens.
//!
//! Inside brackets, line breaks are ignored (implicit joining); a backslash at
//! the end of a line joins it with the next. Blank and comment-only lines
//! produce nothing. Indentation is compared as Python does: a line's
//! indentation must order the same way against the enclosing block whether a
//! tab counts as 8 columns or as 1, otherwise tabs and spaces are mixed
//! inconsistently (E0010).
//!
//! The pass repairs what it reports, so the parser sees a well-formed stream:
//! an unexpected indent becomes a "phantom" level that emits no tokens, a
//! missing block becomes a synthetic `pass`, unclosed brackets are closed
//! when a line starts with a statement keyword at the same or a lower
//! indentation (or, in a block header, at its final `:` when an indented
//! block follows), a stray closer is dropped, and a `{` ending a block
//! header is read as `:` (its `}` at the start of a later line dropped).

use tessera_base::{FileId, Span};
use tessera_diagnostics::{Applicability, Code, Diagnostic, Fix};

use crate::lexer::{Lexeme, Lexer};
use crate::token::Tok;

/// A token with its byte range, as the parser takes it.
pub(crate) type Spanned<'a> = (u32, Tok<'a>, u32);

pub(crate) const MAX_BRACKET_DEPTH: usize = 200;
pub(crate) const MAX_BLOCK_DEPTH: usize = 100;

struct Level {
    /// Indentation width with tabs as 8 columns, and with tabs as 1.
    width8: usize,
    width1: usize,
    /// A level entered without an INDENT token (error recovery); leaving it
    /// emits no DEDENT.
    phantom: bool,
}

struct Layout<'a> {
    file: FileId,
    text: &'a str,
    out: Vec<Spanned<'a>>,
    diags: Vec<Diagnostic>,
    levels: Vec<Level>,
    brackets: Vec<(Tok<'a>, Span)>,
    /// Brackets opened past [`MAX_BRACKET_DEPTH`] whose contents are being skipped.
    skipping: usize,
    line_has_tokens: bool,
    /// The last token of the current logical line was a `:` (at this span).
    trailing_colon: Option<Span>,
    at_line_start: bool,
    /// A line break inside brackets was just seen.
    line_break_in_brackets: bool,
    /// The current logical line starts with a keyword that opens a block.
    line_opens_block: bool,
    /// E0014 for blocks was reported (once per file is enough).
    depth_reported: bool,
    /// Blocks opened with `{` (read as `:`) whose `}` has not been seen.
    brace_blocks: usize,
}

/// Runs the lexer and the layout pass over `text`.
pub(crate) fn tokens(file: FileId, text: &str) -> (Vec<Spanned<'_>>, Vec<Diagnostic>) {
    let mut lexer = Lexer::new(file, text);
    let mut layout = Layout {
        file,
        text,
        out: Vec::with_capacity(text.len() / 4),
        diags: Vec::new(),
        levels: vec![Level {
            width8: 0,
            width1: 0,
            phantom: false,
        }],
        brackets: Vec::new(),
        skipping: 0,
        line_has_tokens: false,
        trailing_colon: None,
        at_line_start: true,
        line_break_in_brackets: false,
        line_opens_block: false,
        depth_reported: false,
        brace_blocks: 0,
    };
    for (lexeme, span) in lexer.by_ref() {
        match lexeme {
            Lexeme::Newline => layout.line_break(span),
            Lexeme::Continuation => {}
            Lexeme::Token(tok) => layout.token(tok, span),
        }
    }
    layout.finish();
    // An unterminated string runs to the end of its line, over the closers
    // of the brackets around it: those brackets are its echo.
    let unterminated: Vec<u32> = lexer
        .diags
        .iter()
        .filter(|d| d.code == Code::E0002)
        .filter_map(|d| d.primary_span().map(|s| s.span.start))
        .collect();
    layout.diags.retain(|d| {
        let echo = d.code == Code::E0020 && {
            let first = d.labels[0].span.span;
            let reach = d.labels.iter().fold(first, |acc, l| acc.cover(l.span.span));
            unterminated.iter().any(|&at| reach.start <= at && at <= reach.end)
        };
        !echo
    });
    let mut diags = lexer.diags;
    diags.append(&mut layout.diags);
    diags.sort_by_key(|d| d.primary_span().map(|s| s.span.start));
    (layout.out, diags)
}

/// Keywords that start a statement with a block (`if x:`).
fn opens_block(tok: &Tok) -> bool {
    matches!(
        tok,
        Tok::Def | Tok::If | Tok::Elif | Tok::Else | Tok::For | Tok::While | Tok::With
    )
}

/// Tokens that end an operand: a line inside brackets that starts with a
/// name right after one cannot continue the expression.
fn ends_operand(tok: &Tok) -> bool {
    matches!(
        tok,
        Tok::Name(_)
            | Tok::Int(_)
            | Tok::Float(_)
            | Tok::Size(_)
            | Tok::Str(_)
            | Tok::True
            | Tok::False
            | Tok::None
            | Tok::RParen
            | Tok::RBracket
            | Tok::RBrace
    )
}

/// Keywords that only ever start a statement: seeing one first on a line
/// inside brackets means the brackets were left open by mistake. (`for`
/// also starts a comprehension's clause: [`Layout::starts_loop`].)
fn starts_statement_only(tok: &Tok) -> bool {
    matches!(
        tok,
        Tok::Def
            | Tok::Return
            | Tok::While
            | Tok::Import
            | Tok::Pass
            | Tok::Break
            | Tok::Continue
            | Tok::Assert
            | Tok::Elif
            | Tok::With
            | Tok::From
    )
}

impl<'a> Layout<'a> {
    fn emit(&mut self, tok: Tok<'a>, span: Span) {
        self.out.push((span.start, tok, span.end));
    }

    fn error(&mut self, diag: Diagnostic) {
        self.diags.push(diag);
    }

    fn at(&self, span: Span) -> tessera_base::FileSpan {
        span.in_file(self.file)
    }

    /// Whether the `for` at `span` starts a loop, not a comprehension's
    /// clause: the rest of its line (less a comment) ends with the loop's
    /// `:`.
    fn starts_loop(&self, span: Span) -> bool {
        let rest = self.text.get(span.end as usize..).unwrap_or_default();
        let line = rest.split('\n').next().unwrap_or_default();
        let code = line.split('#').next().unwrap_or_default();
        code.trim_end().ends_with(':')
    }

    /// Whether nothing but a comment follows `span` on its line. Stops at
    /// the first character that is not a space: a line of many `{` does not
    /// scan its rest once per `{`.
    fn rest_of_line_empty(&self, span: Span) -> bool {
        let rest = self.text.get(span.end as usize..).unwrap_or_default();
        rest.chars()
            .take_while(|&c| c != '\n')
            .find(|c| !c.is_whitespace())
            .is_none_or(|c| c == '#')
    }

    /// Ends the logical line before the token at `offset`, which starts a
    /// new one.
    fn end_line(&mut self, offset: u32) {
        if self.line_has_tokens {
            self.emit(Tok::Newline, Span::empty(offset));
            self.line_has_tokens = false;
        }
        self.at_line_start = true;
    }

    fn line_break(&mut self, span: Span) {
        if !self.brackets.is_empty() || self.skipping > 0 {
            self.line_break_in_brackets = true;
            return;
        }
        if self.line_has_tokens {
            self.emit(Tok::Newline, span);
            self.line_has_tokens = false;
        }
        self.at_line_start = true;
    }

    fn token(&mut self, tok: Tok<'a>, span: Span) {
        if self.skipping > 0 {
            self.skip(&tok);
            return;
        }
        let after_operand = self.out.last().is_some_and(|t| ends_operand(&t.1));
        let broke_line = std::mem::take(&mut self.line_break_in_brackets);
        // Only a token that starts a line inside brackets can close them, so
        // only its indentation and the rest of its line are looked at: doing
        // it for every token would scan a long line once per token on it.
        let starts_new_statement = broke_line
            && match tok {
                Tok::For => self.starts_loop(span),
                _ => starts_statement_only(&tok) || (matches!(tok, Tok::Name(_)) && after_operand),
            };
        let indent = if broke_line { self.indent_of(span.start).0 } else { 0 };
        let level = self.levels.last().map_or(0, |l| l.width8);
        if broke_line && starts_new_statement && indent <= level {
            self.close_unclosed(span.start, "this line starts a new statement");
            self.end_line(span.start);
        } else if broke_line && self.line_opens_block && indent > level {
            // `def f(x: f32:` and an indented body: the header ended at its `:`.
            if let Some(colon) = self
                .trailing_colon
                .filter(|_| self.out.last().is_some_and(|t| t.1 == Tok::Colon))
            {
                self.out.pop();
                self.close_unclosed(colon.start, "the header ends at this `:`");
                self.emit(Tok::Colon, colon);
                self.end_line(span.start);
            }
        }
        if self.at_line_start {
            self.at_line_start = false;
            self.indentation(span.start);
            self.line_opens_block = opens_block(&tok);
            // `}` alone at the start of a line closes a block opened with `{`.
            if tok == Tok::RBrace && self.brackets.is_empty() && self.brace_blocks > 0 {
                self.brace_blocks -= 1;
                return;
            }
        }
        // `if x > 0 {` at the end of a line: a C-style block, read as `:`.
        if tok == Tok::LBrace
            && self.brackets.is_empty()
            && self.line_opens_block
            && after_operand
            && self.rest_of_line_empty(span)
        {
            let prev_end = self.out.last().map_or(span.start, |t| t.2);
            let edit = self.at(Span::new(prev_end, span.end));
            self.error(
                Diagnostic::error(Code::E0030, "a block is opened with `:`, not `{`")
                    .with_primary(self.at(span), "a C-style block")
                    .with_help("end the header with `:` and indent the block; it ends where the indentation does")
                    .with_fix(Fix::new("write `:`", Applicability::MachineApplicable).with_edit(edit, ":")),
            );
            self.brace_blocks += 1;
            self.trailing_colon = Some(span);
            self.line_has_tokens = true;
            self.emit(Tok::Colon, span);
            return;
        }
        if tok.closer().is_some() {
            if self.brackets.len() >= MAX_BRACKET_DEPTH {
                self.error(
                    Diagnostic::error(Code::E0014, "brackets nested too deeply")
                        .with_primary(
                            self.at(span),
                            format!("more than {MAX_BRACKET_DEPTH} levels of brackets"),
                        )
                        .with_help("split the expression into smaller ones"),
                );
                self.skipping = 1;
                return;
            }
            self.brackets.push((tok.clone(), span));
        } else if tok.is_closer() && !self.closer(&tok, span) {
            return;
        }
        self.trailing_colon = (tok == Tok::Colon).then_some(span);
        self.line_has_tokens = true;
        self.emit(tok, span);
    }

    /// Drops tokens inside an over-deep bracket until it closes.
    fn skip(&mut self, tok: &Tok) {
        if tok.closer().is_some() {
            self.skipping += 1;
        } else if tok.is_closer() {
            self.skipping -= 1;
        }
    }

    /// Handles a closing delimiter; returns whether to emit it.
    fn closer(&mut self, tok: &Tok<'a>, span: Span) -> bool {
        let matches = |open: &Tok| open.closer().as_ref() == Some(tok);
        match self.brackets.iter().rposition(|(open, _)| matches(open)) {
            Some(i) if i + 1 == self.brackets.len() => {
                self.brackets.pop();
                true
            }
            Some(i) => {
                // Brackets opened after the one this closes were left open.
                while self.brackets.len() > i + 1 {
                    let (open, open_span) = self.brackets.pop().expect("checked length");
                    self.unclosed(&open, open_span, span, "closed too early by this");
                }
                self.brackets.pop();
                true
            }
            None => {
                let Some((open, open_span)) = self.brackets.last().cloned() else {
                    self.error(
                        Diagnostic::error(Code::E0022, format!("unmatched closing delimiter {tok}"))
                            .with_primary(self.at(span), "nothing is open here")
                            .with_help("remove it, or add the opening delimiter it was meant to close"),
                    );
                    return false;
                };
                let expected = open.closer().expect("brackets holds openers");
                self.error(
                    Diagnostic::error(Code::E0021, format!("mismatched closing delimiter {tok}"))
                        .with_primary(self.at(span), format!("expected {expected} here"))
                        .with_secondary(self.at(open_span), format!("{open} opened here")),
                );
                // Read it as the closer that was expected.
                self.brackets.pop();
                self.emit(expected, span);
                self.line_has_tokens = true;
                false
            }
        }
    }

    fn unclosed(&mut self, open: &Tok<'a>, open_span: Span, at: Span, why: &str) {
        let closer = open.closer().expect("brackets holds openers");
        self.error(
            Diagnostic::error(Code::E0020, format!("unclosed delimiter {open}"))
                .with_primary(self.at(open_span), format!("this {open} is never closed"))
                .with_secondary(self.at(at), why.to_string())
                .with_help(format!("add the missing {closer}")),
        );
        self.emit(closer, Span::empty(at.start));
    }

    /// Reports and closes every open bracket, as if closed at `offset`.
    fn close_unclosed(&mut self, offset: u32, why: &str) {
        while let Some((open, open_span)) = self.brackets.pop() {
            self.unclosed(&open, open_span, Span::empty(offset), why);
        }
        self.skipping = 0;
    }

    /// The indentation before `offset` on its line, as (tab = 8, tab = 1)
    /// widths, and whether it mixes tabs and spaces.
    fn indent_of(&self, offset: u32) -> (usize, usize, Span) {
        let mut start = self.text[..offset as usize].rfind('\n').map_or(0, |i| i + 1);
        // The lexer skips a byte-order mark: it is no indentation either.
        if start == 0 && self.text.starts_with('\u{feff}') {
            start = '\u{feff}'.len_utf8();
        }
        let indent = &self.text[start..offset as usize];
        let mut width8 = 0;
        for c in indent.chars() {
            width8 = if c == '\t' { (width8 / 8 + 1) * 8 } else { width8 + 1 };
        }
        (width8, indent.chars().count(), Span::from_range(start..offset as usize))
    }

    fn indentation(&mut self, offset: u32) {
        let (width8, width1, indent_span) = self.indent_of(offset);
        let opener = self.trailing_colon.take();
        let current = self.levels.last().expect("the outermost level is never popped");
        let (current8, current1) = (current.width8, current.width1);
        // A line that returns to an enclosing block's indentation, the
        // same whatever a tab counts, is consistent with that block.
        let returns = width8 < current8 && self.levels.iter().any(|l| l.width8 == width8 && l.width1 == width1);
        let inconsistent = width8.cmp(&current8) != width1.cmp(&current1) && !returns;
        if inconsistent {
            self.error(
                Diagnostic::error(Code::E0010, "indentation mixes tabs and spaces inconsistently")
                    .with_primary(
                        self.at(indent_span),
                        "this indentation uses tabs and spaces differently from the block it is in",
                    )
                    .with_help("indent with spaces only"),
            );
        }
        let here = Span::empty(offset);
        if inconsistent && opener.is_none() {
            // Read as a line of the innermost block, so that the lines
            // after it are compared with that block again, not with it:
            // the mistake is reported once.
            return;
        }
        let opener = match opener {
            None if width8 > current8 && self.line_opens_block && !inconsistent => self.insert_missing_colon(),
            other => other,
        };
        if width8 > current8 {
            let real = opener.is_some();
            if !real && !inconsistent {
                self.error(
                    Diagnostic::error(Code::E0012, "unexpected indent")
                        .with_primary(
                            self.at(indent_span),
                            "this line is indented, but the line before does not open a block",
                        )
                        .with_help("remove the indentation, or end the line before with `:`"),
                );
            }
            // `levels` holds the top level too: a body at depth 100 is the 101st entry.
            if real && self.levels.len() > MAX_BLOCK_DEPTH {
                if !std::mem::replace(&mut self.depth_reported, true) {
                    self.error(
                        Diagnostic::error(Code::E0014, "blocks nested too deeply")
                            .with_primary(
                                self.at(indent_span),
                                format!("more than {MAX_BLOCK_DEPTH} levels of blocks"),
                            )
                            .with_help("move the inner code into a function"),
                    );
                }
                self.synthetic_block(here);
                self.levels.push(Level {
                    width8,
                    width1,
                    phantom: true,
                });
                return;
            }
            self.levels.push(Level {
                width8,
                width1,
                phantom: !real,
            });
            if real {
                self.emit(Tok::Indent, here);
            }
            return;
        }
        if let Some(colon) = opener {
            self.missing_block(colon, indent_span.cover(here));
        }
        let block_end = self.block_end();
        while self.levels.len() > 1 && self.levels.last().is_some_and(|l| l.width8 > width8) {
            let level = self.levels.pop().expect("checked length");
            if !level.phantom {
                self.emit(Tok::Dedent, block_end);
            }
        }
        if self.levels.last().is_some_and(|l| l.width8 < width8) {
            if !inconsistent {
                self.error(
                    Diagnostic::error(Code::E0011, "unindent does not match any outer indentation level")
                        .with_primary(
                            self.at(indent_span),
                            "this line is indented less than its block, but more than the block around it",
                        )
                        .with_help("indent it to the level of the block it belongs to"),
                );
            }
            self.levels.push(Level {
                width8,
                width1,
                phantom: true,
            });
        }
    }

    /// The line before opens a block and the line after is indented, but
    /// the `:` is missing: report it and supply it, so the block parses.
    fn insert_missing_colon(&mut self) -> Option<Span> {
        let newline = self
            .out
            .len()
            .checked_sub(1)
            .filter(|&i| self.out[i].1 == Tok::Newline)?;
        let end = self.out.get(newline.checked_sub(1)?)?.2;
        let at = Span::empty(end);
        self.error(
            Diagnostic::error(Code::E0031, "missing `:` at the end of the line")
                .with_primary(self.at(at), "expected `:` here")
                .with_fix(Fix::new("add `:`", Applicability::MachineApplicable).with_edit(self.at(at), ":")),
        );
        self.out.insert(newline, (end, Tok::Colon, end));
        Some(at)
    }

    fn missing_block(&mut self, colon: Span, at: Span) {
        self.error(
            Diagnostic::error(Code::E0013, "expected an indented block")
                .with_primary(self.at(at), "this line should be indented")
                .with_secondary(self.at(colon), "the block opened here")
                .with_help("indent the body, or write `pass` for an empty block"),
        );
        self.synthetic_block(Span::empty(at.end));
    }

    /// `INDENT pass NEWLINE DEDENT`, standing in for a missing block.
    fn synthetic_block(&mut self, at: Span) {
        self.emit(Tok::Indent, at);
        self.emit(Tok::Pass, at);
        self.emit(Tok::Newline, at);
        self.emit(Tok::Dedent, at);
    }

    /// Just after the last token that is not layout.
    fn last_token_end(&self) -> Span {
        let last = self
            .out
            .iter()
            .rev()
            .find(|t| !matches!(t.1, Tok::Newline | Tok::Indent | Tok::Dedent));
        Span::empty(last.map_or(0, |t| t.2))
    }

    /// Where the blocks that end here end: after the line break of their
    /// last line, so that the blank lines and comments between them and the
    /// next statement (or the end of the file) belong to neither. The
    /// tokens stay in source order.
    fn block_end(&self) -> Span {
        match self
            .out
            .iter()
            .rev()
            .find(|t| !matches!(t.1, Tok::Indent | Tok::Dedent))
        {
            Some(t) if t.1 == Tok::Newline => Span::empty(t.2),
            _ => self.last_token_end(),
        }
    }

    fn finish(&mut self) {
        // Errors at the end point just after the last token, on its line.
        let end = self.last_token_end();
        self.close_unclosed(end.start, "the file ends here");
        if self.line_has_tokens {
            self.emit(Tok::Newline, end);
        }
        if let Some(colon) = self.trailing_colon.take() {
            self.error(
                Diagnostic::error(Code::E0013, "expected an indented block")
                    .with_primary(self.at(end), "the file ends here")
                    .with_secondary(self.at(colon), "the block opened here")
                    .with_help("indent the body, or write `pass` for an empty block"),
            );
            self.synthetic_block(end);
        }
        let block_end = self.block_end();
        while self.levels.len() > 1 {
            let level = self.levels.pop().expect("checked length");
            if !level.phantom {
                self.emit(Tok::Dedent, block_end);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{expect, Expect};

    fn check(text: &str, expected: Expect) {
        let (toks, diags) = tokens(FileId(0), text);
        let mut out: Vec<String> = toks
            .iter()
            .map(|(_, t, _)| match t {
                Tok::Name(n) => n.to_string(),
                Tok::Newline => "NL".into(),
                Tok::Indent => "INDENT".into(),
                Tok::Dedent => "DEDENT".into(),
                other => other.text().map_or_else(|| format!("{other:?}"), str::to_string),
            })
            .collect();
        out.extend(diags.iter().map(|d| format!("!{}", d.code)));
        expected.assert_eq(&out.join(" "));
    }

    #[test]
    fn blocks_and_blank_lines() {
        check(
            "def f():\n    x\n\n    # c\n    if a:\n        y\nz\n",
            expect![[r#"def f ( ) : NL INDENT x NL if a : NL INDENT y NL DEDENT DEDENT z NL"#]],
        );
    }

    #[test]
    fn brackets_join_lines_and_backslash_continues() {
        check(
            "f(a,\n  b)\nx = 1 + \\\n  2\n",
            expect!["f ( a , b ) NL x = Int(1) + Int(2) NL"],
        );
    }

    #[test]
    fn missing_final_newline_and_dedents_at_eof() {
        check("if a:\n    b", expect!["if a : NL INDENT b NL DEDENT"]);
    }

    #[test]
    fn unexpected_indent_is_a_phantom_level() {
        check("a\n    b\n    c\nd\n", expect!["a NL b NL c NL d NL !E0012"]);
    }

    #[test]
    fn inconsistent_dedent() {
        check(
            "if a:\n    b\n  c\n  d\n",
            expect!["if a : NL INDENT b NL DEDENT c NL d NL !E0011"],
        );
    }

    #[test]
    fn tabs_after_spaces_are_inconsistent() {
        check(
            "if a:\n    b\n\tc\n",
            expect!["if a : NL INDENT b NL c NL DEDENT !E0010"],
        );
    }

    #[test]
    fn an_inconsistent_line_stays_in_its_block_and_is_reported_once() {
        check(
            "if a:\n    b\n\tc\n    d\ne\n",
            expect!["if a : NL INDENT b NL c NL d NL DEDENT e NL !E0010"],
        );
        check(
            "if a:\n\tb\n    c\n\td\n",
            expect!["if a : NL INDENT b NL c NL d NL DEDENT !E0010"],
        );
    }

    #[test]
    fn a_tab_indented_block_dedents_to_a_space_indented_one() {
        check(
            "if a:\n    if b:\n\t\tc\n\t\td\n    e\n",
            expect!["if a : NL INDENT if b : NL INDENT c NL d NL DEDENT e NL DEDENT !E0010"],
        );
    }

    #[test]
    fn missing_block_gets_a_synthetic_pass() {
        check(
            "def f():\nx\n",
            expect!["def f ( ) : NL INDENT pass NL DEDENT x NL !E0013"],
        );
        check("def f():", expect!["def f ( ) : NL INDENT pass NL DEDENT !E0013"]);
    }

    #[test]
    fn unclosed_bracket_closes_at_next_statement_keyword() {
        check(
            "x = f(a,\ndef g():\n    pass\n",
            expect!["x = f ( a , ) NL def g ( ) : NL INDENT pass NL DEDENT !E0020"],
        );
    }

    #[test]
    fn unclosed_bracket_closes_before_a_name_after_an_operand() {
        check(
            "x = (1 + 2\ny = 3\n",
            expect!["x = ( Int(1) + Int(2) ) NL y = Int(3) NL !E0020"],
        );
        check("x = f(a,\n  b)\n", expect!["x = f ( a , b ) NL"]);
    }

    #[test]
    fn missing_colon_before_an_indented_block_is_supplied() {
        check(
            "if a\n    b\nelse\n    c\n",
            expect!["if a : NL INDENT b NL DEDENT else : NL INDENT c NL DEDENT !E0031 !E0031"],
        );
    }

    #[test]
    fn mismatched_and_unmatched_closers() {
        check("f(a]\n", expect!["f ( a ) NL !E0021"]);
        check("a)\n", expect!["a NL !E0022"]);
        check("f([a)\n", expect!["f ( [ a ] ) NL !E0020"]);
    }

    #[test]
    fn over_deep_brackets_are_skipped() {
        let text = format!("x = {}1{}\n", "(".repeat(250), ")".repeat(250));
        let (toks, diags) = tokens(FileId(0), &text);
        assert_eq!(diags.iter().map(|d| d.code.as_str()).collect::<Vec<_>>(), ["E0014"]);
        let opens = toks.iter().filter(|t| t.1 == Tok::LParen).count();
        let closes = toks.iter().filter(|t| t.1 == Tok::RParen).count();
        assert_eq!((opens, closes), (MAX_BRACKET_DEPTH, MAX_BRACKET_DEPTH));
    }

    #[test]
    fn a_brace_ends_a_header_only_before_spaces_or_a_comment() {
        check("if a {  \t# c\n    b\n", expect!["if a : NL INDENT b NL DEDENT !E0030"]);
        check("if a {\r\n    b\n", expect!["if a : NL INDENT b NL DEDENT !E0030"]);
        check("if a { b }\n", expect!["if a { b } NL"]);
        check(
            "if a {} or a {} or a {\n    b\n",
            expect!["if a { } or a { } or a : NL INDENT b NL DEDENT !E0030"],
        );
    }
}
