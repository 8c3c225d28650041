//! nanoBragg: X-ray diffraction from a small crystal onto a pixel detector.
//!
//! Flow: command-line words (`args`) -> resolved f64 setup (`resolve`) -> flat `plan` ->
//! per-pixel kernel (`cpu`, or the WGSL kernel via `gpu`) -> float image -> statistics and
//! output files (`output`, `io`). See docs/ARCHITECTURE.md.

pub mod error;
pub mod files;
pub mod plan;
pub mod vec3;
#[cfg(feature = "gpu")]
pub mod gpu;
