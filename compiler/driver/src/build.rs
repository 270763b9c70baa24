//! The build pipeline through the IR layers: the checked program is
//! lowered (operator functions to Graph IR, kernels to Tile IR), then
//! `fuse` makes Schedule IR, `lower-schedule-to-tile` Tile IR (whose
//! kernels `estimate-cost` gives their `cost`, for the profiler) and
//! `lower-tile-to-target` the Target IR of the database's target. Each
//! layer is verified as it is made, and kept as text for `--emit`.

use tessera_base::FileId;
use tessera_diagnostics::{Code, Diagnostic};
use tessera_ir::{print_module, FileMap, Module, PassContext, PassFailure, PassManager, PassRegistry, Registry};

use crate::Database;

/// The IR layers, in pipeline order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    Graph,
    Schedule,
    Tile,
    Target,
}

impl Layer {
    pub const ALL: [Layer; 4] = [Layer::Graph, Layer::Schedule, Layer::Tile, Layer::Target];

    /// The `--emit` name: `graph-ir`, `schedule-ir`, `tile-ir`, `target-ir`.
    pub fn emit_name(self) -> &'static str {
        match self {
            Layer::Graph => "graph-ir",
            Layer::Schedule => "schedule-ir",
            Layer::Tile => "tile-ir",
            Layer::Target => "target-ir",
        }
    }

    /// The passes that make this layer from the one before.
    fn passes(self) -> &'static [&'static str] {
        match self {
            Layer::Graph => &[],
            Layer::Schedule => &["fuse"],
            Layer::Tile => &["lower-schedule-to-tile", "estimate-cost"],
            Layer::Target => &["lower-tile-to-target"],
        }
    }
}

/// Each layer's module as printed text, and the last (Target IR) module
/// itself for code generation.
#[derive(Clone, Debug, Default)]
pub struct Layers {
    pub texts: Vec<(Layer, String)>,
    pub target: Module,
    /// Maps the locations in the modules back to the `.tsr` file.
    pub files: FileMap,
}

impl Layers {
    pub fn text(&self, layer: Layer) -> Option<&str> {
        self.texts.iter().find(|(l, _)| *l == layer).map(|(_, t)| t.as_str())
    }
}

/// The dialects the compiler knows. Dialect crates register here, one line
/// each: `tessera_ir_graph::register_dialects(&mut registry);`.
pub fn registry() -> Registry {
    let mut registry = Registry::new();
    tessera_ir_tile::register_dialects(&mut registry);
    tessera_ir_graph::register_dialects(&mut registry);
    registry
}

/// The passes the build pipeline and `tessera opt --pass NAME` can run,
/// registered one line per dialect crate.
pub fn passes() -> PassRegistry {
    let mut passes = PassRegistry::new();
    tessera_ir_tile::register_passes(&mut passes);
    tessera_ir_graph::register_passes(&mut passes);
    passes
}

/// Lowers a file that checked clean through every layer. Diagnostics are
/// E0903 for what cannot be lowered, E0901 for a layer that fails its
/// verifier (a compiler bug, reported at the `.tsr` source of the op).
pub fn lower_layers(
    db: &Database,
    file: FileId,
    registry: &Registry,
    passes: &PassRegistry,
) -> Result<Layers, Vec<Diagnostic>> {
    lower_layers_tuned(db, file, registry, passes, &crate::tune::Tuning::new())
}

/// [`lower_layers`], with the `@autotune` functions named in `tuning`
/// built with their configuration (`autotune.config`, which `fuse`
/// applies).
pub fn lower_layers_tuned(
    db: &Database,
    file: FileId,
    registry: &Registry,
    passes: &PassRegistry,
    tuning: &crate::tune::Tuning,
) -> Result<Layers, Vec<Diagnostic>> {
    let source = db.source(file);
    let mut module = tessera_lower::lower_file(db, source)?;
    crate::tune::apply(&mut module, tuning);
    let mut files = FileMap::new();
    for (path, id) in db.paths() {
        files.insert(path, id);
    }
    let mut layers = Layers::default();
    for layer in Layer::ALL {
        for name in layer.passes() {
            run_pass(&mut module, name, registry, passes, &files)?;
        }
        verify(&module, registry, &files)?;
        layers.texts.push((layer, print_module(&module)));
    }
    layers.target = module;
    layers.files = files;
    Ok(layers)
}

/// Generates machine code for the Target-IR module of `layers`; what the
/// code generator cannot handle is E0904 at the op's `.tsr` source.
pub fn generate(
    layers: &Layers,
    options: &tessera_codegen::Options,
) -> Result<tessera_codegen::Compiled, Vec<Diagnostic>> {
    tessera_codegen::compile(&layers.target, options).map_err(|e| vec![codegen_diagnostic(&e, &layers.files)])
}

/// A code-generation error as a diagnostic (E0904).
pub fn codegen_diagnostic(e: &tessera_codegen::CodegenError, files: &FileMap) -> Diagnostic {
    files.diagnostic(Code::E0904, &e.message, "cannot be generated", &e.loc, None)
}

fn verify(module: &Module, registry: &Registry, files: &FileMap) -> Result<(), Vec<Diagnostic>> {
    let errors = registry.verify(module);
    if errors.is_empty() {
        return Ok(());
    }
    Err(errors.iter().map(|e| e.to_diagnostic(files)).collect())
}

fn run_pass(
    module: &mut Module,
    name: &str,
    registry: &Registry,
    passes: &PassRegistry,
    files: &FileMap,
) -> Result<(), Vec<Diagnostic>> {
    let Some(pass) = passes.create(name) else {
        return Err(vec![Diagnostic::error(
            Code::E0903,
            format!("the pass `{name}` is not registered"),
        )
        .with_note("the build pipeline needs it to make the next IR layer")]);
    };
    let mut manager = PassManager::new();
    manager.add(pass);
    let ctx = PassContext { registry, files };
    manager.run(module, &ctx).map_err(|failure| match failure {
        PassFailure::Failed { diagnostics, .. } => diagnostics,
        PassFailure::BrokeIr { errors, .. } => errors.iter().map(|e| e.to_diagnostic(files)).collect(),
    })
}

/// Every diagnostic a build of one file reports before the IR passes run:
/// the checker's, then, when it found no error, the lowering's (E0903).
pub fn check_and_lower(sources: &crate::Sources, file: FileId) -> Vec<Diagnostic> {
    let mut db = Database::default();
    db.load(sources);
    let diags = db.check_to(file, crate::Stage::Full);
    if diags.iter().any(Diagnostic::is_error) {
        return diags;
    }
    match tessera_lower::lower_file(&db, db.source(file)) {
        Ok(_) => diags,
        Err(errors) => errors,
    }
}
