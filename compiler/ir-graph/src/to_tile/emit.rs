//! Building blocks of the Tile-IR templates: index arithmetic over symbolic
//! dims, loops and conditionals, and the evaluation of a kernel's
//! elementwise ops on register tiles.

use std::collections::HashMap;

use tessera_base::gcd;
use tessera_ir::{Attr, BlockId, Builder, DimExpr, Loc, MemSpace, ScalarType, Type, ValueId};

use super::rows::RowSpan;
use super::{Kernel, Node, Src};
use crate::graph::COMPARE_FNS;
use crate::shape::{modulus_of, Divisible};
use crate::targets::{shared_layout, Target};

/// What every template of one kernel needs.
pub(crate) struct Gen {
    /// Each dim symbol's `index` parameter.
    pub dims: HashMap<String, ValueId>,
    /// The parameters of the kernel's inputs, in operand order.
    pub inputs: Vec<ValueId>,
    /// The output buffer.
    pub out: ValueId,
    pub loc: Loc,
    /// `order` of `tile.reduce`: "tree" in deterministic functions.
    pub order: &'static str,
    pub constraints: Vec<Divisible>,
    pub target: Target,
    /// The rows a row template's kernel computes (`rows::variants`).
    pub rows: RowSpan,
}

pub(crate) type Result<T> = std::result::Result<T, String>;

impl Gen {
    /// `exp(x)`: outside deterministic functions a GPU may compute it with
    /// its hardware approximation (`approx`; `spec/ir-tile.md`).
    pub fn exp(&self, b: &mut Builder<'_>, x: ValueId, ty: Type) -> ValueId {
        self.approximable(b, "exp", x, ty)
    }

    /// `2^x`, approximable as [`Gen::exp`] is.
    pub fn exp2(&self, b: &mut Builder<'_>, x: ValueId, ty: Type) -> ValueId {
        self.approximable(b, "exp2", x, ty)
    }

    fn approximable(&self, b: &mut Builder<'_>, f: &str, x: ValueId, ty: Type) -> ValueId {
        let mut op = b.op("tile.unary").operand(x).attr("fn", f);
        if self.order != "tree" {
            op = op.flag("approx");
        }
        op.result(ty).build_value()
    }

    /// A builder at the end of `block`, with the kernel's location.
    pub fn at<'m>(&self, b: &'m mut Builder<'_>, block: BlockId) -> Builder<'m> {
        let mut inner = Builder::at_end(b, block);
        inner.set_loc(self.loc.clone());
        inner
    }

    /// Whether a walk over `extent` in steps of `chunk` can end with a
    /// partial step (so the last chunk must be masked).
    pub fn ragged(&self, extent: &DimExpr, chunk: i64) -> bool {
        let exact = match extent.as_const() {
            Some(n) => n % chunk == 0,
            None => modulus_of(&self.constraints, extent).is_some_and(|c| c.modulus % chunk == 0),
        };
        !exact
    }

    /// The value of a dim: a polynomial over the dim parameters.
    pub fn dim(&self, b: &mut Builder<'_>, d: &DimExpr) -> Result<ValueId> {
        if let Some(c) = d.as_const() {
            return Ok(index(b, c));
        }
        let mut sum: Option<ValueId> = None;
        for (monomial, coeff) in d.terms() {
            let mut term: Option<ValueId> = None;
            for sym in monomial {
                let v = *self
                    .dims
                    .get(sym)
                    .ok_or_else(|| format!("the dim `{sym}` is not a parameter"))?;
                term = Some(match term {
                    None => v,
                    Some(t) => binary(b, "mul", t, v, Type::INDEX),
                });
            }
            let magnitude = coeff.abs();
            let term = match term {
                None => index(b, magnitude),
                Some(t) if magnitude == 1 => t,
                Some(t) => {
                    let c = index(b, magnitude);
                    binary(b, "mul", t, c, Type::INDEX)
                }
            };
            sum = Some(match (sum, coeff < 0) {
                (None, false) => term,
                (None, true) => {
                    let zero = index(b, 0);
                    binary(b, "sub", zero, term, Type::INDEX)
                }
                (Some(s), false) => binary(b, "add", s, term, Type::INDEX),
                (Some(s), true) => binary(b, "sub", s, term, Type::INDEX),
            });
        }
        Ok(sum.unwrap_or_else(|| index(b, 0)))
    }

    /// The value of a `graph.dim` node, in its integer type.
    pub fn dim_value(&self, b: &mut Builder<'_>, node: &Node, elem: ScalarType) -> Result<ValueId> {
        let d = node.dim().ok_or("a `graph.dim` without a dim")?;
        let v = self.dim(b, &d)?;
        Ok(b.op("tile.cast").operand(v).result(Type::Scalar(elem)).build_value())
    }

    /// The coordinates of linear index `lin` in row-major `dims`.
    pub fn unflatten(&self, b: &mut Builder<'_>, lin: ValueId, dims: &[DimExpr]) -> Result<Vec<ValueId>> {
        let mut coords = vec![lin; dims.len()];
        let mut rest = lin;
        for i in (1..dims.len()).rev() {
            if dims[i].as_const() == Some(1) {
                coords[i] = index(b, 0);
                continue;
            }
            let d = self.dim(b, &dims[i])?;
            coords[i] = binary(b, "rem", rest, d, Type::INDEX);
            rest = binary(b, "floordiv", rest, d, Type::INDEX);
        }
        if let Some(first) = coords.first_mut() {
            *first = rest;
        }
        Ok(coords)
    }

    /// The linear index of `coords` in row-major `dims`.
    pub fn linearize(&self, b: &mut Builder<'_>, coords: &[ValueId], dims: &[DimExpr]) -> Result<ValueId> {
        let Some(&first) = coords.first() else {
            return Ok(index(b, 0));
        };
        let mut lin = first;
        for (c, d) in coords.iter().zip(dims).skip(1) {
            let d = self.dim(b, d)?;
            let scaled = binary(b, "mul", lin, d, Type::INDEX);
            lin = binary(b, "add", scaled, *c, Type::INDEX);
        }
        Ok(lin)
    }

    /// A `tile.local` slot of a scalar, initialized to `init`.
    pub fn slot(&self, b: &mut Builder<'_>, elem: ScalarType, init: Attr) -> ValueId {
        let slot = b
            .op("tile.local")
            .result(Type::memref([], elem, MemSpace::Local))
            .build_value();
        let value = constant(b, init, Type::Scalar(elem));
        b.op("tile.store").operands(&[value, slot]).build();
        slot
    }

    /// A `tile.local` slot holding a register tile of `shape`, every
    /// element initialized to `init`.
    pub fn tile_slot(&self, b: &mut Builder<'_>, shape: &[i64], elem: ScalarType, init: f64) -> ValueId {
        let slot = b
            .op("tile.local")
            .result(Type::memref(
                shape.iter().map(|&s| DimExpr::constant(s)),
                elem,
                MemSpace::Local,
            ))
            .build_value();
        let value = number(b, init, tile_type(shape, elem));
        let origin = vec![index(b, 0); shape.len()];
        b.op("tile.store_tile")
            .operands(&[value, slot])
            .operands(&origin)
            .build();
        slot
    }

    /// A `rows`×`cols` shared buffer of `elem`, laid out for the target
    /// ([`shared_layout`]).
    pub fn shared_tile(&self, b: &mut Builder<'_>, rows: i64, cols: i64, elem: ScalarType) -> ValueId {
        self.shared_buffer(b, &[rows, cols], elem)
    }

    /// A ring of `slots` shared `rows`×`cols` tiles, laid out as
    /// [`Gen::shared_tile`]'s (its slots are a `tile.pipeline`'s).
    pub fn shared_ring(&self, b: &mut Builder<'_>, slots: i64, rows: i64, cols: i64, elem: ScalarType) -> ValueId {
        self.shared_buffer(b, &[slots, rows, cols], elem)
    }

    fn shared_buffer(&self, b: &mut Builder<'_>, dims: &[i64], elem: ScalarType) -> ValueId {
        let cols = dims.last().copied().unwrap_or(1);
        let rows = dims.len().checked_sub(2).map_or(1, |i| dims[i]);
        let mut op = b.op("tile.alloc_shared");
        if let Some((key, value)) = shared_layout(&self.target, rows, cols, elem) {
            op = op.attr(key, Attr::Int(value));
        }
        op.result(Type::memref(
            dims.iter().map(|&d| d.into()).collect::<Vec<_>>(),
            elem,
            MemSpace::Shared,
        ))
        .build_value()
    }

    /// A mask of the lanes of a row tile of `shape` (its last dim the
    /// row) starting at `start`, a multiple of the tile's width, that lie
    /// below `extent`: an `i1` tile. Where the constraints make `extent` a
    /// multiple of `g` that divides the width, a lane is below it when the
    /// first lane of its group of `g` is, so the mask compares `lane & -g`:
    /// one bound for each group, where a thread holds `g` columns in a
    /// row (the columns' own bounds, live across a row's reductions, took
    /// the registers of a second block of rows).
    pub fn lanes_below(&self, b: &mut Builder<'_>, start: ValueId, shape: &[i64], extent: &DimExpr) -> Result<ValueId> {
        let last = shape.len().saturating_sub(1) as i64;
        let index_tile = tile_type(shape, ScalarType::Index);
        let mut lanes = iota(b, shape, last);
        let width = shape.last().copied().unwrap_or(1);
        // A power of two, which `& -group` rounds down to.
        let group = modulus_of(&self.constraints, extent).map_or(1, |d| {
            let g = gcd(d.modulus, width);
            g & -g
        });
        if group > 1 {
            let low = index(b, -group);
            lanes = binary(b, "and", lanes, low, index_tile.clone());
        }
        let at = binary(b, "add", lanes, start, index_tile);
        let n = self.dim(b, extent)?;
        Ok(compare(b, at, n, "lt"))
    }
}

pub(crate) fn index(b: &mut Builder<'_>, value: i64) -> ValueId {
    constant(b, Attr::Int(value), Type::INDEX)
}

pub(crate) fn constant(b: &mut Builder<'_>, value: Attr, ty: Type) -> ValueId {
    b.op("tile.const").attr("value", value).result(ty).build_value()
}

/// A constant of `elem` (a float or an integer type).
pub(crate) fn number(b: &mut Builder<'_>, value: f64, ty: Type) -> ValueId {
    let is_float = ty.elem().is_some_and(ScalarType::is_float);
    let attr = if is_float {
        Attr::Float(value)
    } else if value.is_infinite() {
        Attr::Int(if value > 0.0 { i64::MAX } else { i64::MIN })
    } else {
        Attr::Int(value as i64)
    };
    constant(b, attr, ty)
}

pub(crate) fn binary(b: &mut Builder<'_>, f: &str, x: ValueId, y: ValueId, ty: Type) -> ValueId {
    b.op("tile.binary")
        .operands(&[x, y])
        .attr("fn", f)
        .result(ty)
        .build_value()
}

/// One `graph.elementwise` function of `values` (scalars or tiles of the
/// result's shape): a comparison compares in the dtype of its operands'
/// tensors (`compared`) and gives `i1`; `select` keeps its `i1`
/// condition and brings the alternatives to the result's `elem`; the
/// others bring every operand to `elem`. `ty` is the result's type.
pub(crate) fn apply(
    b: &mut Builder<'_>,
    f: &str,
    values: &[ValueId],
    compared: ScalarType,
    elem: ScalarType,
    ty: Type,
) -> ValueId {
    if COMPARE_FNS.contains(&f) {
        let x = cast_to(b, values[0], compared);
        let y = cast_to(b, values[1], compared);
        return b
            .op("tile.cmp")
            .operands(&[x, y])
            .attr("pred", f)
            .result(ty)
            .build_value();
    }
    if f == "select" {
        let mut x = cast_to(b, values[1], elem);
        let y = cast_to(b, values[2], elem);
        // Two numbers chosen by a tile of conditions give a tile.
        let tile = ty
            .dims()
            .and_then(|d| d.iter().map(DimExpr::as_const).collect::<Option<Vec<i64>>>());
        let scalars = matches!(b.value_type(x), Type::Scalar(_)) && matches!(b.value_type(y), Type::Scalar(_));
        if let (Some(shape), true) = (tile, scalars) {
            x = broadcast(b, x, &shape);
        }
        return b
            .op("tile.select")
            .operands(&[values[0], x, y])
            .result(ty)
            .build_value();
    }
    let values: Vec<ValueId> = values.iter().map(|&v| cast_to(b, v, elem)).collect();
    if values.len() == 2 {
        binary(b, f, values[0], values[1], ty)
    } else {
        unary(b, f, values[0], ty)
    }
}

/// The dtype a comparison node compares in: its first tensor operand's,
/// else its first operand's.
pub(crate) fn compared_elem(k: &Kernel, node: &Node) -> ScalarType {
    let tys: Vec<&Type> = node.operands.iter().map(|&o| k.ty(o)).collect();
    tys.iter()
        .find(|t| matches!(t, Type::Tensor { .. }))
        .or(tys.first())
        .and_then(|t| t.elem())
        .unwrap_or(ScalarType::F32)
}

pub(crate) fn unary(b: &mut Builder<'_>, f: &str, x: ValueId, ty: Type) -> ValueId {
    b.op("tile.unary").operand(x).attr("fn", f).result(ty).build_value()
}

pub(crate) fn id(b: &mut Builder<'_>, op: &str, dim: i64) -> ValueId {
    b.op(op).attr("dim", Attr::Int(dim)).result(Type::INDEX).build_value()
}

/// `x` converted to `elem` (the same shape), or `x` when it already is.
pub(crate) fn cast_to(b: &mut Builder<'_>, x: ValueId, elem: ScalarType) -> ValueId {
    let ty = b.value_type(x).clone();
    if ty.elem() == Some(elem) {
        return x;
    }
    let to = with_elem(&ty, elem);
    let narrowing = ty
        .elem()
        .is_some_and(|from| from.is_float() && (!elem.is_float() || elem.bits() < from.bits()));
    let mut op = b.op("tile.cast").operand(x);
    if narrowing {
        op = op.attr("rounding", "nearest_even");
    }
    op.result(to).build_value()
}

/// The same shape with another element type.
pub(crate) fn with_elem(ty: &Type, elem: ScalarType) -> Type {
    match ty {
        Type::Tensor { dims, .. } => Type::tensor(dims.clone(), elem),
        _ => Type::Scalar(elem),
    }
}

/// A register tile of `shape` (a scalar when the shape is empty).
pub(crate) fn tile_type(shape: &[i64], elem: ScalarType) -> Type {
    if shape.is_empty() {
        Type::Scalar(elem)
    } else {
        Type::tensor(shape.iter().map(|&d| DimExpr::constant(d)), elem)
    }
}

/// The slice of `mem` at `indices` of its leading dims: a memref of the
/// remaining dims (`tile.view`).
pub(crate) fn view(b: &mut Builder<'_>, mem: ValueId, indices: &[ValueId]) -> ValueId {
    let Type::MemRef { dims, elem, space, .. } = b.value_type(mem).clone() else {
        return mem;
    };
    let ty = Type::memref(dims[indices.len()..].to_vec(), elem, space);
    b.op("tile.view")
        .operand(mem)
        .operands(indices)
        .result(ty)
        .build_value()
}

/// The register tile of type `ty` at the origin of the two-dim memref
/// `mem` (`c0` is the index 0).
pub(crate) fn load_tile(b: &mut Builder<'_>, mem: ValueId, c0: ValueId, ty: &Type) -> ValueId {
    b.op("tile.load_tile")
        .operands(&[mem, c0, c0])
        .result(ty.clone())
        .build_value()
}

/// The matrix tile `x` transposed, of type `ty`.
pub(crate) fn transpose(b: &mut Builder<'_>, x: ValueId, ty: Type) -> ValueId {
    b.op("tile.transpose")
        .operand(x)
        .attr("perm", Attr::ints([1, 0]))
        .result(ty)
        .build_value()
}

/// `a · b + c` (`tile.mma`), accumulated in the element type of `ty`, the
/// type of `c` and of the result.
pub(crate) fn mma(b: &mut Builder<'_>, a: ValueId, bv: ValueId, c: ValueId, ty: &Type) -> ValueId {
    let acc = ty.elem().unwrap_or(ScalarType::F32);
    b.op("tile.mma")
        .operands(&[a, bv, c])
        .attr("accumulate", Type::Scalar(acc))
        .result(ty.clone())
        .build_value()
}

/// A register tile stretched to `shape` by NumPy broadcasting
/// (`tile.broadcast`).
pub(crate) fn broadcast(b: &mut Builder<'_>, x: ValueId, shape: &[i64]) -> ValueId {
    let elem = b.value_type(x).elem().unwrap_or(ScalarType::F32);
    b.op("tile.broadcast")
        .operand(x)
        .result(tile_type(shape, elem))
        .build_value()
}

/// A `tile.for` from `lb` to `ub` by `step`; returns its body and the
/// induction variable (the caller ends the body with [`end`]).
pub(crate) fn for_loop(b: &mut Builder<'_>, lb: ValueId, ub: ValueId, step: ValueId) -> (BlockId, ValueId) {
    let region = b.new_region(&[Type::INDEX]);
    let body = b.region_block(region);
    let iv = b.block_args(body)[0];
    b.op("tile.for").operands(&[lb, ub, step]).region(region).build();
    (body, iv)
}

/// The `%k` and `%slot` of one region of a `tile.pipeline`.
pub(crate) struct PipelineRegion {
    pub block: BlockId,
    pub k: ValueId,
    pub slot: ValueId,
}

/// A `tile.pipeline` from `lb` to `ub` by `step` over rings of `stages`
/// slots; returns its fill and use regions (the caller ends each with
/// [`end`]).
pub(crate) fn pipeline(
    b: &mut Builder<'_>,
    [lb, ub, step]: [ValueId; 3],
    stages: i64,
) -> (PipelineRegion, PipelineRegion) {
    let regions = [
        b.new_region(&[Type::INDEX, Type::INDEX]),
        b.new_region(&[Type::INDEX, Type::INDEX]),
    ];
    b.op("tile.pipeline")
        .operands(&[lb, ub, step])
        .attr("stages", Attr::Int(stages))
        .region(regions[0])
        .region(regions[1])
        .build();
    let [fill, consume] = regions.map(|r| {
        let block = b.region_block(r);
        let args = b.block_args(block);
        PipelineRegion {
            block,
            k: args[0],
            slot: args[1],
        }
    });
    (fill, consume)
}

/// `x pred y` (`pred` as `tile.cmp` takes it: "lt", "le"), `y` a scalar
/// or of `x`'s shape: an `i1` of `x`'s shape.
pub(crate) fn compare(b: &mut Builder<'_>, x: ValueId, y: ValueId, pred: &str) -> ValueId {
    let flags = with_elem(b.value_type(x), ScalarType::I1);
    b.op("tile.cmp")
        .operands(&[x, y])
        .attr("pred", pred)
        .result(flags)
        .build_value()
}

/// Each lane's index along dim `dim` of a tile of `shape`.
pub(crate) fn iota(b: &mut Builder<'_>, shape: &[i64], dim: i64) -> ValueId {
    b.op("tile.iota")
        .attr("dim", Attr::Int(dim))
        .result(tile_type(shape, ScalarType::Index))
        .build_value()
}

/// One thread per item of a 1-D grid of `threads`-thread blocks over the
/// items of `dims` (their count, row-major): the thread's linear index,
/// and the then and else blocks of the `tile.if` on its being below the
/// count (the grid rounds up).
pub(crate) fn thread_per_item(
    g: &Gen,
    b: &mut Builder<'_>,
    threads: i64,
    dims: &[DimExpr],
) -> Result<(ValueId, BlockId, BlockId)> {
    let block = id(b, "tile.block_id", 0);
    let thread = id(b, "tile.thread_id", 0);
    let width = index(b, threads);
    let base = binary(b, "mul", block, width, Type::INDEX);
    let linear = binary(b, "add", base, thread, Type::INDEX);
    let total = g.dim(b, &crate::shape::num_elements(dims))?;
    let inside = compare(b, linear, total, "lt");
    let (then, other) = if_else(b, inside);
    Ok((linear, then, other))
}

/// A `tile.if` on `cond`; returns the then and else blocks.
pub(crate) fn if_else(b: &mut Builder<'_>, cond: ValueId) -> (BlockId, BlockId) {
    let then = b.new_region(&[]);
    let other = b.new_region(&[]);
    let blocks = (b.region_block(then), b.region_block(other));
    b.op("tile.if").operand(cond).region(then).region(other).build();
    blocks
}

/// Ends a loop or branch body.
pub(crate) fn end(b: &mut Builder<'_>) {
    b.op("tile.yield").build();
}

/// NumPy broadcasting of two tile shapes.
fn broadcast_tiles(a: &[i64], b: &[i64]) -> Vec<i64> {
    let rank = a.len().max(b.len());
    (0..rank)
        .map(|i| {
            let da = if i + a.len() >= rank { a[i + a.len() - rank] } else { 1 };
            let db = if i + b.len() >= rank { b[i + b.len() - rank] } else { 1 };
            da.max(db)
        })
        .collect()
}

/// Where a register tile sits in a tensor of shape `dims`: its origin and
/// extent in every dim; register tiles cover the last `rank` dims.
pub(crate) struct Frame {
    pub dims: Vec<DimExpr>,
    pub offsets: Vec<ValueId>,
    pub extents: Vec<i64>,
    pub rank: usize,
}

/// Evaluates a kernel's elementwise ops (and casts) on the register tile
/// of a frame: inputs are loaded with `tile.load_tile` at the frame's
/// offsets (a broadcast dim at 0 with extent 1), ops become `tile.binary`,
/// `tile.unary` and `tile.cast` on tiles, which broadcast like NumPy.
pub(crate) struct TileEval<'k> {
    pub k: &'k Kernel,
    pub frame: Frame,
    /// Values already computed (the anchor's), with their tile shapes.
    pub known: HashMap<Src, (ValueId, Vec<i64>)>,
}

impl TileEval<'_> {
    pub fn eval(&mut self, g: &Gen, b: &mut Builder<'_>, src: Src) -> Result<(ValueId, Vec<i64>)> {
        if let Some(v) = self.known.get(&src) {
            return Ok(v.clone());
        }
        let k = self.k;
        let result = match src {
            Src::Arg(i) => match &k.args[i] {
                Type::Scalar(_) => (g.inputs[i], Vec::new()),
                Type::Tensor { dims, elem } => self.load(b, g.inputs[i], dims, *elem)?,
                other => return Err(format!("an input of type {other}")),
            },
            Src::Node(n) => {
                let node = &k.nodes[n];
                let elem = node.ty.elem().ok_or("an op without an element type")?;
                match node.name.as_str() {
                    "graph.constant" => {
                        let value = node.attrs.get("value").cloned().unwrap_or(Attr::Int(0));
                        (constant(b, value, Type::Scalar(elem)), Vec::new())
                    }
                    "graph.dim" => (g.dim_value(b, node, elem)?, Vec::new()),
                    "graph.elementwise" | "graph.cast" => {
                        let mut operands = Vec::new();
                        let mut shape: Vec<i64> = Vec::new();
                        for &o in &node.operands {
                            let (v, s) = self.eval(g, b, o)?;
                            shape = broadcast_tiles(&shape, &s);
                            operands.push((v, s));
                        }
                        let ty = tile_type(&shape, elem);
                        let f = node.str("fn").unwrap_or("add");
                        for (v, s) in &mut operands {
                            if !s.is_empty() && *s != shape {
                                *v = broadcast(b, *v, &shape);
                            }
                        }
                        let v = if node.name == "graph.cast" {
                            let mut op = b.op("tile.cast").operand(operands[0].0);
                            if let Some(r) = node.attrs.get("rounding") {
                                op = op.attr("rounding", r.clone());
                            }
                            if node.attrs.contains_key("saturate") {
                                op = op.attr("saturate", Attr::Unit);
                            }
                            op.result(ty).build_value()
                        } else {
                            let values: Vec<ValueId> = operands.iter().map(|&(v, _)| v).collect();
                            apply(b, f, &values, compared_elem(k, node), elem, ty)
                        };
                        (v, shape)
                    }
                    other => return Err(format!("`{other}` cannot be applied to a register tile")),
                }
            }
        };
        self.known.insert(src, result.clone());
        Ok(result)
    }

    /// Loads the tile of an input of shape `dims` (aligned with the frame's
    /// last dims) that the frame's tile covers.
    fn load(
        &self,
        b: &mut Builder<'_>,
        mem: ValueId,
        dims: &[DimExpr],
        elem: ScalarType,
    ) -> Result<(ValueId, Vec<i64>)> {
        let f = &self.frame;
        if dims.len() > f.dims.len() {
            return Err("an input of higher rank than the kernel's output".into());
        }
        let lead = f.dims.len() - dims.len();
        let one = DimExpr::constant(1);
        let mut offsets = Vec::new();
        let mut extents = Vec::new();
        for (j, d) in dims.iter().enumerate() {
            let fi = lead + j;
            if *d == one && f.dims[fi] != one {
                offsets.push(index(b, 0));
                extents.push(1);
            } else {
                offsets.push(f.offsets[fi]);
                extents.push(f.extents[fi]);
            }
        }
        let lead = dims.len().saturating_sub(f.rank);
        let shape: Vec<i64> = extents[lead..].to_vec();
        let v = if shape.is_empty() {
            b.op("tile.load")
                .operand(mem)
                .operands(&offsets)
                .result(Type::Scalar(elem))
                .build_value()
        } else {
            let mem = if lead > 0 { view(b, mem, &offsets[..lead]) } else { mem };
            b.op("tile.load_tile")
                .operand(mem)
                .operands(&offsets[lead..])
                .result(tile_type(&shape, elem))
                .build_value()
        };
        Ok((v, shape))
    }
}
