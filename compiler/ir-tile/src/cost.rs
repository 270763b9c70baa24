//! `estimate-cost`: the cost model of a kernel, floating-point operations
//! and bytes of global memory per launch, as expressions over the kernel's
//! dims that the runtime evaluates for each launch (`tessera profile`; the
//! model is in `spec/runtime.md`, "Profiling"). The pass sets them as the
//! kernel's `cost` attribute; the build pipeline runs it on Tile IR, before
//! `lower-tile-to-target`. It is an estimate read from the Tile IR, not a
//! count of what the hardware executes.
//!
//! FLOPs are counted per block for register tiles and per thread for
//! scalars:
//!
//! - a product (`tile.mma`, and the Target-IR products it becomes) of
//!   `MxK · KxN` is `2·M·N·K`, whatever its element types;
//! - `tile.binary`, `tile.unary` and `tile.cmp` on floating-point operands
//!   are one per element of the result (a tile), or one per thread (a
//!   scalar); `tile.reduce` on floats one per element of its operand;
//!   `tile.softmax` five per element (max, subtract, exp, sum, divide);
//! - both branches of a `tile.if` count; a `tile.while` counts once;
//! - everything inside a `tile.for` counts `⌈(ub − lb) / step⌉` times. The
//!   bounds are read as polynomials over the dims: constants, dim
//!   parameters, `tile.block_dim` (from the kernel's `block`), sums,
//!   differences and products of these; `tile.thread_id`, `tile.lane_id`
//!   and `tile.warp_id` count as 0 (the first thread's trip count, the
//!   largest of a grid-stride loop). A loop whose trip count cannot be read
//!   so (a bound loaded from memory, a non-constant step) leaves the
//!   kernel's FLOPs unknown;
//! - a walk of the launch's blocks over `ub` work items (`tile.for` from
//!   `tile.block_id` by `tile.grid_dim` of the same dim: a persistent
//!   grid's loop over its tiles) runs `ub` times in all, however many
//!   blocks share it: what it holds counts per launch, `ub` times. Its `ub`
//!   is read as a product of polynomials and of `⌈x / c⌉`s, written
//!   `(x + c − 1) floordiv c`.
//!
//! A launch does `blocks × (per_block + threads × per_thread) + per_launch`
//! FLOPs. Each sum is a list of terms; a term is a list of factors whose
//! product it is, each factor in the grid-entry form of `tile.launch`
//! (`128`, `2*D*H`, `cdiv(K, 128)`), so the polynomial dims and the
//! rounded-up trip counts are both read back by the runtime's one dim
//! evaluator.
//!
//! Bytes follow a compulsory-traffic model: every global memref parameter
//! once (elements × element bytes), and once more when the kernel writes it
//! (`mutable`): read and written back. Caches, re-reads of tiles by other
//! blocks and scratch memory are not modelled.

use std::collections::{BTreeMap, HashMap};

use tessera_diagnostics::Diagnostic;
use tessera_ir::{Attr, BlockId, DimExpr, MemSpace, Module, OpId, Pass, PassContext, Type, ValueDef, ValueId};

use crate::rules::func_kind;

/// The `estimate-cost` pass.
pub struct EstimateCost;

impl Pass for EstimateCost {
    fn name(&self) -> &'static str {
        "estimate-cost"
    }

    fn run(&mut self, m: &mut Module, _ctx: &PassContext) -> Result<(), Vec<Diagnostic>> {
        for func in m.functions() {
            if func_kind(m, func) == Some("kernel") {
                let cost = estimate_cost(m, func).to_attr();
                m.set_attr(func, COST_ATTR, cost);
            }
        }
        Ok(())
    }
}

/// The attribute that holds a kernel's cost.
pub const COST_ATTR: &str = "cost";

/// The ops that multiply two tiles: `tile.mma` and its Target-IR forms.
const PRODUCTS: &[&str] = &[
    "tile.mma",
    "nvptx.mma_sync",
    "nvptx.mma_fma",
    "nvptx.wgmma",
    "amdgpu.mfma",
    "amdgpu.mma_fma",
    "cpu.mma",
];

/// FLOPs per element of `tile.softmax`: max, subtract, exp, sum, divide.
const SOFTMAX_FLOPS: i64 = 5;

/// A kernel's cost, as expressions over its dims (see the module
/// documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelCost {
    /// Bytes of global memory a launch moves: a dim expression.
    pub bytes: String,
    /// None when a loop's trip count cannot be read.
    pub flops: Option<Flops>,
}

/// FLOPs as sums of products of grid entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flops {
    pub per_block: Vec<Vec<String>>,
    pub per_thread: Vec<Vec<String>>,
    /// What the walks of the launch's blocks over their work hold.
    pub per_launch: Vec<Vec<String>>,
}

impl KernelCost {
    /// The `cost` attribute: `{bytes = "…", flops_per_block = [[…]],
    /// flops_per_thread = [[…]]}`, and `flops_per_launch = [[…]]` when
    /// there are such terms; without the FLOPs when they are unknown.
    pub fn to_attr(&self) -> Attr {
        let mut dict = BTreeMap::from([("bytes".to_string(), Attr::str(&self.bytes))]);
        if let Some(f) = &self.flops {
            dict.insert("flops_per_block".into(), terms_attr(&f.per_block));
            dict.insert("flops_per_thread".into(), terms_attr(&f.per_thread));
            if !f.per_launch.is_empty() {
                dict.insert("flops_per_launch".into(), terms_attr(&f.per_launch));
            }
        }
        Attr::Dict(dict)
    }

    /// Reads a `cost` attribute; None when it does not have that form.
    pub fn from_attr(attr: &Attr) -> Option<KernelCost> {
        let dict = attr.as_dict()?;
        if dict
            .keys()
            .any(|k| !["bytes", "flops_per_block", "flops_per_thread", "flops_per_launch"].contains(&k.as_str()))
        {
            return None;
        }
        let bytes = dict.get("bytes")?.as_str()?.to_string();
        let flops = match (
            dict.get("flops_per_block"),
            dict.get("flops_per_thread"),
            dict.get("flops_per_launch"),
        ) {
            (None, None, None) => None,
            (Some(b), Some(t), launch) => Some(Flops {
                per_block: read_terms(b)?,
                per_thread: read_terms(t)?,
                per_launch: match launch {
                    Some(l) => read_terms(l)?,
                    None => Vec::new(),
                },
            }),
            _ => return None,
        };
        Some(KernelCost { bytes, flops })
    }
}

fn terms_attr(terms: &[Vec<String>]) -> Attr {
    Attr::Array(
        terms
            .iter()
            .map(|t| Attr::Array(t.iter().map(Attr::str).collect()))
            .collect(),
    )
}

fn read_terms(attr: &Attr) -> Option<Vec<Vec<String>>> {
    attr.as_array()?
        .iter()
        .map(|t| t.as_array()?.iter().map(|f| f.as_str().map(str::to_string)).collect())
        .collect()
}

/// The cost of kernel `func`, read from its Tile-IR ops.
pub fn estimate_cost(m: &Module, func: OpId) -> KernelCost {
    let mut bytes = DimExpr::constant(0);
    let mut dims = HashMap::new();
    if let Some(entry) = m.entry_block(func) {
        let args = m.block_args(entry);
        let mutable = m.attr(func, "mutable").and_then(Attr::as_ints).unwrap_or_default();
        let names: Vec<&str> = m
            .attr(func, "dims")
            .and_then(Attr::as_array)
            .map(|a| a.iter().filter_map(Attr::as_str).collect())
            .unwrap_or_default();
        let trailing = args.len().saturating_sub(names.len());
        for (i, &arg) in args.iter().enumerate() {
            if i >= trailing {
                dims.insert(arg, DimExpr::sym(names[i - trailing]));
            }
            if let Type::MemRef {
                dims: shape,
                elem,
                space: MemSpace::Global,
                ..
            } = m.value_type(arg)
            {
                let passes = if mutable.contains(&(i as i64)) { 2 } else { 1 };
                let element_bytes = i64::from(elem.bits().div_ceil(8));
                bytes = bytes.add(&elements(shape).mul(&DimExpr::constant(element_bytes * passes)));
            }
        }
    }
    let mut counter = Counter {
        m,
        dims,
        block: m.attr(func, "block").and_then(Attr::as_ints),
        per_block: Sums::default(),
        per_thread: Sums::default(),
        per_launch: Sums::default(),
    };
    let flops = match m.entry_block(func) {
        Some(entry) => counter.block(entry, &Loops::default()).ok().map(|()| Flops {
            per_block: counter.per_block.terms(),
            per_thread: counter.per_thread.terms(),
            per_launch: counter.per_launch.terms(),
        }),
        None => Some(Flops::default()),
    };
    KernelCost {
        bytes: bytes.to_string(),
        flops,
    }
}

fn elements(shape: &[DimExpr]) -> DimExpr {
    shape.iter().fold(DimExpr::constant(1), |n, d| n.mul(d))
}

/// The loops around an op: the product of the constant trip counts, and
/// the others as grid entries; whether one of them is a walk of the
/// launch's blocks (what it holds then counts per launch).
#[derive(Clone)]
struct Loops {
    constant: DimExpr,
    symbolic: Vec<String>,
    walked: bool,
}

impl Default for Loops {
    fn default() -> Loops {
        Loops {
            constant: DimExpr::constant(1),
            symbolic: Vec::new(),
            walked: false,
        }
    }
}

/// A sum of counts, grouped by the symbolic trip counts they are
/// multiplied by.
#[derive(Default)]
struct Sums(BTreeMap<Vec<String>, DimExpr>);

impl Sums {
    fn add(&mut self, loops: &Loops, count: DimExpr) {
        let entry = self.0.entry(loops.symbolic.clone()).or_default();
        *entry = entry.add(&count.mul(&loops.constant));
    }

    fn terms(&self) -> Vec<Vec<String>> {
        self.0
            .iter()
            .filter(|(_, count)| count.as_const() != Some(0))
            .map(|(trips, count)| {
                std::iter::once(count.to_string())
                    .chain(trips.iter().cloned())
                    .collect()
            })
            .collect()
    }
}

/// A loop whose trip count cannot be read.
struct Unknown;

struct Counter<'m> {
    m: &'m Module,
    /// The dim parameters, by value.
    dims: HashMap<ValueId, DimExpr>,
    block: Option<Vec<i64>>,
    per_block: Sums,
    per_thread: Sums,
    per_launch: Sums,
}

impl Counter<'_> {
    fn block(&mut self, block: BlockId, loops: &Loops) -> Result<(), Unknown> {
        let m = self.m;
        for &op in m.block_ops(block) {
            let name = m.op(op).name.as_str();
            let inner = if name == "tile.for" || name == "tile.pipeline" {
                self.trips(op, loops)?
            } else {
                loops.clone()
            };
            self.op(op, name, loops);
            for &r in m.regions(op) {
                self.block(m.region_block(r), &inner)?;
            }
        }
        Ok(())
    }

    /// Counts the FLOPs of one op (its regions aside).
    fn op(&mut self, op: OpId, name: &str, loops: &Loops) {
        let m = self.m;
        let operand = |i: usize| m.operands(op).get(i).map(|&v| m.value_type(v));
        let float = operand(0).and_then(Type::elem).is_some_and(|e| e.is_float());
        if PRODUCTS.contains(&name) {
            // The accumulator's columns (a transposed B has them as rows).
            let (Some(a), Some(c)) = (operand(0).and_then(Type::dims), operand(2).and_then(Type::dims)) else {
                return;
            };
            if let ([rows, inner], [_, cols]) = (a, c) {
                self.per_block(loops, DimExpr::constant(2).mul(rows).mul(cols).mul(inner));
            }
            return;
        }
        let (per_element, counted) = match name {
            "tile.binary" | "tile.unary" | "tile.cmp" => (1, m.results(op).first().map(|&r| m.value_type(r))),
            "tile.reduce" => (1, operand(0)),
            "tile.softmax" => (SOFTMAX_FLOPS, operand(0)),
            _ => return,
        };
        if !float {
            return;
        }
        match counted {
            Some(Type::Tensor { dims, .. }) => {
                self.per_block(loops, elements(dims).mul(&DimExpr::constant(per_element)))
            }
            Some(Type::Scalar(_)) if loops.walked => {
                let threads = self.block.as_ref().map_or(1, |b| b.iter().product());
                self.per_launch.add(loops, DimExpr::constant(per_element * threads));
            }
            Some(Type::Scalar(_)) => self.per_thread.add(loops, DimExpr::constant(per_element)),
            _ => {}
        }
    }

    /// Adds `count` FLOPs of a block's tiles inside `loops`: per launch in
    /// a walk of the blocks, else per block.
    fn per_block(&mut self, loops: &Loops, count: DimExpr) {
        match loops.walked {
            true => self.per_launch.add(loops, count),
            false => self.per_block.add(loops, count),
        }
    }

    /// The loops inside `tile.for` or `tile.pipeline` op `op`.
    fn trips(&self, op: OpId, outer: &Loops) -> Result<Loops, Unknown> {
        if let Some(work) = self.walk(op) {
            if outer.walked {
                return Err(Unknown);
            }
            let mut loops = outer.clone();
            loops.symbolic.extend(work);
            loops.symbolic.sort();
            loops.walked = true;
            return Ok(loops);
        }
        let bound = |i: usize| self.m.operands(op).get(i).and_then(|&v| self.value(v, 0));
        let (Some(lb), Some(ub), Some(step)) = (bound(0), bound(1), bound(2)) else {
            return Err(Unknown);
        };
        let step = step.as_const().filter(|&s| s > 0).ok_or(Unknown)?;
        let extent = ub.sub(&lb);
        let mut loops = outer.clone();
        match extent.as_const() {
            Some(c) => {
                let trips = if c <= 0 { 0 } else { c.saturating_add(step - 1) / step };
                loops.constant = loops.constant.mul(&DimExpr::constant(trips));
            }
            None if step == 1 => loops.symbolic.push(extent.to_string()),
            None => loops.symbolic.push(format!("cdiv({extent}, {step})")),
        }
        loops.symbolic.sort();
        Ok(loops)
    }

    /// The factors of the work items of `op` when it is a walk of the
    /// launch's blocks: a `tile.for` from `tile.block_id` by
    /// `tile.grid_dim` of the same dim, up to a product the model reads.
    fn walk(&self, op: OpId) -> Option<Vec<String>> {
        let m = self.m;
        let &[lb, ub, step] = m.operands(op) else { return None };
        let dim_of = |v: ValueId, name: &str| {
            m.defining_op(v)
                .filter(|&d| m.op(d).name == name)
                .and_then(|d| m.attr(d, "dim").and_then(Attr::as_int))
        };
        let walks = m.op(op).name == "tile.for"
            && matches!((dim_of(lb, "tile.block_id"), dim_of(step, "tile.grid_dim")), (Some(x), Some(y)) if x == y);
        walks.then(|| self.factors(ub, 0)).flatten()
    }

    /// `v` as a product of grid entries: polynomials over the dims, and
    /// `cdiv(x, c)` for `(x + c − 1) floordiv c`.
    fn factors(&self, v: ValueId, depth: usize) -> Option<Vec<String>> {
        const MAX_DEPTH: usize = 64;
        if depth > MAX_DEPTH {
            return None;
        }
        if let Some(p) = self.value(v, depth) {
            return Some(vec![p.to_string()]);
        }
        let m = self.m;
        let op = m.defining_op(v).filter(|&o| m.op(o).name == "tile.binary")?;
        let &[x, y] = m.operands(op) else { return None };
        match m.attr(op, "fn").and_then(Attr::as_str)? {
            "mul" => {
                let mut f = self.factors(x, depth + 1)?;
                f.extend(self.factors(y, depth + 1)?);
                Some(f)
            }
            "floordiv" => {
                let c = self.value(y, depth + 1)?.as_const().filter(|&c| c > 0)?;
                let rounded = self.value(x, depth + 1)?;
                let extent = rounded.sub(&DimExpr::constant(c - 1));
                Some(vec![format!("cdiv({extent}, {c})")])
            }
            _ => None,
        }
    }

    /// `v` as a polynomial over the dims, where the model reads it so.
    fn value(&self, v: ValueId, depth: usize) -> Option<DimExpr> {
        const MAX_DEPTH: usize = 64;
        if depth > MAX_DEPTH {
            return None;
        }
        let m = self.m;
        if let ValueDef::BlockArg { .. } = m.value_def(v) {
            return self.dims.get(&v).cloned();
        }
        let op = m.defining_op(v)?;
        let int = |name: &str| m.attr(op, name).and_then(Attr::as_int);
        match m.op(op).name.as_str() {
            "tile.const" => int("value").map(DimExpr::constant),
            "tile.thread_id" | "tile.lane_id" | "tile.warp_id" => Some(DimExpr::constant(0)),
            "tile.block_dim" => {
                let dim = usize::try_from(int("dim")?).ok()?;
                let block = self.block.as_ref()?;
                Some(DimExpr::constant(block.get(dim).copied().unwrap_or(1)))
            }
            "tile.binary" => {
                let operands = m.operands(op);
                let a = self.value(*operands.first()?, depth + 1)?;
                let b = self.value(*operands.get(1)?, depth + 1)?;
                match m.attr(op, "fn").and_then(Attr::as_str)? {
                    "add" => Some(a.add(&b)),
                    "sub" => Some(a.sub(&b)),
                    "mul" => Some(a.mul(&b)),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}
