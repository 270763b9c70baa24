// The Tessera extension: starts `tessera-lsp` (the path is the setting
// `tessera.server.path`) and connects VS Code to it over stdio. It also
// serves the `tessera-explain:` links of diagnostics (and the command
// "Tessera: Explain Error Code") with the `--explain` text, which it asks
// the server for.

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

/** @type {LanguageClient | undefined} */
let client;

function serverOptions() {
  const config = vscode.workspace.getConfiguration("tessera");
  const command = config.get("server.path", "tessera-lsp");
  const extraEnv = config.get("server.extraEnv", {});
  const executable = {
    command,
    transport: TransportKind.stdio,
    options: { env: { ...process.env, ...extraEnv } },
  };
  return { run: executable, debug: executable };
}

async function start() {
  client = new LanguageClient(
    "tessera",
    "Tessera",
    serverOptions(),
    {
      documentSelector: [
        { scheme: "file", language: "tessera" },
        { scheme: "untitled", language: "tessera" },
      ],
      synchronize: {
        // Modules that open files import are read from disk; tell the
        // server when they change.
        fileEvents: vscode.workspace.createFileSystemWatcher("**/*.tsr"),
      },
    },
  );
  try {
    await client.start();
  } catch (error) {
    const command = vscode.workspace.getConfiguration("tessera").get("server.path");
    vscode.window.showErrorMessage(
      `Tessera: could not start \`${command}\` (${error}). Build it with ` +
        "`cargo build --release -p tessera-lsp` and set `tessera.server.path`.",
    );
  }
}

async function stop() {
  if (client) {
    const running = client;
    client = undefined;
    await running.stop();
  }
}

/** The `tessera-explain:E0205.md` documents. */
class ExplainProvider {
  async provideTextDocumentContent(uri) {
    const code = uri.path.replace(/\.md$/, "");
    if (!client) {
      return `The Tessera language server is not running, so ${code} cannot be explained.`;
    }
    const explanation = await client.sendRequest("tessera/explain", { code });
    return explanation ? explanation.markdown : `There is no error code ${code}.`;
  }
}

async function explain(code) {
  const wanted =
    typeof code === "string"
      ? code
      : await vscode.window.showInputBox({ prompt: "Tessera error code", placeHolder: "E0205" });
  if (!wanted) {
    return;
  }
  const uri = vscode.Uri.parse(`tessera-explain:${wanted.trim().toUpperCase()}.md`);
  await vscode.commands.executeCommand("markdown.showPreview", uri);
}

async function activate(context) {
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider("tessera-explain", new ExplainProvider()),
    vscode.commands.registerCommand("tessera.explain", explain),
    vscode.commands.registerCommand("tessera.restartServer", async () => {
      await stop();
      await start();
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("tessera.server")) {
        await stop();
        await start();
      }
    }),
  );
  await start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate };
