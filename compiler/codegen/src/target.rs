//! What the emitter needs to know about each target: triple, CPU, data
//! layout, address spaces, and how kernels, thread ids, barriers, warps and
//! shared memory are spelled in LLVM IR.

use tessera_ir_tile::Target;

/// How a kernel is entered on a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abi {
    /// Parameters as LLVM parameters; a `kernel` annotation (NVPTX).
    Nvptx,
    /// Parameters as LLVM parameters; the `amdgpu_kernel` calling convention.
    Amdgpu,
    /// `void f(void** args, TesseraCpuCtx* ctx)`: see `spec/runtime.md`.
    Cpu,
}

/// The facts about one target.
#[derive(Clone, Copy, Debug)]
pub struct TargetInfo {
    pub target: Target,
    pub triple: &'static str,
    pub cpu: &'static str,
    pub features: &'static str,
    pub abi: Abi,
    /// Address space of global memory.
    pub global_as: u32,
    /// Address space of shared memory (LDS).
    pub shared_as: u32,
    /// Threads in a warp (wavefront).
    pub warp: u32,
    /// The most shared memory (bytes) one block may use.
    pub shared_limit: u64,
}

impl TargetInfo {
    pub fn of(target: Target) -> TargetInfo {
        match target {
            Target::Sm80 | Target::Sm90a => TargetInfo {
                target,
                triple: "nvptx64-nvidia-cuda",
                cpu: if target == Target::Sm80 { "sm_80" } else { "sm_90a" },
                // PTX 7.0 is the first for sm_80; sm_90a needs PTX 8.0, and
                // 8.3 for `fence.proxy.tensormap` (TMA maps in global memory).
                features: if target == Target::Sm80 { "+ptx70" } else { "+ptx83" },
                abi: Abi::Nvptx,
                global_as: 1,
                shared_as: 3,
                warp: 32,
                shared_limit: if target == Target::Sm80 { 163 * 1024 } else { 227 * 1024 },
            },
            Target::Gfx90a | Target::Gfx942 => TargetInfo {
                target,
                triple: "amdgcn-amd-amdhsa",
                cpu: if target == Target::Gfx90a { "gfx90a" } else { "gfx942" },
                features: "",
                abi: Abi::Amdgpu,
                global_as: 1,
                shared_as: 3,
                warp: 64,
                shared_limit: 64 * 1024,
            },
            Target::Cpu => TargetInfo {
                target,
                triple: "x86_64-unknown-linux-gnu",
                cpu: "x86-64-v2",
                // F16C converts between half and float in hardware (every
                // x86-64 CPU since 2012); without it LLVM calls compiler-rt.
                features: "+f16c",
                abi: Abi::Cpu,
                global_as: 0,
                shared_as: 0,
                warp: 32,
                shared_limit: 1 << 30,
            },
        }
    }

    /// `ptr addrspace(N)` (or `ptr` for address space 0).
    pub fn ptr(space: u32) -> String {
        if space == 0 {
            "ptr".to_string()
        } else {
            format!("ptr addrspace({space})")
        }
    }

    pub fn global_ptr(&self) -> String {
        TargetInfo::ptr(self.global_as)
    }

    pub fn shared_ptr(&self) -> String {
        TargetInfo::ptr(self.shared_as)
    }
}
