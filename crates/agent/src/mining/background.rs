//! A start's background pass (docs/memory.md#mining): on its own thread
//! with its own runtime, so no turn of the frontend ever waits for it; the
//! frontend drains its events when it likes and, at its end, gives a
//! request still out a bounded time before abandoning it unmarked.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use eonyx_config::Config;
use eonyx_core::provider::CancellationToken;

use super::{MineOptions, Miner, MiningEvent, Pick};

/// What the pass sends: an event, or that it ended.
enum Msg {
    Event(MiningEvent),
    Done,
}

/// The running pass.
pub struct MiningHandle {
    rx: Receiver<Msg>,
    cancel: CancellationToken,
    done: bool,
}

impl MiningHandle {
    /// The events sent so far (without waiting).
    pub fn drain(&mut self) -> Vec<MiningEvent> {
        let mut out = Vec::new();
        while let Ok(m) = self.rx.try_recv() {
            match m {
                Msg::Event(e) => out.push(e),
                Msg::Done => self.done = true,
            }
        }
        out
    }

    /// Wait at most `limit` for the pass to end, then cancel what is still
    /// out (its session stays unmarked, for a later start). The events
    /// that came meanwhile.
    pub fn finish(mut self, limit: Duration) -> Vec<MiningEvent> {
        let mut out = self.drain();
        let deadline = Instant::now() + limit;
        while !self.done {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(Msg::Event(e)) => out.push(e),
                Ok(Msg::Done) | Err(RecvTimeoutError::Disconnected) => self.done = true,
                Err(RecvTimeoutError::Timeout) => break,
            }
        }
        if !self.done {
            self.cancel.cancel();
        }
        out
    }
}

impl Drop for MiningHandle {
    fn drop(&mut self) {
        // A frontend that ends without `finish` abandons the request.
        if !self.done {
            self.cancel.cancel();
        }
    }
}

/// Start a start's pass when `config` mines (`None` when it is off or the
/// thread cannot start). The pass reads the sessions on its own thread and
/// builds its model client only when it finds one to mine.
pub fn start_background(config: &Config, opts: MineOptions) -> Option<MiningHandle> {
    if !super::enabled(config) || config.memory.mine_per_start == 0 {
        return None;
    }
    let (tx, rx) = channel();
    let cancel = CancellationToken::new();
    let config = config.clone();
    let token = cancel.clone();
    let spawned = std::thread::Builder::new()
        .name("eonyx-mining".into())
        .spawn(move || pass(config, opts, token, tx));
    spawned.ok().map(|_| MiningHandle {
        rx,
        cancel,
        done: false,
    })
}

fn pass(config: Config, opts: MineOptions, cancel: CancellationToken, tx: Sender<Msg>) {
    let send = |e: MiningEvent| {
        let _ = tx.send(Msg::Event(e));
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            send(MiningEvent::Warning(format!(
                "memory mining did not start ({e}); it is tried again at the next start"
            )));
            let _ = tx.send(Msg::Done);
            return;
        }
    };
    runtime.block_on(async {
        let result = match Miner::unconnected(config, &opts) {
            Ok(miner) => {
                let mut sink = |e: MiningEvent| send(e);
                miner.run(&Pick::Start, cancel.clone(), &mut sink).await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = result
            && !cancel.is_cancelled()
        {
            send(MiningEvent::Warning(format!("memory mining stopped: {e}")));
        }
    });
    let _ = tx.send(Msg::Done);
}
