"""Notebook 13 (Beyond one GPU): gpusim's context-parallel pass as timelines, the zigzag layout, the model's
predictions for 8, 64 and 512 GPUs, and the two-GPU measurement beside the model once it exists. Figures are
matplotlib.figure.Figure objects (no pyplot state); the widget is course/context/widgets.py."""
import numpy as np
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

import gpusim
from gpusim import context_scaling, kvcache, links

from ..measurements import read_optional

SHAPE = dict(heads=32, kv_heads=8, head_dim=128, dtype="bf16", gpu="H200")  # Llama-3-8B's attention shape
CP_JSON = "../results/h200x2/cp.json"  # benchmarks/run_cp.sh writes it on two GPUs; notebooks run in notebooks/
COMPUTE, TRANSFER, IDLE = "tab:blue", "tab:orange", "0.85"
LANE_COLORS = dict(compute=COMPUTE, transfer=TRANSFER, idle=IDLE)
GPU_COLORS = [f"C{i}" for i in range(10)]


def simulate(gpus, seq, strategy, link, causal=True, **shape):
    return gpusim.simulate("flash2", seq=seq, causal=causal, gpus=gpus, strategy=strategy, link=link,
                           **(SHAPE | shape))


def at_one_tile(gpus, seq, strategy, link, causal=True):
    """(context-parallel Result, one GPU's Result) of SHAPE's layer at one tile: gpusim's best for one GPU over all N
    (best_blocks), which every local launch of the split takes too. The speedup then compares splitting the work, not
    two tile choices (each shard's own best tile had 8 GPUs at 8.01x one GPU's speed)."""
    one = gpusim.simulate("flash2", seq=seq, causal=causal, **SHAPE)
    tile = dict(block_q=one.config.block_q, block_kv=one.config.block_kv)
    return simulate(gpus, seq, strategy, link, causal, **tile), one


def speedup_sentence(r, one):
    """The split's time against one GPU's (at_one_tile's pair), and their ratio; where it exceeds P, why: with the
    pass at least as long as each GPU's compute, P x its time is at least the GPUs' compute added, so that sum is
    less than one GPU's time for the same work."""
    speedup, c = one.predicted_time_s / r.predicted_time_s, one.config
    text = (f"{r.gpus} GPUs: <b>{r.predicted_time_s * 1e3:,.2f} ms</b> against one GPU's "
            f"{one.predicted_time_s * 1e3:,.2f} ms ({speedup:.3f}x), both at one tile, {c.block_q} × {c.block_kv} "
            f"(gpusim's best for one GPU)")
    if speedup <= r.gpus:
        return text
    total = sum(r.gpu_compute_s)
    return (f"{text}. More than {r.gpus}x: the {r.gpus} GPUs' compute adds up to {total * 1e3:,.2f} ms, "
            f"{1 - total / one.predicted_time_s:.2%} less than one GPU's for the same work: gpusim prices the split's "
            f"smaller launches below one launch over all N")


def ring_send_bytes(gpus, seq, kv_heads=SHAPE["kv_heads"], head_dim=SHAPE["head_dim"], dtype=SHAPE["dtype"]):
    """The ring's formula: each GPU passes on P - 1 K and V shards of N/P tokens, kv_heads x head_dim each."""
    return (gpus - 1) * 2 * (seq // gpus) * kv_heads * head_dim * gpusim.DTYPE_BYTES[dtype]


def send_lines(gpus, seq, link, strategies=("ring", "zigzag", "ulysses", "allgather")):
    """Per strategy: the bytes gpusim has each GPU send, against the ring's formula."""
    ring = ring_send_bytes(gpus, seq)
    sent = {strategy: simulate(gpus, seq, strategy, link).link_send_bytes for strategy in strategies}
    return [f"{strategy:9}: each GPU sends {b:,} B ({b / ring:.2f} x the ring's formula)"
            for strategy, b in sent.items()]


def link_rows():
    """Every link preset: its per-direction rate and its source."""
    return [{"link": k.name, "GB/s per direction": k.send_bytes_per_s / 1e9, "source": k.source}
            for k in links.LINKS.values()]


def timeline_figure(r, ax=None, title=None):
    """Each GPU's steps of a context-parallel Result as two lanes: compute (blue; the rest of the step idle,
    grey) above, the step's transfer (orange) below it. A transfer shorter than its step's compute hides."""
    if ax is None:
        fig = Figure(figsize=(10, 0.5 + 0.45 * r.gpus), layout="constrained")
        ax = fig.subplots()
    scale = 1e3  # ms
    lanes = {}  # (gpu, kind): [(start, width)], ms
    for s in r.steps:
        for kind, seconds in (("idle", s.time_s), ("compute", s.compute_s), ("transfer", s.transfer_s)):
            if seconds:
                lanes.setdefault((s.gpu, kind), []).append((s.start_s * scale, seconds * scale))
    for (gpu, kind), bars in lanes.items():  # a collection a lane (a step's compute over its idle): at P = 16 the
        y = gpu + 0.02 if kind == "transfer" else gpu - 0.4  # 752 patches one by one took a second a redraw
        ax.broken_barh(bars, (y, 0.38), color=LANE_COLORS[kind], lw=0, label=f"_{kind}")
    ax.vlines([s.start_s * scale for s in r.steps], -0.5, r.gpus - 0.5, color="w", lw=0.6)
    ax.set(xlim=(0, r.predicted_time_s * scale), ylim=(r.gpus - 0.5, -0.5), yticks=range(r.gpus),
           yticklabels=[f"GPU {g}" for g in range(r.gpus)], xlabel="time (ms)",
           title=title or f"{r.strategy}, P = {r.gpus}, N = {r.config.seq:,} over {r.link.name}")
    ax.legend(handles=[Rectangle((0, 0), 1, 1, color=c) for c in (COMPUTE, IDLE, TRANSFER)],
              labels=["compute (attention + merge)", "idle (waiting for the step to end)", "K/V transfer"],
              loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=9)
    return ax.figure


def chunk_owner(gpus, strategy):
    """The GPU holding each of the 2P chunks of the sequence: contiguous for ring, r and 2P-1-r for zigzag."""
    if strategy == "zigzag":
        return [min(c, 2 * gpus - 1 - c) for c in range(2 * gpus)]
    return [c // 2 for c in range(2 * gpus)]


def causal_work(gpus, seq, strategy):
    """(steps, P) FLOPs of each GPU's step under a causal mask, as gpusim counts them."""
    return simulate(gpus, seq, strategy, "nvlink4").flops_matmul_by_step


def zigzag_figure(gpus=4, seq=16384):
    """Top: the causal score matrix in 2P x 2P chunks, each kept cell colored by the GPU that computes it
    (the one holding its query chunk), for ring and zigzag. Bottom: each GPU's work per step under the
    mask (share of the busiest GPU's): plain ring leaves GPUs idle, zigzag does not."""
    fig = Figure(figsize=(10, 7), layout="constrained")
    axes = fig.subplots(2, 2, height_ratios=(1, 0.8))
    for col, strategy in enumerate(("ring", "zigzag")):
        owner = chunk_owner(gpus, strategy)
        grid = np.full((2 * gpus, 2 * gpus, 3), 1.0)
        for qi in range(2 * gpus):
            for kj in range(qi + 1):  # causal: chunk qi sees chunks 0 .. qi
                rgb = np.array(to_rgb(GPU_COLORS[owner[qi] % 10]))
                grid[qi, kj] = rgb if kj < qi else 0.5 + 0.5 * rgb  # the diagonal chunk half masked: lighter
        ax = axes[0, col]
        ax.imshow(grid, interpolation="nearest")
        ax.set(title=f"{strategy}: who computes which chunk of the causal scores",
               xlabel="key chunk", ylabel="query chunk (its owner's color)",
               xticks=range(2 * gpus), yticks=range(2 * gpus),
               yticklabels=[f"{c} (GPU {owner[c]})" for c in range(2 * gpus)])
        work = causal_work(gpus, seq, strategy)
        ax = axes[1, col]
        busiest = work.max(axis=1, keepdims=True)
        share = np.divide(work, busiest, out=np.zeros(work.shape), where=busiest > 0)
        ax.imshow(share.T, cmap="Blues", vmin=0, vmax=1, aspect="auto")
        for (s, g), v in np.ndenumerate(share):
            ax.text(s, g, f"{v:.0%}", ha="center", va="center", fontsize=9, color="k" if v < 0.6 else "w")
        ax.set(title=f"{strategy}: each GPU's work per step, share of the busiest", xlabel="step", ylabel="GPU",
               xticks=range(gpus), yticks=range(gpus))
    return fig


def idle_share(r):
    """The share of the GPUs' time spent waiting: 1 - sum of compute / (P x the pass's time)."""
    return 1 - sum(r.gpu_compute_s) / (r.gpus * r.predicted_time_s)


def one_gpu_lines(seqs=(1 << 17, 1 << 20), model="Llama-3-8B"):
    """Why split the sequence, per N, on one GPU (SHAPE's): one layer's attention (Q, K, V, O and the LSE, gpusim's
    peak) against the GPU's HBM and its causal forward's predicted time; then the same for as many such layers as
    `model` has, as a training step keeps each layer's Q, K, V, O and LSE for its backward (attention's alone: no MLP).
    Only the layer count is `model`'s: N runs past any preset's longest context (Llama-3-8B's is 8,192 tokens,
    Llama-3.1-8B's 131,072), so no line says the model itself runs at N."""
    layers = kvcache.MODELS[model].layers
    g = gpusim.get_gpu(SHAPE["gpu"])

    def share(nbytes):
        return f"{nbytes / g.hbm_bytes:.0%} of" if nbytes <= g.hbm_bytes else f"{nbytes / g.hbm_bytes:.1f}x"
    out = []
    for n in seqs:
        r = gpusim.simulate("flash2", seq=n, causal=True, **SHAPE)
        kept = layers * r.hbm_peak_bytes
        out.append(f"N = {n:,}: one layer's attention holds {r.hbm_peak_bytes / 2**30:.1f} GiB "
                   f"({share(r.hbm_peak_bytes)} one {g.name}'s HBM) and its causal forward takes "
                   f"{r.predicted_time_s:.2f} s; {layers} such layers (as many as {model} has) keep "
                   f"{kept / 2**30:.0f} GiB of attention tensors alone for the backward ({share(kept)} the HBM; "
                   f"weights, optimizer state and the MLP's activations come on top) and take "
                   f"{layers * r.predicted_time_s:.1f} s forward in attention alone.")
    return out


def max_context_lines(gpu_counts=(1, 8, 64), strategy="zigzag"):
    """Per GPU count: the longest causal sequence whose one layer of attention (SHAPE's) fits each GPU's HBM, and,
    past one GPU, how many times one GPU's that is (P/2, not P: each GPU of a ring also keeps a K/V receive buffer
    and the fp32 partial O and LSE, which double its bytes per token)."""
    one = context_scaling.max_context(strategy, 1, causal=True, **SHAPE)
    out = []
    for p in gpu_counts:
        n = context_scaling.max_context(strategy, p, causal=True, **SHAPE)
        out.append(f"{p:3} x {SHAPE['gpu']}: one layer's attention fits up to N = {n:,} tokens"
                   + (f" ({n / one:.1f}x one GPU's)" if p > 1 else ""))
    return out


def crossover_lines(link_names=("nvlink4-h200-measured", "pcie5", "ib-ndr"), gpu=SHAPE["gpu"]):
    """Per link: the closed form's shortest shard that hides its transfer, multi-head and grouped (32/8); past the
    first link, how many times the first link's shard that is."""
    heads, kv_heads = SHAPE["heads"], SHAPE["kv_heads"]
    first = crossover_tokens(link_names[0], gpu=gpu, heads=heads, kv_heads=heads)
    out = []
    for link in link_names:
        mha, gqa = (crossover_tokens(link, gpu=gpu, heads=heads, kv_heads=kv) for kv in (heads, kv_heads))
        out.append(f"{gpu} over {link:22}: the transfer hides from a shard of {mha:,.0f} tokens (MHA), "
                   f"{gqa:,.0f} (GQA {heads}/{kv_heads})"
                   + (f"; {mha / first:.1f}x {link_names[0]}'s" if link != link_names[0] else ""))
    return out


def step_line(gpus, seq, link, strategy="zigzag", causal=True):
    """The tightest ring step of a pass (the one its overlap margin is taken from), on its busiest GPU: the matmul
    FLOPs against the closed form's 4 c^2 d H (a causal mask halves them), the rate gpusim predicts for them
    (attention and merge) against the GPU's peak, and the step's compute over its transfer."""
    r = simulate(gpus, seq, strategy, link, causal=causal)
    c, g = seq // gpus, r.gpu_rank
    steps = [s for s, t in enumerate(r.step_transfer_s) if t and r.compute_s[s, g]]
    s = min(steps, key=lambda s: r.compute_s[s, g] / r.step_transfer_s[s])
    flops, compute = float(r.flops_matmul_by_step[s, g]), float(r.compute_s[s, g])
    closed = 4 * c * c * SHAPE["head_dim"] * SHAPE["heads"]
    peak = gpusim.get_gpu(SHAPE["gpu"]).matmul_flops_per_s(SHAPE["dtype"])
    return (f"{gpus} GPUs over {link}, shard {c:,} tokens ({strategy}, {'causal' if causal else 'no mask'}): a step "
            f"computes {flops / 1e9:,.1f} GFLOP ({flops / closed:.2f} of the closed form's 4c²dH) at "
            f"{flops / compute / 1e12:.0f} TFLOP/s ({flops / compute / peak:.0%} of the {SHAPE['gpu']}'s "
            f"{peak / 1e12:.0f} TFLOP/s peak); compute / transfer = {compute / r.step_transfer_s[s]:.2f}")


def shard_timeline_figure(gpus, seq, link, strategy="zigzag"):
    """timeline_figure of a causal pass, titled with its shard and whether the transfer hides (margin 1 or more;
    ulysses and allgather overlap no transfer with compute: they have no margin)."""
    r = simulate(gpus, seq, strategy, link)
    margin = r.overlap_margin
    hides = ("no transfer overlaps compute" if margin is None else
             f"{'the transfer hides' if margin >= 1 else 'transfer-bound'} (margin {margin:.2f})")
    return timeline_figure(r, title=f"{gpus} GPUs over {link}, shard {seq // gpus:,} tokens: {hides}")


def idle_lines(gpus, seq, link, strategies=("ring", "zigzag")):
    """Per strategy of a causal pass: its predicted time, that time over the same pass without the mask (which
    does twice the work), and the share of the GPUs' time spent idle; each at one GPU's tile (at_one_tile), as the
    timeline widget runs them, so the two say the same time for the same setting."""
    results = {strategy: at_one_tile(gpus, seq, strategy, link, causal=True)[0] for strategy in strategies}
    full = {strategy: at_one_tile(gpus, seq, strategy, link, causal=False)[0] for strategy in strategies}
    out = []
    for strategy, r in results.items():
        t, unmasked = r.predicted_time_s, full[strategy].predicted_time_s
        out.append(f"{strategy:7}: {t * 1e3:7.2f} ms ({t / unmasked:.2f} x its {unmasked * 1e3:.2f} ms without the "
                   f"mask), GPUs idle {idle_share(r):.0%} of the time")
    return out


def strategy_rows(gpus=8, seq=1 << 17, link="node8-nvlink4", strategies=("ring", "zigzag", "ulysses", "allgather")):
    """Per strategy of a causal pass: its predicted time, the bytes each GPU sends and each GPU's peak HBM."""
    results = {strategy: simulate(gpus, seq, strategy, link) for strategy in strategies}
    return [{"strategy": strategy, f"ms ({gpus} GPUs, N {seq // 1024}K, causal)": r.predicted_time_s * 1e3,
             "MB sent per GPU": r.link_send_bytes / 1e6, "peak HBM per GPU (GiB)": r.hbm_peak_bytes / 2**30}
            for strategy, r in results.items()]


def margin_lines(rows):
    """Per GPU count and strategy of prediction_rows with a ring: the lengths at which its overlap margin is below
    1 (its steps wait on the link), or that it is 1 or more at every length of the table."""
    groups = {}
    for r in rows:
        if r["overlap margin"] != "-":
            groups.setdefault((r["GPUs"], r["strategy"]), []).append((r["N"], r["overlap margin"]))
    out = []
    for (gpus, strategy), points in groups.items():
        short = [f"{n:,} ({m:.2f})" for n, m in points if m < 1]
        out.append(f"{gpus} GPUs, {strategy}: margin below 1 at N = {', '.join(short)}" if short else
                   f"{gpus} GPUs, {strategy}: margin 1 or more at every N")
    return out


def prediction_rows(**kwargs):
    """The model's 8-, 64- and 512-GPU predictions as table rows."""
    return [{"GPUs": p.gpus, "topology": p.link, "strategy": p.strategy, "N": p.seq, "ms": p.time_s * 1e3,
             "GB sent per GPU": p.link_send_bytes / 1e9,
             "overlap margin": "-" if p.overlap_margin is None else round(p.overlap_margin, 2),
             "TFLOP/s per GPU": p.tflops_per_gpu, "longest N in HBM": p.max_seq}
            for p in context_scaling.predictions(**kwargs)]


def paper_rows():
    """The Ring Attention paper's minimal block size per device, and gpusim's from the same rates."""
    return [{"device": device, "ours (tokens)": round(ours), "paper (tokens)": round(paper),
             "ours / paper": ours / paper} for device, ours, paper in context_scaling.ring_paper_table()]


def crossover_tokens(link, gpu="H200", dtype="bf16", heads=32, kv_heads=32):
    """The closed form's shortest shard that hides its transfer: itemsize F H_kv / (2 B H) at the GPU's peak."""
    rate = gpusim.get_gpu(gpu).matmul_flops_per_s(dtype)
    return context_scaling.minimal_shard_tokens(rate, links.get_link(link).send_bytes_per_s,
                                                gpusim.DTYPE_BYTES[dtype], heads, kv_heads)


def read_measured(path=CP_JSON):
    """The two-GPU results file, or None when it has not been written yet."""
    return read_optional(path)


def measured_status(data, path=CP_JSON):
    if data is None:
        return (f"Not measured yet: {path} is not there. `bash benchmarks/run_cp.sh` on a machine with two GPUs "
                "writes it; until then the chart shows the model alone.")
    env = next(iter(data["environment"].values()), {})
    return f"Measured on {env.get('world_size', '?')} x {env.get('gpu', '?')}, {env.get('date', '?')}, torch " \
           f"{env.get('torch', '?')}; the model's link from the same run: {data.get('model_link') or 'none'}"


STRATEGIES = ("ring", "zigzag", "ulysses", "allgather")
TWO_GPU_SEQS = tuple(1024 << i for i in range(9))  # 1K .. 256K, as benchmarks/cp_plan.py's main sweep
ONE_GPU = "one GPU, flash2"


def two_gpu_model(causal, kv_heads=32, seqs=TWO_GPU_SEQS, link="nvlink4-h200-measured"):
    """gpusim's ms per forward of each strategy on two GPUs of the measured H200 pair (SHAPE's layer with
    `kv_heads`), and of one GPU's flash2 (key ONE_GPU): {name: [ms per N of seqs]}."""
    shape = dict(gpu="H200-measured", kv_heads=kv_heads)
    out = {strategy: [simulate(2, n, strategy, link, causal, **shape).predicted_time_s * 1e3 for n in seqs]
           for strategy in STRATEGIES}
    out[ONE_GPU] = [gpusim.simulate("flash2", seq=n, causal=causal, **(SHAPE | shape)).predicted_time_s * 1e3
                    for n in seqs]
    return out


def two_gpu_lines(kv_heads=32, seqs=TWO_GPU_SEQS):
    """The model's chart in words, per mask and strategy: two GPUs' speed over one GPU's at the shortest and the
    longest N, and the shortest N at which two GPUs are faster than one."""
    out = []
    for causal in (False, True):
        ms = two_gpu_model(causal, kv_heads, seqs)
        for strategy in STRATEGIES:
            speed = [one / two for one, two in zip(ms[ONE_GPU], ms[strategy])]
            faster = next((n for n, x in zip(seqs, speed) if x > 1), None)
            out.append(f"{'causal' if causal else 'no mask':7}, {strategy:9}: {speed[0]:.2f}x one GPU's speed at "
                       f"N = {seqs[0]:,}, {speed[-1]:.2f}x at N = {seqs[-1]:,}; "
                       + (f"faster than one GPU from N = {faster:,}" if faster else "never faster than one GPU"))
    return out


def measured_figure(data, heads=32, kv_heads=32, head_dim=128, dtype="bf16"):
    """ms against N for each provider (solid, measured) and gpusim's time (dashed) where it has one; without
    data, the model alone on the measured H200 pair's link preset."""
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, causal in zip(axes, (False, True)):
        if data is None:
            ms = two_gpu_model(causal, kv_heads)
            for i, strategy in enumerate(STRATEGIES):
                ax.plot(TWO_GPU_SEQS, ms[strategy], "--", color=f"C{i}", label=f"{strategy} (model)")
            ax.plot(TWO_GPU_SEQS, ms[ONE_GPU], "--", color="k", label="one GPU, flash2 (model)")
        else:
            wanted = (heads, kv_heads, head_dim, dtype, causal)
            rows = [r for r in data["rows"]
                    if r.get("ms") and (r["heads"], r["kv_heads"], r["head_dim"], r["dtype"], r["causal"]) == wanted]
            for i, provider in enumerate(sorted({r["provider"] for r in rows})):
                mine = sorted((r for r in rows if r["provider"] == provider), key=lambda r: r["seq"])
                ax.plot([r["seq"] for r in mine], [r["ms"] for r in mine], "o-", color=f"C{i % 10}", label=provider)
                if any(r.get("model_ms") for r in mine):
                    ax.plot([r["seq"] for r in mine], [r.get("model_ms") for r in mine], "--", color=f"C{i % 10}")
        ax.set(xscale="log", yscale="log", xlabel="sequence length N", title=f"{'causal' if causal else 'no mask'}, "
               f"{heads}/{kv_heads} heads, d {head_dim}, {dtype}")
    axes[0].set_ylabel("ms per forward")
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=9)
    return fig
