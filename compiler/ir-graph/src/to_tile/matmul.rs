//! The matmul template: one block per BM×BN tile of the output (block x
//! → tile row, y → tile column, z → the flattened batch), a K loop (a
//! `tile.pipeline` of `stages` slots) that copies A and B tiles into rings
//! in shared memory asynchronously, `stages - 1` steps ahead of the
//! `tile.mma` into an accumulator, then the epilogue on the accumulator
//! tile and one `tile.store_tile`.

use std::collections::HashMap;

use tessera_ir::{Attr, Builder, DimExpr, MemSpace, ScalarType, Type, ValueId};

use super::emit::{
    binary, cast_to, end, id, index, load_tile, mma, number, pipeline, tile_type, transpose, view, Frame, Gen, Result,
    TileEval,
};
use super::{Kernel, Src};
use crate::targets::matmul_shared_bytes;

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

    // Which output tile this block computes.
    let bx = id(b, "tile.block_id", 0);
    let by = id(b, "tile.block_id", 1);

    let bm_v = index(b, bm);
    let bn_v = index(b, bn);
    let row0 = binary(b, "mul", bx, bm_v, Type::INDEX);
    let col0 = binary(b, "mul", by, bn_v, Type::INDEX);
    let batch = &out[..out.len() - 2];
    let batch_coords = if batch.is_empty() {
        Vec::new()
    } else {
        let bz = id(b, "tile.block_id", 2);
        g.unflatten(b, bz, batch)?
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
    let acc_tile = tile_type(&[bm, bn], acc);
    let acc_slot = b
        .op("tile.local")
        .result(Type::memref([bm.into(), bn.into()], acc, MemSpace::Local))
        .build_value();
    let zero = number(b, 0.0, acc_tile.clone());
    let c0 = index(b, 0);
    b.op("tile.store_tile").operands(&[zero, acc_slot, c0, c0]).build();

    // A ring of A tiles and one of B tiles, a slot per pipeline stage.
    let (b_rows, b_cols) = if transposed { (bn, bk) } else { (bk, bn) };
    let a_ring = g.shared_ring(b, stages, bm, bk, elem);
    let b_ring = g.shared_ring(b, stages, b_rows, b_cols, b_elem);

    // The K loop, software-pipelined: the copies of the tiles `stages - 1`
    // steps ahead overlap the mma of this step.
    let k_end = g.dim(b, &k_dim)?;
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
        let current = load_tile(&mut l, acc_slot, c0, &acc_tile);
        let b_operand = if transposed {
            let tile = load_tile(&mut l, b_buf, c0, &tile_type(&[bn, bk], b_elem));
            transpose(&mut l, tile, tile_type(&[bk, bn], b_elem))
        } else {
            b_buf
        };
        let next = mma(&mut l, a_buf, b_operand, current, &acc_tile);
        l.op("tile.store_tile").operands(&[next, acc_slot, c0, c0]).build();
        end(&mut l);
    }

    // The epilogue, on the accumulator tile.
    let result = load_tile(b, acc_slot, c0, &acc_tile);
    let mm_elem = node.ty.elem().unwrap_or(acc);
    let value = cast_to(b, result, mm_elem);
    let offsets: Vec<ValueId> = batch_coords.iter().copied().chain([row0, col0]).collect();
    let extents: Vec<i64> = batch.iter().map(|_| 1).chain([bm, bn]).collect();
    let mut eval = TileEval {
        k,
        frame: Frame {
            dims: out.clone(),
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
    Ok(matmul_shared_bytes(&g.target, [bm, bn, bk], stages, elem))
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
