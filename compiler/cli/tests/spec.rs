//! The language reference is tested: its Tessera code blocks parse as their
//! tag says (and its IR blocks, tagged `tir`, parse and verify), and
//! `spec/diagnostics.md` lists exactly the registered codes.

use std::path::{Path, PathBuf};

use tessera_base::FileId;
use tessera_diagnostics::{Code, Diagnostic, CODES};

fn spec_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec")
}

/// `(tag, first line, code)` of every fenced block tagged `tessera`,
/// `tessera-error`, `tir` or `tir-error` in `text`.
fn blocks(text: &str) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut open {
            None => {
                if let Some(tag) = trimmed.strip_prefix("```") {
                    open = Some((tag.trim().to_string(), i + 2, String::new()));
                }
            }
            Some((_, _, code)) if trimmed.starts_with("```") => {
                let _ = code;
                let (tag, line, code) = open.take().expect("a block is open");
                if matches!(tag.as_str(), "tessera" | "tessera-error" | "tir" | "tir-error") {
                    out.push((tag, line, code));
                }
            }
            Some((_, _, code)) => {
                code.push_str(line);
                code.push('\n');
            }
        }
    }
    out
}

#[test]
fn spec_code_blocks_parse_as_tagged() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(spec_dir())
        .expect("spec/ exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (tag, line, code) in blocks(&text) {
            checked += 1;
            let diagnostics = if tag.starts_with("tir") {
                ir_diagnostics(&code)
            } else {
                tessera_syntax::parse(FileId(0), &code).diagnostics
            };
            let errors: Vec<String> = diagnostics
                .iter()
                .filter(|d| d.is_error())
                .map(|d| format!("{} {}", d.code, d.message))
                .collect();
            let name = file.file_name().unwrap().to_string_lossy();
            match tag.as_str() {
                "tessera" | "tir" if !errors.is_empty() => {
                    failures.push(format!("{name}:{line}: block tagged `{tag}` has errors: {errors:?}"))
                }
                "tessera-error" | "tir-error" if errors.is_empty() => {
                    failures.push(format!("{name}:{line}: block tagged `{tag}` has no error"))
                }
                _ => {}
            }
        }
    }
    assert!(checked > 0, "no Tessera code blocks found in spec/");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn diagnostics_chapter_lists_every_code() {
    let text = std::fs::read_to_string(spec_dir().join("diagnostics.md")).expect("spec/diagnostics.md exists");
    let listed: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.len() == 5 && w.starts_with('E') && w[1..].bytes().all(|b| b.is_ascii_digit()))
        .collect();
    for info in CODES {
        assert!(
            listed.contains(&info.code.as_str()),
            "spec/diagnostics.md does not list {}",
            info.code
        );
    }
    for code in &listed {
        assert!(
            CODES.iter().any(|i| i.code.as_str() == *code),
            "spec/diagnostics.md lists {code}, which is not a registered code"
        );
    }
}

/// What `tessera opt` reports for IR text before running passes: parse
/// errors, then the structural verifier's (dialects are not registered
/// here, so IR blocks may use any op).
fn ir_diagnostics(text: &str) -> Vec<Diagnostic> {
    tessera_ir::parse_and_verify(text, FileId(0), &tessera_ir::FileMap::new(), None)
        .err()
        .unwrap_or_default()
}

/// The examples in `--explain` texts are real: a `tessera` block in the
/// explanation of a code makes the compiler report that code (a `tir` block
/// is IR text, checked as `tessera opt` checks it).
#[test]
fn explanation_examples_report_their_code() {
    let mut demonstrated = 0;
    for info in CODES {
        assert!(!info.title.is_empty(), "{} has no title", info.code);
        for (tag, _, example) in blocks(info.explanation) {
            let diagnostics = if tag.starts_with("tir") {
                ir_diagnostics(&example)
            } else {
                let mut sources = tessera_driver::Sources::default();
                let file = sources.add("example.tsr".into(), tessera_driver::Input::Stdin, example.clone());
                tessera_driver::check_and_lower(&sources, file)
            };
            let codes: Vec<_> = diagnostics.iter().map(|d| d.code).collect();
            assert!(
                codes.contains(&info.code),
                "the example of {} reports {codes:?}:\n{example}",
                info.code
            );
            demonstrated += 1;
        }
    }
    // The runtime's codes (E1xxx) are reported by running a program; their
    // examples are checked by `runtime/tests/explain.rs`.
    // E0904 is reported by code generation, after lowering; its test is
    // `compiler/cli/tests/codegen.rs`.
    let checker_codes = CODES
        .iter()
        .filter(|i| !i.code.as_str().starts_with("E1") && i.code != Code::E0904)
        .count();
    assert!(demonstrated >= checker_codes - 3, "most codes should have an example");
}
