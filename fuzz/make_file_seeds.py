#!/usr/bin/env python3
"""Seeds and regression inputs of the file-reader fuzz targets (fuzz/README.md), made with the
programs users' files come from: h5py + hdf5plugin (NeXus/HDF5 with gzip, shuffle, LZ4 and
bitshuffle with and without LZ4; an EIGER-style master with its data file), fabio (miniCBF);
the crafted inputs of issue 29 (declared sizes beyond the data, chunk headers and B-tree offsets
patched, geometry values the flags refuse) made from them.

usage: make_file_seeds.py FUZZDIR   (writes FUZZDIR/corpus/<target>/seed-* and
FUZZDIR/regressions/<target>/*; needs the packages of target/pyvenv, scripts/setup.sh python)
"""
import os
import struct
import sys
import tempfile

import numpy as np
import h5py
import hdf5plugin
import fabio
from fabio.cbfimage import CbfImage

out = sys.argv[1]
scratch = tempfile.mkdtemp()

# ---- seeds
rng = np.random.default_rng(5)
def corpus(t):
    d = os.path.join(out, "corpus", t); os.makedirs(d, exist_ok=True); return d
def geo(f, beam_mm=False):
    d = f.require_group("entry/instrument/detector")
    p = 172e-6
    bk, bu = (p * 1000, "mm") if beam_mm else (1.0, "pixel")
    for k, v, u in [("x_pixel_size", p, "m"), ("y_pixel_size", p, "m"), ("detector_distance", 0.2, "m"),
                    ("beam_center_x", 6.5 * bk, bu), ("beam_center_y", 4.25 * bk, bu)]:
        d[k] = v; d[k].attrs["units"] = u
    b = f.require_group("entry/instrument/beam")
    b["incident_wavelength"] = 1.0; b["incident_wavelength"].attrs["units"] = "angstrom"
    g = f.require_group("entry/sample/goniometer")
    g["omega"] = np.array([10.0]); g["omega_range_average"] = 0.1
fr = rng.poisson(3, size=(10, 14)).astype(np.uint16); fr[:, 5] = 65535
tmp = scratch
def h5(name, beam_mm=False, data=True, **kw):
    path = os.path.join(tmp, name)
    with h5py.File(path, "w", libver=("v110", "v110")) as f:
        geo(f, beam_mm)
        if data:
            f.create_dataset("entry/data/data", data=kw.pop("arr", fr)[None], **kw)
    return open(path, "rb").read()
m = corpus("measured")
files = {
    "seed-gzip.h5": h5("g.h5", chunks=(1, 4, 8), compression="gzip", shuffle=True),
    "seed-bslz4.h5": h5("b.h5", chunks=(1, 10, 14), **hdf5plugin.Bitshuffle(nelems=0, cname="lz4")),
    "seed-bsnone-mm.h5": h5("n.h5", beam_mm=True, chunks=(1, 4, 8), **hdf5plugin.Bitshuffle(nelems=16, cname="none")),
    "seed-lz4.h5": h5("l.h5", arr=fr.astype(np.uint32), chunks=(1, 10, 14), **hdf5plugin.LZ4(nbytes=256)),
}
for k, v in files.items():
    open(os.path.join(m, k), "wb").write(v)
# master + data file
with h5py.File(os.path.join(tmp, "d.h5"), "w", libver=("v110", "v110")) as f:
    f.create_dataset("entry/data/data", data=fr[None], chunks=(1, 10, 14), **hdf5plugin.Bitshuffle(nelems=0, cname="lz4"))
with h5py.File(os.path.join(tmp, "m.h5"), "w", libver=("v110", "v110")) as f:
    geo(f)
    f["entry/data/data_000001"] = h5py.ExternalLink("data_000001.h5", "/entry/data/data")
sep = b"\n--next-file--\n"
open(os.path.join(m, "seed-master-data"), "wb").write(open(os.path.join(tmp, "m.h5"), "rb").read() + sep + open(os.path.join(tmp, "d.h5"), "rb").read())
# miniCBF (fabio), small
c = corpus("cbf")
img = rng.poisson(3, size=(6, 9)).astype(np.int32); img[2, 2] = 2_000_000; img[3, 2] = -1; img[4, 4] = 300
contents = "\r\n".join(["# Detector: PILATUS 6M", "# Pixel_size 172e-6 m x 172e-6 m", "# Silicon sensor, thickness 0.000450 m",
                        "# Exposure_time 0.5 s", "# Detector_distance 0.25000 m", "# Wavelength 0.90000 A",
                        "# Beam_xy (4.50, 3.25) pixels", "# Start_angle 5.0000 deg.", "# Angle_increment 0.2000 deg."])
CbfImage(data=img, header={"_array_data.header_convention": "PILATUS_1.2", "_array_data.header_contents": contents}).write(os.path.join(tmp, "f.cbf"))
b = open(os.path.join(tmp, "f.cbf"), "rb").read()
# (fabio pads 4095 bytes after the data only when asked: the seed stays about 1 KB)
open(os.path.join(c, "seed-fabio.cbf"), "wb").write(b)
open(os.path.join(m, "seed-fabio.cbf"), "wb").write(b)
# h5chunk: raw chunks as stored
hc = corpus("h5chunk")
def raw(path, mode, block, arr_bytes):
    with h5py.File(path, "r") as f:
        ds = f["entry/data/data"]
        _, ch = ds.id.read_direct_chunk((0, 0, 0))
    return bytes([mode, block]) + struct.pack("<H", arr_bytes) + ch
open(os.path.join(hc, "seed-bslz4-u16"), "wb").write(raw(os.path.join(tmp, "b.h5"), 1 | 8, 0, 10 * 14 * 2))
open(os.path.join(hc, "seed-bsnone-u16"), "wb").write(raw(os.path.join(tmp, "n.h5"), 1, 2, 4 * 8 * 2))
open(os.path.join(hc, "seed-lz4-u32"), "wb").write(raw(os.path.join(tmp, "l.h5"), 2 | 4, 0, 10 * 14 * 4))
# an SMV image for the measured target: the smv target's small seed
open(os.path.join(m, "seed-smv.img"), "wb").write(open(os.path.join(out, "corpus/smv/seed-small"), "rb").read())


# ---- regressions
def d(t):
    p = os.path.join(out, "regressions", t); os.makedirs(p, exist_ok=True); return p
def put(t, name, b):
    open(os.path.join(d(t), name), "wb").write(b if isinstance(b, bytes) else b.encode())
# --- cbf: crafted headers over a few bytes of data
def cbf(w, h, n, size, data, extra=""):
    head = ("###CBF: VERSION 1.5\r\n" + extra + "_array_data.data\r\n;\r\n--CIF-BINARY-FORMAT-SECTION--\r\n"
            "Content-Type: application/octet-stream;\r\n     conversions=\"x-CBF_BYTE_OFFSET\"\r\n"
            f"X-Binary-Size: {size}\r\nX-Binary-Number-of-Elements: {n}\r\n"
            f"X-Binary-Size-Fastest-Dimension: {w}\r\nX-Binary-Size-Second-Dimension: {h}\r\n\r\n")
    return head.encode() + b"\x0c\x1a\x04\xd5" + data + b"\0" * 64
four = bytes([1, 1, 1, 1])
put("cbf", "dims-2e20-squared", cbf(1 << 20, 1 << 20, 1 << 40, 4, four))
put("cbf", "dims-2e31-squared", cbf(1 << 31, 1 << 31, 1 << 62, 4, four))
put("cbf", "dims-16384-squared-1k", cbf(16384, 16384, 16384 ** 2, 900, bytes(900)))
put("cbf", "fewer-pixels-than-data", cbf(1, 2, 2, 4, four))
put("cbf", "value-beyond-i32", cbf(2, 1, 2, 8, bytes([0x80, 0, 0x80, 0xff, 0xff, 0xff, 0x7f, 1])))
put("cbf", "elements-unparsable", cbf(2, 2, "four", 4, four))
pil = lambda k: "_array_data.header_contents\r\n;\r\n" + k + "\r\n;\r\n"
put("cbf", "wavelength-1e999", cbf(2, 2, 4, 4, four, pil("# Wavelength 1e999 A")))
put("cbf", "distance-negative", cbf(2, 2, 4, 4, four, pil("# Detector_distance -0.2 m")))
put("cbf", "pixel-0", cbf(2, 2, 4, 4, four, pil("# Pixel_size 0 m x 0 m")))
# --- h5chunk: [mode, block, size u16] + chunk
def bs(total, block, tail=b""):
    return struct.pack(">QI", total, block) + tail
put("h5chunk", "bitshuffle-total-2e40", bytes([1 | 8, 0]) + struct.pack("<H", 64) + bs(1 << 40, 64))
put("h5chunk", "bitshuffle-total-2e63", bytes([1 | 8, 0]) + struct.pack("<H", 64) + bs(1 << 63, 64))
put("h5chunk", "lz4-total-2e40", bytes([4, 0]) + struct.pack("<H", 64) + bs(1 << 40, 64))
put("h5chunk", "lz4-total-2e63", bytes([4, 0]) + struct.pack("<H", 64) + bs(1 << 63, 64))
put("h5chunk", "bitshuffle-block-fffffff0", bytes([2 | 8, 0]) + struct.pack("<H", 64) + bs(64, 0xFFFFFFF0, b"\0\0\0\x10" + bytes(16)))
# --- measured: whole files with h5py
tmp = scratch
def geo(f, pixel=172e-6, dist=0.2, lam=1.0, omega=10.0):
    det = f.require_group("entry/instrument/detector")
    for k, v, u in [("x_pixel_size", pixel, "m"), ("y_pixel_size", pixel, "m"), ("detector_distance", dist, "m"),
                    ("beam_center_x", 6.5, "pixel"), ("beam_center_y", 4.25, "pixel")]:
        det[k] = v; det[k].attrs["units"] = u
    b = f.require_group("entry/instrument/beam")
    b["incident_wavelength"] = lam; b["incident_wavelength"].attrs["units"] = "angstrom"
    g = f.require_group("entry/sample/goniometer")
    g["omega"] = np.array([omega]); g["omega_range_average"] = 0.1
fr = (np.arange(10 * 14) % 7).astype(np.uint16).reshape(10, 14)
def h5(name, arr=fr, shape=None, **kw):
    p = os.path.join(tmp, name)
    with h5py.File(p, "w", libver=("v110", "v110")) as f:
        geo(f, **{k: kw.pop(k) for k in ["pixel", "dist", "lam", "omega"] if k in kw})
        if shape is None:
            f.create_dataset("entry/data/data", data=arr[None], **kw)
        else:
            f.create_dataset("entry/data/data", shape=shape, dtype=np.uint16, **kw)
    return open(p, "rb").read()
put("measured", "gzip-30000-squared-unwritten", h5("big.h5", shape=(1, 30000, 30000), chunks=(1, 1000, 1000), compression="gzip"))
put("measured", "omega-nan", h5("nan.h5", omega=float("nan"), chunks=(1, 10, 14), compression="gzip"))
put("measured", "pixel-0", h5("p0.h5", pixel=0.0, chunks=(1, 10, 14), compression="gzip"))
put("measured", "distance-negative", h5("dn.h5", dist=-0.2, chunks=(1, 10, 14), compression="gzip"))
put("measured", "wavelength-0", h5("w0.h5", lam=0.0, chunks=(1, 10, 14), compression="gzip"))
# chunk headers patched in a bitshuffle-LZ4 file: totals of 2^40 and 2^63, a block of 0xFFFFFFF0
good = h5("bs.h5", chunks=(1, 10, 14), **hdf5plugin.Bitshuffle(nelems=0, cname="lz4"))
with h5py.File(os.path.join(tmp, "bs.h5"), "r") as f:
    off = f["entry/data/data"].id.get_chunk_info(0).byte_offset
assert struct.unpack(">Q", good[off:off + 8])[0] == 280
def patch(at, b):
    return good[:at] + b + good[at + len(b):]
put("measured", "bslz4-total-2e40", patch(off, struct.pack(">Q", 1 << 40)))
put("measured", "bslz4-total-2e63", patch(off, struct.pack(">Q", 1 << 63)))
put("measured", "bslz4-block-fffffff0", patch(off + 8, struct.pack(">I", 0xFFFFFFF0)))
good = h5("lz.h5", chunks=(1, 10, 14), **hdf5plugin.LZ4(nbytes=64))
with h5py.File(os.path.join(tmp, "lz.h5"), "r") as f:
    off = f["entry/data/data"].id.get_chunk_info(0).byte_offset
put("measured", "lz4-total-2e40", patch(off, struct.pack(">Q", 1 << 40)))
# --- geom
two = open(os.path.join(out, "corpus/geom/seed-two.geom")).read()
put("geom", "vector-non-ascii", two.replace("p0/fs = -1.0x", "p0/fs = éx"))
put("geom", "vector-exponent", two.replace("p0/fs = -1.0x", "p0/fs = 1e-300x"))
put("geom", "max-fs-2e64", two.replace("p0/max_fs = 19", "p0/max_fs = 18446744073709551615"))
put("geom", "dim-2e64", two.replace("dim1 = ss", "dim1 = 18446744073709551615").replace("dim0 = %", "dim0 = ss"))
put("geom", "clen-1e300", two.replace("clen = 0.1 m", "clen = 1e300 m"))
put("geom", "clen-negative", two.replace("clen = 0.1 m", "clen = -0.1 m"))
# --- expt
one = open(os.path.join(out, "corpus/expt/seed-one.expt")).read()
put("expt", "image-size-1e19", one.replace("[32, 24]", "[1e19, 24]"))
put("expt", "pixel-1e-300", one.replace("[0.1, 0.1]", "[1e-300, 1e-300]"))
put("expt", "wavelength-1e300", one.replace('"wavelength": 0.9', '"wavelength": 1e300'))
put("expt", "oscillation-1e300", one.replace("[5.0, 0.5]", "[5.0, 1e300]"))
hier = open(os.path.join(out, "corpus/expt/seed-hierarchy.expt")).read()
put("expt", "panels-stacked-beyond-i64", hier.replace("[10, 20]", "[10, 9e18]"))

# ---- B-tree chunk offsets beyond the image
fr = (np.arange(10 * 14) % 7).astype(np.uint16).reshape(10, 14)
for name, kw in [("btree-offset-beyond-width-bslz4", hdf5plugin.Bitshuffle(nelems=0, cname="lz4")),
                 ("btree-offset-beyond-width-gzip", dict(compression="gzip"))]:
    p = os.path.join(scratch, name + ".h5")
    with h5py.File(p, "w") as f:
        f.create_dataset("entry/data/data", data=fr[None], chunks=(1, 4, 8), **kw)
    b = open(p, "rb").read()
    key = struct.pack("<QQQQ", 0, 4, 8, 0)
    assert b.count(key) == 1, b.count(key)
    b = b.replace(key, struct.pack("<QQQQ", 0, 4, 64000, 0))
    open(os.path.join(out, "regressions/measured", name), "wb").write(b)
print("seeds and regressions written under", out)
