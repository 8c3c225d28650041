//! The f64 per-pixel kernel (parity mode): the shared loop (`pixel.rs`) with upstream's f64
//! terms (`terms::*_f64`), in upstream's order and association, so images match the C to the
//! bit. With their partial derivatives (`terms::*_f64_d`, [`FactorsD`]) the same terms are the
//! f64 tangent kernel's (`tangent.rs`: the shared loop with the tangent carry).

use super::pixel::{Factors, FactorsD, Image, LatticeTerm};
use super::poll::Poll;
use super::PixelOut;
use crate::plan::{Plan, Shape};
use crate::terms::{
    capture_fraction_f64, capture_fraction_f64_d, lattice_gauss_f64, lattice_gauss_f64_d,
    lattice_round_f64, lattice_round_f64_d, lattice_square_f64, lattice_square_f64_d,
    lattice_tophat_f64, lattice_tophat_f64_d, polarization_f64, polarization_f64_d, shape_r2_f64,
    shape_r2_f64_d, solid_angle_f64, solid_angle_f64_d, PolarFrame,
};
use crate::vec3::V3;

/// The f64 kernel's per-render context: the plan and what is hoisted out of the pixel loop (one
/// polarisation frame per source). Not part of the `Plan` contract; built by the renderer.
pub struct ExactCtx<'a> {
    pub plan: &'a Plan,
    pub frames: Vec<PolarFrame>,
    pixel2: f64,
}

impl<'a> ExactCtx<'a> {
    pub fn new(plan: &'a Plan) -> Self {
        let frames = plan
            .sources
            .iter()
            .map(|s| PolarFrame::new(s.incident, plan.polar_axis))
            .collect();
        ExactCtx {
            plan,
            frames,
            pixel2: plan.pixel * plan.pixel,
        }
    }
}

/// Upstream's F_latt (MODEL §6.3) for the plan's shape.
#[inline(always)]
pub fn lattice_f64(p: &Plan, hkl: [f64; 3], hkl0: [f64; 3]) -> f64 {
    let [h, k, l] = hkl;
    let (dh, dk, dl) = (h - hkl0[0], k - hkl0[1], l - hkl0[2]);
    match p.shape {
        Shape::Square => lattice_square_f64(h, k, l, p.na, p.nb, p.nc),
        Shape::Round => lattice_round_f64(dh, dk, dl, p.na, p.nb, p.nc, p.fudge),
        Shape::Gauss | Shape::Tophat => {
            let r2 = shape_r2_f64(dh, dk, dl, p.a_star, p.b_star, p.c_star, p.na, p.nb, p.nc);
            let nabc = (p.na * p.nb) * p.nc;
            if p.shape == Shape::Gauss {
                lattice_gauss_f64(r2, nabc, p.fudge)
            } else {
                lattice_tophat_f64(r2, nabc, p.fudge)
            }
        }
    }
}

impl Factors for ExactCtx<'_> {
    fn plan(&self) -> &Plan {
        self.plan
    }
    #[inline(always)]
    fn solid_angle(&self, r: f64, close_distance: f64) -> f64 {
        let p = self.plan;
        solid_angle_f64(r, self.pixel2, close_distance, p.point_pixel)
    }
    #[inline(always)]
    fn capture(&self, t: u32, rho: f64) -> f64 {
        capture_fraction_f64(t, self.plan.thickstep, self.plan.mu, rho)
    }
    #[inline(always)]
    fn polar(&self, source: usize, d: V3) -> f64 {
        polarization_f64(self.plan.polar_k, &self.frames[source], d)
    }
    #[inline(always)]
    fn lattice(&self, hkl: [f64; 3], hkl0: [f64; 3], _exact: &mut bool) -> (f64, bool) {
        let f = lattice_f64(self.plan, hkl, hkl0);
        (f, f == 0.0)
    }
}

/// Upstream's f64 terms with their partials (the f64 tangent kernel's terms).
impl FactorsD for ExactCtx<'_> {
    #[inline(always)]
    fn solid_angle_d(&self, r: f64, close_distance: f64) -> (f64, f64, f64) {
        solid_angle_f64_d(r, self.pixel2, close_distance, self.plan.point_pixel)
    }
    #[inline(always)]
    fn capture_d(&self, t: u32, rho: f64) -> (f64, f64) {
        capture_fraction_f64_d(t, self.plan.thickstep, self.plan.mu, rho)
    }
    #[inline(always)]
    fn polar_d(&self, source: usize, d: V3) -> (f64, V3) {
        polarization_f64_d(self.plan.polar_k, &self.frames[source], d)
    }
    #[inline(always)]
    fn lattice_d(&self, hkl: V3, hkl0: V3, _exact: &mut bool) -> LatticeTerm {
        let p = self.plan;
        let [h, k, l] = hkl;
        let (dh, dk, dl) = (h - hkl0[0], k - hkl0[1], l - hkl0[2]);
        let mut fl_star = [[0.0; 3]; 3];
        let (f_latt, fl_hkl, fl_n) = match p.shape {
            Shape::Square => lattice_square_f64_d(h, k, l, p.na, p.nb, p.nc),
            Shape::Round => lattice_round_f64_d(dh, dk, dl, p.na, p.nb, p.nc, p.fudge),
            Shape::Gauss | Shape::Tophat => {
                let (r2, r2_d, r2_n, r2_star) =
                    shape_r2_f64_d(dh, dk, dl, p.a_star, p.b_star, p.c_star, p.na, p.nb, p.nc);
                let nabc = (p.na * p.nb) * p.nc;
                let (f, f_r2, f_nabc) = if p.shape == Shape::Gauss {
                    lattice_gauss_f64_d(r2, nabc, p.fudge)
                } else {
                    lattice_tophat_f64_d(r2, nabc, p.fudge)
                };
                let nab = [p.nb * p.nc, p.na * p.nc, p.na * p.nb];
                for (a, s) in fl_star.iter_mut().zip(r2_star) {
                    *a = s.map(|x| f_r2 * x);
                }
                (
                    f,
                    r2_d.map(|x| f_r2 * x),
                    std::array::from_fn(|a| f_r2 * r2_n[a] + f_nabc * nab[a]),
                )
            }
        };
        (f_latt, fl_hkl, fl_n, fl_star, f_latt == 0.0)
    }
}

/// The values of a pixel's last term, as upstream's `-printout` reports them.
#[derive(Clone, Debug, Default)]
pub struct PixelTrace {
    pub pos: [f64; 3],
    pub stol: f64,
    pub hkl: [f64; 3],
    pub hkl0: [f64; 3],
    pub f_cell: f64,
    pub f_latt: f64,
    pub i_sum: f64,
    pub polar: f64,
    pub omega: f64,
    pub capture: f64,
    pub cell: [[f64; 3]; 3],
    pub value: f32,
}

/// Render one pixel, polling `poll` (None when cancelled). `first_sequence`: this pixel holds
/// the run's first phi sequence (stale-phi rule). `interpolate`: tricubic lookups are on when
/// the pixel starts.
pub fn render_pixel_polled(
    ep: &ExactCtx,
    fpixel: usize,
    spixel: usize,
    first_sequence: bool,
    interpolate: bool,
    poll: &Poll,
) -> Option<PixelOut> {
    super::pixel::render::<ExactCtx, Image, false>(
        ep,
        fpixel,
        spixel,
        first_sequence,
        interpolate,
        poll,
        &mut PixelTrace::default(),
        &mut Image,
    )
}

/// Render one pixel (no cancel).
pub fn render_pixel(
    ep: &ExactCtx,
    fpixel: usize,
    spixel: usize,
    first_sequence: bool,
    interpolate: bool,
) -> PixelOut {
    render_pixel_polled(
        ep,
        fpixel,
        spixel,
        first_sequence,
        interpolate,
        &Poll::none(),
    )
    .expect("a render without a cancel flag is never cancelled")
}

/// `render_pixel` that also records the last term (`-printout`).
pub fn trace_pixel(
    ep: &ExactCtx,
    fpixel: usize,
    spixel: usize,
    first_sequence: bool,
    interpolate: bool,
) -> PixelTrace {
    let mut t = PixelTrace::default();
    let out = super::pixel::render::<ExactCtx, Image, true>(
        ep,
        fpixel,
        spixel,
        first_sequence,
        interpolate,
        &Poll::none(),
        &mut t,
        &mut Image,
    )
    .expect("a render without a cancel flag is never cancelled");
    t.value = out.value;
    t
}
