"""The GPU probe scripts in benchmarks/ (gpu_probe.sh runs them on the GPU; resources.py runs on CPU): their
pure-Python parts (arguments, the JSON and its rows, the configurations they sweep, ptxas's report), their
kernels in Triton's interpreter, which must compute what the scripts say they measure, and their kernels
compiled for sm_90a on this machine, which must use the instructions the scripts say they time. The
timings themselves need the GPU."""
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch", reason="the probe scripts need torch (pip install -e '.[kernels]')")
pytest.importorskip("triton", reason="the probe scripts need Triton, which publishes Linux wheels only")
ROOT = Path(__file__).resolve().parents[1]
from benchmarks import (bandwidth, bwd_kernels, drift, l2_dirty, l2_reuse, latency, lone_program,  # noqa: E402
                        matmul_tiles, overlap, paged_read, probe, resources, tiles)
import gpusim  # noqa: E402
from gpusim import compiled  # noqa: E402
from gpusim.config import make_config  # noqa: E402
from gpusim_kernels import hopper  # noqa: E402
from gpusim_kernels.launch import signature  # noqa: E402

RESOURCES = ROOT / "results" / "sm90_resources.json"
H200_SHARED_BYTES = 232_448  # the H200's shared memory per thread block (227 KiB, cudaFuncAttribute opt-in)
PTXAS_LOG = (  # ptxas -v on flash2 d=128, 256 x 64 tiles, 4 warps (triton 3.6.0's ptxas 12.8)
    "ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
    "insufficient register resources for the wgmma pipeline in the function 'flash2_kernel'\n"
    "ptxas info    : 11 bytes gmem\nptxas info    : Compiling entry function 'flash2_kernel' for 'sm_90a'\n"
    "ptxas info    : Function properties for flash2_kernel\n"
    "    1376 bytes stack frame, 2204 bytes spill stores, 1888 bytes spill loads\n"
    "ptxas info    : Used 255 registers, used 1 barriers, 1376 bytes cumulative stack size\n")


def test_out_is_the_json_file_or_the_folder_for_it(tmp_path):
    assert probe.out_file(tmp_path / "a" / "x.json", "latency.json") == tmp_path / "a" / "x.json"
    assert probe.out_file(tmp_path / "b", "latency.json") == tmp_path / "b" / "latency.json"
    assert (tmp_path / "a").is_dir() and (tmp_path / "b").is_dir()


def test_results_are_valid_json_after_every_row(tmp_path):
    results = probe.Results(tmp_path / "r.json", {"gpu": "g", "command": "c"})
    assert json.loads((tmp_path / "r.json").read_text()) == {"environment": {"gpu": "g", "command": "c"}, "rows": []}
    results.add({"ms": 1.0})
    results.add({"error": "x"})
    assert json.loads((tmp_path / "r.json").read_text())["rows"] == [{"ms": 1.0}, {"error": "x"}]
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_a_failing_configuration_is_one_error_line_and_the_rest_go_on():
    def fails():
        raise RuntimeError("out of resource: shared memory, Required: 262144\nHardware limit: 232448")
    assert probe.attempt({"tile": 1}, fails) == {"tile": 1, "error": "RuntimeError: out of resource: shared memory, "
                                                                    "Required: 262144"}
    assert probe.attempt({"tile": 2}, lambda: {"ms": 2.0}) == {"tile": 2, "ms": 2.0}
    assert probe.one_line(ValueError()) == "ValueError: "


def test_compile_pool_reports_the_items_that_fail():
    assert probe.compile_all(int, ["1", "x", "3"], 2, 120) == {"x": "ValueError: invalid literal for int() with "
                                                                     "base 10: 'x'"}


def test_environment_names_the_command():
    env = probe.environment("python -m benchmarks.latency --out x")
    assert {"gpu", "driver", "torch", "triton", "cuda", "date", "command"} <= set(env)
    assert env["command"] == "python -m benchmarks.latency --out x"


@pytest.mark.parametrize("pages", ["spread", "local"])
def test_the_chase_visits_every_line_once_per_cycle(pages):
    n_lines, per_page = 256, 16
    gen = torch.Generator().manual_seed(0)
    next_line = latency.cycle(n_lines, per_page if pages == "local" else None, gen).tolist()
    order, line = [], 0
    for _ in range(n_lines):
        order.append(line)
        line = next_line[line]
    assert line == 0 and sorted(order) == list(range(n_lines))
    page_changes = sum(a // per_page != b // per_page for a, b in zip(order, order[1:] + order[:1]))
    assert page_changes == (n_lines // per_page if pages == "local" else pytest.approx(n_lines, rel=0.2))


def test_chase_kernel_follows_the_chain_and_comes_back_around():
    size, page = 16 * 1024, 4 * 1024
    buf = latency.chain_buffer(size, "local", page, probe.DEVICE)
    out = torch.zeros(1, dtype=torch.int32, device=probe.DEVICE)
    n_lines, ints = size // latency.LINE_BYTES, latency.LINE_BYTES // latency.INT_BYTES
    assert buf.view(n_lines, ints)[:, 1:].count_nonzero() == 0  # one int per 128-byte line
    _, stop = latency.chase(buf, out, 0, latency.UNROLL)
    expected = 0
    for _ in range(latency.UNROLL):
        expected = int(buf[expected])
    assert stop == expected and stop % ints == 0
    assert latency.chase(buf, out, 0, n_lines)[1] == 0  # n_lines hops: once around the cycle


def test_latency_labels_and_clocks():
    mib = 2**20
    assert [latency.level(s * mib, 60 * mib) for s in (8, 30, 48, 119, 120, 4096)] == [
        "l2", "l2", "l2+hbm", "l2+hbm", "hbm", "hbm"]
    assert latency.parse_clocks("1980, 1980\n") == (1.98e9, 1.98e9)
    assert latency.parse_clocks("") == latency.parse_clocks("[N/A], [N/A]") == (None, None)


def test_latency_smoke_run_writes_every_row(tmp_path, monkeypatch):
    for name in latency.SMOKE:
        monkeypatch.setattr(latency, name, getattr(latency, name))  # restored after main() sets the smoke values
    latency.main(["--out", str(tmp_path), "--smoke"])
    data = json.loads((tmp_path / "latency.json").read_text())
    assert data["environment"]["command"] == f"python -m benchmarks.latency --out {tmp_path} --smoke"
    assert len(data["rows"]) == len(latency.SMOKE["CHASES"])
    for row in data["rows"]:
        assert {"level", "pages", "working_set_bytes", "hops", "ns_per_hop", "cycles_per_hop"} <= set(row)
        assert isinstance(row["ns_per_hop"], float)  # wall clock in the interpreter: its value means nothing


def test_overlap_smoke_run_times_every_tile_at_every_occupancy(tmp_path, monkeypatch):
    for name in overlap.SMOKE:
        monkeypatch.setattr(overlap, name, getattr(overlap, name))  # restored after main() sets the smoke values
    overlap.main(["--out", str(tmp_path), "--smoke", "--workers", "1"])
    rows = json.loads((tmp_path / "overlap.json").read_text())["rows"]
    assert [(r["variant"], r["br"], r["bc"], r["programs_per_sm"]) for r in rows] == [
        (variant, 32, 32, b) for variant in ("mma", "softmax") for b in (1, 2)]
    assert all(r["programs"] == r["programs_per_sm"] * probe.sm_count() and r["tflops"] > 0 for r in rows)


@pytest.mark.parametrize("head_dim", [128, 64])
def test_overlap_forward_run_times_the_softmax_loop_at_its_d_into_its_own_file(tmp_path, monkeypatch, head_dim):
    for name in {**overlap.SMOKE, **overlap.D128}:
        monkeypatch.setattr(overlap, name, getattr(overlap, name))
    overlap.main(["--out", str(tmp_path), "--smoke", f"--d{head_dim}", "--workers", "1"])
    rows = json.loads((tmp_path / f"overlap_d{head_dim}.json").read_text())["rows"]
    assert [(r["variant"], r["d"], r["br"], r["programs_per_sm"]) for r in rows] == [
        ("softmax", head_dim, 32, b) for b in (1, 2)]
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".json"] == [f"overlap_d{head_dim}.json"]


def test_drift_smoke_run_stamps_every_step_and_changes_nothing_else(tmp_path, monkeypatch):
    """In the interpreter the clock is the step (FAKE_NOW): each program's row holds its start, its steps and its end;
    its O equals flash2's; --analyse adds the LRU's K/V reads."""
    for name in drift.SMOKE:
        monkeypatch.setattr(drift, name, getattr(drift, name))  # restored after main() sets the smoke values
    drift.main(["--out", str(tmp_path), "--smoke"])
    row, = json.loads((tmp_path / "drift.json").read_text())["rows"]
    stamps = drift.np.load(tmp_path / "drift_stamps.npz")["n256_d16_r0"]
    assert row["every"] == 1 and row["programs"] == 2 * 2 and row["max_abs_diff_vs_flash2"] == 0
    assert stamps.tolist() == [[i, *range(8), i] for _ in range(2) for i in range(2)]  # (head, Q block) in grid order
    data = drift.main(["--out", str(tmp_path), "--smoke", "--analyse"])
    assert set(data["rows"][0]["kv_reads_0"]) == {"gpusim"}  # run 65's measured capacity is the H200's alone


def test_drift_places_each_step_between_its_stamps():
    stamps = drift.np.array([[0, 10, 30, 50, 70]])  # start, steps 0, 2 and 4 of 5, end (standing for step 5)
    assert drift.step_times(stamps, 2, 5).tolist() == [[10, 20, 30, 40, 50]]
    assert drift.step_times(drift.np.array([[0, 10, 20, 40]]), 2, 3).tolist() == [[10, 15, 20]]


def test_the_lru_reads_k_and_v_once_where_the_programs_share_them_and_again_where_the_l2_forgot():
    """Two programs of one head, 4 steps of 10 B, Q_i and O_i of 1 B: in step (the second just behind) K and V are
    read once; one after the other through an L2 of less than the head's 40 B, twice; of more, once."""
    lockstep = drift.np.array([[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5]])
    after = drift.np.array([[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]])
    assert drift.lru_kv_reads(lockstep, 1, 4, 2, 1, 10, 25) == 1
    assert drift.lru_kv_reads(after, 1, 4, 2, 1, 10, 25) == 2
    assert drift.lru_kv_reads(after, 1, 4, 2, 1, 10, 45) == 1
    assert drift.lru_kv_reads(drift.np.concatenate([after, after + 20]), 1, 4, 2, 1, 10, 45) == 1  # two heads


def test_paged_read_smoke_run_reads_every_key_once_in_each_layout(tmp_path, monkeypatch):
    """Each (layout, splits, steps) row measured, its sums checked against torch's (no error row), its bytes K and V's
    whole cache; and the check fails a kernel reading through a block table that is not the cache's."""
    for name in paged_read.SMOKE:
        monkeypatch.setattr(paged_read, name, getattr(paged_read, name))  # restored after main() sets the smoke values
    paged_read.main(["--out", str(tmp_path), "--smoke"])
    rows = json.loads((tmp_path / "paged_read.json").read_text())["rows"]
    assert [(r["layout"], r["page_size"], r["splits"], r["steps"]) for r in rows] == [
        ("paged", 16, 2, 1), ("paged", 16, 2, 3), ("contiguous", None, 2, 1), ("contiguous", None, 2, 3)]
    for r in rows:
        assert "error" not in r and r["programs"] == 2 * 2 and r["bytes_per_s"] > 0, r
        assert r["bytes"] == 2 * (r["splits"] * r["steps"] * 16) * 2 * 16 * 2  # K and V: N keys x 2 heads x d x 2 B
    cache, expected = paged_read.cache, paged_read.expected  # the kernel given a table one page off the cache's:
    monkeypatch.setattr(paged_read, "cache", lambda *a: (*cache(*a)[:2], cache(*a)[2].roll(1, dims=1)))
    monkeypatch.setattr(paged_read, "expected", lambda k, v, table, *a: expected(k, v, table.roll(-1, dims=1), *a))
    with pytest.raises(AssertionError, match="differ from torch's at page_size=16"):
        paged_read.measure_one(16, 2, 3, seed=6)


def test_lone_program_smoke_run_times_every_depth_warm_and_cold_and_both_launch_timings(tmp_path, monkeypatch):
    for name in lone_program.SMOKE:
        monkeypatch.setattr(lone_program, name, getattr(lone_program, name))  # restored after main() sets the smoke values
    lone_program.main(["--out", str(tmp_path), "--smoke"])
    rows = json.loads((tmp_path / "lone_program.json").read_text())["rows"]
    assert [(r["programs"], r["timing"]) for r in rows if r["kind"] == "empty"] == [
        (p, t) for p in (1, 2) for t in ("events", "cuda_graph")]
    steps = [r for r in rows if r["kind"] == "step"]
    assert [(r["head_dim"], r["block_q"], r["block_kv"], r["num_stages"], r["steps"], r["seq_kv"], r["l2"])
            for r in steps] == [(16, 16, 16, 2, j, 16 * j, l2) for j in (1, 2) for l2 in ("warm", "cold")]
    assert all(r["ms"] > 0 and "error" not in r for r in rows)


def test_lone_program_shared_smoke_run_times_each_number_of_programs_per_sm_cold(tmp_path, monkeypatch):
    for name in lone_program.SMOKE:
        monkeypatch.setattr(lone_program, name, getattr(lone_program, name))
    lone_program.main(["--out", str(tmp_path), "--smoke", "--shared"])
    rows = json.loads((tmp_path / "shared_steps.json").read_text())["rows"]
    assert [(r["programs_per_sm"], r["heads"], r["steps"], r["l2"]) for r in rows] == [
        (b, 2 * b, j, "cold") for j in (1, 2) for b in (1, 2)]
    assert all(r["ms"] > 0 and "error" not in r for r in rows) and not (tmp_path / "lone_program.json").exists()
    assert "lone_program --out" in json.loads((tmp_path / "shared_steps.json").read_text())["environment"]["command"]


def test_unaligned_smoke_run_times_every_length_and_profiles(tmp_path, monkeypatch, capsys):
    from benchmarks import unaligned
    for name in unaligned.SMOKE:
        monkeypatch.setattr(unaligned, name, getattr(unaligned, name))  # restored after main() sets the smoke values
    unaligned.main(["--out", str(tmp_path), "--smoke"])
    rows = json.loads((tmp_path / "unaligned.json").read_text())["rows"]
    assert [(r["seq"], r["seq_kv"]) for r in rows] == list(unaligned.SMOKE["LENGTHS"])
    assert all(r["ms"] > 0 and r["model_ms"] > 0 and "error" not in r for r in rows)
    unaligned.main(["--out", str(tmp_path), "--smoke", "--profile"])
    assert "profiled" in capsys.readouterr().out
    unaligned.main(["--out", str(tmp_path), "--smoke", "--backward"])
    rows = json.loads((tmp_path / "unaligned_backward.json").read_text())["rows"]
    assert [(r["seq"], r["seq_kv"]) for r in rows] == list(unaligned.SMOKE["LENGTHS"])
    assert all(r["ms"] > 0 and r["model_ms"] > 0 and "error" not in r for r in rows)


UNALIGNED_COMPILE = """
import json
from benchmarks import resources
print(json.dumps([resources.compile_one(resources.tiled("flash2", 128, "fp16", False, 64, 64), unaligned=names)
                  for names in ((), ("N",))]))
"""


UNALIGNED_DQ = """
import json
from benchmarks import resources
print(json.dumps([resources.compile_one(resources.backward_kernel("flash2", "dq", 128, "fp16", False, 64, 64),
                                        unaligned=names)["registers"] for names in ((), ("N",))]))
"""


def test_the_backward_dq_kernel_compiles_apart_for_an_n_not_a_multiple_of_16():
    """flash2's dQ kernel at d = 128 on 64 x 64 tiles, compiled for sm_90a with N marked divisible by 16 and not: Q's row
    mask, kept through the K/V loop for dQ's store, gives two kernels (docs/perf.md quotes their registers)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", UNALIGNED_DQ], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    aligned, unaligned = json.loads(done.stdout)
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert aligned != unaligned and f"on the CPU: {aligned} and {unaligned} registers at d = 128, 64 × 64)" in text


def test_flash2_compiles_to_the_same_code_whether_or_not_n_is_a_multiple_of_16():
    """flash2 at d = 128 on 64 x 64 tiles, compiled for sm_90a with N marked divisible by 16 and not (out of the
    interpreter, as the GPU compiles): since O's store makes its own mask (kernels/flash2.py), the same registers and
    K/V loops either way, as docs/perf.md quotes them."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", UNALIGNED_COMPILE], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout)
    assert rows[0]["loops"] == rows[1]["loops"] and rows[0]["registers"] == rows[1]["registers"]
    (whole, masked), registers = [loop[0] for loop in rows[0]["loops"]], rows[0]["registers"]
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    assert (f"compiled on the CPU as `benchmarks/resources.py` does: {whole} and {masked} instructions a warp per step "
            f"besides the matmuls in its unmasked and masked loops at 64 × 64, {registers} registers, either way") in text


def test_overlap_counts_the_programs_an_h200_sm_holds():
    """128 registers a thread on 4 warps: 128 x 32 x 4 = 16,384 of an SM's 65,536 registers, so 4 programs; 100 KiB
    of shared memory each: 2 in its 228 KiB (with 1 KiB reserved per block)."""
    def compiled(shared):  # a CompiledKernel already loaded (its _init_handles does nothing)
        return SimpleNamespace(n_regs=128, n_spills=0, metadata=SimpleNamespace(shared=shared),
                               _init_handles=lambda: None)
    assert overlap.resident(compiled(16 * 1024), 4) == 65536 // (128 * 32 * 4) == 4
    assert overlap.resident(compiled(100 * 1024), 4) == 228 * 1024 // (101 * 1024) == 2
    assert overlap.resident(None, 4) is None


def test_kernel_resources_loads_a_kernel_compiled_and_not_yet_run():
    """Triton learns a kernel's registers when it loads it onto the GPU, at its first launch: kernel_resources loads
    a kernel compiled and not yet run (runs 141 and 142's first rows, read before it did, had none)."""
    class Compiled:  # a CompiledKernel as Triton 3.6 returns it from a warm-up: not loaded
        metadata = SimpleNamespace(shared=74752)

        def _init_handles(self):
            self.n_regs, self.n_spills = 125, 0
    assert probe.kernel_resources(Compiled()) == {"n_regs": 125, "n_spills": 0, "shared_bytes": 74752}
    assert probe.kernel_resources(None) == {"n_regs": None, "n_spills": None, "shared_bytes": None}


@pytest.mark.parametrize("script", [latency, bandwidth, matmul_tiles, overlap, bwd_kernels, tiles, resources])
def test_every_script_needs_out(script, capsys):
    with pytest.raises(SystemExit):
        script.main([])
    assert "--out" in capsys.readouterr().err


def test_bytes_in_flight_follow_the_pipeline_depth():
    assert [bandwidth.bytes_in_flight_per_sm("load", 1024, 4, s) for s in (1, 2, 3, 4)] == [4096, 4096, 8192, 12288]
    assert bandwidth.bytes_in_flight_per_sm("store", 1024, None, 1) is None
    assert [bandwidth.load_warps(t) for t in (8 * 1024, 16 * 1024)] == [4, 8]  # 64 rows: 4 warps; 128 rows: 8
    configs = bandwidth.load_configs()
    assert len(configs) == len(set(configs)) == 2 * 7 * 4 * 4


@pytest.mark.parametrize("level", ["hbm", "l2"])
def test_load_kernel_reads_every_tile_of_its_share(level, monkeypatch):
    kib = 1024
    monkeypatch.setattr(bandwidth, "HBM_BYTES", 16 * kib)
    monkeypatch.setattr(bandwidth, "L2_BYTES", 8 * kib)
    monkeypatch.setattr(bandwidth, "PASSES", 2)
    buf = torch.randn(16 * kib // 2, generator=torch.Generator().manual_seed(1)).half().to(probe.DEVICE)
    out = torch.zeros(2 * probe.sm_count(), device=probe.DEVICE)
    _, moved, programs = bandwidth.launch(("load", level, kib, 2, 4, 2), buf, out)
    region = (16 if level == "hbm" else 8) * kib
    tiles = buf[:region // 2].view(-1, kib // 2).float().sum(dim=1)  # per tile
    passes = 1 if level == "hbm" else 2
    per_program = len(tiles) * passes // programs
    expected = [sum(tiles[(p + t * programs) % len(tiles)] for t in range(per_program)) for p in range(programs)]
    assert moved == per_program * programs * kib == region * passes
    torch.testing.assert_close(out[:programs].cpu(), torch.stack(expected), rtol=1e-5, atol=1e-3)  # fp32 sums


@pytest.mark.parametrize("pattern", ["every_sm", "own", "spread"])
def test_l2_reuse_kernels_read_their_pattern_passes_times(pattern):
    tile = l2_reuse.TILE_BYTES
    programs = probe.sm_count()
    buf = torch.randn(4 * programs * tile // 2, generator=torch.Generator().manual_seed(2)).half().to(probe.DEVICE)
    out = torch.zeros(programs, device=probe.DEVICE)
    working_set = l2_reuse.launch(pattern, 4 * programs * tile, buf, out, programs)
    assert working_set == 4 * programs * tile
    sums = buf.float().view(-1, tile // 2).sum(dim=1)  # per tile
    n = len(sums)
    reads = {"every_sm": [list(range(n))] * programs,  # every program: the whole buffer
             "own": [list(range(p * 4, p * 4 + 4)) for p in range(programs)],  # its own 4 tiles
             "spread": [[(p + t * programs) % n for t in range(n // programs)] for p in range(programs)]}[pattern]
    expected = torch.stack([l2_reuse.PASSES * sums[r].sum() for r in reads])
    torch.testing.assert_close(out.cpu(), expected.cpu(), rtol=1e-4, atol=1e-2)


def test_l2_reuse_writing_copies_each_tile_it_reads_to_a_fresh_one():
    tile, programs = l2_reuse.TILE_BYTES, probe.sm_count()
    buf = torch.randn(3 * tile // 2, generator=torch.Generator().manual_seed(3)).half().to(probe.DEVICE)
    stream = torch.zeros(l2_reuse.PASSES * 3 * tile // 2, dtype=torch.float16, device=probe.DEVICE)
    assert l2_reuse.launch("spread_writing", 3 * tile, buf, None, programs, stream) == 3 * tile
    steps = l2_reuse.PASSES * 3 // programs * programs  # every program's steps, in step order
    tiles = buf.view(3, -1)
    torch.testing.assert_close(stream.view(-1, tile // 2)[:steps].cpu(), tiles[[s % 3 for s in range(steps)]].cpu())


def test_l2_dirty_kernel_reads_each_tile_once_and_writes_its_sum():
    tile, write = l2_dirty.TILE_BYTES, 64
    x = torch.randn(4 * tile // 2, generator=torch.Generator().manual_seed(4)).half().to(probe.DEVICE)
    y = torch.zeros(4 * write, device=probe.DEVICE)
    assert l2_dirty.launch(4 * tile, write, x, y) == (4 * tile, 4 * write * 4)  # R and W in bytes
    sums = x.float().view(4, -1).sum(dim=1)
    torch.testing.assert_close(y.view(4, write).cpu(), sums[:, None].expand(4, write).cpu(), rtol=1e-4, atol=1e-2)


def test_l2_dirty_json_recomputes_from_nsights_csv_as_perf_md_quotes_it():
    """results/h200/l2_dirty.json (run 89) from its raw CSV and manifest, and docs/perf.md's claims on it: what
    stays dirty at R = 32 MiB, at W >= 4 R, and rule 4 (gpusim/l2.py, its constants derived from these rows)
    against every row writing 1 MiB or more to DRAM."""
    import gpusim
    h200 = ROOT / "results" / "h200"
    results = json.loads((h200 / "l2_dirty.json").read_text())
    rows = l2_dirty.rows((h200 / "l2_dirty_raw.csv").read_text(), json.loads((h200 / "manifest_l2_dirty.json").read_text()))
    assert rows == results["rows"] and len(rows) == len(l2_dirty.READ_MIB) * len(l2_dirty.WRITES)
    l2, mib = results["environment"]["l2_bytes"], 2**20
    assert l2 == gpusim.get_gpu(l2_dirty.PRESET).l2_bytes
    small = [1 - r["still_dirty_bytes"] / r["write_bytes"] for r in rows if r["read_bytes"] == 32 * mib
             and 4 * r["write_bytes"] <= r["read_bytes"]]
    capped = [r["still_dirty_bytes"] / mib for r in rows if r["write_bytes"] >= 4 * r["read_bytes"]]
    rule = [abs(r["write_bytes"] - gpusim.l2.still_dirty(l2, r["write_bytes"], r["dram_read_bytes"]) - r["dram_write_bytes"])
            / r["dram_write_bytes"] for r in rows if r["dram_write_bytes"] >= mib]
    text = " ".join((ROOT / "docs" / "perf.md").read_text().split())
    quoted = [f"at R = 32 MiB all but {100 * min(small):.0f}–{100 * max(small):.1f}% of W stays",
              f"({min(capped):.1f}–{max(capped):.1f} MiB)", f"every row of the microbenchmark that writes at least 1 MiB "
              f"to DRAM within {100 * max(rule):.1f}%"]
    assert [q for q in quoted if q not in text] == []


def test_l2_reuse_json_recomputes_from_nsights_csv_and_holds_the_derived_capacities():
    import gpusim
    results = json.loads((ROOT / "results" / "h200" / "l2_reuse.json").read_text())
    manifest = {"passes": l2_reuse.PASSES, "launches": [{"pattern": r["pattern"], "working_set_bytes": r["working_set_bytes"]}
                                                        for r in results["rows"]]}
    rows = l2_reuse.rows((ROOT / "results" / "h200" / "l2_reuse_raw.csv").read_text(), manifest)
    assert rows == results["rows"] and len(rows) == 3 * len(l2_reuse.SIZES_MIB)
    measured = {p: l2_reuse.capacity(rows, p) for p in ("every_sm", "spread", "own")}
    assert measured == results["half_missed_at_bytes"]
    h200 = gpusim.get_gpu("H200")  # docs/perf.md: 30.7 MiB against 30 derived; 42.4 and 43.9 against 40
    assert 0.95 < h200.l2_reuse_bytes(every_sm=True) / measured["every_sm"] < 1.0
    assert all(0.9 < h200.l2_reuse_bytes(every_sm=False) / measured[p] < 0.95 for p in ("spread", "own"))
    small = [r for r in rows if r["working_set_bytes"] <= 24 * 2**20]  # well inside every capacity: re-reads hit
    assert all(r["reread_miss"] < 0.01 for r in small)
    # run 67: as many bytes written as read; the re-reads miss once read plus written pass the one-SM capacity
    writing = json.loads((ROOT / "results" / "h200" / "l2_reuse_writing.json").read_text())
    wrows = l2_reuse.rows((ROOT / "results" / "h200" / "l2_reuse_writing_raw.csv").read_text(),
                          {"passes": l2_reuse.PASSES, "launches": [{k: r[k] for k in ("pattern", "working_set_bytes")}
                                                                   for r in writing["rows"]]})
    assert wrows == writing["rows"]
    half = l2_reuse.capacity(wrows, "spread_writing")
    assert half == writing["half_missed_at_bytes"]["spread_writing"] and round(half / 2**20, 1) == 19.6
    assert 0.95 < 2 * half / h200.l2_reuse_bytes(every_sm=False) < 1.0


def test_store_kernel_writes_one_tile_per_program(monkeypatch):
    monkeypatch.setattr(bandwidth, "STORE_BYTES", 8 * 1024)
    buf = torch.zeros(4 * 1024, dtype=torch.float16, device=probe.DEVICE)
    _, moved, programs = bandwidth.launch(("store", "hbm", 2048, None, 4, 1), buf, None)
    assert (moved, programs) == (8 * 1024, 4) and bool((buf == 1).all())


@pytest.mark.parametrize("variant", ["mma", "exp2", "softmax"])
def test_mma_kernel_runs_flash2s_inner_loop(variant):
    br, bc, d, r = 32, 16, 16, 3
    q, k, v = matmul_tiles.tiles("fp16", br, bc, d)
    out = torch.empty(1, device=probe.DEVICE)
    matmul_tiles.launch((variant, "fp16", br, bc, d, 4), 1, r, [q, k, v], out)
    s, acc = torch.zeros(br, bc), torch.zeros(br, d)
    m, l = torch.full((br,), -1e30), torch.zeros(br)
    for _ in range(r):
        s = s + q.cpu().float() @ k.cpu().float().T
        p = s
        if variant != "mma":
            m_new = torch.maximum(m, s.max(dim=1).values)
            p = torch.exp2(s - m_new[:, None])
            if variant == "softmax":
                alpha = torch.exp2(m - m_new)
                l, acc = l * alpha + p.sum(dim=1), acc * alpha[:, None]
            m = m_new
        acc = acc + p.half().float() @ v.cpu().float()
    expected = acc.sum() + l.sum() + m.sum()
    # fp32 sums in another order, and P rounded to fp16 (unit roundoff 2**-11) where the two disagree
    assert float(out[0]) == pytest.approx(float(expected), rel=1e-3)


def test_mma_instructions_come_from_the_ptx():
    ptx = "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {...}; mma.sync.aligned.m16n8k16.row.col.f32.f16 ;"
    assert matmul_tiles.mma_instructions(SimpleNamespace(asm={"ptx": ptx})) == (
        "mma.sync.aligned.m16n8k16.row.col.f32.f16 wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16")
    assert matmul_tiles.mma_instructions(SimpleNamespace(asm={"ptx": "fma.rn.f32"})) == "none"
    assert matmul_tiles.mma_instructions(None) is None


def test_matmul_sweep_and_its_flop_count():
    configs = matmul_tiles.configs()
    assert len(configs) == len(set(configs)) == 8 * 2 * 2 + 4 + 2 * 8 * 2 + 2
    programs = 132 * matmul_tiles.PROGRAMS_PER_SM
    r = matmul_tiles.repeats(128, 64, 128, programs)
    assert programs * matmul_tiles.flops_per_program(128, 64, 128, r) == pytest.approx(matmul_tiles.TARGET_FLOPS,
                                                                                       rel=0.02)
    assert matmul_tiles.flops_per_program(64, 32, 64, 1) == 2 * (2 * 64 * 32 * 64)  # two matmuls per iteration


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_tile_groups_time_every_tile_on_both_warp_counts_and_the_hopper_launches(d, causal):
    calls = tiles.group_calls(d, causal)
    assert [a for a, _, _ in calls[:2]] == ["sdpa_flash", "sdpa_cudnn"]
    flash2 = [(c["block_q"], c["block_kv"], c["num_warps"]) for a, c, _ in calls if a == "flash2"]
    assert sorted(flash2) == sorted((bq, bkv, w) for bq, bkv in tiles.TILES for w in (4, 8))
    launches = [c for a, c, _ in calls if a == "hopper"]
    assert launches[0] == hopper.LAUNCHES[d, "fp16", causal] and len(launches) == len({str(c) for c in launches}) >= 6
    ran = {str(hopper.resolved_launch(d, "fp16", causal, 4096, c)) for c in launches}
    assert len(ran) == len(launches)  # no variant times the table's launch again
    assert [default for a, c, default in calls if a == "hopper"] == [True] + [False] * (len(launches) - 1)
    assert sum(default for a, _, default in calls if a == "flash2") <= 1


def test_committed_resources_cover_every_configuration_and_five_hopper_launches_fit():
    data = json.loads(RESOURCES.read_text())
    assert data["environment"]["triton"] == "3.6.0" and data["environment"]["target"] == "sm_90a"
    keys = ("kernel", "head_dim", "dtype", "causal", "block_q", "block_kv", "num_warps", "num_stages", "seq",
            "warp_specialize", "shape")
    rows = {tuple(str(r.get(k)) for k in keys): r for r in data["rows"]}
    assert set(rows) == {tuple(str(fields.get(k)) for k in keys) for fields, _, _ in resources.configs()}
    assert not [r for r in data["rows"] if "error" in r]
    for d in (64, 128):
        for causal in (False, True):
            fit = [r for r in data["rows"] if (r["kernel"], r["head_dim"], r["dtype"], r["causal"]) ==
                   ("hopper", d, "fp16", causal) and r["shared_bytes"] <= H200_SHARED_BYTES and r["spill_store_bytes"] == 0]
            assert len(fit) >= 5


def compiled_hopper_launches():
    """(row of results/sm90_resources.json, the knobs it was compiled with) for every Hopper launch in it."""
    rows = json.loads(RESOURCES.read_text())["rows"]
    return [(row, {**{k: fields[k] for k in ("block_q", "block_kv", "num_warps", "num_stages", "warp_specialize")},
                   "mask": consts["MASK"], "overlap": consts["OVERLAP"]})
            for (fields, consts, _), row in zip(resources.configs(), rows) if fields["kernel"] == "hopper"]


def test_hopper_shared_estimate_is_each_compiled_launchs_but_its_barriers():
    """Hopper.shared_bytes (the estimate off the compiled table) against every compiled Hopper launch, with the knobs it
    was compiled with: short by its mbarriers alone (32-56 B; warp-specialized, 192 B), or where Q's tile is aligned
    after them (the causal launches of two loops, rotated or fp8), by up to 1 KiB."""
    gaps = {}
    for row, knobs in compiled_hopper_launches():
        cfg = make_config("hopper", seq=4096, head_dim=row["head_dim"], causal=row["causal"], dtype=row["dtype"],
                          gpu="H200", tiles=gpusim.Tiles(**knobs))
        gaps[str(knobs), row["head_dim"], row["dtype"], row["causal"]] = (
            row["shared_bytes"] - cfg.pass_.shared_bytes(cfg, "hopper", knobs["num_stages"]))
    assert len(gaps) >= 60 and all(32 <= gap <= 1024 for gap in gaps.values()), gaps
    assert {gap for (knobs, *_), gap in gaps.items() if "'warp_specialize': True" in knobs} == {192}  # 20 mbarriers


def test_each_hopper_launch_is_compiled_as_the_kernel_runs_it():
    """The Hopper launches of results/sm90_resources.json (the table's and the sweep's, benchmarks/tiles.py's
    HOPPER_VARIANTS) with the constants hopper_attention itself launches them with (its _planned, from tensors on this
    CPU): a variant that leaves the mask and the rotated loop unset runs the table's (they were compiled as "every"
    and not rotated until the thirty-eighth session), and each launch once."""
    compiled_as = {(row["head_dim"], row["dtype"], row["causal"], knobs["block_q"], knobs["block_kv"], knobs["num_warps"],
                    knobs["num_stages"], knobs["warp_specialize"]): (knobs["mask"], knobs["overlap"])
                   for row, knobs in compiled_hopper_launches()}
    assert len(compiled_as) == len(compiled_hopper_launches())
    for d, causal in itertools.product((64, 128), (False, True)):
        q = torch.zeros(1, 1, 256, d, dtype=torch.float16)
        for variant in [hopper.LAUNCHES[d, "fp16", causal]] + tiles.HOPPER_VARIANTS:
            overrides = tuple({**dict.fromkeys(hopper.WS), **variant}.items())
            _, ran, _, consts = hopper._planned(signature(dict(q=q, k=q, v=q)), causal, False, overrides, True)
            key = (d, "fp16", causal, ran.block_q, ran.block_kv, ran.num_warps, ran.num_stages, ran.warp_specialize)
            assert compiled_as[key] == (consts["MASK"], consts["OVERLAP"]), (key, variant)


def test_gpusim_reads_each_compiled_hopper_launch_under_its_own_key():
    """Every compiled Hopper launch is what gpusim reads (occupancy.resources, with the key gpusim makes) for a
    configuration given that launch's knobs, and no two share a key: gpusim's key leaves out the mask and the rotated
    loop, so one launch a key, the one the sweep ran."""
    from gpusim.occupancy import resources as gpusim_resources
    launches = compiled_hopper_launches()
    for row, knobs in launches:
        cfg = make_config("hopper", seq=4096, head_dim=row["head_dim"], causal=row["causal"], dtype=row["dtype"],
                          gpu="H200", tiles=gpusim.Tiles(**knobs))
        res = gpusim_resources(cfg, "hopper")
        assert res.compiled and (res.registers_per_thread, res.spill_bytes_per_thread, res.shared_bytes) == (
            row["registers"], row["spill_store_bytes"] + row["spill_load_bytes"], row["shared_bytes"]), knobs
    assert len({resources.model_key(row) for row, _ in launches}) == len(launches) >= 60


def test_ptxas_report_parses_and_refuses_what_it_cannot_read():
    assert resources.parse_ptxas(PTXAS_LOG) == {
        "registers": 255, "spill_store_bytes": 2204, "spill_load_bytes": 1888, "stack_bytes": 1376,
        "wgmma_serialized": "insufficient register resources for the wgmma pipeline"}
    with pytest.raises(ValueError, match="ptxas -v printed no registers"):
        resources.parse_ptxas("ptxas info    : 0 bytes gmem\n    0 bytes stack frame, 0 bytes spill stores, "
                              "0 bytes spill loads\n")


def test_signatures_give_each_kernel_its_output_type():
    assert resources.signature("flash1", "bf16")["O"] == "*fp32"  # its accumulator in HBM
    hop = resources.signature("hopper", "fp8")
    assert (hop["Q"], hop["O"], hop["LSE"], hop["V_STRIDE"], hop["STAGES"]) == ("*fp8e4nv", "*fp16", "*fp32", "i32",
                                                                                 "constexpr")


SM90_CHECK = """
import re
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from benchmarks import bandwidth, latency, matmul_tiles

def ptx(fn, sig, consts, num_warps, num_stages=3):
    attrs = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(sig.values()) if t.startswith("*")}
    k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                       target=GPUTarget("cuda", 90, 32), options=dict(num_warps=num_warps, num_stages=num_stages))
    return k.asm["ptx"], k.metadata.shared

chase, _ = ptx(latency.chase_kernel, dict(buf="*i32", out="*i32", start="i32", hops="i32", UNROLL="constexpr"),
               dict(UNROLL=latency.UNROLL), 1)
load = dict(X="*fp16", out="*fp32", n_tiles="i32", tiles_per_program="i32", ROWS="constexpr", STAGES="constexpr")
mma = dict(Q="*fp16", K="*fp16", V="*fp16", OUT="*fp32", R="i32", Br="constexpr", Bc="constexpr", D="constexpr",
           VARIANT="constexpr")
print(len(re.findall(r"ld\\.global\\.cg", chase)))
for stages in (1, 3):
    code, shared = ptx(bandwidth.load_kernel, load, dict(ROWS=128, STAGES=stages), 8, stages)
    print(len(re.findall(r"cp\\.async\\.cg", code)) > 0, shared)
for br in (128, 32):
    code, _ = ptx(matmul_tiles.mma_kernel, mma, dict(Br=br, Bc=64, D=64, VARIANT="softmax"), 8)
    print(" ".join(sorted(set(re.findall(r"wgmma\\.mma_async|mma\\.sync", code)))))
"""


def test_microbenchmark_kernels_compile_for_sm90_to_the_instructions_they_time():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", SM90_CHECK], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:-1] == [
        str(latency.UNROLL),  # one ld.global.cg per hop, unrolled
        "False 32", "True 32768",  # 1 stage: plain loads; 3: cp.async into 2 buffers of 16 KiB
        "wgmma.mma_async", "mma.sync"]  # 128 rows: warp-group MMA; 32 rows: below wgmma's 64, the per-warp MMA



def test_tiles_bwd_measures_every_groups_pick():
    """benchmarks/tiles_bwd.py times the backward tiles gpusim picks in every group, beside the four fixed ones, so the
    pick's distance from the fastest is measured, never assumed."""
    from benchmarks.tiles_bwd import TILES, groups, picked, tiles_of
    for g in groups():
        tiles = tiles_of(g, "H200-measured")
        assert tiles[:4] == TILES and picked(g, "H200-measured") in tiles and len(set(tiles)) == len(tiles)


def _smoke(module, tmp_path, monkeypatch, name):
    """module.main's --smoke run (its SMOKE sizes restored after), its rows."""
    for key in module.SMOKE:
        monkeypatch.setattr(module, key, getattr(module, key))
    module.main(["--out", str(tmp_path), "--smoke"])
    data = json.loads((tmp_path / name).read_text())
    assert f"benchmarks.{name[:-5]} --out" in data["environment"]["command"]
    return data["rows"]


def test_program_start_smoke_run_times_each_wave_count(tmp_path, monkeypatch):
    from benchmarks import program_start
    rows = _smoke(program_start, tmp_path, monkeypatch, "program_start.json")
    assert [(r["waves"], r["heads"], r["steps"], r["seq_kv"], r["l2"]) for r in rows] == [
        (w, 2 * w, 1, 16, "cold") for w in (1, 2)]
    assert all(r["ms"] > 0 and "error" not in r for r in rows)


def test_launch_parts_smoke_run_times_every_kind_warm_and_its_loads_cold(tmp_path, monkeypatch):
    from benchmarks import launch_parts
    rows = _smoke(launch_parts, tmp_path, monkeypatch, "launch_parts.json")
    expected = [(p, kind, l2) for p in (1, 2) for kind in launch_parts.KINDS
                for l2 in (("warm", "cold") if kind in ("load", "copy") else ("warm",))]
    assert [(r["programs"], r["kind"], r["l2"]) for r in rows] == expected
    assert all(r["ms"] > 0 and "error" not in r and r["tile_bytes"] == 128 for r in rows)



def test_naive_launches_smoke_run_times_each_kernel_alone_the_call_and_empty_kernels_in_a_row(tmp_path, monkeypatch):
    from benchmarks import naive_launches
    rows = _smoke(naive_launches, tmp_path, monkeypatch, "naive_launches.json")
    assert [(r["kernel"], r.get("launches")) for r in rows] == [("empty", n) for n in (1, 2, 3)] + [
        (k, None) for k in ("qk", "softmax", "pv", "all")]
    assert all(r["ms"] > 0 and "error" not in r for r in rows)


def test_naive_launches_qk_parts_smoke_run_times_each_part_at_each_tile(tmp_path, monkeypatch):
    from benchmarks import naive_launches
    for key in naive_launches.SMOKE:
        monkeypatch.setattr(naive_launches, key, getattr(naive_launches, key))
    naive_launches.main(["--out", str(tmp_path), "--smoke", "--qk-parts"])
    data = json.loads((tmp_path / "qk_parts.json").read_text())
    command = data["environment"]["command"]
    assert "benchmarks.naive_launches --out" in command and "--qk-parts" in command
    tiles = sorted({(r["block_q"], r["block_kv"]) for r in data["rows"]})
    assert len(tiles) == 2 and (16, 16) in tiles
    assert [r["part"] for r in data["rows"]] == list(naive_launches.PARTS) * 2
    assert all(r["ms"] > 0 and "error" not in r for r in data["rows"])

@pytest.mark.filterwarnings("error::RuntimeWarning")  # the interpreter's overflow: dK/dV or dQ read an unset D
def test_bwd_gqa_smoke_run_times_both_kernels_at_each_kv_head_count(tmp_path, monkeypatch):
    from benchmarks import bwd_gqa
    rows = _smoke(bwd_gqa, tmp_path, monkeypatch, "bwd_gqa.json")
    assert [(r["kv_heads"], r["kernel"]) for r in rows] == [(kv, k) for kv in (2, 1) for k in ("dkdv", "dq")]
    assert all(r["ms"] > 0 and "error" not in r and r["heads"] == 2 for r in rows)


def test_last_wave_smoke_run_times_each_count_of_programs_per_sm(tmp_path, monkeypatch):
    from benchmarks import last_wave
    rows = _smoke(last_wave, tmp_path, monkeypatch, "last_wave.json")
    assert [(r["per_sm"], r["heads"], r["steps"], r["seq_kv"], r["l2"]) for r in rows] == [
        (m, 2 * m, 1, 16, "cold") for m in (1, 2)]
    assert all(r["ms"] > 0 and "error" not in r for r in rows)


def test_lpt_order_smoke_run_times_each_launch_order(tmp_path, monkeypatch):
    from benchmarks import lpt_order
    rows = _smoke(lpt_order, tmp_path, monkeypatch, "lpt_order.json")
    assert [(r["lpt_heads"], r["heads"], r["seq"], r["block_q"], r["block_kv"], r["l2"]) for r in rows] == [
        (lpt, 2, 128, 64, 64, "cold") for lpt in (0, 1)]
    assert all(r["ms"] > 0 and "error" not in r and r["causal"] for r in rows)


def test_ragged_tiles_smoke_run_times_each_kernel_at_each_edge(tmp_path, monkeypatch):
    from benchmarks import ragged_tiles
    rows = _smoke(ragged_tiles, tmp_path, monkeypatch, "ragged_tiles.json")
    assert [(r["kernel"], r["seq"], r["seq_kv"], r["block_q"]) for r in rows] == [
        ("flash2_16x16", n, n, 16) for n in (17, 32)]
    assert all(r["ms"] > 0 and "error" not in r and r["heads"] == 2 for r in rows)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # the interpreter's overflow: dK/dV or dQ read an unset D
def test_bwd_sharing_smoke_run_times_each_kernel_at_each_count_of_programs_per_sm(tmp_path, monkeypatch):
    from benchmarks import bwd_sharing
    rows = _smoke(bwd_sharing, tmp_path, monkeypatch, "bwd_sharing.json")
    assert [(r["kernel"], r["per_sm"], r["steps"], r["seq"], r["seq_kv"]) for r in rows] == [
        (kernel, m, j, *bwd_sharing.shape(kernel, (16, 16), j)) for kernel in ("dkdv", "dq") for m in (1, 2)
        for j in (1, 2)]
    assert bwd_sharing.shape("dq", (16, 16), 2) == (16, 32) and bwd_sharing.shape("dkdv", (16, 16), 2) == (32, 16)
    assert all(r["ms"] > 0 and "error" not in r and r["heads"] == r["per_sm"] for r in rows)


def test_bwd_rates_profiles_every_tile_bwd_sharing_times_in_launch_order():
    from benchmarks import bwd_rates, bwd_sharing
    assert bwd_rates.labels()[:3] == [(64, (64, 32), "dkdv"), (64, (64, 32), "dq"), (64, (64, 64), "dkdv")]
    assert len(bwd_rates.labels()) == 2 * sum(map(len, bwd_sharing.TILES.values()))


def test_bwd_rates_parse_writes_what_results_holds(tmp_path):
    from benchmarks import bwd_rates
    bwd_rates.main(["parse", "--csv", str(ROOT / "results" / "h200" / "bwd_rates_raw.csv"), "--out",
                    str(tmp_path / "bwd_rates.json")])
    written = json.loads((tmp_path / "bwd_rates.json").read_text())
    assert written["rows"] == json.loads((ROOT / "results" / "h200" / "bwd_rates.json").read_text())["rows"]
    assert written["environment"]["command"].startswith("ncu ... python -m benchmarks.bwd_rates workload; ")


def test_fwd_rates_parse_writes_what_results_holds_in_launch_order(tmp_path):
    from benchmarks import fwd_rates
    fwd_rates.main(["parse", "--csv", str(ROOT / "results" / "h200" / "fwd_rates_raw.csv"), "--out",
                    str(tmp_path / "fwd_rates.json")])
    rows = json.loads((tmp_path / "fwd_rates.json").read_text())["rows"]
    assert [(r["head_dim"], (r["block_q"], r["block_kv"])) for r in rows] == fwd_rates.labels()
    assert rows == json.loads((ROOT / "results" / "h200" / "fwd_rates.json").read_text())["rows"]


def test_bwd_sharing_gives_each_program_one_whole_block_and_j_whole_steps():
    """Each probe launch's programs hold one unmasked block of Br = block_q rows and walk J steps of Bc = block_kv
    rows, as gpusim's tilings of the two kernels have them (tests/test_pins.py pins dK/dV's K/V-major tiling)."""
    from itertools import product
    from gpusim import backward
    from benchmarks import bwd_sharing
    for d, tiles in ((d, t) for d, ts in bwd_sharing.TILES.items() for t in ts):
        for kernel, j in product(("dkdv", "dq"), bwd_sharing.STEPS):
            seq, seq_kv = bwd_sharing.shape(kernel, tiles, j)
            cfg = backward.config("flash2", seq=seq, seq_kv=seq_kv, head_dim=d, heads=3, block_q=tiles[0],
                                  block_kv=tiles[1], gpu="H200-measured")
            work, tiling = cfg.pass_.work(cfg, kernel), cfg.pass_.dot_tiling(cfg, kernel)
            assert (work.values.tolist(), work.counts.tolist()) == ([j], [3]), (kernel, tiles, j)
            assert tiling.whole_elements == tiling.tile_elements == j * tiles[0] * tiles[1], (kernel, tiles, j)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # the interpreter's overflow: dK/dV or dQ read an unset D
def test_dkdv_ramp_smoke_run_times_each_launch_causal_or_not(tmp_path, monkeypatch):
    from benchmarks import dkdv_ramp
    rows = _smoke(dkdv_ramp, tmp_path, monkeypatch, "dkdv_ramp.json")
    assert [(r["causal"], r["kv_heads"], r["seq"]) for r in rows] == [
        (c, kv, n) for c in (True, False) for kv, n in ((1, 64), (2, 48))]
    assert all(r["ms"] > 0 and "error" not in r and r["kernel"] == "dkdv" and r["heads"] == 2 for r in rows)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # the interpreter's overflow: dK/dV read an unset D
def test_dkdv_edge_smoke_run_times_causal_dkdv_at_each_head_count(tmp_path, monkeypatch):
    from benchmarks import dkdv_edge
    rows = _smoke(dkdv_edge, tmp_path, monkeypatch, "dkdv_edge.json")
    assert [(r["heads"], r["kv_heads"], r["seq"], r["block_q"], r["block_kv"]) for r in rows] == [
        (h, h, 64, 16, 16) for h in (1, 2)]
    assert all(r["ms"] > 0 and "error" not in r and r["kernel"] == "dkdv" and r["causal"] for r in rows)


def test_sm_edge_smoke_run_times_one_q_block_per_program_at_each_count(tmp_path, monkeypatch):
    from benchmarks import sm_edge
    rows = _smoke(sm_edge, tmp_path, monkeypatch, "sm_edge.json")
    assert [(r["programs"], r["heads"], r["seq"], r["seq_kv"]) for r in rows] == [(p, p, 16, 16) for p in (1, 2)]
    assert all(r["ms"] > 0 and "error" not in r for r in rows)


def test_pair_edge_smoke_run_times_one_q_block_per_program_at_each_count(tmp_path, monkeypatch):
    from benchmarks import pair_edge
    rows = _smoke(pair_edge, tmp_path, monkeypatch, "pair_edge.json")
    assert [(r["programs"], r["heads"], r["seq"], r["seq_kv"], r["steps"]) for r in rows] == [
        (p, p, 16, 16, 1) for p in (1, 2)]
    assert all(r["ms"] > 0 and "error" not in r for r in rows)


def test_pipeline_beside_smoke_run_times_one_q_block_per_program_at_each_count(tmp_path, monkeypatch):
    from benchmarks import pipeline_beside
    rows = _smoke(pipeline_beside, tmp_path, monkeypatch, "pipeline_beside.json")
    assert [(r["programs"], r["heads"], r["seq"], r["seq_kv"], r["steps"]) for r in rows] == [
        (p, p, 16, 16, 1) for p in (1, 2)]
    assert all(r["ms"] > 0 and "error" not in r for r in rows)


def test_wave_term_smoke_run_times_one_q_block_per_program_at_each_count(tmp_path, monkeypatch):
    from benchmarks import wave_term
    rows = _smoke(wave_term, tmp_path, monkeypatch, "wave_term.json")
    assert [(r["programs"], r["heads"], r["seq"], r["seq_kv"], r["steps"]) for r in rows] == [
        (p, p, 16, 16, 1) for p in (1, 2)]
    assert all(r["ms"] > 0 and "error" not in r for r in rows)


def test_last_alone_smoke_run_times_full_waves_and_one_program_more(tmp_path, monkeypatch):
    from benchmarks import last_alone
    rows = _smoke(last_alone, tmp_path, monkeypatch, "last_alone.json")
    b = last_alone.per_sm(16, 16, 16)
    assert [(r["b"], r["programs"], r["heads"], r["seq"], r["seq_kv"]) for r in rows] == [
        (b, b + e, b + e, 16, 16) for e in (0, 1)]
    assert all(r["ms"] > 0 and "error" not in r for r in rows)


def test_lone_stages_smoke_run_times_each_count_at_each_pipeline_depth(tmp_path, monkeypatch):
    from benchmarks import lone_stages
    rows = _smoke(lone_stages, tmp_path, monkeypatch, "lone_stages.json")
    assert [(r["num_stages"], r["programs"], r["heads"], r["seq"], r["seq_kv"], r["steps"]) for r in rows] == [
        (s, p, p, 16, 16, 1) for s in (2, 3) for p in (1, 2)]
    assert all(r["ms"] > 0 and "error" not in r for r in rows)


def test_hopper_waves_smoke_run_times_each_launch_causal_or_not(tmp_path, monkeypatch):
    from benchmarks import hopper_waves
    rows = _smoke(hopper_waves, tmp_path, monkeypatch, "hopper_waves.json")
    assert [(r["causal"], r["block_q"], r["block_kv"], r["per_sm"], r["heads"]) for r in rows] == [
        (False, 128, 128, 1, 1), (True, 128, 64, 2, 2)]
    assert all(r["ms"] > 0 and "error" not in r and r["waves"] == 1 for r in rows)


def test_hopper_starts_smoke_run_times_a_variant_at_its_knobs(tmp_path, monkeypatch):
    from benchmarks import hopper_starts
    rows = _smoke(hopper_starts, tmp_path, monkeypatch, "hopper_starts.json")
    assert [(r["variant"], r["block_q"], r["block_kv"], r["num_stages"], r["per_sm"]) for r in rows] == [
        ("causal, own launch", 128, 64, 3, 2)]
    assert all(r["ms"] > 0 and "error" not in r for r in rows)


def test_hopper_stalls_samples_the_launches_it_names_and_parses_only_its_own():
    """The --launch-skip indices run 139 sampled are the launches report_launches labels them, and parse refuses
    Nsight's CSV of other launches."""
    from benchmarks import hopper_stalls, report_launches
    launches = hopper_stalls.launches()
    assert len(launches) == 16 and len(set(launches)) == 16
    assert {skip: launches[skip][:2] for skip in report_launches.SOURCE_LAUNCHES} == report_launches.SOURCE_LAUNCHES
    assert all(launches[skip][2:] == (1, 16) for skip in report_launches.SOURCE_LAUNCHES)
    with pytest.raises(SystemExit, match="expected 16 hopper_kernel launches"):
        hopper_stalls.parse(ROOT / "results" / "h200" / "bwd_stalls_raw.csv")


def test_hopper_kv_smoke_run_shares_one_kv_head_among_the_query_heads(tmp_path, monkeypatch):
    from benchmarks import hopper_kv
    rows = _smoke(hopper_kv, tmp_path, monkeypatch, "hopper_kv.json")
    assert [(r["causal"], r["heads"], r["kv_heads"], r["per_sm"]) for r in rows] == [(False, 1, 1, 1), (True, 2, 1, 2)]
    assert all(r["ms"] > 0 and "error" not in r for r in rows)


def test_hopper_pairs_smoke_run_times_the_causal_launch_at_more_stages(tmp_path, monkeypatch):
    from benchmarks import hopper_pairs
    rows = _smoke(hopper_pairs, tmp_path, monkeypatch, "hopper_pairs.json")
    assert [(r["causal"], r["block_q"], r["block_kv"], r["num_stages"], r["per_sm"]) for r in rows] == [
        (True, 128, 64, 4, 1)]
    assert all(r["ms"] > 0 and "error" not in r and r["resident"] is None for r in rows)


def test_hopper_lone_smoke_run_times_a_knob_of_the_lone_causal_launch(tmp_path, monkeypatch):
    from benchmarks import hopper_lone
    rows = _smoke(hopper_lone, tmp_path, monkeypatch, "hopper_lone.json")
    assert [(r["variant"], r["block_kv"], r["num_stages"], r["overlap"], r["per_sm"]) for r in rows] == [
        ("not rotated", 64, 6, False, 1)]
    assert all(r["ms"] > 0 and "error" not in r for r in rows)


def test_flash1_l1_compiles_the_kernel_as_it_is_without_its_hint_and_with_it_on_o_alone():
    """benchmarks/flash1_l1.py's variants, made from kernels/flash1.py's source: as it is (the hint on the inner loop's
    four loads), plain (none) and evict_last_o (O_i's load alone); the rest of the source the same in all three."""
    from benchmarks import flash1_l1
    source = (ROOT / "kernels" / "flash1.py").read_text()
    variants = flash1_l1.variants(source)
    assert variants["evict_last"] == source and source.count(flash1_l1.HINT) == 4
    assert flash1_l1.HINT not in variants["plain"]
    only_o = variants["evict_last_o"]
    assert only_o.count(flash1_l1.HINT) == 1 and flash1_l1.O_LOAD + flash1_l1.HINT in only_o
    assert {text.replace(flash1_l1.HINT, "") for text in variants.values()} == {variants["plain"]}


def test_host_interleaves_calls_one_by_one_and_takes_each_sides_median(monkeypatch):
    """benchmarks/host.py's interleaved pairs: entry, SDPA, SDPA, entry, entry, SDPA, each call timed alone by the
    clock either side of it (synchronised before and after, not between); medians (entry: 2, 5, 30 -> 5; SDPA:
    1, 4, 20 -> 4, stalls left out), ratio_call the medians' ratio (not the pairs' median ratio, 1.5)."""
    from benchmarks import host
    ticks = iter([0, 2, 2, 3, 3, 7, 7, 12, 12, 42, 42, 62])  # call ends minus starts: 2, 1, 4, 5, 30, 20
    monkeypatch.setattr(host.time, "perf_counter", lambda: next(ticks) / 1e6)
    order, syncs = [], []
    timed = host.interleaved(lambda: order.append("entry"), lambda: order.append("sdpa"), 3,
                             lambda: syncs.append(len(order)))
    assert order == ["entry", "sdpa", "sdpa", "entry", "entry", "sdpa"] and syncs == [0, 6]
    assert timed == dict(us_call=5.0, sdpa_us_call=4.0, ratio_call=1.25)


def test_host_times_an_entry_and_sdpa_in_turn_and_takes_each_ones_median(monkeypatch):
    """benchmarks/host.py's paired rounds, ABBA: entry, SDPA, SDPA, entry, entry, SDPA, ... (the warm-up in the
    first round only); us and sdpa_us the medians of their own rounds, ratio the median of the rounds' ratios (6/3,
    1/2, 9/1: 2, where the medians' ratio is 6/2); an error in either is the row's error."""
    from benchmarks import host
    clock, order = iter([6.0, 3.0, 2.0, 1.0, 9.0, 1.0]), []
    monkeypatch.setattr(host, "per_call_us", lambda fn, calls, warmup, sync: order.append((fn(), warmup))
                        or next(clock))  # reads `clock` when called
    timed = host.paired(lambda: "entry", lambda: "sdpa", 200, 20, None, 3)
    assert order == [("entry", 20), ("sdpa", 20), ("sdpa", 0), ("entry", 0), ("entry", 0), ("sdpa", 0)]
    assert timed == dict(us=6.0, sdpa_us=2.0, ratio=2.0, us_rounds=[6.0, 1.0, 9.0], sdpa_us_rounds=[3.0, 2.0, 1.0])

    def fails():
        raise RuntimeError("no flash backend")
    clock = iter([5.0])
    assert host.paired(lambda: "entry", fails, 200, 20, None, 3) == {"error": "sdpa: RuntimeError: no flash backend"}


def test_help_prints_the_docstring_where_it_crashed_or_failed(capsys):
    """softmax_issue --help raised IndexError; golden --help printed its docstring and exited 1."""
    from benchmarks import golden, softmax_issue
    for module in (softmax_issue, golden):
        assert module.main(["--help"]) == 0 and module.__doc__.splitlines()[0] in capsys.readouterr().out
    assert softmax_issue.main([]) == 2  # nothing to do: the docstring, and an error's status
