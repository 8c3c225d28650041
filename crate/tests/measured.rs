//! Measured images read by the crate (`io::measured::read_measured`, the page's reader) hold
//! exactly the pixels h5py (+ hdf5plugin's bitshuffle and LZ4 filters) and fabio read from the
//! same files, and the geometry their headers state. The files are made by
//! `scripts/make_measured.py` with those programs (installed into `target/pyvenv` by
//! `scripts/setup.sh`; `NANOBRAGG_PYTHON` names another interpreter that has them).

mod common;
use common::{repo_root, scratch};
use nanobragg::io::measured::read_measured;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn python() -> PathBuf {
    std::env::var_os("NANOBRAGG_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/pyvenv/bin/python"))
}

/// Makes the test files (once per test binary run, in its own scratch folder).
fn make(dir: &std::path::Path) -> Vec<Value> {
    let py = python();
    let out = Command::new(&py)
        .arg(repo_root().join("scripts/make_measured.py"))
        .arg(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}): run scripts/setup.sh python (h5py, hdf5plugin, fabio)",
                py.display()
            )
        });
    assert!(
        out.status.success(),
        "make_measured.py failed (needs h5py, hdf5plugin, fabio: scripts/setup.sh python):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = std::fs::read(dir.join("manifest.json")).unwrap();
    serde_json::from_slice::<Value>(&m)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn every_format_decodes_as_h5py_and_fabio_read_it() {
    let dir = scratch("measured");
    let cases = make(&dir);
    assert_eq!(cases.len(), 8);
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let files: Vec<(String, Vec<u8>)> = case["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let f = f.as_str().unwrap();
                (f.to_string(), std::fs::read(dir.join(f)).unwrap())
            })
            .collect();
        let others: Vec<(&str, &[u8])> = files[1..]
            .iter()
            .map(|(n, b)| (n.as_str(), b.as_slice()))
            .collect();
        let img = read_measured(&files[0].0, &files[0].1, &others)
            .unwrap_or_else(|e| panic!("{name}: {}", e.message));
        let shape = case["shape"].as_array().unwrap();
        assert_eq!(
            (img.height as u64, img.width as u64),
            (shape[0].as_u64().unwrap(), shape[1].as_u64().unwrap()),
            "{name}"
        );
        assert_eq!(
            img.pixels.dtype(),
            case["dtype"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(
            img.frames as u64,
            case["frames"].as_u64().unwrap(),
            "{name}"
        );
        let want = std::fs::read(dir.join(format!("{name}.expect"))).unwrap();
        let got = img.pixels.le_bytes();
        assert_eq!(got.len(), want.len(), "{name}");
        if got != want {
            let at = got.iter().zip(&want).position(|(a, b)| a != b).unwrap();
            panic!("{name}: pixels differ from byte {at} on");
        }
        let g = &case["geometry"];
        let num = |k: &str| g.get(k).and_then(Value::as_f64);
        let close = |a: Option<f64>, b: Option<f64>, what: &str| match (a, b) {
            (Some(a), Some(b)) => assert!(
                (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                "{name} {what}: {a} vs {b}"
            ),
            (a, b) => assert_eq!(a.is_some(), b.is_some(), "{name} {what}: {a:?} vs {b:?}"),
        };
        let m = &img.geometry;
        close(m.pixel_mm, num("pixel_mm"), "pixel");
        close(m.distance_mm, num("distance_mm"), "distance");
        close(m.wavelength_a, num("wavelength_a"), "wavelength");
        close(m.phi_deg, num("phi_deg"), "phi");
        close(m.osc_deg, num("osc_deg"), "osc");
        let bp = g.get("beam_px").and_then(Value::as_array);
        close(
            m.beam_px.map(|b| b.0),
            bp.map(|b| b[0].as_f64().unwrap()),
            "beam x",
        );
        close(
            m.beam_px.map(|b| b.1),
            bp.map(|b| b[1].as_f64().unwrap()),
            "beam y",
        );
    }
    // what the file did not say is listed; an SMV header gives back its own beam centre
    let img = read_measured("lz4.h5", &std::fs::read(dir.join("lz4.h5")).unwrap(), &[]).unwrap();
    let (_, missing) = img.geometry.words(img.width, img.height);
    assert!(missing.contains(&"wavelength".to_string()), "{missing:?}");
    let img = read_measured(
        "adsc_be.img",
        &std::fs::read(dir.join("adsc_be.img")).unwrap(),
        &[],
    )
    .unwrap();
    let (words, missing) = img.geometry.words(img.width, img.height);
    let get = |f: &str| {
        words
            .iter()
            .find(|(k, _)| k == f)
            .unwrap()
            .1
            .parse::<f64>()
            .unwrap()
    };
    assert!((get("-Xbeam") - 6.05).abs() < 1e-9 && (get("-Ybeam") - 4.95).abs() < 1e-9);
    assert!(missing.is_empty(), "{missing:?}");
}

/// The error of a read that must fail (without printing a whole image when it does not).
fn err<T>(r: nanobragg::error::Result<T>) -> nanobragg::error::Error {
    match r {
        Ok(_) => panic!("the read succeeded"),
        Err(e) => e,
    }
}

#[test]
fn errors_name_the_file_and_what_is_wrong() {
    let dir = scratch("measured_errors");
    make(&dir);
    let master = std::fs::read(dir.join("eiger_master.h5")).unwrap();
    // the data file was not given with the master file
    let e = err(read_measured("eiger_master.h5", &master, &[]));
    assert!(
        e.message.starts_with("eiger_master.h5: /entry/data/data_000001 links to the data file eiger_data_000001.h5, which was not given"),
        "{}",
        e.message
    );
    // a damaged data file: its chunk cut short
    let mut data = std::fs::read(dir.join("eiger_data_000001.h5")).unwrap();
    data.truncate(20000);
    let e = err(read_measured(
        "eiger_master.h5",
        &master,
        &[("eiger_data_000001.h5", &data)],
    ));
    assert!(
        e.message.starts_with("eiger_data_000001.h5: "),
        "{}",
        e.message
    );
    // a truncated SMV and a CBF cut inside its data
    let smv = std::fs::read(dir.join("adsc_be.img")).unwrap();
    let e = err(read_measured("a.img", &smv[..1000], &[]));
    assert!(
        e.message.starts_with("a.img: truncated SMV image"),
        "{}",
        e.message
    );
    let cbf = std::fs::read(dir.join("fabio.cbf")).unwrap();
    let e = err(read_measured("f.cbf", &cbf[..cbf.len() / 2], &[]));
    assert!(e.message.starts_with("f.cbf: "), "{}", e.message);
    assert_eq!(e.file.as_deref(), Some("f.cbf"));
}

/// The crafted files of issue 29 (`fuzz/regressions/measured/`, made with h5py/hdf5plugin, the
/// chunk headers then patched): each refused with an error naming the file and what is wrong,
/// before any buffer of the declared size is allocated.
#[test]
fn crafted_files_are_refused_naming_file_and_key() {
    let dir = repo_root().join("fuzz/regressions/measured");
    let cbf = |f: &str| format!("../cbf/{f}");
    for (file, want) in [
        (
            cbf("wavelength-1e999"),
            "Wavelength: inf Å is out of range",
        ),
        (
            cbf("distance-negative"),
            "Detector_distance: -200 mm is out of range",
        ),
        (cbf("pixel-0"), "Pixel_size: 0 mm is out of range"),
        (
            cbf("dims-16384-squared-1k"),
            "X-Binary-Number-of-Elements: 268435456 pixels cannot be held",
        ),
    ]
    .iter()
    .map(|(f, w)| (f.as_str(), *w))
    .chain([
        (
            "gzip-30000-squared-unwritten",
            "the image data set: frames of 30000x30000 pixels, more than this build reads",
        ),
        (
            "omega-nan",
            "entry/sample/goniometer/omega: NaN° is out of range",
        ),
        (
            "pixel-0",
            "entry/instrument/detector/x_pixel_size: 0 mm is out of range",
        ),
        (
            "distance-negative",
            "entry/instrument/detector/detector_distance: -200 mm is out of range",
        ),
        (
            "wavelength-0",
            "entry/instrument/beam/incident_wavelength: 0 Å is out of range",
        ),
        (
            "bslz4-total-2e40",
            "the bitshuffle header says 1099511627776 bytes, the chunk's shape holds 280",
        ),
        ("bslz4-total-2e63", "says 9223372036854775808 bytes"),
        (
            "lz4-total-2e40",
            "the LZ4 header says 1099511627776 bytes, the chunk's shape holds 280",
        ),
        (
            "btree-offset-beyond-width-bslz4",
            "a chunk at [0, 4, 64000]: bad coordinate offset for data of shape [1, 10, 14] in chunks of [1, 4, 8]",
        ),
    ])
    {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let Err(e) = read_measured(file, &bytes, &[]) else {
            panic!("{file} was read");
        };
        assert_eq!(e.file.as_deref(), Some(file), "{}", e.message);
        assert!(
            e.message.starts_with(&format!("{file}: ")) && e.message.contains(want),
            "{file}: {}",
            e.message
        );
    }
    // the same offset in a gzip file (read by hdf5-pure): refused, not a panic
    let b = std::fs::read(dir.join("btree-offset-beyond-width-gzip")).unwrap();
    let e = err(read_measured("g.h5", &b, &[]));
    assert!(e.message.starts_with("g.h5: "), "{}", e.message);
    // a block size of 0xFFFFFFF0 bytes is one block as large as the chunk: the same pixels
    let read = |f: &str| {
        let b = std::fs::read(dir.join(f)).unwrap();
        read_measured(f, &b, &[]).unwrap().pixels
    };
    let want: Vec<u16> = (0..140).map(|i| i % 7).collect();
    assert_eq!(
        read("bslz4-block-fffffff0"),
        nanobragg::io::measured::Pixels::U16(want)
    );
}
