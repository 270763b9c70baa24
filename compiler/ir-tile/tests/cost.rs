//! `estimate-cost` on the hand-written kernels of
//! `tests/ir/tile/estimate_cost.tir`: the FLOPs and bytes it derives, read
//! back from the `cost` attribute, and the attribute's round trip.

use std::path::Path;

use tessera_ir::{parse, Attr, FileMap, Module, PassContext, PassRegistry, Registry};
use tessera_ir_tile::{register_dialects, register_passes, Flops, KernelCost, COST_ATTR};

fn estimated() -> Module {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ir/tile/estimate_cost.tir");
    let mut m = parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut registry = Registry::new();
    register_dialects(&mut registry);
    let mut passes = PassRegistry::new();
    register_passes(&mut passes);
    let files = FileMap::new();
    let ctx = PassContext {
        registry: &registry,
        files: &files,
    };
    passes.create("estimate-cost").unwrap().run(&mut m, &ctx).unwrap();
    assert_eq!(registry.verify(&m), vec![]);
    m
}

fn cost(m: &Module, name: &str) -> KernelCost {
    let func = m
        .functions()
        .into_iter()
        .find(|&f| m.func_name(f) == Some(name))
        .unwrap();
    KernelCost::from_attr(m.attr(func, COST_ATTR).expect("kernels get a cost")).expect("the cost reads back")
}

fn terms(t: &[&[&str]]) -> Vec<Vec<String>> {
    t.iter().map(|f| f.iter().map(|s| s.to_string()).collect()).collect()
}

#[test]
fn the_model_counts_products_elementwise_ops_and_loops() {
    let m = estimated();
    let cases = [
        (
            "gemm",
            KernelCost {
                bytes: "2*K*M+2*K*N+8*M*N".into(),
                flops: Some(Flops {
                    per_block: terms(&[&["4096"], &["262144", "cdiv(K, 32)"]]),
                    per_thread: vec![],
                    per_launch: vec![],
                }),
            },
        ),
        (
            "scalar",
            KernelCost {
                bytes: "4*N+8".into(),
                flops: Some(Flops {
                    per_block: vec![],
                    per_thread: terms(&[&["4"], &["3", "M"], &["1", "cdiv(N, 256)"]]),
                    per_launch: vec![],
                }),
            },
        ),
        (
            "unknown",
            KernelCost {
                bytes: "8*N".into(),
                flops: None,
            },
        ),
        (
            "walk",
            KernelCost {
                bytes: "2*K*M+8*M*N".into(),
                flops: Some(Flops {
                    per_block: vec![],
                    per_thread: vec![],
                    per_launch: terms(&[
                        &["524288", "B", "cdiv(K, 64)", "cdiv(M, 64)", "cdiv(N, 64)"],
                        &["4224", "B", "cdiv(M, 64)", "cdiv(N, 64)"],
                    ]),
                }),
            },
        ),
        (
            "twice",
            KernelCost {
                bytes: "0".into(),
                flops: None,
            },
        ),
    ];
    for (name, want) in cases {
        let got = cost(&m, name);
        assert_eq!(got, want, "@{name}");
        assert_eq!(KernelCost::from_attr(&got.to_attr()), Some(got), "@{name} round trip");
    }
}

#[test]
fn malformed_costs_do_not_read() {
    let m = parse(
        r#"module {
  func.func @k() -> () attributes {a = {bytes = 4}, b = {bytes = "4", flops_per_thread = []}, c = {bytes = "4", flops_per_block = [["1"]], flops_per_thread = [[1]]}, d = ["4"], e = {bytes = "4", flops_per_launch = [["1"]]}} {
    func.return() : () -> ()
  }
}"#,
    )
    .unwrap();
    let func = m.functions()[0];
    for key in ["a", "b", "c", "d", "e"] {
        let attr: &Attr = m.attr(func, key).unwrap();
        assert_eq!(KernelCost::from_attr(attr), None, "{key}: {attr}");
    }
}
