//! The VS Code extension: `vscode/package.sh` builds the `.vsix` from the
//! pinned npm packages (so the test command produces it), and the package
//! holds the manifest, the bundled client, the grammar and the language
//! configuration; the grammar's patterns compile and colour a sample line.

use std::path::{Path, PathBuf};
use std::process::Command;

fn vscode_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("vscode")
}

/// The names and uncompressed sizes of the entries of a zip archive, read
/// from its central directory.
fn zip_entries(bytes: &[u8]) -> Vec<(String, u32)> {
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]) as usize;
    let u32_at = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    let end = (0..bytes.len().saturating_sub(21))
        .rev()
        .find(|&i| u32_at(i) == 0x0605_4b50)
        .expect("a zip archive ends with its central directory");
    let count = u16_at(end + 10);
    let mut at = u32_at(end + 16) as usize;
    let mut entries = Vec::new();
    for _ in 0..count {
        assert_eq!(u32_at(at), 0x0201_4b50, "a central directory entry");
        let size = u32_at(at + 24);
        let (name_len, extra_len, comment_len) = (u16_at(at + 28), u16_at(at + 30), u16_at(at + 32));
        let name = String::from_utf8_lossy(&bytes[at + 46..at + 46 + name_len]).into_owned();
        entries.push((name, size));
        at += 46 + name_len + extra_len + comment_len;
    }
    entries
}

#[test]
fn the_extension_packages_into_a_vsix() {
    let dir = vscode_dir();
    let vsix = dir.join("tessera.vsix");
    let _ = std::fs::remove_file(&vsix);
    let output = Command::new("bash")
        .arg(dir.join("package.sh"))
        .output()
        .expect("bash runs package.sh");
    assert!(
        output.status.success(),
        "package.sh failed ({}); it needs node and npm:\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let entries = zip_entries(&std::fs::read(&vsix).expect("package.sh wrote tessera.vsix"));
    let size_of = |name: &str| entries.iter().find(|(n, _)| n == name).map(|(_, s)| *s);
    for name in [
        "extension.vsixmanifest",
        "extension/package.json",
        "extension/language-configuration.json",
        "extension/syntaxes/tessera.tmLanguage.json",
    ] {
        assert!(size_of(name).is_some(), "{name} is missing from the .vsix: {entries:?}");
    }
    // The client is bundled with its dependencies: no node_modules ship.
    let bundle = size_of("extension/dist/extension.js").expect("the bundled client");
    assert!(
        bundle > 50_000,
        "the bundle ({bundle} bytes) lacks vscode-languageclient"
    );
    assert!(
        entries
            .iter()
            .all(|(n, _)| !n.contains("node_modules") && !n.contains("/src/")),
        "sources or node_modules in the .vsix: {entries:?}"
    );
    let bundled = std::fs::read_to_string(dir.join("dist/extension.js")).expect("the bundle");
    for needle in [
        "tessera/explain",
        "tessera-explain",
        "tessera.server",
        "onDidChangeConfiguration",
    ] {
        assert!(bundled.contains(needle), "the bundle lacks `{needle}`");
    }
}

#[test]
fn the_manifest_wires_the_language_grammar_and_server_setting() {
    let dir = vscode_dir();
    let read = |p: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(p)).expect(p)).expect(p)
    };
    let manifest = read("package.json");
    let language = &manifest["contributes"]["languages"][0];
    assert_eq!(language["id"], "tessera");
    assert_eq!(language["extensions"][0], ".tsr");
    assert_eq!(manifest["contributes"]["grammars"][0]["scopeName"], "source.tessera");
    assert_eq!(
        manifest["contributes"]["configuration"]["properties"]["tessera.server.path"]["default"],
        "tessera-lsp"
    );
    assert_eq!(manifest["activationEvents"][0], "onLanguage:tessera");
    let config = read("language-configuration.json");
    assert_eq!(config["comments"]["lineComment"], "#");
    let indent = config["onEnterRules"][0]["beforeText"]
        .as_str()
        .expect("an indentation rule");
    assert!(
        indent.ends_with(":\\s*(#.*)?$"),
        "indent after a line ending in `:`: {indent}"
    );
    let grammar = read("syntaxes/tessera.tmLanguage.json");
    assert_eq!(grammar["scopeName"], "source.tessera");
}

/// Every pattern of the grammar compiles (as a JavaScript regular
/// expression, close to the Oniguruma dialect VS Code uses for these) and a
/// typical line gets the expected scopes.
#[test]
fn the_grammar_patterns_compile_and_match() {
    let grammar = vscode_dir().join("syntaxes/tessera.tmLanguage.json");
    let script = r#"
const grammar = require(process.argv[1]);
const patterns = [];
(function collect(node) {
  if (Array.isArray(node)) return node.forEach(collect);
  if (node && typeof node === "object") {
    for (const key of ["match", "begin", "end"]) if (typeof node[key] === "string") patterns.push([node[key], node.name || (node.captures && node.captures["1"] && node.captures["1"].name) || (node.captures && node.captures["2"] && node.captures["2"].name)]);
    Object.values(node).forEach(collect);
  }
})(grammar.repository);
const compiled = patterns.map(([p, name]) => [new RegExp(p, "m"), name]);
const line = "def attn(q: bf16[B, S, D], out: mut f32[B, S]) effects(random) where D % 8 == 0:  # 16_KiB";
const found = new Set();
for (const [re, name] of compiled) if (name && re.test(line)) found.add(name);
console.log(JSON.stringify({count: compiled.length, found: [...found]}));
"#;
    let output = Command::new("node")
        .arg("-e")
        .arg(script)
        .arg(&grammar)
        .output()
        .expect("node runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON from node");
    assert!(result["count"].as_u64().unwrap_or(0) >= 20, "{result}");
    let found: Vec<&str> = result["found"]
        .as_array()
        .expect("scopes")
        .iter()
        .filter_map(|s| s.as_str())
        .collect();
    for scope in [
        "storage.type.function.tessera",
        "support.type.primitive.tessera",
        "storage.modifier.tessera",
        "comment.line.number-sign.tessera",
        "constant.numeric.decimal.tessera",
    ] {
        assert!(
            found.contains(&scope),
            "`{scope}` does not match the sample line: {found:?}"
        );
    }
}
