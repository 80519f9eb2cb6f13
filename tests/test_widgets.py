"""The course's widgets, driven as a learner would: set a control's value, then check the numbers and the
plot data it produced against gpusim. Also the exercises' verdicts and the helpers the notebooks print."""
import json
import math
import re
from dataclasses import replace

import numpy as np
import pytest

import gpusim
from gpusim_course import exercises, plots, tables, widgets
from gpusim.cli import fmt_bytes
from gpusim.cost import LAUNCH_OVERHEAD_S, busy_fraction


def span(readout):
    """(bytes shown, config) of the one gpusim-hbm-bytes span in a readout."""
    found = re.findall(r"<span class=\"gpusim-hbm-bytes\" data-config='([^']*)'>([\d,]+)</span>", readout.value)
    assert len(found) == 1
    return int(found[0][1].replace(",", "")), json.loads(found[0][0])


def simulated_bytes(config):
    r = gpusim.simulate(**config)
    return r.hbm_read_bytes + r.hbm_write_bytes


@pytest.fixture(scope="module")
def explorer():
    return widgets.TilingExplorer(gpu="A100-40GB", seq=4096, head_dim=64, heads=16)


# ---------------------------------------------------------------------------------------------------
# TilingExplorer: the contract with the browser test, the SRAM limits, the plots


def test_explorer_starts_at_gpusims_default_blocks_and_shows_its_bytes(explorer):
    assert (explorer.block_q.value, explorer.block_kv.value) == gpusim.default_blocks("flash2", "A100-40GB", 64, "fp16")
    shown, config = span(explorer.readout)
    assert config == explorer.config
    assert shown == simulated_bytes(config) == explorer.hbm_bytes
    assert f">{shown:,}</span>" in explorer.readout.value


@pytest.mark.parametrize("name, value", [("block_kv", 128), ("block_q", 64), ("block_kv", 32), ("block_q", 128)])
def test_a_block_slider_updates_the_bytes_and_the_plots(explorer, name, value):
    getattr(explorer, name).value = value
    shown, config = span(explorer.readout)
    assert config[name] == value and shown == simulated_bytes(config)
    r = gpusim.simulate(**config)
    tiling = r.config.tiling
    ax_grid, ax_thm, ax_heat = explorer.axes
    star = ax_thm.lines[-1]
    assert star.get_xdata()[0] == r.sram_bytes_per_block / 1024 and star.get_ydata()[0] == shown / 2**30
    cell = ax_heat.lines[-1]
    assert (cell.get_xdata()[0], cell.get_ydata()[0]) == (widgets.BLOCKS.index(config["block_kv"]),
                                                          widgets.BLOCKS.index(config["block_q"]))
    title = ax_grid.texts[-1].get_text()
    assert f"{tiling.n_q_blocks} x {tiling.n_kv_blocks} tiles of Br={config['block_q']} x Bc={config['block_kv']}" \
        in title


def test_block_q_sets_flash2s_k_and_v_traffic(explorer):
    for block_q in (32, 64, 128):
        explorer.block_q.value = block_q
        k = explorer.result.by_tensor["K"]["read_bytes"]
        assert k == math.ceil(4096 / block_q) * 4096 * 64 * 2 * 16


@pytest.mark.parametrize("old, new, snapped", [(64, 80, 128), (128, 112, 64), (32, 48, 64), (64, 48, 32)])
def test_a_slider_step_lands_on_the_next_power_of_two(explorer, old, new, snapped):
    explorer.block_kv.value = old
    explorer.block_kv.value = new
    assert explorer.block_kv.value == snapped
    assert span(explorer.readout)[1]["block_kv"] == snapped


def test_sliders_stop_where_sram_runs_out_and_say_why():
    ex = widgets.TilingExplorer(algo="flash1", gpu="T4", seq=1024, head_dim=256, heads=1)
    for slider in (ex.block_q, ex.block_kv):
        other = ex.block_kv if slider is ex.block_q else ex.block_q
        config = ex.config
        assert gpusim.simulate(**(config | {slider.description: slider.max}))
        with pytest.raises(ValueError) as err:
            gpusim.simulate(**(config | {slider.description: 2 * slider.max}))
        if slider.max < widgets.BLOCKS[-1]:
            assert ex.limits[slider.description] == (slider.max, str(err.value))
            assert f"{slider.description} stops at {slider.max}" in ex.readout.value
        assert other.max >= other.value


def test_a_gpu_with_less_sram_resets_blocks_that_no_longer_fit():
    ex = widgets.TilingExplorer(gpu="H100-SXM", seq=2048, head_dim=128, heads=1)
    ex.block_q.value = 256
    ex.gpu.value = "T4"
    assert ex.error is None
    assert (ex.block_q.value, ex.block_kv.value) == gpusim.default_blocks("flash2", "T4", 128, "fp16")
    assert span(ex.readout)[0] == simulated_bytes(ex.config)


def test_dtypes_follow_the_gpu():
    ex = widgets.TilingExplorer(gpu="H100-SXM", seq=1024, heads=1, dtype="fp8")
    assert "fp8" in ex.dtype.options
    ex.gpu.value = "A100-40GB"
    assert "fp8" not in ex.dtype.options and ex.dtype.value == "fp16" and ex.error is None


def test_theorem2_curve_is_gpusim_with_less_or_more_sram(explorer):
    c = explorer.curve
    gpu = gpusim.get_gpu("A100-40GB")
    for m, flash in zip(c["sram_bytes"], c["flash"]):
        small = replace(gpu, sram_bytes_per_block=m, sram_bytes_per_sm=m)
        assert flash == gpusim.simulate(**(explorer.config | dict(gpu=small, block_q=None, block_kv=None))).hbm_bytes
    assert c["theorem2"][0] == pytest.approx(c["flash"][0])
    assert all(a >= b for a, b in zip(c["flash"], c["flash"][1:]))  # more SRAM never means more traffic
    line = explorer.axes[1].lines[1]
    assert list(line.get_ydata()) == [b / 2**30 for b in c["flash"]]


def test_best_blocks_are_the_fastest_that_fit(explorer):
    bq, bkv, seconds = explorer.best
    assert gpusim.simulate(**(explorer.config | dict(block_q=bq, block_kv=bkv))).predicted_time_s == seconds
    for q in widgets.BLOCKS:
        for kv in widgets.BLOCKS:
            try:
                assert gpusim.simulate(**(explorer.config | dict(block_q=q, block_kv=kv))).predicted_time_s >= seconds
            except ValueError:
                pass


# ---------------------------------------------------------------------------------------------------
# The steppers


def test_tile_stepper_follows_gpusims_trace():
    st = widgets.TileStepper(algo="flash2", seq=128, block_q=64, block_kv=32)
    steps = st.result.trace
    assert st.step.max == len(steps) - 1
    st.step.value = 5
    assert st.current == steps[5]
    expected = {}
    for s in steps[:6]:
        for d, moves in enumerate((s.loads, s.stores)):
            for tensor, n in moves:
                expected.setdefault(tensor, [0, 0])[d] += n
    assert st.so_far == expected
    bars = [a for a in st.axes[1].patches if a.get_animated()]
    assert [b.get_height() for b in bars] == [st.so_far.get(t, [0, 0])[d] / 1024 for d in (0, 1) for t in st.total]
    assert f"{steps[5].sram_bytes:,} B" in st.readout.value
    st.step.value = st.step.max
    assert st.so_far == widgets.cumulative_bytes(steps)
    counts = gpusim.simulate("flash2", seq=128, head_dim=64, block_q=64, block_kv=32).by_tensor
    assert {t: rw for t, rw in st.so_far.items()} == {t: [v["read_bytes"], v["write_bytes"]] for t, v in counts.items()}


def test_tile_stepper_retraces_when_the_configuration_changes():
    st = widgets.TileStepper(seq=128, block_q=64, block_kv=64)
    st.step.value = st.step.max
    st.algo.value = "flash1"
    assert st.result.config.algo == "flash1"
    assert st.step.max == len(st.result.trace) - 1 and st.step.value <= st.step.max
    st.causal.value = True
    assert st.result.config.causal and st.result.config.tiling.tiles == 3


def test_loop_order_comparison_ends_at_gpusims_counts():
    cmp = widgets.LoopOrderComparison(seq=128, block=64)
    cmp.step.value = cmp.step.max
    for algo, moved in cmp.moved.items():
        assert moved[-1] == gpusim.simulate(algo, seq=128, head_dim=64, block_q=64, block_kv=64).hbm_bytes
        assert list(cmp.axes[2].lines[list(cmp.moved).index(algo)].get_ydata()) == list(moved / 1024)


def test_online_softmax_stepper_shows_gpusims_running_max_and_sum():
    st = widgets.OnlineSoftmaxStepper(n=32, chunk=4, seed=0)
    steps = gpusim.softmax(st.x, "online", chunk=4).steps
    for k in (0, 3, len(steps) - 1):
        st.step.value = k
        assert (st.m, st.d, st.rescale) == steps[k][1:]
        history = [a for a in st.axes[1].lines if a.get_animated()][0]
        assert list(history.get_ydata()) == [s[2] for s in steps[:k + 1]]
    assert st.d == pytest.approx(np.exp(st.x - st.x.max()).sum())
    assert "Done" in st.readout.value
    st.chunk.value = 8
    assert st.step.max == 3 and len(st.steps) == 4


def test_naive_stepper_shows_each_kernels_bytes():
    st = widgets.NaiveStepper(seq=1024, head_dim=64)
    r = gpusim.simulate("naive", seq=1024, head_dim=64)
    for label, kernel in widgets.NAIVE_STEPS.items():
        st.step.value = label
        assert st.bytes == {t: r.counts.get((kernel, t), (0, 0)) for t in widgets.NAIVE_TENSORS}
        solid = [b.get_height() for b in st.axes[0].patches if b.get_facecolor()[3] > 0]
        assert solid == [st.bytes[t][d] / 2**20 for d in (0, 1) for t in widgets.NAIVE_TENSORS]


def test_a_gpusim_error_is_a_line_in_the_readout_not_a_traceback():
    ex = widgets.TilingExplorer(seq=1024, heads=4)
    image = ex.image.value
    ex.heads = 0
    ex.refresh()
    assert ex.error == "heads=0 must be a positive integer"
    assert "gpusim:" in ex.readout.value and ex.image.value == image
    ex.heads = 4
    ex.refresh()
    assert ex.error is None and span(ex.readout)[0] == simulated_bytes(ex.config)


# ---------------------------------------------------------------------------------------------------
# The explorers of notebooks 1, 2, 5 and 7


def test_roofline_ridge_point_follows_the_gpu_and_dtype():
    ex = widgets.RooflineExplorer(gpu="A100-40GB")
    for gpu, dtype in (("H100-SXM", "fp16"), ("H100-SXM", "fp8"), ("T4", "fp32")):
        ex.gpu.value = gpu
        ex.dtype.value = dtype
        g = gpusim.get_gpu(gpu)
        assert ex.ridge == g.matmul_flops_per_s(dtype) / g.hbm_bytes_per_s
        roof = ex.axes[0].lines[0]
        assert roof.get_ydata()[-1] == pytest.approx(g.matmul_flops_per_s(dtype) / 1e12)
        name, intensity, achieved = ex.points[-1]
        k = ex.results[1].kernels[0]
        assert achieved == (k.flops_matmul + k.flops_other) / k.predicted_time_s


def test_footprint_explorer_finds_the_longest_sequence_that_fits():
    ex = widgets.FootprintExplorer(gpu="A100-40GB", heads=1, head_dim=128)
    n = ex.limit["naive"]
    shape = dict(heads=1, head_dim=128, gpu="A100-40GB")
    assert gpusim.simulate("naive", seq=n, **shape).fits_in_hbm
    assert not gpusim.simulate("naive", seq=n + 1, **shape).fits_in_hbm
    ex.heads.value = 32
    assert ex.limit["naive"] < n
    line = ex.axes[0].lines[0]
    peaks = [gpusim.simulate("naive", seq=s, heads=32, head_dim=128, gpu="A100-40GB").hbm_peak_bytes
             for s in widgets.LONG_SEQS]
    assert list(line.get_ydata()) == [p / 2**30 for p in peaks]


def test_waves_explorer_uses_gpusims_busy_fraction():
    ex = widgets.WavesExplorer(gpu="A100-40GB", batch=1, heads=8)
    for algo, rs in ex.curves.items():
        assert ex.busy[algo] == [busy_fraction(r.config.gpu, r.kernels[0].programs, r.kernels[0].sram_bytes_per_block)
                                 for r in rs]
    assert max(ex.busy["flash1"]) <= 8 / 108 + 1e-12  # one thread block per (batch, head)
    ex.heads.value = 64
    assert ex.curves["flash1"][0].config.heads == 64


def test_overlap_explorer_draws_gpusims_per_tile_terms():
    ex = widgets.OverlapExplorer(gpu="H100-SXM", seq=4096, head_dim=128)
    for algo, r in ex.results.items():
        t = tables.time_terms(r)[0]
        tiles = r.config.tiling.tiles * r.config.bh / r.config.gpu.sm_count
        assert ex.per_tile[algo]["t_matmul"] == pytest.approx(t["t_matmul"] / tiles)
    ex.dtype.value = "fp8"
    assert ex.results["hopper"].config.dtype == "fp8" and ex.results["flash2"].config.dtype == "fp16"


@pytest.mark.parametrize("algo, kwargs", [("naive", dict(seq=4096)), ("flash1", dict(seq=8192, causal=True)),
                                          ("flash2", dict(seq=2048, heads=32)), ("hopper", dict(seq=8192, dtype="fp8")),
                                          ("flash2", dict(seq=1, seq_kv=65536, heads=8))])
def test_time_terms_rebuild_gpusims_predicted_time(algo, kwargs):
    r = gpusim.simulate(algo, head_dim=128, gpu="H100-SXM", **kwargs)
    for t in tables.time_terms(r):
        assert max(t["t_memory"], t["t_compute"]) / t["busy"] + LAUNCH_OVERHEAD_S == pytest.approx(t["predicted"])


# ---------------------------------------------------------------------------------------------------
# Exercises and helpers


@pytest.mark.parametrize("name", list(exercises.EXERCISES))
def test_each_solution_is_right_and_each_stub_is_not_yet(name):
    assert exercises.check(name, exercises.EXERCISES[name][1]).status == "right"

    def stub(*args):
        return None

    assert exercises.check(name, stub).status == "not yet"


def unscaled_l(m_i, l_i, acc, s_ij, v_j):
    """A tile update that forgets to rescale l_i when the max grows."""
    m_new, _, acc_new = exercises.tile_update(m_i, l_i, acc, s_ij, v_j)
    return m_new, l_i + np.exp(s_ij - m_new[:, None]).sum(axis=1), acc_new


@pytest.mark.parametrize("name, wrong, hint", [
    ("ridge_point", lambda g, d: g.hbm_bytes_per_s / g.matmul_flops_per_s(d), "bytes per FLOP"),
    ("naive_sp_bytes", lambda n, e: 2 * n * n * e, "counted each matrix once"),
    ("flash2_k_read_bytes", lambda n, d, br, e: (n // br) * n * d * e, "use ceil"),
    ("causal_kept", lambda n, nk: n * (n + 1) // 2, "top-left aligned"),
    ("tile_update", unscaled_l, "without rescaling"),
    ("causal_kept", lambda n, nk: 1 / 0, "ZeroDivisionError"),
])
def test_a_wrong_answer_gets_the_reason(name, wrong, hint):
    verdict = exercises.check(name, wrong)
    assert verdict.status == "wrong" and hint in verdict.message
    assert "wrong" in verdict._repr_html_()


def test_solution_prints_the_reference(capsys):
    exercises.solution("causal_kept")
    assert "def causal_kept" in capsys.readouterr().out


def test_ulp_distance_counts_representable_floats_between():
    x = np.array([1.0, -1.0, 0.0], dtype=np.float32)
    up = np.nextafter(x, np.float32(np.inf))
    assert list(tables.ulp_distance(x, x)) == [0, 0, 0]
    assert list(tables.ulp_distance(x, up)) == [1, 1, 1]
    assert tables.ulp_distance(np.float16([-0.0]), np.float16([0.0]))[0] == 0


def test_bit_comparison_is_measured_on_gpusims_softmaxes():
    c = tables.bit_comparison(np.float32, rows=20, n=256, chunk=32)
    assert c["elements"] == 20 * 256 and 0 <= c["equal_fraction"] <= 1
    same = tables._bits("same", np.ones(4, np.float32), np.ones(4, np.float32))
    assert tables.bits_verdict([same]).startswith("Measured: bit-for-bit identical")
    assert tables.bits_verdict([c]).startswith("Measured: not") == (c["equal_fraction"] < 1)


def test_when_flash_helps_table_is_gpusims():
    rows = {r["scenario"]: r for r in tables.when_flash_helps("H100-SXM")}
    naive = gpusim.simulate("naive", seq=512, heads=32, kv_heads=32, head_dim=128, gpu="H100-SXM")
    flash = gpusim.simulate("flash2", seq=512, heads=32, kv_heads=32, head_dim=128, gpu="H100-SXM")
    speedup = naive.predicted_time_s / flash.predicted_time_s
    assert rows["prefill, short prompt"]["predicted speedup"] == f"{speedup:.1f}x"
    assert rows["prefill, 128K context"]["predicted speedup"] == "naive cannot run"
    assert rows["decode, 128K cache"]["queries x keys"] == "1 x 131,072"


def test_bench_plots_take_rows_in_the_shipped_format():
    rows = [{"provider": p, "dtype": "fp16", "head_dim": 64, "causal": False, "seq": s, "batch": 16384 // s,
             "heads": 32, "ms": ms, "tflops": 1.0, "peak_bytes": 2**30, "rel_err": 1e-3}
            for p, ms in (("naive", 2.0), ("flash2", 0.5)) for s in (1024, 2048)]
    rows.append({"provider": "naive", "dtype": "fp16", "head_dim": 64, "causal": False, "seq": 4096, "batch": 4,
                 "heads": 32, "error": "OOM"})
    group = tables.bench_group(rows)
    fig = plots.bench_figure(group, tables.predictions(group))
    speedup = [line for line in fig.axes[1].lines if line.get_label() == "flash2"][0]
    assert list(speedup.get_ydata()) == [4.0, 4.0]


# ---------------------------------------------------------------------------------------------------
# The measured numbers the notebooks quote (gpusim_course.tables over results/<gpu>/*.json rows)


def bench_row(provider, seq, ms, dtype="fp16", head_dim=128, causal=False, **extra):
    batch, heads = gpusim.fa2_shape(seq, head_dim)
    return {"provider": provider, "dtype": dtype, "head_dim": head_dim, "causal": causal, "seq": seq, "batch": batch,
            "heads": heads, "ms": ms, "tflops": 4 * batch * heads * seq * seq * head_dim / (ms * 1e-3) / 1e12,
            "peak_bytes": 2**30, "rel_err": 1e-3} | extra


def test_environment_line_names_gpu_versions_date_command_and_truncation():
    line = tables.environment_line({"environment": {"gpu": "NVIDIA H200", "torch": "2.11", "date": "2026-11-29",
                                                    "command": "python -m gpusim_kernels.bench", "truncated": "stopped"}})
    assert line.startswith("Measured on NVIDIA H200: torch 2.11, date 2026-11-29; command: python -m gpusim_kernels.bench")
    assert line.endswith("note: stopped")
    assert "command: python benchmarks/ceilings.py" in tables.environment_line(
        {"gpu": "H", "command": "python benchmarks/ceilings.py"})  # ceilings.json: the fields at the top level


def test_read_results_says_where_the_file_should_be(tmp_path):
    with pytest.raises(FileNotFoundError, match="checkout of the repository"):
        tables.read_results(tmp_path / "bench.json")
    (tmp_path / "bench.json").write_text('{"rows": []}')
    assert tables.read_results(tmp_path / "bench.json") == {"rows": []}


def test_hopper_rows_and_summary_are_ratios_of_the_measured_times():
    rows = [bench_row("hopper", 4096, 1.0, rel_err=2e-4), bench_row("hopper", 4096, 0.75, dtype="fp8", rel_err=4e-2),
            bench_row("sdpa_cudnn", 4096, 0.9), bench_row("sdpa_flash", 4096, 1.5),
            bench_row("hopper", 8192, 2.0, rel_err=2e-4), bench_row("hopper", 8192, 1.6, dtype="fp8", rel_err=3e-2),
            bench_row("sdpa_cudnn", 8192, 1.9), bench_row("sdpa_flash", 8192, 3.2),
            bench_row("sdpa_cudnn", 16384, 9.0), {**bench_row("hopper", 16384, 0.1), "error": "OOM", "ms": None}]
    got = tables.hopper_rows(rows, head_dim=128)
    assert [r["N"] for r in got] == [4096, 8192]  # 16,384: no Hopper time
    r = got[0]
    assert r["speed vs SDPA cuDNN"] == pytest.approx(0.9) and r["speed vs SDPA flash"] == pytest.approx(1.5)
    assert r["fp8 speed vs fp16"] == pytest.approx(1 / 0.75) and r["fp8 error / fp16 error"] == pytest.approx(200)
    batch, heads = gpusim.fa2_shape(4096, 128)
    p16, p8 = (gpusim.simulate("hopper", seq=4096, batch=batch, heads=heads, head_dim=128, dtype=dt,
                               gpu="H200-measured").predicted_time_s for dt in ("fp16", "fp8"))
    assert r["gpusim fp16 ms"] == pytest.approx(p16 * 1e3) and r["gpusim fp8 vs fp16"] == pytest.approx(p16 / p8)
    text = tables.hopper_summary(rows, head_dim=128, min_seq=4096)
    assert "0.90 to 0.95x cuDNN's speed" in text and "1.50 to 1.60x SDPA's FlashAttention-2" in text
    assert "1.25 to 1.33x its fp16 speed" in text and "150 to 200x fp16's error" in text


def test_speedup_rows_divide_naive_by_flash2_and_say_when_pytorch_ran_out():
    rows = [bench_row(p, s, ms, head_dim=64) for s in (1024, 2048) for p, ms in
            (("naive", 3.0), ("flash2", 1.0), ("torch_naive", 4.0), ("sdpa_flash", 0.5))]
    rows[-2] = {k: v for k, v in rows[-2].items() if k != "ms"} | {"error": "OOM"}  # torch_naive at 2,048
    got = tables.speedup_rows(rows, head_dim=64)
    assert [r["measured: flash2 over naive"] for r in got] == ["3.0x", "3.0x"]
    last = got[-1]["measured: SDPA flash over PyTorch's standard attention"]
    assert got[0]["measured: SDPA flash over PyTorch's standard attention"] == "8.0x" and "out of memory" in last
    shape = dict(seq=1024, batch=16, heads=32, head_dim=64, gpu="H200-measured")
    predicted = gpusim.simulate("naive", **shape).predicted_time_s / gpusim.simulate("flash2", **shape).predicted_time_s
    assert got[0]["gpusim: flash2 over naive"] == f"{predicted:.1f}x"


def test_footprint_rows_set_measured_peaks_beside_gpusims_naive_footprint():
    seq, d = 32768, 64
    sim = gpusim.simulate("naive", seq=seq, batch=1, heads=32, head_dim=d, gpu="H200").hbm_peak_bytes
    rows = [bench_row("naive", seq, 1.0, head_dim=d, peak_bytes=sim),
            {**bench_row("torch_naive", seq, 1.0, head_dim=d), "error": "OOM"}]
    got = tables.footprint_rows(rows, gpu="H200", head_dims=(64,), providers=("naive", "torch_naive"))
    assert [r["measured / gpusim"] for r in got] == ["1.000", ""]
    assert got[1]["measured peak"] == "out of memory"
    assert got[0]["gpusim (naive)"] == f"{sim / 2**30:.1f} GiB = {sim / gpusim.get_gpu('H200').hbm_bytes:.0%} of H200"


def ncu_rows():
    """ncu.json-shaped rows: flash2 exact, flash1 causal reading 25% more than counted, two naive kernels."""
    rows = []
    for kernel, causal, l2_measured, time_measured in (("flash2", False, 1000, 2e-3), ("flash1", True, 1250, 4e-3),
                                                      ("qk", False, 990, 1e-3), ("softmax", False, 1000, 50e-6)):
        for quantity, sim, meas in (("l2_to_sm_bytes", 1000, l2_measured), ("dram_read_bytes", 500, 520),
                                    ("dram_write_bytes", 100, 101), ("time_s", 1e-3, time_measured)):
            rows.append({"kernel": kernel, "seq": 4096, "head_dim": 64, "causal": causal, "dtype": "fp16",
                         "quantity": quantity, "simulated": sim, "measured": meas, "rel_err": (sim - meas) / meas})
    return rows


def test_ncu_measured_sums_an_algorithms_kernels():
    rows = ncu_rows()
    got = tables.ncu_measured(rows, seq=4096, head_dim=64, algos=("naive", "flash2"))
    assert got["naive"][:2] == (2 * (520 + 101), 1e-3 + 50e-6)  # qk and softmax: the naive kernels in the rows
    assert got["flash2"][:2] == (520 + 101, 2e-3)
    with pytest.raises(ValueError, match="no naive launch at N=8192"):
        tables.ncu_measured(rows, seq=8192, head_dim=64)
    assert tables.ncu_row(rows, "flash1", "l2_to_sm_bytes", 4096, 64, causal=True)["measured"] == 1250


def test_ncu_error_rows_and_findings_are_computed_from_the_rows():
    rows = ncu_rows()
    l2 = {r["kernel"]: r for r in tables.ncu_error_rows(rows, "l2_to_sm_bytes")}
    assert l2["flash2"]["equal to the byte"] == 1 and l2["flash1"]["equal to the byte"] == 0
    assert l2["flash1"]["(gpusim - measured) / measured"] == "-20.0%"
    times = {r["kernel"] for r in tables.ncu_error_rows(rows, "time_s")}
    assert times == {"flash2", "flash1", "qk"}  # softmax's 50 us launch is under the 100 us cut
    findings = tables.ncu_findings(rows)
    assert findings[0].startswith("Bytes from L2 into the SMs: equal to gpusim's count to the byte in every launch "
                                  "of flash2, softmax (2 launches)")
    assert "within 1% of gpusim's count" in findings[1]
    assert not any("flash1: within" in f for f in findings)  # no flash1 launch without the mask to compare
    assert "below the measured time in 2 of 3 launches" in findings[-1] and "by up to 75%" in findings[-1]


def test_tile_rows_tick_the_measured_and_predicted_fastest_and_the_lesson_names_the_winner():
    rows = [{"head_dim": 128, "causal": c, "seq": 4096, "block_q": bq, "block_kv": bkv, "ms": ms,
             "sdpa_flash_ms": 1.0, "vs_sdpa_flash": 1.0 / ms}
            for c in (False, True) for bq, bkv, ms in ((128, 128, 1.2), (64, 64, 0.9))]
    got = tables.tile_rows(rows)
    assert [r["fastest measured"] for r in got] == ["", "✓", "", "✓"]
    assert sum(r["gpusim's fastest"] == "✓" for r in got) == 2
    big = gpusim.simulate("flash2", seq=4096, head_dim=128, batch=4, heads=16, block_q=128, block_kv=128,
                          gpu="H200-measured")
    assert got[0]["gpusim L2→SM"] == fmt_bytes(big.hbm_bytes)
    assert tables.tile_lesson(rows) == ["d = 128: 64 x 64 was the fastest tile in 2 of 2 measurements (1.11x SDPA "
                                        "flash without the mask; 1.11x SDPA flash with the mask)."]
