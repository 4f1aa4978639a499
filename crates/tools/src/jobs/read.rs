//! Reading a job: `job_output`, and what is new in its log (head and
//! tail over the cap), marked read.

use super::*;

impl Jobs {
    /// `job_output {"id", "wait_s"}`.
    pub(crate) async fn output(
        &self,
        args: &Value,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Args {
            id: u32,
            #[serde(default)]
            wait_s: Option<f64>,
        }
        let a: Args = parse_args(ToolName::JobOutput, args)?;
        let wait = a.wait_s.unwrap_or(0.0);
        if !(0.0..=MAX_WAIT_S as f64).contains(&wait) {
            return Err(ToolError::bad_args(
                ToolName::JobOutput,
                format!("wait_s must be between 0 and {MAX_WAIT_S} seconds, got {wait}"),
            ));
        }
        {
            let t = lock(&self.shared.table);
            if !t.jobs.contains_key(&a.id) {
                return Err(self.unknown(&t, a.id));
            }
        }
        let mut rx = self.subscribe();
        let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(wait);
        loop {
            let ready = {
                let t = lock(&self.shared.table);
                t.jobs
                    .get(&a.id)
                    .is_none_or(|j| !j.state.is_running() || j.log.total() > j.read)
            };
            if ready || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ToolError::Interrupted),
                () = tokio::time::sleep_until(deadline) => break,
                r = rx.changed() => if r.is_err() { break },
            }
        }
        let read = self.read_new(a.id)?;
        Ok(ToolOutput::ok(format!(
            "{}\n{}",
            read.header,
            or_none(read.text)
        )))
    }

    /// What is new in job `id`'s output (marked read), head and tail over
    /// the cap, and its state line.
    pub(super) fn read_new(&self, id: u32) -> Result<NewOutput, ToolError> {
        let mut t = lock(&self.shared.table);
        let cap = self.config.output_cap_bytes.max(256);
        let Some(j) = t.jobs.get_mut(&id) else {
            return Err(ToolError::Usage(format!("no job {id} in this session")));
        };
        let (from, to) = (j.read, j.log.total());
        let io = |e| ToolError::io("cannot read the job log", j.log_path.as_str(), e);
        let mut text = String::new();
        let mut dropped = 0;
        let mut left_out = 0;
        if to - from <= cap {
            let c = j.log.read(from, to).map_err(io)?;
            dropped += c.dropped;
            text.push_str(&String::from_utf8_lossy(&c.bytes));
        } else {
            let half = cap / 2;
            let head = j.log.read(from, from + half).map_err(io)?;
            let tail = j.log.read(to - half, to).map_err(io)?;
            dropped += head.dropped + tail.dropped;
            left_out = to - from - 2 * half;
            text.push_str(&String::from_utf8_lossy(&head.bytes));
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!(
                "[… {left_out} bytes left out (over tools.output_cap_bytes); the whole output is in {} …]\n",
                j.log_path
            ));
            text.push_str(&String::from_utf8_lossy(&tail.bytes));
        }
        if dropped > 0 {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!(
                "[{dropped} bytes of this output were already dropped from the log (tools.job_log_max_bytes)]\n"
            ));
        }
        let _ = left_out;
        j.read = to;
        let ended = (!j.state.is_running()).then_some(j.state);
        if ended.is_some() {
            j.exit_seen = true;
        }
        let header = match j.state {
            JobState::Running => format!("job {id} running for {} s: {}", j.secs(), j.command),
            s => format!("job {id} {s} after {} s: {}", j.secs(), j.command),
        };
        Ok(NewOutput {
            header,
            text,
            ended,
        })
    }
}

/// `(no new output)` for nothing new.
pub(super) fn or_none(text: String) -> String {
    if text.is_empty() {
        "(no new output)\n".to_owned()
    } else {
        text
    }
}

pub(super) struct NewOutput {
    pub header: String,
    pub text: String,
    pub ended: Option<JobState>,
}
