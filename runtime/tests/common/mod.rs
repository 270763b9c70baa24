//! What the host-code tests share: the CPU kernels of the examples, written
//! in Rust against the CPU ABI as the code generator would emit them, and a
//! fake executor that launches them (and runs one operator function).

#![allow(dead_code)]

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

use tessera_base::FileId;
use tessera_diagnostics::Diagnostic;
use tessera_runtime::cpu::{
    tessera_cpu_barrier, tessera_cpu_shfl, CpuKernel, CpuKernelFn, TesseraCpuCtx, Threading, SHFL_DOWN,
};
use tessera_runtime::device::{Kernel, KernelArgs};
use tessera_runtime::host::{self, Call, Executor, Launch, Program, Role, RunOptions, TensorValue, Value};
use tessera_runtime::{DType, Device, RunError, Tensor};
use tessera_syntax::ast::{ExprKind, FnDef};

unsafe fn buffer<T>(args: *mut *mut c_void, i: usize) -> *mut T {
    unsafe { *(*args.add(i) as *const *mut T) }
}

unsafe fn scalar<T: Copy>(args: *mut *mut c_void, i: usize) -> T {
    unsafe { *(*args.add(i) as *const T) }
}

/// `saxpy(a: f32, X: f32[N], Y: f32[N], Out: mut f32[N])`, then `N`.
unsafe extern "C" fn saxpy(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        let a = scalar::<f32>(args, 0);
        let (x, y, out) = (buffer::<f32>(args, 1), buffer::<f32>(args, 2), buffer::<f32>(args, 3));
        let n = scalar::<i64>(args, 4) as usize;
        let c = &*ctx;
        let i = c.block_id[0] as usize * c.block_dim[0] as usize + c.thread_id[0] as usize;
        if i < n {
            *out.add(i) = a * *x.add(i) + *y.add(i);
        }
    }
}

/// `sum_reduce(x: f32[n], out: mut f32[grid_groups])` of seed 002: every
/// group sums `x` with a stride of its size, reduces in shared memory, and
/// tile 0 adds the total into `out[group]` (a CAS loop: the atomic add).
unsafe extern "C" fn sum_reduce(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        let (x, out) = (buffer::<f32>(args, 0), buffer::<f32>(args, 1));
        let n = scalar::<i64>(args, 2) as usize;
        let c = &*ctx;
        let smem = c.shared as *mut f32;
        let i = c.thread_id[0] as usize;
        let mut acc = 0.0f32;
        let mut k = i;
        while k < n {
            acc += *x.add(k);
            k += c.block_dim[0] as usize;
        }
        *smem.add(i) = acc;
        tessera_cpu_barrier(ctx, std::ptr::null());
        let mut s = 64;
        while s > 0 {
            if i < s {
                *smem.add(i) += *smem.add(i + s);
            }
            tessera_cpu_barrier(ctx, std::ptr::null());
            s /= 2;
        }
        if i == 0 {
            let slot = &*(out.add(c.block_id[0] as usize) as *const AtomicU32);
            let mut old = slot.load(Ordering::Relaxed);
            loop {
                let new = (f32::from_bits(old) + *smem).to_bits();
                match slot.compare_exchange(old, new, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => break,
                    Err(now) => old = now,
                }
            }
        }
    }
}

/// `warp_reduce_sum(X: f32[N], Out: mut f32[W])` of seed 003.
unsafe extern "C" fn warp_reduce_sum(args: *mut *mut c_void, ctx: *mut TesseraCpuCtx) {
    unsafe {
        let (x, out) = (buffer::<f32>(args, 0), buffer::<f32>(args, 1));
        let c = &*ctx;
        let tid = c.block_id[0] as usize * c.block_dim[0] as usize + c.thread_id[0] as usize;
        let mut v = *x.add(tid);
        for offset in [16, 8, 4, 2, 1] {
            v += f32::from_bits(tessera_cpu_shfl(
                ctx,
                std::ptr::null(),
                v.to_bits(),
                offset,
                SHFL_DOWN,
                32,
            ));
        }
        if c.thread_id[0].is_multiple_of(32) {
            *out.add(tid / 32) = v;
        }
    }
}

/// Launches the example kernels on the device it is given, and runs the
/// operator function `scale(x: f32[N], a: f32) -> f32[N]`.
#[derive(Default)]
pub struct FakeExecutor {
    pub launches: Vec<String>,
}

fn tensor_arg(device: &Device, v: &Value, args: &mut KernelArgs) -> Result<(), RunError> {
    match v {
        Value::Tensor(t) => {
            args.push_address(t.kernel_address(device)?);
            Ok(())
        }
        Value::Float(f) => {
            args.push_f32(*f as f32);
            Ok(())
        }
        Value::Int(i) => {
            args.push_f32(*i as f32);
            Ok(())
        }
        v => Err(RunError::launch(format!("unexpected argument {}", v.describe()))),
    }
}

impl Executor for FakeExecutor {
    fn launch(&mut self, device: &Device, launch: &Launch<'_>) -> Result<String, RunError> {
        self.launches.push(launch.kernel.to_string());
        let (entry, threading, shared): (CpuKernelFn, Threading, usize) = match launch.kernel {
            "saxpy" => (saxpy, Threading::Independent, 0),
            "sum_reduce" => (sum_reduce, Threading::Synchronized, 128 * 4),
            "warp_reduce_sum" => (warp_reduce_sum, Threading::Synchronized, 0),
            k => return Err(RunError::launch(format!("the fake executor has no kernel `{k}`"))),
        };
        let mut args = KernelArgs::new();
        for v in launch.args {
            tensor_arg(device, v, &mut args)?;
        }
        // The trailing `index` parameters: the dims the first tensor binds.
        if let Some((_, n)) = launch.dims.first() {
            args.push_i64(*n);
        }
        let mut config = launch.config;
        config.shared_bytes = shared;
        // SAFETY: the arguments follow each kernel's parameters, and the
        // interpreter checked the tensors' shapes against them.
        unsafe { device.launch(&Kernel::Cpu(CpuKernel { entry, threading }), &config, &mut args, None)? };
        Ok(String::new())
    }

    fn call(&mut self, device: &Device, call: &Call<'_>) -> Result<Value, RunError> {
        match (call.function, call.args) {
            ("scale", [Value::Tensor(x), Value::Float(a)]) => {
                let host = x.host(device)?;
                let v: Vec<f32> = host
                    .as_slice::<f32>()
                    .unwrap_or(&[])
                    .iter()
                    .map(|v| v * *a as f32)
                    .collect();
                Ok(Value::Tensor(TensorValue::new(Tensor::from_slice(host.shape(), &v)?)))
            }
            (f, _) => Err(RunError::launch(format!("the fake executor cannot call `{f}`"))),
        }
    }
}

/// Kernels by their decorator, the named functions as operator functions,
/// everything else host code.
pub fn roles(operators: &'static [&'static str]) -> impl Fn(&FnDef) -> Role {
    move |def| {
        let kernel = def
            .decorators
            .iter()
            .any(|d| matches!(d.clauses.first().map(|c| &c.kind), Some(ExprKind::Name(n)) if n == "kernel"));
        if kernel {
            Role::Kernel
        } else if operators.contains(&def.name.name.as_str()) {
            Role::Operator
        } else {
            Role::Host
        }
    }
}

/// Runs `main` of `text` on the CPU: what it printed, or its diagnostics.
pub fn run(text: &str, operators: &'static [&'static str]) -> Result<String, Vec<Diagnostic>> {
    let parse = tessera_syntax::parse(FileId(0), text);
    assert!(parse.diagnostics.is_empty(), "{:?}", parse.diagnostics);
    let program = Program::new(FileId(0), text, &parse.module, roles(operators));
    let device = Device::open(tessera_runtime::DeviceKind::Cpu).unwrap();
    let mut out = Vec::new();
    let mut executor = FakeExecutor::default();
    host::run_main(
        &program,
        &mut executor,
        &device,
        RunOptions {
            out: &mut out,
            argv: vec![],
        },
    )?;
    Ok(String::from_utf8(out).unwrap())
}

/// The one diagnostic a failing program reports.
pub fn error(text: &str, operators: &'static [&'static str]) -> Diagnostic {
    let mut d = run(text, operators).expect_err("the program should fail");
    assert_eq!(d.len(), 1, "{d:?}");
    d.remove(0)
}

/// The text a diagnostic's primary label points at.
pub fn primary_text<'t>(d: &Diagnostic, text: &'t str) -> &'t str {
    let s = d.primary_span().expect("a located diagnostic").span;
    &text[s.start as usize..s.end as usize]
}

pub fn uniform(n: usize, seed: u64) -> Tensor {
    tessera_runtime::rng::fill(
        DType::F32,
        &[n],
        tessera_runtime::rng::host_key(seed),
        tessera_runtime::rng::Distribution::Uniform,
    )
    .unwrap()
}
