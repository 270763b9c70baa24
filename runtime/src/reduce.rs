//! The tree order of deterministic reductions.
//!
//! A sum of `n` values is computed in one fixed association order, the
//! pairwise tree the code generator gives every `order = "tree"` reduction
//! (`spec/codegen.md`, "Reductions"): for `s = 1, 2, 4, …` while `s < n`,
//! every `j` a multiple of `2s` with `j + s < n` does `x[j] = x[j] +
//! x[j + s]`; the result is `x[0]`. The order depends only on `n`, never on
//! how many threads or blocks do the work, so every device that follows it
//! rounds the same way, and the host's `op.sum` and `op.mean`, which use
//! it, give the bits a compiled `@deterministic` one gives.

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
    let mut s = 1;
    while s < n {
        for j in (0..n - s).step_by(2 * s) {
            values[j] = values[j].add(values[j + s]);
        }
        s *= 2;
    }
    values[0]
}

/// The lanes a compiled row reduction walks a row of more 32-bit values
/// than that in (`row_chunk` of the row templates); half as many of a
/// 64-bit accumulator.
pub const ROW_LANES: usize = 2048;

/// The sum of a row in the order a compiled `order = "tree"` reduction
/// along the last axis adds it (`spec/runtime.md`, "Tree-ordered sums"):
/// a row of at most `lanes` values by the pairwise tree; a longer one
/// walked in chunks of `lanes`, value `c` of every chunk added to lane `c`
/// in chunk order, then the lanes by the pairwise tree.
pub fn row_sum<T: TreeAdd>(values: &[T], lanes: usize) -> T {
    let mut acc: Vec<T> = values.iter().take(lanes.max(1)).copied().collect();
    for chunk in values.chunks(lanes.max(1)).skip(1) {
        for (a, &v) in acc.iter_mut().zip(chunk) {
            *a = a.add(v);
        }
    }
    tree_sum(&mut acc)
}

/// The sum of `values` in index order: a compiled reduction over an axis
/// other than the last, each thread folding one output's values in order.
pub fn ordered_sum<T: TreeAdd>(values: &[T]) -> T {
    match values.split_first() {
        Some((&first, rest)) => rest.iter().fold(first, |a, &v| a.add(v)),
        None => T::zero(),
    }
}

/// The sum of every value of a tensor whose rows (last-axis runs) are
/// `row` long, as a compiled reduction over all its axes adds them: each
/// row as [`row_sum`], then the rows' sums in index order.
pub fn rows_sum<T: TreeAdd>(values: &[T], row: usize, lanes: usize) -> T {
    let sums: Vec<T> = values.chunks(row.max(1)).map(|r| row_sum(r, lanes)).collect();
    ordered_sum(&sums)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference, recursively: the tree of the first `h` values (`h`
    /// the largest power of two below `n`) plus the tree of the rest.
    fn halves(values: &[f32]) -> f32 {
        match values.len() {
            0 => 0.0,
            1 => values[0],
            n => {
                let h = n.next_power_of_two() / 2;
                halves(&values[..h]) + halves(&values[h..])
            }
        }
    }

    #[test]
    fn the_order_is_the_pairwise_tree() {
        // Values whose sum depends on the association order.
        for n in [1usize, 2, 3, 5, 8, 13, 64, 65, 100, 1000, 4097] {
            let values: Vec<f32> = (0..n)
                .map(|i| 1.0 + (i as f32) * 1e-3 + if i % 3 == 0 { 1e7 } else { 0.0 })
                .collect();
            let got = tree_sum(&mut values.clone());
            assert_eq!(got.to_bits(), halves(&values).to_bits(), "n = {n}");
            let exact: f64 = values.iter().map(|&v| v as f64).sum();
            assert!((got as f64 - exact).abs() <= exact * 1e-6, "n = {n}: {got} vs {exact}");
        }
        assert_eq!(tree_sum::<f64>(&mut []), 0.0);
        // Pairs (0, 1), (2, 3) and then (0, 2): not left to right.
        let mut v = [1e8f32, 1.0, -1e8, 1.0];
        assert_eq!(tree_sum(&mut v), 0.0);
        assert_eq!(
            [1e8f32, 1.0, -1e8, 1.0].iter().sum::<f32>(),
            1.0,
            "left to right rounds differently"
        );
    }

    #[test]
    fn long_rows_add_chunks_lane_by_lane_then_the_lanes_by_the_tree() {
        let values: Vec<f32> = (0..11).map(|i| if i % 4 == 0 { 1e8 } else { 1.0 + i as f32 }).collect();
        // Lanes of 4: lane c holds values c, c + 4, c + 8 added in order.
        let lanes: Vec<f32> = (0..4)
            .map(|c| values[c..].iter().step_by(4).fold(-0.0, |a, v| a + v))
            .collect();
        assert_eq!(row_sum(&values, 4).to_bits(), halves(&lanes).to_bits());
        assert_eq!(row_sum(&values, 16).to_bits(), halves(&values).to_bits());
        assert_eq!(row_sum::<f32>(&[], 4), 0.0);
        assert_eq!(ordered_sum(&[1e8f32, 1.0, -1e8]), 0.0);
        // Rows [1e8, 1] and [-1e8, 1]: 1e8 (1 is lost), then -1e8 + 1 = -1e8.
        assert_eq!(rows_sum(&[1e8f32, 1.0, -1e8, 1.0], 2, 4), 0.0);
        assert_eq!(rows_sum(&[1e8f32, -1e8, 1.0, 1.0], 2, 4), 2.0);
    }
}
