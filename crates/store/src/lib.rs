//! eonyx-store (being built).
