//! Profiling (`tessera profile`, `spec/runtime.md`, "Profiling"): a
//! [`Profiler`] is the interpreter's executor over a [`Loaded`] module that
//! times every kernel launch — those of operator functions included — and,
//! through the device, every copy between host and device; [`Profile`] is
//! what it recorded. Each launch carries the FLOPs and bytes the kernel's
//! cost model (`estimate-cost`) gives for its dims and grid.
//!
//! - [`peaks`]: the device's bandwidth and compute peaks, measured or
//!   looked up in this run;
//! - [`report`]: per-kernel summaries, the roofline CSV and the text table;
//! - [`trace`]: the Chrome trace event JSON that Perfetto opens;
//! - [`svg`]: the roofline plot.

pub mod peaks;
pub mod report;
pub mod svg;
pub mod trace;

use std::time::Instant;

use tessera_codegen::KernelInfo;
use tessera_runtime::cpu::LaunchConfig;
use tessera_runtime::device::{Buffer, CopyKind, MemoryKind};
use tessera_runtime::host::{Call, Executor, Launch, Value};
use tessera_runtime::{Device, RunError};

use crate::{expr, Loaded};

/// One kernel launch, as the profiler saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchRecord {
    pub kernel: String,
    /// The operator function whose call made the launch; None for a launch
    /// from host code.
    pub caller: Option<String>,
    /// The run (1, 2, …) it belongs to.
    pub run: usize,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: usize,
    /// Microseconds from the start of the profile to the launch.
    pub start_us: f64,
    /// The kernel's time on the device, in microseconds.
    pub duration_us: f64,
    /// The cost model's FLOPs for this launch; None when the kernel's are
    /// unknown (a loop whose trip count it cannot read).
    pub flops: Option<u64>,
    /// The cost model's bytes of global memory for this launch.
    pub bytes: Option<u64>,
}

/// One copy between host and device.
#[derive(Clone, Debug, PartialEq)]
pub struct CopySpan {
    pub kind: CopyKind,
    pub bytes: usize,
    pub start_us: f64,
    pub duration_us: f64,
}

/// One run of the entry function: its start and length in microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunSpan {
    pub start_us: f64,
    pub duration_us: f64,
}

/// Everything a profiler recorded, in time order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    pub launches: Vec<LaunchRecord>,
    pub copies: Vec<CopySpan>,
    pub runs: Vec<RunSpan>,
}

/// The bytes a GPU sets before each timed launch: twice the largest
/// last-level cache of a current GPU (an MI300X's 256 MiB Infinity Cache;
/// an H200's L2 holds 60 MB), so that every kernel starts with cold
/// caches, as the anchors of `bench/gpu` (and Triton's `do_bench`) are
/// timed.
pub const FLUSH_BYTES: usize = 512 << 20;

/// The interpreter's executor while profiling: launches and calls go to
/// the loaded module, timed. Copies are recorded by the device from
/// [`Profiler::new`] to [`Profiler::finish`].
pub struct Profiler<'l> {
    loaded: &'l Loaded,
    origin: Instant,
    run_started: Option<Instant>,
    profile: Profile,
    /// On a GPU, the [`FLUSH_BYTES`] set before each timed launch.
    flush: Option<Buffer>,
}

impl<'l> Profiler<'l> {
    /// Starts profiling the launches of `loaded` and the copies of
    /// `device`; time 0 is now. On a GPU it takes [`FLUSH_BYTES`] of
    /// device memory to evict the caches with before each launch.
    pub fn new(loaded: &'l Loaded, device: &Device) -> Result<Profiler<'l>, RunError> {
        let flush = if device.is_host() {
            None
        } else {
            Some(device.alloc_in(FLUSH_BYTES, MemoryKind::Device)?)
        };
        device.record_copies();
        Ok(Profiler {
            loaded,
            origin: Instant::now(),
            run_started: None,
            profile: Profile::default(),
            flush,
        })
    }

    /// Marks the start of a run of the entry function.
    pub fn begin_run(&mut self) {
        self.run_started = Some(Instant::now());
    }

    /// Marks the end of the run begun last.
    pub fn end_run(&mut self) {
        if let Some(start) = self.run_started.take() {
            self.profile.runs.push(RunSpan {
                start_us: self.micros(start),
                duration_us: start.elapsed().as_secs_f64() * 1e6,
            });
        }
    }

    /// Stops recording copies and gives what was recorded.
    pub fn finish(mut self, device: &Device) -> Profile {
        for c in device.take_copies() {
            let start_us = self.micros(c.start);
            self.profile.copies.push(CopySpan {
                kind: c.kind,
                bytes: c.bytes,
                start_us,
                duration_us: c.duration.as_secs_f64() * 1e6,
            });
        }
        self.profile
    }

    fn micros(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.origin).as_secs_f64() * 1e6
    }

    fn timed(
        &mut self,
        device: &Device,
        launch: &Launch<'_>,
        caller: Option<&str>,
        mesh: &[u32],
    ) -> Result<String, RunError> {
        let loaded = self.loaded.of_file(launch.file);
        let info = loaded.kernel_info(launch.kernel)?;
        let timed = loaded.launch_timed(device, launch, mesh, self.flush.as_mut())?;
        let (flops, bytes) = launch_cost(info, &timed.config, launch.dims)?;
        self.profile.launches.push(LaunchRecord {
            kernel: loaded.qualified(launch.kernel),
            caller: caller.map(|c| loaded.qualified(c)),
            run: self.profile.runs.len() + 1,
            grid: timed.config.grid,
            block: timed.config.block,
            shared_bytes: timed.config.shared_bytes,
            start_us: self.micros(timed.started),
            duration_us: timed.device_ms * 1e3,
            flops,
            bytes,
        });
        Ok(timed.printed)
    }
}

impl Executor for Profiler<'_> {
    fn launch(&mut self, device: &Device, launch: &Launch<'_>) -> Result<String, RunError> {
        self.timed(device, launch, None, &[])
    }

    fn call(&mut self, device: &Device, call: &Call<'_>) -> Result<Value, RunError> {
        let loaded = self.loaded.of_file(call.file);
        loaded.call_with(device, call, &mut |kernel, config, args, mesh| {
            let launch = Launch {
                file: call.file,
                kernel,
                config,
                args,
                dims: call.dims,
            };
            self.timed(device, &launch, Some(call.function), mesh).map(drop)
        })
    }
}

/// The cost model's FLOPs and bytes for a launch of `info` with `config`
/// over `dims`: `blocks × (Σ per_block + threads × Σ per_thread) +
/// Σ per_launch` FLOPs;
/// None where the manifest has no cost for it.
pub fn launch_cost(
    info: &KernelInfo,
    config: &LaunchConfig,
    dims: &[(String, i64)],
) -> Result<(Option<u64>, Option<u64>), RunError> {
    let Some(cost) = &info.cost else {
        return Ok((None, None));
    };
    let bytes = u64::try_from(expr::dim(&cost.bytes, dims)?).unwrap_or(0);
    let flops = match &cost.flops {
        None => None,
        Some(f) => {
            let per_block = sum_of_products(&f.per_block, dims)?;
            let per_thread = sum_of_products(&f.per_thread, dims)?;
            let per_launch = sum_of_products(&f.per_launch, dims)?;
            Some(
                config
                    .blocks()
                    .saturating_mul(per_block.saturating_add(config.threads_per_block().saturating_mul(per_thread)))
                    .saturating_add(per_launch),
            )
        }
    };
    Ok((flops, Some(bytes)))
}

/// Σ over the terms of the product of their factors, each a grid entry
/// (`128`, `2*D*H`, `cdiv(K, 128)`); a negative factor (a loop that does
/// not run) counts as 0.
fn sum_of_products(terms: &[Vec<String>], dims: &[(String, i64)]) -> Result<u64, RunError> {
    let mut sum = 0u64;
    for term in terms {
        let mut product = 1u64;
        for factor in term {
            let value = u64::try_from(expr::factor(factor, dims)?).unwrap_or(0);
            product = product.saturating_mul(value);
        }
        sum = sum.saturating_add(product);
    }
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use tessera_codegen::{CostInfo, FlopsInfo, KernelInfo};
    use tessera_runtime::cpu::LaunchConfig;

    use super::launch_cost;

    fn kernel(cost: Option<CostInfo>) -> KernelInfo {
        KernelInfo {
            name: "k".into(),
            block: vec![128],
            block_required: true,
            cost,
            ..KernelInfo::default()
        }
    }

    fn terms(t: &[&[&str]]) -> Vec<Vec<String>> {
        t.iter().map(|f| f.iter().map(|s| s.to_string()).collect()).collect()
    }

    #[test]
    fn a_matmul_tile_loop_is_two_m_n_k() {
        // 128x128 output tiles, K in steps of 128 (two 64-deep products).
        let info = kernel(Some(CostInfo {
            bytes: "2*K*M+2*K*N+8*M*N".into(),
            flops: Some(FlopsInfo {
                per_block: terms(&[&["4194304", "cdiv(K, 128)"]]),
                per_thread: vec![],
                per_launch: vec![],
            }),
        }));
        let (m, n, k) = (256i64, 384i64, 512i64);
        let dims = vec![("M".into(), m), ("N".into(), n), ("K".into(), k)];
        let config = LaunchConfig {
            grid: [2, 3, 1],
            block: [64, 1, 1],
            shared_bytes: 0,
        };
        let (flops, bytes) = launch_cost(&info, &config, &dims).unwrap();
        assert_eq!(flops, Some((2 * m * n * k) as u64));
        assert_eq!(bytes, Some((2 * k * m + 2 * k * n + 8 * m * n) as u64));
    }

    #[test]
    fn a_persistent_walk_counts_its_tiles_whatever_the_grid() {
        // 128x256 tiles, K in steps of 64, walked by however many blocks.
        let info = kernel(Some(CostInfo {
            bytes: "2*K*M+2*K*N+8*M*N".into(),
            flops: Some(FlopsInfo {
                per_block: vec![],
                per_thread: vec![],
                per_launch: terms(&[&["4194304", "cdiv(K, 64)", "cdiv(M, 128)", "cdiv(N, 256)"]]),
            }),
        }));
        let (m, n, k) = (1024i64, 2048i64, 512i64);
        let dims = vec![("M".into(), m), ("N".into(), n), ("K".into(), k)];
        for blocks in [1, 7, 132] {
            let config = LaunchConfig::linear(blocks, 384);
            let (flops, _) = launch_cost(&info, &config, &dims).unwrap();
            assert_eq!(flops, Some((2 * m * n * k) as u64), "{blocks} blocks");
        }
    }

    #[test]
    fn per_thread_flops_follow_the_launch_and_loops_that_do_not_run_count_nothing() {
        let info = kernel(Some(CostInfo {
            bytes: "16*N".into(),
            flops: Some(FlopsInfo {
                per_block: terms(&[&["10", "cdiv(N-64, 32)"]]),
                per_thread: terms(&[&["2"]]),
                per_launch: vec![],
            }),
        }));
        let config = LaunchConfig::linear(4, 256);
        let dims = vec![("N".to_string(), 32)];
        assert_eq!(
            launch_cost(&info, &config, &dims).unwrap(),
            (Some(4 * 256 * 2), Some(16 * 32))
        );
        let unknown = kernel(Some(CostInfo {
            bytes: "4".into(),
            flops: None,
        }));
        assert_eq!(launch_cost(&unknown, &config, &dims).unwrap(), (None, Some(4)));
        assert_eq!(launch_cost(&kernel(None), &config, &dims).unwrap(), (None, None));
        let unbound = kernel(Some(CostInfo {
            bytes: "4*M".into(),
            flops: None,
        }));
        assert!(launch_cost(&unbound, &config, &dims).is_err());
    }
}
