use tessera_base::FileSpan;

/// How safe a fix is to apply without a human looking at it (rustc's levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Applicability {
    /// Certainly what the user meant; `tessera check --fix` applies it.
    MachineApplicable,
    /// Probably right, but it may change meaning; offered, never auto-applied.
    MaybeIncorrect,
    /// Contains placeholders the user must fill in.
    HasPlaceholders,
}

impl Applicability {
    pub fn as_str(self) -> &'static str {
        match self {
            Applicability::MachineApplicable => "machine-applicable",
            Applicability::MaybeIncorrect => "maybe-incorrect",
            Applicability::HasPlaceholders => "has-placeholders",
        }
    }
}

/// Replace the text under `span` with `text` (an empty span inserts).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TextEdit {
    pub span: FileSpan,
    pub text: String,
}

/// A suggested change: a message and the edits that make it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fix {
    pub message: String,
    pub applicability: Applicability,
    pub edits: Vec<TextEdit>,
}

impl Fix {
    pub fn new(message: impl Into<String>, applicability: Applicability) -> Fix {
        Fix {
            message: message.into(),
            applicability,
            edits: Vec::new(),
        }
    }

    pub fn with_edit(mut self, span: FileSpan, text: impl Into<String>) -> Fix {
        self.edits.push(TextEdit {
            span,
            text: text.into(),
        });
        self
    }
}

/// Applies edits of one file to its text. Edits are applied from the end of
/// the text backwards; an edit that overlaps one already applied is skipped
/// and counted in the second element of the result.
pub fn apply_edits<'a>(text: &str, edits: impl IntoIterator<Item = &'a TextEdit>) -> (String, usize) {
    let mut edits: Vec<&TextEdit> = edits.into_iter().collect();
    edits.sort_by_key(|e| (e.span.span.start, e.span.span.end));
    // Two diagnostics may suggest the same edit (a `mut` for each write).
    edits.dedup_by(|a, b| a.span == b.span && a.text == b.text);
    let mut out = text.to_string();
    let mut skipped = 0;
    let mut floor = u32::MAX;
    for edit in edits.into_iter().rev() {
        let span = edit.span.span;
        let fits = span.end <= floor
            && (span.end as usize) <= out.len()
            && out.is_char_boundary(span.start as usize)
            && out.is_char_boundary(span.end as usize);
        if !fits {
            skipped += 1;
            continue;
        }
        out.replace_range(span.range(), &edit.text);
        floor = span.start;
    }
    (out, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_base::{FileId, Span};

    fn edit(start: u32, end: u32, text: &str) -> TextEdit {
        TextEdit {
            span: Span::new(start, end).in_file(FileId(0)),
            text: text.into(),
        }
    }

    #[test]
    fn edits_apply_back_to_front() {
        let edits = [edit(0, 0, "mut "), edit(5, 6, "Y")];
        assert_eq!(apply_edits("f32 x y", &edits), ("mut f32 xYy".to_string(), 0));
    }

    #[test]
    fn identical_edits_apply_once() {
        let edits = [edit(5, 5, "mut "), edit(5, 5, "mut ")];
        assert_eq!(apply_edits("out: f32", &edits), ("out: mut f32".to_string(), 0));
    }

    #[test]
    fn overlapping_edits_are_skipped() {
        let edits = [edit(0, 4, "a"), edit(2, 6, "b")];
        let (text, skipped) = apply_edits("0123456789", &edits);
        assert_eq!(text, "01b6789");
        assert_eq!(skipped, 1);
    }
}
