//! `tessera run FILE` runs `def main()` (or `--entry NAME` on `.npy`
//! inputs) on a device; `tessera test PATHS` runs the `@test` functions of
//! .tsr files. Both compile the file for the device (`tessera_exec`), load
//! it there and interpret the host code, which launches the kernels.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use tessera_base::FileId;
use tessera_diagnostics::Diagnostic;
use tessera_driver::Sources;
use tessera_runtime::host::{self, Executor, Program, RunOptions};
use tessera_runtime::{Device, MemoryKind};

use crate::{load, plural, report, EXIT_ERRORS, EXIT_USAGE};

#[derive(Clone, Copy, ValueEnum)]
pub enum DeviceArg {
    /// The host CPU, with GPU semantics (blocks, threads, shared memory,
    /// barriers, warps of 32)
    Cpu,
    /// An NVIDIA GPU through the CUDA driver
    Cuda,
    /// An AMD GPU through HIP
    Hip,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum MemoryArg {
    /// Device memory, copied to and from the host around launches
    Device,
    /// Managed (unified) memory, one address for host and device
    Managed,
    /// Page-locked host memory that kernels reach across the bus
    Pinned,
}

/// Where kernels run and what memory their buffers are.
#[derive(Args)]
pub struct DeviceOpts {
    /// Where kernels run
    #[arg(long, value_enum, default_value_t = DeviceArg::Cpu)]
    device: DeviceArg,
    /// The memory kernels' buffers are allocated in (all of them are host
    /// memory on the CPU)
    #[arg(long, value_enum, default_value_t = MemoryArg::Device)]
    memory: MemoryArg,
}

impl DeviceOpts {
    /// Opens the device with its memory kind; an error is reported here.
    pub(crate) fn open(&self) -> Result<Device, ExitCode> {
        let kind = match self.device {
            DeviceArg::Cpu => tessera_runtime::DeviceKind::Cpu,
            DeviceArg::Cuda => tessera_runtime::DeviceKind::Cuda,
            DeviceArg::Hip => tessera_runtime::DeviceKind::Hip,
        };
        let memory = match self.memory {
            MemoryArg::Device => MemoryKind::Device,
            MemoryArg::Managed => MemoryKind::Managed,
            MemoryArg::Pinned => MemoryKind::Pinned,
        };
        Device::open(kind).and_then(|d| d.with_memory(memory)).map_err(|e| {
            eprintln!("{e}");
            ExitCode::from(EXIT_ERRORS)
        })
    }
}

#[derive(Args)]
pub struct RunArgs {
    /// The .tsr file to run
    pub(crate) file: String,
    #[command(flatten)]
    pub(crate) device: DeviceOpts,
    /// Run this operator or host function instead of `main`, on `--input`s
    #[arg(long, value_name = "NAME")]
    entry: Option<String>,
    /// A parameter of the entry and the .npy file that holds its value
    #[arg(long, value_name = "PARAM=FILE.npy", requires = "entry")]
    input: Vec<String>,
    /// Where the entry's results go, one .npy file per result
    #[arg(long, value_name = "FILE.npy", requires = "entry")]
    output: Vec<PathBuf>,
    /// LLVM optimization level (0 to 3)
    #[arg(short = 'O', default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub(crate) opt_level: u8,
    /// The step that keys the random streams of operator functions (a
    /// training step: each step draws new numbers from the same seeds)
    #[arg(long, value_name = "N", default_value_t = 0)]
    rng_step: u64,
    /// Arguments for `main(args)`
    #[arg(last = true)]
    args: Vec<String>,
}

#[derive(Args)]
pub struct TestArgs {
    /// Files or directories to search for `@test` functions
    #[arg(required = true)]
    paths: Vec<String>,
    #[command(flatten)]
    device: DeviceOpts,
    /// Run only the tests whose name contains this text
    #[arg(long)]
    filter: Option<String>,
    /// LLVM optimization level (0 to 3)
    #[arg(short = 'O', default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    opt_level: u8,
}

/// A program compiled and loaded on a device.
pub(crate) struct Prepared {
    pub(crate) checked: Checked,
    pub(crate) loaded: tessera_exec::Loaded,
}

/// The checked and lowered file of a [`Prepared`] program, with its text
/// and syntax tree and those of the modules it imports, from which the
/// host interpreter's `Program` is made.
pub(crate) struct Checked {
    pub(crate) built: tessera_exec::Built,
    pub(crate) ast: tessera_syntax::ast::Module,
    text: String,
    /// Each imported module: its file, text and syntax tree.
    modules: Vec<(FileId, String, tessera_syntax::ast::Module)>,
}

impl Checked {
    /// The program the host interpreter runs, each function with its role.
    pub(crate) fn program(&self) -> Program<'_> {
        let db = &self.built.db;
        let mut program = Program::new(
            self.built.file,
            &self.text,
            &self.ast,
            tessera_exec::roles(db, self.built.file),
        );
        for (file, text, ast) in &self.modules {
            program = program.with_module(*file, text, ast, tessera_exec::roles(db, *file));
        }
        for (from, module, to) in tessera_exec::imports(db, self.built.file) {
            program = program.with_import(from, &module, to);
        }
        program.with_files(db.paths())
    }
}

/// Checks, lowers and compiles the first requested file of `sources` for
/// `device`, and loads it there.
///
/// `entry`, an `--entry` that names a function of an imported module
/// (`ops.scaled`), has that module built too.
fn prepare(
    sources: &mut Sources,
    device: &Device,
    opt_level: u8,
    entry: Option<&str>,
) -> Result<Prepared, Vec<Diagnostic>> {
    let mut built = tessera_exec::build(sources, tessera_exec::target_for(device))?;
    // A function imported by name (`from ops import scaled`, `--entry
    // scaled`) is its module's.
    let tree = tessera_hir::db::item_tree(&built.db, built.db.source(built.file));
    let by_name = entry
        .filter(|e| !e.contains('.') && !tree.functions.iter().any(|f| f == e))
        .and_then(|e| tree.imports.iter().find(|i| i.binding == e && i.member.is_some()))
        .map(|i| format!("{}.{}", i.module, i.member.as_deref().unwrap_or_default()));
    if let Some((module, _)) = by_name.as_deref().or(entry).and_then(|e| e.rsplit_once('.')) {
        let imported = tessera_exec::imports(&built.db, built.file)
            .into_iter()
            .find(|(from, path, _)| *from == built.file && path == module);
        if let Some((_, _, file)) = imported {
            built.add_module(file)?;
        }
    }
    let loaded = tessera_exec::load(device, &built, opt_level)?;
    let parsed = |file: FileId| {
        let text = sources.get(file).text.clone();
        let ast = tessera_syntax::parse(file, &text).module;
        (file, text, ast)
    };
    let (_, text, ast) = parsed(built.file);
    let modules = built.db.program_files(built.file)[1..]
        .iter()
        .map(|&f| parsed(f))
        .collect();
    Ok(Prepared {
        checked: Checked {
            built,
            ast,
            text,
            modules,
        },
        loaded,
    })
}

/// `paths` loaded and the device of `opts` opened; what fails has been
/// reported, and is the exit code.
pub(crate) fn open(paths: &[String], opts: &DeviceOpts) -> Result<(Sources, Device), ExitCode> {
    let sources = load(paths)?;
    let device = opts.open()?;
    Ok((sources, device))
}

/// The program `args` runs: its file loaded, the device opened, and the
/// file [`prepare`]d there; what fails has been reported, and is the exit
/// code.
pub(crate) fn start(args: &RunArgs) -> Result<(Sources, Device, Prepared), ExitCode> {
    if std::path::Path::new(&args.file).is_dir() {
        eprintln!(
            "error: `{}` is a directory; a program runs from one file (`tessera test` and `tessera check` take directories)",
            args.file
        );
        return Err(ExitCode::from(EXIT_USAGE));
    }
    let (mut sources, device) = open(std::slice::from_ref(&args.file), &args.device)?;
    match prepare(&mut sources, &device, args.opt_level, args.entry.as_deref()) {
        Ok(p) => Ok((sources, device, p)),
        Err(diags) => {
            report(&sources, &diags);
            Err(ExitCode::from(EXIT_ERRORS))
        }
    }
}

pub fn run(args: RunArgs) -> ExitCode {
    let (sources, device, mut p) = match start(&args) {
        Ok(started) => started,
        Err(code) => return code,
    };
    let inputs = match inputs(&args) {
        Ok(inputs) => inputs,
        Err(code) => return code,
    };
    p.loaded.set_rng_step(args.rng_step);
    let program = p.checked.program();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = execute(&program, &mut p.loaded, &device, &args, &inputs, &mut out);
    let _ = out.flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(diags) => {
            report(&sources, &diags);
            ExitCode::from(EXIT_ERRORS)
        }
    }
}

/// The `--input`s of `args` as (parameter, path) pairs.
pub(crate) fn inputs(args: &RunArgs) -> Result<Vec<(String, PathBuf)>, ExitCode> {
    let mut inputs = Vec::new();
    for input in &args.input {
        let Some((name, path)) = input.split_once('=') else {
            eprintln!("error: `--input {input}` must be `PARAM=FILE.npy`");
            return Err(ExitCode::from(EXIT_USAGE));
        };
        inputs.push((name.to_string(), PathBuf::from(path)));
    }
    Ok(inputs)
}

/// Runs `main`, or the `--entry` of `args` on `inputs`, with `executor`;
/// the program prints to `out`.
pub(crate) fn execute(
    program: &Program<'_>,
    executor: &mut dyn Executor,
    device: &Device,
    args: &RunArgs,
    inputs: &[(String, PathBuf)],
    out: &mut dyn Write,
) -> Result<(), Vec<Diagnostic>> {
    let options = RunOptions {
        out,
        argv: args.args.clone(),
    };
    match &args.entry {
        // `--entry main` without inputs or outputs runs `main` as a plain
        // run does, with the arguments after `--`.
        Some(entry) if entry != "main" || !inputs.is_empty() || !args.output.is_empty() => {
            host::run_entry(program, executor, device, entry, inputs, &args.output, options)
        }
        _ => host::run_main(program, executor, device, options),
    }
}

pub fn test(args: TestArgs) -> ExitCode {
    let (all, device) = match open(&args.paths, &args.device) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let files: Vec<String> = all.requested().map(|f| all.get(f).display.clone()).collect();
    let (mut passed, mut failed, mut broken) = (0usize, Vec::new(), 0usize);
    for path in files {
        let mut sources = match load(std::slice::from_ref(&path)) {
            Ok(sources) => sources,
            Err(code) => return code,
        };
        let mut p = match prepare(&mut sources, &device, args.opt_level, None) {
            Ok(p) => p,
            Err(diags) => {
                report(&sources, &diags);
                broken += 1;
                continue;
            }
        };
        let checked = &p.checked;
        let tests: Vec<String> = tessera_exec::test_functions(&checked.built.db, checked.built.file, &checked.ast)
            .into_iter()
            .filter(|t| args.filter.as_ref().is_none_or(|f| t.contains(f.as_str())))
            .collect();
        let program = checked.program();
        for name in tests {
            let mut printed = Vec::new();
            let started = std::time::Instant::now();
            let result = host::run_entry(
                &program,
                &mut p.loaded,
                &device,
                &name,
                &[],
                &[],
                RunOptions {
                    out: &mut printed,
                    argv: vec![],
                },
            );
            let ms = started.elapsed().as_secs_f64() * 1e3;
            match result {
                Ok(()) => {
                    passed += 1;
                    println!("test {path}::{name} ... ok ({ms:.0} ms)");
                }
                Err(diags) => {
                    println!("test {path}::{name} ... FAILED");
                    let _ = std::io::stdout().write_all(&printed);
                    report(&sources, &diags);
                    failed.push(format!("{path}::{name}"));
                }
            }
        }
    }
    let mut summary = format!(
        "test result: {}. {passed} passed; {} failed",
        if failed.is_empty() && broken == 0 {
            "ok"
        } else {
            "FAILED"
        },
        failed.len()
    );
    if broken > 0 {
        summary.push_str(&format!("; {} did not compile", plural(broken, "file")));
    }
    println!("\n{summary}");
    for f in &failed {
        println!("    {f}");
    }
    if failed.is_empty() && broken == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_ERRORS)
    }
}
