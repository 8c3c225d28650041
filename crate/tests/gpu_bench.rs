//! Benchmark (ignored by default): cold (device + self-test + pipeline + buffers + render) and
//! warm (median of >= 10 renders of the same plan) GPU times for square detectors.
//! `cargo test --release --features gpu --test gpu_bench -- --ignored --nocapture`
//! Sizes: NANOBRAGG_BENCH_SIZES="256 512 1024 2048 4096" (default "256 512 1024").
#![cfg(feature = "gpu")]

mod gpu_support;

use nanobragg::api;
use nanobragg::files::DiskFiles;
use nanobragg::gpu::GpuRenderer;
use std::time::Instant;

#[test]
#[ignore]
fn bench_cold_and_warm() {
    let sizes = std::env::var("NANOBRAGG_BENCH_SIZES").unwrap_or_else(|_| "256 512 1024".into());
    let (d, q) = gpu_support::device();
    drop((d, q));
    println!("| size | cold total ms (pipeline ms) | warm median ms | upload | dispatch | readback | Mpixel/s warm |");
    println!("|---|---|---|---|---|---|---|");
    for n in sizes
        .split_whitespace()
        .map(|s| s.parse::<usize>().unwrap())
    {
        let args = format!(
            "-cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -default_F 100 -distance 100 -detpixels {n}"
        );
        let prep = api::prepare(&api::split_args(&args), &DiskFiles).unwrap();
        let plan = prep.plan();
        let t0 = Instant::now();
        let (d, q) = gpu_support::device();
        let mut r = pollster::block_on(GpuRenderer::new_with_device(d, q)).unwrap();
        let pipeline_ms = r.timings().pipeline_s * 1e3;
        r.render_blocking(plan).unwrap();
        let cold_ms = t0.elapsed().as_secs_f64() * 1e3;
        let mut warm = Vec::new();
        let mut parts = Vec::new();
        for _ in 0..10 {
            let t = Instant::now();
            r.render_blocking(plan).unwrap();
            warm.push(t.elapsed().as_secs_f64() * 1e3);
            parts.push(r.timings());
        }
        warm.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let med = warm[warm.len() / 2];
        let m = |f: fn(&nanobragg::gpu::GpuTimings) -> f64| {
            let mut v: Vec<f64> = parts.iter().map(|t| f(t) * 1e3).collect();
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            v[v.len() / 2]
        };
        println!(
            "| {n}x{n} | {cold_ms:.1} ({pipeline_ms:.1}) | {med:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            m(|t| t.upload_s),
            m(|t| t.dispatch_s),
            m(|t| t.readback_s),
            (n * n) as f64 / med / 1e3
        );
    }
}
