//! The textual form: printing what was parsed gives the text back byte for
//! byte, errors point at the right place, and no input makes it panic.

use proptest::prelude::*;
use tessera_ir::{parse, print_module, verify_structure, Attr, Builder, Loc, Module, ScalarType, Type};

/// Canonical text using every type and attribute form.
const CANONICAL: &str = r#"module @gemm attributes {target = "sm_90a"} loc("examples/gemm.tsr":0..900) {
  func.func @f(%0: tensor<Mx(Dh*H)xbf16>, %1: tensor<(idx)x(N+1)x(2*K-1)xf32>, %2: memref<128x64xbf16, shared, pad=8, swizzle=128>) -> (tensor<Mx(Dh*H)xbf16>) attributes {effects = [], kind = "operator"} loc("examples/gemm.tsr":120..480) {
    %3 = t.cast(%0) {a = 1, b = -7, c = 1.5, d = -0.0, e = 1e-7, f = inf, g = -inf, h = nan(0x7ff8000000000001), i = true, j = false, k = "s \"q\" \\ \n \u{1}", l = f32, m = tensor<4xindex>, n = [1, [2.0], {}], o = {x = @sym, "y z" = @"quoted name"}, p = [unit], q, r = (f32, !token) -> (), s = !nvptx.mbarrier, t = !tile.frag<16x16xf16, "a>b">, u = ptr<global>, v = memref<f32, tmem>} : (tensor<Mx(Dh*H)xbf16>) -> tensor<Mx(Dh*H)xbf16> loc("examples/gemm.tsr":200..230)
    %4, %5 = t.pair() : () -> (f8e4m3, !token)
    t.for(%3, %3) ({
    ^(%6: index, %7: f8e5m2):
      %8 = t.inner(%6, %4) : (index, f8e4m3) -> i1
      t.yield() : () -> ()
    }, {
      t.yield() : () -> ()
    }) {unroll = 2} : (tensor<Mx(Dh*H)xbf16>, tensor<Mx(Dh*H)xbf16>) -> ()
    %9 = t.scalars() : () -> (f64, f32, f16, bf16, f4e2m1, i8, i16, i32, i64, u8, u16, u32, u64)
    func.return(%3) : (tensor<Mx(Dh*H)xbf16>) -> ()
  }
  func.func @g() -> () {
    %0 = t.fn() : () -> ((f32) -> (f32))
    func.return() : () -> ()
  }
  t.global() {sym = @g} : () -> ()
}
"#;

#[test]
fn canonical_text_round_trips() {
    let text = CANONICAL.replace(
        "%9 = t.scalars() : () -> (f64, f32, f16, bf16, f4e2m1, i8, i16, i32, i64, u8, u16, u32, u64)",
        "%9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21 = t.scalars() : () -> (f64, f32, f16, bf16, f4e2m1, i8, i16, i32, i64, u8, u16, u32, u64)",
    );
    let m = parse(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(verify_structure(&m), vec![]);
    assert_eq!(print_module(&m), text);
}

#[test]
fn names_are_renumbered_and_sugar_is_dropped() {
    let text = r#"
// A comment, and arbitrary value names.
module {
  func.func @f(%arg0: f32, %x: index) -> (f32) {
    %sum = t.add(%arg0, %arg0) : (f32, f32) -> (f32)   // a single result in parentheses
    t.loop(%x) ({
    ^(%i: index):
      t.use(%sum, %i) : (f32, index) -> ()
    }) : (index) -> ()
    func.return(%sum) : (f32) -> () loc(unknown)
  }
}
"#;
    let m = parse(text).unwrap_or_else(|e| panic!("{e}"));
    let expected = "module {
  func.func @f(%0: f32, %1: index) -> (f32) {
    %2 = t.add(%0, %0) : (f32, f32) -> f32
    t.loop(%1) ({
    ^(%3: index):
      t.use(%2, %3) : (f32, index) -> ()
    }) : (index) -> ()
    func.return(%2) : (f32) -> ()
  }
}
";
    assert_eq!(print_module(&m), expected);
    assert_eq!(print_module(&parse(expected).unwrap()), expected);
}

#[test]
fn a_function_like_generic_op_prints_in_the_function_form() {
    let text = r#"module {
  t.kernel() ({
  ^(%a: f32):
    t.done() : () -> ()
  }) {function_type = (f32) -> (), sym_name = "k", tile = 128} : () -> ()
}
"#;
    let m = parse(text).unwrap();
    assert_eq!(
        print_module(&m),
        "module {\n  t.kernel @k(%0: f32) -> () attributes {tile = 128} {\n    t.done() : () -> ()\n  }\n}\n"
    );
}

#[test]
fn built_modules_print_and_parse_back() {
    let mut m = Module::new(Some("built"));
    let t = Type::tensor(["M".into(), 64.into()], ScalarType::F32);
    let f = m.add_function("f", std::slice::from_ref(&t), std::slice::from_ref(&t), Loc::Unknown);
    let entry = m.entry_block(f).unwrap();
    let x = m.block_args(entry)[0];
    let mut b = Builder::at_end(&mut m, entry);
    let y = b
        .op("graph.relu")
        .operand(x)
        .attr("alpha", 0.1)
        .attr("tile_shape", Attr::ints([128, 64]))
        .result(t.clone())
        .loc(Loc::source("a.tsr", tessera_base::Span::new(3, 9)))
        .build_value();
    b.op("func.return").operand(y).build();
    let text = print_module(&m);
    assert_eq!(
        text,
        "module @built {
  func.func @f(%0: tensor<Mx64xf32>) -> (tensor<Mx64xf32>) {
    %1 = graph.relu(%0) {alpha = 0.1, tile_shape = [128, 64]} : (tensor<Mx64xf32>) -> tensor<Mx64xf32> loc(\"a.tsr\":3..9)
    func.return(%1) : (tensor<Mx64xf32>) -> ()
  }
}
"
    );
    assert_eq!(print_module(&parse(&text).unwrap()), text);
}

fn error(text: &str) -> (String, String) {
    let e = parse(text).expect_err("the text is malformed");
    let at = &text[e.span.range()];
    (e.message, at.to_string())
}

#[test]
fn parse_errors_say_what_and_where() {
    let cases: &[(&str, &str, &str)] = &[
        ("modul {}", "expected `module`, found `modul`", "modul"),
        (
            "module { %0 = t.a() : () -> () }",
            "`t.a` defines 1 result but its type lists 0 result types",
            "() -> ()",
        ),
        (
            "module { t.a(%0) : () -> () }",
            "`t.a` has 1 operand but its type lists 0 operand types",
            "() -> ()",
        ),
        ("module { t.a(%x) : (f32) -> () }", "use of undefined value `%x`", "%x"),
        (
            "module { %a = t.a() : () -> f32\n %a = t.b() : () -> f32 }",
            "value `%a` is defined twice",
            "%a",
        ),
        (
            "module { %a = t.a() : () -> f32\n t.b(%a) : (i32) -> () }",
            "`%a` has type `f32`, but the op's type says `i32`",
            "%a",
        ),
        ("module { foo(%a) : () -> () }", "op name `foo` has no dialect", "foo"),
        (
            "module { %0 = t.a() : () -> tensor<xyzxf32> }",
            "expected a dim or an element type, found `xyzxf32`",
            "xyzxf32",
        ),
        ("module { %0 = t.a() : () -> f31 }", "unknown type `f31`", "f31"),
        (
            "module { %0 = t.a() : () -> memref<4xf32, lds> }",
            "unknown memory space `lds`",
            "lds",
        ),
        (
            "module { t.a() {x = \"abc} : () -> () }",
            "unterminated string",
            "\"abc} : () -> () }",
        ),
        (
            "module { t.a() {x = 99999999999999999999} : () -> () }",
            "integer literal out of range",
            "99999999999999999999",
        ),
        (
            "module { t.a() {x = 1, x = 2} : () -> () }",
            "attribute `x` is given twice",
            "x",
        ),
        (
            "module { t.a() : () -> () loc(\"f\":5..2) }",
            "location ends before it starts",
            "5..2",
        ),
        (
            "module { t.a() : () -> () ",
            "expected an op or `}`, found end of input",
            "",
        ),
        (
            "module {} x",
            "expected the end of the input after the module, found `x`",
            "x",
        ),
    ];
    for (text, message, at) in cases {
        assert_eq!(error(text), (message.to_string(), at.to_string()), "for {text:?}");
    }
}

#[test]
fn errors_carry_line_and_column() {
    let e = parse("module {\n  t.a(%q) : (f32) -> ()\n}").unwrap_err();
    assert_eq!((e.line, e.col), (2, 7));
    assert_eq!(e.to_string(), "2:7: use of undefined value `%q`");
}

#[test]
fn nesting_is_bounded() {
    let deep = format!(
        "module {{ t.a() {{x = {}{}}} : () -> () }}",
        "[".repeat(500),
        "]".repeat(500)
    );
    assert!(parse(&deep).unwrap_err().message.starts_with("nesting too deep"));
    let regions = format!(
        "module {{ {} {} }}",
        "t.r() ({ ".repeat(300),
        "}) : () -> () ".repeat(300)
    );
    assert!(parse(&regions).unwrap_err().message.starts_with("nesting too deep"));
}

fn mutate(text: &str, at: usize, kind: u8, byte: u8) -> String {
    let mut bytes = text.as_bytes().to_vec();
    let at = at % (bytes.len() + 1);
    match kind % 3 {
        0 if at < bytes.len() => {
            bytes.remove(at);
        }
        1 => bytes.insert(at, byte),
        _ if at < bytes.len() => bytes[at] = byte,
        _ => {}
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse(&text);
    }

    #[test]
    fn mutations_of_valid_ir_never_panic_and_what_parses_round_trips(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), prop::sample::select(b"%@(){}[]<>:,=x-.\"^!0 aZ/\n".to_vec())), 1..4)
    ) {
        let mut text = CANONICAL.to_string();
        for (at, kind, byte) in edits {
            text = mutate(&text, at, kind, byte);
        }
        if let Ok(m) = parse(&text) {
            let _ = verify_structure(&m);
            let printed = print_module(&m);
            if verify_structure(&m).is_empty() {
                let again = parse(&printed).map(|m| print_module(&m));
                prop_assert_eq!(again.as_deref(), Ok(printed.as_str()));
            }
        }
    }
}

#[test]
fn an_invalid_function_like_op_prints_generically_with_its_own_numbering() {
    let text = r#"module {
  %0 = t.outer() : () -> f32
  t.kernel() ({
  ^(%a: f32):
    t.done(%a) : (f32) -> ()
  }) {function_type = (f32, index) -> (), sym_name = "k"} : () -> ()
}
"#;
    let m = parse(text).unwrap();
    assert_eq!(verify_structure(&m).len(), 1);
    let printed = print_module(&m);
    assert_eq!(
        printed,
        "module {
  %0 = t.outer() : () -> f32
  t.kernel() ({
  ^(%0: f32):
    t.done(%0) : (f32) -> ()
  }) {function_type = (f32, index) -> (), sym_name = \"k\"} : () -> ()
}
"
    );
    assert_eq!(print_module(&parse(&printed).unwrap()), printed);
}

fn arb_dim() -> impl Strategy<Value = tessera_ir::DimExpr> {
    use tessera_ir::DimExpr;
    let leaf = prop_oneof![
        (-3i64..300).prop_map(DimExpr::constant),
        prop::sample::select(vec!["M", "N", "K", "idx", "x1", "Dh", "f32"]).prop_map(DimExpr::sym),
    ];
    leaf.prop_recursive(3, 8, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| a.add(&b)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| a.mul(&b)),
            (inner.clone(), inner).prop_map(|(a, b)| a.sub(&b)),
        ]
    })
}

fn arb_type() -> impl Strategy<Value = Type> {
    use tessera_ir::MemSpace;
    let scalar = prop::sample::select(ScalarType::ALL.to_vec());
    let space = prop::sample::select(MemSpace::ALL.to_vec());
    let leaf = prop_oneof![
        scalar.clone().prop_map(Type::Scalar),
        (prop::collection::vec(arb_dim(), 0..4), scalar.clone()).prop_map(|(d, s)| Type::tensor(d, s)),
        (prop::collection::vec(arb_dim(), 0..3), scalar, space.clone(), 0i64..300).prop_map(|(d, s, sp, sw)| {
            let mut t = Type::memref(d, s, sp);
            if let Type::MemRef { layout, .. } = &mut t {
                layout.insert("swizzle".into(), Attr::Int(sw));
            }
            t
        }),
        space.prop_map(Type::Ptr),
        Just(Type::Token),
        Just(Type::opaque("tile", "frag<16x16xf16, \"q>\">")),
    ];
    leaf.prop_recursive(2, 6, 3, |inner| {
        (
            prop::collection::vec(inner.clone(), 0..3),
            prop::collection::vec(inner, 0..2),
        )
            .prop_map(|(i, r)| Type::function(i, r))
    })
}

fn arb_attr() -> impl Strategy<Value = Attr> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(Attr::Int),
        any::<u64>().prop_map(|bits| Attr::Float(f64::from_bits(bits))),
        any::<f64>().prop_map(Attr::Float),
        any::<bool>().prop_map(Attr::Bool),
        any::<String>().prop_map(Attr::Str),
        any::<String>().prop_map(Attr::Symbol),
        Just(Attr::Unit),
        arb_type().prop_map(Attr::Type),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Attr::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..4).prop_map(Attr::Dict),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every attribute and type prints to text that parses back to the same
    /// value (floats to the same bits), and the text is then stable.
    #[test]
    fn attributes_and_types_round_trip_exactly(attrs in prop::collection::btree_map(any::<String>(), arb_attr(), 1..4), ty in arb_type()) {
        let mut m = Module::new(Some("p"));
        let body = m.body();
        let mut b = Builder::at_end(&mut m, body);
        let mut op = b.op("t.op").result(ty.clone());
        for (k, v) in &attrs {
            op = op.attr(k, v.clone());
        }
        let id = op.build();
        prop_assert!(verify_structure(&m).is_empty());
        let text = print_module(&m);
        let parsed = parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let op2 = parsed.block_ops(parsed.body())[0];
        prop_assert_eq!(&parsed.op(op2).attrs, &m.op(id).attrs);
        prop_assert_eq!(parsed.value_type(parsed.result(op2, 0)), &ty);
        prop_assert_eq!(print_module(&parsed), text);
    }
}
