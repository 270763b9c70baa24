//! The UI test harness: every `tests/ui/**/*.tsr` is checked with the real
//! `tessera` binary and its output compared with the blessed `.stderr` (and
//! `.stdout`, when the command prints one) beside it. `TESSERA_BLESS=1`
//! rewrites the expected files.
//!
//! Inline annotations say which errors a file must produce:
//! `#~ ERROR E0031` expects an error with that code on the same line;
//! `#~^ ERROR E0031` on the line above (one `^` per line up). Every error
//! must be annotated and every annotation matched.
//!
//! The arguments are `check --color=never` and the file's path; a file
//! `ui-args` in the test's directory replaces the first part for every test
//! there (`check --color=never --syntax-only` for the syntax corpus), and a
//! first line `# ui-args: ...` in a test replaces it for that test.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn collect(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
    out.sort();
}

struct Run {
    stdout: String,
    stderr: String,
    code: i32,
}

fn tessera(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .current_dir(workspace_root())
        .output()
        .expect("the tessera binary runs");
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// `(line, code)` pairs from `#~` annotations (1-based lines).
fn annotations(text: &str) -> Vec<(usize, String)> {
    let mut expected = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(at) = line.find("#~") else { continue };
        let rest = &line[at + 2..];
        let up = rest.chars().take_while(|&c| c == '^').count();
        let mut words = rest[up..].split_whitespace();
        if words.next() == Some("ERROR") {
            if let Some(code) = words.next() {
                expected.push((i + 1 - up, code.to_string()));
            }
        }
    }
    expected.sort();
    expected
}

/// `(line, code)` of every error the compiler reports in `rel` itself (those
/// in the modules it imports are annotated there), and whether it reports
/// any error at all.
fn reported(rel: &str, syntax_only: bool) -> (Vec<(usize, String)>, bool) {
    let mut args = vec!["check", "--message-format=json", rel];
    if syntax_only {
        args.push("--syntax-only");
    }
    let run = tessera(&args);
    let errors: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("each JSON line parses"))
        .filter(|d| d["severity"] == "error")
        .collect();
    let mut found: Vec<(usize, String)> = errors
        .iter()
        .filter(|d| d["file"] == rel)
        .map(|d| {
            (
                d["line"].as_u64().unwrap_or(0) as usize,
                d["code"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    found.sort();
    (found, !errors.is_empty())
}

fn compare_or_bless(path: &Path, actual: &str, failures: &mut Vec<String>) {
    let bless = std::env::var_os("TESSERA_BLESS").is_some();
    let expected = std::fs::read_to_string(path).unwrap_or_default();
    if expected == actual {
        return;
    }
    if bless {
        if actual.is_empty() {
            let _ = std::fs::remove_file(path);
        } else {
            std::fs::write(path, actual).unwrap();
        }
    } else {
        failures.push(format!(
            "{}: output differs (run with TESSERA_BLESS=1 to update)\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display()
        ));
    }
}

#[test]
fn ui() {
    let root = workspace_root();
    let mut files = Vec::new();
    collect(&root.join("tests/ui"), "tsr", &mut files);
    assert!(files.len() >= 40, "expected the UI corpus, found {} files", files.len());
    let mut failures = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let dir_args = file
            .parent()
            .and_then(|d| std::fs::read_to_string(d.join("ui-args")).ok());
        let custom = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# ui-args:"))
            .map(str::to_string);
        let mut args: Vec<String> = match custom.or(dir_args) {
            Some(custom) => custom.split_whitespace().map(str::to_string).collect(),
            None => vec!["check".into(), "--color=never".into()],
        };
        let syntax_only = args.iter().any(|a| a == "--syntax-only");
        args.push(rel.clone());
        let run = tessera(&args.iter().map(String::as_str).collect::<Vec<_>>());
        if run.code == 101 || run.stderr.contains("panicked") {
            failures.push(format!("{rel}: the compiler crashed:\n{}", run.stderr));
            continue;
        }
        compare_or_bless(&file.with_extension("stderr"), &run.stderr, &mut failures);
        compare_or_bless(&file.with_extension("stdout"), &run.stdout, &mut failures);

        let expected = annotations(&text);
        let (found, any_error) = reported(&rel, syntax_only);
        if expected != found {
            failures.push(format!("{rel}: annotated errors {expected:?}, reported {found:?}"));
        }
        let expected_exit = i32::from(any_error);
        if args[0] == "check" && !args.iter().any(|a| a == "--explain") && run.code != expected_exit {
            failures.push(format!("{rel}: exit code {} (expected {expected_exit})", run.code));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} UI tests failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

/// Every example checks clean.
#[test]
fn examples_check_clean() {
    let run = tessera(&["check", "--message-format=short", "examples"]);
    assert_eq!(run.code, 0, "`tessera check examples` reported:\n{}", run.stderr);
}

/// Each verbatim seed code block reports exactly the codes that
/// `spec/conformance.md` documents for it ("clean" for none).
#[test]
fn seeds_conform_as_documented() {
    let root = workspace_root();
    let table = std::fs::read_to_string(root.join("spec/conformance.md")).unwrap();
    let mut seeds = Vec::new();
    collect(&root.join("tests/seeds"), "tsr", &mut seeds);
    assert!(!seeds.is_empty());
    for seed in seeds {
        let name = seed.file_name().unwrap().to_string_lossy().into_owned();
        let row = table
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("spec/conformance.md has no row for {name}"));
        let documented: Vec<String> = row
            .split('|')
            .nth(4)
            .unwrap_or("")
            .split_whitespace()
            .filter(|w| *w != "clean")
            .map(|w| w.trim_matches(',').to_string())
            .collect();
        let rel = format!("tests/seeds/{name}");
        let mut reported: Vec<String> = reported(&rel, false).0.into_iter().map(|(_, code)| code).collect();
        reported.dedup();
        assert_eq!(
            reported, documented,
            "{name}: reported codes differ from spec/conformance.md"
        );
    }
}
