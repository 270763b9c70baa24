//! The rules that look at a whole function or module rather than one op:
//! async stage pairing, determinism, RNG streams, the shared-memory budget,
//! kernel signatures (and the form of their `cost`) and, at the Target
//! layer, kernel launch configuration.
//!
//! The core's `Dialect::verify_op` runs per op, so these rules run once,
//! from the *anchor*: the first op (in textual order) of the module that
//! belongs to one of this crate's dialects. A module with no such op has
//! nothing for them to check.

use std::collections::{BTreeSet, HashSet};

use tessera_ir::{Attr, MemSpace, Module, OpId, Type, ValueId, VerifyError, VerifyErrors};

use crate::cost::{KernelCost, COST_ATTR};
use crate::flow::{self, Transfer};
use crate::shape::{self, budget_text};
use crate::target::{func_at_target_layer, is_target_layer, Family, Target, LAYER_ATTR, TARGET_ATTR};

/// The dialects this crate defines.
pub const DIALECTS: [&str; 4] = ["tile", "nvptx", "amdgpu", "cpu"];

/// The ops that allocate shared memory, at either layer.
pub const SHARED_ALLOCS: [&str; 4] = [
    "tile.alloc_shared",
    "nvptx.alloc_shared",
    "amdgpu.alloc_lds",
    "cpu.alloc_shared",
];

/// The bytes of shared memory an `nvptx.mbarrier_init` takes per slot.
pub const MBARRIER_BYTES: u64 = 8;

/// The first op of the module in textual order that belongs to one of
/// [`DIALECTS`], found without walking further than it.
fn anchor(m: &Module) -> Option<OpId> {
    let mut stack = vec![(m.body(), 0usize)];
    while let Some((block, i)) = stack.pop() {
        let Some(&op) = m.block_ops(block).get(i) else { continue };
        if DIALECTS.contains(&m.op(op).name.dialect()) {
            return Some(op);
        }
        stack.push((block, i + 1));
        for &r in m.regions(op).iter().rev() {
            stack.push((m.region_block(r), 0));
        }
    }
    None
}

/// Runs the module and function rules when `op` is the anchor.
pub(crate) fn at_anchor(m: &Module, op: OpId, errors: &mut VerifyErrors) {
    if anchor(m) == Some(op) {
        check_module(m, op, errors);
    }
}

/// The `kind` of a function (`kernel`, `operator`, `host`).
pub fn func_kind(m: &Module, func: OpId) -> Option<&str> {
    m.attr(func, "kind")?.as_str()
}

fn func_label(m: &Module, func: OpId) -> String {
    format!("`@{}`", m.func_name(func).unwrap_or_default())
}

fn check_module(m: &Module, anchor: OpId, errors: &mut VerifyErrors) {
    match m.attrs.get(TARGET_ATTR) {
        Some(Attr::Str(name)) if Target::from_name(name).is_none() => errors.push(
            VerifyError::at_op(
                m,
                anchor,
                format!("unknown target `{name}` in the module attribute `target`"),
            )
            .with_note("the targets are sm_80, sm_90a, gfx90a, gfx942 and cpu"),
        ),
        Some(Attr::Str(_)) => {}
        Some(other) => errors.push(VerifyError::at_op(
            m,
            anchor,
            format!("the module attribute `target` must be a string, not {other}"),
        )),
        None if is_target_layer(m) || m.functions().into_iter().any(|f| func_at_target_layer(m, f)) => errors.push(
            VerifyError::at_op(m, anchor, "a module at the target layer needs the attribute `target`")
                .with_note(format!("the module or a function says `{LAYER_ATTR} = \"target\"`")),
        ),
        None => {}
    }
    for func in m.functions() {
        check_function(m, func, errors);
    }
}

fn check_function(m: &Module, func: OpId, errors: &mut VerifyErrors) {
    let ops = m.walk_op(func);
    let deterministic = m.attr(func, "deterministic").is_some();
    for &op in &ops {
        match m.op(op).name.as_str() {
            "tile.rng" => rng_stream(m, op, errors),
            name @ ("tile.reduce" | "tile.softmax")
                if deterministic && m.attr(op, "order").and_then(Attr::as_str) != Some("tree") =>
            {
                errors.push(
                    VerifyError::at_op(
                        m,
                        op,
                        format!("unordered reduction in a deterministic function: `{name}` needs `order = \"tree\"`"),
                    )
                    .with_label("the order of this reduction is not fixed")
                    .with_related(m, func, "the function is deterministic"),
                );
            }
            "tile.unary" if deterministic && m.attr(op, "approx").is_some() => {
                let f = m.attr(op, "fn").and_then(Attr::as_str).unwrap_or("exp");
                errors.push(
                    VerifyError::at_op(
                        m,
                        op,
                        format!(
                            "approximate `{f}` in a deterministic function: the hardware's approximation differs between targets"
                        ),
                    )
                    .with_label("computed with `approx`")
                    .with_related(m, func, "the function is deterministic")
                    .with_note(format!(
                        "a deterministic function computes `{f}` with Tessera's own routine, the same bits on every target"
                    )),
                );
            }
            "tile.all_reduce" if deterministic && m.attr(op, "deterministic").is_none() => {
                errors.push(
                    VerifyError::at_op(
                        m,
                        op,
                        "collective without a fixed order in a deterministic function: `tile.all_reduce` needs `deterministic`",
                    )
                    .with_label("the order of this reduction across ranks is not fixed")
                    .with_related(m, func, "the function is deterministic")
                    .with_note("ask for it with `op.all_reduce(..., deterministic=True)`"),
                );
            }
            // An atomic the source waives (`with nondeterministic("why"):`) is allowed.
            "tile.atomic" | "nvptx.atom" | "amdgpu.atomic" | "cpu.atomic"
                if deterministic && m.attr(op, "nondeterministic").is_none() =>
            {
                let elem = m.operands(op).first().and_then(|&v| m.value_type(v).elem());
                if let Some(elem) = elem.filter(|e| e.is_float()) {
                    let kind = m.attr(op, "kind").and_then(Attr::as_str).unwrap_or("?");
                    errors.push(
                        VerifyError::at_op(
                            m,
                            op,
                            format!(
                                "float atomic in a deterministic function: `{}` {kind} on `{}` depends on the order of the threads",
                                m.op(op).name,
                                elem.name()
                            ),
                        )
                        .with_label("the result depends on which thread gets there first")
                        .with_related(m, func, "the function is deterministic")
                        .with_note("reduce in a tree (`tile.reduce` with `order = \"tree\"`) instead"),
                    );
                }
            }
            _ => {}
        }
    }
    if ops
        .iter()
        .any(|&op| matches!(m.op(op).name.as_str(), "tile.async_copy" | "tile.wait_async"))
    {
        let mut rule = AsyncStages {
            errors,
            reported_uses: HashSet::new(),
            reported_unwaited: HashSet::new(),
        };
        flow::run(m, func, &mut rule);
    }
    shared_budget(m, func, &ops, errors);
    if func_kind(m, func) == Some("kernel") {
        kernel_signature(m, func, errors);
        if func_at_target_layer(m, func) {
            if let Some(target) = Target::of_module(m) {
                kernel_config(m, func, target, &ops, errors);
            }
        }
    }
}

fn rng_stream(m: &Module, op: OpId, errors: &mut VerifyErrors) {
    let bound = m
        .attr(op, "stream")
        .and_then(Attr::as_str)
        .is_some_and(|s| !s.is_empty());
    if !bound {
        errors.push(
            VerifyError::at_op(
                m,
                op,
                "RNG without a bound stream: `tile.rng` needs `stream = \"name\"`",
            )
            .with_label("this draws from no stream")
            .with_note("random numbers come from counter-based streams, so that runs can be reproduced"),
        );
    }
}

// ---- async stages ------------------------------------------------------

/// A copy that may be in flight: its stage, the op and its destination.
type InFlight = (i64, OpId, ValueId);

struct AsyncStages<'e> {
    errors: &'e mut VerifyErrors,
    /// Copies whose early use was reported (one report per copy).
    reported_uses: HashSet<OpId>,
    reported_unwaited: HashSet<OpId>,
}

fn stage_of(m: &Module, op: OpId) -> i64 {
    m.attr(op, "stage").and_then(Attr::as_int).unwrap_or(0)
}

impl Transfer for AsyncStages<'_> {
    type State = BTreeSet<InFlight>;

    fn join(into: &mut Self::State, other: &Self::State) {
        into.extend(other.iter().copied());
    }

    fn visit(&mut self, m: &Module, op: OpId, state: &mut Self::State, report: bool) {
        let name = m.op(op).name.as_str();
        let operands = m.operands(op);
        let uses = if name == "tile.async_copy" {
            &operands[1.min(operands.len())..]
        } else {
            operands
        };
        if report {
            for &v in uses {
                let Some(&(stage, copy, _)) = state.iter().find(|c| c.2 == v) else {
                    continue;
                };
                if !self.reported_uses.insert(copy) {
                    continue;
                }
                self.errors.push(
                    VerifyError::at_op(
                        m,
                        op,
                        format!("async copy on stage {stage} is not waited for before its destination is used"),
                    )
                    .with_label(format!("this `{name}` may run while the copy is in flight"))
                    .with_related(m, copy, format!("the copy on stage {stage} starts here"))
                    .with_note(format!("insert `tile.wait_async {{stage = {stage}}}` before this use")),
                );
            }
        }
        match name {
            "tile.async_copy" => {
                let stage = stage_of(m, op);
                if report {
                    if let Some(&(_, previous, _)) = state.iter().find(|c| c.0 == stage) {
                        let mut e = VerifyError::at_op(
                            m,
                            op,
                            format!("stage {stage} already has an async copy in flight"),
                        )
                        .with_note(format!(
                            "wait first with `tile.wait_async {{stage = {stage}}}`, or give this copy a stage of its own"
                        ));
                        e = if previous == op {
                            e.with_label(format!(
                                "the copy of the previous iteration is still in flight on stage {stage}"
                            ))
                        } else {
                            e.with_label(format!("this copy reuses stage {stage} before it is waited for"))
                                .with_related(m, previous, format!("the copy on stage {stage} starts here"))
                        };
                        self.errors.push(e);
                    }
                }
                if let Some(&dst) = operands.first() {
                    state.insert((stage, op, dst));
                }
            }
            "tile.wait_async" => {
                let stage = stage_of(m, op);
                if report && !state.iter().any(|c| c.0 == stage) {
                    let others: BTreeSet<i64> = state.iter().map(|c| c.0).collect();
                    let note = if others.is_empty() {
                        format!("remove this wait, or start a copy with `stage = {stage}` before it")
                    } else {
                        let list: Vec<String> = others.iter().map(i64::to_string).collect();
                        let stages = if list.len() == 1 { "stage" } else { "stages" };
                        format!("the copies in flight here are on {stages} {}", list.join(", "))
                    };
                    self.errors.push(
                        VerifyError::at_op(m, op, format!("no async copy is in flight on stage {stage}"))
                            .with_label("this waits for nothing on any path")
                            .with_note(note),
                    );
                }
                state.retain(|c| c.0 != stage);
            }
            _ => {}
        }
    }

    fn exit(&mut self, m: &Module, at: Option<OpId>, state: &Self::State, report: bool) {
        if !report {
            return;
        }
        for &(stage, copy, _) in state {
            if !self.reported_unwaited.insert(copy) {
                continue;
            }
            let mut e = VerifyError::at_op(m, copy, format!("async copy on stage {stage} is never waited for"))
                .with_note(format!("wait for it with `tile.wait_async {{stage = {stage}}}`"));
            e = match at {
                Some(ret) => e
                    .with_label("this copy may still be in flight when the function returns")
                    .with_related(m, ret, "the function returns here"),
                None => e.with_label("this copy may still be in flight when the function ends"),
            };
            self.errors.push(e);
        }
    }
}

// ---- shared memory -----------------------------------------------------

/// The shared allocations of a function in textual order, each with its
/// size in bytes (rows padded), or the dim that keeps the size from being
/// known.
pub fn shared_allocations(m: &Module, ops: &[OpId]) -> Vec<(OpId, Result<u64, String>)> {
    ops.iter()
        .filter_map(|&op| {
            let name = m.op(op).name.as_str();
            if name == "nvptx.mbarrier_init" {
                let slots = m.attr(op, "slots").and_then(Attr::as_int).unwrap_or(1).max(1);
                return Some((op, Ok(MBARRIER_BYTES * slots as u64)));
            }
            if !SHARED_ALLOCS.contains(&name) {
                return None;
            }
            let ty = m.value_type(*m.results(op).first()?);
            Some((op, shape::buffer_bytes(ty, shape::pad_of(ty, Some((m, op))))))
        })
        .collect()
}

/// The names of a function's `dims` attribute: the dim parameters a launch
/// binds, in order.
pub fn func_dims(m: &Module, func: OpId) -> Vec<&str> {
    m.attr(func, "dims")
        .and_then(Attr::as_array)
        .unwrap_or_default()
        .iter()
        .filter_map(Attr::as_str)
        .collect()
}

/// The total of the allocations whose size is known.
pub fn shared_total(allocs: &[(OpId, Result<u64, String>)]) -> u64 {
    allocs
        .iter()
        .filter_map(|(_, b)| b.as_ref().ok())
        .fold(0u64, |t, b| t.saturating_add(*b))
}

fn shared_budget(m: &Module, func: OpId, ops: &[OpId], errors: &mut VerifyErrors) {
    let allocs = shared_allocations(m, ops);
    // A size over the kernel's dims is laid out at the launch, which binds
    // them; the buffer is then plain (neither swizzled nor padded).
    let dims = func_dims(m, func);
    for (op, bytes) in &allocs {
        if bytes.is_err() {
            let ty = m.value_type(m.results(*op)[0]);
            let unbound = ty
                .dims()
                .unwrap_or_default()
                .iter()
                .flat_map(|d| d.symbols())
                .find(|s| !dims.contains(s));
            if let Some(dim) = unbound {
                errors.push(
                    VerifyError::at_op(
                        m,
                        *op,
                        format!("shared allocation `{ty}` has a size the launch cannot know"),
                    )
                    .with_label(format!("`{dim}` is not a dim of the kernel"))
                    .with_note("a shared buffer's dims are constants or polynomials of the kernel's `dims`"),
                );
            } else if shape::pad_of(ty, Some((m, *op))) != 0 || shape::swizzle_of(ty, Some((m, *op))).is_some() {
                errors.push(
                    VerifyError::at_op(
                        m,
                        *op,
                        format!("shared allocation `{ty}` sized at the launch is swizzled or padded"),
                    )
                    .with_label("laid out with a swizzle or padding")
                    .with_note("only a buffer of constant dims is swizzled or padded"),
                );
            }
        }
    }
    let total = shared_total(&allocs);
    let crossing = |limit: u64| {
        let mut running = 0u64;
        allocs.iter().find_map(|(op, b)| {
            running = running.saturating_add(*b.as_ref().ok()?);
            (running > limit).then_some((*op, running))
        })
    };
    let budget = m.attr(func, "shared_budget").and_then(Attr::as_int);
    if let Some(budget) = budget.and_then(|b| u64::try_from(b).ok()) {
        if let Some((op, running)) = crossing(budget) {
            errors.push(
                VerifyError::at_op(
                    m,
                    op,
                    format!(
                        "shared memory {total} B exceeds the kernel's budget shared({}) = {budget} B",
                        budget_text(budget)
                    ),
                )
                .with_label(format!("this allocation brings the total to {running} B"))
                .with_related(m, func, "the budget is declared here")
                .with_code(tessera_diagnostics::Code::E0805),
            );
        }
    }
    if let Some(target) = Target::of_module(m) {
        let limit = target.max_shared_bytes();
        if let Some((op, running)) = crossing(limit) {
            errors.push(
                VerifyError::at_op(
                    m,
                    op,
                    format!(
                        "shared memory {total} B exceeds the {} limit of {limit} B per block",
                        target.name()
                    ),
                )
                .with_label(format!("this allocation brings the total to {running} B"))
                .with_note(
                    "each copy of an allocation counts: one in a loop over a literal list, or in a device function called several times, is made once per copy",
                )
                .with_code(tessera_diagnostics::Code::E0805),
            );
        }
    }
}

// ---- kernels -----------------------------------------------------------

fn kernel_signature(m: &Module, func: OpId, errors: &mut VerifyErrors) {
    let name = func_label(m, func);
    let Some((params, results)) = m.func_type(func) else {
        return;
    };
    for (i, ty) in params.iter().enumerate() {
        let ok = matches!(ty, Type::Scalar(_)) || shape::is_memref_in(ty, MemSpace::Global);
        if !ok {
            errors.push(
                VerifyError::at_op(m, func, format!("kernel parameter #{i} of {name} is `{ty}`"))
                    .with_label("not a valid kernel parameter")
                    .with_note("kernel parameters are global memrefs, scalars or `index`"),
            );
        }
    }
    if !results.is_empty() {
        errors.push(VerifyError::at_op(
            m,
            func,
            format!("kernel {name} returns values; a kernel returns nothing"),
        ));
    }
    if let Some(dims) = m.attr(func, "dims").and_then(Attr::as_array) {
        let trailing = params.iter().rev().take_while(|t| **t == Type::INDEX).count();
        if trailing < dims.len() {
            errors.push(
                VerifyError::at_op(
                    m,
                    func,
                    format!(
                        "kernel {name} declares {} dims but ends with {trailing} `index` parameters",
                        dims.len()
                    ),
                )
                .with_note("the symbolic dims are passed at run time as the last parameters, one `index` each"),
            );
        }
    }
    if let Some(cost) = m.attr(func, COST_ATTR).filter(|c| KernelCost::from_attr(c).is_none()) {
        errors.push(
            VerifyError::at_op(m, func, format!("malformed `cost` on kernel {name}: {cost}"))
                .with_label("the profiler cannot read this cost")
                .with_note("`estimate-cost` writes it: `{bytes = \"…\", flops_per_block = [[…]], flops_per_thread = [[…]]}`, the FLOPs both or neither, and `flops_per_launch = [[…]]` only with them"),
        );
    }
    match m.attr(func, "block") {
        None => {}
        Some(block) => {
            let sizes = block.as_ints().unwrap_or_default();
            if sizes.is_empty() || sizes.len() > 3 || sizes.iter().any(|&s| s <= 0) {
                errors.push(VerifyError::at_op(
                    m,
                    func,
                    format!("`block` of kernel {name} must list 1 to 3 positive sizes; it is {block}"),
                ));
            } else if sizes.iter().product::<i64>() > 1024 {
                errors.push(VerifyError::at_op(
                    m,
                    func,
                    format!(
                        "kernel {name} has blocks of {} threads; a block has at most 1024",
                        sizes.iter().product::<i64>()
                    ),
                ));
            }
        }
    }
}

/// The Target layer's kernel configuration: `threads`, `shared_bytes` and
/// `max_registers` present and within the target's ranges.
fn kernel_config(m: &Module, func: OpId, target: Target, ops: &[OpId], errors: &mut VerifyErrors) {
    let name = func_label(m, func);
    let t = target.name();
    let mut need = |key: &str| -> Option<i64> {
        match m.attr(func, key) {
            Some(Attr::Int(v)) => Some(*v),
            Some(other) => {
                errors.push(VerifyError::at_op(
                    m,
                    func,
                    format!("`{key}` of kernel {name} must be an integer, not {other}"),
                ));
                None
            }
            None => {
                errors.push(
                    VerifyError::at_op(m, func, format!("kernel {name} at the target layer has no `{key}`"))
                        .with_note("`lower-tile-to-target` sets `threads`, `shared_bytes` and `max_registers`"),
                );
                None
            }
        }
    };
    let threads = need("threads");
    let shared = need("shared_bytes");
    let registers = if target.max_registers().is_some() {
        need("max_registers")
    } else {
        m.attr(func, "max_registers").and_then(Attr::as_int)
    };
    if let Some(threads) = threads {
        if !(1..=1024).contains(&threads) {
            errors.push(VerifyError::at_op(
                m,
                func,
                format!("kernel {name} has threads = {threads}; a block has 1 to 1024 threads"),
            ));
        } else if threads % target.warp_size() != 0 && target.family() != Family::Cpu {
            let unit = if target.family() == Family::Amdgpu {
                "a wave64 wavefront"
            } else {
                "a warp"
            };
            errors.push(
                VerifyError::at_op(
                    m,
                    func,
                    format!(
                        "kernel {name} has blocks of {threads} thread{}; on {t} a block is whole warps, a multiple of {} ({unit})",
                        if threads == 1 { "" } else { "s" },
                        target.warp_size()
                    ),
                )
                .with_label(format!("a block of {threads} thread{}", if threads == 1 { "" } else { "s" }))
                .with_note("the CPU runs any block; a GPU runs threads in whole warps")
                .with_code(tessera_diagnostics::Code::E0217),
            );
        }
        if let Some(block) = m.attr(func, "block").and_then(Attr::as_ints) {
            let product: i64 = block.iter().product();
            if product != threads {
                errors.push(VerifyError::at_op(
                    m,
                    func,
                    format!("kernel {name} has threads = {threads}, but its block {block:?} has {product} threads"),
                ));
            }
        }
    }
    if let Some(shared) = shared {
        let limit = target.max_shared_bytes();
        let allocated = shared_total(&shared_allocations(m, ops));
        if shared < 0 || shared as u64 > limit {
            errors.push(VerifyError::at_op(
                m,
                func,
                format!("kernel {name} has shared_bytes = {shared}, outside the {t} range of 0 to {limit} B"),
            ));
        } else if (shared as u64) < allocated {
            errors.push(VerifyError::at_op(
                m,
                func,
                format!("kernel {name} has shared_bytes = {shared} but allocates {allocated} B of shared memory"),
            ));
        }
    }
    if let (Some(regs), Some(max)) = (registers, target.max_registers()) {
        if !(1..=max).contains(&regs) {
            errors.push(VerifyError::at_op(
                m,
                func,
                format!("kernel {name} has max_registers = {regs}; {t} allows 1 to {max} registers per thread"),
            ));
        }
    }
}
