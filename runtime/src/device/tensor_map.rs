//! TMA tensor maps: what a kernel's `cp.async.bulk.tensor` loads read to
//! find a tile of a tensor of 2 to 5 dims in global memory (`spec/runtime.md`, "TMA
//! tensor maps"). The manifest lists, per kernel, the parameter each map
//! describes and the box (tile) it moves; the launcher builds a
//! [`TiledMap`] from the argument's address and shape, checks it against
//! the driver's rules, encodes it (`cuTensorMapEncodeTiled`) and passes the
//! address of the 128-byte map, copied into device memory, as a hidden
//! parameter.

use crate::{DType, RunError};

/// Bytes of an encoded tensor map (`CUtensorMap`).
pub const TENSOR_MAP_BYTES: usize = 128;

/// The most dims a tensor map describes.
pub const MAX_RANK: usize = 5;

/// A tiled tensor map before it is encoded: a row-major tensor of `dims`
/// (outer first) of `dtype` at `address`, read in boxes of `box_dims`;
/// elements of a box past the tensor's edges read as zeros. A kernel that
/// loads 2-D tiles of a slice of the tensor (a `tile.view` fixing leading
/// dims) reads boxes whose leading dims are 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TiledMap {
    pub address: u64,
    pub dtype: DType,
    /// The tensor's dims, outer first.
    pub dims: Vec<u64>,
    /// The box's dims, outer first.
    pub box_dims: Vec<u32>,
    /// Shared-memory swizzle of the box, in bytes: 0 (none), 32, 64 or 128.
    pub swizzle: u32,
}

impl TiledMap {
    /// The map of a tensor of `shape` at `address`, in boxes of `box_dims`
    /// (one per dim, outer first), or why the driver would refuse it: the
    /// rules of `cuTensorMapEncodeTiled` for an uninterleaved map.
    pub fn new(
        address: u64,
        dtype: DType,
        shape: &[usize],
        box_dims: &[i64],
        swizzle: i64,
    ) -> Result<TiledMap, RunError> {
        let refuse = |why: String| RunError::launch(format!("cannot describe this tensor to TMA: {why}"));
        if !(2..=MAX_RANK).contains(&shape.len()) {
            return Err(refuse(format!(
                "it has {} dims; a tensor map here has 2 to {MAX_RANK}",
                shape.len()
            )));
        }
        if box_dims.len() != shape.len() {
            return Err(refuse(format!(
                "the box has {} dims, and the tensor {}",
                box_dims.len(),
                shape.len()
            )));
        }
        let sides: Option<Vec<u32>> = box_dims
            .iter()
            .map(|&d| u32::try_from(d).ok().filter(|d| (1..=256).contains(d)))
            .collect();
        let Some(sides) = sides else {
            let text: Vec<String> = box_dims.iter().map(i64::to_string).collect();
            return Err(refuse(format!(
                "a box of {}: each side is 1 to 256 elements",
                text.join("×")
            )));
        };
        let swizzle = match swizzle {
            0 | 32 | 64 | 128 => swizzle as u32,
            other => return Err(refuse(format!("a swizzle of {other} bytes (0, 32, 64 or 128)"))),
        };
        let map = TiledMap {
            address,
            dtype,
            dims: shape.iter().map(|&d| d as u64).collect(),
            box_dims: sides,
            swizzle,
        };
        if !address.is_multiple_of(16) {
            return Err(refuse(format!(
                "its address {address:#x} is not a multiple of 16 bytes"
            )));
        }
        if map.dims.iter().any(|&d| d == 0 || d > 1 << 32) {
            return Err(refuse(format!("its shape {shape:?}: each dim is 1 to 2^32")));
        }
        for stride in map.global_strides() {
            if !stride.is_multiple_of(16) || stride >= 1 << 40 {
                return Err(refuse(format!(
                    "its dims are {stride} bytes apart, and a tensor map needs a multiple of 16 below 2^40"
                )));
            }
        }
        let box_row_bytes = u64::from(map.box_dims[map.box_dims.len() - 1]) * dtype.size() as u64;
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

    /// The bytes from one index to the next of each dim but the innermost,
    /// innermost first, as the driver takes them (saturating: a stride past
    /// 2^40 is refused anyway).
    pub fn global_strides(&self) -> Vec<u64> {
        let mut stride = self.dtype.size() as u64;
        self.dims[1..]
            .iter()
            .rev()
            .map(|&d| {
                stride = stride.saturating_mul(d);
                stride
            })
            .collect()
    }

    /// The dims, innermost first, as the driver takes them.
    pub fn global_dims(&self) -> Vec<u64> {
        self.dims.iter().rev().copied().collect()
    }

    /// The box, innermost first.
    pub fn global_box(&self) -> Vec<u32> {
        self.box_dims.iter().rev().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bf16_matrix_with_rows_of_whole_16_byte_units_has_a_map() {
        let map = TiledMap::new(0x7f00_0000_0100, DType::Bf16, &[384, 512], &[128, 64], 0).unwrap();
        assert_eq!(map.global_strides(), [1024]);
        assert_eq!(map.global_dims(), [512, 384]);
        assert_eq!(map.global_box(), [64, 128]);
    }

    #[test]
    fn a_slice_of_a_rank_4_tensor_is_a_box_with_leading_ones() {
        // [B, H, T, D] = [2, 3, 1000, 128] bf16, tiles of 64 rows × 64 columns.
        let map = TiledMap::new(0x1000, DType::Bf16, &[2, 3, 1000, 128], &[1, 1, 64, 64], 128).unwrap();
        assert_eq!(map.global_dims(), [128, 1000, 3, 2]);
        assert_eq!(map.global_strides(), [256, 256 * 1000, 256 * 1000 * 3]);
        assert_eq!(map.global_box(), [64, 64, 1, 1]);
    }

    #[test]
    fn the_driver_rules_are_checked_before_encoding() {
        let refused = |address: u64, dtype, shape: &[usize], box_dims: &[i64], swizzle| {
            TiledMap::new(address, dtype, shape, box_dims, swizzle)
                .unwrap_err()
                .to_string()
        };
        assert!(refused(0x100, DType::Bf16, &[64, 201], &[64, 64], 0).contains("dims are 402 bytes apart"));
        assert!(refused(0x108, DType::Bf16, &[64, 64], &[64, 64], 0).contains("not a multiple of 16 bytes"));
        assert!(refused(0x100, DType::Bf16, &[64, 64], &[64, 4], 0).contains("a box row is 8 bytes"));
        assert!(
            refused(0x100, DType::Bf16, &[64, 64], &[512, 64], 0).contains("a box of 512×64: each side is 1 to 256")
        );
        assert!(refused(0x100, DType::F32, &[4, 64, 64], &[64, 64], 0).contains("the box has 2 dims, and the tensor 3"));
        assert!(refused(0x100, DType::F32, &[64], &[64], 0).contains("it has 1 dims"));
        assert!(refused(0x100, DType::F32, &[1, 1, 1, 1, 1, 64], &[1; 6], 0).contains("2 to 5"));
        assert!(refused(0x100, DType::F32, &[0, 64], &[64, 64], 0).contains("each dim is 1 to 2^32"));
        assert!(refused(0x100, DType::Bf16, &[64, 128], &[64, 128], 128).contains("wider than its 128-byte swizzle"));
        assert!(refused(0x100, DType::Bf16, &[64, 128], &[64, 64], 48).contains("a swizzle of 48 bytes"));
        assert!(refused(0x100, DType::Bf16, &[2, 1 << 17, 1 << 17, 64], &[1, 1, 64, 64], 0).contains("below 2^40"));
    }
}
