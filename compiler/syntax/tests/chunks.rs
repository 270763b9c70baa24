//! Parsing chunk by chunk (what the database does, so that an edit
//! re-parses only the statement it touches) gives the same tree and the
//! same diagnostics as parsing the whole file, on every .tsr file of the
//! repository. On random programs, broken ones included, it finds an error
//! exactly when the whole-file parse does, and gives the same tree when
//! there is none: the database relies on this when it reports a file's
//! syntax errors from a whole-file parse, and uses the chunks otherwise.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::Config;
use tessera_base::FileId;
use tessera_syntax::{parse, parse_by_chunks};

const FILE: FileId = FileId(3);

fn same(text: &str) -> Result<(), String> {
    let whole = parse(FILE, text);
    let chunked = parse_by_chunks(FILE, text);
    if whole.module != chunked.module {
        return Err(format!("trees differ for {text:?}"));
    }
    if whole.diagnostics != chunked.diagnostics {
        return Err(format!(
            "diagnostics differ for {text:?}:\nwhole: {:#?}\nchunked: {:#?}",
            whole.diagnostics, chunked.diagnostics
        ));
    }
    Ok(())
}

fn tsr_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            tsr_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "tsr") {
            out.push(path);
        }
    }
}

#[test]
fn every_repository_file_parses_the_same_by_chunks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["tests", "examples", "stdlib"] {
        tsr_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 200, "found only {} .tsr files", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        if let Err(e) = same(&text) {
            failures.push(format!("{}: {e}", path.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Lines of real programs, well-formed and broken, at various indents.
const LINES: &[&str] = &[
    "def f(x: f32[N]) -> f32[N]:",
    "@kernel tile[(128,)]",
    "@deterministic(seed=1)",
    "def g(",
    "    a: f32[M, K],",
    ") -> f32[M]:",
    "    return x",
    "    y = op.matmul(a, b)",
    "    if i < N:",
    "        out[i] = x[i]",
    "    else:",
    "else:",
    "elif x:",
    "x = (1,",
    "2)",
    "]",
    "s = \"\"\"doc",
    "\"\"\"",
    "t = 'unterminated",
    "u = 1 + \\",
    "# comment (",
    "",
    "    ",
    "\tpass",
    "from tessera import op",
    "P = numerics.policy(accumulate=f32)",
    "with numerics(P):",
    "    for i in range(4):",
    "        tbarrier()",
    "  z = 3",
    "def h() ->",
    "pass",
];

fn program() -> impl Strategy<Value = String> {
    proptest::collection::vec(0..LINES.len(), 0..24).prop_map(|picks| {
        let mut text = String::new();
        for i in picks {
            text.push_str(LINES[i]);
            text.push('\n');
        }
        text
    })
}

/// Whole statements that parse, so that error-free programs are common.
const STATEMENTS: &[&str] = &[
    "from tessera import op\n",
    "@kernel tile[(128,)]\n@deterministic(seed=1)\ndef k(x: f32[N]):\n    i = launch.thread_id()\n    if i < N:\n        x[i] = 0.0\n    else:\n        pass\n",
    "def f(\n    a: f32[M, K],\n) -> f32[M]:\n    return op.sum(a, axis=1)  # (\n",
    "\n# a comment\n\n",
    "s = \"\"\"doc\ndef g():\n\"\"\"\n",
    "if x:\n    y = 1\nelif z:\n    y = 2\nelse:\n    y = 3\n",
    "u = 1 + \\\n    2\n",
    "P = numerics.policy(\n    accumulate=f32,\n)\n",
    "with numerics(P):\n    pass\n",
    "def h():\n\n    pass\n\n\n",
];

fn valid_program() -> impl Strategy<Value = String> {
    proptest::collection::vec(0..STATEMENTS.len(), 0..12)
        .prop_map(|picks| picks.iter().map(|&i| STATEMENTS[i]).collect())
}

proptest! {
    #![proptest_config(Config { cases: 2000, failure_persistence: None, ..Config::default() })]

    #[test]
    fn random_programs_parse_the_same_by_chunks(text in program()) {
        let whole = parse(FILE, &text);
        let chunked = parse_by_chunks(FILE, &text);
        prop_assert_eq!(
            whole.diagnostics.is_empty(),
            chunked.diagnostics.is_empty(),
            "one parse finds errors and the other does not: {:?}",
            text
        );
        if whole.diagnostics.is_empty() {
            prop_assert!(whole.module == chunked.module, "trees differ for {:?}", text);
        }
    }

    #[test]
    fn valid_programs_parse_the_same_by_chunks(text in valid_program()) {
        prop_assert!(parse(FILE, &text).diagnostics.is_empty(), "not valid: {:?}", text);
        if let Err(e) = same(&text) {
            prop_assert!(false, "{}", e);
        }
    }
}
