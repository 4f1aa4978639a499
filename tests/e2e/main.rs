//! End-to-end tests of the real `eonyx` binary.
