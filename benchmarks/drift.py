"""How far apart flash2's programs in flight drift, and what an L2 that keeps the most recent bytes makes of it: the
probe docs/perf.md asks for at the DRAM edge ("Why no rule on what fits can close the edge").

    python -m benchmarks.drift --out $OUT                             # GPU: $OUT/drift.json and drift_stamps.npz
    python -m benchmarks.drift --out results/h200 --analyse           # CPU, after: the LRU's K/V reads into the rows
    TRITON_INTERPRET=1 python -m benchmarks.drift --out /tmp/d --smoke  # CPU: a tiny launch, a fake clock

flash2's kernel (kernels/flash2.py) is compiled from its source with one change: each program writes the GPU's
%globaltimer (ns) when it starts, at every EVERY-th K/V step after the step's loads, and when it ends. Nsight's
non-causal flash2 launches from N = 16,384 up (ncu.json, run 153; ncu_edges*.json, run 90), those at the DRAM edge
and those beside it that Nsight found within 10% (16,384 and 24,576 at d = 128, 32,768 and 40,960 at d = 64), run
that way REPEATS times, each after the L2 is flushed, and once plain under do_bench (the instrumented launch's own
span beside it says what the stamps cost). lru_kv_reads then replays every program's reads in the order of their times, each
step's K_j and V_j placed between the stamps in proportion, through an L2 that keeps the most recent
`capacity` bytes (least recently used out first; Q_i and O_i take their room too) at gpusim's capacity for data
read from every SM (GPU.l2_reuse_bytes) and at run 65's measured point where half the re-reads missed
(l2_reuse.json): how many times K and V came from DRAM, against what Nsight measured. Nothing of it is a constant
of gpusim's model; it is a test of the explanation that drift makes the difference.
"""
import json
import math
from collections import OrderedDict
from pathlib import Path

import numpy as np

from benchmarks import probe

SHAPES = [dict(seq=n, head_dim=d, heads=16 if d == 128 else 32, block_kv=128 if d == 128 else 64)
          for d, seqs in ((128, (16384, 24576, 32768, 40960, 65536, 98304)), (64, (32768, 40960, 65536, 98304)))
          for n in seqs]  # batch 1, fp16, block_q 128, not causal: as Nsight profiled them
REPEATS = 2
STAMPS_PER_PROGRAM = 24  # a program's stamps: its start, its steps at every EVERY-th, its end
SMOKE = dict(SHAPES=[dict(seq=256, head_dim=16, heads=2, block_kv=32)], REPEATS=1)
NOW = '''

@triton.jit
def _now(j):
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,r", [j], dtype=tl.int64, is_pure=False, pack=1)
'''
FAKE_NOW = '''

@triton.jit
def _now(j):
    return tl.zeros([], tl.int64) + j  # the interpreter runs no PTX: the step stands for the time
'''


def stamped_source(source, interpreted):
    """kernels/flash2.py's source with the stamps: STAMPS (int64, a row of `SLOTS` a program) and EVERY after O."""
    edits = [
        ("from .launch import", (FAKE_NOW if interpreted else NOW) + "\n\nfrom .launch import"),
        ("Bc: tl.constexpr, CAUSAL: tl.constexpr, MASKED: tl.constexpr):",
         "Bc: tl.constexpr, CAUSAL: tl.constexpr, MASKED: tl.constexpr, STAMPS, EVERY):"),
        ("        v_j = tl.load(V + kv_head + kv_offs, mask=kv_mask, other=0.0)  # read Bc*d\n",
         "        v_j = tl.load(V + kv_head + kv_offs, mask=kv_mask, other=0.0)  # read Bc*d\n"
         "        if j % EVERY == 0:\n            tl.store(STAMPS + 1 + j // EVERY, _now(j))\n"),
        ("def flash2_kernel(Q, K, V, O, LSE, N, N_KV, scale,", "def flash2_kernel(Q, K, V, O, LSE, STAMPS, SLOTS, EVERY, N, N_KV, scale,"),
        ("    q_head = bh * N * D\n",
         "    q_head = bh * N * D\n    STAMPS += (bh * tl.num_programs(0) + i) * SLOTS\n"
         "    tl.store(STAMPS, _now(i))\n"),
        ("CAUSAL, False)", "CAUSAL, False, STAMPS, EVERY)"),
        ("CAUSAL, True)", "CAUSAL, True, STAMPS, EVERY)"),
        ("    tl.store(LSE + bh * N + rows, m_i + tl.log(l_i), mask=rows < N)  # write Br (fp32)\n",
         "    tl.store(LSE + bh * N + rows, m_i + tl.log(l_i), mask=rows < N)  # write Br (fp32)\n"
         "    tl.store(STAMPS + SLOTS - 1, _now(i))\n"),
    ]
    for old, new in edits:
        if source.count(old) != 1:
            raise ValueError(f"kernels/flash2.py changed: {old.strip()[:60]!r} is not where drift.py looks for it")
        source = source.replace(old, new)
    return source.replace("from .", "from gpusim_kernels.")


def stamped_kernel():
    """flash2_kernel with the stamps, imported from a module of its own."""
    import importlib.util
    import tempfile

    from gpusim_kernels import flash2
    path = Path(tempfile.mkdtemp()) / "flash2_stamped.py"
    path.write_text(stamped_source(Path(flash2.__file__).read_text(), probe.INTERPRETED))
    spec = importlib.util.spec_from_file_location("flash2_stamped", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.flash2_kernel


def step_times(stamps, every, steps):
    """(programs, steps) times of each K/V step, from the stamps (start, steps 0, every, 2 every, ..., end): a step
    between two stamps at its share of the interval; the steps after the last stamped one up to the end."""
    stamped = np.arange(0, steps, every)
    at = np.append(stamped, steps)  # the end stands for step `steps`
    t = stamps[:, 1:].astype(np.float64)  # drop the start
    j = np.arange(steps)
    seg = np.minimum(j // every, len(stamped) - 1)
    frac = (j - at[seg]) / (at[seg + 1] - at[seg])
    return t[:, seg] + frac * (t[:, seg + 1] - t[:, seg])


def lru_kv_reads(stamps, every, steps, programs_per_head, q_bytes, kv_bytes, capacity):
    """How many times K and V came from DRAM (their bytes read over theirs) through an L2 keeping the most recent
    `capacity` bytes, each program reading Q_i at its start, K_j and V_j (kv_bytes together) at its step times and
    writing O_i (q_bytes) at its end, in the order of the times (ties: program order)."""
    n_prog = len(stamps)
    times = step_times(stamps, every, steps)
    t = np.concatenate([stamps[:, 0], times.ravel(), stamps[:, -1]])
    head = np.arange(n_prog) // programs_per_head
    kv_item = (head[:, None] * steps + np.arange(steps)[None, :]).ravel()
    base = int(head.max() + 1) * steps
    item = np.concatenate([base + np.arange(n_prog), kv_item, base + n_prog + np.arange(n_prog)])
    size = np.concatenate([np.full(n_prog, q_bytes), np.full(kv_item.size, kv_bytes), np.full(n_prog, q_bytes)])
    order = np.argsort(t, kind="stable")
    held, used, misses = OrderedDict(), 0, 0
    for x, b in zip(item[order].tolist(), size[order].tolist()):
        if x in held:
            held.move_to_end(x)
            continue
        misses += x < base
        held[x] = b
        used += b
        while used > capacity:
            used -= held.popitem(last=False)[1]
    return misses / (int(head.max() + 1) * steps)


def layout(shape):
    """(programs a head, K/V steps, every, slots, Q_i bytes, K_j and V_j bytes) of a shape's launch."""
    n, d, bkv = shape["seq"], shape["head_dim"], shape["block_kv"]
    steps = math.ceil(n / bkv)
    every = max(1, math.ceil(steps / (STAMPS_PER_PROGRAM - 2)))
    return math.ceil(n / 128), steps, every, 2 + math.ceil(steps / every), 128 * d * 2, 2 * bkv * d * 2


def measure(results, out):
    import torch
    import triton

    import gpusim
    from gpusim_kernels import flash2_attention
    from gpusim_kernels.launch import constants
    kernel, device = stamped_kernel(), probe.DEVICE
    flush = torch.empty(256 * 2**20 if device == "cuda" else 1, dtype=torch.int8, device=device)
    arrays = {}
    for shape in SHAPES:
        n, d, heads = shape["seq"], shape["head_dim"], shape["heads"]
        per_head, steps, every, slots, q_bytes, kv_bytes = layout(shape)
        q, k, v = (torch.randn(1, heads, n, d, device=device, dtype=torch.float16) for _ in range(3))
        cfg = gpusim.simulate("flash2", seq=n, head_dim=d, heads=heads, block_q=128, block_kv=shape["block_kv"],
                              gpu="H200").config
        o, lse = torch.empty_like(q), torch.empty(1, heads, n, dtype=torch.float32, device=device)
        stamps = torch.zeros(cfg.bh * per_head, slots, dtype=torch.int64, device=device)
        row = {**shape, "batch": 1, "block_q": 128, "every": every, "programs": cfg.bh * per_head,
               "plain_ms": probe.median_ms(lambda: flash2_attention(q, k, v, block_q=128, block_kv=shape["block_kv"]))}
        for r in range(REPEATS):
            flush.zero_()
            kernel[(per_head, cfg.bh)](q, k, v, o, lse, stamps, slots, every, n, n, d**-0.5,
                                       **constants(cfg, "flash2"))
            s = stamps.cpu().numpy()
            if device == "cuda" and not s.all():  # %globaltimer is never 0: a slot the kernel did not write
                raise RuntimeError(f"N = {n}, d = {d}: {int((s == 0).sum())} stamp slots were not written")
            s = s - s.min()
            arrays[f"n{n}_d{d}_r{r}"] = s.astype(np.uint32)
            row[f"stamped_ms_{r}"] = float(s[:, -1].max()) * 1e-6
            row[f"start_spread_us_{r}"] = _start_spread_us(s, per_head)
        ref = flash2_attention(q, k, v, block_q=128, block_kv=shape["block_kv"])
        row["max_abs_diff_vs_flash2"] = float((o - ref).abs().max())  # the stamps change nothing else
        results.add(row)
        np.savez_compressed(Path(out) / "drift_stamps.npz", **arrays)  # after every shape, as the rows are


def analyse(folder):
    """drift.json's rows in `folder` with K and V's reads through the LRU L2 (kv_reads_R: {capacity's name: times}),
    from drift_stamps.npz beside it, at the capacity of the GPU the run names (its preset's; on the H200 also run
    65's measured one); rewritten in place."""
    import gpusim
    path = Path(folder) / "drift.json"
    data, stamps = json.loads(path.read_text()), np.load(Path(folder) / "drift_stamps.npz")
    name = data["environment"]["gpu"]
    preset = gpusim.get_gpu(gpusim.hardware.device_preset(name) or "H200-measured")
    capacities = {"gpusim": preset.l2_reuse_bytes(every_sm=True)}  # the GPU the stamps were taken on
    if name == "NVIDIA H200":  # run 65 measured the H200's alone
        capacities["half_missed"] = _half_missed()
    for row in data["rows"]:
        per_head, steps, every, _, q_bytes, kv_bytes = layout(row)
        for r in range(sum(f"stamped_ms_{r}" in row for r in range(len(stamps.files)))):  # the repeats it ran
            s = stamps[f"n{row['seq']}_d{row['head_dim']}_r{r}"].astype(np.int64)
            row[f"kv_reads_{r}"] = {name: lru_kv_reads(s, every, steps, per_head, q_bytes, kv_bytes, c)
                                    for name, c in capacities.items()}
    path.write_text(json.dumps(data, indent=1))
    return data


def _start_spread_us(stamps, per_head):
    """The median over heads of the spread (us) of the start times of a head's programs, first to last."""
    starts = stamps[:, 0].reshape(-1, per_head)
    return float(np.median(starts.max(1) - starts.min(1))) * 1e-3


def _half_missed():
    """Run 65's working set at which half the re-reads of data read from every SM missed (l2_reuse.json)."""
    path = Path(__file__).resolve().parent.parent / "results" / "h200" / "l2_reuse.json"
    return json.loads(path.read_text())["half_missed_at_bytes"]["every_sm"]


def main(argv=None):
    ap = probe.parser(__doc__, "drift.json", pool=False)
    ap.add_argument("--analyse", action="store_true", help="add the LRU's K/V reads to --out's drift.json (CPU)")
    args = ap.parse_args(argv)
    if args.smoke:
        globals().update(SMOKE)
    if args.analyse:
        return analyse(args.out)
    results = probe.open_results("drift.json", args, argv)
    measure(results, results.path.parent)


if __name__ == "__main__":
    main()
