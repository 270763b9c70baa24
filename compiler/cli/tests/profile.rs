//! `tessera profile` end to end on the CPU: a matmul program of known shape
//! and the saxpy example profiled, their Chrome trace read back with
//! serde_json (an event per launch, metadata, kernels one after another on
//! their track), the roofline CSV checked against the cost model's
//! formulas (2·M·N·K FLOPs, compulsory bytes), the SVG plot well-formed
//! with a labelled point per kernel, and the errors of bad requests.

mod common;

use std::path::Path;

use common::{temp, tessera, text};

use serde_json::Value;

/// What `tessera profile` wrote: the trace, the CSV's rows by kernel, the
/// SVG text.
struct Written {
    trace: Value,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    svg: String,
}

fn read(dir: &Path) -> Written {
    let trace = std::fs::read_to_string(dir.join("trace.json")).expect("trace.json is written");
    let trace: Value = serde_json::from_str(&trace).expect("trace.json is JSON");
    let csv = std::fs::read_to_string(dir.join("roofline.csv")).expect("roofline.csv is written");
    let mut lines = csv.lines().filter(|l| !l.starts_with('#'));
    let header = lines.next().unwrap().split(',').map(str::to_string).collect();
    let rows = lines.map(|l| l.split(',').map(str::to_string).collect()).collect();
    let svg = std::fs::read_to_string(dir.join("roofline.svg")).expect("roofline.svg is written");
    Written {
        trace,
        header,
        rows,
        svg,
    }
}

impl Written {
    fn events(&self, ph: &str) -> Vec<&Value> {
        self.trace["traceEvents"]
            .as_array()
            .expect("traceEvents is an array")
            .iter()
            .filter(|e| e["ph"] == ph)
            .collect()
    }

    /// The complete events of category `cat`, in time order.
    fn spans(&self, cat: &str) -> Vec<&Value> {
        let mut spans: Vec<&Value> = self.events("X").into_iter().filter(|e| e["cat"] == cat).collect();
        spans.sort_by(|a, b| a["ts"].as_f64().partial_cmp(&b["ts"].as_f64()).unwrap());
        spans
    }

    /// The CSV cell of `kernel` under `column`.
    fn cell(&self, kernel: &str, column: &str) -> &str {
        let c = self.header.iter().position(|h| h == column).expect(column);
        let row = self.rows.iter().find(|r| r[0] == kernel).expect(kernel);
        &row[c]
    }

    fn number(&self, kernel: &str, column: &str) -> f64 {
        let cell = self.cell(kernel, column);
        cell.parse()
            .unwrap_or_else(|_| panic!("{column} of {kernel} is `{cell}`"))
    }
}

/// The trace a Perfetto or chrome://tracing reader accepts: the object
/// form, metadata naming the process and the tracks, complete events with
/// positive lengths, and the kernels one after another on their track.
fn check_trace(w: &Written, file: &str) -> Vec<Value> {
    assert_eq!(w.trace["displayTimeUnit"], "ms");
    assert_eq!(w.trace["otherData"]["file"], file);
    assert!(w.trace["otherData"]["device"].as_str().unwrap().starts_with("cpu"));
    assert!(w.trace["otherData"]["peak_gflops"].as_f64().unwrap() > 0.0);
    assert!(w.trace["otherData"]["peak_gbps"].as_f64().unwrap() > 0.0);
    let meta = w.events("M");
    let process = meta
        .iter()
        .find(|e| e["name"] == "process_name")
        .expect("the process is named");
    assert!(process["args"]["name"].as_str().unwrap().contains(file));
    let tracks: Vec<(&Value, &str)> = meta
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| (&e["tid"], e["args"]["name"].as_str().unwrap()))
        .collect();
    let kernel_tid = tracks.iter().find(|t| t.1 == "kernels").expect("a kernel track").0;
    assert!(tracks.iter().any(|t| t.1 == "copies"), "{tracks:?}");
    for e in w.events("X") {
        for key in ["name", "cat", "ts", "dur", "pid", "tid", "args"] {
            assert!(!e[key].is_null(), "{key} missing in {e}");
        }
        assert!(e["ts"].as_f64().unwrap() >= 0.0, "{e}");
    }
    let kernels = w.spans("kernel");
    for k in &kernels {
        assert_eq!(&k["tid"], kernel_tid);
        assert!(k["dur"].as_f64().unwrap() > 0.0, "{k}");
    }
    for pair in kernels.windows(2) {
        let end = pair[0]["ts"].as_f64().unwrap() + pair[0]["dur"].as_f64().unwrap();
        assert!(
            end <= pair[1]["ts"].as_f64().unwrap() + 1e-3,
            "{} overlaps {}",
            pair[0],
            pair[1]
        );
    }
    kernels.into_iter().cloned().collect()
}

/// A well-formed SVG document: one `<svg>` root and balanced tags.
fn check_svg(svg: &str) {
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{svg}");
    assert!(svg.trim_end().ends_with("</svg>"));
    let mut open: Vec<&str> = Vec::new();
    let mut rest = svg;
    while let Some(at) = rest.find('<') {
        let end = rest[at..].find('>').expect("a tag is closed") + at;
        let tag = &rest[at + 1..end];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop(), Some(name), "</{name}> closes the wrong tag");
        } else if !tag.ends_with('/') {
            open.push(tag.split_whitespace().next().unwrap());
        }
        rest = &rest[end + 1..];
        assert!(
            open.first().is_none_or(|root| *root == "svg"),
            "everything is inside <svg>"
        );
    }
    assert!(open.is_empty(), "unclosed {open:?}");
    for entity in svg.split('&').skip(1) {
        let name = &entity[..entity.find(';').expect("entities end with `;`")];
        assert!(["amp", "lt", "gt", "quot", "apos"].contains(&name), "&{name};");
    }
}

#[test]
fn a_matmul_of_known_shape_is_profiled() {
    let dir = temp("profile", "matmul");
    let file = dir.join("mm.tsr");
    std::fs::write(
        &file,
        "\
def matmul(A: bf16[M, K], B: bf16[K, N]) -> f32[M, N] where K % 64 == 0:
    return op.matmul(A, B, tile_shape=(128, 128, 64), accumulate=f32)

def main():
    A = randn(256, 512, seed=1, dtype=bf16)
    B = randn(512, 384, seed=2, dtype=bf16)
    C = matmul(A, B)
    D = matmul(A, B)
    print(\"ran\", C[0, 0] == D[0, 0])
",
    )
    .unwrap();
    let out = dir.join("prof");
    let (file_arg, out_arg) = (file.to_str().unwrap(), out.to_str().unwrap());
    let o = tessera(&["profile", file_arg, "-o", out_arg, "--repeat", "3", "--warmup", "1"]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    // The program's output once (its first run), then the summary.
    assert_eq!(stdout.matches("ran True").count(), 1, "{stdout}");
    assert!(stdout.contains("matmul_k0"), "{stdout}");
    assert!(
        stdout.contains(&out.join("trace.json").display().to_string()),
        "{stdout}"
    );

    let w = read(&out);
    let (m, n, k) = (256u64, 384u64, 512u64);
    let flops = 2 * m * n * k;
    // A and B read once (bf16), C read and written (f32).
    let bytes = 2 * m * k + 2 * k * n + 2 * 4 * m * n;

    // Two launches a run, three recorded runs; the warm-up is not recorded.
    let kernels = check_trace(&w, file_arg);
    assert_eq!(kernels.len(), 6);
    for (i, e) in kernels.iter().enumerate() {
        assert_eq!(e["name"], "matmul_k0");
        assert_eq!(e["args"]["run"], i as u64 / 2 + 1);
        assert_eq!(e["args"]["operator"], "matmul");
        assert_eq!(e["args"]["grid"], serde_json::json!([2, 3, 1]));
        assert_eq!(e["args"]["block"], serde_json::json!([64, 1, 1]));
        assert!(e["args"]["shared_bytes"].as_u64().unwrap() > 0);
        assert_eq!(e["args"]["flops"], flops);
        assert_eq!(e["args"]["bytes"], bytes);
    }
    let runs = w.spans("run");
    assert_eq!(runs.len(), 3);
    for k in &kernels {
        let run = runs[k["args"]["run"].as_u64().unwrap() as usize - 1];
        let (start, end) = (
            run["ts"].as_f64().unwrap(),
            run["ts"].as_f64().unwrap() + run["dur"].as_f64().unwrap(),
        );
        assert!(
            start <= k["ts"].as_f64().unwrap() && k["ts"].as_f64().unwrap() <= end,
            "{k} outside {run}"
        );
    }
    // The CPU keeps tensors in host memory: nothing is copied.
    assert!(w.spans("copy").is_empty());

    assert_eq!(
        w.header,
        [
            "kernel",
            "launches",
            "total_us",
            "mean_us",
            "flops",
            "bytes",
            "intensity_flop_per_byte",
            "achieved_gflops",
            "achieved_gbps",
            "peak_gflops",
            "peak_gbps",
            "attainable_gflops",
            "fraction_of_attainable",
        ]
    );
    assert_eq!(w.rows.len(), 1);
    assert_eq!(w.cell("matmul_k0", "launches"), "6");
    assert_eq!(w.cell("matmul_k0", "flops"), flops.to_string());
    assert_eq!(w.cell("matmul_k0", "bytes"), bytes.to_string());
    let intensity = w.number("matmul_k0", "intensity_flop_per_byte");
    assert!((intensity - flops as f64 / bytes as f64).abs() < 1e-5, "{intensity}");
    let total_us: f64 = kernels.iter().map(|e| e["dur"].as_f64().unwrap()).sum();
    assert!((w.number("matmul_k0", "total_us") - total_us).abs() < 1e-3 * total_us);
    let achieved = w.number("matmul_k0", "achieved_gflops");
    assert!((achieved - 6.0 * flops as f64 / total_us / 1e3).abs() < 1e-3 * achieved);
    let (peak, bandwidth) = (w.number("matmul_k0", "peak_gflops"), w.number("matmul_k0", "peak_gbps"));
    let attainable = w.number("matmul_k0", "attainable_gflops");
    assert!((attainable - peak.min(intensity * bandwidth)).abs() < 1e-3 * attainable);
    let fraction = w.number("matmul_k0", "fraction_of_attainable");
    assert!((fraction - achieved / attainable).abs() < 1e-3 * fraction.max(1e-6));

    check_svg(&w.svg);
    assert!(w.svg.contains(">matmul_k0</text>"), "{}", w.svg);
    assert!(w.svg.contains("arithmetic intensity (FLOP/byte)"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A matmul of the default tile has a narrow kernel for a few rows
/// (`spec/ir-schedule.md`, "Narrow variants"): on the CPU, M of at most
/// 16 runs `<name>_m16` on 16-row tiles, a larger M the kernel itself.
/// `tessera profile FILE` run once, without warm-up, into `dir/prof`:
/// what it wrote and its checked trace's kernel spans.
fn profile_once(dir: &Path, file: &Path) -> (Written, Vec<Value>) {
    let out = dir.join("prof");
    let (file_arg, out_arg) = (file.to_str().unwrap(), out.to_str().unwrap());
    let o = tessera(&["profile", file_arg, "-o", out_arg, "--repeat", "1", "--warmup", "0"]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    let w = read(&out);
    let kernels = check_trace(&w, file_arg);
    (w, kernels)
}

#[test]
fn a_few_row_matmul_launches_the_narrow_kernel() {
    let dir = temp("profile", "narrow");
    let file = dir.join("mm.tsr");
    std::fs::write(
        &file,
        "\
def matmul(A: bf16[M, K], B: bf16[K, N]) -> f32[M, N]:
    return op.matmul(A, B, accumulate=f32)

def main():
    B = randn(128, 192, seed=2, dtype=bf16)
    for m in [16, 17]:
        A = randn(m, 128, seed=m, dtype=bf16)
        assert allclose(matmul(A, B), op.matmul(A, B, accumulate=f64), rtol=1e-4, atol=1e-3)
",
    )
    .unwrap();
    let (_, kernels) = profile_once(&dir, &file);
    let launched: Vec<(&str, &Value, &Value)> = kernels
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), &e["args"]["grid"], &e["args"]["block"]))
        .collect();
    assert_eq!(
        launched,
        [
            (
                "matmul_k0_m16",
                &serde_json::json!([1, 3, 1]),
                &serde_json::json!([64, 1, 1])
            ),
            (
                "matmul_k0",
                &serde_json::json!([1, 3, 1]),
                &serde_json::json!([64, 1, 1])
            ),
        ]
    );
}

/// A kernel and an operator function of an imported module are named by
/// the module in the trace: two files may have functions of one name.
#[test]
fn an_imported_modules_launches_are_named_by_the_module() {
    let dir = temp("profile", "modules");
    std::fs::write(
        dir.join("ops.tsr"),
        "\
@kernel
def scale(x: f32[N], z: mut f32[N]):
    i = launch.thread_id()
    if i < N:
        z[i] = 2.0 * x[i]

def plus_one(x: f32[N]) -> f32[N]:
    return x + 1.0
",
    )
    .unwrap();
    let file = dir.join("main.tsr");
    std::fs::write(
        &file,
        "\
import ops

@kernel
def scale(x: f32[N], z: mut f32[N]):
    i = launch.thread_id()
    if i < N:
        z[i] = 3.0 * x[i]

def main():
    x = arange(64) * 1.0
    z = zeros(64)
    w = zeros(64)
    scale[grid=(1,), block=(64,)](x, z)
    ops.scale[grid=(1,), block=(64,)](x, w)
    assert allclose(ops.plus_one(z - w), x + 1.0)
",
    )
    .unwrap();
    let (_, kernels) = profile_once(&dir, &file);
    let names: Vec<&str> = kernels.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["scale", "ops.scale", "ops.plus_one_k0"]);
    assert_eq!(kernels[2]["args"]["operator"], "ops.plus_one");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_saxpy_example_is_profiled() {
    let dir = temp("profile", "saxpy");
    let o = tessera(&["profile", "examples/saxpy.tsr", "-o", dir.to_str().unwrap()]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    let w = read(&dir);
    let kernels = check_trace(&w, "examples/saxpy.tsr");
    assert_eq!(kernels.len(), 1);
    let n = 1u64 << 20;
    // One thread an element: a multiply and an add each; X and Y read, Out
    // read and written (f32).
    assert_eq!(kernels[0]["args"]["grid"], serde_json::json!([n / 256, 1, 1]));
    assert_eq!(kernels[0]["args"]["block"], serde_json::json!([256, 1, 1]));
    assert!(kernels[0]["args"]["operator"].is_null());
    assert_eq!(w.cell("saxpy", "flops"), (2 * n).to_string());
    assert_eq!(w.cell("saxpy", "bytes"), (16 * n).to_string());
    assert_eq!(w.number("saxpy", "intensity_flop_per_byte"), 0.125);
    check_svg(&w.svg);
    assert!(w.svg.contains(">saxpy</text>"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_requests_are_clear_errors() {
    let dir = temp("profile", "bad");
    let o = tessera(&[
        "profile",
        "examples/saxpy.tsr",
        "--repeat",
        "0",
        "-o",
        dir.to_str().unwrap(),
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error[E1010]") && err.contains("`--repeat` must be at least 1, not 0"),
        "{err}"
    );

    // An output directory inside a file cannot be created.
    let blocker = dir.join("file");
    std::fs::write(&blocker, "").unwrap();
    let inside = blocker.join("prof");
    let o = tessera(&["profile", "examples/saxpy.tsr", "-o", inside.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error[E1010]") && err.contains("cannot create the output directory"),
        "{err}"
    );

    // A program that fails is reported as `tessera run` reports it.
    let o = tessera(&[
        "profile",
        "examples/matmul.tsr",
        "--entry",
        "nothing",
        "-o",
        dir.to_str().unwrap(),
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("E1002"), "{err}");
    assert!(!dir.join("trace.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
