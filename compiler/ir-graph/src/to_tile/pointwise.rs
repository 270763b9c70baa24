//! The elementwise template: a 1-D grid, one thread per output element,
//! guarded by a bound check. The thread computes its element's
//! coordinates and evaluates the kernel's ops at them: an elementwise op
//! at the (broadcast) coordinates of its operands, a transpose, reshape,
//! slice or concat by mapping the coordinates to its operand's.

use tessera_ir::{Attr, Builder, DimExpr, MemSpace, ScalarType, Type, ValueId};

use super::emit::{
    apply, binary, cast_to, compare, compared_elem, constant, end, if_else, index, thread_per_item, Gen, Result,
};
use super::{Kernel, Src};
use crate::shape::normalize_axis;

pub(crate) fn lower(g: &Gen, b: &mut Builder<'_>, k: &Kernel) -> Result<i64> {
    let out_dims = k.result.dims().map(<[_]>::to_vec).unwrap_or_default();
    let threads = k.threads();
    let (linear, then, other) = thread_per_item(g, b, threads, &out_dims)?;
    {
        let mut l = g.at(b, then);
        let coords = g.unflatten(&mut l, linear, &out_dims)?;
        let value = eval(g, &mut l, k, k.root, &coords)?;
        let value = cast_to(&mut l, value, k.result.elem().unwrap_or(ScalarType::F32));
        l.op("tile.store").operands(&[value, g.out]).operands(&coords).build();
        end(&mut l);
    }
    end(&mut g.at(b, other));
    Ok(0)
}

fn dims_of(k: &Kernel, src: Src) -> Vec<DimExpr> {
    k.ty(src).dims().map(<[_]>::to_vec).unwrap_or_default()
}

/// The coordinates in an operand of shape `from` of the element at
/// `coords` of a result of shape `to` it broadcasts to.
fn broadcast_coords(b: &mut Builder<'_>, from: &[DimExpr], to: &[DimExpr], coords: &[ValueId]) -> Vec<ValueId> {
    let lead = to.len() - from.len().min(to.len());
    let one = DimExpr::constant(1);
    from.iter()
        .enumerate()
        .map(|(j, d)| {
            if *d == one && to[lead + j] != one {
                index(b, 0)
            } else {
                coords[lead + j]
            }
        })
        .collect()
}

/// The value of `src` at `coords` (a scalar of its element type).
fn eval(g: &Gen, b: &mut Builder<'_>, k: &Kernel, src: Src, coords: &[ValueId]) -> Result<ValueId> {
    let node = match src {
        Src::Arg(i) => {
            return match &k.args[i] {
                Type::Scalar(_) => Ok(g.inputs[i]),
                Type::Tensor { elem, .. } => Ok(b
                    .op("tile.load")
                    .operand(g.inputs[i])
                    .operands(coords)
                    .result(Type::Scalar(*elem))
                    .build_value()),
                other => Err(format!("an input of type {other}")),
            };
        }
        Src::Node(n) => &k.nodes[n],
    };
    let elem = node.ty.elem().ok_or("an op without an element type")?;
    let scalar = Type::Scalar(elem);
    let here = node.ty.dims().map(<[_]>::to_vec).unwrap_or_default();
    match node.name.as_str() {
        "graph.constant" => Ok(constant(
            b,
            node.attrs.get("value").cloned().unwrap_or(Attr::Int(0)),
            scalar,
        )),
        "graph.dim" => g.dim_value(b, node, elem),
        "graph.elementwise" | "graph.broadcast" | "graph.cast" => {
            let mut values = Vec::new();
            for &o in &node.operands {
                let at = broadcast_coords(b, &dims_of(k, o), &here, coords);
                values.push(eval(g, b, k, o, &at)?);
            }
            Ok(match node.name.as_str() {
                "graph.broadcast" => values[0],
                "graph.cast" => {
                    let mut op = b.op("tile.cast").operand(values[0]);
                    if let Some(r) = node.attrs.get("rounding") {
                        op = op.attr("rounding", r.clone());
                    }
                    if node.attrs.contains_key("saturate") {
                        op = op.attr("saturate", Attr::Unit);
                    }
                    op.result(scalar).build_value()
                }
                _ => apply(
                    b,
                    node.str("fn").unwrap_or("add"),
                    &values,
                    compared_elem(k, node),
                    elem,
                    scalar,
                ),
            })
        }
        "graph.transpose" => {
            let perm = node.attrs.get("perm").and_then(Attr::as_ints).unwrap_or_default();
            let mut at = coords.to_vec();
            for (i, &p) in perm.iter().enumerate() {
                at[p as usize] = coords[i];
            }
            eval(g, b, k, node.operands[0], &at)
        }
        "graph.reshape" => {
            let from = dims_of(k, node.operands[0]);
            let linear = g.linearize(b, coords, &here)?;
            let at = g.unflatten(b, linear, &from)?;
            eval(g, b, k, node.operands[0], &at)
        }
        "graph.slice" => {
            let rank = here.len();
            let axes: Vec<usize> = match node.attrs.get("axes").and_then(Attr::as_ints) {
                Some(a) => a.into_iter().filter_map(|x| normalize_axis(x, rank)).collect(),
                None => (0..rank).collect(),
            };
            let starts = node.attrs.get("starts").and_then(Attr::as_ints);
            let steps = node.attrs.get("steps").and_then(Attr::as_ints);
            let mut at = coords.to_vec();
            for (i, &axis) in axes.iter().enumerate() {
                let start = match &starts {
                    Some(s) => index(b, s[i]),
                    None => eval(g, b, k, node.operands[1 + i], &[])?,
                };
                let step = steps.as_ref().map_or(1, |s| s[i]);
                let offset = if step == 1 {
                    coords[axis]
                } else {
                    let step = index(b, step);
                    binary(b, "mul", coords[axis], step, Type::INDEX)
                };
                // A negative step's start counts from the end of the dim.
                let start = if step < 0 {
                    let from = dims_of(k, node.operands[0])
                        .get(axis)
                        .cloned()
                        .ok_or("a slice axis past the operand's dims")?;
                    let last = g.dim(b, &from)?;
                    let one = index(b, 1);
                    let last = binary(b, "sub", last, one, Type::INDEX);
                    binary(b, "sub", last, start, Type::INDEX)
                } else {
                    start
                };
                at[axis] = binary(b, "add", offset, start, Type::INDEX);
            }
            eval(g, b, k, node.operands[0], &at)
        }
        "graph.concat" => {
            let axis = normalize_axis(node.int("axis").unwrap_or(0), here.len()).ok_or("a concat axis out of range")?;
            let slot = b
                .op("tile.local")
                .result(Type::memref([], elem, MemSpace::Local))
                .build_value();
            concat(g, b, k, &node.operands, axis, coords, DimExpr::default(), slot)?;
            Ok(b.op("tile.load").operand(slot).result(scalar).build_value())
        }
        other => Err(format!("`{other}` in an elementwise kernel")),
    }
}

/// Stores into `slot` the element at `coords` of the concatenation of
/// `parts` along `axis`, the first of which starts at `start`: a chain of
/// `tile.if` on the coordinate.
#[allow(clippy::too_many_arguments)]
fn concat(
    g: &Gen,
    b: &mut Builder<'_>,
    k: &Kernel,
    parts: &[Src],
    axis: usize,
    coords: &[ValueId],
    start: DimExpr,
    slot: ValueId,
) -> Result<()> {
    let (&first, rest) = parts.split_first().ok_or("an empty concat")?;
    let store_part = |b: &mut Builder<'_>| -> Result<()> {
        let mut at = coords.to_vec();
        let offset = g.dim(b, &start)?;
        at[axis] = binary(b, "sub", coords[axis], offset, Type::INDEX);
        let v = eval(g, b, k, first, &at)?;
        b.op("tile.store").operands(&[v, slot]).build();
        Ok(())
    };
    if rest.is_empty() {
        return store_part(b);
    }
    let end_of_first = start.add(&dims_of(k, first)[axis]);
    let bound = g.dim(b, &end_of_first)?;
    let before = compare(b, coords[axis], bound, "lt");
    let (then, other) = if_else(b, before);
    {
        let mut l = g.at(b, then);
        store_part(&mut l)?;
        end(&mut l);
    }
    let mut l = g.at(b, other);
    concat(g, &mut l, k, rest, axis, coords, end_of_first, slot)?;
    end(&mut l);
    Ok(())
}

/// What a random draw takes from its `graph.rng`, and the function that
/// draws (the function id of the stream's key).
pub(crate) struct Draw {
    pub function: String,
    pub dist: Attr,
    pub stream: Attr,
    pub seed: Option<Attr>,
    pub p: Option<Attr>,
}

/// Fills the output with random numbers: one thread per element, the
/// element's linear index as the Philox counter, drawn in the output's
/// element type.
pub(crate) fn rng(g: &Gen, b: &mut Builder<'_>, ty: &Type, threads: i64, draw: &Draw) -> Result<i64> {
    let out_dims = ty.dims().map(<[_]>::to_vec).unwrap_or_default();
    let elem = ty.elem().ok_or("random numbers without an element type")?;
    let (linear, then, other) = thread_per_item(g, b, threads, &out_dims)?;
    {
        let mut l = g.at(b, then);
        let mut op = l
            .op("tile.rng")
            .operand(linear)
            .attr("dist", draw.dist.clone())
            .attr("stream", draw.stream.clone())
            .attr("function", draw.function.as_str());
        for (name, value) in [("seed", &draw.seed), ("p", &draw.p)] {
            if let Some(value) = value {
                op = op.attr(name, value.clone());
            }
        }
        let value = op.result(Type::Scalar(elem)).build_value();
        let coords = g.unflatten(&mut l, linear, &out_dims)?;
        l.op("tile.store").operands(&[value, g.out]).operands(&coords).build();
        end(&mut l);
    }
    end(&mut g.at(b, other));
    Ok(0)
}
