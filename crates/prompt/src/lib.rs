//! eonyx-prompt (being built).
