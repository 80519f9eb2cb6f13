#!/usr/bin/env bash
# Run B: one call on the lent H200 for issue 24's kernel side, each job's JSON straight into $OUT.
#
#     OUT=$OUT bash benchmarks/run_b.sh          # from the repository root; at most TOTAL_S (515 s)
#
# Jobs, in order of what matters most (each under `timeout`, capped by what is left of TOTAL_S less what the
# later jobs are promised, so a hanging job cannot take their time; a failing one does not stop the rest):
#   tests_new    compiled: custom ops under torch.compile (inductor too), launch()'s direct path (bit for bit
#                the ordinary launch), decode_attention's kept plan, DecodePlan (no sync, CUDA graph
#                replay as lengths grow, PDL), the Llama-shaped decode cases              -> log only
#   serving      Llama-3-8B decoding, 32 layers per token over a growing cache           -> serving.json
#   host         per-call wall cost on small shapes (benchmarks/host.py, if present)      -> host.json
#   tests_all    tests/test_{kernels,backward_kernels,decode_kernels,hopper,launch_kernels,docs}.py compiled, the time left -> log
# Logs and a summary go into $OUT/run_b_logs.tar.gz; the summary is printed at the end.
source benchmarks/gpu_env.sh
TOTAL_S=${TOTAL_S:-515}
LOGS=$(mktemp -d /tmp/run_b_logs.XXXX)
SUMMARY=$LOGS/summary.txt

{
  date -u
  git rev-parse HEAD 2>/dev/null
  nvidia-smi -L
  "$PY" -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', \
triton.__version__, torch.cuda.get_device_name())"
  "$PY" -c "import gpusim, gpusim_kernels, benchmarks.serving; print('imports ok')" 2>&1 | tail -1
} > "$LOGS/environment.txt" 2>&1
cat "$LOGS/environment.txt"
printf '%-10s %-8s %5s %6s  %s\n' job status s limit result > "$SUMMARY"

result() {  # result NAME: the JSON's rows (and errors), or pytest's last line
  if [[ -f "$OUT/$1.json" ]]; then
    "$PY" -c "import json, sys; rows = json.load(open(sys.argv[1])).get('rows', []); \
print(len(rows), 'rows,', sum('error' in r for r in rows), 'with an error')" "$OUT/$1.json" 2>/dev/null
  else
    grep -E '(passed|failed|error)' "$LOGS/$1.log" | tail -n 1 | cut -c1-120
  fi
}

job() {  # job NAME LIMIT_S RESERVE_S COMMAND...: at most LIMIT_S, leaving RESERVE_S of TOTAL_S to later jobs
  local name=$1 limit=$2 reserve=$3
  shift 3
  local left=$((TOTAL_S - ($(date +%s) - START) - reserve))
  ((limit > left)) && limit=$left
  if ((limit < 20)); then
    printf '%-10s %-8s %5s %6s  %s\n' "$name" skipped 0 "$limit" - >> "$SUMMARY"
    return
  fi
  local t0=$(date +%s) status=ok
  echo "=== $name (limit $limit s) $(date -u +%T)"
  timeout -k 10 "$limit" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$LOGS/$name.log"
  ((rc == 0)) || status="rc=$rc"
  ((rc == 124 || rc == 137)) && status=timeout
  printf '%-10s %-8s %5s %6s  %s\n' "$name" "$status" $(($(date +%s) - t0)) "$limit" "$(result "$name")" >> "$SUMMARY"
}

PYTEST=("$PY" -m pytest -q -p no:cacheprovider -rfE)
job tests_new 140 370 "${PYTEST[@]}" tests/test_custom_ops.py tests/test_decode_kernels.py tests/test_launch_kernels.py \
  -k "compiled or ops or plan or graph or synchronise or dependent or bad_run or direct or device_lengths or (output_matches and cuda and kv8)"
job serving 215 150 "$PY" -m benchmarks.serving --out "$OUT" --max-minutes 2.9
if [[ -f benchmarks/host.py ]]; then
  job host 70 80 "$PY" -m benchmarks.host --out "$OUT"
fi
left=$((TOTAL_S - ($(date +%s) - START) - 5))
job tests_all "$left" 0 "${PYTEST[@]}" tests/test_kernels.py tests/test_backward_kernels.py \
  tests/test_decode_kernels.py tests/test_hopper.py tests/test_launch_kernels.py tests/test_docs.py

echo "total: $(($(date +%s) - START)) s of TOTAL_S=$TOTAL_S" >> "$SUMMARY"
ls -la "$OUT" >> "$SUMMARY"
tar -czf "$OUT/run_b_logs.tar.gz" -C "$LOGS" . 2>/dev/null
echo
echo "===== Run B summary ($(date -u +%T))"
cat "$SUMMARY"
grep -A 20 'eager ratio' "$LOGS/serving.log" 2>/dev/null
