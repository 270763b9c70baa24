//! LLVM FileCheck semantics as a library: match the directives written in
//! a check file (`// CHECK: ...`) against an input text.
//!
//! Directives, for a prefix `CHECK` (or the prefixes in [`Options`]):
//!
//! - `CHECK: p`: `p` matches at or after the end of the previous match.
//! - `CHECK-NEXT: p`: on the line right after the previous match.
//! - `CHECK-SAME: p`: on the same line as the previous match, after it.
//! - `CHECK-EMPTY:`: the line after the previous match is empty.
//! - `CHECK-NOT: p`: `p` does not occur between the previous match and the
//!   next one (or the end of the input, or of the label's section).
//! - `CHECK-DAG: p`: consecutive DAG directives match in any order, without
//!   overlapping, between the previous match and the next directive's.
//! - `CHECK-LABEL: p`: matched first, in order, each once; they cut the
//!   input into sections, and the directives after a label match in its
//!   section only.
//!
//! A pattern is literal text, except `{{regex}}` (the `regex` crate's
//! syntax), `[[NAME:regex]]` (match `regex`, remember the text as `NAME`)
//! and `[[NAME]]` (the text remembered). Runs of spaces and tabs in a
//! pattern match any nonempty run of spaces and tabs; leading and trailing
//! whitespace is ignored. A pattern matches within one line.

use std::collections::HashMap;
use std::fmt;

use regex::Regex;

/// How to read the check file.
#[derive(Clone, Debug)]
pub struct Options {
    /// The directive prefixes (`--check-prefix`); `CHECK` by default.
    pub prefixes: Vec<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            prefixes: vec!["CHECK".to_string()],
        }
    }
}

impl Options {
    pub fn with_prefixes(prefixes: impl IntoIterator<Item = impl Into<String>>) -> Options {
        Options {
            prefixes: prefixes.into_iter().map(Into::into).collect(),
        }
    }
}

/// Why the input does not match (or the check file is broken): the
/// directive's line in the check file, what went wrong, and notes saying
/// where in the input it searched and what came closest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// 1-based line of the directive in the check file (0 for the file as
    /// a whole).
    pub check_line: usize,
    /// The directive as written, trimmed.
    pub directive: String,
    pub message: String,
    pub notes: Vec<String>,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.check_line > 0 {
            writeln!(f, "check line {}: {}", self.check_line, self.message)?;
            writeln!(f, "  {}", self.directive)?;
        } else {
            writeln!(f, "{}", self.message)?;
        }
        for note in &self.notes {
            writeln!(f, "note: {note}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// Checks `input` against the directives in `check_text`.
pub fn check(check_text: &str, input: &str, options: &Options) -> Result<(), Error> {
    let directives = parse_directives(check_text, options)?;
    Matcher::new(input).run(&directives)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Check,
    Next,
    Same,
    Not,
    Dag,
    Label,
    Empty,
}

impl Kind {
    fn suffix(self) -> &'static str {
        match self {
            Kind::Check => "",
            Kind::Next => "-NEXT",
            Kind::Same => "-SAME",
            Kind::Not => "-NOT",
            Kind::Dag => "-DAG",
            Kind::Label => "-LABEL",
            Kind::Empty => "-EMPTY",
        }
    }

    const ALL: [Kind; 7] = [
        Kind::Check,
        Kind::Next,
        Kind::Same,
        Kind::Not,
        Kind::Dag,
        Kind::Label,
        Kind::Empty,
    ];
}

#[derive(Clone, Debug)]
enum Piece {
    Literal(String),
    Regex(String),
    Def(String, String),
    Use(String),
}

#[derive(Clone, Debug)]
struct Directive {
    kind: Kind,
    /// `CHECK-NEXT` and so on, with the prefix used.
    name: String,
    line: usize,
    text: String,
    pieces: Vec<Piece>,
}

impl Directive {
    fn error(&self, message: impl Into<String>) -> Error {
        Error {
            check_line: self.line,
            directive: self.text.clone(),
            message: format!("{}: {}", self.name, message.into()),
            notes: Vec::new(),
        }
    }

    /// The pattern as a regex, with variables substituted.
    fn regex(&self, vars: &HashMap<String, String>) -> Result<(Regex, Vec<String>), Error> {
        let mut source = String::new();
        let mut captures = Vec::new();
        for piece in &self.pieces {
            match piece {
                Piece::Literal(text) => {
                    let mut in_space = false;
                    for c in text.chars() {
                        if c == ' ' || c == '\t' {
                            if !in_space {
                                source.push_str("[ \t]+");
                            }
                            in_space = true;
                        } else {
                            in_space = false;
                            source.push_str(&regex::escape(c.encode_utf8(&mut [0; 4])));
                        }
                    }
                }
                Piece::Regex(re) => source.push_str(&format!("(?:{re})")),
                Piece::Def(name, re) => {
                    source.push_str(&format!("({re})"));
                    captures.push(name.clone());
                }
                Piece::Use(name) => match vars.get(name) {
                    Some(value) => source.push_str(&regex::escape(value)),
                    None => return Err(self.error(format!("variable `{name}` is used before it is defined"))),
                },
            }
        }
        let regex = Regex::new(&source).map_err(|e| self.error(format!("invalid regex: {e}")))?;
        Ok((regex, captures))
    }

    /// The literal parts, for finding the closest line.
    fn skeleton(&self, vars: &HashMap<String, String>) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Literal(t) => out.push_str(t),
                Piece::Use(name) => out.push_str(vars.get(name).map_or("", String::as_str)),
                Piece::Regex(_) | Piece::Def(..) => {}
            }
        }
        out
    }
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn parse_directives(check_text: &str, options: &Options) -> Result<Vec<Directive>, Error> {
    let file_error = |message: String| Error {
        check_line: 0,
        directive: String::new(),
        message,
        notes: Vec::new(),
    };
    for p in &options.prefixes {
        let valid = p.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) && p.chars().all(is_word_char);
        if !valid {
            return Err(file_error(format!("invalid check prefix `{p}`")));
        }
    }
    let mut out = Vec::new();
    for (i, line) in check_text.lines().enumerate() {
        if let Some(d) = directive_in_line(line, i + 1, options)? {
            out.push(d);
        }
    }
    if out.is_empty() {
        return Err(file_error(format!(
            "no check directives found (prefixes: {})",
            options.prefixes.join(", ")
        )));
    }
    let mut defined = Vec::new();
    for d in &out {
        if d.kind == Kind::Not && d.pieces.iter().any(|p| matches!(p, Piece::Def(..))) {
            return Err(d.error("a NOT directive cannot define variables"));
        }
        for p in &d.pieces {
            if let Piece::Use(name) = p {
                if !defined.contains(name) {
                    return Err(d.error(format!("variable `{name}` is used before it is defined")));
                }
            }
        }
        for p in &d.pieces {
            if let Piece::Def(name, _) = p {
                defined.push(name.clone());
            }
        }
        d.regex(&defined.iter().map(|n| (n.clone(), String::new())).collect())?;
    }
    Ok(out)
}

/// The directive on a line, if any: the first occurrence of a prefix that
/// starts a word and is followed by a known suffix and `:`.
fn directive_in_line(line: &str, number: usize, options: &Options) -> Result<Option<Directive>, Error> {
    let mut best: Option<(usize, &str)> = None;
    for prefix in &options.prefixes {
        let mut from = 0;
        while let Some(found) = line[from..].find(prefix.as_str()) {
            let at = from + found;
            from = at + prefix.len();
            if line[..at].chars().next_back().is_some_and(is_word_char) {
                continue;
            }
            let rest = &line[at + prefix.len()..];
            let known = Kind::ALL.iter().any(|k| rest.starts_with(&format!("{}:", k.suffix())));
            let unknown = rest
                .strip_prefix('-')
                .map(|r| r.split(':').next().unwrap_or_default())
                .is_some_and(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_uppercase()) && rest.contains(':'));
            if known || unknown {
                if best.is_none_or(|(b, _)| at < b) {
                    best = Some((at, prefix.as_str()));
                }
                break;
            }
        }
    }
    let Some((at, prefix)) = best else { return Ok(None) };
    let rest = &line[at + prefix.len()..];
    let text = line[at..].trim().to_string();
    let Some(kind) = Kind::ALL
        .into_iter()
        .filter(|k| rest.starts_with(&format!("{}:", k.suffix())))
        .max_by_key(|k| k.suffix().len())
    else {
        let name = rest.split(':').next().unwrap_or_default();
        return Err(Error {
            check_line: number,
            directive: text,
            message: format!("unknown directive `{prefix}{name}`"),
            notes: vec!["the directives are CHECK, -NEXT, -SAME, -NOT, -DAG, -LABEL and -EMPTY".to_string()],
        });
    };
    let name = format!("{prefix}{}", kind.suffix());
    let pattern = rest[kind.suffix().len() + 1..].trim();
    let mut directive = Directive {
        kind,
        name,
        line: number,
        text,
        pieces: Vec::new(),
    };
    if kind == Kind::Empty {
        if !pattern.is_empty() {
            return Err(directive.error("takes no pattern"));
        }
    } else if pattern.is_empty() {
        return Err(directive.error("empty pattern"));
    } else {
        directive.pieces = parse_pattern(pattern).map_err(|m| directive.error(m))?;
    }
    Ok(Some(directive))
}

fn is_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn parse_pattern(pattern: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut rest = pattern;
    let mut defined_here = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("{{") {
            // The regex ends at the last `}` of the first run of two or
            // more, so `{{[a-z]{2}}}` is the regex `[a-z]{2}`.
            let Some(close) = after.find("}}") else {
                return Err("`{{` without a closing `}}`".to_string());
            };
            let run = after[close..].chars().take_while(|&c| c == '}').count();
            let end = close + run - 2;
            if !literal.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(&mut literal)));
            }
            pieces.push(Piece::Regex(after[..end].to_string()));
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix("[[") {
            let Some(close) = variable_end(after) else {
                return Err("`[[` without a closing `]]`".to_string());
            };
            let body = &after[..close];
            let piece = match body.split_once(':') {
                Some((name, re)) if is_var_name(name) => {
                    defined_here.push(name.to_string());
                    Piece::Def(name.to_string(), re.to_string())
                }
                None if is_var_name(body) => {
                    if defined_here.iter().any(|d| d == body) {
                        return Err(format!("variable `{body}` is defined and used in the same pattern"));
                    }
                    Piece::Use(body.to_string())
                }
                _ => return Err(format!("invalid variable `[[{body}]]`")),
            };
            if !literal.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(&mut literal)));
            }
            pieces.push(piece);
            rest = &after[close + 2..];
        } else {
            let c = rest.chars().next().expect("rest is not empty");
            literal.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    if !literal.is_empty() {
        pieces.push(Piece::Literal(literal));
    }
    Ok(pieces)
}

/// Where the `]]` closing a variable is, skipping brackets of its regex
/// (`[[N:[0-9]]]`) and escaped characters.
fn variable_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'[' => depth += 1,
            b']' if depth > 0 => depth -= 1,
            b']' if bytes.get(i + 1) == Some(&b']') => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// A position in the input: line index and byte column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Pos {
    line: usize,
    col: usize,
}

#[derive(Clone, Debug)]
struct Match {
    start: Pos,
    end: Pos,
    captures: Vec<(String, String)>,
}

struct Matcher<'i> {
    lines: Vec<&'i str>,
    vars: HashMap<String, String>,
}

impl<'i> Matcher<'i> {
    fn new(input: &'i str) -> Matcher<'i> {
        Matcher {
            lines: input.lines().collect(),
            vars: HashMap::new(),
        }
    }

    fn end_of_input(&self) -> Pos {
        Pos {
            line: self.lines.len(),
            col: 0,
        }
    }

    /// The first match of `d` in `[from, until)`, skipping matches that
    /// overlap `taken`.
    fn find(&self, d: &Directive, from: Pos, until: Pos, taken: &[(Pos, Pos)]) -> Result<Option<Match>, Error> {
        let (regex, names) = d.regex(&self.vars)?;
        let Some(last_line) = self.lines.len().checked_sub(1).map(|l| l.min(until.line)) else {
            return Ok(None);
        };
        for line in from.line..=last_line {
            let text = self.lines[line];
            let mut col = if line == from.line { from.col.min(text.len()) } else { 0 };
            while let Some(caps) = regex.captures_at(text, col) {
                let whole = caps.get(0).expect("group 0 always matches");
                let m = Match {
                    start: Pos {
                        line,
                        col: whole.start(),
                    },
                    end: Pos { line, col: whole.end() },
                    captures: names
                        .iter()
                        .enumerate()
                        .map(|(i, n)| (n.clone(), caps.get(i + 1).map_or("", |g| g.as_str()).to_string()))
                        .collect(),
                };
                if m.end > until {
                    return Ok(None);
                }
                if taken.iter().any(|&(s, e)| (m.start < e && s < m.end) || m.start == s) {
                    // Try again from the next character of this line.
                    col = whole.start() + text[whole.start()..].chars().next().map_or(1, char::len_utf8);
                    if col > text.len() {
                        break;
                    }
                    continue;
                }
                return Ok(Some(m));
            }
        }
        Ok(None)
    }

    fn remember(&mut self, m: &Match) {
        for (name, value) in &m.captures {
            self.vars.insert(name.clone(), value.clone());
        }
    }

    fn run(mut self, directives: &[Directive]) -> Result<(), Error> {
        // Labels first: each matched once, in order, cutting the input.
        let mut sections: Vec<(Pos, Pos, Option<Match>, &[Directive])> = Vec::new();
        let label_indices: Vec<usize> = (0..directives.len())
            .filter(|&i| directives[i].kind == Kind::Label)
            .collect();
        let mut label_matches = Vec::new();
        let mut pos = Pos { line: 0, col: 0 };
        for &i in &label_indices {
            let d = &directives[i];
            match self.find(d, pos, self.end_of_input(), &[])? {
                Some(m) => {
                    pos = m.end;
                    self.remember(&m);
                    label_matches.push(m);
                }
                None => return Err(self.not_found(d, pos, self.end_of_input())),
            }
        }
        let mut start = Pos { line: 0, col: 0 };
        let mut first = 0;
        let mut previous: Option<Match> = None;
        for (k, &i) in label_indices.iter().enumerate() {
            let label = &label_matches[k];
            sections.push((start, label.start, previous.take(), &directives[first..i]));
            start = label.end;
            first = i + 1;
            previous = Some(label.clone());
        }
        sections.push((start, self.end_of_input(), previous, &directives[first..]));
        for (from, until, previous, group) in sections {
            self.section(group, from, until, previous)?;
        }
        Ok(())
    }

    fn section(
        &mut self,
        group: &[Directive],
        from: Pos,
        until: Pos,
        mut previous: Option<Match>,
    ) -> Result<(), Error> {
        let mut pos = from;
        let mut nots: Vec<&Directive> = Vec::new();
        let mut i = 0;
        while i < group.len() {
            let d = &group[i];
            match d.kind {
                Kind::Not => {
                    nots.push(d);
                    i += 1;
                }
                Kind::Dag => {
                    let mut taken: Vec<(Pos, Pos)> = Vec::new();
                    let mut last: Option<Match> = None;
                    while i < group.len() && group[i].kind == Kind::Dag {
                        let d = &group[i];
                        let Some(m) = self.find(d, pos, until, &taken)? else {
                            return Err(self.not_found(d, pos, until));
                        };
                        self.remember(&m);
                        taken.push((m.start, m.end));
                        if last.as_ref().is_none_or(|l| m.end > l.end) {
                            last = Some(m);
                        }
                        i += 1;
                    }
                    let earliest = taken.iter().map(|t| t.0).min().unwrap_or(pos);
                    self.check_nots(&nots, pos, earliest)?;
                    nots.clear();
                    let last = last.expect("a DAG group has a match");
                    pos = last.end;
                    previous = Some(last);
                }
                Kind::Label => unreachable!("labels are matched before sections"),
                Kind::Empty => {
                    let Some(prev) = &previous else {
                        return Err(d.error("has no previous match to follow"));
                    };
                    let line = prev.end.line + 1;
                    if self.lines.get(line).is_none_or(|l| !l.trim().is_empty()) {
                        let mut e = d.error("the line after the previous match is not empty");
                        e.notes.push(self.show_line(line));
                        return Err(e);
                    }
                    let m = Match {
                        start: Pos { line, col: 0 },
                        end: Pos { line, col: 0 },
                        captures: Vec::new(),
                    };
                    self.check_nots(&nots, pos, m.start)?;
                    nots.clear();
                    pos = m.end;
                    previous = Some(m);
                    i += 1;
                }
                Kind::Check | Kind::Next | Kind::Same => {
                    let Some(m) = self.find(d, pos, until, &[])? else {
                        return Err(self.not_found(d, pos, until));
                    };
                    if let Some(prev) = &previous {
                        let wanted = match d.kind {
                            Kind::Next => Some((prev.end.line + 1, "on the line after the previous match")),
                            Kind::Same => Some((prev.end.line, "on the same line as the previous match")),
                            _ => None,
                        };
                        if let Some((line, rule)) = wanted {
                            if m.start.line != line {
                                let mut e = d.error(format!("found on input line {}, not {rule}", m.start.line + 1));
                                e.notes.push(format!(
                                    "previous match ends at input line {}:{}",
                                    prev.end.line + 1,
                                    prev.end.col + 1
                                ));
                                e.notes.push(self.show_line(m.start.line));
                                return Err(e);
                            }
                        }
                    } else if d.kind != Kind::Check {
                        return Err(d.error("has no previous match to follow"));
                    }
                    self.check_nots(&nots, pos, m.start)?;
                    nots.clear();
                    self.remember(&m);
                    pos = m.end;
                    previous = Some(m);
                    i += 1;
                }
            }
        }
        self.check_nots(&nots, pos, until)
    }

    fn check_nots(&self, nots: &[&Directive], from: Pos, until: Pos) -> Result<(), Error> {
        for d in nots {
            if let Some(m) = self.find(d, from, until, &[])? {
                let mut e = d.error("excluded string found in input");
                e.notes.push(format!(
                    "found at input line {}:{}: {}",
                    m.start.line + 1,
                    m.start.col + 1,
                    self.lines[m.start.line].trim()
                ));
                return Err(e);
            }
        }
        Ok(())
    }

    fn show_line(&self, line: usize) -> String {
        match self.lines.get(line) {
            Some(text) => format!("input line {}: {}", line + 1, text.trim()),
            None => "at the end of the input".to_string(),
        }
    }

    /// The error for a pattern that does not match, with where the search
    /// began and the line that comes closest.
    fn not_found(&self, d: &Directive, from: Pos, until: Pos) -> Error {
        let mut e = d.error("expected string not found in input");
        let vars_used: Vec<String> = d
            .pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Use(n) => Some(format!("[[{n}]] = {:?}", self.vars.get(n).map_or("", String::as_str))),
                _ => None,
            })
            .collect();
        if !vars_used.is_empty() {
            e.notes.push(format!("with {}", vars_used.join(", ")));
        }
        match self.lines.get(from.line) {
            Some(text) => e.notes.push(format!(
                "scanning from input line {}:{}: {}",
                from.line + 1,
                from.col + 1,
                text.trim()
            )),
            None => e.notes.push("scanning from the end of the input".to_string()),
        }
        let skeleton = d.skeleton(&self.vars);
        let last = until.line.min(self.lines.len().saturating_sub(1));
        let candidates = (from.line..=last).take(1000);
        let best = candidates
            .filter(|&l| l < self.lines.len())
            .map(|l| (distance(skeleton.trim(), self.lines[l].trim()), l))
            .min();
        if let Some((dist, line)) = best {
            if dist < skeleton.trim().chars().count().max(1) {
                e.notes
                    .push(format!("possible intended match at {}", self.show_line(line)));
            }
        }
        e
    }
}

/// Edit distance between `a` and the closest substring-sized window of
/// `b`, on at most 200 characters of each.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(200).collect();
    let b: Vec<char> = b.chars().take(200).collect();
    // Free start and end in `b` (the pattern may match inside the line).
    let mut prev: Vec<usize> = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != cb);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev.into_iter().min().unwrap_or(a.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const INPUT: &str = "module {
  func.func @f(%0: f32) -> (f32) {
    %1 = t.add(%0, %0) : (f32, f32) -> f32
    %2 = t.mul(%1, %1) : (f32, f32) -> f32
    func.return(%2) : (f32) -> ()
  }

  func.func @g() -> () {
    func.return() : () -> ()
  }
}
";

    fn ok(checks: &str) {
        if let Err(e) = check(checks, INPUT, &Options::default()) {
            panic!("expected a match for\n{checks}\n{e}");
        }
    }

    fn fails(checks: &str) -> Error {
        check(checks, INPUT, &Options::default()).expect_err("expected a failure")
    }

    #[test]
    fn check_matches_in_order() {
        ok("// CHECK: t.add\n// CHECK: t.mul");
        let e = fails("// CHECK: t.mul\n// CHECK: t.add");
        assert_eq!(e.check_line, 2);
        assert_eq!(e.message, "CHECK: expected string not found in input");
        assert!(e.notes[0].starts_with("scanning from input line 4:"), "{:?}", e.notes);
    }

    #[test]
    fn whitespace_runs_match_any_run() {
        ok("CHECK: %1   =  t.add");
        fails("CHECK: %1=t.add");
    }

    #[test]
    fn next_same_and_empty() {
        ok("CHECK: t.add\nCHECK-NEXT: t.mul\nCHECK-SAME: (f32, f32)\nCHECK: func.return\nCHECK-NEXT: }\nCHECK-EMPTY:\nCHECK-NEXT: @g");
        let e = fails("CHECK: t.add\nCHECK-NEXT: func.return");
        assert_eq!(
            e.message,
            "CHECK-NEXT: found on input line 5, not on the line after the previous match"
        );
        let e = fails("CHECK: t.add\nCHECK-SAME: t.mul");
        assert!(
            e.message.starts_with("CHECK-SAME: found on input line 4"),
            "{}",
            e.message
        );
        let e = fails("CHECK: t.add\nCHECK-EMPTY:");
        assert_eq!(e.message, "CHECK-EMPTY: the line after the previous match is not empty");
        let e = fails("CHECK-NEXT: t.add");
        assert_eq!(e.message, "CHECK-NEXT: has no previous match to follow");
    }

    #[test]
    fn not_between_matches() {
        ok("CHECK: t.add\nCHECK-NOT: t.sub\nCHECK: t.mul");
        ok("CHECK: t.mul\nCHECK-NOT: t.add");
        let e = fails("CHECK: @f\nCHECK-NOT: t.mul\nCHECK: func.return");
        assert_eq!(e.message, "CHECK-NOT: excluded string found in input");
        assert!(
            e.notes[0].starts_with("found at input line 4:10: %2 = t.mul"),
            "{:?}",
            e.notes
        );
        let e = fails("CHECK: t.add\nCHECK-NOT: @g");
        assert_eq!(e.check_line, 2);
    }

    #[test]
    fn labels_cut_the_input() {
        ok("CHECK-LABEL: @f\nCHECK: func.return(%2)\nCHECK-LABEL: @g\nCHECK: func.return()");
        // Inside @g's section there is no t.add.
        let e = fails("CHECK-LABEL: @f\nCHECK-LABEL: @g\nCHECK: t.add");
        assert_eq!(e.check_line, 3);
        // A NOT after a label is checked up to the next label only.
        ok("CHECK-LABEL: @g\nCHECK-NOT: t.add");
        let e = fails("CHECK-LABEL: @g\nCHECK-LABEL: @f");
        assert_eq!(e.check_line, 2);
    }

    #[test]
    fn dag_matches_in_any_order_without_overlap() {
        ok("CHECK: @f\nCHECK-DAG: t.mul\nCHECK-DAG: t.add\nCHECK: func.return(%2)");
        ok("CHECK-DAG: func.return\nCHECK-DAG: func.return");
        let e = fails("CHECK: @f\nCHECK-DAG: t.add\nCHECK-DAG: t.add");
        assert_eq!(e.check_line, 3);
        let e = fails("CHECK: @f\nCHECK-NOT: t.add\nCHECK-DAG: func.return(%2)\nCHECK-DAG: t.mul");
        assert_eq!(e.message, "CHECK-NOT: excluded string found in input");
    }

    #[test]
    fn regexes_and_variables() {
        ok("CHECK: %{{[0-9]+}} = t.add");
        ok("CHECK: {{^}}module {{[{]}}{{$}}");
        ok("CHECK: [[SUM:%[0-9]+]] = t.add\nCHECK: t.mul([[SUM]], [[SUM]])\nCHECK: func.return([[R:%[0-9]]])");
        let e = fails("CHECK: [[SUM:%[0-9]+]] = t.add\nCHECK: func.return([[SUM]])");
        assert!(e.notes[0].contains("[[SUM]] = \"%1\""), "{:?}", e.notes);
        ok("CHECK: func.{{[a-z]{6}}}(%2)");
    }

    #[test]
    fn broken_check_files_are_errors() {
        assert_eq!(fails("CHECK:").message, "CHECK: empty pattern");
        assert_eq!(fails("CHECK-NXT: x").message, "unknown directive `CHECK-NXT`");
        assert!(fails("nothing here").message.starts_with("no check directives found"));
        assert_eq!(
            fails("CHECK: [[X]]").message,
            "CHECK: variable `X` is used before it is defined"
        );
        assert_eq!(
            fails("CHECK: [[X:a]] [[X]]").message,
            "CHECK: variable `X` is defined and used in the same pattern"
        );
        assert!(fails("CHECK: {{(}}").message.starts_with("CHECK: invalid regex"));
        assert_eq!(
            fails("CHECK-NOT: [[X:a]]").message,
            "CHECK-NOT: a NOT directive cannot define variables"
        );
        assert_eq!(fails("CHECK: {{a").message, "CHECK: `{{` without a closing `}}`");
    }

    #[test]
    fn prefixes_start_a_word_and_can_be_chosen() {
        // `XCHECK:` is not a directive; `CHECKS` neither.
        ok("XCHECK: nothing\nCHECKS: nothing\nCHECK: t.add");
        let options = Options::with_prefixes(["SM90", "COMMON"]);
        assert!(check(
            "// SM90: t.add\n// COMMON-NEXT: t.mul\n// CHECK: absent",
            INPUT,
            &options
        )
        .is_ok());
        let e = check("// SM90: absent", INPUT, &options).unwrap_err();
        assert_eq!(e.message, "SM90: expected string not found in input");
        assert!(check("// CHECK: t.add", INPUT, &Options::with_prefixes(["1X"])).is_err());
    }

    #[test]
    fn the_nearest_line_is_suggested() {
        let e = fails("CHECK: %2 = t.mull(%1, %1)");
        assert!(
            e.notes
                .iter()
                .any(|n| n == "possible intended match at input line 4: %2 = t.mul(%1, %1) : (f32, f32) -> f32"),
            "{:?}",
            e.notes
        );
        let shown = e.to_string();
        assert!(
            shown
                .starts_with("check line 1: CHECK: expected string not found in input\n  CHECK: %2 = t.mull(%1, %1)\n"),
            "{shown}"
        );
    }
}
