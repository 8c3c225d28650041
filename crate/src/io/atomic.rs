//! Atomic file output: write a temporary file next to the target, then rename it over the target,
//! so that a failed or interrupted write never leaves a half-written file behind.

use crate::error::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Process id for unique temporary names (`std::process::id` panics on bare wasm).
fn pid() -> u32 {
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    {
        0
    }
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    {
        std::process::id()
    }
}

fn temp_path(path: &Path) -> PathBuf {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let base = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".to_string());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{base}.{}.{n}.tmp", pid()))
}

/// Writes `bytes` to `path` atomically (temporary file in the same directory, then rename).
/// On failure the temporary file is removed and an output error naming `path` is returned.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_parts(path, &[bytes])
}

/// Like `write_atomic`, for a file made of several pieces (no copy into one buffer).
pub fn write_atomic_parts(path: &Path, parts: &[&[u8]]) -> Result<()> {
    let tmp = temp_path(path);
    let result = (|| -> std::io::Result<()> {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        for part in parts {
            w.write_all(part)?;
        }
        w.into_inner().map_err(|e| e.into_error())?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::output(format!("cannot write file '{}': {e}", path.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn scratch_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("nanobragg_atomic_{tag}_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn writes_and_replaces() {
        let d = scratch_dir("ok");
        let p = d.join("out.bin");
        write_atomic(&p, b"first").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"first");
        write_atomic(&p, b"second, longer").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second, longer");
        // Only the target remains in the directory.
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.bin")]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn failure_names_the_path_and_leaves_nothing() {
        let d = scratch_dir("fail");
        let missing = d.join("no_such_dir").join("x.img");
        let e = write_atomic(&missing, b"data").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Output);
        assert!(e.message.contains("x.img"), "{}", e.message);
        // Target is a directory: rename fails, the temporary file is cleaned up.
        let target = d.join("adir");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep"), b"k").unwrap();
        let e = write_atomic(&target, b"data").unwrap_err();
        assert!(e.message.contains("adir"), "{}", e.message);
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("adir")]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
