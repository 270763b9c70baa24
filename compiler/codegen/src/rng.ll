; Tessera's counter-based random numbers (spec/runtime.md, Random
; numbers): Philox-4x32-10, and the uniform and normal values made from its
; words, the same operations in the same order as the runtime's
; `tessera_runtime::rng`, so that every target and the host draw the same
; bits. Needs `@tsr_log_f64` of math.ll and a declaration of
; `@llvm.sqrt.f64`.

; The four words of Philox-4x32-10 at counter [lo(index), hi(index), 0, 0]
; under the key [lo(key), hi(key)].
define internal { i32, i32, i32, i32 } @tsr_philox(i64 %key, i64 %index) alwaysinline {
entry:
  %k0i = trunc i64 %key to i32
  %kh = lshr i64 %key, 32
  %k1i = trunc i64 %kh to i32
  %c0i = trunc i64 %index to i32
  %ih = lshr i64 %index, 32
  %c1i = trunc i64 %ih to i32
  br label %round
round:
  %r = phi i32 [ 0, %entry ], [ %r1, %round ]
  %c0 = phi i32 [ %c0i, %entry ], [ %n0, %round ]
  %c1 = phi i32 [ %c1i, %entry ], [ %lo1, %round ]
  %c2 = phi i32 [ 0, %entry ], [ %n2, %round ]
  %c3 = phi i32 [ 0, %entry ], [ %lo0, %round ]
  %k0 = phi i32 [ %k0i, %entry ], [ %b0, %round ]
  %k1 = phi i32 [ %k1i, %entry ], [ %b1, %round ]
  %x0 = zext i32 %c0 to i64
  %p0 = mul i64 %x0, 3528531795
  %x2 = zext i32 %c2 to i64
  %p1 = mul i64 %x2, 3449720151
  %h0w = lshr i64 %p0, 32
  %hi0 = trunc i64 %h0w to i32
  %lo0 = trunc i64 %p0 to i32
  %h1w = lshr i64 %p1, 32
  %hi1 = trunc i64 %h1w to i32
  %lo1 = trunc i64 %p1 to i32
  %t0 = xor i32 %hi1, %c1
  %n0 = xor i32 %t0, %k0
  %t2 = xor i32 %hi0, %c3
  %n2 = xor i32 %t2, %k1
  %b0 = add i32 %k0, 2654435769
  %b1 = add i32 %k1, 3144134277
  %r1 = add i32 %r, 1
  %more = icmp ult i32 %r1, 10
  br i1 %more, label %round, label %done
done:
  %w0 = insertvalue { i32, i32, i32, i32 } poison, i32 %n0, 0
  %w1 = insertvalue { i32, i32, i32, i32 } %w0, i32 %lo1, 1
  %w2 = insertvalue { i32, i32, i32, i32 } %w1, i32 %n2, 2
  %w3 = insertvalue { i32, i32, i32, i32 } %w2, i32 %lo0, 3
  ret { i32, i32, i32, i32 } %w3
}

; Two words as a 53-bit integer in a double: (a << 21) | (b >> 11), exact.
define internal double @tsr_bits53(i32 %a, i32 %b) alwaysinline {
entry:
  %ha = zext i32 %a to i64
  %hs = shl i64 %ha, 21
  %lb = lshr i32 %b, 11
  %lw = zext i32 %lb to i64
  %v = or i64 %hs, %lw
  %d = uitofp i64 %v to double
  ret double %d
}

; The top 24 bits of a word, as a double (exact).
define internal double @tsr_bits24(i32 %a) alwaysinline {
entry:
  %s = lshr i32 %a, 8
  %d = uitofp i32 %s to double
  ret double %d
}

; cos(2 pi t) for t a multiple of 2^-53 in [0, 1): 4t is exact, and so
; are the quadrant n = floor(4t + 1/2) and the rest r = 4t - n in
; [-1/2, 1/2]; with x = r * pi/2, cos(2 pi t) is cos x, -sin x, -cos x or
; sin x for n mod 4 = 0 .. 3, each by its Taylor series (to x^17, x^18).
define internal double @tsr_cos2pi_f64(double %t) {
entry:
  %s = fmul double %t, 4.0
  %sh = fadd double %s, 0.5
  %n = call double @llvm.floor.f64(double %sh)
  %r = fsub double %s, %n
  %x = fmul double %r, 0x3FF921FB54442D18
  %z = fmul double %x, %x
  %s15 = fmul double %z, 0x3CE952C77030AD4A
  %s15a = fadd double %s15, 0xBD6AE7F3E733B81F
  %s13 = fmul double %s15a, %z
  %s13a = fadd double %s13, 0x3DE6124613A86D09
  %s11 = fmul double %s13a, %z
  %s11a = fadd double %s11, 0xBE5AE64567F544E4
  %s9 = fmul double %s11a, %z
  %s9a = fadd double %s9, 0x3EC71DE3A556C734
  %s7 = fmul double %s9a, %z
  %s7a = fadd double %s7, 0xBF2A01A01A01A01A
  %s5 = fmul double %s7a, %z
  %s5a = fadd double %s5, 0x3F81111111111111
  %s3 = fmul double %s5a, %z
  %s3a = fadd double %s3, 0xBFC5555555555555
  %zs = fmul double %z, %s3a
  %xzs = fmul double %x, %zs
  %sin = fadd double %x, %xzs
  %c16 = fmul double %z, 0xBCA6827863B97D97
  %c16a = fadd double %c16, 0x3D2AE7F3E733B81F
  %c14 = fmul double %c16a, %z
  %c14a = fadd double %c14, 0xBDA93974A8C07C9D
  %c12 = fmul double %c14a, %z
  %c12a = fadd double %c12, 0x3E21EED8EFF8D898
  %c10 = fmul double %c12a, %z
  %c10a = fadd double %c10, 0xBE927E4FB7789F5C
  %c8 = fmul double %c10a, %z
  %c8a = fadd double %c8, 0x3EFA01A01A01A01A
  %c6 = fmul double %c8a, %z
  %c6a = fadd double %c6, 0xBF56C16C16C16C17
  %c4 = fmul double %c6a, %z
  %c4a = fadd double %c4, 0x3FA5555555555555
  %c2 = fmul double %c4a, %z
  %c2a = fadd double %c2, 0xBFE0000000000000
  %zc = fmul double %z, %c2a
  %cos = fadd double %zc, 1.0
  %ni = fptosi double %n to i64
  %q = and i64 %ni, 3
  %nsin = fneg double %sin
  %ncos = fneg double %cos
  %odd = trunc i64 %q to i1
  %q2 = and i64 %q, 2
  %neg = icmp ne i64 %q2, 0
  %pos = select i1 %odd, double %sin, double %cos
  %mns = select i1 %odd, double %nsin, double %ncos
  %oddneg = xor i1 %odd, %neg
  %v = select i1 %oddneg, double %mns, double %pos
  ret double %v
}

; sqrt(-2 ln u1) * cos(2 pi u2).
define internal double @tsr_box_muller(double %u1, double %u2) {
entry:
  %l = call double @tsr_log_f64(double %u1)
  %m = fmul double %l, -2.0
  %r = call double @llvm.sqrt.f64(double %m)
  %c = call double @tsr_cos2pi_f64(double %u2)
  %v = fmul double %r, %c
  ret double %v
}

; Element `index` of a uniform stream in [0, 1): (w0 >> 8) * 2^-24.
define internal float @tsr_rng_uniform_f32(i64 %key, i64 %index) alwaysinline {
entry:
  %w = call { i32, i32, i32, i32 } @tsr_philox(i64 %key, i64 %index)
  %w0 = extractvalue { i32, i32, i32, i32 } %w, 0
  %d = call double @tsr_bits24(i32 %w0)
  %u = fmul double %d, 0x3E70000000000000
  %f = fptrunc double %u to float
  ret float %f
}

; ((w0 << 21) | (w1 >> 11)) * 2^-53.
define internal double @tsr_rng_uniform_f64(i64 %key, i64 %index) alwaysinline {
entry:
  %w = call { i32, i32, i32, i32 } @tsr_philox(i64 %key, i64 %index)
  %w0 = extractvalue { i32, i32, i32, i32 } %w, 0
  %w1 = extractvalue { i32, i32, i32, i32 } %w, 1
  %d = call double @tsr_bits53(i32 %w0, i32 %w1)
  %u = fmul double %d, 0x3CA0000000000000
  ret double %u
}

; Box-Muller of u1 = ((w0 >> 8) + 1) * 2^-24, u2 = (w1 >> 8) * 2^-24.
define internal float @tsr_rng_normal_f32(i64 %key, i64 %index) {
entry:
  %w = call { i32, i32, i32, i32 } @tsr_philox(i64 %key, i64 %index)
  %w0 = extractvalue { i32, i32, i32, i32 } %w, 0
  %w1 = extractvalue { i32, i32, i32, i32 } %w, 1
  %a = call double @tsr_bits24(i32 %w0)
  %a1 = fadd double %a, 1.0
  %u1 = fmul double %a1, 0x3E70000000000000
  %b = call double @tsr_bits24(i32 %w1)
  %u2 = fmul double %b, 0x3E70000000000000
  %n = call double @tsr_box_muller(double %u1, double %u2)
  %f = fptrunc double %n to float
  ret float %f
}

; The same with 53-bit u1 from (w0, w1) plus one unit, u2 from (w2, w3).
define internal double @tsr_rng_normal_f64(i64 %key, i64 %index) {
entry:
  %w = call { i32, i32, i32, i32 } @tsr_philox(i64 %key, i64 %index)
  %w0 = extractvalue { i32, i32, i32, i32 } %w, 0
  %w1 = extractvalue { i32, i32, i32, i32 } %w, 1
  %w2 = extractvalue { i32, i32, i32, i32 } %w, 2
  %w3 = extractvalue { i32, i32, i32, i32 } %w, 3
  %a = call double @tsr_bits53(i32 %w0, i32 %w1)
  %a1 = fadd double %a, 1.0
  %u1 = fmul double %a1, 0x3CA0000000000000
  %b = call double @tsr_bits53(i32 %w2, i32 %w3)
  %u2 = fmul double %b, 0x3CA0000000000000
  %n = call double @tsr_box_muller(double %u1, double %u2)
  ret double %n
}

; The first word: uniform values of narrow floats and dropout masks take
; their top bits.
define internal i32 @tsr_rng_word(i64 %key, i64 %index) alwaysinline {
entry:
  %w = call { i32, i32, i32, i32 } @tsr_philox(i64 %key, i64 %index)
  %w0 = extractvalue { i32, i32, i32, i32 } %w, 0
  ret i32 %w0
}
