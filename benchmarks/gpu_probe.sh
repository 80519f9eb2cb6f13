#!/usr/bin/env bash
# The time model's measurements on the lent GPU, in one call: pointer-chase latency, Little's-law bandwidth,
# tensor-core efficiency per tile shape, and the tile sweep, each writing its JSON into $OUT after every row.
#
#     OUT=/path/to/out bash benchmarks/gpu_probe.sh        # from the repository root
#     SMOKE=1 TRITON_INTERPRET=1 OUT=/tmp/probe bash benchmarks/gpu_probe.sh   # CPU: the scripts' --smoke runs
#
# Each script runs under its own time limit (and the whole under TOTAL_S seconds), goes on past a failing
# one, and prints its wall time; probe_times.txt lists them with the exit codes. Expected: latency 15 s,
# bandwidth 45 s, matmul_tiles 35 s, tiles 100 s, about 3.5 minutes in all (their docstrings derive these).
# The GPU machine has no gpusim_kernels install: kernels/ is linked under that name.
set -u
OUT=${OUT:-probe_out}
TOTAL_S=${TOTAL_S:-360}
mkdir -p "$OUT" /tmp/shim
ln -sfn "$PWD/kernels" /tmp/shim/gpusim_kernels
export PYTHONPATH=/tmp/shim:$PWD${PYTHONPATH:+:$PYTHONPATH}
START=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu \
  --format=csv > "$OUT/nvidia_smi.csv" 2>&1

run() {  # run NAME LIMIT_S ARGS...: at most LIMIT_S seconds, and no later than TOTAL_S after the start
  local name=$1 limit=$2
  shift 2
  local left=$((TOTAL_S - ($(date +%s) - START)))
  ((limit > left)) && limit=$left
  if ((limit < 10)); then
    echo "$name: skipped, ${left} s of the ${TOTAL_S} s left" | tee -a "$OUT/probe_times.txt"
    return
  fi
  local t0=$(date +%s)
  timeout -k 10 "$limit" python "benchmarks/$name.py" --out "$OUT" ${SMOKE:+--smoke} "$@" 2>&1 | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "$name: exit $rc, $(($(date +%s) - t0)) s (limit $limit s)" | tee -a "$OUT/probe_times.txt"
}

run latency 40
run bandwidth 75
run matmul_tiles 100
run tiles 170 --max-minutes 2.2
echo "total: $(($(date +%s) - START)) s" | tee -a "$OUT/probe_times.txt"
