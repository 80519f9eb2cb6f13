#!/usr/bin/env bash
# Nsight Compute on the lent H200: the forward kernels as they are now (naive's qk with .cg loads, the compiled
# flash1's spills) profiled one launch at a time, then compared with gpusim into $OUT/ncu.json (and .md).
#
#     OUT=$OUT bash benchmarks/run_ncu.sh        # from the repository root; about 5 minutes (TOTAL_S=340)
#
# One ncu per algorithm, in the order the issue needs them (flash1: its spills; naive: qk's reads; then flash2
# and hopper), each with its own CSV and manifest, so that one running out of time loses only itself. Each
# workload stops launching at its budget (--max-seconds), so ncu ends as usual and writes what it profiled;
# `timeout` behind it is the safety net. The sequence lengths are 1024, 4096, 16384 (and 32768 for flash2 and
# hopper): the edges the issue names, 56 configurations and 80 launches, about half of run 2's 88 and 150.
# Metrics: benchmarks.ncu's, less the optional local-memory counters if this Nsight Compute does not list them.
# Logs (each ncu's output, CSVs, manifests) go into $OUT/run_ncu_logs.tar.gz; a summary ends it.
source benchmarks/gpu_env.sh
TOTAL_S=${TOTAL_S:-340}
NCU=${NCU:-/usr/local/cuda/bin/ncu}  # Nsight Compute 2025.3 on the lent H200
LOGS=$(mktemp -d /tmp/run_ncu_logs.XXXX)

{
  date -u
  git rev-parse HEAD 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  "$PY" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  "$NCU" --version 2>&1 | tail -1
} > "$LOGS/environment.txt" 2>&1
cat "$LOGS/environment.txt"

timeout 40 "$NCU" --query-metrics --query-metrics-mode all > "$LOGS/query_metrics.txt" 2>&1
METRICS=$("$PY" -m benchmarks.ncu metrics --available "$LOGS/query_metrics.txt")
echo "metrics: $METRICS"

SUMMARY=$LOGS/summary.txt
CSVS=() MANIFESTS=()

profile() {  # profile ALGO SEQS BUDGET_S RESERVE_S: at most BUDGET_S, leaving RESERVE_S of TOTAL_S for the rest
  local algo=$1 seqs=$2 limit=$3 reserve=$4
  local left=$((TOTAL_S - ($(date +%s) - START) - reserve))
  ((limit > left)) && limit=$left
  if ((limit < 40)); then
    echo "$algo: skipped ($limit s left)" | tee -a "$SUMMARY"
    return
  fi
  echo "=== $algo N=$seqs (limit $limit s) $(date -u +%T)"
  local t0=$(date +%s)
  # the workload launches nothing more after limit - 35 s: its last launch and ncu's report fit in the rest
  timeout -k 10 "$limit" "$NCU" --clock-control none --profile-from-start off --cache-control all --print-units base \
    --csv --page raw --metrics "$METRICS" --log-file "$LOGS/raw_$algo.csv" \
    "$PY" -m benchmarks.ncu workload --algos "$algo" --seqs "$seqs" --manifest "$LOGS/manifest_$algo.json" \
    --max-seconds $((limit - 35)) > "$LOGS/ncu_$algo.log" 2>&1
  local rc=$?
  tail -n 3 "$LOGS/ncu_$algo.log"
  local rows=$(grep -c '^"' "$LOGS/raw_$algo.csv" 2>/dev/null)
  echo "$algo: rc=$rc, $(($(date +%s) - t0)) s of $limit, $((rows > 2 ? rows - 2 : 0)) launches profiled" \
    | tee -a "$SUMMARY"
  CSVS+=("$LOGS/raw_$algo.csv") MANIFESTS+=("$LOGS/manifest_$algo.json")  # compare leaves out what does not match
}

# budgets (s) and what each leaves for those after it; one that finishes early leaves more for the rest
profile flash1 1024,4096,16384 100 210
profile naive 1024,4096,16384 110 110
profile flash2 1024,4096,16384,32768 80 55
profile hopper 1024,4096,16384,32768 300 15

if ((${#CSVS[@]})); then
  "$PY" -m benchmarks.ncu compare --csv "${CSVS[@]}" --manifest "${MANIFESTS[@]}" --out "$OUT/ncu.json" \
    2>&1 | tee -a "$SUMMARY"
fi
echo "total: $(($(date +%s) - START)) s of TOTAL_S=$TOTAL_S" | tee -a "$SUMMARY"
tar -czf "$OUT/run_ncu_logs.tar.gz" -C "$LOGS" . 2>/dev/null
ls -la "$OUT"
