//! [`Loaded`]: a compiled module loaded on a device, and the host
//! interpreter's [`Executor`] over it.
//!
//! A launch binds the kernel's parameters from the manifest: buffers get
//! the tensor's device address, scalars their value in the parameter's
//! dtype, the trailing dim parameters the dims the call binds, and a kernel
//! that needs global scratch gets a buffer of `scratch_bytes_per_block` ×
//! blocks, and one that draws random numbers the key of each stream it
//! draws from. Shared memory and the block shape come from the manifest too. An
//! operator function runs the launches its manifest entry lists, over
//! result buffers it allocates and scratch buffers between its kernels.

use std::time::Instant;

use tessera_base::FileId;
use tessera_codegen::{CollectiveInfo, CpuModule, GuardInfo, HostInfo, KernelInfo, LaunchInfo, Manifest, ParamInfo};
use tessera_ir::ShapeConstraint;
use tessera_runtime::cpu::{CpuKernel, CpuKernelFn, LaunchConfig, Threading};
use tessera_runtime::device::{Buffer, Event, Kernel, KernelArgs, Module, ModuleImage, TiledMap};
use tessera_runtime::half::{f64_to_bf16, f64_to_f16};
use tessera_runtime::host::{Call, Executor, Launch, TensorValue, Value};
use tessera_runtime::minifloat::{E4M3, E5M2};
use tessera_runtime::rng::{stream_key, StreamId};
use tessera_runtime::{DType, Device, RunError, Tensor};

use crate::{expr, print};

/// A module compiled for a device and loaded there.
pub struct Loaded {
    pub manifest: Manifest,
    module: Module,
    /// The JIT that owns the CPU kernels' code (kept alive with them).
    _jit: Option<CpuModule>,
    /// The step that keys the random streams of its kernels.
    rng_step: u64,
    /// The modules of the files the program imports whose kernels or
    /// operator functions host code reaches, by file.
    imports: Vec<(FileId, Loaded)>,
    /// For an imported file's module, its dotted name (`ops`), which
    /// qualifies its functions' names in profiles.
    pub module_name: Option<String>,
}

/// What a device runs: compiled machine code for it.
pub enum Image {
    /// Kernels JIT-compiled in this process.
    Cpu(CpuModule),
    /// PTX text for the CUDA driver to JIT.
    Ptx(String, Manifest),
    /// A linked AMDGPU code object.
    Hsaco(Vec<u8>, Manifest),
}

impl Loaded {
    /// Loads `image` on `device`.
    pub fn new(device: &Device, image: Image) -> Result<Loaded, RunError> {
        let (manifest, module, jit) = match image {
            Image::Cpu(jit) => {
                let mut kernels = Vec::new();
                for k in &jit.manifest.kernels {
                    let address = jit.entry(&k.name).map_err(|e| RunError::launch(e.message))?;
                    if address == 0 {
                        return Err(RunError::launch(format!("the JIT has no code for `{}`", k.name)));
                    }
                    // SAFETY: the JIT compiled `k.name` from the Target IR
                    // of a kernel, which the code generator emits with the
                    // CPU ABI `void(void** args, TesseraCpuCtx* ctx)`; the
                    // address is non-null and its code lives as long as
                    // `jit`, which `Loaded` keeps with the kernel.
                    let entry = unsafe { std::mem::transmute::<usize, CpuKernelFn>(address) };
                    let threading = if k.needs_sync {
                        Threading::Synchronized
                    } else {
                        Threading::Independent
                    };
                    kernels.push((k.name.clone(), CpuKernel { entry, threading }));
                }
                let module = device.load_module(ModuleImage::Cpu(kernels))?;
                (jit.manifest.clone(), module, Some(jit))
            }
            Image::Ptx(text, manifest) => (manifest, device.load_module(ModuleImage::Ptx(text))?, None),
            Image::Hsaco(bytes, manifest) => (manifest, device.load_module(ModuleImage::Hsaco(bytes))?, None),
        };
        Ok(Loaded {
            manifest,
            module,
            _jit: jit,
            rng_step: 0,
            imports: Vec::new(),
            module_name: None,
        })
    }

    /// This module with `module`, the compiled module of the imported file
    /// `file`, whose dotted name is `name`: a launch or call of a function
    /// of `file` runs there.
    pub fn with_import(mut self, file: FileId, name: String, mut module: Loaded) -> Loaded {
        module.module_name = Some(name);
        self.imports.push((file, module));
        self
    }

    /// `name`, a function of this module, as a profile names it: qualified
    /// by the module's name when it is an imported file's (`ops.scale_k`).
    pub(crate) fn qualified(&self, name: &str) -> String {
        match &self.module_name {
            Some(m) => format!("{m}.{name}"),
            None => name.to_string(),
        }
    }

    /// The module that holds the functions of `file`: an imported file's
    /// own, else this one.
    pub(crate) fn of_file(&self, file: FileId) -> &Loaded {
        self.imports.iter().find(|(f, _)| *f == file).map_or(self, |(_, m)| m)
    }

    /// Sets the step the keys of random streams are derived from (0 until
    /// set; spec/runtime.md, Random numbers): successive steps of a program
    /// draw different numbers from the same seeds.
    pub fn set_rng_step(&mut self, step: u64) {
        self.rng_step = step;
        for (_, m) in &mut self.imports {
            m.set_rng_step(step);
        }
    }

    pub(crate) fn kernel_info(&self, name: &str) -> Result<&KernelInfo, RunError> {
        self.manifest
            .kernels
            .iter()
            .find(|k| k.name == name)
            .ok_or_else(|| RunError::launch(format!("the compiled module has no kernel `{name}`")))
    }

    fn host_info(&self, name: &str) -> Result<&HostInfo, RunError> {
        self.manifest
            .host_functions
            .iter()
            .find(|h| h.name == name)
            .ok_or_else(|| RunError::launch(format!("the compiled module has no operator function `{name}`")))
    }

    /// Launches kernel `name`: `args` bind its parameters in order (tensors,
    /// scalars; dim parameters may be left out and are then taken from
    /// `dims`). Returns when the host may read what the kernel wrote, with
    /// the lines the kernel printed.
    pub fn launch_kernel(
        &self,
        device: &Device,
        name: &str,
        config: LaunchConfig,
        args: &[Value],
        dims: &[(String, i64)],
    ) -> Result<String, RunError> {
        self.launch_by_rank(device, name, config, args, dims, &[])
    }

    /// Launches as [`Loaded::launch_kernel`] does, by the rank at mesh
    /// coordinates `mesh` (the keys of random streams take them).
    fn launch_by_rank(
        &self,
        device: &Device,
        name: &str,
        config: LaunchConfig,
        args: &[Value],
        dims: &[(String, i64)],
        mesh: &[u32],
    ) -> Result<String, RunError> {
        let bound = self.bind(device, name, config, args, dims, mesh)?;
        let printed = fire(device, bound, None)?;
        self.printed(device, name, printed)
    }

    /// The lines a launch of `name` printed into `buffer` (none without).
    fn printed(&self, device: &Device, name: &str, buffer: Option<Buffer>) -> Result<String, RunError> {
        match buffer {
            Some(b) => print::read(device, self.kernel_info(name)?, &b),
            None => Ok(String::new()),
        }
    }

    /// Launches as [`Loaded::launch_kernel`] does, with device events
    /// recorded just before and after the kernel (on the CPU, which runs
    /// it synchronously, the host's monotonic clock): argument copies and
    /// scratch allocation are not in its time. `flush`, when given, is
    /// set to zeros on the device's stream before the first event: it
    /// evicts the caches, and the GPU is busy with it while the host
    /// submits the kernel, so the host's launch latency is not in the time
    /// either. `mesh` is the coordinates of the rank that launches (none
    /// on one device).
    pub(crate) fn launch_timed(
        &self,
        device: &Device,
        launch: &Launch<'_>,
        mesh: &[u32],
        flush: Option<&mut Buffer>,
    ) -> Result<Timed, RunError> {
        let name = launch.kernel;
        let bound = self.bind(device, name, launch.config, launch.args, launch.dims, mesh)?;
        let config = bound.config;
        let mut events = [device.event()?, device.event()?];
        if let Some(flush) = flush {
            device.memset(flush, 0)?;
        }
        let started = Instant::now();
        let printed = fire(device, bound, Some(&mut events))?;
        let ms = device.elapsed_ms(&events[0], &events[1])?;
        Ok(Timed {
            config,
            started,
            device_ms: f64::from(ms),
            printed: self.printed(device, name, printed)?,
        })
    }

    /// Binds the arguments of a launch of `name` (see
    /// [`Loaded::launch_kernel`]) by the rank at mesh coordinates `mesh`.
    fn bind(
        &self,
        device: &Device,
        name: &str,
        config: LaunchConfig,
        args: &[Value],
        dims: &[(String, i64)],
        mesh: &[u32],
    ) -> Result<Bound, RunError> {
        let info = self.kernel_info(name)?;
        check_guards(name, &info.guards, dims)?;
        let block: Vec<i64> = config.block.iter().map(|&b| i64::from(b)).collect();
        if info.block_required && block != padded(&info.block) {
            return Err(RunError::launch(format!(
                "`{name}` was compiled for blocks of {}, but the launch asks for {}",
                shape(&trim(&info.block)),
                shape(&trim(&block))
            ))
            .with_help(format!(
                "launch it with `block={}`: its tiles are spread over exactly that many threads",
                shape(&trim(&info.block))
            )));
        }
        let compiled = trim(&info.block);
        let fits = if compiled.len() == 1 {
            trim(&block).len() == 1 || (info.any_block && !info.block_required)
        } else {
            padded(&compiled) == block
        };
        if !fits {
            return Err(RunError::launch(format!(
                "`{name}` was compiled for blocks of {}, but the launch asks for {}",
                shape(&compiled),
                shape(&trim(&block))
            ))
            .with_note(
                "a thread's linear index and its warp are computed for the block's shape as the kernel declares it",
            )
            .with_help(if compiled.len() == 1 {
                format!(
                    "declare the block in the kernel's header, `@kernel tile[{}]`, or launch a 1-D block",
                    shape(&trim(&block))
                )
            } else {
                format!(
                    "launch it with `block={}`, the shape its header declares",
                    shape(&compiled)
                )
            }));
        }
        let mut kargs = KernelArgs::new();
        for p in &info.params {
            match args.get(p.index) {
                Some(v) => push(device, &mut kargs, p, v, name)?,
                None => match &p.dim {
                    Some(dim) => kargs.push_i64(lookup(dims, dim, name)?),
                    None => {
                        return Err(RunError::launch(format!(
                            "`{name}` takes {}, but the launch passes {}",
                            tessera_base::counted(
                                info.params.iter().filter(|p| p.dim.is_none()).count(),
                                "argument",
                                "arguments"
                            ),
                            args.len()
                        )))
                    }
                },
            }
        }
        // The TMA tensor maps, after the declared parameters.
        let mut tensor_maps = Vec::with_capacity(info.tma.len());
        for d in &info.tma {
            let Some(Value::Tensor(t)) = args.get(d.param) else {
                return Err(RunError::launch(format!(
                    "`{name}` loads argument {} through TMA, and it is not a tensor",
                    d.param + 1
                )));
            };
            let map = TiledMap::new(t.kernel_address(device)?, t.dtype(), &t.shape(), &d.box_dims, d.swizzle)
                .map_err(|e| e.with_note(format!("`{name}` loads argument {} through TMA", d.param + 1)))?;
            let mut buffer = device.tensor_map(&map)?;
            kargs.push_address(buffer.address());
            tensor_maps.push(buffer);
        }
        // The keys of the random streams, after the TMA maps.
        for s in &info.rng {
            let key = stream_key(&StreamId {
                function: &s.function,
                stream: &s.stream,
                mesh,
                step: self.rng_step,
                seed: s.seed as u64,
            });
            kargs.push_i64((u64::from(key[0]) | (u64::from(key[1]) << 32)) as i64);
        }
        let mut config = config;
        let mut shared = info.shared_bytes;
        if let Some(dynamic) = &info.shared_bytes_dynamic {
            let bytes = u64::try_from(expr::dim(dynamic, dims)?).unwrap_or(0);
            shared = shared.saturating_add(bytes);
            let limit = tessera_ir_tile::Target::from_name(&self.manifest.target)
                .map(|t| tessera_codegen::TargetInfo::of(t).shared_limit)
                .unwrap_or(u64::MAX);
            if shared > limit {
                return Err(RunError::launch(format!(
                    "`{name}` needs {shared} bytes of shared memory for these dims, and {} provides {limit} per block",
                    self.manifest.target
                ))
                .with_note(format!("its buffers sized at the launch take {dynamic} bytes"))
                .with_help(
                    "launch it on smaller tensors, or size the buffers with constants and walk the data in tiles",
                ));
            }
        }
        config.shared_bytes = usize::try_from(shared).map_err(|_| {
            RunError::launch(format!(
                "`{name}` asks for more shared memory than this host can address"
            ))
        })?;
        let mut scratch = None;
        if let Some(per_block) = &info.scratch_bytes_per_block {
            let bytes = expr::dim(per_block, dims)?;
            let total = u64::try_from(bytes)
                .ok()
                .and_then(|b| b.checked_mul(config.blocks()))
                .and_then(|b| usize::try_from(b).ok())
                .ok_or_else(|| {
                    RunError::value(format!(
                        "the scratch of `{name}` ({per_block} bytes per block) overflows"
                    ))
                })?;
            let mut buffer = device.alloc(total.max(1))?;
            kargs.push_address(buffer.address());
            scratch = Some(buffer);
        }
        // The print buffer, after the scratch.
        let print = if info.prints.is_empty() {
            None
        } else {
            let mut buffer = print::buffer(device)?;
            kargs.push_address(buffer.address());
            Some(buffer)
        };
        if info.folds_grid {
            kargs.push_i64(fold_grid(&mut config));
        }
        Ok(Bound {
            kernel: self.module.kernel(name)?,
            config,
            args: kargs,
            scratch,
            tensor_maps,
            print,
        })
    }

    /// Runs operator function `call.function`: allocates its results and
    /// scratch and makes its launches through `launch` (kernel, launch
    /// configuration, arguments). A function with collectives runs on every
    /// rank of its mesh, each with the call's arguments, and gives rank 0's
    /// results.
    pub(crate) fn call_with(
        &self,
        device: &Device,
        call: &Call<'_>,
        launch: &mut LaunchWith<'_>,
    ) -> Result<Value, RunError> {
        let ranks = mesh_ranks(self.host_info(call.function)?)?;
        let args = vec![call.args.to_vec(); ranks];
        let mut results = self.ranks_with(device, call.function, &args, call.dims, launch)?;
        Ok(results.swap_remove(0))
    }

    /// Runs operator function `function` on every rank of its mesh (one rank
    /// when it has no collectives), rank `r` with arguments `args[r]`, and
    /// gives each rank's results. The ranks run one step at a time: each
    /// launch on every rank, then each collective over all of them
    /// (spec/runtime.md, Collectives).
    pub fn call_on_ranks(
        &self,
        device: &Device,
        function: &str,
        args: &[Vec<Value>],
        dims: &[(String, i64)],
    ) -> Result<Vec<Value>, RunError> {
        self.ranks_with(device, function, args, dims, &mut |kernel, config, a, mesh| {
            self.launch_by_rank(device, kernel, config, a, dims, mesh).map(drop)
        })
    }

    /// How many ranks operator function `function` runs on.
    pub fn ranks_of(&self, function: &str) -> Result<usize, RunError> {
        mesh_ranks(self.host_info(function)?)
    }

    fn ranks_with(
        &self,
        device: &Device,
        function: &str,
        args: &[Vec<Value>],
        dims: &[(String, i64)],
        launch: &mut LaunchWith<'_>,
    ) -> Result<Vec<Value>, RunError> {
        let host = self.host_info(function)?;
        check_guards(&host.name, &host.guards, dims)?;
        let ranks = mesh_ranks(host)?;
        if args.len() != ranks {
            return Err(RunError::launch(format!(
                "`{function}` runs on the {ranks} ranks of its mesh, but the call gives arguments for {}",
                args.len()
            )));
        }
        let dim_params = host.params.iter().filter(|p| p.dim.is_some()).count();
        let inputs = host.params.len() - host.results.len() - host.scratch.len() - dim_params;
        let mut values: Vec<Vec<Value>> = Vec::with_capacity(ranks);
        for rank_args in args {
            if rank_args.len() != inputs {
                return Err(RunError::launch(format!(
                    "`{function}` takes {inputs} arguments, but the call passes {}",
                    rank_args.len()
                )));
            }
            let mut rank_values = Vec::with_capacity(host.params.len());
            for p in &host.params {
                let v = if p.index < inputs {
                    rank_args[p.index].clone()
                } else if let Some(dim) = &p.dim {
                    Value::Int(lookup(dims, dim, function)?)
                } else {
                    Value::Tensor(allocate(p, dims)?)
                };
                rank_values.push(v);
            }
            values.push(rank_values);
        }
        let coordinates: Vec<Vec<u32>> = (0..ranks).map(|r| mesh_coordinates(host, r)).collect();
        for (i, l) in host.launches.iter().enumerate() {
            for c in host.collectives.iter().filter(|c| c.after_launches == i) {
                collective(device, host, c, &values)?;
            }
            if !launched_for(l, dims)? {
                continue;
            }
            let mut grid = [1u32; 3];
            for (slot, g) in grid.iter_mut().zip(&l.grid) {
                let v = expr::grid(g, dims, || device.multiprocessors())?;
                *slot = u32::try_from(v)
                    .map_err(|_| RunError::launch(format!("the grid entry `{g}` of `{}` is {v}", l.kernel)))?;
            }
            // A grid of no blocks is a kernel with no work: its output is
            // empty (the dims the grid counts tiles of are 0).
            if grid.contains(&0) {
                continue;
            }
            let mut block = [1u32; 3];
            for (slot, b) in block.iter_mut().zip(&l.block) {
                *slot = u32::try_from(*b).map_err(|_| RunError::launch(format!("a block of {b} threads")))?;
            }
            let config = LaunchConfig {
                grid,
                block,
                shared_bytes: 0,
            };
            for (rank_values, rank_coordinates) in values.iter().zip(&coordinates) {
                let args = l
                    .args
                    .iter()
                    .map(|&i| {
                        rank_values.get(i).cloned().ok_or_else(|| {
                            RunError::launch(format!(
                                "a launch of `{}` passes a value the runtime cannot bind",
                                l.kernel
                            ))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                launch(&l.kernel, config, &args, rank_coordinates)?;
            }
        }
        for c in host
            .collectives
            .iter()
            .filter(|c| c.after_launches >= host.launches.len())
        {
            collective(device, host, c, &values)?;
        }
        Ok(values
            .iter()
            .map(|rank_values| {
                let mut results: Vec<Value> = host.results.iter().map(|&i| rank_values[i].clone()).collect();
                if results.len() == 1 {
                    results.remove(0)
                } else {
                    Value::tuple(results)
                }
            })
            .collect())
    }
}

/// Whether launch `l` runs for `dims`: every constraint of its `when`
/// holds (a row kernel specialized for a range of row lengths, or for
/// rows of whole runs), or it has none.
fn launched_for(l: &LaunchInfo, dims: &[(String, i64)]) -> Result<bool, RunError> {
    let Some(when) = &l.when else { return Ok(true) };
    let bound = |name: &str| expr::bound(dims, name);
    ShapeConstraint::parse_all(when)
        .and_then(|all| {
            all.iter()
                .map(|c| c.check(bound).map(|outcome| outcome.is_ok()))
                .collect::<Option<Vec<bool>>>()
        })
        .map(|holds| holds.into_iter().all(|h| h))
        .ok_or_else(|| {
            RunError::launch(format!(
                "cannot decide whether `{}` runs: its condition `{when}` is not over bound dims",
                l.kernel
            ))
        })
}

/// Checks the runtime guards of host function or kernel `function` over
/// the dims its call or launch binds: the first that fails is E0304, at
/// the call the checker could not prove it for (spec/runtime.md, Runtime
/// guards).
fn check_guards(function: &str, guards: &[GuardInfo], dims: &[(String, i64)]) -> Result<(), RunError> {
    let bound = |name: &str| expr::bound(dims, name);
    for g in guards {
        let callee = g.callee.as_deref().unwrap_or(function);
        let unreadable = || {
            RunError::launch(format!(
                "cannot check the runtime guard `{}` of `{function}`: its dims are not all bound",
                g.constraint
            ))
        };
        let constraint = ShapeConstraint::parse(&g.constraint).ok_or_else(unreadable)?;
        let Err(arithmetic) = constraint.check(bound).ok_or_else(unreadable)? else {
            continue;
        };
        let values: Vec<String> = constraint
            .symbols()
            .into_iter()
            .filter_map(|s| bound(s).map(|v| format!("{s} = {v}")))
            .collect();
        let mut e = RunError::new(
            tessera_diagnostics::Code::E0304,
            format!("a runtime guard of `{function}` failed: `{callee}` requires {constraint}, but {arithmetic}"),
        )
        .with_note(format!(
            "the checker could not prove {constraint} where `{function}` calls `{callee}`, so `{function}` checks it before it runs"
        ))
        .with_help(format!(
            "pass arguments whose dims satisfy {constraint}, or add `where {constraint}` to `{function}` so that its callers are checked"
        ));
        if let Some([start, end]) = g.span {
            e = e.with_site(
                tessera_base::Span::new(start, end),
                format!("the call of `{callee}`, with {}", values.join(", ")),
            );
        }
        return Err(e);
    }
    Ok(())
}

/// The number of ranks `host` runs on: 1 without collectives, else the
/// devices of the mesh its collectives name (all must name the same).
fn mesh_ranks(host: &HostInfo) -> Result<usize, RunError> {
    let Some(first) = host.collectives.first() else {
        return Ok(1);
    };
    if first.mesh_shape.is_empty() {
        return Err(RunError::launch(format!(
            "the mesh of the all-reduce in `{}` has no known size: give it with `dist.Mesh(..., devices=range(n))` or `shape=(...)`",
            host.name
        )));
    }
    if let Some(other) = host.collectives.iter().find(|c| c.mesh_shape != first.mesh_shape) {
        return Err(RunError::launch(format!(
            "the collectives of `{}` run on meshes of shapes {:?} and {:?}; one function runs on one mesh",
            host.name, first.mesh_shape, other.mesh_shape
        )));
    }
    first
        .mesh_shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))
        .ok_or_else(|| RunError::launch(format!("the mesh of `{}` is too large", host.name)))
}

/// The coordinates of `rank` in the mesh of `host`'s collectives, row-major
/// (none without collectives).
fn mesh_coordinates(host: &HostInfo, rank: usize) -> Vec<u32> {
    let Some(c) = host.collectives.first() else {
        return Vec::new();
    };
    let mut rest = rank;
    let mut coordinates = vec![0u32; c.mesh_shape.len()];
    for (slot, &extent) in coordinates.iter_mut().zip(&c.mesh_shape).rev() {
        let extent = usize::try_from(extent).unwrap_or(1).max(1);
        *slot = (rest % extent) as u32;
        rest /= extent;
    }
    coordinates
}

/// Runs collective `c` of `host` over the ranks' `values`: the ranks that
/// differ only in their coordinate along `c.axis` (all ranks when it has
/// none) reduce their `src` into every one's `dst`.
fn collective(device: &Device, host: &HostInfo, c: &CollectiveInfo, values: &[Vec<Value>]) -> Result<(), RunError> {
    let tensor = |rank: usize, param: usize| -> Result<TensorValue, RunError> {
        match values[rank].get(param) {
            Some(Value::Tensor(t)) => Ok(t.clone()),
            _ => Err(RunError::launch(format!(
                "the all-reduce in `{}` has no tensor to reduce",
                host.name
            ))),
        }
    };
    let ranks = values.len();
    let axis = c.axis.as_ref().and_then(|a| c.mesh_axes.iter().position(|x| x == a));
    let (stride, size) = match axis {
        Some(a) => (
            c.mesh_shape[a + 1..].iter().product::<i64>() as usize,
            c.mesh_shape[a] as usize,
        ),
        None => (1, ranks),
    };
    for base in (0..ranks).filter(|r| (r / stride) % size == 0) {
        let members: Vec<usize> = (0..size).map(|k| base + k * stride).collect();
        let inputs = members
            .iter()
            .map(|&r| Ok(tensor(r, c.src)?.host(device)?.clone()))
            .collect::<Result<Vec<Tensor>, RunError>>()?;
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let reduced = tessera_runtime::collective::all_reduce(&refs, &c.op, &c.algo)?;
        for &r in &members {
            tensor(r, c.dst)?
                .host_mut(device)?
                .bytes_mut()
                .copy_from_slice(reduced.bytes());
        }
    }
    Ok(())
}

impl Executor for Loaded {
    fn launch(&mut self, device: &Device, launch: &Launch<'_>) -> Result<String, RunError> {
        self.of_file(launch.file)
            .launch_kernel(device, launch.kernel, launch.config, launch.args, launch.dims)
    }

    fn compiled_block(&self, file: FileId, kernel: &str) -> Option<[u32; 3]> {
        let info = self
            .of_file(file)
            .kernel_info(kernel)
            .ok()
            .filter(|k| k.block_required)?;
        let mut block = [1u32; 3];
        for (slot, &b) in block.iter_mut().zip(&info.block) {
            *slot = u32::try_from(b).ok()?;
        }
        Some(block)
    }

    fn call(&mut self, device: &Device, call: &Call<'_>) -> Result<Value, RunError> {
        let loaded = self.of_file(call.file);
        loaded.call_with(device, call, &mut |kernel, config, args, mesh| {
            loaded
                .launch_by_rank(device, kernel, config, args, call.dims, mesh)
                .map(drop)
        })
    }
}

/// How [`Loaded::call_with`] launches a kernel: its name, the launch
/// configuration, the arguments and the mesh coordinates of the rank. The
/// kernels of operator functions print nothing (only `@kernel` code has
/// prints).
pub(crate) type LaunchWith<'f> = dyn FnMut(&str, LaunchConfig, &[Value], &[u32]) -> Result<(), RunError> + 'f;

/// A launch whose arguments are bound.
struct Bound {
    kernel: Kernel,
    config: LaunchConfig,
    args: KernelArgs,
    /// Global scratch, alive until the launch has completed.
    scratch: Option<Buffer>,
    /// The TMA tensor maps, likewise.
    tensor_maps: Vec<Buffer>,
    /// The print buffer of a kernel that prints.
    print: Option<Buffer>,
}

/// What a timed launch ran with and how long the kernel took.
pub(crate) struct Timed {
    /// The launch configuration, with the manifest's shared bytes.
    pub config: LaunchConfig,
    /// When the host started the launch (its arguments bound).
    pub started: Instant,
    /// The kernel's time between the events around it.
    pub device_ms: f64,
    /// The lines the kernel printed.
    pub printed: String,
}

/// The most blocks a grid may have along y or z on every GPU target.
const MAX_GRID_YZ: u32 = 65535;

/// Folds a grid whose y or z extent is past [`MAX_GRID_YZ`] onto the x
/// axis (X·Y·Z blocks in a row, where that is at most 2³¹ − 1) and gives
/// the hidden argument of a kernel that reads its y or z axis: the
/// logical `X | Y << 32` it decodes its ids from, or 0 for a grid that is
/// launched as it is (`KernelInfo::folds_grid`).
fn fold_grid(config: &mut LaunchConfig) -> i64 {
    let [x, y, z] = config.grid;
    if y <= MAX_GRID_YZ && z <= MAX_GRID_YZ {
        return 0;
    }
    match u32::try_from(u64::from(x) * u64::from(y) * u64::from(z)) {
        Ok(blocks) if blocks <= i32::MAX as u32 => {
            config.grid = [blocks, 1, 1];
            i64::from(x) | i64::from(y) << 32
        }
        // Past the x axis too: the launch reports the grid (E1008).
        _ => 0,
    }
}

/// Launches `bound` and waits for it, with `events` recorded around the
/// kernel; gives back its print buffer.
fn fire(device: &Device, mut bound: Bound, mut events: Option<&mut [Event; 2]>) -> Result<Option<Buffer>, RunError> {
    if let Some(events) = events.as_mut() {
        device.record(&mut events[0], None)?;
    }
    // SAFETY: the arguments follow the kernel's parameters as the manifest
    // lists them (the code generator wrote both); buffers are the tensors
    // the interpreter checked against the parameters' shapes (or allocated
    // from them, and held by the caller until this returns), and the
    // scratch buffer is as large as the manifest asks for this grid, each
    // tensor map describes its tensor argument (checked by TiledMap); all
    // stay alive until the launch has completed (`synchronize` below,
    // before `bound` with its scratch is dropped).
    unsafe { device.launch(&bound.kernel, &bound.config, &mut bound.args, None)? };
    if let Some(events) = events {
        device.record(&mut events[1], None)?;
    }
    device.synchronize()?;
    drop(bound.scratch);
    drop(bound.tensor_maps);
    Ok(bound.print)
}

/// A tensor for a result or scratch parameter, its dims evaluated, filled
/// with 0xFF bytes like the host's `empty` (NaN in every float dtype): an
/// element no kernel writes shows instead of passing for a zero.
fn allocate(p: &ParamInfo, dims: &[(String, i64)]) -> Result<TensorValue, RunError> {
    let dtype = host_dtype(&p.dtype).ok_or_else(|| RunError::value(format!("no tensors of `{}`", p.dtype)))?;
    let shape = p
        .shape
        .iter()
        .map(|d| {
            let v = expr::dim(d, dims)?;
            usize::try_from(v).map_err(|_| RunError::value(format!("the dim `{d}` is {v}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut t = Tensor::zeros(dtype, &shape)?;
    t.bytes_mut().fill(0xFF);
    Ok(TensorValue::new(t))
}

fn lookup(dims: &[(String, i64)], dim: &str, function: &str) -> Result<i64, RunError> {
    expr::bound(dims, dim)
        .ok_or_else(|| RunError::launch(format!("the dim `{dim}` of `{function}` is not bound by its arguments")))
}

/// The host dtype of a kernel parameter's element type (its IR name).
pub fn host_dtype(ir: &str) -> Option<DType> {
    match ir {
        "f8e4m3" => Some(DType::Fp8E4m3),
        "f8e5m2" => Some(DType::Fp8E5m2),
        "i1" => Some(DType::Bool),
        _ => DType::from_name(ir),
    }
}

/// Pushes `v` for parameter `p`.
fn push(device: &Device, args: &mut KernelArgs, p: &ParamInfo, v: &Value, kernel: &str) -> Result<(), RunError> {
    let mismatch = || {
        RunError::new(
            tessera_diagnostics::Code::E1005,
            format!(
                "argument {} of `{kernel}` is {}, but the parameter is {}",
                p.index + 1,
                v.describe(),
                describe_param(p)
            ),
        )
    };
    if p.kind == "buffer" {
        let Value::Tensor(t) = v else { return Err(mismatch()) };
        if host_dtype(&p.dtype) != Some(t.dtype()) {
            return Err(mismatch());
        }
        args.push_address(t.kernel_address(device)?);
        return Ok(());
    }
    let number = match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        _ => return Err(mismatch()),
    };
    let integer = || {
        let i = match v {
            Value::Int(i) => *i,
            Value::Bool(b) => i64::from(*b),
            _ => return Err(mismatch()),
        };
        // A number the parameter's dtype cannot hold is refused (it
        // wrapped: 300 for an i8 gave 44).
        let range = match host_dtype(&p.dtype) {
            Some(DType::U64) => Some((0, i64::MAX)),
            d => d.and_then(DType::int_range),
        };
        match range {
            Some((lo, hi)) if i < lo || i > hi => {
                let error = RunError::new(
                    tessera_diagnostics::Code::E1005,
                    format!(
                        "argument {} of `{kernel}` is {i}, which {} does not hold ({lo} to {hi})",
                        p.index + 1,
                        describe_param(p)
                    ),
                );
                // Host code holds integers as i64: the rest of u64's range
                // reaches a kernel in a tensor.
                Err(if host_dtype(&p.dtype) == Some(DType::U64) {
                    error.with_help("host code holds integers as i64, so a u64 scalar from it is 0 to 2^63 - 1: pass a larger value as an element of a u64 tensor")
                } else {
                    error
                })
            }
            _ => Ok(i),
        }
    };
    match p.dtype.as_str() {
        "f32" => args.push_f32(number as f32),
        "f64" => args.push_f64(number),
        "f16" => args.push_i32(i32::from(f64_to_f16(number))),
        "bf16" => args.push_i32(i32::from(f64_to_bf16(number))),
        "f8e4m3" => args.push_i32(i32::from(E4M3.encode(number, false))),
        "f8e5m2" => args.push_i32(i32::from(E5M2.encode(number, false))),
        "bool" => args.push_bool(number != 0.0),
        "i8" | "u8" | "i32" => args.push_i32(i32::try_from(integer()?).map_err(|_| mismatch())?),
        _ => args.push_i64(integer()?),
    }
    Ok(())
}

/// A parameter's type as the language writes it (`bool[N]`, not the IR's `i1[N]`).
fn describe_param(p: &ParamInfo) -> String {
    let dtype = host_dtype(&p.dtype).map_or(p.dtype.clone(), |d| d.name().to_string());
    if p.kind == "buffer" {
        format!("{dtype}[{}]", p.shape.join(", "))
    } else {
        dtype
    }
}

fn shape(dims: &[i64]) -> String {
    let items: Vec<String> = dims.iter().map(i64::to_string).collect();
    if items.len() == 1 {
        format!("({},)", items[0])
    } else {
        format!("({})", items.join(", "))
    }
}

/// A block shape in three dimensions.
fn padded(dims: &[i64]) -> Vec<i64> {
    let mut d = dims.to_vec();
    d.resize(3, 1);
    d
}

/// A block shape without its trailing 1s, as a launch writes it.
fn trim(dims: &[i64]) -> Vec<i64> {
    let keep = dims.iter().rposition(|&d| d != 1).map_or(1, |i| i + 1);
    dims[..keep].to_vec()
}
