//! Tessera's own `exp`, `exp2`, `log`, `tanh`, `sin`, `cos` and `erf`
//! (compiler/codegen/src/math.ll), compiled for the CPU and run over every
//! float exponent (`sin` and `cos` too, past 2^20 by the Payne-Hanek
//! reduction): within their documented error of the float64 function
//! (`exp` and `exp2` 2 ulp in f32, the others correctly rounded but for
//! rare ties, so 1 ulp; in f64 `exp` and `exp2` 2 ulp, `erf` 4), with the
//! special values exact. The same IR is what every GPU target runs.

// Each test binary uses part of the shared module.
#[allow(dead_code)]
mod common;

use tessera_runtime::cpu::LaunchConfig;
use tessera_runtime::host::{TensorValue, Value};
use tessera_runtime::tensor::Element;
use tessera_runtime::{Device, DeviceKind, Tensor};

const PROGRAM: &str = "\
@kernel
def math(x: f32[N], e: mut f32[N], l: mut f32[N], t: mut f32[N], p: mut f32[N], r: mut f32[N]):
    i = launch.thread_id()
    if i < N:
        e[i] = exp(x[i])
        l[i] = log(x[i])
        t[i] = tanh(x[i])
        p[i] = exp2(x[i])
        r[i] = erf(x[i])
";

/// Inputs: a sweep of every binade of both signs (with mantissas from a
/// hash), the ranges of exp and exp2 and their edges, and the special
/// values.
fn inputs() -> Vec<f32> {
    let mut x = Vec::new();
    for exponent in 0u32..255 {
        for j in 0u32..64 {
            let mantissa = (j.wrapping_mul(0x9e37_79b9) >> 9) & 0x7f_ffff;
            let bits = (exponent << 23) | mantissa;
            x.push(f32::from_bits(bits));
            x.push(-f32::from_bits(bits));
        }
    }
    for v in (-15_100..=12_900).step_by(7) {
        x.push(v as f32 / 100.0);
    }
    x.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        88.722_83,
        88.722_84,
        -103.972_08,
        -87.336_55,
        127.999_99,
        128.0,
        -149.0,
        -149.5,
        -150.0,
        -126.0,
        f32::MIN_POSITIVE,
        1e-45,
    ]);
    x
}

/// Distance in units in the last place of `want` (rounded to f32) between
/// `got` and the float64 value `want`.
fn ulps(got: f32, want: f64) -> f64 {
    let w = want as f32;
    if got.to_bits() == w.to_bits() || (got.is_nan() && want.is_nan()) {
        return 0.0;
    }
    if !got.is_finite() || !w.is_finite() {
        return f64::INFINITY;
    }
    let ulp = if w == 0.0 {
        f64::from(f32::from_bits(1))
    } else {
        let next = f32::from_bits(w.abs().to_bits() + 1);
        f64::from(next) - f64::from(w.abs())
    };
    (f64::from(got) - want).abs() / ulp
}

/// Runs kernel `name` of `program` on the CPU over `x`, with `outputs`
/// output tensors after it filled with `poison`; their values.
fn run_over<T: Element + Copy>(name: &str, program: &str, x: &[T], outputs: usize, poison: T) -> Vec<Vec<T>> {
    let device = Device::open(DeviceKind::Cpu).unwrap();
    let loaded = common::load_program(&device, name, program, 3);
    let n = x.len();
    let input = TensorValue::new(Tensor::from_slice(&[n], x).unwrap());
    let outs: Vec<TensorValue> = (0..outputs)
        .map(|_| TensorValue::new(Tensor::from_slice(&[n], &vec![poison; n]).unwrap()))
        .collect();
    let mut args = vec![Value::Tensor(input)];
    args.extend(outs.iter().map(|t| Value::Tensor(t.clone())));
    let config = LaunchConfig {
        grid: [n.div_ceil(256) as u32, 1, 1],
        block: [256, 1, 1],
        shared_bytes: 0,
    };
    loaded
        .launch_kernel(&device, name, config, &args, &[("N".to_string(), n as i64)])
        .unwrap();
    outs.iter()
        .map(|t| t.host(&device).unwrap().as_slice::<T>().unwrap().to_vec())
        .collect()
}

/// Asserts that `got[i]` is within `bound` ulp of `reference(x[i])` for
/// every input; prints the worst.
fn within(name: &str, reference: fn(f64) -> f64, bound: f64, x: &[f32], got: &[f32]) {
    let mut worst = (0.0f64, 0usize);
    for (i, (&g, &xi)) in got.iter().zip(x).enumerate() {
        let want = reference(f64::from(xi));
        let err = ulps(g, want);
        assert!(
            err <= bound,
            "{name}({xi:e} = {:#010x}) is {g:e}, the float64 value {want:e}: {err} ulp (bound {bound})",
            xi.to_bits()
        );
        if err > worst.0 {
            worst = (err, i);
        }
    }
    eprintln!("{name}: worst {:.3} ulp at {:e}", worst.0, x[worst.1]);
}

#[test]
fn transcendentals_are_within_their_error_bounds() {
    let x = inputs();
    let got = run_over("math", PROGRAM, &x, 5, f32::NAN);
    within("exp", f64::exp, 2.0, &x, &got[0]);
    within("exp2", f64::exp2, 2.0, &x, &got[3]);
    within("erf", erf_reference, 1.0, &x, &got[4]);
    within("log", f64::ln, 1.0, &x, &got[1]);
    within("tanh", f64::tanh, 1.0, &x, &got[2]);
}

const TRIG: &str = "\
@kernel
def trig(x: f32[N], s: mut f32[N], c: mut f32[N]):
    i = launch.thread_id()
    if i < N:
        s[i] = sin(x[i])
        c[i] = cos(x[i])
";

#[test]
fn sine_and_cosine_are_within_one_ulp_over_every_float() {
    let mut x: Vec<f32> = inputs();
    for k in -40i32..=40 {
        // Multiples of pi/2, where the reduction cancels most.
        x.push((f64::from(k) * std::f64::consts::FRAC_PI_2) as f32);
    }
    // Around the switch to the Payne-Hanek reduction (1.5 * 2^20), and
    // floats close to multiples of pi/2 far out: the nearest float to
    // k * pi/2 for large k, and the largest floats.
    for bits in (1.5f32 * 1048576.0).to_bits() - 4..(1.5f32 * 1048576.0).to_bits() + 4 {
        x.push(f32::from_bits(bits));
    }
    for k in [1e7, 3e9, 7.3e12, 1.1e18, 4.4e25, 1.7e33, 2.1e38] {
        let near = (k * std::f64::consts::FRAC_PI_2) as f32;
        for bits in near.to_bits() - 2..=near.to_bits() + 2 {
            x.push(f32::from_bits(bits));
            x.push(-f32::from_bits(bits));
        }
    }
    x.extend([f32::MAX, -f32::MAX, f32::from_bits(0x7f7f_fffe)]);
    let got = run_over("trig", TRIG, &x, 2, f32::NAN);
    within("sin", f64::sin, 1.0, &x, &got[0]);
    within("cos", f64::cos, 1.0, &x, &got[1]);
    // sin keeps the sign of a zero; infinities give NaN.
    let at = |k: usize, v: f32| got[k][x.iter().position(|&xi| xi.to_bits() == v.to_bits()).unwrap()];
    assert_eq!(at(0, -0.0).to_bits(), (-0.0f32).to_bits());
    for k in 0..2 {
        assert!(at(k, f32::INFINITY).is_nan() && at(k, f32::NEG_INFINITY).is_nan());
    }
}

const DOUBLE: &str = "\
@kernel
def double(x: f64[N], e: mut f64[N], p: mut f64[N], r: mut f64[N]):
    i = launch.thread_id()
    if i < N:
        e[i] = exp(x[i])
        p[i] = exp2(x[i])
        r[i] = erf(x[i])
";

/// The error function by other means than the kernels' series: Maclaurin's
/// series below |x| = 1.5 (alternating, its terms below 2.5), else
/// 1 - erfc(x) with erfc by its continued fraction
/// (`e^(-x²)/√π · 1/(x + ½/(x + 1/(x + (3/2)/(x + …))))`), evaluated from
/// the 2000th level up.
fn erf_reference(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let value = if a < 1.5 {
        let (mut power, mut sum, mut factorial) = (a, a, 1.0f64);
        for n in 1..60 {
            power *= -a * a;
            factorial *= f64::from(n);
            sum += power / (factorial * f64::from(2 * n + 1));
        }
        std::f64::consts::FRAC_2_SQRT_PI * sum
    } else {
        let mut fraction = a;
        for k in (1..2000).rev() {
            fraction = a + f64::from(k) / 2.0 / fraction;
        }
        1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / fraction
    };
    value.copysign(x)
}

/// Distance in units in the last place of `want` between two f64s (the
/// reference from Rust's libm, itself within 1 ulp).
fn ulps64(got: f64, want: f64) -> f64 {
    if got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()) {
        return 0.0;
    }
    if !got.is_finite() || !want.is_finite() {
        return f64::INFINITY;
    }
    let ulp = if want == 0.0 {
        f64::from_bits(1)
    } else {
        f64::from_bits(want.abs().to_bits() + 1) - want.abs()
    };
    (got - want).abs() / ulp
}

#[test]
fn double_exp_exp2_and_erf_are_within_their_bounds() {
    let mut x: Vec<f64> = Vec::new();
    for v in (-1_080_000..=1_030_000).step_by(37) {
        x.push(f64::from(v) / 1000.0 + f64::from(v % 11) * 1e-9);
    }
    x.extend([
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        709.78,
        -745.13,
        1023.999,
        1024.0,
        -1074.0,
        -1075.0,
    ]);
    let got = run_over("double", DOUBLE, &x, 3, f64::NAN);
    let functions = [
        ("exp", f64::exp as fn(f64) -> f64, 2.0),
        ("exp2", f64::exp2, 2.0),
        ("erf", erf_reference, 4.0),
    ];
    for (k, (name, reference, bound)) in functions.into_iter().enumerate() {
        let mut worst = (0.0f64, 0.0f64);
        for (&g, &xi) in got[k].iter().zip(&x) {
            let err = ulps64(g, reference(xi));
            assert!(
                err <= bound,
                "{name}({xi:e}) is {g:e}, the reference gives {:e}: {err} ulp",
                reference(xi)
            );
            if err > worst.0 {
                worst = (err, xi);
            }
        }
        eprintln!("{name} f64: worst {:.3} ulp at {:e}", worst.0, worst.1);
    }
}
