"""What the decode notebook shows from gpusim alone, as data: a KV-cache calculator, the split-KV schedule
step by step, both allocators serving one stream of requests, and the test of the source's "70% of that
memory is wasted". Small functions over gpusim.decode and gpusim.kvcache; no widgets, no plotting. The
measured side is course/inference/measured.py.
"""
import numpy as np

import gpusim
from gpusim import kvcache
from gpusim.decode_execute import decode_attention

STEP_SEED = 0  # the arrays split_kv_steps runs on


def kv_calculator(model="Llama-3-8B", context_tokens=8192, batch=1, dtype="fp16", gpu="H200"):
    """The KV cache of `batch` requests of `context_tokens` tokens beside the model's weights on one GPU, and the
    model's longest context (its max_position_embeddings), which `context_tokens` may pass."""
    m, g = kvcache.get_model(model), gpusim.get_gpu(gpu)
    per_token = kvcache.bytes_per_token(m, dtype)
    total = batch * context_tokens * per_token
    return {"model": m.name, "bytes per token": per_token, "bytes per request": context_tokens * per_token,
            "KV cache bytes": total, "weight bytes": m.weight_bytes, "HBM bytes": g.hbm_bytes,
            "fits": m.weight_bytes + total <= g.hbm_bytes,
            "largest batch": kvcache.max_batch(m, g, context_tokens, dtype), "longest context": m.max_tokens}


def split_kv_steps(seq_kv=300, num_splits=3, block_kv=64, page_size=16, heads=4, kv_heads=1, head_dim=16):
    """Flash-Decoding of one request, step by step, for a stepper: which program reads which chunk (its
    keys, the pages they sit in and the bytes it loads) and the running max and sum after the step; then,
    per query row, the reduce: the largest partial LSE (m_i), the sum of the weights (l_i) and each split's
    weight exp(LSE_s - m_i). Random arrays, seeded; the page table maps page i to page i."""
    rng = np.random.default_rng(STEP_SEED)
    pages = -(-seq_kv // page_size)
    q = rng.standard_normal((1, heads, 1, head_dim))
    k, v = (rng.standard_normal((pages, page_size, kv_heads, head_dim)) for _ in range(2))
    _, launch, mem = decode_attention(q, k, v, cache_seqlens=[seq_kv], block_table=np.arange(pages)[None, :],
                                      num_splits=num_splits, block_kv=block_kv, trace=True)
    steps = []
    for step in mem.steps:
        split, chunk = step.tile
        row = {"kernel": step.kernel, "program": step.program, "split": split, "chunk": chunk,
               "loads": dict(step.loads), "stores": dict(step.stores),
               "m_i": None if step.m_i is None else step.m_i.tolist(),
               "l_i": None if step.l_i is None else step.l_i.tolist(),
               "weights": step.rescale.tolist() if step.kernel == "reduce" else None}
        if step.kernel != "reduce" and chunk is not None:
            first, end = chunk * block_kv, min((chunk + 1) * block_kv, seq_kv)
            row |= {"keys": (first, end), "pages": tuple(range(first // page_size, (end - 1) // page_size + 1))}
        steps.append(row)
    return steps


def allocation(model="Llama-3-8B", steps=200, per_step=2.0, max_tokens=2048, page_size=16, slots=8, seed=0,
               until=None):
    """The same seeded stream of requests (`steps` steps of arrivals) served from the same memory (`slots`
    requests of max_tokens each) by both allocators, for its first `until` steps (default: all):
    {policy: gpusim.kvcache.Serving}."""
    reqs = kvcache.arrivals(steps, per_step, max_tokens, seed=seed)
    budget = slots * max_tokens * kvcache.bytes_per_token(model)
    return {policy: kvcache.serve(model, reqs, steps=steps if until is None else until, policy=policy,
                                  page_size=page_size, max_tokens=max_tokens, budget_bytes=budget)
            for policy in ("contiguous", "paged")}


def waste_claim_rows(users=50, max_tokens=(1024, 2048, 4096, 8192), steps=300, per_step=1.0, page_size=16,
                     model="Llama-3-8B", seed=0):
    """The source's "50 users chatting simultaneously. Pre-allocated GPU memory for max context length.
    70% of that memory is wasted.": memory for `users` requests of max_tokens each, requests of geometric
    lengths with ShareGPT's means (gpusim.kvcache.arrivals), served contiguously and paged; per max_tokens, the
    share of the reserved memory that held no token over the run, and the requests each allocator finished."""
    rows = []
    for longest in max_tokens:
        runs = allocation(model, steps, per_step, longest, page_size, users, seed)
        rows.append({"max_tokens": longest, "contiguous wasted share": runs["contiguous"].wasted_fraction,
                     "paged wasted share": runs["paged"].wasted_fraction,
                     "contiguous peak running": runs["contiguous"].peak_running,
                     "paged peak running": runs["paged"].peak_running,
                     "contiguous finished": runs["contiguous"].finished, "paged finished": runs["paged"].finished})
    return rows


def waste_claim_sentence(rows, users=50):
    """waste_claim_rows in words: the wasted shares against the source's 70%."""
    contiguous = [r["contiguous wasted share"] for r in rows]
    paged = [r["paged wasted share"] for r in rows]
    return (f"Room for {users} requests of max_tokens each: contiguous allocation left {min(contiguous):.0%} "
            f"(max_tokens {rows[0]['max_tokens']:,}) to {max(contiguous):.0%} (max_tokens {rows[-1]['max_tokens']:,}) "
            f"of what it reserved empty; paged allocation {max(paged):.1%} at most.")
