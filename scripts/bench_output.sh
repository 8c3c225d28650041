#!/usr/bin/env bash
# The output path's before/after comparison (docs/benchmarks.md, "The output path"): two nanobragg
# binaries of the same build profile, interleaved, case (a) at 1024² and 4096² in f32 and f64,
# `-timings` (render and output) and the wall time of the whole run, N repetitions (default 5).
# usage: scripts/bench_output.sh BEFORE_BINARY AFTER_BINARY [N]
set -u
before=$1 after=$2 reps=${3:-5}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
A="-cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -default_F 100 -distance 100 -nonoise -nopgm"
echo "$(nproc) cores; $(uptime)"
for n in 1024 4096; do for p in f32 f64; do
  for _ in $(seq "$reps"); do for b in "$before" "$after"; do
    s=$(date +%s.%N)
    t=$("$b" $A -detpixels "$n" -precision "$p" -floatfile "$dir/f.bin" -intfile "$dir/i.img" -timings 2>&1 | grep timings)
    e=$(date +%s.%N)
    echo "$n $p $b wall_ms=$(awk "BEGIN{printf \"%.1f\", ($e-$s)*1000}") $t"
  done; done
done; done
