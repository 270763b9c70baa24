//! Semantic tokens: names coloured by what the checker resolved them to
//! (parameters, locals, dims, functions, builtins, namespaces, dtypes).
//! Keywords, literals and comments are left to the TextMate grammar.

use tessera_base::Span;
use tessera_hir::builtins::Shape;
use tessera_hir::{Db, SourceFile};
use tessera_syntax::ast::{ExprKind, StmtKind};
use tower_lsp_server::ls_types::{SemanticToken, SemanticTokenModifier, SemanticTokenType, SemanticTokensLegend, Uri};

use crate::analysis::{self, resolve_global, Function, Names, Node, Role, Symbol};
use crate::workspace::Snapshot;

const TYPES: [SemanticTokenType; 10] = [
    SemanticTokenType::NAMESPACE,
    SemanticTokenType::TYPE,
    SemanticTokenType::TYPE_PARAMETER,
    SemanticTokenType::PARAMETER,
    SemanticTokenType::VARIABLE,
    SemanticTokenType::PROPERTY,
    SemanticTokenType::FUNCTION,
    SemanticTokenType::DECORATOR,
    SemanticTokenType::KEYWORD,
    SemanticTokenType::ENUM_MEMBER,
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Namespace,
    Type,
    Dim,
    Parameter,
    Variable,
    Property,
    Function,
    Decorator,
    Keyword,
    Effect,
}

const DECLARATION: u32 = 1;
const READONLY: u32 = 2;
const DEFAULT_LIBRARY: u32 = 4;

pub fn legend() -> SemanticTokensLegend {
    SemanticTokensLegend {
        token_types: TYPES.to_vec(),
        token_modifiers: vec![
            SemanticTokenModifier::DECLARATION,
            SemanticTokenModifier::READONLY,
            SemanticTokenModifier::DEFAULT_LIBRARY,
        ],
    }
}

/// A token before encoding: a span of the file, its kind and modifier bits.
type Raw = (Span, Kind, u32);

pub fn semantic_tokens(snapshot: &Snapshot, uri: &Uri) -> Vec<SemanticToken> {
    let Some(file) = snapshot.file_of(uri) else {
        return Vec::new();
    };
    let db = snapshot.db();
    let source = snapshot.source(file);
    let mut raw = Vec::new();
    for func in analysis::functions(db, source) {
        function_tokens(db, source, func, &mut raw);
    }
    for (base, stmt) in analysis::top_level(db, source) {
        if matches!(stmt.kind, StmtKind::Def(_)) {
            continue;
        }
        analysis::walk_stmt(stmt, &mut |node| {
            let token = match node {
                Node::Expr(e, _) => match &e.kind {
                    ExprKind::Name(n) => resolve_global(db, source, n).map(|s| symbol_kind(&s, false)),
                    ExprKind::Attr { base: ns, name } => {
                        let kind = analysis::attr_symbol(db, source, None, None, ns, &name.name)
                            .map_or((Kind::Property, 0), |s| symbol_kind(&s, false));
                        raw.push((shift(name.span, base), kind.0, kind.1));
                        None
                    }
                    _ => None,
                },
                other => syntax_kind(db, source, other),
            };
            if let Some((kind, mods)) = token {
                raw.push((shift(node.span(), base), kind, mods));
            }
        });
    }
    encode(&snapshot.line_index(file), raw)
}

fn shift(span: Span, base: u32) -> Span {
    Span::new(span.start + base, span.end + base)
}

fn function_tokens<'db>(db: &'db dyn Db, file: SourceFile, func: Function<'db>, raw: &mut Vec<Raw>) {
    let names = Names::new(db, func);
    analysis::walk_def(func.def, &mut |node| {
        let token = match node {
            Node::Expr(e, role) => match &e.kind {
                ExprKind::Name(_) if role == Role::Decorator => Some((Kind::Decorator, 0)),
                ExprKind::Name(n) => names
                    .resolve(db, n, e.span, role)
                    .map(|s| symbol_kind(&s, names.first_binding(n, e.span))),
                ExprKind::Attr { base, name } => {
                    let kind = analysis::attr_symbol(db, file, Some(func), names.type_at(e.span), base, &name.name)
                        .map_or((Kind::Property, 0), |s| symbol_kind(&s, false));
                    raw.push((func.absolute(name.span), kind.0, kind.1));
                    None
                }
                _ => None,
            },
            Node::FnName(_) => Some((Kind::Function, DECLARATION)),
            Node::Param(_) => Some((Kind::Parameter, DECLARATION)),
            Node::WithAlias(_) => Some((Kind::Variable, DECLARATION)),
            other => syntax_kind(db, file, other),
        };
        if let Some((kind, mods)) = token {
            raw.push((func.absolute(node.span()), kind, mods));
        }
    });
}

/// Tokens for the parts of the syntax that are not value names.
fn syntax_kind(db: &dyn Db, file: SourceFile, node: Node<'_>) -> Option<(Kind, u32)> {
    match node {
        Node::DType(_) => Some((Kind::Type, DEFAULT_LIBRARY)),
        Node::Space(_) => Some((Kind::Keyword, 0)),
        Node::Effect(_) => Some((Kind::Effect, 0)),
        Node::Keyword(_) => Some((Kind::Parameter, 0)),
        Node::Module(_) => Some((Kind::Namespace, 0)),
        Node::Imported { .. } => Some((Kind::Function, 0)),
        Node::ImportAlias(a) => resolve_global(db, file, &a.name).map(|s| symbol_kind(&s, true)),
        Node::WithAlias(_) => Some((Kind::Variable, DECLARATION)),
        Node::Expr(..) | Node::FnName(_) | Node::Param(_) => None,
    }
}

fn symbol_kind(symbol: &Symbol<'_>, declaration: bool) -> (Kind, u32) {
    let decl = if declaration { DECLARATION } else { 0 };
    match symbol {
        Symbol::Param { .. } => (Kind::Parameter, decl),
        Symbol::Local { .. } => (Kind::Variable, decl),
        Symbol::Dim { .. } => (Kind::Dim, 0),
        Symbol::Function(_) => (Kind::Function, 0),
        Symbol::Builtin(b) => builtin_kind(b.shape, b.params),
        Symbol::Namespace(_) => (Kind::Namespace, DEFAULT_LIBRARY),
        Symbol::Module(_) => (Kind::Namespace, 0),
        Symbol::Global { .. } => (Kind::Variable, READONLY | decl),
        Symbol::Policy(_) => (Kind::Variable, READONLY | DEFAULT_LIBRARY),
        Symbol::DType(_) => (Kind::Type, DEFAULT_LIBRARY),
    }
}

fn builtin_kind(shape: Shape, params: &str) -> (Kind, u32) {
    match shape {
        Shape::Policy if params.is_empty() => (Kind::Variable, READONLY | DEFAULT_LIBRARY),
        _ => (Kind::Function, DEFAULT_LIBRARY),
    }
}

/// Sorts the tokens, drops overlapping and multi-line ones, and encodes them
/// relative to each other in UTF-16 positions, as the protocol wants.
fn encode(index: &tessera_base::LineIndex, mut raw: Vec<Raw>) -> Vec<SemanticToken> {
    raw.sort_by_key(|(span, _, _)| (span.start, span.end));
    let mut out = Vec::new();
    let mut covered_to = 0;
    let (mut line, mut col) = (0, 0);
    for (span, kind, mods) in raw {
        if span.is_empty() || span.start < covered_to {
            continue;
        }
        let start = index.line_col_utf16(span.start);
        let end = index.line_col_utf16(span.end);
        if start.line != end.line || end.col <= start.col {
            continue;
        }
        covered_to = span.end;
        let delta_line = start.line - line;
        let delta_start = if delta_line == 0 { start.col - col } else { start.col };
        out.push(SemanticToken {
            delta_line,
            delta_start,
            length: end.col - start.col,
            token_type: kind as u32,
            token_modifiers_bitset: mods,
        });
        (line, col) = (start.line, start.col);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_index_the_legend() {
        let pairs = [
            (Kind::Namespace, SemanticTokenType::NAMESPACE),
            (Kind::Dim, SemanticTokenType::TYPE_PARAMETER),
            (Kind::Function, SemanticTokenType::FUNCTION),
            (Kind::Effect, SemanticTokenType::ENUM_MEMBER),
        ];
        for (kind, ty) in pairs {
            assert_eq!(TYPES[kind as usize], ty);
        }
    }

    #[test]
    fn tokens_are_sorted_relative_and_never_overlap() {
        let index = tessera_base::LineIndex::new("ab cd\nef");
        let raw = vec![
            (Span::new(6, 8), Kind::Variable, 0),
            (Span::new(0, 2), Kind::Function, DECLARATION),
            (Span::new(1, 4), Kind::Type, 0),
            (Span::new(3, 5), Kind::Parameter, 0),
        ];
        let tokens = encode(&index, raw);
        let fields: Vec<(u32, u32, u32, u32)> = tokens
            .iter()
            .map(|t| (t.delta_line, t.delta_start, t.length, t.token_type))
            .collect();
        assert_eq!(fields, [(0, 0, 2, 6), (0, 3, 2, 3), (1, 0, 2, 4)]);
    }
}
