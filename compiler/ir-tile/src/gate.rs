//! Feature gates of the Target IR dialects: an op of a target family in a
//! module for another family, or an op a target of the family lacks.

use tessera_ir::{Dim, ScalarType, Type};

use crate::check::Check;
use crate::shape;
use crate::target::{Family, Target, TARGET_ATTR};

/// Checks that the module's target belongs to the op's family and gives it.
pub(crate) fn family(c: &mut Check) -> Option<Target> {
    let family = Family::of_dialect(c.m.op(c.op).name.dialect())?;
    let Some(target) = Target::of_module(c.m) else {
        if !c.m.attrs.contains_key(TARGET_ATTR) {
            c.fail(format!(
                "`{}` needs the module attribute `target` ({})",
                c.name,
                family.targets()
            ));
        }
        return None;
    };
    if target.family() != family {
        let what = match family {
            Family::Nvptx => "an NVIDIA GPU op",
            Family::Amdgpu => "an AMD GPU op",
            Family::Cpu => "a CPU op",
        };
        c.push(
            tessera_ir::VerifyError::at_op(
                c.m,
                c.op,
                format!("`{}` is {what}, but the module targets {}", c.name, target.name()),
            )
            .with_label(format!("`{}` ops need {}", family.dialect(), family.targets())),
        );
        return None;
    }
    Some(target)
}

/// Checks that `target` is one of `allowed`, for the op (or for what
/// `feature` names).
pub(crate) fn needs(c: &mut Check, target: Target, allowed: &[Target], feature: Option<&str>) -> bool {
    if allowed.contains(&target) {
        return true;
    }
    let list: Vec<&str> = allowed.iter().map(|t| t.name()).collect();
    let what = feature.map_or_else(|| format!("`{}`", c.name), str::to_string);
    c.fail(format!(
        "{what} needs {}, but the module targets {}",
        list.join(" or "),
        target.name()
    ));
    false
}

/// The `instr = [m, n, k]` attribute of a matrix instruction.
pub(crate) fn instr(c: &mut Check) -> Option<[i64; 3]> {
    let ints = c.attr("instr").and_then(tessera_ir::Attr::as_ints);
    match ints.as_deref() {
        Some(&[m, n, k]) if m > 0 && n > 0 && k > 0 => Some([m, n, k]),
        _ => {
            c.fail(format!(
                "`instr` of `{}` must be three positive integers [m, n, k]",
                c.name
            ));
            None
        }
    }
}

/// The tile `(M, N, K)` is a whole number of `instr` shapes.
pub(crate) fn tiles_evenly(c: &mut Check, dims: &(Dim, Dim, Dim), instr: [i64; 3]) -> bool {
    let (m, n, k) = dims;
    if shape::divisible(&[m, n, k], &instr) {
        return true;
    }
    c.fail(format!(
        "`{}` computes a {m}x{n}x{k} product in {}x{}x{} instructions: each dim must be a constant multiple of the instruction's",
        c.name, instr[0], instr[1], instr[2]
    ));
    false
}

pub(crate) fn is_16bit_float(s: ScalarType) -> bool {
    matches!(s, ScalarType::F16 | ScalarType::BF16)
}

/// The element types of a product's inputs (equal) and accumulator.
pub(crate) fn product_types(c: &mut Check) -> Option<(ScalarType, ScalarType)> {
    let (a, b, acc) = (c.operand_type(0), c.operand_type(1), c.operand_type(2));
    let (Some(ea), Some(eb), Some(eacc)) = (a.elem(), b.elem(), acc.elem()) else {
        return None;
    };
    if !ea.multiplies_with(eb) {
        c.fail(format!(
            "the operands of `{}` have different element types: `{}` and `{}`",
            c.name,
            ea.name(),
            eb.name()
        ));
        return None;
    }
    Some((ea, eacc))
}

/// The operand is a register tile.
pub(crate) fn in_registers(c: &mut Check, i: usize, role: &str, hint: &str) -> bool {
    let ty = c.operand_type(i);
    if matches!(ty, Type::Tensor { .. }) {
        return true;
    }
    c.fail(format!(
        "the {role} of `{}` must be in registers (a tile), not `{ty}`; {hint}",
        c.name
    ));
    false
}
