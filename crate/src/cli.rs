//! The native command-line program: upstream nanoBragg's flags and files, plus the flags this
//! port adds (`-precision`, `-threads`, `-backend`, `-timings`, `-force`, `-help`). The backend
//! policy and the cost estimate are the library's (`api::Renderer`, `api::estimate_cost`).
//! Output files are written atomically.

use crate::api::{self, Prepared};
use crate::args::{self, RTD};
use crate::cfmt::fmt_g;
use crate::error::{Error, ErrorKind, Result};
use crate::files::DiskFiles;
use crate::io::atomic::{write_atomic, write_atomic_parts};
use crate::resolve::detector::convention_name;
use crate::{io, output, stats};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// Exit status for an error (upstream uses 9 for missing inputs).
pub fn exit_code(e: &Error) -> i32 {
    match e.kind {
        ErrorKind::MissingInput => 9,
        ErrorKind::Usage => 2,
        _ => 1,
    }
}

fn v3(v: [f64; 3]) -> String {
    format!("{} {} {}", fmt_g(v[0]), fmt_g(v[1]), fmt_g(v[2]))
}

fn print_setup(p: &Prepared, out: &mut impl Write) -> std::io::Result<()> {
    let s = &p.setup;
    let d = &s.det;
    let c = &s.crystal;
    writeln!(out, "nanoBragg nanocrystal diffraction simulator (Rust port of James Holton and Ken Frankel's program)")?;
    writeln!(
        out,
        "{} convention selected.",
        convention_name(d.convention).to_lowercase()
    )?;
    writeln!(
        out,
        "pivoting detector around {}",
        if d.pivot == crate::args::Pivot::Beam {
            "direct beam spot"
        } else {
            "sample"
        }
    )?;
    writeln!(
        out,
        "Unit Cell: {}",
        c.cell
            .iter()
            .map(|x| fmt_g(*x))
            .collect::<Vec<_>>()
            .join(" ")
    )?;
    writeln!(out, "volume = {} A^3", fmt_g(c.volume))?;
    writeln!(out, "real-space cell vectors (Angstrom):")?;
    for (name, v) in [("a", c.a0), ("b", c.b0), ("c", c.c0)] {
        writeln!(
            out,
            "  {name} = {}",
            v3([v[0] * 1e10, v[1] * 1e10, v[2] * 1e10])
        )?;
    }
    for line in &s.log {
        writeln!(out, "{line}")?;
    }
    let pl = &s.plan;
    writeln!(out, "  structure factors: {}", s.hkl_source)?;
    writeln!(
        out,
        "  {} lattice: {}x{}x{} cells, {} interpolation",
        format!("{:?}", pl.shape).to_lowercase(),
        pl.na,
        pl.nb,
        pl.nc,
        if pl.interpolation == crate::plan::Interpolation::Tricubic {
            "tricubic"
        } else {
            "no"
        }
    )?;
    writeln!(
        out,
        "  wave={} meters, Kahn polarization factor: {:.6}",
        fmt_g(s.lambda0),
        pl.polar_k
    )?;
    writeln!(out, "  incident fluence: {} photons/m^2", fmt_g(s.fluence))?;
    writeln!(
        out,
        "  distance={} detsize={}x{}  pixel={} meters ({}x{} pixels)",
        fmt_g(d.distance),
        fmt_g(d.detsize_f),
        fmt_g(d.detsize_s),
        fmt_g(d.pixel),
        d.fpixels,
        d.spixels
    )?;
    writeln!(
        out,
        "  sensor is {} m thick in {} layers with mu= {}",
        fmt_g(pl.thick),
        pl.thicksteps,
        fmt_g(pl.mu)
    )?;
    writeln!(out, "  Xbeam={} Ybeam={}", fmt_g(d.xbeam), fmt_g(d.ybeam))?;
    writeln!(out, "  Fbeam={} Sbeam={}", fmt_g(d.fbeam), fmt_g(d.sbeam))?;
    writeln!(
        out,
        "  Fclose={} Sclose={}",
        fmt_g(d.fclose),
        fmt_g(d.sclose)
    )?;
    writeln!(out, "  DIRECTION_OF_DETECTOR_X-AXIS= {}", v3(d.fdet))?;
    writeln!(out, "  DIRECTION_OF_DETECTOR_Y-AXIS= {}", v3(d.sdet))?;
    writeln!(out, "  DIRECTION_OF_DETECTOR_Z-AXIS= {}", v3(d.odet))?;
    writeln!(out, "  INCIDENT_BEAM_DIRECTION= {}", v3(d.beam))?;
    writeln!(out, "  spindle ROTATION_AXIS= {}", v3(d.spindle))?;
    writeln!(out, "  dials origin= {}", v3(d.dials_origin))?;
    writeln!(out, "  twotheta = {} deg", fmt_g(d.twotheta * RTD))?;
    Ok(())
}

fn render(p: &Prepared, threads: Option<usize>) -> Result<api::Rendered> {
    let o = p.options();
    let cancel = AtomicBool::new(false);
    let show = o.progress && std::io::stderr().is_terminal();
    let progress = move |f: f32| {
        if show {
            eprint!("\r{:3.0}% done", f * 100.0);
            if f >= 1.0 {
                eprintln!();
            }
        }
    };
    let mut renderer = api::Renderer::new(threads);
    let r = renderer.render(p.plan(), o.backend, o.precision, &progress, &cancel)?;
    for n in &r.notices {
        eprintln!("{n}");
    }
    if o.timings {
        if let Some(t) = &r.gpu_timings {
            eprintln!("{t}");
        }
    }
    Ok(r)
}

/// The `-nexus` file: the int image (masked pixels -1, as in the miniCBF), or with
/// `-nexus_images N` N frames, frame k rendered from φ0 + k·osc/N over osc/N in phisteps/N
/// steps (at least 1) and converted with the run's int scale (`-scale`, else the whole
/// oscillation's 55000/max).
fn nexus_file(prep: &Prepared, pixels: &[u16], scale: f64) -> Result<Vec<u8>> {
    let s = &prep.setup;
    let o = &s.opts;
    let plan = prep.plan();
    let mask = plan.mask.as_deref();
    let masked = |px: &[u16]| -> Vec<i32> {
        px.iter()
            .enumerate()
            .map(|(i, &v)| {
                if mask.is_some_and(|m| m[i] == 0) {
                    -1
                } else {
                    v as i32
                }
            })
            .collect()
    };
    let n = o.nexus_images.max(1) as usize;
    let mut frames = Vec::with_capacity(n);
    if n == 1 {
        frames.push(masked(pixels));
    } else {
        let steps = (plan.phisteps as i64 / n as i64).max(1);
        for k in 0..n {
            let mut fo = o.clone();
            fo.phi0 = Some(s.phi0 + k as f64 * s.osc / n as f64);
            fo.osc = Some(s.osc / n as f64);
            fo.phisteps = steps;
            fo.phistep = -1.0; // unset: osc/phisteps
            let fp = api::prepare_options(&fo, &DiskFiles)?;
            let image = render(&fp, o.threads)?.image;
            frames.push(masked(&output::int_pixels(&fp.setup, &image, scale)));
        }
    }
    let mut g = nexus_geometry(prep);
    g.osc /= n as f64;
    let refs: Vec<&[i32]> = frames.iter().map(|f| f.as_slice()).collect();
    let opts = io::nexus::NxFrames {
        compression: o.nexus_compression,
        ..Default::default()
    };
    // the frames' chunks are compressed on rayon's pool: the run's -threads bounds it too
    crate::cpu::with_threads(o.threads, || io::nexus::write_nxmx_frames(&g, &refs, &opts))
}

/// The NXmx geometry of a prepared run (nanoBragg's lab frame): the detector as one module, the
/// beam, the spindle with the run's φ0 and whole oscillation, the sensor (a preset's, else the
/// plan's thickness, else 1 nm of Si), saturation 65535 (the int image's limit). The `-nexus`
/// file and the Python dataset tool (`nanobragg.dataset`) write their files from it.
pub fn nexus_geometry(prep: &Prepared) -> io::nexus::NxGeometry {
    let s = &prep.setup;
    let o = &s.opts;
    let plan = prep.plan();
    let mask = plan.mask.as_deref();
    let d = &s.det;
    // dxtbx knows Si, CdTe, GaAs and requires a positive thickness: a detector without a
    // simulated sensor (or a CCD's phosphor) is written as 1 nm of silicon, a parallax shift
    // below 1e-9 mm
    const NO_SENSOR: f64 = 1e-9;
    let (material, thickness) = match o.preset {
        Some(p) if p.sensor == "Silicon" => ("Si", p.sensor_thickness_um * 1e-6),
        Some(p) if p.sensor == "CdTe" => ("CdTe", p.sensor_thickness_um * 1e-6),
        Some(_) => ("Si", NO_SENSOR),
        None if plan.thick > 0.0 => ("Si", plan.thick),
        None => ("Si", NO_SENSOR),
    };
    io::nexus::NxGeometry {
        beam: d.beam,
        wavelength: s.lambda0 * 1e10,
        panels: nexus_panels(plan),
        image_size: (plan.fpixels, plan.spixels),
        sensor_material: material.into(),
        sensor_thickness: thickness,
        // the int image's limit
        saturation: 65535,
        spindle: d.spindle,
        phi_start: s.phi0 * RTD,
        osc: s.osc * RTD,
        exposure: o.exposure,
        mask: mask.map(|m| m.to_vec()),
        description: o
            .preset
            .map_or("nanoBragg simulation".to_string(), |p| p.label.to_string()),
    }
}

/// The plan's panels as NXdetector_module groups: one panel is `module` (as before panels);
/// several keep their names (`/` and `.` made `_`) when these are distinct and sort in panel
/// order, else each is prefixed `mNN_` with its index: readers (dxtbx through h5py) list a
/// group's members in name order, and the panel order must survive.
fn nexus_panels(plan: &crate::plan::Plan) -> Vec<io::nexus::NxPanel> {
    let mut names: Vec<String> = if plan.panels.len() == 1 {
        vec!["module".to_string()]
    } else {
        plan.panels
            .iter()
            .map(|p| p.name.replace(['/', '.'], "_"))
            .collect()
    };
    if names.windows(2).any(|w| w[0] >= w[1]) || names.iter().any(|n| n.is_empty()) {
        let w = (names.len() - 1).to_string().len();
        for (i, n) in names.iter_mut().enumerate() {
            *n = format!("m{i:0w$}_{n}");
        }
    }
    plan.panels
        .iter()
        .zip(names)
        .map(|(p, name)| io::nexus::NxPanel {
            name,
            fast_pixels: p.size[0],
            slow_pixels: p.size[1],
            pixel: p.pixel,
            origin: p.origin,
            fast: p.fdet,
            slow: p.sdet,
            data_origin: (p.data_origin[0], p.data_origin[1]),
        })
        .collect()
}

/// The rendered detector as a CrystFEL geometry file (`-geomout`): the NXmx file's panels, for
/// its `/entry/data/data` (CrystFEL reads no NeXus geometry).
pub fn geom_file(prep: &Prepared) -> String {
    let plan = prep.plan();
    let panels: Vec<io::geom::LabPanel> = nexus_panels(plan)
        .into_iter()
        .zip(&plan.panels)
        .map(|(n, p)| io::geom::LabPanel {
            name: n.name,
            data_origin: p.data_origin,
            size: p.size,
            pixel: p.pixel,
            origin: p.origin,
            fast: p.fdet,
            slow: p.sdet,
            saturation: p.saturation,
        })
        .collect();
    let what = match plan.panels.len() {
        1 => "one panel".to_string(),
        n => format!("{n} panels"),
    };
    io::geom::write_geom(&panels, prep.setup.lambda0 * 1e10, &what)
}

/// Prints `writing NAME as WHAT` and writes the file atomically.
pub fn write_file(name: &str, parts: &[&[u8]], what: &str, out: &mut impl Write) -> Result<()> {
    let _ = writeln!(out, "writing {name} as {what}");
    write_atomic_parts(Path::new(name), parts)
}

/// A program's front (nanobragg, nonbragg, noisify): its name, usage texts, banner and parser,
/// so that the start and end of a run are written once.
pub struct Program<O> {
    pub name: &'static str,
    /// The short usage printed when a required input is missing.
    pub short_usage: &'static str,
    /// The full `-help` text, derived from the program's flag table.
    pub usage: fn() -> String,
    /// The program's first line on stdout (upstream's banner), printed once the words parsed.
    pub banner: Option<&'static str>,
    pub parse: fn(&[String]) -> Result<O>,
    /// Whether the options ask for `-help`.
    pub help: fn(&O) -> bool,
}

impl<O> Program<O> {
    /// Runs the program on `words`: parse them, print the usage for `-help` (and stop), else
    /// the banner and `body`; returns the exit status ([`finish`]).
    pub fn run(&self, words: &[String], body: impl FnOnce(O) -> Result<()>) -> i32 {
        let result = (self.parse)(words).and_then(|o| {
            if (self.help)(&o) {
                print!("{}", (self.usage)());
                return Ok(());
            }
            if let Some(banner) = self.banner {
                println!("{banner}");
            }
            body(o)
        });
        finish(self.name, self.short_usage, result)
    }
}

/// The end of a program run (nanobragg, nonbragg, noisify): the exit status, with the error
/// on stderr (and the usage text when an input is missing).
fn finish(program: &str, usage: &str, result: Result<()>) -> i32 {
    match result {
        Ok(()) => 0,
        Err(e) => {
            if e.kind == ErrorKind::MissingInput {
                eprint!("{usage}");
            }
            eprintln!("{program}: error: {}", flagged_message(&e));
            exit_code(&e)
        }
    }
}

/// An error's message for the command line: led by its flag when it has one the message does
/// not name (`-hkl: cannot read file 'x': it is a directory, …`), so that the user sees which
/// of the command's files or values it is about.
fn flagged_message(e: &Error) -> String {
    match e.flag.as_deref() {
        Some(flag) if !names_flag(&e.message, flag) => format!("{flag}: {}", e.message),
        _ => e.message.to_string(),
    }
}

/// Whether `message` holds `flag` as a word (`-N` is not named by `-Na`, nor `-mat` by `-matrix`
/// or a file name `x-mat`).
fn names_flag(message: &str, flag: &str) -> bool {
    let part_of_word = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    message.match_indices(flag).any(|(i, _)| {
        let before = message[..i].chars().next_back();
        let after = message[i + flag.len()..].chars().next();
        !before.is_some_and(part_of_word) && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// Run the program; returns the process exit status.
/// The tangent image files of `-gradients`/`-gradfile` (`PREFIX_<name>.bin`), checked: the
/// two flags go together.
fn gradient_files(o: &args::Options) -> Result<Vec<String>> {
    match (&o.gradfile, o.gradients.is_empty()) {
        (None, true) => Ok(Vec::new()),
        (Some(_), true) => Err(Error::usage(
            "-gradfile: give the parameters with -gradients (e.g. -gradients rot_x,cell_a)",
        )
        .with_flag("-gradfile")),
        (None, false) => Err(Error::usage(
            "-gradients: give -gradfile PREFIX (the derivatives go to PREFIX_<name>.bin)",
        )
        .with_flag("-gradients")),
        (Some(prefix), false) => Ok(o
            .gradients
            .iter()
            .map(|p| format!("{prefix}_{}.bin", p.name()))
            .collect()),
    }
}

pub fn run(words: &[String]) -> i32 {
    let t0 = Instant::now();
    let program = Program {
        name: "nanobragg",
        short_usage: args::SHORT_USAGE,
        usage: args::usage,
        banner: None,
        parse: args::parse,
        help: |o: &args::Options| o.help,
    };
    program.run(words, |o| run_inner(o, t0))
}

fn run_inner(o: args::Options, t0: Instant) -> Result<()> {
    let prep = api::prepare_options(&o, &DiskFiles)?;
    let grad_files = gradient_files(&o)?;
    let mut outputs: Vec<(&str, Option<&str>)> = vec![
        ("-floatfile", Some(&o.floatfile)),
        ("-intfile", Some(&o.intfile)),
        ("-pgmfile", o.write_pgm.then_some(&o.pgmfile)),
        ("-noisefile", o.write_noise.then_some(&o.noisefile)),
        ("-predict", o.predict.as_deref()),
        ("-cbffile", o.cbffile.as_deref()),
        ("-nexus", o.nexus.as_deref()),
        ("-geomout", o.geomout.as_deref()),
        ("-hklout", o.hklout.as_deref()),
        (
            "-dump (structure-factor cache)",
            (o.hkl.is_some() || o.pdb.is_some()).then_some(o.dump.as_str()),
        ),
    ];
    outputs.extend(grad_files.iter().map(|f| ("-gradfile", Some(f.as_str()))));
    io::atomic::check_outputs(&outputs)?;
    let cost = api::check_cost(&prep, o.gradients.len())?;
    if cost.seconds(o.precision) > 60.0
        && api::choose_backend(o.backend, o.precision).engine == api::Engine::Cpu
    {
        eprintln!("note: this render needs {}", cost.describe(o.precision));
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for w in &prep.setup.warnings {
        eprintln!("{w}");
    }
    let _ = print_setup(&prep, &mut out);
    // upstream caches structure factors read from -hkl; a table computed from -pdb likewise
    if o.hkl.is_some() || o.pdb.is_some() {
        let bytes = io::hkl::write_fdump(&prep.plan().hkl);
        if let Err(e) = write_atomic(Path::new(&o.dump), &bytes) {
            eprintln!("WARNING: could not write {}: {}", o.dump, e.message);
        }
    }
    if let Some(name) = &o.hklout {
        let hkl = &prep.plan().hkl;
        if hkl.hkls == 0 {
            return Err(Error::usage(
                "-hklout: this run has no structure-factor table (only -default_F)",
            )
            .with_flag("-hklout"));
        }
        write_file(
            name,
            &[&io::hkl::write_hkl(hkl)],
            "the structure-factor table (h k l F)",
            &mut out,
        )?;
    }
    if let Some(name) = &o.predict {
        // what is on the image: in-condition spots of a still, crossings of an oscillation
        let opts = crate::predict::PredictOptions {
            on_image: true,
            ..Default::default()
        };
        let pred = crate::predict::predict(&prep.setup, &opts)?;
        let table = crate::predict::table(&pred);
        let n = table.lines().count() - 1;
        write_file(
            name,
            &[table.as_bytes()],
            &format!("{n} predicted reflections"),
            &mut out,
        )?;
    }
    let t_setup = t0.elapsed();
    let t1 = Instant::now();
    let image = if o.gradients.is_empty() {
        render(&prep, o.threads)?.image
    } else {
        // on the engine of the backend policy: the CPU's tangent kernel (its image is the f64
        // kernel's; with -precision f32 the derivatives come from the f32 tangent kernel and the
        // image is rendered as usual beside them), or the GPU's (the image and f32 derivatives
        // in one pass)
        let r = api::Renderer::new(o.threads).render_gradients(
            &prep,
            &DiskFiles,
            &o.gradients,
            &[],
            o.backend,
            o.precision,
            &|_| {},
            &std::sync::atomic::AtomicBool::new(false),
        )?;
        for n in &r.notices {
            eprintln!("{n}");
        }
        let on_gpu = r.engine == api::Engine::Gpu;
        let g = r.gradients;
        for (i, name) in grad_files.iter().enumerate() {
            let t = g.tangent_f32(i);
            write_file(
                name,
                &[&output::le_bytes(&t)],
                &format!(
                    "∂image/∂{} (photons/pixel per {}) as {} 4-byte floats",
                    g.params[i].name(),
                    g.params[i].unit(),
                    t.len()
                ),
                &mut out,
            )?;
        }
        if o.precision == api::Precision::F64 || on_gpu {
            g.image
        } else {
            render(&prep, o.threads)?.image
        }
    };
    let t_render = t1.elapsed();
    let t2 = Instant::now();
    if o.printout {
        print_pixels(&prep, &mut out);
    }
    let plan = prep.plan();
    // One pass after the render: the float file is written on its own thread while the
    // statistics and the integer image (rows in parallel) are computed.
    let _ = writeln!(
        out,
        "writing {} as {} 4-byte floats",
        o.floatfile,
        image.len()
    );
    let (written, st, scale, pixels) = std::thread::scope(|sc| {
        let writer =
            sc.spawn(|| write_atomic_parts(Path::new(&o.floatfile), &[&output::le_bytes(&image)]));
        let first = stats::first_pass(plan, &image);
        let scale = output::int_scale(&prep.setup, &first);
        let rmsd = || stats::with_rmsd(plan, &image, first);
        let ints = || output::int_pixels(&prep.setup, &image, scale);
        let (st, pixels) = if image.len() >= output::PARALLEL_FROM {
            rayon::join(rmsd, ints)
        } else {
            (rmsd(), ints())
        };
        let written = writer.join().unwrap_or_else(|_| {
            Err(Error::output(format!(
                "-floatfile {}: the writer failed",
                o.floatfile
            )))
        });
        (written, st, scale, pixels)
    });
    written?;
    let _ = writeln!(
        out,
        "max_I = {}  at {} {}",
        fmt_g(st.max_i),
        fmt_g(st.max_fdet),
        fmt_g(st.max_sdet)
    );
    let _ = writeln!(
        out,
        "mean= {} rms= {} rmsd= {}",
        fmt_g(st.mean),
        fmt_g(st.rms),
        fmt_g(st.rmsd)
    );
    let _ = writeln!(out, "intfile_scale = {}", fmt_g(scale));
    let header = output::smv_header(&prep.setup);
    let header = io::smv::header_block(&header)?;
    write_file(
        &o.intfile,
        &[&header, &output::le_bytes(&pixels)],
        "2-byte integers",
        &mut out,
    )?;
    if let Some(name) = &o.cbffile {
        let s = &prep.setup;
        let mut info = output::cbf_info(
            &s.det,
            o.preset,
            "nanoBragg simulation",
            s.lambda0 * 1e10,
            o.exposure,
            s.phi0 * RTD,
            s.osc * RTD,
            plan.thick,
        );
        output::cbf_beam(&mut info, &o);
        let px = output::cbf_pixels(&pixels, plan.mask.as_deref(), &mut info);
        let file = io::cbf::write_minicbf(&info, plan.fpixels, plan.spixels, &px);
        write_file(name, &[&file], "miniCBF (the int image)", &mut out)?;
    }
    if let Some(name) = &o.nexus {
        let file = nexus_file(&prep, &pixels, scale)?;
        let what = match o.nexus_images {
            1 => "NXmx (the int image)".to_string(),
            n => format!("NXmx ({n} images of the oscillation)"),
        };
        write_file(name, &[&file], &what, &mut out)?;
    }
    if let Some(name) = &o.geomout {
        let text = geom_file(&prep);
        write_file(name, &[text.as_bytes()], "CrystFEL geometry", &mut out)?;
    }
    drop(pixels);
    if o.write_pgm {
        let ps = output::pgm_scale(&prep.setup, &st, scale);
        let _ = writeln!(out, "pgm_scale = {}", fmt_g(ps));
        let pgm = io::pgm::write_pgm(
            plan.fpixels,
            plan.spixels,
            ps,
            &output::pgm_bytes(&prep.setup, &image, ps),
        );
        write_file(&o.pgmfile, &[&pgm], "1-byte integers", &mut out)?;
    }
    if o.write_noise {
        let (px, sum, overloads) = output::noise_pixels(&prep.setup, &image);
        let _ = writeln!(
            out,
            "{:.0} photons on noise image ({} overloads)",
            sum, overloads
        );
        write_file(
            &o.noisefile,
            &[&header, &output::le_bytes(&px)],
            "2-byte integers",
            &mut out,
        )?;
    }
    if o.timings {
        let terms = plan.pixel_count() as f64 * plan.terms_per_pixel() as f64;
        let _ = writeln!(
            out,
            "timings: setup {:.1} ms, render {:.1} ms ({:.3e} pixel-steps/s), output {:.1} ms",
            t_setup.as_secs_f64() * 1e3,
            t_render.as_secs_f64() * 1e3,
            terms / t_render.as_secs_f64(),
            t2.elapsed().as_secs_f64() * 1e3
        );
    }
    Ok(())
}

/// `-printout` / `-printout_pixel f s`: the last term of the chosen pixel (or of every rendered
/// pixel), evaluated again with the f64 kernel.
fn print_pixels(prep: &Prepared, out: &mut impl Write) {
    let plan = prep.plan();
    let ep = crate::cpu::pixel64::ExactCtx::new(plan);
    let first = crate::cpu::first_rendered_pixel(plan);
    let interp = plan.interpolation == crate::plan::Interpolation::Tricubic;
    let lambda_a = prep.setup.lambda0 * 1e10;
    let chosen = prep.options().printout_pixel;
    for s in 0..plan.spixels {
        for f in 0..plan.fpixels {
            if let Some((pf, ps)) = chosen {
                if pf >= 0 && (pf as usize != f || ps as usize != s) {
                    continue;
                }
            }
            if !plan.renders(f, s) {
                continue;
            }
            let t = crate::cpu::pixel64::trace_pixel(
                &ep,
                f,
                s,
                first == Some(s * plan.fpixels + f),
                interp,
            );
            let p = t.pos;
            let twotheta = (p[1] * p[1] + p[2] * p[2]).sqrt().atan2(p[0]);
            let _ = writeln!(
                out,
                "{f:4} {s:4} : stol = {} or {}",
                fmt_g(t.stol),
                fmt_g((twotheta / 2.0).sin() / lambda_a)
            );
            let _ = writeln!(out, "at {}", v3(p));
            let _ = writeln!(
                out,
                "hkl= {:.6} {:.6} {:.6}  hkl0= {} {} {}",
                t.hkl[0], t.hkl[1], t.hkl[2], t.hkl0[0] as i64, t.hkl0[1] as i64, t.hkl0[2] as i64
            );
            let _ = writeln!(
                out,
                " F_cell={}  F_latt={}   I = {}",
                fmt_g(t.f_cell),
                fmt_g(t.f_latt),
                fmt_g(t.i_sum)
            );
            let g10 = |x: f64| format!("{:>15}", crate::cfmt::fmt_g_prec(x, 10));
            let _ = writeln!(out, "I/steps {}", g10(t.i_sum / plan.steps as f64));
            let _ = writeln!(out, "polar   {}", g10(t.polar));
            let _ = writeln!(out, "omega   {}", g10(t.omega));
            let _ = writeln!(out, "capfrac {}", g10(t.capture));
            let _ = writeln!(out, "pixel   {}", g10(t.value as f64));
            let _ = writeln!(out, "real-space cell vectors (Angstrom):");
            let _ = writeln!(out, "     {:<10}  {:<10}  {:<10}", "a", "b", "c");
            for (row, name) in ["X", "Y", "Z"].iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{name}: {:11.8} {:11.8} {:11.8}",
                    t.cell[0][row] * 1e10,
                    t.cell[1][row] * 1e10,
                    t.cell[2][row] * 1e10
                );
            }
        }
    }
}

#[cfg(test)]
mod flag_tests {
    use super::*;

    #[test]
    fn an_error_is_led_by_its_flag_unless_it_names_it() {
        let e = Error::input("cannot read file 'x': it is a directory").with_flag("-hkl");
        assert_eq!(
            flagged_message(&e),
            "-hkl: cannot read file 'x': it is a directory"
        );
        let e = Error::usage("-hkl x: expected a file").with_flag("-hkl");
        assert_eq!(flagged_message(&e), "-hkl x: expected a file");
        // a longer flag that starts with it is not it
        let e = Error::usage("-Na 0.5: read as 1").with_flag("-N");
        assert_eq!(flagged_message(&e), "-N: -Na 0.5: read as 1");
        // a file name that holds the flag is not the flag
        let e = Error::input("cannot read file 'x-mat': it is a directory").with_flag("-mat");
        assert_eq!(
            flagged_message(&e),
            "-mat: cannot read file 'x-mat': it is a directory"
        );
        let e = Error::input("(-mat A.mat) bad").with_flag("-mat");
        assert_eq!(flagged_message(&e), "(-mat A.mat) bad");
        let e = Error::input("no flag here");
        assert_eq!(flagged_message(&e), "no flag here");
    }
}
