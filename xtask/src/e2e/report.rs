//! The binary stage's report: the request table; per summarizer request
//! its path (shared-prefix or transcript), cache reuse and prefill; per
//! compaction the prefill it adds; then the standing guarantees (no
//! transcript request with room for the shared one, no summary asked twice,
//! peak, reuse between compactions, no unrecovered 400).

use serde_json::Value;

use super::proxy::Entry;
use super::setup::Setup;

/// What [`compaction_report`] found: lines to print, failed checks.
pub(super) struct Report {
    pub(super) lines: Vec<String>,
    pub(super) failed: usize,
}

/// Tokens a shared-prefix summarizer request may compute beyond its
/// instruction (naming no message): the name of the first kept message (a
/// 48-character quote), the chat template's framing, the end of the last
/// reply where it tokenizes differently when sent back.
const SUMMARIZER_SLACK: u64 = 96;

pub(crate) fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// The shared-prefix instruction's tokens (naming no message: the name
/// adds a few dozen).
fn instruction_tokens(window: u64, tokens: &dyn Fn(&str) -> Option<u64>, setup: &Setup) -> u64 {
    let floor = eonyx_compact::min_shared_budget(&setup.compaction(), window);
    let instruction = eonyx_compact::shared_prefix_instruction(None, true, None, floor);
    tokens(&instruction).unwrap_or(instruction.len() as u64 / 3)
}

/// Per summarizer request: its path, cache reuse and prefill; and whether
/// a transcript request was sent although the shared-prefix one had room
/// (docs/compaction.md#the-summarizers-reserve): the conversation's last
/// request and its reply, the instruction and the least summary budget in
/// the window. `false` after an overflow (that request is past the window).
fn summarizer_lines(
    entries: &[Entry],
    window: u64,
    tokens: &dyn Fn(&str) -> Option<u64>,
    setup: &Setup,
    check: &mut dyn FnMut(bool, String),
) -> Vec<String> {
    let floor = eonyx_compact::min_shared_budget(&setup.compaction(), window);
    let instruction_tokens = instruction_tokens(window, tokens, setup);
    let margin = 16 + window / 100;
    let posts: Vec<&Entry> = entries.iter().filter(|e| e.method == "POST").collect();
    let mut lines = Vec::new();
    let mut k = 0;
    for (i, e) in posts.iter().enumerate() {
        if !e.summarizer || e.status != 200 {
            continue;
        }
        k += 1;
        let (p, c) = (e.prompt_n.unwrap_or(0), e.cache_n.unwrap_or(0));
        let path = if e.shared {
            "shared-prefix"
        } else {
            "transcript"
        };
        let ms = e
            .prompt_ms
            .map_or(String::new(), |ms| format!(" in {ms:.0} ms"));
        let mut line = format!(
            "summarizer request {k}: {path}, cache reuse {:.0}% ({c} of {}), prefill {p} tokens{ms}",
            pct(c, c + p),
            c + p
        );
        if !e.shared && !setup.transcript {
            let overflowed = i > 0 && posts[i - 1].overflow;
            let prev = posts[..i]
                .iter()
                .rev()
                .find(|p| !p.summarizer && p.status == 200);
            let shared_need =
                prev.and_then(|p| Some(p.cache_n? + p.prompt_n? + p.predicted_n.unwrap_or(0)));
            match shared_need {
                Some(n) if !overflowed => {
                    let room = window.saturating_sub(n + instruction_tokens + margin);
                    line.push_str(&format!(
                        "; the shared-prefix one would have left {room} tokens for the summary"
                    ));
                    check(
                        room < floor,
                        format!(
                            "summarizer request {k}: a transcript request only without room for the shared one ({room} < {floor} tokens)"
                        ),
                    );
                }
                _ => line.push_str("; after an overflow (the shared-prefix one cannot fit)"),
            }
        }
        // One summarizer request per compaction: a summary cut at its cap
        // is kept with its note, never asked for again.
        if i > 0 && posts[i - 1].summarizer {
            check(
                false,
                format!("summarizer request {k}: the same summary asked for twice"),
            );
        }
        lines.push(line);
    }
    lines
}

/// Per compaction: the summarizer's cache reuse
/// (`cache_n / (cache_n + prompt_n)`) and the prefill it adds over a steady
/// turn (the summarizer's own prefill plus what the first request after it
/// prefills beyond a steady turn, in steady turns: tokens and, when the
/// server reports it, time). Then the standing guarantees: peak request
/// within 3 points of the trigger, every steady turn reusing the whole
/// previous request, no unrecovered 400.
pub(super) fn compaction_report(
    entries: &[Entry],
    window: u64,
    tokens: &dyn Fn(&str) -> Option<u64>,
    setup: &Setup,
) -> Report {
    let mut checks: Vec<(bool, String)> = Vec::new();
    let mut check = |ok: bool, what: String| checks.push((ok, what));
    let mut lines = summarizer_lines(entries, window, tokens, setup, &mut check);
    let chat: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.method == "POST" && e.status == 200)
        .collect();
    // Steady turns: turn requests after the first, not right after a
    // compaction (or an overflow), with timings.
    let mut steady_tokens = Vec::new();
    let mut steady_ms = Vec::new();
    let (mut between_cached, mut between_total) = (0u64, 0u64);
    // Steady turns that reused the whole previous request from the cache,
    // and those that did not (request numbers among the chat requests).
    let (mut whole, mut partial) = (0usize, Vec::new());
    for (i, e) in chat.iter().enumerate() {
        if e.summarizer || i == 0 || chat[i - 1].summarizer {
            continue;
        }
        let (Some(p), Some(c)) = (e.prompt_n, e.cache_n) else {
            continue;
        };
        between_cached += c;
        between_total += c + p;
        if let (Some(pp), Some(pc)) = (chat[i - 1].prompt_n, chat[i - 1].cache_n) {
            if c >= pp + pc {
                whole += 1;
            } else {
                partial.push(i + 1);
            }
        }
        steady_tokens.push(p as f64);
        if let Some(ms) = e.prompt_ms {
            steady_ms.push(ms);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let steady_t = median(&mut steady_tokens).max(1.0);
    let steady_ms = median(&mut steady_ms);
    lines.push(format!(
        "steady turn: {steady_t:.0} prompt tokens prefilled (median){}",
        if steady_ms > 0.0 {
            format!(", {:.0} ms", steady_ms)
        } else {
            String::new()
        }
    ));
    let mut n = 0;
    let mut worst_reuse: f64 = 100.0;
    let mut worst_turns: f64 = 0.0;
    let mut worst_summ_p = 0u64;
    // One compaction is a run of consecutive summarizer requests (one,
    // unless a summary was asked for twice, which fails above), followed by
    // the first turn request after it.
    let mut i = 0;
    while i < chat.len() {
        if !chat[i].summarizer {
            i += 1;
            continue;
        }
        let first = i;
        while i < chat.len() && chat[i].summarizer {
            i += 1;
        }
        let attempts = &chat[first..i];
        let e = attempts[0];
        n += 1;
        let (p, c) = (e.prompt_n.unwrap_or(0), e.cache_n.unwrap_or(0));
        let reuse = pct(c, c + p);
        let summ_p: u64 = attempts.iter().map(|a| a.prompt_n.unwrap_or(0)).sum();
        let after = chat.get(i);
        let after_p = after.and_then(|a| a.prompt_n).unwrap_or(0);
        let extra_tokens = summ_p as f64 + (after_p as f64 - steady_t).max(0.0);
        let turns = extra_tokens / steady_t;
        let summ_ms: Option<f64> = attempts.iter().map(|a| a.prompt_ms).sum();
        let ms = match (summ_ms, after.and_then(|a| a.prompt_ms)) {
            (Some(s), Some(a)) if steady_ms > 0.0 => {
                let extra = s + (a - steady_ms).max(0.0);
                format!(
                    ", {extra:.0} ms = {:.1} steady turns by time",
                    extra / steady_ms
                )
            }
            _ => String::new(),
        };
        worst_reuse = worst_reuse.min(reuse);
        worst_turns = worst_turns.max(turns);
        if e.shared {
            worst_summ_p = worst_summ_p.max(summ_p);
        }
        // The stable prefix (context files, memory, tools... through the
        // date line) must come from the cache in the first request after.
        if let Some(a) = after
            && let (Some(text), Some(c)) = (a.stable_prefix.as_deref(), a.cache_n)
        {
            match tokens(text) {
                Some(t) => check(
                    c >= t,
                    format!(
                        "compaction {n}: the first request after it reuses the stable prefix through the date line ({c} cached >= {t} prefix tokens)"
                    ),
                ),
                None => lines.push(format!(
                    "compaction {n}: could not tokenize the stable prefix to check its reuse"
                )),
            }
        }
        lines.push(format!(
            "compaction {n} ({}): summarizer reuse {reuse:.0}% ({c} cached of {}); adds {extra_tokens:.0} prefill tokens (summarizer {summ_p} in {} request(s), first request after it {after_p}) = {turns:.1} steady turns{ms}",
            if e.shared { "shared-prefix" } else { "transcript" },
            c + p,
            attempts.len()
        ));
        // The two parts have different causes: the summarizer's own prefill
        // is what the request shape decides; the first request after it must
        // prefill the new summary and the kept turns behind it (the summary
        // precedes the retained messages, docs/prompt.md#the-request), which no prefix
        // cache can hold.
        lines.push(format!(
            "  of which: summarizer {:.1} steady turns; new summary + kept turns in the first request after it {:.1} steady turns",
            summ_p as f64 / steady_t,
            (after_p as f64 - steady_t).max(0.0) / steady_t
        ));
    }
    let shared = chat
        .iter()
        .enumerate()
        .filter(|(i, e)| e.shared && (*i == 0 || !chat[i - 1].summarizer))
        .count();
    if n > 0 {
        lines.push(format!(
            "{shared} of {n} compactions used the shared-prefix summarizer"
        ));
        check(
            worst_reuse >= 85.0,
            format!("summarizer cache reuse >= 85% (worst {worst_reuse:.0}%)"),
        );
        // In steady turns the extra prefill depends on the turn's size, and
        // most of it is the new summary and the kept turns that the first
        // request after must compute (docs/compaction.md#cost): reported.
        // What the request shape decides is checked: the summarizer computes
        // its instruction and little else (the name of the first kept
        // message, the template's framing, a re-tokenized reply end).
        lines.push(format!(
            "extra prefill per compaction: worst {worst_turns:.1} steady turns"
        ));
        let most = instruction_tokens(window, tokens, setup) + SUMMARIZER_SLACK;
        check(
            worst_summ_p <= most,
            format!(
                "every summarizer request computes at most its instruction + {SUMMARIZER_SLACK} tokens (worst {worst_summ_p} <= {most})"
            ),
        );
    }
    let trigger = eonyx_compact::trigger(&setup.compaction(), &setup.limits(window))
        .tokens
        .unwrap_or(window);
    let peak = chat
        .iter()
        .filter(|e| !e.summarizer)
        .filter_map(|e| Some(e.prompt_n? + e.cache_n?))
        .max()
        .unwrap_or(0);
    check(
        pct(peak, window) <= pct(trigger, window) + 3.0,
        format!(
            "peak turn request {peak} tokens = {:.1}% of {window}, trigger {:.1}% (within 3 points)",
            pct(peak, window),
            pct(trigger, window)
        ),
    );
    // How much of a steady turn is new depends on the turn's size against
    // the window (a 160-word line is a sixth of a 2,048-token request); what
    // the cache must do is hold everything sent before.
    lines.push(format!(
        "reuse between compactions {:.1}% ({between_cached} of {between_total} prompt tokens)",
        pct(between_cached, between_total)
    ));
    check(
        partial.is_empty(),
        format!(
            "every steady turn reuses the whole previous request ({whole} of {}{})",
            whole + partial.len(),
            if partial.is_empty() {
                String::new()
            } else {
                format!("; not chat requests {partial:?}")
            }
        ),
    );
    let posts: Vec<&Entry> = entries.iter().filter(|e| e.method == "POST").collect();
    let unrecovered = posts
        .iter()
        .enumerate()
        .filter(|(i, e)| e.status == 400 && !posts[i + 1..].iter().any(|l| l.status == 200))
        .count();
    let bad = posts.iter().filter(|e| e.status == 400).count();
    check(
        unrecovered == 0,
        format!("no unrecovered 400 ({bad} answered 400, {unrecovered} unrecovered)"),
    );
    let failed = checks.iter().filter(|(ok, _)| !ok).count();
    for (ok, what) in checks {
        lines.push(format!("{}  {what}", if ok { "PASS" } else { "FAIL" }));
    }
    Report { lines, failed }
}

pub(super) fn print_table(entries: &[Entry]) {
    println!(
        "{:>4}  {:<6} {:<22} {:>6} {:>5} {:>9} {:>7} {:>7}",
        "#", "kind", "path", "status", "msgs", "prompt_n", "cache_n", "hit"
    );
    for (i, e) in entries.iter().enumerate() {
        let kind = if e.summarizer {
            "summ"
        } else if e.method == "GET" {
            "probe"
        } else {
            "turn"
        };
        let hit = match (e.cache_n, e.prompt_n) {
            (Some(c), Some(p)) if c + p > 0 => format!("{:.0}%", 100.0 * c as f64 / (c + p) as f64),
            _ => "-".into(),
        };
        let opt = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
        println!(
            "{:>4}  {:<6} {:<22} {:>6} {:>5} {:>9} {:>7} {:>7}",
            i + 1,
            kind,
            e.path,
            e.status,
            e.messages,
            opt(e.prompt_n),
            opt(e.cache_n),
            hit
        );
    }
    let (cached, total) = entries
        .iter()
        .filter(|e| !e.summarizer && e.method == "POST")
        .skip(1)
        .filter_map(|e| Some((e.cache_n?, e.cache_n? + e.prompt_n?)))
        .fold((0, 0), |(c, t), (ec, et)| (c + ec, t + et));
    if total > 0 {
        println!(
            "prompt cache over turn requests after the first: {cached} of {total} prompt tokens cached ({:.0}%)",
            100.0 * cached as f64 / total as f64
        );
    }
}

/// (compaction records, their triggers, message records) over every session file.
pub(super) fn session_stats(dir: &std::path::Path) -> (usize, Vec<String>, usize) {
    let mut compactions = 0;
    let mut triggers = Vec::new();
    let mut messages = 0;
    let Ok(read) = std::fs::read_dir(dir) else {
        return (0, triggers, 0);
    };
    for entry in read.flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            match v["type"].as_str() {
                Some("compaction") => {
                    compactions += 1;
                    triggers.push(v["trigger"].as_str().unwrap_or("?").to_owned());
                }
                Some("message") => messages += 1,
                _ => {}
            }
        }
    }
    (compactions, triggers, messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(summarizer: bool, shared: bool, cache_n: u64, prompt_n: u64) -> Entry {
        Entry {
            method: "POST".into(),
            path: "/v1/chat/completions".into(),
            status: 200,
            summarizer,
            shared,
            messages: 0,
            prompt_n: Some(prompt_n),
            cache_n: Some(cache_n),
            prompt_ms: Some(10.0),
            predicted_n: Some(64),
            overflow: false,
            stable_prefix: None,
            tools: String::new(),
        }
    }

    fn failed(entries: &[Entry], setup: &Setup) -> (Vec<String>, Vec<String>) {
        let mut fails = Vec::new();
        let lines = summarizer_lines(
            entries,
            4096,
            &|t| Some(t.len() as u64 / 4),
            setup,
            &mut |ok, what| {
                if !ok {
                    fails.push(what);
                }
            },
        );
        (lines, fails)
    }

    #[test]
    fn a_transcript_request_with_room_for_the_shared_one_fails_the_report() {
        let setup = Setup::default();
        // 2,000 tokens of conversation in 4,096: the shared one had room.
        let roomy = [post(false, false, 1900, 100), post(true, false, 10, 2500)];
        let (lines, fails) = failed(&roomy, &setup);
        assert!(
            lines[0].starts_with("summarizer request 1: transcript, cache reuse 0%"),
            "{lines:?}"
        );
        assert_eq!(fails.len(), 1, "{fails:?}");
        // 3,900: it had none.
        let full = [post(false, false, 3800, 100), post(true, false, 10, 2500)];
        assert!(failed(&full, &setup).1.is_empty());
        // After an overflow it is what is needed.
        let mut over = post(false, false, 0, 0);
        over.status = 400;
        over.overflow = true;
        let overflowed = [
            post(false, false, 1900, 100),
            over,
            post(true, false, 10, 2500),
        ];
        let (lines, fails) = failed(&overflowed, &setup);
        assert!(fails.is_empty(), "{fails:?}");
        assert!(lines[0].contains("after an overflow"), "{lines:?}");
        // Asked for transcripts on purpose: reported, not failed.
        let forced = Setup {
            transcript: true,
            ..Setup::default()
        };
        assert!(failed(&roomy, &forced).1.is_empty());
    }

    #[test]
    fn shared_requests_report_reuse_and_a_second_request_fails() {
        let setup = Setup::default();
        let entries = [post(false, false, 2900, 200), post(true, true, 3000, 300)];
        let (lines, fails) = failed(&entries, &setup);
        assert!(fails.is_empty(), "{fails:?}");
        assert_eq!(
            lines,
            [
                "summarizer request 1: shared-prefix, cache reuse 91% (3000 of 3300), prefill 300 tokens in 10 ms"
            ]
        );
        // Asked again on the shared prefix, or as a transcript: both fail.
        for shared in [true, false] {
            let twice = [
                post(false, false, 3800, 100),
                post(true, true, 3000, 300),
                post(true, shared, 10, 2500),
            ];
            let fails = failed(&twice, &setup).1;
            assert!(
                fails.iter().any(|f| f.contains("asked for twice")),
                "{fails:?}"
            );
        }
    }

    #[test]
    fn a_steady_turn_that_recomputes_part_of_the_previous_request_fails() {
        let setup = Setup::default();
        let fails = |entries: &[Entry]| {
            let r = compaction_report(entries, 4096, &|t| Some(t.len() as u64 / 4), &setup);
            r.lines
                .into_iter()
                .filter(|l| l.starts_with("FAIL") && l.contains("steady turn"))
                .collect::<Vec<_>>()
        };
        // Each turn reuses all of the previous prompt (plus its reply),
        // however large the new line is against the window.
        let whole = [
            post(false, false, 10, 600),
            post(false, false, 660, 223),
            post(false, false, 946, 223),
        ];
        assert!(fails(&whole).is_empty(), "{:?}", fails(&whole));
        // The third recomputes tokens the server had already seen.
        let evicted = [
            post(false, false, 10, 600),
            post(false, false, 660, 223),
            post(false, false, 376, 793),
        ];
        let f = fails(&evicted);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("1 of 2") && f[0].contains("[3]"), "{f:?}");
    }

    #[test]
    fn a_summarizer_computing_more_than_its_instruction_fails() {
        let setup = Setup::default();
        let fails = |summ_p: u64| {
            let entries = [
                post(false, false, 10, 600),
                post(false, false, 660, 223),
                post(true, true, 946, summ_p),
                post(false, false, 376, 500),
            ];
            compaction_report(&entries, 4096, &|t| Some(t.len() as u64 / 4), &setup)
                .lines
                .into_iter()
                .filter(|l| l.starts_with("FAIL") && l.contains("its instruction"))
                .count()
        };
        // The instruction alone; the instruction and a 223-token line.
        assert_eq!(fails(160), 0);
        assert_eq!(fails(160 + 223), 1);
    }
}
