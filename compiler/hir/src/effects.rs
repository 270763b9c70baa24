//! The effect lattice: sets over {random, io, memory, collective}.

use std::fmt;

use tessera_base::FileSpan;
use tessera_diagnostics::{Code, Diagnostic};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Effect {
    Random,
    Io,
    Memory,
    Collective,
}

pub const ALL_EFFECTS: [Effect; 4] = [Effect::Random, Effect::Io, Effect::Memory, Effect::Collective];

impl Effect {
    pub fn name(self) -> &'static str {
        match self {
            Effect::Random => "random",
            Effect::Io => "io",
            Effect::Memory => "memory",
            Effect::Collective => "collective",
        }
    }

    pub fn from_name(name: &str) -> Option<Effect> {
        ALL_EFFECTS.into_iter().find(|e| e.name() == name)
    }

    /// The effect `name` is a near miss of (`ioo`, `IO`), if any.
    pub fn closest(name: &str) -> Option<Effect> {
        crate::names::did_you_mean(name, ALL_EFFECTS.map(Effect::name)).and_then(Effect::from_name)
    }

    /// E0402 for `name`, which is no effect, reported at `at`, with the
    /// effect it is a near miss of as the help.
    pub fn unknown(name: &str, at: FileSpan) -> Diagnostic {
        let diag = Diagnostic::error(Code::E0402, format!("unknown effect `{name}`"))
            .with_primary(at, "not an effect")
            .with_note("the effects are `random`, `io`, `memory` and `collective`");
        match Effect::closest(name) {
            Some(e) => diag.with_help(format!("did you mean `{}`?", e.name())),
            None => diag,
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of effects; the empty set means pure. Join is union.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EffectSet(u8);

impl EffectSet {
    pub const PURE: EffectSet = EffectSet(0);

    pub const fn of(effects: &[Effect]) -> EffectSet {
        let mut bits = 0;
        let mut i = 0;
        while i < effects.len() {
            bits |= 1 << effects[i] as u8;
            i += 1;
        }
        EffectSet(bits)
    }

    pub fn union(self, other: EffectSet) -> EffectSet {
        EffectSet(self.0 | other.0)
    }

    pub fn without(self, effect: Effect) -> EffectSet {
        EffectSet(self.0 & !effect.bit())
    }

    pub fn contains(self, effect: Effect) -> bool {
        self.0 & effect.bit() != 0
    }

    pub fn is_pure(self) -> bool {
        self.0 == 0
    }

    /// Effects in `self` that `other` lacks.
    pub fn minus(self, other: EffectSet) -> EffectSet {
        EffectSet(self.0 & !other.0)
    }

    pub fn iter(self) -> impl Iterator<Item = Effect> {
        ALL_EFFECTS.into_iter().filter(move |e| self.contains(*e))
    }

    pub fn insert(&mut self, effect: Effect) {
        self.0 |= effect.bit();
    }
}

impl fmt::Display for EffectSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(Effect::name).collect();
        if names.is_empty() {
            f.write_str("pure")
        } else {
            f.write_str(&names.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_operations() {
        let a = EffectSet::of(&[Effect::Random, Effect::Io]);
        let b = EffectSet::of(&[Effect::Io]);
        assert_eq!(a.minus(b), EffectSet::of(&[Effect::Random]));
        assert_eq!(a.union(b), a);
        assert_eq!(a.without(Effect::Io), EffectSet::of(&[Effect::Random]));
        assert_eq!(a.to_string(), "random, io");
        assert_eq!(EffectSet::PURE.to_string(), "pure");
    }
}
