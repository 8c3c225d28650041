//! Direct summation of F(hkl) = |Σⱼ fⱼ(s) occⱼ exp(−hᵀβⱼh) exp(2πi h·xⱼ)| over the atoms of the
//! P1 unit cell, for every reflection within a resolution sphere.
//!
//! The term of atom j is the exponential of a quadratic in h (the Debye-Waller factor, isotropic
//! or anisotropic, is exp(−hᵀβh) with β = 2π² F U Fᵀ in index space, F the fractionalisation
//! matrix; an isotropic B gives β = B/4 · F Fᵀ). Stepping one index multiplies the term by a
//! ratio that itself changes by a constant factor, so along a row of l the terms need one complex
//! and one real multiplication each, no sin, cos or exp:
//!
//!   E(v+eₗ) = E(v)·Rₗ(v),  Rₗ(v) = exp(2πi z − 2(βv)ₗ − βₗₗ),  Rₗ(v+eₗ) = Rₗ(v)·exp(−2βₗₗ)
//!
//! and the same along k between rows (rows start at l = 0 and walk up and down). The sums are
//! kept per element, so each form factor is evaluated once per reflection and element. Only one
//! row (h, k) per orbit of the space group's rotations that keep the l axis, with Friedel's law
//! F(−h) = F(h) (no anomalous scattering), is summed; the others are copies. Planes of constant
//! h run in parallel (rayon). The innermost loops run over atoms in lanes of 8 (vectorised; AVX2
//! when the CPU has it, simd128 in the wasm build).

use super::formfactor;
use super::model::Model;
use crate::error::{Error, ErrorKind, Result};
use crate::plan::HklGrid;
use rayon::prelude::*;
use std::f64::consts::PI;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Atoms per lane group; element groups are padded to a multiple (zero-weight atoms).
const LANES: usize = 8;
/// Atoms per cache block of the row walk.
const BLOCK: usize = 256;

type M3 = [[f64; 3]; 3];

fn mul(a: &M3, b: &M3) -> M3 {
    let mut r = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            r[i][j] = (0..3).map(|k| a[i][k] * b[k][j]).sum();
        }
    }
    r
}

pub(crate) fn det3(g: &M3) -> f64 {
    g[0][0] * (g[1][1] * g[2][2] - g[1][2] * g[2][1])
        - g[0][1] * (g[1][0] * g[2][2] - g[1][2] * g[2][0])
        + g[0][2] * (g[1][0] * g[2][1] - g[1][1] * g[2][0])
}

fn inverse(g: &M3) -> M3 {
    let det = det3(g);
    let mut inv = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            let (i1, i2, j1, j2) = ((j + 1) % 3, (j + 2) % 3, (i + 1) % 3, (i + 2) % 3);
            inv[i][j] = (g[i1][j1] * g[i2][j2] - g[i1][j2] * g[i2][j1]) / det;
        }
    }
    inv
}

fn transpose(a: &M3) -> M3 {
    let mut r = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            r[i][j] = a[j][i];
        }
    }
    r
}

/// The P1 unit cell's atoms in structure-of-arrays form, grouped by element.
pub struct P1Atoms {
    /// (element index, first atom, atom count padded to LANES)
    pub groups: Vec<(usize, usize, usize)>,
    pub x: Vec<[f64; 3]>,
    pub beta: Vec<M3>,
    pub w: Vec<f64>,
    /// atoms before padding
    pub count: usize,
}

/// Applies every operation of the space group to every atom (no merging of atoms on special
/// positions: their occupancies already account for that, as in gemmi).
pub fn expand(model: &Model) -> P1Atoms {
    let f = model.cell.frac();
    let ft = transpose(&f);
    let gstar = super::reciprocal_metric(&model.cell);
    let ntab = formfactor::table().symbols.len();
    let mut per_el: Vec<Vec<([f64; 3], M3, f64)>> = vec![Vec::new(); ntab];
    for atom in &model.atoms {
        let xf = [
            f[0][0] * atom.pos[0] + f[0][1] * atom.pos[1] + f[0][2] * atom.pos[2],
            f[1][0] * atom.pos[0] + f[1][1] * atom.pos[1] + f[1][2] * atom.pos[2],
            f[2][0] * atom.pos[0] + f[2][1] * atom.pos[1] + f[2][2] * atom.pos[2],
        ];
        let beta: M3 = match atom.aniso {
            Some(u) => {
                let uc = [[u[0], u[3], u[4]], [u[3], u[1], u[5]], [u[4], u[5], u[2]]];
                let m = mul(&mul(&f, &uc), &ft);
                m.map(|r| r.map(|v| 2.0 * PI * PI * v))
            }
            None => gstar.map(|r| r.map(|v| atom.b_iso / 4.0 * v)),
        };
        for op in &model.space_group.ops {
            let x = op.apply(xf).map(|v| v - v.floor());
            let b = mul(&mul(&op.rot, &beta), &transpose(&op.rot));
            per_el[atom.element].push((x, b, atom.occ));
        }
    }
    let mut out = P1Atoms {
        groups: Vec::new(),
        x: Vec::new(),
        beta: Vec::new(),
        w: Vec::new(),
        count: 0,
    };
    for (el, list) in per_el.into_iter().enumerate() {
        if list.is_empty() {
            continue;
        }
        let start = out.x.len();
        out.count += list.len();
        let padded = list.len().div_ceil(LANES) * LANES;
        for (x, b, w) in list {
            out.x.push(x);
            out.beta.push(b);
            out.w.push(w);
        }
        for _ in out.x.len() - start..padded {
            out.x.push([0.0; 3]);
            out.beta.push([[0.0; 3]; 3]);
            out.w.push(0.0);
        }
        out.groups.push((el, start, padded));
    }
    out
}

/// Which reflections: those with hᵀ G h ≤ smax² for the selection metric G (Å⁻²).
#[derive(Clone, Copy, Debug)]
pub struct Sphere {
    pub metric: M3,
    pub smax2: f64,
}

impl Sphere {
    /// Largest |h|, |k|, |l| on the sphere: smax·|a|, … with |a|² = (G⁻¹)₁₁.
    fn box_max(&self) -> [i32; 3] {
        let inv = inverse(&self.metric);
        [0, 1, 2].map(|i| ((inv[i][i] * self.smax2).sqrt() + 1e-9).floor() as i32)
    }

    /// l interval of row (h, k), or None when the row misses the sphere.
    fn l_range(&self, h: i32, k: i32) -> Option<(i32, i32)> {
        let g = &self.metric;
        let (h, k) = (h as f64, k as f64);
        let a = g[2][2];
        let b = 2.0 * (g[0][2] * h + g[1][2] * k);
        let c = g[0][0] * h * h + 2.0 * g[0][1] * h * k + g[1][1] * k * k - self.smax2;
        let disc = b * b - 4.0 * a * c;
        if disc < 0.0 {
            return None;
        }
        let r = disc.sqrt();
        let (lo, hi) = ((-b - r) / (2.0 * a), (-b + r) / (2.0 * a));
        let (mut lo, mut hi) = (lo.ceil() as i32, hi.floor() as i32);
        // exact test at the ends (rounding of the roots)
        let inside = |l: i32| {
            let v = [h, k, l as f64];
            let mut q = 0.0;
            for i in 0..3 {
                for j in 0..3 {
                    q += v[i] * g[i][j] * v[j];
                }
            }
            q <= self.smax2 * (1.0 + 1e-12)
        };
        while lo <= hi && !inside(lo) {
            lo += 1;
        }
        while hi >= lo && !inside(hi) {
            hi -= 1;
        }
        if lo > hi {
            None
        } else {
            Some((lo, hi))
        }
    }
}

/// Computed amplitudes of one plane h ≥ 0: rows k_lo..=k_hi, each with its l interval.
struct PlaneOut {
    h: i32,
    rows: Vec<(i32, i32, Vec<f64>)>, // (k, l_lo, F values)
}

/// Per-atom walking state of one plane (structure of arrays).
struct State {
    er: Vec<f64>,
    ei: Vec<f64>,
    rkr: Vec<f64>,
    rki: Vec<f64>,
    rlr: Vec<f64>,
    rli: Vec<f64>,
    dlr: Vec<f64>,
    dli: Vec<f64>,
    ckk: Vec<f64>,
    cll: Vec<f64>,
    ckl: Vec<f64>,
    clk: Vec<f64>,
}

fn cis(turns: f64) -> (f64, f64) {
    let t = 2.0 * PI * (turns - turns.round());
    let (s, c) = t.sin_cos();
    (c, s)
}

impl State {
    /// State at (h, k0, 0).
    fn new(at: &P1Atoms, h: i32, k0: i32) -> State {
        let n = at.x.len();
        let mut s = State {
            er: vec![0.0; n],
            ei: vec![0.0; n],
            rkr: vec![0.0; n],
            rki: vec![0.0; n],
            rlr: vec![0.0; n],
            rli: vec![0.0; n],
            dlr: vec![0.0; n],
            dli: vec![0.0; n],
            ckk: vec![0.0; n],
            cll: vec![0.0; n],
            ckl: vec![0.0; n],
            clk: vec![0.0; n],
        };
        let (hf, kf) = (h as f64, k0 as f64);
        for j in 0..n {
            let x = at.x[j];
            let b = &at.beta[j];
            let q = b[0][0] * hf * hf + 2.0 * b[0][1] * hf * kf + b[1][1] * kf * kf;
            let bv_k = b[1][0] * hf + b[1][1] * kf;
            let bv_l = b[2][0] * hf + b[2][1] * kf;
            let mag = at.w[j] * (-q).exp();
            let (c, sn) = cis(hf * x[0] + kf * x[1]);
            s.er[j] = mag * c;
            s.ei[j] = mag * sn;
            let (c, sn) = cis(x[1]);
            let m = (-2.0 * bv_k - b[1][1]).exp();
            s.rkr[j] = m * c;
            s.rki[j] = m * sn;
            let (c, sn) = cis(x[2]);
            let m = (-2.0 * bv_l - b[2][2]).exp();
            s.rlr[j] = m * c;
            s.rli[j] = m * sn;
            let m = (2.0 * bv_l - b[2][2]).exp();
            s.dlr[j] = m * c;
            s.dli[j] = -m * sn;
            s.ckk[j] = (-2.0 * b[1][1]).exp();
            s.cll[j] = (-2.0 * b[2][2]).exp();
            s.ckl[j] = (-2.0 * b[1][2]).exp();
            s.clk[j] = (2.0 * b[1][2]).exp();
        }
        s
    }
}

/// Walks `steps` steps from the term `e` with ratio `r` (ratio factor `c`), adding the terms of
/// steps `skip..` to `out_re/out_im[step - skip]`. Slices have a length that is a multiple of
/// LANES.
type WalkFn = fn(
    &mut [f64],
    &mut [f64],
    &mut [f64],
    &mut [f64],
    &[f64],
    usize,
    usize,
    &mut [f64],
    &mut [f64],
);

simd_versions!(
    fn walk_fn => walk_body(er: &mut [f64], ei: &mut [f64], rr: &mut [f64], ri: &mut [f64], c: &[f64], steps: usize, skip: usize, out_re: &mut [f64], out_im: &mut [f64])
);

#[inline(always)]
fn walk_body(
    er: &mut [f64],
    ei: &mut [f64],
    rr: &mut [f64],
    ri: &mut [f64],
    c: &[f64],
    steps: usize,
    skip: usize,
    out_re: &mut [f64],
    out_im: &mut [f64],
) {
    let n = er.len();
    for step in 0..steps {
        let mut sr = [0.0f64; LANES];
        let mut si = [0.0f64; LANES];
        for base in (0..n).step_by(LANES) {
            let er = &mut er[base..base + LANES];
            let ei = &mut ei[base..base + LANES];
            let rr = &mut rr[base..base + LANES];
            let ri = &mut ri[base..base + LANES];
            let c = &c[base..base + LANES];
            for i in 0..LANES {
                sr[i] += er[i];
                si[i] += ei[i];
                let (a, b) = (er[i] * rr[i] - ei[i] * ri[i], er[i] * ri[i] + ei[i] * rr[i]);
                er[i] = a;
                ei[i] = b;
                rr[i] *= c[i];
                ri[i] *= c[i];
            }
        }
        if step >= skip {
            out_re[step - skip] += sr.iter().sum::<f64>();
            out_im[step - skip] += si.iter().sum::<f64>();
        }
    }
}

/// The rows `ks` (ascending) of plane h: walks k from the first to the last of them.
fn plane(
    at: &P1Atoms,
    sphere: &Sphere,
    gstar: &M3,
    h: i32,
    ks: &[i32],
    walk: WalkFn,
    tick: &(dyn Fn() -> Result<()> + Sync),
) -> Result<PlaneOut> {
    let table = formfactor::table();
    let (Some(&k0), Some(&k1)) = (ks.first(), ks.last()) else {
        return Ok(PlaneOut {
            h,
            rows: Vec::new(),
        });
    };
    let mut st = State::new(at, h, k0);
    let mut wanted = ks.iter().peekable();
    let mut rows = Vec::new();
    let ng = at.groups.len();
    let mut acc_re: Vec<Vec<f64>> = vec![Vec::new(); ng];
    let mut acc_im: Vec<Vec<f64>> = vec![Vec::new(); ng];
    let mut tmp = vec![0.0f64; 4 * BLOCK];
    let (mut rev_re, mut rev_im) = (Vec::new(), Vec::new());
    for k in k0..=k1 {
        let want = wanted.peek() == Some(&&k);
        if want {
            wanted.next();
            tick()?;
        }
        if let (true, Some((lo, hi))) = (want, sphere.l_range(h, k)) {
            let len = (hi - lo + 1) as usize;
            for (g, &(_, first, count)) in at.groups.iter().enumerate() {
                let (are, aim) = (&mut acc_re[g], &mut acc_im[g]);
                are.clear();
                are.resize(len, 0.0);
                aim.clear();
                aim.resize(len, 0.0);
                for b0 in (first..first + count).step_by(BLOCK) {
                    let b1 = (b0 + BLOCK).min(first + count);
                    let m = b1 - b0;
                    let (er, rest) = tmp.split_at_mut(BLOCK);
                    let (ei, rest) = rest.split_at_mut(BLOCK);
                    let (rr, ri) = rest.split_at_mut(BLOCK);
                    let (er, ei, rr, ri) = (&mut er[..m], &mut ei[..m], &mut rr[..m], &mut ri[..m]);
                    // up: l = 0, 1, …, hi
                    if hi >= 0 {
                        er.copy_from_slice(&st.er[b0..b1]);
                        ei.copy_from_slice(&st.ei[b0..b1]);
                        rr.copy_from_slice(&st.rlr[b0..b1]);
                        ri.copy_from_slice(&st.rli[b0..b1]);
                        let skip = lo.max(0) as usize;
                        let steps = hi as usize + 1;
                        let off = (lo.max(0) - lo) as usize;
                        walk(
                            er,
                            ei,
                            rr,
                            ri,
                            &st.cll[b0..b1],
                            steps,
                            skip,
                            &mut are[off..],
                            &mut aim[off..],
                        );
                    }
                    // down: l = −1, −2, …, lo; E(−1) = E(0)·D, ratio D·c
                    if lo <= -1 {
                        for j in 0..m {
                            let (e_r, e_i) = (st.er[b0 + j], st.ei[b0 + j]);
                            let (d_r, d_i) = (st.dlr[b0 + j], st.dli[b0 + j]);
                            er[j] = e_r * d_r - e_i * d_i;
                            ei[j] = e_r * d_i + e_i * d_r;
                            rr[j] = d_r * st.cll[b0 + j];
                            ri[j] = d_i * st.cll[b0 + j];
                        }
                        let top = hi.min(-1);
                        let skip = (-1 - top) as usize;
                        let steps = (-lo) as usize;
                        // step s is l = −1 − s, stored at index l − lo, i.e. reversed
                        let n = steps - skip;
                        rev_re.clear();
                        rev_re.resize(n, 0.0);
                        rev_im.clear();
                        rev_im.resize(n, 0.0);
                        walk(
                            er,
                            ei,
                            rr,
                            ri,
                            &st.cll[b0..b1],
                            steps,
                            skip,
                            &mut rev_re,
                            &mut rev_im,
                        );
                        for (i, (vr, vi)) in rev_re.iter().zip(&rev_im).enumerate() {
                            let l = top - i as i32;
                            are[(l - lo) as usize] += vr;
                            aim[(l - lo) as usize] += vi;
                        }
                    }
                }
            }
            // F = |Σ_e f_e(s) S_e|
            let mut f = Vec::with_capacity(len);
            for i in 0..len {
                let l = lo + i as i32;
                let v = [h as f64, k as f64, l as f64];
                let mut s2 = 0.0;
                for a in 0..3 {
                    for b in 0..3 {
                        s2 += v[a] * gstar[a][b] * v[b];
                    }
                }
                let stol2 = s2 / 4.0;
                let (mut fr, mut fi) = (0.0, 0.0);
                for (g, &(el, _, _)) in at.groups.iter().enumerate() {
                    let ff = table.coefs[el].at(stol2);
                    fr += ff * acc_re[g][i];
                    fi += ff * acc_im[g][i];
                }
                f.push((fr * fr + fi * fi).sqrt());
            }
            rows.push((k, lo, f));
        }
        if k == k1 {
            break;
        }
        // next row: k + 1
        for j in 0..at.x.len() {
            let (e_r, e_i) = (st.er[j], st.ei[j]);
            let (r_r, r_i) = (st.rkr[j], st.rki[j]);
            st.er[j] = e_r * r_r - e_i * r_i;
            st.ei[j] = e_r * r_i + e_i * r_r;
            st.rkr[j] *= st.ckk[j];
            st.rki[j] *= st.ckk[j];
            st.rlr[j] *= st.ckl[j];
            st.rli[j] *= st.ckl[j];
            st.dlr[j] *= st.clk[j];
            st.dli[j] *= st.clk[j];
        }
    }
    Ok(PlaneOut { h, rows })
}

/// Maps of rows (h, k) -> (h', k') with l -> s·l: the rotations of the space group (and −1,
/// Friedel) that keep the l axis, acting on Miller indices as h' = h·R. Rows related by them have
/// the same amplitudes (exactly so when the cell obeys the lattice's constraints).
fn row_maps(model: &Model) -> Vec<[i32; 5]> {
    let mut maps: Vec<[i32; 5]> = Vec::new();
    for op in &model.space_group.ops {
        let r = op.rot.map(|row| row.map(|v| v.round() as i32));
        if r[2][0] != 0 || r[2][1] != 0 || r[0][2] != 0 || r[1][2] != 0 {
            continue;
        }
        for sign in [1, -1] {
            let m = [
                sign * r[0][0],
                sign * r[1][0],
                sign * r[0][1],
                sign * r[1][1],
                sign * r[2][2],
            ];
            if !maps.contains(&m) {
                maps.push(m);
            }
        }
    }
    maps
}

fn apply_map(m: &[i32; 5], h: i32, k: i32) -> (i32, i32, i32) {
    (h * m[0] + k * m[1], h * m[2] + k * m[3], m[4])
}

/// Radius (Å⁻¹, squared) of the sphere in the model's metric that holds the reflections of
/// `sphere` (whose metric may be another cell's): smax² · λmax(G_sel⁻¹ G_model).
fn model_radius2(sphere: &Sphere, gmodel: &M3) -> f64 {
    let inv = inverse(&sphere.metric);
    let m = mul(&inv, gmodel);
    // power iteration: the eigenvalues are real and positive
    let mut v = [1.0, 0.7, 0.3];
    let mut lambda = 0.0;
    for _ in 0..200 {
        let w = [0, 1, 2].map(|i| (0..3).map(|j| m[i][j] * v[j]).sum::<f64>());
        let n = w.iter().map(|x| x * x).sum::<f64>().sqrt();
        if !(n > 0.0) {
            break;
        }
        lambda = n / v.iter().map(|x| x * x).sum::<f64>().sqrt();
        v = w.map(|x| x / n);
    }
    sphere.smax2 * lambda * (1.0 + 1e-9)
}

/// F for every reflection of `sphere`, as the padded table the kernels read: the bounds are
/// those of the reflections computed, the inner block is prefilled with `default_f` (as for an
/// `-hkl` file), `hkls` is the number of reflections. When `sphere`'s metric is not the model's,
/// the table covers the sphere in the model's metric that contains it.
///
/// Only one row (h, k) per orbit of the row maps ([`row_maps`]) is summed; the others are
/// copies (8× less work in P 43 21 2, 12× in P 63 2 2, 2× in P1 from Friedel's law).
pub fn compute(
    model: &Model,
    sphere: &Sphere,
    default_f: f64,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<(HklGrid, usize)> {
    let at = expand(model);
    let gstar = super::reciprocal_metric(&model.cell);
    let sphere = Sphere {
        metric: gstar,
        smax2: if sphere.metric == gstar {
            sphere.smax2
        } else {
            model_radius2(sphere, &gstar)
        },
    };
    let [hmax, kmax, lmax] = sphere.box_max();
    let boxed = [hmax, kmax, lmax]
        .iter()
        .try_fold(1u64, |acc, &m| acc.checked_mul(2 * m.max(0) as u64 + 2));
    if boxed.is_none_or(|n| n > crate::io::hkl::MAX_TABLE as u64) {
        return Err(Error::input(format!(
            "structure factors to {:.3} Å in a {:.1} x {:.1} x {:.1} Å cell need h, k, l up to {hmax}, {kmax}, {lmax}: too large a table; give a larger -dmin",
            1.0 / sphere.smax2.sqrt(),
            model.cell.a,
            model.cell.b,
            model.cell.c
        )));
    }
    let maps = row_maps(model);
    // canonical rows: the largest (h, k) of each orbit
    let mut planes_k: Vec<Vec<i32>> = vec![Vec::new(); hmax as usize + 1];
    let mut total = 0usize;
    for h in -hmax..=hmax {
        for k in -kmax..=kmax {
            if sphere.l_range(h, k).is_none() {
                continue;
            }
            let canon = maps
                .iter()
                .map(|m| {
                    let (a, b, _) = apply_map(m, h, k);
                    (a, b)
                })
                .max()
                .unwrap_or((h, k));
            if canon == (h, k) && h >= 0 {
                planes_k[h as usize].push(k);
                total += 1;
            }
        }
    }
    let done = AtomicUsize::new(0);
    let last = AtomicUsize::new(0);
    let tick = || -> Result<()> {
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::new(
                ErrorKind::Cancelled,
                "structure-factor calculation cancelled",
            ));
        }
        let d = done.fetch_add(1, Ordering::Relaxed) + 1;
        let pct = d * 100 / total.max(1);
        if pct > last.fetch_max(pct, Ordering::Relaxed) {
            progress(pct.min(100) as f32 / 100.0);
        }
        Ok(())
    };
    let walk = walk_fn();
    // largest planes first, for a balanced parallel finish
    let mut order: Vec<usize> = (0..planes_k.len()).collect();
    order.sort_by_key(|&h| std::cmp::Reverse(planes_k[h].len()));
    let planes: Vec<PlaneOut> = order
        .into_par_iter()
        .map(|h| plane(&at, &sphere, &gstar, h as i32, &planes_k[h], walk, &tick))
        .collect::<Result<Vec<_>>>()?;

    // bounds of all the rows written
    let (mut hb, mut kb, mut lb) = (0i32, 0i32, 0i32);
    for p in &planes {
        for (k, lo, v) in &p.rows {
            let hi = lo + v.len() as i32 - 1;
            for m in &maps {
                let (a, b, _) = apply_map(m, p.h, *k);
                hb = hb.max(a.abs());
                kb = kb.max(b.abs());
            }
            lb = lb.max(lo.abs()).max(hi.abs());
        }
    }
    let (hb, kb, lb) = (hb as i64, kb as i64, lb as i64);
    let what = format!("structure factors to {:.3} Å", 1.0 / sphere.smax2.sqrt());
    let mut grid =
        crate::io::hkl::new_table(&what, [-hb, hb, -kb, kb, -lb, lb], default_f, usize::MAX)?;
    if let Some(bad) = planes
        .iter()
        .flat_map(|p| p.rows.iter().map(move |r| (p.h, r)))
        .find(|(_, (_, _, v))| v.iter().any(|x| !x.is_finite()))
    {
        return Err(Error::input(format!(
            "structure factors are not finite (at h = {}, k = {}): the model's B factors, ANISOU tensors or occupancies are out of range",
            bad.0, bad.1 .0
        )));
    }
    let mut written = vec![false; grid.data.len()];
    let mut count = 0usize;
    for p in &planes {
        for (k, lo, v) in &p.rows {
            for m in &maps {
                let (a, b, s) = apply_map(m, p.h, *k);
                for (i, &fv) in v.iter().enumerate() {
                    let j = grid.index(a, b, s * (lo + i as i32));
                    grid.data[j] = fv;
                    if !written[j] {
                        written[j] = true;
                        count += 1;
                    }
                }
            }
        }
    }
    grid.hkls = count;
    Ok((grid, at.count))
}
