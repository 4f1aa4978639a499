//! The events handle: order, nothing lost, a flush that waits for the
//! frontend, a child's events labelled, a dropped delivery that leaves the
//! queue usable.
#![allow(clippy::unwrap_used)] // test code: a failure is a test failure

use std::sync::{Arc, Mutex};

use super::Events;
use crate::events::AgentEvent;

fn notice(s: &str) -> AgentEvent {
    AgentEvent::Notice(s.to_owned())
}

/// What a frontend would print for `ev`.
fn line(ev: &AgentEvent) -> String {
    match ev {
        AgentEvent::Notice(s) => s.clone(),
        AgentEvent::Task { call_id, event } => format!("{call_id}: {}", line(event)),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn a_delivery_shows_every_event_in_order_before_the_work_ends() {
    let events = Events::new();
    let sender = events.clone();
    let mut shown = Vec::new();
    let out = events
        .deliver(
            async move {
                sender.send(notice("one"));
                tokio::task::yield_now().await;
                sender.send(notice("two"));
                sender.send(notice("three"));
                7
            },
            |ev| shown.push(line(&ev)),
        )
        .await;
    assert_eq!(out, 7);
    assert_eq!(shown, ["one", "two", "three"]);
}

#[tokio::test]
async fn events_sent_while_no_one_delivers_wait_for_the_next_delivery() {
    let events = Events::new();
    events.send(notice("early"));
    assert_eq!(events.clone().take().len(), 1);
    events.send(notice("waiting"));
    let mut shown = Vec::new();
    let sender = events.clone();
    events
        .deliver(async move { sender.send(notice("later")) }, |ev| {
            shown.push(line(&ev))
        })
        .await;
    assert_eq!(shown, ["waiting", "later"]);
    assert!(events.take().is_empty());
}

/// The order a question relies on: what was sent before a flush is shown
/// before the flush returns, so anything drawn after it (a question)
/// comes below.
#[tokio::test]
async fn a_flush_returns_only_once_everything_sent_before_it_is_shown() {
    let events = Events::new();
    let screen = Arc::new(Mutex::new(Vec::<String>::new()));
    let sender = events.clone();
    let asker = screen.clone();
    let shower = screen.clone();
    events
        .deliver(
            async move {
                sender.send(notice("→ shell rm -rf build"));
                sender.flush().await;
                asker.lock().unwrap().push("allow? [y]es / [n]o".into());
                sender.send(notice("after the answer"));
            },
            move |ev| shower.lock().unwrap().push(line(&ev)),
        )
        .await;
    assert_eq!(
        *screen.lock().unwrap(),
        [
            "→ shell rm -rf build",
            "allow? [y]es / [n]o",
            "after the answer"
        ]
    );
}

#[tokio::test]
async fn a_flush_with_no_delivery_under_way_returns_at_once() {
    let events = Events::new();
    events.send(notice("kept"));
    events.flush().await;
    assert_eq!(events.take().len(), 1);
}

#[tokio::test]
async fn a_childs_events_are_labelled_with_its_task_on_the_way_into_the_one_queue() {
    let events = Events::new();
    let label = |id: &'static str| {
        move |ev| AgentEvent::Task {
            call_id: id.to_owned(),
            event: Box::new(ev),
        }
    };
    let child = events.relabelled(label("call-1"));
    let grandchild = child.relabelled(label("call-2"));
    events.send(notice("parent"));
    child.send(notice("child"));
    grandchild.send(notice("grandchild"));
    events.send(notice("parent again"));
    let shown: Vec<String> = events.take().iter().map(line).collect();
    assert_eq!(
        shown,
        [
            "parent",
            "call-1: child",
            "call-1: call-2: grandchild",
            "parent again"
        ]
    );
}

#[tokio::test]
async fn a_delivery_inside_another_leaves_the_showing_to_the_outer_one() {
    let events = Events::new();
    let inner = events.clone();
    let mut outer_shown = Vec::new();
    events
        .deliver(
            async move {
                let mut inner_shown = Vec::new();
                let sender = inner.clone();
                inner
                    .deliver(async move { sender.send(notice("nested")) }, |ev| {
                        inner_shown.push(ev)
                    })
                    .await;
                assert!(inner_shown.is_empty());
            },
            |ev| outer_shown.push(line(&ev)),
        )
        .await;
    assert_eq!(outer_shown, ["nested"]);
}

#[tokio::test]
async fn a_delivery_dropped_half_way_loses_nothing() {
    let events = Events::new();
    let sender = events.clone();
    let mut shown = Vec::new();
    {
        let delivery = events.deliver(
            async move {
                sender.send(notice("before"));
                std::future::pending::<()>().await;
            },
            |ev| shown.push(line(&ev)),
        );
        // Ctrl-C: the frontend stops waiting.
        let _ = tokio::time::timeout(std::time::Duration::from_millis(20), delivery).await;
    }
    events.send(notice("after"));
    let rest: Vec<String> = events.take().iter().map(line).collect();
    let mut all = shown;
    all.extend(rest);
    assert_eq!(all, ["before", "after"]);
}
