//! Shared helpers of the GPU tests. GPU tests FAIL (never skip) when no adapter is found.
#![allow(dead_code)]

use nanobragg::gpu::{self, GpuRenderer};

/// A device for the tests: lavapipe (Mesa's CPU Vulkan) on machines without a GPU.
pub fn device() -> (wgpu::Device, wgpu::Queue) {
    match pollster::block_on(gpu::request_device()) {
        Ok((d, q, info)) => {
            eprintln!(
                "GPU tests on: {} ({:?}, {})",
                info.name, info.backend, info.driver
            );
            (d, q)
        }
        Err(e) => panic!(
            "GPU tests need a wgpu adapter and none was found: {e}. \
             Install mesa-vulkan-drivers (lavapipe) or run on a machine with a GPU."
        ),
    }
}

pub fn renderer() -> GpuRenderer {
    let (d, q) = device();
    pollster::block_on(GpuRenderer::new_with_device(d, q))
        .unwrap_or_else(|e| panic!("GPU renderer set-up failed: {e}"))
}

/// Deterministic xorshift64* generator for test inputs.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// Pearson correlation of two images.
pub fn pearson(a: &[f32], b: &[f32]) -> f64 {
    let n = a.len() as f64;
    let ma = a.iter().map(|&x| x as f64).sum::<f64>() / n;
    let mb = b.iter().map(|&x| x as f64).sum::<f64>() / n;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (&x, &y) in a.iter().zip(b) {
        let (dx, dy) = (x as f64 - ma, y as f64 - mb);
        sab += dx * dy;
        saa += dx * dx;
        sbb += dy * dy;
    }
    if saa == 0.0 && sbb == 0.0 {
        return 1.0;
    }
    sab / (saa * sbb).sqrt()
}

pub fn sum(a: &[f32]) -> f64 {
    a.iter().map(|&x| x as f64).sum()
}

/// Largest |a - b| relative to max |b|.
pub fn max_rel_to_peak(a: &[f32], b: &[f32]) -> f64 {
    let peak = b.iter().fold(0f64, |m, &x| m.max((x as f64).abs()));
    let diff = a
        .iter()
        .zip(b)
        .fold(0f64, |m, (&x, &y)| m.max((x as f64 - y as f64).abs()));
    if peak == 0.0 {
        diff
    } else {
        diff / peak
    }
}
