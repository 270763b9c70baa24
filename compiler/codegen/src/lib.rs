//! Code generation: Target IR → LLVM IR → PTX (sm_80, sm_90a), AMDGPU code
//! objects (gfx90a, gfx942) and host machine code (x86-64, run in-process
//! through ORC LLJIT).
//!
//! The only crate that touches LLVM; every raw call is in [`llvm`]. The
//! emitter writes LLVM IR text (one module per Tessera module), which LLVM
//! parses and verifies before any pass runs, so a bug here becomes an error
//! message, never an abort. How tiles, barriers, warps and tensor cores map
//! to each target is in `spec/codegen.md`.

mod emit;
mod exchange;
mod hopper;
pub mod llvm;
mod minifloat;
mod mma;
mod ops;
pub mod print;
pub mod rng;
mod swizzle;
mod target;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use serde::Serialize;
use tessera_ir::{Attr, DimExpr, Loc, Module, ScalarType, ShapeConstraint, Type};
use tessera_ir_tile::{KernelCost, Target};

pub use target::{Abi, TargetInfo};

/// An error the code generator reports against a Target-IR op.
#[derive(Clone, Debug)]
pub struct CodegenError {
    pub message: String,
    pub loc: Loc,
}

impl CodegenError {
    fn plain(message: impl Into<String>) -> CodegenError {
        CodegenError {
            message: message.into(),
            loc: Loc::Unknown,
        }
    }
}

/// One kernel parameter, as the manifest lists it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ParamInfo {
    pub index: usize,
    /// `buffer` or `scalar`.
    pub kind: String,
    pub dtype: String,
    /// Dims of a buffer (`["M", "K"]`, constants as numbers in text).
    pub shape: Vec<String>,
    pub mutable: bool,
    /// The dim symbol this scalar carries (trailing dim parameters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dim: Option<String>,
    /// The function's shape constraints (its `where` clause and the
    /// guards its caller checks) that mention a dim of this parameter.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<String>,
}

impl ParamInfo {
    fn scalar(index: usize, s: ScalarType) -> ParamInfo {
        ParamInfo {
            index,
            kind: "scalar".into(),
            dtype: s.name().into(),
            shape: Vec::new(),
            mutable: false,
            dim: None,
            constraints: Vec::new(),
        }
    }

    fn buffer(index: usize, elem: ScalarType, dims: &[DimExpr], mutable: bool) -> ParamInfo {
        ParamInfo {
            index,
            kind: "buffer".into(),
            dtype: elem.name().into(),
            shape: dims.iter().map(|d| d.to_string()).collect(),
            mutable,
            dim: None,
            constraints: Vec::new(),
        }
    }
}

/// Lists on each of `func`'s parameters the entries of its `constraints`
/// attribute that mention a dim of the parameter's shape, or its dim.
pub(crate) fn attach_constraints(module: &Module, func: tessera_ir::OpId, params: &mut [ParamInfo]) {
    let constraints = module
        .attr(func, "constraints")
        .and_then(Attr::as_array)
        .unwrap_or_default();
    let facts: Vec<(Vec<String>, &str)> = constraints
        .iter()
        .filter_map(Attr::as_str)
        .filter_map(|text| {
            let c = ShapeConstraint::parse(text)?;
            Some((c.symbols().into_iter().map(str::to_string).collect(), text))
        })
        .collect();
    for p in params {
        let mut own: Vec<String> = p
            .shape
            .iter()
            .filter_map(|d| DimExpr::parse(d))
            .flat_map(|d| d.symbols().into_iter().map(str::to_string).collect::<Vec<_>>())
            .collect();
        own.extend(p.dim.clone());
        p.constraints = facts
            .iter()
            .filter(|(symbols, _)| symbols.iter().any(|s| own.contains(s)))
            .map(|(_, text)| text.to_string())
            .collect();
    }
}

/// A TMA descriptor the launcher must encode (`cuTensorMapEncodeTiled`)
/// and pass, as the address of the 128-byte `CUtensorMap` in device
/// memory, in a hidden `u64` parameter after the declared ones.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TmaDescriptor {
    /// The parameter holding the global tensor.
    pub param: usize,
    pub elem: String,
    /// Box (tile) dims, one per dim of the parameter, outer first: 1 for
    /// each dim a `tile.view` fixes, then rows and columns.
    pub box_dims: Vec<i64>,
    /// 0: no swizzle.
    pub swizzle: i64,
}

/// The cost model's estimate of one launch (`cost` from `estimate-cost`;
/// `spec/runtime.md`, "Profiling"), in the kernel's dims.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CostInfo {
    /// Bytes of global memory a launch moves: a dim expression.
    pub bytes: String,
    /// Absent when a loop's trip count could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flops: Option<FlopsInfo>,
}

/// FLOPs of a launch: `blocks × (Σ per_block + threads × Σ per_thread) +
/// Σ per_launch`, each sum a list of terms, each term the product of its
/// factors (grid entries: `128`, `2*D*H`, `cdiv(K, 128)`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FlopsInfo {
    pub per_block: Vec<Vec<String>>,
    pub per_thread: Vec<Vec<String>>,
    /// What a persistent grid's walk over its tiles holds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_launch: Vec<Vec<String>>,
}

impl From<KernelCost> for CostInfo {
    fn from(cost: KernelCost) -> CostInfo {
        CostInfo {
            bytes: cost.bytes,
            flops: cost.flops.map(|f| FlopsInfo {
                per_block: f.per_block,
                per_thread: f.per_thread,
                per_launch: f.per_launch,
            }),
        }
    }
}

/// What the manifest says about one kernel.
#[derive(Clone, Debug, Default, Serialize)]
pub struct KernelInfo {
    pub name: String,
    pub params: Vec<ParamInfo>,
    /// The block shape the kernel was compiled for.
    pub block: Vec<i64>,
    /// Whether a launch must use exactly `block` (kernels with tiles).
    pub block_required: bool,
    /// Declares no block but names its y or z axis: linear indices take
    /// every axis, and a block of any shape may launch it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub any_block: bool,
    /// Dynamic shared memory to pass at launch: the constant layout's.
    pub shared_bytes: u64,
    /// What the buffers sized at the launch add to `shared_bytes` (a dim
    /// expression over the kernel's dims, which bounds their layout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_bytes_dynamic: Option<String>,
    /// Global scratch per block (a dim expression over the kernel's dims),
    /// passed as a hidden pointer parameter after the TMA descriptors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scratch_bytes_per_block: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tma: Vec<TmaDescriptor>,
    /// The random streams the kernel draws from: the key of each is a
    /// hidden `i64` parameter after the TMA descriptors, in this order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rng: Vec<rng::RngStream>,
    /// The kernel's prints: such a kernel takes the address of a print
    /// buffer as a hidden parameter after the scratch (`print`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prints: Vec<print::PrintSite>,
    /// Whether the kernel synchronises threads (barriers, shuffles, votes):
    /// the CPU launcher runs each thread of such a block as a fiber.
    pub needs_sync: bool,
    /// Reads its grid's y or z axis: takes a hidden `i64` after the print
    /// buffer, 0 or the logical `X | Y << 32` of a launch folded onto the
    /// x axis because its y or z extent is past 65535 (`FnEmitter::grid`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub folds_grid: bool,
    /// Registers per thread, from `ptxas -v` when it ran.
    pub registers: Option<u32>,
    /// Bytes spilled to local memory, from `ptxas -v` when it ran.
    pub spill_bytes: Option<u32>,
    /// What `ptxas -v` said it lost speed to in this kernel ("Potential
    /// Performance Loss" notes, as serialized wgmma pipelines).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ptxas_notes: Vec<String>,
    /// FLOPs and bytes per launch, for the profiler.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostInfo>,
    /// The registers per thread the producer warpgroup keeps and the
    /// consumers take (`setmaxnreg`), when the kernel is warp-specialized:
    /// together they must fit in what the block starts with, `registers`
    /// for each of its threads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warp_specialize: Option<[i64; 2]>,
    /// The runtime guards of the device functions it calls, checked over
    /// the launch's dims before it runs (the kernel's `guards` attribute).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<GuardInfo>,
}

/// A host launch recorded in the manifest (the runtime interprets host
/// functions).
#[derive(Clone, Debug, Serialize)]
pub struct LaunchInfo {
    pub kernel: String,
    pub grid: Vec<String>,
    pub block: Vec<i64>,
    pub args: Vec<usize>,
    /// The shape constraint over the dims under which it runs (None:
    /// always), in the canonical text of `tessera_ir::ShapeConstraint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
}

/// A collective of a host function, recorded in the manifest: it reduces
/// parameter `src` of every rank of the mesh into parameter `dst`, after
/// the first `after_launches` launches (spec/runtime.md, Collectives).
#[derive(Clone, Debug, Serialize)]
pub struct CollectiveInfo {
    /// `sum`, `mean`, `max`, `min` or `prod`.
    pub op: String,
    /// `binary_tree` or `ring`.
    pub algo: String,
    /// The mesh axis it reduces over (None: every axis).
    pub axis: Option<String>,
    pub mesh_axes: Vec<String>,
    /// Devices along each mesh axis (empty when the source does not say).
    pub mesh_shape: Vec<i64>,
    pub src: usize,
    pub dst: usize,
    pub after_launches: usize,
}

/// A runtime guard of a host function or kernel, recorded in the
/// manifest: a shape constraint over its dims that the checker could not
/// prove, checked before its first launch (spec/runtime.md, Runtime
/// guards).
#[derive(Clone, Debug, Serialize)]
pub struct GuardInfo {
    /// In the canonical text of `tessera_ir::ShapeConstraint`.
    pub constraint: String,
    /// The function whose constraint it is (`op.reshape` for a reshape).
    pub callee: Option<String>,
    /// The byte range of the call in the function's source file.
    pub span: Option<[u32; 2]>,
}

/// An operator or host function: its parameters are the declared inputs,
/// then the result buffers, then scratch buffers (temporaries between its
/// kernels), then the dims as trailing `index` scalars.
#[derive(Clone, Debug, Serialize)]
pub struct HostInfo {
    pub name: String,
    pub params: Vec<ParamInfo>,
    /// The parameters that hold the function's results, in result order.
    pub results: Vec<usize>,
    /// The parameters the caller allocates as temporaries.
    pub scratch: Vec<usize>,
    pub launches: Vec<LaunchInfo>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub collectives: Vec<CollectiveInfo>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<GuardInfo>,
}

/// The JSON manifest of a compiled module.
#[derive(Clone, Debug, Serialize)]
pub struct Manifest {
    pub module: String,
    pub target: String,
    pub opt_level: u8,
    pub source_hash: String,
    pub kernels: Vec<KernelInfo>,
    pub host_functions: Vec<HostInfo>,
    /// Whether `registers` came from ptxas.
    pub ptxas: Option<String>,
}

impl Manifest {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }
}

/// Options for [`compile`].
#[derive(Clone, Debug)]
pub struct Options {
    pub opt_level: u8,
    /// Hash of the source text, for the manifest.
    pub source_hash: String,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            opt_level: 3,
            source_hash: String::new(),
        }
    }
}

/// A compiled module: the optimized LLVM IR, machine code and manifest.
pub struct Compiled {
    pub target: Target,
    pub llvm_ir: String,
    /// PTX (NVPTX), AMDGPU assembly, or x86-64 assembly.
    pub asm: Vec<u8>,
    /// The relocatable object (AMDGPU and CPU).
    pub object: Option<Vec<u8>>,
    pub manifest: Manifest,
}

const MATH: &str = include_str!("math.ll");
const RNG: &str = include_str!("rng.ll");
const CPU_RUNTIME: &str = include_str!("cpu_rt.ll");

/// The LLVM IR text of a Target-IR module (unoptimized), with the kernels'
/// manifest entries. Host functions are recorded, not compiled.
pub fn emit_llvm_ir(module: &Module, opts: &Options) -> Result<(String, Manifest), CodegenError> {
    let target = Target::of_module(module)
        .ok_or_else(|| CodegenError::plain("the module names no target; run `lower-tile-to-target` first"))?;
    if !tessera_ir_tile::is_target_layer(module) {
        return Err(CodegenError::plain(
            "code generation needs Target IR (`layer = \"target\"`)",
        ));
    }
    let mut me = emit::ModuleEmitter::new(module, target);
    let mut hosts = Vec::new();
    for func in module.functions() {
        match module.attr(func, "kind").and_then(Attr::as_str) {
            Some("host") | Some("operator") => hosts.push(host_info(module, func)),
            _ => me.emit_kernel(func)?,
        }
    }
    let info = me.info;
    let machine =
        llvm::Machine::new(info.triple, info.cpu, info.features, opts.opt_level).map_err(CodegenError::plain)?;
    let name = module.name.clone().unwrap_or_else(|| "module".to_string());
    let mut text = String::new();
    let _ = writeln!(text, "; Tessera module `{name}` for {}", target.name());
    let _ = writeln!(text, "source_filename = \"{name}\"");
    let _ = writeln!(text, "target datalayout = \"{}\"", machine.data_layout());
    let _ = writeln!(text, "target triple = \"{}\"\n", info.triple);
    text.push_str(&me.bodies);
    let preludes: Vec<&str> = [
        (me.uses_math, MATH),
        (me.uses_rng, RNG),
        (info.abi == Abi::Cpu, CPU_RUNTIME),
    ]
    .into_iter()
    .filter_map(|(used, prelude)| used.then_some(prelude))
    .collect();
    for prelude in &preludes {
        text.push_str(prelude);
        text.push('\n');
    }
    // A declaration a prelude makes too (`llvm.floor.f32` of a float `//`
    // beside `exp`) is written once: LLVM rejects a second.
    for d in me
        .decls
        .iter()
        .filter(|d| !preludes.iter().any(|p| p.lines().any(|l| l == d.as_str())))
    {
        text.push_str(d);
        text.push('\n');
    }
    text.push_str(concat!(
        "\n!0 = distinct !{!0, !1}\n!1 = !{!\"llvm.loop.unroll.full\"}\n",
        "!2 = distinct !{!2, !3}\n!3 = !{!\"llvm.loop.unroll.disable\"}\n"
    ));
    if info.abi == Abi::Nvptx && !me.kernels.is_empty() {
        let mut ann = Vec::new();
        let mut nodes = String::new();
        for (i, k) in me.kernels.iter().enumerate() {
            let id = 10 + 2 * i;
            ann.push(format!("!{id}"));
            let _ = writeln!(nodes, "!{id} = !{{ptr @{}, !\"kernel\", i32 1}}", k.name);
            if k.block_required {
                let threads: i64 = k.block.iter().product();
                ann.push(format!("!{}", id + 1));
                let _ = writeln!(
                    nodes,
                    "!{} = !{{ptr @{}, !\"maxntidx\", i32 {threads}}}",
                    id + 1,
                    k.name
                );
            }
            // `.minnctapersm 1` keeps ptxas from trading registers, and
            // spills, for occupancy: when shared memory keeps a second
            // block off the multiprocessor, an occupancy the kernel cannot
            // have; in a kernel with tile products, at the price of
            // spilling the accumulator tile its K loop holds in registers.
            let threads: i64 = k.block.iter().product();
            // Two blocks, not the four ptxas aims at for 256 threads (64
            // registers), for a row held in registers: its bounds'
            // predicates and addresses live across the row's reductions,
            // spilled in 64. One of 1024 threads, which has 64 (two
            // spilled in 32), and one of 512 holding 16 registers of
            // 64-bit columns (f64 layer norm spilled 84 bytes in 64).
            let blocks = if target.one_block_per_sm(k.shared_bytes) || multiplies_tiles(module, &k.name) {
                Some(1)
            } else {
                holds_rows(module, &k.name, threads).map(|bits| {
                    if threads <= 256 || threads <= 512 && bits <= 32 {
                        2
                    } else {
                        1
                    }
                })
            };
            if let Some(blocks) = blocks {
                let node = 10 + 2 * me.kernels.len() + i;
                ann.push(format!("!{node}"));
                let _ = writeln!(nodes, "!{node} = !{{ptr @{}, !\"minctasm\", i32 {blocks}}}", k.name);
            }
        }
        let _ = writeln!(text, "!nvvm.annotations = !{{{}}}", ann.join(", "));
        text.push_str(&nodes);
    }
    check_intrinsics(&text)?;
    let manifest = Manifest {
        module: name,
        target: target.name().into(),
        opt_level: opts.opt_level,
        source_hash: opts.source_hash.clone(),
        kernels: me.kernels,
        host_functions: hosts,
        ptxas: None,
    };
    Ok((text, manifest))
}

/// Whether the kernel `name` multiplies tiles, on tensor cores or not (its
/// accumulators live in registers across the steps of its K loop).
fn multiplies_tiles(module: &Module, name: &str) -> bool {
    module.function(name).is_some_and(|f| {
        module.walk_op(f).into_iter().any(|op| {
            matches!(
                module.op(op).name.as_str(),
                "nvptx.mma_sync" | "nvptx.wgmma" | "nvptx.mma_fma"
            )
        })
    })
}

/// The widest element (in bits) of kernel `name`'s register tiles of 16
/// or more 32-bit elements a thread (of `threads`), or 4 or more 64-bit
/// ones (a walk's chunk of an f64 row; left to itself, ptxas spilled one
/// of 8192 columns in 48 registers), where it has one: a row kernel's row.
fn holds_rows(module: &Module, name: &str, threads: i64) -> Option<u32> {
    let f = module.function(name)?;
    module
        .walk_op(f)
        .into_iter()
        .flat_map(|op| module.results(op).to_vec())
        .filter_map(|v| match module.value_type(v) {
            Type::Tensor { dims, elem } => dims
                .iter()
                .map(DimExpr::as_const)
                .product::<Option<i64>>()
                .filter(|n| n * if elem.bits() > 32 { 4 } else { 1 } >= 16 * threads.max(1))
                .map(|_| elem.bits()),
            _ => None,
        })
        .max()
}

fn host_info(module: &Module, func: tessera_ir::OpId) -> HostInfo {
    let mut params = Vec::new();
    let ints = |name: &str| -> Vec<usize> {
        module
            .attr(func, name)
            .and_then(Attr::as_ints)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|i| usize::try_from(i).ok())
            .collect()
    };
    let mutable = ints("mutable");
    let scratch = ints("schedule.scratch");
    let dim_names: Vec<String> = module
        .attr(func, "dims")
        .and_then(Attr::as_array)
        .map(|a| a.iter().filter_map(|d| d.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    if let Some(entry) = module.entry_block(func) {
        let args = module.block_args(entry);
        let trailing = args.len().saturating_sub(dim_names.len());
        for (i, &a) in args.iter().enumerate() {
            let mut info = match module.value_type(a) {
                Type::MemRef { dims, elem, .. } => ParamInfo::buffer(i, *elem, dims, mutable.contains(&i)),
                Type::Scalar(s) => ParamInfo::scalar(i, *s),
                _ => ParamInfo::scalar(i, ScalarType::Index),
            };
            if i >= trailing {
                info.dim = Some(dim_names[i - trailing].clone());
            }
            params.push(info);
        }
    }
    attach_constraints(module, func, &mut params);
    let results = mutable.iter().copied().filter(|i| !scratch.contains(i)).collect();
    let mut launches = Vec::new();
    let mut collectives = Vec::new();
    let entry = module.entry_block(func);
    let param_of = |v: &tessera_ir::ValueId| match module.value_def(*v) {
        tessera_ir::ValueDef::BlockArg { block, index } if Some(block) == entry => index as usize,
        _ => usize::MAX,
    };
    let strings = |op, key: &str| -> Vec<String> {
        module
            .attr(op, key)
            .and_then(Attr::as_array)
            .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    };
    let text = |op, key: &str| module.attr(op, key).and_then(Attr::as_str).map(str::to_string);
    let mut guards = Vec::new();
    for op in module.walk_op(func) {
        if module.op(op).name.as_str() == "tile.guard" {
            guards.push(GuardInfo {
                constraint: text(op, "constraint").unwrap_or_default(),
                callee: text(op, "callee"),
                span: match module.op(op).loc {
                    tessera_ir::Loc::Source { start, end, .. } => Some([start, end]),
                    tessera_ir::Loc::Unknown => None,
                },
            });
            continue;
        }
        if module.op(op).name.as_str() == "tile.all_reduce" {
            let operands = module.operands(op);
            collectives.push(CollectiveInfo {
                op: text(op, "op").unwrap_or_else(|| "sum".to_string()),
                algo: text(op, "algo").unwrap_or_else(|| "binary_tree".to_string()),
                axis: text(op, "axis"),
                mesh_axes: strings(op, "mesh_axes"),
                mesh_shape: module
                    .attr(op, "mesh_shape")
                    .and_then(Attr::as_ints)
                    .unwrap_or_default(),
                src: operands.first().map_or(usize::MAX, param_of),
                dst: operands.get(1).map_or(usize::MAX, param_of),
                after_launches: launches.len(),
            });
            continue;
        }
        if module.op(op).name.as_str() != "tile.launch" {
            continue;
        }
        let args = module.operands(op).iter().map(param_of).collect();
        let grid = module
            .attr(op, "grid")
            .and_then(Attr::as_array)
            .map(|g| {
                g.iter()
                    .map(|x| {
                        x.as_str()
                            .map(str::to_string)
                            .or(x.as_int().map(|i| i.to_string()))
                            .unwrap_or_default()
                    })
                    .collect()
            })
            .unwrap_or_default();
        launches.push(LaunchInfo {
            kernel: module
                .attr(op, "callee")
                .and_then(Attr::as_symbol)
                .unwrap_or("")
                .to_string(),
            grid,
            block: module.attr(op, "block").and_then(Attr::as_ints).unwrap_or_default(),
            args,
            when: text(op, "when"),
        });
    }
    HostInfo {
        name: module.func_name(func).unwrap_or("").to_string(),
        params,
        results,
        scratch,
        launches,
        collectives,
        guards,
    }
}

/// Every `llvm.*` function the text declares must be an intrinsic LLVM 19
/// knows (LLVM would otherwise accept it and fail late, or abort).
fn check_intrinsics(text: &str) -> Result<(), CodegenError> {
    for line in text.lines().filter(|l| l.starts_with("declare ")) {
        let Some(at) = line.find(" @llvm.") else { continue };
        let name: String = line[at + 2..].chars().take_while(|c| *c != '(').collect();
        if !llvm::intrinsic_exists(&name) {
            return Err(CodegenError::plain(format!(
                "the code generator used `{name}`, which LLVM 19 does not know"
            )));
        }
    }
    Ok(())
}

/// Compiles a Target-IR module to machine code.
pub fn compile(module: &Module, opts: &Options) -> Result<Compiled, CodegenError> {
    let (text, manifest) = emit_llvm_ir(module, opts)?;
    let target = Target::of_module(module).unwrap_or(Target::Cpu);
    let info = TargetInfo::of(target);
    let machine =
        llvm::Machine::new(info.triple, info.cpu, info.features, opts.opt_level).map_err(CodegenError::plain)?;
    let mut llvm_module = llvm::Module::parse(&manifest.module, &text).map_err(CodegenError::plain)?;
    machine.optimize(&mut llvm_module).map_err(CodegenError::plain)?;
    let llvm_ir = llvm_module.print();
    let asm = machine
        .emit(&llvm_module, llvm::FileType::Assembly)
        .map_err(CodegenError::plain)?;
    let object = match info.abi {
        Abi::Nvptx => None,
        _ => Some(
            machine
                .emit(&llvm_module, llvm::FileType::Object)
                .map_err(CodegenError::plain)?,
        ),
    };
    Ok(Compiled {
        target,
        llvm_ir,
        asm,
        object,
        manifest,
    })
}

/// Links an AMDGPU object into a code object (`.hsaco`) with `ld.lld`.
pub fn link_hsaco(object: &[u8], work_dir: &Path) -> Result<Vec<u8>, String> {
    let linker = find_tool(&["ld.lld-19", "ld.lld"]).ok_or("`ld.lld-19` was not found (install lld-19)")?;
    std::fs::create_dir_all(work_dir).map_err(|e| e.to_string())?;
    let obj = work_dir.join("kernel.o");
    let out = work_dir.join("kernel.hsaco");
    std::fs::write(&obj, object).map_err(|e| e.to_string())?;
    let status = Command::new(&linker)
        .arg("-shared")
        .arg(&obj)
        .arg("-o")
        .arg(&out)
        .output()
        .map_err(|e| format!("could not run {linker}: {e}"))?;
    if !status.status.success() {
        return Err(format!(
            "{linker} failed: {}",
            String::from_utf8_lossy(&status.stderr).trim()
        ));
    }
    std::fs::read(&out).map_err(|e| e.to_string())
}

/// Assembles PTX with `ptxas -v` for `arch`; gives the cubin and what
/// ptxas said of each kernel.
pub fn assemble_ptx(ptx: &[u8], arch: &str, work_dir: &Path) -> Result<PtxasReport, String> {
    let ptxas =
        find_tool(&["ptxas"]).ok_or("`ptxas` was not found on PATH (scripts/setup.sh installs it into .venv)")?;
    std::fs::create_dir_all(work_dir).map_err(|e| e.to_string())?;
    let src = work_dir.join("kernel.ptx");
    let out = work_dir.join("kernel.cubin");
    std::fs::write(&src, ptx).map_err(|e| e.to_string())?;
    // Its version (for the manifest) is asked for while it assembles.
    let version = Command::new(&ptxas)
        .arg("--version")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn();
    let run = Command::new(&ptxas)
        .args(["-v", "-arch", arch])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .output();
    let version = version
        .and_then(|child| child.wait_with_output())
        .map(|o| last_line(&o.stdout))
        .unwrap_or_default();
    let run = run.map_err(|e| format!("could not run ptxas: {e}"))?;
    let log = String::from_utf8_lossy(&run.stderr).into_owned() + &String::from_utf8_lossy(&run.stdout);
    if !run.status.success() {
        return Err(format!("ptxas rejected the PTX for {arch}:\n{}", log.trim()));
    }
    let cubin = std::fs::read(&out).map_err(|e| e.to_string())?;
    Ok(PtxasReport {
        cubin,
        kernels: parse_ptxas_log(&log),
        version,
    })
}

/// What `ptxas -v` said.
pub struct PtxasReport {
    pub cubin: Vec<u8>,
    pub kernels: Vec<PtxasKernel>,
    pub version: String,
}

/// What `ptxas -v` said of one kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct PtxasKernel {
    pub name: String,
    pub registers: u32,
    /// Bytes of spill stores.
    pub spill_bytes: u32,
    /// Its "Potential Performance Loss" notes (code and text).
    pub notes: Vec<String>,
}

fn parse_ptxas_log(log: &str) -> Vec<PtxasKernel> {
    let mut out: Vec<PtxasKernel> = Vec::new();
    let mut current: Option<String> = None;
    let mut spill = 0;
    // Notes name their function, and come before its report.
    let mut notes: Vec<(String, String)> = Vec::new();
    for line in log.lines() {
        if let Some(at) = line.find("Potential Performance Loss") {
            let function = line
                .rsplit("in the function '")
                .next()
                .filter(|_| line.contains("in the function '"));
            if let Some(name) = function.and_then(|rest| rest.split('\'').next()) {
                let code = line.find("(C").map_or("", |c| &line[c..at]);
                notes.push((name.to_string(), format!("{}{}", code, line[at..].trim())));
            }
        }
        if let Some(at) = line.find("Compiling entry function '") {
            let rest = &line[at + 26..];
            current = rest.split('\'').next().map(str::to_string);
            spill = 0;
        }
        if let Some(at) = line.find("bytes spill stores") {
            spill = line[..at]
                .split_whitespace()
                .last()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
        }
        if let Some(at) = line.find("Used ") {
            let regs = line[at + 5..].split_whitespace().next().and_then(|n| n.parse().ok());
            if let (Some(name), Some(registers)) = (current.clone(), regs) {
                out.push(PtxasKernel {
                    name,
                    registers,
                    spill_bytes: spill,
                    notes: Vec::new(),
                });
            }
        }
    }
    for (name, note) in notes {
        if let Some(kernel) = out.iter_mut().find(|k| k.name == name) {
            kernel.notes.push(note);
        }
    }
    out
}

fn find_tool(names: &[&str]) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    for name in names {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate.to_string_lossy().into_owned());
            }
        }
        let fixed = format!("/usr/lib/llvm-19/bin/{}", name.trim_end_matches("-19"));
        if Path::new(&fixed).is_file() {
            return Some(fixed);
        }
    }
    None
}

/// The last line of a tool's `--version` output.
fn last_line(out: &[u8]) -> String {
    String::from_utf8_lossy(out).lines().last().unwrap_or("").to_string()
}

/// Whether `ptxas` is on PATH.
pub fn ptxas_available() -> bool {
    find_tool(&["ptxas"]).is_some()
}

/// Kernels of a CPU-target module compiled in-process, ready to call.
pub struct CpuModule {
    jit: llvm::Jit,
    pub manifest: Manifest,
}

impl CpuModule {
    /// Compiles `module` (Target IR for `cpu`); `symbols` are the runtime's
    /// `tessera_cpu_*` functions by name and address.
    pub fn new(module: &Module, opts: &Options, symbols: &[(&str, usize)]) -> Result<CpuModule, CodegenError> {
        let (text, manifest) = emit_llvm_ir(module, opts)?;
        let info = TargetInfo::of(Target::Cpu);
        let machine =
            llvm::Machine::new(info.triple, info.cpu, info.features, opts.opt_level).map_err(CodegenError::plain)?;
        let mut m = llvm::Module::parse(&manifest.module, &text).map_err(CodegenError::plain)?;
        machine.optimize(&mut m).map_err(CodegenError::plain)?;
        let jit = llvm::Jit::new(&manifest.module, &m.print(), machine, symbols).map_err(CodegenError::plain)?;
        Ok(CpuModule { jit, manifest })
    }

    /// The entry point of kernel `name`:
    /// `extern "C" fn(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx)`.
    pub fn entry(&self, name: &str) -> Result<usize, CodegenError> {
        self.jit.lookup(name).map_err(CodegenError::plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_reports_are_read_per_kernel_with_their_performance_notes() {
        // As ptxas 12.9 writes it: a note names its function and comes
        // before that function's report.
        let log = "ptxas info    : (C7518) Potential Performance Loss: wgmma.mma_async instructions are serialized due to program dependence on compiler-inserted WG.DP in divergent path in the function 'mm_k0'
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'mm_k0' for 'sm_90a'
ptxas info    : Function properties for mm_k0
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 154 registers, used 1 barriers
ptxas info    : Compiling entry function 'other' for 'sm_90a'
    8 bytes stack frame, 24 bytes spill stores, 24 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers
";
        let kernels = parse_ptxas_log(log);
        assert_eq!(kernels.len(), 2);
        assert_eq!(
            (kernels[0].name.as_str(), kernels[0].registers, kernels[0].spill_bytes),
            ("mm_k0", 154, 0)
        );
        assert_eq!(
            kernels[0].notes,
            ["(C7518) Potential Performance Loss: wgmma.mma_async instructions are serialized due to program dependence on compiler-inserted WG.DP in divergent path in the function 'mm_k0'"]
        );
        assert_eq!((kernels[1].registers, kernels[1].spill_bytes), (255, 24));
        assert!(kernels[1].notes.is_empty());
    }
}
