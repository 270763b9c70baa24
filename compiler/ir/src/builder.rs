//! Building ops: a [`Builder`] inserts at a point of a block, an
//! [`OpBuilder`] collects one op's parts.
//!
//! ```
//! use tessera_ir::{Attr, Builder, Loc, Module, ScalarType, Type};
//!
//! let mut m = Module::new(Some("gemm"));
//! let t = Type::tensor(["M".into(), "K".into()], ScalarType::BF16);
//! let f = m.add_function("f", &[t.clone()], &[t.clone()], Loc::Unknown);
//! let entry = m.entry_block(f).unwrap();
//! let x = m.block_args(entry)[0];
//! let mut b = Builder::at_end(&mut m, entry);
//! let y = b.op("graph.relu").operand(x).attr("inplace", Attr::Bool(false)).result(t).build_value();
//! b.op("func.return").operand(y).build();
//! assert_eq!(m.block_ops(entry).len(), 2);
//! ```

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};

use crate::{Attr, BlockId, Loc, Module, OpId, OpName, RegionId, Type, ValueId};

#[derive(Clone, Copy, Debug)]
enum InsertAt {
    End,
    Before(OpId),
    After(OpId),
}

/// Inserts new ops at one point of a block: its end, or before or after an
/// op (ops built one after another keep their order). Dereferences to the
/// [`Module`], so every query is at hand while building.
pub struct Builder<'m> {
    module: &'m mut Module,
    block: BlockId,
    at: InsertAt,
    loc: Loc,
}

impl<'m> Builder<'m> {
    pub fn at_end(module: &'m mut Module, block: BlockId) -> Builder<'m> {
        Builder {
            module,
            block,
            at: InsertAt::End,
            loc: Loc::Unknown,
        }
    }

    /// Inserts before `op`, which must be in a block.
    pub fn before(module: &'m mut Module, op: OpId) -> Builder<'m> {
        let block = module.parent_block(op).expect("the insertion point is in a block");
        Builder {
            module,
            block,
            at: InsertAt::Before(op),
            loc: Loc::Unknown,
        }
    }

    /// Inserts after `op`, which must be in a block.
    pub fn after(module: &'m mut Module, op: OpId) -> Builder<'m> {
        let block = module.parent_block(op).expect("the insertion point is in a block");
        Builder {
            module,
            block,
            at: InsertAt::After(op),
            loc: Loc::Unknown,
        }
    }

    /// The block ops are inserted into.
    pub fn block(&self) -> BlockId {
        self.block
    }

    /// The location new ops get unless their builder sets one.
    pub fn set_loc(&mut self, loc: Loc) {
        self.loc = loc;
    }

    /// Starts an op named `dialect.op`.
    pub fn op<'b>(&'b mut self, name: &str) -> OpBuilder<'b, 'm> {
        OpBuilder {
            builder: self,
            name: OpName::new(name),
            operands: Vec::new(),
            result_types: Vec::new(),
            attrs: BTreeMap::new(),
            regions: Vec::new(),
            loc: None,
        }
    }

    /// Inserts a detached op at the insertion point.
    pub fn insert(&mut self, op: OpId) {
        match self.at {
            InsertAt::End => self.module.push_op(self.block, op),
            InsertAt::Before(anchor) => {
                let at = self
                    .module
                    .position(anchor)
                    .expect("the insertion point is in its block");
                self.module.insert_op(self.block, at, op);
            }
            InsertAt::After(anchor) => {
                let at = self
                    .module
                    .position(anchor)
                    .expect("the insertion point is in its block");
                self.module.insert_op(self.block, at + 1, op);
                self.at = InsertAt::After(op);
            }
        }
    }

    /// Creates a detached region with arguments of these types and fills
    /// it with `body`, which gets a builder at the end of the region's block
    /// and the arguments.
    pub fn region(&mut self, arg_types: &[Type], body: impl FnOnce(&mut Builder<'_>, &[ValueId])) -> RegionId {
        let region = self.module.new_region(arg_types);
        let block = self.module.region_block(region);
        let args = self.module.block_args(block).to_vec();
        let mut inner = Builder {
            module: &mut *self.module,
            block,
            at: InsertAt::End,
            loc: self.loc.clone(),
        };
        body(&mut inner, &args);
        region
    }
}

impl Deref for Builder<'_> {
    type Target = Module;

    fn deref(&self) -> &Module {
        self.module
    }
}

impl DerefMut for Builder<'_> {
    fn deref_mut(&mut self) -> &mut Module {
        self.module
    }
}

/// The parts of one op; [`OpBuilder::build`] creates and inserts it.
#[must_use = "an op is created only by `build`"]
pub struct OpBuilder<'b, 'm> {
    builder: &'b mut Builder<'m>,
    name: OpName,
    operands: Vec<ValueId>,
    result_types: Vec<Type>,
    attrs: BTreeMap<String, Attr>,
    regions: Vec<RegionId>,
    loc: Option<Loc>,
}

impl<'b, 'm> OpBuilder<'b, 'm> {
    pub fn operand(mut self, v: ValueId) -> Self {
        self.operands.push(v);
        self
    }

    pub fn operands(mut self, vs: &[ValueId]) -> Self {
        self.operands.extend_from_slice(vs);
        self
    }

    pub fn result(mut self, ty: Type) -> Self {
        self.result_types.push(ty);
        self
    }

    pub fn results(mut self, tys: impl IntoIterator<Item = Type>) -> Self {
        self.result_types.extend(tys);
        self
    }

    pub fn attr(mut self, name: &str, value: impl Into<Attr>) -> Self {
        self.attrs.insert(name.to_string(), value.into());
        self
    }

    /// A unit attribute: a flag that is set.
    pub fn flag(self, name: &str) -> Self {
        self.attr(name, Attr::Unit)
    }

    /// Adds a detached region (from [`Builder::region`] or
    /// [`Module::new_region`]).
    pub fn region(mut self, region: RegionId) -> Self {
        self.regions.push(region);
        self
    }

    /// Adds a region with arguments of these types, filled by `body`.
    pub fn region_with(mut self, arg_types: &[Type], body: impl FnOnce(&mut Builder<'_>, &[ValueId])) -> Self {
        let region = self.builder.region(arg_types, body);
        self.regions.push(region);
        self
    }

    pub fn loc(mut self, loc: Loc) -> Self {
        self.loc = Some(loc);
        self
    }

    /// Creates the op and inserts it at the builder's insertion point.
    pub fn build(self) -> OpId {
        self.finish().0
    }

    /// Builds an op with exactly one result and returns that result.
    pub fn build_value(self) -> ValueId {
        assert_eq!(self.result_types.len(), 1, "build_value needs exactly one result");
        let (op, builder) = self.finish();
        builder.module.result(op, 0)
    }

    fn finish(self) -> (OpId, &'b mut Builder<'m>) {
        let loc = self.loc.unwrap_or_else(|| self.builder.loc.clone());
        let op = self.builder.module.create_op(
            self.name,
            self.operands,
            &self.result_types,
            self.attrs,
            self.regions,
            loc,
        );
        self.builder.insert(op);
        (op, self.builder)
    }
}
