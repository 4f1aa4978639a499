//! Fuzz the SSE stream parsers (OpenAI and Anthropic): arbitrary bytes
//! never panic, and splitting the same bytes into chunks anywhere gives
//! the same events (or the same error class) as one chunk.
#![no_main]

use libfuzzer_sys::fuzz_target;

fn split(data: &[u8], seed: u8) -> Vec<&[u8]> {
    let step = usize::from(seed % 17) + 1;
    data.chunks(step).collect()
}

fuzz_target!(|input: &[u8]| {
    let Some((&seed, data)) = input.split_first() else {
        return;
    };
    type Parser = fn(&[&[u8]]) -> Result<Vec<eonyx_core::StreamEvent>, eonyx_core::ProviderError>;
    let parsers: [Parser; 2] = [
        eonyx_provider::parse_openai_sse_chunks,
        eonyx_provider::parse_anthropic_sse_chunks,
    ];
    for parse in parsers {
        let whole = parse(&[data]);
        let pieces = parse(&split(data, seed));
        match (&whole, &pieces) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "chunking changed the events"),
            (Err(a), Err(b)) => assert_eq!(a.class(), b.class(), "{a} vs {b}"),
            _ => panic!("chunking changed the outcome: {whole:?} vs {pieces:?}"),
        }
    }
});
