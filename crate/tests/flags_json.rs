//! `www/src/flags.json` is the web front end's copy of the flag table (`api::flag_table`, from
//! `args::FLAGS`): the output-file flags the page drops and the flags whose values count pixels
//! (no reduced-resolution preview) are read from it, not restated in TypeScript. This test fails
//! when the copy is stale; `UPDATE_FLAGS_JSON=1 cargo test --release --test flags_json` rewrites it.

use std::path::PathBuf;

fn expected() -> String {
    let rows: Vec<serde_json::Value> = nanobragg::api::flag_table()
        .iter()
        .map(|f| {
            let v = serde_json::to_value(f).unwrap();
            serde_json::json!({
                "name": v["name"],
                "aliases": v["aliases"],
                "kind": v["kind"],
                "pixel_units": v["pixel_units"],
            })
        })
        .collect();
    let mut s = String::from("[\n");
    for (i, r) in rows.iter().enumerate() {
        s.push_str("  ");
        s.push_str(&serde_json::to_string(r).unwrap());
        s.push_str(if i + 1 < rows.len() { ",\n" } else { "\n" });
    }
    s.push_str("]\n");
    s
}

#[test]
fn www_flags_json_is_the_flag_table() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../www/src/flags.json");
    let want = expected();
    if std::env::var_os("UPDATE_FLAGS_JSON").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "www/src/flags.json is not the crate's flag table: run \
         `UPDATE_FLAGS_JSON=1 cargo test --release --test flags_json` and commit the file"
    );
}
