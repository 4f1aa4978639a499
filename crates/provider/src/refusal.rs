//! Parameters a model refuses (SPEC §12): OpenAI's reasoning models reject
//! any `temperature` but the default, Azure and many proxies reject
//! `max_tokens` ("Use 'max_completion_tokens' instead"). Such a 400 is
//! recognised here; the client changes the request shape
//! ([`RequestQuirks`]) and sends it once more.

use eonyx_core::ProviderError;
use eonyx_core::provider::RequestQuirks;

/// A parameter named by a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    Temperature,
    MaxTokens,
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
    ]
    .iter()
    .any(|w| m.contains(w));
    if !refusing {
        return None;
    }
    if m.contains("max_tokens") {
        Some(Refused::MaxTokens)
    } else if m.contains("temperature") {
        Some(Refused::Temperature)
    } else {
        None
    }
}

/// The quirks after `err`, when it refuses a parameter the request carried
/// and the current quirks do not already avoid: `None` means "do not retry".
pub fn learn(
    current: RequestQuirks,
    err: &ProviderError,
    sent_temperature: bool,
    sent_max_tokens: bool,
) -> Option<RequestQuirks> {
    let mut q = current;
    match refused_parameter(err)? {
        Refused::Temperature if sent_temperature && !q.drop_temperature => {
            q.drop_temperature = true;
        }
        Refused::MaxTokens if sent_max_tokens && !q.max_completion_tokens => {
            q.max_completion_tokens = true;
        }
        _ => return None,
    }
    Some(q)
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
    fn learning_only_changes_what_was_sent_and_not_yet_fixed() {
        let t = rejected("Unsupported value: 'temperature' does not support 0.1");
        let q = learn(RequestQuirks::default(), &t, true, true).unwrap();
        assert!(q.drop_temperature && !q.max_completion_tokens);
        // Already dropped, or never sent: no retry.
        assert_eq!(learn(q, &t, true, true), None);
        assert_eq!(learn(RequestQuirks::default(), &t, false, true), None);
        let m =
            rejected("Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead.");
        let q2 = learn(q, &m, false, true).unwrap();
        assert!(q2.drop_temperature && q2.max_completion_tokens);
    }
}
