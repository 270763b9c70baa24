//! What the re-check and language-server benchmarks share: the generated
//! file they edit, and their statistics.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};

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

/// A language-server client over an in-memory duplex stream to a server
/// running in this process (process pipes are not counted).
pub struct Client {
    input: DuplexStream,
    output: BufReader<DuplexStream>,
}

impl Client {
    /// Starts a server in this process and initializes it.
    pub async fn start() -> Client {
        let (client_in, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, client_out) = tokio::io::duplex(1 << 20);
        tokio::spawn(async move {
            tessera_lsp::serve(server_in, server_out)
                .await
                .expect("the server runs");
        });
        let mut client = Client {
            input: client_in,
            output: BufReader::new(client_out),
        };
        client
            .send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}))
            .await;
        client.receive().await;
        client
            .send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            .await;
        client
    }

    /// Sends request `id` and waits for its response.
    pub async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let m = self.receive().await;
            if m["id"] == json!(id) {
                return m;
            }
        }
    }

    pub async fn send(&mut self, message: Value) {
        let body = message.to_string();
        let framed = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.input.write_all(framed.as_bytes()).await.expect("the server reads");
    }

    pub async fn receive(&mut self) -> Value {
        let mut length = 0;
        loop {
            let mut line = String::new();
            self.output.read_line(&mut line).await.expect("the server writes");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length:") {
                length = v.trim().parse().expect("a length");
            }
        }
        let mut body = vec![0; length];
        self.output.read_exact(&mut body).await.expect("a body");
        serde_json::from_slice(&body).expect("JSON")
    }

    /// Waits for the diagnostics of `version` and returns how many there are.
    pub async fn diagnostics(&mut self, version: i64) -> usize {
        loop {
            let m = self.receive().await;
            if m["method"] == "textDocument/publishDiagnostics" && m["params"]["version"] == json!(version) {
                return m["params"]["diagnostics"].as_array().map_or(0, Vec::len);
            }
        }
    }
}
