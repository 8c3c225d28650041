//! Refinement (MODEL §10, issue 20 §3): fit parameters of the set-up (orientation, cell,
//! distance, beam centre, scale, …: any [`Param`]) to a target image by robust least squares on
//! the pixels around the spots, with the Jacobian from the tangent kernel.
//!
//! The optimiser is Levenberg–Marquardt (Marquardt's diagonal scaling) with iteratively
//! reweighted least squares for the robust loss, on the normal equations `(JᵀWJ + λ·diag)δ =
//! −JᵀWr` of the P parameters (P ≤ 24, solved by Cholesky): each step is one pass of the tangent
//! kernel (the image and its P tangents at the trial values).
//!
//! Residuals: `r = (model − target)/σ` with the Poisson variance `σ² = max(target, 0) + 1` in
//! the first cycle and `σ² = max(model, 0) + 1` (the model at the cycle's start) after, fixed
//! within a cycle so that the weights do not move with each step. Pixels: those within
//! `spot_radius` pixels of a spot pixel, a spot pixel being one of the model at the current values
//! (a predicted spot) or of the target (an observed one) above its median by `spot_threshold` of
//! its range (and, for the target, by 5σ of the median's Poisson noise). The selection is made
//! again at the values a cycle ends at; the fit stops when the selection no longer changes or
//! after `cycles` cycles (two at least, the second weighted by the model).

use crate::cpu;
use crate::error::{Error, Result};
use crate::files::FileSource;
use crate::resolve::tangent::{plan_tangent_at, Offset};
use crate::resolve::Setup;
use crate::tangent::Param;
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

    /// A loss by name: `squared`, `huber`, `cauchy` (with `k`).
    pub fn parse(name: &str, k: f64) -> Result<Loss> {
        if !(k > 0.0 && k.is_finite()) {
            return Err(Error::usage(format!(
                "loss: the robust loss's scale k must be > 0, got {k}"
            )));
        }
        match name.trim().to_ascii_lowercase().as_str() {
            "squared" | "l2" | "linear" => Ok(Loss::Squared),
            "huber" => Ok(Loss::Huber(k)),
            "cauchy" => Ok(Loss::Cauchy(k)),
            other => Err(Error::usage(format!(
                "loss: unknown loss '{other}'; the losses are squared, huber, cauchy"
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
    /// Levenberg–Marquardt iterations (accepted or not) at most, over all cycles.
    pub max_iterations: usize,
    /// Pixel selections at most (see the module's doc).
    pub cycles: usize,
    /// Half-width (pixels) of the square around each spot pixel.
    pub spot_radius: usize,
    /// A spot pixel is above the median by this share of the image's range.
    pub spot_threshold: f64,
    /// Stop a cycle when an accepted step lowers the cost by less than this share.
    pub tolerance: f64,
}

impl FitOptions {
    pub fn new(params: &[Param]) -> Self {
        FitOptions {
            params: params.to_vec(),
            start: Vec::new(),
            loss: Loss::Huber(3.0),
            max_iterations: 60,
            cycles: 3,
            spot_radius: 2,
            spot_threshold: 0.01,
            tolerance: 1e-8,
        }
    }
}

/// One accepted step, as the progress callback sees it.
#[derive(Clone, Debug)]
pub struct FitStep {
    /// Iterations so far (accepted or not).
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
    /// The cost per selected pixel at the start and after each accepted step.
    pub history: Vec<f64>,
    /// Levenberg–Marquardt iterations (each one pass of the tangent kernel).
    pub iterations: usize,
    pub cycles: usize,
    /// The last cycle ended on the tolerance (not on `max_iterations`).
    pub converged: bool,
    /// Pixels in the last selection.
    pub pixels: usize,
    /// The model image at the fitted values (f64, fast-major).
    pub image: Vec<f64>,
}

struct Eval {
    image: Vec<f64>,
    tangents: Vec<f64>,
}

fn evaluate(
    setup: &Setup,
    files: &dyn FileSource,
    params: &[Param],
    x: &[f64],
    cancel: &AtomicBool,
) -> Result<Eval> {
    let offsets: Vec<Offset> = params.iter().copied().zip(x.iter().copied()).collect();
    let (moved, t) = plan_tangent_at(setup, files, params, &offsets)?;
    let r = cpu::tangent::render(&moved.plan, &t, &|_| {}, cancel)?;
    Ok(Eval {
        image: r.image,
        tangents: r.tangents,
    })
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

/// The pixels (indices, fast-major) within `radius` of a spot pixel of `model` or `target`.
fn select(model: &[f64], target: &[f64], nf: usize, ns: usize, o: &FitOptions) -> Vec<usize> {
    let mut spot = vec![false; nf * ns];
    let mark = |img: &[f64], noise: bool, spot: &mut Vec<bool>| {
        let med = median(img);
        let max = img.iter().fold(f64::MIN, |m, &v| m.max(v));
        let mut thr = med + o.spot_threshold * (max - med);
        if noise {
            thr = thr.max(med + 5.0 * (med.max(0.0) + 1.0).sqrt());
        }
        for (s, &v) in spot.iter_mut().zip(img) {
            if v > thr && max > med {
                *s = true;
            }
        }
    };
    mark(model, false, &mut spot);
    mark(target, true, &mut spot);
    let r = o.spot_radius as isize;
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
    (0..nf * ns).filter(|&i| sel[i]).collect()
}

/// The cost, and the normal equations' matrix JᵀWJ and right side JᵀWr on the pixels `sel`.
fn normal(
    e: &Eval,
    target: &[f64],
    var: &[f64],
    sel: &[usize],
    np: usize,
    loss: Loss,
) -> (f64, Vec<f64>, Vec<f64>) {
    let n = e.image.len();
    let mut a = vec![0.0; np * np];
    let mut g = vec![0.0; np];
    let mut cost = 0.0;
    let mut row = vec![0.0; np];
    for &i in sel {
        let sig = var[i].sqrt();
        let r = (e.image[i] - target[i]) / sig;
        cost += loss.rho(r);
        let w = loss.weight(r);
        for p in 0..np {
            row[p] = e.tangents[p * n + i] / sig;
        }
        for p in 0..np {
            g[p] += w * row[p] * r;
            for q in 0..=p {
                a[p * np + q] += w * row[p] * row[q];
            }
        }
    }
    for p in 0..np {
        for q in 0..p {
            a[q * np + p] = a[p * np + q];
        }
    }
    (cost, a, g)
}

fn cost_on(image: &[f64], target: &[f64], var: &[f64], sel: &[usize], loss: Loss) -> f64 {
    sel.iter()
        .map(|&i| loss.rho((image[i] - target[i]) / var[i].sqrt()))
        .sum()
}

/// Solves the symmetric positive definite system `m·x = b` by Cholesky; None when not definite.
fn cholesky_solve(m: &[f64], b: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = m[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            if i == j {
                if !(s > 0.0) {
                    return None;
                }
                l[i * n + i] = s.sqrt();
            } else {
                l[i * n + j] = s / l[j * n + j];
            }
        }
    }
    let mut y = vec![0.0; n];
    for i in 0..n {
        let mut s = b[i];
        for k in 0..i {
            s -= l[i * n + k] * y[k];
        }
        y[i] = s / l[i * n + i];
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let mut s = y[i];
        for k in i + 1..n {
            s -= l[k * n + i] * x[k];
        }
        x[i] = s / l[i * n + i];
    }
    Some(x)
}

/// Fits `o.params` of `setup` to `target` (photons per pixel, fast-major, the detector's size).
/// `progress` sees every accepted step; `cancel` stops the fit (an error).
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
        return Err(Error::usage(format!(
            "fit: the target image has {} pixels, the detector {nf}x{ns} = {}",
            target.len(),
            nf * ns
        )));
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
    if let Some(i) = target.iter().position(|v| !v.is_finite()) {
        return Err(Error::usage(format!(
            "fit: the target image's pixel {i} (fast {}, slow {}) is not finite",
            i % nf,
            i / nf
        )));
    }
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
    let mut e = evaluate(setup, files, &o.params, &x, cancel)?;
    let mut sel = select(&e.image, target, nf, ns, o);
    let mut history = Vec::new();
    let mut iterations = 0;
    let mut cycles = 0;
    let mut converged = false;
    while cycles < o.cycles.max(1) && iterations < o.max_iterations {
        cycles += 1;
        if sel.is_empty() {
            return Err(Error::usage(
                "fit: no spot in the model or the target image to fit on",
            ));
        }
        let npix = sel.len() as f64;
        // the Poisson variance: the target's counts in the first cycle (the model's spots may
        // be elsewhere), the model's at the cycle's start after
        let var: Vec<f64> = if cycles == 1 {
            target.iter().map(|&t| t.max(0.0) + 1.0).collect()
        } else {
            e.image.iter().map(|&m| m.max(0.0) + 1.0).collect()
        };
        let (mut cost, mut a, mut g) = normal(&e, target, &var, &sel, np, o.loss);
        history.push(cost / npix);
        let mut lambda = 1e-3;
        converged = false;
        while iterations < o.max_iterations {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::cancelled());
            }
            iterations += 1;
            let mut m = a.clone();
            for p in 0..np {
                let d = a[p * np + p].max(1e-300);
                m[p * np + p] = a[p * np + p] + lambda * d;
                if a[p * np + p] == 0.0 {
                    m[p * np + p] = 1.0; // a parameter that moves no selected pixel stays
                }
            }
            let neg: Vec<f64> = g.iter().map(|v| -v).collect();
            let Some(delta) = cholesky_solve(&m, &neg, np) else {
                lambda *= 10.0;
                continue;
            };
            let trial: Vec<f64> = x.iter().zip(&delta).map(|(a, b)| a + b).collect();
            let et = evaluate(setup, files, &o.params, &trial, cancel)?;
            let ct = cost_on(&et.image, target, &var, &sel, o.loss);
            if ct.is_finite() && ct < cost {
                let drop = (cost - ct) / cost.max(1e-300);
                x = trial;
                e = et;
                let (c, a2, g2) = normal(&e, target, &var, &sel, np, o.loss);
                (cost, a, g) = (c, a2, g2);
                history.push(cost / npix);
                progress(&FitStep {
                    iteration: iterations,
                    cycle: cycles,
                    cost: cost / npix,
                    values: x.clone(),
                });
                lambda = (lambda / 10.0).max(1e-12);
                if drop < o.tolerance {
                    converged = true;
                    break;
                }
            } else {
                lambda *= 10.0;
                if lambda > 1e12 {
                    converged = true; // no step lowers the cost: a minimum on this selection
                    break;
                }
            }
        }
        let next = select(&e.image, target, nf, ns, o);
        // at least two cycles: the second weighs by the model's variance
        if next == sel && cycles >= 2 {
            break;
        }
        sel = next;
    }
    Ok(Fit {
        params: o.params.clone(),
        values: x,
        history,
        iterations,
        cycles,
        converged,
        pixels: sel.len(),
        image: e.image,
    })
}
