//! Client overhead per request: our `OpenAiProvider::send` vs a raw
//! reqwest POST that reads the same canned SSE reply from the same local
//! server, side by side in one run. Goal: under 1 ms beyond the raw round
//! trip. `EONYX_BENCH_SCALE` multiplies the number of requests (default 1 =
//! 300 requests each).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use eonyx_core::config::ProviderKind;
use eonyx_core::{ChatRequest, Message, ModelConfig, Provider, SystemPrompt};
use eonyx_provider::OpenAiProvider;
use eonyx_tests::bench::{self, Line, Samples};

fn canned_reply() -> String {
    let mut s = String::new();
    for i in 0..50 {
        s.push_str(&format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"word{i} \"}},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    s.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    s.push_str(
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":50}}\n\n",
    );
    s.push_str("data: [DONE]\n\n");
    s
}

fn main() {
    let n = 300 * bench::scale();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let reply = canned_reply();
        let app = Router::new().fallback(move || {
            let reply = reply.clone();
            async move {
                Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(Body::from(reply))
                    .unwrap()
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let base = format!("http://{addr}/v1");

        let mut model = ModelConfig::with_defaults("bench", ProviderKind::Openai);
        model.base_url = base.clone();
        model.name = "bench".into();
        let provider = OpenAiProvider::new(model.clone(), None).unwrap();
        let request = ChatRequest::new(
            "bench",
            SystemPrompt {
                stable: "You are a benchmark.".into(),
                suffix: "Current date (UTC): 2026-01-01".into(),
            },
            vec![Message::user("hello")],
        );
        let body = provider.request_body(&request, true);
        let raw = reqwest::Client::new();
        let url = format!("{base}/chat/completions");

        let raw_once = || async {
            let r = raw.post(&url).json(&body).send().await.unwrap();
            let b = r.bytes().await.unwrap();
            assert!(b.len() > 100);
        };
        let ours_once = || async {
            let mut n = 0usize;
            let r = provider.send(&request, &mut |_| n += 1).await.unwrap();
            assert!(r.message.content.text().starts_with("word0"));
        };
        // Warm up both connection pools.
        for _ in 0..20 {
            raw_once().await;
            ours_once().await;
        }
        // Interleave so both see the same machine load.
        let mut raw_runs = Samples::default();
        let mut ours_runs = Samples::default();
        for _ in 0..n {
            let t = Instant::now();
            raw_once().await;
            raw_runs.0.push(t.elapsed());
            let t = Instant::now();
            ours_once().await;
            ours_runs.0.push(t.elapsed());
        }
        let (raw_mean, ours_mean) = (raw_runs.mean(), ours_runs.mean());
        let overhead = ours_mean.saturating_sub(raw_mean);
        let lines = [
            Line::timed(
                "provider_request_openai_sse",
                ours_mean,
                raw_mean,
                "< raw + 1 ms",
            ),
            // Against the goal itself: the ratio is the overhead in ms.
            Line::timed(
                "provider_overhead_per_request",
                overhead,
                Duration::from_millis(1),
                "< 1 ms",
            ),
        ];
        for line in lines {
            println!("{line}");
        }
    });
}
