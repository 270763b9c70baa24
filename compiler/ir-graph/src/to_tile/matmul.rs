//! The matmul template: one block per BM×BN tile of the output (block x
//! → tile row, y → tile column, z → the flattened batch), a K loop (a
//! `tile.pipeline` of `stages` slots) that copies A and B tiles into rings
//! in shared memory asynchronously, `stages - 1` steps ahead of the
//! `tile.mma` into an accumulator, then the epilogue on the accumulator
//! tile and one `tile.store_tile`.

use std::collections::HashMap;

use tessera_ir::{Attr, Builder, CmpOp, DimExpr, MemSpace, ScalarType, ShapeConstraint, Type, ValueId};

use super::emit::{
    binary, cast_to, end, for_loop, id, index, load_tile, mma, number, pipeline, tile_type, transpose, view, Frame,
    Gen, Result, TileEval,
};
use super::rows::{RowSpan, Variant};
use super::{Kernel, Src};
use crate::shape::GridDim;
use crate::targets::matmul_shared_bytes;

/// The kernels of a matmul with a narrow variant (`spec/ir-schedule.md`,
/// "Narrow variants"): `<name>_m<max_m>`, the narrow geometry, launched
/// when M is at most `max_m`, and the kernel itself when M is larger.
pub(crate) fn variants(k: &Kernel) -> Vec<Variant> {
    let m_dim = k
        .anchor("graph.matmul")
        .map(|mm| k.ty(k.nodes[mm].operands[0]))
        .and_then(Type::dims)
        .and_then(|dims| dims.len().checked_sub(2).map(|i| dims[i].clone()));
    let whole = |kernel: Kernel, launches| Variant {
        kernel,
        launches,
        facts: Vec::new(),
        span: RowSpan::Any,
    };
    let (Some(narrow), Some(m)) = (&k.narrow, m_dim) else {
        return vec![whole(k.clone(), vec![Vec::new()])];
    };
    let bound = |op| ShapeConstraint::Compare {
        lhs: m.clone(),
        op,
        rhs: DimExpr::constant(narrow.max_m),
    };
    let small = k.with_geometry(format!("{}_m{}", k.name, narrow.max_m), &narrow.geometry);
    vec![
        whole(small, vec![vec![bound(CmpOp::Le)]]),
        whole(k.clone(), vec![vec![bound(CmpOp::Gt)]]),
    ]
}

/// Emits the kernel body; returns its shared memory in bytes.
pub(crate) fn lower(g: &Gen, b: &mut Builder<'_>, k: &Kernel) -> Result<i64> {
    let mm = k.anchor("graph.matmul").ok_or("no `graph.matmul` in a matmul kernel")?;
    let node = &k.nodes[mm];
    // B is a kernel input, or the transpose of one (of its last two dims):
    // then B's tiles are copied as they lie (BN×BK) and transposed in
    // registers.
    let (b_src, transposed) = match node.operands[1] {
        Src::Node(t) if k.nodes[t].name == "graph.transpose" => (k.nodes[t].operands[0], true),
        other => (other, false),
    };
    let (Src::Arg(a), Src::Arg(bi)) = (node.operands[0], b_src) else {
        return Err("the operands of its matmul are computed in the kernel".into());
    };
    let (
        Type::Tensor { dims: a_dims, elem },
        Type::Tensor {
            dims: b_dims,
            elem: b_elem,
        },
    ) = (&k.args[a], &k.args[bi])
    else {
        return Err("the operands of its matmul are not tensors".into());
    };
    // The same but for the two fp8 formats, which have the same size.
    let (elem, b_elem) = (*elem, *b_elem);
    let out = node.ty.dims().ok_or("a matmul without a tensor result")?.to_vec();
    let acc = match node.attrs.get("accumulate").and_then(Attr::as_type) {
        Some(Type::Scalar(s)) => *s,
        _ => ScalarType::F32,
    };
    let &[bm, bn, bk] = k.tile.as_slice() else {
        return Err("its `tile_shape` is not [BM, BN, BK]".into());
    };
    let stages = k.stages.max(1);
    let k_dim = a_dims[a_dims.len() - 1].clone();

    // The accumulator, and a ring of A tiles and one of B tiles, a slot per
    // pipeline stage.
    let acc_tile = tile_type(&[bm, bn], acc);
    let acc_slot = b
        .op("tile.local")
        .result(Type::memref([bm.into(), bn.into()], acc, MemSpace::Local))
        .build_value();
    let (b_rows, b_cols) = if transposed { (bn, bk) } else { (bk, bn) };
    let a_ring = g.shared_ring(b, stages, bm, bk, elem);
    let b_ring = g.shared_ring(b, stages, b_rows, b_cols, b_elem);
    let batch = &out[..out.len() - 2];

    // Which output tile this block computes: the one its block indices
    // name, or on a persistent grid each of those its walk visits.
    let walk = match k.grid.as_deref() {
        Some([GridDim::Persistent(_)]) => {
            let rows = tiles(g, b, &out[out.len() - 2], bm)?;
            let cols = tiles(g, b, &out[out.len() - 1], bn)?;
            let per_batch = binary(b, "mul", rows, cols, Type::INDEX);
            let all = if batch.is_empty() {
                per_batch
            } else {
                let batches = g.dim(b, &crate::shape::num_elements(batch))?;
                binary(b, "mul", per_batch, batches, Type::INDEX)
            };
            let first = id(b, "tile.block_id", 0);
            let stride = id(b, "tile.grid_dim", 0);
            let (body, t) = for_loop(b, first, all, stride);
            Some(Walk {
                body,
                t,
                rows,
                cols,
                per_batch,
            })
        }
        _ => None,
    };
    let mm_tile = Tile {
        mm,
        a,
        bi,
        transposed,
        a_dims,
        b_dims,
        b_elem,
        out: &out,
        acc,
        shape: [bm, bn, bk],
        stages,
        k_dim,
        acc_tile,
        acc_slot,
        a_ring,
        b_ring,
    };
    match walk {
        Some(w) => {
            let mut l = g.at(b, w.body);
            one_tile(g, &mut l, k, &mm_tile, Some(w))?;
            end(&mut l);
        }
        None => one_tile(g, b, k, &mm_tile, None)?,
    }
    Ok(matmul_shared_bytes(&g.target, [bm, bn, bk], stages, elem))
}

/// What every tile of a matmul kernel reads.
struct Tile<'k> {
    /// The matmul's node, and its A and B arguments.
    mm: usize,
    a: usize,
    bi: usize,
    transposed: bool,
    a_dims: &'k [DimExpr],
    b_dims: &'k [DimExpr],
    b_elem: ScalarType,
    out: &'k [DimExpr],
    acc: ScalarType,
    shape: [i64; 3],
    stages: i64,
    k_dim: DimExpr,
    acc_tile: Type,
    acc_slot: ValueId,
    a_ring: ValueId,
    b_ring: ValueId,
}

/// A persistent grid's walk over the output tiles: the loop's body and
/// step `t`, and the tiles along M and N and per batch entry.
#[derive(Clone, Copy)]
struct Walk {
    body: tessera_ir::BlockId,
    t: ValueId,
    rows: ValueId,
    cols: ValueId,
    per_batch: ValueId,
}

/// One output tile: its coordinates, the zeroed accumulator, the K loop,
/// the epilogue and the store; the tile is the block's own, or step `t`
/// of the walk.
fn one_tile(g: &Gen, b: &mut Builder<'_>, k: &Kernel, mt: &Tile, walk: Option<Walk>) -> Result<()> {
    let Tile {
        mm,
        a,
        bi,
        transposed,
        a_dims,
        b_dims,
        b_elem,
        out,
        acc,
        shape: [bm, bn, bk],
        stages,
        acc_slot,
        a_ring,
        b_ring,
        ..
    } = *mt;
    let (k_dim, acc_tile) = (&mt.k_dim, &mt.acc_tile);
    let node = &k.nodes[mm];
    let batch = &out[..out.len() - 2];
    let (bx, by, bz) = match walk {
        Some(Walk {
            t,
            rows,
            cols,
            per_batch,
            ..
        }) => {
            let (bz, within) = if batch.is_empty() {
                (None, t)
            } else {
                let bz = binary(b, "floordiv", t, per_batch, Type::INDEX);
                (Some(bz), binary(b, "rem", t, per_batch, Type::INDEX))
            };
            let (bx, by) = raster(b, within, rows, cols);
            (bx, by, bz)
        }
        None => {
            let bx = id(b, "tile.block_id", 0);
            let by = id(b, "tile.block_id", 1);
            let bz = (!batch.is_empty()).then(|| id(b, "tile.block_id", 2));
            (bx, by, bz)
        }
    };
    let bm_v = index(b, bm);
    let bn_v = index(b, bn);
    let row0 = binary(b, "mul", bx, bm_v, Type::INDEX);
    let col0 = binary(b, "mul", by, bn_v, Type::INDEX);
    let batch_coords = match bz {
        Some(bz) => g.unflatten(b, bz, batch)?,
        None => Vec::new(),
    };
    let a_batch = operand_batch(b, &a_dims[..a_dims.len() - 2], batch, &batch_coords);
    let b_batch = operand_batch(b, &b_dims[..b_dims.len() - 2], batch, &batch_coords);
    // Batched operands are read through their 2-D slice of this batch.
    let a_mem = if a_batch.is_empty() {
        g.inputs[a]
    } else {
        view(b, g.inputs[a], &a_batch)
    };
    let b_mem = if b_batch.is_empty() {
        g.inputs[bi]
    } else {
        view(b, g.inputs[bi], &b_batch)
    };

    // The accumulator, zeroed.
    let zero = number(b, 0.0, acc_tile.clone());
    let c0 = index(b, 0);
    b.op("tile.store_tile").operands(&[zero, acc_slot, c0, c0]).build();

    // The K loop, software-pipelined: the copies of the tiles `stages - 1`
    // steps ahead overlap the mma of this step.
    let k_end = g.dim(b, k_dim)?;
    let step = index(b, bk);
    let (fill, consume) = pipeline(b, [c0, k_end, step], stages);
    {
        let (kk, slot) = (fill.k, fill.slot);
        let mut l = g.at(b, fill.block);
        let a_buf = view(&mut l, a_ring, &[slot]);
        l.op("tile.async_copy")
            .operands(&[a_buf, a_mem, row0, kk])
            .attr("stage", Attr::Int(0))
            .build();
        let b_buf = view(&mut l, b_ring, &[slot]);
        let b_offsets = if transposed { [col0, kk] } else { [kk, col0] };
        l.op("tile.async_copy")
            .operands(&[b_buf, b_mem])
            .operands(&b_offsets)
            .attr("stage", Attr::Int(1))
            .build();
        end(&mut l);
    }
    {
        let slot = consume.slot;
        let mut l = g.at(b, consume.block);
        let a_buf = view(&mut l, a_ring, &[slot]);
        let b_buf = view(&mut l, b_ring, &[slot]);
        let current = load_tile(&mut l, acc_slot, c0, acc_tile);
        let b_operand = if transposed {
            let tile = load_tile(&mut l, b_buf, c0, &tile_type(&[bn, bk], b_elem));
            transpose(&mut l, tile, tile_type(&[bk, bn], b_elem))
        } else {
            b_buf
        };
        let next = mma(&mut l, a_buf, b_operand, current, acc_tile);
        l.op("tile.store_tile").operands(&[next, acc_slot, c0, c0]).build();
        end(&mut l);
    }

    // The epilogue, on the accumulator tile.
    let result = load_tile(b, acc_slot, c0, acc_tile);
    let mm_elem = node.ty.elem().unwrap_or(acc);
    let value = cast_to(b, result, mm_elem);
    let offsets: Vec<ValueId> = batch_coords.iter().copied().chain([row0, col0]).collect();
    let extents: Vec<i64> = batch.iter().map(|_| 1).chain([bm, bn]).collect();
    let mut eval = TileEval {
        k,
        frame: Frame {
            dims: out.to_vec(),
            offsets: offsets.clone(),
            extents,
            rank: 2,
        },
        known: HashMap::from([(Src::Node(mm), (value, vec![bm, bn]))]),
    };
    let (root, _) = eval.eval(g, b, k.root)?;
    let out_elem = k.result.elem().unwrap_or(mm_elem);
    let root = cast_to(b, root, out_elem);
    let out_mem = if batch.is_empty() {
        g.out
    } else {
        view(b, g.out, &batch_coords)
    };
    b.op("tile.store_tile").operands(&[root, out_mem, row0, col0]).build();
    Ok(())
}

/// M tiles a persistent walk takes as one group, column after column, so
/// that the blocks running at once share A's rows and B's columns in L2.
const RASTER_GROUP: i64 = 8;

/// `⌈extent / tile⌉`, as an index.
fn tiles(g: &Gen, b: &mut Builder<'_>, extent: &DimExpr, tile: i64) -> Result<ValueId> {
    let extent = g.dim(b, extent)?;
    let round = index(b, tile - 1);
    let rounded = binary(b, "add", extent, round, Type::INDEX);
    let tile = index(b, tile);
    Ok(binary(b, "floordiv", rounded, tile, Type::INDEX))
}

/// The `(row, column)` tile of step `t` of a walk over `rows × cols`
/// tiles: groups of [`RASTER_GROUP`] tile rows, each walked column by
/// column (the last group may have fewer rows).
fn raster(b: &mut Builder<'_>, t: ValueId, rows: ValueId, cols: ValueId) -> (ValueId, ValueId) {
    let group_rows = index(b, RASTER_GROUP);
    let span = binary(b, "mul", group_rows, cols, Type::INDEX);
    let group = binary(b, "floordiv", t, span, Type::INDEX);
    let first = binary(b, "mul", group, group_rows, Type::INDEX);
    let left = binary(b, "sub", rows, first, Type::INDEX);
    let height = binary(b, "min", left, group_rows, Type::INDEX);
    let within = binary(b, "rem", t, span, Type::INDEX);
    let down = binary(b, "rem", within, height, Type::INDEX);
    let row = binary(b, "add", first, down, Type::INDEX);
    let col = binary(b, "floordiv", within, height, Type::INDEX);
    (row, col)
}

/// The batch coordinates of an operand whose batch dims `dims` broadcast
/// to the output's `batch`: the output's, or 0 along a stretched dim.
fn operand_batch(b: &mut Builder<'_>, dims: &[DimExpr], batch: &[DimExpr], coords: &[ValueId]) -> Vec<ValueId> {
    let lead = batch.len() - dims.len();
    let one = DimExpr::constant(1);
    dims.iter()
        .enumerate()
        .map(|(j, d)| {
            if *d == one && batch[lead + j] != one {
                index(b, 0)
            } else {
                coords[lead + j]
            }
        })
        .collect()
}
