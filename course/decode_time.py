"""Predicted time of a Flash-Decoding launch (gpusim.decode.DecodeLaunch), until gpusim.simulate("split_kv")
prices decode itself: the one place the decode notebook's predictions come from.

It applies the steps of gpusim/cost.py to decode's kernels, whose programs do one thing: stream their K/V
chunks. Per kernel:
- occupancy: a program holds its query rows and NUM_STAGES buffers of one K and one V chunk in shared
  memory (4 warps, as kernels/decode.py launches it); gpusim.occupancy gives the programs an SM keeps;
- one program's critical path (the latency term): a prologue that waits for the cache length and then
  its query rows, then per chunk one DRAM latency for the block-table entry (paged), one for the K and V
  chunk, and the chunk's transfer at one SM's port rate, shared by the programs resident on that SM;
  waves of programs run one after the other (Little's law: few programs, few bytes in flight);
- the bandwidth term: every byte the kernel moves (gpusim.decode.count) at the DRAM bandwidth; decode
  re-reads nothing, so L2 serves none of it;
- the compute term: gpusim.decode.flops at the tensor-core, CUDA-core and special-function rates;
- time = the largest of the three + the launch overhead.
"""
import math

from gpusim import decode
from gpusim.hardware import STATS_BYTES
from gpusim.occupancy import REGISTER_BASE, WARP, Resources, occupancy

GPU = "H200-measured"  # the lent H200's measured rates (gpusim/hardware.py)
NUM_WARPS, NUM_STAGES = 4, 3  # kernels/decode.py's launch


def relaunch(launch, gpu=GPU):
    """The same launch priced on another GPU preset (the splits stay as chosen)."""
    return decode.make_launch(batch=launch.batch, heads=launch.heads, kv_heads=launch.kv_heads,
                              head_dim=launch.head_dim, seq=launch.seq, seq_kv=launch.seq_kv,
                              num_splits=launch.num_splits, block_kv=launch.block_kv, page_size=launch.page_size,
                              grouped=launch.grouped, causal_align=launch.causal_align, dtype=launch.dtype, gpu=gpu)


def resources(launch, kernel):
    """Shared memory and registers of one program (registers: REGISTER_BASE plus its fp32 tiles)."""
    d, e = launch.head_dim, launch.itemsize
    if kernel == "reduce":
        tiles = launch.padded_splits * (d + 1) * STATS_BYTES
        return Resources(NUM_WARPS, 1, REGISTER_BASE + -(-tiles // (4 * WARP * NUM_WARPS)), 0, 0, False)
    shared = launch.padded_rows * d * e + NUM_STAGES * 2 * launch.block_kv * d * e
    tiles = launch.padded_rows * (d + launch.block_kv) * 4  # acc and S_ij in fp32
    return Resources(NUM_WARPS, NUM_STAGES, REGISTER_BASE + -(-tiles // (4 * WARP * NUM_WARPS)), shared, 0, False)


def kernel_terms(launch, kernel):
    """{programs, blocks_per_sm, busy_sms, steps, bandwidth_s, latency_s, compute_s, predicted_s} of one kernel."""
    g, L = launch.gpu, launch
    moved = sum(r + w for (k, _), (r, w) in decode.count(L).items() if k == kernel)
    mm, other, exps = decode.flops(L)[kernel]
    programs = decode.programs(L, kernel)
    resident = occupancy(g, resources(L, kernel)).blocks_per_sm
    per_sm = min(resident, -(-programs // g.sm_count))  # programs sharing one SM's port
    waves = math.ceil(programs / (g.sm_count * resident))
    port = g.port_bytes_per_s("hbm") / per_sm
    if kernel == "reduce":
        steps, step_s = 1, g.hbm_latency_s + (L.padded_splits * (L.head_dim + 1) * STATS_BYTES) / port
    else:
        steps = int(L.chunks_per_split.max())
        hops = 1 if L.page_size is None else 2  # paged: the block-table entry first, then the K and V rows
        step_s = hops * g.hbm_latency_s + 2 * L.block_kv * L.head_dim * L.itemsize / port
    latency = waves * (2 * g.hbm_latency_s + steps * step_s)
    compute = mm / g.matmul_flops_per_s(L.dtype) + (other - exps) / g.fp32_flops_per_s + exps / g.sfu_ops_per_s
    bandwidth = moved / g.hbm_bytes_per_s
    return {"programs": programs, "blocks_per_sm": resident, "busy_sms": min(programs, g.sm_count), "steps": steps,
            "bytes": moved, "bandwidth_s": bandwidth, "latency_s": latency, "compute_s": compute,
            "predicted_s": max(bandwidth, latency, compute) + g.launch_overhead_s}


def predict(launch, gpu=GPU):
    """{kernel: kernel_terms} and "total_s", the launch's kernels one after the other, on `gpu`."""
    L = relaunch(launch, gpu)
    out = {kernel: kernel_terms(L, kernel) for kernel in L.kernels}
    return out | {"total_s": sum(t["predicted_s"] for t in out.values())}


def predicted_s(gpu=GPU, **launch):
    """Predicted seconds of decode.make_launch(**launch) on `gpu` (its splits chosen for that GPU)."""
    return predict(decode.make_launch(gpu=gpu, **launch), gpu)["total_s"]


def bytes_moved(launch):
    return sum(r + w for r, w in decode.count(launch).values())


def idle_share(launch):
    """The share of the SMs the main kernel leaves without a program."""
    return 1 - min(1.0, decode.programs(launch, launch.kernels[0]) / launch.gpu.sm_count)

