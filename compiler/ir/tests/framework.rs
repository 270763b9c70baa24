//! The verifier framework and the pass manager, with a small test dialect.

use tessera_base::{FileId, Span};
use tessera_diagnostics::Code;
use tessera_ir::testing::TestDialect;
use tessera_ir::{
    parse, print_module, verify_structure, Builder, FileMap, Loc, Module, Pass, PassContext, PassFailure, PassInfo,
    PassManager, PassRegistry, Registry, Type, VerifyError,
};

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register(Box::new(TestDialect));
    r
}

fn module(body: &str) -> Module {
    let text = format!("module {{\n  func.func @f(%a: f32, %n: index) -> (f32) {{\n{body}\n  }}\n}}\n");
    parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn messages(errors: &[VerifyError]) -> Vec<String> {
    errors.iter().map(|e| e.message.clone()).collect()
}

fn verify(body: &str) -> Vec<String> {
    messages(&registry().verify(&module(body)))
}

const VALID: &str = "
    %c = test.const() {value = 2} : () -> i32
    %s = test.add(%a, %a) {fast} : (f32, f32) -> f32
    test.loop(%n) ({
    ^(%i: index):
      test.print(%s, %i) : (f32, index) -> ()
      test.yield() : () -> ()
    }) : (index) -> ()
    test.positive() {value = 3, test.note = \"discardable\"} : () -> ()
    func.return(%s) : (f32) -> ()";

#[test]
fn a_valid_module_verifies() {
    assert_eq!(verify(VALID), Vec::<String>::new());
}

#[test]
fn ops_are_checked_against_their_definitions() {
    let cases: &[(&str, &str)] = &[
        ("x.y() : () -> ()", "unknown dialect `x`"),
        ("test.nope() : () -> ()", "unknown op `test.nope`"),
        ("%b = test.add(%a) : (f32) -> f32", "`test.add` takes 2 operands, not 1"),
        (
            "test.add(%a, %a) : (f32, f32) -> ()",
            "`test.add` takes 1 result, not 0",
        ),
        (
            "test.print() : () -> ()",
            "`test.print` takes at least 1 operands, not 0",
        ),
        ("test.loop(%n) : (index) -> ()", "`test.loop` takes 1 region, not 0"),
        (
            "%c = test.const() : () -> i32",
            "`test.const` needs the attribute `value`",
        ),
        (
            "%c = test.const() {value = 1.5} : () -> i32",
            "attribute `value` of `test.const` must be an integer",
        ),
        (
            "%c = test.const() {value = 1, valeu = 2} : () -> i32",
            "`test.const` has no attribute `valeu`",
        ),
        (
            "test.yield() : () -> ()\n    test.print(%a) : (f32) -> ()",
            "`test.yield` must be the last op of its block",
        ),
    ];
    for (body, message) in cases {
        let body = format!("    {body}\n    func.return(%a) : (f32) -> ()");
        let found = verify(&body);
        assert!(found.contains(&message.to_string()), "{body}: {found:?}");
    }
}

#[test]
fn unregistered_dialects_can_be_allowed() {
    let m = module("    x.y() : () -> ()\n    func.return(%a) : (f32) -> ()");
    let mut r = registry();
    assert_eq!(messages(&r.verify(&m)), ["unknown dialect `x`"]);
    r.allow_unregistered = true;
    assert!(r.verify(&m).is_empty());
}

#[test]
fn custom_rules_run_after_the_generic_checks() {
    assert_eq!(
        verify("    %b = test.add(%a, %n) : (f32, index) -> f32\n    func.return(%a) : (f32) -> ()"),
        ["`test.add` operands must have the result's type"]
    );
    assert_eq!(
        verify("    test.positive() {value = -1} : () -> ()\n    func.return(%a) : (f32) -> ()"),
        ["`test.positive` needs a positive value"]
    );
    // A near miss: zero is rejected, one accepted.
    assert!(verify("    test.positive() {value = 1} : () -> ()\n    func.return(%a) : (f32) -> ()").is_empty());
    // The custom rule is not reached while a generic check fails.
    assert_eq!(
        verify("    test.positive() {value = -1, bad = 1} : () -> ()\n    func.return(%a) : (f32) -> ()"),
        ["`test.positive` has no attribute `bad`"]
    );
}

#[test]
fn the_func_dialect_checks_returns_and_calls() {
    assert_eq!(
        verify("    func.return(%n) : (index) -> ()"),
        ["`func.return` returns (index) but the function declares (f32)"]
    );
    assert_eq!(
        verify("    %r = func.call(%a, %n) {callee = @g} : (f32, index) -> f32\n    func.return(%r) : (f32) -> ()"),
        ["call to undefined function `@g`"]
    );
    assert_eq!(
        verify("    %r = func.call(%a) {callee = @f} : (f32) -> f32\n    func.return(%r) : (f32) -> ()"),
        ["call of `@f` has type (f32) -> (f32) but the function is (f32, index) -> (f32)"]
    );
    assert!(verify(
        "    %r = func.call(%a, %n) {callee = @f} : (f32, index) -> f32\n    func.return(%r) : (f32) -> ()"
    )
    .is_empty());
}

#[test]
fn structural_errors_in_text() {
    let use_before_def = "    %b = test.add(%c, %c) : (f32, f32) -> f32\n    %c = test.add(%a, %a) : (f32, f32) -> f32\n    func.return(%b) : (f32) -> ()";
    assert_eq!(
        verify(use_before_def),
        [
            "operand #0 of `test.add` is used before it is defined",
            "operand #1 of `test.add` is used before it is defined"
        ]
    );
    // A value defined in a region is not visible after the region's op.
    let escaped = "    test.loop(%n) ({\n    ^(%i: index):\n      test.yield() : () -> ()\n    }) : (index) -> ()\n    test.print(%i) : (index) -> ()\n    func.return(%a) : (f32) -> ()";
    assert_eq!(
        verify(escaped),
        ["operand #0 of `test.print` is used before it is defined"]
    );
    // An op's own results are not visible in its regions.
    let own = "    %r = test.pure_region() ({\n      test.print(%r) : (f32) -> ()\n    }) : () -> f32\n    func.return(%r) : (f32) -> ()";
    assert_eq!(verify(own), ["operand #0 of `test.print` is used before it is defined"]);
}

#[test]
fn structural_errors_in_built_modules() {
    let mut m = Module::new(None);
    let f = m.add_function("f", &[Type::F32], &[], Loc::Unknown);
    let g = m.add_function("g", &[], &[], Loc::Unknown);
    let entry_f = m.entry_block(f).unwrap();
    let entry_g = m.entry_block(g).unwrap();
    let x = m.block_args(entry_f)[0];
    let mut b = Builder::at_end(&mut m, entry_f);
    let y = b.op("test.add").operands(&[x, x]).result(Type::F32).build_value();
    let user = b.op("test.print").operand(y).build();
    // Move the user before the definition: use before def.
    let def = m.defining_op(y).unwrap();
    m.move_op_before(user, def);
    assert_eq!(
        messages(&verify_structure(&m)),
        ["operand #0 of `test.print` is used before it is defined"]
    );
    m.move_op_after(user, def);
    assert!(verify_structure(&m).is_empty());
    // Another function's value.
    let mut b = Builder::at_end(&mut m, entry_g);
    b.op("test.print").operand(x).build();
    assert_eq!(
        messages(&verify_structure(&m)),
        ["operand #0 of `test.print` is defined outside the function that uses it"]
    );
    let stray = *m.block_ops(entry_g).last().unwrap();
    m.erase_op(stray);
    // The result of an erased op.
    m.erase_op(def);
    assert_eq!(
        messages(&verify_structure(&m)),
        ["operand #0 of `test.print` is a result of an erased op"]
    );
    m.erase_op(user);
    assert!(verify_structure(&m).is_empty());
    // A body that does not take the declared parameters, and a bad name.
    m.add_block_arg(entry_g, Type::INDEX);
    let mut b = Builder::at_end(&mut m, entry_g);
    b.op("nodialect").build();
    assert_eq!(
        messages(&verify_structure(&m)),
        [
            "function `@g` declares parameters () but its body takes (index)",
            "`nodialect` is not an op name (`dialect.op`, each part an identifier)",
        ]
    );
}

#[test]
fn errors_become_diagnostics_pointing_at_the_source_or_the_ir() {
    let text =
        "module {\n  func.func @f() -> () {\n    x.y() : () -> () loc(\"a.tsr\":5..9)\n    w.z() : () -> ()\n  }\n}\n";
    let m = parse(text).unwrap();
    let errors = Registry::new().verify(&m);
    assert_eq!(errors.len(), 2);
    let mut files = FileMap::new();
    files.set_ir_file(FileId(0));
    files.insert("a.tsr", FileId(1));
    let first = errors[0].to_diagnostic(&files);
    assert_eq!(first.code, Code::E0901);
    assert_eq!(first.primary_span(), Some(Span::new(5, 9).in_file(FileId(1))));
    let second = errors[1].to_diagnostic(&files);
    let at = second.primary_span().unwrap();
    assert_eq!(at.file, FileId(0));
    assert_eq!(&text[at.span.range()], "w.z");
}

/// A pass that breaks the IR: it moves the last op of each function to the
/// front, so the return uses a value before its definition.
struct Breaker;

impl Pass for Breaker {
    fn name(&self) -> &'static str {
        "breaker"
    }

    fn run(&mut self, m: &mut Module, _: &PassContext) -> Result<(), Vec<tessera_diagnostics::Diagnostic>> {
        for f in m.functions() {
            let entry = m.entry_block(f).unwrap();
            let ops = m.block_ops(entry).to_vec();
            if let (Some(&first), Some(&last)) = (ops.first(), ops.last()) {
                m.move_op_before(last, first);
            }
        }
        Ok(())
    }
}

fn run_passes(text: &str, names: &[&str], verify_each: bool) -> Result<String, PassFailure> {
    let mut m = parse(text).unwrap();
    let mut passes = PassRegistry::new();
    passes.register(PassInfo {
        name: "breaker",
        description: "breaks the IR",
        create: || Box::new(Breaker),
    });
    let mut pm = PassManager::new();
    pm.verify_each = verify_each;
    for name in names {
        pm.add(passes.create(name).expect("a registered pass"));
    }
    let registry = registry();
    let files = FileMap::new();
    pm.run(
        &mut m,
        &PassContext {
            registry: &registry,
            files: &files,
        },
    )?;
    assert_eq!(pm.timings().len(), names.len());
    assert!(pm.timing_report().contains(names.last().unwrap()));
    Ok(print_module(&m))
}

#[test]
fn verify_each_names_the_pass_that_broke_the_ir() {
    let text = "module {\n  func.func @f(%a: f32) -> (f32) {\n    %b = test.add(%a, %a) : (f32, f32) -> f32\n    func.return(%b) : (f32) -> ()\n  }\n}\n";
    match run_passes(text, &["cse", "breaker", "dce"], true) {
        Err(PassFailure::BrokeIr { pass, errors }) => {
            assert_eq!(pass, "breaker");
            assert_eq!(
                messages(&errors),
                ["operand #0 of `func.return` is used before it is defined"]
            );
        }
        other => panic!("expected the breaker to be caught, got {:?}", other.map(|_| ())),
    }
    // Without verify_each the structural verifier still runs after the last pass.
    assert!(matches!(
        run_passes(text, &["breaker", "cse"], false),
        Err(PassFailure::BrokeIr { pass: "cse", .. })
    ));
    assert!(PassRegistry::new().create("nope").is_none());
}

#[test]
fn dce_erases_dead_pure_ops_only() {
    let text = "module {
  func.func @f(%a: f32, %n: index) -> (f32) {
    %1 = test.add(%a, %a) : (f32, f32) -> f32
    %2 = test.add(%1, %1) : (f32, f32) -> f32
    %3 = test.const() {value = 1} : () -> i32
    test.print(%3) : (i32) -> ()
    %4 = x.unknown(%a) : (f32) -> f32
    %5 = test.pure_region() ({
      %6 = test.add(%a, %a) : (f32, f32) -> f32
      test.yield(%6) : (f32) -> ()
    }) : () -> f32
    test.loop(%n) ({
      %7 = test.add(%a, %a) : (f32, f32) -> f32
      test.yield() : () -> ()
    }) : (index) -> ()
    func.return(%a) : (f32) -> ()
  }
}
";
    let expected = "module {
  func.func @f(%0: f32, %1: index) -> (f32) {
    %2 = test.const() {value = 1} : () -> i32
    test.print(%2) : (i32) -> ()
    %3 = x.unknown(%0) : (f32) -> f32
    test.loop(%1) ({
      test.yield() : () -> ()
    }) : (index) -> ()
    func.return(%0) : (f32) -> ()
  }
}
";
    assert_eq!(run_passes(text, &["dce"], false).unwrap(), expected);
}

#[test]
fn cse_merges_identical_pure_ops_in_dominating_blocks() {
    let text = "module {
  func.func @f(%a: f32, %n: index) -> (f32) {
    %1 = test.add(%a, %a) : (f32, f32) -> f32
    %2 = test.add(%a, %a) : (f32, f32) -> f32
    %3 = test.add(%a, %a) {fast} : (f32, f32) -> f32
    %4 = test.add(%1, %2) : (f32, f32) -> f32
    %5 = test.add(%1, %1) : (f32, f32) -> f32
    test.print(%4, %5, %3) : (f32, f32, f32) -> ()
    test.print(%4) : (f32) -> ()
    test.print(%4) : (f32) -> ()
    test.loop(%n) ({
      %6 = test.add(%a, %a) : (f32, f32) -> f32
      %7 = test.const() {value = 1} : () -> i32
      test.print(%6, %7) : (f32, i32) -> ()
    }) : (index) -> ()
    %8 = test.const() {value = 1} : () -> i32
    func.return(%1) : (f32) -> ()
  }
  func.func @g(%a: f32) -> (f32) {
    %1 = test.add(%a, %a) : (f32, f32) -> f32
    func.return(%1) : (f32) -> ()
  }
}
";
    let expected = "module {
  func.func @f(%0: f32, %1: index) -> (f32) {
    %2 = test.add(%0, %0) : (f32, f32) -> f32
    %3 = test.add(%0, %0) {fast} : (f32, f32) -> f32
    %4 = test.add(%2, %2) : (f32, f32) -> f32
    test.print(%4, %4, %3) : (f32, f32, f32) -> ()
    test.print(%4) : (f32) -> ()
    test.print(%4) : (f32) -> ()
    test.loop(%1) ({
      %5 = test.const() {value = 1} : () -> i32
      test.print(%2, %5) : (f32, i32) -> ()
    }) : (index) -> ()
    %6 = test.const() {value = 1} : () -> i32
    func.return(%2) : (f32) -> ()
  }
  func.func @g(%0: f32) -> (f32) {
    %1 = test.add(%0, %0) : (f32, f32) -> f32
    func.return(%1) : (f32) -> ()
  }
}
";
    assert_eq!(run_passes(text, &["cse"], true).unwrap(), expected);
}
