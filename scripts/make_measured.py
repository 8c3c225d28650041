#!/usr/bin/env python3
"""Measured-image test files for crate/tests/measured.rs, made with the programs a
crystallographer's files come from: h5py + hdf5plugin (EIGER-style NeXus master with external
links to bitshuffle-LZ4 data files; gzip+shuffle and LZ4 chunks), fabio (miniCBF) and a
big-endian ADSC SMV. For each case it writes what h5py/fabio read back (frame 0) as raw
little-endian bytes, and a manifest.json with the case's files, dtype, shape and geometry.

usage: make_measured.py OUTDIR [--eiger16m]
  --eiger16m: also an EIGER2 16M-sized frame (4148 x 4362 uint32, bitshuffle-LZ4, module gaps
  flagged as 2^32-1) as eiger16m_master.h5 + eiger16m_data_000001.h5 (the page's open-time test)
"""
import json
import os
import sys

import numpy as np
import h5py
import hdf5plugin
import fabio
from fabio.cbfimage import CbfImage

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(18)
cases = []


def expect(name, arr, files, geometry, frames=1):
    arr = np.ascontiguousarray(arr)
    arr.astype(arr.dtype.newbyteorder("<")).tofile(os.path.join(out, name + ".expect"))
    cases.append({"name": name, "files": files, "dtype": str(arr.dtype), "shape": list(arr.shape),
                  "geometry": geometry, "frames": frames})


def image(h, w, dtype, gaps=True):
    a = rng.poisson(3.0, size=(h, w)).astype(np.int64)
    a[rng.random((h, w)) < 0.002] = rng.integers(1000, 60000, size=1)[0]
    if gaps:
        a[:, w // 3] = np.iinfo(dtype).max if np.issubdtype(dtype, np.unsignedinteger) else -1
    return a.astype(dtype)


def nx_geometry(f, pixel_m=75e-6, dist_m=0.2, bx=150.25, by=100.75, lam=0.9763, beam_mm=False):
    """NXmx geometry; beam_mm: the beam centre as a length (mm), as NXmx also allows."""
    d = f.require_group("entry/instrument/detector")
    bk, bu = (pixel_m * 1000, "mm") if beam_mm else (1.0, "pixel")
    for k, v, u in [("x_pixel_size", pixel_m, "m"), ("y_pixel_size", pixel_m, "m"),
                    ("detector_distance", dist_m, "m"), ("beam_center_x", bx * bk, bu),
                    ("beam_center_y", by * bk, bu), ("count_time", 0.1, "s"),
                    ("sensor_thickness", 450e-6, "m")]:
        d[k] = v
        d[k].attrs["units"] = u
    d["sensor_material"] = b"Silicon"
    d["saturation_value"] = np.int32(1000000)
    b = f.require_group("entry/instrument/beam")
    b["incident_wavelength"] = lam
    b["incident_wavelength"].attrs["units"] = "angstrom"
    g = f.require_group("entry/sample/goniometer")
    g["omega"] = np.array([10.0, 10.1])
    g["omega_range_average"] = 0.1
    return {"pixel_mm": pixel_m * 1000, "distance_mm": dist_m * 1000, "beam_px": [bx, by],
            "wavelength_a": lam, "phi_deg": 10.0, "osc_deg": 0.1}


# 1. EIGER: master + two data files, bitshuffle-LZ4 uint32, frames of 211 x 300 (63300 pixels:
# several bitshuffle blocks, a short last block and 4 left-over elements), chunk = one frame
h, w = 211, 300
frames = [image(h, w, np.uint32) for _ in range(3)]
bslz4 = hdf5plugin.Bitshuffle(nelems=0, cname="lz4")
for k, fr in [(1, frames[:2]), (2, frames[2:])]:
    with h5py.File(os.path.join(out, f"eiger_data_{k:06d}.h5"), "w") as f:
        f.create_dataset("entry/data/data", data=np.stack(fr), chunks=(1, h, w), **bslz4)
with h5py.File(os.path.join(out, "eiger_master.h5"), "w") as f:
    geo = nx_geometry(f)
    for k in (1, 2):
        f[f"entry/data/data_{k:06d}"] = h5py.ExternalLink(f"eiger_data_{k:06d}.h5", "/entry/data/data")
with h5py.File(os.path.join(out, "eiger_master.h5"), "r") as f:
    expect("eiger_bslz4", f["entry/data/data_000001"][0], ["eiger_master.h5", "eiger_data_000001.h5",
           "eiger_data_000002.h5"], geo, frames=2)

# 2. EIGER, new library format (dense link storage), uint16 frames in tiles of 64 x 96 chunks
h, w = 150, 200
fr = image(h, w, np.uint16)
with h5py.File(os.path.join(out, "tiles_data_000001.h5"), "w", libver=("v110", "v110")) as f:
    f.create_dataset("entry/data/data", data=fr[None], chunks=(1, 64, 96),
                     **hdf5plugin.Bitshuffle(nelems=0, cname="lz4"))
with h5py.File(os.path.join(out, "tiles_master.h5"), "w", libver=("v110", "v110")) as f:
    geo = nx_geometry(f, pixel_m=172e-6, dist_m=0.35, bx=99.5, by=74.5, lam=1.0332)
    for name in ["a", "b", "c", "d", "e", "f", "g", "h", "i"]:
        f[f"entry/data/z_{name}"] = np.arange(3)
    f["entry/data/data_000001"] = h5py.ExternalLink("tiles_data_000001.h5", "/entry/data/data")
with h5py.File(os.path.join(out, "tiles_master.h5"), "r") as f:
    expect("tiles_bslz4_u16", f["entry/data/data_000001"][0], ["tiles_master.h5", "tiles_data_000001.h5"], geo)

# 3. one file, gzip + shuffle, int32 with partial edge chunks
h, w = 97, 131
fr = image(h, w, np.int32)
with h5py.File(os.path.join(out, "gzip.h5"), "w") as f:
    geo = nx_geometry(f, pixel_m=0.1e-3, dist_m=0.1, bx=65.0, by=48.0, lam=1.5)
    f.create_dataset("entry/data/data", data=fr[None], chunks=(1, 40, 50), compression="gzip", shuffle=True)
with h5py.File(os.path.join(out, "gzip.h5"), "r") as f:
    expect("gzip_i32", f["entry/data/data"][0], ["gzip.h5"], geo)

# 4. one file, the HDF5 LZ4 filter (32004), uint32
h, w = 64, 80
fr = image(h, w, np.uint32)
with h5py.File(os.path.join(out, "lz4.h5"), "w") as f:
    f.create_dataset("entry/data/data", data=fr[None], chunks=(1, 64, 80), **hdf5plugin.LZ4(nbytes=4096))
with h5py.File(os.path.join(out, "lz4.h5"), "r") as f:
    expect("lz4_u32", f["entry/data/data"][0], ["lz4.h5"], {})

# 4b. one file, bitshuffle without compression (hdf5plugin cname="none": no 12-byte header),
# uint16 in 40 x 56 chunks (partial edge chunks, a short last block, left-over elements), and the
# beam centre given in mm
h, w = 90, 150
fr = image(h, w, np.uint16)
with h5py.File(os.path.join(out, "bsnone.h5"), "w") as f:
    geo = nx_geometry(f, pixel_m=172e-6, dist_m=0.3, bx=70.5, by=40.25, lam=1.1, beam_mm=True)
    f.create_dataset("entry/data/data", data=fr[None], chunks=(1, 40, 56),
                     **hdf5plugin.Bitshuffle(nelems=0, cname="none"))
with h5py.File(os.path.join(out, "bsnone.h5"), "r") as f:
    expect("bitshuffle_none_u16", f["entry/data/data"][0], ["bsnone.h5"], geo)

# 4c. the same without compression in blocks of 16 elements (the filter's own block size)
with h5py.File(os.path.join(out, "bsnone16.h5"), "w") as f:
    f.create_dataset("entry/data/data", data=fr, chunks=(40, 56),
                     **hdf5plugin.Bitshuffle(nelems=16, cname="none"))
with h5py.File(os.path.join(out, "bsnone16.h5"), "r") as f:
    expect("bitshuffle_none_block16", f["entry/data/data"][()], ["bsnone16.h5"], {})

# 5. miniCBF written by fabio (byte offset), with a PILATUS header
h, w = 195, 487
fr = image(h, w, np.int32)
fr[5, 5] = 2_000_000  # a 4-byte delta
fr[6, 5] = -2
contents = "\r\n".join(["# Detector: PILATUS 6M", "# Pixel_size 172e-6 m x 172e-6 m",
                         "# Silicon sensor, thickness 0.000450 m", "# Exposure_time 0.5 s",
                         "# Detector_distance 0.25000 m", "# Wavelength 0.90000 A",
                         "# Beam_xy (240.50, 100.25) pixels", "# Start_angle 5.0000 deg.",
                         "# Angle_increment 0.2000 deg."])
cbf = CbfImage(data=fr, header={"_array_data.header_convention": "PILATUS_1.2",
                                "_array_data.header_contents": contents})
cbf.write(os.path.join(out, "fabio.cbf"))
expect("fabio_cbf", fabio.open(os.path.join(out, "fabio.cbf")).data, ["fabio.cbf"],
       {"pixel_mm": 0.172, "distance_mm": 250.0, "beam_px": [240.5, 100.25], "wavelength_a": 0.9,
        "phi_deg": 5.0, "osc_deg": 0.2})

# 6. ADSC SMV, big-endian
h, w = 120, 100
fr = image(h, w, np.uint16, gaps=False)
head = ("{\nHEADER_BYTES=  512;\nDIM=2;\nBYTE_ORDER=big_endian;\nTYPE=unsigned_short;\n"
        f"SIZE1={w};\nSIZE2={h};\nPIXEL_SIZE=0.1;\nDISTANCE=150;\nWAVELENGTH=1.2;\n"
        "BEAM_CENTER_X=6.05;\nBEAM_CENTER_Y=4.95;\nPHI=30;\nOSC_RANGE=1;\n}\n").encode()
with open(os.path.join(out, "adsc_be.img"), "wb") as fh:
    fh.write(head.ljust(512, b" "))
    fh.write(fr.astype(">u2").tobytes())
expect("adsc_be", fabio.open(os.path.join(out, "adsc_be.img")).data, ["adsc_be.img"],
       {"pixel_mm": 0.1, "distance_mm": 150.0, "beam_px": [4.95 / 0.1 + 0.5, 6.05 / 0.1 + 0.5],
        "wavelength_a": 1.2, "phi_deg": 30.0, "osc_deg": 1.0})

if "--eiger16m" in sys.argv:
    h, w = 4362, 4148
    fr = rng.poisson(0.3, size=(h, w)).astype(np.uint32)
    ys, xs = rng.integers(0, h, 4000), rng.integers(0, w, 4000)
    fr[ys, xs] = rng.integers(100, 20000, 4000).astype(np.uint32)
    for x0 in range(1028, w, 1028 + 12):  # vertical gaps between modules (EIGER2 16M layout)
        fr[:, x0:x0 + 12] = np.iinfo(np.uint32).max
    for y0 in range(512, h, 512 + 38):
        fr[y0:y0 + 38, :] = np.iinfo(np.uint32).max
    with h5py.File(os.path.join(out, "eiger16m_data_000001.h5"), "w") as f:
        f.create_dataset("entry/data/data", data=fr[None], chunks=(1, h, w), **hdf5plugin.Bitshuffle(nelems=0, cname="lz4"))
    with h5py.File(os.path.join(out, "eiger16m_master.h5"), "w") as f:
        geo = nx_geometry(f, pixel_m=75e-6, dist_m=0.25, bx=2074.0, by=2181.0, lam=0.9763)
        f["entry/data/data_000001"] = h5py.ExternalLink("eiger16m_data_000001.h5", "/entry/data/data")
    with h5py.File(os.path.join(out, "eiger16m_master.h5"), "r") as f:
        expect("eiger16m", f["entry/data/data_000001"][0], ["eiger16m_master.h5", "eiger16m_data_000001.h5"], geo)

with open(os.path.join(out, "manifest.json"), "w") as fh:
    json.dump(cases, fh, indent=1)
print(f"{len(cases)} cases in {out}")
