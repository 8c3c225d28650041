//! WGSL sources. `shaders/` at the repository root is the single source of truth; a kernel is
//! the shared df64 library, then the shared term functions, then the kernel file (plain
//! concatenation: WGSL has no `#include`). The image kernel and the tangent kernel are one file
//! (`nanobragg.wgsl`), read through [`preprocess`] without or with `TANGENT`: a few lines of
//! conditional text, as vello's shader build does, rather than naga_oil (a module composer with
//! imports and its own naga version to keep in step with wgpu's, for one `#ifdef`).

/// Shared double-float library (`shaders/shared/df64.wgsl`).
pub const DF64: &str = include_str!("../../../shaders/shared/df64.wgsl");
/// Shared term functions (`shaders/shared/terms.wgsl`, the twin of `terms.rs`).
pub const TERMS: &str = include_str!("../../../shaders/shared/terms.wgsl");
/// The per-pixel kernel body (`shaders/nanobragg.wgsl`): without `TANGENT` the image kernel,
/// entry point [`KERNEL_ENTRY`]; with it the tangent kernel, entry point [`TANGENT_ENTRY`].
pub const KERNEL: &str = include_str!("../../../shaders/nanobragg.wgsl");
/// The name that selects the tangent kernel's text in [`KERNEL`].
pub const TANGENT: &str = "TANGENT";
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

/// The lines of `src` that the conditions leave for the names `defined`: `#ifdef NAME`,
/// `#ifndef NAME`, `#else` and `#endif` (nested) on lines of their own (leading blanks allowed)
/// keep or drop the lines between them; the directive lines themselves are dropped. An
/// unbalanced or unknown directive is a bug of the shader text, not of an input: it panics
/// (`crate/tests/gpu_layout.rs` reads every variant).
pub fn preprocess(src: &str, defined: &[&str]) -> String {
    // one entry per open condition: (this branch kept, an enclosing branch kept)
    let mut stack: Vec<(bool, bool)> = Vec::new();
    let mut out = String::with_capacity(src.len());
    for line in src.lines() {
        let t = line.trim_start();
        let keeping = stack.last().is_none_or(|&(on, outer)| on && outer);
        if let Some(d) = t.strip_prefix('#') {
            let mut w = d.split_whitespace();
            match (w.next(), w.next()) {
                (Some(k @ ("ifdef" | "ifndef")), Some(name)) => {
                    let has = defined.contains(&name);
                    stack.push((has == (k == "ifdef"), keeping));
                }
                (Some("else"), None) => {
                    let top = stack.last_mut().expect("#else without #ifdef in a shader");
                    top.0 = !top.0;
                }
                (Some("endif"), None) => {
                    stack.pop().expect("#endif without #ifdef in a shader");
                }
                _ => panic!("unknown shader directive: {line}"),
            }
            continue;
        }
        if keeping {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(stack.is_empty(), "#ifdef without #endif in a shader");
    out
}

/// Full kernel source.
pub fn kernel_source() -> String {
    with_shared(&preprocess(KERNEL, &[]))
}

/// Full tangent-kernel source: the kernel file with `TANGENT`.
pub fn tangent_source() -> String {
    with_shared(&preprocess(KERNEL, &[TANGENT]))
}

/// Full self-test source.
pub fn selftest_source() -> String {
    with_shared(SELFTEST)
}

/// The pipeline constants for a device: `fma_fused = false` selects Dekker's split.
pub fn constants(fma_fused: bool) -> [(&'static str, f64); 1] {
    [(FMA_FUSED, if fma_fused { 1.0 } else { 0.0 })]
}

#[cfg(test)]
mod tests {
    use super::preprocess;

    #[test]
    fn conditions_nest_and_else_flips() {
        let src = "a\n#ifdef X\nb\n  #ifndef Y\nc\n  #else\nd\n  #endif\n#else\ne\n#endif\nf\n";
        assert_eq!(preprocess(src, &[]), "a\ne\nf\n");
        assert_eq!(preprocess(src, &["X"]), "a\nb\nc\nf\n");
        assert_eq!(preprocess(src, &["X", "Y"]), "a\nb\nd\nf\n");
        assert_eq!(preprocess(src, &["Y"]), "a\ne\nf\n");
    }

    #[test]
    #[should_panic(expected = "#ifdef without #endif")]
    fn an_open_condition_is_refused() {
        preprocess("#ifdef X\na\n", &[]);
    }

    /// The image kernel's text is the kernel file without the tangent blocks: no directive and
    /// no tangent name is left in it, and the tangent kernel has no `main`.
    #[test]
    fn both_kernels_come_from_one_file() {
        let image = preprocess(super::KERNEL, &[]);
        let tangent = preprocess(super::KERNEL, &[super::TANGENT]);
        for s in [&image, &tangent] {
            assert!(!s.lines().any(|l| l.trim_start().starts_with('#')));
        }
        assert!(image.contains("fn main(") && !image.contains("struct TanParams"));
        assert!(tangent.contains("struct TanParams") && tangent.contains("var<uniform> TP"));
        assert!(tangent.contains("fn tangent(") && !tangent.contains("fn main("));
    }
}
