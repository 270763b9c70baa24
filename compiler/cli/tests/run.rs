//! `tessera run` and `tessera test` end to end on the CPU: a program's
//! `main` checked against a float64 reference, an operator function run on
//! `.npy` inputs and compared here with a reference computed in Rust, `@test`
//! functions passing and failing (the standard library's among them), and
//! the errors of bad runs.

mod common;

use common::{temp, tessera, text};

use tessera_runtime::half::{bf16_to_f32, f32_to_bf16};
use tessera_runtime::{npy, DType, Tensor};

#[test]
fn the_matmul_example_checks_itself_against_float64() {
    let o = tessera(&["run", "examples/matmul.tsr"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("matches the float64 reference"), "{out}");
}

/// The standard library's `@test`s: every kernel against a float64
/// reference the interpreter computes.
#[test]
fn the_standard_library_passes_its_tests() {
    let o = tessera(&["test", "stdlib"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let summary = out.lines().last().unwrap_or_default();
    let passed: usize = summary
        .split_whitespace()
        .zip(summary.split_whitespace().skip(1))
        .find(|(_, w)| w.starts_with("passed"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(0);
    assert!(passed >= 19 && summary.contains(" 0 failed"), "{out}");
    for name in [
        "linalg.tsr::gelu_epilogue",
        "nn.tsr::causal_attention_head_dim_64",
        "reduce.tsr::row_sums",
    ] {
        assert!(out.contains(&format!("{name} ... ok")), "{name} did not pass:\n{out}");
    }
}

/// The examples' `@test`s (the all-reduce's runs on its simulated mesh).
#[test]
fn the_examples_pass_their_tests() {
    let o = tessera(&["test", "examples"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        out.contains("all_reduce.tsr::averaging_equal_gradients_gives_them_back ... ok"),
        "{out}"
    );
}

#[test]
fn saxpy_main_runs() {
    let o = tessera(&["run", "examples/saxpy.tsr"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
}

#[test]
fn an_operator_runs_on_npy_inputs() {
    let dir = temp("run", "entry");
    let (m, k, n) = (70usize, 128usize, 33usize);
    let bits = |len: usize, salt: u64| -> Vec<u16> {
        (0..len as u64)
            .map(|i| {
                let h = (i ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
                f32_to_bf16(h as f32 / (1u64 << 24) as f32 * 2.0 - 1.0)
            })
            .collect()
    };
    let (a, b) = (bits(m * k, 1), bits(k * n, 2));
    let tensor = |v: &[u16], shape: &[usize]| {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        Tensor::from_bytes(DType::Bf16, shape, &bytes).unwrap()
    };
    let (pa, pb, pc) = (dir.join("a.npy"), dir.join("b.npy"), dir.join("c.npy"));
    npy::save(&pa, &tensor(&a, &[m, k])).unwrap();
    npy::save(&pb, &tensor(&b, &[k, n])).unwrap();
    let input_a = format!("A={}", pa.display());
    let input_b = format!("B={}", pb.display());
    let run = || {
        tessera(&[
            "run",
            "examples/matmul.tsr",
            "--entry",
            "matmul",
            "--input",
            &input_a,
            "--input",
            &input_b,
            "--output",
            pc.to_str().unwrap(),
        ])
    };
    let o = run();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let c = npy::load(&pc).unwrap();
    assert_eq!((c.dtype(), c.shape()), (DType::F32, &[m, n][..]));
    let c = c.to_f64_vec();
    for i in 0..m {
        for j in 0..n {
            let (mut want, mut abs) = (0.0f64, 0.0f64);
            for p in 0..k {
                let x = f64::from(bf16_to_f32(a[i * k + p])) * f64::from(bf16_to_f32(b[p * n + j]));
                want += x;
                abs += x.abs();
            }
            assert!(
                (c[i * n + j] - want).abs() <= 1e-5 * abs + 1e-30,
                "C[{i}, {j}] = {} not {want}",
                c[i * n + j]
            );
        }
    }
    // An input of the wrong dtype is refused before anything runs.
    npy::save(&pa, &Tensor::from_slice(&[m, k], &vec![0.0f32; m * k]).unwrap()).unwrap();
    let o = run();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("E1005"), "{err}");
}

/// `--entry` fills a parameter it has no `--input` for with the
/// parameter's default, takes a number for an untyped parameter as a
/// scalar one does, refuses a parameter given twice, and runs `main` with
/// the arguments after `--`.
#[test]
fn entry_inputs_take_defaults_and_numbers() {
    let dir = temp("run", "entry_defaults");
    let file = dir.join("d.tsr");
    std::fs::write(
        &file,
        "\
def scale(x: f32[N], k: f32 = 2.0) -> f32[N]:
    return x * k

def add(a, b=3):
    return a + b

def main(args):
    print(args)
",
    )
    .unwrap();
    let (px, out) = (dir.join("x.npy"), dir.join("out.npy"));
    npy::save(&px, &Tensor::from_slice(&[4], &[0.0f32, 1.0, 2.0, 3.0]).unwrap()).unwrap();
    let x = format!("x={}", px.display());
    let run = |extra: &[&str]| {
        let mut args = vec!["run", file.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--output", out.to_str().unwrap()]);
        tessera(&args)
    };
    let o = run(&["--entry", "scale", "--input", &x]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert_eq!(npy::load(&out).unwrap().to_f64_vec(), [0.0, 2.0, 4.0, 6.0]);
    let o = run(&["--entry", "scale", "--input", &x, "--input", "k=0.5"]);
    assert!(o.status.success(), "{:?}", text(&o));
    // Text that is neither a number nor a file says both (it said the file
    // did not exist).
    let o = run(&["--entry", "scale", "--input", &x, "--input", "k=abc"]);
    let (_, err) = text(&o);
    assert!(
        err.contains("E1004") && err.contains("`abc` is neither a number nor a .npy file"),
        "{err}"
    );
    assert_eq!(npy::load(&out).unwrap().to_f64_vec(), [0.0, 0.5, 1.0, 1.5]);
    let o = run(&["--entry", "add", "--input", "a=2"]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert_eq!(npy::load(&out).unwrap().to_f64_vec(), [5.0]);
    // A numeral past 64 bits for an integer parameter says so (it read as
    // a float, which the parameter then refused).
    let o = run(&["--entry", "add", "--input", "a=99999999999999999999"]);
    let (_, err) = text(&o);
    assert!(
        err.contains("E1005") && err.contains("does not fit in 64 bits"),
        "{err}"
    );
    // `--entry main` with no inputs runs `main` as a plain run does, with
    // the arguments after `--`.
    let o = tessera(&["run", file.to_str().unwrap(), "--entry", "main", "--", "p", "q"]);
    assert_eq!(text(&o).0.trim(), "('p', 'q')", "{:?}", text(&o));
    let o = run(&["--entry", "scale", "--input", &x, "--input", &x]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("E1005") && err.contains("`--input x=…` is given twice"),
        "{err}"
    );
}

/// A dim that names a module constant is that constant's size when run,
/// as when checked: an input of another size is refused (it had bound the
/// constant's name as a dim symbol), and a product with one binds the
/// other factor (`W * G`, which had stopped unbound).
#[test]
fn entry_dims_that_name_constants_are_the_constants() {
    let dir = temp("run", "entry_constants");
    let file = dir.join("c.tsr");
    std::fs::write(
        &file,
        "\
W = 4

def fixed(x: f32[W]) -> f32[W]:
    return x + 1.0

def grouped(x: f32[W * G]) -> f32[G]:
    return op.sum(op.reshape(x, (G, W)), axis=-1)
",
    )
    .unwrap();
    let out = dir.join("out.npy");
    let input = |n: usize| {
        let path = dir.join(format!("x{n}.npy"));
        let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
        npy::save(&path, &Tensor::from_slice(&[n], &values).unwrap()).unwrap();
        format!("x={}", path.display())
    };
    let run = |entry: &str, n: usize| {
        tessera(&[
            "run",
            file.to_str().unwrap(),
            "--entry",
            entry,
            "--input",
            &input(n),
            "--output",
            out.to_str().unwrap(),
        ])
    };
    let o = run("fixed", 4);
    assert!(o.status.success(), "{:?}", text(&o));
    assert_eq!(npy::load(&out).unwrap().to_f64_vec(), [1.0, 2.0, 3.0, 4.0]);
    let o = run("fixed", 3);
    let (_, err) = text(&o);
    assert!(
        err.contains("E0302") && err.contains("dim 0 is 3, but `fixed` expects W = 4"),
        "{err}"
    );
    let o = run("grouped", 8);
    assert!(o.status.success(), "{:?}", text(&o));
    assert_eq!(npy::load(&out).unwrap().to_f64_vec(), [6.0, 22.0]);
    let o = run("grouped", 6);
    let (_, err) = text(&o);
    assert!(err.contains("E0302") && err.contains("not a multiple of 4"), "{err}");
}

#[test]
fn tessera_test_runs_test_functions() {
    let dir = temp("run", "tests");
    let file = dir.join("checks.tsr");
    std::fs::write(
        &file,
        "\
@kernel
def scale(x: mut f32[N], a: f32):
    i = launch.thread_id()
    if i < N:
        x[i] = x[i] * a

@test
def doubles():
    x = arange(300, dtype=f32)
    y = x * 2.0
    scale[grid=(3,), block=(128,)](x, 2.0)
    assert allclose(x, y)

@test
def triples_wrongly():
    x = ones(10)
    scale[grid=(1,), block=(128,)](x, 2.0)
    assert allclose(x, full(10, 3.0)), \"not tripled\"
",
    )
    .unwrap();
    let o = tessera(&["test", file.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(out.contains("::doubles ... ok"), "{out}");
    assert!(out.contains("::triples_wrongly ... FAILED"), "{out}");
    assert!(out.contains("1 passed; 1 failed"), "{out}");
    assert!(err.contains("E1003") && err.contains("not tripled"), "{err}");
    let o = tessera(&["test", file.to_str().unwrap(), "--filter", "doubles"]);
    assert!(o.status.success(), "{:?}", text(&o));
}

#[test]
fn bad_runs_are_clear_errors() {
    let dir = temp("run", "bad");
    let file = dir.join("bad.tsr");
    std::fs::write(
        &file,
        "\
@kernel
def gemm(A: bf16[M, K], B: bf16[K, N], C: mut f32[M, N]) where M % 128 == 0, N % 128 == 0, K % 32 == 0:
    for m, n, k in tile.mma(A, B, C, BM=128, BN=128, BK=32):
        tile.mma_sync(m, n, k)

def main():
    A = zeros(128, 32, dtype=bf16)
    B = zeros(32, 128, dtype=bf16)
    C = zeros(128, 128)
    gemm[grid=(1, 1), block=(64,)](A, B, C)
",
    )
    .unwrap();
    let o = tessera(&["run", file.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("E1008") && err.contains("block=(256,)"), "{err}");

    let o = tessera(&["run", "examples/matmul.tsr", "--entry", "nothing"]);
    assert!(text(&o).1.contains("E1002"), "{:?}", text(&o));

    // A function that returns nothing given an output is refused before it
    // runs (`main` printed first).
    let said = dir.join("said.tsr");
    std::fs::write(&said, "def main():\n    print(\"ran\")\n").unwrap();
    let out = dir.join("out.npy");
    let o = tessera(&[
        "run",
        said.to_str().unwrap(),
        "--entry",
        "main",
        "--output",
        out.to_str().unwrap(),
    ]);
    let (printed, err) = text(&o);
    assert!(
        err.contains("E1005") && err.contains("`main` returns 0 values, but 1 output was given"),
        "{err}"
    );
    assert!(!printed.contains("ran"), "{printed}");

    // A directory is not a program (it had run its first file).
    let o = tessera(&["run", "examples"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is a directory"), "{err}");

    // Without a CUDA driver the run stops with E1001 and names the fallback.
    let o = tessera(&["run", "examples/saxpy.tsr", "--device", "cuda"]);
    if !o.status.success() {
        let (_, err) = text(&o);
        assert!(err.contains("E1001") && err.contains("--device cpu"), "{err}");
    }
}

/// A kernel calls device functions of a sibling module, through `import
/// helpers` (`helpers.clamp01`) and `from helpers import scale`; both are
/// inlined.
#[test]
fn kernels_call_device_functions_of_sibling_modules() {
    let dir = temp("run", "modules");
    std::fs::write(
        dir.join("helpers.tsr"),
        "@device\ndef clamp01(v: f32) -> f32:\n    return min(max(v, 0.0), 1.0)\n\n@device\ndef scale(v: f32, k: f32 = 2.0) -> f32:\n    return k * v\n\ndef twice(v: i32) -> i32:\n    return 2 * v\n\ndef shifted(x: f32[N], by: f32 = 0.5) -> f32[N]:\n    return x + by\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("main.tsr"),
        "import helpers\nfrom helpers import scale\n\n@kernel\ndef k(x: f32[N], z: mut f32[N]):\n    i = launch.thread_id()\n    if i < N:\n        z[i] = scale(helpers.clamp01(x[i]))\n\ndef main():\n    x = arange(4) - 1.5\n    z = zeros(4)\n    k[grid=(1,), block=(32,)](x, z)\n    print(z)\n",
    )
    .unwrap();
    let main = dir.join("main.tsr");
    let o = tessera(&["run", main.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_eq!(out.trim(), "[0. 0. 1. 2.]", "{err}");

    // Host code calls the functions of another file too.
    let host = dir.join("host.tsr");
    std::fs::write(&host, "import helpers\n\ndef main():\n    print(helpers.twice(2))\n").unwrap();
    let o = tessera(&["run", host.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_eq!(out.trim(), "4", "{err}");

    // `--entry` names an operator function of an imported module, which
    // host code does not call: the module is built for it, and the
    // parameter's default is the module's.
    let (input, output) = (dir.join("x.npy"), dir.join("out.npy"));
    npy::save(&input, &Tensor::from_slice(&[3], &[1.0f32, 2.0, 3.0]).unwrap()).unwrap();
    let o = tessera(&[
        "run",
        host.to_str().unwrap(),
        "--entry",
        "helpers.shifted",
        "--input",
        &format!("x={}", input.display()),
        "--output",
        output.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let shifted = npy::load(&output).unwrap();
    assert_eq!(shifted.to_f64_vec(), [1.5, 2.5, 3.5]);
    let o = tessera(&["run", host.to_str().unwrap(), "--entry", "helpers.shiftd"]);
    let (_, err) = text(&o);
    assert!(
        err.contains("E1002") && err.contains("did you mean `--entry helpers.shifted`?"),
        "{err}"
    );
    // A function imported by name is named as the file names it.
    let by_name = dir.join("by_name.tsr");
    std::fs::write(
        &by_name,
        "from helpers import shifted

def main():
    print(0)
",
    )
    .unwrap();
    let o = tessera(&[
        "run",
        by_name.to_str().unwrap(),
        "--entry",
        "shifted",
        "--input",
        &format!("x={}", input.display()),
        "--input",
        "by=2",
        "--output",
        output.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_eq!(npy::load(&output).unwrap().to_f64_vec(), [3.0, 4.0, 5.0]);
}
