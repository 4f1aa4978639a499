//! The parser of the permission rules against the real shells
//! (`eonyx_tools::differential`, docs/tools.md#permission-rules): every
//! input the rules allow under `shell(ok:*)` (as `sh` reads it, and as
//! bash does) is run with that shell in a scratch directory whose `PATH`
//! holds only logging stubs; anything but `ok` running, or a file
//! appearing, is a crash. Most inputs are not allowed and cost only the
//! parse; 100,000 runs is the campaign (docs/fuzzing.md).
#![no_main]

use std::sync::OnceLock;

use eonyx_tools::differential::{Stubs, check_line, ok_matcher};
use eonyx_tools::permissions::RuleMatcher;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    static SETUP: OnceLock<(RuleMatcher, Stubs)> = OnceLock::new();
    let (matcher, stubs) =
        SETUP.get_or_init(|| (ok_matcher(), Stubs::new().expect("a scratch directory")));
    let line = String::from_utf8_lossy(data);
    if let Some(d) = check_line(matcher, stubs, &line) {
        panic!("{d}");
    }
});
