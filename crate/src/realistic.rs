//! The realistic-image chain as one library, for the browser (`wasm/realistic.rs`) and for the
//! test that checks it against the CLI chain (`crate/tests/realistic_chain.rs`):
//!
//! 1. structure factors from an atomic model (`sf`), computed once per model and resolution and
//!    reused while only the geometry changes ([`SfCache`]), put into a nanoBragg plan prepared
//!    with the model's cell ([`install_table`], what `resolve` does for `-pdb`);
//! 2. the spots: that plan rendered by the usual kernels (`api`);
//! 3. the amorphous background: nonBragg (`nonbragg::render`) for each material (water, air)
//!    on the SAME detector and sources as the spots ([`background`]: the plan's pixel positions,
//!    at one sub-pixel per pixel, as nonBragg's default), from upstream's `.stol` tables
//!    ([`bundled_stol`]);
//! 4. the detector: noisify's effects (`noisify::detect`) on spots + background.
//!
//! The CLI equivalent is `nanobragg -pdb MODEL -dmin D … -floatfile spots.bin`, `nonbragg -stol
//! water.stol … -floatfile water.bin` (same detector), the float images added, then `noisify
//! -floatfile sum.bin …`.

use crate::api::Prepared;
use crate::error::{Error, ErrorKind, Result};
use crate::files::MemFiles;
use crate::io::stol::read_stol;
use crate::noisify::{self, psf::PsfKind, Effects, Generator, Psf};
use crate::nonbragg::{self, options::NonBraggOptions};
use crate::plan::{HklGrid, Interpolation};
use crate::resolve::structure;
use crate::sf::{self, Model, SfOptions, Summary};
use std::sync::atomic::AtomicBool;

/// Upstream's `.stol` tables carried in the library (MIT, `crate/data/stol/README.md`).
pub fn bundled_stol(name: &str) -> Option<&'static [u8]> {
    Some(match name {
        "water.stol" => &include_bytes!("../data/stol/water.stol")[..],
        "air.stol" => &include_bytes!("../data/stol/air.stol")[..],
        "ice.stol" => &include_bytes!("../data/stol/ice.stol")[..],
        _ => return None,
    })
}

/// A model read once, and its structure-factor table once computed.
pub struct SfCache {
    pub name: String,
    /// FNV-1a of the file's bytes: the same file dropped again keeps the table.
    pub hash: u64,
    pub model: Model,
    pub table: Option<(HklGrid, Summary)>,
    /// How many tables were computed for this model (the page shows it; tests count it).
    pub computations: usize,
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

impl SfCache {
    /// Reads the model into `slot` (errors name the file and line; the slot is then left as
    /// it was). The cached table is kept when the slot holds the same bytes under the same name.
    pub fn load(slot: &mut Option<SfCache>, name: &str, bytes: &[u8]) -> Result<()> {
        let hash = fnv1a(bytes);
        if slot
            .as_ref()
            .is_some_and(|p| p.name == name && p.hash == hash)
        {
            return Ok(());
        }
        *slot = Some(SfCache {
            name: name.to_string(),
            hash,
            model: sf::read_model(name, bytes)?,
            table: None,
            computations: 0,
        });
        Ok(())
    }

    /// The words that give the crystal the model's cell, and a placeholder structure factor
    /// that [`install_table`] replaces (`-default_F` satisfies upstream's required-input rule).
    pub fn crystal_words(&self) -> Vec<String> {
        let c = &self.model.cell;
        let mut w = vec!["-cell".to_string()];
        w.extend([c.a, c.b, c.c, c.alpha, c.beta, c.gamma].map(|v| format!("{v}")));
        w.extend(["-default_F".to_string(), "1".to_string()]);
        w
    }

    /// Whether the table covers `d_min` (Å): then only the geometry changed and it is reused.
    pub fn covers(&self, d_min: f64) -> bool {
        self.table
            .as_ref()
            .is_some_and(|(_, s)| s.d_min <= d_min * (1.0 + 1e-12))
    }

    /// The table to `d_min` (Å), computed when the cached one does not reach it. Returns
    /// whether it was computed now. Progress 0..1, cancel → `ErrorKind::Cancelled` (the
    /// previous table is kept).
    pub fn ensure(
        &mut self,
        d_min: f64,
        progress: &(dyn Fn(f32) + Sync),
        cancel: &AtomicBool,
    ) -> Result<bool> {
        if self.covers(d_min) {
            return Ok(false);
        }
        let opts = SfOptions::to_resolution(d_min);
        let name = &self.name;
        let out =
            sf::compute_model(&self.model, &opts, progress, cancel).map_err(|e| match e.kind {
                ErrorKind::Cancelled => e,
                _ => e.prefixed(format_args!("{name}: ")).at_file(name.as_str()),
            })?;
        self.table = Some(out);
        self.computations += 1;
        Ok(true)
    }
}

/// The resolution (Å) the plan's detector reaches, as `-pdb` computes its table (with the
/// stencil margin `sf::REACH_MARGIN`).
pub fn needed_d_min(prep: &Prepared) -> Result<f64> {
    sf::detector_reach(prep.plan())
        .map(|d| d / sf::REACH_MARGIN)
        .ok_or_else(|| Error::geometry("the detector sees no scattering angle"))
}

/// Puts a model's table into a plan prepared with [`SfCache::crystal_words`], as `resolve`
/// does for `-pdb`: the table, `-default_F` 0 outside it, and the interpolation rule — with
/// one difference: the automatic rule (no `-interpolate`/`-nointerpolate`) looks at the
/// crystal's resolved cell counts, where upstream looks at the raw `-N` values and so
/// interpolates every crystal given by `-xtalsize` alone, however large (MODEL §6.4, C-QUIRK
/// 18). The page's 1 µm crystal (hundreds of cells a side, spots one to three pixels wide) thus
/// takes F at the nearest lattice point, as `-pdb … -nointerpolate` does; tricubic
/// interpolation made its spots stage ~10× slower (`nanobragg-bench --realistic`).
pub fn install_table(prep: &mut Prepared, table: &HklGrid, description: &str) {
    let setup = &mut prep.setup;
    structure::install_table(&mut setup.plan, &setup.opts, table.clone());
    if setup.opts.interpolate == 2 {
        let p = &mut setup.plan;
        let counts = [p.na, p.nb, p.nc];
        p.interpolation = if structure::interpolate(2, counts, &p.hkl) {
            Interpolation::Tricubic
        } else {
            Interpolation::Nearest
        };
    }
    setup.plan.default_f = 0.0;
    setup.hkl_source = description.to_string();
}

/// The amorphous background's layers of the last detector, kept: they depend on the detector,
/// the beam (sources, λ, polarisation) and the materials' words, not on the crystal, so a new
/// orientation, mosaic, cell or model reuses them (as [`SfCache`] reuses the structure
/// factors). Only the materials of the last call are kept.
#[derive(Default)]
pub struct BackgroundCache {
    layers: Vec<(u64, Vec<f32>)>,
    /// How many material images were rendered (tests count them).
    pub computations: usize,
}

impl BackgroundCache {
    /// The sum of the materials' images ([`background`] of each word list, [`compose`]d in
    /// the order given; zeros for none) on `prep`'s detector, each rendered only when its
    /// words, table or the detector and beam changed; those rendered are rendered in one pass
    /// (`nonbragg::render_shared`). `progress(i, p)`: the pass's fraction done f as material
    /// `i`'s share p, (i + p) / materials = f.
    pub fn layers(
        &mut self,
        prep: &Prepared,
        lists: &[&[String]],
        files: &MemFiles,
        progress: &(dyn Fn(usize, f32) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Vec<f32>> {
        self.ensure(prep, lists, files, progress, cancel)?;
        if self.layers.is_empty() {
            return Ok(vec![0.0; prep.plan().pixel_count()]);
        }
        Ok(compose(&self.images()))
    }

    /// The materials' images of the last [`BackgroundCache::ensure`], in its order.
    pub fn images(&self) -> Vec<&[f32]> {
        self.layers.iter().map(|(_, l)| l.as_slice()).collect()
    }

    /// [`BackgroundCache::layers`] without their sum: the materials' images are then
    /// [`BackgroundCache::images`] (the page adds them to the spots in one pass,
    /// [`compose_over`]).
    pub fn ensure(
        &mut self,
        prep: &Prepared,
        lists: &[&[String]],
        files: &MemFiles,
        progress: &(dyn Fn(usize, f32) + Sync),
        cancel: &AtomicBool,
    ) -> Result<()> {
        let frame = detector_key(prep);
        let keys: Vec<u64> = lists
            .iter()
            .map(|words| {
                let mut h = Fnv(frame);
                for w in words.iter() {
                    h.bytes(w.as_bytes());
                    h.bytes(&[0]);
                }
                // a table of the page's files under a bundled name changes the image
                for (name, bytes) in files.0.iter() {
                    if words.iter().any(|w| w == name) {
                        h.bytes(name.as_bytes());
                        h.bytes(bytes);
                    }
                }
                h.0
            })
            .collect();
        // the materials not kept (each kept image serves one list), rendered together (one
        // pass over the pixels)
        let mut kept_keys: Vec<u64> = self.layers.iter().map(|(k, _)| *k).collect();
        let missing: Vec<usize> = (0..lists.len())
            .filter(|&i| match kept_keys.iter().position(|k| *k == keys[i]) {
                Some(at) => {
                    kept_keys.swap_remove(at);
                    false
                }
                None => true,
            })
            .collect();
        let setups = missing
            .iter()
            .map(|&i| material_setup(prep, lists[i], files))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&nonbragg::Setup> = setups.iter().collect();
        // the fraction done of the one pass, as material i's share p ((i + p) / materials)
        let n = lists.len().max(1) as f32;
        let share = |f: f32| {
            let i = (f * n).floor().min(n - 1.0);
            progress(i as usize, f * n - i)
        };
        let rendered = nonbragg::render_shared(&refs, &share, cancel)?;
        self.computations += rendered.len();
        let mut rendered = missing.iter().copied().zip(rendered);
        let mut kept = Vec::with_capacity(lists.len());
        let mut old = std::mem::take(&mut self.layers);
        for (i, &key) in keys.iter().enumerate() {
            let image = match old.iter().position(|(k, _)| *k == key) {
                Some(at) => old.swap_remove(at).1,
                None => {
                    let (j, (image, _)) = rendered.next().expect("rendered");
                    debug_assert_eq!(i, j);
                    image
                }
            };
            kept.push((key, image));
        }
        self.layers = kept;
        Ok(())
    }
}

/// FNV-1a, fed piece by piece.
struct Fnv(u64);

impl Fnv {
    fn bytes(&mut self, b: &[u8]) {
        self.0 = b
            .iter()
            .fold(self.0, |h, &b| (h ^ b as u64).wrapping_mul(0x100000001b3));
    }
}

/// What nonBragg reads of a prepared plan ([`setup_on_plan`], `nonbragg::render`): the
/// detector (panels, pixels, frame, ROI and mask) and the beam (sources, polarisation), as a
/// hash of their exact values.
fn detector_key(prep: &Prepared) -> u64 {
    let p = prep.plan();
    let text = format!(
        "{:?}",
        (
            &p.panels,
            (p.fpixels, p.spixels, p.pixel, p.pix0, p.fdet, p.sdet, p.odet, p.beam),
            (p.close_distance, p.distance, p.curved, p.point_pixel),
            (&p.roi, &p.sources, p.polar_k, p.polar_axis, p.nopolar),
        )
    );
    let mut h = Fnv(0xcbf29ce484222325);
    h.bytes(text.as_bytes());
    if let Some(m) = &p.mask {
        h.bytes(&[1]);
        h.bytes(m);
    }
    h.0
}

/// One amorphous material on the spots' detector: nonBragg's options from `words` (sample and
/// beam flags: `-stol`, `-thickness`, `-density`, `-MW`, `-flux`, `-exposure`, `-beamsize`,
/// …; the detector flags are ignored, the plan's detector is used). A table named like a
/// bundled one and absent from `files` is the bundled one. Returns photons/pixel.
pub fn background(
    prep: &Prepared,
    words: &[String],
    files: &MemFiles,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<Vec<f32>> {
    let setup = material_setup(prep, words, files)?;
    Ok(nonbragg::render(&setup, progress, cancel)?.0)
}

/// nonBragg's set-up of one material (the words of [`background`]) on the spots' detector.
fn material_setup(prep: &Prepared, words: &[String], files: &MemFiles) -> Result<nonbragg::Setup> {
    let o = nonbragg::options::parse(words)?;
    let (name, unit) = o.stol.clone().ok_or_else(|| {
        Error::new(
            ErrorKind::MissingInput,
            "background: no structure-factor table (-stol FILE)",
        )
    })?;
    let bytes = match files.0.get(&name) {
        Some(b) => b.as_slice(),
        None => bundled_stol(&name).ok_or_else(|| {
            Error::new(
                ErrorKind::MissingInput,
                format!("-stol {name}: no such table (bundled: water.stol, air.stol, ice.stol)"),
            )
            .with_flag("-stol")
        })?,
    };
    Ok(setup_on_plan(&o, prep, read_stol(&name, bytes, unit)?))
}

/// nonBragg's setup with the spots' resolved detector and sources as its frame (one sub-pixel
/// per pixel, nonBragg's default; unit source weights, as nonBragg's own divergence grid).
fn setup_on_plan(
    o: &NonBraggOptions,
    prep: &Prepared,
    table: crate::io::stol::StolTable,
) -> nonbragg::Setup {
    let mut frame = prep.setup.clone();
    frame.plan.oversample = o.geo.oversample.max(1) as u32;
    frame.plan.hkl = HklGrid::default();
    let sources = frame
        .plan
        .sources
        .iter()
        .map(|s| nonbragg::SourceRow {
            position: s.incident.map(|c| -o.source_distance * c),
            weight: 1.0,
            lambda: s.lambda,
        })
        .collect();
    let p = &frame.plan;
    nonbragg::Setup {
        opts: o.clone(),
        sample: nonbragg::sample(o),
        table,
        sources,
        divsteps: -1,
        detsize_x: p.pixel * p.fpixels as f64,
        detsize_y: p.pixel * p.spixels as f64,
        phi0: frame.phi0,
        osc: frame.osc,
        lambda0: frame.lambda0,
        noise_seed: frame.noise_seed,
        warnings: Vec::new(),
        frame,
    }
}

/// Pixel-wise sum of the chosen layers (f32, as the CLI chain adds float files).
/// One pass over the pixels, in parallel (each pixel's sum in the layers' order, from 0).
pub fn compose(layers: &[&[f32]]) -> Vec<f32> {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 16;
    let n = layers.first().map_or(0, |l| l.len());
    let mut out = vec![0f32; n];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, o)| {
        let at = c * CHUNK;
        for l in layers {
            for (o, v) in o.iter_mut().zip(&l[at..]) {
                *o += *v;
            }
        }
    });
    out
}

/// `compose(&[spots, compose(background)])` in one pass, to the bit: each pixel the spots
/// (when given) plus the sum of the background's layers (when any), in the layers' order;
/// zeros for neither.
pub fn compose_over(spots: Option<&[f32]>, background: &[&[f32]], n: usize) -> Vec<f32> {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 16;
    let mut out = vec![0f32; n];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, o)| {
        let at = c * CHUNK;
        let len = o.len();
        if let Some(sp) = spots {
            for (o, v) in o.iter_mut().zip(&sp[at..at + len]) {
                *o += *v;
            }
        }
        if background.is_empty() {
            return;
        }
        let mut bg = vec![0f32; len];
        for l in background {
            for (b, v) in bg.iter_mut().zip(&l[at..at + len]) {
                *b += *v;
            }
        }
        for (o, b) in o.iter_mut().zip(&bg) {
            *o += *b;
        }
    });
    out
}

/// The detector settings the page offers (noisify's effects): read-out noise (ADU rms), a
/// Gaussian PSF's FWHM (µm, 0: none), gain (ADU/photon), ADC offset (ADU), calibration error and
/// beam flicker (fractions), and the noise seed as `noisify -seed` takes it.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetectorSettings {
    pub readout: f64,
    pub psf_um: f64,
    pub gain: f64,
    pub adc: f64,
    pub calibration: f64,
    pub flicker: f64,
    pub seed: i64,
}

impl DetectorSettings {
    /// The detector effects of a detector's kind (`presets::Preset::kind`), noise seed 1:
    /// photon counting (no read-out noise, no PSF, gain 1, no ADC offset) or a CCD (noisify's
    /// defaults: 46 µm PSF, 3 ADU read-out noise, ADC offset 40); 3 % calibration error both.
    pub const fn of_kind(ccd: bool) -> DetectorSettings {
        DetectorSettings {
            readout: if ccd { 3.0 } else { 0.0 },
            psf_um: if ccd { 46.0 } else { 0.0 },
            gain: 1.0,
            adc: if ccd { 40.0 } else { 0.0 },
            calibration: 0.03,
            flicker: 0.0,
            seed: 1,
        }
    }

    /// noisify's `Effects` for a float image of photons/pixel on pixels of `pixel` m, with the
    /// values converted as `noisify`'s flags convert them (`-psf_fwhm` µm → f32 m, `-seed N` →
    /// −N), and the counter generator (`noisify -rng counter`: the same image on any number of
    /// threads, not upstream's sequence); `noise` false: gain, ADC offset and PSF only.
    pub fn effects(&self, pixel: f64, noise: bool) -> Effects {
        let fwhm = (self.psf_um / 1e6) as f32;
        Effects {
            readout: if noise { self.readout } else { 0.0 },
            gain: self.gain,
            adc: self.adc,
            calibration: if noise { self.calibration } else { 0.0 },
            flicker: if noise { self.flicker } else { 0.0 },
            psf: (fwhm > 0.0).then(|| Psf {
                kind: PsfKind::Gauss,
                fwhm_px: fwhm as f64 / pixel,
                radius: 0,
            }),
            seed: -self.seed,
            noise,
            rng: Generator::Counter,
            ..Effects::default()
        }
    }
}

/// The detector's image (ADU) of a float image of photons/pixel (`w` × `h`): noisify's noise
/// image with `noise`, else its noiseless image.
#[allow(clippy::too_many_arguments)]
pub fn detect(
    photons: &[f32],
    w: usize,
    h: usize,
    pixel: f64,
    settings: &DetectorSettings,
    noise: bool,
    progress: &dyn Fn(f32),
    cancel: &AtomicBool,
) -> Result<Vec<u32>> {
    let e = settings.effects(pixel, noise);
    // with noise only the noisy image is shown: its noiseless counts are not asked for
    let d = noisify::detect_keeping(photons, w, h, &e, true, !noise, progress, cancel)?;
    Ok(d.noise.map_or(d.adu, |n| n.adu))
}

/// The largest value of each `block` × `block` square of a `w` × `h` image (blocks from the
/// top-left; those of the last row and column partial): ⌈w/block⌉ × ⌈h/block⌉ values, NaN
/// passed over (a block of NaN only: −∞). What the page's view draws when it shows the whole
/// detector on fewer screen pixels (www/src/view.ts, `pooledImage`: the same values to the
/// bit), computed in the worker beside the image instead of on the page's main thread. Rows
/// of blocks in parallel.
pub fn block_maxima(img: &[f32], w: usize, h: usize, block: usize) -> Vec<f32> {
    use rayon::prelude::*;
    assert_eq!(img.len(), w * h, "block_maxima: image size");
    let b = block.max(1);
    let (pw, ph) = (w.div_ceil(b), h.div_ceil(b));
    let mut out = vec![f32::NEG_INFINITY; pw * ph];
    if pw == 0 {
        return out;
    }
    out.par_chunks_mut(pw).enumerate().for_each(|(by, o)| {
        for row in img[by * b * w..((by + 1) * b).min(h) * w].chunks_exact(w) {
            for (m, px) in o.iter_mut().zip(row.chunks(b)) {
                for &v in px {
                    // the view's rule: a larger value replaces (NaN never does)
                    if v > *m {
                        *m = v;
                    }
                }
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: &str = "CRYST1   20.000   25.000   30.000  90.00  90.00  90.00 P 21 21 21    4\n\
        ATOM      1  N   GLY A   1       1.000   2.000   3.000  1.00 10.00           N\n\
        ATOM      2  CA  GLY A   1       2.000   2.500   3.500  1.00 12.00           C\n";

    #[test]
    fn cache_is_kept_for_the_same_model_and_a_covered_resolution() {
        let never = AtomicBool::new(false);
        let mut slot = None;
        SfCache::load(&mut slot, "m.pdb", MODEL.as_bytes()).unwrap();
        let c = slot.as_mut().unwrap();
        assert!(c.ensure(3.0, &|_| {}, &never).unwrap());
        assert!(!c.ensure(3.5, &|_| {}, &never).unwrap(), "coarser: reused");
        assert_eq!(c.computations, 1);
        SfCache::load(&mut slot, "m.pdb", MODEL.as_bytes()).unwrap();
        let c = slot.as_mut().unwrap();
        assert!(c.covers(3.0));
        assert!(c.ensure(2.5, &|_| {}, &never).unwrap(), "finer: computed");
        assert_eq!(c.computations, 2);
        let other = MODEL.replace("1.000   2.000", "1.500   2.000");
        SfCache::load(&mut slot, "m.pdb", other.as_bytes()).unwrap();
        let c = slot.as_ref().unwrap();
        assert!(c.table.is_none() && c.computations == 0);
        // a bad file leaves the slot as it was
        let bad = MODEL.replace(" N\n", " Xx\n");
        assert!(SfCache::load(&mut slot, "bad.pdb", bad.as_bytes()).is_err());
        assert_eq!(slot.as_ref().unwrap().hash, fnv1a(other.as_bytes()));
    }

    #[test]
    fn block_maxima_are_each_block_s_largest_value() {
        // odd sizes (partial blocks on the right and at the bottom), NaN and negative values
        let (w, h) = (7, 5);
        let mut img: Vec<f32> = (0..w * h)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.5)
            .collect();
        img[3] = f32::NAN;
        for b in 1..=8 {
            let got = block_maxima(&img, w, h, b);
            let (pw, ph) = (w.div_ceil(b), h.div_ceil(b));
            assert_eq!(got.len(), pw * ph);
            for by in 0..ph {
                for bx in 0..pw {
                    let want = (by * b..((by + 1) * b).min(h))
                        .flat_map(|y| (bx * b..((bx + 1) * b).min(w)).map(move |x| (x, y)))
                        .map(|(x, y)| img[y * w + x])
                        .filter(|v| !v.is_nan())
                        .fold(f32::NEG_INFINITY, f32::max);
                    assert_eq!(got[by * pw + bx], want, "block {b} at ({bx}, {by})");
                }
            }
        }
        assert_eq!(block_maxima(&img, w, h, 1), {
            let mut m = img.clone();
            m[3] = f32::NEG_INFINITY;
            m
        });
        assert_eq!(block_maxima(&[f32::NAN], 1, 1, 2), vec![f32::NEG_INFINITY]);
    }

    #[test]
    fn bad_model_names_file_and_line() {
        let bad = MODEL.replace(" N\n", " Xx\n");
        let e = SfCache::load(&mut None, "bad.pdb", bad.as_bytes()).unwrap_err();
        assert!(e.message.contains("bad.pdb"), "{}", e.message);
        assert!(e.message.contains("line 2"), "{}", e.message);
    }

    #[test]
    fn background_is_kept_while_the_detector_and_beam_stay() {
        let never = AtomicBool::new(false);
        let files = MemFiles::default();
        let prep = |extra: &str| {
            let w: Vec<String> = format!(
                "-cell 20 25 30 90 90 90 -default_F 1 -lambda 1.3 -distance 40 -detpixels 24 -pixel 0.1 {extra}"
            )
            .split_whitespace()
            .map(String::from)
            .collect();
            crate::api::prepare(&w, &files).unwrap()
        };
        let water: Vec<String> =
            "-stol water.stol -thickness 0.01 -flux 1e12 -exposure 0.1 -beamsize 0.01"
                .split_whitespace()
                .map(String::from)
                .collect();
        let air: Vec<String> = "-stol air.stol -thickness 10 -MW 29 -density 0.0012 -flux 1e12"
            .split_whitespace()
            .map(String::from)
            .collect();
        let fresh = |p: &Prepared| {
            let a = background(p, &water, &files, &|_| {}, &never).unwrap();
            let b = background(p, &air, &files, &|_| {}, &never).unwrap();
            compose(&[&a, &b])
        };
        let mut cache = BackgroundCache::default();
        let lists: [&[String]; 2] = [&water, &air];
        let base = prep("-misset 10 20 30");
        let first = cache
            .layers(&base, &lists, &files, &|_, _| {}, &never)
            .unwrap();
        assert_eq!(first, fresh(&base));
        assert_eq!(cache.computations, 2);
        // another crystal, orientation and mosaic on the same detector: kept, and the same
        // image a new render gives
        let other = prep("-misset 1 2 3 -mosaic 0.5 -mosaic_dom 3 -cell 30 30 30 90 90 90");
        assert_eq!(
            cache
                .layers(&other, &lists, &files, &|_, _| {}, &never)
                .unwrap(),
            fresh(&other)
        );
        assert_eq!(cache.computations, 2);
        // one material's words change: that one only
        let thicker: Vec<String> = water
            .iter()
            .map(|w| {
                if w == "0.01" {
                    "0.02".into()
                } else {
                    w.clone()
                }
            })
            .collect();
        let got = cache
            .layers(&other, &[&thicker, &air], &files, &|_, _| {}, &never)
            .unwrap();
        assert_eq!(cache.computations, 3);
        assert!(got.iter().zip(&first).all(|(a, b)| a > b));
        // the detector moves, or the wavelength changes: both again
        for extra in [
            "-distance 41",
            "-lambda 1.2",
            "-detpixels 24 -pixel 0.11",
            "-polar 0.5",
        ] {
            let n = cache.computations;
            let p = prep(extra);
            assert_eq!(
                cache
                    .layers(&p, &lists, &files, &|_, _| {}, &never)
                    .unwrap(),
                fresh(&p),
                "{extra}"
            );
            assert_eq!(cache.computations, n + 2, "{extra}");
        }
        // the same material twice: both layers (one kept, one rendered)
        cache
            .layers(&base, &lists, &files, &|_, _| {}, &never)
            .unwrap();
        let n = cache.computations;
        let twice = cache
            .layers(&base, &[&water, &water, &air], &files, &|_, _| {}, &never)
            .unwrap();
        assert_eq!(cache.computations, n + 1);
        let w = background(&base, &water, &files, &|_| {}, &never).unwrap();
        let a = background(&base, &air, &files, &|_| {}, &never).unwrap();
        assert_eq!(twice, compose(&[&w, &w, &a]));
        // no material: zeros
        assert!(cache
            .layers(&base, &[], &files, &|_, _| {}, &never)
            .unwrap()
            .iter()
            .all(|&v| v == 0.0));
    }

    #[test]
    fn layers_added_in_one_pass_as_composed_in_two() {
        // values whose f32 sums depend on the order of addition
        let n = (1 << 16) + 37;
        let v = |k: u32| -> Vec<f32> {
            (0..n as u32)
                .map(|i| {
                    ((i.wrapping_mul(2654435761) ^ k) % 100_000) as f32 * 1.37e-3
                        + 1e4 * (k % 3) as f32
                })
                .collect()
        };
        let (spots, water, air) = (v(1), v(2), v(3));
        let bg = compose(&[&water, &air]);
        assert_eq!(
            compose_over(Some(&spots), &[&water, &air], n),
            compose(&[&spots, &bg])
        );
        assert_eq!(compose_over(Some(&spots), &[], n), spots);
        assert_eq!(compose_over(None, &[&water, &air], n), bg);
        assert!(compose_over(None, &[], n).iter().all(|&x| x == 0.0));
        assert_ne!(
            compose(&[&spots, &water, &air]),
            compose(&[&spots, &bg]),
            "order matters here"
        );
    }

    #[test]
    fn large_crystals_take_the_nearest_structure_factor() {
        // upstream interpolates any crystal given by -xtalsize alone (raw counts 1): the chain
        // decides by the resolved counts; -interpolate still asks for it
        let never = AtomicBool::new(false);
        let mut slot = None;
        SfCache::load(&mut slot, "m.pdb", MODEL.as_bytes()).unwrap();
        let c = slot.as_mut().unwrap();
        c.ensure(3.0, &|_| {}, &never).unwrap();
        let grid = &c.table.as_ref().unwrap().0;
        let files = MemFiles::default();
        for (extra, want) in [
            ("-xtalsize 0.001", Interpolation::Nearest),
            ("-xtalsize 0.000004", Interpolation::Tricubic),
            ("-N 2", Interpolation::Tricubic),
            ("-N 10", Interpolation::Nearest),
            ("-xtalsize 0.001 -interpolate", Interpolation::Tricubic),
            ("-N 2 -nointerpolate", Interpolation::Nearest),
        ] {
            let mut w: Vec<String> = format!("-lambda 1 -distance 50 -detpixels 16 {extra}")
                .split_whitespace()
                .map(String::from)
                .collect();
            w.extend(c.crystal_words());
            let mut prep = crate::api::prepare(&w, &files).unwrap();
            install_table(&mut prep, grid, "m.pdb");
            assert_eq!(prep.plan().interpolation, want, "{extra}");
        }
    }
}
