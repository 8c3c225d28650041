"""NXmx files of a dataset. The tree is the crate's NeXus writer's (``crate/src/io/nexus.rs``,
the CLI's ``-nexus``): each shard is first written by it (``Session.nxmx``: geometry from
``cli::nexus_geometry``, frames int32, one chunk per image, shuffle + deflate, or bitshuffle +
LZ4 with ``dataset.compression = "bslz4"``), then h5py adds
what a dataset needs beside the images:

* ``/entry/labels`` (NXcollection): one row per image: index, crystal, frame, seeds,
  orientation matrix, every varied parameter;
* ``/entry/dataset`` (NXcollection): the description's text, the shard's index and images;

Stills (``dataset.still``, the default without a rotation series) are written by the crate
without ``/entry/sample/depends_on``, so dxtbx reads each frame as a still rather than a sweep;
a varied λ (``vary.wavelength_A`` / ``vary.energy_eV``) is written as one
``incident_wavelength`` per frame, which dxtbx reads frame by frame.

The master file is the crate's file of one frame, its ``/entry/data/data`` replaced by a
virtual dataset over the shards' frames (hdf5-pure writes no virtual datasets), its φ arrays by
the whole dataset's, and ``/entry/labels`` columns virtual too.

h5py edits the file image in memory and writes no modification times, so the same inputs give
the same bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

import numpy as np

if TYPE_CHECKING:
    from ..simulator import Simulator

__all__ = ["shard_bytes", "master_bytes", "SATURATION"]

SATURATION = 2**31 - 1
"""The largest trusted count written (int32 counts are not clipped at 65535 as the CLI's int
image is)."""


def _group(parent: Any, name: str, nx_class: str) -> Any:
    import h5py

    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_obj_track_times(False)
    gid = h5py.h5g.create(parent.id, name.encode(), gcpl=gcpl)
    g = h5py.Group(gid)
    g.attrs["NX_class"] = np.bytes_(nx_class)
    return g


def _ds(parent: Any, name: str, data: Any, units: Optional[str] = None, **kw: Any) -> Any:
    d = parent.create_dataset(name, data=data, track_times=False, **kw)
    if units:
        d.attrs["units"] = np.bytes_(units)
    return d


def _str(parent: Any, name: str, text: str) -> Any:
    return _ds(parent, name, np.bytes_(text))


def _virtual(parent: Any, name: str, layout: Any, fillvalue: Any = None) -> Any:
    """A virtual dataset without modification times (h5py's create_virtual_dataset stores them)."""
    import h5py

    dcpl = layout._get_dcpl(parent.file.filename)
    dcpl.set_obj_track_times(False)
    if fillvalue is not None:
        dcpl.set_fill_value(np.array([fillvalue], layout.dtype))
    space = h5py.h5s.create_simple(layout.shape)
    tid = h5py.h5t.py_create(np.dtype(layout.dtype), logical=1)
    h5py.h5d.create(parent.id, name=name.encode(), tid=tid, space=space, dcpl=dcpl)


def _meta(entry: Any, meta: Dict[str, object]) -> None:
    ds = _group(entry, "dataset", "NXcollection")
    for k, v in meta.items():
        if isinstance(v, str):
            _str(ds, k, v)
        else:
            _ds(ds, k, np.asarray(v))


def _edit(image: bytes, fn: Callable[[Any], None]) -> bytes:
    """Opens the HDF5 file image ``image`` in memory, applies ``fn(file)``, returns the bytes."""
    import h5py

    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_fapl_core(backing_store=False)
    fapl.set_file_image(image)
    fid = h5py.h5f.open(b"in-memory.h5", h5py.h5f.ACC_RDWR, fapl=fapl)
    with h5py.File(fid) as f:
        fn(f)
        f.flush()
        out: bytes = f.id.get_file_image()
        return out


def _frames(labels: Dict[str, np.ndarray], n: int) -> Tuple[float, float]:
    """(φ of the first frame, width): a rotation series' labels, else stills at 0."""
    if "phi_deg" in labels:
        return float(labels["phi_deg"][0]), float(labels["osc_deg"][0])
    return 0.0, 0.0


HC_EV_A = 12398.42
"""hc in eV·Å, the crate's ``-energy`` conversion."""


def wavelengths(labels: Dict[str, np.ndarray]) -> Optional[List[float]]:
    """One λ (Å) per image where the labels vary it, else None."""
    if "wavelength_A" in labels:
        return [float(x) for x in labels["wavelength_A"]]
    if "energy_eV" in labels:
        return [HC_EV_A / float(x) for x in labels["energy_eV"]]
    return None


def shard_bytes(sim: "Simulator", images: np.ndarray, labels: Dict[str, np.ndarray], meta: Dict[str, object],
                reflections: Optional[Dict[str, np.ndarray]] = None, still: bool = True,
                compression: str = "deflate") -> bytes:
    """One shard: ``images`` (n, slow, fast) int32 counts, through the crate's writer (``still``:
    no rotation scan; ``compression``: the frames' filters, "deflate" or "bslz4");
    ``reflections`` (``dataset.predict``): columns of every image's predicted reflections in
    ``/entry/reflections`` (``image`` is the image index)."""
    phi0, osc = _frames(labels, len(images))
    crate = sim._s.nxmx(np.ascontiguousarray(images, np.int32), phi0, osc, SATURATION, still=still,
                        wavelengths=wavelengths(labels), compression=compression)

    def add(f: Any) -> None:
        lab = _group(f["/entry"], "labels", "NXcollection")
        for k, v in labels.items():
            _ds(lab, k, v)
        _meta(f["/entry"], meta)
        if reflections is not None:
            rf = _group(f["/entry"], "reflections", "NXcollection")
            for k, v in reflections.items():
                _ds(rf, k, v)

    return _edit(crate, add)


def master_bytes(sim: "Simulator", shards: List[Dict[str, Any]], shape: Tuple[int, int], labels: Dict[str, np.ndarray], meta: Dict[str, object],
                 still: bool = True) -> bytes:
    """The master file: the crate's tree, ``/entry/data/data`` and every labels column virtual
    datasets over the shards (``shards``: ``file`` relative to the master, ``start``, ``stop``)."""
    import h5py

    n = shards[-1]["stop"]
    h, w = shape
    phi0, osc = _frames(labels, n)
    crate = sim._s.nxmx(np.zeros((1, h, w), np.int32), phi0, osc, SATURATION, still=still)
    lam = wavelengths(labels)

    def edit(f: Any) -> None:
        del f["/entry/data/data"]
        lay = h5py.VirtualLayout(shape=(n, h, w), dtype=np.int32)
        for s in shards:
            lay[s["start"]:s["stop"]] = h5py.VirtualSource(s["file"], "/entry/data/data", shape=(s["stop"] - s["start"], h, w))
        _virtual(f["/entry/data"], "data", lay, fillvalue=0)
        st = f["/entry/sample/transformations"]
        for name, values in (("phi", phi0 + osc * np.arange(n)), ("phi_end", phi0 + osc * np.arange(1, n + 1))):
            attrs = dict(st[name].attrs)
            del st[name]
            d = _ds(st, name, values.astype(np.float64))
            for k, v in attrs.items():
                d.attrs[k] = v
        if lam is not None:
            b = f["/entry/instrument/beam"]
            attrs = dict(b["incident_wavelength"].attrs)
            del b["incident_wavelength"]
            d = _ds(b, "incident_wavelength", np.asarray(lam, np.float64))
            for k, v in attrs.items():
                d.attrs[k] = v
        lab = _group(f["/entry"], "labels", "NXcollection")
        for k, v in labels.items():
            lay = h5py.VirtualLayout(shape=v.shape, dtype=v.dtype)
            for s in shards:
                m = s["stop"] - s["start"]
                lay[s["start"]:s["stop"]] = h5py.VirtualSource(s["file"], f"/entry/labels/{k}", shape=(m,) + v.shape[1:])
            _virtual(lab, k, lay)
        _meta(f["/entry"], meta)

    return _edit(crate, edit)


