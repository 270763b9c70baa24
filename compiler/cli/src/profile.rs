//! `tessera profile FILE` runs a program as `tessera run` does, `--warmup`
//! times unrecorded and then `--repeat` times with every kernel launch and
//! every copy between host and device timed, measures the device's peaks,
//! and writes to `-o DIR`: `trace.json` (a Chrome trace that Perfetto
//! opens), `roofline.csv` and `roofline.svg`. It prints the program's
//! output (of its first run), a summary per kernel and the paths written.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use tessera_diagnostics::{Code, Diagnostic};
use tessera_exec::profile::report::{roofline_csv, summarize, table, Subject};
use tessera_exec::profile::svg::roofline_svg;
use tessera_exec::profile::trace::chrome_trace;
use tessera_exec::profile::{peaks, Profiler};

use crate::run::{self, RunArgs};
use crate::{report, EXIT_ERRORS, EXIT_USAGE};

#[derive(Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    run: RunArgs,
    /// The directory to write trace.json, roofline.csv and roofline.svg to
    #[arg(short = 'o', long = "out-dir", value_name = "DIR", default_value = "profile")]
    out_dir: PathBuf,
    /// How many runs of the program to record
    #[arg(long, value_name = "N", default_value_t = 1)]
    repeat: usize,
    /// How many runs to make first, not recorded (to warm caches and the
    /// device up)
    #[arg(long, value_name = "W", default_value_t = 0)]
    warmup: usize,
}

/// A problem with the request itself (E1010): a usage error.
fn refuse(message: String, help: &str) -> ExitCode {
    let diag = Diagnostic::error(Code::E1010, message).with_help(help.to_string());
    report(&Default::default(), &[diag]);
    ExitCode::from(EXIT_USAGE)
}

pub fn run(args: ProfileArgs) -> ExitCode {
    if args.repeat == 0 {
        return refuse(
            "`--repeat` must be at least 1, not 0".into(),
            "record one run or more: `--repeat 1` is the default",
        );
    }
    if let Err(e) = std::fs::create_dir_all(&args.out_dir) {
        return refuse(
            format!("cannot create the output directory `{}`: {e}", args.out_dir.display()),
            "write the profile to a directory you can create, with `-o DIR`",
        );
    }
    let (sources, device, mut p) = match run::start(&args.run) {
        Ok(started) => started,
        Err(code) => return code,
    };
    let inputs = match run::inputs(&args.run) {
        Ok(inputs) => inputs,
        Err(code) => return code,
    };
    let program = p.checked.program();
    // What the program prints, from its first run only.
    let mut printed: Option<Vec<u8>> = None;
    let failed = |diags: Vec<Diagnostic>, printed: Option<Vec<u8>>| {
        let _ = std::io::stdout().write_all(&printed.unwrap_or_default());
        report(&sources, &diags);
        ExitCode::from(EXIT_ERRORS)
    };
    for _ in 0..args.warmup {
        let mut out = Vec::new();
        let result = run::execute(&program, &mut p.loaded, &device, &args.run, &inputs, &mut out);
        let first = printed.get_or_insert(out);
        if let Err(diags) = result {
            return failed(diags, Some(std::mem::take(first)));
        }
    }
    let mut profiler = match Profiler::new(&p.loaded, &device) {
        Ok(profiler) => profiler,
        Err(e) => return failed(vec![e.to_diagnostic(None)], printed),
    };
    for _ in 0..args.repeat {
        let mut out = Vec::new();
        profiler.begin_run();
        let result = run::execute(&program, &mut profiler, &device, &args.run, &inputs, &mut out);
        profiler.end_run();
        let first = printed.get_or_insert(out);
        if let Err(diags) = result {
            return failed(diags, Some(std::mem::take(first)));
        }
    }
    let profile = profiler.finish(&device);
    let stdout = std::io::stdout();
    let mut stdout = stdout.lock();
    let _ = stdout.write_all(&printed.unwrap_or_default());
    let peaks = match peaks::measure(&device) {
        Ok(peaks) => peaks,
        Err(e) => return failed(vec![e.to_diagnostic(None)], None),
    };
    let subject = Subject {
        file: args.run.file.clone(),
        device: device.name(),
        runs: args.repeat,
        warmup: args.warmup,
    };
    let summaries = summarize(&profile);
    let outputs = [
        ("trace.json", chrome_trace(&subject, &profile, &peaks)),
        ("roofline.csv", roofline_csv(&subject, &summaries, &peaks)),
        ("roofline.svg", roofline_svg(&subject, &summaries, &peaks)),
    ];
    let mut written = Vec::new();
    for (name, contents) in outputs {
        let path = args.out_dir.join(name);
        if let Err(code) = write(&path, &contents) {
            return code;
        }
        written.push(path.display().to_string());
    }
    let _ = write!(
        stdout,
        "\nprofile of {}\n{}\npeaks: {:.3} GFLOP/s, {:.3} GB/s\nwrote {}\n",
        subject.describe(),
        table(&summaries, &peaks),
        peaks.flops / 1e9,
        peaks.bandwidth / 1e9,
        written.join(", ")
    );
    ExitCode::SUCCESS
}

fn write(path: &Path, contents: &str) -> Result<(), ExitCode> {
    std::fs::write(path, contents).map_err(|e| {
        refuse(
            format!("cannot write `{}`: {e}", path.display()),
            "write the profile to a directory you can create, with `-o DIR`",
        )
    })
}
