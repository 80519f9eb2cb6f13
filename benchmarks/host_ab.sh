#!/usr/bin/env bash
# benchmarks/host.py with an earlier tree's kernels and with this tree's, alternately, twice each, in one call on the
# GPU (run 189): $OUT/host_before{1,2}.json and $OUT/host_after{1,2}.json. The earlier kernels travel as a folder of
# the working tree (the GPU machine has no git history):
#
#     git archive 3758296 kernels | tar -x -C before/        # here, before the call (before/ untracked, not ignored)
#     OUT=$OUT bash benchmarks/host_ab.sh before/kernels     # on the GPU
set -eu  # a host.py that fails or runs past its limit stops the script: no partial file is copied
OUT=${OUT:?set OUT}
BEFORE=$(realpath "${1:?give the earlier kernels folder}")
mkdir -p "$OUT"
for side in before after; do
  mkdir -p "/tmp/host_ab/$side"
  ln -sfn "$PWD/course" "/tmp/host_ab/$side/gpusim_course"
done
ln -sfn "$BEFORE" /tmp/host_ab/before/gpusim_kernels
ln -sfn "$PWD/kernels" /tmp/host_ab/after/gpusim_kernels
for i in 1 2; do
  for side in before after; do
    PYTHONPATH=/tmp/host_ab/$side:$PWD PYTHONUNBUFFERED=1 timeout 100 \
      python -m benchmarks.host --out "/tmp/host_ab/$side$i"
    cp "/tmp/host_ab/$side$i/host.json" "$OUT/host_$side$i.json"
  done
done
