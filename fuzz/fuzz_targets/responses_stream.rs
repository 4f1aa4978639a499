//! Fuzz the Responses API stream parser: arbitrary bytes never panic,
//! and splitting the same bytes into chunks anywhere gives the same events
//! (or the same error class) as one chunk; the same check as `sse_parser`.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod chunking;

fuzz_target!(|input: &[u8]| {
    let parsers: [chunking::Parser; 1] = [eonyx_provider::parse_responses_sse_chunks];
    chunking::check(input, &parsers);
});
