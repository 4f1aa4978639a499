//! Fuzz the SSE stream parsers (OpenAI and Anthropic): arbitrary bytes
//! never panic, and splitting the same bytes into chunks anywhere gives
//! the same events (or the same error class) as one chunk.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod chunking;

fuzz_target!(|input: &[u8]| {
    let parsers: [chunking::Parser; 2] = [
        eonyx_provider::parse_openai_sse_chunks,
        eonyx_provider::parse_anthropic_sse_chunks,
    ];
    chunking::check(input, &parsers);
});
