//! The binary stage's compaction setup (`--threshold PCT`, `--buffer N`,
//! `--keep-turns N`, `--max-tokens N`, `--words N`): the config eonyx runs
//! with, the lines it is fed, and the same values as eonyx's own types for
//! the report (trigger, the summarizer's reserve).

use anyhow::Result;
use eonyx_compact::Limits;
use eonyx_core::CompactionConfig;

use crate::local_model::{self, MODEL_NAME};

/// The model's output cap in the e2e config unless `--max-tokens`.
const DEFAULT_MAX_TOKENS: u32 = 128;

#[derive(Debug, Clone, Default)]
pub(super) struct Setup {
    pub(super) threshold_percent: Option<f64>,
    pub(super) buffer_tokens: Option<u64>,
    pub(super) keep_turns: Option<u32>,
    pub(super) max_tokens: Option<u32>,
    /// Pad each line to about this many words.
    pub(super) words: Option<usize>,
    /// Force the transcript summarizer (a `compaction.model` alias of the
    /// same server), to measure the old cost in the same conditions.
    pub(super) transcript: bool,
}

impl Setup {
    /// Take `flag` (and its value from `it`) when it is one of ours.
    pub(super) fn flag(
        &mut self,
        flag: &str,
        it: &mut std::slice::Iter<'_, String>,
    ) -> Result<bool> {
        match flag {
            "--threshold" => self.threshold_percent = Some(local_model::value(it, flag)?),
            "--buffer" => self.buffer_tokens = Some(local_model::value(it, flag)?),
            "--keep-turns" => self.keep_turns = Some(local_model::value(it, flag)?),
            "--max-tokens" => self.max_tokens = Some(local_model::value(it, flag)?),
            "--words" => self.words = Some(local_model::value(it, flag)?),
            "--transcript-summaries" => self.transcript = true,
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub(super) fn max_tokens(&self) -> u32 {
        self.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)
    }

    /// eonyx's config for a server behind `port`.
    pub(super) fn config(&self, port: u16) -> String {
        let mut config = local_model::config_snippet(port).replace(
            &format!("max_output_tokens = {DEFAULT_MAX_TOKENS}"),
            &format!("max_output_tokens = {}", self.max_tokens()),
        );
        let mut compaction = String::new();
        if let Some(p) = self.threshold_percent {
            compaction.push_str(&format!("threshold_percent = {p}\n"));
        }
        if let Some(b) = self.buffer_tokens {
            compaction.push_str(&format!("buffer_tokens = {b}\n"));
        }
        if let Some(k) = self.keep_turns {
            compaction.push_str(&format!("keep_turns = {k}\n"));
        }
        if self.transcript {
            // Another model key for the same server: eonyx then cannot share
            // the conversation's prompt and uses the transcript summarizer.
            compaction.push_str("model = \"summarizer\"\n");
        }
        if !compaction.is_empty() {
            config.push_str(&format!("\n\n[compaction]\n{compaction}"));
        }
        if self.transcript {
            config.push_str(&format!(
                "\n[models.summarizer]\nprovider = \"openai\"\n\
                 base_url = \"http://127.0.0.1:{port}/v1\"\nname = \"{MODEL_NAME}\"\nmax_output_tokens = 128\n"
            ));
        }
        config
    }

    /// The compaction settings eonyx resolves from [`Setup::config`].
    pub(super) fn compaction(&self) -> CompactionConfig {
        let d = CompactionConfig::default();
        CompactionConfig {
            threshold_percent: self.threshold_percent.unwrap_or(d.threshold_percent),
            buffer_tokens: self.buffer_tokens.unwrap_or(d.buffer_tokens),
            keep_turns: self.keep_turns.unwrap_or(d.keep_turns),
            ..d
        }
    }

    /// The limits eonyx finds for an `n_ctx` window.
    pub(super) fn limits(&self, window: u64) -> Limits {
        Limits {
            context_window: Some(window),
            max_input_tokens: None,
            max_output_tokens: Some(u64::from(self.max_tokens())),
        }
    }

    /// `line` padded with filler sentences to about `--words` words.
    pub(super) fn pad(&self, line: &str) -> String {
        let Some(words) = self.words else {
            return line.to_owned();
        };
        let filler = [
            "The tide turned slowly while the gulls argued over scraps on the pier.",
            "Old maps mark the ridge with a dotted line that nobody walks anymore.",
            "Every spring the river floods the lower fields and leaves fine silt behind.",
            "A lantern in the window means the keeper is still awake and listening.",
        ];
        let mut out = line.to_owned();
        let mut i = 0;
        while out.split_whitespace().count() < words {
            out.push(' ');
            out.push_str(filler[i % filler.len()]);
            i += 1;
        }
        out
    }
}

/// The lines of a batch of `turns` turns: each asks the model to remember a
/// code word and write two sentences about a topic.
pub(crate) fn turn_lines(turns: usize) -> String {
    let topics = [
        "the sea",
        "mountains",
        "rivers",
        "forests",
        "deserts",
        "the moon",
        "volcanoes",
        "glaciers",
        "islands",
        "rain",
    ];
    (1..=turns)
        .map(|i| {
            format!(
                "Turn {i}: remember that code word {i} is {}. Now write two sentences about {}.\n",
                i * 7,
                topics[i % topics.len()]
            )
        })
        .collect()
}
