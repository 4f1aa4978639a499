//! Reading a session file as lines, forwards in chunks and backwards in
//! blocks. A line is complete only when its `'\n'` has been written; the
//! unterminated rest of a file is its torn tail and is never returned.

use std::io::{self, Read, Seek, SeekFrom};

const CHUNK: usize = 256 * 1024;
const BLOCK: usize = 64 * 1024;

/// Forward reader returning runs of complete lines.
pub struct ForwardChunks<R> {
    r: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// File offset of `buf[start]`.
    offset: u64,
    eof: bool,
}

impl<R: Read> ForwardChunks<R> {
    /// `r` must be positioned at file offset `offset`.
    pub fn new(r: R, offset: u64) -> Self {
        Self {
            r,
            buf: vec![0; CHUNK],
            start: 0,
            end: 0,
            offset,
            eof: false,
        }
    }

    /// The next run of complete lines, each ending in `'\n'`, with the file
    /// offset of its first byte. `None` at the end: what is left then is the
    /// torn tail ([`ForwardChunks::tail_len`]).
    pub fn next_chunk(&mut self) -> io::Result<Option<(u64, &[u8])>> {
        loop {
            if let Some(i) = memchr::memrchr(b'\n', &self.buf[self.start..self.end]) {
                let s = self.start;
                let off = self.offset;
                self.start += i + 1;
                self.offset += (i + 1) as u64;
                return Ok(Some((off, &self.buf[s..=s + i])));
            }
            if self.eof {
                return Ok(None);
            }
            // Keep the unterminated rest at the front, grow for long lines.
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                let n = self.buf.len() * 2;
                self.buf.resize(n, 0);
            }
            let n = loop {
                match self.r.read(&mut self.buf[self.end..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            };
            if n == 0 {
                self.eof = true;
            }
            self.end += n;
        }
    }

    /// File offset just after the last complete line returned so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes after the last complete line (valid once `next_chunk` returned
    /// `None`).
    pub fn tail_len(&self) -> u64 {
        (self.end - self.start) as u64
    }
}

/// Call `f(offset, line)` for every complete line (without its `'\n'`) from
/// `offset` on. `f` returns `false` to stop early. Returns the offset after
/// the last complete line seen and the torn tail length (0 when stopped).
pub fn for_each_line<R: Read>(
    r: R,
    offset: u64,
    mut f: impl FnMut(u64, &[u8]) -> bool,
) -> io::Result<(u64, u64)> {
    let mut chunks = ForwardChunks::new(r, offset);
    while let Some((off, chunk)) = chunks.next_chunk()? {
        let mut pos = 0usize;
        for nl in memchr::memchr_iter(b'\n', chunk) {
            if !f(off + pos as u64, &chunk[pos..nl]) {
                return Ok((off + nl as u64 + 1, 0));
            }
            pos = nl + 1;
        }
    }
    Ok((chunks.offset(), chunks.tail_len()))
}

/// Backward reader: the lines of `[0, end)` from the last to the first.
pub struct BackwardLines<R> {
    r: R,
    /// File bytes `[lo, hi)`.
    buf: Vec<u8>,
    lo: u64,
    hi: u64,
    block: usize,
}

impl<R: Read + Seek> BackwardLines<R> {
    /// Lines before `end`; `end` is normally just after a `'\n'`.
    pub fn new(r: R, end: u64) -> Self {
        Self {
            r,
            buf: Vec::new(),
            lo: end,
            hi: end,
            block: BLOCK,
        }
    }

    /// The previous line (without `'\n'`) and its file offset.
    pub fn prev_line(&mut self) -> io::Result<Option<(u64, &[u8])>> {
        if self.hi == 0 {
            return Ok(None);
        }
        loop {
            let have = (self.hi - self.lo) as usize;
            let data = &self.buf[..have];
            // The line ends at hi, minus its newline if it has one.
            let line_end = match data.last() {
                Some(b'\n') => have - 1,
                Some(_) => have,
                None => 0,
            };
            if have > 0 {
                if let Some(p) = memchr::memrchr(b'\n', &data[..line_end]) {
                    let start = self.lo + p as u64 + 1;
                    self.hi = start;
                    return Ok(Some((start, &self.buf[p + 1..line_end])));
                }
                if self.lo == 0 {
                    self.hi = 0;
                    return Ok(Some((0, &self.buf[..line_end])));
                }
            }
            // Load the block before `lo` in front of what we have.
            let n = (self.block as u64).min(self.lo) as usize;
            self.block = (self.block * 2).min(16 * 1024 * 1024);
            let new_lo = self.lo - n as u64;
            let mut fresh = vec![0u8; n + have];
            self.r.seek(SeekFrom::Start(new_lo))?;
            self.r.read_exact(&mut fresh[..n])?;
            fresh[n..].copy_from_slice(&self.buf[..have]);
            self.buf = fresh;
            self.lo = new_lo;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn forward(data: &[u8]) -> (Vec<(u64, Vec<u8>)>, u64, u64) {
        let mut v = Vec::new();
        let (end, tail) = for_each_line(Cursor::new(data), 0, |o, l| {
            v.push((o, l.to_vec()));
            true
        })
        .unwrap();
        (v, end, tail)
    }

    fn backward(data: &[u8], end: u64) -> Vec<(u64, Vec<u8>)> {
        let mut b = BackwardLines::new(Cursor::new(data), end);
        b.block = 3;
        let mut v = Vec::new();
        while let Some((o, l)) = b.prev_line().unwrap() {
            v.push((o, l.to_vec()));
        }
        v.reverse();
        v
    }

    #[test]
    fn torn_tail_is_not_a_line_and_both_directions_agree() {
        let data = b"{\"a\":1}\n\nsecond line\nthird\ntorn{\"x";
        let (lines, end, tail) = forward(data);
        assert_eq!(
            lines.iter().map(|(_, l)| l.as_slice()).collect::<Vec<_>>(),
            vec![&b"{\"a\":1}"[..], b"", b"second line", b"third"]
        );
        assert_eq!(end, 27);
        assert_eq!(tail, 7);
        assert_eq!(backward(data, end), lines);
    }

    #[test]
    fn lines_longer_than_the_buffer_are_read_whole() {
        let mut data = vec![b'x'; CHUNK * 3 + 5];
        data.push(b'\n');
        data.extend_from_slice(b"short\n");
        let (lines, end, tail) = forward(&data);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].1.len(), CHUNK * 3 + 5);
        assert_eq!(lines[1], ((CHUNK * 3 + 6) as u64, b"short".to_vec()));
        assert_eq!((end, tail), (data.len() as u64, 0));
        assert_eq!(backward(&data, end), lines);
    }
}
