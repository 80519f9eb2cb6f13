"""Per-call wall cost of the project's entry points on small shapes, where the GPU waits for the host, beside
SDPA's (results/h200/host.json; issue 24's targets).

    python -m benchmarks.host --out DIR           # on the GPU: DIR/host.json (under a minute)
    TRITON_INTERPRET=1 python -m benchmarks.host --out DIR --smoke    # CPU: the code paths, few calls

us: wall time per call over CALLS calls after WARMUP warm-up calls, one torch.cuda.synchronize at the end
(and one before the clock starts), as a Python loop calls them; the median of ROUNDS such rounds, each entry's
taken in turn with SDPA's, the entry first in every other round (ABBA; runs 189-191 had five rounds, the entry's
always first), and ratio the median of the rounds' ratios (the files before run 189: one round each, SDPA's after
the entry's, ratio us / sdpa_us). From run 195 also us_call, sdpa_us_call and ratio_call (interleaved): CALL_PAIRS
calls of each, interleaved call by call, each call's host time, their medians and the medians' ratio.
Entries, fp16, each shape: flash2_attention
(default tiles, and at explicit 64 x 64: "flash2_attention[64x64]"), hopper_attention, naive_attention
(three launches), flash2_train_step (flash2_attention_trainable forward, .sum().backward(), grads set to None
before each call); sdpa_us: SDPA forced to its flash backend, the forward (or for the train step its forward
and backward). Decode (batch 1, 64 query heads, 8 K/V heads, d 128, pages of 16, 4K and 64K cached tokens):
decode_attention eager, the DecodePlan alone, its run alone (on one plan), beside SDPA flash on
a contiguous (1, 8, L, 128) cache with enable_gqa=True.
"""
import argparse
import json
import os
import statistics
import sys
import time

from benchmarks.bench import error_line

SHAPES = ((1, 4, 256, 64), (1, 8, 128, 64), (2, 4, 512, 128))
DECODE = dict(heads=64, kv_heads=8, head_dim=128, page_size=16, seq_kvs=(4096, 65536))
CALLS, WARMUP = 200, 20
CALL_PAIRS = 1000  # call by call: an entry's call and SDPA's, each timed alone (interleaved)
ROUNDS = 6  # an entry and SDPA's in turn, ABBA, each a round of CALLS calls (the decode rows: one round each)


def per_call_us(fn, calls, warmup, sync):
    for _ in range(warmup):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - t0) / calls * 1e6


def entries(q, k, v):
    """name -> (fn, sdpa fn) on q, k, v (which require grad)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import gpusim_kernels as K

    def no_grad(*xs):
        for x in xs:
            x.grad = None

    def sdpa_fwd():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(qd, kd, vd)

    def sdpa_step():
        no_grad(q, k, v)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            F.scaled_dot_product_attention(q, k, v).sum().backward()

    def train_step():
        no_grad(q, k, v)
        K.flash2_attention_trainable(q, k, v).sum().backward()

    qd, kd, vd = q.detach(), k.detach(), v.detach()
    return {"flash2_attention": (lambda: K.flash2_attention(qd, kd, vd), sdpa_fwd),
            "flash2_attention[64x64]": (lambda: K.flash2_attention(qd, kd, vd, block_q=64, block_kv=64), sdpa_fwd),
            "hopper_attention": (lambda: K.hopper_attention(qd, kd, vd), sdpa_fwd),
            "naive_attention": (lambda: K.naive_attention(qd, kd, vd), sdpa_fwd),
            "flash2_train_step": (train_step, sdpa_step)}


def measure(fn, calls, warmup, sync):
    try:
        return per_call_us(fn, calls, warmup, sync), None
    except Exception as err:  # noqa: BLE001 - record it, go on
        return None, error_line(err)


def paired(fn, sdpa, calls, warmup, sync, rounds):
    """{us, sdpa_us, ratio, us_rounds, sdpa_us_rounds}, or {error}: fn and SDPA's fn timed in turn, ROUNDS times
    (each a per_call_us of CALLS calls, warmed up before the first), fn first in even rounds and SDPA's first in
    odd ones (ABBA: a host speeding up or slowing down through a pair favours each side in as many rounds); us and
    sdpa_us the medians of their rounds, ratio the median of the rounds' ratios (each round's fn over that round's
    SDPA): a shared host that changes speed between rounds (SDPA's step took 206-434 µs a round in one run,
    docs/perf.md) then changes both sides of a ratio."""
    times = {"us_rounds": [], "sdpa_us_rounds": []}
    for r in range(rounds):
        pair = (("us_rounds", fn), ("sdpa_us_rounds", sdpa))
        for name, f in pair[::-1] if r % 2 else pair:
            us, err = measure(f, calls, warmup if r == 0 else 0, sync)
            if err:
                return {"error": err if name == "us_rounds" else f"sdpa: {err}"}
            times[name].append(round(us, 2))
    return {"us": statistics.median(times["us_rounds"]), "sdpa_us": statistics.median(times["sdpa_us_rounds"]),
            "ratio": statistics.median(a / b for a, b in zip(*times.values())), **times}


def interleaved(fn, sdpa, pairs, sync):
    """{us_call, sdpa_us_call, ratio_call}: `pairs` times one call of fn and one of SDPA's, fn first in even pairs
    and SDPA's first in odd ones, each call's host time (perf_counter either side, no synchronisation between:
    the GPU waits for the host on these shapes) kept; us_call and sdpa_us_call their medians, ratio_call the
    medians' ratio. Paired call by call, a host whose speed changes over tens of milliseconds (run 193's rounds of
    200 steps ran 0.67-2.23x SDPA's) moves both sides alike, and the median leaves out the calls a stall
    lengthened. Not the rounds' measure: each call runs after the other side's, and costs more so, by an amount
    of its own (run 195, docs/perf.md: the forwards' ratio_call drawn toward 1, SDPA's step lengthened more than
    ours), so ratio_call is steadier than the rounds' ratio but not the same figure."""
    times = ([], [])
    clock = time.perf_counter
    sync()
    for i in range(pairs):
        for side in ((0, 1), (1, 0))[i % 2]:
            f = (fn, sdpa)[side]
            t0 = clock()
            f()
            times[side].append(clock() - t0)
    sync()
    us, sdpa_us = (statistics.median(t) * 1e6 for t in times)
    return {"us_call": round(us, 2), "sdpa_us_call": round(sdpa_us, 2), "ratio_call": us / sdpa_us}


def decode_rows(device, calls, warmup, sync, seq_kvs):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import gpusim_kernels as K
    h, hk, d, p = DECODE["heads"], DECODE["kv_heads"], DECODE["head_dim"], DECODE["page_size"]
    rows = []
    for L in seq_kvs:
        pages = -(-L // p)
        gen = torch.Generator(device=device).manual_seed(L)
        q = torch.randn(1, h, 1, d, device=device, generator=gen).half()
        kc, vc = (torch.randn(pages, p, hk, d, device=device, generator=gen).half() for _ in range(2))
        table = torch.randperm(pages, device=device, generator=gen).int().view(1, pages)
        lengths = torch.tensor([L], dtype=torch.int32, device=device)
        kf, vf = (x[table.long()].flatten(1, 2)[:, :L].transpose(1, 2).contiguous() for x in (kc, vc))

        def sdpa():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(q, kf, vf, enable_gqa=True)
        sdpa_us, sdpa_err = measure(sdpa, calls, warmup, sync)
        kw = dict(cache_seqlens=lengths, block_table=table, page_size=p)
        plan_kw = dict(heads=h, kv_heads=hk, head_dim=d, dtype=q.dtype, device=device, page_size=p,
                       max_cache_len=pages * p)
        plan = K.DecodePlan([L], **plan_kw)
        for entry, fn in (("decode_attention", lambda: K.decode_attention(q, kc, vc, **kw)),
                          ("DecodePlan", lambda: K.DecodePlan([L], **plan_kw)),
                          ("DecodePlan.run", lambda: plan.run(q, kc, vc, table, lengths))):
            us, err = measure(fn, calls, warmup, sync)
            row = dict(entry=entry, batch=1, heads=h, kv_heads=hk, seq=1, seq_kv=L, head_dim=d, page_size=p,
                       num_splits=plan.num_splits, us=us, sdpa_us=sdpa_us)
            if err or sdpa_err:
                row["error"] = err or f"sdpa: {sdpa_err}"
            rows.append(row)
            print(entry, L, us, sdpa_us, err or "", flush=True)
        q = kc = vc = kf = vf = plan = None  # free the caches before the next length
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder; writes host.json")
    ap.add_argument("--smoke", action="store_true", help="CPU (TRITON_INTERPRET=1): tiny shapes, few calls")
    args = ap.parse_args(argv)
    import torch
    device = "cpu" if args.smoke else "cuda"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    calls, warmup, rounds, pairs = (2, 1, 2, 2) if args.smoke else (CALLS, WARMUP, ROUNDS, CALL_PAIRS)
    shapes = ((1, 2, 32, 64),) if args.smoke else SHAPES
    command = "python -m benchmarks.host " + " ".join(sys.argv[1:])
    if device == "cuda":
        from benchmarks.run_env import environment
        env = environment(command)
    else:
        env = {"gpu": None, "command": command, "smoke": True}
    env |= {"calls": calls, "warmup": warmup, "rounds": rounds, "call_pairs": pairs, "dtype": "fp16"}
    result = {"environment": env, "rows": []}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "host.json")
    for b, h, n, d in shapes:
        try:
            gen = torch.Generator(device=device).manual_seed(n)
            q, k, v = (torch.randn(b, h, n, d, device=device, generator=gen).half().requires_grad_() for _ in range(3))
            todo = entries(q, k, v)
        except Exception as err:  # noqa: BLE001
            result["rows"].append(dict(entry="inputs", batch=b, heads=h, seq=n, head_dim=d,
                                       error=f"{type(err).__name__}: {err}"[:300]))
            continue
        for entry, (fn, sdpa) in todo.items():
            timed = paired(fn, sdpa, calls, warmup, sync, rounds)
            if "error" not in timed:
                try:
                    timed |= interleaved(fn, sdpa, pairs, sync)
                except Exception as err:  # noqa: BLE001 - record it, go on
                    timed["error"] = f"interleaved: {error_line(err)}"
            row = dict(entry=entry, batch=b, heads=h, seq=n, head_dim=d, us=None, sdpa_us=None, ratio=None) | timed
            result["rows"].append(row)
            print(f"{entry:24s} {b}x{h}x{n}x{d}: {row['us']} us, SDPA {row['sdpa_us']} us {row.get('error', '')}",
                  flush=True)
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
    try:
        result["rows"] += decode_rows(device, calls, warmup, sync, (300,) if args.smoke else DECODE["seq_kvs"])
    except Exception as err:  # noqa: BLE001
        result["rows"].append(dict(entry="decode_attention", error=f"{type(err).__name__}: {err}"[:300]))
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"host: {sum(r.get('us') is not None for r in result['rows'])} of {len(result['rows'])} rows -> {path}")


if __name__ == "__main__":
    main()
