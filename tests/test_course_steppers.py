"""the chapters' steppers (gpusim_course.<chapter>.widgets): the widgets that walk through a schedule, step by step,
against gpusim's trace and counts; and the helpers that read the trace."""
import numpy as np
import pytest

import gpusim
from gpusim.memory import Step
from gpusim.passes.naive import MAX_ROW_ELEMENTS
from gpusim.units import fmt_bytes
from gpusim_course.softmax import widgets as softmax_widgets
from gpusim_course.standard import model as standard_model
from gpusim_course.standard import widgets as standard_widgets
from gpusim_course.tables import time_terms
from gpusim_course.tiling import widgets as tiling_widgets


def step(tile, loads=(), stores=()):
    return Step(kernel="flash2", program=(0, 0, 0), tile=tile, loads=loads, stores=stores, sram_bytes=0)


def test_cumulative_bytes_add_up_loads_and_stores_per_tensor():
    steps = [step((0, 0), loads=(("Q", 100), ("K", 10))), step((0, 1), loads=(("K", 10),), stores=(("O", 100),))]
    assert tiling_widgets.cumulative_bytes(steps) == {"Q": [100, 0], "K": [20, 0], "O": [0, 100]}
    assert tiling_widgets.cumulative_bytes([]) == {}


def test_done_tiles_mark_the_tiles_the_steps_computed():
    tiling = gpusim.simulate("flash2", seq=128, head_dim=16, block_q=64, block_kv=64).config.tiling
    done = tiling_widgets.done_tiles([step((None, None)), step((0, 0)), step((1, 1)), step((1, None))], tiling)
    assert done.tolist() == [[1, 0], [0, 1]]


def test_describe_step_and_grid_tile():
    loads = step((0, 0), loads=(("K", 2048), ("V", 2048)))
    assert tiling_widgets.describe_step(loads) == "loads K (2,048 B), V (2,048 B)"
    assert tiling_widgets.describe_step(step((0, None), stores=(("O", 8192),))) == "stores O (8,192 B)"
    assert tiling_widgets.describe_step(step((None, None))) == "moves nothing"
    assert tiling_widgets.grid_tile(step((None, None))) is None
    assert tiling_widgets.grid_tile(step((2, None))) == (2, None)


def test_trace_is_one_head_in_execute_mode():
    r = tiling_widgets.trace("flash2", 128, 16, 64, 32, False, "A100-40GB")
    assert (r.config.heads, r.config.batch, r.config.block_q, r.config.block_kv) == (1, 1, 64, 32)
    # Two Q blocks of 64 rows, each: four K/V blocks of 32, then the store of O_i and its LSE.
    assert [s.tile for s in r.trace] == [(i, j) for i in (0, 1) for j in (0, 1, 2, 3, None)]
    assert r.trace[4].stores == (("O", 64 * 16 * 2), ("LSE", 64 * 4))  # O counted in fp16, the LSE in fp32


def test_tile_stepper_follows_gpusims_trace():
    st = tiling_widgets.TileStepper(algo="flash2", seq=128, block_q=64, block_kv=32)
    assert (st.block_q.description, st.block_kv.description) == ("block_q (Br)", "block_kv (Bc)")
    steps = st.result.trace
    assert (st.step.min, st.step.max) == (1, len(steps))  # counted from 1, as the readout counts
    st.step.value = 6
    assert st.current == steps[5] and "Step 6 of" in st.readout.value
    assert st.so_far == tiling_widgets.cumulative_bytes(steps[:6])
    bars = [a for a in st.axes[1].patches if a.get_animated()]
    assert [b.get_height() for b in bars] == [st.so_far.get(t, [0, 0])[d] / 1024 for d in (0, 1) for t in st.total]
    assert f"{steps[5].sram_bytes:,} B" in st.readout.value and "tile (i, j) = (1, 0)" in st.readout.value
    st.step.value = 5  # Q block 0's final store: no K/V block
    assert steps[4].tile == (0, None) and "Q block i = 0 alone" in st.readout.value and "None" not in st.readout.value
    st.step.value = st.step.max
    counts = gpusim.simulate("flash2", seq=128, head_dim=64, block_q=64, block_kv=32).by_tensor
    assert st.so_far == {t: [v["read_bytes"], v["write_bytes"]] for t, v in counts.items()}
    # by hand: K (128 x 64 x 2 B = 16 KiB) read once per Q block, twice
    assert st.so_far["K"] == [2 * 128 * 64 * 2, 0]


def test_tile_stepper_retraces_when_the_configuration_changes():
    st = tiling_widgets.TileStepper(seq=128, block_q=64, block_kv=64)
    st.step.value = st.step.max
    st.algo.value = "flash1"
    assert st.result.config.algo == "flash1"
    assert st.step.max == len(st.result.trace) and st.step.value <= st.step.max
    st.causal.value = True
    assert st.result.config.causal and st.result.config.tiling.tiles == 3  # 2 x 2 tiles, one masked
    st.block_kv.value = 32
    assert st.result.config.block_kv == 32 and st.result.config.tiling.tiles == 2 + 4  # keys 0..63, then 0..127


def test_loop_order_comparison_ends_at_gpusims_counts():
    cmp = tiling_widgets.LoopOrderComparison(seq=128, block=64)
    cmp.step.value = cmp.step.max
    for algo, moved in cmp.moved.items():
        assert moved[-1] == gpusim.simulate(algo, seq=128, head_dim=64, block_q=64, block_kv=64).hbm_bytes
        assert list(cmp.axes[2].lines[list(cmp.moved).index(algo)].get_ydata()) == list(moved / 1024)
    assert cmp.at("flash2") == len(cmp.traces["flash2"]) - 1


def test_online_softmax_stepper_shows_gpusims_running_max_and_sum():
    st = softmax_widgets.OnlineSoftmaxStepper(n=32, chunk=4, seed=0)
    steps = gpusim.softmax(st.x, "online", chunk=4).steps
    for k in (0, 3, len(steps) - 1):
        st.step.value = k + 1  # the slider counts from 1, as "Step 1 of 8" does
        assert (st.m, st.d, st.rescale) == steps[k][1:]
        assert f"Step {k + 1} of {len(steps)}" in st.readout.value
        assert st.m == st.x[:4 * (k + 1)].max()  # the running max of what has been read
        history = [a for a in st.axes[1].lines if a.get_animated()][0]
        assert list(history.get_ydata()) == [s[2] for s in steps[:k + 1]]
    assert st.d == pytest.approx(np.exp(st.x - st.x.max()).sum())
    assert "Done" in st.readout.value
    st.chunk.value = 8
    assert st.step.max == 4 and len(st.steps) == 4


def test_naive_stepper_shows_each_kernels_bytes():
    st = standard_widgets.NaiveStepper(seq=1024, head_dim=64)
    r = gpusim.simulate("naive", seq=1024, head_dim=64)
    for label, kernel in standard_widgets.NAIVE_STEPS.items():
        st.step.value = label
        assert st.bytes == {t: r.counts.get((kernel, t), (0, 0)) for t in standard_widgets.NAIVE_TENSORS}
        solid = [b.get_height() for b in st.axes[0].patches if b.get_facecolor()[3] > 0]
        assert solid == [st.bytes[t][d] / 2**20 for d in (0, 1) for t in standard_widgets.NAIVE_TENSORS]
    st.step.value = "1: S = QKᵀ·scale"
    assert st.bytes["S"] == (0, 1024 * 1024 * 2)  # S written whole in fp16
    assert "One N × N matrix is 1 × 1,024 × 1,024 × 2 B = <b>2.00 MiB</b>" in st.readout.value


def test_naive_stepper_says_which_limit_makes_the_softmax_stream():
    """At N = 65,536 on the H100 the readout said a row of S "(128.00 KiB) does not fit in 227.00 KiB of SRAM": gpusim
    streams it because it is more than one thread block holds in fp32 registers (MAX_ROW_ELEMENTS), not for the SRAM.
    On the T4 (64 KiB of SRAM) the same row exceeds both."""
    st = standard_widgets.NaiveStepper(gpu="H100-SXM")
    st.step.value = st.step.options[1]
    st.seq.value = 65536
    sram = fmt_bytes(gpusim.get_gpu("H100-SXM").sram_bytes_per_block)
    registers = f"more than the {MAX_ROW_ELEMENTS:,} a thread block holds in fp32 registers"
    assert not st.result.config.softmax_fits
    assert registers in st.readout.value and f"its 128.00 KiB would fit the {sram} of SRAM" in st.readout.value
    assert st.bytes["S"][0] == 3 * st.bytes["P"][1]  # S read three times, P written once
    st.gpu.value = "T4"
    assert registers in st.readout.value and "its 128.00 KiB are more than the 64.00 KiB of SRAM" in st.readout.value
    st.seq.value = 32768
    assert st.result.config.softmax_fits and "streams" not in st.readout.value


def test_streaming_sentence_names_the_sram_where_only_the_sram_is_short():
    """fp32 on the T4: a row of 32,768 scores is 128 KiB, twice its SRAM, and within the registers' 32,768."""
    cfg = gpusim.simulate("naive", seq=32768, head_dim=64, dtype="fp32", gpu="T4").config
    sentence = standard_model.streaming_sentence(cfg)
    assert "its 128.00 KiB are more than the 64.00 KiB of SRAM" in sentence and "registers" not in sentence
    assert standard_model.streaming_sentence(gpusim.simulate("naive", seq=16384, head_dim=64, dtype="fp32",
                                                             gpu="T4").config) == ""


def test_first_streamed_seq_is_the_first_slider_stop_past_the_register_limit():
    """Notebook 2 told learners to raise N to 131,072 to see the softmax stream; it streams from 65,536 on."""
    n = standard_model.first_streamed_seq("A100-40GB", 64)
    assert n == 2 * MAX_ROW_ELEMENTS
    assert gpusim.simulate("naive", seq=n // 2, head_dim=64, gpu="A100-40GB").config.softmax_fits


def test_naive_stepper_says_when_the_sms_are_idle():
    st = standard_widgets.NaiveStepper(seq=4096, head_dim=64)
    for label, term in zip(standard_widgets.NAIVE_STEPS, st.terms):
        st.step.value = label
        assert ("is longer than both terms because" in st.readout.value) == bool(standard_widgets.longer(term))
        if term["busy"] < standard_widgets.BUSY:
            assert f"only {term['busy']:.0%} of the SMs' slots are busy" in st.readout.value
    notes = [t.get_text() for t in st.axes[1].texts]
    assert notes == [standard_widgets.idle_note(t) for t in st.terms if standard_widgets.longer(t)]


@pytest.mark.parametrize("gpu", ["A100-40GB", "H100-SXM", "T4", "H200-measured"])
def test_every_predicted_time_a_fifth_above_its_terms_is_explained(gpu):
    """Notebook 2 says the readout and the figure say why a predicted time is well above both terms: at every slider
    stop of each GPU, a kernel a fifth or more above its larger term names at least one reason."""
    for head_dim in (64, 128):
        for seq in (1024 << i for i in range(8)):
            try:
                result = gpusim.simulate("naive", seq=seq, head_dim=head_dim, gpu=gpu)
            except ValueError:  # beyond the GPU's memory
                continue
            for term in time_terms(result):
                if term["predicted"] > 1.2 * max(term["t_memory"], term["t_compute"]):
                    assert standard_widgets.longer(term), (gpu, head_dim, seq, term["label"])


def test_naive_stepper_says_qk_stores_s_after_its_loads():
    """Notebook 2 promised to say why a predicted time is longer than both terms: qk's was 39% longer in the
    FlashAttention-2 benchmark shape, with every SM busy and no latency bound, and nothing said why
    (cost.stored_after)."""
    st = standard_widgets.NaiveStepper(seq=4096, head_dim=64)
    st.step.value = next(iter(standard_widgets.NAIVE_STEPS))
    qk = st.terms[0]
    assert qk["busy"] >= standard_widgets.BUSY and not qk["latency_bound"] and qk["stored_after"] == "S"
    assert qk["predicted"] > 1.2 * max(qk["t_memory"], qk["t_compute"])
    assert "store their tile of S after their loads and matmul" in st.readout.value
    assert "S stored after" in st.axes[1].texts[0].get_text()

