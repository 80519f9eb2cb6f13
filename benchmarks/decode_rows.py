"""Decoding several query rows a request (a speculative draft checked at once, a prompt's last chunk): the split-KV
kernel over a paged cache at 1 to 16 query rows, each beside gpusim's prediction, in one run.

    python -m benchmarks.decode_rows --out $OUT --max-minutes 3
    TRITON_INTERPRET=1 python -m benchmarks.decode_rows --out /tmp --smoke      # CPU: the code paths

Every decode row measured before had one query row, so gpusim's price for more (the split kernel's padded tile of
query rows, the split rule's count, the reduce's rows) had never been checked. Llama-3-8B's attention (32 query
heads over 8 K/V heads, d = 128, fp16, pages of 16: benchmarks/bench_decode.py's inputs and timing, a CUDA graph
replayed over input copies rotated past the L2), batch 1 and 8, caches of 4K and 32K tokens; the rows bottom-right
aligned (row r of R sees the cache's first L - R + r + 1 tokens). Provider "rule": the plan's own split count
(gpusim.decode's rule, which counts the blocks an SM keeps resident of the kernel compiled for these rows); where
it differs, "one_row_splits": the count the rule picks for one query row, so that the rule's choice is checked too.

Writes decode_rows.json: {environment, rows: [{provider, batch, seq, seq_kv, num_splits, block_kv, ms, timing,
rel_err, preset, predicted_ms}]}; predicted_ms is gpusim's on the preset (H200-measured on an H200) as the model
stood at the run (tests price it again).
"""
import sys

import torch

import gpusim
from benchmarks import bench_decode as bd  # inputs, timing, environment
from benchmarks.bench import cycling
from gpusim_kernels.decode import plan_for_cache

CASES = ((1, 4096), (1, 32768), (8, 4096), (8, 32768))
ROWS = (1, 2, 3, 4, 5, 6, 8, 12, 16)
PRESET = "H200-measured"
SMOKE = dict(cases=((1, 200),), rows=(1, 3))


def queries(sets, rows, shape, seed):
    """Each input set's q with `rows` query rows: (B, H, rows, d) fp16."""
    gen = torch.Generator(device=bd.DEVICE).manual_seed(seed)
    return [torch.randn(s["q"].shape[0], shape["heads"], rows, shape["head_dim"], generator=gen,
                        device=bd.DEVICE).half() for s in sets]


def reference(q, inputs):
    """float64 attention of request 0's rows, every head, from the contiguous cache, bottom-right aligned: (H, R, d)."""
    k, v = (x[0].double() for x in inputs["contiguous"][1:])  # (kv_heads, L, d)
    q = q[0].double()  # (H, R, d)
    (heads, rows, d), (kv_heads, length) = q.shape, k.shape[:2]
    s = q.view(kv_heads, heads // kv_heads * rows, d) @ k.transpose(-1, -2) * d**-0.5  # (kv_heads, group R, L)
    seen = length - rows + torch.arange(rows, device=q.device)  # row r's last key
    masked = torch.arange(length, device=q.device) > seen[:, None]  # (R, L)
    s = s.view(kv_heads, -1, rows, length).masked_fill(masked, float("-inf"))
    return (torch.softmax(s, dim=-1) @ v[:, None]).view(heads, rows, d)


def preset(launch):
    """The preset a row is priced on: H200-measured on an H200 (the plan's own launch is the datasheet H200's),
    else the plan's GPU (H100-SXM on an H100)."""
    return PRESET if launch.gpu.name.startswith("H200") else launch.gpu.name


def predicted_ms(launch):
    """gpusim's time for the plan's launch (its query rows launch.seq) on its preset."""
    result = gpusim.simulate("split_kv", batch=launch.batch, heads=launch.heads, kv_heads=launch.kv_heads,
                             head_dim=launch.head_dim, seq=launch.seq, seq_kv=list(launch.seq_kv), dtype=launch.dtype,
                             page_size=launch.page_size, num_splits=launch.num_splits, block_kv=launch.block_kv,
                             gpu=preset(launch))
    return result.predicted_time_s * 1e3


def timed_row(sets, qs, num_splits, paged=True):
    """(the launch, measure's timing and error) of the split kernel over the paged cache (paged=False: the contiguous
    one) at num_splits (None: the rule's), cycling through the input sets."""
    layout = "paged" if paged else "contiguous"
    pages = [dict(block_table=s["table"], page_size=bd.PAGE_SIZE) if paged else {} for s in sets]
    plans = [plan_for_cache(q, *s[layout][1:], cache_seqlens=s["lengths"], num_splits=num_splits, **table)
             for q, s, table in zip(qs, sets, pages)]
    fn = cycling([lambda p=p, q=q, s=s: p.run(q, *s[layout][1:], *([s["table"]] if paged else []))
                  for p, q, s in zip(plans, qs, sets)])
    return plans[0].launch, bd.measure(fn, reference(qs[0], sets[0]))


def case_rows(batch, seq_kv, sets, row_counts, shape):
    """The rows of one (batch, cache length): each query-row count timed, checked and priced at the rule's split
    count, and at one query row's where that differs."""
    out, one_row = [], None
    for rows in row_counts:
        qs = queries(sets, rows, shape, seed=rows)
        for provider, splits in (("rule", None), ("one_row_splits", one_row)):
            if provider == "one_row_splits" and splits in (None, out[-1]["num_splits"]):
                continue
            launch, got = timed_row(sets, qs, splits)
            one_row = one_row or launch.num_splits
            out.append({"provider": provider, "batch": batch, "seq": rows, "seq_kv": seq_kv, **shape, "dtype": "fp16",
                        "page_size": bd.PAGE_SIZE, "num_splits": launch.num_splits, "block_kv": launch.block_kv,
                        **got, "preset": preset(launch), "predicted_ms": predicted_ms(launch)})
            print(out[-1], flush=True)
    return out


def main(argv=None):
    args, grid, shape = bd.sweep_setup(__doc__, argv, SMOKE, dict(cases=CASES, rows=ROWS))
    bd.sweep_cases(args, "decode_rows", argv, grid["cases"], shape,
                   lambda batch, seq_kv, sets: case_rows(batch, seq_kv, sets, grid["rows"], shape))
    return 0


if __name__ == "__main__":
    sys.exit(main())
