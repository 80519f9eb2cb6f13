"""Issue 26's contradictions, each fixed where its number is computed: the fp32 exp overflow from numpy.finfo,
notebook 7's sentences comparing gpusim with the Hopper kernel, notebook 4's fastest tile beside the tile the
kernels launch, and the "90% waiting" computed once for notebook 2 and the scorecard."""
import json
import re
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim_course import measurements
from gpusim_course.practice import measured as practice_measured
from gpusim_course.scorecard import claims
from gpusim_course.scorecard import claims_model
from gpusim_course.softmax import bits
from gpusim_course.tiling import block_sweep

ROOT = Path(__file__).resolve().parents[1]
BENCH = measurements.read_results(ROOT / "results" / "h200" / "bench.json")["rows"]


def test_exp_overflows_where_finfo_says():
    assert bits.exp_overflow(np.float32) == pytest.approx(88.72, abs=0.01)
    assert bits.exp_overflow(np.float64) == pytest.approx(709.78, abs=0.01)
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(np.float32(bits.exp_overflow(np.float32) + 0.01)))
        assert np.isfinite(np.exp(np.float32(bits.exp_overflow(np.float32) - 0.01)))
    assert "float32 88.7" in bits.exp_overflow_line()


def test_notebook3s_softmax_puzzles_input_overflows_exp_as_it_says():
    """Notebook 3's puzzle said its input (standard deviation 40) overflows exp: true of its seeded draw, whose
    largest value, 144, the notebook now states."""
    pytest.importorskip("torch", reason="the puzzle's input comes from the puzzle checker, which imports torch (Linux)")
    from gpusim_course.puzzles import catalog
    text = _markdown("03_online_softmax.ipynb")
    for name in ("row_softmax", "online_row_softmax"):
        x = next(iter(catalog.PUZZLES[name].inputs().values())).float()
        assert float(x[:6].max()) == 144 > bits.exp_overflow(np.float32)
        assert round(float(x.max())) == 229
        later = x[6:]  # raised by 100 in the first chunk of 16, lowered by 100 after: a chunk's own max falls by > 88.7
        assert float(later[:, :16].max(dim=1).values.min() - later[:, 16:].max(dim=1).values.max()) > \
            bits.exp_overflow(np.float32)
    assert "drawn from a fixed seed: the largest of the first 6 rows is 144), so an `exp` without the max overflows " \
           "past float32's 88.7" in text
    assert "the first 16 values are raised by 100 and the rest lowered by 100 (the largest is 229)" in text


def test_notebook7_words_follow_the_ratios():
    rows = practice_measured.hopper_rows(BENCH, head_dim=128, causal=False)
    rows = [r for r in rows if r["N"] >= 4096]
    text = practice_measured.hopper_model_sentence(BENCH, head_dim=128, causal=False)
    times = np.mean([r["gpusim fp16 ms"] / r["hopper fp16 ms"] for r in rows])
    assert ("slower than the kernel" in text) == (times > 1.05) and ("faster than the kernel" in text) == (times < 0.95)
    assert "nearly 2" not in text
    u = practice_measured.utilization_sentence(BENCH, seq=8192, head_dim=128)
    assert "sdpa_cudnn" in u and any(f"The model is {w} it." in u for w in ("above", "below", "about at"))


def test_notebook7_compares_the_hopper_model_with_the_kernel_it_models():
    """Notebook 7 set gpusim's Triton kernel on the H100-SXM (N = 8,192, fp16) beside cuDNN's measured kernel on the
    H200 (N = 131,072, bf16): now the project's kernel measured against gpusim's model of it, same shape and dtype."""
    u = practice_measured.utilization_sentence(BENCH, seq=8192, head_dim=128)
    row = next(r for r in BENCH if (r["provider"], r["dtype"], r["head_dim"], r["causal"], r["seq"]) ==
               ("hopper", "fp16", 128, False, 8192))
    peak = gpusim.get_gpu("H200").fp16_matmul_flops_per_s
    r = gpusim.simulate("hopper", seq=8192, head_dim=128, batch=row["batch"], heads=row["heads"], gpu="H200-measured")
    model = gpusim.nominal_flops(row["batch"], row["heads"], 8192, 128) / r.predicted_time_s / peak
    assert f"measured {row['tflops'] * 1e12 / peak:.0%}" in u and f"H200-measured preset: {model:.0%}" in u
    assert "N = 8,192, d = 128, not causal" in u and "131,072" not in u and "H100-SXM" not in u


def test_notebook4_names_the_tile_the_kernels_launch():
    config = dict(algo="flash2", seq=4096, head_dim=64, heads=16, batch=1, causal=False, dtype="fp16",
                  gpu="A100-40GB", block_q=64, block_kv=64)
    best = (32, 256, 1e-3)
    lines = block_sweep.tile_choice(best, config)
    kernel = gpusim.best_blocks("flash2", seq=4096, head_dim=64, heads=16, gpu="H200-measured")
    assert f"that is {kernel[0]} x {kernel[1]}" in lines[2]
    assert ("the same tile as" in lines[2]) == ((32, 256) == tuple(kernel))


def test_waiting_is_one_computation():
    batch, heads = gpusim.fa2_shape(4096, 64)
    r = gpusim.simulate("naive", seq=4096, head_dim=64, batch=batch, heads=heads, gpu="H200-measured")
    share = claims_model.waiting_share(r)
    assert 0 < share <= 1
    lo, hi = (int(x) / 100 for x in re.findall(r"(\d+)%", claims.waiting(ROOT / "results" / "h200").predicted))
    assert lo - 0.005 <= share <= hi + 0.005  # N = 4,096 is one of the scorecard's shapes
    nb = (ROOT / "notebooks" / "02_standard_attention.ipynb").read_text()
    assert "claims.waiting_share(naive)" in nb and "memory_bound_share" not in nb


def _markdown(name):
    cells = json.loads((ROOT / "notebooks" / name).read_text())["cells"]
    return " ".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def test_notebook7_describes_the_hopper_model_as_it_prices_the_kernel():
    """The warp-specialized step is priced at its measured share of the serial step (a few percent shorter, not the
    ideal max of matmuls and softmax), and fp8 raises the matmul rate by the preset's own ratio: 2 on a datasheet
    preset, less on the H200 as measured."""
    from gpusim.hardware import get_gpu
    from gpusim.passes.hopper import WS_STEP_RATIO
    assert all(0.9 < r < 1 for r in WS_STEP_RATIO.values())
    ratio = {g: get_gpu(g).matmul_flops_per_s("fp8") / get_gpu(g).matmul_flops_per_s("fp16")
             for g in ("H100-SXM", "H200-measured")}
    assert ratio["H100-SXM"] == 2 and ratio["H200-measured"] < 2
    text = _markdown("07_hopper_and_beyond.ipynb")
    assert "a warp-specialized step is only a few percent shorter than the same step run serially" in text
    assert "twice on a datasheet preset, less on the H200 as measured" in text and "perfectly" not in text


def test_notebook5_names_what_ran_out_of_memory_at_the_tables_last_length():
    """Notebook 5's table (fp16, d = 64, no mask): at its last length SDPA's math backend ran out of memory and
    PyTorch's standard attention ran, in nearly all of the H200's memory."""
    from gpusim.hardware import get_gpu
    from gpusim_course.tiling import measured
    last = measured.speedup_rows(BENCH, gpu="H200-measured", head_dim=64, causal=False)[-1]["N"]
    at = {r["provider"]: r for r in BENCH if (r["dtype"], r["head_dim"], r["causal"], r["seq"]) == ("fp16", 64, False, last)}
    assert at["sdpa_math"].get("error") == "OOM" and at["torch_naive"].get("ms")
    assert at["torch_naive"]["peak_bytes"] > 0.9 * get_gpu("H200").hbm_bytes
    assert "SDPA's math backend ran out of memory at the last length" in _markdown("05_flash1_vs_flash2.ipynb")


def test_notebook13s_crossover_sits_below_the_closed_forms():
    """gpusim's ring steps run below the tensor cores' peak, so over PCIe (GQA 32/8) the transfer already hides at
    a shard shorter than the closed form's crossover, with the mask (zigzag) or without."""
    from gpusim_course.context import model
    closed = model.crossover_tokens("pcie5", heads=32, kv_heads=8)
    for causal, share in ((True, 0.8), (False, 0.5)):
        shard = int(closed * share) // 64 * 64
        assert model.simulate(8, 8 * shard, "zigzag", "pcie5", causal=causal).overlap_margin > 1
    assert "its crossover sits below the closed form's" in _markdown("13_beyond_one_gpu.ipynb")


def test_notebook5s_split_k_exchange_exceeds_the_requested_bytes():
    """Notebook 5's table (its GPU, N and d): split-K's shared-memory traffic over split-Q's, over the kernel, exceeds
    the bytes the SMs request; and notebook 6's benchmark rows are CUDA-graph replays, as it says."""
    from gpusim_course.tiling import warps
    rows = {r["scheme"].split()[0]: r for r in warps.partition_rows("A100-40GB", 8192, 64)}
    extra = rows["split-K"]["shared memory, whole kernel"] - rows["split-Q"]["shared memory, whole kernel"]
    assert extra > rows["split-K"]["bytes the SMs request (gpusim)"]
    assert "split-K's extra shared-memory traffic exceeds the bytes the kernel requests" in _markdown(
        "05_flash1_vs_flash2.ipynb")
    assert sum(r.get("timing") == "cuda_graph" for r in BENCH) > 0.95 * len(BENCH)
    assert "replayed from a CUDA graph" in _markdown("06_real_kernels.ipynb")


def test_notebook2_says_q_k_and_v_grow_as_n_squared_at_a_fixed_tile():
    """Notebook 2 said S and P grow as N², "the other tensors as N d", and that at long sequences S and P are "nearly
    all the traffic". The kernels re-read Q, K and V once per tile of S: at the traffic explorer's one tile, doubling N
    multiplies Q, K and V's bytes by four like S and P's, O's by two; and S and P's share falls as d grows."""
    from gpusim_course.standard import model
    from gpusim_course.widget import HEAD_DIMS
    for d in HEAD_DIMS:
        short, long = (model.traffic(n, d, "A100-40GB")["naive"] for n in (4096, 8192))
        assert [model.moved(long, t) / model.moved(short, t) for t in "QKVSPO"] == [4, 4, 4, 4, 4, 2]
    shares = [model.sp_share(model.traffic(4096, d, "A100-40GB")["naive"]) for d in HEAD_DIMS]
    assert shares == sorted(shares, reverse=True) and shares[-1] < 0.5 < shares[0]
    text = _markdown("02_standard_attention.ipynb")
    assert "the other tensors as $N d$" not in text and "nearly all the traffic" not in text
    assert "they grow as $N^2$ too; only O grows as $N d$" in text


def test_notebook5_divides_flops_per_sm_but_not_bandwidth():
    """Notebook 5 said a kernel on 15% of the SMs "cannot reach more than 15% of the GPU's bandwidth or FLOPs": gpusim's
    own per-SM rate from DRAM is several times an SM's even share, so fewer than all the SMs keep DRAM busy."""
    from gpusim_course.tiling import model
    g = gpusim.get_gpu("A100-40GB")
    assert g.port_bytes_per_s("hbm") > 2 * g.hbm_bytes_per_s / g.sm_count
    text = _markdown("05_flash1_vs_flash2.ipynb")
    assert "15% of the GPU's bandwidth" not in text and model.sm_bandwidth_phrase("A100-40GB") in text


def test_notebook5_says_which_tensors_each_loop_order_re_reads():
    """Notebook 5 said both "read the same K, V and Q tiles" beside a table where flash1 reads Q 32 times over and
    flash2 K and V: flash2 requests more bytes than flash1, and its K/V re-reads hit in L2, so fewer reach DRAM."""
    from gpusim_course.tiling import model
    batch, heads = gpusim.fa2_shape(8192, 64)
    r1, r2 = (gpusim.simulate(a, seq=8192, head_dim=64, batch=batch, heads=heads, gpu="A100-40GB")
              for a in ("flash1", "flash2"))
    assert r2.hbm_bytes > r1.hbm_bytes and r2.dram_read_bytes + r2.dram_write_bytes < (
        r1.dram_read_bytes + r1.dram_write_bytes) / 10
    assert r1.by_tensor["Q"]["read_bytes"] > r2.by_tensor["Q"]["read_bytes"]
    assert r2.by_tensor["K"]["read_bytes"] > r1.by_tensor["K"]["read_bytes"]
    text = _markdown("05_flash1_vs_flash2.ipynb")
    assert "read the same K, V and Q tiles" not in text and model.loop_order_phrase() in text


def test_notebook4_names_each_tile_rule_for_what_it_is():
    """Notebook 4 printed "the paper's rule" for flash1's tile (Algorithm 1: B_c = ⌈M/4d⌉, B_r = min(B_c, d)) and for
    flash2's (gpusim's swap of it, B_r = ⌈M/4d⌉ at most 128, which no paper gives), and said SRAM allows B_r ≈ M/4d."""
    config = dict(algo="flash2", seq=4096, head_dim=64, heads=16, batch=1, causal=False, dtype="fp16",
                  gpu="A100-40GB", block_q=64, block_kv=64)
    br, bc = gpusim.paper_blocks("flash2", "A100-40GB", 64)
    flash2 = block_sweep.tile_choice((br, bc, 1e-3), config)[1]
    assert f"B_r x B_c = {br} x {bc}" in flash2 and "gpusim's adaptation" in flash2 and "no paper" in flash2
    br, bc = gpusim.paper_blocks("flash1", "A100-40GB", 64)
    assert br <= 64 < bc  # Algorithm 1: B_r at most d, B_c grows with M
    flash1 = block_sweep.tile_choice((br, bc, 1e-3), config | {"algo": "flash1"})[1]
    assert f"B_r x B_c = {br} x {bc}" in flash1 and "Algorithm 1's rule" in flash1
    assert "Algorithm 1's rule gives" in claims.block_rule().predicted
    text = _markdown("04_tiling.ipynb")
    assert "allows $B_r \\approx M / 4d$" not in text and "gpusim's adaptation of Algorithm 1's rule" in text


def test_notebook2_names_flash2s_tile_rule_as_gpusims_too():
    """Notebook 2's traffic explorer called flash2's rule "FlashAttention-2's paper rule", which notebook 4 says no
    paper gives: its readout and text name it as gpusim's adaptation of Algorithm 1's."""
    from gpusim_course.standard import model as standard_model
    block_q, block_kv = standard_model.traffic_tile("A100-40GB", 64)
    cfg = gpusim.simulate("flash2", seq=4096, head_dim=64, gpu="A100-40GB", block_q=block_q, block_kv=block_kv).config
    phrase = standard_model.tile_phrase(cfg)
    assert phrase.startswith("gpusim's FlashAttention-2 rule (Algorithm 1's, adapted") and "paper" not in phrase
    assert "paper rule" not in _markdown("02_standard_attention.ipynb")


def test_notebook5_says_where_flash2_over_flash1_is_about_2x_from_the_data():
    """Notebook 5 said "where it holds, both kernels fill the GPU", yet where both fill it the ratio is mostly not
    ~2x (d = 128: near 3x), and "most SMs sit idle" where flash1 keeps 59% of the A100's busy at N = 8,192."""
    from gpusim_course.tiling import measured
    cases = measured.flash1_fill(BENCH)
    filled = [ratio for _, _, ratio, busy in cases if busy >= 0.9]
    assert filled and sum(1.6 <= r <= 2.5 for r in filled) < len(filled) / 2
    assert max(filled) > 2.5 and min(filled) < 1.6
    assert min(ratio for _, _, ratio, busy in cases if busy < 0.9) > 2.5
    assert min(ratio for group, _, ratio, busy in cases if busy >= 0.9 and group.startswith("d=128")) > 2.5
    assert "even where both kernels fill the GPU, the d = 128 shapes run nearer 3x" in _markdown(
        "05_flash1_vs_flash2.ipynb")
    text = measured.fill_sentence(BENCH)
    assert f"in {sum(1.6 <= r <= 2.5 for r in filled)} of {len(filled)}" in text
    batch, heads = gpusim.fa2_shape(8192, 64)
    r = gpusim.simulate("flash1", seq=8192, head_dim=64, batch=batch, heads=heads, gpu="A100-40GB")
    assert r.kernels[0].busy_fraction > 0.5
    nb = _markdown("05_flash1_vs_flash2.ipynb")
    assert "most SMs sit idle" not in nb and "leave most SMs idle" not in nb and "Where it holds, both" not in nb
    assert "measured.fill_sentence(" in (ROOT / "notebooks" / "05_flash1_vs_flash2.ipynb").read_text()


def test_notebook4_says_how_often_the_fewest_bytes_tile_was_fastest_as_notebook6_computes_it():
    """Notebook 4 said the fewest-bytes tile "was not always the fastest" where notebook 6 computes 0 of 12 groups."""
    tiles = measurements.read_results(ROOT / "results" / "h200" / "tiles.json")["rows"]
    groups = practice_measured.tile_launches(tiles, gpu="H200-measured")
    phrase = practice_measured.fewest_phrase(groups)
    assert phrase in practice_measured.tile_agreement(groups, gpu="H200-measured")
    text = _markdown("04_tiling.ipynb")
    assert f"was {phrase}" in text and "not always the fastest" not in text


def test_notebook6s_tile_heading_and_goal_say_what_its_groups_show_and_under_which_condition():
    """Notebook 6's heading said "fewest bytes is not fastest" and its goal 5 "not always the fastest", neither
    saying which bytes or when, where its own groups show the tile requesting the fewest bytes from L2 the fastest
    in none, with gpusim's L2 model putting every tile's DRAM reads level (the re-reads hit in L2)."""
    tiles = measurements.read_results(ROOT / "results" / "h200" / "tiles.json")["rows"]
    groups = practice_measured.tile_launches(tiles, gpu="H200-measured")
    fastest = [min(g, key=lambda launch: launch[0]["ms"]) for g in groups.values()]
    assert not any(sim.hbm_bytes == min(s.hbm_bytes for _, s, _ in g) for (_, sim, _), g in zip(fastest,
                                                                                                groups.values()))
    assert all(max(s.dram_read_bytes for _, s, _ in g) <= 1.01 * min(s.dram_read_bytes for _, s, _ in g)
               for g in groups.values())  # the condition: L2 absorbs the re-reads
    text = _markdown("06_real_kernels.ipynb")
    assert "## The tile shape: once L2 absorbs the re-reads, fewest bytes is not fastest" in text
    assert "not always the fastest" not in text and "requests the fewest bytes is not the fastest" in text
    assert "where the L2 absorbs K and V's re-reads (as gpusim's L2 model finds in every tile group" in text


def test_notebook9_says_its_tables_add_up_every_head():
    """Notebook 9 introduced its dQ table as "for one head of a causal problem" and its saved-bytes table as "what
    the forward keeps per head", where both are called with heads=HEADS (16): sixteen times one head's bytes."""
    from gpusim_course.training import model as training
    nb = json.loads((ROOT / "notebooks" / "09_training.ipynb").read_text())["cells"]
    code = " ".join("".join(c["source"]) for c in nb if c["cell_type"] == "code")
    assert "model.dq_choice_rows(4096, HEAD_DIM, heads=HEADS," in code and "head_dim=HEAD_DIM, heads=HEADS)" in code
    heads = int(re.search(r"LAYERS, HEADS, HEAD_DIM, BATCH = \d+, (\d+),", code).group(1))
    one, all_ = (training.dq_choice_rows(4096, 64, heads=h, causal=True, gpu="H200") for h in (1, heads))
    assert [r["bytes for dQ"] for r in all_] == [heads * r["bytes for dQ"] for r in one]
    (row,) = training.saved_rows((8192,), head_dim=64, heads=heads)
    assert row["naive_P_bytes"] == heads * 8192 ** 2 * 2  # fp16 P of every head, not one
    text = _markdown("09_training.ipynb")
    assert "Both, for one head of a causal problem:" not in text and "What the forward keeps per head:" not in text
    assert "added up over the notebook's `HEADS` heads at N = 4,096 (the table, batch 1)" in text
    assert "The table adds up one layer's `HEADS` heads at batch 1" in text


def test_notebook9_names_the_kernel_whose_figure2_bytes_match_the_paper():
    """Notebook 9 said "FlashAttention's count" is about twice the paper's 4.4 GB and its DRAM bytes close to it
    beside a table whose flash2 row reaches DRAM with about half of 4.4 GB: that holds for flash1 (the paper's
    algorithm) alone, as docs/backward.md says."""
    from gpusim_course.training import model as training
    rows = {r["algo"]: r for r in training.figure2_left()}
    paper = training.FIGURE2_PUBLISHED_GB["flash"]
    assert round(rows["flash1"]["total_GB"] / paper) == 2 and rows["flash1"]["dram_GB"] > paper
    assert 0.4 < rows["flash2"]["dram_GB"] / paper < 0.6  # "about half of 4.4 GB"
    text = _markdown("09_training.ipynb")
    assert "FlashAttention-1's count (the paper's algorithm) as the SMs request it" in text
    assert "flash2's DRAM bytes, about half of 4.4 GB" in text and "FlashAttention's count as the SMs" not in text
    # it said the DRAM bytes were close to 4.4 GB, "with L2 catching the re-reads": the backward's were counted as
    # first touches; through gpusim's L2 model they are 1.4x it, and the forward's re-reads reach DRAM
    assert "what reaches DRAM through gpusim's L2 model is more than 4.4 GB too" in text
    assert "serves most of those re-reads" not in text


def test_notebook10s_causal_prompt_asks_what_its_question_answers():
    """Notebook 10's prompt asked how much of the K/V traffic skipping the masked tiles *saves*, above a question
    whose answer ("about two thirds") is the share the causal kernel still *reads*: the saving is a third, which
    no option offers, so a learner who answered the prompt was marked wrong."""
    from gpusim_course import choice
    question = choice.causal_share_question()
    shape = dict(seq=96, head_dim=16, block_q=32, block_kv=16)
    causal, full = (gpusim.simulate("flash2", causal=c, **shape).by_tensor["K"]["read_bytes"] for c in (True, False))
    assert causal / full == pytest.approx(2 / 3) and question.answer == "about two thirds"
    assert "does the causal kernel read" in question.prompt.value
    text = _markdown("10_write_the_kernels.ipynb")
    assert "does skipping the masked tiles save" not in text
    assert "what share of a non-causal launch's K/V bytes does the causal kernel still read" in text


def test_the_matmul_share_row_and_notebook5s_sentence_name_their_gpu_and_length():
    """Notebook 5 printed the A100's shares at N = 8,192 beside the scorecard's row of the H200-measured preset at
    N = 4,096, neither naming its conditions."""
    from gpusim_course.tiling import model
    row = claims.matmul_share(ROOT / "results" / "h200")
    assert "gpusim on H200-measured, N = 4,096" in row.predicted
    assert "on A100-40GB, N = 8,192:" in model.nonmatmul_sentence("A100-40GB", 8192)


def test_notebooks_4_and_5_say_registers_and_stages_decide_what_fits_too():
    """Notebook 5 said an SM runs as many thread blocks "as its shared memory holds" and notebook 4 that the sliders
    stop where SRAM runs out, while gpusim refuses tiles for their registers too and counts the stages' buffers."""
    from gpusim_course import block_sliders
    config = dict(algo="flash2", seq=4096, head_dim=256, heads=16, batch=1, causal=False, dtype="fp16",
                  gpu="A100-40GB", block_q=64, block_kv=64)
    assert "registers per thread" in block_sliders.fit_blocks(config)[2]["block_q"][1]
    cfg = gpusim.simulate("flash2", seq=4096, head_dim=64, gpu="A100-40GB").config
    from gpusim.occupancy import resources
    assert resources(cfg, "flash2").shared_bytes > cfg.sram_bytes("flash2")  # the stages' buffers
    assert "as many at once as its shared memory holds" not in _markdown("05_flash1_vs_flash2.ipynb")
    assert "as far as the GPU's SRAM per thread block allows" not in _markdown("04_tiling.ipynb")


def test_notebook7_names_the_ceiling_its_hopper_utilization_divides_by():
    """Notebook 7 printed "62% of the measured matmul ceiling", dividing by H200-measured's tl.dot loop (870 TFLOP/s),
    while the notebook 1 it points to shows torch's 8192³ matmul (664 TFLOP/s, 81%) in its ceilings table."""
    text = practice_measured.hopper_summary(BENCH, head_dim=128, min_seq=4096)
    peak = gpusim.get_gpu("H200-measured").fp16_matmul_flops_per_s
    best = max(r["hopper fp16 TFLOP/s"] for r in practice_measured.hopper_rows(BENCH) if r["N"] >= 4096) * 1e12
    assert (f"{best / peak:.0%} of the fastest tl.dot loop measured ({peak / 1e12:.0f} TFLOP/s: the H200-measured "
            f"preset's matmul rate") in text and "not the slower 8192³ matmul of notebook 1's ceilings table" in text
    ceilings = measurements.read_results(ROOT / "results" / "h200" / "ceilings.json")
    assert ceilings["matmul_float16_flops_per_s"] < peak  # "slower", as the sentence says
    assert "measured matmul ceiling" not in text


RATIO = re.compile(r"\b(?:flash[12]|naive|hopper|SDPA flash|Hopper kernel|standard attention)(?: fp\d+)? over ")


def test_ratios_say_whose_time_is_divided_by_whose():
    """Notebook 5 and the scorecard printed "flash1 over flash2" for flash1's time / flash2's (flash2's speedup)
    beside "flash2 over naive" for naive's time / flash2's: each ratio now names its numerator's time first."""
    from gpusim_course.tiling import measured
    rows = claims.rows(ROOT / "results" / "h200")
    printed = [measured.fill_sentence(BENCH), *measured.speedup_rows(BENCH)[0]]
    printed += [text for r in rows for text in (r.predicted, r.measured)]
    assert not [t for t in printed if RATIO.search(t)]
    assert "flash2's speedup over flash1 (flash1's time / flash2's) is" in printed[0]
    fa2 = next(r for r in rows if r.claim.startswith("FlashAttention-2 is ~2x"))
    assert fa2.measured.startswith("the project's flash1 kernel's time / its flash2's: ")


def test_notebook7_says_what_the_decode_kernel_launches_as_notebook8_does():
    """Notebook 7 said FlashAttention-2 gives each (batch, head) a thread block in decode, notebook 8 that the
    project's decode kernel launches one program per (request, K/V head), serving the group's query heads."""
    from gpusim_course.inference import measured as inference
    text = _markdown("07_hopper_and_beyond.ipynb")
    assert "FlashAttention-2 gives each (batch, head) a single thread block there" not in text
    assert "launches one program per (request, K/V head), serving the query heads of its group" in text
    decode = measurements.read_results(ROOT / "results" / "h200" / "decode.json")
    lesson = inference.unsplit_lesson(decode, batch=1)
    assert "(one per request and K/V head)" in inference.unsplit_sentence(lesson)
    assert lesson["num_splits=1 programs"] == 8  # batch 1 x Llama-3-8B's 8 K/V heads, not its 32 query heads


def test_notebook13_keeps_striped_attention_apart_from_zigzag():
    """Striped Attention deals tokens round-robin (token t to device t mod P); zigzag's 2P chunks, GPU r holding r and
    2P - 1 - r, are ring-flash-attention's layout: notebook 13 called zigzag "as in Striped Attention"."""
    from gpusim.context import STRATEGIES
    text = _markdown("13_beyond_one_gpu.ipynb")
    assert "as in Striped Attention" not in text
    assert "Zigzag (ring-flash-attention's layout" in text and "token $t$ to GPU $t \\bmod P$" in text
    assert "zigzag" in STRATEGIES and not any("strip" in s for s in STRATEGIES)  # "gpusim models zigzag, not striping"


def test_notebook7_names_the_tile_of_its_flash2_baseline_and_what_the_h200_measured_there():
    """Notebook 7's flash2 baseline runs gpusim's pick on the H100-SXM datasheet preset, 256 x 64 at 255 registers
    per thread, which tiles.json measured slower on the H200 (3.16 ms) than 64 x 64 (2.78 ms)."""
    tiles = measurements.read_results(ROOT / "results" / "h200" / "tiles.json")["rows"]
    text = practice_measured.baseline_tile_sentence(tiles, "H100-SXM", 8192, 128)
    ms = {(r["block_q"], r["block_kv"], r["num_warps"]): r["ms"] for r in tiles if r["algo"] == "flash2"
          and (r["seq"], r["head_dim"], r["causal"]) == (8192, 128, False)}
    assert text.startswith("The flash2 row runs 256 x 64: the tile gpusim's time model picks on the H100-SXM preset "
                           "(datasheet rates; 255 registers per thread)")
    assert f"flash2 ran 256 x 64 in {ms[256, 64, 8]:.2f} ms and its fastest tile, 64 x 64, in {ms[64, 64, 4]:.2f} ms" \
        in text and min(ms.values()) == ms[64, 64, 4] < ms[256, 64, 8]  # "a tile the measurements do not confirm"
    assert gpusim.best_blocks("flash2", seq=8192, head_dim=128, batch=2, heads=16, gpu="H200-measured") == (64, 64)
    nb = (ROOT / "notebooks" / "07_hopper_and_beyond.ipynb").read_text()
    assert "measured.baseline_tile_sentence(" in nb and "a tile the H200's measurements do not confirm" in nb


def test_notebook2_names_the_tile_beside_each_share_of_s_and_p():
    """Notebook 2 credited S and P's falling share (73/66/57/17%) to d alone, where each share is at its own tile:
    B_c = d up to d = 128 with B_r at 128, and a smaller B_r (and B_c < d) at d = 256, as its prose now says."""
    from gpusim_course import prose
    from gpusim_course.standard import model as standard_model
    tiles = {d: standard_model.traffic_tile("A100-40GB", d) for d in (32, 64, 128, 256)}
    assert all(tiles[d] == (128, d) for d in (32, 64, 128))
    assert tiles[256][0] < 128 and tiles[256][1] < 256
    phrase = prose._sp_shares()
    assert all(f"at d = {d} ({q} × {kv})" in phrase for d, (q, kv) in tiles.items())
    text = _markdown("02_standard_attention.ipynb")
    assert phrase in text and "so the fall is not $d$'s alone" in text


def test_notebook9_says_the_tutorial_computes_dq_in_a_second_loop_of_one_kernel():
    """Triton's fused-attention tutorial (triton 3.x) computes dK, dV and then dQ in the same program of one backward
    kernel, _attn_bwd, after a preprocess kernel; the project's backward launches three kernels."""
    from gpusim_course.training import model as training
    text = _markdown("09_training.ipynb")
    assert "as Triton's fused-attention tutorial does) instead computes $dQ$ in a separate kernel" not in text
    assert "Triton's tutorial the second kernel" not in text
    assert "in a second loop, a Q block's $dQ_i$" in text and "launches three: `preprocess`, `dkdv`, `dq`" in text
    source = (ROOT / "kernels" / "backward.py").read_text()
    assert all(f'"{name}", (' in source for name in ("preprocess", "dkdv", "dq"))  # launched_backward's three
    label = training.dq_choice_rows(512, 64)[0]["dQ produced by"]
    assert "Triton's tutorial: a second loop of its one backward kernel" in label


def test_notebook8_answers_why_a_slot_is_left_free_from_the_measurement():
    """Notebook 8 asked "Why leave each SM a slot free?" and never answered: its answer is the measured line (every
    slot filled ran slower at each length it was timed at), and that why was not measured, as docs/perf.md says."""
    from gpusim_course.inference import measured
    counts = measured.split_counts(measurements.read_results(ROOT / "results" / "h200" / "decode_splits.json"))
    assert counts["full_slower"] and min(counts["full_slower"]) > 1
    text = _markdown("08_inference.ipynb")
    assert "filling every slot ran slower at each cache length it was timed at" in text
    assert "Why 4 beats 5 was not measured." in (ROOT / "docs" / "perf.md").read_text()


def test_notebook5_names_the_pairs_whose_speedup_does_not_grow_with_n():
    """Notebook 5 said "the speedup stays within a band" where its own table's PyTorch column rose 3.7x to 6.6x and
    fell, and the scorecard judged another pair: it now prints each pair's range and peak, and says which pair
    the scorecard judges."""
    from gpusim_course.tiling import measured
    table = measured.speedup_rows(BENCH, gpu="H200-measured", head_dim=64, causal=False)
    ours = [float(r["measured: naive's time / flash2's"][:-1]) for r in table]
    torch_ = [float(r["measured: PyTorch's standard attention's time / SDPA flash's"][:-1]) for r in table]
    assert max(ours) / min(ours) < 1.6 and ours.index(max(ours)) != len(ours) - 1  # a band, not growing
    assert 0 < torch_.index(max(torch_)) < len(torch_) - 1  # a peak at a middle length
    assert measured.speedup_trend(BENCH).startswith("Measured, the project's naive kernels over its flash2 ")
    text = _markdown("05_flash1_vs_flash2.ipynb")
    assert "the project's kernels' stays within a band, PyTorch's rises to a peak at a middle length" in text
    assert "on that PyTorch pair, by the rank correlation of its speedup with $N$" in text
    assert claims.longer_bigger(ROOT / "results" / "h200").measured.startswith(
        "rank correlation of SDPA flash's speedup with N")


def test_notebook1_says_the_quotes_mix_understates_each_a100s_gap():
    """Notebook 1 read "fewer times as fast ... than the A100's own, about the summary's ten times", as if the
    quote's 6.3x were the ten times: the mix's ratio is below every one-GPU ratio, and those are the ~10x."""
    from gpusim_course.hierarchy import model
    quote = model.KITCHEN["~19 TB/s"][0] / model.KITCHEN["~3 TB/s"][0]
    own = [g.sram_bytes_per_s / g.hbm_bytes_per_s for g in gpusim.PRESETS.values() if g.sram_bytes_per_s]
    assert own and quote < min(own) and all(8 <= r <= 12.5 for r in own)
    assert ("the quote's mix makes the counter fewer times as fast as its fridge than either A100 alone does, and "
            "each A100 alone is about the summary's ten times") in _markdown("01_memory_hierarchy.ipynb")
    assert {g.name for g in gpusim.PRESETS.values() if g.sram_bytes_per_s} == {"A100-40GB", "A100-80GB"}


def test_notebook12_names_the_kind_the_pooled_held_out_row_puts_closest():
    """Notebook 12 said "Decode and naive attention sit closest" beside a pooled row where decode was second from
    the bottom (naive 99%, Hopper 98%, flash2 97%, decode 96%, training 92%)."""
    from gpusim_course.provenance import heldout
    pooled = heldout.set_rows(ROOT / "results" / "h200")[-1]
    kinds = ("naive", "flash2", "Hopper", "training step", "decode")
    order = sorted(kinds, key=lambda k: -float(pooled[k].rstrip("%")))
    assert order[0] == "naive" and order[-2] == "decode"
    text = " ".join(_markdown("12_appendix_provenance.ipynb").split())
    assert "**Naive attention sits closest**" in text and "in the pooled row it is second from the bottom" in text
    assert "sit closest" not in text


def test_notebook9_prices_atomic_dq_as_reductions_about_the_dq_pass():
    """Notebook 9 counted each atomic add into dQ as a read and a write of the fp32 block, twice what an SM moves: an
    atomic add whose old value is unused compiles to a reduction the L2 performs (RED), the SM sending the operand
    only. So counted, FlashAttention-2's atomics move about as many bytes as the separate dQ pass, as it now says."""
    from gpusim_course.training import model as training
    code = " ".join("".join(c["source"]) for c in json.loads(
        (ROOT / "notebooks" / "09_training.ipynb").read_text())["cells"] if c["cell_type"] == "code")
    gpu = re.search(r'GPU = "([^"]+)"', code).group(1)
    heads, head_dim = map(int, re.search(r"LAYERS, HEADS, HEAD_DIM, BATCH = \d+, (\d+), (\d+),", code).groups())
    separate, atomic = training.dq_choice_rows(4096, head_dim, heads=heads, causal=True, gpu=gpu)
    assert 0.9 < atomic["bytes for dQ"] / separate["bytes for dQ"] < 1.1
    text = _markdown("09_training.ipynb")
    assert "a read and a write of the block per tile" not in text
    assert "the other in fp32 reductions at the L2 (about as many bytes as the dQ pass moves, in the table)" in text


def test_notebook9_does_not_give_flashattention2_a_dq_kernel():
    """Notebook 9 said "FlashAttention-2's backward is three kernels: preprocess, dkdv, dq" and later, rightly, that
    FlashAttention-2 adds dQ atomically from its dK/dV kernel: the three kernels are gpusim's and the project's."""
    text = _markdown("09_training.ipynb")
    assert "FlashAttention-2's backward is three kernels" not in text
    assert "gpusim's `flash2` backward, as the project's Triton kernels run it, is three kernels" in text
    assert "FlashAttention-2's own code has no `dq` kernel: its `dkdv` adds into dQ atomically" in text


def test_notebook8_dates_flashattention2s_unsplit_decode():
    """Notebook 8 said "FlashAttention-2's decode path leaves most SMs idle at batch 1": flash-attn has split the cache
    in flash_attn_with_kvcache since version 2.2 (Flash-Decoding). The unsplit kernel it measures is the project's
    num_splits=1, as FlashAttention-2's ran before that version."""
    text = _markdown("08_inference.ipynb")
    assert "FlashAttention-2's decode path" not in text
    assert "a decode kernel without split-KV (FlashAttention-2's before flash-attn 2.2, the project's `num_splits=1`)" in text
    assert "which added Flash-Decoding's split to `flash_attn_with_kvcache`" in text


def test_notebook7_lists_flashattention3s_asynchronous_wgmma_and_a_producer_warp_group():
    """FlashAttention-3's overlap of a warpgroup's softmax with its own next matmul (asynchronous wgmma, Algorithm 2)
    was missing from notebook 7's list, though the project's kernel has it (overlap=True); and its producer is a
    warp group, not a warp."""
    text = _markdown("07_hopper_and_beyond.ipynb")
    assert "a producer warp loads" not in text and "a producer warp group loads the next K/V tiles" in text
    assert "**asynchronous matmuls within a warpgroup** (wgmma)" in text and "(`overlap=True`)" in text
    assert "uses Hopper's features four ways:" in text


def test_notebook11_states_the_trend_rule_its_verdict_applies():
    """"The longer the sequence, the bigger the speedup" was judged by a rank correlation of 0.8 or more, a threshold
    the rules cell never stated (it said a comparison holds when it is true)."""
    from gpusim_course.scorecard import claims
    text = _markdown("11_claims_scorecard.ipynb")
    assert (f"holds in a group of measurements whose rank correlation with the sequence length is {claims.TREND} or "
            "more (`claims.TREND`)") in text
    assert f"a rank correlation of {claims.TREND} or more" in claims.longer_bigger(ROOT / "results" / "h200").judged.reason
