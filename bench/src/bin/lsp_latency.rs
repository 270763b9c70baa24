//! Language-server latency: the time from a `textDocument/didChange` that
//! edits one function body of a 2 000-line file to the
//! `textDocument/publishDiagnostics` for that version, through the whole
//! server (JSON-RPC framing, the writer thread, the diagnostics thread,
//! the conversion to LSP types). The server runs in this process on an
//! in-memory duplex stream, so process pipes are not counted. The anchor,
//! measured in the same run, is the compiler's own re-check after the same
//! edits (`set_text` + `check` on a database), which the server cannot beat.
//!
//! Run: `cargo run --release -p tessera-bench --bin lsp-latency [EDITS]`

use std::time::{Duration, Instant};

use serde_json::json;

use tessera_bench::{ms, percentile, source, Client};
use tessera_driver::Database;

/// How the generated kernels are decorated.
const KERNEL: &str = "@kernel";

const BUDGET_MS: f64 = 10.0;
const URI: &str = "file:///bench/latency.tsr";

/// The line and column of the constant in function `edited`.
fn constant_position(text: &str, edited: usize) -> (usize, usize) {
    let header = if edited.is_multiple_of(4) {
        format!("def k{edited}(")
    } else {
        format!("def g{edited}(")
    };
    let start = text.find(&header).expect("the edited function exists");
    let needle = if edited.is_multiple_of(4) { "x[i] * " } else { "y * " };
    let at = start + text[start..].find(needle).expect("its constant") + needle.len();
    let line = text[..at].matches('\n').count();
    let col = at - text[..at].rfind('\n').map_or(0, |i| i + 1);
    (line, col)
}

async fn measure(functions: usize, edits: usize) -> Vec<Duration> {
    let mut client = Client::start().await;
    let text = source(functions, usize::MAX, 0, KERNEL);
    client
        .send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": URI, "languageId": "tessera", "version": 0, "text": text}}}))
        .await;
    assert_eq!(client.diagnostics(0).await, 0, "the benchmark file must check clean");
    let mut times = Vec::new();
    for n in 0..edits {
        let edited = (n * 37) % functions;
        let (line, col) = constant_position(&text, edited);
        let digit = (4 + n % 5).to_string();
        let version = n as i64 + 1;
        let change = json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": URI, "version": version},
            "contentChanges": [{"range": {"start": {"line": line, "character": col},
                                           "end": {"line": line, "character": col + 1}}, "text": digit}]}});
        let start = Instant::now();
        client.send(change).await;
        let count = client.diagnostics(version).await;
        times.push(start.elapsed());
        assert_eq!(count, 0);
        // Put the constant back, untimed, so every edit starts from the same text.
        let undo = json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": URI, "version": version + 1_000_000},
            "contentChanges": [{"range": {"start": {"line": line, "character": col},
                                           "end": {"line": line, "character": col + 1}}, "text": "3"}]}});
        client.send(undo).await;
        client.diagnostics(version + 1_000_000).await;
    }
    times
}

fn main() {
    const FUNCTIONS: usize = 223;
    let edits: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let base = source(FUNCTIONS, usize::MAX, 0, KERNEL);
    let lines = base.lines().count();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(tessera_lsp::QUERY_STACK_BYTES)
        .build()
        .expect("a runtime");
    let mut server = runtime.block_on(measure(FUNCTIONS, edits));
    server.sort();

    let mut db = Database::default();
    let file = db.add_file("bench.tsr", &base);
    assert!(db.check(file).is_empty());
    let mut direct = Vec::new();
    for n in 0..edits {
        let text = source(FUNCTIONS, (n * 37) % FUNCTIONS, 4 + (n % 5) as u32, KERNEL);
        let start = Instant::now();
        db.set_text(file, &text);
        assert!(db.check(file).is_empty());
        direct.push(start.elapsed());
        db.set_text(file, &base);
        db.check(file);
    }
    direct.sort();

    let p50 = percentile(&server, 0.5);
    println!("didChange -> publishDiagnostics, one edit in one body of a {lines}-line file ({FUNCTIONS} functions), {edits} edits:");
    println!(
        "  p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms(p50),
        ms(percentile(&server, 0.99)),
        ms(server[server.len() - 1])
    );
    println!(
        "anchor, the compiler's re-check after the same edits (set_text + check): p50 {:.2} ms, p99 {:.2} ms",
        ms(percentile(&direct, 0.5)),
        ms(percentile(&direct, 0.99))
    );
    println!(
        "ratio server / re-check (p50): {:.2}",
        ms(p50) / ms(percentile(&direct, 0.5))
    );
    println!("budget: {BUDGET_MS} ms; p50 / budget = {:.2}", ms(p50) / BUDGET_MS);
}
