//! Every double-float trick run through the real compiled shader (`shaders/selftest.wgsl` +
//! `shaders/shared/df64.wgsl`) on the test device, checked against f64 on the host.
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
        pollster::block_on(self.st.run(&self.device, &self.queue, op, cases))
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
