//! Mining state: proposals checked for duplicates and secrets, rejections
//! kept only as hashes, retries then failure, costs summed, the run lock.

use super::*;

fn store() -> (tempfile::TempDir, MiningStore, MemoryStore) {
    let dir = tempfile::tempdir().unwrap();
    let data = Utf8PathBuf::from_path_buf(dir.path().to_path_buf()).unwrap();
    (
        dir,
        MiningStore::new(&data),
        MemoryStore::new(&data, Utf8Path::new("/home/me/shop")),
    )
}

const SOURCE: ProposalSource<'static> = ProposalSource {
    session: "20261130T164000-1a2b3c4d",
    title: "3",
    project: "/home/me/shop",
};

fn cand(text: &str, seq: u64) -> Candidate {
    Candidate {
        text: text.into(),
        scope: MemoryScope::Project,
        seq: Some(seq),
    }
}

#[test]
fn duplicates_secrets_and_rejections_are_dropped_and_only_a_hash_is_kept() {
    let (_d, mining, memory) = store();
    memory
        .add(MemoryScope::Project, "We use pnpm", "cli", &[])
        .unwrap();
    let existing = memory.list().unwrap();
    let secrets = vec!["sk-live-0123456789".to_owned()];
    let proposed = mining
        .update(|s| {
            Ok(s.propose(
                &SOURCE,
                vec![
                    cand("we  USE pnpm", 2),
                    cand("Never touch generated/", 4),
                    cand("never touch   GENERATED/", 5),
                    cand("the key is sk-live-0123456789", 6),
                    cand("Deploy with make ship", 99),
                ],
                &existing,
                &secrets,
                |seq| seq < 10,
            ))
        })
        .unwrap();
    assert_eq!(proposed.kept.len(), 2);
    assert_eq!(proposed.duplicates, 2);
    assert_eq!(proposed.secrets, 1);
    assert_eq!(proposed.kept[0].seq, Some(4));
    // A seq that does not exist keeps the session only.
    assert_eq!(proposed.kept[1].seq, None);
    assert_eq!(proposed.kept[1].session, SOURCE.session);

    let id = proposed.kept[1].id.clone();
    mining.update(|s| s.reject(&[id.as_str()])).unwrap();
    let raw = std::fs::read_to_string(mining.state_path()).unwrap();
    assert!(!raw.contains("make ship"), "{raw}");
    assert!(!raw.contains("sk-live"), "{raw}");
    // The same words, spaced and cased otherwise, never return.
    let again = mining
        .update(|s| {
            Ok(s.propose(
                &SOURCE,
                vec![cand("deploy WITH make   ship", 1)],
                &[],
                &[],
                |_| true,
            ))
        })
        .unwrap();
    assert!(again.kept.is_empty());
    assert_eq!(again.duplicates, 1);
}

#[test]
fn a_bad_reply_is_retried_once_then_failed() {
    let mut s = MiningState::default();
    assert_eq!(s.mark("a", Err(())), MinedStatus::Retry);
    assert!(!s.is_done("a"));
    assert_eq!(s.mark("a", Err(())), MinedStatus::Failed);
    assert!(s.is_done("a"));
    assert_eq!(s.mark("b", Ok(2)), MinedStatus::Mined);
    assert!(s.is_done("b"));
}

#[test]
fn costs_sum_and_stay_unknown_without_pricing() {
    let mut s = MiningState::default();
    let cost = |usd| RequestCost {
        session: "a".into(),
        at: String::new(),
        prompt_tokens: 100,
        completion_tokens: 10,
        cost_usd: usd,
    };
    s.record_cost(cost(Some(0.5)));
    s.record_cost(cost(Some(0.25)));
    let t = s.totals();
    assert_eq!(
        (t.requests, t.prompt_tokens, t.completion_tokens),
        (2, 200, 20)
    );
    assert_eq!(t.cost_usd, Some(0.75));
    s.record_cost(cost(None));
    assert_eq!(s.totals().cost_usd, None);
}

#[test]
fn one_process_mines_at_a_time_and_a_damaged_state_says_so() {
    let (_d, mining, _m) = store();
    let held = mining.try_run_lock().unwrap();
    assert!(held.is_some());
    // flock locks are per open file: a second open is refused while held.
    assert!(mining.try_run_lock().unwrap().is_none());
    drop(held);
    assert!(mining.try_run_lock().unwrap().is_some());

    std::fs::write(mining.state_path(), b"{not json").unwrap();
    let err = mining.read().unwrap_err();
    assert!(err.to_string().contains("is damaged"), "{err}");
}

#[cfg(unix)]
#[test]
fn the_state_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let (_d, mining, _m) = store();
    mining.update(|s| Ok(s.mark("a", Ok(0)))).unwrap();
    let mode = std::fs::metadata(mining.state_path())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}
