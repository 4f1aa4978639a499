//! The bench harness: timing (median, best-of, a time budget), the
//! `EONYX_BENCH_SCALE` knob, the one `BENCH|measure|ours|baseline|ratio|goal`
//! line format that `cargo xtask bench` gathers ([`Line::parse`] reads it back),
//! and the synthetic session files the store and listing benches share
//! ([`write_session`], with [`read_every_byte`] as their baseline).
//!
//! Benches are `harness = false` binaries; they print [`Line`]s to stdout
//! (this library never prints).

use std::fmt;
use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::time::{Duration, Instant};

use camino::Utf8Path;
use eonyx_core::SessionId;

/// `EONYX_BENCH_SCALE` as a whole multiplier (default 1, at least 1).
pub fn scale() -> usize {
    std::env::var("EONYX_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&s: &usize| s > 0)
        .unwrap_or(1)
}

/// `EONYX_BENCH_SCALE` as a fraction of full size (default `default`).
pub fn scale_f64(default: f64) -> f64 {
    std::env::var("EONYX_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|s: &f64| *s > 0.0)
        .unwrap_or(default)
}

/// The wall times of some runs, in run order.
#[derive(Debug, Clone, Default)]
pub struct Samples(pub Vec<Duration>);

impl Samples {
    /// The middle run (the upper one of an even count); zero when empty.
    pub fn median(&self) -> Duration {
        let mut v = self.0.clone();
        v.sort();
        v.get(v.len() / 2).copied().unwrap_or_default()
    }

    /// The fastest run; zero when empty.
    pub fn best(&self) -> Duration {
        self.0.iter().min().copied().unwrap_or_default()
    }

    /// The mean; zero when empty.
    pub fn mean(&self) -> Duration {
        match u32::try_from(self.0.len()) {
            Ok(n) if n > 0 => self.0.iter().sum::<Duration>() / n,
            _ => Duration::ZERO,
        }
    }

    /// The first run (a cold cache); zero when empty.
    pub fn first(&self) -> Duration {
        self.0.first().copied().unwrap_or_default()
    }

    /// Time one run of `f` and keep it; returns `f`'s value.
    pub fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let out = f();
        self.0.push(t.elapsed());
        out
    }
}

/// `n` runs of `f`.
pub fn runs<T>(n: usize, mut f: impl FnMut() -> T) -> Samples {
    let mut s = Samples(Vec::with_capacity(n));
    for _ in 0..n {
        black_box(s.time(&mut f));
    }
    s
}

/// The median of `n` runs of `f`.
pub fn median_of<T>(n: usize, f: impl FnMut() -> T) -> Duration {
    runs(n, f).median()
}

/// The fastest of `n` runs of `f`.
pub fn best_of<T>(n: usize, f: impl FnMut() -> T) -> Duration {
    runs(n, f).best()
}

/// The median of as many runs of `f` as fit in about `budget` (3 to 10,000,
/// after one untimed run that sizes them).
pub fn median_within<T>(budget: Duration, mut f: impl FnMut() -> T) -> Duration {
    let start = Instant::now();
    black_box(f());
    let once = start.elapsed().max(Duration::from_nanos(20));
    let n = (budget.as_nanos() / once.as_nanos()).clamp(3, 10_000) as usize;
    median_of(n, f)
}

/// A duration for people: `812 ns`, `41.3 µs`, `2.417 ms`, `1.25 s`.
pub fn human(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.3} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// `ours / baseline` as `1.23x` (`4.5e-3x` when under 0.01).
pub fn ratio(ours: f64, baseline: f64) -> String {
    let r = ours / baseline.max(1e-12);
    if r >= 0.01 || r == 0.0 {
        format!("{r:.2}x")
    } else {
        format!("{r:.1e}x")
    }
}

/// One `BENCH|measure|ours|baseline|ratio|goal` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub measure: String,
    pub ours: String,
    pub baseline: String,
    pub ratio: String,
    pub goal: String,
}

impl Line {
    /// Two timings side by side.
    pub fn timed(
        measure: impl Into<String>,
        ours: Duration,
        baseline: Duration,
        goal: &str,
    ) -> Self {
        Self {
            measure: measure.into(),
            ours: human(ours),
            baseline: human(baseline),
            ratio: ratio(ours.as_secs_f64(), baseline.as_secs_f64()),
            goal: goal.into(),
        }
    }

    /// Two quantities in `unit` (e.g. peak RSS in `MB`).
    pub fn quantity(
        measure: impl Into<String>,
        ours: f64,
        baseline: f64,
        unit: &str,
        goal: &str,
    ) -> Self {
        Self {
            measure: measure.into(),
            ours: format!("{ours:.1} {unit}"),
            baseline: format!("{baseline:.1} {unit}"),
            ratio: ratio(ours, baseline),
            goal: goal.into(),
        }
    }

    /// Parse a `BENCH|measure|ours|baseline|ratio|goal` line; other lines → None.
    pub fn parse(line: &str) -> Option<Self> {
        let rest = line.trim().strip_prefix("BENCH|")?;
        let f: Vec<&str> = rest.split('|').map(str::trim).collect();
        if f.len() != 5 || f[0].is_empty() {
            return None;
        }
        Some(Self {
            measure: f[0].to_string(),
            ours: f[1].to_string(),
            baseline: f[2].to_string(),
            ratio: f[3].to_string(),
            goal: f[4].to_string(),
        })
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let clean = |s: &str| s.replace('|', "/");
        write!(
            f,
            "BENCH|{}|{}|{}|{}|{}",
            clean(&self.measure),
            clean(&self.ours),
            clean(&self.baseline),
            clean(&self.ratio),
            clean(&self.goal)
        )
    }
}

/// The `i`-th synthetic session id (one second apart, so ids sort by `i`).
pub fn session_id(i: u64) -> SessionId {
    let secs = 1_750_000_000 + i64::try_from(i).unwrap_or(i64::MAX / 2);
    let ts = jiff::Timestamp::from_second(secs).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    SessionId::from_parts(ts, i as u32)
}

/// What [`write_session`] writes.
#[derive(Debug, Clone, Copy)]
pub struct SyntheticSession<'a> {
    /// Messages (user and assistant in turn).
    pub messages: u64,
    /// Bytes of text per message.
    pub text_len: usize,
    /// `needle` inside message number `at` (0-based).
    pub needle: Option<(u64, &'a str)>,
    /// A compaction record this many messages before the end.
    pub compaction_from_end: Option<u64>,
}

/// Write `<data_dir>/sessions/<id>.jsonl` as eonyx would have.
pub fn write_session(
    data_dir: &Utf8Path,
    id: &SessionId,
    s: SyntheticSession<'_>,
) -> std::io::Result<()> {
    let f = std::fs::File::create(data_dir.join("sessions").join(id.file_name()))?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    writeln!(
        w,
        r#"{{"type":"session","version":1,"id":"{id}","title":"1","created":"2025-06-15T12:00:00Z","cwd":"/home/u/project/src","project":"/home/u/project"}}"#
    )?;
    let filler = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod ";
    let mut text = String::new();
    while text.len() < s.text_len {
        text.push_str(filler);
    }
    text.truncate(s.text_len);
    let mut seq: u64 = 0;
    for i in 0..s.messages {
        seq += 1;
        if Some(s.messages - i) == s.compaction_from_end {
            writeln!(
                w,
                r#"{{"type":"compaction","seq":{seq},"ts":"2025-06-15T12:00:00Z","summary":"goal: keep going","first_kept_seq":{},"trigger":"auto","tokens_before":90000,"tokens_after":3000}}"#,
                seq.saturating_sub(20)
            )?;
            seq += 1;
        }
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let body = match s.needle {
            Some((at, n)) if at == i => {
                let half = s.text_len / 2;
                format!("{} {n} {}", &text[..half], &text[half..])
            }
            _ => text.clone(),
        };
        writeln!(
            w,
            r#"{{"type":"message","seq":{seq},"ts":"2025-06-15T12:{:02}:00Z","role":"{role}","content":"{body}"}}"#,
            i % 60
        )?;
    }
    w.flush()
}

/// The baseline of the listing benches: read every session file of
/// `data_dir` whole and count its lines. Returns the line count.
pub fn read_every_byte(data_dir: &Utf8Path) -> std::io::Result<usize> {
    let mut lines = 0;
    for e in std::fs::read_dir(data_dir.join("sessions"))? {
        let bytes = std::fs::read(e?.path())?;
        lines += memchr::memchr_iter(b'\n', &bytes).count();
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_prints_in_the_format_xtask_parses() {
        let ms = Duration::from_millis;
        let l = Line::timed("list 10k sessions", ms(3), ms(41), "<= 0.1x");
        assert_eq!(
            l.to_string(),
            "BENCH|list 10k sessions|3.000 ms|41.000 ms|0.07x|<= 0.1x"
        );
        assert_eq!(Line::parse(&l.to_string()), Some(l));
        let rss = Line::quantity("peak rss", 30.0, 10.0, "MB", "< 50 MB");
        assert_eq!(
            rss.to_string(),
            "BENCH|peak rss|30.0 MB|10.0 MB|3.00x|< 50 MB"
        );
        assert_eq!(ratio(1.0, 1e6), "1.0e-6x");
        assert!(Line::parse("BENCH|too|few").is_none());
        assert!(Line::parse("BENCH||a|b|c|d").is_none());
        assert!(Line::parse("noise").is_none());
        // A `|` inside a field cannot split the line.
        assert!(Line::parse(&Line::timed("a|b", ms(1), ms(1), "c").to_string()).is_some());
    }

    #[test]
    fn samples_give_median_best_mean_and_first() {
        let s = Samples([5, 1, 3, 9].map(Duration::from_millis).to_vec());
        assert_eq!(s.median(), Duration::from_millis(5));
        assert_eq!(s.best(), Duration::from_millis(1));
        assert_eq!(
            s.mean(),
            Duration::from_millis(4) + Duration::from_micros(500)
        );
        assert_eq!(s.first(), Duration::from_millis(5));
        assert_eq!(Samples::default().median(), Duration::ZERO);
        assert_eq!(human(Duration::from_nanos(812)), "812 ns");
        assert_eq!(human(Duration::from_micros(41_300)), "41.300 ms");
        assert_eq!(human(Duration::from_nanos(41_300)), "41.3 µs");
        assert_eq!(human(Duration::from_millis(1250)), "1.25 s");
        assert_eq!(runs(4, || 1).0.len(), 4);
    }
}
