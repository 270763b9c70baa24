//! The parser of the textual form (grammar in `spec/ir.md`).
//!
//! Two phases. The first reads the text into a small syntax tree; it knows
//! no dialect, since every op has the same generic form (or the function
//! form). The second builds the module: it creates every op, region and
//! value first, so a name may be used before the op that defines it (the
//! structural verifier then reports the use as a dominance error), and then
//! resolves operand names in their isolated scope (the module's top level
//! or a function-like op) and checks them against the op's written type.
//!
//! The parser never panics: every problem is a [`ParseError`] with a span,
//! and nesting is bounded by [`MAX_NESTING`].

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use tessera_base::{FileId, LineIndex, Span};
use tessera_diagnostics::{Code, Diagnostic};

use crate::module::is_function_like;
use crate::{Attr, DimExpr, Loc, MemSpace, Module, OpId, OpName, ScalarType, Type, ValueId, FUNCTION_TYPE, SYM_NAME};

/// How deeply regions, types, attributes and dim expressions may nest.
pub const MAX_NESTING: usize = 128;

/// Why a text is not a module: a message at a byte span (with its 1-based
/// line and column), and optionally a second span that explains it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub span: Span,
    pub line: u32,
    pub col: u32,
    pub message: String,
    /// What the primary span's label says.
    pub label: String,
    pub related: Option<(Span, String)>,
}

impl ParseError {
    /// The diagnostic (E0902) pointing into the IR text `file`.
    pub fn to_diagnostic(&self, file: FileId) -> Diagnostic {
        let mut d = Diagnostic::error(Code::E0902, &self.message).with_primary(self.span.in_file(file), &self.label);
        if let Some((span, message)) = &self.related {
            d = d.with_secondary(span.in_file(file), message);
        }
        d
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Whether `body` is the body of a dialect type (`frag<16x16xf16>` in
/// `!tile.frag<16x16xf16>`), so that the type prints in a form that parses.
pub(crate) fn is_opaque_body(body: &str) -> bool {
    let mut reader = Reader {
        text: body,
        bytes: body.as_bytes(),
        pos: 0,
        depth: 0,
    };
    reader.opaque_body().is_ok() && reader.pos == body.len()
}

/// Parses the textual form of a module. Structural rules beyond names and
/// written types (dominance, function signatures) are left to
/// [`crate::verify_structure`].
pub fn parse(text: &str) -> Result<Module, ParseError> {
    let lines = LineIndex::new(text);
    let fail = |e: Failure| {
        let at = lines.line_col(e.span.start);
        ParseError {
            span: e.span,
            line: at.line + 1,
            col: at.col + 1,
            message: e.message,
            label: e.label,
            related: e.related,
        }
    };
    let mut reader = Reader {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    let ast = reader.module().map_err(fail)?;
    Build::new().module(ast).map_err(fail)
}

/// A parse error before line and column are known.
struct Failure {
    span: Span,
    message: String,
    label: String,
    related: Option<(Span, String)>,
}

impl Failure {
    fn new(span: Span, message: impl Into<String>, label: impl Into<String>) -> Failure {
        Failure {
            span,
            message: message.into(),
            label: label.into(),
            related: None,
        }
    }
}

type PResult<T> = Result<T, Failure>;

// ---- syntax tree ---------------------------------------------------------

struct ModuleAst {
    name: Option<String>,
    attrs: BTreeMap<String, Attr>,
    loc: Loc,
    ops: Vec<OpAst>,
}

struct Name {
    text: String,
    span: Span,
}

struct OpAst {
    results: Vec<Name>,
    name: String,
    /// From the start of the op to the end of its name: where diagnostics
    /// about the op point.
    head: Span,
    operands: Vec<Name>,
    regions: Vec<RegionAst>,
    attrs: BTreeMap<String, Attr>,
    input_types: Vec<Type>,
    result_types: Vec<Type>,
    types_span: Span,
    loc: Loc,
}

struct RegionAst {
    args: Vec<(Name, Type)>,
    ops: Vec<OpAst>,
}

// ---- reading -------------------------------------------------------------

struct Reader<'t> {
    text: &'t str,
    bytes: &'t [u8],
    pos: usize,
    depth: usize,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

impl<'t> Reader<'t> {
    fn span_from(&self, start: usize) -> Span {
        Span::from_range(start..self.pos)
    }

    /// Skips whitespace and `//` comments.
    fn ws(&mut self) {
        loop {
            match self.bytes.get(self.pos) {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                Some(b'/') if self.bytes.get(self.pos + 1) == Some(&b'/') => {
                    while self.bytes.get(self.pos).is_some_and(|&b| b != b'\n') {
                        self.pos += 1;
                    }
                }
                _ => return,
            }
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.bytes.get(self.pos).copied()
    }

    fn at(&mut self, s: &str) -> bool {
        self.ws();
        self.bytes[self.pos..].starts_with(s.as_bytes())
    }

    fn eat(&mut self, s: &str) -> bool {
        if self.at(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    /// What is at the current position, for messages.
    fn describe_here(&mut self) -> (Span, String) {
        self.ws();
        match self.text[self.pos..].chars().next() {
            None => (Span::empty(self.pos as u32), "end of input".to_string()),
            Some(c) => {
                let end = self.pos + c.len_utf8();
                let word_end = if c.is_ascii() && is_ident_char(c as u8) {
                    let mut e = self.pos;
                    while self.bytes.get(e).is_some_and(|&b| is_ident_char(b) || b == b'.') {
                        e += 1;
                    }
                    e
                } else {
                    end
                };
                (
                    Span::from_range(self.pos..word_end),
                    format!("`{}`", &self.text[self.pos..word_end]),
                )
            }
        }
    }

    fn expected<T>(&mut self, what: &str) -> PResult<T> {
        let (span, found) = self.describe_here();
        Err(Failure::new(
            span,
            format!("expected {what}, found {found}"),
            format!("expected {what}"),
        ))
    }

    fn expect(&mut self, s: &str) -> PResult<()> {
        if self.eat(s) {
            Ok(())
        } else {
            self.expected(&format!("`{s}`"))
        }
    }

    fn nest(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            let (span, _) = self.describe_here();
            return Err(Failure::new(
                span,
                format!("nesting too deep (the limit is {MAX_NESTING} levels)"),
                "too deep",
            ));
        }
        Ok(())
    }

    fn unnest(&mut self) {
        self.depth -= 1;
    }

    /// `[A-Za-z_][A-Za-z0-9_$]*`, at the current position (no whitespace skipped).
    fn word_here(&mut self) -> Option<&'t str> {
        let start = self.pos;
        if !self.bytes.get(self.pos).copied().is_some_and(is_ident_start) {
            return None;
        }
        while self.bytes.get(self.pos).copied().is_some_and(is_ident_char) {
            self.pos += 1;
        }
        Some(&self.text[start..self.pos])
    }

    /// A keyword or identifier, after whitespace.
    fn word(&mut self) -> Option<&'t str> {
        self.ws();
        self.word_here()
    }

    fn at_word(&mut self, word: &str) -> bool {
        self.ws();
        let save = self.pos;
        let found = self.word_here() == Some(word);
        self.pos = save;
        found
    }

    fn eat_word(&mut self, word: &str) -> bool {
        let found = self.at_word(word);
        if found {
            self.pos += word.len();
        }
        found
    }

    /// A bare name (`[A-Za-z_][A-Za-z0-9_$.]*`) or a string: dict keys and symbols.
    fn name(&mut self) -> PResult<String> {
        self.ws();
        if self.bytes.get(self.pos) == Some(&b'"') {
            return self.string();
        }
        let start = self.pos;
        if !self.bytes.get(self.pos).copied().is_some_and(is_ident_start) {
            return self.expected("a name");
        }
        while self
            .bytes
            .get(self.pos)
            .copied()
            .is_some_and(|b| is_ident_char(b) || b == b'.')
        {
            self.pos += 1;
        }
        Ok(self.text[start..self.pos].to_string())
    }

    fn symbol(&mut self) -> PResult<String> {
        self.expect("@")?;
        if self
            .bytes
            .get(self.pos)
            .is_some_and(|&b| b == b'"' || is_ident_start(b))
        {
            self.name()
        } else {
            self.expected("a symbol name after `@`")
        }
    }

    fn string(&mut self) -> PResult<String> {
        self.ws();
        let start = self.pos;
        self.expect("\"")?;
        let mut out = String::new();
        loop {
            let Some(c) = self.text[self.pos..].chars().next() else {
                return Err(Failure::new(
                    Span::from_range(start..self.pos),
                    "unterminated string",
                    "this string is not closed",
                ));
            };
            self.pos += c.len_utf8();
            match c {
                '"' => return Ok(out),
                '\n' => {
                    return Err(Failure::new(
                        Span::from_range(start..self.pos - 1),
                        "unterminated string",
                        "this string is not closed on its line",
                    ))
                }
                '\\' => {
                    let esc_start = self.pos - 1;
                    let e = self.text[self.pos..].chars().next();
                    self.pos += e.map_or(0, char::len_utf8);
                    match e {
                        Some('"') => out.push('"'),
                        Some('\\') => out.push('\\'),
                        Some('n') => out.push('\n'),
                        Some('t') => out.push('\t'),
                        Some('r') => out.push('\r'),
                        Some('u') if self.bytes.get(self.pos) == Some(&b'{') => {
                            let digits_start = self.pos + 1;
                            let mut end = digits_start;
                            while self.bytes.get(end).is_some_and(u8::is_ascii_hexdigit) && end - digits_start < 6 {
                                end += 1;
                            }
                            let c = (self.bytes.get(end) == Some(&b'}'))
                                .then(|| u32::from_str_radix(&self.text[digits_start..end], 16).ok())
                                .flatten()
                                .and_then(char::from_u32);
                            match c {
                                Some(c) => {
                                    out.push(c);
                                    self.pos = end + 1;
                                }
                                None => {
                                    return Err(Failure::new(
                                        Span::from_range(esc_start..end.min(self.bytes.len())),
                                        "invalid unicode escape",
                                        "expected `\\u{...}` with 1 to 6 hex digits of a scalar value",
                                    ))
                                }
                            }
                        }
                        _ => {
                            return Err(Failure::new(
                                Span::from_range(esc_start..self.pos),
                                "invalid escape in a string",
                                "the escapes are \\\" \\\\ \\n \\t \\r \\u{...}",
                            ))
                        }
                    }
                }
                c => out.push(c),
            }
        }
    }

    fn value_name(&mut self) -> PResult<Name> {
        self.ws();
        let start = self.pos;
        if !self.eat("%") {
            return self.expected("a value name such as `%0`");
        }
        let name_start = self.pos;
        while self
            .bytes
            .get(self.pos)
            .copied()
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$'))
        {
            self.pos += 1;
        }
        if self.pos == name_start {
            self.pos = start;
            return self.expected("a value name such as `%0`");
        }
        Ok(Name {
            text: self.text[start..self.pos].to_string(),
            span: self.span_from(start),
        })
    }

    /// An integer or float literal; `-` may precede it.
    fn number(&mut self) -> PResult<Attr> {
        self.ws();
        let start = self.pos;
        if self.bytes.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        let digits = |r: &mut Reader| {
            let s = r.pos;
            while r.bytes.get(r.pos).is_some_and(u8::is_ascii_digit) {
                r.pos += 1;
            }
            r.pos > s
        };
        if !digits(self) {
            self.pos = start;
            return self.expected("a number");
        }
        let mut float = false;
        if self.bytes.get(self.pos) == Some(&b'.') && self.bytes.get(self.pos + 1) != Some(&b'.') {
            float = true;
            self.pos += 1;
            digits(self);
        }
        if matches!(self.bytes.get(self.pos), Some(b'e' | b'E')) {
            let save = self.pos;
            self.pos += 1;
            if matches!(self.bytes.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if digits(self) {
                float = true;
            } else {
                self.pos = save;
            }
        }
        let text = &self.text[start..self.pos];
        let span = self.span_from(start);
        if float {
            text.parse::<f64>()
                .map(Attr::Float)
                .map_err(|_| Failure::new(span, "invalid float literal", "not a float"))
        } else {
            text.parse::<i64>().map(Attr::Int).map_err(|_| {
                Failure::new(
                    span,
                    "integer literal out of range",
                    "this does not fit in a signed 64-bit integer",
                )
            })
        }
    }

    fn u32_literal(&mut self) -> PResult<u32> {
        self.ws();
        let start = self.pos;
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        self.text[start..self.pos].parse::<u32>().map_err(|_| {
            let span = self.span_from(start);
            Failure::new(span, "expected a byte offset", "expected an unsigned 32-bit integer")
        })
    }

    /// `loc("file":start..end)` or `loc(unknown)`; absent is unknown.
    fn opt_loc(&mut self) -> PResult<Loc> {
        let save = self.pos;
        if !(self.eat_word("loc") && self.at("(")) {
            self.pos = save;
            return Ok(Loc::Unknown);
        }
        self.expect("(")?;
        if self.eat_word("unknown") {
            self.expect(")")?;
            return Ok(Loc::Unknown);
        }
        let file = self.string()?;
        self.expect(":")?;
        let start_pos = self.pos;
        let start = self.u32_literal()?;
        self.expect("..")?;
        let end = self.u32_literal()?;
        if end < start {
            return Err(Failure::new(
                self.span_from(start_pos),
                "location ends before it starts",
                "the end offset is smaller than the start",
            ));
        }
        self.expect(")")?;
        Ok(Loc::Source { file, start, end })
    }

    // ---- attributes ----

    fn dict(&mut self) -> PResult<BTreeMap<String, Attr>> {
        self.nest()?;
        self.expect("{")?;
        let mut out = BTreeMap::new();
        if !self.eat("}") {
            loop {
                self.ws();
                let key_start = self.pos;
                let key = self.name()?;
                let key_span = self.span_from(key_start);
                let value = if self.eat("=") { self.attr()? } else { Attr::Unit };
                if out.insert(key.clone(), value).is_some() {
                    return Err(Failure::new(
                        key_span,
                        format!("attribute `{key}` is given twice"),
                        "given again here",
                    ));
                }
                if self.eat("}") {
                    break;
                }
                self.expect(",")?;
            }
        }
        self.unnest();
        Ok(out)
    }

    fn attr(&mut self) -> PResult<Attr> {
        self.nest()?;
        let attr = self.attr_inner()?;
        self.unnest();
        Ok(attr)
    }

    fn attr_inner(&mut self) -> PResult<Attr> {
        match self.peek() {
            Some(b'"') => Ok(Attr::Str(self.string()?)),
            Some(b'@') => Ok(Attr::Symbol(self.symbol()?)),
            Some(b'[') => {
                self.pos += 1;
                Ok(Attr::Array(self.list("]", Self::attr)?))
            }
            Some(b'{') => Ok(Attr::Dict(self.dict()?)),
            Some(b'-') if self.bytes[self.pos + 1..].starts_with(b"inf") => {
                self.pos += 1;
                self.expect_word("inf")?;
                Ok(Attr::Float(f64::NEG_INFINITY))
            }
            Some(b) if b == b'-' || b.is_ascii_digit() => self.number(),
            Some(b'(' | b'!') => Ok(Attr::Type(self.ty()?)),
            _ => {
                let save = self.pos;
                match self.word() {
                    Some("true") => Ok(Attr::Bool(true)),
                    Some("false") => Ok(Attr::Bool(false)),
                    Some("unit") => Ok(Attr::Unit),
                    Some("inf") => Ok(Attr::Float(f64::INFINITY)),
                    Some("nan") => {
                        self.expect("(")?;
                        self.ws();
                        let start = self.pos;
                        if !self.eat("0x") {
                            return self.expected("the bits of a NaN as `0x` and 16 hex digits");
                        }
                        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_hexdigit) {
                            self.pos += 1;
                        }
                        let bits = u64::from_str_radix(&self.text[start + 2..self.pos], 16)
                            .ok()
                            .map(f64::from_bits)
                            .filter(|f| f.is_nan());
                        let Some(value) = bits else {
                            return Err(Failure::new(
                                self.span_from(start),
                                "invalid NaN bits",
                                "not the bits of a NaN",
                            ));
                        };
                        self.expect(")")?;
                        Ok(Attr::Float(value))
                    }
                    Some(_) => {
                        self.pos = save;
                        Ok(Attr::Type(self.ty()?))
                    }
                    None => self.expected("an attribute value"),
                }
            }
        }
    }

    fn expect_word(&mut self, word: &str) -> PResult<()> {
        if self.eat_word(word) {
            Ok(())
        } else {
            self.expected(&format!("`{word}`"))
        }
    }

    // ---- types ----

    fn ty(&mut self) -> PResult<Type> {
        self.nest()?;
        let ty = self.ty_inner()?;
        self.unnest();
        Ok(ty)
    }

    fn ty_inner(&mut self) -> PResult<Type> {
        match self.peek() {
            Some(b'(') => {
                let inputs = self.type_list()?;
                self.expect("->")?;
                let results = self.type_list()?;
                return Ok(Type::Function { inputs, results });
            }
            Some(b'!') => return self.bang_type(),
            _ => {}
        }
        let start = self.pos;
        let Some(word) = self.word() else {
            return self.expected("a type");
        };
        if let Some(s) = ScalarType::from_name(word) {
            return Ok(Type::Scalar(s));
        }
        match word {
            "tensor" => {
                self.expect("<")?;
                let (dims, elem) = self.shape()?;
                self.expect(">")?;
                Ok(Type::Tensor { dims, elem })
            }
            "memref" => {
                self.expect("<")?;
                let (dims, elem) = self.shape()?;
                self.expect(",")?;
                let space = self.space()?;
                let mut layout = BTreeMap::new();
                while self.eat(",") {
                    self.ws();
                    let key_start = self.pos;
                    let key = self.name()?;
                    let key_span = self.span_from(key_start);
                    self.expect("=")?;
                    let value = self.attr()?;
                    if layout.insert(key.clone(), value).is_some() {
                        return Err(Failure::new(
                            key_span,
                            format!("layout attribute `{key}` is given twice"),
                            "given again here",
                        ));
                    }
                }
                self.expect(">")?;
                Ok(Type::MemRef {
                    dims,
                    elem,
                    space,
                    layout,
                })
            }
            "ptr" => {
                self.expect("<")?;
                let space = self.space()?;
                self.expect(">")?;
                Ok(Type::Ptr(space))
            }
            _ => Err(Failure::new(
                self.span_from(start),
                format!("unknown type `{word}`"),
                "not a type",
            )),
        }
    }

    /// `!token` or `!dialect.body`, where the body is a name followed by an
    /// optional `<...>` with balanced angle brackets.
    fn bang_type(&mut self) -> PResult<Type> {
        let start = self.pos;
        self.expect("!")?;
        let Some(dialect) = self.word_here() else {
            return self.expected("a dialect type name after `!`");
        };
        if dialect == "token" && self.bytes.get(self.pos) != Some(&b'.') {
            return Ok(Type::Token);
        }
        if self.bytes.get(self.pos) != Some(&b'.') {
            return Err(Failure::new(
                self.span_from(start),
                format!("unknown type `!{dialect}`"),
                "a dialect type is written `!dialect.name`",
            ));
        }
        self.pos += 1;
        let body_start = self.pos;
        self.opaque_body()?;
        Ok(Type::Opaque {
            dialect: dialect.to_string(),
            body: self.text[body_start..self.pos].to_string(),
        })
    }

    /// The body of a dialect type after the dot: a name and an optional
    /// `<...>` with balanced angle brackets (strings inside may hold any).
    fn opaque_body(&mut self) -> PResult<()> {
        if self.word_here().is_none() {
            return self.expected("a type name after the dialect");
        }
        while self
            .bytes
            .get(self.pos)
            .copied()
            .is_some_and(|b| is_ident_char(b) || b == b'.')
        {
            self.pos += 1;
        }
        if self.bytes.get(self.pos) == Some(&b'<') {
            let open = self.pos;
            let mut depth = 0usize;
            loop {
                match self.bytes.get(self.pos) {
                    Some(b'<') => depth += 1,
                    Some(b'>') => {
                        depth -= 1;
                        if depth == 0 {
                            self.pos += 1;
                            break;
                        }
                    }
                    Some(b'"') => {
                        self.string()?;
                        continue;
                    }
                    Some(b'\n') | None => {
                        return Err(Failure::new(
                            Span::from_range(open..open + 1),
                            "unclosed `<` in a dialect type",
                            "this `<` is not closed on its line",
                        ))
                    }
                    Some(_) => {}
                }
                self.pos += 1;
                // Skip the rest of a multi-byte character.
                while !self.text.is_char_boundary(self.pos) {
                    self.pos += 1;
                }
            }
        }
        Ok(())
    }

    fn space(&mut self) -> PResult<MemSpace> {
        self.ws();
        let start = self.pos;
        match self.word() {
            Some(w) => MemSpace::from_name(w).ok_or_else(|| {
                Failure::new(
                    self.span_from(start),
                    format!("unknown memory space `{w}`"),
                    "expected global, shared, local or tmem",
                )
            }),
            None => self.expected("a memory space"),
        }
    }

    /// `(dim 'x')* dtype`. A bare symbol ends at the first `x`, so symbols
    /// that contain an `x` are written in parentheses.
    fn shape(&mut self) -> PResult<(Vec<DimExpr>, ScalarType)> {
        let mut dims = Vec::new();
        loop {
            match self.peek() {
                Some(b'(') => {
                    self.pos += 1;
                    let d = self.dim_expr()?;
                    self.expect(")")?;
                    dims.push(d);
                }
                Some(b) if b.is_ascii_digit() => {
                    let start = self.pos;
                    while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
                        self.pos += 1;
                    }
                    let value = self.text[start..self.pos].parse::<i64>().map_err(|_| {
                        Failure::new(self.span_from(start), "dim out of range", "does not fit in 64 bits")
                    })?;
                    dims.push(DimExpr::constant(value));
                }
                Some(b) if is_ident_start(b) => {
                    let start = self.pos;
                    let mut end = start;
                    while self
                        .bytes
                        .get(end)
                        .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_')
                    {
                        end += 1;
                    }
                    let word = &self.text[start..end];
                    let next = self.bytes[end..].iter().find(|b| !b.is_ascii_whitespace());
                    if let (Some(elem), Some(b'>' | b',')) = (ScalarType::from_name(word), next) {
                        self.pos = end;
                        return Ok((dims, elem));
                    }
                    let sym_len = word.find('x').unwrap_or(word.len());
                    if sym_len == 0 {
                        return Err(Failure::new(
                            Span::from_range(start..end),
                            format!("expected a dim or an element type, found `{word}`"),
                            "a dim symbol that contains `x` is written in parentheses: `(idx)`",
                        ));
                    }
                    self.pos = start + sym_len;
                    dims.push(DimExpr::sym(&word[..sym_len]));
                }
                _ => return self.expected("a dim or an element type"),
            }
            if !self.eat("x") {
                return self.expected("`x` after a dim");
            }
        }
    }

    /// `['-'] term (('+' | '-') term)*` with `term = factor ('*' factor)*`
    /// and `factor = integer | symbol | '(' expr ')'`.
    fn dim_expr(&mut self) -> PResult<DimExpr> {
        self.nest()?;
        let negate = self.eat("-");
        let mut sum = self.dim_term()?;
        if negate {
            sum = sum.neg();
        }
        loop {
            if self.eat("+") {
                sum = sum.add(&self.dim_term()?);
            } else if self.eat("-") {
                sum = sum.sub(&self.dim_term()?);
            } else {
                break;
            }
        }
        self.unnest();
        Ok(sum)
    }

    fn dim_term(&mut self) -> PResult<DimExpr> {
        let mut product = self.dim_factor()?;
        while self.eat("*") {
            product = product.mul(&self.dim_factor()?);
        }
        Ok(product)
    }

    fn dim_factor(&mut self) -> PResult<DimExpr> {
        match self.peek() {
            Some(b'(') => {
                self.pos += 1;
                let d = self.dim_expr()?;
                self.expect(")")?;
                Ok(d)
            }
            Some(b) if b.is_ascii_digit() => {
                let start = self.pos;
                while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
                    self.pos += 1;
                }
                let value = self.text[start..self.pos]
                    .parse::<i64>()
                    .map_err(|_| Failure::new(self.span_from(start), "dim out of range", "does not fit in 64 bits"))?;
                Ok(DimExpr::constant(value))
            }
            Some(b) if is_ident_start(b) => {
                let start = self.pos;
                while self
                    .bytes
                    .get(self.pos)
                    .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    self.pos += 1;
                }
                Ok(DimExpr::sym(&self.text[start..self.pos]))
            }
            _ => self.expected("a dim symbol or integer"),
        }
    }

    /// Items separated by `,` up to `close`, the opener already read; the
    /// list may be empty.
    fn list<T>(&mut self, close: &str, mut item: impl FnMut(&mut Self) -> PResult<T>) -> PResult<Vec<T>> {
        let mut out = Vec::new();
        if self.eat(close) {
            return Ok(out);
        }
        loop {
            out.push(item(self)?);
            if self.eat(close) {
                return Ok(out);
            }
            self.expect(",")?;
        }
    }

    fn type_list(&mut self) -> PResult<Vec<Type>> {
        self.nest()?;
        self.expect("(")?;
        let out = self.list(")", Self::ty)?;
        self.unnest();
        Ok(out)
    }

    // ---- ops ----

    fn module(&mut self) -> PResult<ModuleAst> {
        if !self.eat_word("module") {
            return self.expected("`module`");
        }
        let name = if self.at("@") { Some(self.symbol()?) } else { None };
        let attrs = if self.eat_word("attributes") {
            self.dict()?
        } else {
            BTreeMap::new()
        };
        let loc = self.opt_loc()?;
        self.expect("{")?;
        let ops = self.ops_until_close()?;
        if self.peek().is_some() {
            return self.expected("the end of the input after the module");
        }
        Ok(ModuleAst { name, attrs, loc, ops })
    }

    /// Ops up to and including the closing `}`.
    fn ops_until_close(&mut self) -> PResult<Vec<OpAst>> {
        let mut ops = Vec::new();
        while !self.eat("}") {
            if self.peek().is_none() {
                return self.expected("an op or `}`");
            }
            ops.push(self.op()?);
        }
        Ok(ops)
    }

    fn op_name(&mut self) -> PResult<String> {
        self.ws();
        let start = self.pos;
        let mut parts = 0;
        loop {
            if self.word_here().is_none() {
                self.pos = start;
                return self.expected("an op name such as `graph.matmul`");
            }
            parts += 1;
            if self.bytes.get(self.pos) == Some(&b'.') {
                self.pos += 1;
            } else {
                break;
            }
        }
        if parts < 2 {
            return Err(Failure::new(
                self.span_from(start),
                format!("op name `{}` has no dialect", &self.text[start..self.pos]),
                "an op is named `dialect.op`",
            ));
        }
        Ok(self.text[start..self.pos].to_string())
    }

    fn op(&mut self) -> PResult<OpAst> {
        self.nest()?;
        self.ws();
        let start = self.pos;
        let mut results = Vec::new();
        if self.at("%") {
            loop {
                results.push(self.value_name()?);
                if !self.eat(",") {
                    break;
                }
            }
            self.expect("=")?;
        }
        let name = self.op_name()?;
        let head = self.span_from(start);
        let op = if results.is_empty() && self.at("@") {
            self.function_op(name, head)?
        } else {
            self.generic_op(results, name, head)?
        };
        self.unnest();
        Ok(op)
    }

    fn generic_op(&mut self, results: Vec<Name>, name: String, head: Span) -> PResult<OpAst> {
        self.expect("(")?;
        let operands = self.list(")", Self::value_name)?;
        let mut regions = Vec::new();
        if self.at_region_list() {
            self.expect("(")?;
            loop {
                regions.push(self.region()?);
                if self.eat(")") {
                    break;
                }
                self.expect(",")?;
            }
        }
        let attrs = if self.at("{") { self.dict()? } else { BTreeMap::new() };
        self.expect(":")?;
        self.ws();
        let types_start = self.pos;
        let input_types = self.type_list()?;
        self.expect("->")?;
        let result_types = if self.at("(") {
            self.type_list()?
        } else {
            vec![self.ty()?]
        };
        let types_span = self.span_from(types_start);
        let loc = self.opt_loc()?;
        Ok(OpAst {
            results,
            name,
            head,
            operands,
            regions,
            attrs,
            input_types,
            result_types,
            types_span,
            loc,
        })
    }

    /// Whether a `({` opens the region list of an op.
    fn at_region_list(&mut self) -> bool {
        let save = self.pos;
        let found = self.eat("(") && self.at("{");
        self.pos = save;
        found
    }

    /// `name @sym(%a: T, ...) -> (R, ...) [attributes {...}] [loc(...)] { ops }`.
    fn function_op(&mut self, name: String, head: Span) -> PResult<OpAst> {
        self.ws();
        let sym_start = self.pos;
        let sym = self.symbol()?;
        let head = head.cover(self.span_from(sym_start));
        let args = self.args()?;
        self.expect("->")?;
        let results = self.type_list()?;
        let mut attrs = if self.eat_word("attributes") {
            self.dict()?
        } else {
            BTreeMap::new()
        };
        for reserved in [SYM_NAME, FUNCTION_TYPE] {
            if attrs.contains_key(reserved) {
                return Err(Failure::new(
                    head,
                    format!("a function's `{reserved}` is written in its signature, not among its attributes"),
                    "this function lists it again",
                ));
            }
        }
        let loc = self.opt_loc()?;
        self.expect("{")?;
        let ops = self.ops_until_close()?;
        let inputs = args.iter().map(|(_, t)| t.clone()).collect();
        attrs.insert(SYM_NAME.to_string(), Attr::Str(sym));
        attrs.insert(
            FUNCTION_TYPE.to_string(),
            Attr::Type(Type::Function { inputs, results }),
        );
        Ok(OpAst {
            results: Vec::new(),
            name,
            head,
            operands: Vec::new(),
            regions: vec![RegionAst { args, ops }],
            attrs,
            input_types: Vec::new(),
            result_types: Vec::new(),
            types_span: head,
            loc,
        })
    }

    /// `(%a: T, %b: U)`.
    fn args(&mut self) -> PResult<Vec<(Name, Type)>> {
        self.expect("(")?;
        self.list(")", |p| {
            let name = p.value_name()?;
            p.expect(":")?;
            Ok((name, p.ty()?))
        })
    }

    /// `{ [^(%a: T, ...):] ops }`.
    fn region(&mut self) -> PResult<RegionAst> {
        self.nest()?;
        self.expect("{")?;
        let args = if self.eat("^") {
            let args = self.args()?;
            self.expect(":")?;
            args
        } else {
            Vec::new()
        };
        let ops = self.ops_until_close()?;
        self.unnest();
        Ok(RegionAst { args, ops })
    }
}

// ---- building ------------------------------------------------------------

/// An op whose operands are still names.
struct Pending {
    op: OpId,
    scope: usize,
    operands: Vec<Name>,
    input_types: Vec<Type>,
}

struct Build {
    module: Module,
    /// The names defined in each isolated scope: the value and where.
    scopes: Vec<HashMap<String, (ValueId, Span)>>,
    pending: Vec<Pending>,
}

impl Build {
    fn new() -> Build {
        Build {
            module: Module::new(None),
            scopes: Vec::new(),
            pending: Vec::new(),
        }
    }

    fn module(mut self, ast: ModuleAst) -> PResult<Module> {
        self.module.name = ast.name;
        self.module.attrs = ast.attrs;
        self.module.loc = ast.loc;
        self.scopes.push(HashMap::new());
        let body = self.module.body();
        for op in ast.ops {
            let id = self.op(op, 0)?;
            self.module.push_op(body, id);
        }
        // Report the first bad name in the text.
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_by_key(|p| self.module.op(p.op).text_span.map(|s| s.start));
        for p in pending {
            self.resolve(p)?;
        }
        Ok(self.module)
    }

    fn define(&mut self, scope: usize, name: &Name, v: ValueId) -> PResult<()> {
        if let Some((_, first)) = self.scopes[scope].get(&name.text) {
            let mut f = Failure::new(
                name.span,
                format!("value `{}` is defined twice", name.text),
                "defined again here",
            );
            f.related = Some((*first, "first defined here".to_string()));
            return Err(f);
        }
        self.scopes[scope].insert(name.text.clone(), (v, name.span));
        Ok(())
    }

    fn op(&mut self, ast: OpAst, scope: usize) -> PResult<OpId> {
        if ast.operands.len() != ast.input_types.len() {
            return Err(Failure::new(
                ast.types_span,
                format!(
                    "`{}` has {} but its type lists {}",
                    ast.name,
                    count(ast.operands.len(), "operand"),
                    count(ast.input_types.len(), "operand type")
                ),
                "the operand types do not match the operands",
            ));
        }
        if ast.results.len() != ast.result_types.len() {
            return Err(Failure::new(
                ast.types_span,
                format!(
                    "`{}` defines {} but its type lists {}",
                    ast.name,
                    count(ast.results.len(), "result"),
                    count(ast.result_types.len(), "result type")
                ),
                "the result types do not match the results",
            ));
        }
        let isolated = is_function_like(ast.operands.len(), ast.results.len(), ast.regions.len(), &ast.attrs);
        let inner_scope = if isolated {
            self.scopes.push(HashMap::new());
            self.scopes.len() - 1
        } else {
            scope
        };
        let id = self.module.create_op(
            OpName::new(ast.name),
            Vec::new(),
            &ast.result_types,
            ast.attrs,
            Vec::new(),
            ast.loc,
        );
        self.module.op_mut(id).text_span = Some(ast.head);
        let values = self.module.results(id).to_vec();
        for (name, v) in ast.results.iter().zip(values) {
            self.define(scope, name, v)?;
        }
        for region in ast.regions {
            let types: Vec<Type> = region.args.iter().map(|(_, t)| t.clone()).collect();
            let r = self.module.new_region(&types);
            let block = self.module.region_block(r);
            let values = self.module.block_args(block).to_vec();
            for ((name, _), v) in region.args.iter().zip(values) {
                self.define(inner_scope, name, v)?;
            }
            for op in region.ops {
                let inner = self.op(op, inner_scope)?;
                self.module.push_op(block, inner);
            }
            self.module.push_region(id, r);
        }
        if !ast.operands.is_empty() {
            self.pending.push(Pending {
                op: id,
                scope,
                operands: ast.operands,
                input_types: ast.input_types,
            });
        }
        Ok(id)
    }

    fn resolve(&mut self, p: Pending) -> PResult<()> {
        let mut operands = Vec::with_capacity(p.operands.len());
        for (name, written) in p.operands.iter().zip(&p.input_types) {
            let Some(&(v, def)) = self.scopes[p.scope].get(&name.text) else {
                return Err(Failure::new(
                    name.span,
                    format!("use of undefined value `{}`", name.text),
                    "no value of this name is defined in this scope",
                ));
            };
            let actual = self.module.value_type(v);
            if actual != written {
                let mut f = Failure::new(
                    name.span,
                    format!(
                        "`{}` has type `{actual}`, but the op's type says `{written}`",
                        name.text
                    ),
                    format!("this is `{actual}`"),
                );
                f.related = Some((def, "defined here".to_string()));
                return Err(f);
            }
            operands.push(v);
        }
        self.module.op_mut(p.op).operands = operands;
        Ok(())
    }
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}
