//! What a profile says per kernel: [`summarize`] gathers the launches of
//! each kernel, [`roofline_csv`] writes one row per kernel against the
//! device's peaks, and [`table`] the short summary `tessera profile`
//! prints.

use std::fmt::Write as _;

use super::peaks::Peaks;
use super::Profile;

/// What was profiled, for the headers of the outputs.
#[derive(Clone, Debug)]
pub struct Subject {
    /// The program's path as given.
    pub file: String,
    /// The device's name.
    pub device: String,
    pub runs: usize,
    pub warmup: usize,
}

impl Subject {
    /// `examples/matmul.tsr on cpu (2 worker threads): 3 runs after 1 warm-up run`.
    pub fn describe(&self) -> String {
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        let mut text = format!(
            "{} on {}: {} recorded",
            self.file,
            self.device,
            plural(self.runs, "run")
        );
        if self.warmup > 0 {
            let _ = write!(text, " after {}", plural(self.warmup, "warm-up run"));
        }
        text
    }
}

/// The launches of one kernel, together.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelSummary {
    pub kernel: String,
    pub launches: usize,
    /// The kernels' time on the device, in microseconds.
    pub total_us: f64,
    /// FLOPs of all its launches; None when any is unknown.
    pub flops: Option<u64>,
    /// Bytes of all its launches; None when any is unknown.
    pub bytes: Option<u64>,
}

impl KernelSummary {
    pub fn mean_us(&self) -> f64 {
        self.total_us / self.launches as f64
    }

    /// FLOPs per launch (the mean over its launches).
    pub fn flops_per_launch(&self) -> Option<f64> {
        self.flops.map(|f| f as f64 / self.launches as f64)
    }

    /// Bytes per launch (the mean over its launches).
    pub fn bytes_per_launch(&self) -> Option<f64> {
        self.bytes.map(|b| b as f64 / self.launches as f64)
    }

    /// FLOPs per byte.
    pub fn intensity(&self) -> Option<f64> {
        match (self.flops, self.bytes) {
            (Some(f), Some(b)) if b > 0 => Some(f as f64 / b as f64),
            _ => None,
        }
    }

    fn per_second(&self, amount: Option<u64>) -> Option<f64> {
        amount
            .filter(|_| self.total_us > 0.0)
            .map(|a| a as f64 / (self.total_us * 1e-6))
    }

    /// FLOP/s achieved.
    pub fn achieved_flops(&self) -> Option<f64> {
        self.per_second(self.flops)
    }

    /// Bytes/s achieved.
    pub fn achieved_bandwidth(&self) -> Option<f64> {
        self.per_second(self.bytes)
    }

    /// The roof at this kernel's intensity: `min(peak FLOP/s, intensity ×
    /// peak bytes/s)`.
    pub fn attainable(&self, peaks: &Peaks) -> Option<f64> {
        self.intensity().map(|i| peaks.flops.min(i * peaks.bandwidth))
    }

    /// Achieved FLOP/s over the roof.
    pub fn fraction(&self, peaks: &Peaks) -> Option<f64> {
        match (self.achieved_flops(), self.attainable(peaks)) {
            (Some(a), Some(roof)) if roof > 0.0 => Some(a / roof),
            _ => None,
        }
    }
}

/// One summary per kernel, in the order of their first launch.
pub fn summarize(profile: &Profile) -> Vec<KernelSummary> {
    let mut out: Vec<KernelSummary> = Vec::new();
    for l in &profile.launches {
        let i = match out.iter().position(|s| s.kernel == l.kernel) {
            Some(i) => i,
            None => {
                out.push(KernelSummary {
                    kernel: l.kernel.clone(),
                    launches: 0,
                    total_us: 0.0,
                    flops: Some(0),
                    bytes: Some(0),
                });
                out.len() - 1
            }
        };
        let s = &mut out[i];
        s.launches += 1;
        s.total_us += l.duration_us;
        s.flops = s.flops.zip(l.flops).map(|(a, b)| a.saturating_add(b));
        s.bytes = s.bytes.zip(l.bytes).map(|(a, b)| a.saturating_add(b));
    }
    out
}

/// The columns of the roofline CSV.
pub const CSV_COLUMNS: &[&str] = &[
    "kernel",
    "launches",
    "total_us",
    "mean_us",
    "flops",
    "bytes",
    "intensity_flop_per_byte",
    "achieved_gflops",
    "achieved_gbps",
    "peak_gflops",
    "peak_gbps",
    "attainable_gflops",
    "fraction_of_attainable",
];

/// The roofline CSV: `#` comment lines (what was profiled, the cost model,
/// the peaks and how they were found), the header, one row per kernel.
/// FLOPs and bytes are per launch; a value that is unknown is empty.
pub fn roofline_csv(subject: &Subject, summaries: &[KernelSummary], peaks: &Peaks) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# tessera profile {}", subject.describe());
    let _ = writeln!(
        out,
        "# flops and bytes: per launch (the mean over the kernel's launches), from the cost model, an estimate (spec/runtime.md, Profiling); empty where the model has no count"
    );
    let _ = writeln!(
        out,
        "# peak compute: {} GFLOP/s ({})",
        number(peaks.flops / 1e9),
        peaks.flops_source
    );
    let _ = writeln!(
        out,
        "# peak bandwidth: {} GB/s ({})",
        number(peaks.bandwidth / 1e9),
        peaks.bandwidth_source
    );
    let _ = writeln!(out, "{}", CSV_COLUMNS.join(","));
    let opt = |v: Option<f64>| v.map(number).unwrap_or_default();
    for s in summaries {
        let cells = [
            csv_field(&s.kernel),
            s.launches.to_string(),
            number(s.total_us),
            number(s.mean_us()),
            opt(s.flops_per_launch()),
            opt(s.bytes_per_launch()),
            opt(s.intensity()),
            opt(s.achieved_flops().map(|f| f / 1e9)),
            opt(s.achieved_bandwidth().map(|b| b / 1e9)),
            number(peaks.flops / 1e9),
            number(peaks.bandwidth / 1e9),
            opt(s.attainable(peaks).map(|f| f / 1e9)),
            opt(s.fraction(peaks)),
        ];
        let _ = writeln!(out, "{}", cells.join(","));
    }
    out
}

/// The summary `tessera profile` prints: kernel, launches, mean time,
/// GFLOP/s, GB/s and the percentage of the roof.
pub fn table(summaries: &[KernelSummary], peaks: &Peaks) -> String {
    let header = ["kernel", "launches", "mean time", "GFLOP/s", "GB/s", "% of roof"];
    let rows: Vec<[String; 6]> = summaries
        .iter()
        .map(|s| {
            let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
            [
                s.kernel.clone(),
                s.launches.to_string(),
                duration(s.mean_us()),
                opt(s.achieved_flops().map(|f| f / 1e9)),
                opt(s.achieved_bandwidth().map(|b| b / 1e9)),
                s.fraction(peaks)
                    .map_or("-".to_string(), |f| format!("{:.2}%", f * 100.0)),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: [&str; 6]| {
        let mut text = format!("{:<w$}", cells[0], w = widths[0]);
        for (cell, w) in cells.iter().zip(widths).skip(1) {
            let _ = write!(text, "  {cell:>w$}");
        }
        let _ = writeln!(out, "{}", text.trim_end());
    };
    line(header);
    for row in &rows {
        line([&row[0], &row[1], &row[2], &row[3], &row[4], &row[5]]);
    }
    out
}

/// A duration given in microseconds, in the unit that suits it.
pub fn duration(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.3} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.3} ms", us / 1e3)
    } else {
        format!("{us:.3} µs")
    }
}

/// A number for the CSV: integers as integers, others with up to six
/// significant digits after the point.
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        let text = format!("{v:.6}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A CSV field, quoted when it must be.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::LaunchRecord;

    fn launch(kernel: &str, duration_us: f64, flops: Option<u64>, bytes: u64) -> LaunchRecord {
        LaunchRecord {
            kernel: kernel.into(),
            caller: None,
            run: 1,
            grid: [1, 1, 1],
            block: [128, 1, 1],
            shared_bytes: 0,
            start_us: 0.0,
            duration_us,
            flops,
            bytes: Some(bytes),
        }
    }

    fn peaks() -> Peaks {
        Peaks {
            flops: 100e9,
            bandwidth: 10e9,
            flops_source: "test".into(),
            bandwidth_source: "test".into(),
        }
    }

    #[test]
    fn kernels_are_summed_and_placed_under_their_roof() {
        let profile = Profile {
            launches: vec![
                launch("mm", 1000.0, Some(4_000_000_000), 100_000_000),
                launch("copy", 500.0, Some(0), 2_000_000),
                launch("mm", 3000.0, Some(4_000_000_000), 100_000_000),
                launch("scan", 10.0, None, 4),
            ],
            ..Profile::default()
        };
        let s = summarize(&profile);
        let names: Vec<&str> = s.iter().map(|k| k.kernel.as_str()).collect();
        assert_eq!(names, ["mm", "copy", "scan"]);
        let mm = &s[0];
        assert_eq!((mm.launches, mm.total_us, mm.mean_us()), (2, 4000.0, 2000.0));
        assert_eq!(mm.flops_per_launch(), Some(4e9));
        // 40 FLOP/byte: over the ridge (10), so the roof is the compute peak.
        assert_eq!(mm.intensity(), Some(40.0));
        assert_eq!(mm.achieved_flops(), Some(2e12));
        assert_eq!(mm.attainable(&peaks()), Some(100e9));
        assert_eq!(mm.fraction(&peaks()), Some(20.0));
        // No FLOPs: intensity 0, nothing attainable, no fraction.
        assert_eq!(s[1].attainable(&peaks()), Some(0.0));
        assert_eq!(s[1].fraction(&peaks()), None);
        assert_eq!(s[2].flops, None);

        let csv = roofline_csv(
            &Subject {
                file: "m.tsr".into(),
                device: "cpu".into(),
                runs: 2,
                warmup: 1,
            },
            &s,
            &peaks(),
        );
        let rows: Vec<&str> = csv.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(rows[0], CSV_COLUMNS.join(","));
        assert_eq!(rows[1], "mm,2,4000,2000,4000000000,100000000,40,2000,50,100,10,100,20");
        assert_eq!(rows[3], "scan,1,10,10,,4,,,0.0004,100,10,,");
        assert!(csv.starts_with("# tessera profile m.tsr on cpu: 2 runs recorded after 1 warm-up run\n"));

        let text = table(&s, &peaks());
        assert_eq!(text.lines().count(), 4);
        let mm_row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(
            mm_row,
            ["mm", "2", "2.000", "ms", "2000.000", "50.000", "2000.00%"],
            "{text}"
        );
    }

    #[test]
    fn numbers_and_fields_are_plain() {
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.125), "0.125");
        assert_eq!(number(1.0 / 3.0), "0.333333");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(duration(12.5), "12.500 µs");
        assert_eq!(duration(12_500.0), "12.500 ms");
    }
}
