//! Stopping jobs: `job_stop`, `/jobs stop N`, every job at the end of a
//! session, and whatever is left when [`Jobs`] is dropped.

use super::read::or_none;
use super::*;

impl Jobs {
    /// `job_stop {"id"}`, and `/jobs stop N`.
    pub(crate) async fn stop_tool(&self, args: &Value) -> Result<ToolOutput, ToolError> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Args {
            id: u32,
        }
        let a: Args = parse_args(ToolName::JobStop, args)?;
        self.stop(a.id, Seen::ByModel).await.map(ToolOutput::ok)
    }

    /// Stop job `id` (SIGTERM to its group, SIGKILL after 2 s); its final
    /// state and last output. `seen`: whether the model sees them (a
    /// user's `/jobs stop` leaves the exit to a notice).
    pub async fn stop(&self, id: u32, seen: Seen) -> Result<String, ToolError> {
        let already = {
            let t = lock(&self.shared.table);
            let Some(j) = t.jobs.get(&id) else {
                return Err(self.unknown(&t, id));
            };
            if j.state.is_running() {
                signal(j, Sig::Term);
                false
            } else {
                true
            }
        };
        if !already {
            // The keeper sends SIGKILL at the grace time; eonyx only steps
            // in for a keeper that does not answer.
            self.wait_exit(id, STOP_GRACE + KEEPER_SLACK).await;
            if self.state_of(id).is_running() {
                if let Some(j) = lock(&self.shared.table).jobs.get(&id) {
                    signal(j, Sig::Kill);
                }
                self.wait_exit(id, Duration::from_secs(2)).await;
            }
        }
        if seen == Seen::ByUser {
            let header = {
                let t = lock(&self.shared.table);
                t.jobs
                    .get(&id)
                    .map(|j| format!("job {id} {} after {} s: {}", j.state, j.secs(), j.command))
                    .unwrap_or_default()
            };
            return Ok(header);
        }
        let read = self.read_new(id)?;
        let first = if already {
            format!("{} (it had already ended)", read.header)
        } else {
            read.header
        };
        Ok(format!("{first}\n{}", or_none(read.text)))
    }

    async fn wait_exit(&self, id: u32, within: Duration) {
        let mut rx = self.subscribe();
        let deadline = tokio::time::Instant::now() + within;
        while self.state_of(id).is_running() {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => return,
                r = rx.changed() => if r.is_err() { return },
            }
        }
    }

    /// Stop every running job (eonyx's exit, the end of a session or a
    /// task); the ones that were running, as they ended.
    pub async fn stop_all(&self) -> Vec<JobInfo> {
        let ids: Vec<u32> = {
            let t = lock(&self.shared.table);
            let ids: Vec<u32> = t
                .jobs
                .iter()
                .filter(|(_, j)| j.state.is_running())
                .map(|(id, _)| *id)
                .collect();
            for id in &ids {
                if let Some(j) = t.jobs.get(id) {
                    signal(j, Sig::Term);
                }
            }
            ids
        };
        for id in &ids {
            self.wait_exit(*id, STOP_GRACE + KEEPER_SLACK).await;
            if self.state_of(*id).is_running() {
                if let Some(j) = lock(&self.shared.table).jobs.get(id) {
                    signal(j, Sig::Kill);
                }
                self.wait_exit(*id, Duration::from_secs(1)).await;
            }
        }
        let mut t = lock(&self.shared.table);
        ids.iter()
            .filter_map(|id| {
                let j = t.jobs.get_mut(id)?;
                j.exit_seen = true;
                Some(j.info(*id))
            })
            .collect()
    }
}

/// Who a stop's result is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// `job_stop`: the result is the model's, its exit seen.
    ByModel,
    /// `/jobs stop N`: the user's; the model gets the exit's notice.
    ByUser,
}

impl Drop for Jobs {
    /// Whatever still runs is stopped (SIGTERM, SIGKILL after the grace
    /// time): a job never outlives its session.
    fn drop(&mut self) {
        let running = |t: &Table| t.jobs.values().any(|j| j.state.is_running());
        {
            let t = lock(&self.shared.table);
            if !running(&t) {
                return;
            }
            for j in t.jobs.values().filter(|j| j.state.is_running()) {
                signal(j, Sig::Term);
            }
        }
        let deadline = Instant::now() + STOP_GRACE + KEEPER_SLACK;
        while Instant::now() < deadline && running(&lock(&self.shared.table)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let t = lock(&self.shared.table);
        for j in t.jobs.values().filter(|j| j.state.is_running()) {
            signal(j, Sig::Kill);
        }
    }
}

enum Sig {
    Term,
    Kill,
}

/// Signal a job: its keeper (which stops the group), or its group.
fn signal(j: &Job, sig: Sig) {
    #[cfg(unix)]
    {
        use nix::sys::signal::{Signal, kill, killpg};
        let s = match sig {
            Sig::Term => Signal::SIGTERM,
            Sig::Kill => Signal::SIGKILL,
        };
        let pid = nix::unistd::Pid::from_raw(j.pid);
        if j.kept {
            let _ = kill(pid, s);
        } else {
            let _ = killpg(pid, s);
        }
    }
    #[cfg(not(unix))]
    let _ = (j, sig);
}
