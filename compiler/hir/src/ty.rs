//! Types: dtypes, memory spaces, tensor types with symbolic dims.

use std::fmt;

use crate::poly::Poly;

/// Element types. `tf32`, the fp8/fp4 formats and `nvfp4` are storage and
/// tensor-core formats; arithmetic on them happens in a wider type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    F64,
    F32,
    Tf32,
    F16,
    Bf16,
    Fp8E4m3,
    Fp8E5m2,
    Fp4E2m1,
    Nvfp4,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Bool,
}

pub const ALL_DTYPES: [DType; 18] = [
    DType::F64,
    DType::F32,
    DType::Tf32,
    DType::F16,
    DType::Bf16,
    DType::Fp8E4m3,
    DType::Fp8E5m2,
    DType::Fp4E2m1,
    DType::Nvfp4,
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
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::Tf32 => "tf32",
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
            DType::Fp8E4m3 => "fp8_e4m3",
            DType::Fp8E5m2 => "fp8_e5m2",
            DType::Fp4E2m1 => "fp4_e2m1",
            DType::Nvfp4 => "nvfp4",
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

    /// A dtype by name, including the Python-style aliases the seeds use.
    pub fn from_name(name: &str) -> Option<DType> {
        let alias = match name {
            "float" | "float32" => Some(DType::F32),
            "double" | "float64" => Some(DType::F64),
            "half" | "float16" => Some(DType::F16),
            "bfloat16" => Some(DType::Bf16),
            "int" | "int64" => Some(DType::I64),
            "int32" => Some(DType::I32),
            _ => None,
        };
        alias.or_else(|| ALL_DTYPES.into_iter().find(|d| d.name() == name))
    }

    /// The dtype a name of PyTorch's, NumPy's or `ml_dtypes`' that is no
    /// alias means (`float8_e4m3fn` is `fp8_e4m3`), for the help of E0201
    /// and E0101.
    pub fn foreign(name: &str) -> Option<DType> {
        Some(match name {
            "float8_e4m3fn" | "float8_e4m3" | "e4m3" => DType::Fp8E4m3,
            "float8_e5m2" | "e5m2" => DType::Fp8E5m2,
            "int8" => DType::I8,
            "int16" => DType::I16,
            "uint8" => DType::U8,
            "uint16" => DType::U16,
            "uint32" => DType::U32,
            "uint64" => DType::U64,
            "bool_" => DType::Bool,
            _ => return None,
        })
    }

    pub fn is_float(self) -> bool {
        self.float_rank().is_some()
    }

    pub fn is_int(self) -> bool {
        matches!(
            self,
            DType::I8 | DType::I16 | DType::I32 | DType::I64 | DType::U8 | DType::U16 | DType::U32 | DType::U64
        )
    }

    /// Bits of precision-and-range order among floats: a conversion to a
    /// lower rank loses information (an implicit downcast).
    pub fn float_rank(self) -> Option<u8> {
        Some(match self {
            DType::Fp4E2m1 | DType::Nvfp4 => 1,
            DType::Fp8E4m3 | DType::Fp8E5m2 => 2,
            DType::F16 | DType::Bf16 => 3,
            DType::Tf32 => 4,
            DType::F32 => 5,
            DType::F64 => 6,
            _ => return None,
        })
    }

    pub fn bits(self) -> u32 {
        match self {
            DType::Fp4E2m1 | DType::Nvfp4 => 4,
            DType::Fp8E4m3 | DType::Fp8E5m2 | DType::I8 | DType::U8 | DType::Bool => 8,
            DType::F16 | DType::Bf16 | DType::I16 | DType::U16 => 16,
            DType::F32 | DType::Tf32 | DType::I32 | DType::U32 => 32,
            DType::F64 | DType::I64 | DType::U64 => 64,
        }
    }

    /// Whether `self` converts to `to` without losing information.
    pub fn widens_to(self, to: DType) -> bool {
        if self == to {
            return true;
        }
        match (self.float_rank(), to.float_rank()) {
            // f16 and bf16 share a rank but neither holds the other.
            (Some(a), Some(b)) => a < b,
            (None, Some(_)) => self.is_int() || self == DType::Bool,
            (None, None) => self.is_int() && to.is_int() && self.bits() < to.bits(),
            (Some(_), None) => false,
        }
    }
}

/// The usual arithmetic promotion: the wider type wins; f16 with bf16 is f32.
pub fn promote(a: Option<DType>, b: Option<DType>) -> Option<DType> {
    match (a, b) {
        (Some(x), Some(y)) if x == y => Some(x),
        (Some(x), Some(y)) if y.widens_to(x) => Some(x),
        (Some(x), Some(y)) if x.widens_to(y) => Some(y),
        (Some(_), Some(_)) => Some(DType::F32),
        (x, None) => x,
        (None, y) => y,
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Memory spaces (seed 000 §1.1, 002 §3.1). `lds` is AMD's name for `shared`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Space {
    Register,
    Shared,
    Global,
    Managed,
    Host,
    Tmem,
    Constant,
    Local,
}

impl Space {
    pub fn from_name(name: &str) -> Option<Space> {
        Some(match name {
            "register" => Space::Register,
            "shared" | "lds" => Space::Shared,
            "global" => Space::Global,
            "managed" => Space::Managed,
            "host" => Space::Host,
            "tmem" => Space::Tmem,
            "constant" => Space::Constant,
            "local" => Space::Local,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Space::Register => "register",
            Space::Shared => "shared",
            Space::Global => "global",
            Space::Managed => "managed",
            Space::Host => "host",
            Space::Tmem => "tmem",
            Space::Constant => "constant",
            Space::Local => "local",
        }
    }
}

/// A tensor type: element type, dims (None when the rank is unknown, as in
/// the seeds' `tensor[float]`) and memory space.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorTy {
    pub dtype: Option<DType>,
    pub dims: Option<Vec<Poly>>,
    pub space: Option<Space>,
}

impl TensorTy {
    pub fn rank(&self) -> Option<usize> {
        self.dims.as_ref().map(Vec::len)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// Unknown (an untyped parameter, or after an error): accepted anywhere,
    /// so one error does not cause others.
    Unknown,
    /// An integer whose width is not fixed (literals, indices, dims).
    Int,
    /// A float literal whose width is not fixed; `f32` unless context says.
    Float,
    Bool,
    Str,
    None,
    /// A size literal, in bytes.
    Size,
    Scalar(DType),
    Tensor(TensorTy),
    Tuple(Vec<Ty>),
    List(Box<Ty>),
    /// `range(...)`: iterates integers.
    Range,
    /// A user-defined function, by name.
    Function(String),
    /// A builtin operation from the op table.
    Builtin(&'static crate::builtins::Builtin),
    /// A builtin namespace (`op`, `tile`, ...).
    Namespace(&'static str),
    /// A numerics policy value (`Training`, ...).
    Policy(String),
    /// A dtype used as a value (`tshared.alloc[f16]`, `cast(x, bf16)`).
    DTypeValue(DType),
}

impl Ty {
    pub fn tensor(dtype: DType, dims: Vec<Poly>) -> Ty {
        Ty::Tensor(TensorTy {
            dtype: Some(dtype),
            dims: Some(dims),
            space: None,
        })
    }

    /// The element dtype of a scalar or tensor, when known.
    pub fn dtype(&self) -> Option<DType> {
        match self {
            Ty::Scalar(d) => Some(*d),
            Ty::Tensor(t) => t.dtype,
            Ty::Bool => Some(DType::Bool),
            _ => None,
        }
    }

    /// For a tensor, whether it is in shared memory; `None` for any other
    /// value (an async copy's destination must be in it).
    pub fn shared_tensor(&self) -> Option<bool> {
        match self {
            Ty::Tensor(t) => Some(t.space == Some(Space::Shared)),
            _ => None,
        }
    }

    pub fn is_unknown(&self) -> bool {
        matches!(self, Ty::Unknown)
    }

    pub fn is_numeric(&self) -> bool {
        matches!(self, Ty::Int | Ty::Float | Ty::Scalar(_) | Ty::Size | Ty::Unknown)
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Unknown => f.write_str("?"),
            Ty::Int => f.write_str("int"),
            Ty::Float => f.write_str("float"),
            Ty::Bool => f.write_str("bool"),
            Ty::Str => f.write_str("str"),
            Ty::None => f.write_str("None"),
            Ty::Size => f.write_str("size"),
            Ty::Scalar(d) => write!(f, "{d}"),
            Ty::Tensor(t) => {
                if let Some(space) = t.space {
                    write!(f, "{} ", space.name())?;
                }
                match t.dtype {
                    Some(d) => write!(f, "{d}")?,
                    None => f.write_str("tensor")?,
                }
                match &t.dims {
                    Some(dims) => {
                        let dims: Vec<String> = dims.iter().map(ToString::to_string).collect();
                        write!(f, "[{}]", dims.join(", "))
                    }
                    None => f.write_str("[...]"),
                }
            }
            Ty::Tuple(items) => {
                let items: Vec<String> = items.iter().map(ToString::to_string).collect();
                write!(f, "({})", items.join(", "))
            }
            Ty::List(item) => write!(f, "list[{item}]"),
            Ty::Range => f.write_str("range"),
            Ty::Function(name) => write!(f, "fn {name}"),
            Ty::Builtin(b) => write!(f, "builtin {}", b.path),
            Ty::Namespace(n) => write!(f, "namespace {n}"),
            Ty::Policy(p) => write!(f, "policy {p}"),
            Ty::DTypeValue(d) => write!(f, "dtype {d}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widening_is_lossless_only() {
        assert!(DType::Bf16.widens_to(DType::F32));
        assert!(!DType::F32.widens_to(DType::Bf16));
        assert!(!DType::F16.widens_to(DType::Bf16));
        assert!(DType::I32.widens_to(DType::I64));
        assert!(DType::I32.widens_to(DType::F32));
        assert!(!DType::F32.widens_to(DType::I32));
    }

    #[test]
    fn aliases() {
        assert_eq!(DType::from_name("float"), Some(DType::F32));
        assert_eq!(DType::from_name("bfloat16"), Some(DType::Bf16));
        assert_eq!(DType::from_name("fp8_e4m3"), Some(DType::Fp8E4m3));
        assert_eq!(DType::from_name("f31"), None);
    }
}
