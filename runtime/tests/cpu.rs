//! CPU execution with GPU semantics, tested with kernels written by hand in
//! Rust against the ABI the code generator targets (`tessera_runtime::cpu`):
//! each kernel reads its parameters through `args` and synchronizes through
//! the runtime's host functions, and every result is checked against a plain
//! reference computed on the host.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

use tessera_diagnostics::Code;
use tessera_runtime::cpu::{
    tessera_cpu_barrier, tessera_cpu_shfl, tessera_cpu_vote, tessera_cpu_yield, CpuDevice, CpuKernel, LaunchConfig,
    TesseraCpuCtx, Threading, SHARED_POISON, SHFL_BFLY, SHFL_DOWN, SHFL_IDX, SHFL_UP, VOTE_ALL, VOTE_ANY, VOTE_BALLOT,
};
use tessera_runtime::device::{CopyKind, KernelArgs, ModuleImage};
use tessera_runtime::{Device, DeviceKind, MemoryKind, RunError};

/// Parameter `i` as a buffer of `T`.
unsafe fn buffer<T>(args: *mut *mut c_void, i: usize) -> *mut T {
    unsafe { *(*args.add(i) as *const *mut T) }
}

/// Parameter `i` as a scalar `T`.
unsafe fn scalar<T: Copy>(args: *mut *mut c_void, i: usize) -> T {
    unsafe { *(*args.add(i) as *const T) }
}

fn linear(ctx: &TesseraCpuCtx) -> usize {
    let [x, y, z] = ctx.thread_id.map(|v| v as usize);
    let [bx, by, _] = ctx.block_dim.map(|v| v as usize);
    x + bx * (y + by * z)
}

fn launch(kernel: CpuKernel, config: LaunchConfig, args: &mut KernelArgs) -> Result<(), RunError> {
    // SAFETY: every kernel of this file reads exactly the parameters its
    // test pushes, within the buffers' lengths.
    unsafe { CpuDevice::new().launch(kernel, &config, args.params()) }
}

fn synchronized(entry: tessera_runtime::cpu::CpuKernelFn) -> CpuKernel {
    CpuKernel {
        entry,
        threading: Threading::Synchronized,
    }
}

/// A deterministic pseudo-random f32 in [-1, 1) for test inputs.
fn input(i: usize) -> f32 {
    let h = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
    (h as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
}

/// Seed 002's `sum_reduce`: each block of 128 threads sums a strided slice
/// into shared memory, reduces it as a tree with a barrier between levels,
/// and thread 0 writes the block's total.
unsafe extern "C" fn sum_reduce(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        let x = buffer::<f32>(args, 0);
        let out = buffer::<f32>(args, 1);
        let n = scalar::<i64>(args, 2) as usize;
        let c = &*ctx;
        let smem = c.shared as *mut f32;
        let i = c.thread_id[0] as usize;
        let threads = c.block_dim[0] as usize;
        let stride = threads * c.grid_dim[0] as usize;
        let mut acc = 0.0f32;
        let mut k = c.block_id[0] as usize * threads + i;
        while k < n {
            acc += *x.add(k);
            k += stride;
        }
        *smem.add(i) = acc;
        tessera_cpu_barrier(ctx, std::ptr::null());
        let mut s = threads / 2;
        while s > 0 {
            if i < s {
                *smem.add(i) += *smem.add(i + s);
            }
            tessera_cpu_barrier(ctx, std::ptr::null());
            s /= 2;
        }
        if i == 0 {
            *out.add(c.block_id[0] as usize) = *smem;
        }
    }
}

/// The kernel's shared-memory tree: for `s` = half the (power of two)
/// block down to 1, `x[i] += x[i + s]` for every `i < s`.
fn halving_sum(x: &mut [f32]) -> f32 {
    let mut s = x.len() / 2;
    while s > 0 {
        for i in 0..s {
            x[i] += x[i + s];
        }
        s /= 2;
    }
    x[0]
}

#[test]
fn shared_memory_tree_reduction_with_barriers_in_a_loop() {
    let (n, blocks, threads) = (100_000usize, 6u32, 128u32);
    let x: Vec<f32> = (0..n).map(input).collect();
    let mut out = vec![0f32; blocks as usize];
    let mut args = KernelArgs::new();
    args.push_address(x.as_ptr() as u64);
    args.push_address(out.as_mut_ptr() as u64);
    args.push_i64(n as i64);
    let config = LaunchConfig {
        grid: [blocks, 1, 1],
        block: [threads, 1, 1],
        shared_bytes: threads as usize * 4,
    };
    launch(synchronized(sum_reduce), config, &mut args).unwrap();
    let stride = (blocks * threads) as usize;
    for (b, &got) in out.iter().enumerate() {
        // The per-thread partial sums, then the kernel's tree, bit for bit.
        let mut partial: Vec<f32> = (0..threads as usize)
            .map(|i| {
                (b * threads as usize + i..n)
                    .step_by(stride)
                    .map(|k| x[k])
                    .fold(0.0, |a, v| a + v)
            })
            .collect();
        let tree = halving_sum(&mut partial);
        assert_eq!(got.to_bits(), tree.to_bits(), "block {b}");
        let exact: f64 = (0..threads as usize)
            .flat_map(|i| (b * threads as usize + i..n).step_by(stride))
            .map(|k| x[k] as f64)
            .sum();
        assert!((got as f64 - exact).abs() < 1e-3, "block {b}: {got} vs {exact}");
    }
}

/// Butterfly sum: after five `shfl.bfly` steps every lane holds the warp's total.
unsafe extern "C" fn butterfly_sum(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        let x = buffer::<f32>(args, 0);
        let out = buffer::<f32>(args, 1);
        let c = &*ctx;
        let tid = c.block_id[0] as usize * c.block_dim[0] as usize + linear(c);
        let mut v = *x.add(tid);
        for mask in [16, 8, 4, 2, 1] {
            let other = tessera_cpu_shfl(ctx, std::ptr::null(), v.to_bits(), mask, SHFL_BFLY, 32);
            v += f32::from_bits(other);
        }
        *out.add(tid) = v;
    }
}

#[test]
fn butterfly_warp_sum_gives_every_lane_the_total() {
    let (blocks, threads) = (3u32, 256u32);
    let n = (blocks * threads) as usize;
    let x: Vec<f32> = (0..n).map(input).collect();
    let mut out = vec![0f32; n];
    let mut args = KernelArgs::new();
    args.push_address(x.as_ptr() as u64);
    args.push_address(out.as_mut_ptr() as u64);
    launch(
        synchronized(butterfly_sum),
        LaunchConfig::linear(blocks, threads),
        &mut args,
    )
    .unwrap();
    for w in 0..n / 32 {
        let lanes = &out[w * 32..w * 32 + 32];
        assert!(
            lanes.iter().all(|v| v.to_bits() == lanes[0].to_bits()),
            "warp {w}: {lanes:?}"
        );
        let exact: f64 = x[w * 32..w * 32 + 32].iter().map(|&v| v as f64).sum();
        assert!(
            (lanes[0] as f64 - exact).abs() < 1e-5,
            "warp {w}: {} vs {exact}",
            lanes[0]
        );
    }
}

/// Each thread records four shuffles of its linear id: idx, up, down and
/// bfly with the operand and width passed as parameters.
unsafe extern "C" fn shuffles(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        let out = buffer::<u32>(args, 0);
        let b = scalar::<i32>(args, 1) as u32;
        let width = scalar::<i32>(args, 2) as u32;
        let c = &*ctx;
        let tid = linear(c);
        let value = 1000 + tid as u32;
        for (m, mode) in [SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_BFLY].into_iter().enumerate() {
            *out.add(tid * 4 + m) = tessera_cpu_shfl(ctx, std::ptr::null(), value, b, mode, width);
        }
    }
}

/// CUDA's documented semantics of `__shfl_*_sync(full mask, v, b, width)`,
/// written independently of the runtime's PTX model.
fn cuda_shuffle(lane: u32, b: u32, mode: u32, width: u32) -> u32 {
    let base = lane / width * width;
    let own = lane;
    match mode {
        SHFL_IDX => base + (b % width),
        SHFL_UP => {
            if lane % width >= b {
                lane - b
            } else {
                own
            }
        }
        SHFL_DOWN => {
            if lane % width + b < width {
                lane + b
            } else {
                own
            }
        }
        _ => {
            let src = lane ^ b;
            if src < base + width {
                src
            } else {
                own
            }
        }
    }
}

#[test]
fn shuffles_follow_cuda_semantics_for_every_width() {
    let threads = 96u32;
    for width in [32u32, 16, 8, 4, 2, 1] {
        for b in [0u32, 1, 3, 5, 16, 31] {
            let mut out = vec![0u32; threads as usize * 4];
            let mut args = KernelArgs::new();
            args.push_address(out.as_mut_ptr() as u64);
            args.push_i32(b as i32);
            args.push_i32(width as i32);
            launch(synchronized(shuffles), LaunchConfig::linear(1, threads), &mut args).unwrap();
            for tid in 0..threads {
                let lane = tid % 32;
                for (m, mode) in [SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_BFLY].into_iter().enumerate() {
                    let src = cuda_shuffle(lane, b, mode, width);
                    let expected = 1000 + tid - lane + src;
                    assert_eq!(
                        out[tid as usize * 4 + m],
                        expected,
                        "thread {tid}, mode {mode}, operand {b}, width {width}"
                    );
                }
            }
        }
    }
}

/// Votes on `tid % 3 == 0`, `tid < limit`, and a ballot.
unsafe extern "C" fn votes(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        let out = buffer::<u32>(args, 0);
        let limit = scalar::<i32>(args, 1) as usize;
        let c = &*ctx;
        let tid = linear(c);
        *out.add(tid * 4) = tessera_cpu_vote(ctx, std::ptr::null(), tid.is_multiple_of(3) as u32, VOTE_BALLOT);
        *out.add(tid * 4 + 1) = tessera_cpu_vote(ctx, std::ptr::null(), (tid < limit) as u32, VOTE_ALL);
        *out.add(tid * 4 + 2) = tessera_cpu_vote(ctx, std::ptr::null(), (tid >= limit) as u32, VOTE_ANY);
        *out.add(tid * 4 + 3) = tessera_cpu_vote(ctx, std::ptr::null(), 1, VOTE_BALLOT);
    }
}

#[test]
fn ballot_any_and_all_over_full_and_partial_warps() {
    // 80 threads: two full warps and a warp of 16 lanes. The block is 2-D
    // (40 x 2), so warps span rows: x is the fastest index.
    let config = LaunchConfig {
        grid: [1, 1, 1],
        block: [40, 2, 1],
        shared_bytes: 0,
    };
    for limit in [0usize, 40, 64, 80] {
        let mut out = vec![0u32; 80 * 4];
        let mut args = KernelArgs::new();
        args.push_address(out.as_mut_ptr() as u64);
        args.push_i32(limit as i32);
        launch(synchronized(votes), config, &mut args).unwrap();
        for tid in 0..80usize {
            let w = tid / 32;
            let lanes: Vec<usize> = (w * 32..(w * 32 + 32).min(80)).collect();
            let ballot = lanes
                .iter()
                .filter(|&&t| t % 3 == 0)
                .fold(0u32, |a, &t| a | 1 << (t % 32));
            let all = lanes.iter().all(|&t| t < limit) as u32;
            let any = lanes.iter().any(|&t| t >= limit) as u32;
            let present = lanes.iter().fold(0u32, |a, &t| a | 1 << (t % 32));
            assert_eq!(
                &out[tid * 4..tid * 4 + 4],
                &[ballot, all, any, present],
                "thread {tid}, limit {limit}"
            );
        }
    }
}

/// A histogram with atomic adds from every thread of many blocks.
unsafe extern "C" fn histogram(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        let x = buffer::<f32>(args, 0);
        let bins = buffer::<u32>(args, 1);
        let n = scalar::<i64>(args, 2) as usize;
        let nbins = scalar::<i32>(args, 3) as usize;
        let c = &*ctx;
        let i = c.block_id[0] as usize * c.block_dim[0] as usize + c.thread_id[0] as usize;
        if i < n {
            let v = *x.add(i);
            let bin = (((v + 1.0) / 2.0 * nbins as f32) as usize).min(nbins - 1);
            (*(bins.add(bin) as *const AtomicU32)).fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[test]
fn atomic_histogram_across_blocks_and_cores() {
    let (n, nbins) = (50_000usize, 16usize);
    let x: Vec<f32> = (0..n).map(input).collect();
    let bins: Vec<AtomicU32> = (0..nbins).map(|_| AtomicU32::new(0)).collect();
    for threading in [Threading::Independent, Threading::Synchronized] {
        bins.iter().for_each(|b| b.store(0, Ordering::Relaxed));
        let mut args = KernelArgs::new();
        args.push_address(x.as_ptr() as u64);
        args.push_address(bins.as_ptr() as u64);
        args.push_i64(n as i64);
        args.push_i32(nbins as i32);
        let kernel = CpuKernel {
            entry: histogram,
            threading,
        };
        let blocks = n.div_ceil(256) as u32;
        // SAFETY: as in `launch`; `bins` is only written through atomics.
        unsafe { CpuDevice::with_workers(4).launch(kernel, &LaunchConfig::linear(blocks, 256), args.params()) }
            .unwrap();
        let mut reference = vec![0u32; nbins];
        for &v in &x {
            reference[(((v + 1.0) / 2.0 * nbins as f32) as usize).min(nbins - 1)] += 1;
        }
        let got: Vec<u32> = bins.iter().map(|b| b.load(Ordering::Relaxed)).collect();
        assert_eq!(got, reference, "{threading:?}");
    }
}

/// Writes every context field of every thread.
unsafe extern "C" fn record_ids(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        let out = buffer::<u32>(args, 0);
        let c = &*ctx;
        let block = c.block_id[0] + c.grid_dim[0] * (c.block_id[1] + c.grid_dim[1] * c.block_id[2]);
        let threads = c.block_dim[0] * c.block_dim[1] * c.block_dim[2];
        let slot = (block * threads + linear(c) as u32) as usize * 12;
        for (k, v) in c
            .thread_id
            .iter()
            .chain(&c.block_id)
            .chain(&c.block_dim)
            .chain(&c.grid_dim)
            .enumerate()
        {
            *out.add(slot + k) = *v;
        }
    }
}

#[test]
fn every_thread_of_a_3d_grid_runs_once_with_its_ids() {
    let config = LaunchConfig {
        grid: [3, 2, 2],
        block: [4, 3, 2],
        shared_bytes: 0,
    };
    for threading in [Threading::Independent, Threading::Synchronized] {
        let mut out = vec![u32::MAX; 12 * 24 * 12];
        let mut args = KernelArgs::new();
        args.push_address(out.as_mut_ptr() as u64);
        launch(
            CpuKernel {
                entry: record_ids,
                threading,
            },
            config,
            &mut args,
        )
        .unwrap();
        let mut slot = 0;
        for bz in 0..2 {
            for by in 0..2 {
                for bx in 0..3 {
                    for tz in 0..2 {
                        for ty in 0..3 {
                            for tx in 0..4 {
                                let expected = [tx, ty, tz, bx, by, bz, 4, 3, 2, 3, 2, 2];
                                assert_eq!(&out[slot * 12..slot * 12 + 12], &expected, "{threading:?}");
                                slot += 1;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Reads shared memory before writing it, and checks its alignment.
unsafe extern "C" fn read_shared(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        let out = buffer::<u32>(args, 0);
        let c = &*ctx;
        let tid = linear(c);
        let smem = c.shared as *mut u32;
        *out.add(c.block_id[0] as usize * 64 + tid) = *smem.add(tid) ^ ((c.shared as usize % 128) as u32);
        tessera_cpu_barrier(ctx, std::ptr::null());
        *smem.add(tid) = 0;
    }
}

#[test]
fn shared_memory_is_aligned_and_poisoned_for_every_block() {
    let mut out = vec![0u32; 64 * 8];
    let mut args = KernelArgs::new();
    args.push_address(out.as_mut_ptr() as u64);
    let config = LaunchConfig {
        grid: [8, 1, 1],
        block: [64, 1, 1],
        shared_bytes: 256,
    };
    launch(synchronized(read_shared), config, &mut args).unwrap();
    let poison = u32::from_ne_bytes([SHARED_POISON; 4]);
    assert!(
        out.iter().all(|&v| v == poison),
        "a block saw zeros or an unaligned buffer"
    );
}

/// Threads below `limit` wait at a barrier that the others never reach.
unsafe extern "C" fn divergent_barrier(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        let limit = scalar::<i32>(args, 0) as usize;
        if linear(&*ctx) < limit {
            tessera_cpu_barrier(ctx, std::ptr::null());
        }
    }
}

/// Lanes 0–15 shuffle while the rest of the block waits at a barrier.
unsafe extern "C" fn shuffle_against_barrier(_args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        if linear(&*ctx) < 16 {
            tessera_cpu_shfl(ctx, std::ptr::null(), 1, 1, SHFL_DOWN, 32);
        } else {
            tessera_cpu_barrier(ctx, std::ptr::null());
        }
    }
}

#[test]
fn divergence_and_deadlocks_are_errors_not_hangs() {
    let mut args = KernelArgs::new();
    args.push_i32(16);
    let e = launch(synchronized(divergent_barrier), LaunchConfig::linear(4, 64), &mut args).unwrap_err();
    assert_eq!(e.code, Code::E1008);
    assert!(e.message.contains("barrier divergence in block"), "{}", e.message);

    let e = launch(
        synchronized(shuffle_against_barrier),
        LaunchConfig::linear(2, 64),
        &mut KernelArgs::new(),
    )
    .unwrap_err();
    assert!(e.message.contains("deadlock in block (0, 0, 0)"), "{}", e.message);
    assert!(e.message.contains("16 wait at a warp shuffle or vote"), "{}", e.message);

    // The same kernel where every thread reaches the barrier is fine.
    let mut args = KernelArgs::new();
    args.push_i32(64);
    launch(synchronized(divergent_barrier), LaunchConfig::linear(4, 64), &mut args).unwrap();

    // A barrier in a kernel launched without synchronization is reported.
    let mut args = KernelArgs::new();
    args.push_i32(64);
    let independent = CpuKernel {
        entry: divergent_barrier,
        threading: Threading::Independent,
    };
    let e = launch(independent, LaunchConfig::linear(1, 64), &mut args).unwrap_err();
    assert!(e.message.contains("`tessera_cpu_barrier`"), "{}", e.message);
}

/// Thread 0 spins on a flag the last thread sets after a barrier that
/// thread 0 never reaches (a livelock); with `set_first`, the last thread
/// sets it first and every thread meets at the barrier.
unsafe extern "C" fn spin_on_flag(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        let flag = &*buffer::<u32>(args, 0).cast::<AtomicU32>();
        let set_first = scalar::<i32>(args, 1) != 0;
        let c = &*ctx;
        let t = linear(c);
        let last = c.block_dim[0] as usize - 1;
        if t == 0 {
            loop {
                let seen = flag.load(Ordering::SeqCst);
                if seen != 0 {
                    break;
                }
                tessera_cpu_yield(ctx, std::ptr::null(), u64::from(seen));
            }
        }
        if t == last && set_first {
            flag.store(1, Ordering::SeqCst);
        }
        tessera_cpu_barrier(ctx, std::ptr::null());
        if t == last {
            flag.store(1, Ordering::SeqCst);
        }
    }
}

#[test]
fn a_spinning_thread_lets_the_others_run_and_a_livelock_is_an_error() {
    let run = |set_first: i32, flag: &AtomicU32| {
        let mut args = KernelArgs::new();
        args.push_address(flag as *const AtomicU32 as u64);
        args.push_i32(set_first);
        let device = CpuDevice::new().with_spin_limit(std::time::Duration::from_millis(200));
        // SAFETY: `spin_on_flag` reads one u32 and one i32.
        unsafe { device.launch(synchronized(spin_on_flag), &LaunchConfig::linear(1, 64), args.params()) }
    };
    run(1, &AtomicU32::new(0)).unwrap();
    let e = run(0, &AtomicU32::new(0)).unwrap_err();
    assert_eq!(e.code, Code::E1008);
    assert!(
        e.message
            .contains("livelock in block (0, 0, 0): 1 of its 64 threads spin at an atomic"),
        "{}",
        e.message
    );
    assert!(e.message.contains("while 63 wait at a barrier"), "{}", e.message);
}

/// Blocks 10 and 11 (of a row of 12) deadlock as `shuffle_against_barrier`
/// does; the others finish.
unsafe extern "C" fn some_blocks_deadlock(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        let x = (*ctx).block_id[0];
        if x == 10 || x == 11 {
            shuffle_against_barrier(args, ctx);
        } else {
            tessera_cpu_barrier(ctx, std::ptr::null());
        }
    }
}

/// Blocks run concurrently, yet a launch reports the error of its
/// lowest-numbered failing block, every time.
#[test]
fn the_error_reported_is_the_same_on_every_run() {
    for _ in 0..20 {
        let e = launch(
            synchronized(some_blocks_deadlock),
            LaunchConfig::linear(12, 64),
            &mut KernelArgs::new(),
        )
        .unwrap_err();
        assert!(e.message.contains("deadlock in block (10, 0, 0)"), "{}", e.message);
    }
}

/// Barriers in a loop in full 1024-thread blocks: each step shifts a value
/// one slot along shared memory.
unsafe extern "C" fn rotate(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        let out = buffer::<u32>(args, 0);
        let steps = scalar::<i32>(args, 1);
        let c = &*ctx;
        let n = c.block_dim[0] as usize;
        let t = c.thread_id[0] as usize;
        let smem = c.shared as *mut u32;
        *smem.add(t) = t as u32;
        tessera_cpu_barrier(ctx, std::ptr::null());
        for _ in 0..steps {
            let v = *smem.add((t + 1) % n);
            tessera_cpu_barrier(ctx, std::ptr::null());
            *smem.add(t) = v;
            tessera_cpu_barrier(ctx, std::ptr::null());
        }
        *out.add(c.block_id[0] as usize * n + t) = *smem.add(t);
    }
}

#[test]
fn barriers_in_a_loop_in_full_blocks() {
    let (blocks, threads, steps) = (3u32, 1024u32, 20);
    let mut out = vec![0u32; (blocks * threads) as usize];
    let mut args = KernelArgs::new();
    args.push_address(out.as_mut_ptr() as u64);
    args.push_i32(steps);
    let config = LaunchConfig {
        grid: [blocks, 1, 1],
        block: [threads, 1, 1],
        shared_bytes: threads as usize * 4,
    };
    launch(synchronized(rotate), config, &mut args).unwrap();
    for (i, &v) in out.iter().enumerate() {
        let t = i % threads as usize;
        assert_eq!(v as usize, (t + steps as usize) % threads as usize, "slot {i}");
    }
}

/// `out[i] = a * x[i] + y[i]`, one thread per element.
unsafe extern "C" fn saxpy(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        let a = scalar::<f32>(args, 0);
        let x = buffer::<f32>(args, 1);
        let y = buffer::<f32>(args, 2);
        let out = buffer::<f32>(args, 3);
        let n = scalar::<i64>(args, 4) as usize;
        let c = &*ctx;
        let i = c.block_id[0] as usize * c.block_dim[0] as usize + c.thread_id[0] as usize;
        if i < n {
            *out.add(i) = a * *x.add(i) + *y.add(i);
        }
    }
}

#[test]
fn the_device_api_on_the_cpu() {
    let device = Device::open(DeviceKind::Cpu).unwrap();
    assert!(device.is_host());
    let n = 1000usize;
    let bytes = |v: &[f32]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
    let x: Vec<f32> = (0..n).map(input).collect();
    let y: Vec<f32> = (0..n).map(|i| input(i + n)).collect();
    let mut bx = device.alloc(n * 4).unwrap();
    let mut by = device.alloc(n * 4).unwrap();
    let mut bout = device.alloc(n * 4).unwrap();
    device.upload(&mut bx, &bytes(&x)).unwrap();
    device.upload(&mut by, &bytes(&y)).unwrap();
    device.memset(&mut bout, 0xFF).unwrap();
    let module = device
        .load_module(ModuleImage::Cpu(vec![(
            "saxpy".into(),
            CpuKernel {
                entry: saxpy,
                threading: Threading::Independent,
            },
        )]))
        .unwrap();
    assert!(module.kernel("saxpi").is_err());
    let kernel = module.kernel("saxpy").unwrap();
    let mut args = KernelArgs::new();
    args.push_f32(2.5);
    args.push_buffer(&mut bx);
    args.push_buffer(&mut by);
    args.push_buffer(&mut bout);
    args.push_i64(n as i64);
    let mut start = device.event().unwrap();
    let mut end = device.event().unwrap();
    device.record(&mut start, None).unwrap();
    // SAFETY: the arguments match `saxpy`'s parameters and the buffers hold n floats.
    unsafe {
        device.launch(
            &kernel,
            &LaunchConfig::linear(n.div_ceil(128) as u32, 128),
            &mut args,
            None,
        )
    }
    .unwrap();
    device.record(&mut end, None).unwrap();
    device.synchronize().unwrap();
    assert!(device.elapsed_ms(&start, &end).unwrap() >= 0.0);
    let mut result = vec![0u8; n * 4];
    device.download(&bout, &mut result).unwrap();
    for i in 0..n {
        let got = f32::from_le_bytes(result[i * 4..i * 4 + 4].try_into().unwrap());
        assert_eq!(got, 2.5 * x[i] + y[i], "element {i}");
    }
    assert!(
        device.upload(&mut bx, &[0; 3]).is_err(),
        "a length mismatch is an error"
    );
    let over = LaunchConfig::linear(1, 2048);
    // SAFETY: rejected before the kernel runs.
    let e = unsafe { device.launch(&kernel, &over, &mut args, None) }.unwrap_err();
    assert_eq!(e.code, Code::E1008);
}

#[test]
fn copies_are_recorded_only_while_asked() {
    let device = Device::open(DeviceKind::Cpu).unwrap();
    let (mut a, mut b) = (device.alloc(64).unwrap(), device.alloc(64).unwrap());
    device.upload(&mut a, &[1; 64]).unwrap();
    device.record_copies();
    device.upload(&mut a, &[2; 64]).unwrap();
    device.copy(&mut b, &a).unwrap();
    let mut back = [0u8; 64];
    device.download(&b, &mut back).unwrap();
    assert_eq!(back, [2; 64]);
    let copies = device.take_copies();
    let seen: Vec<(CopyKind, usize)> = copies.iter().map(|c| (c.kind, c.bytes)).collect();
    assert_eq!(seen, [(CopyKind::HostToDevice, 64), (CopyKind::DeviceToHost, 64)]);
    assert!(copies[0].start <= copies[1].start);
    device.upload(&mut a, &[3; 64]).unwrap();
    assert!(device.take_copies().is_empty());
    let mut short = device.alloc(8).unwrap();
    assert_eq!(device.copy(&mut short, &a).unwrap_err().code, Code::E1008);
}

/// For each memory kind the device has: a buffer is zeroed, takes an
/// upload, a fill and a copy from a buffer of another kind, and gives them
/// back; [`Device::with_memory`] makes it the kind `alloc` gives.
fn every_memory_kind_holds_data(device: Device) {
    let mut device = device;
    let n = 4099;
    let data: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
    for kind in MemoryKind::ALL {
        device = match device.with_memory(kind) {
            Ok(d) => d,
            Err(e) => {
                assert_eq!(e.code, Code::E1001, "{e}");
                assert_eq!(e.help.as_deref(), Some("allocate device memory with `--memory device`"));
                return;
            }
        };
        assert_eq!(device.memory(), kind);
        let mut a = device.alloc(n).unwrap();
        assert_eq!((a.kind(), a.len()), (kind, n));
        let mut back = vec![1u8; n];
        device.download(&a, &mut back).unwrap();
        assert!(back.iter().all(|&b| b == 0), "{kind} memory is zeroed");
        device.upload(&mut a, &data).unwrap();
        let mut b = device.alloc_in(n, MemoryKind::Device).unwrap();
        device.copy(&mut b, &a).unwrap();
        device.synchronize().unwrap();
        device.memset(&mut a, 0x5A).unwrap();
        device.download(&b, &mut back).unwrap();
        assert_eq!(back, data, "a copy from {kind} memory");
        device.download(&a, &mut back).unwrap();
        assert!(back.iter().all(|&x| x == 0x5A), "a fill of {kind} memory");
        assert_eq!(format!("{a:?}"), format!("Buffer({n} bytes of {})", kind.describe()));
    }
}

#[test]
fn the_cpu_device_has_every_memory_kind() {
    every_memory_kind_holds_data(Device::open(DeviceKind::Cpu).unwrap());
    assert_eq!(MemoryKind::from_name("managed"), Some(MemoryKind::Managed));
    assert_eq!(MemoryKind::from_name("unified"), None);
    assert_eq!(Device::open(DeviceKind::Cpu).unwrap().memory(), MemoryKind::Device);
}

#[test]
fn gpus_without_drivers_are_clear_errors() {
    for kind in [DeviceKind::Cuda, DeviceKind::Hip] {
        match Device::open(kind) {
            Err(e) => {
                assert_eq!(e.code, Code::E1001, "{e}");
                assert!(
                    e.message
                        .starts_with(&format!("cannot use {}", kind.name().to_uppercase())),
                    "{e}"
                );
                assert_eq!(e.help.as_deref(), Some("run on the CPU with `--device cpu`"));
            }
            // On a machine with the device, the same calls must work.
            Ok(device) => every_memory_kind_holds_data(device),
        }
    }
    assert_eq!(DeviceKind::from_name("hip"), Some(DeviceKind::Hip));
    assert_eq!(DeviceKind::from_name("tpu"), None);
}

#[test]
fn host_symbols_name_the_six_functions() {
    let symbols = tessera_runtime::cpu::host_symbols();
    let names: Vec<&str> = symbols.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "tessera_cpu_oob",
            "tessera_cpu_div0",
            "tessera_cpu_barrier",
            "tessera_cpu_shfl",
            "tessera_cpu_vote",
            "tessera_cpu_yield"
        ]
    );
    assert_eq!(
        symbols[2].1,
        tessera_cpu_barrier as unsafe extern "C" fn(*mut TesseraCpuCtx, *const tessera_runtime::cpu::TesseraCpuSite)
            as usize
    );
    assert!(symbols.iter().all(|(_, a)| *a != 0));
}
