//! The host interpreter on the examples' `main`s and on small programs:
//! outputs checked against references computed here, and every error a
//! diagnostic with its code, at the right place.

mod common;

use common::{error, primary_text, run, uniform};
use tessera_diagnostics::Code;
use tessera_runtime::host::print;
use tessera_runtime::Tensor;

fn example(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn saxpy_example_prints_the_first_outputs() {
    let out = run(&example("saxpy.tsr"), &[]).unwrap();
    let n = 1 << 20;
    let (x, y) = (uniform(n, 1), uniform(n, 2));
    let (x, y) = (x.as_slice::<f32>().unwrap(), y.as_slice::<f32>().unwrap());
    let first: Vec<f32> = (0..4).map(|i| 2.0 * x[i] + y[i]).collect();
    for (i, v) in first.iter().enumerate() {
        let reference = 2.0 * x[i] as f64 + y[i] as f64;
        assert!((*v as f64 - reference).abs() < 1e-6, "element {i}");
    }
    let expected = print::tensor(&Tensor::from_slice(&[4], &first).unwrap());
    assert_eq!(out, format!("{expected}\n"));
}

#[test]
fn sum_reduce_example_with_a_main() {
    let program = format!(
        "{}\ndef main():\n    x = randn(100000, seed=3)\n    out = zeros(4)\n    sum_reduce[grid=(4,)](x, out)\n    \
         for g in range(4):\n        assert allclose(out[g], op.sum(x, accumulate=f64), rtol=1e-4)\n    print(out.shape)\n",
        example("sum_reduce.tsr")
    );
    assert_eq!(run(&program, &[]).unwrap(), "(4,)\n");
}

#[test]
fn warp_reduce_example_checks_itself_and_its_guard() {
    let main = "\ndef main():\n    X = rand(256, seed=5)\n    Out = zeros(8)\n    warp_reduce_sum[grid=(1,), block=(256,)](X, Out)\n    \
                for w in range(8):\n        assert allclose(Out[w], op.sum(X[w * 32:(w + 1) * 32]), rtol=1e-5)\n    print(len(Out))\n";
    let program = format!("{}{main}", example("warp_reduce_sum.tsr"));
    assert_eq!(run(&program, &[]).unwrap(), "8\n");
    // 250 elements break `where N == W * 32`: the checker's message, at run time.
    let bad = program
        .replace("rand(256, seed=5)", "rand(250, seed=5)")
        .replace("block=(256,)", "block=(250,)");
    let d = error(&bad, &[]);
    assert_eq!(d.code, Code::E0304);
    assert_eq!(d.message, "argument `X` breaks a shape constraint of `warp_reduce_sum`");
    assert_eq!(d.labels[0].message, "dim 0 of `X` is N = 250, and 250 == 256 is false");
    assert_eq!(primary_text(&d, &bad), "X");
    assert_eq!(d.notes, ["argument `X`, dim 0 (N = 250): requires N == W * 32"]);
}

#[test]
fn operator_functions_go_through_the_executor() {
    let program = "def scale(x: f32[N], a: f32) -> f32[N]:\n    return x * a\n\n\
                   def main():\n    y = scale(arange(4), 3.0)\n    print(y, y.dtype)\n    print(scale(a=0.5, x=full(5, 5.0)))\n";
    assert_eq!(
        run(program, &["scale"]).unwrap(),
        "[0. 3. 6. 9.] f32\n[2.5 2.5 2.5 2.5 2.5]\n"
    );
    let d = error(&program.replace("full(5, 5.0)", "full(2, 3, 5.0)"), &["scale"]);
    assert_eq!(
        (d.code, d.message.as_str()),
        (
            Code::E0303,
            "argument `x` of `scale` has 2 dims, but the parameter has 1"
        )
    );
    let d = error(&program.replace("arange(4)", "arange(4, dtype=i32)"), &["scale"]);
    assert_eq!(d.code, Code::E1005);
    assert_eq!(
        d.message,
        "argument `x` of `scale` is an i32 tensor, but the parameter is f32[N]"
    );
}

#[test]
fn host_language_subset() {
    let program = r#"
BLOCK = 1 << 4

def halves(n: i64):
    return n // 2, n % 2

def main():
    n = 37
    q, r = halves(n)
    print(q, r, ceil_div(n, BLOCK), -7 // 2, 7 / 2, 2 ** 10, min(3, 4.5), max(-1, -2))
    total = 0
    for i in range(0, 10, 3):
        if i == 6:
            continue
        total += i
    while total < 100:
        total *= 2
    print(total, len((1, 2, 3)), 3 in (1, 2, 3), "text", None, True and 0)
    a = zeros(2, 3)
    b = a
    a += 1.5
    a[0, 1] = 7
    a[1, :] = arange(3)
    print(b)
    print(b[:, 1], b[-1, -1], b.shape, b.ndim)
    c = cast(full(3, 1.004, dtype=f32), bf16)
    print(c, c.dtype, cast(0.1, f16))
    print(ones(3, dtype=i32) * 2 - 5, abs(arange(3) - 1.5), sqrt(4.0))
    print(op.sum(arange(5)), op.mean(arange(4)), op.sum(ones(2, 3), axis=1))
    print(arange(6).T.shape, op.reshape(arange(6), (2, 3)).shape, op.transpose(op.reshape(arange(6), (2, 3)))[2])
    print(arange(4) < 2, allclose(arange(3), arange(3) + 1e-9))
    with deterministic(seed=1):
        s = randn(2, seed=7)
    assert s.shape == (2,), "the shape is kept"
"#;
    let out = run(program, &[]).unwrap();
    let expected = "\
18 1 3 -4 3.5 1024 3 -1
192 3 True text None 0
[[1.5 7.  1.5]
 [0.  1.  2. ]]
[7. 1.] 2.0 (2, 3) 2
[1.00781 1.00781 1.00781] bf16 0.1
[-3 -3 -3] [1.5 0.5 0.5] 2.0
10.0 1.5 [3. 3.]
(6,) (2, 3) [2. 5.]
[ True  True False False] True
";
    assert_eq!(out, expected);
}

#[test]
fn random_tensors_are_reproducible() {
    let program = "def main():\n    a = rand(3, seed=11)\n    b = rand(3, seed=11)\n    c = randn(2, 2, seed=11, dtype=f64)\n    \
                   print(a)\n    assert allclose(a, b, rtol=0.0, atol=0.0)\n    print(c.dtype, c.shape)\n";
    let out = run(program, &[]).unwrap();
    let expected = print::tensor(&uniform(3, 11));
    assert_eq!(out, format!("{expected}\nf64 (2, 2)\n"));
    let d = error("def main():\n    x = rand(4)\n", &[]);
    assert_eq!(
        (d.code, d.message.as_str()),
        (Code::E1005, "`rand` needs a seed: `rand(..., seed=1)`")
    );
}

#[test]
fn npy_files_round_trip_through_host_code() {
    let dir = std::env::temp_dir().join(format!("tessera-host-npy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("x.npy");
    let program = format!(
        "def main():\n    x = randn(3, 4, seed=2, dtype=f64)\n    save(\"{p}\", x)\n    y = load(\"{p}\")\n    \
         assert allclose(x, y, rtol=0.0, atol=0.0)\n    print(y.dtype, y.shape)\n",
        p = path.display()
    );
    assert_eq!(run(&program, &[]).unwrap(), "f64 (3, 4)\n");
    let saved = tessera_runtime::npy::load(&path).unwrap();
    let reference = tessera_runtime::rng::fill(
        tessera_runtime::DType::F64,
        &[3, 4],
        tessera_runtime::rng::host_key(2),
        tessera_runtime::rng::Distribution::Normal,
    )
    .unwrap();
    assert_eq!(saved.bytes(), reference.bytes());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn failures_are_diagnostics_with_codes_and_spans() {
    let d = error(
        "def main():\n    x = full(4, 1.0)\n    assert_allclose(x, x + 0.5, rtol=1e-5, atol=1e-8)\n",
        &[],
    );
    assert_eq!(d.code, Code::E1003);
    assert_eq!(d.message, "the tensors are not close (rtol=1e-5, atol=1e-8)");
    assert_eq!(d.notes[0], "mismatched elements: 4 / 4 (100.000%)");
    assert_eq!(
        d.notes[1],
        "largest difference at index (0,): actual 1, expected 1.5, |difference| 0.5"
    );

    let text = "def main():\n    x = zeros(4)\n    print(x[4])\n";
    let d = error(text, &[]);
    assert_eq!(
        (d.code, d.message.as_str()),
        (Code::E1007, "index 4 is out of range for dim 0 of size 4")
    );
    assert_eq!(primary_text(&d, text), "4");

    let d = error("def main():\n    g = graph.capture()\n", &[]);
    assert_eq!(
        (d.code, d.message.as_str()),
        (Code::E1006, "`graph.capture` is not supported in host code")
    );

    let d = error("def main():\n    n = 0\n    print(10 // n)\n", &[]);
    assert_eq!((d.code, d.message.as_str()), (Code::E1009, "integer division by zero"));

    let d = error(
        "def main():\n    x = 3\n    assert x == 4, \"x is \" + \"wrong\"\n",
        &[],
    );
    assert_eq!(
        (d.code, d.message.as_str()),
        (Code::E1003, "assertion failed: x is wrong")
    );

    let d = error("def helper() -> f32:\n    return 1.0\n", &[]);
    assert_eq!(
        (d.code, d.message.as_str()),
        (Code::E1002, "the program has no `main` function")
    );

    let text = format!(
        "{}\ndef main():\n    X = zeros(8)\n    Y = zeros(9)\n    saxpy[grid=(1,), block=(8,)](2.0, X, Y, X)\n",
        example("saxpy.tsr").split("def main").next().unwrap()
    );
    let d = error(&text, &[]);
    assert_eq!(
        (d.code, d.message.as_str()),
        (Code::E0302, "dim `N` of `saxpy` gets two different sizes")
    );
    assert_eq!(d.labels[0].message, "dim 0 of `Y` is N = 9");
    assert_eq!(d.labels[1].message, "but dim 0 of `X` is N = 8");

    let text = "@kernel\ndef fill(x: mut f32[N]):\n    x[launch.thread_id()] = 1.0\n\ndef main():\n    x = zeros(4096)\n    fill[grid=(1,), block=(4096,)](x)\n";
    let d = error(text, &[]);
    assert_eq!(d.code, Code::E1008);
    assert!(
        d.message
            .contains("a block of 4096 threads, and a block holds at most 1024"),
        "{}",
        d.message
    );
    assert_eq!(primary_text(&d, text), "fill[grid=(1,), block=(4096,)](x)");

    let d = error("def main():\n    x = zeros(2, 3) + zeros(2)\n", &[]);
    assert_eq!(
        (d.code, d.message.as_str()),
        (Code::E0306, "shapes (2, 3) and (2,) do not broadcast")
    );
}

/// A program with a synchronized kernel, random inputs and host sums prints
/// the same bits every time.
#[test]
fn runs_are_bit_identical() {
    let program = format!(
        "{}\ndef main():\n    x = randn(5000, seed=9)\n    out = zeros(3)\n    sum_reduce[grid=(3,)](x, out)\n    \
         print(out[0] * 1.0, op.sum(x), op.mean(x * x))\n",
        example("sum_reduce.tsr")
    );
    let first = run(&program, &[]).unwrap();
    for _ in 0..19 {
        assert_eq!(run(&program, &[]).unwrap(), first);
    }
}

/// The program of `spec/runtime.md` runs and checks itself.
#[test]
fn the_spec_chapter_example_runs() {
    let spec = std::fs::read_to_string(format!("{}/../spec/runtime.md", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let start = spec.find("```tessera\n").unwrap() + "```tessera\n".len();
    let program = &spec[start..start + spec[start..].find("```").unwrap()];
    let out = run(program, &[]).unwrap();
    let (x, y) = (uniform(4, 1), uniform(4, 2));
    let v: Vec<f32> = (0..4)
        .map(|i| 2.0 * x.as_slice::<f32>().unwrap()[i] + y.as_slice::<f32>().unwrap()[i])
        .collect();
    assert_eq!(
        out,
        format!("{}\n", print::tensor(&Tensor::from_slice(&[4], &v).unwrap()))
    );
}
