use serde_json::json;

use super::super::test_support::Fixture;
use super::*;

fn with_jobs(cap: u64) -> Fixture {
    let mut f = Fixture::new();
    let dir = f.outside().join("jobs");
    f.ctx.jobs = Some(Arc::new(Jobs::new(JobsConfig {
        max_jobs: 8,
        log_max_bytes: 64 * 1024 * 1024,
        output_cap_bytes: cap,
        dir,
        keeper: None,
    })));
    f
}

#[tokio::test]
async fn a_job_that_floods_output_is_read_head_and_tail_and_never_whole() {
    let f = with_jobs(1000);
    let out = f
        .run(
            "shell",
            json!({"command": "head -c 300000 /dev/urandom; echo; echo THE-END", "background": true}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text);
    let read = f.run("job_output", json!({"id": 1, "wait_s": 30})).await;
    let read = if read.text.starts_with("job 1 running") {
        f.run("job_output", json!({"id": 1, "wait_s": 30})).await
    } else {
        read
    };
    let all = format!("{}{}", out.text, read.text);
    assert!(all.len() < 8000, "{}", all.len());
    assert!(
        all.contains("bytes left out (over tools.output_cap_bytes)"),
        "{all}"
    );
    // Read again: no new output, the final state.
    let mut again = f.run("job_output", json!({"id": 1})).await;
    for _ in 0..50 {
        if !again.text.starts_with("job 1 running") {
            break;
        }
        again = f.run("job_output", json!({"id": 1, "wait_s": 1})).await;
    }
    assert!(
        again.text.starts_with("job 1 exited 0 after "),
        "{}",
        again.text
    );
    let last = f.run("job_output", json!({"id": 1})).await;
    assert!(last.text.ends_with("(no new output)\n"), "{}", last.text);
    assert!(
        last.text.starts_with("job 1 exited 0 after "),
        "{}",
        last.text
    );
}

#[tokio::test]
async fn bad_input_is_a_clear_error_and_a_failed_start_takes_no_id() {
    let f = with_jobs(1000);
    let out = f.run("job_output", json!({"id": 3})).await;
    assert!(out.is_error);
    assert!(
        out.text
            .starts_with("no job 3: no job was started in this session"),
        "{}",
        out.text
    );
    let out = f.run("job_output", json!({"id": 1, "wait_s": -1})).await;
    assert_eq!(
        out.text,
        "invalid arguments for job_output: wait_s must be between 0 and 60 seconds, got -1"
    );
    let out = f.run("job_stop", json!({"id": "one"})).await;
    assert!(
        out.text.starts_with("invalid arguments for job_stop:"),
        "{}",
        out.text
    );
    let out = f
        .run("shell", json!({"command": "true", "notify": true}))
        .await;
    assert!(
        out.text.contains("notify applies to background jobs only"),
        "{}",
        out.text
    );
    // A project root that is gone: the command cannot start.
    let mut g = with_jobs(1000);
    g.ctx.project_root = g.outside().join("missing");
    let out = g
        .run("shell", json!({"command": "true", "background": true}))
        .await;
    assert!(out.is_error, "{}", out.text);
    assert!(out.text.starts_with("cannot start the job"), "{}", out.text);
    let out = g
        .run("shell", json!({"command": "sleep 5", "background": true}))
        .await;
    assert!(out.is_error);
    let jobs = g.ctx.jobs.as_ref().unwrap();
    assert!(jobs.list().is_empty());
    g.ctx.project_root = f.root().to_owned();
    let out = g
        .run("shell", json!({"command": "echo hi", "background": true}))
        .await;
    assert!(
        out.text.starts_with("job 1 started: echo hi\nhi\n"),
        "{}",
        out.text
    );
}
