//! Derivatives of the image (MODEL §10): the image and one tangent image per parameter, or the
//! vector–Jacobian product for a pixel weight map, on the CPU in f64.

use super::Prepared;
use crate::cpu;
use crate::error::Result;
use crate::files::FileSource;
pub use crate::refine::{Background, Fit, FitOptions, FitStep, Loss};
pub use crate::resolve::fitted::Fitted;
pub use crate::resolve::tangent::Offset;
pub use crate::tangent::Param;
use std::sync::atomic::AtomicBool;

/// An image and its derivatives.
#[derive(Clone, Debug)]
pub struct Gradients {
    pub params: Vec<Param>,
    pub fpixels: usize,
    pub spixels: usize,
    /// The image (photons/pixel), bit for bit the f64 kernel's.
    pub image: Vec<f32>,
    /// The same image before the f32 rounding.
    pub image_f64: Vec<f64>,
    /// `params × pixels` (parameter-major, each image fast-major): ∂pixel/∂parameter per the
    /// parameter's unit (`Param::unit`).
    pub tangents: Vec<f64>,
}

impl Gradients {
    /// The tangent image of parameter number `i`.
    pub fn tangent(&self, i: usize) -> &[f64] {
        let n = self.fpixels * self.spixels;
        &self.tangents[i * n..(i + 1) * n]
    }
}

/// Parse a list of parameter names (`rot_x,cell_a,…`); errors name `flag` and suggest the
/// nearest name.
pub fn parse_params(list: &str, flag: &str) -> Result<Vec<Param>> {
    Param::parse_list(list, flag)
}

/// The image and its tangents for `params`, in one pass over the pixels (`files`: where the
/// set-up's input files come from, read again for the parameters that re-resolve it).
pub fn render_gradients(
    prep: &Prepared,
    files: &dyn FileSource,
    params: &[Param],
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<Gradients> {
    render_gradients_at(prep, files, params, &[], progress, cancel)
}

/// [`render_gradients`] at the set-up moved by `offsets` (parameter, offset from the set-up's
/// value in the parameter's unit; rotations compose as R_z·R_y·R_x): the image there and its
/// derivatives with respect to `params` there (the PyTorch bridge's forward and backward).
pub fn render_gradients_at(
    prep: &Prepared,
    files: &dyn FileSource,
    params: &[Param],
    offsets: &[Offset],
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<Gradients> {
    cpu::tangent::check_supported(prep.plan())?;
    let (moved, t) = crate::resolve::tangent::plan_tangent_at(&prep.setup, files, params, offsets)?;
    let plan = &moved.plan;
    let r = cpu::tangent::render(plan, &t, progress, cancel)?;
    Ok(Gradients {
        params: params.to_vec(),
        fpixels: plan.fpixels,
        spixels: plan.spixels,
        image: r.image.iter().map(|&v| v as f32).collect(),
        image_f64: r.image,
        tangents: r.tangents,
    })
}

/// The vector–Jacobian product: for each parameter, Σ over pixels of `weights[pixel]` ·
/// ∂pixel/∂parameter (`weights` fast-major, one per pixel), without keeping the tangent
/// images; with the image (f64).
pub fn vjp(
    prep: &Prepared,
    files: &dyn FileSource,
    params: &[Param],
    weights: &[f64],
    cancel: &AtomicBool,
) -> Result<(Vec<f64>, Vec<f64>)> {
    vjp_at(prep, files, params, &[], weights, cancel)
}

/// [`vjp`] at the set-up moved by `offsets` (see [`render_gradients_at`]).
pub fn vjp_at(
    prep: &Prepared,
    files: &dyn FileSource,
    params: &[Param],
    offsets: &[Offset],
    weights: &[f64],
    cancel: &AtomicBool,
) -> Result<(Vec<f64>, Vec<f64>)> {
    cpu::tangent::check_supported(prep.plan())?;
    let (moved, t) = crate::resolve::tangent::plan_tangent_at(&prep.setup, files, params, offsets)?;
    cpu::tangent::vjp(&moved.plan, &t, weights, cancel)
}

/// The plan of `prep` with every parameter of `offsets` moved (public units), for checks by
/// finite differences and for fits.
pub fn moved_plan(
    prep: &Prepared,
    files: &dyn FileSource,
    offsets: &[Offset],
) -> Result<crate::plan::Plan> {
    Ok(crate::resolve::tangent::moved_setup(&prep.setup, files, offsets)?.plan)
}

/// The f64 image of a plan through the tangent kernel with no parameter (the f64 kernel's
/// image before its f32 rounding).
pub fn render_f64(plan: &crate::plan::Plan, cancel: &AtomicBool) -> Result<Vec<f64>> {
    let t = crate::tangent::PlanTangent::default();
    Ok(cpu::tangent::render(plan, &t, &|_| {}, cancel)?.image)
}

/// Fits `options.params` of the set-up to `target` (photons per pixel, fast-major) by robust
/// least squares on the pixels around the spots (Levenberg–Marquardt on the tangent kernel's
/// Jacobian; `refine`): the fitted offsets from the set-up's values, the cost history and the
/// iterations. `progress` sees every accepted step.
pub fn fit(
    prep: &Prepared,
    files: &dyn FileSource,
    target: &[f64],
    options: &FitOptions,
    progress: &mut dyn FnMut(&FitStep),
    cancel: &AtomicBool,
) -> Result<Fit> {
    crate::refine::fit(&prep.setup, files, target, options, progress, cancel)
}

/// The set-up moved by a fit's offsets (`params` with `values`, as `Fit` and `FitStep` give
/// them) as the values of the user's flags: `-misset`, `-cell`, `-distance`, `-Xbeam`/`-Ybeam`,
/// `-fluence`, … (`resolve::fitted`), so that a form, a URL or a command line reproduces the
/// fitted set-up.
pub fn fitted_values(prep: &Prepared, params: &[Param], values: &[f64]) -> Result<Fitted> {
    if params.len() != values.len() {
        return Err(crate::error::Error::usage(format!(
            "fit: {} parameters but {} values",
            params.len(),
            values.len()
        )));
    }
    let offsets: Vec<Offset> = params.iter().copied().zip(values.iter().copied()).collect();
    crate::resolve::fitted::fitted_values(&prep.setup, &offsets)
}
