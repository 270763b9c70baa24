//! Characters to raw tokens (logos), with literal values checked here.
//!
//! Whitespace and comments are skipped; physical newlines and backslash
//! continuations are kept for the layout pass, which decides what they mean.
//! A lexical error is reported once and replaced by a token that lets the
//! parser carry on: a bad literal becomes a literal with a placeholder value,
//! a stray character becomes [`Tok::Error`].

use logos::Logos;
use tessera_base::{FileId, Span};
use tessera_diagnostics::{Applicability, Code, Diagnostic, Fix};

use crate::token::Tok;

#[derive(Logos, Clone, Copy, Debug, PartialEq)]
#[logos(skip r"[ \t\x0C]+")]
#[logos(skip(r"#[^\n]*", allow_greedy = true))]
enum Raw {
    #[regex(r"\r?\n")]
    Newline,
    #[regex(r"\\\r?\n")]
    Continuation,
    #[token("\\")]
    Backslash,
    #[token("!")]
    Bang,
    #[token("&&")]
    AmpAmp,
    #[token("||")]
    PipePipe,
    #[token("===")]
    EqEqEq,
    #[regex("[A-Za-z_][A-Za-z0-9_]*")]
    Ident,
    #[regex("[0-9]", scan_number)]
    Number,
    #[regex(r#"["']"#, scan_string)]
    String(StringEnd),

    #[token("and")]
    And,
    #[token("as")]
    As,
    #[token("assert")]
    Assert,
    #[token("break")]
    Break,
    #[token("continue")]
    Continue,
    #[token("def")]
    Def,
    #[token("del")]
    Del,
    #[token("effects")]
    Effects,
    #[token("elif")]
    Elif,
    #[token("else")]
    Else,
    #[token("False")]
    False,
    #[token("for")]
    For,
    #[token("from")]
    From,
    #[token("if")]
    If,
    #[token("import")]
    Import,
    #[token("in")]
    In,
    #[token("is")]
    Is,
    #[token("mut")]
    Mut,
    #[token("None")]
    None,
    #[token("not")]
    Not,
    #[token("or")]
    Or,
    #[token("pass")]
    Pass,
    #[token("return")]
    Return,
    #[token("True")]
    True,
    #[token("where")]
    Where,
    #[token("while")]
    While,
    #[token("with")]
    With,

    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(",")]
    Comma,
    #[token(":")]
    Colon,
    #[token(";")]
    Semi,
    #[token(".")]
    Dot,
    #[token("..")]
    DotDot,
    #[token("..=")]
    DotDotEq,
    #[token("->")]
    Arrow,
    #[token("@")]
    At,
    #[token("=")]
    Assign,
    #[token("==")]
    EqEq,
    #[token("!=")]
    NotEq,
    #[token("<")]
    Lt,
    #[token("<=")]
    Le,
    #[token(">")]
    Gt,
    #[token(">=")]
    Ge,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("//")]
    SlashSlash,
    #[token("%")]
    Percent,
    #[token("**")]
    StarStar,
    #[token("&")]
    Amp,
    #[token("|")]
    Pipe,
    #[token("^")]
    Caret,
    #[token("~")]
    Tilde,
    #[token("<<")]
    Shl,
    #[token(">>")]
    Shr,
    #[token("+=")]
    PlusEq,
    #[token("-=")]
    MinusEq,
    #[token("*=")]
    StarEq,
    #[token("/=")]
    SlashEq,
    #[token("//=")]
    SlashSlashEq,
    #[token("%=")]
    PercentEq,
    #[token("**=")]
    StarStarEq,
    #[token("&=")]
    AmpEq,
    #[token("|=")]
    PipeEq,
    #[token("^=")]
    CaretEq,
    #[token("<<=")]
    ShlEq,
    #[token(">>=")]
    ShrEq,
    #[token("@=")]
    AtEq,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum StringEnd {
    Closed,
    Unterminated,
}

/// Extends a number token over everything that could belong to it, so that
/// `0x1G`, `1__0` and `16_KB` are one (invalid) literal rather than several
/// tokens. The value is checked by [`number_value`].
fn scan_number(lex: &mut logos::Lexer<Raw>) {
    let rest = lex.remainder().as_bytes();
    let first = lex.slice().as_bytes()[0];
    let radix_prefixed = first == b'0' && matches!(rest.first(), Some(b'x' | b'X' | b'o' | b'O' | b'b' | b'B'));
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    loop {
        while i < rest.len() && word(rest[i]) {
            i += 1;
        }
        let prev = if i == 0 { first } else { rest[i - 1] };
        let next = rest.get(i).copied();
        let after = rest.get(i + 1).copied();
        if !radix_prefixed && matches!(prev, b'e' | b'E') && matches!(next, Some(b'+' | b'-')) {
            i += 1; // the sign of an exponent
        } else if !radix_prefixed && next == Some(b'.') && after.is_some_and(|b| b.is_ascii_digit()) {
            i += 1; // a fraction; `1..n` stays an integer followed by `..`
        } else {
            break;
        }
    }
    lex.bump(i);
}

/// Extends a string token to its closing quote, or to the end of the line
/// (end of the file for triple-quoted strings) when there is none.
fn scan_string(lex: &mut logos::Lexer<Raw>) -> StringEnd {
    let quote = lex.slice().as_bytes()[0];
    let rest = lex.remainder().as_bytes();
    let triple = rest.len() >= 2 && rest[0] == quote && rest[1] == quote;
    let mut i = if triple { 2 } else { 0 };
    while i < rest.len() {
        match rest[i] {
            b'\\' if rest[i + 1..].starts_with(b"\r\n") => i += 3,
            b'\\' if i + 1 < rest.len() && rest[i + 1] != b'\n' => i += 2,
            b'\n' if !triple => break,
            b if b == quote && !triple => {
                lex.bump(i + 1);
                return StringEnd::Closed;
            }
            b if b == quote && rest[i..].starts_with(&[quote, quote, quote]) => {
                lex.bump(i + 3);
                return StringEnd::Closed;
            }
            _ => i += 1,
        }
    }
    // An escape may have stepped over the end by one; clamp to the text.
    let mut end = i.min(rest.len());
    while !lex.remainder().is_char_boundary(end) {
        end += 1;
    }
    lex.bump(end);
    StringEnd::Unterminated
}

/// What the layout pass sees: a token, a physical line break, or a
/// backslash-newline continuation.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Lexeme<'a> {
    Token(Tok<'a>),
    Newline,
    Continuation,
}

/// Lexes a text lazily; lexical errors collect in [`Lexer::diags`].
pub(crate) struct Lexer<'a> {
    raw: logos::Lexer<'a, Raw>,
    text: &'a str,
    file: FileId,
    pub(crate) diags: Vec<Diagnostic>,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(file: FileId, text: &'a str) -> Lexer<'a> {
        let mut raw = Raw::lexer(text);
        // A byte-order mark is an encoding signature, not source text.
        if text.starts_with('\u{feff}') {
            raw.bump('\u{feff}'.len_utf8());
        }
        Lexer {
            raw,
            text,
            file,
            diags: Vec::new(),
        }
    }
}

impl<'a> Iterator for Lexer<'a> {
    type Item = (Lexeme<'a>, Span);

    fn next(&mut self) -> Option<Self::Item> {
        let raw = self.raw.next()?;
        if raw.is_err() {
            // logos reports one byte; keep a multi-byte character whole.
            let mut end = self.raw.span().end;
            while !self.text.is_char_boundary(end) {
                end += 1;
            }
            self.raw.bump(end - self.raw.span().end);
        }
        let span = Span::from_range(self.raw.span());
        let slice = self.raw.slice();
        let lexeme = match raw {
            Ok(Raw::Newline) => Lexeme::Newline,
            Ok(Raw::Continuation) => Lexeme::Continuation,
            Ok(raw) => Lexeme::Token(convert(raw, slice, span, self.file, &mut self.diags)),
            Err(()) => {
                let c = slice.chars().next().unwrap_or('?');
                let shown = if c.is_control() || c.is_whitespace() {
                    c.escape_unicode().to_string()
                } else {
                    c.to_string()
                };
                let mut diag = Diagnostic::error(Code::E0001, format!("unexpected character `{shown}`"))
                    .with_primary(span.in_file(self.file), "this character does not start any token");
                if c == '?' {
                    diag = diag.with_help("a conditional expression is written `a if c else b`");
                }
                self.diags.push(diag);
                Lexeme::Token(Tok::Error)
            }
        };
        Some((lexeme, span))
    }
}

fn convert<'a>(raw: Raw, slice: &'a str, span: Span, file: FileId, diags: &mut Vec<Diagnostic>) -> Tok<'a> {
    match raw {
        Raw::Ident => Tok::Name(slice),
        Raw::Number => match number_value(slice) {
            Ok(tok) => tok,
            Err(NumberError {
                message,
                label,
                help,
                replacement,
            }) => {
                let at = span.in_file(file);
                let mut diag = Diagnostic::error(Code::E0003, message).with_primary(at, label);
                if let Some(help) = help {
                    diag = diag.with_help(help);
                }
                // A literal with a known right spelling stands for its value.
                let value = replacement.as_deref().and_then(|r| number_value(r).ok());
                if let Some(r) = replacement {
                    diag = diag
                        .with_fix(Fix::new(format!("write `{r}`"), Applicability::MachineApplicable).with_edit(at, r));
                }
                diags.push(diag);
                value.unwrap_or(Tok::Int(0))
            }
        },
        Raw::String(end) => {
            if end == StringEnd::Unterminated {
                diags.push(
                    Diagnostic::error(Code::E0002, "unterminated string literal")
                        .with_primary(span.in_file(file), "this string is never closed")
                        .with_help(format!("close it with {}", closing_quote(slice))),
                );
            }
            Tok::Str(string_value(slice, end, span, file, diags))
        }
        Raw::Backslash => {
            diags.push(
                Diagnostic::error(Code::E0001, "unexpected character `\\`")
                    .with_primary(span.in_file(file), "a backslash continues a line only at its very end"),
            );
            Tok::Error
        }
        Raw::Bang => {
            diags.push(
                Diagnostic::error(Code::E0001, "unexpected character `!`")
                    .with_primary(span.in_file(file), "`!` is not an operator")
                    .with_help("write `not x` for negation and `!=` for inequality"),
            );
            // Read as `not`, so that `!done` parses on and reports nothing more.
            Tok::Not
        }
        Raw::AmpAmp | Raw::PipePipe | Raw::EqEqEq => {
            let (word, tok) = match raw {
                Raw::AmpAmp => ("and", Tok::And),
                Raw::PipePipe => ("or", Tok::Or),
                _ => ("==", Tok::EqEq),
            };
            let at = span.in_file(file);
            diags.push(
                Diagnostic::error(Code::E0030, format!("`{slice}` is not an operator"))
                    .with_primary(at, format!("read as `{word}`"))
                    .with_fix(
                        Fix::new(format!("write `{word}`"), Applicability::MachineApplicable).with_edit(at, word),
                    ),
            );
            // Read as meant, so that the line parses on and reports nothing more.
            tok
        }
        Raw::Newline | Raw::Continuation => unreachable!("handled by the caller"),
        other => keyword_or_punct(other),
    }
}

fn keyword_or_punct(raw: Raw) -> Tok<'static> {
    macro_rules! same {
        ($($v:ident)*) => {
            match raw {
                $(Raw::$v => Tok::$v,)*
                _ => unreachable!("every other raw token has a value"),
            }
        };
    }
    same!(
        And As Assert Break Continue Def Del Effects Elif Else False For From If Import In Is Mut None Not Or
        Pass Return True Where While With LParen RParen LBracket RBracket LBrace RBrace Comma Colon
        Semi Dot DotDot DotDotEq Arrow At Assign EqEq NotEq Lt Le Gt Ge Plus Minus Star Slash
        SlashSlash Percent StarStar Amp Pipe Caret Tilde Shl Shr PlusEq MinusEq StarEq SlashEq
        SlashSlashEq PercentEq StarStarEq AmpEq PipeEq CaretEq ShlEq ShrEq AtEq
    )
}

struct NumberError {
    message: String,
    label: String,
    help: Option<String>,
    /// The literal as it should be written, when that is clear.
    replacement: Option<String>,
}

fn number_error(message: impl Into<String>, label: impl Into<String>) -> NumberError {
    NumberError {
        message: message.into(),
        label: label.into(),
        help: None,
        replacement: None,
    }
}

/// Size units of size literals and their multipliers.
const SIZE_UNITS: [(&str, u64); 4] = [("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40)];

/// Checks `_` placement in a run of digits: only between two digits.
fn check_underscores(digits: &str) -> Result<(), NumberError> {
    let bad = digits.starts_with('_') || digits.ends_with('_') || digits.contains("__");
    if bad {
        return Err(number_error(
            "misplaced `_` in number literal",
            "`_` may only stand between two digits",
        ));
    }
    Ok(())
}

fn check_leading_zeros(digits: &str) -> Result<(), NumberError> {
    if digits.len() > 1 && digits.starts_with('0') && digits.bytes().any(|b| b != b'0' && b != b'_') {
        return Err(NumberError {
            message: "leading zeros in a decimal literal".into(),
            label: "a decimal literal cannot start with `0`".into(),
            help: Some("write `0o` for an octal literal, or drop the leading zeros".into()),
            replacement: None,
        });
    }
    Ok(())
}

/// The value of a number literal, or why it is invalid.
fn number_value(text: &str) -> Result<Tok<'static>, NumberError> {
    let lower = text.get(..2).map(str::to_ascii_lowercase);
    let radix = match lower.as_deref() {
        Some("0x") => Some((16, "hexadecimal", "a")),
        Some("0o") => Some((8, "octal", "an")),
        Some("0b") => Some((2, "binary", "a")),
        _ => Option::None,
    };
    if let Some((radix, name, article)) = radix {
        let digits = &text[2..];
        if digits.is_empty() {
            return Err(number_error(
                format!("{name} literal has no digits"),
                "digits must follow the prefix",
            ));
        }
        if let Some(bad) = digits.chars().find(|&c| c != '_' && !c.is_digit(radix)) {
            return Err(number_error(
                format!("invalid digit `{bad}` in {name} literal"),
                format!("`{bad}` is not {article} {name} digit"),
            ));
        }
        check_underscores(digits)?;
        return u64::from_str_radix(&digits.replace('_', ""), radix)
            .map(Tok::Int)
            .map_err(|_| number_error("integer literal is too large", "it does not fit in 64 bits"));
    }

    let bytes = text.as_bytes();
    let digit_run = |from: usize| {
        let mut i = from;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'_') {
            i += 1;
        }
        i
    };
    let int_end = digit_run(0);
    let mut end = int_end;
    let mut is_float = false;
    if bytes.get(end) == Some(&b'.') {
        end = digit_run(end + 1);
        is_float = true;
    }
    let exponent_follows = matches!(bytes.get(end), Some(b'e' | b'E'))
        && match bytes.get(end + 1) {
            Some(b'+' | b'-') => bytes.get(end + 2).is_some_and(u8::is_ascii_digit),
            Some(b) => b.is_ascii_digit(),
            Option::None => false,
        };
    if exponent_follows {
        let sign = usize::from(matches!(bytes[end + 1], b'+' | b'-'));
        end = digit_run(end + 1 + sign);
        is_float = true;
    }
    if end < text.len() && text[..end].ends_with('_') {
        end -= 1; // `16_KiB`: the `_` separates the unit
    }
    let (number, suffix) = text.split_at(end);

    if !suffix.is_empty() {
        let unit = suffix.strip_prefix('_').unwrap_or(suffix);
        let multiplier = SIZE_UNITS.iter().find(|(name, _)| *name == unit).map(|&(_, m)| m);
        return match multiplier {
            Some(multiplier) if !is_float => {
                check_underscores(number)?;
                check_leading_zeros(number)?;
                number
                    .replace('_', "")
                    .parse::<u64>()
                    .ok()
                    .and_then(|n| n.checked_mul(multiplier))
                    .map(Tok::Size)
                    .ok_or_else(|| number_error("size literal is too large", "it does not fit in 64 bits"))
            }
            Some(_) => Err(number_error(
                "size literals must be whole numbers",
                "a size counts whole bytes",
            )),
            // `0.5f`, as C and CUDA write a float.
            Option::None if matches!(suffix, "f" | "F") => {
                let float = if is_float {
                    number.to_string()
                } else {
                    format!("{number}.0")
                };
                Err(NumberError {
                    message: "a float takes no `f` suffix".into(),
                    label: "a C-style float suffix".into(),
                    help: None,
                    replacement: Some(float),
                })
            }
            Option::None => Err(NumberError {
                message: format!("invalid suffix `{suffix}` on number literal"),
                label: "not a size unit".into(),
                help: Some("size literals use a binary unit: `16_KiB`, `4_MiB`, `1_GiB`".into()),
                replacement: None,
            }),
        };
    }

    let int_part = &text[..int_end];
    check_underscores(int_part)?;
    if is_float {
        let cleaned = number.replace('_', "");
        // Each run of digits (integer part, fraction, exponent) is checked.
        for run in number.split(['.', 'e', 'E', '+', '-']).skip(1) {
            if !run.is_empty() {
                check_underscores(run)?;
            }
        }
        return match cleaned.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Tok::Float(v)),
            _ => Err(number_error(
                "float literal is out of range",
                "it does not fit in a 64-bit float",
            )),
        };
    }
    if int_part.len() > 1 && int_part.starts_with('0') && int_part.bytes().any(|b| b != b'0' && b != b'_') {
        return Err(NumberError {
            message: "leading zeros in a decimal literal".into(),
            label: "a decimal literal cannot start with `0`".into(),
            help: Some("write `0o` for an octal literal, or drop the leading zeros".into()),
            replacement: None,
        });
    }
    int_part
        .replace('_', "")
        .parse::<u64>()
        .map(Tok::Int)
        .map_err(|_| number_error("integer literal is too large", "it does not fit in 64 bits"))
}

/// The quote that closes a string: a single quote character, or three.
fn closing_quote(text: &str) -> &str {
    let quote = text.as_bytes()[0];
    if text.as_bytes().starts_with(&[quote; 3]) {
        &text[..3]
    } else {
        &text[..1]
    }
}

/// The value of a string literal with escapes resolved; bad escapes are reported.
pub(crate) fn string_value(
    text: &str,
    end: StringEnd,
    span: Span,
    file: FileId,
    diags: &mut Vec<Diagnostic>,
) -> String {
    let quote = &text[..1];
    let triple = text.as_bytes().starts_with(&[quote.as_bytes()[0]; 3]);
    let open = if triple { 3 } else { 1 };
    let close = match end {
        StringEnd::Closed => open,
        StringEnd::Unterminated => 0,
    };
    let body = &text[open..text.len().saturating_sub(close).max(open)];
    let body_start = span.start as usize + open;
    let mut out = String::with_capacity(body.len());
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        // A string's value does not depend on the file's line endings.
        if c == '\r' && chars.peek().is_some_and(|&(_, n)| n == '\n') {
            continue;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some((_, e)) = chars.next() else {
            out.push('\\');
            break;
        };
        let escaped = match e {
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            '0' => Some('\0'),
            '\n' => continue,
            '\r' if chars.peek().is_some_and(|&(_, n)| n == '\n') => {
                chars.next();
                continue;
            }
            'u' => unicode_escape(body, &mut chars),
            _ => Option::None,
        };
        match escaped {
            Some(c) => out.push(c),
            Option::None => {
                let end = chars.peek().map_or(body.len(), |&(j, _)| j);
                let at = Span::from_range(body_start + i..body_start + end);
                let (label, help) = if e == 'u' {
                    (
                        "not a valid Unicode escape",
                        "write a code point of 1 to 6 hex digits in braces, at most 10FFFF: `\\u{3bb}`",
                    )
                } else {
                    ("unknown escape", "write `\\\\` for a literal backslash")
                };
                diags.push(
                    Diagnostic::error(Code::E0004, format!("invalid escape sequence `{}`", &body[i..end]))
                        .with_primary(at.in_file(file), label)
                        .with_help(help),
                );
                // Keep the character, so the value is what was most likely meant.
                if e != 'u' {
                    out.push(e);
                }
            }
        }
    }
    out
}

/// `\u{XXXX}`: after the `u`, braces around one to six hex digits.
fn unicode_escape(body: &str, chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>) -> Option<char> {
    let (open, '{') = *chars.peek()? else {
        return Option::None;
    };
    let close = body[open..].find('}')? + open;
    let digits = &body[open + 1..close];
    if digits.is_empty() || digits.len() > 6 {
        return Option::None;
    }
    let value = char::from_u32(u32::from_str_radix(digits, 16).ok()?)?;
    while chars.next_if(|&(j, _)| j <= close).is_some() {}
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> Result<Tok<'static>, String> {
        number_value(text).map_err(|e| e.message)
    }

    #[test]
    fn integer_literals() {
        assert_eq!(value("1_000"), Ok(Tok::Int(1000)));
        assert_eq!(value("0xFF"), Ok(Tok::Int(255)));
        assert_eq!(value("0b1010"), Ok(Tok::Int(10)));
        assert_eq!(value("0o17"), Ok(Tok::Int(15)));
        assert_eq!(value("0"), Ok(Tok::Int(0)));
        assert_eq!(value("18446744073709551615"), Ok(Tok::Int(u64::MAX)));
    }

    #[test]
    fn float_and_size_literals() {
        assert_eq!(value("1.5"), Ok(Tok::Float(1.5)));
        assert_eq!(value("1e-3"), Ok(Tok::Float(1e-3)));
        assert_eq!(value("2.5E+2"), Ok(Tok::Float(250.0)));
        assert_eq!(value("16_KiB"), Ok(Tok::Size(16 * 1024)));
        assert_eq!(value("4MiB"), Ok(Tok::Size(4 << 20)));
    }

    #[test]
    fn invalid_literals_say_why() {
        assert_eq!(value("0x1G"), Err("invalid digit `G` in hexadecimal literal".into()));
        assert_eq!(value("0x"), Err("hexadecimal literal has no digits".into()));
        assert_eq!(value("1__0"), Err("misplaced `_` in number literal".into()));
        assert_eq!(value("1_"), Err("misplaced `_` in number literal".into()));
        assert_eq!(value("16_KB"), Err("invalid suffix `_KB` on number literal".into()));
        assert_eq!(value("1.5KiB"), Err("size literals must be whole numbers".into()));
        assert_eq!(
            value("99999999999999999999"),
            Err("integer literal is too large".into())
        );
        assert_eq!(value("007"), Err("leading zeros in a decimal literal".into()));
        assert_eq!(value("1e999"), Err("float literal is out of range".into()));
        assert_eq!(value("1.5e3_"), Err("misplaced `_` in number literal".into()));
        assert_eq!(value("1e1_"), Err("misplaced `_` in number literal".into()));
        assert_eq!(value("01_KiB"), Err("leading zeros in a decimal literal".into()));
        assert_eq!(value("1_000.000_1e1_0"), Ok(Tok::Float(1000.0001e10)));
    }

    fn kinds(text: &str) -> Vec<String> {
        Lexer::new(FileId(0), text)
            .map(|(l, _)| match l {
                Lexeme::Token(t) => format!("{t:?}"),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn ranges_and_fractions_do_not_merge() {
        assert_eq!(kinds("1..=4096"), ["Int(1)", "DotDotEq", "Int(4096)"]);
        assert_eq!(kinds("1.5"), ["Float(1.5)"]);
        assert_eq!(kinds("n-1"), ["Name(\"n\")", "Minus", "Int(1)"]);
        assert_eq!(kinds("2e-1-1"), ["Float(0.2)", "Minus", "Int(1)"]);
    }

    #[test]
    fn strings_escapes_and_comments() {
        assert_eq!(kinds(r#""a\tb" # c"#), [r#"Str("a\tb")"#]);
        assert_eq!(kinds("'''x\ny'''"), [r#"Str("x\ny")"#]);
        assert_eq!(kinds(r#""\u{1F600}""#), ["Str(\"😀\")"]);
        assert_eq!(kinds("a \\\nb"), ["Name(\"a\")", "Continuation", "Name(\"b\")"]);
    }

    #[test]
    fn lexical_errors_are_reported_once() {
        let mut lexer = Lexer::new(FileId(0), "\"abc\nx = é $");
        let toks: Vec<_> = lexer.by_ref().map(|(l, _)| l).collect();
        let codes: Vec<_> = lexer.diags.iter().map(|d| d.code.as_str()).collect();
        assert_eq!(codes, ["E0002", "E0001", "E0001"]);
        assert_eq!(toks.len(), 6);
    }
}

#[cfg(test)]
mod string_tests {
    use super::*;

    fn values(text: &str) -> (Vec<String>, Vec<&'static str>) {
        let mut lexer = Lexer::new(FileId(0), text);
        let toks = lexer
            .by_ref()
            .filter_map(|(l, _)| match l {
                Lexeme::Token(Tok::Str(s)) => Some(s),
                Lexeme::Token(Tok::Name(n)) => Some(format!("name {n}")),
                _ => None,
            })
            .collect();
        (toks, lexer.diags.iter().map(|d| d.code.as_str()).collect())
    }

    #[test]
    fn multibyte_characters_in_strings() {
        assert_eq!(
            values("\"aλ\" 'λ' \"\\é\""),
            (vec!["aλ".into(), "λ".into(), "é".into()], vec!["E0004"])
        );
    }

    #[test]
    fn line_endings_do_not_change_string_values() {
        assert_eq!(values("'''a\r\nb'''").0, ["a\nb"]);
        assert_eq!(values("'''a\\\r\nb'''"), (vec!["ab".into()], vec![]));
    }

    #[test]
    fn byte_order_mark_is_skipped() {
        assert_eq!(values("\u{feff}x"), (vec!["name x".into()], vec![]));
    }
}
