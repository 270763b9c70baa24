//! The host interpreter.
