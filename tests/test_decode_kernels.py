"""The Triton split-KV decode kernels (gpusim_kernels.decode) against the float64 reference and against
gpusim.decode's closed form, byte for byte; and their one-line errors, raised before anything launches.

Without a GPU they run in Triton's interpreter on small shapes; with one (TRITON_INTERPRET unset) the
accuracy tests run compiled, plus Llama-3-8B-shaped ones with caches up to 20,000 tokens.
"""
import random
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("triton", reason="no triton: the kernels extra (Linux only; make omits it without a CPU torch)")
import torch
from test_decode import cache_arrays, case_id, random_case

import gpusim_kernels
from gpusim import decode
from gpusim.decode_execute import decode_reference
from gpusim_kernels.interpreter import INTERPRETED

TORCH = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
UNIT_ROUNDOFF = {"fp32": 2.0**-24, "fp16": 2.0**-11, "bf16": 2.0**-8}
CPU = pytest.mark.skipif(not INTERPRETED, reason="CPU tensors need Triton's interpreter: TRITON_INTERPRET=1")
CUDA = pytest.mark.skipif(INTERPRETED or not torch.cuda.is_available(),
                          reason="needs a GPU, with TRITON_INTERPRET unset (the kernels compiled)")


def large_case(seed):
    """Llama-3-8B's attention shape (32 query heads, 8 K/V heads, d = 128), ragged caches up to 20,000."""
    rng = random.Random(seed)
    seq = rng.choice([1, 4, 8])
    return dict(batch=3, heads=32, kv_heads=8, head_dim=128, seq=seq,
                seq_kv=tuple(rng.randint(seq, 20000) for _ in range(3)), block_kv=64,
                page_size=rng.choice([None, 16, 64, 256]), grouped=rng.random() < 0.75, causal_align="bottom_right",
                dtype=("fp16", "bf16")[seed % 2], num_splits=rng.choice([1, None, 7]))


SMALL = [random_case(seed) for seed in range(24)] + [  # 66 splits asked, 35 filled (69 chunks of 16, 2 a split)
    dict(batch=2, heads=2, kv_heads=1, head_dim=16, seq=1, seq_kv=(1100, 150), block_kv=16, page_size=16, grouped=True,
         causal_align="bottom_right", dtype="fp16", num_splits=66)]
LARGE = [large_case(seed) for seed in range(8)] + [  # 100 splits asked, 71 filled (141 chunks of 64, 2 a split):
    # the reduce merges 64, then 7
    dict(batch=2, heads=32, kv_heads=8, head_dim=128, seq=1, seq_kv=(9000, 2000), block_kv=64, page_size=16,
         grouped=True, causal_align="bottom_right", dtype="fp16", num_splits=100)]


def torch_inputs(c, device, seed=0):
    """The case's arrays as tensors in its dtype; the float64 copies the reference gets are of those
    rounded values, so only the kernel's own error is measured."""
    q, k, v, table = cache_arrays(c, seed)
    q, k, v = (torch.from_numpy(x).to(TORCH[c["dtype"]]).to(device) for x in (q, k, v))
    table = None if table is None else torch.from_numpy(table).to(device)
    return q, k, v, table


def run(c, q, k, v, table, host=False, **extra):
    """decode_attention on the case, the lengths a tensor on q's device (the kept plan's path) or, host=True,
    Python ints (a plan for these lengths)."""
    seqlens = list(c["seq_kv"]) if host else torch.tensor(c["seq_kv"], device=q.device)
    return gpusim_kernels.decode_attention(
        q, k, v, cache_seqlens=seqlens, block_table=table,
        num_splits=c["num_splits"], block_kv=c["block_kv"], causal_align=c["causal_align"], grouped=c["grouped"],
        **extra)


def device_cases(cases, device, mark):
    return [pytest.param(device, c, marks=mark, id=f"{device}-{case_id(c)}") for c in cases]


@pytest.mark.parametrize("device, c", device_cases(SMALL, "cpu", CPU) + device_cases(SMALL + LARGE, "cuda", CUDA))
def test_output_matches_reference(device, c):
    q, k, v, table = torch_inputs(c, device)
    out, lse = run(c, q, k, v, table, return_lse=True)
    assert out.shape == q.shape and out.dtype == q.dtype
    as64 = [x.cpu().double().numpy() for x in (q, k, v)]
    ref, ref_lse = decode_reference(*as64, cache_seqlens=c["seq_kv"], causal_align=c["causal_align"],
                                    block_table=None if table is None else table.cpu().numpy(), return_lse=True)
    err = np.linalg.norm(out.cpu().double().numpy() - ref) / np.linalg.norm(ref)
    # The weights P are rounded to the dtype before P V (relative error <= u each) and O once at the end
    # (<= u): 2u in norm. Everything else is fp32: scores, exponentials and sums over head_dim and over at
    # most L keys, bounded by (d + L) fp32 roundings.
    assert err <= 2 * UNIT_ROUNDOFF[c["dtype"]] + (c["head_dim"] + max(c["seq_kv"])) * 2.0**-24
    # fp32 statistics from scores of the rounded inputs: a few fp32 roundings of values of order log(L) + |s|
    np.testing.assert_allclose(lse.cpu().double().numpy(), ref_lse, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", [pytest.param("cpu", marks=CPU), pytest.param("cuda", marks=CUDA)])
def test_the_reduce_merges_past_64_splits_in_steps(device):
    """69 filled splits of one 16-key chunk each: the reduce merges 64, then 5, rescaling what it holds. The last
    five splits' keys are scaled up so that their scores are the largest, or a dropped rescale would go unseen
    (random keys leave the running max where the first step put it). d = 16, fp16, one request, one query row."""
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, 1, 16, generator=gen).half()  # (B, H, seq, d)
    k, v = (torch.randn(1, 1, 69 * 16, 16, generator=gen) for _ in "kv")  # (B, kv_heads, S, d)
    k[:, :, 64 * 16:] *= 3
    k = k.half()
    v = v.half()
    s = (q.double()[0, :, 0] @ k.double()[0, 0].T / 4).reshape(2, 69, 16)  # (H, split, key): q kᵀ / sqrt(16)
    lse_s = s.logsumexp(dim=-1)
    assert (lse_s[:, 64:].amax(dim=1) > lse_s[:, :64].amax(dim=1)).all()  # the last step holds each head's max
    out, lse = gpusim_kernels.decode_attention(*(x.to(device) for x in (q, k, v)), cache_seqlens=[69 * 16],
                                               num_splits=69, block_kv=16, return_lse=True)
    ref, ref_lse = decode_reference(*(x.double().numpy() for x in (q, k, v)), cache_seqlens=[69 * 16],
                                    return_lse=True)
    err = np.linalg.norm(out.cpu().double().numpy() - ref) / np.linalg.norm(ref)
    assert err <= 2 * UNIT_ROUNDOFF["fp16"] + (16 + 69 * 16) * 2.0**-24  # as test_output_matches_reference
    np.testing.assert_allclose(lse.cpu().double().numpy(), ref_lse, rtol=1e-4, atol=1e-4)


@CPU
@pytest.mark.parametrize("c", SMALL, ids=case_id)
def test_bytes_moved_equal_gpusim_counts(c):
    """The host path (lengths as ints): a plan for these lengths, its split count gpusim's rule for them."""
    q, k, v, table = torch_inputs(c, "cpu")
    moved = gpusim_kernels.trace_io(run, c, q, k, v, table, True, by_kernel=True)
    launch = decode.make_launch(**c, gpu="A100-40GB")  # the GPU CPU runs are checked against
    assert moved == decode.count(launch)


DEVICE = "cpu" if INTERPRETED else "cuda"
RUNS = pytest.mark.skipif(not (INTERPRETED or torch.cuda.is_available()), reason="neither a GPU nor the interpreter")


def paged_inputs():
    """Two requests of 40 and 20 tokens in pages of 16 (3 and 2 pages) of a 10-page cache, d = 16."""
    q = torch.randn(2, 4, 1, 16, dtype=torch.float16, device=DEVICE)
    k, v = (torch.randn(10, 16, 1, 16, dtype=torch.float16, device=DEVICE) for _ in range(2))
    table = torch.tensor([[0, 1, 2], [3, 4, -1]], dtype=torch.int32, device=DEVICE)
    return q, k, v, table


@RUNS
@pytest.mark.parametrize("change, message", [
    (dict(block_table=[[0, 1, 2], [3, 99, -1]]), "block_table[1, 1]=99 is out of range for request 1: the cache "
                                                "has 10 pages (0..9)"),
    (dict(block_table=[[0, -7, 2], [3, 4, -1]]), "block_table[0, 1]=-7 is negative for request 0"),
    (dict(cache_seqlens=[40, 60]), "block_table has 3 pages per request but request 1 (cache_seqlens[1]=60) needs 4"),
    (dict(num_splits=0), "num_splits=0 must be a positive integer"),
    (dict(num_splits=4), "num_splits=4 is more than the 3 K/V chunks of block_kv=16 in the longest request (40 keys)"),
    (dict(page_size=0), "page_size=0 must be a positive number of tokens per page"),
    (dict(page_size=32), "page_size=32 but k_cache (10, 16, 1, 16) has pages of 16 tokens"),
    (dict(cache_seqlens=[40]), "cache_seqlens has 1 cache lengths but batch=2: give one per request"),
    (dict(cache_seqlens=[40.0, 20.0]), "cache_seqlens=[40.0, 20.0]: expected 1-d integers"),
    (dict(block_table=[0, 1, 2]), "block_table=[0, 1, 2]: expected 2-d integers"),
    (dict(cache_seqlens=[40, 33], block_table=[[0, 1, 2], [3, 4, 2**32 + 5]]),
     "block_table[1, 2]=4294967301 is out of range"),  # checked before the int32 copy could wrap it to 5
    (dict(causal_align="causal"), "causal_align='causal' is not one of top_left, bottom_right"),
])
def test_bad_input_gives_one_line_and_launches_nothing(monkeypatch, change, message):
    q, k, v, table = paged_inputs()
    monkeypatch.setattr(gpusim_kernels.DecodePlan, "run", lambda *a, **kw: pytest.fail("a kernel was launched"))
    kwargs = dict(cache_seqlens=[40, 20], block_table=table, block_kv=16, num_splits=None) | change
    with pytest.raises(ValueError) as err:
        gpusim_kernels.decode_attention(q, k, v, **kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)


@CPU
def test_device_lengths_past_a_short_table_name_the_table_in_the_interpreter():
    """Lengths as a tensor on q's device: the call's plan is made for the table's capacity and checks no values on
    a GPU; the interpreter, whose kernels run on the host, checks them, and says what the capacity it names is:
    the table's pages (a max_cache_len alone, which the caller never gave, left them guessing)."""
    q, k, v, table = paged_inputs()
    with pytest.raises(ValueError, match=r"^cache_seqlens\[0\]=40 is more than the plan's max_cache_len=32: 2 pages "
                                         r"of 16 tokens a request$"):
        gpusim_kernels.decode_attention(q, k, v, cache_seqlens=torch.tensor([40, 20], dtype=torch.int32),
                                        block_table=table[:, :2], block_kv=16)
    q, k, v, table, plan = growing_cache("cpu", capacity=88)  # a capacity of no whole number of pages: said alone
    with pytest.raises(ValueError, match=r"^cache_seqlens\[0\]=90 is more than the plan's max_cache_len=88$"):
        plan.run(q, k, v, plan.block_table, torch.tensor([90, 20], dtype=torch.int32))


@RUNS
@pytest.mark.parametrize("shapes, dtypes, message", [
    ([(2, 4, 16), (2, 1, 64, 16), (2, 1, 64, 16)], None, "q is (2, 4, 16): expected a 4-d tensor"),
    ([(2, 4, 1, 16), (2, 1, 64, 16), (2, 1, 64, 16)], (torch.float64,) * 3, "q has dtype torch.float64"),
    ([(2, 4, 1, 16), (2, 1, 64, 16), (2, 1, 64, 16)], (torch.float16, torch.bfloat16, torch.bfloat16),
     "q, k_cache, v_cache have dtypes torch.float16, torch.bfloat16, torch.bfloat16: they must match"),
    ([(2, 4, 1, 16), (2, 1, 64, 32), (2, 1, 64, 32)], None, "must agree on head_dim"),
    ([(2, 4, 1, 16), (2, 1, 30, 16), (2, 1, 30, 16)], None, "cache_seqlens[0]=40 is longer than the cache's 30"),
    ([(2, 4, 1, 16), (3, 1, 64, 16), (3, 1, 64, 16)], None, "q has batch 2 but k_cache (3, 1, 64, 16) holds 3"),
    ([(2, 4, 1, 16), (2, 1, 64, 16), (2, 1, 60, 16)], None, "k_cache is (2, 1, 64, 16) but v_cache is (2, 1, 60, 16)"),
])
def test_bad_contiguous_cache_gives_one_line(shapes, dtypes, message):
    dtypes = dtypes or (torch.float16,) * 3
    q, k, v = (torch.randn(s, device=DEVICE).to(t) for s, t in zip(shapes, dtypes))
    with pytest.raises(ValueError) as err:
        gpusim_kernels.decode_attention(q, k, v, cache_seqlens=[40, 20])
    assert message in str(err.value) and "\n" not in str(err.value)


@RUNS
def test_paged_and_contiguous_caches_agree():
    """The same tokens through a block table and laid out contiguously give the same output, bit for bit."""
    q, k, v, table = paged_inputs()
    paged = gpusim_kernels.decode_attention(q, k, v, cache_seqlens=[40, 20], block_table=table, num_splits=2,
                                            block_kv=16)
    flat = [x[table.clamp(min=0).long()].reshape(2, 48, 1, 16).transpose(1, 2).contiguous() for x in (k, v)]
    contiguous = gpusim_kernels.decode_attention(q, *flat, cache_seqlens=[40, 20], num_splits=2, block_kv=16)
    assert torch.equal(paged, contiguous)


@CPU
def test_decode_splits_smoke_run_times_each_split_count(tmp_path):
    """benchmarks/decode_splits.py in the interpreter: the kernel's own split count and the swept ones, each
    checked against float64; no programmatic dependent launch (the interpreter has none)."""
    import json

    from benchmarks import decode_splits
    assert decode_splits.main(["--out", str(tmp_path), "--smoke"]) == 0
    rows = json.loads((tmp_path / "decode_splits.json").read_text())["rows"]
    assert [(r["num_splits"], r["default"]) for r in rows] == [(4, True), (4, True), (2, False), (3, False)]
    assert not any(r["pdl"] for r in rows) and all(r["ms"] > 0 and r["rel_err"] < 1e-3 for r in rows)
    assert not gpusim_kernels.decode.dependent_launch(torch.device("cpu"))


@CPU
def test_decode_rows_smoke_run_times_and_prices_each_row_count(tmp_path):
    """benchmarks/decode_rows.py in the interpreter: one, then three query rows a request, bottom-right aligned, each
    against float64 (fp16 inputs, fp32 softmax: 1e-3; a mask one key off moves three rows over 200 keys by about
    1e-2), each priced by gpusim at the plan's own launch."""
    import json

    from benchmarks import decode_rows
    assert decode_rows.main(["--out", str(tmp_path), "--smoke"]) == 0
    data = json.loads((tmp_path / "decode_rows.json").read_text())
    assert data["environment"]["command"] == f"python -m benchmarks.decode_rows --out {tmp_path} --smoke"
    rows = data["rows"]
    assert [(r["provider"], r["batch"], r["seq"], r["seq_kv"]) for r in rows] == [("rule", 1, 1, 200),
                                                                                  ("rule", 1, 3, 200)]
    assert all(r["ms"] > 0 and r["rel_err"] < 1e-3 for r in rows)
    for r in rows:
        launch = decode.make_launch(**decode.launch_options(r), seq=r["seq"], block_kv=r["block_kv"], gpu=r["preset"])
        assert r["predicted_ms"] == decode_rows.predicted_ms(launch)


@CPU
def test_split_lone_smoke_run_times_each_length_and_prices_each_step(tmp_path):
    """benchmarks/split_lone.py in the interpreter: two lengths, one and three query rows, each row's steps the
    length over splits and chunk, its price and gpusim's step for the launch as the model gives them now."""
    import json

    from benchmarks import decode_rows, split_lone
    assert split_lone.main(["--out", str(tmp_path), "--smoke"]) == 0
    data = json.loads((tmp_path / "split_lone.json").read_text())
    assert data["environment"]["command"] == f"python -m benchmarks.split_lone --out {tmp_path} --smoke"
    rows = data["rows"]
    assert [(r["seq_kv"], r["seq"]) for r in rows] == [(256, 1), (256, 3), (512, 1), (512, 3)]
    for r in rows:
        assert r["rel_err"] < 2e-3 and r["num_splits"] == 2 and r["steps"] == -(-r["seq_kv"] // (2 * r["block_kv"]))
        launch = decode.make_launch(batch=1, seq=r["seq"], seq_kv=r["seq_kv"], page_size=16, num_splits=2,
                                    block_kv=r["block_kv"], heads=r["heads"], kv_heads=r["kv_heads"],
                                    head_dim=r["head_dim"], gpu=r["preset"])
        resident, chain_s, programs = split_lone.model_step(launch)
        assert (r["resident"], r["chain_us"]) == (resident, chain_s * 1e6) and chain_s > 0
        assert programs == r["kv_heads"] * 2  # batch 1, 2 splits
        assert r["predicted_ms"] == decode_rows.predicted_ms(launch)


@CPU
def test_short_cache_smoke_run_times_each_cache_cold_and_warm_and_prices_it(tmp_path):
    """benchmarks/short_cache.py in the interpreter: each case cold then warm, its steps the longest split's chunks
    (one more token past a whole chunk per split makes two), its bytes the cache's K and V, its price gpusim's."""
    import json

    from benchmarks import decode_rows, short_cache
    assert short_cache.main(["--out", str(tmp_path), "--smoke"]) == 0
    rows = json.loads((tmp_path / "short_cache.json").read_text())["rows"]
    assert [(r["seq_kv"], r["warm"]) for r in rows] == [(n, w) for n in (128, 129, 200) for w in (False, True)]
    assert [r["steps"] for r in rows[:4]] == [1, 1, 2, 2] and [r["num_splits"] for r in rows[:4]] == [2] * 4
    for r in rows:
        assert r["rel_err"] < 2e-3 and r["cache_bytes"] == 2 * r["seq_kv"] * r["kv_heads"] * r["head_dim"] * 2
        launch = decode.make_launch(batch=1, seq=1, seq_kv=r["seq_kv"], page_size=16, num_splits=r["num_splits"],
                                    block_kv=r["block_kv"], heads=r["heads"], kv_heads=r["kv_heads"],
                                    head_dim=r["head_dim"], gpu=r["preset"])
        assert r["predicted_ms"] == decode_rows.predicted_ms(launch)


@CPU
def test_split_lone_d64_times_the_same_grid_at_head_dim_64(tmp_path):
    """benchmarks/split_lone.py --d64 in the interpreter: the same lengths and rows at d = 64, into
    split_lone_d64.json, each row priced with gpusim's step for its launch."""
    import json

    from benchmarks import split_lone
    assert split_lone.main(["--out", str(tmp_path), "--smoke", "--d64"]) == 0
    rows = json.loads((tmp_path / "split_lone_d64.json").read_text())["rows"]
    assert [(r["seq_kv"], r["seq"], r["head_dim"]) for r in rows] == [(n, q, 64) for n in (256, 512) for q in (1, 3)]
    for r in rows:
        launch = decode.make_launch(batch=1, seq=r["seq"], seq_kv=r["seq_kv"], page_size=16, num_splits=2,
                                    block_kv=r["block_kv"], heads=r["heads"], kv_heads=r["kv_heads"], head_dim=64,
                                    gpu=r["preset"])
        assert r["rel_err"] < 2e-3 and r["chain_us"] == split_lone.model_step(launch)[1] * 1e6


@CPU
def test_ragged_wave_smoke_run_times_a_ragged_batch_as_the_held_out_sets_do(tmp_path):
    """benchmarks/ragged_wave.py in the interpreter: its one tiny row timed and checked as a held-out decode row, and
    priced by the held-out sets' pricing; the full grid is 48 ragged batches of the held-out sets' two decode shapes."""
    import json

    from benchmarks import ragged_wave
    from gpusim_course.provenance import heldout
    assert ragged_wave.main(["--out", str(tmp_path), "--smoke"]) == 0
    [row] = json.loads((tmp_path / "ragged_wave.json").read_text())["rows"]
    assert row["seq_kv"] == [70, 35] and row["rel_err"] < 2e-3 and row["ms"] > 0 and row["num_splits"] >= 1
    assert heldout.simulated(row, "H200-measured").predicted_time_s > 0
    grid = ragged_wave.rows()
    assert len(grid) == 48 and all(len(r["seq_kv"]) == r["batch"] and max(r["seq_kv"]) == r["seq_kv"][0]
                                   for r in grid)


@CPU
def test_split_lone_others_times_a_contiguous_cache_and_the_unsplit_kernel_too(tmp_path):
    """benchmarks/split_lone.py --others in the interpreter: every row of the paged run's grid over both layouts, and
    at one split (the unsplit decode kernel) besides, each priced with its own kernel's step."""
    import json

    from benchmarks import split_lone
    assert split_lone.main(["--out", str(tmp_path), "--smoke", "--others"]) == 0
    data = json.loads((tmp_path / "split_lone_others.json").read_text())
    assert data["environment"]["command"] == f"python -m benchmarks.split_lone --out {tmp_path} --smoke --others"
    rows = data["rows"]
    assert {(r["page_size"], r["num_splits"]) for r in rows} == {(p, s) for p in (16, None) for s in (1, 2, 4)}
    assert len(rows) == 2 * 2 * 2 * 3 and all(r["rel_err"] < 2e-3 for r in rows)
    for r in rows:
        launch = decode.make_launch(batch=1, seq=r["seq"], seq_kv=r["seq_kv"], page_size=r["page_size"],
                                    num_splits=r["num_splits"], block_kv=r["block_kv"], heads=r["heads"],
                                    kv_heads=r["kv_heads"], head_dim=r["head_dim"], gpu=r["preset"])
        resident, chain_s, _ = split_lone.model_step(launch)
        assert (r["resident"], r["chain_us"]) == (resident, chain_s * 1e6)


def test_decode_rows_times_one_rows_split_count_beside_the_rules_where_they_differ(monkeypatch):
    """decode_rows.case_rows at Llama-3-8B's shape over 32,768 tokens on the H200-measured preset (the GPU's timing
    replaced): each row count at the rule's split count, and at one query row's count only where the rule's differs
    (the rule counts the resident blocks of the kernel compiled for those rows)."""
    from benchmarks import decode_rows
    shape = dict(heads=32, kv_heads=8, head_dim=128)

    def timed_row(sets, qs, num_splits):
        launch = decode.make_launch(batch=1, seq=qs[0].shape[2], seq_kv=32768, page_size=16, num_splits=num_splits,
                                    gpu=decode_rows.PRESET, **shape)
        return launch, {"ms": 1.0, "timing": "test", "rel_err": 0.0}
    monkeypatch.setattr(decode_rows, "timed_row", timed_row)
    monkeypatch.setattr(decode_rows.bd, "DEVICE", "cpu")
    rows = decode_rows.case_rows(1, 32768, [{"q": torch.empty(1, 32, 1, 128)}], (1, 4, 9), shape)
    rule = {n: decode.make_launch(batch=1, seq=n, seq_kv=32768, page_size=16, gpu=decode_rows.PRESET, **shape)
            for n in (1, 4, 9)}
    assert rule[9].num_splits != rule[1].num_splits  # else the case checks nothing
    expected = [("rule", n, rule[n].num_splits) for n in (1, 4, 9)]
    expected += [("one_row_splits", n, rule[1].num_splits) for n in (4, 9) if rule[n].num_splits != rule[1].num_splits]
    assert sorted((r["provider"], r["seq"], r["num_splits"]) for r in rows) == sorted(expected)
    assert all(r["predicted_ms"] == decode_rows.predicted_ms(decode.make_launch(
        batch=1, seq=r["seq"], seq_kv=32768, page_size=16, num_splits=r["num_splits"], gpu=decode_rows.PRESET,
        **shape)) for r in rows)


def test_decode_rows_reference_masks_each_row_bottom_right():
    """decode_rows.reference: row r of R sees the first L - R + r + 1 keys; against softmax over each row's keys."""
    from benchmarks import decode_rows
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, heads, n, 8, generator=gen) for heads, n in ((4, 3), (2, 10), (2, 10)))
    got = decode_rows.reference(q, {"contiguous": (q, k, v)})
    for h in range(4):
        for r in range(3):
            keys = 10 - 3 + r + 1
            p = torch.softmax(q[0, h, r].double() @ k[0, h // 2, :keys].double().T * 8**-0.5, dim=-1)
            assert torch.allclose(got[h, r], p @ v[0, h // 2, :keys].double(), rtol=1e-12, atol=1e-12)


@CPU
def test_decode_tiles_smoke_run_times_each_chunk_and_launch(tmp_path):
    """benchmarks/decode_tiles.py in the interpreter: every chunk and split count of its smoke grid at the kernel's own
    launch, then each launch at the default chunk, each a timed row or one line of why not."""
    import json

    from benchmarks import decode_tiles
    assert decode_tiles.main(["--out", str(tmp_path), "--smoke"]) == 0
    data = json.loads((tmp_path / "decode_tiles.json").read_text())
    assert data["environment"]["command"] == f"python -m benchmarks.decode_tiles --out {tmp_path} --smoke"
    grid = decode_tiles.SMOKE
    per_case = len(grid["block_kv"]) * len(grid["splits"]) + len(grid["launches"])
    assert len(data["rows"]) == len(grid["cases"]) * per_case
    assert all(r["ms"] > 0 if "error" not in r else "\n" not in r["error"] for r in data["rows"])


@CPU
def test_decode_layout_smoke_run_reads_one_cache_every_way(tmp_path):
    """benchmarks/decode_layout.py in the interpreter: one cache paged at 16, 64 and 256 tokens (at random and
    in order) and contiguous, each launch at its own split count, each checked against float64 (fp16 inputs,
    fp32 softmax and accumulation: 1e-3); the page size does not change the split count."""
    import json

    from benchmarks import decode_layout
    assert decode_layout.main(["--out", str(tmp_path), "--smoke"]) == 0
    rows = json.loads((tmp_path / "decode_layout.json").read_text())["rows"]
    assert [(r["variant"], r["page_size"]) for r in rows] == [(name, p) for name, p, _ in decode_layout.VARIANTS]
    assert len({r["num_splits"] for r in rows if r["page_size"]}) == 1
    assert all(r["ms"] > 0 and r["rel_err"] < 1e-3 for r in rows)


@CUDA
def test_dependent_launch_changes_nothing_but_the_launch():
    """With the reduce as a programmatic dependent launch (Hopper) or not, the same kernels compute the same
    bits: gdc_wait makes every partial visible before the reduce reads it."""
    if not gpusim_kernels.decode.dependent_launch(torch.device("cuda")):
        pytest.skip("programmatic dependent launch needs compute capability 9.0 or later")
    c = dict(LARGE[0], num_splits=7, seq=1, page_size=16, grouped=True)
    q, k, v, table = torch_inputs(c, "cuda")
    plan = gpusim_kernels.decode.plan_for_cache(q, k, v, cache_seqlens=torch.tensor(c["seq_kv"], device="cuda"),
                                                block_table=table, page_size=16, num_splits=7)
    with_pdl, without = (plan.run(q, k, v, return_lse=True, pdl=pdl) for pdl in (True, False))
    assert all(torch.equal(a, b) for a, b in zip(with_pdl, without))


def growing_cache(device, lengths=(40, 20), grown=(70, 33), page_size=16, capacity=96):
    """Two requests in pages of 16 of a 20-page cache, their tables filled for the plan's capacity (6 pages),
    and a plan made at `lengths`: the float64 copies the reference reads, and the plan."""
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 1, 16, generator=gen).half().to(device)
    k, v = (torch.randn(20, page_size, 2, 16, generator=gen).half().to(device) for _ in range(2))
    table = torch.randperm(20, generator=gen)[:12].view(2, 6).int()
    plan = gpusim_kernels.DecodePlan(list(lengths), heads=4, kv_heads=2, head_dim=16, dtype=torch.float16,
                                     device=device, page_size=page_size, max_cache_len=capacity, block_table=table,
                                     num_pages=20, block_kv=16)
    return q, k, v, table, plan


def reference_at(q, k, v, table, lengths):
    as64 = [x.cpu().double().numpy() for x in (q, k, v)]
    return decode_reference(*as64, cache_seqlens=list(lengths), block_table=table.numpy(),
                            causal_align="bottom_right")


@RUNS
def test_plan_runs_at_grown_lengths_within_its_capacity():
    """A plan made at 40 and 20 tokens (3 splits of 16-key chunks for the longest), its device lengths then
    raised in place to 70 and 33: the same splits, each request's chunks spread over them at run time, and
    the output the float64 reference gives at the new lengths (the bound of test_output_matches_reference)."""
    q, k, v, table, plan = growing_cache(DEVICE)
    splits = plan.num_splits
    for lengths in ((40, 20), (70, 33)):
        plan.cache_seqlens.copy_(torch.tensor(lengths, dtype=torch.int32))
        out = plan.run(q, k, v)
        ref = reference_at(q, k, v, table, lengths)
        err = np.linalg.norm(out.cpu().double().numpy() - ref) / np.linalg.norm(ref)
        assert err <= 2 * UNIT_ROUNDOFF["fp16"] + (16 + max(lengths)) * 2.0**-24
    assert plan.num_splits == splits > 1


@CPU
def test_plan_run_moves_the_models_bytes():
    """plan.run's loads and stores are gpusim.decode's count for the plan's launch, byte for byte."""
    q, k, v, _, plan = growing_cache("cpu")
    moved = gpusim_kernels.trace_io(plan.run, q, k, v, by_kernel=True)
    assert moved == decode.count(plan.launch)


@CPU
def test_plan_run_never_reads_the_device(monkeypatch):
    """run's own Python converts no tensor to a host value (no .item(), .tolist(), .cpu(), bool() or int()):
    the kernels are replaced by recorders, and every such conversion raises while run runs."""
    q, k, v, _, plan = growing_cache("cpu")
    launched = []

    class Recorder:
        def __init__(self, name):
            self.name = name

        def __getitem__(self, grid):
            return lambda *args, **kwargs: launched.append((self.name, grid))

    for name in ("decode_kernel", "split_kv_kernel", "reduce_kernel"):
        monkeypatch.setattr(gpusim_kernels.decode, name, Recorder(name))
    monkeypatch.setattr(gpusim_kernels.decode, "INTERPRETED", False)  # the GPU's path: no host-side value checks
    for method in ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__"):
        monkeypatch.setattr(torch.Tensor, method, lambda *a, m=method, **kw: pytest.fail(f"run called Tensor.{m}"))
    plan.run(q, k, v)
    monkeypatch.undo()
    assert launched == [("split_kv_kernel", plan.grids[0]), ("reduce_kernel", plan.grids[1])]


@RUNS
@pytest.mark.parametrize("make, message", [
    (lambda: dict(max_cache_len=32), "cache_seqlens[0]=40 is more than the plan's max_cache_len=32"),
    (lambda: dict(max_cache_len=0), "max_cache_len=0 must be a positive number of tokens"),
    (lambda: dict(max_cache_len=True), "max_cache_len=True must be a positive number of tokens"),
    (lambda: dict(max_cache_len=96.0), "max_cache_len=96.0 must be a positive number of tokens"),
    (lambda: dict(cache_seqlens=[40, 0]), "cache_seqlens[1]=0: request 1 needs a positive number of cached tokens"),
    (lambda: dict(cache_seqlens=[40, 10.5]), "cache_seqlens[1]=10.5 must be an integer: request 1's number of cached "
     "tokens"),
    (lambda: dict(cache_seqlens=torch.tensor([40, 20], device="meta")),
     "cache_seqlens is on meta: a plan takes the lengths from the host"),
    (lambda: dict(block_table=[[0, 1, 2], [3, 25, 4]], num_pages=20),
     "block_table[1, 1]=25 is out of range for request 1: the cache has 20 pages (0..19)"),
    (lambda: dict(block_table=[[0, 1, 2], [3, 4, 5]]), "block_table was given without num_pages"),
    (lambda: dict(dtype=torch.float64), "dtype=torch.float64: supported are"),
    (lambda: dict(cache_seqlens=[]), "cache_seqlens is empty: a plan needs one length per request"),
    (lambda: dict(cache_seqlens=40), "cache_seqlens=40: expected 1-d integers"),
    (lambda: dict(gpu={}), "unknown gpu={}: known GPUs are"),
    (lambda: dict(cache_seqlens=(n for n in [40, 20])), "cache_seqlens is generator: expected one length per request"),
    (lambda: dict(cache_seqlens=torch.tensor([40.0, 20.0])), "cache_seqlens is torch.float32 (2,): expected 1-d "
     "integers"),
    (lambda: dict(device="tpu"), "device='tpu': the kernels run on 'cuda', or on 'cpu' in Triton's interpreter"),
    (lambda: dict(device="meta"), "device='meta': the kernels run on 'cuda', or on 'cpu' in Triton's interpreter"),
    (lambda: dict(pdl="x"), "pdl='x' must be True or False"),
    (lambda: dict(cache_seqlens=[17, 5], num_splits=3),  # the plan's launch is made at whole chunks (32 keys)
     "num_splits=3 is more than the 2 K/V chunks of block_kv=16 in the longest request (17 keys)"),
    (lambda: dict(cache_seqlens=[17, 5], num_splits=3, block_kv=None),
     "num_splits=3 is more than the 1 K/V chunks of block_kv=64 in the longest request (17 keys)"),
])
def test_bad_plan_gives_one_line(make, message):
    kwargs = dict(cache_seqlens=[40, 20], heads=4, kv_heads=2, head_dim=16, dtype=torch.float16, device=DEVICE,
                  page_size=16, max_cache_len=96, block_kv=16) | make()
    with pytest.raises(ValueError) as err:
        gpusim_kernels.DecodePlan(kwargs.pop("cache_seqlens"), **kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert err.value.__context__ is None or err.value.__suppress_context__  # one error shown, not a chain of two


@RUNS
def test_plan_takes_a_numpy_capacity_as_its_int():
    """max_cache_len=np.int64(96) was refused ("must be a positive number of tokens") where every other count, heads
    or the lengths, takes NumPy integers."""
    kwargs = dict(heads=4, kv_heads=2, head_dim=16, dtype=torch.float16, device=DEVICE, page_size=16, block_kv=16)
    plan = gpusim_kernels.DecodePlan([40, 20], max_cache_len=np.int64(96), **kwargs)
    assert type(plan.max_cache_len) is int
    assert plan.max_cache_len == 96 and plan.pages == gpusim_kernels.DecodePlan([40, 20], max_cache_len=96, **kwargs).pages


@RUNS
@pytest.mark.parametrize("change, message", [
    (dict(q=lambda q: q[:1]), "q is (1, 4, 1, 16) torch.float16 on"),
    (dict(q=lambda q: q.float()), "the plan expects a contiguous (2, 4, 1, 16) torch.float16"),
    (dict(k=lambda k: k[:, :8]), "k_cache is (20, 8, 2, 16) torch.float16 on"),
    (dict(v=lambda v: v.transpose(0, 1).contiguous().transpose(0, 1)), "v_cache is (20, 16, 2, 16)"),
    (dict(table=lambda t: t[:, :5]), "block_table is torch.int32 (2, 5): the plan expects int32 (2, >= 6)"),
    (dict(table=lambda t: t.long()), "block_table is torch.int64 (2, 6)"),
    (dict(lengths=lambda n: n.long()), "cache_seqlens is torch.int64 (2,)"),
    (dict(q=lambda q: q.requires_grad_()), "q, k_cache or v_cache requires grad, but decoding is forward-only (its "
                                           "output would carry no gradient): run it under torch.no_grad()"),
    (dict(v=lambda v: v.requires_grad_()), "q, k_cache or v_cache requires grad"),  # was an output without gradient
    (dict(run=dict(return_lse="no")), "return_lse='no' must be True or False"),  # was truthy: a tuple came back
    (dict(run=dict(pdl="x")), "pdl='x' must be True or False"),
])
def test_bad_run_gives_one_line(change, message):
    q, k, v, table, plan = growing_cache(DEVICE)
    same = lambda x: x  # noqa: E731
    args = (change.get("q", same)(q), change.get("k", same)(k), change.get("v", same)(v),
            change.get("table", same)(plan.block_table), change.get("lengths", same)(plan.cache_seqlens))
    with pytest.raises(ValueError) as err:
        plan.run(*args, **change.get("run", {}))
    assert message in str(err.value) and "\n" not in str(err.value)


@RUNS
@pytest.mark.parametrize("options, message", [
    (dict(num_warps=3), "num_warps=3 must be a power of two >= 1"),
    (dict(num_warps=64), "num_warps=64 is more than the 32 warps"),
    (dict(num_warps="4"), "num_warps='4' must be a positive integer"),
    (dict(num_warps=True), "num_warps=True must be a positive integer"),
    (dict(num_stages=0), "num_stages=0 must be a positive integer"),
    (dict(num_stages=2.0), "num_stages=2.0 must be a positive integer"),
    (dict(num_stages=[2]), "num_stages=[2] must be a positive integer"),
])
def test_bad_run_launch_options_give_one_line(options, message):
    """run's launch options by gpusim's Tiles' rules (the interpreter ran num_warps=3 or num_stages=0, which a GPU
    refuses inside Triton), checked once per distinct set: a bool or float equal to an int set before is not it."""
    q, k, v, table, plan = growing_cache(DEVICE)
    plan.run(q, k, v, **{name: 1 if name == "num_warps" else 2 for name in options})  # the equal int's set first
    with pytest.raises(ValueError) as err:
        plan.run(q, k, v, **options)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


@RUNS
def test_run_launch_options_are_checked_once_per_set_and_take_numpy_integers():
    q, k, v, table, plan = growing_cache(DEVICE)
    gpusim_kernels.decode._run_options.cache_clear()
    outs = [plan.run(q, k, v, num_warps=warps, num_stages=2) for warps in (np.int64(4), 4, 4)]
    assert gpusim_kernels.decode._run_options.cache_info()[:2] == (1, 2)  # hits, misses: a NumPy int's set, an int's
    assert all(torch.equal(out, outs[0]) for out in outs)


@RUNS
def test_a_paged_plan_made_without_a_table_is_refused_a_run_without_one():
    """A paged plan made without a block table holds zeros, which would send every request to page 0: a run
    without a table says so in one line; with the plan's own buffer filled in place, the output is the
    reference's (the bound of test_plan_runs_at_grown_lengths_within_its_capacity)."""
    q, k, v, table, _ = growing_cache(DEVICE)
    plan = gpusim_kernels.DecodePlan([40, 20], heads=4, kv_heads=2, head_dim=16, dtype=torch.float16,
                                     device=DEVICE, page_size=16, max_cache_len=96, block_kv=16)
    with pytest.raises(ValueError, match="block_table is None, and this paged plan was made without one") as err:
        plan.run(q, k, v)
    assert "\n" not in str(err.value)
    plan.block_table.copy_(table)
    ref = reference_at(q, k, v, table, (40, 20))
    err = np.linalg.norm(plan.run(q, k, v, plan.block_table).cpu().double().numpy() - ref) / np.linalg.norm(ref)
    assert err <= 2 * UNIT_ROUNDOFF["fp16"] + (16 + 40) * 2.0**-24


@CUDA
def test_plan_and_run_do_not_synchronise():
    """Neither a plan made from host lengths (copied without waiting) nor its run waits for the GPU."""
    q, k, v, table, plan = growing_cache("cuda")
    plan.run(q, k, v)  # compiled outside the check
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        again = gpusim_kernels.DecodePlan([41, 21], heads=4, kv_heads=2, head_dim=16, dtype=torch.float16,
                                          device="cuda", page_size=16, max_cache_len=96, block_kv=16)
        again.run(q, k, v, plan.block_table)
        plan.run(q, k, v)
    finally:
        torch.cuda.set_sync_debug_mode("default")


@CUDA
def test_plan_replays_from_a_cuda_graph_as_lengths_grow():
    """Runs captured once replay at lengths raised in place: each replay equals an eager run at those
    lengths, bit for bit (the same kernels and splits)."""
    q, k, v, _, plan = growing_cache("cuda")
    plan.run(q, k, v)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = plan.run(q, k, v)
    for lengths in ((41, 20), (64, 21), (96, 33)):
        plan.cache_seqlens.copy_(torch.tensor(lengths, dtype=torch.int32))
        graph.replay()
        assert torch.equal(out, plan.run(q, k, v))


def kept_plan_calls(device, lengths_seen=((40, 20), (70, 33))):
    """decode_attention over growing_cache's tensors with device lengths (int64: copied into the kept plan's
    buffers) and an int64 table, at each lengths; with the fresh plan made at the capacity the kept one is."""
    q, k, v, table, _ = growing_cache(device)
    gpusim_kernels.decode._PLANS.clear()
    outs = [gpusim_kernels.decode_attention(q, k, v, cache_seqlens=torch.tensor(n, device=device),
                                            block_table=table.long().to(device), block_kv=16, return_lse=True)
            for n in lengths_seen]
    fresh = gpusim_kernels.DecodePlan([96, 96], heads=4, kv_heads=2, head_dim=16, dtype=torch.float16,
                                      device=device, page_size=16, max_cache_len=96, block_table=table,
                                      num_pages=20, block_kv=16)
    return q, k, v, table, outs, fresh


@RUNS
def test_decode_attention_keeps_one_plan_per_key_for_device_lengths():
    """Lengths on q's device: one plan kept for both calls (the capacity's split count), each output the float64
    reference's at its lengths, and bit for bit what a fresh plan at the capacity gives at those lengths."""
    q, k, v, table, outs, fresh = kept_plan_calls(DEVICE)
    (kept,) = gpusim_kernels.decode._PLANS.values()
    assert kept.num_splits == fresh.num_splits > 1 and kept.max_cache_len == 96
    for lengths, (out, lse) in zip(((40, 20), (70, 33)), outs):
        fresh.cache_seqlens.copy_(torch.tensor(lengths, dtype=torch.int32))
        again, again_lse = fresh.run(q, k, v, return_lse=True)
        assert torch.equal(out, again) and torch.equal(lse, again_lse)
        ref = reference_at(q, k, v, table, lengths)
        err = np.linalg.norm(out.cpu().double().numpy() - ref) / np.linalg.norm(ref)
        assert err <= 2 * UNIT_ROUNDOFF["fp16"] + (16 + max(lengths)) * 2.0**-24


@CPU
def test_decode_attention_with_device_lengths_moves_the_models_bytes():
    """trace_io's loads and stores of a call on the kept plan are gpusim.decode's count for that plan's launch
    (its split count) at the call's lengths, byte for byte."""
    q, k, v, table, _, _ = kept_plan_calls("cpu")
    (kept,) = gpusim_kernels.decode._PLANS.values()
    moved = gpusim_kernels.trace_io(gpusim_kernels.decode_attention, q, k, v, cache_seqlens=torch.tensor([70, 33]),
                                    block_table=table, block_kv=16, by_kernel=True)
    assert moved == decode.count(replace(kept.launch, seq_kv=(70, 33)))


@CPU
@pytest.mark.parametrize("change, message", [
    (dict(lengths=[200, 20]), "cache_seqlens[0]=200 is more than the plan's max_cache_len=96"),
    (dict(lengths=[40, 0]), "cache_seqlens[1]=0: request 1 needs a positive number of cached tokens"),
    (dict(table=lambda t: t.index_fill(1, torch.tensor([1]), 99)), "block_table[0, 1]=99 is out of range"),
    (dict(table=lambda t: t.index_fill(1, torch.tensor([0]), -1)), "block_table[0, 0]=-1 is negative"),
    (dict(options=dict(num_warps=4, foo=1)), "run takes num_warps and num_stages as launch options, not foo"),
    (dict(table=lambda t: t.tolist()), "block_table is list: run takes tensors"),
])
def test_interpreted_run_checks_the_values_a_gpu_run_leaves_to_its_caller(change, message):
    """In Triton's interpreter the kernels read the lengths and the block table on the host, so a bad value would
    crash the process or come back NaN: run checks them there, where reading them waits for nothing."""
    q, k, v, table, plan = growing_cache("cpu")
    lengths = torch.tensor(change.get("lengths", [40, 20]), dtype=torch.int32)
    with pytest.raises(ValueError) as err:
        plan.run(q, k, v, change.get("table", lambda t: t)(plan.block_table.clone()), lengths,
                 **change.get("options", {}))
    assert message in str(err.value) and "\n" not in str(err.value)


@RUNS
def test_a_plan_takes_its_lengths_as_a_numpy_array_too():
    kwargs = dict(heads=4, kv_heads=2, head_dim=16, dtype=torch.float16, device=DEVICE, max_cache_len=96)
    for lengths in (np.array([40, 20]), [np.int64(40), np.int32(20)]):
        assert gpusim_kernels.DecodePlan(lengths, **kwargs).lengths == (40, 20)


@CPU
def test_a_plan_launches_gpusims_default_chunk_where_64_does_not_fit():
    """On a T4 a 64-key chunk overflows the split kernel's shared memory: the plan launches gpusim's default chunk
    (32) and the split count gpusim's rule gives for the real length (129 keys: 5 chunks of 32, 5 splits; a length
    rounded up to whole 64-key chunks, 192, would give 6 chunks and 3 splits)."""
    plan = gpusim_kernels.DecodePlan([129], heads=32, kv_heads=8, head_dim=128, dtype=torch.float16, device="cpu",
                                     max_cache_len=4096, gpu="T4")
    assert plan.launch == decode.make_launch(batch=1, heads=32, kv_heads=8, head_dim=128, seq_kv=129, gpu="T4")
    assert (plan.launch.block_kv, plan.num_splits) == (32, 5)
    assert plan.constants["split_kv"]["Bc"] == 32


@CPU
def test_a_plan_is_checked_whatever_plans_came_before():
    """The plan's launch is cached by its arguments' types too: heads=4.0 is refused after a plan with heads=4."""
    kwargs = dict(kv_heads=2, head_dim=16, dtype=torch.float16, device="cpu", max_cache_len=96)
    gpusim_kernels.DecodePlan([40, 20], heads=4, **kwargs)
    with pytest.raises(ValueError, match="heads=4.0 must be a positive integer"):
        gpusim_kernels.DecodePlan([40, 20], heads=4.0, **kwargs)
    with pytest.raises(ValueError, match="grouped='no' must be True or False"):
        gpusim_kernels.DecodePlan([40, 20], heads=4, grouped="no", **kwargs)


@CPU
def test_decode_attention_with_device_lengths_never_reads_them(monkeypatch):
    """With the lengths a tensor on q's device, decode_attention's Python, plan made or kept, converts no
    tensor to a host value: the kernels are recorders, every such conversion raises."""
    q, k, v, table, _ = growing_cache("cpu")
    gpusim_kernels.decode._PLANS.clear()
    launched = []

    class Recorder:
        def __init__(self, name):
            self.name = name

        def __getitem__(self, grid):
            return lambda *args, **kwargs: launched.append(self.name)

    for name in ("decode_kernel", "split_kv_kernel", "reduce_kernel"):
        monkeypatch.setattr(gpusim_kernels.decode, name, Recorder(name))
    monkeypatch.setattr(gpusim_kernels.decode, "INTERPRETED", False)  # the GPU's path: no host-side value checks
    for method in ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__"):
        monkeypatch.setattr(torch.Tensor, method, lambda *a, m=method, **kw: pytest.fail(f"called Tensor.{m}"))
    for lengths in ([40, 20], [70, 33]):
        gpusim_kernels.decode_attention(q, k, v, cache_seqlens=torch.tensor(lengths), block_table=table.long(),
                                        block_kv=16)
    monkeypatch.undo()
    assert launched == ["split_kv_kernel", "reduce_kernel"] * 2 and len(gpusim_kernels.decode._PLANS) == 1


@RUNS
@pytest.mark.parametrize("change, message", [
    (dict(cache_seqlens=[40]), "cache_seqlens is torch.int64 (1,): expected an integer per request (2)"),
    (dict(cache_seqlens=[40.0, 20.0]), "cache_seqlens is torch.float32 (2,): expected an integer per request (2)"),
    (dict(block_table=lambda t: t[:1]), "block_table is torch.int32 (1, 3): expected 2-d integers, 2 rows"),
    (dict(block_table=lambda t: t.float()), "block_table is torch.float32 (2, 3): expected 2-d integers"),
    (dict(num_splits=0), "num_splits=0 must be a positive integer"),
    (dict(page_size=32), "page_size=32 but k_cache (10, 16, 1, 16) has pages of 16 tokens"),
    (dict(page_size=0), "page_size=0 must be a positive number of tokens per page"),
    (dict(block_table=lambda t: None, page_size=16), "page_size=16 was given without a block_table"),
])
def test_bad_input_with_device_lengths_gives_one_line(monkeypatch, change, message):
    q, k, v, table = paged_inputs()
    monkeypatch.setattr(gpusim_kernels.DecodePlan, "run", lambda *a, **kw: pytest.fail("a kernel was launched"))
    kwargs = dict(cache_seqlens=[40, 20], block_table=table, block_kv=16) | change
    kwargs["cache_seqlens"] = torch.tensor(kwargs["cache_seqlens"], device=DEVICE)
    kwargs["block_table"] = change.get("block_table", lambda t: t)(table)
    with pytest.raises(ValueError) as err:
        gpusim_kernels.decode_attention(q, k, v, **kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)


@CUDA
def test_decode_attention_with_device_lengths_does_not_synchronise():
    """On the GPU, decode_attention with device lengths (kept plan made, then reused) never waits for the GPU."""
    q, k, v, table, _ = growing_cache("cuda")
    gpusim_kernels.decode._PLANS.clear()
    kwargs = dict(block_table=table.cuda(), block_kv=16)
    gpusim_kernels.decode_attention(q, k, v, cache_seqlens=torch.tensor([40, 20], device="cuda"), **kwargs)
    torch.cuda.synchronize()  # compiled outside the check
    gpusim_kernels.decode._PLANS.clear()
    lengths = [torch.tensor(n, device="cuda") for n in ([41, 20], [70, 33])]  # copied before the check
    torch.cuda.set_sync_debug_mode("error")
    try:
        for n in lengths:
            gpusim_kernels.decode_attention(q, k, v, cache_seqlens=n, **kwargs)
    finally:
        torch.cuda.set_sync_debug_mode("default")


@CPU
def test_serving_smoke_run_times_a_growing_cache(tmp_path):
    """benchmarks/serving.py in the interpreter: every point timed by the plan and by SDPA (math on CPU, no
    graphs), ours within fp16 rounding of SDPA (fp32 softmax and accumulation: 1e-3)."""
    import json

    from benchmarks import serving
    assert serving.main(["--out", str(tmp_path), "--smoke"]) == 0
    rows = json.loads((tmp_path / "serving.json").read_text())["rows"]
    points = serving.SMOKE["points"]
    assert [(r["provider"], r["batch"], r["seq_kv"]) for r in rows] == [
        (p, b, n) for b, n in points for p in ("plan_eager", "sdpa_math")]
    assert all(r["ms_per_token"] > 0 and r["steps"] == serving.SMOKE["steps"] for r in rows)
    assert all(r["rel_err"] < 1e-3 for r in rows if r["provider"] == "plan_eager")


@CPU
def test_serving_layers_smoke_run_reads_a_cache_per_layer(tmp_path):
    """benchmarks/serving_layers.py in the interpreter: every point timed by the plan and by SDPA (eager on CPU: no
    graphs) over one cache per layer; ours within fp16 rounding of SDPA (1e-3)."""
    import json

    from benchmarks import serving, serving_layers
    assert serving_layers.main(["--out", str(tmp_path), "--smoke"]) == 0
    data = json.loads((tmp_path / "serving_layers.json").read_text())
    assert data["environment"]["command"] == f"python -m benchmarks.serving_layers --out {tmp_path} --smoke"
    rows = data["rows"]
    assert [(r["provider"], r["batch"], r["seq_kv"]) for r in rows] == [
        (p, b, n) for b, n in serving.SMOKE["points"] for p in ("plan_eager", "sdpa_math")]
    assert all(r["ms_per_token"] > 0 and r["caches"] == r["layers"] == serving.SMOKE["layers"] for r in rows)
    assert all(r["rel_err"] < 1e-3 for r in rows if r["provider"] == "plan_eager")


@CPU
def test_serving_splits_smoke_run_times_every_split_count(tmp_path):
    """benchmarks/serving_splits.py in the interpreter: at each point the plan at every split count from 1 up by
    powers of two (the rule's pick marked default, once), then SDPA (eager on CPU: no graphs)."""
    import json

    from benchmarks import serving, serving_splits
    assert serving_splits.main(["--out", str(tmp_path), "--smoke"]) == 0
    data = json.loads((tmp_path / "serving_splits.json").read_text())
    assert data["environment"]["command"] == f"python -m benchmarks.serving_splits --out {tmp_path} --smoke"
    for batch, seq_kv in serving.SMOKE["points"]:
        rows = [r for r in data["rows"] if (r["batch"], r["seq_kv"]) == (batch, seq_kv)]
        counts, default = serving_splits.split_counts(batch, seq_kv, serving.SMOKE["shape"])
        assert [(r["provider"], r["num_splits"]) for r in rows] == [("plan_eager", s) for s in counts] + [
            ("sdpa_math", None)]
        assert [r["num_splits"] for r in rows if r["default"]] == [default]
        assert all(r["ms_per_token"] > 0 for r in rows)


@CPU
def test_reduce_warps_smoke_run_times_every_variant(tmp_path):
    """benchmarks/reduce_warps.py in the interpreter (eager: no graphs): at each split point the reduce on 1, 2
    and 4 warps, PDL asked on and off (off in the interpreter), each equal to the plan's run, then SDPA."""
    import json

    from benchmarks import reduce_warps, serving
    assert reduce_warps.main(["--out", str(tmp_path), "--smoke"]) == 0
    data = json.loads((tmp_path / "reduce_warps.json").read_text())
    assert data["environment"]["command"] == f"python -m benchmarks.reduce_warps --out {tmp_path} --smoke"
    points = {(r["batch"], r["seq_kv"]) for r in data["rows"]}
    assert points and points <= set(serving.SMOKE["points"])
    for point in points:
        rows = [r for r in data["rows"] if (r["batch"], r["seq_kv"]) == point]
        assert [(r["provider"], r.get("reduce_warps")) for r in rows] == [
            ("plan_eager", w) for w in reduce_warps.WARPS for _ in (True, False)] + [("sdpa_math", None)]
        assert all(r["rel_err"] < 1e-6 and not r["pdl"] for r in rows[:-1])
