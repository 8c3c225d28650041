"""``python -m nanobragg.dataset`` / ``nanobragg-dataset``: run, slurm, finalize, verify."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from typing import Callable, List, Optional, Tuple

from ..errors import Error
from .shards import DatasetError
from .spec import SpecError, load_spec

__all__ = ["main"]


def _int_at_least(low: int, high: Optional[int] = None) -> Callable[[str], int]:
    """An argparse ``type=``: a whole number >= ``low`` (and <= ``high``)."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if n < low:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {low}, got {n}")
        if high is not None and n > high:
            raise argparse.ArgumentTypeError(f"expected a whole number <= {high}, got {n}")
        return n

    return parse


def _shard_list(text: str) -> List[Tuple[int, int]]:
    """An argparse ``type=``: "3", "0-9", "1,4,7-8" -> (first, last) ranges (checked against
    the dataset's shards once it is read: :func:`_shards`)."""
    out = []
    for part in text.split(","):
        a, dash, b = part.partition("-")
        try:
            lo, hi = int(a), int(b) if dash else int(a)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected N, N-M or a comma list of them, got {text!r}") from None
        if hi < lo:
            raise argparse.ArgumentTypeError(f"{part} is a reversed range: say {hi}-{lo}")
        out.append((lo, hi))
    return out


def _shards(ranges: Optional[List[Tuple[int, int]]], n: int, p: argparse.ArgumentParser) -> Optional[List[int]]:
    """The shard indices of ``--shards`` ranges, each within 0..n-1 (else a usage error)."""
    if ranges is None:
        return None
    out: List[int] = []
    for lo, hi in ranges:
        if hi >= n:
            part = f"{lo}-{hi}" if hi != lo else str(lo)
            p.error(f"argument --shards: {part} is not within the dataset's shards 0-{n - 1}")
        out += range(lo, hi + 1)
    return sorted(set(out))


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="nanobragg-dataset", description="Render a dataset described by a TOML file as independent shards (docs/datasets.md).")
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("spec", help="the dataset description (TOML)")
        sp.add_argument("--output", help="the dataset folder (default: dataset.output of the description)")

    r = sub.add_parser("run", help="render the shards not yet complete (resume), then finalize")
    common(r)
    r.add_argument("--engine", choices=("local", "ray"), default="local")
    r.add_argument("--workers", type=_int_at_least(1), help="local: worker processes (default: the cores)")
    r.add_argument("--threads", type=_int_at_least(1, 4096), help="CPU threads per worker (default: cores / workers)")
    r.add_argument("--address", help="ray: cluster address (default: start Ray on this machine)")
    r.add_argument("--retries", type=_int_at_least(0), default=3, help="ray: retries of a failed task (default 3)")
    r.add_argument("--shards", type=_shard_list, help="only these shards (N, N-M, comma list); no finalize")
    r.add_argument("--no-progress", action="store_true")
    r.add_argument("--no-finalize", action="store_true")
    r.add_argument("--restart", action="store_true", help="start the output folder over when it holds no finished shard "
                   "(a run of another description or version stopped before finishing one): removes its spec.toml, "
                   "noise.json and unfinished files; refused if a shard is finished or a file is being written")

    s = sub.add_parser("slurm", help="write a Slurm job-array batch script (one array task per shard group)")
    common(s)
    s.add_argument("--script", help="where to write it (default: OUTPUT/slurm/job.sh)")
    s.add_argument("--shards-per-task", type=_int_at_least(1), default=1)
    s.add_argument("--partition")
    s.add_argument("--time", default="04:00:00")
    s.add_argument("--cpus-per-task", type=_int_at_least(1), default=1)
    s.add_argument("--gpus-per-task", type=_int_at_least(0), default=0)
    s.add_argument("--mem", type=_int_at_least(1), metavar="MiB", help="memory per array task (default: sized from the shard, "
                   "which a worker holds whole)")
    s.add_argument("--max-running", type=_int_at_least(1))
    s.add_argument("--sbatch", action="append", default=[], help="another #SBATCH line (repeatable)")
    s.add_argument("--restart", action="store_true", help="as run --restart, before the script is written")

    f = sub.add_parser("finalize", help="check the manifest and write master.h5 (index.json for npz)")
    common(f)
    f.add_argument("--no-checksums", action="store_true", help="check sizes only")

    v = sub.add_parser("verify", help="check every shard's checksum; re-render images alone and compare")
    common(v)
    v.add_argument("--rerender", type=_int_at_least(0), default=0, metavar="K", help="re-render K random images")
    v.add_argument("--seed", type=_int_at_least(0))

    a = p.parse_args(argv)
    try:
        spec = load_spec(a.spec, output=a.output)
        if a.cmd == "run":
            if a.threads is not None and spec.threads is None:
                import dataclasses

                spec = dataclasses.replace(spec, threads=a.threads)
            shards = _shards(a.shards, spec.n_shards, r)
            from .params import base_facts, oversample_notice

            if a.restart:
                from .shards import prepare_output

                prepare_output(spec, restart=True)
            facts = base_facts(spec)
            notice = oversample_notice(spec, facts)
            if notice:
                print(f"nanobragg-dataset: {notice}", file=sys.stderr, flush=True)
            if spec.format == "nxmx" and not spec.compression_given and spec.compression == "bslz4":
                print("nanobragg-dataset: frames as bslz4 (bitshuffle + LZ4), the default with chain.noise: 6-13x less CPU "
                      "to write than deflate, files about as small; readers need the bitshuffle plugin (h5py: hdf5plugin, "
                      f"DIALS: its HDF5 plugin). dataset.compression = \"deflate\" in {spec.path} to choose",
                      file=sys.stderr, flush=True)
            if a.engine == "ray":
                from .engines import run_ray

                res = run_ray(spec, address=a.address, shards=shards, progress=not a.no_progress, retries=a.retries)
            else:
                from .engines import run_local

                res = run_local(spec, workers=a.workers, shards=shards, progress=not a.no_progress)
            res["images_per_s"] = round(res["images"] / res["seconds"], 3) if res["seconds"] > 0 and res["images"] else None
            res["oversample"] = facts["oversample"]
            if spec.format == "nxmx":
                res["compression"] = spec.compression
            if shards is None and not a.no_finalize:
                from .finalize import finalize

                res["master"] = finalize(spec)
            print(json.dumps(res))
        elif a.cmd == "slurm":
            from .engines import slurm_script
            from .shards import prepare_output, write_atomic

            prepare_output(spec, restart=a.restart, command="slurm")
            os.makedirs(os.path.join(spec.output, "slurm"), exist_ok=True)
            path = a.script or os.path.join(spec.output, "slurm", "job.sh")
            text = slurm_script(spec, shards_per_task=a.shards_per_task, partition=a.partition, time_limit=a.time,
                                cpus_per_task=a.cpus_per_task, gpus_per_task=a.gpus_per_task, max_running=a.max_running, extra=a.sbatch,
                                mem_mb=a.mem)
            write_atomic(path, text.encode())
            os.chmod(path, 0o755)
            from .engines import finalize_command

            print(f"wrote {path}: sbatch {shlex.quote(os.path.abspath(path))}, then {finalize_command(spec)}")
        elif a.cmd == "finalize":
            from .finalize import finalize

            print(finalize(spec, checksums=not a.no_checksums))
        else:
            from .finalize import verify

            print(json.dumps(verify(spec, rerender=a.rerender, seed=a.seed)))
    except (SpecError, DatasetError, Error) as e:
        print(f"nanobragg-dataset: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nanobragg-dataset: interrupted (complete shards are kept; run again to resume)", file=sys.stderr)
        return 130
    return 0
