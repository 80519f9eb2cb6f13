#!/usr/bin/env bash
# Issue 25 on two GPUs of one host, in one call of at most 9 minutes: the link microbenchmark, the project's
# outputs checked, its ring, zigzag, Ulysses and all-gather attention timed, PyTorch's context_parallel (its own
# process: a failed call leaves SDPA patched), one GPU's flash2 and SDPA, then results/h200x2/cp.json with the
# model beside.
#
#     bash benchmarks/run_cp.sh            # OUT=results/h200x2 unless set
set -u
OUT=${OUT:-results/h200x2}
mkdir -p "$OUT" /tmp/shim
ln -sfn "$PWD/kernels" /tmp/shim/gpusim_kernels
export PYTHONPATH=/tmp/shim:$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
# NVLink multicast is not allowed on the lent machines: NCCL, torch's symmetric memory and NVSHMEM stay off it
# (benchmarks/cp.py sets the same before torch starts).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
RUN="python -m torch.distributed.run --standalone --nproc-per-node 2 -m benchmarks.cp --out $OUT"
nvidia-smi topo -m > "$OUT/topology.txt" 2>&1
# the timeouts add up to 8 min 50 s; each part starts no new shape after its --max-seconds
timeout 50 $RUN --part link --max-seconds 40
timeout 100 $RUN --part check --max-seconds 80   # outputs against float64, bytes against gpusim's count (compiles)
timeout 160 $RUN --part project --max-seconds 130
timeout 110 $RUN --part torch_cp --max-seconds 80
timeout 110 python -m benchmarks.cp --out "$OUT" --part single --max-seconds 80
python -m benchmarks.cp --out "$OUT" --part merge             # the model on the measured link
