use std::fmt;
use std::ops::Range;

/// A file known to the compiler. The driver hands them out; its meaning
/// (path, editor buffer, embedded stdlib source) lives there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A half-open byte range `start..end` into one file's text.
///
/// Offsets are `u32`: source files are capped well below 4 GiB by the driver.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub const fn new(start: u32, end: u32) -> Span {
        Span { start, end }
    }

    pub fn from_range(range: Range<usize>) -> Span {
        Span::new(to_u32(range.start), to_u32(range.end))
    }

    /// An empty span at `offset`, used for insertions and end-of-file errors.
    pub const fn empty(offset: u32) -> Span {
        Span::new(offset, offset)
    }

    pub fn len(self) -> u32 {
        self.end - self.start
    }

    pub fn is_empty(self) -> bool {
        self.start == self.end
    }

    /// The smallest span covering both `self` and `other`.
    pub fn cover(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }

    pub fn contains(self, offset: u32) -> bool {
        self.start <= offset && offset < self.end
    }

    pub fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }

    pub fn in_file(self, file: FileId) -> FileSpan {
        FileSpan { file, span: self }
    }
}

fn to_u32(offset: usize) -> u32 {
    u32::try_from(offset).unwrap_or(u32::MAX)
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// A span together with the file it points into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileSpan {
    pub file: FileId,
    pub span: Span,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cover_is_the_union_hull() {
        let a = Span::new(4, 9);
        let b = Span::new(2, 5);
        assert_eq!(a.cover(b), Span::new(2, 9));
        assert_eq!(b.cover(a), Span::new(2, 9));
    }

    #[test]
    fn contains_is_half_open() {
        let s = Span::new(3, 5);
        assert!(!s.contains(2));
        assert!(s.contains(3));
        assert!(s.contains(4));
        assert!(!s.contains(5));
    }
}
