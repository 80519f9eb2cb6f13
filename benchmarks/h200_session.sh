#!/usr/bin/env bash
# One call on the lent GPU machine: the named jobs, each a list of commands, in parallel streams when the
# machine has several GPUs (one GPU per stream), writing into $OUT. What each job runs is below; the JSON
# files name the GPU, versions, date and command themselves. Logs go into $OUT/logs.tar.gz.
#
#     OUT=/path bash benchmarks/h200_session.sh probe,decode,hopper        # streams split by commas
#     OUT=/path bash benchmarks/h200_session.sh "probe decode"             # one stream, one after the other
set -u
OUT=${OUT:?set OUT}
mkdir -p "$OUT/logs" /tmp/shim
ln -sfn "$PWD/kernels" /tmp/shim/gpusim_kernels
ln -sfn "$PWD/course" /tmp/shim/gpusim_course
export PYTHONPATH=/tmp/shim:$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1

ncu_pair() {  # ncu_pair JOB WORKLOAD_ARGS...: benchmarks.ncu's workload under Nsight Compute twice, then $OUT/JOB.json
  # first with benchmarks.ncu's metrics, less the optional local-memory counters where this Nsight Compute lacks
  # them; then with the DRAM counters alone, which Nsight Compute collects in one pass (no replay's writes)
  local name=$1 run
  shift
  [ -s "$OUT/logs/query_metrics.txt" ] ||  # once a call: the list is about 100 MB
    /usr/local/cuda/bin/ncu --query-metrics --query-metrics-mode all > "$OUT/logs/query_metrics.txt" 2>&1
  for run in raw:"$(python -m benchmarks.ncu metrics --available "$OUT/logs/query_metrics.txt")" \
             dram:"$(python -m benchmarks.ncu metrics --dram)"; do
    timeout "${NCU_S:-240}" /usr/local/cuda/bin/ncu --clock-control none --profile-from-start off --cache-control all \
      --print-units base --csv --page raw --metrics "${run#*:}" --log-file "$OUT/logs/${run%%:*}_$name.csv" \
      python -m benchmarks.ncu workload --manifest "$OUT/logs/manifest_${run%%:*}_$name.json" "$@" \
      --command "NCU_S=${NCU_S:-240} OUT=\$OUT bash benchmarks/h200_session.sh $name"
  done
  python -m benchmarks.ncu compare --csv "$OUT/logs/raw_$name.csv" --dram-csv "$OUT/logs/dram_$name.csv" \
    --manifest "$OUT/logs/manifest_raw_$name.json" --dram-manifest "$OUT/logs/manifest_dram_$name.json" \
    --out "$OUT/$name.json"
}

job() {  # job NAME: the commands of one job; their output goes to $OUT/logs/NAME.log
  case $1 in
    probe) OUT=$OUT bash benchmarks/gpu_probe.sh ;;
    decode) python -m benchmarks.bench_decode --out "$OUT/decode.json" --max-minutes "${DECODE_MINUTES:-3}"
            python -m pytest -q -x -p no:cacheprovider tests/test_decode_kernels.py ;;
    hopper) python -m benchmarks.hopper_check --out "$OUT/hopper_variants.json" --max-seconds 200 ;;
    sdpa) python -m benchmarks.sdpa_backends --out "$OUT/sdpa_backends.json" ;;
    bench) python -m benchmarks.bench --out "$OUT/bench.json" --max-minutes "${BENCH_MINUTES:-6}" ;;
    backward) python -m benchmarks.bench_bwd --out "$OUT/bench_bwd.json" --max-minutes "${BWD_MINUTES:-3}"
              python -m pytest -q -p no:cacheprovider tests/test_backward_kernels.py -rfE ;;
    kernel_tests) python -m pytest -q -p no:cacheprovider tests/test_kernels.py tests/test_hopper.py -rfE ;;
    entry_tests) timeout -k 5 "${ENTRY_S:-180}" python -m pytest -q -p no:cacheprovider tests/test_batches_kernels.py \
                   tests/test_launch_kernels.py tests/test_custom_ops.py tests/test_decode_kernels.py \
                   tests/test_fuzz_kernels.py -rfE ;;
    tiles_bwd) python -m benchmarks.tiles_bwd --out "$OUT" --max-minutes "${BWD_MINUTES:-4}" ;;
    tiles) python -m benchmarks.tiles --out "$OUT" --max-minutes "${TILES_MINUTES:-2.2}" ${TILES_SKIP:+--skip "$TILES_SKIP"} ;;
    bench_fp16_d128) python -m benchmarks.bench --out "$OUT/bench_fp16_d128.json" --dtypes fp16 --head-dims 128 \
                       --without sdpa_math --max-minutes "${BENCH_MINUTES:-4}" ;;
    bench_bf16_d128) python -m benchmarks.bench --out "$OUT/bench_bf16_d128.json" --dtypes bf16 --head-dims 128 \
                       --without sdpa_math --max-minutes "${BENCH_MINUTES:-4}" ;;
    bench_bf16_d64) python -m benchmarks.bench --out "$OUT/bench_bf16_d64.json" --dtypes bf16 --head-dims 64 \
                      --without sdpa_math --max-minutes "${BENCH_MINUTES:-4}" ;;
    bench_d64_causal) python -m benchmarks.bench --out "$OUT/bench_d64_causal.json" --dtypes fp16,bf16 --head-dims 64 \
                        --causal yes --without sdpa_math --max-minutes "${BENCH_MINUTES:-4}" ;;
    bench_d128_causal) python -m benchmarks.bench --out "$OUT/bench_d128_causal.json" --dtypes fp16 --head-dims 128 \
                         --causal yes --without sdpa_math --max-minutes "${BENCH_MINUTES:-2.5}" ;;
    bwd_naive) python -m benchmarks.bench_bwd --out "$OUT/bench_bwd_naive.json" --providers naive \
                 --max-minutes "${BWD_MINUTES:-3}" ;;
    decode_splits) python -m benchmarks.decode_splits --out "$OUT" --max-minutes "${DECODE_MINUTES:-4}"
                   python -m pytest -q -x -p no:cacheprovider tests/test_decode_kernels.py ;;
    decode_rows) python -m benchmarks.decode_rows --out "$OUT" --max-minutes "${DECODE_MINUTES:-3}" ;;
    split_lone) python -m benchmarks.split_lone --out "$OUT" --max-minutes "${DECODE_MINUTES:-3}" ;;
    split_lone_others) python -m benchmarks.split_lone --out "$OUT" --others --max-minutes "${DECODE_MINUTES:-5}" ;;
    split_lone_d64) python -m benchmarks.split_lone --out "$OUT" --d64 --max-minutes "${DECODE_MINUTES:-3}" ;;
    ragged_wave) python -m benchmarks.ragged_wave --out "$OUT" --max-minutes "${DECODE_MINUTES:-4}" ;;
    paged_read) python -m benchmarks.paged_read --out "$OUT" ;;
    decode_tiles) python -m benchmarks.decode_tiles --out "$OUT" --max-minutes "${DECODE_MINUTES:-4}" ;;
    softmax_issue) /usr/local/cuda/bin/ncu --clock-control none --cache-control all --print-units base -k regex:softmax \
                     --section SchedulerStats --section WarpStateStats --section Occupancy --section SpeedOfLight \
                     --csv --page details --log-file "$OUT/ncu_softmax.csv" python -m benchmarks.softmax_issue workload
                   python -m benchmarks.softmax_issue compare "$OUT/ncu_softmax.csv" ;;
    hopper_tests) python -m pytest -q -p no:cacheprovider tests/test_hopper.py -rfE ;;
    setup) python -m benchmarks.program_setup --out "$OUT" ;;
    lone) python -m benchmarks.lone_program --out "$OUT" ;;
    naive_launches) python -m benchmarks.naive_launches --out "$OUT" ;;
    qk_parts) python -m benchmarks.naive_launches --out "$OUT" --qk-parts ;;
    unaligned) python -m benchmarks.unaligned --out "$OUT" ;;
    heldout) for seed in ${HELDOUT_SEEDS:?}; do  # new sets, one file each in $OUT (their logs in logs.tar.gz: the device
               (( SECONDS < ${HELDOUT_SECONDS:-300} )) || break  # tool brings back at most eight files)
               python -m benchmarks.heldout --seed "$seed" --out "$OUT" --max-minutes 2 ${HELDOUT_GPU:+--gpu "$HELDOUT_GPU"}
             done ;;
    heldout_flash2) for seed in ${HELDOUT_SEEDS:?}; do  # the sets' flash2 rows again, after a change to its kernel
                      kept=results/h200/heldout_$seed.json; [ "$seed" = 2026 ] && kept=results/h200/heldout.json
                      python -m benchmarks.heldout --seed "$seed" --only flash2 --keep "$kept" --out "$OUT" --max-minutes 3
                    done ;;
    heldout_train) python -m benchmarks.host --out "$OUT"  # the host's per-call cost in the same call as the steps
                   for seed in ${HELDOUT_SEEDS:?}; do  # the sets' training steps again, timed per call as a loop calls them
                     kept=results/h200/heldout_$seed.json; [ "$seed" = 2026 ] && kept=results/h200/heldout.json
                     (( SECONDS < ${TRAIN_SECONDS:-420} )) || break
                     python -m benchmarks.heldout --seed "$seed" --kind train --keep "$kept" --out "$OUT" \
                       --max-minutes 1.2 --warm-seconds 15
                   done ;;
    tiles_d128_long) python -c "import json; d = json.load(open('results/h200/tiles.json')); d['rows'] = [r for r in d['rows']
                       if not (r['head_dim'] == 128 and r['seq'] > 2048)]; json.dump(d, open('/tmp/skip.json', 'w'))"
                     python -m benchmarks.tiles --out "$OUT" --algos flash2 --skip /tmp/skip.json --max-minutes 3 ;;
    bench_bwd) python -m benchmarks.bench_bwd --out "$OUT/bench_bwd.json" --max-minutes "${BWD_MINUTES:-3}" ;;
    backward_tests) python -m pytest -q -p no:cacheprovider tests/test_backward_kernels.py -rfE ;;
    ncu) ncu_pair ncu --seqs 1024,4096,16384,32768 ;;  # naive and flash1 to 16,384 (benchmarks.ncu.LONGEST)
    flash1_l1) timeout "${NCU_S:-240}" /usr/local/cuda/bin/ncu --clock-control none --profile-from-start off \
                 --cache-control all --print-units base --csv --page raw \
                 --metrics "$(python -m benchmarks.flash1_l1 metrics)" --log-file "$OUT/logs/raw_flash1_l1.csv" \
                 python -m benchmarks.flash1_l1 work --manifest "$OUT/logs/manifest_flash1_l1.json"
               python -m benchmarks.flash1_l1 time --csv "$OUT/logs/raw_flash1_l1.csv" \
                 --manifest "$OUT/logs/manifest_flash1_l1.json" --out "$OUT/flash1_l1.json" ;;
    bench_flash1) python -m benchmarks.bench --out "$OUT/bench_flash1.json" --max-minutes "${BENCH_MINUTES:-3}" \
                    --without naive,torch_naive,sdpa_math,flash2,hopper,sdpa_flash,sdpa_efficient,sdpa_cudnn
                  python -m pytest -q -p no:cacheprovider tests/test_kernels.py -k flash1 -rfE ;;
    host) python -m benchmarks.host --out "$OUT" ;;
    preset) python -m benchmarks.ceilings --out "$OUT/ceilings.json"  # what a measured preset's constants come from
            for name in latency bandwidth matmul_tiles; do  # (benchmarks/h200_constants.py --results DIR)
              timeout -k 10 150 python -m "benchmarks.$name" --out "$OUT"
            done
            python -m benchmarks.matmul_tiles --more --out "$OUT"
            python -m benchmarks.lone_program --out "$OUT"
            python -m benchmarks.host --out "$OUT" ;;
    # tensor_pipe: ncu's CSVs and its own tensor_pipe.log in a folder of their own (in $OUT/logs that log would
    # overwrite this job's, which the shell holds open)
    tensor_pipe) python -m benchmarks.tensor_pipe --out "$OUT" --logs "$OUT/logs/tensor_pipe" --max-seconds 85 ;;
    ncu_bwd) ncu_pair ncu_bwd --passes backward --seqs 1024,4096 ;;
    ncu_d128) ncu_pair ncu_d128 --seqs 1024,4096,16384,32768 --head-dims 128 ;;  # the forward's d = 128 alone
    ncu_edges) ncu_pair ncu_edges --algos flash2,hopper --seqs 24576,65536 ;;
    ncu_edges2) ncu_pair ncu_edges2 --algos flash2,hopper --seqs 40960,98304 ;;
    l2_dirty) timeout "${NCU_S:-200}" /usr/local/cuda/bin/ncu --clock-control none --profile-from-start off \
                --cache-control all --print-units base --csv --page raw --metrics "$(python -m benchmarks.l2_dirty metrics)" \
                --log-file "$OUT/l2_dirty_raw.csv" python -m benchmarks.l2_dirty workload \
                --manifest "$OUT/logs/manifest_l2_dirty.json" --command "OUT=\$OUT bash benchmarks/h200_session.sh l2_dirty"
              python -m benchmarks.l2_dirty compare --csv "$OUT/l2_dirty_raw.csv" --manifest "$OUT/logs/manifest_l2_dirty.json" \
                --out "$OUT/l2_dirty.json" ;;
    *) echo "unknown job $1" ;;
  esac > "$OUT/logs/$1.log" 2>&1
  echo "$1: exit $?, $SECONDS s into its stream"
}

stream() {  # stream GPU JOBS...: the jobs one after the other on one GPU
  local gpu=$1
  shift
  for name in "$@"; do CUDA_VISIBLE_DEVICES=$gpu job "$name"; done
}

nvidia-smi > "$OUT/logs/nvidia-smi.txt" 2>&1
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
((gpus)) || gpus=1
IFS=, read -ra streams <<< "$1"
for i in "${!streams[@]}"; do
  # shellcheck disable=SC2086  # a stream's jobs are words
  stream $((i % gpus)) ${streams[$i]} &
  ((gpus == 1)) && wait
done
wait
mv "$OUT"/*.log "$OUT"/*.txt "$OUT"/*.csv "$OUT/logs/" 2>/dev/null
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -r "$OUT/logs"
ls -la "$OUT"
