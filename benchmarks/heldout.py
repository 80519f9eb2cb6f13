"""Held-out shapes: the project's kernels timed on configurations drawn once, with a fixed seed, that no
benchmark or fit has seen (GQA, bf16, seq_kv != seq, N not a multiple of 64, ragged decode batches).

    python -m benchmarks.heldout --out DIR [--max-minutes 3.5]      # on the GPU: DIR/heldout.json
    python -m benchmarks.heldout --out DIR --dry-run                # anywhere: the rows, unmeasured
    python -m benchmarks.heldout --out DIR --only naive --keep results/h200/heldout.json   # one algo again

shapes(seed) draws the rows (numpy default_rng): forward passes of naive, flash2 (each configuration at three
tiles gpusim accepts) and the Hopper kernel; flash2 training steps (flash2_attention_trainable forward +
o.sum().backward()); decode batches of ragged cache lengths (a DecodePlan from plan_for_cache, its run timed,
over a paged cache, pages of 16). Every forward and training row is valid for gpusim.simulate (tests/test_heldout.py).

Timing: forward and decode rows, the median of the GPU work replayed from a CUDA graph
(benchmarks.bench.gpu_time; do_bench's CUDA events where a call cannot be captured; the row's
"timing" says which), cycling through enough copies of the inputs to exceed the L2 when one set fits in it;
training rows, the wall time per step as a training loop calls it (timing "wall_per_call": steps over the same
cycled copies, grads set to None before each, synchronised before the clock and after the last step (of each chunk,
below), as benchmarks/host.py times a call; what gpusim prices, the GPU's work or the host's per step, whichever is
longer), and the host's speed: a step on a shape whose GPU work is tens of us ("host_probe_us"). Sets from seed 2062
on, and the training rows of the earlier ones (timed again in run 135), took it just before the row (host_probe_us);
sets from seed 2092 on take it over the row's own stretch of time, the row's steps and the probe's in alternating
chunks (_interleaved, "host_probe_us"), and keep the earlier probe beside it ("host_probe_before_us").
Sets measured before run 105 timed training rows with triton.testing.do_bench's CUDA events around each step
after an L2 flush (timing "events"), which misses part of the host's time where the host is slower than the GPU.
The first call of each row is checked against torch SDPA in float32 on a subset of query rows (batch 0, the
first K/V head's query heads); a row whose rel_err exceeds the bound gets "error" and no "ms".

--only ALGO --keep FILE measures again the rows of one algorithm, after a change to its kernels, and keeps the
other rows as FILE has them (the same seed's set); the environment is the new run's, FILE's under "kept". --kind
KIND (with --keep) measures again only the rows of that kind (and of ALGO, where --only is given too).
"""
import argparse
import json
import math
import sys
import time
import zlib

import numpy as np

import gpusim
from benchmarks.bench import cycling, error_line

GPU = "H200-measured"
L2_BYTES = 60 << 20
TILES = ((64, 64), (128, 64), (64, 32), (128, 32), (32, 64), (128, 128), (64, 128), (32, 32))
FLOP_BUDGET = 3e12  # per forward call (~10 ms at worst); naive and training get less
REP_MS = 40  # per timing: do_bench_cudagraph replays 10 graphs of about this long
STEPS_S = 0.3  # per training row: about this long of steps timed, at least MIN_STEPS and at most MAX_STEPS
MIN_STEPS, MAX_STEPS = 20, 200
CHECK_ROWS = 128  # the first and last CHECK_ROWS query rows are checked
PROBE = (1, 4, 256, 64)  # the host probe's batch, heads, N, d: host.json's first shape (GPU work of tens of us)
PROBE_ROUNDS = 4  # a training row's steps timed in this many chunks, each after a chunk of the probe's (_interleaved)
TOL = {"fp16": 1e-2, "bf16": 3e-2}


def _dims(rng, lo=300, hi=32768):
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _seq(rng, lo=300, hi=32768):
    """Mostly not a multiple of 64; now and then one that is."""
    n = _dims(rng, lo, hi)
    if rng.random() < 0.15:
        n = max(64, n // 64 * 64)
    elif n % 64 == 0:
        n += 1 + int(rng.integers(62))
    return n


def _heads(rng, bh_max, group):
    """(batch, heads, kv_heads): heads = kv_heads * group, batch x heads from 8 to min(2048, bh_max)."""
    bh_max = max(8, min(2048, bh_max))
    bh = int(math.exp(rng.uniform(math.log(8), math.log(bh_max))))
    kv_heads = int(rng.choice([1, 2, 4, 8]))
    heads = kv_heads * group
    batch = max(1, bh // heads)
    while batch * heads < 8:
        batch += 1
    while batch * heads > 2048 and batch > 1:
        batch -= 1
    return batch, heads, kv_heads


def _simulate(kind, algo, r, gpu=GPU):
    """gpusim.simulate in count mode for a row on the preset `gpu` (raises where gpusim refuses it)."""
    if kind == "decode":
        return gpusim.simulate("split_kv", batch=r["batch"], heads=r["heads"], kv_heads=r["kv_heads"],
                               head_dim=r["head_dim"], seq_kv=r["seq_kv"], page_size=r["page_size"],
                               dtype=r["dtype"], gpu=gpu)
    return gpusim.simulate(algo, batch=r["batch"], heads=r["heads"], kv_heads=r["kv_heads"], seq=r["seq"],
                           seq_kv=r["seq_kv"], head_dim=r["head_dim"], causal=r["causal"], dtype=r["dtype"],
                           block_q=r["block_q"], block_kv=r["block_kv"], gpu=gpu, backward=kind == "train",
                           backward_blocks=(r["block_q"], r["block_kv"]) if kind == "train" and r["block_q"] else None)


def _prefill(rng, algo, kind):
    """One forward or training configuration (without tiles)."""
    head_dim = int(rng.choice([64, 128]))
    causal = bool(rng.random() < 0.5)
    hi = {"naive": 7500}.get(algo, 16384 if kind == "train" else 32768)  # naive: S and P in HBM
    seq = _seq(rng, hi=hi)
    # seq_kv != seq only without a mask (causal with seq_kv != seq is a choice of alignment)
    seq_kv = seq if causal or rng.random() < 0.6 else _seq(rng, hi=hi)
    group = int(rng.choice([1, 2, 3, 4, 6, 8] if algo != "hopper" else [1, 2, 4, 8]))
    flops = 4 * seq * seq_kv * head_dim / (2 if causal else 1)
    budget = FLOP_BUDGET / {"naive": 8, "flash2": 1, "hopper": 1}[algo] / (3 if kind == "train" else 1)
    bh_max = int(budget / flops)
    if algo == "naive":  # S and P in HBM: at most ~4 GB of scores
        bh_max = min(bh_max, int(5e8 / (seq * seq_kv)))
    batch, heads, kv_heads = _heads(rng, bh_max, group)
    return dict(kind=kind, algo=algo, batch=batch, heads=heads, kv_heads=kv_heads, seq=seq, seq_kv=seq_kv,
                head_dim=head_dim, causal=causal, dtype=str(rng.choice(["fp16", "bf16"])), block_q=None,
                block_kv=None, page_size=None)


def _decode(rng):
    llama = rng.random() < 0.65
    heads, kv_heads, head_dim = (32, 8, 128) if llama else (64, 8, 64)
    batch = int(rng.choice([1, 2, 3, 4, 5, 8, 12, 16]))
    lengths = [int(math.exp(rng.uniform(math.log(1024), math.log(131072)))) for _ in range(batch)]
    while sum(lengths) > 1_000_000:  # K and V of all requests under ~4 GB
        lengths[int(np.argmax(lengths))] //= 2
    lengths = [max(1024, x) for x in lengths]
    return dict(kind="decode", algo="split_kv", batch=batch, heads=heads, kv_heads=kv_heads, seq=1,
                seq_kv=lengths if batch > 1 else lengths[0], head_dim=head_dim, causal=False, dtype="fp16",
                block_q=None, block_kv=None, page_size=16)


def _default_tiles(row, gpu):
    """The tiles the kernel runs when given none: gpusim's on the preset `gpu` (best_blocks, or the Hopper launch
    table's)."""
    try:
        cfg = _simulate(row["kind"], row["algo"], row, gpu).config
        return dict(row, block_q=cfg.block_q, block_kv=cfg.block_kv)
    except Exception:  # noqa: BLE001
        return row


def shapes(seed=2026, gpu=GPU):
    """The held-out rows, in the order they are measured (kinds interleaved, so a deadline cuts all alike), their tiles
    and fits gpusim's on the preset `gpu`: the one the kernels take on the GPU that times them
    (gpusim.hardware.device_preset), so that a row's tiles are the ones its kernel runs."""
    rng = np.random.default_rng(seed)
    groups = {"naive": [], "flash2": [], "hopper": [], "train": [], "decode": []}
    while len(groups["naive"]) < 10:
        groups["naive"].append(_default_tiles(_prefill(rng, "naive", "forward"), gpu))
    while len(groups["flash2"]) < 14 * 3:
        base = _prefill(rng, "flash2", "forward")
        order = list(TILES)
        rng.shuffle(order)
        tiled = []
        for bq, bk in order:
            r = dict(base, block_q=bq, block_kv=bk)
            try:
                _simulate("forward", "flash2", r, gpu)
            except Exception:  # noqa: BLE001
                continue
            tiled.append(r)
            if len(tiled) == 3:
                break
        if len(tiled) == 3:
            groups["flash2"] += tiled
    while len(groups["hopper"]) < 12:
        groups["hopper"].append(_default_tiles(_prefill(rng, "hopper", "forward"), gpu))
    while len(groups["train"]) < 12:
        r = _prefill(rng, "flash2", "train")
        if rng.random() < 0.5:  # half at explicit tiles (forward and backward alike), half at the defaults
            tiles = [t for t in ((128, 64), (64, 64), (128, 32)) if _fits(dict(r, block_q=t[0], block_kv=t[1]), gpu)]
            if tiles:
                r = dict(r, block_q=tiles[0][0], block_kv=tiles[0][1])
        res = _simulate("train", "flash2", r, gpu)  # the tiles the kernels run: forward and backward
        r["tiles_used"] = {"forward": [res.config.block_q, res.config.block_kv],
                           "backward": [res.backward_config.block_q, res.backward_config.block_kv]}
        groups["train"].append(r)
    while len(groups["decode"]) < 12:
        groups["decode"].append(_decode(rng))
    rows = []
    for i in range(max(map(len, groups.values()))):
        for g in groups.values():
            if i < len(g):
                rows.append(g[i])
    return rows


def _fits(r, gpu):
    try:
        _simulate(r["kind"], r["algo"], r, gpu)
        return True
    except Exception:  # noqa: BLE001
        return False


# ---------------------------------------------------------------- GPU part

def input_copies(nbytes):
    return max(1, min(4, math.ceil(2 * L2_BYTES / max(nbytes, 1))))


def _rel(got, ref):
    got, ref = got.detach().double(), ref.detach().double()
    return float((got - ref).norm() / ref.norm())


def _subset_rows(n):
    import torch
    rows = torch.arange(n)
    return rows if n <= 2 * CHECK_ROWS else torch.cat([rows[:CHECK_ROWS], rows[-CHECK_ROWS:]])


def _reference(q, k, v, causal, grad=False):
    """SDPA float32 on batch 0, the query heads of K/V head 0, the checked rows: (o, dq of o.sum()) or o."""
    import torch
    import torch.nn.functional as F
    group = q.shape[1] // k.shape[1]
    rows = _subset_rows(q.shape[2]).to(q.device)
    qs = q[0, :group, rows].float().detach().requires_grad_(grad)
    ks, vs = k[0, :1].float(), v[0, :1].float()
    mask = None
    if causal:
        mask = torch.arange(k.shape[2], device=q.device)[None, :] <= rows[:, None]
    o = F.scaled_dot_product_attention(qs, ks.expand(group, -1, -1), vs.expand(group, -1, -1), attn_mask=mask)
    if not grad:
        return rows, o.detach()
    o.sum().backward()
    return rows, o.detach(), qs.grad


def _gpu_time(call, rep=REP_MS):
    """benchmarks.bench.gpu_time with a shorter repetition: the median of the GPU work replayed from a CUDA
    graph, or CUDA events around each call where the call cannot be captured."""
    from benchmarks.bench import gpu_time
    return gpu_time(call, rep=rep, warmup=10)


def _timer(dev):
    """gpu_time on the GPU; on CPU (--smoke, the interpreter) the wall clock of one call."""
    if dev == "cuda":
        return _gpu_time

    def wall(call):
        t0 = time.perf_counter()
        call()
        return {"ms": (time.perf_counter() - t0) * 1e3, "timing": "wall_clock"}
    return wall


def _sync(dev):
    import torch
    return torch.cuda.synchronize if dev == "cuda" else (lambda: None)


def _steps(step, sync):
    """How many calls of step() STEPS_S holds (at least MIN_STEPS, at most MAX_STEPS), from one call timed after 3
    warm-up calls."""
    from benchmarks.host import per_call_us
    one_us = per_call_us(step, 1, 3, sync)
    return max(MIN_STEPS, min(MAX_STEPS, int(STEPS_S * 1e6 / max(one_us, 1.0))))


def _wall_per_step(step, dev):
    """{"ms", "timing", "steps"}: the wall time per call of step() in a loop, the GPU synchronised before the clock
    starts and once after the last call (benchmarks/host.py's per_call_us), over about STEPS_S of calls."""
    from benchmarks.host import per_call_us
    sync = _sync(dev)
    steps = _steps(step, sync)
    return {"ms": per_call_us(step, steps, 0, sync) / 1e3, "timing": "wall_per_call", "steps": steps}


def probe_step(dev):
    """PROBE's training step (flash2_attention_trainable forward + .sum().backward(), fp16, default tiles), whose GPU
    work is tens of us, so its wall time per call is the host's."""
    import torch
    import gpusim_kernels as K
    b, h, n, d = PROBE if dev == "cuda" else (1, 2, 32, 16)  # on CPU (the interpreter): a shape it runs fast
    q, k, v = (torch.randn(b, h, n, d, device=dev, dtype=torch.float16).requires_grad_() for _ in range(3))

    def step():
        for x in (q, k, v):
            x.grad = None
        K.flash2_attention_trainable(q, k, v).sum().backward()
    return step


def host_probe_us(dev):
    """The host's speed just before a training row, as the sets before seed 2092 took it: probe_step's wall time per
    call, timed as _wall_per_step times a row (the row's "host_probe_before_us" since)."""
    return _wall_per_step(probe_step(dev), dev)["ms"] * 1e3


def _interleaved(step, probe, dev):
    """{"ms", "timing", "steps", "host_probe_us"}: a training row's wall time per call and the host's speed over the
    same stretch of time. The row's steps run in PROBE_ROUNDS chunks, each right after a chunk of probe's, each chunk
    timed as per_call_us (the GPU synchronised before the clock and after the last call); each of the two gets about
    STEPS_S of calls in all. ms and host_probe_us: each one's chunks' time over their calls."""
    from benchmarks.host import per_call_us
    sync = _sync(dev)
    fns = (probe, step)
    per_chunk = [-(-_steps(fn, sync) // PROBE_ROUNDS) for fn in fns]
    total_us = [0.0, 0.0]
    for _ in range(PROBE_ROUNDS):
        for i, fn in enumerate(fns):
            total_us[i] += per_call_us(fn, per_chunk[i], 0, sync) * per_chunk[i]
    probe_us, step_us = (us / (PROBE_ROUNDS * n) for us, n in zip(total_us, per_chunk))
    return {"ms": step_us / 1e3, "timing": "wall_per_call", "steps": PROBE_ROUNDS * per_chunk[1],
            "host_probe_us": probe_us}


def measure_row(row, dev="cuda", warm_only=False):
    import torch
    import gpusim_kernels as K

    gpu_time = _timer(dev)
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[row["dtype"]]
    gen = torch.Generator(device=dev).manual_seed(zlib.crc32(json.dumps(row, sort_keys=True).encode()) % (1 << 31))
    out = {}
    if row["kind"] == "decode":
        return _measure_decode(row, gen, out, dev, warm_only)
    b, h, hk, n, nk, d = (row[x] for x in ("batch", "heads", "kv_heads", "seq", "seq_kv", "head_dim"))
    per_set = (b * h * n + 2 * b * hk * nk) * d * 2

    def inputs():
        q = torch.randn(b, h, n, d, device=dev, dtype=dt, generator=gen)
        k = torch.randn(b, hk, nk, d, device=dev, dtype=dt, generator=gen)
        v = torch.randn(b, hk, nk, d, device=dev, dtype=dt, generator=gen)
        return q, k, v
    causal, bq, bk = row["causal"], row["block_q"], row["block_kv"]
    tol = TOL[row["dtype"]]
    if row["kind"] == "train":
        sets = [tuple(x.requires_grad_() for x in inputs()) for _ in range(1 if warm_only else input_copies(per_set))]
        q, k, v = sets[0]
        bb = row.get("backward_blocks")  # warming only: the defaults' tiles, made explicit

        def step(q, k, v):
            for x in (q, k, v):
                x.grad = None
            K.flash2_attention_trainable(q, k, v, causal=causal, block_q=bq, block_kv=bk,
                                         backward_blocks=bb).sum().backward()
        o = K.flash2_attention_trainable(q, k, v, causal=causal, block_q=bq, block_kv=bk, backward_blocks=bb)
        o.sum().backward()
        if warm_only:
            return out
        rows, ro, rdq = _reference(q, k, v, causal, grad=True)
        group = h // hk
        out["rel_err"] = _rel(o[0, :group, rows], ro)
        out["rel_err_dq"] = _rel(q.grad[0, :group, rows], rdq)
        del o
        if out["rel_err"] > tol or out["rel_err_dq"] > 3 * tol or not torch.isfinite(k.grad).all():
            out["error"] = f"wrong: rel_err {out['rel_err']:.3g}, dq {out['rel_err_dq']:.3g}"
            return out
        out["host_probe_before_us"] = host_probe_us(dev)
        return out | _interleaved(cycling([lambda s=s: step(*s) for s in sets]), probe_step(dev), dev)
    sets = [inputs() for _ in range(1 if warm_only else input_copies(per_set))]
    fn = {"naive": K.naive_attention, "flash2": K.flash2_attention, "hopper": K.hopper_attention}[row["algo"]]
    kw = dict(causal=causal) if row["algo"] == "hopper" else dict(causal=causal, block_q=bq, block_kv=bk)
    call = cycling([lambda s=s: fn(*s, **kw) for s in sets])
    o = fn(*sets[0], **kw)
    if warm_only:
        return out
    rows, ro = _reference(*sets[0], causal)
    out["rel_err"] = _rel(o[0, :h // hk, rows], ro)
    del o
    if not out["rel_err"] <= tol:
        out["error"] = f"wrong: rel_err {out['rel_err']:.3g}"
        return out
    out |= gpu_time(call)
    return out


def _measure_decode(row, gen, out, dev, warm_only=False):
    import torch
    import gpusim_kernels as K
    gpu_time = _timer(dev)
    b, h, hk, d, p = row["batch"], row["heads"], row["kv_heads"], row["head_dim"], row["page_size"]
    lengths = row["seq_kv"] if isinstance(row["seq_kv"], list) else [row["seq_kv"]]
    pages = [-(-x // p) for x in lengths]
    total = sum(pages)
    per_set = 2 * total * p * hk * d * 2

    def inputs():
        q = torch.randn(b, h, 1, d, device=dev, generator=gen).half()
        kc = torch.randn(total, p, hk, d, device=dev, generator=gen).half()
        vc = torch.randn(total, p, hk, d, device=dev, generator=gen).half()
        perm = torch.randperm(total, device=dev, generator=gen).int()
        table = torch.zeros(b, max(pages), dtype=torch.int32, device=dev)
        at = 0
        for i, m in enumerate(pages):
            table[i, :m] = perm[at:at + m]
            at += m
        seqlens = torch.tensor(lengths, dtype=torch.int32, device=dev)
        return q, kc, vc, table, seqlens
    sets = [inputs() for _ in range(1 if warm_only else input_copies(per_set))]
    plans = [K.plan_for_cache(q, kc, vc, cache_seqlens=sl, block_table=t, page_size=p) for q, kc, vc, t, sl in sets]
    launch = plans[0].launch
    out["num_splits"] = getattr(launch, "num_splits", None)
    out["block_kv"] = getattr(launch, "block_kv", None)
    q, kc, vc, t, _ = sets[0]
    o = plans[0].run(q, kc, vc)
    if warm_only:
        return out
    # request 0's reference, contiguous, float32
    k0 = kc[t[0, :pages[0]].long()].flatten(0, 1)[:lengths[0]].transpose(0, 1).float()  # (hk, L, d)
    v0 = vc[t[0, :pages[0]].long()].flatten(0, 1)[:lengths[0]].transpose(0, 1).float()
    q0 = q[0, :, 0].float().view(hk, h // hk, d)
    ref = torch.nn.functional.scaled_dot_product_attention(q0, k0, v0).reshape(h, d)
    out["rel_err"] = _rel(o[0, :, 0], ref)
    if not out["rel_err"] <= TOL["fp16"]:
        out["error"] = f"wrong: rel_err {out['rel_err']:.3g}"
        return out
    out |= gpu_time(cycling([lambda plan=plan, s=s: plan.run(*s[:3]) for plan, s in zip(plans, sets)]))
    return out


SMOKE = [  # --smoke: tiny rows of every kind, run in Triton's interpreter on CPU (the code paths only)
    dict(kind="forward", algo="naive", batch=1, heads=2, kv_heads=1, seq=40, seq_kv=40, head_dim=64, causal=True,
         dtype="fp16", block_q=32, block_kv=32, page_size=None),
    dict(kind="forward", algo="flash2", batch=1, heads=2, kv_heads=1, seq=40, seq_kv=70, head_dim=64, causal=False,
         dtype="bf16", block_q=32, block_kv=32, page_size=None),
    dict(kind="forward", algo="hopper", batch=1, heads=2, kv_heads=1, seq=40, seq_kv=40, head_dim=64, causal=True,
         dtype="fp16", block_q=None, block_kv=None, page_size=None),
    dict(kind="train", algo="flash2", batch=1, heads=2, kv_heads=1, seq=40, seq_kv=40, head_dim=64, causal=True,
         dtype="fp16", block_q=32, block_kv=32, page_size=None),
    dict(kind="decode", algo="split_kv", batch=2, heads=4, kv_heads=1, seq=1, seq_kv=[70, 33], head_dim=64,
         causal=False, dtype="fp16", block_q=None, block_kv=None, page_size=16),
]


def _small(row):
    """The row at batch 1 and one K/V head (same group, N, N_kv, d, dtype, mask and tiles as the kernels run
    on it): the same compiled kernels, for warming Triton's cache. Decode rows stay whole (their launch
    depends on the batch's lengths)."""
    if row["kind"] == "decode":
        return row
    group = row["heads"] // row["kv_heads"]
    r = dict(row, batch=1, heads=group, kv_heads=1)
    if row["kind"] == "train" and row.get("tiles_used"):
        r["block_q"], r["block_kv"] = row["tiles_used"]["forward"]
        r["backward_blocks"] = row["tiles_used"]["backward"]
    return r


def warm_one(row, dev="cuda"):
    """Compile (and run once) the kernels of one row in a worker process."""
    try:
        measure_row(_small(row), dev, warm_only=True)
        return None
    except Exception as err:  # noqa: BLE001
        return f"{type(err).__name__}: {str(err)[:200]}"


def warm(rows, limit_s, workers, dev="cuda"):
    """Triton's cache warmed for every row in a spawned process pool, at most limit_s seconds."""
    from concurrent.futures import ProcessPoolExecutor, wait
    from multiprocessing import get_context
    t0 = time.monotonic()
    pool = ProcessPoolExecutor(workers, mp_context=get_context("spawn"))
    futures = [pool.submit(warm_one, r, dev) for r in rows]
    done, _ = wait(futures, timeout=limit_s)
    failed = [f.result() for f in done if f.exception() is None and f.result()]
    failed += [str(f.exception())[:200] for f in done if f.exception() is not None]
    pool.shutdown(wait=False, cancel_futures=True)
    return {"rows": len(rows), "done": len(done), "failed": failed[:20], "s": round(time.monotonic() - t0, 1)}


def _check_preset(gpu):
    """One line unless `gpu` is the preset this device's kernels take their tiles from (the rows must be theirs)."""
    import torch
    from gpusim.hardware import device_preset
    props = torch.cuda.get_device_properties(0)
    own = device_preset(props.name, props.total_memory)
    if own != gpu:
        raise SystemExit(f"--gpu {gpu}: this {props.name}'s kernels take their tiles from {own}; pass --gpu {own}")


def _chosen(row, only, kind):
    """A row --only and --kind measure (each None: any)."""
    return only in (None, row["algo"]) and kind in (None, row["kind"])


def run(out_dir, max_minutes, dry_run, seed=2026, smoke=False, warm_s=0.0, only=None, keep=None, kind=None, gpu=GPU):
    import os
    rows = SMOKE if smoke else shapes(seed, gpu)
    kept = json.loads(open(keep).read()) if keep else None
    if kept is not None and (kept["seed"] != seed or len(kept["rows"]) != len(rows)):
        raise SystemExit(f"--keep {keep} holds seed {kept['seed']}'s {len(kept['rows'])} rows, not seed {seed}'s")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "heldout.json" if seed == 2026 else f"heldout_{seed}.json")
    command = "python -m benchmarks.heldout " + " ".join(sys.argv[1:])
    if dry_run or smoke:
        env = {"gpu": None, "command": command, "dry_run": dry_run, "smoke": smoke}
    else:
        from benchmarks.run_env import environment
        env = environment(command)
        _check_preset(gpu)
    env["preset"] = gpu  # the rows' tiles are gpusim's on it
    if kept is not None:
        env |= {"only": only, "kind": kind, "kept": kept["environment"]}
    result = {"environment": env, "seed": seed, "rows": []}
    deadline = time.monotonic() + max_minutes * 60
    if warm_s > 0 and not dry_run and not smoke:
        import os as _os
        todo = [r for r in rows if _chosen(r, only, kind)]
        result["environment"]["warm"] = warm(todo, warm_s, min(12, max(1, (_os.cpu_count() or 2) - 2)))
        print("warm:", result["environment"]["warm"], flush=True)
    for i, row in enumerate(rows):
        if time.monotonic() > deadline:
            result["environment"]["truncated"] = f"stopped by --max-minutes {max_minutes} after {i} of {len(rows)}"
            break
        r = dict(row, ms=None)
        t0 = time.monotonic()
        if kept is not None and not _chosen(row, only, kind):
            result["rows"].append(kept["rows"][i])
            continue
        if not dry_run:
            import torch
            try:
                r |= measure_row(row, "cpu" if smoke else "cuda")
            except torch.cuda.OutOfMemoryError:
                r["error"] = "OOM"
            except Exception as err:  # noqa: BLE001 - record it, go on
                r["error"] = error_line(err)
            if not smoke:
                torch.cuda.empty_cache()
        r["wall_s"] = round(time.monotonic() - t0, 2)
        result["rows"].append(r)
        print(f"{i:3d} {r['kind']:7s} {r['algo']:8s} b{r['batch']} h{r['heads']}/{r['kv_heads']} n{r['seq']} "
              f"kv{r['seq_kv'] if not isinstance(r['seq_kv'], list) else len(r['seq_kv'])} d{r['head_dim']} "
              f"{'c' if r['causal'] else '-'} {r['dtype']} {r['block_q']}x{r['block_kv']} -> "
              f"{r.get('ms') if r.get('ms') is None else round(r['ms'], 4)} {r.get('error', '')} ({r['wall_s']} s)",
              flush=True)
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    ok = sum(r.get("ms") is not None for r in result["rows"])
    print(f"heldout: {ok} of {len(result['rows'])} rows timed ({len(rows)} drawn) -> {path}")
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder; writes heldout.json (heldout_SEED.json for another seed)")
    ap.add_argument("--max-minutes", type=float, default=3.5)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--dry-run", action="store_true", help="draw and write the rows without measuring")
    ap.add_argument("--smoke", action="store_true", help="CPU, TRITON_INTERPRET=1: tiny rows of every kind")
    ap.add_argument("--warm-seconds", type=float, default=60.0,
                    help="compile every row's kernels first in a process pool, at most this long (0: do not)")
    ap.add_argument("--only", help="measure only this algorithm's rows (with --keep)")
    ap.add_argument("--kind", choices=("forward", "train", "decode"), help="measure only rows of this kind (with --keep)")
    ap.add_argument("--keep", help="the set's results file: its other rows are kept as they are")
    ap.add_argument("--gpu", default=GPU, help="the preset the rows' tiles are drawn on: the one the kernels take "
                    f"on the GPU that times them (gpusim.hardware.device_preset; default {GPU})")
    args = ap.parse_args(argv)
    if (args.only is None and args.kind is None) != (args.keep is None):
        ap.error("--keep goes with --only or --kind, and they with it")
    try:
        preset = gpusim.get_gpu(args.gpu).name
    except ValueError as err:
        ap.error(str(err))
    run(args.out, args.max_minutes, args.dry_run, args.seed, args.smoke, args.warm_seconds, args.only, args.keep,
        args.kind, preset)


if __name__ == "__main__":
    main()
