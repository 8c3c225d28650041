//! The f64 per-pixel kernel (parity mode): upstream's loop (MODEL §6.2) term by term, in the
//! same order and association, so images match the C to rounding.

use super::factors::{
    f_nearest, f_tricubic, lattice_f64, outside_interpolation_range, polarization_factor,
    PolarFrame,
};
use super::PixelOut;
use crate::plan::Plan;
use crate::vec3::{dot, mag, unitize};

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
    render_pixel_impl::<false>(
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
    let out = render_pixel_impl::<true>(ep, fpixel, spixel, first_sequence, interpolate, &mut t);
    t.value = out.value;
    t
}

#[inline(always)]
fn render_pixel_impl<const TRACE: bool>(
    ep: &ExactPlan,
    fpixel: usize,
    spixel: usize,
    first_sequence: bool,
    interpolate: bool,
    trace: &mut PixelTrace,
) -> PixelOut {
    let p = ep.plan;
    let n = p.oversample as usize;
    let mut first_seq = first_sequence;
    let mut interp = interpolate;
    let mut triggered = false;
    let mut i_sum = p.i_bg;
    let mut polar = if p.nopolar { 1.0 } else { 0.0 };
    let mut omega = 0.0;
    let mut capture = 1.0;
    let px2 = p.pixel * p.pixel;
    for t in 0..p.thicksteps {
        let odet = t as f64 * p.thickstep;
        capture = if p.thick == 0.0 { 1.0 } else { 0.0 };
        for subs in 0..n {
            for subf in 0..n {
                let pos = p.subpixel_position(fpixel * n + subf, spixel * n + subs, odet);
                let (d, r) = unitize(pos);
                if omega == 0.0 || p.oversample_omega {
                    omega = if p.point_pixel {
                        (1.0 / r) / r
                    } else {
                        ((px2 / r) / r) * p.close_distance / r
                    };
                }
                if capture == 0.0 || p.oversample_thick {
                    let rho = dot(d, p.odet);
                    let ti = t as i64;
                    capture = ((((-ti) as f64 * p.thickstep) * p.mu) / rho).exp()
                        - ((((-(ti + 1)) as f64 * p.thickstep) * p.mu) / rho).exp();
                }
                for (si, src) in p.sources.iter().enumerate() {
                    let i = src.incident;
                    let lambda = src.lambda;
                    let q = [
                        (d[0] - i[0]) / lambda,
                        (d[1] - i[1]) / lambda,
                        (d[2] - i[2]) / lambda,
                    ];
                    if p.dmin > 0.0 {
                        let stol = 0.5 * mag(q);
                        if stol > 0.0 && p.dmin > 0.5 / stol {
                            continue;
                        }
                    }
                    if polar == 0.0 || p.oversample_polar {
                        polar = polarization_factor(p.polar_k, &ep.frames[si], d);
                    }
                    let table = if first_seq {
                        &p.orientations_first
                    } else {
                        &p.orientations
                    };
                    first_seq = false;
                    for o in table {
                        let h = dot(o.a, q);
                        let k = dot(o.b, q);
                        let l = dot(o.c, q);
                        let h0 = (h - 0.5).ceil();
                        let k0 = (k - 0.5).ceil();
                        let l0 = (l - 0.5).ceil();
                        let f_latt = lattice_f64(p, h, k, l, h0, k0, l0);
                        if f_latt == 0.0 && !p.water {
                            continue;
                        }
                        if interp && outside_interpolation_range(&p.hkl, h, k, l) {
                            interp = false;
                            triggered = true;
                        }
                        let f_cell = if interp {
                            f_tricubic(&p.hkl, h, k, l)
                        } else {
                            f_nearest(p, h0 as i64, k0 as i64, l0 as i64)
                        };
                        i_sum += ((f_cell * f_cell) * f_latt) * f_latt;
                        if TRACE {
                            trace.pos = pos;
                            trace.stol = 0.5 * mag(q);
                            trace.hkl = [h, k, l];
                            trace.hkl0 = [h0, k0, l0];
                            trace.f_cell = f_cell;
                            trace.f_latt = f_latt;
                            trace.cell = [o.a, o.b, o.c];
                        }
                        if p.oversample_thick {
                            i_sum *= capture;
                        }
                        if p.oversample_polar {
                            i_sum *= polar;
                        }
                        if p.oversample_omega {
                            i_sum *= omega;
                        }
                    }
                }
            }
        }
    }
    if TRACE {
        trace.i_sum = i_sum;
        trace.polar = polar;
        trace.omega = omega;
        trace.capture = capture;
    }
    let mut val = (p.r_e_sqr_fluence * i_sum) / p.steps as f64;
    if !p.oversample_thick {
        val *= capture;
    }
    if !p.oversample_polar {
        val *= polar;
    }
    if !p.oversample_omega {
        val *= omega;
    }
    PixelOut {
        value: val as f32,
        triggered,
    }
}
