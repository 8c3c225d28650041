"""Per-image parameters and seeds, and the render of one image.

Everything about image ``i`` derives from ``(spec.seed, i)`` through NumPy's
:class:`~numpy.random.SeedSequence` spawn keys, never from a shared stream:

* the crystal's draws (orientation, every ``vary`` entry, the mosaic seed) from
  ``SeedSequence(seed, spawn_key=(0, g))`` where ``g`` is the crystal's index: the image index,
  or for a rotation series the series index ``i // count`` (one crystal per series);
* the image's own seeds (noise) from ``SeedSequence(seed, spawn_key=(1, i))``;
* grids enumerate their values' Cartesian product (last grid fastest) with ``g``.

So any image can be re-rendered alone (:func:`render_image`), bit-identically, whatever worker
renders it and in whatever order.
"""

from __future__ import annotations

import itertools
import math
import numbers
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import numpy as np

if TYPE_CHECKING:
    from ..simulator import Simulator

from ..config import Beam, Crystal, Detector
from .spec import Spec

__all__ = ["image_index", "image_params", "make_simulator", "Renderer", "render_image", "label_columns"]

_NO_FDUMP = "/dev/null/no-Fdump.bin"
_SF_FLAGS = {"-hkl", "-pdb", "-dump", "-default_F"}


def _seed_int(ss: np.random.SeedSequence) -> int:
    # a positive 31-bit seed (upstream's ran1 takes a C long; the sign is its own business)
    return int(ss.generate_state(1, np.uint32)[0] & 0x7FFFFFFF) or 1


def uniform_rotation(rng: np.random.Generator) -> np.ndarray:
    """A rotation matrix uniform on SO(3): a unit quaternion from four normal draws."""
    q = rng.standard_normal(4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def _grid(spec: Spec) -> List[Any]:
    return [v for v in spec.variations if v.dist == "grid"]


def image_index(spec: Spec, i: int) -> int:
    """``i`` checked as an image index of ``spec``: an int (a NumPy integer too) in
    ``0 .. n_images - 1``; negative indices are refused (not counted from the end), a
    TypeError or an IndexError naming the index otherwise."""
    if isinstance(i, bool) or not isinstance(i, numbers.Integral):
        raise TypeError(f"image index must be an int, got {type(i).__name__}")
    if not 0 <= i < spec.n_images:
        raise IndexError(f"image {i} is not in 0..{spec.n_images - 1}")
    return int(i)


def image_params(spec: Spec, i: int) -> Dict[str, Any]:
    """The parameters of image ``i``: ``index``, ``crystal`` (the crystal's index), ``frame``,
    ``mosaic_seed``, ``noise_seed``, ``rotation`` (3x3, when orientations vary), ``phi_deg`` and
    ``osc_deg`` (rotation series) and one entry per ``vary`` key (``model``: its index)."""
    i = image_index(spec, i)
    count = spec.rotation.count if spec.rotation else 1
    g, frame = divmod(i, count)
    crystal_ss = np.random.SeedSequence(spec.seed, spawn_key=(0, g))
    image_ss = np.random.SeedSequence(spec.seed, spawn_key=(1, i))
    c_mosaic, c_draws = crystal_ss.spawn(2)
    rng = np.random.default_rng(c_draws)
    p: Dict[str, Any] = {"index": i, "crystal": g, "frame": frame,
                         "mosaic_seed": _seed_int(c_mosaic), "noise_seed": _seed_int(image_ss)}
    if spec.orientation == "uniform":
        p["rotation"] = uniform_rotation(rng)
    if spec.rotation:
        p["phi_deg"] = spec.rotation.start_deg + frame * spec.rotation.width_deg
        p["osc_deg"] = spec.rotation.width_deg
    grids = _grid(spec)
    if grids:
        sizes = [len(v.values) for v in grids]
        k = g % math.prod(sizes)
        picks = {}
        for v, n in zip(reversed(grids), reversed(sizes)):
            k, r = divmod(k, n)
            picks[v.name] = r
    for v in spec.variations:
        if v.dist == "grid":
            j = picks[v.name]
            p[v.name] = j if v.name == "model" else v.values[j]
        elif v.dist == "choice":
            j = int(rng.integers(len(v.values)))
            p[v.name] = j if v.name == "model" else v.values[j]
        elif v.dist == "uniform":
            x = rng.uniform(np.asarray(v.low, float), np.asarray(v.high, float))
            p[v.name] = tuple(x.tolist()) if v.n else float(x)
        elif v.dist == "normal":
            x = rng.normal(np.asarray(v.mean, float), np.asarray(v.sd, float))
            p[v.name] = tuple(x.tolist()) if v.n else float(x)
        else:  # lognormal
            x = rng.lognormal(np.asarray(v.mean, float), np.asarray(v.sd, float))
            p[v.name] = tuple(x.tolist()) if v.n else float(x)
    return p


def make_simulator(spec: Spec, model: Optional[str]) -> "Simulator":
    """The base Simulator of ``spec`` (with ``model`` as its structure factors, when models vary)."""
    from ..config import _port_words
    from ..simulator import Simulator

    mem: Dict[str, bytes] = {}
    words = list(spec.args)
    words += Crystal(**spec.crystal).words(mem)
    words += Beam(**spec.beam).words(mem)
    words += Detector(**spec.detector).words(mem)
    if model is not None:
        words += ["-pdb", model]
    if not (_SF_FLAGS & set(words)):
        words += ["-dump", _NO_FDUMP]
    words += _port_words("precision", spec.precision) + _port_words("backend", spec.backend)
    if spec.threads is not None:
        words += ["-threads", str(spec.threads)]
    return Simulator(files=mem, _words=words)


def base_facts(spec: Spec) -> Dict[str, Any]:
    """Facts of the base set-up (the first model's, when models vary) that the tool reports and
    sizes by: ``pixels`` (per image), ``oversample`` (sub-pixels per pixel side) and
    ``oversample_auto`` (chosen by the crate for the crystal's size: a 1 µm crystal gets ~100,
    and each sub-pixel is a pass of the render)."""
    r = Renderer(spec)
    models = any(v.name == "model" for v in spec.variations)
    # the resolved set-up's facts (not Simulator.info(), which would open a GPU adapter here)
    info = r.simulator(0 if models else None)._s.info()
    return {"pixels": int(info["fast_pixels"]) * int(info["slow_pixels"]), "oversample": int(info.get("oversample", 1)),
            "oversample_auto": bool(info.get("oversample_auto", False))}


def oversample_notice(spec: Spec, facts: Dict[str, Any]) -> Optional[str]:
    """The line that says an automatic oversample (None when it is 1 or was given)."""
    o = facts["oversample"]
    if not facts["oversample_auto"] or o <= 1:
        return None
    return (f"oversample {o}: chosen automatically for the crystal's size at the base set-up ({o}x{o} sub-pixels per "
            f"pixel, each as costly as a render at oversample 1); set oversample in [base.detector] of {spec.path} "
            f"to choose (1: upstream's point-like spots, faster by ~{o * o}x)")


#: The last background rendered in this process: (what it depends on, the image). The
#: description's check (:func:`.spec.load_spec`) renders it, and the renders use it.
_last_background: Optional[Tuple[Any, np.ndarray]] = None


def background_image(spec: Spec) -> np.ndarray:
    """nonBragg's background of ``chain.background`` (photons/pixel, float32 (slow, fast)), once
    per process for the same words and files (its files are read from the current folder). An
    error is the description's: a :class:`~.spec.SpecError` naming ``chain.background``."""
    global _last_background
    import os

    from .. import _nanobragg
    from ..errors import Error
    from .spec import SpecError, _crate_why, _files_key

    assert spec.background is not None
    try:
        words = list(_nanobragg.split_args(spec.background))
    except (Error, ValueError) as e:
        raise SpecError(spec.path, "chain.background", _crate_why(e)).located(spec.text) from None
    key = _files_key(words)
    if _last_background is not None and _last_background[0] == key:
        return _last_background[1]
    from ..chain import nonbragg

    _last_background = None  # the old image freed before the new one is made
    try:
        image = nonbragg(words)
    except Error as e:
        why = _crate_why(e)
        if isinstance(e, FileNotFoundError):
            why += f" (chain.background's files are read from the current folder, {os.getcwd()})"
        raise SpecError(spec.path, "chain.background", why).located(spec.text) from None
    image.setflags(write=False)  # shared by the renders of this process
    _last_background = (key, image)
    return image


class Renderer:
    """Renders images of one spec, keeping its Simulators (one per model) and the background
    warm between images. :meth:`image` returns what the dataset stores: int32 counts for
    ``nxmx`` (noisify's ADU with ``chain.noise``, else ``round(photons · scale)``), float32
    photons for ``npz`` (or noisify's ADU as int32)."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self._sims: Dict[Optional[int], "Simulator"] = {}
        self._background: Optional[np.ndarray] = None
        self._noise_words: Optional[List[str]] = None
        self._shard_array: Optional[np.ndarray] = None

    def simulator(self, model: Optional[int] = None) -> "Simulator":
        if model not in self._sims:
            path = None
            if model is not None:
                path = next(v for v in self.spec.variations if v.name == "model").values[model]
            self._sims[model] = make_simulator(self.spec, path)
        return self._sims[model]

    def background(self) -> Optional[np.ndarray]:
        if self._background is None and self.spec.background:
            self._background = background_image(self.spec)
        return self._background

    def overrides(self, p: Dict[str, Any]) -> Dict[str, Any]:
        o: Dict[str, Any] = {}
        if "rotation" in p:
            o["rotation"] = p["rotation"].tolist()
        if "osc_deg" in p:
            # a rotation series' frame (vary.phi_deg alone is set below, with no oscillation)
            o["phi_deg"] = p["phi_deg"]
            o["osc_deg"] = p["osc_deg"]
        if "mosaic_seed" not in self.spec.crystal and "-mosaic_seed" not in self.spec.args:
            o["mosaic_seed"] = p["mosaic_seed"]
        for v in self.spec.variations:
            if v.name != "model":
                o[v.name] = p[v.name]
        return o

    def noise_words(self) -> Optional[List[str]]:
        """``chain.noise`` split into words (once), or None."""
        if self._noise_words is None and self.spec.noise is not None:
            from .. import _nanobragg

            self._noise_words = list(_nanobragg.split_args(self.spec.noise))
        return self._noise_words

    def shard_array(self, shape: Tuple[int, ...]) -> np.ndarray:
        """An int32 array of ``shape`` (images, slow, fast) for a shard's counts, the same
        memory from shard to shard (a shard's images are hundreds of MB on a large detector:
        fresh pages to fault in and zero, per shard). Its contents are the last shard's
        until overwritten."""
        a = self._shard_array
        if a is None or a.shape[1:] != shape[1:] or a.shape[0] < shape[0]:
            del a
            self._shard_array = None  # the old one freed before the new one is made
            a = self._shard_array = np.empty(shape, np.int32)
        return a[:shape[0]]

    def release_shard_array(self) -> None:
        """Frees :meth:`shard_array`'s memory (the next shard makes a new one)."""
        self._shard_array = None

    def shape(self, model: Optional[int] = None) -> Tuple[int, int]:
        """The images' (slow, fast) size."""
        return self.simulator(model).shape

    def image(self, i: int, p: Optional[Dict[str, Any]] = None, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Image ``i`` as the dataset stores it (``p``: its :func:`image_params`, when known).
        The int32 counts (``nxmx``, or ``chain.noise``) are made by one call into the crate
        (render, background, noise and the conversion to int32 without a copy of the image
        between them), written into ``out`` ((slow, fast) int32, C order) when given."""
        spec = self.spec
        p = p if p is not None else image_params(spec, i)
        sim = self.simulator(p.get("model"))
        bg = self.background()
        if bg is not None and bg.shape != sim.shape:
            from .spec import SpecError

            h, w = sim.shape
            raise SpecError(spec.path, "chain.background", f"the background is {bg.shape[1]}x{bg.shape[0]} pixels, the "
                            f"detector {w}x{h}: give nonBragg the same detector (-detpixels, -detector)").located(spec.text)
        if spec.noise is None and spec.format == "npz":
            img = sim.render(**self.overrides(p))
            if bg is not None:
                img = img + bg
            return np.asarray(img, dtype=np.float32)
        if out is None:
            out = np.empty(sim.shape, np.int32)
        words = self.noise_words()
        if words is not None:
            words = words + ["-seed", str(p["noise_seed"])]
        extra = sim._extra(self.overrides(p))
        from ..errors import Error

        try:
            sim.engine, sim.notices = sim._s.render_counts(extra, out, bg, words, float(spec.scale))
        except Error as e:
            raise sim._error(e, extra) from None
        return out

    def reflections(self, i: int, p: Optional[Dict[str, Any]] = None) -> np.ndarray:
        """Image ``i``'s predicted reflections (``Simulator.predict`` with its parameters)."""
        p = p if p is not None else image_params(self.spec, i)
        return self.simulator(p.get("model")).predict(**self.overrides(p))


def render_image(spec: Spec, i: int) -> np.ndarray:
    """Image ``i`` of the dataset, rendered alone (bit-identical to its place in a shard); ``i``
    in ``0 .. n_images - 1`` (:func:`image_index`: a negative index is an IndexError)."""
    i = image_index(spec, i)
    return Renderer(spec).image(i)


def label_columns(spec: Spec, params: List[Dict[str, Any]]) -> Dict[str, np.ndarray]:
    """The labels table of a list of :func:`image_params`: one array per column, first axis the
    image."""
    cols: Dict[str, np.ndarray] = {
        "index": np.array([p["index"] for p in params], np.int64),
        "crystal": np.array([p["crystal"] for p in params], np.int64),
        "frame": np.array([p["frame"] for p in params], np.int64),
        "mosaic_seed": np.array([p["mosaic_seed"] for p in params], np.int64),
        "noise_seed": np.array([p["noise_seed"] for p in params], np.int64),
    }
    if spec.orientation == "uniform":
        cols["rotation"] = np.array([p["rotation"] for p in params], np.float64).reshape(-1, 3, 3)
    if spec.rotation:
        cols["phi_deg"] = np.array([p["phi_deg"] for p in params], np.float64)
        cols["osc_deg"] = np.array([p["osc_deg"] for p in params], np.float64)
    for v in spec.variations:
        if v.name == "model":
            cols["model"] = np.array([p["model"] for p in params], np.int64)
        else:
            cols[v.name] = np.array([p[v.name] for p in params], np.float64)
    return cols
