//! WGSL sources. `shaders/` at the repository root is the single source of truth; a kernel is
//! the shared df64 library followed by the kernel file (plain concatenation: WGSL has no
//! `#include`).

/// Shared double-float library (`shaders/shared/df64.wgsl`).
pub const DF64: &str = include_str!("../../../shaders/shared/df64.wgsl");
/// The per-pixel kernel body (`shaders/nanobragg.wgsl`), entry point [`KERNEL_ENTRY`].
pub const KERNEL: &str = include_str!("../../../shaders/nanobragg.wgsl");
/// The df64 self-test body (`shaders/selftest.wgsl`), entry point [`SELFTEST_ENTRY`].
pub const SELFTEST: &str = include_str!("../../../shaders/selftest.wgsl");

pub const KERNEL_ENTRY: &str = "main";
pub const SELFTEST_ENTRY: &str = "selftest";
/// Workgroup size of the kernel (must match `@workgroup_size` in `nanobragg.wgsl`).
pub const KERNEL_WORKGROUP: [u32; 2] = [8, 8];

const FMA_LINE: &str = "const FMA_FUSED: bool = true;";

fn with_df64(body: &str, fma_fused: bool) -> String {
    assert!(DF64.contains(FMA_LINE), "df64.wgsl lost its FMA_FUSED line");
    let lib = if fma_fused {
        DF64.to_string()
    } else {
        DF64.replace(FMA_LINE, "const FMA_FUSED: bool = false;")
    };
    format!("{lib}\n{body}")
}

/// Full kernel source; `fma_fused = false` selects Dekker's split in `two_prod`.
pub fn kernel_source(fma_fused: bool) -> String {
    with_df64(KERNEL, fma_fused)
}

/// Full self-test source.
pub fn selftest_source(fma_fused: bool) -> String {
    with_df64(SELFTEST, fma_fused)
}
