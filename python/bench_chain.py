"""The realistic chain's rate from Python (issue 32): the bare render against render + detector
effects (noisify: Poisson noise with a seed per image, calibration error, read-out noise), at
512² by default, interleaved in one process (rounds of each in turn, so that the load of the
machine falls on both alike), as images/s and their ratio. Also noisify alone, and noisify with
upstream's sequence on one thread (`-rng upstream`, the noisify program's default) for
comparison, each also with a Gaussian PSF of 2 pixels FWHM (the counter path's PSF in parallel
bands, upstream's serial).

usage: python python/bench_chain.py [--size 512] [--rounds 15] [--batch 10]
                                    [--noise "-readout_noise 3 -adc 40"] [--threads N]

The render is `npm run bench`'s case (a) (python/bench.py): -cell 100 100 100 90 90 90
-lambda 6.2 -N 5 -default_F 100 -distance 100 -detpixels N, CPU f32. "render + noisify" is
`nb.noisify(sim.render(), flags + ["-seed", str(n)])` (a new seed per image; noisify's default
3 % calibration error, whose per-pixel deviates are computed once per calibration seed), its
result dropped before the next call, as a loop that keeps what it writes and moves on would do
(the freed count images' memory then serves the next call's). The goal of the issue: the chain
at >= 80 % of the bare render's rate. Prints one Markdown table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

# this file sits beside the package's source folder: import the installed package, not that
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

CASE = "-cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -default_F 100 -distance 100 -detpixels {n}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--batch", type=int, default=10, help="images per round and kind")
    ap.add_argument("--noise", default="-readout_noise 3 -adc 40", help="noisify's flags (a seed per image is added)")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads of the render (0: all)")
    a = ap.parse_args()

    import numpy as np

    import nanobragg as nb

    words = CASE.format(n=a.size) + " -precision f32 -backend cpu"
    if a.threads:
        words += f" -threads {a.threads}"
    sim = nb.Simulator.from_args(words)
    noise = a.noise.split()
    img = sim.render()
    seed = [0]

    def bare() -> None:
        sim.render()

    def chain() -> None:
        seed[0] += 1
        r = nb.noisify(sim.render(), noise + ["-seed", str(seed[0])])
        assert r.noise_image is not None

    def effects() -> None:
        seed[0] += 1
        nb.noisify(img, noise + ["-seed", str(seed[0])])

    def effects_upstream() -> None:
        seed[0] += 1
        nb.noisify(img, noise + ["-seed", str(seed[0]), "-rng", "upstream"])

    psf = ["-psf", "gauss", "-psf_fwhm", "200", "-pixel", "0.1"]

    def effects_psf() -> None:
        seed[0] += 1
        nb.noisify(img, noise + psf + ["-seed", str(seed[0])])

    def effects_psf_upstream() -> None:
        seed[0] += 1
        nb.noisify(img, noise + psf + ["-seed", str(seed[0]), "-rng", "upstream"])

    kinds = {"render": bare, "render + noisify": chain, "noisify alone": effects,
             "noisify -rng upstream": effects_upstream,
             "noisify + PSF (2 px FWHM): banded, all threads": effects_psf,
             "noisify + PSF -rng upstream: serial": effects_psf_upstream}
    for f in kinds.values():  # warm up
        f()
    times: dict = {k: [] for k in kinds}
    for _ in range(a.rounds):
        for k, f in kinds.items():
            t0 = time.perf_counter()
            for _ in range(a.batch):
                f()
            times[k].append((time.perf_counter() - t0) / a.batch)
    # the chain's share of the bare render's rate, round by round (interleaved pairs)
    ratios = [b / c for b, c in zip(times["render"], times["render + noisify"])]
    print(f"{a.size}x{a.size} f32 CPU, {os.cpu_count()} CPUs (RAYON_NUM_THREADS={os.environ.get('RAYON_NUM_THREADS', 'all')}), "
          f"noisify {' '.join(noise)} -seed <per image>; {a.rounds} rounds x {a.batch} images, medians")
    print()
    print("| what | ms per image | images/s |")
    print("|---|---:|---:|")
    for k, t in times.items():
        m = statistics.median(t)
        print(f"| {k} | {m * 1e3:.2f} | {1 / m:.0f} |")
    print()
    print(f"render + noisify at {100 * statistics.median(ratios):.0f} % of the bare render's rate "
          f"(round ratios {100 * min(ratios):.0f}-{100 * max(ratios):.0f} %; goal >= 80 %)")
    np.asarray(img)


if __name__ == "__main__":
    main()
