//! The semantic core: a salsa database whose queries resolve names, infer
//! types with symbolic shapes, solve shape constraints and check the
//! language's contracts (effects, determinism, barrier safety, numerics,
//! async copies). The CLI and the language server share it.
//!
//! Every check reports through query results (never accumulators), and every
//! rule's builtin facts come from one op table (`builtins`).

mod assigned;
mod async_copy;
mod barrier;
pub mod body;
pub mod builtins;
pub mod constants;
pub mod db;
mod determinism;
mod device;
pub mod effect_check;
pub mod effects;
mod infer;
mod module;
pub mod names;
mod numerics;
pub mod poly;
mod pretty;
pub mod signature;
pub mod solve;
pub mod ty;

pub use barrier::is_row;
pub use db::{check_file, Db, FnId, Options, SourceFile, Target, Workspace};
pub use module::{module_name, resolve_module};
