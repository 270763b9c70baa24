//! sm_90a's asynchronous copies: mbarriers and TMA (`cp.async.bulk.tensor`)
//! through inline PTX, which LLVM 19's NVVM lacks. The TMA descriptor
//! (`CUtensorMap`) of each global operand is a hidden kernel parameter the
//! launcher encodes (listed in the manifest as `tma`).

use tessera_ir::{Attr, Module, OpId};
use tessera_ir_tile::{PRODUCER_THREADS as PRODUCER, TENSOR_MAP_RANK};

use crate::emit::{elem_bytes, FnEmitter, Val};
use crate::{CodegenError, TmaDescriptor};

pub(crate) fn emit(f: &mut FnEmitter, op: OpId, name: &str) -> Result<(), CodegenError> {
    match name {
        "nvptx.mbarrier_init" => {
            let count = f.m().attr(op, "count").and_then(Attr::as_int).unwrap_or(1);
            let slots = f.m().attr(op, "slots").and_then(Attr::as_int).unwrap_or(1).max(1);
            let at = f.place_shared(8 * slots, 8);
            let addrs: Vec<String> = (0..slots)
                .map(|i| {
                    let slot = slot_ptr(f, &at, &i.to_string());
                    shared_addr(f, &slot)
                })
                .collect();
            on_thread_zero(f, |f| {
                for addr in &addrs {
                    f.line(format!(
                        "call void asm sideeffect \"mbarrier.init.shared::cta.b64 [$0], {count};\", \"r,~{{memory}}\"(i32 {addr})"
                    ));
                }
                f.line("call void asm sideeffect \"fence.mbarrier_init.release.cluster;\", \"~{memory}\"()");
            });
            f.set(op, Val::Mbarrier(at));
            Ok(())
        }
        "nvptx.mbarrier_slot" => {
            let ring = mbarrier(f, op, 0)?;
            let i = f.index(op, 1)?;
            let at = slot_ptr(f, &ring, &i);
            f.set(op, Val::Mbarrier(at));
            Ok(())
        }
        "nvptx.mbarrier_arrive_expect_tx" => {
            let bar = mbarrier(f, op, 0)?;
            let bytes = f.m().attr(op, "bytes").and_then(Attr::as_int).unwrap_or(0);
            let addr = shared_addr(f, &bar);
            on_thread_zero(f, |f| {
                f.line(format!(
                    "call void asm sideeffect \"mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], {bytes};\", \"r,~{{memory}}\"(i32 {addr})"
                ));
            });
            Ok(())
        }
        "nvptx.mbarrier_arrive" => {
            let bar = mbarrier(f, op, 0)?;
            let addr = shared_addr(f, &bar);
            f.line(format!(
                "call void asm sideeffect \"mbarrier.arrive.shared::cta.b64 _, [$0];\", \"r,~{{memory}}\"(i32 {addr})"
            ));
            Ok(())
        }
        "nvptx.mbarrier_try_wait" => {
            let bar = mbarrier(f, op, 0)?;
            let (s, phase) = f.scalar(op, 1)?;
            let phase = f.convert(&phase, s, tessera_ir::ScalarType::I32);
            let addr = shared_addr(f, &bar);
            let wait = |f: &mut FnEmitter| {
                f.line(format!(
                    "call void asm sideeffect \"{{ .reg .pred p; WAIT${{:uid}}: mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1; @!p bra WAIT${{:uid}}; }}\", \"r,r,~{{memory}}\"(i32 {addr}, i32 {phase})"
                ));
            };
            if f.m().attr(op, "elected") == Some(&Attr::Bool(true)) {
                on_thread_zero(f, wait);
            } else {
                wait(f);
            }
            Ok(())
        }
        "nvptx.tma_load" => tma_load(f, op),
        other => Err(f.err(op, format!("unknown sm_90a op `{other}`"))),
    }
}

/// `nvptx.tma_load(%dst, %param, %coord…, %mbar)`: an elected thread
/// loads the box at the coordinates (outer first; the last two the tile's
/// row and column) of parameter `%param` into `%dst`, one box per
/// swizzle panel, through the tensor map the launcher encodes for it.
fn tma_load(f: &mut FnEmitter, op: OpId) -> Result<(), CodegenError> {
    let dst = f.buffer(op, 0)?;
    let operands = f.m().operands(op).to_vec();
    let tessera_ir::ValueDef::BlockArg { index, .. } = f.m().value_def(operands[1]) else {
        return Err(f.err(op, "a TMA source must be a kernel parameter"));
    };
    let param = index as usize;
    let rank = operands.len() - 3;
    let box_dims: Vec<i64> = dst.dims.iter().map(|d| d.as_const().unwrap_or(0)).collect();
    if box_dims.len() != 2 || box_dims.iter().any(|&d| d <= 0 || d > 256) || dst.pad != 0 {
        return Err(f.err(
            op,
            "a TMA load moves a 2-D tile of at most 256×256 elements into an unpadded buffer",
        ));
    }
    if !(2..=TENSOR_MAP_RANK).contains(&rank) {
        return Err(f.err(op, format!("a tensor map has 2 to {TENSOR_MAP_RANK} dims, not {rank}")));
    }
    let eb = elem_bytes(dst.elem);
    if box_dims[1] * eb % 16 != 0 {
        return Err(f.err(op, "a TMA tile's rows must be multiples of 16 bytes"));
    }
    // A swizzled buffer takes one box per panel: the hardware swizzles a
    // box whose rows are one span wide.
    let (swizzle, panels) = match dst.swizzle {
        Some(s) => (s.span, s.row_bytes / s.span),
        None => (0, 1),
    };
    let panel_cols = box_dims[1] / panels;
    let mut map_box = vec![1; rank - 2];
    map_box.extend([box_dims[0], panel_cols]);
    let desc = f.add_tma(TmaDescriptor {
        param,
        elem: dst.elem.name().to_string(),
        box_dims: map_box,
        swizzle,
    });
    // The coordinates innermost first, as the instruction takes them.
    let coords: Vec<String> = crate::ops::indices(f, op, 2, rank)?
        .iter()
        .rev()
        .map(|c| f.val(format!("trunc i64 {c} to i32")))
        .collect();
    let bar = mbarrier(f, op, rank + 2)?;
    let bar_addr = shared_addr(f, &bar);
    let sp = f.info().shared_ptr();
    let boxes: Vec<(String, String)> = (0..panels)
        .map(|p| {
            let at = f.val(format!(
                "getelementptr i8, {sp} {}, i64 {}",
                dst.base,
                p * box_dims[0] * panel_cols * eb
            ));
            let col = f.val(format!("add i32 {}, {}", coords[0], p * panel_cols));
            (shared_addr(f, &at), col)
        })
        .collect();
    let places: Vec<String> = (0..rank).map(|i| format!("${}", i + 2)).collect();
    let places = places.join(", ");
    let constraints = "r,".repeat(rank);
    let mbar_place = rank + 2;
    on_thread_zero(f, |f| {
        for (dst_addr, col) in &boxes {
            let args: Vec<String> = std::iter::once(col)
                .chain(&coords[1..])
                .map(|c| format!("i32 {c}"))
                .collect();
            f.line(format!(
                "call void asm sideeffect \"cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, {{{places}}}], [${mbar_place}];\", \"r,l,{constraints}r,~{{memory}}\"(i32 {dst_addr}, i64 {desc}, {}, i32 {bar_addr})",
                args.join(", ")
            ));
        }
    });
    Ok(())
}

fn mbarrier(f: &FnEmitter, op: OpId, i: usize) -> Result<String, CodegenError> {
    match f.operand(op, i)? {
        Val::Mbarrier(at) => Ok(at),
        _ => Err(f.err(op, "expected an mbarrier")),
    }
}

/// The registers per thread kernel `func`'s `nvptx.warp_specialize` gives
/// its producer and its consumers, when it has one.
pub(crate) fn register_split(m: &Module, func: OpId) -> Option<[i64; 2]> {
    let op = m
        .walk_op(func)
        .into_iter()
        .find(|&o| m.op(o).name == "nvptx.warp_specialize")?;
    let regs = |key| m.attr(op, key).and_then(Attr::as_int);
    Some([regs("producer_registers")?, regs("consumer_registers")?])
}

/// `nvptx.warp_specialize`: warpgroup 0 gives registers back and its
/// thread 0 runs the producer region; the other warpgroups take the
/// registers and run the consumer region as a block of their own, numbered
/// from 0, with named barrier 1 for theirs. The other producer threads end.
pub(crate) fn warp_specialize(f: &mut FnEmitter, op: OpId) -> Result<(), CodegenError> {
    let registers = |f: &FnEmitter, key: &str| f.m().attr(op, key).and_then(Attr::as_int);
    let (Some(give), Some(take)) = (registers(f, "producer_registers"), registers(f, "consumer_registers")) else {
        return Err(f.err(
            op,
            "`nvptx.warp_specialize` needs `producer_registers` and `consumer_registers`",
        ));
    };
    let saved = (f.tid.clone(), f.threads, f.group_barrier);
    let (tid, threads) = (saved.0.clone(), saved.1);
    let producing = f.val(format!("icmp ult i64 {tid}, {PRODUCER}"));
    let (producer, issuer, consumers, done) = (
        f.label("producer"),
        f.label("issuer"),
        f.label("consumers"),
        f.label("specialized"),
    );
    f.cond_br(&producing, &producer, &consumers);

    f.start_block(&producer);
    f.line(format!(
        "call void asm sideeffect \"setmaxnreg.dec.sync.aligned.u32 {give};\", \"~{{memory}}\"()"
    ));
    let first = f.val(format!("icmp eq i64 {tid}, 0"));
    f.cond_br(&first, &issuer, &done);
    f.start_block(&issuer);
    (f.tid, f.threads, f.group_barrier) = ("0".to_string(), 1, None);
    f.region(op, 0)?;
    f.br(&done);

    f.start_block(&consumers);
    f.line(format!(
        "call void asm sideeffect \"setmaxnreg.inc.sync.aligned.u32 {take};\", \"~{{memory}}\"()"
    ));
    let count = threads - PRODUCER;
    f.tid = f.val(format!("sub nuw nsw i64 {tid}, {PRODUCER}"));
    (f.threads, f.group_barrier) = (count, Some((1, count)));
    f.region(op, 1)?;
    f.br(&done);

    f.start_block(&done);
    (f.tid, f.threads, f.group_barrier) = saved;
    Ok(())
}

/// The mbarrier `i` (an `i64` value) of the ring at `ring`.
fn slot_ptr(f: &mut FnEmitter, ring: &str, i: &str) -> String {
    let sp = f.info().shared_ptr();
    f.val(format!("getelementptr i64, {sp} {ring}, i64 {i}"))
}

/// Runs `body` in thread 0 alone: the thread that initializes the
/// mbarriers and issues the TMA loads.
fn on_thread_zero(f: &mut FnEmitter, body: impl FnOnce(&mut FnEmitter)) {
    let tid = f.tid.clone();
    let first = f.val(format!("icmp eq i64 {tid}, 0"));
    f.when(&first, body);
}

/// The 32-bit shared-window address of a shared pointer.
fn shared_addr(f: &mut FnEmitter, at: &str) -> String {
    let sp = f.info().shared_ptr();
    f.val(format!("ptrtoint {sp} {at} to i32"))
}

#[cfg(test)]
mod tests {
    /// A load of the tile at row `%r`, column `%c` of head (`%b`, `%h`) of
    /// a `[2, 3, 100, 64]` tensor, into a buffer of two 64-byte panels.
    const SLICE_LOAD: &str = r#"
module @m attributes {layer = "target", target = "sm_90a"} {
  func.func @k(%x: memref<2x3x100x64xbf16, global>, %b: index, %h: index, %r: index, %c: index) -> () attributes {kind = "kernel", block = [128, 1, 1], threads = 128, shared_bytes = 8208} {
    %mbar = nvptx.mbarrier_init() {count = 1} : () -> !nvptx.mbarrier
    %s = nvptx.alloc_shared() {align = 128, swizzle = 64} : () -> memref<64x64xbf16, shared, swizzle=64>
    nvptx.tma_load(%s, %x, %b, %h, %r, %c, %mbar) : (memref<64x64xbf16, shared, swizzle=64>, memref<2x3x100x64xbf16, global>, index, index, index, index, !nvptx.mbarrier) -> ()
    tile.return() : () -> ()
  }
}
"#;

    #[test]
    fn a_slice_load_gives_the_view_indices_as_outer_coordinates_innermost_first() {
        let module = tessera_ir::parse(SLICE_LOAD).expect("the IR parses");
        let (text, manifest) = crate::emit_llvm_ir(&module, &crate::Options::default()).expect("it compiles");
        let tma = &manifest.kernels[0].tma;
        assert_eq!(tma.len(), 1);
        assert_eq!(
            (tma[0].param, tma[0].box_dims.as_slice(), tma[0].swizzle),
            (0, &[1, 1, 64, 32][..], 64)
        );
        // The value each line defines, by the text after its `=`.
        let defined = |rhs: &str| -> String {
            let line = text
                .lines()
                .find(|l| l.trim_end().ends_with(&format!("= {rhs}")))
                .expect(rhs);
            line.trim().split(' ').next().unwrap().to_string()
        };
        let [b, h, r, c] = ["%p1", "%p2", "%p3", "%p4"].map(|p| defined(&format!("trunc i64 {p} to i32")));
        let loads: Vec<&str> = text.lines().filter(|l| l.contains("cp.async.bulk.tensor.4d")).collect();
        assert_eq!(loads.len(), 2, "one box per 32-column panel");
        for (panel, load) in loads.iter().enumerate() {
            let col = defined(&format!("add i32 {c}, {}", 32 * panel));
            assert!(load.contains("[$1, {$2, $3, $4, $5}], [$6];"), "{load}");
            let coords = format!("i64 %tma0, i32 {col}, i32 {r}, i32 {h}, i32 {b}, i32 ");
            assert!(load.contains(&coords), "expected `{coords}` in {load}");
        }
    }
}
