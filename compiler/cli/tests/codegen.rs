//! Code generation through LLVM.
//!
//! * Every example (but those `spec/conformance.md` lists as not lowering)
//!   and every standard-library file (and each program of `tests/targets/`)
//!   builds for sm_80 and sm_90a with `ptxas` assembling the PTX (`--emit
//!   ptx,cubin`: the build fails when ptxas rejects it), for gfx90a and
//!   gfx942 with `ld.lld` linking the code object, and for the CPU.
//! * In those builds, `ptxas -v` reports no spills, and no performance loss
//!   (a serialized wgmma pipeline), in any example or
//!   library kernel on sm_80 and sm_90a; the gemm uses `mma.sync` on sm_80
//!   and `wgmma` on sm_90a; a warp-specialized kernel's `setmaxnreg` counts
//!   fit in the registers ptxas gave its block.
//! * Building twice gives the same bytes.
//! * The manifest lists on each parameter the constraints on its dims, for
//!   the kernels (which inherit them from their operator) and the host
//!   function alike.
//! * A kernel compiled for the CPU and run through the JIT computes what a
//!   float64 reference computes.
//!
//! The FileCheck tests over `--emit llvm-ir,ptx,asm` are in `tests/lower/`.

mod common;

use std::path::{Path, PathBuf};

use common::{root, tessera};

/// The examples (but those `spec/conformance.md` lists as not lowering)
/// and the standard library.
fn programs() -> Vec<String> {
    let spec = std::fs::read_to_string(root().join("spec/conformance.md")).unwrap();
    let table: String = spec
        .split("## Lowering")
        .nth(1)
        .map(|rest| rest.split("\n## ").next().unwrap_or("").to_string())
        .unwrap_or_default();
    let mut files = Vec::new();
    for dir in ["examples", "stdlib"] {
        let mut names: Vec<String> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tsr") && !table.contains(&format!("`{n}`")))
            .map(|n| format!("{dir}/{n}"))
            .collect();
        names.sort();
        files.extend(names);
    }
    files
}

fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-codegen-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn every_example_builds_for_every_target() {
    let files = programs();
    assert!(files.len() >= 11, "the examples or the standard library are missing");
    let failures = build_for_every_target(&files, "examples", true);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `tests/targets/`: programs that once aborted LLVM or spilled build for
/// every target without spills.
#[test]
fn register_hungry_programs_build_for_every_target() {
    let mut files: Vec<String> = std::fs::read_dir(root().join("tests/targets"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tsr"))
        .map(|n| format!("tests/targets/{n}"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "tests/targets is missing its programs");
    let failures = build_for_every_target(&files, "targets", false);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Builds each of `files` for every target into a directory of its own
/// (`name`), checking the artifacts, the manifests and ptxas's reports;
/// with `gemm`, that `examples/gemm_tc.tsr` took the tensor cores.
fn build_for_every_target(files: &[String], name: &str, gemm: bool) -> Vec<String> {
    assert!(
        tessera_codegen::ptxas_available(),
        "ptxas is not on PATH: run the tests through scripts/test.sh, which installs it"
    );
    let mut failures = Vec::new();
    for (target, emit, artifact) in [
        ("sm_80", "ptx,cubin", "cubin"),
        ("sm_90a", "ptx,cubin", "cubin"),
        ("gfx90a", "hsaco", "hsaco"),
        ("gfx942", "hsaco", "hsaco"),
        ("cpu", "obj", "o"),
    ] {
        let dir = out_dir(&format!("{name}-{target}"));
        for rel in files {
            let out = tessera(&[
                "build",
                rel,
                "--target",
                target,
                "--emit",
                emit,
                "-o",
                dir.to_str().unwrap(),
            ]);
            let stem = Path::new(rel).file_stem().unwrap().to_string_lossy().into_owned();
            if !out.status.success() {
                failures.push(format!("{rel} for {target}:\n{}", String::from_utf8_lossy(&out.stderr)));
                continue;
            }
            let bytes = std::fs::read(dir.join(format!("{stem}.{target}.{artifact}"))).unwrap_or_default();
            if bytes.len() < 64 || !bytes.starts_with(b"\x7fELF") {
                failures.push(format!("{rel} for {target}: `{artifact}` is not an ELF file"));
            }
            let manifest = std::fs::read_to_string(dir.join(format!("{stem}.{target}.json"))).unwrap_or_default();
            let json: serde_json::Value = serde_json::from_str(&manifest).unwrap_or_default();
            if json["target"] != target || json["kernels"].as_array().is_none_or(|k| k.is_empty()) {
                failures.push(format!(
                    "{rel} for {target}: the manifest lacks its kernels:\n{manifest}"
                ));
            }
            if target.starts_with("sm_") {
                if json["kernels"][0]["registers"].as_u64().is_none() {
                    failures.push(format!("{rel} for {target}: no register count from ptxas"));
                }
                if !json["ptxas"].as_str().is_some_and(|v| v.contains("cuda_")) {
                    failures.push(format!("{rel} for {target}: the manifest lacks ptxas's version"));
                }
                no_spills(rel, target, &json, &mut failures);
            }
        }
        if gemm && target.starts_with("sm_") {
            gemm_uses_tensor_cores(&dir, target, &mut failures);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    failures
}

/// `ptxas -v` reported no spill to local memory in any kernel of the
/// manifest `json`, with at most 255 registers (tensor-core accumulators
/// stay in their instructions' fragment registers), and no performance
/// loss (as a wgmma pipeline it had to serialize).
fn no_spills(rel: &str, target: &str, json: &serde_json::Value, failures: &mut Vec<String>) {
    for kernel in json["kernels"].as_array().into_iter().flatten() {
        let name = &kernel["name"];
        if let Some(notes) = kernel["ptxas_notes"].as_array() {
            failures.push(format!("{rel} for {target}: ptxas says of kernel {name}: {notes:?}"));
        }
        let (spill, regs) = (kernel["spill_bytes"].as_u64(), kernel["registers"].as_u64());
        if spill != Some(0) || regs.is_none_or(|r| r > 255) {
            failures.push(format!(
                "{rel} for {target}: kernel {name} spills {spill:?} bytes with {regs:?} registers"
            ));
        }
        if let Some(split) = kernel["warp_specialize"].as_array() {
            fits_register_pool(rel, target, kernel, split, failures);
        }
    }
}

/// A warp-specialized kernel's `setmaxnreg` counts fit in the registers
/// its block starts with (ptxas's count for each of its threads): the
/// consumers' `setmaxnreg.inc` would otherwise wait forever.
fn fits_register_pool(
    rel: &str,
    target: &str,
    kernel: &serde_json::Value,
    split: &[serde_json::Value],
    failures: &mut Vec<String>,
) {
    let threads: u64 = kernel["block"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b.as_u64())
        .product();
    let (regs, producer, consumer) = (
        kernel["registers"].as_u64().unwrap_or(0),
        split.first().and_then(|r| r.as_u64()).unwrap_or(0),
        split.get(1).and_then(|r| r.as_u64()).unwrap_or(0),
    );
    let wanted = 128 * producer + threads.saturating_sub(128) * consumer;
    if wanted > threads * regs {
        failures.push(format!(
            "{rel} for {target}: kernel {} starts with {threads} × {regs} registers, but its warpgroups ask for {wanted}",
            kernel["name"]
        ));
    }
}

/// The gemm built into `dir` uses the target's tensor-core instruction.
fn gemm_uses_tensor_cores(dir: &Path, target: &str, failures: &mut Vec<String>) {
    let ptx = std::fs::read_to_string(dir.join(format!("gemm_tc.{target}.ptx"))).unwrap_or_default();
    let (wants, refuses) = match target {
        "sm_80" => ("mma.sync.aligned.m16n8k16", "wgmma"),
        _ => ("wgmma.mma_async.sync.aligned.m64n128k16", "mma.sync"),
    };
    if !ptx.contains(wants) || ptx.contains(refuses) {
        failures.push(format!(
            "gemm_tc for {target}: the PTX should use `{wants}`, not `{refuses}`"
        ));
    }
}

#[test]
fn builds_are_byte_identical() {
    for (target, emit, exts) in [
        ("sm_90a", "ptx,llvm-ir", &["ptx", "ll", "json"][..]),
        ("gfx942", "hsaco,asm", &["hsaco", "s", "json"][..]),
    ] {
        let (a, b) = (out_dir(&format!("det-a-{target}")), out_dir(&format!("det-b-{target}")));
        for dir in [&a, &b] {
            let out = tessera(&[
                "build",
                "examples/matmul.tsr",
                "--target",
                target,
                "--emit",
                emit,
                "-o",
                dir.to_str().unwrap(),
            ]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        for ext in exts {
            let name = format!("matmul.{target}.{ext}");
            let (x, y) = (
                std::fs::read(a.join(&name)).unwrap(),
                std::fs::read(b.join(&name)).unwrap(),
            );
            assert!(!x.is_empty() && x == y, "{name} differs between two builds");
        }
        let _ = std::fs::remove_dir_all(&a);
        let _ = std::fs::remove_dir_all(&b);
    }
}

/// `tessera build FILE --target TARGET --emit EMIT -o DIR`, which must
/// succeed.
fn build_into(dir: &Path, file: &str, target: &str, emit: &str) {
    let out = tessera(&[
        "build",
        file,
        "--target",
        target,
        "--emit",
        emit,
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{file}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_manifest_lists_each_parameters_constraints() {
    let dir = out_dir("constraints");
    build_into(&dir, "tests/lower/codegen_matmul_sm80_aligned.tsr", "cpu", "obj");
    let manifest = std::fs::read_to_string(dir.join("codegen_matmul_sm80_aligned.cpu.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let k = "K % 64 == 0";
    let n = "N % 128 == 0";
    // A[M, K], B[K, N], C[M, N], then the dims K, M, N.
    let expected: [&[&str]; 6] = [&[k], &[k, n], &[n], &[k], &[], &[n]];
    for function in ["kernels", "host_functions"] {
        let params = json[function][0]["params"].as_array().unwrap();
        let listed: Vec<Vec<&str>> = params
            .iter()
            .map(|p| {
                p["constraints"]
                    .as_array()
                    .map(|c| c.iter().filter_map(|t| t.as_str()).collect())
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(listed, expected.map(<[&str]>::to_vec), "{function} in\n{manifest}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file's build writes the artifacts of each imported module whose
/// kernels or operator functions its host code launches or calls, named by
/// the module's dotted path; each module's kernels keep their names.
#[test]
fn a_build_writes_the_modules_host_code_reaches_into() {
    let dir = out_dir("modules");
    build_into(&dir, "tests/ui/runtime/modules/host_calls.tsr", "sm_80", "ptx,tile-ir");
    let entries = |module: &str| {
        let ptx = std::fs::read_to_string(dir.join(format!("{module}.sm_80.ptx"))).unwrap();
        let mut names: Vec<String> = ptx
            .lines()
            .filter_map(|l| l.strip_prefix(".visible .entry "))
            .map(|l| l.trim_end_matches('(').to_string())
            .collect();
        names.sort();
        assert!(dir.join(format!("{module}.tile-ir.tir")).exists(), "{module}'s Tile IR");
        assert!(dir.join(format!("{module}.sm_80.json")).exists(), "{module}'s manifest");
        names
    };
    assert_eq!(
        entries("host_calls"),
        ["ops$row_norms_k0", "ops$squared_plus_k0", "shifted_norms_k0", "widths"]
    );
    assert_eq!(entries("ops"), ["row_norms_k0", "scale_k", "squared_plus_k0"]);
    assert_eq!(entries("pkg.norms"), ["unit_rows_k0", "unit_rows_k1"]);
    // A package module's operator function inlined into this file's is
    // named with `$` for the `.` PTX refuses (ptxas, when present, assembles
    // the build).
    build_into(
        &dir,
        "tests/ui/runtime/modules/package_operator_call.tsr",
        "sm_80",
        "ptx,tile-ir",
    );
    assert_eq!(
        entries("package_operator_call"),
        [
            "pkg$norms$unit_rows_k0",
            "pkg$norms$unit_rows_k1",
            "scaled_units_k0",
            "scaled_units_k1"
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unknown_artifacts_for_a_target_are_refused() {
    let out = tessera(&["build", "examples/saxpy.tsr", "--target", "gfx942", "--emit", "ptx"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not apply to the target `gfx942`"));
    let out = tessera(&["build", "examples/saxpy.tsr", "--target", "sm_80", "--emit", "cubin"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is binary"));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("ELF"),
        "binary output is never printed"
    );
}

/// The CPU context of `spec/runtime.md`.
#[repr(C)]
struct Ctx {
    ids: [[u32; 3]; 4],
    shared: *mut u8,
    block: *mut std::ffi::c_void,
    fiber: *mut std::ffi::c_void,
}

#[test]
fn saxpy_runs_on_the_cpu_through_the_jit() {
    let mut sources = tessera_driver::Sources::default();
    let path = root().join("examples/saxpy.tsr");
    let text = std::fs::read_to_string(&path).unwrap();
    let file = sources.add(
        "examples/saxpy.tsr".into(),
        tessera_driver::Input::Path(path.clone()),
        text,
    );
    let mut db = tessera_driver::Database::default();
    db.load(&sources);
    db.set_options(tessera_hir::Options {
        target: tessera_hir::Target::Cpu,
    });
    let mut registry = tessera_ir::Registry::new();
    let mut passes = tessera_ir::PassRegistry::new();
    tessera_ir_tile::register_dialects(&mut registry);
    tessera_ir_graph::register_dialects(&mut registry);
    tessera_ir_tile::register_passes(&mut passes);
    tessera_ir_graph::register_passes(&mut passes);
    let layers = tessera_driver::lower_layers(&db, file, &registry, &passes).unwrap();
    let symbols = tessera_runtime::cpu::host_symbols();
    let module =
        tessera_codegen::CpuModule::new(&layers.target, &tessera_codegen::Options::default(), &symbols).unwrap();
    assert!(!module.manifest.kernels[0].needs_sync);
    // Its linear thread index reads the grid's y and z axes: it takes the
    // hidden folding argument last, 0 for a grid launched as it is.
    assert!(module.manifest.kernels[0].folds_grid);
    let entry = module.entry("saxpy").unwrap();
    // SAFETY: the JIT compiled `saxpy` with the CPU kernel ABI.
    let kernel: extern "C" fn(*mut *mut std::ffi::c_void, *mut Ctx) = unsafe { std::mem::transmute(entry) };
    let n: usize = 1000;
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let x: Vec<f32> = (0..n).map(|_| next()).collect();
    let y: Vec<f32> = (0..n).map(|_| next()).collect();
    let mut out = vec![f32::NAN; n];
    let mut a = 2.5f32;
    let (mut px, mut py, mut po) = (x.as_ptr() as *mut f32, y.as_ptr() as *mut f32, out.as_mut_ptr());
    let mut dim = n as i64;
    let mut unfolded = 0i64;
    let mut args: Vec<*mut std::ffi::c_void> = vec![
        (&mut a as *mut f32).cast(),
        (&mut px as *mut *mut f32).cast(),
        (&mut py as *mut *mut f32).cast(),
        (&mut po as *mut *mut f32).cast(),
        (&mut dim as *mut i64).cast(),
        (&mut unfolded as *mut i64).cast(),
    ];
    let block = 128u32;
    let grid = (n as u32).div_ceil(block);
    for b in 0..grid {
        for t in 0..block {
            let mut ctx = Ctx {
                ids: [[t, 0, 0], [b, 0, 0], [block, 1, 1], [grid, 1, 1]],
                shared: std::ptr::null_mut(),
                block: std::ptr::null_mut(),
                fiber: std::ptr::null_mut(),
            };
            kernel(args.as_mut_ptr(), &mut ctx);
        }
    }
    for i in 0..n {
        let want = f64::from(a) * f64::from(x[i]) + f64::from(y[i]);
        assert!(
            (f64::from(out[i]) - want).abs() <= 1e-6,
            "out[{i}] = {}, want {want}",
            out[i]
        );
    }
}

#[test]
fn ops_the_code_generator_lacks_are_reported_with_e0904() {
    let text = r#"module @m attributes {layer = "target", target = "sm_80"} {
  func.func @k(%0: memref<128xf32, global>) -> () attributes {block = [128], kind = "kernel", layer = "target"} {
    %1 = tile.rng() {dist = "uniform", stream = 0} : () -> tensor<128xf32>
    tile.return() : () -> ()
  }
}
"#;
    let module = tessera_ir::parse(text).expect("the IR parses");
    let layers = tessera_driver::Layers {
        target: module,
        ..Default::default()
    };
    let Err(diags) = tessera_driver::generate(&layers, &tessera_codegen::Options::default()) else {
        panic!("an op without a translation must be refused");
    };
    assert_eq!(diags[0].code, tessera_diagnostics::Code::E0904);
    assert!(diags[0].message.contains("tile.rng"), "{}", diags[0].message);
}
