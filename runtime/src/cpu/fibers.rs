//! The threads of a block that synchronizes, run as fibers: each GPU thread
//! is a coroutine on a stack of its own, and one OS thread runs every
//! thread of a block, switching at each barrier, shuffle and vote, and at
//! each atomic in a loop (a few nanoseconds a switch, where an OS thread
//! per GPU thread cost a context switch of the kernel's scheduler each
//! time).
//!
//! A thread runs until it reaches a barrier, a warp operation or the end of
//! the kernel, and *suspends* there with what it waits for ([`Wait`]); at an
//! atomic in a loop it suspends for a round, so that a thread spinning on a
//! flag lets the others run. A warp whose every live lane waits at a warp
//! operation exchanges their values and its lanes go on; when every thread
//! has suspended and no warp can, a barrier that every unfinished thread
//! waits at, with none finished, releases them all. When nothing can be
//! resolved, the block is stuck: a barrier some threads finished the kernel
//! without reaching is *barrier divergence*, anything else a *deadlock*; a
//! block whose spinning threads read the same values for the spin limit is
//! a *livelock*. All are errors, never hangs. After an error the block is
//! *broken*: every wait returns at once, so the kernel's threads run to
//! their end (a fiber is never dropped while suspended in the kernel's
//! frames, which have no unwind information), and a thread that spins
//! again is stopped (its stack reset: no frame there needs dropping). The
//! order the threads run in is fixed, so a launch runs the same way every
//! time.

use std::time::{Duration, Instant};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::{
    at_site, block_index, thread_index, BlockCtx, CpuKernelFn, LaunchConfig, LaunchState, TesseraCpuCtx, TesseraCpuSite,
};
use crate::buffer::HostBuffer;
use crate::RunError;

/// Bytes of shared memory are set to this before each block, so a kernel
/// that reads shared memory it did not write sees garbage, not zeros.
pub const SHARED_POISON: u8 = 0xFF;

/// The stack of each fiber (GPU thread).
const FIBER_STACK: usize = 256 * 1024;

/// What a suspended thread waits for, and the site of the call it waits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    Barrier {
        site: *const TesseraCpuSite,
    },
    /// A shuffle of `mode` (`SHFL_*`): this lane's value, and the lane it
    /// reads (None: its own).
    Shuffle {
        value: u32,
        src: Option<u32>,
        mode: u32,
        site: *const TesseraCpuSite,
    },
    /// A vote of `mode` (`VOTE_*`) with this lane's predicate.
    Vote {
        pred: bool,
        mode: u32,
        site: *const TesseraCpuSite,
    },
    /// An atomic in a loop, with the value it read: the thread goes on
    /// after the others have had their turn.
    Spin {
        value: u64,
        site: *const TesseraCpuSite,
    },
}

impl Wait {
    /// The warp operation waited at, with its mode: lanes meet only at the
    /// same one (PTX's `shfl.sync` and `vote.sync` wait for the lanes of
    /// their mask to execute one "with the same qualifiers").
    fn warp_op(self) -> Option<&'static str> {
        use super::{SHFL_BFLY, SHFL_DOWN, SHFL_IDX, VOTE_ALL, VOTE_ANY};
        match self {
            Wait::Barrier { .. } | Wait::Spin { .. } => None,
            Wait::Shuffle { mode: SHFL_IDX, .. } => Some("an indexed shuffle"),
            Wait::Shuffle { mode: SHFL_DOWN, .. } => Some("a shuffle down"),
            Wait::Shuffle { mode: SHFL_BFLY, .. } => Some("a xor shuffle"),
            Wait::Shuffle { .. } => Some("a shuffle up"),
            Wait::Vote { mode: VOTE_ALL, .. } => Some("an all-vote"),
            Wait::Vote { mode: VOTE_ANY, .. } => Some("an any-vote"),
            Wait::Vote { .. } => Some("a ballot"),
        }
    }

    fn site(self) -> *const TesseraCpuSite {
        match self {
            Wait::Barrier { site } | Wait::Shuffle { site, .. } | Wait::Vote { site, .. } | Wait::Spin { site, .. } => {
                site
            }
        }
    }

    /// What the thread waits at, for messages.
    fn what(self) -> &'static str {
        match self {
            Wait::Barrier { .. } => "barrier",
            Wait::Shuffle { .. } => "shuffle",
            Wait::Vote { .. } => "vote",
            Wait::Spin { .. } => "atomic",
        }
    }
}

/// What a thread gets when it goes on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Resume {
    /// A shuffle's value; a vote's ballot over the lanes that took part.
    pub value: u32,
    /// The lanes of the warp that took part in a warp operation.
    pub lanes: u32,
    /// The block broke: the wait returned without its partners.
    pub broken: bool,
}

pub(crate) type FiberYielder = Yielder<Resume, Wait>;
type Fiber = Coroutine<Resume, Wait, (), DefaultStack>;

/// Suspends the calling fiber until its wait is resolved.
///
/// # Safety
/// `fiber` must be the yielder pointer the runtime put in the calling
/// thread's context, and the call must come from that fiber.
pub(crate) unsafe fn suspend(fiber: *mut std::ffi::c_void, wait: Wait) -> Resume {
    // SAFETY: the runtime set `fiber` to the running coroutine's yielder,
    // which lives as long as the coroutine (caller's contract).
    let yielder = unsafe { &*(fiber as *const FiberYielder) };
    yielder.suspend(wait)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Ready(Resume),
    Waiting(Wait),
    Done,
}

/// One OS thread's share of a launch: it runs blocks `worker, worker +
/// workers, …`, each block's threads as fibers on stacks it reuses.
pub(crate) struct Worker<'a> {
    pub entry: CpuKernelFn,
    pub config: &'a LaunchConfig,
    pub args: &'a [usize],
    pub launch: &'a LaunchState,
    /// How long a block's threads may spin without progress.
    pub spin_limit: Duration,
}

impl Worker<'_> {
    pub(crate) fn run(&self, first: u64, step: u64) {
        let threads = self.config.threads_per_block() as usize;
        let mut shared = match HostBuffer::zeroed(self.config.shared_bytes) {
            Ok(b) => b,
            Err(e) => return self.launch.fail_with(e),
        };
        let mut stacks = Vec::with_capacity(threads);
        for _ in 0..threads {
            match DefaultStack::new(FIBER_STACK) {
                Ok(s) => stacks.push(s),
                Err(e) => {
                    return self
                        .launch
                        .fail(format!("cannot allocate the stack of a GPU thread: {e}"))
                }
            }
        }
        let mut args: Vec<*mut std::ffi::c_void> = self.args.iter().map(|&a| a as *mut std::ffi::c_void).collect();
        let block = BlockCtx {
            threads,
            synchronized: true,
            launch: self.launch,
        };
        let mut b = first;
        while b < self.config.blocks() && self.launch.starts(b) {
            shared.bytes_mut().fill(SHARED_POISON);
            let block_id = block_index(b, self.config.grid);
            let fibers: Vec<Fiber> = stacks
                .drain(..)
                .enumerate()
                .map(|(t, stack)| {
                    let ctx = TesseraCpuCtx {
                        thread_id: thread_index(t, self.config.block),
                        block_id,
                        block_dim: self.config.block,
                        grid_dim: self.config.grid,
                        shared: shared.as_mut_ptr(),
                        block: &block as *const BlockCtx as *mut std::ffi::c_void,
                        fiber: std::ptr::null_mut(),
                    };
                    fiber(stack, self.entry, args.as_mut_ptr() as usize, ctx)
                })
                .collect();
            let (error, returned) = run_block(fibers, block_id, self.spin_limit);
            stacks.extend(returned);
            if let Some(error) = error {
                self.launch.fail_in(b, error);
            }
            b += step;
        }
    }
}

/// A fiber that runs `entry` as the thread `ctx` describes.
fn fiber(stack: DefaultStack, entry: CpuKernelFn, args: usize, mut ctx: TesseraCpuCtx) -> Fiber {
    Coroutine::with_stack(stack, move |yielder: &FiberYielder, _start: Resume| {
        ctx.fiber = yielder as *const FiberYielder as *mut std::ffi::c_void;
        // SAFETY: the caller of `CpuDevice::launch` guarantees the entry
        // point and its arguments; `ctx`, the block state, the shared memory
        // and the argument array outlive the fiber, which runs to its end
        // before its block's `run_block` returns.
        unsafe { entry(args as *mut *mut std::ffi::c_void, &mut ctx) };
    })
}

/// Runs one block's fibers to their end; gives the first error and the
/// stacks back.
///
/// A thread at an atomic in a loop (a [`Wait::Spin`]) goes on in the next
/// round, after the others have run, so that a thread spinning on a flag or
/// a lock lets the thread that sets it run. Rounds in which no thread
/// reached a barrier, a warp operation or its end and every spinning thread
/// read what it read before make no progress; after `spin_limit` of them
/// the block is stuck in a *livelock*, an error. In a block that failed, a
/// thread that spins again is stopped there (its stack reset), since what
/// it waits for may never come.
fn run_block(mut fibers: Vec<Fiber>, block: [u32; 3], spin_limit: Duration) -> (Option<RunError>, Vec<DefaultStack>) {
    let n = fibers.len();
    let mut states = vec![State::Ready(Resume::default()); n];
    let mut spun: Vec<Option<Wait>> = vec![None; n];
    let mut idle = Idle::default();
    let mut error: Option<RunError> = None;
    loop {
        let mut progressed = false;
        for (t, fiber) in fibers.iter_mut().enumerate() {
            let State::Ready(input) = states[t] else { continue };
            states[t] = match fiber.resume(input) {
                // A thread that spins in a broken block may wait for a value
                // that never comes: it stops there, its stack reset.
                CoroutineResult::Yield(Wait::Spin { .. }) if error.is_some() => {
                    // SAFETY: the fiber is suspended in `tessera_cpu_yield`,
                    // under the kernel's frames and the runtime's, none of
                    // which holds a value that needs dropping.
                    unsafe { fiber.force_reset() };
                    State::Done
                }
                CoroutineResult::Yield(wait) if error.is_some() => State::Ready(broken(wait)),
                CoroutineResult::Yield(wait @ Wait::Spin { .. }) => {
                    progressed |= spun[t] != Some(wait);
                    spun[t] = Some(wait);
                    State::Ready(Resume::default())
                }
                CoroutineResult::Yield(wait) => {
                    progressed = true;
                    State::Waiting(wait)
                }
                CoroutineResult::Return(()) => {
                    progressed = true;
                    State::Done
                }
            };
        }
        if states.iter().all(|s| *s == State::Done) {
            break;
        }
        let outcome = match complete_warps(&mut states, block) {
            Ok(true) => Ok(()),
            Ok(false) if states.iter().any(|s| matches!(s, State::Ready(_))) => {
                match idle.after_round(progressed, spin_limit) {
                    true => Err(livelock(&states, &spun, block, spin_limit)),
                    false => Ok(()),
                }
            }
            Ok(false) => resolve(&mut states, block),
            Err(e) => Err(e),
        };
        if let Err(e) = outcome {
            error.get_or_insert(e);
            for s in &mut states {
                if let State::Waiting(wait) = *s {
                    *s = State::Ready(broken(wait));
                }
            }
        }
    }
    let stacks = fibers.into_iter().map(Fiber::into_stack).collect();
    (error, stacks)
}

/// How long a block has gone without progress.
#[derive(Default)]
struct Idle {
    rounds: u64,
    since: Option<Instant>,
}

impl Idle {
    /// Counts a round; whether the block has made no progress for `limit`
    /// (the clock is read every 1024 idle rounds).
    fn after_round(&mut self, progressed: bool, limit: Duration) -> bool {
        if progressed {
            *self = Idle::default();
            return false;
        }
        self.rounds += 1;
        if self.rounds % 1024 != 1 {
            return false;
        }
        let since = *self.since.get_or_insert_with(Instant::now);
        since.elapsed() >= limit
    }
}

/// What the waiting threads wait for, in thread order.
fn waits(states: &[State]) -> Vec<Wait> {
    states
        .iter()
        .filter_map(|s| match s {
            State::Waiting(wait) => Some(*wait),
            _ => None,
        })
        .collect()
}

/// The error of a block whose spinning threads made no progress.
fn livelock(states: &[State], spun: &[Option<Wait>], block: [u32; 3], limit: Duration) -> RunError {
    let spinning: Vec<Wait> = states
        .iter()
        .zip(spun)
        .filter_map(|(s, w)| matches!(s, State::Ready(_)).then_some(*w).flatten())
        .collect();
    let waiting = waits(states);
    let done = states.iter().filter(|s| **s == State::Done).count();
    let mut others = Vec::new();
    if !waiting.is_empty() {
        others.push(format!("{} wait at a barrier or warp operation", waiting.len()));
    }
    if done > 0 {
        others.push(format!("{done} finished the kernel"));
    }
    let others = match others.is_empty() {
        true => String::new(),
        false => format!(", while {}", others.join(" and ")),
    };
    let message = format!(
        "livelock in block {}: {} of its {} threads spin at an atomic that read the same value for {} s{others}",
        block_text(block),
        spinning.len(),
        states.len(),
        limit.as_secs_f64(),
    );
    let all: Vec<Wait> = spinning.into_iter().chain(waiting).collect();
    with_wait_sites(RunError::launch(message), &all).with_help(
        "a thread that spins waits for another to change the value: make sure one does (threads of other blocks may not run while it spins)",
    )
}

/// What a wait returns in a broken block: a shuffle its own value.
fn broken(wait: Wait) -> Resume {
    let value = match wait {
        Wait::Shuffle { value, .. } => value,
        _ => 0,
    };
    Resume {
        value,
        lanes: 0,
        broken: true,
    }
}

/// Completes the warps whose every live lane waits at a warp operation:
/// their lanes exchange values and go on. Whether any did; an error when
/// the lanes of a warp wait at different kinds of operation.
fn complete_warps(states: &mut [State], block: [u32; 3]) -> Result<bool, RunError> {
    let mut progressed = false;
    let n = states.len();
    for w in 0..n.div_ceil(32) {
        let lanes = &mut states[w * 32..((w + 1) * 32).min(n)];
        let ops: Vec<(usize, Wait)> = lanes
            .iter()
            .enumerate()
            .filter_map(|(l, s)| match s {
                State::Waiting(wait) if wait.warp_op().is_some() => Some((l, *wait)),
                _ => None,
            })
            .collect();
        let live = lanes.iter().filter(|s| **s != State::Done).count();
        if ops.is_empty() || ops.len() != live {
            continue;
        }
        if let Some((_, other)) = ops.iter().find(|(_, op)| op.warp_op() != ops[0].1.warp_op()) {
            let message = format!(
                "warp divergence in block {}: lanes of warp {w} called {} and {} at the same time",
                block_text(block),
                ops[0].1.warp_op().unwrap_or_default(),
                other.warp_op().unwrap_or_default(),
            );
            let waits: Vec<Wait> = ops.iter().map(|(_, op)| *op).collect();
            return Err(with_wait_sites(RunError::launch(message), &waits));
        }
        let taking_part = ops.iter().fold(0u32, |m, (l, _)| m | 1 << l);
        let ballot = ops.iter().fold(0u32, |m, (l, op)| match op {
            Wait::Vote { pred: true, .. } => m | 1 << l,
            _ => m,
        });
        let value_of = |j: u32| {
            ops.iter().find(|(l, _)| *l as u32 == j).and_then(|(_, op)| match op {
                Wait::Shuffle { value, .. } => Some(*value),
                _ => None,
            })
        };
        for &(l, op) in &ops {
            let value = match op {
                Wait::Shuffle { value, src, .. } => src.and_then(value_of).unwrap_or(value),
                _ => ballot,
            };
            lanes[l] = State::Ready(Resume {
                value,
                lanes: taking_part,
                broken: false,
            });
        }
        progressed = true;
    }
    Ok(progressed)
}

/// Goes on from a point where every thread waits or is done and no warp
/// can complete: releases a barrier every unfinished thread waits at; an
/// error when none is.
fn resolve(states: &mut [State], block: [u32; 3]) -> Result<(), RunError> {
    let at_barrier = states
        .iter()
        .filter(|s| matches!(s, State::Waiting(Wait::Barrier { .. })))
        .count();
    let done = states.iter().filter(|s| **s == State::Done).count();
    let at_warp = states.len() - at_barrier - done;
    if at_warp == 0 && done == 0 {
        for s in states.iter_mut() {
            *s = State::Ready(Resume::default());
        }
        return Ok(());
    }
    let waits = waits(states);
    if at_warp == 0 {
        let message = format!(
            "barrier divergence in block {}: {done} of its {} threads finished the kernel while the others wait at a barrier",
            block_text(block),
            states.len(),
        );
        return Err(with_wait_sites(RunError::launch(message), &waits)
            .with_help("every thread of a block must reach each barrier: move it out of the branch or loop that some threads leave"));
    }
    let (count, what) = if at_barrier > 0 {
        (
            at_barrier,
            if at_barrier == 1 {
                "waits at a block barrier"
            } else {
                "wait at a block barrier"
            },
        )
    } else {
        (done, "finished the kernel")
    };
    let warp_verb = if at_warp == 1 { "waits" } else { "wait" };
    let message = format!(
        "deadlock in block {}: of its {} threads, {count} {what} and {at_warp} {warp_verb} at a warp shuffle or vote, so none can go on",
        block_text(block),
        states.len(),
    );
    Err(with_wait_sites(RunError::launch(message), &waits)
        .with_help("a warp shuffle or vote completes when every lane of the warp that has not finished calls it: call it from all of them"))
}

/// The sites the threads of a stuck block wait at, each once with the
/// number of threads there (in thread order; at most four).
fn with_wait_sites(mut error: RunError, waits: &[Wait]) -> RunError {
    let mut sites: Vec<(Wait, usize)> = Vec::new();
    for wait in waits {
        match sites
            .iter_mut()
            .find(|(w, _)| w.site() == wait.site() && w.what() == wait.what())
        {
            Some((_, n)) => *n += 1,
            None => sites.push((*wait, 1)),
        }
    }
    for (wait, n) in sites.into_iter().take(4) {
        let label = match n {
            1 => format!("1 thread waits at this {}", wait.what()),
            n => format!("{n} threads wait at this {}", wait.what()),
        };
        // SAFETY: sites point into the kernel's code, which outlives the
        // launch (the runtime ABI's contract).
        error = unsafe { at_site(error, wait.site(), &label) };
    }
    error
}

pub(crate) fn block_text(b: [u32; 3]) -> String {
    format!("({}, {}, {})", b[0], b[1], b[2])
}
