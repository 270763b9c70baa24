//! Matrix products `a · b + c` of a block: on tensor cores (`mma.sync` with
//! `ldmatrix` on sm_80 and sm_90a, `wgmma` on sm_90a, MFMA on gfx90a and
//! gfx942) or with scalar fused multiply-adds in increasing `k` (the CPU,
//! `*.mma_fma`, and shapes the instructions do not fit).
//!
//! The operands are read from shared memory: a shared buffer as it is, a
//! tile staged row-major. When the kernel's layout plan keeps the
//! accumulator in the instruction's fragments ([`layout`]), `mma.sync` and
//! `wgmma` update those registers in place, every thread taking part;
//! otherwise a tensor-core engine computes the product of a chunk of rows
//! into the staging area (each warp or warpgroup a set of instruction
//! tiles), then every thread adds its own elements of `c`.

pub(crate) mod layout;

use tessera_ir::{Attr, DimExpr, MemSpace, OpId, ScalarType, Type};

use crate::emit::{llvm_ty, Ext, FnEmitter, Pos, Storage, Tile, Val};
use crate::exchange::{stage, staged_bytes, View};
use crate::swizzle::Swizzle;
use crate::target::Abi;
use crate::CodegenError;
use layout::{Frag, Layout};

#[derive(Clone, Copy, PartialEq, Debug)]
enum Engine {
    Scalar,
    MmaSync,
    Wgmma,
    Mfma,
}

pub(crate) fn emit(f: &mut FnEmitter, op: OpId, name: &str) -> Result<(), CodegenError> {
    let c = f.tile(op, 2)?;
    let ty = f.result_type(op)?;
    let Type::Tensor { dims, elem: d_elem } = &ty else {
        return Err(f.err(op, "a matrix product gives a tile"));
    };
    let acc = f
        .m()
        .attr(op, "accumulate")
        .and_then(Attr::as_type)
        .and_then(Type::elem)
        .unwrap_or(*d_elem);
    let planned = f.planned_layout(op);
    if let Layout::Frag(frag) = planned {
        if layout::frag_of(f.m(), op, f.threads) == Some(frag) {
            return in_registers(f, op, frag, &c, dims);
        }
    }
    // `d` is computed element by element from `c`: the same layout.
    let c = f.relayout(&c, planned, op)?;
    // Operands: staged tiles first (their bytes), then views.
    let a_val = f.operand(op, 0)?;
    let b_val = f.operand(op, 1)?;
    let a_bytes = match &a_val {
        Val::Tile(t) => staged_bytes(t),
        _ => 0,
    };
    let a = view_of(f, op, &a_val, 0)?;
    let b = view_of(f, op, &b_val, a_bytes)?;
    let b_bytes = match &b_val {
        Val::Tile(t) => staged_bytes(t),
        _ => 0,
    };
    let transposed = transposed_b(f.m(), op);
    let b_n = if transposed { b.dims.first() } else { b.dims.last() };
    let (m, n, k) = match (a.dims.as_slice(), b_n) {
        ([m, k], Some(n)) => (m.clone(), n.clone(), k.clone()),
        _ => return Err(f.err(op, "matrix products take 2-D operands")),
    };
    let d = f.new_tile(dims, *d_elem, op)?;
    let consts = (
        m.text().parse::<i64>(),
        n.text().parse::<i64>(),
        k.text().parse::<i64>(),
    );
    let fp16 = tessera_ir_tile::sixteen_bit_into_f32(a.elem, b.elem, acc);
    let wgmma_k = wgmma_operands(a.elem, b.elem)
        .filter(|_| acc == ScalarType::F32)
        .map(|o| o.k);
    let engine = match (name, consts.clone()) {
        ("nvptx.mma_sync", (Ok(mm), Ok(nn), Ok(kk))) if fp16 && mm % 16 == 0 && nn % 8 == 0 && kk % 16 == 0 => {
            Engine::MmaSync
        }
        ("nvptx.wgmma", (Ok(mm), Ok(nn), Ok(kk)))
            if wgmma_k.is_some_and(|step| kk % step == 0)
                && mm % 64 == 0
                && nn % 8 == 0
                && nn <= 256
                && f.threads >= 128 =>
        {
            Engine::Wgmma
        }
        ("nvptx.wgmma", (Ok(mm), Ok(nn), Ok(kk))) if fp16 && mm % 16 == 0 && nn % 8 == 0 && kk % 16 == 0 => {
            Engine::MmaSync
        }
        ("amdgpu.mfma", (Ok(mm), Ok(nn), Ok(kk))) if fp16 && mm % 16 == 0 && nn % 16 == 0 && kk % 16 == 0 => {
            Engine::Mfma
        }
        _ => Engine::Scalar,
    };
    if transposed && engine != Engine::Wgmma {
        return Err(f.err(
            op,
            "a `wgmma` with `transpose_b` needs whole warpgroups and a shape the instruction tiles",
        ));
    }
    let (mm, nn, kk) = (consts.0.unwrap_or(0), consts.1.unwrap_or(0), consts.2.unwrap_or(0));
    // MFMA whose staging does not fit in LDS falls back to scalar FMAs.
    let fits =
        engine != Engine::Mfma || f.info().shared_limit as i64 - f.shared_used() - (a_bytes + b_bytes) >= 16 * nn * 4;
    if engine == Engine::Scalar || !fits {
        scalar(f, &a, &b, &c, &d, &k, acc);
    } else {
        tensor_cores(f, op, engine, &a, &b, &c, &d, [mm, nn, kk], a_bytes + b_bytes)?;
    }
    f.set(op, Val::Tile(d));
    Ok(())
}

/// The product with the accumulator in `frag`'s registers: `d` starts as
/// `c`, and each instruction updates its own slots of `d`. Where the
/// instruction cannot read its operands (`ldmatrix` needs shared rows of
/// whole 16-byte lines), the staging engine computes `d` in the same layout.
fn in_registers(f: &mut FnEmitter, op: OpId, frag: Frag, c: &Tile, dims: &[DimExpr]) -> Result<(), CodegenError> {
    let c_in = c;
    let c = f.relayout(c_in, Layout::Frag(frag), op)?;
    // The products may update `c`'s slots themselves where nothing else
    // reads them: a copy relayout just made, or a local's accumulator.
    let in_place = c.storage != c_in.storage || layout::accumulates_in_place(f.m(), op);
    let (m, n) = (frag.rows(), frag.cols());
    let a_operand = f.m().operands(op)[0];
    let k = match f.m().value_type(a_operand).dims() {
        Some([_, k]) => k.as_const().unwrap_or(0),
        _ => 0,
    };
    let a_val = f.operand(op, 0)?;
    let b_val = f.operand(op, 1)?;
    let transposed = transposed_b(f.m(), op);
    if let Some(pa) = register_a(frag, &a_val, k) {
        let d = if in_place {
            c.clone()
        } else {
            f.new_tile(dims, ScalarType::F32, op)?
        };
        if let (Some(cs), Some(ds)) = (Slots::of(&c), Slots::of(&d)) {
            let b = view_of(f, op, &b_val, 0)?;
            let (b, _) = wgmma_b(f, &b, [n, k], transposed, 0).ok_or_else(|| untaken(f, op))?;
            if cs.array != ds.array {
                cs.copy_to(f, &ds);
            }
            wgmma_register_a(f, frag, pa, &b, &ds, k);
            f.set(op, Val::Tile(d));
            return Ok(());
        }
    }
    let a_bytes = match &a_val {
        Val::Tile(t) => staged_bytes(t),
        _ => 0,
    };
    let a = view_of(f, op, &a_val, 0)?;
    let b = view_of(f, op, &b_val, a_bytes)?;
    let used = a_bytes
        + match &b_val {
            Val::Tile(t) => staged_bytes(t),
            _ => 0,
        };
    let registers = match frag {
        Frag::MmaSync { .. } => ldmatrix_reads(f, &a) && ldmatrix_reads(f, &b),
        Frag::Wgmma { .. } => true,
    };
    let d = if registers && in_place && Slots::of(&c).is_some() {
        c.clone()
    } else {
        f.new_tile(dims, ScalarType::F32, op)?
    };
    match (frag, Slots::of(&c), Slots::of(&d)) {
        (_, Some(cs), Some(ds)) if registers => {
            if cs.array != ds.array {
                cs.copy_to(f, &ds);
            }
            match frag {
                Frag::MmaSync { .. } => mma_sync_in_registers(f, frag, &a, &b, &ds, k),
                Frag::Wgmma { .. } => {
                    let (a, b, _) = wgmma_smem(f, &a, &b, [m, n, k], transposed, used).ok_or_else(|| untaken(f, op))?;
                    // A group left running must not read a copy the next
                    // product overwrites, nor write registers something
                    // copies before the next product.
                    let running = !a.copied() && !b.copied() && cs.array == ds.array;
                    let pending = match f.m().attr(op, "pending").and_then(Attr::as_int) {
                        Some(p) if running => p,
                        _ => 0,
                    };
                    wgmma_in_registers(f, frag, &a, &b, &ds, k, pending, zero_operand(f.m(), op, 2));
                }
            }
        }
        (Frag::MmaSync { .. }, ..) => tensor_cores(f, op, Engine::MmaSync, &a, &b, &c, &d, [m, n, k], used)?,
        (Frag::Wgmma { .. }, ..) => tensor_cores(f, op, Engine::Wgmma, &a, &b, &c, &d, [m, n, k], used)?,
    }
    f.set(op, Val::Tile(d));
    Ok(())
}

/// Whether operand `index` of `op` is a `tile.const` 0.
fn zero_operand(m: &tessera_ir::Module, op: OpId, index: usize) -> bool {
    m.operands(op)
        .get(index)
        .and_then(|&v| m.defining_op(v))
        .is_some_and(|d| m.op(d).name == "tile.const" && m.attr(d, "value").and_then(Attr::as_float) == Some(0.0))
}

/// Whether the product `op` multiplies by the transpose of its B (an
/// `NxK` shared buffer that `wgmma` reads K-major).
pub(crate) fn transposed_b(m: &tessera_ir::Module, op: OpId) -> bool {
    m.attr(op, "transpose_b").is_some()
}

/// Whether `ldmatrix` can read fragments of a 16-bit view: in shared
/// memory, rows a whole number of 16-byte lines (every row address of an
/// 8×8 matrix must be 16-byte aligned; views start 16-byte aligned).
fn ldmatrix_reads(f: &FnEmitter, v: &View) -> bool {
    v.ptr_ty == f.info().shared_ptr() && rows_of_chunks(v)
}

/// Whether every 8 elements of a 16-bit view's rows from a column that is
/// a multiple of 8 are one aligned 16-byte unit (views start 16-byte
/// aligned).
fn rows_of_chunks(v: &View) -> bool {
    v.elem.bits() == 16 && rows_of_lines(v)
}

/// Whether the rows of `v` are a whole number of 16-byte lines apart.
fn rows_of_lines(v: &View) -> bool {
    let bytes = i64::from(v.elem.bits()) / 8;
    bytes > 0 && matches!(v.dims.last(), Some(Ext::Const(cols)) if (cols + v.pad) * bytes % 16 == 0)
}

/// The per-thread f32 slots of an accumulator in a fragment layout.
struct Slots {
    array: String,
    count: i64,
}

impl Slots {
    fn of(t: &Tile) -> Option<Slots> {
        match (&t.storage, t.layout, t.elem) {
            (Storage::Private { array, .. }, Layout::Frag(frag), ScalarType::F32) => Some(Slots {
                array: array.clone(),
                count: frag.per_thread(),
            }),
            _ => None,
        }
    }

    /// The address of slot `i`.
    fn at(&self, f: &mut FnEmitter, i: i64) -> String {
        f.val(format!(
            "getelementptr [{} x float], ptr {}, i64 0, i64 {i}",
            self.count, self.array
        ))
    }

    fn copy_to(&self, f: &mut FnEmitter, to: &Slots) {
        for i in 0..self.count {
            let from = self.at(f, i);
            let v = f.val(format!("load float, ptr {from}"));
            let at = to.at(f, i);
            f.line(format!("store float {v}, ptr {at}"));
        }
    }
}

/// `d += a · b` with `mma.sync.m16n8k16`, `d` in its fragments: per k-step
/// of 16, warp `w` loads the A fragments of its atom rows (`ldmatrix.x4`:
/// lanes 0–15 address rows 0–15 at column 0, lanes 16–31 the same rows at
/// column 8, so registers 0–3 are a0a1, a2a3, a4a5, a6a7 of PTX ISA
/// 9.7.14.5.8) and the B fragments of its atom columns (`ldmatrix.x2.trans`
/// of the 16×8 block of B: b0b1 and b2b3), then runs one `mma` per atom.
fn mma_sync_in_registers(f: &mut FnEmitter, frag: Frag, a: &View, b: &View, d: &Slots, k: i64) {
    let Frag::MmaSync { warps_n, .. } = frag else {
        return;
    };
    let sp = f.info().shared_ptr();
    let (rows, cols) = frag.atoms();
    let (l, w) = lane(f, 32);
    let wr = f.val(format!("udiv i64 {w}, {warps_n}"));
    let wc = f.val(format!("urem i64 {w}, {warps_n}"));
    let row0 = f.val(format!("mul i64 {wr}, {}", 16 * rows));
    let col0 = f.val(format!("mul i64 {wc}, {}", 8 * cols));
    let l16 = f.val(format!("urem i64 {l}, 16"));
    let hi = f.val(format!("udiv i64 {l}, 16"));
    let hi8 = f.val(format!("mul i64 {hi}, 8"));
    let arow = f.val(format!("add i64 {row0}, {l16}"));
    let f16 = a.elem == ScalarType::F16;
    let mma = if f16 {
        "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"
    } else {
        "llvm.nvvm.mma.m16n8k16.row.col.bf16"
    };
    // bf16 fragments are i32, f16 ones <2 x half>.
    let reg = |f: &mut FnEmitter, packed: &str, ty: &str, j: usize| -> (&'static str, String) {
        let v = f.val(format!("extractvalue {ty} {packed}, {j}"));
        if f16 {
            ("<2 x half>", f.val(format!("bitcast i32 {v} to <2 x half>")))
        } else {
            ("i32", v)
        }
    };
    f.counted_loop(&(k / 16).to_string(), true, |f, ks| {
        let k0 = f.val(format!("mul i64 {ks}, 16"));
        let acol = f.val(format!("add i64 {k0}, {hi8}"));
        let brow = f.val(format!("add i64 {k0}, {l16}"));
        let x4 = "{ i32, i32, i32, i32 }";
        let x2 = "{ i32, i32 }";
        let mut a_regs = Vec::new();
        for p in 0..rows {
            let row = f.val(format!("add i64 {arow}, {}", 16 * p));
            let at = a.at(f, &row, &acol);
            let packed = f.intrinsic(x4, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16", &[(sp.as_str(), at)]);
            a_regs.push((0..4).map(|j| reg(f, &packed, x4, j)).collect::<Vec<_>>());
        }
        let mut b_regs = Vec::new();
        for q in 0..cols {
            let col = f.val(format!("add i64 {col0}, {}", 8 * q));
            let at = b.at(f, &brow, &col);
            let packed = f.intrinsic(
                x2,
                "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16",
                &[(sp.as_str(), at)],
            );
            b_regs.push((0..2).map(|j| reg(f, &packed, x2, j)).collect::<Vec<_>>());
        }
        for p in 0..rows {
            for q in 0..cols {
                let mut args = a_regs[p as usize].clone();
                args.extend(b_regs[q as usize].iter().cloned());
                let cells: Vec<String> = (0..4).map(|r| d.at(f, frag.slot(p, q, r))).collect();
                for cell in &cells {
                    args.push(("float", f.val(format!("load float, ptr {cell}"))));
                }
                let ret = "{ float, float, float, float }";
                let out = f.intrinsic(ret, mma, &args);
                for (j, cell) in cells.iter().enumerate() {
                    let v = f.val(format!("extractvalue {ret} {out}, {j}"));
                    f.line(format!("store float {v}, ptr {cell}"));
                }
            }
        }
    });
}

/// `d += a · b` with `wgmma.mma_async`, `d` in its fragments, `a` and `b`
/// in shared memory as [`Smem`] describes: warpgroup `g` runs one
/// instruction per K step and 64-row block it owns, on the `N/2` slots of
/// that block, all in one `asm` statement ([`wgmma_group`]) that returns
/// with at most `pending` groups running. With `from_zero`, `d` starts
/// as zeros whatever its slots hold (the product's C is a constant 0).
#[allow(clippy::too_many_arguments)]
fn wgmma_in_registers(
    f: &mut FnEmitter,
    frag: Frag,
    a: &Smem,
    b: &Smem,
    d: &Slots,
    k: i64,
    pending: i64,
    from_zero: bool,
) {
    let Frag::Wgmma { cols: n, .. } = frag else {
        return;
    };
    let ops = &a.ops;
    let (blocks, _) = frag.atoms();
    let tid = f.tid.clone();
    let group = f.val(format!("udiv i64 {tid}, 128"));
    let first = f.val(format!("mul i64 {group}, {blocks}"));
    let mut steps = Vec::new();
    for ks in 0..k / ops.k {
        let db = b.descriptor(f, "0", ks);
        for p in 0..blocks {
            let block = f.val(format!("add i64 {first}, {p}"));
            let row = f.val(format!("mul i64 {block}, 64"));
            let da = a.descriptor(f, &row, ks);
            steps.push((p as usize, AOperand::Shared(da), db.clone()));
        }
    }
    update_slots(f, d, |f, acc| {
        let acc = if from_zero {
            Accumulators::Zero(acc.len())
        } else {
            Accumulators::Values(acc)
        };
        wgmma_group(f, n, ops, b.mn_major(), pending, acc, &steps)
    });
}

/// Runs `group` on the values of `d`'s slots and stores what it gives back
/// into them.
fn update_slots(f: &mut FnEmitter, d: &Slots, group: impl FnOnce(&mut FnEmitter, &[String]) -> Vec<String>) {
    let cells: Vec<String> = (0..d.count).map(|i| d.at(f, i)).collect();
    let acc: Vec<String> = cells
        .iter()
        .map(|cell| f.val(format!("load float, ptr {cell}")))
        .collect();
    let acc = group(f, &acc);
    for (cell, v) in cells.iter().zip(&acc) {
        f.line(format!("store float {v}, ptr {cell}"));
    }
}

/// The 16-bit A of a `wgmma` with accumulator `frag`, when it is held in
/// registers in the fragments of a `wgmma` accumulator of the same rows
/// and warpgroups, `k` columns wide: then it is already in the layout of
/// wgmma's register A (PTX ISA 9.7.15.5.1.1.1; CuTe's `ALayout_64x16` is
/// `CLayout_64x16`), as FlashAttention-3 feeds its probabilities to `p·v`.
fn register_a(frag: Frag, a: &Val, k: i64) -> Option<(String, Frag, ScalarType)> {
    let (Frag::Wgmma { rows, groups, .. }, Val::Tile(t)) = (frag, a) else {
        return None;
    };
    let want = Frag::Wgmma { rows, cols: k, groups };
    match (&t.storage, t.layout) {
        (Storage::Private { array, .. }, Layout::Frag(have))
            if have == want && matches!(t.elem, ScalarType::BF16 | ScalarType::F16) =>
        {
            Some((array.clone(), have, t.elem))
        }
        _ => None,
    }
}

/// The four 32-bit registers of A for K step `ks` (16 columns) of a
/// thread's 64-row block `p`, from the accumulator-layout tile `frag`
/// (`ALayout_64x16` over columns `16ks…16ks+15`): its atoms `2ks` and
/// `2ks + 1` (columns `+0…7`, `+8…15`), rows `g` and `g + 8` of each, two
/// adjacent columns to a register, the lower column in the low half.
fn a_register_slots(frag: Frag, p: i64, ks: i64) -> [[i64; 2]; 4] {
    let slot = |q: i64, r: i64| [frag.slot(p, q, r), frag.slot(p, q, r + 1)];
    [
        slot(2 * ks, 0),
        slot(2 * ks, 2),
        slot(2 * ks + 1, 0),
        slot(2 * ks + 1, 2),
    ]
}

/// `d += a · b` with `wgmma.mma_async` reading A from registers (the
/// 16-bit tile `a` in the fragment layout [`register_a`] accepts) and B
/// from shared memory; the group is waited for before A's registers are
/// free (`wait_group 0`).
fn wgmma_register_a(
    f: &mut FnEmitter,
    frag: Frag,
    (array, a_frag, elem): (String, Frag, ScalarType),
    b: &Smem,
    d: &Slots,
    k: i64,
) {
    let Frag::Wgmma { cols: n, .. } = frag else {
        return;
    };
    let (blocks, _) = frag.atoms();
    let t = llvm_ty(elem);
    let per_thread = a_frag.per_thread();
    let element = |f: &mut FnEmitter, i: i64| {
        let at = f.val(format!(
            "getelementptr [{per_thread} x {t}], ptr {array}, i64 0, i64 {i}"
        ));
        f.val(format!("load {t}, ptr {at}"))
    };
    let mut steps = Vec::new();
    for ks in 0..k / b.ops.k {
        let db = b.descriptor(f, "0", ks);
        for p in 0..blocks {
            let regs = a_register_slots(a_frag, p, ks).map(|[lo, hi]| {
                let (lo, hi) = (element(f, lo), element(f, hi));
                let v = f.val(format!("insertelement <2 x {t}> poison, {t} {lo}, i64 0"));
                let v = f.val(format!("insertelement <2 x {t}> {v}, {t} {hi}, i64 1"));
                f.val(format!("bitcast <2 x {t}> {v} to i32"))
            });
            steps.push((p as usize, AOperand::Registers(regs), db.clone()));
        }
    }
    update_slots(f, d, |f, acc| {
        wgmma_group(f, n, &b.ops, b.mn_major(), 0, Accumulators::Values(acc), &steps)
    });
}

/// Where one `wgmma` instruction reads A.
enum AOperand {
    /// A shared-memory descriptor.
    Shared(String),
    /// Four 32-bit registers of 16-bit pairs ([`a_register_slots`]).
    Registers([String; 4]),
}

/// The operand types of a `wgmma` with f32 accumulators, when it has them.
#[derive(Clone)]
struct WgmmaOperands {
    /// The instruction's operand types, `bf16.bf16` to `e5m2.e5m2`.
    types: String,
    /// Its K: two core matrices.
    k: i64,
    /// The elements of a 16-byte core-matrix row.
    row: i64,
    /// Whether it takes the transpose immediates (16-bit types; 8-bit
    /// operands are K-major only, which the copies make them anyway).
    transposes: bool,
}

fn wgmma_operands(a: ScalarType, b: ScalarType) -> Option<WgmmaOperands> {
    let name = |s: ScalarType| match s {
        ScalarType::BF16 => Some("bf16"),
        ScalarType::F16 => Some("f16"),
        ScalarType::F8E4M3 => Some("e4m3"),
        ScalarType::F8E5M2 => Some("e5m2"),
        _ => None,
    };
    let (na, nb) = (name(a)?, name(b)?);
    let sixteen = a.bits() == 16;
    if a.bits() != b.bits() || sixteen && a != b {
        return None;
    }
    let row = 128 / i64::from(a.bits());
    Some(WgmmaOperands {
        types: format!("{na}.{nb}"),
        k: 2 * row,
        row,
        transposes: sixteen,
    })
}

/// The accumulators a [`wgmma_group`] starts from.
#[derive(Clone, Copy)]
enum Accumulators<'a> {
    /// These values.
    Values(&'a [String]),
    /// This many zeros: each block's first product overwrites its
    /// accumulators (scale-d false), so none is set to 0 first.
    Zero(usize),
}

/// One `asm` statement that runs `wgmma.fence`, then for each step `(p,
/// da, db)` a `wgmma.mma_async.m64n{n}k{K}.f32.{types}` (scale-d true, A
/// K-major, B K-major or, with `b_mn_major`, N-major) adding `A·B`
/// (shared-memory descriptors `da`, `db`)
/// into block `p`'s `n/2` accumulators of `acc` (scale-d false for a
/// block's first step from [`Accumulators::Zero`]), then
/// `wgmma.commit_group` and `wgmma.wait_group pending`; gives the
/// accumulators after (with `pending` 1 they are the operands of a group
/// still running, which only the next product or an
/// `nvptx.wgmma_wait` may touch; ptxas checks that nothing else does and
/// reports it, C7510 and kin, when it must serialize). Being one statement, with the accumulators as tied in/out
/// operands, nothing else can touch them while the products run (the
/// role of CUTLASS's `warpgroup_fence_operand`), and LLVM sees one call
/// with one aggregate result instead of one per instruction.
fn wgmma_group(
    f: &mut FnEmitter,
    n: i64,
    ops: &WgmmaOperands,
    b_mn_major: bool,
    pending: i64,
    acc: Accumulators<'_>,
    steps: &[(usize, AOperand, String)],
) -> Vec<String> {
    let regs = (n / 2) as usize;
    let (acc, zero) = match acc {
        Accumulators::Values(values) => (values.to_vec(), false),
        Accumulators::Zero(count) => (vec!["undef".to_string(); count], true),
    };
    let total = acc.len();
    // Each distinct descriptor (`i64`, "l") or A register (`i32`, "r") is
    // one operand, after the accumulators' outputs and tied inputs.
    let mut inputs: Vec<(&'static str, String)> = Vec::new();
    let operand = |v: &str, ty: &'static str, inputs: &mut Vec<(&'static str, String)>| {
        2 * total
            + inputs.iter().position(|(_, x)| x == v).unwrap_or_else(|| {
                inputs.push((ty, v.to_string()));
                inputs.len() - 1
            })
    };
    let (k, types) = (ops.k, &ops.types);
    // `p` is scale-d true (add to the accumulators); a block's first
    // product from zero takes `z`, false (overwrite them).
    let mut asm =
        String::from("{ .reg .pred p, z; setp.ne.b32 p, 1, 0; setp.ne.b32 z, 0, 0; wgmma.fence.sync.aligned; ");
    let mut started = vec![!zero; total.div_ceil(regs.max(1))];
    for (p, a, db) in steps {
        let scale_d = if std::mem::replace(&mut started[*p], true) {
            "p"
        } else {
            "z"
        };
        let outs: Vec<String> = (p * regs..(p + 1) * regs).map(|j| format!("${j}")).collect();
        // The transpose immediates: A's only when A is in shared memory.
        let (a_text, imm_a) = match a {
            AOperand::Shared(da) => (format!("${}", operand(da, "i64", &mut inputs)), ", 0"),
            AOperand::Registers(r) => {
                let names: Vec<String> = r
                    .iter()
                    .map(|v| format!("${}", operand(v, "i32", &mut inputs)))
                    .collect();
                (format!("{{{}}}", names.join(", ")), "")
            }
        };
        let ob = operand(db, "i64", &mut inputs);
        let transposes = if ops.transposes {
            format!("{imm_a}, {}", u8::from(b_mn_major))
        } else {
            String::new()
        };
        asm += &format!(
            "wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{types} {{{}}}, {a_text}, ${ob}, {scale_d}, 1, 1{transposes}; ",
            outs.join(", ")
        );
    }
    asm += &format!("wgmma.commit_group.sync.aligned; wgmma.wait_group.sync.aligned {pending}; }}");
    let mut constraints: Vec<String> = (0..total).map(|_| "=f".to_string()).collect();
    constraints.extend((0..total).map(|j| j.to_string()));
    constraints.extend(
        inputs
            .iter()
            .map(|(ty, _)| if *ty == "i64" { "l" } else { "r" }.to_string()),
    );
    constraints.push("~{memory}".into());
    let ret = format!("{{ {} }}", vec!["float"; total].join(", "));
    let mut args: Vec<String> = acc.iter().map(|v| format!("float {v}")).collect();
    args.extend(inputs.iter().map(|(ty, v)| format!("{ty} {v}")));
    let r = f.val(format!(
        "call {ret} asm sideeffect \"{asm}\", \"{}\"({})",
        constraints.join(","),
        args.join(", ")
    ));
    (0..total)
        .map(|j| f.val(format!("extractvalue {ret} {r}, {j}")))
        .collect()
}

/// Whether the `nvptx.ldmatrix` `op` can leave its tile in shared memory:
/// it loads a whole shared buffer (offsets 0), and every use is an operand
/// `a` or `b` of an NVIDIA product later in the same block with nothing
/// between them that writes memory. The products then read the buffer
/// where the load would have (the same barrier interval), and no thread
/// holds the tile in registers only to stage it back.
pub(crate) fn read_in_place(m: &tessera_ir::Module, op: OpId) -> bool {
    if m.op(op).name != "nvptx.ldmatrix" {
        return false;
    }
    let operands = m.operands(op);
    let (Some(&buffer), Some(&tile)) = (operands.first(), m.results(op).first()) else {
        return false;
    };
    let zero_offsets = operands[1..].iter().all(|&v| {
        m.defining_op(v)
            .is_some_and(|d| m.op(d).name == "tile.const" && m.attr(d, "value").and_then(Attr::as_int) == Some(0))
    });
    let whole = m.value_type(buffer).dims() == m.value_type(tile).dims();
    let Some(block) = m.parent_block(op) else {
        return false;
    };
    let ops = m.block_ops(block);
    let Some(from) = ops.iter().position(|&o| o == op) else {
        return false;
    };
    let users = m.users(tile);
    zero_offsets
        && whole
        && !users.is_empty()
        && users.iter().all(|&(user, index)| {
            let product = matches!(m.op(user).name.as_str(), "nvptx.mma_sync" | "nvptx.wgmma") && index < 2;
            let to = ops.iter().position(|&o| o == user);
            product
                && to.is_some_and(|to| {
                    to > from
                        && ops[from + 1..to]
                            .iter()
                            .all(|&between| tessera_ir_tile::WRITES_NO_MEMORY.contains(&m.op(between).name.as_str()))
                })
        })
}

fn view_of(f: &mut FnEmitter, op: OpId, v: &Val, offset: i64) -> Result<View, CodegenError> {
    match v {
        Val::Tile(t) => Ok(stage(f, t, offset)),
        Val::Buffer(b) => {
            if b.space == MemSpace::Shared || b.space == MemSpace::Global || f.info().abi == Abi::Cpu {
                let ptr_ty = f.buffer_ptr_ty(b);
                Ok(View {
                    base: b.base.clone(),
                    ptr_ty,
                    elem: b.elem,
                    dims: b.dims.clone(),
                    pad: b.pad,
                    swizzle: b.swizzle,
                })
            } else {
                Err(f.err(op, "matrix-product operands are tiles or shared buffers"))
            }
        }
        _ => Err(f.err(op, "matrix-product operands are tiles or shared buffers")),
    }
}

/// `d = c + Σ_k a·b` per element, with fused multiply-adds in `acc`,
/// `k` increasing. A thread whose elements are its own registers walks K
/// once, each step folding `a[row, k]·b[k, col]` into an accumulator per
/// element (the outer product: a value of a row or column its elements
/// share is loaded once a step); a dot product an element, each walking
/// K, kept every element's operands live at once where LLVM unrolled
/// both loops (an f32 tile of symbolic K spilled 32 bytes on sm_80, an
/// i8 one 2860 on sm_90a). Elements in scratch take a dot product each.
fn scalar(f: &mut FnEmitter, a: &View, b: &View, c: &Tile, d: &Tile, k: &Ext, acc: ScalarType) {
    let t = llvm_ty(acc);
    let ddims = d.dims.clone();
    let kt = k.text();
    let (ce, de) = (c.elem, d.elem);
    let Storage::Private { per_thread, .. } = d.storage else {
        f.for_own(d, |f, pos| {
            let (row, col) = f.row_col(&pos.e, &ddims[1]);
            let init = f.load_slot(c, pos);
            let init = f.convert(&init, ce, acc);
            let cell = f.alloca(t);
            f.line(format!("store {t} {init}, ptr {cell}"));
            f.counted_loop(&kt, false, |f, kk| {
                let s = f.val(format!("load {t}, ptr {cell}"));
                let r = multiply_add(f, a, b, (&row, &col), kk, &s, acc);
                f.line(format!("store {t} {r}, ptr {cell}"));
            });
            let r = f.val(format!("load {t}, ptr {cell}"));
            let r = f.convert(&r, acc, de);
            f.store_slot(d, pos, &r);
        });
        return;
    };
    let accs = f.alloca(&format!("[{per_thread} x {t}]"));
    let cell = |f: &mut FnEmitter, pos: &Pos| {
        f.val(format!(
            "getelementptr [{per_thread} x {t}], ptr {accs}, i64 0, i64 {}",
            pos.i
        ))
    };
    f.for_own(d, |f, pos| {
        let init = f.load_slot(c, pos);
        let init = f.convert(&init, ce, acc);
        let at = cell(f, pos);
        f.line(format!("store {t} {init}, ptr {at}"));
    });
    // Each step is the thread's elements' independent multiply-adds: the
    // K walk stays rolled (unrolled into its 16 steps, an i32 product of
    // 64 elements a thread took LLVM three minutes on gfx942, and spilled
    // into the accumulation registers).
    f.rolled_loop(&kt, |f, kk| {
        f.for_own(d, |f, pos| {
            let (row, col) = f.row_col(&pos.e, &ddims[1]);
            let at = cell(f, pos);
            let s = f.val(format!("load {t}, ptr {at}"));
            let r = multiply_add(f, a, b, (&row, &col), kk, &s, acc);
            f.line(format!("store {t} {r}, ptr {at}"));
        });
    });
    f.for_own(d, |f, pos| {
        let at = cell(f, pos);
        let r = f.val(format!("load {t}, ptr {at}"));
        let r = f.convert(&r, acc, de);
        f.store_slot(d, pos, &r);
    });
}

/// `s + a[row, kk]·b[kk, col]` in `acc`: a fused multiply-add of floats.
fn multiply_add(
    f: &mut FnEmitter,
    a: &View,
    b: &View,
    (row, col): (&String, &String),
    kk: &str,
    s: &str,
    acc: ScalarType,
) -> String {
    let t = llvm_ty(acc);
    let pa = a.at(f, row, kk);
    let x = a.load(f, &pa);
    let x = f.convert(&x, a.elem, acc);
    let pb = b.at(f, kk, col);
    let y = b.load(f, &pb);
    let y = f.convert(&y, b.elem, acc);
    if acc.is_float() {
        let suffix = match acc {
            ScalarType::F64 => "f64",
            ScalarType::F16 => "f16",
            ScalarType::BF16 => "bf16",
            _ => "f32",
        };
        f.intrinsic(t, &format!("llvm.fma.{suffix}"), &[(t, x), (t, y), (t, s.to_string())])
    } else {
        let p = f.val(format!("mul {t} {x}, {y}"));
        f.val(format!("add {t} {p}, {s}"))
    }
}

/// The tensor-core engines: the product of `rows` rows at a time into
/// staging (f32, row-major), then `d = c + product` per element.
#[allow(clippy::too_many_arguments)]
fn tensor_cores(
    f: &mut FnEmitter,
    op: OpId,
    engine: Engine,
    a: &View,
    b: &View,
    c: &Tile,
    d: &Tile,
    [m, n, k]: [i64; 3],
    used: i64,
) -> Result<(), CodegenError> {
    // wgmma reads operands through descriptors.
    let (smem, used) = if engine == Engine::Wgmma {
        let (a2, b2, bytes) =
            wgmma_smem(f, a, b, [m, n, k], transposed_b(f.m(), op), used).ok_or_else(|| untaken(f, op))?;
        (Some((a2, b2)), bytes)
    } else {
        (None, used)
    };
    let warps = (f.threads / i64::from(f.info().warp)).max(1);
    let unit = match engine {
        Engine::Wgmma => 64 * (f.threads / 128).max(1),
        _ => 16,
    };
    let budget = f.info().shared_limit as i64 - f.shared_used() - used;
    let mut rows = m;
    while rows > unit && (rows * n * 4 > budget || rows * n * 4 > 64 * 1024) {
        rows /= 2;
    }
    if rows % unit != 0 && engine == Engine::Wgmma {
        rows = unit.min(m);
    }
    if rows * n * 4 > budget {
        return Err(f.err(
            op,
            format!(
                "the matrix product needs {} bytes of shared memory for its staging, more than the target has left",
                rows * n * 4 + used
            ),
        ));
    }
    let p_off = (used + 127) / 128 * 128;
    let chunks = m / rows;
    let (ce, de) = (c.elem, d.elem);
    f.counted_loop(&chunks.to_string(), false, |f, chunk| {
        f.barrier();
        let base = f.staging(p_off + rows * n * 4);
        let sp = f.info().shared_ptr();
        let p = f.val(format!("getelementptr i8, {sp} {base}, i64 {p_off}"));
        let r0 = f.val(format!("mul i64 {chunk}, {rows}"));
        match engine {
            Engine::MmaSync => mma_sync_chunk(f, a, b, &p, &r0, rows, n, k, warps),
            Engine::Wgmma => {
                if let Some((a, b)) = &smem {
                    wgmma_chunk(f, a, b, &p, &r0, rows, n, k);
                }
            }
            Engine::Mfma => mfma_chunk(f, a, b, &p, &r0, rows, n, k, warps),
            Engine::Scalar => unreachable!("handled by `scalar`"),
        }
        f.barrier();
        let lo = f.val(format!("mul i64 {r0}, {n}"));
        let hi = f.val(format!("add i64 {lo}, {}", rows * n));
        f.for_own(d, |f, pos| {
            let ge = f.val(format!("icmp sge i64 {}, {lo}", pos.e));
            let lt = f.val(format!("icmp slt i64 {}, {hi}", pos.e));
            let inside = f.val(format!("and i1 {ge}, {lt}"));
            f.when(&inside, |f| {
                let rel = f.val(format!("sub i64 {}, {lo}", pos.e));
                let pp = f.val(format!("getelementptr float, {sp} {p}, i64 {rel}"));
                let prod = f.val(format!("load float, {sp} {pp}"));
                let cv = f.load_slot(c, pos);
                let cv = f.convert(&cv, ce, ScalarType::F32);
                let s = f.val(format!("fadd float {cv}, {prod}"));
                let s = f.convert(&s, ScalarType::F32, de);
                f.store_slot(d, pos, &s);
            });
        });
    });
    Ok(())
}

/// This thread's lane and warp (wavefront) for warps of `warp` threads.
fn lane(f: &mut FnEmitter, warp: u32) -> (String, String) {
    let tid = f.tid.clone();
    let l = f.val(format!("urem i64 {tid}, {warp}"));
    let w = f.val(format!("udiv i64 {tid}, {warp}"));
    (l, w)
}

/// Spreads `tiles` instruction tiles, `tiles_n` to a row, over `units`
/// warps or waves: unit `unit` takes tiles `unit`, `unit + units`, …;
/// `body` gets each tile's row and column in tiles.
fn for_each_tile(
    f: &mut FnEmitter,
    units: i64,
    unit: &str,
    tiles: i64,
    tiles_n: i64,
    body: impl FnOnce(&mut FnEmitter, &str, &str),
) {
    f.spread(tiles, units, unit, false, |f, t| {
        let tm = f.val(format!("udiv i64 {t}, {tiles_n}"));
        let tn = f.val(format!("urem i64 {t}, {tiles_n}"));
        body(f, &tm, &tn);
    });
}

#[allow(clippy::too_many_arguments)]
fn mma_sync_chunk(f: &mut FnEmitter, a: &View, b: &View, p: &str, r0: &str, rows: i64, n: i64, k: i64, warps: i64) {
    let sp = f.info().shared_ptr();
    let (l, w) = lane(f, 32);
    let tiles_n = n / 8;
    let tiles = (rows / 16) * tiles_n;
    let kind = if a.elem == ScalarType::BF16 { "bf16" } else { "f16" };
    let mma = if kind == "bf16" {
        "llvm.nvvm.mma.m16n8k16.row.col.bf16".to_string()
    } else {
        "llvm.nvvm.mma.m16n8k16.row.col.f32.f32".to_string()
    };
    for_each_tile(f, warps, &w, tiles, tiles_n, |f, tm, tn| {
        let accs: Vec<String> = (0..4).map(|_| f.alloca("float")).collect();
        for cell in &accs {
            f.line(format!("store float 0.0, ptr {cell}"));
        }
        let row_a = f.val(format!("mul i64 {tm}, 16"));
        let row_a = f.val(format!("add i64 {row_a}, {r0}"));
        let l16 = f.val(format!("urem i64 {l}, 16"));
        let hi = f.val(format!("udiv i64 {l}, 16"));
        let hi8 = f.val(format!("mul i64 {hi}, 8"));
        let arow = f.val(format!("add i64 {row_a}, {l16}"));
        let col_b = f.val(format!("mul i64 {tn}, 8"));
        f.counted_loop(&(k / 16).to_string(), false, |f, ks| {
            let k0 = f.val(format!("mul i64 {ks}, 16"));
            let acol = f.val(format!("add i64 {k0}, {hi8}"));
            let pa = a.at(f, &arow, &acol);
            let ra = f.intrinsic(
                "{ i32, i32, i32, i32 }",
                "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16",
                &[(sp.as_str(), pa)],
            );
            let brow = f.val(format!("add i64 {k0}, {l16}"));
            let pb = b.at(f, &brow, &col_b);
            let rb = f.intrinsic(
                "{ i32, i32 }",
                "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16",
                &[(sp.as_str(), pb)],
            );
            let mut args: Vec<(&str, String)> = Vec::new();
            for j in 0..4 {
                args.push(("i32", f.val(format!("extractvalue {{ i32, i32, i32, i32 }} {ra}, {j}"))));
            }
            for j in 0..2 {
                args.push(("i32", f.val(format!("extractvalue {{ i32, i32 }} {rb}, {j}"))));
            }
            if kind == "f16" {
                // f16 fragments are <2 x half>.
                for a in args.iter_mut() {
                    let v = f.val(format!("bitcast i32 {} to <2 x half>", a.1));
                    *a = ("<2 x half>", v);
                }
            }
            for cell in &accs {
                args.push(("float", f.val(format!("load float, ptr {cell}"))));
            }
            let r = f.intrinsic("{ float, float, float, float }", &mma, &args);
            for (j, cell) in accs.iter().enumerate() {
                let v = f.val(format!("extractvalue {{ float, float, float, float }} {r}, {j}"));
                f.line(format!("store float {v}, ptr {cell}"));
            }
        });
        // c0,c1: row lane/4, cols 2·(lane%4)+{0,1}; c2,c3: row + 8.
        let lr = f.val(format!("udiv i64 {l}, 4"));
        let lc = f.val(format!("urem i64 {l}, 4"));
        let lc = f.val(format!("mul i64 {lc}, 2"));
        let prow = f.val(format!("mul i64 {tm}, 16"));
        let prow = f.val(format!("add i64 {prow}, {lr}"));
        let pcol = f.val(format!("add i64 {col_b}, {lc}"));
        for (j, cell) in accs.iter().enumerate() {
            let r = if j >= 2 {
                f.val(format!("add i64 {prow}, 8"))
            } else {
                prow.clone()
            };
            let c = f.val(format!("add i64 {pcol}, {}", j % 2));
            let e = f.val(format!("mul i64 {r}, {n}"));
            let e = f.val(format!("add i64 {e}, {c}"));
            let at = f.val(format!("getelementptr float, {sp} {p}, i64 {e}"));
            let v = f.val(format!("load float, ptr {cell}"));
            f.line(format!("store float {v}, {sp} {at}"));
        }
    });
}

/// Where a `wgmma` reads one operand: shared memory it addresses through
/// matrix descriptors.
struct Smem {
    base: String,
    ops: WgmmaOperands,
    layout: SmemLayout,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum SmemLayout {
    /// The no-swizzle K-major core-matrix copy ([`core_matrix_copies`]):
    /// core matrix `(i, j)` (8 rows `i` along M or N, 16 bytes `j` along
    /// K) at byte `(i·cores + j)·128`.
    Cores { cores: i64 },
    /// A shared buffer with a 128-byte swizzle ([`Swizzle`]), read where it
    /// is: K-major when K runs along its rows (A; 16- or 8-bit elements),
    /// N-major when N does (B; 16-bit elements, for which wgmma takes the
    /// transpose immediate).
    Swizzled { s: Swizzle, k_major: bool },
}

impl Smem {
    /// Whether it is a copy in the staging area (which the next product
    /// overwrites).
    fn copied(&self) -> bool {
        matches!(self.layout, SmemLayout::Cores { .. })
    }

    fn mn_major(&self) -> bool {
        matches!(self.layout, SmemLayout::Swizzled { k_major: false, .. })
    }

    /// The descriptor of the instruction tile whose M (or N) rows start at
    /// `row` (a multiple of 8) and whose K starts at step `ks`.
    fn descriptor(&self, f: &mut FnEmitter, row: &str, ks: i64) -> String {
        let sp = f.info().shared_ptr();
        let (per_row, fixed, lbo, sbo, mode) = descriptor_fields(self.layout, &self.ops, ks);
        let off = f.val(format!("mul i64 {row}, {per_row}"));
        let off = f.val(format!("add i64 {off}, {fixed}"));
        let at = f.val(format!("getelementptr i8, {sp} {}, i64 {off}", self.base));
        descriptor(f, &at, lbo, sbo, mode)
    }
}

/// The error for a wgmma product of operand types it does not take.
fn untaken(f: &FnEmitter, op: OpId) -> CodegenError {
    f.err(op, "wgmma does not take the operand types of this product")
}

/// What a descriptor of `layout` holds for K step `ks`: the tile's start
/// as `row·per_row + fixed` bytes from the operand's base, its leading
/// and stride byte offsets, and its layout type (bits 62–63: 0 no
/// swizzle, 1 the 128-byte swizzle). PTX ISA 9.7.15.5.1.2 gives the
/// canonical layouts, in units of 16-byte `T`: K-major no swizzle
/// `((8,m),(T,2k)):((1T,SBO),(1,LBO))`, K-major 128-byte swizzle
/// `((8,m),(T,2k)):((8T,SBO),(1,T))` (LBO unused), N-major 128-byte
/// swizzle `((T,8,m),(8,k)):((1,T,LBO),(8T,SBO))`.
fn descriptor_fields(layout: SmemLayout, ops: &WgmmaOperands, ks: i64) -> (i64, i64, i64, i64, i64) {
    // Bytes of K one instruction takes: two 16-byte core-matrix rows.
    let step = 32;
    match layout {
        SmemLayout::Cores { cores } => (cores * 16, ks * 2 * 128, 128, cores * 128, 0),
        SmemLayout::Swizzled { s, k_major: true } => {
            let kb = ks * step;
            (s.span, kb / s.span * s.panel_bytes() + kb % s.span, 16, 8 * s.span, 1)
        }
        SmemLayout::Swizzled { s, k_major: false } => (0, ks * ops.k * s.span, s.panel_bytes(), 8 * s.span, 1),
    }
}

/// The operands of a `wgmma` product of `a` (m×k) and `b` (k×n) in shared
/// memory: a 128-byte-swizzled buffer where wgmma can read it (A always,
/// B when its elements are 16-bit and N whole 64-element panels),
/// otherwise copied into the core-matrix layout at `used` bytes of the
/// staging area ([`core_matrix_copies`]); gives the staging bytes used.
/// A buffer read in place is visible to wgmma's async proxy already: TMA
/// writes through it, and the lowering puts `fence_proxy_async` and a
/// barrier before a product of a buffer threads write. `None` when wgmma
/// does not take the operands' types.
fn wgmma_smem(
    f: &mut FnEmitter,
    a: &View,
    b: &View,
    [m, n, k]: [i64; 3],
    b_transposed: bool,
    used: i64,
) -> Option<(Smem, Smem, i64)> {
    let (a, b, used) = wgmma_operands_smem(f, Some(a), b, [m, n, k], b_transposed, used)?;
    Some((a?, b, used))
}

/// B alone as `wgmma` reads it (A in registers), as [`wgmma_smem`] gives
/// it.
fn wgmma_b(f: &mut FnEmitter, b: &View, [n, k]: [i64; 2], transposed: bool, used: i64) -> Option<(Smem, i64)> {
    let (_, b, used) = wgmma_operands_smem(f, None, b, [0, n, k], transposed, used)?;
    Some((b, used))
}

/// [`wgmma_smem`] of B and, when given, A (B, n×k when `b_transposed`,
/// read K-major as A is).
fn wgmma_operands_smem(
    f: &mut FnEmitter,
    a: Option<&View>,
    b: &View,
    [m, n, k]: [i64; 3],
    b_transposed: bool,
    used: i64,
) -> Option<(Option<Smem>, Smem, i64)> {
    use SmemLayout::Swizzled;
    let ops = wgmma_operands(a.map_or(b.elem, |a| a.elem), b.elem)?;
    let swizzled = |v: &View| v.swizzle.filter(|s| s.span == 128 && v.ptr_ty == f.info().shared_ptr());
    let a_in_place = a
        .and_then(swizzled)
        .filter(|_| m % 64 == 0)
        .map(|s| Swizzled { s, k_major: true });
    // An N-major B needs the transpose immediate (16-bit elements) and
    // whole 64-element panels.
    let b_fits = if b_transposed {
        n % 8 == 0
    } else {
        ops.transposes && n % 64 == 0
    };
    let b_in_place = swizzled(b).filter(|_| b_fits).map(|s| Swizzled {
        s,
        k_major: b_transposed,
    });
    let which = [a.is_some() && a_in_place.is_none(), b_in_place.is_none()];
    let (a2, b2, bytes) = match which {
        [false, false] => (a.cloned(), b.clone(), used),
        _ => {
            let (a2, b2, bytes) = core_matrix_copies(f, a.unwrap_or(b), b, [m, n, k], which, b_transposed, used);
            (a.map(|_| a2), b2, bytes)
        }
    };
    let cores = k / ops.row;
    let smem = |v: View, layout: Option<SmemLayout>| Smem {
        base: v.base,
        ops: ops.clone(),
        layout: layout.unwrap_or(SmemLayout::Cores { cores }),
    };
    Some((a2.map(|a2| smem(a2, a_in_place)), smem(b2, b_in_place), bytes))
}

/// Copies `a` (m×k) and `b` (k×n), those `which` says, into wgmma's
/// K-major core-matrix layout without swizzle: core matrices of 8 rows of
/// 16 bytes (`e` = 8 elements of 16 bits, or 16 of 8 bits, along K), core
/// `(i, j)` (i along M or N, j along K) at `(i·k/e + j)·128`. B is stored
/// transposed (n×k). This is CuTe's canonical K-major `INTERLEAVE` layout
/// `((8,m),(T,2)):((1T,SBO),(1,LBO))` with LBO = 128 bytes (the next core
/// matrix along K) and SBO = `k/e·128` bytes (the next 8 rows), which
/// [`descriptor_fields`] encodes; gives the views to read (an operand not
/// copied as it was) and the staging bytes used.
///
/// A thread moves one core-matrix row at a time: the `e` elements of row
/// `r` at K `e·j…e·j+e-1`, one 16-byte store. It reads them with one
/// 16-byte load where they are adjacent in the source ([`rows_of_lines`]:
/// A's rows), else one element at a time. B, whose K runs down its
/// columns, is transposed in blocks instead: 16-bit elements with
/// `ldmatrix.trans` ([`transpose_into_cores`]), 8-bit ones as 4-byte words
/// gathered by byte shuffles ([`transpose_bytes_into_cores`]). A B given
/// transposed (`b_transposed`: n×k, K along its rows) is copied as A is.
fn core_matrix_copies(
    f: &mut FnEmitter,
    a: &View,
    b: &View,
    [m, n, k]: [i64; 3],
    which: [bool; 2],
    b_transposed: bool,
    used: i64,
) -> (View, View, i64) {
    let eb = i64::from(a.elem.bits()) / 8;
    let e = 16 / eb;
    let cores = k / e;
    let a_off = (used + 127) / 128 * 128;
    let a_bytes = if which[0] { m * k * eb } else { 0 };
    let b_off = a_off + a_bytes;
    let total = b_off + if which[1] { n * k * eb } else { 0 };
    f.barrier();
    let base = f.staging(total);
    let sp = f.info().shared_ptr();
    let t = llvm_ty(a.elem);
    let vec = format!("<{e} x {t}>");
    let threads = f.threads;
    let copies = [(a, a_off, m, false), (b, b_off, n, !b_transposed)];
    for (src, off, rows, transposed) in copies.into_iter().zip(which).filter(|(_, w)| *w).map(|(c, _)| c) {
        if transposed && eb == 2 && k % 32 == 0 && rows % 8 == 0 && ldmatrix_reads(f, src) {
            transpose_into_cores(f, src, &base, off, rows, k);
            continue;
        }
        if transposed && eb == 1 && k % 16 == 0 && rows % 4 == 0 && rows_of_words(f, src) {
            transpose_bytes_into_cores(f, src, &base, off, rows, k);
            continue;
        }
        let whole = !transposed && rows_of_lines(src);
        let tid = f.tid.clone();
        f.spread(rows * cores, threads, &tid, false, |f, c| {
            // c = r·k/e + j: row r of core matrix (r/8, j).
            let r = f.val(format!("udiv i64 {c}, {cores}"));
            let j = f.val(format!("urem i64 {c}, {cores}"));
            let k0 = f.val(format!("mul i64 {j}, {e}"));
            let v = if whole {
                let from = src.at(f, &r, &k0);
                f.val(format!("load {vec}, {} {from}, align 16", src.ptr_ty))
            } else {
                let mut v = "poison".to_string();
                for i in 0..e {
                    let kk = f.val(format!("add i64 {k0}, {i}"));
                    let from = if transposed {
                        src.at(f, &kk, &r)
                    } else {
                        src.at(f, &r, &kk)
                    };
                    let e = src.load(f, &from);
                    v = f.val(format!("insertelement {vec} {v}, {t} {e}, i64 {i}"));
                }
                v
            };
            let ci = f.val(format!("udiv i64 {r}, 8"));
            let ri = f.val(format!("urem i64 {r}, 8"));
            let at = core_row(f, &base, off, cores, [&ci, &j, &ri]);
            f.line(format!("store {vec} {v}, {sp} {at}, align 16"));
        });
    }
    // The async proxy (wgmma) reads what the generic proxy wrote.
    f.line("call void asm sideeffect \"fence.proxy.async.shared::cta;\", \"~{memory}\"()");
    f.barrier();
    let mut view = |src: &View, copied: bool, off: i64, rows: i64| {
        if !copied {
            return src.clone();
        }
        View {
            base: f.val(format!("getelementptr i8, {sp} {base}, i64 {off}")),
            ptr_ty: sp.clone(),
            elem: src.elem,
            dims: vec![Ext::Const(rows), Ext::Const(k)],
            pad: 0,
            swizzle: None,
        }
    };
    (view(a, which[0], a_off, m), view(b, which[1], b_off, n), total)
}

/// Row `ri` (16 bytes) of core matrix `(ci, cj)` of the K-major
/// core-matrix copy, `cores` core matrices along K, at byte `off` of `base`.
fn core_row(f: &mut FnEmitter, base: &str, off: i64, cores: i64, [ci, cj, ri]: [&str; 3]) -> String {
    let sp = f.info().shared_ptr();
    let core = f.val(format!("mul i64 {ci}, {cores}"));
    let core = f.val(format!("add i64 {core}, {cj}"));
    let byte = f.val(format!("mul i64 {core}, 128"));
    let row = f.val(format!("mul i64 {ri}, 16"));
    let byte = f.val(format!("add i64 {byte}, {row}"));
    let byte = f.val(format!("add i64 {byte}, {off}"));
    f.val(format!("getelementptr i8, {sp} {base}, i64 {byte}"))
}

/// The (k×rows) shared view `src`, transposed into the (rows×k) K-major
/// core-matrix layout at byte `off` of `base`, an 8×8 block at a time:
/// `ldmatrix.x4.trans` gives each lane its elements of four blocks of `src`
/// transposed (block `i` from rows `kk0 + 8i …` at column `n0`, lanes
/// `8i…8i+7` addressing its rows), and `stmatrix.x4` (sm_90) stores those
/// fragments as rows: row `j` of block `i` lands in row `j` of core matrix
/// `(n0/8, kk0/8 + i)`. Warp `w` takes the block quads `w`, `w + warps`, …
fn transpose_into_cores(f: &mut FnEmitter, src: &View, base: &str, off: i64, rows: i64, k: i64) {
    let sp = f.info().shared_ptr();
    let warps = (f.threads / 32).max(1);
    let (l, w) = lane(f, 32);
    let i = f.val(format!("udiv i64 {l}, 8"));
    let j = f.val(format!("urem i64 {l}, 8"));
    let quads_k = k / 32;
    f.spread(rows / 8 * quads_k, warps, &w, false, |f, q| {
        // q = (n0/8)·quads_k + kq: blocks kk0 = 32·kq + 8i at column n0.
        let nb = f.val(format!("udiv i64 {q}, {quads_k}"));
        let kq = f.val(format!("urem i64 {q}, {quads_k}"));
        let n0 = f.val(format!("mul i64 {nb}, 8"));
        let kb = f.val(format!("mul i64 {kq}, 4"));
        let kb = f.val(format!("add i64 {kb}, {i}"));
        let kk0 = f.val(format!("mul i64 {kb}, 8"));
        let row = f.val(format!("add i64 {kk0}, {j}"));
        let from = src.at(f, &row, &n0);
        let x4 = "{ i32, i32, i32, i32 }";
        let packed = f.intrinsic(
            x4,
            "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16",
            &[(sp.as_str(), from)],
        );
        let regs: Vec<String> = (0..4)
            .map(|r| f.val(format!("extractvalue {x4} {packed}, {r}")))
            .collect();
        let to = core_row(f, base, off, k / 8, [&nb, &kb, &j]);
        let to = f.val(format!("ptrtoint {sp} {to} to i32"));
        f.line(format!(
            "call void asm sideeffect \"stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {{$1, $2, $3, $4}};\", \"r,r,r,r,r,~{{memory}}\"(i32 {to}, i32 {}, i32 {}, i32 {}, i32 {})",
            regs[0], regs[1], regs[2], regs[3]
        ));
    });
}

/// Whether the rows of the 8-bit shared view `v` are whole 4-byte words
/// (4 adjacent elements from a column that is a multiple of 4 are one
/// aligned word; a swizzle moves whole 16-byte units).
fn rows_of_words(f: &FnEmitter, v: &View) -> bool {
    v.ptr_ty == f.info().shared_ptr()
        && v.elem.bits() == 8
        && matches!(v.dims.last(), Some(Ext::Const(cols)) if (cols + v.pad) % 4 == 0)
}

/// The shuffle that puts word `r` (the first 4 bytes of the second
/// operand) at bytes `4r…4r+3` of a 64-byte block, keeping the rest of the
/// block (the first operand).
fn word_into_block(r: i64) -> Vec<i64> {
    (0..64).map(|i| if i / 4 == r { 64 + i % 4 } else { i }).collect()
}

/// Which byte of the 16 words of a 16×4 block (word `r` = the 4 bytes of
/// row `r`) is byte `i` of column `j` transposed: `4i + j`. Column `j` of
/// the block is then one 16-byte core-matrix row, K running along it.
fn column_of_words(j: i64) -> Vec<i64> {
    (0..16).map(|i| 4 * i + j).collect()
}

/// The (k×rows) 8-bit shared view `src`, transposed into the (rows×k)
/// K-major core-matrix layout at byte `off` of `base`, a 16×4 block at a
/// time: a thread loads the block's 16 rows as 4-byte words (K `16c…16c+15`
/// at columns `4q…4q+3`), and each of its 4 columns, gathered with one
/// byte shuffle ([`column_of_words`]), is row `n % 8` of core matrix
/// `(n / 8, c)`, one 16-byte store.
fn transpose_bytes_into_cores(f: &mut FnEmitter, src: &View, base: &str, off: i64, rows: i64, k: i64) {
    let sp = f.info().shared_ptr();
    let cores = k / 16;
    let quads = rows / 4;
    let tid = f.tid.clone();
    let threads = f.threads;
    f.spread(cores * quads, threads, &tid, false, |f, b| {
        // b = c·quads + q: K block c, columns 4q…4q+3.
        let c = f.val(format!("udiv i64 {b}, {quads}"));
        let q = f.val(format!("urem i64 {b}, {quads}"));
        let n0 = f.val(format!("mul i64 {q}, 4"));
        let k0 = f.val(format!("mul i64 {c}, 16"));
        let mut block = "poison".to_string();
        for r in 0..16 {
            let kk = f.val(format!("add i64 {k0}, {r}"));
            let at = src.at(f, &kk, &n0);
            let word = f.val(format!("load <4 x i8>, {sp} {at}, align 4"));
            let wide = f.val(format!(
                "shufflevector <4 x i8> {word}, <4 x i8> poison, <64 x i32> <{}>",
                (0..64)
                    .map(|i| if i < 4 {
                        format!("i32 {i}")
                    } else {
                        "i32 poison".to_string()
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            block = if r == 0 {
                wide
            } else {
                let mask: Vec<String> = word_into_block(r).iter().map(|i| format!("i32 {i}")).collect();
                f.val(format!(
                    "shufflevector <64 x i8> {block}, <64 x i8> {wide}, <64 x i32> <{}>",
                    mask.join(", ")
                ))
            };
        }
        for j in 0..4 {
            let mask: Vec<String> = column_of_words(j).iter().map(|i| format!("i32 {i}")).collect();
            let column = f.val(format!(
                "shufflevector <64 x i8> {block}, <64 x i8> poison, <16 x i32> <{}>",
                mask.join(", ")
            ));
            let n = f.val(format!("add i64 {n0}, {j}"));
            let ci = f.val(format!("udiv i64 {n}, 8"));
            let ri = f.val(format!("urem i64 {n}, 8"));
            let to = core_row(f, base, off, cores, [&ci, &c, &ri]);
            f.line(format!("store <16 x i8> {column}, {sp} {to}, align 16"));
        }
    });
}

/// A wgmma shared-memory descriptor of the tile at `at`: `lbo` and `sbo`
/// (bytes) and layout type `mode` as [`descriptor_fields`] gives them.
fn descriptor(f: &mut FnEmitter, at: &str, lbo: i64, sbo: i64, mode: i64) -> String {
    let sp = f.info().shared_ptr();
    let addr = f.val(format!("ptrtoint {sp} {at} to i64"));
    let addr = f.val(format!("and i64 {addr}, 262143"));
    let addr = f.val(format!("lshr i64 {addr}, 4"));
    let fixed = ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (mode << 62);
    f.val(format!("or i64 {addr}, {fixed}"))
}

#[allow(clippy::too_many_arguments)]
fn wgmma_chunk(f: &mut FnEmitter, a: &Smem, b: &Smem, p: &str, r0: &str, rows: i64, n: i64, k: i64) {
    let sp = f.info().shared_ptr();
    let tid = f.tid.clone();
    let group = f.val(format!("udiv i64 {tid}, 128"));
    let groups = rows / 64;
    let inside = f.val(format!("icmp slt i64 {group}, {groups}"));
    let regs = n / 2;
    let ops = &a.ops;
    f.when(&inside, |f| {
        let row = f.val(format!("mul i64 {group}, 64"));
        let row = f.val(format!("add i64 {row}, {r0}"));
        let mut steps = Vec::new();
        for ks in 0..k / ops.k {
            let da = a.descriptor(f, &row, ks);
            let db = b.descriptor(f, "0", ks);
            steps.push((0, AOperand::Shared(da), db));
        }
        let out = wgmma_group(f, n, ops, b.mn_major(), 0, Accumulators::Zero(regs as usize), &steps);
        let accs: Vec<String> = (0..regs).map(|_| f.alloca("float")).collect();
        for (cell, v) in accs.iter().zip(&out) {
            f.line(format!("store float {v}, ptr {cell}"));
        }
        // d[4j + {0,1}]: row 16·warp + lane/4, cols 8j + 2·(lane%4) + {0,1};
        // d[4j + {2,3}]: the row + 8.
        let tid = f.tid.clone();
        let in_group = f.val(format!("urem i64 {tid}, 128"));
        let warp = f.val(format!("udiv i64 {in_group}, 32"));
        let l = f.val(format!("urem i64 {in_group}, 32"));
        let lr = f.val(format!("udiv i64 {l}, 4"));
        let lc = f.val(format!("urem i64 {l}, 4"));
        let lc = f.val(format!("mul i64 {lc}, 2"));
        let prow = f.val(format!("mul i64 {warp}, 16"));
        let prow = f.val(format!("add i64 {prow}, {lr}"));
        let g64 = f.val(format!("mul i64 {group}, 64"));
        let prow = f.val(format!("add i64 {prow}, {g64}"));
        for (j, cell) in accs.iter().enumerate() {
            let j = j as i64;
            let r = if j % 4 >= 2 {
                f.val(format!("add i64 {prow}, 8"))
            } else {
                prow.clone()
            };
            let c = f.val(format!("add i64 {lc}, {}", 8 * (j / 4) + j % 2));
            let e = f.val(format!("mul i64 {r}, {n}"));
            let e = f.val(format!("add i64 {e}, {c}"));
            let at = f.val(format!("getelementptr float, {sp} {p}, i64 {e}"));
            let v = f.val(format!("load float, ptr {cell}"));
            f.line(format!("store float {v}, {sp} {at}"));
        }
    });
}

#[allow(clippy::too_many_arguments)]
fn mfma_chunk(f: &mut FnEmitter, a: &View, b: &View, p: &str, r0: &str, rows: i64, n: i64, k: i64, waves: i64) {
    let sp = f.info().shared_ptr();
    let (l, w) = lane(f, 64);
    let tiles_n = n / 16;
    let tiles = (rows / 16) * tiles_n;
    let (ety, name) = if a.elem == ScalarType::BF16 {
        ("i16", "llvm.amdgcn.mfma.f32.16x16x16bf16.1k")
    } else {
        ("half", "llvm.amdgcn.mfma.f32.16x16x16f16")
    };
    let vty = format!("<4 x {ety}>");
    for_each_tile(f, waves, &w, tiles, tiles_n, |f, tm, tn| {
        let acc = f.alloca("<4 x float>");
        f.line(format!("store <4 x float> zeroinitializer, ptr {acc}"));
        let l16 = f.val(format!("urem i64 {l}, 16"));
        let kq = f.val(format!("udiv i64 {l}, 16"));
        let kq = f.val(format!("mul i64 {kq}, 4"));
        let row0 = f.val(format!("mul i64 {tm}, 16"));
        let arow = f.val(format!("add i64 {row0}, {r0}"));
        let arow = f.val(format!("add i64 {arow}, {l16}"));
        let bcol = f.val(format!("mul i64 {tn}, 16"));
        let bcol = f.val(format!("add i64 {bcol}, {l16}"));
        f.counted_loop(&(k / 16).to_string(), false, |f, ks| {
            let k0 = f.val(format!("mul i64 {ks}, 16"));
            let k0 = f.val(format!("add i64 {k0}, {kq}"));
            let mut va = "undef".to_string();
            let mut vb = "undef".to_string();
            for j in 0..4 {
                let kk = f.val(format!("add i64 {k0}, {j}"));
                let pa = a.at(f, &arow, &kk);
                let x = a.load(f, &pa);
                let x = if ety == "i16" {
                    f.val(format!("bitcast bfloat {x} to i16"))
                } else {
                    x
                };
                va = f.val(format!("insertelement {vty} {va}, {ety} {x}, i64 {j}"));
                let pb = b.at(f, &kk, &bcol);
                let y = b.load(f, &pb);
                let y = if ety == "i16" {
                    f.val(format!("bitcast bfloat {y} to i16"))
                } else {
                    y
                };
                vb = f.val(format!("insertelement {vty} {vb}, {ety} {y}, i64 {j}"));
            }
            let c = f.val(format!("load <4 x float>, ptr {acc}"));
            let r = f.intrinsic(
                "<4 x float>",
                name,
                &[
                    (vty.as_str(), va),
                    (vty.as_str(), vb),
                    ("<4 x float>", c),
                    ("i32", "0".into()),
                    ("i32", "0".into()),
                    ("i32", "0".into()),
                ],
            );
            f.line(format!("store <4 x float> {r}, ptr {acc}"));
        });
        // d[j]: row 4·(lane/16) + j, col lane % 16.
        let v = f.val(format!("load <4 x float>, ptr {acc}"));
        let col = f.val(format!("mul i64 {tn}, 16"));
        let col = f.val(format!("add i64 {col}, {l16}"));
        for j in 0..4 {
            let r = f.val(format!("add i64 {row0}, {kq}"));
            let r = f.val(format!("add i64 {r}, {j}"));
            let e = f.val(format!("mul i64 {r}, {n}"));
            let e = f.val(format!("add i64 {e}, {col}"));
            let at = f.val(format!("getelementptr float, {sp} {p}, i64 {e}"));
            let x = f.val(format!("extractelement <4 x float> {v}, i64 {j}"));
            f.line(format!("store float {x}, {sp} {at}"));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte a wgmma descriptor addresses for element `(mn, kk)` of its
    /// instruction tile (`mn` along M or N, `kk` along K), from the PTX
    /// ISA's canonical layouts (9.7.15.5.1.2) read directly: 16-byte units
    /// `T`, then the 128-byte swizzle on the address (bits 4–6 XOR-ed with
    /// bits 7–9) in layout type 1. `start` is relative to a 1024-byte
    /// aligned base.
    fn hardware(start: i64, [lbo, sbo, mode]: [i64; 3], k_major: bool, eb: i64, mn: i64, kk: i64) -> i64 {
        let t = 16 / eb;
        let linear = match (mode, k_major) {
            // ((8,m),(T,2k)):((1T,SBO),(1,LBO))
            (0, true) => (mn % 8) * 16 + (mn / 8) * sbo + (kk % t) * eb + (kk / t) * lbo,
            // ((8,m),(T,2k)):((8T,SBO),(1,T))
            (1, true) => (mn % 8) * 128 + (mn / 8) * sbo + kk * eb,
            // ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO))
            (1, false) => (mn % (8 * t)) * eb + (mn / (8 * t)) * lbo + (kk % 8) * 128 + (kk / 8) * sbo,
            other => unreachable!("no canonical layout {other:?} in these tests"),
        };
        let at = start + linear;
        match mode {
            1 => at ^ (((at >> 7) & 7) << 4),
            _ => at,
        }
    }

    /// Checks every element of every instruction tile of an operand of
    /// `rows`×`k` (A) or `k`×`rows` (B, N-major when not `k_major`): the
    /// descriptor addresses the byte `placed(mn, kk)` says the element is at.
    fn check(layout: SmemLayout, elem: ScalarType, rows: i64, k: i64, k_major: bool, placed: impl Fn(i64, i64) -> i64) {
        // A's instruction tiles are 64 rows; B's are all of N.
        let tile = if k_major { 64 } else { rows };
        check_tiles(layout, elem, rows, tile, k, k_major, placed);
    }

    /// [`check`] with instruction tiles of `tile` rows.
    fn check_tiles(
        layout: SmemLayout,
        elem: ScalarType,
        rows: i64,
        tile: i64,
        k: i64,
        k_major: bool,
        placed: impl Fn(i64, i64) -> i64,
    ) {
        let ops = wgmma_operands(elem, elem).expect("a wgmma type");
        let eb = i64::from(elem.bits()) / 8;
        let starts = rows / tile;
        for block in 0..starts {
            for ks in 0..k / ops.k {
                let (per_row, fixed, lbo, sbo, mode) = descriptor_fields(layout, &ops, ks);
                let row0 = block * tile;
                let start = row0 * per_row + fixed;
                for mn in 0..tile {
                    for kk in 0..ops.k {
                        let (r, c) = (row0 + mn, ks * ops.k + kk);
                        assert_eq!(
                            hardware(start, [lbo, sbo, mode], k_major, eb, mn, kk),
                            placed(r, c),
                            "{layout:?}: element ({r}, {c}), K step {ks}"
                        );
                    }
                }
            }
        }
    }

    fn swizzle(rows: i64, cols: i64, elem: ScalarType) -> Swizzle {
        let eb = i64::from(elem.bits()) / 8;
        Swizzle::new(128, &[Ext::Const(rows), Ext::Const(cols)], eb).expect("a valid swizzle")
    }

    #[test]
    fn k_major_operands_read_in_place_from_their_swizzled_buffers() {
        // A (instruction tiles of 64 rows) from one panel (K = 64 bf16,
        // 128 fp8) or two (K = 128 bf16); a transposed B, attention's k
        // tile of N keys × D, as one instruction tile of all N rows.
        for (elem, rows, tile, k) in [
            (ScalarType::BF16, 128, 64, 64),
            (ScalarType::F16, 64, 64, 128),
            (ScalarType::F8E4M3, 128, 64, 128),
            (ScalarType::BF16, 64, 64, 128),
            (ScalarType::BF16, 128, 128, 64),
            (ScalarType::F16, 8, 8, 64),
            (ScalarType::F8E4M3, 64, 64, 128),
        ] {
            let s = swizzle(rows, k, elem);
            let eb = i64::from(elem.bits()) / 8;
            let layout = SmemLayout::Swizzled { s, k_major: true };
            check_tiles(layout, elem, rows, tile, k, true, |r, c| s.offset(r, c * eb));
        }
    }

    #[test]
    fn b_read_in_place_n_major_from_its_swizzled_buffer() {
        for (n, k) in [(256, 64), (64, 32), (128, 128)] {
            let s = swizzle(k, n, ScalarType::BF16);
            let layout = SmemLayout::Swizzled { s, k_major: false };
            // B is k×n: element (n, k) of the instruction tile is row k,
            // column n of the buffer.
            check(layout, ScalarType::BF16, n, k, false, |nn, kk| s.offset(kk, nn * 2));
        }
    }

    /// CuTe's `ALayout_64x16` (`mma_traits_sm90_gmma.hpp`), the register
    /// A of a 16-bit `wgmma`: thread `(t0, t1, t2)` of shape `(4, 8, 4)`,
    /// value `(v0, v1, v2)` of shape `(2, 2, 2)`, strides `(128, 1, 16)` and
    /// `(64, 8, 512)` into the column-major 64×16 tile.
    fn a_layout_64x16(t: i64, v: i64) -> (i64, i64) {
        let linear = 128 * (t % 4) + (t / 4) % 8 + 16 * (t / 32) + 64 * (v % 2) + 8 * ((v / 2) % 2) + 512 * (v / 4);
        (linear % 64, linear / 64)
    }

    #[test]
    fn an_accumulator_fragment_is_the_register_a_of_the_next_product() {
        // P (rows × k, the accumulator layout of q·kᵀ) as the A of p·v:
        // value v of register v / 2 (half v % 2) of K step ks is element
        // ALayout_64x16(t, v) of the thread's warpgroup's 64-row block.
        for (rows, k, groups) in [(64, 64, 1), (128, 64, 2), (128, 128, 1), (256, 32, 2)] {
            let frag = Frag::Wgmma { rows, cols: k, groups };
            let blocks = rows / 64 / groups;
            for t in 0..frag.threads() {
                for p in 0..blocks {
                    for ks in 0..k / 16 {
                        let regs = a_register_slots(frag, p, ks);
                        for v in 0..8 {
                            let slot = regs[(v / 2) as usize][(v % 2) as usize];
                            let (r, c) = layout::coords_exact(frag, t, slot);
                            let (ar, ac) = a_layout_64x16(t % 128, v);
                            let block = (t / 128) * blocks + p;
                            assert_eq!(
                                (r, c),
                                (64 * block + ar, 16 * ks + ac),
                                "{frag:?}: thread {t}, value {v}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// LLVM's `shufflevector`: index `i` below the first operand's length
    /// picks from it, else from the second.
    fn shuffle(a: &[u8], b: &[u8], mask: &[i64]) -> Vec<u8> {
        mask.iter()
            .map(|&i| {
                let i = i as usize;
                if i < a.len() {
                    a[i]
                } else {
                    b[i - a.len()]
                }
            })
            .collect()
    }

    #[test]
    fn a_16x4_byte_block_is_gathered_into_its_columns() {
        // Element (r, c) of the block is the byte 16·c + r, so every byte
        // says where it came from.
        let word = |r: usize| -> Vec<u8> { (0..4).map(|c| (16 * c + r) as u8).collect() };
        let mut padded = word(0);
        padded.resize(64, 0xff);
        let mut block = padded;
        for r in 1..16 {
            let mut wide = word(r);
            wide.resize(64, 0xff);
            block = shuffle(&block, &wide, &word_into_block(r as i64));
        }
        for j in 0..4 {
            let column = shuffle(&block, &[], &column_of_words(j));
            let want: Vec<u8> = (0..16).map(|i| (16 * j + i) as u8).collect();
            assert_eq!(column, want, "column {j}");
        }
    }

    #[test]
    fn core_matrix_copies_are_what_the_descriptors_read() {
        for elem in [ScalarType::BF16, ScalarType::F8E4M3] {
            let eb = i64::from(elem.bits()) / 8;
            let (e, k) = (16 / eb, 64);
            let cores = k / e;
            // Where `core_matrix_copies` stores element (r, kk): row r % 8
            // of core matrix (r / 8, kk / e), at byte kk % e of that row.
            let placed = |r: i64, kk: i64| ((r / 8) * cores + kk / e) * 128 + (r % 8) * 16 + (kk % e) * eb;
            check(SmemLayout::Cores { cores }, elem, 128, k, true, placed);
        }
    }
}
