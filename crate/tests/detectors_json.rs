//! `www/src/detectors.json` is the web front end's copy of the crate's detector presets
//! (`presets::PRESETS`: name, label, kind, pixels, pixel size): the form's "Detector model"
//! choices and their labels are built from it, not restated in TypeScript. This test fails when
//! the copy is stale; `UPDATE_DETECTORS_JSON=1 cargo test --release --test detectors_json`
//! rewrites it.

use std::path::PathBuf;

fn expected() -> String {
    let mut s = String::from("[\n");
    let n = nanobragg::presets::PRESETS.len();
    for (i, p) in nanobragg::presets::PRESETS.iter().enumerate() {
        let row = serde_json::json!({
            "name": p.name,
            "label": p.label,
            "kind": p.kind,
            "fast_pixels": p.fast_pixels,
            "slow_pixels": p.slow_pixels,
            "pixel_mm": p.pixel_mm,
        });
        s.push_str("  ");
        s.push_str(&serde_json::to_string(&row).unwrap());
        s.push_str(if i + 1 < n { ",\n" } else { "\n" });
    }
    s.push_str("]\n");
    s
}

#[test]
fn www_detectors_json_is_the_preset_table() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../www/src/detectors.json");
    let want = expected();
    if std::env::var_os("UPDATE_DETECTORS_JSON").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "www/src/detectors.json is not the crate's detector presets: run \
         `UPDATE_DETECTORS_JSON=1 cargo test --release --test detectors_json` and commit the file"
    );
}
