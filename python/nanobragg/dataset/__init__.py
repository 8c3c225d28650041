"""Datasets: describe a dataset once (a TOML file), render it as independent shards on a local
process pool, Ray or a Slurm job array, as NeXus/NXmx HDF5 (or npz) with a labels table per
image. See ``docs/datasets.md``.

    >>> from nanobragg import dataset
    >>> spec = dataset.load_spec("spec.toml")            # validated before anything renders
    >>> dataset.run_local(spec, workers=2)               # resumes: complete shards are skipped
    >>> dataset.finalize(spec)                           # manifest checked, master.h5 written
    >>> img = dataset.render_image(spec, 17)             # image 17 alone, bit-identical
"""

from .engines import finalize_command, run_local, run_ray, run_shard, slurm_memory_mb, slurm_script
from .finalize import check_manifest, finalize, read_image, verify
from .params import Renderer, image_params, render_image
from .shards import DatasetError, render_shard, write_shard
from .spec import MAX_BYTES, MAX_IMAGES, Spec, SpecError, load_spec, parse_spec

__all__ = ["load_spec", "parse_spec", "Spec", "SpecError", "DatasetError", "MAX_IMAGES", "MAX_BYTES", "image_params",
           "render_image", "Renderer", "render_shard", "write_shard", "run_shard", "run_local", "run_ray", "slurm_script", "slurm_memory_mb", "finalize_command",
           "check_manifest", "finalize", "verify", "read_image"]
