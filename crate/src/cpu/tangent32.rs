//! The f32 tangent kernel (MODEL §10.5): the image and, in the same pass, its derivative with
//! respect to every parameter of a [`PlanTangent`], with the fast (f32) terms of `terms.rs` and
//! the f32 derivatives beside them (`lattice_square_d`, `lattice_round_d`, `shape_r2_d`,
//! `lattice_gauss_d`, `lattice_tophat_d`, `polarization_d`, `capture_fraction_d`,
//! `solid_angle_d`), whose WGSL twins a GPU tangent kernel calls. This file is to a WGSL tangent
//! kernel what `pixel32.rs` is to `shaders/nanobragg.wgsl`: the same terms in the same order,
//! with the chain pixel → direction → q → Miller index in f64 (upstream's indices to the bit;
//! on the GPU it is df64) and the sums in f64 (df64 there).
//!
//! The loop is the one per-pixel loop of every CPU kernel (`pixel::render`), with the tangent
//! carry of the f64 tangent kernel (`tangent::Tangents`: the contraction of the terms' partials
//! with the plan's tangent) on the f32 terms and their partials (`pixel32::FastCtx`'s
//! `FactorsD`: evaluated in f32 on f32 arguments, δ = index − nearest index as in the WGSL
//! kernel, N, a*, the direction, 1/R, ρ). The structure factor is the shared f64 lookup
//! (nearest, or tricubic with `f_tricubic_d`) as in the f32 image kernel. A pixel with a term
//! under the exact-Bragg rule (`terms::EXACT_BRAGG`) is evaluated again by the f64 tangent
//! kernel, as the f32 image kernel does with `pixel64`.

use super::pixel32::FastCtx;
use super::tangent::{check_supported, pixel, TangentImages};
use crate::error::Result;
use crate::pages::Sample;
use crate::plan::Plan;
use crate::tangent::PlanTangent;
use std::sync::atomic::AtomicBool;

/// Per-render context: the plan and its tangent, the f32 terms' context (`pixel32::FastCtx`),
/// the f64 tangent kernel's context (which parameters move what; exact-Bragg pixels).
struct Ctx32<'a> {
    p: &'a Plan,
    t: &'a PlanTangent,
    fast: FastCtx<'a>,
    f64ctx: super::tangent::Ctx<'a>,
    /// The row path (`tangent_row32.rs`), when it applies to the plan.
    rows: Option<super::tangent_row32::RowCtx<'a>>,
}

impl<'a> Ctx32<'a> {
    fn new(p: &'a Plan, t: &'a PlanTangent) -> Self {
        Ctx32 {
            p,
            t,
            fast: FastCtx::for_tangents(p),
            f64ctx: super::tangent::Ctx::new(p, t),
            rows: super::tangent_row32::RowCtx::new(p, t),
        }
    }
}

/// Scratch space of one worker: the per-pixel loop's (both passes of a pixel under the
/// exact-Bragg rule) and the row path's.
struct Scratch {
    px: super::tangent::Scratch,
    rows: Option<super::tangent_row32::RowScratch>,
}

impl Scratch {
    fn new(np: usize, rows: Option<super::tangent_row32::RowScratch>) -> Self {
        Scratch {
            px: super::tangent::Scratch::new(np),
            rows,
        }
    }
}

/// Render the image and one tangent image per parameter of `t` with the f32 terms (the driver of
/// `tangent::render`: rayon over rows, the raster-order tricubic switch-off), the tangent planes
/// in f32 (what the f32 terms carry, at half the memory of f64 planes). `progress` gets the
/// fraction of rows done; `cancel` is read before each row.
pub fn render(
    p: &Plan,
    t: &PlanTangent,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<TangentImages<f32>> {
    render_with_rows(p, t, true, progress, cancel)
}

/// [`render`], optionally without the row path (`tangent_row32.rs`; tests compare the two
/// paths, as `cpu::render_with` does for images).
pub fn render_with_rows(
    p: &Plan,
    t: &PlanTangent,
    rows: bool,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<TangentImages<f32>> {
    check_supported(p)?;
    let mut c = Ctx32::new(p, t);
    if !rows {
        c.rows = None;
    }
    super::tangent::render_with(p, t, &c, progress, cancel)
}

/// The vector–Jacobian product with the f32 terms (the driver of `tangent::vjp`: rows reduced in
/// order, tricubic plans through the full render). Also returns the image.
pub fn vjp(
    p: &Plan,
    t: &PlanTangent,
    weights: &[f64],
    cancel: &AtomicBool,
) -> Result<(Vec<f64>, Vec<f64>)> {
    check_supported(p)?;
    super::tangent::check_weights(p, weights)?;
    super::tangent::vjp_with(p, t, &Ctx32::new(p, t), weights, cancel)
}

impl super::tangent::Kernel for Ctx32<'_> {
    type Scratch = Scratch;
    fn scratch(&self) -> Scratch {
        Scratch::new(self.t.deltas.len(), self.rows.as_ref().map(|r| r.scratch()))
    }
    fn pixel(
        &self,
        f: usize,
        s: usize,
        first: bool,
        interpolate: bool,
        sc: &mut Scratch,
        out: &mut [f64],
    ) -> (f64, bool) {
        pixel(
            &self.fast,
            &self.f64ctx,
            f,
            s,
            first,
            interpolate,
            &mut sc.px,
            out,
        )
    }
    fn row<T: Sample>(
        &self,
        s: usize,
        row: &mut [f64],
        trow: &mut [&mut [T]],
        first: Option<usize>,
        sc: &mut Scratch,
    ) -> bool {
        match (&self.rows, sc.rows.take()) {
            (Some(rc), Some(mut rs)) => {
                row_path(self, rc, s, row, trow, first, sc, &mut rs);
                sc.rows = Some(rs);
                true
            }
            (_, rs) => {
                sc.rows = rs;
                false
            }
        }
    }
}

/// Row `s` on the row path: blocks of [`tangent_row32::BLOCK`] pixels, the tangents
/// into `trow` (parameter j's row at `trow[j]`, f64 or f32); the pixels it
/// flags (exact-Bragg rule) and the pixel of the run's first φ sequence through [`pixel`];
/// pixels the plan does not render are 0.
///
/// [`tangent_row32::BLOCK`]: super::tangent_row32::BLOCK
#[allow(clippy::too_many_arguments)]
fn row_path<T: Sample>(
    c: &Ctx32,
    rc: &super::tangent_row32::RowCtx,
    s: usize,
    row: &mut [f64],
    trow: &mut [&mut [T]],
    first: Option<usize>,
    sc: &mut Scratch,
    rs: &mut super::tangent_row32::RowScratch,
) {
    let p = c.p;
    let fp = p.fpixels;
    let np = c.t.deltas.len();
    let mut out = Vec::new();
    rc.row(s, row, rs, &mut |f0, len, row, exact, rs| {
        for (j, t) in trow.iter_mut().enumerate() {
            for (d, &v) in t[f0..f0 + len].iter_mut().zip(rs.tangent(j)) {
                *d = T::from_f64(v);
            }
        }
        // a block wholly rendered (no mask, inside the ROI and on one panel's run) without the
        // first pixel and flagged ones: nothing more to do
        let row0 = s * fp + f0;
        if p.unmasked_in_roi(f0, len, s)
            && p.panel_at(f0, s).is_some()
            && first.is_none_or(|i| i < row0 || i >= row0 + len)
            && !exact.contains(&true)
        {
            return;
        }
        for j in 0..len {
            let f = f0 + j;
            let idx = s * fp + f;
            if !p.renders(f, s) {
                row[f] = 0.0;
                for t in trow.iter_mut() {
                    t[f] = T::default();
                }
            } else if exact[j] || Some(idx) == first {
                out.resize(np, 0.0);
                row[f] = pixel(
                    &c.fast,
                    &c.f64ctx,
                    f,
                    s,
                    Some(idx) == first,
                    false,
                    &mut sc.px,
                    &mut out,
                )
                .0;
                for (t, &o) in trow.iter_mut().zip(out.iter()) {
                    t[f] = T::from_f64(o);
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::MemFiles;
    use crate::tangent::PlanDelta;
    use crate::vec3::{dot, unitize, V3};

    /// A pixel with a term under the exact-Bragg rule is the f64 tangent kernel's to the bit
    /// (image and tangent); the others are the f32 terms'.
    #[test]
    fn exact_bragg_pixel_takes_the_f64_path() {
        let words = crate::api::split_args(
            "-cell 100 100 100 90 90 90 -lambda 1 -N 5 -default_F 100 -distance 100 -detpixels 16 -oversample 1",
        );
        let mut plan = crate::api::prepare(&words, &MemFiles::default())
            .unwrap()
            .setup
            .plan;
        // turn the orientation so that pixel (5, 7) sits exactly on h = 3
        let (f, s) = (5, 7);
        let (d, _) = unitize(plan.subpixel_position(f, s, 0.0));
        let src = &plan.sources[0];
        let q: V3 = std::array::from_fn(|x| (d[x] - src.incident[x]) / src.lambda);
        let a: V3 = q.map(|x| 3.0 * x / dot(q, q));
        for o in plan
            .orientations
            .iter_mut()
            .chain(&mut plan.orientations_first)
        {
            o.a = a;
        }
        assert!((dot(a, q) - 3.0).abs() < 1e-12);
        // one parameter: the relative scale (its tangent is the image)
        let mut delta = PlanDelta::zero(&plan);
        delta.r_e_sqr_fluence = plan.r_e_sqr_fluence;
        delta.n = [1.0, 0.0, 0.0];
        let t = PlanTangent {
            params: vec![crate::tangent::Param::Scale],
            deltas: vec![delta],
        };
        let cancel = AtomicBool::new(false);
        let r32 = render(&plan, &t, &|_| {}, &cancel).unwrap();
        let r64 = super::super::tangent::render(&plan, &t, &|_| {}, &cancel).unwrap();
        let i = s * plan.fpixels + f;
        assert!(r64.image[i] > 0.0);
        assert_eq!(r32.image[i].to_bits(), r64.image[i].to_bits());
        assert_eq!(
            r32.tangents[i].to_bits(),
            (r64.tangents[i] as f32).to_bits()
        );
        // elsewhere the f32 terms: close, not the same bits
        let differ = (0..r32.image.len())
            .filter(|&j| r32.image[j].to_bits() != r64.image[j].to_bits())
            .count();
        assert!(differ > r32.image.len() / 2, "{differ}");
    }
}
