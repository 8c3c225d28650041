//! Shared helpers of the GPU tests: the device, and the test harness of `common.rs` (image
//! comparison, golden cases, the test-input generator) re-exported.
//!
//! A GPU test FAILS when no wgpu adapter is found, with a message saying so (CI installs Mesa's
//! lavapipe, so CI runs every GPU test). On a machine without any adapter, set
//! `NANOBRAGG_NO_GPU=1` to skip them instead: each skipped test prints a loud `SKIPPED` line.
#![allow(dead_code)]

#[macro_use]
#[path = "../common.rs"]
pub mod common;

#[allow(unused_imports)]
pub use common::{loud, sum, Rng};
use nanobragg::gpu::{self, GpuRenderer};
use nanobragg::plan::Plan;
use std::sync::atomic::AtomicBool;

/// The environment variable that turns "no adapter" from a failure into a skip.
pub const NO_GPU_VAR: &str = "NANOBRAGG_NO_GPU";

fn no_gpu_allowed() -> bool {
    std::env::var(NO_GPU_VAR).is_ok_and(|v| v == "1")
}

/// A device for the tests (lavapipe, Mesa's CPU Vulkan, on machines without a GPU), or `None`
/// after a SKIPPED line when there is no adapter and `NANOBRAGG_NO_GPU=1` is set. Panics with
/// a clear message when there is no adapter otherwise.
pub fn device_or_skip(test: &str) -> Option<(wgpu::Device, wgpu::Queue)> {
    match pollster::block_on(gpu::request_device()) {
        Ok((d, q, info)) => {
            eprintln!(
                "GPU tests on: {} ({:?}, {})",
                info.name, info.backend, info.driver
            );
            Some((d, q))
        }
        Err(e) if no_gpu_allowed() => {
            loud(&format!("SKIPPED {test}: {NO_GPU_VAR}=1 is set and {e}"));
            None
        }
        Err(e) => panic!(
            "{e}. The GPU tests need a wgpu adapter: install mesa-vulkan-drivers (lavapipe, \
             as CI does) or run on a machine with a GPU; set {NO_GPU_VAR}=1 to skip the GPU \
             tests instead."
        ),
    }
}

/// A renderer on [`device_or_skip`]'s device.
pub fn renderer_or_skip(test: &str) -> Option<GpuRenderer> {
    let (d, q) = device_or_skip(test)?;
    Some(
        pollster::block_on(GpuRenderer::new_with_device(d, q))
            .unwrap_or_else(|e| panic!("GPU renderer set-up failed: {e}")),
    )
}

/// Ends this test binary with success after a SKIPPED line (for the tests that take a device
/// without a way to return early: all tests of such a binary need the GPU).
fn skip_binary() -> ! {
    let exe = std::env::args().next().unwrap_or_default();
    loud(&format!(
        "SKIPPED every remaining test of {exe}: no GPU adapter and {NO_GPU_VAR}=1 is set"
    ));
    std::process::exit(0)
}

/// A device for the tests; see [`device_or_skip`]. Where the skip applies, the whole test
/// binary ends (successfully) after a SKIPPED line.
pub fn device() -> (wgpu::Device, wgpu::Queue) {
    device_or_skip("GPU test").unwrap_or_else(|| skip_binary())
}

/// A renderer for the tests; see [`device`].
pub fn renderer() -> GpuRenderer {
    renderer_or_skip("GPU test").unwrap_or_else(|| skip_binary())
}

/// The GPU's image as `api::Renderer` gives it: the render, then the pixels the GPU reports
/// under the exact-Bragg rule from the f64 kernel (`cpu::apply_exact_fixup`).
pub trait RenderExact {
    fn render_exact(&mut self, plan: &Plan) -> nanobragg::error::Result<Vec<f32>>;
    fn render_exact_with(
        &mut self,
        plan: &Plan,
        progress: &mut dyn FnMut(f32),
        cancel: &AtomicBool,
    ) -> nanobragg::error::Result<Vec<f32>>;
}

impl RenderExact for GpuRenderer {
    fn render_exact(&mut self, plan: &Plan) -> nanobragg::error::Result<Vec<f32>> {
        let mut image = self.render_blocking(plan)?;
        nanobragg::cpu::apply_exact_fixup(plan, &mut image, self.exact_fixup());
        Ok(image)
    }
    fn render_exact_with(
        &mut self,
        plan: &Plan,
        progress: &mut dyn FnMut(f32),
        cancel: &AtomicBool,
    ) -> nanobragg::error::Result<Vec<f32>> {
        let mut image = self.render_blocking_with(plan, progress, cancel)?;
        nanobragg::cpu::apply_exact_fixup(plan, &mut image, self.exact_fixup());
        Ok(image)
    }
}

/// Pearson correlation of two images (the one in `common::compare`).
pub fn pearson(a: &[f32], b: &[f32]) -> f64 {
    common::compare(b, a).correlation
}

/// Largest |a − b| relative to max |b| (the one in `common::Compare`).
pub fn max_rel_to_peak(a: &[f32], b: &[f32]) -> f64 {
    common::compare(b, a).max_rel_to_peak()
}
