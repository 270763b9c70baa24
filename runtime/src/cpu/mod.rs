//! CPU execution with GPU semantics: the ABI between the code generator's
//! CPU kernels and the runtime, the functions the runtime provides to them,
//! and the launch.
//!
//! ```c
//! typedef struct {
//!   uint32_t thread_id[3];  // threadIdx
//!   uint32_t block_id[3];   // blockIdx
//!   uint32_t block_dim[3];  // blockDim
//!   uint32_t grid_dim[3];   // gridDim
//!   uint8_t* shared;        // this block's shared memory: shared_bytes long, 128-byte aligned, poisoned (0xFF)
//!   void*    block;         // opaque: the runtime's per-block state
//!   void*    fiber;         // opaque: the thread's fiber, null when the block's threads run one after another
//! } TesseraCpuCtx;
//! typedef struct {
//!   const char* file;       // the source file's path, NUL-terminated; "" when unknown
//!   uint32_t start, end;    // the byte range of the operation in it
//! } TesseraCpuSite;
//! void entry(void** args, TesseraCpuCtx* ctx);  // args[i] points at parameter i's value
//! void     tessera_cpu_oob(TesseraCpuCtx*, const TesseraCpuSite*, uint32_t rank, const int64_t* index, const int64_t* shape);
//! void     tessera_cpu_div0(TesseraCpuCtx*, const TesseraCpuSite*);
//! void     tessera_cpu_barrier(TesseraCpuCtx*, const TesseraCpuSite*);
//! uint32_t tessera_cpu_shfl(TesseraCpuCtx*, const TesseraCpuSite*, uint32_t value, uint32_t lane_or_delta, uint32_t mode, uint32_t width);
//! uint32_t tessera_cpu_vote(TesseraCpuCtx*, const TesseraCpuSite*, uint32_t pred, uint32_t mode);
//! void     tessera_cpu_yield(TesseraCpuCtx*, const TesseraCpuSite*, uint64_t value);
//! ```
//!
//! A site is the source location of the call, which the runtime's reports
//! point at (an out-of-bounds access, a division by zero, the barrier or
//! warp operation of a deadlock); it lives as long as the kernel's code.
//!
//! `args` is laid out as `cuLaunchKernel`'s `kernelParams`: a buffer
//! parameter's entry points at a `void*` data pointer, a scalar's at the
//! scalar (`f32`, `f64`, `i32`, `i64`; `index` is `i64`; `i1`/`bool` a `u8`).
//! Warps are 32 consecutive linear thread ids (x fastest).
//!
//! A kernel that calls no barrier, shuffle, vote or yield is launched
//! without synchronization: the threads of a block run one after another on
//! one OS thread, and blocks spread over the cores. Otherwise every thread
//! of a block is a fiber (`fibers.rs`): one OS thread runs a block's
//! threads, switching between them at each barrier, shuffle, vote and
//! yield; worker `w` of `W` runs blocks `w, w + W, w + 2W, …`, and the
//! workers run side by side. The code generator calls `tessera_cpu_yield`
//! after each atomic in a loop, with the value the atomic read.

mod fibers;

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use fibers::{block_text, suspend, Wait, Worker};

use crate::buffer::HostBuffer;
use crate::device::Common;
use crate::RunError;

pub use fibers::SHARED_POISON;

/// The context of one GPU thread on the CPU (`TesseraCpuCtx`).
#[repr(C)]
#[derive(Debug)]
pub struct TesseraCpuCtx {
    pub thread_id: [u32; 3],
    pub block_id: [u32; 3],
    pub block_dim: [u32; 3],
    pub grid_dim: [u32; 3],
    pub shared: *mut u8,
    pub block: *mut c_void,
    pub fiber: *mut c_void,
}

/// The source location of a runtime call (`TesseraCpuSite`).
#[repr(C)]
#[derive(Debug)]
pub struct TesseraCpuSite {
    pub file: *const std::ffi::c_char,
    pub start: u32,
    pub end: u32,
}

/// A site's file path (None when the code generator knew none) and span.
///
/// # Safety
/// `site` must be null or point at a `TesseraCpuSite` whose `file` is null
/// or a NUL-terminated string.
unsafe fn read_site(site: *const TesseraCpuSite) -> Option<(String, tessera_base::Span)> {
    // SAFETY: the caller's contract.
    let site = unsafe { site.as_ref()? };
    if site.file.is_null() {
        return None;
    }
    // SAFETY: a non-null `file` is NUL-terminated (caller's contract).
    let file = unsafe { std::ffi::CStr::from_ptr(site.file) }.to_string_lossy();
    (!file.is_empty()).then(|| (file.into_owned(), tessera_base::Span::new(site.start, site.end)))
}

/// `error` with the site of a runtime call, labelled `label`.
///
/// # Safety
/// As for [`read_site`].
unsafe fn at_site(error: RunError, site: *const TesseraCpuSite, label: &str) -> RunError {
    // SAFETY: the caller's contract.
    match unsafe { read_site(site) } {
        Some((file, span)) => error.with_site_in(Some(file), span, label),
        None => error,
    }
}

/// A compiled CPU kernel's entry point.
pub type CpuKernelFn = unsafe extern "C" fn(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx);

/// How the threads of a block must run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threading {
    /// The kernel calls no barrier, shuffle or vote: a block's threads may
    /// run one after another.
    Independent,
    /// The kernel synchronizes: every thread of a block runs concurrently.
    Synchronized,
}

/// A kernel for the CPU device.
#[derive(Clone, Copy, Debug)]
pub struct CpuKernel {
    pub entry: CpuKernelFn,
    pub threading: Threading,
}

/// The grid, the block and the dynamic shared memory of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: usize,
}

impl LaunchConfig {
    /// A one-dimensional launch.
    pub fn linear(blocks: u32, threads: u32) -> LaunchConfig {
        LaunchConfig {
            grid: [blocks, 1, 1],
            block: [threads, 1, 1],
            shared_bytes: 0,
        }
    }

    pub fn threads_per_block(&self) -> u64 {
        self.block.iter().map(|&d| d as u64).product()
    }

    pub fn blocks(&self) -> u64 {
        self.grid.iter().map(|&d| d as u64).product()
    }

    /// Checks the limits every device shares (CUDA's): at most 1024 threads
    /// per block, block z at most 64, grid y and z at most 65535, no zero.
    pub fn validate(&self) -> Result<(), RunError> {
        let shown = format!(
            "grid ({}, {}, {}), block ({}, {}, {})",
            self.grid[0], self.grid[1], self.grid[2], self.block[0], self.block[1], self.block[2]
        );
        if self.grid.contains(&0) || self.block.contains(&0) {
            return Err(RunError::launch(format!("cannot launch {shown}: a dimension is 0")));
        }
        let threads = self.threads_per_block();
        if threads > 1024 {
            return Err(RunError::launch(format!(
                "cannot launch {shown}: a block of {threads} threads, and a block holds at most 1024"
            )));
        }
        if self.block[2] > 64 {
            return Err(RunError::launch(format!(
                "cannot launch {shown}: a block's z dimension is at most 64"
            )));
        }
        if self.grid[0] > i32::MAX as u32 || self.grid[1] > 65535 || self.grid[2] > 65535 {
            return Err(RunError::launch(format!(
                "cannot launch {shown}: the grid's x dimension is at most 2147483647, y and z at most 65535"
            )));
        }
        Ok(())
    }
}

/// The stack of each OS thread that runs the threads of independent blocks.
const THREAD_STACK: usize = 512 * 1024;

/// What every thread of a launch shares: the error of the lowest-numbered
/// failing block (blocks run concurrently, so the first error in time would
/// change from run to run), and the number of the first block not to start.
/// Every block below a failing one still runs, so the error reported is the
/// same on every run.
struct LaunchState {
    error: Mutex<Option<(u64, RunError)>>,
    limit: AtomicU64,
}

impl Default for LaunchState {
    fn default() -> LaunchState {
        LaunchState {
            error: Mutex::new(None),
            limit: AtomicU64::new(u64::MAX),
        }
    }
}

impl LaunchState {
    /// An error outside any block (a worker that cannot start): no block
    /// starts after it.
    fn fail(&self, message: String) {
        self.fail_with(RunError::launch(message));
    }

    fn fail_with(&self, error: RunError) {
        self.fail_in(0, error);
    }

    /// An error in the block numbered `block` (x fastest); within a block
    /// the first error is kept.
    fn fail_in(&self, block: u64, error: RunError) {
        let mut e = self.error.lock().unwrap_or_else(|e| e.into_inner());
        if e.as_ref().is_none_or(|(b, _)| block < *b) {
            *e = Some((block, error));
        }
        self.limit.fetch_min(block, Ordering::SeqCst);
    }

    /// Whether the block numbered `block` is to start.
    fn starts(&self, block: u64) -> bool {
        block < self.limit.load(Ordering::SeqCst)
    }
}

/// The runtime's per-block state, behind `TesseraCpuCtx::block`.
struct BlockCtx<'a> {
    threads: usize,
    /// Its threads are fibers (false: they run one after another).
    synchronized: bool,
    launch: &'a LaunchState,
}

impl BlockCtx<'_> {
    /// Fails the launch in the block of `ctx`.
    fn fail(&self, ctx: &TesseraCpuCtx, message: String) {
        self.fail_with(ctx, RunError::launch(message));
    }

    fn fail_with(&self, ctx: &TesseraCpuCtx, error: RunError) {
        self.launch.fail_in(linear_block(ctx), error);
    }
}

/// How long the threads of a block may spin at atomics that read the same
/// values, with no thread reaching a barrier, a warp operation or its end,
/// before the launch fails with a livelock.
pub const SPIN_LIMIT: Duration = Duration::from_secs(10);

/// The CPU device: runs kernels on this process's threads.
#[derive(Clone, Debug)]
pub struct CpuDevice {
    workers: usize,
    spin_limit: Duration,
    pub(crate) common: Common,
}

impl Default for CpuDevice {
    fn default() -> CpuDevice {
        CpuDevice::new()
    }
}

impl CpuDevice {
    /// A device that uses every core.
    pub fn new() -> CpuDevice {
        CpuDevice::with_workers(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// A device that runs at most `workers` blocks at once.
    pub fn with_workers(workers: usize) -> CpuDevice {
        CpuDevice {
            workers: workers.max(1),
            spin_limit: SPIN_LIMIT,
            common: Common::default(),
        }
    }

    /// The device with another [`SPIN_LIMIT`].
    pub fn with_spin_limit(mut self, limit: Duration) -> CpuDevice {
        self.spin_limit = limit;
        self
    }

    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Runs `kernel` over the grid and returns when every block is done.
    /// Errors: a configuration over the limits, a barrier, shuffle or vote in
    /// a kernel launched as [`Threading::Independent`] with more than one
    /// thread per block, a deadlock or a barrier divergence (the kernel's
    /// threads still run to their end; the results are then undefined).
    ///
    /// # Safety
    /// `kernel.entry` must follow the CPU ABI above, and `args` must hold,
    /// for each of its parameters, a pointer to a value of that parameter's
    /// type; buffers must be valid for every access the kernel makes, from
    /// any thread, until the launch returns.
    pub unsafe fn launch(
        &self,
        kernel: CpuKernel,
        config: &LaunchConfig,
        args: &mut [*mut c_void],
    ) -> Result<(), RunError> {
        config.validate()?;
        // Addresses cross threads as integers; each thread rebuilds its own
        // argument array from them.
        let addresses: Vec<usize> = args.iter().map(|&p| p as usize).collect();
        let launch = LaunchState::default();
        let threads = config.threads_per_block();
        if kernel.threading == Threading::Independent || threads == 1 {
            self.run_independent(kernel.entry, config, &addresses, &launch);
        } else {
            self.run_synchronized(kernel.entry, config, &addresses, &launch);
        }
        match launch.error.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some((_, error)) => Err(error),
            None => Ok(()),
        }
    }

    fn run_independent(&self, entry: CpuKernelFn, config: &LaunchConfig, addresses: &[usize], launch: &LaunchState) {
        let blocks = config.blocks();
        let threads = config.threads_per_block() as usize;
        let next = AtomicU64::new(0);
        let workers = (self.workers as u64).min(blocks) as usize;
        std::thread::scope(|scope| {
            for _ in 0..workers {
                let spawned = std::thread::Builder::new()
                    .stack_size(THREAD_STACK)
                    .spawn_scoped(scope, || {
                        let mut shared = match HostBuffer::zeroed(config.shared_bytes) {
                            Ok(b) => b,
                            Err(e) => return launch.fail_with(e),
                        };
                        let mut args: Vec<*mut c_void> = addresses.iter().map(|&a| a as *mut c_void).collect();
                        let block = BlockCtx {
                            threads,
                            synchronized: false,
                            launch,
                        };
                        loop {
                            let b = next.fetch_add(1, Ordering::Relaxed);
                            if b >= blocks || !launch.starts(b) {
                                break;
                            }
                            shared.bytes_mut().fill(SHARED_POISON);
                            let block_id = block_index(b, config.grid);
                            for t in 0..threads {
                                let mut ctx = TesseraCpuCtx {
                                    thread_id: thread_index(t, config.block),
                                    block_id,
                                    block_dim: config.block,
                                    grid_dim: config.grid,
                                    shared: shared.as_mut_ptr(),
                                    block: &block as *const BlockCtx as *mut c_void,
                                    fiber: std::ptr::null_mut(),
                                };
                                // SAFETY: the caller of `launch` guarantees the
                                // entry point and its arguments; `ctx` and the
                                // block state outlive the call.
                                unsafe { entry(args.as_mut_ptr(), &mut ctx) };
                            }
                        }
                    });
                if let Err(e) = spawned {
                    launch.fail(format!("cannot start a CPU worker thread: {e}"));
                    break;
                }
            }
        });
    }

    fn run_synchronized(&self, entry: CpuKernelFn, config: &LaunchConfig, addresses: &[usize], launch: &LaunchState) {
        let workers = (self.workers as u64).min(config.blocks());
        std::thread::scope(|scope| {
            for w in 0..workers {
                let worker = Worker {
                    entry,
                    config,
                    args: addresses,
                    launch,
                    spin_limit: self.spin_limit,
                };
                let spawned = std::thread::Builder::new()
                    .stack_size(THREAD_STACK)
                    .spawn_scoped(scope, move || worker.run(w, workers));
                if let Err(e) = spawned {
                    launch.fail(format!("cannot start a CPU worker thread: {e}"));
                    break;
                }
            }
        });
    }
}

fn block_index(b: u64, grid: [u32; 3]) -> [u32; 3] {
    let (gx, gy) = (grid[0] as u64, grid[1] as u64);
    [(b % gx) as u32, ((b / gx) % gy) as u32, (b / (gx * gy)) as u32]
}

fn thread_index(t: usize, block: [u32; 3]) -> [u32; 3] {
    let (bx, by) = (block[0] as usize, block[1] as usize);
    [(t % bx) as u32, ((t / bx) % by) as u32, (t / (bx * by)) as u32]
}

/// The number of a context's block in its grid: x fastest.
fn linear_block(ctx: &TesseraCpuCtx) -> u64 {
    let [x, y, z] = ctx.block_id.map(u64::from);
    let [gx, gy, _] = ctx.grid_dim.map(u64::from);
    x + gx * (y + gy * z)
}

/// The linear thread id of a context: x fastest.
fn linear_thread(ctx: &TesseraCpuCtx) -> usize {
    let [x, y, z] = ctx.thread_id.map(|v| v as usize);
    let [bx, by, _] = ctx.block_dim.map(|v| v as usize);
    x + bx * (y + by * z)
}

/// The context and block state behind a kernel's `ctx` argument.
///
/// # Safety
/// `ctx` must be the pointer the runtime passed to the kernel's entry.
unsafe fn context<'a>(ctx: *mut TesseraCpuCtx) -> (&'a TesseraCpuCtx, &'a BlockCtx<'a>) {
    // SAFETY: the runtime made `ctx` point at a live `TesseraCpuCtx` whose
    // `block` points at the launch's live `BlockCtx` (caller's contract).
    unsafe {
        let ctx = &*ctx;
        (ctx, &*(ctx.block as *const BlockCtx))
    }
}

/// The shuffle modes of `tessera_cpu_shfl` (PTX `shfl.sync` modes).
pub const SHFL_IDX: u32 = 0;
pub const SHFL_UP: u32 = 1;
pub const SHFL_DOWN: u32 = 2;
pub const SHFL_BFLY: u32 = 3;

/// The vote modes of `tessera_cpu_vote`.
pub const VOTE_ALL: u32 = 0;
pub const VOTE_ANY: u32 = 1;
pub const VOTE_BALLOT: u32 = 2;

/// The source lane of a shuffle, as PTX `shfl.sync` computes it with the
/// clamp value CUDA's `__shfl_*_sync(mask, v, b, width)` passes
/// (`((32 - width) << 8) | 0x1f`, without the `0x1f` for `up`): None means
/// the lane keeps its own value. Only the low 5 bits of `b` count.
pub fn shfl_source(lane: u32, b: u32, mode: u32, width: u32) -> Option<u32> {
    let c = ((32 - width) << 8) | if mode == SHFL_UP { 0 } else { 0x1f };
    let segmask = (c >> 8) & 0x1f;
    let cval = c & 0x1f;
    let bval = b & 0x1f;
    let max_lane = (lane & segmask) | (cval & !segmask);
    let min_lane = lane & segmask;
    let (j, valid) = match mode {
        SHFL_UP => {
            let j = lane as i64 - bval as i64;
            (j, j >= max_lane as i64)
        }
        SHFL_DOWN => {
            let j = (lane + bval) as i64;
            (j, j <= max_lane as i64)
        }
        SHFL_BFLY => {
            let j = (lane ^ bval) as i64;
            (j, j <= max_lane as i64)
        }
        _ => {
            let j = (min_lane | (bval & !segmask)) as i64;
            (j, j <= max_lane as i64)
        }
    };
    valid.then_some(j as u32)
}

/// `__syncthreads()` for the calling thread's block.
///
/// # Safety
/// `ctx` must be the context the runtime passed to the calling kernel, and
/// `site` null or a site that outlives the launch.
pub unsafe extern "C" fn tessera_cpu_barrier(ctx: *mut TesseraCpuCtx, site: *const TesseraCpuSite) {
    // SAFETY: the caller passes the ctx the runtime gave it.
    let (ctx, block) = unsafe { context(ctx) };
    if block.synchronized {
        // SAFETY: a synchronized block's threads are fibers whose context
        // holds their yielder, and this call comes from the fiber.
        unsafe { suspend(ctx.fiber, Wait::Barrier { site }) };
    } else if block.threads > 1 {
        block.fail(ctx, unsynchronized("tessera_cpu_barrier"));
    }
}

fn unsynchronized(function: &str) -> String {
    format!(
        "the kernel calls `{function}` but was launched as `Threading::Independent`, whose threads run one after another; launch it as `Threading::Synchronized`"
    )
}

/// `shfl.sync` with a full mask: `mode` 0 idx, 1 up, 2 down, 3 bfly; `width`
/// the segment width (a power of two up to 32). A lane whose source is out
/// of its segment, or is not in the block or has finished the kernel,
/// gets its own value.
///
/// # Safety
/// As for [`tessera_cpu_barrier`].
pub unsafe extern "C" fn tessera_cpu_shfl(
    ctx: *mut TesseraCpuCtx,
    site: *const TesseraCpuSite,
    value: u32,
    lane_or_delta: u32,
    mode: u32,
    width: u32,
) -> u32 {
    // SAFETY: the caller passes the ctx the runtime gave it.
    let (ctx, block) = unsafe { context(ctx) };
    if mode > SHFL_BFLY || !width.is_power_of_two() || width > 32 {
        block.fail(ctx, format!(
            "`tessera_cpu_shfl` called with mode {mode} and width {width}: the mode is 0 to 3, the width a power of two up to 32"
        ));
        return value;
    }
    let tid = linear_thread(ctx);
    let lane = (tid % 32) as u32;
    let src = shfl_source(lane, lane_or_delta, mode, width);
    if !block.synchronized {
        if block.threads > 1 {
            block.fail(ctx, unsynchronized("tessera_cpu_shfl"));
        }
        return value;
    }
    // SAFETY: as in `tessera_cpu_barrier`.
    unsafe { suspend(ctx.fiber, Wait::Shuffle { value, src, mode, site }) }.value
}

/// A warp vote with a full mask: `mode` 0 all, 1 any, 2 ballot (bit i is
/// lane i's predicate). Lanes that are not in the block, or have finished
/// the kernel, do not vote.
///
/// # Safety
/// As for [`tessera_cpu_barrier`].
pub unsafe extern "C" fn tessera_cpu_vote(
    ctx: *mut TesseraCpuCtx,
    site: *const TesseraCpuSite,
    pred: u32,
    mode: u32,
) -> u32 {
    // SAFETY: the caller passes the ctx the runtime gave it.
    let (ctx, block) = unsafe { context(ctx) };
    if mode > VOTE_BALLOT {
        block.fail(
            ctx,
            format!("`tessera_cpu_vote` called with mode {mode}: the mode is 0 to 2"),
        );
        return 0;
    }
    let (ballot, lanes) = if block.synchronized {
        // SAFETY: as in `tessera_cpu_barrier`.
        let r = unsafe {
            suspend(
                ctx.fiber,
                Wait::Vote {
                    pred: pred != 0,
                    mode,
                    site,
                },
            )
        };
        if r.broken {
            return 0;
        }
        (r.value, r.lanes)
    } else {
        if block.threads > 1 {
            block.fail(ctx, unsynchronized("tessera_cpu_vote"));
        }
        ((pred != 0) as u32, 1)
    };
    match mode {
        VOTE_ALL => (ballot == lanes) as u32,
        VOTE_ANY => (ballot != 0) as u32,
        _ => ballot,
    }
}

/// An atomic in a loop has read `value`: the other threads of the block run
/// before the calling thread goes on, so that a thread spinning on a flag
/// or a lock lets the one that sets it run. Threads that spin without
/// progress for the device's spin limit fail the launch (a livelock,
/// E1008). One after another (a block of one thread) it returns at once.
///
/// # Safety
/// As for [`tessera_cpu_barrier`].
pub unsafe extern "C" fn tessera_cpu_yield(ctx: *mut TesseraCpuCtx, site: *const TesseraCpuSite, value: u64) {
    // SAFETY: the caller passes the ctx the runtime gave it.
    let (ctx, block) = unsafe { context(ctx) };
    if block.synchronized {
        // SAFETY: as in `tessera_cpu_barrier`.
        unsafe { suspend(ctx.fiber, Wait::Spin { value, site }) };
    } else if block.threads > 1 {
        block.fail(ctx, unsynchronized("tessera_cpu_yield"));
    }
}

/// An access out of the bounds of its tensor: the CPU code generator
/// checks every index of a global or shared access, and on a miss reports
/// it here (the access then goes to a scratch location instead), with
/// `rank` values each in `index` and `shape`. The launch fails with E1007.
///
/// # Safety
/// `ctx` must be the context the runtime passed to the calling kernel;
/// `site` must be null or point at a site, `index` and `shape` at `rank`
/// `i64`s.
pub unsafe extern "C" fn tessera_cpu_oob(
    ctx: *mut TesseraCpuCtx,
    site: *const TesseraCpuSite,
    rank: u32,
    index: *const i64,
    shape: *const i64,
) {
    // SAFETY: the generated code passes its context and two arrays of
    // `rank` values (caller's contract).
    let (ctx, block, index, shape) = unsafe {
        let (ctx, block) = context(ctx);
        let rank = rank as usize;
        (
            ctx,
            block,
            std::slice::from_raw_parts(index, rank),
            std::slice::from_raw_parts(shape, rank),
        )
    };
    let list = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
    let error = RunError::new(
        tessera_diagnostics::Code::E1007,
        format!(
            "out-of-bounds access in a kernel: index [{}] of a tensor of shape [{}], by thread {} of block {}",
            list(index),
            list(shape),
            block_text(ctx.thread_id),
            block_text(ctx.block_id)
        ),
    )
    .with_help("guard the access with a bounds check (`if i < N:`), or launch fewer threads");
    // SAFETY: the caller's contract.
    block.fail_with(ctx, unsafe { at_site(error, site, "this access is out of bounds") });
}

/// An integer division (`//`, `%`) by zero: the CPU code generator checks
/// each divisor, reports a zero here and divides by 1 instead (an x86
/// division by zero would kill the process). The launch fails with E1009.
///
/// # Safety
/// `ctx` must be the context the runtime passed to the calling kernel, and
/// `site` null or a site.
pub unsafe extern "C" fn tessera_cpu_div0(ctx: *mut TesseraCpuCtx, site: *const TesseraCpuSite) {
    // SAFETY: the generated code passes its context.
    let (ctx, block) = unsafe { context(ctx) };
    let error = RunError::value(format!(
        "integer division by zero in a kernel, by thread {} of block {}",
        block_text(ctx.thread_id),
        block_text(ctx.block_id)
    ))
    .with_help("guard the division (`if d != 0:`)");
    // SAFETY: the caller's contract.
    block.fail_with(ctx, unsafe { at_site(error, site, "this divides by zero") });
}

/// The functions CPU kernels call, by name and address, for the JIT to define.
pub fn host_symbols() -> Vec<(&'static str, usize)> {
    type Site = *const TesseraCpuSite;
    vec![
        (
            "tessera_cpu_oob",
            tessera_cpu_oob as unsafe extern "C" fn(*mut TesseraCpuCtx, Site, u32, *const i64, *const i64) as usize,
        ),
        (
            "tessera_cpu_div0",
            tessera_cpu_div0 as unsafe extern "C" fn(*mut TesseraCpuCtx, Site) as usize,
        ),
        (
            "tessera_cpu_barrier",
            tessera_cpu_barrier as unsafe extern "C" fn(*mut TesseraCpuCtx, Site) as usize,
        ),
        (
            "tessera_cpu_shfl",
            tessera_cpu_shfl as unsafe extern "C" fn(*mut TesseraCpuCtx, Site, u32, u32, u32, u32) -> u32 as usize,
        ),
        (
            "tessera_cpu_vote",
            tessera_cpu_vote as unsafe extern "C" fn(*mut TesseraCpuCtx, Site, u32, u32) -> u32 as usize,
        ),
        (
            "tessera_cpu_yield",
            tessera_cpu_yield as unsafe extern "C" fn(*mut TesseraCpuCtx, Site, u64) as usize,
        ),
    ]
}

/// Describes a block for messages: `(x, y, z)`.
pub fn describe_block(b: [u32; 3]) -> String {
    block_text(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CUDA's documented results: `__shfl_down_sync(v, 1)` reads lane + 1
    /// except the last lane of each segment; `__shfl_xor_sync` may read
    /// earlier segments but not later ones.
    #[test]
    fn shuffle_sources_follow_ptx() {
        assert_eq!(shfl_source(5, 1, SHFL_DOWN, 32), Some(6));
        assert_eq!(shfl_source(31, 1, SHFL_DOWN, 32), None);
        assert_eq!(shfl_source(15, 1, SHFL_DOWN, 16), None);
        assert_eq!(shfl_source(16, 1, SHFL_DOWN, 16), Some(17));
        assert_eq!(shfl_source(0, 1, SHFL_UP, 32), None);
        assert_eq!(shfl_source(16, 1, SHFL_UP, 16), None);
        assert_eq!(shfl_source(17, 1, SHFL_UP, 16), Some(16));
        assert_eq!(shfl_source(3, 35, SHFL_IDX, 32), Some(3), "only the low 5 bits count");
        assert_eq!(
            shfl_source(20, 3, SHFL_IDX, 8),
            Some(19),
            "idx reads within the segment"
        );
        assert_eq!(
            shfl_source(20, 11, SHFL_IDX, 8),
            Some(19),
            "the lane index wraps modulo the width"
        );
        assert_eq!(shfl_source(4, 8, SHFL_BFLY, 8), None, "a later segment");
        assert_eq!(shfl_source(12, 8, SHFL_BFLY, 8), Some(4), "an earlier segment");
        assert_eq!(shfl_source(0, 32, SHFL_DOWN, 32), Some(0), "delta 32 is delta 0");
    }

    #[test]
    fn launch_limits_are_checked() {
        assert!(LaunchConfig::linear(1, 1024).validate().is_ok());
        assert!(LaunchConfig::linear(1, 1025).validate().is_err());
        assert!(LaunchConfig::linear(0, 1).validate().is_err());
        let tall = LaunchConfig {
            grid: [1, 70000, 1],
            block: [1, 1, 1],
            shared_bytes: 0,
        };
        assert!(tall.validate().unwrap_err().message.contains("y and z at most 65535"));
    }
}
