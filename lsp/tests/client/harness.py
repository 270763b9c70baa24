"""A real LSP client (pygls) driving tessera-lsp over stdio, for the tests.

`Session` starts the server, does the initialize handshake, and offers
synchronous helpers; every response is parsed by pygls into lsprotocol's
types, so a malformed answer fails the test.
"""

import asyncio
import pathlib
import sys

from lsprotocol import types as t
from pygls.lsp.client import LanguageClient

TIMEOUT = 30


def uri_of(path):
    return pathlib.Path(path).resolve().as_uri()


class Session:
    def __init__(self, server):
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.client = LanguageClient("tessera-lsp-tests", "1")
        self.published = {}
        self.versions = {}
        self.texts = {}
        self.logs = []
        self.changed = asyncio.Event()

        @self.client.feature(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params):
            self.published.setdefault(params.uri, []).append(params)
            self.changed.set()

        @self.client.feature(t.WINDOW_LOG_MESSAGE)
        def on_log(params):
            self.logs.append(params.message)

        self.run(self.client.start_io(server))
        result = self.run(
            self.client.initialize_async(
                t.InitializeParams(capabilities=t.ClientCapabilities(), process_id=None)
            )
        )
        assert result.server_info.name == "tessera-lsp", result
        self.capabilities = result.capabilities
        self.client.initialized(t.InitializedParams())

    def run(self, coroutine):
        return self.loop.run_until_complete(asyncio.wait_for(coroutine, TIMEOUT))

    def close(self):
        self.run(self.client.shutdown_async(None))
        self.client.exit(None)
        self.run(self.client.stop())
        assert not self.logs, f"the server logged errors: {self.logs}"

    # ---------------------------------------------------------------- documents

    def open(self, path, text=None):
        text = pathlib.Path(path).read_text() if text is None else text
        return self.open_uri(uri_of(path), text)

    def open_uri(self, uri, text):
        self.versions[uri] = 1
        self.texts[uri] = text
        self.client.text_document_did_open(
            t.DidOpenTextDocumentParams(t.TextDocumentItem(uri, "tessera", 1, text))
        )
        return uri

    def close_doc(self, uri):
        self.client.text_document_did_close(t.DidCloseTextDocumentParams(self.doc(uri)))

    def change(self, uri, edits):
        """Applies `edits` ((start, end, text) with (line, character) pairs)
        one after another, as one incremental didChange."""
        changes = []
        for (sl, sc), (el, ec), new in edits:
            rng = t.Range(t.Position(sl, sc), t.Position(el, ec))
            changes.append(t.TextDocumentContentChangePartial(range=rng, text=new))
            self.texts[uri] = apply_text_edits(self.texts[uri], [(rng, new)])
        self.versions[uri] += 1
        self.client.text_document_did_change(
            t.DidChangeTextDocumentParams(
                t.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]), changes
            )
        )

    def replace(self, uri, text):
        self.versions[uri] += 1
        self.texts[uri] = text
        self.client.text_document_did_change(
            t.DidChangeTextDocumentParams(
                t.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                [t.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def diagnostics(self, uri):
        """The diagnostics published for the document's current version."""
        version = self.versions[uri]

        async def wait():
            while True:
                for p in self.published.get(uri, []):
                    if p.version == version:
                        return list(p.diagnostics)
                self.changed.clear()
                await self.changed.wait()

        return self.run(wait())

    def published_count(self, uri):
        return len(self.published.get(uri, []))

    def next_diagnostics(self, uri, seen):
        """The diagnostics of the first publication for `uri` after the
        `seen` first ones (a republication after files changed on disk)."""

        async def wait():
            while len(self.published.get(uri, [])) <= seen:
                self.changed.clear()
                await self.changed.wait()
            return list(self.published[uri][seen].diagnostics)

        return self.run(wait())

    def files_changed(self, changes):
        """Sends `workspace/didChangeWatchedFiles` for (path, FileChangeType) pairs."""
        events = [t.FileEvent(uri_of(path), kind) for path, kind in changes]
        self.client.workspace_did_change_watched_files(t.DidChangeWatchedFilesParams(events))

    # ---------------------------------------------------------------- requests

    def doc(self, uri):
        return t.TextDocumentIdentifier(uri)

    def hover(self, uri, line, character):
        return self.run(
            self.client.text_document_hover_async(
                t.HoverParams(self.doc(uri), t.Position(line, character))
            )
        )

    def definition(self, uri, line, character):
        return self.run(
            self.client.text_document_definition_async(
                t.DefinitionParams(self.doc(uri), t.Position(line, character))
            )
        )

    def references(self, uri, line, character):
        return self.run(
            self.client.text_document_references_async(
                t.ReferenceParams(
                    t.ReferenceContext(include_declaration=True),
                    self.doc(uri),
                    t.Position(line, character),
                )
            )
        )

    def completion(self, uri, line, character):
        result = self.run(
            self.client.text_document_completion_async(
                t.CompletionParams(self.doc(uri), t.Position(line, character))
            )
        )
        return result.items if isinstance(result, t.CompletionList) else result

    def signature_help(self, uri, line, character):
        return self.run(
            self.client.text_document_signature_help_async(
                t.SignatureHelpParams(self.doc(uri), t.Position(line, character))
            )
        )

    def code_actions(self, uri, diagnostic):
        return self.run(
            self.client.text_document_code_action_async(
                t.CodeActionParams(
                    self.doc(uri),
                    diagnostic.range,
                    t.CodeActionContext(diagnostics=[diagnostic]),
                )
            )
        )

    def inlay_hints(self, uri, start=(0, 0), end=(10_000, 0)):
        return self.run(
            self.client.text_document_inlay_hint_async(
                t.InlayHintParams(self.doc(uri), t.Range(t.Position(*start), t.Position(*end)))
            )
        )

    def symbols(self, uri):
        return self.run(
            self.client.text_document_document_symbol_async(
                t.DocumentSymbolParams(self.doc(uri))
            )
        )

    def semantic_tokens(self, uri):
        return self.run(
            self.client.text_document_semantic_tokens_full_async(
                t.SemanticTokensParams(self.doc(uri))
            )
        )

    def explain(self, code):
        return self.run(self.client.protocol.send_request_async("tessera/explain", {"code": code}))


def position_to_offset(text, position):
    """A UTF-16 position to an index into `text` (clamped to the line)."""
    lines = text.split("\n")
    line = min(position.line, len(lines) - 1)
    start = sum(len(l) + 1 for l in lines[:line])
    units = 0
    for i, ch in enumerate(lines[line]):
        if units >= position.character:
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return start + len(lines[line])


def apply_text_edits(text, edits):
    """Applies (range, new_text) edits of one version of `text`, last first."""
    spans = sorted(
        ((position_to_offset(text, r.start), position_to_offset(text, r.end), new) for r, new in edits),
        reverse=True,
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def apply_workspace_edit(session, edit):
    """Applies a WorkspaceEdit to the open documents, as an editor would,
    and sends the result as a full-text change."""
    for uri, edits in (edit.changes or {}).items():
        text = apply_text_edits(session.texts[uri], [(e.range, e.new_text) for e in edits])
        session.replace(uri, text)


def main(scenarios):
    name, server = sys.argv[1], sys.argv[2]
    scenario = scenarios.get(name)
    if scenario is None:
        raise SystemExit(f"no scenario {name!r}; known: {', '.join(sorted(scenarios))}")
    session = Session(server)
    try:
        scenario(session)
    finally:
        session.close()
    print(f"{name}: ok")
