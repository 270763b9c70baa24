/// A zero-based line and column. What the column counts (characters or
/// UTF-16 code units) depends on the method that produced it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LineCol {
    pub line: u32,
    pub col: u32,
}

/// Maps byte offsets of one text to lines and columns and back.
///
/// Lines end at `\n`, `\r\n` or a lone `\r`, as the language server
/// protocol counts them (editors show them so). Columns
/// are counted in Unicode scalar values (for terminals and JSON output) or in
/// UTF-16 code units (for the language server protocol).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineIndex {
    /// Byte offset at which each line starts; `line_starts[0] == 0`.
    line_starts: Vec<u32>,
    /// Byte offset of each character of more than one byte, in order.
    wide: Vec<u32>,
    /// `utf16_extra[k]`: bytes beyond their UTF-16 code units of the first
    /// `k` wide characters (one more entry than `wide`).
    utf16_extra: Vec<u32>,
    /// `char_extra[k]`: bytes beyond one of the first `k` wide characters.
    char_extra: Vec<u32>,
    text: Box<str>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let bytes = text.as_bytes();
        let mut line_starts = vec![0];
        line_starts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|&(i, &b)| b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')))
                .map(|(i, _)| (i + 1) as u32),
        );
        let (mut wide, mut utf16_extra, mut char_extra) = (Vec::new(), vec![0], vec![0]);
        for (i, c) in text.char_indices().filter(|(_, c)| !c.is_ascii()) {
            wide.push(i as u32);
            let bytes = c.len_utf8() as u32;
            utf16_extra.push(utf16_extra[wide.len() - 1] + bytes - c.len_utf16() as u32);
            char_extra.push(char_extra[wide.len() - 1] + bytes - 1);
        }
        LineIndex {
            line_starts,
            wide,
            utf16_extra,
            char_extra,
            text: text.into(),
        }
    }

    /// The width of `text[start..end]` (whole characters) in units whose
    /// per-character excess over the bytes `extra` sums: O(log n), so that
    /// converting every token of one long line is not quadratic.
    fn width(&self, start: usize, end: usize, extra: &[u32]) -> u32 {
        let before = |x: usize| extra[self.wide.partition_point(|&w| (w as usize) < x)];
        (end - start) as u32 - (before(end) - before(start))
    }

    pub fn line_count(&self) -> u32 {
        self.line_starts.len() as u32
    }

    /// The line holding `offset` (clamped to the text) and the byte offset of its start.
    fn line_of(&self, offset: u32) -> (u32, u32) {
        let offset = offset.min(self.text.len() as u32);
        let line = self.line_starts.partition_point(|&start| start <= offset) - 1;
        (line as u32, self.line_starts[line])
    }

    /// The line holding `offset` and the byte range of the part of it that
    /// comes before it. An offset inside a multi-byte character is moved
    /// back to that character's start, and one on the `\n` of a `\r\n` to
    /// the `\r` (the end of the line's text).
    fn line_prefix(&self, offset: u32) -> (u32, usize, usize) {
        let (line, start) = self.line_of(offset);
        let mut end = offset.min(self.text.len() as u32) as usize;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let bytes = self.text.as_bytes();
        if bytes.get(end) == Some(&b'\n') && end > start as usize && bytes[end - 1] == b'\r' {
            end -= 1;
        }
        (line, start as usize, end)
    }

    /// Line and column in characters.
    pub fn line_col(&self, offset: u32) -> LineCol {
        let (line, start, end) = self.line_prefix(offset);
        LineCol {
            line,
            col: self.width(start, end, &self.char_extra),
        }
    }

    /// Line and column in UTF-16 code units, as the LSP counts them.
    pub fn line_col_utf16(&self, offset: u32) -> LineCol {
        let (line, start, end) = self.line_prefix(offset);
        LineCol {
            line,
            col: self.width(start, end, &self.utf16_extra),
        }
    }

    /// The byte offset of a line and UTF-16 column. Positions past the end of
    /// a line clamp to its end (before the newline), as the LSP requires.
    pub fn offset_utf16(&self, pos: LineCol) -> u32 {
        self.offset_by(pos, char::len_utf16)
    }

    /// The byte offset of a line and character column, clamped like [`Self::offset_utf16`].
    pub fn offset(&self, pos: LineCol) -> u32 {
        self.offset_by(pos, |_| 1)
    }

    fn offset_by(&self, pos: LineCol, width: impl Fn(char) -> usize) -> u32 {
        let Some(&start) = self.line_starts.get(pos.line as usize) else {
            return self.text.len() as u32;
        };
        let line_text = self.line_text(pos.line);
        let mut units = 0usize;
        for (i, c) in line_text.char_indices() {
            if units >= pos.col as usize {
                return start + i as u32;
            }
            units += width(c);
        }
        start + line_text.len() as u32
    }

    /// The text of a line without its line terminator.
    pub fn line_text(&self, line: u32) -> &str {
        let Some(&start) = self.line_starts.get(line as usize) else {
            return "";
        };
        let end = self
            .line_starts
            .get(line as usize + 1)
            .map_or(self.text.len(), |&next| next as usize - 1);
        self.text[start as usize..end].trim_end_matches('\r')
    }

    /// The byte offset where `line` starts (or the end of the text).
    pub fn line_start(&self, line: u32) -> u32 {
        self.line_starts
            .get(line as usize)
            .copied()
            .unwrap_or(self.text.len() as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Columns at every offset of text mixing ASCII, 2-, 3- and 4-byte
    /// characters and every line terminator, against counting the
    /// characters of the line's prefix one by one.
    #[test]
    fn columns_are_the_counted_characters_before_the_offset() {
        let text = "a\u{e9}b\r\n\u{1F600}x\u{301}\ry\u{4e2d}\u{1F600}\n\r\n\u{1F600}\u{1F600}zz\r";
        let idx = LineIndex::new(text);
        for offset in 0..=text.len() as u32 + 2 {
            let end = (0..=offset.min(text.len() as u32) as usize)
                .rev()
                .find(|&e| text.is_char_boundary(e))
                .unwrap_or(0);
            let start = idx.line_start(idx.line_col(offset).line) as usize;
            let prefix = &text[start..end];
            let prefix = if text.as_bytes().get(end) == Some(&b'\n') {
                prefix.strip_suffix('\r').unwrap_or(prefix)
            } else {
                prefix
            };
            let want16 = prefix.chars().map(char::len_utf16).sum::<usize>() as u32;
            assert_eq!(idx.line_col_utf16(offset).col, want16, "offset {offset}");
            assert_eq!(
                idx.line_col(offset).col,
                prefix.chars().count() as u32,
                "offset {offset}"
            );
        }
    }

    #[test]
    fn ascii_positions() {
        let idx = LineIndex::new("ab\ncd\n");
        assert_eq!(idx.line_col(0), LineCol { line: 0, col: 0 });
        assert_eq!(idx.line_col(2), LineCol { line: 0, col: 2 });
        assert_eq!(idx.line_col(3), LineCol { line: 1, col: 0 });
        assert_eq!(idx.line_col(6), LineCol { line: 2, col: 0 });
        assert_eq!(idx.line_count(), 3);
    }

    #[test]
    fn columns_count_chars_and_utf16_units() {
        // "é" is 2 bytes, 1 char, 1 UTF-16 unit; "𝔸" is 4 bytes, 1 char, 2 units.
        let text = "é𝔸x = 1";
        let idx = LineIndex::new(text);
        let x = text.find('x').unwrap() as u32;
        assert_eq!(idx.line_col(x).col, 2);
        assert_eq!(idx.line_col_utf16(x).col, 3);
        assert_eq!(idx.offset_utf16(LineCol { line: 0, col: 3 }), x);
        assert_eq!(idx.offset(LineCol { line: 0, col: 2 }), x);
    }

    #[test]
    fn offsets_inside_a_character_move_to_its_start() {
        let idx = LineIndex::new("é");
        assert_eq!(idx.line_col(1).col, 0);
    }

    #[test]
    fn out_of_range_positions_clamp() {
        let idx = LineIndex::new("ab\r\ncd");
        assert_eq!(idx.line_text(0), "ab");
        assert_eq!(idx.offset(LineCol { line: 0, col: 10 }), 2);
        assert_eq!(idx.offset(LineCol { line: 9, col: 0 }), 6);
        assert_eq!(idx.line_col(100), LineCol { line: 1, col: 2 });
    }

    #[test]
    fn lines_end_at_lf_crlf_and_a_lone_cr() {
        let idx = LineIndex::new("ab\rcd\r\nef\ngh\r");
        assert_eq!(idx.line_count(), 5);
        assert_eq!(
            (0..5).map(|l| idx.line_text(l)).collect::<Vec<_>>(),
            ["ab", "cd", "ef", "gh", ""]
        );
        assert_eq!(idx.line_col(3), LineCol { line: 1, col: 0 });
        assert_eq!(idx.offset_utf16(LineCol { line: 0, col: 9 }), 2);
        assert_eq!(idx.offset_utf16(LineCol { line: 1, col: 9 }), 5);
        // The `\n` of a `\r\n` is at the end of its line's text, as the `\r` is.
        assert_eq!(idx.line_col(6), LineCol { line: 1, col: 2 });
        assert_eq!(idx.line_col(5), LineCol { line: 1, col: 2 });
    }
}
