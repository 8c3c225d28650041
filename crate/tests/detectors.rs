//! Detector presets (`-detector NAME`) through the programs: pixel counts and size, module gaps
//! masked (no photons rendered there, -1 in the miniCBF as PILATUS and EIGER files mark them),
//! the header values a miniCBF takes from the preset, and the errors.

mod common;
use common::{read_f32, scratch};

fn run(bin: &str, dir: &std::path::Path, args: &str) -> (i32, String, String) {
    let words: Vec<String> = args.split_whitespace().map(String::from).collect();
    let r = common::run_program(bin, dir, &words);
    (r.status, r.stdout, r.stderr)
}

/// Gap pixels of a module array, computed here from the published module layout.
fn is_gap(i: usize, module: usize, gap: usize) -> bool {
    gap > 0 && i % (module + gap) >= module
}

fn cbf_text(path: &std::path::Path) -> String {
    let b = std::fs::read(path).unwrap();
    let end = b
        .windows(4)
        .position(|w| w == [0x0c, 0x1a, 0x04, 0xd5])
        .unwrap();
    String::from_utf8(b[..end].to_vec()).unwrap()
}

#[test]
fn pilatus6m_layout_on_nanobragg() {
    let dir = scratch("preset-pilatus");
    let (st, out, err) = run(
        env!("CARGO_BIN_EXE_nanobragg"),
        &dir,
        "-detector pilatus6m -cell 70 80 90 90 90 90 -default_F 100 -N 5 -distance 300 \
         -oversample 1 -roi 420 560 180 260 -nonoise -nopgm -floatfile f.bin -intfile i.img \
         -cbffile i.cbf",
    );
    assert_eq!(st, 0, "{err}");
    assert!(out.contains("(2463x2527 pixels)"), "{out}");
    assert!(out.contains("pixel=0.000172 meters"), "{out}");
    let img = read_f32(&dir.join("f.bin"));
    assert_eq!(img.len(), 2463 * 2527);
    let (mut lit_gaps, mut lit) = (0, 0);
    for (i, &v) in img.iter().enumerate() {
        let (f, s) = (i % 2463, i / 2463);
        if is_gap(f, 487, 7) || is_gap(s, 195, 17) {
            lit_gaps += (v != 0.0) as usize;
        } else {
            lit += (v > 0.0) as usize;
        }
    }
    assert_eq!(lit_gaps, 0, "photons rendered in module gaps");
    assert!(lit > 5_000, "{lit}");
    let text = cbf_text(&dir.join("i.cbf"));
    for line in [
        "_array_data.header_convention \"PILATUS_1.2\"",
        "# Detector: DECTRIS PILATUS 6M, S/N 00-0000",
        "# Pixel_size 172e-6 m x 172e-6 m",
        "# Silicon sensor, thickness 0.000320 m",
        "# Count_cutoff 1048575 counts",
        "# N_excluded_pixels = 526101",
    ] {
        assert!(text.contains(line), "no '{line}' in\n{text}");
    }
}

#[test]
fn eiger2_4m_on_nonbragg_and_errors() {
    let dir = scratch("preset-eiger");
    let table = common::repo_root().join("crate/data/stol/water.stol");
    std::fs::copy(table, dir.join("water.stol")).unwrap();
    let nb = env!("CARGO_BIN_EXE_nonbragg");
    let (st, out, err) = run(
        nb,
        &dir,
        "-stol water.stol -detector eiger2-4m -distance 120 -roi 980 1100 480 600 -nonoise \
         -nopgm -floatfile f.bin -intfile i.img -cbffile i.cbf",
    );
    assert_eq!(st, 0, "{err}");
    assert!(out.contains("(2068x2162 pixels)"), "{out}");
    let img = read_f32(&dir.join("f.bin"));
    for (i, &v) in img.iter().enumerate() {
        let (f, s) = (i % 2068, i / 2068);
        let inside = (980..=1100).contains(&f) && (480..=600).contains(&s);
        let gap = is_gap(f, 1028, 12) || is_gap(s, 512, 38);
        assert_eq!(v > 0.0, inside && !gap, "pixel ({f}, {s}) = {v}");
    }
    let text = cbf_text(&dir.join("i.cbf"));
    assert!(text.contains("# Detector: DECTRIS EIGER2 X 4M, S/N 00-0000"));
    assert!(
        text.contains("\"PILATUS_1.2\""),
        "EIGER files use the PILATUS convention"
    );
    assert!(text.contains("# Silicon sensor, thickness 0.000450 m"));
    // 1 column gap of 12 x 2162 + 3 row gaps of 38 x 2068 - 3 x 12 x 38 crossings
    assert!(text.contains(&format!(
        "# N_excluded_pixels = {}",
        12 * 2162 + 3 * 38 * 2068 - 3 * 12 * 38
    )));

    let (st, _, err) = run(nb, &dir, "-stol water.stol -detector pilatus2m");
    assert_eq!(st, 2);
    assert!(err.contains("-detector: unknown detector 'pilatus2m' (known: pilatus6m, eiger2-16m, eiger2-4m, mx300)"), "{err}");
    let (st, _, err) = run(
        env!("CARGO_BIN_EXE_nanobragg"),
        &dir,
        "-detector eiger2-16m -detpixels 64 -cell 50 50 50 90 90 90 -default_F 1 -nonoise -nopgm \
         -floatfile g.bin -intfile g.img",
    );
    assert_eq!(st, 0, "{err}");
    assert!(err.contains("-detector eiger2-16m: the detector is 64x64 pixels, not the preset's 4148x4362; module gaps not masked"), "{err}");
}
