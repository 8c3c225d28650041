"""NXmx files of a dataset (h5py + hdf5plugin), in the layout of the crate's NeXus writer
(``crate/src/io/nexus.rs``, the CLI's ``-nexus``): the same groups, datasets, attributes and
frames, so DIALS' ``dials.import`` reads a shard as it reads the CLI's file. A shard adds
``/entry/labels`` (NXcollection: one row per image: orientation, every varied parameter, seeds)
and ``/entry/dataset`` (the description's text, the shard's index and image range).

Files are built in memory (HDF5 "core" driver, no backing store) and returned as bytes: the
caller writes them under a temporary name and renames them into place. Objects carry no
modification times, so the same inputs give the same bytes.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence

import numpy as np

__all__ = ["to_mcstas", "shard_bytes", "master_bytes", "geometry_of"]


def to_mcstas(beam: Sequence[float]) -> np.ndarray:
    """The rotation (rows) from nanoBragg's lab frame to NeXus' McStas frame (the crate's
    ``io::nexus::to_mcstas``): the beam to +z; a beam along +x maps (x, y, z) -> (-z, y, x)."""
    mosflm = np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    b = np.asarray(beam, float)
    b = b / math.sqrt(float(b @ b))
    c = b[0]
    ay, az = b[2], -b[1]
    s = math.sqrt(ay * ay + az * az)
    if s < 1e-15 and c > 0:
        align = np.eye(3)
    elif s < 1e-15:
        align = np.array([[-1.0, 0, 0], [0, 1.0, 0], [0, 0, -1.0]])
    else:
        ky, kz = ay / s, az / s
        t = 1.0 - c
        align = np.array([[c, -s * kz, s * ky], [s * kz, c + t * ky * ky, t * ky * kz], [-s * ky, t * ky * kz, c + t * kz * kz]])
    return mosflm @ align


def geometry_of(sim) -> dict:
    """What the NXmx tree needs from a Simulator's resolved setup (``Session.geometry``)."""
    g = dict(sim._s.geometry())
    preset = g.pop("preset")
    no_sensor = 1e-9  # dxtbx needs a known material and a positive thickness (as the CLI)
    if preset is not None:
        label, sensor, thick_um, saturation = preset
        material, thick = {"Silicon": ("Si", thick_um * 1e-6), "CdTe": ("CdTe", thick_um * 1e-6)}.get(sensor, ("Si", no_sensor))
        g["description"] = label
    else:
        material, thick = ("Si", g["thick"]) if g["thick"] > 0 else ("Si", no_sensor)
        g["description"] = "nanoBragg simulation"
        saturation = None
    g["sensor_material"], g["sensor_thickness"] = material, thick
    g["saturation"] = saturation
    m = g.pop("mask")
    g["mask"] = None if m is None else np.frombuffer(m, np.uint8).reshape(g["slow_pixels"], g["fast_pixels"])
    return g


def _new_file():
    import h5py

    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_fapl_core(backing_store=False)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_V110, h5py.h5f.LIBVER_LATEST)
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_obj_track_times(False)
    fid = h5py.h5f.create(b"in-memory.h5", h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)
    return h5py.File(fid)


def _group(parent, name: str, nx_class: str):
    import h5py

    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_obj_track_times(False)
    gid = h5py.h5g.create(parent.id, name.encode(), gcpl=gcpl)
    g = h5py.Group(gid)
    g.attrs["NX_class"] = np.bytes_(nx_class)
    return g


def _ds(parent, name: str, data, units: Optional[str] = None, **kw):
    d = parent.create_dataset(name, data=data, track_times=False, **kw)
    if units:
        d.attrs["units"] = np.bytes_(units)
    return d


def _str(parent, name: str, text: str):
    return _ds(parent, name, np.bytes_(text))


def _transform(d, kind: str, vector, units: str, depends_on: str, offset=(0.0, 0.0, 0.0), offset_units=None):
    d.attrs["transformation_type"] = np.bytes_(kind)
    d.attrs["vector"] = np.asarray(vector, np.float64)
    d.attrs["offset"] = np.asarray(offset, np.float64)
    if offset_units:
        d.attrs["offset_units"] = np.bytes_(offset_units)
    d.attrs["units"] = np.bytes_(units)
    d.attrs["depends_on"] = np.bytes_(depends_on)


def _unit(v):
    n = float(np.linalg.norm(v))
    return (np.array([1.0, 0.0, 0.0]), 0.0) if n == 0 else (np.asarray(v, float) / n, n)


def _tree(f, g: dict, n: int, phi_start: np.ndarray, osc: float, exposure: float, saturation: int, write_data):
    """The crate's NXmx tree (io/nexus.rs `write_nxmx`); `write_data(group)` makes data/data."""
    r = to_mcstas(g["beam"])
    mm = lambda v: (r @ np.asarray(v, float)) * 1000.0  # noqa: E731
    w, h = g["fast_pixels"], g["slow_pixels"]
    entry = _group(f, "entry", "NXentry")
    entry.attrs["default"] = np.bytes_("data")
    _str(entry, "definition", "NXmx")
    data = _group(entry, "data", "NXdata")
    data.attrs["signal"] = np.bytes_("data")
    write_data(data)
    inst = _group(entry, "instrument", "NXinstrument")
    _str(inst, "name", "nanoBragg Web simulation")
    beam = _group(inst, "beam", "NXbeam")
    _ds(beam, "incident_wavelength", np.float64(g["wavelength_A"]), "angstrom")
    det = _group(inst, "detector", "NXdetector")
    _str(det, "description", g["description"])
    _str(det, "sensor_material", g["sensor_material"])
    _str(det, "type", "PAD")
    _ds(det, "sensor_thickness", np.float64(g["sensor_thickness"] * 1000.0), "mm")
    _ds(det, "x_pixel_size", np.float64(g["pixel"] * 1000.0), "mm")
    _ds(det, "y_pixel_size", np.float64(g["pixel"] * 1000.0), "mm")
    _ds(det, "count_time", np.float64(exposure), "s")
    _ds(det, "frame_time", np.float64(exposure), "s")
    _ds(det, "saturation_value", np.int64(saturation))
    _ds(det, "underload_value", np.int64(0))
    if g["mask"] is not None:
        _ds(det, "pixel_mask", (g["mask"] == 0).astype(np.uint32), chunks=(h, w), compression="gzip", compression_opts=4)
    det_path = "/entry/instrument/detector"
    origin0 = mm(g["pix0"])
    ou, olen = _unit(origin0)
    _str(det, "depends_on", f"{det_path}/transformations/detector_origin")
    tr = _group(det, "transformations", "NXtransformations")
    _transform(_ds(tr, "detector_origin", np.array([olen])), "translation", ou, "mm", ".")
    m = _group(det, "module", "NXdetector_module")
    _ds(m, "data_origin", np.array([0, 0], np.int32))
    _ds(m, "data_size", np.array([h, w], np.int32))
    _ds(m, "data_stride", np.array([1, 1], np.int32))
    _transform(_ds(m, "module_offset", np.array([0.0])), "translation", (1.0, 0.0, 0.0), "mm",
               f"{det_path}/transformations/detector_origin", offset=mm(g["pix0"]) - origin0, offset_units="mm")
    for key, v in (("fast_pixel_direction", g["fdet"]), ("slow_pixel_direction", g["sdet"])):
        u, _ = _unit(r @ np.asarray(v, float))
        _transform(_ds(m, key, np.array([g["pixel"] * 1000.0])), "translation", u, "mm", f"{det_path}/module/module_offset")
    sample = _group(entry, "sample", "NXsample")
    _str(sample, "name", "simulated crystal")
    _str(sample, "depends_on", "/entry/sample/transformations/phi")
    st = _group(sample, "transformations", "NXtransformations")
    axis, _ = _unit(r @ np.asarray(g["spindle"], float))
    _transform(_ds(st, "phi", np.asarray(phi_start, np.float64)), "rotation", axis, "deg", ".")
    _ds(st, "phi_end", np.asarray(phi_start, np.float64) + osc, "deg")
    _ds(st, "phi_increment_set", np.float64(osc), "deg")
    return entry


def _virtual(parent, name: str, layout, fillvalue=None):
    """A virtual dataset without modification times (h5py's create_virtual_dataset stores them)."""
    import h5py

    dcpl = layout._get_dcpl(parent.file.filename)
    dcpl.set_obj_track_times(False)
    if fillvalue is not None:
        dcpl.set_fill_value(np.array([fillvalue], layout.dtype))
    space = h5py.h5s.create_simple(layout.shape)
    tid = h5py.h5t.py_create(np.dtype(layout.dtype), logical=1)
    h5py.h5d.create(parent.id, name=name.encode(), tid=tid, space=space, dcpl=dcpl)


def _frames(g: dict, labels: Dict[str, np.ndarray], n: int):
    if "phi_deg" in labels:
        return np.asarray(labels["phi_deg"], np.float64), float(labels["osc_deg"][0])
    return np.full(n, g["phi0_deg"]), float(g["osc_deg"])


def _saturation(g: dict, images_dtype) -> int:
    if g["saturation"] is not None:
        return int(g["saturation"])
    return int(np.iinfo(np.int32).max) if np.dtype(images_dtype).kind == "i" else 65535


def _filters(compression: str) -> dict:
    if compression == "gzip":
        return {"shuffle": True, "compression": "gzip", "compression_opts": 4}
    if compression == "bitshuffle":
        import hdf5plugin

        return dict(hdf5plugin.Bitshuffle(nelems=0, cname="lz4"))
    return {}


def _labels(entry, labels: Dict[str, np.ndarray], meta: Dict[str, object]):
    lab = _group(entry, "labels", "NXcollection")
    for k, v in labels.items():
        _ds(lab, k, v)
    ds = _group(entry, "dataset", "NXcollection")
    for k, v in meta.items():
        if isinstance(v, str):
            _str(ds, k, v)
        else:
            _ds(ds, k, np.asarray(v))


def shard_bytes(g: dict, images: np.ndarray, labels: Dict[str, np.ndarray], meta: Dict[str, object], compression: str = "gzip") -> bytes:
    """One shard: ``images`` (n, slow, fast) int32 or float32, one chunk per image."""
    n, h, w = images.shape
    phi, osc = _frames(g, labels, n)

    def data(grp):
        _ds(grp, "data", images, chunks=(1, h, w), **_filters(compression))

    with _new_file() as f:
        entry = _tree(f, g, n, phi, osc, g["exposure_s"], _saturation(g, images.dtype), data)
        _labels(entry, labels, meta)
        f.flush()
        return f.id.get_file_image()


def master_bytes(g: dict, shards: List[dict], shape, dtype, labels: Dict[str, np.ndarray], meta: Dict[str, object]) -> bytes:
    """The master file: the same tree, ``/entry/data/data`` and every labels column a virtual
    dataset over the shards (``shards``: ``file`` relative to the master, ``start``, ``stop``)."""
    import h5py

    n = shards[-1]["stop"]
    h, w = shape
    phi, osc = _frames(g, labels, n)

    def data(grp):
        lay = h5py.VirtualLayout(shape=(n, h, w), dtype=dtype)
        for s in shards:
            src = h5py.VirtualSource(s["file"], "/entry/data/data", shape=(s["stop"] - s["start"], h, w))
            lay[s["start"]:s["stop"]] = src
        _virtual(grp, "data", lay, fillvalue=0)

    with _new_file() as f:
        entry = _tree(f, g, n, phi, osc, g["exposure_s"], _saturation(g, dtype), data)
        lab = _group(entry, "labels", "NXcollection")
        for k, v in labels.items():
            lay = h5py.VirtualLayout(shape=v.shape, dtype=v.dtype)
            for s in shards:
                m = s["stop"] - s["start"]
                lay[s["start"]:s["stop"]] = h5py.VirtualSource(s["file"], f"/entry/labels/{k}", shape=(m,) + v.shape[1:])
            _virtual(lab, k, lay)
        ds = _group(entry, "dataset", "NXcollection")
        for k, v in meta.items():
            _str(ds, k, v) if isinstance(v, str) else _ds(ds, k, np.asarray(v))
        f.flush()
        return f.id.get_file_image()
