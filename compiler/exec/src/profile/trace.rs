//! A profile as a Chrome trace (the JSON object format of the Trace Event
//! Format, which Perfetto and `chrome://tracing` open): one process named
//! after the program and the device, with a track (a thread) each for the
//! kernels, the copies between host and device, and the runs; every
//! launch, copy and run is a complete event (`"ph": "X"`) with its start
//! and length in microseconds, and the launches carry their grid, block,
//! shared bytes, FLOPs and bytes in `args`. `otherData` holds what was
//! profiled and the peaks.

use serde_json::{json, Map, Value};

use super::peaks::Peaks;
use super::report::Subject;
use super::Profile;

/// The process of every event.
const PID: u32 = 1;

/// The tracks, by thread id: kernels first.
pub const KERNEL_TRACK: u32 = 1;
pub const COPY_TRACK: u32 = 2;
pub const RUN_TRACK: u32 = 3;

/// The trace of `profile` as JSON text.
pub fn chrome_trace(subject: &Subject, profile: &Profile, peaks: &Peaks) -> String {
    let mut events = vec![json!({
        "name": "process_name",
        "ph": "M",
        "pid": PID,
        "args": {"name": format!("tessera profile {} ({})", subject.file, subject.device)},
    })];
    for (tid, name) in [(KERNEL_TRACK, "kernels"), (COPY_TRACK, "copies"), (RUN_TRACK, "runs")] {
        events.push(json!({"name": "thread_name", "ph": "M", "pid": PID, "tid": tid, "args": {"name": name}}));
        events
            .push(json!({"name": "thread_sort_index", "ph": "M", "pid": PID, "tid": tid, "args": {"sort_index": tid}}));
    }
    for l in &profile.launches {
        let mut args = Map::new();
        args.insert("grid".into(), json!(l.grid));
        args.insert("block".into(), json!(l.block));
        args.insert("shared_bytes".into(), json!(l.shared_bytes));
        if let Some(f) = l.flops {
            args.insert("flops".into(), json!(f));
        }
        if let Some(b) = l.bytes {
            args.insert("bytes".into(), json!(b));
        }
        if let Some(caller) = &l.caller {
            args.insert("operator".into(), json!(caller));
        }
        args.insert("run".into(), json!(l.run));
        events.push(complete(
            &l.kernel,
            "kernel",
            KERNEL_TRACK,
            l.start_us,
            l.duration_us,
            Value::Object(args),
        ));
    }
    for c in &profile.copies {
        events.push(complete(
            c.kind.name(),
            "copy",
            COPY_TRACK,
            c.start_us,
            c.duration_us,
            json!({"bytes": c.bytes}),
        ));
    }
    for (i, r) in profile.runs.iter().enumerate() {
        events.push(complete(
            &format!("run {}", i + 1),
            "run",
            RUN_TRACK,
            r.start_us,
            r.duration_us,
            json!({}),
        ));
    }
    let trace = json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "file": subject.file,
            "device": subject.device,
            "runs": subject.runs,
            "warmup": subject.warmup,
            "peak_gflops": peaks.flops / 1e9,
            "peak_gflops_source": peaks.flops_source,
            "peak_gbps": peaks.bandwidth / 1e9,
            "peak_gbps_source": peaks.bandwidth_source,
            "cost_model": "flops and bytes are estimates from the kernels' Tile IR (spec/runtime.md, Profiling)",
        },
    });
    trace.to_string()
}

fn complete(name: &str, category: &str, tid: u32, ts: f64, dur: f64, args: Value) -> Value {
    json!({"name": name, "cat": category, "ph": "X", "ts": ts, "dur": dur, "pid": PID, "tid": tid, "args": args})
}
