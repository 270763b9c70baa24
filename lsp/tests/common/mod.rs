//! A minimal LSP client over the server's standard input and output: the
//! real binary in a child process, JSON-RPC framed with `Content-Length`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub struct Client {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    next_id: i64,
    /// Notifications and responses read while waiting for something else.
    pub backlog: Vec<Value>,
}

impl Client {
    /// Starts the server and completes the `initialize` handshake.
    pub fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tessera-lsp"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the server starts");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, messages) = mpsc::channel();
        thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_message(&mut reader) {
                if tx.send(message).is_err() {
                    return;
                }
            }
        });
        let mut client = Client {
            child,
            stdin,
            messages,
            next_id: 0,
            backlog: Vec::new(),
        };
        let id = client.request("initialize", json!({"processId": null, "capabilities": {}}));
        let init = client.response(id);
        assert!(
            init["result"]["capabilities"]["hoverProvider"]
                .as_bool()
                .unwrap_or(false),
            "{init}"
        );
        client.notify("initialized", json!({}));
        client
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and returns its id without waiting for the answer.
    pub fn request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Writes `bytes` to the server's input as they are (a frame, or not).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).expect("the server reads its input");
        self.stdin.flush().expect("the server reads its input");
    }

    fn send(&mut self, message: Value) {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("the server reads its input");
        self.stdin.flush().expect("the server reads its input");
    }

    /// The next message from the server, failing the test after `timeout`.
    pub fn next(&mut self, timeout: Duration) -> Value {
        match self.messages.recv_timeout(timeout) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => panic!("no message from the server within {timeout:?}"),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.wait().ok();
                panic!("the server closed its output (exit status {status:?})")
            }
        }
    }

    /// Waits for the response to request `id`, keeping other messages in the backlog.
    pub fn response(&mut self, id: i64) -> Value {
        if let Some(i) = self
            .backlog
            .iter()
            .position(|m| m["id"] == json!(id) && m.get("method").is_none())
        {
            return self.backlog.remove(i);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let message = self.next(deadline.saturating_duration_since(Instant::now()));
            if message["id"] == json!(id) && message.get("method").is_none() {
                return message;
            }
            self.backlog.push(message);
        }
    }

    /// Waits for the diagnostics of `uri` published for `version`.
    pub fn diagnostics(&mut self, uri: &str, version: i64) -> Vec<Value> {
        let matches = |m: &Value| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && m["params"]["version"] == json!(version)
        };
        if let Some(i) = self.backlog.iter().position(matches) {
            let m = self.backlog.remove(i);
            return m["params"]["diagnostics"].as_array().cloned().unwrap_or_default();
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let message = self.next(deadline.saturating_duration_since(Instant::now()));
            if matches(&message) {
                return message["params"]["diagnostics"].as_array().cloned().unwrap_or_default();
            }
            self.backlog.push(message);
        }
    }

    /// Shuts the server down and returns whether it exited cleanly.
    pub fn shutdown(mut self) -> bool {
        let id = self.request("shutdown", Value::Null);
        let answer = self.response(id);
        assert!(answer.get("error").is_none(), "shutdown failed: {answer}");
        self.notify("exit", Value::Null);
        self.exit_status().is_some_and(|status| status.success())
    }

    /// Closes the server's input and waits up to 10 s for it to exit: its
    /// exit status, or None (and the server killed) when it did not.
    pub fn exit_status(mut self) -> Option<ExitStatus> {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length:") {
            length = v.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// The resident memory of a process, in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
