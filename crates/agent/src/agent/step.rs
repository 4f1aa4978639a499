//! One provider step and its recovery: a context overflow (or a silently
//! truncated prompt) of an uncompacted request is compacted against the
//! learned window and retried once, never in a loop; a request whose
//! images the model refuses is sent once more without them.

use eonyx_core::provider::CancellationToken;
use eonyx_core::{CompactionTrigger, ProviderError, StreamEvent};

use super::Agent;
use crate::error::AgentError;
use crate::events::AgentEvent;
use crate::limits::TRUNCATION_HOW;

impl Agent {
    /// One provider step; on a context overflow of an uncompacted request,
    /// compact against the server's real limit and retry once.
    pub(super) async fn step_with_recovery(
        &mut self,
        step: u32,
        cancel: &CancellationToken,
    ) -> Result<eonyx_core::ChatResponse, AgentError> {
        let mut retried = false;
        let mut images_dropped = false;
        let mut native_replaced = false;
        loop {
            // A native compaction made by another model (before `/model`)
            // is not sent: eonyx's own summary of that history first
            // (docs/compaction.md#native-compaction).
            self.drop_stale_native(cancel).await?;
            let request = self.build_request(cancel);
            let size =
                eonyx_compact::request_size(&request.system, &request.messages, &request.tools);
            self.events.send(AgentEvent::StepStarted { step });
            let result = {
                let mut forward = |ev: StreamEvent| match ev {
                    StreamEvent::TextDelta(t) => self.events.send(AgentEvent::TextDelta(t)),
                    StreamEvent::ReasoningDelta(t) => {
                        self.events.send(AgentEvent::ReasoningDelta(t))
                    }
                    _ => {}
                };
                self.models.provider.send(&request, &mut forward).await
            };
            match result {
                Ok(resp) => {
                    let Some(u) = resp.usage.filter(|u| u.prompt_tokens > 0) else {
                        return Ok(resp);
                    };
                    let Some(t) = self.compaction.truncation.check(
                        &size,
                        u.prompt_tokens,
                        &self.compaction.estimator,
                    ) else {
                        self.compaction.estimator.observe(&size, u.prompt_tokens);
                        return Ok(resp);
                    };
                    // A silently truncated prompt: the reply was made without
                    // the oldest messages. Learn the window, compact, resend.
                    if t.first {
                        self.events.send(AgentEvent::Warning(format!(
                            "the server silently truncated the prompt (it counted {} tokens of the ~{} sent): its context window is about {} tokens; compacting and sending the request again",
                            u.prompt_tokens, t.expected, t.window
                        )));
                    }
                    self.learn_window(t.window, TRUNCATION_HOW);
                    if retried || !self.config.compaction.auto {
                        return Ok(resp);
                    }
                    retried = true;
                    let target =
                        eonyx_compact::overflow_target(Some(t.window), &self.compaction.trigger);
                    match self
                        .compact_with(CompactionTrigger::Overflow, None, target, cancel)
                        .await
                    {
                        Ok(_) => continue,
                        Err(AgentError::NothingToCompact) => return Ok(resp),
                        Err(e) => return Err(e),
                    }
                }
                Err(ProviderError::Cancelled) => return Err(AgentError::Interrupted),
                Err(ProviderError::ContextOverflow {
                    message,
                    prompt_tokens,
                    limit,
                }) => {
                    if let Some(l) = limit {
                        self.learn_window(l, "learned from an overflow");
                    }
                    if let Some(p) = prompt_tokens {
                        self.compaction.estimator.observe(&size, p);
                    }
                    if retried {
                        // Compacted and still too large: never a second retry.
                        return Err(AgentError::TooLarge {
                            what: self.describe_size(),
                        });
                    }
                    if !self.config.compaction.auto {
                        return Err(ProviderError::ContextOverflow {
                            message,
                            prompt_tokens,
                            limit,
                        }
                        .into());
                    }
                    retried = true;
                    let target = eonyx_compact::overflow_target(limit, &self.compaction.trigger);
                    match self
                        .compact_with(CompactionTrigger::Overflow, None, target, cancel)
                        .await
                    {
                        Ok(_) => continue,
                        Err(AgentError::NothingToCompact) => {
                            return Err(AgentError::TooLarge {
                                what: self.describe_size(),
                            });
                        }
                        Err(e) => return Err(e),
                    }
                }
                Err(e)
                    if !native_replaced
                        && crate::native::refuses_items(&e, request.native.is_some()) =>
                {
                    // The server refused the provider's own compaction item:
                    // eonyx's own summary of the same history replaces it,
                    // once, and the turn goes on; not tried again here.
                    native_replaced = true;
                    let quirks = self.models.provider.quirks();
                    self.models
                        .provider
                        .set_quirks(eonyx_core::provider::RequestQuirks {
                            no_native_compaction: true,
                            ..quirks
                        });
                    self.remember_quirks();
                    self.replace_native(
                        &format!(
                            "the server refused the compacted part ({e}); native compaction is not tried again for this base URL and model (`eonyx config --reset-limits` forgets)"
                        ),
                        cancel,
                    )
                    .await?;
                }
                Err(e)
                    if !images_dropped
                        && eonyx_provider::refusal::refuses_images(&e)
                        && request.messages.iter().any(|m| m.content.image_count() > 0) =>
                {
                    // A model that takes no images: once more without them,
                    // remembered like a refused parameter (saved after the
                    // step, docs/providers.md#refused-parameters).
                    images_dropped = true;
                    let mut quirks = self.models.provider.quirks();
                    quirks.no_images = true;
                    self.models.provider.set_quirks(quirks);
                    self.events.send(AgentEvent::Warning(format!(
                        "{} does not accept images ({e}); sending the turn again without them, and no images to this model from now on (the session keeps them; `eonyx config --reset-limits` forgets this)",
                        self.config.model.name
                    )));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn describe_size(&self) -> String {
        let system = self.system_prompt();
        let sys_tokens =
            eonyx_core::tokens::estimate_text(&system.text(), self.compaction.estimator.ratio());
        let mut largest: Option<(u64, String)> = None;
        for rec in self.view.records() {
            let t = eonyx_core::tokens::estimate(
                rec.message.chars(),
                self.compaction.estimator.ratio(),
            );
            if largest.as_ref().is_none_or(|(n, _)| t > *n) {
                largest = Some((
                    t,
                    format!("{} message #{}", rec.message.role.as_str(), rec.seq),
                ));
            }
        }
        let mut s = format!(
            "system prompt ~{sys_tokens} tokens, {} retained messages, window {} tokens",
            self.view.records().len(),
            self.compaction.trigger.window
        );
        if let Some((t, what)) = largest {
            s.push_str(&format!("; largest is the {what} at ~{t} tokens"));
        }
        s
    }

    fn learn_window(&mut self, limit: u64, how: &str) {
        let current = self.models.limits.context_window.unwrap_or(u64::MAX);
        if limit < current {
            self.events.send(AgentEvent::Notice(format!(
                "the server's context window is {limit} tokens (not {}); compacting against it from now on",
                self.models
                    .limits
                    .context_window
                    .map_or("unknown".to_owned(), |w| w.to_string())
            )));
            self.models.limits.context_window = Some(limit);
            if let Some(mi) = self.models.limits.max_input_tokens {
                self.models.limits.max_input_tokens = Some(mi.min(limit));
            }
            self.compaction.trigger =
                eonyx_compact::trigger(&self.config.compaction, &self.models.limits);
            let mut warnings = Vec::new();
            let mut cache = crate::limits::open_cache(self.store.data_dir(), &mut warnings);
            for w in warnings {
                self.events.send(AgentEvent::Warning(w));
            }
            cache.record_learned(
                &self.config.model.base_url,
                &self.config.model.name,
                limit,
                how,
            );
            if let Err(e) = cache.save() {
                self.events.send(AgentEvent::Warning(format!(
                    "could not remember the learned context window: {e}"
                )));
            }
        }
    }
}
