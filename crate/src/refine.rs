//! Refinement (MODEL §10, issue 20 §3): fit parameters of the set-up (orientation, cell,
//! distance, beam centre, scale, …: any [`Param`]) to a target image by robust least squares on
//! the pixels around the spots, with the Jacobian from the tangent kernel.
//!
//! The optimiser is the `levenberg-marquardt` crate (MINPACK's `lmder` in Rust, on nalgebra;
//! trust region with Marquardt's diagonal scaling, QR of the Jacobian). The robust loss ρ
//! enters as residuals r̃ = sign(r)·√(2ρ(r)) (½Σr̃² = Σρ). Each evaluation is one pass of the
//! tangent kernel on the selected pixels only (`cpu::tangent::render_pixels`): their values and
//! P tangents at the trial values, so a 4M-pixel detector costs what its spot pixels cost.
//!
//! Target: photons, or ADU with the caller's `gain` and `adc` (ADU = gain·photons + adc, as
//! noisify and the realistic chain write them). Background ([`Background`]): none, or a smooth
//! map estimated once from the target (`Local`: a radial profile in 2θ plus block means, the
//! spots clipped), subtracted from it and added to the variance (MODEL §10.4 says why a map
//! rather than per-spot annuli or nuisance parameters). Sharp spots started far off: the spot-centroid
//! stage (`centroids`, `centroid::refine` at the end of this file) first, on the target's spots
//! as [`find_spots`] finds them (public: the page rings them on the image). Flagged pixels of
//! a measured image (overloads, dead or hot pixels, negative values): [`FitOptions::mask`]
//! excludes them from everything that reads the target (selection, background, spots).
//!
//! Residuals: `r = (model − target)/σ` with the Poisson variance `σ² = max(target, 0) + 1` in
//! the first cycle and `σ² = max(model + background, 0) + 1` (the model at the cycle's start)
//! after, fixed within a cycle so that the weights do not move with each step. Pixels: those within
//! `spot_radius` pixels of a spot pixel, a spot pixel being one of the model at the current values
//! (a predicted spot) or of the target (an observed one) above its median by `spot_threshold` of
//! its range (and, for the target, by 5σ of the median's Poisson noise). The selection is made
//! again at the values a cycle ends at; the fit stops when the selection no longer changes or
//! after `cycles` cycles (two at least, the second weighted by the model). On a detector of
//! more than [`FULL_RENDER_PIXELS`] the model's spots come from the prediction (`predict`)
//! rather than a whole render, and the resolved parameters' tangents are kept per cycle.

use crate::cpu;
use crate::error::{Error, Result};
use crate::files::FileSource;
use crate::plan::Plan;
use crate::predict::{predict, PredictOptions};
use crate::resolve::tangent::{analytic, moved_setup, plan_delta, Offset};
use crate::resolve::Setup;
use crate::tangent::{Param, PlanDelta, PlanTangent};
use levenberg_marquardt::{LeastSquaresProblem, LevenbergMarquardt, TerminationReason};
use nalgebra::{DMatrix, DVector, Dyn, VecStorage, U1};
use std::sync::atomic::{AtomicBool, Ordering};

/// The loss on a pixel's normalised residual r.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Loss {
    /// r²/2.
    Squared,
    /// r²/2 for |r| ≤ k, k|r| − k²/2 beyond (outliers count linearly).
    Huber(f64),
    /// (k²/2)·ln(1 + r²/k²) (outliers count logarithmically).
    Cauchy(f64),
}

impl Loss {
    fn rho(self, r: f64) -> f64 {
        match self {
            Loss::Squared => 0.5 * r * r,
            Loss::Huber(k) => {
                if r.abs() <= k {
                    0.5 * r * r
                } else {
                    k * r.abs() - 0.5 * k * k
                }
            }
            Loss::Cauchy(k) => 0.5 * k * k * (r * r / (k * k)).ln_1p(),
        }
    }
    /// The IRLS weight ρ'(r)/r.
    fn weight(self, r: f64) -> f64 {
        match self {
            Loss::Squared => 1.0,
            Loss::Huber(k) => {
                if r.abs() <= k {
                    1.0
                } else {
                    k / r.abs()
                }
            }
            Loss::Cauchy(k) => 1.0 / (1.0 + r * r / (k * k)),
        }
    }

    /// The names [`Loss::parse`] knows.
    pub const NAMES: [&'static str; 3] = ["squared", "huber", "cauchy"];

    /// A loss by name: `squared`, `huber`, `cauchy` (with `k`); no other name (the Python
    /// face's `Loss` type and the docs list these three).
    pub fn parse(name: &str, k: f64) -> Result<Loss> {
        if !(k > 0.0 && k.is_finite()) {
            return Err(Error::usage(format!(
                "loss: the robust loss's scale k must be > 0, got {k}"
            )));
        }
        match name.trim().to_ascii_lowercase().as_str() {
            "squared" => Ok(Loss::Squared),
            "huber" => Ok(Loss::Huber(k)),
            "cauchy" => Ok(Loss::Cauchy(k)),
            other => Err(Error::usage(format!(
                "loss: unknown loss '{other}'; the losses are {}",
                Loss::NAMES.join(", ")
            ))),
        }
    }
}

/// What to fit and how.
#[derive(Clone, Debug)]
pub struct FitOptions {
    /// The parameters to fit (each once).
    pub params: Vec<Param>,
    /// Starting offsets from the set-up's values (public units; parameters not named start at 0).
    pub start: Vec<Offset>,
    pub loss: Loss,
    /// Evaluations of the model (passes of the tangent kernel) at most, over all cycles.
    pub max_iterations: usize,
    /// Pixel selections at most (see the module's doc).
    pub cycles: usize,
    /// Half-width (pixels) of the square around each spot pixel.
    pub spot_radius: usize,
    /// A spot pixel is above the median by this share of the image's range.
    pub spot_threshold: f64,
    /// Stop a cycle when an accepted step lowers the cost by less than this share.
    pub tolerance: f64,
    /// What lies under the spots in the target (see [`Background`]).
    pub background: Background,
    /// Side (pixels) of the blocks of the [`Background::Local`] estimate.
    pub background_block: usize,
    /// The target's units: ADU = `gain`·photons + `adc` (noisify's and the realistic chain's
    /// gain and ADC offset); photons for gain 1 and offset 0.
    pub gain: f64,
    pub adc: f64,
    /// Start with the spot-centroid stage (see the module's doc): orientation and cell from
    /// the observed spots' positions, for starts beyond the pixel fit's reach (sharp spots).
    pub centroids: bool,
    /// Pixels of the target to use (`Some`: one per pixel of the detector, fast-major as the
    /// target; true = use, false = exclude: the measured image's flagged pixels, overloads,
    /// dead or hot pixels; `None`: all). An excluded pixel is in no selection, no background
    /// block and no spot of the target (the centroid stage's included), and its target value
    /// is never read (it may be NaN). Pixels the detector does not render (its mask, gaps) are
    /// excluded either way.
    pub mask: Option<Vec<bool>>,
    /// [`Fit::image`] over the whole detector (true), or only on the last selection's pixels
    /// on a detector of more than [`FULL_RENDER_PIXELS`] (false: the whole image of a 4M-pixel
    /// detector costs the tangent kernel more than the fit).
    pub whole_image: bool,
}

/// What lies under the spots in the target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Background {
    /// Nothing: the target holds the spots alone (or its background was subtracted).
    None,
    /// A smooth background estimated once from the target (the water and air scattering of a
    /// real still): the sum of a radial profile (per shell of 2θ, under a pixel wide, the mean
    /// of the rendered pixels within 4σ above the shell's median: the rings) and a block map
    /// (per block of `background_block`² pixels the same clipped mean, interpolated bilinearly
    /// between block centres: slopes), fitted alternately, then again without the spots'
    /// tails. It is subtracted from the target and added to the Poisson variance.
    Local,
}

impl Background {
    /// A background model by name: `none`, `local`.
    pub fn parse(name: &str) -> Result<Background> {
        match name.trim().to_ascii_lowercase().as_str() {
            "none" | "" => Ok(Background::None),
            "local" => Ok(Background::Local),
            other => Err(Error::usage(format!(
                "background: unknown background model '{other}'; the models are none, local"
            ))),
        }
    }
}

impl FitOptions {
    pub fn new(params: &[Param]) -> Self {
        FitOptions {
            params: params.to_vec(),
            start: Vec::new(),
            loss: Loss::Huber(3.0),
            max_iterations: 100,
            cycles: 3,
            spot_radius: 2,
            spot_threshold: 0.01,
            tolerance: 1e-8,
            background: Background::None,
            background_block: 32,
            gain: 1.0,
            adc: 0.0,
            centroids: false,
            mask: None,
            whole_image: true,
        }
    }

    /// A face's signed whole number for the option `name` (one of [`FitOptions::COUNTS`]' names,
    /// which are the fields' and the Python keywords'): the count, or the error
    /// [`FitOptions::check`] gives for a value below the least (a negative one included).
    pub fn count(name: &str, value: i64) -> Result<usize> {
        let least = FitOptions::COUNTS
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |&(_, l)| l);
        match usize::try_from(value) {
            Ok(v) if v >= least => Ok(v),
            _ => Err(count_error(name, least, value)),
        }
    }

    /// The whole-number options and their least values: an evaluation and a cycle at least, a
    /// spot's own pixel (radius 0) at least, background blocks of 2 pixels at least (the
    /// estimate's blocks interpolate between block centres).
    pub const COUNTS: [(&'static str, usize); 4] = [
        ("max_iterations", 1),
        ("cycles", 1),
        ("spot_radius", 0),
        ("background_block", 2),
    ];

    /// The options in their ranges (what [`fit`] checks before it reads the target): the counts
    /// ([`FitOptions::COUNTS`]), `tolerance` and `spot_threshold` finite and >= 0, the start
    /// values finite; each error names the option.
    pub fn check(&self) -> Result<()> {
        let counts = [
            self.max_iterations,
            self.cycles,
            self.spot_radius,
            self.background_block,
        ];
        for (&(name, least), &v) in FitOptions::COUNTS.iter().zip(&counts) {
            if v < least {
                return Err(count_error(name, least, v));
            }
        }
        if !(self.tolerance >= 0.0 && self.tolerance.is_finite()) {
            return Err(Error::usage(format!(
                "fit: tolerance must be a finite number >= 0, got {}",
                self.tolerance
            )));
        }
        if !(self.spot_threshold >= 0.0 && self.spot_threshold.is_finite()) {
            return Err(Error::usage(format!(
                "fit: spot_threshold must be a finite share >= 0 of the image's range, got {}",
                self.spot_threshold
            )));
        }
        if let Some(&(p, v)) = self.start.iter().find(|(_, v)| !v.is_finite()) {
            return Err(Error::usage(format!(
                "fit: start value of '{}' must be finite, got {v}",
                p.name()
            )));
        }
        Ok(())
    }
}

/// A whole-number option below its least value.
fn count_error(name: &str, least: usize, value: impl std::fmt::Display) -> Error {
    Error::usage(format!("fit: {name} must be >= {least}, got {value}"))
}

/// One accepted step, as the progress callback sees it.
#[derive(Clone, Debug)]
pub struct FitStep {
    /// Evaluations of the model so far in this cycle.
    pub iteration: usize,
    pub cycle: usize,
    /// The cost per selected pixel (Σρ(r)/n).
    pub cost: f64,
    /// The offsets now (one per parameter, public units).
    pub values: Vec<f64>,
}

/// A finished fit.
#[derive(Clone, Debug)]
pub struct Fit {
    pub params: Vec<Param>,
    /// The fitted offsets from the set-up's values (one per parameter, public units).
    pub values: Vec<f64>,
    /// The cost per selected pixel at each cycle's start and at each new lowest point.
    pub history: Vec<f64>,
    /// Evaluations of the model (each one pass of the tangent kernel: image and tangents).
    pub iterations: usize,
    pub cycles: usize,
    /// The fit ended at a minimum near the target ([`Verdict`]): the solver ended on its
    /// tolerance (not on `max_iterations`), the model correlates with the target on the spot
    /// pixels as the noise allows, and the target's strongest spots have the model's spots on
    /// them. False: [`Fit::verdict`] says why; `values` are the lowest point seen.
    pub converged: bool,
    /// Why the fit did not converge (empty when it did), in a sentence for the user.
    pub verdict: String,
    /// The target's strongest spots checked ([`VERDICT_SPOTS`] at most), and how many of them
    /// have a spot of the fitted model within [`VERDICT_PIXELS`].
    pub spots_checked: usize,
    pub spots_found: usize,
    /// The fitted model's correlation with the target on the spot pixels of either, and the
    /// most the noise allows there (a perfect model's); see [`Verdict`].
    pub correlation: f64,
    pub correlation_ceiling: f64,
    /// Pixels in the last selection.
    pub pixels: usize,
    /// The model image at the fitted values (f64, fast-major, photons without the
    /// background): every pixel, or with `whole_image` false on a detector of more than
    /// [`FULL_RENDER_PIXELS`] the last selection's pixels only (0 elsewhere).
    pub image: Vec<f64>,
    /// Spots the centroid stage used (0 without it).
    pub centroid_spots: usize,
}

/// Detectors up to this many pixels are rendered whole to select the model's spots and for
/// [`Fit::image`]; larger ones use the prediction (`predict`) and the selected pixels only.
pub const FULL_RENDER_PIXELS: usize = 1 << 18;

struct Eval {
    image: Vec<f64>,
    tangents: Vec<f64>,
}

impl Eval {
    /// A trial point outside the model's domain ([`Trial::Outside`]): no image.
    fn outside() -> Eval {
        Eval {
            image: Vec::new(),
            tangents: Vec::new(),
        }
    }

    fn is_outside(&self) -> bool {
        self.image.is_empty()
    }
}

/// Each residual of a trial point outside the model's domain: finite (the solver's norms stay
/// finite) and far above any residual of a point inside, so the solver rejects the step and
/// shrinks its trust region, as for a step that raised the cost.
const OUTSIDE_RESIDUAL: f64 = 1e100;

/// Tangents of the parameters the resolution moves (cell, distance, beam centre, …: each is
/// four resolutions, Richardson's differences), kept from an earlier point of the fit; `None`
/// for the analytic ones (rotations, scale, N, …), computed at every point.
type Kept = Vec<Option<PlanDelta>>;

/// On a large detector each resolution costs tens of ms (its mask, its panels): the tangents
/// of the resolved parameters are computed once per cycle and kept ([`Kept`]); the Jacobian is
/// then that of the cycle's start for them (the residuals stay exact). A small detector
/// computes them at every point.
fn kept_at(
    setup: &Setup,
    files: &dyn FileSource,
    params: &[Param],
    x: &[f64],
) -> Result<Option<Kept>> {
    let p = &setup.plan;
    if p.fpixels * p.spixels <= FULL_RENDER_PIXELS {
        return Ok(None);
    }
    let offsets: Vec<Offset> = params.iter().copied().zip(x.iter().copied()).collect();
    let moved = moved_setup(setup, files, &offsets)?;
    params
        .iter()
        .map(|&q| {
            if analytic(q) {
                Ok(None)
            } else {
                plan_delta(setup, &moved, files, &offsets, q).map(Some)
            }
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// The moved set-up at `x` and its tangent for `params` (the resolved ones from `kept`);
/// [`Trial::Outside`] when the moved set-up does not resolve.
fn tangent_at(
    setup: &Setup,
    files: &dyn FileSource,
    params: &[Param],
    x: &[f64],
    kept: Option<&Kept>,
) -> Result<Trial<(Setup, PlanTangent)>> {
    let offsets: Vec<Offset> = params.iter().copied().zip(x.iter().copied()).collect();
    let moved = match moved_setup(setup, files, &offsets) {
        Ok(m) => m,
        Err(e) => return Ok(Trial::Outside(e)),
    };
    let deltas = params
        .iter()
        .enumerate()
        .map(|(i, &q)| match kept.and_then(|k| k[i].as_ref()) {
            Some(d) => Ok(d.clone()),
            None => plan_delta(setup, &moved, files, &offsets, q),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Trial::In((
        moved,
        PlanTangent {
            params: params.to_vec(),
            deltas,
        },
    )))
}

/// A point the solver tries: inside the model's domain, or outside it — the set-up moved by
/// the offsets does not resolve (a cell edge through 0, a detector moved behind the sample, …):
/// the solver steps back from such a point as from one of higher cost; the fit's own start
/// there is an error (the resolution's, which names the value).
enum Trial<T> {
    In(T),
    Outside(Error),
}

impl<T> Trial<T> {
    /// The value inside the domain, or the resolution's error.
    fn inside(self) -> Result<T> {
        match self {
            Trial::In(t) => Ok(t),
            Trial::Outside(e) => Err(e),
        }
    }
}

/// The model and its tangents at `x` on the pixels `sel` (in its order).
fn evaluate(
    setup: &Setup,
    files: &dyn FileSource,
    params: &[Param],
    x: &[f64],
    sel: &[usize],
    kept: Option<&Kept>,
    cancel: &AtomicBool,
) -> Result<Trial<Eval>> {
    let (moved, t) = match tangent_at(setup, files, params, x, kept)? {
        Trial::In(m) => m,
        Trial::Outside(e) => return Ok(Trial::Outside(e)),
    };
    let r = cpu::tangent::render_pixels(&moved.plan, &t, sel, cancel)?;
    Ok(Trial::In(Eval {
        image: r.image,
        tangents: r.tangents,
    }))
}

/// The whole model image at `x` (no tangents).
fn render_whole(
    setup: &Setup,
    files: &dyn FileSource,
    params: &[Param],
    x: &[f64],
    cancel: &AtomicBool,
) -> Result<Vec<f64>> {
    let offsets: Vec<Offset> = params.iter().copied().zip(x.iter().copied()).collect();
    let moved = moved_setup(setup, files, &offsets)?;
    Ok(cpu::tangent::render(&moved.plan, &PlanTangent::default(), &|_| {}, cancel)?.image)
}

fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return 0.0;
    }
    let m = s.len() / 2;
    s.select_nth_unstable_by(m, |a, b| a.total_cmp(b));
    s[m]
}

/// Whether pixel `i` of the target may be used ([`FitOptions::mask`]; `None`: all).
fn used(mask: Option<&[bool]>, i: usize) -> bool {
    mask.is_none_or(|m| m[i])
}

/// Marks the spot pixels of `img` (fast-major): above its median by `threshold` of its range
/// and, for a noisy target, by 5σ of the median's Poisson noise. Pixels `mask` excludes count
/// for nothing (median, range, spots).
fn mark(img: &[f64], noise: bool, threshold: f64, spot: &mut [bool], mask: Option<&[bool]>) {
    let kept: Vec<f64>;
    let vals = match mask {
        Some(m) => {
            kept = img.iter().zip(m).filter(|p| *p.1).map(|p| *p.0).collect();
            &kept[..]
        }
        None => img,
    };
    let med = median(vals);
    let max = vals.iter().fold(f64::MIN, |m, &v| m.max(v));
    let mut thr = med + threshold * (max - med);
    if noise {
        thr = thr.max(med + 5.0 * (med.max(0.0) + 1.0).sqrt());
    }
    for (i, (s, &v)) in spot.iter_mut().zip(img).enumerate() {
        if v > thr && max > med && used(mask, i) {
            *s = true;
        }
    }
}

/// 5σ of the Poisson noise of a background of `b` photons.
fn noise5(b: f64) -> f64 {
    5.0 * (b.max(0.0) + 1.0).sqrt()
}

/// A spot of an image (what [`find_spots`] finds and the spot-centroid stage indexes):
/// connected spot pixels (8-neighbours).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Spot {
    /// The centroid (pixels, fast and slow: pixel `(f, s)` spans `[f, f+1) × [s, s+1)`, its
    /// centre at `f + 0.5, s + 0.5`), weighted by the signal.
    pub fast: f64,
    pub slow: f64,
    /// The signal: the spot's pixels (photons, less the background when one is modelled;
    /// negative values as 0), summed.
    pub intensity: f64,
    /// The spot's pixels.
    pub pixels: usize,
}

/// How [`find_spots`] reads an image: its units, the background under the spots and the
/// threshold; a fit's own are [`FitOptions::spot_options`].
#[derive(Clone, Debug, PartialEq)]
pub struct SpotOptions {
    /// What lies under the spots (see [`Background`]).
    pub background: Background,
    /// Side (pixels) of the blocks of the [`Background::Local`] estimate.
    pub background_block: usize,
    /// ADU = `gain`·photons + `adc` (photons for 1 and 0).
    pub gain: f64,
    pub adc: f64,
    /// Without a background, a spot pixel is above the image's median by this share of its
    /// range and by 5σ of the median's Poisson noise; with one, 5σ above the background's noise.
    pub threshold: f64,
    /// Pixels of the image to use, as [`FitOptions::mask`] (true = use; `None`: all): an
    /// excluded pixel is in no spot and no background block, and its value is never read.
    pub mask: Option<Vec<bool>>,
}

impl Default for SpotOptions {
    /// A fit's defaults ([`FitOptions::new`]).
    fn default() -> Self {
        FitOptions::new(&[]).spot_options()
    }
}

impl FitOptions {
    /// How the fit finds the target's spots (the spot-centroid stage's and the pixel
    /// selection's target spots).
    pub fn spot_options(&self) -> SpotOptions {
        SpotOptions {
            background: self.background,
            background_block: self.background_block,
            gain: self.gain,
            adc: self.adc,
            threshold: self.spot_threshold,
            mask: self.mask.clone(),
        }
    }
}

/// `image` is the detector's size, finite where `mask` uses it, in ADU with a positive gain;
/// `mask` the detector's size (`what` names the caller in the message).
fn check_image(
    what: &str,
    image: &[f64],
    p: &Plan,
    gain: f64,
    adc: f64,
    mask: Option<&[bool]>,
) -> Result<()> {
    let (nf, ns) = (p.fpixels, p.spixels);
    if image.len() != nf * ns {
        return Err(Error::usage(format!(
            "{what}: the target image has {} pixels, the detector {nf}x{ns} = {}",
            image.len(),
            nf * ns
        )));
    }
    if let Some(m) = mask {
        if m.len() != nf * ns {
            return Err(Error::usage(format!(
                "{what}: the mask has {} pixels, the detector {nf}x{ns} = {}",
                m.len(),
                nf * ns
            )));
        }
    }
    if !(gain > 0.0 && gain.is_finite() && adc.is_finite()) {
        return Err(Error::usage(format!(
            "{what}: the gain must be > 0 ADU per photon and the ADC offset finite, got gain {gain} and offset {adc}"
        )));
    }
    if let Some(i) = (0..image.len()).position(|i| used(mask, i) && !image[i].is_finite()) {
        return Err(Error::usage(format!(
            "{what}: the target image's pixel {i} (fast {}, slow {}) is not finite",
            i % nf,
            i / nf
        )));
    }
    Ok(())
}

/// The target in photons; the same with the background subtracted; and the background
/// (photons) when one is modelled. A pixel `mask` excludes is 0 (never read: it may be NaN in
/// the caller's target) and outside the background's blocks.
type InPhotons = (Vec<f64>, Vec<f64>, Option<Vec<f64>>);
fn photons_less_background(
    target: &[f64],
    p: &Plan,
    o: &SpotOptions,
    mask: Option<&[bool]>,
) -> InPhotons {
    let photons: Vec<f64> = target
        .iter()
        .enumerate()
        .map(
            |(i, &v)| match (used(mask, i), o.gain == 1.0 && o.adc == 0.0) {
                (false, _) => 0.0,
                (true, true) => v,
                (true, false) => (v - o.adc) / o.gain,
            },
        )
        .collect();
    let bg = match o.background {
        Background::None => None,
        Background::Local => Some(background_map(&photons, p, o.background_block, mask)),
    };
    let y: Vec<f64> = match &bg {
        None => photons.clone(),
        Some(b) => photons.iter().zip(b).map(|(v, b)| v - b).collect(),
    };
    (photons, y, bg)
}

/// The spot pixels of the target `y` (photons, background subtracted): 5σ above the
/// background's noise, or without a background [`mark`]ed with the Poisson floor; none where
/// `mask` excludes the pixel.
fn target_mask(y: &[f64], bg: Option<&[f64]>, threshold: f64, mask: Option<&[bool]>) -> Vec<bool> {
    let mut spot = vec![false; y.len()];
    match bg {
        None => mark(y, true, threshold, &mut spot, mask),
        Some(b) => {
            for (i, s) in spot.iter_mut().enumerate() {
                *s = y[i] > noise5(b[i]) && used(mask, i);
            }
        }
    }
    spot
}

/// The spots of the target `y` (photons, background subtracted) among the pixels the plan
/// renders (and `mask` uses), in the raster order of their first pixel: [`target_mask`]'s
/// connected pixels.
fn spots_of(
    y: &[f64],
    bg: Option<&[f64]>,
    p: &Plan,
    threshold: f64,
    mask: Option<&[bool]>,
) -> Vec<Spot> {
    let (nf, ns) = (p.fpixels, p.spixels);
    let mut spot = target_mask(y, bg, threshold, mask);
    for (i, s) in spot.iter_mut().enumerate() {
        *s &= p.renders(i % nf, i / nf);
    }
    components(&spot, y, nf, ns)
}

/// Connected spot pixels (8-neighbours): the centroid weighted by the signal (`y` clipped at
/// 0), the signal and the pixels; spots without signal are left out.
fn components(spot: &[bool], y: &[f64], nf: usize, ns: usize) -> Vec<Spot> {
    let mut seen = vec![false; spot.len()];
    let mut out = Vec::new();
    let mut stack = Vec::new();
    for start in 0..spot.len() {
        if !spot[start] || seen[start] {
            continue;
        }
        seen[start] = true;
        stack.push(start);
        let (mut sw, mut sf, mut ss, mut n) = (0.0, 0.0, 0.0, 0);
        while let Some(i) = stack.pop() {
            let (f, s) = (i % nf, i / nf);
            let w = y[i].max(0.0);
            sw += w;
            sf += w * (f as f64 + 0.5);
            ss += w * (s as f64 + 0.5);
            n += 1;
            for ds in -1isize..=1 {
                for df in -1isize..=1 {
                    let (ff, sss) = (f as isize + df, s as isize + ds);
                    if ff < 0 || sss < 0 || ff as usize >= nf || sss as usize >= ns {
                        continue;
                    }
                    let j = sss as usize * nf + ff as usize;
                    if spot[j] && !seen[j] {
                        seen[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        if sw > 0.0 {
            out.push(Spot {
                fast: sf / sw,
                slow: ss / sw,
                intensity: sw,
                pixels: n,
            });
        }
    }
    out
}

/// The spots of `image` (fast-major, the plan's detector; ADU = `gain`·photons + `adc`) on the
/// pixels the plan renders: the pixels above the threshold over the background
/// ([`SpotOptions`]) joined into spots, each with its centroid, signal and pixel count, in the
/// raster order of their first pixel. With a fit's options ([`FitOptions::spot_options`]) these
/// are the spots its centroid stage indexes.
pub fn find_spots(plan: &Plan, image: &[f64], o: &SpotOptions) -> Result<Vec<Spot>> {
    let mask = o.mask.as_deref();
    check_image("spots", image, plan, o.gain, o.adc, mask)?;
    if !(o.threshold >= 0.0 && o.threshold.is_finite()) {
        return Err(Error::usage(format!(
            "spots: the threshold must be a finite share >= 0 of the image's range, got {}",
            o.threshold
        )));
    }
    let (_, y, bg) = photons_less_background(image, plan, o, mask);
    Ok(spots_of(&y, bg.as_deref(), plan, o.threshold, mask))
}

/// The pixels (indices, fast-major, ascending) within `spot_radius` of a spot pixel of the
/// model at `x` or of the target `y` (photons, background subtracted), among those the
/// detector renders. The model's spots: its whole image on a small detector, the predicted
/// spots (`predict`, what is on the image) on a large one; with a background, a spot pixel of
/// the target is 5σ above the background's noise, one of the model above the lower of that and
/// `spot_threshold` of its range.
#[allow(clippy::too_many_arguments)]
fn select(
    setup: &Setup,
    files: &dyn FileSource,
    x: &[f64],
    y: &[f64],
    bg: Option<&[f64]>,
    o: &FitOptions,
    cancel: &AtomicBool,
) -> Result<Vec<usize>> {
    let p = &setup.plan;
    let (nf, ns) = (p.fpixels, p.spixels);
    let mut spot = target_mask(y, bg, o.spot_threshold, o.mask.as_deref());
    let bg_thr = |i: usize, range_thr: f64| match bg {
        Some(b) => range_thr.min(noise5(b[i])),
        None => range_thr,
    };
    if nf * ns <= FULL_RENDER_PIXELS {
        let model = render_whole(setup, files, &o.params, x, cancel)?;
        match bg {
            None => mark(&model, false, o.spot_threshold, &mut spot, None),
            Some(_) => {
                let med = median(&model);
                let max = model.iter().fold(f64::MIN, |m, &v| m.max(v));
                let range_thr = med + o.spot_threshold * (max - med);
                for (i, &v) in model.iter().enumerate() {
                    if v > bg_thr(i, range_thr) && max > med {
                        spot[i] = true;
                    }
                }
            }
        }
    } else {
        let offsets: Vec<Offset> = o.params.iter().copied().zip(x.iter().copied()).collect();
        let moved = moved_setup(setup, files, &offsets)?;
        let pred = predict(
            &moved,
            &PredictOptions {
                on_image: true,
                ..PredictOptions::default()
            },
        )?;
        let spots: Vec<(usize, f64)> = pred
            .reflections
            .iter()
            .filter(|r| r.on_detector && r.in_condition)
            .filter_map(|r| match (r.fast, r.slow) {
                (Some(f), Some(s)) if f >= 0.0 && s >= 0.0 => {
                    let (f, s) = (f.floor() as usize, s.floor() as usize);
                    (f < nf && s < ns).then_some((s * nf + f, r.intensity))
                }
                _ => None,
            })
            .collect();
        let max = spots.iter().fold(0f64, |m, s| m.max(s.1));
        let range_thr = o.spot_threshold * max;
        for (i, v) in spots {
            if v > bg_thr(i, range_thr) {
                spot[i] = true;
            }
        }
    }
    // a radius beyond the detector's size selects no more (and keeps the loops short)
    let r = o.spot_radius.min(nf.max(ns)) as isize;
    let mut sel = vec![false; nf * ns];
    for s in 0..ns {
        for f in 0..nf {
            if !spot[s * nf + f] {
                continue;
            }
            for ds in -r..=r {
                for df in -r..=r {
                    let (ss, ff) = (s as isize + ds, f as isize + df);
                    if ss >= 0 && ff >= 0 && (ss as usize) < ns && (ff as usize) < nf {
                        sel[ss as usize * nf + ff as usize] = true;
                    }
                }
            }
        }
    }
    Ok((0..nf * ns)
        .filter(|&i| sel[i] && p.renders(i % nf, i / nf) && used(o.mask.as_deref(), i))
        .collect())
}

/// Pixels a shell of the radial profile pools at least (with its neighbours where it has fewer).
const SHELL_PIXELS: usize = 64;

/// The scattering angle 2θ (radians) of each pixel's centre (on the panel that holds it; the
/// first panel's plane for a pixel of none).
fn two_theta_map(p: &Plan) -> Vec<f64> {
    use crate::vec3::{dot, unit};
    let (nf, ns) = (p.fpixels, p.spixels);
    let beam = unit(p.beam);
    let mut out = vec![0.0; nf * ns];
    for s in 0..ns {
        for f in 0..nf {
            let pan = &p.panels[p.panel_at(f, s).unwrap_or(0)];
            let pos = p.panel_point(
                pan,
                (f as f64 + 0.5) * p.pixel,
                (s as f64 + 0.5) * p.pixel,
                0.0,
            );
            out[s * nf + f] = dot(unit(pos), beam).clamp(-1.0, 1.0).acos();
        }
    }
    out
}

/// The mean of the values of `vals` (photons above a background of `base`) within
/// 4√(base + m + 1) above their median m (spots clipped).
fn clipped_mean(vals: &[f64], base: f64) -> f64 {
    let med = median(vals);
    let cut = med + 4.0 * ((base + med).max(0.0) + 1.0).sqrt();
    let (sum, n) = vals
        .iter()
        .filter(|&&v| v <= cut)
        .fold((0.0, 0usize), |(a, n), &v| (a + v, n + 1));
    if n > 0 {
        sum / n as f64
    } else {
        med
    }
}

/// The radial part of the [`Background::Local`] estimate, of `y` (photons) above the block
/// map `base`: per shell of 2θ (as many shells as the detector's longer side has pixels over
/// the 2θ the used pixels span, so a shell is less than a pixel wide), the [`clipped_mean`] of
/// its rendered, used pixels (pooled with the neighbouring shells until [`SHELL_PIXELS`]),
/// interpolated linearly in 2θ.
/// `tt`: [`two_theta_map`].
fn radial_profile(
    y: &[f64],
    base: &[f64],
    tt: &[f64],
    p: &Plan,
    mask: Option<&[bool]>,
) -> Option<Vec<f64>> {
    let (nf, ns) = (p.fpixels, p.spixels);
    let idx: Vec<usize> = (0..nf * ns)
        .filter(|&i| p.renders(i % nf, i / nf) && used(mask, i) && tt[i].is_finite())
        .collect();
    if idx.len() < SHELL_PIXELS {
        return None;
    }
    let lo = idx.iter().fold(f64::MAX, |m, &i| m.min(tt[i]));
    let hi = idx.iter().fold(f64::MIN, |m, &i| m.max(tt[i]));
    let nb = nf.max(ns).max(1);
    let width = ((hi - lo) / nb as f64).max(1e-12);
    let bin = |t: f64| (((t - lo) / width) as usize).min(nb - 1);
    let mut shells: Vec<Vec<f64>> = vec![Vec::new(); nb];
    let mut bases = vec![(0.0, 0usize); nb];
    for &i in &idx {
        let k = bin(tt[i]);
        shells[k].push(y[i] - base[i]);
        bases[k].0 += base[i];
        bases[k].1 += 1;
    }
    let mut est = vec![0.0; nb];
    let mut vals = Vec::new();
    for (k, e) in est.iter_mut().enumerate() {
        let mut w = 0;
        loop {
            let (a, b) = (k.saturating_sub(w), (k + w).min(nb - 1));
            let n: usize = shells[a..=b].iter().map(|v| v.len()).sum();
            if n >= SHELL_PIXELS || (a == 0 && b == nb - 1) {
                vals.clear();
                for v in &shells[a..=b] {
                    vals.extend_from_slice(v);
                }
                let (sb, nbase) = bases[a..=b]
                    .iter()
                    .fold((0.0, 0), |(x, n), b| (x + b.0, n + b.1));
                *e = clipped_mean(&vals, sb / nbase.max(1) as f64);
                break;
            }
            w += 1;
        }
    }
    Some(
        tt.iter()
            .map(|&t| {
                let c = ((t - lo) / width - 0.5).clamp(0.0, (nb - 1) as f64);
                let k0 = c.floor() as usize;
                let k1 = (k0 + 1).min(nb - 1);
                let u = c - k0 as f64;
                est[k0] * (1.0 - u) + est[k1] * u
            })
            .collect(),
    )
}

/// The [`Background::Local`] estimate of `y` (photons, fast-major) on the pixels the plan
/// renders and `mask` uses (the others get the interpolated value): [`background_once`], then
/// again without the pixels within 2 of one 3σ above that first estimate (the spots' tails,
/// which the clip at 4σ leaves in a shell or block).
fn background_map(y: &[f64], p: &Plan, block: usize, mask: Option<&[bool]>) -> Vec<f64> {
    let (nf, ns) = (p.fpixels, p.spixels);
    let tt = two_theta_map(p);
    let first = background_once(y, &tt, p, block, mask);
    let mut keep: Vec<bool> = (0..nf * ns).map(|i| used(mask, i)).collect();
    for i in 0..nf * ns {
        if used(mask, i) && y[i] - first[i] > 3.0 * (first[i].max(0.0) + 1.0).sqrt() {
            let (f, s) = (i % nf, i / nf);
            for ss in s.saturating_sub(2)..(s + 3).min(ns) {
                for ff in f.saturating_sub(2)..(f + 3).min(nf) {
                    keep[ss * nf + ff] = false;
                }
            }
        }
    }
    background_once(y, &tt, p, block, Some(&keep))
}

/// One estimate of [`background_map`]: the sum of a radial profile R ([`radial_profile`]:
/// what follows the scattering angle, the water and air rings) and a block map B (what does
/// not: a slope, polarisation, a tilted detector's obliquity), fitted alternately: R of y,
/// B of y − R, R of y − B, B of y − R.
fn background_once(
    y: &[f64],
    tt: &[f64],
    p: &Plan,
    block: usize,
    mask: Option<&[bool]>,
) -> Vec<f64> {
    let zero = vec![0.0; y.len()];
    let Some(r) = radial_profile(y, &zero, tt, p, mask) else {
        return block_map(y, &zero, p, block, mask);
    };
    let b: Vec<f64> = block_map(y, &r, p, block, mask)
        .iter()
        .zip(&r)
        .map(|(t, r)| t - r)
        .collect();
    let r = radial_profile(y, &b, tt, p, mask).unwrap_or(r);
    block_map(y, &r, p, block, mask)
}

/// `radial` plus the block estimate of `y − radial`: per block of `block`² pixels the
/// [`clipped_mean`] of its rendered, used pixels, interpolated bilinearly between block
/// centres.
fn block_map(y: &[f64], radial: &[f64], p: &Plan, block: usize, mask: Option<&[bool]>) -> Vec<f64> {
    let (nf, ns) = (p.fpixels, p.spixels);
    let block = block.max(2);
    let (bf, bs) = (nf.div_ceil(block), ns.div_ceil(block));
    let mut est: Vec<Option<f64>> = vec![None; bf * bs];
    let mut vals = Vec::with_capacity(block * block);
    for j in 0..bs {
        for i in 0..bf {
            vals.clear();
            let mut base = 0.0;
            for s in j * block..((j + 1) * block).min(ns) {
                for f in i * block..((i + 1) * block).min(nf) {
                    if p.renders(f, s) && used(mask, s * nf + f) {
                        vals.push(y[s * nf + f] - radial[s * nf + f]);
                        base += radial[s * nf + f];
                    }
                }
            }
            if vals.len() < 16 {
                continue;
            }
            // the residual's clip at 4σ of the whole background's Poisson noise
            let base = base / vals.len() as f64;
            let med = median(&vals);
            let cut = med + 4.0 * ((base + med).max(0.0) + 1.0).sqrt();
            let (sum, n) = vals
                .iter()
                .filter(|&&v| v <= cut)
                .fold((0.0, 0usize), |(a, n), &v| (a + v, n + 1));
            est[j * bf + i] = Some(if n > 0 { sum / n as f64 } else { med });
        }
    }
    // blocks without enough pixels: the mean of their estimated neighbours, growing outwards
    if est.iter().all(|e| e.is_none()) {
        return radial.to_vec();
    }
    while est.iter().any(|e| e.is_none()) {
        let prev = est.clone();
        for j in 0..bs {
            for i in 0..bf {
                if prev[j * bf + i].is_some() {
                    continue;
                }
                let (mut sum, mut n) = (0.0, 0);
                for (dj, di) in [(-1isize, 0isize), (1, 0), (0, -1), (0, 1)] {
                    let (jj, ii) = (j as isize + dj, i as isize + di);
                    if jj >= 0 && ii >= 0 && (jj as usize) < bs && (ii as usize) < bf {
                        if let Some(v) = prev[jj as usize * bf + ii as usize] {
                            sum += v;
                            n += 1;
                        }
                    }
                }
                if n > 0 {
                    est[j * bf + i] = Some(sum / n as f64);
                }
            }
        }
    }
    let est: Vec<f64> = est.into_iter().map(|e| e.unwrap_or(0.0)).collect();
    // bilinear between block centres (clamped at the edges)
    let coord = |x: usize, nb: usize| -> (usize, usize, f64) {
        let c = (x as f64 + 0.5) / block as f64 - 0.5;
        if c <= 0.0 {
            return (0, 0, 0.0);
        }
        let i0 = (c.floor() as usize).min(nb - 1);
        let i1 = (i0 + 1).min(nb - 1);
        (i0, i1, if i1 == i0 { 0.0 } else { c - i0 as f64 })
    };
    let mut out = vec![0.0; nf * ns];
    for s in 0..ns {
        let (j0, j1, v) = coord(s, bs);
        for f in 0..nf {
            let (i0, i1, u) = coord(f, bf);
            let a = est[j0 * bf + i0] * (1.0 - u) + est[j0 * bf + i1] * u;
            let b = est[j1 * bf + i0] * (1.0 - u) + est[j1 * bf + i1] * u;
            out[s * nf + f] = radial[s * nf + f] + a * (1.0 - v) + b * v;
        }
    }
    out
}

fn cost_on(image: &[f64], target: &[f64], var: &[f64], loss: Loss) -> f64 {
    (0..image.len())
        .map(|k| loss.rho((image[k] - target[k]) / var[k].sqrt()))
        .sum()
}

/// One cycle's problem for the `levenberg-marquardt` crate: the robust residuals
/// r̃ = sign(r)·√(2ρ(r)) (so that ½Σr̃² = Σρ(r)) on the selected pixels and their Jacobian
/// (dr̃/dr = ρ′(r)/√(2ρ(r))·sign(r), times the tangents over σ). The last two evaluations are
/// kept: the crate goes back to the previous point after a rejected step. `target` and `var`
/// are per selected pixel (in `sel`'s order).
struct Problem<'a> {
    setup: &'a Setup,
    files: &'a dyn FileSource,
    params: &'a [Param],
    target: &'a [f64],
    var: &'a [f64],
    sel: &'a [usize],
    kept: Option<&'a Kept>,
    loss: Loss,
    cancel: &'a AtomicBool,
    cur: (Vec<f64>, Eval),
    prev: Option<(Vec<f64>, Eval)>,
    error: Option<Error>,
    evaluations: usize,
    best: f64,
    best_x: Vec<f64>,
    history: &'a mut Vec<f64>,
    progress: &'a mut dyn FnMut(&FitStep),
    cycle: usize,
}

impl Problem<'_> {
    fn r(&self, k: usize) -> (f64, f64) {
        let e = &self.cur.1;
        let sig = self.var[k].sqrt();
        ((e.image[k] - self.target[k]) / sig, sig)
    }
}

impl LeastSquaresProblem<f64, Dyn, Dyn> for Problem<'_> {
    type ResidualStorage = VecStorage<f64, Dyn, U1>;
    type JacobianStorage = VecStorage<f64, Dyn, Dyn>;
    type ParameterStorage = VecStorage<f64, Dyn, U1>;

    fn set_params(&mut self, x: &DVector<f64>) {
        let x: Vec<f64> = x.iter().copied().collect();
        if x == self.cur.0 || self.error.is_some() {
            return;
        }
        if self.prev.as_ref().is_some_and(|p| p.0 == x) {
            let p = self.prev.take().unwrap();
            self.prev = Some(std::mem::replace(&mut self.cur, p));
            return;
        }
        if self.cancel.load(Ordering::Relaxed) {
            self.error = Some(Error::cancelled());
            return;
        }
        match evaluate(
            self.setup,
            self.files,
            self.params,
            &x,
            self.sel,
            self.kept,
            self.cancel,
        ) {
            Ok(Trial::Outside(_)) => {
                self.evaluations += 1;
                let old = std::mem::replace(&mut self.cur, (x, Eval::outside()));
                self.prev = Some(old);
            }
            Ok(Trial::In(e)) => {
                self.evaluations += 1;
                let old = std::mem::replace(&mut self.cur, (x, e));
                self.prev = Some(old);
                let cost = cost_on(&self.cur.1.image, self.target, self.var, self.loss);
                if cost < self.best {
                    self.best = cost;
                    self.best_x = self.cur.0.clone();
                    let per = cost / self.sel.len() as f64;
                    self.history.push(per);
                    (self.progress)(&FitStep {
                        iteration: self.evaluations,
                        cycle: self.cycle,
                        cost: per,
                        values: self.cur.0.clone(),
                    });
                }
            }
            Err(e) => self.error = Some(e),
        }
    }

    fn params(&self) -> DVector<f64> {
        DVector::from_vec(self.cur.0.clone())
    }

    fn residuals(&self) -> Option<DVector<f64>> {
        if self.error.is_some() {
            return None;
        }
        if self.cur.1.is_outside() {
            return Some(DVector::from_element(self.sel.len(), OUTSIDE_RESIDUAL));
        }
        Some(DVector::from_iterator(
            self.sel.len(),
            (0..self.sel.len()).map(|k| {
                let r = self.r(k).0;
                r.signum() * (2.0 * self.loss.rho(r)).sqrt()
            }),
        ))
    }

    fn jacobian(&self) -> Option<DMatrix<f64>> {
        // the solver never accepts a point outside the domain, so never asks its Jacobian
        if self.error.is_some() || self.cur.1.is_outside() {
            return None;
        }
        let (np, n) = (self.params.len(), self.sel.len());
        let t = &self.cur.1.tangents;
        let mut j = DMatrix::zeros(n, np);
        for k in 0..n {
            let (r, sig) = self.r(k);
            let rho = self.loss.rho(r);
            // dr̃/dr: ρ′/√(2ρ)·sign r = √(w²r²/(2ρ)), 1 at r = 0 for every loss here
            let d = if rho > 0.0 {
                self.loss.weight(r) * r.abs() / (2.0 * rho).sqrt()
            } else {
                1.0
            };
            for p in 0..np {
                j[(k, p)] = d * t[p * n + k] / sig;
            }
        }
        Some(j)
    }
}

/// Fits `o.params` of `setup` to `target` (fast-major, the detector's size; photons, or ADU
/// with `o.gain` and `o.adc`). `progress` sees every accepted step; `cancel` stops the fit (an
/// error).
pub fn fit(
    setup: &Setup,
    files: &dyn FileSource,
    target: &[f64],
    o: &FitOptions,
    progress: &mut dyn FnMut(&FitStep),
    cancel: &AtomicBool,
) -> Result<Fit> {
    let (nf, ns) = (setup.plan.fpixels, setup.plan.spixels);
    cpu::tangent::check_supported(&setup.plan)?;
    if target.len() != nf * ns {
        // the size first (the rest of the target's checks after the parameters')
        check_image("fit", target, &setup.plan, o.gain, o.adc, o.mask.as_deref())?;
    }
    if o.params.is_empty() {
        return Err(Error::usage(
            "fit: no parameters to fit (e.g. rot_x,rot_y,rot_z,cell_a,scale)",
        ));
    }
    for (i, p) in o.params.iter().enumerate() {
        if o.params[..i].contains(p) {
            return Err(Error::usage(format!(
                "fit: parameter '{}' given twice",
                p.name()
            )));
        }
    }
    for &(p, _) in &o.start {
        if !o.params.contains(&p) {
            return Err(Error::usage(format!(
                "fit: start value for '{}', which is not fitted",
                p.name()
            )));
        }
    }
    o.check()?;
    check_image("fit", target, &setup.plan, o.gain, o.adc, o.mask.as_deref())?;
    let np = o.params.len();
    let mut x: Vec<f64> = o
        .params
        .iter()
        .map(|p| {
            o.start
                .iter()
                .find(|(q, _)| q == p)
                .map_or(0.0, |&(_, v)| v)
        })
        .collect();
    // the target in photons less the background under it
    let (photons, y, bg) =
        photons_less_background(target, &setup.plan, &o.spot_options(), o.mask.as_deref());
    let mut centroid_spots = 0;
    let mut evaluations = 0;
    if o.centroids {
        let c = centroid::refine(setup, files, &y, bg.as_deref(), o, &x, cancel)?;
        x = c.values;
        centroid_spots = c.spots;
        evaluations += c.evaluations;
    }
    let mut sel = select(setup, files, &x, &y, bg.as_deref(), o, cancel)?;
    let mut history = Vec::new();
    let mut cycles = 0;
    let mut converged = false;
    let mut e: Option<Eval> = None;
    while cycles < o.cycles && evaluations < o.max_iterations {
        cycles += 1;
        if sel.is_empty() {
            return Err(Error::usage(
                "fit: no spot in the model or the target image to fit on",
            ));
        }
        let kept = kept_at(setup, files, &o.params, &x)?;
        let ev = match e.take() {
            Some(ev) => ev,
            None => {
                evaluations += 1;
                evaluate(setup, files, &o.params, &x, &sel, kept.as_ref(), cancel)?.inside()?
            }
        };
        let b_at = |i: usize| bg.as_ref().map_or(0.0, |b| b[i]);
        // the Poisson variance (spots and background): the target's counts in the first cycle
        // (the model's spots may be elsewhere), the model's at the cycle's start after
        let var: Vec<f64> = if cycles == 1 {
            sel.iter().map(|&i| photons[i].max(0.0) + 1.0).collect()
        } else {
            sel.iter()
                .zip(&ev.image)
                .map(|(&i, &m)| (m + b_at(i)).max(0.0) + 1.0)
                .collect()
        };
        let tsel: Vec<f64> = sel.iter().map(|&i| y[i]).collect();
        let start_cost = cost_on(&ev.image, &tsel, &var, o.loss);
        history.push(start_cost / sel.len() as f64);
        let left = o.max_iterations.saturating_sub(evaluations);
        let problem = Problem {
            setup,
            files,
            params: &o.params,
            target: &tsel,
            var: &var,
            sel: &sel,
            kept: kept.as_ref(),
            loss: o.loss,
            cancel,
            cur: (x.clone(), ev),
            prev: None,
            error: None,
            evaluations: 0,
            best: start_cost,
            best_x: x.clone(),
            history: &mut history,
            progress: &mut *progress,
            cycle: cycles,
        };
        let lm = LevenbergMarquardt::new()
            .with_ftol(o.tolerance)
            .with_patience((left / (np + 1)).max(1));
        let (problem, report) = lm.minimize(problem);
        evaluations += problem.evaluations;
        if let Some(err) = problem.error {
            return Err(err);
        }
        // the lowest point seen (where the crate ends, unless a trial was the last evaluation)
        let ev = if problem.cur.0 == problem.best_x {
            x = problem.cur.0;
            Some(problem.cur.1)
        } else if let Some(p) = problem.prev.filter(|p| p.0 == problem.best_x) {
            x = p.0;
            Some(p.1)
        } else {
            x = problem.best_x;
            None
        };
        converged = report.termination.was_successful();
        if !converged && !matches!(report.termination, TerminationReason::LostPatience) {
            return Err(Error::usage(format!(
                "fit: the least-squares solver stopped: {}",
                solver_stop(&report.termination)
            )));
        }
        let next = select(setup, files, &x, &y, bg.as_deref(), o, cancel)?;
        // at least two cycles: the second weighs by the model's variance
        let done = next == sel && cycles >= 2;
        if next == sel {
            e = ev;
        }
        sel = next;
        if done {
            break;
        }
    }
    let image = if nf * ns <= FULL_RENDER_PIXELS || o.whole_image {
        render_whole(setup, files, &o.params, &x, cancel)?
    } else {
        let ev = match e {
            Some(ev) => ev,
            None => evaluate(setup, files, &o.params, &x, &sel, None, cancel)?.inside()?,
        };
        let mut img = vec![0.0; nf * ns];
        for (&i, &v) in sel.iter().zip(&ev.image) {
            img[i] = v;
        }
        img
    };
    let v = verdict(&setup.plan, &y, bg.as_deref(), &image, o, converged);
    Ok(Fit {
        params: o.params.clone(),
        values: x,
        history,
        iterations: evaluations,
        cycles,
        converged: v.why.is_empty(),
        verdict: v.why,
        spots_checked: v.checked,
        spots_found: v.found,
        correlation: v.correlation,
        correlation_ceiling: v.ceiling,
        pixels: sel.len(),
        image,
        centroid_spots,
    })
}

/// Why the solver stopped without converging, in words (not the crate's `Debug` form).
fn solver_stop(t: &TerminationReason) -> String {
    match t {
        TerminationReason::Numerical(what) | TerminationReason::User(what) => {
            format!("the model's {what} was not finite (NaN or infinite) at the values tried")
        }
        TerminationReason::NoImprovementPossible(what) => format!(
            "its {what} criterion is below what f64 arithmetic resolves (raise the tolerance)"
        ),
        TerminationReason::NoParameters => "no parameters".to_string(),
        TerminationReason::NoResiduals => "no pixels".to_string(),
        other => format!("{other:?}"),
    }
}

/// The target's spots the verdict checks: its strongest, at most this many.
pub const VERDICT_SPOTS: usize = 50;
/// A target's spot is found when a spot of the fitted model has its centroid within this
/// many pixels of its own.
pub const VERDICT_PIXELS: f64 = 2.5;
/// The share of the checked spots that must be found, and of the noise's ceiling that the
/// model's correlation with the target must reach: nine in ten. Fits that found their target
/// reach 0.999–1.000 of the ceiling and find 48–50 of 50 spots (crate/tests/refine.rs,
/// refine_realistic.rs, panel_gradients.rs); half let false minima through where a parameter
/// barely moves the strongest spots: on a still whose a axis lies along the beam (the page's
/// default crystal on 256² pixels, started 0.5° and 0.5 % off) fits ended with a 138 Å edge
/// for 100 (8 of 10 spots, correlation 0.994: χ² 227 a pixel on the spots) and 410 Å (9 of 9
/// spots, correlation 0.53 of 1.0), said to converge.
pub const VERDICT_SHARE: f64 = 0.9;

/// The correlation of the model with the target over the spot pixels of either (the target's
/// background subtracted), and the most the noise allows there: the correlation of a perfect
/// model with its Poisson-noisy image, √(var m / (var m + mean(m + b + 1))).
fn spot_correlation(
    plan: &Plan,
    y: &[f64],
    bg: Option<&[f64]>,
    model: &[f64],
    o: &FitOptions,
) -> (f64, f64) {
    let mask = o.mask.as_deref();
    let tm = target_mask(y, bg, o.spot_threshold, mask);
    let mm = target_mask(model, None, o.spot_threshold, mask);
    let nf = plan.fpixels;
    let idx: Vec<usize> = (0..y.len())
        .filter(|&i| (tm[i] || mm[i]) && plan.renders(i % nf, i / nf))
        .collect();
    let n = idx.len() as f64;
    if idx.len() < 2 {
        return (0.0, 0.0);
    }
    let (my, mm_) = idx
        .iter()
        .fold((0.0, 0.0), |(a, b), &i| (a + y[i] / n, b + model[i] / n));
    let (mut sxy, mut sxx, mut syy, mut noise) = (0.0, 0.0, 0.0, 0.0);
    for &i in &idx {
        let (dy, dm) = (y[i] - my, model[i] - mm_);
        sxy += dy * dm;
        syy += dy * dy;
        sxx += dm * dm;
        noise += model[i].max(0.0) + bg.map_or(0.0, |b| b[i]) + 1.0;
    }
    let corr = if sxx > 0.0 && syy > 0.0 {
        sxy / (sxx * syy).sqrt()
    } else {
        0.0
    };
    let var_m = sxx / n;
    (corr, (var_m / (var_m + noise / n)).sqrt())
}

/// Whether a fit ended at a minimum near the target, not only where the solver stopped
/// (MODEL §10.4, "The verdict").
struct Verdict {
    checked: usize,
    found: usize,
    /// The model's correlation with the target on the spot pixels, and the noise's ceiling.
    correlation: f64,
    ceiling: f64,
    /// Empty: converged.
    why: String,
}

fn verdict(
    plan: &Plan,
    y: &[f64],
    bg: Option<&[f64]>,
    model: &[f64],
    o: &FitOptions,
    solver_done: bool,
) -> Verdict {
    let mask = o.mask.as_deref();
    let mut target = spots_of(y, bg, plan, o.spot_threshold, mask);
    let advice = advice(o, target.len());
    target.sort_by(|a, b| b.intensity.total_cmp(&a.intensity));
    target.truncate(VERDICT_SPOTS);
    let model_spots = spots_of(model, None, plan, o.spot_threshold, mask);
    let near = |t: &Spot| {
        model_spots
            .iter()
            .any(|m| (m.fast - t.fast).hypot(m.slow - t.slow) <= VERDICT_PIXELS)
    };
    let found = target.iter().filter(|t| near(t)).count();
    let checked = target.len();
    let (corr, ceiling) = spot_correlation(plan, y, bg, model, o);
    let why = if !solver_done {
        format!(
            "the solver stopped at the evaluation limit ({}) before its tolerance",
            o.max_iterations
        )
    } else if checked == 0 {
        "the target has no spot to check the fit against".to_string()
    } else if corr < VERDICT_SHARE * ceiling {
        format!(
            "the fitted model correlates {corr:.2} with the target on the spots' pixels, where \
             the noise allows {ceiling:.2}: the fit ended in a false minimum ({advice})"
        )
    } else if (found as f64) < VERDICT_SHARE * checked as f64 {
        format!(
            "only {found} of the target's {checked} strongest spots have a spot of the fitted \
             model within {VERDICT_PIXELS} pixels: the fit ended in a false minimum ({advice})"
        )
    } else {
        String::new()
    };
    Verdict {
        checked,
        found,
        correlation: corr,
        ceiling,
        why,
    }
}

/// What may take a fit out of a false minimum, in words: the spot-centroid stage only where it
/// was not used and the target has the spots it needs; with fewer it returns at once, and
/// fitting fewer parameters is what helps.
fn advice(o: &FitOptions, spots: usize) -> String {
    let k = o.params.iter().filter(|&&p| centroid::moves(p)).count();
    let need = centroid::spots_needed(k);
    if k > 0 && spots < need {
        format!(
            "start nearer the truth, or fit fewer parameters: the target's {spots} spots are too \
             few for the spot-centroid stage, which needs {need} for {k} orientation and cell \
             parameters"
        )
    } else if k > 0 && !o.centroids {
        "start nearer the truth, or use the spot-centroid stage".to_string()
    } else {
        "start nearer the truth".to_string()
    }
}

/// The spot-centroid stage (MODEL §10.4): orientation and cell from the positions of the
/// target's spots, as an indexing program refines them, before the pixel fit. A still of a
/// real crystal has spots a few pixels wide that a 0.5° error moves by more than their width,
/// and out of the diffraction condition: the pixel residuals then see no overlap to follow.
/// The observed spots' scattering vectors q (from their centroids, through the detector at the
/// start values) are indexed with the current crystal (nearest integers, kept within 0.25 on
/// every axis), and the crystal's rotations and cell moved to bring a·q, b·q, c·q onto those
/// integers (Gauss–Newton with Levenberg's damping, the Jacobian from the plan's tangent);
/// the lowest-resolution eighth of the spots first (their indices are the least ambiguous),
/// then a quarter, half, all, indexing again at each cycle; then each spot on the mosaic
/// domain that puts it nearest its indices (the target's spots are made by the set-up's own
/// domains), until the indexing holds.
mod centroid {
    use super::*;
    use crate::predict::Geometry;
    use crate::vec3::{dot, mag, V3};

    const M_PER_A: f64 = 1e-10;

    pub(super) struct Outcome {
        pub values: Vec<f64>,
        pub spots: usize,
        pub evaluations: usize,
    }

    /// The target's spots the stage needs for `k` parameters it moves.
    pub(super) fn spots_needed(k: usize) -> usize {
        2 * k + 3
    }

    pub(super) fn moves(p: Param) -> bool {
        matches!(
            p,
            Param::RotX
                | Param::RotY
                | Param::RotZ
                | Param::CellA
                | Param::CellB
                | Param::CellC
                | Param::CellAlpha
                | Param::CellBeta
                | Param::CellGamma
        )
    }

    fn offsets(params: &[Param], x: &[f64]) -> Vec<Offset> {
        params.iter().copied().zip(x.iter().copied()).collect()
    }

    /// a, b, c (Å) of every orientation of the plan's table (a still: one per mosaic domain;
    /// domain 0 is the unrotated crystal).
    fn real_of(plan: &Plan) -> Result<Vec<[V3; 3]>> {
        if plan.orientations.is_empty() {
            return Err(Error::geometry("fit: the plan has no crystal orientation"));
        }
        Ok(plan
            .orientations
            .iter()
            .map(|o| [o.a, o.b, o.c].map(|v| v.map(|c| c / M_PER_A)))
            .collect())
    }

    /// A spot indexed: its number, its indices, and the orientation (mosaic domain) it is
    /// assigned to.
    type Indexed = (usize, [f64; 3], usize);

    /// Σ over the indexed spots of ((a_i·q − h_i)/|a_i⁰|)², a_i of the spot's domain.
    fn cost(real: &[[V3; 3]], norm: &[f64; 3], obs: &[V3], idx: &[Indexed]) -> f64 {
        idx.iter()
            .map(|&(k, h, m)| {
                (0..3)
                    .map(|a| ((dot(real[m][a], obs[k]) - h[a]) / norm[a]).powi(2))
                    .sum::<f64>()
            })
            .sum()
    }

    /// Indexes the spots `obs[..n]` with the orientations `real` (only domain 0 unless
    /// `domains`): for each, the domain whose indices lie nearest integers, kept when they lie
    /// within 0.25 of them on every axis.
    fn index(real: &[[V3; 3]], norm: &[f64; 3], obs: &[V3], domains: bool) -> Vec<Indexed> {
        let nd = if domains { real.len() } else { 1 };
        obs.iter()
            .enumerate()
            .filter_map(|(k, q)| {
                let mut best: Option<(f64, [f64; 3], usize)> = None;
                for (m, r) in real.iter().enumerate().take(nd) {
                    let frac = r.map(|a| dot(a, *q));
                    let near = frac.map(f64::round);
                    let ok = (0..3).all(|a| (frac[a] - near[a]).abs() < 0.25)
                        && near.iter().any(|&v| v != 0.0);
                    let d: f64 = (0..3)
                        .map(|a| ((frac[a] - near[a]) / norm[a]).powi(2))
                        .sum();
                    if ok && best.is_none_or(|b| d < b.0) {
                        best = Some((d, near, m));
                    }
                }
                best.map(|(_, h, m)| (k, h, m))
            })
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn gauss_newton(
        setup: &Setup,
        files: &dyn FileSource,
        params: &[Param],
        sub: &[usize],
        x0: &[f64],
        norm: &[f64; 3],
        obs: &[V3],
        idx: &[Indexed],
        moved0: Setup,
        evals: &mut usize,
        cancel: &AtomicBool,
    ) -> Result<(Vec<f64>, Setup)> {
        let sub_params: Vec<Param> = sub.iter().map(|&j| params[j]).collect();
        let ps = sub.len();
        let mut x = x0.to_vec();
        let mut lambda = 1e-3;
        // the resolved parameters' tangents once (as the pixel fit's cycles keep them)
        let all: Vec<Offset> = offsets(params, &x);
        let kept: Kept = sub_params
            .iter()
            .map(|&q| {
                if analytic(q) {
                    Ok(None)
                } else {
                    plan_delta(setup, &moved0, files, &all, q).map(Some)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let mut at_x = Some(moved0);
        for _ in 0..20 {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::cancelled());
            }
            let all = offsets(params, &x);
            let moved = match at_x.take() {
                Some(m) => m,
                None => {
                    *evals += 1;
                    moved_setup(setup, files, &all)?
                }
            };
            let deltas = sub_params
                .iter()
                .zip(&kept)
                .map(|(&q, k)| match k {
                    Some(d) => Ok(d.clone()),
                    None => plan_delta(setup, &moved, files, &all, q),
                })
                .collect::<Result<Vec<_>>>()?;
            let real = real_of(&moved.plan)?;
            // d(a, b, c)/dθ per parameter and orientation
            let dreal: Vec<Vec<[V3; 3]>> = deltas
                .iter()
                .map(|d| {
                    (0..real.len())
                        .map(|m| {
                            d.orientations.get(m).map_or([[0.0; 3]; 3], |o| {
                                [o.a, o.b, o.c].map(|v| v.map(|c| c / M_PER_A))
                            })
                        })
                        .collect()
                })
                .collect();
            let c0 = cost(&real, norm, obs, idx);
            let mut a = DMatrix::<f64>::zeros(ps, ps);
            let mut g = DVector::<f64>::zeros(ps);
            for &(k, h, m) in idx {
                for ax in 0..3 {
                    let r = (dot(real[m][ax], obs[k]) - h[ax]) / norm[ax];
                    let jrow: Vec<f64> = (0..ps)
                        .map(|j| dot(dreal[j][m][ax], obs[k]) / norm[ax])
                        .collect();
                    for i in 0..ps {
                        g[i] += jrow[i] * r;
                        for j in 0..ps {
                            a[(i, j)] += jrow[i] * jrow[j];
                        }
                    }
                }
            }
            let mut accepted = None;
            for _ in 0..10 {
                let mut m = a.clone();
                for i in 0..ps {
                    m[(i, i)] += lambda * a[(i, i)].max(1e-300);
                }
                let Some(step) = m.lu().solve(&(-&g)) else {
                    lambda *= 10.0;
                    continue;
                };
                let mut xt = x.clone();
                for (i, &j) in sub.iter().enumerate() {
                    xt[j] += step[i];
                }
                let trial = moved_setup(setup, files, &offsets(params, &xt))?;
                *evals += 1;
                let c1 = cost(&real_of(&trial.plan)?, norm, obs, idx);
                if c1 < c0 {
                    accepted = Some((xt, c1, trial));
                    lambda = (lambda / 10.0).max(1e-9);
                    break;
                }
                lambda *= 10.0;
            }
            match accepted {
                Some((xt, c1, trial)) => {
                    x = xt;
                    at_x = Some(trial);
                    if c0 - c1 <= 1e-6 * c0 {
                        break;
                    }
                }
                None => {
                    at_x = Some(moved);
                    break;
                }
            }
        }
        let moved = match at_x {
            Some(m) => m,
            None => moved_setup(setup, files, &offsets(params, &x))?,
        };
        Ok((x, moved))
    }

    pub(super) fn refine(
        setup: &Setup,
        files: &dyn FileSource,
        y: &[f64],
        bg: Option<&[f64]>,
        o: &FitOptions,
        x0: &[f64],
        cancel: &AtomicBool,
    ) -> Result<Outcome> {
        let p = &setup.plan;
        let params = &o.params;
        let sub: Vec<usize> = (0..params.len()).filter(|&j| moves(params[j])).collect();
        let none = Outcome {
            values: x0.to_vec(),
            spots: 0,
            evaluations: 0,
        };
        if sub.is_empty() {
            return Ok(none);
        }
        let spots = spots_of(y, bg, p, o.spot_threshold, o.mask.as_deref());
        let start = moved_setup(setup, files, &offsets(params, x0))?;
        let g = Geometry::new(&start)?;
        let mut obs: Vec<V3> = spots.iter().map(|s| g.hkl_at(s.fast, s.slow).q).collect();
        obs.sort_by(|a, b| mag(*a).total_cmp(&mag(*b)));
        if obs.len() < spots_needed(sub.len()) {
            return Ok(none);
        }
        let real0 = real_of(&start.plan)?;
        let norm = real0[0].map(mag);
        let mut x = x0.to_vec();
        let mut evals = 0;
        let mut used = 0;
        let mut prev: Vec<Indexed> = Vec::new();
        let mut at_x = Some(start);
        // the unrotated crystal on an eighth, a quarter, half, all of the spots (the lowest
        // resolutions first); then each spot on the mosaic domain that puts it nearest its
        // indices, until the indexing holds
        const SHARES: [f64; 4] = [0.125, 0.25, 0.5, 1.0];
        for cycle in 0..SHARES.len() + 2 {
            let share = SHARES.get(cycle).copied().unwrap_or(1.0);
            let domains = cycle >= SHARES.len();
            let n_use = ((obs.len() as f64 * share).ceil() as usize).min(obs.len());
            let moved = match at_x.take() {
                Some(m) => m,
                None => moved_setup(setup, files, &offsets(params, &x))?,
            };
            let idx = index(&real_of(&moved.plan)?, &norm, &obs[..n_use], domains);
            if idx.len() < sub.len() + 3 {
                break;
            }
            if idx == prev && domains {
                break;
            }
            let (xn, moved) = gauss_newton(
                setup, files, params, &sub, &x, &norm, &obs, &idx, moved, &mut evals, cancel,
            )?;
            x = xn;
            at_x = Some(moved);
            used = idx.len();
            prev = idx;
        }
        Ok(Outcome {
            values: x,
            spots: used,
            evaluations: evals,
        })
    }
}
