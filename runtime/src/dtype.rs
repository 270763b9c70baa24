//! The element types a host tensor can hold.

use std::fmt;

/// The dtype of a host tensor or a device buffer's elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F16,
    Bf16,
    /// OCP E4M3 (`e4m3fn`), [`crate::minifloat::E4M3`].
    Fp8E4m3,
    /// OCP E5M2, [`crate::minifloat::E5M2`].
    Fp8E5m2,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    /// Held as the bits of an `i64` ([`crate::tensor::Elem::Int`]); printed unsigned.
    U64,
    Bool,
}

pub const ALL_DTYPES: [DType; 15] = [
    DType::F16,
    DType::Bf16,
    DType::Fp8E4m3,
    DType::Fp8E5m2,
    DType::F32,
    DType::F64,
    DType::I8,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::U16,
    DType::U32,
    DType::U64,
    DType::Bool,
];

impl DType {
    pub fn name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
            DType::Fp8E4m3 => "fp8_e4m3",
            DType::Fp8E5m2 => "fp8_e5m2",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::Bool => "bool",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Fp8E4m3 | DType::Fp8E5m2 | DType::I8 | DType::U8 | DType::Bool => 1,
            DType::F16 | DType::Bf16 | DType::I16 | DType::U16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }

    /// The 8-bit float format of an fp8 dtype.
    pub fn minifloat(self) -> Option<crate::minifloat::Format> {
        match self {
            DType::Fp8E4m3 => Some(crate::minifloat::E4M3),
            DType::Fp8E5m2 => Some(crate::minifloat::E5M2),
            _ => None,
        }
    }

    /// The integers a narrow integer dtype holds, as `(lowest, highest)`;
    /// None for the others (`i64`, whose range is the host's ints', and
    /// `u64`, held as an `i64`'s bits, take every host int).
    pub fn int_range(self) -> Option<(i64, i64)> {
        Some(match self {
            DType::I8 => (i64::from(i8::MIN), i64::from(i8::MAX)),
            DType::I16 => (i64::from(i16::MIN), i64::from(i16::MAX)),
            DType::I32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
            DType::U8 => (0, i64::from(u8::MAX)),
            DType::U16 => (0, i64::from(u16::MAX)),
            DType::U32 => (0, i64::from(u32::MAX)),
            _ => return None,
        })
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::F16 | DType::Bf16 | DType::Fp8E4m3 | DType::Fp8E5m2 | DType::F32 | DType::F64
        )
    }

    /// The host dtype of a language dtype, when the host can hold it.
    pub fn from_language(d: tessera_hir::ty::DType) -> Option<DType> {
        use tessera_hir::ty::DType as L;
        Some(match d {
            L::F16 => DType::F16,
            L::Bf16 => DType::Bf16,
            L::Fp8E4m3 => DType::Fp8E4m3,
            L::Fp8E5m2 => DType::Fp8E5m2,
            L::F32 => DType::F32,
            L::F64 => DType::F64,
            L::I8 => DType::I8,
            L::I16 => DType::I16,
            L::I32 => DType::I32,
            L::I64 => DType::I64,
            L::U8 => DType::U8,
            L::U16 => DType::U16,
            L::U32 => DType::U32,
            L::U64 => DType::U64,
            L::Bool => DType::Bool,
            _ => return None,
        })
    }

    /// A dtype by its language name (`f32`, `bf16`, the aliases `float` …).
    pub fn from_name(name: &str) -> Option<DType> {
        tessera_hir::ty::DType::from_name(name).and_then(DType::from_language)
    }

    /// The dtype of an arithmetic result (`spec/types.md`, promotion): equal
    /// dtypes give that dtype, a dtype that widens to the other gives the
    /// wider one, anything else `f32`.
    pub fn promote(self, other: DType) -> DType {
        let (Some(a), Some(b)) = (self.language(), other.language()) else {
            return DType::F32;
        };
        if a.widens_to(b) {
            other
        } else if b.widens_to(a) {
            self
        } else {
            DType::F32
        }
    }

    fn language(self) -> Option<tessera_hir::ty::DType> {
        tessera_hir::ty::DType::from_name(self.name())
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
