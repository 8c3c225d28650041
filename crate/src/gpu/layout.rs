//! Host-side packing of a [`Plan`] into the WGSL-friendly records read by
//! `shaders/nanobragg.wgsl`: `#[repr(C)]` `Pod` structs of f32/u32/i32 and `[f32; 4]` (never a
//! vec3), with explicit padding. Values that need more than f32 precision are split into
//! double-float pairs (`hi`, `lo`) here, in f64.
//!
//! Every struct must be kept in sync with its WGSL twin; `crate/tests/gpu_layout.rs` reflects the
//! shader with naga and compares each member's name, offset and size with [`GpuStruct::FIELDS`].

use crate::plan::{Interpolation, Plan, Shape};
use crate::terms::PolarFrame;
use crate::vec3::{dot, V3};

/// A host struct mirrored in WGSL: its member table for the layout test.
pub trait GpuStruct: bytemuck::Pod {
    /// WGSL struct name.
    const WGSL_NAME: &'static str;
    /// (member name, byte offset, byte size) in declaration order.
    const FIELDS: &'static [(&'static str, usize, usize)];
}

macro_rules! gpu_struct {
    ($(#[$m:meta])* $name:ident as $wgsl:literal { $( $(#[$fm:meta])* $f:ident : $t:ty, )* }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
        pub struct $name { $( $(#[$fm])* pub $f: $t, )* }
        impl GpuStruct for $name {
            const WGSL_NAME: &'static str = $wgsl;
            const FIELDS: &'static [(&'static str, usize, usize)] = &[
                $( (stringify!($f), core::mem::offset_of!($name, $f), core::mem::size_of::<$t>()) ),*
            ];
        }
    };
}

gpu_struct! {
    /// Per-render scalars (WGSL `Params`, uniform). df64 vectors are `(x, y, z, 0)` hi/lo pairs.
    Params as "Params" {
        pix0_hi: [f32; 4],
        pix0_lo: [f32; 4],
        fdet_hi: [f32; 4],
        fdet_lo: [f32; 4],
        sdet_hi: [f32; 4],
        sdet_lo: [f32; 4],
        odet_hi: [f32; 4],
        odet_lo: [f32; 4],
        beam_hi: [f32; 4],
        beam_lo: [f32; 4],
        a_star: [f32; 4],
        b_star: [f32; 4],
        c_star: [f32; 4],
        /// (sub.hi, sub.lo, thickstep.hi, thickstep.lo), metres.
        sub_thick: [f32; 4],
        /// (distance.hi, distance.lo, close_distance, pixel^2), metres.
        dist: [f32; 4],
        fpixels: u32,
        spixels: u32,
        oversample: u32,
        thicksteps: u32,
        n_sources: u32,
        n_orient: u32,
        shape: u32,
        flags: u32,
        roi_xmin: u32,
        roi_xmax: u32,
        roi_ymin: u32,
        roi_ymax: u32,
        h_min: i32,
        k_min: i32,
        l_min: i32,
        interp: u32,
        h_range: i32,
        k_range: i32,
        l_range: i32,
        first_pixel: u32,
        mu_step: f32,
        i_bg: f32,
        scale: f32,
        polar_k: f32,
        na: f32,
        nb: f32,
        nc: f32,
        fudge: f32,
        default_f: f32,
        dmin: f32,
        /// Always 0: the df64 optimisation barriers (`df_bar` in shared/df64.wgsl).
        zero_a: u32,
        zero_b: u32,
    }
}

gpu_struct! {
    /// Per-dispatch pixel tile (WGSL `Chunk`, a read-only storage buffer): rows `row0..row0+rows`, columns
    /// `col0..col0+cols`; `switch_pixel` is the tricubic switch-off pixel (or `NO_PIXEL`).
    Chunk as "Chunk" {
        row0: u32,
        rows: u32,
        col0: u32,
        cols: u32,
        switch_pixel: u32,
        _pad0: u32,
        _pad1: u32,
        _pad2: u32,
    }
}

gpu_struct! {
    /// One detector panel (WGSL `Panel`, the `panels` storage array; `plan::Panel`): the
    /// reference point and axes as df64 `(x, y, z, 0)` pairs, its close distance, and its
    /// rectangle in the stored image. The kernel takes the first panel holding its pixel.
    GpuPanel as "Panel" {
        pix0_hi: [f32; 4],
        pix0_lo: [f32; 4],
        fdet_hi: [f32; 4],
        fdet_lo: [f32; 4],
        sdet_hi: [f32; 4],
        sdet_lo: [f32; 4],
        odet_hi: [f32; 4],
        odet_lo: [f32; 4],
        /// (close_distance, 0, 0, 0), metres.
        close: [f32; 4],
        f0: u32,
        s0: u32,
        nf: u32,
        ns: u32,
    }
}

gpu_struct! {
    /// One source (WGSL `Source`): incident direction + 1/lambda, polarisation frame.
    GpuSource as "Source" {
        incident: [f32; 4],
        e_in: [f32; 4],
        b_in: [f32; 4],
    }
}

gpu_struct! {
    /// One (source, orientation) pair (WGSL `Term`): for each Miller index, `xyz` = axis/lambda
    /// and `w` = (axis . incident)/lambda, df64.
    GpuTerm as "Term" {
        h_hi: [f32; 4],
        h_lo: [f32; 4],
        k_hi: [f32; 4],
        k_lo: [f32; 4],
        l_hi: [f32; 4],
        l_lo: [f32; 4],
    }
}

gpu_struct! {
    /// Self-test dispatch parameters (WGSL `SelfTestParams`).
    SelfTestParams as "SelfTestParams" {
        op: u32,
        count: u32,
        /// Always 0: the df64 optimisation barriers.
        zero_a: u32,
        zero_b: u32,
    }
}

// Flag bits of `Params::flags`. Every constant below has a WGSL twin of the same name in
// `shaders/nanobragg.wgsl`, checked by `crate/tests/gpu_layout.rs`.
pub const FLAG_CURVED: u32 = 1;
pub const FLAG_POINT_PIXEL: u32 = 2;
pub const FLAG_NOPOLAR: u32 = 4;
pub const FLAG_OVERSAMPLE_THICK: u32 = 8;
pub const FLAG_OVERSAMPLE_POLAR: u32 = 16;
pub const FLAG_OVERSAMPLE_OMEGA: u32 = 32;
pub const FLAG_WATER: u32 = 64;
pub const FLAG_MASK: u32 = 128;
pub const FLAG_THICK_ZERO: u32 = 256;
pub const FLAG_HKL: u32 = 512;
/// Every flag bit with its name.
pub const FLAGS: &[(&str, u32)] = &[
    ("FLAG_CURVED", FLAG_CURVED),
    ("FLAG_POINT_PIXEL", FLAG_POINT_PIXEL),
    ("FLAG_NOPOLAR", FLAG_NOPOLAR),
    ("FLAG_OVERSAMPLE_THICK", FLAG_OVERSAMPLE_THICK),
    ("FLAG_OVERSAMPLE_POLAR", FLAG_OVERSAMPLE_POLAR),
    ("FLAG_OVERSAMPLE_OMEGA", FLAG_OVERSAMPLE_OMEGA),
    ("FLAG_WATER", FLAG_WATER),
    ("FLAG_MASK", FLAG_MASK),
    ("FLAG_THICK_ZERO", FLAG_THICK_ZERO),
    ("FLAG_HKL", FLAG_HKL),
];

/// `Params::shape`: the `Shape` discriminants.
pub const SHAPE_SQUARE: u32 = Shape::Square as u32;
pub const SHAPE_ROUND: u32 = Shape::Round as u32;
pub const SHAPE_GAUSS: u32 = Shape::Gauss as u32;
pub const SHAPE_TOPHAT: u32 = Shape::Tophat as u32;

pub const INTERP_NEAREST: u32 = 0;
pub const INTERP_TRICUBIC: u32 = 1;
/// "No pixel" marker for `first_pixel`, `switch_pixel` and the flag buffer.
pub const NO_PIXEL: u32 = u32::MAX;

/// The `flags` buffer (u32 words): word `FLAGS_SWITCH` holds the first pixel (raster index)
/// with an out-of-range tricubic term (`NO_PIXEL` if none); from word `FLAGS_HEADER_WORDS` on,
/// one bit per pixel marks the pixels under the exact-Bragg rule (`crate::terms::EXACT_BRAGG`):
/// word `FLAGS_HEADER_WORDS + idx / 32`, bit `idx % 32`. The other header words are unused.
pub const FLAGS_SWITCH: usize = 0;
pub const FLAGS_HEADER_WORDS: usize = 4;

/// The header the host writes before a render.
pub fn flags_header() -> [u32; FLAGS_HEADER_WORDS] {
    let mut h = [0; FLAGS_HEADER_WORDS];
    h[FLAGS_SWITCH] = NO_PIXEL;
    h
}

/// Words of the `flags` buffer for `pixels` pixels.
pub fn flags_words(pixels: usize) -> usize {
    FLAGS_HEADER_WORDS + pixels.div_ceil(32)
}

/// The pixels whose exact-Bragg bit is set in a read-back `flags` buffer.
pub fn exact_bragg_pixels(words: &[u32], pixels: usize) -> Vec<usize> {
    let mut out = Vec::new();
    for (w, &bits) in words.iter().enumerate().skip(FLAGS_HEADER_WORDS) {
        let mut b = bits;
        while b != 0 {
            let i = (w - FLAGS_HEADER_WORDS) * 32 + b.trailing_zeros() as usize;
            b &= b - 1;
            if i < pixels {
                out.push(i);
            }
        }
    }
    out
}

/// Split an f64 into a double-float pair: `hi = (f32)v`, `lo = (f32)(v - hi)`.
#[inline]
pub fn df(v: f64) -> [f32; 2] {
    let hi = v as f32;
    let lo = (v - hi as f64) as f32;
    [hi, lo]
}

/// A 3-vector as df64 `(hi, lo)` vec4 pairs, `w` set from `w`.
fn df_vec(v: V3, w: f64) -> ([f32; 4], [f32; 4]) {
    let [x, y, z, w] = [df(v[0]), df(v[1]), df(v[2]), df(w)];
    ([x[0], y[0], z[0], w[0]], [x[1], y[1], z[1], w[1]])
}

fn f32x4(v: V3) -> [f32; 4] {
    [v[0] as f32, v[1] as f32, v[2] as f32, 0.0]
}

fn to_u32(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Raster index of the first rendered pixel when the first phi sequence differs from the steady
/// state (MODEL §4.8), else [`NO_PIXEL`].
pub fn first_sequence_pixel(plan: &Plan) -> u32 {
    if plan.orientations_first == plan.orientations || plan.orientations_first.is_empty() {
        return NO_PIXEL;
    }
    for s in 0..plan.spixels {
        for f in 0..plan.fpixels {
            if plan.renders(f, s) {
                return to_u32(s * plan.fpixels + f);
            }
        }
    }
    NO_PIXEL
}

/// The plan's panels for the kernel.
pub fn pack_panels(plan: &Plan) -> Vec<GpuPanel> {
    plan.panels
        .iter()
        .map(|p| {
            let (pix0_hi, pix0_lo) = df_vec(p.pix0, 0.0);
            let (fdet_hi, fdet_lo) = df_vec(p.fdet, 0.0);
            let (sdet_hi, sdet_lo) = df_vec(p.sdet, 0.0);
            let (odet_hi, odet_lo) = df_vec(p.odet, 0.0);
            GpuPanel {
                pix0_hi,
                pix0_lo,
                fdet_hi,
                fdet_lo,
                sdet_hi,
                sdet_lo,
                odet_hi,
                odet_lo,
                close: [p.close_distance as f32, 0.0, 0.0, 0.0],
                f0: to_u32(p.data_origin[0]),
                s0: to_u32(p.data_origin[1]),
                nf: to_u32(p.size[0]),
                ns: to_u32(p.size[1]),
            }
        })
        .collect()
}

/// Whether the plan asks for tricubic interpolation that the kernel can do (a table exists).
pub fn uses_tricubic(plan: &Plan) -> bool {
    plan.interpolation == Interpolation::Tricubic && plan.hkl.hkls != 0 && !plan.hkl.data.is_empty()
}

pub fn pack_params(plan: &Plan, first_pixel: u32) -> Params {
    let (pix0_hi, pix0_lo) = df_vec(plan.pix0, 0.0);
    let (fdet_hi, fdet_lo) = df_vec(plan.fdet, 0.0);
    let (sdet_hi, sdet_lo) = df_vec(plan.sdet, 0.0);
    let (odet_hi, odet_lo) = df_vec(plan.odet, 0.0);
    let (beam_hi, beam_lo) = df_vec(plan.beam, 0.0);
    let sub = df(plan.pixel / plan.oversample as f64);
    let thickstep = df(plan.thickstep);
    let distance = df(plan.distance);
    let mut flags = 0;
    for (on, bit) in [
        (plan.curved, FLAG_CURVED),
        (plan.point_pixel, FLAG_POINT_PIXEL),
        (plan.nopolar, FLAG_NOPOLAR),
        (plan.oversample_thick, FLAG_OVERSAMPLE_THICK),
        (plan.oversample_polar, FLAG_OVERSAMPLE_POLAR),
        (plan.oversample_omega, FLAG_OVERSAMPLE_OMEGA),
        (plan.water, FLAG_WATER),
        (plan.mask.is_some(), FLAG_MASK),
        (plan.thick == 0.0, FLAG_THICK_ZERO),
        (plan.hkl.hkls != 0 && !plan.hkl.data.is_empty(), FLAG_HKL),
    ] {
        if on {
            flags |= bit;
        }
    }
    let hkl = &plan.hkl;
    Params {
        pix0_hi,
        pix0_lo,
        fdet_hi,
        fdet_lo,
        sdet_hi,
        sdet_lo,
        odet_hi,
        odet_lo,
        beam_hi,
        beam_lo,
        a_star: f32x4(plan.a_star),
        b_star: f32x4(plan.b_star),
        c_star: f32x4(plan.c_star),
        sub_thick: [sub[0], sub[1], thickstep[0], thickstep[1]],
        dist: [
            distance[0],
            distance[1],
            plan.close_distance as f32,
            (plan.pixel * plan.pixel) as f32,
        ],
        fpixels: to_u32(plan.fpixels),
        spixels: to_u32(plan.spixels),
        oversample: plan.oversample,
        thicksteps: plan.thicksteps,
        n_sources: to_u32(plan.sources.len()),
        n_orient: to_u32(plan.orientations.len()),
        shape: plan.shape as u32,
        flags,
        roi_xmin: to_u32(plan.roi.xmin),
        roi_xmax: to_u32(plan.roi.xmax),
        roi_ymin: to_u32(plan.roi.ymin),
        roi_ymax: to_u32(plan.roi.ymax),
        h_min: hkl.h_min,
        k_min: hkl.k_min,
        l_min: hkl.l_min,
        interp: if uses_tricubic(plan) {
            INTERP_TRICUBIC
        } else {
            INTERP_NEAREST
        },
        h_range: hkl.h_range(),
        k_range: hkl.k_range(),
        l_range: hkl.l_range(),
        first_pixel,
        mu_step: (plan.thickstep * plan.mu) as f32,
        i_bg: plan.i_bg as f32,
        scale: (plan.r_e_sqr_fluence / plan.steps as f64) as f32,
        polar_k: plan.polar_k as f32,
        na: plan.na as f32,
        nb: plan.nb as f32,
        nc: plan.nc as f32,
        fudge: plan.fudge as f32,
        default_f: plan.default_f as f32,
        dmin: plan.dmin as f32,
        zero_a: 0,
        zero_b: 0,
    }
}

/// Sources: the polarisation frame of `crate::terms::PolarFrame` (unit incident direction, E_in,
/// B_in) rounded to f32, and 1/λ.
pub fn pack_sources(plan: &Plan) -> Vec<GpuSource> {
    plan.sources
        .iter()
        .map(|s| {
            let f = PolarFrame::new(s.incident, plan.polar_axis);
            let mut incident = f32x4(f.i);
            incident[3] = (1.0 / s.lambda) as f32;
            GpuSource {
                incident,
                e_in: f32x4(f.e_in),
                b_in: f32x4(f.b_in),
            }
        })
        .collect()
}

fn term(axis: V3, incident: V3, lambda: f64) -> ([f32; 4], [f32; 4]) {
    let a = [axis[0] / lambda, axis[1] / lambda, axis[2] / lambda];
    df_vec(a, dot(axis, incident) / lambda)
}

/// The (source, orientation) table, source-major; when `first` is set, a second block for the
/// first phi sequence (`orientations_first`) follows the steady-state block.
pub fn pack_terms(plan: &Plan, first: bool) -> Vec<GpuTerm> {
    let mut out = Vec::with_capacity(plan.sources.len() * plan.orientations.len() * 2);
    let tables: &[&[crate::plan::Orientation]] = if first {
        &[&plan.orientations, &plan.orientations_first]
    } else {
        &[&plan.orientations]
    };
    for table in tables {
        for s in &plan.sources {
            for o in table.iter() {
                let (h_hi, h_lo) = term(o.a, s.incident, s.lambda);
                let (k_hi, k_lo) = term(o.b, s.incident, s.lambda);
                let (l_hi, l_lo) = term(o.c, s.incident, s.lambda);
                out.push(GpuTerm {
                    h_hi,
                    h_lo,
                    k_hi,
                    k_lo,
                    l_hi,
                    l_lo,
                });
            }
        }
    }
    out
}

/// Structure-factor amplitudes as f32 (the padded table, l fastest).
pub fn pack_hkl(plan: &Plan) -> Vec<f32> {
    plan.hkl.data.iter().map(|&v| v as f32).collect()
}

/// The mask, four pixels per u32 (little-endian byte order), or `None`.
pub fn pack_mask(plan: &Plan) -> Option<Vec<u32>> {
    plan.mask.as_ref().map(|m| {
        m.chunks(4)
            .map(|c| {
                c.iter()
                    .enumerate()
                    .fold(0u32, |w, (i, &b)| w | (b as u32) << (8 * i))
            })
            .collect()
    })
}

// ---- the tangent kernel (`shaders/nanobragg.wgsl` with `TANGENT`, MODEL §10) ----

/// Most parameters one tangent pass carries (the length of `TanParams::params`): every
/// [`crate::tangent::Param`] once. A longer list is split into passes by the driver.
pub const MAX_TAN_PARAMS: usize = 24;

/// `GpuTanParam::kind.x` bits: what the parameter moves.
pub const TAN_MOVES_DETECTOR: u32 = 1;
/// Moves the (source, orientation) terms (orientation table or wavelength) in no form of one
/// matrix (the mosaic spread): its term tangents are block `kind.y` of the terms buffer (see
/// [`pack_tangent`]), contracted per term.
pub const TAN_MOVES_TERMS: u32 = 2;
pub const TAN_MOVES_N: u32 = 4;
pub const TAN_MOVES_RECIPROCAL: u32 = 8;
/// Moves every term on the right, dA = A·K (rotations about a lab axis, with a uniform
/// wavelength change): `GpuTanParam::m` holds the rows of K, contracted once per pixel with
/// G = Σ g ⊗ q, q = d − i, g = Σ Aᵀ t per (sub-pixel, source) (see [`TermForm`]).
pub const TAN_RIGHT: u32 = 16;
/// Moves every term on the left, dA = C·A (the cell, the wavelength): `GpuTanParam::m` holds
/// the columns of C, contracted once per pixel with H = Σ_terms t ⊗ (h, k, l) (see
/// [`TermForm`]).
pub const TAN_LEFT: u32 = 32;
/// Every tangent bit with its name (WGSL twins in `shaders/nanobragg.wgsl` with `TANGENT`).
pub const TAN_BITS: &[(&str, u32)] = &[
    ("TAN_MOVES_DETECTOR", TAN_MOVES_DETECTOR),
    ("TAN_MOVES_TERMS", TAN_MOVES_TERMS),
    ("TAN_MOVES_N", TAN_MOVES_N),
    ("TAN_MOVES_RECIPROCAL", TAN_MOVES_RECIPROCAL),
    ("TAN_RIGHT", TAN_RIGHT),
    ("TAN_LEFT", TAN_LEFT),
];

gpu_struct! {
    /// One parameter's tangent of the plan (`tangent::PlanDelta`) in f32, per the parameter's
    /// unit (WGSL `TanParam`): the detector's axes and reference point, the scalars, N and
    /// a*, b*, c*; the matrix of a term-moving parameter of one form (`TAN_RIGHT`/`TAN_LEFT`);
    /// `kind` = (`TAN_*` bits, term block, 0, 0).
    GpuTanParam as "TanParam" {
        dpix0: [f32; 4],
        dfdet: [f32; 4],
        dsdet: [f32; 4],
        dodet: [f32; 4],
        /// (d close_distance, d scale, d i_bg, d default_F); scale = r_e²·fluence/steps as in
        /// `Params::scale`.
        misc: [f32; 4],
        /// (dNa, dNb, dNc, 0).
        dn: [f32; 4],
        da_star: [f32; 4],
        db_star: [f32; 4],
        dc_star: [f32; 4],
        /// `TAN_RIGHT`: the rows of K; `TAN_LEFT`: the columns of C (each `(x, y, z, 0)`).
        m0: [f32; 4],
        m1: [f32; 4],
        m2: [f32; 4],
        kind: [u32; 4],
    }
}

/// `TanParams` (WGSL, a uniform): the parameters of one tangent pass.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TanParams {
    /// Parameters in this pass (planes − 1).
    pub count: u32,
    /// Entries of one block of the terms buffer (the image's (table, source, orientation)
    /// terms; each moving parameter's term tangents follow in blocks of the same length).
    pub block: u32,
    /// 1 when a parameter of this pass moves N (the lattice factor's d/dN is formed), else 0.
    pub any_n: u32,
    pub _pad1: u32,
    pub params: [GpuTanParam; MAX_TAN_PARAMS],
}

impl Default for TanParams {
    fn default() -> Self {
        bytemuck::Zeroable::zeroed()
    }
}

impl GpuStruct for TanParams {
    const WGSL_NAME: &'static str = "TanParams";
    const FIELDS: &'static [(&'static str, usize, usize)] = &[
        ("count", 0, 4),
        ("block", 4, 4),
        ("any_n", 8, 4),
        ("_pad1", 12, 4),
        (
            "params",
            16,
            MAX_TAN_PARAMS * core::mem::size_of::<GpuTanParam>(),
        ),
    ];
}

gpu_struct! {
    /// The reduction's uniform (WGSL `ReduceParams`, `shaders/reduce.wgsl`): pixels per plane,
    /// pixels per invocation (256 apart), workgroups (partial sums) per parameter.
    ReduceParams as "ReduceParams" {
        pixels: u32,
        per: u32,
        groups: u32,
        _pad: u32,
    }
}

fn f32x4w(v: V3, w: f64) -> [f32; 4] {
    [v[0] as f32, v[1] as f32, v[2] as f32, w as f32]
}

/// The tangent of one term record: for each Miller index h = A·d − c with A = axis/λ and
/// c = axis·i/λ, (dA, dc) = (δaxis/λ − axis·δλ/λ², (δaxis·i − (axis·i)·δλ/λ)/λ), df64 pairs
/// in the layout of [`GpuTerm`]; the kernel forms dh = dA·d − dc (d held).
fn term_tangent(
    axis: V3,
    daxis: V3,
    incident: V3,
    lambda: f64,
    dlambda: f64,
) -> ([f32; 4], [f32; 4]) {
    let r = dlambda / lambda;
    let a: V3 = std::array::from_fn(|k| (daxis[k] - axis[k] * r) / lambda);
    df_vec(a, (dot(daxis, incident) - dot(axis, incident) * r) / lambda)
}

type M3 = [[f64; 3]; 3];

/// How a parameter that moves the term records enters the tangent kernel's term loop.
///
/// A term's Miller indices are h = A·q with A = M_o/λ_s (M_o the rows a, b, c of orientation
/// o, λ_s the source's wavelength) and q = d − i_s; the parameter moves them by
/// dh = dA·q, dA = (dM_o − r_s·M_o)/λ_s with r_s = dλ_s/λ_s. The kernel sums, per term, the
/// term's partial t = ∂I/∂(h, k, l) into g = Σ Aᵀ t (q's own tangent) and, when a parameter
/// needs it, into H = Σ t ⊗ (h, k, l); so when every dM_o is M_o·K for one K (a rotation about
/// a lab axis u: K q = q × u), or C·M_o for one C (the cell: C = dM₀ M₀⁻¹), and r_s is one r
/// for every source, the parameter needs no term tangents:
/// * `Right(K − r·1)`: Σ t·dh = g·((K − r·1) q) per (sub-pixel, source), = Σ (K − r·1)_mn G_mn
///   with G = Σ g ⊗ q, once per pixel;
/// * `Left(C − r·1)`: Σ t·dh = Σ_mn (C − r·1)_mn H_mn, once per pixel;
/// * `Generic`: anything else (the mosaic spread, per-source wavelength changes): the term
///   tangents, contracted per term.
///
/// K or C is taken from the first orientation of the table (in f64) and accepted when it gives
/// every moved orientation of both tables within 1e-9 of their largest moved component; r when
/// every source's r_s is within 1e-9 of the largest |r_s|. Right is preferred (no H sums).
#[derive(Clone, Debug, PartialEq)]
pub enum TermForm {
    Right(M3),
    Left(M3),
    Generic,
}

/// The form of parameter `d`'s move of the term records of `plan` (see [`TermForm`]); `first`:
/// the first-sequence table is packed too.
pub fn term_form(plan: &Plan, d: &crate::tangent::PlanDelta, first: bool) -> TermForm {
    use crate::tangent::{orientation_move, rows, OrientationMove};
    let zero = [[0.0; 3]; 3];
    let mut pairs: Vec<(M3, M3)> = Vec::new();
    let mut tables: Vec<(&[crate::plan::Orientation], &[crate::plan::Orientation])> =
        vec![(&plan.orientations, &d.orientations)];
    if first {
        tables.push((&plan.orientations_first, &d.orientations_first));
    }
    for (table, dtable) in tables {
        for (oi, o) in table.iter().enumerate() {
            pairs.push((rows(o), dtable.get(oi).map_or(zero, rows)));
        }
    }
    let rs: Vec<f64> = plan
        .sources
        .iter()
        .enumerate()
        .map(|(si, s)| d.lambda.get(si).copied().unwrap_or(0.0) / s.lambda)
        .collect();
    let rmax = rs.iter().fold(0f64, |m, r| m.max(r.abs()));
    let r = rs.first().copied().unwrap_or(0.0);
    if !rs.iter().all(|x| (x - r).abs() <= 1e-9 * rmax) {
        return TermForm::Generic;
    }
    let minus_r = |mut m: M3| {
        for (i, row) in m.iter_mut().enumerate() {
            row[i] -= r;
        }
        m
    };
    match orientation_move(&pairs) {
        Some(OrientationMove::Right(k)) => TermForm::Right(minus_r(k)),
        Some(OrientationMove::Left(c)) => TermForm::Left(minus_r(c)),
        None => TermForm::Generic,
    }
}

/// The tangent pass for parameters `which` (indices into `t`, at most [`MAX_TAN_PARAMS`]) of a
/// plan packed with [`pack_terms`]`(plan, first)`: the uniform and the term-tangent blocks that
/// follow the image's terms in the terms buffer (one block per parameter that moves the
/// orientation table or a wavelength in no form of one matrix, [`TermForm::Generic`], laid out
/// as [`pack_terms`]: table, source, orientation; the others carry their matrix in the
/// uniform).
pub fn pack_tangent(
    plan: &Plan,
    t: &crate::tangent::PlanTangent,
    which: &[usize],
    first: bool,
) -> (TanParams, Vec<GpuTerm>) {
    assert!(
        which.len() <= MAX_TAN_PARAMS,
        "at most {MAX_TAN_PARAMS} parameters per pass"
    );
    let block = plan.sources.len() * plan.orientations.len() * if first { 2 } else { 1 };
    let mut out = TanParams {
        count: to_u32(which.len()),
        block: to_u32(block),
        ..Default::default()
    };
    let mut blocks: Vec<GpuTerm> = Vec::new();
    let steps = plan.steps as f64;
    for (slot, &j) in which.iter().enumerate() {
        let d = &t.deltas[j];
        let mut kind = 0;
        if d.moves_detector() {
            kind |= TAN_MOVES_DETECTOR;
        }
        if d.moves_n() {
            kind |= TAN_MOVES_N;
            out.any_n = 1;
        }
        if d.moves_reciprocal() {
            kind |= TAN_MOVES_RECIPROCAL;
        }
        let mut term_block = 0;
        let mut m = [[0f32; 4]; 3];
        let moves_terms = d.moves_orientations() || d.moves_lambda();
        match moves_terms.then(|| term_form(plan, d, first)) {
            None => {}
            Some(TermForm::Right(k)) => {
                kind |= TAN_RIGHT;
                m = std::array::from_fn(|row| f32x4w(k[row], 0.0));
            }
            Some(TermForm::Left(c)) => {
                kind |= TAN_LEFT;
                m = std::array::from_fn(|col| f32x4w([c[0][col], c[1][col], c[2][col]], 0.0));
            }
            Some(TermForm::Generic) => {
                kind |= TAN_MOVES_TERMS;
                term_block = to_u32(blocks.len() / block.max(1));
                let zero: crate::plan::Orientation = bytemuck::Zeroable::zeroed();
                let tables: &[(&[crate::plan::Orientation], &[crate::plan::Orientation])] = if first
                {
                    &[
                        (&plan.orientations, &d.orientations),
                        (&plan.orientations_first, &d.orientations_first),
                    ]
                } else {
                    &[(&plan.orientations, &d.orientations)]
                };
                for (table, dtable) in tables {
                    for (si, s) in plan.sources.iter().enumerate() {
                        let dl = d.lambda.get(si).copied().unwrap_or(0.0);
                        for (oi, o) in table.iter().enumerate() {
                            let od = dtable.get(oi).unwrap_or(&zero);
                            let (h_hi, h_lo) = term_tangent(o.a, od.a, s.incident, s.lambda, dl);
                            let (k_hi, k_lo) = term_tangent(o.b, od.b, s.incident, s.lambda, dl);
                            let (l_hi, l_lo) = term_tangent(o.c, od.c, s.incident, s.lambda, dl);
                            blocks.push(GpuTerm {
                                h_hi,
                                h_lo,
                                k_hi,
                                k_lo,
                                l_hi,
                                l_lo,
                            });
                        }
                    }
                }
            }
        }
        out.params[slot] = GpuTanParam {
            dpix0: f32x4(d.pix0),
            dfdet: f32x4(d.fdet),
            dsdet: f32x4(d.sdet),
            dodet: f32x4(d.odet),
            misc: [
                d.close_distance as f32,
                (d.r_e_sqr_fluence / steps) as f32,
                d.i_bg as f32,
                d.default_f as f32,
            ],
            dn: f32x4w(d.n, 0.0),
            da_star: f32x4(d.a_star),
            db_star: f32x4(d.b_star),
            dc_star: f32x4(d.c_star),
            m0: m[0],
            m1: m[1],
            m2: m[2],
            kind: [kind, term_block, 0, 0],
        };
    }
    (out, blocks)
}
