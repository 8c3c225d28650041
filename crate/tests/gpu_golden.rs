//! Every upstream golden case (tests/fixtures/golden/<case>, float.bin from upstream C) rendered
//! by the WGSL kernel, one test per case: Pearson correlation >= 0.9999 and |sum ratio - 1| <=
//! 1e-3 against upstream, and a tighter comparison with the CPU f32 kernel on the same plan.
//! The two scaling cases run when the shared golden suite is present.
#![cfg(feature = "gpu")]
#![allow(non_snake_case)] // test names are the golden case folders

#[macro_use]
mod gpu_support;
use gpu_support::RenderExact;

use gpu_support::common::{
    compare, golden_dir, read_f32, shared_case, sum, Words, SHARED_ONLY_CASES,
};
use nanobragg::api::{self, Precision};
use nanobragg::files::DiskFiles;
use nanobragg::gpu::GpuRenderer;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, OnceLock};

/// One renderer for all cases (pipeline created once); tests take turns on it.
fn with_renderer<T>(case: &str, f: impl FnOnce(&mut GpuRenderer) -> T) -> Option<T> {
    static RENDERER: OnceLock<Option<Mutex<GpuRenderer>>> = OnceLock::new();
    let slot =
        RENDERER.get_or_init(|| gpu_support::renderer_or_skip("GPU golden cases").map(Mutex::new));
    match slot {
        Some(m) => {
            let mut r = m.lock().unwrap_or_else(|e| e.into_inner());
            Some(f(&mut r))
        }
        None => {
            gpu_support::loud(&format!(
                "SKIPPED {case}: no GPU adapter and NANOBRAGG_NO_GPU=1 is set"
            ));
            None
        }
    }
}

fn check_dir(name: &str, dir: &Path) {
    let words = gpu_support::common::case_words_for(dir, Words::InProcess);
    let prep = api::prepare(&words, &DiskFiles).unwrap_or_else(|e| panic!("{name}: prepare: {e}"));
    let plan = prep.plan();
    let Some((gpu, ms, exact)) = with_renderer(name, |r| {
        let img = r
            .render_exact(plan)
            .unwrap_or_else(|e| panic!("{name}: GPU render: {e}"));
        (
            img,
            r.timings().total_s * 1e3,
            r.stats().last_exact_bragg_pixels,
        )
    }) else {
        return;
    };
    let upstream = read_f32(&dir.join("float.bin"));
    let vs_c = compare(&upstream, &gpu);
    let cancel = AtomicBool::new(false);
    let cpu = api::render_cpu(plan, Precision::F32, &|_| {}, &cancel).unwrap();
    let vs_cpu = compare(&cpu, &gpu);
    println!(
        "{name}: 1-corr(C) {:.2e}, sum/C-1 {:.2e}, 1-corr(f32) {:.2e}, diff/peak(f32) {:.2e}, f64 px {exact}, {ms:.1} ms",
        1.0 - vs_c.correlation,
        vs_c.sum_ratio - 1.0,
        1.0 - vs_cpu.correlation,
        vs_cpu.max_rel_to_peak(),
    );
    assert!(
        vs_c.correlation >= 0.9999 && (vs_c.sum_ratio - 1.0).abs() <= 1e-3,
        "{name}: vs upstream corr {}, sum ratio {} (sum {})",
        vs_c.correlation,
        vs_c.sum_ratio,
        sum(&gpu)
    );
    assert!(
        vs_cpu.correlation >= 0.99999 && vs_cpu.max_rel_to_peak() <= 1e-3,
        "{name}: vs CPU f32 corr {}, max diff/peak {:e}",
        vs_cpu.correlation,
        vs_cpu.max_rel_to_peak()
    );
}

macro_rules! gpu_golden {
    ($($case:ident),* $(,)?) => {
        $( #[test] fn $case() { check_dir(stringify!($case), &golden_dir(stringify!($case))); } )*
        #[test]
        fn every_fixture_is_listed() {
            gpu_support::common::check_every_fixture_is_listed(&[$(stringify!($case)),*]);
        }
    };
}

golden_cases!(gpu_golden);

#[test]
fn scaling_1024() {
    if let Some(dir) = shared_case(SHARED_ONLY_CASES[0]) {
        check_dir(SHARED_ONLY_CASES[0], &dir);
    }
}

#[test]
fn scaling_2048() {
    if let Some(dir) = shared_case(SHARED_ONLY_CASES[1]) {
        check_dir(SHARED_ONLY_CASES[1], &dir);
    }
}
