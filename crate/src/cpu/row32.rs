//! The fast kernel's main path: blocks of pixels along a row, with the loops turned inside out
//! so that the innermost loop runs over pixels (branch-free, vectorised; AVX2 or AVX-512 when the CPU
//! has it, `simd`). Same terms (`terms.rs`: `lattice_square`, `polarization`, `solid_angle`,
//! `capture_fraction`, `f_nearest`), factor semantics and rules as `pixel32`; used for the square
//! lattice without the running-sum flags, curved detector or tricubic lookups. Pixels under the
//! exact-Bragg rule are flagged for the f64 kernel; the pixel holding the run's first phi
//! sequence is redone by the per-pixel kernel.

use super::pixel32::FastCtx;
use super::poll::{Poll, POLL_TERMS};
use crate::plan::{Interpolation, Panel, Plan, Shape};
use crate::terms::{
    capture_fraction, f_nearest, index_ok, is_exact_bragg, lattice_square, polarization,
    round_even_f64, solid_angle,
};

/// Pixels per block: the per-pixel arrays stay in L1.
pub const BLOCK: usize = 64;

/// True when `render_block` applies to this plan.
pub fn applies(p: &Plan) -> bool {
    p.shape == Shape::Square
        && !p.curved
        && !p.oversample_thick
        && !p.oversample_polar
        && !p.oversample_omega
        && p.interpolation == Interpolation::Nearest
}

/// The diffracted directions and 1/R (`d` = [dx, dy, dz, 1/R]) of the first `len` lanes of a
/// block of one row's sub-pixels: lane j at stored fast coordinate `base + j·step`, the row at
/// slow offset `sdet` (m), depth `odet`, on panel `pan` of sub-pixel pitch `sub`; upstream's f64
/// position and association, for the image and the tangent row kernels (`tangent_row32.rs`)
/// alike. The sub-pixel index goes i32 → f64 (a vector conversion; usize → f64 is not).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn directions<const B: usize>(
    pan: &Panel,
    sub: f64,
    sdet: f64,
    odet: f64,
    base: i32,
    step: i32,
    len: usize,
    d: [&mut [f64; B]; 4],
) {
    let [dx, dy, dz, inv_r] = d;
    for j in 0..len.min(B) {
        let fdet = sub * ((base + j as i32 * step) as f64) + sub / 2.0;
        let x = ((fdet * pan.fdet[0] + sdet * pan.sdet[0]) + odet * pan.odet[0]) + pan.pix0[0];
        let y = ((fdet * pan.fdet[1] + sdet * pan.sdet[1]) + odet * pan.odet[1]) + pan.pix0[1];
        let z = ((fdet * pan.fdet[2] + sdet * pan.sdet[2]) + odet * pan.odet[2]) + pan.pix0[2];
        let ir = 1.0 / (x * x + y * y + z * z).sqrt();
        inv_r[j] = ir;
        dx[j] = x * ir;
        dy[j] = y * ir;
        dz[j] = z * ir;
    }
}

/// Renders a block; returns false when the render was cancelled.
pub type BlockFn =
    fn(&FastCtx, &Panel, usize, usize, usize, &mut [f32], &mut [bool], &Poll) -> bool;

simd_versions!(
    /// The row-block kernel for this CPU.
    pub fn select => block_body(fc: &FastCtx, pan: &Panel, s: usize, f0: usize, len: usize, out: &mut [f32], exact_out: &mut [bool], poll: &Poll) -> bool
);

/// Render pixels `f0..f0+len` of row `s` (all on panel `pan`) into `out[..len]`; `exact_out[j]` is set for pixels
/// that fall under the exact-Bragg rule (to be redone by `pixel64`). Returns false when the
/// render was cancelled (the cancel flag is read every `POLL_TERMS` orientations' worth of
/// terms).
#[inline(always)]
fn block_body(
    fc: &FastCtx,
    pan: &Panel,
    s: usize,
    f0: usize,
    len: usize,
    out: &mut [f32],
    exact_out: &mut [bool],
    poll: &Poll,
) -> bool {
    let p = fc.plan;
    let n = p.oversample as usize;
    let sub = p.pixel / n as f64;
    let len = len.min(BLOCK);
    let mut isum = [p.i_bg; BLOCK];
    let mut polar = [if p.nopolar { 1.0f64 } else { 0.0 }; BLOCK];
    let mut omega = [0.0f64; BLOCK];
    let mut capture = [1.0f64; BLOCK];
    let mut exact = [false; BLOCK];
    let (mut dx, mut dy, mut dz) = ([0.0f64; BLOCK], [0.0f64; BLOCK], [0.0f64; BLOCK]);
    let mut rr = [0.0f64; BLOCK];
    let (mut qx, mut qy, mut qz) = ([0.0f64; BLOCK], [0.0f64; BLOCK], [0.0f64; BLOCK]);
    let mut pass = [1.0f32; BLOCK];
    let mut fl2 = [0.0f32; BLOCK];
    let mut acc = [0.0f64; BLOCK];
    let constant_f = p.hkl.hkls == 0;
    let f2_const = p.default_f * p.default_f;
    let use_axis = fc.use_axis();
    let (na, nb, nc) = (fc.na, fc.nb, fc.nc);
    let soa = &fc.soa;
    // orientations per look at the cancel flag (at least one)
    let per_poll = (POLL_TERMS / len.max(1)).max(1);
    let close = pan.close_distance as f32;
    for t in 0..p.thicksteps as usize {
        let odet = t as f64 * p.thickstep;
        capture[..len].fill(if p.thick == 0.0 { 1.0 } else { 0.0 });
        for subs in 0..n {
            let sdet = sub * ((s * n + subs) as f64) + sub / 2.0;
            for subf in 0..n {
                // diffracted directions, solid angle
                let base = (f0 * n + subf) as i32;
                let d = [&mut dx, &mut dy, &mut dz, &mut rr];
                directions(pan, sub, sdet, odet, base, n as i32, len, d);
                for j in 0..len {
                    let om = solid_angle(rr[j] as f32, fc.pixel2, close, p.point_pixel);
                    omega[j] = if omega[j] == 0.0 { om as f64 } else { omega[j] };
                }
                if capture[0] == 0.0 {
                    // first sub-pixel of a layer: absorption in this layer (scalar: exp)
                    for j in 0..len {
                        let rho = dx[j] * pan.odet[0] + dy[j] * pan.odet[1] + dz[j] * pan.odet[2];
                        capture[j] = capture_fraction(t as f32, fc.mu_step, rho as f32) as f64;
                    }
                }
                for src in &fc.sources {
                    let i = src.incident;
                    let il = src.inv_lambda;
                    for j in 0..len {
                        qx[j] = (dx[j] - i[0]) * il;
                        qy[j] = (dy[j] - i[1]) * il;
                        qz[j] = (dz[j] - i[2]) * il;
                        let q2 = qx[j] * qx[j] + qy[j] * qy[j] + qz[j] * qz[j];
                        let ok = !(fc.inv_dmin2 > 0.0 && q2 > fc.inv_dmin2);
                        pass[j] = if ok { 1.0 } else { 0.0 };
                        // Kahn factor, first accepted source of the pixel
                        let d = [dx[j] as f32, dy[j] as f32, dz[j] as f32];
                        let pol = polarization(fc.polar_k, src.i, d, src.e_in, src.b_in) as f64;
                        polar[j] = if polar[j] == 0.0 && ok { pol } else { polar[j] };
                    }
                    acc[..len].fill(0.0);
                    let mut o0 = 0;
                    while o0 < soa.len {
                        let o1 = (o0 + per_poll).min(soa.len);
                        for o in o0..o1 {
                            let c = &soa.comp;
                            let m = [
                                c[0][o], c[1][o], c[2][o], c[3][o], c[4][o], c[5][o], c[6][o],
                                c[7][o], c[8][o],
                            ];
                            for j in 0..len {
                                let mut d = [0f32; 3];
                                let mut ok = true;
                                let mut ex = false;
                                for a in 0..3 {
                                    let h = (m[3 * a] * qx[j] + m[3 * a + 1] * qy[j])
                                        + m[3 * a + 2] * qz[j];
                                    let r = round_even_f64(h);
                                    let delta = h - r;
                                    ok &= index_ok(h);
                                    ex |= use_axis[a] & is_exact_bragg(delta, r);
                                    d[a] = delta as f32;
                                }
                                exact[j] |= ex & ok & (pass[j] != 0.0);
                                let g = lattice_square(d[0], d[1], d[2], na, nb, nc);
                                fl2[j] = if ok { g * g * pass[j] } else { 0.0 };
                            }
                            if constant_f {
                                for j in 0..len {
                                    acc[j] += fl2[j] as f64;
                                }
                            } else {
                                for j in 0..len {
                                    if fl2[j] == 0.0 && !p.water {
                                        continue;
                                    }
                                    let hkl = [0, 1, 2].map(|a| {
                                        (m[3 * a] * qx[j] + m[3 * a + 1] * qy[j])
                                            + m[3 * a + 2] * qz[j]
                                    });
                                    let f = f_nearest(
                                        &p.hkl,
                                        p.default_f,
                                        (hkl[0] - 0.5).ceil(),
                                        (hkl[1] - 0.5).ceil(),
                                        (hkl[2] - 0.5).ceil(),
                                    );
                                    acc[j] += f * f * fl2[j] as f64;
                                }
                            }
                        }
                        if poll.tick(((o1 - o0) * len) as u64) {
                            return false;
                        }
                        o0 = o1;
                    }
                    let scale_f = if constant_f { f2_const } else { 1.0 };
                    for j in 0..len {
                        isum[j] += acc[j] * scale_f;
                    }
                }
            }
        }
    }
    for j in 0..len {
        let v = p.r_e_sqr_fluence * isum[j] / p.steps as f64 * capture[j] * polar[j] * omega[j];
        out[j] = v as f32;
        exact_out[j] = exact[j];
    }
    true
}
