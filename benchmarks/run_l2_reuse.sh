#!/usr/bin/env bash
# The L2's re-reads on the lent H200 (benchmarks/l2_reuse.py): one ncu over 19 launches a pattern, then
# $OUT/$NAME.json and $OUT/${NAME}_raw.csv.
#
#     OUT=$OUT bash benchmarks/run_l2_reuse.sh                                          # run 65, about a minute
#     PATTERNS=spread_writing NAME=l2_reuse_writing OUT=$OUT bash benchmarks/run_l2_reuse.sh     # run 67
source benchmarks/gpu_env.sh
PATTERNS=${PATTERNS:-every_sm,spread,own}
NAME=${NAME:-l2_reuse}
COMMAND="OUT=\$OUT bash benchmarks/run_l2_reuse.sh"
[[ $PATTERNS == every_sm,spread,own && $NAME == l2_reuse ]] || COMMAND="PATTERNS=$PATTERNS NAME=$NAME $COMMAND"
NCU=${NCU:-/usr/local/cuda/bin/ncu}
LOGS=$(mktemp -d /tmp/l2_reuse_logs.XXXX)
timeout 40 "$NCU" --query-metrics --query-metrics-mode all > "$LOGS/query_metrics.txt" 2>&1
METRICS=$("$PY" -m benchmarks.l2_reuse metrics --available "$LOGS/query_metrics.txt")
echo "metrics: $METRICS"
timeout -k 10 240 "$NCU" --clock-control none --profile-from-start off --cache-control all --print-units base \
  --csv --page raw --metrics "$METRICS" --log-file "$LOGS/raw.csv" \
  "$PY" -m benchmarks.l2_reuse workload --manifest "$LOGS/manifest.json" --patterns "$PATTERNS" --command "$COMMAND" \
  --max-seconds 180 > "$LOGS/ncu.log" 2>&1
echo "ncu: rc=$?, $(($(date +%s) - START)) s"
tail -n 3 "$LOGS/ncu.log"
"$PY" -m benchmarks.l2_reuse compare --csv "$LOGS/raw.csv" --manifest "$LOGS/manifest.json" --out "$OUT/$NAME.json"
cp "$LOGS/raw.csv" "$OUT/${NAME}_raw.csv"
