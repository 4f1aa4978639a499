//! Memory in the agent (docs/memory.md, section "Using memory"): the snapshot in the stable prefix, the
//! `memory` tool and `/remember`, `/memory`.

use eonyx_core::ToolCall;
use eonyx_core::memory::{MemoryEntry, MemoryScope};
use eonyx_prompt::MemorySection;

use super::Agent;
use crate::error::{AgentError, UsageError};
use crate::events::AgentEvent;
use crate::prompt::read_memory_section;
use crate::tools::ToolOutput;
use crate::tools::memory::{self as tool, MemoryCall};

impl Agent {
    /// Whether memory is on (`memory.enabled`).
    pub fn memory_enabled(&self) -> bool {
        self.memory.is_some()
    }

    /// The `# Memory` section as the current session's requests carry it.
    pub fn memory_section(&self) -> &MemorySection {
        &self.prompt.memory_section
    }

    /// Every entry on disk now (global, then project), for `/memory`.
    pub fn memory_entries(&self) -> Result<Vec<MemoryEntry>, AgentError> {
        let store = self
            .memory
            .as_ref()
            .ok_or(AgentError::Usage(UsageError::MemoryOff))?;
        Ok(store.list()?)
    }

    /// `/remember TEXT`: add to the project scope, saved by this session.
    /// The prompt keeps its snapshot until the next session or compaction.
    pub fn remember(&mut self, text: &str) -> Result<MemoryEntry, AgentError> {
        let store = self
            .memory
            .as_ref()
            .ok_or(AgentError::Usage(UsageError::MemoryOff))?;
        let session = self.session_id().to_string();
        Ok(store.add(MemoryScope::Project, text, &session, &self.secrets)?)
    }

    /// Read memory into the section for the stable prefix. Called when a
    /// session starts and after each compaction, never between two
    /// requests of a session. Returns a warning when it cannot be read.
    pub(super) fn refresh_memory(&mut self) -> Option<String> {
        let (section, warning) =
            read_memory_section(self.memory.as_ref(), self.config.memory.max_bytes);
        self.prompt.memory_section = section;
        warning
    }

    /// Run a `memory` tool call: no approval, one event per change.
    pub(super) fn run_memory_tool(&mut self, call: &ToolCall) -> ToolOutput {
        let Some(store) = &self.memory else {
            return ToolOutput::error(UsageError::MemoryOff.to_string());
        };
        let parsed = match tool::parse(&call.arguments) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        match parsed {
            MemoryCall::Add { text, scope } => {
                let session = self.session_id().to_string();
                match store.add(scope, &text, &session, &self.secrets) {
                    Ok(entry) => {
                        let id = entry.id.clone().unwrap_or_default();
                        self.events.send(AgentEvent::MemoryChanged {
                            action: "add",
                            entry,
                        });
                        ToolOutput::ok(format!(
                            "saved as [{id}] ({scope}); later sessions see it under # Memory"
                        ))
                    }
                    Err(e) => ToolOutput::error(e.to_string()),
                }
            }
            MemoryCall::Forget { id } => match store.forget(&[id.as_str()]) {
                Ok(removed) => {
                    for entry in removed {
                        self.events.send(AgentEvent::MemoryChanged {
                            action: "forget",
                            entry,
                        });
                    }
                    ToolOutput::ok(format!("forgot [{id}]; later sessions no longer see it"))
                }
                Err(e) => ToolOutput::error(e.to_string()),
            },
        }
    }
}
