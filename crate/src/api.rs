//! The library's front door, shared by the CLI, the wasm bindings and the tests:
//! words -> `Prepared` (parsed + resolved) -> float image -> output bytes.

use crate::args::{self, Options};
pub use crate::args::{Backend, Precision};
use crate::error::{Error, ErrorKind, Result};
use crate::files::FileSource;
use crate::plan::Plan;
use crate::resolve::{resolve, Setup};
use crate::stats::Stats;
use crate::{cpu, io, output, stats};
use std::sync::atomic::AtomicBool;

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
    Ok(Prepared {
        setup: resolve(opts, files)?,
    })
}

pub use crate::resolve::limits::BROWSER_MAX_PIXELS;

/// A clear error, naming the flag, when the detector has more than `max_pixels` pixels.
pub fn check_pixel_budget(prep: &Prepared, max_pixels: usize) -> Result<()> {
    let p = prep.plan();
    crate::resolve::limits::check_pixels(
        "-detpixels",
        p.fpixels as f64,
        p.spixels as f64,
        max_pixels,
    )
}

/// Render on the CPU (rayon over rows) on the current pool, without the policy of [`Renderer`].
pub fn render_cpu(
    plan: &Plan,
    precision: Precision,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<Vec<f32>> {
    cpu::render(plan, precision, progress, cancel)
}

// ---------------------------------------------------------------------------------------------
// One backend policy

/// The engine that renders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Cpu,
    Gpu,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Cpu => "cpu",
            Engine::Gpu => "gpu",
        }
    }
}

/// What [`choose_backend`] decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    pub engine: Engine,
    /// When the GPU is unavailable or fails, render on the CPU (with a notice) instead of
    /// failing.
    pub fallback_to_cpu: bool,
}

/// The one backend policy, for the CLI, the bench and the browser alike:
///
/// * `cpu`: the CPU;
/// * `gpu`: the GPU, or an error when none can be opened (no fallback);
/// * `auto` with `f64`: the CPU, because only the CPU kernel is bit-exact with upstream (the GPU
///   kernel computes in double-float pairs of f32);
/// * `auto` with `f32`: the GPU when this build has the GPU kernel and an adapter opens, else the
///   CPU with a notice.
pub fn choose_backend(backend: Backend, precision: Precision) -> Choice {
    let gpu_built = cfg!(feature = "gpu");
    match (backend, precision) {
        (Backend::Cpu, _) | (Backend::Auto, Precision::F64) => Choice {
            engine: Engine::Cpu,
            fallback_to_cpu: false,
        },
        (Backend::Gpu, _) => Choice {
            engine: Engine::Gpu,
            fallback_to_cpu: false,
        },
        (Backend::Auto, Precision::F32) => Choice {
            engine: if gpu_built { Engine::Gpu } else { Engine::Cpu },
            fallback_to_cpu: true,
        },
    }
}

/// Most CPU threads per core that `-threads` may ask for.
pub const MAX_THREADS_PER_CORE: usize = 4;

/// The thread count to use for a request: at most [`MAX_THREADS_PER_CORE`] per core, with a
/// notice when the request was capped. `None`: the pool's default (all cores).
pub fn thread_count(requested: Option<usize>) -> (Option<usize>, Option<String>) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let max = MAX_THREADS_PER_CORE * cores;
    match requested {
        Some(n) if n > max => (
            Some(max),
            Some(format!(
                "-threads {n}: capped at {max} ({MAX_THREADS_PER_CORE} per core on {cores} cores)"
            )),
        ),
        r => (r, None),
    }
}

/// A finished render.
#[derive(Clone, Debug)]
pub struct Rendered {
    /// Photons per pixel, fast-major.
    pub image: Vec<f32>,
    /// Where it was rendered.
    pub engine: Engine,
    /// Why it was not rendered where asked (GPU unavailable under `auto`), or threads capped.
    pub notices: Vec<String>,
    /// The GPU's adapter and its timings (pipeline, upload, dispatch, read-back), when the GPU
    /// rendered.
    pub gpu_timings: Option<String>,
}

/// Renders plans with the backend policy of [`choose_backend`]. Keeps the GPU renderer (device,
/// pipeline, buffers) between renders, so a warm render only uploads what changed. The GPU is
/// opened on first use (or by [`Renderer::init_gpu`]); a GPU that failed is not tried again.
pub struct Renderer {
    threads: Option<usize>,
    notices: Vec<String>,
    #[cfg(feature = "gpu")]
    gpu: GpuSlot,
}

#[cfg(feature = "gpu")]
enum GpuSlot {
    Untried,
    Ready(Box<crate::gpu::GpuRenderer>),
    Failed(String),
}

impl Renderer {
    /// `threads`: CPU threads (`None`: all cores; capped by [`thread_count`]). The browser's
    /// pool is fixed when its workers start: pass `None` there.
    pub fn new(threads: Option<usize>) -> Self {
        let (threads, notice) = thread_count(threads);
        Renderer {
            threads,
            notices: notice.into_iter().collect(),
            #[cfg(feature = "gpu")]
            gpu: GpuSlot::Untried,
        }
    }

    /// Open the GPU now (the browser does this once, in its worker); returns the adapter's
    /// description. Errors are `ErrorKind::Gpu`.
    pub async fn init_gpu(&mut self) -> Result<String> {
        #[cfg(feature = "gpu")]
        {
            if let GpuSlot::Untried = self.gpu {
                self.gpu = match crate::gpu::GpuRenderer::new().await {
                    Ok(r) => GpuSlot::Ready(Box::new(r)),
                    Err(e) => GpuSlot::Failed(e.message),
                };
            }
            match &self.gpu {
                GpuSlot::Ready(r) => Ok(adapter_name(r)),
                GpuSlot::Failed(m) => Err(Error::gpu(m.clone())),
                GpuSlot::Untried => unreachable!(),
            }
        }
        #[cfg(not(feature = "gpu"))]
        Err(Error::gpu("this build has no GPU kernel (the gpu feature)"))
    }

    /// Render `plan` where the policy says, falling back to the CPU where it allows. Progress
    /// (0..1) and cancellation work on both engines; a cancelled render is `ErrorKind::Cancelled`.
    /// An image with a non-finite pixel is an error, never a result.
    pub async fn render_async(
        &mut self,
        plan: &Plan,
        backend: Backend,
        precision: Precision,
        progress: &(dyn Fn(f32) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Rendered> {
        let choice = choose_backend(backend, precision);
        let mut notices = std::mem::take(&mut self.notices);
        if choice.engine == Engine::Gpu {
            match self.render_gpu(plan, progress, cancel).await {
                Ok((image, timings)) => {
                    check_image(plan, &image)?;
                    return Ok(Rendered {
                        image,
                        engine: Engine::Gpu,
                        notices,
                        gpu_timings: Some(timings),
                    });
                }
                Err(e) if choice.fallback_to_cpu && e.kind == ErrorKind::Gpu => {
                    notices.push(format!(
                        "GPU backend unavailable ({}); rendering on the CPU",
                        e.message
                    ));
                }
                Err(e) => return Err(e),
            }
        }
        let mut r = self.render_on_cpu(plan, precision, progress, cancel)?;
        notices.append(&mut r.notices);
        r.notices = notices;
        Ok(r)
    }

    /// The CPU engine alone, synchronously (the browser's CPU export blocks its worker thread).
    pub fn render_on_cpu(
        &mut self,
        plan: &Plan,
        precision: Precision,
        progress: &(dyn Fn(f32) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Rendered> {
        let image = cpu::with_threads(self.threads, || {
            cpu::render(plan, precision, progress, cancel)
        })?;
        check_image(plan, &image)?;
        Ok(Rendered {
            image,
            engine: Engine::Cpu,
            notices: std::mem::take(&mut self.notices),
            gpu_timings: None,
        })
    }

    /// Blocking [`Renderer::render_async`] (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn render(
        &mut self,
        plan: &Plan,
        backend: Backend,
        precision: Precision,
        progress: &(dyn Fn(f32) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Rendered> {
        block_on(self.render_async(plan, backend, precision, progress, cancel))
    }

    /// The GPU's adapter, once opened.
    pub fn gpu_adapter(&self) -> Option<String> {
        #[cfg(feature = "gpu")]
        if let GpuSlot::Ready(r) = &self.gpu {
            return Some(adapter_name(r));
        }
        None
    }

    #[cfg(feature = "gpu")]
    async fn render_gpu(
        &mut self,
        plan: &Plan,
        progress: &(dyn Fn(f32) + Sync),
        cancel: &AtomicBool,
    ) -> Result<(Vec<f32>, String)> {
        self.init_gpu().await?;
        let GpuSlot::Ready(r) = &mut self.gpu else {
            unreachable!()
        };
        let out = r.render(plan, &mut |p| progress(p), cancel).await;
        if let Err(e) = &out {
            if e.kind == ErrorKind::Gpu {
                // device lost or kernel failure: do not try this GPU again
                self.gpu = GpuSlot::Failed(e.message.clone());
            }
        }
        let mut image = out?;
        let GpuSlot::Ready(r) = &self.gpu else {
            unreachable!()
        };
        cpu::apply_exact_fixup(plan, &mut image, r.exact_fixup());
        let t = r.timings();
        let timings = format!(
            "gpu timings ({}): pipeline {:.1} ms, upload {:.1} ms, dispatch {:.1} ms ({} chunks), readback {:.1} ms",
            adapter_name(r),
            t.pipeline_s * 1e3,
            t.upload_s * 1e3,
            t.dispatch_s * 1e3,
            t.chunks,
            t.readback_s * 1e3
        );
        Ok((image, timings))
    }

    #[cfg(not(feature = "gpu"))]
    async fn render_gpu(
        &mut self,
        _plan: &Plan,
        _progress: &(dyn Fn(f32) + Sync),
        _cancel: &AtomicBool,
    ) -> Result<(Vec<f32>, String)> {
        Err(Error::gpu(
            "-backend gpu: this nanobragg was built without the gpu feature",
        ))
    }
}

/// The adapter as a person would name it: name, driver and driver details, else the backend.
#[cfg(feature = "gpu")]
fn adapter_name(r: &crate::gpu::GpuRenderer) -> String {
    r.adapter_info()
        .map(|i| {
            let n = [i.name.as_str(), i.driver.as_str(), i.driver_info.as_str()]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(" ");
            if n.is_empty() {
                format!("{:?}", i.backend)
            } else {
                n
            }
        })
        .unwrap_or_else(|| "GPU".to_string())
}

#[cfg(not(target_arch = "wasm32"))]
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    #[cfg(feature = "gpu")]
    {
        pollster::block_on(f)
    }
    #[cfg(not(feature = "gpu"))]
    {
        // without the GPU nothing in a render awaits: one poll finishes it
        use std::task::{Context, Poll, Waker};
        let mut f = std::pin::pin!(f);
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
            std::thread::yield_now();
        }
    }
}

/// Every pixel of a rendered image is finite: a NaN or infinite pixel is an error naming the
/// first one, never an image. (One parallel pass over the image, bandwidth-bound: a float is not
/// finite when its exponent bits are all ones, and an integer max over the bits vectorises.)
pub fn check_image(plan: &Plan, image: &[f32]) -> Result<()> {
    check_image_with(plan, image, "-fluence/-flux, -N or -default_F")
}

/// [`check_image`], naming `what` as the inputs to lower when a pixel overflows.
pub fn check_image_with(plan: &Plan, image: &[f32], what: &str) -> Result<()> {
    use rayon::prelude::*;
    let not_finite =
        |c: &[f32]| c.iter().fold(0u32, |m, x| m.max(x.to_bits() & 0x7fff_ffff)) >= 0x7f80_0000;
    if !image.par_chunks(1 << 16).any(not_finite) {
        return Ok(());
    }
    let i = image.iter().position(|v| !v.is_finite()).unwrap_or(0);
    let bad = image.iter().filter(|v| !v.is_finite()).count();
    let why = if image[i].is_nan() {
        "a NaN pixel (please report the command line)"
    } else {
        "an intensity beyond single precision: lower "
    };
    let what = if image[i].is_nan() { "" } else { what };
    Err(Error::geometry(format!(
        "the rendered image has {bad} pixels that are not finite, the first at fast {} slow {}: {why}{what}",
        i % plan.fpixels.max(1),
        i / plan.fpixels.max(1)
    )))
}

// ---------------------------------------------------------------------------------------------
// Cost

/// Rough CPU throughput per thread in terms per second (one term = one source × orientation ×
/// sub-pixel × layer evaluation), from `docs/benchmarks.md` (2-core dev VM): f64 parity mode.
pub const CPU_TERMS_PER_SECOND_F64: f64 = 1.0e7;
/// The same for the f32 fast mode.
pub const CPU_TERMS_PER_SECOND_F32: f64 = 5.0e7;
/// The CLI refuses a render of more terms than this unless `-force` is given (about 3 hours on
/// 8 threads at f64, 30 s on a GPU).
pub const CLI_MAX_TERMS: f64 = 1e12;
/// ... or one that needs more memory than this (bytes; images and tables) unless `-force`.
pub const CLI_MAX_BYTES: f64 = 8.0 * 1024.0 * 1024.0 * 1024.0;

/// What a prepared render will cost, for a warning (page) or a refusal (CLI).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[cfg_attr(
    all(target_arch = "wasm32", feature = "wasm"),
    wasm_bindgen::prelude::wasm_bindgen
)]
pub struct Cost {
    /// Pixels that are rendered (inside the ROI and not masked).
    pub pixels: f64,
    /// Terms per pixel: sources × orientations × sub-pixels × layers.
    pub terms_per_pixel: f64,
    /// `pixels × terms_per_pixel`.
    pub terms: f64,
    /// Memory for the images (float, SMV, noise, PGM) and the plan's tables.
    pub bytes: f64,
    /// Rough CPU time in seconds on `threads` threads, f64 and f32.
    pub seconds_f64: f64,
    pub seconds_f32: f64,
    pub threads: f64,
}

/// The cost of rendering `prep` on `threads` CPU threads.
pub fn estimate_cost(prep: &Prepared, threads: usize) -> Cost {
    let p = prep.plan();
    let mut pixels = 0u64;
    let (x1, y1) = (
        p.roi.xmax.min(p.fpixels.saturating_sub(1)),
        p.roi.ymax.min(p.spixels.saturating_sub(1)),
    );
    if p.roi.xmin <= x1 && p.roi.ymin <= y1 {
        pixels = match &p.mask {
            None => ((x1 - p.roi.xmin + 1) * (y1 - p.roi.ymin + 1)) as u64,
            Some(m) => (p.roi.ymin..=y1)
                .map(|s| {
                    let row = &m[s * p.fpixels..(s + 1) * p.fpixels];
                    row[p.roi.xmin..=x1].iter().filter(|&&v| v != 0).count() as u64
                })
                .sum(),
        };
    }
    let terms_per_pixel = p.terms_per_pixel() as f64;
    let terms = pixels as f64 * terms_per_pixel;
    let image_bytes = p.pixel_count() as f64 * (4.0 + 2.0 + 2.0 + 1.0 + 1.0);
    let table_bytes = (p.orientations.len() + p.orientations_first.len()) as f64 * 72.0
        + p.sources.len() as f64 * 32.0
        + p.hkl.data.len() as f64 * 8.0;
    let t = threads.max(1) as f64;
    Cost {
        pixels: pixels as f64,
        terms_per_pixel,
        terms,
        bytes: image_bytes + table_bytes,
        seconds_f64: terms / (CPU_TERMS_PER_SECOND_F64 * t),
        seconds_f32: terms / (CPU_TERMS_PER_SECOND_F32 * t),
        threads: t,
    }
}

impl Cost {
    /// Rough CPU seconds at `precision`.
    pub fn seconds(&self, precision: Precision) -> f64 {
        match precision {
            Precision::F64 => self.seconds_f64,
            Precision::F32 => self.seconds_f32,
        }
    }

    /// "N terms (pixels × terms per pixel; roughly T on n CPU threads at f64)".
    pub fn describe(&self, precision: Precision) -> String {
        let g = crate::cfmt::fmt_g;
        format!(
            "{} terms ({} pixels × {} terms per pixel; roughly {} on {} CPU threads at {})",
            g(self.terms),
            g(self.pixels),
            g(self.terms_per_pixel),
            human_seconds(self.seconds(precision)),
            self.threads,
            if precision == Precision::F64 {
                "f64"
            } else {
                "f32"
            }
        )
    }

    /// The CLI's budget: an error (`ErrorKind::Limit`) that says what the render needs, unless
    /// it fits [`CLI_MAX_TERMS`] and [`CLI_MAX_BYTES`].
    pub fn check_budget(&self, precision: Precision) -> Result<()> {
        let g = crate::cfmt::fmt_g;
        let work = self.describe(precision);
        let gib = |b: f64| g((b / 1073741824.0 * 10.0).round() / 10.0);
        let message = if self.terms > CLI_MAX_TERMS {
            format!(
                "this render needs {work}, more than the budget of {} terms",
                g(CLI_MAX_TERMS)
            )
        } else if self.bytes > CLI_MAX_BYTES {
            format!(
                "this render needs {} GiB of memory for its images and tables, more than the \
                 budget of {} GiB",
                gib(self.bytes),
                gib(CLI_MAX_BYTES)
            )
        } else {
            return Ok(());
        };
        Err(Error::new(
            ErrorKind::Limit,
            format!("{message}: give -force to render it anyway"),
        ))
    }
}

fn human_seconds(s: f64) -> String {
    if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 172800.0 {
        format!("{:.0} h", s / 3600.0)
    } else {
        format!("{:.0} days", s / 86400.0)
    }
}

// ---------------------------------------------------------------------------------------------
// Flags

/// One flag of [`args::FLAGS`] as data (for the web front end's argument handling and help).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FlagInfo {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    /// Value words as the usage text shows them ("" for a switch).
    pub values: &'static str,
    pub min_values: u8,
    pub max_values: u8,
    pub kind: args::Kind,
    pub group: args::Group,
    pub check: args::Check,
    /// The flag's values count pixels (or its file fixes the pixel grid): a reduced-resolution
    /// preview cannot keep it.
    pub pixel_units: bool,
    pub help: &'static str,
}

/// Every flag the simulator accepts, from the one table the parser dispatches through.
pub fn flag_table() -> Vec<FlagInfo> {
    args::FLAGS
        .iter()
        .map(|f| FlagInfo {
            name: f.name,
            aliases: f.aliases,
            values: f.values,
            min_values: f.arity.0,
            max_values: f.arity.1,
            kind: f.kind,
            group: f.group,
            check: f.check,
            pixel_units: f.pixel_units,
            help: f.help,
        })
        .collect()
}

pub fn statistics(prep: &Prepared, image: &[f32]) -> Stats {
    stats::compute(prep.plan(), image)
}

/// Noiseless SMV image bytes (`-intfile`).
pub fn int_image_smv(prep: &Prepared, image: &[f32]) -> Result<Vec<u8>> {
    let st = statistics(prep, image);
    let scale = output::int_scale(&prep.setup, &st);
    io::smv::write_smv(
        &output::smv_header(&prep.setup),
        &output::int_pixels(&prep.setup, image, scale),
    )
}

/// Poisson-noise SMV image bytes (`-noisefile`), upstream's generator and seed.
pub fn noise_image_smv(prep: &Prepared, image: &[f32]) -> Result<Vec<u8>> {
    let (px, _, _) = output::noise_pixels(&prep.setup, image);
    io::smv::write_smv(&output::smv_header(&prep.setup), &px)
}

/// Raw little-endian f32 image bytes (`-floatfile`).
pub fn float_image_bytes(image: &[f32]) -> Vec<u8> {
    output::float_bytes(image)
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
