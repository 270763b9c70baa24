//! What the CLI test binaries share: the repository root, running the
//! built `tessera` there, its output as text, and fresh temporary folders.
//! Each test binary uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository's root folder.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The built `tessera` with `args`, to run in the repository's root.
pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tessera"));
    c.args(args).current_dir(root());
    c
}

/// Runs the built `tessera` with `args` in the repository's root.
pub fn tessera(args: &[&str]) -> Output {
    command(args).output().expect("tessera runs")
}

/// Standard output and standard error, as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// An empty temporary folder for test `name` of `suite`, this process's own.
pub fn temp(suite: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tessera-{suite}-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The test environment's Python (`.venv`, made by `scripts/setup.sh`).
pub fn venv_python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup.sh to make the test environment",
        python.display()
    );
    python
}
