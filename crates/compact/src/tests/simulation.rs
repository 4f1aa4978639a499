//! The 60-turn simulation: the window holds and compaction triggers at the
//! threshold.

use super::*;

/// A model whose tokenizer counts 3 characters per token plus 4 tokens per
/// message; the summarizer echoes the code words it saw.
struct SimModel;

impl SimModel {
    fn count(r: &ChatRequest) -> u64 {
        let s = request_size(&r.system, &r.messages, &r.tools);
        (s.chars as u64).div_ceil(3) + 4 * r.messages.len() as u64
    }

    /// The model for a `window`; the largest request it answered goes
    /// into `max_seen`.
    fn provider(window: u64, max_seen: Arc<Mutex<u64>>) -> ScriptedProvider {
        ScriptedProvider::answering(move |request| {
            let n = Self::count(request);
            if n > window {
                return Step::overflow(Some(n), Some(window));
            }
            if let Ok(mut m) = max_seen.lock() {
                *m = (*m).max(n);
            }
            let text = if request.system.text().starts_with(SUMMARIZER_SYSTEM_PREFIX) {
                let t = request.messages[0].content.text();
                let mut words: Vec<&str> = t
                    .split_whitespace()
                    .filter(|w| w.starts_with("CW"))
                    .collect();
                words.dedup();
                let last: Vec<&str> = words.iter().rev().take(5).rev().copied().collect();
                format!(
                    "## Active goal\nkeep going\n## Critical context\ncode words: {}",
                    last.join(" ")
                )
            } else {
                "ok".to_owned()
            };
            Step::text(text).usage(Usage {
                prompt_tokens: n,
                completion_tokens: 10,
                cached_tokens: 0,
                ..Usage::default()
            })
        })
        .named("sim")
        .unrecorded()
    }
}

#[tokio::test]
async fn sixty_turns_stay_inside_the_window_and_trigger_at_the_threshold() {
    let window = 8000;
    let c = CompactionConfig {
        threshold_percent: 65.0,
        ..cfg()
    };
    let limits = Limits {
        context_window: Some(window),
        max_input_tokens: None,
        max_output_tokens: Some(500),
    };
    let trig = trigger(&c, &limits);
    let t = trig.tokens.unwrap_or(0);
    assert_eq!(t, 5200);
    let max_seen = Arc::new(Mutex::new(0));
    let model = SimModel::provider(window, max_seen.clone());
    let mut e = Estimator::new(c.chars_per_token, c.image_tokens);
    let mut v = ContextView::new(&c, 16 * 1024);
    let mut guard = AutoGuard::new(c.max_consecutive);
    let mut h = Hist::new();
    let base = "You are eonyx, a coding agent. ".repeat(20);
    let system = |v: &ContextView| SystemPrompt {
        stable: base.clone(),
        suffix: match v.summary() {
            Some(s) => format!(
                "Current date (UTC): 2026-07-05\n\n# Summary of earlier conversation\n\n{s}"
            ),
            None => "Current date (UTC): 2026-07-05".into(),
        },
    };
    let mut at_trigger = Vec::new();
    let mut compactions = 0;
    for turn in 0..60 {
        v.push(h.user(&format!(
            "Turn {turn}: look at module {} and report. Remember code word CW{turn}. {}",
            turn % 5,
            "Details follow. ".repeat(5)
        )));
        for step in 0..2 {
            let sys = system(&v);
            let size = RequestSize::new(sys.chars(), 0) + v.size();
            if guard.allowed() && e.estimate(&size) > t {
                let req = ChatRequest::new("m", sys.clone(), v.messages());
                if e.calibrated() {
                    at_trigger.push(SimModel::count(&req) as f64 * 100.0 / window as f64);
                }
                let overhead = e.tokens_for(RequestSize::new(base.len() + 40, 0));
                let budget = tail_budget(request_target(&trig), overhead, &c, window);
                let pl = plan(&v, &c, &e, budget).unwrap_or_else(|err| panic!("{err}"));
                // The newest code word that is being compacted away.
                let newest_cw = pl
                    .compacted(&v)
                    .iter()
                    .rev()
                    .find(|r| r.message.role == Role::User)
                    .and_then(|r| {
                        r.message
                            .content
                            .text()
                            .split_whitespace()
                            .find(|w| w.starts_with("CW"))
                            .map(str::to_owned)
                    });
                let input = CompactInput {
                    model_name: "m",
                    view: &v,
                    plan: &pl,
                    cfg: &c,
                    focus: None,
                    trigger: CompactionTrigger::Auto,
                    estimator: &e,
                    window,
                    system_chars: sys.chars(),
                    next: None,
                    pinned: crate::Pinned::Nothing,
                    said_note: None,
                };
                let mut rec = compact(&model, input, &mut |_| {}, CancellationToken::new())
                    .await
                    .unwrap_or_else(|err| panic!("turn {turn}: {err}"));
                h.seq += 1;
                rec.seq = h.seq;
                v.apply(&rec);
                compactions += 1;
                let after = e.estimate(&(RequestSize::new(system(&v).chars(), 0) + v.size()));
                assert!(
                    guard.after_compaction(after, t).is_none(),
                    "turn {turn}: {after}"
                );
                // Retention: what was compacted reaches the next request
                // through the summary.
                if let Some(cw) = newest_cw {
                    assert!(rec.summary.contains(&cw), "turn {turn}: {cw} lost");
                }
            }
            let sys = system(&v);
            let req = ChatRequest::new("m", sys.clone(), v.messages());
            let sent = RequestSize::new(sys.chars(), 0) + v.size();
            let resp = model
                .send(&req, &mut |_| {})
                .await
                .unwrap_or_else(|err| panic!("turn {turn}: {err}"));
            e.observe(&sent, resp.usage.map(|u| u.prompt_tokens).unwrap_or(0));
            if step == 0 {
                for r in h.tool(
                    "read_file",
                    json!({"path": format!("src/module_{}.rs", turn % 5)}),
                    &format!("// module {}\n{}", turn % 5, "fn item() {}\n".repeat(50)),
                ) {
                    v.push(r);
                }
            } else {
                v.push(h.say(&format!(
                    "Module {} looks fine. {}",
                    turn % 5,
                    "Notes. ".repeat(15)
                )));
            }
        }
    }
    let max_seen = max_seen.lock().map(|m| *m).unwrap_or(u64::MAX);
    assert!(max_seen <= window, "{max_seen}");
    assert!(compactions >= 4, "{compactions}");
    assert!(!at_trigger.is_empty());
    for pct in &at_trigger {
        assert!((pct - 65.0).abs() <= 5.0, "{at_trigger:?}");
    }
    // The estimator learned the sim's ~3 chars/token (plus message overhead).
    assert!(e.ratio() < 3.2 && e.ratio() > 2.4, "{}", e.ratio());
}
