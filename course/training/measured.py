"""The training notebook's measurements beside gpusim: bench_bwd.json in results/h200/ (written by
`python -m benchmarks.bench_bwd`: the project's flash2 and naive backward, SDPA's backends and torch
naive on the FlashAttention-2 paper's sweep), read when it is there. Until it is, the notebook shows gpusim's side
alone; every function here that needs the file takes its parsed contents. gpusim's side is
gpusim.simulate(..., backward=True): the forward's kernels, then the backward's, each priced by its time model.
"""
import gpusim
from gpusim import backward

from ..formatting import span
from ..measurements import environment_line, read_optional

TOKENS, MODEL_DIM = gpusim.fa2_shape(1, 1)  # batch x seq and heads x head_dim of the FlashAttention-2 sweep
SEQS = (512, 1024, 2048, 4096, 8192, 16384)  # the sweep's lengths (benchmarks/bench_bwd.py)
BENCH_BWD = "../results/h200/bench_bwd.json"  # as the notebooks, which run in notebooks/, reach it
NAIVE = "naive"  # standard attention as gpusim prices it: the project's naive kernels, P saved
STANDARD = "torch_naive"  # standard attention as most users run it: matmul, softmax, matmul under autograd
FLASH = ("flash2", "sdpa_flash")  # the project's FlashAttention-2 backward, and PyTorch's
GPU = "H200-measured"  # the lent H200's measured rates (gpusim/hardware.py)


def read_bench_bwd(path):
    """The parsed results file, or None when it is not there yet."""
    return read_optional(path)


def status_line(data, path):
    """Where the measured side comes from, or why there is none yet."""
    if data is None:
        return (f"{path} is not there yet: the charts below show gpusim's predictions only. Run "
                f"`python -m benchmarks.bench_bwd --out results/h200/bench_bwd.json` on the GPU to add the "
                f"measured side.")
    return environment_line(data)


def shape(seq, head_dim):
    """(batch, heads) of the FlashAttention-2 sweep at this length: 16K tokens, hidden 2048."""
    return max(1, TOKENS // seq), MODEL_DIM // head_dim


def tiles(data, head_dim, causal):
    """flash2's backward tiles (block_q, block_kv) the benchmark chose and ran for this head_dim and mask, or
    None (gpusim's default tiles) without the file."""
    chosen = [t["chosen"] for t in data["tuning"] if (t["head_dim"], t["causal"]) == (head_dim, causal)] if data else []
    return tuple(chosen[0]) if chosen else None


def step_s(algo, seq, head_dim, causal, gpu=GPU, flash2_blocks=None):
    """gpusim's predicted time of one training step (the forward's kernels, then the backward's) at the
    sweep's shape for this length, in fp16, on the tiles the project's kernels run (benchmarks/bench_bwd.py):
    flash2's backward on flash2_blocks (None: gpusim's default) after its forward's default tile; naive attention
    both passes on the same tiles, gpusim.backward's default (kernels/naive_backward.py)."""
    batch, heads = shape(seq, head_dim)
    call = dict(seq=seq, head_dim=head_dim, heads=heads, batch=batch, causal=causal, dtype="fp16", gpu=gpu)
    if algo == "naive":
        cfg = backward.config("naive", **call)
        return gpusim.simulate("naive", **call, block_q=cfg.block_q, block_kv=cfg.block_kv,
                               backward=True).predicted_time_s
    return gpusim.simulate(algo, **call, backward=True, backward_blocks=flash2_blocks).predicted_time_s


def predicted(seqs, head_dim, causal, gpu=GPU, flash2_blocks=None):
    """{algo: [step_s, ...]} for naive and flash2 at each length of the sweep (step_s)."""
    return {algo: [step_s(algo, seq, head_dim, causal, gpu, flash2_blocks) for seq in seqs]
            for algo in ("naive", "flash2")}


def measured_ms(data, provider, head_dim, causal, pass_="fwd+bwd"):
    """{seq: ms} of one provider's timed rows."""
    return {r["seq"]: r["ms"] for r in data["rows"] if (r["provider"], r["pass"], r["head_dim"], r["causal"]) ==
            (provider, pass_, head_dim, causal) and r.get("ms")}


def speedup_rows(data, head_dim, causal, seqs=SEQS, gpu=GPU):
    """Per length: fwd + bwd time of standard attention over FlashAttention's, predicted (gpusim naive over
    flash2, on the tiles the project's kernels run: step_s) and, where bench_bwd.json has the rows, measured:
    the project's naive kernels over its flash2 (the pair gpusim predicts), and torch naive over the project's
    flash2 and over SDPA's FlashAttention-2; with the predicted and measured flash2 times."""
    pred = predicted(seqs, head_dim, causal, gpu, tiles(data, head_dim, causal))
    measured = {p: measured_ms(data, p, head_dim, causal) for p in (NAIVE, STANDARD, *FLASH)} if data else {}

    def ratio(num, den, seq):
        a, b = measured.get(num, {}).get(seq), measured.get(den, {}).get(seq)
        return a / b if a and b else None

    rows = []
    for i, seq in enumerate(seqs):
        row = {"seq": seq, "predicted speedup": pred["naive"][i] / pred["flash2"][i],
               "flash2 predicted ms": pred["flash2"][i] * 1e3, "measured, naive / flash2": ratio(NAIVE, "flash2", seq)}
        row |= {f"measured, torch naive / {provider}": ratio(STANDARD, provider, seq) for provider in FLASH}
        row["flash2 measured ms"] = measured.get("flash2", {}).get(seq)
        rows.append(row)
    return rows


def speedup_groups(data, seqs=SEQS, gpu=GPU, head_dims=(64, 128)):
    """{(head_dim, causal): speedup_rows} for every head dimension, with and without the causal mask."""
    return {(d, causal): speedup_rows(data, d, causal, seqs=seqs, gpu=gpu)
            for d in head_dims for causal in (False, True)}


def comparison_sentence(groups):
    """The measured side against the predicted one over all groups of speedup_rows, in words."""
    rows = [r for group in groups.values() for r in group]
    timed = [r for r in rows if r["flash2 measured ms"]]
    predicted = [r["predicted speedup"] for r in rows]
    head = f"gpusim predicts its naive kernels {span(predicted, '{:.1f}x')} slower than flash2"
    if not timed:
        return f"{head}; nothing measured yet."
    over = [r["flash2 measured ms"] / r["flash2 predicted ms"] for r in timed]
    speedup = [r["measured, torch naive / flash2"] for r in timed if r["measured, torch naive / flash2"]]
    pairs = [r["measured, naive / flash2"] / r["predicted speedup"] for r in timed if r["measured, naive / flash2"]]
    torch = (f" torch's standard attention is {span(speedup, '{:.1f}x')} slower than the project's flash2"
             f"{'' if len(speedup) == len(timed) else f' ({len(speedup)} lengths and shapes)'}, and") if speedup else ""
    ours = (f" The project's naive kernels measure {span(pairs, '{:.2f}x')} the speedup gpusim predicts for them "
            f"({len(pairs)} lengths and shapes).") if pairs else ""
    return (f"{head}; measured,{torch} flash2 takes {span(over, '{:.1f}x')} the time gpusim predicts for it "
            f"({len(timed)} lengths and shapes).{ours}")


def gpu_pair_sentence(h200, h100, providers=(NAIVE, "flash2"), min_seq=2048):
    """Two GPUs' bench_bwd.json files in words: per project kernel, the H100's training-step time (fwd + bwd) over the
    H200's for the same shape, at N >= min_seq (shorter steps wait on the host, whose speed is the machine's); without
    the H200's file (None), says so."""
    if h200 is None:
        return "The H200's bench_bwd.json is not there yet: no step to set the H100's beside."

    def steps(data):
        return {(r["provider"], r["head_dim"], r["causal"], r["seq"]): r["ms"] for r in data["rows"]
                if r["pass"] == "fwd+bwd" and r["provider"] in providers and r["seq"] >= min_seq and r.get("ms")}

    a, b = steps(h200), steps(h100)
    both = b.keys() & a.keys()
    parts = [f"{p} {span([b[k] / a[k] for k in both if k[0] == p], '{:.2f}x')}" for p in providers
             if any(k[0] == p for k in both)]
    return (f"The H100's training step (fwd + bwd) over the H200's for the same shape, N = {min_seq:,} and longer: "
            f"{', '.join(parts)}.")
