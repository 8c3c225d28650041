//! The refinement's acceptance on the realistic preset (issue 20 §3): the page's "Protein still on
//! a pixel-array detector" (PDB 1PFE from its atoms, an EIGER2 X 4M at 120 mm, λ 1 Å, a 1 µm
//! crystal, mosaic spread 0.3° in 12 domains, 20 µm of water and 10 mm of air, the detector's
//! Poisson noise and 3 % calibration error, gain 1), made by the library's realistic chain
//! (`nanobragg::realistic`, as the page makes it). The crystal's cell counts are given as the
//! numbers `-xtalsize 0.001` resolves to (254 254 126): a cell parameter may not move them.
//!
//! The target is the preset itself (the truth is offset 0); the fit starts 0.5° off about each
//! axis and 0.5 % off on each cell edge and must come back within 0.02° and 0.05 %, with the
//! background estimated from the target (`Background::Local`), the target in ADU, and the
//! spot-centroid stage first. On the whole 2068×2162 detector; to keep the test cheap the
//! target's spots are rendered only on the pixels within 4 of a predicted spot (in the
//! diffraction condition within the lattice peak and the mosaic spread: 952 spots, 45 000
//! pixels; the rest of this crystal's still is dark), the water, air and detector effects on
//! every pixel. `full_detector_timing` (ignored) makes the target with every pixel rendered and
//! times the fit; `convergence_radius` (ignored) prints how far off it still converges.

mod common;
use common::words;
use nanobragg::api::{self, Background, FitOptions, Param, Precision, Prepared};
use nanobragg::files::MemFiles;
use nanobragg::realistic::{self, DetectorSettings};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// The page's preset as words (`www/src/state.ts`, "protein-still"), N given explicitly.
const SPOTS: &str = "-detector eiger2-4m -distance 120 -lambda 1 -Na 254 -Nb 254 -Nc 126 \
    -mosaic 0.3 -mosaic_dom 12 -misset_seed 3 -misset random -flux 1e12 -exposure 0.5 \
    -beamsize 0.001 -oversample 1";
const BEAM: &str = "-flux 1e12 -exposure 0.5 -beamsize 0.001";
/// The page's detector effects (`www/src/layers.ts` `effectsOf`): gain 1, no ADC offset.
const DETECTOR: DetectorSettings = DetectorSettings::of_kind(false);
const DEG: f64 = std::f64::consts::PI / 180.0;
/// 1PFE's cell edges (Å).
const CELL: [f64; 3] = [39.374, 39.374, 79.734];
const PARAMS: [Param; 7] = [
    Param::RotX,
    Param::RotY,
    Param::RotZ,
    Param::CellA,
    Param::CellB,
    Param::CellC,
    Param::Scale,
];

/// The preset's set-up (with `extra` words) and its noisy image in ADU (photons + water + air,
/// noisify's effects), as the page's chain makes it.
fn realistic_target(extra: &str, near_spots: bool) -> (Prepared, Vec<f64>) {
    realistic_target_of(SPOTS, extra, near_spots)
}

/// [`realistic_target`] with the set-up's words `spots` instead of the preset's.
fn realistic_target_of(spots_words: &str, extra: &str, near_spots: bool) -> (Prepared, Vec<f64>) {
    let never = AtomicBool::new(false);
    let prep = common::prepare_1pfe(words(&format!("{spots_words} {extra}")));
    let spots = if near_spots {
        // only the pixels within 4 of a spot the prediction puts on the image (in the
        // diffraction condition within the lattice peak, the mosaic spread…): the rest of a
        // 254×254×126-cell crystal's still is dark
        let pred = common::predicted_on_image(&prep);
        let p = prep.plan();
        let (nf, ns) = (p.fpixels, p.spixels);
        let mut near = vec![0u8; nf * ns];
        for r in pred.reflections.iter().filter(|r| r.on_detector) {
            let (Some(f), Some(s)) = (r.fast, r.slow) else {
                continue;
            };
            let (f, s) = (f.floor() as i64, s.floor() as i64);
            for ss in (s - 4).max(0)..(s + 5).min(ns as i64) {
                for ff in (f - 4).max(0)..(f + 5).min(nf as i64) {
                    near[ss as usize * nf + ff as usize] = 1;
                }
            }
        }
        let mut plan = p.clone();
        if let Some(m) = &plan.mask {
            for (a, b) in near.iter_mut().zip(m) {
                *a &= (*b != 0) as u8;
            }
        }
        println!(
            "{} spots predicted, {} pixels rendered",
            pred.reflections.len(),
            near.iter().filter(|&&v| v != 0).count()
        );
        plan.mask = Some(near);
        api::render_cpu(&plan, Precision::F32, &|_| {}, &never).unwrap()
    } else {
        api::render_cpu(prep.plan(), Precision::F32, &|_| {}, &never).unwrap()
    };
    let water = common::background_of(&prep, "-stol water.stol -thickness 0.02", BEAM);
    let air = common::background_of(
        &prep,
        "-stol air.stol -thickness 10 -MW 29 -density 0.0012",
        BEAM,
    );
    let sum = realistic::compose(&[&spots, &water, &air]);
    let adu = common::detected(&prep, &sum, &DETECTOR);
    (prep, adu.iter().map(|&v| v as f64).collect())
}

/// Starting offsets: `rot_deg` about each axis (signs alternating), `share` on each edge.
fn start(rot_deg: f64, share: f64) -> Vec<(Param, f64)> {
    common::rot_cell_offsets(rot_deg, share, CELL)
}

fn options(start: Vec<(Param, f64)>) -> FitOptions {
    let mut o = FitOptions::new(&PARAMS);
    o.start = start;
    o.background = Background::Local;
    o.gain = DETECTOR.gain;
    o.adc = DETECTOR.adc;
    o.centroids = true;
    // the model image at the fit on the selected pixels only (the whole 4M-pixel image would
    // cost the tangent kernel more than the fit)
    o.whole_image = false;
    o
}

/// Largest orientation error (°) and cell error (share) of a fit whose truth is 0.
fn errors(fit: &api::Fit) -> (f64, f64) {
    common::fit_errors(fit, &[], CELL)
}

fn run(prep: &Prepared, target: &[f64], o: &FitOptions, label: &str) -> (api::Fit, f64) {
    let cancel = AtomicBool::new(false);
    let t0 = Instant::now();
    let fit = api::fit(prep, &MemFiles::default(), target, o, &mut |_| {}, &cancel).unwrap();
    let secs = t0.elapsed().as_secs_f64();
    let (rot, cell) = errors(&fit);
    println!(
        "{label}: {} evaluations, {} cycles, {} centroid spots, {} pixels, {secs:.2} s; \
         error {rot:.4}° / {:.4} %; values {:?}",
        fit.iterations,
        fit.cycles,
        fit.centroid_spots,
        fit.pixels,
        cell * 100.0,
        fit.values
    );
    (fit, secs)
}

#[test]
fn recovers_orientation_and_cell_on_the_realistic_preset() {
    let t0 = Instant::now();
    // the beam centre is the detector's centre (1034, 1081): a region from it outwards
    let (prep, target) = realistic_target("", true);
    println!("target made in {:.2} s", t0.elapsed().as_secs_f64());
    let (fit, _) = run(&prep, &target, &options(start(0.5, 0.005)), "2068x2162");
    let (rot, cell) = errors(&fit);
    assert!(fit.centroid_spots >= 10, "{} spots", fit.centroid_spots);
    assert!(rot <= 0.02, "orientation off by {rot}° after the fit");
    assert!(cell <= 5e-4, "cell off by {} % after the fit", cell * 100.0);
}

/// The whole 2068×2162 detector: time of the fit (target made first, not timed); run with
/// `--ignored --nocapture`.
#[test]
#[ignore]
fn full_detector_timing() {
    let t0 = Instant::now();
    let (prep, target) = realistic_target("", false);
    println!("target made in {:.2} s", t0.elapsed().as_secs_f64());
    let (fit, secs) = run(&prep, &target, &options(start(0.5, 0.005)), "2068x2162");
    let (rot, cell) = errors(&fit);
    println!("fit {secs:.2} s");
    assert!(rot <= 0.02 && cell <= 5e-4);
}

/// How far off the fit still converges, per axis (one axis off at a time), in cell (every
/// edge), and all together; run with `--ignored --nocapture`.
#[test]
#[ignore]
fn convergence_radius() {
    let (prep, target) = realistic_target("", true);
    let mut cases: Vec<(String, Vec<(Param, f64)>)> = Vec::new();
    for deg in [0.5, 1.0, 1.5, 2.0, 2.5, 3.0] {
        for (name, p) in [
            ("rot_x", Param::RotX),
            ("rot_y", Param::RotY),
            ("rot_z", Param::RotZ),
        ] {
            cases.push((format!("{name} {deg}°"), vec![(p, deg * DEG)]));
        }
    }
    for share in [0.005, 0.01, 0.02, 0.03, 0.04, 0.05] {
        cases.push((
            format!("cell {} %", share * 100.0),
            start(0.0, share)[3..].to_vec(),
        ));
    }
    for (deg, share) in [
        (0.5, 0.005),
        (0.75, 0.0075),
        (1.0, 0.005),
        (0.5, 0.01),
        (1.0, 0.01),
        (1.5, 0.01),
        (2.0, 0.02),
    ] {
        cases.push((
            format!("all {deg}° / {} %", share * 100.0),
            start(deg, share),
        ));
    }
    for (label, s) in cases {
        let cancel = AtomicBool::new(false);
        let t0 = Instant::now();
        match api::fit(
            &prep,
            &MemFiles::default(),
            &target,
            &options(s),
            &mut |_| {},
            &cancel,
        ) {
            Ok(fit) => {
                let (er, ec) = errors(&fit);
                println!(
                    "{label}: {:.2} s, error {er:.4}° / {:.4} % ({})",
                    t0.elapsed().as_secs_f64(),
                    ec * 100.0,
                    if er <= 0.02 && ec <= 5e-4 {
                        "recovered"
                    } else {
                        "NOT recovered"
                    }
                );
            }
            Err(e) => println!("{label}: error {}", e.message),
        }
    }
}

/// The page's realistic still on a 512² detector of 0.3 mm pixels (`tests/browser/
/// fit-cases.test.mjs`): the water ring (≈ 3.1 Å, 133 pixels from the beam) is a few pixels
/// wide here and curved on the scale of a background block.
const SPOTS_512: &str = "-detpixels 512 -pixel 0.3 -distance 120 -lambda 1 -Na 254 -Nb 254 \
    -Nc 126 -mosaic 0.3 -mosaic_dom 12 -misset_seed 3 -misset random -flux 1e12 -exposure 0.5 \
    -beamsize 0.001 -oversample 1";

#[test]
fn the_water_ring_is_no_spot_on_a_small_detector() {
    let t0 = Instant::now();
    let (prep, target) = realistic_target_of(SPOTS_512, "", false);
    println!("target made in {:.2} s", t0.elapsed().as_secs_f64());
    let o = options(Vec::new());
    let mut spots = api::find_spots(&prep, &target, &o.spot_options()).unwrap();
    spots.sort_by(|a, b| b.intensity.total_cmp(&a.intensity));
    let mut sizes: Vec<usize> = spots.iter().map(|s| s.pixels).collect();
    sizes.sort_unstable();
    println!(
        "{} spots; pixels: largest {:?}",
        spots.len(),
        &sizes[sizes.len().saturating_sub(10)..]
    );
    let pred = common::predicted_on_image(&prep);
    let near = |s: &api::Spot| {
        pred.reflections
            .iter()
            .filter_map(|r| Some((r.fast?, r.slow?)))
            .map(|(f, sl)| (f - s.fast).hypot(sl - s.slow))
            .fold(f64::MAX, f64::min)
    };
    for s in spots.iter().take(20) {
        println!(
            "spot {:.1} {:.1}: {:.0} photons, {} pixels, {:.2} px from a predicted spot",
            s.fast,
            s.slow,
            s.intensity,
            s.pixels,
            near(s)
        );
    }
    // a spot of this 1 µm crystal is under 0.6 mm (two pixels) across even with the 0.3°
    // mosaic spread: at most 3×3 pixels; the ring's segments were 235–802 pixels
    assert!(sizes.iter().all(|&n| n <= 9), "spots of {sizes:?} pixels");
    let close = spots.iter().take(20).filter(|s| near(s) <= 1.5).count();
    println!("{close} of the 20 strongest spots within 1.5 px of a predicted spot");
    assert!(close >= 15, "{close} of 20 strongest spots predicted");
    // the page's fit (`www/src/fit/index.ts`): orientation and scale, 60 evaluations; the
    // centroid stage first
    let mut o = options(start(0.3, 0.0)[..3].to_vec());
    o.params = vec![Param::RotX, Param::RotY, Param::RotZ, Param::Scale];
    o.max_iterations = 60;
    let (fit, _) = run(&prep, &target, &o, "512x512 from 0.3°");
    let (rot, _) = errors(&fit);
    println!("converged {}: {}", fit.converged, fit.verdict);
    assert!(fit.centroid_spots >= 10, "{} spots", fit.centroid_spots);
    // with the ring taken for spots the centroid stage moved the crystal to 0.62° off (the
    // page's figure); now the fit ends 0.04–0.08° off (as the background model was varied),
    // where the 1-pixel spots of this detector (0.04° moves a spot by under 0.3 of a 0.3 mm
    // pixel) leave the pixel fit little to follow: not the 0.02° of the EIGER
    assert!(
        rot <= 0.1,
        "orientation off by {rot}° after the fit (start 0.3°)"
    );
    // and the verdict says so
    assert!(
        rot <= 0.02 || !fit.converged,
        "{rot}° off the truth, said converged"
    );
}
