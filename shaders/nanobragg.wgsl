// nanoBragg per-pixel kernel (MODEL §6.2). One invocation per pixel; the host splits the image
// into tiles of rows (or of pixels within a row when one row is too much work) (`Chunk`).
// Preceded by shared/df64.wgsl and shared/terms.wgsl (concatenated by the host).
//
// One source, two kernels (crate/src/gpu/shaders.rs `preprocess`: `#ifdef NAME`, `#ifndef
// NAME`, `#else`, `#endif` on lines of their own): without TANGENT the image kernel, entry point
// `main`; with TANGENT the tangent kernel (MODEL §10), entry point `tangent`. The pixel loop,
// the geometry, the Miller indices, the lookups and the sum are one text; the blocks under
// TANGENT evaluate the terms with their partials and carry the tangents.
//
// Precision (MODEL §9): the chain pixel -> pos -> R -> d -> h,k,l is df64; h = A.d - c with
// A = a/lambda and c = (a.i)/lambda precomputed per (source, orientation) on the host in f64.
// Every factor is a function of shared/terms.wgsl (the twin of crate/src/terms.rs); the
// per-pixel sum is df64.
//
// Tangent kernel: the pixel's value as the image kernel computes it (the same df64 chain, the
// same terms, the same order: its image is `main`'s to the bit) and, in the same pass, its
// derivative with respect to each parameter of a pass (`TanParams`, at most MAX_TAN_PARAMS), in
// f32, from the term derivatives of shared/terms.wgsl (`*_d`, the twins of terms.rs). The chain
// mirrors crate/src/cpu/tangent.rs (f64) and its f32 CPU mirror (the f32 terms' `FactorsD` in
// crate/src/cpu/pixel32.rs): per term the term's partials with respect to its own inputs
// (h, k, l, N, a*, F); ∂T/∂(h,k,l) summed along the term's A = axis/λ into g = ∂I/∂d per
// (sub-pixel, source). Every parameter is contracted once per pixel, after the loops, from
// per-pixel sums that do not depend on the parameters (no per-parameter state in the loops: on
// GPUs such arrays live in slow local memory), except TAN_MOVES_TERMS:
// * the detector parameters move d: Σ g·dd = Σ w·dpos with w = (g − d (d·g))/R and
//   dpos = f·dfdet + s·dsdet + o·dodet + dpix0, from the sums of w·(f, s, o, 1);
// * the parameters that move the terms (orientation table, wavelength) in one of three forms
//   (gpu/layout.rs TermForm, chosen by the host): TAN_RIGHT (dA = A·K for every term:
//   rotations, a uniform wavelength change) as Σ g·(K q) = Σ K_mn G_mn, G = Σ g ⊗ q, q = d − i;
//   TAN_LEFT (dA = C·A: the cell) as Σ C_mn H_mn with H = Σ_terms t ⊗ (h, k, l);
//   TAN_MOVES_TERMS (anything else: the mosaic spread) per term with dh = dA·d − dc from the
//   term tangents that follow the image's terms in `terms` (gpu/layout.rs pack_tangent);
// * N, a*, default_F and the scale from the sums of the terms' partials;
// * the first-value factors (Ω, polarisation, capture) by the product rule, their partials and
//   the point where they were taken kept.
// `image` (binding 6) then holds 1 + TP.count planes of P.fpixels * P.spixels values: the
// image, then one tangent image per parameter. Not followed (refused by the host): -curved_det
// and the -oversample_* running sums.
//
// The structs and constants below must be kept in sync with crate/src/gpu/layout.rs (checked by
// crate/tests/gpu_layout.rs through naga reflection, for both kernels).

const FLAG_CURVED: u32 = 1u;
const FLAG_POINT_PIXEL: u32 = 2u;
const FLAG_NOPOLAR: u32 = 4u;
const FLAG_OVERSAMPLE_THICK: u32 = 8u;
const FLAG_OVERSAMPLE_POLAR: u32 = 16u;
const FLAG_OVERSAMPLE_OMEGA: u32 = 32u;
const FLAG_WATER: u32 = 64u;
const FLAG_MASK: u32 = 128u;
const FLAG_THICK_ZERO: u32 = 256u;
const FLAG_HKL: u32 = 512u;

const SHAPE_SQUARE: u32 = 0u;
const SHAPE_ROUND: u32 = 1u;
const SHAPE_GAUSS: u32 = 2u;
const SHAPE_TOPHAT: u32 = 3u;

const INTERP_NEAREST: u32 = 0u;
const INTERP_TRICUBIC: u32 = 1u;

const NO_PIXEL: u32 = 0xffffffffu;

// Layout of the `flags` buffer (u32 words; layout::FLAGS_*): word FLAGS_SWITCH holds the first
// pixel (raster index) with an out-of-range tricubic term (NO_PIXEL if none); the words from
// FLAGS_HEADER_WORDS on hold one bit per pixel, set when the pixel falls under the exact-Bragg
// rule: word FLAGS_HEADER_WORDS + idx / 32, bit idx % 32. The other header words are unused.
const FLAGS_SWITCH: u32 = 0u;
const FLAGS_HEADER_WORDS: u32 = 4u;

// Keep in sync with `layout::Params`.
struct Params {
    pix0_hi: vec4<f32>,
    pix0_lo: vec4<f32>,
    fdet_hi: vec4<f32>,
    fdet_lo: vec4<f32>,
    sdet_hi: vec4<f32>,
    sdet_lo: vec4<f32>,
    odet_hi: vec4<f32>,
    odet_lo: vec4<f32>,
    beam_hi: vec4<f32>,
    beam_lo: vec4<f32>,
    a_star: vec4<f32>,
    b_star: vec4<f32>,
    c_star: vec4<f32>,
    // (sub.hi, sub.lo, thickstep.hi, thickstep.lo)
    sub_thick: vec4<f32>,
    // (distance.hi, distance.lo, close_distance, pixel^2)
    dist: vec4<f32>,
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
    // Always 0: the optimisation barriers of shared/df64.wgsl (df_zero_a/b).
    zero_a: u32,
    zero_b: u32,
}

// Keep in sync with `layout::Chunk`.
struct Chunk {
    row0: u32,
    rows: u32,
    col0: u32,
    cols: u32,
    // Tricubic mode: pixels after this one (raster order) use nearest-neighbour look-up; this
    // one switches at its first out-of-range term (MODEL §6.4, §9.6).
    switch_pixel: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// Keep in sync with `layout::GpuPanel`. One detector panel: reference point (the corner of
// stored pixel (0, 0) on the panel's plane) and axes as df64 pairs, close distance (x of
// `close`), and its rectangle in the stored image. A pixel takes the first panel holding it;
// a pixel of none records 0.
struct Panel {
    pix0_hi: vec4<f32>,
    pix0_lo: vec4<f32>,
    fdet_hi: vec4<f32>,
    fdet_lo: vec4<f32>,
    sdet_hi: vec4<f32>,
    sdet_lo: vec4<f32>,
    odet_hi: vec4<f32>,
    odet_lo: vec4<f32>,
    close: vec4<f32>,
    f0: u32,
    s0: u32,
    nf: u32,
    ns: u32,
}

// Keep in sync with `layout::GpuSource`.
struct Source {
    // xyz: incident direction (unit, along propagation); w: 1/lambda (1/m).
    incident: vec4<f32>,
    // Polarisation frame: E_in, B_in (unit vectors; zero when the axis is parallel to the beam).
    e_in: vec4<f32>,
    b_in: vec4<f32>,
}

// Keep in sync with `layout::GpuTerm`. Per (source, orientation): for each Miller index,
// xyz = A = axis/lambda and w = c = (axis . incident)/lambda, as df64 (hi, lo) pairs.
struct Term {
    h_hi: vec4<f32>,
    h_lo: vec4<f32>,
    k_hi: vec4<f32>,
    k_lo: vec4<f32>,
    l_hi: vec4<f32>,
    l_lo: vec4<f32>,
}

@group(0) @binding(0) var<uniform> P: Params;
// A storage buffer, not a uniform: with a uniform Chunk, Mesa's lavapipe kept ~2 MB more after
// every render, even of an unchanged plan (measured; it specialises shaders on small uniform
// values); as storage, repeated renders do not grow. Each submission still costs lavapipe
// 30-50 ms and some memory, which is why tiles stay large there (crate/src/gpu/renderer.rs).
@group(0) @binding(1) var<storage, read> C: Chunk;
@group(0) @binding(2) var<storage, read> sources: array<Source>;
@group(0) @binding(3) var<storage, read> terms: array<Term>;
@group(0) @binding(4) var<storage, read> hkl: array<f32>;
@group(0) @binding(5) var<storage, read> mask: array<u32>;
@group(0) @binding(6) var<storage, read_write> image: array<f32>;
// See FLAGS_SWITCH and FLAGS_HEADER_WORDS.
@group(0) @binding(7) var<storage, read_write> flags: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read> panels: array<Panel>;

fn df_zero_a() -> u32 {
    return P.zero_a;
}

fn df_zero_b() -> u32 {
    return P.zero_b;
}

fn has(flag: u32) -> bool {
    return (P.flags & flag) != 0u;
}

fn df3_from(hi: vec4<f32>, lo: vec4<f32>) -> Df3 {
    return Df3(hi.xyz, lo.xyz);
}

// Upstream's nearest index ceil(x - 0.5) (halves round down) from a df64 x, as an f32 integer.
fn nearest_index(x: vec2<f32>) -> f32 {
    let t = df_add_f(x, -0.5);
    var n = ceil(t.x);
    if n == t.x && t.y > 0.0 {
        n += 1.0;
    }
    return n;
}

// The structure-factor table for shared/terms.wgsl.
fn hkl_value(i: u32) -> f32 {
    return hkl[i];
}

fn hkl_box() -> HklBox {
    return HklBox(vec3<i32>(P.h_min, P.k_min, P.l_min), vec3<i32>(P.h_range, P.k_range, P.l_range), has(FLAG_HKL));
}

// Rodrigues rotation of v about unit axis u by the angle whose (sin, cos) is sc (MODEL §3.1), df64.
fn df_rotaxis(v: Df3, u: Df3, sc: array<vec2<f32>, 2>) -> Df3 {
    let s = sc[0];
    let c = sc[1];
    let omc = df_sub(vec2<f32>(1.0, 0.0), c);
    let d = df_mul(df_dot3(u, v), omc);
    let u1 = df3_get(u, 0u);
    let u2 = df3_get(u, 1u);
    let u3 = df3_get(u, 2u);
    let v1 = df3_get(v, 0u);
    let v2 = df3_get(v, 1u);
    let v3 = df3_get(v, 2u);
    let x1 = df_sub(df_mul(u2, v3), df_mul(u3, v2));
    let x2 = df_sub(df_mul(u3, v1), df_mul(u1, v3));
    let x3 = df_sub(df_mul(u1, v2), df_mul(u2, v1));
    return df3_make(
        df_add(df_add(df_mul(u1, d), df_mul(v1, c)), df_mul(x1, s)),
        df_add(df_add(df_mul(u2, d), df_mul(v2, c)), df_mul(x2, s)),
        df_add(df_add(df_mul(u3, d), df_mul(v3, c)), df_mul(x3, s)),
    );
}

#ifdef TANGENT

const MAX_TAN_PARAMS: u32 = 24u;
const TAN_MOVES_DETECTOR: u32 = 1u;
const TAN_MOVES_TERMS: u32 = 2u;
const TAN_MOVES_N: u32 = 4u;
const TAN_MOVES_RECIPROCAL: u32 = 8u;
const TAN_RIGHT: u32 = 16u;
const TAN_LEFT: u32 = 32u;

// Keep in sync with `layout::GpuTanParam`: one parameter's tangent of the plan, per its unit.
struct TanParam {
    dpix0: vec4<f32>,
    dfdet: vec4<f32>,
    dsdet: vec4<f32>,
    dodet: vec4<f32>,
    // (d close_distance, d scale, d i_bg, d default_F)
    misc: vec4<f32>,
    dn: vec4<f32>,
    da_star: vec4<f32>,
    db_star: vec4<f32>,
    dc_star: vec4<f32>,
    // TAN_RIGHT: the rows of K; TAN_LEFT: the columns of C
    m0: vec4<f32>,
    m1: vec4<f32>,
    m2: vec4<f32>,
    // (TAN_* bits, term block, 0, 0)
    kind: vec4<u32>,
}

// Keep in sync with `layout::TanParams`.
struct TanParams {
    count: u32,
    // entries of one block of `terms` (the image's terms; term block b starts at block * (1 + b))
    block: u32,
    // 1 when a parameter of this pass moves N (the lattice factor's d/dN is formed), else 0
    any_n: u32,
    _pad1: u32,
    params: array<TanParam, 24>,
}

@group(0) @binding(9) var<uniform> TP: TanParams;

fn tan_moves(j: u32, bit: u32) -> bool {
    return (TP.params[j].kind.x & bit) != 0u;
}

// Whether f_nearest returns default_F at (h0, k0, l0) (terms.rs f_nearest_is_default): its
// derivative with respect to default_F is 1 there, 0 elsewhere.
fn tan_f_is_default(g: HklBox, h0: f32, k0: f32, l0: f32) -> bool {
    return !(g.present && within(h0, g.lo.x, g.lo.x + g.range.x - 1) && within(k0, g.lo.y, g.lo.y + g.range.y - 1) && within(l0, g.lo.z, g.lo.z + g.range.z - 1));
}

// Parameter j's move of a point f·fdet + s·sdet + o·odet + pix0 of the panel, fso = (f, s, o).
fn tan_dpos(j: u32, fso: vec3<f32>) -> vec3<f32> {
    let tp = TP.params[j];
    return fso.x * tp.dfdet.xyz + fso.y * tp.dsdet.xyz + fso.z * tp.dodet.xyz + tp.dpix0.xyz;
}

// Parameter j's move of the direction d = pos/R of the point fso (inv_r = 1/R).
fn tan_dd(j: u32, d: vec3<f32>, fso: vec3<f32>, inv_r: f32) -> vec3<f32> {
    let dpos = tan_dpos(j, fso);
    return (dpos - d * dot(d, dpos)) * inv_r;
}
#endif

#ifdef TANGENT
// Every plane of pixel idx is 0 (outside the ROI, masked, or on no panel).
fn clear_pixel(idx: u32) {
    let npx = P.fpixels * P.spixels;
    for (var j = 0u; j <= TP.count; j++) {
        image[j * npx + idx] = 0.0;
    }
}
#else
// Pixel idx is 0 (outside the ROI, masked, or on no panel).
fn clear_pixel(idx: u32) {
    image[idx] = 0.0;
}
#endif

@compute @workgroup_size(8, 8, 1)
#ifdef TANGENT
fn tangent(@builtin(global_invocation_id) gid: vec3<u32>) {
#else
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
#endif
    let fpixel = C.col0 + gid.x;
    let spixel = C.row0 + gid.y;
    if gid.x >= C.cols || gid.y >= C.rows || fpixel >= P.fpixels || spixel >= P.spixels {
        return;
    }
#ifdef TANGENT
    let npx = P.fpixels * P.spixels;
    let np = TP.count;
#endif
    let idx = spixel * P.fpixels + fpixel;
    if fpixel < P.roi_xmin || fpixel > P.roi_xmax || spixel < P.roi_ymin || spixel > P.roi_ymax {
        clear_pixel(idx);
        return;
    }
    if has(FLAG_MASK) {
        let m = (mask[idx >> 2u] >> ((idx & 3u) * 8u)) & 0xffu;
        if m == 0u {
            clear_pixel(idx);
            return;
        }
    }

    var panel = NO_PIXEL;
    for (var i = 0u; i < arrayLength(&panels); i++) {
        let q = panels[i];
        if fpixel - q.f0 < q.nf && spixel - q.s0 < q.ns {
            panel = i;
            break;
        }
    }
    if panel == NO_PIXEL {
        clear_pixel(idx);
        return;
    }
    let D = panels[panel];

#ifndef TANGENT
    let ov_thick = has(FLAG_OVERSAMPLE_THICK);
    let ov_polar = has(FLAG_OVERSAMPLE_POLAR);
    let ov_omega = has(FLAG_OVERSAMPLE_OMEGA);
#endif
    let no_skip = has(FLAG_WATER);
    let n = P.oversample;
    let pix0 = df3_from(D.pix0_hi, D.pix0_lo);
    let fdet = df3_from(D.fdet_hi, D.fdet_lo);
    let sdet = df3_from(D.sdet_hi, D.sdet_lo);
    let odet = df3_from(D.odet_hi, D.odet_lo);
    let sub = P.sub_thick.xy;
    let thickstep = P.sub_thick.zw;
#ifndef TANGENT
    let distance = P.dist.xy;
#endif
    let nabc = (P.na * P.nb) * P.nc;
#ifdef TANGENT
    let nvec = vec3<f32>(P.na, P.nb, P.nc);
    let nab = vec3<f32>(P.nb * P.nc, P.na * P.nc, P.na * P.nb);
#endif
    let g = hkl_box();
#ifdef TANGENT
    var any_recip = false;
    var any_right = false;
    var any_left = false;
    var any_generic = false;
    for (var j = 0u; j < np; j++) {
        any_recip = any_recip | tan_moves(j, TAN_MOVES_RECIPROCAL);
        any_right = any_right | tan_moves(j, TAN_RIGHT);
        any_left = any_left | tan_moves(j, TAN_LEFT);
        any_generic = any_generic | tan_moves(j, TAN_MOVES_TERMS);
    }
#endif

    var acc = vec2<f32>(P.i_bg, 0.0);
    var polar = select(0.0, 1.0, has(FLAG_NOPOLAR));
    var omega = 0.0;
    var capture = 1.0;
    // Stale-phi rule (MODEL §4.8): the first phi sequence of the first rendered pixel uses
    // `orientations_first` (stored after the steady-state block).
    var first_seq = idx == P.first_pixel;
    // Structure-factor look-up mode for this pixel.
    var tricubic = P.interp == INTERP_TRICUBIC && idx <= C.switch_pixel;
    var exact_bragg = false;
#ifdef TANGENT
    // per parameter, the sum's tangent, for the TAN_MOVES_TERMS parameters only (contracted per
    // term); every other parameter is contracted once per pixel at the end from the per-pixel
    // sums below, so no per-parameter state is kept in the loops (function-scope variables start
    // at zero)
    var di: array<f32, 24>;
    // the detector parameters through d: Σ over (sub-pixel, source) of w = (g − d (d·g))/R
    // (∂I/∂pos) times (f, s, o, 1), the coefficients of dpos = f·dfdet + s·dsdet + o·dodet + dpix0
    var wf = vec3<f32>(0.0);
    var ws = vec3<f32>(0.0);
    var wo = vec3<f32>(0.0);
    var w1 = vec3<f32>(0.0);
    // TAN_RIGHT: G = Σ over (sub-pixel, source) of g ⊗ q, by rows
    var gr0 = vec3<f32>(0.0);
    var gr1 = vec3<f32>(0.0);
    var gr2 = vec3<f32>(0.0);
    // the first-value factors' partials and where they were taken (direction, (f, s, o), 1/R):
    // Ω (dΩ/dR, dΩ/d close), the capture fraction (d/dρ), the polarisation (d/dd)
    var om_w = vec2<f32>(0.0);
    var om_d = vec3<f32>(0.0);
    var om_fso = vec3<f32>(0.0);
    var cap_dy = 0.0;
    var cap_d = vec3<f32>(0.0);
    var cap_fso = vec3<f32>(0.0);
    var cap_invr = 0.0;
    var pol_g = vec3<f32>(0.0);
    var pol_d = vec3<f32>(0.0);
    var pol_fso = vec3<f32>(0.0);
    var pol_invr = 0.0;
    var any_det = false;
    for (var j = 0u; j < np; j++) {
        any_det = any_det | tan_moves(j, TAN_MOVES_DETECTOR);
    }
    // per-pixel sums of the terms' partials by N, a*, b*, c* and default_F
    var sum_n = vec3<f32>(0.0);
    var sum_sa = vec3<f32>(0.0);
    var sum_sb = vec3<f32>(0.0);
    var sum_sc = vec3<f32>(0.0);
    var sum_f = 0.0;
    // H = Σ_terms t ⊗ (h, k, l) by columns: hc_n = Σ t·(h, k, l)_n (TAN_LEFT)
    var hc0 = vec3<f32>(0.0);
    var hc1 = vec3<f32>(0.0);
    var hc2 = vec3<f32>(0.0);
#endif

    for (var t = 0u; t < P.thicksteps; t++) {
        let odet_off = df_mul_f(thickstep, f32(t));
        capture = select(0.0, 1.0, has(FLAG_THICK_ZERO));
        for (var subs = 0u; subs < n; subs++) {
            for (var subf = 0u; subf < n; subf++) {
                let fd = df_mul_f(sub, f32(fpixel * n + subf) + 0.5);
                let sd = df_mul_f(sub, f32(spixel * n + subs) + 0.5);
#ifdef TANGENT
                let pos = df3_add(df3_add(df3_add(df3_scale(fdet, fd), df3_scale(sdet, sd)), df3_scale(odet, odet_off)), pix0);
#else
                var pos = df3_add(df3_add(df3_add(df3_scale(fdet, fd), df3_scale(sdet, sd)), df3_scale(odet, odet_off)), pix0);
                if has(FLAG_CURVED) {
                    // MODEL §3.8: rotations by lab y/distance about s, lab z/distance about f.
                    let a1 = df_div(df3_get(pos, 1u), distance);
                    let a2 = df_div(df3_get(pos, 2u), distance);
                    let beam = df3_from(P.beam_hi, P.beam_lo);
                    let w = df_rotaxis(df3_scale(beam, distance), sdet, df_sincos(a1));
                    pos = df_rotaxis(w, fdet, df_sincos(a2));
                }
#endif
                let r = df_sqrt(df_dot3(pos, pos));
                let inv_r = df_div(vec2<f32>(1.0, 0.0), r);
                let d = df3_scale(pos, inv_r);
                let d32 = d.hi;
#ifdef TANGENT
                // tangents of the direction: pos = f·fdet + s·sdet + o·odet + pix0, d = pos/R
                let f32d = fd.x + fd.y;
                let s32d = sd.x + sd.y;
                let o32d = odet_off.x + odet_off.y;
                let fso = vec3<f32>(f32d, s32d, o32d);
                if omega == 0.0 {
                    let w = solid_angle_d(inv_r.x, P.dist.w, D.close.x, has(FLAG_POINT_PIXEL));
                    omega = w.x;
                    om_w = w.yz;
                    om_d = d32;
                    om_fso = fso;
                }
                if capture == 0.0 {
                    let c = capture_fraction_d(f32(t), P.mu_step, dot(d32, D.odet_hi.xyz));
                    capture = c.x;
                    cap_dy = c.y;
                    cap_d = d32;
                    cap_fso = fso;
                    cap_invr = inv_r.x;
                }
#else
                if omega == 0.0 || ov_omega {
                    omega = solid_angle(inv_r.x, P.dist.w, D.close.x, has(FLAG_POINT_PIXEL));
                }
                if capture == 0.0 || ov_thick {
                    capture = capture_fraction(f32(t), P.mu_step, dot(d32, D.odet_hi.xyz));
                }
#endif
                for (var src = 0u; src < P.n_sources; src++) {
                    let S = sources[src];
                    let inc = S.incident.xyz;
                    if P.dmin > 0.0 {
                        let ql = length(d32 - inc);
                        if ql > 0.0 && ql * (S.incident.w * P.dmin) > 1.0 {
                            continue;
                        }
                    }
#ifdef TANGENT
                    if polar == 0.0 {
                        let pd = polarization_d(P.polar_k, inc, d32, S.e_in.xyz, S.b_in.xyz);
                        polar = pd.x;
                        pol_g = pd.yzw;
                        pol_d = d32;
                        pol_fso = fso;
                        pol_invr = inv_r.x;
                    }
#else
                    if polar == 0.0 || ov_polar {
                        polar = polarization(P.polar_k, inc, d32, S.e_in.xyz, S.b_in.xyz);
                    }
#endif
                    var base = src * P.n_orient;
                    if first_seq {
                        base += P.n_sources * P.n_orient;
                        first_seq = false;
                    }
#ifdef TANGENT
                    // ∂(sum)/∂d over this source's orientations
                    var gd = vec3<f32>(0.0);
#endif
                    for (var o = 0u; o < P.n_orient; o++) {
                        let T = terms[base + o];
                        let h = df_dot3_sub(df3_from(T.h_hi, T.h_lo), d, vec2<f32>(T.h_hi.w, T.h_lo.w));
                        let k = df_dot3_sub(df3_from(T.k_hi, T.k_lo), d, vec2<f32>(T.k_hi.w, T.k_lo.w));
                        let l = df_dot3_sub(df3_from(T.l_hi, T.l_lo), d, vec2<f32>(T.l_hi.w, T.l_lo.w));
                        // A non-finite (or huge) index drops its term (terms.rs INDEX_LIMIT).
                        if !(index_ok(h.x) & index_ok(k.x) & index_ok(l.x)) {
                            continue;
                        }
                        let h0 = nearest_index(h);
                        let k0 = nearest_index(k);
                        let l0 = nearest_index(l);
                        // Exact: h.x and h0 are within one of each other (Sterbenz).
                        let dh = (h.x - h0) + h.y;
                        let dk = (k.x - k0) + k.y;
                        let dl = (l.x - l0) + l.y;

#ifdef TANGENT
                        let delta = vec3<f32>(dh, dk, dl);
                        // F_latt and its partials by (h,k,l), N, a*, b*, c*
                        var f_latt = 0.0;
                        var fl_hkl = vec3<f32>(0.0);
                        var fl_n = vec3<f32>(0.0);
                        var fl_sa = vec3<f32>(0.0);
                        var fl_sb = vec3<f32>(0.0);
                        var fl_sc = vec3<f32>(0.0);
                        var zero = false;
                        if P.shape == SHAPE_SQUARE {
                            exact_bragg = exact_bragg | ((P.na > 1.0) & is_exact_bragg(dh, h0)) | ((P.nb > 1.0) & is_exact_bragg(dk, k0)) | ((P.nc > 1.0) & is_exact_bragg(dl, l0));
                            let ld = lattice_square_d_with(delta, vec3<f32>(h0, k0, l0), nvec, TP.any_n != 0u);
                            f_latt = ld.v;
                            fl_hkl = ld.d_hkl;
                            fl_n = ld.d_n;
                            zero = f_latt == 0.0;
                        } else if P.shape == SHAPE_ROUND {
                            let ld = lattice_round_d(delta, nvec, P.fudge);
                            f_latt = ld.v;
                            fl_hkl = ld.d_hkl;
                            fl_n = ld.d_n;
                            zero = f_latt == 0.0;
                        } else {
                            let rd = shape_r2_d(delta, P.a_star.xyz, P.b_star.xyz, P.c_star.xyz, nvec);
                            var fd3 = vec3<f32>(0.0);
                            if P.shape == SHAPE_GAUSS {
                                fd3 = lattice_gauss_d(rd.r2, nabc, P.fudge);
                                zero = gauss_underflows(rd.r2, P.fudge);
                            } else {
                                fd3 = lattice_tophat_d(rd.r2, nabc, P.fudge);
                                zero = fd3.x == 0.0;
                            }
                            f_latt = fd3.x;
                            fl_hkl = fd3.y * rd.d_hkl;
                            fl_n = fd3.y * rd.d_n + fd3.z * nab;
                            fl_sa = fd3.y * rd.d_star[0];
                            fl_sb = fd3.y * rd.d_star[1];
                            fl_sc = fd3.y * rd.d_star[2];
                        }
#else
                        var f_latt = 0.0;
                        var zero = false;
                        if P.shape == SHAPE_SQUARE {
                            exact_bragg = exact_bragg | ((P.na > 1.0) & is_exact_bragg(dh, h0)) | ((P.nb > 1.0) & is_exact_bragg(dk, k0)) | ((P.nc > 1.0) & is_exact_bragg(dl, l0));
                            f_latt = lattice_square(dh, dk, dl, P.na, P.nb, P.nc);
                            zero = f_latt == 0.0;
                        } else if P.shape == SHAPE_ROUND {
                            f_latt = lattice_round(dh, dk, dl, P.na, P.nb, P.nc, P.fudge);
                            zero = f_latt == 0.0;
                        } else {
                            let r2 = shape_r2(dh, dk, dl, P.a_star.xyz, P.b_star.xyz, P.c_star.xyz, P.na, P.nb, P.nc);
                            if P.shape == SHAPE_GAUSS {
                                f_latt = lattice_gauss(r2, nabc, P.fudge);
                                zero = gauss_underflows(r2, P.fudge);
                            } else {
                                f_latt = lattice_tophat(r2, nabc, P.fudge);
                                zero = f_latt == 0.0;
                            }
                        }
#endif
                        if zero && !no_skip {
                            continue;
                        }

                        // F_cell (and, for the tangents, its partials by (h,k,l) and default_F)
                        var f_cell = P.default_f;
#ifdef TANGENT
                        var fc_hkl = vec3<f32>(0.0);
                        var fc_default = 0.0;
#endif
                        var use_nearest = true;
                        if tricubic {
                            if stencil_leaves_table(g, h, k, l) {
                                atomicMin(&flags[FLAGS_SWITCH], idx);
                                tricubic = false;
                            } else {
                                let hf = df_floor(h);
                                let kf = df_floor(k);
                                let lf = df_floor(l);
#ifdef TANGENT
                                let nh = node_diffs(h, hf);
                                let nk = node_diffs(k, kf);
                                let nl = node_diffs(l, lf);
                                f_cell = f_tricubic(g, hf, kf, lf, nh, nk, nl);
                                fc_hkl = f_tricubic_d(g, hf, kf, lf, nh, nk, nl);
#else
                                f_cell = f_tricubic(g, hf, kf, lf, node_diffs(h, hf), node_diffs(k, kf), node_diffs(l, lf));
#endif
                                use_nearest = false;
                            }
                        }
                        if use_nearest {
                            f_cell = f_nearest(g, P.default_f, h0, k0, l0);
#ifdef TANGENT
                            fc_default = select(0.0, 1.0, tan_f_is_default(g, h0, k0, l0));
#endif
                        }

                        let term = ((f_cell * f_cell) * f_latt) * f_latt;
                        acc = df_add_f(acc, term);
#ifdef TANGENT
                        // T = F_cell²·F_latt²
                        let a_fc = 2.0 * f_cell * f_latt * f_latt;
                        let a_fl = 2.0 * f_cell * f_cell * f_latt;
                        let t_hkl = a_fc * fc_hkl + a_fl * fl_hkl;
                        gd += t_hkl.x * T.h_hi.xyz + t_hkl.y * T.k_hi.xyz + t_hkl.z * T.l_hi.xyz;
                        sum_n += a_fl * fl_n;
                        if any_recip {
                            sum_sa += a_fl * fl_sa;
                            sum_sb += a_fl * fl_sb;
                            sum_sc += a_fl * fl_sc;
                        }
                        sum_f += a_fc * fc_default;
                        if any_left {
                            hc0 += t_hkl * h.x;
                            hc1 += t_hkl * k.x;
                            hc2 += t_hkl * l.x;
                        }
                        // the parameters of no one matrix (the mosaic spread): per term
                        if any_generic {
                            for (var j = 0u; j < np; j++) {
                                if !tan_moves(j, TAN_MOVES_TERMS) {
                                    continue;
                                }
                                let U = terms[TP.block * (1u + TP.params[j].kind.y) + base + o];
                                let dhkl = vec3<f32>(
                                    dot(U.h_hi.xyz, d32) - U.h_hi.w,
                                    dot(U.k_hi.xyz, d32) - U.k_hi.w,
                                    dot(U.l_hi.xyz, d32) - U.l_hi.w,
                                );
                                di[j] += dot(t_hkl, dhkl);
                            }
                        }
#else
                        if ov_thick {
                            acc = df_mul_f(acc, capture);
                        }
                        if ov_polar {
                            acc = df_mul_f(acc, polar);
                        }
                        if ov_omega {
                            acc = df_mul_f(acc, omega);
                        }
#endif
                    }
#ifdef TANGENT
                    // the detector parameters move d: dh = A·dd, Σ g·dd = w·dpos (contracted at
                    // the end); TAN_RIGHT: dh = A·(K q), Σ g·(K q) = Σ_mn K_mn G_mn
                    if any_det {
                        let wv = (gd - d32 * dot(d32, gd)) * inv_r.x;
                        wf += f32d * wv;
                        ws += s32d * wv;
                        wo += o32d * wv;
                        w1 += wv;
                    }
                    if any_right {
                        let q = d32 - inc;
                        gr0 += gd.x * q;
                        gr1 += gd.y * q;
                        gr2 += gd.z * q;
                    }
#endif
                }
            }
        }
    }

    let scaled = df_mul_f(acc, P.scale);
#ifdef TANGENT
    let base_val = scaled.x + scaled.y;
    let acc32 = acc.x + acc.y;
    image[idx] = ((base_val * capture) * polar) * omega;
    for (var j = 0u; j < np; j++) {
        let tp = TP.params[j];
        var dsum = tp.misc.z + tp.misc.w * sum_f + dot(sum_n, tp.dn.xyz);
        if any_generic && (tp.kind.x & TAN_MOVES_TERMS) != 0u {
            dsum += di[j];
        }
        if any_left && (tp.kind.x & TAN_LEFT) != 0u {
            dsum += dot(tp.m0.xyz, hc0) + dot(tp.m1.xyz, hc1) + dot(tp.m2.xyz, hc2);
        }
        if any_right && (tp.kind.x & TAN_RIGHT) != 0u {
            dsum += dot(tp.m0.xyz, gr0) + dot(tp.m1.xyz, gr1) + dot(tp.m2.xyz, gr2);
        }
        var domega = 0.0;
        var dcap = 0.0;
        var dpolar = 0.0;
        if (tp.kind.x & TAN_MOVES_DETECTOR) != 0u {
            dsum += dot(wf, tp.dfdet.xyz) + dot(ws, tp.dsdet.xyz) + dot(wo, tp.dodet.xyz) + dot(w1, tp.dpix0.xyz);
            domega = om_w.x * dot(om_d, tan_dpos(j, om_fso)) + om_w.y * tp.misc.x;
            let ddc = tan_dd(j, cap_d, cap_fso, cap_invr);
            dcap = cap_dy * (dot(ddc, D.odet_hi.xyz) + dot(cap_d, tp.dodet.xyz));
            dpolar = dot(pol_g, tan_dd(j, pol_d, pol_fso, pol_invr));
        }
        if any_recip {
            dsum += dot(sum_sa, tp.da_star.xyz) + dot(sum_sb, tp.db_star.xyz) + dot(sum_sc, tp.dc_star.xyz);
        }
        let dbase = tp.misc.y * acc32 + P.scale * dsum;
        image[(j + 1u) * npx + idx] = dbase * capture * polar * omega + base_val * (dcap * polar * omega + capture * dpolar * omega + capture * polar * domega);
    }
#else
    var val = scaled.x + scaled.y;
    if !ov_thick {
        val *= capture;
    }
    if !ov_polar {
        val *= polar;
    }
    if !ov_omega {
        val *= omega;
    }
    image[idx] = val;
#endif
    if exact_bragg {
        atomicOr(&flags[FLAGS_HEADER_WORDS + (idx >> 5u)], 1u << (idx & 31u));
    }
}
