//! The tree order of deterministic reductions.
//!
//! A sum of `n` values is computed in one fixed association order, the one a
//! block of `P` threads computes with a shared-memory tree (`P` the power of
//! two at least `n`): for `s = P/2, P/4, …, 1`, every `i < s` with `i + s < n`
//! does `x[i] = x[i] + x[i + s]`; the result is `x[0]`. The order depends
//! only on `n`, never on how many threads or blocks do the work, so every
//! device that follows it rounds the same way. The host's `op.sum` and
//! `op.mean` use it.

/// Values that can be summed in tree order.
pub trait TreeAdd: Copy {
    fn zero() -> Self;
    fn add(self, other: Self) -> Self;
}

impl TreeAdd for f32 {
    fn zero() -> f32 {
        0.0
    }
    fn add(self, other: f32) -> f32 {
        self + other
    }
}

impl TreeAdd for f64 {
    fn zero() -> f64 {
        0.0
    }
    fn add(self, other: f64) -> f64 {
        self + other
    }
}

impl TreeAdd for i64 {
    fn zero() -> i64 {
        0
    }
    fn add(self, other: i64) -> i64 {
        self.wrapping_add(other)
    }
}

/// The sum of `values` in tree order (0 for none); `values` is the scratch.
pub fn tree_sum<T: TreeAdd>(values: &mut [T]) -> T {
    let n = values.len();
    if n == 0 {
        return T::zero();
    }
    let mut s = n.next_power_of_two() / 2;
    while s > 0 {
        for i in 0..s.min(n.saturating_sub(s)) {
            values[i] = values[i].add(values[i + s]);
        }
        s /= 2;
    }
    values[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: the shared-memory loop written out with a padded array.
    fn padded_tree(values: &[f32]) -> f32 {
        let p = values.len().next_power_of_two();
        let mut x = values.to_vec();
        x.resize(p, 0.0);
        let mut s = p / 2;
        while s > 0 {
            for i in 0..s {
                x[i] += x[i + s];
            }
            s /= 2;
        }
        x[0]
    }

    #[test]
    fn the_order_is_the_shared_memory_tree() {
        // Values whose sum depends on the association order.
        for n in [1usize, 2, 3, 5, 8, 13, 100, 1000, 4097] {
            let values: Vec<f32> = (0..n)
                .map(|i| 1.0 + (i as f32) * 1e-3 + if i % 3 == 0 { 1e7 } else { 0.0 })
                .collect();
            let got = tree_sum(&mut values.clone());
            assert_eq!(got.to_bits(), padded_tree(&values).to_bits(), "n = {n}");
            let exact: f64 = values.iter().map(|&v| v as f64).sum();
            assert!((got as f64 - exact).abs() <= exact * 1e-6, "n = {n}: {got} vs {exact}");
        }
        assert_eq!(tree_sum::<f64>(&mut []), 0.0);
        // Pairs (0, 2), (1, 3) and then (0, 1): not left to right.
        let mut v = [1e8f32, 1.0, -1e8, 1.0];
        assert_eq!(tree_sum(&mut v), 2.0);
        assert_eq!(
            [1e8f32, 1.0, -1e8, 1.0].iter().sum::<f32>(),
            1.0,
            "left to right rounds differently"
        );
    }
}
