//! The CUDA device, through cudarc with the driver library loaded at run
//! time. cudarc panics when `libcuda` cannot be loaded, so [`CudaDevice::open`]
//! looks for the library itself first, and catches any panic of cudarc's
//! while the context is created.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{
    result, sys, CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
};
use cudarc::nvrtc::Ptx;

use crate::cpu::LaunchConfig;
use crate::device::CopyLog;
use crate::RunError;

/// A CUDA device: a primary context and its default stream.
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    ordinal: usize,
    pub(crate) copies: CopyLog,
}

pub struct CudaBuffer {
    slice: CudaSlice<u8>,
    stream: Arc<CudaStream>,
}

impl CudaBuffer {
    pub(crate) fn address(&mut self) -> u64 {
        let (ptr, _sync) = self.slice.device_ptr(&self.stream);
        ptr
    }
}

pub struct CudaModule {
    module: Arc<cudarc::driver::CudaModule>,
}

#[derive(Clone)]
pub struct CudaKernel {
    function: CudaFunction,
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
            copies: CopyLog::default(),
        })
    }

    pub fn name(&self) -> String {
        match self.ctx.name() {
            Ok(name) => format!("cuda:{} ({name})", self.ordinal),
            Err(_) => format!("cuda:{}", self.ordinal),
        }
    }

    pub(crate) fn alloc(&self, len: usize) -> Result<CudaBuffer, RunError> {
        // A zero-byte allocation is an error for the driver; keep one byte.
        let slice = self
            .stream
            .alloc_zeros::<u8>(len.max(1))
            .map_err(driver("allocate device memory"))?;
        Ok(CudaBuffer {
            slice,
            stream: self.stream.clone(),
        })
    }

    pub(crate) fn upload(&self, dst: &mut CudaBuffer, src: &[u8]) -> Result<(), RunError> {
        if src.is_empty() {
            return Ok(());
        }
        let mut view = dst.slice.slice_mut(0..src.len());
        self.stream
            .memcpy_htod(src, &mut view)
            .map_err(driver("copy to the device"))?;
        self.stream.synchronize().map_err(driver("copy to the device"))
    }

    pub(crate) fn download(&self, src: &CudaBuffer, dst: &mut [u8]) -> Result<(), RunError> {
        if dst.is_empty() {
            return Ok(());
        }
        self.synchronize()?;
        let view = src.slice.slice(0..dst.len());
        self.stream
            .memcpy_dtoh(&view, dst)
            .map_err(driver("copy from the device"))?;
        self.stream.synchronize().map_err(driver("copy from the device"))
    }

    /// Queues a copy of `len` bytes between two buffers of this device.
    pub(crate) fn copy(&self, dst: &mut CudaBuffer, src: &CudaBuffer, len: usize) -> Result<(), RunError> {
        if len == 0 {
            return Ok(());
        }
        let from = src.slice.slice(0..len);
        let mut to = dst.slice.slice_mut(0..len);
        self.stream
            .memcpy_dtod(&from, &mut to)
            .map_err(driver("copy on the device"))
    }

    pub(crate) fn memset(&self, dst: &mut CudaBuffer, byte: u8) -> Result<(), RunError> {
        let len = dst.slice.len();
        self.ctx.bind_to_thread().map_err(driver("set memory"))?;
        let (ptr, _sync) = dst.slice.device_ptr_mut(&self.stream);
        // SAFETY: `ptr` is the start of a live allocation of `len` bytes.
        unsafe { result::memset_d8_async(ptr, byte, len, self.stream.cu_stream()) }.map_err(driver("set memory"))
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
        Ok(CudaKernel { function })
    }
}
