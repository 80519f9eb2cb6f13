"""The claims of the scorecard that gpusim alone decides (gpusim_course.claims holds those with an H200
measurement, and the list of all): the source's block size and its order of HBM reads, the matmul share, the
SRAM-to-HBM speed ratio, the warps' split of a tile, KV-cache memory, the size of S, and the thread blocks each
FlashAttention launches. Each takes the results folder, unused here, so that every claim is called alike.
"""
import gpusim
from gpusim import kvcache

from . import warps
from .formatting import span
from .scorecard import SLOPE, Obs, Row, about, each, interval, slope
from .tables import nonmatmul_shares

BLOG, SUMMARY = "blog post", "chapter summary"
PREDICT_GPU = "H200-measured"  # gpusim's preset for the lent H200: its measured bandwidth and matmul rates


def ratio_span(values, fmt="{:.1f}x"):
    """formatting.span with ratios as its default format."""
    return span(values, fmt)


def matmul_share(results):
    shares = nonmatmul_shares(PREDICT_GPU, seq=4096)
    claims = {"flash1": 0.5, "flash2": 0.7}
    checks = []
    for x in shares:
        lo, hi = about(claims[x["algo"]])
        share = 1 - x["time_share"]
        checks.append((f"{x['algo']} d={x['head_dim']}: {share:.0%} (the source: ~{claims[x['algo']]:.0%})",
                       lo <= share <= hi))
    return Row("FlashAttention-1: ~50% matmul, ~50% other; FlashAttention-2: ~70% matmul, ~30% other.", BLOG,
               "matmul share of compute time, 64 x 64 tiles: " + "; ".join(c[0] for c in checks), "",
               each(checks), "~x: within 1.25x", "05_flash1_vs_flash2.ipynb", "Non-matmul work")


def block_rule(results=None, gpu="A100-40GB", dtype="fp16"):
    g = gpusim.get_gpu(gpu)
    checks, shown = [], []
    for d in (64, 128):
        rows = g.sram_bytes_per_block // gpusim.DTYPE_BYTES[dtype] // (3 * d)  # SRAM_SIZE in elements
        tile = 1 << (rows.bit_length() - 1)  # a power of two, as tl.dot takes
        try:
            gpusim.simulate("flash1", seq=4096, head_dim=d, block_q=tile, block_kv=tile, gpu=g, dtype=dtype)
            why = "fits"
        except ValueError as err:
            why = str(err).split(" need ", 1)[-1]
        paper = gpusim.paper_blocks("flash1", g, d, dtype)
        shown.append(f"d={d}: {rows} rows -> {tile} x {tile}: {why if why == 'fits' else 'needs ' + why}; the paper's "
                     f"rule gives {paper[0]} x {paper[1]}")
        checks.append((f"d={d}: a {tile} x {tile} tile {'fits' if why == 'fits' else 'does not fit: it needs ' + why}",
                       why == "fits"))
    return Row("block_size = SRAM_SIZE // (3 * d)  # How many rows fit in fast memory", BLOG,
               f"{g.name}, {dtype}: " + "; ".join(shown), "", each(checks), "gpusim accepts the tile",
               "04_tiling.ipynb", "The source's block size: SRAM over 3d")


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


def warp_split(results):
    rows = warps.partition_rows(PREDICT_GPU, seq=4096, head_dim=128)
    k, q = rows
    checks = [(f"split-Q exchanges {q['of it, partials exchanged']:,} B per tile, split-K "
               f"{k['of it, partials exchanged']:,} B", q["of it, partials exchanged"] < k["of it, partials exchanged"]),
              (f"{q['barriers per tile']} barrier per tile against {k['barriers per tile']}",
               q["barriers per tile"] < k["barriers per tile"])]
    return Row("FlashAttention-2: better work partitioning across threads and warps.", SUMMARY,
               f"tile {q['tile']}: shared memory per tile {k['shared memory per tile']:,} B (split-K) against "
               f"{q['shared memory per tile']:,} B (split-Q)", "", each(checks), "fewer bytes and barriers",
               "05_flash1_vs_flash2.ipynb", "Warps inside a thread block: split-K against split-Q")


def kv_waste(results, model="Llama-3-8B", steps=300):
    obs = []
    for max_tokens in (1024, 2048, 4096):
        reqs = kvcache.arrivals(steps, 2.0, max_tokens, seed=0)
        s = kvcache.serve(model, reqs, steps=steps, policy="contiguous", max_tokens=max_tokens)
        obs.append(Obs(s.wasted_fraction, f"{max_tokens:,} tokens reserved per request"))
    return Row("Pre-allocated GPU memory for max context length: 70% of that memory is wasted.", BLOG,
               f"{model}, ShareGPT-like lengths: " + ", ".join(f"{o.value:.0%} at {o.at}" for o in obs), "",
               interval(obs, *about(0.7), "~70% (56-88%)", "{:.0%}", "gpusim"), "~x: within 1.25x",
               "08_inference.ipynb", "")


def kv_linear(results, model="Llama-3-8B"):
    seqs = (1024, 8192, 65536)
    kv = [kvcache.bytes_per_token(model) * n for n in seqs]
    flash = [gpusim.simulate("flash2", seq=n, head_dim=128, heads=32, kv_heads=8).hbm_peak_bytes for n in seqs]
    checks = [(f"{model}'s KV cache grows as N^{slope(seqs, kv):.2f}", abs(slope(seqs, kv) - 1) <= SLOPE),
              (f"FlashAttention-2's footprint as N^{slope(seqs, flash):.2f}", abs(slope(seqs, flash) - 1) <= SLOPE)]
    return Row("While it eliminates the attention matrix memory cost, activations and KV cache still scale linearly "
               "with sequence length.", SUMMARY, f"{model}: {kvcache.bytes_per_token(model):,} B of KV cache per token "
               f"(all layers)", "", each(checks), "O(n^k): fitted exponent within 0.25", "08_inference.ipynb", "")


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
