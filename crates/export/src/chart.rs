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
    // The line through the points, broken at each compaction.
    out.push_str("<polyline class=\"used\" points=\"");
    for (i, p) in c.points.iter().enumerate() {
        if i > 0 && c.marks.iter().any(|m| m.before == i) {
            out.push_str("\"/>\n<polyline class=\"used\" points=\"");
        }
        let _ = write!(out, "{:.1},{:.1} ", x(i as f64), y(p.tokens));
    }
    out.push_str("\"/>\n");
    for (i, p) in c.points.iter().enumerate() {
        let how = if p.estimated { "estimated" } else { "reported" };
        let _ = writeln!(
            out,
            "<a href=\"#m-{}\"><circle class=\"req{}{}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.2\"><title>request {} (reply #{}): {} tokens {how}{}</title></circle></a>",
            p.seq,
            if p.estimated { " est" } else { "" },
            if p.rewound { " rewound" } else { "" },
            x(i as f64),
            y(p.tokens),
            i + 1,
            p.seq,
            p.tokens,
            if p.rewound { ", later rewound" } else { "" }
        );
    }
    out.push_str("</svg>\n");
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
        assert_eq!(short_tokens(120_000), "120k");
    }
}
