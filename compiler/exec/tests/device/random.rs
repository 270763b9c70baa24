//! Random numbers drawn in kernels (`rng.uniform`, `rng.normal`,
//! `op.dropout` in operator functions) are the runtime's Philox streams bit
//! for bit: every element equals `tessera_runtime::rng`'s draw under the key
//! of (function, stream, mesh coordinates, step, seed), for fresh sizes,
//! seeds, stream names and steps on every run. Results are poisoned by the
//! executor before the launch. On a GPU (`TESSERA_TEST_DEVICE`) the same
//! bits are required there: the CPU and the GPUs draw identical numbers.

// Each test binary uses part of the shared module.
use crate::common;
#[allow(dead_code)]
use tessera_base::FileId;

use tessera_runtime::host::{Call, Executor, TensorValue, Value};
use tessera_runtime::rng::{fill, normal_f64, philox4x32_10, stream_key, uniform_f32, Distribution, StreamId};
use tessera_runtime::{DType, Device, Tensor};

use crate::examples::Rng;

const DRAWS: [(&str, &str, Distribution, DType); 8] = [
    ("uniform", "f32", Distribution::Uniform, DType::F32),
    ("uniform", "f64", Distribution::Uniform, DType::F64),
    ("uniform", "f16", Distribution::Uniform, DType::F16),
    ("uniform", "bf16", Distribution::Uniform, DType::Bf16),
    ("normal", "f32", Distribution::Normal, DType::F32),
    ("normal", "f64", Distribution::Normal, DType::F64),
    ("normal", "f16", Distribution::Normal, DType::F16),
    ("normal", "bf16", Distribution::Normal, DType::Bf16),
];

fn call(device: &Device, loaded: &mut tessera_exec::Loaded, function: &str, args: &[Value], n: usize) -> Tensor {
    let dims = [("N".to_string(), n as i64)];
    let call = Call {
        file: FileId(0),
        function,
        args,
        dims: &dims,
    };
    match loaded.call(device, &call) {
        Ok(Value::Tensor(t)) => t.host(device).unwrap().clone(),
        other => panic!("`{function}` gives {other:?}"),
    }
}

fn key(function: &str, stream: &str, mesh: &[u32], step: u64, seed: i64) -> [u32; 2] {
    stream_key(&StreamId {
        function,
        stream,
        mesh,
        step,
        seed: seed as u64,
    })
}

#[test]
fn draws_are_the_runtime_streams_bit_for_bit() {
    let mut fresh = Rng::fresh();
    let run = fresh.0;
    let seed = fresh.next() as i64;
    let stream = format!("s{}", fresh.below(1000));
    let mut program = String::new();
    for (dist, dtype, _, _) in DRAWS {
        program += &format!(
            "@deterministic(seed={seed})\ndef {dist}_{dtype}(like: f32[N]) -> {dtype}[N] effects(random):\n    return rng.{dist}(N, stream=rng.stream(\"{stream}\"), dtype={dtype})\n\n"
        );
    }
    let device = common::device();
    let mut loaded = common::load_program(&device, "draws", &program, 3);
    // Several blocks of 256 threads, the last one ragged.
    let n = 1 + fresh.below(3000) as usize;
    let like = Value::Tensor(TensorValue::new(Tensor::zeros(DType::F32, &[n]).unwrap()));
    for step in [0, 1 + fresh.below(1 << 40)] {
        loaded.set_rng_step(step);
        for (dist, dtype, distribution, ty) in DRAWS {
            let function = format!("{dist}_{dtype}");
            let got = call(&device, &mut loaded, &function, std::slice::from_ref(&like), n);
            let want = fill(ty, &[n], key(&function, &stream, &[], step, seed), distribution).unwrap();
            assert_eq!(
                got.bytes(),
                want.bytes(),
                "{function} of {n} at step {step} (run {run:#x}): not the runtime's stream"
            );
        }
    }
}

#[test]
fn dropout_keeps_with_probability_one_minus_p_and_rescales() {
    let mut fresh = Rng::fresh();
    let run = fresh.0;
    let seed = fresh.below(1 << 20) as i64;
    let p = fresh.below(1000) as f64 / 1000.0;
    let program = format!(
        "@deterministic(seed={seed})\ndef drop(x: f32[N]) -> f32[N] effects(random):\n    return op.dropout(x, {p:?}, stream=rng.stream(\"drop\"))\n"
    );
    let device = common::device();
    let mut loaded = common::load_program(&device, "dropout", &program, 3);
    let n = 20_000 + fresh.below(20_000) as usize;
    let x: Vec<f32> = (0..n)
        .map(|_| (fresh.next() >> 40) as f32 / (1u64 << 24) as f32 + 0.5)
        .collect();
    let input = Value::Tensor(TensorValue::new(Tensor::from_slice(&[n], &x).unwrap()));
    let got = call(&device, &mut loaded, "drop", &[input], n);
    let got = got.as_slice::<f32>().unwrap();
    let k = key("drop", "drop", &[], 0, seed);
    let threshold = (p * f64::from(1u32 << 24)).ceil() as u32;
    let scale = (1.0 / (1.0 - p)) as f32;
    let mut kept = 0usize;
    for (i, (&g, &xi)) in got.iter().zip(&x).enumerate() {
        let w0 = philox4x32_10([i as u32, 0, 0, 0], k)[0];
        let keep = (w0 >> 8) >= threshold;
        let want = xi * if keep { scale } else { 0.0 };
        assert_eq!(g.to_bits(), want.to_bits(), "element {i} with p = {p} (run {run:#x})");
        kept += usize::from(keep);
    }
    let expected = (1.0 - p) * n as f64;
    let sigma = (n as f64 * p * (1.0 - p)).sqrt();
    assert!(
        (kept as f64 - expected).abs() <= 6.0 * sigma + 1.0,
        "kept {kept} of {n} with p = {p} (run {run:#x})"
    );
}

/// A draw of a function inlined into the one that runs takes that
/// function's key: its name with the draw's stream, and its seed, not the
/// callee's (the callee's seed had been kept beside the caller's name).
#[test]
fn inlined_draws_take_the_running_functions_key() {
    let mut fresh = Rng::fresh();
    let run = fresh.0;
    let (outer, inner) = (fresh.below(1 << 30) as i64, fresh.below(1 << 30) as i64);
    let program = format!(
        "@deterministic(seed={inner})\ndef noise(like: f32[N]) -> f32[N] effects(random):\n    return rng.uniform(N, stream=rng.stream(\"inner\"))\n\n\
         @deterministic(seed={outer})\ndef both(like: f32[N]) -> f32[N] effects(random):\n    return noise(like) + 2.0 * rng.uniform(N, stream=rng.stream(\"outer\"))\n"
    );
    let device = common::device();
    let mut loaded = common::load_program(&device, "inlined_draws", &program, 3);
    let n = 1_000 + fresh.below(4_000) as usize;
    let like = Value::Tensor(TensorValue::new(Tensor::from_slice(&[n], &vec![0.0f32; n]).unwrap()));
    let got = call(&device, &mut loaded, "both", &[like], n);
    let first = fill(
        DType::F32,
        &[n],
        key("both", "inner", &[], 0, outer),
        Distribution::Uniform,
    )
    .unwrap();
    let second = fill(
        DType::F32,
        &[n],
        key("both", "outer", &[], 0, outer),
        Distribution::Uniform,
    )
    .unwrap();
    let (first, second) = (first.as_slice::<f32>().unwrap(), second.as_slice::<f32>().unwrap());
    for (i, &g) in got.as_slice::<f32>().unwrap().iter().enumerate() {
        let want = first[i] + 2.0 * second[i];
        assert_eq!(g.to_bits(), want.to_bits(), "element {i} (run {run:#x})");
    }
}

/// Each rank of a mesh draws from its own stream: the key takes the rank's
/// coordinates, so the deterministic sum over 4 ranks is the binary tree's
/// sum of 4 different streams.
#[test]
fn ranks_of_a_mesh_draw_their_own_numbers() {
    let mut fresh = Rng::fresh();
    let run = fresh.0;
    let seed = fresh.below(1 << 30) as i64;
    let program = format!(
        "from tessera import dist, op\n\n@deterministic(seed={seed})\ndef noise(like: f32[N]) -> f32[N] effects(random, collective):\n    mesh = dist.Mesh(axes=[\"dp\"], devices=range(4))\n    u = rng.uniform(N, stream=rng.stream(\"noise\"))\n    return op.all_reduce(u, op=\"sum\", axis=\"dp\", mesh=mesh, algo=\"binary_tree\", deterministic=True)\n"
    );
    let device = common::device();
    let loaded = common::load_program(&device, "mesh_noise", &program, 3);
    let n = 1 + fresh.below(2000) as usize;
    let like = Value::Tensor(TensorValue::new(Tensor::zeros(DType::F32, &[n]).unwrap()));
    let dims = [("N".to_string(), n as i64)];
    let results = loaded
        .call_on_ranks(&device, "noise", &vec![vec![like]; 4], &dims)
        .unwrap();
    let draws: Vec<Vec<f32>> = (0..4u32)
        .map(|r| {
            let t = fill(
                DType::F32,
                &[n],
                key("noise", "noise", &[r], 0, seed),
                Distribution::Uniform,
            )
            .unwrap();
            t.as_slice::<f32>().unwrap().to_vec()
        })
        .collect();
    assert_ne!(draws[0], draws[1], "two ranks' streams differ");
    for (rank, result) in results.iter().enumerate() {
        let Value::Tensor(t) = result else {
            panic!("noise returns a tensor")
        };
        let got = t.host(&device).unwrap().as_slice::<f32>().unwrap().to_vec();
        for i in 0..n {
            let want = (draws[0][i] + draws[1][i]) + (draws[2][i] + draws[3][i]);
            assert_eq!(
                got[i].to_bits(),
                want.to_bits(),
                "rank {rank}, element {i} (run {run:#x})"
            );
        }
    }
}

/// A hand-written kernel draws one value per thread, at its index in the
/// grid or at the `counter=` it names, from the runtime's streams keyed by
/// the kernel's name: bit for bit.
#[test]
fn kernels_draw_per_thread_from_the_runtime_streams() {
    let mut fresh = Rng::fresh();
    let run = fresh.0;
    let seed = fresh.next() as i64;
    let (s1, s2) = (format!("u{}", fresh.below(1000)), format!("z{}", fresh.below(1000)));
    let program = format!(
        "@kernel\n@deterministic(seed={seed})\ndef noise(u: mut f32[N], z: mut f64[N], v: mut f32[N]):\n    i = launch.thread_id()\n    s = rng.stream(\"{s1}\")\n    if i < N:\n        u[i] = rng.uniform(stream=s)\n        z[i] = rng.normal(stream=rng.stream(\"{s2}\"), dtype=f64)\n        v[i] = rng.uniform(stream=s, counter=i + N)\n"
    );
    let device = common::device();
    let loaded = common::load_program(&device, "kernel_noise", &program, 3);
    let n = 1 + fresh.below(3000) as usize;
    let outputs = [
        crate::examples::poisoned(DType::F32, &[n]),
        crate::examples::poisoned(DType::F64, &[n]),
        crate::examples::poisoned(DType::F32, &[n]),
    ];
    let args: Vec<Value> = outputs.iter().map(|t| Value::Tensor(t.clone())).collect();
    let config = crate::examples::config([n.div_ceil(128) as u32, 1, 1], 128);
    loaded
        .launch_kernel(&device, "noise", config, &args, &[("N".to_string(), n as i64)])
        .unwrap();
    let (k1, k2) = (key("noise", &s1, &[], 0, seed), key("noise", &s2, &[], 0, seed));
    let got: Vec<Tensor> = outputs.iter().map(|t| t.host(&device).unwrap().clone()).collect();
    let (u, z, v) = (
        got[0].as_slice::<f32>().unwrap(),
        got[1].as_slice::<f64>().unwrap(),
        got[2].as_slice::<f32>().unwrap(),
    );
    for i in 0..n {
        let want = (
            uniform_f32(k1, i as u64),
            normal_f64(k2, i as u64),
            uniform_f32(k1, (i + n) as u64),
        );
        assert_eq!(u[i].to_bits(), want.0.to_bits(), "u[{i}] of {n} (run {run:#x})");
        assert_eq!(z[i].to_bits(), want.1.to_bits(), "z[{i}] of {n} (run {run:#x})");
        assert_eq!(v[i].to_bits(), want.2.to_bits(), "v[{i}] of {n} (run {run:#x})");
    }
}
