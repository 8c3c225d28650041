//! Benchmark harness (`npm run bench`): per case and backend/precision, the render wall time
//! (median of several runs), pixel-steps per second and the peak memory of a process that only
//! prepares and renders. Each measurement runs in a child process of this binary so that peak
//! memory is per case. With `NANOBRAGG_UPSTREAM=/path/to/nanoBragg` it also times upstream's C
//! program and ours end to end on the same command line, interleaved, and prints the ratios.
//!
//! usage: nanobragg-bench [--quick] [--cases a1024,a4096,b] [--reps N] [--gpu] [--gpu-reps N]
//!        nanobragg-bench --gradients [--f32 | --gpu] [--cases …] [--reps N]
//!        nanobragg-bench --gpu-readback 16,64,256 [--reps N]
//!        nanobragg-bench --noise [SIZE] [REPS] [NOISIFY FLAGS...]
//!
//! `--gpu` adds the GPU backend (a build with the `gpu` feature): cold = first render in a new
//! process including device, self-test and pipeline creation; warm = median of `--gpu-reps`
//! (default 10) further renders. Case names: `a<N>` is case (a) at N×N pixels, `b` is case (b),
//! `b<N>` case (b) at N×N pixels.
//!
//! `NANOBRAGG_BASELINE=DIR` (a folder with another build's `nanobragg` and `nanobragg-bench`,
//! e.g. the commit before a change built into its own target folder) compares that build with
//! this one in the same run: each render-only row runs the two builds' children alternately,
//! three times each (the median of their medians, and the ratio baseline / this), and the end to
//! end table gains the baseline's f32 column, interleaved with the others.
//!
//! `--gradients`: in one process, interleaved, the f64 image alone against the image with the
//! tangents of 10 parameters (`api::render_gradients`, host tangent included) and against the
//! vector–Jacobian product of the same 10 (`api::vjp`); medians and their ratios. With `--f32`
//! the same in f32: the f32 image alone (`api::render_cpu`, f32) against the f32 tangent kernel
//! (`api::render_gradients_with`/`vjp_with`, `Precision::F32`). With `--gpu` the same on the
//! GPU (warm, after one untimed round): the image kernel alone (`Renderer::render`), the image
//! and 10 tangents (`Renderer::render_gradients`, host tangent and read-back included), the
//! tangent kernel alone on a resolved plan tangent (`GpuRenderer::render_tangents`), and the
//! VJP (`Renderer::vjp`: reduced on the GPU, only the image and per-workgroup partial sums read
//! back; host tangent included), and, for the tangent kernel alone, its last pass's read-back
//! (`GpuTimings::readback_s`, with the host copy's share).
//!
//! `--realistic MODEL [REPS]`: the page's realistic still (preset "Protein still on a
//! pixel-array detector": EIGER2 X 4M, MODEL (the bundled 1pfe.cif), a 1 µm crystal with 12
//! mosaic domains, water and air, Poisson noise with calibration error) as the page's worker
//! makes it (`crate::realistic`), stage by stage on the CPU in f32 on rayon's threads
//! (`RAYON_NUM_THREADS=2` for the page's two), each stage's variants interleaved, REPS rounds
//! (default 5), medians: the spots with F interpolated (upstream's automatic rule for a crystal
//! given by `-xtalsize`) and at the nearest lattice point (the chain's rule,
//! `realistic::install_table`); the background rendered and cached (`BackgroundCache`); the
//! detector effects with upstream's sequence on one thread and with the counter generator on all
//! (`noisify::Generator`). The structure factors are computed once, untimed (the page caches
//! them too).
//!
//! `--gpu-readback SIZES_MB`: the GPU read-back taken apart on the real adapter (a storage
//! buffer of each size copied to a mappable one, mapped, copied out: each step timed alone,
//! into fresh and reused vectors, on one thread and on rayon's, f32 → f64, and each strategy of
//! `NANOBRAGG_GPU_READBACK` end to end; `gpu::readback`). The GPU rows of `--gpu` and
//! `--gradients --gpu` read back with the strategy that variable names (default `parallel+huge`);
//! the `--gpu` rows print the last render's read-back split (wait, copy).

use nanobragg::api::{self, Backend, Precision};
use nanobragg::files::MemFiles;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

const CASE_A: &str = "-cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -default_F 100 -distance 100";
const CASE_B: &str = "-cell 70 80 90 85 95 105 -misset 10 5 3 -lambda 1.5 -N 10 -default_F 100 -distance 100 -detpixels 512 -mosaic 0.5 -mosaic_dom 10 -hdivrange 0.5 -vdivrange 0.5 -divsteps 3 -dispersion 0.2 -dispsteps 3 -oversample 2";

fn case_args(name: &str) -> String {
    match name {
        "b" => CASE_B.to_string(),
        n if n.starts_with('b') => format!("{CASE_B} -detpixels {}", &n[1..]),
        n if n.starts_with('a') => format!("{CASE_A} -detpixels {}", &n[1..]),
        n => panic!("unknown case {n}"),
    }
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Child: prepare and render `reps` times; print "median_s steps_per_s peak_kb pixels".
fn child(case: &str, backend: &str, reps: usize) {
    let words = api::split_args(&case_args(case));
    let prep = api::prepare(&words, &MemFiles::default()).expect("prepare");
    let plan = prep.plan();
    let cancel = AtomicBool::new(false);
    let mut times = Vec::new();
    #[cfg_attr(not(feature = "gpu"), allow(unused_mut))]
    let mut cold = 0.0;
    // the library's renderer and backend policy, as the CLI and the browser use them
    let mut renderer = api::Renderer::new(None);
    let (backend, precision) = match backend {
        "f64" => (Backend::Cpu, Precision::F64),
        "f32" => (Backend::Cpu, Precision::F32),
        "gpu" => (Backend::Gpu, Precision::F32),
        other => panic!("unknown backend {other}"),
    };
    let mut gpu_timings = None;
    let mut render = |r: &mut api::Renderer| {
        let out = r
            .render(plan, backend, precision, &|_| {}, &cancel)
            .expect("render");
        std::hint::black_box(out.image);
        gpu_timings = out.gpu_timings;
    };
    if backend == Backend::Gpu {
        // cold: device, self-test, pipeline, buffers and the first render
        let t = Instant::now();
        render(&mut renderer);
        cold = t.elapsed().as_secs_f64();
    }
    for _ in 0..reps {
        let t = Instant::now();
        render(&mut renderer);
        times.push(t.elapsed().as_secs_f64());
    }
    if let Some(adapter) = renderer.gpu_adapter() {
        eprintln!("adapter: {adapter}");
    }
    if let Some(t) = gpu_timings {
        eprintln!("last render's {t}");
    }
    let med = median(&mut times);
    let steps = plan.pixel_count() as f64 * plan.terms_per_pixel() as f64;
    println!(
        "{med} {} {} {} {cold}",
        steps / med,
        peak_rss_kb(),
        plan.pixel_count()
    );
}

fn time_cmd(program: &str, args: &[String], dir: &std::path::Path) -> f64 {
    let t = Instant::now();
    let st = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run");
    assert!(
        st.status.success(),
        "{program} failed: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    t.elapsed().as_secs_f64()
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.len() >= 3 && argv[1] == "--realistic" {
        let reps = argv
            .get(3)
            .map_or(5, |r| r.parse().expect("--realistic MODEL [REPS]"));
        realistic(&argv[2], reps);
        return;
    }
    if argv.len() >= 3 && argv[1] == "--realistic-spots" {
        let reps = argv
            .get(3)
            .map_or(5, |r| r.parse().expect("--realistic-spots MODEL [REPS]"));
        realistic_spots(&argv[2], reps);
        return;
    }
    if argv.len() >= 2 && argv[1] == "--noise" {
        let size = argv
            .get(2)
            .map_or(512, |r| r.parse().expect("--noise [SIZE] [REPS]"));
        let reps = argv
            .get(3)
            .map_or(200, |r| r.parse().expect("--noise [SIZE] [REPS]"));
        noise(size, reps, argv.get(4..).unwrap_or_default());
        return;
    }
    if argv.len() >= 5 && argv[1] == "--child" {
        child(&argv[2], &argv[3], argv[4].parse().unwrap());
        return;
    }
    let mut cases = vec!["a1024".to_string(), "a4096".to_string(), "b".to_string()];
    let mut reps = 5usize;
    let mut gpu = false;
    let mut gpu_reps = 10usize;
    let mut readback_sizes: Option<Vec<usize>> = None;
    // --gradients: the parameters (default: the 10 of docs/benchmarks.md)
    let mut params = api::parse_params(
        "rot_x,rot_y,rot_z,cell_a,cell_b,cell_c,n_cells,distance,beam_x,lambda",
        "--params",
    )
    .expect("parameters");
    let mut i = 1;
    while i < argv.len() {
        match argv[i].as_str() {
            "--quick" => {
                cases = vec!["a1024".into(), "b".into()];
                reps = 3;
            }
            "--cases" => {
                i += 1;
                cases = argv[i].split(',').map(String::from).collect();
            }
            "--reps" => {
                i += 1;
                reps = argv[i].parse().expect("--reps N");
            }
            "--gpu" => gpu = true,
            "--gpu-readback" => {
                i += 1;
                readback_sizes = Some(
                    argv.get(i)
                        .map(|v| v.split(',').map(|x| x.trim().parse().ok()).collect())
                        .and_then(|v: Option<Vec<usize>>| v)
                        .unwrap_or_else(|| {
                            eprintln!("--gpu-readback SIZES_MB, e.g. 16,64,256");
                            std::process::exit(2)
                        }),
                );
            }
            "--gradients" | "--f32" => {}
            "--params" => {
                i += 1;
                params = api::parse_params(&argv[i], "--params").unwrap_or_else(|e| {
                    eprintln!("{}", e.message);
                    std::process::exit(2)
                });
            }
            "--gpu-reps" => {
                i += 1;
                gpu_reps = argv[i].parse().expect("--gpu-reps N");
            }
            other => {
                eprintln!("unknown option {other}\nusage: nanobragg-bench [--quick] [--cases a1024,a4096,b] [--reps N]");
                std::process::exit(2);
            }
        }
        i += 1;
    }
    if let Some(sizes) = readback_sizes {
        gpu_readback_probe(&sizes, reps);
        return;
    }
    if argv.iter().any(|a| a == "--gradients") {
        if gpu {
            gpu_gradients(&cases, reps, &params);
            return;
        }
        let precision = if argv.iter().any(|a| a == "--f32") {
            Precision::F32
        } else {
            Precision::F64
        };
        gradients(&cases, reps, precision, &params);
        return;
    }
    let me = std::env::current_exe().unwrap();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!(
        "nanobragg-bench: {threads} threads, vector level {}, render only (prepare excluded), median of {reps}",
        nanobragg::simd::level().name()
    );
    let baseline = std::env::var_os("NANOBRAGG_BASELINE").map(std::path::PathBuf::from);
    if let Some(b) = &baseline {
        println!(
            "baseline build {}: its children alternate with ours, 3 each (median of medians)",
            b.display()
        );
    }
    println!(
        "{:<7} {:<8} {:>10} {:>16} {:>12} {:>10} {:>10}",
        "case", "backend", "time_ms", "pixel-steps/s", "peak_MiB", "peak/image", "cold_ms"
    );
    let mut backends = vec!["f64", "f32"];
    if gpu {
        backends.push("gpu");
    }
    let run_child = |bench: &std::path::Path, case: &str, backend: &str, n: usize| {
        let out = Command::new(bench)
            .args(["--child", case, backend, &n.to_string()])
            .output()
            .expect("child");
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        let v: Vec<f64> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        Ok((v, String::from_utf8_lossy(&out.stderr).into_owned()))
    };
    for case in &cases {
        for &backend in &backends {
            let n = if backend == "gpu" { gpu_reps } else { reps };
            let (v, err) = match &baseline {
                None => match run_child(&me, case, backend, n) {
                    Ok(r) => r,
                    Err(e) => {
                        println!("{case:<7} {backend:<8} failed: {e}");
                        continue;
                    }
                },
                Some(dir) => {
                    let base_bench = dir.join("nanobragg-bench");
                    let (mut ours, mut base) = (Vec::new(), Vec::new());
                    let mut last = None;
                    for _ in 0..3 {
                        let b = run_child(&base_bench, case, backend, n);
                        let o = run_child(&me, case, backend, n);
                        match (b, o) {
                            (Ok(b), Ok(o)) => {
                                base.push(b.0[0]);
                                ours.push(o.0[0]);
                                last = Some(o);
                            }
                            (Err(e), _) | (_, Err(e)) => {
                                println!("{case:<7} {backend:<8} failed: {e}");
                                break;
                            }
                        }
                    }
                    let Some((mut v, err)) = last else { continue };
                    if ours.len() < 3 {
                        continue;
                    }
                    let (o, b) = (median(&mut ours), median(&mut base));
                    println!(
                        "{case:<7} {backend:<8} baseline {:.1} ms, this build {:.1} ms: baseline / this {:.3}",
                        b * 1e3,
                        o * 1e3,
                        b / o
                    );
                    v[1] *= v[0] / o;
                    v[0] = o;
                    (v, err)
                }
            };
            let image_mib = v[3] * 4.0 / 1048576.0;
            let cold = if v[4] > 0.0 {
                format!("{:.1}", v[4] * 1e3)
            } else {
                "-".into()
            };
            println!(
                "{case:<7} {backend:<8} {:>10.1} {:>16.3e} {:>12.1} {:>10.2} {:>10}",
                v[0] * 1e3,
                v[1],
                v[2] / 1024.0,
                (v[2] / 1024.0) / image_mib,
                cold
            );
            for prefix in ["adapter:", "last render's gpu timings"] {
                if let Some(line) = err.lines().find(|l| l.starts_with(prefix)) {
                    println!("        {line}");
                }
            }
        }
    }
    if let Ok(upstream) = std::env::var("NANOBRAGG_UPSTREAM") {
        let ours = me.with_file_name("nanobragg");
        let dir = std::env::temp_dir().join(format!("nanobragg-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        println!("\nend to end against upstream C ({upstream}), same words, -nonoise -nopgm, interleaved, median of {reps}");
        let base_cli = baseline.as_ref().map(|d| d.join("nanobragg"));
        println!(
            "{:<7} {:>10} {:>12} {:>12} {:>10} {:>10}{}",
            "case",
            "C_ms",
            "ours_f64_ms",
            "ours_f32_ms",
            "C/f64",
            "C/f32",
            if base_cli.is_some() {
                format!(" {:>12} {:>10}", "base_f32_ms", "C/base_f32")
            } else {
                String::new()
            }
        );
        for case in &cases {
            let mut words = api::split_args(&case_args(case));
            words.extend(
                [
                    "-nonoise",
                    "-nopgm",
                    "-floatfile",
                    "bench.bin",
                    "-intfile",
                    "bench.img",
                ]
                .map(String::from),
            );
            let mut w64 = words.clone();
            w64.extend(["-precision".into(), "f64".into()]);
            let mut w32 = words.clone();
            w32.extend(["-precision".into(), "f32".into()]);
            let (mut c, mut o64, mut o32, mut b32) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for _ in 0..reps {
                c.push(time_cmd(&upstream, &words, &dir));
                o64.push(time_cmd(ours.to_str().unwrap(), &w64, &dir));
                o32.push(time_cmd(ours.to_str().unwrap(), &w32, &dir));
                if let Some(b) = &base_cli {
                    b32.push(time_cmd(b.to_str().unwrap(), &w32, &dir));
                }
            }
            let (c, o64, o32) = (median(&mut c), median(&mut o64), median(&mut o32));
            let base = if b32.is_empty() {
                String::new()
            } else {
                let b = median(&mut b32);
                format!(" {:>12.1} {:>10.2}", b * 1e3, c / b)
            };
            println!(
                "{case:<7} {:>10.1} {:>12.1} {:>12.1} {:>10.2} {:>10.2}{base}",
                c * 1e3,
                o64 * 1e3,
                o32 * 1e3,
                c / o64,
                c / o32
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `--gradients`: the cost of the tangents of 10 parameters against the image alone.
fn gradients(cases: &[String], reps: usize, precision: Precision, params: &[api::Param]) {
    let names: Vec<&str> = params.iter().map(|p| p.name()).collect();
    let threads = rayon::current_num_threads();
    println!(
        "nanobragg-bench --gradients: {precision:?}, {threads} threads, vector level {}, median of {reps}, interleaved; parameters {}",
        nanobragg::simd::level().name(),
        names.join(",")
    );
    println!(
        "{:<7} {:>12} {:>14} {:>10} {:>12} {:>10} {:>12}",
        "case", "image_ms", "tangents_ms", "ratio", "vjp_ms", "ratio", "host_ms"
    );
    for case in cases {
        let files = MemFiles::default();
        let prep = api::prepare(&api::split_args(&case_args(case)), &files).expect("prepare");
        let cancel = AtomicBool::new(false);
        let w = vec![1.0; prep.plan().pixel_count()];
        let (mut ti, mut tt, mut tv, mut th) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps {
            // the host's share: the plan's tangent (re-resolutions of the set-up)
            let t0 = Instant::now();
            nanobragg::resolve::tangent::plan_tangent_at(&prep.setup, &files, params, &[]).unwrap();
            th.push(t0.elapsed().as_secs_f64());
            let t0 = Instant::now();
            api::render_cpu(prep.plan(), precision, &|_| {}, &cancel).unwrap();
            ti.push(t0.elapsed().as_secs_f64());
            let t0 = Instant::now();
            api::render_gradients_with(&prep, &files, params, &[], precision, &|_| {}, &cancel)
                .unwrap();
            tt.push(t0.elapsed().as_secs_f64());
            let t0 = Instant::now();
            api::vjp_with(&prep, &files, params, &[], &w, precision, &cancel).unwrap();
            tv.push(t0.elapsed().as_secs_f64());
        }
        let (i, t, v, h) = (
            median(&mut ti),
            median(&mut tt),
            median(&mut tv),
            median(&mut th),
        );
        println!(
            "{case:<7} {:>12.1} {:>14.1} {:>10.2} {:>12.1} {:>10.2} {:>12.1}",
            i * 1e3,
            t * 1e3,
            t / i,
            v * 1e3,
            v / i,
            h * 1e3
        );
    }
}

/// `--gradients --gpu`: the GPU's image and 10 tangents against its image alone (warm).
#[cfg(feature = "gpu")]
fn gpu_gradients(cases: &[String], reps: usize, params: &[api::Param]) {
    let names: Vec<&str> = params.iter().map(|p| p.name()).collect();
    let mut r = api::Renderer::new(None);
    let mut kernel = nanobragg::gpu::GpuRenderer::new_blocking().expect("GPU");
    println!(
        "nanobragg-bench --gradients --gpu: {}, median of {reps}, interleaved, warm; parameters {}; read-back {}",
        pollster::block_on(r.init_gpu()).expect("GPU"),
        names.join(","),
        kernel.readback()
    );
    println!(
        "{:<7} {:>10} {:>13} {:>7} {:>11} {:>7} {:>10} {:>7} {:>7} {:>10} {:>8}",
        "case",
        "image_ms",
        "gradients_ms",
        "ratio",
        "kernel_ms",
        "ratio",
        "vjp_ms",
        "ratio",
        "passes",
        "k_read_ms",
        "k_copy"
    );
    let cancel = AtomicBool::new(false);
    for case in cases {
        let files = MemFiles::default();
        let prep = api::prepare(&api::split_args(&case_args(case)), &files).expect("prepare");
        let (moved, t) =
            nanobragg::resolve::tangent::plan_tangent_at(&prep.setup, &files, params, &[])
                .expect("plan tangent");
        let w = vec![1.0; prep.plan().pixel_count()];
        let (mut ti, mut tg, mut tk, mut tv) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut trb, mut tcp) = (Vec::new(), Vec::new());
        let mut passes = 0;
        for rep in 0..=reps {
            let t0 = Instant::now();
            r.render(prep.plan(), Backend::Gpu, Precision::F32, &|_| {}, &cancel)
                .unwrap();
            let i = t0.elapsed().as_secs_f64();
            let t0 = Instant::now();
            r.render_gradients(
                &prep,
                &files,
                params,
                &[],
                Backend::Gpu,
                Precision::F32,
                &|_| {},
                &cancel,
            )
            .unwrap();
            let g = t0.elapsed().as_secs_f64();
            let t0 = Instant::now();
            passes = kernel
                .render_tangents_blocking(&moved.plan, &t)
                .unwrap()
                .passes;
            let k = t0.elapsed().as_secs_f64();
            let kt = kernel.timings();
            let t0 = Instant::now();
            r.vjp(
                &prep,
                &files,
                params,
                &[],
                &w,
                Backend::Gpu,
                Precision::F32,
                &cancel,
            )
            .unwrap();
            let v = t0.elapsed().as_secs_f64();
            if rep > 0 {
                ti.push(i);
                tg.push(g);
                tk.push(k);
                tv.push(v);
                trb.push(kt.readback_s);
                tcp.push(kt.readback_copy_s);
            }
        }
        let (i, g, k, v) = (
            median(&mut ti),
            median(&mut tg),
            median(&mut tk),
            median(&mut tv),
        );
        println!(
            "{case:<7} {:>10.1} {:>13.1} {:>7.2} {:>11.1} {:>7.2} {:>10.1} {:>7.2} {:>7} {:>10.1} {:>8.1}",
            i * 1e3,
            g * 1e3,
            g / i,
            k * 1e3,
            k / i,
            v * 1e3,
            v / i,
            passes,
            median(&mut trb) * 1e3,
            median(&mut tcp) * 1e3
        );
    }
}

#[cfg(not(feature = "gpu"))]
fn gpu_gradients(_cases: &[String], _reps: usize, _params: &[api::Param]) {
    eprintln!("--gradients --gpu: this build has no gpu feature");
    std::process::exit(2);
}

/// `--gpu-readback SIZES_MB`: the read-back's steps timed one by one on the real adapter, for
/// buffers of each size (MiB of f32), median of `reps` after one untimed round: what the
/// renderer's read-back (`gpu::readback`) is made of, and each strategy of
/// `NANOBRAGG_GPU_READBACK` end to end. GB/s are bytes of f32 read per second.
#[cfg(feature = "gpu")]
fn gpu_readback_probe(sizes_mb: &[usize], reps: usize) {
    use nanobragg::gpu::readback::{self as rb, copy_into, Fresh, Readback, Sink, Staging};
    use rayon::prelude::*;
    use std::mem::MaybeUninit;

    let (device, queue, info) = pollster::block_on(nanobragg::gpu::request_device()).expect("GPU");
    let limits = device.limits();
    println!(
        "nanobragg-bench --gpu-readback: {} ({:?}, {:?}), driver {} {}, vendor {:#06x} device {:#06x}, pci {:?}",
        info.name,
        info.backend,
        info.device_type,
        info.driver,
        info.driver_info,
        info.vendor,
        info.device,
        info.device_pci_bus_id
    );
    let sys = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "?".into())
    };
    println!(
        "host: {} threads, rayon {} threads; transparent huge pages: enabled {}, defrag {}; max_buffer_size {} MiB; median of {reps}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        rayon::current_num_threads(),
        sys("/sys/kernel/mm/transparent_hugepage/enabled"),
        sys("/sys/kernel/mm/transparent_hugepage/defrag"),
        limits.max_buffer_size >> 20
    );
    let wait_all = |device: &wgpu::Device| {
        device
            .poll(wgpu::PollType::wait_indefinitely())
            .expect("GPU wait");
    };
    let map = |device: &wgpu::Device, buffer: &wgpu::Buffer| {
        let (tx, rx) = std::sync::mpsc::channel();
        buffer.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        wait_all(device);
        rx.recv().expect("map callback").expect("map");
    };
    // rows: label, then per size the median seconds (None: not measured)
    let mut rows: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    let put = |rows: &mut Vec<(String, Vec<Option<f64>>)>, k: usize, label: &str, v: f64| match rows
        .iter_mut()
        .find(|r| r.0 == label)
    {
        Some(r) => r.1[k] = Some(v),
        None => {
            let mut cells = vec![None; sizes_mb.len()];
            cells[k] = Some(v);
            rows.push((label.to_string(), cells));
        }
    };
    let strategies = [
        "plain",
        "parallel",
        "plain+huge",
        "parallel+huge",
        "chunked:4",
        "chunked:8",
        "chunked:8+huge",
    ];
    for (k, &mb) in sizes_mb.iter().enumerate() {
        let n = (mb << 20) / 4;
        let bytes = (n * 4) as u64;
        if bytes > limits.max_buffer_size || n == 0 {
            println!("{mb} MiB: skipped (max_buffer_size)");
            continue;
        }
        let data: Vec<f32> = (0..n).map(|i| (i % 1_000_003) as f32 * 0.25).collect();
        let usage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST;
        let src = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("probe source"),
            size: bytes,
            usage,
            mapped_at_creation: false,
        });
        queue.write_buffer(&src, 0, bytemuck::cast_slice(&data));
        queue.submit([]);
        wait_all(&device);
        let dst = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("probe staging"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut reused = vec![1f32; n];
        let mut times: Vec<(&str, Vec<f64>)> = Vec::new();
        let time = |times: &mut Vec<(&str, Vec<f64>)>, label: &'static str, s: f64| match times
            .iter_mut()
            .find(|t| t.0 == label)
        {
            Some(t) => t.1.push(s),
            None => times.push((label, vec![s])),
        };
        for rep in 0..=reps {
            let mut step: Vec<(&'static str, f64)> = Vec::new();
            let t = Instant::now();
            let mut enc = device.create_command_encoder(&Default::default());
            enc.copy_buffer_to_buffer(&src, 0, &dst, 0, bytes);
            let idx = queue.submit([enc.finish()]);
            device
                .poll(wgpu::PollType::Wait {
                    submission_index: Some(idx),
                    timeout: None,
                })
                .expect("GPU wait");
            step.push((
                "(a) GPU copy to staging: encode, submit, wait",
                t.elapsed().as_secs_f64(),
            ));
            let t = Instant::now();
            map(&device, &dst);
            step.push((
                "(b) map_async + poll until mapped",
                t.elapsed().as_secs_f64(),
            ));
            {
                let mapped = dst.slice(..).get_mapped_range().expect("mapped range");
                let v: &[f32] = bytemuck::cast_slice(&mapped);
                let t = Instant::now();
                let s: f32 = v.iter().fold(0.0, |a, &x| a + x);
                std::hint::black_box(s);
                step.push((
                    "(r) read mapped range only (sum), 1 thread",
                    t.elapsed().as_secs_f64(),
                ));
                let t = Instant::now();
                let s: f32 = v
                    .par_chunks(1 << 16)
                    .map(|c| c.iter().fold(0.0, |a, &x| a + x))
                    .sum();
                std::hint::black_box(s);
                step.push((
                    "(r) read mapped range only (sum), rayon",
                    t.elapsed().as_secs_f64(),
                ));
                let fresh32 = |par: bool, huge: bool| {
                    let t = Instant::now();
                    let mut f = Fresh::<f32>::new(n, huge);
                    copy_into(f.slots(), v, par);
                    // SAFETY: copy_into wrote all n slots
                    let out = unsafe { f.finish() };
                    let s = t.elapsed().as_secs_f64();
                    assert!(out[n / 3] == data[n / 3] && out[n - 1] == data[n - 1]);
                    let t = Instant::now();
                    drop(out);
                    (s, t.elapsed().as_secs_f64())
                };
                let (s, free) = fresh32(false, false);
                step.push(("(c) into a fresh Vec<f32>, 1 thread", s));
                step.push(("    (free of that Vec, not in (c))", free));
                step.push(("(c) ... 1 thread, +huge", fresh32(false, true).0));
                step.push(("(d) into a fresh Vec<f32>, rayon", fresh32(true, false).0));
                step.push(("(d) ... rayon, +huge", fresh32(true, true).0));
                let t = Instant::now();
                reused.copy_from_slice(v);
                step.push((
                    "(e) into a reused, touched Vec<f32>, 1 thread",
                    t.elapsed().as_secs_f64(),
                ));
                let t = Instant::now();
                reused
                    .par_chunks_mut(1 << 16)
                    .zip(v.par_chunks(1 << 16))
                    .for_each(|(d, s)| d.copy_from_slice(s));
                step.push(("(e) ... reused, rayon", t.elapsed().as_secs_f64()));
                assert!(reused[n / 2] == data[n / 2]);
                let fresh64 = |par: bool, huge: bool| {
                    let t = Instant::now();
                    let mut f = Fresh::<f64>::new(n, huge);
                    copy_into(f.slots(), v, par);
                    // SAFETY: copy_into wrote all n slots
                    let out = unsafe { f.finish() };
                    let s = t.elapsed().as_secs_f64();
                    assert!(out[n - 1] == data[n - 1] as f64);
                    s
                };
                step.push(("(f) f32 -> fresh Vec<f64>, 1 thread", fresh64(false, false)));
                step.push(("(f) ... rayon", fresh64(true, false)));
                step.push(("(f) ... rayon, +huge", fresh64(true, true)));
                let t = Instant::now();
                let w: Vec<f64> = reused.iter().map(|&x| x as f64).collect();
                std::hint::black_box(&w);
                step.push((
                    "(f) host Vec<f32> -> Vec<f64> by collect (before)",
                    t.elapsed().as_secs_f64(),
                ));
            }
            let t = Instant::now();
            dst.unmap();
            step.push(("(g) unmap", t.elapsed().as_secs_f64()));
            // the whole read-back as the renderer reads it, into a fresh vector
            let read_all = |staging: &Staging, mode: Readback, huge: bool| -> Vec<f32> {
                let mut out = Fresh::<f32>::new(n, huge);
                let no_tail: &mut [MaybeUninit<f32>] = &mut [];
                pollster::block_on(rb::read(
                    &device,
                    &queue,
                    &src,
                    staging,
                    &mut Sink {
                        head: out.slots(),
                        tail: no_tail,
                    },
                    mode,
                ))
                .expect("read");
                // SAFETY: read wrote all n values
                unsafe { out.finish() }
            };
            // each strategy end to end, as the renderer reads (its staging kept across reps)
            for name in strategies {
                let mode = Readback::parse(name).expect("strategy");
                let staging = Staging::new(&device, bytes, mode);
                // first use of these buffers: untimed (the renderer keeps its staging)
                let first = read_all(&staging, mode, mode.huge_pages);
                assert!(first == data, "{name}: read-back differs");
                drop(first);
                let t = Instant::now();
                std::hint::black_box(read_all(&staging, mode, mode.huge_pages));
                let label: &'static str = match name {
                    "plain" => "(h) whole read-back, plain (before this change)",
                    "parallel" => "(h) whole read-back, parallel",
                    "plain+huge" => "(h) whole read-back, plain+huge",
                    "parallel+huge" => "(h) whole read-back, parallel+huge",
                    "chunked:4" => "(h) whole read-back, chunked:4",
                    "chunked:8" => "(h) whole read-back, chunked:8",
                    _ => "(h) whole read-back, chunked:8+huge",
                };
                step.push((label, t.elapsed().as_secs_f64()));
            }
            // a new staging buffer every time (what a change of shape costs the renderer)
            let mode = Readback::parse("parallel").expect("strategy");
            let t = Instant::now();
            let staging = Staging::new(&device, bytes, mode);
            std::hint::black_box(read_all(&staging, mode, false));
            drop(staging);
            step.push((
                "(i) parallel with a new staging buffer",
                t.elapsed().as_secs_f64(),
            ));
            if rep > 0 {
                for (label, s) in step {
                    time(&mut times, label, s);
                }
            }
        }
        for (label, mut v) in times {
            put(&mut rows, k, label, median(&mut v));
        }
    }
    print!("| step |");
    for mb in sizes_mb {
        print!(" {mb} MiB: ms (GB/s) |");
    }
    println!();
    println!("|---|{}", "---|".repeat(sizes_mb.len()));
    for (label, cells) in rows {
        print!("| {label} |");
        for (k, c) in cells.iter().enumerate() {
            match c {
                Some(s) => {
                    let gbs = (sizes_mb[k] << 20) as f64 / s / 1e9;
                    print!(" {:.2} ({gbs:.1}) |", s * 1e3)
                }
                None => print!(" - |"),
            }
        }
        println!();
    }
}

#[cfg(not(feature = "gpu"))]
fn gpu_readback_probe(_sizes_mb: &[usize], _reps: usize) {
    eprintln!("--gpu-readback: this build has no gpu feature");
    std::process::exit(2);
}

/// The beam of the realistic preset (`--realistic`, `--realistic-spots`).
const REALISTIC_BEAM: &str = "-flux 1e12 -exposure 0.5 -beamsize 0.001";

/// The realistic preset's spots, prepared with MODEL's table installed (its structure factors
/// computed once, timed on stderr), as the page's worker prepares them.
fn realistic_prepared(model: &str) -> api::Prepared {
    use nanobragg::realistic::{self, SfCache};
    let never = AtomicBool::new(false);
    let bytes = std::fs::read(model).unwrap_or_else(|e| panic!("{model}: {e}"));
    let mut slot = None;
    SfCache::load(&mut slot, "1pfe.cif", &bytes).expect("model");
    let cache = slot.as_mut().unwrap();
    let mut w = bench_words(&format!(
        "-detector eiger2-4m -distance 120 -lambda 1 -xtalsize 0.001 -mosaic 0.3 \
         -mosaic_domains 12 -misset_seed 3 -misset random {REALISTIC_BEAM} -oversample 1"
    ));
    w.extend(cache.crystal_words());
    let mut prep = api::prepare(&w, &MemFiles::default()).expect("prepare");
    let t = Instant::now();
    cache
        .ensure(realistic::needed_d_min(&prep).unwrap(), &|_| {}, &never)
        .unwrap();
    eprintln!(
        "structure factors (once, untimed below): {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let (grid, _) = cache.table.as_ref().unwrap();
    realistic::install_table(&mut prep, grid, "1pfe.cif");
    prep
}

fn bench_words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// `--realistic-spots MODEL [REPS]`: the realistic preset's spots alone (F at the nearest
/// lattice point, f32, rayon's threads), REPS renders (default 5): each time, the median, and
/// an FNV-1a hash of the image's f32 bits (an exact change keeps it).
fn realistic_spots(model: &str, reps: usize) {
    let never = AtomicBool::new(false);
    let plan = realistic_prepared(model).plan().clone();
    let mut times = Vec::new();
    let mut image = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        image = api::render_cpu(&plan, Precision::F32, &|_| {}, &never).unwrap();
        times.push(t.elapsed().as_secs_f64());
    }
    let hash = image.iter().fold(0xcbf29ce484222325u64, |h, v| {
        v.to_bits()
            .to_le_bytes()
            .iter()
            .fold(h, |h, &b| (h ^ b as u64).wrapping_mul(0x100000001b3))
    });
    let sum: f64 = image.iter().map(|&v| v as f64).sum();
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    println!(
        "realistic spots, {} rayon threads: {} s each, median {:.3} s; image FNV-1a {hash:016x}, \
         sum {sum:.6e}",
        rayon::current_num_threads(),
        times
            .iter()
            .map(|t| format!("{t:.3}"))
            .collect::<Vec<_>>()
            .join(" "),
        sorted[sorted.len() / 2]
    );
}

/// `--noise [SIZE] [REPS] [FLAGS...]`: the counter generator's detector effects as Python's
/// `nb.noisify(img, FLAGS + ["-seed", s])` runs them (noisify's options; FLAGS default
/// `-readout_noise 3 -adc 40`, with noisify's default 3 % calibration error) on case (a)'s SIZE²
/// f32 image (default 512), REPS calls (default 200) of a new seed each on rayon's threads, the
/// count images handed back after each call as Python's are (`spare::give`): the median
/// and the quartiles of a call, and an FNV-1a digest of the noiseless and noisy counts of seeds
/// 1 to 3 (a change of the code that keeps the counts keeps it). `NANOBRAGG_NOISE_DUMP=FILE`
/// also writes the image's f32 values (little-endian) to FILE.
fn noise(size: usize, reps: usize, flags: &[String]) {
    use nanobragg::noisify::{self, options};
    let never = AtomicBool::new(false);
    let case = api::split_args(&case_args(&format!("a{size}")));
    let prep = api::prepare(&case, &MemFiles::default()).expect("prepare");
    let img = api::render_cpu(prep.plan(), Precision::F32, &|_| {}, &never).unwrap();
    if let Ok(path) = std::env::var("NANOBRAGG_NOISE_DUMP") {
        let bytes: Vec<u8> = img.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    let mean = img.iter().map(|&v| v as f64).sum::<f64>() / img.len() as f64;
    let flags = if flags.is_empty() {
        bench_words("-readout_noise 3 -adc 40")
    } else {
        flags.to_vec()
    };
    let run = |seed: i64| {
        let mut words = bench_words(&format!(
            "-floatfile <image>.bin -detpixels_x {size} -detpixels_y {size} -rng counter"
        ));
        words.extend(flags.iter().cloned());
        words.extend(["-seed".to_string(), seed.to_string()]);
        let opts = options::parse(&words).expect("noisify options");
        let image = Some(std::borrow::Cow::Borrowed(&img[..]));
        let p = options::prepare_with_image(&opts, &MemFiles::default(), 1, image)
            .expect("noisify prepare");
        let e = &p.effects;
        noisify::detect(&p.input, p.width, p.height, e, opts.bits32, &|_| {}, &never)
            .expect("detect")
    };
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for seed in 1..=3 {
        let d = run(seed);
        let noisy = d.noise.map(|n| n.adu).unwrap_or_default();
        for v in d.adu.iter().chain(&noisy) {
            for b in v.to_le_bytes() {
                h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
            }
        }
    }
    let mut times: Vec<f64> = (0..reps)
        .map(|r| {
            let t = Instant::now();
            let d = run(10 + r as i64);
            let ms = t.elapsed().as_secs_f64() * 1e3;
            nanobragg::spare::give(d.adu);
            if let Some(n) = d.noise {
                nanobragg::spare::give(n.adu);
            }
            ms
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "noise {size}x{size} (mean {mean:.3} photons) {}: {} rayon threads, {reps} calls, median \
         {:.3} ms (quartiles {:.3} {:.3}); counts FNV-1a {h:016x}",
        flags.join(" "),
        rayon::current_num_threads(),
        times[reps / 2],
        times[reps / 4],
        times[3 * reps / 4]
    );
}

/// `--realistic`: see the module's docs.
fn realistic(model: &str, reps: usize) {
    use nanobragg::noisify::{self, Generator};
    use nanobragg::plan::Interpolation;
    use nanobragg::realistic::{self, BackgroundCache, DetectorSettings};
    let never = AtomicBool::new(false);
    let words = bench_words;
    let beam = REALISTIC_BEAM;
    let files = MemFiles::default();
    let prep = realistic_prepared(model);
    let nearest = prep.plan().clone();
    let mut tricubic = nearest.clone();
    tricubic.interpolation = Interpolation::Tricubic;
    let water = words(&format!("-stol water.stol -thickness 0.02 {beam}"));
    let air = words(&format!(
        "-stol air.stol -thickness 10 -MW 29 -density 0.0012 {beam}"
    ));
    let lists: [&[String]; 2] = [&water, &air];
    let fx = DetectorSettings::of_kind(false);
    let p = prep.plan();
    let (w_px, h_px, pixel) = (p.fpixels, p.spixels, p.pixel);
    let timed = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64()
    };
    let names = [
        "spots, F tricubic (upstream's rule)",
        "spots, F nearest (the chain's rule)",
        "background rendered (water + air)",
        "background cached",
        "detector effects, -rng upstream (1 thread)",
        "detector effects, -rng counter",
    ];
    let mut times = vec![Vec::new(); names.len()];
    let mut bg_cache = BackgroundCache::default();
    let mut sum = Vec::new();
    for _ in 0..reps {
        times[0].push(timed(&mut || {
            api::render_cpu(&tricubic, Precision::F32, &|_| {}, &never).unwrap();
        }));
        let mut spots = Vec::new();
        times[1].push(timed(&mut || {
            spots = api::render_cpu(&nearest, Precision::F32, &|_| {}, &never).unwrap();
        }));
        let mut bg = Vec::new();
        times[2].push(timed(&mut || {
            bg_cache = BackgroundCache::default();
            bg = bg_cache
                .layers(&prep, &lists, &files, &|_, _| {}, &never)
                .unwrap();
        }));
        times[3].push(timed(&mut || {
            bg = bg_cache
                .layers(&prep, &lists, &files, &|_, _| {}, &never)
                .unwrap();
        }));
        sum = realistic::compose(&[&spots, &bg]);
        for (k, rng) in [(4, Generator::Upstream), (5, Generator::Counter)] {
            let e = noisify::Effects {
                rng,
                ..fx.effects(pixel, true)
            };
            times[k].push(timed(&mut || {
                noisify::detect(&sum, w_px, h_px, &e, true, &|_| {}, &never).unwrap();
            }));
        }
    }
    let med = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let m: Vec<f64> = times.iter().map(|t| med(t)).collect();
    println!(
        "realistic still, {w_px}x{h_px} pixels, {} rayon threads, {reps} rounds, medians",
        rayon::current_num_threads()
    );
    println!("| stage | s |\n|---|---:|");
    for (n, t) in names.iter().zip(&m) {
        println!("| {n} | {t:.3} |");
    }
    println!(
        "| before: tricubic + background + upstream effects | {:.3} |",
        m[0] + m[2] + m[4]
    );
    println!(
        "| after, first still: nearest + background + counter effects | {:.3} |",
        m[1] + m[2] + m[5]
    );
    println!(
        "| after, crystal changed: nearest + cached background + counter effects | {:.3} |",
        m[1] + m[3] + m[5]
    );
    assert!(sum.iter().any(|&v| v > 0.0));
}
