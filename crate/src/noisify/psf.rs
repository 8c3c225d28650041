//! The detector point-spread function of upstream noisify (`-psf gauss|fiber`): a kernel of
//! pixel-integrated profiles, rendered around every lit pixel out to a radius chosen from the
//! pixel's own photon count, and the photons that fall outside that radius added back evenly.
//!
//! Arithmetic follows upstream (f64 kernel and sums, f32 image) so that noise images after the
//! PSF are bit-identical ([`apply_psf`], one thread: the f32 sums in upstream's order).
//! [`apply_psf_bands`] is the same scatter in parallel, for the counter generator's path: the
//! lit pixels of each band of rows (a height set by the kernel's radius, never by the number of
//! threads) scatter into the band's own buffer, and each output row adds the bands that reach
//! it in band order, so its image is the same on any number of threads but its f32 roundings
//! are not upstream's (a few units in the last place).
//!
//! Scatter, not FFT: the automatic radius is chosen per pixel from its own photons (small for
//! the faint background that covers most of a realistic image), so the scatter does ~r² work
//! per lit pixel where an FFT convolution would have to use the brightest pixel's radius
//! everywhere and would not keep the upstream's per-pixel truncation and "lost photons" rule. Two of upstream's undefined cases are made defined: an automatic
//! radius that is NaN (a pixel below 0.01 photons, where the "lost photon" level exceeds the
//! pixel) becomes 1, and a pixel's radius never exceeds the kernel's.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PsfKind {
    /// A Gaussian of the given full width at half maximum.
    Gauss,
    /// The fibre-optic taper profile `g / (2π (g² + r²)^1.5)`, `g = 0.652383… · fwhm`.
    Fiber,
}

/// What the PSF step reports (upstream prints these lines).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PsfReport {
    /// With the automatic radius: the largest input value.
    pub max_input: Option<f64>,
    /// With the automatic radius: the kernel radius chosen from `max_input`.
    pub auto_radius: Option<i32>,
    /// The input had no photon at all (automatic radius): the output is all zero.
    pub skipped: bool,
    /// Photons beyond each pixel's radius, added back evenly over the image.
    pub lost: f64,
}

/// fwhm (pixels) -> fibre `g`.
const FIBER_G: f64 = 0.652383013252053;
/// Upstream keeps rendering until the photons left out are a tenth of a pixel's shot noise.
const PHOTON_LOSS_FACTOR: f64 = 10.0;

fn gauss_integral(x: f64, y: f64) -> f64 {
    let ln2 = 2f64.ln();
    let ln16 = 16f64.ln();
    0.125 * (libm::erf(2.0 * x * ln2.sqrt()) * libm::erf(y * ln16.sqrt()) * (ln16 / ln2).sqrt())
}

fn fiber_integral(x: f64, y: f64, g: f64) -> f64 {
    ((x * y) / (g * (g * g + x * x + y * y).sqrt())).atan() / 2.0 / std::f64::consts::PI
}

/// The integral over the unit pixel centred at `(x, y)` of a profile whose indefinite
/// double integral is `c`, for a pixel of width `pix`.
fn over_pixel(c: impl Fn(f64, f64) -> f64, x: f64, y: f64, pix: f64) -> f64 {
    let h = pix / 2.0;
    c(x + h, y + h) - c(x + h, y - h) - c(x - h, y + h) + c(x - h, y - h)
}

/// Fraction of a point's photons that land in the pixel at offset `(dx, dy)`.
pub fn kernel_value(kind: PsfKind, dx: i32, dy: i32, fwhm_px: f64) -> f64 {
    let (x, y) = (dx as f64, dy as f64);
    match kind {
        PsfKind::Gauss => over_pixel(gauss_integral, x / fwhm_px, y / fwhm_px, 1.0 / fwhm_px),
        PsfKind::Fiber => {
            let g = fwhm_px * FIBER_G;
            over_pixel(|a, b| fiber_integral(a, b, g), x, y, 1.0)
        }
    }
}

/// Radius (pixels) beyond which fewer than a tenth of the shot noise of `photons` falls.
/// `log_divisor` is ln 16 per pixel and ln 4 · 2 for the kernel, as upstream writes them.
fn auto_radius(kind: PsfKind, photons: f64, fwhm_px: f64, per_pixel: bool) -> f64 {
    let lost = photons.sqrt() / PHOTON_LOSS_FACTOR;
    match kind {
        PsfKind::Gauss => {
            let l = -(lost / photons).ln();
            let q = if per_pixel {
                l / 16f64.ln()
            } else {
                l / 4f64.ln() / 2.0
            };
            1.0 + (q.sqrt() * fwhm_px).ceil()
        }
        PsfKind::Fiber => 1.0 + (fwhm_px * FIBER_G * (photons / lost)).ceil(),
    }
}

/// A radius as upstream's `int`: NaN (or anything below 1) becomes 1; at most `max`.
fn clamp_radius(r: f64, max: i32) -> i32 {
    if !(r >= 1.0) {
        1
    } else if r >= max as f64 {
        max
    } else {
        r as i32
    }
}

/// The kernel of a PSF, cached for offsets within `radius`, and how each pixel uses it.
struct Kernel {
    kind: PsfKind,
    fwhm_px: f64,
    user_radius: i32,
    radius: i32,
    size: usize,
    values: Vec<f64>,
}

/// The radius and kernel of an image (`None`: no photon, nothing to spread), as upstream
/// chooses them; fills the report's automatic radius.
fn kernel_for(
    image: &[f32],
    w: usize,
    h: usize,
    kind: PsfKind,
    fwhm_px: f64,
    user_radius: i32,
    report: &mut PsfReport,
) -> Option<Kernel> {
    let maxwidth = w.max(h).min(i32::MAX as usize) as i32;
    let radius = if user_radius > 0 {
        user_radius.min(maxwidth)
    } else {
        let max_i = image.iter().fold(0.0f64, |m, &v| m.max(v as f64));
        report.max_input = Some(max_i);
        if !(max_i > 0.0) {
            report.skipped = true;
            return None;
        }
        let r = clamp_radius(auto_radius(kind, max_i, fwhm_px, false), maxwidth);
        report.auto_radius = Some(r);
        r
    };
    let size = 2 * radius as usize + 1;
    let mut values = vec![0f64; size * size];
    let r2 = radius as i64 * radius as i64;
    for dy in -radius..=radius {
        for dx in -radius..=radius {
            if (dx as i64 * dx as i64 + dy as i64 * dy as i64) > r2 {
                continue;
            }
            values[(radius + dy) as usize * size + (radius + dx) as usize] =
                kernel_value(kind, dx, dy, fwhm_px);
        }
    }
    Some(Kernel {
        kind,
        fwhm_px,
        user_radius,
        radius,
        size,
        values,
    })
}

impl Kernel {
    /// Spreads the `v` photons of pixel (`x0`, `y0`) of a `w` x `h` image into `out`, which
    /// holds the image's rows from `row0` on; returns the photons beyond the pixel's radius.
    #[inline]
    fn scatter(
        &self,
        out: &mut [f32],
        row0: usize,
        w: usize,
        h: usize,
        x0: usize,
        y0: usize,
        v: f64,
    ) -> f64 {
        let (radius, size) = (self.radius, self.size);
        let pixels = w * h;
        let r = if self.user_radius > 0 {
            radius
        } else {
            clamp_radius(auto_radius(self.kind, v, self.fwhm_px, true), radius)
        };
        let lost = match self.kind {
            PsfKind::Gauss => {
                let q = r as f64 / self.fwhm_px;
                v * (-16f64.ln() * (q * q)).exp()
            }
            PsfKind::Fiber => {
                let g = self.fwhm_px * FIBER_G;
                v * g / (g * g + (r as i64 * r as i64) as f64).sqrt()
            }
        };
        let rr = r as i64 * r as i64;
        let base = row0 * w;
        for dx in -r..=r {
            for dy in -r..=r {
                let k = self.values[(radius + dy) as usize * size + (radius + dx) as usize];
                if k == 0.0 || (dx as i64 * dx as i64 + dy as i64 * dy as i64) > rr {
                    continue;
                }
                let (x, y) = (x0 as i64 + dx as i64, y0 as i64 + dy as i64);
                // upstream's bounds: x == w spills into the next row, y == h is dropped
                if x < 0 || x > w as i64 || y < 0 || y > h as i64 {
                    continue;
                }
                let j = (y * w as i64 + x) as usize;
                if j >= pixels {
                    continue;
                }
                let o = &mut out[j - base];
                *o = (*o as f64 + v * k) as f32;
            }
        }
        lost
    }
}

/// How both PSF paths begin.
enum Start {
    /// Nothing to spread: the image as it is (no pixel or no width), or zeros (no photon).
    Done(Vec<f32>, PsfReport),
    Spread(Kernel, PsfReport),
}

/// The prologue of [`apply_psf`] and [`apply_psf_bands`]: the checks and the kernel.
fn start(
    image: &[f32],
    w: usize,
    h: usize,
    kind: PsfKind,
    fwhm_px: f64,
    user_radius: i32,
) -> Start {
    let pixels = w * h;
    assert_eq!(image.len(), pixels, "apply_psf: image size");
    let mut report = PsfReport::default();
    if pixels == 0 || !(fwhm_px > 0.0) {
        return Start::Done(image.to_vec(), report);
    }
    match kernel_for(image, w, h, kind, fwhm_px, user_radius, &mut report) {
        None => Start::Done(vec![0f32; pixels], report),
        Some(kernel) => Start::Spread(kernel, report),
    }
}

/// Applies the PSF to an image of `w` x `h` photons. `user_radius` > 0 fixes the radius;
/// 0 selects it automatically. `progress` gets the fraction done; `cancel` is polled per row.
#[allow(clippy::too_many_arguments)]
pub fn apply_psf(
    image: &[f32],
    w: usize,
    h: usize,
    kind: PsfKind,
    fwhm_px: f64,
    user_radius: i32,
    progress: &dyn Fn(f32),
    cancel: &AtomicBool,
) -> Result<(Vec<f32>, PsfReport)> {
    let pixels = w * h;
    let (kernel, mut report) = match start(image, w, h, kind, fwhm_px, user_radius) {
        Start::Done(out, report) => return Ok((out, report)),
        Start::Spread(kernel, report) => (kernel, report),
    };
    let mut out = vec![0f32; pixels];
    let mut total_lost = 0.0f64;
    for y0 in 0..h {
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::cancelled());
        }
        if y0 % 64 == 0 {
            progress(y0 as f32 / h as f32);
        }
        for x0 in 0..w {
            let v = image[y0 * w + x0];
            if v > 0.0 {
                total_lost += kernel.scatter(&mut out, 0, w, h, x0, y0, v as f64);
            }
        }
    }
    let even = total_lost / pixels as f64;
    for p in out.iter_mut() {
        *p = (*p as f64 + even) as f32;
    }
    report.lost = total_lost;
    progress(1.0);
    Ok((out, report))
}

/// Rows per band of [`apply_psf_bands`] for a kernel of `radius`: at least 64, and at least
/// twice the radius (each band's buffer holds its rows and a radius above and below).
fn band_rows(radius: i32) -> usize {
    64.max(2 * radius as usize)
}

/// [`apply_psf`] in parallel bands of rows (see the module's docs): the same kernel, radii and
/// lost photons; the same image on any number of threads, not bit for bit upstream's.
pub fn apply_psf_bands(
    image: &[f32],
    w: usize,
    h: usize,
    kind: PsfKind,
    fwhm_px: f64,
    user_radius: i32,
    cancel: &AtomicBool,
) -> Result<(Vec<f32>, PsfReport)> {
    use rayon::prelude::*;
    let pixels = w * h;
    let (kernel, mut report) = match start(image, w, h, kind, fwhm_px, user_radius) {
        Start::Done(out, report) => return Ok((out, report)),
        Start::Spread(kernel, report) => (kernel, report),
    };
    let band = band_rows(kernel.radius);
    let reach = kernel.radius as usize;
    let bands = h.div_ceil(band);
    // each band: (its buffer's first row, its buffer, its lost photons)
    let parts = (0..bands)
        .into_par_iter()
        .map(|b| {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::cancelled());
            }
            let (ya, yb) = (b * band, ((b + 1) * band).min(h));
            // rows a lit pixel of the band reaches: a radius up, a radius (and the spill of
            // x == w into the next row) down
            let (r0, r1) = (ya.saturating_sub(reach), (yb + reach + 1).min(h));
            let mut buf = vec![0f32; (r1 - r0) * w];
            let mut lost = 0.0f64;
            for y0 in ya..yb {
                for x0 in 0..w {
                    let v = image[y0 * w + x0];
                    if v > 0.0 {
                        lost += kernel.scatter(&mut buf, r0, w, h, x0, y0, v as f64);
                    }
                }
            }
            Ok((r0, buf, lost))
        })
        .collect::<Result<Vec<_>>>()?;
    let total_lost: f64 = parts.iter().map(|p| p.2).sum();
    let even = total_lost / pixels as f64;
    let mut out = vec![0f32; pixels];
    out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        // the bands whose buffers hold row y, in band order
        let first = y.saturating_sub(reach + 1) / band;
        let last = ((y + reach) / band).min(bands - 1);
        for (r0, buf, _) in &parts[first..=last] {
            let rows = buf.len() / w;
            if y < *r0 || y >= r0 + rows {
                continue;
            }
            let src = &buf[(y - r0) * w..(y - r0 + 1) * w];
            for (o, &s) in row.iter_mut().zip(src) {
                *o += s;
            }
        }
        for o in row.iter_mut() {
            *o = (*o as f64 + even) as f32;
        }
    });
    report.lost = total_lost;
    Ok((out, report))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(image: &[f32], w: usize, h: usize, kind: PsfKind, fwhm: f64, r: i32) -> Vec<f32> {
        apply_psf(image, w, h, kind, fwhm, r, &|_| {}, &AtomicBool::new(false))
            .unwrap()
            .0
    }

    #[test]
    fn kernels_are_normalised_profiles() {
        for (kind, fwhm) in [(PsfKind::Gauss, 1.5), (PsfKind::Fiber, 0.8)] {
            let mut sum = 0.0;
            let n = 400;
            for dy in -n..=n {
                for dx in -n..=n {
                    sum += kernel_value(kind, dx, dy, fwhm);
                }
            }
            // the fibre profile has long tails (1/r^3): 1 - g/sqrt(g^2 + n^2) inside radius n
            let want = if kind == PsfKind::Gauss { 1.0 } else { 0.9985 };
            assert!((sum - want).abs() < 2e-3, "{kind:?}: {sum}");
            assert!(kernel_value(kind, 0, 0, fwhm) > kernel_value(kind, 1, 0, fwhm));
            let (a, b) = (
                kernel_value(kind, 2, 1, fwhm),
                kernel_value(kind, -1, 2, fwhm),
            );
            assert!((a - b).abs() < 1e-15, "{a} {b}");
        }
        // the Gaussian's half maximum: with fwhm 4 pixels the pixel at 2 has about half the
        // centre's value
        let ratio =
            kernel_value(PsfKind::Gauss, 2, 0, 4.0) / kernel_value(PsfKind::Gauss, 0, 0, 4.0);
        assert!((ratio - 0.5).abs() < 0.03, "{ratio}");
    }

    #[test]
    fn photons_are_conserved_and_spread() {
        let (w, h) = (32, 32);
        let mut img = vec![0f32; w * h];
        img[16 * w + 16] = 1000.0;
        let out = run(&img, w, h, PsfKind::Gauss, 2.0, 0);
        let total: f64 = out.iter().map(|&v| v as f64).sum();
        assert!((total - 1000.0).abs() < 0.05, "{total}");
        assert!(out[16 * w + 16] > out[16 * w + 17] && out[16 * w + 17] > 0.0);
        assert_eq!(out[16 * w + 17], out[17 * w + 16]);
    }

    #[test]
    fn edges_follow_upstream() {
        // a lit pixel at the right edge spills into the first pixel of the next row; one on the
        // bottom row loses what would land below it
        let (w, h) = (4, 3);
        let mut img = vec![0f32; w * h];
        img[w - 1] = 100.0;
        let out = run(&img, w, h, PsfKind::Gauss, 1.0, 1);
        let k1 = kernel_value(PsfKind::Gauss, 1, 0, 1.0);
        let lost = 100.0 * (-16f64.ln()).exp() / (w * h) as f64;
        let want = (100.0 * k1) as f32;
        assert_eq!(out[w], (want as f64 + lost) as f32);
        // a lit pixel at x = 0 sends nothing to the previous row's last pixel (x = -1 is
        // dropped), which holds only its share of the lost photons
        let mut img = vec![0f32; w * h];
        img[(h - 1) * w] = 100.0;
        let out = run(&img, w, h, PsfKind::Fiber, 1.0, 1);
        let g = FIBER_G;
        let lost = 100.0 * g / (g * g + 1.0).sqrt() / (w * h) as f64;
        assert_eq!(out[(h - 1) * w - 1], lost as f32);
        assert!(out[(h - 1) * w + 1] > lost as f32);
    }

    #[test]
    fn no_photons_gives_an_empty_image_and_cancel_stops() {
        let img = vec![0f32; 16];
        let (out, rep) = apply_psf(
            &img,
            4,
            4,
            PsfKind::Fiber,
            1.0,
            0,
            &|_| {},
            &AtomicBool::new(false),
        )
        .unwrap();
        assert!(rep.skipped && out.iter().all(|&v| v == 0.0));
        let img = vec![1f32; 16];
        let e = apply_psf(
            &img,
            4,
            4,
            PsfKind::Gauss,
            1.0,
            0,
            &|_| {},
            &AtomicBool::new(true),
        )
        .unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Cancelled);
        // tiny values: the automatic radius is defined (upstream: NaN)
        let img = vec![0.001f32; 16];
        let out = run(&img, 4, 4, PsfKind::Gauss, 1.0, 0);
        assert!(out.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn bands_are_the_serial_scatter_up_to_roundings_on_any_number_of_threads() {
        // bright spots with large automatic radii, a right-edge spill, many bands
        let (w, h) = (97, 300);
        let img: Vec<f32> = (0..w * h)
            .map(|i| {
                if i % 331 == 0 {
                    4e4
                } else if i % w == w - 1 {
                    30.0
                } else {
                    (i % 7) as f32 * 0.3
                }
            })
            .collect();
        for (kind, fwhm, r) in [
            (PsfKind::Gauss, 2.5, 0),
            (PsfKind::Fiber, 0.7, 0),
            (PsfKind::Gauss, 1.0, 3),
        ] {
            let never = AtomicBool::new(false);
            let (serial, rs) = apply_psf(&img, w, h, kind, fwhm, r, &|_| {}, &never).unwrap();
            let bands = |threads| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| apply_psf_bands(&img, w, h, kind, fwhm, r, &never).unwrap())
            };
            let (one, rb) = bands(1);
            // the same report, the lost photons summed in another order
            assert!(
                (rb.lost - rs.lost).abs() <= 1e-12 * rs.lost,
                "{kind:?}: {rb:?} {rs:?}"
            );
            assert_eq!(
                PsfReport {
                    lost: rs.lost,
                    ..rb
                },
                rs,
                "{kind:?}: report"
            );
            for threads in [2, 5] {
                assert_eq!(bands(threads).0, one, "{kind:?}: {threads} threads");
            }
            let worst = serial
                .iter()
                .zip(&one)
                .map(|(a, b)| ((a - b) / a.abs().max(1e-3)).abs())
                .fold(0f32, f32::max);
            assert!(worst < 1e-5, "{kind:?}: {worst}");
        }
    }
}
