#!/usr/bin/env python3
"""Reads miniCBF files written by nanobragg / noisify (-cbffile) with fabio, an independent
reader, and checks that each holds exactly the pixels of the SMV image of the same run.

  check_cbf.py IMAGE.cbf IMAGE.img [IMAGE2.cbf IMAGE2.img ...]   compare the given pairs
  check_cbf.py --run BINDIR    make images with BINDIR/nanobragg and BINDIR/noisify in a
                               temporary folder (plain detector, PILATUS 6M preset with its
                               module gaps, 32-bit noisify) and compare them

Pixels marked -1 in the CBF (module gaps of a detector preset) are counted, not compared. The
header is also read the way dxtbx's FormatCBFMini reads it (its '# key value' parsing,
re-implemented here) and its values checked against the SMV header.

Needs fabio: `pip install fabio`, or Debian's python3-fabio. Exits 1 on any difference.
"""

import base64
import hashlib
import os
import subprocess
import sys
import tempfile

try:
    import fabio
    import numpy
except ImportError as e:  # loud: this check must not be skipped silently
    sys.exit(f"check_cbf.py: {e}: install fabio (pip install fabio, or apt install python3-fabio)")


def smv_header(path):
    with open(path, "rb") as f:
        text = f.read(512).decode("ascii", "replace")
    keys = {}
    for line in text.split("}")[0].splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            keys[k.strip()] = v.strip().rstrip(";")
    return keys


def smv_pixels(path):
    """The SMV image read directly (fabio has no reader for TYPE=long_integer, noisify -bits 32)."""
    h = smv_header(path)
    dtype = {"unsigned_short": "<u2", "long_integer": "<u4"}[h["TYPE"]]
    w, n = int(h["SIZE1"]), int(h["SIZE2"])
    with open(path, "rb") as f:
        f.seek(int(h["HEADER_BYTES"]))
        return numpy.frombuffer(f.read(), dtype=dtype, count=w * n).reshape(n, w)


def dxtbx_style_header(path):
    """The '# key value' dictionary as dxtbx's FormatCBFMini._start builds it."""
    with open(path, "rb") as f:
        head = f.read(65536)
    head = head[: head.find(b"--CIF-BINARY-FORMAT-SECTION--")].decode("ascii", "ignore")
    d = {}
    for record in head.split("\n"):
        if record[:1] != "#":
            continue
        if len(record[1:].split()) <= 2 and record.count(":") == 2:
            d["timestamp"] = record[1:].strip()
            continue
        tokens = record.replace("=", "").replace(":", "").split()
        d[tokens[1]] = " ".join(tokens[2:])
    return head, d


def compare(cbf_path, smv_path):
    cbf = fabio.open(cbf_path).data.astype(numpy.int64)
    smv = smv_pixels(smv_path).astype(numpy.int64)
    name = os.path.basename(cbf_path)
    if cbf.shape != smv.shape:
        return [f"{name}: shape {cbf.shape} but the SMV image is {smv.shape}"]
    gaps = cbf == -1
    diff = (cbf != smv) & ~gaps
    errors = []
    if diff.any():
        s, f = numpy.argwhere(diff)[0]
        errors.append(
            f"{name}: {int(diff.sum())} pixels differ from the SMV image, first at fast {f} slow {s}: "
            f"CBF {cbf[s, f]}, SMV {smv[s, f]}"
        )
    with open(cbf_path, "rb") as f:
        raw = f.read()
    start = raw.find(b"\x0c\x1a\x04\xd5") + 4
    mime = raw[:start].decode("ascii", "replace")
    size = int(mime.split("X-Binary-Size:")[1].split()[0])
    md5 = mime.split("Content-MD5:")[1].split()[0]
    if base64.b64encode(hashlib.md5(raw[start:start + size]).digest()).decode() != md5:
        errors.append(f"{name}: Content-MD5 does not match the binary data")
    head, d = dxtbx_style_header(cbf_path)
    h = smv_header(smv_path)
    for key in ["Pixel_size", "Detector_distance", "Beam_xy", "Wavelength", "Count_cutoff",
                "Exposure_period", "Start_angle", "Angle_increment", "timestamp"]:
        if key not in d:
            errors.append(f"{name}: header has no {key}")
    if "Pixel_size" in d:
        px = float(d["Pixel_size"].replace("m", "").replace("x", "").split()[0]) * 1000.0
        if abs(px - float(h["PIXEL_SIZE"])) > 1e-9:
            errors.append(f"{name}: Pixel_size {px} mm, SMV PIXEL_SIZE {h['PIXEL_SIZE']}")
    if "Wavelength" in d and abs(float(d["Wavelength"].split()[0]) - float(h["WAVELENGTH"])) > 1e-6:
        errors.append(f"{name}: Wavelength {d['Wavelength']}, SMV {h['WAVELENGTH']}")
    if "Silicon" in d:
        float(d["Silicon"].split()[2])  # dxtbx reads the thickness from the third word
    convention = "PILATUS" if '"PILATUS_1.2"' in head else "GENERIC_MINI"
    print(
        f"{name}: {cbf.shape[1]}x{cbf.shape[0]} pixels identical to {os.path.basename(smv_path)}"
        f" ({int(gaps.sum())} gap pixels -1), {convention} header, fabio {fabio.version}"
        if not errors else f"{name}: FAILED"
    )
    return errors


def run(bindir):
    bindir = os.path.abspath(bindir)
    nb = os.path.join(bindir, "nanobragg")
    nz = os.path.join(bindir, "noisify")
    pairs = []
    with tempfile.TemporaryDirectory() as tmp:
        def sh(*words):
            r = subprocess.run(list(words), cwd=tmp, capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"check_cbf.py: {' '.join(words)} failed:\n{r.stderr}")
        base = ["-cell", "70", "80", "90", "90", "90", "90", "-default_F", "100", "-N", "5",
                "-misset", "10", "20", "30", "-lambda", "1", "-nopgm", "-seed", "1"]
        sh(nb, *base, "-distance", "100", "-detpixels", "128", "-floatfile", "a.bin",
           "-intfile", "a.img", "-noisefile", "a_noise.img", "-cbffile", "a.cbf")
        pairs.append(("a.cbf", "a.img"))
        sh(nb, *base, "-detector", "pilatus6m", "-distance", "300", "-oversample", "1",
           "-roi", "0", "600", "0", "500",
           "-floatfile", "p.bin", "-intfile", "p.img", "-nonoise", "-cbffile", "p.cbf")
        pairs.append(("p.cbf", "p.img"))
        sh(nz, "-floatfile", "a.bin", "-detpixels", "128", "-seed", "3", "-bits", "32",
           "-readout_noise", "2", "-intfile", "n_int.img", "-noisefile", "n.img",
           "-nopgm", "-cbffile", "n.cbf")
        pairs.append(("n.cbf", "n.img"))
        errors = []
        for c, s in pairs:
            errors += compare(os.path.join(tmp, c), os.path.join(tmp, s))
    return errors


def main(argv):
    if len(argv) == 2 and argv[0] == "--run":
        errors = run(argv[1])
    elif argv and len(argv) % 2 == 0 and not argv[0].startswith("-"):
        errors = []
        for i in range(0, len(argv), 2):
            errors += compare(argv[i], argv[i + 1])
    else:
        sys.exit(__doc__)
    for e in errors:
        print("ERROR:", e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
