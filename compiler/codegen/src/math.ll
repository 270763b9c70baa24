; Tessera's own transcendental functions, the same bits on every target:
; plain IEEE adds, multiplies, divides and fused multiply-adds (llvm.fma,
; rounded once on every target; never a contraction the backend chooses),
; no target library, with range reduction by powers of two.

; exp in f32 arithmetic (within 2 ulp): exp(x) = 2^k * exp(r), k the
; nearest integer to x*log2(e), r = (x - k*C1) - k*C2 with C1 + C2 = ln 2
; and C1 short (9 bits), so k*C1 and the first subtraction are exact.
define internal float @tsr_exp_f32(float %x) alwaysinline {
entry:
  %isnan = fcmp uno float %x, %x
  %big = fcmp ogt float %x, 0x40562E4300000000
  %small = fcmp olt float %x, 0xC05A000000000000
  %t = fmul float %x, 0x3FF7154760000000
  %k = call float @llvm.roundeven.f32(float %t)
  %nk = fneg float %k
  %r0 = call float @llvm.fma.f32(float %nk, float 0x3FE6300000000000, float %x)
  %r = call float @llvm.fma.f32(float %nk, float 0xBF2BD01060000000, float %r0)
  %y = call float @tsr_exp_reduced_f32(float %r, float %k)
  %z = select i1 %small, float 0.0, float %y
  %o = select i1 %big, float 0x7FF0000000000000, float %z
  %n = select i1 %isnan, float %x, float %o
  ret float %n
}

; 2^x in f32 arithmetic: 2^x = 2^k * exp(r), k the nearest integer to x,
; r = (x - k) * ln 2 (x - k is exact, |r| <= ln2/2).
define internal float @tsr_exp2_f32(float %x) alwaysinline {
entry:
  %isnan = fcmp uno float %x, %x
  %big = fcmp ogt float %x, 128.0
  %small = fcmp olt float %x, -150.0
  %k = call float @llvm.roundeven.f32(float %x)
  %f = fsub float %x, %k
  %r = fmul float %f, 0x3FE62E4300000000
  %y = call float @tsr_exp_reduced_f32(float %r, float %k)
  %z = select i1 %small, float 0.0, float %y
  %o = select i1 %big, float 0x7FF0000000000000, float %z
  %n = select i1 %isnan, float %x, float %o
  ret float %n
}

; 2^k * exp(r) for |r| <= ln2/2 and an integer k in [-150, 128]:
; exp(r) = 1 + r + r^2 * P(r), P Cephes' degree-5 minimax polynomial in
; Horner's form, each step one fused multiply-add; 2^k is applied as two
; exact power-of-two factors, so a subnormal result is rounded once.
define internal float @tsr_exp_reduced_f32(float %r, float %k) alwaysinline {
entry:
  %p4 = call float @llvm.fma.f32(float %r, float 0x3F2A0D2CE0000000, float 0x3F56E879C0000000)
  %p3 = call float @llvm.fma.f32(float %r, float %p4, float 0x3F81112100000000)
  %p2 = call float @llvm.fma.f32(float %r, float %p3, float 0x3FA5553820000000)
  %p1 = call float @llvm.fma.f32(float %r, float %p2, float 0x3FC5555540000000)
  %p0 = call float @llvm.fma.f32(float %r, float %p1, float 0x3FE0000000000000)
  %r2 = fmul float %r, %r
  %s1 = call float @llvm.fma.f32(float %p0, float %r2, float %r)
  %y = fadd float %s1, 1.0
  %ki = fptosi float %k to i32
  %k1 = ashr i32 %ki, 1
  %k2 = sub i32 %ki, %k1
  %e1 = add i32 %k1, 127
  %e2 = add i32 %k2, 127
  %b1 = shl i32 %e1, 23
  %b2 = shl i32 %e2, 23
  %f1 = bitcast i32 %b1 to float
  %f2 = bitcast i32 %b2 to float
  %y1 = fmul float %y, %f1
  %y2 = fmul float %y1, %f2
  ret float %y2
}

define internal float @tsr_log_f32(float %x) alwaysinline {
entry:
  %d = fpext float %x to double
  %r = call double @tsr_log_f64(double %d)
  %f = fptrunc double %r to float
  ret float %f
}

define internal float @tsr_tanh_f32(float %x) alwaysinline {
entry:
  %d = fpext float %x to double
  %r = call double @tsr_tanh_f64(double %d)
  %f = fptrunc double %r to float
  ret float %f
}

; exp(x) = 2^k * exp(r), r = x - k*ln2 in [-ln2/2, ln2/2].
define internal double @tsr_exp_f64(double %x) {
entry:
  %isnan = fcmp uno double %x, %x
  br i1 %isnan, label %nan, label %chk_hi
nan:
  ret double %x
chk_hi:
  %big = fcmp ogt double %x, 709.782712893384
  br i1 %big, label %inf, label %chk_lo
inf:
  ret double 0x7FF0000000000000
chk_lo:
  %small = fcmp olt double %x, -745.1332191019412
  br i1 %small, label %zero, label %body
zero:
  ret double 0.0
body:
  %t = fmul double %x, 0x3FF71547652B82FE
  %kr = fadd double %t, 0.5
  %kf = call double @llvm.floor.f64(double %kr)
  %hi = fmul double %kf, 0x3FE62E42FEE00000
  %lo = fmul double %kf, 0x3DEA39EF35793C76
  %r0 = fsub double %x, %hi
  %r = fsub double %r0, %lo
  %y = call double @tsr_exp_reduced_f64(double %r, double %kf)
  ret double %y
}

; 2^x = 2^k * exp(r), k the nearest integer to x, r = (x - k) * ln 2
; (x - k is exact, |r| <= ln2/2).
define internal double @tsr_exp2_f64(double %x) {
entry:
  %isnan = fcmp uno double %x, %x
  br i1 %isnan, label %nan, label %chk_hi
nan:
  ret double %x
chk_hi:
  %big = fcmp ogt double %x, 1024.0
  br i1 %big, label %inf, label %chk_lo
inf:
  ret double 0x7FF0000000000000
chk_lo:
  %small = fcmp olt double %x, -1075.0
  br i1 %small, label %zero, label %body
zero:
  ret double 0.0
body:
  %kr = fadd double %x, 0.5
  %kf = call double @llvm.floor.f64(double %kr)
  %f = fsub double %x, %kf
  %r = fmul double %f, 0x3FE62E42FEFA39EF
  %y = call double @tsr_exp_reduced_f64(double %r, double %kf)
  ret double %y
}

; 2^k * exp(r) for |r| <= ln2/2 and an integer k in [-1075, 1024]: exp(r)
; by a degree-13 Taylor polynomial in Horner form.
define internal double @tsr_exp_reduced_f64(double %r, double %kf) {
entry:
  %p13 = fmul double %r, 0x3DE6124613A86D09
  %p12 = fadd double %p13, 0x3E21EED8EFF8D898
  %q12 = fmul double %r, %p12
  %p11 = fadd double %q12, 0x3E5AE64567F544E4
  %q11 = fmul double %r, %p11
  %p10 = fadd double %q11, 0x3E927E4FB7789F5C
  %q10 = fmul double %r, %p10
  %p9 = fadd double %q10, 0x3EC71DE3A556C734
  %q9 = fmul double %r, %p9
  %p8 = fadd double %q9, 0x3EFA01A01A01A01A
  %q8 = fmul double %r, %p8
  %p7 = fadd double %q8, 0x3F2A01A01A01A01A
  %q7 = fmul double %r, %p7
  %p6 = fadd double %q7, 0x3F56C16C16C16C17
  %q6 = fmul double %r, %p6
  %p5 = fadd double %q6, 0x3F81111111111111
  %q5 = fmul double %r, %p5
  %p4 = fadd double %q5, 0x3FA5555555555555
  %q4 = fmul double %r, %p4
  %p3 = fadd double %q4, 0x3FC5555555555555
  %q3 = fmul double %r, %p3
  %p2 = fadd double %q3, 0x3FE0000000000000
  %q2 = fmul double %r, %p2
  %p1 = fadd double %q2, 1.0
  %q1 = fmul double %r, %p1
  %p0 = fadd double %q1, 1.0
  %k = fptosi double %kf to i64
  ; 2^k in two steps so that k down to -1074 and up to 1024 stay exact.
  %k1 = sdiv i64 %k, 2
  %k2 = sub i64 %k, %k1
  %e1 = add i64 %k1, 1023
  %e2 = add i64 %k2, 1023
  %b1 = shl i64 %e1, 52
  %b2 = shl i64 %e2, 52
  %s1 = bitcast i64 %b1 to double
  %s2 = bitcast i64 %b2 to double
  %y1 = fmul double %p0, %s1
  %y = fmul double %y1, %s2
  ret double %y
}

; erf in f64. Below |x| = 1: x * P(x^2), P Maclaurin's series of
; erf(x)/x to its z^21 term (coefficients (2/sqrt(pi)) (-1)^n / (n! (2n+1)),
; rounded from 60 digits) in Horner form; from 1 to 6: 1 - erfc(|x|), signed,
; with erfc(a) = exp(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + ...))))
; evaluated from its 200th level up (within 2e-16 of erfc from 1 on).
; |x| >= 6 gives +-1 (erfc(6) is below half an ulp of 1).
define internal double @tsr_erf_f64(double %x) {
entry:
  %isnan = fcmp uno double %x, %x
  br i1 %isnan, label %nan, label %range
nan:
  ret double %x
range:
  %ax = call double @llvm.fabs.f64(double %x)
  %big = fcmp oge double %ax, 6.0
  br i1 %big, label %one, label %split
one:
  %unit = call double @llvm.copysign.f64(double 1.0, double %x)
  ret double %unit
split:
  %tail = fcmp oge double %ax, 1.0
  br i1 %tail, label %fraction, label %series
series:
  %z = fmul double %x, %x
  %h21 = fmul double %z, 0xBB83676FC48C133C
  %a20 = fadd double %h21, 0x3BCAB5CC31489F29
  %h20 = fmul double %a20, %z
  %a19 = fadd double %h20, 0xBC118CC8A061C479
  %h19 = fmul double %a19, %z
  %a18 = fadd double %h19, 0x3C55F7919BC67B8C
  %h18 = fmul double %a18, %z
  %a17 = fadd double %h18, 0xBC9A2007AF3447F6
  %h17 = fmul double %a17, %z
  %a16 = fadd double %h17, 0x3CDD70B3537F4765
  %h16 = fmul double %a16, %z
  %a15 = fadd double %h16, 0xBD1F56F071A885CF
  %h15 = fmul double %a15, %z
  %a14 = fadd double %h15, 0x3D5F683AE4A97007
  %h14 = fmul double %a14, %z
  %a13 = fadd double %h14, 0xBD9D8453CB0C46EA
  %h13 = fmul double %a13, %z
  %a12 = fadd double %h13, 0x3DD9E6AD5E55A730
  %h12 = fmul double %a12, %z
  %a11 = fadd double %h12, 0xBE151D7181C5D36D
  %h11 = fmul double %a11, %z
  %a10 = fadd double %h11, 0x3E4FCC5720624C1C
  %h10 = fmul double %a10, %z
  %a9 = fadd double %h10, 0xBE85F742EC43E71A
  %h9 = fmul double %a9, %z
  %a8 = fadd double %h9, 0x3EBB9E6C9DC651A3
  %h8 = fmul double %a8, %z
  %a7 = fadd double %h8, 0xBEEF4D25C3E0C2EB
  %h7 = fmul double %a7, %z
  %a6 = fadd double %h7, 0x3F1F9A326F9B89B7
  %h6 = fmul double %a6, %z
  %a5 = fadd double %h6, 0xBF4C02DB40040B86
  %h5 = fmul double %a5, %z
  %a4 = fadd double %h5, 0x3F7565BCD0E6A53F
  %h4 = fmul double %a4, %z
  %a3 = fadd double %h4, 0xBF9B82CE31288B51
  %h3 = fmul double %a3, %z
  %a2 = fadd double %h3, 0x3FBCE2F21A042BE2
  %h2 = fmul double %a2, %z
  %a1 = fadd double %h2, 0xBFD812746B0379E7
  %h1 = fmul double %a1, %z
  %a0 = fadd double %h1, 0x3FF20DD750429B6D
  %r = fmul double %x, %a0
  ret double %r
fraction:
  %sq = fmul double %ax, %ax
  %nsq = fneg double %sq
  %e = call double @tsr_exp_f64(double %nsq)
  br label %level
level:
  %k = phi double [ 200.0, %fraction ], [ %k1, %level ]
  %f = phi double [ %ax, %fraction ], [ %f1, %level ]
  %half = fmul double %k, 0.5
  %q = fdiv double %half, %f
  %f1 = fadd double %ax, %q
  %k1 = fsub double %k, 1.0
  %more = fcmp oge double %k1, 1.0
  br i1 %more, label %level, label %complement
complement:
  %es = fmul double %e, 0x3FE20DD750429B6D
  %erfc = fdiv double %es, %f1
  %m = fsub double 1.0, %erfc
  %signed = call double @llvm.copysign.f64(double %m, double %x)
  ret double %signed
}

; erf of an f32 in f64, rounded once: x * P(x^2) with P Maclaurin's series
; of erf(x)/x to its z^63 term (as in @tsr_erf_f64) in Horner form, whose
; terms stay below 1e6 for |x| < 4 (an error near 1e-10, far below an f32
; ulp), with no division; +-1 from |x| >= 4, where erfc(x) is below half an
; f32 ulp of 1.
define internal float @tsr_erf_f32(float %x) {
entry:
  %ax = call float @llvm.fabs.f32(float %x)
  %big = fcmp oge float %ax, 4.0
  br i1 %big, label %one, label %body
one:
  %d1 = fpext float %x to double
  %unit = call double @llvm.copysign.f64(double 1.0, double %d1)
  %u = fptrunc double %unit to float
  ret float %u
body:
  %d = fpext float %x to double
  %z = fmul double %d, %d
  %h63 = fmul double %z, 0xAD6241F07B0FBD03
  %a62 = fadd double %h63, 0x2DC242860BF90D63
  %h62 = fmul double %a62, %z
  %a61 = fadd double %h62, 0xAE21FA13F82520A1
  %h61 = fmul double %a61, %z
  %a60 = fadd double %h61, 0x2E816ADB7AE6E190
  %h60 = fmul double %a60, %z
  %a59 = fadd double %h60, 0xAEE09A6F11CBAF7D
  %h59 = fmul double %a59, %z
  %a58 = fadd double %h59, 0x2F3F22B2E21FAC94
  %h58 = fmul double %a58, %z
  %a57 = fadd double %h58, 0xAF9CB5122654FEC5
  %h57 = fmul double %a57, %z
  %a56 = fadd double %h57, 0x2FFA051C97A0EEB5
  %h56 = fmul double %a56, %z
  %a55 = fadd double %h56, 0xB0572D7D814CC22F
  %h55 = fmul double %a55, %z
  %a54 = fadd double %h55, 0x30B448A78F48CA16
  %h54 = fmul double %a54, %z
  %a53 = fadd double %h54, 0xB1116F321D52F9A8
  %h53 = fmul double %a53, %z
  %a52 = fadd double %h53, 0x316D6CF89F0E1A40
  %h52 = fmul double %a52, %z
  %a51 = fadd double %h52, 0xB1C85F626E9D8B7D
  %h51 = fmul double %a51, %z
  %a50 = fadd double %h51, 0x3223CE771495CFD0
  %h50 = fmul double %a50, %z
  %a49 = fadd double %h50, 0xB27F92A784DAC4F6
  %h49 = fmul double %a49, %z
  %a48 = fadd double %h49, 0x32D8ABE02DF55730
  %h48 = fmul double %a48, %z
  %a47 = fadd double %h48, 0xB332E4A191ADBB5B
  %h47 = fmul double %a47, %z
  %a46 = fadd double %h47, 0x338C5892686A9777
  %h46 = fmul double %a46, %z
  %a45 = fadd double %h46, 0xB3E4D24A7D0CE3D4
  %h45 = fmul double %a45, %z
  %a44 = fadd double %h45, 0x343DF02A3457D653
  %h44 = fmul double %a44, %z
  %a43 = fadd double %h44, 0xB4950E3E0CE7B515
  %h43 = fmul double %a43, %z
  %a42 = fadd double %h43, 0x34ECF590A2E0F10D
  %h42 = fmul double %a42, %z
  %a41 = fadd double %h42, 0xB5437662752CF547
  %h41 = fmul double %a41, %z
  %a40 = fadd double %h41, 0x35998D4D5028C0D7
  %h40 = fmul double %a40, %z
  %a39 = fadd double %h40, 0xB5F05FD0BBDFC959
  %h39 = fmul double %a39, %z
  %a38 = fadd double %h39, 0x364479786E3E5E92
  %h38 = fmul double %a38, %z
  %a37 = fadd double %h38, 0xB698F639DD720316
  %h37 = fmul double %a37, %z
  %a36 = fadd double %h37, 0x36EDA7210371D95D
  %h36 = fmul double %a36, %z
  %a35 = fadd double %h36, 0xB741264AC150F151
  %h35 = fmul double %a35, %z
  %a34 = fadd double %h35, 0x37934D111E701528
  %h34 = fmul double %a34, %z
  %a33 = fadd double %h34, 0xB7E51E98B3B1916B
  %h33 = fmul double %a33, %z
  %a32 = fadd double %h33, 0x3836731BAC4D9CEA
  %h32 = fmul double %a32, %z
  %a31 = fadd double %h32, 0xB887298E545013AC
  %h31 = fmul double %a31, %z
  %a30 = fadd double %h31, 0x38D72C97F9DD3B8D
  %h30 = fmul double %a30, %z
  %a29 = fadd double %h30, 0xB9267657A57148A3
  %h29 = fmul double %a29, %z
  %a28 = fadd double %h29, 0x397512193BE51298
  %h28 = fmul double %a28, %z
  %a27 = fadd double %h28, 0xB9C31B7776E54127
  %h27 = fmul double %a27, %z
  %a26 = fadd double %h27, 0x3A10BAEADDB047B0
  %h26 = fmul double %a26, %z
  %a25 = fadd double %h26, 0xBA5C40ABFF27CE65
  %h25 = fmul double %a25, %z
  %a24 = fadd double %h25, 0x3AA6F928977A0028
  %h24 = fmul double %a24, %z
  %a23 = fadd double %h24, 0xBAF1F690C2B2753A
  %h23 = fmul double %a23, %z
  %a22 = fadd double %h23, 0x3B3AF83C2FB19FA6
  %h22 = fmul double %a22, %z
  %a21 = fadd double %h22, 0xBB83676FC48C133C
  %h21 = fmul double %a21, %z
  %a20 = fadd double %h21, 0x3BCAB5CC31489F29
  %h20 = fmul double %a20, %z
  %a19 = fadd double %h20, 0xBC118CC8A061C479
  %h19 = fmul double %a19, %z
  %a18 = fadd double %h19, 0x3C55F7919BC67B8C
  %h18 = fmul double %a18, %z
  %a17 = fadd double %h18, 0xBC9A2007AF3447F6
  %h17 = fmul double %a17, %z
  %a16 = fadd double %h17, 0x3CDD70B3537F4765
  %h16 = fmul double %a16, %z
  %a15 = fadd double %h16, 0xBD1F56F071A885CF
  %h15 = fmul double %a15, %z
  %a14 = fadd double %h15, 0x3D5F683AE4A97007
  %h14 = fmul double %a14, %z
  %a13 = fadd double %h14, 0xBD9D8453CB0C46EA
  %h13 = fmul double %a13, %z
  %a12 = fadd double %h13, 0x3DD9E6AD5E55A730
  %h12 = fmul double %a12, %z
  %a11 = fadd double %h12, 0xBE151D7181C5D36D
  %h11 = fmul double %a11, %z
  %a10 = fadd double %h11, 0x3E4FCC5720624C1C
  %h10 = fmul double %a10, %z
  %a9 = fadd double %h10, 0xBE85F742EC43E71A
  %h9 = fmul double %a9, %z
  %a8 = fadd double %h9, 0x3EBB9E6C9DC651A3
  %h8 = fmul double %a8, %z
  %a7 = fadd double %h8, 0xBEEF4D25C3E0C2EB
  %h7 = fmul double %a7, %z
  %a6 = fadd double %h7, 0x3F1F9A326F9B89B7
  %h6 = fmul double %a6, %z
  %a5 = fadd double %h6, 0xBF4C02DB40040B86
  %h5 = fmul double %a5, %z
  %a4 = fadd double %h5, 0x3F7565BCD0E6A53F
  %h4 = fmul double %a4, %z
  %a3 = fadd double %h4, 0xBF9B82CE31288B51
  %h3 = fmul double %a3, %z
  %a2 = fadd double %h3, 0x3FBCE2F21A042BE2
  %h2 = fmul double %a2, %z
  %a1 = fadd double %h2, 0xBFD812746B0379E7
  %h1 = fmul double %a1, %z
  %a0 = fadd double %h1, 0x3FF20DD750429B6D
  %r = fmul double %d, %a0
  %f = fptrunc double %r to float
  ret float %f
}

; log(x) = k*ln2 + log(m), m in [sqrt(1/2), sqrt(2)); log(m) = 2*atanh(s),
; s = (m-1)/(m+1), by its odd series to s^21.
define internal double @tsr_log_f64(double %x) {
entry:
  %isnan = fcmp uno double %x, %x
  br i1 %isnan, label %nan, label %chk_neg
nan:
  ret double %x
chk_neg:
  %neg = fcmp olt double %x, 0.0
  br i1 %neg, label %qnan, label %chk_zero
qnan:
  ret double 0x7FF8000000000000
chk_zero:
  %z = fcmp oeq double %x, 0.0
  br i1 %z, label %ninf, label %chk_inf
ninf:
  ret double 0xFFF0000000000000
chk_inf:
  %isinf = fcmp oeq double %x, 0x7FF0000000000000
  br i1 %isinf, label %pinf, label %body
pinf:
  ret double %x
body:
  ; Subnormals: scale up by 2^54 first.
  %sub = fcmp olt double %x, 0x0010000000000000
  %xs = fmul double %x, 0x4350000000000000
  %xx = select i1 %sub, double %xs, double %x
  %adj = select i1 %sub, i64 -54, i64 0
  %bits = bitcast double %xx to i64
  %eb = lshr i64 %bits, 52
  %e = sub i64 %eb, 1023
  %mbits = and i64 %bits, 4503599627370495
  %mone = or i64 %mbits, 4607182418800017408
  %m0 = bitcast i64 %mone to double
  %big = fcmp oge double %m0, 0x3FF6A09E667F3BCD
  %mh = fmul double %m0, 0.5
  %m = select i1 %big, double %mh, double %m0
  %e1 = add i64 %e, %adj
  %e2 = add i64 %e1, 1
  %ek = select i1 %big, i64 %e2, i64 %e1
  %num = fsub double %m, 1.0
  %den = fadd double %m, 1.0
  %s = fdiv double %num, %den
  %s2 = fmul double %s, %s
  %c21 = fmul double %s2, 0x3FA8618618618618
  %c19 = fadd double %c21, 0x3FAAF286BCA1AF28
  %d19 = fmul double %s2, %c19
  %c17 = fadd double %d19, 0x3FAE1E1E1E1E1E1E
  %d17 = fmul double %s2, %c17
  %c15 = fadd double %d17, 0x3FB1111111111111
  %d15 = fmul double %s2, %c15
  %c13 = fadd double %d15, 0x3FB3B13B13B13B14
  %d13 = fmul double %s2, %c13
  %c11 = fadd double %d13, 0x3FB745D1745D1746
  %d11 = fmul double %s2, %c11
  %c9 = fadd double %d11, 0x3FBC71C71C71C71C
  %d9 = fmul double %s2, %c9
  %c7 = fadd double %d9, 0x3FC2492492492492
  %d7 = fmul double %s2, %c7
  %c5 = fadd double %d7, 0x3FC999999999999A
  %d5 = fmul double %s2, %c5
  %c3 = fadd double %d5, 0x3FD5555555555555
  %d3 = fmul double %s2, %c3
  %c1 = fadd double %d3, 1.0
  %ps = fmul double %s, %c1
  %lm = fmul double %ps, 2.0
  %kf = sitofp i64 %ek to double
  %khi = fmul double %kf, 0x3FE62E42FEE00000
  %klo = fmul double %kf, 0x3DEA39EF35793C76
  %r1 = fadd double %lm, %klo
  %r = fadd double %r1, %khi
  ret double %r
}

; tanh(x) = sign(x) * (1 - 2/(exp(2|x|) + 1)); |x| > 20 gives +-1. Below
; |x| = 1/8, where that difference cancels, the Taylor series to x^19
; (whose next term is below 2^-60 of the sum there).
define internal double @tsr_tanh_f64(double %x) {
entry:
  %a = call double @llvm.fabs.f64(double %x)
  %sat = fcmp ogt double %a, 20.0
  %tiny = fcmp olt double %a, 0.125
  %a2 = fmul double %a, 2.0
  %e = call double @tsr_exp_f64(double %a2)
  %d = fadd double %e, 1.0
  %q = fdiv double 2.0, %d
  %t = fsub double 1.0, %q
  %ts = select i1 %sat, double 1.0, double %t
  %r = call double @llvm.copysign.f64(double %ts, double %x)
  %s = fmul double %x, %x
  %t9 = fmul double %s, 0xBF2F57D7734D1664
  %u8 = fadd double %t9, 0x3F43558248036744
  %t8 = fmul double %s, %u8
  %u7 = fadd double %t8, 0xBF57DA36452B75E3
  %t7 = fmul double %s, %u7
  %u6 = fadd double %t7, 0x3F6D6D3D0E157DE0
  %t6 = fmul double %s, %u6
  %u5 = fadd double %t6, 0xBF8226E355E6C23D
  %t5 = fmul double %s, %u5
  %u4 = fadd double %t5, 0x3F9664F4882C10FA
  %t4 = fmul double %s, %u4
  %u3 = fadd double %t4, 0xBFABA1BA1BA1BA1C
  %t3 = fmul double %s, %u3
  %u2 = fadd double %t3, 0x3FC1111111111111
  %t2 = fmul double %s, %u2
  %u1 = fadd double %t2, 0xBFD5555555555555
  %t1 = fmul double %s, %u1
  %u0 = fadd double %t1, 1.0
  %series = fmul double %x, %u0
  %out = select i1 %tiny, double %series, double %r
  ret double %out
}

; sin(r) and cos(r) for |r| <= pi/4 by fdlibm's kernel polynomials; the
; quadrant (%k + %phase) mod 4 picks one and its sign.
define internal double @tsr_trig_poly(double %r, i64 %k, i64 %phase) {
entry:
  %z = fmul double %r, %r
  %s5 = fmul double %z, 0x3DE5D93A5ACFD57C
  %s4 = fadd double %s5, 0xBE5AE5E68A2B9CEB
  %s4z = fmul double %z, %s4
  %s3 = fadd double %s4z, 0x3EC71DE357B1FE7D
  %s3z = fmul double %z, %s3
  %s2 = fadd double %s3z, 0xBF2A01A019C161D5
  %s2z = fmul double %z, %s2
  %s1 = fadd double %s2z, 0x3F8111111110F8A6
  %s1z = fmul double %z, %s1
  %s0 = fadd double %s1z, 0xBFC5555555555549
  %v = fmul double %z, %r
  %vs = fmul double %v, %s0
  %sin = fadd double %r, %vs
  %c6 = fmul double %z, 0xBDA8FAE9BE8838D4
  %c5 = fadd double %c6, 0x3E21EE9EBDB4B1C4
  %c5z = fmul double %z, %c5
  %c4 = fadd double %c5z, 0xBE927E4F809C52AD
  %c4z = fmul double %z, %c4
  %c3 = fadd double %c4z, 0x3EFA01A019CB1590
  %c3z = fmul double %z, %c3
  %c2 = fadd double %c3z, 0xBF56C16C16C15177
  %c2z = fmul double %z, %c2
  %c1 = fadd double %c2z, 0x3FA555555555554C
  %rc = fmul double %z, %c1
  %hz = fmul double %z, 0.5
  %w = fsub double 1.0, %hz
  %w1 = fsub double 1.0, %w
  %w2 = fsub double %w1, %hz
  %zr = fmul double %z, %rc
  %w3 = fadd double %w2, %zr
  %cos = fadd double %w, %w3
  %kp = add i64 %k, %phase
  %q = and i64 %kp, 3
  %odd = trunc i64 %q to i1
  %qh = lshr i64 %q, 1
  %neg = trunc i64 %qh to i1
  %pick = select i1 %odd, double %cos, double %sin
  %negpick = fneg double %pick
  %signed = select i1 %neg, double %negpick, double %pick
  ret double %signed
}

; sin (%phase 0) and cos (%phase 1) in f64 (within 2 ulp for |x| below
; 2^20 * pi/2; larger arguments keep fewer bits): x = k*(pi/2) + r, k the
; nearest integer to x*(2/pi) and |r| <= pi/4, r by three-part Cody-Waite
; reduction (P1 and P2 have 33 bits, so k*P1 and k*P2 are exact for
; |k| < 2^20); sin(r) and cos(r) by fdlibm's kernel polynomials, and the
; quadrant (k + %phase) mod 4 picks one and its sign. |x| < 2^-27 gives x
; (sin) or 1 (cos); an infinite or NaN argument gives NaN.
define internal double @tsr_trig_f64(double %x, i64 %phase) {
entry:
  %a = call double @llvm.fabs.f64(double %x)
  %finite = fcmp olt double %a, 0x7FF0000000000000
  %tiny = fcmp olt double %a, 0x3E40000000000000
  %t = fmul double %x, 0x3FE45F306DC9C883
  %th = fadd double %t, 0.5
  %k0 = call double @llvm.floor.f64(double %th)
  %inrange = fcmp olt double %a, 0x4330000000000000
  %k = select i1 %inrange, double %k0, double 0.0
  %h1 = fmul double %k, 0x3FF921FB54400000
  %r1 = fsub double %x, %h1
  %h2 = fmul double %k, 0x3DD0B4611A600000
  %r2 = fsub double %r1, %h2
  %h3 = fmul double %k, 0x3BA3198A2E037073
  %r = fsub double %r2, %h3
  %ki = fptosi double %k to i64
  %signed = call double @tsr_trig_poly(double %r, i64 %ki, i64 %phase)
  %issin = icmp eq i64 %phase, 0
  %small = select i1 %issin, double %x, double 1.0
  %res = select i1 %tiny, double %small, double %signed
  %nan = fsub double %x, %x
  %out = select i1 %finite, double %res, double %nan
  ret double %out
}

; sin (%phase 0) and cos (%phase 1) of a float of any size, by the
; Payne-Hanek reduction: |x| = m * 2^s with m the 24-bit significand, and
; x * (2/pi) mod 4 is m times the 96 bits of 2/pi from bit s - 1 on (the
; bits before contribute multiples of 4; those after, less than 2^-71),
; scaled by 2^-94: an exact 120-bit product whose top bits are the quadrant
; and whose low 94 the fraction f, taken to [-1/2, 1/2] and normalized
; before its conversion, so that r = f * (pi/2) keeps 53 bits however close
; x is to a multiple of pi/2. The bits of 2/pi, after 8 zero bits, are the
; five words W0..W4; a float's window starts within the first two, at bit
; q = e - 144 (e the biased exponent, at least 147 here), so the three
; words it spans are W[q/64..q/64+2]. Infinities and NaN give NaN.
define internal double @tsr_trig_large_f32(float %x, i64 %phase) {
entry:
  %bits = bitcast float %x to i32
  %negative = icmp slt i32 %bits, 0
  %e8 = lshr i32 %bits, 23
  %e = and i32 %e8, 255
  %mant = and i32 %bits, 8388607
  %m = or i32 %mant, 8388608
  %q = sub i32 %e, 144
  %wi = lshr i32 %q, 6
  %o32 = and i32 %q, 63
  %o = zext i32 %o32 to i64
  %first = icmp eq i32 %wi, 0
  %w0 = select i1 %first, i64 45873289113781269, i64 3025336307824276701
  %w1 = select i1 %first, i64 3025336307824276701, i64 -4549934603867241584
  %w2 = select i1 %first, i64 -4549934603867241584, i64 4755327745076935621
  %t0 = call i64 @llvm.fshl.i64(i64 %w0, i64 %w1, i64 %o)
  %t1 = call i64 @llvm.fshl.i64(i64 %w1, i64 %w2, i64 %o)
  %t0w = zext i64 %t0 to i128
  %t1w = zext i64 %t1 to i128
  %hi = shl i128 %t0w, 32
  %lo = lshr i128 %t1w, 32
  %t = or i128 %hi, %lo
  %mw = zext i32 %m to i128
  %p = mul i128 %mw, %t
  %kw = lshr i128 %p, 94
  %k0 = trunc i128 %kw to i64
  %frac = and i128 %p, 19807040628566084398385987583
  %upper = icmp uge i128 %frac, 9903520314283042199192993792
  %below = sub i128 %frac, 19807040628566084398385987584
  %fs = select i1 %upper, i128 %below, i128 %frac
  %k1 = add i64 %k0, 1
  %k = select i1 %upper, i64 %k1, i64 %k0
  %fneg = icmp slt i128 %fs, 0
  %fabsn = sub i128 0, %fs
  %fa = select i1 %fneg, i128 %fabsn, i128 %fs
  %ahi128 = lshr i128 %fa, 64
  %ahi = trunc i128 %ahi128 to i64
  %alo = trunc i128 %fa to i64
  %lzhi = call i64 @llvm.ctlz.i64(i64 %ahi, i1 false)
  %lzlo = call i64 @llvm.ctlz.i64(i64 %alo, i1 false)
  %lzlo64 = add i64 %lzlo, 64
  %hizero = icmp eq i64 %ahi, 0
  %lz = select i1 %hizero, i64 %lzlo64, i64 %lzhi
  %lzc = and i64 %lz, 127
  %lzw = zext i64 %lzc to i128
  %norm = shl i128 %fa, %lzw
  %top128 = lshr i128 %norm, 64
  %top = trunc i128 %top128 to i64
  %topd = uitofp i64 %top to double
  ; |f| = top * 2^(-30 - lz)
  %ebits = sub i64 993, %lz
  %eshift = shl i64 %ebits, 52
  %scale = bitcast i64 %eshift to double
  %fmag = fmul double %topd, %scale
  %fmagn = fneg double %fmag
  %f = select i1 %fneg, double %fmagn, double %fmag
  %r0 = fmul double %f, 0x3FF921FB54442D18
  %rn = fneg double %r0
  %r = select i1 %negative, double %rn, double %r0
  %kn = sub i64 0, %k
  %ks = select i1 %negative, i64 %kn, i64 %k
  %v = call double @tsr_trig_poly(double %r, i64 %ks, i64 %phase)
  %finite = icmp ne i32 %e, 255
  %xd = fpext float %x to double
  %nan = fsub double %xd, %xd
  %out = select i1 %finite, double %v, double %nan
  ret double %out
}

; sin or cos of a float: below 2^20 * 1.5 (where the three-part reduction
; keeps every bit) in f64 through tsr_trig_f64, above by tsr_trig_large_f32.
define internal float @tsr_trig_f32(float %x, i64 %phase) alwaysinline {
entry:
  %d = fpext float %x to double
  %a = call double @llvm.fabs.f64(double %d)
  %large = fcmp oge double %a, 1572864.0
  br i1 %large, label %slow, label %fast
fast:
  %rf = call double @tsr_trig_f64(double %d, i64 %phase)
  br label %done
slow:
  %rs = call double @tsr_trig_large_f32(float %x, i64 %phase)
  br label %done
done:
  %r = phi double [ %rf, %fast ], [ %rs, %slow ]
  %f = fptrunc double %r to float
  ret float %f
}

define internal double @tsr_sin_f64(double %x) {
entry:
  %r = call double @tsr_trig_f64(double %x, i64 0)
  ret double %r
}

define internal double @tsr_cos_f64(double %x) {
entry:
  %r = call double @tsr_trig_f64(double %x, i64 1)
  ret double %r
}

define internal float @tsr_sin_f32(float %x) alwaysinline {
entry:
  %r = call float @tsr_trig_f32(float %x, i64 0)
  ret float %r
}

define internal float @tsr_cos_f32(float %x) alwaysinline {
entry:
  %r = call float @tsr_trig_f32(float %x, i64 1)
  ret float %r
}

declare double @llvm.floor.f64(double)
declare float @llvm.floor.f32(float)
declare float @llvm.roundeven.f32(float)
declare float @llvm.fma.f32(float, float, float)
declare double @llvm.fabs.f64(double)
declare i64 @llvm.fshl.i64(i64, i64, i64)
declare double @llvm.copysign.f64(double, double)
declare float @llvm.fabs.f32(float)

; x ** y as C99's pow and Python give it, in f64: 1 when y is 0 or x is
; 1 (a NaN too); a NaN for a NaN, and for a negative base with a finite
; non-integral exponent; the limits of C99 for zero and infinite bases and
; exponents; otherwise |x| ** y, negated for a negative base and an odd
; exponent. |x| ** y is computed by repeated squaring (and the reciprocal
; for a negative exponent) when y is an integer of at most %limit in
; magnitude, else as exp(y * ln |x|) (also when the squaring overflows).
define internal double @tsr_powk_f64(double %x, double %y, double %limit) {
entry:
  %y0 = fcmp oeq double %y, 0.0
  %x1 = fcmp oeq double %x, 1.0
  %unit = or i1 %y0, %x1
  br i1 %unit, label %one, label %chk_nan
one:
  ret double 1.0
chk_nan:
  %nan = fcmp uno double %x, %y
  br i1 %nan, label %ret_nan, label %classify
ret_nan:
  %sum = fadd double %x, %y
  ret double %sum
classify:
  %ax = call double @llvm.fabs.f64(double %x)
  %ay = call double @llvm.fabs.f64(double %y)
  %ypos = fcmp ogt double %y, 0.0
  %yinf = fcmp oeq double %ay, 0x7FF0000000000000
  br i1 %yinf, label %infinite_y, label %finite_y
infinite_y:
  %axone = fcmp oeq double %ax, 1.0
  %axsmall = fcmp olt double %ax, 1.0
  %grows = xor i1 %axsmall, %ypos
  %limitv = select i1 %grows, double 0x7FF0000000000000, double 0.0
  %iy = select i1 %axone, double 1.0, double %limitv
  ret double %iy
finite_y:
  %fy = call double @llvm.floor.f64(double %y)
  %integral = fcmp oeq double %fy, %y
  %half = fmul double %y, 0.5
  %fh = call double @llvm.floor.f64(double %half)
  %even = fcmp oeq double %fh, %half
  %notint = xor i1 %integral, true
  %odd.n = xor i1 %even, true
  %odd = and i1 %integral, %odd.n
  %bits = bitcast double %x to i64
  %signbit = icmp slt i64 %bits, 0
  %negate = and i1 %signbit, %odd
  %xzero = fcmp oeq double %ax, 0.0
  %xinf = fcmp oeq double %ax, 0x7FF0000000000000
  %edge = or i1 %xzero, %xinf
  br i1 %edge, label %edge_x, label %finite_x
edge_x:
  %toinf = xor i1 %ypos, %xzero
  %emag = select i1 %toinf, double 0x7FF0000000000000, double 0.0
  %eneg = fneg double %emag
  %er = select i1 %negate, double %eneg, double %emag
  ret double %er
finite_x:
  %complex = and i1 %signbit, %notint
  br i1 %complex, label %qnan, label %magnitude
qnan:
  ret double 0x7FF8000000000000
magnitude:
  %inrange = fcmp ole double %ay, %limit
  %squaring = and i1 %integral, %inrange
  br i1 %squaring, label %start, label %general
start:
  %e0 = fptosi double %ay to i64
  br label %loop
loop:
  %e = phi i64 [ %e0, %start ], [ %e.next, %step ]
  %acc = phi double [ 1.0, %start ], [ %acc.next, %step ]
  %base = phi double [ %ax, %start ], [ %base.next, %step ]
  %more = icmp ne i64 %e, 0
  br i1 %more, label %step, label %done
step:
  %bit = and i64 %e, 1
  %isodd = icmp ne i64 %bit, 0
  %times = fmul double %acc, %base
  %acc.next = select i1 %isodd, double %times, double %acc
  %base.next = fmul double %base, %base
  %e.next = lshr i64 %e, 1
  br label %loop
done:
  %overflow = fcmp oeq double %acc, 0x7FF0000000000000
  br i1 %overflow, label %general, label %squared
squared:
  %inverse = fdiv double 1.0, %acc
  %sq = select i1 %ypos, double %acc, double %inverse
  br label %result
general:
  %l = call double @tsr_log_f64(double %ax)
  %p = fmul double %l, %y
  %g = call double @tsr_exp_f64(double %p)
  br label %result
result:
  %m = phi double [ %sq, %squared ], [ %g, %general ]
  %mneg = fneg double %m
  %r = select i1 %negate, double %mneg, double %m
  ret double %r
}

; f64 ** f64: integral exponents below 2^31 by squaring (each product
; rounded: the error grows with the exponent), others through exp and ln
; (the error grows with |y ln x|).
define internal double @tsr_pow_f64(double %x, double %y) {
entry:
  %r = call double @tsr_powk_f64(double %x, double %y, double 2147483648.0)
  ret double %r
}

; f32 ** f32 in f64, rounded once to f32: within an ulp. Integral
; exponents up to 1024 go by squaring, exact before the rounding for small
; powers, others through exp and ln, whose f64 error is far below an f32
; ulp over f32's range.
define internal float @tsr_pow_f32(float %x, float %y) {
entry:
  %xd = fpext float %x to double
  %yd = fpext float %y to double
  %r = call double @tsr_powk_f64(double %xd, double %yd, double 1024.0)
  %rf = fptrunc double %r to float
  ret float %rf
}

; fmod(x, y) exactly, with the sign of x (C99's fmod), by long division
; of the significands as integers (musl's algorithm): nothing is rounded,
; so every target gives the same bits. (NVPTX's own `frem` computes
; x - trunc(x / y) * y, which is inexact once the quotient is large.) An
; f32 operand is exact in f64, and so is its remainder in f32.
define internal double @tsr_fmod_f64(double %x, double %y) {
entry:
  %ux = bitcast double %x to i64
  %uy = bitcast double %y to i64
  %sx = and i64 %ux, -9223372036854775808
  %ax = and i64 %ux, 9223372036854775807
  %ay = and i64 %uy, 9223372036854775807
  %yzero = icmp eq i64 %ay, 0
  %ynan = icmp ugt i64 %ay, 9218868437227405312
  %xfinite = icmp ult i64 %ax, 9218868437227405312
  %xbad = xor i1 %xfinite, true
  %ybad = or i1 %yzero, %ynan
  %bad = or i1 %ybad, %xbad
  br i1 %bad, label %nan, label %compare
nan:
  ret double 0x7FF8000000000000
compare:
  %less = icmp ult i64 %ax, %ay
  br i1 %less, label %same, label %split
same:
  ret double %x
zero:
  %z = bitcast i64 %sx to double
  ret double %z
split:
  %ex0 = lshr i64 %ax, 52
  %ey0 = lshr i64 %ay, 52
  %mx0 = and i64 %ax, 4503599627370495
  %my0 = and i64 %ay, 4503599627370495
  %xsub = icmp eq i64 %ex0, 0
  %clzx = call i64 @llvm.ctlz.i64(i64 %mx0, i1 false)
  %shx = sub i64 %clzx, 11
  %mxs = shl i64 %mx0, %shx
  %exs = sub i64 1, %shx
  %mxn = or i64 %mx0, 4503599627370496
  %mx = select i1 %xsub, i64 %mxs, i64 %mxn
  %ex = select i1 %xsub, i64 %exs, i64 %ex0
  %ysub = icmp eq i64 %ey0, 0
  %clzy = call i64 @llvm.ctlz.i64(i64 %my0, i1 false)
  %shy = sub i64 %clzy, 11
  %mys = shl i64 %my0, %shy
  %eys = sub i64 1, %shy
  %myn = or i64 %my0, 4503599627370496
  %my = select i1 %ysub, i64 %mys, i64 %myn
  %ey = select i1 %ysub, i64 %eys, i64 %ey0
  br label %loop
loop:
  %e = phi i64 [ %ex, %split ], [ %e.next, %shift ]
  %m = phi i64 [ %mx, %split ], [ %m.shift, %shift ]
  %d = sub i64 %m, %my
  %fits = icmp sge i64 %d, 0
  %m.sub = select i1 %fits, i64 %d, i64 %m
  %exact = icmp eq i64 %m.sub, 0
  br i1 %exact, label %zero, label %more
more:
  %again = icmp sgt i64 %e, %ey
  br i1 %again, label %shift, label %finish
shift:
  %m.shift = shl i64 %m.sub, 1
  %e.next = sub i64 %e, 1
  br label %loop
finish:
  %clz = call i64 @llvm.ctlz.i64(i64 %m.sub, i1 false)
  %sh = sub i64 %clz, 11
  %mn = shl i64 %m.sub, %sh
  %en = sub i64 %e, %sh
  %normal = icmp sgt i64 %en, 0
  %frac = sub i64 %mn, 4503599627370496
  %eb = shl i64 %en, 52
  %nb = or i64 %frac, %eb
  %rs = sub i64 1, %en
  %sb = lshr i64 %mn, %rs
  %mag = select i1 %normal, i64 %nb, i64 %sb
  %signed = or i64 %mag, %sx
  %r = bitcast i64 %signed to double
  ret double %r
}

declare i64 @llvm.ctlz.i64(i64, i1)

; b ** e on integers, wrapping as every integer operation does: repeated
; squaring; a negative exponent gives 1 for b = 1, ±1 for b = -1 by the
; exponent's parity, else 0 (the integer part of the true value).
define internal i64 @tsr_ipow_i64(i64 %b, i64 %e) {
entry:
  %negative = icmp slt i64 %e, 0
  br i1 %negative, label %inverse, label %loop
loop:
  %k = phi i64 [ %e, %entry ], [ %k.next, %step ]
  %acc = phi i64 [ 1, %entry ], [ %acc.next, %step ]
  %base = phi i64 [ %b, %entry ], [ %base.next, %step ]
  %more = icmp ne i64 %k, 0
  br i1 %more, label %step, label %done
step:
  %bit = and i64 %k, 1
  %odd = icmp ne i64 %bit, 0
  %times = mul i64 %acc, %base
  %acc.next = select i1 %odd, i64 %times, i64 %acc
  %base.next = mul i64 %base, %base
  %k.next = lshr i64 %k, 1
  br label %loop
done:
  ret i64 %acc
inverse:
  %one = icmp eq i64 %b, 1
  %minus = icmp eq i64 %b, -1
  %ebit = and i64 %e, 1
  %eodd = icmp ne i64 %ebit, 0
  %sign = select i1 %eodd, i64 -1, i64 1
  %m = select i1 %minus, i64 %sign, i64 0
  %r = select i1 %one, i64 1, i64 %m
  ret i64 %r
}
