"""Shards: a pure function of (description, shard index), written atomically, with a manifest.

The dataset folder holds::

    spec.toml                    the description (a re-run with another description is refused)
    shard-00000.h5 (or .npz)     one file per shard
    manifest/shard-00000.json    one entry per complete shard: file, images, bytes, sha256
    master.h5                    (nxmx, after finalize) virtual datasets over the shards

A shard's file is written to ``.shard-00000.h5.tmp-<pid>``, flushed to disk and renamed into
place; only then is its manifest entry written (the same way). A shard whose entry exists, is
this description's (its spec_sha256) and whose file has the entry's size is complete and
skipped; anything else is rendered again, so
a killed worker loses at most the shard it was writing. I/O errors (disk full, permission)
raise :class:`DatasetError` naming the file, and leave neither a partial file nor an entry.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from .params import Renderer, image_params, label_columns
from .spec import Spec

__all__ = ["DatasetError", "shard_name", "render_shard", "write_shard", "is_complete", "manifest_entries",
           "prepare_output", "restart_output", "finished_shards", "write_atomic", "npz_bytes"]

FORMAT_VERSION = 1


class DatasetError(RuntimeError):
    """A dataset that cannot be written or checked; ``file`` names the file concerned."""

    def __init__(self, message: str, file: Optional[str] = None):
        super().__init__(message)
        self.file = file


def shard_name(spec: Spec, shard: int) -> str:
    return f"shard-{shard:05d}." + ("h5" if spec.format == "nxmx" else "npz")


def _entry_path(spec: Spec, shard: int) -> str:
    return os.path.join(spec.output, "manifest", f"shard-{shard:05d}.json")


def spec_digest(spec: Spec) -> str:
    return hashlib.sha256(spec.text.encode()).hexdigest()


def write_atomic(path: str, data: bytes) -> None:
    """Writes ``data`` to a temporary name beside ``path``, syncs and renames; on an OSError the
    temporary file is removed and a DatasetError names ``path``."""
    d, base = os.path.split(path)
    tmp = os.path.join(d, f".{base}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise DatasetError(f"cannot write {path}: {e.strerror or e}", file=path) from None
    except BaseException:  # Ctrl-C while writing: no temporary file left behind
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _noise_record(spec: Spec) -> bytes:
    from .. import __version__
    from .._nanobragg import COUNTER_SEQUENCE

    rec: Dict[str, Any] = {"counter_sequence": COUNTER_SEQUENCE, "nanobragg_version": __version__}
    if spec.format == "nxmx":
        rec["compression"] = spec.compression
    return json.dumps(rec, sort_keys=True).encode()


def _check_noise_record(spec: Spec, command: str = "run") -> None:
    """A dataset with noise is resumed only by a nanobragg whose counter generator draws the
    same counts (`noise.json` records its sequence): mixed sequences would make a dataset that
    no single version re-renders. Its NXmx frames' compression is recorded too (the default
    with noise became bslz4 after the record began): a dataset is not continued with frames of
    another compression."""
    from .._nanobragg import COUNTER_SEQUENCE

    p = os.path.join(spec.output, "noise.json")
    try:
        with open(p, encoding="utf-8") as f:
            rec = json.load(f)
        begun = rec.get("counter_sequence")
        by = f"nanobragg {rec.get('nanobragg_version', '?')}, noise sequence {begun}"
        # no record of it: begun by a version that wrote what the description said, or
        # deflate when it said nothing (its only default)
        comp = rec.get("compression") or (spec.compression if spec.compression_given else "deflate")
    except FileNotFoundError:
        if not manifest_entries(spec):
            write_atomic(p, _noise_record(spec))  # nothing rendered yet: this version begins it
            return
        begun, by, comp = None, "an earlier nanobragg (no noise.json)", spec.compression
    except (OSError, ValueError, AttributeError) as e:
        raise DatasetError(f"cannot read {p}: {e}", file=p) from None
    # nothing finished (a run of that version stopped before its first shard): start over
    fresh = f"; it holds no finished shard: {_start_over_hint(spec, command)}" if not finished_shards(spec.output) else ""
    if begun != COUNTER_SEQUENCE:
        raise DatasetError(
            f"{spec.output} was begun by {by}; this nanobragg draws noise sequence {COUNTER_SEQUENCE} "
            "(other counts for the same seeds)"
            + (fresh or ": finish the dataset with the version that began it, or render it again into another output folder"), file=p)
    if spec.format == "nxmx" and comp != spec.compression:
        raise DatasetError(
            f"{spec.output} was begun by nanobragg {rec.get('nanobragg_version', '?')} with {comp} frames; this nanobragg "
            f"writes {spec.compression} frames for its description (dataset.compression unsaid: {spec.compression} "
            "with chain.noise)"
            + (fresh or ": finish the dataset with the version that began it, or render it again into another output folder"), file=p)


def finished_shards(output: str) -> List[str]:
    """The manifest entries in the folder ``output`` (``manifest/shard-NNNNN.json``), of whatever
    description began it: the shards it finished."""
    try:
        names = os.listdir(os.path.join(output, "manifest"))
    except OSError:
        return []
    return sorted(n for n in names if n.startswith("shard-") and n.endswith(".json"))


#: The path of a description given as text (:func:`parse_spec`'s default): no file to name.
_NO_FILE = "<spec>"


def _command(spec: Spec, command: str, restart: bool) -> str:
    """The dataset CLI's sub-command ``command`` (``run`` or ``slurm``, the one used) on this
    description and folder, with or without ``--restart``."""
    import shlex

    return (f"nanobragg-dataset {command} {shlex.quote(spec.path)} --output {shlex.quote(spec.output)}"
            + (" --restart" if restart else ""))


def _start_over_hint(spec: Spec, command: str = "run") -> str:
    """What to run to start the folder over with this description: the dataset CLI's
    sub-command that was used (``run`` or ``slurm``) with ``--restart``, or, for a description
    with no file (:func:`parse_spec`), :func:`restart_output`."""
    if spec.path == _NO_FILE:
        return (f"to start over with this description, call nanobragg.dataset.shards.restart_output(spec) and run it "
                f"again (it removes what the other run left in {spec.output}: no shard is lost), or choose another output folder")
    return (f"to start over with {spec.path}, run `{_command(spec, command, True)}` "
            f"(it removes what the other run left in {spec.output}: no shard is lost), or choose another output folder")


def _temporary_files(output: str) -> List[str]:
    """The temporary files of writes in progress (or of a killed writer) in ``output``."""
    out = []
    for d in (output, os.path.join(output, "manifest")):
        try:
            out += [os.path.join(d, n) for n in os.listdir(d) if ".tmp-" in n]
        except OSError:
            pass
    return sorted(out)


def restart_output(spec: Spec, command: str = "run") -> List[str]:
    """Removes what a run left in ``spec.output`` that holds no finished shard (its spec.toml,
    noise.json, shard files without an entry, master.h5/index.json, slurm/job.sh), so that this
    description starts it over; returns the paths removed. Refused (DatasetError, nothing
    removed) when the folder holds a finished shard (a manifest entry) or a temporary file of a
    write (a run that may be writing into it); when the finished shards are this description's,
    the error says to resume it (``command``: the dataset CLI's sub-command used, ``run`` or
    ``slurm``). Other files are left as they are."""
    if not os.path.isdir(spec.output):
        return []
    done = finished_shards(spec.output)
    if done and _holds_this_description(spec):
        resume = ("run it again without restart_output: the finished shards are skipped" if spec.path == _NO_FILE
                  else f"run `{_command(spec, command, False)}` without --restart to resume it")
        raise DatasetError(
            f"--restart: {spec.output} holds {len(done)} finished shard{'s' if len(done) > 1 else ''} of this description "
            f"(its spec.toml is {spec.path}'s): nothing removed; {resume}", file=os.path.join(spec.output, "spec.toml"))
    if done:
        raise DatasetError(
            f"--restart: {spec.output} holds {len(done)} finished shard{'s' if len(done) > 1 else ''} "
            f"({os.path.join(spec.output, 'manifest', done[0])}{', ...' if len(done) > 1 else ''}): nothing removed; "
            "choose another output folder (or remove that one yourself)", file=os.path.join(spec.output, "manifest"))
    tmp = _temporary_files(spec.output)
    if tmp:
        raise DatasetError(
            f"--restart: {spec.output} holds a file being written ({tmp[0]}): a run may be writing into it; nothing removed. "
            "Wait for it to end; if no run is writing into the folder (on any machine), remove the .tmp- files and run again",
            file=tmp[0])
    names = ["spec.toml", "noise.json", "master.h5", "index.json", os.path.join("slurm", "job.sh")]
    names += [n for n in os.listdir(spec.output) if n.startswith("shard-") and n.endswith((".h5", ".npz"))]
    removed = []
    for n in names:
        path = os.path.join(spec.output, n)
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError as e:
            raise DatasetError(f"--restart: cannot remove {path}: {e.strerror or e}", file=path) from None
        removed.append(path)
    return removed


def _holds_this_description(spec: Spec) -> bool:
    """The folder's spec.toml is this description."""
    try:
        with open(os.path.join(spec.output, "spec.toml"), encoding="utf-8") as f:
            return f.read() == spec.text
    except (OSError, ValueError):
        return False


def prepare_output(spec: Spec, restart: bool = False, command: str = "run") -> None:
    """Creates the dataset folder and its spec.toml, or checks that it holds this description;
    with noise, records the counter generator's sequence (`noise.json`) or checks it.
    ``restart``: first remove what a run of another description (or version) left in a folder
    that holds no finished shard (:func:`restart_output`). ``command``: the dataset CLI's
    sub-command used (``run`` or ``slurm``), which the errors' hints name."""
    if restart:
        restart_output(spec, command)
    p = os.path.join(spec.output, "spec.toml")
    try:
        os.makedirs(os.path.join(spec.output, "manifest"), exist_ok=True)
    except OSError as e:
        raise DatasetError(f"cannot create {spec.output}: {e.strerror or e}", file=spec.output) from None
    if os.path.exists(p):
        with open(p, encoding="utf-8") as f:
            if f.read() != spec.text:
                done = finished_shards(spec.output)
                if not done:
                    raise DatasetError(f"{spec.output} holds no finished shard, and its spec.toml is another description's "
                                       f"(left by a run that stopped before finishing a shard, e.g. one refused): "
                                       + _start_over_hint(spec, command), file=p)
                raise DatasetError(f"{spec.output} holds another dataset (its spec.toml differs from {spec.path}; "
                                   f"{len(done)} finished shard{'s' if len(done) > 1 else ''}); choose another output folder", file=p)
    else:
        write_atomic(p, spec.text.encode())
    if spec.noise is not None:
        _check_noise_record(spec, command)


def is_complete(spec: Spec, shard: int, digest: Optional[str] = None) -> bool:
    """A manifest entry of this description exists (its ``spec_sha256`` is the spec's: an entry
    another description's run wrote into the folder is rendered again) and the shard's file has
    its size. ``digest``: :func:`spec_digest` of the spec, if the caller has it."""
    try:
        with open(_entry_path(spec, shard), encoding="utf-8") as f:
            e = json.load(f)
        if e.get("spec_sha256") != (digest or spec_digest(spec)):
            return False
        return bool(os.path.getsize(os.path.join(spec.output, e["file"])) == e["bytes"])
    except (OSError, ValueError, KeyError):
        return False


def manifest_entries(spec: Spec) -> Dict[int, Dict[str, Any]]:
    out = {}
    for s in range(spec.n_shards):
        try:
            with open(_entry_path(spec, s), encoding="utf-8") as f:
                out[s] = json.load(f)
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as e:
            raise DatasetError(f"manifest entry {_entry_path(spec, s)} is unreadable: {e}", file=_entry_path(spec, s)) from None
    return out


def render_shard(spec: Spec, shard: int, renderer: Optional[Renderer] = None,
                 progress: Optional[Callable[[int], None]] = None,
                 reuse: bool = False) -> Tuple[np.ndarray, Dict[str, np.ndarray]]:
    """The images (n, slow, fast) and labels of shard ``shard``. ``reuse``: the int32 images
    in the renderer's shard array (:meth:`Renderer.shard_array`), which its next shard
    overwrites: for a caller done with them before then (:func:`shard_file_bytes`)."""
    r = renderer or Renderer(spec)
    idx = spec.shard_range(shard)
    params = [image_params(spec, i) for i in idx]
    if spec.format == "npz" and spec.noise is None:
        first = r.image(idx[0], params[0])
        images = np.empty((len(idx),) + first.shape, first.dtype)
        images[0] = first
        if progress:
            progress(1)
        start = 1
    else:
        # int32 counts, each written by the crate into its place in the shard's array
        shape = (len(idx),) + r.shape(params[0].get("model"))
        images = r.shard_array(shape) if reuse else np.empty(shape, np.int32)
        start = 0
    for k in range(start, len(idx)):
        if start:
            images[k] = r.image(idx[k], params[k])
        else:
            r.image(idx[k], params[k], out=images[k])
        if progress:
            progress(1)
    return images, label_columns(spec, params)


def shard_reflections(spec: Spec, shard: int, renderer: Optional[Renderer] = None) -> Dict[str, np.ndarray]:
    """The predicted reflections of a shard's images as columns, ``image`` the image index."""
    r = renderer or Renderer(spec)
    parts = []
    for i in spec.shard_range(shard):
        t = r.reflections(i, image_params(spec, i))
        parts.append((i, t))
    cols: Dict[str, np.ndarray] = {"image": np.concatenate([np.full(len(t), i, np.int64) for i, t in parts])}
    for name in parts[0][1].dtype.names or ():
        cols[name] = np.concatenate([t[name] for _, t in parts])
    return cols


def _meta(spec: Spec, shard: int) -> Dict[str, Any]:
    idx = spec.shard_range(shard)
    from .. import __version__

    return {"format_version": FORMAT_VERSION, "nanobragg_version": __version__, "spec": spec.text,
            "shard": shard, "first_image": idx.start, "n_images": len(idx), "master_seed": spec.seed}


def npz_bytes(images: np.ndarray, labels: Dict[str, np.ndarray], meta: Dict[str, Any], reflections: Optional[Dict[str, np.ndarray]] = None) -> bytes:
    """An npz (zip of .npy: ``images`` and ``labels/<column>``, ``meta`` as JSON) with fixed
    timestamps, so the same inputs give the same bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=4) as z:
        def put(name: str, arr: np.ndarray) -> None:
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            b = io.BytesIO()
            np.lib.format.write_array(b, np.ascontiguousarray(arr), allow_pickle=False)
            z.writestr(info, b.getvalue(), compresslevel=4)

        put("images", images)
        for k, v in labels.items():
            put(f"labels.{k}", v)
        for k, v in (reflections or {}).items():
            put(f"reflections.{k}", v)
        put("meta", np.frombuffer(json.dumps(meta, sort_keys=True).encode(), np.uint8))
    return buf.getvalue()


def shard_file_bytes(spec: Spec, shard: int, renderer: Optional[Renderer] = None,
                     progress: Optional[Callable[[int], None]] = None) -> bytes:
    """The bytes of shard ``shard``'s file (a pure function of the description and the index)."""
    r = renderer or Renderer(spec)
    # the images are in the file's bytes before the next shard: the renderer's array serves
    images, labels = render_shard(spec, shard, r, progress, reuse=True)
    refl = shard_reflections(spec, shard, r) if spec.predict else None
    meta = _meta(spec, shard)
    if spec.format == "npz":
        return npz_bytes(images, labels, meta, refl)
    from .nexus import shard_bytes

    return shard_bytes(r.simulator(None if "model" not in labels else int(labels["model"][0])), images, labels, meta, refl,
                       still=spec.still, compression=spec.compression)


def write_shard(spec: Spec, shard: int, renderer: Optional[Renderer] = None, progress: Optional[Callable[[int], None]] = None,
                force: bool = False) -> Optional[Dict[str, Any]]:
    """Renders and writes shard ``shard`` and its manifest entry; returns the entry, or None when
    the shard was already complete (and not ``force``)."""
    if not force and is_complete(spec, shard):
        return None
    data = shard_file_bytes(spec, shard, renderer, progress)
    name = shard_name(spec, shard)
    path = os.path.join(spec.output, name)
    write_atomic(path, data)
    idx = spec.shard_range(shard)
    entry = {"shard": shard, "file": name, "first_image": idx.start, "n_images": len(idx), "bytes": len(data),
             "sha256": hashlib.sha256(data).hexdigest(), "spec_sha256": spec_digest(spec)}
    write_atomic(_entry_path(spec, shard), (json.dumps(entry, sort_keys=True, indent=1) + "\n").encode())
    return entry


def pending(spec: Spec, shards: Optional[List[int]] = None) -> List[int]:
    digest = spec_digest(spec)
    return [s for s in (shards if shards is not None else range(spec.n_shards)) if not is_complete(spec, s, digest)]
