//! Host code checked against CPython itself (the test environment's
//! `.venv` interpreter): random programs over ints, floats, strings,
//! lists, tuples and dicts (`tests/python/host_compare.py`) printed by
//! `tessera run` and by Python, line for line. The seeds are fixed, so a
//! failure reproduces; the script takes any seed to explore further.

mod common;

use std::path::Path;
use std::process::Command;

use common::{temp, text, venv_python};

#[test]
fn host_programs_print_what_python_prints() {
    let python = venv_python();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/host_compare.py");
    let dir = temp("python", "host");
    for seed in 1..=3 {
        let o = Command::new(&python)
            .arg(&script)
            .arg(env!("CARGO_BIN_EXE_tessera"))
            .arg(&dir)
            .arg(seed.to_string())
            .arg("60")
            .output()
            .expect("python runs");
        let (out, err) = text(&o);
        assert!(o.status.success() && out.contains("host: ok"), "{out}\n{err}");
        eprint!("seed {seed}: {out}");
    }
}
