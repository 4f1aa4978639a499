//! Where a readable export is written: a text buffer handed to the writer
//! each time it holds [`CHUNK`] bytes, so the page or transcript of a long
//! session never sits whole in memory and the buffer stays warm. The
//! renderers write into it as into a `String` (it derefs to one). A kept
//! buffer ([`Out::kept`]) holds a transcript whole while the totals its
//! header shows are counted.

use std::fmt;
use std::io::{self, Write};
use std::ops::{Deref, DerefMut};

/// How much text is buffered before it goes to the writer.
const CHUNK: usize = 64 * 1024;

pub(crate) struct Out<'w> {
    buf: String,
    /// Where the text goes; `None`: it stays in the buffer
    /// ([`Out::text`]).
    w: Option<&'w mut dyn Write>,
    /// The first write error; what follows it is dropped and
    /// [`Out::finish`] returns it.
    err: Option<io::Error>,
}

impl<'w> Out<'w> {
    pub fn new(w: &'w mut dyn Write) -> Self {
        Out {
            buf: String::with_capacity(CHUNK * 2),
            w: Some(w),
            err: None,
        }
    }

    /// A buffer that keeps all the text, for [`Out::text`].
    pub fn kept() -> Out<'static> {
        Out {
            buf: String::with_capacity(CHUNK * 2),
            w: None,
            err: None,
        }
    }

    /// All the text of an [`Out::kept`].
    pub fn text(self) -> String {
        self.buf
    }

    /// Pass the buffer on once it holds a chunk (the renderers call this
    /// between records).
    pub fn step(&mut self) {
        if self.buf.len() >= CHUNK && self.w.is_some() {
            self.pass_on();
        }
    }

    fn pass_on(&mut self) {
        let Some(w) = self.w.as_mut() else {
            return;
        };
        if self.err.is_none()
            && let Err(e) = w.write_all(self.buf.as_bytes())
        {
            self.err = Some(e);
        }
        self.buf.clear();
    }

    /// Pass on what is buffered, then `text` as it is (not copied into
    /// the buffer first).
    pub fn write_text(&mut self, text: &str) {
        self.pass_on();
        match self.w.as_mut() {
            Some(w) => {
                if self.err.is_none()
                    && let Err(e) = w.write_all(text.as_bytes())
                {
                    self.err = Some(e);
                }
            }
            None => self.buf.push_str(text),
        }
    }

    /// Write what is left and flush; the first write error, if any.
    pub fn finish(mut self) -> io::Result<()> {
        self.pass_on();
        match (self.err.take(), self.w) {
            (Some(e), _) => Err(e),
            (None, Some(w)) => w.flush(),
            (None, None) => Ok(()),
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

    #[test]
    fn a_kept_buffer_holds_all_its_text_for_the_writer_after_a_head() {
        let mut body = Out::kept();
        for i in 0..20_000 {
            body.push_str(&format!("line {i}\n"));
            body.step();
        }
        let body = body.text();
        let mut sink = Vec::new();
        let mut out = Out::new(&mut sink);
        out.push_str("head\n");
        out.write_text(&body);
        out.finish().unwrap();
        let text = String::from_utf8(sink).unwrap();
        assert_eq!(text.lines().count(), 20_001);
        assert!(text.starts_with("head\nline 0\n") && text.ends_with("line 19999\n"));
    }
}
