//! `tessera-lsp`, the language server: the compiler's own salsa database
//! behind the Language Server Protocol (tower-lsp-server, over stdio).
//!
//! One writer thread applies document changes in arrival order
//! (`workspace`); requests are answered on database snapshots, each under
//! `catch_unwind`, and a newer edit cancels the queries of older ones
//! (`server`). Diagnostics are the compiler's `Diagnostic`s converted in
//! one place (`convert`); hover, navigation, completion, inlay hints and
//! semantic tokens read the checker's query results (`analysis`) and never
//! check anything themselves.

#![forbid(unsafe_code)]

mod analysis;
mod completion;
mod convert;
mod frames;
mod hints;
mod hover;
mod navigation;
mod server;
mod tokens;
mod workspace;

pub use server::{serve, Ended};
pub use workspace::QUERY_STACK_BYTES;
