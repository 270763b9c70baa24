//! Tile ops that move elements between threads: each reads its operand
//! through a [`View`] (the tile staged row-major in shared memory, or its
//! global scratch) between barriers.

use tessera_ir::{Attr, OpId, ScalarType, Type};

use crate::emit::{elem_bytes, llvm_ty, Ext, FnEmitter, Storage, Tile, Val};
use crate::CodegenError;

/// A tile readable by every thread of the block: element `e` (row-major)
/// at `base[e]`.
#[derive(Clone)]
pub(crate) struct View {
    pub base: String,
    pub ptr_ty: String,
    pub elem: ScalarType,
    pub dims: Vec<Ext>,
    /// Elements of padding after each row.
    pub pad: i64,
}

impl View {
    /// Pointer to element `(row, col)` of a 2-D view.
    pub fn at(&self, f: &mut FnEmitter, row: &str, col: &str) -> String {
        let cols = match self.dims.last() {
            Some(Ext::Const(c)) => (c + self.pad).to_string(),
            Some(Ext::Dyn(v)) => v.clone(),
            None => "1".into(),
        };
        let r = f.val(format!("mul i64 {row}, {cols}"));
        let e = f.val(format!("add i64 {r}, {col}"));
        self.linear(f, &e)
    }

    pub fn linear(&self, f: &mut FnEmitter, e: &str) -> String {
        f.val(format!(
            "getelementptr {}, {} {}, i64 {e}",
            llvm_ty(self.elem),
            self.ptr_ty,
            self.base
        ))
    }

    pub fn load(&self, f: &mut FnEmitter, ptr: &str) -> String {
        f.val(format!("load {}, {} {ptr}", llvm_ty(self.elem), self.ptr_ty))
    }
}

/// Makes `tile` readable by the whole block, in the staging area at byte
/// `offset` when it is thread-private. Starts with a barrier (earlier
/// readers of the staging area are done) and ends with one (the writes are
/// visible).
pub(crate) fn stage(f: &mut FnEmitter, tile: &Tile, offset: i64) -> View {
    f.barrier();
    let view = match &tile.storage {
        Storage::Scratch { base } => View {
            base: base.clone(),
            ptr_ty: f.info().global_ptr(),
            elem: tile.elem,
            dims: tile.dims.clone(),
            pad: 0,
        },
        Storage::Private { .. } => {
            let bytes = tile.count.as_const().unwrap_or(0) * elem_bytes(tile.elem);
            // Shared memory when it fits beside the kernel's allocations,
            // else the block's global scratch.
            let (at, ptr_ty) = if f.shared_used() + offset + bytes <= f.info().shared_limit as i64 {
                let base = f.staging(offset + bytes);
                let sp = f.info().shared_ptr();
                (f.val(format!("getelementptr i8, {sp} {base}, i64 {offset}")), sp)
            } else {
                (f.scratch(tessera_ir::DimExpr::constant(bytes)), f.info().global_ptr())
            };
            let view = View {
                base: at,
                ptr_ty,
                elem: tile.elem,
                dims: tile.dims.clone(),
                pad: 0,
            };
            f.for_own(tile, |f, pos| {
                let v = f.load_slot(tile, pos);
                let at = view.linear(f, &pos.e);
                f.line(format!("store {} {v}, {} {at}", llvm_ty(tile.elem), view.ptr_ty));
            });
            view
        }
    };
    f.barrier();
    view
}

/// Bytes a thread-private tile takes in the staging area (0 for scratch).
pub(crate) fn staged_bytes(tile: &Tile) -> i64 {
    match tile.storage {
        Storage::Private { .. } => (tile.count.as_const().unwrap_or(0) * elem_bytes(tile.elem) + 127) / 128 * 128,
        Storage::Scratch { .. } => 0,
    }
}

fn result_tile(f: &mut FnEmitter, op: OpId) -> Result<Tile, CodegenError> {
    let ty = f.result_type(op)?;
    let Type::Tensor { dims, elem } = &ty else {
        return Err(f.err(op, "the op gives a tile"));
    };
    f.new_tile(dims, *elem, op)
}

pub(crate) fn transpose(f: &mut FnEmitter, op: OpId) -> Result<(), CodegenError> {
    let src = f.tile(op, 0)?;
    let perm: Vec<usize> = f
        .m()
        .attr(op, "perm")
        .and_then(Attr::as_ints)
        .unwrap_or_else(|| (0..src.dims.len() as i64).rev().collect())
        .into_iter()
        .map(|p| p.max(0) as usize)
        .collect();
    let out = result_tile(f, op)?;
    let view = stage(f, &src, 0);
    let (odims, sdims) = (out.dims.clone(), src.dims.clone());
    f.for_own(&out, |f, pos| {
        let idx = f.unravel(&pos.e, &odims);
        let mut sidx = vec!["0".to_string(); sdims.len()];
        for (k, &p) in perm.iter().enumerate() {
            if p < sidx.len() && k < idx.len() {
                sidx[p] = idx[k].clone();
            }
        }
        let e = f.ravel(&sidx, &sdims);
        let at = view.linear(f, &e);
        let v = view.load(f, &at);
        f.store_slot(&out, pos, &v);
    });
    f.set(op, Val::Tile(out));
    Ok(())
}

pub(crate) fn broadcast(f: &mut FnEmitter, op: OpId) -> Result<(), CodegenError> {
    let out = result_tile(f, op)?;
    match f.operand(op, 0)? {
        Val::Scalar(s, v) => {
            let v = f.convert(&v, s, out.elem);
            f.for_own(&out, |f, pos| f.store_slot(&out, pos, &v));
        }
        Val::Tile(src) => {
            let view = stage(f, &src, 0);
            let (odims, sdims) = (out.dims.clone(), src.dims.clone());
            let lead = odims.len().saturating_sub(sdims.len());
            let (se, oe) = (src.elem, out.elem);
            f.for_own(&out, |f, pos| {
                let idx = f.unravel(&pos.e, &odims);
                let sidx: Vec<String> = sdims
                    .iter()
                    .enumerate()
                    .map(|(k, d)| match d {
                        Ext::Const(1) => "0".to_string(),
                        _ => idx[k + lead].clone(),
                    })
                    .collect();
                let e = f.ravel(&sidx, &sdims);
                let at = view.linear(f, &e);
                let v = view.load(f, &at);
                let v = f.convert(&v, se, oe);
                f.store_slot(&out, pos, &v);
            });
        }
        _ => return Err(f.err(op, "`tile.broadcast` takes a scalar or a tile")),
    }
    f.set(op, Val::Tile(out));
    Ok(())
}

/// Combines `count` values `read(j)` in a fixed pairwise tree (constant
/// `count`) or in index order (symbolic `count`) — the same order on every
/// target. Values are of type `acc`.
///
/// The tree combines `(j, j + s)` for `j` a multiple of `2s`, `s = 1, 2,
/// 4, …`, while `j + s < count`. Its subtrees over aligned blocks of
/// [`TREE_CHUNK`] values are complete, so a long row is reduced block by
/// block and the blocks' results by the same tree: the same operations in
/// the same order, with a block's worth of values live instead of a row's.
pub(crate) fn tree_reduce(
    f: &mut FnEmitter,
    count: &Ext,
    acc: ScalarType,
    mut read: impl FnMut(&mut FnEmitter, &str) -> String,
    combine: &dyn Fn(&mut FnEmitter, &str, &str) -> String,
) -> String {
    let t = llvm_ty(acc);
    match count {
        Ext::Const(n) if *n > TREE_CHUNK => {
            let (full, rest) = (n / TREE_CHUNK, n % TREE_CHUNK);
            let blocks = full + i64::from(rest > 0);
            let parts = f.alloca(&format!("[{blocks} x {t}]"));
            let mut block = |f: &mut FnEmitter, first: &str, len: i64, at: &str| {
                let v = pairwise(
                    f,
                    len,
                    acc,
                    &mut |f, j| {
                        let e = f.val(format!("add i64 {first}, {j}"));
                        read(f, &e)
                    },
                    combine,
                );
                let slot = f.val(format!("getelementptr [{blocks} x {t}], ptr {parts}, i64 0, i64 {at}"));
                f.line(format!("store {t} {v}, ptr {slot}"));
            };
            f.counted_loop(&full.to_string(), false, |f, b| {
                let first = f.val(format!("mul i64 {b}, {TREE_CHUNK}"));
                block(f, &first, TREE_CHUNK, b);
            });
            if rest > 0 {
                block(f, &(full * TREE_CHUNK).to_string(), rest, &full.to_string());
            }
            pairwise(
                f,
                blocks,
                acc,
                &mut |f, j| {
                    let slot = f.val(format!("getelementptr [{blocks} x {t}], ptr {parts}, i64 0, i64 {j}"));
                    f.val(format!("load {t}, ptr {slot}"))
                },
                combine,
            )
        }
        Ext::Const(n) => pairwise(f, *n, acc, &mut read, combine),
        Ext::Dyn(n) => {
            let cell = f.alloca(t);
            let first = read(f, "0");
            f.line(format!("store {t} {first}, ptr {cell}"));
            let rest = f.val(format!("sub i64 {n}, 1"));
            f.counted_loop(&rest, false, |f, j| {
                let j1 = f.val(format!("add i64 {j}, 1"));
                let v = read(f, &j1);
                let a = f.val(format!("load {t}, ptr {cell}"));
                let z = combine(f, &a, &v);
                f.line(format!("store {t} {z}, ptr {cell}"));
            });
            f.val(format!("load {t}, ptr {cell}"))
        }
    }
}

/// The values a reduction tree holds at once: a power of two.
const TREE_CHUNK: i64 = 64;

/// The pairwise tree of [`tree_reduce`] over `n` values in a per-thread
/// array.
fn pairwise(
    f: &mut FnEmitter,
    n: i64,
    acc: ScalarType,
    read: &mut dyn FnMut(&mut FnEmitter, &str) -> String,
    combine: &dyn Fn(&mut FnEmitter, &str, &str) -> String,
) -> String {
    let t = llvm_ty(acc);
    let n = n.max(1);
    let arr = f.alloca(&format!("[{n} x {t}]"));
    f.counted_loop(&n.to_string(), true, |f, j| {
        let v = read(f, j);
        let at = f.val(format!("getelementptr [{n} x {t}], ptr {arr}, i64 0, i64 {j}"));
        f.line(format!("store {t} {v}, ptr {at}"));
    });
    let mut stride = 1;
    while stride < n {
        let pairs = (n + 2 * stride - 1) / (2 * stride);
        f.counted_loop(&pairs.to_string(), true, |f, p| {
            let j = f.val(format!("mul i64 {p}, {}", 2 * stride));
            let k = f.val(format!("add i64 {j}, {stride}"));
            let inside = f.val(format!("icmp slt i64 {k}, {n}"));
            f.when(&inside, |f| {
                let aj = f.val(format!("getelementptr [{n} x {t}], ptr {arr}, i64 0, i64 {j}"));
                let ak = f.val(format!("getelementptr [{n} x {t}], ptr {arr}, i64 0, i64 {k}"));
                let x = f.val(format!("load {t}, ptr {aj}"));
                let y = f.val(format!("load {t}, ptr {ak}"));
                let z = combine(f, &x, &y);
                f.line(format!("store {t} {z}, ptr {aj}"));
            });
        });
        stride *= 2;
    }
    let at = f.val(format!("getelementptr [{n} x {t}], ptr {arr}, i64 0, i64 0"));
    f.val(format!("load {t}, ptr {at}"))
}

fn combiner(kind: &str, s: ScalarType) -> impl Fn(&mut FnEmitter, &str, &str) -> String {
    let f_name = match kind {
        "sum" => "add",
        "prod" => "mul",
        "max" => "max",
        _ => "min",
    };
    move |f: &mut FnEmitter, a: &str, b: &str| f.binary(f_name, s, a, b).unwrap_or_else(|_| a.to_string())
}

pub(crate) fn reduce(f: &mut FnEmitter, op: OpId) -> Result<(), CodegenError> {
    let src = f.tile(op, 0)?;
    let rank = src.dims.len() as i64;
    let axis = f.m().attr(op, "axis").and_then(Attr::as_int).unwrap_or(-1);
    let axis = if axis < 0 { axis + rank } else { axis }.clamp(0, rank - 1) as usize;
    let kind = f
        .m()
        .attr(op, "kind")
        .and_then(Attr::as_str)
        .unwrap_or("sum")
        .to_string();
    let ty = f.result_type(op)?;
    let out_elem = match &ty {
        Type::Scalar(s) => *s,
        other => other.elem().unwrap_or(src.elem),
    };
    let acc = f
        .m()
        .attr(op, "accumulate")
        .and_then(Attr::as_type)
        .and_then(Type::elem)
        .unwrap_or(src.elem);
    let view = stage(f, &src, 0);
    let sdims = src.dims.clone();
    let len = sdims[axis].clone();
    let combine = combiner(&kind, acc);
    let reduce_at = |f: &mut FnEmitter, outer: &[String]| -> String {
        let outer = outer.to_vec();
        tree_reduce(
            f,
            &len,
            acc,
            |f, j| {
                let mut idx = outer.clone();
                idx.insert(axis, j.to_string());
                let e = f.ravel(&idx, &sdims);
                let at = view.linear(f, &e);
                let v = view.load(f, &at);
                f.convert(&v, src.elem, acc)
            },
            &combine,
        )
    };
    match &ty {
        Type::Scalar(_) => {
            let r = reduce_at(f, &[]);
            let r = f.convert(&r, acc, out_elem);
            f.set(op, Val::Scalar(out_elem, r));
        }
        _ => {
            let out = result_tile(f, op)?;
            let odims = out.dims.clone();
            let keep = odims.len() == sdims.len();
            f.for_own(&out, |f, pos| {
                let mut idx = f.unravel(&pos.e, &odims);
                if keep {
                    idx.remove(axis);
                }
                let r = reduce_at(f, &idx);
                let r = f.convert(&r, acc, out_elem);
                f.store_slot(&out, pos, &r);
            });
            f.set(op, Val::Tile(out));
        }
    }
    Ok(())
}

/// Softmax along the last axis: each row's max and sum of exponentials
/// (in `accumulate` precision, tree order) computed by one thread, shared,
/// then every element `exp(x - max) / sum`.
pub(crate) fn softmax(f: &mut FnEmitter, op: OpId) -> Result<(), CodegenError> {
    let src = f.tile(op, 0)?;
    let rank = src.dims.len() as i64;
    let axis = f.m().attr(op, "axis").and_then(Attr::as_int).unwrap_or(-1);
    if axis != -1 && axis != rank - 1 {
        return Err(f.err(op, "softmax is generated along the last axis only"));
    }
    let acc = f
        .m()
        .attr(op, "accumulate")
        .and_then(Attr::as_type)
        .and_then(Type::elem)
        .unwrap_or(ScalarType::F32);
    let Some(rows_count) = src.dims[..src.dims.len() - 1]
        .iter()
        .map(|d| match d {
            Ext::Const(c) => Some(*c),
            _ => None,
        })
        .product::<Option<i64>>()
    else {
        return Err(f.err(op, "softmax needs a constant number of rows"));
    };
    let Ext::Const(cols) = src.dims[src.dims.len() - 1].clone() else {
        return Err(f.err(op, "softmax needs a constant row length"));
    };
    let out = result_tile(f, op)?;
    let ab = elem_bytes(acc);
    let view = stage(f, &src, 0);
    // The row statistics follow the staged tile when it is in shared memory.
    let stats_at = if view.ptr_ty == f.info().shared_ptr() {
        staged_bytes(&src)
    } else {
        0
    };
    let stats_base = f.staging(stats_at + rows_count * 2 * ab);
    let sp = f.info().shared_ptr();
    let stats = f.val(format!("getelementptr i8, {sp} {stats_base}, i64 {stats_at}"));
    let t = llvm_ty(acc);
    let threads = f.threads;
    let per = (rows_count + threads - 1) / threads;
    let se = src.elem;
    let max_fn = combiner("max", acc);
    let add_fn = combiner("sum", acc);
    f.counted_loop(&per.to_string(), false, |f, i| {
        let scaled = f.val(format!("mul i64 {i}, {threads}"));
        let row = f.val(format!("add i64 {scaled}, {}", f.tid));
        let inside = f.val(format!("icmp slt i64 {row}, {rows_count}"));
        f.when(&inside, |f| {
            let read = |f: &mut FnEmitter, j: &str| {
                let at = view.at(f, &row, j);
                let v = view.load(f, &at);
                f.convert(&v, se, acc)
            };
            let m = tree_reduce(f, &Ext::Const(cols), acc, read, &max_fn);
            let s = tree_reduce(
                f,
                &Ext::Const(cols),
                acc,
                |f, j| {
                    let at = view.at(f, &row, j);
                    let v = view.load(f, &at);
                    let v = f.convert(&v, se, acc);
                    let d = f.val(format!("fsub {t} {v}, {m}"));
                    f.math("exp", acc, &d).unwrap_or(d)
                },
                &add_fn,
            );
            let r2 = f.val(format!("mul i64 {row}, 2"));
            let pm = f.val(format!("getelementptr {t}, {sp} {stats}, i64 {r2}"));
            f.line(format!("store {t} {m}, {sp} {pm}"));
            let ps = f.val(format!("getelementptr {t}, {sp} {pm}, i64 1"));
            f.line(format!("store {t} {s}, {sp} {ps}"));
        });
    });
    f.barrier();
    let oe = out.elem;
    let odims = out.dims.clone();
    // The elements are read back from the staged copy, so `src` is dead
    // once staged (and may be in another layout than `out`). Where the
    // types agree, each result goes back into the slot its element came
    // from (this thread's own, read by no other thread after the barrier)
    // and is loaded into `out` afterwards: every element's computation
    // then ends in a store, and the backend does not carry 64 unfinished
    // ones down to where `out` is used.
    let in_place = se == oe;
    f.for_own(&out, |f, pos| {
        let (row, _) = f.row_col(&pos.e, &odims[odims.len() - 1]);
        let at = view.linear(f, &pos.e);
        let v = view.load(f, &at);
        let v = f.convert(&v, se, acc);
        let r2 = f.val(format!("mul i64 {row}, 2"));
        let pm = f.val(format!("getelementptr {t}, {sp} {stats}, i64 {r2}"));
        let m = f.val(format!("load {t}, {sp} {pm}"));
        let ps = f.val(format!("getelementptr {t}, {sp} {pm}, i64 1"));
        let s = f.val(format!("load {t}, {sp} {ps}"));
        let d = f.val(format!("fsub {t} {v}, {m}"));
        let e = f.math("exp", acc, &d).unwrap_or(d);
        let q = f.val(format!("fdiv {t} {e}, {s}"));
        let q = f.convert(&q, acc, oe);
        if in_place {
            f.line(format!("store {} {q}, {} {at}", llvm_ty(oe), view.ptr_ty));
        } else {
            f.store_slot(&out, pos, &q);
        }
    });
    if in_place {
        f.for_own(&out, |f, pos| {
            let at = view.linear(f, &pos.e);
            let v = view.load(f, &at);
            f.store_slot(&out, pos, &v);
        });
    }
    f.set(op, Val::Tile(out));
    Ok(())
}

#[cfg(test)]
mod tests {
    /// Row sums of long rows, reduced block by block, give the bits of the
    /// one pairwise tree over the row (`exchange::tree_reduce`).
    #[test]
    fn long_reductions_keep_the_pairwise_tree() {
        let text = r#"module @m attributes {layer = "target", target = "cpu"} {
  func.func @k(%x: memref<4x200xf32, global>, %o: memref<4xf32, global>) -> () attributes {block = [128], kind = "kernel", layer = "target"} {
    %z = tile.const() {value = 0} : () -> index
    %t = tile.load_tile(%x, %z, %z) : (memref<4x200xf32, global>, index, index) -> tensor<4x200xf32>
    %s = tile.reduce(%t) {axis = 1, kind = "sum", order = "tree"} : (tensor<4x200xf32>) -> tensor<4xf32>
    tile.store_tile(%s, %o, %z) : (tensor<4xf32>, memref<4xf32, global>, index) -> ()
    tile.return() : () -> ()
  }
}
"#;
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let x: Vec<f32> = (0..800)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 1000.0
            })
            .collect();
        let mut buffers = vec![x.clone(), vec![f32::NAN; 4]];
        crate::emit::tests::run(text, 128, &mut buffers);
        for r in 0..4 {
            let mut v = x[r * 200..r * 200 + 200].to_vec();
            let mut stride = 1;
            while stride < v.len() {
                for j in (0..v.len()).step_by(2 * stride) {
                    if j + stride < v.len() {
                        v[j] += v[j + stride];
                    }
                }
                stride *= 2;
            }
            assert_eq!(buffers[1][r].to_bits(), v[0].to_bits(), "row {r}");
        }
    }
}
