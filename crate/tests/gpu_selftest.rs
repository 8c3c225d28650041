//! Every double-float trick run through the real compiled shader (`shaders/selftest.wgsl` +
//! `shaders/shared/df64.wgsl`) on the test device, checked against f64 on the host; and every
//! term function of `shaders/shared/terms.wgsl` against its Rust twin in `crate::terms`, with a
//! stated bound per function (printed with the worst case seen: `--nocapture`).
#![cfg(feature = "gpu")]

mod gpu_support;

use gpu_support::{device, Rng};
use nanobragg::gpu::layout::df;
use nanobragg::gpu::selftest::{pair, probe, Op, SelfTest};

struct Ctx {
    device: wgpu::Device,
    queue: wgpu::Queue,
    st: SelfTest,
    fused: bool,
}

fn ctx() -> Ctx {
    let (device, queue) = device();
    let p = pollster::block_on(probe(&device, &queue)).expect("start-up probe");
    eprintln!("fma fused on this device: {}", p.fma_fused);
    let st = SelfTest::new(&device, p.fma_fused);
    Ctx {
        device,
        queue,
        st,
        fused: p.fma_fused,
    }
}

impl Ctx {
    fn run(&self, op: Op, cases: &[[[f32; 4]; 4]]) -> Vec<[f32; 4]> {
        self.run_with_table(op, cases, &[])
    }
    fn run_with_table(&self, op: Op, cases: &[[[f32; 4]; 4]], table: &[f32]) -> Vec<[f32; 4]> {
        pollster::block_on(
            self.st
                .run_with_table(&self.device, &self.queue, op, cases, table),
        )
        .expect("self-test dispatch")
    }
}

fn f64_of(p: [f32; 2]) -> f64 {
    p[0] as f64 + p[1] as f64
}

/// Random f32 pairs with magnitudes within 2^20 of each other.
fn scalar_pairs(rng: &mut Rng, n: usize) -> Vec<(f32, f32)> {
    (0..n)
        .map(|_| {
            let a = rng.uniform(-1.0, 1.0) * 2f64.powf(rng.uniform(-10.0, 10.0));
            let b = rng.uniform(-1.0, 1.0) * 2f64.powf(rng.uniform(-10.0, 10.0));
            (a as f32, b as f32)
        })
        .collect()
}

fn random_df(rng: &mut Rng, lo: f64, hi: f64) -> f64 {
    rng.uniform(lo, hi) * if rng.next_u64() & 1 == 0 { 1.0 } else { -1.0 }
}

#[test]
fn two_sum_is_error_free() {
    let c = ctx();
    let mut rng = Rng(1);
    let mut cases: Vec<(f32, f32)> = scalar_pairs(&mut rng, 500);
    cases.push((1.0, 2f32.powi(-30)));
    cases.push((1.0e8, -1.0e8 + 0.5));
    let out = c.run(
        Op::TwoSum,
        &cases.iter().map(|&(a, b)| pair(a, b)).collect::<Vec<_>>(),
    );
    for ((a, b), r) in cases.iter().zip(&out) {
        assert_eq!(r[0], a + b, "two_sum({a}, {b}) sum");
        assert_eq!(
            r[0] as f64 + r[1] as f64,
            *a as f64 + *b as f64,
            "two_sum({a}, {b}) error term"
        );
    }
    let out = c.run(
        Op::QuickTwoSum,
        &cases
            .iter()
            .map(|&(a, b)| {
                if a.abs() >= b.abs() {
                    pair(a, b)
                } else {
                    pair(b, a)
                }
            })
            .collect::<Vec<_>>(),
    );
    for ((a, b), r) in cases.iter().zip(&out) {
        assert_eq!(
            r[0] as f64 + r[1] as f64,
            *a as f64 + *b as f64,
            "quick_two_sum({a}, {b})"
        );
    }
}

#[test]
fn two_prod_is_error_free() {
    let c = ctx();
    let mut rng = Rng(2);
    let mut cases = scalar_pairs(&mut rng, 500);
    let a = 1.0 + 2f32.powi(-12);
    cases.push((a, a));
    let inputs: Vec<_> = cases.iter().map(|&(a, b)| pair(a, b)).collect();
    let mut ops = vec![Op::TwoProdSplit, Op::TwoProd];
    if c.fused {
        ops.push(Op::TwoProdFma);
    }
    for op in ops {
        let out = c.run(op, &inputs);
        for ((a, b), r) in cases.iter().zip(&out) {
            assert_eq!(r[0], a * b, "{op:?}({a}, {b}) product");
            assert_eq!(
                r[0] as f64 + r[1] as f64,
                *a as f64 * *b as f64,
                "{op:?}({a}, {b}) error term"
            );
        }
    }
}

#[test]
fn error_free_sums_survive_fma_contraction() {
    // A product feeding two_sum must not be fused into the sum (seen on lavapipe).
    let c = ctx();
    let mut rng = Rng(5);
    let cases: Vec<[f32; 3]> = (0..300)
        .map(|_| {
            [
                rng.uniform(1.0, 100.0) as f32,
                rng.uniform(1.0, 500.0) as f32,
                rng.uniform(-1.0, 1.0) as f32,
            ]
        })
        .chain([[7.77, 123.456, 0.3]])
        .collect();
    let inputs: Vec<_> = cases
        .iter()
        .map(|x| [[x[0], x[1], x[2], 0.0], [0.0; 4], [0.0; 4], [0.0; 4]])
        .collect();
    for op in [Op::TwoSumNegProduct, Op::TwoSumNegTwoProd] {
        let out = c.run(op, &inputs);
        for (x, r) in cases.iter().zip(&out) {
            let p = x[1] * x[2];
            assert_eq!(r[0], p - x[0], "{op:?} {x:?} sum");
            assert_eq!(
                r[0] as f64 + r[1] as f64,
                p as f64 - x[0] as f64,
                "{op:?} {x:?} error term"
            );
        }
    }
}

fn check_binary(
    c: &Ctx,
    op: Op,
    f: impl Fn(f64, f64) -> f64,
    tol: f64,
    gen: impl Fn(&mut Rng) -> (f64, f64),
) {
    let mut rng = Rng(3 + op as u64);
    let vals: Vec<(f64, f64)> = (0..400).map(|_| gen(&mut rng)).collect();
    let inputs: Vec<_> = vals
        .iter()
        .map(|&(x, y)| {
            let (x, y) = (df(x), df(y));
            [[x[0], x[1], y[0], y[1]], [0.0; 4], [0.0; 4], [0.0; 4]]
        })
        .collect();
    let out = c.run(op, &inputs);
    for ((x, y), r) in vals.iter().zip(&out) {
        let (xd, yd) = (f64_of(df(*x)), f64_of(df(*y)));
        let want = f(xd, yd);
        let got = f64_of([r[0], r[1]]);
        let err = ((got - want) / want).abs();
        assert!(
            err < tol,
            "{op:?}({xd:e}, {yd:e}) = {got:e}, want {want:e}, rel err {err:e}"
        );
    }
}

#[test]
fn df_arithmetic_has_double_float_accuracy() {
    let c = ctx();
    let tol = 2f64.powi(-44);
    // Additions including heavy cancellation (the result's own magnitude sets the tolerance).
    check_binary(
        &c,
        Op::DfAdd,
        |x, y| x + y,
        tol * 1e3,
        |r| {
            let x = random_df(r, 0.01, 100.0);
            (x, -x * r.uniform(0.9, 1.1))
        },
    );
    check_binary(
        &c,
        Op::DfAdd,
        |x, y| x + y,
        tol,
        |r| (r.uniform(0.01, 100.0), r.uniform(0.01, 100.0)),
    );
    check_binary(
        &c,
        Op::DfMul,
        |x, y| x * y,
        tol,
        |r| (random_df(r, 1e-3, 1e3), random_df(r, 1e-3, 1e3)),
    );
    check_binary(
        &c,
        Op::DfDiv,
        |x, y| x / y,
        tol,
        |r| (random_df(r, 1e-3, 1e3), random_df(r, 1e-3, 1e3)),
    );
    check_binary(
        &c,
        Op::DfSqrt,
        |x, _| x.sqrt(),
        tol,
        |r| (r.uniform(1e-4, 1e4), 0.0),
    );
}

#[test]
fn df_dot3_sub_gives_miller_indices_to_1e_12() {
    // h = A.d - c with |A| up to 500 (cell/lambda), d a unit vector: the kernel's hot path.
    let c = ctx();
    let mut rng = Rng(7);
    let mut vals = Vec::new();
    let mut inputs = Vec::new();
    for _ in 0..400 {
        let a: [f64; 3] = std::array::from_fn(|_| rng.uniform(-500.0, 500.0));
        let mut d: [f64; 3] = std::array::from_fn(|_| rng.uniform(-1.0, 1.0));
        let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        d.iter_mut().for_each(|x| *x /= n);
        let cc = rng.uniform(-500.0, 500.0);
        let (ad, dd, cd) = (a.map(df), d.map(df), df(cc));
        inputs.push([
            [ad[0][0], ad[1][0], ad[2][0], cd[0]],
            [ad[0][1], ad[1][1], ad[2][1], cd[1]],
            [dd[0][0], dd[1][0], dd[2][0], 0.0],
            [dd[0][1], dd[1][1], dd[2][1], 0.0],
        ]);
        let af = ad.map(f64_of);
        let df_ = dd.map(f64_of);
        vals.push(af[0] * df_[0] + af[1] * df_[1] + af[2] * df_[2] - f64_of(cd));
    }
    let out = c.run(Op::DfDot3Sub, &inputs);
    for (want, r) in vals.iter().zip(&out) {
        let got = f64_of([r[0], r[1]]);
        assert!(
            (got - want).abs() < 1e-11,
            "dot3_sub {got} vs {want}: {:e}",
            (got - want).abs()
        );
    }
}

#[test]
fn sinpi_cospi_reduce_exactly() {
    let c = ctx();
    let mut rng = Rng(11);
    let mut xs: Vec<f32> = (0..1000)
        .map(|_| rng.uniform(-3000.0, 3000.0) as f32)
        .collect();
    xs.extend((0..200).map(|_| rng.uniform(-0.5, 0.5) as f32));
    xs.extend([0.0, 0.5, -0.5, 1.0, 2.5, 1e-20, 12345.25]);
    let out = c.run(
        Op::SinpiCospi,
        &xs.iter().map(|&x| pair(x, 0.0)).collect::<Vec<_>>(),
    );
    for (x, r) in xs.iter().zip(&out) {
        let xd = *x as f64;
        // Exact reference: reduce in f64 (exact for f32 inputs), then sin.
        let red = xd - xd.round();
        let sign = if (xd.round() as i64) % 2 == 0 {
            1.0
        } else {
            -1.0
        };
        let (s, co) = (
            (std::f64::consts::PI * red).sin() * sign,
            (std::f64::consts::PI * red).cos() * sign,
        );
        assert!(
            (r[0] as f64 - s).abs() < 3e-7 * s.abs().max(1e-30) + 1e-37
                || (r[0] as f64 - s).abs() < 2e-7,
            "sinpi({x}) = {} want {s}",
            r[0]
        );
        assert!(
            (r[1] as f64 - co).abs() < 2e-7,
            "cospi({x}) = {} want {co}",
            r[1]
        );
    }
    // Relative accuracy for small arguments (the sincg denominator).
    for (x, r) in xs.iter().zip(&out) {
        if x.abs() < 0.5 && *x != 0.0 {
            let s = (std::f64::consts::PI * *x as f64).sin();
            assert!(((r[0] as f64 - s) / s).abs() < 4e-7, "sinpi({x}) relative");
        }
    }
}

#[test]
fn df_sincos_for_curved_detector_angles() {
    let c = ctx();
    let mut rng = Rng(13);
    let xs: Vec<f64> = (0..400).map(|_| rng.uniform(-3.0, 3.0)).collect();
    let inputs: Vec<_> = xs
        .iter()
        .map(|&x| {
            let d = df(x);
            pair(d[0], d[1])
        })
        .collect();
    let out = c.run(Op::DfSincos, &inputs);
    for (x, r) in xs.iter().zip(&out) {
        let xd = f64_of(df(*x));
        let (s, co) = xd.sin_cos();
        assert!(
            (f64_of([r[0], r[1]]) - s).abs() < 1e-13,
            "sin({xd}) = {} want {s}",
            f64_of([r[0], r[1]])
        );
        assert!(
            (f64_of([r[2], r[3]]) - co).abs() < 1e-13,
            "cos({xd}) = {} want {co}",
            f64_of([r[2], r[3]])
        );
    }
}

// ------------------------------------------------------------------- term functions vs Rust
//
// Each function of shaders/shared/terms.wgsl, run through the compiled shader, against its twin
// in nanobragg::terms on the same f32 inputs, edge cases first (exact Bragg, the
// small-argument cut-overs, Gaussian underflow, stencil edges, NaN and huge indices). The bounds
// (in units in the last place of the Rust value, or absolute where the value crosses zero) are
// the contract between the twins; they allow for a device that contracts a*b+c into fma, flushes
// subnormals, and for WGSL's own accuracy of `exp` (3 + 2|x| ulp) and division (2.5 ulp).

use nanobragg::plan::HklGrid;
use nanobragg::terms;

/// Distance in representable f32 values (0 for equal values, +0 and -0 included).
fn ulps(a: f32, b: f32) -> u64 {
    if a == b {
        return 0;
    }
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    let key = |x: f32| {
        let i = x.to_bits() as i32 as i64;
        if i < 0 {
            i64::from(i32::MIN) - i
        } else {
            i
        }
    };
    (key(a) - key(b)).unsigned_abs()
}

/// Worst deviation seen for one term, reported with the bound.
struct Worst {
    name: &'static str,
    bound: u64,
    abs_floor: f32,
    worst: u64,
    at: String,
}

impl Worst {
    fn new(name: &'static str, bound: u64, abs_floor: f32) -> Self {
        Worst {
            name,
            bound,
            abs_floor,
            worst: 0,
            at: String::new(),
        }
    }
    /// GPU value `got` against the Rust twin's `want`: within `bound` ulp, or within `abs_floor`.
    fn check(&mut self, got: f32, want: f32, what: impl std::fmt::Display) {
        let u = ulps(got, want);
        let ok = u <= self.bound || (got - want).abs() <= self.abs_floor;
        if u > self.worst && !((got - want).abs() <= self.abs_floor) {
            self.worst = u;
            self.at = format!("{what}: GPU {got:e} vs Rust {want:e}");
        }
        assert!(
            ok,
            "{}: {what}: GPU {got:e} vs Rust {want:e} ({u} ulp > {})",
            self.name, self.bound
        );
    }
}

impl Drop for Worst {
    fn drop(&mut self) {
        eprintln!(
            "{:<22} worst {:>3} ulp (bound {:>3}, or |diff| <= {:e}) {}",
            self.name, self.worst, self.bound, self.abs_floor, self.at
        );
    }
}

fn v4(a: [f32; 4], b: [f32; 4], c: [f32; 4], d: [f32; 4]) -> [[f32; 4]; 4] {
    [a, b, c, d]
}

/// Offsets from a grating argument to probe: exact Bragg, the exact-Bragg band, the
/// small-argument cut-over, the reduction's half-integer edge, and a spread.
fn grating_deltas(n: f32, rng: &mut Rng) -> Vec<f32> {
    let s = terms::GRATING_SMALL / n;
    let mut d = vec![
        0.0,
        1e-12,
        -1e-10,
        9.9e-10,
        2e-9,
        1e-7,
        s * 0.999,
        s,
        s * 1.001,
        -s * 1.001,
        0.5,
        -0.5,
        0.499_999_97,
        0.25,
        1.0 / n,
        0.5 / n,
        1.5 / n,
    ];
    d.extend((0..200).map(|_| rng.uniform(-0.5, 0.5) as f32));
    d.extend((0..50).map(|_| (rng.uniform(-1.0, 1.0) * 1e-4) as f32));
    d
}

#[test]
fn grating_and_sinc3_match_rust_twins() {
    let c = ctx();
    let mut rng = Rng(21);
    let mut cases = Vec::new();
    for n in [2.0f32, 5.0, 10.0, 50.0, 1000.0] {
        for d in grating_deltas(n, &mut rng) {
            cases.push((d, n));
        }
    }
    // sinc3_pi reads its argument from the same slot: the series cut-over |pi y| = 1
    let one_over_pi = std::f32::consts::FRAC_1_PI;
    let up = |x: f32, n: u32| f32::from_bits(x.to_bits() + n);
    let down = |x: f32, n: u32| f32::from_bits(x.to_bits() - n);
    for y in [
        one_over_pi,
        up(one_over_pi, 1),
        down(one_over_pi, 1),
        up(one_over_pi, 3),
        0.3,
        0.32,
        1.430_297,
        2.0,
        0.0,
    ] {
        cases.push((y, 3.0));
    }
    let out = c.run(
        Op::Grating,
        &cases.iter().map(|&(d, n)| pair(d, n)).collect::<Vec<_>>(),
    );
    let mut num = Worst::new("grating_parts", 4, 0.0);
    let mut q = Worst::new("sincg_delta", 8, 0.0);
    let mut s3 = Worst::new("sinc3_pi", 16, 4e-7);
    for (&(d, n), r) in cases.iter().zip(&out) {
        // The grating's domain is |δ| <= 1/2 (δ = h - nearest integer). The sinc3 probes above
        // share the slot with arguments past it (y = 1.43, 2): there the Taylor polynomial of
        // sinpi_poly is outside its range, cancels, and a device that contracts its Horner steps
        // into fma (NVIDIA's Vulkan driver: 13 ulp on an H100) legitimately differs from Rust.
        if d.abs() <= 0.5 {
            let p = terms::grating_parts(d, n);
            num.check(r[0], p[0], format!("num(d={d:e}, N={n})"));
            num.check(r[1], p[1], format!("den(d={d:e}, N={n})"));
            q.check(r[2], terms::sincg_delta(d, n), format!("d={d:e}, N={n}"));
        }
        s3.check(r[3], terms::sinc3_pi(d), format!("y={d:e}"));
    }
    // exact Bragg gives the limit N on the device too
    assert_eq!(out[0][2], 2.0);
}

#[test]
fn lattice_shapes_match_rust_twins() {
    let c = ctx();
    let mut rng = Rng(22);
    // square and round: (deltas, N, fudge)
    let mut sq = Vec::new();
    for (na, nb, nc) in [
        (5.0f32, 5.0, 5.0),
        (1.0, 10.0, 3.0),
        (50.0, 2.0, 1.0),
        (1000.0, 1000.0, 1000.0),
    ] {
        sq.push([[0.0, 0.0, 0.0, 0.0], [na, nb, nc, 1.0]]);
        sq.push([[1e-10, -3e-10, 0.0, 0.0], [na, nb, nc, 1.0]]);
        sq.push([[0.5, -0.5, 0.25, 0.0], [na, nb, nc, 0.7]]);
        for _ in 0..100 {
            let d = [0; 3].map(|_| rng.uniform(-0.5, 0.5) as f32);
            sq.push([
                [d[0], d[1], d[2], 0.0],
                [na, nb, nc, rng.uniform(0.2, 2.0) as f32],
            ]);
        }
    }
    let inputs: Vec<_> = sq
        .iter()
        .map(|x| v4(x[0], x[1], [0.0; 4], [0.0; 4]))
        .collect();
    let out_sq = c.run(Op::LatticeSquare, &inputs);
    let out_round = c.run(Op::LatticeRound, &inputs);
    let mut ws = Worst::new("lattice_square", 16, 0.0);
    let mut wr = Worst::new("lattice_round", 24, 0.0);
    for ((x, s), r) in sq.iter().zip(&out_sq).zip(&out_round) {
        let [dh, dk, dl, _] = x[0];
        let [na, nb, nc, fudge] = x[1];
        let want = terms::lattice_square(dh, dk, dl, na, nb, nc);
        ws.check(s[0], want, format!("{:?}", x));
        // round: relative to the peak where sinc3 crosses zero
        let want = terms::lattice_round(dh, dk, dl, na, nb, nc, fudge);
        wr.abs_floor = 1e-6 * na * nb * nc;
        wr.check(r[0], want, format!("{:?}", x));
    }
    assert_eq!(out_sq[0][0], 125.0, "exact Bragg: N^3");
}

#[test]
fn gauss_and_tophat_match_rust_twins_with_f64_underflow_rule() {
    let c = ctx();
    let a_star = [0.01f32, 0.0, 0.0, 5.0];
    let b_star = [0.001f32, 0.0125, 0.0, 5.0];
    let c_star = [0.0f32, 0.002, 0.0111, 5.0];
    // r2 = |delta . star|^2 N^6; choose deltas whose Gaussian exponent -(r2/0.63 fudge) lands on
    // the edges: f32 denormals (-87.3), f32 underflow (-103.9), f64 underflow (-745.13), and the
    // top-hat threshold r2 fudge = 0.3969
    let n6 = 5.0f64.powi(6);
    let mut cases = Vec::new();
    for target in [
        0.0,
        1.0,
        20.0,
        87.0,
        87.5,
        103.5,
        104.5,
        400.0,
        744.9,
        745.3,
        1000.0,
        0.3969 / 0.63 * 0.999,
        0.3969 / 0.63 * 1.001,
    ] {
        // along h only: r2 = (dh * 0.01)^2 * N^6 (plus small b* cross terms set by dk = dl = 0)
        let dh = ((target * 0.63) / n6).sqrt() / 0.01;
        cases.push(v4([dh as f32, 0.0, 0.0, 1.0], a_star, b_star, c_star));
    }
    let mut rng = Rng(23);
    for _ in 0..200 {
        let d = [0; 3].map(|_| rng.uniform(-0.5, 0.5) as f32);
        cases.push(v4(
            [d[0], d[1], d[2], rng.uniform(0.3, 3.0) as f32],
            a_star,
            b_star,
            c_star,
        ));
    }
    let out = c.run(Op::ShapeR2, &cases);
    let mut wr2 = Worst::new("shape_r2", 12, 0.0);
    let mut wg = Worst::new("lattice_gauss", 0, 0.0);
    for (x, r) in cases.iter().zip(&out) {
        let [dh, dk, dl, fudge] = x[0];
        let (a, b, cc) = (x[1], x[2], x[3]);
        let s3 = |v: [f32; 4]| [v[0], v[1], v[2]];
        let r2 = terms::shape_r2(dh, dk, dl, s3(a), s3(b), s3(cc), a[3], b[3], cc[3]);
        wr2.check(r[0], r2, format!("{x:?}"));
        let nabc = (a[3] * b[3]) * cc[3];
        let arg = (r2 / 0.63 * fudge) as f64;
        // WGSL exp: 3 + 2|x| ulp, plus r2's own error scaled by |x|; subnormals may be flushed
        wg.bound = (3.0 + 14.0 * arg).ceil() as u64;
        wg.abs_floor = f32::MIN_POSITIVE * nabc;
        wg.check(
            r[1],
            terms::lattice_gauss(r2, nabc, fudge),
            format!("arg -{arg}"),
        );
        assert_eq!(
            r[2] != 0.0,
            terms::gauss_underflows(r2, fudge),
            "gauss_underflows at arg -{arg}"
        );
        assert_eq!(
            r[3],
            terms::lattice_tophat(r2, nabc, fudge),
            "tophat at r2 {r2}"
        );
    }
    // the f64 rule, not f32 underflow, decides the skip: exponent -400 is 0 in f32 but kept
    let i400 = 7;
    assert_eq!(out[i400][1], 0.0);
    assert_eq!(out[i400][2], 0.0);
    assert_eq!(out[i400 + 2][2], 1.0, "exponent -745.3 is 0 in f64 too");
}

#[test]
fn polarization_capture_and_solid_angle_match_rust_twins() {
    let c = ctx();
    let mut rng = Rng(24);
    let unit = |v: [f64; 3]| {
        let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        v.map(|x| x / n)
    };
    let mut pol = Vec::new();
    let frame = terms::PolarFrame::new([1.0, 0.0, 0.0], [0.0, 0.0, 1.0]);
    let f32v = |v: [f64; 3]| [v[0] as f32, v[1] as f32, v[2] as f32, 0.0];
    let mut dirs = vec![
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [-1.0, 0.0, 0.0],
    ];
    dirs.extend((0..150).map(|_| unit([0; 3].map(|_| rng.uniform(-1.0, 1.0)))));
    for d in dirs {
        for k in [0.0f32, 0.5, 0.99, 1.0] {
            let mut i = f32v(frame.i);
            i[3] = k;
            pol.push(v4(i, f32v(d), f32v(frame.e_in), f32v(frame.b_in)));
        }
    }
    let out = c.run(Op::Polarization, &pol);
    let mut wp = Worst::new("polarization", 8, 2f32.powi(-22));
    let s3 = |v: [f32; 4]| [v[0], v[1], v[2]];
    for (x, r) in pol.iter().zip(&out) {
        let want = terms::polarization(x[0][3], s3(x[0]), s3(x[1]), s3(x[2]), s3(x[3]));
        wp.check(r[0], want, format!("{x:?}"));
    }
    // capture fraction (t, mu_step, rho), the series cut-over of 1 - exp(-x), solid angle
    let mut cap = Vec::new();
    for x in [1e-8f32, 1e-4, 0.0099, 0.0999, 0.1, 0.1001, 0.5, 3.0, 30.0] {
        for t in [0.0f32, 1.0, 4.0] {
            for rho in [1.0f32, 0.7, 0.2] {
                cap.push(v4([t, x * rho, rho, 0.0], [0.0; 4], [0.0; 4], [0.0; 4]));
            }
        }
    }
    for _ in 0..100 {
        let inv_r = rng.uniform(1.0, 20.0) as f32;
        let point = if rng.next_u64() & 1 == 0 { 0.0 } else { 1.0 };
        cap.push(v4(
            [
                rng.uniform(0.0, 5.0).floor() as f32,
                rng.uniform(1e-4, 2.0) as f32,
                rng.uniform(0.1, 1.0) as f32,
                0.0,
            ],
            [inv_r, 1e-8, rng.uniform(0.05, 0.5) as f32, point],
            [0.0; 4],
            [0.0; 4],
        ));
    }
    let out = c.run(Op::CaptureSolidAngle, &cap);
    let mut wc = Worst::new("capture_fraction", 0, 0.0);
    let mut we = Worst::new("one_minus_exp_neg", 0, 0.0);
    let mut ws = Worst::new("solid_angle", 6, 0.0);
    for (x, r) in cap.iter().zip(&out) {
        let [t, mu_step, rho, _] = x[0];
        let xx = (mu_step / rho) as f64;
        // exp's 3 + 2|x| ulp on each factor, and 1 - exp(-x) above the cut-over loses
        // log2(1/x) bits to cancellation
        let cancel = if mu_step.abs() < 0.1 {
            1.0
        } else {
            1.0 / (1.0 - (-mu_step as f64).exp())
        };
        we.bound = (8.0 * cancel).ceil() as u64;
        we.check(
            r[1],
            terms::one_minus_exp_neg(mu_step),
            format!("x={mu_step}"),
        );
        let cancel = if xx < 0.1 {
            1.0
        } else {
            1.0 / (1.0 - (-xx).exp())
        };
        wc.bound = (8.0 + 2.0 * (t as f64 + 1.0) * xx + 8.0 * cancel).ceil() as u64;
        wc.check(
            r[0],
            terms::capture_fraction(t, mu_step, rho),
            format!("t={t} mu_step={mu_step} rho={rho}"),
        );
        let [inv_r, px2, close, point] = x[1];
        ws.check(
            r[2],
            terms::solid_angle(inv_r, px2, close, point != 0.0),
            format!("{:?}", x[1]),
        );
    }
}

#[test]
fn guards_match_rust_twins() {
    let c = ctx();
    let big = terms::INDEX_LIMIT as f32;
    let below = f32::from_bits(big.to_bits() - 1);
    let hs = [
        0.0f32,
        -0.0,
        1.0,
        -7.5,
        1e-30,
        f32::from_bits(1),
        1e9,
        below,
        -below,
        big,
        -big,
        3e9,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
    ];
    let exact = [
        (0.0f32, 3.0f32),
        (1e-10, 3.0),
        (-9.9e-10, -5.0),
        (1e-10, 0.0),
        (2e-9, 3.0),
        (-1.1e-9, 7.0),
        (0.3, 1.0),
    ];
    let rounds = [
        0.5f32,
        1.5,
        2.5,
        -0.5,
        -2.5,
        3.4999998,
        1e6 + 0.5,
        4194303.5,
        -4194302.5,
        123.456,
    ];
    let n = hs.len().max(exact.len()).max(rounds.len());
    let cases: Vec<_> = (0..n)
        .map(|i| {
            let (d, near) = exact[i % exact.len()];
            v4(
                [hs[i % hs.len()], d, near, rounds[i % rounds.len()]],
                [0.0; 4],
                [0.0; 4],
                [0.0; 4],
            )
        })
        .collect();
    let out = c.run(Op::Guards, &cases);
    let mut wsin = Worst::new("sinpi", 4, 0.0);
    for (x, r) in cases.iter().zip(&out) {
        let [h, d, near, v] = x[0];
        assert_eq!(r[0] != 0.0, terms::index_ok(h as f64), "index_ok({h:e})");
        assert_eq!(
            r[1] != 0.0,
            terms::is_exact_bragg(d as f64, near as f64),
            "is_exact_bragg({d:e}, {near})"
        );
        assert_eq!(r[2], terms::round_even(v), "round_even({v})");
        wsin.check(r[3], terms::sinpi(v), format!("sinpi({v})"));
    }
}

/// A table over [lo, hi]^3 from `f`, and its f32 copy.
fn table(lo: i32, hi: i32, f: impl Fn(f64, f64, f64) -> f64) -> (HklGrid, Vec<f32>) {
    let g = HklGrid::from_fn(lo, hi, f);
    let f32s = g.data.iter().map(|&v| v as f32).collect();
    (g, f32s)
}

fn box_inputs(g: &HklGrid, present: bool) -> ([f32; 4], [f32; 4]) {
    (
        [
            g.h_min as f32,
            g.k_min as f32,
            g.l_min as f32,
            if present { 1.0 } else { 0.0 },
        ],
        [
            g.h_range() as f32,
            g.k_range() as f32,
            g.l_range() as f32,
            0.0,
        ],
    )
}

#[test]
fn structure_factor_lookups_match_rust_twins() {
    let c = ctx();
    // nearest: a table over 5..=8 (the failing case of issue 10 has no index 0 in its table)
    let (g, t32) = table(5, 8, |h, k, l| 100.0 * h + 10.0 * k + l);
    let idx = [-1.0f32, 0.0, 4.0, 5.0, 6.0, 8.0, 9.0, 1e6];
    let mut cases = Vec::new();
    for present in [true, false] {
        let (lo, range) = box_inputs(&g, present);
        for &h in &idx {
            for &k in &[5.0f32, 8.0, 9.0] {
                cases.push(v4([h, k, 6.0, 42.5], lo, range, [0.0; 4]));
            }
        }
    }
    let out = c.run_with_table(Op::FNearest, &cases, &t32);
    for (x, r) in cases.iter().zip(&out) {
        let [h0, k0, l0, def] = x[0];
        let mut gg = g.clone();
        if x[1][3] == 0.0 {
            gg.hkls = 0;
        }
        let want = terms::f_nearest(&gg, def as f64, h0 as f64, k0 as f64, l0 as f64) as f32;
        assert_eq!(r[0], want, "f_nearest({h0}, {k0}, {l0}), table {}", x[1][3]);
    }

    // tricubic: exact for cubics; df64 indices at the stencil edges of a table over -5..=5
    let f = |h: f64, k: f64, l: f64| 50.0 + 0.5 * h * h * h - k * k + 2.0 * l + 0.1 * h * k * l;
    let (g, t32) = table(-5, 5, f);
    let peak = g.data.iter().fold(0f64, |m, v| m.max(v.abs()));
    let (lo, range) = box_inputs(&g, true);
    let tiny = 2f64.powi(-30);
    let mut xs: Vec<f64> = vec![
        -3.0,
        -3.0 - tiny,
        -3.0 + tiny,
        3.0,
        3.0 + tiny,
        3.0 - tiny,
        -0.3,
        -1e-9,
        0.0,
        1e-9,
        0.999_999_999,
        2.5,
        -2.9999,
    ];
    let mut rng = Rng(25);
    xs.extend((0..40).map(|_| rng.uniform(-3.2, 3.2)));
    let mut cases = Vec::new();
    let mut want = Vec::new();
    for (i, &h) in xs.iter().enumerate() {
        let k = xs[(i * 7 + 3) % xs.len()];
        let l = xs[(i * 13 + 5) % xs.len()];
        let (dh, dk, dl) = (df(h), df(k), df(l));
        cases.push(v4(
            [dh[0], dk[0], dl[0], 0.0],
            [dh[1], dk[1], dl[1], 0.0],
            lo,
            range,
        ));
        // the Rust twin on the same df64 values, in f64
        let (h, k, l) = (f64_of(dh), f64_of(dk), f64_of(dl));
        let leaves = terms::stencil_leaves_table(&g, h, k, l);
        want.push((
            h,
            k,
            l,
            leaves,
            if leaves {
                0.0
            } else {
                terms::f_tricubic_at(&g, h, k, l)
            },
        ));
    }
    let out = c.run_with_table(Op::FTricubic, &cases, &t32);
    let mut worst = 0f64;
    for (&(h, k, l, leaves, v), r) in want.iter().zip(&out) {
        assert_eq!(r[1] != 0.0, leaves, "stencil_leaves_table({h}, {k}, {l})");
        let rel = (r[0] as f64 - v).abs() / peak;
        worst = worst.max(rel);
        assert!(
            rel < 2e-6,
            "f_tricubic({h}, {k}, {l}): GPU {} vs Rust {v} ({rel:e} of the peak)",
            r[0]
        );
    }
    eprintln!("f_tricubic             worst {worst:.2e} of the table's peak (bound 2e-6)");
    assert!(want.iter().filter(|w| w.3).count() >= 3 && want.iter().filter(|w| !w.3).count() >= 30);

    // polint4 alone, from node differences
    let mut cases = Vec::new();
    let mut want = Vec::new();
    for _ in 0..200 {
        let x = rng.uniform(-50.0, 50.0);
        let xf = x.floor();
        let dx = terms::node_diffs(x, xf);
        let y = [0; 4].map(|_| rng.uniform(-100.0, 100.0));
        let dx32 = dx.map(|v| v as f32);
        let y32 = y.map(|v| v as f32);
        cases.push(v4(dx32, y32, [0.0; 4], [0.0; 4]));
        want.push(terms::polint4(dx32.map(f64::from), y32.map(f64::from)));
    }
    let out = c.run(Op::Polint4, &cases);
    for (w, r) in want.iter().zip(&out) {
        assert!(
            (r[0] as f64 - w).abs() < 1e-5 * 100.0,
            "polint4: GPU {} vs Rust {w}",
            r[0]
        );
    }
}

// ------------------------------------------------------------------ derivative twins (§10.5)
// Every `*_d` function of shaders/shared/terms.wgsl against its Rust twin in `crate::terms`,
// with the policy of the value twins above: within `bound` ulp, or within an absolute floor set
// by the derivative's own scale (where it crosses zero or a difference cancels), the worst
// printed. Each value returned beside the derivatives is checked to the value twin's bound.

/// One part of a derivative result: the value and three partials.
fn check4(w: &mut [Worst; 2], got: [f32; 4], want: (f32, [f32; 3]), what: &str) {
    w[0].check(got[0], want.0, format!("value {what}"));
    for c in 0..3 {
        w[1].check(got[1 + c], want.1[c], format!("[{c}] {what}"));
    }
}

#[test]
fn grating_and_lattice_derivatives_match_rust_twins() {
    let c = ctx();
    let mut rng = Rng(31);
    // sincg_delta_d over the grating's domain, three nearest integers; sinc3_pi_d_over_x beside
    let two_over_pi = 2.0 * std::f32::consts::FRAC_1_PI;
    let up = |x: f32, n: u32| f32::from_bits(x.to_bits() + n);
    let mut cases = Vec::new();
    for n in [2.0f32, 5.0, 10.0, 50.0, 1000.0] {
        for d in grating_deltas(n, &mut rng) {
            for m in [0.0f32, 3.0, -7.0] {
                let y = match cases.len() % 5 {
                    0 => two_over_pi,
                    1 => up(two_over_pi, 1),
                    2 => f32::from_bits(two_over_pi.to_bits() - 1),
                    _ => d * 7.0,
                };
                cases.push([d, n, m, y]);
            }
        }
    }
    let inputs: Vec<_> = cases
        .iter()
        .map(|&x| v4(x, [0.0; 4], [0.0; 4], [0.0; 4]))
        .collect();
    let out = c.run(Op::GratingD, &inputs);
    let mut wv = Worst::new("sincg_delta_d value", 8, 0.0);
    let mut wd = Worst::new("sincg_delta_d d/dδ", 16, 0.0);
    let mut wn = Worst::new("sincg_delta_d d/dN", 16, 0.0);
    let mut ws = Worst::new("sinc3_pi_d_over_x", 16, 0.0);
    for (x, r) in cases.iter().zip(&out) {
        let [d, n, m, y] = *x;
        let what = format!("d={d:e} N={n} m={m}");
        ws.abs_floor = 4e-8;
        ws.check(r[3], terms::sinc3_pi_d_over_x(y), format!("y={y:e}"));
        if d.abs() > 0.5 {
            continue;
        }
        let want = terms::sincg_delta_d(d, n, m);
        wv.check(r[0], want[0], &what);
        // d/dδ crosses zero at the side lobes' peaks: floor 1e-6 of its scale N²π
        wd.abs_floor = 1e-6 * n * n * std::f32::consts::PI;
        wd.check(r[1], want[1], &what);
        // d/dN = π·h·cos(πNδ)/sin(πδ) carries the rounding of Nδ through the cosine
        let sd = (std::f32::consts::PI * d).sin().abs().max(1e-30);
        wn.abs_floor = 1e-6 * (m.abs() + d.abs() + 1.0) / sd * (n * d.abs()).max(1.0);
        wn.check(r[2], want[2], &what);
    }
    assert_eq!(out[0][0], 2.0, "exact Bragg: N");
    assert_eq!(out[0][1], 0.0, "exact Bragg: d/dδ = 0");
    assert_eq!(out[0][2], 1.0, "h = 0: d/dN = 1");

    // lattice_square_d and lattice_round_d, both parts; lattice_square_d_with without d/dN
    let mut sq = Vec::new();
    for (na, nb, nc) in [
        (5.0f32, 5.0, 5.0),
        (1.0, 10.0, 3.0),
        (50.0, 2.0, 1.0),
        (1000.0, 1000.0, 1000.0),
    ] {
        sq.push([
            [0.0, 0.0, 0.0, 1.0],
            [0.0, 2.0, -3.0, 0.0],
            [na, nb, nc, 0.0],
        ]);
        sq.push([
            [0.5, -0.5, 0.25, 0.7],
            [1.0, 0.0, 4.0, 0.0],
            [na, nb, nc, 0.0],
        ]);
        for _ in 0..100 {
            let d = [0; 3].map(|_| rng.uniform(-0.5, 0.5) as f32);
            let m = [0; 3].map(|_| rng.uniform(-20.0, 20.0).round() as f32);
            sq.push([
                [d[0], d[1], d[2], rng.uniform(0.2, 2.0) as f32],
                [m[0], m[1], m[2], 0.0],
                [na, nb, nc, 0.0],
            ]);
        }
    }
    let mut ws = [
        Worst::new("lattice_square_d value", 16, 0.0),
        Worst::new("lattice_square_d", 24, 0.0),
    ];
    let mut wr = [
        Worst::new("lattice_round_d value", 24, 0.0),
        Worst::new("lattice_round_d", 24, 0.0),
    ];
    for (part, without_n) in [(0.0f32, false), (1.0, false), (0.0, true), (1.0, true)] {
        let flag = if without_n { 1.0 } else { 0.0 };
        let inputs: Vec<_> = sq
            .iter()
            .map(|x| v4(x[0], x[1], x[2], [0.0, 0.0, flag, part]))
            .collect();
        let out_sq = c.run(Op::LatticeSquareD, &inputs);
        let out_round = c.run(Op::LatticeRoundD, &inputs);
        for ((x, s), r) in sq.iter().zip(&out_sq).zip(&out_round) {
            let d = [x[0][0], x[0][1], x[0][2]];
            let m = [x[1][0], x[1][1], x[1][2]];
            let n = [x[2][0], x[2][1], x[2][2]];
            let fudge = x[0][3];
            let nabc = n[0] * n[1] * n[2];
            let what = format!("{x:?} part {part} without d/dN {without_n}");
            let (v, dd, dn) = if without_n {
                terms::lattice_square_d_with::<false>(d, m, n)
            } else {
                terms::lattice_square_d(d, m, n)
            };
            if without_n && part == 1.0 {
                assert_eq!(s[1..], [0.0; 3], "{what}: d/dN left out");
            }
            // floors: 1e-6 of each partial's scale (the N-partial of an axis grows like h/δ)
            let sd: f32 = (0..3)
                .map(|a| {
                    let s = (std::f32::consts::PI * d[a]).sin().abs().max(1e-30);
                    (m[a].abs() + 1.0) / s * (n[a] * d[a].abs()).max(1.0)
                })
                .fold(0.0, f32::max);
            ws[1].abs_floor = if part == 0.0 {
                1e-6 * nabc * n.iter().fold(0f32, |a, b| a.max(*b)) * 4.0
            } else {
                1e-6 * nabc * sd
            };
            check4(&mut ws, *s, (v, if part == 0.0 { dd } else { dn }), &what);
            let (v, dd, dn) = terms::lattice_round_d(d, n, fudge);
            wr[0].abs_floor = 1e-6 * nabc;
            wr[1].abs_floor = 1e-6 * nabc * n.iter().fold(0f32, |a, b| a.max(*b));
            check4(&mut wr, *r, (v, if part == 0.0 { dd } else { dn }), &what);
        }
    }
}

#[test]
fn shape_polarization_capture_and_solid_angle_derivatives_match_rust_twins() {
    let c = ctx();
    let mut rng = Rng(32);
    // shape_r2_d, its five parts; lattice_gauss_d and lattice_tophat_d on its r2
    let a_star = [0.01f32, 0.0, 0.0];
    let b_star = [0.001f32, 0.0125, 0.0];
    let c_star = [0.0f32, 0.002, 0.0111];
    let mut cases = Vec::new();
    for n in [[5.0f32, 5.0, 5.0], [10.0, 3.0, 1.0], [100.0, 100.0, 100.0]] {
        for _ in 0..60 {
            let d = [0; 3].map(|_| rng.uniform(-0.5, 0.5) as f32);
            cases.push((d, n, rng.uniform(0.3, 3.0) as f32));
        }
        cases.push(([0.0; 3], n, 1.0));
    }
    let mut wr = [
        Worst::new("shape_r2_d value", 12, 0.0),
        Worst::new("shape_r2_d", 16, 0.0),
    ];
    let mut wg = [
        Worst::new("lattice_gauss_d value", 0, 0.0),
        Worst::new("lattice_gauss_d", 0, 0.0),
    ];
    let w3 = |v: [f32; 3], x: f32| [v[0], v[1], v[2], x];
    let mut gauss_in = Vec::new();
    for part in 0..5 {
        let inputs: Vec<_> = cases
            .iter()
            .map(|(d, n, _)| {
                v4(
                    w3(*d, part as f32),
                    w3(a_star, n[0]),
                    w3(b_star, n[1]),
                    w3(c_star, n[2]),
                )
            })
            .collect();
        let out = c.run(Op::ShapeR2D, &inputs);
        for ((d, n, fudge), r) in cases.iter().zip(&out) {
            let (r2, dd, dn, ds) = terms::shape_r2_d(*d, [a_star, b_star, c_star], *n);
            let want = match part {
                0 => dd,
                1 => dn,
                p => ds[p - 2],
            };
            let n6 = (n[0] * n[1] * n[2]).powi(2);
            // floors: the partials are sums of products over the three axes
            wr[1].abs_floor = 1e-6 * n6 * 0.0125 * 0.0125 * 4.0;
            check4(
                &mut wr,
                *r,
                (r2, want),
                &format!("{d:?} N={n:?} part {part}"),
            );
            if part == 0 {
                gauss_in.push((r2, n[0] * n[1] * n[2], *fudge));
            }
        }
    }
    let mut inputs = Vec::new();
    for &(r2, nabc, fudge) in &gauss_in {
        for t in [0.0f32, 1.0] {
            inputs.push(v4([r2, nabc, fudge, t], [0.0; 4], [0.0; 4], [0.0; 4]));
        }
    }
    // the top hat's edge
    for f in [0.3969f32 * 0.999, 0.3969 * 1.001] {
        inputs.push(v4([f, 125.0, 1.0, 1.0], [0.0; 4], [0.0; 4], [0.0; 4]));
    }
    let out = c.run(Op::GaussTophatD, &inputs);
    for (x, r) in inputs.iter().zip(&out) {
        let [r2, nabc, fudge, t] = x[0];
        if t == 0.0 {
            let want = terms::lattice_gauss_d(r2, nabc, fudge);
            let arg = (r2 / 0.63 * fudge) as f64;
            // WGSL exp: 3 + 2|x| ulp (as lattice_gauss), then one product and one division
            for w in wg.iter_mut() {
                w.bound = (3.0 + 14.0 * arg).ceil() as u64 + 4;
                w.abs_floor = f32::MIN_POSITIVE * nabc * fudge / 0.63;
            }
            wg[0].check(r[0], want[0], format!("arg -{arg}"));
            wg[1].check(r[1], want[1], format!("d/dr2 arg -{arg}"));
            wg[1].check(r[2], want[2], format!("d/dnabc arg -{arg}"));
        } else {
            let want = terms::lattice_tophat_d(r2, nabc, fudge);
            assert_eq!(
                [r[0], r[1], r[2]],
                want,
                "lattice_tophat_d({r2}, {nabc}, {fudge})"
            );
        }
    }
    assert_eq!(out[out.len() - 2][2], 1.0);
    assert_eq!(out[out.len() - 1][2], 0.0);

    // polarization_d
    let unit = |v: [f64; 3]| {
        let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        v.map(|x| x / n)
    };
    let frame = terms::PolarFrame::new([1.0, 0.0, 0.0], [0.0, 0.0, 1.0]);
    let f32v = |v: [f64; 3]| [v[0] as f32, v[1] as f32, v[2] as f32, 0.0];
    let mut dirs = vec![
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.999, 0.001, 0.0],
    ];
    dirs.extend((0..150).map(|_| unit([0; 3].map(|_| rng.uniform(-1.0, 1.0)))));
    let mut pol = Vec::new();
    for d in dirs {
        for k in [0.0f32, 0.5, 0.99, 1.0] {
            let mut i = f32v(frame.i);
            i[3] = k;
            pol.push(v4(i, f32v(unit(d)), f32v(frame.e_in), f32v(frame.b_in)));
        }
    }
    let out = c.run(Op::PolarizationD, &pol);
    let mut wp = [
        Worst::new("polarization_d value", 8, 2f32.powi(-22)),
        Worst::new("polarization_d", 16, 4e-7),
    ];
    let s3 = |v: [f32; 4]| [v[0], v[1], v[2]];
    for (x, r) in pol.iter().zip(&out) {
        let want = terms::polarization_d(x[0][3], s3(x[0]), s3(x[1]), s3(x[2]), s3(x[3]));
        check4(&mut wp, *r, want, &format!("{x:?}"));
    }

    // capture_fraction_d and solid_angle_d
    let mut cap = Vec::new();
    for x in [1e-8f32, 1e-4, 0.0099, 0.0999, 0.1, 0.1001, 0.5, 3.0, 30.0] {
        for t in [0.0f32, 1.0, 4.0] {
            for rho in [1.0f32, 0.7, 0.2] {
                cap.push(v4([t, x * rho, rho, 0.0], [0.0; 4], [0.0; 4], [0.0; 4]));
            }
        }
    }
    for _ in 0..100 {
        let point = if rng.next_u64() & 1 == 0 { 0.0 } else { 1.0 };
        cap.push(v4(
            [0.0, 0.0, 1.0, 1.0],
            [
                rng.uniform(1.0, 20.0) as f32,
                1e-8,
                rng.uniform(0.05, 0.5) as f32,
                point,
            ],
            [0.0; 4],
            [0.0; 4],
        ));
    }
    let out = c.run(Op::CaptureSolidAngleD, &cap);
    let mut wc = Worst::new("capture_fraction_d", 0, 0.0);
    let mut ws = Worst::new("solid_angle_d", 6, 0.0);
    for (x, r) in cap.iter().zip(&out) {
        if x[0][3] == 0.0 {
            let [t, mu_step, rho, _] = x[0];
            let xx = (mu_step / rho) as f64;
            let cancel = if xx < 0.1 {
                1.0
            } else {
                1.0 / (1.0 - (-xx).exp())
            };
            // as capture_fraction: exp's 3 + 2|x| ulp per factor, the cancellation of 1 − e^−x;
            // and d/dρ's bracket e^−x − t(1 − e^−x) crosses zero (floor: its terms' size)
            let want = terms::capture_fraction_d(t, mu_step, rho);
            wc.bound = (8.0 + 2.0 * (t as f64 + 1.0) * xx + 8.0 * cancel).ceil() as u64;
            wc.abs_floor = 0.0;
            wc.check(r[0], want[0], format!("t={t} mu_step={mu_step} rho={rho}"));
            wc.bound += 8;
            wc.abs_floor =
                1e-6 * (xx / rho as f64 * (-(t as f64) * xx).exp() * (1.0 + t as f64)) as f32;
            wc.check(
                r[1],
                want[1],
                format!("d/dρ t={t} mu_step={mu_step} rho={rho}"),
            );
        } else {
            let [inv_r, px2, close, point] = x[1];
            let want = terms::solid_angle_d(inv_r, px2, close, point != 0.0);
            for k in 0..3 {
                ws.check(r[k], want[k], format!("[{k}] {:?}", x[1]));
            }
        }
    }
}

#[test]
fn tricubic_derivative_matches_rust_twin() {
    let c = ctx();
    let f = |h: f64, k: f64, l: f64| 50.0 + 0.5 * h * h * h - k * k + 2.0 * l + 0.1 * h * k * l;
    let (g, t32) = table(-5, 5, f);
    let peak = g.data.iter().fold(0f64, |m, v| m.max(v.abs()));
    let (lo, range) = box_inputs(&g, true);
    let mut rng = Rng(33);
    let mut xs: Vec<f64> = vec![
        -3.0,
        3.0,
        -0.3,
        -1e-9,
        0.0,
        1e-9,
        0.999_999_999,
        2.5,
        3.0001,
        -3.0001,
        3.1,
        -3.15,
    ];
    xs.extend((0..40).map(|_| rng.uniform(-3.2, 3.2)));
    let mut cases = Vec::new();
    let mut want = Vec::new();
    for (i, &h) in xs.iter().enumerate() {
        let k = xs[(i * 7 + 3) % xs.len()];
        let l = xs[(i * 13 + 5) % xs.len()];
        let (dh, dk, dl) = (df(h), df(k), df(l));
        cases.push(v4(
            [dh[0], dk[0], dl[0], 0.0],
            [dh[1], dk[1], dl[1], 0.0],
            lo,
            range,
        ));
        let (h, k, l) = (f64_of(dh), f64_of(dk), f64_of(dl));
        let leaves = terms::stencil_leaves_table(&g, h, k, l);
        let grad = if leaves {
            [0.0; 3]
        } else {
            terms::f_tricubic_d(&g, h, k, l)
        };
        want.push((h, k, l, leaves, grad));
    }
    let out = c.run_with_table(Op::FTricubicD, &cases, &t32);
    let mut worst = 0f64;
    for (&(h, k, l, leaves, grad), r) in want.iter().zip(&out) {
        assert_eq!(r[3] != 0.0, leaves, "stencil_leaves_table({h}, {k}, {l})");
        for a in 0..3 {
            // as f_tricubic: relative to the table's peak (the gradient is of its size)
            let rel = (r[a] as f64 - grad[a]).abs() / peak;
            worst = worst.max(rel);
            assert!(
                rel < 2e-6,
                "f_tricubic_d({h}, {k}, {l})[{a}]: GPU {} vs Rust {} ({rel:e} of the peak)",
                r[a],
                grad[a]
            );
        }
    }
    eprintln!("f_tricubic_d           worst {worst:.2e} of the table's peak (bound 2e-6)");
    let leaving = want.iter().filter(|w| w.3).count();
    assert!(
        leaving >= 3 && want.len() - leaving >= 20,
        "{leaving} of {} leave",
        want.len()
    );
    // the gradient of a cubic is exact: at (0.3, -1.7, 2.2) against the analytic one
    let (h, k, l) = (0.3, -1.7, 2.2);
    let exact = [
        1.5 * h * h + 0.1 * k * l,
        -2.0 * k + 0.1 * h * l,
        2.0 + 0.1 * h * k,
    ];
    let got = terms::f_tricubic_d(&g, h, k, l);
    for a in 0..3 {
        assert!(
            (got[a] - exact[a]).abs() < 1e-9,
            "f_tricubic_d exact for a cubic"
        );
    }

    // polint4_d alone
    let mut cases = Vec::new();
    let mut want = Vec::new();
    for _ in 0..200 {
        let x = rng.uniform(-50.0, 50.0);
        let dx = terms::node_diffs(x, x.floor()).map(|v| v as f32);
        let y = [0; 4].map(|_| rng.uniform(-100.0, 100.0) as f32);
        cases.push(v4(dx, y, [0.0; 4], [0.0; 4]));
        want.push(terms::polint4_d(dx.map(f64::from), y.map(f64::from)));
    }
    let out = c.run(Op::Polint4D, &cases);
    for (w, r) in want.iter().zip(&out) {
        assert!(
            (r[0] as f64 - w).abs() < 1e-5 * 100.0,
            "polint4_d: GPU {} vs Rust {w}",
            r[0]
        );
    }
}
