//! eonyx-provider (being built).
