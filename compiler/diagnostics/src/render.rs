//! The three renderings of a diagnostic: human (ariadne), short and JSON.

use std::fmt::Write as _;

use ariadne::{Color, Config, IndexType, Label as AriadneLabel, Report, ReportKind};
use serde::Serialize;
use tessera_base::{FileId, FileSpan, LineIndex, Span};

use crate::{Diagnostic, Severity, TextEdit};

/// Where renderers find the path, text and line index of a file.
pub trait SourceLookup {
    fn path(&self, file: FileId) -> &str;
    fn text(&self, file: FileId) -> &str;
    fn line_index(&self, file: FileId) -> &LineIndex;
}

/// Clamps a span to the text and to character boundaries, so that a stale or
/// synthetic span never makes a renderer slice through a character.
fn clamp(text: &str, span: Span) -> Span {
    let mut start = (span.start as usize).min(text.len());
    let mut end = (span.end as usize).clamp(start, text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    while !text.is_char_boundary(end) {
        end += 1;
    }
    Span::from_range(start..end)
}

/// The human rendering: a titled report with the source snippet and labels.
pub fn render_human(diag: &Diagnostic, sources: &dyn SourceLookup, color: bool) -> String {
    let title = format!("{}[{}]", diag.severity.as_str(), diag.code);
    let kind_color = match diag.severity {
        Severity::Error => Color::Red,
        Severity::Warning => Color::Yellow,
    };
    let Some(primary) = diag.primary_span() else {
        return render_without_snippet(&title, diag);
    };
    let id = |span: FileSpan| {
        let text = sources.text(span.file);
        (sources.path(span.file).to_string(), clamp(text, span.span).range())
    };
    let config = Config::default().with_color(color).with_index_type(IndexType::Byte);
    let mut report = Report::build(ReportKind::Custom(&title, kind_color), id(primary))
        .with_config(config)
        .with_message(&diag.message);
    // Labels go in source order, so that ariadne shows the labels of a
    // file as one snippet under one header: out of order, it starts a new
    // snippet whose header repeats the primary label's location. The
    // primary label's file comes first.
    let mut by_place: Vec<usize> = (0..diag.labels.len()).collect();
    by_place.sort_by_key(|&i| {
        let at = diag.labels[i].span;
        (at.file != primary.file, at.file, at.span.start, i)
    });
    for (order, &i) in by_place.iter().enumerate() {
        let label = &diag.labels[i];
        let label_color = if label.primary { kind_color } else { Color::Blue };
        let mut l = AriadneLabel::new(id(label.span)).with_order(order as i32);
        if !label.message.is_empty() {
            l = l.with_message(&label.message);
        }
        if color {
            l = l.with_color(label_color);
        }
        report = report.with_label(l);
    }
    for note in &diag.notes {
        report = report.with_note(note);
    }
    if let Some(help) = &diag.help {
        report = report.with_help(help);
    }
    for fix in &diag.fixes {
        report = report.with_help(describe_fix(fix, sources));
    }
    let mut files: Vec<FileId> = diag.labels.iter().map(|l| l.span.file).collect();
    files.sort();
    files.dedup();
    let cache = ariadne::sources(
        files
            .iter()
            .map(|&f| (sources.path(f).to_string(), sources.text(f).to_string())),
    );
    let mut out = Vec::new();
    report
        .finish()
        .write(cache, &mut out)
        .expect("writing to a Vec cannot fail");
    let rendered = String::from_utf8_lossy(&out).into_owned();
    if color {
        rendered
    } else {
        // ariadne colours a custom report kind even when colour is off.
        strip_ansi(&rendered)
    }
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn render_without_snippet(title: &str, diag: &Diagnostic) -> String {
    let mut out = format!("{title}: {}\n", diag.message);
    for note in &diag.notes {
        let _ = writeln!(out, "  = note: {note}");
    }
    if let Some(help) = &diag.help {
        let _ = writeln!(out, "  = help: {help}");
    }
    out
}

/// A fix as one help line; single-line edits also show the line as it would read.
fn describe_fix(fix: &crate::Fix, sources: &dyn SourceLookup) -> String {
    let mut text = format!("fix ({}): {}", fix.applicability.as_str(), fix.message);
    if let Some(preview) = preview_line(&fix.edits, sources) {
        let _ = write!(text, ": `{}`", preview.trim());
    }
    text
}

/// The line touched by the edits, as it reads once they are applied, when
/// all of them fall on one line of one file.
fn preview_line(edits: &[TextEdit], sources: &dyn SourceLookup) -> Option<String> {
    let first = edits.first()?;
    let file = first.span.file;
    let index = sources.line_index(file);
    let line = index.line_col(first.span.span.start).line;
    let same_line = edits.iter().all(|e| {
        e.span.file == file
            && index.line_col(e.span.span.start).line == line
            && index.line_col(e.span.span.end).line == line
    });
    if !same_line {
        return None;
    }
    let start = index.line_start(line);
    let line_text = index.line_text(line);
    let local: Vec<TextEdit> = edits
        .iter()
        .map(|e| TextEdit {
            span: Span::new(e.span.span.start - start, e.span.span.end - start).in_file(file),
            text: e.text.clone(),
        })
        .collect();
    Some(crate::apply_edits(line_text, &local).0)
}

/// One line: `path:line:col: error[E0030]: message` (1-based, columns in characters).
pub fn render_short(diag: &Diagnostic, sources: &dyn SourceLookup) -> String {
    let location = match diag.primary_span() {
        Some(span) => {
            let pos = sources.line_index(span.file).line_col(span.span.start);
            format!("{}:{}:{}: ", sources.path(span.file), pos.line + 1, pos.col + 1)
        }
        None => String::new(),
    };
    format!(
        "{location}{}[{}]: {}\n",
        diag.severity.as_str(),
        diag.code,
        diag.message
    )
}

#[derive(Serialize)]
struct JsonRange {
    file: String,
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    byte_start: u32,
    byte_end: u32,
}

fn json_range(span: FileSpan, sources: &dyn SourceLookup) -> JsonRange {
    let index = sources.line_index(span.file);
    let span_in_text = clamp(sources.text(span.file), span.span);
    let start = index.line_col(span_in_text.start);
    let end = index.line_col(span_in_text.end);
    JsonRange {
        file: sources.path(span.file).to_string(),
        line: start.line + 1,
        column: start.col + 1,
        end_line: end.line + 1,
        end_column: end.col + 1,
        byte_start: span_in_text.start,
        byte_end: span_in_text.end,
    }
}

#[derive(Serialize)]
struct JsonLabel {
    #[serde(flatten)]
    range: JsonRange,
    message: String,
    primary: bool,
}

#[derive(Serialize)]
struct JsonEdit {
    #[serde(flatten)]
    range: JsonRange,
    text: String,
}

#[derive(Serialize)]
struct JsonFix {
    message: String,
    applicability: &'static str,
    edits: Vec<JsonEdit>,
}

#[derive(Serialize)]
struct JsonDiagnostic {
    severity: &'static str,
    code: &'static str,
    message: String,
    #[serde(flatten)]
    range: Option<JsonRange>,
    labels: Vec<JsonLabel>,
    notes: Vec<String>,
    help: Option<String>,
    fixes: Vec<JsonFix>,
}

/// One JSON object on one line (no trailing newline).
pub fn render_json(diag: &Diagnostic, sources: &dyn SourceLookup) -> String {
    let json = JsonDiagnostic {
        severity: diag.severity.as_str(),
        code: diag.code.as_str(),
        message: diag.message.clone(),
        range: diag.primary_span().map(|s| json_range(s, sources)),
        labels: diag
            .labels
            .iter()
            .map(|l| JsonLabel {
                range: json_range(l.span, sources),
                message: l.message.clone(),
                primary: l.primary,
            })
            .collect(),
        notes: diag.notes.clone(),
        help: diag.help.clone(),
        fixes: diag
            .fixes
            .iter()
            .map(|f| JsonFix {
                message: f.message.clone(),
                applicability: f.applicability.as_str(),
                edits: f
                    .edits
                    .iter()
                    .map(|e| JsonEdit {
                        range: json_range(e.span, sources),
                        text: e.text.clone(),
                    })
                    .collect(),
            })
            .collect(),
    };
    serde_json::to_string(&json).expect("diagnostics serialize to JSON")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Applicability, Code, Fix};

    struct OneFile {
        text: String,
        index: LineIndex,
    }

    impl SourceLookup for OneFile {
        fn path(&self, _: FileId) -> &str {
            "t.tsr"
        }
        fn text(&self, _: FileId) -> &str {
            &self.text
        }
        fn line_index(&self, _: FileId) -> &LineIndex {
            &self.index
        }
    }

    fn source(text: &str) -> OneFile {
        OneFile {
            text: text.into(),
            index: LineIndex::new(text),
        }
    }

    fn missing_colon() -> Diagnostic {
        let at = Span::new(8, 8).in_file(FileId(0));
        Diagnostic::error(Code::E0031, "missing `:` after the `if` condition")
            .with_primary(at, "expected `:` here")
            .with_fix(Fix::new("add `:`", Applicability::MachineApplicable).with_edit(at, ":"))
    }

    #[test]
    fn short_form_is_one_line_with_1_based_positions() {
        let src = source("é = 1\nif x > 0\n    y = x\n");
        let diag = missing_colon();
        // byte 8 is the `i` of `if` on line 2 (é is 2 bytes)
        assert_eq!(
            render_short(&diag, &src),
            "t.tsr:2:2: error[E0031]: missing `:` after the `if` condition\n"
        );
    }

    #[test]
    fn json_has_the_documented_fields() {
        let src = source("if x > 0\n    y = x\n");
        let json: serde_json::Value = serde_json::from_str(&render_json(&missing_colon(), &src)).unwrap();
        assert_eq!(json["code"], "E0031");
        assert_eq!(json["severity"], "error");
        assert_eq!(json["line"], 1);
        assert_eq!(json["column"], 9);
        assert_eq!(json["end_column"], 9);
        assert_eq!(json["fixes"][0]["applicability"], "machine-applicable");
        assert_eq!(json["fixes"][0]["edits"][0]["text"], ":");
        assert_eq!(json["labels"][0]["primary"], true);
        assert!(json["help"].is_null());
    }

    #[test]
    fn human_form_has_title_snippet_and_fix_preview() {
        let src = source("if x > 0\n    y = x\n");
        let out = render_human(&missing_colon(), &src, false);
        assert!(out.starts_with("error[E0031]: missing `:`"), "{out}");
        assert!(out.contains("t.tsr:1:9"), "{out}");
        assert!(out.contains("fix (machine-applicable): add `:`: `if x > 0:`"), "{out}");
    }
}
