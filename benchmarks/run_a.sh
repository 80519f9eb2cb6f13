#!/usr/bin/env bash
# Run A: one call on the lent H200, the current kernels measured six ways, each job's JSON straight into $OUT.
#
#     OUT=$OUT bash benchmarks/run_a.sh          # from the repository root; at most TOTAL_S (490 s; run 34: 188 s)
#
# Jobs, in order (each under `timeout`, its budget capped by what is left of TOTAL_S, so a hanging job
# cannot take the others' time; a failing one does not stop the rest):
#   tensor_pipe  ncu: tensor-pipe cycles / SM cycles of flash1, flash2        -> tensor_pipe.json
#   sdpa_pick    which SDPA backend runs unforced (torch.profiler)            -> sdpa_pick.json
#   end_to_end   BERT-base seq 512, GPT-2 seq 1K, eager vs sdpa (transformers) -> end_to_end.json
#   host         per-call wall cost on small shapes, decode plan/run          -> host.json
#   tiles_bwd    flash2 training step at four backward tiles vs SDPA flash    -> tiles_bwd.json
#   heldout      88 held-out shapes (seed 2026), every kind, checked + timed  -> heldout.json (gets what is left)
# Logs (each job's output, ncu's CSVs, nvidia-smi) go into $OUT/run_a_logs.tar.gz; a summary table ends it.
source benchmarks/gpu_env.sh
TOTAL_S=${TOTAL_S:-490}
LOGS=$(mktemp -d /tmp/run_a_logs.XXXX)

{
  date -u
  git rev-parse HEAD 2>/dev/null
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu,memory.used --format=csv
  "$PY" -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, \
'triton', triton.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else 'NO CUDA')"
  "$PY" -c "import transformers; print('transformers', transformers.__version__)" 2>&1 | tail -1
  "$PY" -c "import gpusim, gpusim_kernels, benchmarks.heldout; print('imports ok')" 2>&1 | tail -1
  /usr/local/cuda/bin/ncu --version 2>&1 | tail -1
} > "$LOGS/environment.txt" 2>&1
cat "$LOGS/environment.txt"

SUMMARY=$LOGS/summary.txt
printf '%-12s %-8s %5s %6s  %s\n' job status s limit rows > "$SUMMARY"

rows() {  # rows FILE: rows in a result JSON, how many timed, how many with an error
  "$PY" - "$1" <<'PYEOF' 2>/dev/null || echo "no file"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d.get("rows", [])
timed = sum(r.get("ms") is not None or r.get("us") is not None or r.get("tensor_share") is not None
            or r.get("picked") is not None for r in rows)
errors = sum("error" in r for r in rows)
extra = " error: " + str(d["error"])[:80] if "error" in d else ""
extra += " (" + d["environment"]["truncated"] + ")" if "truncated" in d.get("environment", {}) else ""
print(f"{len(rows)} rows, {timed} with a value, {errors} errors{extra}")
PYEOF
}

job() {  # job NAME LIMIT_S RESERVE_S ARGS...: at most LIMIT_S, leaving RESERVE_S of TOTAL_S for the jobs after it
  local name=$1 limit=$2 reserve=$3
  shift 3
  local left=$((TOTAL_S - ($(date +%s) - START) - reserve))
  ((limit > left)) && limit=$left
  if ((limit < 15)); then
    printf '%-12s %-8s %5s %6s  %s\n' "$name" skipped 0 "$limit" "-" | tee -a "$SUMMARY"
    return
  fi
  local t0=$(date +%s)
  echo "=== $name (limit $limit s) $(date -u +%T)"
  JOB_LIMIT=$limit timeout -k 10 "$limit" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  tail -n 4 "$LOGS/$name.log"
  local status=ok
  ((rc == 0)) || status="rc=$rc"
  ((rc == 124 || rc == 137)) && status=timeout
  printf '%-12s %-8s %5s %6s  %s\n' "$name" "$status" $(($(date +%s) - t0)) "$limit" "$(rows "$OUT/$name.json")" \
    | tee -a "$SUMMARY" > /dev/null
}

# budgets: reserve what the later jobs need at least, so each always runs
job tensor_pipe 95 330 "$PY" -m benchmarks.tensor_pipe --out "$OUT" --logs "$LOGS/tensor_pipe" --max-seconds 85
job sdpa_pick   40 300 "$PY" -m benchmarks.sdpa_pick --out "$OUT"
job end_to_end  70 250 "$PY" -m benchmarks.end_to_end --out "$OUT"
job host        80 190 "$PY" -m benchmarks.host --out "$OUT"
left=$((TOTAL_S - ($(date +%s) - START) - 110))
tb=$((left < 140 ? left : 140))
job tiles_bwd "$tb" 100 "$PY" -m benchmarks.tiles_bwd --out "$OUT" --max-minutes "$("$PY" -c "print(max(0.5, ($tb - 25) / 60))")"
left=$((TOTAL_S - ($(date +%s) - START) - 10))
job heldout "$left" 0 "$PY" -m benchmarks.heldout --out "$OUT" --max-minutes "$("$PY" -c "print(max(0.5, ($left - 30) / 60))")"

echo "total: $(($(date +%s) - START)) s of TOTAL_S=$TOTAL_S" >> "$SUMMARY"
ls -la "$OUT" >> "$SUMMARY"
tar -czf "$OUT/run_a_logs.tar.gz" -C "$LOGS" . 2>/dev/null
echo
echo "===== Run A summary ($(date -u +%T))"
cat "$SUMMARY"
