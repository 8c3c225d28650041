"""A shim with the attribute names of cctbx's ``simtbx.nanoBragg.nanoBragg``.

Set attributes, then call the methods, as with simtbx::

    from nanobragg.compat.simtbx import nanoBragg
    SIM = nanoBragg(detpixels_slowfast=(256, 256), pixel_size_mm=0.1)
    SIM.unit_cell_tuple = (78, 78, 38, 90, 90, 90)
    SIM.Fhkl = {(1, 0, 0): 100.0}       # a dict h,k,l -> F (simtbx takes a miller array)
    SIM.default_F = 10
    SIM.Ncells_abc = (10, 10, 10)
    SIM.wavelength_A = 1.0
    SIM.distance_mm = 100
    SIM.add_nanoBragg_spots()
    SIM.add_background()
    SIM.raw_pixels                      # numpy float64 (slow, fast), photons/pixel
    SIM.to_smv_format("image.img")

Every call goes through :class:`nanobragg.Simulator`, :func:`nanobragg.nonbragg` and
:func:`nanobragg.noisify`: the results are the CLI's.

What it covers: ``Amatrix`` (rows a*, b*, c* in Å⁻¹, as ``sqr(crystal.get_A()).transpose()``),
``unit_cell_tuple``, ``missets_deg``, ``Fhkl`` (dict), ``default_F``, ``Ncells_abc``,
``xtal_shape`` (``"square"``, ``"round"``, ``"gauss"``, ``"tophat"``), ``mosaic_spread_deg``,
``mosaic_domains``, ``mosaic_seed``, ``phi_deg``, ``osc_deg``, ``phisteps``, ``wavelength_A``,
``dispersion_pct``, ``divergence_mrad``, ``polarization``, ``fluence``, ``flux``,
``exposure_s``, ``beamsize_mm``, ``distance_mm``, ``beam_center_mm``, ``pixel_size_mm``,
``detpixels_slowfast``, ``oversample``, ``point_pixel``, ``detector_thick_mm``,
``adc_offset_adu``, ``seed``, ``raw_pixels``, ``add_nanoBragg_spots()``,
``add_background(stol="water.stol", thick_mm=0.1)``, ``add_noise()``, ``to_smv_format()``.

What it does not cover: cctbx objects (``flex`` arrays, ``sqr``, miller arrays: pass plain
tuples, dicts and NumPy arrays), ``Fbg_vs_stol`` tables as lists (give an ``.stol`` file),
``apply_psf()`` alone (use ``add_noise(psf_fwhm_um=...)``), the spectrum/sources API
(``xray_beams``), ``detector_psf_*``, ``beam_center_mm`` conventions other than MOSFLM's, the
``progress_meter``/``verbose`` printing, and simtbx's GPU/Kokkos back ends (``backend="gpu"``
is this package's wgpu kernel).
"""

from __future__ import annotations

import difflib
import os
import re
from typing import TYPE_CHECKING, Any, Optional

import numpy as np
import numpy.typing as npt

from ..chain import noisify as _noisify
from ..chain import nonbragg as _nonbragg
from ..config import Backend, Beam, Crystal, Detector, Files, Precision, Shape
from ..sf import StructureFactors
from ..simulator import Simulator

__all__ = ["nanoBragg"]


class nanoBragg:
    """The simtbx-style simulator (see the module's docstring for what it covers). Setting an
    attribute it does not have (``SIM.wavelenght_A = 1``) is an ``AttributeError`` naming the
    nearest ones, not a silently ignored new attribute."""

    detpixels_slowfast: tuple[int, int]
    pixel_size_mm: float
    Ncells_abc: tuple[float, float, float]
    wavelength_A: float
    oversample: int
    verbose: int
    distance_mm: float
    beam_center_mm: Optional[tuple[float, float]]
    unit_cell_tuple: Optional[tuple[float, float, float, float, float, float]]
    Amatrix: Any
    missets_deg: Optional[tuple[float, float, float]]
    Fhkl: Any
    default_F: float
    xtal_shape: Shape
    mosaic_spread_deg: float
    mosaic_domains: int
    mosaic_seed: Optional[int]
    phi_deg: float
    osc_deg: Optional[float]
    phisteps: Optional[int]
    dispersion_pct: float
    divergence_mrad: float
    polarization: Optional[float]
    fluence: Optional[float]
    flux: Optional[float]
    exposure_s: Optional[float]
    beamsize_mm: Optional[float]
    point_pixel: bool
    detector_thick_mm: float
    adc_offset_adu: float
    seed: int
    backend: Backend
    precision: Precision
    raw_pixels: npt.NDArray[np.float64]

    def __init__(
        self,
        detpixels_slowfast: tuple[int, int] = (1024, 1024),
        pixel_size_mm: float = 0.1,
        Ncells_abc: tuple[float, float, float] = (1, 1, 1),
        wavelength_A: float = 1.0,
        verbose: int = 0,
        oversample: int = 0,
    ) -> None:
        self.detpixels_slowfast = (int(detpixels_slowfast[0]), int(detpixels_slowfast[1]))
        self.pixel_size_mm = pixel_size_mm
        self.Ncells_abc = (Ncells_abc[0], Ncells_abc[1], Ncells_abc[2])
        self.wavelength_A = wavelength_A
        self.oversample = oversample
        self.verbose = verbose
        self.distance_mm = 100.0
        self.beam_center_mm = None
        self.unit_cell_tuple = None
        self.Amatrix = None
        self.missets_deg = None
        self.Fhkl = None
        self.default_F = 0.0
        self.xtal_shape = "square"
        self.mosaic_spread_deg = 0.0
        self.mosaic_domains = 1
        self.mosaic_seed = None
        self.phi_deg = 0.0
        self.osc_deg = None
        self.phisteps = None
        self.dispersion_pct = 0.0
        self.divergence_mrad = 0.0
        self.polarization = None
        self.fluence = None
        self.flux = None
        self.exposure_s = None
        self.beamsize_mm = None
        self.point_pixel = False
        self.detector_thick_mm = 0.0
        self.adc_offset_adu = 40.0
        self.seed = 1
        self.backend = "cpu"
        self.precision = "f64"
        s, f = self.detpixels_slowfast
        self.raw_pixels = np.zeros((s, f), dtype=np.float64)
        self._sim: Optional[Simulator] = None

    if not TYPE_CHECKING:  # a type checker reports an unknown attribute itself (no __setattr__)

        def __setattr__(self, name: str, value: Any) -> None:
            if not name.startswith("_") and name not in _ATTRIBUTES:
                near = difflib.get_close_matches(name, _ATTRIBUTES, n=2)
                hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else " (see the module's docstring for what it covers)"
                raise AttributeError(f"nanoBragg has no attribute {name!r}{hint}", name=name, obj=self)
            object.__setattr__(self, name, value)

    def _config(self) -> tuple[Crystal, Beam, Detector, Files]:
        try:
            return self._typed_config()
        except (ValueError, TypeError) as e:
            raise _in_simtbx_words(e) from None

    def _typed_config(self) -> tuple[Crystal, Beam, Detector, Files]:
        files: Files = {}
        na, nb_, nc_ = _triple("Ncells_abc", self.Ncells_abc, "Na, Nb, Nc")
        c = Crystal(N=(na, nb_, nc_), default_F=self.default_F, shape=self.xtal_shape,
                    mosaic_spread_deg=self.mosaic_spread_deg or None, mosaic_domains=self.mosaic_domains if self.mosaic_spread_deg else None,
                    mosaic_seed=self.mosaic_seed, phi_deg=self.phi_deg, osc_deg=self.osc_deg, phisteps=self.phisteps)
        if self.Amatrix is not None:
            from .. import _nanobragg

            a = np.asarray(self.Amatrix, dtype=np.float64).reshape(3, 3)
            files["<Amatrix>.mat"] = _nanobragg.mat_text(a.tolist(), float(self.wavelength_A)).encode()
            c.mat_file = "<Amatrix>.mat"
        elif self.unit_cell_tuple is not None:
            c.cell_A_deg = tuple(self.unit_cell_tuple)
        if self.missets_deg is not None:
            x, y, z = _triple("missets_deg", self.missets_deg, "x, y, z rotations")
            c.misset_deg = (x, y, z)
        if self.Fhkl is not None:
            c.F = self.Fhkl if isinstance(self.Fhkl, StructureFactors) else StructureFactors.from_dict(self.Fhkl)
        b = Beam(wavelength_A=self.wavelength_A, dispersion_pct=self.dispersion_pct or None, divergence_mrad=self.divergence_mrad or None,
                 polarization=self.polarization, fluence_ph_per_m2=self.fluence, flux_ph_per_s=self.flux, exposure_s=self.exposure_s,
                 beamsize_mm=self.beamsize_mm)
        s, f = self.detpixels_slowfast
        d = Detector(pixels=(f, s), pixel_mm=self.pixel_size_mm, distance_mm=self.distance_mm,
                     oversample=self.oversample or None, point_pixel=self.point_pixel or None,
                     thickness_um=(self.detector_thick_mm * 1e3) or None)
        if self.beam_center_mm is not None:
            bx, by = self.beam_center_mm
            d.beam_center_mm = (bx, by)
        return c, b, d, files

    def _simulator(self) -> Simulator:
        c, b, d, files = self._config()
        try:
            return Simulator(c, b, d, precision=self.precision, backend=self.backend, files=files)
        except (ValueError, TypeError) as e:
            raise _in_simtbx_words(e) from None

    def add_nanoBragg_spots(self) -> None:
        """Renders the Bragg spots and adds them to ``raw_pixels``."""
        self._sim = self._simulator()
        self.raw_pixels = self.raw_pixels + self._sim.render().astype(np.float64)

    def add_background(
        self, stol: str = "water.stol", thick_mm: float = 0.1, density_gcm3: float = 1.0, molecular_weight: float = 18.0
    ) -> None:
        """Adds nonBragg's amorphous background (a bundled or given ``.stol`` table) on the
        same detector and beam."""
        s, f = self.detpixels_slowfast
        words = ["-stol", stol, "-thick", repr(float(thick_mm)), "-density", repr(float(density_gcm3)), "-MW", repr(float(molecular_weight)),
                 "-lambda", repr(float(self.wavelength_A)), "-distance", repr(float(self.distance_mm)), "-pixel", repr(float(self.pixel_size_mm)),
                 "-detpixels_f", str(f), "-detpixels_s", str(s), "-nonoise", "-nopgm"]
        for flag, v in (("-fluence", self.fluence), ("-flux", self.flux), ("-exposure", self.exposure_s), ("-beamsize", self.beamsize_mm)):
            if v is not None:
                words += [flag, repr(float(v))]
        if self.beam_center_mm is not None:
            words += ["-Xbeam", repr(float(self.beam_center_mm[0])), "-Ybeam", repr(float(self.beam_center_mm[1]))]
        self.raw_pixels = self.raw_pixels + _nonbragg(words).astype(np.float64)

    def add_noise(self, readout_noise_adu: float = 0.0, psf_fwhm_um: float = 0.0, gain: float = 1.0) -> None:
        """Replaces ``raw_pixels`` by noisify's noisy image (ADU, with the ADC offset)."""
        words = ["-seed", str(int(self.seed)), "-readout_noise", repr(float(readout_noise_adu)), "-gain", repr(float(gain)),
                 "-adc", repr(float(self.adc_offset_adu)), "-pixel", repr(float(self.pixel_size_mm)), "-nopgm"]
        if psf_fwhm_um:
            words += ["-psf", "gauss", "-psf_fwhm", repr(float(psf_fwhm_um))]
        r = _noisify(self.raw_pixels.astype(np.float32), words)
        assert r.noise_image is not None  # noisify without -nonoise
        self.raw_pixels = r.noise_image.astype(np.float64)

    def to_smv_format(self, fileout: str, intfile_scale: float = 0.0) -> None:
        """Writes ``raw_pixels`` as the CLI's ``-intfile`` SMV image (scale ≤ 0: 55000/max)."""
        sim = self._sim or self._simulator()
        if intfile_scale and intfile_scale > 0:
            c, b, d, files = self._config()
            sim = Simulator.from_args(sim.args() + ["-scale", repr(float(intfile_scale))], files=sim._files)
        data = sim.int_image(self.raw_pixels.astype(np.float32))
        from .. import _nanobragg

        _nanobragg.write_file_atomic(os.fsdecode(fileout), data)


# the attributes a nanoBragg has (those its class declares), the only ones it lets be set
_ATTRIBUTES: tuple[str, ...] = tuple(nanoBragg.__annotations__)

# the typed configuration's fields that the shim's attributes become (`nanoBragg._config`): its
# errors name the attribute the user set, not the field
_SIMTBX_NAME = {
    "Crystal.N": "Ncells_abc",
    "Crystal.cell_A_deg": "unit_cell_tuple",
    "Crystal.mat_file": "Amatrix",
    "Crystal.misset_deg": "missets_deg",
    "Crystal.F": "Fhkl",
    "Crystal.default_F": "default_F",
    "Crystal.shape": "xtal_shape",
    "Crystal.mosaic_spread_deg": "mosaic_spread_deg",
    "Crystal.mosaic_domains": "mosaic_domains",
    "Crystal.mosaic_seed": "mosaic_seed",
    "Crystal.phi_deg": "phi_deg",
    "Crystal.osc_deg": "osc_deg",
    "Crystal.phisteps": "phisteps",
    "Beam.wavelength_A": "wavelength_A",
    "Beam.dispersion_pct": "dispersion_pct",
    "Beam.divergence_mrad": "divergence_mrad",
    "Beam.polarization": "polarization",
    "Beam.fluence_ph_per_m2": "fluence",
    "Beam.flux_ph_per_s": "flux",
    "Beam.exposure_s": "exposure_s",
    "Beam.beamsize_mm": "beamsize_mm",
    "Detector.pixels": "detpixels_slowfast",
    "Detector.pixel_mm": "pixel_size_mm",
    "Detector.distance_mm": "distance_mm",
    "Detector.oversample": "oversample",
    "Detector.point_pixel": "point_pixel",
    "Detector.thickness_um": "detector_thick_mm (here in µm)",
    "Detector.beam_center_mm": "beam_center_mm",
}
_TYPED_FIELD = re.compile("|".join(re.escape(k) + r"\b" for k in sorted(_SIMTBX_NAME, key=len, reverse=True)))


def _in_simtbx_words(e: Exception) -> Exception:
    """``e`` with the typed fields it names (``Crystal.cell_A_deg``) said as the shim's
    attributes (``nanoBragg.unit_cell_tuple``)."""
    if e.args and isinstance(e.args[0], str):
        message = _TYPED_FIELD.sub(lambda m: "nanoBragg." + _SIMTBX_NAME[m.group(0)], e.args[0])
        if message != e.args[0]:
            e.args = (message,) + e.args[1:]
            if hasattr(e, "message"):
                e.message = message
    return e


def _triple(name: str, v: Any, what: str) -> tuple[Any, Any, Any]:
    """The three values of attribute ``name`` (``what`` they are), or a TypeError naming it."""
    if isinstance(v, (str, bytes)) or not hasattr(v, "__len__") or len(v) != 3:
        raise TypeError(f"nanoBragg.{name}: expected 3 numbers ({what}), got {v!r}")
    return v[0], v[1], v[2]
