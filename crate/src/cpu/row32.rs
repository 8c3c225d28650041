//! The fast kernel's main path: blocks of pixels along a row, with the loops turned inside out
//! so that the innermost loop runs over pixels (branch-free, vectorised; AVX2 or AVX-512 when the CPU
//! has it, `simd`; on wasm32 the image's term loops in simd128 lanes written out, `wasm_lanes`).
//! The block ([`block`]) is generic over what it carries beside the image ([`RowCarry`]): the
//! structure-factor cells for the image ([`ImageRow`], its hooks the bare terms), the tangents
//! for `tangent_row32.rs`. Same terms (`terms.rs`: `lattice_square`, `polarization`, `solid_angle`,
//! `capture_fraction`, `f_nearest`), factor semantics and rules as `pixel32`; used for the square
//! lattice without the running-sum flags, curved detector or tricubic lookups. Pixels under the
//! exact-Bragg rule are flagged for the f64 kernel; the pixel holding the run's first phi
//! sequence is redone by the per-pixel kernel. The image's Miller indices are f64, or where the
//! render's orientations are close (mosaic domains) the hybrid's: f64 once per pixel and
//! source, an f32 difference per orientation ([`HybridIndices`]).

use super::pixel32::{FastCtx, SourceConst};
use super::poll::{Poll, POLL_TERMS};
use crate::plan::{HklGrid, Interpolation, Panel, Plan, Shape};
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
pub type BlockFn = fn(
    &FastCtx,
    &Panel,
    usize,
    usize,
    usize,
    &mut Lanes<BLOCK>,
    &mut [f32],
    &mut [bool],
    &Poll,
) -> bool;

simd_versions!(
    /// The row-block kernel for this CPU.
    pub fn select => block_body(fc: &FastCtx, pan: &Panel, s: usize, f0: usize, len: usize, l: &mut Lanes<BLOCK>, out: &mut [f32], exact_out: &mut [bool], poll: &Poll) -> bool
);

/// Render pixels `f0..f0+len` of row `s` (all on panel `pan`) into `out[..len]`; `exact_out[j]` is set for pixels
/// that fall under the exact-Bragg rule (to be redone by `pixel64`). Returns false when the
/// render was cancelled (the cancel flag is read every `POLL_TERMS` orientations' worth of
/// terms). `l`: the lanes, made once per row by the caller (made for every block, their
/// zeroing was a quarter of the instructions of a one-term-per-pixel render).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn block_body(
    fc: &FastCtx,
    pan: &Panel,
    s: usize,
    f0: usize,
    len: usize,
    l: &mut Lanes<BLOCK>,
    out: &mut [f32],
    exact_out: &mut [bool],
    poll: &Poll,
) -> bool {
    let len = len.min(BLOCK);
    let g = &fc.plan.hkl;
    // with a table (that u32 indices reach) each term's cell is found in the vector loop
    let done = if g.hkls != 0 && g.data.len() < NO_CELL as usize {
        let mut image = ImageRow::<BLOCK, true>::new(g);
        block(fc, pan, s, f0, len, l, &mut image, poll)
    } else {
        let mut image = ImageRow::<BLOCK, false>::new(g);
        block(fc, pan, s, f0, len, l, &mut image, poll)
    };
    if !done {
        return false;
    }
    for j in 0..len {
        out[j] = l.value(fc.plan, j) as f32;
        exact_out[j] = l.exact[j];
    }
    true
}

/// The lane arrays of a block that every carry shares: the image's sums and the current
/// sub-pixel's directions and scattering vectors (lane j = the block's pixel j). Each array
/// starts on a 64-byte line (`repr(C)`, the f64 arrays first, the bools last): AVX-512 loads
/// of a struct aligned to 8 bytes split cache lines (the image took twice the time on case (a)).
#[repr(C, align(64))]
pub struct Lanes<const B: usize> {
    pub isum: [f64; B],
    pub polar: [f64; B],
    pub omega: [f64; B],
    pub capture: [f64; B],
    pub dx: [f64; B],
    pub dy: [f64; B],
    pub dz: [f64; B],
    /// 1/R.
    pub rr: [f64; B],
    pub qx: [f64; B],
    pub qy: [f64; B],
    pub qz: [f64; B],
    /// The source's Σ over orientations.
    pub acc: [f64; B],
    /// 1 where the source's q passes the resolution test, else 0.
    pub pass: [f32; B],
    /// The orientation's F_latt² (0 where the term is skipped).
    pub fl2: [f32; B],
    /// The orientation's δ = h − nearest per axis, f32 ([`RowCarry::BARE_LATTICE`]).
    pub dd: [[f32; B]; 3],
    /// 1 where the orientation's indices are in range, else 0 ([`RowCarry::BARE_LATTICE`]).
    pub okf: [f32; B],
    /// The source's lanes for the hybrid indices ([`HybridIndices`]): q rounded to f32, the
    /// reference indices' f₀ = h₀ − r₀ (f32) and r₀ (the nearest integers, i32), per axis.
    pub qf: [[f32; B]; 3],
    pub f0: [[f32; B]; 3],
    pub r0: [[i32; B]; 3],
    /// A term under the exact-Bragg rule (the pixel goes to the per-pixel kernel).
    pub exact: [bool; B],
    /// The hybrid indices' lanes to be decided in f64 (`hybrid_lane`), for the orientation.
    pub fix: [bool; B],
}

impl<const B: usize> Default for Lanes<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const B: usize> Lanes<B> {
    #[inline(always)]
    pub fn new() -> Self {
        Lanes {
            isum: [0.0; B],
            polar: [0.0; B],
            omega: [0.0; B],
            capture: [0.0; B],
            exact: [false; B],
            fix: [false; B],
            dx: [0.0; B],
            dy: [0.0; B],
            dz: [0.0; B],
            rr: [0.0; B],
            qx: [0.0; B],
            qy: [0.0; B],
            qz: [0.0; B],
            pass: [0.0; B],
            fl2: [0.0; B],
            dd: [[0.0; B]; 3],
            okf: [0.0; B],
            qf: [[0.0; B]; 3],
            f0: [[0.0; B]; 3],
            r0: [[0; B]; 3],
            acc: [0.0; B],
        }
    }

    /// Lane j's pixel value once the block is done.
    #[inline(always)]
    pub fn value(&self, p: &Plan, j: usize) -> f64 {
        p.r_e_sqr_fluence * self.isum[j] / p.steps as f64
            * self.capture[j]
            * self.polar[j]
            * self.omega[j]
    }
}

/// Where a block's current sub-pixel lies: lane j at stored fast coordinate
/// `sub·(base + j·step) + sub/2`, slow `sdet`, depth `odet` (layer `layer`).
pub(super) struct SubPixel {
    pub sub: f64,
    pub sdet: f64,
    pub odet: f64,
    pub base: i32,
    pub step: i32,
}

impl SubPixel {
    #[inline(always)]
    pub fn fdet(&self, j: usize) -> f64 {
        self.sub * ((self.base + j as i32 * self.step) as f64) + self.sub / 2.0
    }
}

/// A term's Miller indices on one lane: `h` (f64, upstream's association), `r` the nearest
/// integers (round to even), `d` = h − r in f32; `ok`: the term counts (indices in range,
/// resolution test passed).
pub(super) struct Index {
    pub h: [f64; 3],
    pub r: [f64; 3],
    pub d: [f32; 3],
    pub ok: bool,
}

/// What a block carries beside the image ([`block`]): nothing for the image ([`ImageRow`]),
/// the tangents for `tangent_row32`. Each factor's hook returns the factor's f32 value (the
/// image's, to the bit) and may keep its partials; the others see the shared lanes at fixed
/// points of the loop. Monomorphised and inlined: the image's hooks are the bare terms.
pub(super) trait RowCarry<const B: usize> {
    /// A block starts (its first `len` lanes are its pixels).
    #[inline(always)]
    fn start(&mut self, _len: usize) {}
    /// The solid angle of lane j (`terms::solid_angle`).
    fn solid_angle(&mut self, j: usize, inv_r: f32, pixel2: f32, close: f32, point: bool) -> f32;
    /// A sub-pixel's directions are in `l`; `first`: its solid angles were the pixels' ones.
    #[inline(always)]
    fn directions(&mut self, _l: &Lanes<B>, _at: &SubPixel, _first: bool, _len: usize) {}
    /// The capture fraction of lane j in layer `t` (`terms::capture_fraction`).
    fn capture(&mut self, j: usize, t: f32, mu_step: f32, rho: f32) -> f32;
    /// A layer's capture fractions are in `l` (first sub-pixel of the layer).
    #[inline(always)]
    fn captured(&mut self, _l: &Lanes<B>, _pan: &Panel, _len: usize) {}
    /// The Kahn factor of lane j for the source's polarisation frame `[i, e_in, b_in]`
    /// (`terms::polarization`); `take`: the pixel takes it (its first accepted source).
    fn polar(&mut self, j: usize, k: f32, frame: &[[f32; 3]; 3], d: [f32; 3], take: bool) -> f32;
    /// A source's q, resolution test and polarisation are in `l`; its orientations follow.
    #[inline(always)]
    fn source(&mut self, _len: usize) {}
    /// True when the carry's F_latt is the bare `terms::lattice_square` of the deltas (no
    /// partials, the [`RowCarry::lattice`] hook not called): the block then finds each
    /// orientation's indices in one loop over the lanes (f64; [`RowCarry::cell`] sees them) and
    /// their lattice factors in another (f32 only: on 128-bit vectors, wasm's simd128, it runs
    /// four lanes a vector where the one loop with f64 in it ran two).
    const BARE_LATTICE: bool = false;
    /// Lane j's indices h of the orientation ([`RowCarry::BARE_LATTICE`] only).
    #[inline(always)]
    fn cell(&mut self, _j: usize, _h: [f64; 3]) {}
    /// What [`RowCarry::cell`] does, as data for the vector loops: the lanes' cells and the
    /// table's bounds and strides (`ImageRow`'s; as f64 and as wrapping i32), or None when it
    /// does nothing.
    #[inline(always)]
    fn cell_table(&mut self) -> Option<CellTable<'_, B>> {
        None
    }
    /// F_latt of lane j's term (`terms::lattice_square`).
    fn lattice(&mut self, j: usize, fc: &FastCtx, x: &Index) -> f32;
    /// The structure factors of orientation `m`'s terms (a table): `l.acc += F²·fl2`.
    fn cells(&mut self, fc: &FastCtx, l: &mut Lanes<B>, m: &[f64; 9], len: usize);
    /// Orientation `o` (matrix `m`, rows a, b, c) is summed into `l.acc`.
    #[inline(always)]
    fn term(&mut self, _o: usize, _m: &[f64; 9], _l: &Lanes<B>, _len: usize) {}
    /// Source `si` is summed into `l.isum`.
    #[inline(always)]
    fn source_done(&mut self, _si: usize, _src: &SourceConst, _l: &Lanes<B>, _len: usize) {}
}

/// The image carries nothing but, with a structure-factor table (`LOOKUP`), each lane's cell:
/// the bare f32 terms. The cell of a term (upstream's nearest indices `ceil(h − ½)`, the range
/// test and the flat index of `terms::f_nearest`, or [`NO_CELL`] outside the table) is found
/// in the lattice hook, inside the vectorised loop over the lanes; the cells hook then only
/// reads the table (a scalar load per lane). Done per lane in the cells hook, the indices were
/// nearly half of the realistic preset's spots (`nanobragg-bench --realistic-spots`).
pub(super) struct ImageRow<const B: usize, const LOOKUP: bool> {
    cell: [u32; B],
    /// The table's bounds and strides as f64: h_min, h_max, k_min, k_max, l_min, l_max, then
    /// the strides of h and k in `data` (`HklGrid::at`).
    grid: [f64; 8],
    /// The same as i32 (the strides' u32 bits: the hybrid indices' flat index is computed in
    /// wrapping 32-bit arithmetic, exact for a cell inside a table shorter than [`NO_CELL`]).
    gridi: [i32; 8],
}

/// A carry's structure-factor cells as data ([`RowCarry::cell_table`]): the lanes' cells, the
/// table's bounds and strides as f64 and as i32 (`ImageRow`).
pub(super) type CellTable<'a, const B: usize> = (&'a mut [u32; B], &'a [f64; 8], &'a [i32; 8]);

/// The cell of indices `h` in the table `grid` (`ImageRow::grid`): upstream's nearest indices
/// `ceil(h − ½)`, the range test (on the floats: NaN is outside) and the flat index of
/// `terms::f_nearest` (exact in f64: integers far below 2^53), or [`NO_CELL`].
#[inline(always)]
fn cell_of(h: [f64; 3], grid: &[f64; 8]) -> u32 {
    let [h_lo, h_hi, k_lo, k_hi, l_lo, l_hi, sh, sk] = *grid;
    let n = h.map(|h| (h - 0.5).ceil());
    let inside = (n[0] >= h_lo)
        & (n[0] <= h_hi)
        & (n[1] >= k_lo)
        & (n[1] <= k_hi)
        & (n[2] >= l_lo)
        & (n[2] <= l_hi);
    let flat = (n[0] - h_lo) * sh + (n[1] - k_lo) * sk + (n[2] - l_lo);
    if inside {
        flat as u32
    } else {
        NO_CELL
    }
}

/// A lane's cell outside the table (F is `default_F`): no index of `data` (`block_body` takes
/// the lookup path only for tables shorter than this).
pub(super) const NO_CELL: u32 = u32::MAX;

impl<const B: usize, const LOOKUP: bool> ImageRow<B, LOOKUP> {
    #[inline(always)]
    fn new(g: &HklGrid) -> Self {
        let kd = (g.k_range() + 1) as f64;
        let ld = (g.l_range() + 1) as f64;
        ImageRow {
            cell: [NO_CELL; B],
            grid: [
                g.h_min as f64,
                g.h_max as f64,
                g.k_min as f64,
                g.k_max as f64,
                g.l_min as f64,
                g.l_max as f64,
                kd * ld,
                ld,
            ],
            gridi: [
                g.h_min,
                g.h_max,
                g.k_min,
                g.k_max,
                g.l_min,
                g.l_max,
                (kd * ld) as u32 as i32,
                ld as u32 as i32,
            ],
        }
    }
}

impl<const B: usize, const LOOKUP: bool> RowCarry<B> for ImageRow<B, LOOKUP> {
    #[inline(always)]
    fn solid_angle(&mut self, _j: usize, inv_r: f32, pixel2: f32, close: f32, point: bool) -> f32 {
        solid_angle(inv_r, pixel2, close, point)
    }
    #[inline(always)]
    fn capture(&mut self, _j: usize, t: f32, mu_step: f32, rho: f32) -> f32 {
        capture_fraction(t, mu_step, rho)
    }
    #[inline(always)]
    fn polar(&mut self, _j: usize, k: f32, f: &[[f32; 3]; 3], d: [f32; 3], _take: bool) -> f32 {
        polarization(k, f[0], d, f[1], f[2])
    }
    const BARE_LATTICE: bool = true;
    #[inline(always)]
    fn cell_table(&mut self) -> Option<CellTable<'_, B>> {
        if LOOKUP {
            Some((&mut self.cell, &self.grid, &self.gridi))
        } else {
            None
        }
    }
    #[inline(always)]
    fn cell(&mut self, j: usize, h: [f64; 3]) {
        if LOOKUP {
            // `f_nearest`'s cell: the same f64 h as the cells hook's `(m·q)`
            self.cell[j] = cell_of(h, &self.grid);
        }
    }
    #[inline(always)]
    fn lattice(&mut self, _j: usize, fc: &FastCtx, x: &Index) -> f32 {
        lattice_square(x.d[0], x.d[1], x.d[2], fc.na, fc.nb, fc.nc)
    }
    #[inline(always)]
    fn cells(&mut self, fc: &FastCtx, l: &mut Lanes<B>, m: &[f64; 9], len: usize) {
        let p = fc.plan;
        if LOOKUP {
            let data = &p.hkl.data[..];
            for j in 0..len {
                let f = data
                    .get(self.cell[j] as usize)
                    .copied()
                    .unwrap_or(p.default_f);
                // a term with a zero lattice factor is skipped (acc + 0 is acc: acc ≥ +0)
                let skip = l.fl2[j] == 0.0 && !p.water;
                let add = f * f * l.fl2[j] as f64;
                l.acc[j] += if skip { 0.0 } else { add };
            }
            return;
        }
        for j in 0..len {
            if l.fl2[j] == 0.0 && !p.water {
                continue;
            }
            let hkl = [0, 1, 2]
                .map(|a| (m[3 * a] * l.qx[j] + m[3 * a + 1] * l.qy[j]) + m[3 * a + 2] * l.qz[j]);
            let f = f_nearest(
                &p.hkl,
                p.default_f,
                (hkl[0] - 0.5).ceil(),
                (hkl[1] - 0.5).ceil(),
                (hkl[2] - 0.5).ceil(),
            );
            l.acc[j] += f * f * l.fl2[j] as f64;
        }
    }
}

/// On wasm32 with simd128: whether the image's term loops run in the hand-written simd128 lanes
/// ([`wasm_lanes`], the default) or in the portable scalar loops of the other targets, in the
/// same binary (`set_hand_lanes`: the browser's bit-for-bit guard of the hand lanes,
/// `tests/browser/lanes.test.mjs`). Read once per block.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
static HAND_LANES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Blocks of the image rendered in the hand lanes (wasm32 with simd128; `hand_lane_blocks`).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
static HAND_BLOCKS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The number of the image's blocks rendered in the hand simd128 lanes since the last call
/// (0 on other targets): a test's proof that they ran.
pub fn hand_lane_blocks() -> u32 {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return HAND_BLOCKS.swap(0, std::sync::atomic::Ordering::Relaxed);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    0
}

#[inline(always)]
fn hand_lanes() -> bool {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return HAND_LANES.load(std::sync::atomic::Ordering::Relaxed);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    false
}

/// Chooses the image's term loops for the renders that follow (see `HAND_LANES`): the hand
/// simd128 lanes (`on`) or the portable loops. Returns whether this build has hand lanes at all
/// (wasm32 with simd128); elsewhere it does nothing.
pub fn set_hand_lanes(on: bool) -> bool {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        HAND_LANES.store(on, std::sync::atomic::Ordering::Relaxed);
        true
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    {
        let _ = on;
        false
    }
}

/// The lattice factors of a block's terms from their deltas ([`RowCarry::BARE_LATTICE`]):
/// `fl2 = F_latt²·pass` where the indices are in range, else 0. On wasm32 the lanes go four to
/// a simd128 vector (`wasm_lanes`: LLVM left this loop scalar there), the same operations in
/// the same order as `terms::lattice_square`, so the same bits.
#[inline(always)]
fn lattice_lanes<const B: usize>(fc: &FastCtx, l: &mut Lanes<B>, len: usize, hand: bool) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    let j0 = if hand {
        wasm_lanes::lattice(fc, l, len)
    } else {
        0
    };
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    let j0 = {
        let _ = hand;
        0
    };
    for j in j0..len {
        let g = lattice_square(l.dd[0][j], l.dd[1][j], l.dd[2][j], fc.na, fc.nb, fc.nc);
        l.fl2[j] = if l.okf[j] != 0.0 {
            g * g * l.pass[j]
        } else {
            0.0
        };
    }
}

/// `terms::lattice_square` on four lanes at once (wasm's simd128): `terms::round_even`,
/// `terms::sinpi_poly` and `terms::grating_parts` written out with the vector operations, in
/// their order (IEEE f32 operations, no contraction: the scalar terms' bits, tested by
/// `tests/browser/lanes.test.mjs` against the portable loops of the same binary, `HAND_LANES`).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod wasm_lanes {
    use super::{hybrid_fixup, FastCtx, Lanes, HYBRID_EPS, HYBRID_HALF, NO_CELL, ROUND_MAGIC};
    use crate::terms::{EXACT_BRAGG, GRATING_SMALL, INDEX_LIMIT};
    use core::arch::wasm32::*;

    #[inline(always)]
    fn load2(a: &[f64], j: usize) -> v128 {
        let s = &a[j..j + 2];
        // SAFETY: `s` holds 2 f64, 16 bytes; v128.load takes any alignment
        unsafe { v128_load(s.as_ptr().cast()) }
    }

    #[inline(always)]
    fn load(a: &[f32], j: usize) -> v128 {
        let s = &a[j..j + 4];
        // SAFETY: `s` holds 4 f32, 16 bytes; v128.load takes any alignment
        unsafe { v128_load(s.as_ptr().cast()) }
    }

    #[inline(always)]
    fn load_i(a: &[i32], j: usize) -> v128 {
        let s = &a[j..j + 4];
        // SAFETY: `s` holds 4 i32, 16 bytes; v128.load takes any alignment
        unsafe { v128_load(s.as_ptr().cast()) }
    }

    #[inline(always)]
    fn store_u(a: &mut [u32], j: usize, v: v128) {
        let s = &mut a[j..j + 4];
        // SAFETY: as `load`
        unsafe { v128_store(s.as_mut_ptr().cast(), v) }
    }

    #[inline(always)]
    fn store(a: &mut [f32], j: usize, v: v128) {
        let s = &mut a[j..j + 4];
        // SAFETY: as `load`
        unsafe { v128_store(s.as_mut_ptr().cast(), v) }
    }

    #[inline(always)]
    fn round_even(x: v128) -> v128 {
        let m = f32x4_splat(12582912.0);
        f32x4_sub(f32x4_add(x, m), m)
    }

    #[inline(always)]
    fn sinpi_poly(r: v128) -> v128 {
        let z = f32x4_mul(r, r);
        let mut p = f32x4_sub(
            f32x4_mul(f32x4_splat(0.000_466_302_8), z),
            f32x4_splat(0.007_370_431),
        );
        p = f32x4_add(f32x4_mul(p, z), f32x4_splat(0.082_145_89));
        p = f32x4_sub(f32x4_mul(p, z), f32x4_splat(0.599_264_5));
        p = f32x4_add(f32x4_mul(p, z), f32x4_splat(2.550_164));
        p = f32x4_sub(f32x4_mul(p, z), f32x4_splat(5.167_712_7));
        p = f32x4_add(f32x4_mul(p, z), f32x4_splat(std::f32::consts::PI));
        f32x4_mul(r, p)
    }

    /// `terms::grating_parts` (numerator, denominator).
    #[inline(always)]
    fn grating_parts(d: v128, n: f32) -> (v128, v128) {
        let nv = f32x4_splat(n);
        let x = f32x4_mul(nv, d);
        let r = f32x4_sub(x, round_even(x));
        let small = f32x4_lt(f32x4_abs(x), f32x4_splat(GRATING_SMALL));
        let num = sinpi_poly(r);
        let den = sinpi_poly(d);
        (
            v128_bitselect(nv, num, small),
            v128_bitselect(f32x4_splat(1.0), den, small),
        )
    }

    /// The first loop of a term ([`super::term_index`], the exact-Bragg flags, `RowCarry::cell`
    /// of the image with a table, the deltas and range flags) on two lanes a vector, lanes
    /// `0..len` rounded down to twos; returns how many were done.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn indices<const B: usize>(
        m: &[f64; 9],
        use_axis: [bool; 3],
        l: &mut Lanes<B>,
        cell: Option<super::CellTable<'_, B>>,
        len: usize,
    ) -> usize {
        let end = len / 2 * 2;
        let magic = f64x2_splat(6755399441055744.0);
        let limit = f64x2_splat(INDEX_LIMIT);
        let exact = f64x2_splat(EXACT_BRAGG);
        let zero = f64x2_splat(0.0);
        let half = f64x2_splat(0.5);
        let mut cell = cell;
        for j in (0..end).step_by(2) {
            let q = [load2(&l.qx, j), load2(&l.qy, j), load2(&l.qz, j)];
            let mut ok = u64x2_splat(u64::MAX);
            let mut ex = u64x2_splat(0);
            let mut h = [zero; 3];
            for a in 0..3 {
                h[a] = f64x2_add(
                    f64x2_add(
                        f64x2_mul(f64x2_splat(m[3 * a]), q[0]),
                        f64x2_mul(f64x2_splat(m[3 * a + 1]), q[1]),
                    ),
                    f64x2_mul(f64x2_splat(m[3 * a + 2]), q[2]),
                );
                let r = f64x2_sub(f64x2_add(h[a], magic), magic);
                let delta = f64x2_sub(h[a], r);
                ok = v128_and(ok, f64x2_lt(f64x2_abs(h[a]), limit));
                if use_axis[a] {
                    let e = v128_and(f64x2_lt(f64x2_abs(delta), exact), f64x2_ne(r, zero));
                    ex = v128_or(ex, e);
                }
                let d = f32x4_demote_f64x2_zero(delta);
                l.dd[a][j] = f32x4_extract_lane::<0>(d);
                l.dd[a][j + 1] = f32x4_extract_lane::<1>(d);
            }
            if let Some((cell, g, _)) = cell.as_mut() {
                let [h_lo, h_hi, k_lo, k_hi, l_lo, l_hi, sh, sk] = **g;
                let n = h.map(|h| f64x2_ceil(f64x2_sub(h, half)));
                let within = |n: v128, lo: f64, hi: f64| {
                    v128_and(f64x2_ge(n, f64x2_splat(lo)), f64x2_le(n, f64x2_splat(hi)))
                };
                let inside = v128_and(
                    v128_and(within(n[0], h_lo, h_hi), within(n[1], k_lo, k_hi)),
                    within(n[2], l_lo, l_hi),
                );
                let flat = f64x2_add(
                    f64x2_add(
                        f64x2_mul(f64x2_sub(n[0], f64x2_splat(h_lo)), f64x2_splat(sh)),
                        f64x2_mul(f64x2_sub(n[1], f64x2_splat(k_lo)), f64x2_splat(sk)),
                    ),
                    f64x2_sub(n[2], f64x2_splat(l_lo)),
                );
                let c = u32x4_trunc_sat_f64x2_zero(flat);
                let inside = i32x4_shuffle::<0, 2, 0, 2>(inside, inside);
                let c = v128_bitselect(c, u32x4_splat(NO_CELL), inside);
                cell[j] = u32x4_extract_lane::<0>(c);
                cell[j + 1] = u32x4_extract_lane::<1>(c);
            }
            for (k, (okk, exk)) in [
                (u64x2_extract_lane::<0>(ok), u64x2_extract_lane::<0>(ex)),
                (u64x2_extract_lane::<1>(ok), u64x2_extract_lane::<1>(ex)),
            ]
            .into_iter()
            .enumerate()
            {
                let (ok, ex) = (okk != 0, exk != 0);
                let counts = ok & (l.pass[j + k] != 0.0);
                l.exact[j + k] |= ex & counts;
                l.okf[j + k] = if ok { 1.0 } else { 0.0 };
            }
        }
        end
    }

    /// One orientation's terms by the hybrid indices ([`super::hybrid_lane`], then
    /// [`super::hybrid_fixup`] on the lanes it flags) on four lanes a vector, lanes `0..len`
    /// rounded down to fours; returns how many were done. The same f32 and i32 operations in the
    /// same order as the portable lane: the same bits.
    #[inline(always)]
    pub(super) fn hybrid<const B: usize>(
        m: &[f64; 9],
        dm: &[f32; 9],
        use_axis: [bool; 3],
        l: &mut Lanes<B>,
        cell: Option<super::CellTable<'_, B>>,
        len: usize,
    ) -> usize {
        let end = len / 4 * 4;
        let dmv = dm.map(|v| f32x4_splat(v));
        let eps = f32x4_splat(HYBRID_EPS);
        let far = f32x4_splat(HYBRID_HALF);
        let magic = f32x4_splat(ROUND_MAGIC);
        let magic_bits = i32x4_splat(ROUND_MAGIC.to_bits() as i32);
        let mut cell = cell;
        for j in (0..end).step_by(4) {
            let q = [load(&l.qf[0], j), load(&l.qf[1], j), load(&l.qf[2], j)];
            let mut fix = i32x4_splat(0);
            let mut n = [i32x4_splat(0); 3];
            for a in 0..3 {
                let delta = f32x4_add(
                    f32x4_add(f32x4_mul(dmv[3 * a], q[0]), f32x4_mul(dmv[3 * a + 1], q[1])),
                    f32x4_mul(dmv[3 * a + 2], q[2]),
                );
                let x = f32x4_add(load(&l.f0[a], j), delta);
                let t = f32x4_add(x, magic);
                let r = f32x4_sub(t, magic);
                let d = f32x4_sub(x, r);
                store(&mut l.dd[a], j, d);
                let ad = f32x4_abs(d);
                fix = v128_or(fix, v128_or(f32x4_lt(ad, eps), f32x4_gt(ad, far)));
                let nearest = i32x4_sub(t, magic_bits);
                n[a] = i32x4_add(load_i(&l.r0[a], j), nearest);
            }
            if let Some((cell, _, gi)) = cell.as_mut() {
                let [h_lo, h_hi, k_lo, k_hi, l_lo, l_hi, sh, sk] = **gi;
                let within = |n: v128, lo: i32, hi: i32| {
                    v128_and(i32x4_ge(n, i32x4_splat(lo)), i32x4_le(n, i32x4_splat(hi)))
                };
                let inside = v128_and(
                    v128_and(within(n[0], h_lo, h_hi), within(n[1], k_lo, k_hi)),
                    within(n[2], l_lo, l_hi),
                );
                let flat = i32x4_add(
                    i32x4_add(
                        i32x4_mul(i32x4_sub(n[0], i32x4_splat(h_lo)), i32x4_splat(sh)),
                        i32x4_mul(i32x4_sub(n[1], i32x4_splat(k_lo)), i32x4_splat(sk)),
                    ),
                    i32x4_sub(n[2], i32x4_splat(l_lo)),
                );
                store_u(
                    &mut cell[..],
                    j,
                    v128_bitselect(flat, u32x4_splat(NO_CELL), inside),
                );
            }
            let bits = i32x4_bitmask(fix);
            if bits != 0 {
                for k in 0..4 {
                    if bits & (1 << k) != 0 {
                        let c = cell.as_mut().map(|(c, g, _)| (&mut **c, &**g));
                        hybrid_fixup(m, use_axis, l, c, j + k);
                    }
                }
            }
        }
        end
    }

    /// Lanes `0..len` rounded down to fours; returns how many were done.
    #[inline(always)]
    pub(super) fn lattice<const B: usize>(fc: &FastCtx, l: &mut Lanes<B>, len: usize) -> usize {
        let one = f32x4_splat(1.0);
        let zero = f32x4_splat(0.0);
        let n = [fc.na, fc.nb, fc.nc];
        let end = len / 4 * 4;
        for j in (0..end).step_by(4) {
            let mut num = one;
            let mut den = one;
            for a in 0..3 {
                // an axis with N ≤ 1 contributes 1 (`lattice_square`), the products left to right
                let (p, q) = grating_parts(load(&l.dd[a], j), n[a]);
                let (p, q) = if n[a] > 1.0 { (p, q) } else { (one, one) };
                num = if a == 0 { p } else { f32x4_mul(num, p) };
                den = if a == 0 { q } else { f32x4_mul(den, q) };
            }
            let g = f32x4_div(num, den);
            let fl2 = f32x4_mul(f32x4_mul(g, g), load(&l.pass, j));
            let ok = f32x4_ne(load(&l.okf, j), zero);
            store(&mut l.fl2, j, v128_bitselect(fl2, zero, ok));
        }
        end
    }
}

/// The bound on |Δ| = |(M_o − M₀)·q| (every orientation o, axis and pixel of the render) under
/// which a render takes the hybrid indices ([`HybridIndices`]).
pub const HYBRID_MAX_DELTA: f64 = 1.0;

/// A hybrid lane whose f32 δ lies within this of an integer or of a half-integer is decided in
/// f64 ([`hybrid_fixup`]). The f32 δ = f₀ + Δ differs from the f64 kernel's h − r₀ by at most
/// 5.01·u·|Δ|max (Δ's products and sums, M_o − M₀ and q rounded to f32) + u/2 (f₀) + 1.5·u
/// (the sum, |δ| ≤ 1.5), u = 2⁻²⁴: ≤ 7.01·u ≈ 4.2e-7 with |Δ| ≤ [`HYBRID_MAX_DELTA`], plus the
/// f64 rounding of h (below 1e-9 for |h₀| < `HYBRID_MAX_INDEX`): more than twice that, and far
/// above `terms::EXACT_BRAGG`, so a lane not flagged is on the same side of every half-integer
/// as the f64 h (same nearest integer, same cell) and not under the exact-Bragg rule.
pub const HYBRID_EPS: f32 = 1e-6;

/// |δ| above which a hybrid lane is within [`HYBRID_EPS`] of a half-integer.
const HYBRID_HALF: f32 = 0.5 - HYBRID_EPS;

/// `terms::round_even`'s bias, 1.5·2^23: for |x| < 2^22 the sum x + bias is an integer whose
/// bits, less the bias's, are that integer.
const ROUND_MAGIC: f32 = 12582912.0;

/// The limit on |h₀| of a (block, source) on the hybrid indices (else that source's terms take
/// the f64 indices): the indices stay far inside `terms::INDEX_LIMIT` (so in range, as
/// `index_ok` says), their nearest integers in i32, the f64 rounding of h small.
const HYBRID_MAX_INDEX: f64 = 1048576.0;

/// The row kernel's hybrid Miller indices (MODEL §9.1, ARCHITECTURE "Precision"): when a
/// render's orientations are close (mosaic domains about one orientation), each pixel's indices
/// are h₀ = M₀·q in f64 once per source (M₀ the mean of the orientation matrices, rows a, b, c),
/// r₀ its nearest integers and f₀ = h₀ − r₀; each orientation adds Δ = (M_o − M₀)·q in f32
/// lanes (four a simd128 vector where the f64 indices ran two): δ = f₀ + Δ, its nearest integer
/// and f32 delta, the cell r₀ + nearest. |Δ| ≤ [`HYBRID_MAX_DELTA`] keeps δ's error below
/// 4.2e-7 (plain f32 indices: 1e-5 on the page's realistic preset); lanes near the exact-Bragg
/// rule or a cell boundary are decided in f64 ([`HYBRID_EPS`]), so the exact-Bragg flags, the
/// range test and the structure-factor cells are the f64 indices' own.
pub struct HybridIndices {
    /// M₀: the mean of the orientation matrices (rows a, b, c).
    pub m0: [f64; 9],
    /// M_o − M₀ (f64) rounded to f32 once: component k of orientation o at `dm[k][o]`.
    pub dm: [Vec<f32>; 9],
    /// The bound on |Δ| that admitted the render: max over orientations and axes of
    /// ‖(M_o − M₀) row‖ times the largest |q| the render's pixels and sources reach.
    pub bound: f64,
}

impl HybridIndices {
    /// The per-render decision: Some when the plan has two orientations or more and the
    /// bound on |Δ| ([`HybridIndices::delta_bound`]) is at most [`HYBRID_MAX_DELTA`] (mosaic
    /// domains, a narrow phi range); None keeps the f64 indices (one orientation: nothing to
    /// gain; phi steps over a wide oscillation, scattered orientations: |Δ| reaches |h|).
    pub fn new(p: &Plan) -> Option<Self> {
        if p.orientations.len() < 2 || !hybrid_allowed() {
            return None;
        }
        let (m0, bound) = Self::delta_bound(p);
        if bound.is_nan() || bound > HYBRID_MAX_DELTA {
            return None;
        }
        let mut dm: [Vec<f32>; 9] = Default::default();
        for o in &p.orientations {
            let m = matrix(o);
            for ((d, v), v0) in dm.iter_mut().zip(m).zip(m0) {
                d.push((v - v0) as f32);
            }
        }
        Some(HybridIndices { m0, dm, bound })
    }

    /// M₀ and the bound on |Δ|: max over orientations o and axes a of ‖M_o,a − M₀,a‖ times
    /// [`q_max`] (with a relative margin for the f64 rounding of both).
    pub fn delta_bound(p: &Plan) -> ([f64; 9], f64) {
        let n = p.orientations.len().max(1) as f64;
        let mut m0 = [0f64; 9];
        for o in &p.orientations {
            for (s, v) in m0.iter_mut().zip(matrix(o)) {
                *s += v;
            }
        }
        let m0 = m0.map(|v| v / n);
        let mut spread = 0f64;
        for o in &p.orientations {
            let m = matrix(o);
            for a in 0..3 {
                let d = [0, 1, 2].map(|k| m[3 * a + k] - m0[3 * a + k]);
                spread = spread.max((d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt());
            }
        }
        (m0, spread * q_max(p) * (1.0 + 1e-9))
    }
}

/// An orientation as a matrix, rows a, b, c (`OrientationsSoa`'s components).
fn matrix(o: &crate::plan::Orientation) -> [f64; 9] {
    [
        o.a[0], o.a[1], o.a[2], o.b[0], o.b[1], o.b[2], o.c[0], o.c[1], o.c[2],
    ]
}

/// An upper bound on |q| = |d − i|/λ over the render's pixels (every panel, sub-pixel and sensor
/// layer) and sources. Per source: where the angle between i and every corner of every panel's
/// box (its pixels' extent, from the front face to the sensor depth) is at most 90°, the largest
/// angle over the corners bounds that over the box (the directions within an angle α ≤ 90° of
/// i form a convex cone, which holds the box when it holds its corners), so |d − i| is at most
/// the corners' largest; else, or when |i| is not 1, |d − i| ≤ 1 + |i|.
pub fn q_max(p: &Plan) -> f64 {
    let mut q = 0f64;
    for s in &p.sources {
        let i = s.incident;
        let ni = (i[0] * i[0] + i[1] * i[1] + i[2] * i[2]).sqrt();
        let mut most = 0f64;
        let mut cone = (ni - 1.0).abs() < 1e-9;
        for pan in &p.panels {
            for fe in [pan.data_origin[0], pan.data_origin[0] + pan.size[0]] {
                for se in [pan.data_origin[1], pan.data_origin[1] + pan.size[1]] {
                    for o in [0.0, p.thick.max(0.0)] {
                        let (f, sd) = (fe as f64 * p.pixel, se as f64 * p.pixel);
                        let x = [0, 1, 2].map(|k| {
                            f * pan.fdet[k] + sd * pan.sdet[k] + o * pan.odet[k] + pan.pix0[k]
                        });
                        let r = (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]).sqrt();
                        let d = x.map(|v| v / r);
                        cone &= d[0] * i[0] + d[1] * i[1] + d[2] * i[2] >= 0.0;
                        let v = [0, 1, 2].map(|k| d[k] - i[k]);
                        most = most.max((v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt());
                    }
                }
            }
        }
        let bound = if cone { most } else { 1.0 + ni };
        q = q.max(bound / s.lambda);
    }
    if q.is_nan() {
        f64::INFINITY
    } else {
        q
    }
}

/// On wasm32: whether renders may take the hybrid indices (`set_hybrid_indices`; the default
/// yes): the page's benchmark of the f64 indices against the hybrid in one binary.
#[cfg(target_arch = "wasm32")]
static HYBRID_ON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

#[inline(always)]
fn hybrid_allowed() -> bool {
    #[cfg(target_arch = "wasm32")]
    return HYBRID_ON.load(std::sync::atomic::Ordering::Relaxed);
    #[cfg(not(target_arch = "wasm32"))]
    true
}

/// On wasm32: allows (`on`, the default) or forbids the hybrid indices for the renders that
/// follow (their contexts are made per render). Returns whether this build has the switch
/// (wasm32); elsewhere it does nothing (`cpu::render_paths` chooses per render).
pub fn set_hybrid_indices(on: bool) -> bool {
    #[cfg(target_arch = "wasm32")]
    {
        HYBRID_ON.store(on, std::sync::atomic::Ordering::Relaxed);
        true
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = on;
        false
    }
}

/// A source's lanes for the hybrid indices: h₀ = M₀·q (f64, upstream's association), r₀ its
/// nearest integers (i32), f₀ = h₀ − r₀ and q in f32; every lane's indices in range (`okf`, as
/// `index_ok` says of h: |h| ≤ |h₀| + |Δ| < 2^31). False when a lane's |h₀| is not below
/// `HYBRID_MAX_INDEX` (or is NaN): then the source's terms take the f64 indices.
#[inline(always)]
fn hybrid_source<const B: usize>(hy: &HybridIndices, l: &mut Lanes<B>, len: usize) -> bool {
    let m = &hy.m0;
    let mut ok = true;
    for j in 0..len {
        let q = [l.qx[j], l.qy[j], l.qz[j]];
        for a in 0..3 {
            let h = (m[3 * a] * q[0] + m[3 * a + 1] * q[1]) + m[3 * a + 2] * q[2];
            ok &= h.abs() < HYBRID_MAX_INDEX;
            let r = round_even_f64(h);
            l.f0[a][j] = (h - r) as f32;
            l.r0[a][j] = r as i32;
            l.qf[a][j] = q[a] as f32;
        }
        l.okf[j] = 1.0;
    }
    ok
}

/// Lane j's term of an orientation by the hybrid indices (`dm` = M_o − M₀ in f32): per axis
/// Δ = dm·q (f32, upstream's association), δ = f₀ + Δ, its nearest integer and f32 delta into
/// `l.dd`; returns the cell (r₀ + nearest, in the i32 table `gi`: `ImageRow::gridi`) and whether
/// the lane is to be decided in f64 ([`HYBRID_EPS`]). `wasm_lanes::hybrid` is its four-lane twin.
#[inline(always)]
fn hybrid_lane<const B: usize>(
    dm: &[f32; 9],
    l: &mut Lanes<B>,
    j: usize,
    gi: &[i32; 8],
) -> (u32, bool) {
    let q = [l.qf[0][j], l.qf[1][j], l.qf[2][j]];
    let mut fix = false;
    let mut n = [0i32; 3];
    for a in 0..3 {
        let delta = (dm[3 * a] * q[0] + dm[3 * a + 1] * q[1]) + dm[3 * a + 2] * q[2];
        let x = l.f0[a][j] + delta;
        // `terms::round_even`, the integer read from the bits of the biased sum (|x| < 2^22):
        // no float-to-int conversion, which the other targets' vector loops lack
        let t = x + ROUND_MAGIC;
        let r = t - ROUND_MAGIC;
        let d = x - r;
        l.dd[a][j] = d;
        fix |= (d.abs() < HYBRID_EPS) | (d.abs() > HYBRID_HALF);
        let nearest = (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32);
        n[a] = l.r0[a][j].wrapping_add(nearest);
    }
    let [h_lo, h_hi, k_lo, k_hi, l_lo, l_hi, sh, sk] = *gi;
    let inside = (n[0] >= h_lo)
        & (n[0] <= h_hi)
        & (n[1] >= k_lo)
        & (n[1] <= k_hi)
        & (n[2] >= l_lo)
        & (n[2] <= l_hi);
    let flat = (n[0].wrapping_sub(h_lo).wrapping_mul(sh))
        .wrapping_add(n[1].wrapping_sub(k_lo).wrapping_mul(sk))
        .wrapping_add(n[2].wrapping_sub(l_lo));
    (if inside { flat as u32 } else { NO_CELL }, fix)
}

/// A hybrid lane flagged by [`hybrid_lane`] decided in f64: the term as the f64 indices give it
/// (delta, range, exact-Bragg flag, cell), so the lane is today's to the bit. Rare (a few lanes
/// in a million).
#[cold]
#[inline(never)]
fn hybrid_fixup<const B: usize>(
    m: &[f64; 9],
    use_axis: [bool; 3],
    l: &mut Lanes<B>,
    cell: Option<(&mut [u32; B], &[f64; 8])>,
    j: usize,
) {
    let q = [l.qx[j], l.qy[j], l.qz[j]];
    let (x, ex) = term_index(m, q, use_axis);
    l.exact[j] |= ex & x.ok & (l.pass[j] != 0.0);
    for a in 0..3 {
        l.dd[a][j] = x.d[a];
    }
    l.okf[j] = if x.ok { 1.0 } else { 0.0 };
    if let Some((cell, g)) = cell {
        cell[j] = cell_of(x.h, g);
    }
}

/// Orientation `m`'s term on one lane of scattering vector `q`: its indices (`ok`: in range;
/// the resolution test is the caller's) and whether it falls under the exact-Bragg rule on an
/// axis of `use_axis`.
#[inline(always)]
fn term_index(m: &[f64; 9], q: [f64; 3], use_axis: [bool; 3]) -> (Index, bool) {
    let mut d = [0f32; 3];
    let mut h = [0f64; 3];
    let mut r = [0f64; 3];
    let mut ok = true;
    let mut ex = false;
    for a in 0..3 {
        h[a] = (m[3 * a] * q[0] + m[3 * a + 1] * q[1]) + m[3 * a + 2] * q[2];
        r[a] = round_even_f64(h[a]);
        let delta = h[a] - r[a];
        ok &= index_ok(h[a]);
        ex |= use_axis[a] & is_exact_bragg(delta, r[a]);
        d[a] = delta as f32;
    }
    (Index { h, r, d, ok }, ex)
}

/// The one row block: pixels `f0..f0+len` (`len` ≤ B) of row `s`, all on panel `pan`, summed
/// into `l` (each lane's value then [`Lanes::value`], its exact-Bragg flag `l.exact`) with what
/// the carry `c` carries. Returns false when the render was cancelled (the cancel flag is read
/// every `POLL_TERMS` orientations' worth of terms).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn block<C: RowCarry<B>, const B: usize>(
    fc: &FastCtx,
    pan: &Panel,
    s: usize,
    f0: usize,
    len: usize,
    l: &mut Lanes<B>,
    c: &mut C,
    poll: &Poll,
) -> bool {
    let p = fc.plan;
    let n = p.oversample as usize;
    let sub = p.pixel / n as f64;
    let len = len.min(B);
    l.isum.fill(p.i_bg);
    l.polar.fill(if p.nopolar { 1.0 } else { 0.0 });
    l.omega.fill(0.0);
    l.exact.fill(false);
    c.start(len);
    let constant_f = p.hkl.hkls == 0;
    let f2_const = p.default_f * p.default_f;
    let use_axis = fc.use_axis();
    let soa = &fc.soa;
    // orientations per look at the cancel flag (at least one)
    let per_poll = (POLL_TERMS / len.max(1)).max(1);
    let close = pan.close_distance as f32;
    // the hand-written simd128 lanes of the image's terms, or the portable loops (wasm32's
    // switch, `hand_lanes`; elsewhere the portable loops, which LLVM vectorises)
    let hand = hand_lanes();
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    if hand && C::BARE_LATTICE {
        HAND_BLOCKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    for t in 0..p.thicksteps as usize {
        let odet = t as f64 * p.thickstep;
        l.capture[..len].fill(if p.thick == 0.0 { 1.0 } else { 0.0 });
        for subs in 0..n {
            let sdet = sub * ((s * n + subs) as f64) + sub / 2.0;
            for subf in 0..n {
                // diffracted directions, solid angle
                let at = SubPixel {
                    sub,
                    sdet,
                    odet,
                    base: (f0 * n + subf) as i32,
                    step: n as i32,
                };
                let d = [&mut l.dx, &mut l.dy, &mut l.dz, &mut l.rr];
                directions(pan, sub, sdet, odet, at.base, at.step, len, d);
                let first = l.omega[0] == 0.0;
                for j in 0..len {
                    let om = c.solid_angle(j, l.rr[j] as f32, fc.pixel2, close, p.point_pixel);
                    l.omega[j] = if l.omega[j] == 0.0 {
                        om as f64
                    } else {
                        l.omega[j]
                    };
                }
                c.directions(l, &at, first, len);
                if l.capture[0] == 0.0 {
                    // first sub-pixel of a layer: absorption in this layer (scalar: exp)
                    for j in 0..len {
                        let rho =
                            l.dx[j] * pan.odet[0] + l.dy[j] * pan.odet[1] + l.dz[j] * pan.odet[2];
                        l.capture[j] = c.capture(j, t as f32, fc.mu_step, rho as f32) as f64;
                    }
                    c.captured(l, pan, len);
                }
                for (si, src) in fc.sources.iter().enumerate() {
                    let i = src.incident;
                    let il = src.inv_lambda;
                    // the frame as a local: read behind `src` in the hook, LLVM gathered it
                    // lane by lane under the `take` mask (the image at half speed, AVX-512)
                    let frame = [src.i, src.e_in, src.b_in];
                    for j in 0..len {
                        l.qx[j] = (l.dx[j] - i[0]) * il;
                        l.qy[j] = (l.dy[j] - i[1]) * il;
                        l.qz[j] = (l.dz[j] - i[2]) * il;
                        let q2 = l.qx[j] * l.qx[j] + l.qy[j] * l.qy[j] + l.qz[j] * l.qz[j];
                        let ok = !(fc.inv_dmin2 > 0.0 && q2 > fc.inv_dmin2);
                        l.pass[j] = if ok { 1.0 } else { 0.0 };
                        // Kahn factor, first accepted source of the pixel
                        let d = [l.dx[j] as f32, l.dy[j] as f32, l.dz[j] as f32];
                        let take = l.polar[j] == 0.0 && ok;
                        let pol = c.polar(j, fc.polar_k, &frame, d, take) as f64;
                        l.polar[j] = if take { pol } else { l.polar[j] };
                    }
                    c.source(len);
                    // the hybrid indices for this source's terms (the render's decision, then
                    // the lanes' |h₀|)
                    let hybrid = match &fc.hybrid {
                        Some(hy) if C::BARE_LATTICE => hybrid_source(hy, l, len).then_some(hy),
                        _ => None,
                    };
                    l.acc[..len].fill(0.0);
                    let mut o0 = 0;
                    while o0 < soa.len {
                        let o1 = (o0 + per_poll).min(soa.len);
                        for o in o0..o1 {
                            let cm = &soa.comp;
                            let m = [
                                cm[0][o], cm[1][o], cm[2][o], cm[3][o], cm[4][o], cm[5][o],
                                cm[6][o], cm[7][o], cm[8][o],
                            ];
                            if let Some(hy) = hybrid {
                                // the hybrid indices (f32 lanes, the flagged ones in f64), then
                                // the lattice factors
                                let dm = [0, 1, 2, 3, 4, 5, 6, 7, 8].map(|k| hy.dm[k][o]);
                                #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
                                let j0 = if hand {
                                    wasm_lanes::hybrid(&m, &dm, use_axis, l, c.cell_table(), len)
                                } else {
                                    0
                                };
                                #[cfg(not(all(
                                    target_arch = "wasm32",
                                    target_feature = "simd128"
                                )))]
                                let j0 = 0;
                                // the lanes, then (rare) the flagged ones in f64: the first
                                // loop branch-free (vectorised on the other targets)
                                let mut table = c.cell_table();
                                let mut fixes = 0u32;
                                if let Some((cell, _, gi)) = table.as_mut() {
                                    for j in j0..len {
                                        let (c, fix) = hybrid_lane(&dm, l, j, gi);
                                        cell[j] = c;
                                        l.fix[j] = fix;
                                        fixes += fix as u32;
                                    }
                                } else {
                                    for j in j0..len {
                                        let (_, fix) = hybrid_lane(&dm, l, j, &[0; 8]);
                                        l.fix[j] = fix;
                                        fixes += fix as u32;
                                    }
                                }
                                if fixes != 0 {
                                    for j in j0..len {
                                        if l.fix[j] {
                                            let t =
                                                table.as_mut().map(|(c, g, _)| (&mut **c, &**g));
                                            hybrid_fixup(&m, use_axis, l, t, j);
                                        }
                                    }
                                }
                                lattice_lanes(fc, l, len, hand);
                            } else if C::BARE_LATTICE {
                                // the indices (f64), then the lattice factors (f32 only)
                                #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
                                let j0 = if hand {
                                    wasm_lanes::indices(&m, use_axis, l, c.cell_table(), len)
                                } else {
                                    0
                                };
                                #[cfg(not(all(
                                    target_arch = "wasm32",
                                    target_feature = "simd128"
                                )))]
                                let j0 = 0;
                                for j in j0..len {
                                    let q = [l.qx[j], l.qy[j], l.qz[j]];
                                    let (x, ex) = term_index(&m, q, use_axis);
                                    let counts = x.ok & (l.pass[j] != 0.0);
                                    l.exact[j] |= ex & counts;
                                    c.cell(j, x.h);
                                    for a in 0..3 {
                                        l.dd[a][j] = x.d[a];
                                    }
                                    l.okf[j] = if x.ok { 1.0 } else { 0.0 };
                                }
                                lattice_lanes(fc, l, len, hand);
                            } else {
                                for j in 0..len {
                                    let q = [l.qx[j], l.qy[j], l.qz[j]];
                                    let (mut x, ex) = term_index(&m, q, use_axis);
                                    let ok = x.ok;
                                    let counts = ok & (l.pass[j] != 0.0);
                                    l.exact[j] |= ex & counts;
                                    x.ok = counts;
                                    let g = c.lattice(j, fc, &x);
                                    l.fl2[j] = if ok { g * g * l.pass[j] } else { 0.0 };
                                }
                            }
                            if constant_f {
                                for j in 0..len {
                                    l.acc[j] += l.fl2[j] as f64;
                                }
                            } else {
                                c.cells(fc, l, &m, len);
                            }
                            c.term(o, &m, l, len);
                        }
                        if poll.tick(((o1 - o0) * len) as u64) {
                            return false;
                        }
                        o0 = o1;
                    }
                    let scale_f = if constant_f { f2_const } else { 1.0 };
                    for j in 0..len {
                        l.isum[j] += l.acc[j] * scale_f;
                    }
                    c.source_done(si, src, l, len);
                }
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `hybrid_lane` against the f64 indices (`term_index`, `cell_of`) on a million random
    /// terms of mosaic-like orientations (a 40 × 40 × 80 Å cell, rotations up to 0.5°, |q| up
    /// to 0.8 Å⁻¹: indices up to 64, |Δ| up to 0.56): every lane it does not flag has the f64
    /// indices' cell and a delta within half of `HYBRID_EPS`; the lanes it flags are within
    /// `HYBRID_EPS` of an integer or a half-integer; and some lanes are flagged both ways
    /// (the terms are drawn close to integers and half-integers too).
    #[test]
    fn hybrid_lane_matches_the_f64_indices() {
        let mut seed = 0x9e3779b97f4a7c15u64;
        let mut uniform = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        // M₀: a cell of 40, 40, 80 Å (m) turned about (1, 2, 3); the orientations: M₀ turned by
        // up to 0.5° about random axes
        let rot = |axis: [f64; 3], t: f64| {
            let n = (axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]).sqrt();
            let [x, y, z] = axis.map(|v| v / n);
            let (s, c) = t.sin_cos();
            let k = 1.0 - c;
            [
                c + x * x * k,
                x * y * k - z * s,
                x * z * k + y * s,
                y * x * k + z * s,
                c + y * y * k,
                y * z * k - x * s,
                z * x * k - y * s,
                z * y * k + x * s,
                c + z * z * k,
            ]
        };
        let mul = |m: &[f64; 9], r: &[f64; 9]| {
            let mut o = [0f64; 9];
            for a in 0..3 {
                for b in 0..3 {
                    o[3 * a + b] = (0..3).map(|k| m[3 * a + k] * r[3 * k + b]).sum();
                }
            }
            o
        };
        let cell = [40e-10, 0.0, 0.0, 0.0, 40e-10, 0.0, 0.0, 0.0, 80e-10];
        let m0 = mul(&cell, &rot([1.0, 2.0, 3.0], 0.7));
        let grid = [-30.0, 30.0, -30.0, 30.0, -60.0, 60.0, 61.0 * 121.0, 121.0];
        let gi = [-30, 30, -30, 30, -60, 60, 61 * 121, 121];
        let hy = HybridIndices {
            m0,
            dm: Default::default(),
            bound: 0.0,
        };
        let mut l = Box::new(Lanes::<BLOCK>::new());
        let (mut flagged_int, mut flagged_half, mut worst) = (0, 0, 0f64);
        for _ in 0..1_000_000 / BLOCK {
            let axis = [uniform() - 0.5, uniform() - 0.5, uniform() - 0.5];
            let m = mul(&m0, &rot(axis, 0.5f64.to_radians() * uniform()));
            let dm: [f32; 9] = std::array::from_fn(|k| (m[k] - m0[k]) as f32);
            for j in 0..BLOCK {
                let dir = [uniform() - 0.5, uniform() - 0.5, uniform() - 0.5];
                let n = (dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]).sqrt();
                let mut q = dir.map(|v| v / n * 0.8e10 * uniform());
                if j % 4 != 0 {
                    // three lanes in four: q put within 1e-6 of an integer or a half-integer
                    // of h under m (h's first axis along its row of m)
                    let row = [m[0], m[1], m[2]];
                    let rr = row[0] * row[0] + row[1] * row[1] + row[2] * row[2];
                    let h = row[0] * q[0] + row[1] * q[1] + row[2] * q[2];
                    let snap = if j % 4 == 1 { 0.0 } else { 0.5 };
                    let target = (h - snap).round() + snap + (uniform() - 0.5) * 2e-6;
                    q = [0, 1, 2].map(|k| q[k] + (target - h) * row[k] / rr);
                }
                l.qx[j] = q[0];
                l.qy[j] = q[1];
                l.qz[j] = q[2];
            }
            assert!(hybrid_source(&hy, &mut l, BLOCK));
            for j in 0..BLOCK {
                let (c, fix) = hybrid_lane(&dm, &mut l, j, &gi);
                let q = [l.qx[j], l.qy[j], l.qz[j]];
                let (x, _) = term_index(&m, q, [true; 3]);
                let d64 = [0, 1, 2].map(|a| x.h[a] - x.r[a]);
                if fix {
                    let near = d64
                        .iter()
                        .any(|d| d.abs() < 1.5e-6 || d.abs() > 0.5 - 1.5e-6);
                    assert!(near, "flagged far from a boundary: {d64:?}");
                    if d64.iter().any(|d| d.abs() < 1.5e-6) {
                        flagged_int += 1;
                    } else {
                        flagged_half += 1;
                    }
                    continue;
                }
                assert_eq!(c, cell_of(x.h, &grid), "h {:?}", x.h);
                for a in 0..3 {
                    worst = worst.max((l.dd[a][j] as f64 - d64[a]).abs());
                }
            }
        }
        assert!(worst <= HYBRID_EPS as f64 / 2.0, "{worst:e}");
        assert!(
            flagged_int > 1000 && flagged_half > 1000,
            "{flagged_int} {flagged_half}"
        );
        eprintln!("worst |Δδ| {worst:.2e}; flagged {flagged_int} near integers, {flagged_half} near halves");
    }
}
