#!/usr/bin/env bash
# Builds the VS Code extension into lsp/vscode/tessera.vsix: installs the
# npm packages pinned in package-lock.json, bundles the client with esbuild
# and packages it with vsce. Needs node and npm only: no VS Code and no
# marketplace account. Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
npm ci --no-audit --no-fund --loglevel=error
npm run --silent package
echo "package.sh: built $(pwd)/tessera.vsix" >&2
