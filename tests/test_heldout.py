"""benchmarks/heldout.py's draw: deterministic, at least 80 rows, every constraint of the held-out set
met (counted), every row valid for gpusim (count mode, the H200's measured preset)."""
import json
import tarfile
from collections import Counter
from pathlib import Path

import pytest

import gpusim
from benchmarks.heldout import shapes

RESULTS = Path(__file__).resolve().parents[1] / "results" / "h200"

TILES = {(64, 64), (128, 64), (64, 32), (128, 32), (32, 64), (128, 128), (64, 128), (32, 32)}


def test_deterministic():
    assert json.dumps(shapes()) == json.dumps(shapes(2026))
    assert json.dumps(shapes(1)) != json.dumps(shapes(2026))


def test_constraints_and_gpusim():
    rows = shapes()
    assert len(rows) >= 80
    kinds = Counter((r["kind"], r["algo"]) for r in rows)
    assert kinds[("forward", "naive")] >= 5 and kinds[("forward", "hopper")] >= 5
    assert kinds[("forward", "flash2")] >= 30 and kinds[("train", "flash2")] >= 8
    assert kinds[("decode", "split_kv")] >= 8
    assert set(kinds) == {("forward", "naive"), ("forward", "flash2"), ("forward", "hopper"), ("train", "flash2"),
                          ("decode", "split_kv")}
    keys = {"kind", "algo", "batch", "heads", "kv_heads", "seq", "seq_kv", "head_dim", "causal", "dtype", "block_q",
            "block_kv", "page_size"}
    prefill = [r for r in rows if r["kind"] != "decode"]
    decode = [r for r in rows if r["kind"] == "decode"]
    for r in rows:
        assert keys <= set(r)
        assert r["dtype"] in ("fp16", "bf16") and r["head_dim"] in (64, 128)
        assert r["heads"] % r["kv_heads"] == 0 and 1 <= r["heads"] // r["kv_heads"] <= 8
    for r in prefill:
        assert 8 <= r["batch"] * r["heads"] <= 2048
        assert 300 <= r["seq"] <= 32768 and 300 <= r["seq_kv"] <= 32768
        assert r["page_size"] is None
        gpusim.simulate(r["algo"], batch=r["batch"], heads=r["heads"], kv_heads=r["kv_heads"], seq=r["seq"],
                        seq_kv=r["seq_kv"], head_dim=r["head_dim"], causal=r["causal"], dtype=r["dtype"],
                        block_q=r["block_q"], block_kv=r["block_kv"], gpu="H200-measured",
                        backward=r["kind"] == "train",
                        backward_blocks=(r["block_q"], r["block_kv"]) if r["kind"] == "train" and r["block_q"] else None)
    counts = {
        "gqa": sum(r["heads"] > r["kv_heads"] for r in prefill),
        "seq_kv != seq": sum(r["seq_kv"] != r["seq"] for r in prefill),
        "N not a multiple of 64": sum(r["seq"] % 64 != 0 for r in prefill),
        "bf16": sum(r["dtype"] == "bf16" for r in prefill), "fp16": sum(r["dtype"] == "fp16" for r in prefill),
        "d 64": sum(r["head_dim"] == 64 for r in prefill), "d 128": sum(r["head_dim"] == 128 for r in prefill),
        "causal": sum(r["causal"] for r in prefill), "not causal": sum(not r["causal"] for r in prefill),
        "long (>= 16K)": sum(r["seq"] >= 16384 for r in prefill), "short (< 1K)": sum(r["seq"] < 1024 for r in prefill),
        "ragged decode": sum(isinstance(r["seq_kv"], list) and len(set(r["seq_kv"])) > 1 for r in decode),
        "decode d 64, 8 q per kv": sum(r["head_dim"] == 64 and r["heads"] == 8 * r["kv_heads"] for r in decode),
        "decode Llama-like": sum((r["heads"], r["kv_heads"], r["head_dim"]) == (32, 8, 128) for r in decode),
    }
    assert all(n >= 3 for n in counts.values()), counts
    assert counts["N not a multiple of 64"] > len(prefill) / 2, counts
    # every ratio 1..8 that divides shows up somewhere; ratios above 4 too
    assert {r["heads"] // r["kv_heads"] for r in prefill} >= {1, 2, 4, 8}
    # flash2 forwards: each configuration at three distinct tiles from the list
    groups = {}
    for r in rows:
        if r["kind"] == "forward" and r["algo"] == "flash2":
            key = tuple(r[k] for k in ("batch", "heads", "kv_heads", "seq", "seq_kv", "head_dim", "causal", "dtype"))
            groups.setdefault(key, set()).add((r["block_q"], r["block_kv"]))
    assert all(len(t) == 3 and t <= TILES for t in groups.values()), groups
    for r in decode:
        lengths = r["seq_kv"] if isinstance(r["seq_kv"], list) else [r["seq_kv"]]
        assert len(lengths) == r["batch"] and all(1024 <= n <= 131072 for n in lengths)
        assert r["page_size"] == 16 and r["algo"] == "split_kv"
        assert 2 * sum(lengths) * r["kv_heads"] * r["head_dim"] * 2 < 8e9
        gpusim.simulate("split_kv", batch=r["batch"], heads=r["heads"], kv_heads=r["kv_heads"],
                        head_dim=r["head_dim"], seq_kv=r["seq_kv"], page_size=16, dtype=r["dtype"], gpu="H200-measured")
    for r in prefill:  # GPU memory: inputs (and naive's S and P, fp32 at worst) under ~20 GB
        inputs = (r["batch"] * r["heads"] * r["seq"] + 2 * r["batch"] * r["kv_heads"] * r["seq_kv"]) * r["head_dim"] * 2
        scores = 8 * r["batch"] * r["heads"] * r["seq"] * r["seq_kv"] if r["algo"] == "naive" else 0
        assert 4 * inputs + scores < 20e9, r


# Every held-out file, with the seed its name gives (the first set, heldout.json, drawn with 2026).
HELD_OUT = [("heldout.json", 2026)] + [(p.name, int(p.stem.removeprefix("heldout_")))
                                       for p in sorted(RESULTS.glob("heldout_*.json"))]


# Sets measured and kept unscored in a run's log until a model change is scored on them: {log: seeds}.
UNSCORED = {"run146_heldout_2080_2083.tar.gz": (2080, 2081, 2082, 2083),
            "run147_heldout_2084_2087.tar.gz": (2084, 2085, 2086, 2087),
            "run168_heldout_2096_2097.tar.gz": (2096, 2097), "run169_heldout_2098_2099.tar.gz": (2098, 2099)}


def unscored(log, seed):
    """A held-out file kept in a run's log, read without scoring it."""
    with tarfile.open(RESULTS / "logs" / log) as tar:
        return json.load(tar.extractfile(f"{log.split('_')[0]}/heldout_{seed}.json"))


# Sets measured on another GPU (results/h100/), each drawn on the preset its kernels took their tiles from.
OTHER_GPUS = [(str(p.relative_to(RESULTS.parent)), int(p.stem.removeprefix("heldout_")))
              for p in sorted((RESULTS.parent / "h100").glob("heldout_*.json"))]


@pytest.mark.parametrize("name, seed", HELD_OUT + OTHER_GPUS +
                         [(log, seed) for log, seeds in UNSCORED.items() for seed in seeds])
def test_the_measured_set_is_the_drawn_set(name, seed):
    """results/h200's held-out files, those kept unscored in a run's log and those of another GPU, measured exactly
    what the generator draws for their seed (on the preset the file names): nothing chosen after the fact."""
    measured = unscored(name, seed) if name in UNSCORED else json.loads(
        (RESULTS.parent / name if "/" in name else RESULTS / name).read_text())
    assert measured["seed"] == seed
    keys = ("kind", "algo", "batch", "heads", "kv_heads", "seq", "seq_kv", "head_dim", "causal", "dtype", "block_q",
            "block_kv", "page_size")
    drawn = shapes(measured["seed"], measured["environment"].get("preset", "H200-measured"))
    assert len(measured["rows"]) == len(drawn)
    for got, wanted in zip(measured["rows"], drawn):
        # naive and Hopper forwards leave their tiles to the kernel: the row says which ran (gpusim's pick when it
        # was measured), which a later model may pick otherwise
        left = ("block_q", "block_kv") if wanted["kind"] == "forward" and wanted["algo"] in ("naive", "hopper") else ()
        same = [k for k in keys if wanted[k] is not None and k not in left]
        assert {k: got[k] for k in same} == {k: wanted[k] for k in same}
    assert all(r.get("ms") or r.get("error") for r in measured["rows"])


def test_a_set_for_another_gpu_takes_the_tiles_of_its_preset(tmp_path, capsys):
    """--gpu H100-SXM: the rows an H100's kernels run, their tiles gpusim's on that preset (seed 3001: a naive forward
    and a training step whose tiles differ from the H200-measured draw's), the preset written beside them; an
    unknown preset is one line."""
    from benchmarks import heldout
    result = heldout.run(str(tmp_path), 1, True, seed=3001, gpu="H100-SXM")
    h200 = shapes(3001)
    assert result["environment"]["preset"] == "H100-SXM" and len(result["rows"]) == len(h200) == 88
    drawn = [{k: v for k, v in row.items() if k not in ("ms", "wall_s")} for row in result["rows"]]
    moved = [row for row, other in zip(drawn, h200) if row != other]
    assert {(r["kind"], r["algo"]) for r in moved} == {("forward", "naive"), ("train", "flash2")}
    for row in moved:
        if row["kind"] == "forward":
            naive = heldout._simulate("forward", "naive", {**row, "block_q": None, "block_kv": None}, "H100-SXM")
            assert (row["block_q"], row["block_kv"]) == (naive.config.block_q, naive.config.block_kv)
        else:
            step = heldout._simulate("train", "flash2", row, "H100-SXM")
            assert row["tiles_used"]["forward"] == [step.config.block_q, step.config.block_kv]
    with pytest.raises(SystemExit):
        heldout.main(["--out", str(tmp_path), "--dry-run", "--gpu", "H300"])
    assert "unknown gpu='H300'" in capsys.readouterr().err


def test_only_one_algo_is_measured_again_the_rest_kept(tmp_path):
    """--only naive --keep FILE: the other rows are FILE's, unchanged; the naive ones drawn again (unmeasured in a
    dry run); a file of another seed is refused."""
    from benchmarks import heldout
    keep = RESULTS / "heldout_2028.json"
    kept = json.loads(keep.read_text())
    result = heldout.run(str(tmp_path), 1, True, seed=2028, only="naive", keep=str(keep))
    assert result["environment"]["kept"] == kept["environment"] and result["environment"]["only"] == "naive"
    for old, new in zip(kept["rows"], result["rows"]):
        assert (new == old) == (old["algo"] != "naive")
    with pytest.raises(SystemExit, match="seed 2028"):
        heldout.run(str(tmp_path), 1, True, seed=2027, only="naive", keep=str(keep))
    result = heldout.run(str(tmp_path), 1, True, seed=2028, keep=str(keep), kind="train")
    assert result["environment"]["kind"] == "train" and result["environment"]["only"] is None
    for old, new in zip(kept["rows"], result["rows"]):
        assert (new == old) == (old["kind"] != "train")


def test_a_training_row_is_timed_per_call_as_a_loop_calls_it(tmp_path, monkeypatch):
    """A training row on CPU (the interpreter): its wall time per step over MIN_STEPS steps or more, in PROBE_ROUNDS
    chunks, each after a chunk of the host probe's, checked first; the probe's time per step over the same stretch,
    and the probe timed before the row as the sets before seed 2092 took it. Each chunk runs its steps for real; its
    clock here reads 150 µs a call for the probe's steps and 400 µs for the row's, so that the averages are pinned."""
    pytest.importorskip("torch", reason="a training row is timed through torch (Linux)")
    from benchmarks import heldout, host
    monkeypatch.setattr(heldout, "STEPS_S", 0.0)  # the fewest steps: MIN_STEPS, here 3 (each a step in the interpreter)
    monkeypatch.setattr(heldout, "MIN_STEPS", 3)
    monkeypatch.setattr(heldout, "PROBE_ROUNDS", 2)
    probes, chunks = [], []
    made = heldout.probe_step
    monkeypatch.setattr(heldout, "probe_step", lambda dev: probes.append(made(dev)) or probes[-1])
    timed = host.per_call_us

    def clock(fn, calls, *rest):
        timed(fn, calls, *rest)
        chunks.append((fn in probes, calls))
        return 150.0 if fn in probes else 400.0
    monkeypatch.setattr(host, "per_call_us", clock)
    row = next(r for r in heldout.SMOKE if r["kind"] == "train")
    out = heldout.measure_row(row, "cpu")
    assert out["timing"] == "wall_per_call" and out["steps"] == 4  # 2 chunks of ceil(3 / 2) steps
    assert out["ms"] == 0.4 and out["host_probe_us"] == 150.0 and out["host_probe_before_us"] == 150.0
    assert chunks[-4:] == [(True, 2), (False, 2), (True, 2), (False, 2)]
    assert out["rel_err"] <= heldout.TOL[row["dtype"]] and "error" not in out


# make test's processes: tests/test_results.py's, so that the tests scoring the held-out sets price them once
@pytest.mark.xdist_group("perf_report")
def test_notebook_12s_table_scores_every_set_as_docs_perf_md_does():
    """gpusim_course.provenance.heldout (notebook 12) against benchmarks.report_heldout's scoring (docs/perf.md): the
    same sets in seed order, the same shares of all rows and of each kind, the same verdict on issue 24's target."""
    from benchmarks import agreement, report_heldout
    from gpusim_course.provenance import heldout
    rows = heldout.set_rows(RESULTS)
    assert [r["set"] for r in rows[:-1]] == [name for name, _ in sorted(HELD_OUT, key=lambda item: item[1])]
    sets = {r["set"]: agreement.heldout_rows(r["set"]) for r in rows[:-1]}
    sets["all, pooled"] = [p for pairs in sets.values() for p in pairs]
    for r in rows:
        pairs = sets[r["set"]]
        assert r["rows"] == len(pairs) and r["within 20%"] == f"{agreement.summary(pairs)['within 20%']:.1%}"
        assert r["target met"] == ("yes" if report_heldout.meets_target(pairs) else "no")
        for (kind, algo), label in heldout.KINDS.items():
            group = [p for p in pairs if (p[0]["kind"], p[0]["algo"]) == (kind, algo)]
            assert r[label] == f"{agreement.summary(group)['within 20%']:.0%}"


@pytest.mark.xdist_group("perf_report")
def test_notebook_12_scores_the_h100s_sets_on_its_preset_as_docs_perf_md_does():
    """Notebook 12's table of another GPU's sets: results/h100 on H100-measured, the shares docs/perf.md's table of
    them gives (benchmarks.report_gpus.set_shares), set by set."""
    import json

    from benchmarks import report_gpus
    from gpusim_course.provenance import heldout
    cells = json.loads((RESULTS.parents[1] / "notebooks" / "12_appendix_provenance.ipynb").read_text())["cells"]
    assert any("".join(c["source"]) == 'html_table(heldout.set_rows("../results/h100", gpu="H100-measured"))'
               for c in cells)
    rows = heldout.set_rows(RESULTS.parent / "h100", gpu="H100-measured")
    shares = report_gpus.set_shares("H100-measured")
    assert [r["set"] for r in rows[:-1]] == list(shares) and len(shares) >= 6
    for r in rows[:-1]:
        share, kinds = shares[r["set"]]
        assert r["within 20%"] == f"{share:.1%}" and all(r[k] == f"{v:.0%}" for k, v in kinds.items())


def test_a_training_step_under_its_host_probe_is_priced_at_the_probe():
    """A held-out training row whose GPU work is far shorter than the host's: priced at the host probe measured beside
    it (host_probe_us, in µs), or without one at the preset's floor (GPU.train_step_host_s); a step whose GPU work is
    longer than the probe keeps its GPU time."""
    from gpusim_course.provenance import heldout
    row = dict(kind="train", algo="flash2", batch=1, heads=2, kv_heads=1, seq=300, seq_kv=300, head_dim=64,
               causal=True, dtype="fp16", tiles_used={"forward": [64, 64], "backward": [64, 64]})
    floor = gpusim.get_gpu(heldout.PRESET).train_step_host_s
    assert heldout.simulated(row).predicted_time_s == floor
    assert heldout.simulated(dict(row, host_probe_us=412.5)).predicted_time_s == 412.5e-6
    long = dict(row, batch=64, heads=32, kv_heads=8, seq=4096, seq_kv=4096)
    gpu_s = sum(k.predicted_time_s for k in heldout.simulated(long).kernels)
    assert gpu_s > 2e-3 and heldout.simulated(dict(long, host_probe_us=412.5)).predicted_time_s == gpu_s
