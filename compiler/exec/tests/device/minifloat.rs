//! The code generator's fp8 conversions (compiler/codegen/src/minifloat.rs),
//! compiled for the CPU, give `tessera_base::minifloat`'s results bit for
//! bit: every code of both formats decoded (to f32, f16, and across
//! formats), and every code's value, every midpoint between neighbours,
//! points just beside those, a sweep of every f32 binade and the special
//! values encoded from f32 and from f64, with and without `saturate`. The
//! same IR is what every GPU target runs; with `TESSERA_TEST_DEVICE=cuda`
//! (`scripts/gpu-check.sh`) the test runs it there.

// Each test binary uses part of the shared module.
#[allow(dead_code)]
use crate::common;

use tessera_base::minifloat::{Format, E4M3, E5M2};
use tessera_runtime::cpu::LaunchConfig;
use tessera_runtime::half::{f16_to_f32, f32_to_f16};
use tessera_runtime::host::{TensorValue, Value};
use tessera_runtime::{DType, Device, Tensor};

const PROGRAM: &str = "\
@kernel
def convert(c4: fp8_e4m3[C], c5: fp8_e5m2[C], x: f32[N], y: f64[N],
            d4: mut f32[C], d5: mut f32[C], h4: mut f16[C], x45: mut fp8_e5m2[C], x54: mut fp8_e4m3[C],
            e4: mut fp8_e4m3[N], e5: mut fp8_e5m2[N], s4: mut fp8_e4m3[N], s5: mut fp8_e5m2[N],
            w4: mut fp8_e4m3[N], w5: mut fp8_e5m2[N], h: mut f16[N]):
    i = launch.thread_id()
    if i < C:
        d4[i] = cast(c4[i], f32)
        d5[i] = cast(c5[i], f32)
        h4[i] = cast(c4[i], f16)
        x45[i] = cast(c4[i], fp8_e5m2)
        x54[i] = cast(c5[i], fp8_e4m3)
    if i < N:
        e4[i] = cast(x[i], fp8_e4m3)
        e5[i] = cast(x[i], fp8_e5m2)
        s4[i] = cast(x[i], fp8_e4m3, saturate=True)
        s5[i] = cast(x[i], fp8_e5m2, saturate=True)
        w4[i] = cast(y[i], fp8_e4m3)
        w5[i] = cast(y[i], fp8_e5m2)
        h[i] = cast(x[i], f16, saturate=True)
";

/// Values to encode, as f64: each code's value of both formats, the
/// midpoints between neighbours and points just beside them, both signs; a
/// sweep of every f32 binade with mantissas from a hash; special values.
fn inputs() -> Vec<f64> {
    let mut x = Vec::new();
    for f in [E4M3, E5M2] {
        let mut values: Vec<f64> = (0..=0x7fu8).map(|c| f.decode(c)).filter(|v| v.is_finite()).collect();
        values.sort_by(f64::total_cmp);
        for w in values.windows(2) {
            let mid = (w[0] + w[1]) / 2.0;
            x.extend([w[0], mid, mid * (1.0 + 1e-7), mid * (1.0 - 1e-7), mid * (1.0 + 1e-12)]);
        }
        let max = f.decode(f.max);
        x.extend([
            max,
            max * 1.0625,
            max * 1.0625 * (1.0 - 1e-9),
            max * 1.0625 * (1.0 + 1e-9),
            max * 4.0,
        ]);
    }
    for exponent in 0u32..255 {
        for j in 0u32..8 {
            let mantissa = (j.wrapping_mul(0x9e37_79b9) >> 9) & 0x7f_ffff;
            x.push(f64::from(f32::from_bits((exponent << 23) | mantissa)));
        }
    }
    x.extend([
        f64::INFINITY,
        f64::NAN,
        65504.0,
        65520.0,
        1e6,
        f64::from(f32::MIN_POSITIVE),
        1e-45,
    ]);
    let negated: Vec<f64> = x.iter().map(|v| -v).collect();
    x.extend(negated);
    x
}

fn bytes(t: &TensorValue, device: &Device) -> Vec<u8> {
    t.host(device).unwrap().bytes().to_vec()
}

/// The bits of an f16 tensor's elements.
fn halves(t: &TensorValue, device: &Device) -> Vec<u16> {
    bytes(t, device)
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect()
}

/// `got` (codes) against `want`, NaN codes equal to any NaN code.
fn same_codes(name: &str, f: Format, got: &[u8], want: impl Iterator<Item = u8>, inputs: &[String]) {
    for ((&g, w), input) in got.iter().zip(want).zip(inputs) {
        let nan = |c: u8| f.decode(c).is_nan();
        assert!(
            g == w || nan(g) && nan(w),
            "{name}({input}) gave {g:#04x}, not {w:#04x}"
        );
    }
}

#[test]
fn fp8_conversions_match_the_reference_bit_for_bit() {
    let device = common::device();
    let loaded = common::load_program(&device, "convert", PROGRAM, 3);

    let codes: Vec<u8> = (0..=255).collect();
    let y = inputs();
    let x: Vec<f32> = y.iter().map(|&v| v as f32).collect();
    let (c, n) = (codes.len(), y.len());
    let tensor = |t: Tensor| TensorValue::new(t);
    let poisoned = |dtype: DType, len: usize| {
        let mut t = Tensor::zeros(dtype, &[len]).unwrap();
        t.bytes_mut().fill(0x5A);
        tensor(t)
    };
    let inputs = [
        tensor(Tensor::from_bytes(DType::Fp8E4m3, &[c], &codes).unwrap()),
        tensor(Tensor::from_bytes(DType::Fp8E5m2, &[c], &codes).unwrap()),
        tensor(Tensor::from_slice(&[n], &x).unwrap()),
        tensor(Tensor::from_slice(&[n], &y).unwrap()),
    ];
    let outputs = [
        poisoned(DType::F32, c),
        poisoned(DType::F32, c),
        poisoned(DType::F16, c),
        poisoned(DType::Fp8E5m2, c),
        poisoned(DType::Fp8E4m3, c),
        poisoned(DType::Fp8E4m3, n),
        poisoned(DType::Fp8E5m2, n),
        poisoned(DType::Fp8E4m3, n),
        poisoned(DType::Fp8E5m2, n),
        poisoned(DType::Fp8E4m3, n),
        poisoned(DType::Fp8E5m2, n),
        poisoned(DType::F16, n),
    ];
    let args: Vec<Value> = inputs
        .iter()
        .chain(&outputs)
        .map(|t| Value::Tensor(t.clone()))
        .collect();
    let config = LaunchConfig {
        grid: [n.max(c).div_ceil(128) as u32, 1, 1],
        block: [128, 1, 1],
        shared_bytes: 0,
    };
    let dims = [("C".to_string(), c as i64), ("N".to_string(), n as i64)];
    loaded.launch_kernel(&device, "convert", config, &args, &dims).unwrap();

    // Decoding: every code, to f32 exactly, to f16 (exact), across formats.
    let code_names: Vec<String> = codes.iter().map(|c| format!("{c:#04x}")).collect();
    for (f, out) in [(E4M3, &outputs[0]), (E5M2, &outputs[1])] {
        let got = out.host(&device).unwrap().as_slice::<f32>().unwrap().to_vec();
        for (&code, g) in codes.iter().zip(got) {
            let want = f.decode(code);
            assert!(
                f64::from(g) == want && g.is_sign_negative() == want.is_sign_negative() || g.is_nan() && want.is_nan(),
                "decoding {f:?} code {code:#04x} gave {g}, not {want}"
            );
        }
    }
    let h4 = halves(&outputs[2], &device);
    for (&code, h) in codes.iter().zip(h4) {
        let want = E4M3.decode(code);
        let g = f64::from(f16_to_f32(h));
        assert!(
            g == want || g.is_nan() && want.is_nan(),
            "e4m3 {code:#04x} as f16 is {g}, not {want}"
        );
    }
    let across = |to: Format, from: Format| codes.iter().map(move |&c| to.encode(from.decode(c), false));
    same_codes(
        "e4m3 -> e5m2",
        E5M2,
        &bytes(&outputs[3], &device),
        across(E5M2, E4M3),
        &code_names,
    );
    same_codes(
        "e5m2 -> e4m3",
        E4M3,
        &bytes(&outputs[4], &device),
        across(E4M3, E5M2),
        &code_names,
    );

    // Encoding from f32 (the f32 inputs) and from f64, plain and saturating.
    let names: Vec<String> = y.iter().map(|v| format!("{v:e}")).collect();
    let from32 = |f: Format, sat: bool| x.iter().map(move |&v| f.encode(f64::from(v), sat));
    let from64 = |f: Format| y.iter().map(move |&v| f.encode(v, false));
    same_codes(
        "f32 -> e4m3",
        E4M3,
        &bytes(&outputs[5], &device),
        from32(E4M3, false),
        &names,
    );
    same_codes(
        "f32 -> e5m2",
        E5M2,
        &bytes(&outputs[6], &device),
        from32(E5M2, false),
        &names,
    );
    same_codes(
        "f32 -> e4m3 saturating",
        E4M3,
        &bytes(&outputs[7], &device),
        from32(E4M3, true),
        &names,
    );
    same_codes(
        "f32 -> e5m2 saturating",
        E5M2,
        &bytes(&outputs[8], &device),
        from32(E5M2, true),
        &names,
    );
    same_codes("f64 -> e4m3", E4M3, &bytes(&outputs[9], &device), from64(E4M3), &names);
    same_codes("f64 -> e5m2", E5M2, &bytes(&outputs[10], &device), from64(E5M2), &names);

    let h = halves(&outputs[11], &device);
    for ((&g, &v), name) in h.iter().zip(&x).zip(&names) {
        let want = f32_to_f16(v.clamp(-65504.0, 65504.0));
        let nan = |b: u16| f16_to_f32(b).is_nan();
        assert!(
            g == want || nan(g) && nan(want),
            "f32 -> f16 saturating({name}) gave {g:#06x}, not {want:#06x}"
        );
    }
}

const ARITHMETIC: &str = "\
@kernel
def arithmetic(c4: fp8_e4m3[C], c5: fp8_e5m2[C],
               add4: mut fp8_e4m3[P], sub4: mut fp8_e4m3[P], mul4: mut fp8_e4m3[P], div4: mut fp8_e4m3[P],
               max4: mut fp8_e4m3[P], add5: mut fp8_e5m2[P], sub5: mut fp8_e5m2[P], mul5: mut fp8_e5m2[P],
               div5: mut fp8_e5m2[P], min5: mut fp8_e5m2[P],
               neg4: mut fp8_e4m3[C], abs5: mut fp8_e5m2[C], sqrt4: mut fp8_e4m3[C], exp5: mut fp8_e5m2[C]):
    i = launch.thread_id()
    if i < P:
        a = c4[i // C]
        b = c4[i % C]
        add4[i] = a + b
        sub4[i] = a - b
        mul4[i] = a * b
        div4[i] = a / b
        max4[i] = max(a, b)
        p = c5[i // C]
        q = c5[i % C]
        add5[i] = p + q
        sub5[i] = p - q
        mul5[i] = p * q
        div5[i] = p / q
        min5[i] = min(p, q)
    if i < C:
        neg4[i] = -c4[i]
        abs5[i] = abs(c5[i])
        sqrt4[i] = sqrt(c4[i])
        exp5[i] = exp(c5[i])
";

/// NaN-propagating `max` (`min` with `less`), -0 below +0, as
/// `llvm.maximum` and NumPy's `maximum`.
fn extreme(a: f64, b: f64, less: bool) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    let a_first = if a == b {
        a.is_sign_negative() == less
    } else {
        (a < b) == less
    };
    if a_first {
        a
    } else {
        b
    }
}

#[test]
fn fp8_arithmetic_rounds_the_exact_result_once() {
    let device = common::device();
    let loaded = common::load_program(&device, "arithmetic", ARITHMETIC, 3);
    let codes: Vec<u8> = (0..=255).collect();
    let (c, p) = (codes.len(), codes.len() * codes.len());
    let tensor = |dtype: DType, len: usize, fill: Option<&[u8]>| {
        let mut t = Tensor::zeros(dtype, &[len]).unwrap();
        match fill {
            Some(bytes) => t.bytes_mut().copy_from_slice(bytes),
            None => t.bytes_mut().fill(0x5A),
        }
        TensorValue::new(t)
    };
    let mut args = vec![
        tensor(DType::Fp8E4m3, c, Some(&codes)),
        tensor(DType::Fp8E5m2, c, Some(&codes)),
    ];
    let pair_outputs = [E4M3, E4M3, E4M3, E4M3, E4M3, E5M2, E5M2, E5M2, E5M2, E5M2];
    let code_outputs = [E4M3, E5M2, E4M3, E5M2];
    let dtype = |f: Format| if f == E4M3 { DType::Fp8E4m3 } else { DType::Fp8E5m2 };
    args.extend(pair_outputs.iter().map(|&f| tensor(dtype(f), p, None)));
    args.extend(code_outputs.iter().map(|&f| tensor(dtype(f), c, None)));
    let values: Vec<Value> = args.iter().map(|t| Value::Tensor(t.clone())).collect();
    let config = LaunchConfig {
        grid: [p.div_ceil(256) as u32, 1, 1],
        block: [256, 1, 1],
        shared_bytes: 0,
    };
    let dims = [("C".to_string(), c as i64), ("P".to_string(), p as i64)];
    loaded
        .launch_kernel(&device, "arithmetic", config, &values, &dims)
        .unwrap();

    type Op = fn(f64, f64) -> f64;
    let ops: [(&str, Op); 5] = [
        ("+", |a, b| a + b),
        ("-", |a, b| a - b),
        ("*", |a, b| a * b),
        ("/", |a, b| a / b),
        ("max", |a, b| extreme(a, b, false)),
    ];
    let min: Op = |a, b| extreme(a, b, true);
    let e5m2_ops = [ops[0], ops[1], ops[2], ops[3], ("min", min)];
    for (k, (f, (name, op))) in pair_outputs.iter().zip(ops.iter().chain(&e5m2_ops)).enumerate() {
        let names: Vec<String> = (0..p)
            .map(|i| format!("{:#04x} {name} {:#04x}", i / c, i % c))
            .collect();
        let want = (0..p).map(|i| f.encode(op(f.decode((i / c) as u8), f.decode((i % c) as u8)), false));
        same_codes(&format!("{f:?}"), *f, &bytes(&args[2 + k], &device), want, &names);
    }
    type Unary = fn(f64) -> f64;
    let unary: [(&str, Unary); 4] = [("-", |a| -a), ("abs", f64::abs), ("sqrt", f64::sqrt), ("exp", f64::exp)];
    let names: Vec<String> = codes.iter().map(|code| format!("{code:#04x}")).collect();
    for (k, (f, (name, op))) in code_outputs.iter().zip(unary).enumerate() {
        let want = codes.iter().map(|&code| f.encode(op(f.decode(code)), false));
        same_codes(
            &format!("{f:?} {name}"),
            *f,
            &bytes(&args[12 + k], &device),
            want,
            &names,
        );
    }
}
