//! Positions in source text: [`FileId`], [`Span`] and [`LineIndex`].
//!
//! No I/O and no knowledge of the language live here; every other crate
//! speaks about source locations in these terms.

mod line_index;
mod span;

pub use line_index::{LineCol, LineIndex};
pub use span::{FileId, FileSpan, Span};
