//! The flag rows as the page's form and the Python configuration show them: one table beside
//! `FLAGS` for each, naming its flag row by a word of the row (`find`), so that a parameter's
//! name, units, range and help stay with the row and only what the page or Python add is here.
//!
//! * [`PAGE`]: the form's fields (`www/src/params.ts`): URL key, flag word, label, group,
//!   kind, unit, value count, slider range, choices; the fields of the realistic chain
//!   (`layer`) have no flag.
//! * [`PYTHON`]: the fields of `Crystal`, `Beam` and `Detector` (`python/nanobragg/config.py`):
//!   name, flag, how the value becomes words, type, docstring, and the further flags a field
//!   writes (`also`, for the errors that name the field of a flag).
//! * The derivative parameters are `tangent::PARAMS` (each names the flag row it moves).
//!
//! `crate/tests/generated.rs` writes `www/src/params.ts` and the fields of `config.py` from
//! these tables and fails when a committed copy differs (`UPDATE_GENERATED=1` rewrites them);
//! its checks hold every flag word here to a row of `FLAGS`.

/// A group of the page's form, in the form's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageGroup {
    Crystal,
    Sf,
    Beam,
    Detector,
    Layers,
    Gonio,
    Noise,
    Advanced,
}

impl PageGroup {
    pub const ALL: [PageGroup; 8] = [
        PageGroup::Crystal,
        PageGroup::Sf,
        PageGroup::Beam,
        PageGroup::Detector,
        PageGroup::Layers,
        PageGroup::Gonio,
        PageGroup::Noise,
        PageGroup::Advanced,
    ];
    /// The id the page's code uses (`GroupId`).
    pub fn id(self) -> &'static str {
        match self {
            PageGroup::Crystal => "crystal",
            PageGroup::Sf => "sf",
            PageGroup::Beam => "beam",
            PageGroup::Detector => "detector",
            PageGroup::Layers => "layers",
            PageGroup::Gonio => "gonio",
            PageGroup::Noise => "noise",
            PageGroup::Advanced => "advanced",
        }
    }
    /// The heading a person reads.
    pub fn label(self) -> &'static str {
        match self {
            PageGroup::Crystal => "Crystal",
            PageGroup::Sf => "Structure factors",
            PageGroup::Beam => "Beam",
            PageGroup::Detector => "Detector",
            PageGroup::Layers => "Background and detector effects",
            PageGroup::Gonio => "Goniometer",
            PageGroup::Noise => "Noise and SMV output",
            PageGroup::Advanced => "Advanced",
        }
    }
}

/// The input a page field is (`Kind` of params.ts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageKind {
    Num,
    Int,
    Vec,
    Choice,
    Bool,
    File,
    Text,
}

impl PageKind {
    pub fn id(self) -> &'static str {
        match self {
            PageKind::Num => "num",
            PageKind::Int => "int",
            PageKind::Vec => "vec",
            PageKind::Choice => "choice",
            PageKind::Bool => "bool",
            PageKind::File => "file",
            PageKind::Text => "text",
        }
    }
}

/// One choice of a choice field: its value in the URL, its label, the switches it gives.
#[derive(Clone, Copy, Debug)]
pub struct PageChoice {
    pub value: &'static str,
    pub label: &'static str,
    pub flags: &'static [&'static str],
}

/// The choices of a choice field.
#[derive(Clone, Copy, Debug)]
pub enum PageChoices {
    None,
    List(&'static [PageChoice]),
    /// "none" and the crate's detector presets (`presets::PRESETS`, via `detectors.json`).
    DetectorPresets,
}

/// A field of the page's form.
#[derive(Clone, Copy, Debug)]
pub struct PageField {
    /// The URL parameter (and, lower-cased, the `<nanobragg-view>` attribute).
    pub key: &'static str,
    /// The flag word it gives (a name or alias of a row of `FLAGS`), `""` for choices and layers.
    pub flag: &'static str,
    pub label: &'static str,
    pub group: PageGroup,
    pub kind: PageKind,
    pub unit: &'static str,
    /// Number of values of a vector (min, max).
    pub n: Option<(u8, u8)>,
    /// Range slider: min, max, step.
    pub slider: Option<(f64, f64, f64)>,
    pub choices: PageChoices,
    pub help: &'static str,
    /// A word accepted instead of numbers (`random`).
    pub word: &'static str,
    /// A layer of the realistic chain (no flag).
    pub layer: bool,
    pub placeholder: &'static str,
}

const fn page(
    key: &'static str,
    flag: &'static str,
    label: &'static str,
    group: PageGroup,
    kind: PageKind,
) -> PageField {
    PageField {
        key,
        flag,
        label,
        group,
        kind,
        unit: "",
        n: None,
        slider: None,
        choices: PageChoices::None,
        help: "",
        word: "",
        layer: false,
        placeholder: "",
    }
}

impl PageField {
    const fn unit(mut self, u: &'static str) -> Self {
        self.unit = u;
        self
    }
    const fn n(mut self, min: u8, max: u8) -> Self {
        self.n = Some((min, max));
        self
    }
    const fn slider(mut self, min: f64, max: f64, step: f64) -> Self {
        self.slider = Some((min, max, step));
        self
    }
    const fn help(mut self, h: &'static str) -> Self {
        self.help = h;
        self
    }
    const fn word(mut self, w: &'static str) -> Self {
        self.word = w;
        self
    }
    const fn layer(mut self) -> Self {
        self.layer = true;
        self
    }
    const fn placeholder(mut self, p: &'static str) -> Self {
        self.placeholder = p;
        self
    }
    const fn choices(mut self, c: &'static [PageChoice]) -> Self {
        self.choices = PageChoices::List(c);
        self
    }
    const fn presets(mut self) -> Self {
        self.choices = PageChoices::DetectorPresets;
        self
    }
}

const fn choice(
    value: &'static str,
    label: &'static str,
    flags: &'static [&'static str],
) -> PageChoice {
    PageChoice {
        value,
        label,
        flags,
    }
}

use PageGroup as G;
use PageKind::*;

/// The page's form, in its order.
pub static PAGE: &[PageField] = &[
    // ---- crystal
    page("cell", "-cell", "Unit cell a b c α β γ", G::Crystal, Vec)
        .n(1, 6)
        .unit("Å, °")
        .placeholder("100 100 100 90 90 90"),
    page("mat", "-mat", "Orientation matrix file (MOSFLM A)", G::Crystal, File)
        .help("overrides the cell orientation; -cell still sets the lengths"),
    page("N", "-N", "Cells per axis N", G::Crystal, Int).slider(1.0, 60.0, 1.0),
    page("Na", "-Na", "Cells along a", G::Crystal, Int),
    page("Nb", "-Nb", "Cells along b", G::Crystal, Int),
    page("Nc", "-Nc", "Cells along c", G::Crystal, Int),
    page("xtal_size", "-xtal_size", "Crystal size", G::Crystal, Num)
        .unit("mm")
        .help("overrides N"),
    page("misset_seed", "-misset_seed", "Random misset seed", G::Crystal, Int),
    page("misset", "-misset", "Misset angles x y z (or \"random\")", G::Crystal, Vec)
        .n(3, 3)
        .unit("°")
        .word("random"),
    page("mosaic", "-mosaic", "Mosaic spread", G::Crystal, Num)
        .unit("°")
        .slider(0.0, 3.0, 0.01),
    page("mosaic_domains", "-mosaic_domains", "Mosaic domains", G::Crystal, Int).slider(1.0, 100.0, 1.0),
    page("mosaic_seed", "-mosaic_seed", "Mosaic seed", G::Crystal, Int),
    page("shape", "", "Crystal shape (spot profile)", G::Crystal, Choice)
        .choices(&[
            choice("", "Square (default)", &[]),
            choice("round", "Round", &["-round_xtal"]),
            choice("gauss", "Gaussian", &["-gauss_xtal"]),
            choice("tophat", "Top-hat", &["-tophat_spots"]),
        ])
        .help("Gaussian and top-hat are upstream's: their spot width scales as 1/N³ and with the cell in Å (MODEL.md C-QUIRK 16), so N changes them far more than it would a real crystal's; square and round scale as 1/N"),
    page("fudge", "-fudge", "Shape fudge factor", G::Crystal, Num),
    // ---- structure factors
    page("pdb", "-pdb", "Atomic model (PDB / mmCIF)", G::Sf, File)
        .help("structure factors and cell from a model (computed once, then cached); overrides the cell, HKL file and default F"),
    page("hkl", "-hkl", "HKL file (h k l F)", G::Sf, File),
    page("default_F", "-default_F", "Default F", G::Sf, Num)
        .slider(0.0, 1000.0, 1.0)
        .unit("e⁻"),
    page("interpolate", "", "Tricubic F interpolation", G::Sf, Choice).choices(&[
        choice("", "Automatic", &[]),
        choice("on", "On", &["-interpolate"]),
        choice("off", "Off", &["-nointerpolate"]),
    ]),
    // ---- beam
    page("lambda", "-lambda", "Wavelength", G::Beam, Num)
        .unit("Å")
        .slider(0.3, 10.0, 0.01),
    page("energy", "-energy", "Photon energy (instead of λ)", G::Beam, Num).unit("eV"),
    page("dispersion", "-dispersion", "Spectral dispersion Δλ/λ", G::Beam, Num)
        .unit("%")
        .slider(0.0, 10.0, 0.1),
    page("dispsteps", "-dispsteps", "Wavelength steps", G::Beam, Int),
    page("divergence", "-divergence", "Beam divergence", G::Beam, Num)
        .unit("mrad")
        .slider(0.0, 10.0, 0.1),
    page("hdivrange", "-hdivrange", "Horizontal divergence", G::Beam, Num).unit("mrad"),
    page("vdivrange", "-vdivrange", "Vertical divergence", G::Beam, Num).unit("mrad"),
    page("divsteps", "-divsteps", "Divergence steps", G::Beam, Int),
    page("div_shape", "", "Divergence grid", G::Beam, Choice).choices(&[
        choice("", "Round (default)", &[]),
        choice("square", "Square", &["-square_div"]),
    ]),
    page("sourcefile", "-sourcefile", "Source file (X Y Z weight λ)", G::Beam, File),
    page("polar", "-polar", "Kahn polarisation factor", G::Beam, Num).slider(0.0, 1.0, 0.01),
    page("nopolar", "-nopolar", "No polarisation correction", G::Beam, Bool),
    page("fluence", "-fluence", "Fluence", G::Beam, Num).unit("photons/m²"),
    page("flux", "-flux", "Flux", G::Beam, Num).unit("photons/s"),
    page("exposure", "-exposure", "Exposure", G::Beam, Num).unit("s"),
    page("beamsize", "-beamsize", "Beam size", G::Beam, Num).unit("mm"),
    page("water", "-water", "Water background thickness", G::Beam, Num)
        .unit("µm")
        .slider(0.0, 1000.0, 1.0),
    // ---- detector
    page("convention", "", "Convention", G::Detector, Choice).choices(&[
        choice("", "MOSFLM (default)", &[]),
        choice("xds", "XDS", &["-xds"]),
        choice("dials", "DIALS", &["-dials"]),
        choice("adxv", "ADXV", &["-adxv"]),
        choice("denzo", "DENZO", &["-denzo"]),
    ]),
    page("detector", "-detector", "Detector model", G::Detector, Choice).presets(),
    page("distance", "-distance", "Distance", G::Detector, Num)
        .unit("mm")
        .slider(20.0, 1000.0, 1.0),
    page("detpixels", "-detpixels", "Pixels per side", G::Detector, Int),
    page("detpixels_f", "-detpixels_f", "Fast pixels", G::Detector, Int),
    page("detpixels_s", "-detpixels_s", "Slow pixels", G::Detector, Int),
    page("pixel", "-pixel", "Pixel size", G::Detector, Num).unit("mm"),
    page("detsize", "-detsize", "Detector size", G::Detector, Num).unit("mm"),
    page("Xbeam", "-Xbeam", "Beam centre X", G::Detector, Num).unit("mm"),
    page("Ybeam", "-Ybeam", "Beam centre Y", G::Detector, Num).unit("mm"),
    page("twotheta", "-twotheta", "Detector two-theta", G::Detector, Num)
        .unit("°")
        .slider(-90.0, 90.0, 0.5),
    page("detector_rotx", "-detector_rotx", "Detector rotation x", G::Detector, Num)
        .unit("°")
        .slider(-45.0, 45.0, 0.5),
    page("detector_roty", "-detector_roty", "Detector rotation y", G::Detector, Num)
        .unit("°")
        .slider(-45.0, 45.0, 0.5),
    page("detector_rotz", "-detector_rotz", "Detector rotation z", G::Detector, Num)
        .unit("°")
        .slider(-180.0, 180.0, 1.0),
    page("curved_det", "-curved_det", "Curved (spherical) detector", G::Detector, Bool),
    page("point_pixel", "-point_pixel", "Point pixels (1/R²)", G::Detector, Bool),
    page("detector_thick", "-detector_thick", "Sensor thickness", G::Detector, Num).unit("µm"),
    page("detector_abs", "-detector_abs", "Sensor attenuation depth", G::Detector, Num).unit("µm"),
    page("thicksteps", "-thicksteps", "Sensor layers", G::Detector, Int),
    page("oversample", "-oversample", "Sub-pixels per axis", G::Detector, Int).slider(1.0, 8.0, 1.0),
    page("roi", "-roi", "Region of interest xmin xmax ymin ymax", G::Detector, Vec)
        .n(4, 4)
        .unit("px"),
    page("mask", "-mask", "Mask image (SMV; 0 = skip pixel)", G::Detector, File),
    page("expt", "-expt", "DIALS experiment (.expt)", G::Detector, File)
        .help("detector, beam, spindle and the crystal DIALS refined; replaces the detector fields; the misset and cell fields turn and resize its crystal (the cell field starts at the file's)"),
    page("geom", "-geom", "CrystFEL geometry (.geom)", G::Detector, File)
        .help("panels (corner, fs/ss vectors, res, clen), bad regions as masks; replaces the detector fields (docs/geometry.md)"),
    page("img", "-img", "Header from an SMV image", G::Detector, File)
        .help("detector size, distance, beam centre, wavelength; later fields override"),
    page("dmin", "-dmin", "Resolution limit", G::Detector, Num).unit("Å"),
    // ---- layers (the realistic chain, crate/src/realistic.rs: no flag)
    page("air", "", "Air path (background)", G::Layers, Num)
        .layer()
        .unit("mm")
        .help("air scattering (nonBragg); with any layer on, the water above is nonBragg's water layer too"),
    page("detnoise", "", "Detector noise (Poisson, read-out)", G::Layers, Bool)
        .layer()
        .help("the image is then in ADU, as the detector records it"),
    page("readout", "", "Read-out noise", G::Layers, Num).layer().unit("ADU"),
    page("psf", "", "PSF FWHM", G::Layers, Num).layer().unit("µm"),
    page("gain", "", "Gain", G::Layers, Num).layer().unit("ADU/photon"),
    page("show", "", "Layers shown", G::Layers, Choice)
        .layer()
        .choices(&[
            choice("", "Spots and background", &[]),
            choice("spots", "Spots only", &[]),
            choice("background", "Background only", &[]),
        ]),
    // ---- goniometer
    page("phi", "-phi", "Spindle start φ", G::Gonio, Num)
        .unit("°")
        .slider(0.0, 360.0, 0.5),
    page("osc", "-osc", "Oscillation range", G::Gonio, Num)
        .unit("°")
        .slider(0.0, 5.0, 0.05),
    page("phisteps", "-phisteps", "φ steps", G::Gonio, Int),
    page("phistep", "-phistep", "φ step", G::Gonio, Num).unit("°"),
    page("spindle_axis", "-spindle_axis", "Spindle axis x y z", G::Gonio, Vec).n(3, 3),
    // ---- noise / SMV
    page("seed", "-seed", "Noise seed", G::Noise, Int),
    page("adc", "-adc", "ADC offset", G::Noise, Num),
    page("scale", "-scale", "SMV scale (0 = auto)", G::Noise, Num),
    // ---- advanced
    page("extra", "", "Extra flags (upstream syntax)", G::Advanced, Text)
        .placeholder("-oversample_omega -phisteps 3"),
];

/// A class of the Python configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PyClass {
    Crystal,
    Beam,
    Detector,
}

impl PyClass {
    pub const ALL: [PyClass; 3] = [PyClass::Crystal, PyClass::Beam, PyClass::Detector];
    pub fn name(self) -> &'static str {
        match self {
            PyClass::Crystal => "Crystal",
            PyClass::Beam => "Beam",
            PyClass::Detector => "Detector",
        }
    }
    /// The class's docstring.
    pub fn doc(self) -> &'static str {
        match self {
            PyClass::Crystal => "The crystal: cell or orientation matrix, misset, size, shape, mosaicity, goniometer and\n    structure factors.",
            PyClass::Beam => "The beam: wavelength, spectrum, divergence, polarisation, fluence, sources.",
            PyClass::Detector => "The detector: convention, preset, distance, beam centre, pixels, tilts, sensor.",
        }
    }
}

/// A field of a Python configuration class.
#[derive(Clone, Copy, Debug)]
pub struct PyField {
    pub class: PyClass,
    /// The field's name (its unit in the name: `wavelength_A`).
    pub name: &'static str,
    /// The flag row it writes (`""`: a choice of switches, see `also`).
    pub flag: &'static str,
    /// How the value becomes words (config.py's `_field_words`): float, int, vec, switch,
    /// choice, file, text, special.
    pub kind: &'static str,
    /// Numbers of a `vec`.
    pub n: u8,
    /// The value's type (the field is `Optional[ty]`; `Any` stays `Any`).
    pub ty: &'static str,
    /// Further keyword arguments of config.py's `_f` (Python source: `words=_n_words`, …).
    pub extra: &'static str,
    /// Further flag rows the field writes (switches, the second of a pair).
    pub also: &'static [&'static str],
    /// The field's docstring (`""`: none).
    pub doc: &'static str,
}

const fn py(
    class: PyClass,
    name: &'static str,
    flag: &'static str,
    kind: &'static str,
    ty: &'static str,
) -> PyField {
    PyField {
        class,
        name,
        flag,
        kind,
        n: 1,
        ty,
        extra: "",
        also: &[],
        doc: "",
    }
}

impl PyField {
    const fn n(mut self, n: u8) -> Self {
        self.n = n;
        self
    }
    const fn extra(mut self, e: &'static str) -> Self {
        self.extra = e;
        self
    }
    const fn also(mut self, a: &'static [&'static str]) -> Self {
        self.also = a;
        self
    }
    const fn doc(mut self, d: &'static str) -> Self {
        self.doc = d;
        self
    }
}

use PyClass::{Beam as B, Crystal as C, Detector as D};

const FLOAT: &str = "float";
const INT: &str = "int";
const OPT_F: &str = "float";
const OPT_I: &str = "int";
const VEC3: &str = "Vec3";
const PATH: &str = "PathLike";
const BOOL: &str = "bool";

/// The fields of `Crystal`, `Beam` and `Detector`, in their order.
pub static PYTHON: &[PyField] = &[
    // ---- Crystal
    py(C, "cell_A_deg", "-cell", "vec", "Sequence[float]")
        .n(6)
        .doc("a, b, c (Å, > 0), α, β, γ (degrees, between 0 and 180)."),
    py(C, "mat_file", "-mat", "file", PATH)
        .doc("MOSFLM orientation matrix file (A = UB, λ-scaled Å⁻¹)."),
    py(C, "misset_deg", "-misset", "special", "Union[Vec3, str]")
        .extra("words=_misset_words")
        .doc("Rotation about x, then y, then z (degrees), or ``\"random\"``."),
    py(C, "rotation", "-misset", "special", "Sequence[Sequence[float]]")
        .extra("words=_rotation_words")
        .doc("Orientation as a rotation matrix U (row-major, U = Rz·Ry·Rx): the misset angles of U."),
    py(C, "misset_seed", "-misset_seed", INT, OPT_I),
    py(C, "N", "-N", "special", "Union[float, Vec3]")
        .extra("words=_n_words")
        .also(&["-Na", "-Nb", "-Nc"])
        .doc("Unit cells along each axis (one number) or along a, b, c."),
    py(C, "size_mm", "-xtalsize", FLOAT, OPT_F),
    py(C, "thick_mm", "-xtal_thick", FLOAT, OPT_F),
    py(C, "width_mm", "-xtal_width", FLOAT, OPT_F),
    py(C, "height_mm", "-xtal_height", FLOAT, OPT_F),
    py(C, "shape", "", "special", "Shape")
        .extra("words=_shape_words")
        .also(&["-square_xtal", "-round_xtal", "-gauss_xtal", "-tophat_spots"])
        .doc("``\"square\"`` (default), ``\"round\"``, ``\"gauss\"`` or ``\"tophat\"``."),
    py(C, "fudge", "-fudge", FLOAT, OPT_F),
    py(C, "mosaic_spread_deg", "-mosaic", FLOAT, OPT_F),
    py(C, "mosaic_domains", "-mosaic_dom", INT, OPT_I),
    py(C, "mosaic_seed", "-mosaic_seed", INT, OPT_I),
    py(C, "phi_deg", "-phi", FLOAT, OPT_F),
    py(C, "osc_deg", "-osc", FLOAT, OPT_F),
    py(C, "phistep_deg", "-phistep", FLOAT, OPT_F),
    py(C, "phisteps", "-phisteps", INT, OPT_I),
    py(C, "spindle_axis", "-spindle_axis", "vec", VEC3).n(3),
    py(C, "F", "-hkl", "special", "Any")
        .extra("words=_f_words")
        .doc("Structure factors: :class:`nanobragg.StructureFactors`, ``{(h, k, l): F}`` or an -hkl path."),
    py(C, "model", "-pdb", "file", PATH)
        .doc("Atomic model (PDB/mmCIF path): structure factors to the detector's reach (or ``dmin_A``)."),
    py(C, "default_F", "-default_F", FLOAT, OPT_F),
    py(C, "fdump_file", "-dump", "file", PATH)
        .doc("Upstream's structure-factor cache (``-dump``), read when no F or model is given. The\n    typed configuration reads none unless it is named here (the CLI reads ``./Fdump.bin``)."),
    py(C, "interpolate", "-interpolate", "switch", BOOL).extra("off=\"-nointerpolate\""),
    // ---- Beam
    py(B, "wavelength_A", "-lambda", FLOAT, OPT_F),
    py(B, "energy_eV", "-energy", FLOAT, OPT_F),
    py(B, "dispersion_pct", "-dispersion", FLOAT, OPT_F),
    py(B, "dispsteps", "-dispsteps", INT, OPT_I),
    py(B, "divergence_mrad", "-divergence", FLOAT, OPT_F),
    py(B, "hdivrange_mrad", "-hdivrange", FLOAT, OPT_F),
    py(B, "vdivrange_mrad", "-vdivrange", FLOAT, OPT_F),
    py(B, "hdivstep_mrad", "-hdivstep", FLOAT, OPT_F),
    py(B, "vdivstep_mrad", "-vdivstep", FLOAT, OPT_F),
    py(B, "divsteps", "-divsteps", INT, OPT_I),
    py(B, "hdivsteps", "-hdivsteps", INT, OPT_I),
    py(B, "vdivsteps", "-vdivsteps", INT, OPT_I),
    py(B, "round_div", "-round_div", "switch", BOOL).extra("off=\"-square_div\""),
    py(B, "sources", "-sourcefile", "special", "Any")
        .extra("words=_sources_words")
        .doc("An -sourcefile path, or rows (x, y, z, weight, λ in m)."),
    py(B, "beam_vector", "-beam_vector", "vec", VEC3).n(3),
    py(B, "polar_vector", "-polar_vector", "vec", VEC3).n(3),
    py(B, "polarization", "-polar", FLOAT, OPT_F).doc("Kahn polarisation factor K, -1 to 1."),
    py(B, "nopolar", "-nopolar", "switch", BOOL),
    py(B, "fluence_ph_per_m2", "-fluence", FLOAT, OPT_F),
    py(B, "flux_ph_per_s", "-flux", FLOAT, OPT_F),
    py(B, "exposure_s", "-exposure", FLOAT, OPT_F),
    py(B, "beamsize_mm", "-beamsize", FLOAT, OPT_F),
    py(B, "water_um", "-water", FLOAT, OPT_F),
    // ---- Detector
    py(D, "convention", "", "choice", "Convention")
        .extra("choices=CONVENTIONS")
        .also(&["-mosflm", "-xds", "-adxv", "-denzo", "-dials"]),
    py(D, "preset", "-detector", "text", "str")
        .doc("A real detector: ``\"pilatus6m\"``, ``\"eiger2-16m\"``, ``\"eiger2-4m\"``, ``\"mx300\"``."),
    py(D, "pixel_mm", "-pixel", FLOAT, OPT_F),
    py(D, "pixels", "-detpixels", "special", "Union[int, Tuple[int, int]]")
        .extra("words=_pixels_words")
        .also(&["-detpixels_f", "-detpixels_s"])
        .doc("Pixels per side, or (fast, slow)."),
    py(D, "size_mm", "-detsize", FLOAT, OPT_F),
    py(D, "distance_mm", "-distance", FLOAT, OPT_F),
    py(D, "close_distance_mm", "-close_distance", FLOAT, OPT_F),
    py(D, "beam_center_mm", "-Xbeam", "special", "Tuple[float, float]")
        .extra("words=_pair_words(\"-Xbeam\", \"-Ybeam\")")
        .also(&["-Ybeam"])
        .doc("(Xbeam, Ybeam) in the convention's axes."),
    py(D, "close_center_mm", "-Xclose", "special", "Tuple[float, float]")
        .extra("words=_pair_words(\"-Xclose\", \"-Yclose\")")
        .also(&["-Yclose"]),
    py(D, "org_px", "-ORGX", "special", "Tuple[float, float]")
        .extra("words=_pair_words(\"-ORGX\", \"-ORGY\")")
        .also(&["-ORGY"]),
    py(D, "pivot", "-pivot", "choice", "Pivot").extra("choices=(\"sample\", \"beam\")"),
    py(D, "fdet_vector", "-fdet_vector", "vec", VEC3).n(3),
    py(D, "sdet_vector", "-sdet_vector", "vec", VEC3).n(3),
    py(D, "odet_vector", "-odet_vector", "vec", VEC3).n(3),
    py(D, "twotheta_axis", "-twotheta_axis", "vec", VEC3).n(3),
    py(D, "twotheta_deg", "-twotheta", FLOAT, OPT_F),
    py(D, "rotx_deg", "-detector_rotx", FLOAT, OPT_F),
    py(D, "roty_deg", "-detector_roty", FLOAT, OPT_F),
    py(D, "rotz_deg", "-detector_rotz", FLOAT, OPT_F),
    py(D, "curved", "-curved_det", "switch", BOOL),
    py(D, "point_pixel", "-point_pixel", "switch", BOOL),
    py(D, "absorption_depth_um", "-detector_abs", FLOAT, OPT_F),
    py(D, "thickness_um", "-detector_thick", FLOAT, OPT_F),
    py(D, "thicksteps", "-detector_thicksteps", INT, OPT_I),
    py(D, "oversample", "-oversample", INT, OPT_I),
    py(D, "oversample_thick", "-oversample_thick", "switch", BOOL),
    py(D, "oversample_polar", "-oversample_polar", "switch", BOOL),
    py(D, "oversample_omega", "-oversample_omega", "switch", BOOL),
    py(D, "roi", "-roi", "special", "Tuple[int, int, int, int]").extra("words=_roi_words"),
    py(D, "dmin_A", "-dmin", FLOAT, OPT_F),
    py(D, "mask_file", "-mask", "file", PATH),
    py(D, "img_file", "-img", "file", PATH),
];

/// Model and input-file rows Python's configuration deliberately has no field for, with why
/// (`crate/tests/generated.rs` holds every other such row to a field, so that a new flag is not
/// forgotten there). Each is still reachable as words (`Simulator.from_args`).
pub static PYTHON_OMITS: &[(&str, &str)] = &[
    ("-density", "accepted for upstream compatibility, no effect"),
    ("-stol", "accepted for upstream compatibility, no effect"),
    (
        "-coherent",
        "accepted for upstream compatibility, no effect",
    ),
    (
        "-detsize_f",
        "the detector's size is `pixels` × `pixel_mm` (or `size_mm`)",
    ),
    (
        "-detsize_s",
        "the detector's size is `pixels` × `pixel_mm` (or `size_mm`)",
    ),
    (
        "-pix0_vector",
        "upstream recomputes pix0; the flag only selects CUSTOM",
    ),
    (
        "-expt",
        "a DIALS file's geometry: words (`Simulator.from_args`)",
    ),
    (
        "-geom",
        "a CrystFEL file's geometry: words (`Simulator.from_args`)",
    ),
    (
        "-nexus_images",
        "frames of the -nexus output file, not the model",
    ),
];
