//! Runs Tessera programs: compiles a checked file for the device it runs
//! on, loads the result there and gives the host interpreter
//! (`tessera_runtime::host`) an [`Executor`](tessera_runtime::host::Executor)
//! that launches its kernels and operator functions.
//!
//! - [`build`]: check and lower a file through every IR layer for a target;
//! - [`image`]: generate machine code for a device (the CPU through the
//!   in-process JIT, CUDA as PTX, HIP as a linked code object);
//! - [`Loaded`]: the module on the device, and the executor;
//! - [`roles`] and [`test_functions`]: what each function of the program is;
//! - [`profile`]: the profiler's executor, the device's peaks and the
//!   trace, roofline CSV and plot of a profile.
//!
//! The command line (`tessera run`, `tessera test`, `tessera profile`) and
//! the example tests are built on these.

mod executor;
pub mod expr;
mod print;
pub mod profile;

use tessera_base::FileId;
use tessera_codegen::{CpuModule, Options as CodegenOptions};
use tessera_diagnostics::Diagnostic;
use tessera_driver::tune::Tuning;
use tessera_driver::{Database, Layers, Sources};
use tessera_hir::body::CallTarget;
use tessera_hir::db::{signature, FnId};
use tessera_hir::{Options, Target};
use tessera_lower::FnRole;
use tessera_runtime::host::Role;
use tessera_runtime::{Device, DeviceKind};
use tessera_syntax::ast::{FnDef, Module, StmtKind};

pub use executor::{host_dtype, Image, Loaded};

/// The target whose code a device runs: the CPU its own; a CUDA device
/// PTX for sm_90a when it is a Hopper GPU (compute capability 9.0), else
/// for sm_80 (which every GPU from Ampere on runs, through the driver's
/// JIT); HIP devices gfx942 code objects.
pub fn target_for(device: &Device) -> Target {
    match device {
        Device::Cpu(_) => Target::Cpu,
        Device::Cuda(d) => cuda_target(d.compute_capability()),
        Device::Hip(_) => Target::Gfx942,
    }
}

/// The target for a CUDA GPU of compute capability `cc`: sm_90a on Hopper
/// (whose `a` features run on 9.0 only), else sm_80 PTX, which the driver
/// compiles for any GPU from Ampere on.
fn cuda_target(cc: Option<(i32, i32)>) -> Target {
    match cc {
        Some((9, 0)) => Target::Sm90a,
        _ => Target::Sm80,
    }
}

/// A file checked and lowered through every IR layer, with the modules it
/// imports whose kernels or operator functions host code launches or calls.
pub struct Built {
    pub db: Database,
    pub file: FileId,
    pub layers: Layers,
    /// Each imported module host code reaches into, lowered on its own
    /// (its kernels keep their names: a module's are apart from the file's).
    pub imports: Vec<(FileId, Layers)>,
}

/// Checks the first requested file of `sources` for `target` and lowers it
/// through every layer, its `@autotune` functions with the configurations
/// the tuning cache holds for it (`tessera_driver::tune`); the diagnostics
/// when it does not check clean or the cache cannot be read.
pub fn build(sources: &mut Sources, target: Target) -> Result<Built, Vec<Diagnostic>> {
    let text = sources
        .requested()
        .next()
        .map(|f| sources.get(f).text.clone())
        .unwrap_or_default();
    let (tuning, _) = tessera_driver::tune::cached_tuning(&text, target.name())
        .map_err(|message| vec![Diagnostic::error(tessera_diagnostics::Code::E1011, message)])?;
    build_tuned(sources, target, &tuning)
}

/// [`build`] with the configurations of `tuning` instead of the cache's.
pub fn build_tuned(sources: &mut Sources, target: Target, tuning: &Tuning) -> Result<Built, Vec<Diagnostic>> {
    let mut db = Database::default();
    db.load(sources);
    db.set_options(Options { target });
    db.load_imports(sources);
    let Some(file) = sources.requested().next() else {
        return Err(vec![]);
    };
    let diags = db.check_program(file);
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    let layers = tessera_driver::lower_layers_tuned(
        &db,
        file,
        &tessera_driver::registry(),
        &tessera_driver::passes(),
        tuning,
    )?;
    let mut built = Built {
        db,
        file,
        layers,
        imports: Vec::new(),
    };
    for module in reached_modules(&built.db, file) {
        built.add_module(module)?;
    }
    Ok(built)
}

impl Built {
    /// Lowers the imported module `module` on its own, with the
    /// configurations its tuning cache holds, unless it is built already.
    pub fn add_module(&mut self, module: FileId) -> Result<(), Vec<Diagnostic>> {
        if module == self.file || self.imports.iter().any(|(f, _)| *f == module) {
            return Ok(());
        }
        let db = &self.db;
        let target = tessera_hir::Db::workspace(db).options(db).target;
        let (tuning, _) = tessera_driver::tune::cached_tuning(db.source(module).text(db), target.name())
            .map_err(|message| vec![Diagnostic::error(tessera_diagnostics::Code::E1011, message)])?;
        let (registry, passes) = (tessera_driver::registry(), tessera_driver::passes());
        let layers = tessera_driver::lower_layers_tuned(db, module, &registry, &passes, &tuning)?;
        self.imports.push((module, layers));
        Ok(())
    }
}

/// The modules `file` imports (directly or through others) that host code
/// of the program reaches into: a host function of any of its files
/// launches one of their kernels or calls one of their operator functions.
fn reached_modules(db: &Database, file: FileId) -> Vec<FileId> {
    let mut reached = Vec::new();
    for f in db.program_files(file) {
        let source = db.source(f);
        for name in &tessera_hir::db::item_tree(db, source).functions {
            if tessera_lower::role(db, source, name) != FnRole::Host {
                continue;
            }
            let info = tessera_hir::db::infer(db, FnId::new(db, source, name.clone()));
            for call in &info.calls {
                let CallTarget::Function { file: callee, name } = &call.target else {
                    continue;
                };
                let id = callee.id(db);
                let device_code = matches!(
                    tessera_lower::role(db, *callee, name),
                    FnRole::Kernel | FnRole::Operator
                );
                if id != file && device_code && !reached.contains(&id) {
                    reached.push(id);
                }
            }
        }
    }
    reached
}

/// Machine code of `built` (the file and the modules it reaches into) for
/// `device`, loaded there.
pub fn load(device: &Device, built: &Built, opt_level: u8) -> Result<Loaded, Vec<Diagnostic>> {
    let loaded = |layers: &Layers| {
        let image = image(device, layers, opt_level)?;
        Loaded::new(device, image).map_err(|e| vec![e.to_diagnostic(None)])
    };
    let mut main = loaded(&built.layers)?;
    for (file, layers) in &built.imports {
        let name = tessera_hir::module_name(&built.db, built.db.source(built.file), built.db.source(*file));
        main = main.with_import(*file, name, loaded(layers)?);
    }
    Ok(main)
}

/// The imports of each file of the program: (importing file, the
/// module's dotted path, its file), for the interpreter's
/// [`Program::with_import`](tessera_runtime::host::Program::with_import).
/// `from pkg import mod` of a module `pkg.mod` is one too.
pub fn imports(db: &Database, file: FileId) -> Vec<(FileId, String, FileId)> {
    let mut out = Vec::new();
    for f in db.program_files(file) {
        let source = db.source(f);
        for import in &tessera_hir::db::item_tree(db, source).imports {
            for path in import.module_paths() {
                if let Some(module) = tessera_hir::resolve_module(db, source, &path) {
                    out.push((f, path, module.id(db)));
                }
            }
        }
    }
    out
}

/// Machine code of `layers` for `device`.
pub fn image(device: &Device, layers: &Layers, opt_level: u8) -> Result<Image, Vec<Diagnostic>> {
    let options = CodegenOptions {
        opt_level,
        source_hash: String::new(),
    };
    let diag = |e: tessera_codegen::CodegenError| vec![tessera_driver::codegen_diagnostic(&e, &layers.files)];
    match device.kind() {
        DeviceKind::Cpu => {
            let symbols = tessera_runtime::cpu::host_symbols();
            CpuModule::new(&layers.target, &options, &symbols)
                .map(Image::Cpu)
                .map_err(diag)
        }
        DeviceKind::Cuda => {
            let compiled = tessera_driver::generate(layers, &options)?;
            let ptx = String::from_utf8_lossy(&compiled.asm).into_owned();
            Ok(Image::Ptx(ptx, compiled.manifest))
        }
        DeviceKind::Hip => {
            let compiled = tessera_driver::generate(layers, &options)?;
            let work = std::env::temp_dir().join(format!("tessera-run-{}", std::process::id()));
            let linked = tessera_codegen::link_hsaco(compiled.object.as_deref().unwrap_or_default(), &work);
            let _ = std::fs::remove_dir_all(&work);
            let hsaco = linked.map_err(|message| vec![Diagnostic::error(tessera_diagnostics::Code::E0904, message)])?;
            Ok(Image::Hsaco(hsaco, compiled.manifest))
        }
    }
}

/// The role of each function of `file`, for the interpreter's `Program`.
pub fn roles(db: &Database, file: FileId) -> impl Fn(&FnDef) -> Role + '_ {
    let source = db.source(file);
    move |def: &FnDef| match tessera_lower::role(db, source, &def.name.name) {
        FnRole::Kernel => Role::Kernel,
        FnRole::Device => Role::Device,
        FnRole::Operator => Role::Operator,
        FnRole::Host => Role::Host,
    }
}

/// The `@test` functions of `module`, in source order.
pub fn test_functions(db: &Database, file: FileId, module: &Module) -> Vec<String> {
    let source = db.source(file);
    module
        .body
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Def(def) => Some(def.name.name.clone()),
            _ => None,
        })
        .filter(|name| signature(db, FnId::new(db, source, name.clone())).is_test)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hopper_gets_sm90a_and_every_other_gpu_sm80() {
        assert_eq!(cuda_target(Some((9, 0))), Target::Sm90a);
        for cc in [Some((8, 0)), Some((8, 9)), Some((10, 0)), Some((12, 0)), None] {
            assert_eq!(cuda_target(cc), Target::Sm80, "{cc:?}");
        }
    }
}
