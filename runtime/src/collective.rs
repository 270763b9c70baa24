//! Collectives over the ranks of a simulated mesh: the reduction of one
//! tensor per rank into one result, in the fixed order of the algorithm
//! the program asked for (spec/runtime.md, Collectives).
//!
//! Every pairwise step rounds to the tensor's dtype, as a device does when
//! it combines two buffers: `f32` and `f64` operate in their own precision,
//! `f16` and `bf16` in `f32` and then round, integers wrap.
//!
//! - `binary_tree`: ranks `j` and `j + s` combine into `j`, for `j` a
//!   multiple of `2s` and `s = 1, 2, 4, …` while `j + s` is a rank:
//!   `((r0 ∘ r1) ∘ (r2 ∘ r3)) ∘ ((r4 ∘ r5) ∘ (r6 ∘ r7))` for 8 ranks.
//! - `ring`: the elements are cut into one chunk per rank (chunk `c` holds
//!   elements `[c·n/R, (c+1)·n/R)`); chunk `c` travels the ring from rank
//!   `c + 1`, each rank adding its own, and ends at rank `c`:
//!   `((r[c+1] ∘ r[c+2]) ∘ …) ∘ r[c]` (indices mod `R`), the order of a
//!   ring reduce-scatter.
//!
//! `mean` is the `sum` divided by the number of ranks, rounded once more.

use crate::half::{bf16_to_f32, f16_to_f32, f64_to_bf16, f64_to_f16};
use crate::tensor::Elem;
use crate::{DType, RunError, Tensor};

/// Reduces `inputs` (one tensor per rank, all of one dtype and shape) with
/// `op` (`sum`, `mean`, `max`, `min`, `prod`) in the order of `algo`
/// (`binary_tree`, `ring`).
pub fn all_reduce(inputs: &[&Tensor], op: &str, algo: &str) -> Result<Tensor, RunError> {
    let Some(first) = inputs.first() else {
        return Err(RunError::value("an all-reduce over no ranks"));
    };
    if let Some(other) = inputs
        .iter()
        .find(|t| t.dtype() != first.dtype() || t.shape() != first.shape())
    {
        return Err(RunError::value(format!(
            "an all-reduce of {} {:?} on one rank and {} {:?} on another",
            first.dtype(),
            first.shape(),
            other.dtype(),
            other.shape()
        )));
    }
    let step = combiner(op, first.dtype())?;
    let tree = match algo {
        "binary_tree" => true,
        "ring" => false,
        _ => return Err(RunError::value(format!("unknown all-reduce algorithm \"{algo}\""))),
    };
    let ranks = inputs.len();
    let n = first.numel();
    let mut out = (*first).clone();
    let mut slots = Vec::with_capacity(ranks);
    for i in 0..n {
        let at = |r: usize| inputs[r].get(i);
        let value = if tree {
            slots.clear();
            slots.extend((0..ranks).map(at));
            let mut s = 1;
            while s < ranks {
                let mut j = 0;
                while j + s < ranks {
                    slots[j] = step(slots[j], slots[j + s]);
                    j += 2 * s;
                }
                s *= 2;
            }
            slots[0]
        } else {
            let chunk = (i * ranks) / n.max(1);
            let mut acc = at((chunk + 1) % ranks);
            for k in 2..=ranks {
                acc = step(acc, at((chunk + k) % ranks));
            }
            acc
        };
        out.set(i, value);
    }
    if op == "mean" {
        let divide = rounded(first.dtype(), |a, b| a / b);
        for i in 0..n {
            out.set(i, divide(out.get(i), Elem::Float(ranks as f64)));
        }
    }
    Ok(out)
}

type Step = Box<dyn Fn(Elem, Elem) -> Elem>;

/// One pairwise step of `op` on values of `dtype`, rounded to it.
fn combiner(op: &str, dtype: DType) -> Result<Step, RunError> {
    if dtype.is_float() {
        let f: fn(f64, f64) -> f64 = match op {
            "sum" | "mean" => |a, b| a + b,
            "prod" => |a, b| a * b,
            "max" => f64::max,
            "min" => f64::min,
            _ => return Err(RunError::value(format!("unknown all-reduce op \"{op}\""))),
        };
        return Ok(rounded(dtype, f));
    }
    let f: fn(i64, i64) -> i64 = match op {
        "sum" | "mean" => i64::wrapping_add,
        "prod" => i64::wrapping_mul,
        "max" => i64::max,
        "min" => i64::min,
        _ => return Err(RunError::value(format!("unknown all-reduce op \"{op}\""))),
    };
    Ok(Box::new(move |a, b| {
        let x = f(a.as_i64(), b.as_i64());
        Elem::Int(match dtype {
            DType::I8 => x as i8 as i64,
            DType::I16 => x as i16 as i64,
            DType::I32 => x as i32 as i64,
            DType::U8 => x as u8 as i64,
            DType::U16 => x as u16 as i64,
            DType::U32 => x as u32 as i64,
            _ => x,
        })
    }))
}

/// `f` on two floats of `dtype`, rounded to `dtype`: exact in `f64` and
/// rounded once for `f32` (the `f64` result of one `+`, `*`, `/` of two
/// `f32` rounds to the `f32` result), once for `f16` and `bf16` too.
fn rounded(dtype: DType, f: fn(f64, f64) -> f64) -> Step {
    Box::new(move |a, b| {
        let x = f(a.as_f64(), b.as_f64());
        let x = match dtype {
            DType::F64 => x,
            DType::F16 => f16_to_f32(f64_to_f16(x)) as f64,
            DType::Bf16 => bf16_to_f32(f64_to_bf16(x)) as f64,
            d => d.minifloat().map_or(x as f32 as f64, |f| f.decode(f.encode(x, false))),
        };
        Elem::Float(x)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(values: &[f32]) -> Tensor {
        Tensor::from_slice(&[values.len()], values).unwrap()
    }

    /// Rank r holds 2^(-24·[r odd]) everywhere and rank 0 holds 1, so the
    /// order of the additions shows in the rounding.
    fn order_probe(ranks: usize, n: usize) -> Vec<Tensor> {
        (0..ranks)
            .map(|r| {
                let v = match r {
                    0 => 1.0f32,
                    r if r % 2 == 1 => f32::EPSILON / 2.0,
                    _ => 0.0,
                };
                f32s(&vec![v; n])
            })
            .collect()
    }

    #[test]
    fn the_binary_tree_combines_neighbours_first() {
        let probe = order_probe(8, 3);
        let refs: Vec<&Tensor> = probe.iter().collect();
        let out = all_reduce(&refs, "sum", "binary_tree").unwrap();
        let r: Vec<f32> = probe.iter().map(|t| t.as_slice::<f32>().unwrap()[0]).collect();
        let want = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        assert_eq!(out.as_slice::<f32>().unwrap(), &[want; 3]);
        let left_fold = r.iter().fold(0.0f32, |a, &b| a + b);
        assert_ne!(want, left_fold, "the probe must tell the orders apart");
    }

    #[test]
    fn the_ring_starts_each_chunk_after_its_owner() {
        let probe = order_probe(4, 8);
        let refs: Vec<&Tensor> = probe.iter().collect();
        let out = all_reduce(&refs, "sum", "ring").unwrap();
        let r: Vec<f32> = probe.iter().map(|t| t.as_slice::<f32>().unwrap()[0]).collect();
        let chunk = |c: usize| ((r[(c + 1) % 4] + r[(c + 2) % 4]) + r[(c + 3) % 4]) + r[c];
        let want: Vec<f32> = (0..8).map(|i| chunk(i / 2)).collect();
        assert_eq!(out.as_slice::<f32>().unwrap(), want.as_slice());
        assert_ne!(chunk(0), chunk(1), "the probe must tell the orders apart");
    }

    #[test]
    fn every_op_rounds_to_the_dtype() {
        let a = Tensor::from_slice(&[3], &[3i32, -7, 1 << 30]).unwrap();
        let b = Tensor::from_slice(&[3], &[5i32, 2, 1 << 30]).unwrap();
        let out = |op| all_reduce(&[&a, &b], op, "binary_tree").unwrap().to_f64_vec();
        assert_eq!(out("sum"), vec![8.0, -5.0, i32::MIN as f64]);
        assert_eq!(out("max"), vec![5.0, 2.0, (1 << 30) as f64]);
        assert_eq!(out("min"), vec![3.0, -7.0, (1 << 30) as f64]);
        assert_eq!(out("prod"), vec![15.0, -14.0, 0.0]);
        assert_eq!(out("mean"), vec![4.0, -2.0, (i32::MIN / 2) as f64]);
        let x = Tensor::from_slice(&[1], &[1.0f32]).unwrap().cast(DType::Bf16).unwrap();
        let y = Tensor::from_slice(&[1], &[1.0f32 / 256.0])
            .unwrap()
            .cast(DType::Bf16)
            .unwrap();
        assert_eq!(all_reduce(&[&x, &y], "sum", "ring").unwrap().to_f64_vec(), vec![1.0]);
        assert_eq!(
            all_reduce(&[&x, &y], "mean", "binary_tree").unwrap().to_f64_vec(),
            vec![0.5]
        );
    }

    #[test]
    fn mismatched_ranks_and_unknown_names_are_errors() {
        let a = f32s(&[1.0, 2.0]);
        let b = f32s(&[1.0]);
        assert!(all_reduce(&[&a, &b], "sum", "binary_tree").is_err());
        assert!(all_reduce(&[&a, &a], "avg", "binary_tree").is_err());
        assert!(all_reduce(&[&a, &a], "sum", "butterfly").is_err());
        assert!(all_reduce(&[], "sum", "ring").is_err());
    }
}
