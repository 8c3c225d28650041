// nanoBragg tangent kernel (MODEL §10): the pixel's value as the image kernel `main` computes it
// (the same df64 chain, the same terms, the same order: its image is `main`'s to the bit) and, in
// the same pass, its derivative with respect to each parameter of a pass (`TanParams`, at most
// MAX_TAN_PARAMS), in f32, from the term derivatives of shared/terms.wgsl (`*_d`, the twins of
// terms.rs). The chain mirrors crate/src/cpu/tangent.rs (f64) and crate/src/cpu/tangent32.rs
// (its f32 CPU mirror): per term the term's partials with respect to its own inputs (h, k, l,
// N, a*, F); ∂T/∂(h,k,l) summed along the term's A = axis/λ into g = ∂I/∂d (contracted with the
// direction's tangent dd once per (sub-pixel, source) for the detector parameters). The
// parameters that move the terms (orientation table, wavelength) enter in one of three forms
// (gpu/layout.rs TermForm, chosen by the host): TAN_RIGHT (dA = A·K for every term: rotations)
// once per (sub-pixel, source) as g·(K q), q = d − i; TAN_LEFT (dA = C·A: the cell, the
// wavelength) once per pixel as Σ C_mn H_mn with H = Σ_terms t ⊗ (h, k, l); TAN_MOVES_TERMS
// (anything else: the mosaic spread) per term with dh = dA·d − dc from the term tangents that
// follow the image's terms in `terms` (gpu/layout.rs pack_tangent). N, a*, default_F and the
// scale once per pixel; then the first-value factors (Ω, polarisation, capture) by the product
// rule.
//
// Follows shared/df64.wgsl, shared/terms.wgsl and nanobragg.wgsl in one module (their structs,
// bindings and helpers; crate/src/gpu/shaders.rs tangent_source). `image` (binding 6) holds
// 1 + TP.count planes of P.fpixels * P.spixels values: the image, then one tangent image per
// parameter. The structs and constants below are mirrored by crate/src/gpu/layout.rs (checked by
// crate/tests/gpu_layout.rs). Not followed (refused by the host): -curved_det and the
// -oversample_* running sums.

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
    _pad0: u32,
    _pad1: u32,
    params: array<TanParam, 24>,
}

@group(0) @binding(9) var<uniform> TP: TanParams;

fn tan_moves(j: u32, bit: u32) -> bool {
    return (TP.params[j].kind.x & bit) != 0u;
}

// Every plane of pixel idx is 0 (outside the ROI, masked, or on no panel).
fn tan_zero(idx: u32, npx: u32) {
    for (var j = 0u; j <= TP.count; j++) {
        image[j * npx + idx] = 0.0;
    }
}

// Whether f_nearest returns default_F at (h0, k0, l0) (terms.rs f_nearest_is_default): its
// derivative with respect to default_F is 1 there, 0 elsewhere.
fn tan_f_is_default(g: HklBox, h0: f32, k0: f32, l0: f32) -> bool {
    return !(g.present && within(h0, g.lo.x, g.lo.x + g.range.x - 1) && within(k0, g.lo.y, g.lo.y + g.range.y - 1) && within(l0, g.lo.z, g.lo.z + g.range.z - 1));
}

@compute @workgroup_size(8, 8, 1)
fn tangent(@builtin(global_invocation_id) gid: vec3<u32>) {
    let fpixel = C.col0 + gid.x;
    let spixel = C.row0 + gid.y;
    if gid.x >= C.cols || gid.y >= C.rows || fpixel >= P.fpixels || spixel >= P.spixels {
        return;
    }
    let npx = P.fpixels * P.spixels;
    let np = TP.count;
    let idx = spixel * P.fpixels + fpixel;
    if fpixel < P.roi_xmin || fpixel > P.roi_xmax || spixel < P.roi_ymin || spixel > P.roi_ymax {
        tan_zero(idx, npx);
        return;
    }
    if has(FLAG_MASK) {
        let m = (mask[idx >> 2u] >> ((idx & 3u) * 8u)) & 0xffu;
        if m == 0u {
            tan_zero(idx, npx);
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
        tan_zero(idx, npx);
        return;
    }
    let D = panels[panel];

    let no_skip = has(FLAG_WATER);
    let n = P.oversample;
    let pix0 = df3_from(D.pix0_hi, D.pix0_lo);
    let fdet = df3_from(D.fdet_hi, D.fdet_lo);
    let sdet = df3_from(D.sdet_hi, D.sdet_lo);
    let odet = df3_from(D.odet_hi, D.odet_lo);
    let sub = P.sub_thick.xy;
    let thickstep = P.sub_thick.zw;
    let nabc = (P.na * P.nb) * P.nc;
    let nvec = vec3<f32>(P.na, P.nb, P.nc);
    let nab = vec3<f32>(P.nb * P.nc, P.na * P.nc, P.na * P.nb);
    let g = hkl_box();
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

    var acc = vec2<f32>(P.i_bg, 0.0);
    var polar = select(0.0, 1.0, has(FLAG_NOPOLAR));
    var omega = 0.0;
    var capture = 1.0;
    var first_seq = idx == P.first_pixel;
    var tricubic = P.interp == INTERP_TRICUBIC && idx <= C.switch_pixel;
    var exact_bragg = false;
    // per parameter: the sum's tangent, the first-value factors' tangents, the direction's
    // tangent of the current sub-pixel (function-scope variables start at zero)
    var di: array<f32, 24>;
    var domega: array<f32, 24>;
    var dcap: array<f32, 24>;
    var dpolar: array<f32, 24>;
    var dd: array<vec3<f32>, 24>;
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

    for (var t = 0u; t < P.thicksteps; t++) {
        let odet_off = df_mul_f(thickstep, f32(t));
        capture = select(0.0, 1.0, has(FLAG_THICK_ZERO));
        for (var subs = 0u; subs < n; subs++) {
            for (var subf = 0u; subf < n; subf++) {
                let fd = df_mul_f(sub, f32(fpixel * n + subf) + 0.5);
                let sd = df_mul_f(sub, f32(spixel * n + subs) + 0.5);
                let pos = df3_add(df3_add(df3_add(df3_scale(fdet, fd), df3_scale(sdet, sd)), df3_scale(odet, odet_off)), pix0);
                let r = df_sqrt(df_dot3(pos, pos));
                let inv_r = df_div(vec2<f32>(1.0, 0.0), r);
                let d = df3_scale(pos, inv_r);
                let d32 = d.hi;
                // tangents of the direction: pos = f·fdet + s·sdet + o·odet + pix0, d = pos/R
                let f32d = fd.x + fd.y;
                let s32d = sd.x + sd.y;
                let o32d = odet_off.x + odet_off.y;
                let first_omega = omega == 0.0;
                var w = vec3<f32>(0.0);
                if first_omega {
                    w = solid_angle_d(inv_r.x, P.dist.w, D.close.x, has(FLAG_POINT_PIXEL));
                    omega = w.x;
                }
                for (var j = 0u; j < np; j++) {
                    if !tan_moves(j, TAN_MOVES_DETECTOR) {
                        continue;
                    }
                    let tp = TP.params[j];
                    let dpos = f32d * tp.dfdet.xyz + s32d * tp.dsdet.xyz + o32d * tp.dodet.xyz + tp.dpix0.xyz;
                    let dr = dot(d32, dpos);
                    dd[j] = (dpos - d32 * dr) * inv_r.x;
                    if first_omega {
                        domega[j] = w.y * dr + w.z * tp.misc.x;
                    }
                }
                if capture == 0.0 {
                    let c = capture_fraction_d(f32(t), P.mu_step, dot(d32, D.odet_hi.xyz));
                    capture = c.x;
                    for (var j = 0u; j < np; j++) {
                        dcap[j] = 0.0;
                        if tan_moves(j, TAN_MOVES_DETECTOR) {
                            let drho = dot(dd[j], D.odet_hi.xyz) + dot(d32, TP.params[j].dodet.xyz);
                            dcap[j] = c.y * drho;
                        }
                    }
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
                    if polar == 0.0 {
                        let pd = polarization_d(P.polar_k, inc, d32, S.e_in.xyz, S.b_in.xyz);
                        polar = pd.x;
                        for (var j = 0u; j < np; j++) {
                            if tan_moves(j, TAN_MOVES_DETECTOR) {
                                dpolar[j] = dot(pd.yzw, dd[j]);
                            }
                        }
                    }
                    var base = src * P.n_orient;
                    if first_seq {
                        base += P.n_sources * P.n_orient;
                        first_seq = false;
                    }
                    // ∂(sum)/∂d over this source's orientations
                    var gd = vec3<f32>(0.0);
                    for (var o = 0u; o < P.n_orient; o++) {
                        let T = terms[base + o];
                        let h = df_dot3_sub(df3_from(T.h_hi, T.h_lo), d, vec2<f32>(T.h_hi.w, T.h_lo.w));
                        let k = df_dot3_sub(df3_from(T.k_hi, T.k_lo), d, vec2<f32>(T.k_hi.w, T.k_lo.w));
                        let l = df_dot3_sub(df3_from(T.l_hi, T.l_lo), d, vec2<f32>(T.l_hi.w, T.l_lo.w));
                        if !(index_ok(h.x) & index_ok(k.x) & index_ok(l.x)) {
                            continue;
                        }
                        let h0 = nearest_index(h);
                        let k0 = nearest_index(k);
                        let l0 = nearest_index(l);
                        let dh = (h.x - h0) + h.y;
                        let dk = (k.x - k0) + k.y;
                        let dl = (l.x - l0) + l.y;
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
                            let ld = lattice_square_d(delta, vec3<f32>(h0, k0, l0), nvec);
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
                        if zero && !no_skip {
                            continue;
                        }

                        // F_cell and its partials by (h,k,l) and default_F
                        var f_cell = P.default_f;
                        var fc_hkl = vec3<f32>(0.0);
                        var fc_default = 0.0;
                        var use_nearest = true;
                        if tricubic {
                            if stencil_leaves_table(g, h, k, l) {
                                atomicMin(&flags[FLAGS_SWITCH], idx);
                                tricubic = false;
                            } else {
                                let hf = df_floor(h);
                                let kf = df_floor(k);
                                let lf = df_floor(l);
                                let nh = node_diffs(h, hf);
                                let nk = node_diffs(k, kf);
                                let nl = node_diffs(l, lf);
                                f_cell = f_tricubic(g, hf, kf, lf, nh, nk, nl);
                                fc_hkl = f_tricubic_d(g, hf, kf, lf, nh, nk, nl);
                                use_nearest = false;
                            }
                        }
                        if use_nearest {
                            f_cell = f_nearest(g, P.default_f, h0, k0, l0);
                            fc_default = select(0.0, 1.0, tan_f_is_default(g, h0, k0, l0));
                        }

                        let term = ((f_cell * f_cell) * f_latt) * f_latt;
                        acc = df_add_f(acc, term);
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
                        for (var j = 0u; j < np; j++) {
                            if !any_generic || !tan_moves(j, TAN_MOVES_TERMS) {
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
                    // the detector parameters move d: dh = A·dd; TAN_RIGHT: dh = A·(K q)
                    let q = d32 - inc;
                    for (var j = 0u; j < np; j++) {
                        if tan_moves(j, TAN_MOVES_DETECTOR) {
                            di[j] += dot(gd, dd[j]);
                        }
                        if any_right && tan_moves(j, TAN_RIGHT) {
                            let tp = TP.params[j];
                            di[j] += dot(gd, vec3<f32>(dot(tp.m0.xyz, q), dot(tp.m1.xyz, q), dot(tp.m2.xyz, q)));
                        }
                    }
                }
            }
        }
    }

    let scaled = df_mul_f(acc, P.scale);
    let base_val = scaled.x + scaled.y;
    let acc32 = acc.x + acc.y;
    image[idx] = ((base_val * capture) * polar) * omega;
    for (var j = 0u; j < np; j++) {
        let tp = TP.params[j];
        var dsum = di[j] + tp.misc.z + tp.misc.w * sum_f + dot(sum_n, tp.dn.xyz);
        if any_left && (tp.kind.x & TAN_LEFT) != 0u {
            dsum += dot(tp.m0.xyz, hc0) + dot(tp.m1.xyz, hc1) + dot(tp.m2.xyz, hc2);
        }
        if any_recip {
            dsum += dot(sum_sa, tp.da_star.xyz) + dot(sum_sb, tp.db_star.xyz) + dot(sum_sc, tp.dc_star.xyz);
        }
        let dbase = tp.misc.y * acc32 + P.scale * dsum;
        image[(j + 1u) * npx + idx] = dbase * capture * polar * omega + base_val * (dcap[j] * polar * omega + capture * dpolar[j] * omega + capture * polar * domega[j]);
    }
    if exact_bragg {
        atomicOr(&flags[FLAGS_HEADER_WORDS + (idx >> 5u)], 1u << (idx & 31u));
    }
}
