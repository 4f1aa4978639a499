//! The check the stream-parser targets share (`sse_parser`,
//! `responses_stream`): arbitrary bytes never panic, and splitting the same
//! bytes into chunks anywhere gives the same events (or the same error
//! class) as one chunk.

/// A stream parser over the chunks of one body.
pub type Parser =
    fn(&[&[u8]]) -> Result<Vec<eonyx_core::StreamEvent>, eonyx_core::ProviderError>;

fn split(data: &[u8], seed: u8) -> Vec<&[u8]> {
    let step = usize::from(seed % 17) + 1;
    data.chunks(step).collect()
}

/// Run each of `parsers` over `input` (its first byte picks the chunk
/// size, the rest is the body) whole and in chunks; panic where they differ.
pub fn check(input: &[u8], parsers: &[Parser]) {
    let Some((&seed, data)) = input.split_first() else {
        return;
    };
    for parse in parsers {
        let whole = parse(&[data]);
        let pieces = parse(&split(data, seed));
        match (&whole, &pieces) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "chunking changed the events"),
            (Err(a), Err(b)) => assert_eq!(a.class(), b.class(), "{a} vs {b}"),
            _ => panic!("chunking changed the outcome: {whole:?} vs {pieces:?}"),
        }
    }
}
