//! Drives the generated parser and turns its errors into diagnostics.
//!
//! [`Ctx`] is the state the grammar actions share: the token stream (to look
//! at the tokens around an error) and the diagnostics found while parsing.
//! Checks that the grammar is deliberately too permissive for (assignment
//! targets, chained comparisons, argument order, `where` without
//! constraints, decorators without `def`) are made here, so that they get a
//! precise message instead of "unexpected token".

use lalrpop_util::{ErrorRecovery, ParseError};
use tessera_base::{FileId, Span};
use tessera_diagnostics::{Applicability, Code, Diagnostic, Fix};

use crate::ast::*;
use crate::layout::Spanned;
use crate::mistakes::{self, Repair};
use crate::token::Tok;

lalrpop_util::lalrpop_mod!(
    #[allow(clippy::all, clippy::pedantic, unused_parens, unused_imports)]
    grammar
);

pub(crate) struct Ctx<'a> {
    file: FileId,
    tokens: &'a [Spanned<'a>],
    pub(crate) diags: Vec<Diagnostic>,
    /// Where each unexpected token was met (`u32::MAX`: the end).
    errors: Vec<u32>,
}

type Recovery<'a> = ErrorRecovery<u32, Tok<'a>, ()>;

/// How many times the repairs re-parse a file at most; each round repairs
/// every header and line that was found broken in the one before.
const MAX_REPAIRS: usize = 8;

/// Parses a token stream into top-level statements plus parse diagnostics.
///
/// A `def` whose header does not parse is repaired and the file parsed
/// again, so that the function, its body and the statements around it come
/// out as if the header were right: the header's errors are kept, the
/// echoes of the first parse (a decorator without a function, an
/// unexpected block) are not. A line written in another language's syntax
/// is rewritten the same way ([`mistakes`]), its errors replaced by one
/// that says what to write.
pub(crate) fn parse_tokens<'a>(file: FileId, text: &str, tokens: &'a [Spanned<'a>]) -> (Vec<Stmt>, Vec<Diagnostic>) {
    let mut pass = parse_once(file, tokens);
    let mut kept = Vec::new();
    let mut repaired: Option<Vec<Spanned<'a>>> = None;
    for _ in 0..MAX_REPAIRS {
        let current = repaired.as_deref().unwrap_or(tokens);
        let mut repairs: Vec<Repair<'a>> = pass
            .errors
            .iter()
            .filter_map(|&at| {
                let error = current.partition_point(|t| t.0 < at);
                match broken_header(current, error) {
                    Some(h) => Some(Repair {
                        start: h.start,
                        end: h.colon,
                        tokens: repair_header(current, h),
                        diags: Vec::new(),
                        keeps_errors: true,
                        covers: Span::new(current[h.start].0, current[h.colon].2),
                    }),
                    None => mistakes::repair_line(text, file, current, error),
                }
            })
            .collect();
        repairs.sort_by_key(|r| r.start);
        let mut end = 0;
        repairs.retain(|r| {
            let apart = r.start >= end;
            end = end.max(r.end);
            apart
        });
        if repairs.is_empty() {
            break;
        }
        let mut diags = std::mem::take(&mut pass.diags);
        for r in &mut repairs {
            let ours = |d: &Diagnostic| {
                let at = d.primary_span().map_or(0, |s| s.span.start);
                r.covers.start <= at && at <= r.covers.end
            };
            let (in_run, rest): (Vec<_>, Vec<_>) = diags.into_iter().partition(ours);
            diags = rest;
            if r.keeps_errors {
                kept.extend(in_run);
            }
            kept.append(&mut r.diags);
        }
        let next = apply(current, &repairs);
        pass = parse_once(file, &next);
        repaired = Some(next);
    }
    kept.append(&mut pass.diags);
    (pass.body, kept)
}

struct Pass {
    body: Vec<Stmt>,
    diags: Vec<Diagnostic>,
    /// Where the parser met a token it did not expect (`u32::MAX` for the
    /// end of the input).
    errors: Vec<u32>,
}

fn parse_once<'t>(file: FileId, tokens: &'t [Spanned<'t>]) -> Pass {
    let mut ctx = Ctx {
        file,
        tokens,
        diags: Vec::new(),
        errors: Vec::new(),
    };
    let result = grammar::ModuleParser::new().parse(&mut ctx, tokens.iter().cloned().map(Ok::<_, ()>));
    let body = match result {
        Ok(body) => body,
        Err(error) => {
            // Recovery failed (it cannot at the end of the input); report
            // the error and keep nothing of the tree.
            ctx.report(error);
            Vec::new()
        }
    };
    Pass {
        body,
        diags: ctx.diags,
        errors: ctx.errors,
    }
}

/// A `def` header with a parse error: token indices of its `def`, of the
/// `:` that ends it and of the unexpected token.
#[derive(Clone, Copy)]
struct Header {
    start: usize,
    colon: usize,
    error: usize,
}

pub(crate) fn is_layout(t: &Spanned) -> bool {
    matches!(t.1, Tok::Newline | Tok::Indent | Tok::Dedent)
}

pub(crate) fn bracket_depth(tok: &Tok) -> i32 {
    match tok {
        Tok::LParen | Tok::LBracket | Tok::LBrace => 1,
        Tok::RParen | Tok::RBracket | Tok::RBrace => -1,
        _ => 0,
    }
}

/// The `def NAME(` header holding the unexpected token at index `error`,
/// when it ends with a `:` that the token is not after.
fn broken_header(tokens: &[Spanned], error: usize) -> Option<Header> {
    let start = tokens[..error].iter().rposition(is_layout).map_or(0, |i| i + 1);
    let named = matches!(tokens.get(start + 1), Some((_, Tok::Name(_), _)));
    if tokens.get(start)?.1 != Tok::Def || !named || error <= start + 1 {
        return None;
    }
    let mut depth = 0;
    let end = (start..tokens.len()).find(|&i| {
        depth += bracket_depth(&tokens[i].1);
        is_layout(&tokens[i]) || (depth == 0 && tokens[i].1 == Tok::Colon)
    })?;
    (tokens[end].1 == Tok::Colon && error <= end).then_some(Header {
        start,
        colon: end,
        error,
    })
}

/// `tokens` with each repair's run replaced.
fn apply<'a>(tokens: &[Spanned<'a>], repairs: &[Repair<'a>]) -> Vec<Spanned<'a>> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut copied = 0;
    for r in repairs {
        out.extend_from_slice(&tokens[copied..r.start]);
        out.extend_from_slice(&r.tokens);
        copied = r.end;
    }
    out.extend_from_slice(&tokens[copied..]);
    out
}

/// The tokens of a broken header, up to its `:`, repaired: `f32[M][N]`
/// becomes `f32[M, N]`; a broken parameter keeps its name only; a result
/// type after the effects clause moves before it; another broken clause
/// after the parameters is dropped.
fn repair_header<'a>(tokens: &[Spanned<'a>], h: Header) -> Vec<Spanned<'a>> {
    let header = &tokens[h.start..h.colon];
    let error = h.error - h.start;
    // The unexpected token, or `:` when it is the header's `:`.
    let found = header.get(error).map_or(&Tok::Colon, |t| &t.1);
    let mut out: Vec<Spanned<'a>> = header[..2].to_vec();
    if header.get(2).is_none_or(|t| t.1 != Tok::LParen) {
        // `def f x:`: no parameter list at all.
        let at = header[1].2;
        out.extend([(at, Tok::LParen, at), (at, Tok::RParen, at)]);
        return out;
    }
    if error > 0 && *found == Tok::LBracket && header[error - 1].1 == Tok::RBracket {
        // `f32[M][N]`: one list of dims.
        let mut merged = header.to_vec();
        merged.splice(error - 1..=error, [(header[error - 1].0, Tok::Comma, header[error].2)]);
        return merged;
    }
    let mut depth = 0;
    let Some(close) = (2..header.len()).find(|&i| {
        depth += bracket_depth(&header[i].1);
        depth == 0
    }) else {
        return header.to_vec();
    };
    if error <= close {
        // The parameters, split at their top-level commas; the broken one
        // keeps its name.
        out.push(header[2].clone());
        let (mut depth, mut from, mut any) = (0, 3, false);
        for i in 3..=close {
            depth += bracket_depth(&header[i].1);
            if i < close && !(depth == 0 && header[i].1 == Tok::Comma) {
                continue;
            }
            let param = &header[from..i];
            let kept = match param.first() {
                _ if !(from..=i).contains(&error) => param,
                Some(name @ (_, Tok::Name(_), _)) => std::slice::from_ref(name),
                _ => &[],
            };
            if let Some(first) = kept.first() {
                if any {
                    out.push((first.0, Tok::Comma, first.0));
                }
                out.extend_from_slice(kept);
                any = true;
            }
            from = i + 1;
        }
        out.push(header[close].clone());
        return out;
    }
    out.extend_from_slice(&header[2..=close]);
    // The clause the error is in starts at its `->`, `effects` or `where`.
    let mut depth = 0;
    let mut clause = close + 1;
    for (i, t) in header.iter().enumerate().take(error + 1).skip(close + 1) {
        if depth == 0 && matches!(t.1, Tok::Arrow | Tok::Effects | Tok::Where) {
            clause = i;
        }
        depth += bracket_depth(&t.1);
    }
    if *found == Tok::Arrow && clause == error {
        // `effects(random) -> T`: the result type comes first.
        let mut depth = 0;
        let result_end = (error..header.len())
            .find(|&i| {
                depth += bracket_depth(&header[i].1);
                depth == 0 && i > error && header[i].1 == Tok::Where
            })
            .unwrap_or(header.len());
        out.extend_from_slice(&header[error..result_end]);
        out.extend_from_slice(&header[close + 1..error]);
        out.extend_from_slice(&header[result_end..]);
        return out;
    }
    out.extend_from_slice(&header[close + 1..clause]);
    out
}

impl<'a> Ctx<'a> {
    fn error(&mut self, diag: Diagnostic) {
        self.diags.push(diag);
    }

    fn at(&self, span: Span) -> tessera_base::FileSpan {
        span.in_file(self.file)
    }

    pub(crate) fn recovered(&mut self, recovery: Recovery<'a>) {
        self.report(recovery.error);
    }

    /// The token before the one starting at `offset`, if any.
    fn token_before(&self, offset: u32) -> Option<&Spanned<'a>> {
        let i = self.tokens.partition_point(|t| t.0 < offset);
        i.checked_sub(1).map(|i| &self.tokens[i])
    }

    /// Whether the token at `offset` is inside brackets opened on its
    /// logical line.
    fn inside_brackets(&self, offset: u32) -> bool {
        let end = self.tokens.partition_point(|t| t.0 < offset);
        let start = self.tokens[..end]
            .iter()
            .rposition(|t| matches!(t.1, Tok::Newline))
            .map_or(0, |i| i + 1);
        let depth: i32 = self.tokens[start..end]
            .iter()
            .map(|t| match t.1 {
                Tok::LParen | Tok::LBracket | Tok::LBrace => 1,
                Tok::RParen | Tok::RBracket | Tok::RBrace => -1,
                _ => 0,
            })
            .sum();
        depth > 0
    }

    /// The span of the decorator on the logical line before the token at
    /// `offset`, if that line is a decorator.
    fn decorator_before(&self, offset: u32) -> Option<Span> {
        let mut i = self.tokens.partition_point(|t| t.0 < offset);
        // The layout pass puts zero-width NEWLINEs where an unexpected
        // DEDENT or the end of the input also sits: they come first.
        while self
            .tokens
            .get(i)
            .is_some_and(|t| t.1 == Tok::Newline && t.0 == offset && t.2 == offset)
        {
            i += 1;
        }
        let newline = i.checked_sub(1).filter(|&n| self.tokens[n].1 == Tok::Newline)?;
        let line_start = self.tokens[..newline]
            .iter()
            .rposition(|t| matches!(t.1, Tok::Newline | Tok::Indent | Tok::Dedent))
            .map_or(0, |j| j + 1);
        let at = self.tokens.get(line_start).filter(|t| t.1 == Tok::At)?;
        Some(Span::new(at.0, self.tokens[newline - 1].2))
    }

    fn report(&mut self, error: ParseError<u32, Tok<'a>, ()>) {
        match error {
            ParseError::UnrecognizedToken {
                token: (l, tok, r),
                expected,
            } => self.unexpected(Some(tok), Span::new(l, r), &expected),
            ParseError::UnrecognizedEof { location, expected } => {
                self.unexpected(None, Span::empty(location), &expected)
            }
            ParseError::InvalidToken { location } => self.error(
                Diagnostic::error(Code::E0030, "invalid token").with_primary(self.at(Span::empty(location)), ""),
            ),
            ParseError::ExtraToken { token: (l, tok, r) } => self.unexpected(Some(tok), Span::new(l, r), &[]),
            ParseError::User { error: () } => {}
        }
    }

    fn unexpected(&mut self, found: Option<Tok<'a>>, span: Span, expected: &[String]) {
        let expects = |t: &str| expected.iter().any(|e| e.trim_matches('"') == t);
        // At the end of the input every token comes before the error.
        let offset = if found.is_some() { span.start } else { u32::MAX };
        self.errors.push(offset);
        if let Some(diag) = found.as_ref().and_then(|tok| self.known_mistake(tok, span)) {
            self.error(diag);
            return;
        }
        if let Some(deco) = self.decorator_before(offset).filter(|_| expects("def")) {
            self.error(
                Diagnostic::error(Code::E0033, "a decorator must be followed by a function")
                    .with_primary(self.at(deco), "this decorator applies to nothing")
                    .with_help("put a `def` right after the decorator, or remove it"),
            );
            return;
        }
        if matches!(found, Some(Tok::Newline) | None) && expects(":") {
            let prev_end = self.token_before(span.start).map_or(span.start, |t| t.2);
            let at = Span::empty(prev_end);
            self.error(
                Diagnostic::error(Code::E0031, "missing `:` at the end of the line")
                    .with_primary(self.at(at), "expected `:` here")
                    .with_fix(Fix::new("add `:`", Applicability::MachineApplicable).with_edit(self.at(at), ":")),
            );
            return;
        }
        if let (Some(Tok::Str(_)), Some((start, Tok::Name(prefix), end))) = (&found, self.token_before(span.start)) {
            let prefixed = *end == span.start
                && ["f", "r", "b", "rb", "br", "fr", "rf", "u"].contains(&prefix.to_lowercase().as_str());
            if prefixed && *prefix == "f" {
                // A top-level f-string lexes as one; this one is inside an
                // f-string's field.
                let at = Span::new(*start, span.end);
                self.error(
                    Diagnostic::error(Code::E0030, "an f-string inside an f-string's field is not supported")
                        .with_primary(self.at(at), "a nested f-string")
                        .with_help("make the inner string first, `inner = f\"{n}\"`, and put `{inner}` in the field"),
                );
                return;
            }
            if prefixed {
                let at = Span::new(*start, span.end);
                let help = if prefix.to_lowercase().contains('f') {
                    "an f-string takes the prefix `f` alone: `f\"x = {x}\"`"
                } else {
                    "write the string without the prefix"
                };
                self.error(
                    Diagnostic::error(Code::E0030, format!("string prefix `{prefix}` is not supported"))
                        .with_primary(self.at(at), "a prefixed string")
                        .with_help(help),
                );
                return;
            }
        }
        // `[a, b for x in xs]`: a `for` inside brackets after more than
        // one element.
        if matches!(found, Some(Tok::For)) && self.inside_brackets(span.start) {
            self.error(
                Diagnostic::error(Code::E0030, "a comprehension has one element before its `for`")
                    .with_primary(self.at(span), "this `for` follows a list of elements")
                    .with_help("make the elements one tuple, `[(a, b) for x in xs]`; a generator next to a call's other arguments takes its own parentheses, `f(a, (x for x in xs))`"),
            );
            return;
        }
        // `x[..., 0]`: NumPy's Ellipsis lexes as `..` then `.`.
        let dot_after = self
            .tokens
            .get(self.tokens.partition_point(|t| t.0 < span.end))
            .is_some_and(|t| t.0 == span.end && matches!(t.1, Tok::Dot));
        if matches!(found, Some(Tok::DotDot)) && dot_after {
            self.error(
                Diagnostic::error(Code::E0030, "`...` (Ellipsis) is not supported")
                    .with_primary(self.at(Span::new(span.start, span.end + 1)), "an Ellipsis")
                    .with_help("write a `:` for each dim it stands for: `x[:, :, 0]`"),
            );
            return;
        }
        let described = describe_expected(expected);
        let (code, message, label) = match &found {
            None => (
                Code::E0030,
                "unexpected end of file".to_string(),
                "the file ends here".to_string(),
            ),
            Some(tok) => {
                let message = match &described {
                    Some(what) => format!("expected {what}, found {tok}"),
                    None => format!("unexpected {tok}"),
                };
                (Code::E0030, message, format!("unexpected {tok}"))
            }
        };
        let mut diag = Diagnostic::error(code, message).with_primary(self.at(span), label);
        if matches!(found, Some(Tok::Else)) {
            diag = diag.with_note(
                "an `else` belongs to an `if` (or a conditional expression); a `for` or `while` loop takes none in Tessera",
            );
        }
        if found.is_none() {
            if let Some(what) = &described {
                diag = diag.with_note(format!("expected {what}"));
            }
        }
        self.error(diag);
    }

    /// Mistakes common enough to name, at the unexpected `tok`.
    fn known_mistake(&self, tok: &Tok<'a>, span: Span) -> Option<Diagnostic> {
        let before = self.token_before(span.start).map(|t| &t.1);
        let line = self.line_before(span.start);
        let (message, label, help) = match tok {
            Tok::LBracket if before == Some(&Tok::RBracket) => (
                "dims are written in one list",
                "a second list of dims",
                "write `f32[M, N]`, not `f32[M][N]`",
            ),
            Tok::Effects if before == Some(&Tok::At) => (
                "`effects` is not a decorator",
                "effects are part of the signature",
                "effects are declared in the signature: `def f(x: f32) effects(io):`",
            ),
            Tok::Arrow if line.iter().any(|t| t.1 == Tok::Effects) && self.line_starts_with(span.start, &Tok::Def) => (
                "the result type comes before the effects clause",
                "`->` after `effects(...)`",
                "the result type comes first: `-> T effects(...)`",
            ),
            _ => return None,
        };
        Some(
            Diagnostic::error(Code::E0030, message)
                .with_primary(self.at(span), label)
                .with_help(help),
        )
    }

    /// The tokens of the logical line before `offset`.
    fn line_before(&self, offset: u32) -> &[Spanned<'a>] {
        let end = self.tokens.partition_point(|t| t.0 < offset);
        let start = self.tokens[..end].iter().rposition(is_layout).map_or(0, |i| i + 1);
        &self.tokens[start..end]
    }

    fn line_starts_with(&self, offset: u32, tok: &Tok) -> bool {
        self.line_before(offset).first().is_some_and(|t| &t.1 == tok)
    }

    /// A line whose statement did not parse keeps the kind its keyword
    /// gives it: `return x === 3` still returns (an error value), so that
    /// the function is not said to fall off its end.
    pub(crate) fn simple_line(&mut self, mut stmts: Vec<Stmt>) -> Vec<Stmt> {
        for stmt in &mut stmts {
            let first = self.tokens[self.tokens.partition_point(|t| t.0 < stmt.span.start)..]
                .iter()
                .find(|t| !is_layout(t));
            if first.is_some_and(|t| t.1 == Tok::Return) && !matches!(stmt.kind, StmtKind::Return(_)) {
                let value_at = (stmt.span.start + "return".len() as u32).min(stmt.span.end);
                stmt.kind = StmtKind::Return(Some(Expr::error(Span::new(value_at, stmt.span.end))));
            }
        }
        stmts
    }

    /// `else if`: reported, and the `if` made the only statement of the
    /// `else` block.
    pub(crate) fn else_if(
        &mut self,
        else_kw: Span,
        if_kw: Span,
        branches: Vec<IfBranch>,
        orelse: Option<Block>,
        span: Span,
    ) -> Block {
        let words = self.at(else_kw.cover(if_kw));
        self.error(
            Diagnostic::error(Code::E0030, "`else if` is written `elif`")
                .with_primary(self.at(if_kw), "`if` after `else`")
                .with_fix(Fix::new("write `elif`", Applicability::MachineApplicable).with_edit(words, "elif")),
        );
        let stmt = Stmt {
            kind: StmtKind::If { branches, orelse },
            span,
        };
        Block {
            stmts: vec![stmt],
            span,
        }
    }

    pub(crate) fn expr(&mut self, kind: ExprKind, span: Span) -> Expr {
        let expr = Expr::new(kind, span);
        if expr.depth() <= MAX_EXPR_DEPTH {
            return expr;
        }
        // Report once per over-deep tree: its children are not errors yet.
        let mut child_is_error = false;
        expr.kind
            .for_each_child(|c| child_is_error |= c.depth() > MAX_EXPR_DEPTH - 1 && c.kind == ExprKind::Error);
        if !child_is_error {
            self.error(
                Diagnostic::error(Code::E0014, "expression nested too deeply")
                    .with_primary(self.at(span), format!("more than {MAX_EXPR_DEPTH} levels of nesting"))
                    .with_help("split it into smaller expressions with intermediate variables"),
            );
        }
        let mut error = Expr::error(span);
        error.set_depth(MAX_EXPR_DEPTH);
        error
    }

    pub(crate) fn binary(&mut self, op: BinOp, lhs: Expr, rhs: Expr, span: Span) -> Expr {
        self.expr(
            ExprKind::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            },
            span,
        )
    }

    pub(crate) fn unary(&mut self, op: UnaryOp, operand: Expr, span: Span) -> Expr {
        self.expr(
            ExprKind::Unary {
                op,
                operand: Box::new(operand),
            },
            span,
        )
    }

    pub(crate) fn range(&mut self, start: Expr, end: Expr, inclusive: bool, span: Span) -> Expr {
        self.expr(
            ExprKind::Range {
                start: Box::new(start),
                end: Box::new(end),
                inclusive,
            },
            span,
        )
    }

    pub(crate) fn tuple(&mut self, first: Expr, rest: Vec<Expr>, span: Span) -> Expr {
        let mut items = vec![first];
        items.extend(rest);
        self.expr(ExprKind::Tuple(items), span)
    }

    pub(crate) fn compare(&mut self, op: BinOp, lhs: Expr, rhs: Expr, span: Span) -> Expr {
        if let ExprKind::Binary {
            op: inner, rhs: middle, ..
        } = &lhs.kind
        {
            if inner.is_comparison() {
                let help = format!(
                    "write it as two comparisons joined by `and`: `... {} ... and ... {} ...`",
                    inner.symbol(),
                    op.symbol()
                );
                let diag = Diagnostic::error(Code::E0036, "comparison operators cannot be chained")
                    .with_primary(self.at(span), "this compares the result of a comparison")
                    .with_secondary(self.at(middle.span), "this operand is used by both comparisons")
                    .with_help(help);
                self.error(diag);
            }
        }
        self.binary(op, lhs, rhs, span)
    }

    fn check_args(&mut self, args: &[Arg]) {
        let mut keyword: Option<Span> = None;
        for arg in args {
            match (&arg.name, keyword) {
                (Some(_), None) => keyword = Some(arg.span),
                (None, Some(kw)) => {
                    let diag = Diagnostic::error(Code::E0037, "positional argument after keyword argument")
                        .with_primary(self.at(arg.span), "this positional argument")
                        .with_secondary(self.at(kw), "comes after this keyword argument")
                        .with_help("move positional arguments before keyword arguments");
                    self.error(diag);
                    return;
                }
                _ => {}
            }
        }
    }

    pub(crate) fn call(&mut self, callee: Expr, args: Vec<Arg>, span: Span) -> Expr {
        self.check_args(&args);
        self.expr(
            ExprKind::Call {
                callee: Box::new(callee),
                args,
            },
            span,
        )
    }

    /// A comprehension's `for` clause: its target binds names (a tuple of
    /// them too), local to the comprehension.
    pub(crate) fn comp_for(&mut self, target: Expr, iter: Expr, conds: Vec<Expr>) -> CompFor {
        fn names_only(e: &Expr) -> Option<&Expr> {
            match &e.kind {
                ExprKind::Name(_) | ExprKind::Error => None,
                ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().find_map(names_only),
                ExprKind::Paren(inner) => names_only(inner),
                _ => Some(e),
            }
        }
        if let Some(bad) = names_only(&target) {
            self.error(
                Diagnostic::error(Code::E0035, "a comprehension's `for` binds names only")
                    .with_primary(self.at(bad.span), "not a name")
                    .with_help("loop over names (`for x in xs`, `for i, x in enumerate(xs)`) and use the element in the expression"),
            );
        }
        CompFor { target, iter, conds }
    }

    /// A comprehension; a generator's span covers its parentheses, a
    /// call's only argument `f(x for x in xs)` the element and clauses.
    pub(crate) fn comp(
        &mut self,
        kind: CompKind,
        elt: Expr,
        value: Option<Expr>,
        clauses: Vec<CompFor>,
        span: Span,
    ) -> Expr {
        self.expr(
            ExprKind::Comp {
                kind,
                elt: Box::new(elt),
                value: value.map(Box::new),
                clauses,
            },
            span,
        )
    }

    pub(crate) fn subscript(&mut self, base: Expr, args: Vec<Arg>, span: Span) -> Expr {
        self.check_args(&args);
        if args.is_empty() {
            let brackets = Span::new(base.span.end, span.end);
            self.error(
                Diagnostic::error(Code::E0030, "a subscript without an index")
                    .with_primary(self.at(brackets), "nothing between the brackets")
                    .with_help("index with a number or a slice: `x[i]`, `x[:]`"),
            );
        }
        self.expr(
            ExprKind::Subscript {
                base: Box::new(base),
                args,
            },
            span,
        )
    }

    /// Reports an expression that cannot be assigned to.
    pub(crate) fn check_target(&mut self, target: &Expr) {
        match &target.kind {
            ExprKind::Name(_) | ExprKind::Attr { .. } | ExprKind::Subscript { .. } | ExprKind::Error => {}
            ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().for_each(|t| self.check_target(t)),
            ExprKind::Paren(inner) => self.check_target(inner),
            other => {
                let what = match other {
                    ExprKind::Call { .. } => "a function call",
                    ExprKind::Binary { .. } | ExprKind::Unary { .. } => "an operator expression",
                    ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Size(_) | ExprKind::Str(_) => "a literal",
                    ExprKind::Bool(_) | ExprKind::None => "a constant",
                    _ => "this expression",
                };
                let diag = Diagnostic::error(Code::E0035, format!("cannot assign to {what}"))
                    .with_primary(self.at(target.span), "not a place that can be assigned")
                    .with_help("assign to a variable, an element (`x[i]`) or an attribute (`x.a`)");
                self.error(diag);
            }
        }
    }

    /// A parameter's `mut`s: the first one, and E0030 with a fix that
    /// removes the others when there are more (`y: mut mut f32[N]`).
    pub(crate) fn mutable(&mut self, muts: Vec<Span>) -> Option<Span> {
        let (first, last) = (*muts.first()?, *muts.last()?);
        if muts.len() > 1 {
            let extra = Span::new(first.end, last.end);
            let diag = Diagnostic::error(Code::E0030, format!("`mut` is written {} times", muts.len()))
                .with_primary(self.at(extra), "`mut` again")
                .with_help("a parameter is `mut` once")
                .with_fix(
                    Fix::new("remove the repeated `mut`", Applicability::MachineApplicable)
                        .with_edit(self.at(extra), ""),
                );
            self.error(diag);
        }
        Some(first)
    }

    pub(crate) fn assign(&mut self, first: Expr, mut rest: Vec<Expr>, span: Span) -> Stmt {
        let value = rest.pop().expect("the grammar requires at least one `= value`");
        let mut targets = vec![first];
        targets.extend(rest);
        targets.iter().for_each(|t| self.check_target(t));
        Stmt {
            kind: StmtKind::Assign { targets, value },
            span,
        }
    }

    pub(crate) fn where_clause(&mut self, constraints: Vec<Expr>, span: Span) -> WhereClause {
        if constraints.is_empty() {
            let diag = Diagnostic::error(Code::E0034, "`where` clause without constraints")
                .with_primary(self.at(span), "expected at least one constraint after `where`")
                .with_help("list constraints such as `where D % 8 == 0, S <= 8192`, or remove `where`");
            self.error(diag);
        }
        let mut split = Vec::with_capacity(constraints.len());
        for c in constraints {
            split_and(c, &mut split);
        }
        WhereClause {
            constraints: split,
            span,
        }
    }

    pub(crate) fn stray_decorators(&mut self, decorators: Vec<Decorator>, stmts: Vec<Stmt>) -> Vec<Stmt> {
        for deco in &decorators {
            let diag = Diagnostic::error(Code::E0033, "a decorator must be followed by a function")
                .with_primary(self.at(deco.span), "this decorator")
                .with_help("put the decorator directly above a `def`, or remove it");
            self.error(diag);
        }
        stmts
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fn_def(
        &mut self,
        name: Ident,
        params: Vec<Param>,
        ret: Option<Type>,
        effects: Option<EffectsClause>,
        where_clause: Option<WhereClause>,
        body: Block,
        span: Span,
    ) -> FnDef {
        let mut first_default: Option<Span> = None;
        for param in &params {
            match (&param.default, first_default) {
                (Some(d), None) => first_default = Some(d.span),
                (None, Some(d)) => {
                    let diag = Diagnostic::error(
                        Code::E0041,
                        format!("parameter `{}` needs a default value", param.name.name),
                    )
                    .with_primary(self.at(param.span), "a parameter without a default")
                    .with_secondary(self.at(d), "follows one with a default")
                    .with_help("move the parameters with defaults to the end");
                    self.error(diag);
                    break;
                }
                _ => {}
            }
        }
        let mut body = body;
        mark_nested_defs(&mut body.stmts);
        FnDef {
            decorators: Vec::new(),
            name,
            params,
            ret,
            effects,
            where_clause,
            body,
            span,
        }
    }
}

/// A function defined inside another (E0107, from the checker) becomes an
/// error statement holding it and `name = <error>`, so that its name is
/// bound where it is used.
fn mark_nested_defs(stmts: &mut [Stmt]) {
    for stmt in stmts {
        match &mut stmt.kind {
            StmtKind::Def(def) => {
                let name = def.name.clone();
                let def = std::mem::replace(&mut stmt.kind, StmtKind::Pass);
                let binding = Stmt {
                    kind: StmtKind::Assign {
                        targets: vec![Expr::new(ExprKind::Name(name.name), name.span)],
                        value: Expr::error(name.span),
                    },
                    span: name.span,
                };
                let def = Stmt {
                    kind: def,
                    span: stmt.span,
                };
                stmt.kind = StmtKind::Error(vec![def, binding]);
            }
            StmtKind::If { branches, orelse } => {
                branches.iter_mut().for_each(|b| mark_nested_defs(&mut b.body.stmts));
                if let Some(b) = orelse {
                    mark_nested_defs(&mut b.stmts);
                }
            }
            StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::With { body, .. } => {
                mark_nested_defs(&mut body.stmts)
            }
            StmtKind::Error(children) => mark_nested_defs(children),
            _ => {}
        }
    }
}

/// Splits `a and b and c` into `[a, b, c]`.
fn split_and(expr: Expr, out: &mut Vec<Expr>) {
    match expr.kind {
        ExprKind::Binary {
            op: BinOp::And,
            lhs,
            rhs,
        } => {
            split_and(*lhs, out);
            split_and(*rhs, out);
        }
        _ => out.push(expr),
    }
}

/// "`)`, `,` or an expression" from the grammar's terminal names; `None`
/// when the list is too long to be helpful.
fn describe_expected(expected: &[String]) -> Option<String> {
    const EXPRESSION_STARTS: [&str; 6] = ["name", "int", "string", "(", "[", "-"];
    let names: Vec<&str> = expected.iter().map(|e| e.trim_matches('"')).collect();
    let expression = EXPRESSION_STARTS.iter().all(|s| names.contains(s));
    let mut items: Vec<String> = Vec::new();
    if expression {
        items.push("an expression".into());
    }
    for name in &names {
        let starts_expression = matches!(
            *name,
            "name"
                | "int"
                | "float"
                | "size"
                | "string"
                | "invalid"
                | "("
                | "["
                | "{"
                | "-"
                | "+"
                | "~"
                | "not"
                | "True"
                | "False"
                | "None"
                | "effects"
        );
        if expression && starts_expression {
            continue;
        }
        items.push(match *name {
            "name" => "a name".into(),
            "int" | "float" | "size" => "a number".into(),
            "string" => "a string".into(),
            "NEWLINE" => "end of line".into(),
            "INDENT" => "an indented block".into(),
            "DEDENT" => "end of block".into(),
            "invalid" => continue,
            other => format!("`{other}`"),
        });
    }
    items.dedup();
    match items.len() {
        0 => None,
        1 => Some(items.remove(0)),
        2..=5 => {
            let last = items.pop().expect("checked length");
            Some(format!("{} or {last}", items.join(", ")))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_lists_read_as_prose() {
        let list = |names: &[&str]| names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>();
        assert_eq!(describe_expected(&list(&[")", ","])), Some("`)` or `,`".into()));
        assert_eq!(
            describe_expected(&list(&["name", "int", "string", "(", "[", "-", "not", ")"])),
            Some("an expression or `)`".into())
        );
        assert_eq!(describe_expected(&list(&["a", "b", "c", "d", "e", "f"])), None);
    }
}
