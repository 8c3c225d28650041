//! The spot finder (`api::find_spots`: the spots the fit's spot-centroid stage indexes, and the
//! page's "Fit to image" rings): on a simulated still its spots lie on the predicted spots
//! (`predict`, what is on the image); on synthetic Gaussian blobs the centroids are the blobs'
//! centres, over a flat or sloping background, in photons or ADU; pixels the plan does not
//! render hold no spot; bad input is an error naming the image.

mod common;
use nanobragg::api::{self, Background, Spot, SpotOptions};
use nanobragg::files::DiskFiles;
use nanobragg::predict::{predict, PredictOptions};
use std::sync::atomic::AtomicBool;

/// The page's teaching fit (tests/browser/fit.test.mjs): an orthorhombic cell at 6.2 Å with
/// Gaussian spots on a 128² detector.
const STILL: &str = "-cell 100 110 120 90 90 90 -lambda 6.2 -N 10 -default_F 100 -distance 100 \
                     -detpixels 128 -pixel 0.8 -misset 10 20 30 -gauss_xtal -oversample 1";

fn dist(f: f64, s: f64, g: f64, t: f64) -> f64 {
    ((f - g).powi(2) + (s - t).powi(2)).sqrt()
}

#[test]
fn the_spots_of_a_simulated_still_lie_on_the_predicted_spots() {
    let prep = api::prepare(&api::split_args(STILL), &DiskFiles).unwrap();
    let img = api::render_f64(prep.plan(), &AtomicBool::new(false)).unwrap();
    let spots = api::find_spots(&prep, &img, &SpotOptions::default()).unwrap();
    let pred = common::predicted_on_image(&prep);
    let (nf, ns) = (128.0, 128.0);
    let inside = |f: f64, s: f64| f >= 2.0 && s >= 2.0 && f <= nf - 2.0 && s <= ns - 2.0;
    let predicted: Vec<(f64, f64, f64)> = pred
        .reflections
        .iter()
        .filter(|r| r.on_detector && r.in_condition)
        .map(|r| (r.fast.unwrap(), r.slow.unwrap(), r.intensity))
        .collect();
    // the strong predicted spots away from the edges: each has its own spot, within 0.4 px
    let strongest = predicted.iter().fold(0f64, |m, p| m.max(p.2));
    let strong: Vec<_> = predicted
        .iter()
        .filter(|p| p.2 >= 0.1 * strongest && inside(p.0, p.1))
        .collect();
    assert!(
        strong.len() >= 30,
        "{} strong predicted spots",
        strong.len()
    );
    let mut used = vec![false; spots.len()];
    let mut worst: f64 = 0.0;
    for p in &strong {
        let (k, d) = spots
            .iter()
            .enumerate()
            .map(|(k, s)| (k, dist(s.fast, s.slow, p.0, p.1)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        assert!(
            d <= 0.4,
            "predicted spot at ({:.2}, {:.2}): the nearest spot found is {d:.2} px away",
            p.0,
            p.1
        );
        assert!(!used[k], "two predicted spots on the spot {:?}", spots[k]);
        used[k] = true;
        worst = worst.max(d);
    }
    // every spot found away from the edges with 5 % of the strongest signal is a predicted
    // spot (within 0.5 px) or the direct beam (the beam centre, which the prediction omits)
    let all = predict(&prep.setup, &PredictOptions::default()).unwrap();
    let origin = all
        .reflections
        .iter()
        .find(|r| (r.h, r.k, r.l) == (0, 0, 0))
        .unwrap();
    let beam = (origin.fast.unwrap(), origin.slow.unwrap());
    let brightest = spots.iter().fold(0f64, |m, s| m.max(s.intensity));
    let mut explained = 0;
    for s in spots
        .iter()
        .filter(|s| s.intensity >= 0.05 * brightest && inside(s.fast, s.slow))
    {
        let near = predicted
            .iter()
            .map(|p| dist(s.fast, s.slow, p.0, p.1))
            .fold(f64::INFINITY, f64::min);
        let direct = dist(s.fast, s.slow, beam.0, beam.1);
        assert!(
            near <= 0.5 || direct <= 0.5,
            "spot {s:?} is {near:.2} px from the nearest predicted spot and {direct:.2} px from the beam"
        );
        assert!(s.pixels >= 1 && s.intensity > 0.0);
        explained += 1;
    }
    assert!(explained >= strong.len());
    println!(
        "{} spots found, {} predicted in condition on the detector; the {} strong ones within \
         {worst:.2} px of a spot found; {explained} strong spots found, all predicted or the beam",
        spots.len(),
        predicted.len(),
        strong.len()
    );
}

/// A 64² image of `bg(f, s)` plus Gaussian blobs (σ = 1 px, `amp` photons at the peak) centred
/// at `centres` (pixel coordinates: centre of pixel f at f + 0.5).
fn blobs(centres: &[(f64, f64)], amp: f64, bg: impl Fn(f64, f64) -> f64) -> Vec<f64> {
    let n = 64;
    let mut img = vec![0.0; n * n];
    for s in 0..n {
        for f in 0..n {
            let (x, y) = (f as f64 + 0.5, s as f64 + 0.5);
            img[s * n + f] = bg(x, y)
                + centres
                    .iter()
                    .map(|&(cf, cs)| amp * (-((x - cf).powi(2) + (y - cs).powi(2)) / 2.0).exp())
                    .sum::<f64>();
        }
    }
    img
}

/// The blobs' centres: on pixel centres and on pixel corners (the pixels above any threshold
/// then lie symmetric about the centre, so the centroid is the centre).
const CENTRES: [(f64, f64); 5] = [
    (10.5, 12.5),
    (40.0, 9.0),
    (52.5, 50.5),
    (20.0, 44.0),
    (33.5, 30.0),
];

fn synthetic() -> api::Prepared {
    api::prepare(
        &api::split_args("-cell 100 100 100 90 90 90 -default_F 100 -detpixels 64 -pixel 0.1"),
        &DiskFiles,
    )
    .unwrap()
}

/// Each centre has one spot, at it within `tol` px; nothing else was found.
fn check_centres(spots: &[Spot], centres: &[(f64, f64)], tol: f64) {
    assert_eq!(spots.len(), centres.len(), "spots found: {spots:?}");
    for &(f, s) in centres {
        let near: Vec<_> = spots
            .iter()
            .filter(|p| dist(p.fast, p.slow, f, s) <= tol)
            .collect();
        assert_eq!(near.len(), 1, "blob at ({f}, {s}): {spots:?}");
    }
}

#[test]
fn synthetic_blobs_centroids_background_units_and_mask() {
    let prep = synthetic();
    // flat background, no background model: the centroids are exact, the signal the blob's
    let img = blobs(&CENTRES, 1000.0, |_, _| 10.0);
    let spots = api::find_spots(&prep, &img, &SpotOptions::default()).unwrap();
    check_centres(&spots, &CENTRES, 1e-9);
    for s in &spots {
        // the pixels above the median (10) by 1 % of the range and 5σ: a Gaussian of
        // 2π·1000 photons less its tail, plus the 10 under each pixel
        assert!(s.pixels >= 9 && s.pixels <= 40, "{s:?}");
        let blob = 2.0 * std::f64::consts::PI * 1000.0;
        assert!(
            s.intensity > 0.95 * blob && s.intensity < blob + 10.0 * s.pixels as f64,
            "{s:?}"
        );
    }
    // in raster order of their first pixel
    let order: Vec<f64> = spots.iter().map(|s| (s.slow * 1e6).round() / 1e6).collect();
    assert_eq!(order, vec![9.0, 12.5, 30.0, 44.0, 50.5]);

    // the same in ADU (gain 2, offset 40): the same spots
    let adu: Vec<f64> = img.iter().map(|v| 2.0 * v + 40.0).collect();
    let o = SpotOptions {
        gain: 2.0,
        adc: 40.0,
        ..SpotOptions::default()
    };
    let same = api::find_spots(&prep, &adu, &o).unwrap();
    assert_eq!(same.len(), spots.len());
    for (a, b) in same.iter().zip(&spots) {
        assert!(dist(a.fast, a.slow, b.fast, b.slow) < 1e-9 && a.pixels == b.pixels);
        assert!((a.intensity / b.intensity - 1.0).abs() < 1e-9);
    }

    // a sloping background (100 → 226 photons across the image) under the local model: the
    // background is taken off, the centroids stay on the centres, the signal is the blob's
    let slope = |f: f64, s: f64| 100.0 + 1.2 * f + 0.8 * s;
    let img = blobs(&CENTRES, 2000.0, slope);
    let local = SpotOptions {
        background: Background::Local,
        ..SpotOptions::default()
    };
    let spots = api::find_spots(&prep, &img, &local).unwrap();
    check_centres(&spots, &CENTRES, 0.02);
    for s in &spots {
        let blob = 2.0 * std::f64::consts::PI * 2000.0;
        assert!((s.intensity / blob - 1.0).abs() < 0.05, "{s:?}");
    }
    // without the model the slope under the spots' pixels pulls their centroids uphill
    let flat = api::find_spots(&prep, &img, &SpotOptions::default()).unwrap();
    check_centres(&flat, &CENTRES, 0.5);
    let off = flat
        .iter()
        .map(|p| {
            CENTRES
                .iter()
                .map(|c| dist(p.fast, p.slow, c.0, c.1))
                .fold(f64::INFINITY, f64::min)
        })
        .fold(0f64, f64::max);
    assert!(off > 0.05, "{off}");

    // pixels the plan does not render (outside -roi) hold no spot
    let roi = api::prepare(
        &api::split_args(
            "-cell 100 100 100 90 90 90 -default_F 100 -detpixels 64 -pixel 0.1 -roi 0 29 0 63",
        ),
        &DiskFiles,
    )
    .unwrap();
    let img = blobs(&CENTRES, 1000.0, |_, _| 10.0);
    let left = api::find_spots(&roi, &img, &SpotOptions::default()).unwrap();
    let want: Vec<(f64, f64)> = CENTRES.iter().copied().filter(|c| c.0 < 28.0).collect();
    check_centres(&left, &want, 1e-9);
}

#[test]
fn bad_images_are_errors_naming_the_image() {
    let prep = synthetic();
    let err =
        |img: &[f64], o: &SpotOptions| api::find_spots(&prep, img, o).unwrap_err().to_string();
    let d = SpotOptions::default();
    let e = err(&[0.0; 100], &d);
    assert!(
        e.contains("spots: the target image has 100 pixels, the detector 64x64 = 4096"),
        "{e}"
    );
    let mut img = vec![0.0; 4096];
    img[70] = f64::NAN;
    let e = err(&img, &d);
    assert!(e.contains("pixel 70 (fast 6, slow 1) is not finite"), "{e}");
    let e = err(
        &[0.0; 4096],
        &SpotOptions {
            gain: 0.0,
            ..d.clone()
        },
    );
    assert!(e.contains("spots: the gain must be > 0"), "{e}");
    let e = err(
        &[0.0; 4096],
        &SpotOptions {
            threshold: -1.0,
            ..d.clone()
        },
    );
    assert!(e.contains("spots: the threshold"), "{e}");
    // an image without signal has no spots
    assert!(api::find_spots(&prep, &[5.0; 4096], &d).unwrap().is_empty());
}
