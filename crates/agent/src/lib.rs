//! eonyx-agent (being built).
