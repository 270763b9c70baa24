//! The CUDA device, through cudarc with the driver library loaded at run
//! time. cudarc panics when `libcuda` cannot be loaded, so [`CudaDevice::open`]
//! looks for the library itself first, and catches any panic of cudarc's
//! while the context is created.
//!
//! Buffers are raw driver allocations of each [`MemoryKind`]
//! (`cuMemAlloc`, `cuMemAllocManaged`, `cuMemHostAlloc` mapped), so that
//! copies, fills and launches treat the three alike: with unified
//! addressing, a managed or mapped pinned address is a device address.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use cudarc::driver::{result, sys, CudaContext, CudaEvent, CudaFunction, CudaStream};
use cudarc::nvrtc::Ptx;

use crate::cpu::LaunchConfig;
use crate::device::tensor_map::{TiledMap, TENSOR_MAP_BYTES};
use crate::device::{Common, MemoryKind};
use crate::{DType, RunError};

/// A CUDA device: a primary context and its default stream.
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    ordinal: usize,
    pub(crate) common: Common,
}

/// A driver allocation, freed on drop in its context.
pub struct CudaBuffer {
    ctx: Arc<CudaContext>,
    /// The address kernels use.
    pointer: sys::CUdeviceptr,
    /// Bytes allocated (at least one).
    len: usize,
    kind: MemoryKind,
    /// For pinned memory, the host address `cuMemFreeHost` takes.
    host: usize,
}

impl CudaBuffer {
    pub(crate) fn address(&mut self) -> u64 {
        self.pointer
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_err() {
            return;
        }
        // SAFETY: the allocation was made in this context by `alloc` with
        // the function that matches its kind, and is freed once.
        let _ = unsafe {
            match self.kind {
                MemoryKind::Device | MemoryKind::Managed => result::memory_free(self.pointer),
                MemoryKind::Pinned => result::free_host(self.host as *mut c_void),
            }
        };
    }
}

pub struct CudaModule {
    module: Arc<cudarc::driver::CudaModule>,
}

#[derive(Clone)]
pub struct CudaKernel {
    function: CudaFunction,
    /// The dynamic shared memory the kernel has been allowed
    /// ([`CudaDevice::allow_shared`]), so that only its first launch of a
    /// size asks the driver (not every timed launch).
    allowed_shared: Arc<AtomicU32>,
}

pub struct CudaQueue {
    stream: Arc<CudaStream>,
}

impl CudaQueue {
    pub(crate) fn synchronize(&self) -> Result<(), RunError> {
        self.stream.synchronize().map_err(driver("wait for a stream"))
    }
}

pub struct CudaMarker {
    event: CudaEvent,
}

fn driver(what: &'static str) -> impl Fn(result::DriverError) -> RunError {
    move |e| RunError::launch(format!("CUDA failed to {what}: {e}"))
}

/// Whether the driver library can be loaded, under any of the names cudarc
/// tries.
fn driver_library_present() -> bool {
    cudarc::get_lib_name_candidates("cuda").iter().any(|name| {
        // SAFETY: loading the CUDA driver runs its initializers, which is
        // what using CUDA at all requires; the handle is closed at once and
        // cudarc loads it again for itself.
        unsafe { libloading::Library::new(name) }.is_ok()
    })
}

impl CudaDevice {
    /// Opens device `ordinal`, or says why it cannot (E1001).
    pub fn open(ordinal: usize) -> Result<CudaDevice, RunError> {
        if !driver_library_present() {
            return Err(RunError::device_unavailable(
                "cannot use CUDA: the CUDA driver library (libcuda.so) is not installed",
            ));
        }
        let created = std::panic::catch_unwind(|| CudaContext::new(ordinal));
        let ctx = match created {
            Ok(Ok(ctx)) => ctx,
            Ok(Err(e)) => {
                return Err(RunError::device_unavailable(format!(
                    "cannot use CUDA device {ordinal}: {e}"
                )));
            }
            Err(_) => {
                return Err(RunError::device_unavailable(format!(
                    "cannot use CUDA device {ordinal}: the driver library lacks a function the runtime needs"
                )));
            }
        };
        let stream = ctx.default_stream();
        Ok(CudaDevice {
            ctx,
            stream,
            ordinal,
            common: Common::default(),
        })
    }

    pub fn name(&self) -> String {
        match self.ctx.name() {
            Ok(name) => format!("cuda:{} ({name})", self.ordinal),
            Err(_) => format!("cuda:{}", self.ordinal),
        }
    }

    /// The compute capability, `(9, 0)` for an H100; None where the driver
    /// does not say.
    pub fn compute_capability(&self) -> Option<(i32, i32)> {
        use sys::CUdevice_attribute::{
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR as MAJOR,
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR as MINOR,
        };
        Some((self.ctx.attribute(MAJOR).ok()?, self.ctx.attribute(MINOR).ok()?))
    }

    /// The number of streaming multiprocessors (132 on an H100 SXM).
    pub fn multiprocessors(&self) -> Result<i64, RunError> {
        let attribute = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
        match self.ctx.attribute(attribute) {
            Ok(n) if n > 0 => Ok(i64::from(n)),
            Ok(n) => Err(RunError::launch(format!("{} reports {n} multiprocessors", self.name()))),
            Err(e) => Err(RunError::launch(format!(
                "cannot ask {} how many multiprocessors it has: {e}",
                self.name()
            ))),
        }
    }

    /// Ok where the device has memory of `kind`, else E1001.
    pub(crate) fn supports(&self, kind: MemoryKind) -> Result<(), RunError> {
        let attribute = match kind {
            MemoryKind::Device => return Ok(()),
            MemoryKind::Managed => sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
            MemoryKind::Pinned => sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
        };
        match self.ctx.attribute(attribute) {
            Ok(0) => Err(
                RunError::device_unavailable(format!("{} has no {}", self.name(), kind.describe()))
                    .with_help("allocate device memory with `--memory device`"),
            ),
            Ok(_) => Ok(()),
            Err(e) => Err(RunError::device_unavailable(format!(
                "cannot ask {} whether it has {}: {e}",
                self.name(),
                kind.describe()
            ))),
        }
    }

    /// `len` zeroed bytes of `kind` (one byte for none: the driver refuses
    /// a zero-byte allocation).
    pub(crate) fn alloc(&self, len: usize, kind: MemoryKind) -> Result<CudaBuffer, RunError> {
        let len = len.max(1);
        self.ctx.bind_to_thread().map_err(driver("allocate memory"))?;
        // SAFETY: plain allocations in the bound context; each result is
        // owned by the buffer, which frees it with the matching function.
        let (pointer, host) = unsafe {
            match kind {
                MemoryKind::Device => (result::malloc_sync(len).map_err(driver("allocate device memory"))?, 0),
                MemoryKind::Managed => (
                    result::malloc_managed(len, sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL)
                        .map_err(driver("allocate managed memory"))?,
                    0,
                ),
                MemoryKind::Pinned => {
                    let host = result::malloc_host(len, sys::CU_MEMHOSTALLOC_DEVICEMAP)
                        .map_err(driver("allocate pinned host memory"))?;
                    let mut pointer: sys::CUdeviceptr = 0;
                    let mapped = sys::cuMemHostGetDevicePointer_v2(&mut pointer, host, 0).result();
                    if let Err(e) = mapped {
                        let _ = result::free_host(host);
                        return Err(driver("map pinned host memory")(e));
                    }
                    (pointer, host as usize)
                }
            }
        };
        let mut buffer = CudaBuffer {
            ctx: self.ctx.clone(),
            pointer,
            len,
            kind,
            host,
        };
        self.memset(&mut buffer, 0)?;
        self.stream.synchronize().map_err(driver("set memory"))?;
        Ok(buffer)
    }

    pub(crate) fn upload(&self, dst: &mut CudaBuffer, src: &[u8]) -> Result<(), RunError> {
        if src.is_empty() {
            return Ok(());
        }
        self.ctx.bind_to_thread().map_err(driver("copy to the device"))?;
        // SAFETY: `dst` holds at least `src.len()` bytes (checked by
        // Device), and the copy is waited for before `src` can move.
        unsafe { result::memcpy_htod_async(dst.pointer, src, self.stream.cu_stream()) }
            .map_err(driver("copy to the device"))?;
        self.stream.synchronize().map_err(driver("copy to the device"))
    }

    pub(crate) fn download(&self, src: &CudaBuffer, dst: &mut [u8]) -> Result<(), RunError> {
        if dst.is_empty() {
            return Ok(());
        }
        self.synchronize()?;
        // SAFETY: `src` holds at least `dst.len()` bytes (checked by
        // Device), and the copy is waited for before `dst` can move.
        unsafe { result::memcpy_dtoh_async(dst, src.pointer, self.stream.cu_stream()) }
            .map_err(driver("copy from the device"))?;
        self.stream.synchronize().map_err(driver("copy from the device"))
    }

    /// Queues a copy of `len` bytes between two buffers of this device.
    pub(crate) fn copy(&self, dst: &mut CudaBuffer, src: &CudaBuffer, len: usize) -> Result<(), RunError> {
        if len == 0 {
            return Ok(());
        }
        self.ctx.bind_to_thread().map_err(driver("copy on the device"))?;
        // SAFETY: both are live allocations of at least `len` bytes
        // (checked by Device).
        unsafe { result::memcpy_dtod_async(dst.pointer, src.pointer, len, self.stream.cu_stream()) }
            .map_err(driver("copy on the device"))
    }

    pub(crate) fn memset(&self, dst: &mut CudaBuffer, byte: u8) -> Result<(), RunError> {
        self.ctx.bind_to_thread().map_err(driver("set memory"))?;
        // SAFETY: `pointer` is the start of a live allocation of `len` bytes.
        unsafe { result::memset_d8_async(dst.pointer, byte, dst.len, self.stream.cu_stream()) }
            .map_err(driver("set memory"))
    }

    /// The 128 bytes of `map`, encoded by the driver.
    pub(crate) fn encode_tensor_map(&self, map: &TiledMap) -> Result<[u8; TENSOR_MAP_BYTES], RunError> {
        use sys::CUtensorMapDataType as T;
        let data_type = match map.dtype {
            DType::Bf16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            DType::F16 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            DType::F32 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            DType::F64 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
            DType::I32 => T::CU_TENSOR_MAP_DATA_TYPE_INT32,
            DType::I64 => T::CU_TENSOR_MAP_DATA_TYPE_INT64,
            DType::U32 => T::CU_TENSOR_MAP_DATA_TYPE_UINT32,
            DType::I16 | DType::U16 => T::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            DType::U64 => T::CU_TENSOR_MAP_DATA_TYPE_INT64,
            DType::Fp8E4m3 | DType::Fp8E5m2 | DType::I8 | DType::U8 | DType::Bool => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        };
        let swizzle = match map.swizzle {
            32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
            64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
            128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            _ => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        };
        let dims = map.global_dims();
        let strides = map.global_strides();
        let box_dims = map.global_box();
        let element_strides = vec![1u32; dims.len()];
        let rank = u32::try_from(dims.len()).map_err(|_| RunError::launch("a tensor map of too many dims"))?;
        let mut out = sys::CUtensorMap { opaque: [0; 16] };
        self.ctx.bind_to_thread().map_err(driver("encode a TMA tensor map"))?;
        // SAFETY: every pointer is to a live array of the length `rank`
        // asks for (strides: rank - 1), `out` is a writable
        // `CUtensorMap`, and TiledMap::new checked the driver's rules.
        let status = unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut out,
                data_type,
                rank,
                map.address as *mut c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                box_dims.as_ptr(),
                element_strides.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        status.result().map_err(driver("encode a TMA tensor map"))?;
        let mut bytes = [0u8; TENSOR_MAP_BYTES];
        for (chunk, word) in bytes.chunks_exact_mut(8).zip(out.opaque) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        Ok(bytes)
    }

    pub(crate) fn load_ptx(&self, text: String) -> Result<CudaModule, RunError> {
        if text.contains('\0') {
            return Err(RunError::launch("the PTX text contains a NUL byte"));
        }
        let module = self
            .ctx
            .load_module(Ptx::from_src(text))
            .map_err(driver("load the PTX module"))?;
        Ok(CudaModule { module })
    }

    pub(crate) fn load_cubin(&self, bytes: Vec<u8>) -> Result<CudaModule, RunError> {
        let module = self
            .ctx
            .load_module(Ptx::from_binary(bytes))
            .map_err(driver("load the cubin"))?;
        Ok(CudaModule { module })
    }

    /// # Safety
    /// As [`crate::Device::launch`].
    pub(crate) unsafe fn launch(
        &self,
        kernel: &CudaKernel,
        config: &LaunchConfig,
        params: &mut [*mut c_void],
        queue: Option<&CudaQueue>,
    ) -> Result<(), RunError> {
        let stream = queue.map_or(&self.stream, |q| &q.stream);
        let shared = u32::try_from(config.shared_bytes)
            .map_err(|_| RunError::launch(format!("{} bytes of shared memory is too many", config.shared_bytes)))?;
        self.ctx.bind_to_thread().map_err(driver("launch the kernel"))?;
        if shared > DEFAULT_SHARED_BYTES && shared > kernel.allowed_shared.load(Ordering::Relaxed) {
            self.allow_shared(kernel, shared)?;
            kernel.allowed_shared.fetch_max(shared, Ordering::Relaxed);
        }
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.block;
        // SAFETY: the caller guarantees that `params` matches the kernel.
        unsafe {
            result::launch_kernel(
                kernel.function.cu_function(),
                (gx, gy, gz),
                (bx, by, bz),
                shared,
                stream.cu_stream(),
                params,
            )
        }
        .map_err(driver("launch the kernel"))
    }

    /// Lets `kernel` take `bytes` of dynamic shared memory, over the 48 KiB
    /// a launch gets without asking (the driver refuses such a launch as
    /// an invalid value otherwise).
    fn allow_shared(&self, kernel: &CudaKernel, bytes: u32) -> Result<(), RunError> {
        let optin = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN;
        let limit = self
            .ctx
            .attribute(optin)
            .map_err(driver("ask for the shared-memory limit"))?;
        if i64::from(bytes) > i64::from(limit) {
            return Err(RunError::launch(format!(
                "the kernel needs {bytes} bytes of shared memory per block; {} allows at most {limit}",
                self.name()
            )));
        }
        let attribute = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        kernel
            .function
            .set_attribute(attribute, bytes as i32)
            .map_err(driver("allow the kernel its shared memory"))
    }

    pub(crate) fn synchronize(&self) -> Result<(), RunError> {
        self.ctx.synchronize().map_err(driver("run the kernel"))
    }

    pub(crate) fn stream(&self) -> Result<CudaQueue, RunError> {
        let stream = self.ctx.new_stream().map_err(driver("create a stream"))?;
        Ok(CudaQueue { stream })
    }

    pub(crate) fn event(&self) -> Result<CudaMarker, RunError> {
        let event = self
            .ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver("create an event"))?;
        Ok(CudaMarker { event })
    }

    pub(crate) fn record(&self, event: &CudaMarker, queue: Option<&CudaQueue>) -> Result<(), RunError> {
        let stream = queue.map_or(&self.stream, |q| &q.stream);
        event.event.record(stream).map_err(driver("record an event"))
    }
}

/// The dynamic shared memory a launch may take without raising the
/// kernel's limit.
const DEFAULT_SHARED_BYTES: u32 = 48 * 1024;

pub(crate) fn elapsed_ms(start: &CudaMarker, end: &CudaMarker) -> Result<f32, RunError> {
    end.event.synchronize().map_err(driver("wait for an event"))?;
    start.event.elapsed_ms(&end.event).map_err(driver("time two events"))
}

impl CudaModule {
    pub(crate) fn kernel(&self, name: &str) -> Result<CudaKernel, RunError> {
        if name.contains('\0') {
            return Err(RunError::launch("a kernel name contains a NUL byte"));
        }
        let function = self
            .module
            .load_function(name)
            .map_err(|e| RunError::launch(format!("the module has no kernel `{name}`: {e}")))?;
        Ok(CudaKernel {
            function,
            allowed_shared: Arc::new(AtomicU32::new(0)),
        })
    }
}
