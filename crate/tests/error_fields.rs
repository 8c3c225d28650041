//! The crate's error carries where it points as data (flag, file, line, key) besides its message:
//! the contract the wasm and Python faces read (`crate/src/error.rs`).

use nanobragg::api::{prepare, split_args};
use nanobragg::error::{Error, ErrorKind};
use nanobragg::files::MemFiles;

const BASE: &str = "-cell 100 100 100 90 90 90 -N 5 -detpixels 32 -distance 100";

fn err(args: &str, files: &[(&str, &[u8])]) -> Error {
    let mut mem = MemFiles::default();
    for (name, bytes) in files {
        mem.0.insert(name.to_string(), bytes.to_vec());
    }
    match prepare(&split_args(args), &mem) {
        Ok(_) => panic!("{args}: no error"),
        Err(e) => e,
    }
}

fn loc(e: &Error) -> (Option<&str>, Option<&str>, Option<u64>, Option<&str>) {
    (
        e.flag.as_deref(),
        e.file.as_deref(),
        e.line,
        e.key.as_deref(),
    )
}

#[test]
fn flag_errors_name_the_flag() {
    let e = err(&format!("{BASE} -default_F 1 -cel 1 2 3 90 90 90"), &[]);
    assert_eq!(e.kind, ErrorKind::Usage);
    assert_eq!(loc(&e), (Some("-cel"), None, None, None));
    // a bad value names the flag's canonical row
    let e = err(&format!("{BASE} -default_F 1 -lambda x"), &[]);
    assert_eq!(
        (e.kind, e.flag.as_deref()),
        (ErrorKind::Usage, Some("-lambda"))
    );
    assert!(e.message.starts_with("-lambda:"), "{}", e.message);
    // a resolution error names the flag it is about
    let e = err(&format!("{BASE} -default_F 1 -pixel 0"), &[]);
    assert_eq!(e.flag.as_deref(), Some("-pixel"), "{}", e.message);
}

#[test]
fn file_errors_name_flag_file_line_and_key() {
    let e = err(
        &format!("{BASE} -hkl f.hkl"),
        &[("f.hkl", b"1 2 3 4\n1 2 x\n")],
    );
    assert_eq!(e.kind, ErrorKind::Input);
    assert_eq!(loc(&e), (Some("-hkl"), Some("f.hkl"), Some(2), None));
    assert!(e.message.starts_with("f.hkl line 2:"), "{}", e.message);

    let e = err(&format!("{BASE} -default_F 1 -hkl gone.hkl"), &[]);
    assert_eq!(loc(&e), (Some("-hkl"), Some("gone.hkl"), None, None));

    let mut img = b"{\nHEADER_BYTES=512;\nDIM=2;\nSIZE1=32;\nSIZE2=32;\nDISTANCE=far;\n}".to_vec();
    img.resize(512 + 32 * 32 * 2, 0);
    let e = err(
        &format!("{BASE} -default_F 1 -img a.img"),
        &[("a.img", &img)],
    );
    assert_eq!(e.kind, ErrorKind::Input);
    assert_eq!(
        loc(&e),
        (Some("-img"), Some("a.img"), Some(6), Some("DISTANCE"))
    );
}

#[test]
fn serializes_as_the_faces_read_it() {
    let e = err(&format!("{BASE} -hkl f.hkl"), &[("f.hkl", b"1 2 x 4\n")]);
    let v = serde_json::to_value(&e).unwrap();
    assert_eq!(v["kind"], "input");
    assert_eq!(v["flag"], "-hkl");
    assert_eq!(v["file"], "f.hkl");
    assert_eq!(v["line"], 1);
    assert!(v["key"].is_null() && v["field"].is_null());
    assert_eq!(v["message"], e.message.as_str());
}
