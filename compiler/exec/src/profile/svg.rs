//! The roofline plot as SVG, written by hand: log-log axes of arithmetic
//! intensity (FLOP/byte) and performance (GFLOP/s) with a labelled grid
//! line at every decade, the roof (the bandwidth slope up to the ridge,
//! then the compute ceiling) and one labelled point per kernel whose FLOPs
//! and bytes are known.

use std::fmt::Write as _;

use super::peaks::Peaks;
use super::report::{KernelSummary, Subject};

const WIDTH: f64 = 820.0;
const HEIGHT: f64 = 560.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 40.0;
const TOP: f64 = 60.0;
const BOTTOM: f64 = 110.0;
/// At most this many decades on an axis; lower ones are cut.
const MAX_DECADES: i32 = 12;

/// A log-scaled axis over whole decades `lo..=hi` (powers of ten).
struct Axis {
    lo: i32,
    hi: i32,
    /// Pixel positions of `lo` and `hi`.
    from: f64,
    to: f64,
}

impl Axis {
    fn new(min: f64, max: f64, from: f64, to: f64) -> Axis {
        let hi = max.log10().ceil() as i32;
        let lo = (min.log10().floor() as i32).clamp(hi - MAX_DECADES, hi - 1);
        Axis { lo, hi, from, to }
    }

    fn at(&self, v: f64) -> f64 {
        let t = (v.log10() - f64::from(self.lo)) / f64::from(self.hi - self.lo);
        self.from + t * (self.to - self.from)
    }
}

/// The plot of `summaries` under the roof of `peaks`.
pub fn roofline_svg(subject: &Subject, summaries: &[KernelSummary], peaks: &Peaks) -> String {
    let gflops = peaks.flops / 1e9;
    let gbps = peaks.bandwidth / 1e9;
    let ridge = gflops / gbps;
    let points: Vec<(&str, f64, f64)> = summaries
        .iter()
        .filter_map(|s| {
            let x = s.intensity()?;
            let y = s.achieved_flops()? / 1e9;
            (x > 0.0 && y > 0.0).then_some((s.kernel.as_str(), x, y))
        })
        .collect();
    // Half a decade of room around the points, a decade around the ridge.
    let margin = 10f64.sqrt();
    let xs = points.iter().map(|p| p.1);
    let x = Axis::new(
        xs.clone().fold(ridge / 10.0, |m, v| m.min(v / margin)),
        xs.fold(ridge * 10.0, |m, v| m.max(v * margin)),
        LEFT,
        WIDTH - RIGHT,
    );
    let roof = |i: f64| gflops.min(i * gbps);
    let ys = points.iter().map(|p| p.2);
    let y = Axis::new(
        ys.clone().fold(roof(10f64.powi(x.lo)), |m, v| m.min(v / margin)),
        ys.fold(gflops * margin, |m, v| m.max(v * margin)),
        HEIGHT - BOTTOM,
        TOP,
    );

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="28" text-anchor="middle" font-size="15">Roofline: {}</text>"#,
        WIDTH / 2.0,
        escape(&format!("{} on {}", subject.file, subject.device))
    );
    let (left, right, top, bottom) = (x.from, x.to, y.to, y.from);
    let _ = writeln!(
        svg,
        r#"<defs><clipPath id="plot"><rect x="{left}" y="{top}" width="{}" height="{}"/></clipPath></defs>"#,
        right - left,
        bottom - top
    );
    for k in x.lo..=x.hi {
        let px = x.at(10f64.powi(k));
        let _ = writeln!(
            svg,
            r##"<line x1="{px:.1}" y1="{top}" x2="{px:.1}" y2="{bottom}" stroke="#ddd"/><text x="{px:.1}" y="{}" text-anchor="middle">{}</text>"##,
            bottom + 18.0,
            decade(k)
        );
    }
    for k in y.lo..=y.hi {
        let py = y.at(10f64.powi(k));
        let _ = writeln!(
            svg,
            r##"<line x1="{left}" y1="{py:.1}" x2="{right}" y2="{py:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            left - 8.0,
            py + 4.0,
            decade(k)
        );
    }
    let _ = writeln!(
        svg,
        r#"<rect x="{left}" y="{top}" width="{}" height="{}" fill="none" stroke="black"/>"#,
        right - left,
        bottom - top
    );
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">arithmetic intensity (FLOP/byte)</text>"#,
        (left + right) / 2.0,
        bottom + 40.0
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(24 {}) rotate(-90)" text-anchor="middle">performance (GFLOP/s)</text>"#,
        (top + bottom) / 2.0
    );

    // The roof: the bandwidth slope up to the ridge, then the ceiling.
    let (x_lo, x_hi) = (10f64.powi(x.lo), 10f64.powi(x.hi));
    let _ = writeln!(
        svg,
        r##"<polyline clip-path="url(#plot)" fill="none" stroke="#c0392b" stroke-width="2" points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}"/>"##,
        x.at(x_lo),
        y.at(roof(x_lo)),
        x.at(ridge),
        y.at(gflops),
        x.at(x_hi),
        y.at(gflops)
    );
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#c0392b">peak {} GFLOP/s</text>"##,
        right - 6.0,
        y.at(gflops) - 6.0,
        short(gflops)
    );
    // The bandwidth along the slope, a decade below the ridge.
    let (sx, sy) = (x.at(ridge / 10.0), y.at(roof(ridge / 10.0)));
    let angle = (y.at(gflops) - sy).atan2(x.at(ridge) - sx).to_degrees();
    let _ = writeln!(
        svg,
        r##"<text transform="translate({sx:.1} {:.1}) rotate({angle:.1})" fill="#c0392b">{} GB/s</text>"##,
        sy - 6.0,
        short(gbps)
    );

    for (name, i, g) in &points {
        let (px, py) = (x.at(*i), y.at(*g));
        // Labels go right of their point, or left of it near the right edge.
        let (lx, anchor) = if px > (left + right) / 2.0 {
            (px - 8.0, "end")
        } else {
            (px + 8.0, "start")
        };
        let _ = writeln!(
            svg,
            r##"<circle cx="{px:.1}" cy="{py:.1}" r="5" fill="#2471a3"><title>{}</title></circle><text x="{lx:.1}" y="{:.1}" text-anchor="{anchor}">{}</text>"##,
            escape(&format!("{name}: {} FLOP/byte, {} GFLOP/s", short(*i), short(*g))),
            py - 8.0,
            escape(name)
        );
    }

    let unplotted: Vec<&str> = summaries
        .iter()
        .filter(|s| !points.iter().any(|p| p.0 == s.kernel))
        .map(|s| s.kernel.as_str())
        .collect();
    let mut notes = vec![
        format!("compute: {}", peaks.flops_source),
        format!("bandwidth: {}", peaks.bandwidth_source),
    ];
    if !unplotted.is_empty() {
        notes.push(format!("not plotted (FLOPs unknown or zero): {}", unplotted.join(", ")));
    }
    for (k, note) in notes.iter().enumerate() {
        let _ = writeln!(
            svg,
            r##"<text x="{left}" y="{:.1}" font-size="10" fill="#555">{}</text>"##,
            bottom + 62.0 + 14.0 * k as f64,
            escape(note)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// The label of decade `k`: `0.01`, `1`, `1000`, `1e6`.
fn decade(k: i32) -> String {
    match k {
        -3..=-1 => format!("{}", 10f64.powi(k)),
        0..=4 => format!("{}", 10i64.pow(k as u32)),
        _ => format!("1e{k}"),
    }
}

/// A value with three significant digits (all its integer digits when
/// larger), in scientific notation below 0.001.
fn short(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1e-3 {
        let decimals = (2 - v.log10().floor() as i32).max(0) as usize;
        let text = format!("{v:.decimals$}");
        if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            text
        }
    } else {
        format!("{v:.2e}")
    }
}

/// Text as XML character data or an attribute value.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_cover_whole_decades_and_labels_read_plainly() {
        let a = Axis::new(0.05, 300.0, 0.0, 100.0);
        assert_eq!((a.lo, a.hi), (-2, 3));
        assert!((a.at(1.0) - 40.0).abs() < 1e-9);
        assert_eq!(Axis::new(1e-30, 10.0, 0.0, 1.0).lo, 1 - MAX_DECADES);
        assert_eq!(decade(-2), "0.01");
        assert_eq!(decade(3), "1000");
        assert_eq!(decade(6), "1e6");
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        assert_eq!(short(989000.4), "989000");
        assert_eq!(short(21.666), "21.7");
        assert_eq!(short(0.814), "0.814");
        assert_eq!(short(2.0), "2");
        assert_eq!(short(0.00004), "4.00e-5");
    }
}
