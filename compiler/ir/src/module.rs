//! The arena that holds an IR module: ops, values, blocks and regions, all
//! addressed by index newtypes, and the queries and edits passes use.
//!
//! Control flow is structured: a region holds exactly one block, and an op
//! with regions (a loop, a conditional, a function) decides how they run.
//! A block has typed arguments and an ordered list of ops. The module's body
//! is a block too; its ops are usually functions.
//!
//! Erased ops stay in the arena as tombstones, so ids never dangle into
//! another op; [`Module::is_erased`] says which are gone.

use std::collections::BTreeMap;
use std::fmt;

use tessera_base::Span;

use crate::{Attr, Loc, Type};

macro_rules! arena_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(u32);

        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }

            fn new(index: usize) -> $name {
                $name(u32::try_from(index).expect("an IR arena holds fewer than 2^32 entries"))
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

arena_id!(
    /// An op of a [`Module`].
    OpId,
    "op"
);
arena_id!(
    /// An SSA value: an op result or a block argument.
    ValueId,
    "v"
);
arena_id!(
    /// A block: typed arguments and an ordered list of ops.
    BlockId,
    "block"
);
arena_id!(
    /// A region: exactly one block, owned by an op.
    RegionId,
    "region"
);

/// The full name of an op, `dialect.op` (`graph.matmul`, `nvptx.mma.sync`).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpName(String);

impl OpName {
    pub fn new(name: impl Into<String>) -> OpName {
        OpName(name.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The part before the first dot (empty when there is no dot, which the
    /// structural verifier rejects).
    pub fn dialect(&self) -> &str {
        self.0.split_once('.').map_or("", |(d, _)| d)
    }

    /// The part after the first dot.
    pub fn op(&self) -> &str {
        self.0.split_once('.').map_or(&self.0, |(_, o)| o)
    }
}

impl fmt::Display for OpName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for OpName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl PartialEq<str> for OpName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for OpName {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// One operation. `operands` and `attrs` may be edited in place; results,
/// regions and the parent block change only through [`Module`] methods,
/// which keep the back links consistent.
#[derive(Clone, Debug)]
pub struct OpData {
    pub name: OpName,
    pub operands: Vec<ValueId>,
    pub attrs: BTreeMap<String, Attr>,
    pub loc: Loc,
    /// Where the op was in the IR text it was parsed from (not printed):
    /// diagnostics point there when `loc` names no source file.
    pub text_span: Option<Span>,
    results: Vec<ValueId>,
    regions: Vec<RegionId>,
    parent: Option<BlockId>,
    erased: bool,
}

impl OpData {
    pub fn results(&self) -> &[ValueId] {
        &self.results
    }

    pub fn regions(&self) -> &[RegionId] {
        &self.regions
    }

    /// The block the op is in; `None` while detached or after erasure.
    pub fn parent(&self) -> Option<BlockId> {
        self.parent
    }

    pub fn attr(&self, name: &str) -> Option<&Attr> {
        self.attrs.get(name)
    }
}

/// What defines a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueDef {
    Result { op: OpId, index: u32 },
    BlockArg { block: BlockId, index: u32 },
}

#[derive(Clone, Debug)]
pub struct ValueData {
    /// The type; a type-converting pass may change it in place.
    pub ty: Type,
    def: ValueDef,
}

impl ValueData {
    pub fn def(&self) -> ValueDef {
        self.def
    }
}

/// What owns a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockParent {
    /// The module's top-level body.
    Module,
    Region(RegionId),
}

#[derive(Clone, Debug)]
struct BlockData {
    args: Vec<ValueId>,
    ops: Vec<OpId>,
    parent: BlockParent,
}

#[derive(Clone, Debug)]
struct RegionData {
    block: BlockId,
    parent: Option<OpId>,
}

/// The name of the builtin function op, printed in the function form.
pub const FUNC_OP: &str = "func.func";
/// The attribute holding a function-like op's name (a string).
pub const SYM_NAME: &str = "sym_name";
/// The attribute holding a function-like op's signature (a function type).
pub const FUNCTION_TYPE: &str = "function_type";

/// The rule of [`Module::is_function`], on an op's parts (the parser
/// decides scopes with it before the op exists).
pub(crate) fn is_function_like(
    operands: usize,
    results: usize,
    regions: usize,
    attrs: &BTreeMap<String, Attr>,
) -> bool {
    operands == 0
        && results == 0
        && regions == 1
        && matches!(attrs.get(SYM_NAME), Some(Attr::Str(_)))
        && matches!(attrs.get(FUNCTION_TYPE), Some(Attr::Type(Type::Function { .. })))
}

/// An IR module: a name, attributes, a location and a body block, plus the
/// arenas of everything inside it.
#[derive(Clone, Debug)]
pub struct Module {
    pub name: Option<String>,
    pub attrs: BTreeMap<String, Attr>,
    pub loc: Loc,
    ops: Vec<OpData>,
    values: Vec<ValueData>,
    blocks: Vec<BlockData>,
    regions: Vec<RegionData>,
    body: BlockId,
}

impl Default for Module {
    fn default() -> Module {
        Module::new(None)
    }
}

impl Module {
    pub fn new(name: Option<&str>) -> Module {
        Module {
            name: name.map(str::to_string),
            attrs: BTreeMap::new(),
            loc: Loc::Unknown,
            ops: Vec::new(),
            values: Vec::new(),
            blocks: vec![BlockData {
                args: Vec::new(),
                ops: Vec::new(),
                parent: BlockParent::Module,
            }],
            regions: Vec::new(),
            body: BlockId(0),
        }
    }

    /// The top-level block.
    pub fn body(&self) -> BlockId {
        self.body
    }

    // ---- reading -------------------------------------------------------

    pub fn op(&self, op: OpId) -> &OpData {
        &self.ops[op.index()]
    }

    pub fn op_mut(&mut self, op: OpId) -> &mut OpData {
        &mut self.ops[op.index()]
    }

    /// The number of op slots, erased ones included (ids are `0..op_count`).
    pub fn op_count(&self) -> usize {
        self.ops.len()
    }

    pub fn value_count(&self) -> usize {
        self.values.len()
    }

    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    pub fn region_count(&self) -> usize {
        self.regions.len()
    }

    pub(crate) fn has_value(&self, v: ValueId) -> bool {
        v.index() < self.values.len()
    }

    pub(crate) fn has_block(&self, b: BlockId) -> bool {
        b.index() < self.blocks.len()
    }

    pub(crate) fn has_region(&self, r: RegionId) -> bool {
        r.index() < self.regions.len()
    }

    pub(crate) fn has_op(&self, op: OpId) -> bool {
        op.index() < self.ops.len()
    }

    pub fn is_erased(&self, op: OpId) -> bool {
        self.ops[op.index()].erased
    }

    pub fn value(&self, v: ValueId) -> &ValueData {
        &self.values[v.index()]
    }

    pub fn value_type(&self, v: ValueId) -> &Type {
        &self.values[v.index()].ty
    }

    pub fn set_value_type(&mut self, v: ValueId, ty: Type) {
        self.values[v.index()].ty = ty;
    }

    pub fn value_def(&self, v: ValueId) -> ValueDef {
        self.values[v.index()].def
    }

    /// The op whose result `v` is (`None` for a block argument).
    pub fn defining_op(&self, v: ValueId) -> Option<OpId> {
        match self.value_def(v) {
            ValueDef::Result { op, .. } => Some(op),
            ValueDef::BlockArg { .. } => None,
        }
    }

    /// The block that defines `v`: its own block for an argument, the
    /// defining op's block for a result.
    pub fn value_block(&self, v: ValueId) -> Option<BlockId> {
        match self.value_def(v) {
            ValueDef::Result { op, .. } => self.op(op).parent,
            ValueDef::BlockArg { block, .. } => Some(block),
        }
    }

    pub fn results(&self, op: OpId) -> &[ValueId] {
        &self.op(op).results
    }

    /// Result `index` of `op`. Panics when there is no such result.
    pub fn result(&self, op: OpId, index: usize) -> ValueId {
        self.op(op).results[index]
    }

    pub fn regions(&self, op: OpId) -> &[RegionId] {
        &self.op(op).regions
    }

    pub fn operands(&self, op: OpId) -> &[ValueId] {
        &self.op(op).operands
    }

    pub fn attr(&self, op: OpId, name: &str) -> Option<&Attr> {
        self.op(op).attrs.get(name)
    }

    pub fn set_attr(&mut self, op: OpId, name: impl Into<String>, attr: Attr) {
        self.op_mut(op).attrs.insert(name.into(), attr);
    }

    pub fn block_args(&self, b: BlockId) -> &[ValueId] {
        &self.blocks[b.index()].args
    }

    pub fn block_ops(&self, b: BlockId) -> &[OpId] {
        &self.blocks[b.index()].ops
    }

    pub fn block_parent(&self, b: BlockId) -> BlockParent {
        self.blocks[b.index()].parent
    }

    /// The block of a region.
    pub fn region_block(&self, r: RegionId) -> BlockId {
        self.regions[r.index()].block
    }

    /// The arguments of a region's block.
    pub fn region_args(&self, r: RegionId) -> &[ValueId] {
        self.block_args(self.region_block(r))
    }

    /// The op that owns a region (`None` while the region is detached).
    pub fn region_parent(&self, r: RegionId) -> Option<OpId> {
        self.regions[r.index()].parent
    }

    /// The op whose region holds `b` (`None` for the module body).
    pub fn block_parent_op(&self, b: BlockId) -> Option<OpId> {
        match self.block_parent(b) {
            BlockParent::Module => None,
            BlockParent::Region(r) => self.region_parent(r),
        }
    }

    /// The block `op` is in.
    pub fn parent_block(&self, op: OpId) -> Option<BlockId> {
        self.op(op).parent
    }

    /// The op whose region holds `op` (`None` at the top level).
    pub fn parent_op(&self, op: OpId) -> Option<OpId> {
        self.block_parent_op(self.parent_block(op)?)
    }

    /// The op of `ancestor`'s block that contains `op` (possibly `op`
    /// itself), or `None` when `op` is not inside that block.
    pub fn ancestor_in_block(&self, op: OpId, block: BlockId) -> Option<OpId> {
        let mut current = op;
        // Bounded, so that even a module with a cycle of parents terminates.
        for _ in 0..=self.ops.len() {
            let parent = self.parent_block(current)?;
            if parent == block {
                return Some(current);
            }
            current = self.block_parent_op(parent)?;
        }
        None
    }

    /// The position of `op` in its block.
    pub fn position(&self, op: OpId) -> Option<usize> {
        let block = self.parent_block(op)?;
        self.block_ops(block).iter().position(|&o| o == op)
    }

    // ---- functions -----------------------------------------------------

    /// Whether `op` is function-like: no operands or results, one region,
    /// a string `sym_name` and a function-type `function_type`. Such an op
    /// prints in the function form and is isolated from above: its region
    /// uses no value defined outside it.
    pub fn is_function(&self, op: OpId) -> bool {
        let data = self.op(op);
        is_function_like(data.operands.len(), data.results.len(), data.regions.len(), &data.attrs)
    }

    /// The function-like ops of the module's body, in order.
    pub fn functions(&self) -> Vec<OpId> {
        self.block_ops(self.body)
            .iter()
            .copied()
            .filter(|&op| self.is_function(op))
            .collect()
    }

    /// The top-level function-like op named `name`.
    pub fn function(&self, name: &str) -> Option<OpId> {
        self.functions().into_iter().find(|&f| self.func_name(f) == Some(name))
    }

    pub fn func_name(&self, op: OpId) -> Option<&str> {
        self.attr(op, SYM_NAME)?.as_str()
    }

    /// The parameter and result types of a function-like op.
    pub fn func_type(&self, op: OpId) -> Option<(&[Type], &[Type])> {
        match self.attr(op, FUNCTION_TYPE)?.as_type()? {
            Type::Function { inputs, results } => Some((inputs, results)),
            _ => None,
        }
    }

    /// The block of an op's first region (a function's body).
    pub fn entry_block(&self, op: OpId) -> Option<BlockId> {
        Some(self.region_block(*self.regions(op).first()?))
    }

    /// The nearest function-like op that contains `op`.
    pub fn enclosing_function(&self, op: OpId) -> Option<OpId> {
        let mut current = self.parent_op(op)?;
        for _ in 0..=self.ops.len() {
            if self.is_function(current) {
                return Some(current);
            }
            current = self.parent_op(current)?;
        }
        None
    }

    /// Appends a `func.func` to the module body; its entry block has one
    /// argument per input. Returns the function op.
    pub fn add_function(&mut self, name: &str, inputs: &[Type], results: &[Type], loc: Loc) -> OpId {
        let body = self.new_region(inputs);
        let attrs = BTreeMap::from([
            (SYM_NAME.to_string(), Attr::Str(name.to_string())),
            (
                FUNCTION_TYPE.to_string(),
                Attr::Type(Type::function(inputs.iter().cloned(), results.iter().cloned())),
            ),
        ]);
        let op = self.create_op(OpName::new(FUNC_OP), Vec::new(), &[], attrs, vec![body], loc);
        self.push_op(self.body, op);
        op
    }

    // ---- walking -------------------------------------------------------

    /// Every op in `block` and, recursively, in the regions of its ops, in
    /// textual (pre-)order.
    pub fn walk_block(&self, block: BlockId) -> Vec<OpId> {
        let mut out = Vec::new();
        let mut stack: Vec<(BlockId, usize)> = vec![(block, 0)];
        while let Some((b, i)) = stack.pop() {
            let Some(&op) = self.block_ops(b).get(i) else { continue };
            stack.push((b, i + 1));
            out.push(op);
            for &r in self.regions(op).iter().rev() {
                stack.push((self.region_block(r), 0));
            }
        }
        out
    }

    /// The ops nested inside `op`'s regions, in textual order (not `op`).
    pub fn walk_op(&self, op: OpId) -> Vec<OpId> {
        let mut out = Vec::new();
        for &r in self.regions(op) {
            out.extend(self.walk_block(self.region_block(r)));
        }
        out
    }

    /// Every live op of the module, in textual order.
    pub fn walk(&self) -> Vec<OpId> {
        self.walk_block(self.body)
    }

    /// The uses of `v` as `(op, operand index)`, in textual order. Walks the
    /// whole module: a pass that asks for many values should count uses once
    /// with [`Module::use_counts`] or keep its own map.
    pub fn users(&self, v: ValueId) -> Vec<(OpId, usize)> {
        let mut out = Vec::new();
        for op in self.walk() {
            for (i, &operand) in self.operands(op).iter().enumerate() {
                if operand == v {
                    out.push((op, i));
                }
            }
        }
        out
    }

    /// How many operands of live ops use each value, indexed by
    /// `ValueId::index` (one pass over the module).
    pub fn use_counts(&self) -> Vec<u32> {
        let mut counts = vec![0u32; self.values.len()];
        for op in self.walk() {
            for &operand in self.operands(op) {
                if let Some(c) = counts.get_mut(operand.index()) {
                    *c += 1;
                }
            }
        }
        counts
    }

    // ---- building ------------------------------------------------------

    fn new_value(&mut self, ty: Type, def: ValueDef) -> ValueId {
        self.values.push(ValueData { ty, def });
        ValueId::new(self.values.len() - 1)
    }

    /// Creates a detached op (insert it with [`Module::push_op`] or
    /// [`Module::insert_op`], or build it with a [`crate::Builder`]). The
    /// regions must be detached; they become the op's.
    pub fn create_op(
        &mut self,
        name: OpName,
        operands: Vec<ValueId>,
        result_types: &[Type],
        attrs: BTreeMap<String, Attr>,
        regions: Vec<RegionId>,
        loc: Loc,
    ) -> OpId {
        let id = OpId::new(self.ops.len());
        let results = result_types
            .iter()
            .enumerate()
            .map(|(i, ty)| {
                self.new_value(
                    ty.clone(),
                    ValueDef::Result {
                        op: id,
                        index: i as u32,
                    },
                )
            })
            .collect();
        for &r in &regions {
            debug_assert!(self.regions[r.index()].parent.is_none(), "{r:?} already has an owner");
            self.regions[r.index()].parent = Some(id);
        }
        self.ops.push(OpData {
            name,
            operands,
            attrs,
            loc,
            text_span: None,
            results,
            regions,
            parent: None,
            erased: false,
        });
        id
    }

    /// Creates a detached region whose block has arguments of these types.
    pub fn new_region(&mut self, arg_types: &[Type]) -> RegionId {
        let region = RegionId::new(self.regions.len());
        let block = BlockId::new(self.blocks.len());
        self.blocks.push(BlockData {
            args: Vec::new(),
            ops: Vec::new(),
            parent: BlockParent::Region(region),
        });
        self.regions.push(RegionData { block, parent: None });
        for ty in arg_types {
            self.add_block_arg(block, ty.clone());
        }
        region
    }

    /// Appends an argument to a block.
    pub fn add_block_arg(&mut self, block: BlockId, ty: Type) -> ValueId {
        let index = self.blocks[block.index()].args.len() as u32;
        let v = self.new_value(ty, ValueDef::BlockArg { block, index });
        self.blocks[block.index()].args.push(v);
        v
    }

    /// Gives a detached region to `op`, after its other regions.
    pub fn push_region(&mut self, op: OpId, region: RegionId) {
        debug_assert!(
            self.regions[region.index()].parent.is_none(),
            "{region:?} already has an owner"
        );
        self.regions[region.index()].parent = Some(op);
        self.ops[op.index()].regions.push(region);
    }

    /// Appends a detached op to `block`.
    pub fn push_op(&mut self, block: BlockId, op: OpId) {
        let at = self.block_ops(block).len();
        self.insert_op(block, at, op);
    }

    /// Inserts a detached op into `block` at position `index`.
    pub fn insert_op(&mut self, block: BlockId, index: usize, op: OpId) {
        debug_assert!(self.ops[op.index()].parent.is_none(), "{op:?} is already in a block");
        debug_assert!(!self.ops[op.index()].erased, "{op:?} was erased");
        self.ops[op.index()].parent = Some(block);
        self.blocks[block.index()].ops.insert(index, op);
    }

    /// Takes `op` out of its block; it keeps its operands, results and
    /// regions and can be inserted elsewhere.
    pub fn detach_op(&mut self, op: OpId) {
        if let Some(block) = self.ops[op.index()].parent.take() {
            self.blocks[block.index()].ops.retain(|&o| o != op);
        }
    }

    /// Moves `op` right before `anchor` (possibly into another block).
    pub fn move_op_before(&mut self, op: OpId, anchor: OpId) {
        self.detach_op(op);
        let block = self.parent_block(anchor).expect("the anchor is in a block");
        let at = self.position(anchor).expect("the anchor is in its block");
        self.insert_op(block, at, op);
    }

    /// Moves `op` right after `anchor`.
    pub fn move_op_after(&mut self, op: OpId, anchor: OpId) {
        self.detach_op(op);
        let block = self.parent_block(anchor).expect("the anchor is in a block");
        let at = self.position(anchor).expect("the anchor is in its block");
        self.insert_op(block, at + 1, op);
    }

    /// Moves `op` to the end of `block`.
    pub fn move_op_to_end(&mut self, op: OpId, block: BlockId) {
        self.detach_op(op);
        self.push_op(block, op);
    }

    /// Removes `op` and everything in its regions. Its results must be
    /// unused by then (the structural verifier reports a use of an erased
    /// op's result).
    pub fn erase_op(&mut self, op: OpId) {
        self.detach_op(op);
        let nested = self.walk_op(op);
        for o in nested.into_iter().chain([op]) {
            self.ops[o.index()].erased = true;
        }
    }

    /// Makes every use of `from` a use of `to`; returns how many there were.
    /// Walks the whole module (see `cse` for renaming many values in one walk).
    pub fn replace_all_uses(&mut self, from: ValueId, to: ValueId) -> usize {
        let mut count = 0;
        for op in self.walk() {
            for operand in &mut self.ops[op.index()].operands {
                if *operand == from {
                    *operand = to;
                    count += 1;
                }
            }
        }
        count
    }

    /// Replaces the uses of each result of `op` by the matching value of
    /// `with`, then erases `op`.
    pub fn replace_op(&mut self, op: OpId, with: &[ValueId]) {
        let results = self.results(op).to_vec();
        assert_eq!(results.len(), with.len(), "replace_op needs one value per result");
        for (&r, &w) in results.iter().zip(with) {
            self.replace_all_uses(r, w);
        }
        self.erase_op(op);
    }

    /// A detached copy of `op` with its regions, operands renamed through
    /// `map` (values not in it stay); the copy's results and block
    /// arguments are added to `map`.
    pub fn clone_op(&mut self, op: OpId, map: &mut std::collections::HashMap<ValueId, ValueId>) -> OpId {
        let data = self.op(op).clone();
        let operands = data.operands.iter().map(|v| *map.get(v).unwrap_or(v)).collect();
        let mut regions = Vec::new();
        for &r in &data.regions {
            let old_block = self.region_block(r);
            let arg_types: Vec<Type> = self
                .block_args(old_block)
                .iter()
                .map(|&a| self.value_type(a).clone())
                .collect();
            let new_region = self.new_region(&arg_types);
            let new_block = self.region_block(new_region);
            for (&old, &new) in self
                .block_args(old_block)
                .to_vec()
                .iter()
                .zip(self.block_args(new_block))
            {
                map.insert(old, new);
            }
            for inner in self.block_ops(old_block).to_vec() {
                let copy = self.clone_op(inner, map);
                self.push_op(new_block, copy);
            }
            regions.push(new_region);
        }
        let result_types: Vec<Type> = data.results.iter().map(|&v| self.value_type(v).clone()).collect();
        let copy = self.create_op(data.name, operands, &result_types, data.attrs, regions, data.loc);
        self.ops[copy.index()].text_span = data.text_span;
        for (&old, &new) in data.results.iter().zip(&self.ops[copy.index()].results) {
            map.insert(old, new);
        }
        copy
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Builder;

    #[test]
    fn names_split_at_the_first_dot() {
        let n = OpName::new("nvptx.mma.sync");
        assert_eq!(n.dialect(), "nvptx");
        assert_eq!(n.op(), "mma.sync");
        assert_eq!(OpName::new("bare").dialect(), "");
    }

    #[test]
    fn walks_users_and_edits() {
        let mut m = Module::new(Some("m"));
        let f = m.add_function("f", &[Type::F32], &[Type::F32], Loc::Unknown);
        let entry = m.entry_block(f).unwrap();
        let x = m.block_args(entry)[0];
        let mut b = Builder::at_end(&mut m, entry);
        let a = b.op("t.neg").operand(x).result(Type::F32).build_value();
        let region_op = b
            .op("t.loop")
            .region_with(&[Type::INDEX], |b, _| {
                b.op("t.use").operand(a).build();
            })
            .build();
        let c = b.op("t.neg").operand(a).result(Type::F32).build_value();
        b.op("func.return").operand(c).build();

        let names: Vec<String> = m.walk().iter().map(|&o| m.op(o).name.to_string()).collect();
        assert_eq!(names, ["func.func", "t.neg", "t.loop", "t.use", "t.neg", "func.return"]);
        assert_eq!(m.users(a).len(), 2);
        let inner = m.walk_op(region_op)[0];
        assert_eq!(m.parent_op(inner), Some(region_op));
        assert_eq!(m.enclosing_function(inner), Some(f));
        assert_eq!(m.ancestor_in_block(inner, entry), Some(region_op));
        assert_eq!(m.defining_op(a), m.block_ops(entry).first().copied());

        assert_eq!(m.replace_all_uses(a, x), 2);
        assert!(m.users(a).is_empty());
        let a_op = m.defining_op(a).unwrap();
        m.erase_op(a_op);
        assert!(m.is_erased(a_op));
        m.erase_op(region_op);
        assert!(m.is_erased(inner));
        assert_eq!(m.block_ops(entry).len(), 2);
        assert_eq!(m.functions(), vec![f]);
        assert_eq!(m.function("f"), Some(f));
    }

    #[test]
    fn moving_and_cloning() {
        let mut m = Module::new(None);
        let f = m.add_function("f", &[Type::F32], &[], Loc::Unknown);
        let entry = m.entry_block(f).unwrap();
        let x = m.block_args(entry)[0];
        let mut b = Builder::at_end(&mut m, entry);
        let first = b.op("t.a").operand(x).result(Type::F32).build();
        let second = b.op("t.b").result(Type::F32).build();
        m.move_op_before(second, first);
        assert_eq!(m.block_ops(entry), &[second, first]);
        m.move_op_after(second, first);
        assert_eq!(m.block_ops(entry), &[first, second]);

        let mut map = std::collections::HashMap::new();
        let y = m.result(second, 0);
        map.insert(x, y);
        let copy = m.clone_op(first, &mut map);
        m.push_op(entry, copy);
        assert_eq!(m.operands(copy), &[y]);
        assert_eq!(map[&m.result(first, 0)], m.result(copy, 0));
    }
}
