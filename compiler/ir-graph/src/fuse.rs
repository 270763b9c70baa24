//! `fuse`: Graph IR → Schedule IR. Groups the compute ops of each operator
//! function into `schedule.kernel`s and chooses their tiling and launch
//! geometry (`spec/ir-schedule.md`, "Fusion").
//!
//! First every call of another operator function is inlined, so that its
//! ops fuse with the caller's. The groups, in three sweeps over a
//! function's body:
//! 1. each matmul, softmax, norm and reduce starts a kernel and takes its
//!    *epilogue*: the chain of elementwise ops (and casts) that consume its
//!    value as their only use and keep its shape;
//! 2. softmax, norm and reduce take their *prologue*: the elementwise ops
//!    producing their input, when used only there and of the input's shape;
//! 3. the remaining elementwise-class ops (elementwise, cast, broadcast,
//!    transpose, reshape, slice, concat) form `elementwise` kernels, from
//!    the last one backwards, each taking the producers used only by it.
//!
//! Scalar constants are copied into every kernel that uses them.
//!
//! Each kernel is scheduled under every configuration a tuner measured for
//! the function (`crate::tuned`); one that they tile differently keeps
//! each geometry as a `tuned` variant with the shapes it is launched for.

use std::collections::{BTreeMap, HashMap, HashSet};

use tessera_base::gcd;
use tessera_diagnostics::{Code, Diagnostic};
use tessera_ir::{
    Attr, Builder, DimExpr, Module, OpId, Pass, PassContext, ScalarType, ShapeConstraint, Type, ValueId, VerifyError,
};

use crate::schedule::{tiled_dims, TiledDim};
use crate::shape::{
    call_binding, divisibility, instantiate, is_leaf, is_pointwise, modulus_of, normalize_axis, num_elements,
    tile_respects, Divisible, GridDim, Layer,
};
use crate::targets::{
    attention_shared_bytes, matmul_shared_bytes, row_chunk, row_threads, target_names, Target, ELEMENTWISE_THREADS,
};
use crate::tuned::{self, PERSISTENT, PRODUCERS};

/// The `fuse` pass.
pub struct Fuse;

impl Pass for Fuse {
    fn name(&self) -> &'static str {
        "fuse"
    }

    fn run(&mut self, m: &mut Module, ctx: &PassContext) -> Result<(), Vec<Diagnostic>> {
        let fail = |m: &Module, message: String, note: String| {
            Err(vec![VerifyError::at_module(m, message)
                .with_note(note)
                .diagnostic_with_code(Code::E0901, ctx.files)])
        };
        match Layer::of(m) {
            Ok(Layer::Graph) => {}
            Ok(Layer::Schedule) => return Ok(()),
            Ok(layer) => {
                return fail(
                    m,
                    format!(
                        "`fuse` runs on Graph IR, and this module is in the \"{}\" layer",
                        layer.name()
                    ),
                    "fuse before lowering to Tile IR".into(),
                )
            }
            Err(bad) => {
                return fail(
                    m,
                    format!("unknown layer {bad} in the module's `layer`"),
                    "the layers are \"graph\", \"schedule\", \"tile\" and \"target\"".into(),
                )
            }
        }
        let target = match m.attrs.get("target").and_then(Attr::as_str) {
            Some(name) => match Target::by_name(name) {
                Some(t) => t,
                None => {
                    return fail(
                        m,
                        format!("unknown target \"{name}\" in the module's `target`"),
                        format!("the targets are {}", target_names()),
                    )
                }
            },
            None => {
                return fail(
                    m,
                    "`fuse` needs the module attribute `target`: tile shapes depend on it".into(),
                    format!("add `target = \"sm_90a\"` (the targets are {})", target_names()),
                )
            }
        };
        crate::require_valid(m, ctx, "fuse")?;
        let graph_functions: Vec<OpId> = m
            .functions()
            .into_iter()
            .filter(|&f| {
                m.entry_block(f)
                    .is_some_and(|entry| m.block_ops(entry).iter().any(|&o| m.op(o).name.dialect() == "graph"))
            })
            .collect();
        // Every call is inlined before any function is fused, so inlining
        // copies graph ops, never kernels.
        for &func in &graph_functions {
            inline_calls(m, func);
        }
        let mut diagnostics = Vec::new();
        for func in graph_functions {
            if let Err(e) = fuse_function(m, func, target) {
                diagnostics.push(e.to_diagnostic(ctx.files));
            }
        }
        if !diagnostics.is_empty() {
            return Err(diagnostics);
        }
        m.attrs.insert("layer".into(), Attr::str("schedule"));
        Ok(())
    }
}

/// One future kernel.
struct Group {
    pattern: &'static str,
    /// The matmul, softmax, norm or reduce it is built around.
    anchor: Option<OpId>,
    /// The op whose value the kernel gives.
    root: OpId,
    members: Vec<OpId>,
}

struct Analysis {
    position: HashMap<OpId, usize>,
    /// The distinct ops that use each value.
    users: HashMap<ValueId, Vec<OpId>>,
    group_of: HashMap<OpId, usize>,
    groups: Vec<Group>,
    /// The ops each kernel that uses them holds a copy of ([`cloneable`]).
    cloned: HashSet<OpId>,
}

/// Whether each kernel using `op`'s value computes it itself: a constant, a
/// dim, or arithmetic on scalars that only such values feed (`sqrt(cast(D,
/// f32))`). A kernel takes a scalar computed elsewhere as an argument,
/// which no kernel would give.
fn cloneable(m: &Module, op: OpId) -> bool {
    let name = m.op(op).name.as_str();
    if is_leaf(name) {
        return true;
    }
    matches!(name, "graph.elementwise" | "graph.cast")
        && m.results(op)
            .iter()
            .all(|&r| matches!(m.value_type(r), Type::Scalar(_)))
        && m.operands(op)
            .iter()
            .all(|&v| m.defining_op(v).is_some_and(|d| cloneable(m, d)))
}

/// `op` after the cloneable ops it reads, each once, in `order`.
fn clone_order(m: &Module, op: OpId, order: &mut Vec<OpId>) {
    if order.contains(&op) {
        return;
    }
    for &v in m.operands(op) {
        if let Some(d) = m.defining_op(v) {
            clone_order(m, d, order);
        }
    }
    order.push(op);
}

impl Analysis {
    fn single_user(&self, v: ValueId) -> Option<OpId> {
        match self.users.get(&v).map(Vec::as_slice) {
            Some([only]) => Some(*only),
            _ => None,
        }
    }

    fn free(&self, op: OpId) -> bool {
        self.position.contains_key(&op) && !self.group_of.contains_key(&op) && !self.cloned.contains(&op)
    }

    fn add(&mut self, group: usize, op: OpId) {
        self.group_of.insert(op, group);
        self.groups[group].members.push(op);
    }
}

fn fuse_function(m: &mut Module, func: OpId, target: Target) -> Result<(), Box<VerifyError>> {
    copy_returned_inputs(m, func);
    let entry = m.entry_block(func).expect("a function has a body");
    let ops = m.block_ops(entry).to_vec();
    let mut a = Analysis {
        position: ops.iter().enumerate().map(|(i, &o)| (o, i)).collect(),
        users: HashMap::new(),
        group_of: HashMap::new(),
        groups: Vec::new(),
        cloned: ops.iter().copied().filter(|&o| cloneable(m, o)).collect(),
    };
    for &op in &ops {
        for &v in m.operands(op) {
            let list = a.users.entry(v).or_default();
            if !list.contains(&op) {
                list.push(op);
            }
        }
    }
    // 1. Anchors and their epilogues.
    for &op in &ops {
        let pattern = match m.op(op).name.as_str() {
            "graph.matmul" => "matmul",
            "graph.softmax" => "softmax",
            "graph.attention" => "attention",
            "graph.norm" => "norm",
            "graph.reduce" => "reduce",
            "graph.cumsum" => "scan",
            _ => continue,
        };
        let g = a.groups.len();
        a.groups.push(Group {
            pattern,
            anchor: Some(op),
            root: op,
            members: Vec::new(),
        });
        a.add(g, op);
        if pattern == "matmul" {
            if let Some(t) = transposed_rhs(m, &a, op) {
                a.add(g, t);
            }
        }
        loop {
            let root = a.groups[g].root;
            let value = m.result(root, 0);
            let Some(user) = a.single_user(value).filter(|&u| m.results(u).len() == 1) else {
                break;
            };
            let same_shape = m.value_type(m.result(user, 0)).dims() == m.value_type(value).dims();
            let epilogue = matches!(m.op(user).name.as_str(), "graph.elementwise" | "graph.cast");
            if !(epilogue && same_shape && a.free(user)) {
                break;
            }
            a.add(g, user);
            absorb_casts(m, &mut a, g, user, value);
            a.groups[g].root = user;
            if pattern == "matmul" {
                a.groups[g].pattern = "matmul_epilogue";
            }
        }
    }
    // 2. Prologues of the row kernels.
    for g in 0..a.groups.len() {
        let anchor = a.groups[g].anchor.expect("the groups so far have anchors");
        if a.groups[g].pattern.starts_with("matmul") || a.groups[g].pattern == "attention" {
            continue;
        }
        let input = m.operands(anchor)[0];
        let dims = m.value_type(input).dims().map(<[_]>::to_vec);
        let mut stack = vec![(input, anchor)];
        while let Some((v, consumer)) = stack.pop() {
            let Some(producer) = m.defining_op(v) else { continue };
            let pointwise = matches!(m.op(producer).name.as_str(), "graph.elementwise" | "graph.cast");
            let same_shape = m.value_type(v).dims().map(<[_]>::to_vec) == dims;
            if !(pointwise && same_shape && a.free(producer) && a.single_user(v) == Some(consumer)) {
                continue;
            }
            a.add(g, producer);
            for &operand in m.operands(producer) {
                stack.push((operand, producer));
            }
        }
    }
    // 3. Elementwise kernels, from the last op backwards.
    for &op in ops.iter().rev() {
        if !a.free(op) || !is_pointwise(m.op(op).name.as_str()) {
            continue;
        }
        let g = a.groups.len();
        a.groups.push(Group {
            pattern: "elementwise",
            anchor: None,
            root: op,
            members: Vec::new(),
        });
        a.add(g, op);
        let mut stack = vec![op];
        while let Some(member) = stack.pop() {
            for &operand in m.operands(member) {
                let Some(producer) = m.defining_op(operand) else {
                    continue;
                };
                if a.free(producer)
                    && is_pointwise(m.op(producer).name.as_str())
                    && a.single_user(operand) == Some(member)
                {
                    a.add(g, producer);
                    stack.push(producer);
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..a.groups.len()).collect();
    order.sort_by_key(|&g| a.position[&a.groups[g].root]);
    let name = m.func_name(func).unwrap_or("kernel").to_string();
    let constraints = divisibility(m, Some(func));
    let measured = tuned::measured(m, func);
    let points: Vec<BTreeMap<String, i64>> = measured.iter().map(|t| t.dims.clone()).collect();
    let regions = tuned::nearest_regions(&points);
    for (i, g) in order.into_iter().enumerate() {
        let group = &mut a.groups[g];
        group.members.sort_by_key(|o| a.position[o]);
        let configs = measured
            .iter()
            .map(|t| schedule(m, group, target, &constraints, &t.config))
            .collect::<Result<Vec<_>, _>>()?;
        let (config, variants) = tuned_variants(configs, &regions);
        build_kernel(m, group, &format!("{name}_k{i}"), config, variants);
    }
    let mut counts = m.use_counts();
    for op in m.block_ops(entry).iter().rev().copied().collect::<Vec<_>>() {
        if a.cloned.contains(&op) && m.results(op).iter().all(|r| counts[r.index()] == 0) {
            for &v in m.operands(op) {
                counts[v.index()] -= 1;
            }
            m.erase_op(op);
        }
    }
    Ok(())
}

/// Casts of kernel inputs that only the epilogue op `user` uses (a `bf16`
/// bias widened to the accumulator's `f32`) join its group, so the
/// epilogue reads the input and converts it in registers; `value` is the
/// operand the group computes.
fn absorb_casts(m: &Module, a: &mut Analysis, g: usize, user: OpId, value: ValueId) {
    for &operand in m.operands(user) {
        if operand == value {
            continue;
        }
        let Some(producer) = m.defining_op(operand) else {
            continue;
        };
        let cast = m.op(producer).name == "graph.cast";
        if cast && a.free(producer) && a.single_user(operand) == Some(user) {
            a.add(g, producer);
        }
    }
}

/// The transpose of the last two dims that produces a matmul's rhs, used
/// only there: the kernel reads B as it lies and transposes its tiles.
fn transposed_rhs(m: &Module, a: &Analysis, matmul: OpId) -> Option<OpId> {
    let rhs = m.operands(matmul)[1];
    let t = m.defining_op(rhs).filter(|&t| m.op(t).name == "graph.transpose")?;
    let rank = m.value_type(rhs).dims()?.len() as i64;
    let mut swap: Vec<i64> = (0..rank).collect();
    swap.swap(rank as usize - 1, rank as usize - 2);
    let perm = m.attr(t, "perm").and_then(Attr::as_ints)?;
    (perm == swap && a.free(t) && a.single_user(rhs) == Some(matmul)).then_some(t)
}

/// How deep calls of operator functions are inlined (deeper chains, and
/// recursion, are left as calls).
const INLINE_DEPTH: usize = 16;

/// Inlines the calls of other Graph-IR functions, so their ops fuse with
/// the caller's: the callee's parameters become the call's arguments, its
/// entry token the call's token, its returned values and the end of its
/// token chain the call's results.
fn inline_calls(m: &mut Module, func: OpId) {
    let entry = m.entry_block(func).expect("a function has a body");
    for _ in 0..INLINE_DEPTH {
        let calls: Vec<(OpId, OpId)> = m
            .block_ops(entry)
            .iter()
            .filter(|&&op| m.op(op).name == "graph.call")
            .filter_map(|&op| {
                let callee = m.function(m.attr(op, "callee")?.as_symbol()?)?;
                let body = m.entry_block(callee)?;
                let graph = m
                    .block_ops(body)
                    .last()
                    .is_some_and(|&r| m.op(r).name == "graph.return");
                (callee != func && graph).then_some((op, callee))
            })
            .collect();
        if calls.is_empty() {
            return;
        }
        for (call, callee) in calls {
            inline_call(m, func, call, callee);
        }
    }
}

fn inline_call(m: &mut Module, func: OpId, call: OpId, callee: OpId) {
    let body = m.entry_block(callee).expect("a function has a body");
    let params = m.block_args(body).to_vec();
    let operands = m.operands(call).to_vec();
    let results = m.results(call).to_vec();
    let threaded = operands.first().is_some_and(|&t| *m.value_type(t) == Type::Token);
    let (token_in, args) = if threaded {
        (Some(operands[0]), &operands[1..])
    } else {
        (None, &operands[..])
    };
    let mut map: HashMap<ValueId, ValueId> = params.iter().copied().zip(args.iter().copied()).collect();
    // The callee's types are in its own dim symbols; the copies take the
    // call's dims.
    let param_types: Vec<Type> = params.iter().map(|&p| m.value_type(p).clone()).collect();
    let arg_types: Vec<Type> = args.iter().map(|&a| m.value_type(a).clone()).collect();
    let binding = call_binding(&param_types, &arg_types);
    let ops = m.block_ops(body).to_vec();
    let (ret, ops) = ops.split_last().expect("the callee ends in its return");
    // The end of the callee's token chain: its token nobody consumes.
    let mut chain_end = None;
    for &op in ops {
        if m.op(op).name == "graph.entry_token" {
            if let Some(t) = token_in {
                map.insert(m.result(op, 0), t);
                chain_end = chain_end.or(Some(t));
                continue;
            }
        }
        let copy = m.clone_op(op, &mut map);
        instantiate_op(m, copy, &binding);
        // A draw takes the key of the function that runs: its name (the
        // function it is in from here on) and its seed, not the callee's
        // (the callee's seed had stayed beside the caller's name).
        if m.op(copy).name == "graph.rng" {
            match m.attr(func, "deterministic").and_then(Attr::as_int) {
                Some(seed) => m.set_attr(copy, "seed", Attr::Int(seed)),
                None => {
                    m.op_mut(copy).attrs.remove("seed");
                }
            }
        }
        m.insert_op(
            m.parent_block(call).expect("the call is in a block"),
            m.position(call).expect("in its block"),
            copy,
        );
        if let Some(&t) = m.results(copy).last().filter(|&&t| *m.value_type(t) == Type::Token) {
            chain_end = Some(t);
        }
    }
    let returned: Vec<ValueId> = m.operands(*ret).iter().map(|v| *map.get(v).unwrap_or(v)).collect();
    for (i, &r) in results.iter().enumerate() {
        let with = match returned.get(i) {
            Some(&v) => v,
            None => match chain_end.or(token_in) {
                Some(t) => t,
                None => continue,
            },
        };
        m.replace_all_uses(r, with);
    }
    m.erase_op(call);
}

/// Rewrites the types of `op`'s results (and of the ops and block
/// arguments inside it) and a guard's constraint in the dims of `binding`.
fn instantiate_op(m: &mut Module, op: OpId, binding: &BTreeMap<String, DimExpr>) {
    if binding.is_empty() {
        return;
    }
    let ops: Vec<OpId> = std::iter::once(op).chain(m.walk_op(op)).collect();
    for inner in ops {
        let mut values = m.results(inner).to_vec();
        for r in m.regions(inner).to_vec() {
            values.extend_from_slice(m.block_args(m.region_block(r)));
        }
        for v in values {
            let ty = instantiate(m.value_type(v), binding);
            m.set_value_type(v, ty);
        }
        let guarded = m
            .attr(inner, "constraint")
            .and_then(Attr::as_str)
            .and_then(ShapeConstraint::parse);
        if let (true, Some(c)) = (m.op(inner).name == "graph.guard", guarded) {
            let text = c.substitute(|s| binding.get(s).cloned()).to_string();
            m.set_attr(inner, "constraint", Attr::str(text));
        }
    }
}

/// A value returned as it came in (a parameter, a constant) or returned
/// twice gets a copy, so that every result is the output of its own kernel.
fn copy_returned_inputs(m: &mut Module, func: OpId) {
    let entry = m.entry_block(func).expect("a function has a body");
    let Some(&ret) = m.block_ops(entry).last().filter(|&&r| m.op(r).name == "graph.return") else {
        return;
    };
    let mut seen = HashSet::new();
    for i in 0..m.operands(ret).len() {
        let v = m.operands(ret)[i];
        let computed = m.defining_op(v).is_some_and(|d| !cloneable(m, d));
        let first = seen.insert(v);
        let ty = m.value_type(v).clone();
        if (computed && first) || !matches!(ty, Type::Tensor { .. } | Type::Scalar(_)) {
            continue;
        }
        let loc = m.op(ret).loc.clone();
        let mut b = Builder::before(m, ret);
        let copy = b.op("graph.broadcast").operand(v).result(ty).loc(loc).build_value();
        m.op_mut(ret).operands[i] = copy;
    }
}

/// A kernel's tiling and launch.
struct Config {
    tile: Vec<i64>,
    block: i64,
    grid: Vec<GridDim>,
    stages: i64,
    knobs: BTreeMap<String, Attr>,
    /// A matmul on a target whose K loop may get a producer warpgroup.
    specialize: bool,
    /// A matmul's variant for a small M (the kernel's `narrow`).
    narrow: Option<Narrow>,
}

/// The geometry of a matmul's narrow variant, launched when M is at most
/// `max_m` (`spec/ir-schedule.md`, "Narrow variants").
struct Narrow {
    max_m: i64,
    tile: [i64; 3],
    block: i64,
    stages: i64,
    grid: Vec<GridDim>,
}

impl Config {
    /// Whether `other` tiles and launches the kernel as this one does.
    fn same_geometry(&self, other: &Config) -> bool {
        (&self.tile, self.block, &self.grid, self.stages, self.specialize)
            == (&other.tile, other.block, &other.grid, other.stages, other.specialize)
    }

    /// The kernel's variant of this geometry, launched `when` one of the
    /// conjunctions holds (an entry of the kernel's `tuned`).
    fn variant_attr(&self, when: &[Vec<ShapeConstraint>]) -> Attr {
        let mut d = geometry_attrs(&self.tile, self.block, self.stages, &self.grid);
        d.insert(
            "when".to_string(),
            Attr::Array(when.iter().map(|c| Attr::str(ShapeConstraint::join(c))).collect()),
        );
        d.insert("warp_specialize".to_string(), Attr::Bool(self.specialize));
        Attr::Dict(d)
    }
}

/// A kernel's configuration under each measured configuration of its
/// function, and the shapes each is nearest to (`regions`, in the same
/// order): the first configuration and, when they tile the kernel
/// differently, its tuned variants, one per geometry, each launched for
/// the shapes of the measurements that chose it.
fn tuned_variants(configs: Vec<Config>, regions: &tuned::Regions) -> (Config, Vec<Attr>) {
    let mut distinct: Vec<(Config, Vec<tuned::Span>)> = Vec::new();
    for (config, cells) in configs.into_iter().zip(&regions.cells) {
        match distinct.iter_mut().find(|(d, _)| d.same_geometry(&config)) {
            Some((_, joined)) => joined.extend(cells.iter().cloned()),
            None => distinct.push((config, cells.clone())),
        }
    }
    distinct.retain(|(_, cells)| !cells.is_empty());
    let variants = if distinct.len() > 1 {
        distinct
            .iter()
            .map(|(c, cells)| c.variant_attr(&regions.condition(cells.clone())))
            .collect()
    } else {
        Vec::new()
    };
    let config = distinct
        .into_iter()
        .next()
        .map(|(c, _)| c)
        .expect("every shape is nearest a measurement");
    (config, variants)
}

impl Narrow {
    fn to_attr(&self) -> Attr {
        let mut d = geometry_attrs(&self.tile, self.block, self.stages, &self.grid);
        d.insert("max_m".to_string(), Attr::Int(self.max_m));
        Attr::Dict(d)
    }
}

/// The geometry of a kernel's variant as the entries of its dictionary
/// (`tile_shape`, `block`, `stages`, `grid`), which to_tile's `Geometry`
/// reads back.
fn geometry_attrs(tile: &[i64], block: i64, stages: i64, grid: &[GridDim]) -> BTreeMap<String, Attr> {
    BTreeMap::from([
        ("tile_shape".to_string(), Attr::ints(tile.iter().copied())),
        ("block".to_string(), Attr::ints([block, 1, 1])),
        ("stages".to_string(), Attr::Int(stages)),
        ("grid".to_string(), grid_attr(grid)),
    ])
}

fn grid_attr(grid: &[GridDim]) -> Attr {
    Attr::Array(grid.iter().map(GridDim::to_attr).collect())
}

/// `size` made to respect the constraints on `dim`: kept when
/// [`tile_respects`] the modulus of a divisibility constraint (a power of
/// two always does: 2048 over `N % 3 == 0` is kept, not cut to 1), else
/// the largest divisor of both; and, over a constant
/// dim, no larger than the dim (the largest power of two that fits), so a
/// tile never exceeds the tensor.
fn constrain(size: i64, dim: &DimExpr, constraints: &[Divisible]) -> i64 {
    if let Some(c) = modulus_of(constraints, dim) {
        if !tile_respects(size, c.modulus) {
            return gcd(c.modulus, size);
        }
    }
    match dim.as_const() {
        Some(d) if d > 0 && d < size => 1 << (63 - d.leading_zeros()),
        _ => size,
    }
}

/// The candidates of a knob: `values` that respect the constraints on
/// `dim` and fit in it when it is a constant, and the chosen one.
fn knob(values: &[i64], chosen: i64, dim: Option<&DimExpr>, constraints: &[Divisible]) -> Attr {
    let modulus = dim.and_then(|d| modulus_of(constraints, d)).map(|c| c.modulus);
    let extent = dim.and_then(DimExpr::as_const);
    let mut list: Vec<i64> = values
        .iter()
        .copied()
        .filter(|&v| modulus.is_none_or(|c| tile_respects(v, c)) && extent.is_none_or(|d| v <= d))
        .chain([chosen])
        .collect();
    list.sort_unstable();
    list.dedup();
    Attr::ints(list)
}

/// `tile` (`[BM, BN]` or `[BM, BN, BK]`) with the entries a tuner chose.
fn tuned_tile<const N: usize>(mut tile: [i64; N], tuned: &BTreeMap<String, i64>) -> [i64; N] {
    for (t, knob) in tile.iter_mut().zip(["BM", "BN", "BK"]) {
        if let Some(&v) = tuned.get(knob) {
            *t = v;
        }
    }
    tile
}

/// Threads per block of matmul and attention kernels: the tuner's `warps`,
/// else the target's.
fn tuned_threads(target: Target, tuned: &BTreeMap<String, i64>) -> i64 {
    tuned.get("warps").map_or(target.matmul_threads, |w| w * 32)
}

/// Threads per block of a matmul of `rows`-row tiles: the tuner's
/// `warps`, else the target's, but one warpgroup for a 64-row tile on
/// sm_90a, whose wgmma takes 64 rows a warpgroup (two would split the
/// rows into halves no wgmma takes, and fall back to `mma.sync`), where
/// the product is not on CUDA cores (`core`).
fn matmul_threads(target: Target, rows: i64, tuned: &BTreeMap<String, i64>, core: bool) -> i64 {
    match tuned.get("warps") {
        None if target.name == "sm_90a" && rows == 64 && !core => 128,
        _ => tuned_threads(target, tuned),
    }
}

fn schedule(
    m: &Module,
    group: &Group,
    target: Target,
    constraints: &[Divisible],
    tuned: &BTreeMap<String, i64>,
) -> Result<Config, Box<VerifyError>> {
    let dims_of = |v: ValueId| m.value_type(v).dims().map(<[_]>::to_vec).unwrap_or_default();
    let out = dims_of(m.result(group.root, 0));
    let Some(anchor) = group.anchor else {
        return Ok(thread_per_item(&out, vec![ELEMENTWISE_THREADS]));
    };
    let tiled = tiled_dims(m, anchor);
    if group.pattern.starts_with("matmul") {
        let a = m.operands(anchor)[0];
        let elem = m.value_type(a).elem().unwrap_or(ScalarType::F32);
        let source = m.attr(anchor, "tile_shape").and_then(Attr::as_ints);
        let dim = |i: usize| tiled.iter().find(|t| t.index == i).map(|t| &t.dim);
        let narrow_target = target
            .narrow_matmul(elem)
            .filter(|_| source.is_none() && tuned.is_empty());
        // A constant M that small takes the narrow geometry as its own.
        let few_rows = narrow_target.filter(|n| dim(0).and_then(DimExpr::as_const).is_some_and(|c| c <= n.max_m));
        let mut tile = match few_rows {
            Some(n) => n.tile,
            None => tuned_tile(
                match source.as_deref() {
                    Some(&[bm, bn, bk]) => [bm, bn, bk],
                    _ => target.matmul_tile(elem),
                },
                tuned,
            ),
        };
        // An epilogue of transcendental functions needs registers for its
        // temporaries next to the accumulator: by default, at most
        // EPILOGUE_ELEMENTS_PER_THREAD accumulator elements per thread. A
        // product on CUDA cores holds at most CORE_ACCUMULATOR_WORDS
        // registers of accumulators a thread, and half the elements under
        // such an epilogue.
        let core = target.name != "cpu" && !on_tensor_cores(m, anchor, &target, elem);
        // Registers an accumulator element takes.
        let acc_words = i64::from(accumulate_of(m, anchor).bits().div_ceil(32));
        if source.is_none() && tuned.is_empty() {
            let words = core.then_some(acc_words);
            let epilogue = group.members.iter().any(|&o| transcendental(m, o));
            let most = if core {
                EPILOGUE_ELEMENTS_PER_THREAD / 2
            } else {
                EPILOGUE_ELEMENTS_PER_THREAD
            };
            let over = |tile: &[i64; 3]| {
                let per_thread = tile[0] * tile[1] / target.matmul_threads;
                (epilogue && per_thread > most) || words.is_some_and(|w| per_thread * w > CORE_ACCUMULATOR_WORDS)
            };
            halve_larger(&mut tile, 64, over);
            if core {
                tile[2] = tile[2].min(CORE_K);
            }
        }
        for t in &tiled {
            tile[t.index] = constrain(tile[t.index], &t.dim, constraints);
        }
        // Each thread holds its share of the tile's accumulators in
        // registers: a `tile_shape` that gives it more words than a
        // thread's registers can hold cannot be compiled (LLVM spent
        // minutes spilling a [127, 4096, 2] tile of f32).
        let threads = few_rows.map_or_else(|| matmul_threads(target, tile[0], tuned, core), |n| n.threads);
        let words = tile[0] * tile[1] * acc_words / threads.max(1);
        if words > MAX_ACCUMULATOR_WORDS {
            return Err(Box::new(
                VerifyError::at_op(
                    m,
                    anchor,
                    format!(
                        "the matmul tile {} gives each of its {threads} threads {words} words of accumulators, more than a thread's registers hold",
                        Attr::ints(tile)
                    ),
                )
                .with_label("this matmul's tile does not fit in registers")
                .with_code(Code::E0204)
                .with_note(format!(
                    "a thread has at most 255 registers; keep `tile_shape`'s rows × columns at most {} here",
                    MAX_ACCUMULATOR_WORDS * threads / acc_words
                )),
            ));
        }
        let wanted = match few_rows {
            Some(n) => n.stages,
            None => tuned.get("stages").copied().unwrap_or(target.matmul_stages),
        };
        let batch = num_elements(&out[..out.len().saturating_sub(2)]);
        let specialize = specializes(&target, tuned);
        let known = |d: &DimExpr| {
            d.as_const()
                .unwrap_or_else(|| modulus_of(constraints, d).map_or(1, |c| c.modulus))
        };
        let loads_whole_rows = copied_operands(m, anchor)
            .iter()
            .all(|ty| tessera_ir_tile::strides_aligned(ty, 16, known));
        let persistent = persists(&target, tuned, specialize && loads_whole_rows);
        let geometry = |tile: [i64; 3], wanted: i64| -> Result<(i64, Vec<GridDim>), Box<VerifyError>> {
            let stages = fitting_stages(&target, wanted, |s| matmul_shared_bytes(&target, tile, s, elem));
            let bytes = matmul_shared_bytes(&target, tile, stages, elem);
            if !target.fits_shared(bytes) {
                return Err(Box::new(
                    VerifyError::at_op(
                        m,
                        anchor,
                        format!(
                            "the matmul tile {} needs {bytes} bytes of shared memory, more than {} allows",
                            Attr::ints(tile),
                            target.name
                        ),
                    )
                    .with_label("this matmul's tile does not fit")
                    .with_code(Code::E0805)
                    .with_note(format!(
                        "{} has {} bytes of shared memory per block; choose a smaller `tile_shape`",
                        target.name,
                        target.shared_limit.unwrap_or_default()
                    )),
                ));
            }
            let tiles = vec![
                GridDim::ceil_div(dim(0).unwrap_or(&DimExpr::constant(1)), tile[0]),
                GridDim::ceil_div(dim(1).unwrap_or(&DimExpr::constant(1)), tile[1]),
                GridDim::ceil_div(&batch, 1),
            ];
            Ok((
                stages,
                if persistent {
                    vec![GridDim::Persistent(tiles)]
                } else {
                    tiles
                },
            ))
        };
        let (stages, grid) = geometry(tile, wanted)?;
        // A symbolic M gets a narrow variant when the default tile is
        // taller than the target's narrow one, nothing chose the tile, and
        // M may be that small (no `where` makes it a multiple of more).
        let narrow = match (narrow_target, dim(0)) {
            (Some(n), Some(m_dim))
                if m_dim.as_const().is_none()
                    && n.tile[0] < tile[0]
                    && modulus_of(constraints, m_dim).is_none_or(|c| c.modulus <= n.max_m) =>
            {
                let mut narrow_tile = n.tile;
                for t in tiled.iter().filter(|t| t.index > 0) {
                    narrow_tile[t.index] = constrain(narrow_tile[t.index], &t.dim, constraints);
                }
                let (narrow_stages, narrow_grid) = geometry(narrow_tile, n.stages)?;
                Some(Narrow {
                    max_m: n.max_m,
                    tile: narrow_tile,
                    block: n.threads,
                    stages: narrow_stages,
                    grid: narrow_grid,
                })
            }
            _ => None,
        };
        let stage_list: Vec<i64> = (2..=target.matmul_stages).collect();
        let mut knobs = BTreeMap::from([
            ("BM".to_string(), knob(&[64, 128, 256], tile[0], dim(0), constraints)),
            ("BN".to_string(), knob(&[64, 128, 256], tile[1], dim(1), constraints)),
            ("BK".to_string(), knob(&[32, 64, 128], tile[2], dim(2), constraints)),
            ("stages".to_string(), knob(&stage_list, stages, None, constraints)),
        ]);
        if target.persistent.is_some() {
            knobs.insert(PERSISTENT.to_string(), Attr::ints([0, 1]));
        }
        return Ok(Config {
            tile: tile.to_vec(),
            block: few_rows.map_or_else(|| matmul_threads(target, tile[0], tuned, core), |n| n.threads),
            grid,
            stages,
            knobs: producer_knob(&target, knobs),
            specialize,
            narrow,
        });
    }
    if group.pattern == "scan" {
        // One thread per line along the axis (a 1-D grid with a bound
        // check, as elementwise kernels), which it walks in order.
        let x = dims_of(m.operands(anchor)[0]);
        let axis = m.attr(anchor, "axis").and_then(Attr::as_int).unwrap_or(-1);
        let lines: Vec<DimExpr> = x
            .iter()
            .enumerate()
            .filter(|&(i, _)| Some(i) != normalize_axis(axis, x.len()))
            .map(|(_, d)| d.clone())
            .collect();
        return Ok(thread_per_item(&lines, vec![1]));
    }
    if group.pattern == "attention" {
        return attention_config(m, anchor, &tiled, &out, target, constraints, tuned);
    }
    // Row kernels: one row (softmax, norm) or one output element (reduce)
    // per block, the row walked in chunks.
    let x = dims_of(m.operands(anchor)[0]);
    let Some(row) = tiled.first() else {
        return Err(Box::new(
            VerifyError::at_op(m, anchor, "this op has no axis to tile").with_label("malformed op"),
        ));
    };
    let chunk = match row.dim.as_const() {
        Some(n) => row_chunk(Some(n)),
        None => constrain(row_chunk(None), &row.dim, constraints),
    };
    // A walk of 64-bit columns (or of any accumulated in a 64-bit type)
    // takes half the chunk, the same bytes a thread in flight: eight
    // columns of two registers a thread spilled an f64 softmax of 3000
    // columns on sm_80 (12 bytes).
    let input = m.value_type(m.operands(anchor)[0]).elem().unwrap_or(ScalarType::F32);
    let wide = crate::targets::column_bits(input, accumulate_of(m, anchor)) > 32;
    let chunk = if wide && chunk > 1024 { chunk / 2 } else { chunk };
    let threads = row_threads(chunk);
    let blocks = if group.pattern == "reduce" {
        let axes: HashSet<usize> = m
            .attr(anchor, "axes")
            .and_then(Attr::as_ints)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|a| normalize_axis(a, x.len()))
            .collect();
        let kept: Vec<DimExpr> = x
            .iter()
            .enumerate()
            .filter(|(i, _)| !axes.contains(i))
            .map(|(_, d)| d.clone())
            .collect();
        if !axes.contains(&(x.len() - 1)) {
            // The last axis is kept: rows are not contiguous, so each thread
            // folds the reduced elements of one output in order.
            return Ok(thread_per_item(&kept, vec![1]));
        }
        num_elements(&kept)
    } else {
        let axis = x
            .iter()
            .position(|d| *d == row.dim)
            .unwrap_or(x.len().saturating_sub(1));
        let rows: Vec<DimExpr> = x
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != axis)
            .map(|(_, d)| d.clone())
            .collect();
        num_elements(&rows)
    };
    let tile = if group.pattern == "reduce" {
        vec![chunk]
    } else {
        vec![1, chunk]
    };
    Ok(Config {
        tile,
        block: threads,
        grid: vec![GridDim::ceil_div(&blocks, 1)],
        stages: 1,
        knobs: BTreeMap::from([
            (
                "BC".to_string(),
                knob(&[256, 512, 1024, 2048], chunk, Some(&row.dim), constraints),
            ),
            ("threads".to_string(), Attr::ints([128, 256])),
        ]),
        specialize: false,
        narrow: None,
    })
}

/// The configuration of a kernel of one thread per item of `items` (their
/// count): a 1-D grid of ELEMENTWISE_THREADS-thread blocks, rounded up.
fn thread_per_item(items: &[DimExpr], tile: Vec<i64>) -> Config {
    let threads = ELEMENTWISE_THREADS;
    Config {
        tile,
        block: threads,
        grid: vec![GridDim::ceil_div(&num_elements(items), threads)],
        stages: 1,
        knobs: BTreeMap::from([("threads".to_string(), Attr::ints([128, 256, 512]))]),
        specialize: false,
        narrow: None,
    }
}

/// Accumulator elements per thread a matmul with a transcendental epilogue
/// keeps by default (more spill on sm_80 and sm_90a); half as many on
/// CUDA cores (an f32 product with a tanh GELU spilled 328 to 392 bytes
/// with 32).
const EPILOGUE_ELEMENTS_PER_THREAD: i64 = 32;

/// Accumulator registers a thread of a matmul computed on CUDA cores (or
/// the AMD vector ALUs) keeps by default: a 128 × 128 f32 tile on 256
/// threads. Twice that spilled: a 128 × 256 tile of i32 products of i8
/// (7388 bytes on sm_90a), 128 × 128 f64 or i64 accumulators (812 to
/// 2348 bytes on sm_80 and sm_90a).
const CORE_ACCUMULATOR_WORDS: i64 = 64;

/// The most accumulator words a `tile_shape` may give a thread: past a
/// thread's 255 registers every one of them spills.
const MAX_ACCUMULATOR_WORDS: i64 = 256;

/// The K of a matmul tile computed on CUDA cores: sm_90a's 128 for 8-bit
/// operands (one 128-byte swizzle row, for wgmma) spilled an i8 product
/// (64 to 108 bytes), whose unrolled K steps LLVM merged into wider loads.
const CORE_K: i64 = 32;

/// The accumulator dtype of the matmul `op`: its `accumulate`, else its
/// result's dtype.
fn accumulate_of(m: &Module, op: OpId) -> ScalarType {
    m.attr(op, "accumulate")
        .and_then(Attr::as_type)
        .and_then(Type::elem)
        .or_else(|| m.value_type(m.result(op, 0)).elem())
        .unwrap_or(ScalarType::F32)
}

/// Whether the matmul `op` on operands of `elem` is computed on tensor
/// cores (or matrix cores) on `target`, as the code generator decides it
/// (`Target::computes_on_matrix_units`); the others are sized for the
/// CUDA cores' registers.
fn on_tensor_cores(m: &Module, op: OpId, target: &Target, elem: ScalarType) -> bool {
    tessera_ir_tile::Target::from_name(target.name)
        .is_some_and(|t| t.computes_on_matrix_units(elem, elem, accumulate_of(m, op)))
}

/// Halves the larger of a tile's first two dims (its columns on a tie)
/// while `over` holds and that dim is above `floor`.
fn halve_larger<const N: usize>(tile: &mut [i64; N], floor: i64, over: impl Fn(&[i64; N]) -> bool) {
    while over(tile) && tile[0].max(tile[1]) > floor {
        let i = if tile[1] >= tile[0] { 1 } else { 0 };
        tile[i] /= 2;
    }
}

/// Whether `op` is an elementwise op computing a transcendental function.
fn transcendental(m: &Module, op: OpId) -> bool {
    m.op(op).name == "graph.elementwise"
        && m.attr(op, "fn").and_then(Attr::as_str).is_some_and(|f| {
            matches!(
                f,
                "exp"
                    | "exp2"
                    | "log"
                    | "tanh"
                    | "sigmoid"
                    | "gelu"
                    | "gelu_erf"
                    | "silu"
                    | "pow"
                    | "sin"
                    | "cos"
                    | "erf"
            )
        })
}

/// The most stages, up to `wanted` and at least 1, whose shared memory
/// (`bytes(stages)`) the target has room for.
fn fitting_stages(target: &Target, wanted: i64, bytes: impl Fn(i64) -> i64) -> i64 {
    let mut stages = wanted;
    while stages > 1 && !target.fits_shared(bytes(stages)) {
        stages -= 1;
    }
    stages
}

/// Key and value tiles an attention kernel has in flight by default: the
/// next step's are copied while this step's are used.
const ATTENTION_STAGES: i64 = 2;

/// Attention: one block per BM query rows of one batch entry (x → the
/// query tile, y → the flattened batch); the key loop walks BN keys at a
/// time, `stages` steps of keys and values in flight (fewer when shared
/// memory lacks room). The head dims must be constants (q, k and v tiles
/// live in shared memory).
fn attention_config(
    m: &Module,
    anchor: OpId,
    tiled: &[TiledDim],
    out: &[DimExpr],
    target: Target,
    constraints: &[Divisible],
    tuned: &BTreeMap<String, i64>,
) -> Result<Config, Box<VerifyError>> {
    let q = m.value_type(m.operands(anchor)[0]);
    let elem = q.elem().unwrap_or(ScalarType::F32);
    let head = |v: ValueId| {
        m.value_type(v)
            .dims()
            .and_then(|d| d.last().and_then(DimExpr::as_const))
    };
    let (Some(d), Some(dv)) = (head(m.operands(anchor)[0]), head(m.operands(anchor)[2])) else {
        return Err(Box::new(
            VerifyError::at_op(m, anchor, "the head dims of an attention must be constants")
                .with_label("symbolic head dim")
                .with_note("q, k and v tiles are staged in shared memory, whose size is fixed at compile time"),
        ));
    };
    let head = d.max(dv);
    // Products of 32- and 64-bit floats take no tensor cores: the
    // warpgroup geometry sm_90a gives 16- and 8-bit ones spilled there (an
    // f32 attention of head 64 on 384 consumer threads, 872 bytes), and
    // they take every other target's.
    let tensor_cores = elem.is_float() && elem.bits() <= 16;
    let threads = tuned.get("warps").map_or_else(
        || {
            if tensor_cores {
                target.attention_threads(head)
            } else {
                target.matmul_threads
            }
        },
        |w| w * 32,
    );
    let default_tile = if tensor_cores {
        target.attention_tile(threads, head)
    } else {
        [64, 64]
    };
    let mut tile = tuned_tile(default_tile, tuned);
    for t in tiled {
        tile[t.index] = constrain(tile[t.index], &t.dim, constraints);
    }
    // A query length that takes fewer rows than the default tile keeps one
    // consumer warpgroup per 64 rows on sm_90a: three on a tile of 64 or
    // 128 rows spilled 2080 to 4380 bytes.
    let threads = match tuned.get("warps") {
        None if target.name == "sm_90a" && tensor_cores && tile[0] % 64 == 0 => threads.min(128 * (tile[0] / 64)),
        _ => threads,
    };
    // A default tile that does not fit even with one step of keys in
    // flight halves its larger dim, down to 16: an f32 head of 128 took
    // 104448 bytes at [64, 64], and AMD's LDS has 65536.
    if !tuned.contains_key("BM") && !tuned.contains_key("BN") {
        halve_larger(&mut tile, 16, |tile| {
            !target.fits_shared(attention_shared_bytes(&target, *tile, d, dv, 1, elem))
        });
    }
    // On sm_80 a head wider than 128 computes its products through f32
    // staging in shared memory: the stages leave room for it (a head of
    // 256 filled sm_80's 163 KiB with two stages and had none).
    let staging = if target.name == "sm_80" && head > 128 {
        tile[0] * dv * 4
    } else {
        0
    };
    let wanted = tuned.get("stages").copied().unwrap_or(ATTENTION_STAGES);
    let stages = fitting_stages(&target, wanted, |s| {
        attention_shared_bytes(&target, tile, d, dv, s, elem) + staging
    });
    let bytes = attention_shared_bytes(&target, tile, d, dv, stages, elem);
    if !target.fits_shared(bytes) {
        return Err(Box::new(
            VerifyError::at_op(
                m,
                anchor,
                format!(
                    "the attention tiles {} with head dims {d} and {dv} need {bytes} bytes of shared memory, more than {} allows",
                    Attr::ints(tile),
                    target.name
                ),
            )
            .with_label("this attention's tiles do not fit")
            .with_code(Code::E0805),
        ));
    }
    let batch = num_elements(&out[..out.len().saturating_sub(2)]);
    let dim = |i: usize| tiled.iter().find(|t| t.index == i).map(|t| &t.dim);
    let one = DimExpr::constant(1);
    Ok(Config {
        tile: tile.to_vec(),
        block: threads,
        grid: vec![
            GridDim::ceil_div(dim(0).unwrap_or(&one), tile[0]),
            GridDim::ceil_div(&batch, 1),
            GridDim::Const(1),
        ],
        stages,
        knobs: producer_knob(
            &target,
            BTreeMap::from([
                ("BM".to_string(), knob(&[64, 128], tile[0], dim(0), constraints)),
                ("BN".to_string(), knob(&[64, 128], tile[1], dim(1), constraints)),
            ]),
        ),
        specialize: specializes(&target, tuned),
        narrow: None,
    })
}

/// `knobs` with `producers = [0, 1]` where the target has producer
/// warpgroups: the tuner measures the kernel with and without one.
fn producer_knob(target: &Target, mut knobs: BTreeMap<String, Attr>) -> BTreeMap<String, Attr> {
    if target.warp_specialize {
        knobs.insert(PRODUCERS.to_string(), Attr::ints([0, 1]));
    }
    knobs
}

/// Whether a matmul walks its tiles on a persistent grid: where the target
/// has them, as the tuned configuration's `persistent` says, else by the
/// target's default for a kernel that `produces`: one that asks for a
/// producer warpgroup and whose operands TMA can load, so that the
/// producer loads the next tile's operands while the consumers store this
/// one's. Without a producer a block cannot overlap its tiles, and the
/// walk's registers are a cost for nothing.
fn persists(target: &Target, tuned: &BTreeMap<String, i64>, produces: bool) -> bool {
    match (target.persistent, tuned.get(PERSISTENT)) {
        (None, _) => false,
        (Some(_), Some(&chosen)) => chosen != 0,
        (Some(default), None) => default && produces,
    }
}

/// The types of the operands matmul `anchor` copies tiles of: A's, and
/// B's or, for a transposed B, its source's (whose row strides a TMA
/// tensor map needs aligned).
fn copied_operands(m: &Module, anchor: OpId) -> Vec<Type> {
    m.operands(anchor)
        .iter()
        .take(2)
        .map(|&v| match m.defining_op(v) {
            Some(t) if m.op(t).name == "graph.transpose" => m.operands(t)[0],
            _ => v,
        })
        .map(|v| m.value_type(v).clone())
        .collect()
}

/// Whether a pipelined kernel asks for a producer warpgroup: where the
/// target has them, unless the tuned configuration says `producers = 0`.
fn specializes(target: &Target, tuned: &BTreeMap<String, i64>) -> bool {
    target.warp_specialize && tuned.get(PRODUCERS) != Some(&0)
}

/// Replaces the group's ops by one `schedule.kernel` at the root's place.
fn build_kernel(m: &mut Module, group: &Group, name: &str, config: Config, variants: Vec<Attr>) {
    let members: HashSet<OpId> = group.members.iter().copied().collect();
    // The kernel's inputs in the order a walk from its root back through
    // the operands meets them: a matmul's A, then B, then the epilogue's.
    let mut externals: Vec<ValueId> = Vec::new();
    let mut constants: Vec<OpId> = Vec::new();
    let mut visited: HashSet<OpId> = HashSet::new();
    let mut stack: Vec<(OpId, usize)> = vec![(group.root, 0)];
    visited.insert(group.root);
    while let Some((op, i)) = stack.pop() {
        let Some(&v) = m.operands(op).get(i) else { continue };
        stack.push((op, i + 1));
        match m.defining_op(v) {
            Some(d) if members.contains(&d) => {
                if visited.insert(d) {
                    stack.push((d, 0));
                }
            }
            Some(d) if cloneable(m, d) => clone_order(m, d, &mut constants),
            _ => {
                if !externals.contains(&v) {
                    externals.push(v);
                }
            }
        }
    }
    let arg_types: Vec<Type> = externals.iter().map(|&v| m.value_type(v).clone()).collect();
    let root_value = m.result(group.root, 0);
    let result_type = m.value_type(root_value).clone();
    let loc = m.op(group.anchor.unwrap_or(group.root)).loc.clone();
    let mut b = Builder::before(m, group.root);
    let region = b.region(&arg_types, |b, args| {
        let mut map: HashMap<ValueId, ValueId> = externals.iter().copied().zip(args.iter().copied()).collect();
        for &op in constants.iter().chain(&group.members) {
            let copy = b.clone_op(op, &mut map);
            b.insert(copy);
        }
        let yielded = map[&root_value];
        b.op("schedule.yield").operand(yielded).loc(loc.clone()).build();
    });
    let grid = grid_attr(&config.grid);
    let mut kernel = b.op("schedule.kernel");
    if config.specialize {
        kernel = kernel.attr("warp_specialize", Attr::Bool(true));
    }
    if let Some(narrow) = &config.narrow {
        kernel = kernel.attr("narrow", narrow.to_attr());
    }
    if !variants.is_empty() {
        kernel = kernel.attr("tuned", Attr::Array(variants));
    }
    let kernel = kernel
        .operands(&externals)
        .region(region)
        .attr("name", name)
        .attr("pattern", group.pattern)
        .attr("tile_shape", Attr::ints(config.tile))
        .attr("block", Attr::ints([config.block, 1, 1]))
        .attr("grid", grid)
        .attr("stages", Attr::Int(config.stages))
        .attr("knobs", Attr::Dict(config.knobs))
        .result(result_type)
        .loc(loc)
        .build_value();
    m.replace_all_uses(root_value, kernel);
    for &op in group.members.iter().rev() {
        m.erase_op(op);
    }
}
