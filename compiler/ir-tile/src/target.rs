//! The compilation targets a module names in its `target` attribute, what
//! each provides, and how a module says it is at the Target layer.

use tessera_ir::{Attr, Module, OpId, ScalarType};

/// A module's `target` attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    Sm80,
    Sm90a,
    Gfx90a,
    Gfx942,
    Cpu,
}

/// The family of a target: which of the Target IR dialects it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    Nvptx,
    Amdgpu,
    Cpu,
}

impl Family {
    /// The dialect of the family's ops.
    pub fn dialect(self) -> &'static str {
        match self {
            Family::Nvptx => "nvptx",
            Family::Amdgpu => "amdgpu",
            Family::Cpu => "cpu",
        }
    }

    /// The family whose dialect is `name`.
    pub fn of_dialect(name: &str) -> Option<Family> {
        match name {
            "nvptx" => Some(Family::Nvptx),
            "amdgpu" => Some(Family::Amdgpu),
            "cpu" => Some(Family::Cpu),
            _ => None,
        }
    }

    /// The targets of the family, for messages (`sm_80 or sm_90a`).
    pub fn targets(self) -> &'static str {
        match self {
            Family::Nvptx => "sm_80 or sm_90a",
            Family::Amdgpu => "gfx90a or gfx942",
            Family::Cpu => "the cpu target",
        }
    }
}

/// The module attribute naming the target.
pub const TARGET_ATTR: &str = "target";
/// The module attribute naming the layer; `"target"` once
/// `lower-tile-to-target` ran.
pub const LAYER_ATTR: &str = "layer";
/// The value of [`LAYER_ATTR`] at the Target layer.
pub const TARGET_LAYER: &str = "target";

impl Target {
    pub const ALL: [Target; 5] = [Target::Sm80, Target::Sm90a, Target::Gfx90a, Target::Gfx942, Target::Cpu];

    pub fn name(self) -> &'static str {
        match self {
            Target::Sm80 => "sm_80",
            Target::Sm90a => "sm_90a",
            Target::Gfx90a => "gfx90a",
            Target::Gfx942 => "gfx942",
            Target::Cpu => "cpu",
        }
    }

    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The target a module names, when it names a known one.
    pub fn of_module(m: &Module) -> Option<Target> {
        Target::from_name(m.attrs.get(TARGET_ATTR)?.as_str()?)
    }

    pub fn family(self) -> Family {
        match self {
            Target::Sm80 | Target::Sm90a => Family::Nvptx,
            Target::Gfx90a | Target::Gfx942 => Family::Amdgpu,
            Target::Cpu => Family::Cpu,
        }
    }

    /// The shapes `[m, n, k]` of the matrix instruction (`mma.sync` on
    /// NVIDIA GPUs, MFMA on AMD's) that a product of `elem` operands into
    /// `acc` may take on the target, the preferred first; none where it
    /// runs on the CUDA cores or the CPU. `lower-tile-to-target` picks the
    /// first that tiles the product, and `fuse` sizes tiles by whether
    /// there is one; `wgmma` on sm_90a takes a subset of the same types.
    pub fn matrix_instructions(self, elem: ScalarType, acc: ScalarType) -> &'static [[i64; 3]] {
        let fp16 = matches!(elem, ScalarType::F16 | ScalarType::BF16);
        match self.family() {
            Family::Nvptx => match elem {
                _ if fp16 && (acc == ScalarType::F32 || acc == ScalarType::F16 && elem == ScalarType::F16) => {
                    &[[16, 8, 16]]
                }
                ScalarType::I8 | ScalarType::U8 if acc == ScalarType::I32 => &[[16, 8, 32]],
                _ if elem.is_fp8() && self == Target::Sm90a && acc == ScalarType::F32 => &[[16, 8, 32]],
                _ => &[],
            },
            Family::Amdgpu => match elem {
                _ if fp16 && acc == ScalarType::F32 => &[[32, 32, 8], [16, 16, 16]],
                ScalarType::F32 if acc == ScalarType::F32 => &[[32, 32, 2], [16, 16, 4]],
                _ => &[],
            },
            Family::Cpu => &[],
        }
    }

    /// Whether the code generator computes a product of `a` by `b` into
    /// `acc` on tensor cores (or matrix cores) on the target, when its tile
    /// shape lets it: 16-bit floats of one kind into f32 on every GPU
    /// (`mma.sync`, `wgmma`, `v_mfma`), fp8 into f32 on sm_90a (`wgmma`).
    /// Every other product, even one the Target IR holds as a matrix
    /// instruction ([`Target::matrix_instructions`]), is computed in scalar
    /// FMAs; `fuse` sizes a product's tile by this.
    pub fn computes_on_matrix_units(self, a: ScalarType, b: ScalarType, acc: ScalarType) -> bool {
        match self {
            Target::Cpu => false,
            Target::Sm90a if a.is_fp8() && b.is_fp8() => acc == ScalarType::F32,
            _ => sixteen_bit_into_f32(a, b, acc),
        }
    }

    /// Shared memory (LDS) one block may use, in bytes (the same limits as
    /// the source-level checker's).
    pub fn max_shared_bytes(self) -> u64 {
        match self {
            Target::Sm80 => 163 << 10,
            Target::Sm90a => 227 << 10,
            Target::Gfx90a | Target::Gfx942 => 64 << 10,
            Target::Cpu => 1 << 30,
        }
    }

    /// Shared memory per multiprocessor (A100, H100), and what the
    /// system reserves of it for each resident block; `None` off NVIDIA.
    pub fn shared_per_sm(self) -> Option<(u64, u64)> {
        match self {
            Target::Sm80 => Some((164 << 10, 1 << 10)),
            Target::Sm90a => Some((228 << 10, 1 << 10)),
            _ => None,
        }
    }

    /// Whether a block with `shared` bytes of shared memory leaves no room
    /// for a second block on a multiprocessor.
    pub fn one_block_per_sm(self, shared: u64) -> bool {
        self.shared_per_sm()
            .is_some_and(|(per_sm, reserved)| shared > 0 && 2 * (shared + reserved) > per_sm)
    }

    /// The threads of a warp (a wavefront on AMD GPUs); the CPU backend
    /// emulates warps of 32.
    pub fn warp_size(self) -> i64 {
        match self.family() {
            Family::Amdgpu => 64,
            Family::Nvptx | Family::Cpu => 32,
        }
    }

    /// The most registers one thread may use (`max_registers`), when the
    /// target has such a limit.
    pub fn max_registers(self) -> Option<i64> {
        match self.family() {
            Family::Nvptx => Some(255),
            Family::Amdgpu => Some(512),
            Family::Cpu => None,
        }
    }

    /// The `max_registers` a kernel of `threads` threads gets unless it
    /// sets one: what lets one block of that size fit on a multiprocessor
    /// (64 K registers per SM on NVIDIA; 512 VGPRs per lane of a SIMD, four
    /// SIMDs per CU on AMD), rounded down to a multiple of 8.
    pub fn default_max_registers(self, threads: i64) -> Option<i64> {
        let threads = threads.max(1);
        match self.family() {
            Family::Nvptx => Some(((65536 / threads) / 8 * 8).clamp(8, 255)),
            Family::Amdgpu => {
                let waves = (threads + 63) / 64;
                let per_simd = (waves + 3) / 4;
                Some(((512 / per_simd) / 8 * 8).clamp(8, 512))
            }
            Family::Cpu => None,
        }
    }
}

/// Whether the module is at the Target layer: its attribute
/// `layer = "target"` (set by `lower-tile-to-target`). There, the
/// target-dependent `tile` ops must be gone and kernels carry their launch
/// configuration.
pub fn is_target_layer(m: &Module) -> bool {
    matches!(m.attrs.get(LAYER_ATTR), Some(Attr::Str(s)) if s == TARGET_LAYER)
}

/// Whether the function `func` is at the Target layer: the module is, or
/// the function says `layer = "target"` itself.
pub fn func_at_target_layer(m: &Module, func: OpId) -> bool {
    is_target_layer(m) || matches!(m.attr(func, LAYER_ATTR), Some(Attr::Str(s)) if s == TARGET_LAYER)
}

/// A product of 16-bit floats of one kind (f16 or bf16) into f32: what
/// `mma.sync` and `v_mfma` compute on matrix units in the code generator.
pub fn sixteen_bit_into_f32(a: ScalarType, b: ScalarType, acc: ScalarType) -> bool {
    matches!(a, ScalarType::BF16 | ScalarType::F16) && a == b && acc == ScalarType::F32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_defaults_fit_the_limits() {
        for t in Target::ALL {
            assert_eq!(Target::from_name(t.name()), Some(t));
            for threads in [1, 32, 64, 128, 256, 512, 1024] {
                if let (Some(d), Some(max)) = (t.default_max_registers(threads), t.max_registers()) {
                    assert!(d <= max && d >= 8 && d % 8 == 0 || d == 255, "{t:?} {threads} {d}");
                }
            }
        }
        assert_eq!(Target::Sm80.default_max_registers(1024), Some(64));
        assert_eq!(Target::Sm80.default_max_registers(256), Some(255));
        assert_eq!(Target::Gfx942.default_max_registers(256), Some(512));
        assert_eq!(Target::Gfx942.default_max_registers(1024), Some(128));
        assert_eq!(Target::from_name("sm_70"), None);
    }
}
