//! `lower-schedule-to-tile`: Schedule IR → Tile IR (`spec/ir-schedule.md`,
//! "Lowering to Tile IR").
//!
//! Each `schedule.kernel` becomes a kernel function (`kind = "kernel"`)
//! whose loop nest follows its pattern's template (`matmul.rs`,
//! `attention.rs`, `rows.rs`, `pointwise.rs`); the operator function becomes a host function
//! (`kind = "host"`) that launches the kernels in order, its tensors
//! passed as global memrefs, its results written to output parameters and
//! its intermediates in buffers from `tile.alloc_global`.

mod attention;
mod emit;
mod matmul;
mod pointwise;
mod rows;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use tessera_diagnostics::{Code, Diagnostic};
use tessera_ir::{
    Attr, Builder, DimExpr, Loc, MemSpace, Module, OpId, Pass, PassContext, ShapeConstraint, Type, ValueId, VerifyError,
};

use crate::shape::{self, is_deterministic, Divisible, GridDim, Layer};
use crate::targets::Target;
use emit::Gen;
use rows::{RowSpan, Variant};

/// The `lower-schedule-to-tile` pass.
pub struct LowerScheduleToTile;

impl Pass for LowerScheduleToTile {
    fn name(&self) -> &'static str {
        "lower-schedule-to-tile"
    }

    fn run(&mut self, m: &mut Module, ctx: &PassContext) -> Result<(), Vec<Diagnostic>> {
        let fail = |m: &Module, message: &str, note: &str| {
            Err(vec![VerifyError::at_module(m, message)
                .with_note(note)
                .diagnostic_with_code(Code::E0901, ctx.files)])
        };
        match Layer::of(m) {
            Ok(Layer::Schedule) => {}
            Ok(Layer::Graph) => {
                return fail(
                    m,
                    "`lower-schedule-to-tile` runs on Schedule IR, and this module is Graph IR",
                    "run `fuse` first (`--pass fuse --pass lower-schedule-to-tile`)",
                )
            }
            Ok(Layer::Tile | Layer::Target) => return Ok(()),
            Err(_) => {
                return fail(
                    m,
                    "unknown layer in the module's `layer`",
                    "the layers are \"graph\", \"schedule\", \"tile\" and \"target\"",
                )
            }
        }
        let Some(target) = m.attrs.get("target").and_then(Attr::as_str).and_then(Target::by_name) else {
            return fail(
                m,
                "Schedule IR needs a known `target` to lower to Tile IR",
                "set the module attribute `target`",
            );
        };
        crate::require_valid(m, ctx, "lower-schedule-to-tile")?;
        let mut errors = Vec::new();
        for func in m.functions() {
            let Some(entry) = m.entry_block(func) else { continue };
            let scheduled = m
                .block_ops(entry)
                .iter()
                .any(|&o| matches!(m.op(o).name.dialect(), "graph" | "schedule"));
            if scheduled {
                if let Err(e) = lower_function(m, func, target) {
                    errors.push(e.diagnostic_with_code(Code::E0901, ctx.files));
                }
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        m.attrs.insert("layer".into(), Attr::str("tile"));
        Ok(())
    }
}

/// A value of a kernel's region: one of its arguments or one of its ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Src {
    Arg(usize),
    Node(usize),
}

/// An op of a kernel's region, copied out of the module so that the
/// templates can read it while they build.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub name: String,
    pub attrs: BTreeMap<String, Attr>,
    pub operands: Vec<Src>,
    pub ty: Type,
}

impl Node {
    pub fn int(&self, name: &str) -> Option<i64> {
        self.attrs.get(name).and_then(Attr::as_int)
    }

    /// The dim a `graph.dim` node reads.
    pub fn dim(&self) -> Option<DimExpr> {
        self.str("dim").and_then(DimExpr::parse)
    }

    pub fn str(&self, name: &str) -> Option<&str> {
        self.attrs.get(name).and_then(Attr::as_str)
    }
}

/// How a variant of a kernel tiles and launches it, read from the
/// variant's dict (`tile_shape`, `block`, `stages`, `grid`).
#[derive(Clone)]
pub(crate) struct Geometry {
    pub tile: Vec<i64>,
    pub block: Vec<i64>,
    pub stages: i64,
    pub grid: Option<Vec<GridDim>>,
}

impl Geometry {
    fn read(d: &BTreeMap<String, Attr>) -> Option<Geometry> {
        let ints = |key: &str| d.get(key).and_then(Attr::as_ints);
        Some(Geometry {
            tile: ints("tile_shape")?,
            block: ints("block")?,
            stages: d.get("stages").and_then(Attr::as_int)?,
            grid: grid_of(d.get("grid")),
        })
    }
}

/// A matmul kernel's narrow variant, read: launched instead of the kernel
/// when M is at most `max_m`, with this geometry.
#[derive(Clone)]
pub(crate) struct Narrow {
    pub max_m: i64,
    pub geometry: Geometry,
}

impl Narrow {
    fn read(attr: &Attr) -> Option<Narrow> {
        let d = attr.as_dict()?;
        Some(Narrow {
            max_m: d.get("max_m").and_then(Attr::as_int)?,
            geometry: Geometry::read(d)?,
        })
    }
}

/// One of a kernel's tuned variants, read: its geometry, whether it asks
/// for a producer warpgroup, and the conjunctions it is launched under.
#[derive(Clone)]
pub(crate) struct Tuned {
    pub when: Vec<Vec<ShapeConstraint>>,
    pub geometry: Geometry,
    pub specialize: bool,
}

impl Tuned {
    fn read(attr: &Attr) -> Option<Tuned> {
        let d = attr.as_dict()?;
        Some(Tuned {
            when: d
                .get("when")?
                .as_array()?
                .iter()
                .map(|c| c.as_str().and_then(ShapeConstraint::parse_all))
                .collect::<Option<_>>()?,
            geometry: Geometry::read(d)?,
            specialize: d.get("warp_specialize").and_then(Attr::as_bool) == Some(true),
        })
    }
}

fn grid_of(attr: Option<&Attr>) -> Option<Vec<GridDim>> {
    attr.and_then(Attr::as_array)
        .and_then(|g| g.iter().map(GridDim::from_attr).collect())
}

/// A `schedule.kernel`, read.
#[derive(Clone)]
pub(crate) struct Kernel {
    pub op: OpId,
    pub name: String,
    pub pattern: String,
    pub tile: Vec<i64>,
    pub block: Vec<i64>,
    pub grid: Option<Vec<GridDim>>,
    pub stages: i64,
    /// The schedule asks for a producer warpgroup (`warp_specialize`).
    pub specialize: bool,
    /// A matmul's variant for a small M (the schedule's `narrow`).
    pub narrow: Option<Narrow>,
    /// The geometries of configurations tuned at several shapes (the
    /// schedule's `tuned`).
    pub tuned: Vec<Tuned>,
    pub args: Vec<Type>,
    pub nodes: Vec<Node>,
    pub root: Src,
    pub result: Type,
    pub loc: Loc,
}

impl Kernel {
    fn read(m: &Module, op: OpId) -> Kernel {
        let block = m.region_block(m.regions(op)[0]);
        let mut src: HashMap<ValueId, Src> = m
            .block_args(block)
            .iter()
            .enumerate()
            .map(|(i, &a)| (a, Src::Arg(i)))
            .collect();
        let mut nodes = Vec::new();
        let mut root = Src::Arg(0);
        for &inner in m.block_ops(block) {
            let data = m.op(inner);
            let operands: Vec<Src> = data.operands.iter().map(|v| src[v]).collect();
            if data.name == "schedule.yield" {
                root = operands_first(&operands);
                continue;
            }
            src.insert(m.result(inner, 0), Src::Node(nodes.len()));
            nodes.push(Node {
                name: data.name.to_string(),
                attrs: data.attrs.clone(),
                operands,
                ty: m.value_type(m.result(inner, 0)).clone(),
            });
        }
        let ints = |name: &str| m.attr(op, name).and_then(Attr::as_ints).unwrap_or_default();
        Kernel {
            op,
            name: m
                .attr(op, "name")
                .and_then(Attr::as_str)
                .unwrap_or("kernel")
                .to_string(),
            pattern: m
                .attr(op, "pattern")
                .and_then(Attr::as_str)
                .unwrap_or("generic")
                .to_string(),
            tile: ints("tile_shape"),
            block: ints("block"),
            grid: grid_of(m.attr(op, "grid")),
            stages: m.attr(op, "stages").and_then(Attr::as_int).unwrap_or(1),
            specialize: m.attr(op, "warp_specialize").and_then(Attr::as_bool) == Some(true),
            narrow: m.attr(op, "narrow").and_then(Narrow::read),
            tuned: m
                .attr(op, "tuned")
                .and_then(Attr::as_array)
                .map(|all| all.iter().filter_map(Tuned::read).collect())
                .unwrap_or_default(),
            args: m.block_args(block).iter().map(|&a| m.value_type(a).clone()).collect(),
            nodes,
            root,
            result: m.value_type(m.result(op, 0)).clone(),
            loc: m.op(op).loc.clone(),
        }
    }

    pub fn ty(&self, s: Src) -> &Type {
        match s {
            Src::Arg(i) => &self.args[i],
            Src::Node(n) => &self.nodes[n].ty,
        }
    }

    /// The node the pattern is built around.
    pub fn anchor(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// The kernel as variant `name` of geometry `g`, without variants of
    /// its own.
    pub fn with_geometry(&self, name: String, g: &Geometry) -> Kernel {
        let mut k = self.clone();
        k.name = name;
        k.tile = g.tile.clone();
        k.block = g.block.clone();
        k.stages = g.stages;
        k.grid = g.grid.clone();
        k.narrow = None;
        k.tuned = Vec::new();
        k
    }

    /// Its tuned variants (`<name>_t<i>`), each launched where its
    /// conditions hold.
    fn tuned_variants(&self) -> Vec<Variant> {
        self.tuned
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut kernel = self.with_geometry(format!("{}_t{i}", self.name), &t.geometry);
                kernel.specialize = t.specialize;
                Variant {
                    kernel,
                    launches: t.when.clone(),
                    facts: Vec::new(),
                    span: RowSpan::Any,
                }
            })
            .collect()
    }

    pub fn threads(&self) -> i64 {
        self.block.iter().product::<i64>().max(1)
    }
}

fn operands_first(operands: &[Src]) -> Src {
    operands.first().copied().unwrap_or(Src::Arg(0))
}

/// What the host needs to launch a lowered kernel.
struct Lowered {
    name: String,
    dims: Vec<String>,
    grid: Vec<GridDim>,
    block: Vec<i64>,
    shared_bytes: i64,
    /// Each launch of it: the dims it runs for, where all of these hold
    /// (a row template's variant; none: every dims).
    launches: Vec<Vec<ShapeConstraint>>,
}

/// A tensor's type as a buffer in global memory (a scalar result as a
/// rank-0 buffer).
fn global(ty: &Type) -> Option<Type> {
    match ty {
        Type::Tensor { dims, elem } => Some(Type::memref(dims.clone(), *elem, MemSpace::Global)),
        _ => None,
    }
}

fn as_param(ty: &Type) -> Option<Type> {
    match ty {
        Type::Scalar(_) => Some(ty.clone()),
        _ => global(ty),
    }
}

fn as_output(ty: &Type) -> Option<Type> {
    match ty {
        Type::Scalar(s) => Some(Type::memref([], *s, MemSpace::Global)),
        _ => global(ty),
    }
}

fn symbols(types: &[Type], into: &mut BTreeSet<String>) {
    for ty in types {
        for d in ty.dims().unwrap_or_default() {
            into.extend(d.symbols().into_iter().map(str::to_string));
        }
    }
}

/// Attributes a lowered function keeps from its operator.
const KEPT_ATTRS: [&str; 4] = ["effects", "numerics", "deterministic", "constraints"];

fn lower_function(m: &mut Module, func: OpId, target: Target) -> Result<(), Box<VerifyError>> {
    let entry = m.entry_block(func).expect("a function has a body");
    let ops = m.block_ops(entry).to_vec();
    for &op in &ops {
        let name = m.op(op).name.as_str();
        let supported = matches!(
            name,
            "schedule.kernel"
                | "graph.constant"
                | "graph.entry_token"
                | "graph.all_reduce"
                | "graph.rng"
                | "graph.guard"
                | "graph.return"
        );
        if !supported {
            return Err(Box::new(VerifyError::at_op(m, op, format!("`{name}` has no lowering to Tile IR yet"))
                .with_label("not lowered")
                .with_note("kernels, constants, all-reduces, random numbers, guards and the return are lowered; prints, calls and mesh or pipeline regions are not yet")));
        }
    }
    let func_name = m.func_name(func).unwrap_or_default().to_string();
    let mut facts: Vec<(ShapeConstraint, String)> = Vec::new();
    for (c, text) in shape::facts(m, func) {
        if !facts.iter().any(|(_, t)| t == text) {
            facts.push((c, text.to_string()));
        }
    }
    let deterministic = is_deterministic(m, Some(func));
    let kept: BTreeMap<String, Attr> = KEPT_ATTRS
        .iter()
        .filter_map(|&k| m.attr(func, k).map(|v| (k.to_string(), v.clone())))
        .collect();
    let kernels: Vec<Kernel> = ops
        .iter()
        .filter(|&&o| m.op(o).name == "schedule.kernel")
        .map(|&o| Kernel::read(m, o))
        .collect();
    let mut lowered: HashMap<OpId, Vec<Lowered>> = HashMap::new();
    for k in &kernels {
        let variants = if !k.tuned.is_empty() {
            k.tuned_variants()
        } else if k.narrow.is_some() {
            matmul::variants(k)
        } else {
            rows::variants(k, &facts, &target)
        };
        for variant in variants {
            let l = lower_kernel(m, func, &variant, target, &facts, deterministic, &kept)?;
            lowered.entry(k.op).or_default().push(l);
        }
    }
    let draws: Vec<OpId> = ops.iter().copied().filter(|&o| m.op(o).name == "graph.rng").collect();
    for (i, op) in draws.into_iter().enumerate() {
        let names = (format!("{func_name}_rng{i}"), format!("{func_name}.rng{i}"));
        let l = lower_rng(m, func, op, &names, &facts, &kept)?;
        lowered.insert(op, vec![l]);
    }
    lower_host(m, func, &func_name, &lowered, &kept)
}

/// The attributes a kernel inherits from its operator function: `kept`
/// but the effects, and as `constraints` the function's facts (its own
/// and the guards checked on entry) that relate only the kernel's dims,
/// for code generation to rely on and the manifest to list.
fn inherit(
    m: &mut Module,
    kfn: OpId,
    kept: &BTreeMap<String, Attr>,
    facts: &[(ShapeConstraint, String)],
    dims: &[String],
) {
    for (key, value) in kept {
        if key != "effects" && key != "constraints" {
            m.set_attr(kfn, key.clone(), value.clone());
        }
    }
    let own: Vec<Attr> = facts
        .iter()
        .filter(|(c, _)| c.symbols().iter().all(|s| dims.iter().any(|d| d == s)))
        .map(|(_, text)| Attr::str(text.as_str()))
        .collect();
    if !own.is_empty() {
        m.set_attr(kfn, "constraints", Attr::Array(own));
    }
}

/// A `graph.rng` becomes a kernel that fills its buffer: one thread per
/// element, which draws `tile.rng` with its linear index as the counter,
/// from the op's `stream` (the function's name and the draw's number when
/// it names none).
fn lower_rng(
    m: &mut Module,
    func: OpId,
    op: OpId,
    (name, default_stream): &(String, String),
    facts: &[(ShapeConstraint, String)],
    kept: &BTreeMap<String, Attr>,
) -> Result<Lowered, Box<VerifyError>> {
    let result = m.value_type(m.result(op, 0)).clone();
    let Some(out) = as_output(&result) else {
        return Err(Box::new(
            VerifyError::at_op(
                m,
                op,
                format!("random numbers of type {result} have no Tile-IR form yet"),
            )
            .with_label("cannot lower this draw"),
        ));
    };
    let stream = m
        .attr(op, "stream")
        .cloned()
        .unwrap_or_else(|| Attr::str(default_stream.as_str()));
    let dist = m.attr(op, "dist").cloned().unwrap_or_else(|| Attr::str("uniform"));
    let seed = m.attr(op, "seed").cloned();
    let p = m.attr(op, "p").cloned();
    let function = m.func_name(func).unwrap_or_default().to_string();
    let loc = m.op(op).loc.clone();
    let mut dim_names = BTreeSet::new();
    symbols(std::slice::from_ref(&out), &mut dim_names);
    let dims: Vec<String> = dim_names.into_iter().collect();
    let mut params = vec![out];
    params.extend(dims.iter().map(|_| Type::INDEX));
    let kfn = m.add_function(name, &params, &[], loc.clone());
    m.move_op_before(kfn, func);
    let threads = crate::targets::ELEMENTWISE_THREADS;
    m.set_attr(kfn, "kind", Attr::str("kernel"));
    m.set_attr(kfn, "block", Attr::ints([threads, 1, 1]));
    m.set_attr(
        kfn,
        "dims",
        Attr::Array(dims.iter().map(|d| Attr::str(d.as_str())).collect()),
    );
    m.set_attr(kfn, "mutable", Attr::ints([0]));
    inherit(m, kfn, kept, facts, &dims);
    let body = m.entry_block(kfn).expect("a function has a body");
    let args = m.block_args(body).to_vec();
    let mut b = Builder::at_end(m, body);
    b.set_loc(loc.clone());
    let g = Gen {
        dims: dims.iter().cloned().zip(args[1..].iter().copied()).collect(),
        inputs: Vec::new(),
        out: args[0],
        loc,
        order: "tree",
        constraints: Vec::new(),
        target: Target::by_name("cpu").expect("a known target"),
        rows: RowSpan::Any,
    };
    let draw = pointwise::Draw {
        function,
        dist,
        stream,
        seed,
        p,
    };
    let outcome = pointwise::rng(&g, &mut b, &result, threads, &draw);
    b.op("func.return").build();
    if let Err(what) = outcome {
        m.erase_op(kfn);
        return Err(Box::new(
            VerifyError::at_op(m, op, what).with_label("cannot lower this draw"),
        ));
    }
    let total = crate::shape::num_elements(result.dims().unwrap_or_default());
    Ok(Lowered {
        name: name.clone(),
        dims,
        grid: vec![GridDim::ceil_div(&total, threads)],
        block: vec![threads, 1, 1],
        shared_bytes: 0,
        launches: vec![Vec::new()],
    })
}

fn lower_kernel(
    m: &mut Module,
    func: OpId,
    variant: &Variant,
    target: Target,
    facts: &[(ShapeConstraint, String)],
    deterministic: bool,
    kept: &BTreeMap<String, Attr>,
) -> Result<Lowered, Box<VerifyError>> {
    let k = &variant.kernel;
    let facts: Vec<(ShapeConstraint, String)> = facts.iter().chain(&variant.facts).cloned().collect();
    let facts = facts.as_slice();
    let unsupported = |m: &Module, what: String| {
        Box::new(
            VerifyError::at_op(m, k.op, format!("kernel \"{}\": {what}", k.name))
                .with_label("cannot lower this kernel"),
        )
    };
    if m.function(&k.name).is_some() {
        return Err(unsupported(m, "a function of this name exists already".into()));
    }
    // A scalar another kernel computed (`op.mean(x)` in `x - op.mean(x)`)
    // is in its rank-0 buffer: the kernel takes the buffer and reads it
    // once (it had taken a scalar the host did not have).
    let computed: Vec<bool> = m
        .operands(k.op)
        .iter()
        .map(|&v| {
            m.defining_op(v).is_some_and(|op| {
                matches!(
                    m.op(op).name.as_str(),
                    "schedule.kernel" | "graph.rng" | "graph.all_reduce"
                )
            })
        })
        .collect();
    let mut params = Vec::new();
    for (i, ty) in k.args.iter().enumerate() {
        let param = match ty {
            Type::Scalar(_) if computed.get(i) == Some(&true) => as_output(ty),
            _ => as_param(ty),
        };
        params.push(param.ok_or_else(|| unsupported(m, format!("an input of type {ty}")))?);
    }
    let n_in = params.len();
    params.push(as_output(&k.result).ok_or_else(|| unsupported(m, format!("a result of type {}", k.result)))?);
    let mut dim_names = BTreeSet::new();
    symbols(&params, &mut dim_names);
    for d in k.nodes.iter().filter_map(Node::dim) {
        dim_names.extend(d.symbols().into_iter().map(str::to_string));
    }
    let dims: Vec<String> = dim_names.into_iter().collect();
    params.extend(dims.iter().map(|_| Type::INDEX));
    let kfn = m.add_function(&k.name, &params, &[], k.loc.clone());
    m.move_op_before(kfn, func);
    m.set_attr(kfn, "kind", Attr::str("kernel"));
    m.set_attr(kfn, "block", Attr::ints(k.block.iter().copied()));
    if k.specialize {
        m.set_attr(kfn, "warp_specialize", Attr::Bool(true));
    }
    m.set_attr(
        kfn,
        "dims",
        Attr::Array(dims.iter().map(|d| Attr::str(d.as_str())).collect()),
    );
    m.set_attr(kfn, "mutable", Attr::ints([n_in as i64]));
    inherit(m, kfn, kept, facts, &dims);
    let body = m.entry_block(kfn).expect("a function has a body");
    let args = m.block_args(body).to_vec();
    let mut b = Builder::at_end(m, body);
    b.set_loc(k.loc.clone());
    let inputs = args[..n_in]
        .iter()
        .zip(&k.args)
        .zip(&params)
        .map(|((&arg, ty), param)| match (ty, param) {
            (Type::Scalar(_), Type::MemRef { .. }) => b.op("tile.load").operand(arg).result(ty.clone()).build_value(),
            _ => arg,
        })
        .collect();
    let g = Gen {
        dims: dims.iter().cloned().zip(args[n_in + 1..].iter().copied()).collect(),
        inputs,
        out: args[n_in],
        loc: k.loc.clone(),
        order: if deterministic { "tree" } else { "any" },
        constraints: Divisible::all_of(facts),
        target,
        rows: variant.span,
    };
    let outcome = match k.pattern.as_str() {
        "matmul" | "matmul_epilogue" => matmul::lower(&g, &mut b, k),
        "attention" => attention::lower(&g, &mut b, k),
        "softmax" => rows::softmax(&g, &mut b, k),
        "norm" => rows::norm(&g, &mut b, k),
        "reduce" => rows::reduce(&g, &mut b, k),
        "scan" => rows::scan(&g, &mut b, k),
        "elementwise" => pointwise::lower(&g, &mut b, k),
        other => Err(format!("a \"{other}\" kernel has no Tile-IR template yet")),
    };
    b.op("func.return").build();
    let shared_bytes = match outcome {
        Ok(bytes) => bytes,
        Err(what) => {
            m.erase_op(kfn);
            return Err(unsupported(m, what));
        }
    };
    let grid = match &k.grid {
        Some(grid) => grid.clone(),
        None => vec![GridDim::Const(1)],
    };
    Ok(Lowered {
        name: k.name.clone(),
        dims,
        grid,
        block: k.block.clone(),
        shared_bytes,
        launches: variant.launches.clone(),
    })
}

/// The operator function becomes a host function of the same name: its
/// parameters the operator's (tensors as global memrefs), then one output
/// buffer per result, one scratch buffer per intermediate (listed in
/// `schedule.scratch`; the caller provides them, like a library's
/// workspace), and the dims.
fn lower_host(
    m: &mut Module,
    func: OpId,
    name: &str,
    lowered: &HashMap<OpId, Vec<Lowered>>,
    kept: &BTreeMap<String, Attr>,
) -> Result<(), Box<VerifyError>> {
    let (inputs, results) = {
        let (i, r) = m.func_type(func).expect("a function has a type");
        (i.to_vec(), r.to_vec())
    };
    let cannot = |m: &Module, what: String| {
        Box::new(
            VerifyError::at_op(m, func, format!("{what} has no Tile-IR form yet"))
                .with_label("cannot lower this function"),
        )
    };
    let mut params = Vec::new();
    for ty in &inputs {
        params.push(as_param(ty).ok_or_else(|| cannot(m, format!("a parameter of type {ty}")))?);
    }
    let n_in = params.len();
    for ty in &results {
        params.push(as_output(ty).ok_or_else(|| cannot(m, format!("a result of type {ty}")))?);
    }
    let old_entry = m.entry_block(func).expect("a function has a body");
    let ops = m.block_ops(old_entry).to_vec();
    // Which parameter each kernel writes: an output, or a scratch buffer.
    let ret = ops.last().copied().filter(|&r| m.op(r).name == "graph.return");
    let mut written_to: HashMap<ValueId, usize> = HashMap::new();
    if let Some(ret) = ret {
        for (i, &v) in m.operands(ret).iter().enumerate() {
            written_to.entry(v).or_insert(n_in + i);
        }
    }
    let mut scratch = Vec::new();
    for &op in &ops {
        if !matches!(
            m.op(op).name.as_str(),
            "schedule.kernel" | "graph.all_reduce" | "graph.rng"
        ) {
            continue;
        }
        let result = m.result(op, 0);
        if let std::collections::hash_map::Entry::Vacant(slot) = written_to.entry(result) {
            let ty = m.value_type(result).clone();
            slot.insert(params.len());
            scratch.push(params.len() as i64);
            params.push(as_output(&ty).ok_or_else(|| cannot(m, format!("an intermediate of type {ty}")))?);
        }
    }
    let mut dim_names = BTreeSet::new();
    symbols(&params, &mut dim_names);
    for l in lowered.values().flatten() {
        dim_names.extend(l.dims.iter().cloned());
    }
    for &op in ops.iter().filter(|&&o| m.op(o).name == "graph.guard") {
        let checked = m
            .attr(op, "constraint")
            .and_then(Attr::as_str)
            .and_then(ShapeConstraint::parse);
        dim_names.extend(checked.iter().flat_map(|c| c.symbols()).map(str::to_string));
    }
    let dims: Vec<String> = dim_names.into_iter().collect();
    let n_buffers = params.len();
    params.extend(dims.iter().map(|_| Type::INDEX));
    let loc = m.op(func).loc.clone();
    let host = m.add_function(name, &params, &[], loc);
    m.move_op_before(host, func);
    m.set_attr(host, "kind", Attr::str("host"));
    m.set_attr(
        host,
        "dims",
        Attr::Array(dims.iter().map(|d| Attr::str(d.as_str())).collect()),
    );
    m.set_attr(host, "mutable", Attr::ints((n_in..n_buffers).map(|i| i as i64)));
    if !scratch.is_empty() {
        m.set_attr(host, "schedule.scratch", Attr::ints(scratch));
    }
    for (key, value) in kept {
        m.set_attr(host, key.clone(), value.clone());
    }
    let old_args = m.block_args(old_entry).to_vec();
    let host_entry = m.entry_block(host).expect("a function has a body");
    let host_args = m.block_args(host_entry).to_vec();
    let dim_values: HashMap<&str, ValueId> = dims
        .iter()
        .map(String::as_str)
        .zip(host_args[n_buffers..].iter().copied())
        .collect();
    let mut map: HashMap<ValueId, ValueId> = old_args.iter().copied().zip(host_args.iter().copied()).collect();
    for &op in &ops {
        let loc = m.op(op).loc.clone();
        match m.op(op).name.as_str() {
            "schedule.kernel" | "graph.rng" => {
                let result = m.result(op, 0);
                let out = host_args[written_to[&result]];
                let inputs: Vec<ValueId> = if m.op(op).name == "graph.rng" {
                    Vec::new()
                } else {
                    m.operands(op).iter().map(|v| map[v]).collect()
                };
                for l in &lowered[&op] {
                    let mut args = inputs.clone();
                    args.push(out);
                    args.extend(l.dims.iter().map(|d| dim_values[d.as_str()]));
                    let grid = Attr::Array(l.grid.iter().map(GridDim::to_attr).collect());
                    for when in &l.launches {
                        let mut b = Builder::at_end(m, host_entry);
                        let mut launch = b
                            .op("tile.launch")
                            .operands(&args)
                            .attr("callee", Attr::Symbol(l.name.clone()))
                            .attr("grid", grid.clone())
                            .attr("block", Attr::ints(l.block.iter().copied()))
                            .attr("shared_bytes", Attr::Int(l.shared_bytes))
                            .loc(loc.clone());
                        if !when.is_empty() {
                            launch = launch.attr("when", Attr::str(ShapeConstraint::join(when)));
                        }
                        launch.build();
                    }
                }
                map.insert(result, out);
            }
            "graph.all_reduce" => {
                // The collective runs on the host's buffers; the token
                // chain becomes the order of the host's ops.
                let result = m.result(op, 0);
                let out = host_args[written_to[&result]];
                let input = map[&m.operands(op)[1]];
                let attrs: Vec<(String, Attr)> = ["op", "axis", "algo", "deterministic", "mesh_axes", "mesh_shape"]
                    .iter()
                    .filter_map(|&k| m.attr(op, k).map(|v| (k.to_string(), v.clone())))
                    .collect();
                let mut b = Builder::at_end(m, host_entry);
                let mut collective = b.op("tile.all_reduce").operands(&[input, out]).loc(loc);
                for (key, value) in attrs {
                    collective = collective.attr(&key, value);
                }
                collective.build();
                map.insert(result, out);
            }
            "graph.guard" => {
                let attrs: Vec<(&str, Attr)> = ["constraint", "callee"]
                    .into_iter()
                    .filter_map(|k| m.attr(op, k).map(|v| (k, v.clone())))
                    .collect();
                let mut b = Builder::at_end(m, host_entry);
                let mut guard = b.op("tile.guard").loc(loc);
                for (key, value) in attrs {
                    guard = guard.attr(key, value);
                }
                guard.build();
            }
            "graph.constant" => {
                let value = m.attr(op, "value").cloned().unwrap_or(Attr::Int(0));
                let result = m.result(op, 0);
                let ty = m.value_type(result).clone();
                let c = Builder::at_end(m, host_entry)
                    .op("tile.const")
                    .attr("value", value)
                    .result(ty)
                    .loc(loc)
                    .build_value();
                map.insert(result, c);
            }
            "graph.return" => {
                Builder::at_end(m, host_entry).op("func.return").loc(loc).build();
            }
            _ => {}
        }
    }
    m.erase_op(func);
    Ok(())
}
