//! nanoBragg: X-ray diffraction from a small crystal onto a pixel detector.
//!
//! Flow: command-line words (`args`) -> resolved f64 setup (`resolve`: `detector`, `crystal`,
//! `sampling`) -> flat `plan` -> per-pixel kernel (`cpu`, or the WGSL kernel via `gpu`) ->
//! float image -> statistics (`stats`) and output files (`output`, `io`). `api` ties these
//! together for the CLI (`cli`), the wasm bindings and the tests. See docs/ARCHITECTURE.md.

// first: its `simd_versions!` macro is used by the kernels' modules below
#[macro_use]
pub mod simd;
pub mod api;
pub mod args;
pub mod cfmt;
pub mod check;
#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
#[macro_use]
pub mod cpu;
pub mod error;
pub mod files;
pub mod flagwords;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod io;
pub mod limits;
pub mod noisify;
pub mod nonbragg;
pub mod output;
pub mod pages;
pub mod plan;
pub mod predict;
pub mod presets;
pub mod realistic;
pub mod refine;
pub mod resolve;
pub mod rng;
#[cfg(not(target_arch = "wasm32"))]
pub mod session;
pub mod sf;
pub mod spare;
pub mod stats;
pub mod tangent;
pub mod terms;
pub mod vec3;
pub mod wasm;
