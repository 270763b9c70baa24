//! A forward dataflow over the structured control flow of a function:
//! `tile.if` joins its branches, `tile.for` and `tile.while` iterate their
//! body to a fixpoint (the state at the loop head is the join of the entry
//! and every back edge; of `tile.pipeline`, the use region is the body and
//! the fill is left out, its copies being the pipeline's own),
//! `tile.break`/`tile.continue` feed the loop's exits and back edge, and `tile.return`/`func.return` leave the function. Ops
//! after a `break`, `continue` or `return` in their block are unreachable.
//!
//! The same walk as the source-level async-copy checker
//! (`compiler/hir/src/async_copy.rs`), on the IR: the verifier uses it for
//! the async stage rules and the lowering for the `cp.async` group counts.

use std::collections::HashMap;
use std::hash::Hash;

use tessera_ir::{Attr, BlockId, Module, OpId, RegionId};

/// What an analysis does at each op.
pub(crate) trait Transfer {
    type State: Clone + Eq + Hash + Default;

    /// Where two paths meet.
    fn join(into: &mut Self::State, other: &Self::State);

    /// An op that is not control flow, and the operands of one that is.
    /// `report` is false while a loop is walked towards its fixpoint (only
    /// the final walk reports) and on unreachable paths.
    fn visit(&mut self, m: &Module, op: OpId, state: &mut Self::State, report: bool);

    /// Where the function is left: at the return op `at`, or at the end of
    /// its body (`None`).
    fn exit(&mut self, m: &Module, at: Option<OpId>, state: &Self::State, report: bool);
}

/// The state at a point, over every path that reaches it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Flow<S> {
    /// False after a `return`, `break` or `continue`, until paths join.
    pub reachable: bool,
    pub state: S,
}

impl<S: Clone + Default> Flow<S> {
    fn entry() -> Flow<S> {
        Flow {
            reachable: true,
            state: S::default(),
        }
    }

    fn unreachable() -> Flow<S> {
        Flow {
            reachable: false,
            state: S::default(),
        }
    }
}

fn join<T: Transfer>(into: &mut Flow<T::State>, other: &Flow<T::State>) {
    if !other.reachable {
        return;
    }
    if !into.reachable {
        *into = other.clone();
        return;
    }
    T::join(&mut into.state, &other.state);
}

/// Runs `t` over the body of the function `func`.
pub(crate) fn run<T: Transfer>(m: &Module, func: OpId, t: &mut T) {
    let Some(entry) = m.entry_block(func) else { return };
    let mut walker = Walker {
        m,
        t,
        loud: true,
        loops: Vec::new(),
        memo: HashMap::new(),
    };
    let mut flow = Flow::entry();
    walker.block(entry, &mut flow);
    if flow.reachable {
        walker.t.exit(m, None, &flow.state, true);
    }
}

struct LoopExits<S> {
    breaks: Flow<S>,
    continues: Flow<S>,
}

type Memo<S> = HashMap<(OpId, Flow<S>), Flow<S>>;

struct Walker<'m, 't, T: Transfer> {
    m: &'m Module,
    t: &'t mut T,
    loud: bool,
    loops: Vec<LoopExits<T::State>>,
    /// The state after a loop for a state before it, while quiet: walking
    /// a loop has no other effect then, and remembering it keeps nested
    /// loops from taking time exponential in their depth.
    memo: Memo<T::State>,
}

impl<T: Transfer> Walker<'_, '_, T> {
    fn block(&mut self, block: BlockId, flow: &mut Flow<T::State>) {
        for &op in self.m.block_ops(block) {
            self.op(op, flow);
        }
    }

    fn region(&mut self, region: Option<&RegionId>, flow: &mut Flow<T::State>) {
        if let Some(&r) = region {
            self.block(self.m.region_block(r), flow);
        }
    }

    fn visit(&mut self, op: OpId, flow: &mut Flow<T::State>) {
        let report = self.loud && flow.reachable;
        self.t.visit(self.m, op, &mut flow.state, report);
    }

    fn op(&mut self, op: OpId, flow: &mut Flow<T::State>) {
        let m = self.m;
        let regions = m.regions(op);
        match m.op(op).name.as_str() {
            "tile.if" => {
                self.visit(op, flow);
                let mut out = Flow::unreachable();
                for r in regions {
                    let mut taken = flow.clone();
                    self.region(Some(r), &mut taken);
                    join::<T>(&mut out, &taken);
                }
                if regions.len() < 2 {
                    join::<T>(&mut out, flow);
                }
                *flow = out;
            }
            "tile.for" => {
                self.visit(op, flow);
                self.loop_(op, None, regions.first(), flow);
            }
            "tile.while" => self.loop_(op, regions.first(), regions.get(1), flow),
            // The fill's copies are the pipeline's own (it waits for them
            // itself), so only the use region is walked, as a loop body.
            "tile.pipeline" => {
                self.visit(op, flow);
                self.loop_(op, None, regions.get(1), flow);
            }
            "tile.break" | "tile.continue" => {
                self.visit(op, flow);
                let is_break = m.op(op).name == "tile.break";
                if let Some(exits) = self.loops.last_mut() {
                    let exit = if is_break {
                        &mut exits.breaks
                    } else {
                        &mut exits.continues
                    };
                    join::<T>(exit, flow);
                }
                *flow = Flow::unreachable();
            }
            "tile.return" | "func.return" => {
                self.visit(op, flow);
                let report = self.loud && flow.reachable;
                self.t.exit(m, Some(op), &flow.state, report);
                *flow = Flow::unreachable();
            }
            _ => {
                self.visit(op, flow);
                for r in regions {
                    self.region(Some(r), flow);
                }
            }
        }
    }

    /// A loop: find the head's state quietly, then walk once from it,
    /// reporting.
    fn loop_(&mut self, op: OpId, cond: Option<&RegionId>, body: Option<&RegionId>, flow: &mut Flow<T::State>) {
        let key = (op, flow.clone());
        if !self.loud {
            if let Some(exit) = self.memo.get(&key) {
                *flow = exit.clone();
                return;
            }
        }
        let loud = self.loud;
        self.loud = false;
        let mut head = flow.clone();
        loop {
            let (back, _) = self.iteration(cond, body, &head);
            let mut joined = head.clone();
            join::<T>(&mut joined, &back);
            if joined == head {
                break;
            }
            head = joined;
        }
        self.loud = loud;
        let (_, exit) = self.iteration(cond, body, &head);
        self.memo.insert(key, exit.clone());
        *flow = exit;
    }

    /// One iteration from `head`: the state on the back edge and the state
    /// after the loop (the condition failed, the range ran out, a `break`).
    fn iteration(
        &mut self,
        cond: Option<&RegionId>,
        body: Option<&RegionId>,
        head: &Flow<T::State>,
    ) -> (Flow<T::State>, Flow<T::State>) {
        let mut state = head.clone();
        self.region(cond, &mut state);
        let mut exit = if always_true(self.m, cond) {
            Flow::unreachable()
        } else {
            state.clone()
        };
        self.loops.push(LoopExits {
            breaks: Flow::unreachable(),
            continues: Flow::unreachable(),
        });
        self.region(body, &mut state);
        if let Some(exits) = self.loops.pop() {
            join::<T>(&mut state, &exits.continues);
            join::<T>(&mut exit, &exits.breaks);
        }
        (state, exit)
    }
}

/// Whether a `tile.while`'s condition region ends in a `tile.condition` of
/// the constant true (`while True:`): the loop is left at a `break` only.
fn always_true(m: &Module, cond: Option<&RegionId>) -> bool {
    let Some(&region) = cond else { return false };
    let Some(&last) = m.block_ops(m.region_block(region)).last() else {
        return false;
    };
    let Some(&c) = m.operands(last).first().filter(|_| m.op(last).name == "tile.condition") else {
        return false;
    };
    // The lowering writes `True` as the `i1` constant 1.
    m.defining_op(c).is_some_and(|d| {
        m.op(d).name == "tile.const" && matches!(m.attr(d, "value"), Some(Attr::Bool(true) | Attr::Int(1)))
    })
}
