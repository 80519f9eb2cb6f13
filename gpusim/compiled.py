"""Registers, spills and shared memory of the project's Triton kernels as compiled for an architecture,
read off triton's compiler and ptxas by benchmarks/resources.py (results/sm90_resources.json holds the
same rows with the triton version; tests/test_occupancy.py checks the two agree).

Key: (arch, kernel, head_dim, dtype, causal, block_q, block_kv, num_warps, num_stages).
Value: (registers per thread, spill bytes per thread (stores + loads), shared bytes per block).
"""
TRITON = None
COMPILED = {}
