//! The IR test harness: every `tests/ir/**/*.tir` runs through the real
//! `tessera opt` and is checked against the expectations it carries.
//!
//! The first line says how to run it: `// RUN: opt ARGS`, the file's path
//! appended (or put where `%s` is), optionally followed by
//! `| filecheck --check-prefix=P` (or `--check-prefixes=P,Q`). Then either
//! - FileCheck directives (`// CHECK: ...`, see `tessera-filecheck`),
//!   matched against standard output; the command must succeed; or
//! - `// ERROR: text` lines: the command must exit with status 1, and each
//!   text must appear in its diagnostics (standard error).
//!
//! Also, every file that parses and verifies structurally prints, parses
//! back and prints again to the same text.

use std::path::{Path, PathBuf};
use std::process::Command;

use tessera_filecheck::Options;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn corpus() -> Vec<PathBuf> {
    fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                collect(&path, out);
            } else if path.extension().is_some_and(|e| e == "tir") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    collect(&workspace_root().join("tests/ir"), &mut files);
    files.sort();
    files
}

/// A test file's command: the arguments of `tessera opt` and the
/// FileCheck prefixes.
struct RunLine {
    args: Vec<String>,
    prefixes: Vec<String>,
}

fn run_line(text: &str, rel: &str) -> Result<RunLine, String> {
    let first = text.lines().next().unwrap_or_default();
    let Some(command) = first.strip_prefix("// RUN: opt") else {
        return Err(format!("{rel}: the first line must be `// RUN: opt ARGS`"));
    };
    let (opt, filecheck) = command.split_once('|').unwrap_or((command, ""));
    let mut args: Vec<String> = vec!["opt".into(), "--color=never".into()];
    let mut placed = false;
    for word in opt.split_whitespace() {
        if word == "%s" {
            args.push(rel.to_string());
            placed = true;
        } else {
            args.push(word.to_string());
        }
    }
    if !placed {
        args.push(rel.to_string());
    }
    let mut words = filecheck.split_whitespace();
    let mut prefixes = Vec::new();
    match words.next() {
        None => {}
        Some("filecheck") => {
            for word in words {
                if let Some(p) = word.strip_prefix("--check-prefix=") {
                    prefixes.push(p.to_string());
                } else if let Some(ps) = word.strip_prefix("--check-prefixes=") {
                    prefixes.extend(ps.split(',').map(str::to_string));
                } else {
                    return Err(format!("{rel}: unknown filecheck option `{word}`"));
                }
            }
        }
        Some(other) => return Err(format!("{rel}: cannot pipe into `{other}`, only into `filecheck`")),
    }
    if prefixes.is_empty() {
        prefixes.push("CHECK".into());
    }
    Ok(RunLine { args, prefixes })
}

fn check_file(path: &Path, root: &Path) -> Result<(), String> {
    let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{rel}: {e}"))?;
    let run = run_line(&text, &rel)?;
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(&run.args)
        .current_dir(root)
        .output()
        .expect("the tessera binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code().unwrap_or(-1);
    if code == 101 || stderr.contains("panicked") {
        return Err(format!("{rel}: the compiler crashed:\n{stderr}"));
    }
    let errors: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once("// ERROR:").map(|(_, e)| e.trim()))
        .collect();
    if !errors.is_empty() {
        if code != 1 {
            return Err(format!("{rel}: exit status {code}, expected 1\n{stderr}"));
        }
        let missing: Vec<&&str> = errors.iter().filter(|e| !stderr.contains(**e)).collect();
        if !missing.is_empty() {
            return Err(format!("{rel}: the diagnostics lack {missing:?}:\n{stderr}"));
        }
        return Ok(());
    }
    if code != 0 {
        return Err(format!("{rel}: exit status {code}, expected 0\n{stderr}"));
    }
    tessera_filecheck::check(&text, &stdout, &Options::with_prefixes(run.prefixes))
        .map_err(|e| format!("{rel}: {e}--- output of `tessera {}`\n{stdout}", run.args.join(" ")))
}

#[test]
fn ir_corpus() {
    let root = workspace_root();
    let files = corpus();
    assert!(files.len() >= 10, "expected the IR corpus, found {} files", files.len());
    let failures: Vec<String> = files.iter().filter_map(|f| check_file(f, &root).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} IR tests failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

#[test]
fn ir_corpus_round_trips() {
    let mut round_tripped = 0;
    let mut failures = Vec::new();
    for file in corpus() {
        let text = std::fs::read_to_string(&file).unwrap();
        let Ok(module) = tessera_ir::parse(&text) else { continue };
        if !tessera_ir::verify_structure(&module).is_empty() {
            continue;
        }
        let printed = tessera_ir::print_module(&module);
        match tessera_ir::parse(&printed) {
            Ok(again) if tessera_ir::print_module(&again) == printed => round_tripped += 1,
            Ok(again) => failures.push(format!(
                "{}: printing what was parsed changes the text:\n--- first\n{printed}--- second\n{}",
                file.display(),
                tessera_ir::print_module(&again)
            )),
            Err(e) => failures.push(format!(
                "{}: the printed text does not parse: {e}\n{printed}",
                file.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(round_tripped >= 5, "only {round_tripped} files round-tripped");
}

#[test]
fn opt_writes_to_a_file_and_reports_usage_errors() {
    let root = workspace_root();
    let out_dir = std::env::temp_dir().join(format!("tessera-opt-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let out_file = out_dir.join("out.tir");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(args)
            .current_dir(&root)
            .output()
            .expect("the tessera binary runs")
    };
    let input = "tests/ir/core/names.tir";
    let written = run(&["opt", input, "-o", out_file.to_str().unwrap()]);
    assert_eq!(written.status.code(), Some(0));
    assert!(written.stdout.is_empty());
    let printed = run(&["opt", input]);
    assert_eq!(std::fs::read(&out_file).unwrap(), printed.stdout);
    let _ = std::fs::remove_dir_all(&out_dir);

    let unknown_pass = run(&["opt", input, "--pass", "nope"]);
    assert_eq!(unknown_pass.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown_pass.stderr).contains("unknown pass `nope`; the passes are: cse, dce"));
    let missing = run(&["opt", "tests/ir/core/does-not-exist.tir"]);
    assert_eq!(missing.status.code(), Some(2));
    let listed = run(&["opt", "--list-passes"]);
    assert!(String::from_utf8_lossy(&listed.stdout).starts_with("cse "));
    let timed = run(&["opt", input, "--pass", "cse", "--time-passes"]);
    assert!(String::from_utf8_lossy(&timed.stderr).contains(" cse\n"));
}
