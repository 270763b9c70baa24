//! What `fuse` knows about each target: default tile shapes, pipeline
//! stages, threads per block and the shared-memory limit
//! (`spec/ir-schedule.md`, "Default tile shapes").

use tessera_ir::ScalarType;

/// One compilation target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// The module's `target` attribute.
    pub name: &'static str,
    /// Shared memory one block may use, in bytes (`None`: no limit, the CPU).
    pub shared_limit: Option<i64>,
    /// Pipeline stages of a matmul's K loop.
    pub matmul_stages: i64,
    /// Threads per block of a matmul kernel.
    pub matmul_threads: i64,
    /// Whether a matmul kernel asks for a producer warpgroup of its own
    /// (`warp_specialize`, `spec/ir-schedule.md`).
    pub warp_specialize: bool,
    /// Whether a matmul kernel may walk its tiles on a persistent grid
    /// (`spec/ir-schedule.md`, "Persistent grids"), and whether it does by
    /// default; `None` where the runtime cannot size one (HIP has no
    /// portable multiprocessor count).
    pub persistent: Option<bool>,
}

pub const TARGETS: [Target; 5] = [
    Target {
        name: "sm_90a",
        shared_limit: Some(227 * 1024),
        matmul_stages: 4,
        matmul_threads: 256,
        warp_specialize: true,
        persistent: Some(true),
    },
    Target {
        name: "sm_80",
        shared_limit: Some(163 * 1024),
        matmul_stages: 3,
        matmul_threads: 256,
        warp_specialize: false,
        persistent: Some(false),
    },
    Target {
        name: "gfx942",
        shared_limit: Some(64 * 1024),
        matmul_stages: 2,
        matmul_threads: 256,
        warp_specialize: false,
        persistent: None,
    },
    Target {
        name: "gfx90a",
        shared_limit: Some(64 * 1024),
        matmul_stages: 2,
        matmul_threads: 256,
        warp_specialize: false,
        persistent: None,
    },
    Target {
        name: "cpu",
        shared_limit: None,
        matmul_stages: 2,
        matmul_threads: 64,
        warp_specialize: false,
        persistent: Some(false),
    },
];

impl Target {
    pub fn by_name(name: &str) -> Option<Target> {
        TARGETS.into_iter().find(|t| t.name == name)
    }

    /// The default `[BM, BN, BK]` of a matmul whose operands are `elem`.
    pub fn matmul_tile(&self, elem: ScalarType) -> [i64; 3] {
        match self.name {
            // K spans 128 bytes: the tiles take the 128-byte swizzle
            // wgmma reads in place.
            "sm_90a" if elem.bits() == 8 && elem.is_float() => [128, 256, 128],
            "sm_90a" if elem.bits() <= 16 => [128, 256, 64],
            "sm_90a" => [128, 128, 32],
            "cpu" => [64, 64, 64],
            "gfx90a" | "gfx942" if elem.bits() >= 32 => [128, 128, 16],
            _ => [128, 128, 32],
        }
    }

    /// The tile a matmul whose M is at most `max_m` is launched with
    /// instead of the default one, where a default tile taller than that
    /// would leave most multiprocessors idle: a 16-row product of 4096
    /// columns is 16 blocks of `[128, 256]` on sm_90a's 132
    /// multiprocessors, and 64 of `[64, 64]`. On sm_90a one consumer
    /// warpgroup (wgmma's M is 64 a warpgroup) and twice the default
    /// stages: 64 KiB of B in flight a block, half the default tile's, in
    /// four times the blocks. On the CPU a 16-row tile, which computes no
    /// masked rows of such a product. None where the default tile serves
    /// (gfx targets, f32, i8 on sm_90a, which wgmma does not take here).
    /// Not yet measured on a GPU.
    pub fn narrow_matmul(&self, elem: ScalarType) -> Option<NarrowMatmul> {
        let narrow = |max_m, tile, threads, stages| {
            Some(NarrowMatmul {
                max_m,
                tile,
                threads,
                stages,
            })
        };
        match self.name {
            "sm_90a" if elem.bits() == 8 && elem.is_float() => narrow(64, [64, 64, 128], 128, 8),
            "sm_90a" if elem.bits() <= 16 => narrow(64, [64, 64, 64], 128, 8),
            "sm_80" if elem.bits() <= 16 => narrow(64, [64, 64, 32], 128, 4),
            "cpu" => narrow(16, [16, 64, 64], self.matmul_threads, self.matmul_stages),
            _ => None,
        }
    }

    /// The default threads of an attention kernel whose widest head dim
    /// is `head`: on sm_90a with heads of at most 64, three warpgroups of
    /// 64 query rows each (FlashAttention-3's 192 × 128 tile), which
    /// `tessera tune` measured fastest of the eight configurations it
    /// offers (`bench/results/2026-11-27-h200-gpu-check.md`); the
    /// matmul's elsewhere.
    pub fn attention_threads(&self, head: i64) -> i64 {
        match self.name {
            "sm_90a" if head <= 64 => 384,
            _ => self.matmul_threads,
        }
    }

    /// The default `[BM, BN]` of an attention kernel of `threads` threads
    /// whose widest head dim is `head`: on sm_90a one 64-row block of
    /// queries per warpgroup, so that both products are `wgmma`s whose
    /// accumulators stay in registers (each warpgroup owns whole 64-row
    /// blocks), and 128 keys a step for heads of at most 64 and for two
    /// warpgroups (a head of 128 with three spills its accumulators: 64
    /// keys then); 64 × 64 elsewhere, 32 × 64 for heads wider than 128
    /// (a head of 256 spilled 120 bytes of its 64 × 256 f32 accumulator
    /// on sm_80). Measured on an H200
    /// (`bench/results/2026-11-27-h200-gpu-check-8f3c58d.md`): `[128,
    /// 128]` ran a head of 128 in 0.539 ms against 0.573 ms for `[128,
    /// 64]`, and `[192, 128]` a head of 64 fastest.
    pub fn attention_tile(&self, threads: i64, head: i64) -> [i64; 2] {
        match self.name {
            "sm_90a" if threads >= 128 && threads % 128 == 0 => [
                64 * (threads / 128),
                if head <= 64 || threads <= 256 { 128 } else { 64 },
            ],
            _ if head > 128 => [32, 64],
            _ => [64, 64],
        }
    }

    /// Whether `bytes` of shared memory fit in one block.
    pub fn fits_shared(&self, bytes: i64) -> bool {
        self.shared_limit.is_none_or(|limit| bytes <= limit)
    }
}

/// A matmul's tile for an M of at most `max_m` ([`Target::narrow_matmul`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NarrowMatmul {
    pub max_m: i64,
    pub tile: [i64; 3],
    pub threads: i64,
    pub stages: i64,
}

/// The names of the targets, for messages.
pub fn target_names() -> String {
    let names: Vec<String> = TARGETS.iter().map(|t| format!("\"{}\"", t.name)).collect();
    names.join(", ")
}

/// Bytes of `count` elements of `elem` (4-bit types pack two per byte).
pub fn bytes_of(elem: ScalarType, count: i64) -> i64 {
    (count * i64::from(elem.bits()) + 7) / 8
}

/// How a shared tile of `rows`×`cols` is laid out: a 128-byte swizzle on
/// NVIDIA GPUs when a row is a multiple of 128 bytes and the rows come in
/// eights (the swizzle's period), else rows padded
/// against bank conflicts by 8 elements, or by 16 bytes where 8 elements
/// are fewer (fp8), so that 16-byte copies (`cp.async`, vector loads) still
/// start every row on a 16-byte boundary; plain on the CPU.
pub fn shared_layout(target: &Target, rows: i64, cols: i64, elem: ScalarType) -> Option<(&'static str, i64)> {
    let row_bytes = bytes_of(elem, cols);
    match target.name {
        "cpu" => None,
        "sm_80" | "sm_90a" if row_bytes % 128 == 0 && rows % 8 == 0 => Some(("swizzle", 128)),
        _ => Some(("bank_pad", 8.max(128 / i64::from(elem.bits().max(1))))),
    }
}

/// Bytes of a `rows`×`cols` shared tile laid out as [`shared_layout`] says.
pub fn shared_tile_bytes(target: &Target, rows: i64, cols: i64, elem: ScalarType) -> i64 {
    let pad = match shared_layout(target, rows, cols, elem) {
        Some(("bank_pad", p)) => p,
        _ => 0,
    };
    bytes_of(elem, rows * (cols + pad))
}

/// Shared memory of a matmul kernel: `stages` buffers of an A tile
/// (BM×BK) and a B tile (BK×BN), plus a swizzle pattern's alignment when
/// they are swizzled. On sm_90a wgmma reads a 128-byte-swizzled A tile in
/// place, and B too when its elements are 16-bit; the code generator
/// copies any other operand into wgmma's core-matrix layout, after the
/// allocations (aligned to 128 bytes).
pub fn matmul_shared_bytes(target: &Target, tile: [i64; 3], stages: i64, elem: ScalarType) -> i64 {
    let [bm, bn, bk] = tile;
    let buffers = stages * (shared_tile_bytes(target, bm, bk, elem) + shared_tile_bytes(target, bk, bn, elem));
    let swizzled = |rows, cols| shared_layout(target, rows, cols, elem) == Some(("swizzle", 128));
    let (a_swizzled, b_swizzled) = (swizzled(bm, bk), swizzled(bk, bn));
    let alignment = if a_swizzled || b_swizzled { 1024 } else { 0 };
    let copied = match target.name {
        "sm_90a" => {
            let a = !(a_swizzled && bm % 64 == 0);
            let b = !(b_swizzled && bn % 64 == 0 && elem.bits() == 16);
            bytes_of(elem, i64::from(a) * bm * bk + i64::from(b) * bn * bk)
        }
        _ => 0,
    };
    let core_matrices = if copied > 0 { 128 + copied } else { 0 };
    buffers + alignment + core_matrices
}

/// Shared bytes of an attention kernel with tiles `[BM, BN]` and head dims
/// `d` (q, k) and `dv` (v): one q tile, and `stages` k tiles and v tiles
/// (the key loop's rings), laid out as [`shared_layout`] says.
pub fn attention_shared_bytes(
    target: &Target,
    [bm, bn]: [i64; 2],
    d: i64,
    dv: i64,
    stages: i64,
    elem: ScalarType,
) -> i64 {
    shared_tile_bytes(target, bm, d, elem)
        + stages * (shared_tile_bytes(target, bn, d, elem) + shared_tile_bytes(target, bn, dv, elem))
}

/// Columns of a row kernel (softmax, norm, reduce) processed per step:
/// a whole row of a constant length up to 1024, else chunks of 2048 (8 a
/// thread of 256: a walk has one chunk's loads in flight per thread, so
/// wider chunks keep more bytes in flight; on sm_90a the bf16 softmax
/// walk keeps 6 blocks of 256 threads × 16 bytes per multiprocessor at
/// 2048 columns, against 8 × 8 bytes at 1024).
pub fn row_chunk(row_len: Option<i64>) -> i64 {
    match row_len {
        Some(n) if (1..=1024).contains(&n) => n,
        _ => 2048,
    }
}

/// The bits of a column of a row kernel (softmax, norm, reduce) as it is
/// held: its input's, or 64 where it accumulates in a 64-bit type (the row
/// is held converted, two registers a column). Fusion halves a walk's
/// chunk for such columns and the row templates hold half as many in
/// registers: one rule, so the two agree.
pub fn column_bits(input: ScalarType, accumulate: ScalarType) -> u32 {
    if accumulate.bits() > 32 {
        input.bits().max(64)
    } else {
        input.bits()
    }
}

/// Threads per block of a row kernel that processes `chunk` columns a step.
pub fn row_threads(chunk: i64) -> i64 {
    if chunk <= 512 {
        128
    } else {
        256
    }
}

/// Threads per block (= elements per block) of an elementwise kernel.
pub const ELEMENTWISE_THREADS: i64 = 256;

#[cfg(test)]
mod tests {
    use super::*;

    /// The default tiles fit with at least two pipeline stages (`fuse`
    /// lowers the stages from the target's maximum until they fit).
    #[test]
    fn defaults_fit_their_targets() {
        for t in TARGETS {
            for elem in [ScalarType::BF16, ScalarType::F32, ScalarType::F8E4M3] {
                let tile = t.matmul_tile(elem);
                let fitting = (1..=t.matmul_stages)
                    .rev()
                    .find(|&s| t.fits_shared(matmul_shared_bytes(&t, tile, s, elem)));
                assert!(fitting.is_some_and(|s| s >= 2), "{} {elem:?}", t.name);
            }
        }
        let h100 = Target::by_name("sm_90a").unwrap();
        // Four stages of 128×64 and 64×256 bf16 tiles, swizzled (wgmma
        // reads them in place) and aligned to the swizzle's 1024 bytes.
        assert_eq!(
            matmul_shared_bytes(&h100, [128, 256, 64], 4, ScalarType::BF16),
            4 * 49_152 + 1024
        );
        assert!(!h100.fits_shared(matmul_shared_bytes(&h100, [128, 256, 64], 5, ScalarType::BF16)));
        // fp8 B (8-bit operands are K-major only) is copied into the
        // core-matrix layout; a 128-byte-wide fp8 A tile is read in place.
        assert_eq!(
            matmul_shared_bytes(&h100, [128, 128, 128], 2, ScalarType::F8E4M3),
            2 * 32_768 + 1024 + 128 + 16_384
        );
        let mi300 = Target::by_name("gfx942").unwrap();
        assert_eq!(shared_tile_bytes(&mi300, 128, 32, ScalarType::BF16), 128 * 40 * 2);
        // An fp8 row of 64 is padded by 16 bytes, not 8, so that each row
        // of a narrow kernel's B ring starts on a 16-byte cp.async chunk.
        assert_eq!(
            shared_layout(&h100, 128, 64, ScalarType::F8E4M3),
            Some(("bank_pad", 16))
        );
        // A swizzle's period is 8 rows: a 4-row tile (a matmul's B tile at
        // K = 4) is padded instead.
        assert_eq!(shared_layout(&h100, 64, 64, ScalarType::BF16), Some(("swizzle", 128)));
        assert_eq!(shared_layout(&h100, 4, 64, ScalarType::BF16), Some(("bank_pad", 8)));
        assert_eq!(shared_tile_bytes(&h100, 128, 64, ScalarType::F8E4M3), 128 * 80);
        assert_eq!(row_chunk(Some(100)), 100);
        assert_eq!(row_chunk(None), 2048);
    }
}
