//! The tangent kernel on the GPU (MODEL §10): the image and one tangent image per parameter of
//! a [`PlanTangent`] in one pass (`shaders/tangent.wgsl`, f32 tangents beside the df64 image
//! chain), driven by [`GpuRenderer::render_tangents`].
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
//! The vector–Jacobian product reads the tangent planes back and reduces them on the host in
//! f64 (`api`), pass by pass: one kernel, a deterministic sum in raster order, and no GPU
//! float atomics (WGSL has none); the read-back of P planes is its cost.
//!
//! What the tangent kernel cannot follow (`-curved_det`, the `-oversample_*` running sums) is
//! refused before: `api` calls `cpu::tangent::check_supported` for either backend (same
//! errors); the driver refuses them too, as a GPU error, should a caller skip that.

use std::sync::atomic::AtomicBool;

use super::layout::{self, MAX_TAN_PARAMS, NO_PIXEL};
use super::renderer::{GpuRenderer, TangentPass};
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::tangent::PlanTangent;

/// The GPU tangent kernel's result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuTangents {
    /// The image (photons/pixel, fast-major): the image kernel's, before the exact-Bragg
    /// fix-up.
    pub image: Vec<f32>,
    /// `params × pixels`, parameter-major: ∂pixel/∂parameter per the parameter's unit.
    pub tangents: Vec<f32>,
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

    /// The image and its tangents for every parameter of `t` (whose deltas were resolved for
    /// `plan`). Progress runs over all passes; `cancel` is checked before each tile.
    pub async fn render_tangents(
        &mut self,
        plan: &Plan,
        t: &PlanTangent,
        progress: &mut dyn FnMut(f32),
        cancel: &AtomicBool,
    ) -> Result<GpuTangents> {
        if plan.curved || plan.oversample_thick || plan.oversample_polar || plan.oversample_omega {
            return Err(Error::gpu(
                "the tangent kernel does not follow -curved_det or the -oversample_* running sums",
            ));
        }
        let np = t.deltas.len();
        let per = self.tangent_params_per_pass(plan);
        if per == 0 && np > 0 {
            return Err(Error::gpu(format!(
                "a {}x{} image and one tangent image (or the terms and their tangents) exceed \
                 this GPU's storage-buffer limit; use the CPU backend",
                plan.fpixels, plan.spixels
            )));
        }
        self.ensure_tangent_pipeline().await?;
        let first = layout::first_sequence_pixel(plan) != NO_PIXEL;
        let npx = plan.pixel_count();
        let groups: Vec<Vec<usize>> = if np == 0 {
            vec![Vec::new()]
        } else {
            (0..np)
                .collect::<Vec<_>>()
                .chunks(per)
                .map(|c| c.to_vec())
                .collect()
        };
        let passes = groups.len();
        let mut image = Vec::new();
        let mut tangents = vec![0f32; np * npx];
        let mut fixup = None;
        for (g, which) in groups.iter().enumerate() {
            let (params, terms) = layout::pack_tangent(plan, t, which, first);
            let pass = TangentPass { params, terms };
            let mut sub = |p: f32| progress((g as f32 + p) / passes as f32);
            let planes = self
                .render_pass(plan, Some(&pass), &mut sub, cancel)
                .await?;
            if g == 0 {
                image = planes[..npx].to_vec();
                fixup = Some(self.exact_fixup().clone());
            }
            for (k, &j) in which.iter().enumerate() {
                tangents[j * npx..(j + 1) * npx]
                    .copy_from_slice(&planes[(k + 1) * npx..(k + 2) * npx]);
            }
        }
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

#[cfg(not(target_arch = "wasm32"))]
impl GpuRenderer {
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
}
