//! Re-check latency: after editing one function body of a 2 000-line file,
//! how long until its diagnostics are up to date again (the language
//! server's inner loop). The anchor, measured in the same run, is a cold
//! check of the same file in a fresh database.
//!
//! Run: `cargo run --release -p tessera-bench --bin recheck-bench`

use std::time::Instant;

use tessera_bench::{ms, percentile, source};
use tessera_driver::Database;

/// How the generated kernels are decorated.
const KERNEL: &str = "@kernel tile[(128,)] shared(4_KiB)";

fn main() {
    const FUNCTIONS: usize = 200;
    const EDITS: u32 = 200;
    let base = source(FUNCTIONS, usize::MAX, 0, KERNEL);
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
        let text = source(FUNCTIONS, (n as usize * 37) % FUNCTIONS, 4 + n % 5, KERNEL);
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
