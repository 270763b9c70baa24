//! The attention template (FlashAttention's forward pass): one block per
//! BM query rows of one batch entry (block x → the query tile, y → the
//! flattened batch). The q tile is copied to shared memory once; the key
//! loop, a `tile.pipeline` of `stages` slots, copies BN keys and values at
//! a time into rings, `stages - 1` steps ahead, and keeps, per query row, the
//! running maximum `m`, the running sum of exponentials `l` and the
//! unnormalized output `acc`:
//!
//! ```text
//! s     = q · kᵀ                     (masked: keys past N, and with
//!                                     `causal` keys after the query's)
//! m'    = max(m, rowmax(s))
//! p     = 2^(s·c - m'·c)              c = scale · log2(e)
//! α     = 2^(m·c - m'·c)
//! l     = l·α + rowsum(p)
//! acc   = acc·α + p · v
//! out   = acc / l                    (0 for a row that sees no key)
//! ```
//!
//! The maxima are taken over the unscaled scores (the same as over the
//! scaled ones, scaled, since scale > 0; a scale ≤ 0 scales the scores
//! first and c is log2(e)), so each score costs one multiply and one
//! `exp2`. Only a block that holds a key past N or across the causal
//! diagonal computes the mask ([`mask_where_needed`]).
//!
//! With `causal`, query `i` sees keys `j ≤ i + N - M` (the queries are the
//! last M of the N positions), and the loop stops after the last key the
//! tile's rows see. Scores, `m`, `l` and `acc` are in `accumulate`
//! precision; `p` is rounded to the operands' type for the second product.

use std::f64::consts::LOG2_E;

use tessera_ir::{Attr, Builder, DimExpr, MemSpace, ScalarType, Type, ValueId};

use super::emit::{
    binary, broadcast, cast_to, compare, end, id, if_else, index, iota, load_tile, mma, number, pipeline, tile_type,
    transpose, view, Frame, Gen, Result, TileEval,
};
use super::{Kernel, Src};
use crate::targets::attention_shared_bytes;

/// Emits the kernel body; returns its shared memory in bytes.
pub(crate) fn lower(g: &Gen, b: &mut Builder<'_>, k: &Kernel) -> Result<i64> {
    let at = k
        .anchor("graph.attention")
        .ok_or("no `graph.attention` in an attention kernel")?;
    let node = &k.nodes[at];
    let [Src::Arg(qi), Src::Arg(ki), Src::Arg(vi)] = node.operands[..] else {
        return Err("the operands of its attention are computed in the kernel".into());
    };
    let dims_of = |i: usize| match &k.args[i] {
        Type::Tensor { dims, elem } => Ok((dims.clone(), *elem)),
        other => Err(format!("an attention operand of type {other}")),
    };
    let ((q_dims, elem), (k_dims, _), (v_dims, _)) = (dims_of(qi)?, dims_of(ki)?, dims_of(vi)?);
    let r = q_dims.len();
    let (m_dim, n_dim) = (q_dims[r - 2].clone(), k_dims[r - 2].clone());
    let constant = |d: &DimExpr| {
        d.as_const()
            .ok_or_else(|| format!("the head dim {d} is not a constant"))
    };
    let (d, dv) = (constant(&q_dims[r - 1])?, constant(&v_dims[r - 1])?);
    let &[bm, bn] = k.tile.as_slice() else {
        return Err("its `tile_shape` is not [BM, BN]".into());
    };
    let acc = match node.attrs.get("accumulate").and_then(Attr::as_type) {
        Some(Type::Scalar(s)) => *s,
        _ => ScalarType::F32,
    };
    let causal = matches!(node.attrs.get("causal"), Some(Attr::Bool(true)));
    let scale = match node.attrs.get("scale") {
        Some(Attr::Float(s)) => *s,
        _ => 1.0 / (d as f64).sqrt(),
    };

    // This block's query rows and batch entry.
    let bx = id(b, "tile.block_id", 0);
    let bm_v = index(b, bm);
    let row0 = binary(b, "mul", bx, bm_v, Type::INDEX);
    let batch = &q_dims[..r - 2];
    let coords = if batch.is_empty() {
        Vec::new()
    } else {
        let by = id(b, "tile.block_id", 1);
        g.unflatten(b, by, batch)?
    };
    let mem = |b: &mut Builder<'_>, m: ValueId| if coords.is_empty() { m } else { view(b, m, &coords) };
    let (q_mem, k_mem, v_mem) = (mem(b, g.inputs[qi]), mem(b, g.inputs[ki]), mem(b, g.inputs[vi]));
    let out_mem = mem(b, g.out);

    let stages = k.stages.max(1);
    let (q_s, k_ring, v_ring) = (
        g.shared_tile(b, bm, d, elem),
        g.shared_ring(b, stages, bn, d, elem),
        g.shared_ring(b, stages, bn, dv, elem),
    );
    let c0 = index(b, 0);
    b.op("tile.async_copy")
        .operands(&[q_s, q_mem, row0, c0])
        .attr("stage", Attr::Int(0))
        .build();
    b.op("tile.wait_async").attr("stage", Attr::Int(0)).build();

    // The running state, in thread-local slots.
    let column = [bm, 1];
    let m_slot = g.tile_slot(b, &column, acc, f64::NEG_INFINITY);
    let s_slot = b
        .op("tile.local")
        .result(Type::memref([bm, bn].map(DimExpr::constant), acc, MemSpace::Local))
        .build_value();
    let l_slot = g.tile_slot(b, &column, acc, 0.0);
    let acc_slot = g.tile_slot(b, &[bm, dv], acc, 0.0);

    // The keys this tile's rows see: all N, or with `causal` up to row
    // row0 + BM - 1's last visible key, (row0 + BM) + N - M.
    let n = g.dim(b, &n_dim)?;
    let m = g.dim(b, &m_dim)?;
    let offset = binary(b, "sub", n, m, Type::INDEX);
    let kv_end = if causal {
        let last = binary(b, "add", row0, bm_v, Type::INDEX);
        let last = binary(b, "add", last, offset, Type::INDEX);
        binary(b, "min", last, n, Type::INDEX)
    } else {
        n
    };
    // The key loop, software-pipelined: the keys and values of the steps
    // `stages - 1` ahead are copied while this step's are used.
    let step = index(b, bn);
    let (fill, consume) = pipeline(b, [c0, kv_end, step], stages);
    {
        let (j, slot) = (fill.k, fill.slot);
        let mut l = g.at(b, fill.block);
        let c0 = index(&mut l, 0);
        for (stage, ring, src) in [(0, k_ring, k_mem), (1, v_ring, v_mem)] {
            let buf = view(&mut l, ring, &[slot]);
            l.op("tile.async_copy")
                .operands(&[buf, src, j, c0])
                .attr("stage", Attr::Int(stage))
                .build();
        }
        end(&mut l);
    }
    {
        let (j0, slot) = (consume.k, consume.slot);
        let mut l = g.at(b, consume.block);
        let c0 = index(&mut l, 0);
        let k_s = view(&mut l, k_ring, &[slot]);
        let v_s = view(&mut l, v_ring, &[slot]);

        // Scores, unscaled when the scale is positive (the row maxima are
        // then those of the scaled scores, scaled), masked in the blocks
        // that need it.
        let scores = tile_type(&[bm, bn], acc);
        let k_tile = load_tile(&mut l, k_s, c0, &tile_type(&[bn, d], elem));
        let kt = transpose(&mut l, k_tile, tile_type(&[d, bn], elem));
        let zero = number(&mut l, 0.0, scores.clone());
        let mut s = mma(&mut l, q_s, kt, zero, &scores);
        if scale <= 0.0 {
            let scale_v = number(&mut l, scale, scores.clone());
            s = binary(&mut l, "mul", s, scale_v, scores.clone());
        }
        let ragged = g.ragged(&n_dim, bn);
        if ragged || causal {
            s = mask_where_needed(
                &mut l,
                s,
                s_slot,
                ([bm, bn], acc),
                [row0, j0],
                n,
                offset,
                ragged,
                causal,
            );
        }

        // The online softmax, in base 2: with c = scale·log2(e) (log2(e)
        // when the scores are already scaled), p = 2^(s·c - m·c).
        let c = LOG2_E * if scale > 0.0 { scale } else { 1.0 };
        let col = tile_type(&column, acc);
        let m_old = load_tile(&mut l, m_slot, c0, &col);
        let row_max = row_reduce(g, &mut l, s, "max", &col);
        let m_new = binary(&mut l, "max", m_old, row_max, col.clone());
        // A row with no visible key so far keeps m = -inf; subtracting 0
        // instead keeps 2^(-inf - m) at 0 rather than NaN.
        let m_safe = replace_equal(&mut l, m_new, f64::NEG_INFINITY, 0.0, &col);
        let c_col = number(&mut l, c, col.clone());
        let m_scaled = binary(&mut l, "mul", m_safe, c_col, col.clone());
        let c_scores = number(&mut l, c, scores.clone());
        let s_scaled = binary(&mut l, "mul", s, c_scores, scores.clone());
        let shifted = broadcast(&mut l, m_scaled, &[bm, bn]);
        let p = binary(&mut l, "sub", s_scaled, shifted, scores.clone());
        let p = g.exp2(&mut l, p, scores.clone());
        let m_old_scaled = binary(&mut l, "mul", m_old, c_col, col.clone());
        let alpha = binary(&mut l, "sub", m_old_scaled, m_scaled, col.clone());
        let alpha = g.exp2(&mut l, alpha, col.clone());
        let l_old = load_tile(&mut l, l_slot, c0, &col);
        let l_scaled = binary(&mut l, "mul", l_old, alpha, col.clone());
        let row_sum = row_reduce(g, &mut l, p, "sum", &col);
        let l_new = binary(&mut l, "add", l_scaled, row_sum, col.clone());
        let out_tile = tile_type(&[bm, dv], acc);
        let acc_old = load_tile(&mut l, acc_slot, c0, &out_tile);
        let alpha_rows = broadcast(&mut l, alpha, &[bm, dv]);
        let acc_scaled = binary(&mut l, "mul", acc_old, alpha_rows, out_tile.clone());
        let p = cast_to(&mut l, p, elem);
        let acc_new = mma(&mut l, p, v_s, acc_scaled, &out_tile);
        for (value, slot) in [(m_new, m_slot), (l_new, l_slot), (acc_new, acc_slot)] {
            l.op("tile.store_tile").operands(&[value, slot, c0, c0]).build();
        }
        end(&mut l);
    }

    // out = acc · (1 / l), 0 where a row saw no key: one division per
    // row, not per element.
    let col = tile_type(&column, acc);
    let out_tile = tile_type(&[bm, dv], acc);
    let total = load_tile(b, l_slot, c0, &col);
    let total = replace_equal(b, total, 0.0, 1.0, &col);
    let one = number(b, 1.0, col.clone());
    let inverse = binary(b, "div", one, total, col);
    let sums = load_tile(b, acc_slot, c0, &out_tile);
    let inverse = broadcast(b, inverse, &[bm, dv]);
    let value = binary(b, "mul", sums, inverse, out_tile);

    // The epilogue, on the output tile.
    let node_elem = node.ty.elem().unwrap_or(acc);
    let value = cast_to(b, value, node_elem);
    let out_dims = node.ty.dims().ok_or("an attention without a tensor result")?.to_vec();
    let mut eval = TileEval {
        k,
        frame: Frame {
            dims: out_dims,
            offsets: coords.iter().copied().chain([row0, c0]).collect(),
            extents: batch.iter().map(|_| 1).chain([bm, dv]).collect(),
            rank: 2,
        },
        known: [(Src::Node(at), (value, vec![bm, dv]))].into(),
    };
    let (root, _) = eval.eval(g, b, k.root)?;
    let root = cast_to(b, root, k.result.elem().unwrap_or(node_elem));
    b.op("tile.store_tile").operands(&[root, out_mem, row0, c0]).build();
    Ok(attention_shared_bytes(&g.target, [bm, bn], d, dv, stages, elem))
}

/// The scores `s` of the `[BM, BN]` tile at query `row0`, key `j0` with
/// those that do not count at -inf: keys at N or past it (when N is not a
/// multiple of BN) and, with `causal`, keys `j > i + offset` (offset =
/// N - M). Only a block that holds such keys computes the mask: the last
/// one of a ragged N (`j0 + BN - 1 >= N`), and those that cross the causal
/// diagonal (`j0 + BN - 1 > row0 + offset`, a key the first row does not
/// see). The scores go through the whole-tile local `slot` across the
/// branch.
#[allow(clippy::too_many_arguments)]
fn mask_where_needed(
    b: &mut Builder<'_>,
    s: ValueId,
    slot: ValueId,
    (shape, acc): ([i64; 2], ScalarType),
    [row0, j0]: [ValueId; 2],
    n: ValueId,
    offset: ValueId,
    ragged: bool,
    causal: bool,
) -> ValueId {
    let scores = tile_type(&shape, acc);
    let c0 = index(b, 0);
    b.op("tile.store_tile").operands(&[s, slot, c0, c0]).build();
    let width = index(b, shape[1] - 1);
    let last_key = binary(b, "add", j0, width, Type::INDEX);
    let past_n = ragged.then(|| compare(b, last_key, n, "ge"));
    let crosses = causal.then(|| {
        let last_seen = binary(b, "add", row0, offset, Type::INDEX);
        compare(b, last_key, last_seen, "gt")
    });
    let needed = match (past_n, crosses) {
        (Some(x), Some(y)) => binary(b, "or", x, y, Type::I1),
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => return s,
    };
    let (then, other) = if_else(b, needed);
    {
        let mut t = Builder::at_end(b, then);
        let c0 = index(&mut t, 0);
        let s = load_tile(&mut t, slot, c0, &scores);
        let positions = tile_type(&shape, ScalarType::Index);
        let flags = tile_type(&shape, ScalarType::I1);
        let from = |b: &mut Builder<'_>, dim: i64, start: ValueId| {
            let lanes = iota(b, &shape, dim);
            binary(b, "add", lanes, start, positions.clone())
        };
        let keys = from(&mut t, 1, j0);
        let mut valid = ragged.then(|| compare(&mut t, keys, n, "lt"));
        if causal {
            let rows = from(&mut t, 0, row0);
            let last = binary(&mut t, "add", rows, offset, positions.clone());
            let seen = compare(&mut t, keys, last, "le");
            valid = Some(match valid {
                Some(v) => binary(&mut t, "and", v, seen, flags.clone()),
                None => seen,
            });
        }
        if let Some(valid) = valid {
            let minus_inf = number(&mut t, f64::NEG_INFINITY, scores.clone());
            let masked = t
                .op("tile.select")
                .operands(&[valid, s, minus_inf])
                .result(scores.clone())
                .build_value();
            t.op("tile.store_tile").operands(&[masked, slot, c0, c0]).build();
        }
        end(&mut t);
    }
    end(&mut Builder::at_end(b, other));
    load_tile(b, slot, c0, &scores)
}

/// `x` with `by` where it equals `value` (a tile of type `ty`).
fn replace_equal(b: &mut Builder<'_>, x: ValueId, value: f64, by: f64, ty: &Type) -> ValueId {
    let value = number(b, value, ty.clone());
    let equal = compare(b, x, value, "eq");
    let by = number(b, by, ty.clone());
    b.op("tile.select")
        .operands(&[equal, by, x])
        .result(ty.clone())
        .build_value()
}

/// `x` reduced along its last axis to a `[BM, 1]` column, in the kernel's
/// reduction order.
fn row_reduce(g: &Gen, b: &mut Builder<'_>, x: ValueId, kind: &str, col: &Type) -> ValueId {
    b.op("tile.reduce")
        .operand(x)
        .attr("kind", kind)
        .attr("axis", Attr::Int(1))
        .attr("order", g.order)
        .result(col.clone())
        .build_value()
}
