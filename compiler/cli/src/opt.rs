//! `tessera opt`: reads IR text, verifies it, runs passes and prints the
//! result, like `mlir-opt`. The one place where dialects and passes are
//! registered for the command line is [`registry`] and [`passes`].

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::Args;
use tessera_diagnostics::{render_human, Diagnostic};
use tessera_driver::Sources;
use tessera_ir::{parse, print_module, verify_structure, FileMap, PassContext, PassFailure, PassManager};

use crate::{Color, EXIT_ERRORS, EXIT_USAGE};

#[derive(Args)]
pub struct OptArgs {
    /// The IR file to read (`-` for standard input)
    #[arg(required_unless_present = "list_passes")]
    file: Option<String>,
    /// Verify the input against the registered dialects (without it only
    /// the structural rules are checked)
    #[arg(long)]
    verify: bool,
    /// Run a pass; repeat to run several, in order
    #[arg(long = "pass", value_name = "NAME")]
    passes: Vec<String>,
    /// Verify the IR against the registered dialects after every pass
    #[arg(long)]
    verify_each: bool,
    /// Accept ops of dialects that are not registered (checked structurally only)
    #[arg(long)]
    allow_unregistered: bool,
    /// Write the result to this file instead of standard output
    #[arg(short = 'o', value_name = "OUT")]
    output: Option<String>,
    /// Print how long each pass took, on standard error
    #[arg(long)]
    time_passes: bool,
    /// List the registered passes and exit
    #[arg(long)]
    list_passes: bool,
    /// When to colour diagnostics
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    color: Color,
    /// Register the `test` dialect (for the IR test corpus)
    #[arg(long, hide = true)]
    test_dialect: bool,
}

pub use tessera_driver::{passes, registry};

pub fn run(args: OptArgs) -> ExitCode {
    let passes = passes();
    if args.list_passes {
        let mut out = std::io::stdout().lock();
        for info in passes.passes() {
            let _ = writeln!(out, "{:<24} {}", info.name, info.description);
        }
        return ExitCode::SUCCESS;
    }
    let mut pm = PassManager::new();
    pm.verify_each = args.verify_each;
    for name in &args.passes {
        match passes.create(name) {
            Some(pass) => pm.add(pass),
            None => {
                let known: Vec<&str> = passes.passes().map(|p| p.name).collect();
                eprintln!("error: unknown pass `{name}`; the passes are: {}", known.join(", "));
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    let Some(file) = args.file.clone() else {
        return ExitCode::from(EXIT_USAGE);
    };
    let mut sources = match tessera_driver::load(std::slice::from_ref(&file)) {
        Ok(sources) => sources,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let Some(ir_file) = sources.ids().next() else {
        return ExitCode::from(EXIT_USAGE);
    };
    let color = match args.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stderr().is_terminal(),
    };
    let load_errors = sources.get(ir_file).load_diagnostics.clone();
    if !load_errors.is_empty() {
        return report(&load_errors, &sources, color);
    }
    let text = sources.get(ir_file).text.clone();
    let mut module = match parse(&text) {
        Ok(module) => module,
        Err(error) => return report(&[error.to_diagnostic(ir_file)], &sources, color),
    };
    let mut registry = registry();
    registry.allow_unregistered = args.allow_unregistered;
    if args.test_dialect {
        registry.register(Box::new(tessera_ir::testing::TestDialect));
    }
    let errors = if args.verify {
        registry.verify(&module)
    } else {
        verify_structure(&module)
    };
    if !errors.is_empty() {
        let files = file_map(&mut sources, ir_file, errors.iter().map(|e| &e.loc));
        let diags: Vec<Diagnostic> = errors.iter().map(|e| e.to_diagnostic(&files)).collect();
        return report(&diags, &sources, color);
    }
    let mut files = FileMap::new();
    files.set_ir_file(ir_file);
    let outcome = pm.run(
        &mut module,
        &PassContext {
            registry: &registry,
            files: &files,
        },
    );
    if args.time_passes {
        eprint!("{}", pm.timing_report());
    }
    match outcome {
        Ok(()) => {}
        Err(PassFailure::Failed { diagnostics, .. }) => return report(&diagnostics, &sources, color),
        Err(PassFailure::BrokeIr { pass, errors }) => {
            let files = file_map(&mut sources, ir_file, errors.iter().map(|e| &e.loc));
            let diags: Vec<Diagnostic> = errors
                .iter()
                .map(|e| {
                    e.to_diagnostic(&files)
                        .with_note(format!("the IR is invalid after the pass `{pass}`"))
                })
                .collect();
            return report(&diags, &sources, color);
        }
    }
    let printed = print_module(&module);
    match &args.output {
        Some(path) => {
            if let Err(error) = std::fs::write(path, printed) {
                eprintln!("error: cannot write `{path}`: {error}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
        None => {
            let _ = std::io::stdout().lock().write_all(printed.as_bytes());
        }
    }
    ExitCode::SUCCESS
}

/// Maps the IR file and the `.tsr` files that locations name to their
/// ids, loading those sources (through the driver) so diagnostics can show
/// them; a file that cannot be read is left out, and its locations become
/// notes.
fn file_map<'l>(
    sources: &mut Sources,
    ir_file: tessera_base::FileId,
    locs: impl Iterator<Item = &'l tessera_ir::Loc>,
) -> FileMap {
    let mut files = FileMap::new();
    files.set_ir_file(ir_file);
    let mut paths: Vec<String> = locs.filter_map(|l| l.span()).map(|(p, _)| p.to_string()).collect();
    paths.sort();
    paths.dedup();
    for path in paths {
        if let Ok(loaded) = tessera_driver::load(std::slice::from_ref(&path)) {
            if let Some(id) = loaded.ids().next() {
                let source = loaded.get(id);
                let new = sources.add(path.clone(), source.input.clone(), source.text.clone());
                files.insert(path, new);
            }
        }
    }
    files
}

fn report(diags: &[Diagnostic], sources: &Sources, color: bool) -> ExitCode {
    let mut err = std::io::stderr().lock();
    for diag in diags {
        let _ = writeln!(err, "{}", render_human(diag, sources, color));
    }
    ExitCode::from(EXIT_ERRORS)
}
