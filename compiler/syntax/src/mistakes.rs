//! Lines written in another language's syntax (C's `for (...; ...; ...)`,
//! `int i = ...`, `i++`; CUDA's `k<<<grid, block>>>(...)`; Python's
//! `lambda`, `:=`, `class`, `try`, `async`, `global`, relative and wildcard
//! imports; a `where` clause written in a function's body), found
//! at a parse error and rewritten into Tessera that binds the same names,
//! so that the file is parsed again without the echoes of the mistake: one
//! error says what to write, and the names the line would have bound are
//! not reported unknown after it.

use tessera_base::{FileId, Span};
use tessera_diagnostics::{Applicability, Code, Diagnostic, Fix};

use crate::layout::Spanned;
use crate::parser::{bracket_depth, is_layout};
use crate::token::Tok;

/// A run of tokens to replace, what replaces it, and the errors that say
/// why.
pub(crate) struct Repair<'a> {
    /// Token indices: the first replaced one and the one after the last.
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) tokens: Vec<Spanned<'a>>,
    pub(crate) diags: Vec<Diagnostic>,
    /// Whether the parse's own errors about the run are kept (a header's
    /// are; a known mistake's are replaced by the one that names it).
    pub(crate) keeps_errors: bool,
    /// The source offsets whose errors the repair answers.
    pub(crate) covers: Span,
}

fn name_is(t: Option<&Spanned>, word: &str) -> bool {
    matches!(t, Some((_, Tok::Name(n), _)) if *n == word)
}

/// A zero-width token at `at`.
fn synthetic<'a>(at: u32, tok: Tok<'a>) -> Spanned<'a> {
    (at, tok, at)
}

struct Line<'t, 'a> {
    text: &'t str,
    file: FileId,
    tokens: &'t [Spanned<'a>],
    /// Token indices of the line's first token and of its NEWLINE (or the
    /// end of the tokens).
    start: usize,
    end: usize,
    error: usize,
}

impl<'a> Line<'_, 'a> {
    fn toks(&self) -> &[Spanned<'a>] {
        &self.tokens[self.start..self.end]
    }

    /// The source text of a run of tokens.
    fn source(&self, run: &[Spanned]) -> String {
        match (run.first(), run.last()) {
            (Some(first), Some(last)) => self
                .text
                .get(first.0 as usize..last.2 as usize)
                .unwrap_or("")
                .to_string(),
            _ => String::new(),
        }
    }

    fn span(&self) -> Span {
        let toks = self.toks();
        match (toks.first(), toks.last()) {
            (Some(first), Some(last)) => Span::new(first.0, last.2),
            _ => Span::empty(self.tokens.get(self.error).map_or(0, |t| t.0)),
        }
    }

    /// Replaces the whole line (not its NEWLINE).
    fn replace(&self, tokens: Vec<Spanned<'a>>, diag: Diagnostic) -> Repair<'a> {
        let error_end = self.tokens.get(self.error).map_or(u32::MAX, |t| t.2);
        let line = self.span();
        Repair {
            start: self.start,
            end: self.end,
            tokens,
            diags: vec![diag],
            keeps_errors: false,
            covers: Span::new(line.start, line.end.max(error_end)),
        }
    }

    fn error(&self, message: &str, span: Span, label: &str) -> Diagnostic {
        Diagnostic::error(Code::E0030, message).with_primary(span.in_file(self.file), label)
    }
}

/// The repair of the line holding the parse error at token `error`, when
/// the line is one of the mistakes this module knows.
pub(crate) fn repair_line<'a>(text: &str, file: FileId, tokens: &[Spanned<'a>], error: usize) -> Option<Repair<'a>> {
    // The error is met at the first token at its offset: a block's zero-width
    // INDENT before the `where` that the block cannot start with.
    let at_where = |i: usize| tokens.get(i).is_some_and(|t| t.1 == Tok::Where);
    let error = match tokens.get(error) {
        Some(t) if t.1 == Tok::Indent && at_where(error + 1) && tokens[error + 1].0 == t.0 => error + 1,
        _ => error,
    };
    // An unexpected indented block belongs to the line before it.
    let mut last = error.min(tokens.len());
    if tokens.get(error).is_some_and(|t| t.1 == Tok::Indent) && error > 0 && tokens[error - 1].1 == Tok::Newline {
        last = error - 1;
    }
    let start = tokens[..last].iter().rposition(is_layout).map_or(0, |i| i + 1);
    let end = (start..tokens.len())
        .find(|&i| tokens[i].1 == Tok::Newline)
        .unwrap_or(tokens.len());
    let line = Line {
        text,
        file,
        tokens,
        start,
        end,
        error,
    };
    if line.toks().is_empty() {
        return None;
    }
    c_for(&line)
        .or_else(|| c_declaration(&line))
        .or_else(|| increment(&line))
        .or_else(|| lambda(&line))
        .or_else(|| walrus(&line))
        .or_else(|| class(&line))
        .or_else(|| try_statement(&line))
        .or_else(|| async_keyword(&line))
        .or_else(|| global(&line))
        .or_else(|| relative_import(&line))
        .or_else(|| star_import(&line))
        .or_else(|| where_in_body(&line))
        .or_else(|| cuda_launch(&line))
}

/// `for (i = 0; i < N; i += 1):` is read as `for i in range(0, N):`.
fn c_for<'a>(line: &Line<'_, 'a>) -> Option<Repair<'a>> {
    let toks = line.toks();
    let (Some((_, Tok::For, _)), Some(open), Some(name @ (_, Tok::Name(var), _)), Some((_, Tok::Assign, _))) =
        (toks.first(), toks.get(1), toks.get(2), toks.get(3))
    else {
        return None;
    };
    if open.1 != Tok::LParen {
        return None;
    }
    let mut depth = 0;
    let mut semis = Vec::new();
    let mut close = None;
    for (i, t) in toks.iter().enumerate().skip(1) {
        depth += bracket_depth(&t.1);
        if depth == 1 && t.1 == Tok::Semi {
            semis.push(i);
        }
        if depth == 0 {
            close = Some(i);
            break;
        }
    }
    let (close, &[first, second]) = (close?, &semis[..]) else {
        return None;
    };
    if toks.get(close + 1).is_none_or(|t| t.1 != Tok::Colon) {
        return None;
    }
    let init = &toks[4..first];
    let cond = &toks[first + 1..second];
    let step = &toks[second + 1..close];
    // The bound, when the condition is `i < stop` or `i <= stop`.
    let named = |t: Option<&Spanned>| matches!(t, Some((_, Tok::Name(n), _)) if n == var);
    let stop: Option<(&[Spanned<'a>], bool)> = match cond.get(1).map(|t| &t.1) {
        Some(Tok::Lt) if named(cond.first()) && cond.len() > 2 => Some((&cond[2..], false)),
        Some(Tok::Le) if named(cond.first()) && cond.len() > 2 => Some((&cond[2..], true)),
        _ => None,
    };
    let step_is_one = match step.iter().map(|t| &t.1).collect::<Vec<_>>()[..] {
        [Tok::Name(n), Tok::PlusEq, Tok::Int(1)]
        | [Tok::Name(n), Tok::Plus, Tok::Plus]
        | [Tok::Plus, Tok::Plus, Tok::Name(n)] => n == var,
        _ => false,
    };
    let at = open.0;
    let mut out = vec![
        toks[0].clone(),
        name.clone(),
        synthetic(name.2, Tok::In),
        synthetic(at, Tok::Name("range")),
    ];
    out.push(synthetic(at, Tok::LParen));
    out.extend_from_slice(init);
    if let Some((stop, inclusive)) = stop {
        if !init.is_empty() {
            out.push(synthetic(at, Tok::Comma));
        }
        out.extend_from_slice(stop);
        if inclusive {
            out.extend([synthetic(at, Tok::Plus), synthetic(at, Tok::Int(1))]);
        }
    }
    out.push(toks[close].clone());
    out.extend_from_slice(&toks[close + 1..]);
    let help = match stop {
        Some((stop, inclusive)) if step_is_one && !init.is_empty() => {
            let bound = if inclusive {
                format!("{} + 1", line.source(stop))
            } else {
                line.source(stop)
            };
            format!("write `for {var} in range({}, {bound}):`", line.source(init))
        }
        _ => format!("write `for {var} in range(start, stop, step):`"),
    };
    let header = Span::new(toks[0].0, toks[close].2);
    let diag = line
        .error("C-style `for` loops are not supported", header, "a C-style loop header")
        .with_help(help);
    Some(line.replace(out, diag))
}

/// `int i = 0` is read as `i = 0`.
fn c_declaration<'a>(line: &Line<'_, 'a>) -> Option<Repair<'a>> {
    let toks = line.toks();
    let (Some(ty @ (_, Tok::Name(ty_name), _)), Some((_, Tok::Name(var), _)), Some((_, Tok::Assign, _))) =
        (toks.first(), toks.get(1), toks.get(2))
    else {
        return None;
    };
    if line.error != line.start + 1 {
        return None;
    }
    let dtype = match *ty_name {
        "int" => Some("i32"),
        "long" => Some("i64"),
        "float" => Some("f32"),
        "double" => Some("f64"),
        "bool" => Some("bool"),
        _ => None,
    };
    let help = match dtype {
        Some(d) => format!("write `{var} = …` (or `{var}: {d} = …`)"),
        None => format!("write `{var} = …`"),
    };
    let removed = Span::new(ty.0, toks[1].0).in_file(line.file);
    let diag = line
        .error(
            "a variable is declared by assigning to it",
            Span::new(ty.0, ty.2),
            "a type before the name",
        )
        .with_help(help)
        .with_fix(Fix::new(format!("remove `{ty_name}`"), Applicability::MachineApplicable).with_edit(removed, ""));
    Some(line.replace(toks[1..].to_vec(), diag))
}

/// `i++` and `i--` are read as `i += 1` and `i -= 1`.
fn increment<'a>(line: &Line<'_, 'a>) -> Option<Repair<'a>> {
    let toks = line.toks();
    let n = toks.len();
    let [target @ .., a, b] = toks else { return None };
    let (op, aug, word, label) = match (&a.1, &b.1) {
        (Tok::Plus, Tok::Plus) => ("++", Tok::PlusEq, "+=", "an increment"),
        (Tok::Minus, Tok::Minus) => ("--", Tok::MinusEq, "-=", "a decrement"),
        _ => return None,
    };
    if a.2 != b.0 || target.is_empty() || target.iter().any(|t| matches!(t.1, Tok::Assign | Tok::Semi)) {
        return None;
    }
    let at = Span::new(a.0, b.2);
    let var = line.source(target);
    let diag = line.error(&format!("`{op}` is not an operator"), at, label).with_fix(
        Fix::new(format!("write `{var} {word} 1`"), Applicability::MachineApplicable)
            .with_edit(at.in_file(line.file), format!(" {word} 1")),
    );
    let mut out = toks[..n - 2].to_vec();
    out.extend([(a.0, aug, b.2), synthetic(b.2, Tok::Int(1))]);
    Some(line.replace(out, diag))
}

/// The end (exclusive, within `toks`) of the expression starting at
/// `from`: the first `,` or closing bracket outside brackets opened in it,
/// or the end of the line; `skip_colons` top-level `:` are part of it.
fn expression_end(toks: &[Spanned], from: usize, mut skip_colons: usize) -> usize {
    let mut depth = 0;
    for (i, t) in toks.iter().enumerate().skip(from) {
        depth += bracket_depth(&t.1);
        if depth < 0 || (depth == 0 && t.1 == Tok::Comma) {
            return i;
        }
        if depth == 0 && t.1 == Tok::Colon {
            if skip_colons == 0 {
                return i;
            }
            skip_colons -= 1;
        }
    }
    toks.len()
}

/// `lambda x: x * 2` is read as an error value.
fn lambda<'a>(line: &Line<'_, 'a>) -> Option<Repair<'a>> {
    let toks = line.toks();
    let at = line.error.checked_sub(line.start + 1)?;
    if !name_is(toks.get(at), "lambda") {
        return None;
    }
    let end = expression_end(toks, at, 1);
    let span = Span::new(toks[at].0, toks.get(end.checked_sub(1)?)?.2);
    let diag = line
        .error("lambdas are not supported", span, "a lambda")
        .with_help("define a function with `def` and use its name");
    let mut out = toks[..at].to_vec();
    out.push((span.start, Tok::Error, span.end));
    out.extend_from_slice(&toks[end..]);
    Some(line.replace(out, diag))
}

/// `if (n := 4) > 2:` is read as `n = 4` on a line of its own before the
/// `if (n) > 2:` (in an `elif`, which nothing can come before, as
/// `elif (4) > 2:`).
fn walrus<'a>(line: &Line<'_, 'a>) -> Option<Repair<'a>> {
    let toks = line.toks();
    let colon = line.error.checked_sub(line.start)?;
    let (Some(prev @ (_, Tok::Name(var), _)), Some((cl, Tok::Colon, cr)), Some((el, Tok::Assign, er))) =
        (toks.get(colon.checked_sub(1)?), toks.get(colon), toks.get(colon + 1))
    else {
        return None;
    };
    if cr != el {
        return None;
    }
    let end = expression_end(toks, colon + 2, 0);
    let value = &toks[colon + 2..end];
    if value.is_empty() {
        return None;
    }
    let operator = Span::new(*cl, *er);
    let diag = line
        .error("`:=` is not supported", operator, "an assignment inside an expression")
        .with_help(format!("assign first (`{var} = {}`)", line.source(value)));
    let mut out = Vec::new();
    let hoisted = toks[0].1 != Tok::Elif;
    if hoisted {
        out.push(prev.clone());
        out.push((*cl, Tok::Assign, *er));
        out.extend_from_slice(value);
        out.push(synthetic(value.last()?.2, Tok::Newline));
    }
    out.extend_from_slice(&toks[..colon - 1]);
    if hoisted {
        out.push(prev.clone());
    } else {
        out.extend_from_slice(value);
    }
    out.extend_from_slice(&toks[end..]);
    Some(line.replace(out, diag))
}

/// `class Config:` and its block are read as `Config = <error>`.
fn class<'a>(line: &Line<'_, 'a>) -> Option<Repair<'a>> {
    let toks = line.toks();
    let (Some(name @ (_, Tok::Name(_), _)), Some(last)) = (toks.get(1), toks.last()) else {
        return None;
    };
    if !name_is(toks.first(), "class") || line.error != line.start + 1 || last.1 != Tok::Colon {
        return None;
    }
    let header = line.span();
    let diag = line
        .error("classes are not supported", header, "a class")
        .with_help("make its values module constants (`BM = 128`), or pass them as parameters");
    let out = vec![
        name.clone(),
        synthetic(name.2, Tok::Assign),
        (header.start, Tok::Error, header.end),
        synthetic(header.end, Tok::Newline),
    ];
    let mut repair = line.replace(out, diag);
    // The class's block goes with it.
    let tokens = line.tokens;
    if tokens.get(line.end + 1).is_some_and(|t| t.1 == Tok::Indent) {
        let mut depth = 0;
        let dedent = (line.end + 1..tokens.len()).find(|&i| {
            depth += match tokens[i].1 {
                Tok::Indent => 1,
                Tok::Dedent => -1,
                _ => 0,
            };
            depth == 0
        });
        let end = dedent.map_or(tokens.len(), |d| d + 1);
        repair.end = end;
        let block_end = tokens.get(end - 1).map_or(header.end, |t| t.2);
        repair.covers = Span::new(header.start, block_end.max(header.end));
    } else {
        repair.end = (line.end + 1).min(tokens.len());
    }
    Some(repair)
}

/// `try:` is read as `if True:`, `except ...:` as `elif True:` and
/// `finally:` as `if True:`, so that each block is still checked.
fn try_statement<'a>(line: &Line<'_, 'a>) -> Option<Repair<'a>> {
    let toks = line.toks();
    let (first, last) = (toks.first()?, toks.last()?);
    let Tok::Name(word) = first.1 else { return None };
    if last.1 != Tok::Colon || !matches!(word, "try" | "except" | "finally") {
        return None;
    }
    if word == "try" && toks.len() != 2 {
        return None;
    }
    let keyword = if word == "except" { Tok::Elif } else { Tok::If };
    let out = vec![(first.0, keyword, first.2), synthetic(first.2, Tok::True), last.clone()];
    let diag = line
        .error(
            "`try`/`except` is not supported",
            Span::new(first.0, first.2),
            "a `try` statement",
        )
        .with_help("test for the problem with `if` before it happens; an error stops the program");
    let mut repair = line.replace(out, diag);
    if word != "try" && after_try(line) {
        // Reported at the `try`.
        repair.diags.clear();
    }
    Some(repair)
}

/// Whether an earlier line of the block holding `line` starts with `try`.
fn after_try(line: &Line) -> bool {
    let mut depth = 0;
    for i in (0..line.start).rev() {
        let t = &line.tokens[i];
        depth += match t.1 {
            Tok::Dedent => 1,
            Tok::Indent => -1,
            _ => 0,
        };
        if depth < 0 {
            return false;
        }
        let line_start = i == 0 || is_layout(&line.tokens[i - 1]);
        if depth == 0 && line_start && name_is(Some(t), "try") {
            return true;
        }
    }
    false
}

/// `async def f():` is read as `def f():` (and `async for`, `async with`
/// as `for`, `with`); `await f(x)` as `f(x)`.
fn async_keyword<'a>(line: &Line<'_, 'a>) -> Option<Repair<'a>> {
    let toks = line.toks();
    let at = line.error.checked_sub(line.start + 1)?;
    let (word, next) = (toks.get(at)?, toks.get(at + 1)?);
    let removed = Span::new(word.0, next.0);
    let diag = if name_is(Some(word), "async") {
        let construct = match (at, &next.1) {
            (0, Tok::Def) => "async def",
            (0, Tok::For) => "async for",
            (0, Tok::With) => "async with",
            _ => return None,
        };
        line.error(
            &format!("`{construct}` is not supported"),
            Span::new(word.0, word.2),
            "`async` here",
        )
        .with_note("kernel launches already run asynchronously on their stream, and host code runs in order")
        .with_fix(
            Fix::new("remove `async`", Applicability::MachineApplicable).with_edit(removed.in_file(line.file), ""),
        )
    } else if name_is(Some(word), "await") && word.2 < next.0 {
        line.error("`await` is not supported", Span::new(word.0, word.2), "`await` here")
            .with_note("host code runs in order; a launch's results are ready when the host reads them")
            .with_fix(
                Fix::new("remove `await`", Applicability::MachineApplicable).with_edit(removed.in_file(line.file), ""),
            )
    } else {
        return None;
    };
    let mut out = toks[..at].to_vec();
    out.extend_from_slice(&toks[at + 1..]);
    Some(line.replace(out, diag))
}

/// `global COUNT` (and `nonlocal COUNT`) is read as `pass`.
fn global<'a>(line: &Line<'_, 'a>) -> Option<Repair<'a>> {
    let toks = line.toks();
    let (first, Some((_, Tok::Name(name), _))) = (toks.first()?, toks.get(1)) else {
        return None;
    };
    let word = match first.1 {
        Tok::Name(w @ ("global" | "nonlocal")) => w,
        _ => return None,
    };
    if line.error != line.start + 1 {
        return None;
    }
    let label = if word == "global" {
        "module-level names are constants"
    } else {
        "a function has no variables of another"
    };
    let diag = line
        .error(&format!("there is no `{word}` statement"), line.span(), label)
        .with_help(format!(
            "pass `{name}` to the function as a parameter and return its new value"
        ));
    Some(line.replace(vec![(first.0, Tok::Pass, first.2)], diag))
}

/// The names an import line binds: each `name` or `name as alias` after
/// its `import`, parenthesized or not.
fn imported_names<'a>(toks: &[Spanned<'a>]) -> Vec<Spanned<'a>> {
    let Some(import) = toks.iter().position(|t| t.1 == Tok::Import) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    let mut i = import + 1;
    if toks.get(i).is_some_and(|t| t.1 == Tok::LParen) {
        i += 1;
    }
    while let Some(name @ (_, Tok::Name(_), _)) = toks.get(i) {
        match (toks.get(i + 1), toks.get(i + 2)) {
            (Some((_, Tok::As, _)), Some(alias @ (_, Tok::Name(_), _))) => {
                names.push(alias.clone());
                i += 3;
            }
            _ => {
                names.push(name.clone());
                i += 1;
            }
        }
        if toks.get(i).is_none_or(|t| t.1 != Tok::Comma) {
            break;
        }
        i += 1;
    }
    names
}

/// `name = <error>` for each name, on lines of their own; `pass` when
/// there is none.
fn bound_to_error<'a>(names: &[Spanned<'a>], span: Span) -> Vec<Spanned<'a>> {
    if names.is_empty() {
        return vec![(span.start, Tok::Pass, span.end)];
    }
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            out.push(synthetic(name.0, Tok::Newline));
        }
        out.extend([
            name.clone(),
            synthetic(name.2, Tok::Assign),
            (span.start, Tok::Error, span.end),
        ]);
    }
    out
}

const MODULE_NOTE: &str =
    "a module is the `.tsr` file of that name beside the importing file: `from helpers import f` reads `helpers.tsr`, `from pkg.m import f` reads `pkg/m.tsr`";

/// `from .helpers import f` (or `..`) binds `f` to an error value.
fn relative_import<'a>(line: &Line<'_, 'a>) -> Option<Repair<'a>> {
    let toks = line.toks();
    if toks.first()?.1 != Tok::From || line.error != line.start + 1 {
        return None;
    }
    let dots_end = 1 + toks[1..]
        .iter()
        .take_while(|t| matches!(t.1, Tok::Dot | Tok::DotDot))
        .count();
    if dots_end == 1 {
        return None;
    }
    let dots = Span::new(toks[1].0, toks[dots_end - 1].2);
    let module = match toks.get(dots_end) {
        Some((_, Tok::Name(m), _)) => Some(*m),
        _ => None,
    };
    let single = dots.end - dots.start == 1;
    let names = imported_names(toks);
    let mut diag = line
        .error("relative imports are not supported", dots, "a relative module path")
        .with_note(MODULE_NOTE);
    diag = match (module, single) {
        (Some(m), true) => diag.with_fix(
            Fix::new(format!("import `{m}` by its name"), Applicability::MaybeIncorrect)
                .with_edit(dots.in_file(line.file), ""),
        ),
        (Some(m), false) => diag.with_help(format!(
            "move `{m}.tsr` beside this file, or into a folder below it, and import it by its path from here"
        )),
        (None, _) => {
            let what = names.first().and_then(|n| line.text.get(n.0 as usize..n.2 as usize));
            diag.with_help(format!(
                "import the module by its name: `import {}`",
                what.unwrap_or("helpers")
            ))
        }
    };
    Some(line.replace(bound_to_error(&names, line.span()), diag))
}

/// `from helpers import *` is read as `pass`.
fn star_import<'a>(line: &Line<'_, 'a>) -> Option<Repair<'a>> {
    let toks = line.toks();
    let star = toks.get(line.error.checked_sub(line.start)?)?;
    let before = toks.get(line.error.checked_sub(line.start + 1)?)?;
    if toks.first()?.1 != Tok::From || star.1 != Tok::Star || !matches!(before.1, Tok::Import | Tok::LParen) {
        return None;
    }
    let import = toks.iter().position(|t| t.1 == Tok::Import)?;
    let module = line.source(&toks[1..import]);
    let diag = line
        .error(
            "wildcard imports are not supported",
            Span::new(star.0, star.2),
            "every name of the module",
        )
        .with_help(format!("name each function the file uses: `from {module} import f, g`"))
        .with_note("a name is bound only by an import that names it, so that each name's origin is in the file");
    Some(line.replace(vec![(toks[0].0, Tok::Pass, toks[0].2)], diag))
}

/// A line `where N % 8 == 0` at the top level of a function's body is moved into
/// its signature, before the header's `:`.
fn where_in_body<'a>(line: &Line<'_, 'a>) -> Option<Repair<'a>> {
    let toks = line.toks();
    let (keyword, Some(last)) = (toks.first()?, toks.last()) else {
        return None;
    };
    if keyword.1 != Tok::Where || line.error != line.start || toks.len() < 2 {
        return None;
    }
    let tokens = line.tokens;
    // The INDENT of the block the line is in, and the header above it.
    let mut depth = 0;
    let indent = (0..line.start).rev().find(|&i| {
        depth += match tokens[i].1 {
            Tok::Dedent => 1,
            Tok::Indent => -1,
            _ => 0,
        };
        depth < 0
    })?;
    let colon = indent.checked_sub(2)?;
    if tokens[colon].1 != Tok::Colon || tokens[indent - 1].1 != Tok::Newline {
        return None;
    }
    let header_start = tokens[..colon].iter().rposition(is_layout).map_or(0, |i| i + 1);
    if tokens[header_start].1 != Tok::Def || colon == header_start {
        return None;
    }
    let header = &tokens[header_start..colon];
    let mut bracket = 0;
    let has_where = header.iter().any(|t| {
        bracket += bracket_depth(&t.1);
        bracket == 0 && t.1 == Tok::Where
    });
    let constraints = &toks[1..];
    let written = line.source(constraints);
    let inserted = if has_where {
        format!(", {written}")
    } else {
        format!(" where {written}")
    };
    // The block would be empty without the line: it becomes `pass`.
    let only_line = line.start == indent + 1 && tokens.get(line.end + 1).is_none_or(|t| t.1 == Tok::Dedent);
    let before_colon = tokens[colon - 1].2;
    let text = line.text;
    let line_start = text[..keyword.0 as usize].rfind('\n').map_or(0, |i| i + 1) as u32;
    let line_end = text[last.2 as usize..]
        .find('\n')
        .map_or(text.len(), |i| last.2 as usize + i + 1) as u32;
    let removal = if only_line {
        (Span::new(keyword.0, last.2), "pass")
    } else {
        (Span::new(line_start, line_end), "")
    };
    let header_text = text.get(tokens[header_start].0 as usize..before_colon as usize)?;
    let help = if header_text.contains('\n') {
        "write it after the result type, before the header's `:`".to_string()
    } else {
        format!("write it after the result type, before the header's `:`: `{header_text}{inserted}:`")
    };
    let diag = line
        .error(
            "a `where` clause belongs in the signature",
            Span::new(keyword.0, last.2),
            "a `where` clause in the body",
        )
        .with_secondary(
            Span::new(tokens[colon].0, tokens[colon].2).in_file(line.file),
            "it goes before this `:`",
        )
        .with_help(help)
        .with_fix(
            Fix::new("move it into the signature", Applicability::MachineApplicable)
                .with_edit(Span::empty(before_colon).in_file(line.file), inserted)
                .with_edit(removal.0.in_file(line.file), removal.1),
        );
    let mut out = Vec::new();
    if has_where {
        out.push(synthetic(constraints[0].0, Tok::Comma));
    } else {
        out.push(keyword.clone());
    }
    out.extend_from_slice(constraints);
    out.extend_from_slice(&tokens[colon..line.start]);
    let end = if only_line {
        out.push((keyword.0, Tok::Pass, last.2));
        line.end
    } else {
        (line.end + 1).min(tokens.len())
    };
    let mut repair = line.replace(out, diag);
    repair.start = colon;
    repair.end = end;
    repair.covers = Span::new(tokens[colon].0, last.2);
    Some(repair)
}

/// CUDA's `k<<<grid, block>>>(x)` is read as `k[grid=(grid,),
/// block=(block,)](x)` (a fourth value as `stream=`).
fn cuda_launch<'a>(line: &Line<'_, 'a>) -> Option<Repair<'a>> {
    let toks = line.toks();
    let lt = line.error.checked_sub(line.start)?;
    let shl = lt.checked_sub(1)?;
    let (Some(left), Some(right)) = (toks.get(shl), toks.get(lt)) else {
        return None;
    };
    if left.1 != Tok::Shl || right.1 != Tok::Lt || left.2 != right.0 {
        return None;
    }
    // The `>>>`, lexed as `>>` and `>`, and the values between, split at
    // their top-level commas.
    let mut depth = 0;
    let mut values = Vec::new();
    let mut from = lt + 1;
    let mut close = None;
    for i in lt + 1..toks.len() {
        depth += bracket_depth(&toks[i].1);
        if depth < 0 {
            return None;
        }
        let closes = toks[i].1 == Tok::Shr && toks.get(i + 1).is_some_and(|g| g.1 == Tok::Gt && g.0 == toks[i].2);
        if depth == 0 && (toks[i].1 == Tok::Comma || closes) {
            values.push(&toks[from..i]);
            from = i + 1;
        }
        if depth == 0 && closes {
            close = Some(i + 1);
            break;
        }
    }
    let close = close?;
    if values.iter().any(|v| v.is_empty()) || values.len() > 4 {
        return None;
    }
    // Each configuration as a tuple: written as one already, from `dim3(…)`,
    // or one value made a tuple of one.
    let as_tuple = |value: &[Spanned<'a>]| -> (Vec<Spanned<'a>>, String) {
        let at = value[0].0;
        let args_of = |open: usize| -> Option<Vec<&[Spanned<'a>]>> {
            let mut depth = 0;
            let mut args = Vec::new();
            let mut from = open + 1;
            for (i, t) in value.iter().enumerate().skip(open) {
                depth += bracket_depth(&t.1);
                if (depth == 1 && t.1 == Tok::Comma) || depth == 0 {
                    args.push(&value[from..i]);
                    from = i + 1;
                }
                if depth == 0 {
                    return (i == value.len() - 1).then_some(args);
                }
            }
            None
        };
        let parts = match (&value[0].1, value.get(1).map(|t| &t.1)) {
            (Tok::LParen, _) => args_of(0),
            (Tok::Name("dim3"), Some(Tok::LParen)) => args_of(1),
            _ => None,
        };
        let parts = parts
            .map(|p| p.into_iter().filter(|a| !a.is_empty()).collect::<Vec<_>>())
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| vec![value]);
        let mut tokens = vec![synthetic(at, Tok::LParen)];
        let mut text = String::from("(");
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                tokens.push(synthetic(part[0].0, Tok::Comma));
                text.push_str(", ");
            }
            tokens.extend_from_slice(part);
            text.push_str(&line.source(part));
        }
        if parts.len() == 1 {
            tokens.push(synthetic(value[value.len() - 1].2, Tok::Comma));
            text.push(',');
        }
        tokens.push(synthetic(value[value.len() - 1].2, Tok::RParen));
        text.push(')');
        (tokens, text)
    };
    let start = toks[shl].0;
    let mut out = toks[..shl].to_vec();
    out.push(synthetic(start, Tok::LBracket));
    let mut written = Vec::new();
    for (i, key) in ["grid", "block"].into_iter().enumerate() {
        let Some(value) = values.get(i) else { continue };
        let (tuple, text) = as_tuple(value);
        if i > 0 {
            out.push(synthetic(value[0].0, Tok::Comma));
        }
        out.extend([
            synthetic(value[0].0, Tok::Name(key)),
            synthetic(value[0].0, Tok::Assign),
        ]);
        out.extend(tuple);
        written.push(format!("{key}={text}"));
    }
    // CUDA's third value is the dynamic shared memory; none is the usual 0.
    let shared = values.get(2).filter(|v| !matches!(v, [(_, Tok::Int(0), _)]));
    if let Some(stream) = values.get(3) {
        out.extend([
            synthetic(stream[0].0, Tok::Comma),
            synthetic(stream[0].0, Tok::Name("stream")),
            synthetic(stream[0].0, Tok::Assign),
        ]);
        out.extend_from_slice(stream);
        written.push(format!("stream={}", line.source(stream)));
    }
    let end = toks[close].2;
    out.push(synthetic(end, Tok::RBracket));
    out.extend_from_slice(&toks[close + 1..]);
    let brackets = format!("[{}]", written.join(", "));
    let callee = match toks[..shl].last() {
        Some((_, Tok::Name(n), _)) => *n,
        _ => "kernel",
    };
    let arguments = match toks.get(close + 1) {
        Some((_, Tok::LParen, _)) => {
            let mut depth = 0;
            let args_end = (close + 1..toks.len()).find(|&i| {
                depth += bracket_depth(&toks[i].1);
                depth == 0
            });
            args_end.map_or("(…)".to_string(), |e| line.source(&toks[close + 1..=e]))
        }
        _ => "(…)".to_string(),
    };
    let configuration = Span::new(start, end);
    let mut diag = line.error(
        "CUDA's `<<<…>>>` launch syntax is not supported",
        configuration,
        "a CUDA launch configuration",
    );
    match shared {
        Some(bytes) => {
            diag = diag.with_help(format!(
                "launch with `{callee}{brackets}{arguments}`, and declare the {} bytes of shared memory in the kernel's header, `shared(…)`",
                line.source(bytes)
            ));
        }
        None => {
            diag = diag
                .with_help(format!("launch with `{callee}{brackets}{arguments}`"))
                .with_fix(
                    Fix::new(format!("write `{brackets}`"), Applicability::MachineApplicable)
                        .with_edit(configuration.in_file(line.file), brackets),
                );
        }
    }
    Some(line.replace(out, diag))
}
