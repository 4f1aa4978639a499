//! Test support (being built).
