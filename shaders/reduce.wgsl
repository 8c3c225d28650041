// The vector–Jacobian product's reduction on the GPU (MODEL §10.6; crate/src/gpu/tangent.rs
// GpuRenderer::render_vjp): after a tangent pass, Σ_i w_i · tangent_j(i) per workgroup, for each
// parameter j of the pass, so that only the image and the partial sums come back to the host
// (which adds the partials in f64, in index order). A workgroup covers 256 · `per` consecutive
// pixels; each invocation sums its `per` of them (stride 256) in order, and the workgroup's 256
// values are added by a fixed tree: the result does not depend on scheduling. Its own module and bind group; the struct below is mirrored by
// crate/src/gpu/layout.rs `ReduceParams` (checked by crate/tests/gpu_layout.rs).

const REDUCE_WG: u32 = 256u;

// Keep in sync with `layout::ReduceParams`.
struct ReduceParams {
    // pixels per plane
    pixels: u32,
    // pixels per invocation (256 apart)
    per: u32,
    // workgroups per parameter (partials per parameter)
    groups: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> R: ReduceParams;
// the tangent kernel's output: the image, then one plane per parameter
@group(0) @binding(1) var<storage, read> planes: array<f32>;
@group(0) @binding(2) var<storage, read> weights: array<f32>;
// parameter-major: partials[j * R.groups + workgroup]
@group(0) @binding(3) var<storage, read_write> partials: array<f32>;

var<workgroup> part: array<f32, REDUCE_WG>;

@compute @workgroup_size(256, 1, 1)
fn reduce(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) l: u32) {
    let j = wg.y;
    let plane = (1u + j) * R.pixels;
    let start = wg.x * REDUCE_WG * R.per + l;
    var s = 0.0;
    for (var k = 0u; k < R.per; k++) {
        let i = start + k * REDUCE_WG;
        if i < R.pixels {
            s += weights[i] * planes[plane + i];
        }
    }
    part[l] = s;
    workgroupBarrier();
    for (var h = REDUCE_WG / 2u; h > 0u; h = h / 2u) {
        if l < h {
            part[l] = part[l] + part[l + h];
        }
        workgroupBarrier();
    }
    if l == 0u {
        partials[j * R.groups + wg.x] = part[0];
    }
}
