"""The split kernel's K/V loads alone: the DRAM rate of its chunks read through a block table (a paged cache,
(pages, page_size, kv_heads, d)) and from a contiguous cache ((B, kv_heads, N, d)), at 32 to 512 programs, each
summing its chunks in registers (no matmul, no softmax), so that the rate of the loads can be told from the work
beside them.

    python -m benchmarks.paged_read --out $OUT                                    # GPU: $OUT/paged_read.json
    TRITON_INTERPRET=1 python -m benchmarks.paged_read --out /tmp/probe --smoke   # CPU: every code path, tiny

Why: run 170 (split_lone.json) timed the split kernel two programs an SM (256 programs at batch 1, Llama-3-8B's
8 K/V heads, d = 128, pages of 16) at 2.17-2.53 us a step of 32 KiB: 3.3-3.9 TB/s of K/V, where bandwidth.json's
contiguous (rows, 64) tiles of 16 KiB, two 8-warp programs an SM, one stage, read 4.35 TB/s; gpusim prices that
step 13-19% fast. A paged cache keeps a token's d values of one head together (256 B at d = 128) and its kv_heads
heads side by side, so one head's chunk of 64 keys is 64 pieces of 256 B, 2 KiB apart, four pages of 16 in random
places. If these loads alone take the split kernel's step, the step is its loads', and a rate measured here (not
fitted to split_lone) can price it.

The kernel is _attend's loop (kernels/decode.py) without its arithmetic: the grid (kv_heads, batch, splits), each
program `steps` chunks of block_kv keys, the block table's entries loaded in the loop as the split kernel loads them,
4 warps and 3 stages as it launches. It does not load as the split kernel does: triton 3.6 stages in shared memory
(gpusim.passes.split_kv.kv_buffers) the loads a dot consumes, and these feed a sum, so on the H200 (run 172) it
compiled to 256 B of shared memory, no K/V buffer, and stepped slower than the split kernel (docs/perf.md, "The loads
alone"). Every program's sums are checked against torch's sums of the same keys (each
key read once: nothing skipped, nothing read twice). Timing: do_bench's median (L2 flushed between calls: the cache
is read from DRAM), at two step counts, so that the slope over steps is one step and the launch and a program's
start drop out. Rows: {layout, page_size, kv_heads, head_dim, block_kv, batch, splits, programs, programs_per_sm,
steps, bytes (K and V read), ms, bytes_per_s, n_regs, shared_bytes}.
"""
import itertools

import torch
import triton
import triton.language as tl

from benchmarks import probe

KV_HEADS, HEAD_DIM, BLOCK_KV, NUM_WARPS, NUM_STAGES = 8, 128, 64, 4, 3  # the split kernel's at Llama-3-8B's shape
PAGE_SIZES = (16, 64, None)  # None: contiguous
SPLITS = (4, 16, 32, 64)  # batch 1: 32, 128, 256 and 512 programs (of 132 SMs: a quarter, one, two and four an SM)
STEPS = (16, 64)
SMOKE = dict(KV_HEADS=2, HEAD_DIM=16, BLOCK_KV=16, PAGE_SIZES=(16, None), SPLITS=(2,), STEPS=(1, 3))


@triton.jit(do_not_specialize=["steps", "max_pages", "cache_len"])
def read_kernel(K, V, block_table, out, steps, max_pages, cache_len, KV_HEADS: tl.constexpr, D: tl.constexpr,
                Bc: tl.constexpr, P: tl.constexpr):
    """Program (kvh, b, split) sums keys [split * steps * Bc, (split + 1) * steps * Bc) of request b's K and V for
    K/V head kvh into out[b, kvh, split, :Bc] (one fp32 sum per key slot of a chunk). P == 0: contiguous."""
    kvh, b, split = tl.program_id(0), tl.program_id(1).to(tl.int64), tl.program_id(2)
    cols = tl.arange(0, D)
    acc = tl.zeros([Bc], tl.float32)
    first = split * steps
    for j in range(first, first + steps):
        keys = j * Bc + tl.arange(0, Bc)
        if P == 0:
            at = (b * KV_HEADS + kvh) * cache_len + keys  # row of the (B*kv_heads*N, d) cache
        else:
            slots = (j * Bc) // P + tl.arange(0, Bc // P)
            pages = tl.load(block_table + b * max_pages + slots)  # read Bc/P int32: the pages holding the keys
            page_of_key = tl.reshape(tl.broadcast_to(pages[:, None], (Bc // P, P)), (Bc,))
            at = (page_of_key.to(tl.int64) * P + keys % P) * KV_HEADS + kvh  # row of the (pages*P*kv_heads, d) cache
        offs = at[:, None] * D + cols[None, :]
        k_j = tl.load(K + offs)  # read Bc*d
        v_j = tl.load(V + offs)  # read Bc*d
        acc += tl.sum(k_j.to(tl.float32) + v_j.to(tl.float32), axis=1)
    tl.store(out + ((b * KV_HEADS + kvh) * tl.num_programs(2) + split) * Bc + tl.arange(0, Bc), acc)  # write Bc fp32


def cache(page_size, seq_kv, seed):
    """(K, V, block table or None, expected sums): K/V random fp16, paged (each request's pages a random permutation)
    or contiguous; the expected sums from the contiguous view in float64."""
    gen = torch.Generator(device=probe.DEVICE).manual_seed(seed)
    flat = [torch.randn(1, KV_HEADS, seq_kv, HEAD_DIM, generator=gen, device=probe.DEVICE).half() for _ in range(2)]
    if page_size is None:
        return (*flat, None)
    pages = seq_kv // page_size
    table = torch.randperm(pages, generator=gen, device=probe.DEVICE).int().view(1, pages)
    paged = []
    for x in flat:  # (1, kv_heads, N, d) -> (pages, P, kv_heads, d), page table[0, i] holding keys i*P..(i+1)*P-1
        out = torch.empty(pages, page_size, KV_HEADS, HEAD_DIM, device=probe.DEVICE, dtype=x.dtype)
        out[table[0].long()] = x[0].transpose(0, 1).reshape(pages, page_size, KV_HEADS, HEAD_DIM)
        paged.append(out)
    return (*paged, table)


def expected(k, v, table, page_size, splits):
    """What read_kernel must write: (1, kv_heads, splits, block_kv) sums in float64 of the keys each program reads."""
    both = k.sum(-1, dtype=torch.float64) + v.sum(-1, dtype=torch.float64)  # one sum a key and head
    if table is not None:  # (pages, P, kv_heads) back to (1, kv_heads, N)
        both = both[table[0].long()].flatten(0, 1).transpose(0, 1)[None]
    return both.reshape(1, KV_HEADS, splits, -1, BLOCK_KV).sum(3)


def measure_one(page_size, splits, steps, seed):
    seq_kv = splits * steps * BLOCK_KV
    k, v, table = cache(page_size, seq_kv, seed)
    out = torch.empty(1, KV_HEADS, splits, BLOCK_KV, device=probe.DEVICE, dtype=torch.float32)
    dummy = torch.zeros(1, dtype=torch.int32, device=probe.DEVICE)

    def call():
        read_kernel[(KV_HEADS, 1, splits)](k, v, dummy if table is None else table, out, steps,
                                           0 if table is None else table.shape[1], seq_kv, KV_HEADS=KV_HEADS,
                                           D=HEAD_DIM, Bc=BLOCK_KV, P=page_size or 0, num_warps=NUM_WARPS,
                                           num_stages=NUM_STAGES)
    _, compiled = probe.compiled_by(read_kernel, call)  # the first call compiles it
    want = expected(k, v, table, page_size, splits)
    if not torch.allclose(out.double(), want, rtol=1e-4, atol=1e-2):  # fp32 sums of <= 2*64*d fp16 terms a slot
        raise AssertionError(f"read_kernel's sums differ from torch's at page_size={page_size}, splits={splits}")
    ms = probe.median_ms(call)
    nbytes = 2 * seq_kv * KV_HEADS * HEAD_DIM * k.element_size()
    return {"ms": ms, "bytes": nbytes, "bytes_per_s": nbytes / (ms * 1e-3)} | probe.kernel_resources(compiled)


def measure(results):
    sms = probe.sm_count()
    for page_size, splits, steps in itertools.product(PAGE_SIZES, SPLITS, STEPS):
        row = {"layout": "contiguous" if page_size is None else "paged", "page_size": page_size,
               "kv_heads": KV_HEADS, "head_dim": HEAD_DIM, "block_kv": BLOCK_KV, "batch": 1, "splits": splits,
               "programs": KV_HEADS * splits, "programs_per_sm": KV_HEADS * splits / sms, "steps": steps,
               "num_warps": NUM_WARPS, "num_stages": NUM_STAGES}
        print(results.add(probe.attempt(row, lambda: measure_one(page_size, splits, steps, seed=splits * steps))),
              flush=True)


def main(argv=None):
    probe.script(__doc__, "paged_read.json", measure, globals(), argv)


if __name__ == "__main__":
    main()
