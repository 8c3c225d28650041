//! The WGSL kernel (`shaders/`) driven through wgpu: natively (Vulkan/Metal/DX12) and in the
//! browser (WebGPU). See [`GpuRenderer`].

pub mod layout;
pub mod shaders;
