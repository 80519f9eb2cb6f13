"""The claims of the scorecard that gpusim decides (claims.py holds those with an H200 measurement, and the
list of all): the source's block size and its order of HBM reads, the matmul share (Nsight's tensor-pipe share
from results/h200/tensor_pipe.json where it was measured, gpusim's otherwise), the SRAM-to-HBM speed ratio, the
warps' split of a tile, KV-cache memory, the size of S, and the thread blocks each FlashAttention launches. Each
takes the results folder (only the matmul share reads it), so that every claim is called alike.
"""
import gpusim
from gpusim import kvcache

from .. import evidence
from ..formatting import span
from ..inference.model import waste_claim_rows
from ..tiling import warps
from ..tiling.model import nonmatmul_shares
from .verdicts import SLOPE, Judged, Obs, Row, about, each, interval, noting, slope

BLOG, SUMMARY = "blog post", "chapter summary"
PREDICT_GPU = "H200-measured"  # gpusim's preset for the lent H200: its measured bandwidth and matmul rates


def ratio_span(values, fmt="{:.1f}x"):
    """formatting.span with ratios as its default format."""
    return span(values, fmt)


def waiting_share(result):
    """The share of a result's predicted time its kernels spend moving bytes: the sum of the kernels' memory
    times over the predicted time (the scorecard's "90% waiting", and notebook 2's, computed here once)."""
    return sum(k.memory_time_s for k in result.kernels) / result.predicted_time_s


def _share_pairs(rows):
    """(flash1's share, flash2's share) at each (head_dim, seq, causal) both kernels were measured at."""
    by = {}
    for r in rows:
        by.setdefault((r["head_dim"], r["seq"], r["causal"]), {})[r["kernel"]] = r["share"]
    return [(k["flash1"], k["flash2"]) for k in by.values() if {"flash1", "flash2"} <= k.keys()]


def matmul_share(results):
    """Judged on Nsight's tensor-pipe share of each kernel's cycles (tensor_pipe.json) where it was measured;
    gpusim's share of compute time beside it (and deciding, saying so, where nothing was measured)."""
    seq = 4096
    shares = nonmatmul_shares(PREDICT_GPU, seq=seq)
    claims = {"flash1": 0.5, "flash2": 0.7}
    modelled = []
    for x in shares:
        lo, hi = about(claims[x["algo"]])
        share = 1 - x["time_share"]
        modelled.append((f"{x['algo']} d={x['head_dim']}: {share:.0%} (the source: ~{claims[x['algo']]:.0%})",
                         lo <= share <= hi))
    measured_rows = evidence.tensor_shares(results)
    measured = []
    for r in measured_rows:
        lo, hi = about(claims[r["kernel"]])
        at = f"{r['kernel']} d={r['head_dim']} N={r['seq']:,}{' causal' if r['causal'] else ''}" if r["seq"] else \
            f"{r['kernel']} d={r['head_dim']}"
        measured.append((f"{at}: {r['share']:.0%} (the source: ~{claims[r['kernel']]:.0%})", lo <= r["share"] <= hi))
    if measured:
        pairs = _share_pairs(measured_rows)
        direction = (f"the direction holds: flash2's share is above flash1's in {sum(b > a for a, b in pairs)} of "
                     f"{len(pairs)} measured pairs" if pairs else "")
        judged = noting(each(measured), "Measured: Nsight Compute's tensor-pipe active cycles over the SM's active "
                        "cycles of the project's flash1 and flash2 kernels on the H200 (tensor_pipe.json: how busy the "
                        "tensor pipe is, the nearest measure of the source's share of time)"
                        + (f"; {direction}" if direction else ""))
    else:
        judged = noting(each(modelled), "gpusim's model decides: the tensor pipe's share of the kernels' cycles "
                        "was not measured here (tensor_pipe.json)")
    return Row("FlashAttention-1: ~50% matmul, ~50% other; FlashAttention-2: ~70% matmul, ~30% other.", BLOG,
               f"matmul share of compute time, gpusim on {PREDICT_GPU}, N = {seq:,} (the FlashAttention-2 benchmark "
               f"shape), 64 x 64 tiles: " + "; ".join(c[0] for c in modelled),
               "tensor-pipe share of cycles: " + "; ".join(c[0] for c in measured) if measured else "",
               judged, "~x: within 1.25x", "05_flash1_vs_flash2.ipynb", "Non-matmul work")


def _rule_tile(g, d, dtype):
    """(text, runs): the power-of-two tile SRAM_SIZE // (3 d) rows give on GPU g, whether gpusim's register limit
    lets it run, and Algorithm 1's own blocks beside it."""
    rows = g.sram_bytes_per_block // gpusim.DTYPE_BYTES[dtype] // (3 * d)
    tile = 1 << (rows.bit_length() - 1)  # a power of two, as tl.dot takes
    try:
        gpusim.simulate("flash1", seq=4096, head_dim=d, block_q=tile, block_kv=tile, gpu=g, dtype=dtype)
        why, runs = "fits the registers too", True
    except ValueError as err:
        why, runs = "needs " + str(err).split(" need ", 1)[-1], False
    paper = gpusim.paper_blocks("flash1", g, d, dtype)
    return f"d={d}: {rows} rows -> a {tile} x {tile} tile {why}; Algorithm 1's rule gives {paper[0]} x {paper[1]}", runs


def block_rule(results=None, gpu="A100-40GB", dtype="fp16", head_dims=(64, 128)):
    """Judged on what the line claims: three blocks (Q, K, V) of SRAM_SIZE // (3 d) rows fit in a thread block's
    SRAM, on every preset; and, since the line sets a block size, on whether such a tile also runs: the scores S_ij
    and the output O_i a thread block holds in fp32 registers, which gpusim's register limit checks (on `gpu`)."""
    item = gpusim.DTYPE_BYTES[dtype]
    checks, fills = [], []
    for g in gpusim.PRESETS.values():
        if g.name.endswith("-measured"):  # the same chip as its datasheet preset
            continue
        for d in head_dims:
            rows = g.sram_bytes_per_block // item // (3 * d)
            qkv = 3 * rows * d * item
            fills.append(qkv / g.sram_bytes_per_block)
            checks.append((f"{g.name} d={d}: {rows} rows, Q, K, V blocks {qkv:,} B of {g.sram_bytes_per_block:,} B",
                           qkv <= g.sram_bytes_per_block))
    g = gpusim.get_gpu(gpu)
    shown, runs = zip(*(_rule_tile(g, d, dtype) for d in head_dims))
    judged = each(checks)
    if judged.verdict == "holds":
        fit = (f"on all {len(checks)} presets and head sizes, three blocks of that many rows fill "
               f"{span(fills, '{:.1%}')} of a thread block's SRAM: they fit, as the line says")
        judged = Judged("holds", fit + ".") if all(runs) else Judged(
            "holds under conditions", f"{fit}; but as a block size the tile must also hold S_ij and O_i, which the "
                                      f"line leaves out, and on the {g.name} such a tile runs at {sum(runs)} of "
                                      f"{len(runs)} head sizes (the predicted column).")
    judged = noting(judged, "SRAM_SIZE must be one thread block's SRAM, not the ~20 MB of all SMs")
    return Row("block_size = SRAM_SIZE // (3 * d)  # How many rows fit in fast memory", BLOG,
               f"{g.name}, {dtype}, S_ij and O_i in registers: " + "; ".join(shown), "", judged,
               "three blocks of that many rows fit a thread block's SRAM, and such a tile runs", "04_tiling.ipynb",
               "The source's block size: SRAM over 3d")


def hbm_reads(results):
    obs, shown = [], []
    for g in gpusim.PRESETS.values():
        try:
            ys = [gpusim.simulate("flash1", seq=16384, head_dim=d, gpu=g,
                                  **dict(zip(("block_q", "block_kv"), gpusim.paper_blocks("flash1", g, d, "fp16"))))
                  .hbm_bytes for d in (32, 64, 128)]
        except ValueError:  # the paper's tile does not fit this GPU at some head_dim
            continue
        obs.append(Obs(slope((32, 64, 128), ys), g.name))
        shown.append(f"{g.name} d^{obs[-1].value:.2f}")
    return Row("Total HBM reads: O(N²d / SRAM_SIZE) (the paper's Theorem 2: Θ(N²d²/M)).", BLOG,
               "flash1 with the paper's tiles, bytes against d: " + ", ".join(shown), "",
               interval(obs, 1 - SLOPE, 1 + SLOPE, "d^1 (the source); the paper's d^2", "d^{:.2f}", "gpusim"),
               "O(n^k): fitted exponent within 0.25", "04_tiling.ipynb",
               "Explore: block sizes against the bytes the SMs request")


def ten_x(results):
    obs = [Obs(g.sram_bytes_per_s / g.hbm_bytes_per_s, g.name) for g in gpusim.PRESETS.values() if g.sram_bytes_per_s]
    return Row("The dramatic speed difference between HBM and SRAM (10x).", SUMMARY,
               "SRAM over HBM bandwidth: " + ", ".join(f"{o.at} {o.value:.0f}x" for o in obs), "",
               interval(obs, *about(10), "~10x", what="gpusim's presets (the published SRAM bandwidths)"),
               "~x: within 1.25x", "01_memory_hierarchy.ipynb", "Motivation: the kitchen")


def warp_split(results, head_dim=128):
    rows = warps.partition_rows(PREDICT_GPU, seq=4096, head_dim=head_dim)
    k, q = rows
    checks = [(f"split-Q exchanges {q['of it, partials exchanged']:,} B per tile, split-K "
               f"{k['of it, partials exchanged']:,} B", q["of it, partials exchanged"] < k["of it, partials exchanged"]),
              (f"{q['barriers per tile']} barrier per tile against {k['barriers per tile']}",
               q["barriers per tile"] < k["barriers per tile"])]
    return Row("FlashAttention-2: better work partitioning across threads and warps.", SUMMARY,
               f"d = {head_dim}, tile {q['tile']}: shared memory per tile {k['shared memory per tile']:,} B (split-K) "
               f"against {q['shared memory per tile']:,} B (split-Q)", "", each(checks), "fewer bytes and barriers",
               "05_flash1_vs_flash2.ipynb", "Warps inside a thread block: split-K against split-Q")


def kv_waste(results, model="Llama-3-8B", users=50):
    """The one verdict on the 70% (notebook 8 shows this row): inference.model.waste_claim_rows, the source's 50 users
    each with a slot of max_tokens, served contiguously."""
    claim = waste_claim_rows(users=users, model=model)
    obs = [Obs(r["contiguous wasted share"], f"{r['max_tokens']:,} tokens reserved per request") for r in claim]
    judged = noting(interval(obs, *about(0.7), "~70% (56-88%)", "{:.0%}", "gpusim"),
                    "the allocator simulation (gpusim) decides: a serving system's memory was not measured here")
    return Row("Pre-allocated GPU memory for max context length: 70% of that memory is wasted.", BLOG,
               f"{model}, {users} users, ShareGPT-like lengths, contiguous slots: "
               + ", ".join(f"{o.value:.0%} at {o.at}" for o in obs), "", judged, "~x: within 1.25x",
               "08_inference.ipynb", "PagedAttention: how the cache is laid out")


def kv_linear(results, model="Llama-3.1-8B"):
    """The KV cache and FlashAttention-2's footprint, linear in N: up to 65,536 tokens, so the model named is one
    whose context reaches that far (Llama-3.1-8B: 131,072 tokens; Llama-3-8B, the same layers and heads, stops at
    8,192)."""
    seqs = (1024, 8192, 65536)
    kv = [kvcache.bytes_per_token(model) * n for n in seqs]
    flash = [gpusim.simulate("flash2", seq=n, head_dim=128, heads=32, kv_heads=8).hbm_peak_bytes for n in seqs]
    checks = [(f"{model}'s KV cache grows as N^{slope(seqs, kv):.2f}", abs(slope(seqs, kv) - 1) <= SLOPE),
              (f"FlashAttention-2's footprint as N^{slope(seqs, flash):.2f}", abs(slope(seqs, flash) - 1) <= SLOPE)]
    return Row("While it eliminates the attention matrix memory cost, activations and KV cache still scale linearly "
               "with sequence length.", SUMMARY, f"{model}: {kvcache.bytes_per_token(model):,} B of KV cache per token "
               f"(all layers)", "", each(checks), "O(n^k): fitted exponent within 0.25", "08_inference.ipynb",
               "The KV cache")


def s_matrix(results):
    r = gpusim.simulate("naive", seq=4096, head_dim=128, dtype="fp16")
    s_bytes = r.by_tensor["S"]["write_bytes"]
    return Row("At N=4096, d=128: S = 4096×4096 = 64 MB in FP16.", BLOG,
               f"S written: {s_bytes:,} B ({s_bytes / 2**20:.0f} MiB); S and P: {2 * s_bytes / 2**20:.0f} MiB", "",
               interval([Obs(s_bytes, "S")], *about(64e6), "64 MB", "{:,.0f} B", "gpusim"), "~x: within 1.25x",
               "02_standard_attention.ipynb", "Motivation: what standard attention writes down")


def parallelism(results, seq=8192, head_dim=64):
    batch, heads = gpusim.fa2_shape(seq, head_dim)
    f1, f2 = (gpusim.simulate(a, seq=seq, head_dim=head_dim, batch=batch, heads=heads, gpu=PREDICT_GPU)
              for a in ("flash1", "flash2"))
    tr = f2.config.tiling.n_q_blocks
    checks = [(f"flash1 launches {f1.kernels[0].programs:,} thread blocks = batch x heads",
               f1.kernels[0].programs == batch * heads),
              (f"flash2 {f2.kernels[0].programs:,} = batch x heads x {tr} Q blocks",
               f2.kernels[0].programs == batch * heads * tr)]
    return Row("FlashAttention-1 parallelized over batch and heads; FA-2 also parallelizes over the sequence.", BLOG,
               f"N={seq:,}, {batch} x {heads} heads: flash1 keeps {f1.kernels[0].busy_fraction:.0%} of the SMs "
               f"busy, flash2 {f2.kernels[0].busy_fraction:.0%}", "", each(checks), "thread blocks counted",
               "05_flash1_vs_flash2.ipynb", "Parallelism: waves of thread blocks over the SMs")
