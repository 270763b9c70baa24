//! Fuzzes `tessera_syntax::parse`: it must not panic on any UTF-8 text, and
//! what it returns must be sane (the same invariants as
//! `compiler/syntax/tests/no_panic.rs`): every diagnostic has labels, every
//! label span lies within the text (`start <= end <= text.len()`) and in
//! this file, and parsing twice gives equal results.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera_base::FileId;
use tessera_syntax::parse;

const FILE: FileId = FileId(0);

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let first = parse(FILE, text);
    let len = text.len();
    for diag in &first.diagnostics {
        assert!(
            !diag.labels.is_empty(),
            "diagnostic {} has no labels",
            diag.code
        );
        let primary = diag.primary_span().expect("labels are not empty");
        assert!(
            primary.span.start <= primary.span.end && primary.span.end as usize <= len,
            "diagnostic {} has primary span {:?} outside the text (len {len})",
            diag.code,
            primary.span
        );
        for label in &diag.labels {
            assert_eq!(label.span.file, FILE, "label in another file");
            assert!(
                label.span.span.start <= label.span.span.end && label.span.span.end as usize <= len,
                "diagnostic {} has label span {:?} outside the text (len {len})",
                diag.code,
                label.span.span
            );
        }
    }
    let second = parse(FILE, text);
    assert!(first == second, "parsing is not deterministic");
});
