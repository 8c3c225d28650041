//! The WGSL kernel (`shaders/`) driven through wgpu: natively (Vulkan/Metal/DX12) and in the
//! browser (WebGPU backend). See [`GpuRenderer`].
//!
//! * `layout`: the plan packed into `Pod` records mirrored by the WGSL structs (df64 pairs).
//! * `shaders`: the WGSL sources (`shaders/` at the repository root).
//! * `context`: device acquisition with the limits we need, read-back and wait helpers.
//! * `selftest`: the df64 building blocks run through the real shader; start-up fma probe.
//! * `renderer`: [`GpuRenderer`], cached pipeline and buffers, chunked dispatch.
//! * `readback`: the output buffer read back to the host (strategies: `NANOBRAGG_GPU_READBACK`).
//! * `tangent`: the tangent kernel's passes (image + tangent images, MODEL §10).

pub mod context;
pub mod layout;
pub mod readback;
pub mod renderer;
pub mod selftest;
pub mod shaders;
pub mod tangent;

pub use context::{request_device, required_limits};
pub use renderer::{GpuRenderer, GpuStats, GpuTimings};
pub use tangent::{GpuTangents, GpuVjp};
