//! The generic passes: dead-code elimination and common-subexpression
//! elimination. Both rely on the `pure` flag of op definitions; ops of
//! unregistered dialects are never touched.

use std::collections::{BTreeMap, HashMap};

use tessera_diagnostics::Diagnostic;

use crate::{Attr, BlockId, Module, OpId, OpName, Pass, PassContext, Type, ValueId};

/// `dce`: erases pure ops whose results are all unused (with their
/// regions), repeatedly, so chains of dead ops go at once.
pub struct Dce;

impl Pass for Dce {
    fn name(&self) -> &'static str {
        "dce"
    }

    fn run(&mut self, m: &mut Module, ctx: &PassContext) -> Result<(), Vec<Diagnostic>> {
        loop {
            let mut uses = m.use_counts();
            let mut changed = false;
            // Users come after their operands' definitions, so walking
            // backwards frees a whole chain in one sweep.
            for op in m.walk().into_iter().rev() {
                if m.is_erased(op) || !ctx.registry.is_pure(m.op(op).name.as_str()) {
                    continue;
                }
                if m.results(op).iter().any(|r| uses[r.index()] > 0) {
                    continue;
                }
                for inner in std::iter::once(op).chain(m.walk_op(op)) {
                    for &v in m.operands(inner) {
                        uses[v.index()] = uses[v.index()].saturating_sub(1);
                    }
                }
                m.erase_op(op);
                changed = true;
            }
            if !changed {
                return Ok(());
            }
        }
    }
}

/// `cse`: merges a pure op without regions into an identical one (same
/// name, operands, attributes and result types) defined earlier in the same
/// block or in an enclosing block before the region that holds it. Never
/// across a function boundary.
pub struct Cse;

type CseKey = (OpName, Vec<ValueId>, BTreeMap<String, Attr>, Vec<Type>);

impl Pass for Cse {
    fn name(&self) -> &'static str {
        "cse"
    }

    fn run(&mut self, m: &mut Module, ctx: &PassContext) -> Result<(), Vec<Diagnostic>> {
        let mut cse = CseState {
            ctx,
            scopes: Vec::new(),
            renamed: HashMap::new(),
        };
        cse.block(m, m.body());
        Ok(())
    }
}

struct CseState<'c, 'a> {
    ctx: &'c PassContext<'a>,
    /// The ops available in each enclosing block, innermost last.
    scopes: Vec<HashMap<CseKey, OpId>>,
    /// Results of merged ops and what replaces them. Uses follow their
    /// definitions in a verified module, so rewriting each op's operands
    /// when it is reached replaces every use without a search.
    renamed: HashMap<ValueId, ValueId>,
}

impl CseState<'_, '_> {
    fn block(&mut self, m: &mut Module, block: BlockId) {
        self.scopes.push(HashMap::new());
        for op in m.block_ops(block).to_vec() {
            for operand in &mut m.op_mut(op).operands {
                if let Some(&to) = self.renamed.get(operand) {
                    *operand = to;
                }
            }
            let data = m.op(op);
            if data.regions().is_empty() && self.ctx.registry.is_pure(data.name.as_str()) {
                let key: CseKey = (
                    data.name.clone(),
                    data.operands.clone(),
                    data.attrs.clone(),
                    data.results().iter().map(|&r| m.value_type(r).clone()).collect(),
                );
                match self.scopes.iter().rev().find_map(|s| s.get(&key)) {
                    Some(&earlier) => {
                        for (&from, &to) in m.results(op).iter().zip(m.results(earlier)) {
                            self.renamed.insert(from, to);
                        }
                        m.erase_op(op);
                    }
                    None => {
                        self.scopes.last_mut().expect("a scope is open").insert(key, op);
                    }
                }
                continue;
            }
            let isolated = m.is_function(op);
            let outer = if isolated {
                std::mem::take(&mut self.scopes)
            } else {
                Vec::new()
            };
            for r in m.regions(op).to_vec() {
                self.block(m, m.region_block(r));
            }
            if isolated {
                self.scopes = outer;
            }
        }
        self.scopes.pop();
    }
}
