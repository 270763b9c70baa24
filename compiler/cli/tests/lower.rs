//! The lowering tests.
//!
//! * `tests/lower/*.tsr`: the first line is `# RUN: build ARGS`; the file
//!   is built with `tessera build ARGS FILE`, and either its `# CHECK…`
//!   directives (see `tessera-filecheck`) match standard output, or each
//!   `# ERROR: text` line appears in its diagnostics (exit status 1).
//! * Every example lowers through all four layers for sm_80, sm_90a and
//!   gfx942 with every layer verified, and each layer's text round-trips
//!   (parse, print: the same text).
//! * Every seed that checks clean lowers the same way, except those
//!   `spec/conformance.md` lists as not lowering, with the reason.

mod common;

use std::path::Path;

use common::{root, tessera};

fn tsr_files(dir: &str) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsr"))
        .map(|p| format!("{dir}/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    files.sort();
    files
}

#[test]
fn lowering_corpus() {
    let files = tsr_files("tests/lower");
    assert!(files.len() >= 4, "the lowering corpus is missing");
    let mut failures = Vec::new();
    for rel in &files {
        let text = std::fs::read_to_string(root().join(rel)).unwrap();
        let Some(args) = text.lines().next().and_then(|l| l.strip_prefix("# RUN: build")) else {
            failures.push(format!("{rel}: the first line must be `# RUN: build ARGS`"));
            continue;
        };
        let mut argv: Vec<&str> = vec!["build"];
        argv.extend(args.split_whitespace());
        argv.push(rel);
        let out = tessera(&argv);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("# ERROR: ")).collect();
        if errors.is_empty() {
            if !out.status.success() {
                failures.push(format!("{rel}: build failed:\n{stderr}"));
            } else if let Err(e) = tessera_filecheck::check(&text, &stdout, &tessera_filecheck::Options::default()) {
                failures.push(format!("{rel}: {e}\n--- output\n{stdout}"));
            }
        } else {
            if out.status.code() != Some(1) {
                failures.push(format!("{rel}: expected exit status 1, got {:?}", out.status.code()));
            }
            for e in errors {
                if !stderr.contains(e) {
                    failures.push(format!("{rel}: diagnostics lack `{e}`:\n{stderr}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

const LAYERS: &str = "graph-ir,schedule-ir,tile-ir,target-ir";

/// Builds `rel` for `target`, emitting every layer into a fresh directory,
/// and checks that each layer round-trips.
fn lowers(rel: &str, target: &str) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!(
        "tessera-lower-{}-{target}-{}",
        std::process::id(),
        rel.replace('/', "_")
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let out = tessera(&[
        "build",
        rel,
        "--target",
        target,
        "--emit",
        LAYERS,
        "-o",
        dir.to_str().unwrap(),
    ]);
    if !out.status.success() {
        return Err(format!(
            "{rel} ({target}): build failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let stem = Path::new(rel).file_stem().unwrap().to_string_lossy().into_owned();
    for layer in LAYERS.split(',') {
        let path = dir.join(format!("{stem}.{layer}.tir"));
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let module = tessera_ir::parse(&text).map_err(|e| format!("{rel} ({target}) {layer}: {e:?}"))?;
        if tessera_ir::print_module(&module) != text {
            return Err(format!("{rel} ({target}) {layer}: printing the parsed text changes it"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[test]
fn examples_lower_through_every_layer() {
    let not_lowering = not_lowering();
    let mut failures = Vec::new();
    for rel in tsr_files("examples") {
        let name = Path::new(&rel).file_name().unwrap().to_string_lossy().into_owned();
        for target in ["sm_80", "sm_90a", "gfx942"] {
            match (lowers(&rel, target), not_lowering.contains(&name)) {
                (Ok(()), true) => failures.push(format!("{rel} lowers, but spec/conformance.md says it does not")),
                (Err(e), false) => failures.push(e),
                _ => {}
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The files `spec/conformance.md` says do not lower (the "lowers" column
/// is `no`); every other example and seed that checks clean must.
fn not_lowering() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("spec/conformance.md")).unwrap();
    let section = text
        .split("## Lowering")
        .nth(1)
        .expect("spec/conformance.md has a Lowering section");
    section
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells.len() > 3 && cells[2] == "no").then(|| cells[1].trim_matches('`').to_string())
        })
        .collect()
}

#[test]
fn seeds_lower_as_documented() {
    let not_lowering = not_lowering();
    let mut failures = Vec::new();
    for rel in tsr_files("tests/seeds") {
        let name = Path::new(&rel).file_name().unwrap().to_string_lossy().into_owned();
        if !tessera(&["check", &rel]).status.success() {
            continue;
        }
        let result = lowers(&rel, "sm_90a");
        match (result, not_lowering.contains(&name)) {
            (Ok(()), true) => failures.push(format!("{rel} lowers, but spec/conformance.md says it does not")),
            (Err(e), false) => failures.push(e),
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
