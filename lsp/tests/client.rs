//! The server against a real LSP client: pygls (from the test environment
//! that `scripts/setup.sh` makes in `.venv`) drives the built binary over
//! stdio through the scenarios of `tests/client/scenarios.py`, each of which
//! checks the content of what it gets back.

use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> PathBuf {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    assert!(
        venv.exists(),
        "{} is missing: run scripts/setup.sh to make the test environment",
        venv.display()
    );
    venv
}

fn scenario(name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/client");
    let output = Command::new(python())
        .arg(dir.join("scenarios.py"))
        .arg(name)
        .arg(env!("CARGO_BIN_EXE_tessera-lsp"))
        .current_dir(&dir)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains(&format!("{name}: ok")),
        "scenario {name} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
}

#[test]
fn open_reports_diagnostics() {
    scenario("open_reports_diagnostics");
}

#[test]
fn edit_updates_and_clears_diagnostics() {
    scenario("edit_updates_and_clears_diagnostics");
}

#[test]
fn hover_shows_shapes() {
    scenario("hover_shows_shapes");
}

#[test]
fn definition_location() {
    scenario("definition_location");
}

#[test]
fn comprehension_variables_are_their_own() {
    scenario("comprehension_variables_are_their_own");
}

#[test]
fn code_action_fixes_the_error() {
    scenario("code_action_fixes_the_error");
}

#[test]
fn completion_and_signature_help() {
    scenario("completion_and_signature_help");
}

#[test]
fn outline_hints_and_tokens() {
    scenario("outline_hints_and_tokens");
}

#[test]
fn modules_created_and_deleted_on_disk() {
    scenario("modules_created_and_deleted_on_disk");
}

#[test]
fn modules_that_are_not_open() {
    scenario("modules_that_are_not_open");
}

#[test]
fn unnormalized_uris_find_sibling_modules() {
    scenario("unnormalized_uris_find_sibling_modules");
}

#[test]
fn module_members() {
    scenario("module_members");
}
