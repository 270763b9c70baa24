//! Host tensors: a dtype, a shape and contiguous little-endian elements in
//! C order.

use bytemuck::Pod;

use crate::buffer::HostBuffer;
use crate::half::{bf16_to_f32, f16_to_f32, f64_to_bf16, f64_to_f16};
use crate::minifloat::{E4M3, E5M2};
use crate::{DType, RunError};

/// One element, in the widest type of its kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Elem {
    Float(f64),
    Int(i64),
    Bool(bool),
}

impl Elem {
    pub fn as_f64(self) -> f64 {
        match self {
            Elem::Float(x) => x,
            Elem::Int(i) => i as f64,
            Elem::Bool(b) => b as u8 as f64,
        }
    }

    /// Integer value (floats truncate toward zero, saturating).
    pub fn as_i64(self) -> i64 {
        match self {
            Elem::Float(x) => x as i64,
            Elem::Int(i) => i,
            Elem::Bool(b) => b as i64,
        }
    }

    pub fn as_bool(self) -> bool {
        match self {
            Elem::Float(x) => x != 0.0,
            Elem::Int(i) => i != 0,
            Elem::Bool(b) => b,
        }
    }
}

/// A Rust type whose values a tensor of one dtype holds.
pub trait Element: Pod {
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),*) => { $(impl Element for $t { const DTYPE: DType = DType::$d; })* };
}
element!(f32 => F32, f64 => F64, i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64);

/// An element as an integer type: `from_float` for a float, `from_int`
/// for an integer or a bool.
fn int_of<T>(v: Elem, from_float: fn(f64) -> T, from_int: fn(i64) -> T) -> T {
    match v {
        Elem::Float(f) => from_float(f),
        other => from_int(other.as_i64()),
    }
}

/// A host tensor.
#[derive(Clone, Debug)]
pub struct Tensor {
    dtype: DType,
    shape: Vec<usize>,
    data: HostBuffer,
}

/// The number of elements of `shape`, or an error when it overflows.
pub fn element_count(shape: &[usize]) -> Result<usize, RunError> {
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| RunError::value(format!("a tensor of shape {} is too large", shape_text(shape))))
}

/// `(2, 3)`, `(4,)`, `()`: a shape as NumPy writes it.
pub fn shape_text(shape: &[usize]) -> String {
    match shape {
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
        ),
    }
}

impl Tensor {
    /// A tensor of zeros.
    pub fn zeros(dtype: DType, shape: &[usize]) -> Result<Tensor, RunError> {
        let n = element_count(shape)?;
        let bytes = n
            .checked_mul(dtype.size())
            .ok_or_else(|| RunError::value(format!("a tensor of shape {} is too large", shape_text(shape))))?;
        Ok(Tensor {
            dtype,
            shape: shape.to_vec(),
            data: HostBuffer::zeroed(bytes)?,
        })
    }

    /// A tensor holding `values` (their count must match the shape).
    pub fn from_slice<T: Element>(shape: &[usize], values: &[T]) -> Result<Tensor, RunError> {
        let mut t = Tensor::zeros(T::DTYPE, shape)?;
        if values.len() != t.numel() {
            return Err(RunError::value(format!(
                "{} values do not fill a tensor of shape {}",
                values.len(),
                shape_text(shape)
            )));
        }
        t.data.cast_mut::<T>().copy_from_slice(values);
        Ok(t)
    }

    /// A tensor of `dtype` from raw little-endian bytes.
    pub fn from_bytes(dtype: DType, shape: &[usize], bytes: &[u8]) -> Result<Tensor, RunError> {
        let mut t = Tensor::zeros(dtype, shape)?;
        if bytes.len() != t.data.len() {
            return Err(RunError::value(format!(
                "{} bytes do not fill a {dtype} tensor of shape {}",
                bytes.len(),
                shape_text(shape)
            )));
        }
        t.data.bytes_mut().copy_from_slice(bytes);
        Ok(t)
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn numel(&self) -> usize {
        self.data.len() / self.dtype.size()
    }

    pub fn bytes(&self) -> &[u8] {
        self.data.bytes()
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.data.bytes_mut()
    }

    /// The start of the elements, for a kernel on the CPU device.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.data.as_mut_ptr()
    }

    /// The elements as `T`, when `T` is the tensor's dtype.
    pub fn as_slice<T: Element>(&self) -> Option<&[T]> {
        (T::DTYPE == self.dtype).then(|| self.data.cast::<T>())
    }

    pub fn as_slice_mut<T: Element>(&mut self) -> Option<&mut [T]> {
        (T::DTYPE == self.dtype).then(|| self.data.cast_mut::<T>())
    }

    /// The same elements with another shape of the same element count.
    pub fn reshaped(mut self, shape: &[usize]) -> Result<Tensor, RunError> {
        if element_count(shape)? != self.numel() {
            return Err(RunError::value(format!(
                "cannot reshape a tensor of shape {} into {}",
                shape_text(&self.shape),
                shape_text(shape)
            )));
        }
        self.shape = shape.to_vec();
        Ok(self)
    }

    /// Element `i` in C order (`i < numel`).
    pub fn get(&self, i: usize) -> Elem {
        let b = self.data.bytes();
        let s = self.dtype.size();
        let e = &b[i * s..(i + 1) * s];
        match self.dtype {
            DType::F16 => Elem::Float(f16_to_f32(u16::from_le_bytes([e[0], e[1]])) as f64),
            DType::Bf16 => Elem::Float(bf16_to_f32(u16::from_le_bytes([e[0], e[1]])) as f64),
            DType::Fp8E4m3 => Elem::Float(E4M3.decode(e[0])),
            DType::Fp8E5m2 => Elem::Float(E5M2.decode(e[0])),
            DType::F32 => Elem::Float(f32::from_le_bytes([e[0], e[1], e[2], e[3]]) as f64),
            DType::F64 => Elem::Float(f64::from_le_bytes(e.try_into().unwrap_or([0; 8]))),
            DType::I8 => Elem::Int(e[0] as i8 as i64),
            DType::I16 => Elem::Int(i16::from_le_bytes([e[0], e[1]]) as i64),
            DType::I32 => Elem::Int(i32::from_le_bytes([e[0], e[1], e[2], e[3]]) as i64),
            DType::I64 | DType::U64 => Elem::Int(i64::from_le_bytes(e.try_into().unwrap_or([0; 8]))),
            DType::U8 => Elem::Int(e[0] as i64),
            DType::U16 => Elem::Int(u16::from_le_bytes([e[0], e[1]]) as i64),
            DType::U32 => Elem::Int(u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as i64),
            DType::Bool => Elem::Bool(e[0] != 0),
        }
    }

    /// Stores `v` at `i`, converted to the dtype: floats round to nearest
    /// even, floats to integers truncate toward zero (saturating), integers
    /// wrap to the width.
    pub fn set(&mut self, i: usize, v: Elem) {
        let s = self.dtype.size();
        let dtype = self.dtype;
        let e = &mut self.data.bytes_mut()[i * s..(i + 1) * s];
        match dtype {
            DType::F16 => e.copy_from_slice(&f64_to_f16(v.as_f64()).to_le_bytes()),
            DType::Bf16 => e.copy_from_slice(&f64_to_bf16(v.as_f64()).to_le_bytes()),
            DType::Fp8E4m3 => e[0] = E4M3.encode(v.as_f64(), false),
            DType::Fp8E5m2 => e[0] = E5M2.encode(v.as_f64(), false),
            DType::F32 => e.copy_from_slice(&(v.as_f64() as f32).to_le_bytes()),
            DType::F64 => e.copy_from_slice(&v.as_f64().to_le_bytes()),
            // Rust's `as` from a float truncates and saturates (NaN is 0),
            // as the kernels' conversions do; from an integer it wraps.
            DType::I8 => e[0] = int_of(v, |f| f as i8, |i| i as i8) as u8,
            DType::I16 => e.copy_from_slice(&int_of(v, |f| f as i16, |i| i as i16).to_le_bytes()),
            DType::I32 => e.copy_from_slice(&int_of(v, |f| f as i32, |i| i as i32).to_le_bytes()),
            DType::I64 => e.copy_from_slice(&int_of(v, |f| f as i64, |i| i).to_le_bytes()),
            DType::U64 => e.copy_from_slice(&int_of(v, |f| f as u64, |i| i as u64).to_le_bytes()),
            DType::U8 => e[0] = int_of(v, |f| f as u8, |i| i as u8),
            DType::U16 => e.copy_from_slice(&int_of(v, |f| f as u16, |i| i as u16).to_le_bytes()),
            DType::U32 => e.copy_from_slice(&int_of(v, |f| f as u32, |i| i as u32).to_le_bytes()),
            DType::Bool => e[0] = v.as_bool() as u8,
        }
    }

    /// Every element as `f64`.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        (0..self.numel()).map(|i| self.get(i).as_f64()).collect()
    }

    /// A copy converted to `dtype` (elementwise, as [`Tensor::set`] converts).
    pub fn cast(&self, dtype: DType) -> Result<Tensor, RunError> {
        self.cast_with(dtype, false)
    }

    /// A copy converted to `dtype`; with `saturate`, a float beyond the
    /// largest finite value of a float `dtype` (infinities too) becomes that
    /// value with its sign instead of overflowing. NaN stays NaN.
    pub fn cast_with(&self, dtype: DType, saturate: bool) -> Result<Tensor, RunError> {
        if dtype == self.dtype {
            return Ok(self.clone());
        }
        let max = largest_finite(dtype).filter(|_| saturate);
        let mut out = Tensor::zeros(dtype, &self.shape)?;
        for i in 0..self.numel() {
            let v = match (self.get(i), max) {
                (Elem::Float(x), Some(max)) => Elem::Float(x.clamp(-max, max)),
                (v, _) => v,
            };
            out.set(i, v);
        }
        Ok(out)
    }
}

/// The largest finite value of a float dtype.
fn largest_finite(dtype: DType) -> Option<f64> {
    match dtype {
        DType::F16 => Some(65504.0),
        DType::Bf16 => Some(f64::from(bf16_to_f32(0x7f7f))),
        DType::F32 => Some(f64::from(f32::MAX)),
        DType::F64 => Some(f64::MAX),
        d => d.minifloat().map(|f| f.decode(f.max)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_convert_on_store() {
        let mut t = Tensor::zeros(DType::Bf16, &[3]).unwrap();
        t.set(0, Elem::Float(1.0 + 1.0 / 256.0));
        t.set(1, Elem::Float(1.0 + 3.0 / 256.0));
        t.set(2, Elem::Int(3));
        assert_eq!(t.to_f64_vec(), vec![1.0, 1.0 + 4.0 / 256.0, 3.0]);
        let mut e = Tensor::zeros(DType::Fp8E4m3, &[4]).unwrap();
        for (i, x) in [1.0 + 1.0 / 16.0, 500.0, -0.001953125, 3.0].into_iter().enumerate() {
            e.set(i, Elem::Float(x));
        }
        let got = e.to_f64_vec();
        assert_eq!((got[0], got[2], got[3]), (1.0, -0.001953125, 3.0));
        assert!(got[1].is_nan(), "500 overflows E4M3 to NaN");
        let wide = Tensor::from_slice(&[3], &[500.0f32, -1e9, f32::NAN]).unwrap();
        let sat = wide.cast_with(DType::Fp8E4m3, true).unwrap().to_f64_vec();
        assert_eq!((sat[0], sat[1]), (448.0, -448.0));
        assert!(sat[2].is_nan());
        let h = wide.cast_with(DType::F16, true).unwrap().to_f64_vec();
        assert_eq!((h[0], h[1]), (500.0, -65504.0));
        let mut i = Tensor::zeros(DType::I8, &[2]).unwrap();
        i.set(0, Elem::Int(200));
        i.set(1, Elem::Float(-2.7));
        assert_eq!(i.to_f64_vec(), vec![-56.0, -2.0]);
        let f = Tensor::from_slice(&[2, 2], &[1.5f32, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(f.cast(DType::I32).unwrap().as_slice::<i32>().unwrap(), &[1, 2, 3, 4]);
        assert!(f.as_slice::<f64>().is_none());
        assert!(Tensor::from_slice(&[3], &[1.0f32]).is_err());
        assert!(Tensor::zeros(DType::F32, &[usize::MAX, 2]).is_err());
    }
}
