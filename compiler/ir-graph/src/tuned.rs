//! Configurations a tuner chose at several shapes (a function's
//! `autotune.configs`, `spec/ir-schedule.md`, "Tuned variants"): each is
//! launched for the shapes nearest the dims it was measured at.
//!
//! Along each dim whose measured values differ, consecutive values `a < b`
//! split at their geometric mean `⌊√(a·b)⌋`: the cut points give every dim
//! a list of intervals, one around each measured value, and their
//! products a grid of cells covering every shape exactly once. A cell,
//! represented by the measured values its intervals hold, goes to the
//! measurement nearest it in log space (the sum over dims of the squared
//! log ratios; a tie goes to the later measurement); a configuration's
//! launch condition is the disjunction of its cells' conjunctions.

use std::collections::BTreeMap;

use tessera_ir::{Attr, CmpOp, DimExpr, Module, OpId, ShapeConstraint};

/// The knob of a matmul's producer warpgroups: 0 or 1.
pub(crate) const PRODUCERS: &str = "producers";

/// The knob of a matmul's persistent grid: 0 (a block per tile) or 1.
pub(crate) const PERSISTENT: &str = "persistent";

/// The function attribute of one configuration, for every shape.
pub(crate) const CONFIG_ATTR: &str = "autotune.config";

/// The function attribute of configurations measured at several shapes.
pub(crate) const CONFIGS_ATTR: &str = "autotune.configs";

/// Knob name → value.
pub(crate) type Knobs = BTreeMap<String, i64>;

/// A configuration and the dims it was measured at (none: every shape).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Measured {
    pub dims: BTreeMap<String, i64>,
    pub config: Knobs,
}

/// The knob values of a configuration dict: positive integers, and 0 for
/// the switches `producers` and `persistent`.
fn knobs_of(dict: &BTreeMap<String, Attr>) -> Knobs {
    dict.iter()
        .filter_map(|(k, v)| {
            let switch = k == PRODUCERS || k == PERSISTENT;
            Some((k.clone(), v.as_int().filter(|&v| v > 0 || (switch && v == 0))?))
        })
        .collect()
}

/// The configurations the function's kernels are built with, in the order
/// they were measured: those of `autotune.configs`, else the one of
/// `autotune.config` for every shape, else one empty configuration (the
/// target's defaults).
pub(crate) fn measured(m: &Module, func: OpId) -> Vec<Measured> {
    if let Some(items) = m.attr(func, CONFIGS_ATTR).and_then(Attr::as_array) {
        let all: Vec<Measured> = items
            .iter()
            .filter_map(|item| {
                let d = item.as_dict()?;
                Some(Measured {
                    dims: d
                        .get("dims")?
                        .as_dict()?
                        .iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_int()?)))
                        .collect(),
                    config: knobs_of(d.get("config")?.as_dict()?),
                })
            })
            .collect();
        if !all.is_empty() {
            return all;
        }
    }
    let config = match m.attr(func, CONFIG_ATTR) {
        Some(Attr::Dict(d)) => knobs_of(d),
        _ => Knobs::new(),
    };
    vec![Measured {
        dims: BTreeMap::new(),
        config,
    }]
}

/// For each of `points` (the dims of measurements, in order), the shapes
/// it is nearest to as a disjunction of conjunctions; an empty conjunction
/// holds for every shape (one point, or points that do not differ).
pub(crate) fn nearest_regions(points: &[BTreeMap<String, i64>]) -> Vec<Vec<Vec<ShapeConstraint>>> {
    let mut out = vec![Vec::new(); points.len()];
    let Some(first) = points.first() else { return out };
    // The dims every point measured, and the distinct values of those
    // whose values differ.
    let axes: Vec<(&String, Vec<i64>)> = first
        .keys()
        .filter(|name| points.iter().all(|p| p.get(*name).is_some_and(|&v| v > 0)))
        .map(|name| {
            let mut values: Vec<i64> = points.iter().map(|p| p[name]).collect();
            values.sort_unstable();
            values.dedup();
            (name, values)
        })
        .filter(|(_, values)| values.len() > 1)
        .collect();
    if axes.is_empty() {
        out[points.len() - 1].push(Vec::new());
        return out;
    }
    // Every cell, as the index of its interval along each axis.
    let mut cell = vec![0usize; axes.len()];
    loop {
        let nearest = (0..points.len())
            .rev()
            .min_by(|&a, &b| {
                let distance = |p: usize| -> f64 {
                    axes.iter()
                        .zip(&cell)
                        .map(|((name, values), &i)| {
                            let r = (values[i] as f64 / points[p][*name] as f64).ln();
                            r * r
                        })
                        .sum()
                };
                distance(a).total_cmp(&distance(b))
            })
            .unwrap_or(0);
        let conjunction = axes
            .iter()
            .zip(&cell)
            .map(|((name, values), &i)| interval(name, values, i))
            .collect();
        out[nearest].push(conjunction);
        // The next cell: the last axis varies fastest.
        let mut axis = axes.len();
        loop {
            if axis == 0 {
                return out;
            }
            axis -= 1;
            cell[axis] += 1;
            if cell[axis] < axes[axis].1.len() {
                break;
            }
            cell[axis] = 0;
        }
    }
}

/// The cut between consecutive measured values `a < b`: their geometric
/// mean, rounded down (at least `a`, below `b`).
fn cut(a: i64, b: i64) -> i64 {
    let product = i128::from(a) * i128::from(b);
    let mut r = (product as f64).sqrt() as i128;
    while r * r > product {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= product {
        r += 1;
    }
    i64::try_from(r).unwrap_or(a).clamp(a, b - 1)
}

/// The interval around `values[i]` along dim `name`: up to the cut after
/// it, from the cut before it.
fn interval(name: &str, values: &[i64], i: usize) -> ShapeConstraint {
    let dim = DimExpr::sym(name);
    let compare = |op, bound| ShapeConstraint::Compare {
        lhs: dim.clone(),
        op,
        rhs: DimExpr::constant(bound),
    };
    let below = (i > 0).then(|| cut(values[i - 1], values[i]));
    let above = values.get(i + 1).map(|&b| cut(values[i], b));
    match (below, above) {
        (None, Some(hi)) => compare(CmpOp::Le, hi),
        (Some(lo), None) => compare(CmpOp::Gt, lo),
        (Some(lo), Some(hi)) => ShapeConstraint::InRange {
            dim: dim.clone(),
            lo: DimExpr::constant(lo + 1),
            hi: DimExpr::constant(hi),
            inclusive: true,
        },
        (None, None) => compare(CmpOp::Ge, 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
        pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
    }

    fn text(regions: &[Vec<Vec<ShapeConstraint>>]) -> Vec<Vec<String>> {
        regions
            .iter()
            .map(|r| r.iter().map(|c| ShapeConstraint::join(c)).collect())
            .collect()
    }

    #[test]
    fn one_varying_dim_splits_at_geometric_means() {
        let points = [
            dims(&[("M", 4096), ("N", 4096)]),
            dims(&[("M", 16), ("N", 4096)]),
            dims(&[("M", 256), ("N", 4096)]),
        ];
        assert_eq!(
            text(&nearest_regions(&points)),
            [vec!["M > 1024"], vec!["M <= 64"], vec!["M in 65..=1024"]]
        );
    }

    #[test]
    fn cells_of_several_dims_go_to_the_nearest_measurement() {
        let points = [dims(&[("M", 16), ("N", 4096)]), dims(&[("M", 4096), ("N", 512)])];
        assert_eq!(
            text(&nearest_regions(&points)),
            [
                vec!["M <= 256 and N <= 1448", "M <= 256 and N > 1448"],
                vec!["M > 256 and N <= 1448", "M > 256 and N > 1448"],
            ]
        );
        // (16, 16) and (4096, 4096) are as far from both measurements in
        // log space: the tie goes to the later one.
        let points = [dims(&[("M", 16), ("N", 4096)]), dims(&[("M", 4096), ("N", 16)])];
        assert_eq!(
            text(&nearest_regions(&points)),
            [
                vec!["M <= 256 and N > 256"],
                vec!["M <= 256 and N <= 256", "M > 256 and N <= 256", "M > 256 and N > 256"],
            ]
        );
    }

    #[test]
    fn points_that_do_not_differ_leave_every_shape_to_the_last() {
        let points = [dims(&[("M", 64)]), dims(&[("M", 64)])];
        assert_eq!(
            text(&nearest_regions(&points)),
            [Vec::<String>::new(), vec![String::new()]]
        );
        assert!(nearest_regions(&[]).is_empty());
    }

    #[test]
    fn cuts_are_exact_for_large_values() {
        assert_eq!(cut(16, 4096), 256);
        assert_eq!(cut(1, 2), 1);
        assert_eq!(cut(i64::MAX - 1, i64::MAX), i64::MAX - 1);
    }
}
