//! Detector effects, as upstream's `noisify` applies them to a float image of photons per pixel:
//! photon scale, beam flicker, per-pixel calibration error, Poisson shot noise, a point-spread
//! function, gain, ADC offset and read-out noise, written as 16- or 32-bit integer images
//! (golden-extras README, "noisify noise model").
//!
//! [`Effects`] + [`detect`] are the model (used by the `noisify` program and usable by any other
//! front end); [`options`] holds the program's flags and [`cli`] the program.
//!
//! Two generators ([`Generator`], noisify's `-rng`):
//!
//! - `Upstream` (the `noisify` program's default): upstream's generators with upstream's shared
//!   state (`rng.rs`): one shuffle table for both seeds, one Gaussian spare and one Poisson cache,
//!   drawn in raster order on one thread, so noise images are **bit-identical to upstream's** for
//!   the same seeds, PSF included (its serial scatter keeps upstream's order of f32 additions).
//! - `Counter` (the page's, Python's and the datasets' default; `noisify -rng counter`): every
//!   deviate of pixel `i` is a pure function of (seed, `i`, stream) (Philox4x32-10, [`counter`]):
//!   the Poisson uniform (32 bits) and the read-out Gaussian (f32 Box–Muller) from one block of
//!   the noise seed's noise stream, flicker from the noise seed's flicker stream, the
//!   calibration error from the calibration seed (the same pixel error in every image, as a
//!   detector's would be; computed once per calibration seed and kept for the next image).
//!   Means below 12 are inverted (sixteen pixels at once in vector lanes); a mean from 12 to
//!   1024 is the sum of a count of its whole part, from that mean's table of the Poisson
//!   distribution (at a 63-bit uniform of a stream of its own), and a count of its fraction,
//!   inverted with the small means; from 1024 to 1e6 Hörmann's PTRS and above the Gaussian
//!   approximation, both from the pixel's own further stream. Without a PSF the whole chain is one pass over the image, 32 pixels a
//!   step (no intermediate image); `ln`, `exp`, `sin`/`cos` are plain f32/f64 arithmetic, so
//!   the AVX-512, AVX2, scalar and wasm code give the same bits. The pixels are computed in
//!   parallel (rayon), the PSF in bands of rows of a height set by the kernel's radius alone;
//!   sums are taken in chunks of a fixed size (in a fixed number of partial sums) and added in
//!   order. The images are therefore **deterministic** (the same for any number of threads,
//!   natively and in wasm) but **not upstream's sequence**, and the sequence itself may change
//!   between versions (it changed in this one); the distributions are the exact ones (checked
//!   by chi-square and Kolmogorov–Smirnov tests in [`counter`]). The noiseless image
//!   (`-intfile`) is the same under both generators, bit for bit.

#[cfg(not(target_arch = "wasm32"))] // uses crate::cli (native only)
pub mod cli;
pub mod counter;
pub mod options;
pub mod psf;

pub use crate::rng::COUNTER_SEQUENCE;

use crate::error::{Error, Result};
use crate::rng::{Noise, RanState};
use psf::{apply_psf, apply_psf_bands, PsfKind, PsfReport};
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

/// Upstream noisify's default fluence: with r_e² it puts the input on a photons/pixel scale
/// (their product is exactly 1.0 in f64).
pub const DEFAULT_FLUENCE: f64 = 125932015286227086360700780544.0;

/// Largest value of a 16-bit pixel.
pub const MAX_U16: f64 = 65535.0;
/// Largest value of a 32-bit pixel (upstream clips at the signed limit).
pub const MAX_U32: f64 = 2147483647.0;

/// A point-spread function: shape, width in pixels, and radius (0: automatic).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Psf {
    pub kind: PsfKind,
    pub fwhm_px: f64,
    pub radius: i32,
}

/// Where the noise's random numbers come from (see the module's docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Generator {
    /// Upstream's shared sequence, one thread: bit-identical to upstream's noisify.
    #[default]
    Upstream,
    /// Philox per pixel, all threads: deterministic, not upstream's sequence.
    Counter,
}

impl Generator {
    /// `upstream` or `counter` (noisify's `-rng`).
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "upstream" => Some(Generator::Upstream),
            "counter" => Some(Generator::Counter),
            _ => None,
        }
    }
}

/// Everything that turns photons into detector counts.
#[derive(Clone, Debug, PartialEq)]
pub struct Effects {
    /// Incident photons/m²; times r_e² and `scale` converts the input to photons.
    pub fluence: f64,
    pub scale: f64,
    /// ADU per photon.
    pub gain: f64,
    /// ADU added to every pixel.
    pub adc: f64,
    /// Read-out noise, ADU rms.
    pub readout: f64,
    /// Beam flicker, fractional rms (one deviate per pixel).
    pub flicker: f64,
    /// Per-pixel calibration error, fractional rms.
    pub calibration: f64,
    pub psf: Option<Psf>,
    /// Noise seed and calibration seed, in upstream's stored form (`-seed N` stores -N).
    pub seed: i64,
    pub calib_seed: i64,
    /// false: only the noiseless image (and the PSF, if any, is applied to it).
    pub noise: bool,
    pub rng: Generator,
}

impl Default for Effects {
    fn default() -> Self {
        Effects {
            fluence: DEFAULT_FLUENCE,
            scale: 1.0,
            gain: 1.0,
            adc: 40.0,
            readout: 0.0,
            flicker: 0.0,
            calibration: 0.03,
            psf: None,
            seed: -1,
            calib_seed: 123456789,
            noise: true,
            rng: Generator::Upstream,
        }
    }
}

/// The noisy image and its totals.
#[derive(Clone, Debug, PartialEq)]
pub struct NoiseImage {
    /// Photons after shot noise, before the PSF (printed when there is a PSF).
    pub photons_before_psf: f64,
    pub psf: Option<PsfReport>,
    /// Photons after the PSF.
    pub photons: f64,
    /// Pixels clipped at the 16-bit (or, with `bits32`, the 32-bit) limit.
    pub overloads: usize,
    /// Counts (ADU), clipped at 2^31 - 1; [`to_u16`] gives the 16-bit image.
    pub adu: Vec<u32>,
}

/// The result of [`detect`].
#[derive(Clone, Debug, PartialEq)]
pub struct Detected {
    /// Largest input value (0 if none is positive) and that on the photon scale.
    pub max_input: f64,
    pub max_photons: f64,
    /// Negative input pixels (upstream warns about each).
    pub negative: usize,
    /// The PSF applied to the noiseless image (only without noise).
    pub noiseless_psf: Option<PsfReport>,
    /// Noiseless counts (ADU), clipped at 2^31 - 1 (empty from [`detect_keeping`] with noise
    /// and `noiseless` false).
    pub adu: Vec<u32>,
    pub noise: Option<NoiseImage>,
}

/// Upstream's generators with their shared state: each seed owns only its LCG value.
pub struct Streams {
    table: RanState,
    dev: Noise,
    pub seed: i64,
    pub calib_seed: i64,
}

impl Streams {
    pub fn new(seed: i64, calib_seed: i64) -> Self {
        Streams {
            table: RanState::new(),
            dev: Noise::new(),
            seed,
            calib_seed,
        }
    }
    fn gauss(&mut self) -> f32 {
        self.dev.gaussdev(&mut self.table, &mut self.seed)
    }
    fn gauss_calib(&mut self) -> f32 {
        self.dev.gaussdev(&mut self.table, &mut self.calib_seed)
    }
    fn poisson(&mut self, mean: f32) -> f32 {
        self.dev.poidev(&mut self.table, mean, &mut self.seed)
    }
}

/// Photons per pixel: `(float)((fluence · r_e²) · scale · value)`.
pub fn photon_image(input: &[f32], fluence: f64, scale: f64) -> Vec<f32> {
    let k = fluence * crate::resolve::R_E_SQR;
    input
        .par_iter()
        .with_min_len(CHUNK)
        .map(|&v| (k * scale * v as f64) as f32)
        .collect()
}

/// One pixel's count from a signal in ADU: truncated, clipped at 2^31 - 1 and at 0 (upstream
/// leaves negative values undefined).
#[inline(always)]
fn count(adu: f64) -> u32 {
    // adu.clamp(0.0, MAX_U32) as u32 (NaN: 0), in a form that vectorises; `clamp` would keep
    // a NaN, which the unchecked conversion below must never see. Comparisons, not
    // `max`/`min`: wasm has no instruction for their NaN rule (a call to `fmax` a pixel)
    let a = if adu > 0.0 { adu } else { 0.0 };
    let a = if a < MAX_U32 { a } else { MAX_U32 };
    // SAFETY: `a` is in [0, 2^31 - 1], not NaN
    unsafe { a.to_int_unchecked::<i32>() as u32 }
}

/// Noiseless counts: `photons · gain + adc`, truncated.
pub fn adu_image(photons: &[f32], gain: f64, adc: f64) -> Vec<u32> {
    photons
        .par_iter()
        .with_min_len(CHUNK)
        .map(|&p| count(p as f64 * gain + adc))
        .collect()
}

/// The 16-bit image of 32-bit counts (clipped at 65535).
pub fn to_u16(adu: &[u32]) -> Vec<u16> {
    adu.iter().map(|&v| v.min(65535) as u16).collect()
}

fn check_cancel(cancel: &AtomicBool) -> Result<()> {
    if cancel.load(Ordering::Relaxed) {
        Err(Error::cancelled())
    } else {
        Ok(())
    }
}

/// Shot noise in raster order: flicker (from the noise seed), calibration error (from the
/// calibration seed), then a Poisson deviate of the f32 mean. Returns the photons and their sum.
pub fn shot_noise(
    photons: &[f32],
    e: &Effects,
    rng: &mut Streams,
    progress: &dyn Fn(f32),
    cancel: &AtomicBool,
) -> Result<(Vec<f32>, f64)> {
    let mut out = Vec::with_capacity(photons.len());
    let mut sum = 0.0f64;
    for (i, &p) in photons.iter().enumerate() {
        if i % 65536 == 0 {
            check_cancel(cancel)?;
            progress(i as f32 / photons.len() as f32);
        }
        let mut p = p as f64;
        if e.flicker > 0.0 {
            p *= 1.0 + e.flicker * rng.gauss() as f64;
        }
        if e.calibration > 0.0 {
            p *= 1.0 + e.calibration * rng.gauss_calib() as f64;
        }
        let n = rng.poisson(p as f32);
        sum += n as f64;
        out.push(n);
    }
    Ok((out, sum))
}

/// Counts from photons in raster order: `photons · gain + adc` plus a read-out deviate (from
/// the noise seed). Returns the counts, the photon sum and the overloads at the 16-bit limit
/// (`bits32`: the 32-bit limit).
pub fn read_out(
    photons: &[f32],
    e: &Effects,
    bits32: bool,
    rng: &mut Streams,
) -> (Vec<u32>, f64, usize) {
    let (mut sum, mut overloads) = (0.0f64, 0usize);
    let limit = if bits32 { MAX_U32 } else { MAX_U16 };
    let adu = photons
        .iter()
        .map(|&p| {
            sum += p as f64;
            let mut adu = p as f64 * e.gain + e.adc;
            if e.readout > 0.0 {
                adu += e.readout * rng.gauss() as f64;
            }
            if adu > limit {
                overloads += 1;
            }
            count(adu)
        })
        .collect();
    (adu, sum, overloads)
}

/// The largest value of `c` (0 if none is positive) and its negative values.
#[inline(always)]
pub(crate) fn max_and_negatives(c: &[f32]) -> (f32, usize) {
    // eight lanes (the order of a maximum does not matter): vector instructions
    let (mut m, mut n) = ([0.0f32; 8], [0u32; 8]);
    let mut lanes = c.chunks_exact(8);
    for v in &mut lanes {
        for l in 0..8 {
            m[l] = if v[l] > m[l] { v[l] } else { m[l] };
            n[l] += (v[l] < 0.0) as u32;
        }
    }
    let rest = lanes
        .remainder()
        .iter()
        .fold((0.0f32, 0usize), |(m, n), &v| {
            (if v > m { v } else { m }, n + (v < 0.0) as usize)
        });
    let m = m.iter().fold(rest.0, |a, &b| if b > a { b } else { a });
    (m, rest.1 + n.iter().map(|&x| x as usize).sum::<usize>())
}

/// Pixels per parallel chunk of the loops over pixels (`counter::CHUNK`).
const CHUNK: usize = counter::CHUNK;

/// The PSF of either generator's path: upstream's serial scatter, or the banded parallel one.
#[allow(clippy::too_many_arguments)]
fn psf_for(
    rng: Generator,
    image: &[f32],
    w: usize,
    h: usize,
    p: Psf,
    progress: &dyn Fn(f32),
    cancel: &AtomicBool,
) -> Result<(Vec<f32>, PsfReport)> {
    match rng {
        Generator::Upstream => {
            apply_psf(image, w, h, p.kind, p.fwhm_px, p.radius, progress, cancel)
        }
        Generator::Counter => apply_psf_bands(image, w, h, p.kind, p.fwhm_px, p.radius, cancel),
    }
}

/// Applies every effect to a `w` x `h` float image (fast index first).
pub fn detect(
    input: &[f32],
    w: usize,
    h: usize,
    e: &Effects,
    bits32: bool,
    progress: &dyn Fn(f32),
    cancel: &AtomicBool,
) -> Result<Detected> {
    detect_keeping(input, w, h, e, bits32, true, progress, cancel)
}

/// [`detect`]; with noise and `noiseless` false the noiseless counts are not computed
/// (`Detected::adu` is empty): for a caller that keeps only the noisy image (the page's
/// realistic chain), one image's pass and its memory fewer.
#[allow(clippy::too_many_arguments)]
pub fn detect_keeping(
    input: &[f32],
    w: usize,
    h: usize,
    e: &Effects,
    bits32: bool,
    noiseless: bool,
    progress: &dyn Fn(f32),
    cancel: &AtomicBool,
) -> Result<Detected> {
    assert_eq!(input.len(), w * h, "detect: image size");
    // photons/pixel: the input itself when the scale is exactly 1 (noisify's defaults, and
    // Python's and the page's images), as `photon_image` would compute it
    let unscaled = e.fluence * crate::resolve::R_E_SQR * e.scale == 1.0;
    // the largest value and the negative pixels: in one pass of their own, or (the counter
    // generator's noise on the input itself) in the noise's pass over the same pixels
    let in_pass = unscaled && e.noise && e.rng == Generator::Counter;
    let (mut max_input, mut negative) = if in_pass {
        (0.0, 0)
    } else {
        input
            .par_chunks(CHUNK)
            .map(max_and_negatives)
            .reduce(|| (0.0, 0), |a, b| (a.0.max(b.0), a.1 + b.1))
    };
    let mut photons: Cow<[f32]> = if unscaled {
        Cow::Borrowed(input)
    } else {
        Cow::Owned(photon_image(input, e.fluence, e.scale))
    };
    let psf = e.psf.filter(|p| p.fwhm_px > 0.0);

    // without noise the PSF goes on the noiseless image
    let mut noiseless_psf = None;
    if !e.noise {
        if let Some(p) = psf {
            let (img, rep) = psf_for(e.rng, &photons, w, h, p, progress, cancel)?;
            photons = Cow::Owned(img);
            noiseless_psf = Some(rep);
        }
    }
    let (adu, noise) = match (e.noise, e.rng) {
        (false, _) => (adu_image(&photons, e.gain, e.adc), None),
        (true, Generator::Upstream) => {
            let adu = match noiseless {
                true => adu_image(&photons, e.gain, e.adc),
                false => Vec::new(),
            };
            let mut rng = Streams::new(e.seed, e.calib_seed);
            let (mut counted, before) = shot_noise(&photons, e, &mut rng, progress, cancel)?;
            let mut report = None;
            if let Some(p) = psf {
                let (img, rep) = psf_for(e.rng, &counted, w, h, p, progress, cancel)?;
                counted = img;
                report = Some(rep);
            }
            check_cancel(cancel)?;
            let (noisy, sum, overloads) = read_out(&counted, e, bits32, &mut rng);
            let n = NoiseImage {
                photons_before_psf: before,
                psf: report,
                photons: sum,
                overloads,
                adu: noisy,
            };
            (adu, Some(n))
        }
        (true, Generator::Counter) => {
            // one pass without a PSF; with one: Poisson, the PSF, then the read-out
            let first = counter::run(
                &photons,
                e,
                bits32,
                (true, noiseless),
                psf.is_none(),
                cancel,
            )?;
            if in_pass {
                // (`photons` is the input)
                (max_input, negative) = (first.max, first.negative);
            }
            let (noisy, report) = match psf {
                None => ((first.adu, first.after, first.overloads), None),
                Some(p) => {
                    let (img, rep) = psf_for(e.rng, &first.counts, w, h, p, progress, cancel)?;
                    check_cancel(cancel)?;
                    let r = counter::run(&img, e, bits32, (false, false), true, cancel)?;
                    ((r.adu, r.after, r.overloads), Some(rep))
                }
            };
            let n = NoiseImage {
                photons_before_psf: first.before,
                psf: report,
                photons: noisy.1,
                overloads: noisy.2,
                adu: noisy.0,
            };
            (first.noiseless, Some(n))
        }
    };
    progress(1.0);
    let max_input = max_input as f64;
    let max_photons = max_input * e.scale * e.fluence * crate::resolve::R_E_SQR;
    Ok(Detected {
        max_input,
        max_photons,
        negative,
        noiseless_psf,
        adu,
        noise,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[f32], w: usize, h: usize, e: &Effects) -> Detected {
        detect(input, w, h, e, false, &|_| {}, &AtomicBool::new(false)).unwrap()
    }

    #[test]
    fn default_fluence_is_the_photon_scale() {
        assert_eq!(DEFAULT_FLUENCE * crate::resolve::R_E_SQR, 1.0);
        assert_eq!(
            photon_image(&[3.5, -1.0], DEFAULT_FLUENCE, 1.0),
            vec![3.5, -1.0]
        );
    }

    #[test]
    fn noiseless_counts_truncate_and_clip() {
        let e = Effects {
            gain: 2.0,
            adc: 10.0,
            noise: false,
            ..Effects::default()
        };
        let d = run(&[0.0, 1.7, 40000.0, 1.5e9, -20.0], 5, 1, &e);
        assert_eq!(d.adu, vec![10, 13, 80010, 2147483647, 0]);
        assert_eq!(to_u16(&d.adu), vec![10, 13, 65535, 65535, 0]);
        assert_eq!(d.negative, 1);
        assert!(d.noise.is_none());
    }

    #[test]
    fn the_maximum_and_negatives_are_the_same_from_every_path() {
        // the counter generator's noise finds them in its pass (scale 1), the others in a pass
        // of their own: the same figures, over several chunks, a NaN and a partial group
        let n = 3 * CHUNK + 45;
        let input: Vec<f32> = (0..n)
            .map(|i| match i % 1001 {
                0 => -2.5,
                1 => f32::NAN,
                _ => ((i * 7919) % 5000) as f32 * 0.01,
            })
            .collect();
        let peak = 2 * CHUNK + 17;
        let mut input = input;
        input[peak] = 777.0;
        for scale in [1.0, 2.0] {
            let mut seen = vec![];
            for (noise, rng) in [
                (true, Generator::Counter),
                (true, Generator::Upstream),
                (false, Generator::Counter),
            ] {
                let e = Effects {
                    scale,
                    noise,
                    rng,
                    ..Effects::default()
                };
                let d = run(&input, n, 1, &e);
                seen.push((d.max_input, d.max_photons, d.negative));
            }
            assert!(seen.iter().all(|&s| s == seen[0]), "{scale}: {seen:?}");
            assert_eq!((seen[0].0, seen[0].2), (777.0, n.div_ceil(1001)));
            assert!((seen[0].1 - 777.0 * scale).abs() < 1e-9, "{seen:?}");
        }
    }

    #[test]
    fn the_noisy_image_is_the_same_without_its_noiseless_counts() {
        // `detect_keeping(…, noiseless = false)` leaves the noiseless counts out and nothing
        // else: each generator, with and without a PSF (its second pass) and read-out noise
        let (w, h) = (CHUNK / 4 + 9, 8);
        let n = w * h;
        let input: Vec<f32> = (0..n).map(|i| ((i * 7919) % 5000) as f32 * 0.03).collect();
        let never = AtomicBool::new(false);
        for rng in [Generator::Counter, Generator::Upstream] {
            for (psf, readout) in [(None, 0.0), (Some(2.0), 3.0)] {
                let e = Effects {
                    rng,
                    readout,
                    psf: psf.map(|fwhm_px| Psf {
                        kind: psf::PsfKind::Gauss,
                        fwhm_px,
                        radius: 0,
                    }),
                    ..Effects::default()
                };
                let all = detect(&input, w, h, &e, true, &|_| {}, &never).unwrap();
                let noisy = detect_keeping(&input, w, h, &e, true, false, &|_| {}, &never).unwrap();
                assert_eq!(all.adu.len(), n);
                assert!(noisy.adu.is_empty(), "{rng:?} {psf:?}");
                assert_eq!(noisy.noise, all.noise, "{rng:?} {psf:?}");
                assert_eq!(
                    (noisy.max_input, noisy.negative),
                    (all.max_input, all.negative)
                );
            }
        }
    }

    #[test]
    fn noise_statistics() {
        // mean and variance of (noise - adc)/gain follow the photons (calibration off)
        let n = 40000;
        let input = vec![50.0f32; n];
        let e = Effects {
            gain: 2.0,
            adc: 100.0,
            calibration: 0.0,
            seed: -7,
            ..Effects::default()
        };
        let d = run(&input, 200, 200, &e);
        let noise = d.noise.unwrap();
        let v: Vec<f64> = noise
            .adu
            .iter()
            .map(|&a| (a as f64 - 100.0) / 2.0)
            .collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        assert!((mean - 50.0).abs() < 0.2, "{mean}");
        assert!((var - 50.0).abs() < 2.0, "{var}");
        assert_eq!(noise.photons, v.iter().sum::<f64>());
        // a different seed gives a different image; the same seed the same
        let again = run(&input, 200, 200, &e).noise.unwrap();
        assert_eq!(again.adu, noise.adu);
        let other = run(&input, 200, 200, &Effects { seed: -8, ..e })
            .noise
            .unwrap();
        assert_ne!(other.adu, noise.adu);
    }

    #[test]
    fn overloads_are_counted_at_the_chosen_depth() {
        let e = Effects {
            calibration: 0.0,
            ..Effects::default()
        };
        let input = [70000.0f32, 5.0];
        let d16 = detect(&input, 2, 1, &e, false, &|_| {}, &AtomicBool::new(false)).unwrap();
        assert_eq!(d16.noise.unwrap().overloads, 1);
        let d32 = detect(&input, 2, 1, &e, true, &|_| {}, &AtomicBool::new(false)).unwrap();
        let n = d32.noise.unwrap();
        assert_eq!(n.overloads, 0);
        assert!(n.adu[0] > 65535);
    }

    /// The counter generator's image under a pool of `threads` threads.
    fn counter_run(input: &[f32], w: usize, h: usize, e: &Effects, threads: usize) -> Detected {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| detect(input, w, h, e, true, &|_| {}, &AtomicBool::new(false)).unwrap())
    }

    #[test]
    fn counter_noise_statistics_and_uncorrelated_pairs() {
        // Poisson by inversion (mean 3, a block per pair of pixels), by rejection (mean 50, the
        // pixel's own stream) and read-out noise alone (mean 0): counts are truncated, so
        // (adu - adc) has mean xm + E[frac] - 1/2 ~ xm - 1/2 and variance xm + readout² + 1/12
        let n = 200 * 200;
        for xm in [3.0f32, 50.0, 0.0] {
            let e = Effects {
                adc: 100.0,
                readout: 3.0,
                calibration: 0.0,
                seed: -11,
                rng: Generator::Counter,
                ..Effects::default()
            };
            let d = run(&vec![xm; n], 200, 200, &e);
            let v: Vec<f64> = d
                .noise
                .unwrap()
                .adu
                .iter()
                .map(|&a| a as f64 - 100.0)
                .collect();
            let mean = v.iter().sum::<f64>() / n as f64;
            let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
            let (want_m, want_v) = (xm as f64 - 0.5, xm as f64 + 9.0 + 1.0 / 12.0);
            // 5 standard errors: of the mean sqrt(var/n), of the variance var sqrt(2/n)
            assert!(
                (mean - want_m).abs() < 5.0 * (want_v / n as f64).sqrt(),
                "{xm}: mean {mean}"
            );
            assert!(
                (var - want_v).abs() < 5.0 * want_v * (2.0 / n as f64).sqrt(),
                "{xm}: var {var}"
            );
            // the two pixels of a pair (one Philox block, one Box–Muller draw) are uncorrelated
            let c = v
                .chunks(2)
                .map(|p| (p[0] - mean) * (p[1] - mean))
                .sum::<f64>()
                / (n / 2) as f64
                / var;
            assert!(
                c.abs() < 5.0 / ((n / 2) as f64).sqrt(),
                "{xm}: pair correlation {c}"
            );
        }
    }

    #[test]
    fn counter_images_are_the_same_on_any_number_of_threads() {
        // every effect, a PSF with the automatic radius, an image of several chunks and bands
        let (w, h) = (301, 257);
        let input: Vec<f32> = (0..w * h)
            .map(|i| {
                let (x, y) = ((i % w) as f32, (i / w) as f32);
                0.5 + 3.0 * (x * 0.07).sin().abs()
                    + if (x as usize % 40, y as usize % 37) == (3, 5) {
                        5e4
                    } else {
                        0.0
                    }
            })
            .collect();
        let e = Effects {
            readout: 2.5,
            flicker: 0.01,
            calibration: 0.03,
            psf: Some(Psf {
                kind: PsfKind::Gauss,
                fwhm_px: 1.7,
                radius: 0,
            }),
            seed: -11,
            rng: Generator::Counter,
            ..Effects::default()
        };
        let one = counter_run(&input, w, h, &e, 1);
        for threads in [2, 3, 8] {
            assert_eq!(
                counter_run(&input, w, h, &e, threads),
                one,
                "{threads} threads"
            );
        }
        let n = one.noise.as_ref().unwrap();
        assert!(n.psf.as_ref().unwrap().auto_radius.unwrap() > 1);
        // another seed, another image; the calibration's own seed moves it too
        let other = counter_run(
            &input,
            w,
            h,
            &Effects {
                seed: -12,
                ..e.clone()
            },
            2,
        );
        assert_ne!(other.noise.unwrap().adu, n.adu);
        let other = counter_run(
            &input,
            w,
            h,
            &Effects {
                calib_seed: 5,
                ..e.clone()
            },
            2,
        );
        assert_ne!(other.noise.unwrap().adu, n.adu);
        // the noiseless image does not depend on the generator
        let up = run(
            &input,
            w,
            h,
            &Effects {
                rng: Generator::Upstream,
                ..e.clone()
            },
        );
        assert_eq!(up.adu, one.adu);
        // photons are conserved through the PSF up to its truncation (upstream's estimate of
        // the photons beyond each radius is added back) and the f32 roundings
        let rel = (n.photons - n.photons_before_psf).abs() / n.photons_before_psf;
        assert!(rel < 1e-3, "{rel}");
    }

    #[test]
    fn counter_noise_statistics() {
        // Poisson: mean and variance of (noise - adc)/gain are the photons' (calibration off);
        // with read-out noise the variance grows by readout²/gain²
        let n = 90000;
        for (photons, readout) in [(0.7f32, 0.0), (50.0, 0.0), (50.0, 3.0), (3000.0, 0.0)] {
            let input = vec![photons; n];
            let e = Effects {
                gain: 2.0,
                adc: 100.0,
                calibration: 0.0,
                readout,
                seed: -7,
                rng: Generator::Counter,
                ..Effects::default()
            };
            let d = counter_run(&input, 300, 300, &e, 2);
            let noise = d.noise.unwrap();
            let v: Vec<f64> = noise
                .adu
                .iter()
                .map(|&a| (a as f64 - 100.0) / 2.0)
                .collect();
            let mean = v.iter().sum::<f64>() / n as f64;
            let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
            let p = photons as f64;
            let want_var = p + readout * readout / 4.0;
            // 5 standard errors (the ADU truncation adds less than 1/4 to the variance and
            // removes up to 1/4 from the mean of a read-out value)
            let trunc = if readout > 0.0 { 0.25 } else { 0.0 };
            assert!(
                (mean - p).abs() < 5.0 * (want_var / n as f64).sqrt() + trunc,
                "{p}: {mean}"
            );
            assert!(
                (var - want_var).abs() < 5.0 * want_var * (2.0 / n as f64).sqrt() + trunc,
                "{p}: {var}"
            );
        }
        // calibration error: a pixel's factor is its own, the same under another noise seed
        let input = vec![1e5f32; 20000];
        let e = Effects {
            calibration: 0.05,
            adc: 0.0,
            rng: Generator::Counter,
            ..Effects::default()
        };
        let a = counter_run(
            &input,
            200,
            100,
            &Effects {
                seed: -1,
                ..e.clone()
            },
            2,
        );
        let b = counter_run(
            &input,
            200,
            100,
            &Effects {
                seed: -2,
                ..e.clone()
            },
            2,
        );
        let (a, b) = (a.noise.unwrap().adu, b.noise.unwrap().adu);
        let rel: Vec<f64> = a.iter().map(|&x| x as f64 / 1e5 - 1.0).collect();
        let sd = (rel.iter().map(|x| x * x).sum::<f64>() / rel.len() as f64).sqrt();
        // 5% calibration and 1/sqrt(1e5) = 0.3% shot noise
        let want = (0.05f64.powi(2) + 1e-5).sqrt();
        assert!((sd - want).abs() < 0.05 * want, "{sd} vs {want}");
        let cov = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| (x as f64 / 1e5 - 1.0) * (y as f64 / 1e5 - 1.0))
            .sum::<f64>()
            / a.len() as f64;
        assert!((cov / 0.0025 - 1.0).abs() < 0.1, "{cov}");
    }
}
