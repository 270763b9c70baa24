//! Whole-tile locals (`tile.local` buffers only loaded and stored as
//! tiles) and the products that accumulate into them in place: one set of
//! rules for the code generator, which keeps such a local in registers and
//! updates it there, and the pipeline lowering, which lets such a product's
//! `wgmma` group run into the next step (`lower/ring.rs`).

use tessera_ir::{Module, OpId, Type, ValueId};

/// Whether `tile.local` op `op` is a whole-tile local: a buffer of constant
/// shape only loaded and stored as a tile, which the code generator keeps
/// as a distributed tile rather than a private array.
pub fn is_tile_local(m: &Module, op: OpId) -> bool {
    let Some(&local) = m.results(op).first() else {
        return false;
    };
    let Type::MemRef { dims, .. } = m.value_type(local) else {
        return false;
    };
    !dims.is_empty()
        && dims.iter().all(|d| d.as_const().is_some())
        && m.users(local)
            .iter()
            .all(|(u, _)| matches!(m.op(*u).name.as_str(), "tile.load_tile" | "tile.store_tile"))
}

/// Whether `tile.load_tile` `load` of a whole-tile local can give the
/// local's own storage instead of a copy: every use of the result is an op
/// of the load's block, and no `tile.store_tile` into the local (the only
/// way one is written) comes between the load and the last of those uses,
/// that use itself excepted (storing the tile back where it was loaded
/// from is then a copy onto itself).
pub fn load_shares_local(m: &Module, load: OpId) -> bool {
    let (Some(&local), Some(&value)) = (m.operands(load).first(), m.results(load).first()) else {
        return false;
    };
    if m.op(load).name != "tile.load_tile" || !is_local_tile(m, local) {
        return false;
    }
    let Some((ops, from)) = place(m, load) else {
        return false;
    };
    let mut last = from;
    for (user, _) in m.users(value) {
        match ops.iter().position(|&o| o == user) {
            Some(at) if at > from => last = last.max(at),
            _ => return false,
        }
    }
    // No use at all leaves `last == from` and nothing between.
    let between = ops.get(from + 1..last).unwrap_or_default();
    !between.iter().any(|&o| writes_local(m, o, local))
}

/// Whether product `op` can update its accumulator's storage in place
/// when that is a whole-tile local's: the accumulator is a load of local
/// `L` that shares `L`'s storage ([`load_shares_local`]) and is used by
/// `op` alone, and the product's one use is a `tile.store_tile` back into
/// `L` later in the same block with no use of `L` between (the pattern of
/// an accumulator carried across a loop's steps). Each step then neither
/// copies the accumulator out of the local nor back.
pub fn accumulates_in_place(m: &Module, op: OpId) -> bool {
    let (Some(&acc), Some(&result)) = (m.operands(op).get(2), m.results(op).first()) else {
        return false;
    };
    let Some(load) = m.defining_op(acc) else {
        return false;
    };
    let Some(&local) = m.operands(load).first() else {
        return false;
    };
    if !load_shares_local(m, load) || m.users(acc) != [(op, 2)] {
        return false;
    }
    let [(store, 0)] = m.users(result)[..] else {
        return false;
    };
    if m.op(store).name != "tile.store_tile" || m.operands(store).get(1) != Some(&local) {
        return false;
    }
    let Some((ops, at)) = place(m, op) else {
        return false;
    };
    match ops.iter().position(|&o| o == store) {
        Some(to) if at < to => !ops[at + 1..to]
            .iter()
            .any(|&o| and_nested(m, o).any(|inner| m.operands(inner).contains(&local))),
        _ => false,
    }
}

/// The ops of `op`'s block and `op`'s index among them.
fn place(m: &Module, op: OpId) -> Option<(&[OpId], usize)> {
    let ops = m.block_ops(m.parent_block(op)?);
    Some((ops, ops.iter().position(|&o| o == op)?))
}

/// Whether `op` or an op nested in it stores into `local`.
fn writes_local(m: &Module, op: OpId, local: ValueId) -> bool {
    and_nested(m, op).any(|o| m.op(o).name == "tile.store_tile" && m.operands(o).get(1) == Some(&local))
}

/// `op` and every op nested in its regions.
fn and_nested(m: &Module, op: OpId) -> impl Iterator<Item = OpId> {
    std::iter::once(op).chain(m.walk_op(op))
}

/// Whether `v` is the result of a whole-tile `tile.local`.
pub fn is_local_tile(m: &Module, v: ValueId) -> bool {
    m.defining_op(v)
        .is_some_and(|op| m.op(op).name == "tile.local" && is_tile_local(m, op))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel whose K loop body is `body` (Target IR lines over the
    /// local `%acc`, the operand tiles `%a`, `%b` and the index `%z`).
    fn kernel(body: &str) -> Module {
        let text = format!(
            r#"module @m attributes {{layer = "target", target = "sm_80"}} {{
  func.func @k(%x: memref<128x64xbf16, shared>, %y: memref<64x128xbf16, shared>, %o: memref<128x128xf32, global>) -> () attributes {{block = [256], kind = "kernel", layer = "target"}} {{
    %z = tile.const() {{value = 0}} : () -> index
    %acc = tile.local() : () -> memref<128x128xf32, local>
    %a = tile.load_tile(%x, %z, %z) : (memref<128x64xbf16, shared>, index, index) -> tensor<128x64xbf16>
    %b = tile.load_tile(%y, %z, %z) : (memref<64x128xbf16, shared>, index, index) -> tensor<64x128xbf16>
{body}
    tile.return() : () -> ()
  }}
}}
"#
        );
        tessera_ir::parse(&text).expect("the IR parses")
    }

    const LOAD: &str =
        "    %c = tile.load_tile(%acc, %z, %z) : (memref<128x128xf32, local>, index, index) -> tensor<128x128xf32>";
    const PRODUCT: &str = "    %d = nvptx.mma_sync(%a, %b, %c) {instr = [16, 8, 16], warps = [2, 4]} : (tensor<128x64xbf16>, tensor<64x128xbf16>, tensor<128x128xf32>) -> tensor<128x128xf32>";
    const STORE_D: &str =
        "    tile.store_tile(%d, %acc, %z, %z) : (tensor<128x128xf32>, memref<128x128xf32, local>, index, index) -> ()";
    const STORE_C_OUT: &str =
        "    tile.store_tile(%c, %o, %z, %z) : (tensor<128x128xf32>, memref<128x128xf32, global>, index, index) -> ()";
    const STORE_D_OUT: &str =
        "    tile.store_tile(%d, %o, %z, %z) : (tensor<128x128xf32>, memref<128x128xf32, global>, index, index) -> ()";
    const RELOAD: &str =
        "    %e = tile.load_tile(%acc, %z, %z) : (memref<128x128xf32, local>, index, index) -> tensor<128x128xf32>";

    /// (whether the load of `%acc` shares its storage, whether the product
    /// accumulates in place).
    fn verdicts(lines: &[&str]) -> (bool, bool) {
        let m = kernel(&lines.join("\n"));
        let named = |name: &str| -> Vec<OpId> { m.walk().into_iter().filter(|&o| m.op(o).name == name).collect() };
        let load = named("tile.load_tile")[2];
        let product = named("nvptx.mma_sync")[0];
        (load_shares_local(&m, load), accumulates_in_place(&m, product))
    }

    #[test]
    fn an_accumulator_carried_through_a_local_is_updated_in_place() {
        assert_eq!(verdicts(&[LOAD, PRODUCT, STORE_D]), (true, true));
    }

    #[test]
    fn a_load_still_read_after_a_store_into_the_local_is_a_copy() {
        // `%c` must keep the old value after `%d` replaces it in `%acc`.
        assert_eq!(verdicts(&[LOAD, PRODUCT, STORE_D, STORE_C_OUT]), (false, false));
    }

    #[test]
    fn a_product_used_besides_its_store_back_gets_its_own_registers() {
        assert_eq!(verdicts(&[LOAD, PRODUCT, STORE_D, STORE_D_OUT]), (true, false));
        // Read from the local between the product and the store back: the
        // read must see the old value.
        assert_eq!(verdicts(&[LOAD, PRODUCT, RELOAD, STORE_D]), (true, false));
    }

    #[test]
    fn a_load_nothing_uses_is_judged_without_a_panic() {
        let m = kernel(LOAD);
        let load = m
            .walk()
            .into_iter()
            .filter(|&o| m.op(o).name == "tile.load_tile")
            .nth(2);
        assert!(load.is_some_and(|load| load_shares_local(&m, load)));
    }

    #[test]
    fn a_product_not_stored_back_into_its_local_gets_its_own_registers() {
        assert_eq!(verdicts(&[LOAD, PRODUCT, STORE_D_OUT]), (true, false));
    }
}
