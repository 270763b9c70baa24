//! `tile.rng`: counter-based random numbers. The Philox words and the
//! values made from them are the functions of `rng.ll`; each stream a
//! kernel draws from gets a hidden `i64` parameter holding its key, which
//! the runtime derives at launch (spec/runtime.md, Random numbers).

use serde::Serialize;
use tessera_ir::{Attr, OpId, ScalarType, Type};

use crate::emit::{float_lit, FnEmitter, Val};
use crate::CodegenError;

/// A stream a kernel draws from: what the runtime derives its key from,
/// with the mesh coordinates and the step of the launch.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct RngStream {
    /// The function id: the operator function that draws.
    pub function: String,
    pub stream: String,
    /// The user's seed (read as a `u64`, two's complement).
    pub seed: i64,
}

/// Uniform values of narrow floats: the top `bits` bits of the first word,
/// times 2^-bits, which the type holds exactly.
fn narrow_uniform_bits(s: ScalarType) -> Option<u32> {
    match s {
        ScalarType::F16 => Some(11),
        ScalarType::BF16 => Some(8),
        ScalarType::F8E4M3 => Some(4),
        ScalarType::F8E5M2 => Some(3),
        _ => None,
    }
}

/// The keep threshold of a dropout of probability `p` on the 24-bit
/// uniform integer `w0 >> 8`: an element is kept when that integer is at
/// least `ceil(p · 2^24)`, i.e. when its uniform `f32` value is `>= p`.
fn dropout_threshold(p: f64) -> u32 {
    (p * f64::from(1u32 << 24)).ceil() as u32
}

pub(crate) fn emit(f: &mut FnEmitter, op: OpId) -> Result<(), CodegenError> {
    let m = f.m();
    let Type::Scalar(s) = f.result_type(op)? else {
        return Err(f.err(
            op,
            "`tile.rng` of a tile is not generated yet: draw one scalar per element, with its index as the counter",
        ));
    };
    if m.operands(op).len() != 1 {
        return Err(f.err(
            op,
            "`tile.rng` is generated with exactly one counter, the index of the element drawn",
        ));
    }
    let (cs, counter) = f.scalar(op, 0)?;
    let index = f.convert(&counter, cs, ScalarType::I64);
    let text = |name: &str| m.attr(op, name).and_then(Attr::as_str).map(str::to_string);
    let stream = RngStream {
        function: text("function").unwrap_or_else(|| f.name.clone()),
        stream: text("stream").unwrap_or_default(),
        seed: m.attr(op, "seed").and_then(Attr::as_int).unwrap_or(0),
    };
    let key = f.rng_key(stream);
    let dist = text("dist").unwrap_or_default();
    let unsupported = |f: &FnEmitter| {
        Err(f.err(
            op,
            format!("`{dist}` random numbers of type `{}` are not generated", s.name()),
        ))
    };
    let value = match (dist.as_str(), s) {
        ("uniform", ScalarType::F32 | ScalarType::F64) | ("normal", ScalarType::F64) => {
            let t = crate::emit::llvm_ty(s);
            let suffix = if s == ScalarType::F32 { "f32" } else { "f64" };
            f.val(format!("call {t} @tsr_rng_{dist}_{suffix}(i64 {key}, i64 {index})"))
        }
        ("uniform", _) => {
            let Some(bits) = narrow_uniform_bits(s) else {
                return unsupported(f);
            };
            let word = f.val(format!("call i32 @tsr_rng_word(i64 {key}, i64 {index})"));
            let top = f.val(format!("lshr i32 {word}, {}", 32 - bits));
            let x = f.val(format!("uitofp i32 {top} to float"));
            let scale = float_lit(ScalarType::F32, (-f64::from(bits)).exp2());
            let v = f.val(format!("fmul float {x}, {scale}"));
            f.convert(&v, ScalarType::F32, s)
        }
        ("normal", _) if s.is_float() => {
            let v = f.val(format!("call float @tsr_rng_normal_f32(i64 {key}, i64 {index})"));
            f.convert(&v, ScalarType::F32, s)
        }
        ("dropout", _) if s.is_float() => {
            let Some(p) = m.attr(op, "p").and_then(Attr::as_float) else {
                return Err(f.err(op, "a dropout draw needs its probability `p`"));
            };
            let at = if s == ScalarType::F64 {
                ScalarType::F64
            } else {
                ScalarType::F32
            };
            let t = crate::emit::llvm_ty(at);
            let word = f.val(format!("call i32 @tsr_rng_word(i64 {key}, i64 {index})"));
            let top = f.val(format!("lshr i32 {word}, 8"));
            let keep = f.val(format!("icmp uge i32 {top}, {}", dropout_threshold(p)));
            let scale = float_lit(at, 1.0 / (1.0 - p));
            let v = f.val(format!("select i1 {keep}, {t} {scale}, {t} {}", float_lit(at, 0.0)));
            f.convert(&v, at, s)
        }
        _ => return unsupported(f),
    };
    f.set(op, Val::Scalar(s, value));
    Ok(())
}
