//! Facts about types the verifiers and passes share: buffer sizes with
//! their padding, element widths, the shapes of matrix products and of
//! elementwise operations.

use tessera_ir::{Attr, Dim, MemSpace, Module, OpId, ScalarType, Type};

/// The bits of one element (`index` counts as 64).
pub fn elem_bits(s: ScalarType) -> u64 {
    u64::from(s.bits())
}

/// The padding of a shared buffer, in elements added to each row (the
/// innermost dim): the memref layout's `pad`, else the allocating op's
/// `bank_pad`, else 0.
pub fn pad_of(ty: &Type, alloc: Option<(&Module, OpId)>) -> i64 {
    if let Type::MemRef { layout, .. } = ty {
        if let Some(p) = layout.get("pad").and_then(Attr::as_int) {
            return p;
        }
    }
    alloc
        .and_then(|(m, op)| m.attr(op, "bank_pad"))
        .and_then(Attr::as_int)
        .unwrap_or(0)
}

/// The numeric swizzle span (bytes) of a shared buffer, from its type's
/// layout or its allocation's `swizzle`; named patterns have none.
pub fn swizzle_of(ty: &Type, alloc: Option<(&Module, OpId)>) -> Option<i64> {
    if let Type::MemRef { layout, .. } = ty {
        if let Some(s) = layout.get("swizzle") {
            return s.as_int();
        }
    }
    alloc.and_then(|(m, op)| m.attr(op, "swizzle")).and_then(Attr::as_int)
}

/// Whether a `span`-byte swizzle fits a buffer whose last two dims are
/// `rows` rows of `row_bits` bits: rows in multiples of 8 (the pattern
/// repeats every 8 lines) and each row whole `span`-byte units.
pub fn swizzle_fits(span: i64, rows: i64, row_bits: i64) -> bool {
    span > 0 && rows % 8 == 0 && row_bits % (8 * span) == 0
}

/// The constant value of every dim of a shaped type, or the first dim that
/// is not a constant.
pub fn const_dims(dims: &[Dim]) -> Result<Vec<u64>, &Dim> {
    dims.iter()
        .map(|d| d.as_const().and_then(|c| u64::try_from(c).ok()).ok_or(d))
        .collect()
}

/// The bytes a buffer of type `ty` occupies with `pad` elements after each
/// row; `Err` names a dim that is not a constant.
pub fn buffer_bytes(ty: &Type, pad: i64) -> Result<u64, String> {
    let (Some(dims), Some(elem)) = (ty.dims(), ty.elem()) else {
        return Ok(0);
    };
    let dims = const_dims(dims).map_err(|d| d.to_string())?;
    let pad = u64::try_from(pad).unwrap_or(0);
    let elements = match dims.split_last() {
        None => 1,
        Some((row, outer)) => outer
            .iter()
            .fold(1u64, |n, &d| n.saturating_mul(d))
            .saturating_mul(row.saturating_add(pad)),
    };
    Ok(elements.saturating_mul(elem_bits(elem)).div_ceil(8))
}

/// The bytes of one row (the innermost dim) of a shaped type, when constant.
pub fn row_bytes(ty: &Type) -> Option<u64> {
    pitch_bytes(ty, 0)
}

/// The bytes from one row's start to the next's in a buffer of type `ty`
/// whose rows are padded by `pad` elements, when constant.
pub fn pitch_bytes(ty: &Type, pad: i64) -> Option<u64> {
    let dims = ty.dims()?;
    let row = match dims.last() {
        Some(d) => u64::try_from(d.as_const()?).ok()?,
        None => 1,
    };
    let elements = row.saturating_add(u64::try_from(pad).unwrap_or(0));
    Some(elements.saturating_mul(elem_bits(ty.elem()?)).div_ceil(8))
}

/// The number of elements of a shaped type, when constant.
pub fn num_elements(ty: &Type) -> Option<u64> {
    let dims = const_dims(ty.dims()?).ok()?;
    Some(dims.iter().fold(1u64, |n, &d| n.saturating_mul(d)))
}

/// Whether `ty` is a scalar or a register tile (`tensor<…>`): what
/// elementwise ops work on.
pub fn is_value(ty: &Type) -> bool {
    matches!(ty, Type::Scalar(_) | Type::Tensor { .. })
}

pub fn is_memref_in(ty: &Type, space: MemSpace) -> bool {
    matches!(ty, Type::MemRef { space: s, .. } if *s == space)
}

/// The type of an elementwise result from two operands: equal types, or a
/// scalar broadcast over a tile of its element type.
pub fn elementwise(a: &Type, b: &Type) -> Option<Type> {
    match (a, b) {
        _ if a == b && is_value(a) => Some(a.clone()),
        (Type::Scalar(s), Type::Tensor { elem, .. }) if s == elem => Some(b.clone()),
        (Type::Tensor { elem, .. }, Type::Scalar(s)) if s == elem => Some(a.clone()),
        _ => None,
    }
}

/// `ty` with its element type replaced (a scalar becomes another scalar).
pub fn with_elem(ty: &Type, elem: ScalarType) -> Type {
    match ty {
        Type::Tensor { dims, .. } => Type::tensor(dims.clone(), elem),
        _ => Type::Scalar(elem),
    }
}

/// The operand of a matrix product: a register tile or a memref.
fn matrix(ty: &Type) -> Option<(&Dim, &Dim, ScalarType)> {
    match ty {
        Type::Tensor { dims, elem } | Type::MemRef { dims, elem, .. } if dims.len() == 2 => {
            Some((&dims[0], &dims[1], *elem))
        }
        _ => None,
    }
}

/// The dims `(M, N, K)` of `a · b + c` with `a: MxK`, `b: KxN`, `c: MxN`,
/// compared as polynomials; `Err` says what does not fit.
pub fn mma_dims(a: &Type, b: &Type, c: &Type) -> Result<(Dim, Dim, Dim), String> {
    product_dims(a, b, c, false)
}

/// [`mma_dims`] of `a · bᵀ + c` (`b: NxK`) when `transpose_b`.
pub fn product_dims(a: &Type, b: &Type, c: &Type, transpose_b: bool) -> Result<(Dim, Dim, Dim), String> {
    let (Some((m, k)), Some((k2, n)), Some((cm, cn))) = (
        matrix(a).map(|(m, k, _)| (m, k)),
        matrix(b).map(|(r, c, _)| if transpose_b { (c, r) } else { (r, c) }),
        matrix(c).map(|(m, n, _)| (m, n)),
    ) else {
        return Err(format!(
            "the operands of a matrix product are rank-2 tiles or memrefs, not `{a}`, `{b}`, `{c}`"
        ));
    };
    let b = if transpose_b {
        format!("`{b}`ᵀ")
    } else {
        format!("`{b}`")
    };
    if k != k2 {
        return Err(format!("`{a}` · {b}: the inner dims differ ({k} vs {k2})"));
    }
    if m != cm || n != cn {
        return Err(format!(
            "`{a}` · {b} is {m}x{n}, but the accumulator `{c}` is {cm}x{cn}"
        ));
    }
    Ok((m.clone(), n.clone(), k.clone()))
}

/// Whether every dim in `dims` is a constant multiple of the matching `of`.
pub fn divisible(dims: &[&Dim], of: &[i64]) -> bool {
    dims.iter()
        .zip(of)
        .all(|(d, &q)| q > 0 && d.as_const().is_some_and(|c| c > 0 && c % q == 0))
}

/// `16384` as `16_KiB`, the way a `shared(...)` budget is written.
pub fn budget_text(bytes: u64) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{}_KiB", bytes / 1024)
    } else {
        bytes.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn buffer_sizes_count_padding_per_row() {
        let t = Type::memref([64.into(), 32.into()], ScalarType::F16, MemSpace::Shared);
        assert_eq!(buffer_bytes(&t, 0), Ok(64 * 32 * 2));
        assert_eq!(buffer_bytes(&t, 8), Ok(64 * 40 * 2));
        let scalar = Type::memref([], ScalarType::F32, MemSpace::Local);
        assert_eq!(buffer_bytes(&scalar, 0), Ok(4));
        let sym = Type::memref(["BM".into(), 32.into()], ScalarType::F16, MemSpace::Shared);
        assert_eq!(buffer_bytes(&sym, 0), Err("BM".to_string()));
        let mut padded = t.clone();
        if let Type::MemRef { layout, .. } = &mut padded {
            *layout = BTreeMap::from([("pad".to_string(), Attr::Int(4))]);
        }
        assert_eq!(pad_of(&padded, None), 4);
        assert_eq!(row_bytes(&t), Some(64));
        assert_eq!(budget_text(16384), "16_KiB");
        assert_eq!(budget_text(1000), "1000");
    }

    #[test]
    fn matrix_products_compare_symbolic_dims() {
        let t = |a: &str, b: &str, e| Type::tensor([Dim::sym(a), Dim::sym(b)], e);
        let ok = mma_dims(
            &t("M", "K", ScalarType::BF16),
            &t("K", "N", ScalarType::BF16),
            &t("M", "N", ScalarType::F32),
        );
        assert_eq!(ok, Ok((Dim::sym("M"), Dim::sym("N"), Dim::sym("K"))));
        let bad = mma_dims(
            &t("M", "K", ScalarType::BF16),
            &t("J", "N", ScalarType::BF16),
            &t("M", "N", ScalarType::F32),
        );
        assert!(bad.unwrap_err().contains("inner dims differ (K vs J)"));
        assert!(divisible(&[&Dim::constant(64), &Dim::constant(32)], &[16, 8]));
        assert!(!divisible(&[&Dim::sym("M")], &[16]));
    }

    #[test]
    fn elementwise_broadcasts_scalars_over_tiles() {
        let tile = Type::tensor([4.into()], ScalarType::F32);
        assert_eq!(elementwise(&Type::F32, &tile), Some(tile.clone()));
        assert_eq!(elementwise(&tile, &tile), Some(tile.clone()));
        assert_eq!(elementwise(&Type::F16, &tile), None);
    }
}
