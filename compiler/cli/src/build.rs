//! `tessera build FILE --target T --emit WHAT [-O N] [-o DIR]`: checks the
//! file, lowers it through the IR layers for the target, generates code
//! through LLVM when an artifact asks for it, and writes (or prints) what
//! was asked for, with a JSON manifest beside the machine code.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use tessera_diagnostics::{Code, Diagnostic};
use tessera_driver::{Layer, Layers, Sources};
use tessera_hir::Target;

use crate::{load, report, EXIT_ERRORS, EXIT_USAGE};

#[derive(Args)]
pub struct BuildArgs {
    /// The .tsr file to build
    file: String,
    /// The target to build for
    #[arg(long, value_enum, default_value_t = TargetArg::Sm90a)]
    target: TargetArg,
    /// What to write, comma-separated: graph-ir, schedule-ir, tile-ir,
    /// target-ir, llvm-ir, ptx, cubin, hsaco, obj, asm
    #[arg(long, value_delimiter = ',', value_enum, default_value = "target-ir")]
    emit: Vec<EmitArg>,
    /// LLVM optimization level (0 to 3)
    #[arg(short = 'O', default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    opt_level: u8,
    /// The directory to write artifacts to (`<stem>.<layer>.tir`); without
    /// it they are printed to standard output
    #[arg(short = 'o', long = "out-dir", value_name = "DIR")]
    out_dir: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum TargetArg {
    #[value(name = "sm_80")]
    Sm80,
    #[value(name = "sm_90a")]
    Sm90a,
    #[value(name = "gfx90a")]
    Gfx90a,
    #[value(name = "gfx942")]
    Gfx942,
    Cpu,
}

impl TargetArg {
    fn target(self) -> Target {
        match self {
            TargetArg::Sm80 => Target::Sm80,
            TargetArg::Sm90a => Target::Sm90a,
            TargetArg::Gfx90a => Target::Gfx90a,
            TargetArg::Gfx942 => Target::Gfx942,
            TargetArg::Cpu => Target::Cpu,
        }
    }
}

/// The layers by their `--emit` names (`graph-ir`, …).
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
#[allow(clippy::enum_variant_names)]
enum EmitArg {
    GraphIr,
    ScheduleIr,
    TileIr,
    TargetIr,
    LlvmIr,
    Ptx,
    Cubin,
    Hsaco,
    Obj,
    Asm,
}

impl EmitArg {
    fn layer(self) -> Option<Layer> {
        match self {
            EmitArg::GraphIr => Some(Layer::Graph),
            EmitArg::ScheduleIr => Some(Layer::Schedule),
            EmitArg::TileIr => Some(Layer::Tile),
            EmitArg::TargetIr => Some(Layer::Target),
            _ => None,
        }
    }
}

pub fn run(args: BuildArgs) -> ExitCode {
    let mut sources = match load(std::slice::from_ref(&args.file)) {
        Ok(sources) => sources,
        Err(code) => return code,
    };
    let Some(file) = sources.requested().next() else {
        return ExitCode::from(EXIT_USAGE);
    };
    let tuning = match tessera_driver::tune::cached_tuning(&sources.get(file).text, args.target.target_name()) {
        Ok((tuning, notes)) => {
            for note in notes {
                eprintln!("note: {note}");
            }
            tuning
        }
        Err(message) => {
            report(&sources, &[Diagnostic::error(Code::E1011, message)]);
            return ExitCode::from(EXIT_ERRORS);
        }
    };
    let built = match tessera_exec::build_tuned(&mut sources, args.target.target(), &tuning) {
        Ok(built) => built,
        Err(diags) => {
            report(&sources, &diags);
            return ExitCode::from(EXIT_ERRORS);
        }
    };
    let stem = std::path::Path::new(&sources.get(file).display)
        .file_stem()
        .map_or("out".to_string(), |s| s.to_string_lossy().into_owned());
    let db = &built.db;
    let modules = built.imports.iter().map(|(module, layers)| {
        let name = tessera_hir::module_name(db, db.source(file), db.source(*module));
        (name, db.source(*module).text(db).as_str(), layers)
    });
    let mut outputs: Vec<(String, Vec<u8>)> = Vec::new();
    for (stem, text, layers) in std::iter::once((stem, sources.get(file).text.as_str(), &built.layers)).chain(modules) {
        match artifacts(&args, &sources, &stem, text, layers) {
            Ok(artifacts) => outputs.extend(artifacts),
            Err(code) => return code,
        }
    }
    write_outputs(&args, outputs)
}

/// What `args` asks to write of one module, `layers` lowered from `text`,
/// each named `<stem>.<layer>.tir` or `<stem>.<target>.<kind>`; a failure
/// is reported here and is the exit code.
fn artifacts(
    args: &BuildArgs,
    sources: &Sources,
    stem: &str,
    text: &str,
    layers: &Layers,
) -> Result<Vec<(String, Vec<u8>)>, ExitCode> {
    let mut outputs: Vec<(String, Vec<u8>)> = Vec::new();
    for emit in &args.emit {
        if let Some(layer) = emit.layer() {
            if let Some(text) = layers.text(layer) {
                outputs.push((format!("{stem}.{}.tir", layer.emit_name()), text.as_bytes().to_vec()));
            }
        }
    }
    if args.emit.iter().all(|e| e.layer().is_some()) {
        return Ok(outputs);
    }
    let options = tessera_codegen::Options {
        opt_level: args.opt_level,
        source_hash: tessera_driver::tune::source_hash(text),
    };
    let mut compiled = tessera_driver::generate(layers, &options).map_err(|diags| {
        report(sources, &diags);
        ExitCode::from(EXIT_ERRORS)
    })?;
    let target = args.target.target_name();
    let nvptx = matches!(args.target, TargetArg::Sm80 | TargetArg::Sm90a);
    let amdgpu = matches!(args.target, TargetArg::Gfx90a | TargetArg::Gfx942);
    let failed = |message: String| {
        eprintln!("error: {message}");
        ExitCode::from(EXIT_ERRORS)
    };
    let work = std::env::temp_dir().join(format!("tessera-build-{}", std::process::id()));
    if nvptx && tessera_codegen::ptxas_available() {
        let report = tessera_codegen::assemble_ptx(&compiled.asm, target, &work).map_err(failed)?;
        for kernel in &mut compiled.manifest.kernels {
            if let Some(k) = report.kernels.iter().find(|k| k.name == kernel.name) {
                kernel.registers = Some(k.registers);
                kernel.spill_bytes = Some(k.spill_bytes);
                kernel.ptxas_notes.clone_from(&k.notes);
            }
        }
        compiled.manifest.ptxas = Some(report.version.clone());
        if args.emit.contains(&EmitArg::Cubin) {
            outputs.push((format!("{stem}.{target}.cubin"), report.cubin));
        }
    } else if nvptx && args.emit.contains(&EmitArg::Cubin) {
        eprintln!(
            "error: `--emit cubin` needs `ptxas`, which is not on PATH (scripts/setup.sh installs it into .venv/bin)"
        );
        return Err(ExitCode::from(EXIT_USAGE));
    }
    for emit in &args.emit {
        let artifact = match emit {
            EmitArg::LlvmIr => Some((format!("{stem}.{target}.ll"), compiled.llvm_ir.as_bytes().to_vec())),
            EmitArg::Ptx if nvptx => Some((format!("{stem}.{target}.ptx"), compiled.asm.clone())),
            EmitArg::Asm => Some((format!("{stem}.{target}.s"), compiled.asm.clone())),
            EmitArg::Obj => compiled.object.clone().map(|o| (format!("{stem}.{target}.o"), o)),
            EmitArg::Hsaco if amdgpu => {
                let object = compiled.object.clone().unwrap_or_default();
                let bytes = tessera_codegen::link_hsaco(&object, &work).map_err(failed)?;
                Some((format!("{stem}.{target}.hsaco"), bytes))
            }
            EmitArg::Ptx | EmitArg::Hsaco | EmitArg::Cubin => {
                let applies = if matches!(emit, EmitArg::Hsaco) { amdgpu } else { nvptx };
                if !applies {
                    eprintln!(
                        "error: `--emit {}` does not apply to the target `{target}`",
                        emit.name()
                    );
                    return Err(ExitCode::from(EXIT_USAGE));
                }
                None
            }
            _ => None,
        };
        outputs.extend(artifact);
    }
    let _ = std::fs::remove_dir_all(&work);
    if args.out_dir.is_some() {
        outputs.push((
            format!("{stem}.{target}.json"),
            compiled.manifest.to_json().into_bytes(),
        ));
    }
    Ok(outputs)
}

/// Writes each output into `args`' directory, or prints it (text only)
/// under a comment line that names it.
fn write_outputs(args: &BuildArgs, outputs: Vec<(String, Vec<u8>)>) -> ExitCode {
    for (name, bytes) in outputs {
        match &args.out_dir {
            Some(dir) => {
                let path = dir.join(&name);
                if let Err(error) = std::fs::create_dir_all(dir).and_then(|_| std::fs::write(&path, &bytes)) {
                    eprintln!("error: cannot write `{}`: {error}", path.display());
                    return ExitCode::from(EXIT_USAGE);
                }
            }
            None => {
                if std::str::from_utf8(&bytes).is_err() {
                    eprintln!("error: `{name}` is binary; write it to a directory with `-o DIR`");
                    return ExitCode::from(EXIT_USAGE);
                }
                let mut out = std::io::stdout().lock();
                let kind = name.rsplit('.').next().unwrap_or("");
                let comment = if kind == "ll" || kind == "s" { ";" } else { "//" };
                if writeln!(out, "{comment} {name}\n{}", String::from_utf8_lossy(&bytes)).is_err() {
                    return ExitCode::from(EXIT_USAGE);
                }
            }
        }
    }
    ExitCode::SUCCESS
}

impl EmitArg {
    fn name(self) -> &'static str {
        match self {
            EmitArg::Ptx => "ptx",
            EmitArg::Cubin => "cubin",
            EmitArg::Hsaco => "hsaco",
            _ => "…",
        }
    }
}

impl TargetArg {
    fn target_name(self) -> &'static str {
        match self {
            TargetArg::Sm80 => "sm_80",
            TargetArg::Sm90a => "sm_90a",
            TargetArg::Gfx90a => "gfx90a",
            TargetArg::Gfx942 => "gfx942",
            TargetArg::Cpu => "cpu",
        }
    }
}
