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

fn fmt_ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let scale: u32 = std::env::var("EONYX_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1);
    let n = 300 * scale;
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
        let mut raw_total = Duration::ZERO;
        let mut ours_total = Duration::ZERO;
        for _ in 0..n {
            let t = Instant::now();
            raw_once().await;
            raw_total += t.elapsed();
            let t = Instant::now();
            ours_once().await;
            ours_total += t.elapsed();
        }
        let raw_mean = raw_total / n;
        let ours_mean = ours_total / n;
        let ratio = ours_mean.as_secs_f64() / raw_mean.as_secs_f64().max(1e-9);
        let overhead = ours_mean.saturating_sub(raw_mean);
        println!(
            "BENCH|provider_request_openai_sse|{}|{}|{ratio:.2}x|< raw + 1 ms",
            fmt_ms(ours_mean),
            fmt_ms(raw_mean)
        );
        println!(
            "BENCH|provider_overhead_per_request|{}|{}|{:.2}x|< 1 ms",
            fmt_ms(overhead),
            fmt_ms(Duration::from_millis(1)),
            overhead.as_secs_f64() * 1000.0
        );
    });
}
