//! The browser's realistic-image chain (`nanobragg::realistic`, what `wasm/realistic.rs` calls)
//! against the CLI chain of the README ("Water, air and detector effects"):
//!
//!     nanobragg -pdb 1pfe.cif … -nointerpolate -floatfile spots.bin
//!     nonbragg -stol water.stol … -floatfile water.bin      (the same detector)
//!     nonbragg -stol air.stol -MW 29 -density 0.0012 … -floatfile air.bin
//!     (spots + water + air, added in f32) → noisify -floatfile sum.bin … -rng counter -noisefile noise.img
//!
//! for a small case with the same seeds: the spots are bit-identical (same plan, same table:
//! the library computes the table in the model's own cell, the CLI selects the reflections in
//! the simulated lattice, which is the same cell), the water and air images are bit-identical
//! (nonBragg resolves its own detector frame from its own flags, the library uses the spots'
//! frame: the same pixel positions), and so are the noise images.

mod common;
use common::{
    background_of, compare, detected, prepare_1pfe, read_f32, repo_root, run_program as run,
    scratch, smv_pixels, words,
};
use nanobragg::api::{self, Precision};
use nanobragg::realistic::{self, DetectorSettings};
use std::sync::atomic::AtomicBool;

/// Geometry of the case: nanoBragg's MOSFLM beam centre (Xbeam slow, Ybeam fast, +½ pixel)
/// and nonBragg's (Xbeam fast, Ybeam slow) for the same detector.
const SPOTS: &str = "-lambda 1.3 -distance 40 -detpixels 192 -pixel 0.1 -Xbeam 9.65 -Ybeam 9.55 \
    -xtalsize 0.004 -mosaic 0.3 -mosaic_dom 4 -misset 10 20 30 -flux 1e12 -exposure 0.1 -beamsize 0.01 -oversample 1";
const FRAME_NONBRAGG: &str =
    "-lambda 1.3 -distance 40 -detpixels 192 -pixel 0.1 -Xbeam 9.6 -Ybeam 9.7";
const BEAM: &str = "-flux 1e12 -exposure 0.1 -beamsize 0.01 -oversample 1";
const WATER: &str = "-stol water.stol -thickness 0.01";
const AIR: &str = "-stol air.stol -thickness 10 -MW 29 -density 0.0012";
const DETECTOR: DetectorSettings = DetectorSettings {
    readout: 2.0,
    psf_um: 60.0,
    gain: 1.0,
    adc: 40.0,
    calibration: 0.03,
    flicker: 0.0,
    seed: 7,
};
/// The library's detector effects draw from the counter generator (`-rng counter`).
const NOISIFY: &str = "-detpixels 192 -pixel 0.1 -distance 40 -lambda 1.3 -readout_noise 2 \
    -psf gauss -psf_fwhm 60 -adc 40 -gain 1 -seed 7 -rng counter";

#[test]
fn library_chain_matches_the_cli_chain() {
    let dir = scratch("realistic-chain");
    let model = repo_root().join("tests/fixtures/models/1pfe.cif");
    std::fs::copy(&model, dir.join("1pfe.cif")).unwrap();
    for t in ["water.stol", "air.stol"] {
        std::fs::copy(repo_root().join("crate/data/stol").join(t), dir.join(t)).unwrap();
    }

    // ---- the library chain (as the browser runs it)
    let never = AtomicBool::new(false);
    let prep = prepare_1pfe(words(SPOTS));
    let spots = api::render_cpu(prep.plan(), Precision::F64, &|_| {}, &never).unwrap();
    let (water, air) = (
        background_of(&prep, WATER, BEAM),
        background_of(&prep, AIR, BEAM),
    );
    let sum = realistic::compose(&[&spots, &water, &air]);
    let noisy = detected(&prep, &sum, &DETECTOR);

    // ---- the CLI chain
    let nb = |bin: &str, w: String| {
        let r = run(bin, &dir, &words(&w));
        assert_eq!(r.status, 0, "{bin} {w}: {}", r.stderr);
    };
    nb(
        env!("CARGO_BIN_EXE_nanobragg"),
        // the chain takes F at the nearest lattice point for a crystal of many cells where
        // upstream's rule interpolates every -xtalsize crystal (`realistic::install_table`)
        format!("-pdb 1pfe.cif {SPOTS} -nointerpolate -floatfile spots.bin -nonoise -nopgm"),
    );
    for (m, out) in [(WATER, "water.bin"), (AIR, "air.bin")] {
        nb(
            env!("CARGO_BIN_EXE_nonbragg"),
            format!("{m} {FRAME_NONBRAGG} {BEAM} -floatfile {out} -nonoise -nopgm"),
        );
    }
    let cli_spots = read_f32(&dir.join("spots.bin"));
    let cli_water = read_f32(&dir.join("water.bin"));
    let cli_air = read_f32(&dir.join("air.bin"));
    let cli_sum: Vec<f32> = (0..cli_spots.len())
        .map(|i| cli_spots[i] + cli_water[i] + cli_air[i])
        .collect();
    let bytes: Vec<u8> = cli_sum.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(dir.join("sum.bin"), bytes).unwrap();
    nb(
        env!("CARGO_BIN_EXE_noisify"),
        format!("-floatfile sum.bin {NOISIFY} -noisefile noise.img -intfile int.img -nopgm"),
    );
    let cli_noise = smv_pixels(&std::fs::read(dir.join("noise.img")).unwrap());

    // ---- the comparison
    assert!(spots.iter().any(|&v| v > 0.0), "no spots");
    assert_eq!(spots, cli_spots, "spots: library and CLI differ");
    for (name, lib, cli) in [("water", &water, &cli_water), ("air", &air, &cli_air)] {
        let c = compare(cli, lib);
        let max_rel = lib
            .iter()
            .zip(cli.iter())
            .map(|(a, b)| ((a - b) / b.abs().max(1e-30)).abs())
            .fold(0f32, f32::max);
        eprintln!(
            "{name}: correlation {} max relative difference {max_rel:e}",
            c.correlation
        );
        assert!(
            lib.iter().all(|&v| v > 0.0),
            "{name}: a pixel without background"
        );
        assert_eq!(lib, cli, "{name}: library and CLI backgrounds differ");
    }
    // the CLI writes 16-bit images (counts clipped at 65535); the library keeps 32 bits
    let noisy = nanobragg::noisify::to_u16(&noisy);
    let same_sum = sum.iter().zip(&cli_sum).filter(|(a, b)| a == b).count();
    let differ = noisy.iter().zip(&cli_noise).filter(|(a, b)| a != b).count();
    let far = noisy
        .iter()
        .zip(&cli_noise)
        .filter(|(a, b)| (**a as i64 - **b as i64).abs() > 1)
        .count();
    eprintln!(
        "float sums identical in {same_sum} of {} pixels; noise images differ in {differ} pixels, by more than 1 ADU in {far}",
        sum.len()
    );
    assert_eq!(noisy.len(), cli_noise.len());
    if same_sum == sum.len() {
        assert_eq!(differ, 0, "identical inputs, different noise images");
    }
    // Poisson deviates of means that differ in the last bit can differ by one count
    assert!(
        far == 0 && differ * 1000 <= sum.len(),
        "{differ} pixels differ ({far} by more than 1 ADU)"
    );
    // the image has spots over a background, and noise
    let bg_mean = cli_water.iter().chain(&cli_air).sum::<f32>() / cli_water.len() as f32;
    assert!(
        bg_mean > 0.5,
        "background {bg_mean} photons/pixel is too faint to see"
    );
}
