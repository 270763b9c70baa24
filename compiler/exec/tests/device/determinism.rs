//! `@deterministic` kernels give the same bits on every run: 20 runs on
//! CPU devices with 1, 2 and 4 worker threads (blocks then run in different
//! orders and on different cores) and code optimized at -O0 and -O3 all
//! agree bit for bit, and the result is the float64 sum within f32
//! rounding. With `TESSERA_TEST_DEVICE=cuda` (or `hip`) 20 runs on that GPU
//! must give the CPU's bits too. So must the standard library's
//! deterministic row kernels and its running sums; its deterministic
//! attention, whose products are the tensor cores', must repeat its bits
//! on each device.

// Each test binary uses part of the shared module.
use crate::common;
#[allow(dead_code)]
use tessera_base::FileId;

use tessera_runtime::cpu::{CpuDevice, LaunchConfig};
use tessera_runtime::host::{Call, Executor, TensorValue, Value};

use crate::examples::{bf16_tensor, Rng};
use tessera_runtime::{Device, Tensor};

const PROGRAM: &str = "\
@kernel
@deterministic(seed=1)
def total(x: f32[N], out: mut f32[2]):
    out[0] = tile.reduce(x, op=\"sum\", order=\"tree\")
    out[1] = tile.sum(x * x)
";

fn load(device: &Device, opt_level: u8) -> tessera_exec::Loaded {
    common::load_program(device, "total", PROGRAM, opt_level)
}

#[test]
fn deterministic_sums_are_identical_bit_for_bit() {
    let n = 100_003;
    // Values of very different magnitudes, so that the order of additions
    // shows in the last bits.
    let x: Vec<f32> = (0..n)
        .map(|i| {
            let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
            (h as f32 / (1u64 << 24) as f32 - 0.5) * if i % 7 == 0 { 1e4 } else { 1e-2 }
        })
        .collect();
    let input = TensorValue::new(Tensor::from_slice(&[n], &x).unwrap());
    let dims = [("N".to_string(), n as i64)];
    let mut seen: Option<[u32; 2]> = None;
    let cpus = [(1, 3), (2, 3), (4, 3), (2, 0)]
        .map(|(workers, opt_level)| (Device::Cpu(CpuDevice::with_workers(workers)), opt_level, 5));
    let gpu = common::gpu().map(|d| (d, 3, 20));
    for (device, opt_level, runs) in cpus.into_iter().chain(gpu) {
        let loaded = load(&device, opt_level);
        for _ in 0..runs {
            let out = TensorValue::new(Tensor::from_slice(&[2], &[f32::NAN, f32::NAN]).unwrap());
            let args = [Value::Tensor(input.clone()), Value::Tensor(out.clone())];
            let config = LaunchConfig {
                grid: [1, 1, 1],
                block: [128, 1, 1],
                shared_bytes: 0,
            };
            loaded.launch_kernel(&device, "total", config, &args, &dims).unwrap();
            let got = out.host(&device).unwrap().as_slice::<f32>().unwrap().to_vec();
            let bits = [got[0].to_bits(), got[1].to_bits()];
            match seen {
                None => {
                    let sum: f64 = x.iter().map(|&v| f64::from(v)).sum();
                    let abs: f64 = x.iter().map(|&v| f64::from(v).abs()).sum();
                    let squares: f64 = x.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
                    // Each of 128 threads adds n/128 values in turn, then a
                    // tree of depth 7 joins them: at most that many f32
                    // roundings, plus the one of each square.
                    let roundings = (n / 128 + 8) as f64;
                    let eps = f64::from(f32::EPSILON);
                    assert!(
                        (f64::from(got[0]) - sum).abs() <= roundings * eps * abs,
                        "{} vs {sum}",
                        got[0]
                    );
                    assert!(
                        (f64::from(got[1]) - squares).abs() <= (roundings + 1.0) * eps * squares,
                        "{} vs {squares}",
                        got[1]
                    );
                    seen = Some(bits);
                }
                Some(first) => assert_eq!(
                    bits,
                    first,
                    "run on {} at -O{opt_level} differs: {got:?}",
                    device.name()
                ),
            }
        }
    }
}

/// `stdlib/NAME.tsr` built for `device`'s target at `opt_level` and loaded.
fn stdlib(name: &str, device: &Device, opt_level: u8) -> tessera_exec::Loaded {
    let path = common::repo().join("stdlib").join(format!("{name}.tsr"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    common::load_program(device, name, &text, opt_level)
}

/// Where the standard library's deterministic kernels run, with how many
/// runs each: CPU devices of 1, 4 and 2 worker threads (the last with
/// code at -O0) twice, and the GPU `TESSERA_TEST_DEVICE` names 20 times.
fn configurations() -> impl Iterator<Item = (Device, u8, usize)> {
    let cpus = [(1, 3), (4, 3), (2, 0)]
        .map(|(workers, opt_level)| (Device::Cpu(CpuDevice::with_workers(workers)), opt_level, 2));
    cpus.into_iter().chain(common::gpu().map(|d| (d, 3, 20)))
}

/// The bits of what `function` of `loaded` returns for `args`.
fn call_bits(
    loaded: &mut tessera_exec::Loaded,
    device: &Device,
    function: &str,
    args: &[Value],
    dims: &[(String, i64)],
) -> Vec<u8> {
    let call = Call {
        file: FileId(0),
        function,
        args,
        dims,
    };
    let Value::Tensor(out) = loaded.call(device, &call).unwrap() else {
        panic!("{function} returns a tensor")
    };
    let bits = out.host(device).unwrap().bytes().to_vec();
    bits
}

/// The standard library's `@deterministic` row kernels on fresh bf16 rows
/// of a length for each of their variants (held in registers up to 1024,
/// 2048 and 4096 columns, by one kernel for multiples of 8 and one for the
/// others, up to 8192 and 16384 for multiples of 8, walked beyond): every
/// CPU configuration and the GPU give the same bits, on every run. Its
/// deterministic attention, whose products run on the tensor cores,
/// repeats its bits on each device.
#[test]
fn stdlib_deterministic_kernels_are_identical_bit_for_bit() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let rows = 1 + rng.below(16) as usize;
    let mut lengths = Vec::new();
    for from in [0, 1024, 2048, 4096, 8192, 16384] {
        // A multiple of 8 in (from, from + 1024], then a ragged length.
        let runs = from + 8 * (1 + rng.below(128) as usize);
        lengths.extend([runs, runs - 1 - rng.below(7) as usize]);
    }
    let mut inputs = Vec::new();
    for &n in &lengths {
        let (x, _) = bf16_tensor(&mut rng, &[rows, n], 4.0);
        let (w, _) = bf16_tensor(&mut rng, &[n], 1.0);
        let (b, _) = bf16_tensor(&mut rng, &[n], 1.0);
        let dims = vec![("R".to_string(), rows as i64), ("C".to_string(), n as i64)];
        inputs.push(("softmax_deterministic", vec![Value::Tensor(x.clone())], dims.clone()));
        inputs.push(("layernorm_deterministic", [x, w, b].map(Value::Tensor).to_vec(), dims));
    }
    let (s, t) = (1 + rng.below(150) as usize, 1 + rng.below(150) as usize);
    let attention: Vec<Value> = [s, t, t]
        .map(|len| Value::Tensor(bf16_tensor(&mut rng, &[1, 2, len, 64], 0.5).0))
        .to_vec();
    let attention_dims = [("B", 1), ("H", 2), ("S", s as i64), ("T", t as i64)].map(|(d, v)| (d.to_string(), v));
    let mut rows_seen: Vec<Option<Vec<u8>>> = vec![None; inputs.len()];
    for (device, opt_level, runs) in configurations() {
        let mut loaded = stdlib("nn", &device, opt_level);
        let mut attention_seen = None;
        for _ in 0..runs {
            for ((function, args, dims), seen) in inputs.iter().zip(&mut rows_seen) {
                let bits = call_bits(&mut loaded, &device, function, args, dims);
                let first = seen.get_or_insert_with(|| bits.clone());
                assert!(
                    *first == bits,
                    "{function} [{rows}, {}] on {} at -O{opt_level} (seed {seed:#x}): other bits",
                    dims[1].1,
                    device.name()
                );
            }
            let bits = call_bits(
                &mut loaded,
                &device,
                "attention_d64_deterministic",
                &attention,
                &attention_dims,
            );
            let first = attention_seen.get_or_insert_with(|| bits.clone());
            assert!(
                *first == bits,
                "attention_d64_deterministic on {} (seed {seed:#x}): other bits from run to run",
                device.name()
            );
        }
    }
}

/// The standard library's running sums (`row_cumsum`, one thread per row
/// adding in index order) give the same bits on every CPU configuration
/// and the GPU, on every run, for fresh rows of a fresh length.
#[test]
fn running_sums_are_identical_bit_for_bit() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (rows, n) = (1 + rng.below(300) as usize, 1 + rng.below(3000) as usize);
    let (x, _) = crate::examples::f32_tensor(&mut rng, &[rows, n], 100.0);
    let args = [Value::Tensor(x)];
    let dims = [("R".to_string(), rows as i64), ("C".to_string(), n as i64)];
    let mut seen: Option<Vec<u8>> = None;
    for (device, opt_level, runs) in configurations() {
        let mut loaded = stdlib("reduce", &device, opt_level);
        for _ in 0..runs {
            let bits = call_bits(&mut loaded, &device, "row_cumsum", &args, &dims);
            let first = seen.get_or_insert_with(|| bits.clone());
            assert!(
                *first == bits,
                "row_cumsum [{rows}, {n}] on {} at -O{opt_level} (seed {seed:#x}): other bits",
                device.name()
            );
        }
    }
}
