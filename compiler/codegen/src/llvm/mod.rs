//! The one place that calls LLVM (llvm-sys 191, Debian's LLVM 19).
//!
//! Everything else in the compiler sees safe types: [`Module`] (parsed from
//! LLVM IR text, verified before any pass or emitter touches it, because
//! LLVM's fatal errors end the process; the handler installed here reports
//! one as E0904), [`Machine`] (a target machine:
//! O-level pipelines and assembly/object emission, always on a clone of the
//! module, since a second emission from one module aborts), [`intrinsic_exists`]
//! (LLVM accepts unknown `llvm.*` names silently) and [`Jit`] (ORC LLJIT for
//! the host CPU path).
//!
//! Every raw call is here; each `unsafe` block says why it is sound.

use std::ffi::{c_char, CStr, CString};
use std::ptr;
use std::sync::Once;

use llvm_sys::analysis::{LLVMVerifierFailureAction, LLVMVerifyModule};
use llvm_sys::core::*;
use llvm_sys::error::*;
use llvm_sys::ir_reader::LLVMParseIRInContext;
use llvm_sys::orc2::lljit::*;
use llvm_sys::orc2::*;
use llvm_sys::prelude::*;
use llvm_sys::target::*;
use llvm_sys::target_machine::*;
use llvm_sys::transforms::pass_builder::*;

static INIT: Once = Once::new();

/// Registers the NVPTX, AMDGPU and X86 back ends with LLVM, once per process.
fn init() {
    INIT.call_once(|| {
        // SAFETY: LLVM's target registration functions take no arguments and
        // are idempotent; `Once` keeps them to one thread.
        unsafe {
            LLVMInitializeNVPTXTargetInfo();
            LLVMInitializeNVPTXTarget();
            LLVMInitializeNVPTXTargetMC();
            LLVMInitializeNVPTXAsmPrinter();
            LLVMInitializeAMDGPUTargetInfo();
            LLVMInitializeAMDGPUTarget();
            LLVMInitializeAMDGPUTargetMC();
            LLVMInitializeAMDGPUAsmPrinter();
            LLVMInitializeX86TargetInfo();
            LLVMInitializeX86Target();
            LLVMInitializeX86TargetMC();
            LLVMInitializeX86AsmPrinter();
            LLVMInitializeX86AsmParser();
            // SAFETY: `fatal` is an `extern "C"` function of the signature
            // LLVM expects, valid for the whole process.
            llvm_sys::error_handling::LLVMInstallFatalErrorHandler(Some(fatal));
        }
    });
}

/// LLVM's fatal errors (a back end that cannot select an instruction) end
/// the process, since LLVM's state is undefined after one: this reports
/// the error as Tessera's E0904 on standard error and exits with status 1,
/// the status of a build with errors, where LLVM aborted with a stack dump
/// and a core file.
extern "C" fn fatal(reason: *const c_char) {
    let reason = if reason.is_null() {
        String::new()
    } else {
        // SAFETY: LLVM passes a NUL-terminated string valid during the call.
        unsafe { CStr::from_ptr(reason) }.to_string_lossy().into_owned()
    };
    eprintln!(
        "error[E0904]: LLVM could not generate code: {reason}\n  = note: a bug in Tessera's code generator, not in the program: please report it with the program"
    );
    std::process::exit(1);
}

/// Takes ownership of an LLVM-allocated message.
fn take_message(raw: *mut c_char) -> String {
    if raw.is_null() {
        return String::new();
    }
    // SAFETY: `raw` is a NUL-terminated string LLVM allocated for us; we copy
    // it and free it exactly once with LLVM's own deallocator.
    unsafe {
        let text = CStr::from_ptr(raw).to_string_lossy().into_owned();
        LLVMDisposeMessage(raw);
        text
    }
}

fn take_error(err: LLVMErrorRef) -> Result<(), String> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null error is consumed exactly once by
    // LLVMGetErrorMessage, whose message we then own.
    Err(take_message(unsafe { LLVMGetErrorMessage(err) }))
}

fn cstring(text: &str) -> CString {
    CString::new(text.replace('\0', " ")).unwrap_or_default()
}

/// Whether LLVM 19 knows the intrinsic `name` (e.g. `llvm.nvvm.barrier0`).
pub fn intrinsic_exists(name: &str) -> bool {
    // SAFETY: the pointer and length describe a live byte slice.
    unsafe { LLVMLookupIntrinsicID(name.as_ptr().cast(), name.len()) != 0 }
}

/// An LLVM context with one module in it, parsed from IR text and verified.
pub struct Module {
    context: LLVMContextRef,
    module: LLVMModuleRef,
    /// Set when the context belongs to an ORC thread-safe context, which
    /// owns (and frees) it.
    thread_safe: LLVMOrcThreadSafeContextRef,
}

impl Module {
    /// Parses `text` into a fresh context and verifies the result.
    pub fn parse(name: &str, text: &str) -> Result<Module, String> {
        init();
        // SAFETY: a fresh context, owned by the returned Module.
        let context = unsafe { LLVMContextCreate() };
        Module::parse_in(context, ptr::null_mut(), name, text)
    }

    /// Parses `text` into a context the JIT can take over.
    fn parse_thread_safe(name: &str, text: &str) -> Result<Module, String> {
        init();
        // SAFETY: the thread-safe context owns the plain context we borrow
        // from it; both live until the Module is dropped or handed to the JIT.
        unsafe {
            let tsc = LLVMOrcCreateNewThreadSafeContext();
            let context = LLVMOrcThreadSafeContextGetContext(tsc);
            Module::parse_in(context, tsc, name, text)
        }
    }

    fn parse_in(
        context: LLVMContextRef,
        thread_safe: LLVMOrcThreadSafeContextRef,
        name: &str,
        text: &str,
    ) -> Result<Module, String> {
        let name = cstring(name);
        // SAFETY: the memory buffer copies `text`; LLVMParseIRInContext takes
        // ownership of the buffer whatever the outcome.
        let (module, failed, message) = unsafe {
            let buffer = LLVMCreateMemoryBufferWithMemoryRangeCopy(text.as_ptr().cast(), text.len(), name.as_ptr());
            let mut module = ptr::null_mut();
            let mut message = ptr::null_mut();
            let failed = LLVMParseIRInContext(context, buffer, &mut module, &mut message);
            (module, failed != 0, take_message(message))
        };
        let parsed = Module {
            context,
            module,
            thread_safe,
        };
        if failed || module.is_null() {
            return Err(format!("LLVM rejected the generated IR: {message}"));
        }
        parsed.verify()?;
        Ok(parsed)
    }

    /// Runs LLVM's verifier; an invalid module never reaches a pass.
    pub fn verify(&self) -> Result<(), String> {
        let mut message = ptr::null_mut();
        // SAFETY: `self.module` is a live module; ReturnStatus never aborts.
        let broken = unsafe {
            LLVMVerifyModule(
                self.module,
                LLVMVerifierFailureAction::LLVMReturnStatusAction,
                &mut message,
            )
        };
        let message = take_message(message);
        if broken != 0 {
            return Err(format!("the generated LLVM IR is invalid: {message}"));
        }
        Ok(())
    }

    /// The module as LLVM IR text.
    pub fn print(&self) -> String {
        // SAFETY: the module is live; the returned string is ours to free.
        take_message(unsafe { LLVMPrintModuleToString(self.module) })
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: we own the module and (unless a thread-safe context owns
        // it) the context; each is disposed once, the module first.
        unsafe {
            if !self.module.is_null() {
                LLVMDisposeModule(self.module);
            }
            if self.thread_safe.is_null() {
                LLVMContextDispose(self.context);
            } else {
                LLVMOrcDisposeThreadSafeContext(self.thread_safe);
            }
        }
    }
}

/// What a target machine writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileType {
    Assembly,
    Object,
}

/// A target machine: triple, CPU and features, optimization level.
pub struct Machine {
    machine: LLVMTargetMachineRef,
    opt_level: u8,
}

impl Machine {
    pub fn new(triple: &str, cpu: &str, features: &str, opt_level: u8) -> Result<Machine, String> {
        init();
        let triple_c = cstring(triple);
        let cpu_c = cstring(cpu);
        let features_c = cstring(features);
        let mut target = ptr::null_mut();
        let mut message = ptr::null_mut();
        // SAFETY: all strings are NUL-terminated and outlive the calls.
        let failed = unsafe { LLVMGetTargetFromTriple(triple_c.as_ptr(), &mut target, &mut message) };
        let message = take_message(message);
        if failed != 0 {
            return Err(format!("LLVM has no target for `{triple}`: {message}"));
        }
        let level = match opt_level {
            0 => LLVMCodeGenOptLevel::LLVMCodeGenLevelNone,
            1 => LLVMCodeGenOptLevel::LLVMCodeGenLevelLess,
            2 => LLVMCodeGenOptLevel::LLVMCodeGenLevelDefault,
            _ => LLVMCodeGenOptLevel::LLVMCodeGenLevelAggressive,
        };
        // SAFETY: `target` came from LLVM above; the strings are live.
        let machine = unsafe {
            LLVMCreateTargetMachine(
                target,
                triple_c.as_ptr(),
                cpu_c.as_ptr(),
                features_c.as_ptr(),
                level,
                LLVMRelocMode::LLVMRelocPIC,
                LLVMCodeModel::LLVMCodeModelDefault,
            )
        };
        if machine.is_null() {
            return Err(format!("LLVM cannot make a target machine for `{triple}` `{cpu}`"));
        }
        Ok(Machine {
            machine,
            opt_level: opt_level.min(3),
        })
    }

    /// The data layout string of this machine.
    pub fn data_layout(&self) -> String {
        // SAFETY: the data layout is created and disposed here; its string
        // representation is copied out before disposal.
        unsafe {
            let layout = LLVMCreateTargetDataLayout(self.machine);
            let text = take_message(LLVMCopyStringRepOfTargetData(layout));
            LLVMDisposeTargetData(layout);
            text
        }
    }

    /// Runs LLVM's `default<O{n}>` pipeline on the module, then verifies it.
    pub fn optimize(&self, module: &mut Module) -> Result<(), String> {
        let pipeline = cstring(&format!("default<O{}>", self.opt_level));
        // SAFETY: module and machine are live; the options are created and
        // disposed here.
        let err = unsafe {
            let options = LLVMCreatePassBuilderOptions();
            let err = LLVMRunPasses(module.module, pipeline.as_ptr(), self.machine, options);
            LLVMDisposePassBuilderOptions(options);
            err
        };
        take_error(err).map_err(|e| format!("LLVM's optimizer failed: {e}"))?;
        module.verify()
    }

    /// Emits assembly (PTX for NVPTX) or an object file from a clone of the
    /// module.
    pub fn emit(&self, module: &Module, file_type: FileType) -> Result<Vec<u8>, String> {
        let kind = match file_type {
            FileType::Assembly => LLVMCodeGenFileType::LLVMAssemblyFile,
            FileType::Object => LLVMCodeGenFileType::LLVMObjectFile,
        };
        // SAFETY: the clone is owned here and disposed after emission; the
        // memory buffer's bytes are copied out before it is disposed.
        unsafe {
            let clone = LLVMCloneModule(module.module);
            let mut message = ptr::null_mut();
            let mut buffer = ptr::null_mut();
            let failed = LLVMTargetMachineEmitToMemoryBuffer(self.machine, clone, kind, &mut message, &mut buffer);
            LLVMDisposeModule(clone);
            let message = take_message(message);
            if failed != 0 || buffer.is_null() {
                return Err(format!("LLVM could not emit code: {message}"));
            }
            let start = LLVMGetBufferStart(buffer) as *const u8;
            let size = LLVMGetBufferSize(buffer);
            let bytes = std::slice::from_raw_parts(start, size).to_vec();
            LLVMDisposeMemoryBuffer(buffer);
            Ok(bytes)
        }
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        // SAFETY: we own the target machine and dispose it once.
        unsafe { LLVMDisposeTargetMachine(self.machine) }
    }
}

/// The host's target triple (e.g. `x86_64-pc-linux-gnu`).
pub fn host_triple() -> String {
    init();
    // SAFETY: LLVM returns an owned string.
    take_message(unsafe { LLVMGetDefaultTargetTriple() })
}

/// An in-process JIT (ORC LLJIT) holding one compiled module.
pub struct Jit {
    jit: LLVMOrcLLJITRef,
}

// SAFETY: LLJIT is internally synchronised; lookups from any thread are
// supported, and the compiled code is immutable once looked up.
unsafe impl Send for Jit {}
// SAFETY: as above.
unsafe impl Sync for Jit {}

impl Jit {
    /// Compiles `text` (LLVM IR for the host) in-process for `machine`
    /// (the CPU and features the module was optimized for, not the host's
    /// own: an x86 CPU with AVX-512 BF16 converts `float` to `bfloat` with
    /// an instruction that flushes subnormals to zero, where every other
    /// target rounds them). `symbols` are the functions the code may call
    /// that live in this process, by name and address.
    pub fn new(name: &str, text: &str, machine: Machine, symbols: &[(&str, usize)]) -> Result<Jit, String> {
        let module = Module::parse_thread_safe(name, text)?;
        let mut jit = ptr::null_mut();
        let machine = std::mem::ManuallyDrop::new(machine);
        // SAFETY: the builder takes the target machine builder over, which
        // takes the target machine over (`ManuallyDrop` keeps Machine's
        // Drop from disposing it again); creating the JIT takes the builder.
        take_error(unsafe {
            let builder = LLVMOrcCreateLLJITBuilder();
            let target = LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(machine.machine);
            LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, target);
            LLVMOrcCreateLLJIT(&mut jit, builder)
        })
        .map_err(|e| format!("LLVM's JIT could not start: {e}"))?;
        let jit = Jit { jit };
        // SAFETY: the JIT is live; names are interned through it; the pairs
        // array is copied by LLVMOrcAbsoluteSymbols, which returns a
        // materialization unit that JITDylibDefine takes over.
        unsafe {
            let dylib = LLVMOrcLLJITGetMainJITDylib(jit.jit);
            if !symbols.is_empty() {
                let mut pairs: Vec<LLVMOrcCSymbolMapPair> = symbols
                    .iter()
                    .map(|(sym, address)| {
                        let sym = cstring(sym);
                        LLVMOrcCSymbolMapPair {
                            Name: LLVMOrcLLJITMangleAndIntern(jit.jit, sym.as_ptr()),
                            Sym: LLVMJITEvaluatedSymbol {
                                Address: *address as u64,
                                Flags: LLVMJITSymbolFlags {
                                    GenericFlags: LLVMJITSymbolGenericFlags::LLVMJITSymbolGenericFlagsExported as u8
                                        | LLVMJITSymbolGenericFlags::LLVMJITSymbolGenericFlagsCallable as u8,
                                    TargetFlags: 0,
                                },
                            },
                        }
                    })
                    .collect();
                let unit = LLVMOrcAbsoluteSymbols(pairs.as_mut_ptr(), pairs.len());
                take_error(LLVMOrcJITDylibDefine(dylib, unit))
                    .map_err(|e| format!("LLVM's JIT rejected the runtime symbols: {e}"))?;
            }
            // The thread-safe module takes the module over; the context is
            // reference-counted and stays alive through it, so our own
            // reference is released. `ManuallyDrop` keeps Module's Drop from
            // freeing either again.
            let module = std::mem::ManuallyDrop::new(module);
            let tsm = LLVMOrcCreateNewThreadSafeModule(module.module, module.thread_safe);
            LLVMOrcDisposeThreadSafeContext(module.thread_safe);
            take_error(LLVMOrcLLJITAddLLVMIRModule(jit.jit, dylib, tsm))
                .map_err(|e| format!("LLVM's JIT rejected the module: {e}"))?;
        }
        Ok(jit)
    }

    /// The address of the compiled function `name`.
    pub fn lookup(&self, name: &str) -> Result<usize, String> {
        let name_c = cstring(name);
        let mut address = 0;
        // SAFETY: the JIT is live; LLVM writes the address on success.
        take_error(unsafe { LLVMOrcLLJITLookup(self.jit, &mut address, name_c.as_ptr()) })
            .map_err(|e| format!("the JIT has no function `{name}`: {e}"))?;
        Ok(address as usize)
    }
}

impl Drop for Jit {
    fn drop(&mut self) {
        // SAFETY: we own the JIT; disposing it frees the compiled code, which
        // nothing uses after the Jit is gone (callers hold the Jit while they
        // call into it).
        let _ = take_error(unsafe { LLVMOrcDisposeLLJIT(self.jit) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set in the child process [`fatal_errors_exit_with_e0904`] starts.
    const CHILD: &str = "TESSERA_LLVM_FATAL_CHILD";

    /// A stack slot in address space 0 that `-O0` keeps: the AMDGPU back
    /// end cannot select its frame index, a fatal error.
    const UNSELECTABLE: &str = r#"
target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @k(ptr addrspace(1) %out, i64 %i) {
  %slots = alloca [8 x double], align 16
  %slot = getelementptr [8 x double], ptr %slots, i64 0, i64 %i
  store double 1.0, ptr %slot
  %v = load double, ptr %slots
  store double %v, ptr addrspace(1) %out
  ret void
}
"#;

    /// LLVM's fatal error ends the process with E0904 and status 1, not an
    /// abort: the test runs itself in a child that makes LLVM fail.
    #[test]
    fn fatal_errors_exit_with_e0904() {
        if std::env::var_os(CHILD).is_some() {
            let machine = Machine::new("amdgcn-amd-amdhsa", "gfx942", "", 0).expect("the AMDGPU target");
            let layout = machine.data_layout();
            let text = format!("target datalayout = \"{layout}\"\n{UNSELECTABLE}");
            let module = Module::parse("fatal", &text).expect("valid IR");
            let emitted = machine.emit(&module, FileType::Object);
            assert!(emitted.is_err(), "LLVM selected an address-space-0 frame index");
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
            .args(["--exact", "llvm::tests::fatal_errors_exit_with_e0904", "--nocapture"])
            .env(CHILD, "1")
            .output()
            .expect("the child runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("error[E0904]: LLVM could not generate code: Cannot select"),
            "{stderr}"
        );
    }
}
