//! `-nexus FILE` (NXmx through `io::nexus`, the one NeXus writer), read back with hdf5-pure's
//! reader: the image is the SMV int image (gaps -1), each frame of `-nexus_images N` is the int
//! image of the same run restricted to its share of the oscillation, and the geometry is the
//! resolved detector's in the McStas frame. DIALS reads the same files in
//! `scripts/dials_roundtrip.py`.

mod common;
use common::scratch;
use hdf5_pure::File;
use std::path::Path;

fn run(dir: &Path, args: &str) -> common::Run {
    let words: Vec<String> = args.split_whitespace().map(String::from).collect();
    common::run_program(env!("CARGO_BIN_EXE_nanobragg"), dir, &words)
}

fn ok(dir: &Path, args: &str) -> String {
    let r = run(dir, args);
    assert_eq!(r.status, 0, "nanobragg {args}:\n{}", r.stderr);
    r.stdout
}

fn smv_u16(path: &Path) -> Vec<i32> {
    let b = std::fs::read(path).unwrap();
    b[512..]
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]) as i32)
        .collect()
}

fn vector(f: &File, path: &str) -> Vec<f64> {
    f.dataset(path)
        .unwrap()
        .attrs()
        .unwrap()
        .get("vector")
        .and_then(|v| v.to_f64s())
        .unwrap()
}

const BASE: &str = "-cell 41 47 53 95 98 103 -default_F 100 -N 5 -misset 10 20 30 -lambda 1 \
                    -distance 80 -detpixels 64 -pixel 0.4 -oversample 1 -scale 0.05 -nopgm -nonoise";

#[test]
fn nexus_compression_bslz4_stores_the_deflate_frames() {
    let dir = scratch("nexus-bslz4");
    let series = "-phi 3 -osc 2 -phisteps 4 -nexus_images 2 -floatfile f.bin";
    ok(&dir, &format!("{BASE} {series} -nexus d.nxs"));
    ok(
        &dir,
        &format!("{BASE} {series} -nexus b.nxs -nexus_compression bslz4"),
    );
    let d = File::open(dir.join("d.nxs")).unwrap();
    let want = d.dataset("entry/data/data").unwrap().read::<i32>().unwrap();
    let bytes = std::fs::read(dir.join("b.nxs")).unwrap();
    let b = File::from_bytes(bytes.clone()).unwrap();
    let ds = b.dataset("entry/data/data").unwrap();
    let p = ds.filter_pipeline();
    assert_eq!(
        (p.len(), p[0].id, p[0].client_data.clone()),
        (1, 32008, vec![0, 2, 4, 0, 2])
    );
    let mut chunks = ds.chunks().unwrap();
    chunks.sort_by_key(|c| c.offset.clone());
    let mut got = Vec::new();
    for c in &chunks {
        let at = c.address as usize;
        let raw = nanobragg::io::bitshuffle::bitshuffle_decode(
            &bytes[at..at + c.storage_size as usize],
            &p[0].client_data,
            4,
            64 * 64 * 4,
        )
        .unwrap();
        got.extend(
            raw.chunks_exact(4)
                .map(|x| i32::from_le_bytes(x.try_into().unwrap())),
        );
    }
    assert!(got == want && want.iter().any(|&v| v > 100));
    let r = run(
        &dir,
        &format!("{BASE} -nexus x.nxs -nexus_compression gzip"),
    );
    assert_ne!(r.status, 0);
    assert!(
        r.stderr
            .contains("-nexus_compression: expected deflate or bslz4, found 'gzip'"),
        "{}",
        r.stderr
    );
    assert!(!dir.join("x.nxs").exists());
}

#[test]
fn nexus_series_frames_are_the_split_oscillation() {
    let dir = scratch("nexus-series");
    let out = ok(
        &dir,
        &format!("{BASE} -phi 3 -osc 2 -phisteps 8 -nexus_images 4 -nexus s.nxs -floatfile f.bin"),
    );
    assert!(
        out.contains("writing s.nxs as NXmx (4 images of the oscillation)"),
        "{out}"
    );
    let f = File::open(dir.join("s.nxs")).unwrap();
    let d = f.dataset("entry/data/data").unwrap();
    assert_eq!(d.shape().unwrap(), vec![4, 64, 64]);
    let data = d.read::<i32>().unwrap();
    for k in 0..4 {
        // the same frame rendered alone
        ok(
            &dir,
            &format!(
                "{BASE} -phi {} -osc 0.5 -phisteps 2 -floatfile k.bin -intfile k{k}.img",
                3.0 + 0.5 * k as f64
            ),
        );
        let want = smv_u16(&dir.join(format!("k{k}.img")));
        assert_eq!(&data[k * 4096..(k + 1) * 4096], &want[..], "frame {k}");
        assert!(want.iter().any(|&v| v > 100), "frame {k} has spots");
    }
    let phi = f.dataset("entry/sample/transformations/phi").unwrap();
    assert_eq!(phi.read_f64().unwrap(), vec![3.0, 3.5, 4.0, 4.5]);
    let end = f.dataset("entry/sample/transformations/phi_end").unwrap();
    assert_eq!(end.read_f64().unwrap(), vec![3.5, 4.0, 4.5, 5.0]);
    // MOSFLM spindle +z -> McStas -x (dxtbx: +x)
    assert_eq!(
        vector(&f, "entry/sample/transformations/phi"),
        vec![-1.0, 0.0, 0.0]
    );
}

#[test]
fn nexus_image_geometry_and_preset_gaps() {
    let dir = scratch("nexus-one");
    let out = ok(
        &dir,
        &format!("{BASE} -Xbeam 12.2 -Ybeam 13.4 -nexus one.nxs -intfile one.img -floatfile f.bin"),
    );
    let f = File::open(dir.join("one.nxs")).unwrap();
    let data = f.dataset("entry/data/data").unwrap().read::<i32>().unwrap();
    assert_eq!(data, smv_u16(&dir.join("one.img")));
    // the module's origin is nanoBragg's DIALS origin mapped back to McStas: (-x, y, -z)
    let line = out.lines().find(|l| l.contains("dials origin=")).unwrap();
    let dials: Vec<f64> = line
        .split('=')
        .nth(1)
        .unwrap()
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    let o = f
        .dataset("entry/instrument/detector/transformations/detector_origin")
        .unwrap();
    let len = o.read_f64().unwrap()[0];
    let u = vector(
        &f,
        "entry/instrument/detector/transformations/detector_origin",
    );
    let mcstas = [-dials[0], dials[1], -dials[2]];
    for k in 0..3 {
        // the printed origin has 6 significant digits
        assert!(
            (len * u[k] - mcstas[k]).abs() < 1e-4,
            "{k}: {} vs {}",
            len * u[k],
            mcstas[k]
        );
    }
    let fast = vector(&f, "entry/instrument/detector/module/fast_pixel_direction");
    let slow = vector(&f, "entry/instrument/detector/module/slow_pixel_direction");
    assert_eq!((fast, slow), (vec![-1.0, 0.0, 0.0], vec![0.0, -1.0, 0.0]));
    let px = f
        .dataset("entry/instrument/detector/module/fast_pixel_direction")
        .unwrap()
        .read_f64()
        .unwrap();
    assert_eq!(px, vec![0.4]);
    let wl = f
        .dataset("entry/instrument/beam/incident_wavelength")
        .unwrap();
    assert_eq!(wl.read_f64().unwrap(), vec![1.0]);

    // a preset: its gaps are -1 and in the pixel mask, its sensor is stated
    ok(
        &dir,
        "-cell 70 80 90 90 90 90 -default_F 100 -N 2 -detector pilatus6m -oversample 1 -nopgm \
         -nonoise -nexus p.nxs -intfile p.img -floatfile p.bin",
    );
    let f = File::open(dir.join("p.nxs")).unwrap();
    let data = f.dataset("entry/data/data").unwrap().read::<i32>().unwrap();
    // PILATUS 6M: 487 x 195 modules, 7 and 17 pixels between them
    let gap = |i: usize| (i % 2463) % 494 >= 487 || (i / 2463) % 212 >= 195;
    assert_eq!(data.len(), 2463 * 2527);
    for (i, &v) in data.iter().enumerate() {
        assert_eq!(v == -1, gap(i), "pixel {i}");
    }
    // one module group per module, at its place in the image; the gaps belong to none (the
    // pixel mask is left out: dxtbx 3.12 cannot slice it for modules narrower than the image)
    for (i, j) in [(0, 0), (4, 0), (2, 7), (4, 11)] {
        let m = format!("entry/instrument/detector/module_{:02}", j * 5 + i);
        let origin = f.dataset(&format!("{m}/data_origin")).unwrap();
        assert_eq!(origin.read::<i32>().unwrap(), vec![212 * j, 494 * i]);
        let size = f.dataset(&format!("{m}/data_size")).unwrap();
        assert_eq!(size.read::<i32>().unwrap(), vec![195, 487]);
    }
    assert!(f
        .dataset("entry/instrument/detector/module_60/data_origin")
        .is_err());
    assert!(f.dataset("entry/instrument/detector/pixel_mask").is_err());
    let mat = f
        .dataset("entry/instrument/detector/sensor_material")
        .unwrap();
    assert_eq!(mat.read_string().unwrap(), ["Si"]);
    let t = f
        .dataset("entry/instrument/detector/sensor_thickness")
        .unwrap();
    assert!((t.read_f64().unwrap()[0] - 0.32).abs() < 1e-12);
}

#[test]
fn nexus_bad_input_is_an_error() {
    let dir = scratch("nexus-bad");
    let r = run(&dir, &format!("{BASE} -nexus_images 0 -nexus x.nxs"));
    assert_eq!(r.status, 2, "{}", r.stderr);
    assert!(r.stderr.contains("-nexus_images"), "{}", r.stderr);
    assert!(!dir.join("x.nxs").exists());
    let r = run(&dir, &format!("{BASE} -nexus"));
    assert_eq!(r.status, 2, "{}", r.stderr);
    assert!(r.stderr.contains("-nexus: missing value"), "{}", r.stderr);
}
