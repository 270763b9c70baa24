//! The dialect-independent core of Tessera's intermediate representations
//! (Graph, Schedule, Tile and Target IR are dialects on top of it).
//!
//! - [`Module`]: an arena of ops, values, blocks and regions addressed by
//!   [`OpId`], [`ValueId`], [`BlockId`], [`RegionId`]; structured control
//!   flow only (a region has exactly one block); functions are ops.
//! - [`Type`], [`Attr`], [`Loc`], [`DimExpr`]: what values, ops and
//!   locations are made of; [`ShapeConstraint`]: constraints over dims.
//! - [`Builder`]: creates ops; `Module` methods walk and edit them.
//! - [`parse`] and [`print_module`]: the textual form, which round-trips
//!   byte for byte (`spec/ir.md`).
//! - [`verify_structure`], [`Dialect`], [`OpDef`], [`Registry`]: the
//!   verifier framework.
//! - [`Pass`], [`PassRegistry`], [`PassManager`]: passes, with the generic
//!   `dce` and `cse`.
//!
//! No I/O, no salsa, and no knowledge of any dialect but the builtin `func`.

mod attr;
mod builder;
mod builtin;
mod constraint;
mod dialect;
mod dim;
mod loc;
mod module;
mod parse;
mod pass;
mod passes;
mod print;
pub mod testing;
mod types;
mod verify;

pub use attr::{Attr, AttrKind};
pub use builder::{Builder, OpBuilder};
pub use constraint::ShapeConstraint;
pub use dialect::{Arity, AttrDef, Dialect, OpDef, Registry};
pub use dim::{Dim, DimExpr};
pub use loc::{FileMap, Loc};
pub use module::{
    BlockId, BlockParent, Module, OpData, OpId, OpName, RegionId, ValueData, ValueDef, ValueId, FUNCTION_TYPE, FUNC_OP,
    SYM_NAME,
};
pub use parse::{parse, ParseError, MAX_NESTING};
pub use pass::{Pass, PassContext, PassFailure, PassInfo, PassManager, PassRegistry, PassTiming};
pub use passes::{Cse, Dce};
pub use print::{print_module, print_op};
pub use tessera_base::CmpOp;
pub use types::{MemSpace, ScalarType, Type};
pub use verify::{verify_structure, Related, VerifyError, VerifyErrors};

use tessera_base::FileId;
use tessera_diagnostics::Diagnostic;

/// Parses IR text held in `file` and verifies it: structurally, and with
/// `registry` when given. Every problem becomes a diagnostic (E0902 for the
/// text, E0901 for verification) pointing into `file` or, through `files`,
/// into the `.tsr` sources the locations name.
pub fn parse_and_verify(
    text: &str,
    file: FileId,
    files: &FileMap,
    registry: Option<&Registry>,
) -> Result<Module, Vec<Diagnostic>> {
    let module = parse(text).map_err(|e| vec![e.to_diagnostic(file)])?;
    let mut files = files.clone();
    files.set_ir_file(file);
    let errors = match registry {
        Some(registry) => registry.verify(&module),
        None => verify_structure(&module),
    };
    if errors.is_empty() {
        Ok(module)
    } else {
        Err(errors.iter().map(|e| e.to_diagnostic(&files)).collect())
    }
}
