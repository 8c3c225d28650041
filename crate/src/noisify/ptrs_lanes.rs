//! The counter generator's Poisson counts of means from 12 to 1e6 (`rng::CounterRng::poisson`:
//! Hörmann's PTRS, `rng::poisson_ptrs`) for the pixels of one 32-pixel group side by side: each
//! pixel's first Philox block of its own stream (`counter::POISSON`) and the first try up to
//! its squeeze are computed lane by lane (structure of arrays: each loop over the lanes is a few
//! vector instructions, with no dependent chain between pixels); the logarithmic test (about
//! four pixels in ten) pixel by pixel, and a rejected first try (one to two in ten) goes on
//! with `rng::poisson_ptrs` from the stream's second block, as the scalar draw does. A mean
//! above 1e6 and a group with few candidates take the scalar `CounterRng`. Every count is
//! therefore the scalar function's, to the bit (the same arithmetic in the same order: `tests`).
//!
//! Why: a realistic image's background (water, air: tens of photons a pixel) puts nearly every
//! pixel above 12, where the scalar draw is a chain of dependent divisions, square roots and
//! series a pixel (≈ 190 ns natively). The noise pass uses it in wasm (`counter::group`).

use crate::rng::{key_of, ln_factorial, ln_unit, philox4x32_10, poisson_ptrs, CounterRng, GROUP};

use super::counter::POISSON;

/// The largest mean PTRS draws (above it `CounterRng::poisson` takes the Gaussian
/// approximation).
const PTRS_MAX: f64 = 1.0e6;

/// Fewer candidates than this in a group: the scalar draw (the lanes' fixed cost is a whole
/// group's Philox blocks and set-ups).
const MIN_LANES: usize = 4;

/// [`crate::rng::philox4x32_10`] of the blocks `[pixel low, pixel high, stream, 0]` of the
/// group's pixels `first ..` under `key`, lane by lane.
#[inline(always)]
fn philox_first_blocks(key: [u32; 2], stream: u32, first: u64) -> [[u32; GROUP]; 4] {
    const M0: u64 = 0xD251_1F53;
    const M1: u64 = 0xCD9E_8D57;
    const W0: u32 = 0x9E37_79B9;
    const W1: u32 = 0xBB67_AE85;
    let mut k = key;
    let mut x = [[0u32; GROUP]; 4];
    for l in 0..GROUP {
        let j = first + l as u64;
        x[0][l] = j as u32;
        x[1][l] = (j >> 32) as u32;
        x[2][l] = stream;
    }
    for round in 0..10 {
        if round > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let mut y = [[0u32; GROUP]; 4];
        for l in 0..GROUP {
            let p0 = M0 * x[0][l] as u64;
            let p1 = M1 * x[2][l] as u64;
            y[0][l] = (p1 >> 32) as u32 ^ x[1][l] ^ k[0];
            y[1][l] = p1 as u32;
            y[2][l] = (p0 >> 32) as u32 ^ x[3][l] ^ k[1];
            y[3][l] = p0 as u32;
        }
        x = y;
    }
    x
}

/// `rng::uniform_of`: the uniform in (0, 1) of two words, `(m + 1/2) / 2^52` of their top 52
/// bits.
#[inline(always)]
fn uniform_of(a: u32, b: u32) -> f64 {
    let m = ((a as u64) << 20) | (b as u64 >> 12);
    (f64::from_bits(0x3FF0_0000_0000_0000 | m) - 1.0) + f64::from_bits(0x3CA0_0000_0000_0000)
}

/// The Poisson counts of the group's pixels `first + l` (l < `n`) whose means `m[l]` are
/// 12 or more (`big[l]`), into `c[l]`, as `CounterRng::new(seed, first + l, POISSON)
/// .poisson(m[l])` gives them; the other lanes of `c` are left as they are. Returns how many
/// of them were not the first try's (a rejected first try, drawn on from the stream's second
/// block; a mean above 1e6 or too few candidates: the scalar draw).
#[inline(always)]
pub fn big_counts(
    seed: i64,
    first: usize,
    n: usize,
    m: &[f64; GROUP],
    big: &[bool; GROUP],
    c: &mut [f64; GROUP],
) -> usize {
    let scalar = |l: usize| CounterRng::new(seed, (first + l) as u64, POISSON).poisson(m[l]);
    let mut lane = [false; GROUP];
    let mut count = 0;
    for l in 0..n {
        lane[l] = big[l] && m[l] <= PTRS_MAX;
        count += lane[l] as usize;
    }
    if count < MIN_LANES {
        let mut redrawn = 0;
        for l in 0..n {
            if big[l] {
                c[l] = scalar(l);
                redrawn += 1;
            }
        }
        return redrawn;
    }
    // the lanes' means (others: 12, a harmless value whose results are not used)
    let mut lam = [0f64; GROUP];
    for l in 0..GROUP {
        lam[l] = if lane[l] { m[l] } else { 12.0 };
    }
    let key = key_of(seed);
    let w = philox_first_blocks(key, POISSON, first as u64);
    // `rng::poisson_ptrs`'s first try up to its squeeze, lane by lane, in its order of
    // operations (its set-up's logarithms only where the logarithmic test is taken, below)
    let (mut k, mut b, mut a) = ([0f64; GROUP], [0f64; GROUP], [0f64; GROUP]);
    let (mut us, mut v) = ([0f64; GROUP], [0f64; GROUP]);
    let (mut done, mut test) = ([false; GROUP], [false; GROUP]);
    for l in 0..GROUP {
        let lam = lam[l];
        let slam = lam.sqrt();
        let bl = 0.931 + 2.53 * slam;
        let al = -0.059 + 0.02483 * bl;
        let vr = 0.9277 - 3.6224 / (bl - 2.0);
        let u = uniform_of(w[0][l], w[1][l]) - 0.5;
        let vl = uniform_of(w[2][l], w[3][l]);
        let usl = 0.5 - u.abs();
        let kl = ((2.0 * al / usl + bl) * u + lam + 0.43).floor();
        (k[l], b[l], a[l], us[l], v[l]) = (kl, bl, al, usl, vl);
        done[l] = usl >= 0.07 && vl <= vr;
        test[l] = !done[l] && !(kl < 0.0 || (usl < 0.013 && vl > usl));
    }
    let mut redrawn = 0;
    for l in 0..n {
        if !big[l] {
            continue;
        }
        if !lane[l] {
            c[l] = scalar(l);
            redrawn += 1;
            continue;
        }
        if done[l] {
            c[l] = k[l];
            continue;
        }
        // the logarithmic test of the first try (`poisson_ptrs`'s expressions)
        if test[l] {
            let lam = lam[l];
            let loglam = ln_unit(lam);
            let invalpha = 1.1239 + 1.1328 / (b[l] - 3.4);
            let ln_invalpha = ln_unit(invalpha);
            if ln_unit(v[l]) + ln_invalpha - ln_unit(a[l] / (us[l] * us[l]) + b[l])
                <= -lam + k[l] * loglam - ln_factorial(k[l])
            {
                c[l] = k[l];
                continue;
            }
        }
        // rejected: the tries that follow, from the stream's second block on
        let pixel = (first + l) as u64;
        let ctr = [pixel as u32, (pixel >> 32) as u32, POISSON];
        let (mut block, mut buf, mut used) = (1u32, [0u32; 4], 4usize);
        c[l] = poisson_ptrs(lam[l], || {
            if used >= 4 {
                buf = philox4x32_10([ctr[0], ctr[1], ctr[2], block], key);
                block += 1;
                used = 0;
            }
            used += 2;
            uniform_of(buf[used - 2], buf[used - 1])
        });
        redrawn += 1;
    }
    redrawn
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every count the lanes give is the scalar `CounterRng`'s, for means across PTRS's range
    /// (12 to 1e6, f32 values as the noise pass gives them, and the edges), partial groups,
    /// groups with few candidates, means above 1e6 and lanes that are not candidates.
    #[test]
    fn lanes_give_the_scalar_counts() {
        let (mut candidates, mut redrawn) = (0usize, 0usize);
        for (g, seed) in [
            (0u64, -1i64),
            (1, -17),
            (7, 123_456_789),
            (1 << 33, i64::MIN + 5),
        ] {
            for case in 0..400u64 {
                let first = ((g + case) * GROUP as u64) as usize;
                let mut m = [0f64; GROUP];
                let mut big = [false; GROUP];
                for l in 0..GROUP {
                    let h = (case * 2654435761 + l as u64 * 40503 + g) % 1000;
                    let mean = match case % 8 {
                        0 => 12.0 + (h as f64) * 0.01,
                        1 => 12.0 * (1.0 + h as f64 * 0.05),
                        2 => 10f64.powf(1.08 + h as f64 * 0.0049), // 12 .. 1e6
                        3 => [12.0, 1e6, 1e6 * (1.0 + 1e-9), 15.999, 16.0, 2e6][l % 6],
                        4 => (h as f64) * 0.03, // mostly below 12: few candidates
                        _ => 20.0 + h as f64 * 0.1,
                    };
                    let mean = mean as f32 as f64;
                    m[l] = mean;
                    big[l] = mean >= 12.0 && (case % 5 != 1 || l % 3 != 0);
                }
                let n = if case % 7 == 3 {
                    1 + (case as usize % GROUP)
                } else {
                    GROUP
                };
                let mut c = [-1f64; GROUP];
                redrawn += big_counts(seed, first, n, &m, &big, &mut c);
                for l in 0..GROUP {
                    let want = if l < n && big[l] {
                        candidates += 1;
                        CounterRng::new(seed, (first + l) as u64, POISSON).poisson(m[l])
                    } else {
                        -1.0
                    };
                    assert_eq!(
                        c[l].to_bits(),
                        want.to_bits(),
                        "seed {seed}, pixel {}, mean {}: {} vs {want}",
                        first + l,
                        m[l],
                        c[l]
                    );
                }
            }
        }
        // both ways were taken: most counts from the lanes, some redrawn
        assert!(
            candidates > 20_000 && redrawn > candidates / 50 && redrawn < candidates / 4,
            "{candidates} candidates, {redrawn} redrawn"
        );
    }
}
