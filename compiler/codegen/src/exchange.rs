//! Tile ops that move elements between threads: each reads its operand
//! through a [`View`] (the tile staged row-major in shared memory, or its
//! global scratch) between barriers — except a row reduction of a
//! fragment tile into its rows' column and a broadcast of that column back
//! ([`Layout::Rows`]), which stay in registers.

use tessera_ir::{Attr, DimExpr, OpId, ScalarType, Type};

use crate::emit::{elem_bytes, float_lit, llvm_ty, Ext, FnEmitter, Pos, Storage, Tile, Val};
use crate::mma::layout::{Frag, Layout};
use crate::swizzle::Swizzle;
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
    /// The swizzle of a shared buffer viewed in place.
    pub swizzle: Option<Swizzle>,
}

impl View {
    /// Pointer to element `(row, col)` of a 2-D view.
    pub fn at(&self, f: &mut FnEmitter, row: &str, col: &str) -> String {
        if let Some(s) = self.swizzle {
            let b = f.val(format!("mul i64 {col}, {}", elem_bytes(self.elem)));
            let at = s.emit_offset(f, row, &b);
            return f.val(format!("getelementptr i8, {} {}, i64 {at}", self.ptr_ty, self.base));
        }
        let cols = self.row_len();
        let r = f.val(format!("mul i64 {row}, {cols}"));
        let e = f.val(format!("add i64 {r}, {col}"));
        self.linear(f, &e)
    }

    /// Elements from one row's start to the next's.
    fn row_len(&self) -> String {
        match self.dims.last() {
            Some(Ext::Const(c)) => (c + self.pad).to_string(),
            Some(Ext::Dyn(v)) => v.clone(),
            None => "1".into(),
        }
    }

    /// Pointer to element `e` in row-major order (rows padded).
    pub fn linear(&self, f: &mut FnEmitter, e: &str) -> String {
        if self.swizzle.is_some() {
            let cols = self.row_len();
            let row = f.val(format!("udiv i64 {e}, {cols}"));
            let col = f.val(format!("urem i64 {e}, {cols}"));
            return self.at(f, &row, &col);
        }
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

    /// Loads each of this thread's elements of `out` from the staged
    /// element of the same row-major index.
    fn read_into(&self, f: &mut FnEmitter, out: &Tile) {
        f.for_own(out, |f, pos| {
            let at = self.linear(f, &pos.e);
            let v = self.load(f, &at);
            f.store_slot(out, pos, &v);
        });
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
            swizzle: None,
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
                swizzle: None,
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
    let moved: Vec<usize> = perm
        .iter()
        .copied()
        .filter(|&p| !matches!(src.dims.get(p), Some(Ext::Const(1))))
        .collect();
    if moved.windows(2).all(|w| w[0] < w[1]) && same_elements(&src, &out) {
        // Only unit dims move (`[1, n]` to `[n, 1]`): the elements keep
        // their order, and each stays where it is.
        f.for_own(&out, |f, pos| {
            let v = f.load_slot(&src, pos);
            f.store_slot(&out, pos, &v);
        });
        f.set(op, Val::Tile(out));
        return Ok(());
    }
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

/// `tile.reshape`: element `e` of the result is element `e` of the
/// operand (row-major order is kept), so in one thread-private layout
/// each stays in its slot; otherwise the operand is staged and read back.
pub(crate) fn reshape(f: &mut FnEmitter, op: OpId) -> Result<(), CodegenError> {
    let src = f.tile(op, 0)?;
    let out = result_tile(f, op)?;
    if same_elements(&src, &out) {
        f.for_own(&out, |f, pos| {
            let v = f.load_slot(&src, pos);
            f.store_slot(&out, pos, &v);
        });
    } else {
        stage(f, &src, 0).read_into(f, &out);
    }
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
            if let Some(frag) = column_into_fragments(&src, &out) {
                // Each slot takes its row's value, which the thread holds.
                for i in 0..frag.per_thread() {
                    let from = slot_pos(frag.row_slot(i));
                    let v = f.load_slot(&src, &from);
                    let v = f.convert(&v, src.elem, out.elem);
                    f.store_slot(&out, &slot_pos(i), &v);
                }
                f.set(op, Val::Tile(out));
                return Ok(());
            }
            if same_elements(&src, &out) {
                // Only unit dims added: each element stays where it is.
                f.for_own(&out, |f, pos| {
                    let v = f.load_slot(&src, pos);
                    let v = f.convert(&v, src.elem, out.elem);
                    f.store_slot(&out, pos, &v);
                });
                f.set(op, Val::Tile(out));
                return Ok(());
            }
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

/// Whether `src` and `out` hold each element in the same slot of the same
/// thread: both thread-private in one layout, blocked or in runs, with the
/// same element count (so a broadcast into `out` only adds unit dims, and
/// element `e` is in the same slot of both).
fn same_elements(src: &Tile, out: &Tile) -> bool {
    matches!(
        (&src.storage, &out.storage),
        (Storage::Private { .. }, Storage::Private { .. })
    ) && src.layout == out.layout
        && matches!(src.layout, Layout::Blocked | Layout::Strips(_))
        && src.count.as_const().is_some()
        && src.count.as_const() == out.count.as_const()
}

/// The fragments `out` is in, when `src` is the column of their rows
/// ([`Layout::Rows`]) and `out` its broadcast along the rows.
fn column_into_fragments(src: &Tile, out: &Tile) -> Option<Frag> {
    match (src.layout, out.layout) {
        (Layout::Rows(rows), Layout::Frag(frag)) if frag.row_layout() == Some(rows) && out.dims.len() == 2 => {
            Some(frag)
        }
        _ => None,
    }
}

/// The position of slot `i` of a thread-private tile (whose slots are
/// addressed by `i` alone).
fn slot_pos(i: i64) -> Pos {
    Pos {
        e: String::new(),
        i: i.to_string(),
    }
}

/// The fragments of `src` when `op` reduces them along their rows into
/// the column of those rows ([`Layout::Rows`], as the plan gives `op`'s
/// result): a reduction [`reduce_rows_in_registers`] computes, of 32-bit
/// values whose order is free (not `order = "tree"`, whose pairwise tree
/// is the same on every target).
fn rows_reduced_in_registers(f: &FnEmitter, op: OpId, src: &Tile, axis: usize, acc: ScalarType) -> Option<Frag> {
    let free_order = !tree_order(f, op);
    match (src.layout, f.planned_layout(op), &src.storage) {
        (Layout::Frag(frag), Layout::Rows(rows), Storage::Private { .. })
            if frag.row_layout() == Some(rows)
                && (free_order || frag.columns_in_quads())
                && axis == 1
                && acc.bits() == 32 =>
        {
            Some(frag)
        }
        _ => None,
    }
}

/// `src` (in `frag`) reduced along its rows into `out` (their rows'
/// column), in registers: each thread combines its slots of a row in
/// column order, then the 4 lanes of the row's quad combine theirs (XOR
/// 1, then 2), so all four hold the row's result. In tree order (`tree`),
/// the pairwise tree over the row's columns instead ([`Frag::columns_in_quads`]):
/// each of a thread's column pairs, the quad's lanes for each atom, then
/// the atoms; two shuffles an atom instead of two a row.
fn reduce_rows_in_registers(
    f: &mut FnEmitter,
    frag: Frag,
    src: &Tile,
    out: &Tile,
    acc: ScalarType,
    tree: bool,
    combine: &dyn Fn(&mut FnEmitter, &str, &str) -> String,
) {
    let t = llvm_ty(acc);
    if tree {
        let (blocks, per_row) = frag.atoms();
        for p in 0..blocks {
            for half in 0..2 {
                let atoms: Vec<String> = (0..per_row)
                    .map(|q| {
                        let pair: Vec<String> = (0..2)
                            .map(|r| {
                                let x = f.load_slot(src, &slot_pos(frag.slot(p, q, 2 * half + r)));
                                f.convert(&x, src.elem, acc)
                            })
                            .collect();
                        let mut v = tree_of(f, pair, combine);
                        for lanes in [1, 2] {
                            let other = crate::ops::xor_lanes(f, &v, t, lanes);
                            v = combine(f, &v, &other);
                        }
                        v
                    })
                    .collect();
                let v = tree_of(f, atoms, combine);
                let v = f.convert(&v, acc, out.elem);
                f.store_slot(out, &slot_pos(frag.row_slot(frag.slot(p, 0, 2 * half))), &v);
            }
        }
        return;
    }
    for j in 0..frag.row_slots() {
        let own: Vec<String> = (0..frag.per_thread())
            .filter(|&i| frag.row_slot(i) == j)
            .map(|i| {
                let x = f.load_slot(src, &slot_pos(i));
                f.convert(&x, src.elem, acc)
            })
            .collect();
        // Every row slot has slots: each atom row holds rows g and g + 8.
        let Some((first, rest)) = own.split_first() else {
            continue;
        };
        let mut v = rest.iter().fold(first.clone(), |p, x| combine(f, &p, x));
        for lanes in [1, 2] {
            let other = crate::ops::xor_lanes(f, &v, t, lanes);
            v = combine(f, &v, &other);
        }
        let v = f.convert(&v, acc, out.elem);
        f.store_slot(out, &slot_pos(j), &v);
    }
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
                    None,
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
                None,
                acc,
                &mut |f, j| {
                    let slot = f.val(format!("getelementptr [{blocks} x {t}], ptr {parts}, i64 0, i64 {j}"));
                    f.val(format!("load {t}, ptr {slot}"))
                },
                combine,
            )
        }
        Ext::Const(n) => pairwise(f, *n, None, acc, &mut read, combine),
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
/// array; with `limit` (an `i64` operand, at most `n`), over the first
/// `limit` of them: `read` is still called for all `n`, and the values
/// past the limit are never combined.
fn pairwise(
    f: &mut FnEmitter,
    n: i64,
    limit: Option<&str>,
    acc: ScalarType,
    read: &mut dyn FnMut(&mut FnEmitter, &str) -> String,
    combine: &dyn Fn(&mut FnEmitter, &str, &str) -> String,
) -> String {
    let t = llvm_ty(acc);
    let n = n.max(1);
    let limit = limit.map_or_else(|| n.to_string(), str::to_string);
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
            let inside = f.val(format!("icmp slt i64 {k}, {limit}"));
            f.when(&inside, |f| {
                let aj = f.val(format!("getelementptr [{n} x {t}], ptr {arr}, i64 0, i64 {j}"));
                let ak = f.val(format!("getelementptr [{n} x {t}], ptr {arr}, i64 0, i64 {k}"));
                combine_into(f, t, "ptr", &aj, &ak, combine);
            });
        });
        stride *= 2;
    }
    let at = f.val(format!("getelementptr [{n} x {t}], ptr {arr}, i64 0, i64 0"));
    f.val(format!("load {t}, ptr {at}"))
}

/// One step of a pairwise tree: the `t` values at `into` and `from`
/// (pointers of type `ptr`) combined, in that order, into `into`.
fn combine_into(
    f: &mut FnEmitter,
    t: &str,
    ptr: &str,
    into: &str,
    from: &str,
    combine: &dyn Fn(&mut FnEmitter, &str, &str) -> String,
) {
    let x = f.val(format!("load {t}, {ptr} {into}"));
    let y = f.val(format!("load {t}, {ptr} {from}"));
    let z = combine(f, &x, &y);
    f.line(format!("store {t} {z}, {ptr} {into}"));
}

/// How the block's threads reduce `rows` rows of `n` values together, in
/// the pairwise tree of [`tree_reduce`]: `group` threads (a power of two)
/// per row; thread `q` of a row first reduces the row's values `[q·leaf,
/// (q + 1)·leaf)` (an aligned, complete subtree of `leaf` values, a power
/// of two), then the `leaves` leaf results are combined level by level in
/// shared memory, pairs `(q, q + s)` for `q` a multiple of `2s`: the
/// combinations [`tree_reduce`] makes, in the same order, so the bits are
/// the same as one thread's.
pub(crate) struct Cooperative {
    rows: i64,
    n: i64,
    group: i64,
    leaf: i64,
    leaves: i64,
}

impl Cooperative {
    /// The plan for `rows` rows of `n` values on `threads` threads; `None`
    /// where each thread should reduce whole rows itself: there are enough
    /// rows to occupy half the block, the row length is symbolic (an
    /// index-order walk), or a leaf would be longer than [`TREE_CHUNK`].
    pub(crate) fn plan(threads: i64, rows: i64, n: &Ext) -> Option<Cooperative> {
        let Ext::Const(n) = *n else { return None };
        if rows < 1 || n < 2 || rows * 2 > threads {
            return None;
        }
        let per_row = threads / rows;
        let group = 1 << (63 - per_row.leading_zeros());
        let mut leaf = 1;
        while (n + leaf - 1) / leaf > group {
            leaf *= 2;
        }
        (leaf <= TREE_CHUNK).then_some(Cooperative {
            rows,
            n,
            group,
            leaf,
            leaves: (n + leaf - 1) / leaf,
        })
    }

    /// Shared-memory bytes of its partial results for `acc` values.
    pub(crate) fn bytes(&self, acc: ScalarType) -> i64 {
        self.rows * self.group * elem_bytes(acc)
    }

    /// Reduces every row: `read(row, j)` gives value `j` of a row; the
    /// result of row `r` is at element `r · group` of `partials` (shared
    /// memory, [`Cooperative::bytes`] long) after the barrier this ends
    /// with. Every thread of the block must run it.
    pub(crate) fn reduce(
        &self,
        f: &mut FnEmitter,
        acc: ScalarType,
        partials: &str,
        read: &mut dyn FnMut(&mut FnEmitter, &str, &str) -> String,
        combine: &dyn Fn(&mut FnEmitter, &str, &str) -> String,
    ) {
        let t = llvm_ty(acc);
        let sp = f.info().shared_ptr();
        let (g, leaf, leaves) = (self.group, self.leaf, self.leaves);
        let tid = f.tid.clone();
        let row = f.val(format!("udiv i64 {tid}, {g}"));
        let q = f.val(format!("urem i64 {tid}, {g}"));
        let in_rows = f.val(format!("icmp ult i64 {row}, {}", self.rows));
        let has_leaf = f.val(format!("icmp ult i64 {q}, {leaves}"));
        let active = f.val(format!("and i1 {in_rows}, {has_leaf}"));
        // Thread `row · g + q` is the thread itself: its slot is its id.
        let slot = f.val(format!("getelementptr {t}, {sp} {partials}, i64 {tid}"));
        let ragged = self.n % leaf != 0;
        let n = self.n;
        f.when(&active, |f| {
            let first = f.val(format!("mul i64 {q}, {leaf}"));
            let limit = ragged.then(|| {
                let left = f.val(format!("sub i64 {n}, {first}"));
                let short = f.val(format!("icmp slt i64 {left}, {leaf}"));
                f.val(format!("select i1 {short}, i64 {left}, i64 {leaf}"))
            });
            let v = pairwise(
                f,
                leaf,
                limit.as_deref(),
                acc,
                &mut |f, j| {
                    // Past the row's end (never combined): read its first value.
                    let j = match &limit {
                        Some(l) => {
                            let ok = f.val(format!("icmp slt i64 {j}, {l}"));
                            f.val(format!("select i1 {ok}, i64 {j}, i64 0"))
                        }
                        None => j.to_string(),
                    };
                    let e = f.val(format!("add i64 {first}, {j}"));
                    read(f, &row, &e)
                },
                combine,
            );
            f.line(format!("store {t} {v}, {sp} {slot}"));
        });
        let levels = 64 - (leaves - 1).leading_zeros();
        f.rolled_loop(&levels.to_string(), |f, level| {
            f.barrier();
            let s = f.val(format!("shl i64 1, {level}"));
            let span = f.val(format!("shl i64 {s}, 1"));
            let low = f.val(format!("sub i64 {span}, 1"));
            let low = f.val(format!("and i64 {q}, {low}"));
            let aligned = f.val(format!("icmp eq i64 {low}, 0"));
            let k = f.val(format!("add i64 {q}, {s}"));
            let inside = f.val(format!("icmp ult i64 {k}, {leaves}"));
            let go = f.val(format!("and i1 {aligned}, {inside}"));
            let go = f.val(format!("and i1 {go}, {in_rows}"));
            f.when(&go, |f| {
                let other = f.val(format!("getelementptr {t}, {sp} {slot}, i64 {s}"));
                combine_into(f, t, &sp, &slot, &other, combine);
            });
        });
        f.barrier();
    }

    /// Pointer to row `row`'s result in `partials`.
    pub(crate) fn result(&self, f: &mut FnEmitter, acc: ScalarType, partials: &str, row: &str) -> String {
        let sp = f.info().shared_ptr();
        let at = f.val(format!("mul i64 {row}, {}", self.group));
        f.val(format!("getelementptr {}, {sp} {partials}, i64 {at}", llvm_ty(acc)))
    }
}

/// `bytes` of the staging area at byte `at` for a cooperative reduction's
/// partial results, when they fit in shared memory beside everything else.
fn partials_area(f: &mut FnEmitter, at: i64, bytes: i64) -> Option<String> {
    if f.shared_used() + at + bytes > f.info().shared_limit as i64 {
        return None;
    }
    let base = f.staging(at + bytes);
    let sp = f.info().shared_ptr();
    Some(f.val(format!("getelementptr i8, {sp} {base}, i64 {at}")))
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
    let combine = combiner(&kind, acc);
    if let Some(frag) = rows_reduced_in_registers(f, op, &src, axis, acc) {
        let out = result_tile(f, op)?;
        if Some(out.layout) == frag.row_layout().map(Layout::Rows) {
            reduce_rows_in_registers(f, frag, &src, &out, acc, tree_order(f, op), &combine);
            f.set(op, Val::Tile(out));
            return Ok(());
        }
    }
    if let Some(r) = reduce_whole(f, op, &src, acc, &kind, &combine) {
        let r = f.convert(&r, acc, out_elem);
        match &ty {
            Type::Scalar(_) => f.set(op, Val::Scalar(out_elem, r)),
            _ => {
                // One element, held by every thread in its first slot.
                let out = result_tile(f, op)?;
                f.store_slot(&out, &slot_pos(0), &r);
                if let Storage::Private { array, .. } = &out.storage {
                    f.replicated.insert(array.clone());
                }
                f.set(op, Val::Tile(out));
            }
        }
        return Ok(());
    }
    let view = stage(f, &src, 0);
    let sdims = src.dims.clone();
    let len = sdims[axis].clone();
    let rows = match &ty {
        Type::Tensor { dims, .. } => dims.iter().map(DimExpr::as_const).product::<Option<i64>>(),
        _ => Some(1),
    };
    let plan = rows.and_then(|rows| Cooperative::plan(f.threads, rows, &len));
    let at = if view.ptr_ty == f.info().shared_ptr() {
        staged_bytes(&src)
    } else {
        0
    };
    let coop = plan.and_then(|p| partials_area(f, at, p.bytes(acc)).map(|a| (p, a)));
    // Value `j` along the axis at the other dims' indices `outer`.
    let read = |f: &mut FnEmitter, outer: &[String], j: &str| {
        let mut idx = outer.to_vec();
        idx.insert(axis, j.to_string());
        let e = f.ravel(&idx, &sdims);
        let at = view.linear(f, &e);
        let v = view.load(f, &at);
        f.convert(&v, src.elem, acc)
    };
    if let Some((plan, partials)) = &coop {
        let mut outer = sdims.clone();
        outer.remove(axis);
        plan.reduce(
            f,
            acc,
            partials,
            &mut |f, row, j| {
                let idx = if outer.is_empty() {
                    Vec::new()
                } else {
                    f.unravel(row, &outer)
                };
                read(f, &idx, j)
            },
            &combine,
        );
    }
    // The result for the row that is element `e` of the result (a kept
    // reduced dim has extent 1, so the elements are the rows in order),
    // at the other dims' indices `outer`.
    let result = |f: &mut FnEmitter, e: &str, outer: &dyn Fn(&mut FnEmitter) -> Vec<String>| match &coop {
        Some((plan, partials)) => {
            let at = plan.result(f, acc, partials, e);
            let sp = f.info().shared_ptr();
            f.val(format!("load {}, {sp} {at}", llvm_ty(acc)))
        }
        None => {
            let outer = outer(f);
            tree_reduce(f, &len, acc, |f, j| read(f, &outer, j), &combine)
        }
    };
    match &ty {
        Type::Scalar(_) => {
            let r = result(f, "0", &|_| Vec::new());
            let r = f.convert(&r, acc, out_elem);
            f.set(op, Val::Scalar(out_elem, r));
        }
        _ => {
            let out = result_tile(f, op)?;
            let odims = out.dims.clone();
            let keep = odims.len() == sdims.len();
            f.for_own(&out, |f, pos| {
                let r = result(f, &pos.e, &|f| {
                    let mut idx = f.unravel(&pos.e, &odims);
                    if keep {
                        idx.remove(axis);
                    }
                    idx
                });
                let r = f.convert(&r, acc, out_elem);
                f.store_slot(&out, pos, &r);
            });
            f.set(op, Val::Tile(out));
        }
    }
    Ok(())
}

/// The whole of `src` reduced by `op` (of `kind`) to the one element of
/// its result, a value every thread gets, in tree order as
/// [`tree_whole`] computes it, else when the values are 32-bit:
///
/// - a one-element tile every thread holds (what this gives as a tile):
///   that element;
/// - a blocked thread-private tile of at least one element per thread, or
///   one in runs:
///   each thread combines its own elements, each warp's 32 lanes theirs by
///   XOR shuffles (16, 8, 4, 2, 1; the CPU's fibers and the AMD GPUs'
///   `ds_bpermute` shuffle the same 32-lane segments), and every thread the
///   warps' results in warp order, from the staging area between two
///   barriers — against the staged pairwise tree's barrier per level and
///   its copy of the whole tile through shared memory.
fn reduce_whole(
    f: &mut FnEmitter,
    op: OpId,
    src: &Tile,
    acc: ScalarType,
    kind: &str,
    combine: &dyn Fn(&mut FnEmitter, &str, &str) -> String,
) -> Option<String> {
    let free_order = !tree_order(f, op);
    let one_result = match f.m().results(op).first().map(|&v| f.m().value_type(v)) {
        Some(Type::Scalar(_)) => true,
        Some(Type::Tensor { dims, .. }) => dims.iter().all(|d| d.as_const() == Some(1)),
        _ => false,
    };
    if !free_order {
        return if one_result {
            tree_whole(f, kind, src, acc, combine)
        } else {
            None
        };
    }
    let Storage::Private { array, per_thread } = &src.storage else {
        return None;
    };
    // In runs every slot holds an element (the count is whole runs for
    // every thread), and which thread combines which elements is free.
    let own_slots = matches!(src.layout, Layout::Blocked | Layout::Strips(_));
    if !free_order || !one_result || acc.bits() != 32 || !own_slots {
        return None;
    }
    if src.count.as_const() == Some(1) && f.replicated.contains(array) {
        let x = f.load_slot(src, &slot_pos(0));
        return Some(f.convert(&x, src.elem, acc));
    }
    let (n, threads) = (src.count.as_const()?, f.threads);
    if n < threads || threads % 32 != 0 {
        return None;
    }
    let warps = threads / 32;
    let partials = partials_area(f, 0, warps * 4)?;
    let t = llvm_ty(acc);
    let tid = f.tid.clone();
    // Slot 0 is element `tid` < n; slot i, element tid + i·T, where below n.
    let first = f.load_slot(src, &slot_pos(0));
    let mut v = f.convert(&first, src.elem, acc);
    for i in 1..*per_thread {
        let x = f.load_slot(src, &slot_pos(i));
        let x = f.convert(&x, src.elem, acc);
        let both = combine(f, &v, &x);
        v = if (i + 1) * threads <= n {
            both
        } else {
            let e = f.val(format!("add i64 {tid}, {}", i * threads));
            let inside = f.val(format!("icmp slt i64 {e}, {n}"));
            f.val(format!("select i1 {inside}, {t} {both}, {t} {v}"))
        };
    }
    for lanes in [16, 8, 4, 2, 1] {
        let other = crate::ops::xor_lanes(f, &v, t, lanes);
        v = combine(f, &v, &other);
    }
    share_warp_results(f, &partials, t, &[v], warps);
    let sp = f.info().shared_ptr();
    let mut total: Option<String> = None;
    for w in 0..warps {
        let at = f.val(format!("getelementptr {t}, {sp} {partials}, i64 {w}"));
        let x = f.val(format!("load {t}, {sp} {at}"));
        total = Some(match total {
            None => x,
            Some(p) => combine(f, &p, &x),
        });
    }
    total
}

/// Each warp's `values` (of type `t`) into `partials`, value `r` of warp
/// `w` at `r·warps + w`, stored by the warp's lane 0 between two
/// barriers, so that every thread reads every warp's after.
fn share_warp_results(f: &mut FnEmitter, partials: &str, t: &str, values: &[String], warps: i64) {
    let tid = f.tid.clone();
    let sp = f.info().shared_ptr();
    let warp = f.val(format!("udiv i64 {tid}, 32"));
    let lane = f.val(format!("urem i64 {tid}, 32"));
    let leader = f.val(format!("icmp eq i64 {lane}, 0"));
    f.barrier();
    f.when(&leader, |f| {
        for (r, v) in values.iter().enumerate() {
            let slot = f.val(format!("add i64 {warp}, {}", r as i64 * warps));
            let at = f.val(format!("getelementptr {t}, {sp} {partials}, i64 {slot}"));
            f.line(format!("store {t} {v}, {sp} {at}"));
        }
    });
    f.barrier();
}

/// Whether `op` reduces in the pairwise tree's order (`order = "tree"`).
fn tree_order(f: &FnEmitter, op: OpId) -> bool {
    f.m().attr(op, "order").and_then(Attr::as_str) == Some("tree")
}

/// The element a reduction of `kind` may be padded with, in `acc`: the
/// value `x` combined with it gives back bit for bit (-0 for a sum, since
/// +0 + -0 is +0; -inf for `llvm.maximum`, which orders -0 below +0 and
/// keeps NaNs), so a tree over padded values is the pairwise tree over
/// the values with its missing nodes passed through.
fn neutral(kind: &str, acc: ScalarType) -> Option<String> {
    if acc == ScalarType::F32 {
        let v = match kind {
            "sum" => -0.0,
            "prod" => 1.0,
            "max" => f64::NEG_INFINITY,
            _ => f64::INFINITY,
        };
        return Some(float_lit(acc, v));
    }
    if acc.is_float() || acc.bits() != 32 {
        return None;
    }
    let signed = !matches!(acc, ScalarType::U32);
    Some(match (kind, signed) {
        ("sum", _) => "0".to_string(),
        ("prod", _) => "1".to_string(),
        ("max", true) => i32::MIN.to_string(),
        ("max", false) => "0".to_string(),
        (_, true) => i32::MAX.to_string(),
        (_, false) => "-1".to_string(),
    })
}

/// `values` combined by the pairwise tree of [`tree_reduce`]: `(j, j + s)`
/// for `j` a multiple of `2s`, `s = 1, 2, 4, …`, while `j + s` is in range.
fn tree_of(
    f: &mut FnEmitter,
    mut values: Vec<String>,
    combine: &dyn Fn(&mut FnEmitter, &str, &str) -> String,
) -> String {
    let mut stride = 1;
    while stride < values.len() {
        for j in (0..values.len()).step_by(2 * stride) {
            if j + stride < values.len() {
                values[j] = combine(f, &values[j], &values[j + stride]);
            }
        }
        stride *= 2;
    }
    values.swap_remove(0)
}

/// The whole of `src` reduced by the pairwise tree over its elements'
/// row-major indices (`order = "tree"`, the bits [`tree_reduce`] gives),
/// in registers, for a blocked tile or one in runs of `v` (blocked: runs
/// of 1) on a block of `T` threads, both powers of two, of 32-bit values:
/// element `r·v·T + t·v + k` is run `r`'s `k`-th of thread `t`, so the
/// tree's lowest levels are each run's own `v` values, the next five the
/// lanes of a warp (XOR shuffles 1, 2, 4, 8, 16: both lanes of a pair
/// compute the same sum, the operations being commutative), then the
/// warps (their results through shared memory, between two barriers),
/// then the runs. Elements past the end are the kind's neutral value.
/// Every thread gets the result. Against the staged tree: no copy of the
/// tile through shared memory, and two barriers instead of one a level.
fn tree_whole(
    f: &mut FnEmitter,
    kind: &str,
    src: &Tile,
    acc: ScalarType,
    combine: &dyn Fn(&mut FnEmitter, &str, &str) -> String,
) -> Option<String> {
    let Storage::Private { per_thread, .. } = &src.storage else {
        return None;
    };
    let run = match src.layout {
        Layout::Blocked => 1,
        Layout::Strips(v) => v,
        _ => return None,
    };
    let (n, threads, per_thread) = (src.count.as_const()?, f.threads, *per_thread);
    let pow2 = |x: i64| x > 0 && x & (x - 1) == 0;
    if !pow2(run) || !pow2(threads) || threads < 32 || per_thread % run != 0 || i64::from(f.info().warp) < 32 {
        return None;
    }
    let pad = neutral(kind, acc)?;
    let (runs, warps) = (per_thread / run, threads / 32);
    let partials = partials_area(f, 0, warps * runs * 4)?;
    let t = llvm_ty(acc);
    let tid = f.tid.clone();
    let mut run_values = Vec::new();
    for r in 0..runs {
        let first = r * run * threads;
        let own: Vec<String> = (0..run)
            .map(|k| {
                let x = f.load_slot(src, &slot_pos(r * run + k));
                let x = f.convert(&x, src.elem, acc);
                if first + run * threads <= n {
                    return x;
                }
                // Element first + t·v + k.
                let tv = f.val(format!("mul i64 {tid}, {run}"));
                let e = f.val(format!("add i64 {tv}, {}", first + k));
                let inside = f.val(format!("icmp slt i64 {e}, {n}"));
                f.val(format!("select i1 {inside}, {t} {x}, {t} {pad}"))
            })
            .collect();
        let mut v = tree_of(f, own, combine);
        for lanes in [1, 2, 4, 8, 16] {
            let other = crate::ops::xor_lanes(f, &v, t, lanes);
            v = combine(f, &v, &other);
        }
        run_values.push(v);
    }
    share_warp_results(f, &partials, t, &run_values, warps);
    let sp = f.info().shared_ptr();
    let per_run: Vec<String> = (0..runs)
        .map(|r| {
            let of_warps: Vec<String> = (0..warps)
                .map(|w| {
                    let at = f.val(format!("getelementptr {t}, {sp} {partials}, i64 {}", r * warps + w));
                    f.val(format!("load {t}, {sp} {at}"))
                })
                .collect();
            tree_of(f, of_warps, combine)
        })
        .collect();
    Some(tree_of(f, per_run, combine))
}

/// Where a softmax finds each row's max and sum of exponentials.
enum RowStats {
    /// Reduced by the block together: row `r`'s in [`Cooperative::result`].
    Block {
        plan: Cooperative,
        maxes: String,
        sums: String,
    },
    /// Reduced by one thread per row: max and sum side by side at `2r`.
    Thread { stats: String },
}

impl RowStats {
    /// Pointers to `row`'s max and sum (shared memory, `acc` values).
    fn at(&self, f: &mut FnEmitter, acc: ScalarType, row: &str) -> (String, String) {
        match self {
            RowStats::Block { plan, maxes, sums } => (plan.result(f, acc, maxes, row), plan.result(f, acc, sums, row)),
            RowStats::Thread { stats } => {
                let (t, sp) = (llvm_ty(acc), f.info().shared_ptr());
                let r2 = f.val(format!("mul i64 {row}, 2"));
                let pm = f.val(format!("getelementptr {t}, {sp} {stats}, i64 {r2}"));
                let ps = f.val(format!("getelementptr {t}, {sp} {pm}, i64 1"));
                (pm, ps)
            }
        }
    }
}

/// Softmax along the last axis: each row's max and sum of exponentials
/// (in `accumulate` precision, tree order) computed by the block together
/// when there are fewer rows than half its threads ([`Cooperative`]), else
/// by one thread per row, shared, then every element `exp(x - max) / sum`.
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
    let t = llvm_ty(acc);
    let se = src.elem;
    let max_fn = combiner("max", acc);
    let add_fn = combiner("sum", acc);
    let sp = f.info().shared_ptr();
    let read = |f: &mut FnEmitter, row: &str, j: &str| {
        let at = view.at(f, row, j);
        let v = view.load(f, &at);
        f.convert(&v, se, acc)
    };
    let plan = Cooperative::plan(f.threads, rows_count, &Ext::Const(cols));
    let coop = plan.and_then(|p| partials_area(f, stats_at, 2 * p.bytes(acc)).map(|a| (p, a)));
    let stats = match coop {
        Some((plan, maxes)) => {
            // The block reduces the rows together: the maxes, then the sums
            // of exponentials, each row's partial results in its own area.
            let sums = f.val(format!("getelementptr i8, {sp} {maxes}, i64 {}", plan.bytes(acc)));
            plan.reduce(f, acc, &maxes, &mut |f, row, j| read(f, row, j), &max_fn);
            plan.reduce(
                f,
                acc,
                &sums,
                &mut |f, row, j| {
                    let pm = plan.result(f, acc, &maxes, row);
                    let m = f.val(format!("load {t}, {sp} {pm}"));
                    let v = read(f, row, j);
                    let d = f.val(format!("fsub {t} {v}, {m}"));
                    f.math("exp", acc, &d).unwrap_or(d)
                },
                &add_fn,
            );
            RowStats::Block { plan, maxes, sums }
        }
        None => {
            // Each thread reduces whole rows.
            let stats_base = f.staging(stats_at + rows_count * 2 * ab);
            let stats = f.val(format!("getelementptr i8, {sp} {stats_base}, i64 {stats_at}"));
            let (threads, tid) = (f.threads, f.tid.clone());
            f.spread(rows_count, threads, &tid, false, |f, row| {
                let m = tree_reduce(f, &Ext::Const(cols), acc, |f, j| read(f, row, j), &max_fn);
                let s = tree_reduce(
                    f,
                    &Ext::Const(cols),
                    acc,
                    |f, j| {
                        let v = read(f, row, j);
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
            f.barrier();
            RowStats::Thread { stats }
        }
    };
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
        let (pm, ps) = stats.at(f, acc, &row);
        let m = f.val(format!("load {t}, {sp} {pm}"));
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
        view.read_into(f, &out);
    }
    f.set(op, Val::Tile(out));
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The rows of `x` (`rows` × `n`, f32) reduced by `tile.reduce` of
    /// `kind` on a block of `threads`, on the CPU.
    fn reduced(x: &[f32], rows: usize, n: usize, kind: &str, threads: u32) -> Vec<f32> {
        let text = format!(
            r#"module @m attributes {{layer = "target", target = "cpu"}} {{
  func.func @k(%x: memref<{rows}x{n}xf32, global>, %o: memref<{rows}xf32, global>) -> () attributes {{block = [{threads}], kind = "kernel", layer = "target"}} {{
    %z = tile.const() {{value = 0}} : () -> index
    %t = tile.load_tile(%x, %z, %z) : (memref<{rows}x{n}xf32, global>, index, index) -> tensor<{rows}x{n}xf32>
    %s = tile.reduce(%t) {{axis = 1, kind = "{kind}", order = "tree"}} : (tensor<{rows}x{n}xf32>) -> tensor<{rows}xf32>
    tile.store_tile(%s, %o, %z) : (tensor<{rows}xf32>, memref<{rows}xf32, global>, index) -> ()
    tile.return() : () -> ()
  }}
}}
"#
        );
        let mut buffers = vec![x.to_vec(), vec![f32::NAN; rows]];
        crate::emit::tests::run(&text, threads, &mut buffers);
        buffers.pop().unwrap_or_default()
    }

    /// `count` values in `[-500, 500)` from a fixed xorshift sequence.
    fn values(count: usize) -> Vec<f32> {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        (0..count)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 1000.0
            })
            .collect()
    }

    /// The pairwise tree of `exchange::tree_reduce` over `v`.
    fn pairwise(mut v: Vec<f32>, combine: fn(f32, f32) -> f32) -> f32 {
        let mut stride = 1;
        while stride < v.len() {
            for j in (0..v.len()).step_by(2 * stride) {
                if j + stride < v.len() {
                    v[j] = combine(v[j], v[j + stride]);
                }
            }
            stride *= 2;
        }
        v[0]
    }

    /// A whole row held in registers (one row per block, blocked or in
    /// runs) reduced in tree order is reduced there, through shuffles and
    /// a few words of shared memory per warp, and still gives the bits of
    /// the pairwise tree over the row: lengths that fill the block's runs
    /// or not, shorter than the block, with zeros of both signs (a sum's
    /// padding must not turn -0 into +0) and an infinity in the maxes and
    /// minimums.
    #[test]
    fn whole_rows_reduced_in_registers_keep_the_pairwise_tree() {
        let cases: [(usize, &str, u32); 9] = [
            (1, "sum", 32),
            (31, "sum", 64),
            (200, "max", 128),
            (1000, "sum", 128),
            (1024, "min", 256),
            (1025, "sum", 256),
            (4096, "sum", 256),
            (5000, "max", 256),
            (777, "prod", 32),
        ];
        for (n, kind, threads) in cases {
            let mut x = values(n);
            if kind == "prod" {
                x.iter_mut().for_each(|v| *v = 1.0 + *v / 5000.0);
            }
            if kind == "max" || kind == "min" {
                x[n / 2] = f32::INFINITY.copysign(x[n / 2]);
            }
            let text = format!(
                r#"module @m attributes {{layer = "target", target = "cpu"}} {{
  func.func @k(%x: memref<1x{n}xf32, global>, %o: memref<1xf32, global>) -> () attributes {{block = [{threads}], kind = "kernel", layer = "target"}} {{
    %z = tile.const() {{value = 0}} : () -> index
    %t = tile.load_tile(%x, %z, %z) : (memref<1x{n}xf32, global>, index, index) -> tensor<1x{n}xf32>
    %s = tile.reduce(%t) {{axis = 1, kind = "{kind}", order = "tree"}} : (tensor<1x{n}xf32>) -> tensor<1xf32>
    tile.store_tile(%s, %o, %z) : (tensor<1xf32>, memref<1xf32, global>, index) -> ()
    tile.return() : () -> ()
  }}
}}
"#
            );
            let module = tessera_ir::parse(&text).expect("the IR parses");
            let cpu = crate::CpuModule::new(&module, &crate::Options::default(), &[]).expect("the kernel compiles");
            let shared = cpu.manifest.kernels[0].shared_bytes;
            // The warps' results, one word a warp and slot of a thread.
            let partials = (threads as usize / 32) * n.div_ceil(threads as usize).next_multiple_of(4) * 4;
            assert!(
                shared as usize <= partials,
                "{kind} of {n} on {threads} threads staged {shared} bytes"
            );
            let combine: fn(f32, f32) -> f32 = match kind {
                // IEEE 754-2019's maximum and minimum (`llvm.maximum`): -0 < +0.
                "max" => |a, b| {
                    if a > b || (a == b && b.is_sign_negative()) {
                        a
                    } else {
                        b
                    }
                },
                "min" => |a, b| {
                    if a < b || (a == b && b.is_sign_positive()) {
                        a
                    } else {
                        b
                    }
                },
                "prod" => |a, b| a * b,
                _ => |a, b| a + b,
            };
            for zeros in [false, true] {
                let x: Vec<f32> = if zeros {
                    x.iter().map(|_| -0.0).collect()
                } else {
                    x.clone()
                };
                let got = reduced(&x, 1, n, kind, threads);
                let want = pairwise(x, combine);
                assert_eq!(got[0].to_bits(), want.to_bits(), "{kind} of {n} on {threads} threads");
            }
        }
    }

    /// Row sums and maxes give the bits of the one pairwise tree over the
    /// row, however the block shares the work: one thread per row (many
    /// rows), long rows reduced block by block, or the block's threads
    /// reducing a few rows together (`exchange::Cooperative`), with rows
    /// that fill the leaves exactly or not (ragged), shorter than the
    /// threads given to them, and a block that is not a power of two.
    #[test]
    fn reductions_keep_the_pairwise_tree_however_the_block_shares_them() {
        let cases: [(usize, usize, &str, u32); 8] = [
            (4, 200, "sum", 128),
            (1, 999, "sum", 128),
            (1, 1024, "max", 256),
            (3, 37, "sum", 128),
            (2, 5, "sum", 64),
            (5, 300, "sum", 96),
            (256, 70, "sum", 128),
            (1, 20_000, "sum", 128),
        ];
        for (rows, n, kind, threads) in cases {
            let x = values(rows * n);
            let got = reduced(&x, rows, n, kind, threads);
            let combine: fn(f32, f32) -> f32 = if kind == "max" { f32::max } else { |a, b| a + b };
            for r in 0..rows {
                let want = pairwise(x[r * n..(r + 1) * n].to_vec(), combine);
                assert_eq!(
                    got[r].to_bits(),
                    want.to_bits(),
                    "{kind} of row {r} of {rows}x{n} on {threads} threads"
                );
            }
        }
    }
}
