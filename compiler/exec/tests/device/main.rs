//! The tests that run on the device `TESSERA_TEST_DEVICE` names (the CPU
//! unless it is set), in one binary so that `scripts/gpu-check.sh` carries
//! one copy of the statically linked compiler to the GPU machine instead of
//! three: `examples` checks every example against its float64 reference,
//! `determinism` the `@deterministic` bits, `minifloat` the fp8 conversions.

#[path = "../common/mod.rs"]
mod common;
mod determinism;
mod examples;
mod kernels;
mod minifloat;
mod random;
