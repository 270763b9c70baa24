//! Property tests: `parse` never panics, and what it returns is sane.
//!
//! Three input generators: arbitrary strings (any Unicode, control
//! characters, `\r`, `\t`), "token soup" (random sequences of Tessera tokens,
//! good and bad, joined by random whitespace), and random byte-range edits
//! of a realistic program. For every input:
//!
//! * `parse` returns (no panic);
//! * every diagnostic has at least one label, and every label span (the
//!   primary one in particular) is in this file with
//!   `start <= end <= text.len()`;
//! * parsing the same text twice gives equal results.
//!
//! Failures are not persisted to disk; a failing case is printed (minimised)
//! by proptest and gets a fixed test below once found.

use proptest::prelude::*;
use proptest::test_runner::Config;
use tessera_base::FileId;
use tessera_syntax::{parse, Parse};

const FILE: FileId = FileId(7);

/// Parses `text` twice and checks the invariants; returns the first parse.
fn check(text: &str) -> Parse {
    let first = parse(FILE, text);
    let len = text.len();
    for diag in &first.diagnostics {
        assert!(
            !diag.labels.is_empty(),
            "diagnostic {} ({:?}) has no labels\ninput: {text:?}",
            diag.code,
            diag.message
        );
        let primary = diag
            .primary_span()
            .expect("a diagnostic with labels has a primary span");
        assert_eq!(primary.file, FILE, "primary span in another file\ninput: {text:?}");
        let (start, end) = (primary.span.start as usize, primary.span.end as usize);
        assert!(
            start <= end && end <= len,
            "diagnostic {} ({:?}) has primary span {start}..{end} outside the text (len {len})\ninput: {text:?}",
            diag.code,
            diag.message
        );
        for label in &diag.labels {
            let (start, end) = (label.span.span.start as usize, label.span.span.end as usize);
            assert!(
                label.span.file == FILE && start <= end && end <= len,
                "diagnostic {} ({:?}) has label {:?} at {start}..{end} outside the text (len {len})\ninput: {text:?}",
                diag.code,
                diag.message,
                label.message
            );
        }
    }
    let second = parse(FILE, text);
    assert!(first == second, "parsing is not deterministic\ninput: {text:?}");
    first
}

// ---------------------------------------------------------------- (a) arbitrary strings

/// Characters weighted towards the ones a lexer and layout pass care about.
fn interesting_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => any::<char>(),
        3 => prop::sample::select(vec![
            '\n', '\r', '\t', ' ', '\x0C', '\x0B', '\0', '\\', '#', '"', '\'', ':', '(', ')', '[',
            ']', '{', '}', '@', '.', '_', '0', 'x', 'e', '=', '!', '$', '?', '`', '\u{00e9}',
            '\u{1F600}', '\u{FEFF}', '\u{2028}', '\u{0301}', '\u{00A0}',
        ]),
        3 => prop::char::range(' ', '~'),
    ]
}

fn arbitrary_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        prop::collection::vec(interesting_char(), 0..200).prop_map(|cs| cs.into_iter().collect()),
    ]
}

// ---------------------------------------------------------------- (b) token soup

#[rustfmt::skip]
const VOCABULARY: &[&str] = &[
    // keywords
    "and", "as", "assert", "break", "continue", "def", "effects", "elif", "else", "False", "for",
    "from", "if", "import", "in", "mut", "None", "not", "or", "pass", "return", "True", "where",
    "while", "with",
    // operators and punctuation
    "(", ")", "[", "]", "{", "}", ",", ":", ";", ".", "..", "..=", "->", "@", "=", "==", "!=",
    "<", "<=", ">", ">=", "+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "~", "<<", ">>",
    "+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=", "^=", "<<=", ">>=", "@=", "!",
    // names
    "x", "acc", "tile", "kernel", "shared", "B", "S", "D", "bf16", "f32", "i32", "grid", "block",
    "_", "__x", "tile_linear_id", "caf\u{e9}",
    // numbers, good and bad
    "0", "1", "42", "1_000", "0xFF", "0b1010", "0o17", "1.5", "1e-3", "2.5E+2", "16_KiB", "4MiB",
    "0x", "0x1G", "0b", "0o9", "1__0", "1_", "16_KB", "1.5KiB", "007", "1e", "1e+",
    "99999999999999999999", "1e999", "0_", "1.", "1..n",
    // strings, good and bad
    "\"s\"", "'s'", "\"a\\tb\"", "\"\\u{1F600}\"", "\"\\q\"", "\"\\u{}\"", "\"\\u{110000}\"",
    "'''x\ny'''", "\"\"\"doc\"\"\"", "\"unterminated", "'also", "'''never closed", "\"\\",
    "\"\\\n\"", "\"\"",
    // layout and trivia
    "\n", "\r\n", "\n    ", "\n\t", "\n  \t", "\n\n", "\\\n", "\\", "\\ ", "# comment",
    "# comment\n", "\u{FEFF}", "$", "?", "`",
    // multi-token fragments, to reach deeper grammar states
    "@kernel tile[(128,)] shared(16_KiB)\n", "def f(x: bf16[B, S, D]) -> f32[B]",
    "where D % 8 == 0", "effects(random)", "k[grid=(g,), block=(256,)](a)", "x[i, 0:n:2, :]",
    "out: mut f32[N]", "for i in 0..n:\n    ", "if a:\n    pass\nelse:\n    ",
    // other languages' spellings (mistakes.rs)
    "async", "await", "global", "nonlocal", "from .m import f", "from m import *", "k<<<1, 2>>>(x)",
    "dim3(2, 2)", ":\n    where N > 1\n",
];

fn token_soup() -> impl Strategy<Value = String> {
    let separator = prop::sample::select(vec!["", " ", "  ", "\t", "\n", "\n    ", "\n\t", "\r\n"]);
    let token = prop::sample::select(VOCABULARY.to_vec());
    prop::collection::vec((token, separator), 0..120).prop_map(|parts| {
        let mut out = String::new();
        for (token, separator) in parts {
            out.push_str(token);
            out.push_str(separator);
        }
        out
    })
}

// ---------------------------------------------------------------- (c) mutations

/// A realistic program using most of the syntax; it parses without errors.
const PROGRAM: &str = r#"# Fused attention block with a tiled GEMM and a reduction.
from tessera import dist, op as ops
import tessera.tile

@kernel tile[(128,)] shared(16_KiB)
def attention(q: bf16[B, S, D], k: bf16[B, S, D], out: mut f32[B, S, D], scale: f32 = 0.125) -> None effects(random) where D % 8 == 0, S <= 8192:
    acc: f32 = 0.0
    for b, s in tile.range(q, axis=0, step=128):
        scores = tile.dot(q[b, s, :], k[b, :, 0:D:2].T) * scale
        if scores.max() > 1e-3 and not masked:
            probs = tile.softmax(scores, axis=-1)
        elif s % 2 == 0:
            probs = scores ** 2 // 3
        else:
            continue
        out[b, s:s + 128] = probs @ k[b] if s < S else None
        acc += probs[0] << 1 | 0xFF & ~mask
    while acc >= 1.5:
        acc /= 2
    assert acc != 0, "acc must be non-zero"
    return

def launch(a: f32[N], n: i32):
    grid = (n + 255) // 256
    attention[grid=(grid,), block=(256,)](a, a, a)
    with graph.capture() as g:
        xs = [1, 2, 3]
        d = {"BM": 64, 'BN': 128}
        r = 0..n
        ri = 1..=4096
    pass; x = y = 1_000
"#;

#[derive(Clone, Debug)]
enum Edit {
    Delete { at: usize, len: usize },
    Insert { at: usize, text: String },
    Replace { at: usize, len: usize, text: String },
    Duplicate { at: usize, len: usize },
}

fn edit_text() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(VOCABULARY.to_vec()).prop_map(str::to_string),
        prop::collection::vec(interesting_char(), 1..8).prop_map(|cs| cs.into_iter().collect()),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    let at = any::<prop::sample::Index>();
    let len = 0usize..40;
    prop_oneof![
        (at.clone(), len.clone()).prop_map(|(at, len)| Edit::Delete {
            at: at.index(usize::MAX),
            len
        }),
        (at.clone(), edit_text()).prop_map(|(at, text)| Edit::Insert {
            at: at.index(usize::MAX),
            text
        }),
        (at.clone(), len.clone(), edit_text()).prop_map(|(at, len, text)| Edit::Replace {
            at: at.index(usize::MAX),
            len,
            text
        }),
        (at, len).prop_map(|(at, len)| Edit::Duplicate {
            at: at.index(usize::MAX),
            len
        }),
    ]
}

/// Moves `i` back to the nearest character boundary of `s` (at most `s.len()`).
fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The byte range an edit covers, on character boundaries.
fn range(s: &str, at: usize, len: usize) -> (usize, usize) {
    let start = floor_boundary(s, at % (s.len() + 1));
    let end = floor_boundary(s, start.saturating_add(len));
    (start, end)
}

fn apply(program: &str, edits: &[Edit]) -> String {
    let mut s = program.to_string();
    for edit in edits {
        match edit {
            Edit::Delete { at, len } => {
                let (a, b) = range(&s, *at, *len);
                s.replace_range(a..b, "");
            }
            Edit::Insert { at, text } => {
                let (a, _) = range(&s, *at, 0);
                s.insert_str(a, text);
            }
            Edit::Replace { at, len, text } => {
                let (a, b) = range(&s, *at, *len);
                s.replace_range(a..b, text);
            }
            Edit::Duplicate { at, len } => {
                let (a, b) = range(&s, *at, *len);
                let copy = s[a..b].to_string();
                s.insert_str(b, &copy);
            }
        }
    }
    s
}

fn mutated_program() -> impl Strategy<Value = String> {
    prop::collection::vec(edit(), 1..6).prop_map(|edits| apply(PROGRAM, &edits))
}

// ---------------------------------------------------------------- the properties

fn config(cases: u32) -> Config {
    Config {
        cases,
        // Do not write `proptest-regressions/` files next to the tests;
        // a failure found here gets its own `#[test]` below, by hand.
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config(3000))]
    #[test]
    fn arbitrary_strings_do_not_panic(text in arbitrary_text()) {
        check(&text);
    }
}

proptest! {
    #![proptest_config(config(3000))]
    #[test]
    fn token_soup_does_not_panic(text in token_soup()) {
        check(&text);
    }
}

proptest! {
    #![proptest_config(config(2000))]
    #[test]
    fn mutated_programs_do_not_panic(text in mutated_program()) {
        check(&text);
    }
}

// ---------------------------------------------------------------- fixed cases

#[test]
fn the_base_program_parses_cleanly() {
    let parse = check(PROGRAM);
    let codes: Vec<_> = parse.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert!(codes.is_empty(), "unexpected diagnostics: {codes:?}");
    assert!(!parse.module.body.is_empty());
}

/// Found by the properties above: `string_value` in `lexer.rs` tests for a
/// triple quote with `text[..3]`, which panics ("byte index 3 is not a char
/// boundary") when byte 3 of a string literal falls inside a multi-byte
/// character -- even for a valid, closed literal such as `"aé"`.
#[test]
fn string_literal_with_a_multibyte_character_across_byte_three() {
    for text in [
        "\"a\u{e9}\"",       // "aé": the minimal reproducer
        "x = \"n\u{e9}\"\n", // x = "né"
        "'0\u{e9}",          // unterminated
        "'\u{800}",          // a 3-byte character right after the quote
        "\"\\\u{feff}",      // "\ followed by a byte-order mark
    ] {
        check(text);
    }
}

/// Inputs that are known to be delicate.
#[test]
fn delicate_inputs() {
    for text in [
        "",
        "\n",
        "\r",
        "\r\n",
        "\\",
        "\\\n",
        "\"",
        "'''",
        "\"\\",
        "\"\\u{",
        "\"\u{e9}\\",
        "@",
        "@kernel",
        "def",
        "def f(",
        "def f():",
        "if a:\n\tb\n        c",
        "x = (",
        ")",
        "0x",
        "\u{FEFF}x",
        "a \\ b",
        "async def",
        "async def f():\n    pass",
        "def f():\n    y = await\n",
        "def f():\n    global\n",
        "from . import",
        "from .m import (f as g, h",
        "from m import *, f",
        "def f(x: f32[N]):\n    where N > 1\n",
        "def f(x: f32[N]) -> f32[N] where:\n    where N > 1, \n    return x",
        "def f():\n    if a:\n        where N > 1",
        "k<<<",
        "k<<<>>>(x)",
        "k<<<1, 2>>>",
        "k<<<dim3(), (,)>>>(x)",
        "k<<<1, [2>>>(x)",
        "k<<<g, b, 0, s>>>(x)",
        "if a:\n    b\n\tc\n    d",
    ] {
        check(text);
    }
    // Deep nesting of every kind stays within the limits.
    check(&"(".repeat(1000));
    check(&format!("x = {}1{}", "(".repeat(300), ")".repeat(300)));
    check(&format!("x = {}1", "-".repeat(2000)));
    check(&format!("x = {}", "a + ".repeat(2000) + "1"));
    check(&format!("x = {}1{}", "[".repeat(150), "]".repeat(150)));
    let mut deep = String::new();
    for level in 0..150 {
        deep.push_str(&" ".repeat(level));
        deep.push_str("if x:\n");
    }
    check(&deep);
}
