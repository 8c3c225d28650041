//! The f64 per-pixel kernel (parity mode): upstream's loop (MODEL §6.2) term by term, in the
//! same order and association, so images match the C to rounding.

use super::factors::{lattice_f64, polarization_factor, PolarFrame};
use super::pixel::Terms;
use super::PixelOut;
use crate::plan::Plan;
use crate::vec3::V3;

/// Per-plan constants of the f64 kernel.
pub struct ExactPlan<'a> {
    pub plan: &'a Plan,
    pub frames: Vec<PolarFrame>,
}

impl<'a> ExactPlan<'a> {
    pub fn new(plan: &'a Plan) -> Self {
        let frames = plan
            .sources
            .iter()
            .map(|s| PolarFrame::new(s.incident, plan.polar_axis))
            .collect();
        ExactPlan { plan, frames }
    }
}

impl Terms for ExactPlan<'_> {
    fn plan(&self) -> &Plan {
        self.plan
    }
    #[inline(always)]
    fn polar(&self, source: usize, d: V3) -> f64 {
        polarization_factor(self.plan.polar_k, &self.frames[source], d)
    }
    #[inline(always)]
    fn lattice(&self, h: f64, k: f64, l: f64, h0: f64, k0: f64, l0: f64) -> f64 {
        lattice_f64(self.plan, h, k, l, h0, k0, l0)
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

/// Render one pixel. `first_sequence`: this pixel holds the run's first phi sequence (stale-phi
/// rule). `interpolate`: tricubic lookups are on when the pixel starts.
pub fn render_pixel(
    ep: &ExactPlan,
    fpixel: usize,
    spixel: usize,
    first_sequence: bool,
    interpolate: bool,
) -> PixelOut {
    super::pixel::render::<ExactPlan, false>(
        ep,
        fpixel,
        spixel,
        first_sequence,
        interpolate,
        &mut PixelTrace::default(),
    )
}

/// `render_pixel` that also records the last term (`-printout`).
pub fn trace_pixel(
    ep: &ExactPlan,
    fpixel: usize,
    spixel: usize,
    first_sequence: bool,
    interpolate: bool,
) -> PixelTrace {
    let mut t = PixelTrace::default();
    let out = super::pixel::render::<ExactPlan, true>(
        ep,
        fpixel,
        spixel,
        first_sequence,
        interpolate,
        &mut t,
    );
    t.value = out.value;
    t
}
