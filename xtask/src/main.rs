//! Project automation (being built).
fn main() {}
