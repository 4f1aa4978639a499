//! Fuzz the Responses API stream parser: arbitrary bytes never panic,
//! and splitting the same bytes into chunks anywhere gives the same events
//! (or the same error class) as one chunk; the same check as `sse_parser`.
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
    let whole = eonyx_provider::parse_responses_sse_chunks(&[data]);
    let pieces = eonyx_provider::parse_responses_sse_chunks(&split(data, seed));
    match (&whole, &pieces) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "chunking changed the events"),
        (Err(a), Err(b)) => assert_eq!(a.class(), b.class(), "{a} vs {b}"),
        _ => panic!("chunking changed the outcome: {whole:?} vs {pieces:?}"),
    }
});
