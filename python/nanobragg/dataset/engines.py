"""Engines that run a dataset's shards: a local process pool, Ray tasks, Slurm job arrays.

Every engine runs the same unit of work, :func:`run_shard` (one shard: render, write
atomically, manifest entry), so a dataset is the same bytes whichever engine, worker count or
order made it. Shards already complete are skipped (resume).
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from typing import Any, Callable, Dict, List, Optional, TextIO, Tuple

from .params import Renderer
from .shards import is_complete, pending, prepare_output, write_shard
from .spec import Spec, load_spec, parse_spec

__all__ = ["run_shard", "run_local", "run_ray", "slurm_script", "slurm_memory_mb", "finalize_command", "Progress"]


def _worker_threads(spec: Spec, workers: int) -> Optional[int]:
    if spec.threads is not None or spec.backend == "gpu":
        return spec.threads
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def _fault(shard: int, progress: Optional[Callable[[int], None]]) -> Optional[Callable[[int], None]]:
    """Fault injection for the reliability tests: NANOBRAGG_DATASET_KILL="SHARD:IMAGES:MARKER"
    makes the process rendering SHARD SIGKILL itself after IMAGES of its images, once (the
    MARKER file records that it happened)."""
    spec = os.environ.get("NANOBRAGG_DATASET_KILL")
    if not spec:
        return progress
    s, k, marker = spec.split(":", 2)
    if int(s) != shard or os.path.exists(marker):
        return progress
    count = [0]

    def hook(n: int) -> None:
        if progress:
            progress(n)
        count[0] += n
        if count[0] >= int(k):
            open(marker, "w").close()
            import signal

            os.kill(os.getpid(), signal.SIGKILL)

    return hook


#: The renderer of the last shard this process rendered, with its description: the next shard
#: of the same dataset reuses its simulators and background (nonBragg's, seconds on a large
#: detector) instead of preparing them again for every shard.
_last: Optional[Tuple[Spec, Renderer]] = None


def _renderer(spec: Spec) -> Renderer:
    global _last
    if _last is None or _last[0] != spec:
        _last = (spec, Renderer(spec))
    return _last[1]


def run_shard(spec_path: str, output: Optional[str], shard: int, threads: Optional[int] = None,
              progress: Optional[Callable[[int], None]] = None, text: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """One shard, in this process (what every engine's worker and the Slurm array task call).
    The description is read from ``spec_path``, or when ``text`` is given, is that text
    (``spec_path`` then only names it, as :func:`.spec.parse_spec`'s ``path``: a description
    made with ``parse_spec`` has no file to read). Consecutive shards of one dataset in a
    process share one :class:`Renderer`."""
    progress = _fault(shard, progress)
    spec = load_spec(spec_path, output=output) if text is None else parse_spec(text, path=spec_path, output=output)
    if threads is not None and spec.threads is None:
        import dataclasses

        spec = dataclasses.replace(spec, threads=threads)
    if is_complete(spec, shard):
        return None
    return write_shard(spec, shard, _renderer(spec), progress=progress)


class Progress:
    """A one-line progress bar on stderr: images done, images/s, ETA."""

    def __init__(self, total: int, done: int = 0, stream: Optional[TextIO] = None, enabled: bool = True) -> None:
        self.total, self.done, self.start_done = total, done, done
        self.t0 = time.monotonic()
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self._last = 0.0
        self._open = False  # a line is written and not yet ended

    def add(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.2 or self.done >= self.total):
            self._last = now
            self.stream.write("\r" + self.line())
            self.stream.flush()
            self._open = True

    def rate(self) -> float:
        dt = time.monotonic() - self.t0
        return (self.done - self.start_done) / dt if dt > 0 else 0.0

    def line(self) -> str:
        r = self.rate()
        left = self.total - self.done
        eta = f"{int(left / r // 60)}:{int(left / r % 60):02d}" if r > 0 else "?"
        w = 30
        fill = int(w * self.done / max(1, self.total))
        return f"[{'#' * fill}{'.' * (w - fill)}] {self.done}/{self.total} images  {r:.2f} images/s  ETA {eta}"

    def close(self) -> None:
        """Ends the line (once; nothing when none was written), so that what follows (the
        summary, an error, "interrupted") starts a line of its own."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False


_queue = None

#: What a pool's worker imports before its first shard: preloaded once by the forkserver
#: (:func:`_pool_context`), so each worker starts as a fork of an interpreter that has them.
_PRELOAD = ["nanobragg.dataset.engines", "nanobragg.dataset.nexus", "nanobragg.dataset.finalize", "h5py"]


def _pool_context() -> Any:
    """The local pool's processes: forked by a forkserver that has imported the renderer,
    NumPy and h5py once (about 0.4 s of CPU a worker with "spawn", each importing them again:
    a large share of a small dataset on a few cores), where the platform has one; else
    spawned. Never a plain fork of the caller, whose threads (rayon's, BLAS') a fork would not
    carry over."""
    import multiprocessing as mp

    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(_PRELOAD)  # no effect on a forkserver already running
        return ctx
    return mp.get_context("spawn")


def _init_worker(q: Any, env: Optional[Dict[str, str]] = None) -> None:
    global _queue
    _queue = q
    # the caller's environment now (a forkserver's children inherit the server's, as it was
    # when the server started): the same variables a spawned worker would see
    if env is not None and dict(os.environ) != env:
        os.environ.clear()
        os.environ.update(env)
    # Ctrl-C reaches the whole process group: the parent stops the pool (_stop_pool); a worker
    # does not die of it on its own mid-write
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_pool(ex: Any, output: str) -> None:
    """Stops a process pool now (Ctrl-C, or a failed shard): the queued shards cancelled, the
    workers ended (a shard being rendered is left out, unlisted: complete shards are kept), and
    their temporary files removed."""
    # the workers, before shutdown() forgets them (CPython >= 3.14 has terminate_workers())
    procs = list((getattr(ex, "_processes", None) or {}).values())
    for p in procs:
        if p.is_alive():
            p.terminate()
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.join(timeout=2)
        if p.is_alive():
            p.kill()
            p.join(timeout=2)
    try:
        names = os.listdir(output)
    except OSError:
        return
    pids = {str(p.pid) for p in procs}
    for n in names:
        if ".tmp-" in n and n.rsplit(".tmp-", 1)[1] in pids:
            try:
                os.unlink(os.path.join(output, n))
            except OSError:
                pass


def _pool_task(spec_path: str, output: Optional[str], shard: int, threads: Optional[int],
               text: Optional[str] = None) -> Optional[Dict[str, Any]]:
    q = _queue
    return run_shard(spec_path, output, shard, threads, progress=(lambda n: q.put(n)) if q is not None else None, text=text)


def run_local(spec: Spec, workers: Optional[int] = None, shards: Optional[List[int]] = None, progress: bool = True,
              on_done: Optional[Callable[[int], None]] = None) -> Dict[str, Any]:
    """Runs the pending shards on a pool of ``workers`` processes (default: the cores; 1 runs
    in this process). Returns {"shards": rendered, "skipped": complete before, "images": n,
    "seconds": wall}."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"run_local: workers must be a whole number >= 1 (or None: the cores), got {workers!r}")
    prepare_output(spec)
    todo = pending(spec, shards)
    all_shards = list(shards) if shards is not None else list(range(spec.n_shards))
    n_img = sum(len(spec.shard_range(s)) for s in todo)
    total = sum(len(spec.shard_range(s)) for s in all_shards)
    bar = Progress(total, total - n_img, enabled=progress)
    workers = max(1, min(workers or os.cpu_count() or 1, len(todo) or 1))
    threads = _worker_threads(spec, workers)
    t0 = time.monotonic()
    if workers == 1:
        global _last
        try:
            for s in todo:
                run_shard(spec.path, spec.output, s, threads, progress=bar.add, text=spec.text)
                if on_done:
                    on_done(s)
        except BaseException:
            bar.close()  # Ctrl-C or an error: its message on a line of its own
            raise
        finally:
            _last = None  # this process is the caller's: its memory back
    else:
        ctx = _pool_context()
        q = ctx.Queue()
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        ex = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker, initargs=(q, dict(os.environ)))
        try:
            futs = {ex.submit(_pool_task, spec.path, spec.output, s, threads, spec.text): s for s in todo}
            remaining = set(futs)
            while remaining:
                while not q.empty():
                    bar.add(q.get())
                done = [f for f in remaining if f.done()]
                for f in done:
                    remaining.discard(f)
                    try:
                        f.result()  # re-raises a worker's error (the pool stops at the first)
                    except BrokenProcessPool:
                        from .shards import DatasetError

                        raise DatasetError("a worker process died while rendering (killed, or out of memory); "
                                           "complete shards are kept: run again to resume", file=spec.output) from None
                    if on_done:
                        on_done(futs[f])
                if remaining:
                    time.sleep(0.05)
            while not q.empty():
                bar.add(q.get())
        except BaseException:
            # Ctrl-C (KeyboardInterrupt) or a failed shard: stop within a second or two, not
            # after the queued shards
            _stop_pool(ex, spec.output)
            bar.close()
            raise
        ex.shutdown(wait=True)
    bar.close()
    return {"shards": len(todo), "skipped": len(all_shards) - len(todo), "images": n_img, "seconds": time.monotonic() - t0}


def gpu_adapter_env() -> Dict[str, str]:
    """Environment for a Ray task given GPU(s): Vulkan ignores CUDA_VISIBLE_DEVICES, so the
    task's first GPU is named to the crate by its PCI bus id (NANOBRAGG_GPU_ADAPTER=pci:<id>,
    from nvidia-smi), unless the user set NANOBRAGG_GPU_ADAPTER already."""
    import subprocess

    if os.environ.get("NANOBRAGG_GPU_ADAPTER"):
        return {}
    ids = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
    if not ids or not ids[0]:
        return {}
    try:
        out = subprocess.run(["nvidia-smi", "-i", ids[0], "--query-gpu=pci.bus_id", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"NANOBRAGG_GPU_ADAPTER": "pci:" + out} if out else {}


def _ray_task(spec_path: str, output: Optional[str], shard: int, threads: Optional[int],
              text: Optional[str] = None) -> Tuple[int, int]:
    os.environ.update(gpu_adapter_env())
    try:
        e = run_shard(spec_path, output, shard, threads, text=text)
    finally:
        # a Ray worker outlives the dataset's tasks and runs others': its memory back between
        # tasks (a shard's array is GBs on a large detector), the renderer kept
        if _last is not None:
            _last[1].release_shard_array()
    return shard, (e or {}).get("n_images", 0)


def run_ray(spec: Spec, address: Optional[str] = None, shards: Optional[List[int]] = None, progress: bool = True,
            retries: int = 3, cpus_per_task: int = 1, init_kwargs: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Runs the pending shards as Ray tasks (``ray.init(address)``: None starts a local
    Ray; "auto" or "ray://host:port" joins a cluster). Each task retries ``retries`` times
    (a worker that dies mid-shard leaves no entry; the retry writes the shard again). With
    ``base.backend = "gpu"`` every task asks for one GPU."""
    try:
        import ray
    except ImportError:
        raise RuntimeError("--engine ray needs Ray: pip install 'nanobragg[ray]' (or pip install ray)") from None
    prepare_output(spec)
    todo = pending(spec, shards)
    all_shards = list(shards) if shards is not None else list(range(spec.n_shards))
    total = sum(len(spec.shard_range(s)) for s in all_shards)
    n_img = sum(len(spec.shard_range(s)) for s in todo)
    bar = Progress(total, total - n_img, enabled=progress)
    started = False
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False, **(init_kwargs or {}))
        started = True
    t0 = time.monotonic()
    try:
        opts: Dict[str, Any] = {"max_retries": retries, "retry_exceptions": False, "num_cpus": cpus_per_task}
        if spec.backend == "gpu":
            opts["num_gpus"] = 1
        task = ray.remote(**opts)(_ray_task)
        threads = spec.threads or cpus_per_task
        # the description's text travels with each task (a node needs no copy of its file; a
        # description made by parse_spec has none)
        text = ray.put(spec.text)
        refs = [task.remote(spec.path, spec.output, s, threads, text) for s in todo]
        while refs:
            done, refs = ray.wait(refs, num_returns=1)
            for r in done:
                _, n = ray.get(r)
                bar.add(n)
    except BaseException:
        bar.close()  # Ctrl-C or an error: its message on a line of its own
        raise
    finally:
        if started:
            ray.shutdown()
    bar.close()
    return {"shards": len(todo), "skipped": len(all_shards) - len(todo), "images": n_img, "seconds": time.monotonic() - t0}


#: What a worker process needs besides its shard (Python, NumPy, h5py, the renderer and its
#: structure-factor tables), MiB.
WORKER_BASE_MB = 1024


def slurm_memory_mb(spec: Spec, pixels: int) -> int:
    """Memory (MiB) for one array task: a worker holds a whole shard (its images, 4 bytes a
    pixel, and the file's bytes and the writer's buffers, as large again each), one image's
    render and noise in float64, and :data:`WORKER_BASE_MB`; with a quarter more, rounded up to
    256 MiB."""
    shard = spec.shard_size * pixels * 4 * 3
    image = pixels * 8 * 4
    need = WORKER_BASE_MB * 2**20 + shard + image
    return -(-int(need * 1.25) // (256 * 2**20)) * 256


def finalize_command(spec: Spec, python: Optional[str] = None) -> str:
    """The shell command that finalizes ``spec``'s dataset from anywhere: this interpreter (or
    ``python``) and absolute paths."""
    py = python or sys.executable
    return (f"{shlex.quote(py)} -m nanobragg.dataset finalize {shlex.quote(os.path.abspath(spec.path))} "
            f"--output {shlex.quote(os.path.abspath(spec.output))}")


def _check_spec_file(spec: Spec, where: str) -> None:
    """The array's tasks read the description from its file (``spec.path``): one made by
    :func:`.spec.parse_spec` has none, and a file edited since would be another description."""
    from .shards import DatasetError

    try:
        with open(spec.path, "rb") as f:
            same = f.read() == spec.text.encode()
    except OSError:
        raise DatasetError(f"{where}: the description has no file ({spec.path!r}: made by parse_spec?), and the array's "
                           "tasks read it from one: write spec.text to a file and load_spec it", file=spec.path) from None
    if not same:
        raise DatasetError(f"{where}: {spec.path} is no longer the description loaded from it (edited since): load_spec it "
                           "again", file=spec.path)


def slurm_script(spec: Spec, *, shards_per_task: int = 1, python: Optional[str] = None, partition: Optional[str] = None,
                 time_limit: str = "04:00:00", cpus_per_task: int = 1, gpus_per_task: int = 0, max_running: Optional[int] = None,
                 extra: Optional[List[str]] = None, mem_mb: Optional[int] = None, pixels: Optional[int] = None) -> str:
    """A job-array batch script: array index t runs shards t·k … t·k+k-1 (k = shards_per_task)
    through ``python -m nanobragg.dataset run SPEC --shards``; ``--requeue`` puts a task whose
    node failed back in the queue, and the re-run skips shards already complete. ``--mem`` is
    ``mem_mb``, else :func:`slurm_memory_mb` of the image size (``pixels``, else the base
    set-up's)."""
    if isinstance(shards_per_task, bool) or not isinstance(shards_per_task, int) or shards_per_task < 1:
        raise ValueError(f"slurm_script: shards_per_task must be a whole number >= 1, got {shards_per_task!r}")
    _check_spec_file(spec, "slurm_script")
    tasks = -(-spec.n_shards // shards_per_task)
    py = python or sys.executable
    if mem_mb is None:
        if pixels is None:
            from .params import base_facts

            pixels = base_facts(spec)["pixels"]
        mem_mb = slurm_memory_mb(spec, pixels)
    log = os.path.join(spec.output, "slurm", "%A_%a.log")
    lines = ["#!/bin/bash", f"#SBATCH --job-name=nanobragg-{os.path.basename(spec.output.rstrip('/')) or 'dataset'}",
             f"#SBATCH --array=0-{tasks - 1}" + (f"%{max_running}" if max_running else ""),
             "#SBATCH --requeue", "#SBATCH --ntasks=1", f"#SBATCH --cpus-per-task={cpus_per_task}",
             f"#SBATCH --mem={mem_mb}M", f"#SBATCH --time={time_limit}", f"#SBATCH --output={log}"]
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    if gpus_per_task:
        lines.append(f"#SBATCH --gpus-per-task={gpus_per_task}")
    lines += [f"#SBATCH {x}" for x in (extra or [])]
    k = shards_per_task
    lines += [
        "set -euo pipefail",
        f"# {spec.n_shards} shards of {spec.shard_size} images, {k} per array task; rerun `sbatch` of this file to resume,",
        f"# then: {finalize_command(spec, py)}",
        f"first=$(( SLURM_ARRAY_TASK_ID * {k} ))",
        f"last=$(( first + {k} - 1 < {spec.n_shards - 1} ? first + {k} - 1 : {spec.n_shards - 1} ))",
        f"exec {shlex.quote(py)} -m nanobragg.dataset run {shlex.quote(os.path.abspath(spec.path))} "
        f"--output {shlex.quote(os.path.abspath(spec.output))} --shards \"$first-$last\" --workers 1 --no-progress"
        + (f" --threads {cpus_per_task}" if not gpus_per_task else ""),
        "",
    ]
    return "\n".join(lines)
