//! Where input files come from: the disk for the CLI, a name -> bytes map in the browser.
//!
//! Every read names the kind of file it expects ([`FileKind`]). The kind sets an upper bound on
//! the file's size, so that a wrong argument (`-hkl /dev/zero`, `-img` of a multi-gigabyte file)
//! is a clear error instead of a read that exhausts memory; on disk, anything but a regular file
//! (a device, a FIFO, a directory) is refused before it is opened for reading.
//!
//! Adding a kind of input file (a new flag that reads a file) is one variant here with its
//! limit and its description, and a `files.read(name, FileKind::New)` at the reading site.

use crate::error::{Error, Result};
use std::collections::HashMap;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// The kinds of input file, each with its size limit (see [`FileKind::max_bytes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// `-hkl`: `h k l F` text.
    Hkl,
    /// `Fdump.bin`: the binary structure-factor cache (six integers, then the padded table).
    Fdump,
    /// `-mat`: a MOSFLM orientation matrix (a few lines of text).
    Matrix,
    /// `-sourcefile`: one source per line.
    Sources,
    /// `-img` / `-mask`: an SMV image (header and 16-bit pixels).
    Image,
    /// An atomic model (PDB or mmCIF coordinates).
    Model,
    /// `-stol` / `-4stol` / `-Q`: a structure factor vs. sin(θ)/λ table.
    Stol,
    /// A raw float image (noisify's `-floatfile`): little-endian f32 pixels, no header.
    FloatImage,
    /// `-expt`: a DIALS experiment list (JSON).
    Experiment,
    /// `-geom`: a CrystFEL geometry file (text).
    Geometry,
}

impl FileKind {
    /// Largest accepted file of this kind, in bytes. The figures are generous for real data and
    /// small enough that reading the file (and what is built from it) fits in memory:
    ///
    /// | kind | limit | why |
    /// |---|---|---|
    /// | HKL text | 1 GiB | ≈ 40 million reflections at 25 bytes a line |
    /// | Fdump.bin | 512 MiB + 64 bytes | the header and a table at [`crate::io::hkl::MAX_TABLE`] values |
    /// | matrix | 64 KiB | nine numbers and MOSFLM's trailing lines |
    /// | sources | 64 MiB | a million sources |
    /// | SMV image | 1 GiB | a 16384 x 16384 detector of 16-bit pixels (512 MiB), and any header |
    /// | model | 512 MiB | the largest mmCIF entries are a few hundred MB |
    /// | stol table | 16 MiB | tables have a few hundred lines |
    /// | float image | 1 GiB | a 16384 x 16384 detector of f32 pixels |
    /// | DIALS experiment list | 64 MiB | per-image scan arrays of long sweeps, many experiments |
    /// | CrystFEL geometry | 16 MiB | AGIPD/JUNGFRAU files of hundreds of panels are ~100 KB |
    pub const fn max_bytes(self) -> u64 {
        match self {
            FileKind::Hkl => 1024 * MIB,
            FileKind::Fdump => 8 * crate::io::hkl::MAX_TABLE as u64 + 64,
            FileKind::Matrix => 64 * KIB,
            FileKind::Sources => 64 * MIB,
            FileKind::Image => 1024 * MIB,
            FileKind::Model => 512 * MIB,
            FileKind::Stol => 16 * MIB,
            FileKind::FloatImage => 1024 * MIB,
            FileKind::Experiment => 64 * MIB,
            FileKind::Geometry => 16 * MIB,
        }
    }

    /// What files of this kind are, for error messages (plural).
    pub const fn what(self) -> &'static str {
        match self {
            FileKind::Hkl => "structure-factor (HKL) files",
            FileKind::Fdump => "structure-factor dumps",
            FileKind::Matrix => "orientation matrix files",
            FileKind::Sources => "source files",
            FileKind::Image => "SMV images",
            FileKind::Model => "atomic model files",
            FileKind::Stol => "structure factor vs. sin(theta)/lambda tables",
            FileKind::FloatImage => "float images",
            FileKind::Experiment => "DIALS experiment lists",
            FileKind::Geometry => "CrystFEL geometry files",
        }
    }

    /// A file over the kind's size limit: a limit of the build's (`ErrorKind::Limit`).
    pub(crate) fn too_large(self, name: &str, size: u64) -> Error {
        crate::limits::over(format!(
            "cannot read file '{name}': {size} bytes, more than the {}-byte limit for {}",
            self.max_bytes(),
            self.what()
        ))
    }
}

pub trait FileSource {
    /// Read a whole file of the given kind. The error message names the file; a file larger
    /// than the kind's limit is a limit error, one (on disk) that is not a regular file an
    /// input error.
    fn read(&self, name: &str, kind: FileKind) -> Result<Vec<u8>>;
    /// True when the file exists (used for upstream's silent `Fdump.bin` lookup).
    fn exists(&self, name: &str) -> bool;
}

/// Files on disk, relative to the current directory.
pub struct DiskFiles;

/// The kind of a non-regular file, for the refusal message.
fn file_type_name(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// Reads a regular file of at most `kind.max_bytes()` bytes (checked before the read, and again
/// while reading, for files that grow or report no size).
fn read_regular(name: &str, kind: FileKind) -> std::result::Result<Vec<u8>, Error> {
    use std::io::Read;
    let io_err = |e: std::io::Error| Error::input(format!("cannot read file '{name}': {e}"));
    let refuse = |t: std::fs::FileType| {
        Error::input(format!(
            "cannot read file '{name}': it is {}, not a regular file",
            file_type_name(t)
        ))
    };
    // Look before opening: opening a FIFO for reading blocks until a writer appears.
    let meta = std::fs::metadata(name).map_err(io_err)?;
    if !meta.is_file() {
        return Err(refuse(meta.file_type()));
    }
    let file = std::fs::File::open(name).map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if !meta.is_file() {
        return Err(refuse(meta.file_type()));
    }
    let limit = kind.max_bytes();
    if meta.len() > limit {
        return Err(kind.too_large(name, meta.len()));
    }
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(meta.len() as usize)
        .map_err(|_| Error::input(format!("cannot read file '{name}': not enough memory")))?;
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err)?;
    if bytes.len() as u64 > limit {
        return Err(kind.too_large(name, bytes.len() as u64));
    }
    Ok(bytes)
}

impl FileSource for DiskFiles {
    fn read(&self, name: &str, kind: FileKind) -> Result<Vec<u8>> {
        read_regular(name, kind).map_err(|e| e.at_file(name))
    }
    fn exists(&self, name: &str) -> bool {
        std::path::Path::new(name).is_file()
    }
}

/// Files held in memory (browser uploads, tests).
#[derive(Default, Clone)]
pub struct MemFiles(pub HashMap<String, Vec<u8>>);

impl FileSource for MemFiles {
    fn read(&self, name: &str, kind: FileKind) -> Result<Vec<u8>> {
        let bytes = self.0.get(name).ok_or_else(|| {
            Error::input(format!(
                "cannot read file '{name}': no such file was provided"
            ))
            .at_file(name)
        })?;
        if bytes.len() as u64 > kind.max_bytes() {
            return Err(kind.too_large(name, bytes.len() as u64).at_file(name));
        }
        Ok(bytes.clone())
    }
    fn exists(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn limits_are_ordered_sensibly() {
        assert!(FileKind::Matrix.max_bytes() < FileKind::Stol.max_bytes());
        assert!(FileKind::Sources.max_bytes() < FileKind::Hkl.max_bytes());
        assert_eq!(FileKind::Fdump.max_bytes(), (512 << 20) + 64);
    }

    #[test]
    fn memory_files_respect_the_limit() {
        let mut m = MemFiles::default();
        m.0.insert("A.mat".into(), vec![b' '; 64 * 1024 + 1]);
        m.0.insert("ok.mat".into(), b"1 0 0 0 1 0 0 0 1".to_vec());
        let e = m.read("A.mat", FileKind::Matrix).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Limit);
        assert_eq!(
            e.message,
            "cannot read file 'A.mat': 65537 bytes, more than the 65536-byte limit for orientation matrix files"
        );
        assert_eq!(
            m.read("ok.mat", FileKind::Matrix).unwrap(),
            b"1 0 0 0 1 0 0 0 1"
        );
        let e = m.read("nope", FileKind::Hkl).unwrap_err();
        assert!(
            e.message.contains("no such file was provided"),
            "{}",
            e.message
        );
    }

    #[cfg(unix)]
    #[test]
    fn devices_fifos_and_directories_are_refused_before_reading() {
        for (path, what) in [
            ("/dev/zero", "a character device"),
            ("/dev/urandom", "a character device"),
            ("/", "a directory"),
        ] {
            if !std::path::Path::new(path).exists() {
                continue;
            }
            let e = DiskFiles.read(path, FileKind::Hkl).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Input);
            assert_eq!(
                e.message,
                format!("cannot read file '{path}': it is {what}, not a regular file")
            );
        }
        // A FIFO with no writer: refused at once instead of blocking.
        let dir = std::env::temp_dir().join(format!("nanobragg_files_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("pipe.hkl");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = DiskFiles
            .read(fifo.to_str().unwrap(), FileKind::Hkl)
            .unwrap_err();
        assert!(
            e.message.ends_with("it is a FIFO, not a regular file"),
            "{}",
            e.message
        );
        // A symlink to a device is judged by its target.
        let link = dir.join("zero.hkl");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let e = DiskFiles
            .read(link.to_str().unwrap(), FileKind::Hkl)
            .unwrap_err();
        assert!(e.message.contains("a character device"), "{}", e.message);
        // Too large a regular file.
        let big = dir.join("big.mat");
        std::fs::write(&big, vec![b'1'; 70_000]).unwrap();
        let e = DiskFiles
            .read(big.to_str().unwrap(), FileKind::Matrix)
            .unwrap_err();
        assert!(
            e.message
                .contains("70000 bytes, more than the 65536-byte limit"),
            "{}",
            e.message
        );
        std::fs::write(&big, b"1 2 3").unwrap();
        assert_eq!(
            DiskFiles
                .read(big.to_str().unwrap(), FileKind::Matrix)
                .unwrap(),
            b"1 2 3"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn files_that_report_no_size_are_still_read() {
        // /proc files are regular files that report size 0 and still have content: they are
        // read (to the limit), not taken as empty.
        let maps = DiskFiles.read("/proc/self/maps", FileKind::Hkl).unwrap();
        assert!(!maps.is_empty());
    }
}
