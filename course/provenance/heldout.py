"""Notebook 12's held-out sets: shapes drawn at random by a fixed seed (benchmarks/heldout.py), measured on the H200
before the model's changes they were kept from, never fitted, and scored against gpusim as it stands.

    >>> from gpusim_course.provenance import heldout
    >>> heldout.set_rows("../results/h200")  # one row per set, then all of them pooled

plots.heldout_figure draws every row's ratio.
"""
import dataclasses
import json
from functools import lru_cache
from pathlib import Path

import gpusim

PRESET = "H200-measured"
KINDS = {("forward", "naive"): "naive", ("forward", "flash2"): "flash2", ("forward", "hopper"): "Hopper",
         ("train", "flash2"): "training step", ("decode", "split_kv"): "decode"}
WITHIN = 0.2  # issue 24's band: predicted within 20% of measured
TARGET = (0.9, 0.8)  # its target: 90% of a set's rows within the band, and 80% of each kind's


def simulated(row, gpu=PRESET, host_probe=True):
    """gpusim's Result for a held-out row: a forward at the row's tiles (the kernel's own where it ran its default), a
    training step at the tiles the trainable ran, or a decode batch over pages. A training row measured with the host's
    speed beside it (its "host_probe_us", every training row since run 135: benchmarks/heldout.py's host_probe_us) has
    that for its host floor (GPU.train_step_host_s): the host's speed in its run, at that moment, which the preset's
    (host_run105.json's run) cannot know (host_probe=False: the preset's floor, as before the probe)."""
    if host_probe and row.get("host_probe_us"):
        gpu = dataclasses.replace(gpusim.get_gpu(gpu), train_step_host_s=row["host_probe_us"] * 1e-6)
    common = dict(dtype=row["dtype"], gpu=gpu)
    if row["kind"] == "decode":
        return gpusim.simulate("split_kv", batch=row["batch"], heads=row["heads"], kv_heads=row["kv_heads"],
                               head_dim=row["head_dim"], seq_kv=row["seq_kv"], page_size=row["page_size"], **common)
    shape = dict(seq=row["seq"], seq_kv=row["seq_kv"], heads=row["heads"], kv_heads=row["kv_heads"],
                 batch=row["batch"], head_dim=row["head_dim"], causal=row["causal"], **common)
    if row["kind"] == "train":
        forward, backward = row["tiles_used"]["forward"], row["tiles_used"]["backward"]
        return gpusim.simulate(row["algo"], **shape, block_q=forward[0], block_kv=forward[1], backward=True,
                               backward_blocks=tuple(backward))
    return gpusim.simulate(row["algo"], **shape, **{k: row[k] for k in ("block_q", "block_kv") if row.get(k)})


def timed(path):
    """The timed rows of one held-out file."""
    return [r for r in json.loads(Path(path).read_text())["rows"] if r.get("ms")]


def kind(row):
    """A held-out row's kind, as the tables label it."""
    return KINDS[row["kind"], row["algo"]]


def ratios(path, gpu=PRESET):
    """[(kind label, predicted / measured)] for every timed row of one held-out file, priced on the preset `gpu`
    (computed once a process)."""
    return _ratios(str(Path(path).resolve()), gpu)


@lru_cache(maxsize=None)
def _ratios(path, gpu):
    return [(kind(r), simulated(r, gpu).predicted_time_s / (r["ms"] * 1e-3)) for r in timed(path)]


def files(results):
    """The held-out files of a results folder, by seed (heldout.json is seed 2026's)."""
    return sorted(Path(results).glob("heldout*.json"), key=lambda p: int(p.stem.partition("_")[2] or 2026))


def within(pairs):
    """The share of (kind, ratio) pairs within the band."""
    return sum(abs(x - 1) <= WITHIN for _, x in pairs) / len(pairs)


def share(pairs, label):
    """within() of one kind's pairs, as a percentage."""
    return f"{within([p for p in pairs if p[0] == label]):.0%}"


def meets_target(pairs):
    """TARGET: the share of all the (kind, ratio) pairs, and of each kind present, within the band."""
    return within(pairs) >= TARGET[0] and all(within([p for p in pairs if p[0] == label]) >= TARGET[1]
                                              for label in {label for label, _ in pairs})


def score(name, pairs):
    """A set's row of the table: its rows, the share within 20% of all and of each kind, whether it meets TARGET."""
    return {"set": name, "rows": len(pairs), "within 20%": f"{within(pairs):.1%}",
            **{label: share(pairs, label) for label in KINDS.values()},
            "target met": "yes" if meets_target(pairs) else "no"}


def set_rows(results, gpu=PRESET):
    """One row per held-out set (score()), then all the sets pooled, priced on the preset `gpu` (another GPU's sets:
    results/h100 on H100-measured)."""
    sets = {p.name: ratios(p, gpu) for p in files(results)}
    return [score(name, pairs) for name, pairs in sets.items()] + [
        score("all, pooled", [p for pairs in sets.values() for p in pairs])]
