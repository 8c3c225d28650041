//! Benchmark harness (`npm run bench`): per case and backend/precision, the render wall time
//! (median of several runs), pixel-steps per second and the peak memory of a process that only
//! prepares and renders. Each measurement runs in a child process of this binary so that peak
//! memory is per case. With `NANOBRAGG_UPSTREAM=/path/to/nanoBragg` it also times upstream's C
//! program and ours end to end on the same command line, interleaved, and prints the ratios.
//!
//! usage: nanobragg-bench [--quick] [--cases a1024,a4096,b] [--reps N] [--gpu] [--gpu-reps N]
//!        nanobragg-bench --gradients [--f32 | --gpu] [--cases …] [--reps N]
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
//! back; host tangent included).

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
    let render = |r: &mut api::Renderer| {
        let out = r
            .render(plan, backend, precision, &|_| {}, &cancel)
            .expect("render");
        std::hint::black_box(out.image);
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
    if argv.len() >= 5 && argv[1] == "--child" {
        child(&argv[2], &argv[3], argv[4].parse().unwrap());
        return;
    }
    let mut cases = vec!["a1024".to_string(), "a4096".to_string(), "b".to_string()];
    let mut reps = 5usize;
    let mut gpu = false;
    let mut gpu_reps = 10usize;
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
        "nanobragg-bench: {threads} threads, render only (prepare excluded), median of {reps}"
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
            if let Some(line) = err.lines().find(|l| l.starts_with("adapter:")) {
                println!("        {line}");
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
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!(
        "nanobragg-bench --gradients: {precision:?}, {threads} threads, median of {reps}, interleaved; parameters {}",
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
        "nanobragg-bench --gradients --gpu: {}, median of {reps}, interleaved, warm; parameters {}",
        pollster::block_on(r.init_gpu()).expect("GPU"),
        names.join(",")
    );
    println!(
        "{:<7} {:>10} {:>13} {:>7} {:>11} {:>7} {:>10} {:>7} {:>7}",
        "case",
        "image_ms",
        "gradients_ms",
        "ratio",
        "kernel_ms",
        "ratio",
        "vjp_ms",
        "ratio",
        "passes"
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
            }
        }
        let (i, g, k, v) = (
            median(&mut ti),
            median(&mut tg),
            median(&mut tk),
            median(&mut tv),
        );
        println!(
            "{case:<7} {:>10.1} {:>13.1} {:>7.2} {:>11.1} {:>7.2} {:>10.1} {:>7.2} {:>7}",
            i * 1e3,
            g * 1e3,
            g / i,
            k * 1e3,
            k / i,
            v * 1e3,
            v / i,
            passes
        );
    }
}

#[cfg(not(feature = "gpu"))]
fn gpu_gradients(_cases: &[String], _reps: usize, _params: &[api::Param]) {
    eprintln!("--gradients --gpu: this build has no gpu feature");
    std::process::exit(2);
}
