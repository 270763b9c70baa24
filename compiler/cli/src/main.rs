//! `tessera`: the command-line interface of the Tessera compiler.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use tessera_base::FileId;
use tessera_diagnostics::{render_human, render_json, render_short, Code, Diagnostic};
use tessera_driver::{Database, Input, Sources, Stage};

mod build;
mod opt;
mod profile;
mod run;
mod tune;

/// Exit codes: 0 clean, 1 errors reported, 2 usage or I/O error.
const EXIT_ERRORS: u8 = 1;
const EXIT_USAGE: u8 = 2;

/// The compiler runs on a thread with a large stack: recursion depth over the
/// syntax tree is bounded by the parser's nesting limits, and this leaves
/// ample room for every pass that walks it.
const COMPILER_STACK_BYTES: usize = 256 << 20;

#[derive(Parser)]
#[command(
    name = "tessera",
    version,
    about = "The Tessera GPU language compiler",
    after_help = "Examples:\n  tessera check examples/\n  tessera check model.tsr --message-format=json\n  tessera check --fix model.tsr\n  tessera check --explain E0031\n  cat model.tsr | tessera check -"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check .tsr files and report diagnostics
    #[command(
        after_help = "Examples:\n  tessera check examples/saxpy.tsr\n  tessera check src/ tests/\n  tessera check - < model.tsr\n  tessera check --message-format=short examples/\n  tessera check --fix model.tsr\n  tessera check --explain E0031\n\nExit status: 0 when no errors are found, 1 when errors are reported,\n2 on a usage or I/O error."
    )]
    Check(CheckArgs),
    /// Print the syntax tree of a .tsr file (a debugging aid)
    Parse {
        /// The file to parse (`-` for standard input)
        file: String,
    },
    /// Read IR text (.tir), verify it, run passes and print the result
    #[command(
        after_help = "Examples:\n  tessera opt kernel.tir --verify\n  tessera opt kernel.tir --pass cse --pass dce --verify-each\n  tessera opt --list-passes\n\nExit status: 0 on success, 1 when the IR is malformed or invalid,\n2 on a usage or I/O error."
    )]
    Opt(opt::OptArgs),
    /// Lower a .tsr file through the IR layers for a target and write them
    #[command(
        after_help = "Examples:\n  tessera build examples/matmul.tsr --target sm_90a --emit graph-ir,schedule-ir\n  tessera build examples/saxpy.tsr --target gfx942 --emit tile-ir,target-ir -o build/"
    )]
    Build(build::BuildArgs),
    /// Run a program: `def main()`, or a function on .npy inputs
    #[command(
        after_help = "Examples:\n  tessera run examples/saxpy.tsr\n  tessera run model.tsr --device cuda -- 1024\n  tessera run model.tsr --entry attention --input q=q.npy --input k=k.npy --input v=v.npy --output out.npy\n\nExit status: 0 when the program ran to its end, 1 when it failed to compile\nor stopped with an error (a failed assert, an `--input` or `--output` file that\ncannot be read or written, E1004, included), 2 on a usage error or a source\nfile that cannot be read."
    )]
    Run(run::RunArgs),
    /// Run a program with every kernel launch and copy timed; write a
    /// trace, a roofline CSV and a roofline plot
    #[command(
        after_help = "Examples:\n  tessera profile examples/matmul.tsr -o prof/\n  tessera profile model.tsr --device cuda --warmup 2 --repeat 10\n  tessera profile model.tsr --entry attention --input q=q.npy --input k=k.npy --input v=v.npy\n\nWrites DIR/trace.json (open it in https://ui.perfetto.dev or chrome://tracing),\nDIR/roofline.csv and DIR/roofline.svg.\n\nExit status: 0 when the runs completed and the profile was written, 1 when the\nprogram failed to compile or stopped with an error, 2 on a usage or I/O error."
    )]
    Profile(profile::ProfileArgs),
    /// Measure the configurations of `@autotune` functions and cache the
    /// fastest for later builds
    #[command(
        after_help = "Examples:\n  tessera tune stdlib/tuned.tsr --dim M=512 --dim N=512 --dim K=512\n  tessera tune model.tsr --entry matmul --device cuda --dim M=4096 --dim N=4096 --dim K=4096 --repeat 20\n\nThe fastest configuration of each function is recorded in $TESSERA_CACHE_DIR/tune.json\n(else .tessera/tune.json), keyed by function, source, target and dims; `tessera build`\nand `tessera run` of the same source for the same target use it.\n\nExit status: 0 when a configuration was chosen and recorded, 1 when the file fails\nto compile or no configuration ran, 2 on a usage or I/O error."
    )]
    Tune(tune::TuneArgs),
    /// Run the `@test` functions of .tsr files
    #[command(
        after_help = "Examples:\n  tessera test stdlib/\n  tessera test examples/saxpy.tsr --filter small\n\nExit status: 0 when every test passed, 1 otherwise, 2 on a usage or I/O error."
    )]
    Test(run::TestArgs),
}

#[derive(Args)]
struct CheckArgs {
    /// Files or directories to check (`-` reads standard input); directories
    /// are searched for `.tsr` files
    #[arg(required_unless_present = "explain")]
    paths: Vec<String>,
    /// How to print diagnostics
    #[arg(long, value_enum, default_value_t = MessageFormat::Human)]
    message_format: MessageFormat,
    /// When to colour the output
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    color: Color,
    /// Apply machine-applicable fixes to the files, then report what is left
    #[arg(long)]
    fix: bool,
    /// Explain an error code in detail, with an example
    #[arg(long, value_name = "CODE")]
    explain: Option<String>,
    /// Stop after parsing: report only lexical and syntax errors
    #[arg(long)]
    syntax_only: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum MessageFormat {
    /// Source snippets with labels
    Human,
    /// One line per diagnostic: `path:line:col: error[CODE]: message`
    Short,
    /// One JSON object per line, on standard output
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let worker = std::thread::Builder::new()
        .name("tessera".into())
        .stack_size(COMPILER_STACK_BYTES)
        .spawn(move || run(cli));
    match worker.map(|handle| handle.join()) {
        Ok(Ok(code)) => code,
        _ => {
            eprintln!("error: internal compiler error; please report it with the input that caused it");
            ExitCode::from(101)
        }
    }
}

fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Check(args) => check(args),
        Command::Parse { file } => parse(&file),
        Command::Opt(args) => opt::run(args),
        Command::Build(args) => build::run(args),
        Command::Run(args) => run::run(args),
        Command::Test(args) => run::test(args),
        Command::Profile(args) => profile::run(args),
        Command::Tune(args) => tune::run(args),
    }
}

fn explain(code: &str) -> ExitCode {
    match Code::lookup(code) {
        Some(info) => {
            // A closed pipe (`| head`) is not an error worth reporting.
            let _ = writeln!(
                std::io::stdout(),
                "{}: {}\n\n{}",
                info.code,
                info.title,
                info.explanation
            );
            ExitCode::SUCCESS
        }
        None => {
            eprintln!("error: `{code}` is not a Tessera error code");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Prints diagnostics to stderr as `human` output (coloured on a terminal).
fn report(sources: &Sources, diags: &[Diagnostic]) {
    let color = std::io::stderr().is_terminal();
    let mut err = std::io::stderr().lock();
    for diag in diags {
        let _ = writeln!(err, "{}", render_human(diag, sources, color));
    }
}

fn load(paths: &[String]) -> Result<Sources, ExitCode> {
    tessera_driver::load(paths).map_err(|error| {
        eprintln!("error: {error}");
        ExitCode::from(EXIT_USAGE)
    })
}

fn check(args: CheckArgs) -> ExitCode {
    if let Some(code) = &args.explain {
        return explain(code);
    }
    let mut sources = match load(&args.paths) {
        Ok(sources) => sources,
        Err(code) => return code,
    };
    let color = match args.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stderr().is_terminal(),
    };
    let stage = if args.syntax_only { Stage::Syntax } else { Stage::Full };
    let mut db = Database::default();
    db.load(&sources);
    db.load_imports(&mut sources);
    if args.fix {
        if let Err(code) = fix(&mut sources, &mut db, stage) {
            return code;
        }
    }
    let mut errors = 0usize;
    let mut files_with_errors = 0usize;
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let (mut out, mut err) = (stdout.lock(), stderr.lock());
    // The modules the files import are checked too (once each): building a
    // file lowers what it imports.
    let mut files: Vec<FileId> = Vec::new();
    for file in sources.requested() {
        let program = match stage {
            Stage::Full => db.program_files(file),
            Stage::Syntax => vec![file],
        };
        for f in program {
            if !files.contains(&f) {
                files.push(f);
            }
        }
    }
    for &file in &files {
        let diags = db.check_to(file, stage);
        let file_errors = diags.iter().filter(|d| d.is_error()).count();
        errors += file_errors;
        files_with_errors += usize::from(file_errors > 0);
        for diag in &diags {
            let written = match args.message_format {
                MessageFormat::Human => writeln!(err, "{}", render_human(diag, &sources, color)),
                MessageFormat::Short => write!(err, "{}", render_short(diag, &sources)),
                MessageFormat::Json => writeln!(out, "{}", render_json(diag, &sources)),
            };
            if written.is_err() {
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    if matches!(args.message_format, MessageFormat::Human) {
        let _ = writeln!(err, "{}", summary(errors, files_with_errors, files.len()));
    }
    if errors > 0 {
        ExitCode::from(EXIT_ERRORS)
    } else {
        ExitCode::SUCCESS
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn summary(errors: usize, files_with_errors: usize, files: usize) -> String {
    if errors == 0 {
        format!("checked {}: no errors", plural(files, "file"))
    } else {
        format!(
            "found {} in {} (of {} checked)",
            plural(errors, "error"),
            plural(files_with_errors, "file"),
            files
        )
    }
}

/// Applies machine-applicable fixes until none are left (overlapping fixes
/// need another round), writes the changed files back and says what changed.
fn fix(sources: &mut Sources, db: &mut Database, stage: Stage) -> Result<(), ExitCode> {
    const MAX_ROUNDS: usize = 8;
    for file in sources.requested().collect::<Vec<_>>() {
        if sources.get(file).input == Input::Stdin {
            eprintln!("error: `--fix` cannot rewrite standard input");
            return Err(ExitCode::from(EXIT_USAGE));
        }
        let original = sources.get(file).text.clone();
        let mut applied = 0;
        for _ in 0..MAX_ROUNDS {
            let diags: Vec<Diagnostic> = db.check_to(file, stage);
            let outcome = tessera_driver::apply_machine_fixes(sources, file, &diags);
            db.set_text(file, &sources.get(file).text);
            applied += outcome.applied;
            if outcome.applied == 0 || outcome.skipped == 0 {
                break;
            }
        }
        let source = sources.get(file);
        if source.text != original {
            let Input::Path(path) = &source.input else {
                unreachable!("standard input was rejected above");
            };
            if let Err(error) = std::fs::write(path, &source.text) {
                eprintln!("error: cannot write `{}`: {error}", source.display);
                return Err(ExitCode::from(EXIT_USAGE));
            }
            eprintln!("fixed {}: applied {}", source.display, plural(applied, "edit"));
        }
    }
    Ok(())
}

fn parse(file: &str) -> ExitCode {
    let sources = match load(std::slice::from_ref(&file.to_string())) {
        Ok(sources) => sources,
        Err(code) => return code,
    };
    let Some(id) = sources.ids().next() else {
        return ExitCode::from(EXIT_USAGE);
    };
    let parse = tessera_syntax::parse(id, &sources.get(id).text);
    let _ = write!(std::io::stdout(), "{}", tessera_syntax::dump(&parse.module));
    for diag in &parse.diagnostics {
        eprint!("{}", render_short(diag, &sources));
    }
    if parse.diagnostics.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_ERRORS)
    }
}
