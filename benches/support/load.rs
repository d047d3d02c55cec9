//! A small closed-loop load generator shared by the benchmarks: `concurrency` loops calling
//! an operation until a deadline, with latency percentiles.

#![allow(dead_code)] // each benchmark uses its part

use std::time::{Duration, Instant};

/// What a load run measured.
#[derive(Debug)]
pub struct Figures {
    pub requests: usize,
    pub per_second: f64,
    pub p50: Duration,
    pub p99: Duration,
}

/// Runs `concurrency` loops of `call` for `duration` and summarises their latencies.
pub async fn drive<F, Fut>(concurrency: usize, duration: Duration, call: F) -> Figures
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let started = Instant::now();
    let deadline = started + duration;
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let call = call.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let sent = Instant::now();
                    call().await;
                    latencies.push(sent.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await.expect("worker"));
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Figures {
        requests: latencies.len(),
        per_second: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
    }
}

pub fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub fn print(label: &str, figures: &Figures) {
    println!(
        "{label:<28} {:>9.0} req/s   p50 {:>7.3} ms   p99 {:>7.3} ms   ({} requests)",
        figures.per_second,
        figures.p50.as_secs_f64() * 1e3,
        figures.p99.as_secs_f64() * 1e3,
        figures.requests
    );
}
