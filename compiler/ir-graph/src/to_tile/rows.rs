//! The row templates: one block per row (softmax, norm) or per output
//! element (reduce), the row walked in chunks of `tile_shape`'s column
//! count. Each chunk is a register tile, folded lane by lane into tiles of
//! running values kept in `tile.local` slots (lane `c` of every chunk into
//! lane `c`, in chunk order: no thread waits for another inside a walk);
//! `tile.reduce` reduces the lanes once after the walk, and a final walk
//! computes and stores the output. A chunk that can run past the end of
//! the row is masked (`tile.iota` + `tile.cmp` + `tile.select`).

use std::collections::{BTreeSet, HashMap};

use tessera_ir::{Attr, Builder, CmpOp, DimExpr, MemSpace, ScalarType, ShapeConstraint, Type, ValueId};

use super::emit::{
    binary, broadcast, cast_to, compare, end, for_loop, id, index, iota, number, thread_per_item, tile_type, unary,
    Frame, Gen, Result, TileEval,
};
use super::{Kernel, Node, Src};
use crate::shape::{modulus_of, normalize_axis, num_elements, Divisible};
use crate::targets::Target;

fn accumulate_type(node: &Node) -> ScalarType {
    match node.attrs.get("accumulate").and_then(Attr::as_type) {
        Some(Type::Scalar(s)) => *s,
        _ => ScalarType::F32,
    }
}

/// The bits of a row op's column as its kernel sizes it
/// ([`crate::targets::column_bits`]).
fn column_bits(k: &Kernel, node: &Node) -> u32 {
    let input = node
        .operands
        .first()
        .and_then(|&i| k.ty(i).elem())
        .unwrap_or(ScalarType::F32);
    crate::targets::column_bits(input, accumulate_type(node))
}

/// The columns a block of `threads` threads holds in registers:
/// [`ROW_IN_REGISTERS`] of 32-bit values (or narrower), half as many
/// 64-bit ones (two registers a column).
fn register_row(threads: i64, bits: u32) -> i64 {
    let row = ROW_IN_REGISTERS * 32 / i64::from(bits.max(32));
    (row / threads).max(1) * threads
}

fn tensor_dims(k: &Kernel, src: Src) -> Result<Vec<DimExpr>> {
    match k.ty(src) {
        Type::Tensor { dims, .. } => Ok(dims.clone()),
        other => Err(format!("a row op on {other}")),
    }
}

/// The last axis, which the row templates walk; other axes are not
/// lowered yet.
fn last_axis(node: &Node, rank: usize) -> Result<()> {
    let axis = normalize_axis(node.int("axis").unwrap_or(-1), rank);
    if axis != Some(rank - 1) {
        return Err(format!("`{}` over an axis other than the last", node.name));
    }
    Ok(())
}

/// Reduces a row tile (`[1, .., 1, chunk]`) to a scalar: along the row,
/// then along each unit dim.
fn reduce_tile(g: &Gen, b: &mut Builder<'_>, x: ValueId, kind: &str, elem: ScalarType) -> ValueId {
    let mut value = x;
    let mut rank = b.value_type(x).dims().map_or(0, <[_]>::len);
    while rank > 0 {
        let ty = tile_type(&vec![1; rank - 1], elem);
        value = b
            .op("tile.reduce")
            .operand(value)
            .attr("kind", kind)
            .attr("axis", Attr::Int(rank as i64 - 1))
            .attr("order", g.order)
            .result(ty)
            .build_value();
        rank -= 1;
    }
    value
}

fn load(b: &mut Builder<'_>, slot: ValueId, elem: ScalarType) -> ValueId {
    b.op("tile.load").operand(slot).result(Type::Scalar(elem)).build_value()
}

fn store(b: &mut Builder<'_>, value: ValueId, slot: ValueId) {
    b.op("tile.store").operands(&[value, slot]).build();
}

/// `slot = slot <f> value`.
fn fold_into(b: &mut Builder<'_>, slot: ValueId, value: ValueId, f: &str, elem: ScalarType) {
    let old = load(b, slot, elem);
    let new = binary(b, f, old, value, Type::Scalar(elem));
    store(b, new, slot);
}

/// `x` where `valid`, `fill` elsewhere.
fn select(b: &mut Builder<'_>, valid: ValueId, x: ValueId, fill: ValueId) -> ValueId {
    let ty = b.value_type(x).clone();
    b.op("tile.select").operands(&[valid, x, fill]).result(ty).build_value()
}

/// One walk over a row of length `n` in chunks: `body` gets a builder in
/// the loop and the chunk's start.
fn walk(
    g: &Gen,
    b: &mut Builder<'_>,
    n: &DimExpr,
    chunk: i64,
    body: &mut dyn FnMut(&mut Builder<'_>, ValueId) -> Result<()>,
) -> Result<()> {
    let c0 = index(b, 0);
    let ub = g.dim(b, n)?;
    let step = index(b, chunk);
    let (block, j) = for_loop(b, c0, ub, step);
    let mut l = g.at(b, block);
    body(&mut l, j)?;
    end(&mut l);
    Ok(())
}

/// The register tile of `shape` held in the tile slot `slot`.
fn load_lanes(b: &mut Builder<'_>, slot: ValueId, shape: &[i64], elem: ScalarType) -> ValueId {
    let c0 = index(b, 0);
    b.op("tile.load_tile")
        .operand(slot)
        .operands(&vec![c0; shape.len()])
        .result(tile_type(shape, elem))
        .build_value()
}

/// A walk's step over running values: the chunk's start and the running
/// tiles give their new values.
type LaneStep<'s> = dyn FnMut(&mut Builder<'_>, ValueId, &[ValueId]) -> Result<Vec<ValueId>> + 's;

/// A walk that keeps tiles of running values, one per entry of `inits`
/// (each lane starting there): `step` gets the chunk's start and the
/// running tiles and gives their new values. Gives the running tiles
/// after the last chunk, for the caller to reduce once.
#[allow(clippy::too_many_arguments)]
fn walk_lanes(
    g: &Gen,
    b: &mut Builder<'_>,
    n: &DimExpr,
    chunk: i64,
    shape: &[i64],
    acc: ScalarType,
    inits: &[f64],
    step: &mut LaneStep<'_>,
) -> Result<Vec<ValueId>> {
    let slots: Vec<ValueId> = inits.iter().map(|&init| g.tile_slot(b, shape, acc, init)).collect();
    walk(g, b, n, chunk, &mut |l, j| {
        let old: Vec<ValueId> = slots.iter().map(|&s| load_lanes(l, s, shape, acc)).collect();
        let new = step(l, j, &old)?;
        for (value, &slot) in new.into_iter().zip(&slots) {
            let c0 = index(l, 0);
            l.op("tile.store_tile")
                .operands(&[value, slot])
                .operands(&vec![c0; shape.len()])
                .build();
        }
        Ok(())
    })?;
    Ok(slots.iter().map(|&s| load_lanes(b, s, shape, acc)).collect())
}

/// The shape of a row tile of a tensor of rank `rank`: `[1, .., 1, chunk]`
/// (tiles have the rank of the memrefs they are loaded from).
fn row_shape(rank: usize, chunk: i64) -> Vec<i64> {
    let mut shape = vec![1; rank];
    if let Some(last) = shape.last_mut() {
        *last = chunk;
    }
    shape
}

/// The evaluator of a row chunk of a tensor of shape `dims`, at `coords`
/// for the leading dims and `j` for the last.
fn row_eval<'k>(k: &'k Kernel, dims: &[DimExpr], coords: &[ValueId], j: ValueId, chunk: i64) -> TileEval<'k> {
    TileEval {
        k,
        frame: Frame {
            dims: dims.to_vec(),
            offsets: coords.iter().copied().chain([j]).collect(),
            extents: row_shape(dims.len(), chunk),
            rank: dims.len(),
        },
        known: HashMap::new(),
    }
}

/// A chunk of the row op's input, in the accumulate type, with the lanes
/// past the row's end replaced by `fill` when the row can be ragged.
#[allow(clippy::too_many_arguments)]
fn chunk_of(
    g: &Gen,
    b: &mut Builder<'_>,
    eval: &mut TileEval<'_>,
    input: Src,
    acc: ScalarType,
    j: ValueId,
    n: &DimExpr,
    fill: Option<f64>,
) -> Result<ValueId> {
    let (x, _) = eval.eval(g, b, input)?;
    finish_chunk(g, b, &eval.frame.extents, x, acc, j, n, fill)
}

/// A chunk of `shape` at `j` in the accumulate type, with the lanes past
/// the row's end replaced by `fill` when the row can be ragged.
#[allow(clippy::too_many_arguments)]
fn finish_chunk(
    g: &Gen,
    b: &mut Builder<'_>,
    shape: &[i64],
    x: ValueId,
    acc: ScalarType,
    j: ValueId,
    n: &DimExpr,
    fill: Option<f64>,
) -> Result<ValueId> {
    let chunk = *shape.last().unwrap_or(&1);
    let x = cast_to(b, x, acc);
    match fill {
        Some(fill) if g.ragged(n, chunk) => {
            let valid = g.lanes_below(b, j, shape, n)?;
            let fill = number(b, fill, Type::Scalar(acc));
            Ok(select(b, valid, x, fill))
        }
        _ => Ok(x),
    }
}

/// Applies the kernel's epilogue to `value` (the anchor's chunk) and
/// stores the result at the chunk's place.
#[allow(clippy::too_many_arguments)]
fn store_row(
    g: &Gen,
    b: &mut Builder<'_>,
    k: &Kernel,
    anchor: usize,
    value: ValueId,
    dims: &[DimExpr],
    coords: &[ValueId],
    j: ValueId,
    chunk: i64,
) -> Result<()> {
    let elem = k.nodes[anchor].ty.elem().unwrap_or(ScalarType::F32);
    let value = cast_to(b, value, elem);
    let mut eval = row_eval(k, dims, coords, j, chunk);
    eval.known
        .insert(Src::Node(anchor), (value, row_shape(dims.len(), chunk)));
    let (root, _) = eval.eval(g, b, k.root)?;
    let root = cast_to(b, root, k.result.elem().unwrap_or(elem));
    b.op("tile.store_tile")
        .operands(&[root, g.out])
        .operands(coords)
        .operand(j)
        .build();
    Ok(())
}

/// The row this block handles: its coordinates in the leading dims.
fn row_coords(g: &Gen, b: &mut Builder<'_>, dims: &[DimExpr]) -> Result<Vec<ValueId>> {
    let row = id(b, "tile.block_id", 0);
    g.unflatten(b, row, &dims[..dims.len() - 1])
}

fn chunk_size(k: &Kernel) -> Result<i64> {
    match k.tile.as_slice() {
        [1, c] => Ok(*c),
        [_, _] => Err("a row tile of more than one row".into()),
        _ => Err("its `tile_shape` is not [rows, columns]".into()),
    }
}

/// The longest row a block of the schedule's threads holds whole in
/// registers: 16 f32 values a thread at 256 threads (32 spill where
/// ptxas keeps 4 blocks of 256 on a multiprocessor, in 64 registers a
/// thread). Such a row is read once and its statistics are reduced once,
/// where a longer one is walked in chunks twice (a deterministic
/// softmax's three times), its statistics reduced after the first walk
/// (rows of whole runs up to [`WIDE_ROW`] columns are held on more
/// threads).
const ROW_IN_REGISTERS: i64 = 4096;

/// Which rows a kernel of a row template computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RowSpan {
    /// Every row: the length is a constant, which decides how.
    Any,
    /// Rows of at most this many columns, each held whole in a register
    /// tile of that width, masked past its end.
    Whole(i64),
    /// Rows longer than a register tile holds, up to this many columns,
    /// walked in chunks with the row kept in shared memory after the
    /// first walk ([`RowSource`]).
    Staged(i64),
    /// Rows longer than a register tile holds, walked in chunks.
    Walks,
}

/// The columns a thread of a whole-row kernel loads at once (a 16-byte
/// load of bf16), its *run*.
const RUN: i64 = 8;

/// The longest row of whole runs a block holds in registers: 16 columns
/// a thread of 1024, as a row of [`ROW_IN_REGISTERS`] columns is on 256.
const WIDE_ROW: i64 = 16384;

/// The most threads a block has.
const MAX_THREADS: i64 = 1024;

/// The longest row a staged kernel keeps in shared memory (128 KiB of
/// f32), where the target has room for it ([`staged_row`]).
const STAGED_ROW: i64 = 32768;

/// Threads of a staged kernel: two blocks of them fit a multiprocessor
/// in 64 registers a thread, so one walks while the other reduces.
const STAGED_THREADS: i64 = 512;

/// Shared memory a staged kernel keeps free for its reductions' scratch.
const REDUCTION_SCRATCH: i64 = 1024;

/// The columns a staged kernel's thread loads a step: two runs of 16
/// bytes of 16-bit elements, two of 32-bit (32 bytes in flight a thread).
fn staged_chunk(bits: u32) -> i64 {
    STAGED_THREADS * if bits <= 16 { 2 * RUN } else { RUN }
}

/// The longest row (a power of two, at most [`STAGED_ROW`]) a staged
/// kernel keeps in shared memory on `target`: the row of elements of
/// `bits` plus one chunk (the last chunk's lanes past the row's end) and
/// the reductions' scratch within the target's limit. On an H100 a
/// walked row longer than a block's registers was read from global
/// memory twice (a deterministic softmax's three times): at 16384 and
/// 32768 columns the rows a device has in flight outgrow its L2, and the
/// softmax ran at 0.67 of Triton's speed in both dtypes, the ratio of two
/// memory passes to three.
fn staged_row(target: &Target, bits: u32) -> Option<i64> {
    let chunk = staged_chunk(bits);
    let bytes = |w: i64| (w + chunk) * i64::from(bits.div_ceil(8)) + REDUCTION_SCRATCH;
    let mut w = STAGED_ROW;
    while w > chunk && !target.fits_shared(bytes(w)) {
        w /= 2;
    }
    target.fits_shared(bytes(w)).then_some(w)
}

/// One kernel of a row op, and the lengths it is launched for.
pub(crate) struct Variant {
    pub kernel: Kernel,
    /// Each launch of it: the row lengths it runs for, where all of the
    /// constraints hold (`when` of `tile.launch`; none: every length).
    pub launches: Vec<Vec<ShapeConstraint>>,
    /// What its code may rely on beyond the function's facts (its rows are
    /// whole runs: `C % 8 == 0`), with its text.
    pub facts: Vec<(ShapeConstraint, String)>,
    pub span: RowSpan,
}

/// A range of row lengths and the kernel that holds them.
struct Range {
    lo: i64,
    hi: i64,
    span: RowSpan,
    threads: i64,
    /// Only rows of whole runs: a ragged one is walked.
    runs_only: bool,
}

/// The kernels `k` lowers to. A softmax or norm whose row length `n` is
/// known only at launch becomes one kernel per range of lengths: the
/// whole row in a register tile of a quarter, a half or all of the
/// registers' capacity ([`ROW_IN_REGISTERS`] columns on the schedule's
/// threads; a row of 1000 columns does not compute on 4096 lanes), or of
/// twice or four times that on twice or four times the threads (rows of
/// whole runs up to [`WIDE_ROW`] columns), or walked in chunks beyond it;
/// the host launches the one whose range holds `n`. Each kernel's
/// registers are then its own range's, where one kernel branching on the
/// length took the widest range's for every row: on sm_90a the bf16
/// softmax took 64 registers a thread for rows of any length, and now 34
/// for rows up to 1024 or 2048 columns; layer norm 95, now 53. A range
/// runs on [`RUN`] columns a thread, at most the schedule's threads, or
/// on as many columns a thread as the capacity gives, on more threads.
///
/// A range of whole rows is two kernels, unless the facts say `n % 8 ==
/// 0`: one for rows of whole runs (`n % 8 == 0`, a fact its code relies
/// on: a run's columns are all inside the row or all past its end, one
/// bound a run), one for the others (`n % 8 != 0`, a bound a column).
/// The bounds of a column of every run were live across the row's
/// reductions: layer norm of up to 4096 columns took 95 registers, and
/// takes 56 on rows of whole runs; softmax 64, now 46. Ragged rows
/// longer than the capacity are walked: the kernel of the walks has a
/// second launch for them.
///
/// Ranges the function's facts rule out get no kernel; where one range
/// is left, its kernels keep `k`'s name (and `_ragged`) and their
/// launches have no range (facts that rule out every range leave the
/// walks, which handle any length). Every other kernel is one kernel for
/// every length.
pub(crate) fn variants(k: &Kernel, facts: &[(ShapeConstraint, String)], target: &Target) -> Vec<Variant> {
    let anchor = match k.pattern.as_str() {
        "softmax" => k.anchor("graph.softmax"),
        "norm" => k.anchor("graph.norm"),
        _ => None,
    };
    let input = anchor.map(|a| k.nodes[a].operands[0]);
    let n = input
        .and_then(|i| tensor_dims(k, i).ok())
        .and_then(|dims| dims.last().cloned());
    let Some(n) = n.filter(|n| n.as_const().is_none()) else {
        return vec![Variant {
            kernel: k.clone(),
            launches: vec![Vec::new()],
            facts: Vec::new(),
            span: RowSpan::Any,
        }];
    };
    let bits = anchor.map_or(32, |a| column_bits(k, &k.nodes[a]));
    let staged = staged_row(target, bits);
    let ranges = length_ranges(k.threads(), bits, k.pattern == "softmax", staged);
    let mut admitted: Vec<&Range> = ranges
        .iter()
        .filter(|r| facts.iter().all(|(c, _)| c.admits(&n, r.lo, r.hi)))
        .collect();
    if admitted.is_empty() {
        admitted.extend(ranges.last());
    }
    let known = Divisible::all_of(facts);
    let whole_runs = modulus_of(&known, &n).is_some_and(|d| d.modulus % RUN == 0);
    let divisible = ShapeConstraint::Divisible {
        dim: n.clone(),
        by: RUN,
    };
    let ragged = ShapeConstraint::Indivisible {
        dim: n.clone(),
        by: RUN,
    };
    let one_range = admitted.len() == 1;
    let mut out: Vec<(String, Variant)> = Vec::new();
    let mut walked: Vec<Vec<ShapeConstraint>> = Vec::new();
    for r in admitted {
        let range: Vec<ShapeConstraint> = if one_range {
            Vec::new()
        } else {
            vec![length_range(&n, r)]
        };
        let with = |c: &ShapeConstraint| range.iter().cloned().chain([c.clone()]).collect::<Vec<_>>();
        let width = match r.span {
            RowSpan::Whole(w) if !one_range => format!("w{w}"),
            RowSpan::Whole(_) => String::new(),
            RowSpan::Staged(_) => "staged".to_string(),
            _ => "long".to_string(),
        };
        let mut kernel = k.clone();
        if let Some(first) = kernel.block.first_mut() {
            *first = r.threads;
        }
        if let RowSpan::Staged(_) = r.span {
            kernel.tile = vec![1, staged_chunk(bits)];
        }
        let variant = |launches: Vec<Vec<ShapeConstraint>>, facts: Vec<(ShapeConstraint, String)>| Variant {
            kernel: kernel.clone(),
            launches,
            facts,
            span: r.span,
        };
        if whole_runs || matches!(r.span, RowSpan::Walks | RowSpan::Staged(_)) {
            out.push((width, variant(vec![range.clone()], Vec::new())));
            continue;
        }
        let fact = vec![(divisible.clone(), divisible.to_string())];
        out.push((width.clone(), variant(vec![with(&divisible)], fact)));
        if r.runs_only {
            walked.push(with(&ragged));
        } else {
            let name = [width.as_str(), "ragged"]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>();
            out.push((name.join("_"), variant(vec![with(&ragged)], Vec::new())));
        }
    }
    if !walked.is_empty() {
        let staged = out.iter().position(|(_, v)| matches!(v.span, RowSpan::Staged(_)));
        let walks = out.iter().position(|(_, v)| v.span == RowSpan::Walks);
        match staged.or(walks).map(|i| &mut out[i]) {
            Some((_, long)) => long.launches.extend(walked),
            None => {
                let mut kernel = k.clone();
                if let Some(first) = kernel.block.first_mut() {
                    *first = k.threads().min(MAX_THREADS);
                }
                out.push((
                    "long".to_string(),
                    Variant {
                        kernel,
                        launches: walked,
                        facts: Vec::new(),
                        span: RowSpan::Walks,
                    },
                ));
            }
        }
    }
    let only = out.len() == 1;
    out.into_iter()
        .map(|(suffix, mut v)| {
            if !only && !suffix.is_empty() {
                v.kernel.name = format!("{}_{suffix}", k.name);
            }
            v
        })
        .collect()
}

/// The ranges of row lengths a block of `threads` (the schedule's) holds
/// whole, in order, then the rows a staged kernel keeps in shared memory
/// (up to `staged` columns, where the target has room), then the longer
/// rows it walks. A wider row of elements of `bits` holds as many columns
/// a thread as the capacity does, up to 16 of 16 bits or 8 of 32 on 1024
/// threads (a thread of 1024 has 64 registers: the bf16 layer norm holds
/// 16 columns in 56, the f32 one 8 in 43, 16 in 84). With `spread`, a
/// wider row takes one run a thread while 1024 threads hold it, and more
/// columns a thread only beyond, and only where no staged kernel takes
/// it: the softmax's, whose 1024 threads then fit in 32 registers, two
/// blocks a multiprocessor (on an H100 the f32 softmax of 8192 columns, 8
/// a thread, ran at 0.99 of Triton's speed where the bf16 one, 16 a
/// thread on 512 threads in 52 registers, ran at 0.85, and the bf16 one
/// of 16384 columns, 16 a thread on 1024 in 64 registers, one block a
/// multiprocessor, at 0.67). A norm's rows keep the capacity's columns a
/// thread: it spills in 32 registers.
fn length_ranges(threads: i64, bits: u32, spread: bool, staged: Option<i64>) -> Vec<Range> {
    let cap = register_row(threads, bits);
    let most = if bits <= 16 { 16 } else { RUN };
    let per_thread = (cap / threads).min(most);
    let most_spread = if staged.is_some() { RUN } else { most };
    let mut widths: Vec<(i64, i64, bool)> = [cap / 4, cap / 2, cap]
        .into_iter()
        .filter(|w| *w >= threads && w % threads == 0)
        .map(|w| (w, (w / RUN).max(32).min(threads), false))
        .collect();
    widths.dedup();
    // A thread of 1024 has 64 registers: eight 64-bit columns and their
    // statistics spilled (f64 rms norm of 8192 columns, 24 to 40 bytes on
    // sm_80 and sm_90a), as did sixteen a thread of 256 (f64 layer norm
    // of 4096 columns, 104 to 136 bytes). Longer rows of 64-bit elements
    // are staged.
    let mut wide = if bits > 32 { WIDE_ROW + 1 } else { cap * 2 };
    while wide <= WIDE_ROW {
        let (on, limit) = if spread {
            ((wide / RUN).min(MAX_THREADS), most_spread)
        } else {
            (wide / per_thread, most)
        };
        if on > MAX_THREADS || wide / on > limit {
            break;
        }
        widths.push((wide, on, true));
        wide *= 2;
    }
    let mut ranges = Vec::new();
    let mut lo = 0;
    for (w, threads, runs_only) in widths {
        ranges.push(Range {
            lo,
            hi: w,
            span: RowSpan::Whole(w),
            threads,
            runs_only,
        });
        lo = w + 1;
    }
    if let Some(hi) = staged.filter(|&hi| hi >= lo) {
        ranges.push(Range {
            lo,
            hi,
            span: RowSpan::Staged(hi),
            threads: STAGED_THREADS,
            runs_only: false,
        });
        lo = hi + 1;
    }
    ranges.push(Range {
        lo,
        hi: i64::MAX,
        span: RowSpan::Walks,
        threads,
        runs_only: false,
    });
    ranges
}

/// The lengths of `r`: `n <= hi` for the first range, `n > lo - 1` for
/// the walks, `n in lo..=hi` between.
fn length_range(n: &DimExpr, r: &Range) -> ShapeConstraint {
    match r.span {
        RowSpan::Walks => ShapeConstraint::Compare {
            lhs: n.clone(),
            op: CmpOp::Gt,
            rhs: DimExpr::constant(r.lo - 1),
        },
        _ if r.lo == 0 => ShapeConstraint::Compare {
            lhs: n.clone(),
            op: CmpOp::Le,
            rhs: DimExpr::constant(r.hi),
        },
        _ => ShapeConstraint::InRange {
            dim: n.clone(),
            lo: DimExpr::constant(r.lo),
            hi: DimExpr::constant(r.hi),
            inclusive: true,
        },
    }
}

/// Where a walk's chunks of the row come from: the kernel's input on
/// every walk, or (a [`RowSpan::Staged`] kernel's) the input on the first
/// walk, which keeps each chunk in a shared buffer, and that buffer on the
/// later walks, so the row is read from global memory once. The buffer
/// holds the row as the input's prologue gives it, in its element type
/// (a bf16 row in half the bytes of f32), and one chunk more: the last
/// chunk's lanes past the row's end stay inside it. A barrier after the
/// first walk makes its stores visible to every thread.
struct RowSource {
    staged: Option<(ValueId, ScalarType)>,
    rank: usize,
}

impl RowSource {
    fn new(g: &Gen, b: &mut Builder<'_>, k: &Kernel, input: Src, n: &DimExpr, chunk: i64) -> RowSource {
        let rank = k.ty(input).dims().map_or(1, <[_]>::len);
        let staged = matches!(g.rows, RowSpan::Staged(_)).then(|| {
            let elem = k.ty(input).elem().unwrap_or(ScalarType::F32);
            let mut dims = vec![DimExpr::constant(1); rank - 1];
            dims.push(n.add(&DimExpr::constant(chunk)));
            let buffer = b
                .op("tile.alloc_shared")
                .result(Type::memref(dims, elem, MemSpace::Shared))
                .build_value();
            (buffer, elem)
        });
        RowSource { staged, rank }
    }

    /// The offsets of the chunk at `j` in the shared buffer.
    fn at(&self, b: &mut Builder<'_>, j: ValueId) -> Vec<ValueId> {
        let c0 = index(b, 0);
        let mut offsets = vec![c0; self.rank - 1];
        offsets.push(j);
        offsets
    }

    /// A walk's chunk of the row ([`chunk_of`]): on the first walk the
    /// input's, kept when staged; on a later one the kept chunk, or the
    /// input's again.
    #[allow(clippy::too_many_arguments)]
    fn chunk(
        &self,
        walk: Walk,
        g: &Gen,
        b: &mut Builder<'_>,
        eval: &mut TileEval<'_>,
        input: Src,
        acc: ScalarType,
        j: ValueId,
        n: &DimExpr,
        fill: Option<f64>,
    ) -> Result<ValueId> {
        let Some((buffer, elem)) = self.staged else {
            return chunk_of(g, b, eval, input, acc, j, n, fill);
        };
        let shape = eval.frame.extents.clone();
        let at = self.at(b, j);
        let x = match walk {
            Walk::First => {
                let (x, _) = eval.eval(g, b, input)?;
                let x = cast_to(b, x, elem);
                b.op("tile.store_tile").operands(&[x, buffer]).operands(&at).build();
                x
            }
            Walk::Again => b
                .op("tile.load_tile")
                .operand(buffer)
                .operands(&at)
                .result(tile_type(&shape, elem))
                .build_value(),
        };
        finish_chunk(g, b, &shape, x, acc, j, n, fill)
    }

    /// Ends the first walk: its stores reach every thread.
    fn kept(&self, b: &mut Builder<'_>) {
        if self.staged.is_some() {
            b.op("tile.barrier").build();
        }
    }
}

/// Which walk over a row a chunk is read for ([`RowSource::chunk`]).
#[derive(Clone, Copy)]
enum Walk {
    First,
    Again,
}

/// Runs `whole(l, width)` for the rows of `g.rows` that fit in a register
/// tile of `width` columns, `walks(l)` for longer ones; a row of a constant
/// length `n` is held whole when it fits in `threads` threads' registers
/// (columns of `bits`).
fn by_row_length(
    g: &Gen,
    b: &mut Builder<'_>,
    n: &DimExpr,
    threads: i64,
    bits: u32,
    whole: &mut dyn FnMut(&mut Builder<'_>, i64) -> Result<()>,
    walks: &mut dyn FnMut(&mut Builder<'_>) -> Result<()>,
) -> Result<()> {
    let cap = register_row(threads, bits);
    match (n.as_const(), g.rows) {
        (Some(len), _) if (1..=cap).contains(&len) => whole(b, len),
        (None, RowSpan::Whole(width)) => whole(b, width),
        _ => walks(b),
    }
}

/// `1 / x`, once per row: the outputs are multiplied by it (a division
/// per element costs the GPU a dozen instructions).
fn reciprocal(b: &mut Builder<'_>, x: ValueId, acc: ScalarType) -> ValueId {
    let one = number(b, 1.0, Type::Scalar(acc));
    binary(b, "div", one, x, Type::Scalar(acc))
}

/// A walk's chunk of a row at a column, in the accumulate type.
type ChunkOf<'s> = dyn FnMut(&mut Builder<'_>, ValueId) -> Result<ValueId> + 's;

/// A walk along rows of length `n` in chunks of `chunk` columns (tiles of
/// `shape`), accumulating in `acc`.
struct RowWalk<'a> {
    n: &'a DimExpr,
    chunk: i64,
    shape: &'a [i64],
    acc: ScalarType,
}

/// The maximum of a row and the sum of `exp(x - max)`, in one walk: each
/// lane keeps its running maximum and the sum of its exponentials from
/// it, rescaled by `exp(old - new)` when the maximum grows (a lane that
/// has seen only -inf keeps 0, not `exp(-inf + inf)`); then the lanes'
/// maximum, and the sum of each lane's sum times `exp(its max - max)`.
fn online_statistics(
    g: &Gen,
    b: &mut Builder<'_>,
    w: &RowWalk<'_>,
    chunk_at: &mut ChunkOf<'_>,
) -> Result<(ValueId, ValueId)> {
    let RowWalk { n, chunk, shape, acc } = *w;
    let tile = tile_type(shape, acc);
    let inf = f64::INFINITY;
    let lanes = walk_lanes(g, b, n, chunk, shape, acc, &[-inf, 0.0], &mut |l, j, old| {
        let x = chunk_at(l, j)?;
        let max = binary(l, "max", old[0], x, tile.clone());
        let below = number(l, -inf, Type::Scalar(acc));
        let seen = compare(l, max, below, "gt");
        let zero = number(l, 0.0, Type::Scalar(acc));
        let base = select(l, seen, max, zero);
        let drop = binary(l, "sub", old[0], base, tile.clone());
        let rescale = g.exp(l, drop, tile.clone());
        let kept = binary(l, "mul", old[1], rescale, tile.clone());
        let shifted = binary(l, "sub", x, base, tile.clone());
        let e = g.exp(l, shifted, tile.clone());
        Ok(vec![max, binary(l, "add", kept, e, tile.clone())])
    })?;
    let max = reduce_tile(g, b, lanes[0], "max", acc);
    let drop = binary(b, "sub", lanes[0], max, tile.clone());
    let rescale = g.exp(b, drop, tile.clone());
    let sums = binary(b, "mul", lanes[1], rescale, tile);
    Ok((max, reduce_tile(g, b, sums, "sum", acc)))
}

/// Softmax of a row held whole (`width` columns, masked past its end):
/// its maximum, the sum of its exponentials, the output; or in walks, each
/// lane keeping its running values: the maximum and the sum of
/// exponentials together ([`online_statistics`]), then the output. A
/// deterministic function walks three times, the maximum first, then the
/// sum: once more through the row, for one exponential per element fewer
/// (Tessera's own polynomial, there, where elsewhere a GPU takes its
/// hardware's approximation). With `log`, the output is `x - max -
/// log(sum)`.
pub(crate) fn softmax(g: &Gen, b: &mut Builder<'_>, k: &Kernel) -> Result<i64> {
    let sm = k
        .anchor("graph.softmax")
        .ok_or("no `graph.softmax` in a softmax kernel")?;
    let node = &k.nodes[sm];
    let log = node.attrs.get("log").and_then(Attr::as_bool) == Some(true);
    let input = node.operands[0];
    let dims = tensor_dims(k, input)?;
    last_axis(node, dims.len())?;
    let acc = accumulate_type(node);
    let chunk = chunk_size(k)?;
    let n = dims[dims.len() - 1].clone();
    let coords = row_coords(g, b, &dims)?;
    let mut whole = |l: &mut Builder<'_>, width: i64| -> Result<()> {
        let tile = tile_type(&row_shape(dims.len(), width), acc);
        let j = index(l, 0);
        let mut eval = row_eval(k, &dims, &coords, j, width);
        let x = chunk_of(g, l, &mut eval, input, acc, j, &n, Some(f64::NEG_INFINITY))?;
        let max = reduce_tile(g, l, x, "max", acc);
        let shifted = binary(l, "sub", x, max, tile.clone());
        let e = g.exp(l, shifted, tile.clone());
        let sum = reduce_tile(g, l, e, "sum", acc);
        let y = if log {
            let log_sum = unary(l, "log", sum, Type::Scalar(acc));
            binary(l, "sub", shifted, log_sum, tile)
        } else {
            let inverse = reciprocal(l, sum, acc);
            binary(l, "mul", e, inverse, tile)
        };
        store_row(g, l, k, sm, y, &dims, &coords, j, width)
    };
    let mut walks = |b: &mut Builder<'_>| -> Result<()> {
        let shape = row_shape(dims.len(), chunk);
        let tile = tile_type(&shape, acc);
        let inf = f64::INFINITY;
        let source = RowSource::new(g, b, k, input, &n, chunk);
        let (max, sum) = if g.order == "tree" || source.staged.is_some() {
            let maxes = walk_lanes(g, b, &n, chunk, &shape, acc, &[-inf], &mut |l, j, old| {
                let mut eval = row_eval(k, &dims, &coords, j, chunk);
                let x = source.chunk(Walk::First, g, l, &mut eval, input, acc, j, &n, Some(-inf))?;
                Ok(vec![binary(l, "max", old[0], x, tile.clone())])
            })?;
            source.kept(b);
            let max = reduce_tile(g, b, maxes[0], "max", acc);
            let sums = walk_lanes(g, b, &n, chunk, &shape, acc, &[0.0], &mut |l, j, old| {
                let mut eval = row_eval(k, &dims, &coords, j, chunk);
                let x = source.chunk(Walk::Again, g, l, &mut eval, input, acc, j, &n, Some(-inf))?;
                let shifted = binary(l, "sub", x, max, tile.clone());
                let e = g.exp(l, shifted, tile.clone());
                Ok(vec![binary(l, "add", old[0], e, tile.clone())])
            })?;
            (max, reduce_tile(g, b, sums[0], "sum", acc))
        } else {
            let w = RowWalk {
                n: &n,
                chunk,
                shape: &shape,
                acc,
            };
            let statistics = online_statistics(g, b, &w, &mut |l, j| {
                let mut eval = row_eval(k, &dims, &coords, j, chunk);
                source.chunk(Walk::First, g, l, &mut eval, input, acc, j, &n, Some(-inf))
            })?;
            source.kept(b);
            statistics
        };
        // What the last walk subtracts from or multiplies by `x - max`.
        let scale = if log {
            unary(b, "log", sum, Type::Scalar(acc))
        } else {
            reciprocal(b, sum, acc)
        };
        walk(g, b, &n, chunk, &mut |l, j| {
            let mut eval = row_eval(k, &dims, &coords, j, chunk);
            let x = source.chunk(Walk::Again, g, l, &mut eval, input, acc, j, &n, None)?;
            let shifted = binary(l, "sub", x, max, tile.clone());
            let y = if log {
                binary(l, "sub", shifted, scale, tile.clone())
            } else {
                let e = g.exp(l, shifted, tile.clone());
                binary(l, "mul", e, scale, tile.clone())
            };
            store_row(g, l, k, sm, y, &dims, &coords, j, chunk)
        })
    };
    by_row_length(g, b, &n, k.threads(), column_bits(k, node), &mut whole, &mut walks)?;
    Ok(0)
}

/// What a norm kernel computes: layer norm (`layer`: mean, then
/// variance) or RMS norm (mean square), then `(x - mean) · rstd`, times
/// the weight, plus the bias.
struct Norm<'k> {
    k: &'k Kernel,
    node: &'k Node,
    anchor: usize,
    dims: Vec<DimExpr>,
    coords: Vec<ValueId>,
    acc: ScalarType,
    eps: f64,
    layer: bool,
}

impl Norm<'_> {
    /// `(x - mean) · rstd · weight + bias` of the chunk `x` (`mean`
    /// already subtracted when `centered`) of `width` columns at `j`,
    /// stored.
    #[allow(clippy::too_many_arguments)]
    fn output(
        &self,
        g: &Gen,
        l: &mut Builder<'_>,
        eval: &mut TileEval<'_>,
        mut y: ValueId,
        mean: Option<ValueId>,
        rstd: ValueId,
        j: ValueId,
        width: i64,
    ) -> Result<()> {
        let shape = row_shape(self.dims.len(), width);
        let tile = tile_type(&shape, self.acc);
        if let Some(mean) = mean {
            y = binary(l, "sub", y, mean, tile.clone());
        }
        y = binary(l, "mul", y, rstd, tile.clone());
        for (i, f) in [(1, "mul"), (2, "add")] {
            if let Some(&param) = self.node.operands.get(i) {
                let (p, p_shape) = eval.eval(g, l, param)?;
                let p = cast_to(l, p, self.acc);
                let p = if p_shape.is_empty() || p_shape == shape {
                    p
                } else {
                    broadcast(l, p, &shape)
                };
                y = binary(l, f, y, p, tile.clone());
            }
        }
        store_row(g, l, self.k, self.anchor, y, &self.dims, &self.coords, j, width)
    }

    /// `1 / sqrt(squares / n + eps)`.
    fn rstd(&self, b: &mut Builder<'_>, squares: ValueId, count: ValueId) -> ValueId {
        let scalar = Type::Scalar(self.acc);
        let variance = binary(b, "div", squares, count, scalar.clone());
        let eps = number(b, self.eps, scalar.clone());
        let shifted = binary(b, "add", variance, eps, scalar.clone());
        unary(b, "rsqrt", shifted, scalar)
    }

    /// The squares of `x` (minus `mean`), zero past the row's end.
    fn squares(
        &self,
        g: &Gen,
        l: &mut Builder<'_>,
        x: ValueId,
        mean: Option<ValueId>,
        j: ValueId,
        width: i64,
    ) -> Result<ValueId> {
        let n = &self.dims[self.dims.len() - 1];
        let shape = row_shape(self.dims.len(), width);
        let tile = tile_type(&shape, self.acc);
        let x = match mean {
            Some(mean) => binary(l, "sub", x, mean, tile.clone()),
            None => x,
        };
        let mut sq = binary(l, "mul", x, x, tile);
        if g.ragged(n, width) {
            let valid = g.lanes_below(l, j, &shape, n)?;
            let zero = number(l, 0.0, Type::Scalar(self.acc));
            sq = select(l, valid, sq, zero);
        }
        Ok(sq)
    }
}

/// The mean of a row and the sum of the squares of its differences from
/// it, in one walk (Welford's): each lane keeps the mean of its values so
/// far and the sum of their squared differences from it; at step `s` (the
/// chunk at `s · chunk`) a lane inside the row takes its value `x` as its
/// `s + 1`-th, `mean += (x - mean) / (s + 1)`,
/// `m2 += (x - old mean) · (x - mean)`, and one past the end keeps its own. The lanes then combine
/// (Chan's): lane `c` holds `⌊(n - c + chunk - 1) / chunk⌋` values, the
/// row's mean is their count-weighted mean, and its sum of squares the
/// lanes' plus each lane's count times its mean's squared difference from
/// the row's.
fn welford(g: &Gen, b: &mut Builder<'_>, w: &RowWalk<'_>, chunk_at: &mut ChunkOf<'_>) -> Result<(ValueId, ValueId)> {
    let RowWalk { n, chunk, shape, acc } = *w;
    let tile = tile_type(shape, acc);
    let scalar = Type::Scalar(acc);
    let lanes = walk_lanes(g, b, n, chunk, shape, acc, &[0.0, 0.0], &mut |l, j, old| {
        let x = chunk_at(l, j)?;
        let width = index(l, chunk);
        let step = binary(l, "floordiv", j, width, Type::INDEX);
        let one = index(l, 1);
        let taken = binary(l, "add", step, one, Type::INDEX);
        let taken = cast_to(l, taken, acc);
        let share = reciprocal(l, taken, acc);
        let delta = binary(l, "sub", x, old[0], tile.clone());
        let moved = binary(l, "mul", delta, share, tile.clone());
        let mut mean = binary(l, "add", old[0], moved, tile.clone());
        let from_new = binary(l, "sub", x, mean, tile.clone());
        let product = binary(l, "mul", delta, from_new, tile.clone());
        let mut m2 = binary(l, "add", old[1], product, tile.clone());
        if g.ragged(n, chunk) {
            let valid = g.lanes_below(l, j, shape, n)?;
            mean = select(l, valid, mean, old[0]);
            m2 = select(l, valid, m2, old[1]);
        }
        Ok(vec![mean, m2])
    })?;
    let index_tile = tile_type(shape, ScalarType::Index);
    let lane = iota(b, shape, shape.len().saturating_sub(1) as i64);
    let minus_one = index(b, -1);
    let back = binary(b, "mul", lane, minus_one, index_tile.clone());
    let length = g.dim(b, n)?;
    let spare = index(b, chunk - 1);
    let top = binary(b, "add", length, spare, Type::INDEX);
    let left = binary(b, "add", back, top, index_tile.clone());
    let width = index(b, chunk);
    let held = binary(b, "floordiv", left, width, index_tile);
    let held = cast_to(b, held, acc);
    let weighted = binary(b, "mul", held, lanes[0], tile.clone());
    let total = reduce_tile(g, b, weighted, "sum", acc);
    let count = cast_to(b, length, acc);
    let mean = binary(b, "div", total, count, scalar);
    let apart = binary(b, "sub", lanes[0], mean, tile.clone());
    let spread = binary(b, "mul", apart, apart, tile.clone());
    let spread = binary(b, "mul", held, spread, tile.clone());
    let squares = binary(b, "add", lanes[1], spread, tile);
    Ok((mean, reduce_tile(g, b, squares, "sum", acc)))
}

/// Layer norm and RMS norm of a row held whole (`width` columns, masked
/// past its end): its mean, the mean square of the rest, the output; or
/// in walks: the statistics (for layer norm in one walk, [`welford`];
/// for RMS norm the sum of squares), then the output.
pub(crate) fn norm(g: &Gen, b: &mut Builder<'_>, k: &Kernel) -> Result<i64> {
    let at = k.anchor("graph.norm").ok_or("no `graph.norm` in a norm kernel")?;
    let node = &k.nodes[at];
    let input = node.operands[0];
    let dims = tensor_dims(k, input)?;
    last_axis(node, dims.len())?;
    let chunk = chunk_size(k)?;
    let n = dims[dims.len() - 1].clone();
    let eps = match node.attrs.get("eps") {
        Some(Attr::Float(f)) => *f,
        Some(Attr::Int(i)) => *i as f64,
        _ => 1e-5,
    };
    let coords = row_coords(g, b, &dims)?;
    let norm = Norm {
        k,
        node,
        anchor: at,
        dims: dims.clone(),
        coords: coords.clone(),
        acc: accumulate_type(node),
        eps,
        layer: node.str("kind") != Some("rms"),
    };
    let acc = norm.acc;
    let scalar = Type::Scalar(acc);
    let n_value = g.dim(b, &n)?;
    let count = cast_to(b, n_value, acc);
    let mut whole = |l: &mut Builder<'_>, width: i64| -> Result<()> {
        let j = index(l, 0);
        let mut eval = row_eval(k, &dims, &coords, j, width);
        let x = chunk_of(g, l, &mut eval, input, acc, j, &n, Some(0.0))?;
        let mean = if norm.layer {
            let sum = reduce_tile(g, l, x, "sum", acc);
            Some(binary(l, "div", sum, count, scalar.clone()))
        } else {
            None
        };
        let sq = norm.squares(g, l, x, mean, j, width)?;
        let squares = reduce_tile(g, l, sq, "sum", acc);
        let rstd = norm.rstd(l, squares, count);
        norm.output(g, l, &mut eval, x, mean, rstd, j, width)
    };
    let mut walks = |b: &mut Builder<'_>| -> Result<()> {
        let shape = row_shape(dims.len(), chunk);
        let tile = tile_type(&shape, acc);
        let source = RowSource::new(g, b, k, input, &n, chunk);
        let (mean, squares) = if norm.layer && source.staged.is_some() {
            // The row is read again from shared memory: its mean, then the
            // squares of the differences from it (two walks, the second
            // free of global reads, in fewer registers than Welford's).
            let sums = walk_lanes(g, b, &n, chunk, &shape, acc, &[0.0], &mut |l, j, old| {
                let mut eval = row_eval(k, &dims, &coords, j, chunk);
                let x = source.chunk(Walk::First, g, l, &mut eval, input, acc, j, &n, Some(0.0))?;
                Ok(vec![binary(l, "add", old[0], x, tile.clone())])
            })?;
            source.kept(b);
            let sum = reduce_tile(g, b, sums[0], "sum", acc);
            let mean = binary(b, "div", sum, count, scalar.clone());
            let squares = walk_lanes(g, b, &n, chunk, &shape, acc, &[0.0], &mut |l, j, old| {
                let mut eval = row_eval(k, &dims, &coords, j, chunk);
                let x = source.chunk(Walk::Again, g, l, &mut eval, input, acc, j, &n, None)?;
                let sq = norm.squares(g, l, x, Some(mean), j, chunk)?;
                Ok(vec![binary(l, "add", old[0], sq, tile.clone())])
            })?;
            (Some(mean), reduce_tile(g, b, squares[0], "sum", acc))
        } else if norm.layer {
            let w = RowWalk {
                n: &n,
                chunk,
                shape: &shape,
                acc,
            };
            let (mean, squares) = welford(g, b, &w, &mut |l, j| {
                let mut eval = row_eval(k, &dims, &coords, j, chunk);
                source.chunk(Walk::First, g, l, &mut eval, input, acc, j, &n, None)
            })?;
            source.kept(b);
            (Some(mean), squares)
        } else {
            let squares = walk_lanes(g, b, &n, chunk, &shape, acc, &[0.0], &mut |l, j, old| {
                let mut eval = row_eval(k, &dims, &coords, j, chunk);
                let x = source.chunk(Walk::First, g, l, &mut eval, input, acc, j, &n, None)?;
                let sq = norm.squares(g, l, x, None, j, chunk)?;
                Ok(vec![binary(l, "add", old[0], sq, tile.clone())])
            })?;
            source.kept(b);
            (None, reduce_tile(g, b, squares[0], "sum", acc))
        };
        let rstd = norm.rstd(b, squares, count);
        walk(g, b, &n, chunk, &mut |l, j| {
            let mut eval = row_eval(k, &dims, &coords, j, chunk);
            let x = source.chunk(Walk::Again, g, l, &mut eval, input, acc, j, &n, None)?;
            norm.output(g, l, &mut eval, x, mean, rstd, j, chunk)
        })
    };
    by_row_length(g, b, &n, k.threads(), column_bits(k, node), &mut whole, &mut walks)?;
    Ok(0)
}

/// A reduction whose axes include the last: one block per output element;
/// loops over the other reduced axes, chunks along the last, each chunk
/// folded with `tile.reduce` into a running value.
pub(crate) fn reduce(g: &Gen, b: &mut Builder<'_>, k: &Kernel) -> Result<i64> {
    let at = k.anchor("graph.reduce").ok_or("no `graph.reduce` in a reduce kernel")?;
    let node = &k.nodes[at];
    let input = node.operands[0];
    let dims = tensor_dims(k, input)?;
    let rank = dims.len();
    let axes: BTreeSet<usize> = node
        .attrs
        .get("axes")
        .and_then(Attr::as_ints)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|a| normalize_axis(a, rank))
        .collect();
    let kind = node.str("kind").unwrap_or("sum").to_string();
    let (identity, combine, tile_kind) = match kind.as_str() {
        "sum" | "mean" => (0.0, "add", "sum"),
        "prod" => (1.0, "mul", "prod"),
        "max" => (f64::NEG_INFINITY, "max", "max"),
        _ => (f64::INFINITY, "min", "min"),
    };
    let acc = accumulate_type(node);
    let chunk = match k.tile.as_slice() {
        [c] => *c,
        _ => return Err("its `tile_shape` is not [columns]".into()),
    };
    let kept: Vec<usize> = (0..rank).filter(|a| !axes.contains(a)).collect();
    let kept_dims: Vec<DimExpr> = kept.iter().map(|&a| dims[a].clone()).collect();
    let fold_kind = Fold {
        kind: &kind,
        identity,
        combine,
        acc,
    };
    if !axes.contains(&(rank - 1)) {
        return reduce_in_threads(g, b, k, at, &dims, &axes, &kept, &kept_dims, &fold_kind);
    }
    let n = dims[rank - 1].clone();
    let element = id(b, "tile.block_id", 0);
    let kept_coords = g.unflatten(b, element, &kept_dims)?;
    let slot = g.slot(b, acc, number_attr(identity, acc));
    let outer: Vec<usize> = axes.iter().copied().filter(|&a| a != rank - 1).collect();
    let shape = row_shape(rank, chunk);
    let mut inner = |l: &mut Builder<'_>, ivs: &[(usize, ValueId)]| -> Result<()> {
        let lanes = walk_lanes(g, l, &n, chunk, &shape, acc, &[identity], &mut |l, j, old| {
            let coords: Vec<ValueId> = (0..rank - 1)
                .map(|a| match kept.iter().position(|&x| x == a) {
                    Some(p) => kept_coords[p],
                    None => ivs
                        .iter()
                        .find(|(x, _)| *x == a)
                        .map(|&(_, v)| v)
                        .expect("a loop per reduced axis"),
                })
                .collect();
            let mut eval = row_eval(k, &dims, &coords, j, chunk);
            let x = chunk_of(g, l, &mut eval, input, acc, j, &n, Some(identity))?;
            Ok(vec![binary(l, combine, old[0], x, tile_type(&shape, acc))])
        })?;
        let part = reduce_tile(g, l, lanes[0], tile_kind, acc);
        fold_into(l, slot, part, combine, acc);
        Ok(())
    };
    nest(g, b, &dims, &outer, &mut Vec::new(), &mut inner)?;
    finish_reduce(g, b, k, at, &dims, &axes, &kept, &kept_coords, slot, &fold_kind)?;
    Ok(0)
}

/// How a reduction folds: its kind, the identity, the combining function
/// and the accumulate type.
struct Fold<'a> {
    kind: &'a str,
    identity: f64,
    combine: &'static str,
    acc: ScalarType,
}

/// The running value of a reduction becomes its output element: divided
/// by the count for a mean, cast, through the epilogue, stored.
#[allow(clippy::too_many_arguments)]
fn finish_reduce(
    g: &Gen,
    b: &mut Builder<'_>,
    k: &Kernel,
    at: usize,
    dims: &[DimExpr],
    axes: &BTreeSet<usize>,
    kept: &[usize],
    kept_coords: &[ValueId],
    slot: ValueId,
    fold: &Fold<'_>,
) -> Result<()> {
    let node = &k.nodes[at];
    let acc = fold.acc;
    let mut value = load(b, slot, acc);
    if fold.kind == "mean" {
        let reduced: Vec<DimExpr> = axes.iter().map(|&a| dims[a].clone()).collect();
        let count = g.dim(b, &num_elements(&reduced))?;
        let count = cast_to(b, count, acc);
        value = binary(b, "div", value, count, Type::Scalar(acc));
    }
    let value = cast_to(b, value, node.ty.elem().unwrap_or(acc));
    let out_dims = node.ty.dims().map(<[_]>::to_vec).unwrap_or_default();
    let keep = node.attrs.get("keepdims").and_then(Attr::as_bool).unwrap_or(false);
    let offsets: Vec<ValueId> = if keep {
        (0..dims.len())
            .map(|a| match kept.iter().position(|&x| x == a) {
                Some(p) => kept_coords[p],
                None => index(b, 0),
            })
            .collect()
    } else {
        kept_coords.to_vec()
    };
    let mut eval = TileEval {
        k,
        frame: Frame {
            dims: out_dims.clone(),
            offsets: offsets.clone(),
            extents: vec![1; out_dims.len()],
            rank: 0,
        },
        known: HashMap::from([(Src::Node(at), (value, Vec::new()))]),
    };
    let (root, _) = eval.eval(g, b, k.root)?;
    let root = cast_to(b, root, k.result.elem().unwrap_or(acc));
    b.op("tile.store").operands(&[root, g.out]).operands(&offsets).build();
    Ok(())
}

/// A reduction that keeps the last axis: its reduced elements are not
/// contiguous, so one thread per output element (a 1-D grid with a bound
/// check, as elementwise kernels) folds them in order, in loops over the
/// reduced axes — a fixed order, deterministic without `tile.reduce`.
#[allow(clippy::too_many_arguments)]
fn reduce_in_threads(
    g: &Gen,
    b: &mut Builder<'_>,
    k: &Kernel,
    at: usize,
    dims: &[DimExpr],
    axes: &BTreeSet<usize>,
    kept: &[usize],
    kept_dims: &[DimExpr],
    fold: &Fold<'_>,
) -> Result<i64> {
    let input = k.nodes[at].operands[0];
    let (linear, then, other) = thread_per_item(g, b, k.threads(), kept_dims)?;
    {
        let mut l = g.at(b, then);
        let kept_coords = g.unflatten(&mut l, linear, kept_dims)?;
        let slot = g.slot(&mut l, fold.acc, number_attr(fold.identity, fold.acc));
        let reduced: Vec<usize> = axes.iter().copied().collect();
        let mut inner = |l: &mut Builder<'_>, ivs: &[(usize, ValueId)]| -> Result<()> {
            let coords: Vec<ValueId> = (0..dims.len())
                .map(|a| match kept.iter().position(|&x| x == a) {
                    Some(p) => kept_coords[p],
                    None => ivs
                        .iter()
                        .find(|(x, _)| *x == a)
                        .map(|&(_, v)| v)
                        .expect("a loop per reduced axis"),
                })
                .collect();
            let mut eval = TileEval {
                k,
                frame: Frame {
                    dims: dims.to_vec(),
                    offsets: coords,
                    extents: vec![1; dims.len()],
                    rank: 0,
                },
                known: HashMap::new(),
            };
            let (x, _) = eval.eval(g, l, input)?;
            let x = cast_to(l, x, fold.acc);
            fold_into(l, slot, x, fold.combine, fold.acc);
            Ok(())
        };
        nest(g, &mut l, dims, &reduced, &mut Vec::new(), &mut inner)?;
        finish_reduce(g, &mut l, k, at, dims, axes, kept, &kept_coords, slot, fold)?;
        end(&mut l);
    }
    end(&mut g.at(b, other));
    Ok(0)
}

/// A cumulative sum: one thread per line along the axis (a 1-D grid with
/// a bound check, as elementwise kernels) adds its elements in index order
/// into a running value in the accumulator's dtype, and each running value
/// becomes its output element (through the epilogue) — a fixed order,
/// the same on every target.
pub(crate) fn scan(g: &Gen, b: &mut Builder<'_>, k: &Kernel) -> Result<i64> {
    let at = k.anchor("graph.cumsum").ok_or("no `graph.cumsum` in a scan kernel")?;
    let node = &k.nodes[at];
    let input = node.operands[0];
    let dims = tensor_dims(k, input)?;
    let axis = normalize_axis(node.int("axis").unwrap_or(-1), dims.len()).ok_or("a cumulative sum's axis")?;
    let acc = accumulate_type(node);
    let lines: Vec<usize> = (0..dims.len()).filter(|&a| a != axis).collect();
    let line_dims: Vec<DimExpr> = lines.iter().map(|&a| dims[a].clone()).collect();
    let (linear, then, other) = thread_per_item(g, b, k.threads(), &line_dims)?;
    {
        let mut l = g.at(b, then);
        let line = g.unflatten(&mut l, linear, &line_dims)?;
        let slot = g.slot(&mut l, acc, number_attr(0.0, acc));
        let mut body = |l: &mut Builder<'_>, ivs: &[(usize, ValueId)]| -> Result<()> {
            let coords: Vec<ValueId> = (0..dims.len())
                .map(|a| match lines.iter().position(|&x| x == a) {
                    Some(p) => line[p],
                    None => ivs[0].1,
                })
                .collect();
            let frame = || Frame {
                dims: dims.clone(),
                offsets: coords.clone(),
                extents: vec![1; dims.len()],
                rank: 0,
            };
            let mut eval = TileEval {
                k,
                frame: frame(),
                known: HashMap::new(),
            };
            let (x, _) = eval.eval(g, l, input)?;
            let x = cast_to(l, x, acc);
            fold_into(l, slot, x, "add", acc);
            let running = load(l, slot, acc);
            let value = cast_to(l, running, node.ty.elem().unwrap_or(acc));
            let mut eval = TileEval {
                k,
                frame: frame(),
                known: HashMap::from([(Src::Node(at), (value, Vec::new()))]),
            };
            let (root, _) = eval.eval(g, l, k.root)?;
            let root = cast_to(l, root, k.result.elem().unwrap_or(acc));
            l.op("tile.store").operands(&[root, g.out]).operands(&coords).build();
            Ok(())
        };
        nest(g, &mut l, &dims, &[axis], &mut Vec::new(), &mut body)?;
        end(&mut l);
    }
    end(&mut g.at(b, other));
    Ok(0)
}

fn number_attr(value: f64, elem: ScalarType) -> Attr {
    if elem.is_float() {
        Attr::Float(value)
    } else if value.is_infinite() {
        Attr::Int(if value > 0.0 { i64::MAX } else { i64::MIN })
    } else {
        Attr::Int(value as i64)
    }
}

/// The innermost body of a loop nest: a builder in it and the loop
/// variables, each with its axis.
type LoopBody<'a> = dyn FnMut(&mut Builder<'_>, &[(usize, ValueId)]) -> Result<()> + 'a;

/// Loops over `outer` axes (step 1), then `inner` with their variables.
fn nest(
    g: &Gen,
    b: &mut Builder<'_>,
    dims: &[DimExpr],
    outer: &[usize],
    ivs: &mut Vec<(usize, ValueId)>,
    inner: &mut LoopBody<'_>,
) -> Result<()> {
    let Some((&axis, rest)) = outer.split_first() else {
        return inner(b, ivs);
    };
    let c0 = index(b, 0);
    let ub = g.dim(b, &dims[axis])?;
    let one = index(b, 1);
    let (block, iv) = for_loop(b, c0, ub, one);
    let mut l = g.at(b, block);
    ivs.push((axis, iv));
    nest(g, &mut l, dims, rest, ivs, inner)?;
    ivs.pop();
    end(&mut l);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(name: &str) -> Target {
        Target::by_name(name).expect("a known target")
    }

    /// A staged row and its extra chunk fit the target's shared memory:
    /// 32768 columns of either dtype on NVIDIA GPUs and the CPU; on AMD's
    /// 64 KiB, 16384 bf16 columns and f32 ones no longer than a register
    /// tile holds (so no staged kernel).
    #[test]
    fn staged_rows_fit_each_target() {
        for name in ["sm_90a", "sm_80", "cpu"] {
            assert_eq!(staged_row(&target(name), 16), Some(32768), "{name}");
            assert_eq!(staged_row(&target(name), 32), Some(32768), "{name}");
        }
        for name in ["gfx942", "gfx90a"] {
            assert_eq!(staged_row(&target(name), 16), Some(16384), "{name}");
            assert_eq!(staged_row(&target(name), 32), Some(8192), "{name}");
            let ranges = length_ranges(256, 32, true, staged_row(&target(name), 32));
            assert!(ranges.iter().all(|r| !matches!(r.span, RowSpan::Staged(_))), "{name}");
        }
        let limit = target("sm_80").shared_limit.expect("a limit");
        assert!((32768 + staged_chunk(32)) * 4 + REDUCTION_SCRATCH <= limit);
    }

    /// The softmax holds a run a thread while 1024 threads hold the row,
    /// then stages it; a norm holds 16 bf16 columns a thread first.
    #[test]
    fn ranges_put_staged_rows_between_whole_rows_and_walks() {
        let spans = |bits, spread| {
            length_ranges(256, bits, spread, Some(32768))
                .iter()
                .map(|r| (r.span, r.threads))
                .collect::<Vec<_>>()
        };
        let softmax = spans(16, true);
        assert_eq!(
            softmax[3..],
            [
                (RowSpan::Whole(8192), 1024),
                (RowSpan::Staged(32768), STAGED_THREADS),
                (RowSpan::Walks, 256)
            ]
        );
        assert!(spans(64, true)
            .iter()
            .chain(&spans(64, false))
            .all(|&(span, threads)| threads <= 256 || matches!(span, RowSpan::Staged(_))));
        let norm = spans(16, false);
        assert_eq!(
            norm[3..],
            [
                (RowSpan::Whole(8192), 512),
                (RowSpan::Whole(16384), 1024),
                (RowSpan::Staged(32768), STAGED_THREADS),
                (RowSpan::Walks, 256)
            ]
        );
    }
}
