//! The synchronization of one block's threads when each runs on its own OS
//! thread: the block barrier, the end of the block, and the warp exchange
//! behind shuffles and votes.
//!
//! All gates of a block share one mutex, so the block knows at every moment
//! how many of its threads are blocked. When all of them are — some at a
//! barrier, some at a warp operation, some finished — nothing can ever
//! release them: that is a deadlock, reported at once instead of hanging.
//! A barrier that some threads reach while others finish the kernel is
//! reported the same way (barrier divergence). After either, the block is
//! *broken*: every wait returns at once so the kernel's threads run to their
//! end, and the launch returns the error.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::buffer::HostBuffer;

/// Bytes of shared memory are set to this before each block, so a kernel
/// that reads shared memory it did not write sees garbage, not zeros.
pub const SHARED_POISON: u8 = 0xFF;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GateKind {
    Barrier,
    End,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WarpOp {
    Shuffle,
    Vote,
}

struct BlockGate {
    arrived: usize,
    generation: u64,
    kind: GateKind,
}

struct WarpGate {
    /// Lanes of this warp that exist in the block.
    lanes: u32,
    /// Lanes that finished the kernel in this block.
    exited: u32,
    /// Lanes waiting in the current operation.
    arrived: u32,
    generation: u64,
    op: WarpOp,
    /// The lanes that took part in the last operation of each bank.
    done: [u32; 2],
}

struct SyncState {
    broken: Option<String>,
    /// Threads blocked in any gate.
    waiting: usize,
    /// Set when the launch stops: the threads leave after this block.
    stop: bool,
    gate: BlockGate,
    warps: Vec<WarpGate>,
}

/// Whether a group goes on to its next block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    Continue,
    Stop,
}

/// One block's synchronization state, reused for each block a group runs.
pub(crate) struct BlockSync {
    threads: usize,
    state: Mutex<SyncState>,
    block_cv: Condvar,
    warp_cv: Vec<Condvar>,
    /// Two banks of 32 exchange slots per warp: an operation writes the bank
    /// of its generation's parity, so a lane that runs ahead into the next
    /// operation never overwrites a value another lane has yet to read.
    slots: Vec<[[AtomicU32; 32]; 2]>,
    shared: Mutex<HostBuffer>,
}

fn lane_mask(count: usize) -> u32 {
    if count >= 32 {
        u32::MAX
    } else {
        (1u32 << count) - 1
    }
}

impl BlockSync {
    pub(crate) fn new(threads: usize, shared: HostBuffer) -> BlockSync {
        let warps = threads.div_ceil(32);
        let mut shared = shared;
        shared.bytes_mut().fill(SHARED_POISON);
        BlockSync {
            threads,
            state: Mutex::new(SyncState {
                broken: None,
                waiting: 0,
                stop: false,
                gate: BlockGate {
                    arrived: 0,
                    generation: 0,
                    kind: GateKind::Barrier,
                },
                warps: (0..warps)
                    .map(|w| WarpGate {
                        lanes: lane_mask(threads - w * 32),
                        exited: 0,
                        arrived: 0,
                        generation: 0,
                        op: WarpOp::Shuffle,
                        done: [0; 2],
                    })
                    .collect(),
            }),
            block_cv: Condvar::new(),
            warp_cv: (0..warps).map(|_| Condvar::new()).collect(),
            slots: (0..warps)
                .map(|_| std::array::from_fn(|_| std::array::from_fn(|_| AtomicU32::new(0))))
                .collect(),
            shared: Mutex::new(shared),
        }
    }

    fn lock(&self) -> MutexGuard<'_, SyncState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The address of the shared memory (stable: the buffer never grows).
    pub(crate) fn shared_ptr(&self) -> *mut u8 {
        self.shared.lock().unwrap_or_else(|e| e.into_inner()).as_mut_ptr()
    }

    /// Breaks the block with `message` and wakes every waiting thread.
    pub(crate) fn abort(&self, message: String) {
        let mut s = self.lock();
        self.break_with(&mut s, message);
    }

    /// The first error that broke the block.
    pub(crate) fn error(&self) -> Option<String> {
        self.lock().broken.clone()
    }

    fn break_with(&self, s: &mut SyncState, message: String) {
        if s.broken.is_none() {
            s.broken = Some(message);
        }
        s.stop = true;
        self.block_cv.notify_all();
        for cv in &self.warp_cv {
            cv.notify_all();
        }
    }

    fn deadlock_message(&self, s: &SyncState, block: [u32; 3]) -> String {
        let at_warp: u32 = s.warps.iter().map(|w| w.arrived.count_ones()).sum();
        let at_gate = match s.gate.kind {
            GateKind::Barrier => "wait at a block barrier",
            GateKind::End => "finished the kernel",
        };
        format!(
            "deadlock in block {}: of its {} threads, {} {at_gate} and {at_warp} wait at a warp shuffle or vote, so none can go on",
            block_text(block),
            self.threads,
            s.gate.arrived,
        )
    }

    /// A thread arrives at the block gate (a barrier, or the end of its
    /// kernel) and waits for the others. Returns false when the block broke.
    /// At the end of a block, the last thread to arrive poisons the shared
    /// memory and asks `stop_launch` whether the group stops.
    fn arrive(&self, kind: GateKind, tid: usize, block: [u32; 3], stop_launch: Option<&dyn Fn() -> bool>) -> bool {
        let mut s = self.lock();
        if s.broken.is_some() {
            return false;
        }
        if s.gate.arrived > 0 && s.gate.kind != kind {
            let message = format!(
                "barrier divergence in block {}: some of its threads finished the kernel while others wait at a barrier",
                block_text(block)
            );
            self.break_with(&mut s, message);
            return false;
        }
        s.gate.kind = kind;
        s.gate.arrived += 1;
        s.waiting += 1;
        if kind == GateKind::End {
            let w = tid / 32;
            let gate = &mut s.warps[w];
            gate.exited |= 1 << (tid % 32);
            if gate.arrived != 0 && gate.arrived == gate.lanes & !gate.exited {
                self.complete_warp(&mut s, w);
            }
        }
        if s.gate.arrived == self.threads {
            s.waiting -= s.gate.arrived;
            s.gate.arrived = 0;
            s.gate.generation += 1;
            if kind == GateKind::End {
                for w in &mut s.warps {
                    w.exited = 0;
                }
                self.shared
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .bytes_mut()
                    .fill(SHARED_POISON);
                if stop_launch.is_some_and(|stop| stop()) {
                    s.stop = true;
                }
            }
            self.block_cv.notify_all();
            return true;
        }
        if s.waiting == self.threads {
            let message = self.deadlock_message(&s, block);
            self.break_with(&mut s, message);
            return false;
        }
        let generation = s.gate.generation;
        while s.gate.generation == generation && s.broken.is_none() {
            s = self.block_cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.gate.generation != generation
    }

    /// `__syncthreads()`.
    pub(crate) fn barrier(&self, tid: usize, block: [u32; 3]) {
        self.arrive(GateKind::Barrier, tid, block, None);
    }

    /// The thread finished the kernel for this block; waits for the others.
    /// The decision to stop is taken once, by the last thread to arrive, so
    /// the threads of a group always go on together.
    pub(crate) fn end_block(&self, tid: usize, block: [u32; 3], stop_launch: &dyn Fn() -> bool) -> Next {
        let released = self.arrive(GateKind::End, tid, block, Some(stop_launch));
        let s = self.lock();
        if !released || s.broken.is_some() || s.stop {
            Next::Stop
        } else {
            Next::Continue
        }
    }

    fn complete_warp(&self, s: &mut SyncState, w: usize) {
        let gate = &mut s.warps[w];
        let bank = (gate.generation & 1) as usize;
        let arrived = gate.arrived;
        gate.done[bank] = arrived;
        gate.arrived = 0;
        gate.generation += 1;
        s.waiting -= arrived.count_ones() as usize;
        self.warp_cv[w].notify_all();
    }

    /// Publishes `value` for this lane and waits for the warp's other
    /// lanes. Returns the bank to read and the lanes that took part, or None
    /// when the block broke.
    pub(crate) fn exchange(&self, tid: usize, block: [u32; 3], op: WarpOp, value: u32) -> Option<(usize, u32)> {
        let (w, lane) = (tid / 32, tid % 32);
        let mut s = self.lock();
        if s.broken.is_some() {
            return None;
        }
        let gate = &mut s.warps[w];
        if gate.arrived != 0 && gate.op != op {
            let message = format!(
                "warp divergence in block {}: lanes of warp {w} called a shuffle and a vote at the same time",
                block_text(block)
            );
            self.break_with(&mut s, message);
            return None;
        }
        gate.op = op;
        let bank = (gate.generation & 1) as usize;
        self.slots[w][bank][lane].store(value, Ordering::Relaxed);
        gate.arrived |= 1 << lane;
        let complete = gate.arrived == gate.lanes & !gate.exited;
        let generation = gate.generation;
        s.waiting += 1;
        if complete {
            self.complete_warp(&mut s, w);
            return Some((bank, s.warps[w].done[bank]));
        }
        if s.waiting == self.threads {
            let message = self.deadlock_message(&s, block);
            self.break_with(&mut s, message);
            return None;
        }
        while s.warps[w].generation == generation && s.broken.is_none() {
            s = self.warp_cv[w].wait(s).unwrap_or_else(|e| e.into_inner());
        }
        (s.warps[w].generation != generation).then(|| (bank, s.warps[w].done[bank]))
    }

    /// The value lane `src` of warp `w` published in `bank`.
    pub(crate) fn slot(&self, w: usize, bank: usize, src: usize) -> u32 {
        self.slots[w][bank][src].load(Ordering::Relaxed)
    }
}

pub(crate) fn block_text(b: [u32; 3]) -> String {
    format!("({}, {}, {})", b[0], b[1], b[2])
}
