//! What a prepared render will cost (time, memory), and the CLI's budget.

use super::*;

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
    /// Memory for the images (float, SMV, noise, PGM), the tangent images if any
    /// ([`Cost::with_tangents`]) and the plan's tables.
    pub bytes: f64,
    /// Tangent images counted in `bytes` (`-gradients`; 0 for an image alone).
    pub tangents: f64,
    /// Rough CPU time in seconds on `threads` threads, f64 and f32.
    pub seconds_f64: f64,
    pub seconds_f32: f64,
    pub threads: f64,
}

/// The cost of rendering `prep` on `threads` CPU threads.
pub fn estimate_cost(prep: &Prepared, threads: usize) -> Cost {
    let p = prep.plan();
    let mut pixels = 0u64;
    if let Some((x1, y1)) = roi_corner(p) {
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
    estimate_cost_of_pixels(prep, pixels as f64, threads)
}

/// The region of interest's last pixel (fast, slow) within the detector, if the region holds
/// any pixel.
fn roi_corner(p: &crate::plan::Plan) -> Option<(usize, usize)> {
    let (x1, y1) = (
        p.roi.xmax.min(p.fpixels.saturating_sub(1)),
        p.roi.ymax.min(p.spixels.saturating_sub(1)),
    );
    (p.roi.xmin <= x1 && p.roi.ymin <= y1).then_some((x1, y1))
}

/// [`estimate_cost`] of `pixels` rendered pixels.
fn estimate_cost_of_pixels(prep: &Prepared, pixels: f64, threads: usize) -> Cost {
    let p = prep.plan();
    let terms_per_pixel = p.terms_per_pixel() as f64;
    let terms = pixels * terms_per_pixel;
    let image_bytes = p.pixel_count() as f64 * (4.0 + 2.0 + 2.0 + 1.0 + 1.0);
    let table_bytes = (p.orientations.len() + p.orientations_first.len()) as f64 * 72.0
        + p.sources.len() as f64 * 32.0
        + p.hkl.data.len() as f64 * 8.0;
    let t = threads.max(1) as f64;
    Cost {
        pixels,
        terms_per_pixel,
        terms,
        bytes: image_bytes + table_bytes,
        tangents: 0.0,
        seconds_f64: terms / (CPU_TERMS_PER_SECOND_F64 * t),
        seconds_f32: terms / (CPU_TERMS_PER_SECOND_F32 * t),
        threads: t,
    }
}

/// [`check_cost`] for a face that renders again and again (Python's `Session`): first a bound
/// that costs nothing (every pixel of the region counted, masked or not; no thread count,
/// which the budget does not depend on), the full estimate only when the bound is over it.
pub fn check_cost_quickly(prep: &Prepared, tangents: usize) -> Result<()> {
    let o = prep.options();
    if o.force {
        return Ok(());
    }
    let p = prep.plan();
    let pixels = roi_corner(p).map_or(0, |(x1, y1)| (x1 - p.roi.xmin + 1) * (y1 - p.roi.ymin + 1));
    let bound = estimate_cost_of_pixels(prep, pixels as f64, 1).with_tangents(prep, tangents);
    if bound.check_budget(o.precision).is_ok() {
        return Ok(());
    }
    check_cost(prep, tangents).map(|_| ())
}

/// The cost of rendering `prep` with `tangents` tangent images on the threads its options
/// give (`-threads`, else every core), refused by [`Cost::check_budget`] unless `-force` is
/// among them: the budget of every face that renders what a user asked for (the CLI, Python's
/// `Session`), so that a render of days is refused before it starts, not found out after.
pub fn check_cost(prep: &Prepared, tangents: usize) -> Result<Cost> {
    let o = prep.options();
    let threads = o
        .threads
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()));
    let cost =
        estimate_cost(prep, thread_count(threads).0.unwrap_or(1)).with_tangents(prep, tangents);
    if !o.force {
        cost.check_budget(o.precision)?;
    }
    Ok(cost)
}

impl Cost {
    /// The cost with `params` tangent images beside the image (`-gradients`): each held in f64
    /// (8 bytes per pixel) and written in f32 (4 more), over the whole detector.
    pub fn with_tangents(mut self, prep: &Prepared, params: usize) -> Self {
        self.tangents = params as f64;
        self.bytes += prep.plan().pixel_count() as f64 * params as f64 * 12.0;
        self
    }

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
            let what = if self.tangents > 0.0 {
                format!("its image, {} tangent images and tables", self.tangents)
            } else {
                "its images and tables".to_string()
            };
            format!(
                "this render needs {} GiB of memory for {what}, more than the budget of {} GiB",
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
