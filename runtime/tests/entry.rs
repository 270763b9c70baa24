//! `tessera run --entry f --input x=x.npy --output y.npy`: `run_entry` on
//! `.npy` files, and its errors.

mod common;

use std::path::{Path, PathBuf};

use tessera_base::FileId;
use tessera_diagnostics::{Code, Diagnostic};
use tessera_runtime::host::{self, Program, RunOptions};
use tessera_runtime::{npy, Device, DeviceKind, Tensor};

const PROGRAM: &str = "\
def scale(x: f32[N], a: f32) -> f32[N]:
    return x * a

def stats(x: f32[N, M]) -> (f32[M], f32[M]):
    return op.sum(x, axis=0), op.mean(x, axis=0)

def guarded(x: f32[N]) -> f32[N] where N % 4 == 0:
    return x

def widen(x: fp8_e5m2[N]) -> f32[N]:
    return cast(x, f32)

@kernel
def k(x: mut f32[N]):
    x[launch.thread_id()] = 0.0
";

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tessera-entry-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(entry: &str, inputs: &[(&str, &Path)], outputs: &[PathBuf]) -> Result<(), Vec<Diagnostic>> {
    let parse = tessera_syntax::parse(FileId(0), PROGRAM);
    let program = Program::new(FileId(0), PROGRAM, &parse.module, common::roles(&["scale"]));
    let device = Device::open(DeviceKind::Cpu).unwrap();
    let inputs: Vec<(String, PathBuf)> = inputs.iter().map(|(n, p)| (n.to_string(), p.to_path_buf())).collect();
    let mut out = Vec::new();
    host::run_entry(
        &program,
        &mut common::FakeExecutor::default(),
        &device,
        entry,
        &inputs,
        outputs,
        RunOptions {
            out: &mut out,
            argv: vec![],
        },
    )
}

fn fail(entry: &str, inputs: &[(&str, &Path)], outputs: &[PathBuf]) -> Diagnostic {
    let mut d = run(entry, inputs, outputs).unwrap_err();
    assert_eq!(d.len(), 1, "{d:?}");
    d.remove(0)
}

#[test]
fn fp8_npy_files_take_the_parameters_format() {
    // `|V1` files do not say which fp8 format they hold: the parameter's
    // dtype decides (these bytes are 1.5, -0.25, 57344 and NaN in E5M2,
    // 0.75, -0.0078125, 448 and NaN in E4M3).
    let d = dir("fp8");
    let bytes = [0x3e_u8, 0xb4, 0x7b, 0x7f];
    let t = Tensor::from_bytes(tessera_runtime::DType::Fp8E5m2, &[4], &bytes).unwrap();
    npy::save(&d.join("x.npy"), &t).unwrap();
    assert_eq!(
        npy::load(&d.join("x.npy")).unwrap().dtype(),
        tessera_runtime::DType::Fp8E4m3
    );
    let out = [d.join("y.npy")];
    run("widen", &[("x", &d.join("x.npy"))], &out).unwrap();
    let y = npy::load(&out[0]).unwrap().to_f64_vec();
    assert_eq!(&y[..3], &[1.5, -0.25, 57344.0]);
    assert!(y[3].is_nan());
}

#[test]
fn host_functions_run_on_npy_inputs() {
    let d = dir("host");
    let x: Vec<f32> = (0..12).map(|i| i as f32 * 0.25 - 1.0).collect();
    npy::save(&d.join("x.npy"), &Tensor::from_slice(&[3, 4], &x).unwrap()).unwrap();
    let outputs = [d.join("sum.npy"), d.join("mean.npy")];
    run("stats", &[("x", &d.join("x.npy"))], &outputs).unwrap();
    let (sum, mean) = (npy::load(&outputs[0]).unwrap(), npy::load(&outputs[1]).unwrap());
    for j in 0..4 {
        let col: Vec<f64> = (0..3).map(|i| x[i * 4 + j] as f64).collect();
        let reference: f64 = col.iter().sum();
        assert!((sum.get(j).as_f64() - reference).abs() < 1e-6, "column {j}");
        assert!((mean.get(j).as_f64() - reference / 3.0).abs() < 1e-6, "column {j}");
    }
    // Operator functions go through the executor; a 0-d array is a scalar.
    npy::save(
        &d.join("v.npy"),
        &Tensor::from_slice(&[3], &[1.0f32, -2.0, 0.5]).unwrap(),
    )
    .unwrap();
    npy::save(&d.join("a.npy"), &Tensor::from_slice(&[], &[4.0f64]).unwrap()).unwrap();
    let out = [d.join("scaled.npy")];
    run("scale", &[("x", &d.join("v.npy")), ("a", &d.join("a.npy"))], &out).unwrap();
    assert_eq!(
        npy::load(&out[0]).unwrap().as_slice::<f32>().unwrap(),
        &[4.0, -8.0, 2.0]
    );
    // Or the number itself, for a scalar parameter: `--input a=-0.5`, `a=2`.
    run("scale", &[("x", &d.join("v.npy")), ("a", Path::new("-0.5"))], &out).unwrap();
    assert_eq!(
        npy::load(&out[0]).unwrap().as_slice::<f32>().unwrap(),
        &[-0.5, 1.0, -0.25]
    );
    run("scale", &[("x", &d.join("v.npy")), ("a", Path::new("2"))], &out).unwrap();
    assert_eq!(
        npy::load(&out[0]).unwrap().as_slice::<f32>().unwrap(),
        &[2.0, -4.0, 1.0]
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_inputs_are_clear_errors() {
    let d = dir("bad");
    npy::save(&d.join("f64.npy"), &Tensor::from_slice(&[4], &[1.0f64; 4]).unwrap()).unwrap();
    npy::save(&d.join("six.npy"), &Tensor::from_slice(&[6], &[1.0f32; 6]).unwrap()).unwrap();
    std::fs::write(d.join("junk.npy"), b"not numpy").unwrap();

    let f64_path = d.join("f64.npy");
    let e = fail("guarded", &[("x", &f64_path)], &[]);
    assert_eq!(
        (e.code, e.message),
        (
            Code::E1005,
            format!(
                "`--input x={}` holds an f64 array, but the parameter is f32[N]",
                f64_path.display()
            )
        )
    );
    assert_eq!(
        e.help,
        Some(format!(
            "convert the array when saving it: `np.save(\"{}\", a.astype(np.float32))`",
            f64_path.display()
        ))
    );
    assert_eq!(e.labels.len(), 1, "one label, at the parameter");

    let e = fail("guarded", &[("x", &d.join("six.npy"))], &[d.join("out.npy")]);
    assert_eq!(e.code, Code::E0304);
    assert_eq!(e.labels[0].message, "dim 0 of `x` is N = 6, and 6 % 4 == 2");
    assert_eq!(
        e.help.as_deref(),
        Some("pad dim 0 of `x` to 8, or relax the constraint")
    );

    let e = fail("guarded", &[("x", &d.join("junk.npy"))], &[]);
    assert_eq!(e.code, Code::E1004);
    assert!(
        e.message.contains("junk.npy` is not a valid .npy file"),
        "{}",
        e.message
    );

    let e = fail("guarded", &[], &[]);
    assert_eq!(
        (e.code, e.message.as_str()),
        (Code::E1005, "parameter `x` of `guarded` has no input")
    );
    let e = fail("guarded", &[("x", &d.join("six.npy")), ("y", &d.join("six.npy"))], &[]);
    assert_eq!(
        (e.code, e.message.as_str()),
        (Code::E1005, "`--input y=…` names no parameter of `guarded`")
    );
    let e = fail("missing", &[], &[]);
    assert_eq!(
        (e.code, e.message.as_str()),
        (Code::E1002, "the program has no function `missing`")
    );
    // A near miss is named: `--entry scal` is `scale`, `--input xx=` is `x`.
    let e = fail("scal", &[], &[]);
    assert_eq!(e.help.as_deref(), Some("did you mean `--entry scale`?"));
    let e = fail("guarded", &[("xx", &d.join("six.npy"))], &[]);
    assert_eq!(e.help.as_deref(), Some("did you mean `--input x=…`?"));
    let e = fail("k", &[], &[]);
    assert_eq!(e.code, Code::E1002);
    let e = fail("scale", &[("x", &d.join("six.npy"))], &[]);
    assert_eq!(
        (e.code, e.message.as_str()),
        (Code::E1005, "parameter `a` of `scale` has no input")
    );
    std::fs::remove_dir_all(&d).unwrap();
}
