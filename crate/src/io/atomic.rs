//! Output files, written safely.
//!
//! * A regular file (or a name that does not exist yet) is replaced atomically: the bytes go to a
//!   temporary file in the same directory, which is then renamed over the target, so a failed or
//!   interrupted run never leaves a half-written output. On Linux the temporary file is unnamed
//!   while it is written (`O_TMPFILE`) and gets a name only for the instant before the rename; a
//!   `kill -9` during the write leaves nothing behind. Elsewhere (and where the file system has no
//!   `O_TMPFILE`) it is named `.<name>.nanobragg-<pid>-<n>.tmp`: every exit this program controls
//!   (errors, panics) removes it, and a later write of the same output removes the ones whose
//!   process is gone (a `kill -9`). A replaced file keeps its permission bits.
//! * A symbolic link is followed to its target, as editors do: the target is replaced and the
//!   link stays a link.
//! * An existing character device or FIFO (`/dev/null`, `/dev/stdout`, a named pipe) is written
//!   directly, never replaced; a FIFO without a reader is an error instead of a hang. Anything
//!   else that is not a regular file (a directory, a block device, a socket) is refused.
//! * [`check_outputs`] runs before the render: two outputs naming the same file are refused, as
//!   are outputs whose directory does not exist or that name a directory.

use crate::error::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Marker in the names of our temporary files: `.<name>.nanobragg-<pid>-<n>.tmp`.
const TEMP_TAG: &str = ".nanobragg-";
const TEMP_SUFFIX: &str = ".tmp";
/// Longest part of the target's name kept in a temporary name (names are limited to 255 bytes).
const TEMP_BASE_MAX: usize = 160;

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

fn output_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::output(format!("cannot write file '{}': {e}", path.display()))
}

/// Follows symbolic links (relative ones from the link's directory) to the path that is really
/// written; a path that is not a link is returned as it is.
fn follow_links(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p).map_err(|e| output_error(path, e))?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(output_error(path, "too many levels of symbolic links"))
}

/// The directory of `path` ("." for a bare name) and its file name.
fn split(path: &Path) -> Result<(PathBuf, String)> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let base = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| output_error(path, "not a file name"))?;
    Ok((dir, base))
}

/// The prefix of our temporary files for an output named `base`.
fn temp_prefix(base: &str) -> String {
    let mut end = base.len().min(TEMP_BASE_MAX);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    format!(".{}{TEMP_TAG}", &base[..end])
}

fn temp_name(base: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{}{}-{n}{TEMP_SUFFIX}", temp_prefix(base), pid())
}

/// True when process `pid` may still be running (it exists, or we may not signal it).
fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(p) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks whether the process exists; nothing is sent.
        let r = unsafe { libc::kill(p, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Removes the temporary files a killed earlier run left for the output `base` in `dir`: names
/// `.<base>.nanobragg-<pid>-<n>.tmp` whose process no longer exists.
fn remove_stale_temporaries(dir: &Path, base: &str) {
    let prefix = temp_prefix(base);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let Some(rest) = name
            .strip_prefix(prefix.as_str())
            .and_then(|r| r.strip_suffix(TEMP_SUFFIX))
        else {
            continue;
        };
        let Some((p, n)) = rest.split_once('-') else {
            continue;
        };
        let (Ok(p), true) = (p.parse::<u32>(), n.bytes().all(|b| b.is_ascii_digit())) else {
            continue;
        };
        if p != pid() && !process_alive(p) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Removes a named temporary file unless the write was committed (errors and panics alike).
struct TempGuard(Option<PathBuf>);

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Gives a new temporary file its blocks before the data is written (Linux `fallocate`; where
/// the file system has none, nothing). Then no block of it waits for delayed allocation, and
/// renaming it over an existing file is a rename: ext4 (`auto_da_alloc`) otherwise allocates
/// and starts writing out a replacing file's delayed blocks inside `rename`, 5–20 ms for the
/// 4 MiB float image of a 1024² run (issue 21 §8; docs/benchmarks.md).
fn reserve(f: &std::fs::File, parts: &[&[u8]]) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > 0 {
            // SAFETY: fallocate on a descriptor we own; a failure (EOPNOTSUPP, ENOSPC) leaves
            // the file as it was, and the writes that follow report any real error.
            unsafe {
                libc::fallocate(f.as_raw_fd(), 0, 0, len as libc::off_t);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (f, parts);
}

fn write_parts(f: std::fs::File, parts: &[&[u8]]) -> std::io::Result<std::fs::File> {
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    for part in parts {
        w.write_all(part)?;
    }
    w.into_inner().map_err(|e| e.into_error())
}

/// Linux: write into an unnamed file in `dir`, then give it a temporary name and rename that
/// over `target`. `Ok(false)` when unnamed files are not available here (the caller falls back).
#[cfg(target_os = "linux")]
fn replace_via_unnamed(
    dir: &Path,
    base: &str,
    target: &Path,
    parts: &[&[u8]],
    mode: Option<u32>,
) -> std::io::Result<bool> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    use std::os::unix::io::AsRawFd;
    let f = match std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o666)
        .open(dir)
    {
        Ok(f) => f,
        // EOPNOTSUPP: the file system has none; EISDIR/EINVAL: the kernel is too old.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL)
            ) =>
        {
            return Ok(false)
        }
        Err(e) => return Err(e),
    };
    reserve(&f, parts);
    let f = write_parts(f, parts)?;
    // Without `mode` (a new file) the umask applies, as with O_CREAT.
    if let Some(m) = mode {
        f.set_permissions(std::fs::Permissions::from_mode(m))?;
    }
    let tmp = dir.join(temp_name(base));
    let c_tmp = CString::new(tmp.as_os_str().as_bytes())?;
    let proc_fd = CString::new(format!("/proc/self/fd/{}", f.as_raw_fd()))?;
    // SAFETY: both paths are valid NUL-terminated strings; the descriptor is open.
    let linked = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            proc_fd.as_ptr(),
            libc::AT_FDCWD,
            c_tmp.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        ) == 0
            || libc::linkat(
                f.as_raw_fd(),
                c"".as_ptr(),
                libc::AT_FDCWD,
                c_tmp.as_ptr(),
                libc::AT_EMPTY_PATH,
            ) == 0
    };
    if !linked {
        // No /proc and no CAP_DAC_READ_SEARCH: the unnamed file cannot be linked.
        return Ok(false);
    }
    let mut guard = TempGuard(Some(tmp.clone()));
    std::fs::rename(&tmp, target)?;
    guard.0 = None;
    Ok(true)
}

/// Writes a named temporary file in `dir` and renames it over `target`.
fn replace_via_named(
    dir: &Path,
    base: &str,
    target: &Path,
    parts: &[&[u8]],
    mode: Option<u32>,
) -> std::io::Result<()> {
    let tmp = dir.join(temp_name(base));
    let mut guard = TempGuard(None);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)?;
    guard.0 = Some(tmp.clone());
    reserve(&f, parts);
    {
        let f = write_parts(f, parts)?;
        #[cfg(unix)]
        if let Some(m) = mode {
            use std::os::unix::fs::PermissionsExt;
            f.set_permissions(std::fs::Permissions::from_mode(m))?;
        }
        #[cfg(not(unix))]
        let _ = (f, mode);
    } // closed before the rename
    std::fs::rename(&tmp, target)?;
    guard.0 = None;
    Ok(())
}

/// Writes straight into an existing character device or FIFO.
#[cfg(unix)]
fn write_in_place(path: &Path, target: &Path, parts: &[&[u8]], fifo: bool) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true);
    if fifo {
        // Without a reader, opening a FIFO for writing blocks forever: ask for ENXIO instead.
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let f = opts.open(target).map_err(|e| {
        if fifo && e.raw_os_error() == Some(libc::ENXIO) {
            output_error(path, "it is a FIFO and nothing is reading from it")
        } else {
            output_error(path, e)
        }
    })?;
    if fifo {
        // Back to blocking writes, so that a slow reader is waited for.
        // SAFETY: plain fcntl calls on a descriptor we own.
        unsafe {
            let fd = f.as_raw_fd();
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }
    write_parts(f, parts).map_err(|e| output_error(path, e))?;
    Ok(())
}

/// What is at an output path (after following links), as far as writing it is concerned.
enum Existing {
    Nothing,
    Regular(std::fs::Metadata),
    /// Character device or FIFO: written in place.
    #[cfg_attr(not(unix), allow(dead_code))]
    Stream {
        fifo: bool,
    },
    /// Refused: the description says what it is.
    Refused(&'static str),
}

fn existing(target: &Path) -> std::io::Result<Existing> {
    let m = match std::fs::metadata(target) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::Nothing),
        Err(e) => return Err(e),
    };
    let t = m.file_type();
    if t.is_file() {
        return Ok(Existing::Regular(m));
    }
    if t.is_dir() {
        return Ok(Existing::Refused("a directory"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            return Ok(Existing::Stream { fifo: false });
        }
        if t.is_fifo() {
            return Ok(Existing::Stream { fifo: true });
        }
        if t.is_block_device() {
            return Ok(Existing::Refused("a block device"));
        }
        if t.is_socket() {
            return Ok(Existing::Refused("a socket"));
        }
    }
    Ok(Existing::Refused("not a regular file"))
}

/// Writes `bytes` to `path` safely (see the module documentation). On failure nothing is left
/// behind and an output error naming `path` is returned.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_parts(path, &[bytes])
}

/// Like `write_atomic`, for a file made of several pieces (no copy into one buffer).
pub fn write_atomic_parts(path: &Path, parts: &[&[u8]]) -> Result<()> {
    let target = follow_links(path)?;
    let mode = match existing(&target).map_err(|e| output_error(path, e))? {
        Existing::Nothing => None,
        Existing::Regular(m) => permission_bits(&m),
        #[cfg(unix)]
        Existing::Stream { fifo } => return write_in_place(path, &target, parts, fifo),
        #[cfg(not(unix))]
        Existing::Stream { .. } => return Err(output_error(path, "not a regular file")),
        Existing::Refused(what) => {
            return Err(output_error(
                path,
                format!("it is {what} (outputs are regular files, character devices or FIFOs)"),
            ))
        }
    };
    let (dir, base) = split(&target)?;
    remove_stale_temporaries(&dir, &base);
    #[cfg(target_os = "linux")]
    match replace_via_unnamed(&dir, &base, &target, parts, mode) {
        Ok(true) => return Ok(()),
        Ok(false) => {}
        Err(e) => return Err(output_error(path, e)),
    }
    replace_via_named(&dir, &base, &target, parts, mode).map_err(|e| output_error(path, e))
}

#[cfg(unix)]
fn permission_bits(m: &std::fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    Some(m.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn permission_bits(_: &std::fs::Metadata) -> Option<u32> {
    None
}

/// The identity of an output: the canonical path of what is really written (links followed,
/// directory canonicalised), and the file's device and inode when it exists (hard links).
struct Identity {
    path: PathBuf,
    inode: Option<(u64, u64)>,
}

impl Identity {
    fn same(&self, other: &Identity) -> bool {
        self.path == other.path || (self.inode.is_some() && self.inode == other.inode)
    }
}

/// `None` for character devices and FIFOs: several outputs may share `/dev/null`.
fn identity(path: &Path) -> Result<Option<Identity>> {
    let target = follow_links(path)?;
    let inode = match existing(&target).map_err(|e| output_error(path, e))? {
        Existing::Stream { .. } => return Ok(None),
        Existing::Refused(what) => {
            return Err(output_error(
                path,
                format!("it is {what} (outputs are regular files, character devices or FIFOs)"),
            ))
        }
        Existing::Nothing => None,
        Existing::Regular(m) => inode_of(&m),
    };
    let (dir, base) = split(&target)?;
    let dir = std::fs::canonicalize(&dir).map_err(|e| {
        output_error(
            path,
            format!("its directory '{}' is not usable: {e}", dir.display()),
        )
    })?;
    if !dir.is_dir() {
        return Err(output_error(
            path,
            format!("'{}' is not a directory", dir.display()),
        ));
    }
    Ok(Some(Identity {
        path: dir.join(base),
        inode,
    }))
}

#[cfg(unix)]
fn inode_of(m: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn inode_of(_: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// Checks the outputs of a run before it renders: `(flag, path)` pairs, `None` for an output
/// that is not written. Two outputs that are the same file (same path once links are followed
/// and the directory is canonicalised, or hard links of one file) are a usage error naming both
/// flags; an output whose directory does not exist, or that is a directory, block device or
/// socket, is an output error naming the file. Several outputs may share a character device or
/// FIFO (`-intfile /dev/null -noisefile /dev/null`).
pub fn check_outputs(outputs: &[(&str, Option<&str>)]) -> Result<()> {
    let mut seen: Vec<(&str, &str, Identity)> = Vec::new();
    for &(flag, path) in outputs {
        let Some(path) = path else { continue };
        let Some(id) = identity(Path::new(path))? else {
            continue;
        };
        if let Some((other_flag, other_path, _)) = seen.iter().find(|(_, _, o)| o.same(&id)) {
            let same = if *other_path == path {
                format!("'{path}'")
            } else {
                format!("'{other_path}' and '{path}'")
            };
            return Err(Error::usage(format!(
                "{other_flag} and {flag} write the same file ({same}): give each output its own file"
            ))
            .with_flag(flag)
            .at_file(path));
        }
        seen.push((flag, path, id));
    }
    Ok(())
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

    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn writes_and_replaces() {
        let d = scratch_dir("ok");
        let p = d.join("out.bin");
        write_atomic(&p, b"first").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"first");
        write_atomic_parts(&p, &[b"second, ", b"longer"]).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second, longer");
        // Only the target remains in the directory.
        assert_eq!(names(&d), ["out.bin"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn both_ways_of_replacing_leave_only_the_target() {
        let d = scratch_dir("named");
        let p = d.join("x.img");
        replace_via_named(&d, "x.img", &p, &[b"named"], None).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"named");
        #[cfg(target_os = "linux")]
        {
            // true where the file system has O_TMPFILE (ext4, xfs, btrfs, tmpfs); else skipped
            // by the writer itself, which falls back to a named file.
            let unnamed = replace_via_unnamed(&d, "x.img", &p, &[b"unnamed"], None).unwrap();
            let want: &[u8] = if unnamed { b"unnamed" } else { b"named" };
            assert_eq!(std::fs::read(&p).unwrap(), want);
        }
        assert_eq!(names(&d), ["x.img"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn failure_names_the_path_and_leaves_nothing() {
        let d = scratch_dir("fail");
        let missing = d.join("no_such_dir").join("x.img");
        let e = write_atomic(&missing, b"data").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Output);
        assert!(e.message.contains("x.img"), "{}", e.message);
        // Target is a directory: refused, nothing written.
        let target = d.join("adir");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep"), b"k").unwrap();
        let e = write_atomic(&target, b"data").unwrap_err();
        assert!(e.message.contains("adir"), "{}", e.message);
        assert!(e.message.contains("it is a directory"), "{}", e.message);
        assert_eq!(names(&d), ["adir"]);
        assert_eq!(names(&target), ["keep"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_followed_and_kept() {
        let d = scratch_dir("link");
        std::fs::create_dir(d.join("real")).unwrap();
        std::fs::write(d.join("real/target.bin"), b"old").unwrap();
        std::os::unix::fs::symlink("real/target.bin", d.join("link.bin")).unwrap();
        // A chain of two links, the second one absolute.
        std::os::unix::fs::symlink(d.join("link.bin"), d.join("link2.bin")).unwrap();
        write_atomic(&d.join("link2.bin"), b"new").unwrap();
        assert!(std::fs::symlink_metadata(d.join("link.bin"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(std::fs::symlink_metadata(d.join("link2.bin"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(d.join("real/target.bin")).unwrap(), b"new");
        // A dangling link creates its target.
        std::os::unix::fs::symlink("real/fresh.bin", d.join("dangling.bin")).unwrap();
        write_atomic(&d.join("dangling.bin"), b"fresh").unwrap();
        assert_eq!(std::fs::read(d.join("real/fresh.bin")).unwrap(), b"fresh");
        assert_eq!(names(&d.join("real")), ["fresh.bin", "target.bin"]);
        // A loop is an error, not a hang.
        std::os::unix::fs::symlink("loop_b", d.join("loop_a")).unwrap();
        std::os::unix::fs::symlink("loop_a", d.join("loop_b")).unwrap();
        let e = write_atomic(&d.join("loop_a"), b"x").unwrap_err();
        assert!(e.message.contains("symbolic links"), "{}", e.message);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn permissions_of_a_replaced_file_are_kept() {
        use std::os::unix::fs::PermissionsExt;
        let d = scratch_dir("mode");
        let p = d.join("float.bin");
        std::fs::write(&p, b"old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&p, b"new").unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_fifos_are_written_in_place() {
        // /dev/null stays a character device.
        write_atomic(Path::new("/dev/null"), b"discarded").unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        let d = scratch_dir("fifo");
        let fifo = d.join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Nobody reading: an error at once, not a hang.
        let e = write_atomic(&fifo, b"x").unwrap_err();
        assert!(e.message.contains("nothing is reading"), "{}", e.message);
        // With a reader: the bytes arrive through the FIFO, which stays a FIFO.
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        let data = vec![7u8; 300_000]; // more than a pipe buffer
        let mut tries = 0;
        loop {
            match write_atomic(&fifo, &data) {
                Ok(()) => break,
                // the reader thread may not have opened its end yet
                Err(e) if e.message.contains("nothing is reading") && tries < 500 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => panic!("{}", e.message),
            }
        }
        assert_eq!(reader.join().unwrap(), data);
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn stale_temporaries_of_dead_processes_are_removed() {
        let d = scratch_dir("stale");
        // A process id that does not exist: above the kernel's maximum.
        let dead = 4_194_304 + 17;
        let stale = format!(".float.bin.nanobragg-{dead}-0.tmp");
        let alive = format!(".float.bin.nanobragg-{}-0.tmp", std::process::id());
        let other = format!(".other.bin.nanobragg-{dead}-0.tmp");
        let foreign = ".float.bin.something-else.tmp".to_string();
        for n in [&stale, &alive, &other, &foreign] {
            std::fs::write(d.join(n), b"partial").unwrap();
        }
        write_atomic(&d.join("float.bin"), b"ok").unwrap();
        let mut want = vec![foreign, alive, other, "float.bin".to_string()];
        want.sort();
        assert_eq!(names(&d), want);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn temporary_names_are_bounded_and_recognised() {
        let long = "x".repeat(300);
        let t = temp_name(&long);
        assert!(t.len() < 255, "{}", t.len());
        assert!(t.starts_with(&temp_prefix(&long)));
        let t = temp_name("image.img");
        assert!(t.starts_with(".image.img.nanobragg-"), "{t}");
        assert!(t.ends_with(".tmp"), "{t}");
    }

    #[test]
    fn duplicate_outputs_are_refused() {
        let d = scratch_dir("dup");
        let x = d.join("x.bin");
        let x = x.to_str().unwrap();
        let e = check_outputs(&[("-floatfile", Some(x)), ("-intfile", Some(x))]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Usage);
        assert_eq!(
            e.message,
            format!("-floatfile and -intfile write the same file ('{x}'): give each output its own file")
        );
        // The same file spelt differently (./, ..), not yet existing.
        let sub = d.join("sub");
        std::fs::create_dir(&sub).unwrap();
        let a = d.join("sub/../y.img");
        let b = d.join("./y.img");
        let e = check_outputs(&[
            ("-floatfile", Some(d.join("f.bin").to_str().unwrap())),
            ("-intfile", Some(a.to_str().unwrap())),
            ("-pgmfile", None),
            ("-noisefile", Some(b.to_str().unwrap())),
        ])
        .unwrap_err();
        assert!(
            e.message
                .starts_with("-intfile and -noisefile write the same file"),
            "{}",
            e.message
        );
        // Distinct files pass; outputs that are not written are not looked at.
        check_outputs(&[
            ("-floatfile", Some(d.join("f.bin").to_str().unwrap())),
            ("-intfile", Some(d.join("i.img").to_str().unwrap())),
            ("-pgmfile", Some(x)),
            ("-noisefile", None),
        ])
        .unwrap();
        #[cfg(unix)]
        {
            // A symlink to another output, and a hard link of one.
            std::fs::write(d.join("real.img"), b"").unwrap();
            std::os::unix::fs::symlink("real.img", d.join("alias.img")).unwrap();
            std::fs::hard_link(d.join("real.img"), d.join("hard.img")).unwrap();
            for other in ["alias.img", "hard.img"] {
                let e = check_outputs(&[
                    ("-intfile", Some(d.join("real.img").to_str().unwrap())),
                    ("-noisefile", Some(d.join(other).to_str().unwrap())),
                ])
                .unwrap_err();
                assert!(e.message.contains("write the same file"), "{}", e.message);
            }
            // Several outputs may go to /dev/null.
            check_outputs(&[
                ("-floatfile", Some("/dev/null")),
                ("-intfile", Some("/dev/null")),
            ])
            .unwrap();
        }
        // A missing directory or a directory as output is caught before any render.
        let e = check_outputs(&[("-floatfile", Some(d.join("nope/f.bin").to_str().unwrap()))])
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Output);
        assert!(e.message.contains("nope"), "{}", e.message);
        let e = check_outputs(&[("-intfile", Some(sub.to_str().unwrap()))]).unwrap_err();
        assert!(e.message.contains("it is a directory"), "{}", e.message);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
