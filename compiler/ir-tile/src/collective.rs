//! The attributes a collective carries, checked the same way in Graph IR
//! (`graph.all_reduce`) and Tile IR (`tile.all_reduce`).

use tessera_ir::{Attr, Module, OpId};

/// Reduction kinds of a collective.
pub const COLLECTIVE_OPS: [&str; 5] = ["sum", "mean", "max", "min", "prod"];

/// Algorithms a collective may ask for; each has a fixed reduction order
/// (spec/runtime.md, Collectives).
pub const COLLECTIVE_ALGOS: [&str; 2] = ["binary_tree", "ring"];

/// What is wrong with the mesh attributes of collective `op`, if anything:
/// `algo` must be known, `mesh_shape` must give a positive size per axis of
/// `mesh_axes`, and `axis` must be one of `mesh_axes`.
pub fn check_collective_mesh(m: &Module, op: OpId) -> Option<String> {
    let name = m.op(op).name.as_str();
    if let Some(algo) = m.attr(op, "algo").and_then(Attr::as_str) {
        if !COLLECTIVE_ALGOS.contains(&algo) {
            return Some(format!(
                "unknown algo \"{algo}\" of `{name}`: it is \"binary_tree\" or \"ring\""
            ));
        }
    }
    let axes: Option<Vec<&str>> = m
        .attr(op, "mesh_axes")
        .and_then(Attr::as_array)
        .map(|a| a.iter().filter_map(Attr::as_str).collect());
    if let Some(shape) = m.attr(op, "mesh_shape") {
        let sizes = shape.as_ints().filter(|s| s.iter().all(|&d| d > 0));
        let Some(sizes) = sizes else {
            return Some(format!("`mesh_shape` of `{name}` must list positive sizes"));
        };
        match &axes {
            None => return Some(format!("`{name}` has a `mesh_shape` but no `mesh_axes`")),
            Some(axes) if axes.len() != sizes.len() => {
                return Some(format!(
                    "`mesh_shape` of `{name}` has {} sizes for {} mesh axes",
                    sizes.len(),
                    axes.len()
                ))
            }
            Some(_) => {}
        }
    }
    if let (Some(axis), Some(axes)) = (m.attr(op, "axis").and_then(Attr::as_str), &axes) {
        if !axes.contains(&axis) {
            return Some(format!(
                "`{name}` reduces over axis \"{axis}\", which its mesh (axes {}) does not have",
                axes.iter().map(|a| format!("\"{a}\"")).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    None
}
