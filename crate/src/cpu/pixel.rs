//! The per-pixel loop shared by both CPU precisions and both carries (MODEL §6.2, §10): upstream's
//! loop order and factor semantics, with the terms supplied by the kernel (`pixel64`: upstream's
//! f64 forms, `pixel32`: the fast forms, all from `terms.rs`; [`Factors`], and with their partial
//! derivatives [`FactorsD`]) and what the loop carries besides the value supplied by a [`Carry`]:
//! nothing for the image ([`Image`], whose hooks are empty and compile away), or each pixel's
//! tangents (`tangent::Tangents`: the terms' partials contracted with the plan's tangent). The
//! image kernels (`pixel64`, `pixel32`) and the tangent kernels (`tangent`, `tangent32`) are this
//! one loop.

use super::pixel64::PixelTrace;
use super::poll::{Poll, POLL_TERMS};
use super::PixelOut;
use crate::plan::{Orientation, Plan};
use crate::terms::{f_nearest, f_tricubic_at, index_ok, stencil_leaves_table};
use crate::vec3::{dot, mag, unitize, V3};

/// What distinguishes the f64 and f32 kernels inside the shared loop.
pub trait Factors {
    fn plan(&self) -> &Plan;
    /// Solid angle at distance `r` (m) on a panel at `close_distance` (m).
    fn solid_angle(&self, r: f64, close_distance: f64) -> f64;
    /// Capture fraction of sensor layer `t` for a ray with ρ = d·o.
    fn capture(&self, t: u32, rho: f64) -> f64;
    /// Kahn polarisation factor for source `source` and diffracted direction `d`.
    fn polar(&self, source: usize, d: V3) -> f64;
    /// Lattice factor F_latt at (h,k,l) with upstream's nearest indices (h0,k0,l0), and whether
    /// upstream skips the term (its F_latt is exactly 0). Sets `exact` where the kernel cannot
    /// reproduce upstream's value (the exact-Bragg rule, `terms::EXACT_BRAGG`).
    fn lattice(&self, hkl: [f64; 3], hkl0: [f64; 3], exact: &mut bool) -> (f64, bool);
    /// Sum of F_cell²·F_latt² over the whole orientation table for one q, when the kernel has a
    /// faster way than the term loop (and no running-sum flag is set); None otherwise. Counts
    /// its terms on `poll` (the caller checks for cancel afterwards).
    fn all_orientations(
        &self,
        _first: bool,
        _q: V3,
        _st: &mut PixelState,
        _poll: &Poll,
    ) -> Option<f64> {
        None
    }
}

/// A lattice factor and its partials: by (h, k, l), by N, by a*, b*, c*; and whether upstream
/// skips the term (its F_latt is 0).
pub type LatticeTerm = (f64, V3, V3, [V3; 3], bool);

/// The terms with their partial derivatives (MODEL §10.5), for the tangent carry: `pixel64`'s
/// f64 forms (`*_f64_d`), `pixel32`'s f32 forms and their f32 derivatives (the GPU's), returned
/// in f64 (an f32 value widened exactly, so the f64 sums are those of either kernel's terms).
pub trait FactorsD: Factors + Sync {
    /// Solid angle at distance `r` (m) on a panel at `close_distance` (m): Ω, ∂Ω/∂r,
    /// ∂Ω/∂close_distance.
    fn solid_angle_d(&self, r: f64, close_distance: f64) -> (f64, f64, f64);
    /// Capture fraction of layer `t` for ρ = d·o, and its derivative by ρ.
    fn capture_d(&self, t: u32, rho: f64) -> (f64, f64);
    /// Kahn polarisation factor of source `source` for the direction `d`, and its gradient.
    fn polar_d(&self, source: usize, d: V3) -> (f64, V3);
    /// F_latt at (h, k, l) with upstream's nearest indices (h0, k0, l0) and its partials; sets
    /// `exact` as [`Factors::lattice`] does.
    fn lattice_d(&self, hkl: V3, hkl0: V3, exact: &mut bool) -> LatticeTerm;
}

/// What the loop carries besides the pixel's value: a hook at each step of the loop, each
/// returning the factor the loop multiplies in. [`Image`] carries nothing (every hook is the
/// plain term, so the image loop is what it would be without carries); the tangent kernels'
/// carry (`tangent::Tangents`) evaluates each term with its partials and contracts them.
pub trait Carry<K: Factors> {
    /// The loop carries tangents: it takes no whole-table shortcut
    /// ([`Factors::all_orientations`]), and a term under the exact-Bragg rule ends the pixel
    /// (flagged `exact`: the caller takes the f64 kernel's).
    const TANGENTS: bool;
    /// The pixel lies on no panel (it records nothing).
    #[inline(always)]
    fn no_panel(&mut self) {}
    /// A sub-pixel of stored coordinates (`sf`, `ss`) at depth `odet`, its direction `d` and
    /// distance `r`.
    #[inline(always)]
    fn subpixel(&mut self, _sf: usize, _ss: usize, _odet: f64, _d: V3, _r: f64) {}
    #[inline(always)]
    fn solid_angle(&mut self, k: &K, r: f64, close_distance: f64) -> f64 {
        k.solid_angle(r, close_distance)
    }
    /// Capture fraction of layer `t` for the direction `d` on a panel of normal `normal`.
    #[inline(always)]
    fn capture(&mut self, k: &K, t: u32, d: V3, normal: V3) -> f64 {
        k.capture(t, dot(d, normal))
    }
    #[inline(always)]
    fn polar(&mut self, k: &K, source: usize, d: V3) -> f64 {
        k.polar(source, d)
    }
    /// Before the terms of one (sub-pixel, source).
    #[inline(always)]
    fn source_start(&mut self) {}
    #[inline(always)]
    fn lattice(&mut self, k: &K, hkl: V3, hkl0: V3, exact: &mut bool) -> (f64, bool) {
        k.lattice(hkl, hkl0, exact)
    }
    #[inline(always)]
    fn structure_factor(&mut self, p: &Plan, hkl: V3, hkl0: V3, st: &mut PixelState) -> f64 {
        structure_factor(p, hkl, hkl0, st)
    }
    /// A term T = F_cell²·F_latt² of orientation `o` (index `oi` of the first φ sequence's table
    /// when `first_table`, else of the steady one's) added to the pixel's sum.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn term(
        &mut self,
        _o: &Orientation,
        _oi: usize,
        _first_table: bool,
        _q: V3,
        _hkl: V3,
        _hkl0: V3,
        _f_cell: f64,
        _f_latt: f64,
    ) {
    }
    /// After the terms of one (sub-pixel, source) of wavelength `lambda` and scattering vector
    /// `q`.
    #[inline(always)]
    fn source_end(&mut self, _source: usize, _q: V3, _lambda: f64, _first_table: bool) {}
    /// The pixel's sum `i_sum`, its last factors and its value `value`.
    #[inline(always)]
    fn finish(&mut self, _i_sum: f64, _capture: f64, _polar: f64, _omega: f64, _value: f64) {}
}

/// The image's carry: nothing.
pub struct Image;

impl<K: Factors> Carry<K> for Image {
    const TANGENTS: bool = false;
}

/// The state a pixel carries from term to term.
#[derive(Clone, Copy, Debug)]
pub struct PixelState {
    /// Tricubic lookups are on.
    pub interp: bool,
    /// A tricubic stencil left the table in this pixel (interpolation switched off there).
    pub triggered: bool,
    /// A term needs upstream's f64 evaluation (exact-Bragg rule).
    pub exact: bool,
}

/// F_cell at (h,k,l) with upstream's nearest indices (h0,k0,l0) (MODEL §6.4): tricubic while
/// the pixel's lookups are on, switching them off (for the rest of the run, see `cpu::render`)
/// at the first stencil that leaves the table; nearest otherwise, that term included.
#[inline(always)]
pub fn structure_factor(p: &Plan, hkl: [f64; 3], hkl0: [f64; 3], st: &mut PixelState) -> f64 {
    let [h, k, l] = hkl;
    if st.interp && stencil_leaves_table(&p.hkl, h, k, l) {
        st.interp = false;
        st.triggered = true;
    }
    if st.interp {
        f_tricubic_at(&p.hkl, h, k, l)
    } else {
        f_nearest(&p.hkl, p.default_f, hkl0[0], hkl0[1], hkl0[2])
    }
}

/// Upstream's per-pixel loop (MODEL §6.2): sensor layers, sub-pixels, sources, phi steps,
/// mosaic domains, with the first-value / last-value factor semantics (§6.5) and the
/// running-sum flags. Geometry is upstream's f64 chain for both precisions, so Miller indices
/// are upstream's to the bit; the kernel `K` supplies the factors (and optionally a faster sum
/// over all orientations), the carry `C` what is carried besides the value. A term whose index
/// fails `terms::index_ok` (NaN, inf, huge) is dropped. A term under the exact-Bragg rule (a
/// fast kernel's `Factors::lattice` sets `exact`) does not stop the image's loop: the pixel
/// comes back flagged `exact` (its value is not upstream's; `api` renders it again with the f64
/// kernel) with its tricubic switch-off trigger taken over every term, as the GPU kernel takes
/// it; a tangent carry stops there (flagged `exact`). Returns None when the render was
/// cancelled (checked every `POLL_TERMS` terms).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn render<K: Factors, C: Carry<K>, const TRACE: bool>(
    ep: &K,
    fpixel: usize,
    spixel: usize,
    first_sequence: bool,
    interpolate: bool,
    poll: &Poll,
    trace: &mut PixelTrace,
    carry: &mut C,
) -> Option<PixelOut> {
    let p = ep.plan();
    let n = p.oversample as usize;
    let Some(panel) = p.panel_at(fpixel, spixel).map(|i| &p.panels[i]) else {
        // a pixel of no panel (a gap between panels) records nothing
        carry.no_panel();
        return Some(PixelOut {
            value: 0.0,
            triggered: false,
            exact: false,
        });
    };
    let mut first_seq = first_sequence;
    let mut st = PixelState {
        interp: interpolate,
        triggered: false,
        exact: false,
    };
    let mut i_sum = p.i_bg;
    let mut polar = if p.nopolar { 1.0 } else { 0.0 };
    let mut omega = 0.0;
    let mut capture = 1.0;
    for t in 0..p.thicksteps {
        let odet = t as f64 * p.thickstep;
        capture = if p.thick == 0.0 { 1.0 } else { 0.0 };
        for subs in 0..n {
            for subf in 0..n {
                let (sf, ss) = (fpixel * n + subf, spixel * n + subs);
                let pos = p.panel_subpixel_position(panel, sf, ss, odet);
                let (d, r) = unitize(pos);
                carry.subpixel(sf, ss, odet, d, r);
                if omega == 0.0 || p.oversample_omega {
                    omega = carry.solid_angle(ep, r, panel.close_distance);
                }
                if capture == 0.0 || p.oversample_thick {
                    capture = carry.capture(ep, t, d, panel.odet);
                }
                for (si, src) in p.sources.iter().enumerate() {
                    let i = src.incident;
                    let lambda = src.lambda;
                    let q = [
                        (d[0] - i[0]) / lambda,
                        (d[1] - i[1]) / lambda,
                        (d[2] - i[2]) / lambda,
                    ];
                    let table = if first_seq {
                        &p.orientations_first
                    } else {
                        &p.orientations
                    };
                    if p.dmin > 0.0 {
                        let stol = 0.5 * mag(q);
                        if stol > 0.0 && p.dmin > 0.5 / stol {
                            if poll.tick(table.len() as u64) {
                                return None;
                            }
                            continue;
                        }
                    }
                    if polar == 0.0 || p.oversample_polar {
                        polar = carry.polar(ep, si, d);
                    }
                    let first_table = first_seq;
                    first_seq = false;
                    if !TRACE && !C::TANGENTS {
                        if let Some(s) = ep.all_orientations(first_table, q, &mut st, poll) {
                            if poll.cancelled() {
                                return None;
                            }
                            i_sum += s;
                            continue;
                        }
                    }
                    carry.source_start();
                    for (ci, chunk) in table.chunks(POLL_TERMS).enumerate() {
                        for (j, o) in chunk.iter().enumerate() {
                            let h = dot(o.a, q);
                            let k = dot(o.b, q);
                            let l = dot(o.c, q);
                            if !(index_ok(h) & index_ok(k) & index_ok(l)) {
                                continue;
                            }
                            let h0 = (h - 0.5).ceil();
                            let k0 = (k - 0.5).ceil();
                            let l0 = (l - 0.5).ceil();
                            let (f_latt, zero) =
                                carry.lattice(ep, [h, k, l], [h0, k0, l0], &mut st.exact);
                            if C::TANGENTS && st.exact {
                                return Some(PixelOut {
                                    value: 0.0,
                                    triggered: st.triggered,
                                    exact: true,
                                });
                            }
                            if zero && !p.water {
                                continue;
                            }
                            let f_cell =
                                carry.structure_factor(p, [h, k, l], [h0, k0, l0], &mut st);
                            i_sum += ((f_cell * f_cell) * f_latt) * f_latt;
                            carry.term(
                                o,
                                ci * POLL_TERMS + j,
                                first_table,
                                q,
                                [h, k, l],
                                [h0, k0, l0],
                                f_cell,
                                f_latt,
                            );
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
                        if poll.tick(chunk.len() as u64) {
                            return None;
                        }
                    }
                    carry.source_end(si, q, lambda, first_table);
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
    carry.finish(i_sum, capture, polar, omega, val);
    Some(PixelOut {
        value: val as f32,
        triggered: st.triggered,
        exact: st.exact,
    })
}
