//! f-strings. Before parsing, `f"x = {x:.3f}, {name!r}"` becomes the
//! tokens of `("x = " + format(x, ".3f") + ", " + repr(name))`: string
//! literals for the text between the fields, `format(value, spec)` for a
//! field (`spec` empty without `:`), `repr(value)` for `!r` and for a
//! self-documenting `{x=}` (whose text, `x=`, comes first), `str(value)`
//! for `!s` (each inside `format(…, spec)` when there is a spec). The tokens of a
//! field's expression are the lexer's, at their places in the file, so
//! that diagnostics, hover and go-to-definition see the expression as
//! written. `format` and `repr` are host builtins (spec/lexical.md).

use tessera_base::{FileId, Span};
use tessera_diagnostics::{Code, Diagnostic};

use crate::layout::Spanned;
use crate::lexer::{string_value, Lexeme, Lexer, StringEnd};
use crate::token::Tok;

/// `tokens` with each f-string (a name `f` or `F` right before a string)
/// replaced by the tokens of its expression.
pub(crate) fn expand<'a>(
    file: FileId,
    text: &'a str,
    tokens: Vec<Spanned<'a>>,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Spanned<'a>> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut it = tokens.into_iter().peekable();
    while let Some(tok) = it.next() {
        let prefix = matches!(tok.1, Tok::Name("f" | "F"));
        match it.peek() {
            Some(&(start, Tok::Str(_), end)) if prefix && start == tok.2 => {
                it.next();
                let mut fs = FString {
                    file,
                    text,
                    out: Vec::new(),
                    diags: Vec::new(),
                };
                if fs.rewrite(tok.0, start, end).is_some() && fs.diags.is_empty() {
                    out.append(&mut fs.out);
                } else {
                    // Reported; the string stands for its value.
                    diags.append(&mut fs.diags);
                    out.push((tok.0, Tok::Str(String::new()), end));
                }
            }
            _ => out.push(tok),
        }
    }
    out
}

struct FString<'a> {
    file: FileId,
    text: &'a str,
    out: Vec<Spanned<'a>>,
    diags: Vec<Diagnostic>,
}

impl<'a> FString<'a> {
    fn error(&mut self, span: Span, message: &str, label: &str, help: &str) {
        let mut d = Diagnostic::error(Code::E0030, message).with_primary(span.in_file(self.file), label);
        if !help.is_empty() {
            d = d.with_help(help);
        }
        self.diags.push(d);
    }

    /// The f-string whose prefix starts at `f_at` and whose quoted text is
    /// `start..end`.
    fn rewrite(&mut self, f_at: u32, start: u32, end: u32) -> Option<()> {
        let raw = &self.text[start as usize..end as usize];
        let quote = raw.chars().next()?;
        let open = if raw.starts_with(&quote.to_string().repeat(3)) {
            3
        } else {
            1
        };
        if raw.len() < 2 * open || !raw.ends_with(&quote.to_string().repeat(open)) {
            return None; // unterminated: the lexer reported it
        }
        let body_at = start as usize + open;
        let body = &raw[open..raw.len() - open];
        let q = quote.to_string().repeat(open);
        self.out.push((f_at, Tok::LParen, f_at + 1));
        let mut parts = 0;
        let mut literal = String::new();
        let mut literal_at = body_at;
        let bytes = body.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'{' if bytes.get(i + 1) == Some(&b'{') => {
                    literal.push('{');
                    i += 2;
                }
                b'}' if bytes.get(i + 1) == Some(&b'}') => {
                    literal.push('}');
                    i += 2;
                }
                b'}' => {
                    let at = (body_at + i) as u32;
                    self.error(
                        Span::new(at, at + 1),
                        "a single `}` in an f-string",
                        "not closing a field",
                        "write `}}` for a literal brace",
                    );
                    return None;
                }
                b'{' => {
                    self.literal(&mut parts, &mut literal, literal_at, body_at + i, &q);
                    let close = self.field(&mut parts, body, body_at, i)?;
                    i = close + 1;
                    literal_at = body_at + i;
                }
                b'\\' => {
                    // An escape: copied whole (its second character may be
                    // a brace or a quote, and `\u{e9}` has braces of its
                    // own), decoded with the literal.
                    let width = body[i + 1..].chars().next().map_or(0, char::len_utf8);
                    let mut to = i + 1 + width;
                    if body[i + 1..].starts_with("u{") {
                        to = body[i..].find('}').map_or(to, |c| i + c + 1);
                    }
                    literal.push_str(&body[i..to]);
                    i = to;
                }
                _ => {
                    let width = body[i..].chars().next().map_or(1, char::len_utf8);
                    literal.push_str(&body[i..i + width]);
                    i += width;
                }
            }
        }
        self.literal(&mut parts, &mut literal, literal_at, body_at + bytes.len(), &q);
        if parts == 0 {
            self.out.push((start, Tok::Str(String::new()), end));
        }
        self.out.push((end - 1, Tok::RParen, end));
        Some(())
    }

    /// `+` before every part but the first.
    fn join(&mut self, parts: &mut usize, at: u32) {
        if *parts > 0 {
            self.out.push((at, Tok::Plus, at));
        }
        *parts += 1;
    }

    /// The text gathered since the last field (escapes still written),
    /// decoded as the lexer decodes a string, as a string token.
    fn literal(&mut self, parts: &mut usize, literal: &mut String, from: usize, to: usize, q: &str) {
        if literal.is_empty() {
            return;
        }
        let quoted = format!("{q}{literal}{q}");
        let span = Span::new((from - q.len()) as u32, (to + q.len()) as u32);
        let value = string_value(&quoted, StringEnd::Closed, span, self.file, &mut self.diags);
        self.join(parts, from as u32);
        self.out.push((from as u32, Tok::Str(value), to as u32));
        literal.clear();
    }

    /// The field whose `{` is at `open` in `body`: its tokens; gives the
    /// index of its `}`.
    fn field(&mut self, parts: &mut usize, body: &'a str, body_at: usize, open: usize) -> Option<usize> {
        let bytes = body.as_bytes();
        // The expression ends at a `!`, `:` or `}` outside brackets and strings.
        let mut depth = 0i32;
        let mut quote: Option<u8> = None;
        let mut j = open + 1;
        while j < bytes.len() {
            let b = bytes[j];
            match quote {
                Some(q) if b == q => quote = None,
                Some(_) => {}
                None => match b {
                    b'\'' | b'"' => quote = Some(b),
                    b'(' | b'[' | b'{' => depth += 1,
                    b')' | b']' => depth -= 1,
                    b'}' if depth > 0 => depth -= 1,
                    b'!' if depth == 0 && bytes.get(j + 1) != Some(&b'=') => break,
                    b':' | b'}' if depth == 0 => break,
                    _ => {}
                },
            }
            j += 1;
        }
        let field_at = (body_at + open) as u32;
        // A conversion or spec runs to the field's `}`; without one the
        // field is unclosed.
        if !body[j.min(bytes.len())..].contains('}') {
            self.error(
                Span::new(field_at, (body_at + bytes.len()) as u32),
                "an f-string field without its `}`",
                "this field is not closed",
                "close it with `}`, or write `{{` for a literal brace",
            );
            return None;
        }
        let expr_end = j;
        let mut conversion = None;
        if bytes[j] == b'!' {
            conversion = body.get(j + 1..j + 2).map(str::to_string);
            j += 2;
        }
        let mut spec = String::new();
        if bytes.get(j) == Some(&b':') {
            let spec_start = j + 1;
            while j < bytes.len() && bytes[j] != b'}' {
                j += 1;
            }
            spec = body[spec_start..j.min(bytes.len())].to_string();
        }
        let close = j;
        let field_end = (body_at + close + 1) as u32;
        if bytes.get(close) != Some(&b'}') || spec.contains('{') {
            self.error(
                Span::new(field_at, field_end.min((body_at + bytes.len()) as u32)),
                "this f-string field is not supported",
                "a field is `{expression}`, `{expression:spec}` or `{expression!r}`",
                "nested fields in a format spec are not supported: format the value with its spec written out",
            );
            return None;
        }
        let mut expr = &body[open + 1..expr_end];
        let mut expr_at = body_at + open + 1;
        // `{x=}`: the expression's text, then its value.
        let trimmed = expr.trim_end();
        let self_documenting = trimmed.ends_with('=')
            && !trimmed.ends_with("==")
            && !matches!(
                trimmed.as_bytes().get(trimmed.len().wrapping_sub(2)),
                Some(b'!' | b'<' | b'>')
            );
        if self_documenting {
            self.join(parts, field_at);
            self.out.push((field_at, Tok::Str(expr.to_string()), field_at));
            expr = &trimmed[..trimmed.len() - 1];
        }
        let lead = expr.len() - expr.trim_start().len();
        expr_at += lead;
        let expr = expr.trim();
        if expr.is_empty() {
            self.error(
                Span::new(field_at, field_end),
                "an empty field in an f-string",
                "no expression",
                "write the value to show between the braces, or `{{}}` for literal braces",
            );
            return None;
        }
        let tokens = self.expression(expr, expr_at as u32, Span::new(field_at, field_end))?;
        // `!r` (and a bare `{x=}`) is `repr(x)`, `!s` `str(x)`; a spec then
        // formats that string.
        let convert = match conversion.as_deref() {
            Some("r") => Some("repr"),
            Some("s") => Some("str"),
            None if self_documenting && spec.is_empty() => Some("repr"),
            _ => None,
        };
        if let Some(c) = conversion.as_deref().filter(|c| !matches!(*c, "r" | "s")) {
            self.error(
                Span::new(field_at, field_end),
                &format!("the conversion `!{c}` is not supported"),
                "in this field",
                "use `!r` for the value's repr, or `!s` (the default) for its text",
            );
            return None;
        }
        self.join(parts, field_at);
        let (fa, fe) = (field_at, field_end);
        // Zero-width, so that the editor colors the field's own text.
        let call = |this: &mut Self, name: &'static str| {
            this.out.push((fa, Tok::Name(name), fa));
            this.out.push((fa, Tok::LParen, fa));
        };
        if convert.is_some() && !spec.is_empty() {
            // `{x!r:>10}`: the repr, formatted as a string.
            call(self, "format");
        }
        call(self, convert.unwrap_or("format"));
        self.out.extend(tokens);
        if convert.is_none() {
            self.out.push((fe - 1, Tok::Comma, fe - 1));
            self.out.push((fe - 1, Tok::Str(spec.clone()), fe - 1));
        }
        self.out.push((fe - 1, Tok::RParen, fe));
        if convert.is_some() && !spec.is_empty() {
            self.out.push((fe - 1, Tok::Comma, fe - 1));
            self.out.push((fe - 1, Tok::Str(spec), fe - 1));
            self.out.push((fe - 1, Tok::RParen, fe));
        }
        Some(close)
    }

    /// The tokens of the field expression `expr`, which starts at `at` in
    /// the file.
    fn expression(&mut self, expr: &'a str, at: u32, field: Span) -> Option<Vec<Spanned<'a>>> {
        let mut lexer = Lexer::new(self.file, expr);
        let mut tokens = Vec::new();
        for (lexeme, span) in lexer.by_ref() {
            match lexeme {
                Lexeme::Token(tok) => tokens.push((span.start + at, tok, span.end + at)),
                Lexeme::Newline | Lexeme::Continuation => {}
            }
        }
        let unreadable = !lexer.diags.is_empty() || tokens.iter().any(|t| matches!(t.1, Tok::Error));
        if unreadable {
            self.error(
                field,
                "cannot read the expression of this f-string field",
                "not an expression",
                "write an expression between the braces",
            );
            return None;
        }
        Some(tokens)
    }
}
