//! Refinement (MODEL §10, issue 20 §3): fit parameters of the set-up (orientation, cell,
//! distance, beam centre, scale, …: any [`Param`]) to a target image by robust least squares on
//! the pixels around the spots, with the Jacobian from the tangent kernel.
//!
//! The optimiser is the `levenberg-marquardt` crate (MINPACK's `lmder` in Rust, on nalgebra;
//! trust region with Marquardt's diagonal scaling, QR of the Jacobian). The robust loss ρ
//! enters as residuals r̃ = sign(r)·√(2ρ(r)) (½Σr̃² = Σρ). Each evaluation is one pass of the
//! tangent kernel: the image and its P tangents at the trial values.
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
        }
    }
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

fn cost_on(image: &[f64], target: &[f64], var: &[f64], sel: &[usize], loss: Loss) -> f64 {
    sel.iter()
        .map(|&i| loss.rho((image[i] - target[i]) / var[i].sqrt()))
        .sum()
}

/// One cycle's problem for the `levenberg-marquardt` crate: the robust residuals
/// r̃ = sign(r)·√(2ρ(r)) (so that ½Σr̃² = Σρ(r)) on the selected pixels and their Jacobian
/// (dr̃/dr = ρ′(r)/√(2ρ(r))·sign(r), times the tangents over σ). The last two evaluations are
/// kept: the crate goes back to the previous point after a rejected step.
struct Problem<'a> {
    setup: &'a Setup,
    files: &'a dyn FileSource,
    params: &'a [Param],
    target: &'a [f64],
    var: &'a [f64],
    sel: &'a [usize],
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
    fn r(&self, i: usize) -> (f64, f64) {
        let e = &self.cur.1;
        let sig = self.var[i].sqrt();
        ((e.image[i] - self.target[i]) / sig, sig)
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
        match evaluate(self.setup, self.files, self.params, &x, self.cancel) {
            Ok(e) => {
                self.evaluations += 1;
                let old = std::mem::replace(&mut self.cur, (x, e));
                self.prev = Some(old);
                let cost = cost_on(
                    &self.cur.1.image,
                    self.target,
                    self.var,
                    self.sel,
                    self.loss,
                );
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
        Some(DVector::from_iterator(
            self.sel.len(),
            self.sel.iter().map(|&i| {
                let r = self.r(i).0;
                r.signum() * (2.0 * self.loss.rho(r)).sqrt()
            }),
        ))
    }

    fn jacobian(&self) -> Option<DMatrix<f64>> {
        if self.error.is_some() {
            return None;
        }
        let (np, n) = (self.params.len(), self.cur.1.image.len());
        let t = &self.cur.1.tangents;
        let mut j = DMatrix::zeros(self.sel.len(), np);
        for (row, &i) in self.sel.iter().enumerate() {
            let (r, sig) = self.r(i);
            let rho = self.loss.rho(r);
            // dr̃/dr: ρ′/√(2ρ)·sign r = √(w²r²/(2ρ)), 1 at r = 0 for every loss here
            let d = if rho > 0.0 {
                self.loss.weight(r) * r.abs() / (2.0 * rho).sqrt()
            } else {
                1.0
            };
            for p in 0..np {
                j[(row, p)] = d * t[p * n + i] / sig;
            }
        }
        Some(j)
    }
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
    let mut evaluations = 1;
    let mut cycles = 0;
    let mut converged = false;
    while cycles < o.cycles.max(1) && evaluations < o.max_iterations {
        cycles += 1;
        if sel.is_empty() {
            return Err(Error::usage(
                "fit: no spot in the model or the target image to fit on",
            ));
        }
        // the Poisson variance: the target's counts in the first cycle (the model's spots may
        // be elsewhere), the model's at the cycle's start after
        let var: Vec<f64> = if cycles == 1 {
            target.iter().map(|&t| t.max(0.0) + 1.0).collect()
        } else {
            e.image.iter().map(|&m| m.max(0.0) + 1.0).collect()
        };
        let start_cost = cost_on(&e.image, target, &var, &sel, o.loss);
        history.push(start_cost / sel.len() as f64);
        let left = o.max_iterations - evaluations;
        let problem = Problem {
            setup,
            files,
            params: &o.params,
            target,
            var: &var,
            sel: &sel,
            loss: o.loss,
            cancel,
            cur: (x.clone(), e),
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
        if problem.cur.0 == problem.best_x {
            (x, e) = problem.cur;
        } else if let Some(p) = problem.prev.filter(|p| p.0 == problem.best_x) {
            (x, e) = p;
        } else {
            x = problem.best_x;
            e = evaluate(setup, files, &o.params, &x, cancel)?;
            evaluations += 1;
        }
        converged = report.termination.was_successful();
        if !converged && !matches!(report.termination, TerminationReason::LostPatience) {
            return Err(Error::usage(format!(
                "fit: the least-squares solver stopped: {:?}",
                report.termination
            )));
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
        iterations: evaluations,
        cycles,
        converged,
        pixels: sel.len(),
        image: e.image,
    })
}
