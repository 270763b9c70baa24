//! The GPU benchmark harness (`bench/gpu/run.py`) without a GPU: the dry
//! run of its quick plan with `--tune` builds every planned entry for
//! sm_90a (through ptxas, from the test environment's `.venv`), checks
//! each entry's parameters against the plan, and tunes each `@autotune`
//! entry on a small shape on the CPU device before running it there
//! against a NumPy reference, as the GPU run does at the case's shape;
//! with `--deterministic`, each entry's `@deterministic` twin too.

mod common;

use std::process::Command;

use common::{root, text, venv_python};

#[test]
fn harness_dry_run_tunes_and_checks_every_quick_case() {
    let python = venv_python();
    let bin = python.parent().expect("the venv's bin").to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .expect("a PATH");
    let o = Command::new(&python)
        .current_dir(root())
        .env("PATH", path)
        .args([
            "bench/gpu/run.py",
            "--dry-run",
            "--quick",
            "--tune",
            "--deterministic",
            "--tessera",
        ])
        .arg(env!("CARGO_BIN_EXE_tessera"))
        .output()
        .expect("python runs");
    let (out, err) = text(&o);
    assert!(
        o.status.success() && out.contains("dry run: no problems"),
        "{out}\n{err}"
    );
    for tuned in [
        "gemm_bf16",
        "matmul_fp8_aligned",
        "gemm_fp8_nt",
        "attention_d64",
        "gemm_bf16_deterministic",
        "attention_d64_deterministic",
    ] {
        assert!(
            out.lines()
                .any(|l| l.contains(&format!("ok   {tuned} ")) && l.contains(", tuned ")),
            "{tuned} was not tuned:\n{out}"
        );
    }
    for twin in ["softmax_deterministic", "layernorm_deterministic"] {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("  ok   {twin} "))),
            "{twin} did not run:\n{out}"
        );
    }
}
