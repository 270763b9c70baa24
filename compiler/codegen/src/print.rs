//! `tile.print`: the lines a kernel prints. A kernel that prints gets a
//! hidden pointer parameter, after the scratch (on the CPU, the argument
//! slot after it), to the launch's print buffer; each print appends a
//! record of its values there and the runtime formats the records after
//! the launch, in block and thread order (`spec/runtime.md`, "Kernel
//! output"). The GPU never formats: every target prints the same text.

use serde::Serialize;
use tessera_ir::{Attr, OpId, ScalarType};

use crate::emit::FnEmitter;
use crate::CodegenError;

/// Bytes of a launch's print buffer (CUDA's default `printf` FIFO), its
/// header included: about 25,000 lines of two values.
pub const BUFFER_BYTES: usize = 1 << 20;

/// Words (`u64`) before the first record, zero before the launch: the
/// words the records claim (which may pass the capacity), the records
/// dropped for want of room, and two words of padding.
pub const HEADER_WORDS: usize = 4;

/// The words of records a print buffer holds.
pub const CAPACITY_WORDS: usize = BUFFER_BYTES / 8 - HEADER_WORDS;

/// The words of a record before its values: one more than the print's
/// index in the kernel's [`KernelInfo::prints`](crate::KernelInfo::prints)
/// (a zero word is where no record was written), the block's linear index
/// and the thread's.
pub const RECORD_HEADER_WORDS: usize = 3;

/// The print buffer's value in a kernel's LLVM IR.
pub(crate) const BUFFER: &str = "%printbuf";

/// A print of a kernel, as the manifest lists it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct PrintSite {
    /// The line: `{}` where each value goes, `{{` and `}}` for braces.
    pub text: String,
    /// The IR scalar type of each value. A record holds each in a word:
    /// integers sign- (unsigned: zero-) extended, `i1` as 0 or 1, floats
    /// as the bits of the `f64` they convert to exactly.
    pub values: Vec<String>,
}

impl PrintSite {
    /// The words of one record of this print.
    pub fn record_words(&self) -> usize {
        RECORD_HEADER_WORDS + self.values.len()
    }
}

/// The word a record keeps `s`'s value in.
fn word_type(s: ScalarType) -> ScalarType {
    if s.is_float() {
        ScalarType::F64
    } else if s.is_unsigned() || s == ScalarType::I1 {
        ScalarType::U64
    } else {
        ScalarType::I64
    }
}

/// Claims a record in the print buffer with an atomic add on its first
/// word and writes it when it fits; a record that does not fit counts in
/// the second word instead.
pub(crate) fn emit(f: &mut FnEmitter, op: OpId) -> Result<(), CodegenError> {
    let m = f.m();
    let text = m
        .attr(op, "text")
        .and_then(Attr::as_str)
        .ok_or_else(|| f.err(op, "`tile.print` has no `text`"))?
        .to_string();
    let mut words = Vec::new();
    let mut values = Vec::new();
    for i in 0..m.operands(op).len() {
        let (s, v) = f.scalar(op, i)?;
        let w = word_type(s);
        let x = f.convert(&v, s, w);
        words.push(if w == ScalarType::F64 {
            f.val(format!("bitcast double {x} to i64"))
        } else {
            x
        });
        if i >= 2 {
            values.push(s.name().to_string());
        }
    }
    let site = f.print_site(PrintSite { text, values });
    let buf = BUFFER;
    let gp = f.info().global_ptr();
    let scope = f.device_scope();
    let n = words.len() + 1;
    let at = f.val(format!("atomicrmw add {gp} {buf}, i64 {n}{scope} monotonic"));
    let end = f.val(format!("add i64 {at}, {n}"));
    let fits = f.val(format!("icmp ule i64 {end}, {CAPACITY_WORDS}"));
    let (write, drop, done) = (f.label("print_write"), f.label("print_drop"), f.label("print_done"));
    f.cond_br(&fits, &write, &drop);
    f.start_block(&write);
    let first = f.val(format!("add i64 {at}, {HEADER_WORDS}"));
    let record = f.val(format!("getelementptr i64, {gp} {buf}, i64 {first}"));
    for (k, w) in std::iter::once((site + 1).to_string()).chain(words).enumerate() {
        let slot = f.val(format!("getelementptr i64, {gp} {record}, i64 {k}"));
        f.line(format!("store i64 {w}, {gp} {slot}"));
    }
    f.br(&done);
    f.start_block(&drop);
    let dropped = f.val(format!("getelementptr i64, {gp} {buf}, i64 1"));
    f.val(format!("atomicrmw add {gp} {dropped}, i64 1{scope} monotonic"));
    f.br(&done);
    f.start_block(&done);
    Ok(())
}
