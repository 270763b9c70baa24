//! The tree-walking interpreter of host code.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::rc::Rc;

use tessera_base::{range_len, Span};
use tessera_diagnostics::{Code, Diagnostic};
use tessera_hir::builtins::{self, Context};
use tessera_syntax::ast::{
    Arg, BinOp, Block, CompFor, CompKind, Expr, ExprKind, FnDef, Stmt, StmtKind, TypeKind, UnaryOp,
};

use super::ops::{self, MathFn, Operand, Reduction, Sel};
use super::shapes::{self, ArgSite};
use super::value::{Entries, TensorValue, Value};
use super::{at, Call, Executor, Imported, Launch, Program, Role};
use crate::cpu::LaunchConfig;
use crate::rng::{self, Distribution};
use crate::tensor::Elem;
use crate::{DType, Device, RunError, Tensor};
use tessera_hir::signature::dotted_name;

type Res<T> = Result<T, Box<Diagnostic>>;

/// How a statement ends.
enum Flow {
    Next,
    Break,
    Continue,
    Return(Value),
}

/// Host functions call each other at most this deep.
const MAX_CALL_DEPTH: usize = 64;

/// Evaluated call arguments: positional and keyword, with their spans.
struct Args {
    positional: Vec<(Value, Span)>,
    keyword: Vec<(String, Value, Span)>,
}

impl Args {
    fn take(&mut self, name: &str) -> Option<(Value, Span)> {
        let i = self.keyword.iter().position(|(n, ..)| n == name)?;
        let (_, v, s) = self.keyword.remove(i);
        Some((v, s))
    }

    /// An optional argument: the keyword `name`, else the next positional.
    fn optional(&mut self, name: &str) -> Option<Value> {
        match self.take(name) {
            Some((v, _)) => Some(v),
            None if !self.positional.is_empty() => Some(self.positional.remove(0).0),
            None => None,
        }
    }
}

pub(crate) struct Interp<'a, 'p> {
    program: &'a Program<'p>,
    executor: &'a mut dyn Executor,
    device: &'a Device,
    out: &'a mut dyn Write,
    /// The unit whose code runs: that of the innermost function called.
    unit: usize,
    /// Each unit's module constants.
    globals: Vec<HashMap<String, Value>>,
    depth: usize,
    /// The host functions being run, innermost last.
    running: Vec<String>,
    /// For each running function, the locals a `del` unbound and where.
    deleted: Vec<HashMap<String, Span>>,
    /// The parameters' defaults evaluated so far, by their expression's
    /// address ([`Interp::default_value`]).
    defaults: HashMap<usize, Value>,
}

fn unsupported(message: impl Into<String>) -> RunError {
    RunError::new(Code::E1006, message)
}

/// The number a value is: an int, float or bool, or the element of a
/// tensor of no dims (NumPy's scalars: an element of an `f32` tensor).
fn elem_of(v: &Value) -> Option<Elem> {
    match v {
        Value::Int(i) => Some(Elem::Int(*i)),
        Value::Float(f) => Some(Elem::Float(*f)),
        Value::Bool(b) => Some(Elem::Bool(*b)),
        Value::Tensor(t) if t.shape().is_empty() => t.element(0).ok(),
        _ => None,
    }
}

/// `v`, or the int it stands for where Python takes an index
/// (`__index__`) when it is NumPy's integer scalar (an element of an
/// integer tensor, a tensor of no dims).
fn as_index(v: Value) -> Value {
    match &v {
        Value::Tensor(t) if t.shape().is_empty() && !t.dtype().is_float() && t.dtype() != DType::Bool => {
            elem_of(&v).map_or(v, |e| Value::Int(e.as_i64()))
        }
        _ => v,
    }
}

/// The host dtype that holds `e` exactly.
fn elem_dtype(e: &Elem) -> DType {
    match e {
        Elem::Int(_) => DType::I64,
        Elem::Float(_) => DType::F64,
        Elem::Bool(_) => DType::Bool,
    }
}

/// The value of `key` in a dict's entries.
fn lookup(entries: &[(Value, Value)], key: &Value) -> Option<Value> {
    entries.iter().find(|(k, _)| equal(k, key)).map(|(_, v)| v.clone())
}

/// Sets `key` to `value` in `entries`: in its place when it is there,
/// else at the end.
fn set_entry(entries: &mut Entries, key: Value, value: Value) {
    match entries.iter_mut().find(|(k, _)| equal(k, &key)) {
        Some(entry) => entry.1 = value,
        None => entries.push((key, value)),
    }
}

/// Removes `key` from `entries`; its value, None when it is not there.
fn remove_entry(entries: &mut Entries, key: &Value) -> Option<Value> {
    let at = entries.iter().position(|(k, _)| equal(k, key))?;
    Some(entries.remove(at).1)
}

/// Whether a value can be a dict key: a number, string, dtype, None or a
/// tuple of such (not a list, dict or tensor, which change or have no
/// single value).
fn hashable(v: &Value) -> bool {
    match v {
        Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) | Value::DType(_) => true,
        // NumPy's scalars (elements of tensors), which equal the numbers
        // of their value.
        Value::Tensor(t) => t.shape().is_empty(),
        Value::Tuple(items) => items.iter().all(hashable),
        _ => false,
    }
}

fn unhashable(key: &Value) -> RunError {
    RunError::new(
        Code::E1005,
        format!(
            "a dict key is a number, a string or a tuple of them, not {}",
            key.describe()
        ),
    )
}

fn missing_key(key: &Value) -> RunError {
    // A key that is NumPy's scalar (on the host, as every element is) as
    // NumPy writes it.
    let scalar = |t: &TensorValue, _| {
        let e = t.element(0).ok()?;
        let mut host = Tensor::zeros(t.dtype(), &[]).ok()?;
        host.set(0, e);
        Some(super::print::tensor_repr(&host))
    };
    RunError::new(
        Code::E1007,
        format!(
            "{} is not a key of the dict",
            super::print::repr(key, &|t, form| scalar(t, form).unwrap_or_default())
        ),
    )
}

/// What a comprehension builds as its clauses run: its element (a dict's
/// key) and value, and the items or entries so far.
struct Built<'e> {
    elt: &'e Expr,
    value: Option<&'e Expr>,
    items: Vec<Value>,
    entries: Entries,
}

fn as_f64(v: &Value) -> Option<f64> {
    elem_of(v).map(Elem::as_f64)
}

impl<'a, 'p> Interp<'a, 'p> {
    pub(crate) fn new(
        program: &'a Program<'p>,
        executor: &'a mut dyn Executor,
        device: &'a Device,
        out: &'a mut dyn Write,
    ) -> Interp<'a, 'p> {
        Interp {
            program,
            executor,
            device,
            out,
            unit: 0,
            globals: vec![HashMap::new(); program.units.len()],
            defaults: HashMap::new(),
            depth: 0,
            running: Vec::new(),
            deleted: Vec::new(),
        }
    }

    fn fail(&self, span: Span, label: &str, e: RunError) -> Box<Diagnostic> {
        at(self.program, self.unit, span, label, e)
    }

    /// Runs `f` as code of unit `unit` (its names, its constants, its file
    /// for messages).
    fn in_unit<T>(&mut self, unit: usize, f: impl FnOnce(&mut Self) -> T) -> T {
        let caller = std::mem::replace(&mut self.unit, unit);
        let result = f(self);
        self.unit = caller;
        result
    }

    /// Evaluates each unit's top-level assignments (its constants), in
    /// order: the imported modules' first, the last imported first, so a
    /// constant imported from another module is there when read.
    pub(crate) fn globals(&mut self) -> Res<()> {
        let program = self.program;
        for unit in (0..program.units.len()).rev() {
            self.in_unit(unit, |this| -> Res<()> {
                let mut frame = HashMap::new();
                for stmt in &program.units[unit].module.body {
                    if matches!(stmt.kind, StmtKind::Assign { .. } | StmtKind::AnnAssign { .. }) {
                        this.stmt(&mut frame, stmt)?;
                        this.globals[unit].extend(frame.drain());
                    }
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    /// A number declared a scalar dtype (an annotated local, a host
    /// function's parameter or result) converted to it, as in a kernel:
    /// `a: i32 = 2.5` is 2, `b: u8 = 300` is 44, `c: f32` an `f32` scalar.
    /// Anything else stays as it is.
    fn as_declared(&self, ty: Option<&tessera_syntax::ast::Type>, v: Value, span: Span, what: &str) -> Res<Value> {
        let d = match ty.map(|t| &t.kind) {
            Some(TypeKind::Named { name, dims: None, .. }) => DType::from_name(&name.name),
            _ => None,
        };
        match (d, &v) {
            (Some(d), Value::Bool(_) | Value::Int(_) | Value::Float(_)) => {
                self.cast(&v, d, false).map_err(|err| self.fail(span, what, err))
            }
            _ => Ok(v),
        }
    }

    /// Runs a host function of the file run with `args` in parameter order.
    pub(crate) fn call_host(&mut self, def: &FnDef, args: Vec<Value>, span: Span) -> Res<Value> {
        self.call_host_with(0, def, args, &[], span)
    }

    /// [`Interp::call_host`] with the dims the arguments bind (`C` of an
    /// `f32[R, C]` parameter), which the body reads as ints as compiled
    /// code does.
    /// `unit` is the function's; `span`, the call, the caller's.
    fn call_host_with(
        &mut self,
        unit: usize,
        def: &FnDef,
        args: Vec<Value>,
        dims: &[(String, i64)],
        span: Span,
    ) -> Res<Value> {
        if self.depth >= MAX_CALL_DEPTH {
            return Err(self.fail(
                span,
                "this call",
                RunError::value(format!(
                    "host functions call each other more than {MAX_CALL_DEPTH} deep"
                )),
            ));
        }
        let mut locals: HashMap<String, Value> = dims.iter().map(|(d, v)| (d.clone(), Value::Int(*v))).collect();
        for (p, v) in def.params.iter().zip(args) {
            let v = self.as_declared(p.ty.as_ref(), v, span, "in this call")?;
            locals.insert(p.name.name.clone(), v);
        }
        self.depth += 1;
        self.running.push(def.name.name.clone());
        self.deleted.push(HashMap::new());
        let flow = self.in_unit(unit, |this| this.block(&mut locals, &def.body));
        self.deleted.pop();
        self.running.pop();
        self.depth -= 1;
        match flow? {
            Flow::Return(v) => self.as_declared(def.ret.as_ref(), v, span, "the result of this call"),
            _ => Ok(Value::None),
        }
    }

    /// Calls a function of unit `unit` by its role, with `args` in
    /// parameter order; `sites` locate the arguments in the caller (the
    /// parameters when None).
    pub(crate) fn call_function(
        &mut self,
        unit: usize,
        def: &FnDef,
        role: Role,
        mut args: Vec<Value>,
        sites: Option<Vec<ArgSite>>,
        span: Span,
    ) -> Res<Value> {
        // Without sites the arguments are placed at the parameters, in
        // the function's own file (an `--entry`'s inputs).
        let caller = if sites.is_some() { self.unit } else { unit };
        let sites = sites.unwrap_or_else(|| def.params.iter().map(|p| ArgSite { span: p.span }).collect());
        shapes::numbers_for_scalars(def, &mut args);
        let constants = self.signature_constants(unit, def);
        let units = &self.program.units;
        let dims = shapes::bind(&units[caller], &units[unit], def, &args, &sites, span, &constants)?;
        match role {
            // An error in another file's function also points at the call
            // here, the line of this file that reached it.
            Role::Host if unit != self.unit => self.call_host_with(unit, def, args, &dims, span).map_err(|d| {
                Box::new(d.with_secondary(
                    units[self.unit].at(span),
                    format!("in this call of `{}`", def.name.name),
                ))
            }),
            Role::Host => self.call_host_with(unit, def, args, &dims, span),
            Role::Operator => {
                let call = Call {
                    file: units[unit].file,
                    function: &def.name.name,
                    args: &args,
                    dims: &dims,
                };
                self.executor
                    .call(self.device, &call)
                    .map_err(|e| self.fail(span, "in this call", e))
            }
            Role::Kernel => Err(self.fail(
                span,
                "this call",
                unsupported(format!(
                    "the kernel `{}` is launched with brackets: `{}[grid=..., block=...](...)`",
                    def.name.name, def.name.name
                )),
            )),
            Role::Device => Err(self.fail(
                span,
                "this call",
                unsupported(format!(
                    "the device function `{}` runs inside kernels, not on the host",
                    def.name.name
                )),
            )),
        }
    }

    /// A host tensor holding `value` (a tensor, or a scalar as a 0-d tensor).
    pub(crate) fn to_tensor(&self, value: &Value) -> Result<Tensor, RunError> {
        match value {
            Value::Tensor(t) => Ok(t.host(self.device)?.clone()),
            Value::Float(f) => Tensor::from_slice(&[], &[*f]),
            Value::Int(i) => Tensor::from_slice(&[], &[*i]),
            Value::Bool(b) => {
                let mut t = Tensor::zeros(DType::Bool, &[])?;
                t.set(0, Elem::Bool(*b));
                Ok(t)
            }
            v => Err(RunError::new(Code::E1005, format!("{} is not a tensor", v.describe()))),
        }
    }

    // ---- statements

    fn block(&mut self, locals: &mut HashMap<String, Value>, block: &Block) -> Res<Flow> {
        for stmt in &block.stmts {
            match self.stmt(locals, stmt)? {
                Flow::Next => {}
                flow => return Ok(flow),
            }
        }
        Ok(Flow::Next)
    }

    fn stmt(&mut self, locals: &mut HashMap<String, Value>, stmt: &Stmt) -> Res<Flow> {
        match &stmt.kind {
            StmtKind::Expr(e) => {
                self.expr(locals, e)?;
            }
            StmtKind::Assign { targets, value } => {
                let v = self.expr(locals, value)?;
                for t in targets {
                    self.assign(locals, t, v.clone())?;
                }
            }
            StmtKind::AnnAssign { target, ty, value } => {
                if let Some(value) = value {
                    let v = self.expr(locals, value)?;
                    let v = self.as_declared(Some(ty), v, value.span, "this value")?;
                    self.assign(locals, target, v)?;
                }
            }
            StmtKind::AugAssign { target, op, value } => self.aug_assign(locals, target, *op, value)?,
            StmtKind::If { branches, orelse } => {
                for b in branches {
                    if self.condition(locals, &b.cond)? {
                        return self.block(locals, &b.body);
                    }
                }
                if let Some(orelse) = orelse {
                    return self.block(locals, orelse);
                }
            }
            StmtKind::While { cond, body } => {
                while self.condition(locals, cond)? {
                    match self.block(locals, body)? {
                        Flow::Break => break,
                        Flow::Return(v) => return Ok(Flow::Return(v)),
                        Flow::Next | Flow::Continue => {}
                    }
                }
            }
            StmtKind::For { target, iter, body } => return self.for_loop(locals, target, iter, body),
            StmtKind::With { items, body } => {
                for item in items {
                    self.context_manager(&item.expr)?;
                }
                return self.block(locals, body);
            }
            StmtKind::Return(v) => {
                let v = match v {
                    Some(e) => self.expr(locals, e)?,
                    None => Value::None,
                };
                return Ok(Flow::Return(v));
            }
            StmtKind::Break => return Ok(Flow::Break),
            StmtKind::Continue => return Ok(Flow::Continue),
            StmtKind::Pass | StmtKind::Import(_) | StmtKind::FromImport { .. } => {}
            StmtKind::Del(targets) => {
                for target in targets {
                    self.delete(locals, target)?;
                }
            }
            StmtKind::Assert { cond, message } => self.assert(locals, cond, message.as_ref())?,
            StmtKind::Def(def) => {
                return Err(self.fail(
                    def.name.span,
                    "a nested function",
                    unsupported("functions defined inside host functions are not supported"),
                ))
            }
            StmtKind::Error(_) => {
                return Err(self.fail(stmt.span, "this statement", unsupported("this statement did not parse")))
            }
        }
        Ok(Flow::Next)
    }

    /// `with deterministic(seed=…)`, `with nondeterministic(…)`,
    /// `with effects.suspend(…)`: checker regions, nothing to do at run time.
    fn context_manager(&mut self, e: &Expr) -> Res<()> {
        let callee = match &e.unparen().kind {
            ExprKind::Call { callee, .. } => callee,
            _ => e,
        };
        let path = dotted_name(callee);
        match path.as_deref() {
            Some("deterministic" | "nondeterministic" | "effects.suspend" | "numerics") => Ok(()),
            _ => Err(self.fail(
                e.span,
                "this context",
                unsupported(
                    "host code supports `with` only for `deterministic`, `nondeterministic` and `effects.suspend`",
                ),
            )),
        }
    }

    fn condition(&mut self, locals: &mut HashMap<String, Value>, e: &Expr) -> Res<bool> {
        let v = self.expr(locals, e)?;
        v.truthy().ok_or_else(|| {
            self.fail(
                e.span,
                "this condition",
                RunError::value(format!("the truth of {} is ambiguous", v.describe()))
                    .with_help("compare a single element, or use `allclose`"),
            )
        })
    }

    fn for_loop(&mut self, locals: &mut HashMap<String, Value>, target: &Expr, iter: &Expr, body: &Block) -> Res<Flow> {
        let items = match &iter.unparen().kind {
            // `for i in a..b` is `range(a, b)`, `a..=b` `range(a, b + 1)`,
            // as in kernels.
            ExprKind::Range { start, end, inclusive } => {
                let bound = |this: &mut Self, locals: &mut HashMap<String, Value>, e: &Expr| -> Res<i64> {
                    match as_index(this.expr(locals, e)?) {
                        Value::Int(v) => Ok(v),
                        v => Err(this.fail(
                            e.span,
                            "this bound",
                            RunError::new(Code::E1005, format!("a range's bound is an int, not {}", v.describe())),
                        )),
                    }
                };
                let a = bound(self, locals, start)?;
                let b = bound(self, locals, end)?;
                Value::Range(a, if *inclusive { b.saturating_add(1) } else { b }, 1)
            }
            _ => self.expr(locals, iter)?,
        };
        let run = |this: &mut Self, locals: &mut HashMap<String, Value>, v: Value| -> Res<Option<Flow>> {
            this.assign(locals, target, v)?;
            Ok(match this.block(locals, body)? {
                Flow::Break => Some(Flow::Next),
                Flow::Return(v) => Some(Flow::Return(v)),
                Flow::Next | Flow::Continue => None,
            })
        };
        match items {
            Value::Range(a, b, s) => {
                for k in 0..range_len(a, b, s) {
                    let i = a + k as i64 * s;
                    if let Some(flow) = run(self, locals, Value::Int(i))? {
                        return Ok(flow);
                    }
                }
            }
            Value::Tuple(_) | Value::List(_) | Value::Dict(_) | Value::Str(_) => {
                // Over the items (a dict's keys, a string's characters) as
                // they are when the loop starts.
                let items = self
                    .items_of(&items)
                    .map_err(|e| self.fail(iter.span, "this value", e))?;
                for v in items {
                    if let Some(flow) = run(self, locals, v)? {
                        return Ok(flow);
                    }
                }
            }
            Value::Tensor(t) => {
                let n = t.shape().first().copied().unwrap_or(0);
                for i in 0..n {
                    let v = self
                        .index_tensor(&t, &[Sel::Index(i)])
                        .map_err(|e| self.fail(iter.span, "this tensor", e))?;
                    if let Some(flow) = run(self, locals, v)? {
                        return Ok(flow);
                    }
                }
            }
            other => {
                return Err(self.fail(
                    iter.span,
                    "this value",
                    RunError::value(format!("cannot loop over {}", other.describe())),
                ))
            }
        }
        Ok(Flow::Next)
    }

    fn assign(&mut self, locals: &mut HashMap<String, Value>, target: &Expr, v: Value) -> Res<()> {
        match &target.unparen().kind {
            ExprKind::Name(n) => {
                locals.insert(n.clone(), v);
                Ok(())
            }
            ExprKind::Tuple(targets) | ExprKind::List(targets) => {
                let items = match v.items() {
                    Some(items) if items.len() == targets.len() => items,
                    _ => {
                        return Err(self.fail(
                            target.span,
                            "these names",
                            RunError::new(
                                Code::E1005,
                                format!("cannot unpack {} into {} names", v.describe(), targets.len()),
                            ),
                        ))
                    }
                };
                for (t, item) in targets.iter().zip(items.iter()) {
                    self.assign(locals, t, item.clone())?;
                }
                Ok(())
            }
            ExprKind::Subscript { base, args } => {
                self.check_not_constant(locals, base)?;
                match self.expr(locals, base)? {
                    Value::Dict(entries) => {
                        let key = self.dict_key(locals, args, target.span)?;
                        set_entry(&mut entries.borrow_mut(), key, v);
                        Ok(())
                    }
                    Value::List(items) => match args.as_slice() {
                        [slice] if matches!(slice.value.kind, ExprKind::Slice { .. }) => {
                            self.assign_list_slice(locals, &items, &slice.value, &v, target.span)
                        }
                        _ => {
                            let at = self.list_index(locals, &items, args, target.span)?;
                            items.borrow_mut()[at] = v;
                            Ok(())
                        }
                    },
                    Value::Tensor(tensor) => {
                        let sels = self.selection(locals, &tensor, args, target.span)?;
                        self.store(&tensor, &sels, &v)
                            .map_err(|e| self.fail(target.span, "this store", e))
                    }
                    other => Err(self.fail(
                        base.span,
                        "this value",
                        RunError::new(Code::E1005, format!("cannot assign into {}", other.describe())),
                    )),
                }
            }
            _ => Err(self.fail(
                target.span,
                "this target",
                unsupported("host code cannot assign to this"),
            )),
        }
    }

    /// `del target`, as Python's: a local name unbound (using it after is
    /// an error), a dict's key or a list's item removed in place.
    fn delete(&mut self, locals: &mut HashMap<String, Value>, target: &Expr) -> Res<()> {
        match &target.unparen().kind {
            ExprKind::Name(n) => match locals.remove(n) {
                Some(_) => {
                    if let Some(deleted) = self.deleted.last_mut() {
                        deleted.insert(n.clone(), target.span);
                    }
                    Ok(())
                }
                None => Err(self.fail(
                    target.span,
                    "this name",
                    RunError::new(
                        Code::E1005,
                        format!("`{n}` is not a local of this function, which `del` unbinds"),
                    ),
                )),
            },
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                items.iter().try_for_each(|item| self.delete(locals, item))
            }
            ExprKind::Subscript { base, args } => {
                self.check_not_constant(locals, base)?;
                match self.expr(locals, base)? {
                    Value::Dict(entries) => {
                        let key = self.dict_key(locals, args, target.span)?;
                        let removed = remove_entry(&mut entries.borrow_mut(), &key);
                        removed
                            .map(drop)
                            .ok_or_else(|| self.fail(target.span, "this key", missing_key(&key)))
                    }
                    Value::List(items) => {
                        let at = self.list_index(locals, &items, args, target.span)?;
                        items.borrow_mut().remove(at);
                        Ok(())
                    }
                    other => Err(self.fail(
                        base.span,
                        "this value",
                        RunError::new(
                            Code::E1005,
                            format!("`del` removes from a list or a dict, not {}", other.describe()),
                        ),
                    )),
                }
            }
            _ => Err(self.fail(
                target.span,
                "this target",
                unsupported("`del` of this: it unbinds a name or removes a list item or dict key"),
            )),
        }
    }

    fn store(&self, tensor: &TensorValue, sels: &[Sel], v: &Value) -> Result<(), RunError> {
        let src = match v {
            Value::Tensor(t) => Some(t.host(self.device)?.clone()),
            _ => None,
        };
        let operand = match (&src, elem_of(v)) {
            (Some(t), _) => Operand::Tensor(t),
            (None, Some(e)) => Operand::Scalar(e),
            (None, None) => {
                return Err(RunError::new(
                    Code::E1005,
                    format!("cannot store {} in a tensor", v.describe()),
                ))
            }
        };
        let (shape, indices) = ops::select(&tensor.shape(), sels);
        let mut host = tensor.host_mut(self.device)?;
        ops::scatter(&mut host, &shape, &indices, operand)
    }

    fn aug_assign(&mut self, locals: &mut HashMap<String, Value>, target: &Expr, op: BinOp, value: &Expr) -> Res<()> {
        let rhs = self.expr(locals, value)?;
        match &target.unparen().kind {
            ExprKind::Name(n) => {
                let current = self.name(locals, n, target.span)?;
                let result = self
                    .binary(op, &current, &rhs)
                    .map_err(|e| self.fail(target.span, "this operation", e))?;
                match (&current, &result) {
                    // In place, as NumPy does: every alias sees the change.
                    (Value::Tensor(t), Value::Tensor(r)) => {
                        let all = vec![];
                        return self
                            .store(t, &all, &Value::Tensor(r.clone()))
                            .map_err(|e| self.fail(target.span, "this update", e));
                    }
                    // `xs += ys` extends the list in place, as Python does.
                    (Value::List(items), Value::List(sum)) if op == BinOp::Add => {
                        let sum = sum.borrow().clone();
                        *items.borrow_mut() = sum;
                        return Ok(());
                    }
                    _ => {}
                }
                locals.insert(n.clone(), result);
                Ok(())
            }
            ExprKind::Subscript { base, args } => {
                self.check_not_constant(locals, base)?;
                let container = self.expr(locals, base)?;
                let update = |this: &Self, current: &Value| {
                    this.binary(op, current, &rhs)
                        .map_err(|e| this.fail(target.span, "this operation", e))
                };
                match &container {
                    Value::Dict(entries) => {
                        let key = self.dict_key(locals, args, target.span)?;
                        let current = lookup(&entries.borrow(), &key)
                            .ok_or_else(|| self.fail(target.span, "this key", missing_key(&key)))?;
                        let result = update(self, &current)?;
                        set_entry(&mut entries.borrow_mut(), key, result);
                        return Ok(());
                    }
                    Value::List(items) => {
                        let at = self.list_index(locals, items, args, target.span)?;
                        let current = items.borrow()[at].clone();
                        items.borrow_mut()[at] = update(self, &current)?;
                        return Ok(());
                    }
                    _ => {}
                }
                let tensor = self.expect_tensor(container, base.span)?;
                let sels = self.selection(locals, &tensor, args, target.span)?;
                let current = self
                    .index_tensor(&tensor, &sels)
                    .map_err(|e| self.fail(target.span, "this element", e))?;
                let result = self
                    .binary(op, &current, &rhs)
                    .map_err(|e| self.fail(target.span, "this operation", e))?;
                self.store(&tensor, &sels, &result)
                    .map_err(|e| self.fail(target.span, "this update", e))
            }
            _ => Err(self.fail(target.span, "this target", unsupported("host code cannot update this"))),
        }
    }

    fn assert(&mut self, locals: &mut HashMap<String, Value>, cond: &Expr, message: Option<&Expr>) -> Res<()> {
        // `assert allclose(a, b, ...)` reports what `assert_allclose` reports.
        if let ExprKind::Call { callee, args } = &cond.unparen().kind {
            if dotted_name(callee).as_deref() == Some("allclose") {
                let mut args = self.args(locals, args)?;
                let Err(mut failed) = self.allclose(&mut args, cond.span, true) else {
                    return Ok(());
                };
                // The assert's own message, as a plain assert shows it.
                if let Some(m) = message {
                    let v = self.expr(locals, m)?;
                    let text = super::print::display(&v, &|t, form| self.tensor_text(t, form));
                    failed.notes.insert(0, format!("assertion failed: {text}"));
                }
                return Err(failed);
            }
        }
        if self.condition(locals, cond)? {
            return Ok(());
        }
        let text = match message {
            Some(m) => {
                let v = self.expr(locals, m)?;
                format!(
                    "assertion failed: {}",
                    super::print::display(&v, &|t, form| self.tensor_text(t, form))
                )
            }
            None => format!("assertion failed: `{}`", self.program.units[self.unit].text(cond.span)),
        };
        Err(self.fail(cond.span, "this is false", RunError::new(Code::E1003, text)))
    }

    // ---- expressions

    fn expr(&mut self, locals: &mut HashMap<String, Value>, e: &Expr) -> Res<Value> {
        match &e.kind {
            ExprKind::Name(n) => self.name(locals, n, e.span),
            ExprKind::Int(v) | ExprKind::Size(v) => i64::try_from(*v).map(Value::Int).map_err(|_| {
                self.fail(
                    e.span,
                    "this literal",
                    RunError::value(format!("{v} does not fit in 64 bits")),
                )
            }),
            ExprKind::Float(f) => Ok(Value::Float(f.get())),
            ExprKind::Str(s) => Ok(Value::str(s)),
            ExprKind::Bool(b) => Ok(Value::Bool(*b)),
            ExprKind::None => Ok(Value::None),
            ExprKind::Paren(inner) => self.expr(locals, inner),
            ExprKind::Dict(entries) => {
                let mut dict = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    let key = self.expr(locals, k)?;
                    if !hashable(&key) {
                        return Err(self.fail(k.span, "this key", unhashable(&key)));
                    }
                    let value = self.expr(locals, v)?;
                    set_entry(&mut dict, key, value);
                }
                Ok(Value::dict(dict))
            }
            ExprKind::Comp {
                kind,
                elt,
                value,
                clauses,
            } => self.comprehension(locals, *kind, (elt, value.as_deref()), clauses),
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    values.push(self.expr(locals, item)?);
                }
                Ok(match e.kind {
                    ExprKind::List(_) => Value::list(values),
                    _ => Value::tuple(values),
                })
            }
            ExprKind::Unary { op, operand } => {
                let v = self.expr(locals, operand)?;
                self.unary(*op, &v)
                    .map_err(|err| self.fail(e.span, "this operation", err))
            }
            ExprKind::Binary {
                op: BinOp::And,
                lhs,
                rhs,
            } => {
                let a = self.expr(locals, lhs)?;
                if !self.truth(&a, lhs.span)? {
                    return Ok(a);
                }
                self.expr(locals, rhs)
            }
            ExprKind::Binary {
                op: BinOp::Or,
                lhs,
                rhs,
            } => {
                let a = self.expr(locals, lhs)?;
                if self.truth(&a, lhs.span)? {
                    return Ok(a);
                }
                self.expr(locals, rhs)
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.expr(locals, lhs)?;
                let b = self.expr(locals, rhs)?;
                self.binary(*op, &a, &b)
                    .map_err(|err| self.fail(e.span, "this operation", err))
            }
            ExprKind::IfElse { cond, then, orelse } => {
                if self.condition(locals, cond)? {
                    self.expr(locals, then)
                } else {
                    self.expr(locals, orelse)
                }
            }
            ExprKind::Call { callee, args } => self.call(locals, e, callee, args),
            ExprKind::Subscript { base, args } => {
                let b = self.expr(locals, base)?;
                self.subscript(locals, &b, args, e.span)
            }
            ExprKind::Attr { base, name } => {
                let b = self.expr(locals, base)?;
                self.attribute(&b, &name.name, e.span)
            }
            ExprKind::Range { .. } | ExprKind::Slice { .. } | ExprKind::Error => Err(self.fail(
                e.span,
                "this expression",
                unsupported("this expression is not supported in host code"),
            )),
        }
    }

    fn truth(&self, v: &Value, span: Span) -> Res<bool> {
        v.truthy().ok_or_else(|| {
            self.fail(
                span,
                "this value",
                RunError::value(format!("the truth of {} is ambiguous", v.describe())),
            )
        })
    }

    fn name(&self, locals: &HashMap<String, Value>, n: &str, span: Span) -> Res<Value> {
        if let Some(v) = locals.get(n) {
            return Ok(v.clone());
        }
        // A module constant's lists and dicts are copied: host code does not
        // change module constants.
        if let Some(v) = self.globals[self.unit].get(n) {
            return Ok(v.deep_copy());
        }
        if let Some(v) = self.function_or_import(n) {
            return Ok(v);
        }
        if let Some(d) = DType::from_name(n) {
            return Ok(Value::DType(d));
        }
        if let Some(b) = builtins::lookup(n) {
            return Ok(Value::Builtin(b.path));
        }
        if let Some(ns) = builtins::NAMESPACES.iter().find(|ns| **ns == n) {
            return Ok(Value::Namespace(ns));
        }
        let local = self
            .running
            .last()
            .and_then(|f| self.program.units[self.unit].function(f))
            .is_some_and(|(def, _)| def.body.bound_names().contains(&n));
        if let Some(&at) = self.deleted.last().and_then(|d| d.get(n)) {
            // Python's UnboundLocalError after `del`.
            let e = RunError::value(format!("`{n}` is read after `del` unbound it")).with_help(format!(
                "assign `{n}` again before reading it, or read it before the `del`"
            ));
            return Err(Box::new(self.fail(span, "read here", e).with_secondary(
                self.program.units[self.unit].at(at),
                format!("`{n}` is unbound here"),
            )));
        }
        if local {
            // Python's UnboundLocalError: the assignment did not run.
            return Err(self.fail(
                span,
                "not assigned on the path taken",
                RunError::value(format!(
                    "`{n}` is read before it is assigned: the branch or loop that assigns it did not run"
                ))
                .with_help(format!("assign `{n}` before the branch or loop, or on every path")),
            ));
        }
        Err(self.fail(
            span,
            "this name",
            unsupported(format!("`{n}` is not defined in host code")),
        ))
    }

    /// A function of the running unit named `n`, or what one of its
    /// imports binds `n` to.
    fn function_or_import(&self, n: &str) -> Option<Value> {
        if self.program.units[self.unit].function(n).is_some() {
            return Some(Value::Function(self.unit, n.into()));
        }
        self.imported(n)
    }

    /// What an import of the running unit binds `n` to: a module of the
    /// program (or the package of a dotted one), or a function, constant
    /// or module of one. None for an import of no module of the program
    /// (`from tessera import op`), whose names are the builtins'.
    fn imported(&self, n: &str) -> Option<Value> {
        match self.program.imported(self.unit, n)? {
            Imported::Module(path) => self
                .program
                .names_module(self.unit, &path)
                .then(|| Value::Module(self.unit, path.into())),
            Imported::Member(path, member) => self.member(self.unit, &path, member),
        }
    }

    /// The integer module constants the dims and `where` clause of `def`
    /// (a function of unit `unit`) name: the unit's own (`W`), one it
    /// imports by name, or one of a module it imports (`ops.WIDTH`).
    fn signature_constants(&self, unit: usize, def: &FnDef) -> HashMap<String, i64> {
        shapes::signature_names(def)
            .into_iter()
            .filter_map(|name| Some((name.clone(), self.dim_constant(unit, &name)?)))
            .collect()
    }

    /// The integer constant the (dotted) name `name` is in unit `unit`.
    fn dim_constant(&self, unit: usize, name: &str) -> Option<i64> {
        let mut segments = name.split('.');
        let first = segments.next()?;
        let mut value = if self.program.units[unit].assigned_once(first) {
            self.globals[unit].get(first).cloned()?
        } else {
            match self.program.imported(unit, first)? {
                Imported::Module(path) => Value::Module(unit, path.into()),
                Imported::Member(path, member) => self.member(unit, &path, member)?,
            }
        };
        for segment in segments {
            let Value::Module(from, path) = &value else {
                return None;
            };
            value = self.member(*from, path, segment)?;
        }
        match value {
            Value::Int(v) => Some(v),
            _ => None,
        }
    }

    /// The member `name` of the module `path` as unit `from` imports it: a
    /// function of it, one of its constants (a copy, as a constant of the
    /// unit's own is), or a module of the package `path`.
    fn member(&self, from: usize, path: &str, name: &str) -> Option<Value> {
        if let Some(unit) = self.program.module(from, path) {
            if self.program.units[unit].function(name).is_some() {
                return Some(Value::Function(unit, name.into()));
            }
            if let Some(v) = self.globals[unit].get(name) {
                return Some(v.deep_copy());
            }
        }
        let dotted = format!("{path}.{name}");
        self.program
            .names_module(from, &dotted)
            .then(|| Value::Module(from, dotted.into()))
    }

    fn attribute(&self, base: &Value, name: &str, span: Span) -> Res<Value> {
        let err = |e: RunError| self.fail(span, "this attribute", e);
        match (base, name) {
            (Value::Module(from, path), _) => self.member(*from, path, name).ok_or_else(|| {
                err(RunError::value(format!(
                    "the module `{path}` has no function, constant or module `{name}`"
                )))
            }),
            (Value::Namespace(ns), _) => {
                let path = format!("{ns}.{name}");
                builtins::lookup(&path)
                    .map(|b| Value::Builtin(b.path))
                    .ok_or_else(|| err(unsupported(format!("`{path}` is not a builtin"))))
            }
            (Value::Tuple(_), "append") => Err(err(RunError::new(Code::E1005, "a tuple has no `append`")
                .with_help("make it a list, in brackets: `[a, b]` or `[]`"))),
            (Value::Str(_) | Value::Dict(_) | Value::List(_) | Value::Tuple(_), _) => {
                let methods: &[(&'static str, &str)] = match base {
                    Value::Str(_) => &builtins::STR_METHODS,
                    Value::Dict(_) => &builtins::DICT_METHODS,
                    Value::Tuple(_) => builtins::TUPLE_METHODS,
                    _ => &builtins::LIST_METHODS,
                };
                match methods.iter().find(|(m, _)| *m == name) {
                    Some(&(method, _)) => Ok(Value::Method(Rc::new(base.clone()), method)),
                    None => Err(err(unsupported(format!(
                        "{} has no attribute `{name}` in host code (its methods are {})",
                        base.describe(),
                        methods
                            .iter()
                            .map(|(m, _)| format!("`{m}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )))),
                }
            }
            (Value::Tensor(t), "shape") => Ok(Value::tuple(t.shape().iter().map(|&d| Value::Int(d as i64)).collect())),
            (Value::Tensor(t), "dtype") => Ok(Value::DType(t.dtype())),
            (Value::Tensor(t), "ndim") => Ok(Value::Int(t.shape().len() as i64)),
            (Value::Tensor(t), "T") => {
                let host = t.host(self.device).map_err(err)?;
                Ok(Value::Tensor(TensorValue::new(ops::transpose(&host).map_err(err)?)))
            }
            _ => Err(err(unsupported(format!(
                "{} has no attribute `{name}` in host code",
                base.describe()
            )))),
        }
    }

    /// The tensor `v`, the value of the expression at `span`.
    fn expect_tensor(&self, v: Value, span: Span) -> Res<TensorValue> {
        match v {
            Value::Tensor(t) => Ok(t),
            v => Err(self.fail(
                span,
                "this value",
                RunError::new(Code::E1005, format!("expected a tensor, found {}", v.describe())),
            )),
        }
    }

    /// The selection `args` makes in `tensor`.
    fn selection(
        &mut self,
        locals: &mut HashMap<String, Value>,
        tensor: &TensorValue,
        args: &[Arg],
        span: Span,
    ) -> Res<Vec<Sel>> {
        let shape = tensor.shape();
        if args.len() > shape.len() {
            return Err(self.fail(
                span,
                "this index",
                RunError::new(
                    Code::E1007,
                    format!("{} indices for a tensor of {} dims", args.len(), shape.len()),
                ),
            ));
        }
        let mut sels = Vec::new();
        for (axis, a) in args.iter().enumerate() {
            let n = shape[axis];
            if let ExprKind::Slice { lower, upper, step } = &a.value.kind {
                let mut bound = |e: &Option<Box<Expr>>| -> Res<Option<i64>> {
                    match e {
                        None => Ok(None),
                        Some(e) => match as_index(self.expr(locals, e)?) {
                            Value::Int(i) => Ok(Some(i)),
                            Value::None => Ok(None),
                            v => Err(self.fail(
                                e.span,
                                "this bound",
                                RunError::value(format!("a slice bound must be an int, not {}", v.describe())),
                            )),
                        },
                    }
                };
                let (lo, hi, st) = (bound(lower)?, bound(upper)?, bound(step)?);
                let st = st.unwrap_or(1);
                if st == 0 {
                    return Err(self.fail(a.span, "this slice", RunError::value("a slice step cannot be zero")));
                }
                sels.push(ops::resolve_slice(lo, hi, st, n));
                continue;
            }
            match as_index(self.expr(locals, &a.value)?) {
                // `x[x > 0.5]`: a mask of the tensor's own shape.
                Value::Tensor(m) if m.dtype() == DType::Bool => {
                    let mask = m.host(self.device).map_err(|e| self.fail(a.span, "this mask", e))?;
                    if args.len() != 1 || mask.shape() != shape.as_slice() {
                        return Err(self.fail(
                            a.span,
                            "this mask",
                            RunError::new(
                                Code::E1007,
                                format!(
                                    "a bool mask selects from a tensor of its own shape: the mask is {}, the tensor {}",
                                    crate::tensor::shape_text(mask.shape()),
                                    crate::tensor::shape_text(&shape)
                                ),
                            ),
                        ));
                    }
                    let bits = (0..mask.numel()).map(|i| mask.get(i).as_bool()).collect();
                    return Ok(vec![Sel::Mask(bits)]);
                }
                Value::Int(i) => match ops::resolve_index(i, n) {
                    Some(j) => sels.push(Sel::Index(j)),
                    None => {
                        return Err(self.fail(
                            a.span,
                            "this index",
                            RunError::new(
                                Code::E1007,
                                format!("index {i} is out of range for dim {axis} of size {n}"),
                            ),
                        ))
                    }
                },
                v => {
                    return Err(self.fail(
                        a.span,
                        "this index",
                        RunError::value(format!(
                            "a tensor index must be an int or a slice, not {}",
                            v.describe()
                        )),
                    ))
                }
            }
        }
        Ok(sels)
    }

    fn index_tensor(&self, t: &TensorValue, sels: &[Sel]) -> Result<Value, RunError> {
        let host = t.host(self.device)?;
        let (shape, indices) = ops::select(host.shape(), sels);
        // An element is NumPy's scalar of the dtype (`np.float32`,
        // `np.int32`, `np.True_`): a tensor of no dims, which computes and
        // prints in its dtype.
        Ok(Value::Tensor(TensorValue::new(ops::gather(&host, &shape, &indices)?)))
    }

    fn subscript(&mut self, locals: &mut HashMap<String, Value>, base: &Value, args: &[Arg], span: Span) -> Res<Value> {
        match base {
            Value::Tensor(t) => {
                let sels = self.selection(locals, t, args, span)?;
                self.index_tensor(t, &sels)
                    .map_err(|e| self.fail(span, "this index", e))
            }
            Value::Dict(entries) => {
                let key = self.dict_key(locals, args, span)?;
                lookup(&entries.borrow(), &key).ok_or_else(|| self.fail(span, "this key", missing_key(&key)))
            }
            Value::Tuple(_) | Value::List(_) | Value::Str(_) if args.len() == 1 => {
                let items = self.items_of(base).map_err(|err| self.fail(span, "this value", err))?;
                let kind = match base {
                    Value::Str(_) => "string",
                    Value::List(_) => "list",
                    _ => "tuple",
                };
                let n = items.len();
                if let ExprKind::Slice { .. } = &args[0].value.kind {
                    let (start, step, len) = self.slice_positions(locals, &args[0].value, n, span)?;
                    return Ok(base.same_kind(
                        (0..len as i64)
                            .map(|k| items[(start + k * step) as usize].clone())
                            .collect(),
                    ));
                }
                let at = self.sequence_index(locals, &args[0], n, kind, span)?;
                Ok(items[at].clone())
            }
            // Python's range is a sequence: `range(5)[2]` is 2, and a slice
            // of it a range.
            Value::Range(a, b, st) if args.len() == 1 => {
                let n = range_len(*a, *b, *st) as usize;
                if let ExprKind::Slice { .. } = &args[0].value.kind {
                    let (start, step, len) = self.slice_positions(locals, &args[0].value, n, span)?;
                    let first = a + start * st;
                    return Ok(Value::Range(first, first + len as i64 * step * st, step * st));
                }
                let at = self.sequence_index(locals, &args[0], n, "range", span)?;
                Ok(Value::Int(a + at as i64 * st))
            }
            Value::Function(_, f) => Err(self.fail(
                span,
                "this launch",
                unsupported(format!(
                    "launch brackets must be followed by the arguments: `{f}[...](...)`"
                )),
            )),
            v => Err(self.fail(
                span,
                "this subscript",
                unsupported(format!("cannot index {}", v.describe())),
            )),
        }
    }

    fn unary(&self, op: UnaryOp, v: &Value) -> Result<Value, RunError> {
        match (op, v) {
            (UnaryOp::Not, v) if !matches!(v, Value::Tensor(_)) => Ok(Value::Bool(
                !v.truthy().ok_or_else(|| RunError::value("ambiguous truth"))?,
            )),
            (_, Value::Tensor(t)) => {
                let host = t.host(self.device)?;
                Ok(Value::Tensor(TensorValue::new(ops::unary(op, &host)?)))
            }
            (UnaryOp::Pos, Value::Int(_) | Value::Float(_)) => Ok(v.clone()),
            (UnaryOp::Neg, Value::Int(i)) => i
                .checked_neg()
                .map(Value::Int)
                .ok_or_else(|| RunError::value("integer overflow")),
            (UnaryOp::Neg, Value::Float(f)) => Ok(Value::Float(-f)),
            (UnaryOp::Neg | UnaryOp::Pos, Value::Bool(b)) => {
                Ok(Value::Int(if op == UnaryOp::Neg { -(*b as i64) } else { *b as i64 }))
            }
            (UnaryOp::Invert, Value::Int(i)) => Ok(Value::Int(!i)),
            (UnaryOp::Invert, Value::Bool(b)) => Ok(Value::Int(!(*b as i64))),
            _ => Err(RunError::new(
                Code::E1005,
                format!("`{}` does not apply to {}", op.symbol(), v.describe()),
            )),
        }
    }

    fn binary(&self, op: BinOp, a: &Value, b: &Value) -> Result<Value, RunError> {
        if matches!(op, BinOp::Is | BinOp::IsNot) {
            return Ok(Value::Bool(identical(a, b) == (op == BinOp::Is)));
        }
        if let (BinOp::MatMul, Value::Tensor(x), Value::Tensor(y)) = (op, a, b) {
            // `a @ b` as `op.matmul(a, b)`: a float64 reference in `a`'s dtype.
            let (x, y) = (x.host(self.device)?, y.host(self.device)?);
            let out = x.dtype();
            return Ok(Value::Tensor(TensorValue::new(ops::matmul(&x, &y, out)?)));
        }
        if matches!(op, BinOp::In | BinOp::NotIn) && !matches!(b, Value::Tensor(_)) {
            // `x[0] in xs`: a NumPy scalar is looked for in a list, tuple,
            // dict or range as the number it is.
            return scalar_binary(op, &as_index(a.clone()), b);
        }
        if let (BinOp::Mul, Value::List(_) | Value::Tuple(_) | Value::Str(_), _)
        | (BinOp::Mul, _, Value::List(_) | Value::Tuple(_) | Value::Str(_)) = (op, a, b)
        {
            // `[x] * n` with `n: i32`: a sequence repeats by an integer of
            // any integer type, as by a Python int.
            return scalar_binary(op, &as_index(a.clone()), &as_index(b.clone()));
        }
        if let (Value::Tensor(_), _) | (_, Value::Tensor(_)) = (a, b) {
            if matches!(op, BinOp::In | BinOp::NotIn | BinOp::MatMul) {
                return Err(unsupported(format!(
                    "`{}` on tensors is not supported in host code",
                    op.symbol()
                )));
            }
            let ta = match a {
                Value::Tensor(t) => Some(t.host(self.device)?),
                _ => None,
            };
            let tb = match b {
                Value::Tensor(t) => Some(t.host(self.device)?),
                _ => None,
            };
            let oa = operand(ta.as_deref(), a, op.symbol())?;
            let ob = operand(tb.as_deref(), b, op.symbol())?;
            let result = ops::binary(op, oa, ob)?;
            return Ok(Value::Tensor(TensorValue::new(result)));
        }
        scalar_binary(op, a, b)
    }

    // ---- calls

    fn args(&mut self, locals: &mut HashMap<String, Value>, args: &[Arg]) -> Res<Args> {
        let mut out = Args {
            positional: Vec::new(),
            keyword: Vec::new(),
        };
        for a in args {
            let v = self.expr(locals, &a.value)?;
            match &a.name {
                Some(n) => out.keyword.push((n.name.clone(), v, a.span)),
                None => out.positional.push((v, a.span)),
            }
        }
        Ok(out)
    }

    /// E1005 for host code changing the module constant `name` at `span`.
    fn module_constant(&self, name: &str, span: Span) -> Box<Diagnostic> {
        let written = self.program.units[self.unit].text(span);
        let written = if written.is_empty() { name } else { written };
        self.fail(
            span,
            "this name",
            RunError::new(
                Code::E1005,
                format!("`{name}` is a module constant, which host code does not change"),
            )
            .with_help(format!(
                "copy it into a local and change that: `{} = {written}`",
                name.to_lowercase()
            )),
        )
    }

    /// A dict method (`DICT_METHODS`), as Python's: `keys()`, `values()`
    /// and `items()` as lists; `get`; and `pop`, `setdefault`, `update` and
    /// `clear`, which change the dict in place.
    fn dict_method(&mut self, entries: &RefCell<Entries>, method: &str, args: &mut Args) -> Result<Value, RunError> {
        let key_arg = |this: &Self, args: &mut Args| {
            let key = this.positional(args, "key", method)?;
            if hashable(&key) {
                Ok(key)
            } else {
                Err(unhashable(&key))
            }
        };
        match method {
            "get" => {
                let key = key_arg(self, args)?;
                let default = args.optional("default").unwrap_or(Value::None);
                Ok(lookup(&entries.borrow(), &key).unwrap_or(default))
            }
            "pop" => {
                let key = key_arg(self, args)?;
                let default = args.optional("default");
                let removed = remove_entry(&mut entries.borrow_mut(), &key);
                removed.or(default).ok_or_else(|| missing_key(&key))
            }
            "setdefault" => {
                let key = key_arg(self, args)?;
                let default = args.optional("default").unwrap_or(Value::None);
                let found = lookup(&entries.borrow(), &key);
                Ok(found.unwrap_or_else(|| {
                    entries.borrow_mut().push((key, default.clone()));
                    default
                }))
            }
            "update" => {
                let other = self.positional(args, "other", "update")?;
                let Value::Dict(other) = other else {
                    return Err(RunError::value(format!(
                        "`update` takes a dict, not {}",
                        other.describe()
                    )));
                };
                let pairs = other.borrow().clone();
                let mut mine = entries.borrow_mut();
                for (k, v) in pairs {
                    set_entry(&mut mine, k, v);
                }
                Ok(Value::None)
            }
            "clear" => {
                entries.borrow_mut().clear();
                Ok(Value::None)
            }
            "copy" => Ok(Value::dict(entries.borrow().clone())),
            _ => Ok(Value::list(
                entries
                    .borrow()
                    .iter()
                    .map(|(k, v)| match method {
                        "keys" => k.clone(),
                        "values" => v.clone(),
                        _ => Value::tuple(vec![k.clone(), v.clone()]),
                    })
                    .collect(),
            )),
        }
    }

    /// A list method (`LIST_METHODS`) of `items`, as Python's: the list is
    /// changed in place, for every name and container that holds it.
    fn list_method(&mut self, items: &RefCell<Vec<Value>>, method: &str, args: &mut Args) -> Result<Value, RunError> {
        let index_of = |i: i64, n: usize, what: &str| {
            ops::resolve_index(i, n).ok_or_else(|| {
                RunError::new(
                    Code::E1007,
                    format!("{what} index {i} is out of range for a list of {n}"),
                )
            })
        };
        let result = match method {
            "append" => {
                let v = self.positional(args, "object", "append")?;
                items.borrow_mut().push(v);
                Value::None
            }
            "extend" => {
                let v = self.positional(args, "iterable", "extend")?;
                let more = self.items_of(&v)?;
                items.borrow_mut().extend(more);
                Value::None
            }
            "insert" => {
                let at = self.positional(args, "index", "insert")?;
                let v = self.positional(args, "object", "insert")?;
                let n = items.borrow().len() as i64;
                // Python clamps an insertion point to the list.
                let i = self.int_arg(&at, "the index of `insert`")?;
                let i = if i < 0 { (i + n).max(0) } else { i.min(n) };
                items.borrow_mut().insert(i as usize, v);
                Value::None
            }
            "pop" => {
                let n = items.borrow().len();
                if n == 0 {
                    return Err(RunError::new(Code::E1007, "`pop` from an empty list"));
                }
                let at = match args.optional("index") {
                    None => n - 1,
                    Some(i) => index_of(self.int_arg(&i, "the index of `pop`")?, n, "`pop`")?,
                };
                items.borrow_mut().remove(at)
            }
            "clear" => {
                items.borrow_mut().clear();
                Value::None
            }
            "reverse" => {
                items.borrow_mut().reverse();
                Value::None
            }
            "sort" => {
                let reverse = reverse_arg(args, "sort")?;
                // Python leaves the list in some order when the sort
                // fails; this one is sorted as a copy and kept only
                // when the sort succeeds.
                let mut sorted = items.borrow().clone();
                py_sort(&mut sorted, reverse)?;
                *items.borrow_mut() = sorted;
                Value::None
            }
            "remove" => {
                let x = self.positional(args, "value", "remove")?;
                let at = items.borrow().iter().position(|v| equal(v, &x));
                let Some(i) = at else {
                    return Err(RunError::value(format!(
                        "`remove`: {} is not in the list",
                        super::print::repr(&x, &|t, form| self.tensor_text(t, form))
                    )));
                };
                items.borrow_mut().remove(i);
                Value::None
            }
            "copy" => Value::list(items.borrow().clone()),
            "index" | "count" => {
                let x = self.positional(args, "value", method)?;
                // `index(x, start, end)` looks in `items[start:end]` only.
                let n = items.borrow().len();
                let (start, end) = if method == "index" {
                    self.bounds(args, n)?
                } else {
                    (0, n)
                };
                let matches: Vec<usize> = items
                    .borrow()
                    .iter()
                    .enumerate()
                    .filter(|&(i, v)| (start..end).contains(&i) && equal(v, &x))
                    .map(|(i, _)| i)
                    .collect();
                if method == "count" {
                    Value::Int(matches.len() as i64)
                } else {
                    let first = matches.first().ok_or_else(|| {
                        RunError::value(format!(
                            "`index`: {} is not in the list",
                            super::print::repr(&x, &|t, form| self.tensor_text(t, form))
                        ))
                    })?;
                    Value::Int(*first as i64)
                }
            }
            _ => return Err(unsupported(format!("lists have no method `{method}` in host code"))),
        };
        Ok(result)
    }

    /// E1005 when `base` names a module constant's list or dict (not
    /// shadowed by a local), which host code does not change.
    fn check_not_constant(&self, locals: &HashMap<String, Value>, base: &Expr) -> Res<()> {
        // The unit and name of the constant `base` names: the running
        // unit's own, one imported by name, or a module's attribute.
        let constant = match &base.unparen().kind {
            ExprKind::Name(n) if locals.contains_key(n) => None,
            ExprKind::Name(n) => match self.program.imported(self.unit, n) {
                Some(Imported::Member(path, member)) => {
                    self.program.module(self.unit, &path).map(|u| (u, member.to_string()))
                }
                _ => Some((self.unit, n.clone())),
            },
            ExprKind::Attr { base: module, name } => match &module.unparen().kind {
                ExprKind::Name(m) if !locals.contains_key(m) => match self.imported(m) {
                    Some(Value::Module(from, path)) => self.program.module(from, &path).map(|u| (u, name.name.clone())),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        };
        match constant {
            Some((unit, name)) if matches!(self.globals[unit].get(&name), Some(Value::Dict(_) | Value::List(_))) => {
                Err(self.module_constant(&name, base.span))
            }
            _ => Ok(()),
        }
    }

    /// The positions the slice `slice` picks of `n` items, as Python's
    /// slice picks them: its first, its step and how many.
    fn slice_positions(
        &mut self,
        locals: &mut HashMap<String, Value>,
        slice: &Expr,
        n: usize,
        span: Span,
    ) -> Res<(i64, i64, usize)> {
        let ExprKind::Slice { lower, upper, step } = &slice.kind else {
            return Ok((0, 1, n));
        };
        let mut get = |e: &Option<Box<Expr>>| -> Res<Option<i64>> {
            match e {
                None => Ok(None),
                Some(e) => Ok(as_f64(&self.expr(locals, e)?).map(|f| f as i64)),
            }
        };
        let (lo, hi, st) = (get(lower)?, get(upper)?, get(step)?.unwrap_or(1));
        if st == 0 {
            return Err(self.fail(span, "this slice", RunError::value("a slice step cannot be zero")));
        }
        match ops::resolve_slice(lo, hi, st, n) {
            Sel::Slice { start, step, len } => Ok((start, step, len)),
            _ => Ok((0, 1, 0)),
        }
    }

    /// `items[slice] = v`, as Python's: a slice of step 1 is replaced by
    /// the items of `v`, however many; an extended one takes as many items
    /// as it has places.
    fn assign_list_slice(
        &mut self,
        locals: &mut HashMap<String, Value>,
        items: &RefCell<Vec<Value>>,
        slice: &Expr,
        v: &Value,
        span: Span,
    ) -> Res<()> {
        let n = items.borrow().len();
        let (start, step, len) = self.slice_positions(locals, slice, n, span)?;
        let new = self.items_of(v).map_err(|e| self.fail(span, "this value", e))?;
        let mut items = items.borrow_mut();
        if step == 1 {
            let start = start as usize;
            items.splice(start..start + len, new);
            return Ok(());
        }
        if new.len() != len {
            return Err(self.fail(
                span,
                "this slice",
                RunError::value(format!(
                    "cannot assign {} items to an extended slice of {len}",
                    new.len()
                )),
            ));
        }
        for (k, item) in new.into_iter().enumerate() {
            items[(start + k as i64 * step) as usize] = item;
        }
        Ok(())
    }

    /// The position in `items` of the one int index of `args` (negative
    /// from the end), E1007 when there is none such.
    fn list_index(
        &mut self,
        locals: &mut HashMap<String, Value>,
        items: &RefCell<Vec<Value>>,
        args: &[Arg],
        span: Span,
    ) -> Res<usize> {
        let [arg] = args else {
            return Err(self.fail(
                span,
                "this subscript",
                RunError::new(Code::E1005, "a list takes one index in brackets"),
            ));
        };
        if matches!(arg.value.kind, ExprKind::Slice { .. }) {
            return Err(self.fail(
                span,
                "this subscript",
                unsupported("host code does not assign to a slice of a list"),
            ));
        }
        let n = items.borrow().len();
        self.sequence_index(locals, arg, n, "list", span)
    }

    /// The position the int index `arg` names in a `kind` of `n` items
    /// (negative from the end), E1007 when it is out of range.
    fn sequence_index(
        &mut self,
        locals: &mut HashMap<String, Value>,
        arg: &Arg,
        n: usize,
        kind: &str,
        span: Span,
    ) -> Res<usize> {
        match as_index(self.expr(locals, &arg.value)?) {
            Value::Int(i) => ops::resolve_index(i, n).ok_or_else(|| {
                self.fail(
                    span,
                    "this index",
                    RunError::new(Code::E1007, format!("index {i} is out of range for a {kind} of {n}")),
                )
            }),
            v => Err(self.fail(
                span,
                "this index",
                RunError::value(format!("a {kind} index must be an int, not {}", v.describe())),
            )),
        }
    }

    /// The key of `d[key]`: one hashable value.
    fn dict_key(&mut self, locals: &mut HashMap<String, Value>, args: &[Arg], span: Span) -> Res<Value> {
        let [arg] = args else {
            return Err(self.fail(
                span,
                "this subscript",
                RunError::new(Code::E1005, "a dict takes one key in brackets"),
            ));
        };
        let key = self.expr(locals, &arg.value)?;
        if !hashable(&key) {
            return Err(self.fail(arg.value.span, "this key", unhashable(&key)));
        }
        Ok(key)
    }

    fn call(&mut self, locals: &mut HashMap<String, Value>, e: &Expr, callee: &Expr, args: &[Arg]) -> Res<Value> {
        if let ExprKind::Subscript { base, args: brackets } = &callee.unparen().kind {
            if let Some((unit, def)) = self.kernel_named(locals, base) {
                return self.launch(locals, e, unit, def, brackets, args);
            }
        }
        if let ExprKind::Attr { base, name } = &callee.unparen().kind {
            let changes = builtins::LIST_METHODS[..builtins::LIST_MUTATORS]
                .iter()
                .chain(&builtins::DICT_METHODS[..builtins::DICT_MUTATORS])
                .any(|(m, _)| *m == name.name);
            if changes {
                self.check_not_constant(locals, base)?;
            }
        }
        let f = self.expr(locals, callee)?;
        match f {
            Value::Function(unit, name) => {
                let Some((def, role)) = self.program.units[unit].function(&name) else {
                    return Err(self.fail(
                        callee.span,
                        "this function",
                        unsupported(format!("`{name}` is not a function")),
                    ));
                };
                let evaluated = self.args(locals, args)?;
                let (values, sites) = self.bind_params(unit, def, evaluated, e.span)?;
                self.call_function(unit, def, role, values, Some(sites), e.span)
            }
            Value::Builtin(path) => {
                let mut evaluated = self.args(locals, args)?;
                let v = self.builtin(path, &mut evaluated, e.span)?;
                if let Some((name, _, span)) = evaluated.keyword.first() {
                    return Err(self.fail(
                        *span,
                        "this argument",
                        RunError::new(Code::E1005, format!("`{path}` has no parameter `{name}`")),
                    ));
                }
                Ok(v)
            }
            Value::Method(receiver, method) => {
                let mut evaluated = self.args(locals, args)?;
                let v = match &*receiver {
                    Value::Dict(entries) => self.dict_method(entries, method, &mut evaluated),
                    Value::List(items) => self.list_method(items, method, &mut evaluated),
                    // `index` and `count`, which read it as a list's do.
                    Value::Tuple(items) => self.list_method(&RefCell::new(items.to_vec()), method, &mut evaluated),
                    Value::Str(text) => self.str_method(text, method, &mut evaluated),
                    other => Err(unsupported(format!("{} has no methods in host code", other.describe()))),
                }
                .map_err(|err| self.fail(e.span, "this call", err))?;
                self.no_more(&evaluated, method)
                    .map_err(|err| self.fail(e.span, "this call", err))?;
                Ok(v)
            }
            Value::DType(d) => {
                let mut evaluated = self.args(locals, args)?;
                if evaluated.positional.len() > 1 || !evaluated.keyword.is_empty() {
                    let base = match (d, evaluated.positional.as_slice(), evaluated.keyword.as_slice()) {
                        (DType::I64, [(Value::Str(_), _), (b, _)], []) => Some(b.clone()),
                        (DType::I64, [(Value::Str(_), _)], [(name, b, _)]) if name == "base" => Some(b.clone()),
                        _ => None,
                    };
                    let Some(base) = base else {
                        return Err(self.fail(
                            e.span,
                            "this conversion",
                            RunError::new(
                                Code::E1005,
                                format!("`{d}(...)` takes one value (and `int(text, base)` a base)"),
                            ),
                        ));
                    };
                    let Value::Str(text) = &evaluated.positional[0].0 else {
                        unreachable!("matched a string above")
                    };
                    return int_in_base(text, &base)
                        .map(Value::Int)
                        .map_err(|err| self.fail(e.span, "this conversion", err));
                }
                let Some((v, span)) = evaluated.positional.pop() else {
                    return Err(self.fail(
                        e.span,
                        "this conversion",
                        RunError::new(Code::E1005, format!("`{d}(...)` needs a value")),
                    ));
                };
                // `bool(...)` of a container is its truth, as in Python.
                if let (DType::Bool, false, Some(truth)) = (d, matches!(v, Value::Tensor(_)), v.truthy()) {
                    return Ok(Value::Bool(truth));
                }
                self.cast(&v, d, false)
                    .map_err(|err| self.fail(span, "this value", err))
            }
            v => Err(self.fail(
                callee.span,
                "this value",
                unsupported(format!("{} is not callable", v.describe())),
            )),
        }
    }

    /// The unit and definition of the kernel `base` names, unless a local
    /// shadows it: `k` of the running unit or of `from helpers import k`,
    /// or `helpers.k`.
    fn kernel_named(&self, locals: &HashMap<String, Value>, base: &Expr) -> Option<(usize, &'p FnDef)> {
        let global = |n: &str| {
            if locals.contains_key(n) || self.globals[self.unit].contains_key(n) {
                None
            } else {
                self.function_or_import(n)
            }
        };
        let named = match &base.unparen().kind {
            ExprKind::Name(n) => global(n)?,
            ExprKind::Attr { base: module, name } => {
                let ExprKind::Name(m) = &module.unparen().kind else {
                    return None;
                };
                match global(m)? {
                    Value::Module(from, path) => self.member(from, &path, &name.name)?,
                    _ => return None,
                }
            }
            _ => return None,
        };
        let Value::Function(unit, name) = named else {
            return None;
        };
        match self.program.units[unit].function(&name)? {
            (def, Role::Kernel) => Some((unit, def)),
            _ => None,
        }
    }

    /// A parameter's default `d`, evaluated where the function is defined
    /// (no caller's locals) once, as Python evaluates it when it runs the
    /// `def`: every call that takes it gets the same value, so a list
    /// default that one call appends to holds the item in the next.
    /// `unit` is the function's, whose names the default reads.
    pub(crate) fn default_value(&mut self, unit: usize, d: &Expr) -> Res<Value> {
        // The expression's address names it: the syntax trees outlive the run.
        let key = std::ptr::from_ref(d) as usize;
        if let Some(v) = self.defaults.get(&key) {
            return Ok(v.clone());
        }
        let v = self.in_unit(unit, |this| this.expr(&mut HashMap::new(), d))?;
        self.defaults.insert(key, v.clone());
        Ok(v)
    }

    /// Arguments in parameter order: positional, then keywords, then the
    /// defaults.
    /// `unit` is the function's, where its defaults are evaluated.
    fn bind_params(&mut self, unit: usize, def: &FnDef, mut args: Args, call: Span) -> Res<(Vec<Value>, Vec<ArgSite>)> {
        let fname = &def.name.name;
        if args.positional.len() > def.params.len() {
            let (_, span) = &args.positional[def.params.len()];
            return Err(self.fail(
                *span,
                "this argument",
                RunError::new(
                    Code::E1005,
                    format!(
                        "`{fname}` takes {}, but {} given",
                        tessera_base::counted(def.params.len(), "argument", "arguments"),
                        tessera_base::counted(args.positional.len(), "was", "were")
                    ),
                ),
            ));
        }
        let mut values = Vec::new();
        let mut sites = Vec::new();
        let mut positional = std::mem::take(&mut args.positional).into_iter();
        for p in &def.params {
            let (v, span) = match positional.next() {
                Some(a) => a,
                None => match args.take(&p.name.name) {
                    Some(a) => a,
                    None => match &p.default {
                        Some(d) => (self.default_value(unit, d)?, call),
                        None => {
                            return Err(self.fail(
                                call,
                                "this call",
                                RunError::new(
                                    Code::E1005,
                                    format!("`{fname}` needs an argument for `{}`", p.name.name),
                                ),
                            ))
                        }
                    },
                },
            };
            values.push(v);
            sites.push(ArgSite { span });
        }
        if let Some((name, _, span)) = args.keyword.first() {
            return Err(self.fail(
                *span,
                "this argument",
                RunError::new(Code::E1005, format!("`{fname}` has no parameter `{name}`")),
            ));
        }
        Ok((values, sites))
    }

    fn launch(
        &mut self,
        locals: &mut HashMap<String, Value>,
        e: &Expr,
        unit: usize,
        def: &FnDef,
        brackets: &[Arg],
        args: &[Arg],
    ) -> Res<Value> {
        let mut grid = None;
        let mut block = None;
        for (k, a) in brackets.iter().enumerate() {
            let slot = match (a.name.as_ref().map(|n| n.name.as_str()), k) {
                (Some("grid"), _) | (None, 0) => &mut grid,
                (Some("block"), _) | (None, 1) => &mut block,
                (Some("stream"), _) => continue,
                _ => {
                    return Err(self.fail(
                        a.span,
                        "this launch argument",
                        unsupported("a launch takes `grid`, `block` and `stream`"),
                    ))
                }
            };
            let v = self.expr(locals, &a.value)?;
            *slot = Some(self.dims3(&v).map_err(|err| self.fail(a.span, "this size", err))?);
        }
        let Some(grid) = grid else {
            return Err(self.fail(
                e.span,
                "this launch",
                RunError::launch("a launch needs a grid: `[grid=(blocks,), block=(threads,)]`"),
            ));
        };
        let file = self.program.units[unit].file;
        let block = match block.or_else(|| self.executor.compiled_block(file, &def.name.name)) {
            Some(b) => b,
            None => self
                .declared_block(unit, def)
                .map_err(|err| self.fail(e.span, "this launch", err))?,
        };
        let config = LaunchConfig {
            grid,
            block,
            shared_bytes: 0,
        };
        config.validate().map_err(|err| self.fail(e.span, "this launch", err))?;
        let evaluated = self.args(locals, args)?;
        let (mut values, sites) = self.bind_params(unit, def, evaluated, e.span)?;
        shapes::numbers_for_scalars(def, &mut values);
        let constants = self.signature_constants(unit, def);
        let units = &self.program.units;
        let dims = shapes::bind(
            &units[self.unit],
            &units[unit],
            def,
            &values,
            &sites,
            e.span,
            &constants,
        )?;
        let launch = Launch {
            file,
            kernel: &def.name.name,
            config,
            args: &values,
            dims: &dims,
        };
        let printed = self
            .executor
            .launch(self.device, &launch)
            .map_err(|err| self.fail(e.span, "this launch", err))?;
        self.write_through_views(locals, def, args, &values)?;
        self.out.write_all(printed.as_bytes()).map_err(|err| {
            self.fail(
                e.span,
                "this launch",
                RunError::new(Code::E1006, format!("cannot print: {err}")),
            )
        })?;
        Ok(Value::None)
    }

    /// After a launch, what the kernel wrote into a `mut` parameter given
    /// a basic slice of a tensor (`x[2:5]`, `x[1, :]`: slices and integer
    /// indices) is stored back into that tensor, as it would be through
    /// the NumPy view the slice is there: the slice itself is a copy. An
    /// index by a mask or an index tensor is NumPy's copy too, and stays
    /// one.
    fn write_through_views(
        &mut self,
        locals: &mut HashMap<String, Value>,
        def: &FnDef,
        args: &[Arg],
        values: &[Value],
    ) -> Res<()> {
        let positional: Vec<&Arg> = args.iter().filter(|a| a.name.is_none()).collect();
        for (k, param) in def.params.iter().enumerate() {
            if param.mutable.is_none() {
                continue;
            }
            let given = positional.get(k).copied().or_else(|| {
                args.iter()
                    .find(|a| a.name.as_ref().is_some_and(|n| n.name == param.name.name))
            });
            let (Some(arg), Some(value)) = (given, values.get(k)) else {
                continue;
            };
            // `x.T` is NumPy's view too: what the kernel wrote, transposed
            // back (a transpose is its own inverse), is stored into `x`
            // (it had been lost).
            let (target, value) = match (&arg.value.unparen().kind, value) {
                (ExprKind::Attr { base, name }, Value::Tensor(t)) if name.name == "T" => {
                    let fail = |e| self.fail(arg.value.span, "this argument", e);
                    let back = ops::transpose(&*t.host(self.device).map_err(fail)?).map_err(fail)?;
                    (&**base, Value::Tensor(TensorValue::new(back)))
                }
                _ => (&arg.value, value.clone()),
            };
            if let (ExprKind::Name(_), true) = (&target.unparen().kind, !std::ptr::eq(target, &arg.value)) {
                if let Value::Tensor(dst) = self.expr(locals, target)? {
                    if let Value::Tensor(src) = &value {
                        let fail = |e| self.fail(arg.value.span, "this argument", e);
                        let src = src.host(self.device).map_err(fail)?.clone();
                        *dst.host_mut(self.device).map_err(fail)? = src;
                    }
                }
                continue;
            }
            let ExprKind::Subscript { args: index, .. } = &target.unparen().kind else {
                continue;
            };
            let mut basic = true;
            for i in index {
                basic &= match &i.value.kind {
                    ExprKind::Slice { .. } => true,
                    _ => match self.expr(locals, &i.value)? {
                        Value::Int(_) => true,
                        Value::Tensor(t) => t.shape().is_empty() && !t.dtype().is_float() && t.dtype() != DType::Bool,
                        _ => false,
                    },
                };
            }
            if basic {
                self.assign(locals, target, value)?;
            }
        }
        Ok(())
    }

    /// The block of a kernel's `tile[(…)]` clause (of unit `unit`, whose
    /// constants it may name), or 128 threads.
    fn declared_block(&self, unit: usize, def: &FnDef) -> Result<[u32; 3], RunError> {
        for d in &def.decorators {
            for clause in &d.clauses {
                if let ExprKind::Subscript { base, args } = &clause.kind {
                    if dotted_name(base).as_deref() == Some("tile") && args.len() == 1 {
                        let global = |n: &str| {
                            (self.globals[unit].get(n).cloned()).or_else(|| self.dim_constant(unit, n).map(Value::Int))
                        };
                        let v = constant(&args[0].value, &global).ok_or_else(|| {
                            unsupported(
                                "the kernel's `tile[...]` holds something other than integers and module constants",
                            )
                        })?;
                        return self.dims3(&v);
                    }
                }
            }
        }
        Ok([128, 1, 1])
    }

    /// `g`, `(g,)`, `(x, y)` or `(x, y, z)` as three sizes.
    fn dims3(&self, v: &Value) -> Result<[u32; 3], RunError> {
        let items: Vec<Value> = match v.items() {
            Some(items) => items.to_vec(),
            None => vec![v.clone()],
        };
        if items.is_empty() || items.len() > 3 {
            return Err(RunError::launch(format!(
                "a grid or block has 1 to 3 sizes, not {}",
                items.len()
            )));
        }
        let mut out = [1u32; 3];
        for (i, item) in items.iter().enumerate() {
            out[i] = match as_index(item.clone()) {
                Value::Int(n) => u32::try_from(n)
                    .map_err(|_| RunError::launch(format!("a grid or block size of {n} is out of range")))?,
                v => {
                    return Err(RunError::launch(format!(
                        "a grid or block size must be an int, not {}",
                        v.describe()
                    )))
                }
            };
        }
        Ok(out)
    }

    // ---- builtins

    fn builtin(&mut self, path: &'static str, args: &mut Args, span: Span) -> Res<Value> {
        let fail = |this: &Self, e: RunError| this.fail(span, "in this call", e);
        if let Some(b) = builtins::lookup(path) {
            if b.context == Context::Kernel {
                return Err(fail(self, unsupported(format!("`{path}` runs only inside kernels"))));
            }
        }
        if matches!(path, "sorted" | "min" | "max") {
            if let Some((key, key_span)) = args.take("key").filter(|(k, _)| !matches!(k, Value::None)) {
                return self.keyed(path, &key, key_span, args, span);
            }
        }
        let result = match path {
            "print" => self.print(args),
            "range" => self.range(args),
            "len" => self.len(args),
            "min" | "max" => self.min_max(path, args),
            "abs" | "sqrt" | "rsqrt" | "exp" | "exp2" | "erf" | "log" | "tanh" | "sin" | "cos" | "floor" | "ceil"
            | "op.relu" | "op.gelu" | "op.sigmoid" | "op.silu" => self.math(path, args),
            "ceil_div" => self.ceil_div(args),
            "cast" => self.cast_builtin(args),
            "bitcast" => self.bitcast(args),
            "zeros" | "ones" | "empty" | "full" => self.create(path, args),
            "arange" => self.arange(args),
            "rand" | "randn" => self.random(path, args),
            "assert_allclose" => return self.allclose(args, span, true),
            "allclose" => return self.allclose(args, span, false),
            "load" => self.load(args),
            "save" => self.save(args),
            "op.sum" | "op.mean" | "op.max" | "op.min" => self.reduce(path, args),
            "op.var" | "op.std" => self.op_var(path, args),
            "op.argmax" | "op.argmin" => self.arg_extremum(path, args),
            "op.add" | "op.mul" => self.op_binary(path, args),
            "op.transpose" => self.op_transpose(args),
            "op.concat" => self.op_concat(args),
            "op.stack" => self.op_stack(args),
            "enumerate" => self.enumerate(args),
            "sum" => self.sum(args),
            "sorted" => self.sorted(args),
            "list" | "tuple" | "reversed" => self.sequence(path, args),
            "any" | "all" => self.any_all(path, args),
            "round" => self.round(args),
            "format" | "repr" | "str" => self.format(path, args),
            "zip" => self.zip(args),
            "divmod" => self.divmod(args),
            "pow" => self.pow(args),
            "hex" | "oct" | "bin" => self.digits(path, args),
            "chr" => self.chr(args),
            "ord" => self.ord(args),
            "op.where" => self.op_where(args),
            "op.reshape" => self.op_reshape(args),
            "op.matmul" => self.op_matmul(args),
            "op.softmax" | "op.log_softmax" | "op.cumsum" => self.op_along_axis(path, args),
            "op.layernorm" | "op.rmsnorm" => self.op_norm(path, args),
            "op.flash_attention" => self.op_attention(args),
            "stream.synchronize" => self.device.synchronize().map(|_| Value::None),
            _ => Err(unsupported(format!("`{path}` is not supported in host code"))),
        };
        result.map_err(|e| fail(self, e))
    }

    fn positional(&self, args: &mut Args, name: &str, path: &str) -> Result<Value, RunError> {
        if !args.positional.is_empty() {
            return Ok(args.positional.remove(0).0);
        }
        args.take(name)
            .map(|(v, _)| v)
            .ok_or_else(|| RunError::new(Code::E1005, format!("`{path}` needs an argument for `{name}`")))
    }

    fn no_more(&self, args: &Args, path: &str) -> Result<(), RunError> {
        if !args.positional.is_empty() {
            return Err(RunError::new(
                Code::E1005,
                format!("`{path}` was given too many arguments"),
            ));
        }
        Ok(())
    }

    fn print(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let mut text = |name: &str, default: &str| match args.take(name) {
            Some((Value::Str(s), _)) => Ok(s.to_string()),
            Some((Value::None, _)) | None => Ok(default.to_string()),
            Some((v, _)) => Err(RunError::value(format!(
                "`{name}` must be a string, not {}",
                v.describe()
            ))),
        };
        let sep = text("sep", " ")?;
        let end = text("end", "\n")?;
        let mut parts = Vec::new();
        for (v, _) in std::mem::take(&mut args.positional) {
            if let Value::Tensor(t) = &v {
                t.host(self.device)?;
            }
            parts.push(super::print::display(&v, &|t, form| self.tensor_text(t, form)));
        }
        write!(self.out, "{}{end}", parts.join(&sep))
            .map_err(|e| RunError::new(Code::E1006, format!("cannot print: {e}")))?;
        Ok(Value::None)
    }

    /// A tensor as NumPy writes it in `form`.
    fn tensor_text(&self, t: &TensorValue, form: super::print::Form) -> String {
        match t.host(self.device) {
            Ok(host) if form == super::print::Form::Str => super::print::tensor(&host),
            Ok(host) => super::print::tensor_repr(&host),
            Err(e) => format!("<tensor: {}>", e.message),
        }
    }

    /// The optional `start` and `end` of a search in a sequence of `n`
    /// items, as CPython adjusts them: None for the ends, negative from the
    /// end (at least 0), `end` at most `n`; a `start` past `end` searches
    /// nothing.
    fn bounds(&self, args: &mut Args, n: usize) -> Result<(usize, usize), RunError> {
        let len = n as i64;
        let mut bound = |name: &str, default: i64| -> Result<i64, RunError> {
            let b = match args.optional(name) {
                None | Some(Value::None) => default,
                Some(v) => self.int_arg(&v, &format!("the `{name}` of a search"))?,
            };
            Ok(if b < 0 { (b + len).max(0) } else { b })
        };
        let start = bound("start", 0)?;
        let end = bound("end", len)?.min(len);
        Ok((start as usize, end as usize))
    }

    /// `text[start:end]` by characters, with `start`, where `start` and
    /// `end` are a string search's optional arguments (see
    /// [`Self::bounds`]); None where `start` is past `end`, where Python's
    /// searches find nothing, not even the empty string.
    fn char_range<'t>(&self, text: &'t str, args: &mut Args) -> Result<Option<(usize, &'t str)>, RunError> {
        let (start, end) = self.bounds(args, text.chars().count())?;
        if start > end {
            return Ok(None);
        }
        let byte = |k: usize| text.char_indices().nth(k).map_or(text.len(), |(b, _)| b);
        Ok(Some((start, &text[byte(start)..byte(end)])))
    }

    fn int_arg(&self, v: &Value, what: &str) -> Result<i64, RunError> {
        match &as_index(v.clone()) {
            Value::Int(i) => Ok(*i),
            Value::Bool(b) => Ok(*b as i64),
            v => Err(RunError::value(format!("{what} must be an int, not {}", v.describe()))),
        }
    }

    fn range(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let ints: Vec<i64> = std::mem::take(&mut args.positional)
            .iter()
            .map(|(v, _)| self.int_arg(v, "a `range` bound"))
            .collect::<Result<_, _>>()?;
        let (a, b, s) = match ints[..] {
            [b] => (0, b, 1),
            [a, b] => (a, b, 1),
            [a, b, s] => (a, b, s),
            _ => return Err(RunError::new(Code::E1005, "`range` takes 1 to 3 arguments")),
        };
        if s == 0 {
            return Err(RunError::value("the step of `range` cannot be zero"));
        }
        Ok(Value::Range(a, b, s))
    }

    fn len(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let v = self.positional(args, "x", "len")?;
        let n = match &v {
            Value::Tensor(t) => *t
                .shape()
                .first()
                .ok_or_else(|| RunError::value("a 0-d tensor has no length"))? as i64,
            Value::Tuple(items) => items.len() as i64,
            Value::List(items) => items.borrow().len() as i64,
            Value::Dict(entries) => entries.borrow().len() as i64,
            Value::Str(s) => s.chars().count() as i64,
            Value::Range(a, b, s) => range_len(*a, *b, *s) as i64,
            v => return Err(RunError::new(Code::E1005, format!("{} has no length", v.describe()))),
        };
        Ok(Value::Int(n))
    }

    /// `min`/`max` of its values, or of the items of its one iterable, as
    /// Python's (a NaN wins, as in kernels).
    fn min_max(&mut self, path: &str, args: &mut Args) -> Result<Value, RunError> {
        let mut items = self.extremum_values(path, args)?.into_iter();
        let first = items.next().ok_or_else(|| of_nothing(path))?;
        items.try_fold(first, |a, b| self.min_max_pair(path, a, b))
    }

    /// The values `min` and `max` choose from: their positional arguments,
    /// or, given one, its items as Python iterates them (a list's, tuple's
    /// or range's items, a string's characters, a dict's keys, a 1-d
    /// tensor's elements).
    fn extremum_values(&self, path: &str, args: &mut Args) -> Result<Vec<Value>, RunError> {
        let values: Vec<Value> = std::mem::take(&mut args.positional)
            .into_iter()
            .map(|(v, _)| v)
            .collect();
        match &values[..] {
            [Value::Tensor(t)] if t.shape().len() != 1 => {
                let why = match t.shape().len() {
                    0 => "has nothing to iterate".to_string(),
                    n => format!("compares its rows, which have no single order (as in Python): it is {n}-d"),
                };
                Err(RunError::new(
                    Code::E1005,
                    format!("`{path}` of one tensor {why}; `op.{path}` reduces a tensor"),
                ))
            }
            [one @ (Value::Tuple(_)
            | Value::List(_)
            | Value::Range(..)
            | Value::Str(_)
            | Value::Dict(_)
            | Value::Tensor(_))] => self.items_of(one),
            [one] => Err(RunError::new(
                Code::E1005,
                format!(
                    "`{path}` of one value takes what it iterates (a list, tuple, range, string, dict or 1-d \
                     tensor), not {}",
                    one.describe()
                ),
            )),
            _ => Ok(values),
        }
    }

    fn min_max_pair(&mut self, path: &str, a: Value, b: Value) -> Result<Value, RunError> {
        let array = |v: &Value| matches!(v, Value::Tensor(t) if !t.shape().is_empty());
        if array(&a) || array(&b) {
            // min(a, b) = where(b < a or b is NaN, b, a), elementwise, in
            // the dtype `op.where` gives them (a bf16 tensor and 0.25:
            // bf16); a NaN wins, as in kernels. (It had been `less * b +
            // (not less) * a`: f32 for bf16, and NaN for an infinite `b`
            // not taken.) Of NumPy's scalars (tensors of no dims) and
            // numbers, as Python's: the value that wins, as it is.
            let beats = self.binary(extremum_op(path), &b, &a)?;
            let nan = self.binary(BinOp::Ne, &b, &b)?;
            let pick_b = self.binary(BinOp::BitOr, &beats, &nan)?;
            return self.choose(&pick_b, &b, &a, path);
        }
        let take_b = match (as_f64(&a), as_f64(&b)) {
            // A NaN wins, whichever side it is on, as in kernels.
            (Some(x), Some(y)) => y.is_nan() || !x.is_nan() && if path == "min" { y < x } else { y > x },
            // Strings, lists and tuples as Python orders them.
            _ => py_compare(extremum_op(path), &b, &a)?,
        };
        Ok(if take_b { b } else { a })
    }

    fn math(&mut self, path: &str, args: &mut Args) -> Result<Value, RunError> {
        let f = match path {
            "abs" => MathFn::Abs,
            "sqrt" => MathFn::Sqrt,
            "exp" => MathFn::Exp,
            "exp2" => MathFn::Exp2,
            "erf" => MathFn::Erf,
            "log" => MathFn::Log,
            "tanh" => MathFn::Tanh,
            "sin" => MathFn::Sin,
            "cos" => MathFn::Cos,
            "floor" => MathFn::Floor,
            "ceil" => MathFn::Ceil,
            "op.gelu" => MathFn::Gelu,
            "rsqrt" => MathFn::Rsqrt,
            "op.sigmoid" => MathFn::Sigmoid,
            "op.silu" => MathFn::Silu,
            _ => MathFn::Relu,
        };
        let x = self.positional(args, "x", path)?;
        let f = match (f, args.optional("approximate")) {
            (MathFn::Gelu, None) => MathFn::GeluErf,
            (MathFn::Gelu, Some(Value::Str(s))) if &*s == "none" => MathFn::GeluErf,
            (MathFn::Gelu, Some(Value::Str(s))) if &*s == "tanh" => MathFn::Gelu,
            (MathFn::Gelu, Some(v)) => {
                return Err(RunError::new(
                    Code::E1005,
                    format!(
                        "the `approximate` of `op.gelu` is \"none\" or \"tanh\", not {}",
                        super::print::repr(&v, &|_, _| String::new())
                    ),
                ))
            }
            (f, _) => f,
        };
        // A bool is the int it is (Python's `abs(True)` is 1).
        let x = match x {
            Value::Bool(b) if matches!(f, MathFn::Abs | MathFn::Relu | MathFn::Floor | MathFn::Ceil) => {
                Value::Int(i64::from(b))
            }
            x => x,
        };
        match &x {
            Value::Tensor(t) => {
                let host = t.host(self.device)?;
                Ok(Value::Tensor(TensorValue::new(ops::math(f, &host)?)))
            }
            Value::Int(i) if matches!(f, MathFn::Floor | MathFn::Ceil) => Ok(Value::Int(*i)),
            Value::Int(i) if matches!(f, MathFn::Abs | MathFn::Relu) => Ok(Value::Int(if f == MathFn::Abs {
                i.checked_abs().ok_or_else(|| RunError::value("integer overflow"))?
            } else {
                (*i).max(0)
            })),
            v => as_f64(v).map(|x| Value::Float(f.f64(x))).ok_or_else(|| {
                RunError::new(
                    Code::E1005,
                    format!("`{path}` needs a number or a tensor, not {}", v.describe()),
                )
            }),
        }
    }

    fn ceil_div(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let a = self.positional(args, "a", "ceil_div")?;
        let b = self.positional(args, "b", "ceil_div")?;
        let (a, b) = (self.int_arg(&a, "the dividend")?, self.int_arg(&b, "the divisor")?);
        let q = ops::int_op(
            BinOp::FloorDiv,
            a.checked_neg().ok_or_else(|| RunError::value("integer overflow"))?,
            b,
        )?;
        Ok(Value::Int(
            q.checked_neg().ok_or_else(|| RunError::value("integer overflow"))?,
        ))
    }

    fn dtype_arg(&self, args: &mut Args, default: DType) -> Result<DType, RunError> {
        match args.take("dtype") {
            None => Ok(default),
            Some((Value::DType(d), _)) => Ok(d),
            Some((v, _)) => Err(RunError::value(format!(
                "`dtype` must be a dtype the host holds, not {}",
                v.describe()
            ))),
        }
    }

    /// The keyword `name` as True or False (`false` when absent).
    fn bool_arg(&self, args: &mut Args, name: &str) -> Result<bool, RunError> {
        match args.take(name) {
            None => Ok(false),
            Some((Value::Bool(b), _)) => Ok(b),
            Some((v, _)) => Err(RunError::value(format!(
                "`{name}` must be True or False, not {}",
                v.describe()
            ))),
        }
    }

    /// `v` converted to `d`. A number or a tensor of no dims becomes
    /// NumPy's scalar of `d`: a Python int, float or bool for `i64`, `f64`
    /// and `bool` (`float(x[0])`, `int(n)`), a tensor of no dims for the
    /// other dtypes (`f32(0.1)` is `np.float32(0.1)`, which prints `0.1`).
    fn cast(&self, v: &Value, d: DType, saturate: bool) -> Result<Value, RunError> {
        let parsed;
        let v = match v {
            Value::Str(text) => {
                parsed = parse_number(text, d.is_float())?;
                &parsed
            }
            v => v,
        };
        // `int(x)` of a float (a Python float or NumPy's float scalar) is
        // Python's truncation, in 64 bits: NaN, the infinities and what
        // does not fit are errors, not a saturated or wrapped int.
        let float = match v {
            Value::Float(x) => Some(*x),
            Value::Tensor(t) if t.shape().is_empty() && t.dtype().is_float() => as_f64(v),
            _ => None,
        };
        if let (DType::I64, Some(x)) = (d, float.as_ref()) {
            let bound = -(i64::MIN as f64); // 2^63
            if !(-bound..bound).contains(&x.trunc()) {
                let shown = super::print::python_float(*x);
                return Err(RunError::value(match x {
                    x if x.is_nan() => "cannot convert float NaN to integer".to_string(),
                    x if x.is_infinite() => "cannot convert float infinity to integer".to_string(),
                    _ => format!("{shown} does not fit in a 64-bit int"),
                }));
            }
        }
        let t = match v {
            Value::Tensor(t) => t.host(self.device)?.cast_with(d, saturate)?,
            v => {
                let e = elem_of(v)
                    .ok_or_else(|| RunError::new(Code::E1005, format!("cannot convert {} to {d}", v.describe())))?;
                let mut t = Tensor::zeros(elem_dtype(&e), &[])?;
                t.set(0, e);
                t.cast_with(d, saturate)?
            }
        };
        // `f64`, `i64` and `bool` are Python's float, int and bool; the
        // other dtypes give NumPy's scalar of theirs.
        let python = matches!(d, DType::F64 | DType::I64 | DType::Bool);
        Ok(if t.shape().is_empty() && python {
            Value::from_elem(t.get(0))
        } else {
            Value::Tensor(TensorValue::new(t))
        })
    }

    /// `bitcast(x, dtype)`: the bytes of `x` read as `dtype`, of the same
    /// width. A number is first a value of `dtype`'s width: a float an
    /// `f32` or `f64`, an integer an `i32` or `i64` (as a kernel's literal).
    fn bitcast(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let x = self.positional(args, "x", "bitcast")?;
        let Value::DType(d) = self.positional(args, "dtype", "bitcast")? else {
            return Err(RunError::value("`bitcast` needs a dtype the host holds"));
        };
        let t = match &x {
            Value::Tensor(t) => t.host(self.device)?.clone(),
            v => {
                let e =
                    elem_of(v).ok_or_else(|| RunError::new(Code::E1005, format!("cannot bitcast {}", v.describe())))?;
                let from = match (e, d.size()) {
                    (Elem::Float(_), 8) => DType::F64,
                    (Elem::Float(_), _) => DType::F32,
                    (_, 8) => DType::I64,
                    _ => DType::I32,
                };
                let mut t = Tensor::zeros(from, &[1])?;
                t.set(0, e);
                t
            }
        };
        if t.dtype().size() != d.size() {
            return Err(RunError::value(format!(
                "`bitcast` keeps the width: {} has {} bytes, {d} {}",
                t.dtype(),
                t.dtype().size(),
                d.size()
            )));
        }
        let out = Tensor::from_bytes(d, t.shape(), t.bytes())?;
        Ok(match x {
            Value::Tensor(_) => Value::Tensor(TensorValue::new(out)),
            _ => Value::from_elem(out.get(0)),
        })
    }

    fn cast_builtin(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let x = self.positional(args, "x", "cast")?;
        let d = match self.positional(args, "dtype", "cast")? {
            Value::DType(d) => d,
            v => {
                return Err(RunError::value(format!(
                    "`cast` needs a dtype the host holds, not {}",
                    v.describe()
                )))
            }
        };
        match args.take("rounding") {
            None => {}
            Some((Value::Str(s), _)) if &*s == "nearest_even" => {}
            Some((v, _)) => {
                return Err(unsupported(format!(
                    "host code rounds to nearest even only, not {}",
                    super::print::display(&v, &|_, _| String::new())
                )))
            }
        }
        let saturate = self.bool_arg(args, "saturate")?;
        self.cast(&x, d, saturate)
    }

    /// The shape given as sizes or as one tuple.
    fn shape_of(&self, values: &[(Value, Span)]) -> Result<Vec<usize>, RunError> {
        let sizes: Vec<Value> = match values {
            [(one @ (Value::Tuple(_) | Value::List(_)), _)] => one.items().unwrap_or_default(),
            _ => values.iter().map(|(v, _)| v.clone()).collect(),
        };
        sizes
            .iter()
            .map(|v| {
                let n = self.int_arg(v, "a size")?;
                usize::try_from(n).map_err(|_| RunError::value(format!("a size cannot be negative ({n})")))
            })
            .collect()
    }

    fn create(&mut self, path: &str, args: &mut Args) -> Result<Value, RunError> {
        let dtype = self.dtype_arg(args, DType::F32)?;
        let fill = match path {
            "full" => {
                let v = match args.take("value") {
                    Some((v, _)) => v,
                    None => args
                        .positional
                        .pop()
                        .map(|(v, _)| v)
                        .ok_or_else(|| RunError::new(Code::E1005, "`full` needs a value"))?,
                };
                Some(
                    elem_of(&v)
                        .ok_or_else(|| RunError::value(format!("`full` fills with a number, not {}", v.describe())))?,
                )
            }
            "ones" => Some(Elem::Int(1)),
            _ => None,
        };
        let shape = self.shape_of(&std::mem::take(&mut args.positional))?;
        let mut t = Tensor::zeros(dtype, &shape)?;
        match (path, fill) {
            ("empty", _) => t.bytes_mut().fill(0xFF),
            (_, Some(e)) => (0..t.numel()).for_each(|i| t.set(i, e)),
            _ => {}
        }
        Ok(Value::Tensor(TensorValue::new(t)))
    }

    /// `arange(n)`, `arange(start, stop)` and `arange(start, stop, step)`,
    /// as NumPy's, of integers (the other arguments were ignored).
    fn arange(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let dtype = self.dtype_arg(args, DType::F32)?;
        let values = std::mem::take(&mut args.positional);
        let ints = values
            .iter()
            .map(|(v, _)| self.int_arg(v, "an argument of `arange`"))
            .collect::<Result<Vec<i64>, RunError>>()?;
        let (start, stop, step) = match ints.as_slice() {
            [] => {
                let n = self.positional(args, "n", "arange")?;
                (0, self.int_arg(&n, "the length of `arange`")?, 1)
            }
            [n] => (0, *n, 1),
            [a, z] => (*a, *z, 1),
            [a, z, s] => (*a, *z, *s),
            _ => {
                return Err(RunError::new(
                    Code::E1005,
                    "`arange` takes 1 to 3 numbers: stop, or start, stop and step",
                ))
            }
        };
        if step == 0 {
            return Err(RunError::value("`arange` with a step of 0"));
        }
        if ints.len() <= 1 && stop < 0 {
            return Err(RunError::value(format!("a size cannot be negative ({stop})")));
        }
        let n = usize::try_from(range_len(start, stop, step))
            .map_err(|_| RunError::value(format!("`arange({start}, {stop}, {step})` is too long")))?;
        let mut t = Tensor::zeros(dtype, &[n])?;
        (0..n).for_each(|i| t.set(i, Elem::Int(start + i as i64 * step)));
        Ok(Value::Tensor(TensorValue::new(t)))
    }

    fn random(&mut self, path: &str, args: &mut Args) -> Result<Value, RunError> {
        let dtype = self.dtype_arg(args, DType::F32)?;
        // A 0-d integer tensor (an `i32` parameter's value) is an int too.
        let seed = match args.take("seed").map(|(v, span)| (as_index(v), span)) {
            Some((Value::Int(s), _)) if s >= 0 => s as u64,
            Some((v, _)) => {
                return Err(RunError::value(format!(
                    "a seed is a non-negative int, not {}",
                    super::print::display(&v, &|_, _| "a tensor".into())
                )))
            }
            None => {
                return Err(
                    RunError::new(Code::E1005, format!("`{path}` needs a seed: `{path}(..., seed=1)`"))
                        .with_note("the seed fixes the values, so every run draws the same ones"),
                )
            }
        };
        let shape = self.shape_of(&std::mem::take(&mut args.positional))?;
        let dist = if path == "rand" {
            Distribution::Uniform
        } else {
            Distribution::Normal
        };
        let t = rng::fill(dtype, &shape, rng::host_key(seed), dist)?;
        Ok(Value::Tensor(TensorValue::new(t)))
    }

    /// `assert_allclose`, `allclose` and `assert allclose(...)`.
    fn allclose(&mut self, args: &mut Args, span: Span, assert: bool) -> Res<Value> {
        let parse = |this: &mut Self, args: &mut Args| -> Result<(Tensor, Tensor, f64, f64), RunError> {
            let a = this.positional(args, "actual", "allclose")?;
            let b = this.positional(args, "expected", "allclose")?;
            let mut tol = |name: &str, default: f64| -> Result<f64, RunError> {
                match args.optional(name) {
                    None => Ok(default),
                    Some(v) => as_f64(&v)
                        .ok_or_else(|| RunError::value(format!("`{name}` must be a number, not {}", v.describe()))),
                }
            };
            let (rtol, atol) = (tol("rtol", 1e-5)?, tol("atol", 1e-8)?);
            Ok((this.to_tensor(&a)?, this.to_tensor(&b)?, rtol, atol))
        };
        let (a, b, rtol, atol) = parse(self, args).map_err(|e| self.fail(span, "in this call", e))?;
        let c = ops::closeness(&a, &b, rtol, atol).map_err(|e| self.fail(span, "in this call", e))?;
        if c.mismatched == 0 {
            return Ok(Value::Bool(true));
        }
        if !assert {
            return Ok(Value::Bool(false));
        }
        let pct = 100.0 * c.mismatched as f64 / c.total.max(1) as f64;
        let mut e = RunError::new(
            Code::E1003,
            format!("the tensors are not close (rtol={rtol:e}, atol={atol:e})"),
        )
        .with_note(format!(
            "mismatched elements: {} / {} ({pct:.3}%)",
            c.mismatched, c.total
        ));
        if let Some((diff, index, x, y)) = c.worst {
            let index: Vec<String> = index.iter().map(|i| i.to_string()).collect();
            // Numbers at the precision the tensors hold: an f32's 1.1 is
            // `1.1`, not the f64 `1.100000023841858`.
            let narrow = [a.dtype(), b.dtype()].iter().all(|d| d.is_float() && *d != DType::F64);
            let shown = |v: f64| if narrow { (v as f32).to_string() } else { v.to_string() };
            let (x, y, diff) = (shown(x), shown(y), shown(diff));
            e = e.with_note(format!(
                "largest difference at index ({}{}): actual {x}, expected {y}, |difference| {diff}",
                index.join(", "),
                if index.len() == 1 { "," } else { "" }
            ));
        }
        Err(self.fail(span, "these values differ", e))
    }

    fn load(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let path = match self.positional(args, "path", "load")? {
            Value::Str(s) => s,
            v => return Err(RunError::value(format!("`load` needs a path, not {}", v.describe()))),
        };
        let t = crate::npy::load(Path::new(&*path))?;
        Ok(Value::Tensor(TensorValue::new(t)))
    }

    fn save(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let path = match self.positional(args, "path", "save")? {
            Value::Str(s) => s,
            v => return Err(RunError::value(format!("`save` needs a path, not {}", v.describe()))),
        };
        let x = self.positional(args, "x", "save")?;
        let t = self.to_tensor(&x)?;
        crate::npy::save(Path::new(&*path), &t)?;
        Ok(Value::None)
    }

    /// `op.argmax` / `op.argmin` (`axis=`, `keepdims=`).
    fn arg_extremum(&mut self, path: &str, args: &mut Args) -> Result<Value, RunError> {
        let x = self.positional(args, "x", path)?;
        let axis = args.optional("axis");
        let keepdims = self.bool_arg(args, "keepdims")?;
        self.no_more(args, path)?;
        let t = self.to_tensor(&x)?;
        let rank = t.shape().len();
        let axis = match axis {
            None | Some(Value::None) => None,
            Some(v) => Some(self.axes_arg(&Value::tuple(vec![v]), rank, "`axis`")?[0]),
        };
        let r = ops::arg_extremum(&t, axis, path == "op.argmax")?;
        reduced(&t, r, axis.map(|a| vec![a]).as_deref(), keepdims)
    }

    /// `op.var(x, axis=None, keepdims=False, correction=1, accumulate=T)`
    /// and `op.std` on the host: float64 references over the axes (all
    /// without), in `T` (by default the dtype of `x`, `f32` for integers).
    fn op_var(&mut self, path: &str, args: &mut Args) -> Result<Value, RunError> {
        let x = self.positional(args, "x", path)?;
        let axis = args.optional("axis");
        let keepdims = self.bool_arg(args, "keepdims")?;
        let correction = match args.optional("correction") {
            None => 1.0,
            Some(Value::Int(c)) => c as f64,
            Some(Value::Float(c)) => c,
            Some(v) => {
                return Err(RunError::value(format!(
                    "the `correction` of `{path}` is a number, not {}",
                    v.describe()
                )))
            }
        };
        let accumulate = self.accumulate_arg(args)?;
        self.no_more(args, path)?;
        let t = self.to_tensor(&x)?;
        let axes = self.reduced_axes(axis, t.shape().len())?;
        let all: Vec<usize> = (0..t.shape().len()).collect();
        let over = axes.as_deref().unwrap_or(&all);
        let out = accumulate.unwrap_or(if t.dtype().is_float() { t.dtype() } else { DType::F32 });
        let r = ops::variance(&t, over, correction, out, path == "op.std")?;
        reduced(&t, r, axes.as_deref(), keepdims)
    }

    /// The axes a reduction's `axis` names in a tensor of `rank` dims: one,
    /// or a tuple or list of them (in increasing order, each once); None
    /// for all.
    fn reduced_axes(&self, axis: Option<Value>, rank: usize) -> Result<Option<Vec<usize>>, RunError> {
        match axis {
            None | Some(Value::None) => Ok(None),
            Some(v @ (Value::Tuple(_) | Value::List(_))) => {
                let mut axes = self.axes_arg(&v, rank, "`axis`")?;
                axes.sort_unstable();
                if axes.windows(2).any(|w| w[0] == w[1]) {
                    return Err(RunError::value("an axis is reduced twice"));
                }
                Ok(Some(axes))
            }
            Some(v) => Ok(Some(self.axes_arg(&Value::tuple(vec![v]), rank, "`axis`")?)),
        }
    }

    fn reduce(&mut self, path: &str, args: &mut Args) -> Result<Value, RunError> {
        let x = self.positional(args, "x", path)?;
        let axis = args.optional("axis");
        let keepdims = self.bool_arg(args, "keepdims")?;
        let accumulate = self.accumulate_arg(args)?;
        self.no_more(args, path)?;
        let t = self.to_tensor(&x)?;
        let axes = self.reduced_axes(axis, t.shape().len())?;
        let kind = match path {
            "op.sum" => Reduction::Sum,
            "op.mean" => Reduction::Mean,
            "op.max" => Reduction::Max,
            _ => Reduction::Min,
        };
        let r = match &axes {
            None => ops::reduce(&t, None, kind, accumulate)?,
            Some(axes) => {
                let mut r = t.clone();
                for &a in axes.iter().rev() {
                    r = ops::reduce(&r, Some(a), kind, accumulate)?;
                }
                r
            }
        };
        reduced(&t, r, axes.as_deref(), keepdims)
    }

    fn op_binary(&mut self, path: &str, args: &mut Args) -> Result<Value, RunError> {
        let a = self.positional(args, "a", path)?;
        let b = self.positional(args, "b", path)?;
        self.binary(if path == "op.add" { BinOp::Add } else { BinOp::Mul }, &a, &b)
    }

    /// `op.transpose(x)` swaps the last two dims, `perm=` permutes them
    /// all, `dims=(i, j)` swaps two.
    fn op_transpose(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let x = self.positional(args, "x", "op.transpose")?;
        let perm = args.optional("perm");
        let swap = args.take("dims").map(|(v, _)| v);
        self.no_more(args, "op.transpose")?;
        let t = self.to_tensor(&x)?;
        let rank = t.shape().len();
        let order = match (perm, swap) {
            (Some(p), _) if !matches!(p, Value::None) => {
                let p = self.axes_arg(&p, rank, "`perm`")?;
                let mut seen = vec![false; rank];
                if p.len() != rank || p.iter().any(|&a| std::mem::replace(&mut seen[a], true)) {
                    return Err(RunError::value(format!(
                        "`perm` of `op.transpose` must list each of the {rank} axes once"
                    )));
                }
                p
            }
            (_, Some(s)) if !matches!(s, Value::None) => {
                let s = self.axes_arg(&s, rank, "`dims`")?;
                let [i, j] = s[..] else {
                    return Err(RunError::value("`dims` of `op.transpose` names the two axes it swaps"));
                };
                let mut order: Vec<usize> = (0..rank).collect();
                order.swap(i, j);
                order
            }
            _ => return Ok(Value::Tensor(TensorValue::new(ops::transpose(&t)?))),
        };
        Ok(Value::Tensor(TensorValue::new(ops::permute(&t, &order)?)))
    }

    /// A tuple or list of axes of a tensor of `rank` dims, negative ones
    /// counted from the end.
    fn axes_arg(&self, v: &Value, rank: usize, what: &str) -> Result<Vec<usize>, RunError> {
        let Some(items) = v.items() else {
            return Err(RunError::value(format!(
                "{what} must be a tuple of axes, not {}",
                v.describe()
            )));
        };
        let r = rank as i64;
        items
            .iter()
            .map(|item| {
                let a = self.int_arg(item, "an axis")?;
                let k = if a < 0 { a + r } else { a };
                usize::try_from(k).ok().filter(|&k| k < rank).ok_or_else(|| {
                    RunError::new(
                        Code::E1007,
                        format!("axis {a} is out of range for a tensor of {rank} dims"),
                    )
                })
            })
            .collect()
    }

    /// A comprehension, evaluated at once as Python does (a generator too,
    /// to a list): its clauses nest left to right, each iterable's items
    /// taken when its clause starts, and its names are its own — a local
    /// of the same name is as it was once the comprehension is done, even
    /// when it fails.
    fn comprehension(
        &mut self,
        locals: &mut HashMap<String, Value>,
        kind: CompKind,
        (elt, value): (&Expr, Option<&Expr>),
        clauses: &[CompFor],
    ) -> Res<Value> {
        let saved: Vec<(String, Option<Value>)> = clauses
            .iter()
            .flat_map(CompFor::bound_names)
            .map(|n| (n.to_string(), locals.get(n).cloned()))
            .collect();
        let mut built = Built {
            elt,
            value,
            items: Vec::new(),
            entries: Vec::new(),
        };
        let outcome = self.comp_clauses(locals, clauses, &mut built);
        for (name, old) in saved.into_iter().rev() {
            match old {
                Some(v) => locals.insert(name, v),
                None => locals.remove(&name),
            };
        }
        outcome?;
        Ok(match kind {
            CompKind::Dict => Value::dict(built.entries),
            CompKind::List | CompKind::Generator => Value::list(built.items),
        })
    }

    /// Adds the comprehension's item (or entry) for each binding of its
    /// clauses whose conditions hold.
    fn comp_clauses(
        &mut self,
        locals: &mut HashMap<String, Value>,
        clauses: &[CompFor],
        built: &mut Built<'_>,
    ) -> Res<()> {
        let Some((clause, rest)) = clauses.split_first() else {
            let item = self.expr(locals, built.elt)?;
            match built.value {
                Some(value) => {
                    if !hashable(&item) {
                        return Err(self.fail(built.elt.span, "this key", unhashable(&item)));
                    }
                    let value = self.expr(locals, value)?;
                    set_entry(&mut built.entries, item, value);
                }
                None => built.items.push(item),
            }
            return Ok(());
        };
        let iterable = self.expr(locals, &clause.iter)?;
        let items = self
            .items_of(&iterable)
            .map_err(|e| self.fail(clause.iter.span, "this value", e))?;
        'items: for v in items {
            self.assign(locals, &clause.target, v)?;
            for cond in &clause.conds {
                if !self.condition(locals, cond)? {
                    continue 'items;
                }
            }
            self.comp_clauses(locals, rest, built)?;
        }
        Ok(())
    }

    /// The items a loop over `v` takes: a range's integers, a list's or
    /// tuple's items, a dict's keys, a string's characters, a tensor's
    /// rows.
    fn items_of(&self, v: &Value) -> Result<Vec<Value>, RunError> {
        match v {
            Value::Str(s) => Ok(s.chars().map(|c| Value::str(c.encode_utf8(&mut [0; 4]))).collect()),
            Value::Range(a, b, s) => Ok((0..range_len(*a, *b, *s))
                .map(|k| Value::Int(a + k as i64 * s))
                .collect()),
            Value::Tuple(_) | Value::List(_) => Ok(v.items().unwrap_or_default()),
            Value::Dict(entries) => Ok(entries.borrow().iter().map(|(k, _)| k.clone()).collect()),
            Value::Tensor(t) => {
                let n = t.shape().first().copied().unwrap_or(0);
                (0..n).map(|i| self.index_tensor(t, &[Sel::Index(i)])).collect()
            }
            other => Err(RunError::value(format!("cannot loop over {}", other.describe()))),
        }
    }

    /// `format(value, spec="")`, `str(value)` and `repr(value)`, which
    /// f-string fields become: a tensor of no dims formats as its element.
    fn format(&mut self, path: &str, args: &mut Args) -> Result<Value, RunError> {
        let value = self.positional(args, "value", path)?;
        let spec = if path == "format" {
            match args.optional("spec") {
                None => String::new(),
                Some(Value::Str(s)) => s.to_string(),
                Some(v) => {
                    return Err(RunError::value(format!(
                        "`spec` must be a string, not {}",
                        v.describe()
                    )))
                }
            }
        } else {
            String::new()
        };
        self.no_more(args, path)?;
        // A format spec formats a NumPy scalar's value as a Python number
        // (`f"{x[0]}"` too); `str` and `repr` print the scalar.
        let element = match &value {
            Value::Tensor(t) if path == "format" => {
                let host = t.host(self.device)?;
                host.shape().is_empty().then(|| Value::from_elem(host.get(0)))
            }
            _ => None,
        };
        let value = element.unwrap_or(value);
        let text = |v: &Value| {
            if path == "repr" {
                super::print::repr(v, &|t, form| self.tensor_text(t, form))
            } else {
                super::print::display(v, &|t, form| self.tensor_text(t, form))
            }
        };
        Ok(Value::str(&super::format::format(&value, &spec, &text)?))
    }

    /// `sum(iterable, start=0)`: Python's, the items added to `start`
    /// left to right (a tensor's rows elementwise).
    fn sum(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let iterable = self.positional(args, "iterable", "sum")?;
        let start = args.optional("start").unwrap_or(Value::Int(0));
        self.no_more(args, "sum")?;
        if let Value::Range(a, b, step) = iterable {
            // Lazily: a long range is not made into a list.
            return (0..range_len(a, b, step)).try_fold(start, |total, k| {
                self.binary(BinOp::Add, &total, &Value::Int(a + k as i64 * step))
            });
        }
        self.items_of(&iterable)?
            .iter()
            .try_fold(start, |total, item| self.binary(BinOp::Add, &total, item))
    }

    /// A string method (`STR_METHODS`) of `text`, as Python's.
    fn str_method(&mut self, text: &str, method: &str, args: &mut Args) -> Result<Value, RunError> {
        let string = |this: &mut Self, args: &mut Args, what: &str| -> Result<String, RunError> {
            match this.positional(args, what, method)? {
                Value::Str(s) => Ok(s.to_string()),
                v => Err(RunError::new(
                    Code::E1005,
                    format!("`{method}` takes a string for `{what}`, not {}", v.describe()),
                )),
            }
        };
        let optional_chars = |args: &mut Args| -> Result<Option<String>, RunError> {
            match args.optional("chars") {
                None | Some(Value::None) => Ok(None),
                Some(Value::Str(s)) => Ok(Some(s.to_string())),
                Some(v) => Err(RunError::new(
                    Code::E1005,
                    format!("`{method}` takes a string of characters, not {}", v.describe()),
                )),
            }
        };
        Ok(match method {
            "upper" => Value::str(&text.to_uppercase()),
            "lower" => Value::str(&text.to_lowercase()),
            "strip" | "lstrip" | "rstrip" => {
                let chars = optional_chars(args)?;
                let strip = |c: char| match &chars {
                    Some(set) => set.contains(c),
                    None => c.is_whitespace(),
                };
                Value::str(match method {
                    "strip" => text.trim_matches(strip),
                    "lstrip" => text.trim_start_matches(strip),
                    _ => text.trim_end_matches(strip),
                })
            }
            "startswith" | "endswith" => {
                let affixes: Vec<String> = match self.positional(args, "prefix", method)? {
                    Value::Str(s) => vec![s.to_string()],
                    Value::Tuple(items) if items.iter().all(|v| matches!(v, Value::Str(_))) => items
                        .iter()
                        .filter_map(|v| match v {
                            Value::Str(s) => Some(s.to_string()),
                            _ => None,
                        })
                        .collect(),
                    v => {
                        return Err(RunError::new(
                            Code::E1005,
                            format!("`{method}` takes a string or a tuple of strings, not {}", v.describe()),
                        ))
                    }
                };
                let within = self.char_range(text, args)?;
                Value::Bool(within.is_some_and(|(_, within)| {
                    affixes.iter().any(|a| {
                        if method == "startswith" {
                            within.starts_with(a.as_str())
                        } else {
                            within.ends_with(a.as_str())
                        }
                    })
                }))
            }
            "find" => {
                let needle = string(self, args, "sub")?;
                let at = self
                    .char_range(text, args)?
                    .and_then(|(start, within)| within.find(&needle).map(|at| within[..at].chars().count() + start));
                Value::Int(at.map_or(-1, |at| at as i64))
            }
            "count" => {
                let needle = string(self, args, "sub")?;
                let n = match self.char_range(text, args)? {
                    None => 0,
                    Some((_, within)) if needle.is_empty() => within.chars().count() + 1,
                    Some((_, within)) => within.matches(&needle).count(),
                };
                Value::Int(n as i64)
            }
            "replace" => {
                let old = string(self, args, "old")?;
                let new = string(self, args, "new")?;
                match args.optional("count") {
                    None => Value::str(&text.replace(&old, &new)),
                    Some(v) => match usize::try_from(self.int_arg(&v, "the `count` of `replace`")?) {
                        Ok(n) => Value::str(&text.replacen(&old, &new, n)),
                        Err(_) => Value::str(&text.replace(&old, &new)),
                    },
                }
            }
            "split" => {
                let sep = args.optional("sep");
                let most = match args.optional("maxsplit") {
                    None => None,
                    Some(v) => usize::try_from(self.int_arg(&v, "the `maxsplit` of `split`")?).ok(),
                };
                let parts: Vec<Value> = match sep {
                    None | Some(Value::None) => split_whitespace(text, most).into_iter().map(Value::str).collect(),
                    Some(Value::Str(sep)) if sep.is_empty() => {
                        return Err(RunError::value("`split` needs a separator that is not empty"))
                    }
                    Some(Value::Str(sep)) => match most {
                        Some(n) => text.splitn(n + 1, &*sep).map(Value::str).collect(),
                        None => text.split(&*sep).map(Value::str).collect(),
                    },
                    Some(v) => {
                        return Err(RunError::new(
                            Code::E1005,
                            format!("`split` takes a string separator, not {}", v.describe()),
                        ))
                    }
                };
                Value::list(parts)
            }
            _ => {
                // "join"
                let items = self.positional(args, "iterable", "join")?;
                let mut pieces = Vec::new();
                for item in self.items_of(&items)? {
                    match item {
                        Value::Str(s) => pieces.push(s.to_string()),
                        v => {
                            return Err(RunError::new(
                                Code::E1005,
                                format!("`join` joins strings, not {}", v.describe()),
                            ))
                        }
                    }
                }
                Value::str(&pieces.join(text))
            }
        })
    }

    /// `list(x)`, `tuple(x)` and `reversed(x)` (a list, last item first).
    fn sequence(&mut self, path: &str, args: &mut Args) -> Result<Value, RunError> {
        let iterable = args.optional("iterable").unwrap_or_else(|| Value::tuple(vec![]));
        self.no_more(args, path)?;
        let mut items = self.items_of(&iterable)?;
        Ok(match path {
            "tuple" => Value::tuple(items),
            "reversed" => {
                items.reverse();
                Value::list(items)
            }
            _ => Value::list(items),
        })
    }

    /// `any(x)` and `all(x)`: Python's, by the items' truth.
    fn any_all(&mut self, path: &str, args: &mut Args) -> Result<Value, RunError> {
        let iterable = self.positional(args, "iterable", path)?;
        self.no_more(args, path)?;
        let items = self.items_of(&iterable)?;
        let mut truths = items.iter().map(|v| {
            v.truthy()
                .ok_or_else(|| RunError::value(format!("the truth of {} is ambiguous", v.describe())))
        });
        let found = if path == "any" {
            truths.try_fold(false, |acc, t| t.map(|t| acc || t))?
        } else {
            truths.try_fold(true, |acc, t| t.map(|t| acc && t))?
        };
        Ok(Value::Bool(found))
    }

    /// `round(number, ndigits=None)`: Python's. Without `ndigits` the
    /// nearest int, ties to even; with it a float, the number's exact value
    /// rounded to that many decimal places (as Python rounds it).
    fn round(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let number = self.positional(args, "number", "round")?;
        let digits = args.optional("ndigits");
        self.no_more(args, "round")?;
        if let Value::Int(i) = number {
            // To a multiple of 10^-n for a negative `ndigits` n, ties to even.
            return match digits {
                Some(Value::Int(n)) if n < 0 => {
                    let Some(unit) = u32::try_from(-n).ok().and_then(|e| 10i64.checked_pow(e)) else {
                        return Ok(Value::Int(0));
                    };
                    let (q, r) = (i.div_euclid(unit), i.rem_euclid(unit));
                    let up = 2 * r > unit || (2 * r == unit && q % 2 != 0);
                    (q + i64::from(up))
                        .checked_mul(unit)
                        .map(Value::Int)
                        .ok_or_else(|| RunError::value(format!("round({i}, {n}) does not fit in a 64-bit int")))
                }
                None | Some(Value::None | Value::Int(_)) => Ok(Value::Int(i)),
                Some(v) => Err(RunError::new(
                    Code::E1005,
                    format!("`ndigits` of `round` is an int, not {}", v.describe()),
                )),
            };
        }
        let x = as_f64(&number).ok_or_else(|| {
            RunError::new(
                Code::E1005,
                format!("`round` needs a number, not {}", number.describe()),
            )
        })?;
        match digits {
            None | Some(Value::None) => {
                let r = x.round_ties_even();
                if !r.is_finite() || r.abs() >= 9.2e18 {
                    return Err(RunError::value(format!(
                        "cannot round {} to an int",
                        super::print::python_float(x)
                    )));
                }
                Ok(Value::Int(r as i64))
            }
            Some(Value::Int(_)) if !x.is_finite() => Ok(Value::Float(x)),
            // Past 300 digits every float is its own rounding.
            Some(Value::Int(n)) if n > 300 => Ok(Value::Float(x)),
            Some(Value::Int(n)) if n >= 0 => {
                let text = format!("{x:.*}", n as usize);
                Ok(Value::Float(text.parse().unwrap_or(x)))
            }
            // To a multiple of 10^-n, ties to even, as CPython rounds.
            Some(Value::Int(n)) if n >= -308 => {
                let unit = 10f64.powi(-n as i32);
                let y = x / unit;
                let mut z = y.round();
                if (y - z).abs() == 0.5 {
                    z = 2.0 * (y / 2.0).round();
                }
                Ok(Value::Float(z * unit))
            }
            Some(Value::Int(_)) => Ok(Value::Float(0.0 * x)),
            Some(v) => Err(RunError::new(
                Code::E1005,
                format!("`ndigits` of `round` is an int, not {}", v.describe()),
            )),
        }
    }

    /// `divmod(a, b)`: Python's `(a // b, a % b)`, for numbers as `//` and
    /// `%` compute them (and elementwise for tensors).
    fn divmod(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let a = self.positional(args, "a", "divmod")?;
        let b = self.positional(args, "b", "divmod")?;
        self.no_more(args, "divmod")?;
        let quotient = self.binary(BinOp::FloorDiv, &a, &b)?;
        let remainder = self.binary(BinOp::Mod, &a, &b)?;
        Ok(Value::tuple(vec![quotient, remainder]))
    }

    /// `pow(base, exp, mod=None)`: Python's. Without `mod` it is `base **
    /// exp`; with it, of ints and a non-negative `exp`, `base ** exp % mod`
    /// by squaring (the remainder with `mod`'s sign).
    fn pow(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let base = self.positional(args, "base", "pow")?;
        let exp = self.positional(args, "exp", "pow")?;
        let modulus = args.optional("mod");
        self.no_more(args, "pow")?;
        let m = match modulus {
            None | Some(Value::None) => return self.binary(BinOp::Pow, &base, &exp),
            Some(m) => self.int_arg(&m, "the modulus of `pow`")?,
        };
        let b = self.int_arg(&base, "the base of `pow` with a modulus")?;
        let mut e = self.int_arg(&exp, "the exponent of `pow` with a modulus")?;
        if m == 0 {
            return Err(RunError::value("pow() 3rd argument cannot be 0"));
        }
        if e < 0 {
            return Err(RunError::value(
                "pow() with a modulus takes a non-negative exponent here",
            ));
        }
        let m128 = i128::from(m);
        let mut result: i128 = 1 % m128;
        let mut square = i128::from(b).rem_euclid(m128.abs());
        while e > 0 {
            if e & 1 == 1 {
                result = result * square % m128;
            }
            square = square * square % m128;
            e >>= 1;
        }
        // Python's remainder takes the modulus's sign.
        let r = result.rem_euclid(m128.abs());
        let r = if m < 0 && r != 0 { r + m128 } else { r };
        Ok(Value::Int(r as i64))
    }

    /// `hex(n)`, `oct(n)`, `bin(n)`: an int's digits in base 16, 8 or 2
    /// after Python's prefix (`-0xff` for -255).
    fn digits(&mut self, path: &str, args: &mut Args) -> Result<Value, RunError> {
        let n = self.positional(args, "n", path)?;
        self.no_more(args, path)?;
        let n = self.int_arg(&n, &format!("the argument of `{path}`"))?;
        let magnitude = n.unsigned_abs();
        let digits = match path {
            "hex" => format!("0x{magnitude:x}"),
            "oct" => format!("0o{magnitude:o}"),
            _ => format!("0b{magnitude:b}"),
        };
        Ok(Value::str(&format!("{}{digits}", if n < 0 { "-" } else { "" })))
    }

    /// `chr(i)`: the one-character string of code point `i`.
    fn chr(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let i = self.positional(args, "i", "chr")?;
        self.no_more(args, "chr")?;
        let i = self.int_arg(&i, "the argument of `chr`")?;
        let c = u32::try_from(i)
            .ok()
            .filter(|&u| u < 0x11_0000)
            .ok_or_else(|| RunError::value("chr() arg not in range(0x110000)"))?;
        // A surrogate is a code point but not a `char`: Python makes a
        // string of it, which cannot be printed.
        let c =
            char::from_u32(c).ok_or_else(|| RunError::value(format!("chr({i}) is a surrogate, not a character")))?;
        Ok(Value::str(&c.to_string()))
    }

    /// `ord(c)`: the code point of a one-character string.
    fn ord(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let c = self.positional(args, "c", "ord")?;
        self.no_more(args, "ord")?;
        let Value::Str(text) = &c else {
            return Err(RunError::new(
                Code::E1005,
                format!("`ord` takes a one-character string, not {}", c.describe()),
            ));
        };
        let mut chars = text.chars();
        match (chars.next(), chars.next()) {
            (Some(ch), None) => Ok(Value::Int(i64::from(u32::from(ch)))),
            _ => Err(RunError::value(format!(
                "ord() expected a character, but string of length {} found",
                text.chars().count()
            ))),
        }
    }

    /// `sorted(iterable, reverse=False)`: Python's, a stable sort into a
    /// new list, in [`py_order`]'s order.
    fn sorted(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let iterable = self.positional(args, "iterable", "sorted")?;
        let reverse = reverse_arg(args, "sorted")?;
        self.no_more(args, "sorted")?;
        let mut items = self.items_of(&iterable)?;
        py_sort(&mut items, reverse)?;
        Ok(Value::list(items))
    }

    /// `sorted`, `min` and `max` with a `key=` function, as Python's: the
    /// items ordered by what it gives for each (called once an item, in
    /// order); `min` and `max` give the first item whose key is smallest
    /// or largest.
    fn keyed(&mut self, path: &'static str, key: &Value, key_span: Span, args: &mut Args, span: Span) -> Res<Value> {
        let fail = |this: &Self, e: RunError| this.fail(span, "in this call", e);
        let (items, reverse) = if path == "sorted" {
            let iterable = self.positional(args, "iterable", path).map_err(|e| fail(self, e))?;
            let reverse = reverse_arg(args, path).map_err(|e| fail(self, e))?;
            (self.items_of(&iterable).map_err(|e| fail(self, e))?, reverse)
        } else {
            (self.extremum_values(path, args).map_err(|e| fail(self, e))?, false)
        };
        self.no_more(args, path).map_err(|e| fail(self, e))?;
        let mut keyed = Vec::with_capacity(items.len());
        for item in items {
            keyed.push((self.call_value(key, item.clone(), key_span)?, item));
        }
        if path == "sorted" {
            py_sort_by(&mut keyed, |(k, _)| k, reverse).map_err(|e| fail(self, e))?;
            return Ok(Value::list(keyed.into_iter().map(|(_, item)| item).collect()));
        }
        let mut best: Option<(Value, Value)> = None;
        for (k, item) in keyed {
            let better = match &best {
                None => true,
                Some((best_key, _)) => py_compare(extremum_op(path), &k, best_key).map_err(|e| fail(self, e))?,
            };
            if better {
                best = Some((k, item));
            }
        }
        best.map(|(_, item)| item).ok_or_else(|| fail(self, of_nothing(path)))
    }

    /// Calls `f`, a key function (a function of the program, a builtin or a
    /// dtype), with one argument.
    fn call_value(&mut self, f: &Value, arg: Value, span: Span) -> Res<Value> {
        let one = Args {
            positional: vec![(arg, span)],
            keyword: Vec::new(),
        };
        match f {
            &Value::Function(unit, ref name) => {
                let Some((def, role)) = self.program.units[unit].function(name) else {
                    return Err(self.fail(span, "this key", unsupported(format!("`{name}` is not a function"))));
                };
                let (values, sites) = self.bind_params(unit, def, one, span)?;
                self.call_function(unit, def, role, values, Some(sites), span)
            }
            Value::Builtin(path) => {
                let mut one = one;
                self.builtin(path, &mut one, span)
            }
            Value::DType(d) => {
                let arg = &one.positional[0].0;
                self.cast(arg, *d, false).map_err(|e| self.fail(span, "this key", e))
            }
            other => Err(self.fail(
                span,
                "this key",
                unsupported(format!("{} is not callable", other.describe())),
            )),
        }
    }

    /// `enumerate(iterable, start=0)`: a list of (count, item) pairs.
    fn enumerate(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let iterable = self.positional(args, "iterable", "enumerate")?;
        let start = match args.optional("start") {
            None => 0,
            Some(v) => self.int_arg(&v, "`start`")?,
        };
        self.no_more(args, "enumerate")?;
        let items = self.items_of(&iterable)?;
        Ok(Value::tuple(
            items
                .into_iter()
                .zip(start..)
                .map(|(v, i)| Value::tuple(vec![Value::Int(i), v]))
                .collect(),
        ))
    }

    /// `zip(a, b, …)`: a list of tuples, as long as the shortest.
    fn zip(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let lists: Vec<Vec<Value>> = std::mem::take(&mut args.positional)
            .iter()
            .map(|(v, _)| self.items_of(v))
            .collect::<Result<_, _>>()?;
        let n = lists.iter().map(Vec::len).min().unwrap_or(0);
        Ok(Value::tuple(
            (0..n)
                .map(|i| Value::tuple(lists.iter().map(|l| l[i].clone()).collect()))
                .collect(),
        ))
    }

    /// `op.where(condition, x, y)` on the host.
    fn op_where(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let cond = self.positional(args, "condition", "op.where")?;
        let x = self.positional(args, "x", "op.where")?;
        let y = self.positional(args, "y", "op.where")?;
        self.no_more(args, "op.where")?;
        self.choose(&cond, &x, &y, "op.where")
    }

    /// `x` where the bool `cond` holds, else `y`, elementwise with
    /// broadcasting, for `path` (`op.where`, and `min` and `max` of tensors).
    fn choose(&self, cond: &Value, x: &Value, y: &Value, path: &str) -> Result<Value, RunError> {
        let hosts: Vec<Option<std::cell::Ref<'_, Tensor>>> = [cond, x, y]
            .iter()
            .map(|v| match v {
                Value::Tensor(t) => t.host(self.device).map(Some),
                _ => Ok(None),
            })
            .collect::<Result<_, _>>()?;
        if let Some(t) = hosts[0].as_ref().filter(|t| t.dtype() != DType::Bool) {
            return Err(RunError::new(
                Code::E1005,
                format!("the condition of `op.where` is a bool tensor, not {}", t.dtype().name()),
            ));
        }
        let out = ops::choose(
            operand(hosts[0].as_deref(), cond, path)?,
            operand(hosts[1].as_deref(), x, path)?,
            operand(hosts[2].as_deref(), y, path)?,
        )?;
        Ok(Value::Tensor(TensorValue::new(out)))
    }

    /// The `tensors` and `axis` of `op.concat` and `op.stack`.
    fn tensors_and_axis(&mut self, args: &mut Args, path: &str) -> Result<(Vec<Tensor>, Option<Value>), RunError> {
        let list = self.positional(args, "tensors", path)?;
        let axis = args.optional("axis");
        self.no_more(args, path)?;
        let Some(items) = list.items() else {
            return Err(RunError::value(format!(
                "`{path}` joins a list of tensors, not {}",
                list.describe()
            )));
        };
        let tensors = items.iter().map(|v| self.to_tensor(v)).collect::<Result<_, _>>()?;
        Ok((tensors, axis))
    }

    /// `op.concat(tensors, axis=0)` on the host.
    fn op_concat(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let (tensors, axis) = self.tensors_and_axis(args, "op.concat")?;
        let rank = tensors.first().map_or(0, |t| t.shape().len());
        let axis = match axis {
            None | Some(Value::None) => 0,
            Some(v) => self.axes_arg(&Value::tuple(vec![v]), rank, "`axis`")?[0],
        };
        Ok(Value::Tensor(TensorValue::new(ops::concat(&tensors, axis)?)))
    }

    /// `op.stack(tensors, axis=0)`: tensors of one shape joined along a
    /// new dim at `axis` (each given a dim of 1 there, then concatenated).
    fn op_stack(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let (tensors, axis) = self.tensors_and_axis(args, "op.stack")?;
        let shape = tensors.first().map(|t| t.shape().to_vec()).unwrap_or_default();
        if let Some(other) = tensors.iter().find(|t| t.shape() != shape.as_slice()) {
            return Err(RunError::new(
                Code::E0309,
                format!(
                    "`op.stack` takes tensors of one shape, not {} and {}",
                    crate::tensor::shape_text(&shape),
                    crate::tensor::shape_text(other.shape())
                ),
            ));
        }
        let axis = match axis {
            None | Some(Value::None) => 0,
            Some(v) => self.axes_arg(&Value::tuple(vec![v]), shape.len() + 1, "`axis`")?[0],
        };
        let mut unit = shape.clone();
        unit.insert(axis, 1);
        let parts: Vec<Tensor> = tensors
            .into_iter()
            .map(|t| t.reshaped(&unit))
            .collect::<Result<_, _>>()?;
        Ok(Value::Tensor(TensorValue::new(ops::concat(&parts, axis)?)))
    }

    /// `op.matmul(a, b, accumulate=T)` on the host: a float64 reference,
    /// converted to `T` (by default the dtype of `a`). `tile_shape` is a
    /// scheduling hint with no meaning here.
    fn op_matmul(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let a = self.positional(args, "a", "op.matmul")?;
        let b = self.positional(args, "b", "op.matmul")?;
        let accumulate = self.accumulate_arg(args)?;
        args.take("tile_shape");
        self.no_more(args, "op.matmul")?;
        let (a, b) = (self.to_tensor(&a)?, self.to_tensor(&b)?);
        let out = accumulate.unwrap_or(a.dtype());
        Ok(Value::Tensor(TensorValue::new(ops::matmul(&a, &b, out)?)))
    }

    /// `op.softmax(x, axis=-1, accumulate=T)`, `op.log_softmax` and
    /// `op.cumsum` on the host: in float64 along `axis` (negative counts
    /// from the end), converted to `T` (by default the dtype of `x`).
    fn op_along_axis(&mut self, path: &str, args: &mut Args) -> Result<Value, RunError> {
        let x = self.positional(args, "x", path)?;
        let axis = if args.positional.is_empty() {
            args.take("axis")
        } else {
            Some(args.positional.remove(0))
        };
        let axis = match axis {
            None => -1,
            Some((Value::Int(a), _)) => a,
            Some((v, _)) => {
                return Err(RunError::value(format!(
                    "the `axis` of `{path}` is an integer, not {}",
                    v.describe()
                )))
            }
        };
        let accumulate = self.accumulate_arg(args)?;
        self.no_more(args, path)?;
        let t = self.to_tensor(&x)?;
        let rank = t.shape().len() as i64;
        let at = if axis < 0 { axis + rank } else { axis };
        if !(0..rank.max(1)).contains(&at) {
            return Err(RunError::new(
                Code::E1007,
                format!("axis {axis} of `{path}` is out of range for a tensor of {rank} dims"),
            ));
        }
        let out = accumulate.unwrap_or(t.dtype());
        if path == "op.cumsum" {
            return Ok(Value::Tensor(TensorValue::new(ops::cumsum(&t, at as usize, out)?)));
        }
        let log = path == "op.log_softmax";
        Ok(Value::Tensor(TensorValue::new(ops::softmax(
            &t,
            at as usize,
            out,
            log,
        )?)))
    }

    /// `op.layernorm(x, weight, bias, eps=…, accumulate=T)` and
    /// `op.rmsnorm(x, weight, eps=…, accumulate=T)` on the host: float64
    /// references over the last axis, converted to `T` (by default the dtype
    /// of `x`).
    fn op_norm(&mut self, path: &str, args: &mut Args) -> Result<Value, RunError> {
        let rms = path == "op.rmsnorm";
        let x = self.positional(args, "x", path)?;
        let weight = self.positional(args, "weight", path)?;
        let bias = if rms {
            None
        } else {
            Some(self.positional(args, "bias", path)?)
        };
        let eps = if args.positional.is_empty() {
            args.take("eps")
        } else {
            Some(args.positional.remove(0))
        };
        let eps = match eps {
            None => Ok(if rms { 1e-6 } else { 1e-5 }),
            Some((v, _)) => {
                as_f64(&v).ok_or_else(|| RunError::value(format!("`eps` must be a number, not {}", v.describe())))
            }
        }?;
        let accumulate = self.accumulate_arg(args)?;
        self.no_more(args, path)?;
        let t = self.to_tensor(&x)?;
        let w = self.to_tensor(&weight)?;
        let b = bias.map(|b| self.to_tensor(&b)).transpose()?;
        let out = accumulate.unwrap_or(t.dtype());
        Ok(Value::Tensor(TensorValue::new(ops::norm_last(
            &t,
            Some(&w),
            b.as_ref(),
            eps,
            rms,
            out,
        )?)))
    }

    /// `op.flash_attention(q, k, v, causal=False, scale=None, accumulate=T)`
    /// on the host: attention computed in float64, converted to `T` (by
    /// default the dtype of `q`); `scale` defaults to 1/√D.
    fn op_attention(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let path = "op.flash_attention";
        let q = self.positional(args, "q", path)?;
        let k = self.positional(args, "k", path)?;
        let v = self.positional(args, "v", path)?;
        let causal = self.bool_arg(args, "causal")?;
        let scale = match args.take("scale") {
            None | Some((Value::None, _)) => None,
            Some((v, _)) => Some(
                as_f64(&v).ok_or_else(|| RunError::value(format!("`scale` must be a number, not {}", v.describe())))?,
            ),
        };
        let accumulate = self.accumulate_arg(args)?;
        self.no_more(args, path)?;
        let (q, k, v) = (self.to_tensor(&q)?, self.to_tensor(&k)?, self.to_tensor(&v)?);
        let out = accumulate.unwrap_or(q.dtype());
        Ok(Value::Tensor(TensorValue::new(ops::attention(
            &q, &k, &v, causal, scale, out,
        )?)))
    }

    fn accumulate_arg(&self, args: &mut Args) -> Result<Option<DType>, RunError> {
        match args.take("accumulate") {
            None | Some((Value::None, _)) => Ok(None),
            Some((Value::DType(d), _)) => Ok(Some(d)),
            Some((v, _)) => Err(RunError::value(format!(
                "`accumulate` must be a dtype, not {}",
                v.describe()
            ))),
        }
    }

    fn op_reshape(&mut self, args: &mut Args) -> Result<Value, RunError> {
        let x = self.positional(args, "x", "op.reshape")?;
        let shape = self.positional(args, "shape", "op.reshape")?;
        let t = self.to_tensor(&x)?;
        // One size written -1 is what the others leave (NumPy's rule).
        let mut sizes: Vec<Value> = match shape.items() {
            Some(items) => items.to_vec(),
            None => vec![shape],
        };
        let inferred: Vec<usize> = (0..sizes.len())
            .filter(|&i| matches!(sizes[i], Value::Int(-1)))
            .collect();
        if let [at] = inferred[..] {
            let mut others = sizes.clone();
            others.remove(at);
            let rest: usize = self
                .shape_of(&[(Value::tuple(others), Span::new(0, 0))])?
                .iter()
                .product();
            if rest == 0 || t.numel() % rest != 0 {
                return Err(RunError::value(format!(
                    "cannot reshape {} elements with -1 beside sizes whose product is {rest}",
                    t.numel()
                )));
            }
            sizes[at] = Value::Int((t.numel() / rest) as i64);
        } else if inferred.len() > 1 {
            return Err(RunError::value("a reshape infers at most one size (-1)"));
        }
        let shape = self.shape_of(&[(Value::tuple(sizes), Span::new(0, 0))])?;
        Ok(Value::Tensor(TensorValue::new(t.reshaped(&shape)?)))
    }
}

/// The result `r` of reducing `t` over `axes` (all when None): with
/// `keepdims` the reduced dims stay, as 1; a result of no dims is a number.
fn reduced(t: &Tensor, r: Tensor, axes: Option<&[usize]>, keepdims: bool) -> Result<Value, RunError> {
    let r = if keepdims {
        let shape: Vec<usize> = (0..t.shape().len())
            .map(|a| match axes {
                Some(axes) if !axes.contains(&a) => t.shape()[a],
                _ => 1,
            })
            .collect();
        r.reshaped(&shape)?
    } else {
        r
    };
    // A whole reduction is NumPy's scalar of its dtype, a tensor of no
    // dims, as `np.sum` gives.
    Ok(Value::Tensor(TensorValue::new(r)))
}

/// A tensor operand, or a scalar one.
fn operand<'t>(t: Option<&'t Tensor>, v: &Value, what: &str) -> Result<Operand<'t>, RunError> {
    match (t, elem_of(v)) {
        (Some(t), _) => Ok(Operand::Tensor(t)),
        (None, Some(e)) => Ok(Operand::Scalar(e)),
        (None, None) => Err(RunError::new(
            Code::E1005,
            format!("`{what}` does not apply to {}", v.describe()),
        )),
    }
}

/// The value of integers, module constants (`global`: `BLOCK`, one
/// imported, `consts.BLOCK`) and tuples of them (a kernel's
/// `tile[(BLOCK,)]`).
fn constant(e: &Expr, global: &dyn Fn(&str) -> Option<Value>) -> Option<Value> {
    match &e.unparen().kind {
        ExprKind::Int(v) => i64::try_from(*v).ok().map(Value::Int),
        ExprKind::Name(_) | ExprKind::Attr { .. } => global(&dotted_name(e)?),
        ExprKind::Tuple(items) | ExprKind::List(items) => items
            .iter()
            .map(|i| constant(i, global))
            .collect::<Option<Vec<_>>>()
            .map(Value::tuple),
        _ => None,
    }
}

/// Python's arithmetic on host scalars: ints are 64-bit and overflow is an
/// error, `/` gives a float, `//` and `%` floor.
fn scalar_binary(op: BinOp, a: &Value, b: &Value) -> Result<Value, RunError> {
    use BinOp::*;
    let overflow = || RunError::value(format!("integer overflow in `{}`", op.symbol()));
    match (op, a, b) {
        (Eq, _, _) => return Ok(Value::Bool(equal(a, b))),
        (Ne, _, _) => return Ok(Value::Bool(!equal(a, b))),
        (In | NotIn, x, Value::Dict(entries)) => {
            let found = entries.borrow().iter().any(|(k, _)| equal(k, x));
            return Ok(Value::Bool(found == (op == In)));
        }
        (In | NotIn, Value::Str(part), Value::Str(text)) => {
            return Ok(Value::Bool(text.contains(&**part) == (op == In)));
        }
        (In | NotIn, x, items @ (Value::Tuple(_) | Value::List(_))) => {
            let found = items.items().unwrap_or_default().iter().any(|v| equal(v, x));
            return Ok(Value::Bool(found == (op == In)));
        }
        (In | NotIn, Value::Int(x), Value::Range(s, e, st)) => {
            let inside = range_len(*s, *e, *st) > 0
                && if *st > 0 { x >= s && x < e } else { x <= s && x > e }
                && (x - s) % st == 0;
            return Ok(Value::Bool(inside == (op == In)));
        }
        (Add, Value::Str(x), Value::Str(y)) => return Ok(Value::str(&format!("{x}{y}"))),
        (Lt | Le | Gt | Ge, Value::Str(_) | Value::List(_) | Value::Tuple(_), _)
        | (Lt | Le | Gt | Ge, _, Value::Str(_) | Value::List(_) | Value::Tuple(_)) => {
            return Ok(Value::Bool(py_compare(op, a, b)?));
        }
        // `"ab" * n`: the text n times over; empty for n ≤ 0.
        (Mul, Value::Str(text), Value::Int(n)) | (Mul, Value::Int(n), Value::Str(text)) => {
            let times = usize::try_from(*n).unwrap_or(0);
            if text.len().checked_mul(times).is_none_or(|total| total > MAX_REPEATED) {
                return Err(RunError::value(format!(
                    "a string of {} bytes repeated {n} times is more than host code holds",
                    text.len()
                )));
            }
            return Ok(Value::str(&text.repeat(times)));
        }
        (Add, Value::Tuple(_), Value::Tuple(_)) | (Add, Value::List(_), Value::List(_)) => {
            let (x, y) = (a.items().unwrap_or_default(), b.items().unwrap_or_default());
            return Ok(a.same_kind(x.into_iter().chain(y).collect()));
        }
        // `[x] * n`: the items n times over (the same values, as in Python:
        // `[[0] * 2] * 2` holds one inner list twice); none for n ≤ 0.
        (Mul, seq @ (Value::Tuple(_) | Value::List(_)), Value::Int(n))
        | (Mul, Value::Int(n), seq @ (Value::Tuple(_) | Value::List(_))) => {
            let items = seq.items().unwrap_or_default();
            let times = usize::try_from(*n).unwrap_or(0);
            if items.len().checked_mul(times).is_none_or(|total| total > MAX_REPEATED) {
                return Err(RunError::value(format!(
                    "a sequence of {} items repeated {n} times is more than host code holds",
                    items.len()
                )));
            }
            return Ok(seq.same_kind(items.iter().cycle().take(items.len() * times).cloned().collect()));
        }
        _ => {}
    }
    if let (Some(x), Some(y)) = (int_of(a), int_of(b)) {
        return Ok(match op {
            Add => Value::Int(x.checked_add(y).ok_or_else(overflow)?),
            Sub => Value::Int(x.checked_sub(y).ok_or_else(overflow)?),
            Mul => Value::Int(x.checked_mul(y).ok_or_else(overflow)?),
            Div if y == 0 => return Err(RunError::value("division by zero")),
            Div => Value::Float(x as f64 / y as f64),
            Pow if y < 0 => float_pow(x as f64, y as f64)?,
            Pow => Value::Int(
                u32::try_from(y)
                    .ok()
                    .and_then(|e| x.checked_pow(e))
                    .ok_or_else(overflow)?,
            ),
            Shl => {
                if !(0..64).contains(&y) {
                    return Err(RunError::value(format!("shift by {y} bits")));
                }
                let r = x << y;
                if r >> y != x {
                    return Err(overflow());
                }
                Value::Int(r)
            }
            Lt => Value::Bool(x < y),
            Le => Value::Bool(x <= y),
            Gt => Value::Bool(x > y),
            Ge => Value::Bool(x >= y),
            // Python's ints have no width: MIN // -1 does not fit in 64
            // bits, and a right shift by 64 or more leaves the sign.
            FloorDiv if x == i64::MIN && y == -1 => return Err(overflow()),
            Shr if y < 0 => return Err(RunError::value("negative shift count")),
            Shr => Value::Int(x >> y.min(63)),
            FloorDiv | Mod | BitAnd | BitOr | BitXor => Value::Int(ops::int_op(op, x, y)?),
            _ => {
                return Err(RunError::new(
                    Code::E1005,
                    format!("`{}` does not apply to ints", op.symbol()),
                ))
            }
        });
    }
    let (Some(x), Some(y)) = (as_f64(a), as_f64(b)) else {
        return Err(inapplicable(op, a, b));
    };
    Ok(match op {
        Add => Value::Float(x + y),
        Sub => Value::Float(x - y),
        Mul => Value::Float(x * y),
        Div | FloorDiv | Mod if y == 0.0 => return Err(RunError::value("float division by zero")),
        Div => Value::Float(x / y),
        FloorDiv => Value::Float(ops::divmod(x, y).0),
        Mod => Value::Float(ops::divmod(x, y).1),
        Pow => float_pow(x, y)?,
        Lt | Le | Gt | Ge => {
            use std::cmp::Ordering::*;
            let ord = number_cmp(a, b).flatten();
            Value::Bool(match op {
                Lt => ord == Some(Less),
                Le => matches!(ord, Some(Less | Equal)),
                Gt => ord == Some(Greater),
                _ => matches!(ord, Some(Greater | Equal)),
            })
        }
        _ => {
            return Err(RunError::new(
                Code::E1005,
                format!("`{}` does not apply to floats", op.symbol()),
            ))
        }
    })
}

/// `text.split()` or `text.split(None, most)`: runs of whitespace separate
/// the words; after `most` splits the rest is one word, its leading
/// whitespace dropped and its trailing kept, as Python's.
fn split_whitespace(text: &str, most: Option<usize>) -> Vec<&str> {
    let mut words = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        if most.is_some_and(|n| words.len() == n) {
            words.push(rest);
            break;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        words.push(&rest[..end]);
        rest = rest[end..].trim_start();
    }
    words
}

/// `x ** y` of Python floats, with Python's errors where it has no float:
/// zero to a negative power, a negative number to a fractional one (a
/// complex number), and a finite power too large for a float.
fn float_pow(x: f64, y: f64) -> Result<Value, RunError> {
    if x == 0.0 && y < 0.0 {
        return Err(RunError::value("0.0 cannot be raised to a negative power"));
    }
    if x < 0.0 && y.is_finite() && y.fract() != 0.0 {
        return Err(RunError::value(format!(
            "{x:?} ** {y:?} is a complex number, which host code does not have"
        )));
    }
    let r = x.powf(y);
    if r.is_infinite() && x.is_finite() && y.is_finite() {
        return Err(RunError::value(format!("{x:?} ** {y:?} overflows a float")));
    }
    Ok(Value::Float(r))
}

/// The comparison by which a value beats the best so far for `min` (`<`)
/// or `max` (`>`).
fn extremum_op(path: &str) -> BinOp {
    if path == "min" {
        BinOp::Lt
    } else {
        BinOp::Gt
    }
}

/// E1005 for `min` or `max` (`path`) of no values.
fn of_nothing(path: &str) -> RunError {
    RunError::new(
        Code::E1005,
        format!("`{path}` of nothing: give it values or a non-empty list"),
    )
}

/// The `reverse=` of `sorted` and `list.sort`: True or False (False
/// without one).
fn reverse_arg(args: &mut Args, what: &str) -> Result<bool, RunError> {
    match args.optional("reverse") {
        None => Ok(false),
        Some(v) => v
            .truthy()
            .ok_or_else(|| RunError::value(format!("`reverse` of `{what}` must be True or False"))),
    }
}

/// Sorts `items` as Python's `sorted` and `list.sort` do. Python compares
/// with `<`, under which a NaN is never smaller: a stable sort that keeps
/// it where the comparisons leave it. `reverse` reverses the comparison,
/// so equal items keep their order either way. Items Python cannot order
/// (a string and a number) are the first comparison's error, the items
/// then in some order.
fn py_sort(items: &mut [Value], reverse: bool) -> Result<(), RunError> {
    py_sort_by(items, |v| v, reverse)
}

/// [`py_sort`] of items by the value `key` gives for each.
fn py_sort_by<T>(items: &mut [T], key: impl Fn(&T) -> &Value, reverse: bool) -> Result<(), RunError> {
    let mut failed = None;
    items.sort_by(|a, b| {
        let (x, y) = if reverse { (key(b), key(a)) } else { (key(a), key(b)) };
        match py_order(BinOp::Lt, x, y) {
            Ok(o) => o.unwrap_or(std::cmp::Ordering::Equal),
            Err(e) => {
                failed.get_or_insert(e);
                std::cmp::Ordering::Equal
            }
        }
    });
    failed.map_or(Ok(()), Err)
}

/// E1005 for `op` on two values it does not apply to (Python's
/// `TypeError`).
fn inapplicable(op: BinOp, a: &Value, b: &Value) -> RunError {
    RunError::new(
        Code::E1005,
        format!(
            "`{}` does not apply to {} and {}",
            op.symbol(),
            a.describe(),
            b.describe()
        ),
    )
}

/// Python's order of two values under `op` (`<`, `<=`, `>`, `>=`): numbers
/// by value (ints exactly; None when a NaN makes them unordered), strings
/// by code point, lists and tuples (each with its own kind) by their first
/// unequal items, then by length. Other pairs are E1005, as Python's
/// `TypeError`; lists nested deeper than `MAX_NESTING` too.
fn py_order(op: BinOp, a: &Value, b: &Value) -> Result<Option<std::cmp::Ordering>, RunError> {
    py_order_within(op, a, b, MAX_NESTING)
}

/// Whether `a op b` holds under [`py_order`] (`op` one of `<`, `<=`, `>`,
/// `>=`): never for an unordered pair (a NaN).
fn py_compare(op: BinOp, a: &Value, b: &Value) -> Result<bool, RunError> {
    Ok(py_order(op, a, b)?.is_some_and(|o| match op {
        BinOp::Lt => o.is_lt(),
        BinOp::Le => o.is_le(),
        BinOp::Gt => o.is_gt(),
        _ => o.is_ge(),
    }))
}

/// A Python int's value: an int's, or a bool's 0 or 1.
fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

fn py_order_within(op: BinOp, a: &Value, b: &Value, depth: usize) -> Result<Option<std::cmp::Ordering>, RunError> {
    if depth == 0 {
        return Err(inapplicable(op, a, b));
    }
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => Ok(Some(x.cmp(y))),
        (Value::List(_), Value::List(_)) | (Value::Tuple(_), Value::Tuple(_)) => {
            let (x, y) = (a.items().unwrap_or_default(), b.items().unwrap_or_default());
            match x.iter().zip(&y).find(|(p, q)| !equal(p, q)) {
                Some((p, q)) => py_order_within(op, p, q, depth - 1),
                None => Ok(Some(x.len().cmp(&y.len()))),
            }
        }
        _ => match (int_of(a), int_of(b)) {
            (Some(x), Some(y)) => Ok(Some(x.cmp(&y))),
            _ => match (as_f64(a), as_f64(b)) {
                (Some(x), Some(y)) => Ok(x.partial_cmp(&y)),
                _ => Err(inapplicable(op, a, b)),
            },
        },
    }
}

/// Python's `is`: the same list, dict, tuple or tensor; for None, bools,
/// numbers of one type, strings, dtypes and functions, which host code
/// does not tell apart by identity, the same value.
fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::List(x), Value::List(y)) => Rc::ptr_eq(x, y),
        (Value::Dict(x), Value::Dict(y)) => Rc::ptr_eq(x, y),
        (Value::Tuple(x), Value::Tuple(y)) => Rc::ptr_eq(x, y),
        (Value::Tensor(x), Value::Tensor(y)) => x.same(y),
        (Value::Int(_), Value::Float(_)) | (Value::Float(_), Value::Int(_)) => false,
        (Value::Bool(_), Value::Int(_) | Value::Float(_)) | (Value::Int(_) | Value::Float(_), Value::Bool(_)) => false,
        (Value::List(_) | Value::Dict(_) | Value::Tuple(_) | Value::Tensor(_), _)
        | (_, Value::List(_) | Value::Dict(_) | Value::Tuple(_) | Value::Tensor(_)) => false,
        _ => equal(a, b),
    }
}

/// Python's `==` of two values. Lists and dicts nested deeper than
/// `MAX_NESTING` (a list that holds itself, say) are unequal.
/// Two numbers ordered as Python orders them, exactly: an int against a
/// float is not converted to a float first (`9007199254740993 ==
/// 9007199254740992.0` held, as both are 2^53 in `f64`). `None` when
/// either is not a number; `Some(None)` when a NaN makes them unordered.
fn number_cmp(a: &Value, b: &Value) -> Option<Option<std::cmp::Ordering>> {
    Some(match (int_of(a), int_of(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        (Some(i), None) => ops::int_cmp_float(i, as_f64(b)?),
        (None, Some(i)) => ops::int_cmp_float(i, as_f64(a)?).map(std::cmp::Ordering::reverse),
        (None, None) => as_f64(a)?.partial_cmp(&as_f64(b)?),
    })
}

fn equal(a: &Value, b: &Value) -> bool {
    equal_within(a, b, MAX_NESTING)
}

/// The most items `[x] * n` makes.
const MAX_REPEATED: usize = 1 << 28;

/// How deep `==` looks into lists, tuples and dicts.
const MAX_NESTING: usize = 200;

fn equal_within(a: &Value, b: &Value, depth: usize) -> bool {
    if depth == 0 {
        return false;
    }
    let equal = |p: &Value, q: &Value| equal_within(p, q, depth - 1);
    match (a, b) {
        (Value::None, Value::None) => true,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::List(x), Value::List(y)) if Rc::ptr_eq(x, y) => true,
        (Value::Dict(x), Value::Dict(y)) if Rc::ptr_eq(x, y) => true,
        (Value::Tuple(_), Value::Tuple(_)) | (Value::List(_), Value::List(_)) => {
            let (x, y) = (a.items().unwrap_or_default(), b.items().unwrap_or_default());
            x.len() == y.len() && x.iter().zip(&y).all(|(p, q)| equal(p, q))
        }
        (Value::Dict(x), Value::Dict(y)) => {
            let (x, y) = (x.borrow().clone(), y.borrow().clone());
            x.len() == y.len() && x.iter().all(|(k, v)| lookup(&y, k).is_some_and(|w| equal(v, &w)))
        }
        (Value::DType(x), Value::DType(y)) => x == y,
        // Arrays are equal only to themselves; NumPy's scalars (tensors
        // of no dims) by value, as numbers are.
        (Value::Tensor(x), Value::Tensor(y)) if !(x.shape().is_empty() && y.shape().is_empty()) => x.same(y),
        _ => match number_cmp(a, b) {
            Some(ord) => ord == Some(std::cmp::Ordering::Equal),
            None => false,
        },
    }
}

/// Python's `int(text, base)`: `base` 0 (the prefix decides, as in a
/// literal) or 2 to 36; the text may have a sign, surrounding whitespace,
/// `_` between digits and the base's prefix (`0x`, `0o`, `0b`).
fn int_in_base(text: &str, base: &Value) -> Result<i64, RunError> {
    let base = match base {
        Value::Int(b) if *b == 0 || (2..=36).contains(b) => *b as u32,
        Value::Int(_) => return Err(RunError::value("int() base must be >= 2 and <= 36, or 0")),
        v => {
            return Err(RunError::value(format!(
                "int() takes an integer base, not {}",
                v.describe()
            )))
        }
    };
    let invalid = || {
        RunError::value(format!(
            "invalid literal for int() with base {base}: {}",
            super::print::str_repr(text)
        ))
    };
    let trimmed = text.trim();
    let (negative, unsigned) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let lower = unsigned.to_ascii_lowercase();
    let prefixed = |p: &str| lower.strip_prefix(p).map(|rest| rest.strip_prefix('_').unwrap_or(rest));
    let (radix, digits) = match (base, lower.get(..2)) {
        (0 | 16, Some("0x")) => (16, prefixed("0x").unwrap_or_default()),
        (0 | 8, Some("0o")) => (8, prefixed("0o").unwrap_or_default()),
        (0 | 2, Some("0b")) => (2, prefixed("0b").unwrap_or_default()),
        (0, _) if lower.len() > 1 && lower.starts_with('0') && lower.trim_start_matches(['0', '_']).is_empty() => {
            (10, "0")
        }
        (0, _) if lower.starts_with('0') && lower.len() > 1 => return Err(invalid()),
        (0, _) => (10, lower.as_str()),
        (b, _) => (b, lower.as_str()),
    };
    let well_formed = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.chars().all(|c| c == '_' || c.is_digit(radix));
    if !well_formed {
        return Err(invalid());
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    let magnitude = u64::from_str_radix(&clean, radix).ok().filter(|&m| m <= 1 << 63);
    let value = match (magnitude, negative) {
        (Some(m), true) => Some(0i64.wrapping_sub_unsigned(m)),
        (Some(m), false) => i64::try_from(m).ok(),
        (None, _) => None,
    };
    value.ok_or_else(|| {
        RunError::value(format!(
            "int() of {}: the integer does not fit in 64 bits",
            super::print::str_repr(text)
        ))
    })
}

/// The number a string spells, as Python's `float(s)` (`with_fraction`) or
/// `int(s)` reads it: surrounding whitespace, a sign, `_` between digits;
/// for a float also an exponent, `inf`, `infinity` and `nan` in any case.
fn parse_number(text: &str, with_fraction: bool) -> Result<Value, RunError> {
    let s = text.trim();
    let digits_ok = |part: &str| !part.starts_with('_') && !part.ends_with('_') && !part.contains("__");
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let plain: String = s.chars().filter(|&c| c != '_').collect();
    if with_fraction {
        let word = unsigned.to_ascii_lowercase();
        let named = ["inf", "infinity", "nan"].contains(&word.as_str());
        let numeric = !unsigned.is_empty()
            && unsigned.chars().all(|c| c.is_ascii_digit() || "._eE+-".contains(c))
            && unsigned.chars().any(|c| c.is_ascii_digit())
            && unsigned.split(['.', 'e', 'E', '+', '-']).all(digits_ok);
        if named || numeric {
            if let Ok(x) = plain.parse::<f64>() {
                return Ok(Value::Float(x));
            }
        }
        return Err(RunError::value(format!(
            "could not convert string to float: {}",
            super::print::str_repr(text)
        )));
    }
    let numeric =
        !unsigned.is_empty() && unsigned.chars().all(|c| c.is_ascii_digit() || c == '_') && digits_ok(unsigned);
    match plain.parse::<i64>() {
        Ok(n) if numeric => Ok(Value::Int(n)),
        // Python's ints have no width; host code's have 64 bits.
        Err(e)
            if numeric
                && matches!(
                    e.kind(),
                    std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow
                ) =>
        {
            Err(RunError::value(format!(
                "int() of {}: the integer does not fit in 64 bits",
                super::print::str_repr(text)
            )))
        }
        _ => Err(RunError::value(format!(
            "invalid literal for int() with base 10: {}",
            super::print::str_repr(text)
        ))),
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_scalars_follow_python() {
        let int = |op, a, b| scalar_binary(op, &Value::Int(a), &Value::Int(b));
        assert!(matches!(int(BinOp::FloorDiv, -7, 2), Ok(Value::Int(-4))));
        assert!(matches!(int(BinOp::Mod, -7, 2), Ok(Value::Int(1))));
        assert!(matches!(int(BinOp::Div, 7, 2), Ok(Value::Float(f)) if f == 3.5));
        assert!(matches!(int(BinOp::Shl, 1, 20), Ok(Value::Int(1048576))));
        assert!(matches!(int(BinOp::Pow, 2, -1), Ok(Value::Float(f)) if f == 0.5));
        assert_eq!(int(BinOp::Mul, i64::MAX, 2).unwrap_err().code, Code::E1009);
        assert_eq!(int(BinOp::FloorDiv, 1, 0).unwrap_err().code, Code::E1009);
        assert_eq!(int(BinOp::Shl, 1, 63).unwrap_err().code, Code::E1009);
        let f = scalar_binary(BinOp::Mod, &Value::Float(-1.5), &Value::Int(1)).unwrap();
        assert!(matches!(f, Value::Float(x) if x == 0.5));
        assert!(matches!(
            scalar_binary(BinOp::In, &Value::Int(4), &Value::Range(0, 10, 2)),
            Ok(Value::Bool(true))
        ));
        assert!(matches!(
            scalar_binary(BinOp::In, &Value::Int(5), &Value::Range(0, 10, 2)),
            Ok(Value::Bool(false))
        ));
    }
}
