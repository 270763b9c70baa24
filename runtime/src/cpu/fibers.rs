//! The threads of a block that synchronizes, run as fibers: each GPU thread
//! is a coroutine on a stack of its own, and one OS thread runs every
//! thread of a block, switching at each barrier, shuffle and vote (a few
//! nanoseconds a switch, where an OS thread per GPU thread cost a context
//! switch of the kernel's scheduler each time).
//!
//! A thread runs until it reaches a barrier, a warp operation or the end of
//! the kernel, and *suspends* there with what it waits for ([`Wait`]).
//! When every thread has suspended, the block resolves what it can: a warp
//! whose every live lane waits at a warp operation exchanges their values
//! and its lanes go on; otherwise a barrier that every unfinished thread
//! waits at, with none finished, releases them all. When nothing can be
//! resolved, the block is stuck: a barrier some threads finished the kernel
//! without reaching is *barrier divergence*, anything else a *deadlock*;
//! both are errors, never hangs. After an error the block is *broken*:
//! every wait returns at once, so the kernel's threads run to their end (a
//! fiber is never dropped while suspended in the kernel's frames, which
//! have no unwind information). The order the threads run in is fixed, so a
//! launch runs the same way every time.

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
    /// A shuffle: this lane's value, and the lane it reads (None: its own).
    Shuffle {
        value: u32,
        src: Option<u32>,
        site: *const TesseraCpuSite,
    },
    /// A vote with this lane's predicate.
    Vote {
        pred: bool,
        site: *const TesseraCpuSite,
    },
}

impl Wait {
    fn warp_op(self) -> Option<&'static str> {
        match self {
            Wait::Barrier { .. } => None,
            Wait::Shuffle { .. } => Some("a shuffle"),
            Wait::Vote { .. } => Some("a vote"),
        }
    }

    fn site(self) -> *const TesseraCpuSite {
        match self {
            Wait::Barrier { site } | Wait::Shuffle { site, .. } | Wait::Vote { site, .. } => site,
        }
    }

    /// What the thread waits at, for messages.
    fn what(self) -> &'static str {
        self.warp_op().map_or("barrier", |op| &op[2..])
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
            let (error, returned) = run_block(fibers, block_id);
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
fn run_block(mut fibers: Vec<Fiber>, block: [u32; 3]) -> (Option<RunError>, Vec<DefaultStack>) {
    let n = fibers.len();
    let mut states = vec![State::Ready(Resume::default()); n];
    let mut error: Option<RunError> = None;
    loop {
        for (t, fiber) in fibers.iter_mut().enumerate() {
            let State::Ready(input) = states[t] else { continue };
            states[t] = match fiber.resume(input) {
                CoroutineResult::Yield(wait) if error.is_some() => State::Ready(broken(wait)),
                CoroutineResult::Yield(wait) => State::Waiting(wait),
                CoroutineResult::Return(()) => State::Done,
            };
        }
        if states.iter().all(|s| *s == State::Done) {
            break;
        }
        if states.iter().any(|s| matches!(s, State::Ready(_))) {
            continue;
        }
        match resolve(&mut states, block) {
            Ok(()) => {}
            Err(e) => {
                error.get_or_insert(e);
                for s in &mut states {
                    if let State::Waiting(wait) = *s {
                        *s = State::Ready(broken(wait));
                    }
                }
            }
        }
    }
    let stacks = fibers.into_iter().map(Fiber::into_stack).collect();
    (error, stacks)
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

/// Goes on from a point where every thread waits or is done: completes the
/// warps whose every live lane waits at a warp operation, else releases a
/// barrier every unfinished thread waits at; an error when neither can be.
fn resolve(states: &mut [State], block: [u32; 3]) -> Result<(), RunError> {
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
        if ops.iter().any(|(_, op)| op.warp_op() != ops[0].1.warp_op()) {
            let message = format!(
                "warp divergence in block {}: lanes of warp {w} called a shuffle and a vote at the same time",
                block_text(block)
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
    if progressed {
        return Ok(());
    }
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
    let waits: Vec<Wait> = states
        .iter()
        .filter_map(|s| match s {
            State::Waiting(wait) => Some(*wait),
            _ => None,
        })
        .collect();
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
