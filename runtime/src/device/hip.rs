//! The HIP device: `libamdhip64.so` opened at run time with libloading,
//! kernels loaded from AMDGPU code objects with `hipModuleLoadData` and
//! launched with `hipModuleLaunchKernel`. Handles are kept as integers so
//! the wrappers stay `Send`; every call first makes the device current on
//! the calling thread.
//!
//! Buffers are device memory (`hipMalloc`), managed memory
//! (`hipMallocManaged`) or pinned host memory mapped for the device
//! (`hipHostMalloc` with `hipHostMallocMapped`); copies, fills and
//! launches use the device address of each alike.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::sync::Arc;

use crate::cpu::LaunchConfig;
use crate::device::{Common, MemoryKind};
use crate::RunError;

type Status = c_int;
type Handle = *mut c_void;

const HIP_SUCCESS: Status = 0;
const HOST_TO_DEVICE: c_int = 1;
const DEVICE_TO_HOST: c_int = 2;
const DEVICE_TO_DEVICE: c_int = 3;
/// `hipMemAttachGlobal`: managed memory any stream may use.
const MEM_ATTACH_GLOBAL: c_uint = 1;
/// `hipHostMallocMapped`: pinned memory mapped into the device's space.
const HOST_MALLOC_MAPPED: c_uint = 2;

/// The library names tried, in order.
const LIBRARY_NAMES: [&str; 4] = [
    "libamdhip64.so",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
    "/opt/rocm/lib/libamdhip64.so",
];

/// The HIP runtime's functions this crate calls.
struct Api {
    _library: libloading::Library,
    init: unsafe extern "C" fn(c_uint) -> Status,
    get_device_count: unsafe extern "C" fn(*mut c_int) -> Status,
    set_device: unsafe extern "C" fn(c_int) -> Status,
    device_get_name: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> Status,
    get_error_string: unsafe extern "C" fn(Status) -> *const c_char,
    malloc: unsafe extern "C" fn(*mut Handle, usize) -> Status,
    free: unsafe extern "C" fn(Handle) -> Status,
    malloc_managed: unsafe extern "C" fn(*mut Handle, usize, c_uint) -> Status,
    host_malloc: unsafe extern "C" fn(*mut Handle, usize, c_uint) -> Status,
    host_get_device_pointer: unsafe extern "C" fn(*mut Handle, Handle, c_uint) -> Status,
    host_free: unsafe extern "C" fn(Handle) -> Status,
    memcpy: unsafe extern "C" fn(Handle, *const c_void, usize, c_int) -> Status,
    memset: unsafe extern "C" fn(Handle, c_int, usize) -> Status,
    module_load_data: unsafe extern "C" fn(*mut Handle, *const c_void) -> Status,
    module_unload: unsafe extern "C" fn(Handle) -> Status,
    module_get_function: unsafe extern "C" fn(*mut Handle, Handle, *const c_char) -> Status,
    #[allow(clippy::type_complexity)]
    module_launch_kernel: unsafe extern "C" fn(
        Handle,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        Handle,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> Status,
    device_synchronize: unsafe extern "C" fn() -> Status,
    stream_create: unsafe extern "C" fn(*mut Handle) -> Status,
    stream_destroy: unsafe extern "C" fn(Handle) -> Status,
    stream_synchronize: unsafe extern "C" fn(Handle) -> Status,
    event_create: unsafe extern "C" fn(*mut Handle) -> Status,
    event_destroy: unsafe extern "C" fn(Handle) -> Status,
    event_record: unsafe extern "C" fn(Handle, Handle) -> Status,
    event_synchronize: unsafe extern "C" fn(Handle) -> Status,
    event_elapsed_time: unsafe extern "C" fn(*mut f32, Handle, Handle) -> Status,
}

impl Api {
    fn load() -> Result<Api, RunError> {
        let library = LIBRARY_NAMES
            .iter()
            // SAFETY: loading the HIP runtime runs its initializers, which
            // using HIP at all requires.
            .find_map(|&name| unsafe { libloading::Library::new(name) }.ok())
            .ok_or_else(|| {
                RunError::device_unavailable(
                    "cannot use HIP: the HIP runtime library (libamdhip64.so) is not installed",
                )
            })?;
        macro_rules! symbol {
            ($name:literal) => {
                // SAFETY: the symbol is the HIP runtime's function of that
                // name, whose C signature is the field's type; the pointer
                // stays valid while `library` is loaded, which the struct
                // keeps.
                *unsafe { library.get(concat!($name, "\0").as_bytes()) }.map_err(|e| {
                    RunError::device_unavailable(format!(
                        "cannot use HIP: the runtime library lacks `{}`: {e}",
                        $name
                    ))
                })?
            };
        }
        Ok(Api {
            init: symbol!("hipInit"),
            get_device_count: symbol!("hipGetDeviceCount"),
            set_device: symbol!("hipSetDevice"),
            device_get_name: symbol!("hipDeviceGetName"),
            get_error_string: symbol!("hipGetErrorString"),
            malloc: symbol!("hipMalloc"),
            free: symbol!("hipFree"),
            malloc_managed: symbol!("hipMallocManaged"),
            host_malloc: symbol!("hipHostMalloc"),
            host_get_device_pointer: symbol!("hipHostGetDevicePointer"),
            host_free: symbol!("hipHostFree"),
            memcpy: symbol!("hipMemcpy"),
            memset: symbol!("hipMemset"),
            module_load_data: symbol!("hipModuleLoadData"),
            module_unload: symbol!("hipModuleUnload"),
            module_get_function: symbol!("hipModuleGetFunction"),
            module_launch_kernel: symbol!("hipModuleLaunchKernel"),
            device_synchronize: symbol!("hipDeviceSynchronize"),
            stream_create: symbol!("hipStreamCreate"),
            stream_destroy: symbol!("hipStreamDestroy"),
            stream_synchronize: symbol!("hipStreamSynchronize"),
            event_create: symbol!("hipEventCreate"),
            event_destroy: symbol!("hipEventDestroy"),
            event_record: symbol!("hipEventRecord"),
            event_synchronize: symbol!("hipEventSynchronize"),
            event_elapsed_time: symbol!("hipEventElapsedTime"),
            _library: library,
        })
    }

    /// `Ok` for success, else an error saying what failed.
    fn check(&self, status: Status, what: &str) -> Result<(), RunError> {
        if status == HIP_SUCCESS {
            return Ok(());
        }
        // SAFETY: hipGetErrorString returns a static string for any status.
        let text = unsafe { (self.get_error_string)(status) };
        let text = if text.is_null() {
            format!("error {status}")
        } else {
            // SAFETY: a non-null result is a NUL-terminated static string.
            unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
        };
        Err(RunError::launch(format!("HIP failed to {what}: {text}")))
    }
}

/// A HIP device.
pub struct HipDevice {
    api: Arc<Api>,
    ordinal: c_int,
    pub(crate) common: Common,
}

pub struct HipBuffer {
    api: Arc<Api>,
    ordinal: c_int,
    /// The address kernels use.
    pointer: usize,
    /// Bytes allocated (at least one).
    len: usize,
    kind: MemoryKind,
    /// For pinned memory, the host address `hipHostFree` takes.
    host: usize,
}

impl HipBuffer {
    pub(crate) fn address(&mut self) -> u64 {
        self.pointer as u64
    }
}

impl Drop for HipBuffer {
    fn drop(&mut self) {
        // SAFETY: the allocation was made on this device by `alloc` with
        // the function that matches its kind, and is freed once.
        unsafe {
            (self.api.set_device)(self.ordinal);
            match self.kind {
                MemoryKind::Device | MemoryKind::Managed => (self.api.free)(self.pointer as Handle),
                MemoryKind::Pinned => (self.api.host_free)(self.host as Handle),
            };
        }
    }
}

pub struct HipModule {
    inner: Arc<ModuleHandle>,
}

struct ModuleHandle {
    api: Arc<Api>,
    ordinal: c_int,
    handle: usize,
}

impl Drop for ModuleHandle {
    fn drop(&mut self) {
        // SAFETY: `handle` came from hipModuleLoadData and is unloaded once,
        // after every kernel taken from it is dropped (they hold the Arc).
        unsafe {
            (self.api.set_device)(self.ordinal);
            (self.api.module_unload)(self.handle as Handle);
        }
    }
}

#[derive(Clone)]
pub struct HipKernel {
    _module: Arc<ModuleHandle>,
    function: usize,
}

pub struct HipQueue {
    api: Arc<Api>,
    handle: usize,
}

impl Drop for HipQueue {
    fn drop(&mut self) {
        // SAFETY: a stream created by hipStreamCreate, destroyed once.
        unsafe { (self.api.stream_destroy)(self.handle as Handle) };
    }
}

pub struct HipMarker {
    api: Arc<Api>,
    handle: usize,
}

impl Drop for HipMarker {
    fn drop(&mut self) {
        // SAFETY: an event created by hipEventCreate, destroyed once.
        unsafe { (self.api.event_destroy)(self.handle as Handle) };
    }
}

impl HipDevice {
    /// Opens device `ordinal`, or says why it cannot (E1001).
    pub fn open(ordinal: usize) -> Result<HipDevice, RunError> {
        let api = Arc::new(Api::load()?);
        let unavailable =
            |e: RunError| RunError::device_unavailable(format!("cannot use HIP device {ordinal}: {}", e.message));
        // SAFETY: plain HIP runtime calls with valid out-pointers.
        unsafe {
            api.check((api.init)(0), "initialize").map_err(unavailable)?;
            let mut count: c_int = 0;
            api.check((api.get_device_count)(&mut count), "count the devices")
                .map_err(unavailable)?;
            if ordinal >= count.max(0) as usize {
                return Err(RunError::device_unavailable(format!(
                    "cannot use HIP device {ordinal}: the machine has {count} HIP device(s)"
                )));
            }
            let ordinal = ordinal as c_int;
            api.check((api.set_device)(ordinal), "select the device")
                .map_err(unavailable)?;
            Ok(HipDevice {
                api,
                ordinal,
                common: Common::default(),
            })
        }
    }

    fn current(&self) -> Result<(), RunError> {
        // SAFETY: selecting a device that `open` checked exists.
        self.api
            .check(unsafe { (self.api.set_device)(self.ordinal) }, "select the device")
    }

    pub fn name(&self) -> String {
        let mut buf = [0 as c_char; 256];
        // SAFETY: the buffer is 256 bytes, as passed.
        let status = unsafe { (self.api.device_get_name)(buf.as_mut_ptr(), 256, self.ordinal) };
        if status != HIP_SUCCESS {
            return format!("hip:{}", self.ordinal);
        }
        buf[255] = 0;
        // SAFETY: NUL-terminated within the buffer (set above).
        let name = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned();
        format!("hip:{} ({name})", self.ordinal)
    }

    /// Ok where the device has memory of `kind`, else E1001. HIP's
    /// attribute numbers differ between ROCm releases, so a one-byte
    /// allocation of the kind is the test.
    pub(crate) fn supports(&self, kind: MemoryKind) -> Result<(), RunError> {
        self.alloc(1, kind).map(drop).map_err(|e| {
            RunError::device_unavailable(format!("{} has no {}: {}", self.name(), kind.describe(), e.message))
                .with_help("allocate device memory with `--memory device`")
        })
    }

    /// `len` zeroed bytes of `kind` (at least one byte).
    pub(crate) fn alloc(&self, len: usize, kind: MemoryKind) -> Result<HipBuffer, RunError> {
        self.current()?;
        let len = len.max(1);
        let mut pointer: Handle = std::ptr::null_mut();
        let mut host: Handle = std::ptr::null_mut();
        // SAFETY: valid out-pointers; each allocation is owned by the buffer,
        // which frees it with the matching function.
        unsafe {
            match kind {
                MemoryKind::Device => self
                    .api
                    .check((self.api.malloc)(&mut pointer, len), "allocate device memory")?,
                MemoryKind::Managed => self.api.check(
                    (self.api.malloc_managed)(&mut pointer, len, MEM_ATTACH_GLOBAL),
                    "allocate managed memory",
                )?,
                MemoryKind::Pinned => {
                    self.api.check(
                        (self.api.host_malloc)(&mut host, len, HOST_MALLOC_MAPPED),
                        "allocate pinned host memory",
                    )?;
                    let mapped = self.api.check(
                        (self.api.host_get_device_pointer)(&mut pointer, host, 0),
                        "map pinned host memory",
                    );
                    if let Err(e) = mapped {
                        (self.api.host_free)(host);
                        return Err(e);
                    }
                }
            }
        }
        let mut buffer = HipBuffer {
            api: self.api.clone(),
            ordinal: self.ordinal,
            pointer: pointer as usize,
            len,
            kind,
            host: host as usize,
        };
        self.memset(&mut buffer, 0)?;
        Ok(buffer)
    }

    pub(crate) fn upload(&self, dst: &mut HipBuffer, src: &[u8]) -> Result<(), RunError> {
        self.current()?;
        // SAFETY: `dst` holds at least `src.len()` bytes (checked by Device).
        let status =
            unsafe { (self.api.memcpy)(dst.pointer as Handle, src.as_ptr().cast(), src.len(), HOST_TO_DEVICE) };
        self.api.check(status, "copy to the device")
    }

    pub(crate) fn download(&self, src: &HipBuffer, dst: &mut [u8]) -> Result<(), RunError> {
        self.current()?;
        // SAFETY: `src` holds at least `dst.len()` bytes (checked by Device);
        // hipMemcpy waits for the device's work.
        let status = unsafe {
            (self.api.memcpy)(
                dst.as_mut_ptr().cast(),
                src.pointer as *const c_void,
                dst.len(),
                DEVICE_TO_HOST,
            )
        };
        self.api.check(status, "copy from the device")
    }

    pub(crate) fn copy(&self, dst: &mut HipBuffer, src: &HipBuffer, len: usize) -> Result<(), RunError> {
        self.current()?;
        // SAFETY: both are live allocations of at least `len` bytes (checked
        // by Device).
        let status = unsafe {
            (self.api.memcpy)(
                dst.pointer as Handle,
                src.pointer as *const c_void,
                len,
                DEVICE_TO_DEVICE,
            )
        };
        self.api.check(status, "copy on the device")
    }

    pub(crate) fn memset(&self, dst: &mut HipBuffer, byte: u8) -> Result<(), RunError> {
        self.current()?;
        // SAFETY: `pointer` is a live allocation of `len` bytes.
        let status = unsafe { (self.api.memset)(dst.pointer as Handle, byte as c_int, dst.len) };
        self.api.check(status, "set memory")
    }

    pub(crate) fn load(&self, image: &[u8]) -> Result<HipModule, RunError> {
        self.current()?;
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: `image` is a code object in memory that outlives the call.
        let status = unsafe { (self.api.module_load_data)(&mut handle, image.as_ptr().cast()) };
        self.api.check(status, "load the code object")?;
        Ok(HipModule {
            inner: Arc::new(ModuleHandle {
                api: self.api.clone(),
                ordinal: self.ordinal,
                handle: handle as usize,
            }),
        })
    }

    /// # Safety
    /// As [`crate::Device::launch`].
    pub(crate) unsafe fn launch(
        &self,
        kernel: &HipKernel,
        config: &LaunchConfig,
        params: &mut [*mut c_void],
        queue: Option<&HipQueue>,
    ) -> Result<(), RunError> {
        self.current()?;
        let shared = c_uint::try_from(config.shared_bytes)
            .map_err(|_| RunError::launch(format!("{} bytes of shared memory is too many", config.shared_bytes)))?;
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.block;
        let stream = queue.map_or(std::ptr::null_mut(), |q| q.handle as Handle);
        // SAFETY: the caller guarantees that `params` matches the kernel.
        let status = unsafe {
            (self.api.module_launch_kernel)(
                kernel.function as Handle,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                shared,
                stream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        self.api.check(status, "launch the kernel")
    }

    pub(crate) fn synchronize(&self) -> Result<(), RunError> {
        self.current()?;
        // SAFETY: a plain runtime call.
        self.api
            .check(unsafe { (self.api.device_synchronize)() }, "run the kernel")
    }

    pub(crate) fn stream(&self) -> Result<HipQueue, RunError> {
        self.current()?;
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        self.api
            .check(unsafe { (self.api.stream_create)(&mut handle) }, "create a stream")?;
        Ok(HipQueue {
            api: self.api.clone(),
            handle: handle as usize,
        })
    }

    pub(crate) fn synchronize_stream(&self, queue: &HipQueue) -> Result<(), RunError> {
        self.current()?;
        // SAFETY: a live stream.
        self.api.check(
            unsafe { (self.api.stream_synchronize)(queue.handle as Handle) },
            "wait for a stream",
        )
    }

    pub(crate) fn event(&self) -> Result<HipMarker, RunError> {
        self.current()?;
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        self.api
            .check(unsafe { (self.api.event_create)(&mut handle) }, "create an event")?;
        Ok(HipMarker {
            api: self.api.clone(),
            handle: handle as usize,
        })
    }

    pub(crate) fn record(&self, event: &HipMarker, queue: Option<&HipQueue>) -> Result<(), RunError> {
        self.current()?;
        let stream = queue.map_or(std::ptr::null_mut(), |q| q.handle as Handle);
        // SAFETY: a live event and stream (null is the default stream).
        self.api.check(
            unsafe { (self.api.event_record)(event.handle as Handle, stream) },
            "record an event",
        )
    }

    pub(crate) fn elapsed_ms(&self, start: &HipMarker, end: &HipMarker) -> Result<f32, RunError> {
        self.current()?;
        let mut ms = 0f32;
        // SAFETY: live events and a valid out-pointer.
        unsafe {
            self.api
                .check((self.api.event_synchronize)(end.handle as Handle), "wait for an event")?;
            self.api.check(
                (self.api.event_elapsed_time)(&mut ms, start.handle as Handle, end.handle as Handle),
                "time two events",
            )?;
        }
        Ok(ms)
    }
}

impl HipModule {
    pub(crate) fn kernel(&self, name: &str) -> Result<HipKernel, RunError> {
        let c_name = CString::new(name).map_err(|_| RunError::launch("a kernel name contains a NUL byte"))?;
        let api = &self.inner.api;
        // SAFETY: selecting the module's device.
        api.check(unsafe { (api.set_device)(self.inner.ordinal) }, "select the device")?;
        let mut function: Handle = std::ptr::null_mut();
        // SAFETY: a live module, a NUL-terminated name, a valid out-pointer.
        let status = unsafe { (api.module_get_function)(&mut function, self.inner.handle as Handle, c_name.as_ptr()) };
        api.check(status, &format!("find the kernel `{name}`"))?;
        Ok(HipKernel {
            _module: self.inner.clone(),
            function: function as usize,
        })
    }
}
