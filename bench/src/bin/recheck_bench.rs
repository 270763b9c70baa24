//! Re-check latency: after editing one function body of a 2 000-line file,
//! how long until its diagnostics are up to date again (the language
//! server's inner loop). The anchor, measured in the same run, is a cold
//! check of the same file in a fresh database.
//!
//! Run: `cargo run --release -p tessera-bench --bin recheck-bench`

use std::time::{Duration, Instant};

use tessera_driver::Database;

/// A file of `functions` realistic functions, about 10 lines each; the
/// function `edited` gets `variant` in its body.
fn source(functions: usize, edited: usize, variant: u32) -> String {
    let mut text = String::from("from tessera import op\n\n");
    for i in 0..functions {
        let c = if i == edited { variant } else { 3 };
        if i % 4 == 0 {
            text.push_str(&format!(
                "@kernel tile[(128,)] shared(4_KiB)\ndef k{i}(x: f32[N], out: mut f32[N]) where N % 128 == 0:\n    \
                 i = launch.thread_id()\n    smem = tshared.alloc[f32](128)\n    if i < N:\n        \
                 smem[i % 128] = x[i] * {c}.0\n    tbarrier()\n    if i < N:\n        out[i] = smem[i % 128]\n\n"
            ));
        } else {
            let callee = if i % 4 == 1 {
                String::new()
            } else {
                format!("    w = g{}(y, b)\n", i - 1)
            };
            text.push_str(&format!(
                "def g{i}(a: f32[M, K], b: f32[K, N]) -> f32[M, N] where K % 8 == 0, M <= 8192:\n    \
                 y = op.matmul(a, b)\n    z = y * {c}.0 + 1.0\n{callee}    s = op.sum(z, axis=0)\n    \
                 t = op.relu(z)\n    u = t - z\n    return u\n\n"
            ));
        }
    }
    text
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    const FUNCTIONS: usize = 200;
    const EDITS: u32 = 200;
    let base = source(FUNCTIONS, usize::MAX, 0);
    let lines = base.lines().count();

    let mut cold = Vec::new();
    for _ in 0..10 {
        let mut db = Database::default();
        let start = Instant::now();
        let file = db.add_file("bench.tsr", &base);
        let diags = db.check(file);
        cold.push(start.elapsed());
        assert!(diags.is_empty(), "the benchmark file must check clean: {diags:?}");
    }
    cold.sort();

    let mut db = Database::default();
    let file = db.add_file("bench.tsr", &base);
    assert!(db.check(file).is_empty());
    let mut edits = Vec::new();
    for n in 0..EDITS {
        let text = source(FUNCTIONS, (n as usize * 37) % FUNCTIONS, 4 + n % 5);
        let start = Instant::now();
        db.set_text(file, &text);
        let diags = db.check(file);
        edits.push(start.elapsed());
        assert!(diags.is_empty());
    }
    edits.sort();

    let p50 = percentile(&edits, 0.5);
    println!("re-check after editing one body of a {lines}-line file ({FUNCTIONS} functions), {EDITS} edits:");
    println!(
        "  p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms(p50),
        ms(percentile(&edits, 0.99)),
        ms(edits[edits.len() - 1])
    );
    println!(
        "anchor, cold check of the same file in a fresh database: median {:.2} ms",
        ms(percentile(&cold, 0.5))
    );
    println!(
        "ratio re-check / cold check: {:.3}",
        ms(p50) / ms(percentile(&cold, 0.5))
    );
    println!("budget: 5 ms; p50 / budget = {:.2}", ms(p50) / 5.0);
}
