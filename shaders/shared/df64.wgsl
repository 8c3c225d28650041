// Double-float ("df64") arithmetic: a value is the unevaluated sum hi + lo of two f32 (MODEL §9.3).
// Shared by `nanobragg.wgsl` and `selftest.wgsl`; the host concatenates this file, then
// shared/terms.wgsl, in front of them (see crate/src/gpu/shaders.rs). Every error-free transform
// here is exercised through the real compiled shader by crate/tests/gpu_selftest.rs.
//
// FMA_FUSED is a pipeline-overridable constant: the host sets it to false (pipeline constants,
// crate/src/gpu/shaders.rs) when the start-up self-test finds that `fma` is not fused on the
// device; two_prod then uses Dekker's split.

override FMA_FUSED: bool = true;

// Optimisation barriers: `df_bar(x)` / `df_bar2(x)` return x with its bits xor-ed with a uniform
// zero (`df_zero_a()`, `df_zero_b()`, defined by each including shader), so the compiler can
// neither prove the value equal to x nor look through it. Without them, compilers that treat
// float ops as algebraically "inexact" cancel the error terms: Mesa's NIR (lavapipe) rewrites
// `(a + b) - a -> b` and `a - (a - b) -> b` (two_sum returned 0 for the error), and contracts a
// product feeding an error-free sum into an fma (`s = c + a*b -> fma(a, b, c)` while the error
// term still uses the rounded product), even through a multiplication by a uniform 1.0 (it
// reassociates products). The self-test (crate/tests/gpu_selftest.rs) caught both on lavapipe.
// Integer xor with 0 is exact and cheap; two distinct uniforms keep CSE from merging barriers.

fn df_bar(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) ^ df_zero_a());
}

fn df_bar2(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) ^ df_zero_b());
}

// (s, e) with s = fl(a + b) and a + b = s + e exactly (Knuth; any a, b).
fn two_sum(a0: f32, b0: f32) -> vec2<f32> {
    let a = df_bar(a0);
    let b = df_bar(b0);
    let s = a + b;
    let s1 = df_bar2(s);
    let bb = df_bar2(s1 - a);
    let e = (a - (s1 - bb)) + (b - bb);
    return vec2<f32>(s, e);
}

// Needs |a| >= |b| (or a == 0).
fn quick_two_sum(a0: f32, b0: f32) -> vec2<f32> {
    let a = df_bar(a0);
    let b = df_bar(b0);
    let s = a + b;
    let e = b - (df_bar2(s) - a);
    return vec2<f32>(s, e);
}

// Veltkamp split into 12-bit halves (no fma needed).
fn split(x: f32) -> vec2<f32> {
    let c = df_bar(4097.0 * x);
    let hi = c - (df_bar2(c) - x);
    return vec2<f32>(hi, x - hi);
}

fn two_prod_split(a: f32, b: f32) -> vec2<f32> {
    let p = df_bar(a * b);
    let as_ = split(a);
    let bs = split(b);
    let e = ((as_.x * bs.x - p) + as_.x * bs.y + as_.y * bs.x) + as_.y * bs.y;
    return vec2<f32>(p, e);
}

fn two_prod_fma(a: f32, b: f32) -> vec2<f32> {
    let p = df_bar(a * b);
    return vec2<f32>(p, fma(a, b, -p));
}

// (p, e) with p = fl(a*b) and a*b = p + e exactly.
fn two_prod(a: f32, b: f32) -> vec2<f32> {
    if FMA_FUSED {
        return two_prod_fma(a, b);
    }
    return two_prod_split(a, b);
}

// Cancellation-safe df64 addition.
fn df_add(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {
    var s = two_sum(x.x, y.x);
    let t = two_sum(x.y, y.y);
    s.y += t.x;
    s = quick_two_sum(s.x, s.y);
    s.y += t.y;
    return quick_two_sum(s.x, s.y);
}

fn df_neg(x: vec2<f32>) -> vec2<f32> {
    return -x;
}

fn df_sub(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {
    return df_add(x, -y);
}

// df64 + f32.
fn df_add_f(x: vec2<f32>, y: f32) -> vec2<f32> {
    let s = two_sum(x.x, y);
    return quick_two_sum(s.x, s.y + x.y);
}

fn df_mul(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {
    var p = two_prod(x.x, y.x);
    p.y += x.x * y.y + x.y * y.x;
    return quick_two_sum(p.x, p.y);
}

// df64 * f32.
fn df_mul_f(x: vec2<f32>, y: f32) -> vec2<f32> {
    var p = two_prod(x.x, y);
    p.y += x.y * y;
    return quick_two_sum(p.x, p.y);
}

fn df_div(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {
    let q1 = x.x / y.x;
    let r = df_sub(x, df_mul_f(y, q1));
    let q2 = r.x / y.x;
    let r2 = df_sub(r, df_mul_f(y, q2));
    let q3 = r2.x / y.x;
    let q = quick_two_sum(q1, q2);
    return df_add_f(q, q3);
}

fn df_sqrt(x: vec2<f32>) -> vec2<f32> {
    if x.x <= 0.0 {
        return vec2<f32>(0.0, 0.0);
    }
    let s = sqrt(x.x);
    let r = df_sub(x, two_prod(s, s));
    return quick_two_sum(s, r.x / (2.0 * s));
}

// A df64 3-vector: component-wise hi and lo parts.
struct Df3 {
    hi: vec3<f32>,
    lo: vec3<f32>,
}

fn df3_get(v: Df3, i: u32) -> vec2<f32> {
    return vec2<f32>(v.hi[i], v.lo[i]);
}

fn df3_make(x: vec2<f32>, y: vec2<f32>, z: vec2<f32>) -> Df3 {
    return Df3(vec3<f32>(x.x, y.x, z.x), vec3<f32>(x.y, y.y, z.y));
}

fn df3_add(a: Df3, b: Df3) -> Df3 {
    return df3_make(
        df_add(df3_get(a, 0u), df3_get(b, 0u)),
        df_add(df3_get(a, 1u), df3_get(b, 1u)),
        df_add(df3_get(a, 2u), df3_get(b, 2u)),
    );
}

fn df3_scale(a: Df3, s: vec2<f32>) -> Df3 {
    return df3_make(df_mul(df3_get(a, 0u), s), df_mul(df3_get(a, 1u), s), df_mul(df3_get(a, 2u), s));
}

// Sum of x_i*y_i - c, in the Ogita-Rump-Oishi Dot2 style (one renormalisation at the end).
fn df_dot3_sub(x: Df3, y: Df3, c: vec2<f32>) -> vec2<f32> {
    var s = -c.x;
    var corr = -c.y;
    for (var i = 0u; i < 3u; i++) {
        let p = two_prod(x.hi[i], y.hi[i]);
        let e = p.y + (x.hi[i] * y.lo[i] + x.lo[i] * y.hi[i]);
        let t = two_sum(s, p.x);
        s = t.x;
        corr += t.y + e;
    }
    return quick_two_sum(s, corr);
}

fn df_dot3(x: Df3, y: Df3) -> vec2<f32> {
    return df_dot3_sub(x, y, vec2<f32>(0.0, 0.0));
}

// ---- comparisons of a df64 x with an integer n held in an f32 ----

// floor of a df64 value.
fn df_floor(x: vec2<f32>) -> f32 {
    var n = floor(x.x);
    if n == x.x && x.y < 0.0 {
        n -= 1.0;
    }
    return n;
}

// x > n.
fn df_gt(x: vec2<f32>, n: f32) -> bool {
    return x.x > n || (x.x == n && x.y > 0.0);
}

// x < n.
fn df_lt(x: vec2<f32>, n: f32) -> bool {
    return x.x < n || (x.x == n && x.y < 0.0);
}

// ---- df64 sin/cos for the curved detector's small rotation angles ----

const DF_PI_2: vec2<f32> = vec2<f32>(1.5707963705062866, -4.371139000186243e-8);

// (sin x, cos x) as df64 pairs: reduction by k*pi/2, Taylor series with df64 Horner on |r| <= pi/4.
fn df_sincos(x: vec2<f32>) -> array<vec2<f32>, 2> {
    let k = round(x.x / DF_PI_2.x);
    let r = df_sub(x, df_mul_f(DF_PI_2, k));
    let r2 = df_mul(r, r);
    // Horner form of the Taylor series: sin r = r (1 - r2/(2*3) (1 - r2/(4*5) (1 - ...))),
    // cos r = 1 - r2/(1*2) (1 - r2/(3*4) (1 - ...)), ten levels each.
    var s = vec2<f32>(1.0, 0.0);
    var c = vec2<f32>(1.0, 0.0);
    for (var j = 10; j >= 1; j--) {
        let jf = f32(j);
        let ds = (2.0 * jf) * (2.0 * jf + 1.0);
        let dc = (2.0 * jf - 1.0) * (2.0 * jf);
        s = df_sub(vec2<f32>(1.0, 0.0), df_div(df_mul(r2, s), vec2<f32>(ds, 0.0)));
        c = df_sub(vec2<f32>(1.0, 0.0), df_div(df_mul(r2, c), vec2<f32>(dc, 0.0)));
    }
    let sr = df_mul(r, s);
    let cr = c;
    let q = i32(k) & 3;
    var out: array<vec2<f32>, 2>;
    if q == 0 {
        out[0] = sr;
        out[1] = cr;
    } else if q == 1 {
        out[0] = cr;
        out[1] = -sr;
    } else if q == 2 {
        out[0] = -sr;
        out[1] = -cr;
    } else {
        out[0] = -cr;
        out[1] = sr;
    }
    return out;
}
