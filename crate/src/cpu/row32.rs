//! The fast kernel's main path: blocks of pixels along a row, with the loops turned inside out
//! so that the innermost loop runs over pixels (branch-free, vectorised; AVX2 when the CPU has
//! it). Same terms, factor semantics and delta-form lattice factor as `pixel32`; used for the
//! square lattice without the running-sum flags, curved detector or tricubic lookups. Pixels
//! that need upstream's exact-Bragg evaluation (or hold the run's first phi sequence) are
//! flagged and re-rendered one by one with `pixel32`.

use super::factors::f_nearest;
use super::pixel32::{FastPlan, EXACT_BRAGG};
use crate::plan::{Interpolation, Plan, Shape};

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

pub type BlockFn = fn(&FastPlan, usize, usize, usize, &mut [f32], &mut [bool]);

avx2_versions!(
    /// The row-block kernel for this CPU.
    pub fn select => block_body(fp: &FastPlan, s: usize, f0: usize, len: usize, out: &mut [f32], rescan: &mut [bool])
);

#[inline(always)]
fn sinpi(x: f32) -> f32 {
    super::factors::sinpi_reduced(x)
}

/// Render pixels `f0..f0+len` of row `s` into `out[..len]`; `rescan[j]` is set for pixels that
/// must be redone by the per-pixel kernel.
#[inline(always)]
fn block_body(
    fp: &FastPlan,
    s: usize,
    f0: usize,
    len: usize,
    out: &mut [f32],
    rescan: &mut [bool],
) {
    const MAGIC: f64 = 6755399441055744.0; // 1.5 * 2^52
    const MAGIC32: f32 = 12582912.0; // 1.5 * 2^23
    let p = fp.plan;
    let n = p.oversample as usize;
    let sub = p.pixel / n as f64;
    let px2 = p.pixel * p.pixel;
    let len = len.min(BLOCK);
    let mut isum = [p.i_bg; BLOCK];
    let mut polar = [if p.nopolar { 1.0f64 } else { 0.0 }; BLOCK];
    let mut omega = [0.0f64; BLOCK];
    let mut capture = [1.0f64; BLOCK];
    let mut exact = [false; BLOCK];
    let (mut dx, mut dy, mut dz) = ([0.0f64; BLOCK], [0.0f64; BLOCK], [0.0f64; BLOCK]);
    let (mut qx, mut qy, mut qz) = ([0.0f64; BLOCK], [0.0f64; BLOCK], [0.0f64; BLOCK]);
    let mut pass = [1.0f32; BLOCK];
    let mut fl2 = [0.0f32; BLOCK];
    let mut acc = [0.0f64; BLOCK];
    let constant_f = p.hkl.hkls == 0;
    let f2_const = p.default_f * p.default_f;
    let use_axis = [p.na > 1.0, p.nb > 1.0, p.nc > 1.0];
    let ns = [fp.na, fp.nb, fp.nc];
    let soa = &fp.soa;
    for t in 0..p.thicksteps as usize {
        let odet = t as f64 * p.thickstep;
        capture[..len].fill(if p.thick == 0.0 { 1.0 } else { 0.0 });
        for subs in 0..n {
            let sdet = sub * ((s * n + subs) as f64) + sub / 2.0;
            for subf in 0..n {
                // diffracted directions, solid angle
                // sub-pixel index as i32 -> f64 (a vector conversion; usize -> f64 is not)
                let base = (f0 * n + subf) as i32;
                let step = n as i32;
                for j in 0..len {
                    let fdet = sub * ((base + j as i32 * step) as f64) + sub / 2.0;
                    let x = ((fdet * p.fdet[0] + sdet * p.sdet[0]) + odet * p.odet[0]) + p.pix0[0];
                    let y = ((fdet * p.fdet[1] + sdet * p.sdet[1]) + odet * p.odet[1]) + p.pix0[1];
                    let z = ((fdet * p.fdet[2] + sdet * p.sdet[2]) + odet * p.odet[2]) + p.pix0[2];
                    let inv_r = 1.0 / (x * x + y * y + z * z).sqrt();
                    dx[j] = x * inv_r;
                    dy[j] = y * inv_r;
                    dz[j] = z * inv_r;
                    let om = if p.point_pixel {
                        inv_r * inv_r
                    } else {
                        px2 * p.close_distance * (inv_r * inv_r * inv_r)
                    };
                    omega[j] = if omega[j] == 0.0 { om } else { omega[j] };
                }
                if capture[0] == 0.0 {
                    // first sub-pixel of a layer: absorption in this layer (scalar: exp)
                    for j in 0..len {
                        let rho = dx[j] * p.odet[0] + dy[j] * p.odet[1] + dz[j] * p.odet[2];
                        let xx = p.thickstep * p.mu / rho;
                        capture[j] = (-(t as f64) * xx).exp() * -(-xx).exp_m1();
                    }
                }
                for src in &fp.sources {
                    let i = src.incident;
                    let il = src.inv_lambda;
                    for j in 0..len {
                        qx[j] = (dx[j] - i[0]) * il;
                        qy[j] = (dy[j] - i[1]) * il;
                        qz[j] = (dz[j] - i[2]) * il;
                        let q2 = qx[j] * qx[j] + qy[j] * qy[j] + qz[j] * qz[j];
                        let ok = !(fp.inv_dmin2 > 0.0 && q2 > fp.inv_dmin2);
                        pass[j] = if ok { 1.0 } else { 0.0 };
                        // Kahn factor, first accepted source of the pixel
                        let c2 = dx[j] * i[0] + dy[j] * i[1] + dz[j] * i[2];
                        let c2sq = c2 * c2;
                        let e = dx[j] * src.e_in[0] + dy[j] * src.e_in[1] + dz[j] * src.e_in[2];
                        let b = dx[j] * src.b_in[0] + dy[j] * src.b_in[1] + dz[j] * src.b_in[2];
                        let nn = e * e + b * b;
                        let cos2psi = if p.polar_k != 0.0 && nn > 0.0 {
                            (e * e - b * b) / nn
                        } else {
                            1.0
                        };
                        let pol = 0.5 * (1.0 + c2sq - p.polar_k * cos2psi * (1.0 - c2sq));
                        polar[j] = if polar[j] == 0.0 && ok { pol } else { polar[j] };
                    }
                    acc[..len].fill(0.0);
                    for o in 0..soa.len {
                        let c = &soa.comp;
                        let m = [
                            c[0][o], c[1][o], c[2][o], c[3][o], c[4][o], c[5][o], c[6][o], c[7][o],
                            c[8][o],
                        ];
                        for j in 0..len {
                            let (mut num, mut den) = (1.0f32, 1.0f32);
                            let mut ex = false;
                            for a in 0..3 {
                                let h = (m[3 * a] * qx[j] + m[3 * a + 1] * qy[j])
                                    + m[3 * a + 2] * qz[j];
                                let r = (h + MAGIC) - MAGIC;
                                let d = h - r;
                                ex |= use_axis[a] & (d.abs() < EXACT_BRAGG) & (r != 0.0);
                                let d = d as f32;
                                let x = ns[a] * d;
                                let rr = x - ((x + MAGIC32) - MAGIC32);
                                let small = x.abs() < 1e-5;
                                let nm = if small { ns[a] } else { sinpi(rr) };
                                let dn = if small { 1.0 } else { sinpi(d) };
                                num *= if use_axis[a] { nm } else { 1.0 };
                                den *= if use_axis[a] { dn } else { 1.0 };
                            }
                            exact[j] |= ex & (pass[j] != 0.0);
                            let g = num / den;
                            fl2[j] = g * g * pass[j];
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
                                    (m[3 * a] * qx[j] + m[3 * a + 1] * qy[j]) + m[3 * a + 2] * qz[j]
                                });
                                let f = f_nearest(
                                    p,
                                    (hkl[0] - 0.5).ceil() as i64,
                                    (hkl[1] - 0.5).ceil() as i64,
                                    (hkl[2] - 0.5).ceil() as i64,
                                );
                                acc[j] += f * f * fl2[j] as f64;
                            }
                        }
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
        rescan[j] = exact[j];
    }
}
