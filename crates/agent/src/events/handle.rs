//! [`Events`]: the one handle an agent sends its events through. The agent
//! owns it (and so do the rooms that report: hooks, jobs, goal, a task's
//! children); the frontend shows what comes out of it while it awaits the
//! agent ([`Events::deliver`]) or after a call that does not wait
//! ([`Events::drain`]).
//!
//! Invariants:
//! - Events come out in the order they were sent, a task's children's
//!   interleaved as they ran: every handle of a tree of agents feeds one
//!   queue, a child's handle labelling its events with its task on the way.
//! - Nothing is lost: an event sent while no frontend is delivering waits
//!   in the queue for the next [`Events::deliver`] or [`Events::drain`].
//! - A question to the user never overtakes the events sent before it:
//!   every approver the agent holds is wrapped to [`Events::flush`] first
//!   (`events::Flushing`), which returns once the frontend has shown all
//!   of them.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{mpsc, oneshot};

use super::AgentEvent;

/// What the queue carries: an event, or a flush waiting for the events
/// ahead of it to be shown.
enum Item {
    Event(AgentEvent),
    Flush(oneshot::Sender<()>),
}

/// The queue every handle of one tree of agents feeds.
struct Queue {
    tx: mpsc::UnboundedSender<Item>,
    /// `None` while a delivery or a drain holds it.
    rx: Mutex<Option<mpsc::UnboundedReceiver<Item>>>,
    /// A [`Events::deliver`] is showing events as they come.
    delivering: AtomicBool,
}

/// What a child's events become on their way to the queue.
type Relabel = Arc<dyn Fn(AgentEvent) -> AgentEvent + Send + Sync>;

/// The agent's events handle (cheap to clone; every clone feeds the same
/// queue).
#[derive(Clone)]
pub struct Events {
    queue: Arc<Queue>,
    relabel: Option<Relabel>,
}

impl Default for Events {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("delivering", &self.queue.delivering.load(Ordering::Acquire))
            .field("relabelled", &self.relabel.is_some())
            .finish()
    }
}

impl Events {
    /// A new queue, for the agent of a session.
    pub fn new() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            queue: Arc::new(Queue {
                tx,
                rx: Mutex::new(Some(rx)),
                delivering: AtomicBool::new(false),
            }),
            relabel: None,
        }
    }

    /// A handle into the same queue whose events pass through `f` first
    /// (a task's child: labelled with its task), then through this one's.
    pub(crate) fn relabelled(
        &self,
        f: impl Fn(AgentEvent) -> AgentEvent + Send + Sync + 'static,
    ) -> Self {
        let outer = self.relabel.clone();
        let relabel: Relabel = match outer {
            Some(outer) => Arc::new(move |ev| outer(f(ev))),
            None => Arc::new(f),
        };
        Self {
            queue: self.queue.clone(),
            relabel: Some(relabel),
        }
    }

    /// Send one event. It is shown in order with every other, by the
    /// delivery under way or the next one.
    pub(crate) fn send(&self, ev: AgentEvent) {
        let ev = match &self.relabel {
            Some(f) => f(ev),
            None => ev,
        };
        // The queue holds its own receiver: the channel never closes.
        let _ = self.queue.tx.send(Item::Event(ev));
    }

    /// Wait until a delivery under way has shown every event sent so far
    /// (at once when none is: nothing is being shown then). Called from
    /// the delivered work itself (every approver the agent holds is inside
    /// it); from another task, a flush sent just as the delivery ends
    /// would wait for the next one.
    pub(crate) async fn flush(&self) {
        if !self.queue.delivering.load(Ordering::Acquire) {
            return;
        }
        let (done, shown) = oneshot::channel();
        if self.queue.tx.send(Item::Flush(done)).is_ok() {
            let _ = shown.await;
        }
    }

    /// Await `work` (a call of the agent) and `show` every event as it
    /// comes, then those left when it ends. Inside another delivery of the
    /// same queue this is just `work`: the outer one shows them.
    pub async fn deliver<T>(
        &self,
        work: impl Future<Output = T>,
        mut show: impl FnMut(AgentEvent),
    ) -> T {
        let Some(mut held) = Held::take(&self.queue) else {
            return work.await;
        };
        self.queue.delivering.store(true, Ordering::Release);
        tokio::pin!(work);
        let out = loop {
            tokio::select! {
                // Every event ready is shown before the work goes on.
                biased;
                Some(item) = held.rx.recv() => shown(item, &mut show),
                out = &mut work => break out,
            }
        };
        held.drain(&mut show);
        out
    }

    /// Show every event waiting (after a call that does not wait, such as
    /// finishing a summary written ahead). Inside a delivery, nothing:
    /// that one shows them.
    pub fn drain(&self, mut show: impl FnMut(AgentEvent)) {
        if let Some(mut held) = Held::take(&self.queue) {
            held.drain(&mut show);
        }
    }

    /// Every event waiting, for a caller that keeps them (tests, a bench).
    pub fn take(&self) -> Vec<AgentEvent> {
        let mut out = Vec::new();
        self.drain(|ev| out.push(ev));
        out
    }
}

fn shown(item: Item, show: &mut impl FnMut(AgentEvent)) {
    match item {
        Item::Event(ev) => show(ev),
        Item::Flush(done) => {
            let _ = done.send(());
        }
    }
}

/// The queue's receiver, taken for a delivery or a drain and put back
/// when it ends (also when the delivery is dropped half-way).
struct Held<'q> {
    queue: &'q Queue,
    rx: mpsc::UnboundedReceiver<Item>,
}

impl<'q> Held<'q> {
    fn take(queue: &'q Queue) -> Option<Self> {
        let rx = queue
            .rx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        Some(Self { queue, rx })
    }

    fn drain(&mut self, show: &mut impl FnMut(AgentEvent)) {
        while let Ok(item) = self.rx.try_recv() {
            shown(item, show);
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.queue.delivering.store(false, Ordering::Release);
        let rx = std::mem::replace(&mut self.rx, mpsc::unbounded_channel().1);
        *self.queue.rx.lock().unwrap_or_else(PoisonError::into_inner) = Some(rx);
    }
}

#[cfg(test)]
#[path = "handle_tests.rs"]
mod tests;
