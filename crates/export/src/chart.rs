//! The context chart of the HTML page, inline SVG: one point per main
//! request (the prompt tokens the server reported, hollow where they were
//! estimated), the window as the top line, the compaction trigger as a
//! dashed line, and every compaction as a vertical mark linked to its
//! place in the transcript (`#c-SEQ`). Each point links to its reply
//! (`#m-SEQ`).

use std::fmt::Write as _;

use crate::escape::escape;
use crate::model::Chart;

const W: f64 = 860.0;
const H: f64 = 260.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 18.0;
const BOTTOM: f64 = 34.0;

/// The `<svg>` element, or a sentence when there is no request to draw.
pub(crate) fn render(out: &mut String, c: &Chart) {
    if c.points.is_empty() {
        out.push_str("<p class=\"muted\">No model request yet: nothing to chart.</p>\n");
        return;
    }
    let max_point = c.points.iter().map(|p| p.tokens).max().unwrap_or(0);
    let top = [Some(max_point), c.window, c.threshold]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(1)
        .max(1);
    let y_max = nice_ceiling(top as f64 * 1.05);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let n = c.points.len();
    let x = |i: f64| {
        LEFT + if n > 1 {
            plot_w * i / (n - 1) as f64
        } else {
            plot_w / 2.0
        }
    };
    let y = |t: u64| TOP + plot_h * (1.0 - t as f64 / y_max);
    let _ = write!(
        out,
        "<svg class=\"chart\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-labelledby=\"chart-title\" xmlns=\"http://www.w3.org/2000/svg\">\n<title id=\"chart-title\">Context used by each of the {n} main requests, against the window</title>\n"
    );
    // Grid and y labels.
    for k in 0..=4 {
        let v = y_max * k as f64 / 4.0;
        let yy = y(v as u64);
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\"/><text class=\"axis\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            W - RIGHT,
            LEFT - 6.0,
            yy + 4.0,
            short_tokens(v as u64)
        );
    }
    let _ = writeln!(
        out,
        "<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">main requests, in order (1–{n})</text>",
        LEFT + plot_w / 2.0,
        H - 8.0
    );
    if let Some(w) = c.window {
        let yy = y(w);
        let _ = writeln!(
            out,
            "<line class=\"window\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\"/><text class=\"label\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">window {w}</text>",
            W - RIGHT,
            W - RIGHT,
            yy - 4.0
        );
    }
    if let Some(t) = c.threshold {
        let yy = y(t);
        let _ = writeln!(
            out,
            "<line class=\"threshold\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\"/><text class=\"label threshold-label\" x=\"{}\" y=\"{:.1}\">compaction at {t}</text>",
            W - RIGHT,
            LEFT + 4.0,
            yy - 4.0
        );
    }
    for (k, m) in c.marks.iter().enumerate() {
        // Between the request before it and the one after.
        let xx = if m.before == 0 {
            LEFT
        } else if m.before >= n {
            W - RIGHT
        } else {
            (x((m.before - 1) as f64) + x(m.before as f64)) / 2.0
        };
        // The label beside the line, on the side with room.
        let at_right = xx > W - RIGHT - 30.0;
        let anchor = if at_right { "end" } else { "start" };
        let mut tip = String::new();
        escape(
            &mut tip,
            &format!(
                "compaction #{} ({}): {} → {} tokens",
                m.seq,
                m.trigger.as_str(),
                m.tokens_before,
                m.tokens_after
            ),
        );
        let _ = writeln!(
            out,
            "<a class=\"mark\" href=\"#c-{}\"><title>{tip}</title><line x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{TOP}\" y2=\"{}\"/><text x=\"{:.1}\" y=\"{}\" text-anchor=\"{anchor}\">C{}</text></a>",
            m.seq,
            TOP + plot_h,
            if at_right { xx - 4.0 } else { xx + 4.0 },
            TOP + plot_h - 6.0,
            k + 1
        );
    }
    // The line through the points, broken at each compaction (the marks
    // are in order).
    out.push_str("<polyline class=\"used\" points=\"");
    let mut breaks = c.marks.iter().map(|m| m.before).peekable();
    for (i, p) in c.points.iter().enumerate() {
        while breaks.next_if(|&b| b < i).is_some() {}
        if i > 0 && breaks.peek() == Some(&i) {
            out.push_str("\"/>\n<polyline class=\"used\" points=\"");
        }
        push_1dp(out, x(i as f64));
        out.push(',');
        push_1dp(out, y(p.tokens));
        out.push(' ');
    }
    out.push_str("\"/>\n");
    let mut num = itoa_buf();
    for (i, p) in c.points.iter().enumerate() {
        out.push_str("<a href=\"#m-");
        out.push_str(num.format(p.seq));
        out.push_str("\"><circle class=\"req");
        if p.estimated {
            out.push_str(" est");
        }
        if p.rewound {
            out.push_str(" rewound");
        }
        out.push_str("\" cx=\"");
        push_1dp(out, x(i as f64));
        out.push_str("\" cy=\"");
        push_1dp(out, y(p.tokens));
        out.push_str("\" r=\"3.2\"><title>request ");
        out.push_str(num.format(i as u64 + 1));
        out.push_str(" (reply #");
        out.push_str(num.format(p.seq));
        out.push_str("): ");
        out.push_str(num.format(p.tokens));
        out.push_str(if p.estimated {
            " tokens estimated"
        } else {
            " tokens reported"
        });
        if p.rewound {
            out.push_str(", later rewound");
        }
        out.push_str("</title></circle></a>\n");
    }
    out.push_str("</svg>\n");
}

/// `v` with one decimal, as `format!("{v:.1}")` writes it (the nearest
/// tenth of the exact value, a tie to the even digit), without the
/// formatting machinery: the chart writes four numbers per request.
fn push_1dp(out: &mut String, v: f64) {
    // Exactly: v = m * 2^e, so v * 10 = 10m * 2^e; round that to an integer.
    let bits = v.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    if bits >> 63 != 0 || exp == 0x7ff || exp >= 1075 + 4 {
        // Negative, not finite or huge: never on the chart, but right.
        let _ = write!(out, "{v:.1}");
        return;
    }
    let (m, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), exp - 1075)
    };
    let tenths = if e >= 0 {
        (m * 10) << e
    } else if e < -60 {
        0
    } else {
        let shift = -e as u32;
        let scaled = m * 10;
        let q = scaled >> shift;
        let rem = scaled & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        q + u64::from(rem > half || (rem == half && q % 2 == 1))
    };
    let mut num = itoa_buf();
    out.push_str(num.format(tenths / 10));
    out.push('.');
    out.push(char::from(b'0' + (tenths % 10) as u8));
}

/// Room to write a `u64` in decimal.
struct Digits([u8; 20]);

fn itoa_buf() -> Digits {
    Digits([0; 20])
}

impl Digits {
    fn format(&mut self, mut n: u64) -> &str {
        let mut i = self.0.len();
        loop {
            i -= 1;
            self.0[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        // Only ASCII digits were written.
        std::str::from_utf8(&self.0[i..]).unwrap_or("0")
    }
}

/// A round number at or above `v` for the top of the axis.
fn nice_ceiling(v: f64) -> f64 {
    let v = v.max(1.0);
    let mag = 10f64.powf(v.log10().floor());
    for step in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if step * mag >= v {
            return step * mag;
        }
    }
    10.0 * mag
}

/// `950`, `12k`, `1.2M`.
fn short_tokens(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else if n >= 10_000 {
        format!("{}k", n / 1000)
    } else if n >= 1000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tenths_are_written_as_the_formatter_writes_them() {
        let mut values = vec![
            0.0,
            0.05,
            0.15,
            0.25,
            0.35,
            0.45,
            0.75,
            1.25,
            2.5,
            64.25,
            64.75,
            99.95,
            99.999,
            860.0,
            1e-300,
            5e-324,
            1e15,
            123456.789,
            4_503_599_627_370_495.5,
        ];
        values.extend((0..20_000).map(|i| f64::from(i) * 0.0125));
        values.extend((1..5_000).map(|i| 64.0 + 780.0 * f64::from(i) / 4999.0));
        values.extend((1..5_000).map(|i| 18.0 + 208.0 * (1.0 - f64::from(i) * 37.0 / 250_000.0)));
        for v in values {
            let mut out = String::new();
            super::push_1dp(&mut out, v);
            assert_eq!(out, format!("{v:.1}"), "{v:e}");
        }
        let mut d = super::itoa_buf();
        assert_eq!(d.format(0), "0");
        assert_eq!(d.format(u64::MAX), u64::MAX.to_string());
    }

    use super::*;
    use crate::model::{Mark, Point};
    use eonyx_core::CompactionTrigger;

    #[test]
    fn one_circle_per_request_and_one_linked_mark_per_compaction() {
        let p = |seq, tokens| Point {
            seq,
            tokens,
            estimated: seq == 4,
            rewound: false,
        };
        let c = Chart {
            points: vec![p(2, 1000), p(4, 5000), p(7, 1500)],
            marks: vec![Mark {
                seq: 5,
                before: 2,
                trigger: CompactionTrigger::Auto,
                tokens_before: 5200,
                tokens_after: 900,
            }],
            window: Some(8192),
            threshold: Some(6000),
        };
        let mut out = String::new();
        render(&mut out, &c);
        assert_eq!(out.matches("<circle class=\"req").count(), 3);
        assert_eq!(out.matches("class=\"req est\"").count(), 1);
        assert_eq!(out.matches("<a class=\"mark\" href=\"#c-5\">").count(), 1);
        assert!(out.contains("window 8192") && out.contains("compaction at 6000"));
        assert_eq!(nice_ceiling(8601.6), 10000.0);
        assert!(
            out.contains("<circle class=\"req est\" cx=\"454.0\" cy=\""),
            "{out}"
        );
        assert_eq!(short_tokens(120_000), "120k");
    }
}
