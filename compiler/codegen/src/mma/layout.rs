//! How the block's threads hold a tile: the blocked distribution every op
//! understands, or the accumulator fragments of a tensor-core instruction,
//! so that a product's accumulator stays in registers across the products
//! that update it and is never staged through shared memory.
//!
//! Both NVIDIA fragment layouts are built from the same 16×8 atom, a warp's
//! share of one `mma.sync.m16n8k16` accumulator (PTX ISA 9.7.14.5.8,
//! "Matrix Fragments for mma.m16n8k16 with floating point type", C/D):
//!
//! ```text
//! groupID = lane >> 2, threadID_in_group = lane % 4
//! row = groupID       for c0, c1;  groupID + 8 for c2, c3
//! col = threadID_in_group * 2 + (i & 1)
//! ```
//!
//! `wgmma.mma_async.m64nNk16`'s f32 accumulator D (PTX ISA 9.7.15.5.1.1.1,
//! Figure 149) is that atom repeated: warp `w` of the warpgroup holds rows
//! `16w … 16w + 15`, and `d[4j + r]` is element `r` of the atom in columns
//! `8j … 8j + 7` (CuTe's `GMMA::CLayout_64xN`,
//! `((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))` over the column-major 64×N
//! tile, says the same).
//!
//! A block-wide tile is cut into such atoms: `mma.sync` gives each warp of
//! a `warps_m × warps_n` grid a rectangle of atoms; `wgmma` gives each
//! warpgroup whole 64-row blocks. Slot `i` of a thread is element `i % 4`
//! of its atom `i / 4`, atoms in row-major order within the thread's share,
//! which is the order the instructions read and write them.

use std::collections::HashMap;

use tessera_ir::{Attr, DimExpr, Module, OpId, ScalarType, Type, ValueId};

use crate::emit::FnEmitter;
pub(crate) use tessera_ir_tile::locals::{accumulates_in_place, is_local_tile, is_tile_local, load_shares_local};

/// How the block's threads hold a tile's elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Thread `t` of `T` holds the elements whose row-major index is
    /// `t + i·T`, `i = 0, 1, …`.
    Blocked,
    /// The accumulator fragments of a tensor-core engine.
    Frag(Frag),
    /// Thread `t` of `T` holds runs of `v` consecutive elements: its slot
    /// `i` is element `(i / v)·v·T + t·v + i % v`, so that each run is one
    /// vector access of global memory ([`strips`] plans it).
    Strips(i64),
    /// A `[rows, 1]` column of per-row values (a row reduction of, or a
    /// column broadcast into, fragment tiles): each thread holds the rows
    /// its slots of the fragments lie in, the 4 lanes of a quad the same
    /// ones. The fragment is [`Frag::row_layout`]'s, one atom wide, so
    /// that fragments of any width over the same rows share it.
    Rows(Frag),
}

/// A 2-D f32 accumulator tile spread over the block as tensor-core
/// fragments (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Frag {
    /// `mma.sync.m16n8k16`: warp `w` is at `(w / warps_n, w % warps_n)` of
    /// the warp grid and owns that rectangle of the tile's 16×8 atoms.
    MmaSync {
        rows: i64,
        cols: i64,
        warps_m: i64,
        warps_n: i64,
    },
    /// `wgmma.mma_async.m64nNk16`: warpgroup `g` owns the 64-row blocks
    /// `g·B … g·B + B - 1` (`B` = blocks per warpgroup), whole width.
    Wgmma { rows: i64, cols: i64, groups: i64 },
}

/// Integer arithmetic on some representation of values: exact `i64`s (the
/// reference the tests check) or LLVM IR emitted by the code generator, so
/// that both run the same layout formulas.
pub(crate) trait Arith {
    type V: Clone;
    fn add(&mut self, a: &Self::V, b: &Self::V) -> Self::V;
    fn mul(&mut self, a: &Self::V, k: i64) -> Self::V;
    fn div(&mut self, a: &Self::V, k: i64) -> Self::V;
    fn rem(&mut self, a: &Self::V, k: i64) -> Self::V;
}

/// Arithmetic on plain integers.
pub(crate) struct Exact;

impl Arith for Exact {
    type V = i64;
    fn add(&mut self, a: &i64, b: &i64) -> i64 {
        a + b
    }
    fn mul(&mut self, a: &i64, k: i64) -> i64 {
        a * k
    }
    fn div(&mut self, a: &i64, k: i64) -> i64 {
        a / k
    }
    fn rem(&mut self, a: &i64, k: i64) -> i64 {
        a % k
    }
}

/// LLVM IR `i64` arithmetic, folded where both sides are constants.
impl Arith for FnEmitter<'_, '_> {
    type V = String;
    fn add(&mut self, a: &String, b: &String) -> String {
        match (a.parse::<i64>(), b.parse::<i64>()) {
            (Ok(x), Ok(y)) => (x + y).to_string(),
            (Ok(0), _) => b.clone(),
            (_, Ok(0)) => a.clone(),
            _ => self.val(format!("add i64 {a}, {b}")),
        }
    }
    fn mul(&mut self, a: &String, k: i64) -> String {
        match a.parse::<i64>() {
            Ok(x) => (x * k).to_string(),
            _ if k == 0 => "0".into(),
            _ if k == 1 => a.clone(),
            _ => self.val(format!("mul i64 {a}, {k}")),
        }
    }
    fn div(&mut self, a: &String, k: i64) -> String {
        match a.parse::<i64>() {
            Ok(x) => (x / k).to_string(),
            _ if k == 1 => a.clone(),
            _ => self.val(format!("udiv i64 {a}, {k}")),
        }
    }
    fn rem(&mut self, a: &String, k: i64) -> String {
        match a.parse::<i64>() {
            Ok(x) => (x % k).to_string(),
            _ if k == 1 => "0".into(),
            _ => self.val(format!("urem i64 {a}, {k}")),
        }
    }
}

impl Frag {
    pub fn rows(self) -> i64 {
        match self {
            Frag::MmaSync { rows, .. } | Frag::Wgmma { rows, .. } => rows,
        }
    }

    pub fn cols(self) -> i64 {
        match self {
            Frag::MmaSync { cols, .. } | Frag::Wgmma { cols, .. } => cols,
        }
    }

    /// The block's threads (all of them hold a share).
    pub fn threads(self) -> i64 {
        match self {
            Frag::MmaSync { warps_m, warps_n, .. } => 32 * warps_m * warps_n,
            Frag::Wgmma { groups, .. } => 128 * groups,
        }
    }

    /// Elements each thread holds.
    pub fn per_thread(self) -> i64 {
        self.rows() * self.cols() / self.threads()
    }

    /// A thread's atoms: how many along the rows (for `wgmma`, 64-row
    /// blocks, each one atom per warp) and along the columns.
    pub fn atoms(self) -> (i64, i64) {
        match self {
            Frag::MmaSync {
                rows,
                cols,
                warps_m,
                warps_n,
            } => (rows / 16 / warps_m, cols / 8 / warps_n),
            Frag::Wgmma { rows, cols, groups } => (rows / 64 / groups, cols / 8),
        }
    }

    /// The same rows over the same threads, one atom wide, when every row
    /// is held by the 4 lanes of one quad (a warp's atoms span the whole
    /// width): the distribution of [`Layout::Rows`].
    pub fn row_layout(self) -> Option<Frag> {
        match self {
            Frag::Wgmma { rows, groups, .. } => Some(Frag::Wgmma { rows, cols: 8, groups }),
            Frag::MmaSync {
                rows,
                warps_m,
                warps_n: 1,
                ..
            } => Some(Frag::MmaSync {
                rows,
                cols: 8,
                warps_m,
                warps_n: 1,
            }),
            Frag::MmaSync { .. } => None,
        }
    }

    /// Whether the columns of the rows lie as a row reduction in tree order
    /// takes them in registers (`exchange::reduce_rows_in_registers`):
    /// slot `(p, q, r)` of lane `l` is column `8q + 2(l % 4) + r % 2` of
    /// its row, so that the pairwise tree's first level is a thread's own
    /// pair, the next two the quad's lanes (XOR 1, then 2), and the rest a
    /// thread's own atoms.
    pub fn columns_in_quads(self) -> bool {
        let (blocks, per_row) = self.atoms();
        (0..32).all(|lane| {
            (0..blocks).all(|p| {
                (0..per_row).all(|q| {
                    (0..4).all(|r| {
                        let (_, col) = self.coords(&mut Exact, &lane, &self.slot(p, q, r));
                        col == 8 * q + 2 * (lane % 4) + r % 2
                    })
                })
            })
        })
    }

    /// The rows a thread holds: rows `g` and `g + 8` of each of its atom
    /// rows.
    pub fn row_slots(self) -> i64 {
        2 * self.atoms().0
    }

    /// The row slot (see [`Frag::row_slots`]) of slot `i`.
    pub fn row_slot(self, i: i64) -> i64 {
        let p = i / 4 / self.atoms().1;
        2 * p + i % 4 / 2
    }

    /// A slot of the row that row slot `j` is.
    pub fn slot_of_row(self, j: i64) -> i64 {
        self.slot(j / 2, 0, 2 * (j % 2))
    }

    /// The slot of element `r` (0‥4) of a thread's atom `(p, q)`.
    pub fn slot(self, p: i64, q: i64, r: i64) -> i64 {
        (p * self.atoms().1 + q) * 4 + r
    }

    /// Row and column in the tile of slot `i` of thread `t`: always
    /// `coords(t, 0) + coords(0, i)` (the thread's place and the slot's
    /// are separate terms), so a thread can find its first element once and
    /// the others at constant offsets from it.
    pub fn coords<A: Arith>(self, a: &mut A, t: &A::V, i: &A::V) -> (A::V, A::V) {
        let (blocks, per_row) = self.atoms();
        let lane = a.rem(t, 32);
        let warp = a.div(t, 32);
        let atom = a.div(i, 4);
        let p = a.div(&atom, per_row);
        let q = a.rem(&atom, per_row);
        let (atom_row, atom_col) = match self {
            Frag::MmaSync { warps_n, .. } => {
                let wr = a.div(&warp, warps_n);
                let wc = a.rem(&warp, warps_n);
                let r0 = a.mul(&wr, blocks);
                let c0 = a.mul(&wc, per_row);
                (a.add(&r0, &p), a.add(&c0, &q))
            }
            Frag::Wgmma { .. } => {
                let group = a.div(&warp, 4);
                let quarter = a.rem(&warp, 4);
                let b0 = a.mul(&group, blocks);
                let block = a.add(&b0, &p);
                let r0 = a.mul(&block, 4);
                (a.add(&r0, &quarter), q)
            }
        };
        // Within the atom: PTX ISA 9.7.14.5.8, accumulators C/D.
        let r = a.rem(i, 4);
        let group_id = a.div(&lane, 4);
        let in_group = a.rem(&lane, 4);
        let half = a.div(&r, 2);
        let below = a.mul(&half, 8);
        let odd = a.rem(&r, 2);
        let pair = a.mul(&in_group, 2);
        let (row_in, col_in) = (a.add(&group_id, &below), a.add(&pair, &odd));
        let row0 = a.mul(&atom_row, 16);
        let col0 = a.mul(&atom_col, 8);
        (a.add(&row0, &row_in), a.add(&col0, &col_in))
    }
}

/// The `mma.sync` fragment layout of a `rows × cols` accumulator over
/// `threads`: every warp gets an equal rectangle of atoms; `hint` (the
/// op's `warps`) when it uses every warp, else the split whose warp tiles
/// are closest to square.
pub(crate) fn mma_sync_frag(rows: i64, cols: i64, threads: i64, hint: Option<[i64; 2]>) -> Option<Frag> {
    if threads % 32 != 0 || rows % 16 != 0 || cols % 8 != 0 {
        return None;
    }
    let warps = threads / 32;
    let (tiles_m, tiles_n) = (rows / 16, cols / 8);
    let fits = |wm: i64, wn: i64| wm * wn == warps && tiles_m % wm == 0 && tiles_n % wn == 0;
    let frag = |[warps_m, warps_n]: [i64; 2]| Frag::MmaSync {
        rows,
        cols,
        warps_m,
        warps_n,
    };
    if let Some([wm, wn]) = hint.filter(|&[wm, wn]| fits(wm, wn)) {
        return Some(frag([wm, wn]));
    }
    (1..=warps)
        .filter(|wm| warps % wm == 0 && fits(*wm, warps / wm))
        .min_by_key(|wm| (rows / wm - cols / (warps / wm)).abs())
        .map(|wm| frag([wm, warps / wm]))
}

/// The fragment layout the accumulator of the matrix-product op `op` stays
/// in when its product runs on tensor cores from registers: bf16 or f16
/// operands, f32 accumulation, constant shapes that the instruction tiles
/// and every thread of the block takes part in.
pub(crate) fn frag_of(m: &Module, op: OpId, threads: i64) -> Option<Frag> {
    let name = m.op(op).name.as_str();
    if name != "nvptx.mma_sync" && name != "nvptx.wgmma" {
        return None;
    }
    let operands = m.operands(op);
    let result = *m.results(op).first()?;
    let [a, b, c] = operands else { return None };
    let (a_ty, b_ty) = (m.value_type(*a), m.value_type(*b));
    let (elem, b_elem) = (a_ty.elem()?, b_ty.elem()?);
    let sixteen = matches!(elem, ScalarType::BF16 | ScalarType::F16) && b_elem == elem;
    // Other operands (fp8): wgmma only (`mma.sync`'s fp8 fragments are not
    // planned).
    let wgmma = (name == "nvptx.wgmma")
        .then(|| super::wgmma_operands(elem, b_elem))
        .flatten();
    if !sixteen && wgmma.is_none() {
        return None;
    }
    let acc = m
        .attr(op, "accumulate")
        .and_then(Attr::as_type)
        .and_then(Type::elem)
        .or(m.value_type(result).elem());
    let f32 = Some(ScalarType::F32);
    if acc != f32 || m.value_type(*c).elem() != f32 || m.value_type(result).elem() != f32 {
        return None;
    }
    let (mm, kk) = const_2d(a_ty)?;
    let (kb, nn) = match const_2d(b_ty)? {
        (nn, kb) if super::transposed_b(m, op) => (kb, nn),
        dims => dims,
    };
    let k_step = wgmma.map_or(16, |o| o.k);
    if kb != kk || const_2d(m.value_type(result))? != (mm, nn) || kk % k_step != 0 {
        return None;
    }
    let groups = threads / 128;
    if name == "nvptx.wgmma" && threads % 128 == 0 && mm % (64 * groups) == 0 && nn % 8 == 0 && nn <= 256 {
        return Some(Frag::Wgmma {
            rows: mm,
            cols: nn,
            groups,
        });
    }
    if !sixteen {
        return None;
    }
    let hint = m
        .attr(op, "warps")
        .and_then(Attr::as_ints)
        .and_then(|w| <[i64; 2]>::try_from(w).ok());
    mma_sync_frag(mm, nn, threads, hint)
}

fn const_2d(ty: &Type) -> Option<(i64, i64)> {
    match ty.dims()? {
        [r, c] => Some((r.as_const()?, c.as_const()?)),
        _ => None,
    }
}

/// The layouts of a kernel's tiles. Values that must share a layout —
/// the accumulator and the result of a product, the operands and result
/// of an elementwise op, a whole-tile local and what is loaded from or
/// stored into it — form classes; a class holding the accumulator of a
/// product that [`frag_of`] accepts takes that product's fragment layout
/// (the first one, in program order), every other value is blocked.
pub(crate) fn plan(m: &Module, func: OpId, threads: i64) -> HashMap<ValueId, Layout> {
    let mut classes = Classes::default();
    let mut sources = Vec::new();
    for op in m.walk_op(func) {
        let operands = m.operands(op);
        let Some(&result) = m.results(op).first() else {
            if m.op(op).name == "tile.store_tile" {
                if let [value, local, ..] = operands {
                    if is_local_tile(m, *local) {
                        classes.union(*value, *local);
                    }
                }
            }
            continue;
        };
        match m.op(op).name.as_str() {
            "nvptx.mma_sync" | "nvptx.wgmma" => {
                if let Some(frag) = frag_of(m, op, threads) {
                    classes.union(operands[2], result);
                    sources.push((result, frag));
                }
            }
            "tile.load_tile" if operands.first().is_some_and(|&l| is_local_tile(m, l)) => {
                classes.union(result, operands[0]);
            }
            "tile.binary" | "tile.unary" | "tile.cmp" | "tile.cast" | "tile.select"
                if matches!(m.value_type(result), Type::Tensor { .. }) =>
            {
                for &v in operands {
                    if matches!(m.value_type(v), Type::Tensor { .. }) {
                        classes.union(result, v);
                    }
                }
            }
            _ => {}
        }
    }
    let mut chosen: HashMap<ValueId, Frag> = HashMap::new();
    for (v, frag) in sources {
        let root = classes.find(v);
        chosen.entry(root).or_insert(frag);
    }
    // A class whose members do not all have the fragment's shape stays
    // blocked (elementwise ops and whole-tile locals keep shapes equal, so
    // this is a guard, not a case that arises).
    let members: Vec<ValueId> = classes.parent.keys().copied().collect();
    for &v in &members {
        let root = classes.find(v);
        if let Some(frag) = chosen.get(&root) {
            if const_2d(m.value_type(v)) != Some((frag.rows(), frag.cols())) {
                chosen.remove(&root);
            }
        }
    }
    let rows = row_columns(m, func, &mut classes, &chosen);
    let members: Vec<ValueId> = classes.parent.keys().copied().collect();
    members
        .into_iter()
        .filter_map(|v| {
            let root = classes.find(v);
            chosen
                .get(&root)
                .map(|&frag| (v, Layout::Frag(frag)))
                .or_else(|| rows.get(&root).map(|&frag| (v, Layout::Rows(frag))))
        })
        .collect()
}

/// The classes that are columns of per-row values of fragment tiles
/// ([`Layout::Rows`]): the `[rows, 1]` result of a row reduction
/// (`axis = 1`; in `order = "tree"`, of fragments whose columns the tree
/// can walk in registers, [`Frag::columns_in_quads`]) of a fragment tile,
/// the `[rows, 1]` operand of a broadcast into one, and what elementwise ops and
/// whole-tile locals join to them. A class keeps it when every source
/// agrees on the rows' distribution, every member is `[rows, 1]`, and its
/// values go only to ops that read each element as a value (elementwise
/// ops, broadcasts, reductions, loads and stores): a thread holds a row
/// as its 3 quad neighbours do, so an op that counts the elements a
/// thread holds (an atomic) would see each 4 times.
fn row_columns(
    m: &Module,
    func: OpId,
    classes: &mut Classes,
    chosen: &HashMap<ValueId, Frag>,
) -> HashMap<ValueId, Frag> {
    let mut found: HashMap<ValueId, Option<Frag>> = HashMap::new();
    let mut users: HashMap<ValueId, Vec<OpId>> = HashMap::new();
    let column = |v: ValueId| const_2d(m.value_type(v)).filter(|&(_, c)| c == 1).map(|(r, _)| r);
    for op in m.walk_op(func) {
        let operands = m.operands(op);
        for &v in operands {
            users.entry(v).or_default().push(op);
        }
        let Some(&result) = m.results(op).first() else { continue };
        let (from, column_value) = match m.op(op).name.as_str() {
            "tile.reduce" if matches!(m.attr(op, "axis").and_then(Attr::as_int), Some(1 | -1)) => (operands[0], result),
            "tile.broadcast" if operands.first().is_some_and(|&v| const_2d(m.value_type(v)).is_some()) => {
                (result, operands[0])
            }
            _ => continue,
        };
        let tree = m.op(op).name == "tile.reduce" && m.attr(op, "order").and_then(Attr::as_str) == Some("tree");
        let frag = chosen
            .get(&classes.find(from))
            .filter(|f| !tree || f.columns_in_quads())
            .and_then(|f| f.row_layout());
        if let (Some(frag), Some(rows)) = (frag, column(column_value)) {
            let root = classes.find(column_value);
            if rows == frag.rows() && !chosen.contains_key(&root) {
                let entry = found.entry(root).or_insert(Some(frag));
                if *entry != Some(frag) {
                    *entry = None;
                }
            }
        }
    }
    const READS: [&str; 9] = [
        "tile.binary",
        "tile.unary",
        "tile.cmp",
        "tile.cast",
        "tile.select",
        "tile.broadcast",
        "tile.reduce",
        "tile.load_tile",
        "tile.store_tile",
    ];
    let members: Vec<ValueId> = classes.parent.keys().copied().collect();
    for v in members {
        let root = classes.find(v);
        let Some(Some(frag)) = found.get(&root).copied() else {
            continue;
        };
        let fits = column(v) == Some(frag.rows());
        let reads = users
            .get(&v)
            .is_none_or(|ops| ops.iter().all(|&u| READS.contains(&m.op(u).name.as_str())));
        if !fits || !reads {
            found.insert(root, None);
        }
    }
    found
        .into_iter()
        .filter_map(|(root, frag)| frag.map(|f| (root, f)))
        .collect()
}

/// The layouts a test asks for: the result of each op with
/// `test.layout = "mma"` or `"wgmma"` in that fragment layout, whatever
/// the op (the emitter converts between layouts where ops meet).
#[cfg(test)]
pub(crate) fn plan_from_attributes(m: &Module, func: OpId, threads: i64) -> HashMap<ValueId, Layout> {
    let mut out = HashMap::new();
    for op in m.walk_op(func) {
        let Some(kind) = m.attr(op, "test.layout").and_then(Attr::as_str) else {
            continue;
        };
        let Some(&v) = m.results(op).first() else { continue };
        let Some((rows, cols)) = const_2d(m.value_type(v)) else {
            continue;
        };
        let wgmma = |cols| Frag::Wgmma {
            rows,
            cols,
            groups: threads / 128,
        };
        let layout = match kind {
            "wgmma" => Some(Layout::Frag(wgmma(cols))),
            "wgmma_rows" => wgmma(8).row_layout().map(Layout::Rows),
            "mma_rows" => mma_sync_frag(rows, 8, threads, Some([threads / 32, 1]))
                .and_then(Frag::row_layout)
                .map(Layout::Rows),
            _ => mma_sync_frag(rows, cols, threads, None).map(Layout::Frag),
        };
        if let Some(layout) = layout {
            out.insert(v, layout);
        }
    }
    out
}

/// Row and column of slot `i` of thread `t` of `frag`, in integers.
#[cfg(test)]
pub(crate) fn coords_exact(frag: Frag, t: i64, i: i64) -> (i64, i64) {
    frag.coords(&mut Exact, &t, &i)
}

/// The strips plan of a kernel that has no tensor-core fragments: each
/// class of tiles (joined by elementwise ops, whole-tile locals and
/// broadcasts that only add unit dims) that a `tile.load_tile` reads from
/// global memory or a `tile.store_tile` writes there holds runs of 16
/// bytes of the narrowest such global element ([`Layout::Strips`]) — or
/// the longest shorter run of at least two elements that fits — when every
/// member has a constant shape whose element count is a multiple of a run
/// for every thread and whose last dim is whole runs. The tiles of a
/// row kernel then move through global memory in 16-byte accesses, where
/// the blocked layout gives each thread elements a block apart (a 2-byte
/// access each for `bf16`).
pub(crate) fn strips(m: &Module, func: OpId, threads: i64) -> HashMap<ValueId, Layout> {
    let mut classes = Classes::default();
    let mut global: Vec<(ValueId, i64)> = Vec::new();
    let in_global = |v: ValueId| {
        matches!(
            m.value_type(v),
            Type::MemRef {
                space: tessera_ir::MemSpace::Global,
                ..
            }
        )
    };
    for op in m.walk_op(func) {
        let operands = m.operands(op);
        let result = m.results(op).first().copied();
        match (m.op(op).name.as_str(), result) {
            ("tile.store_tile", _) => match operands {
                [value, local, ..] if is_local_tile(m, *local) => classes.union(*value, *local),
                [value, mem, ..] if in_global(*mem) => {
                    global.push((*value, elem_bytes_of(m.value_type(*mem))));
                }
                _ => {}
            },
            ("tile.load_tile", Some(r)) => match operands.first() {
                Some(&l) if is_local_tile(m, l) => classes.union(r, l),
                Some(&mem) if in_global(mem) => global.push((r, elem_bytes_of(m.value_type(mem)))),
                _ => {}
            },
            ("tile.binary" | "tile.unary" | "tile.cmp" | "tile.cast" | "tile.select" | "tile.broadcast", Some(r))
                if matches!(m.value_type(r), Type::Tensor { .. }) =>
            {
                for &v in operands {
                    if matches!(m.value_type(v), Type::Tensor { .. })
                        && count(m.value_type(v)) == count(m.value_type(r))
                    {
                        classes.union(r, v);
                    }
                }
            }
            _ => {}
        }
    }
    let mut bytes: HashMap<ValueId, i64> = HashMap::new();
    for (v, b) in global {
        let root = classes.find(v);
        let e = bytes.entry(root).or_insert(b);
        *e = (*e).min(b);
    }
    let members: Vec<ValueId> = classes.parent.keys().copied().collect();
    let mut run: HashMap<ValueId, i64> = bytes
        .into_iter()
        .filter(|&(_, b)| (1..=16).contains(&b))
        .map(|(root, b)| (root, 16 / b))
        .collect();
    // A class whose tiles give a thread fewer elements than a 16-byte run
    // takes the longest shorter run (of at least 2 elements) they hold.
    for &v in &members {
        let root = classes.find(v);
        if let Some(width) = run.get_mut(&root) {
            let dims = m.value_type(v).dims().unwrap_or_default();
            while *width > 1 && !fits_strips(dims, *width, threads) {
                *width /= 2;
            }
        }
    }
    run.retain(|_, width| *width > 1);
    members
        .into_iter()
        .filter_map(|v| {
            let root = classes.find(v);
            run.get(&root).map(|&width| (v, Layout::Strips(width)))
        })
        .collect()
}

/// Bytes of one element of a memref or tile type (0 when unknown).
fn elem_bytes_of(ty: &Type) -> i64 {
    ty.elem().map_or(0, |e| match e {
        ScalarType::I1 => 0,
        e => i64::from(e.bits()) / 8,
    })
}

/// The constant element count of a tile or memref type.
fn count(ty: &Type) -> Option<i64> {
    ty.dims()?.iter().map(|d| d.as_const()).product()
}

/// Whether a tile of `dims` can be held in runs of `width`: a constant
/// shape whose last dim is whole runs and whose element count gives every
/// one of `threads` threads the same whole number of runs.
pub(crate) fn fits_strips(dims: &[DimExpr], width: i64, threads: i64) -> bool {
    let n: Option<i64> = dims.iter().map(DimExpr::as_const).product();
    match (n, dims.last().and_then(DimExpr::as_const)) {
        (Some(n), Some(last)) => width > 1 && last % width == 0 && n % (width * threads) == 0,
        _ => false,
    }
}

/// Union-find over values.
#[derive(Default)]
struct Classes {
    parent: HashMap<ValueId, ValueId>,
}

impl Classes {
    fn find(&mut self, v: ValueId) -> ValueId {
        let p = *self.parent.entry(v).or_insert(v);
        if p == v {
            return v;
        }
        let root = self.find(p);
        self.parent.insert(v, root);
        root
    }

    fn union(&mut self, a: ValueId, b: ValueId) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent.insert(rb, ra);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn coords(frag: Frag, t: i64, i: i64) -> (i64, i64) {
        frag.coords(&mut Exact, &t, &i)
    }

    /// A thread's slots are at fixed offsets from its first element.
    fn assert_separable(frag: Frag) {
        for t in 0..frag.threads() {
            let (r0, c0) = coords(frag, t, 0);
            for i in 0..frag.per_thread() {
                let (dr, dc) = coords(frag, 0, i);
                assert_eq!(coords(frag, t, i), (r0 + dr, c0 + dc), "{frag:?}: thread {t}, slot {i}");
            }
        }
    }

    /// Every element of the tile is held by exactly one (thread, slot).
    fn assert_bijection(frag: Frag) {
        let mut seen = HashSet::new();
        for t in 0..frag.threads() {
            for i in 0..frag.per_thread() {
                let (r, c) = coords(frag, t, i);
                assert!(
                    r >= 0 && r < frag.rows() && c >= 0 && c < frag.cols(),
                    "{frag:?}: ({r}, {c})"
                );
                assert!(seen.insert((r, c)), "{frag:?}: ({r}, {c}) held twice");
            }
        }
        assert_eq!(seen.len() as i64, frag.rows() * frag.cols(), "{frag:?}");
    }

    #[test]
    fn fragment_layouts_cover_their_tiles_exactly_once() {
        for (rows, cols, threads) in [
            (16, 8, 32),
            (128, 128, 128),
            (128, 128, 256),
            (128, 64, 128),
            (64, 256, 256),
            (32, 16, 64),
        ] {
            assert_bijection(mma_sync_frag(rows, cols, threads, None).expect("a warp grid"));
        }
        for (rows, cols, groups) in [(64, 8, 1), (64, 128, 1), (128, 128, 1), (128, 128, 2), (256, 64, 2)] {
            assert_bijection(Frag::Wgmma { rows, cols, groups });
        }
    }

    #[test]
    fn slots_are_constant_offsets_from_a_threads_first_element() {
        for (rows, cols, threads, hint) in [(128, 128, 256, Some([2, 4])), (64, 256, 256, None), (32, 16, 64, None)] {
            assert_separable(mma_sync_frag(rows, cols, threads, hint).expect("a warp grid"));
        }
        for (rows, cols, groups) in [(64, 128, 1), (128, 128, 2), (256, 64, 2)] {
            assert_separable(Frag::Wgmma { rows, cols, groups });
        }
    }

    /// One warp, one m16n8 atom: the PTX ISA's table for the accumulators
    /// C/D of `mma.m16n8k16` (9.7.14.5.8).
    #[test]
    fn the_mma_sync_atom_is_the_isa_accumulator_layout() {
        let frag = mma_sync_frag(16, 8, 32, None).expect("one warp");
        for lane in 0..32 {
            let (group_id, in_group) = (lane >> 2, lane % 4);
            for i in 0..4 {
                let row = if i < 2 { group_id } else { group_id + 8 };
                let col = in_group * 2 + (i & 1);
                assert_eq!(coords(frag, lane, i), (row, col), "lane {lane}, c{i}");
            }
        }
    }

    /// One warpgroup, one m64nN instruction: CuTe's `GMMA::CLayout_64xN`,
    /// `((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))` from (thread, value)
    /// to the column-major offset `m + 64·n`.
    #[test]
    fn the_wgmma_block_is_the_isa_accumulator_layout() {
        for n in [8, 64, 128, 256] {
            let frag = Frag::Wgmma {
                rows: 64,
                cols: n,
                groups: 1,
            };
            for t in 0..128 {
                let (t0, t1, t2) = (t % 4, t / 4 % 8, t / 32);
                for v in 0..n / 2 {
                    let (v0, v1, v2) = (v % 2, v / 2 % 2, v / 4);
                    let offset = 128 * t0 + t1 + 16 * t2 + 64 * v0 + 8 * v1 + 512 * v2;
                    assert_eq!(
                        coords(frag, t, v),
                        (offset % 64, offset / 64),
                        "n {n}, thread {t}, d{v}"
                    );
                }
            }
        }
    }

    /// The slots an instruction reads and writes are those `coords` places
    /// in its atom: `mma.sync` atom (p, q) of warp (wr, wc) covers rows
    /// `16·(wr·P + p) …` and columns `8·(wc·Q + q) …`; a `wgmma` on row
    /// block `p` of warpgroup `g` uses the contiguous slots
    /// `p·N/2 … (p + 1)·N/2`.
    #[test]
    fn instruction_slots_match_the_coordinates() {
        let frag = mma_sync_frag(128, 128, 256, Some([2, 4])).expect("2x4 warps");
        let (pm, qn) = frag.atoms();
        assert_eq!((pm, qn), (4, 4));
        for t in 0..256 {
            let (w, lane) = (t / 32, t % 32);
            for p in 0..pm {
                for q in 0..qn {
                    for r in 0..4 {
                        let (row, col) = coords(frag, t, frag.slot(p, q, r));
                        assert_eq!(row / 16, (w / 4) * pm + p);
                        assert_eq!(col / 8, (w % 4) * qn + q);
                        assert_eq!(
                            (row % 16, col % 8),
                            coords(mma_sync_frag(16, 8, 32, None).unwrap(), lane, r)
                        );
                    }
                }
            }
        }
        let frag = Frag::Wgmma {
            rows: 256,
            cols: 64,
            groups: 2,
        };
        for t in 0..256 {
            for p in 0..frag.atoms().0 {
                for j in 0..32 {
                    let (row, _) = coords(frag, t, p * 32 + j);
                    assert_eq!(row / 64, (t / 128) * 2 + p, "thread {t}, block {p}, d{j}");
                    assert_eq!(row % 64 / 16, t / 32 % 4);
                }
            }
        }
    }

    /// Tiles in fragment layouts run through the JIT: loads and stores of
    /// global memory, a whole-tile local, a product whose accumulator and
    /// result are in different fragment layouts, elementwise ops on
    /// operands in three layouts, and a softmax of a fragment tile — every
    /// element lands where the blocked code would put it.
    #[test]
    fn fragment_layouts_compute_what_blocked_tiles_do() {
        let text = r#"module @m attributes {layer = "target", target = "cpu"} {
  func.func @k(%a: memref<64x32xf32, global>, %b: memref<32x32xf32, global>, %x: memref<64x32xf32, global>, %o: memref<64x32xf32, global>, %p: memref<64x32xf32, global>, %s: memref<64x32xf32, global>) -> () attributes {block = [128], kind = "kernel", layer = "target"} {
    %z = tile.const() {value = 0} : () -> index
    %ta = tile.load_tile(%a, %z, %z) : (memref<64x32xf32, global>, index, index) -> tensor<64x32xf32>
    %tb = tile.load_tile(%b, %z, %z) : (memref<32x32xf32, global>, index, index) -> tensor<32x32xf32>
    %c = tile.const() {test.layout = "mma", value = 0.5} : () -> tensor<64x32xf32>
    %acc = tile.local() {test.layout = "mma"} : () -> memref<64x32xf32, local>
    tile.store_tile(%c, %acc, %z, %z) : (tensor<64x32xf32>, memref<64x32xf32, local>, index, index) -> ()
    %c2 = tile.load_tile(%acc, %z, %z) {test.layout = "wgmma"} : (memref<64x32xf32, local>, index, index) -> tensor<64x32xf32>
    %d = cpu.mma(%ta, %tb, %c2) {accumulate = f32, test.layout = "mma"} : (tensor<64x32xf32>, tensor<32x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
    %tx = tile.load_tile(%x, %z, %z) {test.layout = "wgmma"} : (memref<64x32xf32, global>, index, index) -> tensor<64x32xf32>
    %e = tile.binary(%d, %tx) {fn = "add"} : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
    tile.store_tile(%e, %o, %z, %z) : (tensor<64x32xf32>, memref<64x32xf32, global>, index, index) -> ()
    %f = tile.binary(%tx, %d) {fn = "mul", test.layout = "mma"} : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
    tile.store_tile(%f, %p, %z, %z) : (tensor<64x32xf32>, memref<64x32xf32, global>, index, index) -> ()
    %sm = tile.softmax(%d) {accumulate = f32, axis = -1} : (tensor<64x32xf32>) -> tensor<64x32xf32>
    tile.store_tile(%sm, %s, %z, %z) : (tensor<64x32xf32>, memref<64x32xf32, global>, index, index) -> ()
    tile.return() : () -> ()
  }
}
"#;
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let (m, k, n) = (64, 32, 32);
        let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
        let b: Vec<f32> = (0..k * n).map(|_| next()).collect();
        let x: Vec<f32> = (0..m * n).map(|_| next()).collect();
        let mut buffers = vec![
            a.clone(),
            b.clone(),
            x.clone(),
            vec![f32::NAN; m * n],
            vec![f32::NAN; m * n],
            vec![f32::NAN; m * n],
        ];
        crate::emit::tests::run(text, 128, &mut buffers);
        let d: Vec<f64> = (0..m * n)
            .map(|e| {
                let (i, j) = (e / n, e % n);
                0.5 + (0..k)
                    .map(|kk| f64::from(a[i * k + kk]) * f64::from(b[kk * n + j]))
                    .sum::<f64>()
            })
            .collect();
        for e in 0..m * n {
            let close = |got: f32, want: f64| (f64::from(got) - want).abs() <= 1e-5 * (1.0 + want.abs());
            let sum = d[e] + f64::from(x[e]);
            assert!(
                close(buffers[3][e], sum),
                "a·b + c + x at {e}: {} vs {sum}",
                buffers[3][e]
            );
            let product = d[e] * f64::from(x[e]);
            assert!(
                close(buffers[4][e], product),
                "x·(a·b + c) at {e}: {} vs {product}",
                buffers[4][e]
            );
            let row = &d[e / n * n..e / n * n + n];
            let max = row.iter().copied().fold(f64::MIN, f64::max);
            let softmax = (d[e] - max).exp() / row.iter().map(|v| (v - max).exp()).sum::<f64>();
            assert!(
                close(buffers[5][e], softmax),
                "softmax at {e}: {} vs {softmax}",
                buffers[5][e]
            );
        }
    }

    /// The online softmax's row statistics in registers: a row max and a
    /// row sum of fragment tiles into columns of per-row values (quad
    /// shuffles), a whole-tile local holding such a column, and broadcasts
    /// of columns back into fragments of two widths; `wgmma` and
    /// `mma.sync` (one warp column) fragments. Every thread of a quad holds
    /// its rows: the stored columns are each row's statistic exactly.
    #[test]
    fn row_statistics_stay_in_registers() {
        for (frag, rows_kind, threads) in [("wgmma", "wgmma_rows", 128), ("mma", "mma_rows", 64)] {
            let text = format!(
                r#"module @m attributes {{layer = "target", target = "cpu"}} {{
  func.func @k(%x: memref<64x32xf32, global>, %o: memref<64x32xf32, global>, %mx: memref<64x1xf32, global>, %sm: memref<64x1xf32, global>, %w: memref<64x16xf32, global>) -> () attributes {{block = [{threads}], kind = "kernel", layer = "target"}} {{
    %z = tile.const() : () -> index
    %tx = tile.load_tile(%x, %z, %z) {{test.layout = "{frag}"}} : (memref<64x32xf32, global>, index, index) -> tensor<64x32xf32>
    %m = tile.reduce(%tx) {{axis = 1, kind = "max", order = "any", test.layout = "{rows_kind}"}} : (tensor<64x32xf32>) -> tensor<64x1xf32>
    %keep = tile.local() {{test.layout = "{rows_kind}"}} : () -> memref<64x1xf32, local>
    tile.store_tile(%m, %keep, %z, %z) : (tensor<64x1xf32>, memref<64x1xf32, local>, index, index) -> ()
    %mb = tile.broadcast(%m) {{test.layout = "{frag}"}} : (tensor<64x1xf32>) -> tensor<64x32xf32>
    %d = tile.binary(%tx, %mb) {{fn = "sub", test.layout = "{frag}"}} : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
    %e = tile.unary(%d) {{fn = "exp", test.layout = "{frag}"}} : (tensor<64x32xf32>) -> tensor<64x32xf32>
    %s = tile.reduce(%e) {{axis = 1, kind = "sum", order = "any", test.layout = "{rows_kind}"}} : (tensor<64x32xf32>) -> tensor<64x1xf32>
    %sb = tile.broadcast(%s) {{test.layout = "{frag}"}} : (tensor<64x1xf32>) -> tensor<64x32xf32>
    %p = tile.binary(%e, %sb) {{fn = "div", test.layout = "{frag}"}} : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
    tile.store_tile(%p, %o, %z, %z) : (tensor<64x32xf32>, memref<64x32xf32, global>, index, index) -> ()
    %back = tile.load_tile(%keep, %z, %z) {{test.layout = "{rows_kind}"}} : (memref<64x1xf32, local>, index, index) -> tensor<64x1xf32>
    tile.store_tile(%back, %mx, %z, %z) : (tensor<64x1xf32>, memref<64x1xf32, global>, index, index) -> ()
    tile.store_tile(%s, %sm, %z, %z) : (tensor<64x1xf32>, memref<64x1xf32, global>, index, index) -> ()
    %narrow = tile.broadcast(%back) {{test.layout = "{frag}"}} : (tensor<64x1xf32>) -> tensor<64x16xf32>
    tile.store_tile(%narrow, %w, %z, %z) : (tensor<64x16xf32>, memref<64x16xf32, global>, index, index) -> ()
    tile.return() : () -> ()
  }}
}}
"#
            );
            let x: Vec<f32> = (0..64 * 32).map(|e| ((e * 37 % 101) as f32 - 50.0) / 16.0).collect();
            let mut buffers = vec![
                x.clone(),
                vec![f32::NAN; 64 * 32],
                vec![f32::NAN; 64],
                vec![f32::NAN; 64],
                vec![f32::NAN; 64 * 16],
            ];
            crate::emit::tests::run(&text, threads, &mut buffers);
            for r in 0..64 {
                let row: Vec<f64> = x[r * 32..r * 32 + 32].iter().map(|&v| f64::from(v)).collect();
                let max = row.iter().copied().fold(f64::MIN, f64::max);
                let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
                assert_eq!(f64::from(buffers[2][r]), max, "{frag}: max of row {r}");
                assert!(
                    (f64::from(buffers[3][r]) - sum).abs() <= 1e-5 * sum,
                    "{frag}: sum of row {r}"
                );
                for c in 0..32 {
                    let want = (row[c] - max).exp() / sum;
                    let got = f64::from(buffers[1][r * 32 + c]);
                    assert!(
                        (got - want).abs() <= 1e-6,
                        "{frag}: softmax ({r}, {c}): {got} vs {want}"
                    );
                }
                for c in 0..16 {
                    assert_eq!(f64::from(buffers[4][r * 16 + c]), max, "{frag}: broadcast ({r}, {c})");
                }
            }
        }
    }

    /// Row sums and maxes in tree order of fragment tiles stay in registers
    /// (no staging area) and give the bits of the pairwise tree over each
    /// row's columns: `wgmma` fragments of 32 and 128 columns (4 and 16
    /// atoms) and `mma.sync` ones, values of mixed magnitudes so that the
    /// order shows in the sums' last bits, zeros of both signs in the maxes.
    #[test]
    fn row_reductions_in_tree_order_stay_in_registers() {
        for (frag, rows_kind, threads, cols) in [
            ("wgmma", "wgmma_rows", 128, 32),
            ("wgmma", "wgmma_rows", 128, 128),
            ("mma", "mma_rows", 64, 32),
        ] {
            let text = format!(
                r#"module @m attributes {{layer = "target", target = "cpu"}} {{
  func.func @k(%x: memref<64x{cols}xf32, global>, %mx: memref<64x1xf32, global>, %sm: memref<64x1xf32, global>) -> () attributes {{block = [{threads}], kind = "kernel", layer = "target"}} {{
    %z = tile.const() : () -> index
    %tx = tile.load_tile(%x, %z, %z) {{test.layout = "{frag}"}} : (memref<64x{cols}xf32, global>, index, index) -> tensor<64x{cols}xf32>
    %m = tile.reduce(%tx) {{axis = 1, kind = "max", order = "tree", test.layout = "{rows_kind}"}} : (tensor<64x{cols}xf32>) -> tensor<64x1xf32>
    %s = tile.reduce(%tx) {{axis = 1, kind = "sum", order = "tree", test.layout = "{rows_kind}"}} : (tensor<64x{cols}xf32>) -> tensor<64x1xf32>
    tile.store_tile(%m, %mx, %z, %z) : (tensor<64x1xf32>, memref<64x1xf32, global>, index, index) -> ()
    tile.store_tile(%s, %sm, %z, %z) : (tensor<64x1xf32>, memref<64x1xf32, global>, index, index) -> ()
    tile.return() : () -> ()
  }}
}}
"#
            );
            let module = tessera_ir::parse(&text).expect("the IR parses");
            let cpu = crate::CpuModule::new(&module, &crate::Options::default(), &[]).expect("the kernel compiles");
            assert_eq!(cpu.manifest.kernels[0].shared_bytes, 0, "{frag} {cols}: staged");
            let x: Vec<f32> = (0..64 * cols)
                .map(|e| match e % 7 {
                    0 => ((e * 37 % 101) as f32 - 50.0) * 1000.0,
                    3 if e % 2 == 0 => -0.0,
                    _ => ((e * 53 % 97) as f32 - 48.0) / 1024.0,
                })
                .collect();
            let mut buffers = vec![x.clone(), vec![f32::NAN; 64], vec![f32::NAN; 64]];
            crate::emit::tests::run(&text, threads as u32, &mut buffers);
            for r in 0..64 {
                let mut row = x[r * cols..(r + 1) * cols].to_vec();
                let mut stride = 1;
                let mut maxes = row.clone();
                while stride < cols {
                    for j in (0..cols).step_by(2 * stride) {
                        row[j] += row[j + stride];
                        let (a, b) = (maxes[j], maxes[j + stride]);
                        maxes[j] = if a > b || (a == b && b.is_sign_negative()) {
                            a
                        } else {
                            b
                        };
                    }
                    stride *= 2;
                }
                assert_eq!(
                    buffers[1][r].to_bits(),
                    maxes[0].to_bits(),
                    "{frag} {cols}: max of row {r}"
                );
                assert_eq!(
                    buffers[2][r].to_bits(),
                    row[0].to_bits(),
                    "{frag} {cols}: sum of row {r}"
                );
            }
        }
    }

    #[test]
    fn row_slots_name_the_rows_of_their_slots() {
        for frag in [
            Frag::Wgmma {
                rows: 128,
                cols: 64,
                groups: 2,
            },
            Frag::MmaSync {
                rows: 64,
                cols: 32,
                warps_m: 2,
                warps_n: 1,
            },
        ] {
            let rows = frag.row_layout().expect("rows in quads");
            for t in 0..frag.threads() {
                for i in 0..frag.per_thread() {
                    let (row, _) = coords(frag, t, i);
                    let (column_row, _) = coords(rows, t, rows.slot_of_row(frag.row_slot(i)));
                    assert_eq!(row, column_row, "{frag:?}: thread {t}, slot {i}");
                }
                // The 4 lanes of a quad hold the same rows.
                let quad = t - t % 4;
                for j in 0..rows.row_slots() {
                    assert_eq!(
                        coords(rows, t, rows.slot_of_row(j)).0,
                        coords(rows, quad, rows.slot_of_row(j)).0
                    );
                }
            }
        }
        let split = Frag::MmaSync {
            rows: 64,
            cols: 64,
            warps_m: 2,
            warps_n: 2,
        };
        assert_eq!(split.row_layout(), None, "two warps share each row");
    }

    #[test]
    fn warp_grids_use_every_warp() {
        assert_eq!(
            mma_sync_frag(128, 128, 128, Some([2, 2])),
            Some(Frag::MmaSync {
                rows: 128,
                cols: 128,
                warps_m: 2,
                warps_n: 2
            })
        );
        // A hint that leaves warps idle is not taken.
        assert_eq!(mma_sync_frag(128, 128, 256, Some([2, 2])).map(Frag::threads), Some(256));
        // 16 rows cannot be split over 4 warps along M.
        let f = mma_sync_frag(16, 64, 128, None).expect("a grid");
        assert!(matches!(
            f,
            Frag::MmaSync {
                warps_m: 1,
                warps_n: 4,
                ..
            }
        ));
        assert_eq!(mma_sync_frag(16, 8, 64, None), None);
    }
}
