//! WGSL sources. `shaders/` at the repository root is the single source of truth; a kernel is
//! the shared df64 library, then the shared term functions, then the kernel file (plain
//! concatenation: WGSL has no `#include`).

/// Shared double-float library (`shaders/shared/df64.wgsl`).
pub const DF64: &str = include_str!("../../../shaders/shared/df64.wgsl");
/// Shared term functions (`shaders/shared/terms.wgsl`, the twin of `terms.rs`).
pub const TERMS: &str = include_str!("../../../shaders/shared/terms.wgsl");
/// The per-pixel kernel body (`shaders/nanobragg.wgsl`), entry point [`KERNEL_ENTRY`].
pub const KERNEL: &str = include_str!("../../../shaders/nanobragg.wgsl");
/// The tangent kernel (`shaders/tangent.wgsl`), entry point [`TANGENT_ENTRY`]: it follows the
/// image kernel in one module and uses its structs, bindings and helpers.
pub const TANGENT: &str = include_str!("../../../shaders/tangent.wgsl");
/// The vector–Jacobian product's reduction (`shaders/reduce.wgsl`), entry point
/// [`REDUCE_ENTRY`]: a module of its own (no df64, no terms).
pub const REDUCE: &str = include_str!("../../../shaders/reduce.wgsl");
/// The self-test body (`shaders/selftest.wgsl`), entry point [`SELFTEST_ENTRY`].
pub const SELFTEST: &str = include_str!("../../../shaders/selftest.wgsl");

pub const KERNEL_ENTRY: &str = "main";
pub const TANGENT_ENTRY: &str = "tangent";
pub const SELFTEST_ENTRY: &str = "selftest";
pub const REDUCE_ENTRY: &str = "reduce";
/// Workgroup size of the reduction (must match `REDUCE_WG` in `reduce.wgsl`).
pub const REDUCE_WORKGROUP: u32 = 256;
/// Workgroup size of the kernel (must match `@workgroup_size` in `nanobragg.wgsl`).
pub const KERNEL_WORKGROUP: [u32; 2] = [8, 8];

/// Name of the pipeline-overridable constant of `df64.wgsl` that selects `fma` (true) or
/// Dekker's split (false) in `two_prod`.
pub const FMA_FUSED: &str = "FMA_FUSED";

fn with_shared(body: &str) -> String {
    format!("{DF64}\n{TERMS}\n{body}")
}

/// Full kernel source.
pub fn kernel_source() -> String {
    with_shared(KERNEL)
}

/// Full tangent-kernel source: the image kernel's module (whose declarations it shares) and
/// the tangent entry point.
pub fn tangent_source() -> String {
    with_shared(&format!("{KERNEL}\n{TANGENT}"))
}

/// Full self-test source.
pub fn selftest_source() -> String {
    with_shared(SELFTEST)
}

/// The pipeline constants for a device: `fma_fused = false` selects Dekker's split.
pub fn constants(fma_fused: bool) -> [(&'static str, f64); 1] {
    [(FMA_FUSED, if fma_fused { 1.0 } else { 0.0 })]
}
