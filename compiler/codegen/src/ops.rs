//! The ops of Target IR (the `tile` ops that stay block-level plus the
//! `nvptx`, `amdgpu` and `cpu` dialects), each turned into LLVM IR.

use tessera_ir::{Attr, MemSpace, OpId, ScalarType, Type};

use crate::emit::{elem_bytes, float_lit, llvm_ty, Buffer, Ext, FnEmitter, Pos, Storage, Tile, Val};
use crate::mma::layout::{Exact, Frag, Layout};
use crate::swizzle::Swizzle;
use crate::target::Abi;
use crate::CodegenError;

type R = Result<(), CodegenError>;

fn attr_str<'a>(f: &FnEmitter<'_, 'a>, op: OpId, name: &str) -> Option<&'a str> {
    f.m().attr(op, name).and_then(Attr::as_str)
}

fn attr_int(f: &FnEmitter, op: OpId, name: &str) -> Option<i64> {
    f.m().attr(op, name).and_then(Attr::as_int)
}

/// The element type of a result type (scalar, tensor or memref).
fn elem_of(ty: &Type) -> Option<ScalarType> {
    match ty {
        Type::Scalar(s) => Some(*s),
        _ => ty.elem(),
    }
}

pub(crate) fn emit_op(f: &mut FnEmitter, op: OpId, name: &str) -> R {
    // A block id or grid size, on any target: the kernel's own reading
    // (`FnEmitter::grid`), decoded where the launch may fold the grid.
    if let Some((dim, count)) = crate::emit::grid_read(f.m(), op) {
        let v = f.grid(dim, count);
        return set_index(f, op, v);
    }
    match name {
        "tile.const" => constant(f, op),
        "tile.binary" => elementwise(f, op, Elementwise::Binary),
        "tile.unary" => elementwise(f, op, Elementwise::Unary),
        "tile.cmp" => elementwise(f, op, Elementwise::Cmp),
        "tile.cast" => elementwise(f, op, Elementwise::Cast),
        "tile.select" => select(f, op),
        "tile.local" => local(f, op),
        "tile.load" => load(f, op),
        "tile.store" => store(f, op),
        "tile.view" => view(f, op),
        "tile.load_tile" | "nvptx.ldmatrix" => load_tile(f, op),
        "tile.store_tile" => store_tile(f, op),
        "tile.alloc_shared" | "nvptx.alloc_shared" | "amdgpu.alloc_lds" | "cpu.alloc_shared" => alloc_shared(f, op),
        "nvptx.bar_sync" => {
            match (attr_int(f, op, "id").unwrap_or(0), attr_int(f, op, "count")) {
                (0, None) => f.barrier(),
                (id, count) => f.named_barrier(id, count.unwrap_or(f.threads)),
            }
            Ok(())
        }
        "tile.barrier" | "amdgpu.s_barrier" | "cpu.barrier" => {
            f.barrier();
            Ok(())
        }
        "tile.print" => crate::print::emit(f, op),
        "tile.fence" => {
            fence(f, attr_str(f, op, "scope").unwrap_or("device"));
            Ok(())
        }
        "nvptx.sreg" => {
            let reg = attr_str(f, op, "reg").unwrap_or("tid.x");
            let v = match reg {
                "warpid" => {
                    let tid = f.tid.clone();
                    f.val(format!("udiv i64 {tid}, 32"))
                }
                _ => f.sreg(reg),
            };
            set_index(f, op, v)
        }
        "amdgpu.workitem_id" => {
            let dim = attr_int(f, op, "dim").unwrap_or(0) as usize;
            let v = f.amd_id("workitem", dim);
            set_index(f, op, v)
        }
        "amdgpu.workgroup_size" => {
            let dim = attr_int(f, op, "dim").unwrap_or(0) as usize;
            let v = f.amd_size(dim);
            set_index(f, op, v)
        }
        "cpu.thread_id" | "cpu.block_dim" => {
            let dim = attr_int(f, op, "dim").unwrap_or(0) as usize;
            let v = f.cpu_field(if name == "cpu.thread_id" { 0 } else { 2 }, dim);
            set_index(f, op, v)
        }
        "tile.lane_id" | "amdgpu.lane_id" => {
            let warp = f.info().warp;
            let tid = f.tid.clone();
            let v = f.val(format!("urem i64 {tid}, {warp}"));
            set_index(f, op, v)
        }
        "tile.warp_id" => {
            let warp = f.info().warp;
            let tid = f.tid.clone();
            let v = f.val(format!("udiv i64 {tid}, {warp}"));
            set_index(f, op, v)
        }
        "nvptx.shfl_sync" | "cpu.shuffle" | "tile.shuffle" | "amdgpu.ds_bpermute" => shuffle(f, op, name),
        "nvptx.vote_sync" | "cpu.vote" | "tile.vote" | "amdgpu.ballot" => vote(f, op, name),
        "nvptx.atom" | "amdgpu.atomic" | "cpu.atomic" | "tile.atomic" => atomic(f, op),
        "nvptx.cp_async" => cp_async(f, op),
        "nvptx.cp_async_commit" => {
            f.intrinsic("void", "llvm.nvvm.cp.async.commit.group", &[]);
            Ok(())
        }
        "nvptx.cp_async_wait" => {
            let pending = attr_int(f, op, "pending").unwrap_or(0);
            f.intrinsic("void", "llvm.nvvm.cp.async.wait.group", &[("i32", pending.to_string())]);
            Ok(())
        }
        "amdgpu.copy_to_lds" | "cpu.copy" | "tile.async_copy" => copy_tile(f, op),
        "amdgpu.s_waitcnt" | "tile.wait_async" => {
            // Copies into shared memory are synchronous on these paths; the
            // barrier that follows in the IR makes them visible.
            Ok(())
        }
        "nvptx.fence_proxy_async" => {
            f.line("call void asm sideeffect \"fence.proxy.async.shared::cta;\", \"~{memory}\"()");
            Ok(())
        }
        "nvptx.wgmma_wait" => {
            let pending = attr_int(f, op, "pending").unwrap_or(0);
            f.line(format!(
                "call void asm sideeffect \"wgmma.wait_group.sync.aligned {pending};\", \"~{{memory}}\"()"
            ));
            Ok(())
        }
        "nvptx.mbarrier_init"
        | "nvptx.mbarrier_slot"
        | "nvptx.mbarrier_arrive_expect_tx"
        | "nvptx.mbarrier_arrive"
        | "nvptx.mbarrier_try_wait"
        | "nvptx.tma_load" => crate::hopper::emit(f, op, name),
        "nvptx.mma_sync" | "nvptx.mma_fma" | "nvptx.wgmma" | "amdgpu.mfma" | "amdgpu.mma_fma" | "cpu.mma"
        | "tile.mma" => crate::mma::emit(f, op, name),
        "tile.transpose" => crate::exchange::transpose(f, op),
        "tile.reshape" => crate::exchange::reshape(f, op),
        "tile.broadcast" => crate::exchange::broadcast(f, op),
        "tile.reduce" => crate::exchange::reduce(f, op),
        "tile.softmax" => crate::exchange::softmax(f, op),
        "tile.iota" => iota(f, op),
        "tile.rng" => crate::rng::emit(f, op),
        other => Err(f.err(
            op,
            format!("the code generator cannot lower `{other}` yet (see the Limitations of spec/codegen.md)"),
        )),
    }
}

fn set_index(f: &mut FnEmitter, op: OpId, v: String) -> R {
    let s = elem_of(&f.result_type(op)?).unwrap_or(ScalarType::Index);
    let v = f.convert(&v, ScalarType::Index, s);
    f.set(op, Val::Scalar(s, v));
    Ok(())
}

fn constant(f: &mut FnEmitter, op: OpId) -> R {
    let ty = f.result_type(op)?;
    let s = elem_of(&ty).ok_or_else(|| f.err(op, "a constant must be a scalar or a tile"))?;
    let value = f.m().attr(op, "value").cloned().unwrap_or(Attr::Int(0));
    let lit = if s.is_float() {
        float_lit(s, value.as_float().or(value.as_int().map(|i| i as f64)).unwrap_or(0.0))
    } else if s == ScalarType::I1 {
        let b = value.as_bool().or(value.as_int().map(|i| i != 0)).unwrap_or(false);
        if b { "true" } else { "false" }.to_string()
    } else {
        value
            .as_int()
            .or(value.as_float().map(|x| x as i64))
            .unwrap_or(0)
            .to_string()
    };
    match &ty {
        Type::Scalar(_) => {
            f.set(op, Val::Scalar(s, lit));
        }
        Type::Tensor { dims, .. } => {
            let tile = f.new_tile(dims, s, op)?;
            f.for_own(&tile, |f, pos| f.store_slot(&tile, pos, &lit));
            f.set(op, Val::Tile(tile));
        }
        other => return Err(f.err(op, format!("a constant of type `{other}` cannot be generated"))),
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum Elementwise {
    Binary,
    Unary,
    Cmp,
    Cast,
}

/// Applies a scalar function to operands that are scalars or tiles of one
/// shape (a scalar operand broadcasts).
fn elementwise(f: &mut FnEmitter, op: OpId, kind: Elementwise) -> R {
    let ty = f.result_type(op)?;
    let out = elem_of(&ty).ok_or_else(|| f.err(op, "an elementwise op gives scalars or tiles"))?;
    let arity = if matches!(kind, Elementwise::Binary | Elementwise::Cmp) {
        2
    } else {
        1
    };
    let operands: Vec<Val> = (0..arity).map(|i| f.operand(op, i)).collect::<Result<_, _>>()?;
    let fname = attr_str(f, op, "fn")
        .or(attr_str(f, op, "pred"))
        .unwrap_or("")
        .to_string();
    let saturate = f.m().attr(op, "saturate").is_some();
    let bitcast = f.m().attr(op, "bitcast").is_some();
    let approx = f.m().attr(op, "approx").is_some();
    let apply = |f: &mut FnEmitter, args: &[(ScalarType, String)]| -> Result<String, String> {
        match kind {
            Elementwise::Binary => f.binary(&fname, args[0].0, &args[0].1, &args[1].1),
            Elementwise::Unary if approx => f.approx_exp(&fname, args[0].0, &args[0].1),
            Elementwise::Unary => f.unary(&fname, args[0].0, &args[0].1),
            Elementwise::Cmp => Ok(f.cmp(&fname, args[0].0, &args[0].1, &args[1].1)),
            Elementwise::Cast if bitcast => {
                let (from, to) = (llvm_ty(args[0].0), llvm_ty(out));
                Ok(f.val(format!("bitcast {from} {} to {to}", args[0].1)))
            }
            Elementwise::Cast => Ok(f.convert_with(&args[0].1, args[0].0, out, saturate)),
        }
    };
    map_elements(f, op, &ty, out, &operands, apply)
}

/// Runs `apply` on the elements of `operands` (scalars broadcast) and sets
/// `op`'s result: a scalar, or a new tile of `ty`.
fn map_elements(
    f: &mut FnEmitter,
    op: OpId,
    ty: &Type,
    out: ScalarType,
    operands: &[Val],
    apply: impl Fn(&mut FnEmitter, &[(ScalarType, String)]) -> Result<String, String>,
) -> R {
    match ty {
        Type::Scalar(_) => {
            let args = operands
                .iter()
                .map(|v| match v {
                    Val::Scalar(s, x) => Ok((*s, x.clone())),
                    _ => Err(f.err(op, "a scalar result needs scalar operands")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let v = apply(f, &args).map_err(|e| f.err(op, e))?;
            f.set(op, Val::Scalar(out, v));
            Ok(())
        }
        Type::Tensor { dims, .. } => {
            let result = f.new_tile(dims, out, op)?;
            let operands = operands
                .iter()
                .map(|v| match v {
                    Val::Tile(t) => f.relayout(t, result.layout, op).map(Val::Tile),
                    other => Ok(other.clone()),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let mut failure = None;
            f.for_own(&result, |f, pos| {
                let mut args = Vec::new();
                for v in &operands {
                    match v {
                        Val::Scalar(s, x) => args.push((*s, x.clone())),
                        Val::Tile(t) => {
                            let x = f.load_slot(t, pos);
                            args.push((t.elem, x));
                        }
                        _ => {}
                    }
                }
                match apply(f, &args) {
                    Ok(v) => f.store_slot(&result, pos, &v),
                    Err(e) => failure = Some(e),
                }
            });
            if let Some(e) = failure {
                return Err(f.err(op, e));
            }
            f.set(op, Val::Tile(result));
            Ok(())
        }
        other => Err(f.err(op, format!("an elementwise op cannot give `{other}`"))),
    }
}

fn select(f: &mut FnEmitter, op: OpId) -> R {
    let ty = f.result_type(op)?;
    let c = f.operand(op, 0)?;
    let a = f.operand(op, 1)?;
    let b = f.operand(op, 2)?;
    if let (Val::Scalar(_, c), Val::Buffer(x), Val::Buffer(y)) = (&c, &a, &b) {
        let pt = f.buffer_ptr_ty(x);
        let base = f.val(format!("select i1 {c}, {pt} {}, {pt} {}", x.base, y.base));
        f.set(op, Val::Buffer(Buffer { base, ..x.clone() }));
        return Ok(());
    }
    let out = elem_of(&ty).ok_or_else(|| f.err(op, "`tile.select` gives scalars, tiles or memrefs"))?;
    map_elements(f, op, &ty, out, &[c, a, b], |f, args| {
        let t = llvm_ty(args[1].0);
        Ok(f.val(format!("select i1 {}, {t} {}, {t} {}", args[0].1, args[1].1, args[2].1)))
    })
}

fn local(f: &mut FnEmitter, op: OpId) -> R {
    let ty = f.result_type(op)?;
    let Type::MemRef { dims, elem, .. } = &ty else {
        return Err(f.err(op, "`tile.local` gives a memref"));
    };
    let count: Option<i64> = dims.iter().map(|d| d.as_const()).product();
    let Some(count) = count else {
        return Err(f.err(op, "a thread-local buffer needs a constant shape"));
    };
    // A whole-tile local (only read and written as a tile at offset 0) is
    // a distributed tile; any other local is a private array.
    if crate::mma::layout::is_tile_local(f.m(), op) {
        let tile = f.new_tile(dims, *elem, op)?;
        f.set(op, Val::Tile(tile));
        return Ok(());
    }
    let base = f.alloca(&format!("[{} x {}]", count.max(1), llvm_ty(*elem)));
    let exts = dims.iter().map(|d| Ext::Const(d.as_const().unwrap_or(1))).collect();
    f.set(
        op,
        Val::Buffer(Buffer {
            base,
            space: MemSpace::Local,
            dims: exts,
            elem: *elem,
            pad: 0,
            swizzle: None,
        }),
    );
    Ok(())
}

pub(crate) fn indices(f: &mut FnEmitter, op: OpId, from: usize, count: usize) -> Result<Vec<String>, CodegenError> {
    (from..from + count).map(|i| f.index(op, i)).collect()
}

/// Whether the address `at`, of pointer type `pt`, is a multiple of
/// `bytes` (a power of two), as an `i1`: checked when the kernel runs.
fn address_aligned(f: &mut FnEmitter, pt: &str, at: &str, bytes: i64) -> String {
    let address = f.val(format!("ptrtoint {pt} {at} to i64"));
    let low = f.val(format!("and i64 {address}, {}", bytes - 1));
    f.val(format!("icmp eq i64 {low}, 0"))
}

/// The address of element `idx` of `b`. On the CPU every index of a global
/// or shared access is checked against its dim first: an access out of
/// bounds is reported to the runtime (`tessera_cpu_oob`, E1007, at the
/// access's source) and goes to a scratch location instead, so the CPU
/// never reads or writes past a tensor.
fn checked_ptr(f: &mut FnEmitter, b: &Buffer, idx: &[String]) -> String {
    let at = f.element_ptr(b, idx);
    if f.info().abi != Abi::Cpu || b.space == MemSpace::Local || idx.is_empty() {
        return at;
    }
    let ok = reported_in_bounds(f, b, idx);
    f.declare("@tsr_oob_sink = internal global [64 x i8] zeroinitializer, align 64");
    f.val(format!("select i1 {ok}, ptr {at}, ptr @tsr_oob_sink"))
}

/// Whether every index of `idx` is inside its dim of `b`, as an `i1`; an
/// index outside is reported to the runtime (`tessera_cpu_oob`, E1007, at
/// the op's source) first.
fn reported_in_bounds(f: &mut FnEmitter, b: &Buffer, idx: &[String]) -> String {
    let mut ok = "true".to_string();
    for (i, d) in idx.iter().zip(&b.dims) {
        // Unsigned: a negative index is out of bounds too.
        let inside = f.val(format!("icmp ult i64 {i}, {}", d.text()));
        ok = f.val(format!("and i1 {ok}, {inside}"));
    }
    let site = f.site();
    let (inside, outside) = (f.label("inbounds"), f.label("outofbounds"));
    f.cond_br(&ok, &inside, &outside);
    f.start_block(&outside);
    let rank = idx.len();
    let (index, shape) = (
        f.alloca(&format!("[{rank} x i64]")),
        f.alloca(&format!("[{rank} x i64]")),
    );
    for (k, (i, d)) in idx.iter().zip(&b.dims).enumerate() {
        for (array, v) in [(&index, i.clone()), (&shape, d.text())] {
            let slot = f.val(format!("getelementptr [{rank} x i64], ptr {array}, i64 0, i64 {k}"));
            f.line(format!("store i64 {v}, ptr {slot}"));
        }
    }
    f.declare("declare void @tessera_cpu_oob(ptr, ptr, i32, ptr, ptr)");
    let ctx = f.ctx.clone();
    f.line(format!(
        "call void @tessera_cpu_oob(ptr {ctx}, ptr {site}, i32 {rank}, ptr {index}, ptr {shape})"
    ));
    f.br(&inside);
    f.start_block(&inside);
    ok
}

fn load(f: &mut FnEmitter, op: OpId) -> R {
    let b = f.buffer(op, 0)?;
    let n = f.m().operands(op).len() - 1;
    let idx = indices(f, op, 1, n)?;
    let at = checked_ptr(f, &b, &idx);
    let pt = f.buffer_ptr_ty(&b);
    let v = f.val(format!("load {}, {pt} {at}", llvm_ty(b.elem)));
    f.set(op, Val::Scalar(b.elem, v));
    Ok(())
}

fn store(f: &mut FnEmitter, op: OpId) -> R {
    let (s, v) = f.scalar(op, 0)?;
    let b = f.buffer(op, 1)?;
    let n = f.m().operands(op).len() - 2;
    let idx = indices(f, op, 2, n)?;
    let v = f.convert(&v, s, b.elem);
    let at = checked_ptr(f, &b, &idx);
    let pt = f.buffer_ptr_ty(&b);
    f.line(format!("store {} {v}, {pt} {at}", llvm_ty(b.elem)));
    Ok(())
}

/// The slice at fixed leading indices: the same buffer from the address of
/// its first element, with the remaining dims.
fn view(f: &mut FnEmitter, op: OpId) -> R {
    let b = f.buffer(op, 0)?;
    let n = f.m().operands(op).len() - 1;
    if b.swizzle.is_some() && n + 2 > b.dims.len() {
        return Err(f.err(op, "a view of a swizzled buffer keeps its last two dims"));
    }
    let mut idx = indices(f, op, 1, n)?;
    idx.resize(b.dims.len(), "0".to_string());
    let mut base = f.element_ptr(&b, &idx);
    // On the CPU a view whose leading indices are out of bounds (slot 2 of
    // two) is reported, and starts at the buffer's own start instead: it
    // has the extent of the buffer's trailing dims, so what is done through
    // it stays inside the buffer.
    if f.info().abi == Abi::Cpu && n > 0 {
        let ok = reported_in_bounds(f, &b, &idx);
        base = f.val(format!("select i1 {ok}, ptr {base}, ptr {}", b.base));
    }
    let dims = b.dims[n..].to_vec();
    f.set(op, Val::Buffer(Buffer { base, dims, ..b }));
    Ok(())
}

/// Copies tile `src` into a new tile (for loads of whole-tile locals).
fn copy_tile_value(f: &mut FnEmitter, op: OpId, src: &Tile) -> Result<Tile, CodegenError> {
    let ty = f.result_type(op)?;
    let Type::Tensor { dims, elem } = &ty else {
        return Err(f.err(op, "a tile load gives a tile"));
    };
    let dst = f.new_tile(dims, *elem, op)?;
    let src = f.relayout(src, dst.layout, op)?;
    f.for_own(&dst, |f, pos| {
        let v = f.load_slot(&src, pos);
        f.store_slot(&dst, pos, &v);
    });
    Ok(dst)
}

fn load_tile(f: &mut FnEmitter, op: OpId) -> R {
    if let Val::Tile(src) = f.operand(op, 0)? {
        let ty = f.result_type(op)?;
        let same_shape = ty.dims().is_some_and(|d| {
            d.len() == src.dims.len()
                && d.iter()
                    .zip(&src.dims)
                    .all(|(a, b)| a.as_const().is_some() && a.as_const() == b.as_const())
        });
        let shares = crate::mma::layout::load_shares_local(f.m(), op)
            && same_shape
            && ty.elem() == Some(src.elem)
            && f.planned_layout(op) == src.layout;
        let t = if shares { src } else { copy_tile_value(f, op, &src)? };
        f.set(op, Val::Tile(t));
        return Ok(());
    }
    let b = f.buffer(op, 0)?;
    if crate::mma::read_in_place(f.m(), op) {
        // The products that use the tile read the buffer themselves.
        f.set(op, Val::Buffer(b));
        return Ok(());
    }
    let ty = f.result_type(op)?;
    let Type::Tensor { dims, elem } = &ty else {
        return Err(f.err(op, "`tile.load_tile` gives a tile"));
    };
    let offs = indices(f, op, 1, f.m().operands(op).len() - 1)?;
    let tile = f.new_tile(dims, *elem, op)?;
    if let Some(width) = runs_in_memory(&tile, &b) {
        let aligned = runs_aligned(f, op, 0, &tile, width);
        move_runs(f, &b, &tile, &offs, width, aligned, RunMove::Load);
        f.set(op, Val::Tile(tile));
        return Ok(());
    }
    let bp = f.buffer_ptr_ty(&b);
    let tdims = tile.dims.clone();
    f.for_own(&tile, |f, pos| {
        let idx = f.unravel(&pos.e, &tdims);
        let idx = offset_indices(f, &idx, &offs, b.dims.len());
        let v = guarded_load(f, &b, &idx, &bp);
        let v = f.convert(&v, b.elem, *elem);
        f.store_slot(&tile, pos, &v);
    });
    f.set(op, Val::Tile(tile));
    Ok(())
}

/// Tile indices placed at `offs` in a buffer of rank `rank` (a tile of
/// lower rank fills the buffer's last dims).
fn offset_indices(f: &mut FnEmitter, idx: &[String], offs: &[String], rank: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(rank);
    let lead = rank.saturating_sub(idx.len());
    for k in 0..rank {
        let base = offs.get(k).cloned().unwrap_or_else(|| "0".into());
        if k < lead {
            out.push(base);
        } else {
            let i = &idx[k - lead];
            out.push(f.val(format!("add i64 {base}, {i}")));
        }
    }
    out
}

fn store_tile(f: &mut FnEmitter, op: OpId) -> R {
    let v = f.tile(op, 0)?;
    if let Val::Tile(dst) = f.operand(op, 1)? {
        let v = f.relayout(&v, dst.layout, op)?;
        if v.storage == dst.storage {
            // Stored back where it was loaded from or computed in place.
            return Ok(());
        }
        let (ve, de) = (v.elem, dst.elem);
        f.for_own(&dst, |f, pos| {
            let x = f.load_slot(&v, pos);
            let x = f.convert(&x, ve, de);
            f.store_slot(&dst, pos, &x);
        });
        return Ok(());
    }
    let b = f.buffer(op, 1)?;
    let offs = indices(f, op, 2, f.m().operands(op).len() - 2)?;
    if let Some(width) = runs_in_memory(&v, &b) {
        let aligned = runs_aligned(f, op, 1, &v, width);
        move_runs(f, &b, &v, &offs, width, aligned, RunMove::Store);
        return Ok(());
    }
    if let Layout::Frag(frag) = v.layout {
        let m = f.m();
        let even_rows = m
            .value_type(m.operands(op)[1])
            .dims()
            .and_then(<[_]>::last)
            .is_some_and(|cols| f.known.dim(cols) % 2 == 0);
        if even_rows && b.space == MemSpace::Global && b.pad == 0 && b.swizzle.is_none() {
            store_fragment_pairs(f, &b, &v, frag, &offs);
            return Ok(());
        }
    }
    let bp = f.buffer_ptr_ty(&b);
    let vdims = v.dims.clone();
    let (ve, be) = (v.elem, b.elem);
    f.for_own(&v, |f, pos| {
        let idx = f.unravel(&pos.e, &vdims);
        let idx = offset_indices(f, &idx, &offs, b.dims.len());
        let x = f.load_slot(&v, pos);
        let x = f.convert(&x, ve, be);
        guarded_store(f, &b, &idx, &bp, &x);
    });
    Ok(())
}

/// Stores an accumulator fragment tile into global buffer `b` at `offs`,
/// whose rows have an even length (the kernel's constraints say so), two
/// elements at a time: slots `2j` and `2j + 1` of a thread are adjacent
/// columns of one row (`col = 2·threadID_in_group + (i & 1)` in every
/// NVIDIA fragment), so a pair inside the buffer is one vector store
/// (`st.global.v2.f32`, or one 32-bit store of two bf16) with one bounds
/// check for both. Every pair starts at an even element of the buffer, so
/// all are aligned when the first is (checked once, at the buffer's
/// address); a pair at an edge, or in a misaligned buffer, goes element
/// by element. (With rows of any length, the alignment test per row and
/// the branches it adds took `linear_gelu` on sm_90a from 196 registers
/// to 255 and spills.)
fn store_fragment_pairs(f: &mut FnEmitter, b: &Buffer, tile: &Tile, frag: Frag, offs: &[String]) {
    let bp = f.buffer_ptr_ty(b);
    let bytes = elem_bytes(b.elem);
    let (te, be) = (tile.elem, b.elem);
    let tdims = tile.dims.clone();
    let rank = b.dims.len();
    let mut first: Option<(Vec<String>, String)> = None;
    let aligned = address_aligned(f, &bp, &b.base, 2 * bytes);
    f.for_own(tile, |f, pos| {
        let idx = f.unravel(&pos.e, &tdims);
        let idx = offset_indices(f, &idx, offs, rank);
        let x = f.load_slot(tile, pos);
        let x = f.convert(&x, te, be);
        let slot: Option<i64> = pos.i.parse().ok();
        let pairs_next = slot.is_some_and(|i| {
            let (r0, c0) = frag.coords(&mut Exact, &0, &i);
            i % 2 == 0 && frag.coords(&mut Exact, &0, &(i + 1)) == (r0, c0 + 1)
        });
        if pairs_next {
            first = Some((idx, x));
            return;
        }
        let Some((idx0, x0)) = first.take() else {
            guarded_store(f, b, &idx, &bp, &x);
            return;
        };
        let at = f.element_ptr(b, &idx0);
        let whole = match chunk_in_bounds(f, b, &idx0, 2, true) {
            Some(inside) => f.val(format!("and i1 {inside}, {aligned}")),
            None => aligned.clone(),
        };
        f.when(&whole, |f| store_vector(f, b, &at, &[x0.clone(), x.clone()]));
        let split = f.val(format!("xor i1 {whole}, true"));
        f.when(&split, |f| {
            guarded_store(f, b, &idx0, &bp, &x0);
            guarded_store(f, b, &idx, &bp, &x);
        });
    });
}

/// The run length of `tile` when it is held in runs ([`Layout::Strips`])
/// that lie contiguous in global buffer `b` (no padding or swizzle, a
/// rank no higher than the buffer's).
fn runs_in_memory(tile: &Tile, b: &Buffer) -> Option<i64> {
    match (tile.layout, &tile.storage) {
        (Layout::Strips(width), Storage::Private { .. })
            if b.space == MemSpace::Global && b.pad == 0 && b.swizzle.is_none() && tile.dims.len() <= b.dims.len() =>
        {
            Some(width)
        }
        _ => None,
    }
}

/// Whether every run of `tile`, moved to or from the buffer that is
/// operand `buffer` of `op` at the op's offsets, lies wholly inside the
/// buffer's rows or wholly past their end: the kernel's constraints make
/// the rows' length and the column offset multiples of `width`, and the
/// tile's rows are whole runs.
fn runs_aligned(f: &FnEmitter, op: OpId, buffer: usize, tile: &Tile, width: i64) -> bool {
    let m = f.m();
    let operands = m.operands(op);
    let whole_rows = m
        .value_type(operands[buffer])
        .dims()
        .and_then(<[_]>::last)
        .is_some_and(|row| f.known.dim(row) % width == 0);
    let column = operands.len() > buffer + 1 && operands.last().is_some_and(|&col| f.known.divides(width, col));
    whole_rows && column && matches!(tile.dims.last(), Some(Ext::Const(cols)) if cols % width == 0)
}

#[derive(Clone, Copy, PartialEq)]
enum RunMove {
    Load,
    Store,
}

/// Loads `tile` from (or stores it to) global buffer `b` at `offs` one
/// run at a time: a run that lies inside the buffer at an address aligned
/// to its size moves as one vector access (`ld.global.v4` of 16 bytes on
/// NVIDIA GPUs); one at an edge of the buffer, or misaligned, element by
/// element with the bounds checks of the scalar path, or (`aligned`: each
/// run wholly inside the rows or wholly past their end, [`runs_aligned`])
/// with its first element's bounds for all of its elements.
#[allow(clippy::too_many_arguments)]
fn move_runs(f: &mut FnEmitter, b: &Buffer, tile: &Tile, offs: &[String], width: i64, aligned: bool, how: RunMove) {
    let Storage::Private { per_thread, .. } = tile.storage else {
        return;
    };
    let bp = f.buffer_ptr_ty(b);
    let bytes = elem_bytes(b.elem);
    let lane_ty = format!("i{}", bytes * 8);
    let vec_ty = format!("<{width} x {lane_ty}>");
    let bt = llvm_ty(b.elem);
    let (te, be) = (tile.elem, b.elem);
    let tdims = tile.dims.clone();
    let rank = b.dims.len();
    f.counted_loop(&(per_thread / width).to_string(), true, |f, r| {
        let i0 = f.val(format!("mul nuw nsw i64 {r}, {width}"));
        let e0 = f.strip_element(width, r, "0");
        let idx = f.unravel(&e0, &tdims);
        let idx = offset_indices(f, &idx, offs, rank);
        let at = f.element_ptr(b, &idx);
        let on_boundary = address_aligned(f, &bp, &at, width * bytes);
        let run_inside = if aligned {
            in_bounds(f, b, &idx)
        } else {
            chunk_in_bounds(f, b, &idx, width, true)
        };
        let whole = match &run_inside {
            Some(inside) => f.val(format!("and i1 {inside}, {on_boundary}")),
            None => on_boundary,
        };
        let inside = run_inside.filter(|_| aligned);
        let slot = |f: &mut FnEmitter, j: i64| {
            let i = f.val(format!("add nuw nsw i64 {i0}, {j}"));
            let e = f.val(format!("add nuw nsw i64 {e0}, {j}"));
            Pos { e, i }
        };
        let lane_idx = |f: &mut FnEmitter, j: i64| {
            let mut idx = idx.clone();
            if let Some(last) = idx.last_mut() {
                *last = f.val(format!("add i64 {last}, {j}"));
            }
            idx
        };
        let from_lane = |f: &mut FnEmitter, x: &str| {
            if b.elem.is_float() {
                f.val(format!("bitcast {lane_ty} {x} to {bt}"))
            } else {
                x.to_string()
            }
        };
        let split = f.val(format!("xor i1 {whole}, true"));
        match how {
            RunMove::Load => {
                f.when(&whole, |f| {
                    let v = f.val(format!("load {vec_ty}, {bp} {at}, align {}", width * bytes));
                    for j in 0..width {
                        let x = f.val(format!("extractelement {vec_ty} {v}, i64 {j}"));
                        let x = from_lane(f, &x);
                        let x = f.convert(&x, be, te);
                        let pos = slot(f, j);
                        f.store_slot(tile, &pos, &x);
                    }
                });
                f.when(&split, |f| {
                    for j in 0..width {
                        let idx = lane_idx(f, j);
                        let x = match &inside {
                            Some(inside) => load_if(f, b, &idx, &bp, inside),
                            None => guarded_load(f, b, &idx, &bp),
                        };
                        let x = f.convert(&x, be, te);
                        let pos = slot(f, j);
                        f.store_slot(tile, &pos, &x);
                    }
                });
            }
            RunMove::Store => {
                let mut lanes = Vec::with_capacity(width as usize);
                for j in 0..width {
                    let pos = slot(f, j);
                    let x = f.load_slot(tile, &pos);
                    lanes.push(f.convert(&x, te, be));
                }
                f.when(&whole, |f| store_vector(f, b, &at, &lanes));
                f.when(&split, |f| {
                    // One bound for the run, or one for each element.
                    let store = if inside.is_some() { store_at } else { guarded_store };
                    let each = |f: &mut FnEmitter| {
                        for (j, x) in lanes.iter().enumerate() {
                            let idx = lane_idx(f, j as i64);
                            store(f, b, &idx, &bp, x);
                        }
                    };
                    match &inside {
                        Some(inside) => f.when(inside, each),
                        None => each(f),
                    }
                });
            }
        }
    });
}

/// Stores `values` (of `b`'s element type) as one vector at `at`, an
/// address of `b` aligned to the vector's size; the lanes are integers of
/// the element's width (floats bitcast), so bf16 and fp8 elements move as
/// plain bits.
fn store_vector(f: &mut FnEmitter, b: &Buffer, at: &str, values: &[String]) {
    let bytes = elem_bytes(b.elem);
    let lane_ty = format!("i{}", bytes * 8);
    let vec_ty = format!("<{} x {lane_ty}>", values.len());
    let (bt, bp) = (llvm_ty(b.elem), f.buffer_ptr_ty(b));
    let mut v = "poison".to_string();
    for (j, x) in values.iter().enumerate() {
        let x = if b.elem.is_float() {
            f.val(format!("bitcast {bt} {x} to {lane_ty}"))
        } else {
            x.clone()
        };
        v = f.val(format!("insertelement {vec_ty} {v}, {lane_ty} {x}, i64 {j}"));
    }
    f.line(format!(
        "store {vec_ty} {v}, {bp} {at}, align {}",
        values.len() as i64 * bytes
    ));
}

/// Whether `idx` lies inside a global buffer (`None`: nothing to check,
/// the buffer is not global or every index is a constant inside it).
/// Tiles at the edges of a tensor whose dims are not multiples of the tile
/// shape reach past them, whether the dims are known at compile time or
/// only at run time.
fn in_bounds(f: &mut FnEmitter, b: &Buffer, idx: &[String]) -> Option<String> {
    if matches!(b.space, MemSpace::Shared | MemSpace::Local) {
        return None;
    }
    let mut all: Option<String> = None;
    for (i, d) in idx.iter().zip(&b.dims) {
        // A constant dim is checked too: a tile need not divide it (rows
        // 64..127 of a 100-row tensor). A constant index inside it needs
        // no check.
        let n = match d {
            Ext::Const(n) if i.parse::<i64>().is_ok_and(|i| (0..*n).contains(&i)) => continue,
            Ext::Const(n) => n.to_string(),
            Ext::Dyn(n) => n.clone(),
        };
        let ok = f.val(format!("icmp ult i64 {i}, {n}"));
        all = Some(match all {
            Some(a) => f.val(format!("and i1 {a}, {ok}")),
            None => ok,
        });
    }
    all
}

/// `buffer[idx]`, or zero outside the buffer (the address is clamped to
/// its first element, so nothing outside it is read).
fn guarded_load(f: &mut FnEmitter, b: &Buffer, idx: &[String], bp: &str) -> String {
    match in_bounds(f, b, idx) {
        Some(inside) => load_if(f, b, idx, bp, &inside),
        None => {
            let t = llvm_ty(b.elem);
            let at = f.element_ptr(b, idx);
            f.val(format!("load {t}, {bp} {at}"))
        }
    }
}

/// `buffer[idx]` where `inside` (an `i1` that says it lies inside the
/// buffer), else zero; the address is then a zeroed global's, not the
/// buffer's first element, which an empty buffer does not have (a row
/// kernel over rows of no columns read its base and faulted).
fn load_if(f: &mut FnEmitter, b: &Buffer, idx: &[String], bp: &str, inside: &str) -> String {
    let t = llvm_ty(b.elem);
    let at = f.element_ptr(b, idx);
    let sink = f.info().global_as;
    f.declare(&format!(
        "@tsr_zero_sink = internal addrspace({sink}) global [64 x i8] zeroinitializer, align 64"
    ));
    let safe = f.val(format!("select i1 {inside}, {bp} {at}, {bp} @tsr_zero_sink"));
    let v = f.val(format!("load {t}, {bp} {safe}"));
    f.val(format!("select i1 {inside}, {t} {v}, {t} zeroinitializer"))
}

/// Stores `x` at `buffer[idx]` when that lies inside the buffer (nothing
/// outside it is written).
fn guarded_store(f: &mut FnEmitter, b: &Buffer, idx: &[String], bp: &str, x: &str) {
    match in_bounds(f, b, idx) {
        Some(inside) => f.when(&inside, |f| store_at(f, b, idx, bp, x)),
        None => store_at(f, b, idx, bp, x),
    }
}

fn store_at(f: &mut FnEmitter, b: &Buffer, idx: &[String], bp: &str, x: &str) {
    let t = llvm_ty(b.elem);
    let at = f.element_ptr(b, idx);
    f.line(format!("store {t} {x}, {bp} {at}"));
}

/// Whether the `len`-element chunk at `idx` lies inside a global buffer
/// with run-time dims and starts at a chunk-aligned address (the row
/// length is a whole number of chunks, checked unless `whole_rows` says
/// it is known); `None` when nothing needs checking.
fn chunk_in_bounds(f: &mut FnEmitter, b: &Buffer, idx: &[String], len: i64, whole_rows: bool) -> Option<String> {
    let mut last = idx.to_vec();
    if let Some(l) = last.last_mut() {
        *l = f.val(format!("add i64 {l}, {}", len - 1));
    }
    let inside = in_bounds(f, b, &last);
    // Rows that are not whole chunks put the chunks of most rows off their
    // alignment (a constant row of 5 f32 under 16-byte chunks as much as
    // one known only at run time).
    let aligned = match b.dims.last().filter(|_| !whole_rows) {
        Some(Ext::Dyn(cols)) => {
            let rem = f.val(format!("urem i64 {cols}, {len}"));
            Some(f.val(format!("icmp eq i64 {rem}, 0")))
        }
        Some(Ext::Const(cols)) if cols % len != 0 => Some("false".to_string()),
        _ => None,
    };
    match (inside, aligned) {
        (Some(inside), Some(aligned)) => Some(f.val(format!("and i1 {inside}, {aligned}"))),
        (one, other) => one.or(other),
    }
}

fn alloc_shared(f: &mut FnEmitter, op: OpId) -> R {
    let ty = f.result_type(op)?;
    let Type::MemRef { dims, elem, .. } = &ty else {
        return Err(f.err(op, "a shared allocation gives a memref"));
    };
    let pad = tessera_ir_tile::pad_of(&ty, Some((f.m(), op)));
    let consts: Option<Vec<i64>> = dims.iter().map(|d| d.as_const()).collect();
    let Some(consts) = consts else {
        // Sized at the launch: plain, after the constant layout.
        if pad != 0 || tessera_ir_tile::swizzle_of(&ty, Some((f.m(), op))).is_some() {
            return Err(f.err(op, "a shared buffer sized at the launch is neither swizzled nor padded"));
        }
        let bytes = dims
            .iter()
            .fold(tessera_ir::DimExpr::constant(elem_bytes(*elem)), |n, d| n.mul(d));
        let base = f.place_dynamic_shared(bytes);
        let exts = dims.iter().map(|d| f.dim_ext(d, op)).collect::<Result<Vec<_>, _>>()?;
        f.set(
            op,
            Val::Buffer(Buffer {
                base,
                space: MemSpace::Shared,
                dims: exts,
                elem: *elem,
                pad: 0,
                swizzle: None,
            }),
        );
        return Ok(());
    };
    // Elements, rows padded; each element takes whole bytes in memory (so
    // not `buffer_bytes`, which packs sub-byte types).
    let rows: i64 = consts.iter().rev().skip(1).product();
    let count = rows * (consts.last().copied().unwrap_or(1) + pad);
    let consts: Vec<Ext> = consts.into_iter().map(Ext::Const).collect();
    let mut align = attr_int(f, op, "align").unwrap_or(128);
    let swizzle = match tessera_ir_tile::swizzle_of(&ty, Some((f.m(), op))) {
        Some(span) if pad == 0 => {
            let s = Swizzle::new(span, &consts, elem_bytes(*elem)).map_err(|e| f.err(op, e))?;
            align = align.max(s.repeat());
            Some(s)
        }
        Some(_) => return Err(f.err(op, "a shared buffer is swizzled or padded, not both")),
        None => None,
    };
    let base = f.place_shared(count * elem_bytes(*elem), align);
    f.set(
        op,
        Val::Buffer(Buffer {
            base,
            space: MemSpace::Shared,
            dims: consts,
            elem: *elem,
            pad,
            swizzle,
        }),
    );
    Ok(())
}

fn shuffle(f: &mut FnEmitter, op: OpId, name: &str) -> R {
    let (s, v) = f.scalar(op, 0)?;
    let (ls, lane) = f.scalar(op, 1)?;
    let lane = f.convert(&lane, ls, ScalarType::I32);
    let mode = match name {
        "amdgpu.ds_bpermute" => "idx",
        _ => attr_str(f, op, "mode").unwrap_or("idx"),
    };
    let width = attr_int(f, op, "width").unwrap_or(i64::from(f.info().warp));
    let bits = s.bits().max(8);
    if bits > 64 {
        return Err(f.err(op, "shuffles move values of at most 64 bits"));
    }
    // Move the value as 32-bit words.
    let t = llvm_ty(s);
    let as_int = if bits == 64 {
        f.val(format!("bitcast {t} {v} to i64"))
    } else if s.is_float() {
        let i = f.val(format!("bitcast {t} {v} to i{bits}"));
        if bits < 32 {
            f.val(format!("zext i{bits} {i} to i32"))
        } else {
            i
        }
    } else if bits < 32 {
        f.val(format!("zext {t} {v} to i32"))
    } else {
        v.clone()
    };
    let words: Vec<String> = if bits == 64 {
        let lo = f.val(format!("trunc i64 {as_int} to i32"));
        let hi = f.val(format!("lshr i64 {as_int}, 32"));
        let hi = f.val(format!("trunc i64 {hi} to i32"));
        vec![lo, hi]
    } else {
        vec![as_int]
    };
    let mask = attr_int(f, op, "mask").unwrap_or(0xFFFF_FFFF) as u32 as i32;
    let moved: Vec<String> = words
        .iter()
        .map(|w| shuffle_word(f, mask, w, &lane, mode, width))
        .collect();
    let joined = if bits == 64 {
        let lo = f.val(format!("zext i32 {} to i64", moved[0]));
        let hi = f.val(format!("zext i32 {} to i64", moved[1]));
        let hi = f.val(format!("shl i64 {hi}, 32"));
        let w = f.val(format!("or i64 {lo}, {hi}"));
        f.val(format!("bitcast i64 {w} to {t}"))
    } else if bits < 32 && !s.is_float() {
        // An integer or a bool (`i1`, moved in a byte) narrows straight back.
        f.val(format!("trunc i32 {} to {t}", moved[0]))
    } else if bits < 32 {
        let n = f.val(format!("trunc i32 {} to i{bits}", moved[0]));
        f.val(format!("bitcast i{bits} {n} to {t}"))
    } else {
        f.val(format!("bitcast i32 {} to {t}", moved[0]))
    };
    f.set(op, Val::Scalar(s, joined));
    Ok(())
}

/// The 32-bit value `v` (of type `ty`) of the lane whose index is this
/// lane's XOR `lanes`, every lane of the warp taking part.
pub(crate) fn xor_lanes(f: &mut FnEmitter, v: &str, ty: &str, lanes: i64) -> String {
    let w = f.val(format!("bitcast {ty} {v} to i32"));
    let moved = shuffle_word(f, -1, &w, &lanes.to_string(), "xor", i64::from(f.info().warp).min(32));
    f.val(format!("bitcast i32 {moved} to {ty}"))
}

fn shuffle_word(f: &mut FnEmitter, mask: i32, w: &str, lane: &str, mode: &str, width: i64) -> String {
    f.needs_sync = true;
    match f.info().abi {
        Abi::Nvptx => {
            let ptx_mode = match mode {
                "xor" | "bfly" => "bfly",
                "up" => "up",
                "down" => "down",
                _ => "idx",
            };
            let clamp = if ptx_mode == "up" { 0 } else { 0x1f };
            let c = ((32 - width.clamp(1, 32)) << 8) | clamp;
            f.intrinsic(
                "i32",
                &format!("llvm.nvvm.shfl.sync.{ptx_mode}.i32"),
                &[
                    ("i32", mask.to_string()),
                    ("i32", w.into()),
                    ("i32", lane.into()),
                    ("i32", c.to_string()),
                ],
            )
        }
        Abi::Amdgpu => {
            // ds_bpermute reads from lane address/4; compute the source lane
            // as CUDA's shuffles do, within segments of `width`.
            let tid = f.tid.clone();
            let me = f.val(format!("trunc i64 {tid} to i32"));
            let me = f.val(format!("and i32 {me}, 63"));
            let width = width.clamp(1, 64);
            let seg = f.val(format!("and i32 {me}, {}", !(width - 1) as i32));
            let inseg = f.val(format!("and i32 {me}, {}", width - 1));
            let src = match mode {
                "down" => {
                    let s = f.val(format!("add i32 {inseg}, {lane}"));
                    let ok = f.val(format!("icmp slt i32 {s}, {width}"));
                    let s = f.val(format!("add i32 {seg}, {s}"));
                    f.val(format!("select i1 {ok}, i32 {s}, i32 {me}"))
                }
                "up" => {
                    let s = f.val(format!("sub i32 {inseg}, {lane}"));
                    let ok = f.val(format!("icmp sge i32 {s}, 0"));
                    let s = f.val(format!("add i32 {seg}, {s}"));
                    f.val(format!("select i1 {ok}, i32 {s}, i32 {me}"))
                }
                "xor" | "bfly" => {
                    let s = f.val(format!("xor i32 {inseg}, {lane}"));
                    let s = f.val(format!("and i32 {s}, {}", width - 1));
                    f.val(format!("add i32 {seg}, {s}"))
                }
                _ => {
                    let s = f.val(format!("and i32 {lane}, {}", width - 1));
                    f.val(format!("add i32 {seg}, {s}"))
                }
            };
            let addr = f.val(format!("shl i32 {src}, 2"));
            f.intrinsic("i32", "llvm.amdgcn.ds.bpermute", &[("i32", addr), ("i32", w.into())])
        }
        Abi::Cpu => {
            let code = match mode {
                "up" => 1,
                "down" => 2,
                "xor" | "bfly" => 3,
                _ => 0,
            };
            f.declare("declare i32 @tessera_cpu_shfl(ptr, ptr, i32, i32, i32, i32)");
            let ctx = f.ctx.clone();
            let site = f.site();
            f.val(format!(
                "call i32 @tessera_cpu_shfl(ptr {ctx}, ptr {site}, i32 {w}, i32 {lane}, i32 {code}, i32 {width})"
            ))
        }
    }
}

fn vote(f: &mut FnEmitter, op: OpId, name: &str) -> R {
    let (ps, p) = f.scalar(op, 0)?;
    let p = f.convert(&p, ps, ScalarType::I1);
    let mode = if name == "amdgpu.ballot" {
        "ballot"
    } else {
        attr_str(f, op, "mode").unwrap_or("any")
    };
    let out = elem_of(&f.result_type(op)?).unwrap_or(ScalarType::I1);
    f.needs_sync = true;
    let v = match f.info().abi {
        Abi::Nvptx => {
            let mask = attr_int(f, op, "mask").unwrap_or(0xFFFF_FFFF) as u32 as i32;
            match mode {
                "ballot" => {
                    let b = f.intrinsic(
                        "i32",
                        "llvm.nvvm.vote.ballot.sync",
                        &[("i32", mask.to_string()), ("i1", p.clone())],
                    );
                    (ScalarType::U32, b)
                }
                "all" | "uni" | "any" => {
                    let b = f.intrinsic(
                        "i1",
                        &format!("llvm.nvvm.vote.{mode}.sync"),
                        &[("i32", mask.to_string()), ("i1", p.clone())],
                    );
                    (ScalarType::I1, b)
                }
                other => return Err(f.err(op, format!("unknown vote `{other}`"))),
            }
        }
        Abi::Amdgpu => {
            let b = f.intrinsic("i64", "llvm.amdgcn.ballot.i64", &[("i1", p.clone())]);
            match mode {
                "ballot" => (ScalarType::U64, b),
                "any" => (ScalarType::I1, f.val(format!("icmp ne i64 {b}, 0"))),
                _ => {
                    let all = f.intrinsic("i64", "llvm.amdgcn.ballot.i64", &[("i1", "true".into())]);
                    (ScalarType::I1, f.val(format!("icmp eq i64 {b}, {all}")))
                }
            }
        }
        Abi::Cpu => {
            let code = match mode {
                "all" => 0,
                "any" => 1,
                _ => 2,
            };
            f.declare("declare i32 @tessera_cpu_vote(ptr, ptr, i32, i32)");
            let ctx = f.ctx.clone();
            let site = f.site();
            let w = f.val(format!("zext i1 {p} to i32"));
            let r = f.val(format!(
                "call i32 @tessera_cpu_vote(ptr {ctx}, ptr {site}, i32 {w}, i32 {code})"
            ));
            if code == 2 {
                (ScalarType::U32, r)
            } else {
                (ScalarType::I1, f.val(format!("icmp ne i32 {r}, 0")))
            }
        }
    };
    let r = f.convert(&v.1, v.0, out);
    f.set(op, Val::Scalar(out, r));
    Ok(())
}

fn atomic(f: &mut FnEmitter, op: OpId) -> R {
    let b = f.buffer(op, 0)?;
    let n = f.m().operands(op).len();
    let kind = attr_str(f, op, "kind").unwrap_or("add").to_string();
    let values = if kind == "cas" { 2 } else { 1 };
    let idx = indices(f, op, 1, n - 1 - values)?;
    let at = checked_ptr(f, &b, &idx);
    let pt = f.buffer_ptr_ty(&b);
    let t = llvm_ty(b.elem);
    let float = b.elem.is_float();
    let scope = f.device_scope();
    let (s, v) = f.scalar(op, n - 1)?;
    let v = f.convert(&v, s, b.elem);
    let unsigned = b.elem.is_unsigned();
    let old = if kind == "cas" {
        let (es, e) = f.scalar(op, n - 2)?;
        let e = f.convert(&e, es, b.elem);
        // cmpxchg compares integers: a float's bits are compared, as CUDA's
        // atomicCAS on a float reinterpreted as an integer does.
        let bits = format!("i{}", b.elem.bits());
        let as_bits = |f: &mut FnEmitter, x: &str| {
            if float {
                f.val(format!("bitcast {t} {x} to {bits}"))
            } else {
                x.to_string()
            }
        };
        let (e, v) = (as_bits(f, &e), as_bits(f, &v));
        let it = if float { bits.as_str() } else { t };
        let pair = f.val(format!("cmpxchg {pt} {at}, {it} {e}, {it} {v}{scope} seq_cst seq_cst"));
        let old = f.val(format!("extractvalue {{ {it}, i1 }} {pair}, 0"));
        if float {
            f.val(format!("bitcast {bits} {old} to {t}"))
        } else {
            old
        }
    } else {
        let rmw = match (kind.as_str(), float) {
            ("add", true) => "fadd",
            ("add", false) => "add",
            ("max", true) => "fmax",
            ("min", true) => "fmin",
            ("max", false) if unsigned => "umax",
            ("min", false) if unsigned => "umin",
            ("max", false) => "max",
            ("min", false) => "min",
            ("and", false) => "and",
            ("or", false) => "or",
            ("xor", false) => "xor",
            ("exch", _) => "xchg",
            (k, _) => return Err(f.err(op, format!("atomic `{k}` on `{}` is not supported", b.elem.name()))),
        };
        if f.info().abi == Abi::Amdgpu && b.elem.bits() < 32 {
            word_rmw(f, &pt, &at, b.elem, rmw, &v)
        } else {
            f.val(format!("atomicrmw {rmw} {pt} {at}, {t} {v}{scope} monotonic"))
        }
    };
    if f.info().abi == Abi::Cpu && f.loop_depth > 0 {
        spin_point(f, b.elem, &old);
    }
    f.set(op, Val::Scalar(b.elem, old));
    Ok(())
}

/// An 8- or 16-bit atomic read-modify-write on AMDGPU as a compare-and-swap
/// loop on the aligned 32-bit word that holds the element; gives the old
/// element. LLVM would expand a sub-word `atomicrmw` the same way, except
/// one whose operand leaves the value unchanged (`add 0`, `or 0`): that it
/// rewrites into an atomic load the AMDGPU back end cannot select.
fn word_rmw(f: &mut FnEmitter, pt: &str, at: &str, elem: ScalarType, rmw: &str, v: &str) -> String {
    let t = llvm_ty(elem);
    let bits = elem.bits();
    let it = format!("i{bits}");
    let scope = f.device_scope();
    let addr = f.val(format!("ptrtoint {pt} {at} to i64"));
    let byte = f.val(format!("and i64 {addr}, 3"));
    let back = f.val(format!("sub i64 0, {byte}"));
    let word = f.val(format!("getelementptr i8, {pt} {at}, i64 {back}"));
    let shift64 = f.val(format!("shl i64 {byte}, 3"));
    let shift = f.val(format!("trunc i64 {shift64} to i32"));
    let ones = (1u64 << bits) - 1;
    let mask = f.val(format!("shl i32 {ones}, {shift}"));
    let keep = f.val(format!("xor i32 {mask}, -1"));
    let seen = f.alloca("i32");
    let first = f.val(format!("load atomic i32, {pt} {word}{scope} monotonic, align 4"));
    f.line(format!("store i32 {first}, ptr {seen}"));
    let head = f.label("rmw");
    let done = f.label("rmw_done");
    f.br(&head);
    f.start_block(&head);
    let w = f.val(format!("load i32, ptr {seen}"));
    let down = f.val(format!("lshr i32 {w}, {shift}"));
    let old_bits = f.val(format!("trunc i32 {down} to {it}"));
    let old = if t != it {
        f.val(format!("bitcast {it} {old_bits} to {t}"))
    } else {
        old_bits.clone()
    };
    let new = match rmw {
        "xchg" => v.to_string(),
        "fadd" => f.val(format!("fadd {t} {old}, {v}")),
        "fmax" | "fmin" => {
            let name = if rmw == "fmax" { "maxnum" } else { "minnum" };
            let suffix = if elem == ScalarType::BF16 { "bf16" } else { "f16" };
            f.intrinsic(
                t,
                &format!("llvm.{name}.{suffix}"),
                &[(t, old.clone()), (t, v.to_string())],
            )
        }
        "max" | "min" | "umax" | "umin" => {
            let pred = match rmw {
                "max" => "sgt",
                "min" => "slt",
                "umax" => "ugt",
                _ => "ult",
            };
            let c = f.val(format!("icmp {pred} {t} {old}, {v}"));
            f.val(format!("select i1 {c}, {t} {old}, {t} {v}"))
        }
        op => f.val(format!("{op} {t} {old}, {v}")),
    };
    let new_bits = if t != it {
        f.val(format!("bitcast {t} {new} to {it}"))
    } else {
        new
    };
    let wide = f.val(format!("zext {it} {new_bits} to i32"));
    let placed = f.val(format!("shl i32 {wide}, {shift}"));
    let rest = f.val(format!("and i32 {w}, {keep}"));
    let next = f.val(format!("or i32 {rest}, {placed}"));
    let pair = f.val(format!(
        "cmpxchg {pt} {word}, i32 {w}, i32 {next}{scope} monotonic monotonic"
    ));
    let now = f.val(format!("extractvalue {{ i32, i1 }} {pair}, 0"));
    let swapped = f.val(format!("extractvalue {{ i32, i1 }} {pair}, 1"));
    f.line(format!("store i32 {now}, ptr {seen}"));
    f.cond_br(&swapped, &done, &head);
    f.start_block(&done);
    old
}

/// A memory fence for the threads of `scope`: NVPTX's `membar` (LLVM 19
/// selects no scoped `fence` there), a scoped `fence` on AMDGPU, and a
/// sequentially consistent one on the CPU (whose threads share one
/// coherent memory).
fn fence(f: &mut FnEmitter, scope: &str) {
    match f.info().abi {
        Abi::Nvptx => {
            let level = match scope {
                "block" => "cta",
                "system" => "sys",
                _ => "gl",
            };
            f.intrinsic("void", &format!("llvm.nvvm.membar.{level}"), &[]);
        }
        Abi::Amdgpu => {
            let sync = match scope {
                "block" => "syncscope(\"workgroup\") ",
                "system" => "",
                _ => "syncscope(\"agent\") ",
            };
            f.line(format!("fence {sync}seq_cst"));
        }
        Abi::Cpu => f.line("fence seq_cst"),
    }
}

/// On the CPU, an atomic in a loop lets the block's other threads run
/// (`tessera_cpu_yield`, with the value it read): a thread that spins on a
/// flag or a lock another thread of its block sets would otherwise never
/// let that thread run. The kernel's threads then run as fibers.
fn spin_point(f: &mut FnEmitter, elem: ScalarType, old: &str) {
    f.needs_sync = true;
    let bits = elem.bits().max(1);
    let as_int = if elem.is_float() {
        f.val(format!("bitcast {} {old} to i{bits}", llvm_ty(elem)))
    } else {
        old.to_string()
    };
    let value = if bits < 64 {
        f.val(format!("zext i{bits} {as_int} to i64"))
    } else {
        as_int
    };
    let site = f.site();
    let ctx = f.ctx.clone();
    f.declare("declare void @tessera_cpu_yield(ptr, ptr, i64)");
    f.line(format!(
        "call void @tessera_cpu_yield(ptr {ctx}, ptr {site}, i64 {value})"
    ));
}

/// The copy of a `dst`-shaped tile at `offs` of `src` into shared `dst`,
/// in chunks of `chunk` bytes spread over the threads. `each(f, dst_ptr,
/// src_ptr)` moves one chunk.
fn chunked_copy(f: &mut FnEmitter, op: OpId, chunk: i64, mut each: impl FnMut(&mut FnEmitter, &str, &str)) -> R {
    let dst = f.buffer(op, 0)?;
    let src = f.buffer(op, 1)?;
    let offs = indices(f, op, 2, f.m().operands(op).len() - 2)?;
    let eb = elem_bytes(dst.elem);
    let per_chunk = (chunk / eb).max(1);
    if !matches!(dst.dims.last(), Some(Ext::Const(cols)) if cols % per_chunk == 0) {
        return Err(f.err(op, "a chunked copy needs rows that are whole chunks"));
    }
    let total: i64 = dst
        .dims
        .iter()
        .map(|d| match d {
            Ext::Const(c) => *c,
            _ => 1,
        })
        .product();
    let chunks = total / per_chunk;
    let t = f.threads;
    let tdims = dst.dims.clone();
    // Rows of whole chunks read from a chunk-aligned column (the kernel's
    // constraints say so): a chunk is inside the source or wholly outside.
    let m = f.m();
    let src_ty = m.value_type(m.operands(op)[1]);
    let whole_rows = src_ty
        .dims()
        .and_then(<[_]>::last)
        .is_some_and(|row| f.known.dim(row) % per_chunk == 0);
    let aligned_cols = m
        .operands(op)
        .last()
        .is_some_and(|&col| f.known.divides(per_chunk, col));
    let straddle_free = whole_rows && aligned_cols;
    let tid = f.tid.clone();
    f.spread(chunks, t, &tid, true, |f, c| {
        let e = f.val(format!("mul i64 {c}, {per_chunk}"));
        let idx = f.unravel(&e, &tdims);
        let sidx = offset_indices(f, &idx, &offs, src.dims.len());
        // A column offset not known to be a multiple of the chunk (`A[7:]`,
        // `A[k + 127:]`) puts the chunk off its alignment: checked at run
        // time, as the vector stores check theirs.
        let on_boundary = (!aligned_cols && per_chunk > 1).then(|| {
            let s = f.element_ptr(&src, &sidx);
            let sp = f.buffer_ptr_ty(&src);
            address_aligned(f, &sp, &s, chunk)
        });
        let whole = match (chunk_in_bounds(f, &src, &sidx, per_chunk, whole_rows), on_boundary) {
            (Some(inside), Some(aligned)) => Some(f.val(format!("and i1 {inside}, {aligned}"))),
            (one, other) => one.or(other),
        };
        let Some(whole) = whole else {
            let d = f.element_ptr(&dst, &idx);
            let s = f.element_ptr(&src, &sidx);
            each(f, &d, &s);
            return;
        };
        f.when(&whole, |f| {
            let d = f.element_ptr(&dst, &idx);
            let s = f.element_ptr(&src, &sidx);
            each(f, &d, &s);
        });
        let partial = f.val(format!("xor i1 {whole}, true"));
        if straddle_free {
            // Wholly past an edge: zeros.
            f.when(&partial, |f| {
                let (dp, dt) = (f.buffer_ptr_ty(&dst), llvm_ty(dst.elem));
                let d = f.element_ptr(&dst, &idx);
                let ty = match per_chunk {
                    1 => dt.to_string(),
                    n => format!("<{n} x {dt}>"),
                };
                f.line(format!(
                    "store {ty} zeroinitializer, {dp} {d}, align {}",
                    per_chunk * eb
                ));
            });
            return;
        }
        // A chunk at an edge of the source, or rows whose length
        // breaks the chunk's alignment: element by element, zeros
        // past the edge, in a loop kept rolled (unrolled, by hand or
        // by LLVM, its per-element bounds checks were hoisted out of
        // an enclosing K loop and kept live across it, and ptxas
        // spent a sixth of its time on the sm_80 matmul on them).
        f.when(&partial, |f| {
            let (dp, sp) = (f.buffer_ptr_ty(&dst), f.buffer_ptr_ty(&src));
            let dt = llvm_ty(dst.elem);
            f.rolled_loop(&per_chunk.to_string(), |f, j| {
                let mut di = idx.clone();
                let mut si = sidx.clone();
                if let (Some(dl), Some(sl)) = (di.last_mut(), si.last_mut()) {
                    *dl = f.val(format!("add i64 {dl}, {j}"));
                    *sl = f.val(format!("add i64 {sl}, {j}"));
                }
                let v = guarded_load(f, &src, &si, &sp);
                let v = f.convert(&v, src.elem, dst.elem);
                let d = f.element_ptr(&dst, &di);
                f.line(format!("store {dt} {v}, {dp} {d}"));
            });
        });
    });
    Ok(())
}

fn cp_async(f: &mut FnEmitter, op: OpId) -> R {
    let bytes = attr_int(f, op, "bytes").unwrap_or(16);
    let (sp, gp) = (f.info().shared_ptr(), f.info().global_ptr());
    let variant = if bytes == 16 { "cg" } else { "ca" };
    let name = format!("llvm.nvvm.cp.async.{variant}.shared.global.{bytes}");
    chunked_copy(f, op, bytes, |f, d, s| {
        f.intrinsic("void", &name, &[(sp.as_str(), d.into()), (gp.as_str(), s.into())]);
    })
}

/// A synchronous copy of a tile into shared memory, 16 bytes (or one
/// element) at a time; the IR's barrier after it publishes it.
fn copy_tile(f: &mut FnEmitter, op: OpId) -> R {
    let dst = f.buffer(op, 0)?;
    let eb = elem_bytes(dst.elem);
    let (sp, gp) = (f.buffer_ptr_ty(&dst), f.info().global_ptr());
    let t = llvm_ty(dst.elem);
    let row_ok = |chunk: i64| match dst.dims.last() {
        Some(Ext::Const(c)) => (c * eb) % chunk == 0 && dst.pad * eb % chunk == 0,
        _ => false,
    };
    let chunk = if row_ok(16) { 16 } else { eb };
    let vec = chunk / eb;
    let ty = if vec > 1 {
        format!("<{vec} x {t}>")
    } else {
        t.to_string()
    };
    let align = chunk;
    chunked_copy(f, op, chunk, |f, d, s| {
        let v = f.val(format!("load {ty}, {gp} {s}, align {align}"));
        f.line(format!("store {ty} {v}, {sp} {d}, align {align}"));
    })
}

fn iota(f: &mut FnEmitter, op: OpId) -> R {
    let ty = f.result_type(op)?;
    let Type::Tensor { dims, elem } = &ty else {
        return Err(f.err(op, "`tile.iota` gives a tile"));
    };
    let axis = attr_int(f, op, "dim").unwrap_or(0).max(0) as usize;
    let tile = f.new_tile(dims, *elem, op)?;
    let tdims = tile.dims.clone();
    let e2 = *elem;
    f.for_own(&tile, |f, pos| {
        let idx = f.unravel(&pos.e, &tdims);
        let v = idx.get(axis).cloned().unwrap_or_else(|| "0".into());
        let v = f.convert(&v, ScalarType::Index, e2);
        f.store_slot(&tile, pos, &v);
    });
    f.set(op, Val::Tile(tile));
    Ok(())
}
