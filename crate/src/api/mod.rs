//! The library's front door, shared by the CLI, the wasm bindings and the tests:
//! words -> `Prepared` (parsed + resolved) -> float image -> output bytes. One concern per file:
//! `backend` (the policy), `renderer` (`Renderer`), `cost` (estimate and budget), `flags` (the
//! flag table as data), `bytes` (output bytes); this file prepares.

use crate::args::{self, Options};
pub use crate::args::{Backend, Precision};
use crate::error::{Error, ErrorKind, Result};
use crate::files::FileSource;
use crate::plan::Plan;
use crate::resolve::{resolve, Setup};
use crate::stats::Stats;
use crate::{cpu, io, output, stats};
use std::sync::atomic::AtomicBool;

mod backend;
mod bytes;
mod cost;
mod flags;
mod gradients;
mod renderer;

pub use backend::*;
pub use bytes::*;
pub use cost::*;
pub use flags::*;
pub use gradients::*;
pub use renderer::*;

/// A parsed and resolved configuration, ready to render.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub setup: Setup,
}

impl Prepared {
    pub fn plan(&self) -> &Plan {
        &self.setup.plan
    }
    pub fn options(&self) -> &Options {
        &self.setup.opts
    }
}

pub use crate::args::split_args;

/// Parse flags and resolve the configuration. Errors name the bad flag or file line.
pub fn prepare(words: &[String], files: &dyn FileSource) -> Result<Prepared> {
    let opts = args::parse(words)?;
    prepare_options(&opts, files)
}

pub fn prepare_options(opts: &Options, files: &dyn FileSource) -> Result<Prepared> {
    // a mistyped NANOBRAGG_SIMD is refused before anything renders
    crate::simd::setting()?;
    Ok(Prepared {
        setup: resolve(opts, files)?,
    })
}

pub use crate::limits::BROWSER_MAX_PIXELS;

/// A clear error, naming the flag, when the detector has more than `max_pixels` pixels.
pub fn check_pixel_budget(prep: &Prepared, max_pixels: usize) -> Result<()> {
    let p = prep.plan();
    crate::limits::check_pixels("-detpixels", p.fpixels as f64, p.spixels as f64, max_pixels)
}

/// Render on the CPU (rayon over rows) on the current pool, without the policy of [`Renderer`]
/// (the exact-Bragg pixels fixed up as there).
pub fn render_cpu(
    plan: &Plan,
    precision: Precision,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<Vec<f32>> {
    cpu::render(plan, precision, progress, cancel).map(|r| renderer::with_exact_fixup(plan, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pixel_budget_names_the_flag() {
        let words = split_args("-cell 100 100 100 90 90 90 -default_F 1 -detpixels 20000");
        let prep = prepare(&words, &crate::files::MemFiles::default()).unwrap();
        let e = check_pixel_budget(&prep, BROWSER_MAX_PIXELS).unwrap_err();
        assert!(
            e.message
                .starts_with("-detpixels: a 20000x20000 detector needs 1525 MiB"),
            "{}",
            e.message
        );
        let small = prepare(
            &split_args("-cell 100 100 100 90 90 90 -default_F 1 -detpixels 64"),
            &crate::files::MemFiles::default(),
        )
        .unwrap();
        assert!(check_pixel_budget(&small, BROWSER_MAX_PIXELS).is_ok());
    }

    #[test]
    fn split_args_handles_quotes() {
        assert_eq!(
            split_args("  -hkl 'my file.hkl'  -N 5 "),
            vec!["-hkl", "my file.hkl", "-N", "5"]
        );
        assert_eq!(split_args(""), Vec::<String>::new());
    }

    #[test]
    fn one_backend_policy() {
        use Backend::*;
        let c = |b, p| choose_backend(b, p);
        assert_eq!(c(Cpu, Precision::F32).engine, Engine::Cpu);
        // only the CPU is bit-exact: auto + f64 stays there
        assert_eq!(
            c(Auto, Precision::F64),
            Choice {
                engine: Engine::Cpu,
                fallback_to_cpu: false
            }
        );
        let gpu = c(Auto, Precision::F32);
        assert_eq!(gpu.engine == Engine::Gpu, cfg!(feature = "gpu"));
        assert!(gpu.fallback_to_cpu);
        assert_eq!(
            c(Gpu, Precision::F64),
            Choice {
                engine: Engine::Gpu,
                fallback_to_cpu: false
            }
        );
    }

    #[test]
    fn software_adapters_are_recognised() {
        // by wgpu's device type (lavapipe natively; the browser's isFallbackAdapter)
        assert_eq!(
            software_gpu(true, &["", ""]).as_deref(),
            Some("a software adapter")
        );
        assert!(software_gpu(true, &["llvmpipe (LLVM 15.0.6, 256 bits)"]).is_some());
        // by name, for a driver that reports another type
        for n in [
            "llvmpipe (LLVM 15.0.6, 256 bits)",
            "SwiftShader Device (Subzero)",
            "Microsoft Basic Render Driver",
            "Mesa lavapipe",
            "WARP",
        ] {
            assert_eq!(software_gpu(false, &[n, ""]).as_deref(), Some(n), "{n}");
        }
        for n in [
            "NVIDIA H200",
            "AMD Radeon Pro W7800 (RADV NAVI31)",
            "Apple M2",
            "Quadro Warpdrive",
        ] {
            assert_eq!(software_gpu(false, &[n, "Vulkan 1.3"]), None, "{n}");
        }
        assert!(software_gpu_notice("llvmpipe").contains("-backend gpu"));
    }

    #[test]
    fn threads_are_capped_per_core() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(thread_count(Some(1)), (Some(1), None));
        assert_eq!(thread_count(None), (None, None));
        let (n, note) = thread_count(Some(100_000));
        assert_eq!(n, Some(MAX_THREADS_PER_CORE * cores));
        assert!(note.unwrap().starts_with("-threads 100000: capped at"));
    }

    #[test]
    fn cost_counts_rendered_pixels_and_terms() {
        // case (b) of the benchmarks: 15 sources × 10 domains × 2² sub-pixels = 600 terms/pixel
        let b = "-cell 70 80 90 85 95 105 -misset 10 5 3 -lambda 1.5 -N 10 -default_F 100 -distance 100 -detpixels 512 -mosaic 0.5 -mosaic_dom 10 -hdivrange 0.5 -vdivrange 0.5 -divsteps 3 -dispersion 0.2 -dispsteps 3 -oversample 2";
        let files = crate::files::MemFiles::default();
        let prep = prepare(&split_args(b), &files).unwrap();
        let c = estimate_cost(&prep, 2);
        assert_eq!((c.pixels, c.terms_per_pixel), (512.0 * 512.0, 600.0));
        assert_eq!(c.terms, 512.0 * 512.0 * 600.0);
        assert_eq!(c.seconds_f64, c.terms / (CPU_TERMS_PER_SECOND_F64 * 2.0));
        assert!(c.check_budget(Precision::F64).is_ok());
        // a region of interest counts only its pixels
        let roi = prepare(&split_args(&format!("{b} -roi 0 9 0 4")), &files).unwrap();
        assert_eq!(estimate_cost(&roi, 2).pixels, 50.0);
        // over the budget: refused with what it needs and how to insist
        let big = prepare(
            &split_args("-cell 100 100 100 90 90 90 -default_F 1 -detpixels 4096 -mosaic 1 -mosaic_dom 10000 -osc 1 -phisteps 20"),
            &files,
        )
        .unwrap();
        let e = estimate_cost(&big, 2)
            .check_budget(Precision::F64)
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Limit);
        assert!(e.message.starts_with("this render needs 3.35544e+12 terms (1.67772e+07 pixels × 200000 terms per pixel; roughly 47 h on 2 CPU threads at f64), more than the budget of 1e+12 terms: give -force"), "{}", e.message);
    }

    #[test]
    fn cost_counts_tangent_images() {
        // 8192² pixels: the image fits the memory budget, 24 tangent images (f64 held, f32
        // written) do not
        let files = crate::files::MemFiles::default();
        let prep = prepare(
            &split_args("-cell 100 100 100 90 90 90 -default_F 1 -detpixels 8192"),
            &files,
        )
        .unwrap();
        let c = estimate_cost(&prep, 2);
        assert!(c.check_budget(Precision::F32).is_ok());
        let n = 8192.0 * 8192.0;
        let g = c.with_tangents(&prep, 24);
        assert_eq!(g.bytes - c.bytes, n * 24.0 * 12.0);
        let e = g.check_budget(Precision::F32).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Limit);
        assert!(
            e.message.starts_with("this render needs 18.6 GiB of memory for its image, 24 tangent images and tables, more than the budget of 8 GiB: give -force"),
            "{}",
            e.message
        );
    }

    #[test]
    fn non_finite_images_are_errors() {
        let prep = prepare(
            &split_args("-cell 100 100 100 90 90 90 -default_F 1 -detpixels 4"),
            &crate::files::MemFiles::default(),
        )
        .unwrap();
        let mut img = vec![1.0f32; 16];
        assert!(check_image(prep.plan(), &img).is_ok());
        img[6] = f32::INFINITY;
        let e = check_image(prep.plan(), &img).unwrap_err();
        assert!(
            e.message.contains("the first at fast 2 slow 1"),
            "{}",
            e.message
        );
        // a NaN with everyday magnitudes is a bug to report; with magnitudes beyond single
        // precision (an infinite term times a capture fraction of 0) it is that overflow
        img[6] = f32::NAN;
        let e = check_image(prep.plan(), &img).unwrap_err();
        assert!(e.message.contains("please report"), "{}", e.message);
        for words in ["-default_F 1e30", "-fluence 1e80", "-N 1e7 -oversample 1"] {
            let prep = prepare(
                &split_args(&format!(
                    "-cell 100 100 100 90 90 90 -default_F 1 -detpixels 4 {words}"
                )),
                &crate::files::MemFiles::default(),
            )
            .unwrap();
            assert!(magnitude_bound(prep.plan()) >= f32::MAX as f64, "{words}");
            let e = check_image(prep.plan(), &img).unwrap_err();
            assert!(
                e.message
                    .contains("beyond single precision: lower -fluence/-flux"),
                "{words}: {}",
                e.message
            );
        }
    }

    #[test]
    fn flag_table_serialises_for_the_front_end() {
        let v = serde_json::to_value(flag_table()).unwrap();
        let row = |name: &str| {
            v.as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == name)
                .unwrap()
                .clone()
        };
        let lambda = row("-lambda");
        assert_eq!(
            lambda["aliases"],
            serde_json::json!(["-wave", "-wavelength"])
        );
        assert_eq!(lambda["kind"], "model");
        assert_eq!(lambda["group"], "beam");
        assert_eq!(
            lambda["check"],
            serde_json::json!({"rule": "positive", "max": 1e10})
        );
        assert_eq!(row("-floatfile")["kind"], "output_file");
        assert_eq!(row("-hkl")["kind"], "input_file");
        assert_eq!(row("-threads")["kind"], "ours");
        assert_eq!(row("-roi")["pixel_units"], true);
        assert_eq!(
            (
                row("-cell")["min_values"].as_u64(),
                row("-cell")["max_values"].as_u64()
            ),
            (Some(1), Some(6))
        );
        assert_eq!(row("-nopgm")["max_values"], 0);
        assert_eq!(
            row("-phi")["check"],
            serde_json::json!({"rule": "within", "max": 1e6})
        );
        assert_eq!(
            row("-spindle_axis")["check"],
            serde_json::json!({"rule": "finite"})
        );
    }
}
