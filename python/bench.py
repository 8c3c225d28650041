"""The PyTorch port's benchmark, for this package: a cubic crystal at 256² … 4096² pixels, timed
inside one Python process, cold (import + construct + first render, in a fresh interpreter) and
warm (median of further renders), CPU f32 and f64, the GPU when an adapter opens, and upstream's
C program when its path is in NANOBRAGG_UPSTREAM (as `npm run bench` does). Also: the Python
wrapper's overhead per warm call over the compiled API, peak memory against the float image, and
`render_many` of 100 stills against 100 `render` calls.

usage: python python/bench.py [--sizes 256,512,1024,2048,4096] [--reps 5] [--quick] [--no-gpu]

The case is `npm run bench`'s case (a): -cell 100 100 100 90 90 90 -lambda 6.2 -N 5
-default_F 100 -distance 100 -detpixels N. Prints a Markdown table (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# this file sits beside the package's source folder: import the installed package, not that
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

CASE = "-cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -default_F 100 -distance 100 -detpixels {n}"


def child_cold(n: int, precision: str, backend: str) -> None:
    """In a fresh interpreter: import + construct + first render, then peak memory."""
    t0 = time.perf_counter()
    import nanobragg as nb

    t_import = time.perf_counter() - t0
    sim = nb.Simulator.from_args(CASE.format(n=n) + f" -precision {precision} -backend {backend}")
    t_construct = time.perf_counter() - t0
    rss_before = _rss_kb()
    img = sim.render()
    t_first = time.perf_counter() - t0
    peak = _peak_kb()
    print(json.dumps(dict(import_s=t_import, construct_s=t_construct, cold_s=t_first, engine=sim.engine,
                          peak_kb=peak, rss_before_render_kb=rss_before, image_bytes=img.nbytes,
                          adapter=sim.info()["gpu_adapter"], max=float(img.max()))))


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    return 0


def _rss_kb() -> int:
    return _status("VmRSS:")


def _peak_kb() -> int:
    return _status("VmHWM:")


def cold(n: int, precision: str, backend: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child-cold", str(n), precision, backend],
                         capture_output=True, text=True, timeout=1200)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def warm(sim, reps: int) -> float:
    sim.render()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        sim.render()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def wrapper_overhead(nb, n: int = 64, reps: int = 300) -> dict:
    """The binding's own cost per warm call: the wall time of `Simulator.render` (and of the
    compiled `Session.render`) minus the time the call spent inside the crate's
    `Session::render` (measured in Rust around it), median over `reps` calls of an n² f32 CPU
    render."""
    sim = nb.Simulator.from_args(CASE.format(n=n) + " -precision f32 -backend cpu")
    s = sim._s

    def over(f):
        f()
        walls, inner = [], []
        for _ in range(reps):
            t = time.perf_counter()
            f()
            walls.append(time.perf_counter() - t)
            inner.append(s.last_render_seconds())
        return statistics.median(walls), statistics.median([w - i for w, i in zip(walls, inner)])

    py_wall, py_over = over(sim.render)
    raw_wall, raw_over = over(lambda: s.render([]))
    ov_wall, ov_over = over(lambda: sim.render(phi_deg=1.0))
    return dict(n=n, python_wall_s=py_wall, python_overhead_s=py_over, compiled_wall_s=raw_wall,
                compiled_overhead_s=raw_over, override_wall_s=ov_wall, override_overhead_s=ov_over)


def upstream(n: int, reps: int) -> float | None:
    exe = os.environ.get("NANOBRAGG_UPSTREAM")
    if not exe:
        return None
    import tempfile

    times = []
    with tempfile.TemporaryDirectory() as d:
        for _ in range(max(1, min(reps, 3))):
            t = time.perf_counter()
            subprocess.run([exe, *CASE.format(n=n).split(), "-floatfile", "f.bin", "-nonoise", "-nopgm", "-intfile", "i.img"],
                           cwd=d, capture_output=True, check=True)
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def render_many_vs_single(nb, n: int = 512, count: int = 100) -> dict:
    import numpy as np

    sim = nb.Simulator.from_args(CASE.format(n=n) + " -precision f32 -backend cpu")
    rng = np.random.default_rng(0)
    orients = rng.uniform(-180, 180, size=(count, 3))
    sim.render()
    t = time.perf_counter()
    for o in orients:
        sim.render(misset_deg=tuple(o))
    single = time.perf_counter() - t
    t = time.perf_counter()
    sim.render_many(orients)
    many = time.perf_counter() - t
    return dict(single_s=single, many_s=many)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="256,512,1024,2048,4096")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="256 and 512 only, 3 reps")
    ap.add_argument("--no-gpu", action="store_true")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    sizes = [256, 512] if a.quick else [int(s) for s in a.sizes.split(",")]
    reps = 3 if a.quick else a.reps

    import nanobragg as nb

    configs = [("f32", "cpu"), ("f64", "cpu")] + ([] if a.no_gpu else [("f32", "gpu")])
    results = []
    for n in sizes:
        up = upstream(n, reps)
        for precision, backend in configs:
            c = cold(n, precision, backend)
            row = dict(n=n, precision=precision, backend=backend, upstream_s=up, **c)
            if "error" not in c:
                sim = nb.Simulator.from_args(CASE.format(n=n) + f" -precision {precision} -backend {backend}")
                r = max(2, reps if n <= 1024 else max(2, reps // 2))
                row["warm_s"] = warm(sim, r)
            results.append(row)
            print(_fmt_row(row), flush=True)
    over = wrapper_overhead(nb)
    many = render_many_vs_single(nb) if not a.quick else render_many_vs_single(nb, count=20)
    print()
    print(f"per warm call ({over['n']}² f32 CPU, median): Simulator.render {over['python_wall_s'] * 1e3:.2f} ms, of which "
          f"{over['python_overhead_s'] * 1e3:.3f} ms outside the crate's Session::render "
          f"(compiled Session.render alone: {over['compiled_overhead_s'] * 1e3:.3f} ms; with a phi override, which re-resolves: "
          f"{over['override_wall_s'] * 1e3:.2f} ms, {over['override_overhead_s'] * 1e3:.3f} ms outside)")
    print(f"render_many of {100 if not a.quick else 20} stills at 512² (f32 CPU): {many['many_s']:.2f} s; "
          f"separate render calls: {many['single_s']:.2f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(rows=results, overhead=over, render_many=many), f, indent=1)


def _fmt_row(r: dict) -> str:
    if "error" in r:
        return f"| {r['n']}² | {r['precision']} {r['backend']} | unavailable: {r['error']} |"
    up = r.get("upstream_s")
    ratio = f"{up / r['warm_s']:.1f}×" if up else "—"
    mem = (r["peak_kb"] * 1024) / r["image_bytes"] if r.get("image_bytes") else float("nan")
    add = (r["peak_kb"] - r["rss_before_render_kb"]) * 1024 / r["image_bytes"]
    return (f"| {r['n']}² | {r['precision']} {r['engine']} | {r['cold_s'] * 1e3:.0f} ms (import {r['import_s'] * 1e3:.0f}) | "
            f"{r['warm_s'] * 1e3:.1f} ms | {r['cold_s'] / r['warm_s']:.2f} | {'%.0f ms' % (up * 1e3) if up else '—'} | {ratio} | "
            f"{r['peak_kb'] / 1024:.0f} MiB ({add:.2f}× image over the pre-render RSS) |")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-cold":
        child_cold(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    else:
        print("| size | precision, engine | cold (import + construct + first render) | warm (median) | cold/warm | upstream C | C / warm | peak RSS |")
        print("|---|---|---|---|---|---|---|---|")
        main()
