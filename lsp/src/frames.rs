//! The frames between the client and the protocol library. tower-lsp-server
//! stops reading at the first frame it cannot decode (its framed reader
//! ends after an error), so one malformed message would end the session.
//! Every frame the client sends is checked here first: a well-formed
//! JSON-RPC message goes on to the library unchanged, and anything else is
//! answered here, as JSON-RPC 2.0 says (a body that is not JSON is -32700,
//! a message that is not a request, notification or response -32600), and
//! the session goes on. The library decodes fewer messages than JSON-RPC
//! allows, and ends the session on the others, so what passes on is what
//! it decodes: an `id` is a string or an integer it can hold (a message
//! with another is -32600 here), and the body is the message written anew
//! (a key the client wrote twice holds its last value, as most JSON
//! readers take it). A request whose method starts with `$/` is for an
//! optional protocol part this server does not implement; the library
//! never answers those, so they are answered here with -32601, as the
//! protocol says. The answers and the library's own output are written to
//! the client whole frame by whole frame.

use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The most bytes of headers read before a frame is taken as garbage.
const MAX_HEADERS: usize = 8192;

/// One frame read from a stream: its body, or what was wrong with its
/// headers (the bytes up to their end are dropped).
enum Frame {
    Body(Vec<u8>),
    BadHeaders(&'static str),
}

/// Reads frames (`Content-Length: N`, any other headers, a blank line, N
/// bytes) from a stream, header names in any case.
struct Frames<R> {
    stream: R,
    buffer: Vec<u8>,
    /// After bad headers: the bytes before the next `Content-Length` are
    /// dropped (a body that followed them is not taken for headers).
    resync: bool,
}

impl<R: AsyncRead + Unpin> Frames<R> {
    fn new(stream: R) -> Frames<R> {
        Frames {
            stream,
            buffer: Vec::new(),
            resync: false,
        }
    }

    /// Drops the bytes before the next `Content-Length` header (in any
    /// case); false at the end of the stream.
    async fn skip_to_header(&mut self) -> bool {
        loop {
            let lower = self.buffer.to_ascii_lowercase();
            if let Some(at) = find(&lower, b"content-length") {
                self.buffer.drain(..at);
                return true;
            }
            let keep = self.buffer.len().saturating_sub(b"content-length".len());
            self.buffer.drain(..keep);
            if !self.fill().await {
                return false;
            }
        }
    }

    /// Reads more bytes; false at the end of the stream.
    async fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 8192];
        match self.stream.read(&mut chunk).await {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buffer.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    /// The next frame, or None at the end of the stream.
    async fn next(&mut self) -> Option<Frame> {
        // Cleared only once skipped: this future may be dropped while it
        // waits for more bytes, and the next call skips on.
        if self.resync {
            if !self.skip_to_header().await {
                return None;
            }
            self.resync = false;
        }
        let frame = self.frame().await;
        self.resync = matches!(frame, Some(Frame::BadHeaders(_)));
        frame
    }

    /// A frame whose headers end in a blank line; lines end at `\r\n` or,
    /// as some clients write them, at a bare `\n`.
    async fn frame(&mut self) -> Option<Frame> {
        let (end, blank) = loop {
            let crlf = find(&self.buffer, b"\r\n\r\n").map(|at| (at, 4));
            let lf = find(&self.buffer, b"\n\n").map(|at| (at, 2));
            if let Some(found) = [crlf, lf].into_iter().flatten().min() {
                break found;
            }
            if self.buffer.len() > MAX_HEADERS {
                self.buffer.clear();
                return Some(Frame::BadHeaders("the headers do not end"));
            }
            if !self.fill().await {
                return None;
            }
        };
        let headers = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
        let length = headers.split('\n').find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>())
        });
        let bad = match length {
            None => Some("the headers have no `Content-Length`"),
            Some(Err(_)) => Some("the `Content-Length` is not a number"),
            Some(Ok(_)) => None,
        };
        if let Some(bad) = bad {
            self.buffer.drain(..end + blank);
            return Some(Frame::BadHeaders(bad));
        }
        let body = end + blank + length.and_then(Result::ok).unwrap_or(0);
        // The headers stay in the buffer until the whole body is there:
        // `merge_output` may drop this future at any `fill` (when an answer
        // of its own is ready first), and the next call must find the frame
        // whole, not a body without its headers.
        while self.buffer.len() < body {
            if !self.fill().await {
                return None;
            }
        }
        self.buffer.drain(..end + blank);
        Some(Frame::Body(self.buffer.drain(..body - end - blank).collect()))
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `body` in a frame.
fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// An error response with `id` (null where the message had none).
fn error(id: Value, code: i64, message: String) -> Vec<u8> {
    let answer = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    framed(answer.to_string().as_bytes())
}

/// What becomes of one message from the client.
#[derive(Debug)]
enum Checked {
    /// A request, a notification or a response: this body, written anew,
    /// goes to the library.
    Pass(Vec<u8>),
    /// The answer to the client.
    Answer(Vec<u8>),
}

/// What becomes of one message: passed on written anew, or answered here.
fn check(body: &[u8]) -> Checked {
    match checked_message(body) {
        Ok(message) => Checked::Pass(message.to_string().into_bytes()),
        Err(answer) => Checked::Answer(answer),
    }
}

/// The message in `body` when the library can take it, or the answer to it.
fn checked_message(body: &[u8]) -> Result<Value, Vec<u8>> {
    let message: Value = match std::str::from_utf8(body) {
        Err(_) => return Err(error(Value::Null, -32700, "Parse error: the body is not UTF-8".into())),
        Ok(text) => match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => return Err(error(Value::Null, -32700, format!("Parse error: {e}"))),
        },
    };
    let invalid = |id: Value, why: &str| Err(error(id, -32600, format!("Invalid request: {why}")));
    let Value::Object(fields) = &message else {
        return invalid(Value::Null, "a message is a JSON object");
    };
    let id = fields.get("id").cloned();
    let id_ok = id.as_ref().is_none_or(|id| match id {
        Value::String(_) | Value::Null => true,
        Value::Number(n) => n.is_i64(),
        _ => false,
    });
    let echoed = id.clone().filter(|_| id_ok).unwrap_or(Value::Null);
    if fields.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(echoed, "`jsonrpc` must be \"2.0\"");
    }
    if !id_ok {
        return invalid(Value::Null, "an `id` is a string, an integer of 64 bits or null");
    }
    match fields.get("method") {
        Some(Value::String(method)) if method.starts_with("$/") && id.is_some() => Err(error(
            echoed,
            -32601,
            format!("Method not found: `{method}` is an optional part of the protocol this server does not implement"),
        )),
        Some(Value::String(_)) => Ok(message),
        Some(_) => invalid(echoed, "`method` is a string"),
        None if id.is_some() && (fields.contains_key("result") != fields.contains_key("error")) => Ok(message),
        None => invalid(echoed, "a request has a `method`, a response a `result` or an `error`"),
    }
}

/// Checks the client's frames from `input`: well-formed messages go to
/// `server` framed anew, the answers to the others to `answers`. Returns
/// at the end of the input (or when the server stops reading).
pub(crate) async fn check_input<I, S>(input: I, mut server: S, answers: mpsc::UnboundedSender<Vec<u8>>)
where
    I: AsyncRead + Unpin,
    S: AsyncWrite + Unpin,
{
    let mut frames = Frames::new(input);
    while let Some(frame) = frames.next().await {
        let answer = match frame {
            Frame::BadHeaders(why) => Some(error(Value::Null, -32700, format!("Parse error: {why}"))),
            Frame::Body(body) => match check(&body) {
                Checked::Answer(answer) => Some(answer),
                Checked::Pass(message) => {
                    if server.write_all(&framed(&message)).await.is_err() || server.flush().await.is_err() {
                        return;
                    }
                    None
                }
            },
        };
        if let Some(answer) = answer {
            if answers.send(answer).is_err() {
                return;
            }
        }
    }
}

/// Writes the server's frames from `server` and the answers from `answers`
/// to `output`, each frame whole, until the server's output ends.
pub(crate) async fn merge_output<S, O>(server: S, mut answers: mpsc::UnboundedReceiver<Vec<u8>>, mut output: O)
where
    S: AsyncRead + Unpin,
    O: AsyncWrite + Unpin,
{
    let mut frames = Frames::new(server);
    let mut answers_open = true;
    loop {
        let bytes = tokio::select! {
            frame = frames.next() => match frame {
                Some(Frame::Body(body)) => framed(&body),
                Some(Frame::BadHeaders(_)) => continue,
                None => break,
            },
            answer = answers.recv(), if answers_open => match answer {
                Some(answer) => answer,
                None => {
                    answers_open = false;
                    continue;
                }
            },
        };
        if output.write_all(&bytes).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
    while let Ok(answer) = answers.try_recv() {
        let _ = output.write_all(&answer).await;
    }
    let _ = output.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error code of the answer, or None for a message passed on.
    fn code(body: &[u8]) -> Option<i64> {
        let Checked::Answer(answer) = check(body) else {
            return None;
        };
        let text = String::from_utf8_lossy(&answer);
        let body = text.split("\r\n\r\n").nth(1).unwrap();
        serde_json::from_str::<Value>(body).unwrap()["error"]["code"].as_i64()
    }

    #[test]
    fn messages_are_checked_as_json_rpc_says() {
        for passed in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#[..],
            br#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
            br#"{"jsonrpc":"2.0","id":"a","result":null}"#,
            br#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"shutdown"}"#,
            br#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"#,
        ] {
            assert_eq!(code(passed), None, "{passed:?}");
        }
        assert_eq!(code(b"{bad}"), Some(-32700));
        assert_eq!(code(b"\xff\xfe"), Some(-32700));
        for invalid in [
            &b"[]"[..],
            b"null",
            br#"{"jsonrpc":"2.0","method":5}"#,
            br#"{"id":1,"method":"x"}"#,
            br#"{"jsonrpc":"2.0","id":1}"#,
            br#"{"jsonrpc":"2.0","id":[1],"method":"x"}"#,
            br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
            br#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"x"}"#,
            br#"{"jsonrpc":"2.0","id":2.5,"result":null}"#,
        ] {
            assert_eq!(code(invalid), Some(-32600), "{invalid:?}");
        }
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":3,"method":"$/tessera/unknown"}"#),
            Some(-32601)
        );
    }

    #[test]
    fn a_key_written_twice_passes_on_once_with_its_last_value() {
        let Checked::Pass(body) = check(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"shutdown"}"#) else {
            panic!("the message was answered");
        };
        assert_eq!(
            serde_json::from_slice::<Value>(&body).unwrap(),
            json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        );
        assert_eq!(String::from_utf8(body).unwrap().matches("\"id\"").count(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn frames_read_any_header_case_and_skip_bad_headers() {
        // A body after bad headers is skipped, up to the next frame.
        let input: &[u8] =
            b"content-length: 2\r\n\r\n{}Content-Length: abc\r\n\r\n{\"a\":\r\n\r\n1}Content-Length: 4\r\n\r\nnull";
        let mut frames = Frames::new(input);
        assert!(matches!(frames.next().await, Some(Frame::Body(b)) if b == b"{}"));
        assert!(matches!(frames.next().await, Some(Frame::BadHeaders(_))));
        assert!(matches!(frames.next().await, Some(Frame::Body(b)) if b == b"null"));
        assert!(frames.next().await.is_none());
    }

    /// `merge_output` drops a `next()` that waits for bytes when an answer
    /// of its own is ready first; the frame must come whole from the next
    /// call (its headers had been dropped with the first, and the body was
    /// then read as headers: a response or a notification was lost).
    #[tokio::test(flavor = "current_thread")]
    async fn a_frame_read_in_pieces_survives_a_dropped_read() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut frames = Frames::new(server);
        async fn dropped(frames: &mut Frames<tokio::io::DuplexStream>) {
            tokio::select! {
                biased;
                _ = frames.next() => panic!("the frame is not whole yet"),
                _ = std::future::ready(()) => {}
            }
        }
        client.write_all(b"Content-Length: 10\r\n").await.unwrap();
        dropped(&mut frames).await;
        client.write_all(b"\r\n{\"a\"").await.unwrap();
        dropped(&mut frames).await;
        client.write_all(b":1234}Content-Length: 4\r\n\r\nnull").await.unwrap();
        drop(client);
        assert!(matches!(frames.next().await, Some(Frame::Body(b)) if b == b"{\"a\":1234}"));
        assert!(matches!(frames.next().await, Some(Frame::Body(b)) if b == b"null"));
        assert!(frames.next().await.is_none());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn headers_may_end_lines_with_a_bare_lf() {
        let input: &[u8] = b"Content-Length: 2\n\n{}Content-Length: 4\r\n\r\nnull";
        let mut frames = Frames::new(input);
        assert!(matches!(frames.next().await, Some(Frame::Body(b)) if b == b"{}"));
        assert!(matches!(frames.next().await, Some(Frame::Body(b)) if b == b"null"));
        assert!(frames.next().await.is_none());
    }
}
