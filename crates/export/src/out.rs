//! Where a readable export is written: a text buffer handed to the writer
//! each time it holds [`CHUNK`] bytes, so the page or transcript of a long
//! session never sits whole in memory and the buffer stays warm. The
//! renderers write into it as into a `String` (it derefs to one).

use std::fmt;
use std::io::{self, Write};
use std::ops::{Deref, DerefMut};

/// How much text is buffered before it goes to the writer.
const CHUNK: usize = 64 * 1024;

pub(crate) struct Out<'w> {
    buf: String,
    w: &'w mut dyn Write,
    /// The first write error; what follows it is dropped and
    /// [`Out::finish`] returns it.
    err: Option<io::Error>,
}

impl<'w> Out<'w> {
    pub fn new(w: &'w mut dyn Write) -> Self {
        Out {
            buf: String::with_capacity(CHUNK * 2),
            w,
            err: None,
        }
    }

    /// Pass the buffer on once it holds a chunk (the renderers call this
    /// between records).
    pub fn step(&mut self) {
        if self.buf.len() >= CHUNK {
            self.pass_on();
        }
    }

    fn pass_on(&mut self) {
        if self.err.is_none()
            && let Err(e) = self.w.write_all(self.buf.as_bytes())
        {
            self.err = Some(e);
        }
        self.buf.clear();
    }

    /// Write what is left and flush; the first write error, if any.
    pub fn finish(mut self) -> io::Result<()> {
        self.pass_on();
        match self.err.take() {
            Some(e) => Err(e),
            None => self.w.flush(),
        }
    }
}

impl Deref for Out<'_> {
    type Target = String;
    fn deref(&self) -> &String {
        &self.buf
    }
}

impl DerefMut for Out<'_> {
    fn deref_mut(&mut self) -> &mut String {
        &mut self.buf
    }
}

impl fmt::Write for Out<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.buf.push_str(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_written_arrives_in_order_in_chunks() {
        let mut sink = Vec::new();
        let mut out = Out::new(&mut sink);
        for i in 0..20_000 {
            out.push_str(&format!("line {i}\n"));
            out.step();
        }
        out.finish().unwrap();
        let text = String::from_utf8(sink).unwrap();
        assert_eq!(text.lines().count(), 20_000);
        assert!(text.starts_with("line 0\n") && text.ends_with("line 19999\n"));
    }
}
