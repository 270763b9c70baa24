//! Tessera's runtime.
//!
//! - [`device`]: the CPU, CUDA and HIP devices behind one [`Device`]:
//!   buffers, modules, launches, streams, events and timing. CUDA and HIP are
//!   loaded at run time, so the crate builds and runs where neither exists,
//!   and opening them there is an error that names `--device cpu`.
//! - [`cpu`]: CPU execution with GPU semantics and the ABI of CPU kernels.
//! - [`rng`]: Philox-4x32-10 and the derivation of stream keys.
//! - [`tensor`], [`npy`], [`half`], [`minifloat`]: host tensors, `.npy`
//!   files, `f16`/`bf16`, the 8-bit floats.
//! - [`reduce`]: the tree order of deterministic reductions.
//! - [`collective`]: all-reduces over the ranks of a simulated mesh.
//! - [`host`]: the interpreter of host code (`def main():`), which launches
//!   kernels and calls operator functions through an [`host::Executor`].

pub mod buffer;
pub mod collective;
pub mod cpu;
pub mod device;
pub mod dtype;
mod error;
pub use tessera_base::half;
pub mod host;
pub use tessera_base::minifloat;
pub mod npy;
pub mod reduce;
pub mod rng;
pub mod tensor;

pub use device::{Device, DeviceKind, MemoryKind};
pub use dtype::{DType, ALL_DTYPES};
pub use error::{RunError, Site};
pub use tensor::Tensor;
