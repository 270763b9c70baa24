//! Verification errors, and the structural verifier every module must pass
//! whatever its dialects: links between ops, blocks, regions and values are
//! consistent, every operand is defined before its use (dominance), no
//! function uses a value from outside, and every name and type prints.

use std::collections::HashMap;

use tessera_base::Span;
use tessera_diagnostics::{Code, Diagnostic};

use crate::parse::is_opaque_body;
use crate::print::is_dim_symbol;
use crate::{Attr, BlockId, BlockParent, FileMap, Loc, Module, OpId, RegionId, Type, ValueDef, ValueId};

/// Something wrong with the IR, found by a verifier. It points at an op
/// (its `.tsr` location and its place in the IR text) and may point at
/// related ops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    pub message: String,
    /// What the primary label says (may be empty).
    pub label: String,
    pub op: Option<OpId>,
    pub loc: Loc,
    pub text_span: Option<Span>,
    pub notes: Vec<String>,
    pub related: Vec<Related>,
    /// The code of an error about the program rather than the compiler
    /// (a block shape a target cannot run); E0901 when None.
    pub code: Option<Code>,
}

/// A secondary place a verification error points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Related {
    pub loc: Loc,
    pub text_span: Option<Span>,
    pub message: String,
}

impl VerifyError {
    /// An error about `op`, at its location.
    pub fn at_op(m: &Module, op: OpId, message: impl Into<String>) -> VerifyError {
        let data = m.op(op);
        VerifyError {
            message: message.into(),
            label: String::new(),
            op: Some(op),
            loc: data.loc.clone(),
            text_span: data.text_span,
            notes: Vec::new(),
            related: Vec::new(),
            code: None,
        }
    }

    /// An error about the module as a whole.
    pub fn at_module(m: &Module, message: impl Into<String>) -> VerifyError {
        VerifyError {
            message: message.into(),
            label: String::new(),
            op: None,
            loc: m.loc.clone(),
            text_span: None,
            notes: Vec::new(),
            related: Vec::new(),
            code: None,
        }
    }

    pub fn with_label(mut self, label: impl Into<String>) -> VerifyError {
        self.label = label.into();
        self
    }

    /// Reports under `code`: the program is at fault, not the compiler.
    pub fn with_code(mut self, code: Code) -> VerifyError {
        self.code = Some(code);
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> VerifyError {
        self.notes.push(note.into());
        self
    }

    /// Points also at `op`, saying `message`.
    pub fn with_related(mut self, m: &Module, op: OpId, message: impl Into<String>) -> VerifyError {
        let data = m.op(op);
        self.related.push(Related {
            loc: data.loc.clone(),
            text_span: data.text_span,
            message: message.into(),
        });
        self
    }

    /// The diagnostic (E0901, or the error's own code), pointing into the `.tsr` source where the
    /// location's file is known and into the IR text otherwise.
    pub fn to_diagnostic(&self, files: &FileMap) -> Diagnostic {
        self.diagnostic_with_code(self.code.unwrap_or(Code::E0901), files)
    }

    /// The same rendering under another code (a pass's own failure).
    pub fn diagnostic_with_code(&self, code: Code, files: &FileMap) -> Diagnostic {
        let mut d = files.diagnostic(code, &self.message, &self.label, &self.loc, self.text_span);
        for r in &self.related {
            let ir = r.text_span.zip(files.ir_file()).map(|(s, f)| s.in_file(f));
            if let Some(span) = files.file_span(&r.loc).or(ir) {
                d = d.with_secondary(span, &r.message);
            }
        }
        for note in &self.notes {
            d = d.with_note(note);
        }
        d
    }
}

/// Where verifiers put what they find.
#[derive(Clone, Debug, Default)]
pub struct VerifyErrors {
    errors: Vec<VerifyError>,
}

impl VerifyErrors {
    pub fn new() -> VerifyErrors {
        VerifyErrors::default()
    }

    pub fn push(&mut self, error: VerifyError) {
        self.errors.push(error);
    }

    /// Reports `message` about `op`.
    pub fn error(&mut self, m: &Module, op: OpId, message: impl Into<String>) {
        self.errors.push(VerifyError::at_op(m, op, message));
    }

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    pub fn len(&self) -> usize {
        self.errors.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &VerifyError> {
        self.errors.iter()
    }

    pub fn into_vec(self) -> Vec<VerifyError> {
        self.errors
    }
}

/// Checks the rules every module obeys whatever its dialects (listed in
/// `spec/ir.md`, "The structural verifier"). Never panics, whatever was
/// built.
pub fn verify_structure(m: &Module) -> Vec<VerifyError> {
    let mut s = Structure {
        m,
        errors: Vec::new(),
        visible: HashMap::new(),
        floor: 0,
        seen_ops: vec![false; m.op_count()],
        seen_blocks: vec![false; m.block_count()],
    };
    if !m.block_args(m.body()).is_empty() {
        s.errors
            .push(VerifyError::at_module(m, "the module body has arguments"));
    }
    if m.block_parent(m.body()) != BlockParent::Module {
        s.errors
            .push(VerifyError::at_module(m, "the module body is owned by a region"));
    }
    check_attrs(&m.attrs, &mut |problem| {
        s.errors
            .push(VerifyError::at_module(m, format!("a module attribute {problem}")));
    });
    s.block(m.body(), 0);
    s.errors
}

struct Structure<'m> {
    m: &'m Module,
    errors: Vec<VerifyError>,
    /// The values in scope, with the nesting depth of the block that
    /// defines them.
    visible: HashMap<ValueId, usize>,
    /// Values defined at a smaller depth are outside the innermost function.
    floor: usize,
    seen_ops: Vec<bool>,
    seen_blocks: Vec<bool>,
}

impl Structure<'_> {
    fn error(&mut self, op: OpId, message: String) {
        self.errors.push(VerifyError::at_op(self.m, op, message));
    }

    fn block(&mut self, block: BlockId, depth: usize) {
        let m = self.m;
        if std::mem::replace(&mut self.seen_blocks[block.index()], true) {
            self.errors
                .push(VerifyError::at_module(m, format!("{block:?} is reachable twice")));
            return;
        }
        let mut defined = Vec::new();
        for (i, &arg) in m.block_args(block).iter().enumerate() {
            if !m.has_value(arg) || m.value_def(arg) != (ValueDef::BlockArg { block, index: i as u32 }) {
                let owner = m.block_parent_op(block);
                let message = format!("argument #{i} of a block does not belong to it");
                match owner {
                    Some(op) => self.error(op, message),
                    None => self.errors.push(VerifyError::at_module(m, message)),
                }
                continue;
            }
            self.check_value_type(arg, m.block_parent_op(block));
            self.visible.insert(arg, depth);
            defined.push(arg);
        }
        for &op in m.block_ops(block) {
            if !m.has_op(op) {
                self.errors.push(VerifyError::at_module(
                    m,
                    format!("{block:?} lists {op:?}, which does not exist"),
                ));
                continue;
            }
            if std::mem::replace(&mut self.seen_ops[op.index()], true) {
                self.error(op, format!("`{}` appears in two places", m.op(op).name));
                continue;
            }
            self.op(op, block, depth);
            for &r in m.results(op) {
                if m.has_value(r) {
                    self.visible.insert(r, depth);
                    defined.push(r);
                }
            }
        }
        for v in defined {
            self.visible.remove(&v);
        }
    }

    fn op(&mut self, op: OpId, block: BlockId, depth: usize) {
        let m = self.m;
        let data = m.op(op);
        if m.is_erased(op) {
            self.error(op, format!("`{}` was erased but is still in a block", data.name));
        }
        if data.parent() != Some(block) {
            self.error(op, format!("`{}` does not know its block", data.name));
        }
        if !is_op_name(data.name.as_str()) {
            self.error(
                op,
                format!(
                    "`{}` is not an op name (`dialect.op`, each part an identifier)",
                    data.name
                ),
            );
        }
        for (i, &v) in data.operands.iter().enumerate() {
            self.operand(op, i, v);
        }
        for (i, &r) in data.results().iter().enumerate() {
            if !m.has_value(r) || m.value_def(r) != (ValueDef::Result { op, index: i as u32 }) {
                self.error(op, format!("result #{i} of `{}` does not belong to it", data.name));
            } else {
                self.check_value_type(r, Some(op));
            }
        }
        let mut problems = Vec::new();
        check_attrs(&data.attrs, &mut |p| problems.push(p));
        for p in problems {
            self.error(op, format!("an attribute of `{}` {p}", data.name));
        }
        let isolated = m.is_function(op);
        if isolated {
            self.function_signature(op);
        }
        let saved_floor = self.floor;
        if isolated {
            self.floor = depth + 1;
        }
        for (i, &r) in data.regions().iter().enumerate() {
            if !m.has_region(r) || !m.has_block(m.region_block(r)) {
                self.error(op, format!("region #{i} of `{}` does not exist", data.name));
                continue;
            }
            if !self.region_links(op, i, r) {
                continue;
            }
            self.block(m.region_block(r), depth + 1);
        }
        self.floor = saved_floor;
    }

    /// Whether a region and its block point back at their owners.
    fn region_links(&mut self, op: OpId, i: usize, r: RegionId) -> bool {
        let m = self.m;
        let block = m.region_block(r);
        if m.region_parent(r) != Some(op) || m.block_parent(block) != BlockParent::Region(r) {
            self.error(op, format!("region #{i} of `{}` does not know its op", m.op(op).name));
            return false;
        }
        true
    }

    fn operand(&mut self, op: OpId, i: usize, v: ValueId) {
        let m = self.m;
        let name = &m.op(op).name;
        if !m.has_value(v) {
            self.error(op, format!("operand #{i} of `{name}` refers to no value"));
            return;
        }
        if self.visible.get(&v).is_some_and(|&d| d >= self.floor) {
            return;
        }
        let def_op = m.defining_op(v);
        if def_op.is_some_and(|d| !m.has_op(d) || m.is_erased(d)) {
            self.error(op, format!("operand #{i} of `{name}` is a result of an erased op"));
            return;
        }
        let defined_in = match def_op {
            Some(d) => m.enclosing_function(d),
            None => m.value_block(v).and_then(|b| {
                let owner = m.block_parent_op(b)?;
                if m.is_function(owner) {
                    Some(owner)
                } else {
                    m.enclosing_function(owner)
                }
            }),
        };
        let used_in = m.enclosing_function(op);
        let mut error = if defined_in != used_in {
            VerifyError::at_op(
                m,
                op,
                format!("operand #{i} of `{name}` is defined outside the function that uses it"),
            )
            .with_label("a function sees only its own values")
        } else {
            VerifyError::at_op(m, op, format!("operand #{i} of `{name}` is used before it is defined"))
                .with_label("the definition does not dominate this use")
                .with_note("a value is visible after its definition in the same block and in the regions of later ops of that block")
        };
        if let Some(d) = def_op {
            error = error.with_related(m, d, "defined here");
        }
        self.errors.push(error);
    }

    /// The entry block's arguments are the function type's inputs.
    fn function_signature(&mut self, op: OpId) {
        let m = self.m;
        let (Some((inputs, _)), Some(entry)) = (m.func_type(op), m.entry_block(op)) else {
            return;
        };
        let args: Vec<&Type> = m.block_args(entry).iter().map(|&a| m.value_type(a)).collect();
        if args.len() != inputs.len() || args.iter().zip(inputs).any(|(a, b)| *a != b) {
            let show = |ts: &mut dyn Iterator<Item = &Type>| ts.map(ToString::to_string).collect::<Vec<_>>().join(", ");
            let message = format!(
                "function `@{}` declares parameters ({}) but its body takes ({})",
                m.func_name(op).unwrap_or_default(),
                show(&mut inputs.iter()),
                show(&mut args.into_iter())
            );
            self.error(op, message);
        }
    }

    fn check_value_type(&mut self, v: ValueId, op: Option<OpId>) {
        let mut problems = Vec::new();
        check_type(self.m.value_type(v), &mut |p| problems.push(p));
        for p in problems {
            let message = format!("a value's type {p}");
            match op {
                Some(op) => self.error(op, message),
                None => self.errors.push(VerifyError::at_module(self.m, message)),
            }
        }
    }
}

/// `dialect.op`, each dot-separated part an identifier.
fn is_op_name(name: &str) -> bool {
    let mut parts = 0;
    for part in name.split('.') {
        let mut chars = part.chars();
        let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
        if !ok {
            return false;
        }
        parts += 1;
    }
    parts >= 2
}

/// Reports what would not print in a form that parses back.
fn check_type(ty: &Type, report: &mut dyn FnMut(String)) {
    match ty {
        Type::Tensor { dims, .. } | Type::MemRef { dims, .. } => {
            for d in dims {
                if let Some(bad) = d.symbols().into_iter().find(|s| !is_dim_symbol(s)) {
                    report(format!("has a dim symbol `{bad}` that is not an identifier"));
                }
            }
            if let Type::MemRef { layout, .. } = ty {
                check_attrs(layout, report);
            }
        }
        Type::Function { inputs, results } => {
            for t in inputs.iter().chain(results) {
                check_type(t, report);
            }
        }
        Type::Opaque { dialect, body } => {
            if !is_dim_symbol(dialect) && !is_op_name(&format!("{dialect}.x")) || !is_opaque_body(body) {
                report(format!(
                    "`!{dialect}.{body}` is not a dialect type (`!dialect.name<...>`)"
                ));
            }
        }
        Type::Scalar(_) | Type::Ptr(_) | Type::Token => {}
    }
}

fn check_attrs(attrs: &std::collections::BTreeMap<String, Attr>, report: &mut dyn FnMut(String)) {
    for value in attrs.values() {
        check_attr(value, report);
    }
}

fn check_attr(attr: &Attr, report: &mut dyn FnMut(String)) {
    match attr {
        Attr::Type(t) => check_type(t, report),
        Attr::Array(items) => items.iter().for_each(|a| check_attr(a, report)),
        Attr::Dict(d) => check_attrs(d, report),
        _ => {}
    }
}
