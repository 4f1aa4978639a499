//! Parameters a model refuses (docs/providers.md#refused-parameters): OpenAI's reasoning models reject
//! any `temperature` but the default, Azure and many proxies reject
//! `max_tokens` ("Use 'max_completion_tokens' instead"). Such a 400 is
//! recognised here; the client changes the request shape
//! ([`RequestQuirks`]) and sends it once more.
//!
//! Images are refused the same way by text-only models ([`refuses_images`]):
//! the agent then sets [`RequestQuirks::no_images`] and sends the turn once
//! more without them, so it can warn the user before the answer streams.

use eonyx_core::ProviderError;
use eonyx_core::provider::RequestQuirks;

/// A parameter named by a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    Temperature,
    MaxTokens,
    /// `reasoning_effort` (Chat) or `reasoning.effort` (Responses).
    ReasoningEffort,
    /// `reasoning_content` on an assistant message (Chat).
    ReasoningContent,
}

/// What a refused request carried, so only a parameter it sent is learned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sent {
    pub temperature: bool,
    pub max_tokens: bool,
    pub reasoning_effort: bool,
    pub reasoning_content: bool,
}

/// The parameter a 400 refuses, recognised from the server's message
/// (`Unsupported value: 'temperature' does not support 0.1…`,
/// `Unsupported parameter: 'max_tokens' is not supported… Use
/// 'max_completion_tokens' instead.`).
pub fn refused_parameter(err: &ProviderError) -> Option<Refused> {
    let ProviderError::Rejected {
        status: 400 | 422,
        message,
    } = err
    else {
        return None;
    };
    let m = message.to_lowercase();
    let refusing = [
        "unsupported",
        "not supported",
        "does not support",
        "only the default",
        "not allowed",
        "is deprecated",
        "use 'max_completion_tokens'",
        "extra inputs are not permitted",
        "unrecognized",
        "unknown",
    ]
    .iter()
    .any(|w| m.contains(w));
    if !refusing {
        return None;
    }
    if m.contains("reasoning_content") {
        Some(Refused::ReasoningContent)
    } else if m.contains("reasoning_effort") || m.contains("reasoning.effort") {
        Some(Refused::ReasoningEffort)
    } else if m.contains("max_tokens") {
        Some(Refused::MaxTokens)
    } else if m.contains("temperature") {
        Some(Refused::Temperature)
    } else {
        None
    }
}

/// What servers answer when a request carries images the model cannot
/// take (lower-case):
/// - llama-server started without a multimodal projector (`--mmproj`),
///   on `/v1/chat/completions` and `/v1/messages`, as HTTP 500:
///   `image input is not supported - hint: if this is unexpected, you may
///   need to provide the mmproj`;
/// - Ollama, a model without vision: `this model is missing data required
///   for image input`;
/// - OpenAI, a text-only model (400): `Invalid content type. image_url is
///   only supported by certain models.`;
/// - OpenRouter (404): `No endpoints found that support image input`;
/// - vLLM: `… is not a multimodal model`; others: `does not support
///   images` / `vision`.
const IMAGE_REFUSALS: &[&str] = &[
    "image input is not supported",
    "missing data required for image input",
    "image_url is only supported by certain models",
    "support image input",
    "does not support images",
    "does not support vision",
    "not a multimodal model",
];

/// Whether a server's error message says the model takes no images.
pub fn names_images(message: &str) -> bool {
    let m = message.to_lowercase();
    IMAGE_REFUSALS.iter().any(|w| m.contains(w))
}

/// Whether `err` refuses the images a request carried (any 4xx or 5xx
/// whose message says so: llama-server answers 500).
pub fn refuses_images(err: &ProviderError) -> bool {
    matches!(err, ProviderError::Rejected { status: 400..=599, message } if names_images(message))
}

/// The text an image part is sent as once the model refused images
/// ([`RequestQuirks::no_images`]).
pub const IMAGE_NOT_SENT: &str = "[image not sent: this model does not accept images]";

/// `request` with every image part sent as [`IMAGE_NOT_SENT`], when the
/// model refused images (`quirks.no_images`) and the request has any;
/// `None` when it goes as it is.
pub fn without_images(
    request: &eonyx_core::ChatRequest,
    quirks: RequestQuirks,
) -> Option<eonyx_core::ChatRequest> {
    use eonyx_core::{Content, Part};
    if !quirks.no_images
        || request
            .messages
            .iter()
            .all(|m| m.content.image_count() == 0)
    {
        return None;
    }
    let mut out = request.clone();
    for m in &mut out.messages {
        if let Content::Parts(parts) = &mut m.content {
            for p in parts.iter_mut() {
                if matches!(p, Part::Image { .. }) {
                    *p = Part::Text {
                        text: IMAGE_NOT_SENT.to_owned(),
                    };
                }
            }
        }
    }
    Some(out)
}

/// The quirks after `err`, when it refuses a parameter the request carried
/// and the current quirks do not already avoid: `None` means "do not retry".
pub fn learn(current: RequestQuirks, err: &ProviderError, sent: Sent) -> Option<RequestQuirks> {
    let mut q = current;
    match refused_parameter(err)? {
        Refused::Temperature if sent.temperature && !q.drop_temperature => {
            q.drop_temperature = true;
        }
        Refused::MaxTokens if sent.max_tokens && !q.max_completion_tokens => {
            q.max_completion_tokens = true;
        }
        Refused::ReasoningEffort if sent.reasoning_effort && !q.no_reasoning_effort => {
            q.no_reasoning_effort = true;
        }
        Refused::ReasoningContent if sent.reasoning_content && !q.no_reasoning_content => {
            q.no_reasoning_content = true;
        }
        _ => return None,
    }
    Some(q)
}

/// Whether a Chat Completions 400 says the model (or tools with reasoning)
/// is served only by the Responses API: `This model is only supported in
/// v1/responses and not in v1/chat/completions.`, `… are not supported …
/// Please use /v1/responses instead.`
pub fn needs_responses_api(err: &ProviderError) -> bool {
    let ProviderError::Rejected {
        status: 400 | 404 | 422,
        message,
    } = err
    else {
        return false;
    };
    let m = message.to_lowercase();
    m.contains("v1/responses")
        && [
            "only supported",
            "not supported",
            "please use",
            "use /v1/responses",
        ]
        .iter()
        .any(|w| m.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(message: &str) -> ProviderError {
        ProviderError::Rejected {
            status: 400,
            message: message.into(),
        }
    }

    #[test]
    fn openai_refusals_are_recognised() {
        let t = rejected(
            "Unsupported value: 'temperature' does not support 0.1 with this model. Only the default (1) value is supported.",
        );
        assert_eq!(refused_parameter(&t), Some(Refused::Temperature));
        let m = rejected(
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        );
        assert_eq!(refused_parameter(&m), Some(Refused::MaxTokens));
        assert_eq!(
            refused_parameter(&rejected("messages: field required")),
            None
        );
        assert_eq!(
            refused_parameter(&ProviderError::Transient {
                message: "unsupported temperature".into()
            }),
            None
        );
    }

    #[test]
    fn image_refusals_of_real_servers_are_recognised() {
        for (status, message) in [
            (
                500,
                "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj",
            ),
            (500, "this model is missing data required for image input"),
            (
                400,
                "Invalid content type. image_url is only supported by certain models.",
            ),
            (404, "No endpoints found that support image input"),
        ] {
            let err = ProviderError::Rejected {
                status,
                message: message.into(),
            };
            assert!(refuses_images(&err), "{message}");
            // Never mistaken for a refused parameter.
            assert_eq!(refused_parameter(&err), None);
        }
        assert!(!refuses_images(&rejected("messages: field required")));
        assert!(!refuses_images(&ProviderError::Transient {
            message: "image input is not supported".into()
        }));
    }

    #[test]
    fn learning_only_changes_what_was_sent_and_not_yet_fixed() {
        let t = rejected("Unsupported value: 'temperature' does not support 0.1");
        let both = Sent {
            temperature: true,
            max_tokens: true,
            ..Sent::default()
        };
        let q = learn(RequestQuirks::default(), &t, both).unwrap();
        assert!(q.drop_temperature && !q.max_completion_tokens);
        // Already dropped, or never sent: no retry.
        assert_eq!(learn(q, &t, both), None);
        let no_temperature = Sent {
            max_tokens: true,
            ..Sent::default()
        };
        assert_eq!(learn(RequestQuirks::default(), &t, no_temperature), None);
        let m =
            rejected("Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead.");
        let q2 = learn(q, &m, no_temperature).unwrap();
        assert!(q2.drop_temperature && q2.max_completion_tokens);
    }

    #[test]
    fn reasoning_refusals_are_learned_apart() {
        let sent = Sent {
            reasoning_effort: true,
            reasoning_content: true,
            ..Sent::default()
        };
        let e = rejected("Unrecognized request argument supplied: reasoning_effort");
        let q = learn(RequestQuirks::default(), &e, sent).unwrap();
        assert!(q.no_reasoning_effort && !q.no_reasoning_content);
        let c = rejected("Extra inputs are not permitted: messages.1.reasoning_content");
        let q = learn(q, &c, sent).unwrap();
        assert!(q.no_reasoning_content);
        assert_eq!(learn(q, &c, sent), None);
    }

    #[test]
    fn responses_only_models_are_recognised() {
        assert!(needs_responses_api(&rejected(
            "This model is only supported in v1/responses and not in v1/chat/completions."
        )));
        assert!(needs_responses_api(&rejected(
            "Function tools with reasoning_effort are not supported for gpt-5.1 in /v1/chat/completions. Please use /v1/responses instead."
        )));
        assert!(!needs_responses_api(&rejected("messages: field required")));
        assert!(!needs_responses_api(&ProviderError::Transient {
            message: "only supported in v1/responses".into()
        }));
    }
}
