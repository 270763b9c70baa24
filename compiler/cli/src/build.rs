//! `tessera build FILE --target T --emit LAYERS [-o DIR]`: checks the
//! file, lowers it through the IR layers for the target and writes (or
//! prints) the layers asked for.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use tessera_diagnostics::{render_human, Diagnostic};
use tessera_driver::{Database, Layer, Stage};
use tessera_hir::{Options, Target};

use crate::{load, EXIT_ERRORS, EXIT_USAGE};

#[derive(Args)]
pub struct BuildArgs {
    /// The .tsr file to build
    file: String,
    /// The target to build for
    #[arg(long, value_enum, default_value_t = TargetArg::Sm90a)]
    target: TargetArg,
    /// What to write, comma-separated: graph-ir, schedule-ir, tile-ir, target-ir
    #[arg(long, value_delimiter = ',', value_enum, default_value = "target-ir")]
    emit: Vec<EmitArg>,
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
}

impl EmitArg {
    fn layer(self) -> Layer {
        match self {
            EmitArg::GraphIr => Layer::Graph,
            EmitArg::ScheduleIr => Layer::Schedule,
            EmitArg::TileIr => Layer::Tile,
            EmitArg::TargetIr => Layer::Target,
        }
    }
}

pub fn run(args: BuildArgs) -> ExitCode {
    let mut sources = match load(std::slice::from_ref(&args.file)) {
        Ok(sources) => sources,
        Err(code) => return code,
    };
    let color = std::io::stderr().is_terminal();
    let mut db = Database::default();
    db.load(&sources);
    db.set_options(Options {
        target: args.target.target(),
    });
    db.load_imports(&mut sources);
    let Some(file) = sources.requested().next() else {
        return ExitCode::from(EXIT_USAGE);
    };
    let report = |diags: &[Diagnostic]| {
        let mut err = std::io::stderr().lock();
        for diag in diags {
            let _ = writeln!(err, "{}", render_human(diag, &sources, color));
        }
    };
    let diags = db.check_to(file, Stage::Full);
    if diags.iter().any(Diagnostic::is_error) {
        report(&diags);
        return ExitCode::from(EXIT_ERRORS);
    }
    let layers = match tessera_driver::lower_layers(&db, file, &crate::opt::registry(), &crate::opt::passes()) {
        Ok(layers) => layers,
        Err(diags) => {
            report(&diags);
            return ExitCode::from(EXIT_ERRORS);
        }
    };
    let stem = std::path::Path::new(&sources.get(file).display)
        .file_stem()
        .map_or("out".to_string(), |s| s.to_string_lossy().into_owned());
    for emit in &args.emit {
        let layer = emit.layer();
        let Some(text) = layers.text(layer) else { continue };
        match &args.out_dir {
            Some(dir) => {
                let path = dir.join(format!("{stem}.{}.tir", layer.emit_name()));
                if let Err(error) = std::fs::create_dir_all(dir).and_then(|_| std::fs::write(&path, text)) {
                    eprintln!("error: cannot write `{}`: {error}", path.display());
                    return ExitCode::from(EXIT_USAGE);
                }
            }
            None => {
                let mut out = std::io::stdout().lock();
                if writeln!(out, "// {}\n{text}", layer.emit_name()).is_err() {
                    return ExitCode::from(EXIT_USAGE);
                }
            }
        }
    }
    ExitCode::SUCCESS
}
