//! Values upstream reads silently into something else (cell counts and mosaic domains below 1,
//! `-oversample_thick` without a sensor thickness) keep upstream's image on the command line but
//! say so on stderr; detector axes that are zero or not perpendicular (flags or a CrystFEL
//! `-geom` file) are refused, naming the flags or the file, panel and line.

mod common;
use common::*;

const BASE: &str = "-cell 78 78 38 90 90 90 -default_F 100 -lambda 1 -distance 100 -detpixels 32 \
                    -nonoise -nopgm";

fn cli(name: &str, extra: &str) -> Run {
    let dir = scratch(&format!("silent-{name}"));
    let r = run_cli(&dir, &words(&format!("{BASE} {extra}")));
    assert!(!r.stderr.contains("panicked"), "{extra}\n{}", r.stderr);
    r
}

fn float_image(r: &Run) -> Vec<f32> {
    read_f32(&r.dir.join("f.bin"))
}

#[test]
fn cell_counts_below_one_keep_upstreams_image_with_a_warning() {
    let one = cli("n1", "-N 1 -floatfile f.bin");
    assert_eq!(one.status, 0, "{}", one.stderr);
    assert!(!one.stderr.contains("unit cell"), "{}", one.stderr);
    let neg = cli("n-5", "-N -5 -floatfile f.bin");
    assert_eq!(neg.status, 0, "{}", neg.stderr);
    assert!(
        neg.stderr
            .contains("WARNING: -N -5: fewer than 1 unit cell, read as 1"),
        "{}",
        neg.stderr
    );
    assert_eq!(float_image(&neg), float_image(&one));
    let na = cli("na-3", "-N 5 -Na -3 -floatfile f.bin");
    assert_eq!(na.status, 0, "{}", na.stderr);
    assert!(na.stderr.contains("WARNING: -Na -3:"), "{}", na.stderr);
    assert!(!na.stderr.contains("-Nb"), "{}", na.stderr);
}

#[test]
fn cell_entries_not_positive_keep_upstreams_image_with_a_warning() {
    // upstream reads b, c <= 0 as a and an angle <= 0 as 90 degrees: the same image, said
    let want = cli("cell-cubic", "-cell 78 78 78 90 90 90 -floatfile f.bin");
    assert_eq!(want.status, 0, "{}", want.stderr);
    assert!(!want.stderr.contains("-cell:"), "{}", want.stderr);
    let r = cli("cell-zero", "-cell 78 0 -2 90 0 -90 -floatfile f.bin");
    assert_eq!(r.status, 0, "{}", r.stderr);
    for w in [
        "WARNING: -cell: b = 0 is not positive: read as a = 78 Å (as upstream does)",
        "WARNING: -cell: c = -2 is not positive: read as a = 78 Å",
        "WARNING: -cell: beta = 0 degrees is not positive: read as 90 degrees",
        "WARNING: -cell: gamma = -90 degrees is not positive: read as 90 degrees",
    ] {
        assert!(r.stderr.contains(w), "{w}\n{}", r.stderr);
    }
    assert!(!r.stderr.contains("alpha"), "{}", r.stderr);
    assert_eq!(float_image(&r), float_image(&want));
    // entries left out are upstream's shorthand (`-cell 78`: a cube), not said
    let short = cli("cell-short", "-cell 78 -floatfile f.bin");
    assert_eq!(short.status, 0, "{}", short.stderr);
    assert!(!short.stderr.contains("-cell:"), "{}", short.stderr);
    assert_eq!(float_image(&short), float_image(&want));
}

#[test]
fn mosaic_domains_below_one_are_said() {
    let r = cli("dom", "-mosaic 0.1 -mosaic_domains -3 -oversample 1");
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("WARNING: -mosaic_domains -3: fewer than 1 mosaic domain"),
        "{}",
        r.stderr
    );
    let r = cli("dom0", "-mosaic_domains 0 -oversample 1");
    assert!(r.stderr.contains("-mosaic_domains 0"), "{}", r.stderr);
    let unset = cli("dom-unset", "-mosaic 0.1 -oversample 1");
    assert!(!unset.stderr.contains("fewer than 1"), "{}", unset.stderr);
}

#[test]
fn oversample_thick_without_thickness_warns_and_keeps_the_zero_image() {
    let r = cli("thick", "-oversample 2 -oversample_thick -floatfile f.bin");
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("-oversample_thick without a sensor thickness"),
        "{}",
        r.stderr
    );
    assert!(float_image(&r).iter().all(|&v| v == 0.0));
    let with = cli(
        "thick-t",
        "-oversample 2 -oversample_thick -detector_thick 100 -floatfile f.bin",
    );
    assert_eq!(with.status, 0, "{}", with.stderr);
    assert!(
        !with.stderr.contains("without a sensor thickness"),
        "{}",
        with.stderr
    );
}

#[test]
fn parallel_or_zero_detector_axes_are_refused_naming_the_flags() {
    for (extra, flag) in [
        ("-fdet_vector 0 0 1 -sdet_vector 0 0 1", "-fdet_vector"),
        ("-fdet_vector 0 0 1 -sdet_vector 0 0.1 1", "-fdet_vector"),
        ("-sdet_vector 0 0 -2", "-sdet_vector"),
        ("-fdet_vector 0 0 0", "-fdet_vector"),
    ] {
        let r = cli("axes", extra);
        assert_eq!(r.status, 2, "{extra}: {}", r.stderr);
        assert!(r.stderr.contains(flag), "{extra}: {}", r.stderr);
        assert!(
            r.stderr.contains("not perpendicular") || r.stderr.contains("zero"),
            "{extra}: {}",
            r.stderr
        );
    }
    let ok = cli("axes-ok", "-fdet_vector 0 0 1 -sdet_vector 0 -1 0");
    assert_eq!(ok.status, 0, "{}", ok.stderr);
    let Err(e) = nanobragg::api::prepare(
        &words(&format!("{BASE} -fdet_vector 0 0 1 -sdet_vector 0 0 1")),
        &nanobragg::files::DiskFiles,
    ) else {
        panic!("parallel axes are refused")
    };
    assert_eq!(e.flag.as_deref(), Some("-fdet_vector"));
}

#[test]
fn a_geom_panel_with_parallel_axes_names_the_file_panel_and_line() {
    let dir = scratch("silent-geom");
    let geom = "res = 5000\nclen = 0.1 m\np/min_fs = 0\np/max_fs = 23\np/min_ss = 0\n\
                p/max_ss = 19\np/fs = x\np/ss = x\np/corner_x = -10\np/corner_y = -10\n";
    std::fs::write(dir.join("parallel.geom"), geom).unwrap();
    let r = run_cli(&dir, &words(&format!("{BASE} -geom parallel.geom")));
    assert_ne!(r.status, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("parallel.geom:8: p/fs, p/ss: fast axis not perpendicular"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
}
