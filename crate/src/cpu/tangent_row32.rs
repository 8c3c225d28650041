//! The f32 tangent kernel's row path (MODEL §10.5): the image and its tangents for blocks of
//! pixels along a row, with the loops turned inside out as in `row32.rs` (orientations outside,
//! pixels inside: branch-free and vectorised, AVX2 or AVX-512 when the CPU has it, `simd`). Same terms and partials
//! as `tangent32.rs` (`lattice_square_d`, `polarization_d`, `solid_angle_d`,
//! `capture_fraction_d`, `f_nearest`), the chain pixel → direction → q → Miller index in f64 and
//! the sums in f64; for the plans `row32` takes (square lattice, nearest structure factors, no
//! curved detector or oversampling flags), each block within one panel's run of the row and on
//! that panel (`Plan::row_run`, as `cpu::render` cuts `row32`'s blocks).
//!
//! A parameter that moves the orientation table adds Σ_o t·(dA_o q) to a pixel's tangent (t =
//! ∂I/∂(h,k,l) of a term, A_o the matrix of orientation o, rows a, b, c). As in the per-pixel
//! kernels (`tangent.rs`'s [`OriForm`], MODEL §10.5), most such parameters move every
//! orientation the same way, on one side, and are contracted once per pixel and source:
//! * on the right, dA_o = A_o·K for one K (a rotation about a lab axis u: K q = q × u), so
//!   Σ_o t·(dA_o q) = g·(K q) with g = Σ_o A_oᵀ t, which the loop sums for q's own tangent;
//! * on the left, dA_o = C·A_o for one C (the cell: dA_o = dA₀ A₀⁻¹ A_o), so
//!   Σ_o t·(C A_o q) = Σ_mn C_mn H_mn with H = Σ_o t ⊗ (h, k, l), nine sums per pixel whatever
//!   the number of parameters.
//!
//! A parameter of neither form (the mosaic spread) is contracted per term, from its moved table
//! in structure-of-arrays form. Pixels under the exact-Bragg rule and the pixel of the run's
//! first φ sequence come back flagged: the caller renders them with the per-pixel kernel.
//!
//! The kernel is called once per row and loops over its blocks itself: the block's lane arrays
//! (some 45 of 32 values) are stack arrays made once per row (zeroed for every block they cost
//! 10–35 % of a one-term-per-pixel row here; kept on the heap instead, LLVM no longer vectorised
//! the block); the caller's work after each block (the tangents into the planes, the flagged pixels)
//! is a callback.

use super::pixel32::FastCtx;
use super::row32::directions;
use super::tangent::{dpos, ori_form, OriForm};
use crate::plan::Plan;
use crate::tangent::PlanTangent;
use crate::terms::{
    capture_fraction_d, f_nearest, f_nearest_is_default, index_ok, is_exact_bragg,
    lattice_square_d_with, polarization_d, solid_angle_d,
};

/// Pixels per block.
pub const BLOCK: usize = 32;

/// True when the row path applies to this plan.
pub fn applies(p: &Plan) -> bool {
    super::row32::applies(p)
}

/// Per-render context of the row path.
pub struct RowCtx<'a> {
    pub fc: FastCtx<'a>,
    t: &'a PlanTangent,
    n: [f32; 3],
    /// Parameters moving the detector / q (detector or λ) / the orientations (with their form).
    det: Vec<usize>,
    q_params: Vec<usize>,
    ori: Vec<(usize, OriForm)>,
    /// For each parameter: its index in `det`, if it moves the detector.
    det_index: Vec<Option<usize>>,
    /// The parameters whose term sums the block accumulates (orientation or q moving), and
    /// for each parameter whether it is one of them.
    sums: Vec<usize>,
    summed: Vec<bool>,
    block: BlockFn,
}

impl<'a> RowCtx<'a> {
    /// None when the row path does not apply to this plan.
    pub fn new(p: &'a Plan, t: &'a PlanTangent) -> Option<Self> {
        if !applies(p) {
            return None;
        }
        let which = |f: &dyn Fn(&crate::tangent::PlanDelta) -> bool| -> Vec<usize> {
            (0..t.deltas.len()).filter(|&i| f(&t.deltas[i])).collect()
        };
        let ori = which(&|d| {
            d.orientations
                .iter()
                .any(|o| [o.a, o.b, o.c].iter().flatten().any(|&x| x != 0.0))
        })
        .into_iter()
        .map(|j| (j, ori_form(&p.orientations, &t.deltas[j].orientations)))
        .collect();
        let det = which(&|d| d.moves_detector());
        let q_params = which(&|d| d.moves_detector() || d.moves_lambda());
        let ori: Vec<(usize, OriForm)> = ori;
        let det_index = (0..t.deltas.len())
            .map(|j| det.iter().position(|&k| k == j))
            .collect();
        let summed: Vec<bool> = (0..t.deltas.len())
            .map(|j| q_params.contains(&j) || ori.iter().any(|(k, _)| *k == j))
            .collect();
        let sums = (0..t.deltas.len()).filter(|&j| summed[j]).collect();
        Some(RowCtx {
            fc: FastCtx::new(p),
            t,
            n: [p.na as f32, p.nb as f32, p.nc as f32],
            det,
            q_params,
            ori,
            det_index,
            sums,
            summed,
            // d/dN only where a parameter moves N
            block: if t.deltas.iter().any(|d| d.n.iter().any(|&x| x != 0.0)) {
                select()
            } else {
                select_without_n()
            },
        })
    }

    /// Renders row `s` in blocks of [`BLOCK`] pixels: values into `row`, each block's tangents
    /// into the scratch (parameter j's at [`RowScratch::tangent`]), then `on_block` (the
    /// block's first pixel and length, the row, the pixels the caller must render with the
    /// scalar kernel (exact-Bragg rule), the scratch). One call per row: the block's lanes are
    /// stack arrays made once per row, not zeroed per block.
    pub fn row(&self, s: usize, row: &mut [f64], sc: &mut RowScratch, on_block: OnBlock) {
        (self.block)(self, s, row, sc, on_block)
    }

    pub fn scratch(&self) -> RowScratch {
        let np = self.t.deltas.len();
        let nd = self.det.len();
        RowScratch {
            di: vec![0.0; np * BLOCK],
            domega: vec![0.0; nd * BLOCK],
            dcapture: vec![0.0; nd * BLOCK],
            dpolar: vec![0.0; nd * BLOCK],
            dd: vec![0.0; nd * 3 * BLOCK],
        }
    }
}

/// Per-worker scratch of the row path ([`BLOCK`] pixels per parameter; `di` by parameter, the
/// others by detector parameter).
pub struct RowScratch {
    di: Vec<f64>,
    domega: Vec<f64>,
    dcapture: Vec<f64>,
    dpolar: Vec<f64>,
    /// Direction tangents of the detector parameters: [k][x][pixel].
    dd: Vec<f64>,
}

impl RowScratch {
    /// Parameter `j`'s tangents of the last block's pixels ([`BLOCK`] values, the block's
    /// length of them set).
    pub fn tangent(&self, j: usize) -> &[f64] {
        &self.di[j * BLOCK..(j + 1) * BLOCK]
    }
}

/// What the caller does after each block of a row: with the block's first pixel and length,
/// the row's values, the block's pixels flagged for the per-pixel kernel (exact-Bragg rule) and
/// the scratch holding the block's tangents ([`RowScratch::tangent`]).
pub type OnBlock<'a> = &'a mut dyn FnMut(usize, usize, &mut [f64], &[bool], &RowScratch);

type BlockFn = fn(&RowCtx, usize, &mut [f64], &mut RowScratch, OnBlock);

simd_versions!(
    /// The tangent row-block kernel for this CPU.
    fn select => block_body::<true>(c: &RowCtx, s: usize, row: &mut [f64], sc: &mut RowScratch, on_block: OnBlock)
);
simd_versions!(
    /// The tangent row-block kernel for this CPU, for plans where no parameter moves N (the
    /// lattice factor's d/dN left out).
    fn select_without_n => block_body::<false>(c: &RowCtx, s: usize, row: &mut [f64], sc: &mut RowScratch, on_block: OnBlock)
);

#[inline(always)]
fn block_body<const DN: bool>(
    c: &RowCtx,
    s: usize,
    row: &mut [f64],
    sc: &mut RowScratch,
    on_block: OnBlock,
) {
    let fc = &c.fc;
    let p = fc.plan;
    let deltas = &c.t.deltas;
    let n = p.oversample as usize;
    let sub = p.pixel / n as f64;
    let nv = c.n;
    let use_axis = [nv[0] > 1.0, nv[1] > 1.0, nv[2] > 1.0];
    let constant_f = p.hkl.hkls == 0;
    let soa = &fc.soa;
    let comp = &soa.comp;
    // g = Σ A_oᵀ t for q's tangent and the right-hand forms, H = Σ t ⊗ hkl for the left-hand
    let need_g =
        !c.q_params.is_empty() || c.ori.iter().any(|(_, f)| matches!(f, OriForm::Right(_)));
    let need_h = c.ori.iter().any(|(_, f)| matches!(f, OriForm::Left(_)));

    // the sums, reset for every block below
    let mut isum = [0.0f64; BLOCK];
    let mut polar = [0.0f64; BLOCK];
    let mut omega = [0.0f64; BLOCK];
    let mut capture = [1.0f64; BLOCK];
    let mut exact = [false; BLOCK];
    let mut sum_n = [[0.0f64; BLOCK]; 3];
    let mut sum_f = [0.0f64; BLOCK];
    let mut fcell = [p.default_f; BLOCK];
    let mut fdef = [1.0f64; BLOCK];
    // rr: 1/R of each pixel
    let (mut dx, mut dy, mut dz, mut rr) =
        ([0.0f64; BLOCK], [0.0; BLOCK], [0.0; BLOCK], [0.0; BLOCK]);
    let (mut qx, mut qy, mut qz) = ([0.0f64; BLOCK], [0.0; BLOCK], [0.0; BLOCK]);
    let mut pass = [0.0f64; BLOCK];
    let (mut wr, mut wc) = ([0.0f64; BLOCK], [0.0f64; BLOCK]);
    let mut gpol = [[0.0f64; BLOCK]; 3];
    let mut took = [false; BLOCK];
    let mut hh = [[0.0f64; BLOCK]; 3];
    let mut okm = [false; BLOCK];
    let mut tt = [[0.0f64; BLOCK]; 3];
    let mut g = [[0.0f64; BLOCK]; 3];
    let mut hm = [[0.0f64; BLOCK]; 9];
    let mut gq = [0.0f64; BLOCK];
    let mut drs = [0.0f64; BLOCK];
    let fp = p.fpixels;
    let mut exact_out = [false; BLOCK];
    let mut f0 = 0;
    while f0 < fp {
        // blocks within one panel's run of the row (`Plan::row_run`), each on its panel
        let (end, panel) = p.row_run(f0, s);
        let end = end.max(f0 + 1);
        let len = BLOCK.min(end - f0);
        let Some(pi) = panel else {
            // pixels of no panel record nothing
            row[f0..f0 + len].fill(0.0);
            sc.di[..deltas.len() * BLOCK].fill(0.0);
            exact_out.fill(false);
            on_block(f0, len, row, &exact_out[..len], sc);
            f0 += len;
            continue;
        };
        let pan = &p.panels[pi];
        let close = pan.close_distance as f32;
        // the sums of this block start again; the other lanes are written before they are read
        isum.fill(p.i_bg);
        polar.fill(if p.nopolar { 1.0 } else { 0.0 });
        omega.fill(0.0);
        exact.fill(false);
        for x in sum_n.iter_mut() {
            x.fill(0.0);
        }
        sum_f.fill(0.0);
        let vals = &mut row[f0..f0 + len];
        let nd = c.det.len();
        for &jp in &c.sums {
            sc.di[jp * BLOCK..(jp + 1) * BLOCK].fill(0.0);
        }
        sc.domega[..nd * BLOCK].fill(0.0);
        sc.dpolar[..nd * BLOCK].fill(0.0);
        sc.dcapture[..nd * BLOCK].fill(0.0);

        for t in 0..p.thicksteps as usize {
            let odet = t as f64 * p.thickstep;
            let layer_capture = if p.thick == 0.0 { 1.0 } else { 0.0 };
            capture[..len].fill(layer_capture);
            for subs in 0..n {
                let sd = sub * ((s * n + subs) as f64) + sub / 2.0;
                for subf in 0..n {
                    let base = (f0 * n + subf) as i32;
                    let step = n as i32;
                    let fd_of = |j: usize| sub * ((base + j as i32 * step) as f64) + sub / 2.0;
                    // directions (the image row kernel's), solid angle
                    let d = [&mut dx, &mut dy, &mut dz, &mut rr];
                    directions(pan, sub, sd, odet, base, step, len, d);
                    // the solid angle (once per pixel), and the detector parameters' direction
                    // tangents (dpos − d (d·dpos))/r with the solid angle's tangents from d·dpos
                    let omega_now = omega[0] == 0.0;
                    if omega_now {
                        for j in 0..len {
                            let [w, dw_dr, dw_dclose] =
                                solid_angle_d(rr[j] as f32, fc.pixel2, close, p.point_pixel);
                            omega[j] = w as f64;
                            wr[j] = dw_dr as f64;
                            wc[j] = dw_dclose as f64;
                        }
                    }
                    for (k, &jp) in c.det.iter().enumerate() {
                        let dl = &deltas[jp];
                        let (ddx, rest) =
                            sc.dd[k * 3 * BLOCK..(k + 1) * 3 * BLOCK].split_at_mut(BLOCK);
                        let (ddy, ddz) = rest.split_at_mut(BLOCK);
                        let (ddx, ddy, ddz) = (&mut ddx[..len], &mut ddy[..len], &mut ddz[..len]);
                        for j in 0..len {
                            let dp = dpos(dl, fd_of(j), sd, odet);
                            let dr = dx[j] * dp[0] + dy[j] * dp[1] + dz[j] * dp[2];
                            ddx[j] = (dp[0] - dx[j] * dr) * rr[j];
                            ddy[j] = (dp[1] - dy[j] * dr) * rr[j];
                            ddz[j] = (dp[2] - dz[j] * dr) * rr[j];
                            drs[j] = dr;
                        }
                        if omega_now {
                            let dw = &mut sc.domega[k * BLOCK..k * BLOCK + len];
                            for j in 0..len {
                                dw[j] = wr[j] * drs[j] + wc[j] * dl.close_distance;
                            }
                        }
                    }
                    if capture[0] == 0.0 {
                        for j in 0..len {
                            let rho =
                                dx[j] * pan.odet[0] + dy[j] * pan.odet[1] + dz[j] * pan.odet[2];
                            let [v, dv] = capture_fraction_d(t as f32, fc.mu_step, rho as f32);
                            capture[j] = v as f64;
                            wr[j] = dv as f64;
                        }
                        for (k, &jp) in c.det.iter().enumerate() {
                            let dl = &deltas[jp];
                            let dd = &sc.dd[k * 3 * BLOCK..(k + 1) * 3 * BLOCK];
                            let dc = &mut sc.dcapture[k * BLOCK..(k + 1) * BLOCK];
                            for j in 0..len {
                                let drho = (dd[j] * pan.odet[0]
                                    + dd[BLOCK + j] * pan.odet[1]
                                    + dd[2 * BLOCK + j] * pan.odet[2])
                                    + (dx[j] * dl.odet[0]
                                        + dy[j] * dl.odet[1]
                                        + dz[j] * dl.odet[2]);
                                dc[j] = wr[j] * drho;
                            }
                        }
                    }
                    for (si, src) in fc.sources.iter().enumerate() {
                        let inc = src.incident;
                        let il = src.inv_lambda;
                        for j in 0..len {
                            qx[j] = (dx[j] - inc[0]) * il;
                            qy[j] = (dy[j] - inc[1]) * il;
                            qz[j] = (dz[j] - inc[2]) * il;
                            let ok = if p.dmin > 0.0 {
                                let stol =
                                    0.5 * (qx[j] * qx[j] + qy[j] * qy[j] + qz[j] * qz[j]).sqrt();
                                !(stol > 0.0 && p.dmin > 0.5 / stol)
                            } else {
                                true
                            };
                            pass[j] = if ok { 1.0 } else { 0.0 };
                        }
                        // Kahn factor and its tangents, at the pixel's first accepted source
                        // (branch-free: computed everywhere, kept where it is taken)
                        let mut any = false;
                        for j in 0..len {
                            let take = (polar[j] == 0.0) & (pass[j] != 0.0);
                            let d = [dx[j] as f32, dy[j] as f32, dz[j] as f32];
                            let (v, gp) = polarization_d(fc.polar_k, src.i, d, src.e_in, src.b_in);
                            polar[j] = if take { v as f64 } else { polar[j] };
                            took[j] = take;
                            for x in 0..3 {
                                gpol[x][j] = gp[x] as f64;
                            }
                            any |= take;
                        }
                        if any {
                            for k in 0..nd {
                                let dd = &sc.dd[k * 3 * BLOCK..(k + 1) * 3 * BLOCK];
                                let dpol = &mut sc.dpolar[k * BLOCK..(k + 1) * BLOCK];
                                for j in 0..len {
                                    let v = gpol[0][j] * dd[j]
                                        + gpol[1][j] * dd[BLOCK + j]
                                        + gpol[2][j] * dd[2 * BLOCK + j];
                                    dpol[j] = if took[j] { v } else { dpol[j] };
                                }
                            }
                        }
                        for a in g.iter_mut() {
                            a[..len].fill(0.0);
                        }
                        for a in hm.iter_mut() {
                            a[..len].fill(0.0);
                        }
                        for o in 0..soa.len {
                            let m = [
                                comp[0][o], comp[1][o], comp[2][o], comp[3][o], comp[4][o],
                                comp[5][o], comp[6][o], comp[7][o], comp[8][o],
                            ];
                            // Miller indices (upstream's association); out-of-range ones skip the term
                            for j in 0..len {
                                let mut ok = pass[j] != 0.0;
                                for (a, ha) in hh.iter_mut().enumerate() {
                                    let h = (m[3 * a] * qx[j] + m[3 * a + 1] * qy[j])
                                        + m[3 * a + 2] * qz[j];
                                    ok &= index_ok(h);
                                    ha[j] = h;
                                }
                                okm[j] = ok;
                                for ha in hh.iter_mut() {
                                    ha[j] = if ok { ha[j] } else { 0.25 };
                                }
                            }
                            if !constant_f {
                                for j in 0..len {
                                    let h0 = [0, 1, 2].map(|a| (hh[a][j] - 0.5).ceil());
                                    fcell[j] = f_nearest(&p.hkl, p.default_f, h0[0], h0[1], h0[2]);
                                    fdef[j] = if f_nearest_is_default(&p.hkl, h0[0], h0[1], h0[2]) {
                                        1.0
                                    } else {
                                        0.0
                                    };
                                }
                            }
                            for j in 0..len {
                                let hkl = [hh[0][j], hh[1][j], hh[2][j]];
                                let h0 = [
                                    (hkl[0] - 0.5).ceil(),
                                    (hkl[1] - 0.5).ceil(),
                                    (hkl[2] - 0.5).ceil(),
                                ];
                                let dlt = [
                                    (hkl[0] - h0[0]) as f32,
                                    (hkl[1] - h0[1]) as f32,
                                    (hkl[2] - h0[2]) as f32,
                                ];
                                let mut ex = false;
                                for a in 0..3 {
                                    ex |= use_axis[a] & is_exact_bragg(dlt[a] as f64, h0[a]);
                                }
                                exact[j] |= ex & okm[j];
                                let (f, fd, fnn) = lattice_square_d_with::<DN>(
                                    dlt,
                                    [h0[0] as f32, h0[1] as f32, h0[2] as f32],
                                    nv,
                                );
                                let fl = if okm[j] { f as f64 } else { 0.0 };
                                let fcl = fcell[j];
                                isum[j] += ((fcl * fcl) * fl) * fl;
                                let a_fc = 2.0 * fcl * fl * fl;
                                let a_fl = 2.0 * fcl * fcl * fl;
                                let tk = [
                                    a_fl * fd[0] as f64,
                                    a_fl * fd[1] as f64,
                                    a_fl * fd[2] as f64,
                                ];
                                for x in 0..3 {
                                    if DN {
                                        sum_n[x][j] += a_fl * fnn[x] as f64;
                                    }
                                    tt[x][j] = tk[x];
                                }
                                if need_g {
                                    for x in 0..3 {
                                        g[x][j] +=
                                            tk[0] * m[x] + tk[1] * m[3 + x] + tk[2] * m[6 + x];
                                    }
                                }
                                if need_h {
                                    for a in 0..3 {
                                        for b in 0..3 {
                                            hm[3 * a + b][j] += tk[a] * hkl[b];
                                        }
                                    }
                                }
                                sum_f[j] += a_fc * fdef[j];
                            }
                            for (jp, form) in &c.ori {
                                if let OriForm::Generic(dm) = form {
                                    let dm = [
                                        dm[0][o], dm[1][o], dm[2][o], dm[3][o], dm[4][o], dm[5][o],
                                        dm[6][o], dm[7][o], dm[8][o],
                                    ];
                                    let di = &mut sc.di[jp * BLOCK..(jp + 1) * BLOCK];
                                    for j in 0..len {
                                        let q = [qx[j], qy[j], qz[j]];
                                        let mut v = 0.0;
                                        for a in 0..3 {
                                            v += tt[a][j]
                                                * (dm[3 * a] * q[0]
                                                    + dm[3 * a + 1] * q[1]
                                                    + dm[3 * a + 2] * q[2]);
                                        }
                                        di[j] += v;
                                    }
                                }
                            }
                        }
                        // the orientation parameters of one form, once per pixel and source
                        for (jp, form) in &c.ori {
                            let di = &mut sc.di[jp * BLOCK..(jp + 1) * BLOCK];
                            match form {
                                OriForm::Right(k) => {
                                    for j in 0..len {
                                        let q = [qx[j], qy[j], qz[j]];
                                        for x in 0..3 {
                                            let kq =
                                                k[x][0] * q[0] + k[x][1] * q[1] + k[x][2] * q[2];
                                            di[j] += g[x][j] * kq;
                                        }
                                    }
                                }
                                OriForm::Left(cm) => {
                                    for j in 0..len {
                                        let mut v = 0.0;
                                        for a in 0..3 {
                                            for b in 0..3 {
                                                v += cm[a][b] * hm[3 * a + b][j];
                                            }
                                        }
                                        di[j] += v;
                                    }
                                }
                                OriForm::Generic(_) => {}
                            }
                        }
                        // parameters moving q: dq = (dd − q·dλ)/λ, so g·dq = (g·dd − (g·q) dλ)/λ
                        if !c.q_params.is_empty() {
                            for j in 0..len {
                                gq[j] = g[0][j] * qx[j] + g[1][j] * qy[j] + g[2][j] * qz[j];
                            }
                        }
                        for &jp in &c.q_params {
                            let dlam = deltas[jp].lambda.get(si).copied().unwrap_or(0.0);
                            let di = &mut sc.di[jp * BLOCK..(jp + 1) * BLOCK];
                            match c.det_index[jp] {
                                Some(k) => {
                                    let dd = &sc.dd[k * 3 * BLOCK..(k + 1) * 3 * BLOCK];
                                    for j in 0..len {
                                        let gd = g[0][j] * dd[j]
                                            + g[1][j] * dd[BLOCK + j]
                                            + g[2][j] * dd[2 * BLOCK + j];
                                        di[j] += (gd - gq[j] * dlam) * il;
                                    }
                                }
                                None => {
                                    for j in 0..len {
                                        di[j] -= gq[j] * dlam * il;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        // the pixels' values; then each parameter's tangents (pixel-inner: vectorised), left in
        // the scratch by parameter for the caller
        let inv_steps = 1.0 / p.steps as f64;
        let mut base = [0.0f64; BLOCK];
        // a: d value / d (the pixel's term sum), b: d value / d (r_e² fluence)
        let (mut a, mut b) = ([0.0f64; BLOCK], [0.0f64; BLOCK]);
        for j in 0..len {
            base[j] = (p.r_e_sqr_fluence * isum[j]) / p.steps as f64;
            let mut val = base[j];
            val *= capture[j];
            val *= polar[j];
            val *= omega[j];
            vals[j] = val;
            let cpo = capture[j] * polar[j] * omega[j];
            a[j] = p.r_e_sqr_fluence * inv_steps * cpo;
            b[j] = isum[j] * inv_steps * cpo;
            exact_out[j] = exact[j];
        }
        // each parameter's tangent from the parts it moves (a loop over the block's pixels for
        // each part, the others left out)
        for (jp, dl) in deltas.iter().enumerate() {
            let di = &mut sc.di[jp * BLOCK..(jp + 1) * BLOCK];
            if c.summed[jp] {
                for j in 0..len {
                    di[j] *= a[j];
                }
            } else {
                di[..len].fill(0.0);
            }
            if dl.i_bg != 0.0 {
                for j in 0..len {
                    di[j] += a[j] * dl.i_bg;
                }
            }
            if dl.default_f != 0.0 {
                for j in 0..len {
                    di[j] += a[j] * (dl.default_f * sum_f[j]);
                }
            }
            if DN && dl.n.iter().any(|&x| x != 0.0) {
                for j in 0..len {
                    di[j] += a[j]
                        * (sum_n[0][j] * dl.n[0] + sum_n[1][j] * dl.n[1] + sum_n[2][j] * dl.n[2]);
                }
            }
            if dl.r_e_sqr_fluence != 0.0 {
                for j in 0..len {
                    di[j] += b[j] * dl.r_e_sqr_fluence;
                }
            }
            // a detector parameter also moves the capture fraction, polarisation and solid angle
            if let Some(k) = c.det_index[jp] {
                let r = k * BLOCK..(k + 1) * BLOCK;
                let (dcap, dpol, dom) = (
                    &sc.dcapture[r.clone()],
                    &sc.dpolar[r.clone()],
                    &sc.domega[r],
                );
                for j in 0..len {
                    di[j] += base[j]
                        * (dcap[j] * polar[j] * omega[j]
                            + capture[j] * dpol[j] * omega[j]
                            + capture[j] * polar[j] * dom[j]);
                }
            }
        }
        on_block(f0, len, row, &exact_out[..len], sc);
        f0 += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::MemFiles;
    use crate::tangent::Param;

    /// Rotations about lab axes move every orientation on the right, cell parameters on the
    /// left, the mosaic spread neither (each domain its own way).
    #[test]
    fn orientation_parameters_take_their_form() {
        let words = crate::api::split_args(
            "-cell 70 80 90 85 95 105 -misset 10 5 3 -lambda 1.5 -N 5 -default_F 100 \
             -distance 100 -detpixels 16 -mosaic 0.5 -mosaic_dom 5 -phi 0 -osc 2 -phisteps 3",
        );
        let prep = crate::api::prepare(&words, &MemFiles::default()).unwrap();
        let params = [
            Param::RotX,
            Param::RotY,
            Param::CellA,
            Param::CellBeta,
            Param::Mosaic,
        ];
        let (moved, t) = crate::resolve::tangent::plan_tangent_at(
            &prep.setup,
            &MemFiles::default(),
            &params,
            &[],
        )
        .unwrap();
        let p = &moved.plan;
        assert!(p.orientations.len() >= 15);
        let c = RowCtx::new(p, &t).expect("the row path applies");
        let form = |j: usize| match &c
            .ori
            .iter()
            .find(|(i, _)| *i == j)
            .expect("moves orientations")
            .1
        {
            OriForm::Right(_) => "right",
            OriForm::Left(_) => "left",
            OriForm::Generic(_) => "generic",
        };
        assert_eq!(
            (0..5).map(form).collect::<Vec<_>>(),
            ["right", "right", "left", "left", "generic"]
        );
        // the rotation's K is the cross product with its axis: K q = q × u
        if let OriForm::Right(k) = &c.ori[0].1 {
            let q = [0.3, -0.2, 0.9];
            let kq: Vec<f64> = (0..3)
                .map(|x| k[x][0] * q[0] + k[x][1] * q[1] + k[x][2] * q[2])
                .collect();
            let want = [0.0, q[2], -q[1]]; // q × x̂
            for x in 0..3 {
                assert!((kq[x] - want[x]).abs() < 1e-9, "{kq:?}");
            }
        }
    }
}
