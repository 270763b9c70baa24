; Conversions LLVM lowers to library calls on x86-64 (compiler-rt names),
; defined here so CPU modules need no compiler-rt: the JIT resolves them in
; the module itself, and an object file brings its own (weak, so a linked
; compiler-rt or libgcc may take precedence). All round to nearest even,
; as the GPUs' cvt.rn does; NaN stays a quiet NaN.

; float -> bfloat: add 0x7fff plus the lowest kept bit, keep the high half.
define weak bfloat @__truncsfbf2(float %x) {
entry:
  %b = bitcast float %x to i32
  %hi = lshr i32 %b, 16
  %lsb = and i32 %hi, 1
  %bias = add i32 %lsb, 32767
  %r = add i32 %b, %bias
  %rh = lshr i32 %r, 16
  %t = trunc i32 %rh to i16
  %nh = trunc i32 %hi to i16
  %quiet = or i16 %nh, 64
  %nan = fcmp uno float %x, %x
  %res = select i1 %nan, i16 %quiet, i16 %t
  %out = bitcast i16 %res to bfloat
  ret bfloat %out
}

; double -> float rounded to odd: exact when representable, otherwise the
; truncated value with its lowest bit set. A second rounding to a format
; at least two bits narrower is then correctly rounded.
define internal float @tsr_trunc_df_odd(double %x) {
entry:
  %t = fptrunc double %x to float
  %back = fpext float %t to double
  %inexact = fcmp one double %back, %x
  %bb = bitcast double %back to i64
  %xb = bitcast double %x to i64
  %ab = and i64 %bb, 9223372036854775807
  %ax = and i64 %xb, 9223372036854775807
  %away = icmp ugt i64 %ab, %ax
  %tb = bitcast float %t to i32
  %down = sub i32 %tb, 1
  %both = and i1 %inexact, %away
  %tz = select i1 %both, i32 %down, i32 %tb
  %odd = or i32 %tz, 1
  %r = select i1 %inexact, i32 %odd, i32 %tz
  %f = bitcast i32 %r to float
  ret float %f
}

define weak bfloat @__truncdfbf2(double %x) {
entry:
  %f = call float @tsr_trunc_df_odd(double %x)
  %r = call bfloat @__truncsfbf2(float %f)
  ret bfloat %r
}

define weak half @__truncdfhf2(double %x) {
entry:
  %f = call float @tsr_trunc_df_odd(double %x)
  %r = fptrunc float %f to half
  ret half %r
}
