//! The refinement (`api::fit`, MODEL §10, issue 20 §3) on Poisson-noisy simulated stills: the
//! target is the set-up moved by known offsets (0.5° about each axis, +0.5 % on each cell
//! edge, …) with Poisson noise (upstream's `poidev`); the fit starts at the set-up's values
//! and must recover the offsets (orientation within 0.02°, cell within 0.05 %). Times are
//! printed (`--nocapture`); the verdict (`converged`) is checked against the truth over starts
//! beyond the convergence radius.

mod common;
use nanobragg::api::{self, FitOptions, Loss, Param, Prepared};
use nanobragg::files::DiskFiles;
use nanobragg::rng::{Noise, RanState};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// A triclinic cell on a small detector (64×64 pixels of 0.4 mm), N = 5 cells, bright spots.
const ARGS: &str = "-default_F 100 -cell 70 80 90 75 85 95 -misset 15 25 35 -N 5 -lambda 1.2 \
                    -distance 120 -pixel 0.4 -detpixels 64 -Xbeam 12.5 -Ybeam 14.0 -fluence 3e29";

fn prepare() -> Prepared {
    api::prepare(&api::split_args(ARGS), &DiskFiles).unwrap()
}

const DEG: f64 = std::f64::consts::PI / 180.0;
const CELL: [f64; 3] = [70.0, 80.0, 90.0];

/// The target: the set-up moved by `truth`, with Poisson noise (seed `seed`).
fn target(prep: &Prepared, truth: &[(Param, f64)], seed: i64) -> Vec<f64> {
    let cancel = AtomicBool::new(false);
    let plan = api::moved_plan(prep, &DiskFiles, truth).unwrap();
    let clean = api::render_f64(&plan, &cancel).unwrap();
    let (mut st, mut noise, mut idum) = (RanState::new(), Noise::new(), -seed.abs());
    clean
        .iter()
        .map(|&v| noise.poidev(&mut st, v as f32, &mut idum) as f64)
        .collect()
}

fn truth_off(rot_deg: f64, cell_share: f64) -> Vec<(Param, f64)> {
    common::rot_cell_offsets(rot_deg, cell_share, CELL)
}

/// Orientation error (°, largest axis) and cell error (share, largest edge) of a fit.
fn errors(fit: &api::Fit, truth: &[(Param, f64)]) -> (f64, f64) {
    common::fit_errors(fit, truth, CELL)
}

const ORIENT_CELL: [Param; 7] = [
    Param::RotX,
    Param::RotY,
    Param::RotZ,
    Param::CellA,
    Param::CellB,
    Param::CellC,
    Param::Scale,
];

#[test]
fn recovers_orientation_and_cell_from_a_noisy_still() {
    let prep = prepare();
    let truth = truth_off(0.5, 0.005);
    let t = target(&prep, &truth, 7);
    let peak = t.iter().fold(0f64, |m, &v| m.max(v));
    assert!(
        peak > 200.0,
        "the target is too faint to fit ({peak} photons at most)"
    );
    let cancel = AtomicBool::new(false);
    let mut steps = 0;
    let t0 = Instant::now();
    let fit = api::fit(
        &prep,
        &DiskFiles,
        &t,
        &FitOptions::new(&ORIENT_CELL),
        &mut |_| steps += 1,
        &cancel,
    )
    .unwrap();
    let secs = t0.elapsed().as_secs_f64();
    let (rot, cell) = errors(&fit, &truth);
    println!(
        "orientation+cell+scale: {} iterations, {} cycles, {} pixels, {secs:.2} s; \
         error {rot:.4}° / {:.4} %; cost {:?}",
        fit.iterations,
        fit.cycles,
        fit.pixels,
        cell * 100.0,
        fit.history
    );
    assert!(fit.converged, "the fit did not converge: {fit:?}");
    assert!(rot <= 0.02, "orientation off by {rot}° after the fit");
    assert!(cell <= 5e-4, "cell off by {} % after the fit", cell * 100.0);
    assert_eq!(steps + fit.cycles, fit.history.len());
    // the cost fell (the start is 0.5°/0.5 % off: far worse than the noise)
    assert!(fit.history[0] > 5.0 * fit.history.last().unwrap());
    // the scale is recovered too (the truth is the set-up's scale), within the noise's bias
    let s = fit.values[6];
    assert!(s.abs() < 0.02, "scale off by {s}");
}

#[test]
fn fits_distance_beam_centre_and_scale_too_up_to_the_distance_cell_degeneracy() {
    let prep = prepare();
    let mut truth = truth_off(0.5, 0.005);
    truth.extend([
        (Param::Distance, 0.6),
        (Param::BeamX, 0.2),
        (Param::BeamY, -0.2),
    ]);
    let t = target(&prep, &truth, 11);
    let params = [
        &ORIENT_CELL[..],
        &[Param::Distance, Param::BeamX, Param::BeamY],
    ]
    .concat();
    let cancel = AtomicBool::new(false);
    let t0 = Instant::now();
    let mut o = FitOptions::new(&params);
    o.loss = Loss::Cauchy(3.0);
    let fit = api::fit(&prep, &DiskFiles, &t, &o, &mut |_| {}, &cancel).unwrap();
    let (rot, cell) = errors(&fit, &truth);
    println!(
        "10 parameters: {} iterations, {:.2} s; error {rot:.4}° / {:.4} %; values {:?}",
        fit.iterations,
        t0.elapsed().as_secs_f64(),
        cell * 100.0,
        fit.values
    );
    assert!(fit.converged);
    assert!(rot <= 0.02, "orientation off by {rot}°");
    let value = |p: Param| fit.values[params.iter().position(|&q| q == p).unwrap()];
    let want = |p: Param| truth.iter().find(|(q, _)| *q == p).unwrap().1;
    for p in [Param::BeamX, Param::BeamY] {
        let d = value(p) - want(p);
        assert!(d.abs() < 0.01, "{}: off by {d} mm", p.name());
    }
    // A still on a small detector does not tell the distance from the cell's scale (spots
    // sit at D·tan 2θ, sin θ = λ/2d: at low angles a longer distance and a larger cell move
    // them alike); what it fixes is each cell edge over the distance, to within 0.05 %.
    let dd = value(Param::Distance) / 120.0 - want(Param::Distance) / 120.0;
    for (i, p) in [Param::CellA, Param::CellB, Param::CellC]
        .into_iter()
        .enumerate()
    {
        let ratio = |c: f64, d: f64| (1.0 + c / CELL[i]) / (1.0 + d / 120.0);
        let e =
            ratio(value(p), value(Param::Distance)) / ratio(want(p), want(Param::Distance)) - 1.0;
        assert!(
            e.abs() < 5e-4,
            "{} over the distance: off by {} %",
            p.name(),
            e * 100.0
        );
    }
    println!(
        "distance and cell scale moved together by {:.3} %",
        dd * 100.0
    );
}

/// A target in ADU (gain 2, offset 40) over a background (40 photons, sloping to 60 across the
/// detector), with Poisson noise: the local background model and the stated gain and offset
/// bring back orientation and cell from 0.5° / 0.5 % off, and the scale.
#[test]
fn recovers_orientation_and_cell_over_a_background_in_adu() {
    let prep = prepare();
    let truth = truth_off(0.5, 0.005);
    let cancel = AtomicBool::new(false);
    let plan = api::moved_plan(&prep, &DiskFiles, &truth).unwrap();
    let clean = api::render_f64(&plan, &cancel).unwrap();
    let (mut st, mut noise, mut idum) = (RanState::new(), Noise::new(), -13i64);
    let t: Vec<f64> = clean
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let bg = 40.0 + 20.0 * (i % 64) as f64 / 63.0;
            2.0 * noise.poidev(&mut st, (v + bg) as f32, &mut idum) as f64 + 40.0
        })
        .collect();
    let mut o = FitOptions::new(&ORIENT_CELL);
    o.background = api::Background::Local;
    o.background_block = 16;
    o.gain = 2.0;
    o.adc = 40.0;
    let t0 = Instant::now();
    let fit = api::fit(&prep, &DiskFiles, &t, &o, &mut |_| {}, &cancel).unwrap();
    let (rot, cell) = errors(&fit, &truth);
    println!(
        "over a background, in ADU: {} iterations, {:.2} s; error {rot:.4}° / {:.4} %, scale {:.4}",
        fit.iterations,
        t0.elapsed().as_secs_f64(),
        cell * 100.0,
        fit.values[6]
    );
    assert!(rot <= 0.02, "orientation off by {rot}°");
    assert!(cell <= 5e-4, "cell off by {} %", cell * 100.0);
    assert!(fit.values[6].abs() < 0.05, "scale off by {}", fit.values[6]);
}

/// The pixel-subset entry of the tangent kernel (what the fit evaluates) gives each listed
/// pixel's value and tangents bit for bit as the whole render, in the list's order; an index
/// outside the detector is an error.
#[test]
fn pixel_subset_matches_the_whole_render() {
    let prep = prepare();
    let never = AtomicBool::new(false);
    let params = [Param::RotX, Param::CellB, Param::Distance, Param::Scale];
    let off = [(Param::RotX, 0.01), (Param::CellB, 0.2)];
    let (moved, t) =
        nanobragg::resolve::tangent::plan_tangent_at(&prep.setup, &DiskFiles, &params, &off)
            .unwrap();
    let whole = nanobragg::cpu::tangent::render(&moved.plan, &t, &|_| {}, &never).unwrap();
    let n = 64 * 64;
    let pixels: Vec<usize> = (0..300).map(|k| (k * 2654435761usize) % n).collect();
    let sub = nanobragg::cpu::tangent::render_pixels(&moved.plan, &t, &pixels, &never).unwrap();
    assert!(sub.image.iter().any(|&v| v > 0.0));
    for (k, &i) in pixels.iter().enumerate() {
        assert_eq!(
            sub.image[k].to_bits(),
            whole.image[i].to_bits(),
            "pixel {i}"
        );
        for j in 0..params.len() {
            assert_eq!(
                sub.tangents[j * pixels.len() + k].to_bits(),
                whole.tangents[j * n + i].to_bits(),
                "pixel {i}, parameter {j}"
            );
        }
    }
    let Err(e) = nanobragg::cpu::tangent::render_pixels(&moved.plan, &t, &[n], &never) else {
        panic!("an index outside the detector was accepted");
    };
    assert!(
        e.message
            .contains("index 4096 is outside the 64×64 detector"),
        "{}",
        e.message
    );
}

#[test]
fn errors_name_the_problem() {
    let prep = prepare();
    let cancel = AtomicBool::new(false);
    let n = prep.plan().fpixels * prep.plan().spixels;
    let fit = |t: &[f64], o: &FitOptions| {
        api::fit(&prep, &DiskFiles, t, o, &mut |_| {}, &cancel)
            .unwrap_err()
            .message
    };
    let o = FitOptions::new(&[Param::RotX]);
    assert!(fit(&[0.0; 10], &o).contains("the target image has 10 pixels, the detector 64x64"));
    let mut bad = vec![0.0; n];
    bad[65] = f64::NAN;
    assert!(fit(&bad, &o).contains("pixel 65 (fast 1, slow 1) is not finite"));
    let o2 = FitOptions::new(&[Param::RotX, Param::RotX]);
    assert!(fit(&vec![0.0; n], &o2).contains("'rot_x' given twice"));
    let mut o3 = FitOptions::new(&[Param::RotX]);
    o3.start = vec![(Param::CellA, 1.0)];
    assert!(fit(&vec![0.0; n], &o3).contains("start value for 'cell_a', which is not fitted"));
    assert!(Loss::parse("tukey", 3.0)
        .unwrap_err()
        .message
        .contains("unknown loss 'tukey'"));
    assert!(Loss::parse("huber", 0.0).is_err());
    assert!(api::Background::parse("flat")
        .unwrap_err()
        .message
        .contains("unknown background model 'flat'; the models are none, local"));
    let mut o4 = FitOptions::new(&[Param::RotX]);
    o4.gain = 0.0;
    assert!(fit(&vec![0.0; n], &o4).contains("the gain must be > 0 ADU per photon"));
    let mut o5 = FitOptions::new(&[Param::RotX]);
    o5.mask = Some(vec![true; 10]);
    assert!(fit(&vec![0.0; n], &o5).contains("the mask has 10 pixels, the detector 64x64 = 4096"));
    // an excluded pixel is never read (it may be NaN): the error is then about the next one
    let mut o6 = FitOptions::new(&[Param::RotX]);
    let mut m = vec![true; n];
    m[65] = false;
    o6.mask = Some(m);
    bad[70] = f64::INFINITY;
    assert!(fit(&bad, &o6).contains("pixel 70 (fast 6, slow 1) is not finite"));
    // everything excluded: nothing to fit on
    o6.mask = Some(vec![false; n]);
    assert!(fit(&vec![0.0; n], &o6).contains("no spot in the model or the target image"));
    // the options out of their ranges: named, before the solver (a negative tolerance panicked
    // in the solver; cycles 0 ran one cycle, background_block 0 was 2; a NaN start stopped the
    // solver with its Debug form)
    let zeros = vec![0.0; n];
    let with = |set: &dyn Fn(&mut FitOptions)| {
        let mut o = FitOptions::new(&[Param::RotX]);
        set(&mut o);
        fit(&zeros, &o)
    };
    for (m, want) in [
        (
            with(&|o| o.tolerance = -1.0),
            "fit: tolerance must be a finite number >= 0, got -1",
        ),
        (
            with(&|o| o.tolerance = f64::NAN),
            "fit: tolerance must be a finite number >= 0, got NaN",
        ),
        (
            with(&|o| o.max_iterations = 0),
            "fit: max_iterations must be >= 1, got 0",
        ),
        (with(&|o| o.cycles = 0), "fit: cycles must be >= 1, got 0"),
        (
            with(&|o| o.background_block = 1),
            "fit: background_block must be >= 2, got 1",
        ),
        (
            with(&|o| o.spot_threshold = -0.5),
            "fit: spot_threshold must be a finite share >= 0",
        ),
        (
            with(&|o| o.start = vec![(Param::RotX, f64::NAN)]),
            "fit: start value of 'rot_x' must be finite, got NaN",
        ),
    ] {
        assert!(m.contains(want), "{m:?} lacks {want:?}");
    }
    // a face's signed counts: the same rule, a negative value named
    assert_eq!(FitOptions::count("cycles", 2).unwrap(), 2);
    assert_eq!(FitOptions::count("spot_radius", 0).unwrap(), 0);
    assert_eq!(
        FitOptions::count("max_iterations", -1).unwrap_err().message,
        "fit: max_iterations must be >= 1, got -1"
    );
    assert_eq!(
        FitOptions::count("spot_radius", -1).unwrap_err().message,
        "fit: spot_radius must be >= 0, got -1"
    );
    // the losses are the three names the docs and Python's type list
    for alias in ["l2", "linear"] {
        assert!(Loss::parse(alias, 3.0)
            .unwrap_err()
            .message
            .contains("the losses are squared, huber, cauchy"));
    }
}

/// Flagged pixels of a measured image (here a 3×3 block on each of the three brightest spots
/// set to 10⁷, as overloaded or hot pixels read): fitted as they are, they pull the fit off;
/// excluded by `FitOptions::mask` (their values then never read: NaN there gives the same fit
/// bit for bit) the fit recovers orientation and cell as on the unflagged target. With the
/// squared loss: the default Huber loss already tolerates so few flagged pixels (measured:
/// within 0.003° with blocks of 10⁷ or of −1, though −1 blocks take it 47 evaluations instead
/// of 11), the squared loss shows what they do (2° and 19 % off).
#[test]
fn a_mask_excludes_flagged_pixels() {
    let prep = prepare();
    let truth = truth_off(0.5, 0.005);
    let clean = target(&prep, &truth, 7);
    let n = clean.len();
    // the three brightest spots (their peaks at least 5 pixels apart)
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| clean[b].total_cmp(&clean[a]));
    let mut peaks: Vec<usize> = Vec::new();
    for i in order {
        let far = |&p: &usize| {
            let (df, ds) = ((i % 64).abs_diff(p % 64), (i / 64).abs_diff(p / 64));
            df.max(ds) >= 5
        };
        if peaks.iter().all(far) {
            peaks.push(i);
        }
        if peaks.len() == 3 {
            break;
        }
    }
    let mut flagged = clean.clone();
    let mut mask = vec![true; n];
    for &p in &peaks {
        let (f, s) = ((p % 64) as isize, (p / 64) as isize);
        for ds in -1..=1 {
            for df in -1..=1 {
                let (ff, ss) = (f + df, s + ds);
                if (0..64).contains(&ff) && (0..64).contains(&ss) {
                    let i = ss as usize * 64 + ff as usize;
                    flagged[i] = 1e7;
                    mask[i] = false;
                }
            }
        }
    }
    let cancel = AtomicBool::new(false);
    let run = |t: &[f64], mask: Option<Vec<bool>>| {
        let mut o = FitOptions::new(&ORIENT_CELL);
        o.loss = Loss::Squared;
        o.mask = mask;
        let t0 = Instant::now();
        let f = api::fit(&prep, &DiskFiles, t, &o, &mut |_| {}, &cancel).unwrap();
        let (rot, cell) = errors(&f, &truth);
        println!(
            "{:?}: {} iterations, {:.2} s, error {rot:.4}° / {:.4} %",
            o.mask.is_some(),
            f.iterations,
            t0.elapsed().as_secs_f64(),
            cell * 100.0
        );
        (f, rot, cell)
    };
    let (_, rot0, cell0) = run(&clean, None);
    let (_, rot1, cell1) = run(&flagged, None);
    let (masked, rot2, cell2) = run(&flagged, Some(mask.clone()));
    assert!(
        rot0 <= 0.02 && cell0 <= 5e-4,
        "unflagged: {rot0}° / {cell0}"
    );
    assert!(
        rot1 > 0.02 || cell1 > 5e-4,
        "the flagged pixels fitted as they are should pull the fit off: {rot1}° / {cell1}"
    );
    assert!(rot2 <= 0.02 && cell2 <= 5e-4, "masked: {rot2}° / {cell2}");
    assert!(masked.converged);
    // the excluded pixels are never read
    let mut nan = flagged.clone();
    for i in 0..n {
        if !mask[i] {
            nan[i] = f64::NAN;
        }
    }
    let mut o = FitOptions::new(&ORIENT_CELL);
    o.loss = Loss::Squared;
    o.mask = Some(mask);
    let again = api::fit(&prep, &DiskFiles, &nan, &o, &mut |_| {}, &cancel).unwrap();
    assert_eq!(again.values, masked.values);
}

/// A measured image's flags are the fit's and the spot search's mask (`Pixels::to_target`, what
/// the page's "Fit to image" gets from the file it read): the target stored as the file's
/// unsigned integers with the all-ones flag on a dead column and on a 3×3 block over each of
/// the second and third brightest spots; `to_target` gives the counts and a mask false exactly there (and
/// `to_display` −1 there, as many). With the flagged pixels set to garbage (10⁷, as overloads
/// read), the spot search with the mask finds the unflagged image's spots away from the flags
/// (the same centroids) and none on them, and the fit (squared loss) recovers orientation and
/// cell; without the mask the garbage makes spots. About 1 s.
#[test]
fn a_measured_images_flags_are_the_mask_of_the_fit_and_the_spot_search() {
    use nanobragg::io::measured::Pixels;
    let prep = prepare();
    let truth = truth_off(0.5, 0.005);
    let clean = target(&prep, &truth, 7);
    let n = clean.len();
    let mut flagged = vec![false; n];
    for s in 0..64 {
        flagged[s * 64 + 5] = true; // a dead column
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| clean[b].total_cmp(&clean[a]));
    let mut peaks: Vec<usize> = Vec::new();
    for i in order {
        let far = |&p: &usize| (i % 64).abs_diff(p % 64).max((i / 64).abs_diff(p / 64)) >= 5;
        if (i % 64).abs_diff(5) > 3 && peaks.iter().all(far) {
            peaks.push(i);
        }
        if peaks.len() == 3 {
            break;
        }
    }
    for &p in &peaks[1..] {
        let (f, s) = ((p % 64) as isize, (p / 64) as isize);
        for ds in -1..=1 {
            for df in -1..=1 {
                let (ff, ss) = (f + df, s + ds);
                if (0..64).contains(&ff) && (0..64).contains(&ss) {
                    flagged[ss as usize * 64 + ff as usize] = true;
                }
            }
        }
    }
    let stored: Vec<u32> = (0..n)
        .map(|i| {
            if flagged[i] {
                u32::MAX
            } else {
                clean[i] as u32
            }
        })
        .collect();
    let pixels = Pixels::U32(stored);
    let (t, mask) = pixels.to_target();
    let mask = mask.expect("flagged pixels: a mask");
    let nflagged = flagged.iter().filter(|&&f| f).count();
    for i in 0..n {
        assert_eq!(mask[i], !flagged[i], "pixel {i}");
        assert_eq!(t[i], if flagged[i] { 0.0 } else { clean[i] }, "pixel {i}");
    }
    let (shown, untrusted) = pixels.to_display();
    assert_eq!(untrusted, nflagged);
    assert!((0..n).all(|i| (shown[i] == -1.0) == flagged[i]));
    assert_eq!(Pixels::U32(vec![3, 4]).to_target(), (vec![3.0, 4.0], None));

    let mut garbage = t.clone();
    for i in 0..n {
        if flagged[i] {
            garbage[i] = 1e7;
        }
    }
    // the spot search
    let masked = api::SpotOptions {
        mask: Some(mask.clone()),
        ..api::SpotOptions::default()
    };
    let near_flag = |f: f64, s: f64| {
        (0..n).any(|i| {
            let (df, ds) = ((i % 64) as f64 + 0.5 - f, (i / 64) as f64 + 0.5 - s);
            flagged[i] && df.abs() <= 8.0 && ds.abs() <= 8.0
        })
    };
    let plain = api::find_spots(&prep, &clean, &api::SpotOptions::default()).unwrap();
    let found = api::find_spots(&prep, &garbage, &masked).unwrap();
    let away: Vec<&api::Spot> = plain
        .iter()
        .filter(|p| p.intensity >= 1000.0 && !near_flag(p.fast, p.slow))
        .collect();
    assert!(away.len() >= 5, "{plain:?}");
    // the flagged pixels' values are never read: the unflagged image gives the same spots
    assert_eq!(found, api::find_spots(&prep, &clean, &masked).unwrap());
    // the spots away from the flags are where they are without flags (the threshold, a share of
    // the range over the median of the pixels used, moves a little with the brightest spots
    // flagged: the centroids by hundredths of a pixel)
    let mut worst: f64 = 0.0;
    for p in &away {
        let d = found
            .iter()
            .map(|q| (q.fast - p.fast).hypot(q.slow - p.slow))
            .fold(f64::INFINITY, f64::min);
        worst = worst.max(d);
    }
    println!(
        "{} spots away from the flags, centroids within {worst:.4} px",
        away.len()
    );
    assert!(worst < 0.1, "{worst} px");
    for q in &found {
        let (f, s) = (q.fast as usize, q.slow as usize);
        assert!(!flagged[s * 64 + f], "a spot on a flagged pixel: {q:?}");
    }
    let unmasked = api::find_spots(&prep, &garbage, &api::SpotOptions::default()).unwrap();
    assert!(
        unmasked
            .iter()
            .any(|q| flagged[q.slow as usize * 64 + q.fast as usize]),
        "the garbage fitted as it is makes spots: {unmasked:?}"
    );

    // the fit
    let mut o = FitOptions::new(&ORIENT_CELL);
    o.loss = Loss::Squared;
    o.mask = Some(mask);
    let t0 = Instant::now();
    let cancel = AtomicBool::new(false);
    let fit = api::fit(&prep, &DiskFiles, &garbage, &o, &mut |_| {}, &cancel).unwrap();
    let (rot, cell) = errors(&fit, &truth);
    println!(
        "masked: {} evaluations, {:.2} s, error {rot:.4}° / {:.4} %",
        fit.iterations,
        t0.elapsed().as_secs_f64(),
        cell * 100.0
    );
    assert!(rot <= 0.02 && cell <= 5e-4, "masked: {rot}° / {cell}");
    assert!(fit.converged);
    // (unmasked, the garbage pulls it 31° off, in 62 evaluations and 24 s: what the test
    // above shows of `FitOptions::mask` at less cost)
}

/// How far off the fit still converges (orientation and cell off together, every axis and
/// edge): prints a table; run with `--ignored --nocapture`.
/// The verdict (`Fit::converged`, MODEL §10.4) against the truth, over starts from inside to
/// beyond the convergence radius: a fit said to converge is near the truth (orientation within
/// 0.1°, cell within 0.2 %), a fit that ends far from it (0.3°, 0.5 %) is never said to
/// converge, and both outcomes occur, one of them a solver that ended on its tolerance in a
/// false minimum (room for it: 400 evaluations). Prints the table (`--nocapture`).
#[test]
fn the_verdict_agrees_with_the_truth() {
    let prep = prepare();
    let cancel = AtomicBool::new(false);
    let (mut said_yes, mut said_no) = (0, 0);
    let mut false_minima = 0;
    // (the table with 1.5°/1 %, 2°/2 % and 3°/2 % converged too; 4°/2 % ended 8.7° off after
    // 332 evaluations, correlation 0.23 of 0.996: not said to converge)
    for (rot, share) in [(0.5, 0.005), (2.5, 0.015), (6.0, 0.03)] {
        let truth = truth_off(rot, share);
        let t = target(&prep, &truth, 7);
        let t0 = Instant::now();
        let mut o = FitOptions::new(&ORIENT_CELL);
        // room for the solver to end on its tolerance far from the truth (a false minimum)
        o.max_iterations = 400;
        let fit = match api::fit(&prep, &DiskFiles, &t, &o, &mut |_| {}, &cancel) {
            Ok(fit) => fit,
            Err(e) => {
                // a refusal is honest too (no spot to fit on)
                println!("start {rot}° / {} %: error {}", share * 100.0, e.message);
                continue;
            }
        };
        let (er, ec) = errors(&fit, &truth);
        println!(
            "start {rot}° / {} %: {} evaluations {:.2} s, error {er:.4}° / {:.4} %, spots {}/{}, \
             correlation {:.3} of {:.3}, converged {} {}",
            share * 100.0,
            fit.iterations,
            t0.elapsed().as_secs_f64(),
            ec * 100.0,
            fit.spots_found,
            fit.spots_checked,
            fit.correlation,
            fit.correlation_ceiling,
            fit.converged,
            fit.verdict
        );
        assert!(fit.spots_checked > 0 && fit.spots_found <= fit.spots_checked);
        assert_eq!(fit.converged, fit.verdict.is_empty(), "{}", fit.verdict);
        if fit.converged {
            said_yes += 1;
            assert!(
                er <= 0.1 && ec <= 2e-3,
                "start {rot}°/{share}: said converged {er}° / {ec} off the truth"
            );
        } else {
            said_no += 1;
            // a solver that ended on its tolerance, far off: the verdict's own test caught it
            false_minima += fit.verdict.contains("false minimum") as usize;
        }
        if er > 0.3 || ec > 5e-3 {
            assert!(
                !fit.converged,
                "start {rot}°/{share}: {er}° / {ec} off the truth, said converged"
            );
        }
    }
    assert!(
        said_yes >= 2,
        "no fit converged: the cases no longer span the radius"
    );
    assert!(
        said_no >= 1,
        "every fit converged: the cases no longer span the radius"
    );
    assert!(
        false_minima >= 1,
        "no fit ended in a false minimum: the verdict's spot tests went untested"
    );
}

/// The same fit on a 256×256 detector of 0.1 mm pixels (the same field of view, 16× the
/// pixels): time and errors; run with `--ignored --nocapture`.
#[test]
#[ignore]
fn larger_detector_timing() {
    let args = ARGS
        .replace("-pixel 0.4 -detpixels 64", "-pixel 0.1 -detpixels 256")
        .replace("-fluence 3e29", "-fluence 4.8e30");
    let prep = api::prepare(&api::split_args(&args), &DiskFiles).unwrap();
    let truth = truth_off(0.5, 0.005);
    let t = target(&prep, &truth, 7);
    let cancel = AtomicBool::new(false);
    let t0 = Instant::now();
    let o = FitOptions::new(&ORIENT_CELL);
    let fit = api::fit(&prep, &DiskFiles, &t, &o, &mut |_| {}, &cancel).unwrap();
    let (rot, cell) = errors(&fit, &truth);
    println!(
        "256x256: {} evaluations, {} pixels, {:.2} s; error {rot:.4}° / {:.4} %",
        fit.iterations,
        fit.pixels,
        t0.elapsed().as_secs_f64(),
        cell * 100.0
    );
    assert!(rot <= 0.02 && cell <= 5e-4);
}

/// A DIALS experiment list of one 64×64 panel of 0.4 mm at 120 mm (the beam along its normal,
/// λ 1.2 Å) and a triclinic crystal of real-space vectors `a`, `b`, `c` (Å, dxtbx's frame).
fn expt_with_crystal(a: [f64; 3], b: [f64; 3], c: [f64; 3]) -> Vec<u8> {
    format!(
        r#"{{"__id__": "ExperimentList",
  "experiment": [{{"beam": 0, "detector": 0, "crystal": 0}}],
  "beam": [{{"direction": [0.0, 0.0, 1.0], "wavelength": 1.2}}],
  "detector": [{{"panels": [{{"origin": [-12.5, 14.0, -120.0], "fast_axis": [1.0, 0.0, 0.0],
    "slow_axis": [0.0, -1.0, 0.0], "pixel_size": [0.4, 0.4], "image_size": [64, 64]}}]}}],
  "crystal": [{{"real_space_a": {a:?}, "real_space_b": {b:?}, "real_space_c": {c:?}}}]}}"#
    )
    .into_bytes()
}

fn rotate(v: [f64; 3], axis: [f64; 3], angle: f64) -> [f64; 3] {
    let n = (axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]).sqrt();
    let u = axis.map(|x| x / n);
    let (s, c) = angle.sin_cos();
    let d = u[0] * v[0] + u[1] * v[1] + u[2] * v[2];
    let x = [
        u[1] * v[2] - u[2] * v[1],
        u[2] * v[0] - u[0] * v[2],
        u[0] * v[1] - u[1] * v[0],
    ];
    std::array::from_fn(|i| v[i] * c + x[i] * s + u[i] * d * (1.0 - c))
}

/// A crystal given by a DIALS `.expt` (a matrix, not `-cell`): its orientation and cell fitted
/// (issue 31), the cell moved in the file's orientation (`-cell` with `-expt`). The target is a
/// second file whose crystal is the first's axes scaled by (1.005, 0.995, 1.004) and turned by
/// 0.4° about (1, 2, 3), with Poisson noise; the fitted flags (`-misset`, `-cell` with the first
/// file) must resolve to the second file's real-space axes (each within 0.02° and 0.05 %), an
/// independent check of both the fit and `-cell` with `-expt`.
#[test]
fn fits_orientation_and_cell_of_an_expt_crystal() {
    use nanobragg::files::MemFiles;
    let (a, b, c) = ([70.0, 5.0, -2.0], [-4.0, 80.0, 3.0], [1.0, -2.0, 90.0]);
    let turn = |v: [f64; 3], k: f64| rotate(v.map(|x| x * k), [1.0, 2.0, 3.0], 0.4 * DEG);
    let mut files = std::collections::HashMap::new();
    files.insert("base.expt".to_string(), expt_with_crystal(a, b, c));
    files.insert(
        "truth.expt".to_string(),
        expt_with_crystal(turn(a, 1.005), turn(b, 0.995), turn(c, 1.004)),
    );
    let files = MemFiles(files);
    let words = |s: &str| api::split_args(&format!("{s} -default_F 100 -N 5 -fluence 3e29"));
    let prep = api::prepare(&words("-expt base.expt"), &files).unwrap();
    let truth = api::prepare(&words("-expt truth.expt"), &files).unwrap();
    let cancel = AtomicBool::new(false);
    let clean = api::render_f64(truth.plan(), &cancel).unwrap();
    let (mut st, mut noise, mut idum) = (RanState::new(), Noise::new(), -7);
    let t: Vec<f64> = clean
        .iter()
        .map(|&v| noise.poidev(&mut st, v as f32, &mut idum) as f64)
        .collect();
    let fit = api::fit(
        &prep,
        &files,
        &t,
        &FitOptions::new(&ORIENT_CELL),
        &mut |_| {},
        &cancel,
    )
    .unwrap();
    assert!(fit.converged, "{}", fit.verdict);
    let f = api::fitted_values(&prep, &fit.params, &fit.values).unwrap();
    let (m, cell) = (f.misset.unwrap(), f.cell.unwrap());
    println!(
        "expt fit: {} evaluations, misset {m:?}, cell {cell:?}",
        fit.iterations
    );
    let again = api::prepare(
        &words(&format!(
            "-expt base.expt -misset {} {} {} -cell {} {} {} {} {} {}",
            m[0], m[1], m[2], cell[0], cell[1], cell[2], cell[3], cell[4], cell[5]
        )),
        &files,
    )
    .unwrap();
    let (g, w) = (&again.setup.crystal, &truth.setup.crystal);
    for (got, want) in [(g.a0, w.a0), (g.b0, w.b0), (g.c0, w.c0)] {
        let len = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        let cos = (0..3).map(|i| got[i] * want[i]).sum::<f64>() / (len(got) * len(want));
        let angle = cos.clamp(-1.0, 1.0).acos() / DEG;
        let share = (len(got) / len(want) - 1.0).abs();
        assert!(
            angle < 0.02,
            "axis {got:?} is {angle}° from the truth's {want:?}"
        );
        assert!(
            share < 5e-4,
            "axis {got:?} is {} % off the truth's {want:?}",
            share * 100.0
        );
    }
    // the start was off: 0.4° and 0.5 % (the fit moved the crystal, not a no-op)
    let (s, w) = (&prep.setup.crystal, &truth.setup.crystal);
    let len = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    assert!((len(s.a0) / len(w.a0) - 1.0).abs() > 4e-3);
    // -cell with -expt at the file's own cell is the file's crystal
    let own = prep.setup.crystal.cell;
    let same = api::prepare(
        &words(&format!(
            "-expt base.expt -cell {} {} {} {} {} {}",
            own[0], own[1], own[2], own[3], own[4], own[5]
        )),
        &files,
    )
    .unwrap();
    for (x, y) in [
        (same.setup.crystal.a0, s.a0),
        (same.setup.crystal.b0, s.b0),
        (same.setup.crystal.c0, s.c0),
    ] {
        for i in 0..3 {
            assert!((x[i] - y[i]).abs() < 1e-9 * len(y), "{x:?} vs {y:?}");
        }
    }
}

/// The page's default crystal (cubic, 100 Å, a along the beam, Gaussian spots) on 256² pixels
/// of 0.2 mm, its own noiseless image the target, started 0.5° and 0.5 % off as the page's
/// "Target = this image; perturb" does. The still barely sees the edge along the beam (its
/// spots are the h = 0 layer's): the solver's trial steps went through a ≤ 0, which ended the
/// fit with "-cell: the a axis must be positive" (a trial outside the domain is now a rejected
/// step), and then it ended at a = 138 Å, 8 of the target's 10 spots found and correlation
/// 0.994, said to converge. Either outcome may be honest; a wrong one said to converge is not.
#[test]
fn a_still_that_barely_sees_an_edge_is_not_said_to_have_fitted_it() {
    let args = "-cell 100 100 100 90 90 90 -lambda 6.2 -N 10 -default_F 100 -distance 100 \
                -detpixels 256 -pixel 0.2 -gauss_xtal -oversample 1";
    let prep = api::prepare(&api::split_args(args), &DiskFiles).unwrap();
    let cancel = AtomicBool::new(false);
    let plan = api::moved_plan(&prep, &DiskFiles, &[]).unwrap();
    let target = api::render_f64(&plan, &cancel).unwrap();
    // orientation and cell, no scale
    let mut o = FitOptions::new(&ORIENT_CELL[..6]);
    o.start = vec![
        (Param::RotX, 0.5 * DEG),
        (Param::RotY, -0.5 * DEG),
        (Param::RotZ, 0.5 * DEG),
        (Param::CellA, 0.5),
        (Param::CellB, -0.5),
        (Param::CellC, 0.5),
    ];
    let fit = api::fit(&prep, &DiskFiles, &target, &o, &mut |_| {}, &cancel)
        .expect("a trial step outside the domain is stepped back from, not an error");
    let rot = fit.values[..3].iter().fold(0f64, |m, v| m.max(v.abs())) / DEG;
    let cell = fit.values[3..].iter().fold(0f64, |m, v| m.max(v.abs())) / 100.0;
    println!(
        "{:.4}° / {:.3} % off; spots {}/{}, correlation {:.4} of {:.4}; converged {} {}",
        rot,
        cell * 100.0,
        fit.spots_found,
        fit.spots_checked,
        fit.correlation,
        fit.correlation_ceiling,
        fit.converged,
        fit.verdict
    );
    assert_eq!(fit.converged, fit.verdict.is_empty(), "{}", fit.verdict);
    if rot > 0.1 || cell > 5e-3 {
        assert!(
            !fit.converged,
            "{rot}° / {} % off the truth, said converged",
            cell * 100.0
        );
        assert!(fit.verdict.contains("false minimum"), "{}", fit.verdict);
        // its advice is what could help: the spot-centroid stage needs 15 spots for six
        // parameters, this still has about 10
        if fit.spots_checked < 15 {
            assert!(
                fit.verdict.contains("fit fewer parameters")
                    && !fit.verdict.contains("use the spot-centroid stage"),
                "{}",
                fit.verdict
            );
        }
    }
}
