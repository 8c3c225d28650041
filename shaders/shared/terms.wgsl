// The terms of the per-pixel sum: the WGSL twin of crate/src/terms.rs, function for function
// (same names, same argument order, same operations in the same association; read that file's
// documentation for the physics and the rules). Concatenated by the host after shared/df64.wgsl
// and before a kernel (crate/src/gpu/shaders.rs); crate/tests/gpu_selftest.rs runs every function
// here through the compiled shader against its Rust twin on edge inputs.
//
// Only the fast (f32) family and the shared lookups live here; the upstream f64 family of
// terms.rs has no twin (WGSL has no f64: pixels that need it are re-rendered on the host).
// Where the two languages differ in spelling: `round_even` is WGSL's `round` (ties to even) where
// Rust adds and subtracts 1.5·2^23 (a shader compiler may fold that pair away); `index_ok` tests
// the bits of |h| (a shader compiler may assume NaN away, so a float comparison could be folded);
// the lookups read f32 amplitudes where the CPU reads f64, and take df64 indices where the CPU
// has f64 ones.
//
// The including shader defines `fn hkl_value(i: u32) -> f32`: entry i of the structure-factor
// table (padded, l fastest; see HklBox).
//
// Derivative twins (MODEL §10.5; terms.rs `*_d`, each beside its term here too). Each returns the
// term's value (bit for bit the value function's, same operations) and its partial derivatives
// with respect to its own inputs, in this order:
//   sincg_delta_d(d, n, m)               -> vec3(value, d/dδ, d/dN); m = nearest integer (h = m + δ)
//   lattice_square_d(d, m, n: vec3)      -> LatticeD(v, d_hkl = dF/dδ, d_n = dF/dN)
//   lattice_square_d_with(d, m, n, with_n) the same, d_n left 0 where with_n is false
//   lattice_round_d(d, n: vec3, fudge)   -> LatticeD(v, d_hkl = dF/dδ, d_n = dF/dN)
//   shape_r2_d(d, a*, b*, c*, n: vec3)   -> ShapeR2D(r2, d_hkl = dr2/dδ, d_n = dr2/dN,
//                                            d_star = mat3x3 columns dr2/da*, dr2/db*, dr2/dc*)
//   lattice_gauss_d(r2, nabc, fudge)     -> vec3(F, dF/dr2, dF/dnabc)
//   lattice_tophat_d(r2, nabc, fudge)    -> vec3(F, 0, 1 inside / 0 outside)
//   polarization_d(k, i, d, E_in, B_in)  -> vec4(P, dP/dd.xyz) (d unit; use with dd ⟂ d)
//   capture_fraction_d(t, mu_step, rho)  -> vec2(value, d/dρ)
//   solid_angle_d(inv_r, px², close, pt) -> vec3(Ω, dΩ/dR, dΩ/d close_distance)
//   polint4_d(dx, y)                     -> d/dx of polint4
//   f_tricubic_d(g, hf, kf, lf, dh, dk, dl) -> vec3(dF/dh, dF/dk, dF/dl) (value: f_tricubic)
// The square lattice factor's value and derivatives share a sign convention (the factor is used
// squared): F·dF is sign-free. d/dN is that of upstream's full-index formula (hence m); it is 0 at
// an exact-Bragg point, whose pixel the host renders in f64 anyway.

// ---- guards ----

// Largest |Miller index| a kernel evaluates (terms.rs INDEX_LIMIT); INDEX_LIMIT_BITS is its bit
// pattern (2^31), checked against it by crate/tests/gpu_layout.rs.
const INDEX_LIMIT: f32 = 2147483648.0;
const INDEX_LIMIT_BITS: u32 = 0x4f000000u;

// |h| < INDEX_LIMIT, false for NaN and infinities: compared as bits (positive floats order as
// their bit patterns), which no fast-math assumption can fold.
fn index_ok(h: f32) -> bool {
    return (bitcast<u32>(h) & 0x7fffffffu) < INDEX_LIMIT_BITS;
}

// The exact-Bragg rule (terms.rs EXACT_BRAGG): a pixel with such a term on an axis with N > 1 is
// flagged and re-rendered by the host's f64 kernel.
const EXACT_BRAGG: f32 = 1e-9;

fn is_exact_bragg(delta: f32, nearest: f32) -> bool {
    return (abs(delta) < EXACT_BRAGG) & (nearest != 0.0);
}

// ---- sinpi ----

fn round_even(x: f32) -> f32 {
    return round(x);
}

// sin(pi r) for |r| <= 1/2: r P(r^2), P the Taylor series of sin(pi r)/r to r^12.
fn sinpi_poly(r: f32) -> f32 {
    let z = r * r;
    var p = 0.0004663028 * z - 0.007370431;
    p = p * z + 0.08214589;
    p = p * z - 0.5992645;
    p = p * z + 2.550164;
    p = p * z - 5.1677127;
    p = p * z + 3.1415927;
    return r * p;
}

// cos(pi r) for |r| <= 1/2: 1 + r^2 Q(r^2), Q the Taylor series to r^14.
fn cospi_poly(r: f32) -> f32 {
    let z = r * r;
    var q = -0.00010463811 * z + 0.0019295743;
    q = q * z - 0.02580689;
    q = q * z + 0.23533063;
    q = q * z - 1.3352628;
    q = q * z + 4.058712;
    q = q * z - 4.934802;
    return 1.0 + z * q;
}

fn is_odd(m: f32) -> bool {
    return m - 2.0 * floor(0.5 * m) != 0.0;
}

// sin(pi x): x = m + r, m = round_even(x), r exact, sin(pi x) = (-1)^m sin(pi r).
fn sinpi(x: f32) -> f32 {
    let m = round_even(x);
    let s = sinpi_poly(x - m);
    return select(s, -s, is_odd(m));
}

fn cospi(x: f32) -> f32 {
    let m = round_even(x);
    let c = cospi_poly(x - m);
    return select(c, -c, is_odd(m));
}

// ---- lattice factors ----

const GRATING_SMALL: f32 = 1e-5;

// (numerator, denominator) of |sin(pi N d)/sin(pi d)| (MODEL §9.2), sign dropped; (N, 1) where
// N |d| < GRATING_SMALL.
fn grating_parts(d: f32, n: f32) -> vec2<f32> {
    let x = n * d;
    let r = x - round_even(x);
    let small = abs(x) < GRATING_SMALL;
    let num = sinpi_poly(r);
    let den = sinpi_poly(d);
    return vec2<f32>(select(num, n, small), select(den, 1.0, small));
}

fn sincg_delta(d: f32, n: f32) -> f32 {
    let p = grating_parts(d, n);
    return p.x / p.y;
}

// The polynomial P of sinpi_poly (sin(pi r) = r P(r^2), the same Horner steps).
fn sinpi_p(r: f32) -> f32 {
    let z = r * r;
    var p = 0.0004663028 * z - 0.007370431;
    p = p * z + 0.08214589;
    p = p * z - 0.5992645;
    p = p * z + 2.550164;
    p = p * z - 5.1677127;
    return p * z + 3.1415927;
}

// sin(pi r)/(pi r) for |r| <= 1/2: sinpi_poly's polynomial without its factor r, times 1/pi.
fn sinc_pi_poly(r: f32) -> f32 {
    return sinpi_p(r) * 0.31830987;
}

// grating_parts (x, y) and sincg_delta_d (z, w, and the third) from one set of polynomials.
struct GratingD {
    parts: vec2<f32>,
    d: vec3<f32>,
}

// with_n false leaves d/dN out (0): terms.rs grating_d::<DN>.
fn grating_d(d: f32, n: f32, m: f32, with_n: bool) -> GratingD {
    let x = n * d;
    let r = x - round_even(x);
    let small = abs(x) < GRATING_SMALL;
    let pn = sinpi_p(r);
    let p1 = sinpi_p(d);
    let num = r * pn;
    let den = d * p1;
    let parts = vec2<f32>(select(num, n, small), select(den, 1.0, small));
    let v = parts.x / parts.y;
    let c = cospi_poly(r);
    let u = 3.1415927 * x;
    var s_n = pn * 0.31830987;
    if abs(x) >= 0.5 {
        s_n = num / u;
    }
    var t_n = 0.0;
    if abs(u) < 1.0 {
        t_n = sinc3_series(u);
    } else {
        t_n = 3.0 * (num / u - c) / (u * u);
    }
    let s_1 = p1 * 0.31830987;
    // T(pi delta) from the series alone: |pi delta| <= pi/2, where the first term left out is
    // below 1e-8 of the value
    let t_1 = sinc3_series(3.1415927 * d);
    let dd = 3.1415927 * (n * (3.1415927 * d) * (1.0 / 3.0)) * (s_n * t_1 - (n * n) * t_n * s_1) / (s_1 * s_1);
    var dn = 0.0;
    if !with_n {
        dn = 0.0;
    } else if m == 0.0 {
        dn = c / s_1;
    } else if den != 0.0 {
        dn = 3.1415927 * (m + d) * c / den;
    }
    return GratingD(parts, vec3<f32>(v, dd, dn));
}

// (value, d/d delta, d/dN) of sincg_delta; m the nearest integer (see terms.rs sincg_delta_d).
fn sincg_delta_d(d: f32, n: f32, m: f32) -> vec3<f32> {
    return grating_d(d, n, m, true).d;
}

// Square lattice factor from the index offsets (up to sign); axes with N <= 1 contribute 1.
fn lattice_square(dh: f32, dk: f32, dl: f32, na: f32, nb: f32, nc: f32) -> f32 {
    let a = grating_parts(dh, na);
    let b = grating_parts(dk, nb);
    let c = grating_parts(dl, nc);
    let ua = na > 1.0;
    let ub = nb > 1.0;
    let uc = nc > 1.0;
    let num = select(1.0, a.x, ua) * select(1.0, b.x, ub) * select(1.0, c.x, uc);
    let den = select(1.0, a.y, ua) * select(1.0, b.y, ub) * select(1.0, c.y, uc);
    return num / den;
}

// A lattice factor with its partial derivatives: value, dF/d(dh, dk, dl), dF/d(Na, Nb, Nc).
struct LatticeD {
    v: f32,
    d_hkl: vec3<f32>,
    d_n: vec3<f32>,
}

fn lattice_square_d(d: vec3<f32>, m: vec3<f32>, n: vec3<f32>) -> LatticeD {
    return lattice_square_d_with(d, m, n, true);
}

// lattice_square_d with dF/dN left out (0) where with_n is false (the tangent passes in which no
// parameter moves N; terms.rs lattice_square_d_with::<DN>).
fn lattice_square_d_with(d: vec3<f32>, m: vec3<f32>, n: vec3<f32>, with_n: bool) -> LatticeD {
    var a = GratingD(vec2<f32>(1.0, 1.0), vec3<f32>(1.0, 0.0, 0.0));
    var b = a;
    var c = a;
    if n.x > 1.0 {
        a = grating_d(d.x, n.x, m.x, with_n);
    }
    if n.y > 1.0 {
        b = grating_d(d.y, n.y, m.y, with_n);
    }
    if n.z > 1.0 {
        c = grating_d(d.z, n.z, m.z, with_n);
    }
    let f = (a.parts.x * b.parts.x * c.parts.x) / (a.parts.y * b.parts.y * c.parts.y);
    let g0 = a.d;
    let g1 = b.d;
    let g2 = c.d;
    let others = vec3<f32>(g1.x * g2.x, g0.x * g2.x, g0.x * g1.x);
    return LatticeD(f, vec3<f32>(g0.y, g1.y, g2.y) * others, vec3<f32>(g0.z, g1.z, g2.z) * others);
}

// The series of sinc3_pi (|x| < 1; to 1e-8 relative up to |x| = pi/2), x = pi y.
fn sinc3_series(x: f32) -> f32 {
    let x2 = x * x;
    var p = -1.0 / 172972800.0;
    p = p * x2 + 1.0 / 1330560.0;
    p = p * x2 - 1.0 / 15120.0;
    p = p * x2 + 1.0 / 280.0;
    p = p * x2 - 0.1;
    return 1.0 + x2 * p;
}

// 3 (sin x - x cos x)/x^3 at x = pi y: series below |x| = 1, closed form above.
fn sinc3_pi(y: f32) -> f32 {
    let x = 3.1415927 * y;
    if abs(x) < 1.0 {
        return sinc3_series(x);
    }
    return 3.0 * (sinpi(y) / x - cospi(y)) / (x * x);
}

// sinc3'(x)/x at x = pi y: series to x^12 below |x| = 2, 3 (sin x/x - sinc3(x))/x^2 above.
fn sinc3_pi_d_over_x(y: f32) -> f32 {
    let x = 3.1415927 * y;
    if abs(x) < 2.0 {
        let x2 = x * x;
        var p = -1.0 / 529296768000.0;
        p = p * x2 + 1.0 / 2594592000.0;
        p = p * x2 - 1.0 / 17297280.0;
        p = p * x2 + 1.0 / 166320.0;
        p = p * x2 - 1.0 / 2520.0;
        p = p * x2 + 1.0 / 70.0;
        p = p * x2 - 0.2;
        return p;
    }
    return 3.0 * (sinpi(y) / x - sinc3_pi(y)) / (x * x);
}

fn lattice_round(dh: f32, dk: f32, dl: f32, na: f32, nb: f32, nc: f32, fudge: f32) -> f32 {
    let hrad2 = ((dh * dh) * na) * na + ((dk * dk) * nb) * nb + ((dl * dl) * nc) * nc;
    return ((na * nb) * nc) * 0.7236013 * sinc3_pi(sqrt(hrad2 * fudge));
}

fn lattice_round_d(d: vec3<f32>, n: vec3<f32>, fudge: f32) -> LatticeD {
    let f = lattice_round(d.x, d.y, d.z, n.x, n.y, n.z, fudge);
    let hrad2 = ((d.x * d.x) * n.x) * n.x + ((d.y * d.y) * n.y) * n.y + ((d.z * d.z) * n.z) * n.z;
    let y = sqrt(hrad2 * fudge);
    let c = 0.7236013;
    let nabc = (n.x * n.y) * n.z;
    let df_dr = nabc * c * sinc3_pi_d_over_x(y) * (0.5 * 3.1415927 * 3.1415927) * fudge;
    let s3 = sinc3_pi(y);
    let others = vec3<f32>(n.y * n.z, n.x * n.z, n.x * n.y);
    return LatticeD(f, df_dr * 2.0 * d * n * n, others * c * s3 + df_dr * 2.0 * d * d * n);
}

fn shape_r2(dh: f32, dk: f32, dl: f32, a_star: vec3<f32>, b_star: vec3<f32>, c_star: vec3<f32>, na: f32, nb: f32, nc: f32) -> f32 {
    let d = dh * a_star + dk * b_star + dl * c_star;
    return (d.x * d.x + d.y * d.y + d.z * d.z) * na * na * nb * nb * nc * nc;
}

// shape_r2 with dr2/d(dh, dk, dl), dr2/d(Na, Nb, Nc) and dr2/d(a*, b*, c*) (matrix columns).
struct ShapeR2D {
    r2: f32,
    d_hkl: vec3<f32>,
    d_n: vec3<f32>,
    d_star: mat3x3<f32>,
}

fn shape_r2_d(d: vec3<f32>, a_star: vec3<f32>, b_star: vec3<f32>, c_star: vec3<f32>, n: vec3<f32>) -> ShapeR2D {
    let r2 = shape_r2(d.x, d.y, d.z, a_star, b_star, c_star, n.x, n.y, n.z);
    let v = d.x * a_star + d.y * b_star + d.z * c_star;
    let n6 = n.x * n.x * n.y * n.y * n.z * n.z;
    let dot3 = vec3<f32>(
        v.x * a_star.x + v.y * a_star.y + v.z * a_star.z,
        v.x * b_star.x + v.y * b_star.y + v.z * b_star.z,
        v.x * c_star.x + v.y * c_star.y + v.z * c_star.z,
    );
    let dn = select(vec3<f32>(0.0), 2.0 * r2 / n, n != vec3<f32>(0.0));
    return ShapeR2D(r2, 2.0 * n6 * dot3, dn, mat3x3<f32>(2.0 * n6 * d.x * v, 2.0 * n6 * d.y * v, 2.0 * n6 * d.z * v));
}

// f64 exp is exactly 0 below this (upstream skips the term); f32 exp underflows near -104.
const GAUSS_F64_UNDERFLOW: f32 = -745.1332;

fn lattice_gauss(r2: f32, nabc: f32, fudge: f32) -> f32 {
    return nabc * exp(-(r2 / 0.63 * fudge));
}

fn lattice_gauss_d(r2: f32, nabc: f32, fudge: f32) -> vec3<f32> {
    let e = exp(-(r2 / 0.63 * fudge));
    return vec3<f32>(nabc * e, -(nabc * e) * fudge / 0.63, e);
}

fn gauss_underflows(r2: f32, fudge: f32) -> bool {
    return -(r2 / 0.63 * fudge) < GAUSS_F64_UNDERFLOW;
}

fn lattice_tophat(r2: f32, nabc: f32, fudge: f32) -> f32 {
    if r2 * fudge < 0.3969 {
        return nabc;
    }
    return 0.0;
}

fn lattice_tophat_d(r2: f32, nabc: f32, fudge: f32) -> vec3<f32> {
    let f = lattice_tophat(r2, nabc, fudge);
    return vec3<f32>(f, 0.0, select(0.0, 1.0, f != 0.0));
}

// ---- polarisation, geometry ----

// Kahn factor with cos 2psi = (E^2 - B^2)/(E^2 + B^2) (MODEL §9.5).
fn polarization(k: f32, i: vec3<f32>, d: vec3<f32>, e_in: vec3<f32>, b_in: vec3<f32>) -> f32 {
    let c2 = i.x * d.x + i.y * d.y + i.z * d.z;
    let c2sq = c2 * c2;
    let s2sq = 1.0 - c2sq;
    var cos2psi = 1.0;
    if k != 0.0 {
        let e = d.x * e_in.x + d.y * e_in.y + d.z * e_in.z;
        let b = d.x * b_in.x + d.y * b_in.y + d.z * b_in.z;
        let den = e * e + b * b;
        if den > 0.0 {
            cos2psi = (e * e - b * b) / den;
        }
    }
    return 0.5 * (1.0 + c2sq - k * cos2psi * s2sq);
}

// (P, dP/dd): d cos 2psi/dd = 4EB (B E_in - E B_in)/(E^2 + B^2)^2.
fn polarization_d(k: f32, i: vec3<f32>, d: vec3<f32>, e_in: vec3<f32>, b_in: vec3<f32>) -> vec4<f32> {
    let v = polarization(k, i, d, e_in, b_in);
    let c2 = i.x * d.x + i.y * d.y + i.z * d.z;
    let s2sq = 1.0 - c2 * c2;
    var cos2psi = 1.0;
    var dcos = vec3<f32>(0.0);
    if k != 0.0 {
        let e = d.x * e_in.x + d.y * e_in.y + d.z * e_in.z;
        let b = d.x * b_in.x + d.y * b_in.y + d.z * b_in.z;
        let den = e * e + b * b;
        if den > 0.0 {
            cos2psi = (e * e - b * b) / den;
            let w = (4.0 * (e / den)) * (b / den);
            dcos = w * (b * e_in - e * b_in);
        }
    }
    let g = 0.5 * (2.0 * c2 * i - k * (dcos * s2sq - cos2psi * 2.0 * c2 * i));
    return vec4<f32>(v, g);
}

// 1 - exp(-x): series to x^7 below |x| = 0.1, the difference above.
fn one_minus_exp_neg(x: f32) -> f32 {
    if abs(x) < 0.1 {
        var p = 1.0 / 5040.0;
        p = 1.0 / 720.0 - x * p;
        p = 1.0 / 120.0 - x * p;
        p = 1.0 / 24.0 - x * p;
        p = 1.0 / 6.0 - x * p;
        p = 0.5 - x * p;
        return x * (1.0 - x * p);
    }
    return 1.0 - exp(-x);
}

fn capture_fraction(t: f32, mu_step: f32, rho: f32) -> f32 {
    let x = mu_step / rho;
    return exp(-t * x) * one_minus_exp_neg(x);
}

fn capture_fraction_d(t: f32, mu_step: f32, rho: f32) -> vec2<f32> {
    let v = capture_fraction(t, mu_step, rho);
    let x = mu_step / rho;
    let dv = -(x / rho) * exp(-t * x) * (exp(-x) - t * one_minus_exp_neg(x));
    return vec2<f32>(v, dv);
}

fn solid_angle(inv_r: f32, pixel2: f32, close_distance: f32, point_pixel: bool) -> f32 {
    if point_pixel {
        return inv_r * inv_r;
    }
    return pixel2 * close_distance * (inv_r * inv_r * inv_r);
}

fn solid_angle_d(inv_r: f32, pixel2: f32, close_distance: f32, point_pixel: bool) -> vec3<f32> {
    let v = solid_angle(inv_r, pixel2, close_distance, point_pixel);
    if point_pixel {
        return vec3<f32>(v, -2.0 * v * inv_r, 0.0);
    }
    return vec3<f32>(v, -3.0 * v * inv_r, pixel2 * (inv_r * inv_r * inv_r));
}

// ---- structure factors ----

// The table's box (Rust: plan::HklGrid): lowest indices, ranges (max - min + 1; the table holds
// range + 1 entries per axis, the last a zero padding slab), and whether a table exists.
struct HklBox {
    lo: vec3<i32>,
    range: vec3<i32>,
    present: bool,
}

// Entry at padded-table offsets (HklGrid::at).
fn hkl_at(g: HklBox, ih: i32, ik: i32, il: i32) -> f32 {
    let kd = g.range.y + 1;
    let ld = g.range.z + 1;
    return hkl_value(u32((ih * kd + ik) * ld + il));
}

fn within(x: f32, lo: i32, hi: i32) -> bool {
    return x >= f32(lo) && x <= f32(hi);
}

fn f_nearest(g: HklBox, default_f: f32, h0: f32, k0: f32, l0: f32) -> f32 {
    if g.present && within(h0, g.lo.x, g.lo.x + g.range.x - 1) && within(k0, g.lo.y, g.lo.y + g.range.y - 1) && within(l0, g.lo.z, g.lo.z + g.range.z - 1) {
        return hkl_at(g, i32(h0) - g.lo.x, i32(k0) - g.lo.y, i32(l0) - g.lo.z);
    }
    return default_f;
}

// MODEL §6.4's range rule on df64 indices: the stencil leaves the table unless
// min + 2 <= x <= min + range - 3 on every axis.
fn stencil_leaves_table(g: HklBox, h: vec2<f32>, k: vec2<f32>, l: vec2<f32>) -> bool {
    let lo = vec3<f32>(g.lo + 2);
    let hi = vec3<f32>(g.lo + g.range - 3);
    return df_gt(h, hi.x) || df_lt(h, lo.x) || df_gt(k, hi.y) || df_lt(k, lo.y) || df_gt(l, hi.z) || df_lt(l, lo.z);
}

// x - node for the nodes xf - 1 .. xf + 2 of a df64 x (xf = floor(x)): (x.hi - node) + x.lo.
fn node_diffs(x: vec2<f32>, xf: f32) -> vec4<f32> {
    return vec4<f32>(
        (x.x - (xf - 1.0)) + x.y,
        (x.x - xf) + x.y,
        (x.x - (xf + 1.0)) + x.y,
        (x.x - (xf + 2.0)) + x.y,
    );
}

// Upstream's 4-point Lagrange form from the node differences (denominators -6, 2, -2, 6).
fn polint4(dx: vec4<f32>, y: vec4<f32>) -> f32 {
    return ((dx.y * dx.z) * dx.w) * y.x / -6.0
        + ((dx.x * dx.z) * dx.w) * y.y / 2.0
        + ((dx.x * dx.y) * dx.w) * y.z / -2.0
        + ((dx.x * dx.y) * dx.z) * y.w / 6.0;
}

fn polint4_d_pair(a: f32, b: f32, c: f32) -> f32 {
    return a * b + a * c + b * c;
}

// d/dx of polint4 (each difference moves with x).
fn polint4_d(dx: vec4<f32>, y: vec4<f32>) -> f32 {
    return polint4_d_pair(dx.y, dx.z, dx.w) * y.x / -6.0
        + polint4_d_pair(dx.x, dx.z, dx.w) * y.y / 2.0
        + polint4_d_pair(dx.x, dx.y, dx.w) * y.z / -2.0
        + polint4_d_pair(dx.x, dx.y, dx.z) * y.w / 6.0;
}

// Tricubic structure factor: along l, then k, then h (upstream's order).
fn f_tricubic(g: HklBox, hf: f32, kf: f32, lf: f32, dh: vec4<f32>, dk: vec4<f32>, dl: vec4<f32>) -> f32 {
    let ih = i32(hf) - 1 - g.lo.x;
    let ik = i32(kf) - 1 - g.lo.y;
    let il = i32(lf) - 1 - g.lo.z;
    var tmp_h = vec4<f32>(0.0);
    for (var a = 0; a < 4; a++) {
        var tmp_k = vec4<f32>(0.0);
        for (var b = 0; b < 4; b++) {
            let ys = vec4<f32>(
                hkl_at(g, ih + a, ik + b, il),
                hkl_at(g, ih + a, ik + b, il + 1),
                hkl_at(g, ih + a, ik + b, il + 2),
                hkl_at(g, ih + a, ik + b, il + 3),
            );
            tmp_k[b] = polint4(dl, ys);
        }
        tmp_h[a] = polint4(dk, tmp_k);
    }
    return polint4(dh, tmp_h);
}

// Gradient of f_tricubic with respect to (h, k, l) (terms.rs f_tricubic_d, from the floors and
// node differences as f_tricubic takes them). The caller has checked stencil_leaves_table.
fn f_tricubic_d(g: HklBox, hf: f32, kf: f32, lf: f32, dh: vec4<f32>, dk: vec4<f32>, dl: vec4<f32>) -> vec3<f32> {
    let ih = i32(hf) - 1 - g.lo.x;
    let ik = i32(kf) - 1 - g.lo.y;
    let il = i32(lf) - 1 - g.lo.z;
    var th = vec4<f32>(0.0);
    var th_k = vec4<f32>(0.0);
    var th_l = vec4<f32>(0.0);
    for (var a = 0; a < 4; a++) {
        var tk = vec4<f32>(0.0);
        var tk_l = vec4<f32>(0.0);
        for (var b = 0; b < 4; b++) {
            let ys = vec4<f32>(
                hkl_at(g, ih + a, ik + b, il),
                hkl_at(g, ih + a, ik + b, il + 1),
                hkl_at(g, ih + a, ik + b, il + 2),
                hkl_at(g, ih + a, ik + b, il + 3),
            );
            tk[b] = polint4(dl, ys);
            tk_l[b] = polint4_d(dl, ys);
        }
        th[a] = polint4(dk, tk);
        th_k[a] = polint4_d(dk, tk);
        th_l[a] = polint4(dk, tk_l);
    }
    return vec3<f32>(polint4_d(dh, th), polint4(dh, th_k), polint4(dh, th_l));
}
