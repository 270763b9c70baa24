//! What the re-check and language-server benchmarks share: the generated
//! file they edit, and their statistics.

use std::time::Duration;

/// A file of `functions` functions of about 10 lines: kernels (decorated
/// `kernel_decorator`) with shared memory and barriers, and operator-level
/// functions with shapes, `where` constraints and calls to each other. The
/// constant in function `edited` is `variant`.
pub fn source(functions: usize, edited: usize, variant: u32, kernel_decorator: &str) -> String {
    let mut text = String::from("from tessera import op\n\n");
    for i in 0..functions {
        let c = if i == edited { variant } else { 3 };
        if i % 4 == 0 {
            text.push_str(&format!(
                "{kernel_decorator}\ndef k{i}(x: f32[N], out: mut f32[N]) where N % 128 == 0:\n    \
                 i = launch.thread_id()\n    smem = tshared.alloc[f32](128)\n    if i < N:\n        \
                 smem[i % 128] = x[i] * {c}.0\n    tbarrier()\n    if i < N:\n        out[i] = smem[i % 128]\n\n"
            ));
        } else {
            let call = if i % 4 == 1 {
                String::new()
            } else {
                format!("    w = g{}(y, b)\n", i - 1)
            };
            text.push_str(&format!(
                "def g{i}(a: f32[M, K], b: f32[K, N]) -> f32[M, N] where K % 8 == 0, M <= 8192:\n    \
                 y = op.matmul(a, b)\n    z = y * {c}.0 + 1.0\n{call}    s = op.sum(z, axis=0)\n    \
                 t = op.relu(z)\n    u = t - z\n    return u\n\n"
            ));
        }
    }
    text
}

/// The `p`-quantile (0 to 1) of `sorted`, the nearest sample.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// `d` in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
