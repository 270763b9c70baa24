//! The interpreter of host code: `def main():` and the functions it calls,
//! run over the syntax tree of a program that checked clean.
//!
//! Host code creates tensors (`zeros`, `full`, `arange`, `rand`, `randn`,
//! `load`), computes with host scalars and tensors, prints, asserts, loops
//! and branches. Two things it hands to an [`Executor`], which the command
//! line implements with the code generator:
//!
//! - a kernel launch, `saxpy[grid=(g,), block=(256,)](a, X, Y, Out)`:
//!   [`Executor::launch`], with the arguments checked against the kernel's
//!   parameters and its dims bound;
//! - a call of an operator function: [`Executor::call`].
//!
//! Tensors are [`TensorValue`]s; an executor gets the address a kernel uses
//! with [`TensorValue::kernel_address`], which copies a tensor to the GPU
//! when the host changed it (on the CPU device kernels use host memory).
//! Errors are diagnostics at the statement that failed, with a code.

mod format;
mod interp;
mod ops;
pub mod print;
mod shapes;
mod value;

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use tessera_base::{FileId, FileSpan, Span};
use tessera_diagnostics::{Code, Diagnostic};

use tessera_syntax::ast::{Expr, ExprKind, FnDef, Module, StmtKind, TypeKind};

pub use value::{TensorValue, Value};

use crate::cpu::LaunchConfig;
use crate::{DType, Device, RunError};

/// What a function of the program is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A `@kernel`: launched through the executor.
    Kernel,
    /// A `@device` function: inlined into kernels, never run by the host.
    Device,
    /// An operator function: called through the executor.
    Operator,
    /// Host code: run by the interpreter.
    Host,
}

/// A program to run: the file run and the modules it imports, each a
/// [`Unit`] with its syntax tree, its text (for messages) and the role of
/// each function (the command line takes them from `tessera_lower::role`).
pub struct Program<'a> {
    /// The file run first, then the modules it imports.
    pub(crate) units: Vec<Unit<'a>>,
    /// The id of each source file by the path the compiler names it by, for
    /// errors at places in kernels (which may be inlined from other files).
    files: HashMap<String, FileId>,
}

/// One source file of a [`Program`].
pub(crate) struct Unit<'a> {
    pub(crate) file: FileId,
    text: &'a str,
    pub(crate) module: &'a Module,
    functions: Vec<(&'a FnDef, Role)>,
    /// The file of each module its imports name, by dotted path
    /// (`helpers`, `pkg.mod`).
    imports: HashMap<String, FileId>,
}

impl<'a> Program<'a> {
    pub fn new(file: FileId, text: &'a str, module: &'a Module, role: impl Fn(&FnDef) -> Role) -> Program<'a> {
        Program {
            units: vec![Unit::new(file, text, module, role)],
            files: HashMap::new(),
        }
    }

    /// The program with a module the file imports (directly or through
    /// another module): its host functions run, its kernels launch and its
    /// operator functions are called as the file's own, and its constants
    /// are read, where an import names them.
    pub fn with_module(
        mut self,
        file: FileId,
        text: &'a str,
        module: &'a Module,
        role: impl Fn(&FnDef) -> Role,
    ) -> Program<'a> {
        self.units.push(Unit::new(file, text, module, role));
        self
    }

    /// The program with the file `from`'s import of `module` (its dotted
    /// path) resolved to the file `to`.
    pub fn with_import(mut self, from: FileId, module: &str, to: FileId) -> Program<'a> {
        if let Some(u) = self.units.iter_mut().find(|u| u.file == from) {
            u.imports.insert(module.to_string(), to);
        }
        self
    }

    /// The program with the ids of its source files, by path: the file
    /// itself and those it imports.
    pub fn with_files(mut self, files: impl IntoIterator<Item = (String, FileId)>) -> Program<'a> {
        self.files.extend(files);
        self
    }

    /// The function `name` of the file run.
    pub(crate) fn function(&self, name: &str) -> Option<(&'a FnDef, Role)> {
        self.units[0].function(name)
    }

    /// The unit of the module `path` as the unit `from` imports it.
    pub(crate) fn module(&self, from: usize, path: &str) -> Option<usize> {
        let file = self.units.get(from)?.imports.get(path)?;
        self.units.iter().position(|u| u.file == *file)
    }

    /// Whether unit `from` imports the module `path` or a module of the
    /// package `path` (`pkg` of `import pkg.mod`).
    pub(crate) fn names_module(&self, from: usize, path: &str) -> bool {
        self.units.get(from).is_some_and(|u| {
            u.imports
                .keys()
                .any(|m| m == path || m.strip_prefix(path).is_some_and(|rest| rest.starts_with('.')))
        })
    }

    /// What the name `name` of unit `unit` is bound to by one of its
    /// imports, when it is bound so.
    pub(crate) fn imported(&self, unit: usize, name: &str) -> Option<Imported<'_>> {
        self.units[unit].module.body.iter().find_map(|s| match &s.kind {
            StmtKind::Import(paths) => paths.iter().find_map(|p| {
                let segments: Vec<&str> = p.path.segments.iter().map(|i| i.name.as_str()).collect();
                match &p.alias {
                    Some(a) if a.name == name => Some(Imported::Module(segments.join("."))),
                    None if segments.first() == Some(&name) => Some(Imported::Module(name.to_string())),
                    _ => None,
                }
            }),
            StmtKind::FromImport { module, names } => {
                let n = names
                    .iter()
                    .find(|n| n.alias.as_ref().unwrap_or(&n.name).name == name)?;
                let path: Vec<&str> = module.segments.iter().map(|i| i.name.as_str()).collect();
                Some(Imported::Member(path.join("."), &n.name.name))
            }
            _ => None,
        })
    }
}

/// What an import binds a name to.
pub(crate) enum Imported<'p> {
    /// A module, or the package a dotted module is in, by its path
    /// (`import helpers`, `import pkg.mod` binding `pkg`).
    Module(String),
    /// A member of a module (`from helpers import scale`): the module's
    /// path and the member's name.
    Member(String, &'p str),
}

impl<'a> Unit<'a> {
    fn new(file: FileId, text: &'a str, module: &'a Module, role: impl Fn(&FnDef) -> Role) -> Unit<'a> {
        let functions = module
            .body
            .iter()
            .filter_map(|s| match &s.kind {
                StmtKind::Def(def) => Some((&**def, role(def))),
                _ => None,
            })
            .collect();
        Unit {
            file,
            text,
            module,
            functions,
            imports: HashMap::new(),
        }
    }

    pub(crate) fn function(&self, name: &str) -> Option<(&'a FnDef, Role)> {
        self.functions.iter().find(|(d, _)| d.name.name == name).copied()
    }

    /// Whether the top level assigns `name` once, as a module constant
    /// (the checker's rule; a name assigned again is a variable).
    pub(crate) fn assigned_once(&self, name: &str) -> bool {
        let assigns = |target: &Expr| matches!(&target.kind, ExprKind::Name(n) if n == name);
        let count = self
            .module
            .body
            .iter()
            .filter(|s| match &s.kind {
                StmtKind::Assign { targets, .. } => targets.iter().any(assigns),
                StmtKind::AnnAssign { target, .. } | StmtKind::AugAssign { target, .. } => assigns(target),
                _ => false,
            })
            .count();
        count == 1
    }

    /// The source text of a span (empty when out of range).
    pub(crate) fn text(&self, span: Span) -> &'a str {
        self.text.get(span.start as usize..span.end as usize).unwrap_or("")
    }

    pub(crate) fn at(&self, span: Span) -> FileSpan {
        FileSpan { file: self.file, span }
    }
}

/// A kernel launch for the executor.
#[derive(Debug)]
pub struct Launch<'a> {
    /// The file that defines the kernel.
    pub file: FileId,
    pub kernel: &'a str,
    /// The grid and the block; `shared_bytes` is 0 (the executor adds the
    /// kernel's own shared memory).
    pub config: LaunchConfig,
    /// The arguments in parameter order (keywords and defaults resolved).
    pub args: &'a [Value],
    /// The symbolic dims of the parameters (`N`), by name, in order of first
    /// appearance; codegen's kernels take them as trailing `index` parameters.
    pub dims: &'a [(String, i64)],
}

/// A call of an operator function for the executor.
#[derive(Debug)]
pub struct Call<'a> {
    /// The file that defines the function.
    pub file: FileId,
    pub function: &'a str,
    pub args: &'a [Value],
    pub dims: &'a [(String, i64)],
}

/// Runs kernels and operator functions for the interpreter.
pub trait Executor {
    /// Launches a kernel on `device` and returns when the host may read what
    /// it wrote (a GPU executor may queue it: reads synchronize), with the
    /// lines the kernel printed (a kernel that prints is waited for).
    fn launch(&mut self, device: &Device, launch: &Launch<'_>) -> Result<String, RunError>;

    /// Calls an operator function; its result is a tensor, a scalar or a
    /// tuple of them.
    fn call(&mut self, device: &Device, call: &Call<'_>) -> Result<Value, RunError>;

    /// The block a launch of `kernel` without `block=` takes where the
    /// compiler chose it (a kernel with tiles, spread over exactly its
    /// threads: 256 for a register tile of more than 8192 elements); None
    /// leaves it to the kernel's `tile[(...)]` clause, else 128 threads.
    fn compiled_block(&self, _file: FileId, _kernel: &str) -> Option<[u32; 3]> {
        None
    }
}

/// Where a run prints, and its arguments.
pub struct RunOptions<'a> {
    /// What `print` writes to.
    pub out: &'a mut dyn Write,
    /// The program's arguments (`tessera run FILE -- ARGS`): passed to
    /// `main` when it takes one parameter, as a tuple of strings.
    pub argv: Vec<String>,
}

fn no_entry(message: String, help: &str) -> Vec<Diagnostic> {
    vec![Diagnostic::error(Code::E1002, message).with_help(help.to_string())]
}

/// Runs `def main():`.
pub fn run_main(
    program: &Program<'_>,
    executor: &mut dyn Executor,
    device: &Device,
    options: RunOptions<'_>,
) -> Result<(), Vec<Diagnostic>> {
    let Some((main, role)) = program.function("main") else {
        return Err(no_entry(
            "the program has no `main` function".into(),
            "add `def main():`, or name the function to run with `--entry NAME`",
        ));
    };
    if role != Role::Host {
        return Err(vec![Diagnostic::error(Code::E1002, "`main` is not host code")
            .with_primary(
                program.units[0].at(main.name.span),
                "this is lowered to device code",
            )]);
    }
    let mut interp = interp::Interp::new(program, executor, device, options.out);
    interp.globals().map_err(|d| vec![*d])?;
    let args = match main.params.len() {
        0 if options.argv.is_empty() => vec![],
        0 => {
            return Err(vec![Diagnostic::error(
                Code::E1005,
                format!("`main` takes no arguments, but {} were given", options.argv.len()),
            )
            .with_primary(program.units[0].at(main.name.span), "declared here")
            .with_help(
                "declare `def main(args):` to receive the arguments as a tuple of strings",
            )]);
        }
        _ => vec![Value::tuple(options.argv.iter().map(|a| Value::str(a)).collect())],
    };
    interp
        .call_host(main, args, main.name.span)
        .map(|_| ())
        .map_err(|d| vec![*d])
}

/// Runs the function `entry` on inputs from `.npy` files (`--entry f --input
/// q=q.npy --output out.npy`): each input binds the parameter it names; the
/// result (a tensor or a tuple of them) is written to `outputs`, in order.
pub fn run_entry(
    program: &Program<'_>,
    executor: &mut dyn Executor,
    device: &Device,
    entry: &str,
    inputs: &[(String, PathBuf)],
    outputs: &[PathBuf],
    options: RunOptions<'_>,
) -> Result<(), Vec<Diagnostic>> {
    // `--entry ops.scaled` names a function of an imported module, and so
    // does `--entry scaled` after `from ops import scaled`.
    let imported = match program.imported(0, entry) {
        Some(Imported::Member(path, member)) if program.units[0].function(entry).is_none() => {
            program.module(0, &path).map(|unit| (unit, member))
        }
        _ => None,
    };
    let (unit, name) = match entry.rsplit_once('.').filter(|_| imported.is_none()) {
        Some((module, name)) => match program.module(0, module) {
            Some(unit) => (unit, name),
            None => {
                return Err(no_entry(
                    format!("the program imports no module `{module}`"),
                    "`--entry MODULE.NAME` names a function of a module the file imports (`import MODULE`)",
                ))
            }
        },
        None => imported.unwrap_or((0, entry)),
    };
    let Some((def, role)) = program.units[unit].function(name) else {
        let names = program.units[unit].functions.iter().map(|(d, _)| d.name.name.as_str());
        let module = entry.strip_suffix(name).unwrap_or("");
        let help = match tessera_hir::names::did_you_mean(name, names) {
            Some(s) => format!("did you mean `--entry {module}{s}`?"),
            None => "`--entry` names an operator function or a host function of the program".to_string(),
        };
        return Err(no_entry(format!("the program has no function `{entry}`"), &help));
    };
    let what = match role {
        Role::Kernel => Some("a kernel, which host code launches"),
        Role::Device => Some("a device function, which kernels call"),
        _ => None,
    };
    if let Some(what) = what {
        return Err(vec![Diagnostic::error(
            Code::E1002,
            format!("`{entry}` is {what}; `--entry` runs operator and host functions"),
        )
        .with_primary(
            program.units[unit].at(def.name.span),
            what.split(',').next().unwrap_or(what),
        )]);
    }
    let at_param = |i: usize| program.units[unit].at(def.params[i].span);
    for (k, (name, _)) in inputs.iter().enumerate() {
        if inputs[..k].iter().any(|(earlier, _)| earlier == name) {
            return Err(vec![Diagnostic::error(
                Code::E1005,
                format!("`--input {name}=…` is given twice"),
            )
            .with_help("give each parameter one `--input`")]);
        }
        if !def.params.iter().any(|p| &p.name.name == name) {
            let mut diag = Diagnostic::error(
                Code::E1005,
                format!("`--input {name}=…` names no parameter of `{entry}`"),
            )
            .with_primary(
                program.units[unit].at(def.name.span),
                format!("the parameters of `{entry}`"),
            );
            let params = def.params.iter().map(|p| p.name.name.as_str());
            if let Some(s) = tessera_hir::names::did_you_mean(name, params) {
                diag = diag.with_help(format!("did you mean `--input {s}=…`?"));
            }
            return Err(vec![diag]);
        }
    }
    let mut interp = interp::Interp::new(program, executor, device, options.out);
    interp.globals().map_err(|d| vec![*d])?;
    let mut args = Vec::new();
    for (i, p) in def.params.iter().enumerate() {
        let (scalar_type, scalar_param) = match shapes::param_kind(p) {
            shapes::ParamKind::Scalar(name) => (Some(name), true),
            // An untyped parameter takes a number as a scalar one does.
            shapes::ParamKind::Any => (None, true),
            shapes::ParamKind::Tensor(..) => (None, false),
        };
        let given = inputs.iter().find(|(n, _)| n == &p.name.name);
        if let (None, Some(default)) = (given, &p.default) {
            args.push(interp.default_value(unit, default).map_err(|d| vec![*d])?);
            continue;
        }
        let Some((_, path)) = given else {
            let help = if scalar_param {
                format!("pass `--input {}=2.5` (a number), or a 0-d `.npy` file", p.name.name)
            } else {
                format!("pass `--input {}=FILE.npy`", p.name.name)
            };
            return Err(vec![Diagnostic::error(
                Code::E1005,
                format!("parameter `{}` of `{entry}` has no input", p.name.name),
            )
            .with_primary(at_param(i), "this parameter")
            .with_help(help)]);
        };
        // A scalar parameter takes a number written as the input itself
        // (`--input a=2.5`), unless a file of that name exists.
        if let (true, false, Some(text)) = (scalar_param, path.exists(), path.to_str()) {
            let number = match text {
                "True" | "true" => Some(Value::Bool(true)),
                "False" | "false" => Some(Value::Bool(false)),
                // An integer for a float parameter is that float.
                _ => match text.parse::<i64>() {
                    Ok(n) if scalar_type.and_then(DType::from_name).is_some_and(|d| d.is_float()) => {
                        Some(Value::Float(n as f64))
                    }
                    Ok(n) => Some(Value::Int(n)),
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow
                        ) && !scalar_type.and_then(DType::from_name).is_some_and(|d| d.is_float()) =>
                    {
                        return Err(vec![Diagnostic::error(
                            Code::E1005,
                            format!("`--input {}={text}`: the integer does not fit in 64 bits", p.name.name),
                        )
                        .with_primary(at_param(i), "this parameter")]);
                    }
                    Err(_) => text.parse::<f64>().ok().map(Value::Float),
                },
            };
            match number {
                Some(number) => {
                    args.push(number);
                    continue;
                }
                // Neither a number nor a file: say both.
                None => {
                    return Err(vec![Diagnostic::error(
                        Code::E1004,
                        format!(
                            "`--input {}={text}`: `{text}` is neither a number nor a .npy file",
                            p.name.name
                        ),
                    )
                    .with_primary(at_param(i), "this scalar parameter")
                    .with_help(format!(
                        "pass a number (`--input {}=2.5`) or the path of a 0-d .npy file",
                        p.name.name
                    ))]);
                }
            }
        }
        let tensor =
            crate::npy::load(path).map_err(|e| vec![e.to_diagnostic(Some((at_param(i), "this parameter".into())))])?;
        let tensor = shapes::fp8_as_param(tensor, p);
        // An array of another dtype: the file is what to change.
        if let shapes::ParamKind::Tensor(name, _) = shapes::param_kind(p) {
            let want = tessera_hir::ty::DType::from_name(name).and_then(DType::from_language);
            if let Some(want) = want.filter(|&w| w != tensor.dtype()) {
                return Err(vec![Diagnostic::error(
                    Code::E1005,
                    format!(
                        "`--input {}={}` holds {} array, but the parameter is {}",
                        p.name.name,
                        path.display(),
                        tessera_base::with_article(&tensor.dtype().to_string()),
                        program.units[unit].text(p.ty.as_ref().map_or(p.span, |t| t.span))
                    ),
                )
                .with_primary(at_param(i), "this parameter")
                .with_help(format!(
                    "convert the array when saving it: `np.save(\"{}\", a.astype({}))`",
                    path.display(),
                    crate::npy::numpy_name(want)
                ))]);
            }
        }
        // A 0-d array gives a scalar parameter its value.
        let scalar = matches!(shapes::param_kind(p), shapes::ParamKind::Scalar(_)) && tensor.shape().is_empty();
        args.push(if scalar {
            Value::from_elem(tensor.get(0))
        } else {
            Value::Tensor(TensorValue::new(tensor))
        });
    }
    // A declared result, or a body that returns no value, says how many
    // outputs there are before the function runs (`--entry main --output
    // o.npy` had run `main` first).
    let expected = match &def.ret {
        Some(t) => Some(match &t.kind {
            TypeKind::None => 0,
            TypeKind::Tuple(items) => items.len(),
            TypeKind::Named { .. } => 1,
        }),
        None => (!returns_value(def)).then_some(0),
    };
    if let Some(count) = expected {
        if count != outputs.len() {
            return Err(vec![output_count(program, unit, def, entry, count, outputs.len())]);
        }
    }
    let result = interp
        .call_function(unit, def, role, args, None, def.name.span)
        .map_err(|d| vec![*d])?;
    let results = match result {
        Value::None => vec![],
        v => v.items().unwrap_or_else(|| vec![v]),
    };
    if results.len() != outputs.len() {
        return Err(vec![output_count(
            program,
            unit,
            def,
            entry,
            results.len(),
            outputs.len(),
        )]);
    }
    for (value, path) in results.iter().zip(outputs) {
        let tensor = interp.to_tensor(value).map_err(|e| vec![e.to_diagnostic(None)])?;
        crate::npy::save(path, &tensor).map_err(|e| vec![e.to_diagnostic(None)])?;
    }
    Ok(())
}

/// E1005: `entry` gives `results` values where `outputs` were given.
fn output_count(
    program: &Program<'_>,
    unit: usize,
    def: &FnDef,
    entry: &str,
    results: usize,
    outputs: usize,
) -> Diagnostic {
    Diagnostic::error(
        Code::E1005,
        format!(
            "`{entry}` returns {}, but {} given",
            tessera_base::counted(results, "value", "values"),
            tessera_base::counted(outputs, "output was", "outputs were")
        ),
    )
    .with_primary(program.units[unit].at(def.name.span), "this function")
}

/// Whether a `return` in `def`'s body gives a value.
fn returns_value(def: &FnDef) -> bool {
    fn block(b: &tessera_syntax::ast::Block) -> bool {
        b.stmts
            .iter()
            .any(|s| matches!(&s.kind, StmtKind::Return(Some(_))) || s.kind.blocks().into_iter().any(block))
    }
    block(&def.body)
}

/// Turns a runtime error into a diagnostic at `span` of unit `unit`.
pub(crate) fn at(program: &Program<'_>, unit: usize, span: Span, label: &str, e: RunError) -> Box<Diagnostic> {
    Box::new(
        e.to_diagnostic_in(Some((program.units[unit].at(span), label.to_string())), |path| {
            program.files.get(path).copied()
        }),
    )
}
