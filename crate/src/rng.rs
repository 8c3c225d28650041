//! Upstream's random-number generators, bit exact: Numerical Recipes `ran1` with its one shared
//! shuffle table, the random rotation used for mosaic domains and random missets, the matrix to
//! misset-angle conversion, and the Poisson / Gaussian deviates of the noise image.
//!
//! Beside them, ours: [`CounterRng`], a counter-based generator (Philox4x32-10) whose deviates
//! for a pixel are a pure function of (seed, pixel, role), for detector effects that are the
//! same on any number of threads (`noisify::Generator::Counter`).
//!
//! The f32/f64 mix of every expression follows upstream exactly (MODEL.md §4.9, §4.3, §7.5);
//! changing any cast changes the noise image.

use std::f64::consts::PI;

const IA: i64 = 16807;
const IM: i64 = 2147483647;
const AM: f64 = 1.0 / IM as f64;
const IQ: i64 = 127773;
const IR: i64 = 2836;
const NTAB: usize = 32;
const NDIV: i64 = 1 + (IM - 1) / NTAB as i64;
const RNMX: f64 = 1.0 - 1.2e-7;

/// The one shuffle table shared by every stream (misset, mosaic, noise). Each stream owns only
/// its seed variable `idum`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RanState {
    iy: i64,
    iv: [i64; NTAB],
}

impl Default for RanState {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn schrage(idum: i64) -> i64 {
    let k = idum / IQ;
    let mut v = IA * (idum - k * IQ) - IR * k;
    if v < 0 {
        v += IM;
    }
    v
}

impl RanState {
    /// The initial state: `iy = 0` (forces a reseed on first use), table zeroed.
    pub fn new() -> Self {
        RanState {
            iy: 0,
            iv: [0; NTAB],
        }
    }

    /// Uniform deviate in (0, 1) (Numerical Recipes `ran1`), as an f32.
    pub fn ran1(&mut self, idum: &mut i64) -> f32 {
        if *idum <= 0 || self.iy == 0 {
            *idum = if -*idum < 1 { 1 } else { -*idum };
            for j in (0..NTAB + 8).rev() {
                *idum = schrage(*idum);
                if j < NTAB {
                    self.iv[j] = *idum;
                }
            }
            self.iy = self.iv[0];
        }
        *idum = schrage(*idum);
        let j = (self.iy / NDIV) as usize;
        self.iy = self.iv[j];
        self.iv[j] = *idum;
        let temp = (AM * self.iy as f64) as f32;
        if temp as f64 > RNMX {
            RNMX as f32
        } else {
            temp
        }
    }
}

/// Random rotation by an angle `spread * (1 - r3^2)^(1/3)` (radians, at most `spread`) about a
/// uniformly distributed axis; three draws of `ran1`. Row-major matrix.
pub fn mosaic_rotation_umat(st: &mut RanState, spread: f32, idum: &mut i64) -> [[f64; 3]; 3] {
    let r1 = 2.0 * st.ran1(idum) as f64 - 1.0;
    let r2 = 2.0 * st.ran1(idum) as f64 - 1.0;
    let r3 = 2.0 * st.ran1(idum) as f64 - 1.0;

    let xyrad = (1.0 - r2 * r2).sqrt();
    let rot = (spread * ((1.0 - r3 * r3) as f32).powf((1.0f64 / 3.0) as f32)) as f64;

    let v1 = xyrad * (PI * r1).sin();
    let v2 = xyrad * (PI * r1).cos();
    let v3 = r2;

    let t1 = rot.cos();
    let t2 = 1.0 - t1;
    let t3 = v1 * v1;
    let t6 = t2 * v1;
    let t7 = t6 * v2;
    let t8 = rot.sin();
    let t9 = t8 * v3;
    let t11 = t6 * v3;
    let t12 = t8 * v2;
    let t15 = v2 * v2;
    let t19 = t2 * v2 * v3;
    let t20 = t8 * v1;
    let t24 = v3 * v3;

    [
        [t1 + t2 * t3, t7 - t9, t11 + t12],
        [t7 + t9, t1 + t2 * t15, t19 - t20],
        [t11 - t12, t19 + t20, t1 + t2 * t24],
    ]
}

/// Normalises a row in place when its length is positive; returns the length.
fn normalise_row(r: &mut [f64; 3]) -> f64 {
    let m = (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]).sqrt();
    if m > 0.0 {
        r[0] /= m;
        r[1] /= m;
        r[2] /= m;
    }
    m
}

fn unit_cross(a: &[f64; 3], b: &[f64; 3]) -> [f64; 3] {
    let mut c = [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ];
    normalise_row(&mut c);
    c
}

/// Converts a rotation matrix (row-major) into misset angles `[rx, ry, rz]` in radians with
/// `Rz(rz)·Ry(ry)·Rx(rx) = U` (upstream `umat2misset`, including its re-normalisation steps).
pub fn umat2misset(u: [[f64; 3]; 3]) -> [f64; 3] {
    let [mut x, mut y, mut z] = u;
    let mx = normalise_row(&mut x);
    let my = normalise_row(&mut y);
    let mz = normalise_row(&mut z);

    if mx >= 0.0 && my <= 0.0 && mz <= 0.0 {
        y = [0.0, 1.0, 0.0];
        z = [0.0, 0.0, 1.0];
    }
    if mx <= 0.0 && my >= 0.0 && mz <= 0.0 {
        x = [1.0, 0.0, 0.0];
        z = [0.0, 0.0, 1.0];
    }
    if mx <= 0.0 && my <= 0.0 && mz >= 0.0 {
        x = [1.0, 0.0, 0.0];
        y = [0.0, 1.0, 0.0];
    }

    // Two rounds of cross products, used only to replace empty rows.
    for _ in 0..2 {
        let xcy = unit_cross(&x, &y);
        let ycz = unit_cross(&y, &z);
        let zcx = unit_cross(&z, &x);
        if mx <= 0.0 {
            x = ycz;
        }
        if my <= 0.0 {
            y = zcx;
        }
        if mz <= 0.0 {
            z = xcy;
        }
    }

    normalise_row(&mut x);
    normalise_row(&mut y);
    normalise_row(&mut z);

    if z[0] * z[0] < 1.0 {
        let rx = z[1].atan2(z[2]);
        let ry = (-z[0]).atan2((z[1] * z[1] + z[2] * z[2]).sqrt());
        let rz = y[0].atan2(x[0]);
        [rx, ry, rz]
    } else {
        let q = 1.0f64.atan2(1.0);
        [q * 4.0, q * 2.0, x[1].atan2(-y[1])]
    }
}

/// `ln Γ(xx)` (Lanczos), computed in f64 and returned as f32.
pub fn gammln(xx: f32) -> f32 {
    const COF: [f64; 6] = [
        76.18009172947146,
        -86.50532032941677,
        24.01409824083091,
        -1.231739572450155,
        0.1208650973866179e-2,
        -0.5395239384953e-5,
    ];
    let x = xx as f64;
    let mut y = x;
    let mut tmp = x + 5.5;
    tmp -= (x + 0.5) * tmp.ln();
    let mut ser = 1.000000000190015;
    for c in COF {
        y += 1.0;
        ser += c / y;
    }
    (-tmp + (2.5066282746310005 * ser / x).ln()) as f32
}

/// Persistent state of upstream's `poidev` and `gaussdev` (their C `static` variables).
#[derive(Clone, Debug, PartialEq)]
pub struct Noise {
    sq: f32,
    alxm: f32,
    g: f32,
    oldm: f32,
    iset: bool,
    gset: f32,
}

impl Default for Noise {
    fn default() -> Self {
        Self::new()
    }
}

impl Noise {
    pub fn new() -> Self {
        Noise {
            sq: 0.0,
            alxm: 0.0,
            g: 0.0,
            oldm: -1.0,
            iset: false,
            gset: 0.0,
        }
    }

    /// Poisson deviate with mean `xm` (Gaussian approximation, not rounded, above 1e6).
    pub fn poidev(&mut self, st: &mut RanState, xm: f32, idum: &mut i64) -> f32 {
        if xm > 1.0e6 {
            let gd = self.gaussdev(st, idum) as f64;
            return (xm as f64 + (xm as f64).sqrt() * gd) as f32;
        }
        if xm < 12.0 {
            if xm != self.oldm {
                self.oldm = xm;
                self.g = (-(xm as f64)).exp() as f32;
            }
            let mut em: f32 = -1.0;
            let mut t: f32 = 1.0;
            loop {
                em += 1.0;
                t *= st.ran1(idum);
                // C: `do { ... } while (t > g)`
                if t > self.g {
                    continue;
                }
                return em;
            }
        } else {
            if xm != self.oldm {
                self.oldm = xm;
                self.sq = (2.0 * xm as f64).sqrt() as f32;
                self.alxm = (xm as f64).ln() as f32;
                self.g = xm * self.alxm - gammln((xm as f64 + 1.0) as f32);
            }
            loop {
                let mut y: f32;
                let mut em: f32;
                loop {
                    y = (PI * st.ran1(idum) as f64).tan() as f32;
                    em = self.sq * y + xm;
                    // C: `while (em < 0.0)`; a NaN leaves the loop.
                    if em.is_nan() || em >= 0.0 {
                        break;
                    }
                }
                em = (em as f64).floor() as f32;
                let e: f32 = em * self.alxm - gammln((em as f64 + 1.0) as f32) - self.g;
                let t = (0.9 * (1.0 + (y * y) as f64) * (e as f64).exp()) as f32;
                // C: `while (ran1(idum) > t)`; a NaN `t` accepts.
                if st.ran1(idum) > t {
                    continue;
                }
                return em;
            }
        }
    }

    /// Gaussian deviate, zero mean, unit variance (polar Box–Muller; every second call returns
    /// the cached partner).
    pub fn gaussdev(&mut self, st: &mut RanState, idum: &mut i64) -> f32 {
        if !self.iset {
            let (v1, v2, rsq) = loop {
                let v1 = (2.0 * st.ran1(idum) as f64 - 1.0) as f32;
                let v2 = (2.0 * st.ran1(idum) as f64 - 1.0) as f32;
                let rsq: f32 = v1 * v1 + v2 * v2;
                if !(rsq >= 1.0 || rsq == 0.0) {
                    break (v1, v2, rsq);
                }
            };
            let fac = (-2.0 * (rsq as f64).ln() / rsq as f64).sqrt() as f32;
            self.gset = v1 * fac;
            self.iset = true;
            v2 * fac
        } else {
            self.iset = false;
            self.gset
        }
    }
}

// ---- a counter-based generator (ours, not upstream's) ----

/// Philox4x32's multipliers, key increments (Weyl constants) and rounds (Random123's), shared by
/// [`philox4x32_10`] and the lanes of [`philox_group`].
const PHILOX_M0: u64 = 0xD251_1F53;
const PHILOX_M1: u64 = 0xCD9E_8D57;
const PHILOX_W0: u32 = 0x9E37_79B9;
const PHILOX_W1: u32 = 0xBB67_AE85;
const PHILOX_ROUNDS: usize = 10;

/// The key of the next round.
#[inline(always)]
fn philox_bump(k: [u32; 2]) -> [u32; 2] {
    [k[0].wrapping_add(PHILOX_W0), k[1].wrapping_add(PHILOX_W1)]
}

/// Philox4x32-10 (Salmon, Moraes, Dror & Shaw, "Parallel random numbers: as easy as 1, 2, 3",
/// SC '11), as Random123's reference implementation computes it: a bijection of a 128-bit
/// counter under a 64-bit key, ten rounds. Checked against Random123's published known-answer
/// vectors (`tests::philox_known_answers`).
#[inline]
pub fn philox4x32_10(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut x, mut k) = (ctr, key);
    for round in 0..PHILOX_ROUNDS {
        if round > 0 {
            k = philox_bump(k);
        }
        let p0 = PHILOX_M0 * x[0] as u64;
        let p1 = PHILOX_M1 * x[2] as u64;
        x = [
            (p1 >> 32) as u32 ^ x[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ x[3] ^ k[1],
            p0 as u32,
        ];
    }
    x
}

/// The deviates of one pixel in one role (a `stream`: flicker, calibration, Poisson, read-out)
/// under one seed, from Philox4x32-10: block `j` of the stream is
/// `philox4x32_10([pixel low, pixel high, stream, j], seed)`. Every value is a pure function of
/// (seed, pixel, stream), so an image is the same for any number of threads and any order of its
/// pixels. Not upstream's sequence (`RanState`, `Noise`): that one is shared by all pixels.
#[derive(Clone, Debug)]
pub struct CounterRng {
    key: [u32; 2],
    ctr: [u32; 4],
    buf: [u32; 4],
    used: usize,
}

impl CounterRng {
    pub fn new(seed: i64, pixel: u64, stream: u32) -> Self {
        CounterRng {
            key: [seed as u64 as u32, (seed as u64 >> 32) as u32],
            ctr: [pixel as u32, (pixel >> 32) as u32, stream, 0],
            buf: [0; 4],
            used: 4,
        }
    }

    /// The generator of (seed, pixel, stream) from block `block` of its stream on (the blocks
    /// before it used elsewhere: PTRS's first try computed in vector lanes).
    pub fn at_block(seed: i64, pixel: u64, stream: u32, block: u32) -> Self {
        let mut r = Self::new(seed, pixel, stream);
        r.ctr[3] = block;
        r
    }

    /// Uniform deviate in (0, 1), 52 random bits (two of the block's words, `uniform_of`).
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        if self.used >= 4 {
            self.buf = philox4x32_10(self.ctr, self.key);
            self.ctr[3] = self.ctr[3].wrapping_add(1);
            self.used = 0;
        }
        let (a, b) = (self.buf[self.used], self.buf[self.used + 1]);
        self.used += 2;
        uniform_of(a, b)
    }

    /// Gaussian deviate, zero mean, unit variance (Box–Muller, one of the pair).
    #[inline]
    pub fn gauss(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        box_muller(u1, u2).0
    }

    /// Poisson deviate of mean `xm` (0 for a mean that is not positive): inversion of the
    /// cumulative distribution below 12 ([`poisson_inversion`]), Hörmann's transformed
    /// rejection with squeeze (PTRS) up to 1e6 ([`poisson_ptrs`]), above it the Gaussian
    /// approximation, not rounded (as upstream's `poidev`). Plain f64 arithmetic and this
    /// module's own `ln`, `exp` and `sin`/`cos`: the same counts on every platform.
    pub fn poisson(&mut self, xm: f64) -> f64 {
        if !(xm > 0.0) {
            return 0.0;
        }
        if xm < 12.0 {
            return poisson_inversion(self.uniform(), xm);
        }
        if xm > 1.0e6 {
            return xm + xm.sqrt() * self.gauss();
        }
        poisson_ptrs(xm, || self.uniform())
    }
}

/// A Poisson deviate of mean `lam` (≥ 10) by PTRS, the transformed rejection with squeeze of
/// W. Hörmann, "The transformed rejection method for generating Poisson random variables",
/// Insurance: Mathematics and Economics 12 (1993) 39–45 (as NumPy's `random_poisson_ptrs`):
/// two uniforms a try, about 1.1 tries a deviate, a logarithm only outside the squeeze.
/// `uniform` gives uniforms in (0, 1).
pub fn poisson_ptrs(lam: f64, mut uniform: impl FnMut() -> f64) -> f64 {
    let slam = lam.sqrt();
    let b = 0.931 + 2.53 * slam;
    let a = -0.059 + 0.02483 * b;
    let vr = 0.9277 - 3.6224 / (b - 2.0);
    loop {
        let u = uniform() - 0.5;
        let v = uniform();
        let us = 0.5 - u.abs();
        let k = ((2.0 * a / us + b) * u + lam + 0.43).floor();
        if us >= 0.07 && v <= vr {
            return k;
        }
        if ptrs_accepts(lam, a, b, us, v, k) {
            return k;
        }
    }
}

/// The verdict of [`poisson_ptrs`] on a try that its squeeze did not accept (`a`, `b`: its
/// constants of `lam`; `us`, `v`, `k`: the try's): the logarithms (computed only here: most
/// tries end at the squeeze) against `ln` of the Poisson probability of `k`.
#[inline]
pub fn ptrs_accepts(lam: f64, a: f64, b: f64, us: f64, v: f64, k: f64) -> bool {
    if k < 0.0 || (us < 0.013 && v > us) {
        return false;
    }
    let loglam = ln_unit(lam);
    let ln_invalpha = ln_unit(1.1239 + 1.1328 / (b - 3.4));
    ln_unit(v) + ln_invalpha - ln_unit(a / (us * us) + b) <= -lam + k * loglam - ln_factorial(k)
}

/// `ln k!` for a whole k ≥ 0: a table below 16, Stirling's series above (as NumPy's
/// `random_loggam`, to about 1e-15 relative), with this module's own `ln`.
pub fn ln_factorial(k: f64) -> f64 {
    const TABLE: [f64; 16] = {
        // ln k! by sums of ln j is not const; the values to 17 digits
        [
            0.0,
            0.0,
            std::f64::consts::LN_2,
            1.791_759_469_228_055,
            3.178_053_830_347_945_6,
            4.787_491_742_782_046,
            6.579_251_212_010_101,
            8.525_161_361_065_415,
            10.604_602_902_745_25,
            12.801_827_480_081_469,
            15.104_412_573_075_516,
            17.502_307_845_873_887,
            19.987_214_495_661_885,
            22.552_163_853_123_42,
            25.191_221_182_738_683,
            27.899_271_383_840_894,
        ]
    };
    if k < 16.0 {
        return TABLE[k as usize];
    }
    // ln Γ(x) for x = k + 1 ≥ 17: Stirling's series with the coefficients of `random_loggam`
    const A: [f64; 10] = [
        8.333333333333333e-02,
        -2.777777777777778e-03,
        7.936507936507937e-04,
        -5.952380952380952e-04,
        8.417508417508418e-04,
        -1.917526917526918e-03,
        6.41025641025641e-03,
        -2.955065359477124e-02,
        1.796443723688307e-01,
        -1.39243221690590e+00,
    ];
    let x = k + 1.0;
    let x2 = 1.0 / (x * x);
    let mut gl0 = A[9];
    for c in A[..9].iter().rev() {
        gl0 = gl0 * x2 + c;
    }
    gl0 / x + 0.918_938_533_204_672_7 + (x - 0.5) * ln_unit(x) - x // ½ ln 2π
}

/// A Poisson deviate of mean `xm` (0 ≤ `xm` < 12, an f32 value) by inversion of the cumulative
/// distribution at the uniform `u` in (0, 1): the smallest k whose cumulative probability
/// reaches `u`. The sums in f64 from `exp(−xm)` in f32 ([`exp_neg_f32`]: 1e-7 relative, far
/// below anything a sample could show) and the reciprocals `1/k` from a table: the same counts
/// on every platform, and the same as the noise image's vector lanes compute
/// (`noisify::counter`, sixteen pixels at once).
#[inline]
pub fn poisson_inversion(u: f64, xm: f64) -> f64 {
    // k = 0 when u <= 1 - xm (< exp(-xm)): most pixels of a diffraction image, whose means are
    // far below 1, need no exponential
    if u <= 1.0 - xm {
        return 0.0;
    }
    let mut p = exp_neg_f32(xm as f32) as f64;
    let (mut k, mut cdf) = (0usize, p);
    while u > cdf && k < MAX_INVERSION {
        k += 1;
        p *= xm * RECIPROCALS[k];
        cdf += p;
    }
    k as f64
}

/// The inversion's last count: beyond the reach of any uniform in (0, 1) below a mean of 12
/// (P(k > 100) < 1e-50), a bound for the loops.
pub const MAX_INVERSION: usize = 127;

/// `1/k` for k ≤ [`MAX_INVERSION`] (the inversion's steps).
pub const RECIPROCALS: [f64; MAX_INVERSION + 1] = {
    let mut t = [0.0; MAX_INVERSION + 1];
    let mut k = 1;
    while k <= MAX_INVERSION {
        t[k] = 1.0 / k as f64;
        k += 1;
    }
    t
};

/// The counter generator's sequence: raised whenever the same (seed, pixel, stream) can give
/// other counts than before (1: the one-pass detector effects; 2: means from 12 to 1024 from
/// tables). A dataset with noise records it and is resumed only with the same
/// (`nanobragg.dataset`); `noisify::counter`'s test `sequence_is_pinned` holds a digest of
/// counts made with it, so a change of the sequence fails there until this is raised.
pub const COUNTER_SEQUENCE: u32 = 2;

// ---- Poisson means from 12 to 1024: a table per whole mean ----

/// The whole means that have a table ([`PoissonTable`]): `TABLE_FIRST .. TABLE_END`. A mean
/// `xm` in [12, 1024) is drawn as `Y + Z`, `Y` ~ Poisson(⌊xm⌋) from the table of ⌊xm⌋ and
/// `Z` ~ Poisson(xm − ⌊xm⌋) by [`poisson_inversion`] ([`poisson_split`]): the sum of two
/// independent Poisson counts is a Poisson count of the summed mean.
pub const TABLE_FIRST: u32 = 12;
/// See [`TABLE_FIRST`].
pub const TABLE_END: u32 = 1024;

/// The Poisson distribution of a whole mean `λ` as thresholds on a 63-bit uniform `w`
/// (an integer in [0, 2⁶³)): the count is `first + j` for the smallest `j` with
/// `w < thresholds[j]`, so count `first + j` takes `thresholds[j] − thresholds[j − 1]` of the
/// 2⁶³ values. The probabilities are those of the recurrences `P(k ± 1) / P(k)` from the mode,
/// normalised by their sum (no `exp`, `ln` or factorial: plain f64 `×`, `÷`, `+`, the same bits
/// on every platform), each threshold rounded to a whole number of 2⁻⁶³: below the mode from the
/// cumulative sum, from the mode on from the sum of the upper tail, so both tails keep their
/// relative precision. Counts whose probability is below 2⁻⁶⁶ of the mode's (their thresholds
/// could not differ from their neighbours') are left out. A guide table (Chen and Asau) gives
/// each of 2^g equal ranges of `w` its first count: about one comparison a draw.
#[derive(Debug)]
pub struct PoissonTable {
    /// The smallest count.
    first: u32,
    /// The last is 2⁶³ (every `w` is below it).
    thresholds: Box<[u64]>,
    /// The first `j` of `w`'s range `w >> shift`.
    guide: Box<[u16]>,
    shift: u32,
}

/// 2⁶³ as an f64 (exact).
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

impl PoissonTable {
    pub fn new(lam: u32) -> PoissonTable {
        // relative probabilities r(k) = P(k) / P(m) at the mode m = λ (and λ − 1: the same)
        const TAIL: f64 = 1.0 / 73_786_976_294_838_206_464.0; // 2^-66
        let l = lam as f64;
        let m = lam as usize;
        let mut down = Vec::new();
        let (mut r, mut k) = (1.0f64, m);
        while k > 0 {
            r *= k as f64 / l; // r(k − 1) = r(k) k / λ
            k -= 1;
            if r < TAIL {
                break;
            }
            down.push(r);
        }
        let mut up = Vec::new();
        let (mut r, mut k) = (1.0f64, m);
        loop {
            r *= l / (k + 1) as f64; // r(k + 1) = r(k) λ / (k + 1)
            k += 1;
            if r < TAIL {
                break;
            }
            up.push(r);
        }
        let mode = down.len();
        let probs: Vec<f64> = down
            .iter()
            .rev()
            .chain([1.0].iter())
            .chain(&up)
            .copied()
            .collect();
        let n = probs.len();
        let total: f64 = probs.iter().sum();
        let mut thresholds = vec![0u64; n];
        // below the mode: the cumulative sums from the lower end
        let mut c = 0.0;
        for j in 0..mode {
            c += probs[j];
            thresholds[j] = (c / total * TWO_63 + 0.5) as u64;
        }
        // from the mode on: 2^63 less the upper tail's sums from the upper end
        let mut s = 0.0;
        for j in (mode..n).rev() {
            thresholds[j] = (1u64 << 63) - (s / total * TWO_63 + 0.5) as u64;
            s += probs[j];
        }
        debug_assert!(thresholds.windows(2).all(|t| t[0] <= t[1]));
        let bits = n.next_power_of_two().trailing_zeros();
        let shift = 63 - bits;
        let mut guide = Vec::with_capacity(1 << bits);
        let mut j = 0;
        for b in 0..1u64 << bits {
            while thresholds[j] <= b << shift {
                j += 1;
            }
            guide.push(j as u16);
        }
        PoissonTable {
            first: (m - mode) as u32,
            thresholds: thresholds.into(),
            guide: guide.into(),
            shift,
        }
    }

    /// The count of the 63-bit uniform `w` (`w < 2⁶³`).
    #[inline(always)]
    pub fn count(&self, w: u64) -> u32 {
        let t = &self.thresholds;
        let mut j = self.guide[(w >> self.shift) as usize] as usize;
        while t[j] <= w {
            j += 1;
        }
        self.first + j as u32
    }

    /// The probability the table gives count `k` (for the tests).
    pub fn probability(&self, k: u32) -> f64 {
        let t = &self.thresholds;
        match k.checked_sub(self.first) {
            Some(j) if (j as usize) < t.len() => {
                let j = j as usize;
                let below = if j == 0 { 0 } else { t[j - 1] };
                (t[j] - below) as f64 / TWO_63
            }
            _ => 0.0,
        }
    }
}

/// The table of whole mean `lam` (`TABLE_FIRST ≤ lam < TABLE_END`), built at its first use and
/// kept for the process (a table is a pure function of its mean: which thread builds it does
/// not matter). At most about 6 MB if every mean is used.
pub fn poisson_table(lam: u32) -> &'static PoissonTable {
    use std::sync::OnceLock;
    const N: usize = (TABLE_END - TABLE_FIRST) as usize;
    static TABLES: [OnceLock<PoissonTable>; N] = [const { OnceLock::new() }; N];
    TABLES[(lam - TABLE_FIRST) as usize].get_or_init(|| PoissonTable::new(lam))
}

/// A Poisson count of mean `xm` in [`TABLE_FIRST`, `TABLE_END`) from two independent uniforms:
/// Poisson(⌊xm⌋) from its table at the 63-bit uniform `w`, plus Poisson(xm − ⌊xm⌋) by
/// [`poisson_inversion`] at `u` in (0, 1). (The fraction of an f32 mean is exact in f32.)
#[inline]
pub fn poisson_split(xm: f64, w: u64, u: f64) -> f64 {
    let whole = xm as u32;
    poisson_table(whole).count(w) as f64 + poisson_inversion(u, xm - whole as f64)
}

/// The 63-bit uniform of two 32-bit words: `a`'s 32 bits above `b`'s top 31.
#[inline(always)]
pub fn wide_of(a: u32, b: u32) -> u64 {
    ((a as u64) << 31) | (b as u64 >> 1)
}

/// `exp(−x)` for x in [0, 700], in f64 to about 1e-15 relative: `x = n ln 2 + r` with
/// |r| ≤ ln 2 / 2 (ln 2 in two parts, so r is exact to 1e-19), `exp(−r)` by its Taylor series
/// to r¹³, scaled by 2⁻ⁿ through the exponent's bits. Plain f64 arithmetic, no library call
/// (as [`ln_unit`]).
#[inline]
pub fn exp_neg(x: f64) -> f64 {
    const LN2_HI: f64 = 0.693_147_180_369_123_8; // the top 32 bits of ln 2
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    const ROUND: f64 = 6755399441055744.0; // 1.5 · 2^52
    let t = x * std::f64::consts::LOG2_E + ROUND;
    let n = t - ROUND; // the nearest integer to x / ln 2 (n ≤ 1010: exact)
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let mut e = 1.0 / 6_227_020_800.0; // 1/13!
    for c in [
        479_001_600.0, // 12!
        39_916_800.0,
        3_628_800.0,
        362_880.0,
        40_320.0,
        5_040.0,
        720.0,
        120.0,
        24.0,
        6.0,
        2.0,
        1.0,
        1.0,
    ] {
        // exp(−r) = Σ (−r)^k / k!: Horner in −r
        e = e * -r + 1.0 / c;
    }
    // 2^-n: the exponent field of 1.0 lowered by n (n is the low bits of t's mantissa)
    let n_bits = t.to_bits() & 0x7FF;
    e * f64::from_bits((1023 - n_bits) << 52)
}

/// `exp(−x)` in f32 for x in [0, 87]: `x = n ln 2 + r`, |r| ≤ ln 2 / 2, `exp(−r)` by its Taylor
/// series to r⁷ (5e-9), scaled by 2⁻ⁿ through the exponent's bits: about 1e-7 relative, plain
/// f32 arithmetic (the same bits in every lane and on every platform).
#[inline(always)]
pub fn exp_neg_f32(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_145_75; // ln 2 to 16 bits: n · LN2_HI is exact
    const LN2_LO: f32 = 1.428_606_8e-6;
    const ROUND: f32 = 12582912.0; // 1.5 · 2^23
    let t = x * std::f32::consts::LOG2_E + ROUND;
    let n = t - ROUND;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let e = ((((((r * (-1.0 / 5040.0) + 1.0 / 720.0) * r - 1.0 / 120.0) * r + 1.0 / 24.0) * r
        - 1.0 / 6.0)
        * r
        + 0.5)
        * r
        - 1.0)
        * r
        + 1.0;
    let n_bits = t.to_bits() & 0xFF;
    e * f32::from_bits((127 - n_bits) << 23)
}

/// The uniform in (0, 1) of two 32-bit words ([`CounterRng::uniform`]): their top 52 bits `m`
/// as `(m + 1/2) / 2^52`, exact in f64, by integer and exact f64 operations only.
#[inline(always)]
pub(crate) fn uniform_of(a: u32, b: u32) -> f64 {
    let m = ((a as u64) << 20) | (b as u64 >> 12);
    (f64::from_bits(0x3FF0_0000_0000_0000 | m) - 1.0) + f64::from_bits(0x3CA0_0000_0000_0000)
}

/// `ln u` for `u` in (0, 1] (a counter uniform), in f64 to about 1e-15 relative: `u = 2^e m`
/// with m in [√½, √2), `ln m = 2 atanh s` with `s = (m − 1)/(m + 1)` (|s| < 0.172) by its series
/// to s¹⁷. Plain f64 additions, multiplications and one division, no library call: the same
/// bits in a vector lane, in a scalar loop and in wasm (a libm's `ln` may differ in the last
/// bit between platforms).
#[inline(always)]
pub fn ln_unit(u: f64) -> f64 {
    let bits = u.to_bits();
    let biased = bits >> 52; // e + 1023 (u is normal and positive)
    let m = f64::from_bits((bits & 0x000F_FFFF_FFFF_FFFF) | 0x3FF0_0000_0000_0000);
    let big = m > std::f64::consts::SQRT_2;
    let m = if big { m * 0.5 } else { m };
    let biased = biased + big as u64;
    // the exponent as an f64, exactly (the 2^52 trick: no 64-bit integer conversion)
    let e = f64::from_bits(0x4330_0000_0000_0000 | biased) - (4503599627370496.0 + 1023.0);
    let s = (m - 1.0) / (m + 1.0);
    let z = s * s;
    let mut p = 1.0 / 17.0;
    for c in [15.0, 13.0, 11.0, 9.0, 7.0, 5.0, 3.0, 1.0] {
        p = p * z + 1.0 / c;
    }
    e * std::f64::consts::LN_2 + 2.0 * s * p
}

/// `(sin 2πu, cos 2πu)` for `u` in [0, 1], in f64 to about 1e-15: `u = q/4 + f` with q the
/// nearest quarter turn (exact), the Taylor series of sin and cos of `2πf` (|2πf| ≤ π/4) to the
/// 16th power, then the quarter turns by swaps and sign flips. Like [`ln_unit`], plain f64
/// arithmetic: the same bits in every lane, loop and platform.
#[inline(always)]
pub fn sincos_turn(u: f64) -> (f64, f64) {
    const ROUND: f64 = 6755399441055744.0; // 1.5 · 2^52: x + ROUND rounds x to an integer
    let t = u * 4.0;
    let r = t + ROUND;
    let q = r.to_bits() & 3;
    let x = (u - (r - ROUND) * 0.25) * std::f64::consts::TAU;
    let z = x * x;
    // sin x = x (1 - z/3! + z²/5! - ...), cos x = 1 - z/2! + z²/4! - ...
    let mut s = -1.0 / 1_307_674_368_000.0; // -1/15!
    for c in [
        6_227_020_800.0, // 13!
        -39_916_800.0,
        362_880.0,
        -5_040.0,
        120.0,
        -6.0,
        1.0,
    ] {
        s = s * z + 1.0 / c;
    }
    let s = s * x;
    let mut c = 1.0 / 20_922_789_888_000.0; // 1/16!
    for k in [
        -87_178_291_200.0, // -14!
        479_001_600.0,
        -3_628_800.0,
        40_320.0,
        -720.0,
        24.0,
        -2.0,
        1.0,
    ] {
        c = c * z + 1.0 / k;
    }
    // quarter turns: q = 1 → (cos, -sin), 2 → (-sin, -cos), 3 → (-cos, sin)
    let (a, b) = if q & 1 == 1 { (c, s) } else { (s, c) };
    let sin = f64::from_bits(a.to_bits() ^ ((q & 2) << 62));
    let cos = f64::from_bits(b.to_bits() ^ (((q + 1) & 2) << 62));
    (sin, cos)
}

#[inline(always)]
fn box_muller(u1: f64, u2: f64) -> (f64, f64) {
    let r = (-2.0 * ln_unit(u1)).sqrt();
    let (s, c) = sincos_turn(u2);
    (r * c, r * s)
}

// ---- the noise image's deviates: 32 pixels a group, 16 Philox blocks ----

/// Pixels per group of the noise image's counter deviates: pixel `i` takes its words from
/// block `16·(i / 32) + i % 16` ([`group_block`]) of its stream, so that the 16 blocks of a
/// group are computed side by side in vector lanes and each word lands in order.
pub const GROUP: usize = 32;
/// Philox blocks per group.
pub const BLOCKS: usize = GROUP / 2;

/// The block of pixel `i` and which half of the group it is in (0: words 0 and the cosine;
/// 1: word 1 and the sine).
#[inline(always)]
pub fn group_block(pixel: u64) -> (u64, usize) {
    (
        (pixel / GROUP as u64) * BLOCKS as u64 + pixel % BLOCKS as u64,
        ((pixel / BLOCKS as u64) & 1) as usize,
    )
}

/// The uniform in (0, 1) of a 32-bit word: `(w + 1/2) / 2^32`, exact in f64 (Poisson
/// inversion's uniform: its resolution, 2.3e-10, is far below any count's probability that
/// matters; a count beyond the reach of every uniform has a probability below 1.2e-10).
#[inline(always)]
pub fn unit_of_word(w: u32) -> f64 {
    (w as f64 + 0.5) * (1.0 / 4294967296.0)
}

/// `ln u` in f32 for a positive normal `u`, to about 1e-7 relative: as [`ln_unit`] (exponent,
/// mantissa in [√½, √2), `2 atanh s` by its series, here to s⁹), plain f32 arithmetic.
#[inline(always)]
pub fn ln_f32(u: f32) -> f32 {
    let bits = u.to_bits();
    let m = f32::from_bits((bits & 0x007F_FFFF) | 0x3F80_0000);
    let big = m > std::f32::consts::SQRT_2;
    let m = if big { m * 0.5 } else { m };
    let e = ((bits >> 23) as i32 - 127 + big as i32) as f32;
    let s = (m - 1.0) / (m + 1.0);
    let z = s * s;
    let p = (((z * (1.0 / 9.0) + 1.0 / 7.0) * z + 1.0 / 5.0) * z + 1.0 / 3.0) * z + 1.0;
    // ln 2 in two parts: the exponent's product exact to f32's precision
    e * 0.693_145_75 + (e * 1.428_606_8e-6 + 2.0 * s * p)
}

/// `(sin 2πt, cos 2πt)` in f32 for `t` in [0, 1], to about 1e-7: the nearest quarter turn
/// (exact), Taylor series of sin to x⁹ and cos to x¹⁰ for |x| ≤ π/4, then swaps and sign
/// flips (as [`sincos_turn`] in f64).
#[inline(always)]
pub fn sincos_turn_f32(t: f32) -> (f32, f32) {
    const ROUND: f32 = 12582912.0; // 1.5 · 2^23: x + ROUND rounds x to an integer
    let r = t * 4.0 + ROUND;
    let q = r.to_bits() & 3;
    let x = (t - (r - ROUND) * 0.25) * std::f32::consts::TAU;
    let z = x * x;
    let s = x
        * ((((z * (1.0 / 362_880.0) - 1.0 / 5_040.0) * z + 1.0 / 120.0) * z - 1.0 / 6.0) * z + 1.0);
    let c = ((((z * (-1.0 / 3_628_800.0) + 1.0 / 40_320.0) * z - 1.0 / 720.0) * z + 1.0 / 24.0)
        * z
        - 0.5)
        * z
        + 1.0;
    let (a, b) = if q & 1 == 1 { (c, s) } else { (s, c) };
    let sin = f32::from_bits(a.to_bits() ^ ((q & 2) << 30));
    let cos = f32::from_bits(b.to_bits() ^ (((q + 1) & 2) << 30));
    (sin, cos)
}

/// Two independent standard Gaussians of two 32-bit words (Box–Muller in f32): `r cos θ` and
/// `r sin θ`, `r = √(−2 ln u)` with `u = (⌊a/2⌋ + ½)/2^31` (|g| up to 6.7; the normal's mass
/// beyond, 2e-11, is not drawn), `θ = 2π ⌊b/2^8⌋/2^24`.
#[inline(always)]
pub fn gauss_pair_f32(a: u32, b: u32) -> (f32, f32) {
    let u = (((a >> 1) as i32) as f32 + 0.5) * (1.0 / 2147483648.0);
    let r = (-2.0 * ln_f32(u)).sqrt();
    let (s, c) = sincos_turn_f32(((b >> 8) as i32) as f32 * (1.0 / 16777216.0));
    (r * c, r * s)
}

/// The key of a seed.
#[inline(always)]
pub fn key_of(seed: i64) -> [u32; 2] {
    [seed as u64 as u32, (seed as u64 >> 32) as u32]
}

/// Pixel `i`'s deviates in `stream` under `seed`, one at a time (the reference the vector
/// lanes are checked against, `noisify::counter`): its Poisson word (word 0 or 1 of its block,
/// [`group_block`]) and its Gaussian (of the Box–Muller pair of words 2 and 3: the cosine's for
/// the group's first half, the sine's for the second).
pub fn counter_pixel(seed: i64, pixel: u64, stream: u32) -> (u32, f32) {
    let (b, half) = group_block(pixel);
    let w = philox4x32_10([b as u32, (b >> 32) as u32, stream, 0], key_of(seed));
    let (c, s) = gauss_pair_f32(w[2], w[3]);
    (w[half], if half == 0 { c } else { s })
}

/// Pixel `i`'s 63-bit uniform in `stream` under `seed` ([`wide_of`]): words 0 and 1 of its block
/// ([`group_block`]) in a group's first half, words 2 and 3 in its second.
pub fn counter_wide(seed: i64, pixel: u64, stream: u32) -> u64 {
    let (b, half) = group_block(pixel);
    let w = philox4x32_10([b as u32, (b >> 32) as u32, stream, 0], key_of(seed));
    wide_of(w[2 * half], w[2 * half + 1])
}

/// [`philox4x32_10`] of the 16 blocks of group `group` (blocks `16·group ..`) in `stream`,
/// lane by lane (structure of arrays: each loop over the lanes is a few vector instructions):
/// [`philox_group_wide`] on x86-64, [`philox_group_narrow`] elsewhere (wasm); both are compiled
/// and tested on every target (`tests::philox_group_is_philox`).
#[inline(always)]
pub fn philox_group(seed: i64, stream: u32, group: u64) -> [[u32; BLOCKS]; 4] {
    #[cfg(target_arch = "x86_64")]
    {
        philox_group_wide(seed, stream, group)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        philox_group_narrow(seed, stream, group)
    }
}

/// The first round of a group's blocks (`l` = 0 .. 16: blocks `16·group + l`): their counters
/// are (low word of the index, high word, stream, 0), and since the group's first index is a
/// multiple of 16 the low words are `lo + l` without a carry and the high word is the same in
/// every lane, as are word 2's product and word 3: one product a lane instead of two, and no
/// counters to assemble lane by lane. Returns `lo` and the first round's words 0 and 1 (the
/// same in every lane: `(M1·stream)>>32 ^ hi ^ k0` and `M1·stream`); lane `l`'s words 2 and 3
/// are `(M0·(lo + l))>>32 ^ k1` and `M0·(lo + l)`.
#[inline(always)]
fn philox_first(k: [u32; 2], stream: u32, group: u64) -> (u32, u64, u64) {
    let first = group * BLOCKS as u64;
    let (lo, hi) = (first as u32, (first >> 32) as u32);
    let q1 = PHILOX_M1 * stream as u64;
    (lo, (q1 >> 32) ^ hi as u64 ^ k[0] as u64, q1)
}

/// [`philox_group`] with each word in a 64-bit lane (x86-64): a round's products are then one
/// `vpmuludq` each (32 × 32 → 64 bits of the lanes' low halves), their halves a shift and the
/// lane itself, with no narrowing or widening between rounds. The high halves of words 1 and 3
/// carry the previous product's high bits into words 0 and 2's high halves, which only ever
/// reach a product through their low 32 bits, and the words are cut to 32 bits at the end: the
/// same bits as [`philox4x32_10`].
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
fn philox_group_wide(seed: i64, stream: u32, group: u64) -> [[u32; BLOCKS]; 4] {
    let mut k = key_of(seed);
    let (lo, y0, y1) = philox_first(k, stream, group);
    let mut x = [[0u64; BLOCKS]; 4];
    for l in 0..BLOCKS {
        let p0 = PHILOX_M0 * lo.wrapping_add(l as u32) as u64;
        x[0][l] = y0;
        x[1][l] = y1;
        x[2][l] = (p0 >> 32) ^ k[1] as u64;
        x[3][l] = p0;
    }
    for _ in 1..PHILOX_ROUNDS {
        k = philox_bump(k);
        let (k0, k1) = (k[0] as u64, k[1] as u64);
        let mut y = [[0u64; BLOCKS]; 4];
        for l in 0..BLOCKS {
            // 32 × 32 → 64 bits: the factors' low halves
            let p0 = PHILOX_M0 * (x[0][l] as u32 as u64);
            let p1 = PHILOX_M1 * (x[2][l] as u32 as u64);
            y[0][l] = (p1 >> 32) ^ x[1][l] ^ k0;
            y[1][l] = p1;
            y[2][l] = (p0 >> 32) ^ x[3][l] ^ k1;
            y[3][l] = p0;
        }
        x = y;
    }
    let mut w = [[0u32; BLOCKS]; 4];
    for (w, x) in w.iter_mut().zip(&x) {
        for l in 0..BLOCKS {
            w[l] = x[l] as u32;
        }
    }
    w
}

/// [`philox_group`] in 32-bit lanes (wasm's simd128: its 64-bit multiply has no 32 × 32 → 64
/// form, so the products are widened and narrowed each round).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn philox_group_narrow(seed: i64, stream: u32, group: u64) -> [[u32; BLOCKS]; 4] {
    let mut k = key_of(seed);
    let (lo, y0, y1) = philox_first(k, stream, group);
    let mut x = [[0u32; BLOCKS]; 4];
    for l in 0..BLOCKS {
        let p0 = PHILOX_M0 * lo.wrapping_add(l as u32) as u64;
        x[0][l] = y0 as u32;
        x[1][l] = y1 as u32;
        x[2][l] = (p0 >> 32) as u32 ^ k[1];
        x[3][l] = p0 as u32;
    }
    for _ in 1..PHILOX_ROUNDS {
        k = philox_bump(k);
        let mut y = [[0u32; BLOCKS]; 4];
        for l in 0..BLOCKS {
            let p0 = PHILOX_M0 * x[0][l] as u64;
            let p1 = PHILOX_M1 * x[2][l] as u64;
            y[0][l] = (p1 >> 32) as u32 ^ x[1][l] ^ k[0];
            y[1][l] = p1 as u32;
            y[2][l] = (p0 >> 32) as u32 ^ x[3][l] ^ k[1];
            y[3][l] = p0 as u32;
        }
        x = y;
    }
    x
}

/// The Gaussians of a group's 32 pixels from its blocks' words 2 and 3 ([`gauss_pair_f32`]).
#[inline(always)]
pub fn group_gaussians(w: &[[u32; BLOCKS]; 4]) -> [f32; GROUP] {
    let mut g = [0f32; GROUP];
    let (lo, hi) = g.split_at_mut(BLOCKS);
    for l in 0..BLOCKS {
        let (c, s) = gauss_pair_f32(w[2][l], w[3][l]);
        lo[l] = c;
        hi[l] = s;
    }
    g
}

/// A kernel compiled once per vector unit ([`Lanes::run`]): `compute` is inlined into a
/// function with that unit's target features, so its loops over lanes vectorise for it.
pub trait LaneKernel {
    type Out;
    fn compute(self) -> Self::Out;
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2")]
unsafe fn on_avx512<K: LaneKernel>(k: K) -> K::Out {
    k.compute()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn on_avx2<K: LaneKernel>(k: K) -> K::Out {
    k.compute()
}

/// The vector unit the counter generator's kernels run on: the CPU kernels' level
/// (`simd::level`: the widest detected, capped by `NANOBRAGG_SIMD`). Every unit computes the
/// same bits (integer operations and correctly rounded `+ − × ÷ √`, no fused multiply-add).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lanes {
    Baseline,
    Avx2,
    Avx512,
}

impl Lanes {
    pub fn detected() -> Lanes {
        match crate::simd::level() {
            crate::simd::Simd::Avx512 => Lanes::Avx512,
            crate::simd::Simd::Avx2 => Lanes::Avx2,
            crate::simd::Simd::None => Lanes::Baseline,
        }
    }

    /// Every unit this CPU has (for tests that compare them).
    pub fn available() -> Vec<Lanes> {
        let mut v = vec![Lanes::Baseline];
        let d = crate::simd::detected();
        if d >= crate::simd::Simd::Avx2 {
            v.push(Lanes::Avx2);
        }
        if d >= crate::simd::Simd::Avx512 {
            v.push(Lanes::Avx512);
        }
        v
    }

    /// Runs `k` compiled for this unit (a unit the CPU lacks runs the baseline's code).
    #[inline(always)]
    pub fn run<K: LaneKernel>(self, k: K) -> K::Out {
        #[cfg(target_arch = "x86_64")]
        {
            let d = crate::simd::detected();
            match self {
                // SAFETY: the CPU has the unit's features (`simd::detected`)
                Lanes::Avx512 if d >= crate::simd::Simd::Avx512 => return unsafe { on_avx512(k) },
                Lanes::Avx2 if d >= crate::simd::Simd::Avx2 => return unsafe { on_avx2(k) },
                _ => {}
            }
        }
        k.compute()
    }
}

/// `ln Γ(x)` in f64 (the Lanczos series of [`gammln`], x > 0).
pub fn ln_gamma(x: f64) -> f64 {
    const COF: [f64; 6] = [
        76.18009172947146,
        -86.50532032941677,
        24.01409824083091,
        -1.231739572450155,
        0.1208650973866179e-2,
        -0.5395239384953e-5,
    ];
    let mut y = x;
    let tmp = x + 5.5;
    let tmp = tmp - (x + 0.5) * tmp.ln();
    let mut ser = 1.000000000190015;
    for c in COF {
        y += 1.0;
        ser += c / y;
    }
    -tmp + (2.5066282746310005 * ser / x).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f32, b: f64) -> bool {
        (a as f64 - b).abs() < 5e-9
    }

    #[test]
    fn ran1_vectors() {
        let mut st = RanState::new();
        let mut idum = -12345678i64;
        let want = [
            0.765989304,
            0.023453664,
            0.589726627,
            0.535101593,
            0.982231438,
            0.693016112,
        ];
        for w in want {
            let v = st.ran1(&mut idum);
            assert!(close(v, w), "{v} vs {w}");
        }
        let mut st = RanState::new();
        let mut idum = -1i64;
        for w in [0.415999353, 0.091964893, 0.75641048, 0.52970022] {
            let v = st.ran1(&mut idum);
            assert!(close(v, w), "{v} vs {w}");
        }
    }

    #[test]
    fn ran1_seed_zero_and_one_agree_and_positive_seed_continues() {
        let mut a = RanState::new();
        let mut b = RanState::new();
        let (mut s0, mut s1) = (0i64, -1i64);
        for _ in 0..10 {
            assert_eq!(a.ran1(&mut s0).to_bits(), b.ran1(&mut s1).to_bits());
        }
        // A positive seed on a fresh table is treated as 1 (iy == 0 forces a reseed).
        let mut c = RanState::new();
        let mut d = RanState::new();
        let (mut p, mut q) = (12345i64, -1i64);
        assert_eq!(c.ran1(&mut p).to_bits(), d.ran1(&mut q).to_bits());
        // A positive seed on a used table does not reseed: it uses the shared shuffle table.
        let mut st = RanState::new();
        let mut s = -5i64;
        st.ran1(&mut s);
        let before = st.clone();
        let mut pos = 777i64;
        st.ran1(&mut pos);
        assert_eq!(pos, schrage(777));
        assert_ne!(st, before);
    }

    fn assert_mat(m: [[f64; 3]; 3], want: [f64; 9]) {
        for r in 0..3 {
            for c in 0..3 {
                assert!(
                    (m[r][c] - want[r * 3 + c]).abs() < 1e-12,
                    "[{r}][{c}] {} vs {}",
                    m[r][c],
                    want[r * 3 + c]
                );
            }
        }
    }

    #[test]
    fn mosaic_vectors() {
        let mut st = RanState::new();
        let mut seed = -12345678i64;
        let spread = (0.5f64 / (180.0 / PI)) as f32;
        let m0 = mosaic_rotation_umat(&mut st, spread, &mut seed);
        assert_mat(
            m0,
            [
                0.999966123750,
                0.008226601328,
                -0.000272730812,
                -0.008227282507,
                0.999962779322,
                -0.002598421470,
                0.000251344483,
                0.002600577279,
                0.999996586906,
            ],
        );
        let m1 = mosaic_rotation_umat(&mut st, spread, &mut seed);
        assert_mat(
            m1,
            [
                0.999965920898,
                -0.007975168091,
                0.002133948649,
                0.007976187219,
                0.999968079497,
                -0.000469494699,
                -0.002130136234,
                0.000486499473,
                0.999997612916,
            ],
        );
        let m2 = mosaic_rotation_umat(&mut st, spread, &mut seed);
        assert_mat(
            m2,
            [
                0.999991435992,
                0.002841644103,
                0.003008820536,
                -0.002858485792,
                0.999980189431,
                0.005608012572,
                -0.002992824954,
                -0.005616565216,
                0.999979748392,
            ],
        );
    }

    #[test]
    fn random_misset_angles() {
        let mut st = RanState::new();
        let mut seed = -1i64; // -misset_seed 1
        let u = mosaic_rotation_umat(&mut st, 90.0, &mut seed);
        let a = umat2misset(u);
        let deg = a.map(|x| x * 180.0 / PI);
        let want = [4.6629571628, -11.8449788458, 17.6225480239];
        for i in 0..3 {
            assert!((deg[i] - want[i]).abs() < 5e-10, "{deg:?}");
        }
    }

    #[test]
    fn umat2misset_roundtrip_and_gimbal_lock() {
        let (rx, ry, rz) = (0.3f64, -0.2f64, 1.1f64);
        let (cx, sx, cy, sy, cz, sz) = (rx.cos(), rx.sin(), ry.cos(), ry.sin(), rz.cos(), rz.sin());
        // Rz * Ry * Rx
        let u = [
            [cz * cy, cz * sy * sx - sz * cx, cz * sy * cx + sz * sx],
            [sz * cy, sz * sy * sx + cz * cx, sz * sy * cx - cz * sx],
            [-sy, cy * sx, cy * cx],
        ];
        let a = umat2misset(u);
        assert!(
            (a[0] - rx).abs() < 1e-14 && (a[1] - ry).abs() < 1e-14 && (a[2] - rz).abs() < 1e-14
        );
        // Rows that are not unit length are normalised first.
        let scaled = [
            u[0].map(|v| v * 2.0),
            u[1].map(|v| v * 3.0),
            u[2].map(|v| v * 0.5),
        ];
        let b = umat2misset(scaled);
        assert!(
            (b[0] - rx).abs() < 1e-14 && (b[1] - ry).abs() < 1e-14 && (b[2] - rz).abs() < 1e-14
        );
        // Gimbal lock: z row = (-1, 0, 0).
        let g = umat2misset([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]);
        assert_eq!(g, [PI, PI / 2.0, 0.0f64.atan2(-1.0)]);
    }

    #[test]
    fn gammln_values() {
        // ln Γ(n) = ln((n-1)!)
        assert!((gammln(1.0) as f64).abs() < 1e-6);
        assert!((gammln(5.0) as f64 - 24f64.ln()).abs() < 1e-5);
        assert!((gammln(11.0) as f64 - 3628800f64.ln()).abs() < 1e-5);
        assert!((gammln(0.5) as f64 - PI.sqrt().ln()).abs() < 1e-6);
    }

    #[test]
    fn poidev_vectors() {
        let mut st = RanState::new();
        let mut noise = Noise::new();
        let mut seed = -1i64;
        let seq: [(f32, f32); 8] = [
            (0.0, 0.0),
            (0.5, 0.0),
            (5.0, 5.0),
            (11.9, 15.0),
            (12.0, 9.0),
            (100.0, 99.0),
            (5000.0, 4909.0),
            (2e6, 1999358.5),
        ];
        for (xm, want) in seq {
            let v = noise.poidev(&mut st, xm, &mut seed);
            assert_eq!(v, want, "poidev({xm})");
        }
    }

    #[test]
    fn gaussdev_pairs_and_moments() {
        let mut st = RanState::new();
        let mut noise = Noise::new();
        let mut seed = -42i64;
        let n = 20000;
        let (mut s, mut s2) = (0.0f64, 0.0f64);
        for _ in 0..n {
            let g = noise.gaussdev(&mut st, &mut seed) as f64;
            s += g;
            s2 += g * g;
        }
        let mean = s / n as f64;
        let var = s2 / n as f64 - mean * mean;
        assert!(mean.abs() < 0.03, "{mean}");
        assert!((var - 1.0).abs() < 0.05, "{var}");
        // The second call of a pair draws nothing.
        let mut seed2 = -7i64;
        let mut noise2 = Noise::new();
        noise2.gaussdev(&mut st, &mut seed2);
        let before = seed2;
        noise2.gaussdev(&mut st, &mut seed2);
        assert_eq!(seed2, before);
    }

    #[test]
    fn philox_known_answers() {
        // Random123's kat_vectors: philox4x32 10, counter, key, expected
        let kat: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
            (
                [0; 4],
                [0; 2],
                [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8],
            ),
            (
                [u32::MAX; 4],
                [u32::MAX; 2],
                [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
            ),
            (
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0],
                [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
            ),
        ];
        for (ctr, key, want) in kat {
            assert_eq!(philox4x32_10(ctr, key), want);
        }
    }

    #[test]
    fn counter_streams_are_pure_functions_of_seed_pixel_and_stream() {
        let draw = |seed, pixel, stream| {
            let mut r = CounterRng::new(seed, pixel, stream);
            [r.uniform(), r.uniform(), r.uniform()]
        };
        assert_eq!(draw(-5, 1 << 40, 2), draw(-5, 1 << 40, 2));
        assert_ne!(draw(-5, 7, 2), draw(-6, 7, 2));
        assert_ne!(draw(-5, 7, 2), draw(-5, 8, 2));
        assert_ne!(draw(-5, 7, 2), draw(-5, 7, 3));
        assert_ne!(draw(-5, 7, 2), draw(-5, 7 + (1 << 32), 2));
        // the block is the key's Philox of the counter: the first uniform's bits
        let b = philox4x32_10(
            [7, 0, 2, 0],
            [-5i64 as u64 as u32, (-5i64 as u64 >> 32) as u32],
        );
        let bits = ((b[0] as u64) << 20) | (b[1] as u64 >> 12);
        assert_eq!(draw(-5, 7, 2)[0], (bits as f64 + 0.5) / (1u64 << 52) as f64);
    }

    fn moments(v: &[f64]) -> (f64, f64) {
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        (
            mean,
            v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0),
        )
    }

    #[test]
    fn counter_uniform_and_gauss_moments() {
        let n = 200_000u64;
        let u: Vec<f64> = (0..n)
            .map(|i| CounterRng::new(11, i, 0).uniform())
            .collect();
        let (m, v) = moments(&u);
        // standard errors: mean 0.29/sqrt(n) = 6.5e-4, variance ~2.9e-4 of 1/12
        assert!((m - 0.5).abs() < 4e-3, "{m}");
        assert!((v - 1.0 / 12.0).abs() < 2e-3, "{v}");
        assert!(u.iter().all(|&x| x > 0.0 && x < 1.0));
        let g: Vec<f64> = (0..n).map(|i| CounterRng::new(11, i, 1).gauss()).collect();
        let (m, v) = moments(&g);
        assert!(m.abs() < 1e-2, "{m}");
        assert!((v - 1.0).abs() < 1.5e-2, "{v}");
        // the fraction beyond 2 sigma: 2 (1 - Phi(2)) = 0.0455
        let tail = g.iter().filter(|x| x.abs() > 2.0).count() as f64 / n as f64;
        assert!((tail - 0.0455).abs() < 3e-3, "{tail}");
    }

    #[test]
    fn counter_poisson_moments_and_probabilities() {
        let n = 100_000u64;
        for xm in [0.3, 3.7, 11.9, 12.0, 55.5, 4000.0, 2e6] {
            let v: Vec<f64> = (0..n)
                .map(|i| CounterRng::new(3, i, 2).poisson(xm))
                .collect();
            let (m, var) = moments(&v);
            // 5 standard errors of the mean sqrt(xm/n), of the variance xm sqrt(2/n)
            let se_m = (xm / n as f64).sqrt();
            let se_v = xm * (2.0 / n as f64).sqrt() + 1e-9;
            assert!((m - xm).abs() < 5.0 * se_m, "mean of {xm}: {m}");
            assert!((var - xm).abs() < 5.0 * se_v, "variance of {xm}: {var}");
            if xm <= 1e6 {
                assert!(v.iter().all(|&k| k >= 0.0 && k.fract() == 0.0));
                // P(k) for k at the mode against the Poisson probability
                let k = xm.floor();
                let p = (k * xm.ln() - xm - ln_gamma(k + 1.0)).exp();
                let f = v.iter().filter(|&&x| x == k).count() as f64 / n as f64;
                let se = (p * (1.0 - p) / n as f64).sqrt();
                assert!((f - p).abs() < 5.0 * se, "P({k}) of {xm}: {f} vs {p}");
            }
        }
        for xm in [0.0, -1.0, f64::NAN] {
            assert_eq!(CounterRng::new(3, 0, 2).poisson(xm), 0.0);
        }
    }

    #[test]
    fn counter_pixels_take_their_groups_blocks() {
        // pixel i: block 16·(i / 32) + i % 16, word 0 / cosine in a group's first half, word 1
        // / sine in its second; the group's lanes give the same words
        for (i, block, half) in [
            (0u64, 0u64, 0usize),
            (15, 15, 0),
            (16, 0, 1),
            (31, 15, 1),
            (32, 16, 0),
            (77, 45, 0),
            (1 << 40, 1 << 39, 0),
        ] {
            assert_eq!(group_block(i), (block, half), "{i}");
        }
        let w = philox4x32_10([45, 0, 5, 0], key_of(-5));
        let (c, s) = gauss_pair_f32(w[2], w[3]);
        assert_eq!(counter_pixel(-5, 77, 5), (w[0], c));
        assert_eq!(counter_pixel(-5, 77 + 16, 5), (w[1], s));
        let g = philox_group(-5, 5, 2);
        for l in 0..BLOCKS {
            let b = philox4x32_10([32 + l as u32, 0, 5, 0], key_of(-5));
            assert_eq!([g[0][l], g[1][l], g[2][l], g[3][l]], b);
        }
        let gg = group_gaussians(&g);
        assert_eq!(gg[3], counter_pixel(-5, 64 + 3, 5).1);
        assert_eq!(gg[16 + 3], counter_pixel(-5, 64 + 16 + 3, 5).1);
        // high pixel bits reach the counter's second word
        let far = philox_group(-5, 5, (1 << 33) / 32);
        let b = philox4x32_10([0, 1, 5, 0], key_of(-5));
        assert_eq!(far[0][0], b[0]);
    }

    #[test]
    fn poisson_tables_hold_the_poisson_probabilities() {
        // each table's probabilities against the Poisson probabilities from the library's `ln`
        // and `exp` (ln k! as a sum of ln j: independent of the table's recurrences), over
        // counts well beyond both tails; the thresholds end at 2^63, so they sum to 1
        for lam in [12u32, 13, 36, 100, 300, 1000, 1023] {
            let t = PoissonTable::new(lam);
            let l = lam as f64;
            let (mut lf, mut total) = (0.0f64, 0.0);
            for k in 0..=(3 * lam + 200) {
                if k > 1 {
                    lf += (k as f64).ln();
                }
                let p = (k as f64 * l.ln() - l - lf).exp();
                let q = t.probability(k);
                total += q;
                // relative 1e-9 (the f64 rounding of ln k! over ~k terms), plus the table's
                // resolution 2^-63 and the counts it leaves out (below 1e-21)
                assert!(
                    (q - p).abs() <= 1e-9 * p + 2.2e-19 + if q == 0.0 { 1e-21 } else { 0.0 },
                    "λ {lam}, k {k}: table {q:e}, Poisson {p:e}"
                );
            }
            assert!((total - 1.0).abs() < 1e-15, "λ {lam}: {total}");
            assert_eq!(*t.thresholds.last().unwrap(), 1u64 << 63);
            // the guide's start and the search give the inversion: every w between two
            // thresholds takes the same count, the one of the first threshold above it
            let th = &t.thresholds;
            for (j, &hi) in th.iter().enumerate() {
                let lo = if j == 0 { 0 } else { th[j - 1] };
                if hi > lo {
                    for w in [lo, lo + (hi - lo) / 2, hi - 1] {
                        assert_eq!(t.count(w), t.first + j as u32, "λ {lam} w {w}");
                    }
                }
            }
        }
        // the kept tables are these
        assert_eq!(
            poisson_table(36).thresholds,
            PoissonTable::new(36).thresholds
        );
    }

    #[test]
    fn split_poisson_draws_sum_a_table_count_and_an_inverted_fraction() {
        // Poisson(⌊xm⌋) at w plus Poisson(xm − ⌊xm⌋) at u
        let w = counter_wide(-5, 77, 3);
        let b = philox4x32_10([45, 0, 3, 0], key_of(-5));
        assert_eq!(w, wide_of(b[0], b[1]));
        assert_eq!(counter_wide(-5, 77 + 16, 3), wide_of(b[2], b[3]));
        assert_eq!(wide_of(u32::MAX, u32::MAX), (1u64 << 63) - 1);
        for (xm, u) in [(36.6f64, 0.2), (36.6, 0.9), (12.0, 0.5), (1023.9375, 0.99)] {
            let whole = xm.floor();
            assert_eq!(
                poisson_split(xm, w, u),
                poisson_table(whole as u32).count(w) as f64 + poisson_inversion(u, xm - whole)
            );
        }
        // a whole mean adds nothing
        assert_eq!(
            poisson_split(36.0, w, 0.999),
            poisson_table(36).count(w) as f64
        );
    }

    #[test]
    fn philox_group_is_philox() {
        // every word of every lane, over seeds (both key words), streams and groups whose
        // counters use both low words (the 64-bit lanes' high halves must never leak)
        let mut r = CounterRng::new(3, 4, 5);
        for t in 0..400u32 {
            let seed = if t % 3 == 0 {
                -(t as i64) - 1
            } else {
                (r.uniform() * 9e18) as i64
            };
            let stream = t % 7;
            let group = if t % 2 == 0 {
                t as u64
            } else {
                (r.uniform() * 1.8e19) as u64 / 16
            };
            // both bodies, whichever this target runs
            for (name, g) in [
                ("group", philox_group(seed, stream, group)),
                ("wide", philox_group_wide(seed, stream, group)),
                ("narrow", philox_group_narrow(seed, stream, group)),
            ] {
                for l in 0..BLOCKS {
                    let j = group * BLOCKS as u64 + l as u64;
                    let b = philox4x32_10([j as u32, (j >> 32) as u32, stream, 0], key_of(seed));
                    assert_eq!(
                        [g[0][l], g[1][l], g[2][l], g[3][l]],
                        b,
                        "{name}: {seed} {stream} {group} {l}"
                    );
                }
            }
        }
    }

    #[test]
    fn f32_ln_and_sincos_match_the_library() {
        let mut worst = (0.0f64, 0.0f64);
        let n = 400_000u32;
        for i in 0..=n {
            // uniforms as the Box–Muller draws them, the ends included
            let a = (i as u64 * u32::MAX as u64 / n as u64) as u32;
            let u = (((a >> 1) as i32) as f32 + 0.5) * (1.0 / 2147483648.0);
            let l = ln_f32(u) as f64;
            let l0 = (u as f64).ln();
            worst.0 = worst.0.max((l - l0).abs() / l0.abs().max(1e-3));
            let t = ((a >> 8) as i32) as f32 * (1.0 / 16777216.0);
            let (s, c) = sincos_turn_f32(t);
            let (s0, c0) = (std::f64::consts::TAU * t as f64).sin_cos();
            worst.1 = worst
                .1
                .max((s as f64 - s0).abs().max((c as f64 - c0).abs()));
        }
        // f32 arithmetic: a few units of 6e-8
        assert!(worst.0 < 3e-7, "ln: relative error {}", worst.0);
        assert!(worst.1 < 3e-7, "sin/cos: error {}", worst.1);
        assert_eq!(ln_f32(1.0), 0.0);
        assert_eq!(sincos_turn_f32(0.25), (1.0, 0.0));
        assert_eq!(sincos_turn_f32(0.75), (-1.0, 0.0));
        // the largest radius: u = 2^-32
        let (g, _) = gauss_pair_f32(0, 0);
        assert!(
            (g as f64 - (2.0 * 32.0 * std::f64::consts::LN_2).sqrt()).abs() < 1e-5,
            "{g}"
        );
    }

    #[test]
    fn exp_neg_f32_matches_the_library() {
        let mut worst = 0.0f64;
        for i in 0..=1_200_000 {
            let x = i as f32 * 1e-5; // 0 .. 12
            let want = (-(x as f64)).exp();
            worst = worst.max((exp_neg_f32(x) as f64 - want).abs() / want);
        }
        assert!(worst < 3e-7, "exp(-x) in f32: relative error {worst}");
        assert_eq!(exp_neg_f32(0.0), 1.0);
    }

    #[test]
    fn ln_factorial_table_and_series() {
        let mut sum = 0.0f64;
        for k in 0..2000u32 {
            if k > 1 {
                sum += (k as f64).ln();
            }
            let l = ln_factorial(k as f64);
            assert!((l - sum).abs() <= 2e-14 * sum.max(1.0), "{k}: {l} vs {sum}");
        }
        assert!((ln_factorial(1e6) - ln_gamma(1e6 + 1.0)).abs() < 1e-8 * ln_factorial(1e6));
    }

    #[test]
    fn ln_and_sincos_of_the_lanes_match_the_library() {
        // across (0, 1), the ends included, against the platform's libm in f64
        let mut worst = (0.0f64, 0.0f64);
        let n = 200_000;
        for i in 0..=n {
            let u = if i == 0 {
                uniform_of(0, 0)
            } else if i == n {
                uniform_of(u32::MAX, u32::MAX)
            } else {
                i as f64 / n as f64
            };
            let l = ln_unit(u);
            worst.0 = worst.0.max((l - u.ln()).abs() / u.ln().abs().max(1e-300));
            let (s, c) = sincos_turn(u);
            let (s0, c0) = (2.0 * PI * u).sin_cos();
            worst.1 = worst.1.max((s - s0).abs().max((c - c0).abs()));
        }
        assert!(worst.0 < 4e-15, "ln: relative error {}", worst.0);
        // 2πu itself is rounded (1e-16 of 2π) before the library's sin and cos
        assert!(worst.1 < 2e-15, "sin/cos: error {}", worst.1);
        // the quarter turns exactly
        assert_eq!(sincos_turn(0.25), (1.0, 0.0));
        assert_eq!(sincos_turn(0.5).1, -1.0);
        assert_eq!(sincos_turn(0.75), (-1.0, 0.0));
    }

    #[test]
    fn exp_neg_matches_the_library() {
        let mut worst = 0.0f64;
        for i in 0..=120_000 {
            let x = i as f64 * 1e-4; // 0 .. 12
            worst = worst.max((exp_neg(x) - (-x).exp()).abs() / (-x).exp());
        }
        for x in [0.0, 1e-300, 1e-9, 0.5, 30.0, 100.0, 700.0] {
            worst = worst.max((exp_neg(x) - (-x).exp()).abs() / (-x).exp());
        }
        assert!(worst < 4e-15, "exp(-x): relative error {worst}");
        assert_eq!(exp_neg(0.0), 1.0);
    }

    #[test]
    fn ln_gamma_values() {
        assert!((ln_gamma(11.0) - 3628800f64.ln()).abs() < 1e-10);
        assert!((ln_gamma(0.5) - PI.sqrt().ln()).abs() < 1e-10);
        assert!((ln_gamma(101.0) - (1..=100).map(|k| (k as f64).ln()).sum::<f64>()).abs() < 1e-9);
    }
}
