//! Parse benchmark: how long `tessera_syntax::parse` (lexer, layout pass and
//! grammar) takes on a realistic 10 000-line file, against a budget of
//! 100 ms, with CPython's `ast.parse` on a Python-compatible variant of the
//! same file as an anchor measured in the same run.
//!
//! Run with `cargo run --release -p tessera-bench --bin parse-bench`
//! (optional arguments: number of timed runs, default 15; `--dump DIR`
//! writes the two generated files there).

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use tessera_base::FileId;
use tessera_syntax::parse;

const LINES: usize = 10_000;
const BUDGET_MS: f64 = 100.0;
const DEFAULT_RUNS: usize = 15;

// ---------------------------------------------------------------- generator

/// A small deterministic PRNG (xorshift64*), so that every run of the
/// benchmark parses the same text.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn float(&mut self) -> String {
        format!("{}.{}", self.below(100), self.below(1000))
    }
}

/// Writes the Tessera file and its Python-compatible twin line by line, so
/// that both have the same structure and the same number of lines.
struct Gen {
    rng: Rng,
    tsr: String,
    py: String,
    lines: usize,
}

const NAMES: &[&str] = &[
    "acc", "val", "tmp", "score", "prob", "row", "col", "lhs", "rhs", "delta", "grad", "norm", "alpha", "beta",
    "gamma", "carry", "part", "total", "peak", "bias",
];
const TENSORS: &[&str] = &["x", "w", "out", "q", "k", "v", "mask"];
const DTYPES: &[&str] = &["bf16", "f16", "f32", "f64", "i32"];
const OPS: &[&str] = &["+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>"];
const AUG_OPS: &[&str] = &["+=", "-=", "*=", "/=", "//=", "%=", "|=", "^="];
const CMP: &[&str] = &["<", "<=", ">", ">=", "==", "!="];
const COMMENTS: &[&str] = &[
    "stage the next tile while the tensor cores work on this one",
    "accumulate in f32; the inputs are bf16",
    "one warp per row of the tile",
    "the reduction is tree-ordered, so it is deterministic",
    "TODO: try a larger tile once the shared-memory budget allows",
    "scale before the softmax to keep the exponent in range",
];

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen {
            rng: Rng(seed),
            tsr: String::new(),
            py: String::new(),
            lines: 0,
        }
    }

    /// One line in both files (without indentation and newline).
    fn line2(&mut self, indent: usize, tsr: &str, py: &str) {
        for (out, text) in [(&mut self.tsr, tsr), (&mut self.py, py)] {
            if !text.is_empty() {
                out.extend(std::iter::repeat_n("    ", indent));
                out.push_str(text);
            }
            out.push('\n');
        }
        self.lines += 1;
    }

    /// A line that is the same in both files.
    fn line(&mut self, indent: usize, text: &str) {
        self.line2(indent, text, text);
    }

    fn name(&mut self) -> &'static str {
        self.rng.pick(NAMES)
    }

    /// An arithmetic expression over locals, subscripts and calls.
    fn expr(&mut self, depth: usize) -> String {
        if depth == 0 {
            return match self.rng.below(5) {
                0 => self.name().to_string(),
                1 => self.rng.below(1 << 12).to_string(),
                2 => self.rng.float(),
                3 => format!("{}[b, s]", self.rng.pick(TENSORS)),
                _ => format!(
                    "tile.{}({})",
                    self.rng.pick(&["exp", "max", "sum", "rsqrt"]),
                    self.name()
                ),
            };
        }
        let lhs = self.expr(depth - 1);
        let rhs = self.expr(depth - 1);
        let op = self.rng.pick(OPS);
        match self.rng.below(4) {
            0 => format!("({lhs} {op} {rhs})"),
            _ => format!("{lhs} {op} {rhs}"),
        }
    }

    fn condition(&mut self) -> String {
        let a = self.name();
        let cmp = self.rng.pick(CMP);
        let b = self.expr(1);
        match self.rng.below(3) {
            0 => format!("{a} {cmp} {b}"),
            1 => format!("{a} {cmp} {b} and not {}[b, s]", self.rng.pick(TENSORS)),
            _ => format!("{a} {cmp} {b} or {} % {} == 0", self.name(), 2 + self.rng.below(7)),
        }
    }

    /// One simple statement, the same in both files.
    fn simple(&mut self, indent: usize) {
        let target = self.name();
        let text = match self.rng.below(9) {
            0 | 1 => format!("{target} = {}", self.expr(2)),
            2 => format!("{target} {} {}", self.rng.pick(AUG_OPS), self.expr(1)),
            3 => format!(
                "{}[b, s, {}:{}:2] = {}",
                self.rng.pick(TENSORS),
                self.rng.below(64),
                64 + self.rng.below(64),
                self.expr(1)
            ),
            4 => format!(
                "{target} = tile.dot({}[b, :, :], {}[:, s].T) * scale",
                self.rng.pick(TENSORS),
                self.rng.pick(TENSORS)
            ),
            5 => format!(
                "{target} = {} if {} else -{}",
                self.expr(1),
                self.condition(),
                self.name()
            ),
            6 => format!("{target}: f32 = {}", self.rng.float()),
            7 => "tile.barrier()".to_string(),
            _ => {
                // A comment line, then a statement (a block needs one).
                let comment = self.rng.pick(COMMENTS);
                self.line(indent, &format!("# {comment}"));
                return self.simple(indent);
            }
        };
        self.line(indent, &text);
    }

    /// A loop, conditional or `while` with a few statements inside.
    fn compound(&mut self, indent: usize, depth: usize) {
        match self.rng.below(4) {
            0 => {
                let n = 1 + self.rng.below(512);
                self.line2(
                    indent,
                    &format!("for s in 0..{n}:"),
                    &format!("for s in range(0, {n}):"),
                );
                self.body(indent + 1, depth + 1, true);
            }
            1 => {
                let cond = self.condition();
                self.line(indent, &format!("if {cond}:"));
                self.body(indent + 1, depth + 1, false);
                if self.rng.below(2) == 0 {
                    let cond = self.condition();
                    self.line(indent, &format!("elif {cond}:"));
                    self.body(indent + 1, depth + 1, false);
                }
                self.line(indent, "else:");
                self.body(indent + 1, depth + 1, false);
            }
            2 => {
                let cond = self.condition();
                self.line(indent, &format!("while {cond}:"));
                self.body(indent + 1, depth + 1, true);
            }
            _ => {
                let (t, n) = (self.rng.pick(TENSORS), 1 + self.rng.below(64));
                self.line2(
                    indent,
                    &format!("for b, s in tile.range({t}, axis=0, step={n}):"),
                    &format!("for b, s in tile.range({t}, axis=0, step={n}):"),
                );
                self.body(indent + 1, depth + 1, true);
            }
        }
    }

    fn body(&mut self, indent: usize, depth: usize, in_loop: bool) {
        let n = 1 + self.rng.below(4);
        for _ in 0..n {
            if depth < 3 && self.rng.below(4) == 0 {
                self.compound(indent, depth);
            } else if in_loop && self.rng.below(12) == 0 {
                let word = self.rng.pick(&["break", "continue"]);
                self.line(indent, word);
            } else {
                self.simple(indent);
            }
        }
    }

    /// A decorated kernel with a typed signature, and a launcher for it.
    fn kernel(&mut self, k: usize) {
        let name = format!(
            "{}_{}_{k}",
            self.rng.pick(&["gemm", "attn", "norm", "mlp", "reduce", "scan"]),
            self.name()
        );
        let tile = 32 << self.rng.below(4);
        let kib = 1 + self.rng.below(64);
        let (d1, d2) = (self.rng.pick(DTYPES), self.rng.pick(DTYPES));
        let multiple = 1 << (1 + self.rng.below(4));
        let limit = 1024 << self.rng.below(4);
        let scale = self.rng.float();

        let comment = self.rng.pick(COMMENTS);
        self.line(0, &format!("# Kernel {k}: {comment}."));
        self.line2(
            0,
            &format!("@kernel tile[({tile},)] shared({kib}_KiB)"),
            &format!("@kernel(tile[({tile},)], shared({}))", kib * 1024),
        );
        if self.rng.below(3) == 0 {
            let seed = self.rng.below(1000);
            self.line(0, &format!("@deterministic(seed={seed})"));
        }
        let params = format!("x: {d1}[B, S, D], w: {d2}[D, N], mask: bool[B, S]");
        self.line2(
            0,
            &format!(
                "def {name}({params}, out: mut f32[B, S, N], scale: f32 = {scale}) -> None effects(random) where D % {multiple} == 0, S <= {limit}:"
            ),
            &format!("def {name}({params}, out: f32[B, S, N], scale: f32 = {scale}) -> None:"),
        );
        self.line2(
            1,
            &format!("smem: shared f32[{tile}] = tile.alloc_shared({tile})"),
            &format!("smem: f32[{tile}] = tile.alloc_shared({tile})"),
        );
        let offset = self.rng.below(tile);
        self.line(1, &format!("i = tile_linear_id() * {tile} + {offset}"));
        self.line(1, "acc: f32 = 0.0");
        self.line2(1, "for b in 0..B:", "for b in range(0, B):");
        self.body(2, 1, true);
        self.compound(1, 1);
        self.line(1, &format!("assert acc != 0, \"kernel {k} must accumulate\""));
        self.line(1, "return");
        self.line(0, "");
        self.line(0, &format!("def launch_{name}(a: f32[N], n: i32) -> f32[N]:"));
        self.line(1, &format!("grid = (n + {}) // {tile}", tile - 1));
        self.line2(
            1,
            &format!("{name}[grid=(grid,), block=({tile},)](a, a, a, a)"),
            &format!("{name}.launch(grid=(grid,), block=({tile},))(a, a, a, a)"),
        );
        self.line(1, "with graph.capture() as g:");
        let (bm, bn, stages) = (16 << self.rng.below(4), 16 << self.rng.below(4), self.rng.below(8));
        self.line(
            2,
            &format!("cfg = {{\"BM\": {bm}, 'BN': {bn}, \"stages\": [1, 2, {stages}]}}"),
        );
        self.line2(2, "r = 0..n", "r = range(0, n)");
        let count = self.rng.below(1 << 16);
        self.line(1, &format!("pass; total = count = {count}"));
        self.line(1, "return a");
        self.line(0, "");
    }
}

/// The Tessera file and its Python twin, both exactly [`LINES`] lines.
fn generate() -> (String, String) {
    let mut gen = Gen::new(0x7E55_E4A5_EED5);
    gen.line(0, "# Generated benchmark input: kernels, launchers and helpers.");
    gen.line(0, "from tessera import tile, graph");
    gen.line(0, "import tessera.dist as dist");
    gen.line(0, "");
    let mut k = 0;
    while gen.lines < LINES {
        gen.kernel(k);
        k += 1;
    }
    // Cut back to whole kernels and pad with comment lines to exactly LINES.
    (trim_to(&gen.tsr, LINES), trim_to(&gen.py, LINES))
}

/// Keeps whole top-level units (cut at blank lines) up to `lines` lines,
/// then pads with comment lines to exactly `lines`.
fn trim_to(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    let mut cut = all.len().min(lines);
    while cut > 0 && !all[cut - 1].is_empty() {
        cut -= 1;
    }
    let mut out = String::with_capacity(text.len());
    for line in &all[..cut] {
        out.push_str(line);
        out.push('\n');
    }
    for i in cut..lines {
        writeln!(out, "# padding line {i}").unwrap();
    }
    out
}

// ---------------------------------------------------------------- timing

fn min_median(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    let median = if n % 2 == 1 {
        samples[n / 2]
    } else {
        (samples[n / 2 - 1] + samples[n / 2]) / 2.0
    };
    (samples[0], median)
}

/// Times `ast.parse` in a fresh CPython; only the parse calls are timed.
fn time_cpython(source_path: &std::path::Path, runs: usize) -> Result<(f64, f64, String), String> {
    const SCRIPT: &str = r#"
import ast, statistics, sys, time
src = open(sys.argv[1], encoding="utf-8").read()
runs = int(sys.argv[2])
ast.parse(src)  # warm-up, and a check that the file is valid Python
samples = []
for _ in range(runs):
    t = time.perf_counter()
    ast.parse(src)
    samples.append((time.perf_counter() - t) * 1000.0)
print(min(samples), statistics.median(samples), sys.version.split()[0])
"#;
    let output = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(source_path)
        .arg(runs.to_string())
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if !output.status.success() {
        return Err(format!("python3 failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut fields = stdout.split_whitespace();
    let mut number = || -> Result<f64, String> {
        fields
            .next()
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| format!("unexpected output from python3: {stdout:?}"))
    };
    let (min, median) = (number()?, number()?);
    let version = stdout.split_whitespace().nth(2).unwrap_or("?").to_string();
    Ok((min, median, version))
}

fn main() {
    let mut runs = DEFAULT_RUNS;
    let mut dump: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--dump" {
            dump = args.next().map(PathBuf::from);
        } else {
            runs = arg.parse().expect("usage: parse-bench [RUNS] [--dump DIR]");
        }
    }
    assert!(runs > 0, "at least one run");

    let (tsr, py) = generate();
    assert_eq!(tsr.lines().count(), LINES);
    assert_eq!(py.lines().count(), LINES);

    // The generated file must be valid Tessera: zero diagnostics.
    let result = parse(FileId(0), &tsr);
    assert!(
        result.diagnostics.is_empty(),
        "the generated file has {} diagnostics, the first: {:?}",
        result.diagnostics.len(),
        result.diagnostics.first()
    );
    let top_level = result.module.body.len();
    drop(result);

    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let result = parse(FileId(0), black_box(&tsr));
        let elapsed = start.elapsed();
        black_box(&result);
        drop(result); // freeing the tree is not timed
        samples.push(elapsed.as_secs_f64() * 1000.0);
    }
    let (min, median) = min_median(samples);

    let dir = dump.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&dir).expect("cannot create the output directory");
    let py_path = dir.join(format!("tessera-parse-bench-{}.py", std::process::id()));
    std::fs::write(&py_path, &py).expect("cannot write the Python variant");
    if dump.is_some() {
        std::fs::write(dir.join("parse-bench.tsr"), &tsr).expect("cannot write the Tessera file");
    }
    let cpython = time_cpython(&py_path, runs);
    if dump.is_none() {
        let _ = std::fs::remove_file(&py_path);
    }

    let kib = |s: &str| s.len() as f64 / 1024.0;
    println!(
        "input: {LINES} lines, {:.0} KiB of Tessera ({top_level} top-level statements, 0 diagnostics); Python variant {:.0} KiB",
        kib(&tsr),
        kib(&py)
    );
    println!("runs: {runs} (after one untimed parse)");
    println!(
        "tessera parse:     min {min:8.2} ms   median {median:8.2} ms   ({:.0} lines/ms at the median)",
        LINES as f64 / median
    );
    println!(
        "budget:            {BUDGET_MS:.0} ms  -> median is {:.2}x the budget ({})",
        median / BUDGET_MS,
        if median <= BUDGET_MS { "within" } else { "OVER" }
    );
    match cpython {
        Ok((py_min, py_median, version)) => {
            println!("cpython ast.parse: min {py_min:8.2} ms   median {py_median:8.2} ms   (Python {version})");
            println!(
                "tessera / cpython: min {:.2}x   median {:.2}x",
                min / py_min,
                median / py_median
            );
        }
        Err(e) => println!("cpython ast.parse: not measured ({e})"),
    }
}
