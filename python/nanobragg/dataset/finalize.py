"""Finalize (check the manifest, write the master file) and verify (checksums, re-renders)."""

from __future__ import annotations

import hashlib
import os
from typing import Any, Dict, List, Optional

import numpy as np

from .params import Renderer, image_index, image_params, label_columns
from .shards import DatasetError, manifest_entries, shard_name, spec_digest, write_atomic
from .spec import Spec

__all__ = ["check_manifest", "finalize", "verify", "read_image"]


def check_manifest(spec: Spec, checksums: bool = True) -> List[Dict[str, Any]]:
    """Every shard has an entry for this description, its file exists with the entry's size
    (and sha256, when ``checksums``); returns the entries in order. Raises DatasetError
    listing what is missing or wrong."""
    entries = manifest_entries(spec)
    missing = [s for s in range(spec.n_shards) if s not in entries]
    if missing:
        show = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        raise DatasetError(f"{len(missing)} of {spec.n_shards} shards are not complete (shards {show}): run the dataset again to render them", file=os.path.join(spec.output, "manifest"))
    digest = spec_digest(spec)
    out = []
    for s in range(spec.n_shards):
        e = entries[s]
        path = os.path.join(spec.output, e["file"])
        idx = spec.shard_range(s)
        if e.get("spec_sha256") != digest or e["file"] != shard_name(spec, s) or e["first_image"] != idx.start or e["n_images"] != len(idx):
            raise DatasetError(f"manifest entry of shard {s} belongs to another description", file=path)
        try:
            size = os.path.getsize(path)
        except OSError as x:
            raise DatasetError(f"{path}: {x.strerror}", file=path) from None
        if size != e["bytes"]:
            raise DatasetError(f"{path} has {size} bytes, its manifest entry {e['bytes']}", file=path)
        if checksums:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            if h.hexdigest() != e["sha256"]:
                raise DatasetError(f"{path}: sha256 differs from its manifest entry (the file changed or is damaged)", file=path)
        out.append(e)
    return out


def finalize(spec: Spec, checksums: bool = True) -> str:
    """Checks the manifest and writes ``master.h5`` (nxmx) or ``index.json`` (npz); returns its path."""
    entries = check_manifest(spec, checksums)
    if spec.format == "npz":
        import json

        p = os.path.join(spec.output, "index.json")
        write_atomic(p, (json.dumps({"n_images": spec.n_images, "shards": entries}, indent=1, sort_keys=True) + "\n").encode())
        return p
    import h5py

    from .nexus import master_bytes

    with h5py.File(os.path.join(spec.output, entries[0]["file"]), "r") as f:
        shape = f["/entry/data/data"].shape[1:]
    labels = label_columns(spec, [image_params(spec, i) for i in range(spec.n_images)])
    shards = [{"file": e["file"], "start": e["first_image"], "stop": e["first_image"] + e["n_images"]} for e in entries]
    meta = {"spec": spec.text, "n_images": spec.n_images, "n_shards": spec.n_shards, "master_seed": spec.seed}
    r = Renderer(spec)
    model = int(labels["model"][0]) if "model" in labels else None
    data = master_bytes(r.simulator(model), shards, shape, labels, meta, still=spec.still)
    p = os.path.join(spec.output, "master.h5")
    write_atomic(p, data)
    return p


def read_image(spec: Spec, i: int) -> np.ndarray:
    """Image ``i`` as stored in its shard (``i`` in ``0 .. n_images - 1``, as
    :func:`render_image` takes it: a negative index is an IndexError, not one from the end)."""
    i = image_index(spec, i)
    s = i // spec.shard_size
    path = os.path.join(spec.output, shard_name(spec, s))
    k = i - s * spec.shard_size
    if spec.format == "npz":
        with np.load(path) as z:
            out: np.ndarray = z["images"][k]
            return out
    import h5py

    if spec.compression == "bslz4":
        try:
            import hdf5plugin  # noqa: F401  (registers the bitshuffle filter with h5py)
        except ImportError:
            raise DatasetError("the frames are bitshuffle + LZ4 (dataset.compression = \"bslz4\", the default with "
                               "chain.noise): reading them needs hdf5plugin "
                               "(pip install 'nanobragg[hdf5]' or hdf5plugin)", file=path) from None
    with h5py.File(path, "r") as f:
        frame: np.ndarray = f["/entry/data/data"][k]
        return frame


def verify(spec: Spec, rerender: int = 0, seed: Optional[int] = None) -> Dict[str, Any]:
    """Checks every shard against the manifest (sha256) and re-renders ``rerender`` images
    chosen at random (alone, from their index) against the stored ones."""
    entries = check_manifest(spec, checksums=True)
    picked = []
    if rerender:
        rng = np.random.default_rng(seed)
        picked = sorted(rng.choice(spec.n_images, size=min(rerender, spec.n_images), replace=False).tolist())
        r = Renderer(spec)
        for i in picked:
            if not np.array_equal(r.image(i), read_image(spec, i)):
                raise DatasetError(f"image {i}: re-rendered alone it differs from the one stored in {shard_name(spec, i // spec.shard_size)}",
                                   file=os.path.join(spec.output, shard_name(spec, i // spec.shard_size)))
    return {"shards": len(entries), "bytes": sum(e["bytes"] for e in entries), "rerendered": picked}
