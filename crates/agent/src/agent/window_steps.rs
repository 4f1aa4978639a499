//! The agent's part of docs/providers.md that happens between steps: request shapes
//! learned from refused parameters are remembered, Ollama is asked again
//! once the first request has loaded the model, and a reply cut by the
//! output cap is reported.

use super::Agent;
use crate::events::AgentEvent;
use crate::limits as window;

impl Agent {
    /// Save request-shape changes the providers learned since the last save.
    pub(super) fn remember_quirks(&mut self) {
        let now = (
            self.models.provider.quirks(),
            self.models.summarizer.quirks(),
        );
        let save = |model: &eonyx_core::ModelConfig, q| {
            if let Err(e) = window::remember_quirks(self.store.data_dir(), model, q) {
                self.events.send(AgentEvent::Warning(format!(
                    "could not remember the parameters {} refused: {e}",
                    model.name
                )));
            }
        };
        if now.0 != self.models.saved_quirks.0 {
            save(&self.config.model, now.0);
        }
        let switched = now.0.responses_api && !self.models.saved_quirks.0.responses_api;
        if now.1 != self.models.saved_quirks.1
            && !std::ptr::addr_eq(
                std::sync::Arc::as_ptr(&self.models.provider),
                std::sync::Arc::as_ptr(&self.models.summarizer),
            )
        {
            save(&self.models.summarizer_config, now.1);
        }
        self.models.saved_quirks = now;
        if switched {
            self.events.send(AgentEvent::Notice(format!(
                "{} is served only by the Responses API: switched to it and sent the request again; remembered for {} (`eonyx config --reset-limits` forgets it)",
                self.config.model.name, self.config.model.base_url
            )));
        }
    }

    /// Ask the server again (Ollama's `/api/ps` knows the window once the
    /// model is loaded); a different answer replaces the window.
    pub(super) async fn reprobe_window(&mut self) {
        let Some((w, from)) =
            window::detect(self.models.provider.as_ref(), &self.config.model).await
        else {
            return;
        };
        let mut notices = Vec::new();
        let mut cache = window::open_cache(self.store.data_dir(), &mut notices);
        if !cache.record_detected(
            &self.config.model.base_url,
            &self.config.model.name,
            w,
            from,
        ) {
            return;
        }
        if let Err(e) = cache.save() {
            notices.push(format!(
                "could not remember the detected context window: {e}"
            ));
        }
        for n in notices {
            self.events.send(AgentEvent::Warning(n));
        }
        let resolved = window::resolve_cached(&self.config.model, Some(&cache));
        if Some(resolved.tokens) != self.models.limits.context_window {
            self.events.send(AgentEvent::Notice(format!(
                "the server runs {} with a {}-token context window (from {from}); compacting against it from now on",
                self.config.model.name, resolved.tokens
            )));
            self.models.limits = resolved.limits(&self.config.model);
            self.compaction.trigger =
                eonyx_compact::trigger(&self.config.compaction, &self.models.limits);
        }
    }

    /// `max_output_tokens = N`, or the server's own cap when none is set.
    pub(super) fn output_cap_text(&self) -> String {
        match self.config.model.max_output_tokens {
            Some(n) => format!("max_output_tokens = {n}"),
            None => "the server's output limit".to_owned(),
        }
    }

    /// What the user is told when a reply was cut by the output cap.
    pub(super) fn cut_notice(&self, reply: &eonyx_core::Message) -> String {
        let last_call = reply.tool_calls.last();
        if last_call.is_none()
            && reply.content.text().trim().is_empty()
            && !reply.reasoning.is_empty()
        {
            let lower = if self.config.model.thinking_budget_tokens.is_some() {
                "thinking_budget_tokens"
            } else {
                "reasoning_effort"
            };
            return format!(
                "the whole output budget ({}) went to reasoning and no answer came; raise models.{}.max_output_tokens, or lower models.{}.{lower}",
                self.output_cap_text(),
                self.config.model_key,
                self.config.model_key
            );
        }
        let what = match last_call {
            Some(c) => format!(
                "the {} tool call was cut before its arguments were complete and was not run",
                c.name
            ),
            None => "the answer is incomplete".to_owned(),
        };
        format!(
            "reply cut at {}; raise it in config (models.{}.max_output_tokens): {what}",
            self.output_cap_text(),
            self.config.model_key
        )
    }
}
