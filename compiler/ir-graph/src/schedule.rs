//! The `schedule` dialect: kernels (which graph ops run together, how they
//! are tiled and launched), mesh regions and pipeline regions with their
//! stage DAG (`spec/ir-schedule.md`).

use std::collections::{BTreeMap, HashMap, HashSet};

use tessera_base::gcd;
use tessera_ir::{
    Arity, Attr, AttrDef, AttrKind, Dialect, DimExpr, Module, OpDef, OpId, ShapeConstraint, Type, ValueDef, ValueId,
    VerifyError, VerifyErrors,
};

use crate::shape::{
    aligning_part, divisibility, is_compute, is_leaf, modulus_of, normalize_axis, tile_respects, GridDim, Layer,
};
use crate::targets::{target_names, Target};

/// The `schedule` dialect.
pub struct ScheduleDialect;

const OPS: &[OpDef] = &[
    OpDef {
        name: "schedule.kernel",
        doc: "one GPU kernel: its region holds the fused graph ops, its attributes the tiling and launch",
        operands: Arity::VARIADIC,
        results: Arity::VARIADIC,
        regions: 1,
        attrs: &[
            AttrDef::required("name", AttrKind::Str),
            AttrDef::required("pattern", AttrKind::Str),
            AttrDef::required("tile_shape", AttrKind::Array),
            AttrDef::required("block", AttrKind::Array),
            AttrDef::optional("grid", AttrKind::Array),
            AttrDef::required("stages", AttrKind::Int),
            AttrDef::optional("knobs", AttrKind::Dict),
            AttrDef::optional("warp_specialize", AttrKind::Bool),
            AttrDef::optional("narrow", AttrKind::Dict),
            AttrDef::optional("tuned", AttrKind::Array),
        ],
        pure: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "schedule.yield",
        doc: "the values a kernel, stage or region gives",
        operands: Arity::VARIADIC,
        terminator: true,
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "schedule.mesh_region",
        doc: "runs its region on every device of a mesh",
        operands: Arity::VARIADIC,
        results: Arity::VARIADIC,
        regions: 1,
        attrs: &[
            AttrDef::required("mesh_axes", AttrKind::Array),
            AttrDef::required("devices", AttrKind::Int),
        ],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "schedule.pipeline_region",
        doc: "pipeline stages over micro-batches; its region holds `schedule.stage`s",
        operands: Arity::VARIADIC,
        results: Arity::VARIADIC,
        regions: 1,
        attrs: &[
            AttrDef::required("schedule", AttrKind::Str),
            AttrDef::required("micro_batches", AttrKind::Int),
        ],
        ..OpDef::DEFAULT
    },
    OpDef {
        name: "schedule.stage",
        doc: "one stage of a pipeline, after the stages it `deps` on",
        operands: Arity::VARIADIC,
        results: Arity::VARIADIC,
        regions: 1,
        attrs: &[
            AttrDef::required("index", AttrKind::Int),
            AttrDef::required("deps", AttrKind::Array),
        ],
        ..OpDef::DEFAULT
    },
];

/// The kernel patterns, and the length of `tile_shape` each one takes
/// (`None`: any).
pub const PATTERNS: [(&str, Option<usize>); 9] = [
    ("matmul", Some(3)),
    ("matmul_epilogue", Some(3)),
    ("attention", Some(2)),
    ("softmax", Some(2)),
    ("norm", Some(2)),
    ("reduce", Some(1)),
    ("scan", Some(1)),
    ("elementwise", Some(1)),
    ("generic", None),
];

const PIPELINE_SCHEDULES: [&str; 3] = ["1f1b", "gpipe", "interleaved"];

/// The op a pattern is built around (`graph.matmul` for `matmul`).
pub fn pattern_anchor(pattern: &str) -> Option<&'static str> {
    match pattern {
        "matmul" | "matmul_epilogue" => Some("graph.matmul"),
        "softmax" => Some("graph.softmax"),
        "attention" => Some("graph.attention"),
        "norm" => Some("graph.norm"),
        "reduce" => Some("graph.reduce"),
        "scan" => Some("graph.cumsum"),
        _ => None,
    }
}

/// A dim of the problem that a tile dim covers: `(index in tile_shape,
/// the dim, its name in messages)`.
pub struct TiledDim {
    pub index: usize,
    pub dim: DimExpr,
    pub what: &'static str,
}

/// Which dims of the anchor op the entries of `tile_shape` cover: a matmul's
/// (M, N, K) for (BM, BN, BK); the row length for the column chunk of
/// softmax and norm (`[rows, cols]`) and of reduce (`[cols]`, over the last
/// reduced axis). Elementwise kernels tile the flattened output and cover
/// no named dim.
pub fn tiled_dims(m: &Module, anchor: OpId) -> Vec<TiledDim> {
    let dims = |v: ValueId| m.value_type(v).dims().map(<[_]>::to_vec).unwrap_or_default();
    let operands = m.operands(anchor);
    let Some(&x) = operands.first() else { return Vec::new() };
    let x = dims(x);
    let axis_attr = |name: &str, default: i64| m.attr(anchor, name).and_then(Attr::as_int).unwrap_or(default);
    match m.op(anchor).name.as_str() {
        "graph.matmul" if x.len() >= 2 => {
            let b = operands.get(1).map(|&b| dims(b)).unwrap_or_default();
            let Some(n) = b.last() else { return Vec::new() };
            vec![
                TiledDim {
                    index: 0,
                    dim: x[x.len() - 2].clone(),
                    what: "BM",
                },
                TiledDim {
                    index: 1,
                    dim: n.clone(),
                    what: "BN",
                },
                TiledDim {
                    index: 2,
                    dim: x[x.len() - 1].clone(),
                    what: "BK",
                },
            ]
        }
        "graph.attention" if x.len() >= 2 => {
            let k = operands.get(1).map(|&k| dims(k)).unwrap_or_default();
            let Some(n) = k.len().checked_sub(2).map(|i| k[i].clone()) else {
                return Vec::new();
            };
            vec![
                TiledDim {
                    index: 0,
                    dim: x[x.len() - 2].clone(),
                    what: "BM",
                },
                TiledDim {
                    index: 1,
                    dim: n,
                    what: "BN",
                },
            ]
        }
        "graph.softmax" | "graph.norm" => normalize_axis(axis_attr("axis", -1), x.len())
            .map(|a| TiledDim {
                index: 1,
                dim: x[a].clone(),
                what: "BC",
            })
            .into_iter()
            .collect(),
        "graph.reduce" => {
            let axes = m.attr(anchor, "axes").and_then(Attr::as_ints).unwrap_or_default();
            axes.iter()
                .filter_map(|&a| normalize_axis(a, x.len()))
                .max()
                .map(|a| TiledDim {
                    index: 0,
                    dim: x[a].clone(),
                    what: "BC",
                })
                .into_iter()
                .collect()
        }
        _ => Vec::new(),
    }
}

impl Dialect for ScheduleDialect {
    fn name(&self) -> &str {
        "schedule"
    }

    fn ops(&self) -> &[OpDef] {
        OPS
    }

    fn verify_op(&self, m: &Module, op: OpId, errors: &mut VerifyErrors) {
        let name = m.op(op).name.op().to_string();
        if name != "yield" && name != "stage" && Layer::of(m) != Ok(Layer::Schedule) {
            errors.push(
                VerifyError::at_op(
                    m,
                    op,
                    format!("`schedule.{name}` in a module whose `layer` is not \"schedule\""),
                )
                .with_label("a Schedule-IR op")
                .with_note("Schedule IR is a module with the attribute `layer = \"schedule\"` (`fuse` sets it)"),
            );
            return;
        }
        match name.as_str() {
            "kernel" => verify_kernel(m, op, errors),
            "yield" => verify_yield(m, op, errors),
            "mesh_region" => verify_mesh(m, op, errors),
            "pipeline_region" => verify_pipeline(m, op, errors),
            "stage" => verify_stage(m, op, errors),
            _ => {}
        }
    }
}

fn err(m: &Module, op: OpId, message: impl Into<String>, label: impl Into<String>) -> VerifyError {
    VerifyError::at_op(m, op, message).with_label(label)
}

/// The region's arguments are the op's operands, one for one.
fn verify_region_args(m: &Module, op: OpId, errors: &mut VerifyErrors) -> bool {
    let name = &m.op(op).name;
    let region = m.regions(op)[0];
    let args: Vec<Type> = m.region_args(region).iter().map(|&a| m.value_type(a).clone()).collect();
    let operands: Vec<Type> = m.operands(op).iter().map(|&v| m.value_type(v).clone()).collect();
    if args.len() != operands.len() {
        errors.push(err(
            m,
            op,
            format!(
                "`{name}` has {} but its region takes {}",
                tessera_base::counted(operands.len(), "operand", "operands"),
                tessera_base::counted(args.len(), "argument", "arguments")
            ),
            "the region's arguments are the operands",
        ));
        return false;
    }
    for (i, (a, o)) in args.iter().zip(&operands).enumerate() {
        if a != o {
            errors.push(err(
                m,
                op,
                format!("argument #{i} of the region of `{name}` is {a}, but operand #{i} is {o}"),
                "the region's arguments have the operands' types",
            ));
            return false;
        }
    }
    true
}

/// The ops of `op`'s region use no value from outside it: what it needs
/// comes in as operands.
fn verify_isolated(m: &Module, op: OpId, errors: &mut VerifyErrors) {
    let name = m.op(op).name.clone();
    let inside: HashSet<OpId> = m.walk_op(op).into_iter().collect();
    let region_blocks: HashSet<_> = inside
        .iter()
        .flat_map(|&o| m.regions(o).iter().map(|&r| m.region_block(r)))
        .chain(m.regions(op).iter().map(|&r| m.region_block(r)))
        .collect();
    for &inner in &m.walk_op(op) {
        for &v in m.operands(inner) {
            let local = match m.value_def(v) {
                ValueDef::Result { op: def, .. } => inside.contains(&def),
                ValueDef::BlockArg { block, .. } => region_blocks.contains(&block),
            };
            if !local {
                let mut e = err(
                    m,
                    inner,
                    format!("`{}` in a `{name}` uses a value defined outside it", m.op(inner).name),
                    "pass the value in as an operand of the region's op",
                );
                if let Some(def) = m.defining_op(v) {
                    e = e.with_related(m, def, "defined here");
                }
                errors.push(e);
                return;
            }
        }
    }
}

fn int_array(m: &Module, op: OpId, name: &str) -> Option<Vec<i64>> {
    m.attr(op, name).and_then(Attr::as_ints)
}

fn verify_kernel(m: &Module, op: OpId, errors: &mut VerifyErrors) {
    let name = m
        .attr(op, "name")
        .and_then(Attr::as_str)
        .unwrap_or_default()
        .to_string();
    match m.attrs.get("target").and_then(Attr::as_str) {
        None => errors.push(
            err(
                m,
                op,
                "Schedule IR needs the module attribute `target`",
                "a kernel for no target",
            )
            .with_note(format!("the targets are {}", target_names())),
        ),
        Some(t) if Target::by_name(t).is_none() => errors.push(
            err(
                m,
                op,
                format!("unknown target \"{t}\" in the module's `target`"),
                "in this module",
            )
            .with_note(format!("the targets are {}", target_names())),
        ),
        Some(_) => {}
    }
    if !verify_region_args(m, op, errors) {
        return;
    }
    verify_isolated(m, op, errors);
    let earlier = m
        .walk()
        .into_iter()
        .take_while(|&o| o != op)
        .find(|&o| m.op(o).name == "schedule.kernel" && m.attr(o, "name").and_then(Attr::as_str) == Some(&name));
    if let Some(first) = earlier {
        errors.push(
            err(
                m,
                op,
                format!("two kernels are named \"{name}\""),
                "second kernel of this name",
            )
            .with_related(m, first, "the first one")
            .with_note("a kernel's name becomes the name of its Tile-IR function"),
        );
    }
    let region = m.regions(op)[0];
    let body = m.block_ops(m.region_block(region)).to_vec();
    for &inner in &body {
        let inner_name = m.op(inner).name.as_str();
        let allowed = inner_name == "schedule.yield" || is_leaf(inner_name) || is_compute(inner_name);
        if !allowed {
            errors.push(
                err(
                    m,
                    inner,
                    format!("`{inner_name}` inside a `schedule.kernel`"),
                    "a kernel holds compute graph ops, constants and dims only",
                )
                .with_note("side effects, calls and regions stay at the function level"),
            );
            return;
        }
    }
    let pattern = m
        .attr(op, "pattern")
        .and_then(Attr::as_str)
        .unwrap_or_default()
        .to_string();
    let Some(&(_, tile_rank)) = PATTERNS.iter().find(|(p, _)| *p == pattern) else {
        let list: Vec<String> = PATTERNS.iter().map(|(p, _)| format!("\"{p}\"")).collect();
        errors.push(
            err(m, op, format!("unknown kernel pattern \"{pattern}\""), "not a pattern")
                .with_note(format!("the patterns are {}", list.join(", "))),
        );
        return;
    };
    let mut anchor = None;
    if let Some(anchor_name) = pattern_anchor(&pattern) {
        let found: Vec<OpId> = body.iter().copied().filter(|&o| m.op(o).name == anchor_name).collect();
        if found.len() != 1 {
            errors.push(err(
                m,
                op,
                format!(
                    "a \"{pattern}\" kernel holds exactly one `{anchor_name}`, this one {}",
                    found.len()
                ),
                "the pattern does not match the ops",
            ));
            return;
        }
        anchor = found.first().copied();
        let others = body.iter().any(|&o| {
            let n = m.op(o).name.as_str();
            n != anchor_name && is_compute(n) && !crate::shape::is_pointwise(n)
        });
        if others {
            errors.push(err(
                m,
                op,
                format!("a \"{pattern}\" kernel holds one `{anchor_name}` and elementwise ops around it"),
                "another reducing op in this kernel",
            ));
            return;
        }
        // A transpose that feeds the matmul's rhs is read, not computed
        // after: it is no epilogue.
        let rhs = anchor
            .filter(|&mm| m.op(mm).name == "graph.matmul")
            .and_then(|mm| m.operands(mm).get(1).copied());
        let epilogue = body.iter().any(|&o| {
            crate::shape::is_pointwise(m.op(o).name.as_str())
                && !(m.op(o).name == "graph.transpose" && m.results(o).first().copied() == rhs)
        });
        if pattern == "matmul" && epilogue {
            errors.push(err(
                m,
                op,
                "a \"matmul\" kernel has no epilogue; this one does: its pattern is \"matmul_epilogue\"",
                "elementwise ops after the matmul",
            ));
            return;
        }
    } else if pattern == "elementwise" {
        if let Some(&bad) = body.iter().find(|&&o| {
            let n = m.op(o).name.as_str();
            is_compute(n) && !crate::shape::is_pointwise(n)
        }) {
            errors.push(
                err(
                    m,
                    op,
                    format!("an \"elementwise\" kernel holds `{}`", m.op(bad).name),
                    "not an elementwise op",
                )
                .with_related(m, bad, "here"),
            );
            return;
        }
    }
    let whole = |key: &str| m.attr(op, key);
    let Some(tile) = verify_geometry(
        m,
        op,
        &format!("kernel \"{name}\""),
        &pattern,
        tile_rank,
        &whole,
        errors,
    ) else {
        return;
    };
    if let Some(knobs) = m.attr(op, "knobs").and_then(Attr::as_dict) {
        for (knob, values) in knobs {
            if values.as_ints().is_none_or(|v| v.is_empty()) {
                errors.push(err(
                    m,
                    op,
                    format!("knob `{knob}` of kernel \"{name}\" must list candidate integers, not {values}"),
                    "bad knob",
                ));
            }
        }
    }
    if let Some(anchor) = anchor {
        verify_tile_constraints(m, op, anchor, &tile, errors);
    }
    if let Some(narrow) = m.attr(op, "narrow") {
        verify_narrow(m, op, anchor, &name, &pattern, narrow, errors);
    }
    if let Some(Attr::Array(variants)) = m.attr(op, "tuned") {
        verify_tuned(m, op, anchor, &name, &pattern, variants, errors);
    }
}

/// A kernel's `tuned` variants (`[{when, tile_shape, block, stages, grid,
/// warp_specialize}, …]`): the geometries of configurations tuned at
/// several shapes, each launched where one of its `when` conjunctions
/// holds. Only matmul and attention kernels, which the tuning knobs
/// shape, take them, never with a `narrow` variant; at least two, each
/// with conditions over the function's dims and a geometry checked as the
/// kernel's own.
fn verify_tuned(
    m: &Module,
    op: OpId,
    anchor: Option<OpId>,
    name: &str,
    pattern: &str,
    variants: &[Attr],
    errors: &mut VerifyErrors,
) {
    let bad = |message: String| err(m, op, message, "bad tuned variant");
    let tunable = pattern.starts_with("matmul") || pattern == "attention";
    let Some(anchor) = anchor.filter(|_| tunable) else {
        errors.push(bad(format!(
            "kernel \"{name}\" has `tuned` variants, which only matmul and attention kernels take"
        )));
        return;
    };
    if m.attr(op, "narrow").is_some() {
        errors.push(
            bad(format!("kernel \"{name}\" has both `tuned` and `narrow` variants"))
                .with_note("a tuning replaces the target's defaults, the narrow variant among them"),
        );
    }
    if variants.len() < 2 {
        errors.push(bad(format!(
            "kernel \"{name}\" has {} `tuned` variant{}; a kernel with one geometry takes it as its own",
            variants.len(),
            if variants.len() == 1 { "" } else { "s" }
        )));
    }
    let dims = m
        .enclosing_function(op)
        .map(|f| crate::shape::function_dims(m, f))
        .unwrap_or_default();
    let rank = PATTERNS.iter().find(|(p, _)| *p == pattern).and_then(|&(_, r)| r);
    for (i, variant) in variants.iter().enumerate() {
        let what = format!("tuned variant #{i} of kernel \"{name}\"");
        let Some(dict) = variant.as_dict() else {
            errors.push(bad(format!("{what} must be a dictionary, not {variant}")));
            continue;
        };
        let when = dict.get("when").and_then(Attr::as_array).filter(|w| !w.is_empty());
        let Some(when) = when else {
            errors.push(bad(format!(
                "`when` of {what} must list the conditions it is launched under, not {}",
                dict.get("when")
                    .map(ToString::to_string)
                    .unwrap_or_else(|| "nothing".into())
            )));
            continue;
        };
        for condition in when {
            match condition.as_str().and_then(ShapeConstraint::parse_all) {
                None => errors.push(bad(format!(
                    "`when` of {what} holds {condition}, which is not a conjunction of shape constraints"
                ))),
                Some(all) => {
                    let unknown: Vec<&str> = all
                        .iter()
                        .flat_map(ShapeConstraint::symbols)
                        .filter(|s| !dims.contains(*s))
                        .collect();
                    if let Some(first) = unknown.first() {
                        errors.push(bad(format!(
                            "`when` of {what} names `{first}`, which is not a dim of the function's parameters"
                        )));
                    }
                }
            }
        }
        if dict.get("warp_specialize").is_some_and(|w| w.as_bool().is_none()) {
            errors.push(bad(format!("`warp_specialize` of {what} must be a boolean")));
        }
        let get = |key: &str| dict.get(key);
        if let Some(tile) = verify_geometry(m, op, &what, pattern, rank, &get, errors) {
            verify_tile_constraints(m, op, anchor, &tile, errors);
        }
    }
}

/// A matmul's `narrow` variant (`{max_m, tile_shape, block, stages,
/// grid}`): the kernel launched instead when M is at most `max_m`, whose
/// geometry is checked as the kernel's own. M must be a symbolic dim (a
/// constant one gets the fitting tile instead).
fn verify_narrow(
    m: &Module,
    op: OpId,
    anchor: Option<OpId>,
    name: &str,
    pattern: &str,
    narrow: &Attr,
    errors: &mut VerifyErrors,
) {
    let bad = |message: String| err(m, op, message, "bad narrow variant");
    // The op's definition has checked that it is a dict.
    let Some(dict) = narrow.as_dict() else { return };
    let Some(anchor) = anchor.filter(|_| pattern.starts_with("matmul")) else {
        errors.push(bad(format!(
            "kernel \"{name}\" has a `narrow` variant, which only matmul kernels take"
        )));
        return;
    };
    let max_m = dict.get("max_m").and_then(Attr::as_int).filter(|&v| v > 0);
    if max_m.is_none() {
        let shown = dict
            .get("max_m")
            .map(ToString::to_string)
            .unwrap_or_else(|| "nothing".into());
        errors.push(bad(format!(
            "`max_m` of the narrow variant of kernel \"{name}\" must be a positive integer, not {shown}"
        )));
    }
    let m_dim = tiled_dims(m, anchor).into_iter().find(|t| t.index == 0).map(|t| t.dim);
    if let Some(d) = m_dim.filter(|d| d.as_const().is_some()) {
        errors.push(
            bad(format!("kernel \"{name}\" has a `narrow` variant, but its M is the constant {d}"))
                .with_note("a narrow variant is launched for the small values of a symbolic M; a constant M gets its tile directly"),
        );
    }
    let get = |key: &str| dict.get(key);
    let what = format!("the narrow variant of kernel \"{name}\"");
    let rank = PATTERNS.iter().find(|(p, _)| *p == pattern).and_then(|&(_, r)| r);
    if let Some(tile) = verify_geometry(m, op, &what, pattern, rank, &get, errors) {
        verify_tile_constraints(m, op, anchor, &tile, errors);
    }
}

/// A kernel's launch geometry, read through `get` (the kernel's own
/// attributes, or its narrow variant's): `tile_shape` positive and of the
/// pattern's rank, 1 to 3 positive `block` dims of at most 1024 threads,
/// at least one of `stages`, and a `grid` of block counts. The tile, when
/// there is one to check further.
fn verify_geometry<'a>(
    m: &Module,
    op: OpId,
    what: &str,
    pattern: &str,
    tile_rank: Option<usize>,
    get: &dyn Fn(&str) -> Option<&'a Attr>,
    errors: &mut VerifyErrors,
) -> Option<Vec<i64>> {
    let Some(tile) = get("tile_shape")
        .and_then(Attr::as_ints)
        .filter(|t| !t.is_empty() && t.iter().all(|&x| x > 0))
    else {
        let shown = get("tile_shape").map(ToString::to_string).unwrap_or_default();
        errors.push(err(
            m,
            op,
            format!("`tile_shape` of {what} must be positive integers, not {shown}"),
            "bad tile shape",
        ));
        return None;
    };
    if let Some(rank) = tile_rank.filter(|&r| r != tile.len()) {
        let meaning = match pattern {
            "matmul" | "matmul_epilogue" => "[BM, BN, BK]",
            "softmax" | "norm" => "[rows, columns]",
            "reduce" => "[columns]",
            "scan" => "[lines]",
            _ => "[elements]",
        };
        errors.push(err(
            m,
            op,
            format!(
                "`tile_shape` of {what} has {} entries; a \"{pattern}\" kernel takes {rank}: {meaning}",
                tile.len()
            ),
            "wrong number of tile dims",
        ));
        return None;
    }
    match get("block").and_then(Attr::as_ints) {
        Some(block) if (1..=3).contains(&block.len()) && block.iter().all(|&b| b > 0) => {
            let threads: i64 = block.iter().product();
            if threads > 1024 {
                errors.push(
                    err(
                        m,
                        op,
                        format!("{what} has {threads} threads per block, more than 1024"),
                        "too many threads",
                    )
                    .with_note("a block has 1 to 1024 threads on every target"),
                );
            }
        }
        _ => {
            let shown = get("block").map(ToString::to_string).unwrap_or_default();
            errors.push(err(
                m,
                op,
                format!("`block` of {what} must be 1 to 3 positive integers, not {shown}"),
                "bad block shape",
            ));
        }
    }
    let stages = get("stages").and_then(Attr::as_int).unwrap_or(0);
    if stages < 1 {
        errors.push(err(
            m,
            op,
            format!("{what} has `stages = {stages}`; it needs at least 1"),
            "no pipeline stage",
        ));
    }
    if let Some(grid) = get("grid") {
        let entries: Option<Vec<GridDim>> = grid
            .as_array()
            .filter(|g| (1..=3).contains(&g.len()))
            .and_then(|g| g.iter().map(GridDim::from_attr).collect());
        let persistent = entries
            .as_ref()
            .is_some_and(|g| g.iter().any(|d| matches!(d, GridDim::Persistent(_))));
        if persistent && entries.as_ref().is_some_and(|g| g.len() > 1) {
            errors.push(
                err(
                    m,
                    op,
                    format!("the persistent `grid` of {what} has more than one entry: {grid}"),
                    "bad grid",
                )
                .with_note("a persistent grid is one entry, `[\"persistent(work, …)\"]`: its blocks walk all the work"),
            );
        } else if persistent && !pattern.starts_with("matmul") {
            errors.push(
                err(
                    m,
                    op,
                    format!("{what} has a persistent grid, which only matmul kernels walk"),
                    "bad grid",
                )
                .with_note("other kernels compute one tile per block"),
            );
        }
        if entries.is_none() {
            errors.push(
                err(
                    m,
                    op,
                    format!("`grid` of {what} must be 1 to 3 block counts, not {grid}"),
                    "bad grid",
                )
                .with_note("a block count is a positive integer, a dim (\"B*H\"), \"cdiv(dim, tile)\" or \"persistent(count, …)\""),
            );
        }
    }
    Some(tile)
}

/// Tile shapes respect the `where` constraints: a tile dim over a dim with
/// a divisibility constraint divides the constraint's modulus (tiles never
/// straddle the end of such a dim) or is a multiple of its power-of-two
/// part (every tile starts where the dim's alignment facts hold).
fn verify_tile_constraints(m: &Module, kernel: OpId, anchor: OpId, tile: &[i64], errors: &mut VerifyErrors) {
    let constraints = divisibility(m, m.enclosing_function(kernel));
    for t in tiled_dims(m, anchor) {
        let Some(&size) = tile.get(t.index) else { continue };
        let Some(c) = modulus_of(&constraints, &t.dim) else {
            continue;
        };
        if !tile_respects(size, c.modulus) {
            let aligning = aligning_part(c.modulus);
            errors.push(
                err(
                    m,
                    kernel,
                    format!(
                        "tile dim {} = {size} neither divides {} nor is a multiple of {aligning}, the power of two the constraint `{}` makes {} a multiple of",
                        t.what, c.modulus, c.text, t.dim
                    ),
                    "the tile shape does not respect the `where` clause",
                )
                .with_related(m, anchor, format!("{} is tiled here", t.dim))
                .with_note(format!(
                    "tiles would start at multiples of {} only; choose a {} that divides {} or a multiple of {aligning}",
                    gcd(aligning, size),
                    t.what,
                    c.modulus,
                )),
            );
        }
    }
}

fn verify_yield(m: &Module, op: OpId, errors: &mut VerifyErrors) {
    let parent = m.parent_op(op);
    let Some(parent) = parent.filter(|&p| {
        matches!(
            m.op(p).name.as_str(),
            "schedule.kernel" | "schedule.stage" | "schedule.mesh_region" | "schedule.pipeline_region"
        )
    }) else {
        errors.push(err(
            m,
            op,
            "`schedule.yield` outside a kernel, stage or region",
            "nothing to yield to",
        ));
        return;
    };
    let given: Vec<Type> = m.operands(op).iter().map(|&v| m.value_type(v).clone()).collect();
    let expected: Vec<Type> = m.results(parent).iter().map(|&v| m.value_type(v).clone()).collect();
    if given != expected {
        let show = |ts: &[Type]| ts.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        errors.push(
            err(
                m,
                op,
                format!(
                    "`schedule.yield` gives ({}) but `{}` has results ({})",
                    show(&given),
                    m.op(parent).name,
                    show(&expected)
                ),
                "the yielded values are the results",
            )
            .with_related(m, parent, "the results are declared here"),
        );
    }
}

fn verify_mesh(m: &Module, op: OpId, errors: &mut VerifyErrors) {
    verify_region_args(m, op, errors);
    let axes_ok = m
        .attr(op, "mesh_axes")
        .and_then(Attr::as_array)
        .is_some_and(|a| !a.is_empty() && a.iter().all(|x| x.as_str().is_some()));
    if !axes_ok {
        errors.push(err(
            m,
            op,
            "`mesh_axes` of `schedule.mesh_region` must name at least one axis",
            "no mesh axis",
        ));
    }
    let devices = m.attr(op, "devices").and_then(Attr::as_int).unwrap_or(0);
    if devices < 1 {
        errors.push(err(
            m,
            op,
            format!("`schedule.mesh_region` runs on {devices} devices; it needs at least 1"),
            "no device",
        ));
    }
}

fn verify_stage(m: &Module, op: OpId, errors: &mut VerifyErrors) {
    if m.parent_op(op)
        .is_none_or(|p| m.op(p).name != "schedule.pipeline_region")
    {
        errors.push(err(
            m,
            op,
            "`schedule.stage` outside a `schedule.pipeline_region`",
            "a stage belongs to a pipeline",
        ));
        return;
    }
    if verify_region_args(m, op, errors) {
        verify_isolated(m, op, errors);
    }
}

/// The stage DAG: indices 0..n, each once; deps name existing stages and
/// form no cycle; a stage uses only the pipeline's inputs and the results
/// of the stages it depends on.
fn verify_pipeline(m: &Module, op: OpId, errors: &mut VerifyErrors) {
    verify_region_args(m, op, errors);
    let schedule = m.attr(op, "schedule").and_then(Attr::as_str).unwrap_or_default();
    if !PIPELINE_SCHEDULES.contains(&schedule) {
        errors.push(
            err(
                m,
                op,
                format!("unknown pipeline schedule \"{schedule}\""),
                "not a schedule",
            )
            .with_note("the schedules are \"1f1b\", \"gpipe\" and \"interleaved\""),
        );
    }
    let micro = m.attr(op, "micro_batches").and_then(Attr::as_int).unwrap_or(0);
    if micro < 1 {
        errors.push(err(
            m,
            op,
            format!("a pipeline of {micro} micro-batches; it needs at least 1"),
            "no micro-batch",
        ));
    }
    let block = m.region_block(m.regions(op)[0]);
    let mut stages: BTreeMap<i64, OpId> = BTreeMap::new();
    for &inner in m.block_ops(block) {
        match m.op(inner).name.as_str() {
            "schedule.stage" => {
                let index = m.attr(inner, "index").and_then(Attr::as_int).unwrap_or(-1);
                if let Some(&first) = stages.get(&index) {
                    errors.push(
                        err(
                            m,
                            inner,
                            format!("two stages have index {index}"),
                            "second stage of this index",
                        )
                        .with_related(m, first, "the first one"),
                    );
                    return;
                }
                stages.insert(index, inner);
            }
            "schedule.yield" => {}
            other => {
                errors.push(
                    err(
                        m,
                        inner,
                        format!("`{other}` directly in a `schedule.pipeline_region`"),
                        "a pipeline holds stages only",
                    )
                    .with_note("put the op in a `schedule.stage`"),
                );
                return;
            }
        }
    }
    let n = stages.len() as i64;
    if let Some((&bad, &stage)) = stages.iter().find(|(&i, _)| !(0..n).contains(&i)) {
        errors.push(
            err(
                m,
                stage,
                format!("stage index {bad} is out of 0..{n}"),
                "stage indices run from 0 without gaps",
            )
            .with_note(format!("a pipeline of {n} stages numbers them 0 to {}", n - 1)),
        );
        return;
    }
    let mut deps: HashMap<i64, Vec<i64>> = HashMap::new();
    for (&index, &stage) in &stages {
        let Some(list) = int_array(m, stage, "deps") else {
            errors.push(err(m, stage, "`deps` of a stage must be stage indices", "not integers"));
            return;
        };
        for &d in &list {
            if !stages.contains_key(&d) {
                errors.push(
                    err(
                        m,
                        stage,
                        format!("stage {index} depends on stage {d}, which does not exist"),
                        "unknown stage in `deps`",
                    )
                    .with_note(format!("the stages are 0 to {}", n - 1)),
                );
                return;
            }
        }
        deps.insert(index, list);
    }
    if let Some(cycle) = find_cycle(&deps, n) {
        let path: Vec<String> = cycle.iter().map(ToString::to_string).collect();
        errors.push(
            err(
                m,
                stages[&cycle[0]],
                format!("stages {} form a cycle", path.join(" → ")),
                "this stage depends on itself through `deps`",
            )
            .with_note("the stages of a pipeline form a DAG"),
        );
        return;
    }
    let producer: HashMap<ValueId, i64> = stages
        .iter()
        .flat_map(|(&i, &s)| m.results(s).iter().map(move |&r| (r, i)))
        .collect();
    let inputs: HashSet<ValueId> = m.block_args(block).iter().copied().collect();
    for (&index, &stage) in &stages {
        for &v in m.operands(stage) {
            if inputs.contains(&v) {
                continue;
            }
            let message = match producer.get(&v) {
                Some(p) if deps[&index].contains(p) => continue,
                Some(p) => format!(
                    "stage {index} uses a value of stage {p}, which is not among its deps {}",
                    Attr::ints(deps[&index].iter().copied())
                ),
                None => format!("stage {index} uses a value from outside the pipeline"),
            };
            let mut e = err(
                m,
                stage,
                message,
                "a stage sees its deps' results and the pipeline's inputs",
            );
            if let Some(def) = m.defining_op(v) {
                e = e.with_related(m, def, "the value comes from here");
            }
            errors.push(e);
            return;
        }
    }
}

/// A cycle of the dependency graph, as the stage indices along it.
fn find_cycle(deps: &HashMap<i64, Vec<i64>>, n: i64) -> Option<Vec<i64>> {
    // 0 = unvisited, 1 = on the current path, 2 = done.
    let mut state = vec![0u8; n as usize];
    let mut path = Vec::new();
    fn visit(s: i64, deps: &HashMap<i64, Vec<i64>>, state: &mut [u8], path: &mut Vec<i64>) -> Option<Vec<i64>> {
        state[s as usize] = 1;
        path.push(s);
        for &d in deps.get(&s).into_iter().flatten() {
            match state[d as usize] {
                1 => {
                    let start = path.iter().position(|&p| p == d).expect("on the path");
                    let mut cycle = path[start..].to_vec();
                    cycle.push(d);
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(d, deps, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state[s as usize] = 2;
        None
    }
    (0..n).find_map(|s| {
        if state[s as usize] == 0 {
            visit(s, deps, &mut state, &mut path)
        } else {
            None
        }
    })
}
