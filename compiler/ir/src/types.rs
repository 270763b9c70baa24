//! The types of IR values: scalars, tensors and memrefs with symbolic dims,
//! pointers, the ordering token, function types and dialect-defined opaque
//! types. The textual syntax of each is in `spec/ir.md`.

use std::collections::BTreeMap;

use crate::{Attr, Dim};

/// The scalar element types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarType {
    F64,
    F32,
    F16,
    BF16,
    F8E4M3,
    F8E5M2,
    F4E2M1,
    I1,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Index,
}

impl ScalarType {
    pub const ALL: [ScalarType; 17] = [
        ScalarType::F64,
        ScalarType::F32,
        ScalarType::F16,
        ScalarType::BF16,
        ScalarType::F8E4M3,
        ScalarType::F8E5M2,
        ScalarType::F4E2M1,
        ScalarType::I1,
        ScalarType::I8,
        ScalarType::I16,
        ScalarType::I32,
        ScalarType::I64,
        ScalarType::U8,
        ScalarType::U16,
        ScalarType::U32,
        ScalarType::U64,
        ScalarType::Index,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ScalarType::F64 => "f64",
            ScalarType::F32 => "f32",
            ScalarType::F16 => "f16",
            ScalarType::BF16 => "bf16",
            ScalarType::F8E4M3 => "f8e4m3",
            ScalarType::F8E5M2 => "f8e5m2",
            ScalarType::F4E2M1 => "f4e2m1",
            ScalarType::I1 => "i1",
            ScalarType::I8 => "i8",
            ScalarType::I16 => "i16",
            ScalarType::I32 => "i32",
            ScalarType::I64 => "i64",
            ScalarType::U8 => "u8",
            ScalarType::U16 => "u16",
            ScalarType::U32 => "u32",
            ScalarType::U64 => "u64",
            ScalarType::Index => "index",
        }
    }

    pub fn from_name(name: &str) -> Option<ScalarType> {
        ScalarType::ALL.into_iter().find(|s| s.name() == name)
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            ScalarType::F64
                | ScalarType::F32
                | ScalarType::F16
                | ScalarType::BF16
                | ScalarType::F8E4M3
                | ScalarType::F8E5M2
                | ScalarType::F4E2M1
        )
    }

    /// Whether this integer type is unsigned (`bool`, `i1`, included: it
    /// widens with zeros).
    pub fn is_unsigned(self) -> bool {
        matches!(
            self,
            ScalarType::U8 | ScalarType::U16 | ScalarType::U32 | ScalarType::U64 | ScalarType::I1
        )
    }

    /// Whether this is one of the two 8-bit float formats.
    pub fn is_fp8(self) -> bool {
        matches!(self, ScalarType::F8E4M3 | ScalarType::F8E5M2)
    }

    /// Whether a matrix product may multiply operands of `self` and
    /// `other`: the same type, or the two fp8 formats (tensor cores
    /// multiply E4M3 by E5M2).
    pub fn multiplies_with(self, other: ScalarType) -> bool {
        self == other || self.is_fp8() && other.is_fp8()
    }

    /// The width in bits (`index` counts as 64).
    pub fn bits(self) -> u32 {
        match self {
            ScalarType::F64 | ScalarType::I64 | ScalarType::U64 | ScalarType::Index => 64,
            ScalarType::F32 | ScalarType::I32 | ScalarType::U32 => 32,
            ScalarType::F16 | ScalarType::BF16 | ScalarType::I16 | ScalarType::U16 => 16,
            ScalarType::F8E4M3 | ScalarType::F8E5M2 | ScalarType::I8 | ScalarType::U8 => 8,
            ScalarType::F4E2M1 => 4,
            ScalarType::I1 => 1,
        }
    }
}

/// Where a memref or pointer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemSpace {
    Global,
    Shared,
    Local,
    Tmem,
}

impl MemSpace {
    pub const ALL: [MemSpace; 4] = [MemSpace::Global, MemSpace::Shared, MemSpace::Local, MemSpace::Tmem];

    pub fn name(self) -> &'static str {
        match self {
            MemSpace::Global => "global",
            MemSpace::Shared => "shared",
            MemSpace::Local => "local",
            MemSpace::Tmem => "tmem",
        }
    }

    pub fn from_name(name: &str) -> Option<MemSpace> {
        MemSpace::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// The type of an IR value (or of a function, in a `function_type`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// `f32`, `bf16`, `index`, ...
    Scalar(ScalarType),
    /// `tensor<MxKxbf16>`: a value with a shape, no memory of its own.
    Tensor { dims: Vec<Dim>, elem: ScalarType },
    /// `memref<128x64xbf16, shared, swizzle = 128>`: a buffer in a memory
    /// space; `layout` holds the layout attributes (swizzle, padding, ...).
    MemRef {
        dims: Vec<Dim>,
        elem: ScalarType,
        space: MemSpace,
        layout: BTreeMap<String, Attr>,
    },
    /// `ptr<global>`: an untyped pointer into a memory space.
    Ptr(MemSpace),
    /// `!token`: orders side effects that have no data dependence.
    Token,
    /// `(f32, index) -> (f32)`: the signature of a function-like op.
    Function { inputs: Vec<Type>, results: Vec<Type> },
    /// `!nvptx.mbarrier`, `!tile.frag<16x16xf16>`: a type a dialect defines;
    /// `body` is everything after the dot, kept as text.
    Opaque { dialect: String, body: String },
}

impl Type {
    pub const F64: Type = Type::Scalar(ScalarType::F64);
    pub const F32: Type = Type::Scalar(ScalarType::F32);
    pub const F16: Type = Type::Scalar(ScalarType::F16);
    pub const BF16: Type = Type::Scalar(ScalarType::BF16);
    pub const I1: Type = Type::Scalar(ScalarType::I1);
    pub const I32: Type = Type::Scalar(ScalarType::I32);
    pub const I64: Type = Type::Scalar(ScalarType::I64);
    pub const INDEX: Type = Type::Scalar(ScalarType::Index);

    pub fn tensor(dims: impl IntoIterator<Item = Dim>, elem: ScalarType) -> Type {
        Type::Tensor {
            dims: dims.into_iter().collect(),
            elem,
        }
    }

    pub fn memref(dims: impl IntoIterator<Item = Dim>, elem: ScalarType, space: MemSpace) -> Type {
        Type::MemRef {
            dims: dims.into_iter().collect(),
            elem,
            space,
            layout: BTreeMap::new(),
        }
    }

    pub fn function(inputs: impl IntoIterator<Item = Type>, results: impl IntoIterator<Item = Type>) -> Type {
        Type::Function {
            inputs: inputs.into_iter().collect(),
            results: results.into_iter().collect(),
        }
    }

    pub fn opaque(dialect: impl Into<String>, body: impl Into<String>) -> Type {
        Type::Opaque {
            dialect: dialect.into(),
            body: body.into(),
        }
    }

    /// The dims of a tensor or memref.
    pub fn dims(&self) -> Option<&[Dim]> {
        match self {
            Type::Tensor { dims, .. } | Type::MemRef { dims, .. } => Some(dims),
            _ => None,
        }
    }

    /// The type with every dim replaced by `f`'s image (inside function
    /// types too).
    pub fn map_dims(&self, f: &dyn Fn(&Dim) -> Dim) -> Type {
        match self {
            Type::Tensor { dims, elem } => Type::Tensor {
                dims: dims.iter().map(f).collect(),
                elem: *elem,
            },
            Type::MemRef {
                dims,
                elem,
                space,
                layout,
            } => Type::MemRef {
                dims: dims.iter().map(f).collect(),
                elem: *elem,
                space: *space,
                layout: layout.clone(),
            },
            Type::Function { inputs, results } => Type::Function {
                inputs: inputs.iter().map(|t| t.map_dims(f)).collect(),
                results: results.iter().map(|t| t.map_dims(f)).collect(),
            },
            other => other.clone(),
        }
    }

    /// The element type of a tensor or memref, or the scalar itself.
    pub fn elem(&self) -> Option<ScalarType> {
        match self {
            Type::Scalar(s) | Type::Tensor { elem: s, .. } | Type::MemRef { elem: s, .. } => Some(*s),
            _ => None,
        }
    }

    /// The memory space of a memref or pointer.
    pub fn space(&self) -> Option<MemSpace> {
        match self {
            Type::MemRef { space, .. } | Type::Ptr(space) => Some(*space),
            _ => None,
        }
    }
}

impl From<ScalarType> for Type {
    fn from(s: ScalarType) -> Type {
        Type::Scalar(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in ScalarType::ALL {
            assert_eq!(ScalarType::from_name(s.name()), Some(s));
        }
        for s in MemSpace::ALL {
            assert_eq!(MemSpace::from_name(s.name()), Some(s));
        }
        assert_eq!(ScalarType::from_name("f128"), None);
    }
}
