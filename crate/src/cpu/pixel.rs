//! The per-pixel loop shared by both CPU precisions.

use super::factors::{f_nearest, f_tricubic, outside_interpolation_range};
use super::pixel64::PixelTrace;
use super::PixelOut;
use crate::plan::Plan;
use crate::vec3::{dot, mag, unitize, V3};

/// What distinguishes the f64 and f32 kernels inside the shared loop.
pub trait Terms {
    fn plan(&self) -> &Plan;
    /// Kahn polarisation factor for source `source` and diffracted direction `d`.
    fn polar(&self, source: usize, d: V3) -> f64;
    /// Lattice factor F_latt at (h,k,l) with nearest indices (h0,k0,l0).
    fn lattice(&self, h: f64, k: f64, l: f64, h0: f64, k0: f64, l0: f64) -> f64;
    /// Sum of F_cell²·F_latt² over the whole orientation table for one q, when the kernel has a
    /// faster way than the term loop (and no running-sum flag is set); None otherwise.
    fn all_orientations(
        &self,
        _first: bool,
        _q: V3,
        _interp: &mut bool,
        _triggered: &mut bool,
    ) -> Option<f64> {
        None
    }
}

/// Upstream's per-pixel loop (MODEL §6.2): sensor layers, sub-pixels, sources, phi steps,
/// mosaic domains, with the first-value / last-value factor semantics (§6.5) and the
/// running-sum flags. Geometry is upstream's f64 chain for both precisions, so Miller indices
/// are upstream's to the bit; the kernel `K` supplies the polarisation and lattice factors (and
/// optionally a faster sum over all orientations).
#[inline(always)]
pub fn render<K: Terms, const TRACE: bool>(
    ep: &K,
    fpixel: usize,
    spixel: usize,
    first_sequence: bool,
    interpolate: bool,
    trace: &mut PixelTrace,
) -> PixelOut {
    let p = ep.plan();
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
                        polar = ep.polar(si, d);
                    }
                    let first_table = first_seq;
                    first_seq = false;
                    if !TRACE {
                        if let Some(s) =
                            ep.all_orientations(first_table, q, &mut interp, &mut triggered)
                        {
                            i_sum += s;
                            continue;
                        }
                    }
                    let table = if first_table {
                        &p.orientations_first
                    } else {
                        &p.orientations
                    };
                    for o in table {
                        let h = dot(o.a, q);
                        let k = dot(o.b, q);
                        let l = dot(o.c, q);
                        let h0 = (h - 0.5).ceil();
                        let k0 = (k - 0.5).ceil();
                        let l0 = (l - 0.5).ceil();
                        let f_latt = ep.lattice(h, k, l, h0, k0, l0);
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
