// Self-test entry point for the df64 building blocks and the term functions (preceded by
// shared/df64.wgsl and shared/terms.wgsl). Each case reads four vec4 inputs and writes one vec4;
// `op` selects the function; the structure-factor lookups read `table`. Run by
// crate/src/gpu/selftest.rs at device creation (fma detection) and by crate/tests/gpu_selftest.rs
// (each op against its Rust twin). The OP_* values are `selftest::Op` (checked by
// crate/tests/gpu_layout.rs).

// Keep in sync with `layout::SelfTestParams`.
struct SelfTestParams {
    op: u32,
    count: u32,
    // Always 0: the optimisation barriers of shared/df64.wgsl (df_zero_a/b).
    zero_a: u32,
    zero_b: u32,
}

fn df_zero_a() -> u32 {
    return T.zero_a;
}

fn df_zero_b() -> u32 {
    return T.zero_b;
}

@group(0) @binding(0) var<uniform> T: SelfTestParams;
@group(0) @binding(1) var<storage, read> inputs: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> outputs: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> table: array<f32>;

fn hkl_value(i: u32) -> f32 {
    return table[i];
}

// A table box from two input vectors: lo = a.xyz, range = b.xyz (integers held in floats),
// present = a.w != 0.
fn box_of(a: vec4<f32>, b: vec4<f32>) -> HklBox {
    return HklBox(vec3<i32>(a.xyz), vec3<i32>(b.xyz), a.w != 0.0);
}

fn flag(b: bool) -> f32 {
    return select(0.0, 1.0, b);
}

const OP_TWO_SUM: u32 = 0u;
const OP_TWO_PROD_FMA: u32 = 1u;
const OP_TWO_PROD_SPLIT: u32 = 2u;
const OP_TWO_PROD: u32 = 3u;
const OP_DF_ADD: u32 = 4u;
const OP_DF_MUL: u32 = 5u;
const OP_DF_DIV: u32 = 6u;
const OP_DF_SQRT: u32 = 7u;
const OP_DF_DOT3_SUB: u32 = 8u;
const OP_SINPI_COSPI: u32 = 9u;
const OP_DF_SINCOS: u32 = 10u;
const OP_QUICK_TWO_SUM: u32 = 11u;
const OP_TWO_SUM_NEG_PRODUCT: u32 = 12u;
const OP_TWO_SUM_NEG_TWO_PROD: u32 = 13u;
const OP_GRATING: u32 = 14u;
const OP_LATTICE_SQUARE: u32 = 15u;
const OP_LATTICE_ROUND: u32 = 16u;
const OP_SHAPE_R2: u32 = 17u;
const OP_POLARIZATION: u32 = 18u;
const OP_CAPTURE_SOLID_ANGLE: u32 = 19u;
const OP_GUARDS: u32 = 20u;
const OP_F_NEAREST: u32 = 21u;
const OP_F_TRICUBIC: u32 = 22u;
const OP_POLINT4: u32 = 23u;
const OP_GRATING_D: u32 = 24u;
const OP_LATTICE_SQUARE_D: u32 = 25u;
const OP_LATTICE_ROUND_D: u32 = 26u;
const OP_SHAPE_R2_D: u32 = 27u;
const OP_GAUSS_TOPHAT_D: u32 = 28u;
const OP_POLARIZATION_D: u32 = 29u;
const OP_CAPTURE_SOLID_ANGLE_D: u32 = 30u;
const OP_F_TRICUBIC_D: u32 = 31u;
const OP_POLINT4_D: u32 = 32u;

// One part of a lattice factor's derivatives: (value, dF/d delta) for part 0, (value, dF/dN) else.
fn lattice_part(l: LatticeD, part: f32) -> vec4<f32> {
    if part == 0.0 {
        return vec4<f32>(l.v, l.d_hkl);
    }
    return vec4<f32>(l.v, l.d_n);
}

@compute @workgroup_size(64, 1, 1)
fn selftest(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= T.count {
        return;
    }
    let a = inputs[4u * i];
    let b = inputs[4u * i + 1u];
    let c = inputs[4u * i + 2u];
    let d = inputs[4u * i + 3u];
    var r = vec4<f32>(0.0);
    switch T.op {
        case OP_TWO_SUM: {
            r = vec4<f32>(two_sum(a.x, a.y), 0.0, 0.0);
        }
        case OP_QUICK_TWO_SUM: {
            r = vec4<f32>(quick_two_sum(a.x, a.y), 0.0, 0.0);
        }
        case OP_TWO_PROD_FMA: {
            r = vec4<f32>(two_prod_fma(a.x, a.y), 0.0, 0.0);
        }
        case OP_TWO_PROD_SPLIT: {
            r = vec4<f32>(two_prod_split(a.x, a.y), 0.0, 0.0);
        }
        case OP_TWO_PROD: {
            r = vec4<f32>(two_prod(a.x, a.y), 0.0, 0.0);
        }
        case OP_DF_ADD: {
            r = vec4<f32>(df_add(a.xy, a.zw), 0.0, 0.0);
        }
        case OP_DF_MUL: {
            r = vec4<f32>(df_mul(a.xy, a.zw), 0.0, 0.0);
        }
        case OP_DF_DIV: {
            r = vec4<f32>(df_div(a.xy, a.zw), 0.0, 0.0);
        }
        case OP_DF_SQRT: {
            r = vec4<f32>(df_sqrt(a.xy), 0.0, 0.0);
        }
        case OP_DF_DOT3_SUB: {
            // x = (a.xyz hi, b.xyz lo), y = (c.xyz hi, d.xyz lo), subtrahend (a.w, b.w).
            let x = Df3(a.xyz, b.xyz);
            let y = Df3(c.xyz, d.xyz);
            r = vec4<f32>(df_dot3_sub(x, y, vec2<f32>(a.w, b.w)), 0.0, 0.0);
        }
        case OP_SINPI_COSPI: {
            r = vec4<f32>(sinpi(a.x), cospi(a.x), 0.0, 0.0);
        }
        case OP_DF_SINCOS: {
            let sc = df_sincos(a.xy);
            r = vec4<f32>(sc[0], sc[1]);
        }
        case OP_TWO_SUM_NEG_PRODUCT: {
            // Contraction guard: the raw product must not be fused into the sum.
            r = vec4<f32>(two_sum(-a.x, a.y * a.z), 0.0, 0.0);
        }
        case OP_TWO_SUM_NEG_TWO_PROD: {
            let p = two_prod(a.y, a.z);
            r = vec4<f32>(two_sum(-a.x, p.x), p);
        }
        case OP_GRATING: {
            // (d, N) -> (numerator, denominator, sincg_delta, sinc3_pi(d))
            let p = grating_parts(a.x, a.y);
            r = vec4<f32>(p, sincg_delta(a.x, a.y), sinc3_pi(a.x));
        }
        case OP_LATTICE_SQUARE: {
            // deltas a.xyz, N b.xyz
            r = vec4<f32>(lattice_square(a.x, a.y, a.z, b.x, b.y, b.z), 0.0, 0.0, 0.0);
        }
        case OP_LATTICE_ROUND: {
            // deltas a.xyz, N b.xyz, fudge b.w
            r = vec4<f32>(lattice_round(a.x, a.y, a.z, b.x, b.y, b.z, b.w), 0.0, 0.0, 0.0);
        }
        case OP_SHAPE_R2: {
            // deltas a.xyz, fudge a.w; a* b.xyz, Na b.w; b* c.xyz, Nb c.w; c* d.xyz, Nc d.w
            let r2 = shape_r2(a.x, a.y, a.z, b.xyz, c.xyz, d.xyz, b.w, c.w, d.w);
            let nabc = (b.w * c.w) * d.w;
            r = vec4<f32>(r2, lattice_gauss(r2, nabc, a.w), flag(gauss_underflows(r2, a.w)), lattice_tophat(r2, nabc, a.w));
        }
        case OP_POLARIZATION: {
            // i a.xyz, k a.w, d b.xyz, E_in c.xyz, B_in d.xyz
            r = vec4<f32>(polarization(a.w, a.xyz, b.xyz, c.xyz, d.xyz), 0.0, 0.0, 0.0);
        }
        case OP_CAPTURE_SOLID_ANGLE: {
            // (t, mu_step, rho) a.xyz; (inv_r, pixel^2, close_distance, point_pixel) b
            r = vec4<f32>(capture_fraction(a.x, a.y, a.z), one_minus_exp_neg(a.y), solid_angle(b.x, b.y, b.z, b.w != 0.0), 0.0);
        }
        case OP_GUARDS: {
            // (h, delta, nearest, x) -> (index_ok(h), is_exact_bragg(delta, nearest), round_even(x), sinpi(x))
            r = vec4<f32>(flag(index_ok(a.x)), flag(is_exact_bragg(a.y, a.z)), round_even(a.w), sinpi(a.w));
        }
        case OP_F_NEAREST: {
            // (h0, k0, l0, default_F) a; box lo b.xyz, present b.w; range c.xyz
            r = vec4<f32>(f_nearest(box_of(b, c), a.w, a.x, a.y, a.z), 0.0, 0.0, 0.0);
        }
        case OP_F_TRICUBIC: {
            // df64 (h, k, l): hi a.xyz, lo b.xyz; box lo c.xyz, present c.w; range d.xyz
            // -> (F or 0, stencil leaves the table)
            let g = box_of(c, d);
            let h = vec2<f32>(a.x, b.x);
            let k = vec2<f32>(a.y, b.y);
            let l = vec2<f32>(a.z, b.z);
            let leaves = stencil_leaves_table(g, h, k, l);
            var f = 0.0;
            if !leaves {
                let hf = df_floor(h);
                let kf = df_floor(k);
                let lf = df_floor(l);
                f = f_tricubic(g, hf, kf, lf, node_diffs(h, hf), node_diffs(k, kf), node_diffs(l, lf));
            }
            r = vec4<f32>(f, flag(leaves), 0.0, 0.0);
        }
        case OP_POLINT4: {
            r = vec4<f32>(polint4(a, b), 0.0, 0.0, 0.0);
        }
        case OP_GRATING_D: {
            // (d, N, m, y) -> (sincg_delta_d(d, N, m), sinc3_pi_d_over_x(y))
            r = vec4<f32>(sincg_delta_d(a.x, a.y, a.z), sinc3_pi_d_over_x(a.w));
        }
        case OP_LATTICE_SQUARE_D: {
            // deltas a.xyz, nearest integers b.xyz, N c.xyz, part d.w; d.z = 1: without d/dN
            // (lattice_square_d_with)
            r = lattice_part(lattice_square_d_with(a.xyz, b.xyz, c.xyz, d.z == 0.0), d.w);
        }
        case OP_LATTICE_ROUND_D: {
            // deltas a.xyz, fudge a.w, N c.xyz, part d.w
            r = lattice_part(lattice_round_d(a.xyz, c.xyz, a.w), d.w);
        }
        case OP_SHAPE_R2_D: {
            // deltas a.xyz, part a.w; a* b.xyz, Na b.w; b* c.xyz, Nb c.w; c* d.xyz, Nc d.w
            let s = shape_r2_d(a.xyz, b.xyz, c.xyz, d.xyz, vec3<f32>(b.w, c.w, d.w));
            var v = s.d_hkl;
            if a.w == 1.0 {
                v = s.d_n;
            } else if a.w >= 2.0 {
                v = s.d_star[i32(a.w) - 2];
            }
            r = vec4<f32>(s.r2, v);
        }
        case OP_GAUSS_TOPHAT_D: {
            // (r2, nabc, fudge, 0 Gauss / 1 top hat)
            if a.w == 0.0 {
                r = vec4<f32>(lattice_gauss_d(a.x, a.y, a.z), 0.0);
            } else {
                r = vec4<f32>(lattice_tophat_d(a.x, a.y, a.z), 0.0);
            }
        }
        case OP_POLARIZATION_D: {
            // as OP_POLARIZATION -> (P, dP/dd)
            r = polarization_d(a.w, a.xyz, b.xyz, c.xyz, d.xyz);
        }
        case OP_CAPTURE_SOLID_ANGLE_D: {
            // (t, mu_step, rho, 0) -> (capture_fraction_d, 0, 0); (inv_r, pixel^2, close, point) b
            // with a.w = 1 -> (solid_angle_d, 0)
            if a.w == 0.0 {
                r = vec4<f32>(capture_fraction_d(a.x, a.y, a.z), 0.0, 0.0);
            } else {
                r = vec4<f32>(solid_angle_d(b.x, b.y, b.z, b.w != 0.0), 0.0);
            }
        }
        case OP_F_TRICUBIC_D: {
            // as OP_F_TRICUBIC -> (dF/dh, dF/dk, dF/dl or 0, stencil leaves the table)
            let g = box_of(c, d);
            let h = vec2<f32>(a.x, b.x);
            let k = vec2<f32>(a.y, b.y);
            let l = vec2<f32>(a.z, b.z);
            let leaves = stencil_leaves_table(g, h, k, l);
            var gr = vec3<f32>(0.0);
            if !leaves {
                let hf = df_floor(h);
                let kf = df_floor(k);
                let lf = df_floor(l);
                gr = f_tricubic_d(g, hf, kf, lf, node_diffs(h, hf), node_diffs(k, kf), node_diffs(l, lf));
            }
            r = vec4<f32>(gr, flag(leaves));
        }
        case OP_POLINT4_D: {
            r = vec4<f32>(polint4_d(a, b), 0.0, 0.0, 0.0);
        }
        default: {}
    }
    outputs[i] = r;
}
