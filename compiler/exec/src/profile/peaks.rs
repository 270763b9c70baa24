//! The peaks a roofline compares against, found in the same run on the
//! same device, so that "fraction of the roof" is against an anchor of
//! this machine:
//!
//! - bandwidth: a copy of [`PROBE_BYTES`] between two buffers of the
//!   device, timed with device events (the host clock on the CPU), best of
//!   3 after one untimed copy; a copy reads and writes, so it moves twice
//!   its size;
//! - compute: on a GPU, the dense bf16 tensor-core peak of its model from
//!   [`GPU_PEAKS`] (an assumed [`DEFAULT_GPU_TFLOPS`] for a model not
//!   there); on the CPU, the rate of independent f32 multiply-adds a Rust
//!   loop reaches on every worker thread at once, best of 3 windows of
//!   [`CPU_WINDOW`]. That loop is compiled for the baseline instruction
//!   set, so JIT-compiled kernels using wider vectors can exceed it.

use std::hint::black_box;
use std::time::{Duration, Instant};

use tessera_runtime::{Device, MemoryKind, RunError};

/// Bytes the bandwidth probe copies.
pub const PROBE_BYTES: usize = 256 << 20;

/// Dense bf16 tensor-core peaks of GPU models in TFLOP/s, by a part of the
/// device's name; the first that matches counts.
pub const GPU_PEAKS: &[(&str, f64)] = &[
    ("H100 PCIe", 756.0),
    ("H100", 989.0),
    ("H200", 989.0),
    ("A100", 312.0),
    ("MI300X", 1307.0),
    ("MI250X", 383.0),
];

/// The compute peak assumed for a GPU model not in [`GPU_PEAKS`], in
/// TFLOP/s.
pub const DEFAULT_GPU_TFLOPS: f64 = 100.0;

/// How long each window of the CPU's multiply-add loop runs.
pub const CPU_WINDOW: Duration = Duration::from_millis(20);

/// The peaks of a device, with how each was found.
#[derive(Clone, Debug, PartialEq)]
pub struct Peaks {
    /// FLOP/s.
    pub flops: f64,
    /// Bytes/s of global memory.
    pub bandwidth: f64,
    pub flops_source: String,
    pub bandwidth_source: String,
}

/// Measures (or looks up) the peaks of `device`.
pub fn measure(device: &Device) -> Result<Peaks, RunError> {
    let bandwidth = copy_bandwidth(device)?;
    let (flops, flops_source) = match device {
        Device::Cpu(cpu) => {
            let workers = cpu.workers();
            (
                multiply_add_rate(workers),
                format!(
                    "measured: independent f32 multiply-adds on {workers} worker threads, best of 3 windows of {} ms",
                    CPU_WINDOW.as_millis()
                ),
            )
        }
        _ => gpu_peak(&device.name()),
    };
    Ok(Peaks {
        flops,
        bandwidth,
        flops_source,
        bandwidth_source: format!(
            "measured: a {} MiB device-to-device copy (read and write), best of 3",
            PROBE_BYTES >> 20
        ),
    })
}

/// The table's peak for a GPU named `name` in FLOP/s, and where it came
/// from.
pub fn gpu_peak(name: &str) -> (f64, String) {
    match GPU_PEAKS.iter().find(|(model, _)| name.contains(model)) {
        Some((model, tflops)) => (
            tflops * 1e12,
            format!("table: {model}, dense bf16 tensor cores, {tflops} TFLOP/s"),
        ),
        None => (
            DEFAULT_GPU_TFLOPS * 1e12,
            format!("assumed: {DEFAULT_GPU_TFLOPS} TFLOP/s ({name} is not in the table of known GPUs)"),
        ),
    }
}

/// Bytes/s of a copy within device memory (read and write), whatever
/// memory the program's buffers are in.
fn copy_bandwidth(device: &Device) -> Result<f64, RunError> {
    let src = device.alloc_in(PROBE_BYTES, MemoryKind::Device)?;
    let mut dst = device.alloc_in(PROBE_BYTES, MemoryKind::Device)?;
    device.copy(&mut dst, &src)?;
    device.synchronize()?;
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let (mut start, mut end) = (device.event()?, device.event()?);
        device.record(&mut start, None)?;
        device.copy(&mut dst, &src)?;
        device.record(&mut end, None)?;
        device.synchronize()?;
        best = best.min(f64::from(device.elapsed_ms(&start, &end)?) * 1e-3);
    }
    Ok(2.0 * PROBE_BYTES as f64 / best.max(1e-9))
}

/// FLOP/s of independent multiply-adds on `threads` threads at once, best
/// of 3 windows.
fn multiply_add_rate(threads: usize) -> f64 {
    (0..3)
        .map(|_| {
            let runs: Vec<(u64, Duration)> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..threads).map(|_| s.spawn(|| multiply_adds(CPU_WINDOW))).collect();
                handles.into_iter().filter_map(|h| h.join().ok()).collect()
            });
            let flops: u64 = runs.iter().map(|(f, _)| f).sum();
            let longest = runs.iter().map(|(_, d)| *d).max().unwrap_or(CPU_WINDOW);
            flops as f64 / longest.as_secs_f64().max(1e-9)
        })
        .fold(0.0, f64::max)
}

/// Runs `x = x * m + a` over 64 independent lanes for about `window`;
/// gives the FLOPs done (two per multiply-add) and the time taken.
fn multiply_adds(window: Duration) -> (u64, Duration) {
    const LANES: usize = 64;
    const CHUNK: u64 = 1 << 12;
    let mut lanes = [1.0f32; LANES];
    let (m, a) = (black_box(0.999_999_f32), black_box(1e-7_f32));
    let start = Instant::now();
    let mut iterations = 0u64;
    while start.elapsed() < window {
        for _ in 0..CHUNK {
            for x in &mut lanes {
                *x = *x * m + a;
            }
        }
        iterations += CHUNK;
    }
    black_box(lanes);
    (iterations * LANES as u64 * 2, start.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_are_found_by_model_and_others_get_the_stated_default() {
        assert_eq!(gpu_peak("cuda:0 (NVIDIA H100 80GB HBM3)").0, 989e12);
        assert_eq!(gpu_peak("cuda:0 (NVIDIA H100 PCIe)").0, 756e12);
        assert_eq!(gpu_peak("cuda:0 (NVIDIA H200)").0, 989e12);
        assert_eq!(gpu_peak("cuda:1 (NVIDIA A100-SXM4-80GB)").0, 312e12);
        let (flops, source) = gpu_peak("cuda:0 (NVIDIA GeForce RTX 4090)");
        assert_eq!(flops, DEFAULT_GPU_TFLOPS * 1e12);
        assert!(source.starts_with("assumed") && source.contains("RTX 4090"), "{source}");
    }

    #[test]
    fn the_cpu_peaks_are_measured_and_positive() {
        let device = Device::open(tessera_runtime::DeviceKind::Cpu).unwrap();
        let peaks = measure(&device).unwrap();
        assert!(peaks.flops > 0.0 && peaks.bandwidth > 0.0, "{peaks:?}");
        assert!(peaks.flops_source.starts_with("measured"), "{peaks:?}");
    }
}
