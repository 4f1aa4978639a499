//! A job's log file: everything the job wrote, in order, up to
//! `tools.job_log_max_bytes`. Past the cap the file keeps its first MiB,
//! a note saying how much was left out, and the newest bytes; the model's
//! reads address the output by its logical offset (bytes written since
//! the start), so a read never needs the whole file.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt as _;

/// The first bytes a capped log always keeps.
pub(crate) const HEAD_BYTES: u64 = 1024 * 1024;
/// The note between the head and the newest bytes of a capped log,
/// padded to this width so it is rewritten in place.
const NOTE_BYTES: u64 = 160;

/// One job's log: its file and where the output's bytes are in it.
#[derive(Debug)]
pub(crate) struct Log {
    file: File,
    max: u64,
    /// Bytes the job wrote, all of them.
    total: u64,
    /// Whether the log was cut (the note and the newest bytes follow the
    /// head).
    cut: bool,
    /// With `cut`: the logical offset of the first byte kept after the note.
    tail_start: u64,
    /// The file's length.
    len: u64,
}

/// A part of the output as read back: the bytes, and how many bytes of the
/// range asked for the cap had already dropped from the file.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Chunk {
    pub bytes: Vec<u8>,
    pub dropped: u64,
}

impl Log {
    /// A log over a new, empty `file`, capped at `max` bytes (at least
    /// twice [`HEAD_BYTES`]: config validation says so).
    pub fn new(file: File, max: u64) -> Self {
        Self {
            file,
            max: max.max(2 * HEAD_BYTES + NOTE_BYTES),
            total: 0,
            cut: false,
            tail_start: 0,
            len: 0,
        }
    }

    /// Bytes the job wrote so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Append what the job wrote; past the cap, drop the oldest bytes
    /// after the head (keeping the newest half of the room).
    pub fn append(&mut self, data: &[u8]) -> io::Result<()> {
        let n = data.len() as u64;
        if self.len + n <= self.max {
            self.file.write_all_at(data, self.len)?;
            self.len += n;
            self.total += n;
            return Ok(());
        }
        let body = HEAD_BYTES + NOTE_BYTES;
        let keep = (self.max - body) / 2;
        let total = self.total + n;
        if n >= keep {
            let newest = &data[data.len() - keep as usize..];
            self.file.write_all_at(newest, body)?;
        } else {
            // The newest `keep - n` bytes already in the file move down
            // to just after the note, then `data` follows them.
            let old = keep - n;
            let from = self.len - old;
            let mut buf = vec![0u8; 1024 * 1024];
            let mut done = 0;
            while done < old {
                let want = (old - done).min(buf.len() as u64) as usize;
                self.file.read_exact_at(&mut buf[..want], from + done)?;
                self.file.write_all_at(&buf[..want], body + done)?;
                done += want as u64;
            }
            self.file.write_all_at(data, body + old)?;
        }
        self.len = body + keep;
        self.file.set_len(self.len)?;
        self.cut = true;
        self.tail_start = total - keep;
        self.total = total;
        let left_out = self.tail_start - HEAD_BYTES;
        let mut note = format!(
            "\n[eonyx: {left_out} bytes of output left out here (tools.job_log_max_bytes = {}); the log keeps its first MiB and the newest bytes]",
            self.max
        );
        note.truncate(NOTE_BYTES as usize - 1);
        while note.len() < NOTE_BYTES as usize - 1 {
            note.push(' ');
        }
        note.push('\n');
        self.file.write_all_at(note.as_bytes(), HEAD_BYTES)
    }

    /// The output between logical offsets `from` and `to`, as far as the
    /// log still has it.
    pub fn read(&self, from: u64, to: u64) -> io::Result<Chunk> {
        let to = to.min(self.total);
        let mut out = Chunk::default();
        if from >= to {
            return Ok(out);
        }
        if !self.cut {
            out.bytes = self.read_at(from, to - from)?;
            return Ok(out);
        }
        // The head part.
        if from < HEAD_BYTES {
            let end = to.min(HEAD_BYTES);
            out.bytes = self.read_at(from, end - from)?;
        }
        let lost_from = from.max(HEAD_BYTES);
        let lost_to = to.min(self.tail_start);
        if lost_to > lost_from {
            out.dropped = lost_to - lost_from;
        }
        let kept_from = from.max(self.tail_start);
        if to > kept_from {
            let at = HEAD_BYTES + NOTE_BYTES + (kept_from - self.tail_start);
            out.bytes.extend(self.read_at(at, to - kept_from)?);
        }
        Ok(out)
    }

    fn read_at(&self, at: u64, len: u64) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
        self.file.read_exact_at(&mut buf, at)?;
        Ok(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(max: u64) -> (tempfile::TempDir, Log) {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(dir.path().join("1.log"))
            .unwrap();
        (dir, Log::new(file, max))
    }

    #[test]
    fn under_the_cap_everything_is_kept_in_order() {
        let (_d, mut l) = log(64 * 1024 * 1024);
        l.append(b"hello ").unwrap();
        l.append(b"world").unwrap();
        assert_eq!(l.read(0, 11).unwrap().bytes, b"hello world");
        assert_eq!(l.read(6, 99).unwrap().bytes, b"world");
        assert_eq!(l.read(11, 11).unwrap(), Chunk::default());
    }

    #[test]
    fn past_the_cap_the_head_and_the_newest_bytes_are_kept_and_the_file_stays_under_it() {
        let max = 2 * HEAD_BYTES + NOTE_BYTES + 1000;
        let (d, mut l) = log(max);
        let mut all = Vec::new();
        for i in 0..4000u32 {
            let line = format!("line {i:05}\n");
            all.extend_from_slice(line.as_bytes());
            l.append(line.as_bytes()).unwrap();
            let len = std::fs::metadata(d.path().join("1.log")).unwrap().len();
            assert!(len <= max, "{len} > {max}");
        }
        // Big writes too.
        let big = vec![b'x'; 3 * 1024 * 1024];
        all.extend_from_slice(&big);
        l.append(&big).unwrap();
        all.extend_from_slice(b"the end\n");
        l.append(b"the end\n").unwrap();
        let total = all.len() as u64;
        assert_eq!(l.total(), total);
        let head = l.read(0, 100).unwrap();
        assert_eq!(head.bytes, &all[..100]);
        let tail = l.read(total - 50, total).unwrap();
        assert_eq!(tail.bytes, &all[all.len() - 50..]);
        let whole = l.read(0, total).unwrap();
        assert_eq!(whole.bytes.len() as u64 + whole.dropped, total);
        let text = std::fs::read(d.path().join("1.log")).unwrap();
        let text = String::from_utf8_lossy(&text);
        assert!(
            text.contains("bytes of output left out here"),
            "{}",
            &text[..200]
        );
        assert!(text.ends_with("the end\n"));
    }
}
