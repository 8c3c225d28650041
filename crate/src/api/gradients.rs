//! Derivatives of the image (MODEL §10): the image and one tangent image per parameter, or the
//! vector–Jacobian product for a pixel weight map, on the CPU in f64 (default) or with the f32
//! terms (`*_with`, `Precision::F32`: `cpu::tangent32`, MODEL §10.5); or on the engine of the
//! backend policy (`Renderer::render_gradients`, `Renderer::vjp`: the GPU's tangent kernel,
//! f32 tangents, MODEL §10.6).

#[cfg(feature = "gpu")]
use super::check_image;
#[cfg(not(target_arch = "wasm32"))]
use super::renderer::block_on;
use super::renderer::gpu_or_fallback;
use super::{choose_backend, Backend, Engine, Precision, Prepared, Renderer};
use crate::cpu;
use crate::error::Result;
use crate::files::FileSource;
pub use crate::refine::{Background, Fit, FitOptions, FitStep, Loss, Spot, SpotOptions};
pub use crate::resolve::fitted::Fitted;
pub use crate::resolve::tangent::Offset;
pub use crate::tangent::Param;
use std::borrow::Cow;
use std::sync::atomic::AtomicBool;

/// An image and its derivatives.
#[derive(Clone, Debug)]
pub struct Gradients {
    pub params: Vec<Param>,
    pub fpixels: usize,
    pub spixels: usize,
    /// The image (photons/pixel): in f64 bit for bit the f64 kernel's; in f32 the f32 tangent
    /// kernel's (the f32 terms, within ~1e-6 of the f32 kernel's image).
    pub image: Vec<f32>,
    /// The same image before the f32 rounding.
    pub image_f64: Vec<f64>,
    /// `params × pixels` (parameter-major, each image fast-major): ∂pixel/∂parameter per the
    /// parameter's unit (`Param::unit`), in the precision they were computed in.
    pub tangents: Planes,
}

/// Tangent images as computed: f64 from the f64 tangent kernel, f32 from the f32 one and the
/// GPU's (their terms carry f32 rounding; f32 planes halve the memory and the writes).
#[derive(Clone, Debug, PartialEq)]
pub enum Planes {
    F64(Vec<f64>),
    F32(Vec<f32>),
}

impl Planes {
    /// Values `r` as f64 (borrowed where they are f64).
    pub fn f64s(&self, r: std::ops::Range<usize>) -> Cow<'_, [f64]> {
        match self {
            Planes::F64(v) => Cow::Borrowed(&v[r]),
            Planes::F32(v) => Cow::Owned(v[r].iter().map(|&x| x as f64).collect()),
        }
    }

    /// Values `r` as f32 (borrowed where they are f32; f64 rounded).
    pub fn f32s(&self, r: std::ops::Range<usize>) -> Cow<'_, [f32]> {
        match self {
            Planes::F64(v) => Cow::Owned(v[r].iter().map(|&x| x as f32).collect()),
            Planes::F32(v) => Cow::Borrowed(&v[r]),
        }
    }
}

impl From<Vec<f64>> for Planes {
    fn from(v: Vec<f64>) -> Self {
        Planes::F64(v)
    }
}

impl From<Vec<f32>> for Planes {
    fn from(v: Vec<f32>) -> Self {
        Planes::F32(v)
    }
}

impl Gradients {
    /// The tangent image of parameter number `i`, as f64 (borrowed where the planes are f64).
    pub fn tangent(&self, i: usize) -> Cow<'_, [f64]> {
        let n = self.fpixels * self.spixels;
        self.tangents.f64s(i * n..(i + 1) * n)
    }

    /// The tangent image of parameter number `i`, as f32 (borrowed where the planes are f32).
    pub fn tangent_f32(&self, i: usize) -> Cow<'_, [f32]> {
        let n = self.fpixels * self.spixels;
        self.tangents.f32s(i * n..(i + 1) * n)
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
    render_gradients_with(
        prep,
        files,
        params,
        offsets,
        Precision::F64,
        progress,
        cancel,
    )
}

/// [`render_gradients_at`] in the arithmetic `precision`: `F64` (the f64 tangent kernel, the
/// default of the other functions) or `F32` (the f32 terms and their f32 derivatives,
/// `cpu::tangent32`, MODEL §10.5). The plan's tangent is resolved in f64 either way.
pub fn render_gradients_with(
    prep: &Prepared,
    files: &dyn FileSource,
    params: &[Param],
    offsets: &[Offset],
    precision: Precision,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<Gradients> {
    cpu::tangent::check_supported(prep.plan())?;
    let (moved, t) = crate::resolve::tangent::plan_tangent_at(&prep.setup, files, params, offsets)?;
    let plan = &moved.plan;
    let (image, tangents) = cpu_tangents(plan, &t, precision, progress, cancel)?;
    Ok(Gradients {
        params: params.to_vec(),
        fpixels: plan.fpixels,
        spixels: plan.spixels,
        image: crate::pages::map_collect(&image, |v| v as f32),
        image_f64: image,
        tangents,
    })
}

/// The CPU tangent kernel of `precision` on `plan`: the image (f64) and the planes (f64, or f32
/// from the f32 kernel).
fn cpu_tangents(
    plan: &crate::plan::Plan,
    t: &crate::tangent::PlanTangent,
    precision: Precision,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<(Vec<f64>, Planes)> {
    Ok(match precision {
        Precision::F64 => {
            let r = cpu::tangent::render(plan, t, progress, cancel)?;
            (r.image, r.tangents.into())
        }
        Precision::F32 => {
            let r = cpu::tangent32::render(plan, t, progress, cancel)?;
            (r.image, r.tangents.into())
        }
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
    vjp_with(
        prep,
        files,
        params,
        offsets,
        weights,
        Precision::F64,
        cancel,
    )
}

/// [`vjp_at`] in the arithmetic `precision` (see [`render_gradients_with`]).
pub fn vjp_with(
    prep: &Prepared,
    files: &dyn FileSource,
    params: &[Param],
    offsets: &[Offset],
    weights: &[f64],
    precision: Precision,
    cancel: &AtomicBool,
) -> Result<(Vec<f64>, Vec<f64>)> {
    cpu::tangent::check_supported(prep.plan())?;
    let (moved, t) = crate::resolve::tangent::plan_tangent_at(&prep.setup, files, params, offsets)?;
    match precision {
        Precision::F64 => cpu::tangent::vjp(&moved.plan, &t, weights, cancel),
        Precision::F32 => cpu::tangent32::vjp(&moved.plan, &t, weights, cancel),
    }
}

/// The gradient of Σ weights·image with respect to the structure factors of the set-up's table
/// (`cpu::tangent::vjp_structure_factors`, f64, nearest lookup), at the set-up moved by
/// `offsets`: one entry per reflection a term reads, in (h, k, l) order.
pub fn vjp_structure_factors(
    prep: &Prepared,
    files: &dyn FileSource,
    offsets: &[Offset],
    weights: &[f64],
    cancel: &AtomicBool,
) -> Result<FGradient> {
    let plan = moved_plan(prep, files, offsets)?;
    let (image, grad) = cpu::tangent::vjp_structure_factors(&plan, weights, cancel)?;
    let g = &plan.hkl;
    let (kd, ld) = ((g.k_range() + 1) as usize, (g.l_range() + 1) as usize);
    let mut out = FGradient {
        image,
        ..Default::default()
    };
    for (e, &d) in grad.iter().enumerate() {
        if d == 0.0 {
            continue;
        }
        let hkl = [
            g.h_min + (e / (kd * ld)) as i32,
            g.k_min + ((e / ld) % kd) as i32,
            g.l_min + (e % ld) as i32,
        ];
        out.f.push(g.data[e]);
        out.hkl.push(hkl);
        out.grad.push(d);
    }
    Ok(out)
}

/// [`vjp_structure_factors`]' result: the image and, for each reflection some term reads, its
/// Miller indices, its F and Σ weights·∂image/∂F.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FGradient {
    pub image: Vec<f64>,
    pub hkl: Vec<[i32; 3]>,
    pub f: Vec<f64>,
    pub grad: Vec<f64>,
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

/// The spots of `image` (the set-up's detector, fast-major; ADU = `gain`·photons + `adc`):
/// the connected pixels above the threshold over the background, each with its centroid
/// (pixel centres at index + 0.5), signal (photons) and pixel count (`refine::find_spots`).
/// With a fit's options ([`FitOptions::spot_options`]) they are the target's spots that its
/// spot-centroid stage indexes.
pub fn find_spots(prep: &Prepared, image: &[f64], options: &SpotOptions) -> Result<Vec<Spot>> {
    crate::refine::find_spots(prep.plan(), image, options)
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

/// Derivatives rendered by [`Renderer::render_gradients`]: where, and why not where asked.
#[derive(Clone, Debug)]
pub struct RenderedGradients {
    pub gradients: Gradients,
    pub engine: Engine,
    /// Why it was not rendered where asked (GPU unavailable under `auto`), or threads capped.
    pub notices: Vec<String>,
}

impl Renderer {
    /// [`render_gradients_with`] on the engine of the one backend policy ([`choose_backend`]):
    /// the CPU tangent kernel (f64 or f32 by `precision`), or the GPU's (`gpu::tangent`: the image as the GPU image
    /// kernel renders it, tangents in f32, the exact-Bragg pixels from the f64 tangent kernel),
    /// falling back to the CPU where the policy allows. The same parameters are refused with
    /// the same errors on both (`cpu::tangent::check_supported`, the plan's tangent).
    #[allow(clippy::too_many_arguments)]
    pub async fn render_gradients_async(
        &mut self,
        prep: &Prepared,
        files: &dyn FileSource,
        params: &[Param],
        offsets: &[Offset],
        backend: Backend,
        precision: Precision,
        progress: &(dyn Fn(f32) + Sync),
        cancel: &AtomicBool,
    ) -> Result<RenderedGradients> {
        cpu::tangent::check_supported(prep.plan())?;
        let choice = choose_backend(backend, precision);
        let mut notices = self.take_notices();
        let (moved, t) =
            crate::resolve::tangent::plan_tangent_at(&prep.setup, files, params, offsets)?;
        if self.use_gpu(choice, &mut notices).await {
            let gpu = self.gpu_tangents(&moved.plan, &t, progress, cancel).await;
            if let Some((image, tangents)) = gpu_or_fallback(choice, gpu, &mut notices)? {
                return Ok(RenderedGradients {
                    gradients: Gradients {
                        params: params.to_vec(),
                        fpixels: moved.plan.fpixels,
                        spixels: moved.plan.spixels,
                        image_f64: crate::pages::map_collect(&image, |v| v as f64),
                        image,
                        tangents: tangents.into(),
                    },
                    engine: Engine::Gpu,
                    notices,
                });
            }
        }
        let plan = &moved.plan;
        let (image, tangents) = cpu::with_threads(self.threads(), || {
            cpu_tangents(plan, &t, precision, progress, cancel)
        })?;
        Ok(RenderedGradients {
            gradients: Gradients {
                params: params.to_vec(),
                fpixels: plan.fpixels,
                spixels: plan.spixels,
                image: crate::pages::map_collect(&image, |v| v as f32),
                image_f64: image,
                tangents,
            },
            engine: Engine::Cpu,
            notices,
        })
    }

    /// [`vjp_at`] on the engine of the one backend policy (see
    /// [`Renderer::render_gradients_async`]): on the GPU the tangent images stay there and are
    /// reduced there into per-workgroup partial sums, added on the host in f64 in a fixed order
    /// (`gpu::tangent`, `GpuRenderer::render_vjp`); the exact-Bragg pixels' terms come from the
    /// f64 tangent kernel. Returns the image (f64), the products and the engine.
    #[allow(clippy::too_many_arguments)]
    pub async fn vjp_async(
        &mut self,
        prep: &Prepared,
        files: &dyn FileSource,
        params: &[Param],
        offsets: &[Offset],
        weights: &[f64],
        backend: Backend,
        precision: Precision,
        cancel: &AtomicBool,
    ) -> Result<(Vec<f64>, Vec<f64>, Engine)> {
        cpu::tangent::check_supported(prep.plan())?;
        let choice = choose_backend(backend, precision);
        let (moved, t) =
            crate::resolve::tangent::plan_tangent_at(&prep.setup, files, params, offsets)?;
        let plan = &moved.plan;
        // the notices of a software adapter passed over or a GPU that failed:
        // `cpu_fallback_notice`, for the caller
        let mut notices = Vec::new();
        if self.use_gpu(choice, &mut notices).await {
            cpu::tangent::check_weights(plan, weights)?;
            let gpu = self.gpu_vjp(plan, &t, weights, cancel).await;
            if let Some((image, g)) = gpu_or_fallback(choice, gpu, &mut notices)? {
                let image = crate::pages::map_collect(&image, |v| v as f64);
                return Ok((image, g, Engine::Gpu));
            }
        }
        let (image, g) = cpu::with_threads(self.threads(), || match precision {
            Precision::F64 => cpu::tangent::vjp(plan, &t, weights, cancel),
            Precision::F32 => cpu::tangent32::vjp(plan, &t, weights, cancel),
        })?;
        Ok((image, g, Engine::Cpu))
    }

    /// Blocking [`Renderer::render_gradients_async`] (native only).
    #[cfg(not(target_arch = "wasm32"))]
    #[allow(clippy::too_many_arguments)]
    pub fn render_gradients(
        &mut self,
        prep: &Prepared,
        files: &dyn FileSource,
        params: &[Param],
        offsets: &[Offset],
        backend: Backend,
        precision: Precision,
        progress: &(dyn Fn(f32) + Sync),
        cancel: &AtomicBool,
    ) -> Result<RenderedGradients> {
        block_on(self.render_gradients_async(
            prep, files, params, offsets, backend, precision, progress, cancel,
        ))
    }

    /// Blocking [`Renderer::vjp_async`] (native only).
    #[cfg(not(target_arch = "wasm32"))]
    #[allow(clippy::too_many_arguments)]
    pub fn vjp(
        &mut self,
        prep: &Prepared,
        files: &dyn FileSource,
        params: &[Param],
        offsets: &[Offset],
        weights: &[f64],
        backend: Backend,
        precision: Precision,
        cancel: &AtomicBool,
    ) -> Result<(Vec<f64>, Vec<f64>, Engine)> {
        block_on(self.vjp_async(
            prep, files, params, offsets, weights, backend, precision, cancel,
        ))
    }

    /// The GPU tangent kernel on `plan`, its exact-Bragg pixels from the f64 tangent kernel:
    /// the image (checked finite) and the tangents (f32 as the kernel computes them,
    /// parameter-major).
    #[cfg(feature = "gpu")]
    async fn gpu_tangents(
        &mut self,
        plan: &crate::plan::Plan,
        t: &crate::tangent::PlanTangent,
        progress: &(dyn Fn(f32) + Sync),
        cancel: &AtomicBool,
    ) -> Result<(Vec<f32>, Vec<f32>)> {
        let gpu = self.gpu_renderer().await?;
        let out = gpu
            .render_tangents(plan, t, &mut |p| progress(p), cancel)
            .await;
        let r = self.gpu_result(out)?;
        let fixup = self.gpu_renderer().await?.exact_fixup().clone();
        let mut image = r.image;
        let mut tangents = r.tangents;
        cpu::tangent::apply_exact_fixup(plan, t, &mut image, &mut tangents, &fixup);
        check_image(plan, &image)?;
        Ok((image, tangents))
    }

    /// The GPU's vector–Jacobian product on `plan` (`GpuRenderer::render_vjp`), its
    /// exact-Bragg pixels (left out there) from the f64 tangent kernel: the image (checked
    /// finite) and the products.
    #[cfg(feature = "gpu")]
    async fn gpu_vjp(
        &mut self,
        plan: &crate::plan::Plan,
        t: &crate::tangent::PlanTangent,
        weights: &[f64],
        cancel: &AtomicBool,
    ) -> Result<(Vec<f32>, Vec<f64>)> {
        let gpu = self.gpu_renderer().await?;
        let out = gpu.render_vjp(plan, t, weights, cancel).await;
        let r = self.gpu_result(out)?;
        let fixup = self.gpu_renderer().await?.exact_fixup().clone();
        let mut image = r.image;
        let mut g = r.sums;
        if !fixup.pixels.is_empty() {
            let n = fixup.pixels.len();
            let f = cpu::tangent::render_pixels(plan, t, &fixup.pixels, cancel)?;
            for (k, &i) in fixup.pixels.iter().enumerate() {
                image[i] = f.image[k] as f32;
                for (j, gj) in g.iter_mut().enumerate() {
                    *gj += weights[i] * f.tangents[j * n + k];
                }
            }
        }
        check_image(plan, &image)?;
        Ok((image, g))
    }

    #[cfg(not(feature = "gpu"))]
    async fn gpu_vjp(
        &mut self,
        _plan: &crate::plan::Plan,
        _t: &crate::tangent::PlanTangent,
        _weights: &[f64],
        _cancel: &AtomicBool,
    ) -> Result<(Vec<f32>, Vec<f64>)> {
        Err(crate::error::Error::gpu(
            "-backend gpu: this nanobragg was built without the gpu feature",
        ))
    }

    #[cfg(not(feature = "gpu"))]
    async fn gpu_tangents(
        &mut self,
        _plan: &crate::plan::Plan,
        _t: &crate::tangent::PlanTangent,
        _progress: &(dyn Fn(f32) + Sync),
        _cancel: &AtomicBool,
    ) -> Result<(Vec<f32>, Vec<f32>)> {
        Err(crate::error::Error::gpu(
            "-backend gpu: this nanobragg was built without the gpu feature",
        ))
    }
}
