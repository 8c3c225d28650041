//! Timing of the structure-factor calculation (not part of the default run):
//!
//!     cargo test --release --test sf_bench -- --ignored --nocapture
//!
//! (`SF_BENCH_THREADS=N` for another pool size than 2.)
//! A 1,000-atom protein to 1.5 Å on 2 threads, as the target (≤ 2 s): the atoms are
//! placed at random (the cost depends on the numbers of atoms and reflections, not on where the
//! atoms are) with protein-like elements and B factors, in lysozyme's tetragonal cell and space
//! group (P 43 21 2, 8 operations: 8,000 atoms in the unit cell) and in a P1 cell of about the
//! same volume per atom; plus the 1pfe fixture (342 atoms, P 63 2 2) to 1.5 Å. On a shared
//! machine the minimum wall time and the process's CPU time are the figures to trust.

use nanobragg::sf::{self, SfOptions};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// A PDB file with `n` random atoms in the given cell and space group.
fn synthetic(n: usize, cell: [f64; 6], sg: &str) -> String {
    let mut seed = 12345u64;
    let mut rnd = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut s = format!(
        "CRYST1{:9.3}{:9.3}{:9.3}{:7.2}{:7.2}{:7.2} {:<11}\n",
        cell[0], cell[1], cell[2], cell[3], cell[4], cell[5], sg
    );
    for i in 0..n {
        let r = rnd();
        let el = if r < 0.63 {
            "C"
        } else if r < 0.80 {
            "N"
        } else if r < 0.99 {
            "O"
        } else {
            "S"
        };
        // orthogonal cells only here: fractional * length
        let (x, y, z) = (rnd() * cell[0], rnd() * cell[1], rnd() * cell[2]);
        let b = 10.0 + 30.0 * rnd();
        s += &format!(
            "ATOM  {:5} {:^4} ALA A{:4}    {:8.3}{:8.3}{:8.3}{:6.2}{:6.2}          {:>2}\n",
            i + 1,
            el,
            i / 8 + 1,
            x,
            y,
            z,
            1.0,
            b,
            el
        );
    }
    s
}

/// CPU time of this process's live threads (s): the sum of /proc/self/task/*/schedstat run
/// times (ns; Linux). 0 elsewhere.
fn cpu_seconds() -> f64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .sum::<f64>()
        * 1e-9
}

fn time(name: &str, bytes: &[u8], d_min: f64) {
    let threads: usize = std::env::var("SF_BENCH_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let model = sf::read_model(name, bytes).unwrap();
    let opts = SfOptions::to_resolution(d_min);
    let mut times = Vec::new();
    let mut cpu = Vec::new();
    let mut line = String::new();
    for _ in 0..5 {
        let (t, c) = (Instant::now(), cpu_seconds());
        let (_, summary) = pool
            .install(|| sf::compute_model(&model, &opts, &|_| {}, &AtomicBool::new(false)))
            .unwrap();
        times.push(t.elapsed().as_secs_f64());
        cpu.push(cpu_seconds() - c);
        line = summary.describe();
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    cpu.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "{name}: {line}\n    {threads} threads, 5 runs: wall min {:.3} s, median {:.3} s; CPU time median {:.3} s",
        times[0], times[2], cpu[2]
    );
}

#[test]
#[ignore]
fn bench_1000_atoms_to_1_5_angstrom() {
    let lyso = synthetic(1000, [79.1, 79.1, 37.9, 90.0, 90.0, 90.0], "P 43 21 2");
    time("synthetic-P43212.pdb", lyso.as_bytes(), 1.5);
    let p1 = synthetic(1000, [28.0, 30.0, 35.0, 90.0, 90.0, 90.0], "P 1");
    time("synthetic-P1.pdb", p1.as_bytes(), 1.5);
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/models/1pfe.cif"
    );
    time("1pfe.cif", &std::fs::read(path).unwrap(), 1.5);
}
