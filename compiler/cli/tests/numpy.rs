//! Printing checked against NumPy itself (from the test environment that
//! `scripts/setup.sh` makes in `.venv`): random arrays of every NumPy dtype
//! Tessera shares, of 0 to 3 dims, with special values and magnitudes
//! from 1e-30 to 1e30, their `repr`s, and their first elements (NumPy's
//! scalars; the `repr` of an f32 or f16 one alone and in a list),
//! printed by `tessera run` and by NumPy
//! (`tests/numpy/print_compare.py`), line for line. The seed changes from
//! run to run and is printed when they differ.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use common::{temp, text, venv_python};

#[test]
fn tensors_print_as_numpy_prints_them() {
    let python = venv_python();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/numpy/print_compare.py");
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() % 1_000_000);
    let dir = temp("numpy", "print");
    for round in 0..4 {
        let o = Command::new(&python)
            .arg(&script)
            .arg(env!("CARGO_BIN_EXE_tessera"))
            .arg(&dir)
            .arg((seed + round).to_string())
            .arg("150")
            .output()
            .expect("python runs");
        let (out, err) = text(&o);
        assert!(o.status.success() && out.contains("print: ok 150"), "{out}\n{err}");
    }
}
