//! Detectors of many panels (issue 18 §1): a panel split into parts renders the pixels of the
//! whole panel (f64 and f32 bit-identical: same plane, same reference point); panels placed from
//! their own corners (as a file states them) agree to rounding; the presets with gaps are real
//! modules that render, on their pixels, exactly what the one-panel-with-mask form renders; the
//! GPU renders every panel in one dispatch.

use nanobragg::api::{self, Precision};
use nanobragg::files::DiskFiles;
use nanobragg::plan::{Panel, Plan};
use std::sync::atomic::AtomicBool;

/// A tilted, two-theta-rotated, thick, oversampled detector with spots on it.
const TILTED: &str = "-cell 100 100 100 90 90 90 -misset 10 20 30 -default_F 100 -N 5 \
    -detpixels 64 -distance 100 -lambda 1 -detector_rotx 3 -detector_roty 4 -twotheta 8 \
    -oversample 2 -detector_thick 0.3 -detector_abs 300 -detector_thicksteps 2 -Xbeam 5";

fn plan(args: &str) -> Plan {
    api::prepare(&api::split_args(args), &DiskFiles)
        .expect("prepare")
        .plan()
        .clone()
}

fn render(p: &Plan, precision: Precision) -> Vec<f32> {
    api::render_cpu(p, precision, &|_| {}, &AtomicBool::new(false)).expect("render")
}

fn render_rows(p: &Plan, row_path: bool) -> Vec<f32> {
    let (mut image, exact) = nanobragg::cpu::render_with(
        p,
        Precision::F32,
        row_path,
        &|_| {},
        &AtomicBool::new(false),
    )
    .expect("render");
    nanobragg::cpu::apply_exact_fixup(p, &mut image, &exact);
    image
}

/// The whole panel cut into `parts` (stored-image rectangles), each keeping the plane.
fn split(p: &Plan, parts: &[[usize; 4]]) -> Plan {
    let whole = p.panels[0].clone();
    let mut q = p.clone();
    q.panels = parts
        .iter()
        .enumerate()
        .map(|(i, r)| whole.sub_panel(&format!("part{i}"), r[0], r[1], r[2], r[3]))
        .collect();
    q
}

const CUTS: &[&[[usize; 4]]] = &[
    &[[0, 0, 32, 64], [32, 0, 32, 64]],
    &[[0, 0, 64, 17], [0, 17, 64, 47]],
    // a run of 37 pixels: the f32 row path's blocks end at the cut, not at 64
    &[[0, 0, 37, 64], [37, 0, 27, 30], [37, 30, 27, 34]],
];

#[test]
fn a_split_panel_renders_the_whole_panels_pixels_bit_identically() {
    let p = plan(TILTED);
    assert_eq!(p.panels.len(), 1);
    let whole64 = render(&p, Precision::F64);
    let whole32 = render_rows(&p, true);
    let whole32_px = render_rows(&p, false);
    let peak = whole64.iter().cloned().fold(0f32, f32::max);
    let low = whole64.iter().cloned().fold(f32::MAX, f32::min);
    assert!(peak > 100.0 * low, "spots: peak {peak}, least {low}");
    for cut in CUTS {
        let q = split(&p, cut);
        assert_eq!(render(&q, Precision::F64), whole64, "f64, cut {cut:?}");
        assert_eq!(render_rows(&q, true), whole32, "f32 rows, cut {cut:?}");
        assert_eq!(
            render_rows(&q, false),
            whole32_px,
            "f32 pixels, cut {cut:?}"
        );
    }
}

#[test]
fn panels_placed_by_their_own_corners_agree_to_rounding() {
    // as a file states panels: each by the corner of its first pixel (the reference point is
    // then recomputed from it, so the positions agree to f64 rounding, not to the bit)
    let p = plan(TILTED);
    let whole = p.panels[0].clone();
    let mut q = p.clone();
    q.panels = CUTS[2]
        .iter()
        .map(|r| {
            let s = whole.sub_panel("x", r[0], r[1], r[2], r[3]);
            Panel {
                pix0: Panel::reference(s.origin, s.fdet, s.sdet, s.pixel, s.data_origin),
                ..s
            }
        })
        .collect();
    let a = render(&p, Precision::F64);
    let b = render(&q, Precision::F64);
    let peak = a.iter().cloned().fold(0f32, f32::max) as f64;
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (*x as f64 - *y as f64).abs())
        .fold(0.0, f64::max);
    assert!(worst / peak < 1e-6, "worst {worst} of peak {peak}");
}

#[test]
fn pixels_of_no_panel_are_zero_and_masked() {
    let p = plan(TILTED);
    let q = split(&p, &[[0, 0, 20, 64], [30, 0, 34, 64]]);
    let img = render(&q, Precision::F64);
    let whole = render(&p, Precision::F64);
    for s in 0..64 {
        for f in 0..64 {
            let i = s * 64 + f;
            if (20..30).contains(&f) {
                assert_eq!(img[i], 0.0);
            } else {
                assert_eq!(img[i], whole[i]);
            }
        }
    }
}

/// `Plan::row_segments`, the one rule by which the row kernels (image, tangents, water and air)
/// leave pixels out, against `Plan::renders` and `Plan::panel_at` pixel by pixel: each row cut
/// in order into runs that cover it, a `Some(i)` run only of pixels panel `i` renders (the
/// first-listed panel where two overlap), a `None` run only of pixels none renders, and no two
/// `None` runs side by side. Overlapping panels, a gap, a region of interest and a mask (a run
/// across a block's edge, a single pixel at a panel's edge, a whole row).
#[test]
fn row_segments_are_the_pixels_each_panel_renders() {
    let whole = plan(&format!("{TILTED} -roi 3 60 2 61"));
    // panel 1 overlaps panel 0's right part (panel 0 takes it) and starts inside it on rows
    // 10-39; columns 50-53 of rows 40-63 are no panel's
    let mut p = split(
        &whole,
        &[
            [0, 0, 30, 64],
            [20, 10, 44, 30],
            [30, 40, 20, 24],
            [54, 40, 10, 24],
        ],
    );
    let fp = p.fpixels;
    let mut mask = vec![1u8; fp * p.spixels];
    mask[12 * fp + 30..12 * fp + 36].fill(0);
    mask[13 * fp + 29] = 0;
    mask[50 * fp..51 * fp].fill(0);
    p.mask = Some(mask);
    let mut kinds = [0usize; 2];
    for s in 0..p.spixels {
        let runs = p.row_segments(s);
        assert_eq!(runs.first().map(|r| r.0), Some(0), "row {s} starts at 0");
        assert_eq!(runs.last().map(|r| r.1), Some(fp), "row {s} ends at {fp}");
        for w in runs.windows(2) {
            assert_eq!(w[0].1, w[1].0, "row {s}: runs {w:?} meet");
            assert!(
                w[0].2.is_some() || w[1].2.is_some(),
                "row {s}: two runs of nothing {w:?}"
            );
        }
        for &(a, b, panel) in &runs {
            assert!(a < b, "row {s}: empty run {a}..{b}");
            for f in a..b {
                let want = if p.renders(f, s) {
                    p.panel_at(f, s)
                } else {
                    None
                };
                assert_eq!(panel, want, "pixel {f},{s} in run {a}..{b}");
            }
            kinds[panel.is_some() as usize] += b - a;
        }
    }
    // the cases are there: pixels left out and pixels rendered
    assert!(kinds[0] > 4 * fp && kinds[1] > 40 * fp, "{kinds:?}");
}

/// The preset with its modules as panels, and the same render as one panel with the gap mask.
fn preset_forms(name: &str, roi: [usize; 4]) -> (Plan, Plan) {
    let args = format!(
        "-cell 100 100 100 90 90 90 -misset 10 20 30 -default_F 100 -N 5 -distance 200 \
         -lambda 1 -detector {name} -roi {} {} {} {} -detector_rotx 2 -twotheta 5",
        roi[0], roi[1], roi[2], roi[3]
    );
    let modules = plan(&args);
    let preset = nanobragg::presets::find(name).unwrap();
    let (nf, ns) = preset.modules();
    assert_eq!(
        modules.panels.len(),
        nf * ns,
        "{name}: one panel per module"
    );
    let m0 = &modules.panels[0];
    assert_eq!(m0.size, [preset.module_fast, preset.module_slow]);
    let m1 = &modules.panels[1];
    assert_eq!(m1.data_origin, [preset.module_fast + preset.gap_fast, 0]);
    // module 1's first pixel lies one module and one gap along the fast axis from module 0's
    let step = (preset.module_fast + preset.gap_fast) as f64 * preset.pixel_mm / 1000.0;
    for c in 0..3 {
        assert!((m1.origin[c] - (m0.origin[c] + step * m0.fdet[c])).abs() < 1e-12);
    }
    let mut one = modules.clone();
    one.panels = vec![Panel {
        name: "whole".into(),
        data_origin: [0, 0],
        size: [modules.fpixels, modules.spixels],
        origin: m0.pix0,
        ..m0.clone()
    }];
    (modules, one)
}

#[test]
fn preset_modules_render_what_the_masked_panel_renders() {
    // regions that straddle module gaps in both directions
    for (name, roi) in [
        ("pilatus6m", [470, 510, 180, 220]),
        ("eiger2-4m", [1010, 1050, 500, 560]),
        ("eiger2-16m", [2060, 2090, 1090, 1110]),
    ] {
        let (modules, one) = preset_forms(name, roi);
        let preset = nanobragg::presets::find(name).unwrap();
        let a = render(&modules, Precision::F64);
        let b = render(&one, Precision::F64);
        assert_eq!(a, b, "{name}: f64");
        assert!(a.iter().any(|&v| v > 0.0), "{name}: something rendered");
        // without the mask, the modules alone decide: gaps still render nothing
        let mut bare = modules.clone();
        bare.mask = None;
        let c = render(&bare, Precision::F64);
        assert_eq!(c, a, "{name}: panels without the mask");
        let f32m = render(&modules, Precision::F32);
        assert_eq!(f32m, render(&one, Precision::F32), "{name}: f32");
        let gaps = (0..a.len())
            .filter(|&i| preset.is_gap(i % modules.fpixels, i / modules.fpixels))
            .filter(|&i| roi_has(&roi, i % modules.fpixels, i / modules.fpixels))
            .inspect(|&i| assert_eq!(c[i], 0.0))
            .count();
        assert!(gaps > 0, "{name}: the region crosses a gap");
    }
}

fn roi_has(r: &[usize; 4], f: usize, s: usize) -> bool {
    f >= r[0] && f <= r[1] && s >= r[2] && s <= r[3]
}

#[test]
fn presets_without_gaps_and_curved_detectors_stay_one_panel() {
    let p = plan(
        "-cell 100 100 100 90 90 90 -default_F 100 -N 5 -distance 200 -lambda 1 -detector mx300 \
         -roi 0 10 0 10",
    );
    assert_eq!(p.panels.len(), 1);
    let c = plan(
        "-cell 100 100 100 90 90 90 -default_F 100 -N 5 -distance 200 -lambda 1 -curved_det \
         -detector pilatus6m -roi 0 10 0 10",
    );
    assert_eq!(c.panels.len(), 1);
}

#[cfg(feature = "gpu")]
mod gpu_support;

/// The GPU kernel looks each pixel's panel up in its panel table (one dispatch for all panels):
/// a split panel renders the whole panel's image, and the preset modules the masked panel's;
/// both agree with the f64 CPU kernel within the GPU golden tolerance.
#[cfg(feature = "gpu")]
#[test]
fn gpu_renders_every_panel_in_one_dispatch() {
    use gpu_support::RenderExact;
    let mut r = gpu_support::renderer();
    let p = plan(TILTED);
    let whole = r.render_exact(&p).expect("render");
    let cpu = render(&p, Precision::F64);
    assert!(gpu_support::max_rel_to_peak(&whole, &cpu) < 1e-3);
    for cut in CUTS {
        let q = split(&p, cut);
        assert_eq!(r.render_exact(&q).expect("render"), whole, "cut {cut:?}");
    }
    let q = split(&p, &[[0, 0, 20, 64], [30, 0, 34, 64]]);
    let gap = r.render_exact(&q).expect("render");
    for (i, v) in gap.iter().enumerate() {
        let f = i % 64;
        assert_eq!(*v, if (20..30).contains(&f) { 0.0 } else { whole[i] });
    }
    let (modules, one) = preset_forms("eiger2-4m", [1010, 1050, 500, 560]);
    let a = r.render_exact(&modules).expect("render");
    assert_eq!(a, r.render_exact(&one).expect("render"));
    let mut bare = modules.clone();
    bare.mask = None;
    assert_eq!(r.render_exact(&bare).expect("render"), a);
    assert!(gpu_support::max_rel_to_peak(&a, &render(&modules, Precision::F64)) < 1e-3);
}

// ---- -geom (CrystFEL), -geomout, multi-panel -expt, the per-pixel geometry ----

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("nanobragg-panels-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn plan_in(dir: &std::path::Path, args: &str) -> nanobragg::resolve::Setup {
    let words: Vec<String> = api::split_args(args)
        .into_iter()
        .map(|w| {
            if w.ends_with(".geom") || w.ends_with(".expt") {
                dir.join(&w).to_string_lossy().into_owned()
            } else {
                w
            }
        })
        .collect();
    api::prepare(&words, &DiskFiles).expect("prepare").setup
}

/// One 100 x 100 panel of 0.1 mm, fast along CrystFEL's -x (nanoBragg's +z), slow along -y, at
/// 100 mm, tilted by a z component on the slow axis; and the same plane cut in two at ss 40.
const ONE_GEOM: &str = "photon_energy = 12398.419843320026 eV\nres = 10000\nclen = 0.1 m\n\
    a/min_fs = 0\na/max_fs = 99\na/min_ss = 0\na/max_ss = 99\na/fs = -1.0x\n\
    a/ss = -0.9961946981y +0.0871557427z\na/corner_x = 48.5\na/corner_y = 51.0\n";

fn cut_geom() -> String {
    // the second part's corner: 40 slow pixels further along ss
    let (sy, sz) = (-0.9961946981f64, 0.0871557427f64);
    format!(
        "photon_energy = 12398.419843320026 eV\nres = 10000\nclen = 0.1 m\n\
         a/min_fs = 0\na/max_fs = 99\na/min_ss = 0\na/max_ss = 39\na/fs = -1.0x\n\
         a/ss = {sy}y +{sz}z\na/corner_x = 48.5\na/corner_y = 51.0\n\
         b/min_fs = 0\nb/max_fs = 99\nb/min_ss = 40\nb/max_ss = 99\nb/fs = -1.0x\n\
         b/ss = {sy}y +{sz}z\nb/corner_x = 48.5\nb/corner_y = {}\nb/coffset = {} m\n",
        51.0 + 40.0 * sy,
        40.0 * sz / 10000.0
    )
}

const CRYSTAL: &str = "-cell 60 70 80 90 90 90 -misset 5 10 15 -default_F 100 -N 10 -oversample 2";

#[test]
fn detector_derivatives_are_refused_for_a_file_detector() {
    // the panels of -geom do not move with -distance, -Xbeam, -detector_rot*: a derivative by
    // those would be an all-zero image; the crystal's are fine
    use nanobragg::tangent::Param;
    let dir = scratch("geom-grad");
    std::fs::write(dir.join("one.geom"), ONE_GEOM).unwrap();
    let words: Vec<String> = api::split_args(&format!("{CRYSTAL} -geom one.geom"))
        .into_iter()
        .map(|w| {
            if w.ends_with(".geom") {
                dir.join(&w).to_string_lossy().into_owned()
            } else {
                w
            }
        })
        .collect();
    let prep = api::prepare(&words, &DiskFiles).expect("prepare");
    let cancel = std::sync::atomic::AtomicBool::new(false);
    for p in [Param::Distance, Param::BeamY, Param::DetRotZ] {
        let e = api::render_gradients(&prep, &DiskFiles, &[p], &|_| {}, &cancel).unwrap_err();
        assert!(
            e.message.contains("the detector comes from -geom") && e.message.contains("one.geom"),
            "{}",
            e.message
        );
        assert_eq!(e.flag.as_deref(), Some("-gradients"));
    }
}

#[test]
fn a_geom_file_cut_in_two_renders_the_whole_panel() {
    let dir = scratch("geom-cut");
    std::fs::write(dir.join("one.geom"), ONE_GEOM).unwrap();
    std::fs::write(dir.join("cut.geom"), cut_geom()).unwrap();
    let one = plan_in(&dir, &format!("{CRYSTAL} -geom one.geom"));
    let cut = plan_in(&dir, &format!("{CRYSTAL} -geom cut.geom"));
    assert_eq!((one.plan.panels.len(), cut.plan.panels.len()), (1, 2));
    assert_eq!((cut.plan.fpixels, cut.plan.spixels), (100, 100));
    // the wavelength is the file's (12398.42 eV = 1 Å)
    assert!((one.lambda0 - 1e-10).abs() < 1e-22);
    // CrystFEL's corner (48.5, 51) px at z 0.1 m -> nanoBragg (0.1, 0.0051, -0.00485) m
    let o = one.plan.panels[0].origin;
    for (a, b) in o.iter().zip([0.1, 0.0051, -0.00485]) {
        assert!((a - b).abs() < 1e-15, "{o:?}");
    }
    assert_eq!(one.plan.panels[0].fdet, [0.0, 0.0, 1.0]);
    let a = render(&one.plan, Precision::F64);
    let b = render(&cut.plan, Precision::F64);
    let peak = a.iter().cloned().fold(0f32, f32::max) as f64;
    assert!(peak > 0.0);
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (*x as f64 - *y as f64).abs())
        .fold(0.0, f64::max);
    assert!(worst / peak < 1e-5, "worst {worst} of peak {peak}");
}

#[test]
fn geomout_reads_back_to_the_same_panels() {
    let dir = scratch("geom-out");
    std::fs::write(dir.join("cut.geom"), cut_geom()).unwrap();
    let first = plan_in(&dir, &format!("{CRYSTAL} -geom cut.geom"));
    let prep = api::Prepared {
        setup: first.clone(),
    };
    std::fs::write(dir.join("back.geom"), nanobragg::cli::geom_file(&prep)).unwrap();
    let back = plan_in(&dir, &format!("{CRYSTAL} -geom back.geom"));
    assert_eq!(first.plan.panels.len(), back.plan.panels.len());
    for (a, b) in first.plan.panels.iter().zip(&back.plan.panels) {
        assert_eq!(
            (&a.name, a.data_origin, a.size),
            (&b.name, b.data_origin, b.size)
        );
        for c in 0..3 {
            assert!((a.origin[c] - b.origin[c]).abs() < 1e-12);
            assert!((a.fdet[c] - b.fdet[c]).abs() < 1e-10);
            assert!((a.sdet[c] - b.sdet[c]).abs() < 1e-10);
        }
    }
    assert!((first.lambda0 - back.lambda0).abs() < 1e-20);
    // a preset's modules written and read back: the same 8 modules
    let eiger = plan_in(
        &dir,
        "-cell 60 70 80 90 90 90 -default_F 100 -N 5 -detector eiger2-4m -distance 150",
    );
    let prep = api::Prepared { setup: eiger };
    std::fs::write(dir.join("eiger.geom"), nanobragg::cli::geom_file(&prep)).unwrap();
    let back = plan_in(
        &dir,
        "-cell 60 70 80 90 90 90 -default_F 100 -N 5 -geom eiger.geom",
    );
    assert_eq!(back.plan.panels.len(), 8);
    assert_eq!((back.plan.fpixels, back.plan.spixels), (2068, 2162));
    for (a, b) in prep.plan().panels.iter().zip(&back.plan.panels) {
        assert_eq!((a.data_origin, a.size), (b.data_origin, b.size));
        for c in 0..3 {
            assert!((a.origin[c] - b.origin[c]).abs() < 1e-12, "{a:?} {b:?}");
        }
    }
    // the gaps belong to no panel: masked
    let m = back.plan.mask.as_ref().unwrap();
    assert_eq!(m[1030], 0);
    assert_eq!(m[1027], 1);
}

#[test]
fn geom_errors_name_file_line_and_key() {
    let dir = scratch("geom-bad");
    std::fs::write(
        dir.join("bad.geom"),
        ONE_GEOM.replace("a/max_ss = 99", "a/max_ss = x"),
    )
    .unwrap();
    let words: Vec<String> = api::split_args(&format!("{CRYSTAL} -geom"))
        .into_iter()
        .chain([dir.join("bad.geom").to_string_lossy().into_owned()])
        .collect();
    let e = api::prepare(&words, &DiskFiles).unwrap_err();
    assert!(
        e.message
            .ends_with("bad.geom:7: a/max_ss: 'x' is not a pixel index"),
        "{}",
        e.message
    );
    assert_eq!(
        (e.line, e.key.as_deref(), e.flag.as_deref()),
        (Some(7), Some("a/max_ss"), Some("-geom"))
    );
    let words: Vec<String> = api::split_args(&format!("{CRYSTAL} -geom nowhere.geom"));
    let e = api::prepare(&words, &DiskFiles).unwrap_err();
    assert!(e.message.contains("nowhere.geom"), "{}", e.message);
    assert_eq!(e.flag.as_deref(), Some("-geom"));
}

#[test]
fn pixel_panel_names_the_panel_and_agrees_with_the_readout() {
    let dir = scratch("geom-pixel");
    std::fs::write(dir.join("cut.geom"), cut_geom()).unwrap();
    let s = plan_in(&dir, &format!("{CRYSTAL} -geom cut.geom"));
    let g = nanobragg::predict::pixel_panel(&s, 10.5, 70.5);
    assert_eq!((g.panel, g.panel_name.as_deref()), (Some(1), Some("b")));
    assert_eq!(g.panel_pixel, Some([10.5, 30.5]));
    let h = nanobragg::predict::hkl_at_pixel(&s, 10.5, 70.5).unwrap();
    assert!((g.d - h.d).abs() < 1e-12 * h.d && (g.two_theta - h.two_theta).abs() < 1e-12);
    for c in 0..3 {
        assert!((g.position[c] - h.position[c]).abs() < 1e-15);
    }
    // the position is the kernels' mapping on panel b: the centre of pixel (10, 70) lies
    // between its four sub-pixels (oversample 2)
    let p = &s.plan;
    assert_eq!(p.oversample, 2);
    let subs: Vec<_> = [(20, 140), (21, 140), (20, 141), (21, 141)]
        .iter()
        .map(|&(f, sl)| p.panel_subpixel_position(&p.panels[1], f, sl, 0.0))
        .collect();
    for c in 0..3 {
        let mean = subs.iter().map(|v| v[c]).sum::<f64>() / 4.0;
        assert!((mean - g.position[c]).abs() < 1e-15, "{c}");
    }
    // 2θ from the lab position directly
    let r = g.position;
    let tt = (r[0] / (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]).sqrt())
        .acos()
        .to_degrees();
    assert!((tt - g.two_theta).abs() < 1e-9);
    // prediction finds spots on both panels, each on its panel's pixels
    let pred = nanobragg::predict::predict(&s, &Default::default()).unwrap();
    let on = |k: usize| {
        pred.reflections
            .iter()
            .filter(|r| r.on_detector && r.in_condition)
            .filter(|r| {
                let (f, sl) = (r.fast.unwrap(), r.slow.unwrap());
                nanobragg::predict::pixel_panel(&s, f, sl).panel == Some(k)
            })
            .count()
    };
    assert!(on(0) > 0 && on(1) > 0, "{} {}", on(0), on(1));
}

#[test]
fn a_multi_panel_expt_places_each_panel_where_dxtbx_does() {
    let dir = scratch("expt-panels");
    // two panels under a tilted group; dxtbx's global frames (printed by dxtbx for this file):
    // panel a origin (-3, 3, -104) mm, fast (0, -1, 0), slow (1, 0, 0)
    let text = r#"{"experiment": [{"beam": 0, "detector": 0}],
      "beam": [{"direction": [0.0, 0.0, 1.0], "wavelength": 1.0}],
      "detector": [{"panels": [
        {"name": "a", "fast_axis": [1.0, 0.0, 0.0], "slow_axis": [0.0, 1.0, 0.0],
         "origin": [1.0, 2.0, 3.0], "image_size": [60, 40], "pixel_size": [0.1, 0.1]},
        {"name": "b", "fast_axis": [1.0, 0.0, 0.0], "slow_axis": [0.0, 1.0, 0.0],
         "origin": [1.0, 6.5, 3.0], "image_size": [60, 40], "pixel_size": [0.1, 0.1]}],
       "hierarchy": {"fast_axis": [1.0, 0.0, 0.0], "slow_axis": [0.0, -1.0, 0.0],
         "origin": [-10.0, 10.0, -100.0], "children": [
           {"fast_axis": [0.0, 1.0, 0.0], "slow_axis": [1.0, 0.0, 0.0],
            "origin": [5.0, 6.0, 7.0], "children": [{"panel": 0}, {"panel": 1}]}]}}]}"#;
    std::fs::write(dir.join("two.expt"), text).unwrap();
    let s = plan_in(&dir, &format!("{CRYSTAL} -expt two.expt"));
    let p = &s.plan;
    assert_eq!(p.panels.len(), 2);
    assert_eq!((p.fpixels, p.spixels), (60, 80));
    assert_eq!(p.panels[1].data_origin, [0, 40]);
    // dxtbx (x, y, z) mm -> nanoBragg (-z, y, x) m
    let want_a = [0.104, 0.003, -0.003];
    let want_b = [0.104, 0.003, 0.0015]; // 4.5 mm further along the group's slow axis (+x)
    for c in 0..3 {
        assert!(
            (p.panels[0].origin[c] - want_a[c]).abs() < 1e-15,
            "{:?}",
            p.panels[0].origin
        );
        assert!(
            (p.panels[1].origin[c] - want_b[c]).abs() < 1e-15,
            "{:?}",
            p.panels[1].origin
        );
    }
    assert_eq!(p.panels[0].fdet, [0.0, -1.0, 0.0]);
    assert_eq!(p.panels[0].sdet, [-0.0, 0.0, 1.0]);
    let img = render(p, Precision::F64);
    assert!(img[..60 * 40].iter().any(|&v| v > 0.0) && img[60 * 40..].iter().any(|&v| v > 0.0));
}

/// Preparing a detector of many panels takes time linear in pixels + panels (issue 29: 20,000
/// panels took 30 s, rows × panels in the gap mask and panels² in the overlap check): 20,000
/// stacked panels, every other one half as wide, prepare in well under a few seconds, and exactly
/// the pixels of no panel are masked.
#[test]
fn many_panels_prepare_in_linear_time() {
    let n = 20_000;
    let panels: Vec<String> = (0..n)
        .map(|k| {
            let w = if k % 2 == 0 { 8 } else { 4 };
            format!(
                r#"{{"origin": [-0.4, {}, -100], "fast_axis": [1, 0, 0], "slow_axis": [0, -1, 0],
                "pixel_size": [0.1, 0.1], "image_size": [{w}, 2]}}"#,
                1000.0 - 0.2 * k as f64
            )
        })
        .collect();
    let expt = format!(
        r#"{{"experiment": [{{"beam": 0, "detector": 0}}],
        "beam": [{{"direction": [0, 0, 1], "wavelength": 1}}],
        "detector": [{{"panels": [{}]}}]}}"#,
        panels.join(",")
    );
    let mut files = nanobragg::files::MemFiles::default();
    files.0.insert("many.expt".into(), expt.into_bytes());
    let words = api::split_args("-cell 100 100 100 90 90 90 -default_F 100 -N 2 -expt many.expt");
    let t = std::time::Instant::now();
    let prep = api::prepare(&words, &files).expect("prepare");
    let took = t.elapsed();
    let p = prep.plan();
    assert_eq!((p.fpixels, p.spixels, p.panels.len()), (8, 2 * n, n));
    let masked = p
        .mask
        .as_ref()
        .expect("a mask")
        .iter()
        .filter(|&&m| m == 0)
        .count();
    assert_eq!(masked, n / 2 * 2 * 4);
    assert!(took.as_secs_f64() < 5.0, "{took:?}");
}
