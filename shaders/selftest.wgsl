// Self-test entry point for the df64 building blocks (preceded by shared/df64.wgsl). Each case
// reads four vec4 inputs and writes one vec4; `op` selects the function. Run by
// crate/src/gpu/selftest.rs at device creation (fma detection) and by crate/tests/gpu_selftest.rs.

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
        default: {}
    }
    outputs[i] = r;
}
