//! The examples in the `--explain` texts of the runtime's codes (E1xxx) are
//! real: each `tessera-run` block, run as `tessera run` would run it,
//! reports its code. (The checker's codes are tested the same way by
//! `compiler/cli/tests/spec.rs`.)

mod common;

use tessera_diagnostics::CODES;

/// The `tessera-run` blocks of an explanation.
fn run_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<String> = None;
    for line in text.lines() {
        match &mut open {
            None if line.trim() == "```tessera-run" => open = Some(String::new()),
            None => {}
            Some(block) if line.trim_start().starts_with("```") => {
                out.push(std::mem::take(block));
                open = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    out
}

#[test]
fn runtime_explanations_report_their_code() {
    let mut demonstrated = 0;
    let runtime_codes: Vec<_> = CODES.iter().filter(|i| i.code.as_str().starts_with("E1")).collect();
    for info in &runtime_codes {
        assert!(info.explanation.contains("```"), "{} has no example", info.code);
        for block in run_blocks(info.explanation) {
            let diagnostics = common::run(&block, &[]).expect_err(&format!("the example of {} runs clean", info.code));
            let codes: Vec<_> = diagnostics.iter().map(|d| d.code).collect();
            assert_eq!(codes, [info.code], "the example of {}:\n{block}", info.code);
            demonstrated += 1;
        }
    }
    // E1001 (no GPU), E1005 (a `--input` of the wrong dtype), E1010 (a
    // bad option of `tessera profile`) and E1011 (a search `tessera tune`
    // cannot run) need a machine or a command line; their examples are
    // console sessions, and `tests/cpu.rs`, `tests/entry.rs`,
    // `compiler/cli/tests/profile.rs` and `compiler/cli/tests/tune.rs` test
    // them.
    assert_eq!(demonstrated, runtime_codes.len() - 4);
}
