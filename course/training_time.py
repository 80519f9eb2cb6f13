"""Predicted time of one training step of attention (forward, then backward), until gpusim.simulate(...,
backward=True) prices the backward itself: the one place the training notebook's predicted times come from.

The forward is gpusim.simulate's prediction (its full time model: occupancy, latency, waves). The backward
is priced kernel by kernel as a roofline, from gpusim.backward's counts: the larger of its memory time
(the bytes the SMs move at the L2 bandwidth, the bytes that reach DRAM, gpusim.backward.first_touch, at
the DRAM bandwidth) and its compute time (matmul FLOPs at the tensor-core peak, exponentials on the special
function units, the rest on the CUDA cores, one after the other), plus the launch overhead. A roofline
assumes every SM busy and every latency hidden, so it is a lower bound of what the full model would say.
"""
import gpusim
from gpusim import backward

GPU = "H200-measured"  # the lent H200's measured rates (gpusim/hardware.py)


def backward_kernel_times(cfg):
    """{kernel: {"memory_s", "compute_s", "predicted_s"}} of one backward configuration (backward.config)."""
    g = cfg.gpu
    counts, dram, flops = backward.count(cfg), backward.first_touch(cfg), backward.flops(cfg)
    out = {}
    for kernel in backward.KERNELS[cfg.algo]:
        sm_bytes = sum(r + w for (k, _), (r, w) in counts.items() if k == kernel)
        dram_bytes = sum(r + w for (k, _), (r, w) in dram.items() if k == kernel)
        mm, other, exps = flops[kernel]
        memory = max(sm_bytes / (g.l2_bytes_per_s or g.hbm_bytes_per_s), dram_bytes / g.hbm_bytes_per_s)
        compute = mm / g.matmul_flops_per_s(cfg.dtype) + (other - exps) / g.fp32_flops_per_s + exps / g.sfu_ops_per_s
        out[kernel] = {"memory_s": memory, "compute_s": compute,
                       "predicted_s": max(memory, compute) + g.launch_overhead_s}
    return out


def step_times(algo, *, seq, head_dim, heads=1, batch=1, causal=False, dtype="fp16", gpu=GPU):
    """{"forward_s", "backward_s", "step_s"} of one attention call: gpusim's forward prediction and the
    backward's roofline, each with gpusim's default blocks for the GPU."""
    shape = dict(seq=seq, head_dim=head_dim, heads=heads, batch=batch, causal=causal, dtype=dtype, gpu=gpu)
    forward = gpusim.simulate(algo, **shape).predicted_time_s
    back = sum(t["predicted_s"] for t in backward_kernel_times(backward.config(algo, **shape)).values())
    return {"forward_s": forward, "backward_s": back, "step_s": forward + back}
