"""Dataset throughput (docs/benchmarks.md, "Datasets"): images/s of the bare render loop and of
the dataset engines end to end (render + labels + compression + NXmx writing + rename +
manifest), 1 and 2 local workers, Ray on this machine, bytes per image.

    target/pyvenv/bin/python python/bench_dataset.py [--cases light512,light1024,noise512,eiger,eigerpage]
    target/pyvenv/bin/python python/bench_dataset.py --stages --n 8   # CPU time per stage (EIGER2 4M)
    target/pyvenv/bin/python python/bench_dataset.py --stages --cases noise512 --n 64
    ... --compression deflate,bslz4   # the NXmx frames' filters, each case run with each, alternated
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

# the installed package, not the source folder beside this script
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

from nanobragg import dataset  # noqa: E402

# every case's [dataset] table (`with_compression` adds to it)
HEADER = """
[dataset]
n_images = {n}
shard_size = {k}
seed = 1
output = "out"
"""

LIGHT = HEADER + """[base]
args = "-cell 78 78 38 90 90 90 -default_F 100 -N 10 -lambda 1.0 -distance 100 -detpixels {px} -pixel {pix} -fluence 1e26"
precision = "f32"
backend = "cpu"
[vary]
orientation = "uniform"
"""

NOISE512 = HEADER + """[base]
args = "-cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -default_F 100 -distance 100 -detpixels 512"
precision = "f32"
backend = "cpu"
[vary]
orientation = "uniform"
[chain]
noise = "-readout_noise 3 -adc 40"
"""
"""The benchmarks' case (a) (docs/benchmarks.md) as a dataset of noisy stills: the chain's noise
with a seed per image, no background; "datasets with noise" at >= 80 % of the bare render's rate."""

# `eiger`: 100 µm of water at a fluence of 1e24 photons/m², about 1.8 million background photons a
# pixel (every pixel takes the Poisson sampler's rejection path); `eigerpage`: the page's realistic
# preset's beam and water (1e12 photons/s for 0.1 s through 10 µm × 10 µm: 1e21 photons/m²; 10 µm
# of water), tens of photons a pixel
EIGER_BEAMS = {"eiger": {"fluence": "1e24", "thick": "0.1"}, "eigerpage": {"fluence": "1e21", "thick": "0.01"}}

EIGER = HEADER + """[base]
args = "-cell 78 78 38 90 90 90 -default_F 100 -N 10 -lambda 1.0 -distance 150 -fluence {fluence}"
precision = "f32"
backend = "cpu"
[base.detector]
preset = "eiger2-4m"
[vary]
orientation = "uniform"
[chain]
background = "-stol water.stol -thick {thick} -lambda 1.0 -distance 150 -detector eiger2-4m -fluence {fluence}"
noise = "-detector eiger2-4m -readout_noise 0"
"""


def with_compression(text, compression):
    """The description with ``dataset.compression`` set (said even where it is the default,
    which depends on ``chain.noise``)."""
    return text.replace("seed = 1\n", f'seed = 1\ncompression = "{compression}"\n', 1)


def spec_in(folder, text):
    os.makedirs(folder, exist_ok=True)
    p = os.path.join(folder, "spec.toml")
    with open(p, "w") as f:
        f.write(text)
    return dataset.load_spec(p)


def bare(spec, threads):
    """The render loop alone (same parameters, no chain, nothing written)."""
    import dataclasses

    s = dataclasses.replace(spec, threads=threads, background=None, noise=None, format="npz")
    r = dataset.Renderer(s)
    r.image(0)  # warm
    t0 = time.perf_counter()
    for i in range(spec.n_images):
        r.image(i)
    return spec.n_images / (time.perf_counter() - t0)


def engine(spec, **kw):
    shutil.rmtree(spec.output, ignore_errors=True)
    t0 = time.perf_counter()
    if kw.pop("ray", False):
        res = dataset.run_ray(spec, progress=False, **kw)
    else:
        res = dataset.run_local(spec, progress=False, **kw)
    wall = time.perf_counter() - t0
    sizes = sum(os.path.getsize(os.path.join(spec.output, f)) for f in os.listdir(spec.output) if f.startswith("shard-"))
    return {"images_per_s": spec.n_images / wall, "bytes_per_image": sizes / spec.n_images, "seconds": wall, **res}


def stages(n, case="eiger", compressions=("deflate",)):
    """CPU time (this process, all threads) per image of each stage of an NXmx shard (the
    realistic EIGER2 4M case, or ``noise512``): the bare render (the same parameters, no chain),
    render + chain, the crate's writer (with each of ``compressions``, alternated, and its bytes
    per image), and the h5py pass that adds the labels. CPU time, not wall time: it holds on a
    loaded machine."""
    import dataclasses

    from nanobragg.dataset import nexus, shards

    text = NOISE512.format(n=n, k=n) if case == "noise512" else EIGER.format(n=n, k=n, **EIGER_BEAMS[case])
    spec = spec_in(tempfile.mkdtemp(prefix="nbstage"), text)
    spec = dataclasses.replace(spec, threads=2)
    out = {}
    b = dataset.Renderer(dataclasses.replace(spec, background=None, noise=None, format="npz"))
    b.image(0)  # warm
    t = time.process_time()
    for i in range(n):
        b.image(i)
    out["bare_render"] = (time.process_time() - t) / n
    r = dataset.Renderer(spec)
    r.image(0)  # the background, once per worker
    t = time.process_time()
    images, labels = shards.render_shard(spec, 0, r)
    out["render_chain"] = (time.process_time() - t) / n
    sim, meta = r.simulator(None), shards._meta(spec, 0)
    for rep in range(2):
        for c in compressions:
            tag = "" if compressions == ("deflate",) else c + "_"
            t = time.process_time()
            crate = sim._s.nxmx(images, 0.0, 0.0, nexus.SATURATION, still=True, compression=c)
            t1 = time.process_time()
            nexus.shard_bytes(sim, images, labels, meta, None, still=True, compression=c)
            t2 = time.process_time()
            out[f"writer_{tag}{rep}"] = (t1 - t) / n
            out[f"writer_plus_h5py_{tag}{rep}"] = (t2 - t1) / n
            out[f"bytes_per_image_{tag}{rep}"] = len(crate) / n
    print(f"stages {case} (CPU s per image)", json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="light512,light1024,eiger")
    ap.add_argument("--stages", action="store_true", help="only the stages of a shard (CPU time): eiger, or the first of --cases (noise512, eiger, eigerpage)")
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--ray", action="store_true", help="also through Ray (local, 2 CPUs)")
    ap.add_argument("--shard", type=int, default=0,
                    help="images per shard of noise512 and light* (default n/2: one shard a worker with 2 workers, so "
                         "every shard's int32 array is new memory; a long dataset's workers reuse theirs)")
    ap.add_argument("--compression", default="deflate",
                    help="the NXmx frames' filters, comma-separated (deflate, bslz4): each case's engines run with each in turn")
    a = ap.parse_args()
    comps = tuple(a.compression.split(","))
    if a.stages:
        case = a.cases.split(",")[0] if a.cases != ap.get_default("cases") else "eiger"
        return stages(a.n if case == "noise512" else max(2, a.n // 4), case, comps)
    tmp = tempfile.mkdtemp(prefix="nbbench")
    out = {}
    for case in a.cases.split(","):
        if case == "noise512":
            text = NOISE512.format(n=a.n, k=a.shard or a.n // 2)
        elif case.startswith("light"):
            px = int(case[5:])
            text = LIGHT.format(n=a.n, k=a.shard or a.n // 2, px=px, pix=0.1 * 1024 / px)
        else:
            text = EIGER.format(n=max(2, a.n // 4), k=max(1, a.n // 8), **EIGER_BEAMS[case])
        spec = spec_in(os.path.join(tmp, case), text)
        r = {"bare_2threads": bare(spec, 2), "bare_1thread": bare(spec, 1)}
        for c in comps:
            tag = "" if comps == ("deflate",) else c + "_"
            cspec = spec_in(os.path.join(tmp, case + "-" + c), with_compression(text, c))
            r[tag + "local_1worker_2threads"] = engine(cspec, workers=1)
            r[tag + "local_2workers_1thread"] = engine(cspec, workers=2)
        if a.ray:
            import ray

            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            try:
                t0 = time.perf_counter()
                r["ray_2cpus"] = engine(spec, ray=True)
            finally:
                ray.shutdown()
        out[case] = r
        print(case, json.dumps(r, default=float), flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out, default=float))


if __name__ == "__main__":
    main()
