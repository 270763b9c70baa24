//! `estimate-resources`: the shared memory and registers a kernel needs.
//!
//! `shared_bytes` is the sum of the kernel's shared allocations, each with
//! its row padding (and 8 bytes per mbarrier). `registers` is a simple,
//! deterministic estimate of the registers one thread needs:
//!
//! ```text
//! registers = 16 + max over program points of Σ words(v) for the values v live there
//! ```
//!
//! where a register tile (`tensor<…>`) or a `tile.local` slot holding `n`
//! elements takes `ceil(n / threads)` elements per thread, each `bits / 32`
//! words (rounded up over the tile); a scalar takes `ceil(bits / 32)`
//! words; a global memref (a pointer) 2 and a shared one 1. `threads` is
//! the product of the kernel's `block` (else its `threads`, else 32). The
//! 16 words stand for ids, addresses and loop counters the IR does not
//! show. A value is live from its definition to its last use; a use inside
//! a region counts at the op that holds the region, and values live across
//! such an op add to the pressure inside it.

use std::collections::HashMap;

use tessera_diagnostics::{Code, Diagnostic};
use tessera_ir::{Attr, BlockId, MemSpace, Module, OpId, Pass, PassContext, Type, ValueId, VerifyError};

use crate::rules::{func_kind, shared_allocations, shared_total};
use crate::shape::{elem_bits, num_elements};

/// The `estimate-resources` pass.
pub struct EstimateResources;

/// Registers every thread needs for ids, addresses and loop counters.
const BASE_REGISTERS: u64 = 16;

impl Pass for EstimateResources {
    fn name(&self) -> &'static str {
        "estimate-resources"
    }

    fn run(&mut self, m: &mut Module, ctx: &PassContext) -> Result<(), Vec<Diagnostic>> {
        let mut errors = Vec::new();
        for func in m.functions() {
            if func_kind(m, func) != Some("kernel") {
                continue;
            }
            let ops = m.walk_op(func);
            let allocs = shared_allocations(m, &ops);
            for (op, bytes) in &allocs {
                if let Err(dim) = bytes {
                    let ty = m.value_type(m.results(*op)[0]);
                    errors.push(
                        VerifyError::at_op(m, *op, format!("shared allocation `{ty}` has a non-constant size"))
                            .with_label(format!("dim `{dim}` is not a constant"))
                            .diagnostic_with_code(Code::E0901, ctx.files),
                    );
                }
            }
            let shared = shared_total(&allocs);
            let registers = estimate_registers(m, func);
            m.set_attr(
                func,
                "shared_bytes",
                Attr::Int(i64::try_from(shared).unwrap_or(i64::MAX)),
            );
            m.set_attr(
                func,
                "registers",
                Attr::Int(i64::try_from(registers).unwrap_or(i64::MAX)),
            );
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

/// The threads of a kernel's block: the product of `block`, else
/// `threads`, else one warp.
pub(crate) fn block_threads(m: &Module, func: OpId) -> Option<i64> {
    if let Some(block) = m.attr(func, "block").and_then(Attr::as_ints) {
        return Some(block.iter().product());
    }
    m.attr(func, "threads").and_then(Attr::as_int)
}

/// The estimate of registers per thread of a function (see the module
/// documentation).
pub fn estimate_registers(m: &Module, func: OpId) -> u64 {
    let threads = u64::try_from(block_threads(m, func).unwrap_or(32)).unwrap_or(1).max(1);
    let Some(entry) = m.entry_block(func) else {
        return BASE_REGISTERS;
    };
    let mut users: HashMap<ValueId, Vec<OpId>> = HashMap::new();
    for op in m.walk_op(func) {
        for &v in m.operands(op) {
            users.entry(v).or_default().push(op);
        }
    }
    let pressure = Pressure { m, threads, users };
    BASE_REGISTERS + pressure.block(entry, 0)
}

struct Pressure<'m> {
    m: &'m Module,
    threads: u64,
    users: HashMap<ValueId, Vec<OpId>>,
}

impl Pressure<'_> {
    fn words(&self, v: ValueId) -> u64 {
        let ty = self.m.value_type(v);
        let per_thread = |n: u64| n.div_ceil(self.threads);
        match ty {
            Type::Scalar(s) => elem_bits(*s).div_ceil(32),
            Type::Tensor { elem, .. }
            | Type::MemRef {
                elem,
                space: MemSpace::Local,
                ..
            } => num_elements(ty).map_or(0, |n| (per_thread(n) * elem_bits(*elem)).div_ceil(32)),
            Type::MemRef {
                space: MemSpace::Global,
                ..
            }
            | Type::Ptr(_) => 2,
            Type::MemRef { .. } => 1,
            _ => 0,
        }
    }

    /// The highest pressure inside `block`, with `outer` words live
    /// throughout it.
    fn block(&self, block: BlockId, outer: u64) -> u64 {
        let m = self.m;
        let ops = m.block_ops(block);
        let n = ops.len();
        if n == 0 {
            return outer;
        }
        let position: HashMap<OpId, usize> = ops.iter().enumerate().map(|(i, &op)| (op, i)).collect();
        let last_use = |v: ValueId| {
            self.users
                .get(&v)
                .into_iter()
                .flatten()
                .filter_map(|&u| m.ancestor_in_block(u, block))
                .filter_map(|a| position.get(&a).copied())
                .max()
        };
        // Words live at each op: `starts[i]` added at i, removed after `end`.
        let mut delta = vec![0i64; n + 1];
        let mut defined_at = vec![0u64; n];
        let mut add = |start: usize, end: usize, w: u64| {
            delta[start] += w as i64;
            delta[end + 1] -= w as i64;
        };
        for &arg in m.block_args(block) {
            if let Some(end) = last_use(arg) {
                add(0, end, self.words(arg));
            }
        }
        for (i, &op) in ops.iter().enumerate() {
            for &r in m.results(op) {
                let w = self.words(r);
                add(i, last_use(r).unwrap_or(i).max(i), w);
                defined_at[i] += w;
            }
        }
        let mut live: i64 = 0;
        let mut highest = outer;
        for (i, &op) in ops.iter().enumerate() {
            live += delta[i];
            let here = outer + live.max(0) as u64;
            highest = highest.max(here);
            let across = here.saturating_sub(defined_at[i]);
            for &r in m.regions(op) {
                highest = highest.max(self.block(m.region_block(r), across));
            }
        }
        highest
    }
}
