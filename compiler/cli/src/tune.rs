//! `tessera tune FILE --dim M=4096 …`: measures every configuration that
//! the `@autotune(...)` decorators of a file list, on a device, at the
//! given dims, and records the fastest in the tuning cache
//! (`tessera_driver::tune`), which later builds of the file for that
//! target use.
//!
//! Each configuration is compiled and loaded, then the function is called
//! on the same random inputs (`--warmup` calls, then `--repeat` calls
//! whose kernels are timed on the device as `tessera profile` times them;
//! the median of the calls' sums counts). A configuration that does not compile (its
//! tiles do not fit the target's shared memory, say) is skipped with the
//! reason; one whose result differs from the first configuration's is
//! reported and not chosen.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Args;
use tessera_driver::tune::{self, Config, Entry, TuneCache, Tuning};
use tessera_exec::profile::Profiler;
use tessera_runtime::host::{Call, Executor, TensorValue, Value};
use tessera_runtime::rng::{fill, host_key, Distribution};
use tessera_runtime::Device;

use crate::run::DeviceOpts;
use tessera_diagnostics::{Code, Diagnostic};

use crate::{report, EXIT_ERRORS, EXIT_USAGE};

#[derive(Args)]
pub struct TuneArgs {
    /// The .tsr file whose `@autotune` functions to tune
    file: String,
    /// Tune only this function (default: every `@autotune` function)
    #[arg(long, value_name = "NAME")]
    entry: Option<String>,
    /// The size of a dim of the function's parameters, `NAME=SIZE`
    #[arg(long = "dim", value_name = "NAME=SIZE", required = true)]
    dims: Vec<String>,
    /// Where the configurations run
    #[command(flatten)]
    device: DeviceOpts,
    /// Timed calls per configuration (the median counts)
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Untimed calls before them
    #[arg(long, default_value_t = 1)]
    warmup: u32,
    /// LLVM optimization level (0 to 3)
    #[arg(short = 'O', default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    opt_level: u8,
    /// The tuning cache to update (default: $TESSERA_CACHE_DIR/tune.json,
    /// else .tessera/tune.json)
    #[arg(long, value_name = "FILE")]
    cache: Option<PathBuf>,
}

/// What every measurement of one function shares.
struct Search<'a> {
    /// The file, checked once; each configuration is lowered from it.
    built: &'a tessera_exec::Built,
    device: &'a Device,
    args: &'a TuneArgs,
    function: &'a str,
    dims: &'a [(String, i64)],
    seed: u64,
}

/// One configuration's outcome.
enum Outcome {
    Timed(f64),
    Skipped(String),
}

pub fn run(args: TuneArgs) -> ExitCode {
    let dims = match parse_dims(&args.dims) {
        Ok(d) => d,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let (mut sources, device) = match crate::run::open(std::slice::from_ref(&args.file), &args.device) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let target = tessera_exec::target_for(&device);
    let built = match tessera_exec::build_tuned(&mut sources, target, &Tuning::new()) {
        Ok(b) => b,
        Err(diags) => {
            report(&sources, &diags);
            return ExitCode::from(EXIT_ERRORS);
        }
    };
    let chosen: Vec<(String, tune::Space)> = tune::search_spaces_of(&built.db, built.file)
        .into_iter()
        .filter(|(name, _)| args.entry.as_ref().is_none_or(|e| e == name))
        .collect();
    if chosen.is_empty() {
        let message = match &args.entry {
            Some(e) => format!("`{e}` is not a function with `@autotune(...)` in {}", args.file),
            None => format!("{} has no `@autotune(...)` function", args.file),
        };
        return fail(
            &sources,
            message,
            "decorate an operator function with its knobs: `@autotune(BM=[64, 128], BN=[64, 128])`",
        );
    }
    for (function, _) in &chosen {
        let known = tune::dim_symbols_of(&built.db, built.file, function);
        if let Some((unknown, _)) = dims.iter().find(|(d, _)| !known.contains(d)) {
            eprintln!(
                "error: `--dim {unknown}=…` names no dim of `{function}` (its dims: {})",
                known.join(", ")
            );
            return ExitCode::from(EXIT_USAGE);
        }
    }
    let cache_path = args.cache.clone().unwrap_or_else(TuneCache::default_path);
    if cache_path.is_dir() {
        eprintln!(
            "error: the cache `{}` is a directory; `--cache` takes a file",
            cache_path.display()
        );
        return ExitCode::from(EXIT_USAGE);
    }
    let mut cache = match TuneCache::load(&cache_path) {
        Ok(c) => c,
        Err(message) => return fail(&sources, message, "delete the file: builds then use the default tiles"),
    };
    let source_hash = tune::source_hash(&sources.get(built.file).text);
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    println!(
        "tuning {} for {} on {} at {} (inputs from seed {seed})",
        args.file,
        target.name(),
        device.name(),
        describe_dims(&dims)
    );
    for (function, space) in chosen {
        let configs = tune::configurations(&space);
        let mut results: Vec<(Config, Outcome)> = Vec::new();
        let mut inputs: Option<Vec<Value>> = None;
        let mut reference: Option<Vec<f64>> = None;
        let search = Search {
            built: &built,
            device: &device,
            args: &args,
            function: &function,
            dims: &dims,
            seed,
        };
        for (i, config) in configs.iter().enumerate() {
            let tuning = Tuning::from([(function.clone(), tune::everywhere(config.clone()))]);
            let outcome = measure(&search, &tuning, &mut inputs).and_then(|(time, out)| match &reference {
                None => {
                    reference = Some(out);
                    Ok(time)
                }
                Some(r) if close(r, &out) => Ok(time),
                Some(_) => Err("its result differs from the first configuration's".to_string()),
            });
            let outcome = match outcome {
                Ok(t) => Outcome::Timed(t),
                Err(why) => Outcome::Skipped(why),
            };
            progress(i + 1, configs.len(), &function, config, &outcome);
            results.push((config.clone(), outcome));
        }
        let best = results
            .iter()
            .filter_map(|(c, o)| match o {
                Outcome::Timed(t) => Some((c, *t)),
                Outcome::Skipped(_) => None,
            })
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let Some((config, time)) = best else {
            return fail(
                &sources,
                format!("no configuration of `{function}` ran"),
                "the reasons are above; offer configurations that fit the target",
            );
        };
        println!(
            "best for `{function}`: {} at {} ({} of {} configurations ran)",
            tune::describe(config),
            millis(time),
            results.iter().filter(|(_, o)| matches!(o, Outcome::Timed(_))).count(),
            results.len()
        );
        cache.insert(Entry {
            function: function.clone(),
            source_hash: source_hash.clone(),
            target: target.name().to_string(),
            dims: dims.iter().cloned().collect(),
            config: config.clone(),
            time_us: time * 1e6,
            device: device.name(),
            tuned_at: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        });
    }
    if let Err(message) = cache.save(&cache_path) {
        return fail(
            &sources,
            message,
            "choose a writable cache with `--cache FILE` or $TESSERA_CACHE_DIR",
        );
    }
    println!(
        "recorded in {}: `tessera build --target {}` and `tessera run` of this file use it",
        cache_path.display(),
        target.name()
    );
    ExitCode::SUCCESS
}

/// Reports an E1011 with `help`; the exit code for it.
fn fail(sources: &tessera_driver::Sources, message: String, help: &str) -> ExitCode {
    report(
        sources,
        &[Diagnostic::error(Code::E1011, message).with_help(help.to_string())],
    );
    ExitCode::from(EXIT_ERRORS)
}

/// Lowers the checked file with `tuning` and compiles it, calls
/// `function` on the inputs (drawn on the first call that gets this far),
/// and gives the median time in seconds and the result's values.
fn measure(s: &Search<'_>, tuning: &Tuning, inputs: &mut Option<Vec<Value>>) -> Result<(f64, Vec<f64>), String> {
    let (device, args, function, dims) = (s.device, s.args, s.function, s.dims);
    let first = |diags: Vec<tessera_diagnostics::Diagnostic>| {
        diags
            .into_iter()
            .find(tessera_diagnostics::Diagnostic::is_error)
            .map_or_else(|| "it does not compile".to_string(), |d| d.message)
    };
    let layers = tessera_driver::lower_layers_tuned(
        &s.built.db,
        s.built.file,
        &tessera_driver::registry(),
        &tessera_driver::passes(),
        tuning,
    )
    .map_err(first)?;
    let image = tessera_exec::image(device, &layers, args.opt_level).map_err(first)?;
    let mut loaded = tessera_exec::Loaded::new(device, image).map_err(|e| e.to_string())?;
    if inputs.is_none() {
        *inputs = Some(random_inputs(&loaded, function, dims, s.seed)?);
    }
    let args_now = inputs.as_deref().unwrap_or_default();
    let call = Call {
        file: s.built.file,
        function,
        args: args_now,
        dims,
    };
    for _ in 0..args.warmup {
        loaded.call(device, &call).map_err(|e| e.to_string())?;
    }
    // Each timed call's time is its kernels' time on the device, as
    // `tessera profile` measures it (cold caches, without the host's
    // copies and launch latency).
    let mut profiler = Profiler::new(&loaded, device).map_err(|e| e.to_string())?;
    let mut last = None;
    for _ in 0..args.repeat {
        profiler.begin_run();
        let out = profiler.call(device, &call).map_err(|e| e.to_string())?;
        profiler.end_run();
        last = Some(out);
    }
    let profile = profiler.finish(device);
    let mut times = vec![0.0; args.repeat as usize];
    for launch in &profile.launches {
        times[launch.run - 1] += launch.duration_us * 1e-6;
    }
    times.sort_by(f64::total_cmp);
    let values = match last {
        Some(Value::Tensor(t)) => t.host(device).map_err(|e| e.to_string())?.to_f64_vec(),
        _ => Vec::new(),
    };
    Ok((times[times.len() / 2], values))
}

/// Normal random tensors for the function's tensor inputs (and 1.0 for a
/// scalar), with the shapes the manifest gives at `dims`.
fn random_inputs(
    loaded: &tessera_exec::Loaded,
    function: &str,
    dims: &[(String, i64)],
    seed: u64,
) -> Result<Vec<Value>, String> {
    let host = loaded
        .manifest
        .host_functions
        .iter()
        .find(|h| h.name == function)
        .ok_or_else(|| format!("`{function}` is not an operator function of the module"))?;
    let dim_params = host.params.iter().filter(|p| p.dim.is_some()).count();
    let count = host.params.len() - host.results.len() - host.scratch.len() - dim_params;
    let mut values = Vec::new();
    for (i, p) in host.params.iter().take(count).enumerate() {
        let dtype = tessera_exec::host_dtype(&p.dtype).ok_or_else(|| format!("no random `{}` inputs", p.dtype))?;
        if p.kind != "buffer" {
            values.push(if dtype.is_float() {
                Value::Float(1.0)
            } else {
                Value::Int(1)
            });
            continue;
        }
        let mut shape = Vec::new();
        for d in &p.shape {
            let v = tessera_exec::expr::dim(d, dims).map_err(|e| format!("{e} (give it with `--dim`)"))?;
            shape.push(usize::try_from(v).map_err(|_| format!("the dim `{d}` is {v}"))?);
        }
        let t = fill(
            dtype,
            &shape,
            host_key(seed.wrapping_add(i as u64)),
            Distribution::Normal,
        )
        .map_err(|e| e.to_string())?;
        values.push(Value::Tensor(TensorValue::new(t)));
    }
    Ok(values)
}

/// Whether two configurations' results agree: within 2 % of the largest
/// magnitude (tiles change the order of the sums).
fn close(a: &[f64], b: &[f64]) -> bool {
    let scale = a.iter().fold(0.0f64, |m, x| m.max(x.abs())).max(1e-30);
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 0.02 * scale)
}

/// One line per configuration, with a bar of the search's progress.
fn progress(done: usize, total: usize, function: &str, config: &Config, outcome: &Outcome) {
    const WIDTH: usize = 20;
    let filled = done * WIDTH / total.max(1);
    let bar = format!("{}{}", "#".repeat(filled), "-".repeat(WIDTH - filled));
    let result = match outcome {
        Outcome::Timed(t) => millis(*t),
        Outcome::Skipped(why) => format!("skipped: {why}"),
    };
    let _ = writeln!(
        std::io::stderr().lock(),
        "[{bar}] {done}/{total} {function} {}: {result}",
        tune::describe(config)
    );
}

fn millis(seconds: f64) -> String {
    format!("{:.3} ms", seconds * 1e3)
}

fn parse_dims(given: &[String]) -> Result<Vec<(String, i64)>, String> {
    given
        .iter()
        .map(|d| {
            let (name, size) = d
                .split_once('=')
                .ok_or_else(|| format!("`--dim {d}` must be `NAME=SIZE`"))?;
            let size: i64 = size
                .parse()
                .ok()
                .filter(|&s| s > 0)
                .ok_or_else(|| format!("the size in `--dim {d}` must be a positive integer"))?;
            Ok((name.to_string(), size))
        })
        .collect()
}

fn describe_dims(dims: &[(String, i64)]) -> String {
    dims.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}
