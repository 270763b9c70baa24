//! Target IR → LLVM IR text, one kernel at a time.
//!
//! Scalars become LLVM values. A tile (`tensor<…>`) is spread over the
//! block's threads in one fixed, blocked order: thread `t` of `T` holds the
//! elements whose row-major index is `t + i·T`, `i = 0, 1, …` — so every
//! elementwise op is thread-local, and loads and stores of whole tiles are
//! coalesced. A tile of constant shape lives in a per-thread array (which
//! LLVM promotes to registers); a tile whose shape has symbols lives in the
//! block's slice of a global scratch buffer the launcher provides. Ops that
//! move elements between threads (transpose, broadcast, reduce, softmax,
//! matrix products) stage their operands through shared memory, between
//! barriers. Control flow is structured; variables live in `alloca`s that
//! LLVM turns back into SSA.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use tessera_base::half;
use tessera_ir::{Attr, DimExpr, MemSpace, Module, OpId, ScalarType, Type, ValueId};
use tessera_ir_tile::{KernelCost, Multiples, Target, COST_ATTR};

use crate::minifloat;
use crate::mma::layout::{self, Layout};
use crate::print::{self, PrintSite};
use crate::rng::RngStream;
use crate::swizzle::Swizzle;
use crate::target::{Abi, TargetInfo};
use crate::{CodegenError, CostInfo, KernelInfo, ParamInfo, TmaDescriptor};

/// An extent: a constant, or an `i64` LLVM value computed in the kernel.
#[derive(Clone, Debug)]
pub(crate) enum Ext {
    Const(i64),
    Dyn(String),
}

impl Ext {
    pub(crate) fn text(&self) -> String {
        match self {
            Ext::Const(c) => c.to_string(),
            Ext::Dyn(v) => v.clone(),
        }
    }

    pub(crate) fn as_const(&self) -> Option<i64> {
        match self {
            Ext::Const(c) => Some(*c),
            Ext::Dyn(_) => None,
        }
    }
}

/// Where a tile's elements live.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Storage {
    /// A per-thread array of `per_thread` elements (`alloca`).
    Private { array: String, per_thread: i64 },
    /// Element `e` at `base[e]` in global memory (the block's scratch).
    Scratch { base: String },
}

#[derive(Clone, Debug)]
pub(crate) struct Tile {
    pub dims: Vec<Ext>,
    pub elem: ScalarType,
    pub count: Ext,
    pub storage: Storage,
    /// Which thread holds which element (always blocked for scratch).
    pub layout: Layout,
}

/// A memref: a base pointer, its extents, and its layout.
#[derive(Clone, Debug)]
pub(crate) struct Buffer {
    pub base: String,
    pub space: MemSpace,
    pub dims: Vec<Ext>,
    pub elem: ScalarType,
    /// Elements of padding after each row (`bank_pad`).
    pub pad: i64,
    /// The swizzle of its last two dims (`swizzle`; shared buffers only).
    pub swizzle: Option<Swizzle>,
}

/// Where one thread is in a tile: `e` the element's row-major index,
/// `i` its place among the thread's elements.
pub(crate) struct Pos {
    pub e: String,
    pub i: String,
}

/// What an IR value is in the generated code.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    Scalar(ScalarType, String),
    Tile(Tile),
    Buffer(Buffer),
    /// An mbarrier object: its shared-memory address.
    Mbarrier(String),
}

/// The LLVM type of a scalar.
pub(crate) fn llvm_ty(s: ScalarType) -> &'static str {
    match s {
        ScalarType::F64 => "double",
        ScalarType::F32 => "float",
        ScalarType::F16 => "half",
        ScalarType::BF16 => "bfloat",
        ScalarType::I1 => "i1",
        ScalarType::I8 | ScalarType::U8 | ScalarType::F8E4M3 | ScalarType::F8E5M2 | ScalarType::F4E2M1 => "i8",
        ScalarType::I16 | ScalarType::U16 => "i16",
        ScalarType::I32 | ScalarType::U32 => "i32",
        ScalarType::I64 | ScalarType::U64 | ScalarType::Index => "i64",
    }
}

pub(crate) fn elem_bytes(s: ScalarType) -> i64 {
    match s {
        ScalarType::I1 => 1,
        _ => i64::from(s.bits().max(8)) / 8,
    }
}

/// The largest finite value of a float type other than the narrow ones.
fn largest_finite(s: ScalarType) -> Option<f64> {
    match s {
        ScalarType::F64 => Some(f64::MAX),
        ScalarType::F32 => Some(f64::from(f32::MAX)),
        ScalarType::F16 => Some(65504.0),
        ScalarType::BF16 => Some(f64::from(f32::from_bits(0x7f7f_0000))),
        _ => None,
    }
}

fn is_narrow_float(s: ScalarType) -> bool {
    matches!(s, ScalarType::F8E4M3 | ScalarType::F8E5M2 | ScalarType::F4E2M1)
}

/// An LLVM float literal for `v` in type `s` (hex form, exact).
pub(crate) fn float_lit(s: ScalarType, v: f64) -> String {
    match s {
        ScalarType::F64 => format!("0x{:016X}", v.to_bits()),
        // float, half and bfloat literals are written as the double with the
        // same value; round to the type first so LLVM accepts it.
        ScalarType::F32 => format!("0x{:016X}", f64::from(v as f32).to_bits()),
        ScalarType::F16 => format!("0xH{:04X}", half::f64_to_f16(v)),
        ScalarType::BF16 => format!("0xR{:04X}", half::f64_to_bf16(v)),
        _ => minifloat::literal(s, v).unwrap_or_else(|| format!("{}", v as i64)),
    }
}

/// Emits one module's kernels.
pub(crate) struct ModuleEmitter<'m> {
    pub m: &'m Module,
    pub info: TargetInfo,
    pub decls: BTreeSet<String>,
    pub bodies: String,
    pub kernels: Vec<KernelInfo>,
    pub uses_math: bool,
    pub uses_rng: bool,
}

impl<'m> ModuleEmitter<'m> {
    pub fn new(m: &'m Module, target: Target) -> ModuleEmitter<'m> {
        ModuleEmitter {
            m,
            info: TargetInfo::of(target),
            decls: BTreeSet::new(),
            bodies: String::new(),
            kernels: Vec::new(),
            uses_math: false,
            uses_rng: false,
        }
    }

    pub fn emit_kernel(&mut self, func: OpId) -> Result<(), CodegenError> {
        let entry = self.m.entry_block(func).expect("functions have bodies");
        let mut f = FnEmitter::new(self, func)?;
        f.prologue()?;
        f.block(entry)?;
        let kernel = f.finish();
        if kernel.shared_bytes > self.info.shared_limit {
            return Err(CodegenError {
                message: format!(
                    "the kernel `{}` needs {} bytes of shared memory; {} has {}",
                    kernel.name,
                    kernel.shared_bytes,
                    self.info.target.name(),
                    self.info.shared_limit
                ),
                loc: self.m.op(func).loc.clone(),
            });
        }
        self.kernels.push(kernel);
        Ok(())
    }
}

struct LoopLabels {
    continue_to: String,
    break_to: String,
}

/// Emits one kernel.
pub(crate) struct FnEmitter<'e, 'm> {
    pub me: &'e mut ModuleEmitter<'m>,
    func: OpId,
    /// The op being emitted (its source is where a CPU check reports).
    current: Option<OpId>,
    pub name: String,
    /// Lines of the entry block, before the body: allocas, and the fence
    /// that makes each TMA tensor map visible to the tensor-map proxy.
    allocas: String,
    pub body: String,
    tmp: u32,
    pub values: HashMap<ValueId, Val>,
    /// The tiles that are not blocked (see `mma::layout::plan`).
    layouts: HashMap<ValueId, Layout>,
    /// Multi-indices `for_own` computed for its element indices `e`, with
    /// the shape they index: what `unravel` would compute, in a form LLVM
    /// folds across unrolled iterations.
    indices: HashMap<String, (Vec<i64>, Vec<String>)>,
    /// Dim symbol → its `i64` value.
    dims: HashMap<String, String>,
    /// The threads the tile ops at hand are spread over: the block's, or
    /// one side's of an `nvptx.warp_specialize`.
    pub threads: i64,
    /// This thread's index among them (`i64`).
    pub tid: String,
    /// The named barrier (`bar.sync id, count`) of those threads, when
    /// they are not the whole block.
    pub group_barrier: Option<(i64, i64)>,
    /// The producer's and the consumers' registers of the kernel's
    /// `nvptx.warp_specialize`, when it has one.
    split: Option<[i64; 2]>,
    loops: Vec<LoopLabels>,
    /// Shared memory: bytes placed so far by allocations, and the most any
    /// staging op needs beyond them.
    shared_static: i64,
    shared_planned: i64,
    pub staging_need: i64,
    staging_uses: Vec<String>,
    /// Shared buffers sized at the launch: the bytes of each, a dim
    /// expression; they follow the constant ones and the staging area.
    shared_dynamic: Vec<DimExpr>,
    /// Global scratch per block: symbolic byte count terms.
    scratch_terms: Vec<DimExpr>,
    scratch_base: Option<String>,
    scratch_uses: Vec<(String, DimExpr)>,
    pub needs_sync: bool,
    /// How many loops enclose the op being emitted (a `tile.while`'s
    /// condition counts as inside its loop).
    pub loop_depth: u32,
    /// The private arrays of one-element tiles that every thread holds
    /// (a whole-tile reduction's result), not only the element's owner.
    pub replicated: BTreeSet<String>,
    params: Vec<ParamInfo>,
    /// What the kernel's index values are known multiples of.
    pub known: Multiples<'m>,
    hidden: Vec<String>,
    tma: Vec<TmaDescriptor>,
    /// The random streams drawn from, one hidden key parameter each.
    rng: Vec<RngStream>,
    /// The kernel's prints, in the order of their records' site numbers.
    prints: Vec<PrintSite>,
    /// Whether the kernel reads its grid's y or z axis and so may be
    /// launched folded (`grid`).
    folds_grid: bool,
    /// Which of the block's ids (x, y, z) and the grid's sizes (x, y, z)
    /// such a kernel reads: each is read once, at its entry.
    grid_reads: [bool; 6],
    terminated: bool,
    pub ctx: String,
}

fn err(m: &Module, op: OpId, message: impl Into<String>) -> CodegenError {
    CodegenError {
        message: message.into(),
        loc: m.op(op).loc.clone(),
    }
}

impl<'e, 'm> FnEmitter<'e, 'm> {
    fn new(me: &'e mut ModuleEmitter<'m>, func: OpId) -> Result<FnEmitter<'e, 'm>, CodegenError> {
        let m = me.m;
        let name = m.func_name(func).unwrap_or("kernel").to_string();
        let threads = m
            .attr(func, "block")
            .and_then(Attr::as_ints)
            .map(|b| b.iter().product::<i64>())
            .unwrap_or(128)
            .max(1);
        let split = crate::hopper::register_split(m, func);
        let layouts = match me.info.abi {
            // The tiles of a specialized kernel are its consumers'.
            Abi::Nvptx if split.is_some() => layout::plan(m, func, threads - tessera_ir_tile::PRODUCER_THREADS),
            Abi::Nvptx => layout::plan(m, func, threads),
            // Tests run fragment layouts on the CPU (`mma::layout::tests`).
            #[cfg(test)]
            Abi::Cpu => layout::plan_from_attributes(m, func, threads),
            _ => HashMap::new(),
        };
        // Without fragments, the tiles that move through global memory do
        // so in 16-byte runs, on every target (so the CPU runs the same
        // layout as the GPUs).
        let layouts = if layouts.is_empty() {
            layout::strips(m, func, threads)
        } else {
            layouts
        };
        Ok(FnEmitter {
            me,
            func,
            current: None,
            name,
            allocas: String::new(),
            body: String::new(),
            tmp: 0,
            values: HashMap::new(),
            layouts,
            indices: HashMap::new(),
            dims: HashMap::new(),
            threads,
            tid: String::new(),
            group_barrier: None,
            split,
            loops: Vec::new(),
            shared_static: 0,
            shared_planned: planned_shared(m, func),
            staging_need: 0,
            staging_uses: Vec::new(),
            shared_dynamic: Vec::new(),
            scratch_terms: Vec::new(),
            scratch_base: None,
            scratch_uses: Vec::new(),
            needs_sync: false,
            loop_depth: 0,
            replicated: BTreeSet::new(),
            params: Vec::new(),
            known: Multiples::of_function(m, func),
            hidden: Vec::new(),
            tma: Vec::new(),
            rng: Vec::new(),
            prints: Vec::new(),
            folds_grid: reads_grid_y_or_z(m, func),
            grid_reads: [false; 6],
            terminated: false,
            ctx: "%ctx".to_string(),
        })
    }

    pub fn m(&self) -> &'m Module {
        self.me.m
    }

    pub fn info(&self) -> TargetInfo {
        self.me.info
    }

    pub fn err(&self, op: OpId, message: impl Into<String>) -> CodegenError {
        err(self.m(), op, message)
    }

    pub fn fresh(&mut self) -> String {
        self.tmp += 1;
        format!("%t{}", self.tmp)
    }

    pub fn label(&mut self, hint: &str) -> String {
        self.tmp += 1;
        format!("{hint}{}", self.tmp)
    }

    pub fn line(&mut self, text: impl AsRef<str>) {
        self.body.push_str("  ");
        self.body.push_str(text.as_ref());
        self.body.push('\n');
    }

    /// `%x = <text>`, returning `%x`.
    pub fn val(&mut self, text: impl AsRef<str>) -> String {
        let v = self.fresh();
        let _ = writeln!(self.body, "  {v} = {}", text.as_ref());
        v
    }

    pub fn start_block(&mut self, label: &str) {
        let _ = writeln!(self.body, "{label}:");
        self.terminated = false;
    }

    pub fn br(&mut self, label: &str) {
        if !self.terminated {
            self.line(format!("br label %{label}"));
        }
        self.terminated = true;
    }

    pub fn cond_br(&mut self, cond: &str, yes: &str, no: &str) {
        self.line(format!("br i1 {cond}, label %{yes}, label %{no}"));
        self.terminated = true;
    }

    /// A stack slot of `ty` as a generic `ptr`. AMDGPU keeps the stack in
    /// private memory (address space 5, the datalayout's `A5`): the slot is
    /// allocated there and cast to a flat pointer, as clang does; an
    /// address-space-0 alloca that survives optimization cannot be selected.
    pub fn alloca(&mut self, ty: &str) -> String {
        let v = self.fresh();
        if self.info().abi == Abi::Amdgpu {
            let _ = writeln!(
                self.allocas,
                "  {v}.p5 = alloca {ty}, align 16, addrspace(5)\n  {v} = addrspacecast ptr addrspace(5) {v}.p5 to ptr"
            );
        } else {
            let _ = writeln!(self.allocas, "  {v} = alloca {ty}, align 16");
        }
        v
    }

    /// Declares an LLVM function (intrinsic or runtime) once per module.
    pub fn declare(&mut self, decl: &str) {
        self.me.decls.insert(decl.to_string());
    }

    /// Calls an intrinsic `name` returning `ret` with typed arguments.
    pub fn intrinsic(&mut self, ret: &str, name: &str, args: &[(&str, String)]) -> String {
        let params: Vec<&str> = args.iter().map(|(t, _)| *t).collect();
        self.declare(&format!("declare {ret} @{name}({})", params.join(", ")));
        let list: Vec<String> = args.iter().map(|(t, v)| format!("{t} {v}")).collect();
        if ret == "void" {
            self.line(format!("call void @{name}({})", list.join(", ")));
            String::new()
        } else {
            self.val(format!("call {ret} @{name}({})", list.join(", ")))
        }
    }

    // ----- parameters and prologue -------------------------------------

    fn prologue(&mut self) -> Result<(), CodegenError> {
        let m = self.m();
        let func = self.func;
        let entry = m.entry_block(func).expect("functions have bodies");
        let args = m.block_args(entry).to_vec();
        let dim_names: Vec<String> = m
            .attr(func, "dims")
            .and_then(Attr::as_array)
            .map(|a| a.iter().filter_map(|d| d.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        let mutable: Vec<i64> = m.attr(func, "mutable").and_then(Attr::as_ints).unwrap_or_default();
        let trailing = args.len().saturating_sub(dim_names.len());
        let mut raw = Vec::new();
        for (i, &arg) in args.iter().enumerate() {
            let ty = m.value_type(arg).clone();
            let (llty, info) = match &ty {
                Type::Scalar(s) => (llvm_ty(*s).to_string(), ParamInfo::scalar(i, *s)),
                Type::MemRef { dims, elem, .. } => (
                    self.info().global_ptr(),
                    ParamInfo::buffer(i, *elem, dims, mutable.contains(&(i as i64))),
                ),
                other => return Err(self.err(func, format!("a kernel parameter of type `{other}` cannot be passed"))),
            };
            let mut info = info;
            if i >= trailing {
                info.dim = Some(dim_names[i - trailing].clone());
            }
            raw.push((arg, ty, llty));
            self.params.push(info);
        }
        crate::attach_constraints(m, func, &mut self.params);
        // Values of the parameters.
        for (i, (arg, ty, llty)) in raw.iter().enumerate() {
            let v = match self.info().abi {
                Abi::Cpu => {
                    let p = self.cpu_arg(i);
                    self.val(format!("load {llty}, ptr {p}"))
                }
                _ => format!("%p{i}"),
            };
            if i >= trailing {
                self.dims.insert(dim_names[i - trailing].clone(), v.clone());
            }
            let value = match ty {
                Type::Scalar(s) => Val::Scalar(*s, v),
                Type::MemRef { elem, space, .. } => Val::Buffer(Buffer {
                    base: v,
                    space: *space,
                    dims: Vec::new(),
                    elem: *elem,
                    pad: 0,
                    swizzle: None,
                }),
                _ => unreachable!("checked above"),
            };
            self.values.insert(*arg, value);
        }
        // Memref extents need the dim values, which come last.
        for (arg, ty, _) in &raw {
            if let Type::MemRef { dims, .. } = ty {
                let exts = dims
                    .iter()
                    .map(|d| self.dim_ext(d, self.func))
                    .collect::<Result<Vec<_>, _>>()?;
                if let Some(Val::Buffer(b)) = self.values.get_mut(arg) {
                    b.dims = exts;
                }
            }
        }
        self.tid = self.linear_thread_id();
        // Where the scratch slice is computed once its size is known.
        self.body.push_str("@SCRATCHSETUP@\n");
        Ok(())
    }

    /// An extent from a (possibly symbolic) dim.
    pub fn dim_ext(&mut self, d: &DimExpr, at: OpId) -> Result<Ext, CodegenError> {
        if let Some(c) = d.as_const() {
            return Ok(Ext::Const(c));
        }
        let mut acc: Option<String> = None;
        for (monomial, coeff) in d.terms() {
            let mut term = coeff.to_string();
            for sym in monomial {
                let Some(v) = self.dims.get(sym.as_str()).cloned() else {
                    return Err(self.err(at, format!("the dim `{sym}` is not a parameter of the kernel")));
                };
                term = self.val(format!("mul i64 {term}, {v}"));
            }
            acc = Some(match acc {
                None => term,
                Some(a) => self.val(format!("add i64 {a}, {term}")),
            });
        }
        Ok(Ext::Dyn(acc.unwrap_or_else(|| "0".into())))
    }

    fn linear_thread_id(&mut self) -> String {
        let ids = match self.info().abi {
            Abi::Nvptx => [
                self.sreg("tid.x"),
                self.sreg("tid.y"),
                self.sreg("tid.z"),
                self.sreg("ntid.x"),
                self.sreg("ntid.y"),
            ],
            Abi::Amdgpu => [
                self.amd_id("workitem", 0),
                self.amd_id("workitem", 1),
                self.amd_id("workitem", 2),
                self.amd_size(0),
                self.amd_size(1),
            ],
            Abi::Cpu => [
                self.cpu_field(0, 0),
                self.cpu_field(0, 1),
                self.cpu_field(0, 2),
                self.cpu_field(2, 0),
                self.cpu_field(2, 1),
            ],
        };
        self.linearize(ids)
    }

    /// `x + nx·(y + ny·z)` from `[x, y, z, nx, ny]` (x fastest, as CUDA
    /// numbers threads and blocks).
    fn linearize(&mut self, [x, y, z, nx, ny]: [String; 5]) -> String {
        let zy = self.val(format!("mul i64 {z}, {ny}"));
        let yzy = self.val(format!("add i64 {zy}, {y}"));
        let r = self.val(format!("mul i64 {yzy}, {nx}"));
        self.val(format!("add i64 {r}, {x}"))
    }

    /// The block's id along `dim` (`count` false) or the grid's size in
    /// blocks along it, as `i64`, read once at the kernel's entry.
    ///
    /// A kernel that reads its grid's y or z axis takes a hidden `i64`
    /// after the others (`KernelInfo::folds_grid`): 0, or for a launch whose
    /// y or z extent is past the hardware's 65535, the logical `X | Y << 32`
    /// of a grid the launcher folded onto the x axis (X·Y·Z blocks in one
    /// row, in the order the hardware would run the 3-D grid); the ids and
    /// sizes are then decoded from the x id, so the kernel sees the logical
    /// grid either way.
    /// A kernel that reads only its x axis reads the hardware's registers
    /// where it uses them.
    pub fn grid(&mut self, dim: usize, count: bool) -> String {
        if !self.folds_grid {
            return self.raw_grid(dim.min(2), count);
        }
        let k = dim.min(2) + if count { 3 } else { 0 };
        self.grid_reads[k] = true;
        format!("%grid{k}")
    }

    /// The hardware's block id along `dim` (`count` false) or grid size.
    fn raw_grid(&mut self, dim: usize, count: bool) -> String {
        match (self.info().abi, count) {
            (Abi::Nvptx, false) => self.sreg(&format!("ctaid.{}", ["x", "y", "z"][dim])),
            (Abi::Nvptx, true) => self.sreg(&format!("nctaid.{}", ["x", "y", "z"][dim])),
            (Abi::Amdgpu, false) => self.amd_id("workgroup", dim),
            (Abi::Amdgpu, true) => self.amd_groups(dim),
            (Abi::Cpu, false) => self.cpu_field(1, dim),
            (Abi::Cpu, true) => self.cpu_field(3, dim),
        }
    }

    /// The entry code that defines the `%grid{k}` values `grid` gave: the
    /// hardware's, or where the kernel may be folded (`grid`), a branch on
    /// the hidden parameter to them or to the decoded ones.
    fn grid_prologue(&mut self) -> String {
        let saved = std::mem::take(&mut self.body);
        let used: Vec<usize> = (0..6).filter(|&k| self.grid_reads[k]).collect();
        if self.folds_grid {
            let fold = match self.info().abi {
                Abi::Cpu => {
                    let slot = self.params.len()
                        + self.rng.len()
                        + usize::from(self.scratch_base.is_some())
                        + usize::from(!self.prints.is_empty());
                    let p = self.cpu_arg(slot);
                    self.val(format!("load i64, ptr {p}"))
                }
                _ => "%gridfold".to_string(),
            };
            let on = self.val(format!("icmp ne i64 {fold}, 0"));
            self.cond_br(&on, "gridfolded", "griddirect");
            self.start_block("griddirect");
            let direct: Vec<String> = used.iter().map(|&k| self.raw_grid(k % 3, k >= 3)).collect();
            self.br("gridready");
            self.start_block("gridfolded");
            let x = self.val(format!("trunc i64 {fold} to i32"));
            let high = self.val(format!("lshr i64 {fold}, 32"));
            let y = self.val(format!("trunc i64 {high} to i32"));
            let id = self.raw_grid(0, false);
            let id = self.val(format!("trunc i64 {id} to i32"));
            let n = self.raw_grid(0, true);
            let n = self.val(format!("trunc i64 {n} to i32"));
            let id_x = self.val(format!("urem i32 {id}, {x}"));
            let rest = self.val(format!("udiv i32 {id}, {x}"));
            let id_y = self.val(format!("urem i32 {rest}, {y}"));
            let id_z = self.val(format!("udiv i32 {rest}, {y}"));
            let plane = self.val(format!("mul i32 {x}, {y}"));
            let n_z = self.val(format!("udiv i32 {n}, {plane}"));
            let decoded = [id_x, id_y, id_z, x, y, n_z];
            let folded: Vec<String> = used
                .iter()
                .map(|&k| self.val(format!("zext i32 {} to i64", decoded[k])))
                .collect();
            self.br("gridready");
            self.start_block("gridready");
            for ((&k, d), f) in used.iter().zip(&direct).zip(&folded) {
                self.line(format!("%grid{k} = phi i64 [ {d}, %griddirect ], [ {f}, %gridfolded ]"));
            }
        }
        std::mem::replace(&mut self.body, saved)
    }

    /// On the CPU, the address of argument `slot`'s value: the kernel takes
    /// an array of pointers to its arguments.
    fn cpu_arg(&mut self, slot: usize) -> String {
        let at = self.val(format!("getelementptr ptr, ptr %args, i64 {slot}"));
        self.val(format!("load ptr, ptr {at}"))
    }

    /// A PTX special register, as `i64`.
    pub fn sreg(&mut self, reg: &str) -> String {
        let name = format!("llvm.nvvm.read.ptx.sreg.{reg}");
        let v = self.intrinsic("i32", &name, &[]);
        self.val(format!("zext i32 {v} to i64"))
    }

    /// `workitem`/`workgroup` id along `dim`, as `i64`.
    pub fn amd_id(&mut self, kind: &str, dim: usize) -> String {
        let axis = ["x", "y", "z"][dim.min(2)];
        let v = self.intrinsic("i32", &format!("llvm.amdgcn.{kind}.id.{axis}"), &[]);
        self.val(format!("zext i32 {v} to i64"))
    }

    /// The workgroup size along `dim`, read from the dispatch packet.
    pub fn amd_size(&mut self, dim: usize) -> String {
        let packet = self.intrinsic("ptr addrspace(4)", "llvm.amdgcn.dispatch.ptr", &[]);
        let at = self.val(format!(
            "getelementptr i8, ptr addrspace(4) {packet}, i64 {}",
            4 + 2 * dim.min(2)
        ));
        let size = self.val(format!("load i16, ptr addrspace(4) {at}, align 2"));
        self.val(format!("zext i16 {size} to i64"))
    }

    /// The AMD grid size in workgroups along `dim`.
    pub fn amd_groups(&mut self, dim: usize) -> String {
        let packet = self.intrinsic("ptr addrspace(4)", "llvm.amdgcn.dispatch.ptr", &[]);
        let at = self.val(format!(
            "getelementptr i8, ptr addrspace(4) {packet}, i64 {}",
            12 + 4 * dim.min(2)
        ));
        let items = self.val(format!("load i32, ptr addrspace(4) {at}, align 4"));
        let items = self.val(format!("zext i32 {items} to i64"));
        let size = self.amd_size(dim);
        let up = self.val(format!("add i64 {items}, {size}"));
        let up = self.val(format!("sub i64 {up}, 1"));
        self.val(format!("udiv i64 {up}, {size}"))
    }

    /// A field of the CPU context: `group` 0 thread id, 1 block id, 2 block
    /// dim, 3 grid dim; as `i64`.
    pub fn cpu_field(&mut self, group: usize, dim: usize) -> String {
        let at = self.val(format!(
            "getelementptr [4 x [3 x i32]], ptr %ctx, i64 0, i64 {group}, i64 {dim}"
        ));
        let v = self.val(format!("load i32, ptr {at}, align 4"));
        self.val(format!("zext i32 {v} to i64"))
    }

    /// The block's shared memory, as a pointer in the shared space.
    pub fn shared_base(&mut self) -> String {
        match self.info().abi {
            Abi::Cpu => {
                let at = self.val("getelementptr i8, ptr %ctx, i64 48");
                self.val(format!("load ptr, ptr {at}, align 8"))
            }
            _ => format!("@{}_smem", self.name),
        }
    }

    /// A barrier for the threads at hand, the whole block's or a named one
    /// ([`FnEmitter::group_barrier`]): memory writes before it are visible
    /// after it, shared and global.
    pub fn barrier(&mut self) {
        self.needs_sync = true;
        match (self.info().abi, self.group_barrier) {
            (Abi::Nvptx, Some((id, count))) => self.named_barrier(id, count),
            (Abi::Nvptx, None) => {
                self.intrinsic("void", "llvm.nvvm.barrier0", &[]);
            }
            (Abi::Amdgpu, _) => {
                self.line("fence syncscope(\"workgroup\") release");
                self.intrinsic("void", "llvm.amdgcn.s.barrier", &[]);
                self.line("fence syncscope(\"workgroup\") acquire");
            }
            (Abi::Cpu, _) => {
                self.declare("declare void @tessera_cpu_barrier(ptr, ptr)");
                let ctx = self.ctx.clone();
                let site = self.site();
                self.line(format!("call void @tessera_cpu_barrier(ptr {ctx}, ptr {site})"));
            }
        }
    }

    // ----- shared memory and scratch -----------------------------------

    /// Places `bytes` of shared memory for an allocation; gives its address.
    pub fn place_shared(&mut self, bytes: i64, align: i64) -> String {
        let align = align.max(16);
        let offset = (self.shared_static + align - 1) / align * align;
        self.shared_static = offset + bytes;
        let base = self.shared_base();
        let sp = self.info().shared_ptr();
        self.val(format!("getelementptr i8, {sp} {base}, i64 {offset}"))
    }

    /// A shared buffer of `bytes` (over the kernel's dims), laid out at the
    /// launch after the constant ones; its offset is computed on entry.
    pub fn place_dynamic_shared(&mut self, bytes: DimExpr) -> String {
        let k = self.shared_dynamic.len();
        self.shared_dynamic.push(bytes);
        let base = self.shared_base();
        let sp = self.info().shared_ptr();
        self.val(format!("getelementptr i8, {sp} {base}, i64 @DYNSHARED{k}@"))
    }

    /// Shared memory the kernel's allocations take, all of them (counted
    /// before emission, so that staging decisions see later allocations).
    pub fn shared_used(&self) -> i64 {
        self.shared_planned.max(self.shared_static)
    }

    /// The staging area (shared memory after every allocation), at least
    /// `bytes` long; valid between two barriers.
    pub fn staging(&mut self, bytes: i64) -> String {
        self.staging_need = self.staging_need.max(bytes);
        let base = self.shared_base();
        let sp = self.info().shared_ptr();
        // The offset is known only when the function is finished: patched.
        let marker = self.fresh();
        self.staging_uses.push(marker.clone());
        let _ = writeln!(self.body, "  {marker} = getelementptr i8, {sp} {base}, i64 @STAGING@");
        marker
    }

    /// `bytes` (a dim expression) of the block's global scratch.
    pub(crate) fn scratch(&mut self, bytes: DimExpr) -> String {
        let base = match &self.scratch_base {
            Some(b) => b.clone(),
            None => {
                let p = self.fresh();
                self.scratch_base = Some(p.clone());
                p
            }
        };
        let offset_marker = self.fresh();
        let at = self.fresh();
        let gp = self.info().global_ptr();
        let _ = writeln!(
            self.body,
            "  {offset_marker} = add i64 0, @SCRATCH{}@",
            self.scratch_uses.len()
        );
        let _ = writeln!(self.body, "  {at} = getelementptr i8, {gp} {base}, i64 {offset_marker}");
        self.scratch_uses.push((offset_marker, bytes.clone()));
        self.scratch_terms.push(bytes);
        at
    }

    // ----- tiles ---------------------------------------------------------

    /// A new tile of `dims` and `elem`, with storage.
    /// A new tile of `dims` and `elem` for the result of `at`, with storage,
    /// in the layout the kernel's plan gives that result.
    pub fn new_tile(&mut self, dims: &[DimExpr], elem: ScalarType, at: OpId) -> Result<Tile, CodegenError> {
        let planned = self.planned_layout(at);
        self.new_tile_in(dims, elem, at, planned)
    }

    /// The layout the kernel's plan gives the result of `at`.
    pub fn planned_layout(&self, at: OpId) -> Layout {
        self.m()
            .results(at)
            .first()
            .and_then(|v| self.layouts.get(v))
            .copied()
            .unwrap_or(Layout::Blocked)
    }

    /// A new tile in `layout` (blocked unless the tile has the fragment's
    /// shape and the block its threads).
    pub fn new_tile_in(
        &mut self,
        dims: &[DimExpr],
        elem: ScalarType,
        at: OpId,
        layout: Layout,
    ) -> Result<Tile, CodegenError> {
        let layout = match layout {
            Layout::Frag(frag)
                if frag.threads() == self.threads
                    && dims.len() == 2
                    && dims[0].as_const() == Some(frag.rows())
                    && dims[1].as_const() == Some(frag.cols()) =>
            {
                layout
            }
            Layout::Rows(frag)
                if frag.threads() == self.threads
                    && dims.len() == 2
                    && dims[0].as_const() == Some(frag.rows())
                    && dims[1].as_const() == Some(1) =>
            {
                layout
            }
            Layout::Strips(width) if layout::fits_strips(dims, width, self.threads) => layout,
            _ => Layout::Blocked,
        };
        let exts = dims
            .iter()
            .map(|d| self.dim_ext(d, at))
            .collect::<Result<Vec<_>, _>>()?;
        let total = dims.iter().fold(DimExpr::constant(1), |a, d| a.mul(d));
        let count = self.dim_ext(&total, at)?;
        let storage = match count.as_const() {
            Some(n) => {
                let per_thread = match layout {
                    Layout::Frag(frag) => frag.per_thread(),
                    Layout::Rows(frag) => frag.row_slots(),
                    Layout::Strips(_) => n / self.threads,
                    Layout::Blocked => (n + self.threads - 1) / self.threads,
                };
                let array = self.alloca(&format!("[{} x {}]", per_thread.max(1), llvm_ty(elem)));
                Storage::Private { array, per_thread }
            }
            None => {
                let bytes = total.mul(&DimExpr::constant(elem_bytes(elem)));
                Storage::Scratch {
                    base: self.scratch(bytes),
                }
            }
        };
        Ok(Tile {
            dims: exts,
            elem,
            count,
            storage,
            layout,
        })
    }

    /// Runs `body(pos)` for every element of `tile` this thread holds.
    pub fn for_own(&mut self, tile: &Tile, mut body: impl FnMut(&mut Self, &Pos)) {
        let shape: Option<Vec<i64>> = tile.dims.iter().map(Ext::as_const).collect();
        if let Layout::Rows(frag) = tile.layout {
            // A column: row slot `j` is the row of the fragment's slot
            // `slot_of_row(j)`, a constant offset from the thread's first.
            let tid = self.tid.clone();
            let (row0, _) = frag.coords(self, &tid, &"0".to_string());
            for j in 0..frag.row_slots() {
                let (dr, _) = frag.coords(&mut layout::Exact, &0, &frag.slot_of_row(j));
                let row = match dr {
                    0 => row0.clone(),
                    _ => self.val(format!("add nuw nsw i64 {row0}, {dr}")),
                };
                if let Some(shape) = shape.clone() {
                    self.indices
                        .insert(row.clone(), (shape, vec![row.clone(), "0".to_string()]));
                }
                body(
                    self,
                    &Pos {
                        e: row,
                        i: j.to_string(),
                    },
                );
            }
            return;
        }
        if let Layout::Frag(frag) = tile.layout {
            let tid = self.tid.clone();
            // Straight-line, each slot at a constant offset from the thread's
            // first element (fragment tiles are GPU tiles; the CPU meets
            // them in the tests alone): every slot address is then a constant
            // and LLVM's first SROA turns the accumulator into registers (a
            // loop, even one marked for full unrolling, keeps the array in
            // memory through every pass before the unroller, LICM's alias
            // sets above all, each walking its loads and stores).
            let (row0, col0) = frag.coords(self, &tid, &"0".to_string());
            let e0 = self.val(format!("mul nuw nsw i64 {row0}, {}", frag.cols()));
            let e0 = self.val(format!("add nuw nsw i64 {e0}, {col0}"));
            let plus = |f: &mut Self, v: &String, k: i64| match k {
                0 => v.clone(),
                _ => f.val(format!("add nuw nsw i64 {v}, {k}")),
            };
            for i in 0..frag.per_thread() {
                let (dr, dc) = frag.coords(&mut layout::Exact, &0, &i);
                let row = plus(self, &row0, dr);
                let col = plus(self, &col0, dc);
                let e = plus(self, &e0, dr * frag.cols() + dc);
                if let Some(shape) = shape.clone() {
                    self.indices.insert(e.clone(), (shape, vec![row, col]));
                }
                body(self, &Pos { e, i: i.to_string() });
            }
            return;
        }
        if let (Layout::Strips(width), Storage::Private { per_thread, .. }) = (tile.layout, &tile.storage) {
            let per_thread = *per_thread;
            self.counted_loop(&per_thread.to_string(), true, |f, i| {
                let (run, lane) = f.run_and_lane(width, i);
                let e = f.strip_element(width, &run, &lane);
                if let Some(shape) = &shape {
                    if let Some(idx) = f.strips_index(width, &run, &lane, shape) {
                        f.indices.insert(e.clone(), (shape.clone(), idx));
                    }
                }
                body(f, &Pos { e, i: i.to_string() });
            });
            return;
        }
        let t = self.threads;
        let known = match &tile.storage {
            Storage::Private { per_thread, .. } => Some(*per_thread),
            Storage::Scratch { .. } => None,
        };
        let n = tile.count.text();
        let trips = match known {
            Some(p) => p.to_string(),
            None => {
                let per = self.val(format!("add i64 {n}, {}", t - 1));
                self.val(format!("udiv i64 {per}, {t}"))
            }
        };
        let exact = tile.count.as_const().is_some_and(|c| c % t == 0);
        self.counted_loop(&trips, known.is_some(), |f, i| {
            // Element indices are small and non-negative: `nuw` lets LLVM
            // split `(t + i·T) / n` into `t / n + i·T / n`, so unrolled
            // iterations share one address plus a constant.
            let scaled = f.val(format!("mul nuw nsw i64 {i}, {t}"));
            let e = f.val(format!("add nuw nsw i64 {scaled}, {}", f.tid));
            if let Some(shape) = &shape {
                if let Some(idx) = f.blocked_index(i, shape) {
                    f.indices.insert(e.clone(), (shape.clone(), idx));
                }
            }
            let pos = Pos { e, i: i.to_string() };
            if exact {
                body(f, &pos);
            } else {
                let inside = f.val(format!("icmp slt i64 {}, {n}", pos.e));
                f.when(&inside, |f| body(f, &pos));
            }
        });
    }

    /// `tile` in `layout`: itself, or a copy through the staging area.
    pub fn relayout(&mut self, tile: &Tile, layout: Layout, at: OpId) -> Result<Tile, CodegenError> {
        if tile.layout == layout {
            return Ok(tile.clone());
        }
        // Symbolic tiles are blocked, in scratch.
        let dims: Option<Vec<DimExpr>> = tile.dims.iter().map(|d| d.as_const().map(DimExpr::constant)).collect();
        let Some(dims) = dims else {
            return Ok(tile.clone());
        };
        let out = self.new_tile_in(&dims, tile.elem, at, layout)?;
        if out.layout == tile.layout {
            return Ok(tile.clone());
        }
        let view = crate::exchange::stage(self, tile, 0);
        self.for_own(&out, |f, pos| {
            let at = view.linear(f, &pos.e);
            let v = view.load(f, &at);
            f.store_slot(&out, pos, &v);
        });
        Ok(out)
    }

    /// The slot of the element at `pos` in `tile` (any tile with the same
    /// element count and layout has the same distribution).
    pub fn slot(&mut self, tile: &Tile, pos: &Pos) -> String {
        let ty = llvm_ty(tile.elem);
        match &tile.storage {
            Storage::Private { array, per_thread } => {
                let (array, per_thread) = (array.clone(), *per_thread);
                self.val(format!(
                    "getelementptr [{per_thread} x {ty}], ptr {array}, i64 0, i64 {}",
                    pos.i
                ))
            }
            Storage::Scratch { base } => {
                let (base, gp) = (base.clone(), self.info().global_ptr());
                self.val(format!("getelementptr {ty}, {gp} {base}, i64 {}", pos.e))
            }
        }
    }

    /// Loads the element at `pos` of `tile`.
    pub fn load_slot(&mut self, tile: &Tile, pos: &Pos) -> String {
        let at = self.slot(tile, pos);
        let p = self.slot_ptr(tile);
        self.val(format!("load {}, {p} {at}", llvm_ty(tile.elem)))
    }

    /// Stores `v` (of the tile's element type) at `pos` of `tile`.
    pub fn store_slot(&mut self, tile: &Tile, pos: &Pos, v: &str) {
        let at = self.slot(tile, pos);
        let p = self.slot_ptr(tile);
        self.line(format!("store {} {v}, {p} {at}", llvm_ty(tile.elem)));
    }

    /// The pointer type of a tile's element slots.
    pub fn slot_ptr(&self, tile: &Tile) -> String {
        match tile.storage {
            Storage::Private { .. } => "ptr".to_string(),
            Storage::Scratch { .. } => self.info().global_ptr(),
        }
    }

    /// A loop `for i in 0..count` (`count` an `i64` operand); `unroll`
    /// asks LLVM to unroll it fully (constant trip counts) on GPUs, where it
    /// keeps private arrays in registers. The CPU keeps the loop: a thread's
    /// share of a big tile lives in memory there anyway, and unrolling it
    /// costs LLVM tens of seconds on a 128×128 tile.
    pub fn counted_loop(&mut self, count: &str, unroll: bool, body: impl FnOnce(&mut Self, &str)) {
        let md = if unroll && self.info().abi != Abi::Cpu {
            ", !llvm.loop !0"
        } else {
            ""
        };
        self.loop_with(count, md, body);
    }

    /// Spreads items `0..count` over `units` workers: worker `unit` (an
    /// `i64` value) takes items `unit`, `unit + units`, … below `count`, in
    /// a loop marked for full unrolling when `unroll` (else LLVM keeps it
    /// rolled or not); `body` gets each item it takes. When the workers are
    /// the block's threads and their count divides `count`, every item a
    /// thread takes exists and no bound is checked (warps are not: a
    /// partial last warp's index equals the count of whole ones).
    pub fn spread(&mut self, count: i64, units: i64, unit: &str, unroll: bool, body: impl FnOnce(&mut Self, &str)) {
        let per = (count + units - 1) / units;
        self.counted_loop(&per.to_string(), unroll, |f, i| {
            let scaled = f.val(format!("mul i64 {i}, {units}"));
            let item = f.val(format!("add i64 {scaled}, {unit}"));
            if count % units == 0 && unit == f.tid && units == f.threads {
                body(f, &item);
            } else {
                let inside = f.val(format!("icmp slt i64 {item}, {count}"));
                f.when(&inside, |f| body(f, &item));
            }
        });
    }

    /// A loop `for i in 0..count` that LLVM keeps rolled: for loops whose
    /// iterations each end at a barrier, where unrolling would keep every
    /// iteration's conditions live across all of them.
    pub fn rolled_loop(&mut self, count: &str, body: impl FnOnce(&mut Self, &str)) {
        self.loop_with(count, ", !llvm.loop !2", body);
    }

    fn loop_with(&mut self, count: &str, md: &str, body: impl FnOnce(&mut Self, &str)) {
        let var = self.alloca("i64");
        self.line(format!("store i64 0, ptr {var}"));
        let head = self.label("loop");
        let inner = self.label("body");
        let exit = self.label("done");
        self.br(&head);
        self.start_block(&head);
        let i = self.val(format!("load i64, ptr {var}"));
        let more = self.val(format!("icmp slt i64 {i}, {count}"));
        self.cond_br(&more, &inner, &exit);
        self.start_block(&inner);
        body(self, &i);
        let next = self.val(format!("add i64 {i}, 1"));
        self.line(format!("store i64 {next}, ptr {var}"));
        if !self.terminated {
            self.line(format!("br label %{head}{md}"));
            self.terminated = true;
        }
        self.start_block(&exit);
    }

    /// `if cond { body }`.
    pub fn when(&mut self, cond: &str, body: impl FnOnce(&mut Self)) {
        let yes = self.label("then");
        let done = self.label("endif");
        self.cond_br(cond, &yes, &done);
        self.start_block(&yes);
        body(self);
        self.br(&done);
        self.start_block(&done);
    }

    /// The multi-index of element `t + i·T` (`t` this thread, `T` the
    /// block's threads) in a constant row-major `shape`, dim by dim from
    /// the last: where `T` is a multiple of the dim `C`, the index is
    /// `t % C` and the rest is `t / C + i·(T / C)`; where `C` is a multiple
    /// of `T`, it is `t + (i % (C / T))·T` and the rest `i / (C / T)`.
    /// `None` for other shapes.
    fn blocked_index(&mut self, i: &str, shape: &[i64]) -> Option<Vec<String>> {
        if shape.is_empty() {
            return None;
        }
        let mut idx = vec![String::new(); shape.len()];
        let (mut t, mut threads, mut i) = (self.tid.clone(), self.threads, i.to_string());
        for (k, &c) in shape.iter().enumerate().skip(1).rev() {
            if c <= 0 {
                return None;
            }
            if threads % c == 0 {
                idx[k] = self.val(format!("urem i64 {t}, {c}"));
                t = self.val(format!("udiv i64 {t}, {c}"));
                threads /= c;
            } else if c % threads == 0 {
                let per = c / threads;
                let lane = self.val(format!("urem i64 {i}, {per}"));
                let lane = self.val(format!("mul nuw nsw i64 {lane}, {threads}"));
                idx[k] = self.val(format!("add nuw nsw i64 {t}, {lane}"));
                i = self.val(format!("udiv i64 {i}, {per}"));
                t = "0".into();
                threads = 1;
            } else {
                return None;
            }
        }
        let lead = self.val(format!("mul nuw nsw i64 {i}, {threads}"));
        idx[0] = self.val(format!("add nuw nsw i64 {t}, {lead}"));
        Some(idx)
    }

    /// The run of slot `i` (an `i64` value) of a tile in runs of `width`,
    /// and its place in the run: `i / width`, `i % width`.
    pub fn run_and_lane(&mut self, width: i64, i: &str) -> (String, String) {
        (
            self.val(format!("udiv i64 {i}, {width}")),
            self.val(format!("urem i64 {i}, {width}")),
        )
    }

    /// The element index of this thread's `lane` of `run` in a tile in runs
    /// of `width`: `run·width·T + t·width + lane`.
    pub fn strip_element(&mut self, width: i64, run: &str, lane: &str) -> String {
        let base = self.val(format!("mul nuw nsw i64 {run}, {}", width * self.threads));
        let own = self.val(format!("mul nuw nsw i64 {}, {width}", self.tid));
        let first = self.val(format!("add nuw nsw i64 {base}, {own}"));
        self.val(format!("add nuw nsw i64 {first}, {lane}"))
    }

    /// The multi-index of this thread's `lane` of `run` in a tile in runs
    /// of `width` over the constant row-major `shape`, when its last dim
    /// `C` holds whole sets of every thread's runs (`C % (width·T) == 0`:
    /// the column is `(run % (C / width·T))·width·T + t·width + lane`) or a
    /// set holds whole rows (`width·T % C == 0`: the column is
    /// `(t % (C / width))·width + lane`); `None` otherwise.
    fn strips_index(&mut self, width: i64, run: &str, lane: &str, shape: &[i64]) -> Option<Vec<String>> {
        let (&cols, lead) = shape.split_last()?;
        let set = width * self.threads;
        let tid = self.tid.clone();
        let (col, row) = if cols % set == 0 {
            let per_row = cols / set;
            let within = self.val(format!("urem i64 {run}, {per_row}"));
            let base = self.val(format!("mul nuw nsw i64 {within}, {set}"));
            let own = self.val(format!("mul nuw nsw i64 {tid}, {width}"));
            let first = self.val(format!("add nuw nsw i64 {base}, {own}"));
            let col = self.val(format!("add nuw nsw i64 {first}, {lane}"));
            (col, self.val(format!("udiv i64 {run}, {per_row}")))
        } else if cols % width == 0 && set % cols == 0 {
            let runs_per_row = cols / width;
            let t_col = self.val(format!("urem i64 {tid}, {runs_per_row}"));
            let first = self.val(format!("mul nuw nsw i64 {t_col}, {width}"));
            let col = self.val(format!("add nuw nsw i64 {first}, {lane}"));
            let t_row = self.val(format!("udiv i64 {tid}, {runs_per_row}"));
            let rows = self.val(format!("mul nuw nsw i64 {run}, {}", set / cols));
            (col, self.val(format!("add nuw nsw i64 {rows}, {t_row}")))
        } else {
            return None;
        };
        let mut idx = vec![String::new(); shape.len()];
        idx[shape.len() - 1] = col;
        let mut rest = row;
        for (k, &d) in lead.iter().enumerate().rev() {
            if k == 0 {
                idx[0] = rest.clone();
            } else {
                idx[k] = self.val(format!("urem i64 {rest}, {d}"));
                rest = self.val(format!("udiv i64 {rest}, {d}"));
            }
        }
        Some(idx)
    }

    /// What `for_own` computed for `e`, when it indexes `dims`.
    fn known_index(&self, e: &str, dims: &[Ext]) -> Option<Vec<String>> {
        let (shape, idx) = self.indices.get(e)?;
        let same = shape.len() == dims.len() && shape.iter().zip(dims).all(|(s, d)| d.as_const() == Some(*s));
        same.then(|| idx.clone())
    }

    /// Row and column of element `e` of a 2-D tile (`cols` columns).
    pub fn row_col(&mut self, e: &str, cols: &Ext) -> (String, String) {
        if let Some((shape, idx)) = self.indices.get(e) {
            if shape.len() == 2 && cols.as_const() == Some(shape[1]) {
                return (idx[0].clone(), idx[1].clone());
            }
        }
        let c = cols.text();
        let r = self.val(format!("udiv i64 {e}, {c}"));
        let col = self.val(format!("urem i64 {e}, {c}"));
        (r, col)
    }

    /// Multi-index of element `e` in a row-major shape.
    pub fn unravel(&mut self, e: &str, dims: &[Ext]) -> Vec<String> {
        if let Some(idx) = self.known_index(e, dims) {
            return idx;
        }
        let mut idx = vec![String::new(); dims.len()];
        let mut rest = e.to_string();
        for (k, d) in dims.iter().enumerate().rev() {
            if k == 0 {
                idx[k] = rest.clone();
            } else {
                let dt = d.text();
                idx[k] = self.val(format!("urem i64 {rest}, {dt}"));
                rest = self.val(format!("udiv i64 {rest}, {dt}"));
            }
        }
        idx
    }

    /// Row-major linear index of `idx` in `dims`.
    pub fn ravel(&mut self, idx: &[String], dims: &[Ext]) -> String {
        let mut acc = "0".to_string();
        for (k, i) in idx.iter().enumerate() {
            if k > 0 {
                acc = self.val(format!("mul i64 {acc}, {}", dims[k].text()));
            }
            acc = self.val(format!("add i64 {acc}, {i}"));
        }
        acc
    }

    /// The address of `buffer[idx]` (row-major, rows padded by `pad`, the
    /// last two dims swizzled by `swizzle`).
    pub fn element_ptr(&mut self, b: &Buffer, idx: &[String]) -> String {
        let ty = llvm_ty(b.elem);
        let pt = self.buffer_ptr_ty(b);
        if idx.is_empty() {
            return b.base.clone();
        }
        if let (Some(s), [lead @ .., r, c]) = (b.swizzle, idx) {
            // Leading indices step over whole swizzled matrices.
            let lead = self.ravel(lead, &b.dims[..lead.len()]);
            let at = self.val(format!("mul i64 {lead}, {}", s.matrix_bytes()));
            let cb = self.val(format!("mul i64 {c}, {}", elem_bytes(b.elem)));
            let within = s.emit_offset(self, r, &cb);
            let at = self.val(format!("add i64 {at}, {within}"));
            return self.val(format!("getelementptr i8, {pt} {}, i64 {at}", b.base));
        }
        let mut dims = b.dims.clone();
        if b.pad > 0 {
            if let Some(last) = dims.last_mut() {
                *last = match last {
                    Ext::Const(c) => Ext::Const(*c + b.pad),
                    Ext::Dyn(v) => {
                        let v = v.clone();
                        Ext::Dyn(self.val(format!("add i64 {v}, {}", b.pad)))
                    }
                };
            }
        }
        let lin = self.ravel(idx, &dims);
        self.val(format!("getelementptr {ty}, {pt} {}, i64 {lin}", b.base))
    }

    pub fn buffer_ptr_ty(&self, b: &Buffer) -> String {
        match b.space {
            MemSpace::Shared => self.info().shared_ptr(),
            MemSpace::Local => "ptr".to_string(),
            _ => self.info().global_ptr(),
        }
    }

    /// The operands of `op` as generated values.
    pub fn operand(&self, op: OpId, i: usize) -> Result<Val, CodegenError> {
        let m = self.m();
        let v = *m
            .operands(op)
            .get(i)
            .ok_or_else(|| self.err(op, format!("`{}` lacks operand {i}", m.op(op).name.as_str())))?;
        self.values.get(&v).cloned().ok_or_else(|| {
            self.err(
                op,
                "an operand has no generated value (is it defined in a region that ended?)",
            )
        })
    }

    pub fn scalar(&self, op: OpId, i: usize) -> Result<(ScalarType, String), CodegenError> {
        match self.operand(op, i)? {
            Val::Scalar(s, v) => Ok((s, v)),
            _ => Err(self.err(
                op,
                format!("operand {i} of `{}` must be a scalar", self.m().op(op).name.as_str()),
            )),
        }
    }

    pub fn index(&mut self, op: OpId, i: usize) -> Result<String, CodegenError> {
        let (s, v) = self.scalar(op, i)?;
        Ok(self.convert(&v, s, ScalarType::Index))
    }

    pub fn buffer(&self, op: OpId, i: usize) -> Result<Buffer, CodegenError> {
        match self.operand(op, i)? {
            Val::Buffer(b) => Ok(b),
            _ => Err(self.err(
                op,
                format!("operand {i} of `{}` must be a memref", self.m().op(op).name.as_str()),
            )),
        }
    }

    pub fn tile(&self, op: OpId, i: usize) -> Result<Tile, CodegenError> {
        match self.operand(op, i)? {
            Val::Tile(t) => Ok(t),
            _ => Err(self.err(
                op,
                format!("operand {i} of `{}` must be a tile", self.m().op(op).name.as_str()),
            )),
        }
    }

    pub fn set(&mut self, op: OpId, v: Val) {
        if let Some(&r) = self.m().results(op).first() {
            self.values.insert(r, v);
        }
    }

    pub fn result_type(&self, op: OpId) -> Result<Type, CodegenError> {
        self.m()
            .results(op)
            .first()
            .map(|&r| self.m().value_type(r).clone())
            .ok_or_else(|| self.err(op, "the op has no result"))
    }

    // ----- scalar arithmetic -------------------------------------------

    /// Converts `v` from `from` to `to` (round to nearest even; float to
    /// integer truncates toward zero).
    pub fn convert(&mut self, v: &str, from: ScalarType, to: ScalarType) -> String {
        self.convert_with(v, from, to, false)
    }

    /// [`FnEmitter::convert`]; with `saturate`, a float beyond the range of
    /// a narrower float type `to` becomes `to`'s largest value of its sign.
    pub fn convert_with(&mut self, v: &str, from: ScalarType, to: ScalarType, saturate: bool) -> String {
        if from == to {
            return v.to_string();
        }
        if let Some(format) = minifloat::format(from) {
            let x = self.decode_minifloat(v, format);
            return self.convert_with(&x, ScalarType::F32, to, saturate);
        }
        if let Some(format) = minifloat::format(to) {
            return match from {
                ScalarType::F64 => self.encode_minifloat(v, &minifloat::DOUBLE, format, saturate),
                ScalarType::F32 => self.encode_minifloat(v, &minifloat::FLOAT, format, saturate),
                // Exact in `float` (16-bit floats) or `double` (integers up
                // to 2^53, far beyond every narrow format's range).
                ScalarType::F16 | ScalarType::BF16 => {
                    let x = self.convert(v, from, ScalarType::F32);
                    self.encode_minifloat(&x, &minifloat::FLOAT, format, saturate)
                }
                _ => {
                    let x = self.convert(v, from, ScalarType::F64);
                    self.encode_minifloat(&x, &minifloat::DOUBLE, format, saturate)
                }
            };
        }
        let v = &match largest_finite(to)
            .filter(|&max| saturate && from.is_float() && max < largest_finite(from).unwrap_or(0.0))
        {
            Some(max) => {
                let t = llvm_ty(from);
                let (hi, lo) = (float_lit(from, max), float_lit(from, -max));
                let above = self.val(format!("fcmp ogt {t} {v}, {hi}"));
                let v = self.val(format!("select i1 {above}, {t} {hi}, {t} {v}"));
                let below = self.val(format!("fcmp olt {t} {v}, {lo}"));
                self.val(format!("select i1 {below}, {t} {lo}, {t} {v}"))
            }
            None => v.to_string(),
        };
        if llvm_ty(from) == llvm_ty(to) && from.is_float() == to.is_float() {
            return v.to_string();
        }
        let (ft, tt) = (llvm_ty(from), llvm_ty(to));
        match (
            from.is_float() && !is_narrow_float(from),
            to.is_float() && !is_narrow_float(to),
        ) {
            (true, true) => {
                let (fb, tb) = (from.bits(), to.bits());
                if from == ScalarType::BF16 && to == ScalarType::F16
                    || from == ScalarType::F16 && to == ScalarType::BF16
                {
                    let wide = self.val(format!("fpext {ft} {v} to float"));
                    self.val(format!("fptrunc float {wide} to {tt}"))
                } else if fb < tb {
                    self.val(format!("fpext {ft} {v} to {tt}"))
                } else {
                    self.val(format!("fptrunc {ft} {v} to {tt}"))
                }
            }
            (true, false) => {
                if to == ScalarType::I1 {
                    return self.val(format!("fcmp une {ft} {v}, 0.0"));
                }
                // Saturating, as PTX's `cvt.rzi` is: a value beyond the
                // integer's range gives its bound, NaN gives 0, on every target.
                let op = if to.is_unsigned() { "fptoui" } else { "fptosi" };
                let name = format!("llvm.{op}.sat.{tt}.{}", float_suffix(from));
                self.intrinsic(tt, &name, &[(ft, v.to_string())])
            }
            (false, true) => {
                let op = if from.is_unsigned() { "uitofp" } else { "sitofp" };
                self.val(format!("{op} {ft} {v} to {tt}"))
            }
            (false, false) => {
                let (fb, tb) = (from.bits().max(1), to.bits().max(1));
                let fb = if from == ScalarType::Index { 64 } else { fb };
                let tb = if to == ScalarType::Index { 64 } else { tb };
                if to == ScalarType::I1 {
                    self.val(format!("icmp ne {ft} {v}, 0"))
                } else if fb < tb {
                    let op = if from.is_unsigned() { "zext" } else { "sext" };
                    self.val(format!("{op} {ft} {v} to {tt}"))
                } else if fb > tb {
                    self.val(format!("trunc {ft} {v} to {tt}"))
                } else {
                    v.to_string()
                }
            }
        }
    }

    /// A constant holding the source location of the op being emitted (a
    /// `TesseraCpuSite`: its file's path and byte range), for the CPU
    /// runtime's reports.
    pub fn site(&mut self) -> String {
        let (file, start, end) = match self.current.map(|op| &self.m().op(op).loc) {
            Some(tessera_ir::Loc::Source { file, start, end }) => (file.clone(), *start, *end),
            _ => (String::new(), 0, 0),
        };
        let path = self.file_constant(&file);
        let n = self.label("");
        let site = format!("@tsr_site.{}.{n}", self.name);
        self.declare(&format!(
            "{site} = private unnamed_addr constant {{ ptr, i32, i32 }} {{ ptr {path}, i32 {start}, i32 {end} }}"
        ));
        site
    }

    /// A NUL-terminated constant holding `path`, one per path in a module.
    fn file_constant(&mut self, path: &str) -> String {
        let hash = path.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        let name = format!("@tsr_file.{hash:016x}");
        let bytes: String = path
            .bytes()
            .map(|b| match b {
                b' '..=b'~' if b != b'"' && b != b'\\' => (b as char).to_string(),
                _ => format!("\\{b:02X}"),
            })
            .collect();
        self.declare(&format!(
            "{name} = private unnamed_addr constant [{} x i8] c\"{bytes}\\00\"",
            path.len() + 1
        ));
        name
    }

    /// On the CPU, a divisor that cannot trap: an integer division by zero
    /// is reported to the runtime (`tessera_cpu_div0`, E1009) and divides by
    /// 1 instead; `MIN // -1`, which overflows (x86 traps), divides by 1 too,
    /// which gives what wrapping gives: `MIN`, remainder 0.
    fn safe_divisor(&mut self, s: ScalarType, a: &str, b: &str) -> String {
        if self.info().abi != Abi::Cpu {
            return b.to_string();
        }
        let t = llvm_ty(s);
        let zero = self.val(format!("icmp eq {t} {b}, 0"));
        let site = self.site();
        let ctx = self.ctx.clone();
        self.declare("declare void @tessera_cpu_div0(ptr, ptr)");
        self.when(&zero, |f| {
            f.line(format!("call void @tessera_cpu_div0(ptr {ctx}, ptr {site})"))
        });
        let b = self.val(format!("select i1 {zero}, {t} 1, {t} {b}"));
        if s.is_unsigned() {
            return b;
        }
        let min = i64::MIN >> (64 - s.bits().max(1));
        let is_min = self.val(format!("icmp eq {t} {a}, {min}"));
        let minus_one = self.val(format!("icmp eq {t} {b}, -1"));
        let overflow = self.val(format!("and i1 {is_min}, {minus_one}"));
        self.val(format!("select i1 {overflow}, {t} 1, {t} {b}"))
    }

    /// `a fn b` on scalars of type `s`. fp8 and fp4 values, storage formats
    /// with no arithmetic of their own, are computed on as the f32 values
    /// they decode to exactly, and the result rounds once to their dtype.
    pub fn binary(&mut self, f: &str, s: ScalarType, a: &str, b: &str) -> Result<String, String> {
        if is_narrow_float(s) {
            let (a, b) = (self.convert(a, s, ScalarType::F32), self.convert(b, s, ScalarType::F32));
            let r = self.binary(f, ScalarType::F32, &a, &b)?;
            return Ok(self.convert(&r, ScalarType::F32, s));
        }
        if !s.is_float() && matches!(f, "div" | "floordiv" | "rem") {
            let safe = self.safe_divisor(s, a, b);
            return self.binary_of(f, s, a, &safe);
        }
        self.binary_of(f, s, a, b)
    }

    fn binary_of(&mut self, f: &str, s: ScalarType, a: &str, b: &str) -> Result<String, String> {
        let t = llvm_ty(s);
        let float = s.is_float();
        let u = s.is_unsigned();
        Ok(match (f, float) {
            ("add", true) => self.val(format!("fadd {t} {a}, {b}")),
            ("sub", true) => self.val(format!("fsub {t} {a}, {b}")),
            ("mul", true) => self.val(format!("fmul {t} {a}, {b}")),
            ("div", true) => self.val(format!("fdiv {t} {a}, {b}")),
            ("rem", true) => self.float_divmod(s, a, b).1,
            ("floordiv", true) => self.float_divmod(s, a, b).0,
            // NaN-propagating, as NumPy's `maximum` and the host's tensors:
            // a max reduction over a row with a NaN gives NaN.
            ("max", true) => self.intrinsic(
                t,
                &format!("llvm.maximum.{}", float_suffix(s)),
                &[(t, a.into()), (t, b.into())],
            ),
            ("min", true) => self.intrinsic(
                t,
                &format!("llvm.minimum.{}", float_suffix(s)),
                &[(t, a.into()), (t, b.into())],
            ),
            ("pow", true) => self.pow(s, a, b),
            ("add", false) => self.val(format!("add {t} {a}, {b}")),
            ("sub", false) => self.val(format!("sub {t} {a}, {b}")),
            ("mul", false) => self.val(format!("mul {t} {a}, {b}")),
            ("div", false) => self.val(format!("{} {t} {a}, {b}", if u { "udiv" } else { "sdiv" })),
            ("rem", false) if u => self.val(format!("urem {t} {a}, {b}")),
            ("rem", false) => {
                // Python's modulo: the sign of the divisor.
                let r = self.val(format!("srem {t} {a}, {b}"));
                let nz = self.val(format!("icmp ne {t} {r}, 0"));
                let x = self.val(format!("xor {t} {r}, {b}"));
                let neg = self.val(format!("icmp slt {t} {x}, 0"));
                let fix = self.val(format!("and i1 {nz}, {neg}"));
                let adj = self.val(format!("add {t} {r}, {b}"));
                self.val(format!("select i1 {fix}, {t} {adj}, {t} {r}"))
            }
            ("floordiv", false) if u => self.val(format!("udiv {t} {a}, {b}")),
            ("floordiv", false) => {
                let q = self.val(format!("sdiv {t} {a}, {b}"));
                let r = self.val(format!("srem {t} {a}, {b}"));
                let nz = self.val(format!("icmp ne {t} {r}, 0"));
                let x = self.val(format!("xor {t} {r}, {b}"));
                let neg = self.val(format!("icmp slt {t} {x}, 0"));
                let fix = self.val(format!("and i1 {nz}, {neg}"));
                let down = self.val(format!("sub {t} {q}, 1"));
                self.val(format!("select i1 {fix}, {t} {down}, {t} {q}"))
            }
            ("max", false) => {
                let c = self.val(format!("icmp {} {t} {a}, {b}", if u { "ugt" } else { "sgt" }));
                self.val(format!("select i1 {c}, {t} {a}, {t} {b}"))
            }
            ("min", false) => {
                let c = self.val(format!("icmp {} {t} {a}, {b}", if u { "ult" } else { "slt" }));
                self.val(format!("select i1 {c}, {t} {a}, {t} {b}"))
            }
            ("pow", false) => {
                // In i64, then back to the type (wrapping, as integer arithmetic does).
                self.me.uses_math = true;
                let widen = |f: &mut Self, v: &str| {
                    if s.bits() >= 64 {
                        v.to_string()
                    } else {
                        f.val(format!("{} {t} {v} to i64", if u { "zext" } else { "sext" }))
                    }
                };
                let (wa, wb) = (widen(self, a), widen(self, b));
                let r = self.val(format!("call i64 @tsr_ipow_i64(i64 {wa}, i64 {wb})"));
                if s.bits() >= 64 {
                    r
                } else {
                    self.val(format!("trunc i64 {r} to {t}"))
                }
            }
            ("and", false) => self.val(format!("and {t} {a}, {b}")),
            ("or", false) => self.val(format!("or {t} {a}, {b}")),
            ("xor", false) => self.val(format!("xor {t} {a}, {b}")),
            // A shift by the width or more (an amount read as unsigned)
            // gives what PTX's clamped shifts give: 0, or the sign for an
            // arithmetic right shift. LLVM's are poison there.
            ("shl" | "shr", false) if !u && f == "shr" => {
                let over = self.val(format!("icmp uge {t} {b}, {}", s.bits()));
                let amount = self.val(format!("select i1 {over}, {t} {}, {t} {b}", s.bits() - 1));
                self.val(format!("ashr {t} {a}, {amount}"))
            }
            ("shl" | "shr", false) => {
                let over = self.val(format!("icmp uge {t} {b}, {}", s.bits()));
                let op = if f == "shl" { "shl" } else { "lshr" };
                let r = self.val(format!("{op} {t} {a}, {b}"));
                self.val(format!("select i1 {over}, {t} 0, {t} {r}"))
            }
            _ => return Err(format!("the operation `{f}` on `{}` is not supported", s.name())),
        })
    }

    /// `exp` or `exp2` (`f`) where the IR allows the hardware's
    /// approximation (`approx`, never in deterministic code): on NVIDIA
    /// GPUs, of an `f32` or a narrower float, `ex2.approx.ftz.f32` of
    /// `x · log2(e)` (CUDA's `__expf`) or of `x` (`exp2f`'s fast form) —
    /// one special-function instruction in place of Tessera's polynomial
    /// of some thirty; elsewhere, and for `f64`, Tessera's own routine.
    pub fn approx_exp(&mut self, f: &str, s: ScalarType, a: &str) -> Result<String, String> {
        let narrow = matches!(s, ScalarType::F16 | ScalarType::BF16);
        if self.info().abi != Abi::Nvptx || !(s == ScalarType::F32 || narrow) {
            return self.unary(f, s, a);
        }
        let x = self.convert(a, s, ScalarType::F32);
        let t = if f == "exp2" {
            x
        } else {
            self.val(format!(
                "fmul float {x}, {}",
                float_lit(ScalarType::F32, std::f64::consts::LOG2_E)
            ))
        };
        let e = self.intrinsic("float", "llvm.nvvm.ex2.approx.ftz.f", &[("float", t)]);
        Ok(self.convert(&e, ScalarType::F32, s))
    }

    /// `fn a` on a scalar of type `s` (fp8 and fp4 through f32, as `binary`).
    pub fn unary(&mut self, f: &str, s: ScalarType, a: &str) -> Result<String, String> {
        if is_narrow_float(s) {
            let a = self.convert(a, s, ScalarType::F32);
            let r = self.unary(f, ScalarType::F32, &a)?;
            return Ok(self.convert(&r, ScalarType::F32, s));
        }
        let t = llvm_ty(s);
        let float = s.is_float();
        Ok(match (f, float) {
            ("neg", true) => self.val(format!("fneg {t} {a}")),
            ("neg", false) => self.val(format!("sub {t} 0, {a}")),
            ("abs", true) => self.intrinsic(t, &format!("llvm.fabs.{}", float_suffix(s)), &[(t, a.into())]),
            ("abs", false) => {
                let n = self.val(format!("sub {t} 0, {a}"));
                let c = self.val(format!("icmp slt {t} {a}, 0"));
                self.val(format!("select i1 {c}, {t} {n}, {t} {a}"))
            }
            // NaN stays NaN (unordered compares true), as PyTorch's.
            ("relu", true) => {
                let zero = float_lit(s, 0.0);
                let c = self.val(format!("fcmp ugt {t} {a}, {zero}"));
                self.val(format!("select i1 {c}, {t} {a}, {t} {zero}"))
            }
            ("relu", false) => {
                let c = self.val(format!("icmp sgt {t} {a}, 0"));
                self.val(format!("select i1 {c}, {t} {a}, {t} 0"))
            }
            ("not", false) => self.val(format!("xor {t} {a}, -1")),
            ("popcount", false) => self.intrinsic(t, &format!("llvm.ctpop.{t}"), &[(t, a.into())]),
            ("sqrt", true) => self.intrinsic(t, &format!("llvm.sqrt.{}", float_suffix(s)), &[(t, a.into())]),
            ("rsqrt", true) => {
                let r = self.intrinsic(t, &format!("llvm.sqrt.{}", float_suffix(s)), &[(t, a.into())]);
                self.val(format!("fdiv {t} {}, {r}", float_lit(s, 1.0)))
            }
            ("exp" | "exp2" | "log" | "tanh" | "sin" | "cos" | "erf", true) => self.math(f, s, a)?,
            ("floor" | "ceil", true) => {
                // Exact at every width: the halves round through f32.
                let wide = matches!(s, ScalarType::F16 | ScalarType::BF16);
                let (wt, ws) = if wide { ("float", ScalarType::F32) } else { (t, s) };
                let x = if wide {
                    self.val(format!("fpext {t} {a} to float"))
                } else {
                    a.to_string()
                };
                let r = self.intrinsic(wt, &format!("llvm.{f}.{}", float_suffix(ws)), &[(wt, x)]);
                if wide {
                    self.val(format!("fptrunc float {r} to {t}"))
                } else {
                    r
                }
            }
            ("floor" | "ceil", false) => a.to_string(),
            ("sigmoid", true) => {
                let n = self.val(format!("fneg {t} {a}"));
                let e = self.math("exp", s, &n)?;
                let d = self.val(format!("fadd {t} {e}, {}", float_lit(s, 1.0)));
                self.val(format!("fdiv {t} {}, {d}", float_lit(s, 1.0)))
            }
            ("silu", true) => {
                let sg = self.unary("sigmoid", s, a)?;
                self.val(format!("fmul {t} {a}, {sg}"))
            }
            ("gelu_erf", true) => {
                // 0.5·x·(1 + erf(x/√2)), in f32 at least.
                let narrow = matches!(s, ScalarType::F16 | ScalarType::BF16);
                let (w, ws) = if narrow {
                    (self.val(format!("fpext {t} {a} to float")), ScalarType::F32)
                } else {
                    (a.to_string(), s)
                };
                let wt = llvm_ty(ws);
                let scaled = self.val(format!(
                    "fmul {wt} {w}, {}",
                    float_lit(ws, std::f64::consts::FRAC_1_SQRT_2)
                ));
                let erf = self.math("erf", ws, &scaled)?;
                let one = self.val(format!("fadd {wt} {erf}, {}", float_lit(ws, 1.0)));
                let half = self.val(format!("fmul {wt} {w}, {}", float_lit(ws, 0.5)));
                let r = self.val(format!("fmul {wt} {half}, {one}"));
                if narrow {
                    self.val(format!("fptrunc float {r} to {t}"))
                } else {
                    r
                }
            }
            ("gelu", true) => {
                // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
                let x3 = self.val(format!("fmul {t} {a}, {a}"));
                let x3 = self.val(format!("fmul {t} {x3}, {a}"));
                let k = self.val(format!("fmul {t} {x3}, {}", float_lit(s, 0.044715)));
                let inner = self.val(format!("fadd {t} {a}, {k}"));
                let inner = self.val(format!("fmul {t} {inner}, {}", float_lit(s, 0.7978845608028654)));
                let th = self.math("tanh", s, &inner)?;
                let one = self.val(format!("fadd {t} {th}, {}", float_lit(s, 1.0)));
                let half = self.val(format!("fmul {t} {a}, {}", float_lit(s, 0.5)));
                self.val(format!("fmul {t} {half}, {one}"))
            }
            _ => return Err(format!("the operation `{f}` on `{}` is not supported", s.name())),
        })
    }

    /// C99's `fmod` on floats of type `s`: Tessera's own (math.ll), exact,
    /// in f64 for the narrower floats.
    fn fmod(&mut self, s: ScalarType, a: &str, b: &str) -> String {
        self.me.uses_math = true;
        if s == ScalarType::F64 {
            return self.val(format!("call double @tsr_fmod_f64(double {a}, double {b})"));
        }
        let t = llvm_ty(s);
        let wa = self.val(format!("fpext {t} {a} to double"));
        let wb = self.val(format!("fpext {t} {b} to double"));
        let r = self.val(format!("call double @tsr_fmod_f64(double {wa}, double {wb})"));
        self.val(format!("fptrunc double {r} to {t}"))
    }

    /// `(a // b, a % b)` on floats as Python and NumPy compute them: the
    /// remainder exact (`fmod`, moved to the divisor's sign, a zero taking
    /// the divisor's sign), the quotient from it, rounded to the nearest
    /// integer; a zero divisor gives `a / b` and NaN.
    fn float_divmod(&mut self, s: ScalarType, a: &str, b: &str) -> (String, String) {
        let t = llvm_ty(s);
        let zero = float_lit(s, 0.0);
        let one = float_lit(s, 1.0);
        let sfx = float_suffix(s);
        let m0 = self.fmod(s, a, b);
        let d0 = self.val(format!("fsub {t} {a}, {m0}"));
        let d0 = self.val(format!("fdiv {t} {d0}, {b}"));
        let mnz = self.val(format!("fcmp une {t} {m0}, {zero}"));
        let mneg = self.val(format!("fcmp olt {t} {m0}, {zero}"));
        let bneg = self.val(format!("fcmp olt {t} {b}, {zero}"));
        let differ = self.val(format!("xor i1 {mneg}, {bneg}"));
        let fix = self.val(format!("and i1 {mnz}, {differ}"));
        let m1 = self.val(format!("fadd {t} {m0}, {b}"));
        let d1 = self.val(format!("fsub {t} {d0}, {one}"));
        let m = self.val(format!("select i1 {fix}, {t} {m1}, {t} {m0}"));
        let signed_zero = self.intrinsic(t, &format!("llvm.copysign.{sfx}"), &[(t, zero.clone()), (t, b.into())]);
        let m = self.val(format!("select i1 {mnz}, {t} {m}, {t} {signed_zero}"));
        let div = self.val(format!("select i1 {fix}, {t} {d1}, {t} {d0}"));
        let fl = self.intrinsic(t, &format!("llvm.floor.{sfx}"), &[(t, div.clone())]);
        let frac = self.val(format!("fsub {t} {div}, {fl}"));
        let up = self.val(format!("fcmp ogt {t} {frac}, {}", float_lit(s, 0.5)));
        let fl1 = self.val(format!("fadd {t} {fl}, {one}"));
        let q = self.val(format!("select i1 {up}, {t} {fl1}, {t} {fl}"));
        let quotient = self.val(format!("fdiv {t} {a}, {b}"));
        let qzero = self.intrinsic(
            t,
            &format!("llvm.copysign.{sfx}"),
            &[(t, zero.clone()), (t, quotient.clone())],
        );
        let dnz = self.val(format!("fcmp une {t} {div}, {zero}"));
        let q = self.val(format!("select i1 {dnz}, {t} {q}, {t} {qzero}"));
        let bz = self.val(format!("fcmp oeq {t} {b}, {zero}"));
        let q = self.val(format!("select i1 {bz}, {t} {quotient}, {t} {q}"));
        let m = self.val(format!("select i1 {bz}, {t} {m0}, {t} {m}"));
        (q, m)
    }

    /// `a ** b` on floats of type `s`: Tessera's own `pow` (math.ll), in
    /// f32 for the 16-bit floats.
    fn pow(&mut self, s: ScalarType, a: &str, b: &str) -> String {
        self.me.uses_math = true;
        let t = llvm_ty(s);
        match s {
            ScalarType::F64 => self.val(format!("call double @tsr_pow_f64(double {a}, double {b})")),
            ScalarType::F32 => self.val(format!("call float @tsr_pow_f32(float {a}, float {b})")),
            _ => {
                let wa = self.val(format!("fpext {t} {a} to float"));
                let wb = self.val(format!("fpext {t} {b} to float"));
                let r = self.val(format!("call float @tsr_pow_f32(float {wa}, float {wb})"));
                self.val(format!("fptrunc float {r} to {t}"))
            }
        }
    }

    /// Tessera's own `exp`, `log`, `tanh` (the same bits on every target:
    /// computed in f32 or f64 by `tsr_*` functions in the module prelude).
    pub fn math(&mut self, f: &str, s: ScalarType, a: &str) -> Result<String, String> {
        self.me.uses_math = true;
        let t = llvm_ty(s);
        match s {
            ScalarType::F32 => Ok(self.val(format!("call float @tsr_{f}_f32(float {a})"))),
            ScalarType::F64 => Ok(self.val(format!("call double @tsr_{f}_f64(double {a})"))),
            ScalarType::F16 | ScalarType::BF16 => {
                let w = self.val(format!("fpext {t} {a} to float"));
                let r = self.val(format!("call float @tsr_{f}_f32(float {w})"));
                Ok(self.val(format!("fptrunc float {r} to {t}")))
            }
            _ => Err(format!("`{f}` needs a float, not `{}`", s.name())),
        }
    }

    pub fn cmp(&mut self, pred: &str, s: ScalarType, a: &str, b: &str) -> String {
        // fp8 and fp4 values are bytes in LLVM: they compare as the f32
        // values they convert to exactly.
        if is_narrow_float(s) {
            let (a, b) = (self.convert(a, s, ScalarType::F32), self.convert(b, s, ScalarType::F32));
            return self.cmp(pred, ScalarType::F32, &a, &b);
        }
        let t = llvm_ty(s);
        if s.is_float() {
            let p = match pred {
                "lt" => "olt",
                "le" => "ole",
                "gt" => "ogt",
                "ge" => "oge",
                "eq" => "oeq",
                _ => "une",
            };
            self.val(format!("fcmp {p} {t} {a}, {b}"))
        } else {
            let u = s.is_unsigned();
            let p = match (pred, u) {
                ("lt", false) => "slt",
                ("le", false) => "sle",
                ("gt", false) => "sgt",
                ("ge", false) => "sge",
                ("lt", true) => "ult",
                ("le", true) => "ule",
                ("gt", true) => "ugt",
                ("ge", true) => "uge",
                ("eq", _) => "eq",
                _ => "ne",
            };
            self.val(format!("icmp {p} {t} {a}, {b}"))
        }
    }

    // ----- blocks and control flow --------------------------------------

    pub fn block(&mut self, block: tessera_ir::BlockId) -> Result<(), CodegenError> {
        for op in self.m().block_ops(block).to_vec() {
            if self.terminated {
                // Code after a return/break/continue is unreachable.
                let dead = self.label("dead");
                self.start_block(&dead);
            }
            self.op(op)?;
        }
        Ok(())
    }

    /// `bar.sync id, count`: the barrier `id` of `count` threads.
    pub fn named_barrier(&mut self, id: i64, count: i64) {
        self.needs_sync = true;
        self.intrinsic(
            "void",
            "llvm.nvvm.barrier.sync.cnt",
            &[("i32", id.to_string()), ("i32", count.to_string())],
        );
    }

    pub(crate) fn region(&mut self, op: OpId, index: usize) -> Result<(), CodegenError> {
        let r = self.m().regions(op)[index];
        let b = self.m().region_block(r);
        self.block(b)
    }

    fn op(&mut self, op: OpId) -> Result<(), CodegenError> {
        self.current = Some(op);
        let m = self.m();
        let name = m.op(op).name.as_str().to_string();
        match name.as_str() {
            "tile.yield" | "tile.condition" => Ok(()),
            "tile.return" | "func.return" => {
                self.line("ret void");
                self.terminated = true;
                Ok(())
            }
            "tile.for" => self.for_op(op),
            "tile.if" => self.if_op(op),
            "nvptx.warp_specialize" => crate::hopper::warp_specialize(self, op),
            "tile.while" => self.while_op(op),
            "tile.break" | "tile.continue" => {
                let Some(l) = self.loops.last() else {
                    return Err(self.err(op, "`break`/`continue` outside a loop"));
                };
                let to = if name == "tile.break" {
                    l.break_to.clone()
                } else {
                    l.continue_to.clone()
                };
                self.br(&to);
                Ok(())
            }
            _ => crate::ops::emit_op(self, op, &name),
        }
    }

    fn for_op(&mut self, op: OpId) -> Result<(), CodegenError> {
        let lb = self.index(op, 0)?;
        let ub = self.index(op, 1)?;
        let step = self.index(op, 2)?;
        let var = self.alloca("i64");
        self.line(format!("store i64 {lb}, ptr {var}"));
        let head = self.label("for");
        let body = self.label("forbody");
        let latch = self.label("forlatch");
        let exit = self.label("forexit");
        self.br(&head);
        self.start_block(&head);
        let i = self.val(format!("load i64, ptr {var}"));
        let more = self.val(format!("icmp slt i64 {i}, {ub}"));
        self.cond_br(&more, &body, &exit);
        self.start_block(&body);
        let r = self.m().regions(op)[0];
        if let Some(&iv) = self.m().region_args(r).first() {
            let ty = self.m().value_type(iv).clone();
            let s = match ty {
                Type::Scalar(s) => s,
                _ => ScalarType::Index,
            };
            let v = self.convert(&i, ScalarType::Index, s);
            self.values.insert(iv, Val::Scalar(s, v));
        }
        self.loops.push(LoopLabels {
            continue_to: latch.clone(),
            break_to: exit.clone(),
        });
        self.loop_depth += 1;
        self.region(op, 0)?;
        self.loop_depth -= 1;
        self.loops.pop();
        self.br(&latch);
        self.start_block(&latch);
        let cur = self.val(format!("load i64, ptr {var}"));
        let next = self.val(format!("add i64 {cur}, {step}"));
        self.line(format!("store i64 {next}, ptr {var}"));
        self.br(&head);
        self.start_block(&exit);
        Ok(())
    }

    fn if_op(&mut self, op: OpId) -> Result<(), CodegenError> {
        let (_, c) = self.scalar(op, 0)?;
        let yes = self.label("if");
        let no = self.label("else");
        let done = self.label("endif");
        self.cond_br(&c, &yes, &no);
        self.start_block(&yes);
        self.region(op, 0)?;
        self.br(&done);
        self.start_block(&no);
        if self.m().regions(op).len() > 1 {
            self.region(op, 1)?;
        }
        self.br(&done);
        self.start_block(&done);
        Ok(())
    }

    fn while_op(&mut self, op: OpId) -> Result<(), CodegenError> {
        let head = self.label("while");
        let body = self.label("whilebody");
        let exit = self.label("whileexit");
        self.br(&head);
        self.start_block(&head);
        self.loop_depth += 1;
        self.region(op, 0)?;
        // The condition region ends in `tile.condition(%c)`.
        let r = self.m().regions(op)[0];
        let b = self.m().region_block(r);
        let last = *self
            .m()
            .block_ops(b)
            .last()
            .ok_or_else(|| self.err(op, "`tile.while` needs a condition"))?;
        let (_, c) = self.scalar(last, 0)?;
        self.cond_br(&c, &body, &exit);
        self.start_block(&body);
        self.loops.push(LoopLabels {
            continue_to: head.clone(),
            break_to: exit.clone(),
        });
        if self.m().regions(op).len() > 1 {
            self.region(op, 1)?;
        }
        self.loop_depth -= 1;
        self.loops.pop();
        self.br(&head);
        self.start_block(&exit);
        Ok(())
    }

    pub fn add_tma(&mut self, d: TmaDescriptor) -> String {
        if let Some(i) = self.tma.iter().position(|t| t == &d) {
            return self.hidden[i].clone();
        }
        let name = format!("%tma{}", self.tma.len());
        // The launcher copied the map into global memory: before the
        // first TMA load reads it, each thread that issues them orders
        // that write before the tensor-map proxy's reads. An issuing
        // thread is thread 0 of the block or of a warp-specialized
        // kernel's consumers (linear index 128): every thread whose tid.x
        // is a multiple of 128 fences.
        let _ = writeln!(
            self.allocas,
            "  call void asm sideeffect \"{{ .reg .pred p; .reg .b32 t; mov.u32 t, %tid.x; and.b32 t, t, 127; setp.eq.u32 p, t, 0; @p fence.proxy.tensormap::generic.acquire.sys [$0], 128; }}\", \"l,~{{memory}}\"(i64 {name})"
        );
        self.tma.push(d);
        self.hidden.push(name.clone());
        name
    }

    /// The key of random stream `stream`: a hidden `i64` parameter after
    /// the TMA descriptors (on the CPU, the argument slot after the
    /// declared ones), one per stream.
    pub fn rng_key(&mut self, stream: RngStream) -> String {
        let i = match self.rng.iter().position(|r| r == &stream) {
            Some(i) => i,
            None => {
                let i = self.rng.len();
                if self.info().abi == Abi::Cpu {
                    let slot = self.params.len() + i;
                    let _ = writeln!(
                        self.allocas,
                        "  %rngslot{i} = getelementptr ptr, ptr %args, i64 {slot}\n  %rngp{i} = load ptr, ptr %rngslot{i}\n  %rngkey{i} = load i64, ptr %rngp{i}"
                    );
                }
                self.rng.push(stream);
                self.me.uses_rng = true;
                self.me.uses_math = true;
                self.declare("declare double @llvm.sqrt.f64(double)");
                i
            }
        };
        format!("%rngkey{i}")
    }

    /// The `syncscope` of an atomic on global memory: the whole device on
    /// a GPU (`agent`); the CPU's default, the system.
    pub(crate) fn device_scope(&self) -> &'static str {
        match self.info().abi {
            Abi::Cpu => "",
            _ => " syncscope(\"agent\")",
        }
    }

    /// Adds a print of the kernel and gives its site number.
    pub(crate) fn print_site(&mut self, site: PrintSite) -> usize {
        self.prints.push(site);
        self.prints.len() - 1
    }

    // ----- finishing ----------------------------------------------------

    fn finish(mut self) -> KernelInfo {
        if !self.terminated {
            self.line("ret void");
        }
        let info = self.info();
        let staging_offset = (self.shared_static + 127) / 128 * 128;
        let shared_bytes = if self.staging_need > 0 {
            staging_offset + self.staging_need
        } else {
            self.shared_static
        };
        // Scratch: each use starts at the end of the one before, rounded up
        // to 16 bytes (a bf16 tile after one of an odd number of bytes would
        // otherwise be misaligned: the GPU faults); the sizes are run-time
        // values, so the rounding is done in the kernel. The manifest's
        // per-block bytes bound that layout: each use's bytes plus 15 for
        // its rounding, plus 15 so that the block stride, rounded down to
        // 16, still covers it.
        let uses = self.scratch_uses.clone();
        let per_block = uses.iter().fold(DimExpr::constant(15), |sum, (_, bytes)| {
            sum.add(bytes).add(&DimExpr::constant(15))
        });
        let saved = std::mem::take(&mut self.body);
        let mut replacements = Vec::new();
        if let Some(base) = self.scratch_base.clone() {
            let arg = match info.abi {
                Abi::Cpu => {
                    let p = self.cpu_arg(self.params.len() + self.rng.len());
                    self.val(format!("load ptr, ptr {p}"))
                }
                _ => "%scratch".to_string(),
            };
            let size = self.dim_text(&per_block);
            let stride = self.val(format!("and i64 {size}, -16"));
            let block = self.block_linear();
            let off = self.val(format!("mul i64 {block}, {stride}"));
            let gp = info.global_ptr();
            self.line(format!("{base} = getelementptr i8, {gp} {arg}, i64 {off}"));
            let sizes: Vec<DimExpr> = uses.iter().map(|(_, bytes)| bytes.clone()).collect();
            for (k, at) in self.packed_offsets("0".to_string(), &sizes).into_iter().enumerate() {
                replacements.push((format!("@SCRATCH{k}@"), at));
            }
        }
        // Shared buffers sized at the launch: the first after the constant
        // layout; the manifest's bytes bound that with 15 per rounding.
        let dynamic = self.shared_dynamic.clone();
        let first = ((shared_bytes + 15) / 16 * 16).to_string();
        for (k, at) in self.packed_offsets(first, &dynamic).into_iter().enumerate() {
            replacements.push((format!("@DYNSHARED{k}@"), at));
        }
        let shared_dynamic = dynamic.iter().fold(None, |sum: Option<DimExpr>, bytes| {
            Some(
                sum.unwrap_or_else(|| DimExpr::constant(15))
                    .add(bytes)
                    .add(&DimExpr::constant(15)),
            )
        });
        if !self.prints.is_empty() && info.abi == Abi::Cpu {
            let p = self.cpu_arg(self.params.len() + self.rng.len() + usize::from(self.scratch_base.is_some()));
            self.line(format!("{} = load ptr, ptr {p}", print::BUFFER));
        }
        let setup = std::mem::replace(&mut self.body, saved);
        let grid = self.grid_prologue();
        let mut body = self
            .body
            .replace("@STAGING@", &staging_offset.to_string())
            .replace("@SCRATCHSETUP@\n", &setup);
        for (from, to) in replacements {
            body = body.replace(&from, &to);
        }
        let m = self.m();
        let entry = m.entry_block(self.func).expect("functions have bodies");
        let sig = if info.abi == Abi::Cpu {
            "ptr %args, ptr %ctx".to_string()
        } else {
            let mut params: Vec<String> = Vec::new();
            for (i, &arg) in m.block_args(entry).iter().enumerate() {
                let (t, attrs) = match m.value_type(arg) {
                    Type::Scalar(s) => (llvm_ty(*s).to_string(), ""),
                    _ => (info.global_ptr(), " noalias align 16"),
                };
                params.push(format!("{t}{attrs} %p{i}"));
            }
            for h in &self.hidden {
                params.push(format!("i64 {h}"));
            }
            for i in 0..self.rng.len() {
                params.push(format!("i64 %rngkey{i}"));
            }
            if self.scratch_base.is_some() {
                params.push(format!("{} noalias %scratch", info.global_ptr()));
            }
            if !self.prints.is_empty() {
                params.push(format!("{} noalias {}", info.global_ptr(), print::BUFFER));
            }
            if self.folds_grid {
                params.push("i64 %gridfold".to_string());
            }
            params.join(", ")
        };
        let cc = match info.abi {
            Abi::Amdgpu => "amdgpu_kernel ",
            _ => "",
        };
        let attrs = match info.abi {
            Abi::Amdgpu => format!(
                " \"amdgpu-flat-work-group-size\"=\"1,{}\"",
                self.threads.clamp(1, 1024).max(256)
            ),
            _ => String::new(),
        };
        let attr_group = if attrs.is_empty() {
            String::new()
        } else {
            let _ = writeln!(
                self.me.bodies,
                "attributes #{} = {{{attrs} }}",
                self.me.kernels.len() + 1
            );
            format!(" #{}", self.me.kernels.len() + 1)
        };
        let _ = writeln!(
            self.me.bodies,
            "define {cc}void @{}({sig}){attr_group} {{\nentry:\n{}{grid}{}}}\n",
            self.name, self.allocas, body
        );
        if info.abi != Abi::Cpu && (shared_bytes > 0 || shared_dynamic.is_some()) {
            let _ = writeln!(
                self.me.bodies,
                "@{}_smem = external addrspace({}) global [0 x i8], align 1024\n",
                self.name, info.shared_as
            );
        }
        let m = self.m();
        let block = m.attr(self.func, "block").and_then(Attr::as_ints).unwrap_or_default();
        let has_tiles = self.values.values().any(|v| matches!(v, Val::Tile(_)));
        KernelInfo {
            name: self.name.clone(),
            params: self.params.clone(),
            block,
            block_required: has_tiles,
            any_block: m.attr(self.func, "any_block").is_some(),
            shared_bytes: shared_bytes as u64,
            shared_bytes_dynamic: shared_dynamic.map(|d| d.to_string()),
            scratch_bytes_per_block: if self.scratch_base.is_some() {
                Some(per_block.to_string())
            } else {
                None
            },
            tma: self.tma.clone(),
            rng: self.rng.clone(),
            prints: self.prints.clone(),
            needs_sync: self.needs_sync,
            folds_grid: self.folds_grid,
            registers: None,
            spill_bytes: None,
            ptxas_notes: Vec::new(),
            cost: m
                .attr(self.func, COST_ATTR)
                .and_then(KernelCost::from_attr)
                .map(CostInfo::from),
            warp_specialize: self.split,
            guards: kernel_guards(m, self.func),
        }
    }

    /// The offsets of buffers of `sizes` bytes laid out one after another
    /// from `first`, each starting at the end of the one before rounded up
    /// to 16 bytes (computed where the code is being emitted).
    fn packed_offsets(&mut self, first: String, sizes: &[DimExpr]) -> Vec<String> {
        let mut end: Option<String> = None;
        let mut offsets = Vec::with_capacity(sizes.len());
        for bytes in sizes {
            let at = match &end {
                None => first.clone(),
                Some(e) => {
                    let up = self.val(format!("add i64 {e}, 15"));
                    self.val(format!("and i64 {up}, -16"))
                }
            };
            let b = self.dim_text(bytes);
            end = Some(self.val(format!("add i64 {at}, {b}")));
            offsets.push(at);
        }
        offsets
    }

    fn dim_text(&mut self, d: &DimExpr) -> String {
        let Some(c) = d.as_const() else {
            return match self.dim_ext(d, self.func) {
                Ok(e) => e.text(),
                Err(_) => "0".into(),
            };
        };
        c.to_string()
    }

    fn block_linear(&mut self) -> String {
        let ids = [
            self.grid(0, false),
            self.grid(1, false),
            self.grid(2, false),
            self.grid(0, true),
            self.grid(1, true),
        ];
        self.linearize(ids)
    }
}

/// The axis and kind of a read of the grid by `op`: a block id (`false`)
/// or the grid's size in blocks (`true`) along it, on any target.
pub(crate) fn grid_read(m: &Module, op: OpId) -> Option<(usize, bool)> {
    let dim = || {
        m.attr(op, "dim")
            .and_then(Attr::as_int)
            .map_or(0, |d| d.clamp(0, 2) as usize)
    };
    match m.op(op).name.as_str() {
        "nvptx.sreg" => {
            let reg = m.attr(op, "reg").and_then(Attr::as_str)?;
            let (axis, count) = match reg.strip_prefix("ctaid.") {
                Some(axis) => (axis, false),
                None => (reg.strip_prefix("nctaid.")?, true),
            };
            Some((["x", "y", "z"].iter().position(|a| *a == axis)?, count))
        }
        "amdgpu.workgroup_id" | "cpu.block_id" => Some((dim(), false)),
        "amdgpu.num_workgroups" | "cpu.grid_dim" => Some((dim(), true)),
        _ => None,
    }
}

/// Whether kernel `func` reads its grid's y or z axis.
fn reads_grid_y_or_z(m: &Module, func: OpId) -> bool {
    m.walk_op(func)
        .into_iter()
        .any(|op| grid_read(m, op).is_some_and(|(dim, _)| dim > 0))
}

/// Bytes of shared memory the allocations in `func` take (each aligned to
/// 128 bytes, an upper bound of what placement uses), as the Tile-IR
/// verifier counts them.
fn planned_shared(m: &Module, func: OpId) -> i64 {
    tessera_ir_tile::shared_allocations(m, &m.walk_op(func))
        .into_iter()
        .filter_map(|(_, bytes)| bytes.ok())
        .map(|bytes| (bytes as i64 + 127) / 128 * 128)
        .sum()
}

fn float_suffix(s: ScalarType) -> &'static str {
    match s {
        ScalarType::F64 => "f64",
        ScalarType::F16 => "f16",
        ScalarType::BF16 => "bf16",
        _ => "f32",
    }
}

/// The `guards` attribute of kernel `func`, as the manifest records them.
fn kernel_guards(m: &Module, func: OpId) -> Vec<crate::GuardInfo> {
    let guards = m.attr(func, "guards").and_then(Attr::as_array).unwrap_or_default();
    guards
        .iter()
        .filter_map(Attr::as_dict)
        .map(|g| crate::GuardInfo {
            constraint: g
                .get("constraint")
                .and_then(Attr::as_str)
                .unwrap_or_default()
                .to_string(),
            callee: g.get("callee").and_then(Attr::as_str).map(str::to_string),
            span: g
                .get("span")
                .and_then(Attr::as_ints)
                .and_then(|s| Some([u32::try_from(*s.first()?).ok()?, u32::try_from(*s.get(1)?).ok()?])),
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The CPU context of `spec/runtime.md`; `block` points at the test's
    /// barrier, and `lanes` (which kernels do not read) at one word per
    /// thread for shuffles.
    #[repr(C)]
    struct Ctx {
        ids: [[u32; 3]; 4],
        shared: *mut u8,
        block: *const std::sync::Barrier,
        lanes: *const Vec<std::sync::atomic::AtomicU32>,
    }

    extern "C" fn barrier(ctx: *mut Ctx, _site: *const u8) {
        // SAFETY: the kernel passes back the context `run` gave it, whose
        // barrier outlives the threads.
        unsafe { (*(*ctx).block).wait() };
    }

    /// `shfl.sync` over the whole block in step (every thread of the test's
    /// kernels calls it at the same point): each thread publishes `value`,
    /// then reads its source lane's within its warp of 32.
    extern "C" fn shfl(ctx: *mut Ctx, _site: *const u8, value: u32, lane: u32, mode: u32, width: u32) -> u32 {
        use std::sync::atomic::Ordering;
        // SAFETY: as for `barrier`; `lanes` outlives the threads too.
        let (ctx, lanes) = unsafe { (&*ctx, &*(*ctx).lanes) };
        let t = ctx.ids[0][0];
        lanes[t as usize].store(value, Ordering::SeqCst);
        // SAFETY: as above.
        unsafe { (*ctx.block).wait() };
        let (segment, me) = (t & !(width - 1), t & (width - 1));
        let source = match mode {
            1 => me.checked_sub(lane).unwrap_or(me),
            2 => Some(me + lane).filter(|&s| s < width).unwrap_or(me),
            3 => (me ^ lane) & (width - 1),
            _ => lane & (width - 1),
        };
        let got = lanes[(segment + source) as usize].load(Ordering::SeqCst);
        // SAFETY: as above.
        unsafe { (*ctx.block).wait() };
        got
    }

    /// Runs kernel `k` of the CPU Target IR `text` on one block of
    /// `threads` threads (one OS thread each, standing in for the runtime's
    /// fibers), its memref parameters bound
    /// to `buffers`.
    pub(crate) fn run(text: &str, threads: u32, buffers: &mut [Vec<f32>]) {
        let module = tessera_ir::parse(text).expect("the IR parses");
        let symbols = [
            (
                "tessera_cpu_barrier",
                barrier as extern "C" fn(*mut Ctx, *const u8) as usize,
            ),
            (
                "tessera_cpu_shfl",
                shfl as extern "C" fn(*mut Ctx, *const u8, u32, u32, u32, u32) -> u32 as usize,
            ),
        ];
        let cpu = crate::CpuModule::new(&module, &crate::Options::default(), &symbols).expect("the kernel compiles");
        let shared_bytes = cpu.manifest.kernels[0].shared_bytes as usize;
        let entry = cpu.entry("k").expect("the kernel is there");
        // SAFETY: the JIT compiled `k` with the CPU kernel ABI.
        let kernel: extern "C" fn(*mut *mut f32, *mut Ctx) = unsafe { std::mem::transmute(entry) };
        let layout = std::alloc::Layout::from_size_align(shared_bytes.max(128), 128).unwrap();
        // SAFETY: a non-zero size; freed below with the same layout.
        let shared = unsafe { std::alloc::alloc_zeroed(layout) };
        let mut pointers: Vec<*mut f32> = buffers.iter_mut().map(|b| b.as_mut_ptr()).collect();
        let mut args: Vec<usize> = pointers.iter_mut().map(|p| p as *mut *mut f32 as usize).collect();
        // A kernel that reads its grid's y or z axis takes the folding
        // argument last: 0, a grid launched as it is.
        let mut unfolded = 0i64;
        if cpu.manifest.kernels[0].folds_grid {
            args.push(&mut unfolded as *mut i64 as usize);
        }
        let gate = std::sync::Barrier::new(threads as usize);
        let (gate, shared_at) = (&gate as *const std::sync::Barrier as usize, shared as usize);
        let lanes: Vec<std::sync::atomic::AtomicU32> = (0..threads).map(|_| 0.into()).collect();
        let lanes_at = &lanes as *const Vec<std::sync::atomic::AtomicU32> as usize;
        std::thread::scope(|s| {
            for t in 0..threads {
                let mut args = args.clone();
                s.spawn(move || {
                    let mut ctx = Ctx {
                        ids: [[t, 0, 0], [0, 0, 0], [threads, 1, 1], [1, 1, 1]],
                        shared: shared_at as *mut u8,
                        block: gate as *const std::sync::Barrier,
                        lanes: lanes_at as *const Vec<std::sync::atomic::AtomicU32>,
                    };
                    kernel(args.as_mut_ptr() as *mut *mut f32, &mut ctx);
                });
            }
        });
        // SAFETY: allocated above with this layout.
        unsafe { std::alloc::dealloc(shared, layout) };
    }

    #[test]
    fn half_and_bfloat_literals_round_to_nearest_even_once() {
        assert_eq!(float_lit(ScalarType::F16, 1.0), "0xH3C00");
        assert_eq!(float_lit(ScalarType::F16, -2.5), "0xHC100");
        assert_eq!(float_lit(ScalarType::F16, 65520.0), "0xH7C00");
        assert_eq!(float_lit(ScalarType::F16, 1e-8), "0xH0000");
        assert_eq!(float_lit(ScalarType::BF16, 1.0), "0xR3F80");
        assert_eq!(float_lit(ScalarType::BF16, 1.0 + 2f64.powi(-8)), "0xR3F80");
        assert_eq!(float_lit(ScalarType::BF16, 1.0 + 3.0 * 2f64.powi(-8)), "0xR3F82");
        // Just above a tie, within half an f32 ulp: rounded up, once.
        assert_eq!(
            float_lit(ScalarType::F16, 1.0 + 2f64.powi(-11) + 2f64.powi(-40)),
            "0xH3C01"
        );
        assert_eq!(
            float_lit(ScalarType::F32, 0.1),
            format!("0x{:016X}", f64::from(0.1f32).to_bits())
        );
    }
}
