//! Passes over a module, found by name in a [`PassRegistry`] and run in
//! order by a [`PassManager`], which can verify after each one and time
//! them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tessera_diagnostics::Diagnostic;

use crate::{FileMap, Module, Registry, VerifyError};

/// A transformation of a module.
pub trait Pass {
    /// The name `tessera opt --pass NAME` knows it by.
    fn name(&self) -> &'static str;

    /// Transforms `m`. A pass that cannot do its job reports why; it must
    /// leave a module that passes the structural verifier either way.
    fn run(&mut self, m: &mut Module, ctx: &PassContext) -> Result<(), Vec<Diagnostic>>;
}

/// What a pass may consult: the dialects (purity, op definitions) and the
/// files that locations point into (to build diagnostics).
pub struct PassContext<'a> {
    pub registry: &'a Registry,
    pub files: &'a FileMap,
}

/// A registered pass: its name, one line of description and how to make one.
#[derive(Clone, Copy)]
pub struct PassInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub create: fn() -> Box<dyn Pass>,
}

/// The passes known by name. [`PassRegistry::new`] holds the generic ones
/// (`dce`, `cse`); dialect crates add theirs with [`PassRegistry::register`].
pub struct PassRegistry {
    passes: BTreeMap<&'static str, PassInfo>,
}

impl Default for PassRegistry {
    fn default() -> PassRegistry {
        PassRegistry::new()
    }
}

impl PassRegistry {
    pub fn new() -> PassRegistry {
        let mut r = PassRegistry {
            passes: BTreeMap::new(),
        };
        r.register(PassInfo {
            name: "dce",
            description: "erase pure ops whose results are unused",
            create: || Box::new(crate::passes::Dce),
        });
        r.register(PassInfo {
            name: "cse",
            description: "merge identical pure ops (same name, operands, attributes and result types)",
            create: || Box::new(crate::passes::Cse),
        });
        r
    }

    /// Adds a pass. Panics when the name is taken: a programming error.
    pub fn register(&mut self, info: PassInfo) {
        let previous = self.passes.insert(info.name, info);
        assert!(previous.is_none(), "pass `{}` is registered twice", info.name);
    }

    /// A fresh instance of the pass named `name`.
    pub fn create(&self, name: &str) -> Option<Box<dyn Pass>> {
        self.passes.get(name).map(|info| (info.create)())
    }

    /// Every registered pass, by name.
    pub fn passes(&self) -> impl Iterator<Item = &PassInfo> {
        self.passes.values()
    }
}

/// How long one pass took (and its verification, with `verify_each`).
#[derive(Clone, Debug)]
pub struct PassTiming {
    pub pass: &'static str,
    pub run: Duration,
    pub verify: Duration,
}

/// Why a pipeline stopped.
#[derive(Debug)]
pub enum PassFailure {
    /// The pass reported that it could not do its job.
    Failed {
        pass: &'static str,
        diagnostics: Vec<Diagnostic>,
    },
    /// The IR no longer verifies after the pass: a bug in the pass.
    BrokeIr {
        pass: &'static str,
        errors: Vec<VerifyError>,
    },
}

/// A pipeline of passes.
#[derive(Default)]
pub struct PassManager {
    passes: Vec<Box<dyn Pass>>,
    /// Run the full verifier after each pass and stop at the first pass
    /// that leaves invalid IR. Otherwise only the structural verifier runs,
    /// once, after the last pass.
    pub verify_each: bool,
    timings: Vec<PassTiming>,
}

impl PassManager {
    pub fn new() -> PassManager {
        PassManager::default()
    }

    pub fn add(&mut self, pass: Box<dyn Pass>) {
        self.passes.push(pass);
    }

    /// Runs the passes in order on `m`.
    pub fn run(&mut self, m: &mut Module, ctx: &PassContext) -> Result<(), PassFailure> {
        self.timings.clear();
        let last = self.passes.len().saturating_sub(1);
        for (i, pass) in self.passes.iter_mut().enumerate() {
            let name = pass.name();
            let start = Instant::now();
            let outcome = pass.run(m, ctx);
            let run = start.elapsed();
            let start = Instant::now();
            let errors = if self.verify_each {
                ctx.registry.verify(m)
            } else if i == last {
                crate::verify_structure(m)
            } else {
                Vec::new()
            };
            self.timings.push(PassTiming {
                pass: name,
                run,
                verify: start.elapsed(),
            });
            outcome.map_err(|diagnostics| PassFailure::Failed {
                pass: name,
                diagnostics,
            })?;
            if !errors.is_empty() {
                return Err(PassFailure::BrokeIr { pass: name, errors });
            }
        }
        Ok(())
    }

    /// The timings of the last [`PassManager::run`], in pipeline order.
    pub fn timings(&self) -> &[PassTiming] {
        &self.timings
    }

    /// The timings as a table, for `--time-passes`.
    pub fn timing_report(&self) -> String {
        let mut out = String::from("pass timing (run + verify):\n");
        let mut total = Duration::ZERO;
        for t in &self.timings {
            total += t.run + t.verify;
            out.push_str(&format!(
                "  {:>10.3} ms  {:>10.3} ms  {}\n",
                t.run.as_secs_f64() * 1e3,
                t.verify.as_secs_f64() * 1e3,
                t.pass
            ));
        }
        out.push_str(&format!("  {:>10.3} ms  total\n", total.as_secs_f64() * 1e3));
        out
    }
}
