//! eonyx-compact (being built).
