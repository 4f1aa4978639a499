//! Provider-native compaction as the agent composes it
//! (docs/compaction.md#native-compaction): whether this compaction asks the
//! provider, what a failure means (fall back in the same compaction; say
//! so once; remember for the base URL + model when the server does not
//! offer it), and when a native result no longer applies (another model,
//! a refused item). The wire is `eonyx-provider`'s, the request and the
//! record are `eonyx-compact`'s; what is remembered for good lives in the
//! client's quirks (`limits.json`), and this room only holds whether the
//! last call of this session gave nothing usable. It asks the provider
//! ([`NativeState::ask`]) and, for a native result that no longer
//! applies, reads back from the session file what eonyx's own summary
//! replaces it with ([`replacement`]); the agent composes both
//! (`agent/compaction.rs`, `agent/compaction_native.rs`).

use std::sync::Arc;

use eonyx_compact::{ContextView, Plan};
use eonyx_core::config::NativeMode;
use eonyx_core::provider::{CancellationToken, NativeError, NativeOutcome, RequestQuirks};
use eonyx_core::{
    ChatRequest, CompactionMode, CompactionRecord, CompactionTrigger, ModelConfig,
    NativeCompaction, NativeProvider, Provider, ProviderError, Record,
};

use crate::error::AgentError;

/// The mode in force for `model`: `models.<key>.compaction_native` wins
/// over `compaction.native`.
pub(crate) fn mode(model: &ModelConfig, compaction: &eonyx_core::CompactionConfig) -> NativeMode {
    model.compaction_native.unwrap_or(compaction.native)
}

/// The native wire to ask in this compaction, if any: the mode is
/// `auto`, the session's model summarizes (not another
/// `compaction.model`), and the client's wire offers it now (never Chat
/// Completions; never once remembered as unsupported).
pub(crate) fn wire_to_ask(
    model: &ModelConfig,
    compaction: &eonyx_core::CompactionConfig,
    provider: &dyn Provider,
) -> Option<NativeProvider> {
    let own_model = compaction.model.is_empty() || compaction.model == model.key;
    if mode(model, compaction) != NativeMode::Auto || !own_model {
        return None;
    }
    provider.native_compaction()
}

/// The wire a request to `model` speaks (`responses_api`: Chat
/// Completions sent it to the Responses API, remembered), for checking
/// that a native result may be sent to it.
pub(crate) fn wire_of(model: &ModelConfig, responses_api: bool) -> Option<NativeProvider> {
    match model.provider {
        eonyx_core::config::ProviderKind::Anthropic => Some(NativeProvider::Anthropic),
        eonyx_core::config::ProviderKind::Openai => {
            let responses =
                responses_api || model.default_api() == eonyx_core::config::OpenAiApi::Responses;
            responses.then_some(NativeProvider::Responses)
        }
    }
}

/// Whether `native` may go to the session's model as it is now: the same
/// wire, model id and server (base URL). After `/model` elsewhere it does
/// not, and eonyx's own summary of that history replaces it; a record
/// without a base URL does not once the model was changed
/// (`model_unchanged` false).
pub(crate) fn applies(
    native: &NativeCompaction,
    model: &ModelConfig,
    responses_api: bool,
    model_unchanged: bool,
) -> bool {
    wire_of(model, responses_api)
        .is_some_and(|w| native.is_for(w, &model.name, &model.base_url, model_unchanged))
}

/// Attach the view's native items to `req` when they apply.
pub(crate) fn attach(
    req: &mut ChatRequest,
    native: Option<&NativeCompaction>,
    model: &ModelConfig,
    responses_api: bool,
    model_unchanged: bool,
) {
    req.native = native
        .filter(|n| applies(n, model, responses_api, model_unchanged))
        .cloned();
}

/// What the room remembers between compactions of one session.
#[derive(Debug, Default)]
pub(crate) struct NativeState {
    /// The last native call gave nothing usable: a second empty result in
    /// a row is remembered in `limits.json` (SPEC 31, settled).
    empty_once: bool,
}

impl NativeState {
    /// A native call succeeded: the empty-result count starts over.
    pub(crate) fn succeeded(&mut self) {
        self.empty_once = false;
    }

    /// A native call failed with `err`: the one stderr line to show, and
    /// the quirks to set on the client when it is to be remembered for the
    /// base URL + model. Only what says the server does not offer native
    /// compaction is remembered: 404/405/501 or an error naming the
    /// endpoint or field as unsupported at once, an empty result when the
    /// call before it was empty too. A transient failure (5xx, 529, no
    /// answer within the timeouts, an answer that broke off) is not: a
    /// later compaction asks again.
    pub(crate) fn failed(
        &mut self,
        err: &NativeError,
        quirks: RequestQuirks,
    ) -> (String, Option<RequestQuirks>) {
        let remember = match err {
            NativeError::Unsupported(_) => true,
            NativeError::Empty(_) => std::mem::replace(&mut self.empty_once, true),
            NativeError::Broken(_) | NativeError::Failed(_) => false,
        };
        let tail = if remember {
            "; remembered for this base URL and model, not tried again (`eonyx config --reset-limits` forgets)"
        } else {
            "; a later compaction asks the provider again"
        };
        let line = format!(
            "native compaction failed ({err}); compacted with eonyx's own summarizer instead{tail}"
        );
        let set = remember.then_some(RequestQuirks {
            no_native_compaction: true,
            ..quirks
        });
        (line, set)
    }
}

/// What asking the provider to compact gave.
pub(crate) enum Asked {
    /// Its compaction, for the record.
    Compacted(NativeOutcome),
    /// Not asked, or it failed: eonyx's own summarizer writes this
    /// compaction. `line`: the failure, said once; `remember`: the
    /// client's quirks now say the server does not offer it (to be saved).
    Own {
        line: Option<String>,
        remember: bool,
    },
}

impl NativeState {
    /// Ask `provider` to compact with `req` (`None`: this compaction does
    /// not ask it, [`wire_to_ask`]); a failure is counted, and remembered
    /// on the client when the server does not offer it.
    pub(crate) async fn ask(
        &mut self,
        provider: Arc<dyn Provider>,
        req: Option<ChatRequest>,
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Asked, AgentError> {
        let Some(req) = req else {
            return Ok(Asked::Own {
                line: None,
                remember: false,
            });
        };
        let instructions = eonyx_compact::native_instructions(focus);
        match provider.compact(&req, &instructions).await {
            Ok(outcome) => {
                self.succeeded();
                Ok(Asked::Compacted(outcome))
            }
            Err(_) if cancel.is_cancelled() => Err(AgentError::Interrupted),
            Err(e) => {
                let (line, remember) = self.failed(&e, provider.quirks());
                if let Some(q) = remember {
                    provider.set_quirks(q);
                }
                Ok(Asked::Own {
                    line: Some(line),
                    remember: remember.is_some(),
                })
            }
        }
    }
}

/// What eonyx's own summary replaces a native compaction with: the
/// history it covered, read back from the session file from the last
/// compaction of eonyx's own on, up to `boundary` (the view's first kept
/// message).
pub(crate) struct Replacement {
    /// The messages it covered, after eonyx's own compaction before it.
    pub view: ContextView,
    pub plan: Plan,
    pub trigger: CompactionTrigger,
    /// The native compaction's record, when the file has it.
    native: Option<CompactionRecord>,
    boundary: u64,
}

/// The [`Replacement`] of the native compaction the session `log` ends
/// with, the view starting at `boundary`.
pub(crate) fn replacement(
    log: eonyx_store::SessionLog,
    compaction: &eonyx_core::CompactionConfig,
    output_cap_bytes: u64,
    boundary: u64,
) -> Replacement {
    let timeline = log.timeline();
    let mut base: Option<CompactionRecord> = None;
    let mut native: Option<CompactionRecord> = None;
    let mut messages = Vec::new();
    for r in log.records {
        match r {
            Record::Message(m) if !timeline.is_rewound(m.seq) => messages.push(m),
            Record::Compaction(c) if !timeline.is_rewound(c.seq) => {
                if c.native.is_some() {
                    native = Some(c);
                } else {
                    base = Some(c);
                }
            }
            _ => {}
        }
    }
    let from = base.as_ref().map_or(0, |b| b.first_kept_seq);
    messages.retain(|m| m.seq >= from && m.seq < boundary);
    let view = ContextView::from_effective(compaction, output_cap_bytes, base.as_ref(), messages);
    let trigger = native
        .as_ref()
        .map_or(CompactionTrigger::Auto, |n| n.trigger);
    let plan = Plan {
        first_kept_seq: boundary,
        compacted_len: view.records().len(),
        mid_turn: native.as_ref().is_some_and(|n| n.mid_turn),
    };
    Replacement {
        view,
        plan,
        trigger,
        native,
        boundary,
    }
}

impl Replacement {
    /// When nothing of it is left to read (the file holds only the
    /// provider's result), what it showed (`shown`) stands in, as the
    /// record; `None`: the summarizer writes it from the replacement.
    pub(crate) fn stand_in(&mut self, shown: String) -> Option<CompactionRecord> {
        if self.plan.compacted_len != 0 {
            return None;
        }
        let mut r = match self.native.take() {
            Some(r) => r,
            None => CompactionRecord {
                first_kept_seq: self.boundary,
                trigger: self.trigger,
                ..CompactionRecord::default()
            },
        };
        r.summary = shown;
        r.native = None;
        r.usage = None;
        r.mode = Some(CompactionMode::Transcript);
        Some(r)
    }
}

/// Whether a step's failure is the server refusing the native items it
/// carried (a 400 naming the compaction item, block, its encrypted content
/// or signature as invalid).
pub(crate) fn refuses_items(err: &ProviderError, carried: bool) -> bool {
    if !carried {
        return false;
    }
    let ProviderError::Rejected {
        status: 400,
        message,
    } = err
    else {
        return false;
    };
    let m = message.to_ascii_lowercase();
    [
        "compaction",
        "encrypted_content",
        "encrypted content",
        "signature",
    ]
    .iter()
    .any(|k| m.contains(k))
        && [
            "invalid",
            "could not",
            "cannot",
            "failed",
            "not valid",
            "unrecognized",
        ]
        .iter()
        .any(|k| m.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_is_remembered_at_once_empty_twice_in_a_row_a_transient_failure_never() {
        let mut s = NativeState::default();
        let (line, set) = s.failed(
            &NativeError::Unsupported("HTTP 404".into()),
            RequestQuirks::default(),
        );
        assert!(set.is_some_and(|q| q.no_native_compaction));
        assert!(line.contains("eonyx's own summarizer") && line.contains("--reset-limits"));
        let mut s = NativeState::default();
        let empty = NativeError::Empty("no compaction item".into());
        let (line, set) = s.failed(&empty, RequestQuirks::default());
        assert!(set.is_none(), "{line}");
        assert!(line.contains("asks the provider again"), "{line}");
        let (line, set) = s.failed(&empty, RequestQuirks::default());
        assert!(set.is_some_and(|q| q.no_native_compaction));
        assert!(line.contains("--reset-limits"), "{line}");
        // A success in between starts the count over.
        let mut s = NativeState::default();
        let _ = s.failed(&empty, RequestQuirks::default());
        s.succeeded();
        let (_, set) = s.failed(&empty, RequestQuirks::default());
        assert!(set.is_none());
        for err in [
            NativeError::Broken("the connection broke".into()),
            NativeError::Failed(ProviderError::Transient {
                message: "HTTP 503".into(),
            }),
        ] {
            let (line, set) = NativeState::default().failed(&err, RequestQuirks::default());
            assert!(set.is_none(), "{err}");
            assert!(line.contains("asks the provider again"), "{line}");
        }
    }

    #[test]
    fn a_refused_item_is_a_400_naming_it() {
        let refused = ProviderError::Rejected {
            status: 400,
            message: "Invalid compaction item: encrypted_content could not be verified".into(),
        };
        assert!(refuses_items(&refused, true));
        assert!(!refuses_items(&refused, false));
        let other = ProviderError::Rejected {
            status: 400,
            message: "max_tokens is too large".into(),
        };
        assert!(!refuses_items(&other, true));
    }
}
