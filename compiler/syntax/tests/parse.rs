//! Parser tests with inline expectations: source in, tree (S-expressions)
//! and diagnostics out. `UPDATE_EXPECT=1 cargo test` rewrites the
//! expectations after a deliberate change.

use expect_test::{expect, Expect};
use tessera_base::FileId;

fn check(text: &str, expected: Expect) {
    let parse = tessera_syntax::parse(FileId(0), text);
    let mut out = tessera_syntax::dump(&parse.module);
    for d in &parse.diagnostics {
        let at = d.primary_span().map_or(0, |s| s.span.start);
        out.push_str(&format!("!{} @{at} {}\n", d.code, d.message));
    }
    expected.assert_eq(&out);
}

#[test]
fn precedence_loosest_to_tightest() {
    check(
        "x = a if c else b or d and not e < f .. g | h ^ i & j << k + l * m ** -n\n",
        expect![[r#"
            (= x (if c a (or b (and d (not (< e (.. f (| g (^ h (& i (<< j (+ k (* l (** m (- n)))))))))))))))
        "#]],
    );
}

#[test]
fn power_is_right_associative_and_binds_unary_on_its_right() {
    check(
        "y = -a ** -b ** c\n",
        expect![[r#"
        (= y (- (** a (- (** b c)))))
    "#]],
    );
}

#[test]
fn subscripts_slices_generic_and_launch_brackets() {
    check(
        "y = A[:, k:k+128, ::2]\nz = tshared.alloc[f16](BM, BK, swizzle=\"xor\")\ngemm[grid=(g,), block=(256,), stream=s](a, b)\n",
        expect![[r#"
            (= y (index A (slice _ _ _) (slice k (+ k 128) _) (slice _ _ 2)))
            (= z (call (index (. tshared alloc) f16) BM BK swizzle="xor"))
            (call (index gemm grid=(tuple g) block=(tuple 256) stream=s) a b)
        "#]],
    );
}

#[test]
fn seed_kernel_header_and_signature() {
    check(
        "@kernel tile[(128,)] shared(16_KiB)\ndef f(x: f32[n], out: mut global f32[H * Dh], eps: f32 = 1e-5) -> (f32, i32) effects(random) where n % 8 == 0, n in 1..=4096:\n    pass\n",
        expect![[r#"
            @ kernel (index tile (tuple 128)) (call shared 16384B)
            def f [(x f32[n]) (out mut global f32[(* H Dh)]) (eps f32 = 1e-5)] -> (f32, i32) effects(random) where (== (% n 8) 0) (in n (..= 1 4096))
              pass
        "#]],
    );
}

#[test]
fn statements() {
    check(
        "a, b = b, a\nc: f32 = 0.0\nd //= 2; e ^= 1; f <<= 3\nfor m, n in pairs:\n    if m: continue\n    elif n: break\n    else: pass\nwhile True:\n    assert x, \"msg\"\nwith effects.suspend(\"io\") as s, g:\n    pass\nfrom a.b import c as d, e\nimport x.y as z\n",
        expect![[r#"
            (= (tuple a b) (tuple b a))
            (: c f32 0.0)
            (//= d 2)
            (^= e 1)
            (<<= f 3)
            for (tuple m n) in pairs
              if m
                continue
              elif n
                break
              else
                pass
            while True
              assert x "msg"
            with (call (. effects suspend) "io") as s, g
              pass
            from a.b import c as d, e
            import x.y as z
        "#]],
    );
}

#[test]
fn literals_tuples_lists_dicts() {
    check(
        "v = (1,), (), [0x1F, 0o17, 0b11, 1_000], {\"BM\": [64, 128]}, 4_MiB, 'a\\tb', None, x.T\n",
        expect![[r#"
            (= v (tuple (tuple 1) (tuple) (list 31 15 3 1000) (dict ("BM" (list 64 128))) 4194304B "a\tb" None (. x T)))
        "#]],
    );
}

#[test]
fn comprehensions() {
    check(
        "a = [x * 2 for x in xs if x if not y]\nb = {k: v for k, v in d.items()}\nc = sum(x for x in r for y in x)\nd = (x if c else y for x in a if b)\ne = f((x for x in y), 1)\n",
        expect![[r#"
            (= a (listcomp (* x 2) (for x xs (if x) (if (not y)))))
            (= b (dictcomp k v (for (tuple k v) (call (. d items)))))
            (= c (call sum (genexp x (for x r) (for y x))))
            (= d (genexp (if c x y) (for x a (if b))))
            (= e (call f (genexp x (for x y)) 1))
        "#]],
    );
}

#[test]
fn recovery_keeps_the_rest_of_the_file() {
    check(
        "def f(x):\n    y = x + * 2\n    return y\n\ndef g(:\n    pass\n\nz = (1, , 2)\nw = 3\n",
        expect![[r#"
            def f [(x)]
              (= y (+ x (* <error> 2)))
              return y
            def g []
              pass
            (= z (tuple 1 <error> 2))
            (= w 3)
            !E0030 @22 expected an expression, found `*`
            !E0020 @45 unclosed delimiter `(`
            !E0030 @66 expected an expression or `)`, found `,`
        "#]],
    );
}

#[test]
fn broken_header_keeps_its_body() {
    check(
        "if x ==:\n    y = 1\n    z = 2\n",
        expect![[r#"
            if (== x <error>)
              (= y 1)
              (= z 2)
            !E0030 @7 expected an expression, found `:`
        "#]],
    );
}
