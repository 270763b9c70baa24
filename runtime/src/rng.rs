//! Counter-based random numbers: Philox-4x32-10 (Salmon et al., "Parallel
//! random numbers: as easy as 1, 2, 3", SC 2011), the generator of cuRAND
//! and of PyTorch's CUDA generator.
//!
//! A draw is a pure function of a *key* and an *index*: element `i` of a
//! stream is `philox4x32_10([i as u32, (i >> 32) as u32, 0, 0], key)`, turned
//! into a number as the functions below say. It depends on nothing else —
//! not the thread that computes it, the launch configuration or the device —
//! so the host, the CPU backend and the GPUs draw the same bits.
//!
//! The key of a stream is derived from (function id, stream name, mesh
//! coordinates, step, user seed) by [`stream_key`]; `spec/runtime.md`
//! states the byte encoding so that other implementations can match it.

use crate::tensor::Elem;
use crate::{DType, RunError, Tensor};

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

fn mulhilo(a: u32, b: u32) -> (u32, u32) {
    let p = a as u64 * b as u64;
    ((p >> 32) as u32, p as u32)
}

/// Philox-4x32 with `rounds` rounds (the key is bumped between rounds).
pub fn philox4x32(rounds: u32, counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let mut c = counter;
    let mut k = key;
    for r in 0..rounds {
        if r > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let (hi0, lo0) = mulhilo(M0, c[0]);
        let (hi1, lo1) = mulhilo(M1, c[2]);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
    }
    c
}

/// Philox-4x32-10: the four words drawn at `counter` under `key`.
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    philox4x32(10, counter, key)
}

/// What a stream's key is derived from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamId<'a> {
    /// The function that draws (its name, qualified as the compiler names it).
    pub function: &'a str,
    /// The stream's name (`rng.stream("dropout")`), empty for an unnamed one.
    pub stream: &'a str,
    /// The device's coordinates in the mesh; empty on one device.
    pub mesh: &'a [u32],
    /// The step the runtime supplies (a training step), 0 by default.
    pub step: u64,
    /// The user's seed.
    pub seed: u64,
}

/// The function id of the host's `rand` and `randn`.
pub const HOST_FUNCTION: &str = "tessera.host";

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The Philox key of a stream: FNV-1a-64 over the encoding
/// `"tessera.rng.v1"`, then each string as its length (`u64` LE) and UTF-8
/// bytes (function, stream), the mesh as its length (`u64` LE) and each
/// coordinate (`u32` LE), the step and the seed (`u64` LE); the hash is
/// finished with SplitMix64, and the key is its low and high words.
pub fn stream_key(id: &StreamId<'_>) -> [u32; 2] {
    let mut bytes = b"tessera.rng.v1".to_vec();
    for s in [id.function, id.stream] {
        bytes.extend_from_slice(&(s.len() as u64).to_le_bytes());
        bytes.extend_from_slice(s.as_bytes());
    }
    bytes.extend_from_slice(&(id.mesh.len() as u64).to_le_bytes());
    for c in id.mesh {
        bytes.extend_from_slice(&c.to_le_bytes());
    }
    bytes.extend_from_slice(&id.step.to_le_bytes());
    bytes.extend_from_slice(&id.seed.to_le_bytes());
    let h = splitmix64(tessera_base::fnv1a64(&bytes));
    [h as u32, (h >> 32) as u32]
}

/// The key of the host's `rand(..., seed=s)` and `randn(..., seed=s)`.
pub fn host_key(seed: u64) -> [u32; 2] {
    stream_key(&StreamId {
        function: HOST_FUNCTION,
        stream: "",
        mesh: &[],
        step: 0,
        seed,
    })
}

fn words(key: [u32; 2], index: u64) -> [u32; 4] {
    philox4x32_10([index as u32, (index >> 32) as u32, 0, 0], key)
}

const TWO_M24: f64 = 1.0 / (1u64 << 24) as f64;
const TWO_M53: f64 = 1.0 / (1u64 << 53) as f64;

fn bits53(hi: u32, lo: u32) -> u64 {
    ((hi as u64) << 21) | (lo as u64 >> 11)
}

/// Element `index` of a uniform stream in [0, 1), as `f32`: `(w0 >> 8) * 2^-24`.
pub fn uniform_f32(key: [u32; 2], index: u64) -> f32 {
    ((words(key, index)[0] >> 8) as f64 * TWO_M24) as f32
}

/// Element `index` of a uniform stream in [0, 1), as `f64`:
/// `((w0 << 21) | (w1 >> 11)) * 2^-53`.
pub fn uniform_f64(key: [u32; 2], index: u64) -> f64 {
    let w = words(key, index);
    bits53(w[0], w[1]) as f64 * TWO_M53
}

/// Element `index` of a standard normal stream, by Box–Muller in `f64`
/// from `u1 = ((w0 >> 8) + 1) * 2^-24` in (0, 1] and `u2 = (w1 >> 8) * 2^-24`:
/// `sqrt(-2 ln u1) * cos(2 pi u2)`, rounded to `f32`.
pub fn normal_f32(key: [u32; 2], index: u64) -> f32 {
    let w = words(key, index);
    let u1 = ((w[0] >> 8) as f64 + 1.0) * TWO_M24;
    let u2 = (w[1] >> 8) as f64 * TWO_M24;
    box_muller(u1, u2) as f32
}

/// As [`normal_f32`] with 53-bit uniforms: `u1` from (w0, w1) plus one
/// unit, `u2` from (w2, w3).
pub fn normal_f64(key: [u32; 2], index: u64) -> f64 {
    let w = words(key, index);
    let u1 = (bits53(w[0], w[1]) as f64 + 1.0) * TWO_M53;
    let u2 = bits53(w[2], w[3]) as f64 * TWO_M53;
    box_muller(u1, u2)
}

/// `sqrt(-2 ln u1) · cos(2π u2)` with Tessera's own `ln` and `cos`, the
/// same operations in the same order as `@tsr_box_muller` of the code
/// generator's `rng.ll`, so that kernels and the host draw the same bits.
fn box_muller(u1: f64, u2: f64) -> f64 {
    (-2.0 * log(u1)).sqrt() * cos2pi(u2)
}

/// `ln x` for a normal positive `x` (`u1` is in [2⁻⁵³, 1]): `@tsr_log_f64`
/// of `math.ll` on that path. `x = 2^k · m` with `m` in [√½, √2), and
/// `ln m = 2 atanh(s)`, `s = (m − 1)/(m + 1)`, by its odd series to `s²¹`.
fn log(x: f64) -> f64 {
    const ATANH: [u64; 11] = [
        0x3FA8618618618618,
        0x3FAAF286BCA1AF28,
        0x3FAE1E1E1E1E1E1E,
        0x3FB1111111111111,
        0x3FB3B13B13B13B14,
        0x3FB745D1745D1746,
        0x3FBC71C71C71C71C,
        0x3FC2492492492492,
        0x3FC999999999999A,
        0x3FD5555555555555,
        0x3FF0000000000000,
    ];
    let bits = x.to_bits();
    let e = (bits >> 52) as i64 - 1023;
    let m0 = f64::from_bits((bits & 0x000F_FFFF_FFFF_FFFF) | 0x3FF0_0000_0000_0000);
    let big = m0 >= f64::from_bits(0x3FF6A09E667F3BCD);
    let m = if big { m0 * 0.5 } else { m0 };
    let k = e + i64::from(big);
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let lm = s * horner(s2, &ATANH) * 2.0;
    let kf = k as f64;
    (lm + kf * f64::from_bits(0x3DEA39EF35793C76)) + kf * f64::from_bits(0x3FE62E42FEE00000)
}

/// The polynomial with `coefficients` (bit patterns, highest power first)
/// at `z`, in Horner form: `((c0·z + c1)·z + c2)…`.
fn horner(z: f64, coefficients: &[u64]) -> f64 {
    let mut p = 0.0;
    for (i, &c) in coefficients.iter().enumerate() {
        if i > 0 {
            p *= z;
        }
        p += f64::from_bits(c);
    }
    p
}

/// `cos(2π t)` for `t` a multiple of 2⁻⁵³ in [0, 1) (`u2`): `4t` is exact,
/// so the quadrant `n = ⌊4t + ½⌋` and the rest `r = 4t − n` in [−½, ½]
/// are too; with `x = r · π/2` in [−π/4, π/4], `cos(2πt)` is `cos x`,
/// `−sin x`, `−cos x` or `sin x` for `n mod 4` = 0 … 3, each by its Taylor
/// series (to `x¹⁷`, `x¹⁸`) in Horner form. `@tsr_cos2pi_f64` of `rng.ll`.
fn cos2pi(t: f64) -> f64 {
    const SIN: [u64; 8] = [
        0x3CE952C77030AD4A,
        0xBD6AE7F3E733B81F,
        0x3DE6124613A86D09,
        0xBE5AE64567F544E4,
        0x3EC71DE3A556C734,
        0xBF2A01A01A01A01A,
        0x3F81111111111111,
        0xBFC5555555555555,
    ];
    const COS: [u64; 9] = [
        0xBCA6827863B97D97,
        0x3D2AE7F3E733B81F,
        0xBDA93974A8C07C9D,
        0x3E21EED8EFF8D898,
        0xBE927E4FB7789F5C,
        0x3EFA01A01A01A01A,
        0xBF56C16C16C16C17,
        0x3FA5555555555555,
        0xBFE0000000000000,
    ];
    let s = t * 4.0;
    let n = (s + 0.5).floor();
    let x = (s - n) * f64::from_bits(0x3FF921FB54442D18);
    let z = x * x;
    let sin = x + x * (z * horner(z, &SIN));
    let cos = 1.0 + z * horner(z, &COS);
    match (n as i64) & 3 {
        0 => cos,
        1 => -sin,
        2 => -cos,
        _ => sin,
    }
}

/// The distribution a tensor is filled from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    Uniform,
    Normal,
}

/// A tensor of `dtype` whose element `i` (C order) is element `i` of the
/// stream `key`. Uniform `f16`, `bf16`, `fp8_e4m3` and `fp8_e5m2` values
/// use the top 11, 8, 4 and 3 bits of `w0` (`(w0 >> 21) * 2^-11`, …),
/// which they hold exactly, so they stay below 1; normal ones are the `f32`
/// values rounded.
pub fn fill(dtype: DType, shape: &[usize], key: [u32; 2], dist: Distribution) -> Result<Tensor, RunError> {
    if !dtype.is_float() {
        return Err(RunError::value(format!(
            "random values are floats; `{dtype}` is not a float dtype"
        )));
    }
    let mut t = Tensor::zeros(dtype, shape)?;
    for i in 0..t.numel() {
        let n = i as u64;
        let v = match (dist, dtype) {
            (Distribution::Uniform, DType::F64) => uniform_f64(key, n),
            (Distribution::Uniform, DType::F16) => (words(key, n)[0] >> 21) as f64 / 2048.0,
            (Distribution::Uniform, DType::Bf16) => (words(key, n)[0] >> 24) as f64 / 256.0,
            (Distribution::Uniform, DType::Fp8E4m3) => (words(key, n)[0] >> 28) as f64 / 16.0,
            (Distribution::Uniform, DType::Fp8E5m2) => (words(key, n)[0] >> 29) as f64 / 8.0,
            (Distribution::Uniform, _) => uniform_f32(key, n) as f64,
            (Distribution::Normal, DType::F64) => normal_f64(key, n),
            (Distribution::Normal, _) => normal_f32(key, n) as f64,
        };
        t.set(i, Elem::Float(v));
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The known-answer vectors of Random123 (`kat_vectors`), for 7 and 10 rounds.
    #[test]
    fn matches_the_random123_known_answers() {
        type Case = (u32, [u32; 4], [u32; 2], [u32; 4]);
        let cases: [Case; 6] = [
            (10, [0; 4], [0; 2], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]),
            (
                10,
                [u32::MAX; 4],
                [u32::MAX; 2],
                [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
            ),
            (
                10,
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0],
                [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
            ),
            (7, [0; 4], [0; 2], [0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48]),
            (
                7,
                [u32::MAX; 4],
                [u32::MAX; 2],
                [0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662],
            ),
            (
                7,
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0],
                [0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a],
            ),
        ];
        for (rounds, counter, key, expected) in cases {
            assert_eq!(
                philox4x32(rounds, counter, key),
                expected,
                "{rounds} rounds at {counter:x?}"
            );
        }
        assert_eq!(philox4x32_10([0; 4], [0; 2]), cases[0].3);
    }

    #[test]
    fn keys_separate_every_component() {
        let base = StreamId {
            function: "f",
            stream: "init",
            mesh: &[0, 1],
            step: 3,
            seed: 42,
        };
        let k = stream_key(&base);
        assert_eq!(k, stream_key(&base.clone()), "a key is a pure function");
        let variants = [
            StreamId {
                function: "g",
                ..base.clone()
            },
            StreamId {
                stream: "drop",
                ..base.clone()
            },
            StreamId {
                mesh: &[1, 0],
                ..base.clone()
            },
            StreamId {
                mesh: &[0, 1, 0],
                ..base.clone()
            },
            StreamId {
                step: 4,
                ..base.clone()
            },
            StreamId {
                seed: 43,
                ..base.clone()
            },
            // Length prefixes keep ("ab", "") and ("a", "b") apart.
            StreamId {
                function: "finit",
                stream: "",
                ..base.clone()
            },
        ];
        for v in &variants {
            assert_ne!(stream_key(v), k, "{v:?}");
        }
    }

    /// Moments of a million draws against the distribution's, within
    /// six standard errors.
    #[test]
    fn uniform_and_normal_moments() {
        let key = host_key(7);
        let n = 1 << 20;
        let moments = |f: &dyn Fn(u64) -> f64| {
            let (mut s1, mut s2) = (0.0, 0.0);
            for i in 0..n {
                let x = f(i);
                s1 += x;
                s2 += x * x;
            }
            let mean = s1 / n as f64;
            (mean, s2 / n as f64 - mean * mean)
        };
        let se = 6.0 / (n as f64).sqrt();
        let (m, v) = moments(&|i| uniform_f32(key, i) as f64);
        assert!((m - 0.5).abs() < se * (1.0f64 / 12.0).sqrt(), "uniform mean {m}");
        assert!((v - 1.0 / 12.0).abs() < 0.002, "uniform variance {v}");
        let (m, v) = moments(&|i| uniform_f64(key, i));
        assert!((m - 0.5).abs() < se, "uniform f64 mean {m}");
        assert!((v - 1.0 / 12.0).abs() < 0.002);
        let (m, v) = moments(&|i| normal_f32(key, i) as f64);
        assert!(m.abs() < se, "normal mean {m}");
        assert!((v - 1.0).abs() < 0.01, "normal variance {v}");
        let (m, v) = moments(&|i| normal_f64(key, i));
        assert!(m.abs() < se && (v - 1.0).abs() < 0.01);
    }

    /// Tessera's own `ln` and `cos(2π t)` against the platform's, on the
    /// inputs Box–Muller gives them: within 2 and 4 units in the last place
    /// (`cos` of `f64` near its zeros is compared absolutely).
    #[test]
    fn own_log_and_cosine_are_accurate() {
        let ulp = |x: f64| f64::from_bits(x.abs().to_bits() + 1) - x.abs();
        for i in 0..1u64 << 16 {
            let w = philox4x32_10([i as u32, 0, 0, 0], [9, 9]);
            for u in [
                (bits53(w[0], w[1]) as f64 + 1.0) * TWO_M53,
                ((w[2] >> 8) as f64 + 1.0) * TWO_M24,
            ] {
                let (ours, libm) = (log(u), u.ln());
                assert!((ours - libm).abs() <= 2.0 * ulp(libm), "ln {u}: {ours} vs {libm}");
            }
            let t = (w[3] >> 8) as f64 * TWO_M24;
            let (ours, libm) = (cos2pi(t), (std::f64::consts::TAU * t).cos());
            assert!((ours - libm).abs() <= 4.0 * ulp(1.0), "cos(2π·{t}): {ours} vs {libm}");
        }
        assert_eq!(log(1.0), 0.0);
        for (t, c) in [(0.0, 1.0), (0.25, 0.0), (0.5, -1.0), (0.75, 0.0)] {
            assert_eq!(cos2pi(t), c, "the quadrant points are exact");
        }
    }

    #[test]
    fn fills_are_deterministic_and_in_range() {
        let a = fill(DType::F32, &[1000], host_key(1), Distribution::Uniform).unwrap();
        let b = fill(DType::F32, &[1000], host_key(1), Distribution::Uniform).unwrap();
        let c = fill(DType::F32, &[1000], host_key(2), Distribution::Uniform).unwrap();
        assert_eq!(a.bytes(), b.bytes());
        assert_ne!(a.bytes(), c.bytes());
        assert_eq!(
            a.get(5).as_f64(),
            uniform_f32(host_key(1), 5) as f64,
            "element i is draw i"
        );
        for dtype in [DType::F16, DType::Bf16, DType::F32, DType::F64] {
            let t = fill(dtype, &[4096], host_key(3), Distribution::Uniform).unwrap();
            assert!(t.to_f64_vec().iter().all(|&x| (0.0..1.0).contains(&x)), "{dtype}");
        }
        assert!(fill(DType::I32, &[4], host_key(3), Distribution::Normal).is_err());
    }
}
