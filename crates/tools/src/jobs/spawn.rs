//! Jobs are spawned from one thread that lives as long as eonyx: the
//! parent-death signal a keeper asks for fires when the thread that forked
//! it ends, not the process, so a short-lived thread (a blocking-pool
//! thread that idles out) would take its jobs with it.

use std::process::{Child, Command};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock, PoisonError};

type Request = (Command, Sender<std::io::Result<Child>>);

static SPAWNER: OnceLock<Mutex<Sender<Request>>> = OnceLock::new();

/// Spawn `cmd` on the spawner thread (started on first use).
pub(crate) fn spawn(cmd: Command) -> std::io::Result<Child> {
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = channel::<Request>();
        let started = std::thread::Builder::new()
            .name("eonyx jobs".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            });
        if started.is_err() {
            // The receiver is gone with the closure: every spawn below
            // fails with "the job spawner is not running".
        }
        Mutex::new(tx)
    });
    let (reply, answer) = channel();
    let sent = sender
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .send((cmd, reply));
    let gone = || std::io::Error::other("the job spawner thread is not running");
    sent.map_err(|_| gone())?;
    answer.recv().map_err(|_| gone())?
}
