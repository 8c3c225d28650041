//! A warm simulation for long-lived callers (the Python binding, `python/`): one configuration
//! resolved once, its input files read once, and one [`Renderer`] kept (GPU device, pipeline and
//! buffers stay open between renders). A render with overrides appends flag words to the base
//! words (later flags win, as on the command line), so an override is validated by the same
//! rules and says the same errors as the CLI; it is resolved from the cached file bytes, so no
//! file is read again, and with no overrides the base plan is rendered as it is.
//!
//! When every override flag leaves the structure-factor table as it is (orientation, φ,
//! mosaicity, seeds, fluence, cell counts, precision: [`TABLE_KEEPING`]), the base's table is
//! reused instead of reading the `-hkl` file again or recomputing a `-pdb` model's table: the
//! override resolves without structure factors and the base's table goes into its plan, with the
//! same interpolation rule `resolve` applies. Tests check both paths against fresh sessions.
//!
//! The binding holds no physics: it builds words from its typed configuration and calls this.

use crate::api::{self, Prepared, Rendered, Renderer};
use crate::args;
use crate::error::Result;
use crate::files::{DiskFiles, FileKind, FileSource};
use crate::plan::Interpolation;
use crate::resolve::{lattice, structure};
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

/// Files from disk read once and then served from memory, plus named in-memory files (tables
/// handed over by a caller). A render's re-resolve sees the bytes of the first read.
#[derive(Default)]
pub struct CachedFiles {
    given: HashMap<String, Vec<u8>>,
    read: Mutex<HashMap<String, Vec<u8>>>,
}

impl CachedFiles {
    /// `given`: files served from memory under their names (they shadow the disk).
    pub fn new(given: HashMap<String, Vec<u8>>) -> Self {
        CachedFiles {
            given,
            read: Mutex::new(HashMap::new()),
        }
    }
}

impl FileSource for CachedFiles {
    fn read(&self, name: &str, kind: FileKind) -> Result<Vec<u8>> {
        if let Some(bytes) = self.given.get(name) {
            // MemFiles' size check, without copying the other files
            if bytes.len() as u64 > kind.max_bytes() {
                return Err(kind.too_large(name, bytes.len() as u64).at_file(name));
            }
            return Ok(bytes.clone());
        }
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = read.get(name) {
            if b.len() as u64 <= kind.max_bytes() {
                return Ok(b.clone());
            }
        }
        let bytes = DiskFiles.read(name, kind)?;
        read.insert(name.to_string(), bytes.clone());
        Ok(bytes)
    }
    fn exists(&self, name: &str) -> bool {
        self.given.contains_key(name)
            || self
                .read
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains_key(name)
            || DiskFiles.exists(name)
    }
}

/// A render of a session: the image with its size (an override may change the detector).
#[derive(Clone, Debug)]
pub struct Image {
    pub rendered: Rendered,
    pub fpixels: usize,
    pub spixels: usize,
}

/// A vector–Jacobian product of a session ([`Session::vjp`]).
#[derive(Clone, Debug)]
pub struct Vjp {
    /// The image (photons/pixel, f64 numbers), fast-major.
    pub image: Vec<f64>,
    /// One product per parameter.
    pub products: Vec<f64>,
    /// Where it was computed.
    pub engine: api::Engine,
    /// Why it was not computed where asked (GPU unavailable under `auto`).
    pub notices: Vec<String>,
}

/// Flags an override may carry while the base's structure-factor table is kept: they change
/// the orientation, the sampling of φ and mosaic domains, the scale or the cell counts, never
/// which reflections the table holds nor their values.
pub const TABLE_KEEPING: &[&str] = &[
    "-misset",
    "-misset_seed",
    "-phi",
    "-osc",
    "-phistep",
    "-phisteps",
    "-mosaic",
    "-mosaic_dom",
    "-mosaic_seed",
    "-fluence",
    "-flux",
    "-exposure",
    "-seed",
    "-N",
    "-Na",
    "-Nb",
    "-Nc",
    "-precision",
    "-backend",
    "-threads",
    "-interpolate",
    "-nointerpolate",
];

/// The flag of the table that `word` names (by its name or an alias).
fn flag_name(word: &str) -> Option<&'static str> {
    args::FLAGS
        .iter()
        .find(|f| f.name == word || f.aliases.contains(&word))
        .map(|f| f.name)
}

/// One configuration, resolved, with its renderer kept warm.
pub struct Session {
    words: Vec<String>,
    files: CachedFiles,
    prep: Prepared,
    renderer: Renderer,
    /// The cell a `-pdb` model gives (when no `-cell`/`-mat` does), for overrides that keep the
    /// table.
    model_cell: Option<[f64; 6]>,
}

impl Session {
    /// Parses and resolves `words` (upstream's flags) with `files`.
    pub fn new(words: Vec<String>, files: CachedFiles) -> Result<Session> {
        let prep = api::prepare(&words, &files)?;
        let renderer = Renderer::new(prep.options().threads);
        let o = prep.options();
        let origin = structure::origin(o, &files);
        let model = structure::read_model(&origin, &files)?;
        let model_cell = structure::model_cell(o, model.as_ref());
        Ok(Session {
            words,
            files,
            prep,
            renderer,
            model_cell,
        })
    }

    /// The words this session was made from.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// The resolved base configuration.
    pub fn prepared(&self) -> &Prepared {
        &self.prep
    }

    /// The base words followed by `extra`, resolved from the cached files (the base itself when
    /// `extra` is empty).
    pub fn prepare_with(&self, extra: &[String]) -> Result<Prepared> {
        if extra.is_empty() {
            return Ok(self.prep.clone());
        }
        let mut words = self.words.clone();
        words.extend_from_slice(extra);
        let keeps_table = extra
            .iter()
            .filter_map(|w| flag_name(w))
            .all(|f| TABLE_KEEPING.contains(&f));
        let base = self.prep.options();
        if !keeps_table || (base.hkl.is_none() && base.pdb.is_none()) {
            return api::prepare(&words, &self.files);
        }
        self.prepare_keeping_table(&words)
    }

    /// `words` resolved without reading structure factors, the base's table put in its plan.
    fn prepare_keeping_table(&self, words: &[String]) -> Result<Prepared> {
        let o = args::parse(words)?;
        let mut bare = o.clone();
        if bare.pdb.is_some() && bare.cell.is_none() && bare.mat.is_none() {
            bare.cell = self.model_cell;
        }
        bare.hkl = None;
        bare.pdb = None;
        bare.dump = String::new();
        bare.default_f = 1.0;
        let mut prep = api::prepare_options(&bare, &self.files)?;
        let base = self.prep.plan();
        let setup = &mut prep.setup;
        setup.plan.hkl = base.hkl.clone();
        setup.plan.default_f = base.default_f;
        setup.plan.interpolation =
            if structure::interpolate(o.interpolate, lattice::raw_counts(&o), &setup.plan.hkl) {
                Interpolation::Tricubic
            } else {
                Interpolation::Nearest
            };
        setup.hkl_source = self.prep.setup.hkl_source.clone();
        setup.opts = o;
        Ok(prep)
    }

    /// Renders the base configuration with the `extra` words appended, on the backend and at
    /// the precision the words give (`-backend`, `-precision`), with the renderer's policy;
    /// refused as the CLI refuses it when over the budget without `-force`
    /// (`api::check_cost_quickly`).
    pub fn render(
        &mut self,
        extra: &[String],
        progress: &(dyn Fn(f32) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Image> {
        let owned;
        let prep = if extra.is_empty() {
            &self.prep
        } else {
            owned = self.prepare_with(extra)?;
            &owned
        };
        api::check_cost_quickly(prep, 0)?;
        let o = prep.options();
        let plan = prep.plan();
        let mut rendered = self
            .renderer
            .render(plan, o.backend, o.precision, progress, cancel)?;
        if !extra.is_empty() {
            // the overrides' own warnings (the base's are the session's `warnings`)
            let base = &self.prep.setup.warnings;
            let own = prep.setup.warnings.iter().filter(|w| !base.contains(w));
            rendered.notices.splice(0..0, own.cloned());
        }
        Ok(Image {
            rendered,
            fpixels: plan.fpixels,
            spixels: plan.spixels,
        })
    }

    /// The image of the base configuration with `extra` words, moved by `offsets`, and its
    /// derivatives with respect to `params` there (MODEL §10), on the backend the words give
    /// (`-backend`, `-precision`) by the renderer's policy as [`Session::render`]: the CPU
    /// tangent kernel (f64, or f32 with `-precision f32`), or the GPU's (`-backend gpu`, or
    /// `auto` with `f32`: f32 tangents, MODEL §10.6; with `-backend gpu` and no adapter the
    /// image render's `ErrorKind::Gpu` error, under `auto` the CPU with a notice). The result
    /// says where it ran (`engine`, `notices`).
    pub fn gradients(
        &mut self,
        extra: &[String],
        params: &[api::Param],
        offsets: &[api::Offset],
        cancel: &AtomicBool,
    ) -> Result<api::RenderedGradients> {
        let prep = self.prepare_with(extra)?;
        api::check_cost_quickly(&prep, params.len())?;
        let o = prep.options();
        self.renderer.render_gradients(
            &prep,
            &self.files,
            params,
            offsets,
            o.backend,
            o.precision,
            &|_| {},
            cancel,
        )
    }

    /// The gradient of Σ weights·image with respect to the set-up's structure-factor table
    /// there (`api::vjp_structure_factors`: f64 on the CPU, nearest lookup).
    pub fn vjp_structure_factors(
        &self,
        extra: &[String],
        offsets: &[api::Offset],
        weights: &[f64],
        cancel: &AtomicBool,
    ) -> Result<api::FGradient> {
        let prep = self.prepare_with(extra)?;
        api::vjp_structure_factors(&prep, &self.files, offsets, weights, cancel)
    }

    /// The vector–Jacobian product of `weights` (one per pixel, fast-major) there, with the
    /// image (f64 numbers), on the backend of [`Session::gradients`]: the image, the products,
    /// where they were computed and the notices (a GPU fallback under `auto`).
    pub fn vjp(
        &mut self,
        extra: &[String],
        params: &[api::Param],
        offsets: &[api::Offset],
        weights: &[f64],
        cancel: &AtomicBool,
    ) -> Result<Vjp> {
        let prep = self.prepare_with(extra)?;
        let o = prep.options();
        let (image, products, engine) = self.renderer.vjp(
            &prep,
            &self.files,
            params,
            offsets,
            weights,
            o.backend,
            o.precision,
            cancel,
        )?;
        let mut notices = Vec::new();
        if engine == api::Engine::Cpu
            && api::choose_backend(o.backend, o.precision).engine == api::Engine::Gpu
        {
            // the renderer's VJP reports no notices: the one its gradients give
            notices.push(self.renderer.cpu_fallback_notice());
        }
        Ok(Vjp {
            image,
            products,
            engine,
            notices,
        })
    }

    /// Fits `options.params` to `target` (photons per pixel, fast-major) at the setup with
    /// `extra` words (`api::fit`).
    pub fn fit(
        &self,
        extra: &[String],
        target: &[f64],
        options: &api::FitOptions,
        progress: &mut dyn FnMut(&api::FitStep),
        cancel: &AtomicBool,
    ) -> Result<api::Fit> {
        let prep = self.prepare_with(extra)?;
        api::fit(&prep, &self.files, target, options, progress, cancel)
    }

    /// The set-up with `extra` words moved by a fit's offsets (`params` with `values`) as the
    /// values of the user's flags (`api::fitted_values`).
    pub fn fitted_values(
        &self,
        extra: &[String],
        params: &[api::Param],
        values: &[f64],
    ) -> Result<api::Fitted> {
        let prep = self.prepare_with(extra)?;
        api::fitted_values(&prep, params, values)
    }

    /// The GPU adapter, once the renderer opened one.
    pub fn gpu_adapter(&self) -> Option<String> {
        self.renderer.gpu_adapter()
    }
}

/// Upstream's default seed for noise and random orientations: minus the clock's seconds (what
/// the CLIs use when no seed is given).
pub fn clock_seed() -> i64 {
    -crate::resolve::clock_seconds()
}

/// A seed for a noise image asked for again and again in one session with no `-seed` (Python's
/// `Simulator.noise_image`): the clock's nanoseconds, so that each call draws its own noise
/// (upstream's [`clock_seed`] would repeat within a second), in upstream's stored form (≤ −1).
pub fn fresh_noise_seed() -> i64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos());
    -((nanos % (i32::MAX as u128)) as i64 + 1)
}

/// The misset angles (degrees, `-misset rx ry rz`) of a rotation matrix `u` (row-major,
/// `u = Rz·Ry·Rx`), as upstream's `umat2misset` finds them.
pub fn misset_deg_from_rotation(u: [[f64; 3]; 3]) -> [f64; 3] {
    crate::rng::umat2misset(u).map(|r| r.to_degrees())
}

/// A MOSFLM matrix file's text (`-mat`) for the reciprocal basis `a_star` (rows: a*, b*, c* in
/// Å⁻¹, lab frame) at wavelength `lambda_a` (Å): MOSFLM stores the λ-scaled vectors as columns.
pub fn mat_text(a_star: [[f64; 3]; 3], lambda_a: f64) -> String {
    let mut s = String::new();
    for r in 0..3 {
        let row: Vec<String> = (0..3)
            .map(|c| format!("{:e}", a_star[c][r] * lambda_a))
            .collect();
        s.push_str(&row.join(" "));
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn words(s: &str) -> Vec<String> {
        api::split_args(s)
    }

    #[test]
    fn override_equals_fresh_session() {
        let base = "-cell 70 80 90 90 90 90 -default_F 100 -N 5 -lambda 1 -distance 100 \
                    -detpixels 48 -pixel 0.3 -misset 0 0 0 -precision f64 -backend cpu";
        let cancel = AtomicBool::new(false);
        let mut warm = Session::new(words(base), CachedFiles::default()).unwrap();
        let a = warm
            .render(&words("-misset 10 20 30 -fluence 1e25"), &|_| {}, &cancel)
            .unwrap();
        let fresh_words = base.replace("-misset 0 0 0", "-misset 10 20 30 -fluence 1e25");
        let mut fresh = Session::new(words(&fresh_words), CachedFiles::default()).unwrap();
        let b = fresh.render(&[], &|_| {}, &cancel).unwrap();
        assert_eq!(a.rendered.image, b.rendered.image);
        let c = warm.render(&[], &|_| {}, &cancel).unwrap();
        assert_ne!(
            a.rendered.image, c.rendered.image,
            "the base is unchanged by an override"
        );
        let d = warm
            .render(&words("-detpixels 20"), &|_| {}, &cancel)
            .unwrap();
        assert_eq!(
            (d.fpixels, d.spixels, d.rendered.image.len()),
            (20, 20, 400)
        );
    }

    #[test]
    fn renders_over_the_budget_are_refused_unless_forced() {
        // 2048² pixels × 10⁶ mosaic domains: 4·10¹² terms, over the CLI's budget of 10¹²
        let big = "-cell 70 80 90 90 90 90 -default_F 100 -N 5 -lambda 1 -distance 100 \
                   -detpixels 2048 -mosaic 0.1 -mosaic_domains 1000000 -precision f32 \
                   -backend cpu";
        let cancel = AtomicBool::new(true); // a forced render stops at once
        let mut s = Session::new(words(big), CachedFiles::default()).unwrap();
        let Err(e) = s.render(&[], &|_| {}, &cancel) else {
            panic!("over the budget")
        };
        assert_eq!(e.kind, ErrorKind::Limit, "{}", e.message);
        assert!(e.message.contains("give -force"), "{}", e.message);
        let Err(e) = s.gradients(&[], &[api::Param::Distance], &[], &cancel) else {
            panic!("over the budget")
        };
        assert_eq!(e.kind, ErrorKind::Limit, "{}", e.message);
        // an override that brings it within the budget renders
        let small = s.render(
            &words("-mosaic_domains 2 -detpixels 16"),
            &|_| {},
            &AtomicBool::new(false),
        );
        assert!(small.is_ok(), "{:?}", small.err().map(|e| e.message));
        // -force: past the budget (then cancelled by the flag set above)
        let e = s.render(&words("-force"), &|_| {}, &cancel).err();
        assert!(
            e.is_none_or(|e| e.kind != ErrorKind::Limit),
            "-force is not refused"
        );
    }

    #[test]
    fn rotation_gives_the_misset_back() {
        let m = [10.0f64, -20.0, 30.0];
        let [rx, ry, rz] = m.map(f64::to_radians);
        let rxm = [
            [1.0, 0.0, 0.0],
            [0.0, rx.cos(), -rx.sin()],
            [0.0, rx.sin(), rx.cos()],
        ];
        let rym = [
            [ry.cos(), 0.0, ry.sin()],
            [0.0, 1.0, 0.0],
            [-ry.sin(), 0.0, ry.cos()],
        ];
        let rzm = [
            [rz.cos(), -rz.sin(), 0.0],
            [rz.sin(), rz.cos(), 0.0],
            [0.0, 0.0, 1.0],
        ];
        let mul = |a: [[f64; 3]; 3], b: [[f64; 3]; 3]| {
            let mut o = [[0.0; 3]; 3];
            for i in 0..3 {
                for j in 0..3 {
                    o[i][j] = (0..3).map(|k| a[i][k] * b[k][j]).sum();
                }
            }
            o
        };
        let got = misset_deg_from_rotation(mul(rzm, mul(rym, rxm)));
        for i in 0..3 {
            assert!((got[i] - m[i]).abs() < 1e-9, "{got:?}");
        }
    }

    #[test]
    fn given_files_shadow_the_disk_and_errors_name_them() {
        let mut given = HashMap::new();
        given.insert("mem.hkl".to_string(), b"1 2 x\n".to_vec());
        let e = Session::new(
            words("-cell 70 80 90 90 90 90 -hkl mem.hkl -lambda 1 -distance 100 -detpixels 8"),
            CachedFiles::new(given),
        )
        .err()
        .expect("a bad table is an error");
        assert!(e.message.contains("mem.hkl"), "{}", e.message);
    }
}
