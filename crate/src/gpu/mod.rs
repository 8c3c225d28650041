//! The WGSL kernel (`shaders/`) driven through wgpu: natively (Vulkan/Metal/DX12) and in the
//! browser (WebGPU backend). See [`GpuRenderer`].
//!
//! * `layout`: the plan packed into `Pod` records mirrored by the WGSL structs (df64 pairs).
//! * `shaders`: the WGSL sources (`shaders/` at the repository root).
//! * `context`: device acquisition with the limits we need, read-back and wait helpers.
//! * `selftest`: the df64 building blocks run through the real shader; start-up fma probe.
//! * `renderer`: [`GpuRenderer`], cached pipeline and buffers, chunked dispatch.

pub mod context;
pub mod layout;
pub mod renderer;
pub mod selftest;
pub mod shaders;

pub use context::{request_device, required_limits};
pub use renderer::{GpuRenderer, GpuStats, GpuTimings};

#[cfg(not(target_arch = "wasm32"))]
use crate::{error::Result, plan::Plan};

/// One-shot native render for the CLI (`-backend gpu|auto`): opens the default adapter, renders
/// with a progress meter on stderr when it is a terminal, and prints [`GpuTimings`] to stderr
/// when `timings` is set. Errors are `ErrorKind::Gpu` (the caller may fall back to the CPU) or
/// `ErrorKind::Cancelled`.
#[cfg(not(target_arch = "wasm32"))]
pub fn render_blocking(plan: &Plan, timings: bool) -> Result<Vec<f32>> {
    use std::io::IsTerminal;
    let mut r = GpuRenderer::new_blocking()?;
    // nothing cancels a CLI render (Ctrl-C ends the process): full-size submissions
    r.set_chunk_budget(GpuRenderer::DEFAULT_CHUNK_BUDGET);
    let show = std::io::stderr().is_terminal();
    let mut progress = |f: f32| {
        if show {
            eprint!("\r{:3.0}% done (GPU)", f * 100.0);
            if f >= 1.0 {
                eprintln!();
            }
        }
    };
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let image = r.render_blocking_with(plan, &mut progress, &cancel)?;
    if timings {
        let t = r.timings();
        let name = r.adapter_info().map(|i| i.name.clone()).unwrap_or_default();
        eprintln!(
            "gpu timings ({name}): pipeline {:.1} ms, upload {:.1} ms, dispatch {:.1} ms ({} chunks), readback {:.1} ms",
            t.pipeline_s * 1e3,
            t.upload_s * 1e3,
            t.dispatch_s * 1e3,
            t.chunks,
            t.readback_s * 1e3
        );
    }
    Ok(image)
}

/// In the browser nothing may block: use the async [`GpuRenderer::render`]. This stub keeps the
/// CLI module building for wasm32 and tells the caller to fall back.
#[cfg(target_arch = "wasm32")]
pub fn render_blocking(
    _plan: &crate::plan::Plan,
    _timings: bool,
) -> crate::error::Result<Vec<f32>> {
    Err(crate::error::Error::gpu(
        "blocking GPU rendering is not available on wasm32; use the async GpuRenderer::render",
    ))
}
