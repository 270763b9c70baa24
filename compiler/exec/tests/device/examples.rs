//! Every example (and the standard library's attention) runs on the CPU
//! through the code generator and the runtime, and its result matches a
//! float64 reference computed here,
//! independently of the compiler, on fresh random inputs (the seed is
//! printed on failure). Outputs are poisoned with NaN before the launch,
//! except where the kernel accumulates into its output, which then starts
//! from random values the reference includes. `TESSERA_TEST_DEVICE=cuda`
//! runs them on a GPU instead (`common`).

// Each test binary uses part of the shared module.
use crate::common;
#[allow(dead_code)]
use tessera_base::FileId;

use std::collections::BTreeMap;
use std::path::Path;

use tessera_driver::tune::{self, Tuning};
use tessera_driver::Layer;
use tessera_runtime::cpu::LaunchConfig;
use tessera_runtime::half::{bf16_to_f32, f32_to_bf16};
use tessera_runtime::host::{Call, Executor, TensorValue, Value};
use tessera_runtime::{DType, Device, Tensor};

/// SplitMix64, seeded from the clock so every run draws fresh inputs.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn fresh() -> Rng {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Rng(nanos ^ u64::from(std::process::id()).rotate_left(32))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn example(name: &str) -> (Device, tessera_exec::Loaded) {
    program("examples", name)
}

/// `DIR/NAME.tsr` of the repository, built for the test device and loaded.
pub(crate) fn program(dir: &str, name: &str) -> (Device, tessera_exec::Loaded) {
    let path = common::repo().join(dir).join(format!("{name}.tsr"));
    let (device, loaded, _) = program_tuned(&path, name, None);
    (device, loaded)
}

/// The program at `path`, built for the test device with the knob values
/// of `tuning` (else the tuning cache's) and loaded; also gives the Target
/// IR's text.
fn program_tuned(path: &Path, name: &str, tuning: Option<&Tuning>) -> (Device, tessera_exec::Loaded, String) {
    let mut sources = tessera_driver::load(&[path.to_string_lossy().into_owned()]).unwrap();
    let device = common::device();
    let target = tessera_exec::target_for(&device);
    let built = match tuning {
        Some(tuning) => tessera_exec::build_tuned(&mut sources, target, tuning),
        None => tessera_exec::build(&mut sources, target),
    };
    let built = built.unwrap_or_else(|d| panic!("{name} does not build: {d:?}"));
    let image = tessera_exec::image(&device, &built.layers, 2).unwrap_or_else(|d| panic!("{d:?}"));
    let loaded = tessera_exec::Loaded::new(&device, image).unwrap();
    let target_ir = built.layers.text(Layer::Target).unwrap_or_default().to_string();
    (device, loaded, target_ir)
}

/// A f32 tensor of random values and the values it holds.
pub(crate) fn f32_tensor(rng: &mut Rng, shape: &[usize], scale: f64) -> (TensorValue, Vec<f64>) {
    let n = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|_| (rng.uniform() * scale) as f32).collect();
    let t = TensorValue::new(Tensor::from_slice(shape, &v).unwrap());
    (t, v.iter().map(|&x| f64::from(x)).collect())
}

/// A bf16 tensor of random values and the (rounded) values it holds.
pub(crate) fn bf16_tensor(rng: &mut Rng, shape: &[usize], scale: f64) -> (TensorValue, Vec<f64>) {
    let n = shape.iter().product();
    let bits: Vec<u16> = (0..n).map(|_| f32_to_bf16((rng.uniform() * scale) as f32)).collect();
    let bytes: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
    let t = TensorValue::new(Tensor::from_bytes(DType::Bf16, shape, &bytes).unwrap());
    (t, bits.iter().map(|&b| f64::from(bf16_to_f32(b))).collect())
}

/// An output tensor filled with NaN, or for an integer dtype with the
/// bytes 0xA5 (an `i32` of -1515870811).
pub(crate) fn poisoned(dtype: DType, shape: &[usize]) -> TensorValue {
    let n: usize = shape.iter().product();
    let bytes: Vec<u8> = match dtype {
        DType::F32 => (0..n).flat_map(|_| f32::NAN.to_le_bytes()).collect(),
        DType::F64 => (0..n).flat_map(|_| f64::NAN.to_le_bytes()).collect(),
        DType::Bf16 => (0..n).flat_map(|_| 0x7fc0u16.to_le_bytes()).collect(),
        d if !d.is_float() => vec![0xA5; n * d.size()],
        d => panic!("no poison for {d}"),
    };
    TensorValue::new(Tensor::from_bytes(dtype, shape, &bytes).unwrap())
}

pub(crate) fn values(device: &Device, t: &TensorValue) -> Vec<f64> {
    t.host(device).unwrap().to_f64_vec()
}

/// Every `got[i]` within `bound[i]` of `want[i]` (and not NaN).
pub(crate) fn check(what: &str, seed: u64, got: &[f64], want: &[f64], bound: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let mut worst = (0.0f64, 0usize);
    // NaN is never within a bound.
    let close = |j: usize| (got[j] - want[j]).abs() <= bound[j];
    for i in 0..got.len() {
        let err = (got[i] - want[i]).abs();
        assert!(
            close(i),
            "{what} (seed {seed:#x}): element {i} is {}, the reference {} (bound {:e}); {} of {} elements off",
            got[i],
            want[i],
            bound[i],
            (0..got.len()).filter(|&j| !close(j)).count(),
            got.len()
        );
        if err / bound[i].max(f64::MIN_POSITIVE) > worst.0 {
            worst = (err / bound[i], i);
        }
    }
    eprintln!(
        "{what}: {} elements within bounds, worst at {:.2} of its bound",
        got.len(),
        worst.0
    );
}

pub(crate) fn config(grid: [u32; 3], block: u32) -> LaunchConfig {
    LaunchConfig {
        grid,
        block: [block, 1, 1],
        shared_bytes: 0,
    }
}

/// `C[m, n] = Σ_k A[m, k] B[k, n]` and `Σ_k |A[m, k] B[k, n]|`.
pub(crate) fn matmul_ref(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut c = vec![0.0; m * n];
    let mut abs = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p];
            for j in 0..n {
                c[i * n + j] += x * b[p * n + j];
                abs[i * n + j] += (x * b[p * n + j]).abs();
            }
        }
    }
    (c, abs)
}

fn bf16_round(x: f64) -> f64 {
    f64::from(bf16_to_f32(f32_to_bf16(x as f32)))
}

#[test]
fn saxpy() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = example("saxpy");
    let n = 1000 + rng.below(3000) as usize;
    let a = rng.uniform() * 4.0;
    let (x, xs) = f32_tensor(&mut rng, &[n], 10.0);
    let (y, ys) = f32_tensor(&mut rng, &[n], 10.0);
    let out = poisoned(DType::F32, &[n]);
    let args = [
        Value::Float(a),
        Value::Tensor(x),
        Value::Tensor(y),
        Value::Tensor(out.clone()),
    ];
    let grid = n.div_ceil(256) as u32;
    loaded
        .launch_kernel(
            &device,
            "saxpy",
            config([grid, 1, 1], 256),
            &args,
            &[("N".into(), n as i64)],
        )
        .unwrap();
    let a32 = f64::from(a as f32);
    let want: Vec<f64> = xs.iter().zip(&ys).map(|(x, y)| a32 * x + y).collect();
    let bound: Vec<f64> = want
        .iter()
        .map(|w| 2.0 * f64::from(f32::EPSILON) * (w.abs() + 10.0))
        .collect();
    check("saxpy", seed, &values(&device, &out), &want, &bound);
}

#[test]
fn sum_reduce() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = example("sum_reduce");
    let n = 500 + rng.below(5000) as usize;
    let groups = 1 + rng.below(4) as usize;
    let (x, xs) = f32_tensor(&mut rng, &[n], 1.0);
    // atomic_add accumulates into `out`: it starts from random values.
    let (out, start) = f32_tensor(&mut rng, &[groups], 1.0);
    let args = [Value::Tensor(x), Value::Tensor(out.clone())];
    let dims = [("n".to_string(), n as i64), ("grid_groups".to_string(), groups as i64)];
    loaded
        .launch_kernel(&device, "sum_reduce", config([groups as u32, 1, 1], 128), &args, &dims)
        .unwrap();
    let total: f64 = xs.iter().sum();
    let abs: f64 = xs.iter().map(|x| x.abs()).sum();
    let want: Vec<f64> = start.iter().map(|s| s + total).collect();
    let bound = vec![1e-6 * (abs + 1.0); groups];
    check("sum_reduce", seed, &values(&device, &out), &want, &bound);
}

#[test]
fn warp_reduce_sum() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = example("warp_reduce_sum");
    let warps = 4;
    let n = warps * 32;
    let (x, xs) = f32_tensor(&mut rng, &[n], 1.0);
    let out = poisoned(DType::F32, &[warps]);
    let args = [Value::Tensor(x), Value::Tensor(out.clone())];
    let dims = [("N".to_string(), n as i64), ("W".to_string(), warps as i64)];
    loaded
        .launch_kernel(&device, "warp_reduce_sum", config([1, 1, 1], n as u32), &args, &dims)
        .unwrap();
    let want: Vec<f64> = xs.chunks(32).map(|c| c.iter().sum()).collect();
    let bound: Vec<f64> = xs
        .chunks(32)
        .map(|c| 1e-6 * c.iter().map(|x| x.abs()).sum::<f64>())
        .collect();
    check("warp_reduce_sum", seed, &values(&device, &out), &want, &bound);
}

#[test]
fn coop_example() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = example("coop_example");
    let n = 64 + rng.below(200) as usize;
    let (x, xs) = f32_tensor(&mut rng, &[n], 100.0);
    let args = [Value::Tensor(x.clone())];
    loaded
        .launch_kernel(
            &device,
            "coop_example",
            config([1, 1, 1], 64),
            &args,
            &[("N".into(), n as i64)],
        )
        .unwrap();
    let want: Vec<f64> = xs
        .iter()
        .enumerate()
        .map(|(i, v)| if i < 64 { v + 1.0 } else { *v })
        .collect();
    let bound: Vec<f64> = want.iter().map(|w| f64::from(f32::EPSILON) * w.abs()).collect();
    check("coop_example", seed, &values(&device, &x), &want, &bound);
}

#[test]
fn gemm_tc() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = example("gemm_tc");
    let (m, n, k) = (
        128 * (1 + rng.below(2) as usize),
        128 * (1 + rng.below(2) as usize),
        32 * (1 + rng.below(4) as usize),
    );
    let (a, av) = bf16_tensor(&mut rng, &[m, k], 1.0);
    let (b, bv) = bf16_tensor(&mut rng, &[k, n], 1.0);
    // `C` is the accumulator (`C += A @ B`): it starts from random values.
    let (c, cv) = f32_tensor(&mut rng, &[m, n], 1.0);
    let args = [Value::Tensor(a), Value::Tensor(b), Value::Tensor(c.clone())];
    let dims = [
        ("M".to_string(), m as i64),
        ("K".to_string(), k as i64),
        ("N".to_string(), n as i64),
    ];
    let grid = [(m / 128) as u32, (n / 128) as u32, 1];
    loaded
        .launch_kernel(&device, "gemm_tc", config(grid, 256), &args, &dims)
        .unwrap();
    let (prod, abs) = matmul_ref(&av, &bv, m, k, n);
    let want: Vec<f64> = prod.iter().zip(&cv).map(|(p, c)| p + c).collect();
    let bound: Vec<f64> = abs.iter().zip(&cv).map(|(s, c)| 1e-5 * (s + c.abs()) + 1e-30).collect();
    check("gemm_tc", seed, &values(&device, &c), &want, &bound);
}

#[test]
fn matmul_operator() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, mut loaded) = example("matmul");
    let (m, n, k) = (
        64 + rng.below(200) as usize,
        64 + rng.below(200) as usize,
        64 * (1 + rng.below(3) as usize),
    );
    let (a, av) = bf16_tensor(&mut rng, &[m, k], 1.0);
    let (b, bv) = bf16_tensor(&mut rng, &[k, n], 1.0);
    let dims = [
        ("M".to_string(), m as i64),
        ("K".to_string(), k as i64),
        ("N".to_string(), n as i64),
    ];
    let args = [Value::Tensor(a), Value::Tensor(b)];
    let call = Call {
        file: FileId(0),
        function: "matmul",
        args: &args,
        dims: &dims,
    };
    let Value::Tensor(c) = loaded.call(&device, &call).unwrap() else {
        panic!("matmul returns a tensor")
    };
    assert_eq!(c.shape(), vec![m, n]);
    let (want, abs) = matmul_ref(&av, &bv, m, k, n);
    let bound: Vec<f64> = abs.iter().map(|s| 1e-5 * s + 1e-30).collect();
    check("matmul", seed, &values(&device, &c), &want, &bound);
}

/// `average_gradients` runs on the 8 ranks of its mesh, each with its own
/// fresh gradients: every rank gets the mean, summed in the binary tree's
/// order (checked bit for bit) and within f32 rounding of the float64 mean.
/// A plain call gives every rank the same gradients, whose mean they are.
#[test]
fn all_reduce() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, mut loaded) = example("all_reduce");
    assert_eq!(loaded.ranks_of("average_gradients").unwrap(), 8);
    let p = 1 + rng.below(3000) as usize;
    let dims = [("P".to_string(), p as i64)];
    let grads: Vec<(TensorValue, Vec<f64>)> = (0..8).map(|_| f32_tensor(&mut rng, &[p], 1.0)).collect();
    let args: Vec<Vec<Value>> = grads.iter().map(|(t, _)| vec![Value::Tensor(t.clone())]).collect();
    let results = loaded
        .call_on_ranks(&device, "average_gradients", &args, &dims)
        .unwrap();
    let tree: Vec<f64> = (0..p)
        .map(|i| {
            let r: Vec<f32> = grads.iter().map(|(_, v)| v[i] as f32).collect();
            let sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            f64::from(sum / 8.0)
        })
        .collect();
    let mean: Vec<f64> = (0..p)
        .map(|i| grads.iter().map(|(_, v)| v[i]).sum::<f64>() / 8.0)
        .collect();
    let bound = vec![8.0 * f64::from(f32::EPSILON); p];
    for (rank, result) in results.iter().enumerate() {
        let Value::Tensor(out) = result else {
            panic!("average_gradients returns a tensor")
        };
        let got = values(&device, out);
        assert_eq!(
            got, tree,
            "rank {rank} (seed {seed:#x}): not the binary tree's sum, bit for bit"
        );
        check("all_reduce", seed, &got, &mean, &bound);
    }
    let (x, xv) = f32_tensor(&mut rng, &[p], 1.0);
    let call = Call {
        file: FileId(0),
        function: "average_gradients",
        args: &[Value::Tensor(x)],
        dims: &dims,
    };
    let Value::Tensor(out) = loaded.call(&device, &call).unwrap() else {
        panic!("average_gradients returns a tensor")
    };
    assert_eq!(values(&device, &out), xv, "the mean of 8 equal gradients is exact");
    let err = loaded
        .call_on_ranks(&device, "average_gradients", &args[..3], &dims)
        .unwrap_err();
    assert!(err.to_string().contains("runs on the 8 ranks of its mesh"), "{err}");
}

#[test]
fn pipeline() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = example("pipeline");
    let (n, k) = (16 * (1 + rng.below(8) as usize), 64 * (1 + rng.below(3) as usize));
    let (a, av) = bf16_tensor(&mut rng, &[128, k], 1.0);
    let (b, bv) = bf16_tensor(&mut rng, &[k, n], 1.0);
    // `C += …` accumulates: C starts from random values.
    let (c, cv) = f32_tensor(&mut rng, &[128, n], 1.0);
    let args = [Value::Tensor(a), Value::Tensor(b), Value::Tensor(c.clone())];
    let dims = [("K".to_string(), k as i64), ("N".to_string(), n as i64)];
    loaded
        .launch_kernel(&device, "pipeline", config([1, 1, 1], 128), &args, &dims)
        .unwrap();
    let (prod, abs) = matmul_ref(&av, &bv, 128, k, n);
    let want: Vec<f64> = prod.iter().zip(&cv).map(|(p, c)| p + c).collect();
    let bound: Vec<f64> = abs.iter().zip(&cv).map(|(s, c)| 1e-5 * (s + c.abs()) + 1e-30).collect();
    check("pipeline", seed, &values(&device, &c), &want, &bound);
}

#[test]
fn fused_mlp() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = example("fused_mlp");
    let (bsz, d, h) = (
        16 * (1 + rng.below(4) as usize),
        16 * (1 + rng.below(4) as usize),
        16 * (1 + rng.below(4) as usize),
    );
    let (x, xv) = bf16_tensor(&mut rng, &[bsz, d], 1.0);
    let (w1, w1v) = bf16_tensor(&mut rng, &[d, h], 0.5);
    let (b1, b1v) = bf16_tensor(&mut rng, &[h], 0.5);
    let (w2, w2v) = bf16_tensor(&mut rng, &[h, d], 0.5);
    let (b2, b2v) = bf16_tensor(&mut rng, &[d], 0.5);
    let out = poisoned(DType::Bf16, &[bsz, d]);
    let args = [x, w1, b1, w2, b2, out.clone()].map(Value::Tensor);
    let dims = [
        ("B".to_string(), bsz as i64),
        ("D".to_string(), d as i64),
        ("H".to_string(), h as i64),
    ];
    loaded
        .launch_kernel(&device, "fused_mlp", config([1, 1, 1], 128), &args, &dims)
        .unwrap();
    // Reference: exact hidden layer, then exact output; the bound allows
    // bf16 roundings of the hidden layer and of the output.
    let (xw1, xw1_abs) = matmul_ref(&xv, &w1v, bsz, d, h);
    let hidden: Vec<f64> = (0..bsz * h).map(|i| (xw1[i] + b1v[i % h]).max(0.0)).collect();
    let hidden_err: Vec<f64> = (0..bsz * h)
        .map(|i| 2.0f64.powi(-7) * (xw1_abs[i] + b1v[i % h].abs()))
        .collect();
    let (hw2, hw2_abs) = matmul_ref(&hidden, &w2v, bsz, h, d);
    let (_, err_prop) = matmul_ref(&hidden_err, &w2v, bsz, h, d);
    let want: Vec<f64> = (0..bsz * d).map(|i| hw2[i] + b2v[i % d]).collect();
    let bound: Vec<f64> = (0..bsz * d)
        .map(|i| err_prop[i] + 2.0f64.powi(-7) * (hw2_abs[i] + b2v[i % d].abs()) + 1e-6)
        .collect();
    check("fused_mlp", seed, &values(&device, &out), &want, &bound);
}

#[test]
fn flash_attention() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = example("flash_attention");
    let s = 128 * (1 + rng.below(2) as usize);
    let (q, qv) = bf16_tensor(&mut rng, &[s, 64], 0.25);
    let (k, kv) = bf16_tensor(&mut rng, &[s, 64], 0.25);
    let (v, vv) = bf16_tensor(&mut rng, &[s, 64], 1.0);
    let o = poisoned(DType::Bf16, &[s, 64]);
    let args = [q, k, v, o.clone()].map(Value::Tensor);
    loaded
        .launch_kernel(
            &device,
            "flash_attention",
            config([1, 1, 1], 256),
            &args,
            &[("S".into(), s as i64)],
        )
        .unwrap();
    // Each 128-row block attends to the keys and values of the same block
    // (the example's loop), unscaled.
    let mut want = vec![0.0; s * 64];
    let mut bound = vec![0.0; s * 64];
    for start in (0..s).step_by(128) {
        for i in start..start + 128 {
            let scores: Vec<f64> = (start..start + 128)
                .map(|j| (0..64).map(|c| qv[i * 64 + c] * kv[j * 64 + c]).sum())
                .collect();
            let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
            let sum: f64 = e.iter().sum();
            for c in 0..64 {
                let mut acc = 0.0;
                let mut abs = 0.0;
                for (jj, j) in (start..start + 128).enumerate() {
                    acc += e[jj] / sum * vv[j * 64 + c];
                    abs += e[jj] / sum * vv[j * 64 + c].abs();
                }
                want[i * 64 + c] = acc;
                // bf16 scores and probabilities, a bf16 output.
                bound[i * 64 + c] = 2.0f64.powi(-6) * abs + 2.0f64.powi(-8) * acc.abs() + 1e-6;
            }
        }
    }
    check("flash_attention", seed, &values(&device, &o), &want, &bound);
}

/// The standard library's fused attention (`stdlib/nn.tsr`), causal or
/// not, head dims 64 and 128, on a fresh batch of heads (more than one
/// batch and head, so that the head's indices are told apart) whose query
/// and key counts are not multiples of the tiles, against
/// softmax(q·kᵀ/√d)·v in float64.
#[test]
fn stdlib_attention() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, mut loaded) = program("stdlib", "nn");
    let (b, h) = (2 + rng.below(2) as usize, 2 + rng.below(2) as usize);
    let (s, t) = (1 + rng.below(200) as usize, 1 + rng.below(200) as usize);
    let dims = [
        ("B".to_string(), b as i64),
        ("H".to_string(), h as i64),
        ("S".to_string(), s as i64),
        ("T".to_string(), t as i64),
    ];
    for d in [64, 128] {
        let (q, qv) = bf16_tensor(&mut rng, &[b, h, s, d], 0.5);
        let (k, kv) = bf16_tensor(&mut rng, &[b, h, t, d], 0.5);
        let (v, vv) = bf16_tensor(&mut rng, &[b, h, t, d], 1.0);
        for causal in [false, true] {
            let function = format!("{}attention_d{d}", if causal { "causal_" } else { "" });
            let args = [q.clone(), k.clone(), v.clone()].map(Value::Tensor);
            let call = Call {
                file: FileId(0),
                function: &function,
                args: &args,
                dims: &dims,
            };
            let Value::Tensor(o) = loaded.call(&device, &call).unwrap() else {
                panic!("{function} returns a tensor")
            };
            assert_eq!(o.shape(), vec![b, h, s, d]);
            let mut want = vec![0.0; b * h * s * d];
            let mut bound = vec![0.0; b * h * s * d];
            let scale = 1.0 / (d as f64).sqrt();
            for bh in 0..b * h {
                let (qb, kb, vb) = (&qv[bh * s * d..], &kv[bh * t * d..], &vv[bh * t * d..]);
                for i in 0..s {
                    // Query i is position i + t - s: it sees keys up to there.
                    let seen = if causal {
                        (i + t + 1).saturating_sub(s).min(t)
                    } else {
                        t
                    };
                    let scores: Vec<f64> = (0..seen)
                        .map(|j| (0..d).map(|c| qb[i * d + c] * kb[j * d + c]).sum::<f64>() * scale)
                        .collect();
                    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let e: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
                    let sum: f64 = e.iter().sum();
                    for c in 0..d {
                        let at = (bh * s + i) * d + c;
                        let acc: f64 = e.iter().enumerate().map(|(j, w)| w / sum * vb[j * d + c]).sum();
                        let abs: f64 = e.iter().enumerate().map(|(j, w)| w / sum * vb[j * d + c].abs()).sum();
                        want[at] = acc;
                        // bf16 probabilities in the second product, a bf16 output.
                        bound[at] = 2.0f64.powi(-7) * abs + 2.0f64.powi(-8) * acc.abs() + 1e-6;
                    }
                }
            }
            check(&function, seed, &values(&device, &o), &want, &bound);
        }
    }
}

/// Matmuls on a persistent grid (`persistent = 1`), one of a single
/// product and one of a batch: as many blocks as the device has
/// multiprocessors (the CPU's worker threads), each walking several output
/// tiles, of one batch entry or of several, the edge tiles ragged; every
/// element against float64.
#[test]
fn persistent_matmul() {
    const PROGRAM: &str = "\
@autotune(persistent=[0, 1])
@numerics(Training)
def matmul(A: bf16[M, K], B: bf16[K, N]) -> f32[M, N] where K % 8 == 0, N % 8 == 0:
    return op.matmul(A, B, accumulate=f32)

@autotune(persistent=[0, 1])
@numerics(Training)
def batched(A: bf16[G, M, K], B: bf16[G, K, N]) -> f32[G, M, N]:
    return op.matmul(A, B, accumulate=f32)
";
    let dir = std::env::temp_dir().join(format!("tessera-persistent-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("persistent.tsr");
    std::fs::write(&path, PROGRAM).unwrap();
    let on = BTreeMap::from([("persistent".to_string(), 1)]);
    let tuning = Tuning::from([
        ("matmul".to_string(), tune::everywhere(on.clone())),
        ("batched".to_string(), tune::everywhere(on)),
    ]);
    let (device, mut loaded, target_ir) = program_tuned(&path, "persistent", Some(&tuning));
    let mut rng = Rng::fresh();
    let seed = rng.0;
    for (function, batched) in [("matmul", false), ("batched", true)] {
        let launch = target_ir
            .lines()
            .find(|l| l.contains("tile.launch") && l.contains(&format!("@{function}_k0")))
            .unwrap_or_else(|| panic!("no launch of {function}"));
        assert!(launch.contains("grid = [\"persistent("), "{launch}");
        let g = if batched { 1 + rng.below(3) as usize } else { 1 };
        // At least two tiles per block: on the CPU (64×64 tiles, a block
        // per worker thread) from 100 rows and 96 columns; on a GPU (tiles
        // of up to 128×256) from three tiles per multiprocessor. Dims are
        // not multiples of a tile; `matmul` asks for N % 8 == 0, `batched`
        // takes any N.
        let (rows, cols) = if device.is_host() {
            (100, 96)
        } else {
            let side = (3.0 * device.multiprocessors().unwrap() as f64).sqrt().ceil() as usize;
            (128 * side, 256 * side)
        };
        let m = rows + rng.below(300) as usize;
        let n = cols + 8 * rng.below(38) as usize + if batched { rng.below(8) as usize } else { 0 };
        let k = 8 * (1 + rng.below(24) as usize);
        let (shape_a, shape_b) = if batched {
            (vec![g, m, k], vec![g, k, n])
        } else {
            (vec![m, k], vec![k, n])
        };
        let (a, av) = bf16_tensor(&mut rng, &shape_a, 1.0);
        let (b, bv) = bf16_tensor(&mut rng, &shape_b, 1.0);
        let mut dims = vec![
            ("M".to_string(), m as i64),
            ("K".to_string(), k as i64),
            ("N".to_string(), n as i64),
        ];
        if batched {
            dims.push(("G".to_string(), g as i64));
        }
        let args = [Value::Tensor(a), Value::Tensor(b)];
        let call = Call {
            file: FileId(0),
            function,
            args: &args,
            dims: &dims,
        };
        let Value::Tensor(c) = loaded.call(&device, &call).unwrap() else {
            panic!("{function} returns a tensor")
        };
        let (mut want, mut bound) = (Vec::new(), Vec::new());
        for i in 0..g {
            let (w, abs) = matmul_ref(
                &av[i * m * k..(i + 1) * m * k],
                &bv[i * k * n..(i + 1) * k * n],
                m,
                k,
                n,
            );
            want.extend(w);
            bound.extend(abs.iter().map(|s| 1e-5 * s + 1e-30));
        }
        check(function, seed, &values(&device, &c), &want, &bound);
    }
}

/// The runtime's bf16 rounding is round-to-nearest-even, as the kernels'.
#[test]
fn bf16_rounding_of_the_reference() {
    assert_eq!(bf16_round(1.0 + 2.0f64.powi(-8)), 1.0);
    assert_eq!(bf16_round(1.0 + 3.0 * 2.0f64.powi(-8)), 1.0 + 2.0f64.powi(-6));
}
