//! The fuzz targets' bodies (`fuzz/src/`, one file per target) driven by ordinary tests, on stable Rust, as
//! part of `npm test`:
//!
//! * `regressions`: every input in `fuzz/regressions/<target>/` (each input that ever crashed a
//!   target), replayed in a child process with a time and memory limit, so that an abort, a hang
//!   or a runaway allocation is a test failure rather than the end of the test run. Inputs named
//!   in `fuzz/regressions/KNOWN_OPEN` are bugs not fixed yet: they must still fail (when one
//!   passes, the test says to remove its line).
//! * `smoke_<target>`: a deterministic mutation run (fixed seed, a fixed number of inputs, a
//!   few seconds) from the seeds in `fuzz/corpus/<target>/`. An input that panics is saved under
//!   the target directory and the failure says where, to be added to `fuzz/regressions/`.
//!
//! The long runs use cargo-fuzz and libFuzzer (`fuzz/README.md`).

#[allow(dead_code)]
#[path = "../../fuzz/src/lib.rs"]
mod bodies;

mod common;

use common::Rng;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn fuzz_dir() -> PathBuf {
    common::repo_root().join("fuzz")
}

/// Files of a folder, sorted (none when it does not exist).
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| {
            r.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The environment variable that makes this test binary a replay child.
const REPLAY_VAR: &str = "NANOBRAGG_FUZZ_REPLAY";
/// Most CPU time a replayed input may use (see [`Watchdog`]).
const REPLAY_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wall time a replayed input may run, however little CPU time it gets.
const REPLAY_TIMEOUT_WALL: Duration = Duration::from_secs(120);

/// The replay child's entry point (run by `regressions` only: `<target> <file>` in
/// `REPLAY_VAR`).
#[test]
#[ignore = "entry point of the replay child processes that `regressions` starts"]
fn replay_child() {
    let spec = std::env::var(REPLAY_VAR).expect("run by the regressions test");
    let (target, file) = spec.split_once(' ').expect("target and file");
    let body = bodies::target(target).expect("known target");
    let data = std::fs::read(file).expect("input file");
    body(&data);
}

/// How a replayed input ended.
#[derive(Debug, PartialEq)]
enum Outcome {
    Passed,
    Failed(String),
}

fn replay(target: &str, file: &Path) -> Outcome {
    let mut c = child(
        "replay_child",
        REPLAY_VAR,
        &format!("{target} {}", file.display()),
    );
    let dog = Watchdog::new(c.id(), REPLAY_TIMEOUT, REPLAY_TIMEOUT_WALL);
    loop {
        if let Some(status) = c.try_wait().unwrap() {
            let err = read_all(c.stderr.take());
            if status.success() {
                return Outcome::Passed;
            }
            let why = err
                .lines()
                .find(|l| l.contains("panicked at") || l.contains("memory allocation"))
                .map(|l| {
                    let next = err.lines().skip_while(|x| *x != l).nth(1).unwrap_or("");
                    format!("{l} {next}")
                })
                .unwrap_or_else(|| format!("exit status {status}"));
            return Outcome::Failed(why);
        }
        if let Some(why) = dog.hung() {
            let _ = c.kill();
            let _ = c.wait();
            return Outcome::Failed(format!("hang: {why}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `fuzz/regressions/KNOWN_OPEN`: the bugs found and not fixed yet. Lines (`#` comments):
/// `input <target>/<file> <reason>`: a regression input that must still fail;
/// `hang <target>/<file> <reason>`: one that hangs, not replayed (a loud line says so);
/// `class <target> "<text>" <reason>`: smoke runs count the panics whose message holds the
/// text (loudly) instead of failing.
#[derive(Default)]
struct KnownOpen {
    inputs: Vec<String>,
    hangs: Vec<String>,
    classes: Vec<(String, String)>,
}

impl KnownOpen {
    /// The texts of a target's known-open panic classes.
    fn classes_of(&self, target: &str) -> Vec<&str> {
        self.classes
            .iter()
            .filter(|(t, _)| t == target)
            .map(|(_, c)| c.as_str())
            .collect()
    }
}

fn known_open() -> KnownOpen {
    let text =
        std::fs::read_to_string(fuzz_dir().join("regressions/KNOWN_OPEN")).unwrap_or_default();
    let mut k = KnownOpen::default();
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("input ") {
            k.inputs
                .push(rest.split_whitespace().next().unwrap().to_string());
        } else if let Some(rest) = line.strip_prefix("hang ") {
            k.hangs
                .push(rest.split_whitespace().next().unwrap().to_string());
        } else if let Some(rest) = line.strip_prefix("class ") {
            let (target, rest) = rest
                .trim()
                .split_once(' ')
                .expect("class <target> \"<text>\"");
            let text = rest
                .trim()
                .strip_prefix('"')
                .and_then(|r| r.split_once('"'))
                .map(|(t, _)| t.to_string())
                .expect("class <target> \"<text>\"");
            k.classes.push((target.to_string(), text));
        } else {
            assert!(
                line.is_empty() || line.starts_with('#'),
                "fuzz/regressions/KNOWN_OPEN: cannot read {line:?}"
            );
        }
    }
    k
}

#[test]
fn regressions() {
    let KnownOpen {
        inputs: known,
        hangs,
        ..
    } = known_open();
    let (mut count, mut bad) = (0, Vec::new());
    let mut seen = Vec::new();
    for (target, _) in bodies::TARGETS {
        for file in files_in(&fuzz_dir().join("regressions").join(target)) {
            let key = format!("{target}/{}", file.file_name().unwrap().to_string_lossy());
            if hangs.contains(&key) {
                seen.push(key.clone());
                common::loud(&format!(
                    "NOT REPLAYED {key}: a known hang (fuzz/regressions/KNOWN_OPEN)"
                ));
                continue;
            }
            count += 1;
            let outcome = replay(target, &file);
            let is_known = known.contains(&key);
            match (&outcome, is_known) {
                (Outcome::Passed, false) => {}
                (Outcome::Failed(why), true) => {
                    seen.push(key.clone());
                    common::loud(&format!("KNOWN OPEN {key}: still fails ({why})"));
                }
                (Outcome::Failed(why), false) => bad.push(format!("{key}: {why}")),
                (Outcome::Passed, true) => {
                    seen.push(key.clone());
                    bad.push(format!(
                        "{key} passes now: remove its line from fuzz/regressions/KNOWN_OPEN"
                    ))
                }
            }
        }
    }
    for k in known.iter().chain(&hangs) {
        assert!(
            seen.contains(k),
            "fuzz/regressions/KNOWN_OPEN names {k}, which is not in fuzz/regressions/"
        );
    }
    println!("{count} regression inputs replayed");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Byte strings the mutator inserts: what parsers and validation trip over.
const TOKENS: &[&[u8]] = &[
    b"nan",
    b"inf",
    b"-inf",
    b"-0",
    b"0",
    b"1e308",
    b"-1e19",
    b"4294967296",
    b"2147483648",
    b"9223372036854775807",
    b"1e-320",
    b"\n",
    b"\r\n",
    b" ",
    b"\t",
    b"#",
    b"=",
    b";",
    b"}",
    b"\x0c",
    b"\0",
    b"-",
    b".",
    b"e",
    b"999999999",
    b"SIZE1=",
    b"HEADER_BYTES=",
    b"PHI=",
    b"DISTANCE=",
    b"WAVELENGTH=",
    b"PIXEL_SIZE=",
];

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], input: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        let n = input.len();
        match rng.below(8) {
            0 if n > 0 => {
                let i = rng.below(n);
                input[i] ^= 1 << rng.below(8);
            }
            1 if n > 0 => {
                let i = rng.below(n);
                input[i] = *[0u8, 0xff, b'\n', b' ', b'-', b'9', b'.', b'e', b'0', b'1']
                    .get(rng.below(10))
                    .unwrap();
            }
            2 => {
                let i = rng.below(n + 1);
                let k = 1 + rng.below(8);
                let bytes: Vec<u8> = (0..k).map(|_| rng.next_u64() as u8).collect();
                input.splice(i..i, bytes);
            }
            3 if n > 0 => {
                let i = rng.below(n);
                let k = 1 + rng.below((n - i).min(32));
                input.drain(i..i + k);
            }
            4 if n > 0 => {
                let i = rng.below(n);
                let k = 1 + rng.below((n - i).min(32));
                let copy = input[i..i + k].to_vec();
                let j = rng.below(n + 1);
                input.splice(j..j, copy);
            }
            5 | 6 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                let i = rng.below(n + 1);
                input.splice(i..i, t.iter().copied());
            }
            _ => {
                let other = &seeds[rng.below(seeds.len())];
                if !other.is_empty() {
                    let a = rng.below(other.len());
                    let b = a + rng.below(other.len() - a) + 1;
                    let i = rng.below(n + 1);
                    input.splice(i..i, other[a..b].iter().copied());
                }
            }
        }
    }
    input.truncate(4096);
}

/// The inputs of a smoke run, deterministic for a target: its seeds and regressions (minus the
/// known-open ones) as they are, then mutations of them.
fn smoke_inputs(target: &str, known: &KnownOpen) -> impl Iterator<Item = Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = files_in(&fuzz_dir().join("corpus").join(target))
        .into_iter()
        .chain(files_in(&fuzz_dir().join("regressions").join(target)))
        .filter(|p| {
            let key = format!("{target}/{}", p.file_name().unwrap().to_string_lossy());
            !known.inputs.contains(&key) && !known.hangs.contains(&key)
        })
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert!(!seeds.is_empty(), "no seeds in fuzz/corpus/{target}/");
    seeds.push(Vec::new());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ target.len() as u64);
    (0..).map(move |i| {
        let mut input = seeds[i % seeds.len()].clone();
        if i >= seeds.len() {
            mutate(&mut rng, &seeds, &mut input);
        }
        input
    })
}

/// The environment variable that makes this test binary a smoke-run child:
/// `<target> <first input> <inputs> <progress file>`.
const SMOKE_VAR: &str = "NANOBRAGG_FUZZ_SMOKE";
/// An input of a smoke run that takes more CPU time than this is a hang (inputs take
/// milliseconds). CPU time, not wall time: on a loaded machine an input that needs 0.3 s of CPU
/// can take 4 s of wall time (where the child's CPU time cannot be read, wall time stands in).
const SMOKE_HANG: Duration = Duration::from_secs(3);
/// An input of a smoke run that makes no progress for this long in wall time is a hang whatever
/// its CPU time (a child blocked without spinning: waiting on a lock or a pipe).
const SMOKE_HANG_WALL: Duration = Duration::from_secs(60);

/// CPU time (user + system, all threads) a running child process has used so far, from
/// `/proc/<pid>/stat`; `None` where that cannot be read.
fn cpu_time(pid: u32) -> Option<Duration> {
    #[cfg(target_os = "linux")]
    {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // the fields after the command name, which is in parentheses and may hold spaces
        let rest = &stat[stat.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of the line (11 and 12 after the name)
        let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        (hz > 0).then(|| Duration::from_secs_f64(ticks as f64 / hz as f64))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// The watchdog of a child process: whether it has made no progress for too long since
/// [`Watchdog::progressed`] was last called: more than `cpu` of CPU time (wall time where CPU
/// time cannot be read), or more than `wall` of wall time.
struct Watchdog {
    pid: u32,
    cpu: Duration,
    wall: Duration,
    since: std::time::Instant,
    cpu_since: Option<Duration>,
}

impl Watchdog {
    fn new(pid: u32, cpu: Duration, wall: Duration) -> Self {
        Watchdog {
            pid,
            cpu,
            wall,
            since: std::time::Instant::now(),
            cpu_since: cpu_time(pid),
        }
    }

    fn progressed(&mut self) {
        self.since = std::time::Instant::now();
        self.cpu_since = cpu_time(self.pid);
    }

    /// `Some(why)` when the child counts as hung.
    fn hung(&self) -> Option<String> {
        let wall = self.since.elapsed();
        if wall > self.wall {
            return Some(format!("no progress for {wall:.1?} of wall time"));
        }
        match (self.cpu_since, cpu_time(self.pid)) {
            (Some(a), Some(b)) => (b.saturating_sub(a) > self.cpu).then(|| {
                format!(
                    "no progress for {:.1?} of CPU time ({wall:.1?} of wall time)",
                    b - a
                )
            }),
            _ => (wall > self.cpu).then(|| format!("no progress for {wall:.1?}")),
        }
    }
}
/// Memory of a child process (replay or smoke run): libFuzzer's default limit.
const CHILD_MEMORY: u64 = 2 << 30;

/// A child process of this test binary running the (ignored) test `entry` with `var` set, under
/// [`CHILD_MEMORY`].
fn child(entry: &str, var: &str, value: &str) -> std::process::Child {
    use std::process::{Command, Stdio};
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        entry,
        "--include-ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(var, value)
    // a backtrace takes longer than most inputs
    .env("RUST_BACKTRACE", "0")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: only setrlimit between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                let lim = libc::rlimit {
                    rlim_cur: CHILD_MEMORY,
                    rlim_max: CHILD_MEMORY,
                };
                libc::setrlimit(libc::RLIMIT_AS, &lim);
                Ok(())
            });
        }
    }
    cmd.spawn().expect("start a child test process")
}

fn read_all(r: Option<impl std::io::Read>) -> String {
    let mut s = String::new();
    if let Some(mut r) = r {
        let _ = r.read_to_string(&mut s);
    }
    s
}

#[cfg(unix)]
fn write_record(f: &std::fs::File, record: &[u8]) {
    use std::os::unix::fs::FileExt;
    f.write_all_at(record, 0).unwrap();
}

#[cfg(not(unix))]
fn write_record(f: &std::fs::File, record: &[u8]) {
    use std::io::{Seek, Write};
    let mut f = f;
    f.seek(std::io::SeekFrom::Start(0)).unwrap();
    f.write_all(record).unwrap();
}

/// The last record of a progress file: input index and bytes.
fn read_record(progress: &Path) -> Option<(usize, Vec<u8>)> {
    let bytes = std::fs::read(progress).ok()?;
    let nl = bytes.iter().position(|&b| b == b'\n')?;
    let head = String::from_utf8_lossy(&bytes[..nl]).into_owned();
    let (i, len) = head.split_once(' ')?;
    let (i, len): (usize, usize) = (i.parse().ok()?, len.parse().ok()?);
    Some((i, bytes.get(nl + 1..nl + 1 + len)?.to_vec()))
}

/// The smoke-run child's entry point: runs inputs `first..inputs` of a target in-process,
/// writing each one (with its index) to the progress file before running it. A panic of a
/// known-open class is counted (`SMOKE-KNOWN <class index>` lines); any other panic ends the
/// child with status 3.
#[test]
#[ignore = "entry point of the child processes that the smoke_* tests start"]
fn smoke_child() {
    let spec = std::env::var(SMOKE_VAR).expect("run by a smoke_* test");
    let parts: Vec<&str> = spec.splitn(4, ' ').collect();
    let (target, first, inputs, progress) = (
        parts[0],
        parts[1].parse::<usize>().unwrap(),
        parts[2].parse::<usize>().unwrap(),
        parts[3],
    );
    let body = bodies::target(target).unwrap();
    let known = known_open();
    let classes = known.classes_of(target);
    // Written in place, never truncated: truncating and rewriting a file makes ext4 flush it to
    // disk on every input.
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(progress)
        .unwrap();
    for (i, input) in smoke_inputs(target, &known)
        .enumerate()
        .take(inputs)
        .skip(first)
    {
        let mut record = format!("{i} {}\n", input.len()).into_bytes();
        record.extend_from_slice(&input);
        write_record(&file, &record);
        if let Err(payload) = std::panic::catch_unwind(|| body(&input)) {
            let msg = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("");
            match classes.iter().position(|c| msg.contains(c)) {
                Some(k) => println!("SMOKE-KNOWN {k}"),
                None => {
                    println!("SMOKE-FAIL {msg}");
                    std::process::exit(3);
                }
            }
        }
    }
}

/// Runs `inputs` inputs of a target (see [`smoke_inputs`]) in child processes. An input that
/// panics, aborts (a runaway allocation hits the memory limit), or runs for more than 3 s is a
/// failure, saved under the target directory, unless it is of a known-open class; after a
/// known-open abort the run continues with the next input in a new child.
fn smoke(target: &str, inputs: usize) {
    let known = known_open();
    let classes = known.classes_of(target);
    let mut hits = vec![0usize; classes.len()];
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-smoke");
    std::fs::create_dir_all(&dir).unwrap();
    let progress = dir.join(format!("{target}.progress"));
    let started = std::time::Instant::now();
    let mut first = 0;
    let mut restarts = 0;
    loop {
        let _ = std::fs::remove_file(&progress);
        let mut c = child(
            "smoke_child",
            SMOKE_VAR,
            &format!("{target} {first} {inputs} {}", progress.display()),
        );
        // Drain both pipes on threads (many SMOKE-KNOWN lines and panic messages must not fill
        // a pipe and stall the child).
        let (out, err) = (c.stdout.take(), c.stderr.take());
        let reader = std::thread::spawn(move || read_all(out));
        let err_reader = std::thread::spawn(move || read_all(err));
        let mut last = None;
        let mut dog = Watchdog::new(c.id(), SMOKE_HANG, SMOKE_HANG_WALL);
        let status = loop {
            if let Some(st) = c.try_wait().unwrap() {
                break Ok(st);
            }
            let index = std::fs::read(&progress).ok().and_then(|b| {
                let nl = b.iter().position(|&c| c == b'\n')?;
                Some(b[..nl].to_vec())
            });
            if index != last {
                last = index;
                dog.progressed();
            } else if let Some(why) = dog.hung() {
                let _ = c.kill();
                let _ = c.wait();
                break Err(why);
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let stdout = reader.join().unwrap();
        let stderr = err_reader.join().unwrap();
        for line in stdout.lines() {
            if let Some(k) = line.strip_prefix("SMOKE-KNOWN ") {
                hits[k.trim().parse::<usize>().unwrap()] += 1;
            }
        }
        if status.as_ref().is_ok_and(|s| s.success()) {
            break;
        }
        // The input that failed is the last one the child recorded.
        let (index, input) = read_record(&progress).unwrap_or((first, Vec::new()));
        let why = match status {
            Err(why) => format!("hangs ({why})"),
            Ok(status) => stdout
                .lines()
                .find_map(|l| l.strip_prefix("SMOKE-FAIL "))
                .map(|m| format!("panicked: {m}"))
                .or_else(|| {
                    // the last words of the child (earlier lines are counted known panics)
                    let last = |pat: &str| stderr.lines().rev().find(|l| l.contains(pat));
                    last("memory allocation")
                        .or_else(|| last("overflowed its stack"))
                        .or_else(|| last("panicked"))
                        .map(|l| format!("aborted: {l}"))
                })
                .unwrap_or_else(|| format!("died: {:?}", status)),
        };
        let known_abort = if !why.starts_with("panicked") {
            classes.iter().position(|c| why.contains(c))
        } else {
            None
        };
        if let Some(k) = known_abort.filter(|_| restarts < 20) {
            hits[k] += 1;
            restarts += 1;
            first = index + 1;
            continue;
        }
        let hash = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        let saved = dir.join(format!("{target}-{hash:016x}"));
        std::fs::write(&saved, &input).unwrap();
        panic!(
            "fuzz target {target}: input {index} {why}\nsaved as {} — add it to fuzz/regressions/{target}/ (and fix the bug, or list it in fuzz/regressions/KNOWN_OPEN)",
            saved.display()
        );
    }
    println!(
        "{target}: {inputs} inputs in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    for (c, n) in classes.iter().zip(&hits) {
        if *n > 0 {
            common::loud(&format!(
                "KNOWN OPEN {target}: {n} of {inputs} inputs fail with \"{c}\" (fuzz/regressions/KNOWN_OPEN)"
            ));
        }
    }
}

/// The watchdog judges a spinning child by its CPU time and a blocked one by wall time.
#[cfg(target_os = "linux")]
#[test]
fn the_watchdog_catches_spinning_and_blocked_children() {
    use std::process::Command;
    let wait_hung = |c: &mut std::process::Child, dog: &Watchdog, within: Duration| {
        let t = std::time::Instant::now();
        let why = loop {
            if let Some(why) = dog.hung() {
                break Some(why);
            }
            if t.elapsed() > within {
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let _ = c.kill();
        let _ = c.wait();
        why
    };
    // a busy loop: hung after 0.3 s of CPU time, long before the wall limit
    let mut spin = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let dog = Watchdog::new(
        spin.id(),
        Duration::from_millis(300),
        Duration::from_secs(600),
    );
    let why = wait_hung(&mut spin, &dog, Duration::from_secs(300)).expect("a spinning child");
    assert!(why.contains("of CPU time"), "{why}");
    // a sleeping child uses no CPU time: not hung by the CPU limit ...
    let mut idle = Command::new("sleep").arg("30").spawn().unwrap();
    let dog = Watchdog::new(
        idle.id(),
        Duration::from_millis(100),
        Duration::from_secs(600),
    );
    let why = wait_hung(&mut idle, &dog, Duration::from_secs(1));
    assert!(why.is_none(), "{why:?}");
    // ... but by the wall limit
    let mut idle = Command::new("sleep").arg("30").spawn().unwrap();
    let dog = Watchdog::new(
        idle.id(),
        Duration::from_millis(100),
        Duration::from_millis(500),
    );
    let why = wait_hung(&mut idle, &dog, Duration::from_secs(10)).expect("a blocked child");
    assert!(why.contains("of wall time"), "{why}");
}

// A few seconds in all on a 2-core machine (release build).
#[test]
fn smoke_args() {
    smoke("args", 50000);
}

#[test]
fn smoke_hkl() {
    smoke("hkl", 50000);
}

#[test]
fn smoke_fdump() {
    smoke("fdump", 50000);
}

#[test]
fn smoke_matrix() {
    smoke("matrix", 50000);
}

#[test]
fn smoke_sources() {
    smoke("sources", 50000);
}

#[test]
fn smoke_smv() {
    smoke("smv", 20000);
}

#[test]
fn smoke_model() {
    smoke("model", 3000);
}

#[test]
fn smoke_stol() {
    smoke("stol", 20000);
}

#[test]
fn smoke_noisify() {
    smoke("noisify", 5000);
}

#[test]
fn smoke_nonbragg() {
    smoke("nonbragg", 5000);
}

#[test]
fn smoke_cbf() {
    smoke("cbf", 50000);
}

#[test]
fn smoke_measured() {
    smoke("measured", 20000);
}

#[test]
fn smoke_h5chunk() {
    smoke("h5chunk", 50000);
}

#[test]
fn smoke_expt() {
    smoke("expt", 20000);
}

#[test]
fn smoke_geom() {
    smoke("geom", 20000);
}

#[test]
fn every_target_has_a_smoke_test_seeds_and_a_cargo_fuzz_entry() {
    let me = std::fs::read_to_string(file!()).unwrap_or_else(|_| {
        std::fs::read_to_string(common::repo_root().join("crate/tests/fuzz_smoke.rs")).unwrap()
    });
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    for (t, _) in bodies::TARGETS {
        assert!(
            me.contains(&format!("smoke(\"{t}\"")),
            "no smoke test for {t}"
        );
        assert!(
            manifest.contains(&format!("name = \"{t}\"")),
            "no [[bin]] for {t} in fuzz/Cargo.toml"
        );
        assert!(
            fuzz_dir().join(format!("fuzz_targets/{t}.rs")).is_file(),
            "no fuzz/fuzz_targets/{t}.rs"
        );
        assert!(
            !files_in(&fuzz_dir().join("corpus").join(t)).is_empty(),
            "no seeds in fuzz/corpus/{t}/"
        );
    }
}

#[test]
fn the_argument_decoder_uses_real_flags() {
    for name in bodies::flag_names() {
        let words = vec![name.to_string()];
        if let Err(e) = nanobragg::args::parse(&words) {
            assert!(
                !e.message.contains("unknown flag"),
                "the fuzz decoder's flag {name} is not a flag of the parser: {}",
                e.message
            );
        }
    }
    // the companion programs' grammars, against their own parsers
    for (program, g, parse) in [
        (
            "noisify",
            &bodies::NOISIFY,
            (|w: &[String]| nanobragg::noisify::options::parse(w).err()) as fn(&[String]) -> _,
        ),
        ("nonbragg", &bodies::NONBRAGG, |w: &[String]| {
            nanobragg::nonbragg::options::parse(w).err()
        }),
    ] {
        for name in bodies::grammar_flag_names(g) {
            if let Some(e) = parse(&[name.to_string()]) {
                assert!(
                    !e.message.contains("unknown flag"),
                    "the fuzz grammar's flag {name} is not a flag of {program}: {}",
                    e.message
                );
            }
        }
        // the base set-up is valid
        let words: Vec<String> = g.base.split(' ').map(String::from).collect();
        assert!(parse(&words).is_none(), "{program} base set-up: {words:?}");
    }
    // The decoder gives words from any bytes, deterministically.
    let (a, _) = bodies::decode_words(b"\x01\x00\x05\x03\x00\x07");
    let (b, _) = bodies::decode_words(b"\x01\x00\x05\x03\x00\x07");
    assert_eq!(a, b);
    assert!(a.len() > 12, "{a:?}");
    let (w, extra) = bodies::decode_words(b"W-cell 1 2 3\n-N 5");
    assert_eq!(w, ["-cell", "1", "2", "3", "-N", "5"]);
    assert!(extra.is_none());
}

/// Shows what an input of the argument target means: `NANOBRAGG_FUZZ_SHOW=<file> cargo test
/// --release --test fuzz_smoke show_args_input -- --ignored --nocapture` (with
/// `NANOBRAGG_FUZZ_GRAMMAR=noisify` or `nonbragg` for those targets).
#[test]
#[ignore = "a tool: prints the words an args input decodes to"]
fn show_args_input() {
    let path = std::env::var("NANOBRAGG_FUZZ_SHOW").expect("NANOBRAGG_FUZZ_SHOW=<file>");
    let data = std::fs::read(path).unwrap();
    // NANOBRAGG_FUZZ_GRAMMAR=noisify|nonbragg for those targets' inputs
    let grammar = match std::env::var("NANOBRAGG_FUZZ_GRAMMAR").as_deref() {
        Ok("noisify") => &bodies::NOISIFY,
        Ok("nonbragg") => &bodies::NONBRAGG,
        _ => &bodies::NANOBRAGG,
    };
    let (words, file) = bodies::decode_with(&data, grammar);
    println!("words: {}", words.join(" "));
    if let Some(f) = file {
        println!(
            "fuzz.dat ({} bytes): {:?}",
            f.len(),
            String::from_utf8_lossy(f)
        );
    }
}
