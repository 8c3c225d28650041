//! The `noisify` program: reads a float image, applies the detector effects and writes the
//! noiseless and noisy SMV images, a PGM and optionally a miniCBF, printing what upstream prints
//! (the numbers in the same `%g` form). Output files are written atomically.

use super::options::{self, Prepared, SHORT_USAGE};
use super::psf::{PsfKind, PsfReport};
use super::{detect, to_u16, Detected, MAX_U16, MAX_U32};
use crate::cfmt::fmt_g;
use crate::error::Result;
use crate::files::DiskFiles;
use crate::io::atomic::write_atomic_parts;
use crate::io::cbf::{write_minicbf, CbfInfo};
use crate::output::le_bytes;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// Runs the program; returns the exit status (2: command line, 9: no input image, 1: other).
pub fn run(words: &[String]) -> i32 {
    let program = crate::cli::Program {
        name: "noisify",
        short_usage: SHORT_USAGE,
        usage: options::usage,
        banner: Some("noisify - add noise to pixels (Rust port of James Holton's program)"),
        parse: options::parse,
        help: |o: &options::NoisifyOptions| o.geo.help,
    };
    program.run(words, run_inner)
}

fn psf_lines(r: &PsfReport, out: &mut impl Write) {
    if let Some(m) = r.max_input {
        let _ = writeln!(out, "  maximum input photon/pixel: {}", fmt_g(m));
    }
    if r.skipped {
        let _ = writeln!(out, "WARNING: no photons, PSF skipped");
        return;
    }
    if let Some(rad) = r.auto_radius {
        let _ = writeln!(out, "  auto-selected psf_radius = {rad} pixels");
    }
    let _ = writeln!(out, "adding back {} lost photons", fmt_g(r.lost));
}

fn print_settings(p: &Prepared<'_>, out: &mut impl Write) {
    let o = &p.opts;
    let e = &p.effects;
    let _ = writeln!(
        out,
        "  distance={} detsize={}x{}  pixel={} meters ({}x{} pixels)",
        fmt_g(p.distance),
        fmt_g(p.detsize_x),
        fmt_g(p.detsize_y),
        fmt_g(p.pixel),
        p.width,
        p.height
    );
    let _ = writeln!(out, "  Xbeam={} Ybeam={}", fmt_g(p.xbeam), fmt_g(p.ybeam));
    if let Some(kind) = o.psf {
        let name = match kind {
            PsfKind::Gauss => "Gaussian",
            PsfKind::Fiber => "fiber",
        };
        let _ = write!(
            out,
            "  {name} PSF fwhm = {} um ",
            fmt_g(o.psf_fwhm as f64 * 1e6)
        );
        if o.psf_radius == 0 {
            let _ = writeln!(out, "  with automatic rendering radius");
        }
        let _ = writeln!(out, "  with rendering radius: {}", o.psf_radius);
    }
    let _ = writeln!(out, "  seed: {}", e.seed);
    let _ = writeln!(out, "  calibration noise seed: {}", e.calib_seed);
    let _ = writeln!(
        out,
        "  calibration_noise = {} %",
        fmt_g(e.calibration * 100.0)
    );
    let _ = writeln!(out, "  input file scale = {}", fmt_g(e.scale));
    let _ = writeln!(out, "  readout_noise = {} ADU", fmt_g(e.readout));
    let _ = writeln!(out, "  flicker_noise = {} %", fmt_g(e.flicker * 100.0));
    let _ = writeln!(out, "  quantum_gain = {} ADU/photon", fmt_g(e.gain));
    let _ = writeln!(out, "  adc_offset = {} ADU", fmt_g(e.adc));
    let _ = writeln!(out);
}

fn run_inner(opts: options::NoisifyOptions) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for w in &opts.geo.warnings {
        // a shared row's warning may carry nanobragg's prefix already
        eprintln!("WARNING: {}", w.trim_start_matches("WARNING: "));
    }
    let prep = options::prepare(&opts, &DiskFiles, -crate::resolve::clock_seconds())?;
    for line in &prep.log {
        let _ = writeln!(out, "{line}");
    }
    print_settings(&prep, &mut out);

    let show = std::io::stderr().is_terminal();
    let progress = move |f: f32| {
        if show {
            eprint!("\r{:3.0}% done", f * 100.0);
        }
    };
    let cancel = AtomicBool::new(false);
    let d: Detected = detect(
        &prep.input,
        prep.width,
        prep.height,
        &prep.effects,
        opts.bits32,
        &progress,
        &cancel,
    )?;
    if show {
        eprintln!();
    }
    if d.negative > 0 {
        let _ = writeln!(
            out,
            "WARNING: {} negative intensities in {} (counted as 0 photons)",
            d.negative,
            opts.floatfile.as_deref().unwrap_or_default()
        );
    }
    let _ = writeln!(
        out,
        "maximum value in input file: {} ( {} on photon scale)",
        fmt_g(d.max_input),
        fmt_g(d.max_photons)
    );
    if let (Some(r), Some(psf)) = (&d.noiseless_psf, &prep.effects.psf) {
        let _ = writeln!(
            out,
            "  applying PSF to noiseless image width = {} pixels",
            fmt_g(psf.fwhm_px)
        );
        psf_lines(r, &mut out);
    }

    let header = match &prep.header {
        Some(h) => h.clone(),
        None => options::own_header(&prep)?,
    };
    let bytes = if opts.bits32 { 4 } else { 2 };
    let int16 = to_u16(&d.adu);
    let _ = writeln!(
        out,
        "writing {} as {} {bytes}-byte integers",
        opts.geo.intfile,
        d.adu.len()
    );
    write_image(&opts.geo.intfile, &header, &d.adu, &int16, opts.bits32)?;
    if opts.geo.write_pgm {
        let pgm: Vec<u8> = int16.iter().map(|&v| v.min(255) as u8).collect();
        let _ = writeln!(out, "writing {} as 1-byte integers", opts.pgmfile);
        let file = crate::io::pgm::write_pgm(prep.width, prep.height, 1.0, &pgm);
        write_atomic_parts(Path::new(&opts.pgmfile), &[&file])?;
    }
    // the miniCBF holds the detector image: the noise image when there is one
    let mut cbf_pixels: Vec<i32> = if opts.bits32 {
        d.adu.iter().map(|&v| v as i32).collect()
    } else {
        int16.iter().map(|&v| v as i32).collect()
    };
    if let Some(n) = &d.noise {
        if let Some(r) = &n.psf {
            let _ = writeln!(
                out,
                "{:.0} photons on noise image before PSF",
                n.photons_before_psf
            );
            let _ = writeln!(
                out,
                "  applying PSF width = {} um",
                fmt_g(opts.psf_fwhm as f64 * 1e6)
            );
            psf_lines(r, &mut out);
        }
        let _ = writeln!(
            out,
            "{:.0} photons on noise image ({} overloads)",
            n.photons, n.overloads
        );
        let _ = writeln!(out, "writing {} as {bytes}-byte integers", opts.noisefile);
        let noise16 = to_u16(&n.adu);
        write_image(&opts.noisefile, &header, &n.adu, &noise16, opts.bits32)?;
        cbf_pixels = if opts.bits32 {
            n.adu.iter().map(|&v| v as i32).collect()
        } else {
            noise16.iter().map(|&v| v as i32).collect()
        };
    }
    if let Some(name) = &opts.geo.cbffile {
        let (info, pixels) = cbf_image(&prep, &d, cbf_pixels);
        let _ = writeln!(out, "writing {name} as miniCBF");
        let file = write_minicbf(&info, prep.width, prep.height, &pixels);
        write_atomic_parts(Path::new(name), &[&file])?;
    }
    Ok(())
}

/// The miniCBF's header and pixels. Without a preset: the SMV image's pixels (16- or 32-bit) and
/// its limit as `Count_cutoff`. With `-detector`: the counts up to the preset's largest count
/// (the SMV image may be 16-bit, the detector is not), its module gaps -1 (untrusted, as
/// PILATUS and EIGER files mark them), its name and sensor. φ and the oscillation are
/// [`Prepared::phi`]/[`Prepared::osc`] (flags, else the `-header`'s), so a series of images makes
/// one sweep.
pub fn cbf_image(prep: &Prepared<'_>, d: &Detected, smv_pixels: Vec<i32>) -> (CbfInfo, Vec<i32>) {
    let opts = &prep.opts;
    let mut info = CbfInfo {
        detector: "noisify simulation".into(),
        pixel: prep.pixel,
        sensor: (opts.geo.detector_thick > 0.0)
            .then(|| ("Silicon".to_string(), opts.geo.detector_thick)),
        exposure: 1.0,
        count_cutoff: if opts.bits32 { MAX_U32 } else { MAX_U16 } as u64,
        wavelength: prep.wavelength,
        distance: prep.distance,
        beam_xy: (prep.beam_fs.0 / prep.pixel, prep.beam_fs.1 / prep.pixel),
        start_angle: prep.phi,
        angle_increment: prep.osc,
        excluded: 0,
        two_theta: 0.0,
        polarization: None,
        flux: 0.0,
    };
    let Some(p) = opts.geo.preset else {
        return (info, smv_pixels);
    };
    info.detector = p.label.to_string();
    info.sensor = Some((p.sensor.to_string(), p.sensor_thickness_um * 1e-6));
    info.count_cutoff = p.saturation;
    let adu = d.noise.as_ref().map_or(&d.adu, |n| &n.adu);
    let limit = p.saturation.min(MAX_U32 as u64) as u32;
    let mut excluded = 0;
    let pixels = adu
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if p.is_gap(i % prep.width, i / prep.width) {
                excluded += 1;
                -1
            } else {
                v.min(limit) as i32
            }
        })
        .collect();
    info.excluded = excluded;
    (info, pixels)
}

fn write_image(name: &str, header: &[u8], adu: &[u32], int16: &[u16], bits32: bool) -> Result<()> {
    if bits32 {
        write_atomic_parts(Path::new(name), &[header, &le_bytes(adu)])
    } else {
        write_atomic_parts(Path::new(name), &[header, &le_bytes(int16)])
    }
}
