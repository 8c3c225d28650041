//! The `nonbragg` program: upstream nonBragg's flags, outputs and printed lines (the numbers in
//! the same `%g` form); output files are written atomically.

use super::options::{self, SHORT_USAGE};
use super::{prepare, render, smv_header, statistics, Setup};
use crate::cfmt::fmt_g;
use crate::cli::write_file;
use crate::error::Result;
use crate::files::DiskFiles;
use crate::io::cbf::write_minicbf;
use crate::output::{
    cbf_info, cbf_pixels, int_pixels_roi, le_bytes, noise_pixels_roi, pgm_bytes_roi,
};
use std::io::{IsTerminal, Write};
use std::sync::atomic::AtomicBool;

/// Runs the program; returns the exit status (2: command line, 9: no table, 1: other).
pub fn run(words: &[String]) -> i32 {
    let program = crate::cli::Program {
        name: "nonbragg",
        short_usage: SHORT_USAGE,
        usage: options::usage,
        banner: Some(
            "nonBragg amorphous material diffraction simulator (Rust port of James Holton and Ken Frankel's program)",
        ),
        parse: options::parse,
        help: |o: &options::NonBraggOptions| o.geo.help,
    };
    program.run(words, run_inner)
}

fn v3(v: [f64; 3]) -> String {
    format!("{} {} {}", fmt_g(v[0]), fmt_g(v[1]), fmt_g(v[2]))
}

fn print_setup(st: &Setup, out: &mut impl Write) -> std::io::Result<()> {
    let o = &st.opts;
    let d = &st.frame.det;
    let p = st.plan();
    let smp = &st.sample;
    for w in &smp.warnings {
        writeln!(out, "{w}")?;
    }
    writeln!(
        out,
        "pivoting detector around {}",
        if d.pivot == crate::args::Pivot::Sample {
            "sample"
        } else {
            "direct beam spot"
        }
    )?;
    if let Some((name, _)) = &o.stol {
        writeln!(out, "reading {name}")?;
    }
    writeln!(out, "  created a total of {} sources:", st.sources.len())?;
    for s in &st.sources {
        writeln!(
            out,
            "{}   {} {}",
            v3(s.position),
            fmt_g(s.weight),
            fmt_g(s.lambda)
        )?;
    }
    let (dispsteps, dispersion, _) =
        crate::resolve::sampling::divergence_like(o.geo.dispsteps, o.geo.dispersion, -1.0, 1.0);
    let (_, hdivrange, hdivstep) = crate::resolve::sampling::divergence_like(
        o.geo.hdivsteps,
        o.geo.hdivrange,
        o.geo.hdivstep,
        1.0,
    );
    let (_, vdivrange, vdivstep) = crate::resolve::sampling::divergence_like(
        o.geo.vdivsteps,
        o.geo.vdivrange,
        o.geo.vdivstep,
        1.0,
    );
    writeln!(
        out,
        "  {} initialized F points (will cubic-spline interpolate between them)",
        st.table.len()
    )?;
    writeln!(
        out,
        "  wave={} meters +/- {}% in {} steps",
        fmt_g(st.lambda0),
        fmt_g(dispersion * 100.0),
        dispsteps
    )?;
    if o.geo.nopolar {
        writeln!(out, "  polarization effect disabled")?;
    } else {
        writeln!(out, "  Kahn polarization factor: {:.6}", o.geo.polar)?;
    }
    if o.geo.curved_det {
        writeln!(
            out,
            "  curved detector: all pixels same distance from origin"
        )?;
    }
    if o.geo.point_pixel {
        writeln!(out, "  pixel obliquity effect disabled")?;
    }
    if o.fmap {
        writeln!(out, "  Fmap mode: plotting structure factor at every pixel")?;
    }
    writeln!(
        out,
        "  incident fluence: {} photons/m^2",
        fmt_g(smp.fluence)
    )?;
    writeln!(
        out,
        "  sample is {} m thick x {} m high x {} m wide, {} g/cm^3 and {} g/mol ({} molecules)",
        fmt_g(smp.x),
        fmt_g(smp.y),
        fmt_g(smp.z),
        fmt_g(smp.density / 1e6),
        fmt_g(smp.molecular_weight),
        fmt_g(smp.molecules)
    )?;
    writeln!(
        out,
        "  distance={} detsize={}x{}  pixel={} meters ({}x{} pixels)",
        fmt_g(d.distance),
        fmt_g(st.detsize_x),
        fmt_g(st.detsize_y),
        fmt_g(d.pixel),
        d.fpixels,
        d.spixels
    )?;
    writeln!(out, "  Xbeam={} Ybeam={}", fmt_g(d.fbeam), fmt_g(d.sbeam))?;
    writeln!(out, "  detector origin: {}", v3(d.pix0))?;
    writeln!(out, "  DIRECTION_OF_DETECTOR_X-AXIS= {}", v3(d.fdet))?;
    writeln!(out, "  DIRECTION_OF_DETECTOR_Y-AXIS= {}", v3(d.sdet))?;
    writeln!(out, "  INCIDENT_BEAM_DIRECTION= {}", v3(d.beam))?;
    writeln!(out, "  POLARIZATION_PLANE_NORMAL= {}", v3(d.polar_axis))?;
    writeln!(
        out,
        "  roi: {} < x < {} && {} < y < {}",
        p.roi.xmin, p.roi.xmax, p.roi.ymin, p.roi.ymax
    )?;
    writeln!(
        out,
        "  hdivrange={} hdivstep={}  radians",
        fmt_g(hdivrange),
        fmt_g(hdivstep)
    )?;
    writeln!(
        out,
        "  vdivrange={} vdivstep={}  radians",
        fmt_g(vdivrange),
        fmt_g(vdivstep)
    )?;
    writeln!(out, "  {} divergence steps", st.divsteps)?;
    writeln!(out, "  {} sources", st.sources.len())?;
    writeln!(out, "  {} pixel oversample steps", p.oversample)?;
    if o.geo.write_noise {
        writeln!(out, "\n  noise image paramters:")?;
        writeln!(out, "  seed: {}", st.noise_seed)?;
    }
    Ok(())
}

fn run_inner(o: options::NonBraggOptions) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let st = prepare(&o, &DiskFiles, -crate::resolve::clock_seconds())?;
    for w in &st.warnings {
        // a shared row's warning may carry nanobragg's prefix already
        eprintln!("WARNING: {}", w.trim_start_matches("WARNING: "));
    }
    let _ = print_setup(&st, &mut out);
    let _ = out.flush();

    let show = o.geo.progress && std::io::stderr().is_terminal();
    let progress = move |f: f32| {
        if show {
            eprint!("\r{:3.0}% done", f * 100.0);
        }
    };
    let cancel = AtomicBool::new(false);
    let (image, omega) =
        crate::cpu::with_threads(o.geo.threads, || render(&st, &progress, &cancel))?;
    if show {
        eprintln!();
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "solid angle subtended by detector = {} steradian ( {}% sphere)",
        fmt_g(omega),
        fmt_g(100.0 * omega / 4.0 / std::f64::consts::PI)
    );
    let p = st.plan();
    let stats = statistics(&st, &image);
    write_file(
        &o.geo.floatfile,
        &[&le_bytes(&image)],
        &format!("{} 4-byte floats", image.len()),
        &mut out,
    )?;
    let _ = writeln!(
        out,
        "max_I = {}  at {} {}",
        fmt_g(stats.max_i),
        fmt_g(stats.max_fdet),
        fmt_g(stats.max_sdet)
    );
    let _ = writeln!(
        out,
        "mean= {} rms= {} rmsd= {}",
        fmt_g(stats.mean),
        fmt_g(stats.rms),
        fmt_g(stats.rmsd)
    );
    let scale = if o.geo.scale > 0.0 {
        o.geo.scale
    } else if stats.max_i > 0.0 {
        55000.0 / stats.max_i
    } else {
        1.0
    };
    let _ = writeln!(out, "intfile_scale = {}", fmt_g(scale));
    let header = smv_header(&st)?;
    let ints = int_pixels_roi(p.fpixels, &p.roi, &image, scale, o.geo.adc);
    write_file(
        &o.geo.intfile,
        &[&header, &le_bytes(&ints)],
        "2-byte integers",
        &mut out,
    )?;
    if o.geo.write_pgm {
        let pgm_scale = if o.geo.pgmscale > 0.0 {
            o.geo.pgmscale
        } else if stats.rmsd > 0.0 {
            250.0 / (5.0 * stats.rmsd)
        } else {
            scale
        };
        let _ = writeln!(out, "pgm_scale = {}", fmt_g(pgm_scale));
        let bytes = pgm_bytes_roi(p.fpixels, &p.roi, &image, pgm_scale);
        let pgm = crate::io::pgm::write_pgm(p.fpixels, p.spixels, pgm_scale, &bytes);
        write_file(&o.geo.pgmfile, &[&pgm], "1-byte integers", &mut out)?;
    }
    if o.geo.write_noise {
        let (px, sum, overloads) =
            noise_pixels_roi(p.fpixels, &p.roi, &image, o.geo.adc, st.noise_seed);
        let _ = writeln!(
            out,
            "{sum:.0} photons on noise image ({overloads} overloads)"
        );
        write_file(
            &o.geo.noisefile,
            &[&header, &le_bytes(&px)],
            "2-byte integers",
            &mut out,
        )?;
    }
    if let Some(name) = &o.geo.cbffile {
        let mut info = cbf_info(
            &st.frame.det,
            o.geo.preset,
            "nonBragg simulation",
            st.lambda0 * 1e10,
            o.geo.exposure,
            st.phi0 * crate::args::RTD,
            st.osc * crate::args::RTD,
            0.0,
        );
        let pixels = cbf_pixels(&ints, p.mask.as_deref(), &mut info);
        let file = write_minicbf(&info, p.fpixels, p.spixels, &pixels);
        write_file(name, &[&file], "miniCBF (the int image)", &mut out)?;
    }
    Ok(())
}
