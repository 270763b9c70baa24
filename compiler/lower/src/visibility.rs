//! Async copies into shared memory become visible to the block at the next
//! barrier (spec/kernels.md, async copies). A kernel that reads a copied
//! buffer before any barrier — the seed's
//! `v_tile = tile.cp_async(V, block)` followed at once by
//! `tile.dot(probs, v_tile)` — would read other threads' halves of the
//! tile before they land. The value form of `tile.cp_async` promises a
//! complete tile, so the lowering inserts a block barrier before the first
//! op that reads such a buffer when none comes between.
//!
//! The analysis is per straight-line block, conservative across regions: a
//! region starts with what is pending outside plus every buffer copied
//! inside it (a loop's next iteration reads what the last one copied), and
//! what is pending after it is what was pending before or at its end. A
//! pending buffer read anywhere inside an op's regions gets its barrier
//! before that op, not at the read: the read may be in a branch that only
//! some threads take, and a barrier there would wait for the others
//! forever.

use std::collections::BTreeMap;

use tessera_ir::{Attr, BlockId, Module, OpId, OpName, ValueId};

/// Inserts the barriers for the kernel `func`.
pub(crate) fn insert_barriers(m: &mut Module, func: OpId) {
    if let Some(entry) = m.entry_block(func) {
        let mut pending = Vec::new();
        walk(m, entry, &mut pending);
    }
}

fn walk(m: &mut Module, block: BlockId, pending: &mut Vec<ValueId>) {
    let ops = m.block_ops(block).to_vec();
    for op in ops {
        match m.op(op).name.as_str() {
            "tile.async_copy" => {
                if let Some(&dst) = m.operands(op).first() {
                    pending.push(root(m, dst));
                }
                continue;
            }
            // A view reads no memory.
            "tile.wait_async" | "tile.view" => continue,
            "tile.barrier" => {
                if m.attr(op, "scope").and_then(Attr::as_str).unwrap_or("block") == "block" {
                    pending.clear();
                }
                continue;
            }
            _ => {}
        }
        // A read inside a region (a branch some threads may skip) gets
        // its barrier before the op that holds the region, where every
        // thread that got here passes.
        let reads = |o: OpId| m.operands(o).iter().any(|&v| pending.contains(&root(m, v)));
        if reads(op) || m.walk_op(op).into_iter().any(reads) {
            barrier_before(m, op);
            pending.clear();
        }
        for region in m.regions(op).to_vec() {
            let inner_block = m.region_block(region);
            let mut inner = pending.clone();
            inner.extend(copies_in(m, inner_block));
            walk(m, inner_block, &mut inner);
            for v in inner {
                if !pending.contains(&v) {
                    pending.push(v);
                }
            }
        }
    }
}

/// The destinations of the async copies anywhere under `block`.
fn copies_in(m: &Module, block: BlockId) -> Vec<ValueId> {
    m.walk_block(block)
        .into_iter()
        .filter(|&op| m.op(op).name.as_str() == "tile.async_copy")
        .filter_map(|op| m.operands(op).first().map(|&dst| root(m, dst)))
        .collect()
}

/// The buffer `v` is a view of (`bufs[s]` copies into a view of `bufs`,
/// which reads of `bufs[s, i]` index directly), or `v`.
fn root(m: &Module, mut v: ValueId) -> ValueId {
    while let Some(def) = m.defining_op(v).filter(|&d| m.op(d).name.as_str() == "tile.view") {
        v = m.operands(def)[0];
    }
    v
}

fn barrier_before(m: &mut Module, op: OpId) {
    let (Some(block), Some(at)) = (m.parent_block(op), m.position(op)) else {
        return;
    };
    let loc = m.op(op).loc.clone();
    let mut attrs = BTreeMap::new();
    attrs.insert("scope".to_string(), Attr::str("block"));
    let barrier = m.create_op(OpName::new("tile.barrier"), vec![], &[], attrs, vec![], loc);
    m.insert_op(block, at, barrier);
}
