"""The :class:`Simulator`: a configuration resolved once, rendered many times."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, Optional, Sequence, Union, cast, overload

import numpy as np
import numpy.typing as npt

from . import _nanobragg
from .config import _FIELDS, AMBIGUOUS, Backend, Beam, Crystal, Detector, Overrides, Precision, _port_words, field_of_file, field_of_flag, mem_field_in, name_mem_files, override_words
from .errors import Error, InputError, UsageError

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Simulator", "FitResult", "GRADIENT_PARAMETERS", "Loss", "BackgroundModel"]

#: ``fit(loss=...)``: the robust loss of the fit's residuals.
Loss = Literal["huber", "cauchy", "squared"]
#: ``fit(background=...)``: none (the target holds the spots alone) or a local estimate.
BackgroundModel = Literal["none", "local"]

#: The parameters ``render(gradients=...)``, ``vjp`` and :mod:`nanobragg.torch` differentiate by
#: (units: rad for rot_*, Å for cell lengths and lambda, degrees for angles, mosaic and det_rot*,
#: mm for distance and beam_*, cells for n_*, relative for scale, photons/m² for fluence).
GRADIENT_PARAMETERS = (
    "rot_x", "rot_y", "rot_z", "cell_a", "cell_b", "cell_c", "cell_alpha", "cell_beta",
    "cell_gamma", "n_a", "n_b", "n_c", "n_cells", "mosaic", "distance", "beam_x", "beam_y",
    "det_rotx", "det_roty", "det_rotz", "lambda", "fluence", "scale", "default_F",
)

_NO_FDUMP = "/dev/null/no-Fdump.bin"

_PREDICT_DTYPE = [
    ("h", "i4"),
    ("k", "i4"),
    ("l", "i4"),
    ("fast", "f8"),
    ("slow", "f8"),
    ("d_A", "f8"),
    ("two_theta_deg", "f8"),
    ("excitation_error_per_A", "f8"),
    ("F", "f8"),
    ("intensity", "f8"),
    ("partiality", "f8"),
    ("phi_deg", "f8"),
    ("on_detector", "?"),
    ("in_condition", "?"),
]


_FLAG_WORD = re.compile(r"(?<![\w-])-[A-Za-z_]\w*")


def _name_field(e: Error, python: bool = False) -> Error:
    """``e`` with ``field`` set from its flag; with ``python`` (the user wrote the configuration
    in Python) its message names the Python fields (``Beam.wavelength_A``) where the crate's
    names the flags (``-lambda``), from the one flag → field table (``config.field_of_flag``)."""
    if python:
        # a table or source list given in Python reaches the crate as an in-memory file: the
        # error names its field (and no file of the user's)
        mem = field_of_file(e.file) or (mem_field_in(e.message) if e.file is None else None)
        if mem is not None:
            if isinstance(e, InputError):
                # not a file of the user's that could not be read: a bad value of the field, a
                # ValueError as the others (a table over the size limit is the crate's limit
                # kind, already a LimitError)
                e = UsageError(e.message, flag=e.flag, key=e.key)
            e.field = mem
            e.file, e.line = None, None
    if e.field is None:
        e.field = field_of_flag(e.flag)
    if python:
        # the cost budget's way out (`api::check_cost`) is an argument of the Simulator here
        message = e.message.replace("give -force to", "pass Simulator(..., force=True) to")
        message = name_mem_files(message)
        message = _FLAG_WORD.sub(lambda m: field_of_flag(m.group(0)) or m.group(0), message)
        if message != e.message:
            e.message = message
            e.args = (message,)
    return e


@dataclass(frozen=True, eq=False)
class FitResult:
    """What :meth:`Simulator.fit` returns (fields described there). Read as attributes
    (``fit.converged``, ``fit.values["rot_x"]``) or, as the dict it used to be, by key
    (``fit["values"]``)."""

    values: dict[str, float]
    """Fitted offsets from the simulator's values, per parameter, in the parameter's unit."""
    fitted: Overrides
    """The fitted set-up as keyword values: ``sim.render(**fit.fitted)``."""
    converged: bool
    """The crate's decision: the fit ended at a minimum near the target."""
    verdict: str
    """Why it did not converge (empty when it did)."""
    history: list[float]
    """Cost per selected pixel at each cycle's start and after each accepted step."""
    iterations: int
    cycles: int
    spots_checked: int
    spots_found: int
    correlation: float
    correlation_ceiling: float
    centroid_spots: int
    pixels: int
    image: npt.NDArray[np.float64]
    """The model at the fit (slow, fast), photons without the background."""

    def __getitem__(self, key: str) -> Any:
        if not isinstance(key, str) or key not in self.__dataclass_fields__:
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self.__dataclass_fields__

    def keys(self) -> list[str]:
        """The field names (so that ``dict(fit)`` reads it as a mapping)."""
        return list(self.__dataclass_fields__)

    def __repr__(self) -> str:
        state = "converged" if self.converged else f"did not converge: {self.verdict}"
        return f"<FitResult {state}; {self.iterations} iterations, values {self.values}>"


class Simulator:
    """A diffraction simulation, resolved once.

    ``Simulator(crystal, beam, detector, precision="f64", backend="auto", threads=None)`` or
    ``Simulator.from_args("-cell 100 100 100 90 90 90 -default_F 100 ...")``.

    * ``precision``: ``"f64"`` (bit-identical with upstream nanoBragg) or ``"f32"`` (fast);
    * ``backend``: ``"cpu"``, ``"gpu"``, or ``"auto"`` (the GPU for f32 when a hardware adapter
      opens; a software one such as llvmpipe is passed over for the CPU, said in ``notices``);
    * ``threads``: CPU threads (``None``: all cores);
    * ``force``: render even past the cost budget (the CLI's ``-force``): without it a render or
      gradients estimated at more than 10¹² terms (hours of CPU) or 8 GiB of memory is refused
      with a :class:`LimitError` saying what it needs, before it starts.

    :meth:`render` returns photons per pixel as a float32 array (slow, fast). Keyword overrides
    (any field of Crystal, Beam or Detector: ``misset_deg``, ``phi_deg``, ``mosaic_seed``,
    ``fluence_ph_per_m2``, ...) change that render only; input files are not read again and the
    renderer (GPU device, pipeline, buffers) stays warm.
    """

    def __init__(
        self,
        crystal: Optional[Crystal] = None,
        beam: Optional[Beam] = None,
        detector: Optional[Detector] = None,
        precision: Precision = "f64",
        backend: Backend = "auto",
        threads: Optional[int] = None,
        *,
        force: bool = False,
        files: Optional[Mapping[str, bytes]] = None,
        _words: Optional[Sequence[str]] = None,
    ) -> None:
        mem = dict(files or {})
        # the configuration is the user's Python (errors then name its fields, not the flags)
        self._typed = _words is None
        if _words is None:
            words: list[str] = []
            for part, cls in ((crystal, Crystal), (beam, Beam), (detector, Detector)):
                if part is None:
                    continue
                if not isinstance(part, cls):
                    raise TypeError(f"expected a nanobragg.{cls.__name__}, got {type(part).__name__}")
                words += part.words(mem)
            if crystal is None or (crystal.F is None and crystal.model is None and crystal.fdump_file is None):
                # no implicit ./Fdump.bin: a path that cannot exist (the CLI writes the cache
                # only after -hkl or -pdb, so these words stay safe to run)
                words += ["-dump", _NO_FDUMP]
            words += _port_words("precision", precision) + _port_words("backend", backend)
            if threads is not None:
                if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
                    raise UsageError(f"Simulator.threads: expected a positive whole number, got {threads!r}", field="Simulator.threads")
                words += ["-threads", str(threads)]
            if force:
                words += ["-force"]
        else:
            words = [os.fsdecode(w) if not isinstance(w, str) else w for w in _words]
        self._files = mem
        try:
            self._s = _nanobragg.Session(list(words), mem)
        except Error as e:
            raise _name_field(e, self._typed) from None
        self.engine: Optional[str] = None
        """Where the last render, gradients or VJP ran (``"cpu"`` or ``"gpu"``)."""
        self.notices: list[str] = []
        """Notices of the last render, gradients or VJP (GPU fallback, threads capped)."""

    @classmethod
    def from_args(cls, args: Union[str, Sequence[str]], *, files: Optional[Mapping[str, bytes]] = None) -> "Simulator":
        """A Simulator from upstream's flag words (a string, split as a shell would, or a list).
        Output-file flags are accepted and ignored: :meth:`render` returns the image."""
        words = _nanobragg.split_args(args) if isinstance(args, str) else list(args)
        return cls(files=files, _words=words)

    def args(self) -> list[str]:
        """The flag words this Simulator was made from."""
        return self._s.words()

    @property
    def shape(self) -> tuple[int, int]:
        """(slow, fast) pixels of the rendered image."""
        return self._s.shape

    @property
    def warnings(self) -> list[str]:
        """Warnings of the setup (the lines the CLI prints)."""
        return self._s.warnings()

    def info(self) -> dict[str, Any]:
        """Facts of the resolved setup (pixels, sources, orientations, precision, backend...)."""
        d: dict[str, Any] = self._s.info()
        if self._typed and isinstance(d.get("hkl_source"), str):
            d["hkl_source"] = name_mem_files(d["hkl_source"])  # a table: "Crystal.F (n reflections)"
        d["gpu_adapter"] = self._s.gpu_adapter()
        return d

    def _extra(self, overrides: Mapping[str, Any], where: str = "render", own: Sequence[str] = ()) -> list[str]:
        """The words of keyword ``overrides`` of the method ``where``, whose own arguments are
        ``own``: an unknown keyword suggests the nearest of those and of the fields."""
        if not overrides:
            return []
        for name in overrides:
            if name not in _FIELDS and name not in AMBIGUOUS and name not in ("precision", "backend"):
                near = difflib.get_close_matches(name, [*own, *_FIELDS, "precision", "backend"], n=2)
                hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
                what = f"an argument of {where}() nor a field" if own else "a field"
                raise TypeError(f"{where}() got an unexpected keyword argument {name!r} (not {what} of Crystal, Beam or Detector){hint}")
        files = dict(self._files)
        words = override_words(overrides, files, where)
        if len(files) != len(self._files):
            raise TypeError(f"{where}(): a structure-factor table or source list cannot be overridden; make a new Simulator")
        return words

    def _error(self, e: Error, extra: Sequence[str]) -> Error:
        """``e`` naming the Python field where the user wrote Python: the typed configuration,
        or an override's keyword."""
        return _name_field(e, self._typed or (e.flag is not None and e.flag in extra))

    @overload
    def render(self, gradients: None = None, **overrides: Unpack[Overrides]) -> npt.NDArray[np.float32]: ...

    @overload
    def render(
        self, gradients: Union[str, Sequence[str]], **overrides: Unpack[Overrides]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.floating[Any]]]: ...

    def render(
        self, gradients: Union[str, Sequence[str], None] = None, **overrides: Unpack[Overrides]
    ) -> Union[npt.NDArray[np.float32], tuple[npt.NDArray[np.float64], npt.NDArray[np.floating[Any]]]]:
        """Photons per pixel, float32 (slow, fast). The GIL is released while rendering;
        Ctrl-C cancels (KeyboardInterrupt).

        With ``gradients=["rot_x", "cell_a", "distance", ...]`` (the parameters of
        :data:`GRADIENT_PARAMETERS`, MODEL §10 of the repository's docs) it returns
        ``(image, tangents)``: the image as float64 (its float32 rounding is the plain render)
        and the derivatives ∂pixel/∂parameter as an array (P, slow, fast) in the precision they
        were computed in (float64 from the f64 kernel, float32 from the f32 and GPU ones),
        computed in the same pass, on the simulator's ``backend`` as the plain render (:attr:`engine` says
        where it ran). On the CPU with ``precision="f64"`` (the default) they are the f64
        tangent kernel's; with ``precision="f32"`` both come from the f32 terms and their f32
        derivatives (MODEL §10.5; the image then within ~1e-6 of the plain f32 render, the
        tangents within ~1e-4 of the largest f64 tangent). On the GPU (``backend="gpu"``, or
        ``"auto"`` with ``precision="f32"`` when an adapter opens) the GPU's tangent kernel
        computes them (MODEL §10.6): the image is the GPU render's, the tangents f32 (within
        1e-4 of the largest f64 tangent on the pixels with signal); ``backend="gpu"`` without
        an adapter raises :class:`GpuError`."""
        extra = self._extra(overrides, "render", ("gradients",))
        if gradients is not None:
            names = _gradient_names(gradients, "render")
            try:
                image, tangents, self.engine, self.notices = self._s.gradients(extra, names, [])
            except Error as e:
                raise self._error(e, extra) from None
            return image, tangents
        try:
            plain, self.engine, self.notices = self._s.render(extra)
        except Error as e:
            raise self._error(e, extra) from None
        return plain

    def vjp(
        self, weights: npt.ArrayLike, gradients: Union[str, Sequence[str]], **overrides: Unpack[Overrides]
    ) -> npt.NDArray[np.float64]:
        """The vector–Jacobian product: for each parameter of ``gradients``, the sum over pixels
        of ``weights`` (a (slow, fast) array) times ∂pixel/∂parameter, float64 (P,), without
        keeping the tangent images (what an optimiser needs for a loss's gradient); on the
        simulator's ``backend`` and in its ``precision``, as ``render(gradients=...)``
        (:attr:`engine` says where it ran; on the GPU the tangents are reduced on the host in
        float64)."""
        extra = self._extra(overrides, "vjp", ("weights", "gradients"))
        w = self._weights(weights, "vjp")
        try:
            _, products, self.engine, self.notices = self._s.vjp(extra, _gradient_names(gradients, "vjp"), w, [])
        except Error as e:
            raise self._error(e, extra) from None
        return products

    def vjp_structure_factors(self, weights: npt.ArrayLike, **overrides: Unpack[Overrides]) -> dict[str, npt.NDArray[Any]]:
        """The gradient of ``(weights * image).sum()`` with respect to the structure factors of
        the set-up's table (``hkl=``, or factors computed from a model): a dict with ``hkl``
        (R, 3) int32 Miller indices, ``F`` (R,) and ``grad`` (R,) float64 for the R
        reflections some term reads, and the ``image`` (slow, fast) float64. Each pixel's
        terms contribute ∂T/∂F = 2F·F_latt² times the pixel's factor (MODEL §10.1); f64 on the
        CPU, nearest lookup (with ``interpolate`` it is an error naming ``Crystal.interpolate``)."""
        extra = self._extra(overrides, "vjp_structure_factors", ("weights",))
        w = self._weights(weights, "vjp_structure_factors")
        try:
            image, hkl, f, grad = self._s.vjp_structure_factors(extra, w)
        except Error as e:
            raise self._error(e, extra) from None
        return {"hkl": hkl, "F": f, "grad": grad, "image": image}

    def fit(
        self,
        target: npt.ArrayLike,
        params: Union[str, Sequence[str]],
        *,
        start: Optional[Mapping[str, float]] = None,
        loss: Loss = "huber",
        loss_scale: float = 3.0,
        max_iterations: int = 100,
        cycles: int = 3,
        spot_radius: int = 2,
        spot_threshold: float = 0.01,
        tolerance: float = 1e-8,
        background: BackgroundModel = "none",
        background_block: int = 32,
        gain: float = 1.0,
        adc: float = 0.0,
        centroids: bool = False,
        mask: Optional[npt.ArrayLike] = None,
        **overrides: Unpack[Overrides],
    ) -> FitResult:
        """Fits ``params`` (names of :data:`GRADIENT_PARAMETERS`: ``rot_x``, ``cell_a``,
        ``distance``, ``beam_x``, ``scale``, ...) to ``target`` (photons per pixel, (slow,
        fast)) by robust least squares on the pixels around the spots (Levenberg–Marquardt on
        the derivative engine's Jacobian; the crate's ``refine``, ARCHITECTURE.md). ``loss``:
        ``"huber"``, ``"cauchy"`` (scale ``loss_scale``, in σ of the Poisson noise) or
        ``"squared"``; ``start``: offsets to start from. ``gain`` and ``adc``: the target is in
        ADU = gain·photons + adc (noisify's and the realistic chain's); ``background``:
        ``"none"`` (the target holds the spots alone) or ``"local"`` (a smooth background
        estimated from the target per block of ``background_block`` pixels, subtracted and
        added to the variance); ``centroids``: start with the spot-centroid stage (the target's
        spots indexed, orientation and cell fitted to their positions), for sharp spots started
        beyond the pixel fit's reach (MODEL.md §10.4); ``mask``: a bool array of the target's
        shape, ``True`` where a pixel may be used, ``False`` to exclude it (a measured image's
        flagged pixels: overloads, dead or hot pixels, negative values), from the fit, the
        background estimate and the centroid stage; an excluded pixel's value is never read (it
        may be NaN). Pixels the detector does not render are excluded either way.
        ``max_iterations``: evaluations of the model at most, over ``cycles`` pixel selections at
        most (each ≥ 1); ``spot_radius`` (≥ 0): the pixels selected around each spot pixel;
        ``spot_threshold`` (≥ 0): a spot pixel's height over the median, as a share of the
        image's range; ``tolerance`` (≥ 0): a cycle stops when a step lowers the cost by less
        than this share; ``background_block`` ≥ 2 pixels. A value out of its range, or a start
        value that is not finite, raises :class:`UsageError` naming the argument.

        Returns a :class:`FitResult` (its fields also read as ``fit["values"]``): ``values`` ({name: fitted offset from the simulator's value, in the
        parameter's unit: rad for rotations, Å for cell edges, mm for distance and beam
        centre, relative for scale}), ``history`` (cost per selected pixel at the start and
        after each accepted step), ``iterations``, ``cycles``, ``converged`` (the crate's
        verdict, as the page's: the solver ended on its tolerance, the model correlates with
        the target on the spot pixels to nine tenths of what the noise allows, and nine in ten
        of the target's 50 strongest spots have a spot of the fitted model within 2.5 pixels; else ``values`` are
        the lowest point seen), ``verdict`` (why not, empty when it converged),
        ``spots_checked`` and ``spots_found``, ``correlation`` and ``correlation_ceiling`` (the
        model's correlation with the target on the spot pixels, and the most the noise allows),
        ``centroid_spots`` (spots the centroid stage used), ``pixels`` (the
        last selection's size), ``image`` (the model at the fit, float64) and ``fitted``: the
        fitted set-up as keyword values (``misset_deg``, ``cell_A_deg``, ``distance_mm`` or
        ``close_distance_mm``, ``beam_center_mm``, ``fluence_ph_per_m2``, ...: the crate's
        ``fitted_values``), so that ``sim.render(**fit.fitted)`` renders the fitted
        set-up."""
        extra = self._extra(overrides, "fit", _FIT_ARGUMENTS)
        names = _gradient_names(params, "fit", "params")
        t = np.ascontiguousarray(target, dtype=np.float64)
        if t.ndim != 2:
            raise UsageError(f"fit: target must be a (slow, fast) array, got {t.ndim} dimension(s)")
        st = [(str(k), float(v)) for k, v in (start or {}).items()]
        m: Optional[npt.NDArray[np.bool_]] = None
        if mask is not None:
            m = np.asarray(mask)
            if m.dtype != np.bool_:
                raise UsageError(f"fit: mask must be a bool array (True = use the pixel), got dtype {m.dtype}", field="mask")
            if m.shape != tuple(self.shape):
                raise UsageError(f"fit: mask must be a {tuple(self.shape)} array (slow, fast) like the target, got shape {m.shape}", field="mask")
            m = np.ascontiguousarray(m)
        try:
            values, history, iterations, cycles_run, verdict, pixels, image, words = self._s.fit(
                extra, names, t, st, loss, float(loss_scale), int(max_iterations), int(cycles),
                int(spot_radius), float(spot_threshold), float(tolerance), str(background),
                int(background_block), float(gain), float(adc), bool(centroids), m)
        except Error as e:
            raise self._error(e, extra) from None
        converged, why, checked, found, correlation, ceiling, centroid_spots = verdict
        return FitResult(
            values={n: float(v) for n, v in zip(names, values)},
            fitted=_fitted_keywords(words),
            converged=bool(converged),
            verdict=str(why),
            history=[float(h) for h in history],
            iterations=int(iterations),
            cycles=int(cycles_run),
            spots_checked=int(checked),
            spots_found=int(found),
            correlation=float(correlation),
            correlation_ceiling=float(ceiling),
            centroid_spots=int(centroid_spots),
            pixels=int(pixels),
            image=image,
        )

    def _at(
        self, names: Sequence[str], offsets: Sequence[float], weights: Optional[npt.ArrayLike] = None
    ) -> npt.NDArray[np.float64]:
        """The PyTorch bridge's forward (image at the offsets) and backward (VJP there)."""
        off = [(n, float(v)) for n, v in zip(names, offsets)]
        extra: list[str] = []
        try:
            if weights is None:
                image, _, self.engine, self.notices = self._s.gradients([], [], off)
                return image
            w = self._weights(weights, "vjp")
            _, products, self.engine, self.notices = self._s.vjp([], list(names), w, off)
            return products
        except Error as e:
            raise self._error(e, extra) from None

    def render_many(
        self, orientations: Optional[npt.ArrayLike] = None, *, overrides: Optional[Iterable[Overrides]] = None
    ) -> npt.NDArray[np.float32]:
        """A batch of renders as one float32 array (n, slow, fast): one per misset triple of
        ``orientations`` (degrees, an (n, 3) array), or one per mapping of ``overrides``."""
        if (orientations is None) == (overrides is None):
            raise TypeError("render_many() takes orientations or overrides (one of them)")
        if orientations is not None:
            arr = np.asarray(orientations, dtype=np.float64)
            if arr.ndim != 2 or arr.shape[1] != 3:
                raise UsageError(f"render_many: orientations must be an (n, 3) array of misset angles (degrees), got shape {arr.shape}", field="orientations")
            items: list[Mapping[str, Any]] = [{"misset_deg": tuple(r)} for r in arr.tolist()]
        else:
            assert overrides is not None
            if isinstance(overrides, (Mapping, str, bytes)) or not isinstance(overrides, Iterable):
                raise TypeError(f"render_many: overrides must be a sequence of mappings (keyword -> value), one per image, got {type(overrides).__name__}")
            items = list(overrides)
            for i, o in enumerate(items):
                if not isinstance(o, Mapping):
                    raise TypeError(f"render_many: overrides must be a sequence of mappings (keyword -> value), one per image; item {i} is {type(o).__name__}")
        extras = [self._extra(o, "render_many") for o in items]
        extra = [w for e in extras for w in e]
        try:
            return self._s.render_many(extras)
        except Error as e:
            raise self._error(e, extra) from None

    def predict(self, *, all_reflections: bool = False, **overrides: Unpack[Overrides]) -> npt.NDArray[np.void]:
        """The reflections the CLI's ``-predict`` table lists (what is on the image: the spots in
        the diffraction condition of a still, every crossing of the Ewald sphere of an
        oscillation at its φ; those whose ray meets the detector), as a numpy structured
        array: h, k, l, fast, slow (pixels), d_A, two_theta_deg, excitation_error_per_A, F,
        intensity, partiality, phi_deg, on_detector, in_condition. ``all_reflections=True``:
        every lattice point within the resolution limit (fast/slow NaN where the ray misses the
        detector plane)."""
        extra = self._extra(overrides, "predict", ("all_reflections",))
        try:
            cols = self._s.predict(extra, not all_reflections)
        except Error as e:
            raise self._error(e, extra) from None
        n = len(cols["h"])
        out = np.empty(n, dtype=_PREDICT_DTYPE)
        for name, _ in _PREDICT_DTYPE:
            out[name] = cols[name]
        if not all_reflections:
            out = out[out["on_detector"] & np.isfinite(out["fast"]) & np.isfinite(out["slow"])]
        return out

    def int_image(self, image: npt.ArrayLike) -> bytes:
        """The noiseless SMV file (the CLI's ``-intfile``) of ``image``, as bytes. A pixel that
        is NaN or infinite is refused (the CLI's scaling would write it as 65535)."""
        return self._s.int_image_smv(_finite(_flat(image, self.shape), self.shape, "int_image"))

    def noise_image(self, image: npt.ArrayLike, seed: Optional[int] = None) -> bytes:
        """The SMV file with Poisson noise (the CLI's ``-noisefile``: upstream's generator).
        ``seed``: the noise seed (the CLI's ``-seed``: the same seed, the same noise); ``None``:
        the ``-seed`` the Simulator was made with, else a new seed each call (each call its own
        noise, as each CLI run without ``-seed``)."""
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"noise_image: seed must be an int or None, got {type(seed).__name__}")
        return self._s.noise_image_smv(_finite(_flat(image, self.shape), self.shape, "noise_image"), seed)

    def statistics(self, image: npt.ArrayLike) -> dict[str, float]:
        """The CLI's statistics of ``image`` (max, mean, rms, rmsd)."""
        return self._s.statistics(_flat(image, self.shape))

    def _weights(self, weights: npt.ArrayLike, where: str) -> npt.NDArray[np.float64]:
        """``weights`` as a float64 (slow, fast) array of the image's shape, else an error naming them."""
        w = np.ascontiguousarray(weights, dtype=np.float64)
        if w.shape != tuple(self.shape):
            raise UsageError(f"{where}: weights must be a 2-D array of the image's shape {tuple(self.shape)} (slow, fast), got shape {w.shape}", field="weights")
        return w

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles as what it was made from: its flag words and in-memory files (input files
        named by path are read again where it is unpickled), rebuilt with a fresh renderer."""
        return (_unpickle, (type(self), self.args(), dict(self._files), self._typed))

    def __repr__(self) -> str:
        s, f = self.shape
        return f"<nanobragg.Simulator {f}x{s} pixels>"


def _unpickle(cls: type[Simulator], words: list[str], files: dict[str, bytes], typed: bool) -> Simulator:
    """A pickled :class:`Simulator` (``Simulator.__reduce__``) made again from its words and files."""
    sim = cls.__new__(cls)
    Simulator.__init__(sim, files=files, _words=words)
    sim._typed = typed
    return sim


#: fit()'s own keyword arguments (an unknown keyword suggests the nearest of these too).
_FIT_ARGUMENTS = (
    "start", "loss", "loss_scale", "max_iterations", "cycles", "spot_radius", "spot_threshold", "tolerance",
    "background", "background_block", "gain", "adc", "centroids", "mask",
)


def _gradient_names(gradients: Union[str, Sequence[str]], where: str, name: str = "gradients") -> list[str]:
    """Parameter names from a string (comma- or space-separated) or a sequence of strings."""
    if isinstance(gradients, str):
        return [w for w in gradients.replace(",", " ").split() if w]
    bad = f"{where}: {name} must be a parameter name or a sequence of names (e.g. ['rot_x', 'cell_a'])"
    if isinstance(gradients, (bytes, Mapping)) or not isinstance(gradients, Iterable):
        raise TypeError(f"{bad}, got {type(gradients).__name__}")
    names = list(gradients)
    for g in names:
        if not isinstance(g, str):
            raise TypeError(f"{bad}, got an item of type {type(g).__name__}")
    return names


def _finite(a: npt.NDArray[np.float32], shape: tuple[int, int], where: str) -> npt.NDArray[np.float32]:
    """``a`` (a flat image of ``shape``) if every pixel is finite, else a ValueError naming the
    first that is not."""
    bad = ~np.isfinite(a)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{where}: image has {int(bad.sum())} pixels that are NaN or infinite, the first "
                         f"at (slow, fast) = ({i // shape[1]}, {i % shape[1]}): {a[i]}")
    return a


def _flat(image: npt.ArrayLike, shape: tuple[int, int]) -> npt.NDArray[np.float32]:
    a = np.ascontiguousarray(image, dtype=np.float32)
    if a.size != shape[0] * shape[1]:
        raise ValueError(f"image has {a.size} pixels, the detector {shape[1]}x{shape[0]}")
    return a.reshape(-1)


# The crate's fitted flags (``Fitted::words``) → the keyword fields of ``Crystal``, ``Beam`` and
# ``Detector`` (config.py) that take them.
_FITTED_FIELDS = {
    "-misset": "misset_deg", "-cell": "cell_A_deg", "-distance": "distance_mm",
    "-close_distance": "close_distance_mm", "-fluence": "fluence_ph_per_m2", "-lambda": "wavelength_A",
    "-mosaic": "mosaic_spread_deg", "-default_F": "default_F",
    "-detector_rotx": "rotx_deg", "-detector_roty": "roty_deg", "-detector_rotz": "rotz_deg",
}


def _fitted_keywords(words: Sequence[str]) -> Overrides:
    flags: dict[str, list[float]] = {}
    flag = ""
    for w in words:
        try:
            flags[flag].append(float(w))
        except (ValueError, KeyError):
            flag = w
            flags[flag] = []
    out: dict[str, Any] = {}
    for flag, vals in flags.items():
        if flag in _FITTED_FIELDS:
            out[_FITTED_FIELDS[flag]] = tuple(vals) if len(vals) > 1 else vals[0]
    if "-Xbeam" in flags and "-Ybeam" in flags:
        out["beam_center_mm"] = (flags["-Xbeam"][0], flags["-Ybeam"][0])
    if "-Na" in flags:
        out["N"] = (flags["-Na"][0], flags["-Nb"][0], flags["-Nc"][0])
    return cast(Overrides, out)
