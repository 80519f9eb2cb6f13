"""the tables (gpusim_course.tables and the chapters' model.py) the notebooks build from gpusim alone, checked
against numbers worked out by hand from the presets and the papers' algorithms, or against invariants a wrong
table breaks."""
import pytest

import gpusim
from gpusim.units import fmt_bytes
from gpusim_course import formatting, tables
from gpusim_course.hierarchy import model as hierarchy_model
from gpusim_course.practice import model as practice_model
from gpusim_course.softmax import model as softmax_model
from gpusim_course.standard import model as standard_model
from gpusim_course.tiling import model as tiling_model


def test_supported_dtypes_are_the_tensor_core_dtypes_of_each_generation():
    assert tables.supported_dtypes("T4") == ["fp32", "fp16"]  # Turing: no bf16, no fp8
    assert tables.supported_dtypes("A100-40GB") == ["fp32", "fp16", "bf16"]  # Ampere: no fp8
    assert tables.supported_dtypes(gpusim.get_gpu("H100-SXM")) == ["fp32", "fp16", "bf16", "fp8"]


def test_hierarchy_row_of_the_a100_40gb():
    row = hierarchy_model.hierarchy_rows()[list(gpusim.PRESETS).index("A100-40GB")]
    # 164 KiB of shared memory per SM; 108 SMs hold 17,712 KiB = 17.30 MiB; 40 GiB of HBM at 1.555 TB/s.
    assert row == {"GPU": "A100-40GB", "SMs": 108, "SRAM per SM": "164.00 KiB", "SRAM, all SMs": "17.30 MiB",
                   "SRAM bandwidth": "19 TB/s", "HBM": "40.00 GiB", "HBM bandwidth": "1.55 TB/s",
                   "HBM / SRAM capacity": "2,368x",  # 40 GiB / (108 x 164 KiB) = 2,368.0
                   "SRAM / HBM bandwidth": "12x"}  # 19 / 1.555 = 12.2
    assert len(hierarchy_model.hierarchy_rows()) == len(gpusim.PRESETS)
    assert hierarchy_model.hierarchy_rows()[list(gpusim.PRESETS).index("T4")]["SRAM bandwidth"] == "not published"


def test_kitchen_numbers_of_the_a100_40gb():
    text = hierarchy_model.kitchen_numbers("A100-40GB")
    # 163 KiB per thread block; 40 GiB / 163 KiB = 41,943,040 / 163 = 257,319.3 counters.
    assert text.startswith("A100-40GB: one thread block's counter (SRAM) holds 163.00 KiB; all 108 SMs' counters "
                           "together 17.30 MiB; the fridge (HBM) 40.00 GiB, 257,319 times one counter")


def test_notebook1_judges_each_kitchen_number_and_says_they_are_not_one_gpus():
    """Notebook 1 checked the quote's ~20 MB and ~19 TB/s only: its ~80 GB and ~3 TB/s, which are not the A100's
    (the default A100-40GB has 40 GiB at 1.555 TB/s), went unjudged, and the mix (19 / 3 = 6.3x) reads as a
    narrower gap than the A100's own 12x and 9x. It also called one counter "about a hundred times smaller" than
    all of them, which is the SM count (40 on the T4)."""
    import json
    from pathlib import Path
    near = {name: {g.name for g in gpusim.PRESETS.values() if get(g) and x / 1.25 <= get(g) <= x * 1.25}
            for name, (x, get) in hierarchy_model.KITCHEN.items()}
    assert near["~19 TB/s"] == {"A100-40GB", "A100-80GB"} and near["~3 TB/s"] == {"H100-SXM", "H100-measured"}
    assert not set.intersection(*near.values())  # no one GPU has all four
    assert hierarchy_model.kitchen_ratio_sentence() == (
        "The quote's counter is 6.3x as fast as its fridge (~19 TB/s over ~3 TB/s); on one GPU, the presets with a "
        "published SRAM bandwidth: A100-40GB 12x, A100-80GB 9x.")  # 19 / 1.555 = 12.2; 19 / 2.039 = 9.3
    cells = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "01_memory_hierarchy.ipynb").read_text())
    code = " ".join("".join(c["source"]) for c in cells["cells"] if c["cell_type"] == "code")
    text = " ".join("".join(c["source"]) for c in cells["cells"] if c["cell_type"] == "markdown")
    assert "model.kitchen_ratio_sentence()" in code and "claims.kitchen(RESULTS)" in code
    assert "The four numbers are not one GPU's" in text and "about a hundred times smaller" not in text


def test_notebook1_says_which_matmul_rate_the_measured_h200s_ridge_point_divides():
    """Notebook 1 printed the H200's measured 8192³ matmul (ceilings.json) and, below it, the H200-measured preset's
    ridge points without saying they divide another measurement, the fastest tl.dot loop: the table's fp16 rate over
    the copy bandwidth gives a ridge point about a quarter lower than the row shows."""
    import json
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    ceilings = json.loads((root / "results" / "h200" / "ceilings.json").read_text())
    g = gpusim.get_gpu("H200-measured")
    assert g.hbm_bytes_per_s == pytest.approx(ceilings["copy_bytes_per_s"], rel=1e-3)  # the same copy bandwidth
    for dtype, key in (("fp16", "matmul_float16_flops_per_s"), ("fp8", "matmul_fp8_e4m3_flops_per_s")):
        assert g.matmul_flops_per_s(dtype) > 1.1 * ceilings[key]  # another, faster measurement
    row = hierarchy_model.ridge_rows()[list(gpusim.PRESETS).index("H200-measured")]
    assert row["ridge point fp16 (FLOP/B)"] == round(g.fp16_matmul_flops_per_s / g.hbm_bytes_per_s)
    cells = json.loads((root / "notebooks" / "01_memory_hierarchy.ipynb").read_text())["cells"]
    text = " ".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert ("The `H200-measured` row is the H200's fastest measured `tl.dot` loop over its measured copy bandwidth "
            "(the table above), not the 8192³ matmul above, which ran slower") in text


def test_ridge_points_divide_the_tensor_core_rate_by_the_bandwidth():
    a100 = hierarchy_model.ridge_rows()[list(gpusim.PRESETS).index("A100-40GB")]
    assert a100["ridge point fp16 (FLOP/B)"] == 201  # 312 TFLOP/s / 1.555 TB/s = 200.6
    assert a100["ridge point fp8 (FLOP/B)"] == "no fp8 tensor cores"  # it has fp16 ones
    h100 = hierarchy_model.ridge_rows(dtypes=("fp8",))[list(gpusim.PRESETS).index("H100-SXM")]
    assert h100 == {"GPU": "H100-SXM", "ridge point fp8 (FLOP/B)": 591}  # 1,979 TFLOP/s / 3.35 TB/s = 590.7


@pytest.mark.parametrize("algo, kwargs", [("naive", dict(seq=4096)), ("flash1", dict(seq=8192, causal=True)),
                                          ("flash2", dict(seq=2048, heads=32)), ("hopper", dict(seq=8192, dtype="fp8")),
                                          ("flash2", dict(seq=1, seq_kv=65536, heads=8))])
def test_time_terms_are_each_kernels_terms(algo, kwargs):
    r = gpusim.simulate(algo, head_dim=128, gpu="H100-SXM", block_q=64, block_kv=64, **kwargs)
    terms = tables.time_terms(r)
    assert [(t["t_memory"], t["t_matmul"], t["t_other"], t["t_compute"], t["busy"], t["predicted"], t["bound"])
            for t in terms] == [(k.memory_time_s, k.matmul_time_s, k.other_time_s, k.compute_time_s, k.busy_fraction,
                                 k.predicted_time_s, k.bound) for k in r.kernels]
    assert sum(t["predicted"] for t in terms) == pytest.approx(r.predicted_time_s)
    assert [t["label"] for t in terms] == (["naive: qk", "naive: softmax", "naive: pv"] if algo == "naive"
                                           else [algo])


def test_time_rows_format_the_terms():
    r = gpusim.simulate("naive", seq=4096, head_dim=64, gpu="A100-40GB")
    rows = standard_model.time_rows(r)
    assert [row["kernel"] for row in rows] == ["naive: qk", "naive: softmax", "naive: pv"]
    assert [row["SMs busy"] for row in rows] == [f"{k.busy_fraction:.0%}" for k in r.kernels]
    assert [row["bound by"] for row in rows] == [k.bound for k in r.kernels]


def test_tile_terms_average_the_first_kernel_over_its_tiles_on_one_sm():
    for algo in ("flash2", "hopper"):
        r = gpusim.simulate(algo, seq=8192, head_dim=128, batch=2, heads=16, block_q=128, block_kv=64, gpu="H100-SXM")
        got, k = tables.tile_terms(r), r.kernels[0]
        tiles_per_sm = (8192 // 128) * (8192 // 64) * 32 / 132  # Tr x Tc tiles of 32 heads over 132 SMs
        assert got["t_matmul"] == pytest.approx(k.matmul_time_s / tiles_per_sm)
        assert got["t_memory"] == pytest.approx(k.memory_time_s / tiles_per_sm)
        assert got["t_compute"] == pytest.approx(k.compute_time_s / tiles_per_sm)
        assert got["period"] == max(got["t_memory"], got["t_compute"])
        assert got["overlapped"] is k.overlap


def test_occupancy_counts_the_waves_of_resident_blocks():
    for algo, batch, heads, seq in (("flash1", 1, 8, 4096), ("flash2", 1, 8, 4096), ("flash2", 4, 32, 8192)):
        r = gpusim.simulate(algo, seq=seq, head_dim=64, batch=batch, heads=heads, block_q=64, block_kv=64,
                            gpu="A100-40GB")
        occ, k = tables.occupancy(r), r.kernels[0]
        assert occ["thread blocks"] == k.programs and occ["blocks per SM"] == k.blocks_per_sm
        # The waves hold every block, and one wave fewer would not.
        slots = 108 * k.blocks_per_sm
        assert (occ["waves"] - 1) * slots < k.programs <= occ["waves"] * slots
    one_per_head = tables.occupancy(gpusim.simulate("flash1", seq=4096, head_dim=64, heads=8, block_q=64,
                                                    block_kv=64, gpu="A100-40GB"))
    assert one_per_head["thread blocks"] == 8 and one_per_head["waves"] == 1  # one thread block per head


def test_tensor_rows_of_flash2_by_hand():
    """N = 1024, d = 64, fp16, Br = Bc = 64: Q read once (128 KiB), K and V once per Q block (16 x 128 KiB),
    O written once, the LSE in fp32 (4 KiB)."""
    r = gpusim.simulate("flash2", seq=1024, head_dim=64, block_q=64, block_kv=64)
    rows = {row["tensor"]: row for row in tiling_model.tensor_rows([r])}
    assert rows["Q"] == {"tensor": "Q", "flash2 read": "128.00 KiB", "flash2 written": "0 B"}
    assert rows["K"]["flash2 read"] == rows["V"]["flash2 read"] == "2.00 MiB"
    assert rows["O"]["flash2 written"] == "128.00 KiB" and rows["LSE"]["flash2 written"] == "4.00 KiB"
    total = rows["total requested by the SMs"]
    assert total == {"tensor": "total requested by the SMs", "flash2 read": "4.12 MiB", "flash2 written": "132.00 KiB"}
    dram = rows["of which reaching DRAM"]
    assert dram["flash2 read"] == fmt_bytes(r.dram_read_bytes)
    assert dram["flash2 written"] == fmt_bytes(r.dram_write_bytes)


def test_tensor_rows_put_results_side_by_side():
    shape = dict(seq=1024, head_dim=64, block_q=64, block_kv=64)
    rows = tiling_model.tensor_rows([gpusim.simulate("flash1", **shape), gpusim.simulate("flash2", **shape)])
    assert [row["tensor"] for row in rows] == ["Q", "K", "V", "O", "l", "m", "LSE", "total requested by the SMs",
                                               "of which reaching DRAM"]
    lse = rows[6]
    assert lse["flash1 read"] == lse["flash1 written"] == "0 B"  # flash1 keeps l and m, not the LSE


def test_causal_rows_count_the_tiles_the_mask_skips():
    """N = 256 in 64 x 64 tiles: 4 x 4 tiles, of which the causal mask keeps 4 + 3 + 2 + 1 = 10 and
    256 x 257 / 2 = 32,896 scores."""
    rows = tiling_model.causal_rows(seq=256, head_dim=64, block_q=64, block_kv=64)
    assert [(r["causal"], r["tiles computed"], r["S elements kept"]) for r in rows] == [
        (False, "16 of 16", 65536), (True, "10 of 16", 32896)]
    # Q, O 32 KiB each, LSE 1 KiB; K and V 8 KiB per block: 4 x 4 blocks each, or 1 + 2 + 3 + 4 with the mask.
    assert [r["bytes requested by the SMs"] for r in rows] == [fmt_bytes((32 + 32 + 1 + 2 * 16 * 8) * 1024),
                                                fmt_bytes((32 + 32 + 1 + 2 * 10 * 8) * 1024)]


def test_softmax_accesses_are_the_papers_loads_and_stores():
    """Milakov & Gimelshein: naive 2 loads + 1 store per element, safe 3 + 1, online 2 + 1."""
    rows = softmax_model.softmax_accesses(n=4096)
    assert [(r["variant"], r["loads"], r["stores"]) for r in rows] == [
        ("naive", 8192, 4096), ("safe", 12288, 4096), ("online", 8192, 4096)]
    assert [r["accesses per element"] for r in rows] == [3, 4, 3]


def test_largest_fitting_seq_is_the_last_length_that_fits():
    shape = dict(heads=32, head_dim=64, block_q=64, block_kv=64)
    n = tables.largest_fitting_seq("naive", "A100-40GB", **shape)
    assert gpusim.simulate("naive", seq=n, gpu="A100-40GB", **shape).fits_in_hbm
    assert not gpusim.simulate("naive", seq=n + 1, gpu="A100-40GB", **shape).fits_in_hbm
    # Naive attention holds S and P, 2 x 32 heads x N² x 2 bytes: N² <= 40 GiB / 128, N <= 18,317 (Q, K, V
    # and O take a few MiB more).
    assert 18_000 < n <= 18_317


@pytest.mark.parametrize("gpu", ["A100-40GB", "H200", "T4"])
def test_largest_fitting_seq_finds_flash2s_limit_past_any_fixed_bound(gpu):
    """The search's bound was 2**24, returned whenever it fit: FlashAttention-2 read 16,777,216 tokens on every GPU
    that holds 2**24 (one head of d = 128 in fp16 needs about 1 KiB a token: an A100-40GB holds about 2**25)."""
    shape = dict(head_dim=128, dtype="fp16")
    n = tables.largest_fitting_seq("flash2", gpu, **shape)
    assert gpusim.simulate("flash2", seq=n, gpu=gpu, **shape).fits_in_hbm
    assert not gpusim.simulate("flash2", seq=n + 1, gpu=gpu, **shape).fits_in_hbm
    assert tables.seq_limit_text(n) == f"{n:,}"


def test_largest_fitting_seq_stops_at_its_cap_and_says_at_least(monkeypatch):
    monkeypatch.setattr(tables, "MAX_SEQ", 1 << 20)
    assert tables.largest_fitting_seq("flash2", "H200", head_dim=128) == 1 << 20
    assert tables.seq_limit_text(1 << 20) == "at least 1,048,576"
    assert tables.largest_fitting_seq("naive", "H200", head_dim=128) < 1 << 20  # under the cap: found, not capped


@pytest.mark.parametrize("algo", ["naive", "flash2"])
@pytest.mark.parametrize("gpu, head_dim, dtype", [("A100-40GB", 128, "fp16"), ("T4", 256, "fp32"),
                                                  ("H200", 64, "bf16"), ("RTX-4090", 96, "fp16")])
def test_one_tile_serves_every_lengths_footprint(algo, gpu, head_dim, dtype):
    """footprint_blocks' claim: the peak footprint (and naive's S written) with its one tile equals the peak with
    the tile gpusim picks for each N, from N = 3 to 2**20 (lengths no tile divides among them)."""
    shape = dict(heads=3, batch=2, head_dim=head_dim, dtype=dtype, gpu=gpu)
    tiles = tables.footprint_blocks(algo, **shape)
    for seq in (3, 1000, 4096, 65537, 2**20):
        own, one = (gpusim.simulate(algo, seq=seq, **shape, **blocks) for blocks in ({}, tiles))
        assert one.hbm_peak_bytes == own.hbm_peak_bytes
        assert _s_written(one) == _s_written(own)


def _s_written(result):
    return result.by_tensor.get("S", {}).get("write_bytes")


def test_nonmatmul_rows_show_flash2_doing_less_non_matmul_work():
    """The FlashAttention-2 paper: fewer non-matmul FLOPs than FlashAttention-1 on the same tiles."""
    rows = tiling_model.nonmatmul_rows("A100-40GB", seq=4096, head_dims=(64, 128), block=64)
    assert [(r["head_dim"], r["algo"]) for r in rows] == [(64, "flash1"), (64, "flash2"), (128, "flash1"),
                                                          (128, "flash2")]
    share = [float(r["non-matmul FLOPs"].rstrip("%")) for r in rows]
    assert share[1] < share[0] and share[3] < share[2]
    batch, heads = gpusim.fa2_shape(4096, 64)
    r = gpusim.simulate("flash2", seq=4096, head_dim=64, batch=batch, heads=heads, block_q=64, block_kv=64)
    assert rows[1]["non-matmul FLOPs"] == f"{r.flops_other / (r.flops_matmul + r.flops_other):.1%}"


def test_fa3_rows_are_speedups_over_flash2_fp16():
    rows = practice_model.fa3_rows("H100-SXM", seq=8192, head_dim=128)
    assert [r["kernel"] for r in rows] == ["flash2 fp16", "hopper fp16", "hopper fp8"]
    assert rows[0]["predicted speedup over flash2 fp16"] == "1.00x"
    batch, heads = gpusim.fa2_shape(8192, 128)
    shape = dict(seq=8192, head_dim=128, batch=batch, heads=heads, gpu="H100-SXM")
    base, fp8 = gpusim.simulate("flash2", **shape), gpusim.simulate("hopper", dtype="fp8", **shape)
    assert rows[2]["predicted speedup over flash2 fp16"] == f"{base.predicted_time_s / fp8.predicted_time_s:.2f}x"
    assert rows[2]["matmul utilization"].endswith("of 1,979 TFLOP/s")  # the H100's fp8 peak


def test_fa3_bytes_are_compared_at_one_tile():
    """Notebook 7 said FA-3 "moves FlashAttention-2's bytes" beside a table where hopper fp16 requested 8.13 GiB and
    flash2 4.13 GiB: their tiles differ. The table names them, and the sentence compares the bytes at one tile."""
    rows = practice_model.fa3_rows("H100-SXM", seq=8192, head_dim=128)
    batch, heads = gpusim.fa2_shape(8192, 128)
    shape = dict(seq=8192, head_dim=128, batch=batch, heads=heads, gpu="H100-SXM")
    h16, h8, own = (gpusim.simulate(a, dtype=d, **shape) for a, d in (("hopper", "fp16"), ("hopper", "fp8"),
                                                                       ("flash2", "fp16")))
    tile = (h16.config.block_q, h16.config.block_kv)
    assert [r["tile"] for r in rows] == [f"{c.block_q} x {c.block_kv}" for c in (own.config, h16.config, h8.config)]
    same = gpusim.simulate("flash2", **shape, block_q=tile[0], block_kv=tile[1])
    assert same.hbm_bytes == h16.hbm_bytes and h8.hbm_bytes / h16.hbm_bytes == pytest.approx(0.5, abs=0.02)
    assert practice_model.fa3_bytes_sentence("H100-SXM", 8192, 128) == (
        f"At the Hopper kernel's tile, {tile[0]} x {tile[1]}, flash2 requests {fmt_bytes(same.hbm_bytes)} and the "
        f"Hopper kernel {fmt_bytes(h16.hbm_bytes)} in fp16, {fmt_bytes(h8.hbm_bytes)} in fp8 "
        f"({h8.hbm_bytes / h16.hbm_bytes:.2f}x); at its own tile, {own.config.block_q} x {own.config.block_kv}, "
        f"flash2 requests {fmt_bytes(own.hbm_bytes)}.")


def test_nonmatmul_sentence_gives_numbers_and_the_right_word():
    shares = tiling_model.nonmatmul_shares("A100-40GB", 4096)
    sentence = tiling_model.nonmatmul_sentence("A100-40GB", 4096)
    for algo in ("flash1", "flash2"):
        mine = [s["time_share"] for s in shares if s["algo"] == algo]
        assert f"({formatting.range_words(mine)})" in sentence
    assert formatting.share_words(0.45) == formatting.share_words(0.49) == "about half"  # not "a minority"
    assert formatting.range_words([0.34, 0.49]) == "a minority to about half"  # not its largest end's word
    assert formatting.range_words([0.42, 0.56]) == "about half"
    assert formatting.share_words(0.2) == "a minority" and formatting.share_words(0.7) == "most"


def test_hopper_gpus_and_matmul_units():
    assert tables.hopper_gpus() == ["H100-SXM", "H200", "H200-measured", "H100-measured"]
    assert tables.matmul_units("fp32") == "fp32 on the CUDA cores" and tables.matmul_units("fp8") == "fp8 tensor cores"


def test_causal_rows_compare_the_mask_on_one_tile():
    """Issue 26: left to pick its own tiles, the causal run seemed to move more bytes; on one tile it moves fewer."""
    batch, heads = gpusim.fa2_shape(8192, 64)
    rows = tiling_model.causal_rows(seq=8192, head_dim=64, batch=batch, heads=heads, gpu="A100-40GB")
    assert rows[0]["tile"] == rows[1]["tile"]
    tile = dict(zip(("block_q", "block_kv"), map(int, rows[0]["tile"].split(" x "))))
    plain, causal = (gpusim.simulate("flash2", seq=8192, head_dim=64, batch=batch, heads=heads, gpu="A100-40GB",
                                     causal=c, **tile)
                     for c in (False, True))
    assert causal.hbm_bytes < plain.hbm_bytes


def test_sp_written_line_is_gpusims_count_of_s_and_p():
    by_tensor = gpusim.simulate("naive", seq=4096, head_dim=128, dtype="fp16").by_tensor
    s, p = by_tensor["S"]["write_bytes"], by_tensor["P"]["write_bytes"]
    assert s == p == 4096 * 4096 * 2  # one head: N x N scores in fp16, each written once
    assert standard_model.sp_written_line(4096, 128, "fp16") == f"S written: {s:,} B; S and P written: {s + p:,} B"


def test_waiting_sentence_divides_naives_predicted_time_by_flash2s():
    batch, heads = gpusim.fa2_shape(4096, 64)
    naive, flash = (gpusim.simulate(a, seq=4096, head_dim=64, batch=batch, heads=heads, gpu="A100-40GB")
                    for a in ("naive", "flash2"))
    line = standard_model.waiting_sentence(naive, flash, 0.5, "A100-40GB")
    assert line.startswith("gpusim on the A100-40GB, N = 4,096, d = 64: moving the bytes takes 50% of")
    assert f"predicted {naive.predicted_time_s / flash.predicted_time_s:.1f}x faster." in line
