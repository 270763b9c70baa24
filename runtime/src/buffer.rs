//! Host memory for tensors, CPU device buffers and per-block shared
//! memory: zero-initialised, 128-byte aligned, its allocation failure an
//! error rather than an abort.

use bytemuck::{Pod, Zeroable};

use crate::RunError;

/// The alignment of every host buffer (a GPU allocation is at least
/// 256-byte aligned; 128 covers every vector access a CPU kernel makes).
pub const HOST_ALIGN: usize = 128;

#[derive(Clone, Copy, Pod, Zeroable)]
#[repr(C, align(128))]
struct Line([u8; HOST_ALIGN]);

/// A zeroed, 128-byte aligned byte buffer.
#[derive(Clone)]
pub struct HostBuffer {
    lines: Vec<Line>,
    len: usize,
}

impl HostBuffer {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Result<HostBuffer, RunError> {
        let lines = len.div_ceil(HOST_ALIGN);
        let mut v: Vec<Line> = Vec::new();
        v.try_reserve_exact(lines)
            .map_err(|_| RunError::value(format!("cannot allocate {len} bytes of host memory")))?;
        v.resize(lines, Line([0; HOST_ALIGN]));
        Ok(HostBuffer { lines: v, len })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.lines)[..self.len]
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.lines)[..self.len]
    }

    /// The buffer as elements of `T` (the length must be a multiple of its size).
    pub fn cast<T: Pod>(&self) -> &[T] {
        bytemuck::cast_slice(self.bytes())
    }

    pub fn cast_mut<T: Pod>(&mut self) -> &mut [T] {
        bytemuck::cast_slice_mut(self.bytes_mut())
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.lines.as_ptr().cast()
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.lines.as_mut_ptr().cast()
    }
}

impl std::fmt::Debug for HostBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostBuffer({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_zeroed_and_sized() {
        for len in [0, 1, 127, 128, 129, 1000] {
            let mut b = HostBuffer::zeroed(len).unwrap();
            assert_eq!(b.len(), len);
            assert_eq!(b.as_ptr() as usize % HOST_ALIGN, 0);
            assert!(b.bytes().iter().all(|&x| x == 0));
            b.bytes_mut().fill(7);
            assert_eq!(b.bytes().iter().map(|&x| x as usize).sum::<usize>(), 7 * len);
        }
        assert!(HostBuffer::zeroed(usize::MAX / 2).is_err());
    }
}
