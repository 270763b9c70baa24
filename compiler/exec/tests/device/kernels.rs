//! The hand-written kernels of `tests/kernels/` — shared memory and
//! barriers, warp shuffles and votes, every kind of atomic, 2-D blocks and
//! grids — run on the test device and checked against references computed
//! here on fresh random inputs: float64 for float results, exact for
//! integers. Outputs are poisoned first (NaN, or 0xA5 bytes for integers),
//! except where a kernel accumulates into its output, which then starts
//! from values the reference includes.

use tessera_runtime::cpu::LaunchConfig;
use tessera_runtime::host::{TensorValue, Value};
use tessera_runtime::tensor::Elem;
use tessera_runtime::{DType, Device, Tensor};

use tessera_runtime::host::print::float_repr;

use crate::examples::{bf16_tensor, check, f32_tensor, poisoned, program, values, Rng};

/// The values of an integer tensor.
fn ints(device: &Device, t: &TensorValue) -> Vec<i64> {
    let host = t.host(device).unwrap();
    (0..host.numel()).map(|i| host.get(i).as_i64()).collect()
}

fn int_tensor(values: &[i32]) -> TensorValue {
    TensorValue::new(Tensor::from_slice(&[values.len()], values).unwrap())
}

/// Launches `kernel` on a 1-D grid of 1-D blocks, its symbolic dims bound
/// by name; gives what it printed.
fn run(
    device: &Device,
    loaded: &tessera_exec::Loaded,
    kernel: &str,
    grid: u32,
    block: u32,
    args: &[Value],
    dims: &[(&str, usize)],
) -> String {
    let config = LaunchConfig {
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        shared_bytes: 0,
    };
    let dims: Vec<(String, i64)> = dims.iter().map(|&(d, v)| (d.to_string(), v as i64)).collect();
    loaded
        .launch_kernel(device, kernel, config, args, &dims)
        .unwrap_or_else(|e| panic!("{kernel}: {e:?}"))
}

/// `f32` rounding error bounds of a sum: `scale` ulps of the sum of magnitudes.
fn sum_bound(abs: f64, scale: f64) -> f64 {
    scale * f64::from(f32::EPSILON) * abs + f64::from(f32::MIN_POSITIVE)
}

#[test]
fn histogram_counts_and_ranks_each_value() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "histogram");
    let n = 500 + rng.below(4000) as usize;
    let bins = 5 + rng.below(60) as usize;
    let xs: Vec<i32> = (0..n).map(|_| rng.below(100_000) as i32).collect();
    let hist = int_tensor(&vec![0; bins]);
    let order = poisoned(DType::I32, &[n]);
    let args = [
        Value::Tensor(int_tensor(&xs)),
        Value::Tensor(hist.clone()),
        Value::Tensor(order.clone()),
    ];
    let grid = n.div_ceil(128) as u32;
    run(
        &device,
        &loaded,
        "histogram",
        grid,
        128,
        &args,
        &[("N", n), ("B", bins)],
    );
    let (got, order) = (ints(&device, &hist), ints(&device, &order));
    for (b, &count) in got.iter().enumerate() {
        let members: Vec<usize> = (0..n).filter(|&i| xs[i] as usize % bins == b).collect();
        assert_eq!(count, members.len() as i64, "bin {b} (seed {seed:#x})");
        // The old counts the adds gave back are 0, 1, … in some order.
        let mut ranks: Vec<i64> = members.iter().map(|&i| order[i]).collect();
        ranks.sort_unstable();
        assert!(
            ranks.iter().enumerate().all(|(k, &r)| r == k as i64),
            "bin {b} (seed {seed:#x}): the old values are {ranks:?}"
        );
    }
}

#[test]
fn block_sum_reduces_through_shuffles_and_shared_memory() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "block_sum");
    let n = 100 + rng.below(6000) as usize;
    let groups = n.div_ceil(256);
    let (x, xs) = f32_tensor(&mut rng, &[n], 10.0);
    let out = poisoned(DType::F32, &[groups]);
    let args = [Value::Tensor(x), Value::Tensor(out.clone())];
    run(
        &device,
        &loaded,
        "block_sum",
        groups as u32,
        256,
        &args,
        &[("N", n), ("G", groups)],
    );
    let want: Vec<f64> = xs.chunks(256).map(|c| c.iter().sum()).collect();
    let bound: Vec<f64> = xs
        .chunks(256)
        .map(|c| sum_bound(c.iter().map(|x| x.abs()).sum(), 8.0))
        .collect();
    check("block_sum", seed, &values(&device, &out), &want, &bound);
}

#[test]
fn block_scan_gives_prefix_sums_of_each_block() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "block_scan");
    let n = 1 + rng.below(2000) as usize;
    let (x, xs) = f32_tensor(&mut rng, &[n], 4.0);
    let y = poisoned(DType::F32, &[n]);
    let args = [Value::Tensor(x), Value::Tensor(y.clone())];
    let grid = n.div_ceil(128) as u32;
    run(&device, &loaded, "block_scan", grid, 128, &args, &[("N", n)]);
    let mut want = Vec::with_capacity(n);
    let mut bound = Vec::with_capacity(n);
    for block in xs.chunks(128) {
        let (mut sum, mut abs) = (0.0, 0.0);
        for x in block {
            sum += x;
            abs += x.abs();
            want.push(sum);
            // Seven levels of pairwise sums.
            bound.push(sum_bound(abs, 8.0));
        }
    }
    check("block_scan", seed, &values(&device, &y), &want, &bound);
}

#[test]
fn transpose_moves_tiles_through_shared_memory_on_a_2d_grid() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "transpose");
    let (m, n) = (1 + rng.below(100) as usize, 1 + rng.below(100) as usize);
    let (a, av) = f32_tensor(&mut rng, &[m, n], 100.0);
    let b = poisoned(DType::F32, &[n, m]);
    let args = [Value::Tensor(a), Value::Tensor(b.clone())];
    let grid = [n.div_ceil(32) as u32, m.div_ceil(32) as u32, 1];
    let config = LaunchConfig {
        grid,
        block: [32, 8, 1],
        shared_bytes: 0,
    };
    let dims = [("M".to_string(), m as i64), ("N".to_string(), n as i64)];
    loaded
        .launch_kernel(&device, "transpose", config, &args, &dims)
        .unwrap();
    let want: Vec<f64> = (0..n * m).map(|k| av[(k % m) * n + k / m]).collect();
    check(
        &format!("transpose {m}x{n}"),
        seed,
        &values(&device, &b),
        &want,
        &vec![0.0; n * m],
    );
}

#[test]
fn row_softmax_reduces_each_row_in_shared_memory() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "row_softmax");
    let (rows, cols) = (1 + rng.below(8) as usize, 1 + rng.below(700) as usize);
    let (x, xs) = f32_tensor(&mut rng, &[rows, cols], 8.0);
    let y = poisoned(DType::F32, &[rows, cols]);
    let args = [Value::Tensor(x), Value::Tensor(y.clone())];
    run(
        &device,
        &loaded,
        "row_softmax",
        rows as u32,
        128,
        &args,
        &[("R", rows), ("C", cols)],
    );
    let mut want = Vec::with_capacity(rows * cols);
    for row in xs.chunks(cols) {
        let top = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = row.iter().map(|x| (x - top).exp()).sum();
        want.extend(row.iter().map(|x| (x - top).exp() / total));
    }
    // A few ulps for each exponential and the division, and the sum's
    // rounding, which its terms share.
    let bound: Vec<f64> = want
        .iter()
        .map(|w| w * 16.0 * f64::from(f32::EPSILON) + 1e-30)
        .collect();
    check("row_softmax", seed, &values(&device, &y), &want, &bound);
}

#[test]
fn warp_scan_shuffles_up_and_broadcasts_the_total() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "warp_scan");
    let n = 1 + rng.below(1000) as usize;
    let (x, xs) = f32_tensor(&mut rng, &[n], 4.0);
    let (y, totals) = (poisoned(DType::F32, &[n]), poisoned(DType::F32, &[n]));
    let args = [
        Value::Tensor(x),
        Value::Tensor(y.clone()),
        Value::Tensor(totals.clone()),
    ];
    let grid = n.div_ceil(128) as u32;
    run(&device, &loaded, "warp_scan", grid, 128, &args, &[("N", n)]);
    let (mut want, mut want_totals, mut bound, mut total_bound) = (vec![], vec![], vec![], vec![]);
    for warp in xs.chunks(32) {
        let (mut sum, mut abs) = (0.0, 0.0);
        for x in warp {
            sum += x;
            abs += x.abs();
            want.push(sum);
            bound.push(sum_bound(abs, 6.0));
        }
        want_totals.extend(std::iter::repeat_n(sum, warp.len()));
        total_bound.extend(std::iter::repeat_n(sum_bound(abs, 6.0), warp.len()));
    }
    check("warp_scan", seed, &values(&device, &y), &want, &bound);
    check(
        "warp_scan totals",
        seed,
        &values(&device, &totals),
        &want_totals,
        &total_bound,
    );
}

#[test]
fn ballot_masks_count_and_rank_the_voting_lanes() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "ballot");
    let n = 1 + rng.below(300) as usize;
    let (x, xs) = f32_tensor(&mut rng, &[n], 1.0);
    let outputs = [
        poisoned(DType::U64, &[n]),
        poisoned(DType::I32, &[n]),
        poisoned(DType::I32, &[n]),
        poisoned(DType::I32, &[n]),
    ];
    let mut args = vec![Value::Tensor(x)];
    args.extend(outputs.iter().map(|t| Value::Tensor(t.clone())));
    let grid = n.div_ceil(64) as u32;
    run(&device, &loaded, "ballot", grid, 64, &args, &[("N", n)]);
    let got: Vec<Vec<i64>> = outputs.iter().map(|t| ints(&device, t)).collect();
    for i in 0..n {
        let warp = i / 32 * 32;
        // Lanes past the end vote with the value 0.
        let lane_value = |j: usize| xs.get(warp + j).copied().unwrap_or(0.0);
        let mask = (0..32).filter(|&j| lane_value(j) > 0.0).fold(0u64, |m, j| m | 1 << j);
        let below = mask & ((1u64 << (i % 32)) - 1);
        let flags =
            i64::from((0..32).any(|j| lane_value(j) > 0.5)) + 2 * i64::from((0..32).all(|j| lane_value(j) > -0.5));
        let want = [
            mask as i64,
            i64::from(mask.count_ones()),
            i64::from(below.count_ones()),
            flags,
        ];
        for ((name, got), want) in ["mask", "count", "rank", "any/all"].iter().zip(&got).zip(want) {
            assert_eq!(got[i], want, "{name} of lane {i} (seed {seed:#x})");
        }
    }
}

#[test]
fn integer_atomics_combine_every_value_and_compact_a_stream() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "atomics");
    let n = 1 + rng.below(3000) as usize;
    let xs: Vec<i32> = (0..n).map(|_| rng.below(2_000_001) as i32 - 1_000_000).collect();
    let start = [i32::MIN, i32::MAX, -1, 0, rng.below(1 << 30) as i32];
    let acc = int_tensor(&start);
    let kept = poisoned(DType::I32, &[n]);
    let count = int_tensor(&[0]);
    let args = [
        Value::Tensor(int_tensor(&xs)),
        Value::Tensor(acc.clone()),
        Value::Tensor(kept.clone()),
        Value::Tensor(count.clone()),
    ];
    let grid = n.div_ceil(128) as u32;
    run(&device, &loaded, "int_atomics", grid, 128, &args, &[("N", n)]);
    let want = [
        xs.iter().copied().fold(start[0], i32::max),
        xs.iter().copied().fold(start[1], i32::min),
        xs.iter().fold(start[2], |a, x| a & x),
        xs.iter().fold(start[3], |a, x| a | x),
        xs.iter().fold(start[4], |a, x| a ^ x),
    ];
    let got: Vec<i64> = ints(&device, &acc);
    for (k, name) in ["max", "min", "and", "or", "xor"].iter().enumerate() {
        assert_eq!(got[k], i64::from(want[k]), "atomic {name} (seed {seed:#x})");
    }
    let mut multiples: Vec<i64> = xs.iter().filter(|&&x| x % 3 == 0).map(|&x| i64::from(x)).collect();
    let count = ints(&device, &count)[0] as usize;
    assert_eq!(count, multiples.len(), "compacted count (seed {seed:#x})");
    let kept = ints(&device, &kept);
    let mut compacted = kept[..count].to_vec();
    compacted.sort_unstable();
    multiples.sort_unstable();
    assert_eq!(compacted, multiples, "compacted values (seed {seed:#x})");
    let poison = i64::from(i32::from_le_bytes([0xA5; 4]));
    assert!(
        kept[count..].iter().all(|&k| k == poison),
        "a slot past the count was written (seed {seed:#x})"
    );
}

#[test]
fn grids_past_65535_along_y_or_z_give_every_block_its_logical_ids() {
    let (device, loaded) = program("tests/kernels", "grid_ids");
    for grid in [[3u32, 5, 7], [2, 65537, 1], [3, 2, 65536]] {
        let [x, y, z] = grid.map(|g| g as usize);
        let out = poisoned(DType::I32, &[z, y, x, 4]);
        let config = LaunchConfig {
            grid,
            block: [1, 1, 1],
            shared_bytes: 0,
        };
        let dims = [("X", x), ("Y", y), ("Z", z)].map(|(d, v)| (d.to_string(), v as i64));
        loaded
            .launch_kernel(&device, "grid_ids", config, &[Value::Tensor(out.clone())], &dims)
            .unwrap_or_else(|e| panic!("grid {grid:?}: {e:?}"));
        let got = ints(&device, &out);
        let blocks = x * y * z;
        for (linear, record) in got.chunks_exact(4).enumerate() {
            let want = [linear, x, y, z].map(|v| v as i64);
            assert_eq!(record, want, "grid {grid:?}, block {linear} of {blocks}");
        }
    }
}

/// A tensor of `dtype` holding `xs` (rounded to it); gives it and what it holds.
fn tensor_of(device: &Device, dtype: DType, xs: &[f64]) -> (TensorValue, Vec<f64>) {
    let mut t = Tensor::zeros(dtype, &[xs.len()]).unwrap();
    for (i, &x) in xs.iter().enumerate() {
        let e = if dtype.is_float() {
            Elem::Float(x)
        } else {
            Elem::Int(x as i64)
        };
        t.set(i, e);
    }
    let t = TensorValue::new(t);
    let held = values(device, &t);
    (t, held)
}

#[test]
fn narrow_atomics_update_their_own_bytes_of_a_shared_word() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "atomics");
    let n = 1 + rng.below(2000) as usize;
    let random =
        |rng: &mut Rng, lo: f64, span: u64| -> Vec<f64> { (0..n).map(|_| lo + rng.below(span) as f64).collect() };
    let (x, xs) = tensor_of(&device, DType::I8, &random(&mut rng, -128.0, 256));
    let (y, ys) = tensor_of(&device, DType::U16, &random(&mut rng, 0.0, 65536));
    let floats: Vec<f64> = (0..n).map(|_| rng.uniform() * 1000.0).collect();
    let (z, zs) = tensor_of(&device, DType::F16, &floats);
    let (w, ws) = tensor_of(&device, DType::Bf16, &floats);
    let (bytes, _) = tensor_of(&device, DType::I8, &[5.0, -128.0, 127.0, -1.0]);
    let (halves, _) = tensor_of(&device, DType::U16, &[0.0, 65535.0, 0.0, 7.0]);
    let (f, _) = tensor_of(&device, DType::F16, &[-65504.0, 65504.0, 0.0]);
    let (g, _) = tensor_of(&device, DType::Bf16, &[-1e30, 1e30]);
    let flag_values = [-7.0, 0.0, 100.0, -128.0];
    let (flags, _) = tensor_of(&device, DType::I8, &flag_values);
    let seen = poisoned(DType::I8, &[n]);
    let args: Vec<Value> = [&x, &y, &z, &w, &bytes, &halves, &f, &g, &flags, &seen]
        .iter()
        .map(|t| Value::Tensor((*t).clone()))
        .collect();
    run(
        &device,
        &loaded,
        "narrow_atomics",
        n.div_ceil(128) as u32,
        128,
        &args,
        &[("N", n)],
    );
    let xi: Vec<i64> = xs.iter().map(|&v| v as i64).collect();
    let yi: Vec<i64> = ys.iter().map(|&v| v as i64).collect();
    let wrap8 = |v: i64| i64::from(v as i8);
    let want_bytes = [
        wrap8(xi.iter().sum::<i64>() + 5),
        xi.iter().copied().fold(-128, i64::max),
        xi.iter().copied().fold(127, i64::min),
        xi.iter().fold(-1, |a, v| a ^ v),
    ];
    assert_eq!(
        ints(&device, &bytes),
        want_bytes,
        "i8 add, max, min, xor (seed {seed:#x})"
    );
    let want_halves = [
        yi.iter().copied().fold(0, i64::max),
        yi.iter().copied().fold(65535, i64::min),
        yi.iter().fold(0, |a, v| a | v),
        (yi.iter().sum::<i64>() + 7) % 65536,
    ];
    assert_eq!(
        ints(&device, &halves),
        want_halves,
        "u16 max, min, or, add (seed {seed:#x})"
    );
    let extremes = |v: &[f64]| {
        (
            v.iter().copied().fold(f64::MIN, f64::max),
            v.iter().copied().fold(f64::MAX, f64::min),
        )
    };
    let (zmax, zmin) = extremes(&zs);
    assert_eq!(
        values(&device, &f),
        [zmax, zmin, n as f64],
        "f16 max, min, count (seed {seed:#x})"
    );
    let (wmax, wmin) = extremes(&ws);
    assert_eq!(values(&device, &g), [wmax, wmin], "bf16 max, min (seed {seed:#x})");
    let want_seen: Vec<i64> = (0..n).map(|i| flag_values[i % 4] as i64).collect();
    assert_eq!(
        ints(&device, &seen),
        want_seen,
        "idempotent or gives the value (seed {seed:#x})"
    );
    let flags_after: Vec<i64> = flag_values.iter().map(|&v| v as i64).collect();
    assert_eq!(
        ints(&device, &flags),
        flags_after,
        "idempotent or changed a flag (seed {seed:#x})"
    );
}

#[test]
fn float_atomics_keep_the_extremes_and_multiply_by_compare_and_swap() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "atomics");
    // From 1024 threads on, `i << 21` reaches 2^31: a signed max would differ.
    let n = 1100 + rng.below(2000) as usize;
    let (x, xs) = f32_tensor(&mut rng, &[n], 1000.0);
    let hi = TensorValue::new(Tensor::from_slice(&[1], &[f32::MIN]).unwrap());
    let lo = TensorValue::new(Tensor::from_slice(&[1], &[f32::MAX]).unwrap());
    let last = TensorValue::new(Tensor::from_slice(&[1], &[0u32]).unwrap());
    let args = [
        Value::Tensor(x),
        Value::Tensor(hi.clone()),
        Value::Tensor(lo.clone()),
        Value::Tensor(last.clone()),
    ];
    let grid = n.div_ceil(128) as u32;
    run(&device, &loaded, "float_atomics", grid, 128, &args, &[("N", n)]);
    let top = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let bottom = xs.iter().copied().fold(f64::INFINITY, f64::min);
    check("atomic max", seed, &values(&device, &hi), &[top], &[0.0]);
    check("atomic min", seed, &values(&device, &lo), &[bottom], &[0.0]);
    let top_bits = (0..n as u32).map(|i| i.wrapping_shl(21)).max().unwrap_or(0);
    assert_eq!(
        ints(&device, &last),
        [i64::from(top_bits)],
        "unsigned atomic max (seed {seed:#x})"
    );

    let m = 1 + rng.below(256) as usize;
    let factors: Vec<f32> = (0..m).map(|_| (1.0 + 0.1 * rng.uniform()) as f32).collect();
    let prod = TensorValue::new(Tensor::from_slice(&[1], &[1.0f32]).unwrap());
    let args = [
        Value::Tensor(TensorValue::new(Tensor::from_slice(&[m], &factors).unwrap())),
        Value::Tensor(prod.clone()),
    ];
    run(
        &device,
        &loaded,
        "product",
        m.div_ceil(64) as u32,
        64,
        &args,
        &[("N", m)],
    );
    let want: f64 = factors.iter().map(|&f| f64::from(f)).product();
    // One rounding per factor, in whatever order the threads won.
    let bound = want * (m as f64 + 1.0) * f64::from(f32::EPSILON);
    check(
        "compare-and-swap product",
        seed,
        &values(&device, &prod),
        &[want],
        &[bound],
    );
}

#[test]
fn device_functions_are_inlined_with_their_barriers_returns_and_defaults() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "device_functions");
    let rows = 1 + rng.below(100) as usize;
    let n = 16 * rows;
    let groups = n.div_ceil(128);
    let (x, xs) = f32_tensor(&mut rng, &[n], 1.0);
    let threshold = (0.5 + 0.45 * (rng.uniform() + 1.0) / 2.0) as f32;
    let exponent = rng.below(12) as i64;
    let (sums, powers, firsts) = (
        poisoned(DType::F32, &[groups]),
        poisoned(DType::F32, &[n]),
        poisoned(DType::I32, &[rows]),
    );
    let args = [
        Value::Tensor(x),
        Value::Tensor(sums.clone()),
        Value::Tensor(powers.clone()),
        Value::Tensor(firsts.clone()),
        Value::Float(f64::from(threshold)),
        Value::Int(exponent),
    ];
    run(
        &device,
        &loaded,
        "device_functions",
        groups as u32,
        128,
        &args,
        &[("N", n), ("G", groups), ("R", rows)],
    );
    let want: Vec<f64> = xs.chunks(128).map(|c| c.iter().sum()).collect();
    let bound: Vec<f64> = xs
        .chunks(128)
        .map(|c| sum_bound(c.iter().map(|x| x.abs()).sum(), 8.0))
        .collect();
    check(
        "block_sum through device functions",
        seed,
        &values(&device, &sums),
        &want,
        &bound,
    );
    let want: Vec<f64> = xs.iter().map(|x| x.powi(exponent as i32) + x.powi(3)).collect();
    // Repeated squaring rounds once per step, the cube twice.
    let bound: Vec<f64> = xs
        .iter()
        .map(|x| 16.0 * f64::from(f32::EPSILON) * (x.abs().powi(exponent as i32) + x.abs().powi(3)) + 1e-30)
        .collect();
    check("power and cube", seed, &values(&device, &powers), &want, &bound);
    let want: Vec<i64> = xs
        .chunks(16)
        .map(|row| {
            row.iter()
                .position(|&v| v > f64::from(threshold))
                .map_or(-1, |k| k as i64)
        })
        .collect();
    assert_eq!(ints(&device, &firsts), want, "first_above (seed {seed:#x})");
}

#[test]
fn and_or_and_conditional_expressions_evaluate_only_what_they_must() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "python_semantics");
    let n = 1 + rng.below(200) as usize;
    // A block past the end: its threads' `x[i]` must never be read.
    let blocks = n.div_ceil(64) + 1;
    let (x, xs) = f32_tensor(&mut rng, &[n], 1.0);
    let (hits, count) = (poisoned(DType::I32, &[n]), int_tensor(&[0; 4]));
    let args = [
        Value::Tensor(x),
        Value::Tensor(hits.clone()),
        Value::Tensor(count.clone()),
    ];
    run(&device, &loaded, "guards", blocks as u32, 64, &args, &[("N", n)]);
    let want: Vec<i64> = xs.iter().map(|&v| i64::from(v > 0.0)).collect();
    assert_eq!(ints(&device, &hits), want, "guarded hits (seed {seed:#x})");
    let b = blocks as i64;
    assert_eq!(
        ints(&device, &count),
        [4 * b, 4 * b, 4 * b, 60 * b],
        "side effects (seed {seed:#x})"
    );
}

#[test]
fn tuple_assignment_and_negative_steps_follow_python() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "python_semantics");
    let n = 2 + rng.below(88) as usize;
    let (fib, down) = (poisoned(DType::I64, &[n]), poisoned(DType::I32, &[n]));
    let args = [Value::Tensor(fib.clone()), Value::Tensor(down.clone())];
    run(&device, &loaded, "sequences", 1, 128, &args, &[("N", n)]);
    let mut want = vec![0i64; n];
    let (mut a, mut b) = (0i64, 1i64);
    for w in want.iter_mut() {
        *w = a;
        (a, b) = (b, a + b);
    }
    assert_eq!(ints(&device, &fib), want, "a, b = b, a + b (seed {seed:#x})");
    let want: Vec<i64> = (0..n as i64).map(|i| i % 2).collect();
    assert_eq!(ints(&device, &down), want, "range(i, -1, -2) (seed {seed:#x})");
}

#[test]
fn powers_divisions_and_conversions_follow_python() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "python_semantics");
    let n = 1 + rng.below(500) as usize;
    let (x, xs) = f32_tensor(&mut rng, &[n], 4.0);
    let ns: Vec<i32> = (0..n).map(|_| rng.below(2001) as i32 - 1000).collect();
    let outputs: Vec<TensorValue> = [
        DType::F32,
        DType::F32,
        DType::I32,
        DType::F32,
        DType::F32,
        DType::F32,
        DType::I32,
    ]
    .into_iter()
    .map(|d| poisoned(d, &[n]))
    .collect();
    let mut args = vec![Value::Tensor(x), Value::Tensor(int_tensor(&ns))];
    args.extend(outputs.iter().map(|t| Value::Tensor(t.clone())));
    run(
        &device,
        &loaded,
        "arithmetic",
        n.div_ceil(128) as u32,
        128,
        &args,
        &[("N", n)],
    );
    let ulp = |w: f64, k: f64| k * f64::from(f32::EPSILON) * w.abs() + 1e-30;
    let pow2: Vec<f64> = xs.iter().map(|v| v * v).collect();
    check(
        "v ** 2",
        seed,
        &values(&device, &outputs[0]),
        &pow2,
        &pow2.iter().map(|w| ulp(*w, 1.0)).collect::<Vec<_>>(),
    );
    let pow3: Vec<f64> = xs.iter().map(|v| v * v * v).collect();
    check(
        "v ** 3",
        seed,
        &values(&device, &outputs[1]),
        &pow3,
        &pow3.iter().map(|w| ulp(*w, 2.0)).collect::<Vec<_>>(),
    );
    let ipow: Vec<i64> = ns
        .iter()
        .map(|&k| i64::from(k.wrapping_mul(k).wrapping_mul(k)))
        .collect();
    assert_eq!(ints(&device, &outputs[2]), ipow, "n ** 3 (seed {seed:#x})");
    let quot: Vec<f64> = ns.iter().map(|&k| f64::from(k) / 4.0).collect();
    check("n / 4", seed, &values(&device, &outputs[3]), &quot, &vec![0.0; n]);
    // Python's float modulo and floor division, of the f32 values.
    let fmod: Vec<f64> = xs.iter().map(|v| v - 1.5 * (v / 1.5).floor()).collect();
    check(
        "v % 1.5",
        seed,
        &values(&device, &outputs[4]),
        &fmod,
        &vec![4.0 * f64::from(f32::EPSILON); n],
    );
    let fdiv: Vec<f64> = xs.iter().map(|v| (v / 1.5).floor()).collect();
    check("v // 1.5", seed, &values(&device, &outputs[5]), &fdiv, &vec![0.0; n]);
    let sat: Vec<i64> = xs.iter().map(|&v| i64::from((v as f32 * 1.0e10f32) as i32)).collect();
    assert_eq!(
        ints(&device, &outputs[6]),
        sat,
        "i32(v * 1e10) saturates (seed {seed:#x})"
    );
}

#[test]
fn bool_tensors_shuffles_of_bools_and_tuple_results() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "python_semantics");
    let n = 32 * (1 + rng.below(8) as usize);
    let m: Vec<u8> = (0..n).map(|_| rng.below(2) as u8).collect();
    let mask = TensorValue::new(Tensor::from_bytes(DType::Bool, &[n], &m).unwrap());
    let ns: Vec<i32> = (0..n).map(|_| rng.below(2001) as i32 - 1000).collect();
    let (flipped, neighbour) = (poisoned(DType::Bool, &[n]), poisoned(DType::Bool, &[n]));
    let (q, r) = (poisoned(DType::I32, &[n]), poisoned(DType::I32, &[n]));
    let args = [
        Value::Tensor(mask),
        Value::Tensor(flipped.clone()),
        Value::Tensor(neighbour.clone()),
        Value::Tensor(q.clone()),
        Value::Tensor(r.clone()),
        Value::Tensor(int_tensor(&ns)),
    ];
    run(&device, &loaded, "bools", (n / 32) as u32, 32, &args, &[("N", n)]);
    let want: Vec<i64> = m.iter().map(|&b| i64::from(b == 0)).collect();
    assert_eq!(ints(&device, &flipped), want, "not m (seed {seed:#x})");
    let want: Vec<i64> = (0..n).map(|i| i64::from(m[i ^ 1])).collect();
    assert_eq!(ints(&device, &neighbour), want, "a bool from lane ^ 1 (seed {seed:#x})");
    let want: Vec<i64> = ns.iter().map(|&k| i64::from(k.div_euclid(7))).collect();
    assert_eq!(ints(&device, &q), want, "q of divmod_floor (seed {seed:#x})");
    let want: Vec<i64> = ns.iter().map(|&k| i64::from(k.rem_euclid(7))).collect();
    assert_eq!(ints(&device, &r), want, "r of divmod_floor (seed {seed:#x})");
}

#[test]
fn a_device_function_returns_from_inside_nested_loops() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "device_functions");
    let (rows, cols) = (1 + rng.below(12) as usize, 1 + rng.below(12) as usize);
    let (x, xs) = f32_tensor(&mut rng, &[rows, cols], 1.0);
    let threshold = rng.uniform() as f32;
    let at = poisoned(DType::I32, &[2]);
    let args = [
        Value::Tensor(x),
        Value::Tensor(at.clone()),
        Value::Float(f64::from(threshold)),
    ];
    run(&device, &loaded, "search_2d", 1, 32, &args, &[("R", rows), ("C", cols)]);
    let first = (0..rows * cols).find(|&k| xs[k] > f64::from(threshold));
    let want = first.map_or([-1, -1], |k| [(k / cols) as i64, (k % cols) as i64]);
    assert_eq!(
        ints(&device, &at),
        want,
        "the first element above {threshold} (seed {seed:#x})"
    );
}

#[test]
fn a_register_tile_carried_through_a_loop_and_a_branch() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "tile_accumulate");
    let k = 16 * (1 + rng.below(6) as usize);
    let (a, av) = crate::examples::bf16_tensor(&mut rng, &[32, k], 1.0);
    let (b, bv) = crate::examples::bf16_tensor(&mut rng, &[k, 32], 1.0);
    let (scale, flip) = (1.0 + rng.uniform(), rng.below(2) as i64);
    let c = poisoned(DType::F32, &[32, 32]);
    let args = [
        Value::Tensor(a),
        Value::Tensor(b),
        Value::Tensor(c.clone()),
        Value::Float(scale),
        Value::Int(flip),
    ];
    run(&device, &loaded, "gemm_tile", 1, 128, &args, &[("K", k)]);
    let (want, abs) = crate::examples::matmul_ref(&av, &bv, 32, k, 32);
    let factor = if flip > 0 { f64::from(scale as f32) } else { 1.0 };
    let want: Vec<f64> = want.iter().map(|w| w * factor).collect();
    let bound: Vec<f64> = abs.iter().map(|a| sum_bound(a * factor, 8.0)).collect();
    check("acc = acc + tile.dot(...)", seed, &values(&device, &c), &want, &bound);
}

#[test]
fn tile_dots_of_two_dtypes_and_of_integers() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "tile_dot_dtypes");
    let k = 16 * (1 + rng.below(4) as usize);
    let (a, av) = crate::examples::bf16_tensor(&mut rng, &[32, k], 1.0);
    let (b, bv) = crate::examples::f32_tensor(&mut rng, &[k, 32], 1.0);
    let c = poisoned(DType::F32, &[32, 32]);
    let args = [Value::Tensor(a), Value::Tensor(b), Value::Tensor(c.clone())];
    run(&device, &loaded, "mixed_dot", 1, 128, &args, &[("K", k)]);
    let (want, abs) = crate::examples::matmul_ref(&av, &bv, 32, k, 32);
    let bound: Vec<f64> = abs.iter().map(|a| sum_bound(*a, 8.0)).collect();
    check("tile.dot(bf16, f32)", seed, &values(&device, &c), &want, &bound);

    let small = |rng: &mut Rng, n: usize| -> Vec<i8> { (0..n).map(|_| rng.below(256) as u8 as i8).collect() };
    let (ai, bi) = (small(&mut rng, 32 * k), small(&mut rng, k * 32));
    let a = TensorValue::new(Tensor::from_slice(&[32, k], &ai).unwrap());
    let b = TensorValue::new(Tensor::from_slice(&[k, 32], &bi).unwrap());
    let c = poisoned(DType::I32, &[32, 32]);
    let args = [Value::Tensor(a), Value::Tensor(b), Value::Tensor(c.clone())];
    run(&device, &loaded, "int_dot", 1, 128, &args, &[("K", k)]);
    let want: Vec<i64> = (0..32 * 32)
        .map(|e| {
            let (i, j) = (e / 32, e % 32);
            (0..k)
                .map(|p| i64::from(ai[i * k + p]) * i64::from(bi[p * 32 + j]))
                .sum()
        })
        .collect();
    assert_eq!(ints(&device, &c), want, "tile.dot(i8, i8) into i32, seed {seed}");
}

#[test]
fn big_literals_waived_atomics_and_nan_extremes() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "python_semantics");
    let n = 1 + rng.below(500) as usize;
    let (x, xs) = f32_tensor(&mut rng, &[n], 1.0);
    let nan_first = rng.below(2) == 0;
    let pair: [f32; 2] = if nan_first { [f32::NAN, 1.0] } else { [1.0, f32::NAN] };
    let (h, total, mm) = (poisoned(DType::U64, &[1]), int_tensor(&[0]), poisoned(DType::F32, &[2]));
    let total = TensorValue::new(total.host(&device).unwrap().cast(DType::F32).unwrap());
    let args = [
        Value::Tensor(x),
        Value::Tensor(TensorValue::new(Tensor::from_slice(&[2], &pair).unwrap())),
        Value::Tensor(h.clone()),
        Value::Tensor(total.clone()),
        Value::Tensor(mm.clone()),
    ];
    run(
        &device,
        &loaded,
        "special",
        n.div_ceil(128) as u32,
        128,
        &args,
        &[("N", n)],
    );
    assert_eq!(
        ints(&device, &h),
        [14_695_981_039_346_656_037u64 as i64],
        "a u64 literal (seed {seed:#x})"
    );
    let sum: f64 = xs.iter().sum();
    let abs: f64 = xs.iter().map(|v| v.abs()).sum();
    check(
        "a waived float atomic",
        seed,
        &values(&device, &total),
        &[sum],
        &[sum_bound(abs, n as f64)],
    );
    assert!(
        values(&device, &mm).iter().all(|v| v.is_nan()),
        "max/min with a NaN (seed {seed:#x})"
    );
}

/// Python's `divmod` on floats in the precision of `$t`: the remainder
/// `fmod` moved to the divisor's sign (a zero takes the divisor's sign),
/// the quotient from it, rounded to the nearest integer; a zero divisor
/// gives `x / y` and NaN.
macro_rules! python_divmod {
    ($name:ident, $t:ty) => {
        fn $name(x: $t, y: $t) -> ($t, $t) {
            if y == 0.0 {
                return (x / y, <$t>::NAN);
            }
            let mut m = x % y;
            let mut div = (x - m) / y;
            if m != 0.0 {
                if (y < 0.0) != (m < 0.0) {
                    m += y;
                    div -= 1.0;
                }
            } else {
                m = (0.0 as $t).copysign(y);
            }
            let q = if div != 0.0 {
                let f = div.floor();
                if div - f > 0.5 {
                    f + 1.0
                } else {
                    f
                }
            } else {
                (0.0 as $t).copysign(x / y)
            };
            (q, m)
        }
    };
}

python_divmod!(divmod32, f32);
python_divmod!(divmod64, f64);

/// A float of either sign, its magnitude 2^e·m over a wide range of `e`, or
/// one of the special values (zeros, infinities, NaN, integers).
fn wide_float(rng: &mut Rng, max_exp: i32) -> f64 {
    let special = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1.0,
        -1.0,
        2.0,
        3.0,
        -3.0,
    ];
    if rng.below(8) == 0 {
        return special[rng.below(special.len() as u64) as usize];
    }
    let e = rng.below(2 * max_exp as u64 + 1) as i32 - max_exp;
    let m = 1.0 + (rng.uniform() + 1.0) / 2.0;
    let v = m * 2f64.powi(e);
    let v = if rng.below(4) == 0 { v.round() } else { v };
    if rng.below(2) == 0 {
        -v
    } else {
        v
    }
}

/// The same bits, NaNs of any payload equal.
fn same_bits(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

#[test]
fn float_floor_division_modulo_and_power_are_pythons() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "float_arithmetic");
    let n = 1000 + rng.below(3000) as usize;
    let xs: Vec<f32> = (0..n).map(|_| wide_float(&mut rng, 60) as f32).collect();
    let ys: Vec<f32> = (0..n).map(|_| wide_float(&mut rng, 60) as f32).collect();
    let xds: Vec<f64> = (0..n).map(|_| wide_float(&mut rng, 500)).collect();
    let yds: Vec<f64> = (0..n).map(|_| wide_float(&mut rng, 500)).collect();
    let f32s = |v: &[f32]| TensorValue::new(Tensor::from_slice(&[n], v).unwrap());
    let f64s = |v: &[f64]| TensorValue::new(Tensor::from_slice(&[n], v).unwrap());
    let outs: Vec<TensorValue> = [DType::F32, DType::F32, DType::F32, DType::F64, DType::F64]
        .iter()
        .map(|&d| poisoned(d, &[n]))
        .collect();
    let args = [
        Value::Tensor(f32s(&xs)),
        Value::Tensor(f32s(&ys)),
        Value::Tensor(outs[0].clone()),
        Value::Tensor(outs[1].clone()),
        Value::Tensor(outs[2].clone()),
        Value::Tensor(f64s(&xds)),
        Value::Tensor(f64s(&yds)),
        Value::Tensor(outs[3].clone()),
        Value::Tensor(outs[4].clone()),
    ];
    run(
        &device,
        &loaded,
        "float_arithmetic",
        n.div_ceil(128) as u32,
        128,
        &args,
        &[("N", n)],
    );
    let got: Vec<Vec<f64>> = outs.iter().map(|t| values(&device, t)).collect();
    for i in 0..n {
        let (x, y) = (f64::from(xs[i]), f64::from(ys[i]));
        let (q, r) = divmod32(xs[i], ys[i]);
        let (q, r) = (f64::from(q), f64::from(r));
        assert!(
            same_bits(got[1][i], r),
            "{x} % {y}: {} for {r} (seed {seed:#x})",
            got[1][i]
        );
        assert!(
            same_bits(got[0][i], q),
            "{x} // {y}: {} for {q} (seed {seed:#x})",
            got[0][i]
        );
        // `**` within an ulp of the f64 value rounded to f32.
        let want = x.powf(y) as f32;
        let p = got[2][i] as f32;
        let ulps = (p.to_bits() as i64 - want.to_bits() as i64).abs();
        assert!(
            same_bits(f64::from(p), f64::from(want)) || (p.is_finite() && ulps <= 1),
            "{x} ** {y}: {p} for {want} (seed {seed:#x})"
        );
        let (x, y) = (xds[i], yds[i]);
        let (q, r) = divmod64(x, y);
        assert!(
            same_bits(got[4][i], r),
            "{x} % {y}: {} for {r} (seed {seed:#x})",
            got[4][i]
        );
        assert!(
            same_bits(got[3][i], q),
            "{x} // {y}: {} for {q} (seed {seed:#x})",
            got[3][i]
        );
    }
}

#[test]
fn threads_take_turns_through_a_spinning_atomic() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "spin_wait");
    let blocks = 1 + rng.below(4) as usize;
    let threads = 32 * (1 + rng.below(4) as usize);
    let n = blocks * threads;
    let tickets = poisoned(DType::I32, &[n]);
    let turn = int_tensor(&vec![0; blocks]);
    let drawn = int_tensor(&vec![0; blocks]);
    let args = [
        Value::Tensor(tickets.clone()),
        Value::Tensor(turn.clone()),
        Value::Tensor(drawn.clone()),
    ];
    run(
        &device,
        &loaded,
        "descending_turns",
        blocks as u32,
        threads as u32,
        &args,
        &[("N", n), ("B", blocks)],
    );
    let got = ints(&device, &tickets);
    for (i, &ticket) in got.iter().enumerate() {
        let t = i % threads;
        assert_eq!(
            ticket,
            (threads - 1 - t) as i64,
            "thread {t} of block {} (seed {seed:#x})",
            i / threads
        );
    }
    assert!(
        ints(&device, &turn).iter().all(|&t| t == threads as i64),
        "seed {seed:#x}"
    );
}

#[test]
fn a_thread_waits_for_every_arrival_of_its_block() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "spin_wait");
    let blocks = 1 + rng.below(6) as usize;
    let threads = 32 * (1 + rng.below(8) as usize);
    let n = blocks * threads;
    let xs: Vec<i32> = (0..n).map(|_| rng.below(100_000) as i32).collect();
    let acc = TensorValue::new(Tensor::from_slice(&[blocks], &vec![0i64; blocks]).unwrap());
    let total = poisoned(DType::I64, &[blocks]);
    let args = [
        Value::Tensor(int_tensor(&xs)),
        Value::Tensor(acc),
        Value::Tensor(total.clone()),
    ];
    run(
        &device,
        &loaded,
        "arrivals",
        blocks as u32,
        threads as u32,
        &args,
        &[("N", n), ("B", blocks)],
    );
    let got = ints(&device, &total);
    for (b, &sum) in got.iter().enumerate() {
        let want: i64 = xs[b * threads..(b + 1) * threads].iter().map(|&x| i64::from(x)).sum();
        assert_eq!(sum, want, "block {b} (seed {seed:#x})");
    }
}

#[test]
fn the_last_block_adds_the_fenced_partial_sums() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "fence_reduction");
    let n = 1 + rng.below(20_000) as usize;
    let blocks = n.div_ceil(128);
    let (x, xs) = f32_tensor(&mut rng, &[n], 10.0);
    let partial = poisoned(DType::F32, &[blocks]);
    let count = TensorValue::new(Tensor::from_slice(&[1], &[0u32]).unwrap());
    let total = poisoned(DType::F32, &[1]);
    let args = [
        Value::Tensor(x),
        Value::Tensor(partial),
        Value::Tensor(count.clone()),
        Value::Tensor(total.clone()),
    ];
    run(
        &device,
        &loaded,
        "last_block_sum",
        blocks as u32,
        128,
        &args,
        &[("N", n), ("B", blocks)],
    );
    let want: f64 = xs.iter().sum();
    let abs: f64 = xs.iter().map(|v| v.abs()).sum();
    let got = values(&device, &total)[0];
    assert!(
        (got - want).abs() <= sum_bound(abs, 2.0 * (n as f64).log2() + 8.0),
        "total {got}, float64 {want} (seed {seed:#x})"
    );
    assert_eq!(ints(&device, &count), vec![blocks as i64], "tickets (seed {seed:#x})");
}

/// The distance between `got` and `want` in units of `f32`'s spacing at
/// `want`.
fn f32_ulps(got: f64, want: f64) -> f64 {
    let spacing = f64::from(f32::EPSILON) * want.abs().max(f64::from(f32::MIN_POSITIVE)) / 2.0;
    (got - want).abs() / spacing
}

#[test]
fn sin_cos_floor_and_ceil_match_float64() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "trig");
    let n = 1 + rng.below(5000) as usize;
    let (x, xs) = f32_tensor(&mut rng, &[n], 2000.0);
    let xd: Vec<f64> = (0..n).map(|_| rng.uniform() * 2000.0).collect();
    let xd_tensor = TensorValue::new(Tensor::from_slice(&[n], &xd).unwrap());
    let o = poisoned(DType::F32, &[4, n]);
    let od = poisoned(DType::F64, &[2, n]);
    let args = [
        Value::Tensor(x),
        Value::Tensor(xd_tensor),
        Value::Tensor(o.clone()),
        Value::Tensor(od.clone()),
    ];
    run(
        &device,
        &loaded,
        "elementwise",
        n.div_ceil(128) as u32,
        128,
        &args,
        &[("N", n)],
    );
    let (o, od) = (values(&device, &o), values(&device, &od));
    for (i, &v) in xs.iter().enumerate() {
        // One rounding to f32 of a result within 2 ulp of f64.
        assert!(f32_ulps(o[i], v.sin()) <= 2.0, "sin({v}) = {} (seed {seed:#x})", o[i]);
        assert!(
            f32_ulps(o[n + i], v.cos()) <= 2.0,
            "cos({v}) = {} (seed {seed:#x})",
            o[n + i]
        );
        assert_eq!(o[2 * n + i], v.floor(), "floor({v}) (seed {seed:#x})");
        assert_eq!(o[3 * n + i], v.ceil(), "ceil({v}) (seed {seed:#x})");
        let w = xd[i];
        for (got, want) in [(od[i], w.sin()), (od[n + i], w.cos())] {
            let ulp = f64::EPSILON * want.abs().max(f64::MIN_POSITIVE);
            assert!(
                (got - want).abs() <= 2.0 * ulp,
                "f64 trig of {w}: {got} vs {want} (seed {seed:#x})"
            );
        }
    }
}

#[test]
fn rotary_pairs_turn_by_their_angles() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "trig");
    let (s, d) = (1 + rng.below(200) as usize, 2 * (1 + rng.below(64) as usize));
    let (x, xs) = f32_tensor(&mut rng, &[s, d], 1.0);
    let y = poisoned(DType::F32, &[s, d]);
    let theta = 10_000.0f32;
    let args = [
        Value::Tensor(x),
        Value::Tensor(y.clone()),
        Value::Float(f64::from(theta)),
    ];
    run(
        &device,
        &loaded,
        "rotate_pairs",
        s as u32,
        64,
        &args,
        &[("S", s), ("D", d)],
    );
    let y = values(&device, &y);
    for pos in 0..s {
        for k in 0..d / 2 {
            let angle = pos as f64 * f64::from(theta).powf(-2.0 * k as f64 / d as f64);
            let (a, b) = (xs[pos * d + 2 * k], xs[pos * d + 2 * k + 1]);
            let want = [a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()];
            // The angle is computed in f32 (exp, log, a product): its
            // rounding, times the position, bounds the error.
            let bound = 1e-5 * (1.0 + angle.abs()) * (a.abs() + b.abs()) + 1e-6;
            for (j, w) in want.iter().enumerate() {
                let got = y[pos * d + 2 * k + j];
                assert!(
                    (got - w).abs() <= bound,
                    "pos {pos} pair {k}: {got} vs {w} (seed {seed:#x})"
                );
            }
        }
    }
}

#[test]
fn kernels_print_their_lines_in_block_and_thread_order() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "print");
    let n = 100 + rng.below(900) as usize;
    let (x, xs) = f32_tensor(&mut rng, &[n], 4.0);
    let ks: Vec<i32> = (0..n).map(|_| rng.below(2_000_001) as i32 - 1_000_000).collect();
    let (h, hs) = bf16_tensor(&mut rng, &[n], 100.0);
    let ds: Vec<f64> = (0..n).map(|_| (rng.uniform() - 0.5) * 1e-6).collect();
    let d = TensorValue::new(Tensor::from_slice(&[n], &ds).unwrap());
    let args = [x, int_tensor(&ks), h, d].map(Value::Tensor);
    let printed = run(
        &device,
        &loaded,
        "report",
        n.div_ceil(64) as u32,
        64,
        &args,
        &[("N", n)],
    );
    let f32_text = |v: f64| float_repr(v, DType::F32);
    let mut want = String::new();
    for i in 0..n {
        want += &format!("x: {i}: {}\n", f32_text(xs[i]));
        if xs[i] < 0.0 {
            want += &format!("thread {i} has a negative value {}\n", f32_text(xs[i]));
        }
        want += &format!(
            "{{k}} {} {} {} {} {} {}\n",
            ks[i],
            if ks[i] > 0 { "True" } else { "False" },
            i as u64 + 4_000_000_000,
            float_repr(hs[i], DType::Bf16),
            float_repr(ds[i], DType::F64),
            f32_text(xs[i] * 2.0),
        );
    }
    assert!(
        printed == want,
        "seed {seed:#x}: the kernel printed\n{printed}\ninstead of\n{want}"
    );
}

#[test]
fn a_launch_that_prints_more_than_its_buffer_holds_keeps_whole_lines() {
    let mut rng = Rng::fresh();
    let (device, loaded) = program("tests/kernels", "print");
    let n = 16 * 256;
    let (x, xs) = f32_tensor(&mut rng, &[n], 1.0);
    let printed = run(&device, &loaded, "flood", 16, 256, &[Value::Tensor(x)], &[("N", n)]);
    // A record is its print's number, the block, the thread and 30 values
    // (the index and 29 copies of x[i]).
    let fits = tessera_codegen::print::CAPACITY_WORDS / 33;
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), fits + 1, "{}", lines.last().unwrap_or(&""));
    assert_eq!(
        lines[fits],
        format!(
            "[{} more lines printed by `flood` dropped: a launch's print buffer holds 1048576 bytes]",
            n - fits
        )
    );
    let mut last = None;
    for line in &lines[..fits] {
        let words: Vec<&str> = line.split(' ').collect();
        let i: usize = words[0].parse().unwrap();
        assert!(last < Some(i), "line of thread {i} after that of {last:?}");
        last = Some(i);
        assert_eq!(words.len(), 30);
        assert!(words[1..].iter().all(|w| *w == float_repr(xs[i], DType::F32)), "{line}");
    }
}

#[test]
fn a_jacobi_step_reads_its_halo_from_shared_memory_on_a_2d_grid() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "stencil");
    let (h, w) = (1 + rng.below(70) as usize, 1 + rng.below(70) as usize);
    let (a, av) = f32_tensor(&mut rng, &[h, w], 10.0);
    let b = poisoned(DType::F32, &[h, w]);
    let args = [Value::Tensor(a), Value::Tensor(b.clone())];
    let config = LaunchConfig {
        grid: [w.div_ceil(16) as u32, h.div_ceil(16) as u32, 1],
        block: [16, 16, 1],
        shared_bytes: 0,
    };
    let dims = [("H".to_string(), h as i64), ("W".to_string(), w as i64)];
    loaded.launch_kernel(&device, "jacobi", config, &args, &dims).unwrap();
    let at = |r: i64, c: i64| av[r.clamp(0, h as i64 - 1) as usize * w + c.clamp(0, w as i64 - 1) as usize];
    let mut want = Vec::with_capacity(h * w);
    let mut bound = Vec::with_capacity(h * w);
    for r in 0..h as i64 {
        for c in 0..w as i64 {
            let terms = [at(r - 1, c), at(r + 1, c), at(r, c - 1), at(r, c + 1)];
            want.push(0.25 * terms.iter().sum::<f64>());
            bound.push(sum_bound(0.25 * terms.iter().map(|t| t.abs()).sum::<f64>(), 4.0));
        }
    }
    check(&format!("jacobi {h}x{w}"), seed, &values(&device, &b), &want, &bound);
}

#[test]
fn a_bitonic_sort_orders_each_block_in_shared_memory() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "bitonic_sort");
    let n = 1 + rng.below(1500) as usize;
    let (x, xs) = f32_tensor(&mut rng, &[n], 1000.0);
    let args = [Value::Tensor(x.clone())];
    run(
        &device,
        &loaded,
        "bitonic",
        n.div_ceil(256) as u32,
        256,
        &args,
        &[("N", n)],
    );
    let mut want = Vec::with_capacity(n);
    for block in xs.chunks(256) {
        let mut sorted = block.to_vec();
        sorted.sort_by(f64::total_cmp);
        want.extend(sorted);
    }
    check(
        &format!("bitonic {n}"),
        seed,
        &values(&device, &x),
        &want,
        &vec![0.0; n],
    );
}

#[test]
fn a_row_staged_in_shared_memory_sized_by_the_launch_comes_back_reversed_and_scaled() {
    let mut rng = Rng::fresh();
    let seed = rng.0;
    let (device, loaded) = program("tests/kernels", "row_stage");
    let (rows, cols) = (1 + rng.below(6) as usize, 1 + rng.below(3000) as usize);
    let (x, xs) = f32_tensor(&mut rng, &[rows, cols], 1.0);
    let y = poisoned(DType::F32, &[rows, cols]);
    let args = [Value::Tensor(x), Value::Tensor(y.clone())];
    run(
        &device,
        &loaded,
        "reverse_scaled",
        rows as u32,
        64,
        &args,
        &[("R", rows), ("C", cols)],
    );
    let mut want = Vec::with_capacity(rows * cols);
    let mut bound = Vec::with_capacity(rows * cols);
    for row in xs.chunks(cols) {
        let total: f64 = row.iter().sum();
        // The sum runs in order in f32: each add rounds once.
        let total_error = sum_bound(row.iter().map(|v| v.abs()).sum(), cols as f64);
        for c in 0..cols {
            let v = row[cols - 1 - c];
            want.push(v * total);
            bound.push(v.abs() * total_error + sum_bound((v * total).abs(), 1.0));
        }
    }
    check(
        &format!("row_stage {rows}x{cols}"),
        seed,
        &values(&device, &y),
        &want,
        &bound,
    );
}
