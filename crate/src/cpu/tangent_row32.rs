//! The f32 tangent kernel's row path (MODEL §10.5): the image and its tangents for blocks of
//! pixels along a row: the image's row block (`row32::block`: orientations outside, pixels
//! inside, branch-free and vectorised, AVX2 or AVX-512 when the CPU has it, `simd`) with the
//! tangents as its carry ([`Tangents`]), so the image is the f32 image kernel's to the bit and
//! the tangents are its derivatives. Same terms and partials as `tangent32.rs`
//! (`lattice_square_d`, `polarization_d`, `solid_angle_d`, `capture_fraction_d`, `f_nearest`),
//! the chain pixel → direction → q → Miller index in f64 and the tangent sums in f64; for the plans `row32` takes (square lattice, nearest structure factors, no
//! curved detector or oversampling flags), each block within one run of pixels a panel renders
//! (`Plan::row_segments`, as `cpu::render` cuts `row32`'s blocks).
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
//! (`row32::Lanes` and the carry's, some 60 of 32 values) are stack arrays made once per row
//! (zeroed for every block they cost 10–35 % of a one-term-per-pixel row here; kept on the heap
//! instead, LLVM no longer vectorised the block); the caller's work after each block (the
//! tangents into the planes, the flagged pixels) is a callback. In the carry's lane loops the
//! invariants are arguments or locals, and the lane arrays one loop reads are of one width
//! (f64): a field read behind `self`, or f32 lanes beside f64 ones in the one struct, kept those
//! loops scalar (2.9× and 1.2× the instructions of the copy this replaced).

use super::pixel32::{FastCtx, SourceConst};
use super::poll::Poll;
use super::row32::{block, Index, Lanes, RowCarry, SubPixel};
use super::tangent::{dpos, ori_form, OriForm};
use crate::plan::{Panel, Plan};
use crate::tangent::PlanTangent;
use crate::terms::{
    capture_fraction_d, f_nearest, f_nearest_is_default, lattice_square_d_with, polarization_d,
    solid_angle_d,
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
            fc: FastCtx::for_tangents(p),
            t,
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
    /// The tangent row kernel for this CPU.
    fn select => row_body::<true>(c: &RowCtx, s: usize, row: &mut [f64], sc: &mut RowScratch, on_block: OnBlock)
);
simd_versions!(
    /// The tangent row kernel for this CPU, for plans where no parameter moves N (the
    /// lattice factor's d/dN left out).
    fn select_without_n => row_body::<false>(c: &RowCtx, s: usize, row: &mut [f64], sc: &mut RowScratch, on_block: OnBlock)
);

/// Row `s` in blocks of [`BLOCK`] pixels, each within one run of pixels a panel renders
/// (`Plan::row_segments`; the others 0, none of their terms computed): `row32::block` with the tangent carry, then the block's values into
/// `row`, its tangents into the scratch and `on_block`.
#[inline(always)]
fn row_body<const DN: bool>(
    c: &RowCtx,
    s: usize,
    row: &mut [f64],
    sc: &mut RowScratch,
    on_block: OnBlock,
) {
    let fc = &c.fc;
    let p = fc.plan;
    let poll = Poll::none();
    let mut l = Lanes::<BLOCK>::new();
    let mut tc = Tangents::<DN>::new(c, sc);
    let mut exact_out = [false; BLOCK];
    for (a, b, panel) in p.row_segments(s) {
        for f0 in (a..b).step_by(BLOCK) {
            let len = BLOCK.min(b - f0);
            match panel {
                Some(pi) => {
                    block(fc, &p.panels[pi], s, f0, len, &mut l, &mut tc, &poll);
                    for j in 0..len {
                        row[f0 + j] = l.value(p, j);
                        exact_out[j] = l.exact[j];
                    }
                    tc.finish(&l, len);
                }
                None => {
                    // pixels not rendered (no panel's, outside the ROI, masked) record nothing
                    row[f0..f0 + len].fill(0.0);
                    tc.sc.di[..c.t.deltas.len() * BLOCK].fill(0.0);
                    exact_out.fill(false);
                }
            }
            on_block(f0, len, row, &exact_out[..len], tc.sc);
        }
    }
}

/// The tangent carry of `row32::block`: the factors' partials, the per-term sums (g, H, by N,
/// by F) and each parameter's tangent in the scratch; lane arrays made once per row, each on a
/// 64-byte line (as `row32::Lanes`: the arrays first).
#[repr(C, align(64))]
struct Tangents<'r, 'a, const DN: bool> {
    /// dΩ/dR, dΩ/d close_distance, the capture fraction's d/dρ
    wr: [f64; BLOCK],
    wc: [f64; BLOCK],
    cdv: [f64; BLOCK],
    drs: [f64; BLOCK],
    gpol: [[f64; BLOCK]; 3],
    /// 1 where the pixel took the source's Kahn factor, else 0 (f64 as the lanes beside it:
    /// the loop vectorises)
    took: [f64; BLOCK],
    /// The term's Miller indices (0.25 where it does not count), F_latt (0 there), dF_latt/dδ,
    /// dF_latt/dN, F and whether F is `default_F`
    hh: [[f64; BLOCK]; 3],
    fl: [f64; BLOCK],
    fd: [[f64; BLOCK]; 3],
    fnn: [[f64; BLOCK]; 3],
    fcell: [f64; BLOCK],
    fdef: [f64; BLOCK],
    g: [[f64; BLOCK]; 3],
    hm: [[f64; BLOCK]; 9],
    gq: [f64; BLOCK],
    sum_n: [[f64; BLOCK]; 3],
    sum_f: [f64; BLOCK],
    c: &'r RowCtx<'a>,
    sc: &'r mut RowScratch,
    need_g: bool,
    need_h: bool,
}

impl<'r, 'a, const DN: bool> Tangents<'r, 'a, DN> {
    #[inline(always)]
    fn new(c: &'r RowCtx<'a>, sc: &'r mut RowScratch) -> Self {
        Tangents {
            c,
            sc,
            // g = Σ A_oᵀ t for q's tangent and the right-hand forms, H = Σ t ⊗ hkl for the left-hand
            need_g: !c.q_params.is_empty()
                || c.ori.iter().any(|(_, f)| matches!(f, OriForm::Right(_))),
            need_h: c.ori.iter().any(|(_, f)| matches!(f, OriForm::Left(_))),
            wr: [0.0; BLOCK],
            wc: [0.0; BLOCK],
            cdv: [0.0; BLOCK],
            drs: [0.0; BLOCK],
            gpol: [[0.0; BLOCK]; 3],
            took: [0.0; BLOCK],
            hh: [[0.0; BLOCK]; 3],
            fl: [0.0; BLOCK],
            fd: [[0.0; BLOCK]; 3],
            fnn: [[0.0; BLOCK]; 3],
            fcell: [c.fc.plan.default_f; BLOCK],
            fdef: [1.0; BLOCK],
            g: [[0.0; BLOCK]; 3],
            hm: [[0.0; BLOCK]; 9],
            gq: [0.0; BLOCK],
            sum_n: [[0.0; BLOCK]; 3],
            sum_f: [0.0; BLOCK],
        }
    }

    /// The block's tangents from its sums (pixel-inner: vectorised), left in the scratch by
    /// parameter for the caller.
    #[inline(always)]
    fn finish(&mut self, l: &Lanes<BLOCK>, len: usize) {
        let p = self.c.fc.plan;
        let sc = &mut *self.sc;
        let inv_steps = 1.0 / p.steps as f64;
        let mut base = [0.0f64; BLOCK];
        // a: d value / d (the pixel's term sum), b: d value / d (r_e² fluence)
        let (mut a, mut b) = ([0.0f64; BLOCK], [0.0f64; BLOCK]);
        for j in 0..len {
            base[j] = (p.r_e_sqr_fluence * l.isum[j]) / p.steps as f64;
            let cpo = l.capture[j] * l.polar[j] * l.omega[j];
            a[j] = p.r_e_sqr_fluence * inv_steps * cpo;
            b[j] = l.isum[j] * inv_steps * cpo;
        }
        // each parameter's tangent from the parts it moves (a loop over the block's pixels for
        // each part, the others left out)
        for (jp, dl) in self.c.t.deltas.iter().enumerate() {
            let di = &mut sc.di[jp * BLOCK..(jp + 1) * BLOCK];
            if self.c.summed[jp] {
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
                    di[j] += a[j] * (dl.default_f * self.sum_f[j]);
                }
            }
            if DN && dl.n.iter().any(|&x| x != 0.0) {
                let sn = &self.sum_n;
                for j in 0..len {
                    di[j] += a[j] * (sn[0][j] * dl.n[0] + sn[1][j] * dl.n[1] + sn[2][j] * dl.n[2]);
                }
            }
            if dl.r_e_sqr_fluence != 0.0 {
                for j in 0..len {
                    di[j] += b[j] * dl.r_e_sqr_fluence;
                }
            }
            // a detector parameter also moves the capture fraction, polarisation and solid angle
            if let Some(k) = self.c.det_index[jp] {
                let r = k * BLOCK..(k + 1) * BLOCK;
                let (dcap, dpol, dom) = (
                    &sc.dcapture[r.clone()],
                    &sc.dpolar[r.clone()],
                    &sc.domega[r],
                );
                let (cap, pol, om) = (&l.capture, &l.polar, &l.omega);
                for j in 0..len {
                    di[j] += base[j]
                        * (dcap[j] * pol[j] * om[j]
                            + cap[j] * dpol[j] * om[j]
                            + cap[j] * pol[j] * dom[j]);
                }
            }
        }
    }
}

impl<const DN: bool> RowCarry<BLOCK> for Tangents<'_, '_, DN> {
    #[inline(always)]
    fn start(&mut self, _len: usize) {
        for x in self.sum_n.iter_mut() {
            x.fill(0.0);
        }
        self.sum_f.fill(0.0);
        let nd = self.c.det.len();
        let sc = &mut *self.sc;
        for &jp in &self.c.sums {
            sc.di[jp * BLOCK..(jp + 1) * BLOCK].fill(0.0);
        }
        sc.domega[..nd * BLOCK].fill(0.0);
        sc.dpolar[..nd * BLOCK].fill(0.0);
        sc.dcapture[..nd * BLOCK].fill(0.0);
    }

    #[inline(always)]
    fn solid_angle(&mut self, j: usize, inv_r: f32, pixel2: f32, close: f32, point: bool) -> f32 {
        let [w, dw_dr, dw_dclose] = solid_angle_d(inv_r, pixel2, close, point);
        self.wr[j] = dw_dr as f64;
        self.wc[j] = dw_dclose as f64;
        w
    }

    /// The detector parameters' direction tangents (dpos − d (d·dpos))/R, and on the pixels'
    /// first sub-pixel the solid angle's tangents from d·dpos.
    #[inline(always)]
    fn directions(&mut self, l: &Lanes<BLOCK>, at: &SubPixel, first: bool, len: usize) {
        let deltas = &self.c.t.deltas;
        for (k, &jp) in self.c.det.iter().enumerate() {
            let dl = &deltas[jp];
            let (ddx, rest) = self.sc.dd[k * 3 * BLOCK..(k + 1) * 3 * BLOCK].split_at_mut(BLOCK);
            let (ddy, ddz) = rest.split_at_mut(BLOCK);
            let (ddx, ddy, ddz) = (&mut ddx[..len], &mut ddy[..len], &mut ddz[..len]);
            for j in 0..len {
                let dp = dpos(dl, at.fdet(j), at.sdet, at.odet);
                let dr = l.dx[j] * dp[0] + l.dy[j] * dp[1] + l.dz[j] * dp[2];
                ddx[j] = (dp[0] - l.dx[j] * dr) * l.rr[j];
                ddy[j] = (dp[1] - l.dy[j] * dr) * l.rr[j];
                ddz[j] = (dp[2] - l.dz[j] * dr) * l.rr[j];
                self.drs[j] = dr;
            }
            if first {
                let dw = &mut self.sc.domega[k * BLOCK..k * BLOCK + len];
                for j in 0..len {
                    dw[j] = self.wr[j] * self.drs[j] + self.wc[j] * dl.close_distance;
                }
            }
        }
    }

    #[inline(always)]
    fn capture(&mut self, j: usize, t: f32, mu_step: f32, rho: f32) -> f32 {
        let [v, dv] = capture_fraction_d(t, mu_step, rho);
        self.cdv[j] = dv as f64;
        v
    }

    #[inline(always)]
    fn captured(&mut self, l: &Lanes<BLOCK>, pan: &Panel, len: usize) {
        let deltas = &self.c.t.deltas;
        for (k, &jp) in self.c.det.iter().enumerate() {
            let dl = &deltas[jp];
            let dd = &self.sc.dd[k * 3 * BLOCK..(k + 1) * 3 * BLOCK];
            let dc = &mut self.sc.dcapture[k * BLOCK..(k + 1) * BLOCK];
            for j in 0..len {
                let drho = (dd[j] * pan.odet[0]
                    + dd[BLOCK + j] * pan.odet[1]
                    + dd[2 * BLOCK + j] * pan.odet[2])
                    + (l.dx[j] * dl.odet[0] + l.dy[j] * dl.odet[1] + l.dz[j] * dl.odet[2]);
                dc[j] = self.cdv[j] * drho;
            }
        }
    }

    #[inline(always)]
    fn polar(&mut self, j: usize, k: f32, f: &[[f32; 3]; 3], d: [f32; 3], take: bool) -> f32 {
        let (v, gp) = polarization_d(k, f[0], d, f[1], f[2]);
        self.took[j] = if take { 1.0 } else { 0.0 };
        for x in 0..3 {
            self.gpol[x][j] = gp[x] as f64;
        }
        v
    }

    /// The Kahn factor's tangents where the pixel took it; the source's sums start.
    #[inline(always)]
    fn source(&mut self, len: usize) {
        if self.took[..len].contains(&1.0) {
            for k in 0..self.c.det.len() {
                let dd = &self.sc.dd[k * 3 * BLOCK..(k + 1) * 3 * BLOCK];
                let dpol = &mut self.sc.dpolar[k * BLOCK..(k + 1) * BLOCK];
                let gp = &self.gpol;
                for j in 0..len {
                    let v =
                        gp[0][j] * dd[j] + gp[1][j] * dd[BLOCK + j] + gp[2][j] * dd[2 * BLOCK + j];
                    dpol[j] = if self.took[j] != 0.0 { v } else { dpol[j] };
                }
            }
        }
        for a in self.g.iter_mut() {
            a[..len].fill(0.0);
        }
        for a in self.hm.iter_mut() {
            a[..len].fill(0.0);
        }
    }

    /// [`lattice_square_d_with`]: F_latt (the image's to the bit) and its partials; a term that
    /// does not count takes δ = h = 0.25 (finite partials, multiplied by F_latt = 0).
    #[inline(always)]
    fn lattice(&mut self, j: usize, fc: &FastCtx, x: &Index) -> f32 {
        let (h, ok) = (x.h, x.ok);
        let dd = [0, 1, 2].map(|a| if ok { x.d[a] } else { 0.25 });
        let m = [0, 1, 2].map(|a| if ok { x.r[a] as f32 } else { 0.0 });
        // N from `fc` (an argument, not behind `self`: hoisted out of the lane loop)
        let (f, fd, fnn) = lattice_square_d_with::<DN>(dd, m, [fc.na, fc.nb, fc.nc]);
        for a in 0..3 {
            self.hh[a][j] = if ok { h[a] } else { 0.25 };
            self.fd[a][j] = fd[a] as f64;
            if DN {
                self.fnn[a][j] = fnn[a] as f64;
            }
        }
        self.fl[j] = if ok { f as f64 } else { 0.0 };
        f
    }

    /// The nearest structure factors (branch-free, and whether each is `default_F`).
    #[inline(always)]
    fn cells(&mut self, fc: &FastCtx, l: &mut Lanes<BLOCK>, _m: &[f64; 9], len: usize) {
        let p = fc.plan;
        for j in 0..len {
            let h0 = [0, 1, 2].map(|a| (self.hh[a][j] - 0.5).ceil());
            let f = f_nearest(&p.hkl, p.default_f, h0[0], h0[1], h0[2]);
            self.fcell[j] = f;
            self.fdef[j] = if f_nearest_is_default(&p.hkl, h0[0], h0[1], h0[2]) {
                1.0
            } else {
                0.0
            };
            l.acc[j] += f * f * l.fl2[j] as f64;
        }
    }

    /// The term's t = ∂I/∂(h, k, l) into g and H, its d/dN and d/dF sums, in one loop over the
    /// lanes (one copy of it for each of the four combinations of g and H: with the flags
    /// inside, the loop did not vectorise; a loop per sum read and wrote the lanes once per sum,
    /// +6 % instructions of the tangent row kernel); the parameters of neither form from their
    /// moved tables.
    #[inline(always)]
    fn term(&mut self, o: usize, m: &[f64; 9], l: &Lanes<BLOCK>, len: usize) {
        let m = *m;
        let len = len.min(BLOCK);
        // the loop with g (`$g`) and H (`$h`) or not, constants in each copy
        macro_rules! sums {
            ($g:expr, $h:expr) => {
                for j in 0..len {
                    let fl = self.fl[j];
                    let fcl = self.fcell[j];
                    let a_fc = 2.0 * fcl * fl * fl;
                    let a_fl = 2.0 * fcl * fcl * fl;
                    let tk = [0, 1, 2].map(|x| a_fl * self.fd[x][j]);
                    if DN {
                        for x in 0..3 {
                            self.sum_n[x][j] += a_fl * self.fnn[x][j];
                        }
                    }
                    self.sum_f[j] += a_fc * self.fdef[j];
                    if $g {
                        for x in 0..3 {
                            self.g[x][j] += tk[0] * m[x] + tk[1] * m[3 + x] + tk[2] * m[6 + x];
                        }
                    }
                    if $h {
                        for a in 0..3 {
                            for b in 0..3 {
                                self.hm[3 * a + b][j] += tk[a] * self.hh[b][j];
                            }
                        }
                    }
                }
            };
        }
        match (self.need_g, self.need_h) {
            (true, true) => sums!(true, true),
            (true, false) => sums!(true, false),
            (false, true) => sums!(false, true),
            (false, false) => sums!(false, false),
        }
        let c = self.c;
        for (jp, form) in &c.ori {
            if let OriForm::Generic(dm) = form {
                let dm = [
                    dm[0][o], dm[1][o], dm[2][o], dm[3][o], dm[4][o], dm[5][o], dm[6][o], dm[7][o],
                    dm[8][o],
                ];
                let di = &mut self.sc.di[jp * BLOCK..(jp + 1) * BLOCK];
                for j in 0..len {
                    let q = [l.qx[j], l.qy[j], l.qz[j]];
                    // t = ∂I/∂(h, k, l) (the sums' t, made again: no lane array for it)
                    let fcl = self.fcell[j];
                    let a_fl = 2.0 * fcl * fcl * self.fl[j];
                    let mut v = 0.0;
                    for a in 0..3 {
                        v += (a_fl * self.fd[a][j])
                            * (dm[3 * a] * q[0] + dm[3 * a + 1] * q[1] + dm[3 * a + 2] * q[2]);
                    }
                    di[j] += v;
                }
            }
        }
    }

    /// The orientation parameters of one form, once per pixel and source; the parameters moving
    /// q: dq = (dd − q·dλ)/λ, so g·dq = (g·dd − (g·q) dλ)/λ.
    #[inline(always)]
    fn source_done(&mut self, si: usize, src: &SourceConst, l: &Lanes<BLOCK>, len: usize) {
        let c = self.c;
        let g = &self.g;
        for (jp, form) in &c.ori {
            let di = &mut self.sc.di[jp * BLOCK..(jp + 1) * BLOCK];
            match form {
                OriForm::Right(k) => {
                    for j in 0..len {
                        let q = [l.qx[j], l.qy[j], l.qz[j]];
                        for x in 0..3 {
                            let kq = k[x][0] * q[0] + k[x][1] * q[1] + k[x][2] * q[2];
                            di[j] += g[x][j] * kq;
                        }
                    }
                }
                OriForm::Left(cm) => {
                    for j in 0..len {
                        let mut v = 0.0;
                        for a in 0..3 {
                            for b in 0..3 {
                                v += cm[a][b] * self.hm[3 * a + b][j];
                            }
                        }
                        di[j] += v;
                    }
                }
                OriForm::Generic(_) => {}
            }
        }
        if c.q_params.is_empty() {
            return;
        }
        for j in 0..len {
            self.gq[j] = g[0][j] * l.qx[j] + g[1][j] * l.qy[j] + g[2][j] * l.qz[j];
        }
        let il = src.inv_lambda;
        for &jp in &c.q_params {
            let dlam = c.t.deltas[jp].lambda.get(si).copied().unwrap_or(0.0);
            let di = &mut self.sc.di[jp * BLOCK..(jp + 1) * BLOCK];
            match c.det_index[jp] {
                Some(k) => {
                    let dd = &self.sc.dd[k * 3 * BLOCK..(k + 1) * 3 * BLOCK];
                    for j in 0..len {
                        let gd =
                            g[0][j] * dd[j] + g[1][j] * dd[BLOCK + j] + g[2][j] * dd[2 * BLOCK + j];
                        di[j] += (gd - self.gq[j] * dlam) * il;
                    }
                }
                None => {
                    for j in 0..len {
                        di[j] -= self.gq[j] * dlam * il;
                    }
                }
            }
        }
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
