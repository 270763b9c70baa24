//! 10 000 random edits — insertions and deletions of tokens, bytes and
//! multi-byte characters at random (often out-of-range) positions —
//! interleaved with hover, completion and the other requests, against the
//! real server over stdio. The server must not crash, must answer every
//! request with a well-formed result (or a `ContentModified` /
//! `RequestCancelled` error when a newer edit overtook it), must keep its
//! memory bounded, and must end up with the same text as the client: its
//! final diagnostics equal those of a direct check of the client's text.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};
use tessera_base::{LineCol, LineIndex};
use tower_lsp_server::ls_types as lsp;

use common::Client;

const EDITS: usize = 10_000;
const URI: &str = "file:///robustness/fuzz.tsr";

/// xorshift64*: deterministic, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const TOKENS: &[&str] = &[
    "def ",
    "return ",
    "if ",
    "else:",
    "elif ",
    "for ",
    " in ",
    "range(",
    "while ",
    "with ",
    "@kernel\n",
    "where ",
    "effects(random)",
    "mut ",
    "x",
    "y",
    "acc",
    "N",
    "D",
    "f32",
    "bf16[",
    "f16[N, D]",
    "shared ",
    "op.",
    "op.matmul(",
    "tile.",
    "launch.thread_id()",
    "tshared.alloc[f16](",
    "numerics(Training)",
    "(",
    ")",
    "[",
    "]",
    ",",
    ":",
    "=",
    "+",
    "@",
    "*",
    "/",
    "%",
    "==",
    "<=",
    ".",
    "..",
    "0",
    "1",
    "128",
    "3.5",
    "1e9",
    "0x1F",
    "16_KiB",
    "\"s\"",
    "'",
    "\"\"\"",
    "#",
    "\n",
    "\n    ",
    "\n        ",
    "    ",
    "\t",
    "\\\n",
    ";",
    "pass",
    "import helpers\n",
    "from tessera import op\n",
    "cast(",
    "accumulate=f32",
    "axis=-1",
    "T",
    ".shape",
];

const CHARS: &[&str] = &[
    "é", "𝔸", "🦀", "\u{0}", "\r", "\r\n", "\u{feff}", "\u{202e}", "$", "?", "`", "~", "\u{7f}",
];

/// A random position, often past the end of its line or of the text, and
/// sometimes inside a surrogate pair.
fn position(rng: &mut Rng, lines: usize) -> Value {
    let line = rng.below(lines + 2);
    let character = rng.below(90);
    json!({"line": line, "character": character})
}

fn random_edit(rng: &mut Rng, lines: usize) -> Value {
    let start = position(rng, lines);
    match rng.below(10) {
        0..=4 => json!({"range": {"start": start, "end": start}, "text": rng.pick(TOKENS)}),
        5 | 6 => {
            let mut text = String::new();
            for _ in 0..=rng.below(3) {
                let piece: &&str = rng.pick(CHARS);
                text.push_str(piece);
            }
            json!({"range": {"start": start, "end": start}, "text": text})
        }
        7 | 8 => {
            let end =
                json!({"line": start["line"].as_u64().unwrap_or(0) + rng.below(2) as u64, "character": rng.below(90)});
            json!({"range": {"start": start, "end": end}, "text": ""})
        }
        _ => {
            // A reversed range: clients should not send one; the server must cope.
            let end = position(rng, lines);
            json!({"range": {"start": end, "end": start}, "text": rng.pick(TOKENS)})
        }
    }
}

/// The client's copy of the text, edited the way the protocol says: UTF-16
/// positions, clamped to the line and the text.
fn apply(text: &mut String, change: &Value) {
    let index = LineIndex::new(text);
    let at = |p: &Value| {
        index.offset_utf16(LineCol {
            line: p["line"].as_u64().unwrap_or(0) as u32,
            col: p["character"].as_u64().unwrap_or(0) as u32,
        }) as usize
    };
    let (a, b) = (at(&change["range"]["start"]), at(&change["range"]["end"]));
    text.replace_range(a.min(b)..a.max(b), change["text"].as_str().unwrap_or(""));
}

const REQUESTS: &[&str] = &[
    "textDocument/hover",
    "textDocument/completion",
    "textDocument/signatureHelp",
    "textDocument/definition",
    "textDocument/references",
    "textDocument/inlayHint",
    "textDocument/semanticTokens/full",
    "textDocument/documentSymbol",
    "textDocument/codeAction",
];

fn request_params(method: &str, pos: Value) -> Value {
    let doc = json!({"uri": URI});
    let range = json!({"start": {"line": 0, "character": 0}, "end": pos});
    match method {
        "textDocument/inlayHint" => json!({"textDocument": doc, "range": range}),
        "textDocument/semanticTokens/full" | "textDocument/documentSymbol" => json!({"textDocument": doc}),
        "textDocument/codeAction" => {
            json!({"textDocument": doc, "range": {"start": pos, "end": pos}, "context": {"diagnostics": []}})
        }
        "textDocument/references" => {
            json!({"textDocument": doc, "position": pos, "context": {"includeDeclaration": true}})
        }
        _ => json!({"textDocument": doc, "position": pos}),
    }
}

/// Checks that an answer is well-formed: a result that parses as the
/// protocol's type for the method, or an error a newer edit explains.
fn check_answer(method: &str, answer: &Value) -> bool {
    if let Some(error) = answer.get("error") {
        let code = error["code"].as_i64();
        assert!(
            code == Some(-32801) || code == Some(-32800),
            "{method} failed: {answer}"
        );
        return false;
    }
    let result = answer.get("result").cloned().unwrap_or(Value::Null);
    let parsed = match method {
        "textDocument/hover" => serde_json::from_value::<Option<lsp::Hover>>(result).map(drop),
        "textDocument/completion" => serde_json::from_value::<Option<lsp::CompletionResponse>>(result).map(drop),
        "textDocument/signatureHelp" => serde_json::from_value::<Option<lsp::SignatureHelp>>(result).map(drop),
        "textDocument/definition" => serde_json::from_value::<Option<lsp::GotoDefinitionResponse>>(result).map(drop),
        "textDocument/references" => serde_json::from_value::<Option<Vec<lsp::Location>>>(result).map(drop),
        "textDocument/inlayHint" => serde_json::from_value::<Option<Vec<lsp::InlayHint>>>(result).map(drop),
        "textDocument/semanticTokens/full" => {
            serde_json::from_value::<Option<lsp::SemanticTokensResult>>(result).map(drop)
        }
        "textDocument/documentSymbol" => {
            serde_json::from_value::<Option<lsp::DocumentSymbolResponse>>(result).map(drop)
        }
        "textDocument/codeAction" => serde_json::from_value::<Option<lsp::CodeActionResponse>>(result).map(drop),
        other => panic!("no check for {other}"),
    };
    assert!(parsed.is_ok(), "{method} answered with a malformed result: {answer}");
    true
}

fn check_notification(message: &Value) {
    if message["method"] == "textDocument/publishDiagnostics" {
        let params: lsp::PublishDiagnosticsParams =
            serde_json::from_value(message["params"].clone()).expect("well-formed diagnostics");
        for d in params.diagnostics {
            assert!(d.range.start <= d.range.end, "a backwards range: {d:?}");
            assert!(d.code.is_some(), "every diagnostic has a code: {d:?}");
        }
    }
    assert_ne!(
        message["method"], "window/logMessage",
        "the server logged an internal error: {message}"
    );
}

fn base_text() -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("the examples directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tsr"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("an example"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn ten_thousand_random_edits_never_crash_the_server() {
    let mut client = Client::start();
    let mut text = base_text();
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": URI, "languageId": "tessera", "version": 0, "text": text}}),
    );
    let mut rng = Rng(0x7e55_e7a0_15f0_0d5e);
    let mut pending: HashMap<i64, &str> = HashMap::new();
    let mut answered = 0;
    let mut with_result = 0;
    let mut rss_after_warmup = None;
    for version in 1..=EDITS as i64 {
        let lines = text.lines().count();
        let change = random_edit(&mut rng, lines);
        apply(&mut text, &change);
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": version}, "contentChanges": [change]}),
        );
        if version % 3 == 0 {
            let method = *rng.pick(REQUESTS);
            let id = client.request(method, request_params(method, position(&mut rng, lines)));
            if version % 2 == 0 {
                // Awaited before the next edit: nothing can overtake it, so
                // it must come back with a result.
                let answer = client.response(id);
                assert!(check_answer(method, &answer), "{method} was not answered: {answer}");
                with_result += 1;
                answered += 1;
            } else {
                pending.insert(id, method);
            }
        }
        // Every so often, let the server catch up: read every answer.
        if version % 25 == 0 {
            while !pending.is_empty() {
                let message = match client.backlog.is_empty() {
                    true => client.next(Duration::from_secs(60)),
                    false => client.backlog.remove(0),
                };
                if message.get("method").is_some() {
                    check_notification(&message);
                    continue;
                }
                let id = message["id"].as_i64().expect("a response has the id of its request");
                let method = pending.remove(&id).expect("one response per request");
                if check_answer(method, &message) {
                    with_result += 1;
                }
                answered += 1;
            }
        }
        if version == 1_000 {
            rss_after_warmup = common::rss_kib(client.pid());
        }
    }
    assert_eq!(answered, EDITS / 3 - pending.len(), "every request was answered");
    eprintln!("{answered} requests answered, {with_result} with a result");
    assert!(
        with_result >= EDITS / 6,
        "{with_result} of {answered} requests had a result"
    );

    // The server's text is the client's: a last request's answer settles the
    // edits, then the final diagnostics must equal a direct check.
    let last = EDITS as i64 + 1;
    text.push('\n');
    let change = json!({"range": {"start": {"line": 1_000_000, "character": 0}, "end": {"line": 1_000_000, "character": 0}}, "text": "\n"});
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": URI, "version": last}, "contentChanges": [change]}),
    );
    let published = client.diagnostics(URI, last);
    let mut sources = tessera_driver::Sources::default();
    let file = sources.add(
        "/robustness/fuzz.tsr".into(),
        tessera_driver::Input::Stdin,
        text.clone(),
    );
    let expected = tessera_driver::check_file(&sources, file);
    let index = LineIndex::new(&text);
    let expected: Vec<(String, u32, u32)> = expected
        .iter()
        .map(|d| {
            let at = index.line_col_utf16(d.primary_span().map_or(0, |s| s.span.start));
            (d.code.as_str().to_string(), at.line, at.col)
        })
        .collect();
    let got: Vec<(String, u32, u32)> = published
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap_or("").to_string(),
                d["range"]["start"]["line"].as_u64().unwrap_or(0) as u32,
                d["range"]["start"]["character"].as_u64().unwrap_or(0) as u32,
            )
        })
        .collect();
    assert_eq!(got, expected, "the server's text diverged from the client's");

    let rss_end = common::rss_kib(client.pid());
    if let (Some(warm), Some(end)) = (rss_after_warmup, rss_end) {
        eprintln!(
            "resident memory: {} MiB after 1 000 edits, {} MiB after {EDITS}",
            warm / 1024,
            end / 1024
        );
        assert!(
            end < warm + 64 * 1024,
            "memory grew from {warm} KiB to {end} KiB over {} edits",
            EDITS - 1_000
        );
    }
    assert!(client.shutdown(), "the server exits cleanly after 10 000 edits");
}

/// Frames a client should never send — a body that is not JSON or not
/// UTF-8, JSON that is no JSON-RPC message, headers without a usable
/// `Content-Length`, a lowercase header name — are each answered with
/// JSON-RPC's error (-32700 or -32600, the message's id where it had a
/// valid one), and the session goes on: the protocol library would have
/// stopped reading at the first of them. After bad headers the bytes up to
/// the next `Content-Length` are skipped.
#[test]
fn malformed_frames_are_answered_and_the_session_goes_on() {
    let mut client = Client::start();
    let frame = |body: &[u8]| {
        let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        out.extend_from_slice(body);
        out
    };
    let bad: Vec<(Vec<u8>, i64, Value)> = vec![
        (frame(b"{bad}"), -32700, Value::Null),
        (frame(b"\xff\xfe{}"), -32700, Value::Null),
        (frame(b"[]"), -32600, Value::Null),
        (frame(b"null"), -32600, Value::Null),
        (frame(br#"{"jsonrpc":"2.0","method":5}"#), -32600, Value::Null),
        (frame(br#"{"id":7,"method":"shutdown"}"#), -32600, json!(7)),
        (frame(br#"{"jsonrpc":"2.0","id":8}"#), -32600, json!(8)),
        (
            frame(br#"{"jsonrpc":"2.0","id":1.5,"method":"shutdown"}"#),
            -32600,
            Value::Null,
        ),
        (
            frame(br#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"shutdown"}"#),
            -32600,
            Value::Null,
        ),
        (
            frame(br#"{"jsonrpc":"2.0","id":2.5,"result":null}"#),
            -32600,
            Value::Null,
        ),
        (
            frame(br#"{"jsonrpc":"2.0","id":9,"method":"$/unknown/request"}"#),
            -32601,
            json!(9),
        ),
        (b"X-Nothing: 1\r\n\r\n".to_vec(), -32700, Value::Null),
        (b"Content-Length: abc\r\n\r\n".to_vec(), -32700, Value::Null),
    ];
    for (bytes, code, id) in bad {
        client.send_raw(&bytes);
        let answer = client.next(Duration::from_secs(30));
        assert_eq!(
            answer["error"]["code"],
            json!(code),
            "{answer} for {:?}",
            String::from_utf8_lossy(&bytes)
        );
        assert_eq!(answer["id"], id, "{answer}");
    }
    // A lowercase header name is read, and the server still answers.
    let body = json!({"jsonrpc": "2.0", "id": 100, "method": "textDocument/hover",
        "params": {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}}})
    .to_string();
    client.send_raw(format!("content-length: {}\r\n\r\n{body}", body.len()).as_bytes());
    let answer = client.response(100);
    assert!(
        answer.get("result").is_some() || answer.get("error").is_some(),
        "{answer}"
    );
    // Headers whose lines end at a bare `\n` are read too, and a key
    // written twice holds its last value.
    let body = r#"{"jsonrpc":"2.0","id":1,"id":101,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///robustness/fuzz.tsr"},"position":{"line":0,"character":0}}}"#;
    client.send_raw(format!("Content-Length: {}\n\n{body}", body.len()).as_bytes());
    let answer = client.response(101);
    assert!(
        answer.get("result").is_some() || answer.get("error").is_some(),
        "{answer}"
    );
    assert!(client.shutdown(), "the server did not exit cleanly");
}

/// `exit` before `shutdown` ends the server with status 1, as the protocol says.
#[test]
fn exit_without_shutdown_is_status_1() {
    let mut client = Client::start();
    client.notify("exit", Value::Null);
    assert_eq!(client.exit_status().and_then(|s| s.code()), Some(1));
}
