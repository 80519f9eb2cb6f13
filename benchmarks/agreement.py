"""gpusim's time model against the H200's measurements: every row of the project's kernels in the results
files re-simulated from its own configuration on the H200-measured preset, with the ratio predicted /
measured. tests/test_results.py checks the bounds docs/perf.md states.

- bench.json, tiles.json: the forward kernels (naive, flash1, flash2, hopper);
- decode.json: the split-KV decode kernel (provider split_kv, num_splits by gpusim.decode's rule), the same
  kernel with num_splits = 1 (split_kv_1) and over a contiguous cache (split_kv_contiguous), and at batch 1 the slowdown of num_splits = 1,
  predicted against measured, per cache length;
- bench_bwd.json: the backward (pass "bwd": the backward's kernels alone) and the training step (pass
  "fwd+bwd": the forward's kernels, then the backward's) of the project's flash2 and naive kernels.

    python -m benchmarks.agreement                   # summary per file and kernel, worst rows
"""
import json
import statistics
import sys
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import gpusim
import gpusim.passes.hopper
from gpusim import decode
from gpusim_course.provenance import heldout

RESULTS = Path(__file__).resolve().parents[1] / "results" / "h200"
H100 = RESULTS.parent / "h100"  # the H100's files (results/h200/README.md lists them too)
PRESET = "H200-measured"
KERNELS = ("naive", "flash1", "flash2", "hopper")
DECODE = ("split_kv", "split_kv_1", "split_kv_contiguous")  # decode.json's providers that are the project's kernel
FILES = ("bench.json", "tiles.json", "decode.json", "bench_bwd.json")
# What docs/perf.md states and tests/test_agreement.py checks for decoding and training: per file and group of
# rows ("all", a kernel, a pass or "batch N"), the least share within 20% and within 40%.
# decode.json "all": 95% within 20%, above #10's target of 90% (the worst rows at 1K tokens, where the model
# prices more of the reduce's launch than PDL hides). bench_bwd.json "all": 98% within 40% since cost.last_per_sm (the
# twenty-sixth session) moved its d = 64 causal N = 512 fwd+bwd row from 0.612 to 0.599 (docs/perf.md, "A launch's last
# wave").
BOUNDS = {("decode.json", "all"): (0.95, 0.97), ("decode.json", "split_kv_1"): (0.95, 1.0),
          ("decode.json", "batch 64"): (1.0, 1.0), ("bench_bwd.json", "all"): (0.9, 0.98),
          ("bench_bwd.json", "bwd"): (0.9, 1.0), ("bench_bwd.json", "naive"): (0.9, 1.0)}


def group(file, name_):
    """The (row, ratio) pairs of a BOUNDS group."""
    pairs = rows(file)
    if name_ == "all":
        return pairs
    if name_.startswith("batch "):
        return [p for p in pairs if p[0]["batch"] == int(name_.split()[1])]
    return [p for p in pairs if name_ in (p[0].get("pass"), p[0].get("provider"))]


def simulated(row, gpu=PRESET):
    """gpusim's Result for a results row of one of the project's kernels, from the row's own configuration, on the
    preset `gpu` (the H200's measured one unless given: the H100's files take H100-measured)."""
    algo = row.get("algo", row.get("provider"))
    if algo in DECODE:
        return gpusim.simulate("split_kv", **decode.launch_options(row), gpu=gpu)
    shape = dict(seq=row["seq"], head_dim=row["head_dim"], heads=row["heads"], batch=row["batch"],
                 causal=row["causal"], dtype=row["dtype"], gpu=gpu)
    if "pass" in row:  # a training row's tiles are the backward's; flash2's forward runs on its default tile,
        # naive attention's trainable runs both passes on the same tiles (kernels/naive_backward.py)
        tiles = (row["block_q"], row["block_kv"])
        forward = dict(zip(("block_q", "block_kv"), tiles)) if algo == "naive" else {}
        return gpusim.simulate(algo, **shape, **forward, backward=True, backward_blocks=tiles)
    blocks = {key: row[key] for key in ("block_q", "block_kv") if row.get(key) is not None}
    return gpusim.simulate(algo, **shape, **blocks)  # a row without tiles ran the kernel's default, simulate's


def predicted_s(row, gpu=PRESET):
    """The predicted time of what the row timed (on the preset `gpu`): for a training row's "bwd" pass, the backward's
    kernels."""
    result = simulated(row, gpu)
    if row.get("pass") == "bwd":
        return sum(k.predicted_time_s for k in result.kernels if k.pass_ == "backward")
    return result.predicted_time_s  # a training step: at least its host cost (GPU.train_step_host_s)


def rule_launch(row):
    """Whether a tile-sweep row ran the launch the kernel's rule gives its tiles (the one gpusim prices). The rule is
    the kernel's launch table, which no trial of the model swaps: once a process per launch."""
    fields = ("algo", "seq", "head_dim", "heads", "batch", "causal", "dtype", "block_q", "block_kv", "num_warps",
              "num_stages", "warp_specialize")
    return _rule_launch(tuple(row.get(key) for key in fields))


@lru_cache(maxsize=None)
def _rule_launch(launch):
    algo, seq, head_dim, heads, batch, causal, dtype, block_q, block_kv, num_warps, num_stages, specialized = launch
    cfg = gpusim.simulate(algo, seq=seq, head_dim=head_dim, heads=heads, batch=batch, causal=causal, dtype=dtype,
                          gpu=PRESET, block_q=block_q, block_kv=block_kv).config
    if algo == "hopper":
        own = gpusim.passes.hopper.launch_options(cfg)
        return (num_warps, num_stages, specialized) == (own["num_warps"], own["num_stages"], own["warp_specialize"])
    return cfg.pass_.launch(cfg, algo) == (num_warps, num_stages)


def name(row):
    """The row's kernel, and its pass for a training row."""
    algo = row.get("algo", row.get("provider"))
    return f"{algo} {row['pass']}" if "pass" in row else algo


def rows(name_, default_only=False, head_dim=None):
    """(row, predicted / measured) for every timed row of the project's kernels in results/h200/NAME (with head_dim,
    its rows at that head dim only; once a process under each state of the model: MODEL)."""
    return _rows(name_, default_only, head_dim, state())


@lru_cache(maxsize=None)
def _rows(name_, default_only, head_dim, model):
    data = json.loads((RESULTS / name_).read_text())["rows"]
    out = []
    for row in data:
        algo = row.get("algo", row.get("provider"))
        if algo not in KERNELS + DECODE or "ms" not in row or row.get("error") or (
                default_only and not row.get("default")) or head_dim not in (None, row["head_dim"]):
            continue
        if name_ == "tiles.json" and not rule_launch(row):
            continue  # launches overridden away from the kernel's rule: the model prices the rule's launch
        out.append((row, row_predicted_s(row, model) / (row["ms"] * 1e-3)))
    return tuple(out)


def results_kind(row):
    """The held-out kind (MOVES') whose trials can move a results row: its kernel's forward, flash2's training step (its
    "bwd" pass too: the same passes), the decode kernels; None for a row of a kind no held-out set holds (flash1,
    naive's training step): every trial can move it."""
    algo = row.get("algo", row.get("provider"))
    kind = ("decode", "split_kv") if algo in DECODE else ("train" if "pass" in row else "forward", algo)
    return kind if kind in HELD_OUT_KINDS else None


def row_predicted_s(row, model):
    """predicted_s(row) under the state `model`, kept as predicted() keeps a held-out row's time: per row and per the
    trials in it that can move it (results_kind), so that a trial of one kernel's pricing prices that kernel's rows anew
    and the others' once."""
    key = (json.dumps(row, sort_keys=True), moving(model, results_kind(row)))
    if key not in PREDICTED_S:
        PREDICTED_S[key] = predicted_s(row)
    return PREDICTED_S[key]


def program_setup_rows():
    """(row, predicted / measured) for the Hopper kernel's rows of results/h200/program_setup.json (one Q block
    per program, J K/V blocks, 1, 4 or 16 waves): its table launch (hopper) and the same tiles software-pipelined
    on 8 warps (hopper_swp), priced with the knobs they ran."""
    out = []
    for row in json.loads((RESULTS / "program_setup.json").read_text())["rows"]:
        if row["algo"] == "flash2" or "ms" not in row:
            continue
        knobs = dict(num_warps=8, num_stages=3, warp_specialize=False) if row["algo"] == "hopper_swp" else {}
        r = gpusim.simulate("hopper", batch=1, heads=row["heads"], seq=row["seq"], seq_kv=row["seq_kv"],
                            head_dim=row["head_dim"], dtype="fp16", gpu=PRESET,
                            tiles=gpusim.Tiles(row["block_q"], row["block_kv"], **knobs))
        out.append((row, r.predicted_time_s / (row["ms"] * 1e-3)))
    return out


def heldout_simulated(row):
    """gpusim's Result for a results/h200/heldout.json row, on the H200-measured preset (gpusim_course's, which
    notebook 12 scores them with)."""
    return heldout.simulated(row, PRESET)


def heldout_rows(name="heldout.json"):
    """(row, predicted / measured) for every timed row of a held-out set (heldout.json, seed 2026, or
    heldout_2027.json, heldout_2028.json): never fitted, scored as the model stands (once a process under each state
    of the model: MODEL)."""
    return _heldout_rows(name, state())


def read_heldout(name):
    """A held-out set's rows as results/h200/ holds them (report_heldout.before_retimed swaps in the rows before run
    135)."""
    return json.loads((RESULTS / name).read_text())["rows"]


@lru_cache(maxsize=None)
def _heldout_rows(name, model):
    data = read_heldout(name)
    return tuple((row, predicted(row, model) / (row["ms"] * 1e-3)) for row in data if row.get("ms"))


def predicted(row, model):
    """heldout_simulated(row)'s time under the state `model`, kept per row (its content) and per the trials in it
    that can move it: those whose MOVES hold the row's kind (every trial not in MOVES), not the swaps of measured rows
    (the row is its own key). The render prices the sets under many states of the model; a trial of one kernel's
    pricing prices that kernel's rows anew, the others' once for every such trial."""
    return _priced(row, model)[0]


def heldout_gpu_s(row):
    """heldout_simulated(row)'s kernels' times summed (a training step's GPU time, before its host floor) under the
    model in force, kept as predicted() keeps the row's time."""
    return _priced(row, state())[1]


def _priced(row, model):
    key = (json.dumps(row, sort_keys=True), moving(model, (row["kind"], row["algo"])))
    if key not in PREDICTED:
        result = heldout_simulated(row)
        PREDICTED[key] = result.predicted_time_s, sum(k.predicted_time_s for k in result.kernels)
    return PREDICTED[key]


def moving(model, kind):
    """The trials of the state `model` that can move a row of `kind` (None: of any kind): those whose MOVES hold it
    (every trial not in MOVES), not the swaps of measured rows (a row is its own key)."""
    return tuple(k for k in model if k not in SWAPS and (kind is None or kind in MOVES.get(trial_name(k), {kind})))


MODEL = []  # the trials in force, outermost first, each a hashable description of the part it swaps (report_*.py's)
SWAPS = set()  # the trials that swap measured rows, not the model (trial(key, rows=True))
MOVES = {}  # a trial's name: the held-out rows' (kind, algo) it can move, if not all
PREDICTED = {}  # _priced()'s: predicted()'s times and heldout_gpu_s()'s
PREDICTED_S = {}  # row_predicted_s()'s
HELD_OUT_KINDS = frozenset(heldout.KINDS)  # the held-out rows' (kind, algo)


def trial_name(key):
    """A trial's key, or its first item where the key carries the trial's constants."""
    return key[0] if isinstance(key, tuple) else key


def state():
    """MODEL as a key: the swaps of measured rows first, wherever they are nested (they commute with the model's
    trials), then the model's trials with their tandem repeats dropped: a run of trials entered again inside itself,
    nothing between (a section's model nested in the same model), swaps the parts it swapped before for the same, so
    the model is as before and what it computes is kept once."""
    return _state(tuple(MODEL))


@lru_cache(maxsize=None)
def _state(model):
    return tuple(dict.fromkeys(k for k in model if k in SWAPS)) + _untandem(tuple(k for k in model if k not in SWAPS))


def _untandem(key):
    for length in range(1, len(key) // 2 + 1):
        for at in range(len(key) - 2 * length + 1):
            if key[at:at + length] == key[at + length:at + 2 * length]:
                return _untandem(key[:at + length] + key[at + 2 * length:])
    return key


@contextmanager
def trial(key, rows=False, moves=None):
    """The block runs under the trial `key` describes, whose caller swaps a part of the model as it starts and back as
    it ends (rows=True: the measured rows a results file holds, not the model): rows() and heldout_rows() keep what
    they computed per state of the model (state()), so a trial run twice in a process is computed once; gpusim's tile
    picks, cached in gpusim, are dropped as it starts and ends. moves: the held-out rows' (kind, algo) the trial can
    move, where it swaps one kernel's pricing alone (predicted); None: every row."""
    if moves is not None:
        MOVES[trial_name(key)] = frozenset(moves)
    if rows:
        SWAPS.add(key)
        _state.cache_clear()
    MODEL.append(key)
    gpusim.best_blocks.cache_clear()
    try:
        yield
    finally:
        MODEL.pop()
        gpusim.best_blocks.cache_clear()


def summary(pairs, within=0.2):
    ratios = [r for _, r in pairs]
    close = sum(abs(r - 1) <= within for r in ratios)
    return {"rows": len(ratios), f"within {within:.0%}": close / len(ratios) if ratios else None,
            "median": statistics.median(ratios) if ratios else None, "worst": max(ratios, key=lambda r: abs(r - 1),
                                                                                  default=None)}


def unsplit_slowdown(batch=1):
    """{seq_kv: (predicted, measured)}: num_splits = 1's time over the split kernel's, at this batch."""
    pairs = {(row["provider"], row["seq_kv"]): (predicted_s(row), row["ms"] * 1e-3)
             for row, _ in rows("decode.json") if row["batch"] == batch}
    return {n: (pairs["split_kv_1", n][0] / pairs["split_kv", n][0], pairs["split_kv_1", n][1] / pairs["split_kv", n][1])
            for _, n in sorted(pairs) if ("split_kv", n) in pairs and ("split_kv_1", n) in pairs}


def describe(row):
    if "seq_kv" in row:
        return f"batch={row['batch']} seq_kv={row['seq_kv']} splits={row['num_splits']}"
    return (f"{row['dtype']} d={row['head_dim']} causal={row['causal']} N={row['seq']} "
            f"{row.get('block_q')}x{row.get('block_kv')} w{row.get('num_warps')}")


def tile_choice(name="tiles.json", results=RESULTS, gpu=PRESET):
    """Per tile-sweep group and kernel: the tile best_blocks picks on the preset `gpu`, its measured time over the
    fastest measured rule launch in the group (1.0: it picked the fastest), or None where its pick was not measured.
    results: the folder of the sweep (another GPU's: results/h100)."""
    data = json.loads((Path(results) / name).read_text())["rows"]
    out = {}
    for row in data:
        if row.get("algo") not in ("flash2", "hopper") or "ms" not in row or not rule_launch(row):
            continue
        key = (row["algo"], row["head_dim"], row["causal"], row["seq"])
        out.setdefault(key, {})[(row["block_q"], row["block_kv"])] = row["ms"]
    picks = {}
    for (algo, d, causal, seq), times in out.items():
        batch, heads = gpusim.fa2_shape(seq, d)
        pick = gpusim.best_blocks(algo, seq=seq, head_dim=d, heads=heads, batch=batch, causal=causal,
                                  dtype="fp16", gpu=gpu)
        picks[(algo, d, causal, seq)] = (pick, times[pick] / min(times.values()) if pick in times else None)
    return picks


def table_choice(name="tiles.json", results=RESULTS):
    """Per Hopper group of the tile sweep: the time of the launch the kernel runs by default (its launch table's,
    the row marked `default`) over the fastest measured rule launch of the group."""
    groups = {}
    for row in json.loads((Path(results) / name).read_text())["rows"]:
        if row.get("algo") == "hopper":
            groups.setdefault((row["dtype"], row["head_dim"], row["causal"], row["seq"]), []).append(row)
    out = {}
    for key, rows in groups.items():
        default = [r["ms"] for r in rows if r.get("default") and "ms" in r]
        if len(default) != 1:
            raise ValueError(f"{name}: the Hopper group {key} has {len(default)} timed default launches, not one")
        out[key] = default[0] / min(r["ms"] for r in rows if "ms" in r and rule_launch(r))
    return out


def main():
    for file in FILES:
        pairs = rows(file)
        print(file, summary(pairs))
        for kernel in sorted({name(row) for row, _ in pairs}):
            print(f"  {kernel:14s}", summary([p for p in pairs if name(p[0]) == kernel]))
        for row, ratio in sorted(pairs, key=lambda p: -abs(p[1] - 1))[:12]:
            print(f"    {ratio:5.2f}  {name(row)} {describe(row)} {row['ms']:.3f} ms")
    print("num_splits=1 slowdown at batch 1, predicted / measured:")
    for n, (predicted, measured) in unsplit_slowdown().items():
        print(f"  seq_kv={n:>7,}  {predicted:6.2f} / {measured:6.2f} = {predicted / measured:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

