//! TMA tensor maps: what a kernel's `cp.async.bulk.tensor` loads read to
//! find a tile of a 2-D tensor in global memory (`spec/runtime.md`, "TMA
//! tensor maps"). The manifest lists, per kernel, the parameter each map
//! describes and the box (tile) it moves; the launcher builds a
//! [`TiledMap`] from the argument's address and shape, checks it against
//! the driver's rules, encodes it (`cuTensorMapEncodeTiled`) and passes the
//! address of the 128-byte map, copied into device memory, as a hidden
//! parameter.

use crate::{DType, RunError};

/// Bytes of an encoded tensor map (`CUtensorMap`).
pub const TENSOR_MAP_BYTES: usize = 128;

/// A 2-D tiled tensor map before it is encoded: row-major `rows × cols`
/// elements of `dtype` at `address`, read in boxes of `box_rows ×
/// box_cols`; elements of a box past the tensor's edges read as zeros.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TiledMap {
    pub address: u64,
    pub dtype: DType,
    pub rows: u64,
    pub cols: u64,
    pub box_rows: u32,
    pub box_cols: u32,
    /// Shared-memory swizzle of the box, in bytes: 0 (none), 32, 64 or 128.
    pub swizzle: u32,
}

impl TiledMap {
    /// The map of a tensor of `shape` at `address`, in boxes of `box_dims`
    /// (rows, columns), or why the driver would refuse it: the rules of
    /// `cuTensorMapEncodeTiled` for an uninterleaved map.
    pub fn new(
        address: u64,
        dtype: DType,
        shape: &[usize],
        box_dims: &[i64],
        swizzle: i64,
    ) -> Result<TiledMap, RunError> {
        let refuse = |why: String| RunError::launch(format!("cannot describe this tensor to TMA: {why}"));
        let &[rows, cols] = shape else {
            return Err(refuse(format!("it has {} dims; a tensor map here has 2", shape.len())));
        };
        let &[box_rows, box_cols] = box_dims else {
            return Err(refuse(format!("the box has {} dims, not 2", box_dims.len())));
        };
        let fit_box = |d: i64| u32::try_from(d).ok().filter(|d| (1..=256).contains(d));
        let (Some(box_rows), Some(box_cols)) = (fit_box(box_rows), fit_box(box_cols)) else {
            return Err(refuse(format!(
                "a box of {box_rows}×{box_cols}: each side is 1 to 256 elements"
            )));
        };
        let swizzle = match swizzle {
            0 | 32 | 64 | 128 => swizzle as u32,
            other => return Err(refuse(format!("a swizzle of {other} bytes (0, 32, 64 or 128)"))),
        };
        let map = TiledMap {
            address,
            dtype,
            rows: rows as u64,
            cols: cols as u64,
            box_rows,
            box_cols,
            swizzle,
        };
        if !address.is_multiple_of(16) {
            return Err(refuse(format!(
                "its address {address:#x} is not a multiple of 16 bytes"
            )));
        }
        if map.rows == 0 || map.cols == 0 || map.rows > 1 << 32 || map.cols > 1 << 32 {
            return Err(refuse(format!("its shape ({rows}, {cols}): each dim is 1 to 2^32")));
        }
        let stride = map.row_stride_bytes();
        if !stride.is_multiple_of(16) || stride >= 1 << 40 {
            return Err(refuse(format!(
                "its rows are {stride} bytes apart, and a tensor map needs a multiple of 16 below 2^40"
            )));
        }
        let box_row_bytes = u64::from(box_cols) * dtype.size() as u64;
        if !box_row_bytes.is_multiple_of(16) {
            return Err(refuse(format!(
                "a box row is {box_row_bytes} bytes, not a multiple of 16"
            )));
        }
        if swizzle != 0 && box_row_bytes > u64::from(swizzle) {
            return Err(refuse(format!(
                "a box row of {box_row_bytes} bytes is wider than its {swizzle}-byte swizzle"
            )));
        }
        Ok(map)
    }

    /// Bytes from one row to the next.
    pub fn row_stride_bytes(&self) -> u64 {
        self.cols * self.dtype.size() as u64
    }

    /// The dims, innermost first, as the driver takes them.
    pub fn global_dims(&self) -> [u64; 2] {
        [self.cols, self.rows]
    }

    /// The box, innermost first.
    pub fn box_dims(&self) -> [u32; 2] {
        [self.box_cols, self.box_rows]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bf16_matrix_with_rows_of_whole_16_byte_units_has_a_map() {
        let map = TiledMap::new(0x7f00_0000_0100, DType::Bf16, &[384, 512], &[128, 64], 0).unwrap();
        assert_eq!(map.row_stride_bytes(), 1024);
        assert_eq!(map.global_dims(), [512, 384]);
        assert_eq!(map.box_dims(), [64, 128]);
    }

    #[test]
    fn the_driver_rules_are_checked_before_encoding() {
        let refused = |address: u64, dtype, shape: &[usize], box_dims: &[i64], swizzle| {
            TiledMap::new(address, dtype, shape, box_dims, swizzle)
                .unwrap_err()
                .to_string()
        };
        assert!(refused(0x100, DType::Bf16, &[64, 201], &[64, 64], 0).contains("rows are 402 bytes apart"));
        assert!(refused(0x108, DType::Bf16, &[64, 64], &[64, 64], 0).contains("not a multiple of 16 bytes"));
        assert!(refused(0x100, DType::Bf16, &[64, 64], &[64, 4], 0).contains("a box row is 8 bytes"));
        assert!(refused(0x100, DType::Bf16, &[64, 64], &[512, 64], 0).contains("each side is 1 to 256"));
        assert!(refused(0x100, DType::F32, &[4, 64, 64], &[64, 64], 0).contains("it has 3 dims"));
        assert!(refused(0x100, DType::F32, &[0, 64], &[64, 64], 0).contains("each dim is 1 to 2^32"));
        assert!(refused(0x100, DType::Bf16, &[64, 128], &[64, 128], 128).contains("wider than its 128-byte swizzle"));
        assert!(refused(0x100, DType::Bf16, &[64, 128], &[64, 64], 48).contains("a swizzle of 48 bytes"));
    }
}
