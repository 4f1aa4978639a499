//! `Notify`, the approver that runs `Notification` hooks as it asks, is a
//! wrapper: it forwards every decision (docs/tools.md#permission-rules).

use std::sync::Arc;

use eonyx_core::hooks::HookDef;

use super::*;
use crate::tools::testing::{Scripted, every_kind, scripted_answer as answer};

#[tokio::test]
async fn notify_forwards_every_decision() {
    let defs = [HookDef {
        event: HookEvent::Notification,
        matcher: String::new(),
        command: "true".into(),
        timeout_secs: 5,
        file: "/h/config.toml".into(),
        runs: true,
    }];
    let dir = camino::Utf8PathBuf::from_path_buf(std::env::temp_dir()).unwrap();
    let env = RunEnv {
        project_dir: dir,
        hidden_env: Vec::new(),
    };
    let state = HookState::new(Hooks::new(&defs, env).unwrap());
    let inner = Arc::new(Scripted::default());
    let notify = notifying(&state, inner.clone());
    assert_ne!(
        Arc::as_ptr(&notify).cast::<()>(),
        Arc::as_ptr(&inner).cast::<()>(),
        "a Notification hook makes a wrapper"
    );
    for kind in &every_kind() {
        assert_eq!(notify.decide(kind).await, answer(0, kind));
        assert_eq!(notify.decide_asked(kind).await, answer(1, kind));
        assert_eq!(notify.decide_read(kind).await, answer(2, kind));
        assert_eq!(notify.rule_denial(kind), inner.rule_denial(kind));
        assert!(Arc::ptr_eq(&notify.read_rules().unwrap(), &inner.rules));
    }
}
