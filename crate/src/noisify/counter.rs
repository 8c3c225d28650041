//! The counter generator's detector effects (`Generator::Counter`): every deviate of pixel `i`
//! is a pure function of (seed, `i`, stream), computed 32 pixels at a time in vector lanes
//! (`rng::philox_group`: 16 Philox4x32-10 blocks side by side), in one pass over the image when
//! there is no PSF: Philox → flicker and calibration (the latter's deviates kept from image to
//! image) → Poisson → read-out noise, gain and ADC → counts, with no intermediate image.
//!
//! Pixel `i`'s block in the noise stream (`rng::group_block`) gives its Poisson uniform (word 0
//! or 1, 32 bits) and its read-out Gaussian (f32 Box–Muller of words 2 and 3). Means below 12
//! are inverted sixteen pixels at once ([`invert16`]: every lane steps k together until all have
//! found their count; the same arithmetic as `rng::poisson_inversion`). Means from 12 to 1024
//! are split into their whole part, drawn from its table (`rng::PoissonTable`, a 63-bit
//! uniform from the pixel's block in stream [`WHOLE`]: about one comparison), and their
//! fraction, inverted in the same lanes as the small means at the pixel's noise-stream uniform
//! (`rng::poisson_split`). Means of 1024 and more draw from the pixel's own further stream
//! (`rng::CounterRng`: PTRS up to 1e6, the Gaussian approximation above; PTRS's first try,
//! which most accept, for a group's such pixels together in vector lanes, [`ptrs_group`]).
//! Every vector unit, the scalar code and wasm give the same bits.

use super::{count, max_and_negatives, Effects, MAX_U16, MAX_U32};
use crate::error::{Error, Result};
use crate::rng::{
    exp_neg_f32, group_gaussians, philox_group, poisson_ptrs, poisson_table, ptrs_accepts,
    uniform_of, unit_of_word, wide_of, CounterRng, LaneKernel, Lanes, PoissonTable, BLOCKS, GROUP,
    MAX_INVERSION, RECIPROCALS, TABLE_END, TABLE_FIRST,
};
use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The streams: which deviates of a pixel each effect draws from.
pub const FLICKER: u32 = 0;
pub const CALIBRATION: u32 = 1;
/// Means of 1024 and more: the pixel's own stream (`CounterRng::new(seed, i, POISSON)`).
pub const POISSON: u32 = 2;
/// Means from 12 to 1024: the 63-bit uniform of the whole part's table (words 0-1 or 2-3 of the
/// pixel's block, `rng::counter_wide`).
pub const WHOLE: u32 = 3;
/// The Poisson uniform (words 0/1) and read-out Gaussian (words 2-3) of every pixel.
pub const NOISE: u32 = 5;

/// Pixels per parallel chunk: a constant (a multiple of [`GROUP`]), so that the sums (chunk
/// sums added in chunk order) do not depend on the number of threads.
pub const CHUNK: usize = 1 << 14;
/// Partial sums per chunk (their order is fixed).
const PARTS: usize = 8;
/// Pixels a step of the Poisson inversion (two AVX-512 registers of f64, one of f32 for the
/// exponential): half a group, so that a group takes two tests of its first step and two step
/// loops, not four (eight at a time: ≈ 5 % slower on case (a)'s image with AVX-512).
const INV: usize = 16;

/// Poisson counts of means `x` (each in [0, 12)) at uniforms `u`: inversion of the cumulative
/// distribution as `rng::poisson_inversion`, the sixteen lanes stepping k together until every
/// lane has reached its uniform.
#[inline(always)]
fn invert16(u: &[f64; INV], x: &[f64; INV]) -> [f64; INV] {
    // lanes with u <= 1 - x count 0 (as `rng::poisson_inversion`'s first test); when all do
    // (means far below 1), no exponential
    let mut zero = [false; INV];
    for l in 0..INV {
        zero[l] = u[l] <= 1.0 - x[l];
    }
    if zero.iter().fold(true, |a, &z| a & z) {
        return [0.0; INV];
    }
    // the exponential in f32 lanes of their own (sixteen a vector with AVX-512, not two
    // halves converted from the f64 lanes)
    let mut xf = [0f32; INV];
    for l in 0..INV {
        xf[l] = x[l] as f32;
    }
    let mut ef = [0f32; INV];
    for l in 0..INV {
        ef[l] = exp_neg_f32(xf[l]);
    }
    // a lane that counts 0 starts at cdf 1 (its steps never reach u)
    let (mut p, mut cdf) = ([0f64; INV], [0f64; INV]);
    for l in 0..INV {
        p[l] = ef[l] as f64;
        cdf[l] = if zero[l] { 1.0 } else { p[l] };
    }
    // k is the last step j whose test `u > cdf` held (the tests hold for j = 1 .. k and fail
    // from k + 1 on: cdf only grows), kept by a select, not a count. The first FIRST steps
    // without a test of the lanes (more steps leave k as it is), then one test a step
    let mut k = [0f64; INV];
    const FIRST: usize = 2;
    for j in 1..=FIRST {
        let r = RECIPROCALS[j];
        for l in 0..INV {
            k[l] = if u[l] > cdf[l] { j as f64 } else { k[l] };
            p[l] *= x[l] * r;
            cdf[l] += p[l];
        }
    }
    for j in FIRST + 1..=MAX_INVERSION {
        let mut go = [false; INV];
        for l in 0..INV {
            go[l] = u[l] > cdf[l];
        }
        if !go.iter().fold(false, |a, &g| a | g) {
            break;
        }
        let r = RECIPROCALS[j];
        for l in 0..INV {
            k[l] = if go[l] { j as f64 } else { k[l] };
            p[l] *= x[l] * r;
            cdf[l] += p[l];
        }
    }
    k
}

/// What a chunk adds to the totals.
#[derive(Clone, Copy, Debug, Default)]
struct Part {
    before: f64,
    after: f64,
    overloads: usize,
    /// The input's largest value and negative values (`shot`).
    max: f32,
    negative: usize,
}

/// The parameters of the pass.
struct Pass<'a> {
    e: &'a Effects,
    /// The calibration's deviates of the whole image (kept), if any.
    cal: Option<&'a [f32]>,
    limit: f64,
    /// Poisson noise on the input (else the input is counts already); the read-out runs when
    /// its output is there.
    shot: bool,
}

/// A chunk's partial sums (a fixed order: the same for any number of threads).
struct Sums {
    before: [f64; PARTS],
    after: [f64; PARTS],
    /// Overloads (whole numbers, exact in f64).
    over: [f64; PARTS],
}

/// One group's outputs (those of the pass): written, never read (they start uninitialised).
struct Outs<'a> {
    noiseless: Option<&'a mut [MaybeUninit<u32>; GROUP]>,
    counts: Option<&'a mut [MaybeUninit<f32>; GROUP]>,
    adu: Option<&'a mut [MaybeUninit<u32>; GROUP]>,
}

/// One group of [`GROUP`] pixels from pixel `i0` (`n` of them real, the rest padding of
/// input 0): every loop runs over the whole group (fixed-size arrays: vector instructions).
#[inline(always)]
fn group(
    pass: &Pass,
    i0: usize,
    n: usize,
    inp: &[f32; GROUP],
    cal: Option<&[f32; GROUP]>,
    out: Outs,
    sums: &mut Sums,
) {
    let e = pass.e;
    let (gain, adc, readout, limit) = (e.gain, e.adc, e.readout, pass.limit);
    let grp = (i0 / GROUP) as u64;
    let w = philox_group(e.seed, NOISE, grp);
    let mut v = [0f64; GROUP];
    for k in 0..GROUP {
        v[k] = inp[k] as f64;
    }
    if pass.shot {
        if let Some(nl) = out.noiseless {
            for k in 0..GROUP {
                nl[k] = MaybeUninit::new(count(v[k] * gain + adc));
            }
        }
        // the means, rounded to f32 as upstream's
        if e.flicker > 0.0 {
            let f = group_gaussians(&philox_group(e.seed, FLICKER, grp));
            for k in 0..GROUP {
                v[k] *= 1.0 + e.flicker * f[k] as f64;
            }
        }
        if let Some(c) = cal {
            for k in 0..GROUP {
                v[k] *= 1.0 + e.calibration * c[k] as f64;
            }
        }
        // means below 12 are inverted; from 12 to 1024 the whole part from its table and the
        // fraction inverted (`rng::poisson_split`); from 1024 PTRS (`big`). Most groups have
        // no mean of 12 or more (`high`): their kinds are one test
        let mut x = [0f64; GROUP];
        let mut high = [false; GROUP];
        for k in 0..GROUP {
            let m = v[k] as f32 as f64;
            // NaN and means that are not positive count 0
            x[k] = if m > 0.0 && m < TABLE_FIRST as f64 {
                m
            } else {
                0.0
            };
            high[k] = m >= TABLE_FIRST as f64;
            v[k] = m;
        }
        let high = high.iter().fold(false, |a, &h| a | h);
        let (mut whole, mut big) = ([0u32; GROUP], [false; GROUP]);
        if high {
            for k in 0..GROUP {
                let m = v[k];
                let tab = m >= TABLE_FIRST as f64 && m < TABLE_END as f64;
                // SAFETY: 0 or a mean in [12, 1024): in range of i32 (not `as`: its
                // saturation does not vectorise)
                whole[k] = unsafe { (if tab { m } else { 0.0 }).to_int_unchecked::<i32>() } as u32;
                if tab {
                    x[k] = m - whole[k] as f64;
                }
                big[k] = m >= TABLE_END as f64;
            }
        }
        let mut u = [0f64; GROUP];
        for l in 0..BLOCKS {
            u[l] = unit_of_word(w[0][l]);
            u[BLOCKS + l] = unit_of_word(w[1][l]);
        }
        let mut c = [0f64; GROUP];
        for s in 0..GROUP / INV {
            let k = invert16(
                u[s * INV..(s + 1) * INV].try_into().unwrap(),
                x[s * INV..(s + 1) * INV].try_into().unwrap(),
            );
            c[s * INV..(s + 1) * INV].copy_from_slice(&k);
        }
        if high && whole.iter().fold(0, |a, &w| a | w) != 0 {
            // the whole parts: from their tables at the 63-bit uniforms of stream WHOLE
            let t = philox_group(e.seed, WHOLE, grp);
            let mut last = (0, None::<&PoissonTable>);
            for k in 0..GROUP {
                if whole[k] != 0 {
                    if last.0 != whole[k] {
                        last = (whole[k], Some(poisson_table(whole[k])));
                    }
                    let (l, h) = (k % BLOCKS, k / BLOCKS);
                    let w = wide_of(t[2 * h][l], t[2 * h + 1][l]);
                    c[k] += last.1.unwrap().count(w) as f64;
                }
            }
        }
        if high && big.iter().fold(false, |a, &b| a | b) {
            // (the padding's means are 0: never big)
            if big.iter().filter(|&&b| b).count() >= 2 {
                ptrs_group(e.seed, i0, &v, &big, &mut c);
            } else {
                for k in 0..n {
                    if big[k] {
                        c[k] = CounterRng::new(e.seed, (i0 + k) as u64, POISSON).poisson(v[k]);
                    }
                }
            }
        }
        // (the padding's means are 0: counts 0)
        for k in 0..GROUP {
            v[k] = c[k] as f32 as f64;
        }
        add_parts(&mut sums.before, &v);
        if let Some(o) = out.counts {
            for k in 0..GROUP {
                o[k] = MaybeUninit::new(v[k] as f32);
            }
        }
    }
    if let Some(o) = out.adu {
        let g = if readout > 0.0 {
            group_gaussians(&w)
        } else {
            [0f32; GROUP]
        };
        let mut a = [0f64; GROUP];
        for k in 0..GROUP {
            a[k] = v[k] * gain + adc + readout * g[k] as f64;
        }
        for k in 0..GROUP {
            o[k] = MaybeUninit::new(count(a[k]));
        }
        let mut over = [0f64; GROUP];
        for k in 0..GROUP {
            over[k] = ((a[k] > limit) & (k < n)) as u32 as f64;
        }
        add_parts(&mut sums.after, &v);
        add_parts(&mut sums.over, &over);
    }
}

/// The Poisson counts of a group's pixels of means 1024 and more (`big`; `m`: the means), as
/// `CounterRng::new(seed, pixel, POISSON).poisson(mean)` draws them: PTRS's first try for the
/// whole group in vector lanes (the first block of each pixel's stream: 32 Philox blocks side
/// by side, the same arithmetic as `rng::poisson_ptrs`), its squeeze in the lanes too (it
/// accepts most tries at these means), the full test of the rest
/// one pixel at a time (`rng::ptrs_accepts`), further tries from the pixel's second block
/// (`CounterRng::at_block`); means above 1e6 from the scalar sampler.
#[inline(always)]
fn ptrs_group(seed: i64, i0: usize, m: &[f64; GROUP], big: &[bool; GROUP], c: &mut [f64; GROUP]) {
    // pixel i's stream starts at block i of stream POISSON: blocks i0 .. i0 + 32
    let first = (i0 / BLOCKS) as u64;
    let (w0, w1) = (
        philox_group(seed, POISSON, first),
        philox_group(seed, POISSON, first + 1),
    );
    let (mut u1, mut u2) = ([0f64; GROUP], [0f64; GROUP]);
    for l in 0..BLOCKS {
        u1[l] = uniform_of(w0[0][l], w0[1][l]);
        u2[l] = uniform_of(w0[2][l], w0[3][l]);
        u1[BLOCKS + l] = uniform_of(w1[0][l], w1[1][l]);
        u2[BLOCKS + l] = uniform_of(w1[2][l], w1[3][l]);
    }
    let (mut k, mut ok) = ([0f64; GROUP], [false; GROUP]);
    let (mut aa, mut bb, mut uss) = ([0f64; GROUP], [0f64; GROUP], [0f64; GROUP]);
    for j in 0..GROUP {
        // (other lanes: a harmless mean, their results unused)
        let lam = if big[j] { m[j] } else { 12.0 };
        let slam = lam.sqrt();
        let b = 0.931 + 2.53 * slam;
        let a = -0.059 + 0.02483 * b;
        let vr = 0.9277 - 3.6224 / (b - 2.0);
        let u = u1[j] - 0.5;
        let v = u2[j];
        let us = 0.5 - u.abs();
        k[j] = ((2.0 * a / us + b) * u + lam + 0.43).floor();
        ok[j] = us >= 0.07 && v <= vr;
        (aa[j], bb[j], uss[j]) = (a, b, us);
    }
    for j in 0..GROUP {
        if big[j] {
            let (lam, pixel) = (m[j], (i0 + j) as u64);
            c[j] = if lam > 1.0e6 {
                CounterRng::new(seed, pixel, POISSON).poisson(lam)
            } else if ok[j] || ptrs_accepts(lam, aa[j], bb[j], uss[j], u2[j], k[j]) {
                k[j]
            } else {
                // the next tries, from the pixel's second block
                let mut r = CounterRng::at_block(seed, pixel, POISSON, 1);
                poisson_ptrs(lam, || r.uniform())
            };
        }
    }
}

/// Adds a group's values into the partial sums (value k into sum k mod `PARTS`, in order).
#[inline(always)]
fn add_parts(parts: &mut [f64; PARTS], v: &[f64; GROUP]) {
    for j in 0..GROUP / PARTS {
        let s: &[f64; PARTS] = v[j * PARTS..(j + 1) * PARTS].try_into().unwrap();
        for l in 0..PARTS {
            parts[l] += s[l];
        }
    }
}

/// One chunk of [`Pass`], compiled per vector unit (`Lanes::run`).
struct Chunk<'a, 'b> {
    pass: &'b Pass<'a>,
    /// The chunk's first pixel (a multiple of [`GROUP`]).
    first: usize,
    inp: &'b [f32],
    /// Noiseless counts of the input (`shot`; empty: not asked for). The outputs start
    /// uninitialised: the chunk writes every element of each.
    noiseless: &'b mut [MaybeUninit<u32>],
    /// The Poisson counts (`shot` without `read`; else empty).
    counts: &'b mut [MaybeUninit<f32>],
    /// The counts with read-out noise (`read`; else empty).
    adu: &'b mut [MaybeUninit<u32>],
}

/// The group at `k` of a slice that has it whole (`None` for an empty slice).
#[inline(always)]
fn at<T>(v: &mut [T], k: usize) -> Option<&mut [T; GROUP]> {
    (!v.is_empty()).then(|| (&mut v[k..k + GROUP]).try_into().unwrap())
}

impl LaneKernel for Chunk<'_, '_> {
    type Out = Part;
    #[inline(always)]
    fn compute(self) -> Part {
        let Chunk {
            pass,
            first,
            inp,
            noiseless,
            counts,
            adu,
        } = self;
        let mut sums = Sums {
            before: [0.0; PARTS],
            after: [0.0; PARTS],
            over: [0.0; PARTS],
        };
        let cal = pass.cal.map(|c| &c[first..first + inp.len()]);
        let whole = inp.len() / GROUP * GROUP;
        for k in (0..whole).step_by(GROUP) {
            let outs = Outs {
                noiseless: at(noiseless, k),
                counts: at(counts, k),
                adu: at(adu, k),
            };
            let c = cal.map(|c| (&c[k..k + GROUP]).try_into().unwrap());
            let i = (&inp[k..k + GROUP]).try_into().unwrap();
            group(pass, first + k, GROUP, i, c, outs, &mut sums);
        }
        // the last, partial group: through padded copies
        let n = inp.len() - whole;
        if n > 0 {
            let mut i = [0f32; GROUP];
            i[..n].copy_from_slice(&inp[whole..]);
            let mut c = [0f32; GROUP];
            if let Some(cal) = cal {
                c[..n].copy_from_slice(&cal[whole..]);
            }
            let (mut nl, mut ct, mut ad) = (
                [MaybeUninit::new(0u32); GROUP],
                [MaybeUninit::new(0f32); GROUP],
                [MaybeUninit::new(0u32); GROUP],
            );
            let outs = Outs {
                noiseless: (!noiseless.is_empty()).then_some(&mut nl),
                counts: (!counts.is_empty()).then_some(&mut ct),
                adu: (!adu.is_empty()).then_some(&mut ad),
            };
            group(pass, first + whole, n, &i, cal.map(|_| &c), outs, &mut sums);
            if !noiseless.is_empty() {
                noiseless[whole..].copy_from_slice(&nl[..n]);
            }
            if !counts.is_empty() {
                counts[whole..].copy_from_slice(&ct[..n]);
            }
            if !adu.is_empty() {
                adu[whole..].copy_from_slice(&ad[..n]);
            }
        }
        // the input's maximum and negatives, while its chunk is in the cache
        let (max, negative) = if pass.shot {
            max_and_negatives(inp)
        } else {
            (0.0, 0)
        };
        Part {
            before: sums.before.iter().sum(),
            after: sums.after.iter().sum(),
            overloads: sums.over.iter().sum::<f64>() as usize,
            max,
            negative,
        }
    }
}

fn check_cancel(cancel: &AtomicBool) -> Result<()> {
    if cancel.load(Ordering::Relaxed) {
        Err(Error::cancelled())
    } else {
        Ok(())
    }
}

/// The calibration's Gaussians of pixels `first ..` (one group's pixels a step).
struct Gaussians<'a> {
    seed: i64,
    stream: u32,
    first: usize,
    out: &'a mut [f32],
}

impl LaneKernel for Gaussians<'_> {
    type Out = ();
    #[inline(always)]
    fn compute(self) {
        for (j, out) in self.out.chunks_mut(GROUP).enumerate() {
            let group = (self.first / GROUP + j) as u64;
            let g = group_gaussians(&philox_group(self.seed, self.stream, group));
            out.copy_from_slice(&g[..out.len()]);
        }
    }
}

/// The Gaussians of pixels `0..n` in `stream` under `seed` (f32, as `rng::counter_pixel`).
pub fn gaussians(lanes: Lanes, seed: i64, stream: u32, n: usize) -> Vec<f32> {
    let mut v = vec![0f32; n];
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(c, out)| {
        lanes.run(Gaussians {
            seed,
            stream,
            first: c * CHUNK,
            out,
        })
    });
    v
}

/// The calibration deviates of pixels `0..n` under `seed`, kept for the next image: the
/// calibration error is the detector's, the same in every image of a series (a dataset, the
/// page's re-renders), so only its first image pays for it. One vector is kept (the last
/// seed's, the longest asked for: 4 bytes a pixel).
fn calibration_deviates(seed: i64, n: usize, lanes: Lanes) -> Arc<Vec<f32>> {
    static KEPT: Mutex<Option<(i64, Arc<Vec<f32>>)>> = Mutex::new(None);
    let kept = |k: &Option<(i64, Arc<Vec<f32>>)>| {
        k.as_ref()
            .filter(|(s, v)| *s == seed && v.len() >= n)
            .map(|(_, v)| v.clone())
    };
    if let Some(v) = kept(&KEPT.lock().unwrap_or_else(|e| e.into_inner())) {
        return v;
    }
    let v = Arc::new(gaussians(lanes, seed, CALIBRATION, n));
    *KEPT.lock().unwrap_or_else(|e| e.into_inner()) = Some((seed, v.clone()));
    v
}

/// Room for an output of `n` values, or none when it is not `used`: not filled (the pass
/// writes every value; a zeroed allocation would cost a fill of recycled memory), its length
/// set once written ([`filled`]).
fn room<T>(n: usize, used: bool) -> Vec<T> {
    if used {
        Vec::with_capacity(n)
    } else {
        Vec::new()
    }
}

/// [`room`] for counts: a recycled image of about the size when there is one (`spare`).
fn room_u32(n: usize, used: bool) -> Vec<u32> {
    match used.then(|| crate::spare::take(n)).flatten() {
        Some(v) => v,
        None => room(n, used),
    }
}

/// An output of [`room`] whose first `n` values the pass has written (every chunk's whole
/// slice: `Chunk::compute`).
fn filled<T>(mut v: Vec<T>, n: usize) -> Vec<T> {
    if v.capacity() > 0 {
        debug_assert!(v.capacity() >= n);
        // SAFETY: the pass finished without error, and every chunk of the output (the first
        // `n` values of its spare capacity, in chunks of `CHUNK`) wrote each of its values
        unsafe { v.set_len(n) };
    }
    v
}

/// The outputs of [`run`].
pub struct Counted {
    /// Noiseless counts (`shot` with `noiseless`; else empty).
    pub noiseless: Vec<u32>,
    /// Poisson counts (`shot` without `read`).
    pub counts: Vec<f32>,
    /// Counts with read-out noise (`read`).
    pub adu: Vec<u32>,
    pub before: f64,
    pub after: f64,
    pub overloads: usize,
    /// The input's largest value (0 if none is positive) and its negative values (`shot`;
    /// else 0): what `detect` reports, without a pass of its own.
    pub max: f32,
    pub negative: usize,
}

/// The counter generator's pass over a whole image, the pixels in parallel chunks: `shot`
/// (Poisson noise of the photons `inp`, and with `noiseless` their noiseless counts), `read`
/// (read-out noise, gain and ADC on the counts: of the Poisson pass when both, else `inp`).
pub fn run(
    inp: &[f32],
    e: &Effects,
    bits32: bool,
    (shot, noiseless): (bool, bool),
    read: bool,
    cancel: &AtomicBool,
) -> Result<Counted> {
    run_on(
        Lanes::detected(),
        inp,
        e,
        bits32,
        (shot, noiseless),
        read,
        cancel,
    )
}

/// [`run`] on the given vector unit.
fn run_on(
    lanes: Lanes,
    inp: &[f32],
    e: &Effects,
    bits32: bool,
    (shot, keep_noiseless): (bool, bool),
    read: bool,
    cancel: &AtomicBool,
) -> Result<Counted> {
    let n = inp.len();
    let calibration =
        (shot && e.calibration > 0.0).then(|| calibration_deviates(e.calib_seed, n, lanes));
    let pass = Pass {
        e,
        cal: calibration.as_ref().map(|v| &v[..n]),
        limit: if bits32 { MAX_U32 } else { MAX_U16 },
        shot,
    };
    let mut noiseless = room_u32(n, shot && keep_noiseless);
    let mut counts = room::<f32>(n, shot && !read);
    let mut adu = room_u32(n, read);
    // each output's chunks, of its first `n` values (an output not used: empty chunks)
    fn chunks<T: Send>(
        v: &mut Vec<T>,
        n: usize,
    ) -> Box<dyn Iterator<Item = &mut [MaybeUninit<T>]> + '_> {
        if v.capacity() == 0 {
            Box::new(std::iter::repeat_with(|| &mut [][..]))
        } else {
            Box::new(v.spare_capacity_mut()[..n].chunks_mut(CHUNK))
        }
    }
    let jobs: Vec<_> = inp
        .chunks(CHUNK)
        .zip(chunks(&mut noiseless, n))
        .zip(chunks(&mut counts, n))
        .zip(chunks(&mut adu, n))
        .enumerate()
        .map(|(c, (((inp, noiseless), counts), adu))| (c, inp, noiseless, counts, adu))
        .collect();
    let parts = jobs
        .into_par_iter()
        .map(|(c, inp, noiseless, counts, adu)| {
            check_cancel(cancel)?;
            Ok(lanes.run(Chunk {
                pass: &pass,
                first: c * CHUNK,
                inp,
                noiseless,
                counts,
                adu,
            }))
        })
        .collect::<Result<Vec<Part>>>()?;
    Ok(Counted {
        noiseless: filled(noiseless, n),
        counts: filled(counts, n),
        adu: filled(adu, n),
        before: parts.iter().map(|p| p.before).sum(),
        after: parts.iter().map(|p| p.after).sum(),
        overloads: parts.iter().map(|p| p.overloads).sum(),
        max: parts.iter().fold(0.0, |a, p| a.max(p.max)),
        negative: parts.iter().map(|p| p.negative).sum(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::noisify::Generator;
    use crate::rng::{counter_pixel, counter_wide, poisson_inversion, poisson_split};

    fn effects(readout: f64, calibration: f64, flicker: f64) -> Effects {
        Effects {
            gain: 1.0,
            adc: 0.0,
            readout,
            flicker,
            calibration,
            seed: -17,
            calib_seed: 99,
            rng: Generator::Counter,
            ..Effects::default()
        }
    }

    fn pass(lanes: Lanes, inp: &[f32], e: &Effects, shot: bool, read: bool) -> Counted {
        run_on(
            lanes,
            inp,
            e,
            true,
            (shot, shot),
            read,
            &AtomicBool::new(false),
        )
        .unwrap()
    }

    /// Pixel `i`'s counts one at a time from the reference functions of `rng`.
    fn reference(e: &Effects, i: usize, photons: f32) -> (u32, f64, u32) {
        let i = i as u64;
        let (word, g) = counter_pixel(e.seed, i, NOISE);
        let mut p = photons as f64;
        if e.flicker > 0.0 {
            p *= 1.0 + e.flicker * counter_pixel(e.seed, i, FLICKER).1 as f64;
        }
        if e.calibration > 0.0 {
            p *= 1.0 + e.calibration * counter_pixel(e.calib_seed, i, CALIBRATION).1 as f64;
        }
        let m = p as f32 as f64;
        let c = if m >= TABLE_END as f64 {
            CounterRng::new(e.seed, i, POISSON).poisson(m)
        } else if m >= TABLE_FIRST as f64 {
            poisson_split(m, counter_wide(e.seed, i, WHOLE), unit_of_word(word))
        } else if m > 0.0 {
            poisson_inversion(unit_of_word(word), m)
        } else {
            0.0
        };
        let c = c as f32 as f64;
        let noiseless = count(photons as f64 * e.gain + e.adc);
        (
            noiseless,
            c,
            count(c * e.gain + e.adc + e.readout * g as f64),
        )
    }

    #[test]
    fn every_vector_unit_gives_the_reference_counts() {
        // means from 0 to 2e6 (inversion, tables, PTRS, the Gaussian approximation), negatives, a NaN,
        // a length that is not a whole number of groups, every effect
        let n = 2 * CHUNK + 77;
        let inp: Vec<f32> = (0..n)
            .map(|i| match i % 97 {
                0 => -3.0,
                1 => f32::NAN,
                2 => 2e6,
                3 => 11.99,
                4 => 12.0,
                5..=9 => (i % 13) as f32 * 40.0,
                10 => 1023.99,
                11 => 1024.0,
                12 => 3e4,
                50 => 7777.0,
                _ => ((i * 7919) % 1000) as f32 * 0.012,
            })
            .collect();
        let e = Effects {
            adc: 40.0,
            gain: 1.5,
            ..effects(3.0, 0.03, 0.02)
        };
        let lanes = Lanes::available();
        assert!(lanes.contains(&Lanes::Baseline));
        let want: Vec<(u32, f64, u32)> = (0..n).map(|i| reference(&e, i, inp[i])).collect();
        for &l in &lanes {
            let fused = pass(l, &inp, &e, true, true);
            let shot = pass(l, &inp, &e, true, false);
            for i in 0..n {
                assert_eq!(fused.noiseless[i], want[i].0, "{l:?} noiseless {i}");
                assert_eq!(fused.adu[i], want[i].2, "{l:?} adu {i} of mean {}", inp[i]);
                assert_eq!(shot.counts[i] as f64, want[i].1, "{l:?} count {i}");
            }
            // the read-out alone on the counts: the fused pass's image and totals
            let read = pass(l, &shot.counts, &e, false, true);
            assert_eq!(read.adu, fused.adu, "{l:?}");
            assert_eq!(read.after, fused.after);
            assert_eq!(shot.before, fused.before);
            assert_eq!(read.overloads, fused.overloads);
            let sum: f64 = want.iter().map(|w| w.1).sum();
            assert!(
                (fused.before - sum).abs() <= 1e-9 * sum,
                "{} vs {sum}",
                fused.before
            );
        }
        // gaussians(): the reference's too
        for &l in &lanes {
            let g = gaussians(l, 5, CALIBRATION, 1000);
            for (i, &v) in g.iter().enumerate() {
                assert_eq!(v, counter_pixel(5, i as u64, CALIBRATION).1);
            }
        }
    }

    #[test]
    fn sequence_is_pinned() {
        // Not a check of the counts (the tests above and below do that against the reference
        // and the Poisson probabilities) but of their stability: datasets record
        // `rng::COUNTER_SEQUENCE` and resume only with the same, so counts that change must
        // raise it. A digest (FNV-1a) of the counts of means from 0.01 to about 2100 under one seed,
        // for each sequence since it was recorded.
        const PINNED: &[(u32, u64)] = &[(2, 16_664_390_146_806_095_744)];
        let n = 4096;
        let inp: Vec<f32> = (0..n).map(|i| 0.01 * 1.003f32.powi(i)).collect();
        let e = Effects {
            adc: 40.0,
            ..effects(3.0, 0.03, 0.02)
        };
        let got = pass(Lanes::detected(), &inp, &e, true, true);
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for v in got.adu.iter().chain(&got.noiseless) {
            for b in v.to_le_bytes() {
                h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
            }
        }
        let want = PINNED.iter().find(|p| p.0 == crate::rng::COUNTER_SEQUENCE);
        assert_eq!(
            want.map(|p| p.1),
            Some(h),
            "the counts of sequence {} changed: raise rng::COUNTER_SEQUENCE and pin the new digest",
            crate::rng::COUNTER_SEQUENCE
        );
    }

    /// The Poisson probabilities of `mean` for k = 0 ..= kmax, in f64 from the library's `ln`
    /// and `exp` (log-space, terms summed from the start: independent of the samplers).
    fn poisson_pmf(mean: f64, kmax: usize) -> Vec<f64> {
        let mut lf = 0.0f64; // ln k!
        (0..=kmax)
            .map(|k| {
                if k > 1 {
                    lf += (k as f64).ln();
                }
                (k as f64 * mean.ln() - mean - lf).exp()
            })
            .collect()
    }

    /// Pearson's chi-square of counts against probabilities, bins of expected count below 20
    /// merged into their neighbours (both tails): (statistic, degrees of freedom).
    fn chi_square(observed: &[f64], probs: &[f64], n: f64) -> (f64, usize) {
        let mut bins: Vec<(f64, f64)> = Vec::new();
        let (mut o, mut p) = (0.0, 0.0);
        for (k, &pk) in probs.iter().enumerate() {
            o += observed.get(k).copied().unwrap_or(0.0);
            p += pk;
            if p * n >= 20.0 {
                bins.push((o, p));
                (o, p) = (0.0, 0.0);
            }
        }
        // the rest (the upper tail, with any count beyond kmax) into the last bin
        let rest: f64 = observed.iter().skip(probs.len()).sum();
        let last = bins.last_mut().unwrap();
        last.0 += o + rest;
        last.1 += (1.0 - probs.iter().sum::<f64>()).max(0.0) + p;
        let chi = bins
            .iter()
            .map(|&(o, p)| (o - p * n).powi(2) / (p * n))
            .sum();
        (chi, bins.len() - 1)
    }

    #[test]
    fn poisson_counts_follow_the_poisson_distribution() {
        // one image of a constant mean per case (the pass as the noise image runs it:
        // vector inversion below 12, tables and inverted fractions from 12, PTRS from 1024),
        // chi-square against the exact probabilities
        let n = 1 << 20;
        for mean in [
            0.01f32, 1.0, 3.7, 11.9, 12.0, 12.5, 36.6, 50.0, 299.3, 1023.5, 1024.0, 1e4,
        ] {
            let e = effects(0.0, 0.0, 0.0);
            let c = pass(Lanes::detected(), &vec![mean; n], &e, true, false).counts;
            let m = mean as f64;
            let kmax = (m + 12.0 * m.sqrt() + 30.0) as usize;
            let mut hist = vec![0.0f64; kmax + 2];
            for &k in &c {
                assert!(k >= 0.0 && k.fract() == 0.0, "{mean}: {k}");
                hist[(k as usize).min(kmax + 1)] += 1.0;
            }
            let (chi, df) = chi_square(&hist, &poisson_pmf(m, kmax), n as f64);
            // P(chi² > df + 6 √(2 df) + 10) < 1e-6 for these df
            let bound = df as f64 + 6.0 * (2.0 * df as f64).sqrt() + 10.0;
            assert!(
                chi < bound,
                "mean {mean}: chi² {chi:.1} with {df} df (bound {bound:.1})"
            );
            // and the moments, 5 standard errors
            let mu = c.iter().map(|&k| k as f64).sum::<f64>() / n as f64;
            let var = c.iter().map(|&k| (k as f64 - mu).powi(2)).sum::<f64>() / (n - 1) as f64;
            assert!(
                (mu - m).abs() < 5.0 * (m / n as f64).sqrt(),
                "{mean}: mean {mu}"
            );
            assert!(
                (var - m).abs() < 5.0 * m * (2.0 / n as f64).sqrt() * (1.0 + 1.0 / m).sqrt(),
                "{mean}: var {var}"
            );
        }
        // the pixels' counts are independent of their neighbours' (pairs within a group's
        // block words: i and i + 16 share a block), by inversion and from the tables
        let e = effects(0.0, 0.0, 0.0);
        for mean in [2.0f32, 36.5] {
            let m = mean as f64;
            let c = pass(Lanes::detected(), &vec![mean; n], &e, true, false).counts;
            let corr = |d: usize| {
                let s: f64 = (0..n - d)
                    .map(|i| (c[i] as f64 - m) * (c[i + d] as f64 - m))
                    .sum();
                s / (n - d) as f64 / m
            };
            for d in [1, 16, 32] {
                assert!(
                    corr(d).abs() < 5.0 / (n as f64).sqrt(),
                    "mean {mean}, lag {d}: {}",
                    corr(d)
                );
            }
        }
    }

    /// The standard normal's distribution function (Abramowitz & Stegun 7.1.26 for erf:
    /// absolute error below 1.5e-7).
    fn phi(x: f64) -> f64 {
        let z = x.abs() / std::f64::consts::SQRT_2;
        let t = 1.0 / (1.0 + 0.3275911 * z);
        let poly = t
            * (0.254829592
                + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
        let erf = 1.0 - poly * (-z * z).exp();
        if x >= 0.0 {
            0.5 * (1.0 + erf)
        } else {
            0.5 * (1.0 - erf)
        }
    }

    #[test]
    fn read_out_gaussians_are_standard_normal() {
        let n = 1usize << 22;
        let g = gaussians(Lanes::detected(), -3, NOISE, n);
        let mut s: Vec<f64> = g.iter().map(|&x| x as f64).collect();
        // moments: mean, variance, skewness, kurtosis (5 standard errors)
        let nn = n as f64;
        let m = s.iter().sum::<f64>() / nn;
        let c = |p: i32| s.iter().map(|x| (x - m).powi(p)).sum::<f64>() / nn;
        let (v, sk, ku) = (c(2), c(3) / c(2).powf(1.5), c(4) / (c(2) * c(2)));
        assert!(m.abs() < 5.0 / nn.sqrt(), "mean {m}");
        assert!((v - 1.0).abs() < 5.0 * (2.0 / nn).sqrt(), "variance {v}");
        assert!(sk.abs() < 5.0 * (6.0 / nn).sqrt(), "skewness {sk}");
        assert!((ku - 3.0).abs() < 5.0 * (24.0 / nn).sqrt(), "kurtosis {ku}");
        // tails beyond 2, 3, 4 and 4.5 sigma against 2 (1 - Phi)
        for t in [2.0, 3.0, 4.0, 4.5] {
            let p = 2.0 * (1.0 - phi(t));
            let f = s.iter().filter(|x| x.abs() > t).count() as f64;
            let se = (nn * p).sqrt();
            assert!(
                (f - nn * p).abs() < 5.0 * se + 1.0,
                "beyond {t}: {f} vs {}",
                nn * p
            );
        }
        // Kolmogorov–Smirnov: P(D √n > 2.0) ≈ 7e-4
        s.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let d = s
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = phi(x);
                (f - i as f64 / nn)
                    .abs()
                    .max(((i + 1) as f64 / nn - f).abs())
            })
            .fold(0.0f64, f64::max);
        assert!(d * nn.sqrt() < 2.0, "KS D = {d} (D √n = {})", d * nn.sqrt());
        // the two of a Box–Muller pair (pixels i and i + 16) are independent: uncorrelated in
        // themselves and in their squares; the read-out deviate is independent of the
        // pixel's Poisson uniform (the same block's other words)
        let (mut c1, mut c2, mut c3, mut pairs) = (0.0, 0.0, 0.0, 0.0);
        for grp in 0..n / 32 {
            for l in 0..16 {
                let (a, b) = (g[32 * grp + l] as f64, g[32 * grp + 16 + l] as f64);
                c1 += a * b;
                c2 += (a * a - 1.0) * (b * b - 1.0);
                let (w, _) = counter_pixel(-3, (32 * grp + l) as u64, NOISE);
                c3 += a * (unit_of_word(w) - 0.5);
                pairs += 1.0;
            }
        }
        assert!(
            (c1 / pairs).abs() < 5.0 / pairs.sqrt(),
            "pair correlation {}",
            c1 / pairs
        );
        assert!(
            (c2 / pairs).abs() < 5.0 * 2.0 / pairs.sqrt(),
            "squares {}",
            c2 / pairs
        );
        assert!(
            (c3 / pairs).abs() < 5.0 * 0.29 / pairs.sqrt(),
            "with the uniform {}",
            c3 / pairs
        );
    }
}
