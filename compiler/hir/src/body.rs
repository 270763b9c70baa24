//! What inference learns about a function body, and the context the
//! per-function analyses (determinism, barriers, numerics, async copies)
//! receive. All spans here are relative to the function's start.

use std::collections::HashMap;

use tessera_base::Span;
use tessera_diagnostics::Diagnostic;
use tessera_syntax::ast::FnDef;

use crate::builtins::Builtin;
use crate::db::{Anchor, Db, SourceFile};
use crate::effects::EffectSet;
use crate::signature::Signature;
use crate::ty::Ty;

/// What a call expression calls.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CallTarget {
    Builtin(&'static Builtin),
    /// A user function, by file and name.
    Function {
        file: SourceFile,
        name: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Call {
    /// The whole call expression.
    pub span: Span,
    pub target: CallTarget,
    /// Called with launch brackets (`k[grid=..., block=...](...)`).
    pub launched: bool,
}

/// A constraint of a callee that could not be decided at a call site: it
/// is checked at run time, once, on entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Guard {
    pub call: Span,
    pub callee: String,
    /// The constraint with the call's dims substituted (`N % 8 == 0`).
    pub constraint: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BodyInfo {
    pub diagnostics: Vec<Diagnostic>,
    /// Functions that relative spans are measured from; anchor 0 is this one.
    pub anchors: Vec<Anchor>,
    /// The type of every expression inference visited, by span.
    pub types: Vec<(Span, Ty)>,
    /// Every resolved call, in source order.
    pub calls: Vec<Call>,
    pub guards: Vec<Guard>,
    /// Locals at their first binding, for inlay hints.
    pub locals: Vec<(String, Span, Ty)>,
    /// Effects of the builtins this body calls, outside suspended regions.
    pub direct_effects: EffectSet,
    /// User functions this body calls, with the effects suspended around
    /// each call (callee effects in that set do not propagate).
    pub calls_to: Vec<(SourceFile, String, Span, EffectSet)>,
    /// Reductions marked `order = "tree"` by the determinism contract.
    pub tree_reductions: Vec<Span>,
}

/// What an analysis of one function body sees.
pub struct BodyCtx<'a> {
    pub db: &'a dyn Db,
    /// The file the function is defined in.
    pub file: SourceFile,
    pub def: &'a FnDef,
    pub sig: &'a Signature,
    /// Calls by the span of the call expression.
    pub calls: HashMap<Span, &'a Call>,
    /// Types by expression span.
    pub types: HashMap<Span, &'a Ty>,
}

impl<'a> BodyCtx<'a> {
    pub fn new(
        db: &'a dyn Db,
        file: SourceFile,
        def: &'a FnDef,
        sig: &'a Signature,
        info: &'a BodyInfo,
    ) -> BodyCtx<'a> {
        BodyCtx {
            db,
            file,
            def,
            sig,
            calls: info.calls.iter().map(|c| (c.span, c)).collect(),
            types: info.types.iter().map(|(s, t)| (*s, t)).collect(),
        }
    }

    /// The builtin a call expression calls, if it is a builtin call.
    pub fn builtin(&self, call_span: Span) -> Option<&'static Builtin> {
        match self.calls.get(&call_span).map(|c| &c.target) {
            Some(CallTarget::Builtin(b)) => Some(b),
            _ => None,
        }
    }

    pub fn type_of(&self, span: Span) -> Option<&Ty> {
        self.types.get(&span).copied()
    }
}
