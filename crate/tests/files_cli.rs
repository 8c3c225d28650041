//! Bounded inputs and safe outputs, through the CLI (issue 10 items 4 and 5): devices and
//! oversized HKL boxes are refused with a clear error, two outputs may not share a file, devices
//! and FIFOs are written in place, symlinks are followed, and no temporary file outlives a run.

mod common;
use common::*;
use std::path::Path;

const BASE: &str =
    "-cell 100 100 100 90 90 90 -default_F 100 -N 5 -detpixels 16 -distance 100 -nonoise -nopgm";

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn assert_fails(r: &Run, status: i32, needle: &str) {
    assert_eq!(r.status, status, "exit status; stderr:\n{}", r.stderr);
    assert!(
        r.stderr.contains(needle),
        "stderr should contain {needle:?}:\n{}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
}

#[cfg(unix)]
#[test]
fn devices_are_refused_as_input_files() {
    let dir = scratch("files-devices");
    let r = run_cli(
        &dir,
        &words("-cell 100 100 100 90 90 90 -hkl /dev/zero -N 5 -detpixels 16"),
    );
    assert_fails(
        &r,
        1,
        "error: -hkl: cannot read file '/dev/zero': it is a character device, not a regular file",
    );
    let r = run_cli(&dir, &words(&format!("{BASE} -img /dev/urandom")));
    assert_fails(
        &r,
        1,
        "error: -img: cannot read file '/dev/urandom': it is a character device, not a regular file",
    );
    let r = run_cli(&dir, &words(&format!("{BASE} -mat /")));
    assert_fails(
        &r,
        1,
        "error: -mat: cannot read file '/': it is a directory",
    );
    assert!(names(&dir).is_empty(), "{:?}", names(&dir));
}

#[test]
fn a_small_hkl_file_spanning_a_huge_box_is_refused() {
    let dir = scratch("files-far-hkl");
    std::fs::write(dir.join("far.hkl"), "-300 -300 -300 1\n300 300 300 1\n").unwrap();
    let r = run_cli(
        &dir,
        &words("-cell 100 100 100 90 90 90 -hkl far.hkl -N 5 -detpixels 16"),
    );
    assert_fails(&r, 1, "far.hkl: Miller indices span h -300..300");
    assert!(r.stderr.contains("more than the limit of 67108864"));
    // No Fdump.bin of 1.7 GB, no image.
    assert_eq!(names(&dir), ["far.hkl"]);
}

#[test]
fn two_outputs_may_not_share_a_file() {
    let dir = scratch("files-dup");
    let r = run_cli(&dir, &words(&format!("{BASE} -floatfile X -intfile X")));
    assert_fails(
        &r,
        2,
        "-floatfile and -intfile write the same file ('X'): give each output its own file",
    );
    let r = run_cli(&dir, &words(&format!("{BASE} -predict P -intfile ./P")));
    assert_fails(
        &r,
        2,
        "-intfile and -predict write the same file ('./P' and 'P')",
    );
    // Spelt differently, and the structure-factor cache too.
    std::fs::create_dir(dir.join("d")).unwrap();
    std::fs::write(dir.join("x.hkl"), "0 0 0 10\n1 1 1 20\n").unwrap();
    let r = run_cli(
        &dir,
        &words("-cell 100 100 100 90 90 90 -hkl x.hkl -N 5 -detpixels 16 -nonoise -nopgm -floatfile d/../Fdump.bin"),
    );
    assert_fails(
        &r,
        2,
        "-floatfile and -dump (structure-factor cache) write the same file",
    );
    assert_eq!(names(&dir), ["d", "x.hkl"]);
}

#[cfg(unix)]
#[test]
fn devices_are_written_in_place_and_may_be_shared() {
    use std::os::unix::fs::FileTypeExt;
    let dir = scratch("files-devnull");
    let r = run_cli(
        &dir,
        &words(&format!(
            "{BASE} -floatfile /dev/null -intfile /dev/null -noisefile /dev/null"
        )),
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    assert!(names(&dir).is_empty(), "{:?}", names(&dir));
}

#[cfg(unix)]
#[test]
fn a_fifo_without_reader_is_an_error_and_leaves_no_temporary_file() {
    let dir = scratch("files-fifo");
    let fifo = dir.join("pipe.img");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let r = run_cli(
        &dir,
        &words(&format!("{BASE} -floatfile f.bin -intfile pipe.img")),
    );
    assert_fails(
        &r,
        1,
        "cannot write file 'pipe.img': it is a FIFO and nothing is reading from it",
    );
    // The float image was written before; nothing else is left.
    assert_eq!(names(&dir), ["f.bin", "pipe.img"]);
    assert_eq!(
        std::fs::metadata(dir.join("f.bin")).unwrap().len(),
        16 * 16 * 4
    );
}

#[cfg(unix)]
#[test]
fn symlinked_outputs_stay_links_and_stale_temporaries_are_removed() {
    let dir = scratch("files-link");
    std::fs::create_dir(dir.join("real")).unwrap();
    std::fs::write(dir.join("real/f.bin"), b"old").unwrap();
    std::os::unix::fs::symlink("real/f.bin", dir.join("f.bin")).unwrap();
    // What a run killed with SIGKILL while writing real/f.bin leaves behind (a process id above
    // the kernel's maximum cannot be running).
    let stale = ".f.bin.nanobragg-4194321-0.tmp";
    std::fs::write(dir.join("real").join(stale), b"partial").unwrap();
    let r = run_cli(
        &dir,
        &words(&format!("{BASE} -floatfile f.bin -intfile i.img")),
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(std::fs::symlink_metadata(dir.join("f.bin"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::metadata(dir.join("real/f.bin")).unwrap().len(),
        16 * 16 * 4
    );
    assert_eq!(names(&dir.join("real")), ["f.bin"]);
    assert_eq!(names(&dir), ["f.bin", "i.img", "real"]);
}
