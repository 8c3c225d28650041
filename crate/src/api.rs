//! The library's front door, shared by the CLI, the wasm bindings and the tests:
//! words -> `Prepared` (parsed + resolved) -> float image -> output bytes.

use crate::args::{self, Options};
pub use crate::args::{Backend, Precision};
use crate::error::Result;
use crate::files::FileSource;
use crate::plan::Plan;
use crate::resolve::{resolve, Setup};
use crate::stats::Stats;
use crate::{cpu, io, output, stats};
use std::sync::atomic::AtomicBool;

/// A parsed and resolved configuration, ready to render.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub setup: Setup,
}

impl Prepared {
    pub fn plan(&self) -> &Plan {
        &self.setup.plan
    }
    pub fn options(&self) -> &Options {
        &self.setup.opts
    }
}

/// Split a command line into words (whitespace, with '…' and "…" quoting).
pub fn split_args(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut has = false;
    for ch in s.chars() {
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => cur.push(ch),
            None if ch == '\'' || ch == '"' => {
                quote = Some(ch);
                has = true;
            }
            None if ch.is_whitespace() => {
                if has || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            None => cur.push(ch),
        }
    }
    if has || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Parse flags and resolve the configuration. Errors name the bad flag or file line.
pub fn prepare(words: &[String], files: &dyn FileSource) -> Result<Prepared> {
    let opts = args::parse(words)?;
    prepare_options(&opts, files)
}

pub fn prepare_options(opts: &Options, files: &dyn FileSource) -> Result<Prepared> {
    let mut setup = resolve(opts, files)?;
    apply_preset_mask(&mut setup);
    Ok(Prepared { setup })
}

/// A `-detector` preset's module gaps join the plan's mask, when the detector still has the
/// preset's pixel counts (later flags may have changed them; then a warning says so).
fn apply_preset_mask(setup: &mut Setup) {
    let Some(p) = setup.opts.preset else { return };
    let plan = &mut setup.plan;
    if plan.fpixels != p.fast_pixels || plan.spixels != p.slow_pixels {
        setup.warnings.push(format!(
            "WARNING: -detector {}: the detector is {}x{} pixels, not the preset's {}x{}; module gaps not masked",
            p.name, plan.fpixels, plan.spixels, p.fast_pixels, p.slow_pixels
        ));
        return;
    }
    let gaps = p.mask();
    plan.mask = Some(match plan.mask.take() {
        Some(m) => m
            .iter()
            .zip(&gaps)
            .map(|(a, b)| (*a != 0 && *b != 0) as u8)
            .collect(),
        None => gaps,
    });
}

/// Most pixels the browser build renders: its memory is at most 1 GiB, and an image is held as
/// the f32 result plus a copy in transit (8192² f32 = 256 MiB each).
pub const BROWSER_MAX_PIXELS: usize = 8192 * 8192;

/// A clear error, naming the flag, when the detector has more than `max_pixels` pixels.
pub fn check_pixel_budget(prep: &Prepared, max_pixels: usize) -> Result<()> {
    let p = prep.plan();
    if p.pixel_count() > max_pixels {
        return Err(crate::error::Error::geometry(format!(
            "-detpixels: a {}x{} detector needs {} MiB for its image, more than this build can hold \
             (at most {} pixels, e.g. {}x{})",
            p.fpixels,
            p.spixels,
            (p.pixel_count() * 4) >> 20,
            max_pixels,
            (max_pixels as f64).sqrt() as usize,
            (max_pixels as f64).sqrt() as usize
        )));
    }
    Ok(())
}

/// Render on the CPU (rayon over rows).
pub fn render_cpu(
    plan: &Plan,
    precision: Precision,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<Vec<f32>> {
    cpu::render(plan, precision, progress, cancel)
}

pub fn statistics(prep: &Prepared, image: &[f32]) -> Stats {
    stats::compute(prep.plan(), image)
}

/// Noiseless SMV image bytes (`-intfile`).
pub fn int_image_smv(prep: &Prepared, image: &[f32]) -> Result<Vec<u8>> {
    let st = statistics(prep, image);
    let scale = output::int_scale(&prep.setup, &st);
    io::smv::write_smv(
        &output::smv_header(&prep.setup),
        &output::int_pixels(&prep.setup, image, scale),
    )
}

/// Poisson-noise SMV image bytes (`-noisefile`), upstream's generator and seed.
pub fn noise_image_smv(prep: &Prepared, image: &[f32]) -> Result<Vec<u8>> {
    let (px, _, _) = output::noise_pixels(&prep.setup, image);
    io::smv::write_smv(&output::smv_header(&prep.setup), &px)
}

/// Raw little-endian f32 image bytes (`-floatfile`).
pub fn float_image_bytes(image: &[f32]) -> Vec<u8> {
    output::float_bytes(image)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pixel_budget_names_the_flag() {
        let words = split_args("-cell 100 100 100 90 90 90 -default_F 1 -detpixels 20000");
        let prep = prepare(&words, &crate::files::MemFiles::default()).unwrap();
        let e = check_pixel_budget(&prep, BROWSER_MAX_PIXELS).unwrap_err();
        assert!(
            e.message
                .starts_with("-detpixels: a 20000x20000 detector needs 1525 MiB"),
            "{}",
            e.message
        );
        let small = prepare(
            &split_args("-cell 100 100 100 90 90 90 -default_F 1 -detpixels 64"),
            &crate::files::MemFiles::default(),
        )
        .unwrap();
        assert!(check_pixel_budget(&small, BROWSER_MAX_PIXELS).is_ok());
    }

    #[test]
    fn split_args_handles_quotes() {
        assert_eq!(
            split_args("  -hkl 'my file.hkl'  -N 5 "),
            vec!["-hkl", "my file.hkl", "-N", "5"]
        );
        assert_eq!(split_args(""), Vec::<String>::new());
    }
}
