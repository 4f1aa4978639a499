//! Starting a job: spawning it (through the keeper), its log, the
//! threads that pump its output and wait for its exit, its first second.

use super::*;

impl Jobs {
    /// Start `cmd` (built by `shell` as for a foreground command) as the
    /// next job; returns its first second of output.
    pub(crate) async fn start(
        &self,
        command: &str,
        cmd: std::process::Command,
        leader: Leader,
        notify: bool,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let id = {
            let t = lock(&self.shared.table);
            let running: Vec<String> = t
                .jobs
                .iter()
                .filter(|(_, j)| j.state.is_running())
                .map(|(id, j)| format!("job {id} ({})", j.command))
                .collect();
            if running.len() as u64 >= u64::from(self.config.max_jobs) {
                return Err(ToolError::Usage(format!(
                    "not started: {} jobs are running, the most tools.max_jobs allows: {}; stop one with job_stop first",
                    running.len(),
                    running.join(", ")
                )));
            }
            t.next_id
        };
        let log_path = self.config.dir.join(format!("{id}.log"));
        let file = create_log(&self.config.dir, &log_path)?;
        let (mut cmd, kept) = keeper::prepare(
            self.config.keeper.as_deref(),
            cmd,
            leader,
            keeper::Flags::default(),
        );
        let spawn_err = |e| ToolError::io("cannot start the job", command, e);
        let (reader, writer) = std::io::pipe().map_err(spawn_err)?;
        cmd.stdin(Stdio::null())
            .stdout(writer.try_clone().map_err(spawn_err)?)
            .stderr(writer);
        let child = match spawn::spawn(cmd) {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_file(&log_path);
                return Err(ToolError::io("cannot start the job", command, e));
            }
        };
        let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        {
            let mut t = lock(&self.shared.table);
            t.next_id += 1;
            t.started.push(id);
            t.jobs.insert(
                id,
                Job {
                    command: command.to_owned(),
                    started_at: eonyx_core::time::now_rfc3339(),
                    started: Instant::now(),
                    log_path: log_path.clone(),
                    log: log::Log::new(file, self.config.log_max_bytes),
                    read: 0,
                    state: JobState::Running,
                    ended: None,
                    exit_seen: false,
                    exit_taken: false,
                    notify,
                    pid,
                    kept,
                },
            );
        }
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let shared = Arc::clone(&self.shared);
        std::thread::Builder::new()
            .name(format!("job {id} output"))
            .spawn(move || {
                pump(reader, id, &shared);
                let _ = done_tx.send(());
            })
            .map_err(|e| ToolError::io("cannot start the job's output reader", command, e))?;
        let shared = Arc::clone(&self.shared);
        std::thread::Builder::new()
            .name(format!("job {id}"))
            .spawn(move || wait(child, id, &shared, &done_rx))
            .map_err(|e| ToolError::io("cannot start the job's waiter", command, e))?;

        // Its first second.
        let mut rx = self.subscribe();
        let deadline = tokio::time::Instant::now() + FIRST_OUTPUT;
        loop {
            if !self.state_of(id).is_running() || cancel.is_cancelled() {
                break;
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                () = tokio::time::sleep_until(deadline) => break,
                r = rx.changed() => if r.is_err() { break },
            }
        }
        let mut text = format!("job {id} started: {command}\n");
        let read = self.read_new(id)?;
        text.push_str(&read.text);
        if let Some(state) = read.ended {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("[job {id} {state} within its first second]\n"));
        }
        Ok(ToolOutput::ok(text))
    }
}

/// The log file, new and private (0600), in a private directory.
fn create_log(dir: &camino::Utf8Path, path: &camino::Utf8Path) -> Result<std::fs::File, ToolError> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
        .map_err(|e| ToolError::io("cannot create the job log directory", dir.as_str(), e))?;
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
        .map_err(|e| ToolError::io("cannot create the job log", path.as_str(), e))
}

/// Reads the job's output into its log until every writer is gone.
fn pump(mut reader: std::io::PipeReader, id: u32, shared: &Shared) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        {
            let mut t = lock(&shared.table);
            if let Some(j) = t.jobs.get_mut(&id) {
                // A log that cannot be written loses output, not the job.
                let _ = j.log.append(&buf[..n]);
            }
        }
        shared.changed.send_modify(|g| *g += 1);
    }
}

/// Waits for the job's process, then (its output drained, or half a
/// second on) records how it ended.
fn wait(
    mut child: std::process::Child,
    id: u32,
    shared: &Shared,
    drained: &std::sync::mpsc::Receiver<()>,
) {
    let state = match child.wait() {
        Ok(status) => state_of(status),
        Err(_) => JobState::Exited(-1),
    };
    let _ = drained.recv_timeout(Duration::from_millis(500));
    {
        let mut t = lock(&shared.table);
        if let Some(j) = t.jobs.get_mut(&id) {
            j.state = state;
            j.ended = Some(Instant::now());
        }
    }
    shared.changed.send_modify(|g| *g += 1);
}

fn state_of(status: std::process::ExitStatus) -> JobState {
    if let Some(code) = status.code() {
        return JobState::Exited(code);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt as _;
        if let Some(sig) = status.signal() {
            return JobState::Killed(sig);
        }
    }
    JobState::Exited(-1)
}
