//! Attributes: the compile-time constants attached to ops (and to memref
//! layouts), printed so that they parse back to the same value.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use crate::Type;

/// A compile-time constant attached to an op.
///
/// Equality and hashing are structural, floats compared by their bits: `NaN`
/// equals a `NaN` with the same payload, `0.0` differs from `-0.0`. That is
/// what common-subexpression elimination needs.
#[derive(Clone, Debug)]
pub enum Attr {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    Type(Type),
    Array(Vec<Attr>),
    Dict(BTreeMap<String, Attr>),
    /// A reference to a symbol, `@name` (a function, a global).
    Symbol(String),
    /// A flag whose presence is its meaning.
    Unit,
}

/// What kind of value an attribute holds, for op definitions to require.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttrKind {
    Any,
    Int,
    Float,
    Bool,
    Str,
    Type,
    Array,
    Dict,
    Symbol,
    Unit,
}

impl AttrKind {
    pub fn name(self) -> &'static str {
        match self {
            AttrKind::Any => "any attribute",
            AttrKind::Int => "an integer",
            AttrKind::Float => "a float",
            AttrKind::Bool => "a bool",
            AttrKind::Str => "a string",
            AttrKind::Type => "a type",
            AttrKind::Array => "an array",
            AttrKind::Dict => "a dictionary",
            AttrKind::Symbol => "a symbol reference",
            AttrKind::Unit => "a unit flag",
        }
    }
}

impl Attr {
    pub fn kind(&self) -> AttrKind {
        match self {
            Attr::Int(_) => AttrKind::Int,
            Attr::Float(_) => AttrKind::Float,
            Attr::Bool(_) => AttrKind::Bool,
            Attr::Str(_) => AttrKind::Str,
            Attr::Type(_) => AttrKind::Type,
            Attr::Array(_) => AttrKind::Array,
            Attr::Dict(_) => AttrKind::Dict,
            Attr::Symbol(_) => AttrKind::Symbol,
            Attr::Unit => AttrKind::Unit,
        }
    }

    pub fn str(value: impl Into<String>) -> Attr {
        Attr::Str(value.into())
    }

    pub fn ints(values: impl IntoIterator<Item = i64>) -> Attr {
        Attr::Array(values.into_iter().map(Attr::Int).collect())
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Attr::Int(v) => Some(*v),
            _ => None,
        }
    }

    pub fn as_float(&self) -> Option<f64> {
        match self {
            Attr::Float(v) => Some(*v),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Attr::Bool(v) => Some(*v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attr::Str(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_type(&self) -> Option<&Type> {
        match self {
            Attr::Type(t) => Some(t),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Attr]> {
        match self {
            Attr::Array(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_dict(&self) -> Option<&BTreeMap<String, Attr>> {
        match self {
            Attr::Dict(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_symbol(&self) -> Option<&str> {
        match self {
            Attr::Symbol(v) => Some(v),
            _ => None,
        }
    }

    /// The integers of an array of integers (`tile_shape = [128, 128, 64]`).
    pub fn as_ints(&self) -> Option<Vec<i64>> {
        self.as_array()?.iter().map(Attr::as_int).collect()
    }
}

impl PartialEq for Attr {
    fn eq(&self, other: &Attr) -> bool {
        match (self, other) {
            (Attr::Int(a), Attr::Int(b)) => a == b,
            (Attr::Float(a), Attr::Float(b)) => a.to_bits() == b.to_bits(),
            (Attr::Bool(a), Attr::Bool(b)) => a == b,
            (Attr::Str(a), Attr::Str(b)) | (Attr::Symbol(a), Attr::Symbol(b)) => a == b,
            (Attr::Type(a), Attr::Type(b)) => a == b,
            (Attr::Array(a), Attr::Array(b)) => a == b,
            (Attr::Dict(a), Attr::Dict(b)) => a == b,
            (Attr::Unit, Attr::Unit) => true,
            _ => false,
        }
    }
}

impl Eq for Attr {}

impl Hash for Attr {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Attr::Int(v) => v.hash(state),
            Attr::Float(v) => v.to_bits().hash(state),
            Attr::Bool(v) => v.hash(state),
            Attr::Str(v) | Attr::Symbol(v) => v.hash(state),
            Attr::Type(t) => t.hash(state),
            Attr::Array(v) => v.hash(state),
            Attr::Dict(v) => v.hash(state),
            Attr::Unit => {}
        }
    }
}

impl From<i64> for Attr {
    fn from(v: i64) -> Attr {
        Attr::Int(v)
    }
}

impl From<f64> for Attr {
    fn from(v: f64) -> Attr {
        Attr::Float(v)
    }
}

impl From<bool> for Attr {
    fn from(v: bool) -> Attr {
        Attr::Bool(v)
    }
}

impl From<&str> for Attr {
    fn from(v: &str) -> Attr {
        Attr::Str(v.to_string())
    }
}

impl From<Type> for Attr {
    fn from(t: Type) -> Attr {
        Attr::Type(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_compare_by_bits() {
        assert_eq!(Attr::Float(f64::NAN), Attr::Float(f64::NAN));
        assert_ne!(Attr::Float(0.0), Attr::Float(-0.0));
        assert_ne!(Attr::Float(1.0), Attr::Int(1));
        assert_eq!(Attr::ints([1, 2]).as_ints(), Some(vec![1, 2]));
    }
}
