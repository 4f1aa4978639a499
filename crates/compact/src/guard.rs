//! The loop breaker for automatic compaction.

/// Counts consecutive automatic compactions that did not bring the estimate
/// under the trigger; after `max_consecutive` of them, auto compaction is
/// off for the rest of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoGuard {
    max: u32,
    failed: u32,
    disabled: bool,
}

impl AutoGuard {
    /// `max_consecutive` of 0 is treated as 1.
    pub fn new(max_consecutive: u32) -> Self {
        Self {
            max: max_consecutive.max(1),
            failed: 0,
            disabled: false,
        }
    }

    /// Whether automatic compaction may still run.
    pub fn allowed(&self) -> bool {
        !self.disabled
    }

    /// Record a compaction's result. Returns the message to show when this
    /// one switched auto compaction off.
    pub fn after_compaction(&mut self, estimate_after: u64, trigger: u64) -> Option<String> {
        if estimate_after < trigger {
            self.failed = 0;
            return None;
        }
        self.failed += 1;
        if self.failed >= self.max && !self.disabled {
            self.disabled = true;
            return Some(format!(
                "automatic compaction is off for this session: {} compactions in a row left the request at or above the trigger ({estimate_after} ≥ {trigger} tokens estimated); the retained messages alone are too large. Use /compact with a focus, /new, or raise the model's context window.",
                self.failed
            ));
        }
        None
    }

    /// Allow automatic compaction again (e.g. after a successful manual
    /// compaction or a model switch).
    pub fn reset(&mut self) {
        self.failed = 0;
        self.disabled = false;
    }
}
