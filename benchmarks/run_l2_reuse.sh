#!/usr/bin/env bash
# The L2's re-reads on the lent H200 (benchmarks/l2_reuse.py): one ncu over 57 launches, then $OUT/l2_reuse.json.
#
#     OUT=$OUT bash benchmarks/run_l2_reuse.sh        # from the repository root; about a minute
source benchmarks/gpu_env.sh
NCU=${NCU:-/usr/local/cuda/bin/ncu}
LOGS=$(mktemp -d /tmp/l2_reuse_logs.XXXX)
timeout 40 "$NCU" --query-metrics --query-metrics-mode all > "$LOGS/query_metrics.txt" 2>&1
METRICS=$("$PY" -m benchmarks.l2_reuse metrics --available "$LOGS/query_metrics.txt")
echo "metrics: $METRICS"
timeout -k 10 240 "$NCU" --clock-control none --profile-from-start off --cache-control all --print-units base \
  --csv --page raw --metrics "$METRICS" --log-file "$LOGS/raw.csv" \
  "$PY" -m benchmarks.l2_reuse workload --manifest "$LOGS/manifest.json" --max-seconds 180 > "$LOGS/ncu.log" 2>&1
echo "ncu: rc=$?, $(($(date +%s) - START)) s"
tail -n 3 "$LOGS/ncu.log"
"$PY" -m benchmarks.l2_reuse compare --csv "$LOGS/raw.csv" --manifest "$LOGS/manifest.json" --out "$OUT/l2_reuse.json"
cp "$LOGS/raw.csv" "$OUT/l2_reuse_raw.csv"
