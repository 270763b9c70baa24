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

/// A box of shapes: along each axis of [`Regions`], the first and last of
/// the intervals it spans.
pub(crate) type Span = Vec<(usize, usize)>;

/// The shapes each measurement is nearest to: the dims whose measured
/// values differ (the axes, each with its sorted values), and each
/// measurement's cells.
pub(crate) struct Regions {
    axes: Vec<(String, Vec<i64>)>,
    pub cells: Vec<Vec<Span>>,
}

/// The regions of `points`, the dims of measurements in order. Without an
/// axis (one point, or points that do not differ) every shape is the last
/// point's.
pub(crate) fn nearest_regions(points: &[BTreeMap<String, i64>]) -> Regions {
    let mut cells = vec![Vec::new(); points.len()];
    let axes: Vec<(String, Vec<i64>)> = points
        .first()
        .map(|first| {
            first
                .keys()
                .filter(|name| points.iter().all(|p| p.get(*name).is_some_and(|&v| v > 0)))
                .map(|name| {
                    let mut values: Vec<i64> = points.iter().map(|p| p[name]).collect();
                    values.sort_unstable();
                    values.dedup();
                    (name.clone(), values)
                })
                .filter(|(_, values)| values.len() > 1)
                .collect()
        })
        .unwrap_or_default();
    if let Some(last) = cells.last_mut() {
        if axes.is_empty() {
            last.push(Vec::new());
            return Regions { axes, cells };
        }
    } else {
        return Regions { axes, cells };
    }
    // Every cell, as the index of its interval along each axis.
    let mut cell = vec![0usize; axes.len()];
    loop {
        let distance = |p: usize| -> f64 {
            axes.iter()
                .zip(&cell)
                .map(|((name, values), &i)| {
                    let r = (values[i] as f64 / points[p][name] as f64).ln();
                    r * r
                })
                .sum()
        };
        let nearest = (0..points.len())
            .rev()
            .min_by(|&a, &b| distance(a).total_cmp(&distance(b)))
            .unwrap_or(0);
        cells[nearest].push(cell.iter().map(|&i| (i, i)).collect());
        // The next cell: the last axis varies fastest.
        let mut axis = axes.len();
        loop {
            if axis == 0 {
                return Regions { axes, cells };
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

impl Regions {
    /// The launch condition of the union of `spans`, a disjunction of
    /// conjunctions: spans that differ along one axis only, where they
    /// meet, merged; an axis a span covers whole left out of its
    /// conjunction (which is empty, true for every shape, when it covers
    /// every axis whole).
    pub(crate) fn condition(&self, mut spans: Vec<Span>) -> Vec<Vec<ShapeConstraint>> {
        'merge: loop {
            for i in 0..spans.len() {
                for j in 0..spans.len() {
                    let differing: Vec<usize> = (0..self.axes.len()).filter(|&a| spans[i][a] != spans[j][a]).collect();
                    if let [a] = differing[..] {
                        if spans[i][a].1 + 1 == spans[j][a].0 {
                            spans[i][a].1 = spans[j][a].1;
                            spans.remove(j);
                            continue 'merge;
                        }
                    }
                }
            }
            break;
        }
        spans
            .iter()
            .map(|span| {
                self.axes
                    .iter()
                    .zip(span)
                    .filter_map(|((name, values), &(lo, hi))| interval(name, values, lo, hi))
                    .collect()
            })
            .collect()
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

/// The intervals around `values[lo..=hi]` along dim `name`: from the cut
/// before the first, up to the cut after the last; None when that is every
/// value of the dim.
fn interval(name: &str, values: &[i64], lo: usize, hi: usize) -> Option<ShapeConstraint> {
    let dim = DimExpr::sym(name);
    let compare = |op, bound| ShapeConstraint::Compare {
        lhs: dim.clone(),
        op,
        rhs: DimExpr::constant(bound),
    };
    let below = (lo > 0).then(|| cut(values[lo - 1], values[lo]));
    let above = values.get(hi + 1).map(|&b| cut(values[hi], b));
    match (below, above) {
        (None, None) => None,
        (None, Some(top)) => Some(compare(CmpOp::Le, top)),
        (Some(bottom), None) => Some(compare(CmpOp::Gt, bottom)),
        (Some(bottom), Some(top)) => Some(ShapeConstraint::InRange {
            dim: dim.clone(),
            lo: DimExpr::constant(bottom + 1),
            hi: DimExpr::constant(top),
            inclusive: true,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
        pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
    }

    /// Each measurement's launch condition.
    fn text(points: &[BTreeMap<String, i64>]) -> Vec<Vec<String>> {
        let regions = nearest_regions(points);
        regions
            .cells
            .iter()
            .map(|cells| {
                regions
                    .condition(cells.clone())
                    .iter()
                    .map(|c| ShapeConstraint::join(c))
                    .collect()
            })
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
            text(&points),
            [vec!["M > 1024"], vec!["M <= 64"], vec!["M in 65..=1024"]]
        );
    }

    #[test]
    fn cells_of_several_dims_go_to_the_nearest_measurement() {
        let points = [dims(&[("M", 16), ("N", 4096)]), dims(&[("M", 4096), ("N", 512)])];
        assert_eq!(
            text(&points),
            [vec!["M <= 256"], vec!["M > 256"]],
            "N's cells merge: each measurement takes every N"
        );
        // (16, 16) and (4096, 4096) are as far from both measurements in
        // log space: the tie goes to the later one.
        let points = [dims(&[("M", 16), ("N", 4096)]), dims(&[("M", 4096), ("N", 16)])];
        assert_eq!(
            text(&points),
            [vec!["M <= 256 and N > 256"], vec!["N <= 256", "M > 256 and N > 256"]]
        );
    }

    #[test]
    fn points_that_do_not_differ_leave_every_shape_to_the_last() {
        let points = [dims(&[("M", 64)]), dims(&[("M", 64)])];
        assert_eq!(text(&points), [Vec::<String>::new(), vec![String::new()]]);
        assert!(nearest_regions(&[]).cells.is_empty());
    }

    #[test]
    fn the_cells_of_measurements_joined_merge_where_they_meet() {
        let points = [dims(&[("M", 16)]), dims(&[("M", 512)]), dims(&[("M", 4096)])];
        let regions = nearest_regions(&points);
        let joined = |a: usize, b: usize| {
            let cells = [regions.cells[a].clone(), regions.cells[b].clone()].concat();
            regions
                .condition(cells)
                .iter()
                .map(|c| ShapeConstraint::join(c))
                .collect::<Vec<_>>()
        };
        assert_eq!(joined(0, 1), ["M <= 1448"]);
        assert_eq!(joined(2, 1), ["M > 90"]);
        assert_eq!(joined(0, 2), ["M <= 90", "M > 1448"]);
    }

    #[test]
    fn cuts_are_exact_for_large_values() {
        assert_eq!(cut(16, 4096), 256);
        assert_eq!(cut(1, 2), 1);
        assert_eq!(cut(i64::MAX - 1, i64::MAX), i64::MAX - 1);
    }
}
