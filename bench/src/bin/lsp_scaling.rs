//! Language-server scaling: semantic tokens and references on one
//! function of `n` names, and diagnostics of one line of `n` errors, at `n`
//! and `4n`. Each request's time is divided by the anchor measured in the
//! same run on the same text, the compiler's own cold check (parse and
//! type inference, linear in the text): the ratio stays flat when the
//! server is linear too, and grows fourfold per step when it is quadratic
//! (semantic tokens of a function of 8000 locals took 22 s before names
//! were resolved through one index per function).
//!
//! Run: `cargo run --release -p tessera-bench --bin lsp-scaling [N]`

use std::time::{Duration, Instant};

use serde_json::json;

use tessera_bench::{ms, Client};
use tessera_driver::Database;

const URI: &str = "file:///bench/scaling.tsr";

/// One function binding `n` locals from its parameter.
fn locals(n: usize) -> String {
    let body: String = (0..n).map(|i| format!("    y{i} = x + 1.0\n")).collect();
    format!("def f(x: f32) -> f32:\n{body}    return x\n")
}

/// One line of `n` uses of the parameter.
fn tuple(n: usize) -> String {
    format!("def f(x: f32) -> f32:\n    t = ({})\n    return x\n", "x, ".repeat(n))
}

/// A line of `n` characters that are not tokens (`n` errors, E0001).
fn errors(n: usize) -> String {
    format!("def f():\n    return 1\n{}\n", "\u{1F600}".repeat(n))
}

/// The compiler's cold check of `text`, best of three.
fn anchor(text: &str) -> Duration {
    (0..3)
        .map(|_| {
            let mut db = Database::default();
            let file = db.add_file("scaling.tsr", text);
            let start = Instant::now();
            db.check(file);
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// The server's time to open `text` and publish its diagnostics, then for
/// semantic tokens and references of `x` (best of three each).
async fn server(text: &str) -> [Duration; 3] {
    let mut client = Client::start().await;
    let start = Instant::now();
    client
        .send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": URI, "languageId": "tessera", "version": 0, "text": text}}}))
        .await;
    client.diagnostics(0).await;
    let open = start.elapsed();
    let mut best = [Duration::MAX; 2];
    for round in 0..3 {
        let requests = [
            (
                "textDocument/semanticTokens/full",
                json!({"textDocument": {"uri": URI}}),
            ),
            (
                "textDocument/references",
                json!({"textDocument": {"uri": URI}, "position": {"line": 0, "character": 6},
                       "context": {"includeDeclaration": true}}),
            ),
        ];
        for (k, (method, params)) in requests.into_iter().enumerate() {
            let start = Instant::now();
            let reply = client.request(10 * round + k as i64 + 2, method, params).await;
            best[k] = best[k].min(start.elapsed());
            assert!(reply.get("error").is_none(), "{method}: {reply}");
        }
    }
    [open, best[0], best[1]]
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(4000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(tessera_lsp::QUERY_STACK_BYTES)
        .build()
        .expect("a runtime");
    println!("time / the compiler's cold check of the same text (flat when linear, x4 per step when quadratic):");
    for (what, make) in [
        ("function of n locals", locals as fn(usize) -> String),
        ("one line of n uses", tuple),
        ("one line of n errors", errors),
    ] {
        let mut previous: Option<[f64; 3]> = None;
        for size in [n, 4 * n] {
            let text = make(size);
            let check = ms(anchor(&text));
            let times = runtime.block_on(server(&text));
            let ratios = times.map(|t| ms(t) / check);
            print!(
                "  {what:<22} n={size:>6}: check {check:7.2} ms | open+diagnostics {:7.2} ms ({:5.2}x) | semantic tokens {:7.2} ms ({:5.2}x) | references {:7.2} ms ({:5.2}x)",
                ms(times[0]),
                ratios[0],
                ms(times[1]),
                ratios[1],
                ms(times[2]),
                ratios[2]
            );
            if let Some(p) = previous {
                print!(
                    " | growth of the ratios: {:.2} {:.2} {:.2}",
                    ratios[0] / p[0],
                    ratios[1] / p[1],
                    ratios[2] / p[2]
                );
            }
            println!();
            previous = Some(ratios);
        }
    }
}
