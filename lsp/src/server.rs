//! The protocol side: tower-lsp-server's transport and router, with two
//! additions. `Ordered` takes every message in arrival order (the
//! transport calls it sequentially) and sends document changes straight to
//! the writer, and gives each request a ticket for a snapshot, queued behind
//! those changes. `Backend` answers each request on its snapshot, on a
//! blocking thread, under `catch_unwind`.

use std::cell::RefCell;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;
use tower::Service;
use tower_lsp_server::jsonrpc::{self, Request, Response};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, ExitedError, LanguageServer, LspService, Server};

use crate::workspace::{panic_message, Command, Output, Snapshot, Writer};
use crate::{completion, convert, hints, hover, navigation, tokens};

tokio::task_local! {
    /// The snapshot ticket of the request being handled, taken when it arrived.
    static TICKET: RefCell<Option<oneshot::Receiver<Snapshot>>>;
}

/// The requests answered on a snapshot.
const SNAPSHOT_METHODS: [&str; 9] = [
    "textDocument/hover",
    "textDocument/definition",
    "textDocument/references",
    "textDocument/documentSymbol",
    "textDocument/completion",
    "textDocument/signatureHelp",
    "textDocument/codeAction",
    "textDocument/inlayHint",
    "textDocument/semanticTokens/full",
];

/// How many requests are handled at once; the rest wait in the transport's queue.
const CONCURRENCY: usize = 8;

/// How a session ended: the protocol wants the server's exit status to
/// say whether `shutdown` came before the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The client asked for `shutdown` (status 0).
    AfterShutdown,
    /// The client sent `exit`, or closed the input, without it (status 1).
    WithoutShutdown,
}

/// Serves the protocol on `input` and `output` until the client exits or
/// closes the input; each frame the client sends is checked first
/// ([`crate::frames`]), so that a malformed one is answered and does not
/// end the session.
pub async fn serve<I, O>(input: I, output: O) -> std::io::Result<Ended>
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin,
{
    let sink = Arc::new(ClientOutput {
        client: OnceLock::new(),
        runtime: tokio::runtime::Handle::current(),
    });
    let writer = Writer::start(sink.clone())?;
    let backend_writer = writer.clone();
    let shut_down = Arc::new(AtomicBool::new(false));
    let backend_shut_down = shut_down.clone();
    let (service, socket) = LspService::build(move |client| {
        // Set once, here: the client exists only inside this closure.
        let _ = sink.client.set(client.clone());
        Backend {
            client,
            writer: backend_writer,
            shut_down: backend_shut_down,
        }
    })
    .custom_method("tessera/explain", Backend::explain)
    .finish();
    let (to_server, server_input) = tokio::io::duplex(1 << 16);
    let (server_output, from_server) = tokio::io::duplex(1 << 16);
    let (answers, answered) = tokio::sync::mpsc::unbounded_channel();
    let checking = tokio::spawn(crate::frames::check_input(input, to_server, answers));
    let serving = async move {
        Server::new(server_input, server_output, socket)
            .concurrency_level(CONCURRENCY)
            .serve(Ordered { inner: service, writer })
            .await;
    };
    tokio::join!(serving, crate::frames::merge_output(from_server, answered, output));
    checking.abort();
    Ok(if shut_down.load(Ordering::SeqCst) {
        Ended::AfterShutdown
    } else {
        Ended::WithoutShutdown
    })
}

/// Publishes through the client from the writer's threads.
struct ClientOutput {
    client: OnceLock<Client>,
    runtime: tokio::runtime::Handle,
}

impl Output for ClientOutput {
    fn publish(&self, uri: Uri, diagnostics: Vec<Diagnostic>, version: Option<i32>) {
        if let Some(client) = self.client.get() {
            // Blocking keeps the publications of one document in order.
            self.runtime
                .block_on(client.publish_diagnostics(uri, diagnostics, version));
        }
    }

    fn log(&self, message: String) {
        if let Some(client) = self.client.get() {
            self.runtime.block_on(client.log_message(MessageType::ERROR, message));
        }
    }
}

/// The service in front of the router: document changes to the writer in
/// arrival order, snapshot tickets for requests.
struct Ordered {
    inner: LspService<Backend>,
    writer: Writer,
}

type Reply = Pin<Box<dyn Future<Output = Result<Option<Response>, ExitedError>> + Send>>;

impl Service<Request> for Ordered {
    type Response = Option<Response>;
    type Error = ExitedError;
    type Future = Reply;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ExitedError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Reply {
        if let Some(command) = edit_command(&request) {
            self.writer.send(command);
            return Box::pin(async { Ok(None) });
        }
        if request.id().is_some() && SNAPSHOT_METHODS.contains(&request.method()) {
            let ticket = self.writer.snapshot();
            return Box::pin(TICKET.scope(RefCell::new(Some(ticket)), self.inner.call(request)));
        }
        Box::pin(self.inner.call(request))
    }
}

/// The writer's command for a notification that changes a document.
/// Anything else, or one whose parameters do not parse, goes to the router
/// (which reports bad parameters).
fn edit_command(request: &Request) -> Option<Command> {
    fn params<T: serde::de::DeserializeOwned>(request: &Request) -> Option<T> {
        serde_json::from_value(request.params()?.clone()).ok()
    }
    match request.method() {
        "textDocument/didOpen" => {
            let p: DidOpenTextDocumentParams = params(request)?;
            Some(Command::Open {
                uri: p.text_document.uri,
                text: p.text_document.text,
                version: p.text_document.version,
            })
        }
        "textDocument/didChange" => {
            let p: DidChangeTextDocumentParams = params(request)?;
            Some(Command::Change {
                uri: p.text_document.uri,
                version: p.text_document.version,
                changes: p.content_changes,
            })
        }
        "textDocument/didClose" => {
            let p: DidCloseTextDocumentParams = params(request)?;
            Some(Command::Close {
                uri: p.text_document.uri,
            })
        }
        "workspace/didChangeWatchedFiles" => {
            let p: DidChangeWatchedFilesParams = params(request)?;
            Some(Command::FilesChanged {
                uris: p.changes.into_iter().map(|c| c.uri).collect(),
            })
        }
        _ => None,
    }
}

struct Backend {
    client: Client,
    writer: Writer,
    /// Whether the client asked for `shutdown`.
    shut_down: Arc<AtomicBool>,
}

/// Cancels the queries of a snapshot when the request is dropped (the
/// client cancelled it) before its answer is ready.
struct CancelOnDrop(Option<salsa::CancellationToken>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(token) = self.0.take() {
            token.cancel();
        }
    }
}

impl Backend {
    /// Runs `f` on the request's snapshot, on a blocking thread, catching
    /// panics. A query cancelled by a newer edit answers `ContentModified`.
    async fn on_snapshot<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Snapshot) -> T + Send + 'static,
    ) -> jsonrpc::Result<T> {
        let ticket = TICKET.try_with(|t| t.borrow_mut().take()).ok().flatten();
        let ticket = ticket.unwrap_or_else(|| self.writer.snapshot());
        let snapshot = ticket.await.map_err(|_| jsonrpc::Error::content_modified())?;
        let mut guard = CancelOnDrop(Some(snapshot.cancellation_token()));
        let joined = tokio::task::spawn_blocking(move || catch_unwind(AssertUnwindSafe(|| f(&snapshot)))).await;
        guard.0 = None;
        match joined {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(panic)) if panic.downcast_ref::<salsa::Cancelled>().is_some() => {
                Err(jsonrpc::Error::content_modified())
            }
            Ok(Err(panic)) => {
                let message = format!("internal error: {}", panic_message(&panic));
                self.client.log_message(MessageType::ERROR, &message).await;
                Err(jsonrpc::Error {
                    code: jsonrpc::ErrorCode::InternalError,
                    message: message.into(),
                    data: None,
                })
            }
            Err(_) => Err(jsonrpc::Error::internal_error()),
        }
    }

    /// `tessera/explain`: the `--explain` text of a diagnostic code, for the
    /// links in diagnostics.
    async fn explain(&self, params: ExplainParams) -> jsonrpc::Result<Option<Explanation>> {
        let code = params.code.trim_end_matches(".md");
        Ok(tessera_diagnostics::Code::lookup(code).map(|info| Explanation {
            code: info.code.as_str().to_string(),
            title: info.title.to_string(),
            markdown: format!("# {}: {}\n\n{}\n", info.code, info.title, info.explanation),
        }))
    }
}

#[derive(Deserialize)]
struct ExplainParams {
    code: String,
}

#[derive(Serialize)]
struct Explanation {
    code: String,
    title: String,
    markdown: String,
}

impl LanguageServer for Backend {
    async fn initialize(&self, _: InitializeParams) -> jsonrpc::Result<InitializeResult> {
        Ok(InitializeResult {
            capabilities: capabilities(),
            server_info: Some(ServerInfo {
                name: "tessera-lsp".to_string(),
                version: Some(env!("CARGO_PKG_VERSION").to_string()),
            }),
            offset_encoding: None,
        })
    }

    async fn shutdown(&self) -> jsonrpc::Result<()> {
        self.shut_down.store(true, Ordering::SeqCst);
        Ok(())
    }

    async fn hover(&self, params: HoverParams) -> jsonrpc::Result<Option<Hover>> {
        let p = params.text_document_position_params;
        self.on_snapshot(move |s| hover::hover(s, &p.text_document.uri, p.position))
            .await
    }

    async fn goto_definition(&self, params: GotoDefinitionParams) -> jsonrpc::Result<Option<GotoDefinitionResponse>> {
        let p = params.text_document_position_params;
        self.on_snapshot(move |s| {
            navigation::definition(s, &p.text_document.uri, p.position).map(GotoDefinitionResponse::Scalar)
        })
        .await
    }

    async fn references(&self, params: ReferenceParams) -> jsonrpc::Result<Option<Vec<Location>>> {
        let p = params.text_document_position;
        let include = params.context.include_declaration;
        self.on_snapshot(move |s| Some(navigation::references(s, &p.text_document.uri, p.position, include)))
            .await
    }

    async fn document_symbol(&self, params: DocumentSymbolParams) -> jsonrpc::Result<Option<DocumentSymbolResponse>> {
        let uri = params.text_document.uri;
        self.on_snapshot(move |s| Some(DocumentSymbolResponse::Nested(navigation::document_symbols(s, &uri))))
            .await
    }

    async fn completion(&self, params: CompletionParams) -> jsonrpc::Result<Option<CompletionResponse>> {
        let p = params.text_document_position;
        self.on_snapshot(move |s| {
            Some(CompletionResponse::Array(completion::completion(
                s,
                &p.text_document.uri,
                p.position,
            )))
        })
        .await
    }

    async fn signature_help(&self, params: SignatureHelpParams) -> jsonrpc::Result<Option<SignatureHelp>> {
        let p = params.text_document_position_params;
        self.on_snapshot(move |s| completion::signature_help(s, &p.text_document.uri, p.position))
            .await
    }

    async fn code_action(&self, params: CodeActionParams) -> jsonrpc::Result<Option<CodeActionResponse>> {
        let wants_fixes = params.context.only.as_ref().is_none_or(|kinds| {
            kinds
                .iter()
                .any(|k| CodeActionKind::QUICKFIX.as_str().starts_with(k.as_str()))
        });
        if !wants_fixes {
            return Ok(Some(Vec::new()));
        }
        let uri = params.text_document.uri;
        let range = params.range;
        self.on_snapshot(move |s| {
            let file = s.file_of(&uri)?;
            Some(convert::code_actions(s, file, range))
        })
        .await
    }

    async fn inlay_hint(&self, params: InlayHintParams) -> jsonrpc::Result<Option<Vec<InlayHint>>> {
        let uri = params.text_document.uri;
        let range = params.range;
        self.on_snapshot(move |s| Some(hints::inlay_hints(s, &uri, range)))
            .await
    }

    async fn semantic_tokens_full(
        &self,
        params: SemanticTokensParams,
    ) -> jsonrpc::Result<Option<SemanticTokensResult>> {
        let uri = params.text_document.uri;
        self.on_snapshot(move |s| {
            Some(SemanticTokensResult::Tokens(SemanticTokens {
                result_id: None,
                data: tokens::semantic_tokens(s, &uri),
            }))
        })
        .await
    }
}

fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(PositionEncodingKind::UTF16),
        text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(TextDocumentSyncKind::INCREMENTAL),
            will_save: None,
            will_save_wait_until: None,
            save: None,
        })),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec![".".to_string()]),
            ..CompletionOptions::default()
        }),
        signature_help_provider: Some(SignatureHelpOptions {
            trigger_characters: Some(vec!["(".to_string(), ",".to_string()]),
            retrigger_characters: Some(vec![",".to_string()]),
            work_done_progress_options: WorkDoneProgressOptions::default(),
        }),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        document_symbol_provider: Some(OneOf::Left(true)),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![CodeActionKind::QUICKFIX]),
            work_done_progress_options: WorkDoneProgressOptions::default(),
            resolve_provider: Some(false),
        })),
        inlay_hint_provider: Some(OneOf::Left(true)),
        semantic_tokens_provider: Some(SemanticTokensServerCapabilities::SemanticTokensOptions(
            SemanticTokensOptions {
                work_done_progress_options: WorkDoneProgressOptions::default(),
                legend: tokens::legend(),
                range: Some(false),
                full: Some(SemanticTokensFullOptions::Bool(true)),
            },
        )),
        ..ServerCapabilities::default()
    }
}
