"""Standard attention's three launches replayed from a CUDA graph, each kernel alone and the three together, from
shapes of one wave to several: what each launch adds to a graph-replayed call, and which kernel the model prices
wrong where the held-out sets' naive rows of 12-40 µs are priced 1.2-1.7x slow.

    python -m benchmarks.naive_launches --out $OUT                                 # GPU: $OUT/naive_launches.json
    TRITON_INTERPRET=1 python -m benchmarks.naive_launches --out /tmp/p --smoke    # CPU: every code path, tiny

Per shape (fp16, batch 1, the kernel's default tiles): qk, softmax and pv each launched alone on the inputs the
call would give it, and naive_attention whole ("all"), the median GPU time replayed from a CUDA graph with the inputs
rotated among as many copies as benchmarks.heldout makes (at most 4: a small shape's inputs stay in L2), as the
held-out sets time a forward. Then one, two and three
empty kernels in a row, one program each and 132 each, replayed: what a launch adds inside a graph. Rows: {kernel,
batch, heads, seq, head_dim, causal, block_q, block_kv, copies, ms}; the empty kernels' {kernel: "empty", launches,
programs, ms}.
"""
from itertools import product

import torch
import triton

from benchmarks import probe
from benchmarks.bench import cycling
from benchmarks.heldout import _copies
from gpusim_kernels.launch import forward_launch, launch
from gpusim_kernels.naive import _parts, naive_attention, pv_kernel, qk_kernel, softmax_kernel
from gpusim.passes.naive import score_row

HEADS, SEQS, HEAD_DIMS, CAUSAL = (4, 16, 64), (256, 512, 1024, 2048), (64, 128), (False, True)
LARGE = ((256, 2048, 64),)  # (heads, seq, head_dim): a shape of many waves beside them
PROGRAMS = (1, 132)
SMOKE = dict(HEADS=(2,), SEQS=(32,), HEAD_DIMS=(16,), CAUSAL=(True,), LARGE=(), PROGRAMS=(1,))


@triton.jit
def _empty(x_ptr):
    pass


def kernel_calls(q, k, v, causal):
    """{kernel: fn()} launching each of naive_attention's kernels alone, as the call launches it, and the call."""
    cfg, grids, consts = forward_launch("naive", q, k, v, causal, None, None, None, None, _parts)
    ld = score_row(cfg)
    s = torch.randn((*q.shape[:3], ld), dtype=q.dtype, device=q.device)
    p, o = torch.rand_like(s), torch.empty_like(q)
    args = {"qk": (q, k, s, cfg.seq, cfg.seq_kv, ld, cfg.head_dim**-0.5), "softmax": (s, p, cfg.seq, cfg.seq_kv, ld),
            "pv": (p, v, o, cfg.seq, cfg.seq_kv, ld)}
    kernels = {"qk": qk_kernel, "softmax": softmax_kernel, "pv": pv_kernel}
    calls = {name: lambda name=name: launch(kernels[name], grids[name], *args[name], **consts[name]) for name in kernels}
    return cfg, calls | {"all": lambda: naive_attention(q, k, v, causal=causal)}


def measure_shapes(results):
    shapes = [(h, n, d, c) for h, n, d, c in product(HEADS, SEQS, HEAD_DIMS, CAUSAL)]
    for heads, seq, head_dim, causal in shapes + [(h, n, d, c) for h, n, d in LARGE for c in CAUSAL]:
        shape = (1, heads, seq, head_dim)
        sets = [[torch.randn(shape, device=probe.DEVICE, dtype=torch.float16) for _ in range(3)]
                for _ in range(_copies(3 * 2 * heads * seq * head_dim))]
        made = [kernel_calls(*s, causal) for s in sets]
        cfg = made[0][0]
        for kernel in ("qk", "softmax", "pv", "all"):
            call = cycling([calls[kernel] for _, calls in made])
            row = dict(kernel=kernel, batch=1, heads=heads, seq=seq, head_dim=head_dim, causal=causal,
                       block_q=cfg.block_q, block_kv=cfg.block_kv, copies=len(sets))
            results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(call)}))
            print(f"h={heads} N={seq} d={head_dim} causal={causal} {kernel}: {row.get('ms', row.get('error'))}",
                  flush=True)
        del sets, made


def measure_empty(results):
    y = torch.empty(1, device=probe.DEVICE)
    for programs, launches in product(PROGRAMS, (1, 2, 3)):
        def call():
            for _ in range(launches):
                _empty[(programs,)](y)
        row = dict(kernel="empty", launches=launches, programs=programs)
        results.add(probe.attempt(row, lambda: {"ms": probe.graph_ms(call)}))
        print(f"{launches} empty kernels of {programs} programs: {row.get('ms', row.get('error'))}", flush=True)


def measure(results):
    measure_empty(results)
    measure_shapes(results)


if __name__ == "__main__":
    probe.script(__doc__, "naive_launches.json", measure, globals())
