//! Dialects and the verifier framework: a dialect declares its ops
//! ([`OpDef`]) and may add custom rules; the [`Registry`] checks every op
//! of a module against its definition and then runs those rules.

use crate::{verify_structure, AttrKind, Module, OpId, VerifyError, VerifyErrors};

/// How many operands or results an op takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    Exact(usize),
    AtLeast(usize),
}

impl Arity {
    /// Any number, zero included.
    pub const VARIADIC: Arity = Arity::AtLeast(0);

    pub fn accepts(self, n: usize) -> bool {
        match self {
            Arity::Exact(k) => n == k,
            Arity::AtLeast(k) => n >= k,
        }
    }

    fn describe(self, what: &str) -> String {
        match self {
            Arity::Exact(1) => format!("1 {what}"),
            Arity::Exact(k) => format!("{k} {what}s"),
            Arity::AtLeast(k) => format!("at least {k} {what}s"),
        }
    }
}

/// An attribute an op declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttrDef {
    pub name: &'static str,
    pub kind: AttrKind,
    pub required: bool,
}

impl AttrDef {
    pub const fn required(name: &'static str, kind: AttrKind) -> AttrDef {
        AttrDef {
            name,
            kind,
            required: true,
        }
    }

    pub const fn optional(name: &'static str, kind: AttrKind) -> AttrDef {
        AttrDef {
            name,
            kind,
            required: false,
        }
    }
}

/// What an op of a dialect looks like. Write one as a struct literal ending
/// in `..OpDef::DEFAULT`:
///
/// ```
/// use tessera_ir::{Arity, AttrDef, AttrKind, OpDef};
///
/// const MATMUL: OpDef = OpDef {
///     name: "graph.matmul",
///     doc: "matrix product of two tensors",
///     operands: Arity::Exact(2),
///     results: Arity::Exact(1),
///     attrs: &[AttrDef::required("accumulate", AttrKind::Type)],
///     pure: true,
///     ..OpDef::DEFAULT
/// };
/// ```
#[derive(Clone, Copy, Debug)]
pub struct OpDef {
    /// The full name, `dialect.op`.
    pub name: &'static str,
    /// One line for `tessera opt --list-ops` and the docs.
    pub doc: &'static str,
    pub operands: Arity,
    pub results: Arity,
    /// The declared attributes. Others are errors, except discardable ones
    /// whose name has a dot (`schedule.note`), which any op may carry.
    pub attrs: &'static [AttrDef],
    /// The exact number of regions.
    pub regions: usize,
    /// No side effects: an op whose results are unused may be erased, and
    /// two identical ones merged (`dce`, `cse`).
    pub pure: bool,
    /// Must be the last op of its block (`func.return`, `tile.yield`).
    pub terminator: bool,
}

impl OpDef {
    /// No operands, results, attributes or regions; not pure.
    pub const DEFAULT: OpDef = OpDef {
        name: "",
        doc: "",
        operands: Arity::Exact(0),
        results: Arity::Exact(0),
        attrs: &[],
        regions: 0,
        pure: false,
        terminator: false,
    };
}

/// A set of ops with their rules. Register one in a [`Registry`].
pub trait Dialect: Send + Sync {
    /// The prefix of its ops' names (`graph` for `graph.matmul`).
    fn name(&self) -> &str;

    /// Its ops.
    fn ops(&self) -> &[OpDef];

    /// Rules beyond what the [`OpDef`] says (types agree, shapes match),
    /// run on each of its ops after the generic checks passed. The module
    /// has passed the structural verifier.
    fn verify_op(&self, _m: &Module, _op: OpId, _errors: &mut VerifyErrors) {}
}

/// The dialects a tool knows. The builtin `func` dialect is always there.
pub struct Registry {
    dialects: Vec<Box<dyn Dialect>>,
    /// Accept ops of dialects no one registered (they are then only checked
    /// structurally, and count as impure).
    pub allow_unregistered: bool,
}

impl Default for Registry {
    fn default() -> Registry {
        Registry::new()
    }
}

impl Registry {
    /// A registry holding the builtin `func` dialect.
    pub fn new() -> Registry {
        let mut r = Registry {
            dialects: Vec::new(),
            allow_unregistered: false,
        };
        r.register(Box::new(crate::builtin::FuncDialect));
        r
    }

    /// Adds a dialect. Panics when one of the same name is registered or
    /// an op's name does not start with the dialect's name and a dot: both
    /// are programming errors.
    pub fn register(&mut self, dialect: Box<dyn Dialect>) {
        let name = dialect.name();
        assert!(self.dialect(name).is_none(), "dialect `{name}` is registered twice");
        for def in dialect.ops() {
            assert!(
                def.name.strip_prefix(name).is_some_and(|rest| rest.starts_with('.')),
                "op `{}` is not in dialect `{name}`",
                def.name
            );
        }
        self.dialects.push(dialect);
    }

    pub fn dialect(&self, name: &str) -> Option<&dyn Dialect> {
        self.dialects.iter().find(|d| d.name() == name).map(|d| &**d)
    }

    pub fn dialects(&self) -> impl Iterator<Item = &dyn Dialect> {
        self.dialects.iter().map(|d| &**d)
    }

    /// The definition of an op, by full name.
    pub fn op_def(&self, name: &str) -> Option<&OpDef> {
        let dialect = self.dialect(name.split_once('.')?.0)?;
        dialect.ops().iter().find(|d| d.name == name)
    }

    /// Whether the op's definition says it is pure (unknown ops are not).
    pub fn is_pure(&self, name: &str) -> bool {
        self.op_def(name).is_some_and(|d| d.pure)
    }

    /// The full verifier: the structural rules, then every op against its
    /// definition, then each dialect's own rules (only when everything
    /// before passed, so those rules may rely on it).
    pub fn verify(&self, m: &Module) -> Vec<VerifyError> {
        let structure = verify_structure(m);
        if !structure.is_empty() {
            return structure;
        }
        let mut errors = VerifyErrors::new();
        let ops = m.walk();
        let mut unknown_dialects = Vec::new();
        for &op in &ops {
            self.check_against_def(m, op, &mut unknown_dialects, &mut errors);
        }
        if !errors.is_empty() {
            return errors.into_vec();
        }
        for &op in &ops {
            if let Some(d) = self.dialect(m.op(op).name.dialect()) {
                d.verify_op(m, op, &mut errors);
            }
        }
        errors.into_vec()
    }

    /// Checks `op` against its definition. An unknown dialect is reported
    /// at its first op only (`unknown_dialects` remembers which were).
    fn check_against_def<'m>(
        &self,
        m: &'m Module,
        op: OpId,
        unknown_dialects: &mut Vec<&'m str>,
        errors: &mut VerifyErrors,
    ) {
        let data = m.op(op);
        let name = data.name.as_str();
        let Some(dialect) = self.dialect(data.name.dialect()) else {
            if !self.allow_unregistered && !unknown_dialects.contains(&data.name.dialect()) {
                unknown_dialects.push(data.name.dialect());
                errors.push(
                    VerifyError::at_op(m, op, format!("unknown dialect `{}`", data.name.dialect()))
                        .with_label("no registered dialect has this op")
                        .with_note(format!("the registered dialects are {}", self.dialect_list()))
                        .with_note("`tessera opt --allow-unregistered` accepts it unchecked"),
                );
            }
            return;
        };
        let Some(def) = dialect.ops().iter().find(|d| d.name == name) else {
            errors.push(
                VerifyError::at_op(m, op, format!("unknown op `{name}`"))
                    .with_label(format!("dialect `{}` has no such op", dialect.name())),
            );
            return;
        };
        let counts = [
            ("operand", def.operands, data.operands.len()),
            ("result", def.results, data.results().len()),
            ("region", Arity::Exact(def.regions), data.regions().len()),
        ];
        for (what, arity, n) in counts {
            if !arity.accepts(n) {
                errors.push(
                    VerifyError::at_op(m, op, format!("`{name}` takes {}, not {n}", arity.describe(what)))
                        .with_label(format!("this has {n}")),
                );
            }
        }
        for attr in def.attrs {
            match data.attrs.get(attr.name) {
                None if attr.required => errors.push(
                    VerifyError::at_op(m, op, format!("`{name}` needs the attribute `{}`", attr.name))
                        .with_label(format!("`{}` is missing", attr.name))
                        .with_note(format!("`{}` is {}", attr.name, attr.kind.name())),
                ),
                Some(value) if attr.kind != AttrKind::Any && value.kind() != attr.kind => errors.push(
                    VerifyError::at_op(
                        m,
                        op,
                        format!("attribute `{}` of `{name}` must be {}", attr.name, attr.kind.name()),
                    )
                    .with_label(format!("`{}` is {} here", attr.name, value.kind().name())),
                ),
                _ => {}
            }
        }
        for key in data.attrs.keys() {
            if !key.contains('.') && !def.attrs.iter().any(|a| a.name == key) {
                errors.push(
                    VerifyError::at_op(m, op, format!("`{name}` has no attribute `{key}`"))
                        .with_label("unknown attribute")
                        .with_note("attributes whose name has a dot (`dialect.note`) may be attached to any op"),
                );
            }
        }
        if def.terminator {
            let last = data.parent().and_then(|b| m.block_ops(b).last().copied());
            if last != Some(op) {
                errors.push(
                    VerifyError::at_op(m, op, format!("`{name}` must be the last op of its block"))
                        .with_label("ops follow this terminator"),
                );
            }
        }
    }

    fn dialect_list(&self) -> String {
        let names: Vec<String> = self.dialects.iter().map(|d| format!("`{}`", d.name())).collect();
        names.join(", ")
    }
}
