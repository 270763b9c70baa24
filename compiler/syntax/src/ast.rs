//! The abstract syntax tree. Every node carries the byte span it was parsed
//! from; parts that failed to parse are `Error` nodes, so a broken file still
//! yields a tree for the checker and the language server.

use tessera_base::{CmpOp, Span};

pub use crate::spans::map_spans;

/// A parsed `.tsr` file: its top-level statements in order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Module {
    pub body: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

impl Block {
    /// Every name the block binds, nested blocks included, in source order
    /// (repeats kept): assignment targets (tuples too), annotated targets,
    /// `for` targets and `with … as` aliases — a function body's locals,
    /// less its parameters. Statements that did not parse count with what
    /// they hold.
    pub fn bound_names(&self) -> Vec<&str> {
        fn stmts<'e>(list: &'e [Stmt], out: &mut Vec<&'e str>) {
            for stmt in list {
                match &stmt.kind {
                    StmtKind::Assign { targets: ts, .. } => ts.iter().for_each(|t| target_names(t, out)),
                    StmtKind::AnnAssign { target, .. } | StmtKind::For { target, .. } => target_names(target, out),
                    StmtKind::With { items, .. } => {
                        out.extend(items.iter().filter_map(|i| i.alias.as_ref()).map(|a| a.name.as_str()))
                    }
                    StmtKind::Error(inner) => stmts(inner, out),
                    _ => {}
                }
                for nested in stmt.kind.blocks() {
                    stmts(&nested.stmts, out);
                }
            }
        }
        let mut out = Vec::new();
        stmts(&self.stmts, &mut out);
        out
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

impl Block {
    /// Calls `f` on each expression of the block's statements — values,
    /// assignment and `for` targets, conditions, `with` items — nested
    /// blocks included. Only the outermost expressions: `f` looks into
    /// their children itself.
    pub fn each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        for stmt in &self.stmts {
            stmt.each_expr(f);
        }
    }
}

impl Stmt {
    /// [`Block::each_expr`] for one statement.
    pub fn each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        match &self.kind {
            StmtKind::Expr(e) => f(e),
            StmtKind::Assign { targets, value } => {
                f(value);
                for target in targets {
                    f(target);
                }
            }
            StmtKind::AnnAssign { target, value, .. } => {
                if let Some(value) = value {
                    f(value);
                }
                f(target);
            }
            StmtKind::AugAssign { target, value, .. } => {
                f(target);
                f(value);
            }
            StmtKind::If { branches, orelse } => {
                for branch in branches {
                    f(&branch.cond);
                    branch.body.each_expr(f);
                }
                if let Some(orelse) = orelse {
                    orelse.each_expr(f);
                }
            }
            StmtKind::For { target, iter, body } => {
                f(iter);
                f(target);
                body.each_expr(f);
            }
            StmtKind::While { cond, body } => {
                f(cond);
                body.each_expr(f);
            }
            StmtKind::With { items, body } => {
                items.iter().for_each(|item| f(&item.expr));
                body.each_expr(f);
            }
            StmtKind::Return(Some(value)) => f(value),
            StmtKind::Del(targets) => targets.iter().for_each(f),
            StmtKind::Assert { cond, message } => {
                f(cond);
                if let Some(message) = message {
                    f(message);
                }
            }
            StmtKind::Error(children) => children.iter().for_each(|s| s.each_expr(f)),
            StmtKind::Return(None)
            | StmtKind::Def(_)
            | StmtKind::Import(_)
            | StmtKind::FromImport { .. }
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Pass => {}
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StmtKind {
    Expr(Expr),
    /// `a = b = value`: `targets` are `[a, b]`.
    Assign {
        targets: Vec<Expr>,
        value: Expr,
    },
    /// `x: f32 = 0.0`
    AnnAssign {
        target: Expr,
        ty: Type,
        value: Option<Expr>,
    },
    /// `acc += x`
    AugAssign {
        target: Expr,
        op: BinOp,
        value: Expr,
    },
    If {
        branches: Vec<IfBranch>,
        orelse: Option<Block>,
    },
    For {
        target: Expr,
        iter: Expr,
        body: Block,
    },
    While {
        cond: Expr,
        body: Block,
    },
    With {
        items: Vec<WithItem>,
        body: Block,
    },
    Def(Box<FnDef>),
    Return(Option<Expr>),
    Break,
    Continue,
    Pass,
    /// `del x, d[k]`: unbinds names, removes dict keys and list items.
    Del(Vec<Expr>),
    Assert {
        cond: Expr,
        message: Option<Expr>,
    },
    /// `import a.b as c, d`
    Import(Vec<ImportPath>),
    /// `from a.b import c as d, e`
    FromImport {
        module: Path,
        names: Vec<ImportName>,
    },
    /// Statements that could not be parsed; the block nested under a broken
    /// header is kept so that it can still be checked.
    Error(Vec<Stmt>),
}

impl StmtKind {
    /// The blocks nested in this statement, in order: an `if`'s branches
    /// and its `else`, the body of a loop or a `with`. None for a nested
    /// `def`, whose body is a scope of its own.
    pub fn blocks(&self) -> Vec<&Block> {
        match self {
            StmtKind::If { branches, orelse } => branches.iter().map(|b| &b.body).chain(orelse).collect(),
            StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::With { body, .. } => vec![body],
            _ => Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IfBranch {
    pub cond: Expr,
    pub body: Block,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WithItem {
    pub expr: Expr,
    pub alias: Option<Ident>,
}

/// A dotted module path: `tessera.op`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Path {
    pub segments: Vec<Ident>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ImportPath {
    pub path: Path,
    pub alias: Option<Ident>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ImportName {
    pub name: Ident,
    pub alias: Option<Ident>,
}

/// `@kernel tile[(128,)] shared(16_KiB)`: the clauses are `kernel`,
/// `tile[(128,)]` and `shared(16_KiB)`; the first names the decorator.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Decorator {
    pub clauses: Vec<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FnDef {
    pub decorators: Vec<Decorator>,
    pub name: Ident,
    pub params: Vec<Param>,
    pub ret: Option<Type>,
    pub effects: Option<EffectsClause>,
    pub where_clause: Option<WhereClause>,
    pub body: Block,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Param {
    pub name: Ident,
    /// The span of `mut`, when the parameter is writable.
    pub mutable: Option<Span>,
    pub ty: Option<Type>,
    pub default: Option<Expr>,
    pub span: Span,
}

/// `effects(random, io)` in a signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EffectsClause {
    pub effects: Vec<Ident>,
    pub span: Span,
}

/// `where D % 8 == 0, S <= 8192`; top-level `and`s are split into separate
/// constraints, so `a and b` and `a, b` are the same clause.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WhereClause {
    pub constraints: Vec<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Type {
    pub kind: TypeKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TypeKind {
    /// `f32`, `bf16[B, S, D]`, `shared f16[BM, BK]`, `tensor[float]`.
    Named {
        space: Option<Ident>,
        name: Ident,
        dims: Option<Vec<Expr>>,
    },
    /// `(f32, i32)`
    Tuple(Vec<Type>),
    /// `None` as a return type: the function returns nothing.
    None,
}

/// An expression. Its nesting depth is tracked so the parser can refuse
/// pathologically deep trees before they reach recursive passes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
    depth: u16,
}

/// A 64-bit float stored by its bits, so that the tree can be compared and
/// hashed (the incremental database needs both).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct F64(u64);

impl F64 {
    pub fn new(value: f64) -> F64 {
        F64(value.to_bits())
    }

    pub fn get(self) -> f64 {
        f64::from_bits(self.0)
    }
}

impl std::fmt::Debug for F64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.get())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ExprKind {
    Name(String),
    Int(u64),
    Float(F64),
    /// A size literal, in bytes.
    Size(u64),
    Str(String),
    Bool(bool),
    None,
    Tuple(Vec<Expr>),
    List(Vec<Expr>),
    Dict(Vec<(Expr, Expr)>),
    Paren(Box<Expr>),
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `a..b` or `a..=b`
    Range {
        start: Box<Expr>,
        end: Box<Expr>,
        inclusive: bool,
    },
    /// `then if cond else orelse`
    IfElse {
        cond: Box<Expr>,
        then: Box<Expr>,
        orelse: Box<Expr>,
    },
    Call {
        callee: Box<Expr>,
        args: Vec<Arg>,
    },
    /// `base[args]`: indexing, slicing (`A[:, k:k+128]`), generic brackets
    /// (`tshared.alloc[f16]`) and launch brackets (`k[grid=(g,)]`).
    Subscript {
        base: Box<Expr>,
        args: Vec<Arg>,
    },
    Attr {
        base: Box<Expr>,
        name: Ident,
    },
    /// `lower:upper:step`, only inside subscripts.
    Slice {
        lower: Option<Box<Expr>>,
        upper: Option<Box<Expr>>,
        step: Option<Box<Expr>>,
    },
    /// A comprehension: `[elt for x in xs if c]`, `{elt: value for …}`,
    /// `(elt for …)`; its `for` clauses nest left to right.
    Comp {
        kind: CompKind,
        elt: Box<Expr>,
        /// A dict comprehension's value (`elt` is its key).
        value: Option<Box<Expr>>,
        clauses: Vec<CompFor>,
    },
    Error,
}

/// What a comprehension builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompKind {
    List,
    Dict,
    /// `(elt for …)`, and a call's only argument `f(elt for …)`.
    Generator,
}

/// One `for target in iter if cond …` clause of a comprehension.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CompFor {
    pub target: Expr,
    pub iter: Expr,
    pub conds: Vec<Expr>,
}

impl CompFor {
    /// The names the clause binds (a tuple target's too).
    pub fn bound_names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        target_names(&self.target, &mut out);
        out
    }
}

/// The names an assignment or `for` target binds, in source order.
fn target_names<'e>(e: &'e Expr, out: &mut Vec<&'e str>) {
    match &e.kind {
        ExprKind::Name(n) => out.push(n),
        ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().for_each(|i| target_names(i, out)),
        ExprKind::Paren(inner) => target_names(inner, out),
        _ => {}
    }
}

/// An argument of a call or subscript: positional, or `name=value`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Arg {
    pub name: Option<Ident>,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Pos,
    Not,
    Invert,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    MatMul,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
    /// Python's identity: the same object (`x is None`).
    Is,
    IsNot,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::MatMul => "@",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::In => "in",
            BinOp::NotIn => "not in",
            BinOp::Is => "is",
            BinOp::IsNot => "is not",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq
                | BinOp::Ne
                | BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge
                | BinOp::In
                | BinOp::NotIn
                | BinOp::Is
                | BinOp::IsNot
        )
    }

    /// The shape-constraint comparison this operator is (`==` … `>=`);
    /// None for every other operator, `in` and `not in` included.
    pub fn as_cmp(self) -> Option<CmpOp> {
        Some(match self {
            BinOp::Eq => CmpOp::Eq,
            BinOp::Ne => CmpOp::Ne,
            BinOp::Lt => CmpOp::Lt,
            BinOp::Le => CmpOp::Le,
            BinOp::Gt => CmpOp::Gt,
            BinOp::Ge => CmpOp::Ge,
            _ => return None,
        })
    }
}

impl UnaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::Pos => "+",
            UnaryOp::Not => "not",
            UnaryOp::Invert => "~",
        }
    }
}

/// The deepest expression the parser builds; deeper ones become errors (E0014).
pub const MAX_EXPR_DEPTH: u16 = 256;

impl Expr {
    /// Builds an expression node, computing its depth from its children.
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        let mut depth = 0u16;
        kind.for_each_child(|child| depth = depth.max(child.depth));
        Expr {
            kind,
            span,
            depth: depth.saturating_add(1),
        }
    }

    pub fn error(span: Span) -> Expr {
        Expr::new(ExprKind::Error, span)
    }

    pub fn depth(&self) -> u16 {
        self.depth
    }

    /// Marks an error node that stands for an over-deep tree, so that the
    /// nodes built around it are over the limit too and reported only once.
    pub(crate) fn set_depth(&mut self, depth: u16) {
        self.depth = depth;
    }

    /// The expression inside any parentheses.
    pub fn unparen(&self) -> &Expr {
        match &self.kind {
            ExprKind::Paren(inner) => inner.unparen(),
            _ => self,
        }
    }

    /// The two sides of an equality `a == b` (parentheses dropped), each
    /// way round: `[(a, b), (b, a)]`, for a `where` equation read for
    /// whichever side is a name.
    pub fn equation_sides(&self) -> Option<[(&Expr, &Expr); 2]> {
        match &self.unparen().kind {
            ExprKind::Binary {
                op: BinOp::Eq,
                lhs,
                rhs,
            } => Some([(lhs, rhs), (rhs, lhs)]),
            _ => None,
        }
    }

    /// The value of an integer literal, negated ones (`-3`) and
    /// parenthesized ones included; None for anything else and for a
    /// literal past `i64`.
    pub fn int_value(&self) -> Option<i64> {
        match &self.unparen().kind {
            ExprKind::Int(v) => i64::try_from(*v).ok(),
            ExprKind::Unary {
                op: UnaryOp::Neg,
                operand,
            } => operand.int_value().map(|v| -v),
            _ => None,
        }
    }
}

impl ExprKind {
    /// Calls `f` on each direct child expression, in source order.
    pub fn for_each_child<'e>(&'e self, mut f: impl FnMut(&'e Expr)) {
        match self {
            ExprKind::Name(_)
            | ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Size(_)
            | ExprKind::Str(_)
            | ExprKind::Bool(_)
            | ExprKind::None
            | ExprKind::Error => {}
            ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().for_each(f),
            ExprKind::Dict(entries) => entries.iter().for_each(|(k, v)| {
                f(k);
                f(v);
            }),
            ExprKind::Paren(inner) => f(inner),
            ExprKind::Unary { operand, .. } => f(operand),
            ExprKind::Binary { lhs, rhs, .. } => {
                f(lhs);
                f(rhs);
            }
            ExprKind::Range { start, end, .. } => {
                f(start);
                f(end);
            }
            ExprKind::IfElse { cond, then, orelse } => {
                f(then);
                f(cond);
                f(orelse);
            }
            ExprKind::Call { callee, args } | ExprKind::Subscript { base: callee, args } => {
                f(callee);
                args.iter().for_each(|a| f(&a.value));
            }
            ExprKind::Attr { base, .. } => f(base),
            ExprKind::Slice { lower, upper, step } => {
                [lower, upper, step].into_iter().flatten().for_each(|e| f(e));
            }
            ExprKind::Comp {
                elt, value, clauses, ..
            } => {
                f(elt);
                if let Some(value) = value {
                    f(value);
                }
                for clause in clauses {
                    f(&clause.target);
                    f(&clause.iter);
                    clause.conds.iter().for_each(&mut f);
                }
            }
        }
    }
}
