//! The tangent kernel on the GPU (MODEL §10): the image and one tangent image per parameter of
//! a [`PlanTangent`] in one pass (`shaders/nanobragg.wgsl` with `TANGENT`, f32 tangents beside
//! the df64 image chain), driven by [`GpuRenderer::render_tangents`].
//!
//! * The plan's tangent reaches the kernel as a uniform (`layout::TanParams`: per parameter
//!   the detector's, N's, a*'s and the scalars' tangents) and, for the parameters that move the
//!   orientation table or a wavelength, as one matrix in the uniform where every term record
//!   moves by it (`layout::term_form`: rotations on the right, the cell and the wavelength on
//!   the left; contracted once per pixel or per (sub-pixel, source)), else as the tangents of
//!   the (source, orientation) term records appended to the terms buffer
//!   (`layout::pack_tangent`), contracted per term.
//! * The output is one buffer of `1 + P` planes (the image, then the tangents, parameter-major),
//!   read back whole. When the planes of all parameters (or their term tangents beside the
//!   terms) exceed the device's largest storage binding, or there are more than
//!   [`MAX_TAN_PARAMS`], the parameters are split into passes, each rendering the image again
//!   (the first pass's image is kept).
//! * Pixels under the exact-Bragg rule are reported ([`GpuRenderer::exact_fixup`]) for the
//!   caller to render with the f64 tangent kernel, as for images.
//!
//! The vector–Jacobian product ([`GpuRenderer::render_vjp`]) leaves the tangent planes on the
//! GPU: after each pass a second kernel (`shaders/reduce.wgsl`) sums weight·tangent per
//! workgroup of 2048 pixels in a fixed order (f32 partials; no float atomics, which WGSL lacks),
//! and the host adds the partials in f64 in index order, so the result does not depend on
//! scheduling; only the image and P × (pixels / 2048) partials come back. The exact-Bragg
//! pixels get weight 0 there: the caller adds their f64 tangents.
//!
//! What the tangent kernel cannot follow (`-curved_det`, the `-oversample_*` running sums) is
//! refused before: `api` calls `cpu::tangent::check_supported` for either backend (same
//! errors); the driver refuses them too, as a GPU error, should a caller skip that.

use std::mem::MaybeUninit;
use std::sync::atomic::AtomicBool;

use super::layout::{self, MAX_TAN_PARAMS, NO_PIXEL};
use super::readback::Fresh;
use super::renderer::{GpuRenderer, TangentPass};
use crate::error::{Error, Result};
use crate::pages::Sample;
use crate::plan::Plan;
use crate::tangent::PlanTangent;

/// The GPU tangent kernel's result: tangents as the kernel computes them (f32), or widened to
/// f64 as they are read back ([`GpuRenderer::render_tangents_f64`], what `api` hands on).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuTangents<T = f32> {
    /// The image (photons/pixel, fast-major): the image kernel's, before the exact-Bragg
    /// fix-up.
    pub image: Vec<f32>,
    /// `params × pixels`, parameter-major: ∂pixel/∂parameter per the parameter's unit.
    pub tangents: Vec<T>,
    /// Passes the parameters took (see the module's documentation).
    pub passes: usize,
}

impl GpuRenderer {
    /// Parameters per pass for `plan` on this device: what the largest storage binding holds
    /// as planes besides the image, and as blocks of term tangents besides the terms (every
    /// parameter counted as moving the terms), at most [`MAX_TAN_PARAMS`]; 0 when not even one
    /// fits.
    pub fn tangent_params_per_pass(&self, plan: &Plan) -> usize {
        let limits = self.device().limits();
        let max = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        let plane = (plan.pixel_count().max(1) * size_of::<f32>()) as u64;
        let tables = if layout::first_sequence_pixel(plan) != NO_PIXEL {
            2
        } else {
            1
        };
        let block = (plan.sources.len() * plan.orientations.len() * tables).max(1) as u64
            * size_of::<layout::GpuTerm>() as u64;
        ((max / plane) as usize)
            .min((max / block) as usize)
            .saturating_sub(1)
            .min(MAX_TAN_PARAMS)
            .min(self.tan_per_pass.unwrap_or(MAX_TAN_PARAMS))
    }

    /// At most `n` parameters per tangent pass (`None`: as many as fit), to test the split.
    pub fn set_tangent_params_per_pass(&mut self, n: Option<usize>) {
        self.tan_per_pass = n.map(|n| n.max(1));
    }

    /// The parameters of each tangent pass (consecutive, as many as fit one pass; one empty
    /// pass for none), the tangent pipeline made; an error where not even one plane fits.
    async fn tangent_passes(&mut self, plan: &Plan, np: usize) -> Result<Vec<Vec<usize>>> {
        let per = self.tangent_params_per_pass(plan);
        if per == 0 && np > 0 {
            return Err(Error::gpu(format!(
                "a {}x{} image and one tangent image (or the terms and their tangents) exceed \
                 this GPU's storage-buffer limit; use the CPU backend",
                plan.fpixels, plan.spixels
            )));
        }
        self.ensure_tangent_pipeline().await?;
        Ok(if np == 0 {
            vec![Vec::new()]
        } else {
            (0..np)
                .collect::<Vec<_>>()
                .chunks(per)
                .map(|c| c.to_vec())
                .collect()
        })
    }

    /// The image and its tangents for every parameter of `t` (whose deltas were resolved for
    /// `plan`). Progress runs over all passes; `cancel` is checked before each tile.
    pub async fn render_tangents(
        &mut self,
        plan: &Plan,
        t: &PlanTangent,
        progress: &mut dyn FnMut(f32),
        cancel: &AtomicBool,
    ) -> Result<GpuTangents> {
        self.render_tangents_as(plan, t, progress, cancel).await
    }

    /// [`Self::render_tangents`] with the tangents widened to f64 as they are read back (one
    /// copy out of the mapped buffer, no f32 vector in between).
    pub async fn render_tangents_f64(
        &mut self,
        plan: &Plan,
        t: &PlanTangent,
        progress: &mut dyn FnMut(f32),
        cancel: &AtomicBool,
    ) -> Result<GpuTangents<f64>> {
        self.render_tangents_as(plan, t, progress, cancel).await
    }

    async fn render_tangents_as<T: Sample>(
        &mut self,
        plan: &Plan,
        t: &PlanTangent,
        progress: &mut dyn FnMut(f32),
        cancel: &AtomicBool,
    ) -> Result<GpuTangents<T>> {
        if plan.curved || plan.oversample_thick || plan.oversample_polar || plan.oversample_omega {
            return Err(Error::gpu(
                "the tangent kernel does not follow -curved_det or the -oversample_* running sums",
            ));
        }
        let np = t.deltas.len();
        let groups = self.tangent_passes(plan, np).await?;
        let first = layout::first_sequence_pixel(plan) != NO_PIXEL;
        let npx = plan.pixel_count();
        let passes = groups.len();
        let mut image = Vec::new();
        // each pass reads its planes straight into their place (the groups are consecutive
        // parameters)
        let mut tangents = Fresh::<T>::new(np * npx, self.readback().huge_pages);
        let mut fixup = None;
        for (g, which) in groups.iter().enumerate() {
            let (params, terms) = layout::pack_tangent(plan, t, which, first);
            let pass = TangentPass { params, terms };
            let mut sub = |p: f32| progress((g as f32 + p) / passes as f32);
            let range: &mut [MaybeUninit<T>] = match (which.first(), which.last()) {
                (Some(&a), Some(&b)) => {
                    debug_assert_eq!(b + 1 - a, which.len(), "consecutive parameters");
                    &mut tangents.slots()[a * npx..(b + 1) * npx]
                }
                _ => &mut [],
            };
            let img = self
                .render_pass(plan, Some(&pass), 1 + which.len(), range, &mut sub, cancel)
                .await?;
            if g == 0 {
                image = img;
                fixup = Some(self.exact_fixup().clone());
            }
        }
        // SAFETY: the groups are 0..np cut in consecutive pieces, and each pass wrote its
        // pieces' planes (or failed, returning above).
        let tangents = unsafe { tangents.finish() };
        if let Some(f) = fixup {
            // every pass flags the same pixels; report the first pass's
            self.set_exact_fixup(f);
        }
        Ok(GpuTangents {
            image,
            tangents,
            passes,
        })
    }
}

/// The GPU vector–Jacobian product's result ([`GpuRenderer::render_vjp`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuVjp {
    /// The image, as [`GpuTangents::image`].
    pub image: Vec<f32>,
    /// Per parameter Σ weight·tangent over the pixels not under the exact-Bragg rule
    /// ([`GpuRenderer::exact_fixup`]: the caller adds those from the f64 tangent kernel).
    pub sums: Vec<f64>,
    /// Passes the parameters took.
    pub passes: usize,
}

impl GpuRenderer {
    /// The image and, for every parameter of `t`, Σ_i weights_i · ∂pixel_i/∂parameter, reduced
    /// on the GPU (see the module's documentation): the tangent planes are not read back.
    /// `weights` has one value per pixel (checked by the caller); the pixels under the
    /// exact-Bragg rule are left out of the sums.
    pub async fn render_vjp(
        &mut self,
        plan: &Plan,
        t: &PlanTangent,
        weights: &[f64],
        cancel: &AtomicBool,
    ) -> Result<GpuVjp> {
        let npx = plan.pixel_count();
        if weights.len() != npx {
            return Err(Error::usage(format!(
                "weights: expected {npx} values, got {}",
                weights.len()
            )));
        }
        let np = t.deltas.len();
        let groups = self.tangent_passes(plan, np).await?;
        let first = layout::first_sequence_pixel(plan) != NO_PIXEL;
        let passes = groups.len();
        let mut image = Vec::new();
        let mut sums = vec![0f64; np];
        let mut w32: Vec<f32> = Vec::new();
        let mut fixup = None;
        for (g, which) in groups.iter().enumerate() {
            let (params, terms) = layout::pack_tangent(plan, t, which, first);
            let pass = TangentPass { params, terms };
            let no_planes: &mut [MaybeUninit<f32>] = &mut [];
            let img = self
                .render_pass(plan, Some(&pass), 1, no_planes, &mut |_| {}, cancel)
                .await?;
            if g == 0 {
                image = img;
                let f = self.exact_fixup().clone();
                w32 = crate::pages::map_collect(weights, |w| w as f32);
                for &i in &f.pixels {
                    w32[i] = 0.0;
                }
                fixup = Some(f);
            }
            let s = self.reduce_tangent_planes(which.len(), &w32).await?;
            for (k, &j) in which.iter().enumerate() {
                sums[j] = s[k];
            }
        }
        if let Some(f) = fixup {
            self.set_exact_fixup(f);
        }
        Ok(GpuVjp {
            image,
            sums,
            passes,
        })
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl GpuRenderer {
    /// Blocking [`GpuRenderer::render_vjp`] (native only; tiles take the chunk budget).
    pub fn render_vjp_blocking(
        &mut self,
        plan: &Plan,
        t: &PlanTangent,
        weights: &[f64],
    ) -> Result<GpuVjp> {
        let cancel = AtomicBool::new(false);
        self.without_adaptive_tiles(|r| pollster::block_on(r.render_vjp(plan, t, weights, &cancel)))
    }

    /// Blocking [`GpuRenderer::render_tangents`] without progress or cancellation (native
    /// only; tiles take the chunk budget, as [`GpuRenderer::render_blocking`]).
    pub fn render_tangents_blocking(
        &mut self,
        plan: &Plan,
        t: &PlanTangent,
    ) -> Result<GpuTangents> {
        let cancel = AtomicBool::new(false);
        self.without_adaptive_tiles(|r| {
            pollster::block_on(r.render_tangents(plan, t, &mut |_| {}, &cancel))
        })
    }

    /// Blocking [`GpuRenderer::render_tangents_f64`] (native only), as
    /// [`GpuRenderer::render_tangents_blocking`].
    pub fn render_tangents_f64_blocking(
        &mut self,
        plan: &Plan,
        t: &PlanTangent,
    ) -> Result<GpuTangents<f64>> {
        let cancel = AtomicBool::new(false);
        self.without_adaptive_tiles(|r| {
            pollster::block_on(r.render_tangents_f64(plan, t, &mut |_| {}, &cancel))
        })
    }
}
