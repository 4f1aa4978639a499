//! What the user sends besides plain text (docs/repl.md, section "The REPL"):
//! `@path` attachments and `--image` files read into the user message, and
//! `!command`, run through the `shell` tool's spawn without asking, whose
//! command and output become a user message of their own at once.

use camino::Utf8PathBuf;
use eonyx_core::provider::CancellationToken;
use eonyx_core::{Content, Message, Role};

use super::Agent;
use crate::attach::{self, Accept, AttachError, AttachLimits, Attachment};
use crate::error::AgentError;
use crate::tools::{self, ApprovalKind, Decision, Tee};

/// A user message ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct UserInput {
    /// What the user typed (each `\@` made `@`).
    pub text: String,
    /// The message: the text, the attached text files, the image parts.
    pub content: Content,
    /// One line per attachment (`src/main.rs (1 KB)`,
    /// `shot.png [image png 12 KB]`), for the frontend to show.
    pub attached: Vec<String>,
}

impl UserInput {
    /// A message of plain text, nothing attached.
    pub fn text(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            content: Content::Text(text.to_owned()),
            attached: Vec::new(),
        }
    }
}

/// A `!command` that ran, as put in the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRun {
    /// The result's first line: `exit status: N`, `timed out after Ns` or
    /// `interrupted`.
    pub outcome: String,
    pub is_error: bool,
    /// Bytes of output the command wrote (as far as kept).
    pub bytes: usize,
    /// Bytes of it left out of the conversation (`tools.output_cap_bytes`).
    pub cut: usize,
    /// A warning for the user, e.g. that it ran unconfined because no
    /// sandbox backend works (once per process).
    pub warning: Option<String>,
}

pub use crate::rewind::COMMAND_HEADER;

impl Agent {
    fn attach_limits(&self) -> AttachLimits {
        AttachLimits {
            text_cap_bytes: self.config.tools.output_cap_bytes,
            max_image_bytes: self.config.tools.max_image_bytes,
        }
    }

    /// A REPL or batch line with its `@path` files read. A file outside the
    /// project root is asked about (the REPL; batch runs refuse); a missing,
    /// unreadable or binary file, or an image over `tools.max_image_bytes`,
    /// is an error and nothing is sent.
    pub async fn prepare_input(&self, line: &str) -> Result<UserInput, AgentError> {
        let parsed = attach::parse_line(line);
        let home = self.home.as_deref();
        let limits = self.attach_limits();
        let mut attachments = Vec::with_capacity(parsed.mentions.len());
        for raw in &parsed.mentions {
            let found = attach::locate(raw, &self.cwd, &self.project.root, home)?;
            if !found.inside {
                let kind = ApprovalKind::Attach {
                    path: found.path.clone(),
                };
                if self.tools.approver.decide(&kind).await == Decision::Deny {
                    return Err(if self.inherit.ask.is_some() {
                        AttachError::Declined { path: found.path }
                    } else {
                        AttachError::Outside {
                            shown: found.shown,
                            path: found.path,
                        }
                    }
                    .into());
                }
            }
            attachments.push(attach::read(&found, &limits, Accept::Any)?);
        }
        Ok(input(parsed.text, &attachments))
    }

    /// `eonyx run`'s prompt (sent as written) with `--image` files, which
    /// must be images; the user named them, so any path is allowed.
    pub fn prepare_prompt(
        &self,
        prompt: &str,
        images: &[Utf8PathBuf],
    ) -> Result<UserInput, AgentError> {
        let home = self.home.as_deref();
        let limits = self.attach_limits();
        let mut attachments = Vec::with_capacity(images.len());
        for path in images {
            let found = attach::locate(path.as_str(), &self.cwd, &self.project.root, home)?;
            attachments.push(attach::read(&found, &limits, Accept::Images)?);
        }
        Ok(input(prompt.to_owned(), &attachments))
    }

    /// Save the user message of a turn that was cancelled before it was
    /// sent (an ACP client's `session/cancel` that came before the first
    /// request): the session holds what the user wrote, as the client
    /// shows it, and the next turn sends it before what follows. Nothing
    /// is sent and no hook runs.
    pub fn keep_input(&mut self, input: &UserInput) -> Result<(), AgentError> {
        let message = match &input.content {
            Content::Text(t) => Message::user(t.as_str()),
            parts => Message::new(Role::User, parts.clone()),
        };
        self.append(&message)
    }

    /// `!command`: run it in the project root through the `shell` tool's one
    /// spawn (its timeout, cancellation and confinement, without the
    /// provider key variables) without asking, pass its output to `tee` as
    /// it arrives, and append the command with its output (key values
    /// redacted, cut at `tools.output_cap_bytes`) as a user message, so the
    /// next request carries what the user saw. The model is not called.
    pub async fn run_user_command(
        &mut self,
        command: &str,
        tee: Tee,
        cancel: &CancellationToken,
    ) -> Result<CommandRun, AgentError> {
        let out = tools::run_command(command, &self.tools.ctx, cancel, Some(tee))
            .await
            .map_err(|e| AgentError::from(crate::error::UsageError::Command(e)))?;
        let text = self.redactor.scrub(out.text);
        let (outcome, output) = text.split_once('\n').unwrap_or((text.as_str(), ""));
        let cap = usize::try_from(self.config.tools.output_cap_bytes).unwrap_or(usize::MAX);
        let mut end = output.len().min(cap);
        while !output.is_char_boundary(end) {
            end -= 1;
        }
        let cut = output.len() - end;
        let mut message = format!(
            "{COMMAND_HEADER}\n$ {command}\n{outcome}\n{}",
            &output[..end]
        );
        if cut > 0 {
            if !message.ends_with('\n') {
                message.push('\n');
            }
            message.push_str(&format!(
                "[output cut: {cut} of {} bytes left out (tools.output_cap_bytes)]",
                output.len()
            ));
        }
        let run = CommandRun {
            outcome: outcome.to_owned(),
            is_error: out.is_error,
            bytes: output.len(),
            cut,
            warning: match out.event {
                Some(tools::ToolEvent::Warning(w)) => Some(w),
                _ => None,
            },
        };
        self.append(&Message::user(message.trim_end()))?;
        Ok(run)
    }
}

fn input(text: String, attachments: &[Attachment]) -> UserInput {
    UserInput {
        content: attach::content(&text, attachments),
        attached: attachments.iter().map(Attachment::describe).collect(),
        text,
    }
}
