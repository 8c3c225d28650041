// nanoBragg per-pixel kernel (MODEL §6.2). One invocation per pixel; the host splits the image
// into tiles of rows (or of pixels within a row when one row is too much work) (`Chunk`).
// Preceded by shared/df64.wgsl and shared/terms.wgsl (concatenated by the host).
//
// Precision (MODEL §9): the chain pixel -> pos -> R -> d -> h,k,l is df64; h = A.d - c with
// A = a/lambda and c = (a.i)/lambda precomputed per (source, orientation) on the host in f64.
// Every factor is a function of shared/terms.wgsl (the twin of crate/src/terms.rs); the
// per-pixel sum is df64.
//
// The structs and constants below must be kept in sync with crate/src/gpu/layout.rs (checked by
// crate/tests/gpu_layout.rs through naga reflection).

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

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let fpixel = C.col0 + gid.x;
    let spixel = C.row0 + gid.y;
    if gid.x >= C.cols || gid.y >= C.rows || fpixel >= P.fpixels || spixel >= P.spixels {
        return;
    }
    let idx = spixel * P.fpixels + fpixel;
    if fpixel < P.roi_xmin || fpixel > P.roi_xmax || spixel < P.roi_ymin || spixel > P.roi_ymax {
        image[idx] = 0.0;
        return;
    }
    if has(FLAG_MASK) {
        let m = (mask[idx >> 2u] >> ((idx & 3u) * 8u)) & 0xffu;
        if m == 0u {
            image[idx] = 0.0;
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
        image[idx] = 0.0;
        return;
    }
    let D = panels[panel];

    let ov_thick = has(FLAG_OVERSAMPLE_THICK);
    let ov_polar = has(FLAG_OVERSAMPLE_POLAR);
    let ov_omega = has(FLAG_OVERSAMPLE_OMEGA);
    let no_skip = has(FLAG_WATER);
    let n = P.oversample;
    let pix0 = df3_from(D.pix0_hi, D.pix0_lo);
    let fdet = df3_from(D.fdet_hi, D.fdet_lo);
    let sdet = df3_from(D.sdet_hi, D.sdet_lo);
    let odet = df3_from(D.odet_hi, D.odet_lo);
    let sub = P.sub_thick.xy;
    let thickstep = P.sub_thick.zw;
    let distance = P.dist.xy;
    let nabc = (P.na * P.nb) * P.nc;
    let g = hkl_box();

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

    for (var t = 0u; t < P.thicksteps; t++) {
        let odet_off = df_mul_f(thickstep, f32(t));
        capture = select(0.0, 1.0, has(FLAG_THICK_ZERO));
        for (var subs = 0u; subs < n; subs++) {
            for (var subf = 0u; subf < n; subf++) {
                let fd = df_mul_f(sub, f32(fpixel * n + subf) + 0.5);
                let sd = df_mul_f(sub, f32(spixel * n + subs) + 0.5);
                var pos = df3_add(df3_add(df3_add(df3_scale(fdet, fd), df3_scale(sdet, sd)), df3_scale(odet, odet_off)), pix0);
                if has(FLAG_CURVED) {
                    // MODEL §3.8: rotations by lab y/distance about s, lab z/distance about f.
                    let a1 = df_div(df3_get(pos, 1u), distance);
                    let a2 = df_div(df3_get(pos, 2u), distance);
                    let beam = df3_from(P.beam_hi, P.beam_lo);
                    let w = df_rotaxis(df3_scale(beam, distance), sdet, df_sincos(a1));
                    pos = df_rotaxis(w, fdet, df_sincos(a2));
                }
                let r = df_sqrt(df_dot3(pos, pos));
                let inv_r = df_div(vec2<f32>(1.0, 0.0), r);
                let d = df3_scale(pos, inv_r);
                let d32 = d.hi;
                if omega == 0.0 || ov_omega {
                    omega = solid_angle(inv_r.x, P.dist.w, D.close.x, has(FLAG_POINT_PIXEL));
                }
                if capture == 0.0 || ov_thick {
                    capture = capture_fraction(f32(t), P.mu_step, dot(d32, D.odet_hi.xyz));
                }
                for (var src = 0u; src < P.n_sources; src++) {
                    let S = sources[src];
                    let inc = S.incident.xyz;
                    if P.dmin > 0.0 {
                        let ql = length(d32 - inc);
                        if ql > 0.0 && ql * (S.incident.w * P.dmin) > 1.0 {
                            continue;
                        }
                    }
                    if polar == 0.0 || ov_polar {
                        polar = polarization(P.polar_k, inc, d32, S.e_in.xyz, S.b_in.xyz);
                    }
                    var base = src * P.n_orient;
                    if first_seq {
                        base += P.n_sources * P.n_orient;
                        first_seq = false;
                    }
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
                        if zero && !no_skip {
                            continue;
                        }

                        var f_cell = P.default_f;
                        var use_nearest = true;
                        if tricubic {
                            if stencil_leaves_table(g, h, k, l) {
                                atomicMin(&flags[FLAGS_SWITCH], idx);
                                tricubic = false;
                            } else {
                                let hf = df_floor(h);
                                let kf = df_floor(k);
                                let lf = df_floor(l);
                                f_cell = f_tricubic(g, hf, kf, lf, node_diffs(h, hf), node_diffs(k, kf), node_diffs(l, lf));
                                use_nearest = false;
                            }
                        }
                        if use_nearest {
                            f_cell = f_nearest(g, P.default_f, h0, k0, l0);
                        }

                        let term = ((f_cell * f_cell) * f_latt) * f_latt;
                        acc = df_add_f(acc, term);
                        if ov_thick {
                            acc = df_mul_f(acc, capture);
                        }
                        if ov_polar {
                            acc = df_mul_f(acc, polar);
                        }
                        if ov_omega {
                            acc = df_mul_f(acc, omega);
                        }
                    }
                }
            }
        }
    }

    let scaled = df_mul_f(acc, P.scale);
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
    if exact_bragg {
        atomicOr(&flags[FLAGS_HEADER_WORDS + (idx >> 5u)], 1u << (idx & 31u));
    }
}
