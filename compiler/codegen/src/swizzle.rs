//! Swizzled shared buffers (`swizzle = 32 | 64 | 128`): the layout that
//! TMA's `CU_TENSOR_MAP_SWIZZLE_{32,64,128}B` writes and wgmma's swizzled
//! matrix descriptors read, applied by every access to such a buffer.
//!
//! The last two dims (rows × columns) are cut into *panels*, each `span`
//! bytes of every row: panel `p` holds the columns whose bytes are
//! `p·span … p·span + span - 1`, its rows `span` bytes apart, the panels
//! one after another. Within a panel, byte `b` of row `r` is at
//! `r·span + (b ^ (x << 4))`, where `x` is bits 7… of `r·span` (CuTe's
//! `Swizzle<log2(span/16), 4, 3>`): the 16-byte units of a row are XOR-ed
//! with the row's place in the pattern, which repeats every 8 rows of
//! 128 bytes. A 16-byte unit is never split, so every 16-byte-aligned
//! vector, `cp.async` chunk and `ldmatrix` row stays whole.
//!
//! The hardware computes the XOR from shared-memory *addresses*, so a
//! swizzled buffer starts at a multiple of [`Swizzle::repeat`] bytes and
//! its panels (`rows` a multiple of 8) keep that alignment.

use crate::emit::{Ext, FnEmitter};

/// The swizzle of a buffer's last two dims.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Swizzle {
    /// Bytes of a panel's row: 32, 64 or 128.
    pub span: i64,
    /// Rows of the buffer (its second-to-last dim).
    pub rows: i64,
    /// Bytes of a row (all its panels).
    pub row_bytes: i64,
}

impl Swizzle {
    /// The swizzle `span` of a buffer with `dims` of `elem_bytes`-byte
    /// elements, or why that buffer cannot have it.
    pub fn new(span: i64, dims: &[Ext], elem_bytes: i64) -> Result<Swizzle, String> {
        if ![32, 64, 128].contains(&span) {
            return Err(format!("a swizzle spans 32, 64 or 128 bytes, not {span}"));
        }
        let [.., Ext::Const(rows), Ext::Const(cols)] = dims else {
            return Err("a swizzled buffer has at least two dims, of constant sizes".into());
        };
        if !tessera_ir_tile::swizzle_fits(span, *rows, cols * elem_bytes * 8) {
            return Err(format!(
                "a {span}-byte swizzle needs rows in multiples of 8 and rows of whole {span}-byte units; \
                 the buffer is {rows}×{cols} of {elem_bytes}-byte elements"
            ));
        }
        Ok(Swizzle {
            span,
            rows: *rows,
            row_bytes: cols * elem_bytes,
        })
    }

    /// Bytes after which the pattern repeats (8 rows of 128 bytes at the
    /// 128-byte swizzle): the alignment the buffer needs.
    pub fn repeat(&self) -> i64 {
        8 * self.span
    }

    /// Bytes of one panel.
    pub fn panel_bytes(&self) -> i64 {
        self.rows * self.span
    }

    /// Bytes of the whole rows × columns matrix.
    pub fn matrix_bytes(&self) -> i64 {
        self.rows * self.row_bytes
    }

    /// The byte offset of byte `b` of row `r` (what [`Swizzle::emit_offset`]
    /// computes in the generated code; the tests check layouts against it).
    #[cfg(test)]
    pub fn offset(&self, r: i64, b: i64) -> i64 {
        let (panel, b) = (b / self.span, b % self.span);
        let x = ((r * self.span) >> 7) & (self.span / 16 - 1);
        panel * self.panel_bytes() + r * self.span + (b ^ (x << 4))
    }

    /// [`Swizzle::offset`] in the generated code, `r` and `b` `i64` values.
    pub fn emit_offset(&self, f: &mut FnEmitter, r: &str, b: &str) -> String {
        let span = self.span;
        let panel = f.val(format!("udiv i64 {b}, {span}"));
        let within = f.val(format!("urem i64 {b}, {span}"));
        let line = f.val(format!("mul i64 {r}, {span}"));
        let x = f.val(format!("lshr i64 {line}, 7"));
        let x = f.val(format!("and i64 {x}, {}", span / 16 - 1));
        let x = f.val(format!("shl i64 {x}, 4"));
        let within = f.val(format!("xor i64 {within}, {x}"));
        let start = f.val(format!("mul i64 {panel}, {}", self.panel_bytes()));
        let start = f.val(format!("add i64 {start}, {line}"));
        f.val(format!("add i64 {start}, {within}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn swizzle(span: i64, rows: i64, cols: i64, eb: i64) -> Swizzle {
        Swizzle::new(span, &[Ext::Const(rows), Ext::Const(cols)], eb).expect("a valid swizzle")
    }

    /// TMA's placement of byte `b` of row `r` of a `span`-wide box at a
    /// `repeat`-aligned address, from the CUDA driver's description of
    /// the swizzle modes: the row is `span` bytes, and bits [4, 4+B) of the
    /// address are XOR-ed with bits [7, 7+B), B = log2(span / 16).
    fn tma_box_offset(span: i64, r: i64, b: i64) -> i64 {
        let linear = r * span + b;
        let bits = (span / 16).trailing_zeros();
        let mask = (1 << bits) - 1;
        linear ^ (((linear >> 7) & mask) << 4)
    }

    #[test]
    fn a_panel_is_what_tma_writes() {
        for span in [32, 64, 128] {
            let s = swizzle(span, 64, span, 2);
            for r in 0..64 {
                for b in 0..span {
                    assert_eq!(
                        s.offset(r, b),
                        tma_box_offset(span, r, b),
                        "span {span}, row {r}, byte {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn panels_follow_each_other_and_every_byte_has_its_own_place() {
        let s = swizzle(128, 64, 256, 2);
        let mut seen = vec![false; 64 * 512];
        for r in 0..64 {
            for b in 0..512 {
                let at = s.offset(r, b);
                assert_eq!(at / s.panel_bytes(), b / 128, "panel of byte {b}");
                assert!(!seen[at as usize], "two bytes at {at}");
                seen[at as usize] = true;
            }
        }
        assert_eq!(s.panel_bytes() % s.repeat(), 0);
    }

    #[test]
    fn sixteen_byte_units_stay_whole() {
        let s = swizzle(128, 16, 64, 2);
        for r in 0..16 {
            for unit in (0..128).step_by(16) {
                let first = s.offset(r, unit);
                assert_eq!(first % 16, 0);
                for i in 1..16 {
                    assert_eq!(s.offset(r, unit + i), first + i);
                }
            }
        }
    }

    #[test]
    fn shapes_that_cannot_swizzle_are_refused() {
        let dims = |r, c| [Ext::Const(r), Ext::Const(c)];
        assert!(Swizzle::new(48, &dims(8, 64), 2).is_err());
        assert!(Swizzle::new(128, &dims(12, 64), 2).is_err());
        assert!(Swizzle::new(128, &dims(8, 48), 2).is_err());
        assert!(Swizzle::new(128, &[Ext::Const(64)], 2).is_err());
        assert!(Swizzle::new(64, &dims(8, 32), 2).is_ok());
    }
}
