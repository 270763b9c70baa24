//! Every valid Tile IR kernel of the corpus (`tests/ir/tile/*.tir` that
//! verifies clean) lowers for every target into IR that passes the full
//! verifier, with no target-dependent `tile` op left; lowering again
//! changes nothing; and the estimates agree with what lowering records.

use std::path::{Path, PathBuf};

use tessera_ir::{parse, print_module, Attr, FileMap, Module, Pass, PassContext, PassRegistry, Registry};
use tessera_ir_tile::{register_dialects, register_passes, Target, TARGET_DEPENDENT};

fn registry() -> Registry {
    let mut r = Registry::new();
    register_dialects(&mut r);
    r
}

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ir/tile");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the tile corpus exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "tir"))
        .collect();
    files.sort();
    files
}

fn run(pass: &str, m: &mut Module, registry: &Registry) -> Result<(), String> {
    let mut passes = PassRegistry::new();
    register_passes(&mut passes);
    let files = FileMap::new();
    let ctx = PassContext {
        registry,
        files: &files,
    };
    let mut p: Box<dyn Pass> = passes.create(pass).expect("the pass is registered");
    p.run(m, &ctx)
        .map_err(|d| d.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; "))
}

#[test]
fn valid_kernels_lower_for_every_target() {
    let registry = registry();
    let mut lowered = 0;
    for path in corpus() {
        let text = std::fs::read_to_string(&path).unwrap();
        if text.contains("// ERROR:") {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let module = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(registry.verify(&module), vec![], "{name} verifies");
        for target in Target::ALL {
            let mut m = module.clone();
            m.attrs.insert("target".into(), Attr::str(target.name()));
            // A module whose Tile IR does not fit the target (shared memory
            // over the limit) is not lowered for it.
            if !registry.verify(&m).is_empty() {
                continue;
            }
            run("lower-tile-to-target", &mut m, &registry).unwrap_or_else(|e| panic!("{name} on {target:?}: {e}"));
            let errors = registry.verify(&m);
            assert!(
                errors.is_empty(),
                "{name} on {target:?}: {:?}\n{}",
                errors.iter().map(|e| &e.message).collect::<Vec<_>>(),
                print_module(&m)
            );
            let left: Vec<String> = m
                .walk()
                .into_iter()
                .map(|op| m.op(op).name.to_string())
                .filter(|n| TARGET_DEPENDENT.contains(&n.as_str()))
                .collect();
            assert!(left.is_empty(), "{name} on {target:?} keeps {left:?}");
            let once = print_module(&m);
            run("lower-tile-to-target", &mut m, &registry).unwrap();
            assert_eq!(
                print_module(&m),
                once,
                "{name} on {target:?}: lowering twice changes the IR"
            );
            for func in m.functions() {
                if m.attr(func, "kind").and_then(Attr::as_str) != Some("kernel") {
                    continue;
                }
                let recorded = m.attr(func, "shared_bytes").cloned();
                run("estimate-resources", &mut m, &registry).unwrap();
                assert_eq!(m.attr(func, "shared_bytes").cloned(), recorded, "{name} on {target:?}");
            }
            lowered += 1;
        }
    }
    assert!(lowered >= 20, "only {lowered} lowerings ran");
}
