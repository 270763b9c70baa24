//! Devices: the CPU, CUDA and HIP behind one [`Device`] — buffers (freed on
//! drop) in device, managed or pinned host memory, copies between host and device (recorded with their times while
//! a profiler asks), module loading, launches with a grid, a block and
//! shared memory, streams, events and timing.
//!
//! CUDA goes through cudarc with the driver loaded at run time, HIP through
//! `libamdhip64.so` opened with libloading; neither is needed to build.
//! Opening either where its library or a device is missing is an E1001
//! error that names the fallback, `--device cpu`.

mod cuda;
mod hip;
pub mod tensor_map;

use std::ffi::c_void;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::buffer::HostBuffer;
use crate::cpu::{CpuDevice, CpuKernel, LaunchConfig};
use crate::RunError;

pub use cuda::CudaDevice;
pub use hip::HipDevice;
pub use tensor_map::TiledMap;

/// Which kind of device (`--device cpu|cuda|hip`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    Cpu,
    Cuda,
    Hip,
}

impl DeviceKind {
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
            DeviceKind::Hip => "hip",
        }
    }

    pub fn from_name(name: &str) -> Option<DeviceKind> {
        [DeviceKind::Cpu, DeviceKind::Cuda, DeviceKind::Hip]
            .into_iter()
            .find(|k| k.name() == name)
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a buffer's memory is (`--memory device|managed|pinned`). On the
/// CPU device every kind is host memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// Device memory: kernels read and write it; the host copies in and out.
    #[default]
    Device,
    /// Managed (unified) memory: one address for the host and the device,
    /// its pages moved to whichever touches them.
    Managed,
    /// Page-locked host memory mapped into the device's address space:
    /// kernels read and write it across the bus.
    Pinned,
}

impl MemoryKind {
    pub const ALL: [MemoryKind; 3] = [MemoryKind::Device, MemoryKind::Managed, MemoryKind::Pinned];

    pub fn name(self) -> &'static str {
        match self {
            MemoryKind::Device => "device",
            MemoryKind::Managed => "managed",
            MemoryKind::Pinned => "pinned",
        }
    }

    pub fn from_name(name: &str) -> Option<MemoryKind> {
        MemoryKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// `device memory`, `managed memory`, `pinned host memory`.
    pub fn describe(self) -> &'static str {
        match self {
            MemoryKind::Device => "device memory",
            MemoryKind::Managed => "managed memory",
            MemoryKind::Pinned => "pinned host memory",
        }
    }
}

impl fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What every kind of device keeps besides its handles: the copies it
/// records and the memory [`Device::alloc`] gives.
#[derive(Clone, Debug, Default)]
pub(crate) struct Common {
    pub(crate) copies: CopyLog,
    pub(crate) memory: MemoryKind,
}

/// A device that runs kernels.
pub enum Device {
    Cpu(CpuDevice),
    Cuda(CudaDevice),
    Hip(HipDevice),
}

/// Memory on a device, freed when dropped. On the CPU it is host memory.
pub struct Buffer {
    len: usize,
    kind: MemoryKind,
    memory: Memory,
}

enum Memory {
    Host(HostBuffer),
    Cuda(cuda::CudaBuffer),
    Hip(hip::HipBuffer),
}

impl Buffer {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The kind of memory it was allocated in.
    pub fn kind(&self) -> MemoryKind {
        self.kind
    }

    /// The address kernels see (a host address on the CPU device).
    pub fn address(&mut self) -> u64 {
        match &mut self.memory {
            Memory::Host(b) => b.as_mut_ptr() as u64,
            Memory::Cuda(b) => b.address(),
            Memory::Hip(b) => b.address(),
        }
    }

    /// The bytes, when the buffer is host memory (the CPU device).
    pub fn host_bytes(&self) -> Option<&[u8]> {
        match &self.memory {
            Memory::Host(b) => Some(b.bytes()),
            _ => None,
        }
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Buffer({} bytes of {})", self.len, self.kind.describe())
    }
}

/// What a module is loaded from.
pub enum ModuleImage {
    /// PTX text (CUDA).
    Ptx(String),
    /// A cubin (CUDA).
    Cubin(Vec<u8>),
    /// An AMDGPU code object (`.hsaco`, HIP).
    Hsaco(Vec<u8>),
    /// The entry points of kernels JIT-compiled for the CPU, by name.
    Cpu(Vec<(String, CpuKernel)>),
}

/// A loaded module.
pub enum Module {
    Cpu(Vec<(String, CpuKernel)>),
    Cuda(cuda::CudaModule),
    Hip(hip::HipModule),
}

/// A kernel of a loaded module, ready to launch.
#[derive(Clone)]
pub enum Kernel {
    Cpu(CpuKernel),
    Cuda(cuda::CudaKernel),
    Hip(hip::HipKernel),
}

impl Module {
    /// The kernel called `name`.
    pub fn kernel(&self, name: &str) -> Result<Kernel, RunError> {
        match self {
            Module::Cpu(kernels) => kernels
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, k)| Kernel::Cpu(*k))
                .ok_or_else(|| RunError::launch(format!("the module has no kernel `{name}`"))),
            Module::Cuda(m) => m.kernel(name).map(Kernel::Cuda),
            Module::Hip(m) => m.kernel(name).map(Kernel::Hip),
        }
    }
}

/// The parameters of a launch, laid out as `cuLaunchKernel`'s
/// `kernelParams`: one 8-byte slot per parameter holding the value (a
/// device address for a buffer, the scalar itself otherwise, little-endian
/// in the slot's first bytes), and an array of pointers to the slots.
#[derive(Clone, Debug, Default)]
pub struct KernelArgs {
    slots: Vec<u64>,
    pointers: Vec<*mut c_void>,
}

impl KernelArgs {
    pub fn new() -> KernelArgs {
        KernelArgs::default()
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// A buffer parameter: the buffer's device address.
    pub fn push_buffer(&mut self, buffer: &mut Buffer) {
        let address = buffer.address();
        self.slots.push(address);
    }

    /// A raw address (a buffer the caller manages).
    pub fn push_address(&mut self, address: u64) {
        self.slots.push(address);
    }

    pub fn push_f32(&mut self, v: f32) {
        self.slots.push(v.to_bits() as u64);
    }

    pub fn push_f64(&mut self, v: f64) {
        self.slots.push(v.to_bits());
    }

    pub fn push_i32(&mut self, v: i32) {
        self.slots.push(v as u32 as u64);
    }

    /// An `i64`, or an `index`.
    pub fn push_i64(&mut self, v: i64) {
        self.slots.push(v as u64);
    }

    /// An `i1`/`bool`, passed as one byte.
    pub fn push_bool(&mut self, v: bool) {
        self.slots.push(v as u64);
    }

    /// The pointer array: entry `i` points at slot `i`. Valid until the
    /// arguments change.
    pub fn params(&mut self) -> &mut [*mut c_void] {
        self.pointers = self.slots.iter_mut().map(|s| s as *mut u64 as *mut c_void).collect();
        &mut self.pointers
    }
}

/// A queue of work on a device. The CPU device runs everything at once, in
/// order, so its streams are empty markers.
pub enum Stream {
    Cpu,
    Cuda(cuda::CudaQueue),
    Hip(hip::HipQueue),
}

/// A point in a stream's work, for timing.
pub enum Event {
    Cpu(Option<Instant>),
    Cuda(cuda::CudaMarker),
    Hip(hip::HipMarker),
}

/// Which way a copy between host and device memory went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyKind {
    HostToDevice,
    DeviceToHost,
}

impl CopyKind {
    /// `host to device` or `device to host`.
    pub fn name(self) -> &'static str {
        match self {
            CopyKind::HostToDevice => "host to device",
            CopyKind::DeviceToHost => "device to host",
        }
    }
}

/// A copy between host and device memory ([`Device::upload`],
/// [`Device::download`]), recorded while [`Device::record_copies`] asks.
/// Both copies wait for their completion, so the host's clock times them.
#[derive(Clone, Debug)]
pub struct CopyRecord {
    pub kind: CopyKind,
    pub bytes: usize,
    pub start: Instant,
    pub duration: Duration,
}

/// The copies a device records (None while it does not); the clones of a
/// device share it.
#[derive(Clone, Debug, Default)]
pub(crate) struct CopyLog(Arc<Mutex<Option<Vec<CopyRecord>>>>);

impl CopyLog {
    fn push(&self, kind: CopyKind, bytes: usize, start: Instant) {
        let mut log = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(records) = log.as_mut() {
            records.push(CopyRecord {
                kind,
                bytes,
                start,
                duration: start.elapsed(),
            });
        }
    }

    fn replace(&self, records: Option<Vec<CopyRecord>>) -> Option<Vec<CopyRecord>> {
        std::mem::replace(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner), records)
    }
}

fn mismatch(what: &str) -> RunError {
    RunError::launch(format!("{what} belongs to another device"))
}

impl Device {
    /// The first device of `kind`.
    pub fn open(kind: DeviceKind) -> Result<Device, RunError> {
        Device::open_ordinal(kind, 0)
    }

    /// Device number `ordinal` of `kind` (the CPU device has only 0).
    pub fn open_ordinal(kind: DeviceKind, ordinal: usize) -> Result<Device, RunError> {
        match kind {
            DeviceKind::Cpu => Ok(Device::Cpu(CpuDevice::new())),
            DeviceKind::Cuda => CudaDevice::open(ordinal).map(Device::Cuda),
            DeviceKind::Hip => HipDevice::open(ordinal).map(Device::Hip),
        }
    }

    pub fn kind(&self) -> DeviceKind {
        match self {
            Device::Cpu(_) => DeviceKind::Cpu,
            Device::Cuda(_) => DeviceKind::Cuda,
            Device::Hip(_) => DeviceKind::Hip,
        }
    }

    /// A name for messages: `cpu (2 threads)`, the GPU's product name.
    pub fn name(&self) -> String {
        match self {
            Device::Cpu(d) => format!("cpu ({} worker threads)", d.workers()),
            Device::Cuda(d) => d.name(),
            Device::Hip(d) => d.name(),
        }
    }

    /// The blocks a persistent grid launches (`persistent(…)` grid entries,
    /// one block per multiprocessor): the CPU device's worker threads, a
    /// CUDA device's streaming multiprocessors. HIP's attribute numbers
    /// differ between ROCm releases, so a HIP device does not say, and no
    /// AMD target schedules persistent grids.
    pub fn multiprocessors(&self) -> Result<i64, RunError> {
        match self {
            Device::Cpu(d) => Ok(i64::try_from(d.workers()).unwrap_or(i64::MAX)),
            Device::Cuda(d) => d.multiprocessors(),
            Device::Hip(d) => Err(RunError::launch(format!(
                "{} cannot size a persistent grid: the HIP runtime has no portable multiprocessor count",
                d.name()
            ))),
        }
    }

    /// Whether buffers are host memory (no copies are needed).
    pub fn is_host(&self) -> bool {
        matches!(self, Device::Cpu(_))
    }

    /// The device, its buffers from [`Device::alloc`] in memory of `kind`;
    /// E1001 where the device has no such memory.
    pub fn with_memory(mut self, kind: MemoryKind) -> Result<Device, RunError> {
        match &self {
            Device::Cpu(_) => {}
            Device::Cuda(d) => d.supports(kind)?,
            Device::Hip(d) => d.supports(kind)?,
        }
        self.common_mut().memory = kind;
        Ok(self)
    }

    /// The kind of memory [`Device::alloc`] gives.
    pub fn memory(&self) -> MemoryKind {
        self.common().memory
    }

    /// `len` zeroed bytes of the device's memory kind ([`Device::memory`]).
    pub fn alloc(&self, len: usize) -> Result<Buffer, RunError> {
        self.alloc_in(len, self.memory())
    }

    /// `len` zeroed bytes of memory of `kind`.
    pub fn alloc_in(&self, len: usize, kind: MemoryKind) -> Result<Buffer, RunError> {
        let memory = match self {
            Device::Cpu(_) => Memory::Host(HostBuffer::zeroed(len)?),
            Device::Cuda(d) => Memory::Cuda(d.alloc(len, kind)?),
            Device::Hip(d) => Memory::Hip(d.alloc(len, kind)?),
        };
        Ok(Buffer { len, kind, memory })
    }

    fn check_len(buffer: &Buffer, host: usize, what: &str) -> Result<(), RunError> {
        if buffer.len != host {
            return Err(RunError::launch(format!(
                "cannot {what}: the device buffer holds {} bytes and the host data {host}",
                buffer.len
            )));
        }
        Ok(())
    }

    /// `map` encoded for this device's TMA units, in a device buffer of
    /// its own (the kernel reads it through the address); only CUDA
    /// devices have them.
    pub fn tensor_map(&self, map: &TiledMap) -> Result<Buffer, RunError> {
        let Device::Cuda(d) = self else {
            return Err(RunError::launch(format!(
                "TMA tensor maps are for CUDA devices, and this is {}",
                self.name()
            )));
        };
        let bytes = d.encode_tensor_map(map)?;
        let mut buffer = self.alloc_in(bytes.len(), MemoryKind::Device)?;
        self.upload(&mut buffer, &bytes)?;
        Ok(buffer)
    }

    /// Copies `src` into `dst` (the lengths must be equal).
    pub fn upload(&self, dst: &mut Buffer, src: &[u8]) -> Result<(), RunError> {
        Device::check_len(dst, src.len(), "copy to the device")?;
        let start = Instant::now();
        match (self, &mut dst.memory) {
            (Device::Cpu(_), Memory::Host(b)) => b.bytes_mut().copy_from_slice(src),
            (Device::Cuda(d), Memory::Cuda(b)) => d.upload(b, src)?,
            (Device::Hip(d), Memory::Hip(b)) => d.upload(b, src)?,
            _ => return Err(mismatch("the buffer")),
        }
        self.copy_log().push(CopyKind::HostToDevice, src.len(), start);
        Ok(())
    }

    /// Copies `src` into `dst` (the lengths must be equal); waits for the
    /// device's work first.
    pub fn download(&self, src: &Buffer, dst: &mut [u8]) -> Result<(), RunError> {
        Device::check_len(src, dst.len(), "copy from the device")?;
        let start = Instant::now();
        match (self, &src.memory) {
            (Device::Cpu(_), Memory::Host(b)) => dst.copy_from_slice(b.bytes()),
            (Device::Cuda(d), Memory::Cuda(b)) => d.download(b, dst)?,
            (Device::Hip(d), Memory::Hip(b)) => d.download(b, dst)?,
            _ => return Err(mismatch("the buffer")),
        }
        self.copy_log().push(CopyKind::DeviceToHost, dst.len(), start);
        Ok(())
    }

    /// Copies `src` into `dst`, both buffers of this device (the lengths
    /// must be equal). On a GPU the copy is queued, like a launch: call
    /// [`Device::synchronize`] to wait. Not recorded with the copies
    /// between host and device.
    pub fn copy(&self, dst: &mut Buffer, src: &Buffer) -> Result<(), RunError> {
        Device::check_len(dst, src.len, "copy on the device")?;
        match (self, &mut dst.memory, &src.memory) {
            (Device::Cpu(_), Memory::Host(to), Memory::Host(from)) => {
                to.bytes_mut().copy_from_slice(from.bytes());
                Ok(())
            }
            (Device::Cuda(d), Memory::Cuda(to), Memory::Cuda(from)) => d.copy(to, from, src.len),
            (Device::Hip(d), Memory::Hip(to), Memory::Hip(from)) => d.copy(to, from, src.len),
            _ => Err(mismatch("a buffer")),
        }
    }

    /// Starts recording the copies between host and device, into an empty
    /// log; [`Device::take_copies`] stops and returns them.
    pub fn record_copies(&self) {
        self.copy_log().replace(Some(Vec::new()));
    }

    /// The copies recorded since [`Device::record_copies`], in order; stops
    /// recording.
    pub fn take_copies(&self) -> Vec<CopyRecord> {
        self.copy_log().replace(None).unwrap_or_default()
    }

    fn copy_log(&self) -> &CopyLog {
        &self.common().copies
    }

    fn common(&self) -> &Common {
        match self {
            Device::Cpu(d) => &d.common,
            Device::Cuda(d) => &d.common,
            Device::Hip(d) => &d.common,
        }
    }

    fn common_mut(&mut self) -> &mut Common {
        match self {
            Device::Cpu(d) => &mut d.common,
            Device::Cuda(d) => &mut d.common,
            Device::Hip(d) => &mut d.common,
        }
    }

    /// Sets every byte of `dst` to `byte`.
    pub fn memset(&self, dst: &mut Buffer, byte: u8) -> Result<(), RunError> {
        match (self, &mut dst.memory) {
            (Device::Cpu(_), Memory::Host(b)) => {
                b.bytes_mut().fill(byte);
                Ok(())
            }
            (Device::Cuda(d), Memory::Cuda(b)) => d.memset(b, byte),
            (Device::Hip(d), Memory::Hip(b)) => d.memset(b, byte),
            _ => Err(mismatch("the buffer")),
        }
    }

    /// Loads a module: PTX or a cubin on CUDA, a code object on HIP, JIT
    /// entry points on the CPU.
    pub fn load_module(&self, image: ModuleImage) -> Result<Module, RunError> {
        match (self, image) {
            (Device::Cpu(_), ModuleImage::Cpu(kernels)) => Ok(Module::Cpu(kernels)),
            (Device::Cuda(d), ModuleImage::Ptx(text)) => d.load_ptx(text).map(Module::Cuda),
            (Device::Cuda(d), ModuleImage::Cubin(bytes)) => d.load_cubin(bytes).map(Module::Cuda),
            (Device::Hip(d), ModuleImage::Hsaco(bytes)) => d.load(&bytes).map(Module::Hip),
            (device, image) => Err(RunError::launch(format!(
                "a {} device cannot load {}",
                device.kind(),
                match image {
                    ModuleImage::Ptx(_) => "PTX",
                    ModuleImage::Cubin(_) => "a cubin",
                    ModuleImage::Hsaco(_) => "an AMDGPU code object",
                    ModuleImage::Cpu(_) => "CPU kernels",
                }
            ))),
        }
    }

    /// Launches `kernel` on `stream` (the device's default stream when
    /// None). On the CPU the launch completes before this returns; on a GPU
    /// it is queued: call [`Device::synchronize`] to wait.
    ///
    /// # Safety
    /// `args` must match the kernel's parameters (count, types) and every
    /// address in it must be a live buffer of this device large enough for
    /// every access the kernel makes.
    pub unsafe fn launch(
        &self,
        kernel: &Kernel,
        config: &LaunchConfig,
        args: &mut KernelArgs,
        stream: Option<&Stream>,
    ) -> Result<(), RunError> {
        config.validate()?;
        // SAFETY: forwarded from this function's contract.
        unsafe {
            match (self, kernel, stream) {
                (Device::Cpu(d), Kernel::Cpu(k), None | Some(Stream::Cpu)) => d.launch(*k, config, args.params()),
                (Device::Cuda(d), Kernel::Cuda(k), s) => {
                    let queue = match s {
                        None => None,
                        Some(Stream::Cuda(q)) => Some(q),
                        Some(_) => return Err(mismatch("the stream")),
                    };
                    d.launch(k, config, args.params(), queue)
                }
                (Device::Hip(d), Kernel::Hip(k), s) => {
                    let queue = match s {
                        None => None,
                        Some(Stream::Hip(q)) => Some(q),
                        Some(_) => return Err(mismatch("the stream")),
                    };
                    d.launch(k, config, args.params(), queue)
                }
                _ => Err(mismatch("the kernel or the stream")),
            }
        }
    }

    /// Waits until all the device's work is done.
    pub fn synchronize(&self) -> Result<(), RunError> {
        match self {
            Device::Cpu(_) => Ok(()),
            Device::Cuda(d) => d.synchronize(),
            Device::Hip(d) => d.synchronize(),
        }
    }

    /// A new stream.
    pub fn stream(&self) -> Result<Stream, RunError> {
        match self {
            Device::Cpu(_) => Ok(Stream::Cpu),
            Device::Cuda(d) => d.stream().map(Stream::Cuda),
            Device::Hip(d) => d.stream().map(Stream::Hip),
        }
    }

    /// Waits until the work queued on `stream` is done.
    pub fn synchronize_stream(&self, stream: &Stream) -> Result<(), RunError> {
        match (self, stream) {
            (Device::Cpu(_), Stream::Cpu) => Ok(()),
            (Device::Cuda(_), Stream::Cuda(q)) => q.synchronize(),
            (Device::Hip(d), Stream::Hip(q)) => d.synchronize_stream(q),
            _ => Err(mismatch("the stream")),
        }
    }

    /// A new event for timing.
    pub fn event(&self) -> Result<Event, RunError> {
        match self {
            Device::Cpu(_) => Ok(Event::Cpu(None)),
            Device::Cuda(d) => d.event().map(Event::Cuda),
            Device::Hip(d) => d.event().map(Event::Hip),
        }
    }

    /// Records `event` on `stream` (the default stream when None).
    pub fn record(&self, event: &mut Event, stream: Option<&Stream>) -> Result<(), RunError> {
        match (self, event, stream) {
            (Device::Cpu(_), Event::Cpu(at), None | Some(Stream::Cpu)) => {
                *at = Some(Instant::now());
                Ok(())
            }
            (Device::Cuda(d), Event::Cuda(e), None) => d.record(e, None),
            (Device::Cuda(d), Event::Cuda(e), Some(Stream::Cuda(q))) => d.record(e, Some(q)),
            (Device::Hip(d), Event::Hip(e), None) => d.record(e, None),
            (Device::Hip(d), Event::Hip(e), Some(Stream::Hip(q))) => d.record(e, Some(q)),
            _ => Err(mismatch("the event or the stream")),
        }
    }

    /// Milliseconds between two recorded events (waits for `end`).
    pub fn elapsed_ms(&self, start: &Event, end: &Event) -> Result<f32, RunError> {
        match (self, start, end) {
            (Device::Cpu(_), Event::Cpu(Some(a)), Event::Cpu(Some(b))) => {
                Ok(b.saturating_duration_since(*a).as_secs_f32() * 1000.0)
            }
            (Device::Cpu(_), Event::Cpu(_), Event::Cpu(_)) => {
                Err(RunError::launch("an event was not recorded before timing"))
            }
            (Device::Cuda(_), Event::Cuda(a), Event::Cuda(b)) => cuda::elapsed_ms(a, b),
            (Device::Hip(d), Event::Hip(a), Event::Hip(b)) => d.elapsed_ms(a, b),
            _ => Err(mismatch("the event")),
        }
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({})", self.name())
    }
}
