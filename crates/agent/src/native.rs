//! Provider-native compaction as the agent composes it
//! (docs/compaction.md#native-compaction): whether this compaction asks the
//! provider, what a failure means (fall back in the same compaction; say
//! so once; remember for the base URL + model when the server does not
//! offer it), and when a native result no longer applies (another model,
//! a refused item). The wire is `eonyx-provider`'s, the request and the
//! record are `eonyx-compact`'s; what is remembered between compactions
//! lives in the client's quirks (`limits.json`), not here.

use eonyx_core::config::NativeMode;
use eonyx_core::provider::{NativeError, RequestQuirks};
use eonyx_core::{
    ChatRequest, ModelConfig, NativeCompaction, NativeProvider, Provider, ProviderError,
};

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
/// wire and the same model id. After `/model` elsewhere it does not, and
/// eonyx's own summary of that history replaces it.
pub(crate) fn applies(native: &NativeCompaction, model: &ModelConfig, responses_api: bool) -> bool {
    wire_of(model, responses_api).is_some_and(|w| native.is_for(w, &model.name))
}

/// Attach the view's native items to `req` when they apply.
pub(crate) fn attach(
    req: &mut ChatRequest,
    native: Option<&NativeCompaction>,
    model: &ModelConfig,
    responses_api: bool,
) {
    req.native = native.filter(|n| applies(n, model, responses_api)).cloned();
}

/// A native call failed with `err`: the one stderr line to show, and the
/// quirks to set on the client when it is to be remembered for the base
/// URL + model. Everything the server answers that says it does not offer
/// native compaction (unsupported, nothing usable, an answer that broke
/// off) is remembered at the first occurrence; a transient failure (5xx,
/// 529, no answer within the timeouts) is not: a later compaction asks again.
pub(crate) fn fallback(
    err: &NativeError,
    quirks: RequestQuirks,
) -> (String, Option<RequestQuirks>) {
    let remember = match err {
        NativeError::Unsupported(_) | NativeError::Empty(_) | NativeError::Broken(_) => true,
        NativeError::Failed(_) => false,
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
    fn what_the_server_says_is_remembered_at_once_a_transient_failure_is_not() {
        for err in [
            NativeError::Unsupported("HTTP 404".into()),
            NativeError::Empty("no compaction item".into()),
            NativeError::Broken("the connection broke".into()),
        ] {
            let (line, set) = fallback(&err, RequestQuirks::default());
            assert!(set.is_some_and(|q| q.no_native_compaction), "{err}");
            assert!(line.contains("eonyx's own summarizer") && line.contains("--reset-limits"));
        }
        let (line, set) = fallback(
            &NativeError::Failed(ProviderError::Transient {
                message: "HTTP 503".into(),
            }),
            RequestQuirks::default(),
        );
        assert!(set.is_none());
        assert!(line.contains("asks the provider again"), "{line}");
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
