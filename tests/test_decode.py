"""Flash-Decoding: the Triton kernels against the float64 reference and against gpusim.decode's closed form
(trace_io, byte for byte), execute mode against both, an independent brute-force count, and bad input.

Without a GPU the kernels run in Triton's interpreter (tests/conftest.py sets TRITON_INTERPRET=1). With a
GPU the accuracy tests run compiled, on larger shapes too.
"""
import dataclasses
import itertools
import math
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpusim
from gpusim import cost, decode
from gpusim.passes.split_kv import REDUCE_CHUNKS, REDUCE_ROWS, SPLIT_KV as split_kv_model
from gpusim.compiled import COMPILED
from gpusim.occupancy import resources
from gpusim.decode_execute import decode_attention as execute_decode
from gpusim.decode_execute import decode_reference

DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
UNIT_ROUNDOFF = {"fp32": 2.0**-24, "fp16": 2.0**-11, "bf16": 2.0**-8}


def random_case(seed, max_len=300, dtypes=("fp16", "bf16", "fp32")):
    """Ragged lengths (not multiples of the page), random page sizes 16..256 or a contiguous cache, 1 to 8
    query rows, GQA groups 1/4/8, grouped or not, num_splits 1, several, or the heuristic's."""
    rng = random.Random(seed)
    seq, batch = rng.randint(1, 8), rng.randint(1, 3)
    kv_heads, group = rng.choice([1, 2]), rng.choice([1, 4, 8])
    case = dict(batch=batch, heads=kv_heads * group, kv_heads=kv_heads, head_dim=rng.choice([16, 32, 48]), seq=seq,
                seq_kv=tuple(rng.randint(seq, max_len) for _ in range(batch)), block_kv=rng.choice([16, 32, 64]),
                page_size=rng.choice([None, 16, 32, 64, 128, 256]), grouped=rng.random() < 0.75,
                causal_align="bottom_right" if rng.random() < 0.8 else "top_left", dtype=dtypes[seed % len(dtypes)])
    chunks = int(decode.make_launch(**case, num_splits=1, gpu="A100-40GB").chunks.max())
    case["num_splits"] = rng.choice([1, None, rng.randint(1, chunks), chunks])
    return case


def case_id(c):
    return (f"{c['dtype']}-B{c['batch']}H{c['heads']}kv{c['kv_heads']}-seq{c['seq']}-L{'/'.join(map(str, c['seq_kv']))}"
            f"-P{c['page_size']}-Bc{c['block_kv']}-S{c['num_splits']}{'' if c['grouped'] else '-ungrouped'}"
            f"-{c['causal_align']}")


def cache_arrays(c, seed=0):
    """NumPy float64 q, k_cache, v_cache and block_table (None when contiguous). A paged cache holds spare
    pages; the table maps each request's pages to a random permutation, unused entries -1 (never read)."""
    rng = np.random.default_rng(seed)
    lengths, d = np.array(c["seq_kv"]), c["head_dim"]
    q = rng.standard_normal((c["batch"], c["heads"], c["seq"], d))
    if c["page_size"] is None:
        shape = (c["batch"], c["kv_heads"], int(lengths.max()) + 3, d)
        return q, rng.standard_normal(shape), rng.standard_normal(shape), None
    need = -(-lengths // c["page_size"])
    pages = rng.permutation(int(need.sum()) + 5)
    table = np.full((c["batch"], int(need.max()) + 2), -1, dtype=np.int32)
    for b, start in enumerate(np.cumsum(need) - need):
        table[b, : need[b]] = pages[start: start + need[b]]
    shape = (len(pages), c["page_size"], c["kv_heads"], d)
    return q, rng.standard_normal(shape), rng.standard_normal(shape), table


def brute_force_counts(c):
    """{(kernel, tensor): (read, write)} counted program by program, chunk by chunk, key by key, from the
    algorithm as described (gpusim/decode.py's docstring), not from its closed form."""
    e, f, d, seq, S, P = DTYPE_BYTES[c["dtype"]], 4, c["head_dim"], c["seq"], c["num_splits"], c["page_size"]
    group = c["heads"] // c["kv_heads"]
    units, heads_per_unit = (c["kv_heads"], group) if c["grouped"] else (c["heads"], 1)
    kernel = "decode" if S == 1 else "split_kv"
    reads, writes = Counter(), Counter()
    for n_cached in c["seq_kv"]:
        visible = n_cached if c["causal_align"] == "bottom_right" else min(n_cached, seq)
        chunks = [list(range(k, min(k + c["block_kv"], visible))) for k in range(0, visible, c["block_kv"])]
        per_split = math.ceil(len(chunks) / S)
        splits = [[k for chunk in chunks[s * per_split:(s + 1) * per_split] for k in chunk] for s in range(S)]
        rows = heads_per_unit * seq
        for _unit in range(units):
            for keys in splits:
                reads[kernel, "cache_seqlens"] += 4  # every program reads its request's length
                if not keys:
                    continue
                reads[kernel, "Q"] += rows * d * e
                reads[kernel, "K"] += len(keys) * d * e
                reads[kernel, "V"] += len(keys) * d * e
                if P is not None:
                    reads[kernel, "block_table"] += 4 * len({k // P for k in keys})
                out, lse, size = ("O", "LSE", e) if S == 1 else ("O_partial", "LSE_partial", f)
                writes[kernel, out] += rows * d * size
                writes[kernel, lse] += rows * f
        filled = sum(1 for keys in splits if keys)
        for _row in range(c["heads"] * seq if S > 1 else 0):  # a reduce program per query row
            reads["reduce", "cache_seqlens"] += 4
            reads["reduce", "LSE_partial"] += filled * f
            reads["reduce", "O_partial"] += filled * d * f
            writes["reduce", "O"] += d * e
            writes["reduce", "LSE"] += f
    return {key: (reads[key], writes[key]) for key in reads.keys() | writes.keys()}


MODEL_CASES = [random_case(seed) for seed in range(200)]


@pytest.mark.parametrize("seed", range(200))
def test_closed_form_equals_brute_force(seed):
    c = dict(MODEL_CASES[seed])
    launch = decode.make_launch(**c, gpu="H200")
    c["num_splits"] = launch.num_splits  # the heuristic's choice, when None
    assert decode.count(launch) == brute_force_counts(c)


def test_brute_force_by_hand():
    """One request of 100 keys, page 16, chunks of 32 in 2 splits of 2 chunks: keys 0..63 and 64..99.
    Split 0 touches pages 0-3, split 1 pages 4-6: 7 entries. fp16, d = 16, one K/V head, group 4."""
    c = dict(batch=1, heads=4, kv_heads=1, head_dim=16, seq=1, seq_kv=(100,), block_kv=32, page_size=16,
             grouped=True, causal_align="bottom_right", dtype="fp16", num_splits=2)
    counts = decode.count(decode.make_launch(**c))
    assert counts == brute_force_counts(c)
    assert counts["split_kv", "K"] == (100 * 16 * 2, 0)
    assert counts["split_kv", "block_table"] == (7 * 4, 0)
    assert counts["split_kv", "Q"] == (2 * 4 * 16 * 2, 0)  # both splits read the group's 4 rows
    assert counts["reduce", "O_partial"] == (2 * 4 * 16 * 4, 0)
    assert counts["split_kv", "O_partial"] == (0, 2 * 4 * 16 * 4)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6))
def test_execute_mode_equals_closed_form_and_reference(seed):
    c = random_case(seed, max_len=200)
    q, k, v, table = cache_arrays(c, seed)
    out, launch, mem = execute_decode(q, k, v, cache_seqlens=c["seq_kv"], block_table=table,
                                      causal_align=c["causal_align"], num_splits=c["num_splits"],
                                      block_kv=c["block_kv"], grouped=c["grouped"], dtype=c["dtype"], gpu="H200")
    ref = decode_reference(q, k, v, cache_seqlens=c["seq_kv"], block_table=table, causal_align=c["causal_align"])
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)
    assert {key: tuple(rw) for key, rw in mem.counts.items()} == decode.count(launch)


def test_grouping_saves_the_group_factor_on_k_and_v():
    shape = dict(batch=2, heads=32, kv_heads=8, head_dim=128, seq_kv=4096, num_splits=4, page_size=16)
    grouped, ungrouped = (decode.count(decode.make_launch(**shape, grouped=g)) for g in (True, False))
    assert ungrouped["split_kv", "K"][0] == 4 * grouped["split_kv", "K"][0] == 4 * 2 * 8 * 4096 * 128 * 2
    assert ungrouped["split_kv", "block_table"][0] == 4 * grouped["split_kv", "block_table"][0]


def test_top_left_with_one_query_sees_one_key():
    """torch's is_causal=True on a decode step: the new token attends to key 0 only."""
    c = dict(batch=1, heads=2, kv_heads=1, head_dim=16, seq=1, seq_kv=(50,), block_kv=16, page_size=None,
             grouped=True, causal_align="top_left", dtype="fp16", num_splits=1)
    q, k, v, _ = cache_arrays(c)
    ref = decode_reference(q, k, v, cache_seqlens=(50,), causal_align="top_left")
    np.testing.assert_allclose(ref[0, :, 0], np.repeat(v[0, :, 0], 2, axis=0), rtol=1e-15)
    assert decode.count(decode.make_launch(**c))["decode", "K"] == (16 * 2, 0)


@pytest.mark.parametrize("per_split, slots, blocks, expected", [
    (8, 528, 2048, 64),  # Llama-3-8B's shape, batch 1, 128K: 66 fit, but 65 and 66 give 64's 32 chunks per split
    (64, 528, 256, 8),  # batch 8, 16K: 8 x 64 = 512 programs
    (512, 528, 2048, 1),  # batch 64: one split already fills the slots
    (8, 528, 3, 3),  # never more splits than chunks
    (8, 528, 7, 7),
    (8, 40, 100, 5),  # 5 x 8 = 40 fit; 5 gives 20 chunks per split, 4 gives 25
    (1000, 528, 100, 1),  # more programs than slots: still one split
])
def test_num_splits_rule(per_split, slots, blocks, expected):
    splits = decode.num_splits_rule(per_split, slots, blocks, decode.MAX_SPLITS)
    assert splits == expected
    assert splits == 1 or (per_split * splits <= slots and -(-blocks // splits) != -(-blocks // (splits - 1)))


def test_default_splits_fill_the_h200s_resident_blocks_but_one():
    """The split kernel keeps 5 blocks per SM on the H200 (93 registers x 128 threads, 38,928 B of shared
    memory, compiled): 660 slots, of which the rule places 4 x 132 = 528. Batch 1: 64 splits x 8 K/V heads =
    512 programs; batch 8: 8 splits; batch 64: 512 programs without splitting."""
    shape = dict(heads=32, kv_heads=8, head_dim=128, page_size=16)
    launch = decode.make_launch(batch=1, seq_kv=131072, **shape)
    assert decode.resident_programs(launch) == 132 * 5 and decode.split_slots(launch) == 132 * 4
    assert launch.num_splits == 64 and decode.programs(launch, "split_kv") == 512
    assert decode.make_launch(batch=8, seq_kv=16384, **shape).num_splits == 8
    assert decode.make_launch(batch=64, seq_kv=131072, **shape).kernels == ("decode",)
    # contiguous, the kernel keeps 3 blocks per SM (396 slots): 512 programs already fill them
    assert decode.make_launch(batch=64, heads=32, kv_heads=8, head_dim=128, seq_kv=131072).kernels == ("decode",)


@pytest.mark.parametrize("page_size", [16, 32, 64, 128, 256])
def test_every_page_size_keeps_the_same_resident_blocks(page_size):
    """The gather is compiled at every page size the kernel takes (results/sm90_resources.json): 5 blocks per
    SM and 64 splits at batch 1, whatever the page size. (Priced from the pipelined estimate, pages of 64
    once got 16 splits, and ran 1.6-1.8x slower: results/h200/decode_layout.json, paged64_rule.)"""
    launch = decode.make_launch(batch=1, seq_kv=131072, heads=32, kv_heads=8, head_dim=128, page_size=page_size)
    assert resources(launch, "split_kv").compiled
    assert decode.resident_programs(launch) == 132 * 5 and launch.num_splits == 64


# Shapes whose predicted decode step must not get faster as query rows or cached tokens are added: Llama-3-8B's GQA (32
# query heads over 8, d = 128) at three cache lengths, paged and at batch 8, a group of 4 over 4 K/V heads, MHA, and 64
# query heads over 8 at d = 64 (benchmarks/resources.py's DECODE_D64). Llama-3-8B at 1,024 tokens and the d = 64 shape
# fell past 4 and 2 rows while the split kernel was priced from its estimate past its compiled 16 padded rows; compiled
# at every tile of 1 to 16 rows (docs/perf.md, "A model artefact, fixed"), they rise on H100-SXM.
MONOTONE_STEPS = {"Llama-3-8B shape 4K": dict(heads=32, kv_heads=8, head_dim=128, seq_kv=4096),
                  "Llama-3-8B shape 32K": dict(heads=32, kv_heads=8, head_dim=128, seq_kv=32768),
                  "Llama-3-8B shape 16K paged": dict(heads=32, kv_heads=8, head_dim=128, seq_kv=16384, page_size=16),
                  "Llama-3-8B shape 4K batch 8": dict(heads=32, kv_heads=8, head_dim=128, seq_kv=4096, batch=8),
                  "16 over 4 8K": dict(heads=16, kv_heads=4, head_dim=128, seq_kv=8192),
                  "MHA 4K": dict(heads=32, kv_heads=32, head_dim=128, seq_kv=4096),
                  "Llama-3-8B shape 1K": dict(heads=32, kv_heads=8, head_dim=128, seq_kv=1024),
                  "d64 4K": dict(heads=64, kv_heads=8, head_dim=64, seq_kv=4096)}
# The steps (query rows, one more) where the predicted time still falls, each for a cause other than compiled
# resources, named so that a fix, or a new fall, fails the test. The split rule halving the splits as a larger tile
# holds fewer blocks an SM (the reduce then merges half the partials: 64 to 32 splits at 5 rows of the paged 16K, the
# compiled 32-row kernel's 153 registers holding 3 blocks an SM against 5). (d = 64 at 4K fell from 4 to 5 rows on H200-measured and A100-80GB too, until
# cost.last_longest priced a one-wave launch's longest program on the SMs holding one program fewer as well.) And on
# H200-measured, whose tensor rate was measured per tile, a decode step's dots are priced on their counted rows
# (split_kv.dot_tiling: no padding) at the 64-row tile's rate, 2.5x the 32-row tile's: 8 to 9 rows pads 32 rows to 64.
STILL_FALLING = {("H100-SXM", "Llama-3-8B shape 16K paged"): [(4, 5)],
                 ("H200-measured", "Llama-3-8B shape 4K"): [(8, 9)],
                 ("H200-measured", "Llama-3-8B shape 32K"): [(8, 9)],
                 ("H200-measured", "Llama-3-8B shape 4K batch 8"): [(8, 9)],
                 ("H200-measured", "16 over 4 8K"): [(8, 9)]}
MONOTONE_LENGTHS = (2048, 4096, 8192, 16384, 32768, 65536, 131072)
# A reduce program waits for its request's cache length, read from DRAM once and hit after (split_kv.dram_reads): the
# more programs a request has, the less of that miss each waits, a few ns (0.06% of the step at most here)
MONOTONE_SLACK = 1e-3


def _not_faster(times):
    """The steps (label, seconds) in which the time falls by more than MONOTONE_SLACK from the one before."""
    return [(a, b) for a, b in zip(times, times[1:]) if b[1] < a[1] * (1 - MONOTONE_SLACK)]


@pytest.mark.parametrize("gpu", ["H100-SXM", "H200-measured", "A100-80GB"])
def test_a_decode_step_takes_no_less_time_for_more_query_rows_or_a_longer_cache(gpu):
    """More work, no less time: 1 to 16 query rows at each MONOTONE_STEPS shape (but the steps STILL_FALLING names,
    exactly those), and 2K to 128K cached tokens at 1, 4, 5, 8, 9 and 16 rows, batch 1 and 8. Before the reduce's fix
    (docs/perf.md, "A model artefact, fixed") Llama-3-8B's step took 12.57 µs at 4 rows and 12.07 at 5 on H100-SXM: the
    reduce's 160 programs, two on some SMs, halved each other's chain at the SM's issue rate, and past 4 rows its
    resources were looked up under the split kernel's 32 padded rows and estimated."""
    for label, shape in MONOTONE_STEPS.items():
        rows = [(seq, gpusim.simulate("split_kv", seq=seq, gpu=gpu, **shape).predicted_time_s) for seq in range(1, 17)]
        falls = [(a[0], b[0]) for a, b in _not_faster(rows)]
        assert falls == STILL_FALLING.get((gpu, label), []), (label, _not_faster(rows))
    for (heads, kv_heads), seq, batch in itertools.product(((32, 8), (32, 32)), (1, 4, 5, 8, 9, 16), (1, 8)):
        shape = dict(heads=heads, kv_heads=kv_heads, head_dim=128, seq=seq, batch=batch, gpu=gpu)
        lengths = [(n, gpusim.simulate("split_kv", seq_kv=n, **shape).predicted_time_s) for n in MONOTONE_LENGTHS]
        assert not _not_faster(lengths), (shape, _not_faster(lengths))


@pytest.mark.parametrize("head_dim", [64, 128])
def test_the_reduce_is_priced_with_its_own_compiled_kernel_at_any_query_rows_and_chunk(head_dim):
    """The reduce takes none of the split kernel's query rows (kernels/decode.py reduce_kernel: one query row a program;
    of the split kernel's constants only Bc, the chunk): its compiled entry is keyed by its own tile, (REDUCE_ROWS,
    block_kv), compiled at every chunk a launch takes (REDUCE_CHUNKS), so one compiled kernel prices it at 1 to 16 query
    rows and every chunk. It was looked up under the split kernel's tile (16 padded rows and chunks of 64 compiled
    only): past 4 rows of Llama-3-8B's group, and at any other chunk, the estimate."""
    assert set(decode.halvings(decode.DEFAULT_BLOCK_KV)) <= set(REDUCE_CHUNKS)
    heads, found, chunks = {64: 64, 128: 32}[head_dim], set(), set()
    for seq, block_kv in itertools.product(range(1, 17), REDUCE_CHUNKS):
        try:  # pages of 16, as decode_tiles.json ran the larger chunks
            launch = decode.make_launch(heads=heads, kv_heads=8, head_dim=head_dim, seq=seq, seq_kv=4096, num_splits=2,
                                        block_kv=block_kv, page_size=16, gpu="H200-measured")
        except ValueError:  # the split kernel's block of many rows and a large chunk: no SM holds it
            continue
        assert split_kv_model.compiled_tiles(launch, "reduce") == (REDUCE_ROWS, block_kv)
        res = resources(launch, "reduce")
        assert res.compiled
        found.add((res.registers_per_thread, res.shared_bytes, res.loops, res.issued))
        chunks.add(block_kv)
    assert len(found) == 1 and chunks == set(REDUCE_CHUNKS)


def test_two_reduce_programs_on_an_sm_do_not_shorten_each_others_chain():
    """At 5 query rows Llama-3-8B's reduce has 160 programs for 132 SMs: the model holds two on an SM. Each is a 2-warp
    block on 2 of the SM's 4 schedulers, so its chain issues at its own warps' rate, a lone program's (cost.own_hiding);
    the SM's rate (cost.sm_hiding, doubled) is what the two share (busy). The split kernel's 4-warp blocks keep the SM's
    rate on their chains, as ISSUE_HIDING was fitted. At the 32 splits the rule takes at 4 rows, so that each program
    merges as many partials (at 5 rows it takes 16: the compiled 32-row split kernel holds 2 blocks an SM, not 3)."""
    steps = []
    for seq in (4, 5):
        r = gpusim.simulate("split_kv", seq=seq, seq_kv=4096, heads=32, kv_heads=8, head_dim=128, num_splits=32,
                            gpu="H100-SXM")
        k = r.kernels[1]
        counts, dram = ({t: rw for (kernel, t), rw in table.items() if kernel == "reduce"}
                        for table in (r.counts, r.dram))
        grid = cost.occupied(r.config, "reduce", counts, dram, (k.flops_matmul, k.flops_other, k.exps))
        steps.append((grid, cost.one_step(grid, cost.rates(grid))))
    (lone, one), (paired, two) = steps
    assert (lone.resident, paired.resident, paired.res.num_warps) == (1, 2, 2)
    assert cost.own_hiding(paired) == cost.own_hiding(lone) == cost.sm_hiding(lone) == cost.sm_hiding(paired) / 2
    assert two.chain_s == one.chain_s and two.overlapped_s == one.overlapped_s / 2


def _split_step(page_size, seq, num_splits, gpu="H200-measured"):
    """(Grid, Schedule) of the split kernel at Llama-3-8B's attention shape, batch 1, over 32,768 tokens."""
    return cost.schedule(gpusim.simulate("split_kv", seq=seq, seq_kv=32768, heads=32, kv_heads=8, head_dim=128,
                                         num_splits=num_splits, page_size=page_size, gpu=gpu))


@pytest.mark.parametrize("seq", [1, 8, 16])
def test_a_lone_paged_split_program_steps_at_one_programs_copy_rate_whatever_its_tile(seq):
    """A split program alone on its SM over pages of 16 (16 splits: 128 programs) takes a step of its bytes at the lone
    copy rate, its block table's loads with its tiles (SplitKV.LONE_COPY, run 170's split_lone.json): by hand, 64 keys
    of K and V at d = 128 in fp16 and 4 block-table entries of 4 B, 2 * 64 * 128 * 2 + 4 * 4 = 32,784 B, over
    H200-measured's 18.83 GB/s, at 16, 32 and 64 padded rows alike. Two an SM (32 splits), a contiguous cache and a
    preset without the rate (H100-SXM) keep their compute and whole wait: no step at the rate."""
    grid, step = _split_step(16, seq, 16)
    assert grid.resident == 1 and cost.lone_copy(grid)
    assert step.chain_s == pytest.approx(32784 / 18.83e9, rel=1e-12)
    for page_size, splits, gpu in ((16, 32, "H200-measured"), (None, 16, "H200-measured"), (16, 16, "H100-SXM")):
        other, other_step = _split_step(page_size, seq, splits, gpu)
        assert not cost.lone_copy(other) and abs(other_step.chain_s - 32784 / 18.83e9) > 1e-8


@pytest.mark.parametrize("seq", [1, 8, 16])
def test_a_lone_unsplit_program_over_pages_steps_as_a_lone_split_one(seq):
    """The unsplit decode kernel (one split: 8 programs, each alone on its SM) runs the split kernel's loop, and run 172
    (split_lone_others.json) measured its lone step over pages within 4.2% of the split kernel's at 4 splits: by hand,
    the same 32,784 B a step at H200-measured's 18.83 GB/s. Over a contiguous cache it keeps its compute and whole
    wait."""
    grid, step = _split_step(16, seq, 1)
    assert (grid.kernel, grid.programs, grid.resident) == ("decode", 8, 1) and cost.lone_copy(grid)
    assert step.chain_s == pytest.approx(32784 / 18.83e9, rel=1e-12)
    contiguous, contiguous_step = _split_step(None, seq, 1)
    assert contiguous.kernel == "decode" and not cost.lone_copy(contiguous)
    assert abs(contiguous_step.chain_s - 32784 / 18.83e9) > 1e-8


def test_a_lone_gather_holds_within_run_95s_step_sizes_and_one_wave():
    """cost.lone_gather: d = 64 moves 16 KiB of K/V a step (64 keys x 64 x 2 B x 2), the least of run 95's steps: at the
    rate, 16,400 B with the block table's 16; d = 256 in fp32 moves 128 KiB, past them: the whole wait. A launch of
    more programs than SMs is no lone program, even at one an SM."""
    shape = dict(seq=1, heads=32, kv_heads=8, batch=1, seq_kv=32768, num_splits=16, page_size=16, gpu="H200-measured")
    for head_dim, dtype, lone in ((64, "fp16", True), (256, "fp32", False)):
        grid, step = cost.schedule(gpusim.simulate("split_kv", head_dim=head_dim, dtype=dtype, **shape))
        assert (grid.kernel, grid.programs, grid.resident, cost.lone_gather(grid)) == ("split_kv", 128, 1, lone)
        if lone:
            assert step.chain_s == pytest.approx(16400 / 18.83e9, rel=1e-12)
        else:
            assert not cost.lone_gather(dataclasses.replace(grid, programs=132))  # its step, not its programs
    grid, _ = _split_step(16, 1, 16)
    assert cost.lone_gather(grid) and not cost.lone_gather(dataclasses.replace(grid, programs=133))


@pytest.mark.parametrize("key", [k for k in COMPILED if k[1] in ("decode", "split_kv")], ids=str)
def test_shared_estimate_is_near_the_compiled_kernel(key):
    """split_kv.shared_bytes (the padded query rows, one K/V chunk per buffer, kv_buffers of them) against the compiled
    kernel at its tile, which adds scratch for its layout conversions (and up to 16 B of barriers): P's tile in fp16
    (padded rows x Bc x 2 B: 2 KiB at 16 rows over chunks of 64, within 6% at d = 128, 10% at d = 64; 4 KiB at 32 rows;
    8 KiB at 128 rows over chunks of 32), but at 64 rows over chunks of 64 the fp32 accumulator's (64 x d x 4 B: 16 KiB
    at d = 64, 32 KiB at d = 128, 40% of the kernel's 80 KiB at d = 128), which the estimate leaves out."""
    _, kernel, (head_dim, page_size), _, _, rows, block_kv, _, num_stages = key
    group = {64: 8, 128: 4}[head_dim]  # benchmarks/resources.py's shapes: DECODE_D64's group, bench_decode's
    launch = decode.make_launch(batch=1, seq=rows // (2 * group) + 1, seq_kv=4096, heads=8 * group, kv_heads=8,
                                head_dim=head_dim, block_kv=block_kv, page_size=page_size or None)
    assert (launch.padded_rows, launch.block_kv) == (rows, block_kv)
    scratch = rows * head_dim * 4 if (rows, block_kv) == (64, 64) else rows * block_kv * 2
    estimate = split_kv_model.shared_bytes(launch, kernel, num_stages)
    assert scratch <= COMPILED[key][2] - estimate <= scratch + 16


@pytest.mark.parametrize("head_dim", [64, 128])
def test_a_decode_launch_of_up_to_16_query_rows_is_priced_with_its_compiled_kernels(head_dim):
    """benchmarks/resources.py compiles decode and split_kv at every tile (padded query rows, chunk) a launch of 1 to 16
    query rows takes at its shapes, at every page size and a contiguous cache: Llama-3-8B's group of 4 pads to 16, 32
    and 64 rows; DECODE_D64's 8 to 16, 32, 64 and 128 (over chunks of 32, the largest that fits). Each kernel of such a
    launch, split or not, and its step's time, is priced with its compiled resources, looked up under its own tiles
    (compiled_tiles). They were compiled at 16 padded rows only: past 4 rows (d = 128) or 2 (d = 64), the estimate."""
    heads = {64: 64, 128: 32}[head_dim]
    tiles = set()
    for seq, page_size, num_splits in itertools.product(range(1, 17), (16, 32, 64, 128, 256, None), (None, 1)):
        shape = dict(heads=heads, kv_heads=8, head_dim=head_dim, seq=seq, seq_kv=4096, page_size=page_size,
                     num_splits=num_splits, gpu="H100-SXM")
        launch, result = decode.make_launch(**shape), gpusim.simulate("split_kv", **shape)
        for kernel, priced in zip(launch.kernels, result.kernels):
            res = resources(launch, kernel)
            assert res.compiled, (seq, page_size, kernel)
            assert priced.registers_per_thread == res.registers_per_thread
            tiles.add((kernel, *split_kv_model.compiled_tiles(launch, kernel)))
    rows = (16, 32, 64, 128) if head_dim == 64 else (16, 32, 64)
    assert {(kernel, r) for kernel, r, _ in tiles} == {(k, r) for k in ("decode", "split_kv") for r in rows} | {
        ("reduce", REDUCE_ROWS)}
    assert {(r, c) for k, r, c in tiles if k != "reduce"} == {(r, 32 if r == 128 else 64) for r in rows}


@pytest.mark.parametrize("blocks_per_sm, slots_per_sm", [(1, 1), (2, 1), (3, 2), (5, 4)])
def test_split_slots_leave_one_block_per_sm_but_place_one(monkeypatch, blocks_per_sm, slots_per_sm):
    launch = decode.make_launch(batch=1, heads=32, kv_heads=8, head_dim=128, seq_kv=4096, page_size=16)
    monkeypatch.setattr(decode, "resident_programs", lambda launch: launch.gpu.sm_count * blocks_per_sm)
    assert decode.split_slots(launch) == launch.gpu.sm_count * slots_per_sm


def test_flops_by_hand():
    """One request, 2 heads, one K/V head, d = 16, 40 keys in chunks of 16 (3 chunks), 2 splits (2 + 1)."""
    launch = decode.make_launch(batch=1, heads=2, kv_heads=1, head_dim=16, seq_kv=40, block_kv=16, num_splits=2)
    mm, other, exps = decode.flops(launch)["split_kv"]
    assert mm == 4 * 16 * 2 * 40
    assert exps == 2 * 40 + 2 * 3 + 2 * 2  # scores, a rescale per row per chunk, a log per row per split
    assert other == 5 * 2 * 40 + (5 + 16) * 2 * 3 + (2 + 16) * 2 * 2
    # per row and split: max, subtract, exp, sum, and w * o summed over d; per row: log, add, d divisions; per
    # row and step of 16 splits (one here): the online rescale of m_i, l_i and acc (an exp, d + 1 multiplies)
    assert decode.flops(launch)["reduce"] == (0, (4 + 2 * 16) * 2 * 2 + (2 + 16) * 2 + (16 + 2) * 2, 2 * 2 + 2 + 2)


GOOD = dict(batch=1, heads=4, kv_heads=1, head_dim=16, seq_kv=64, block_kv=16)


@pytest.mark.parametrize("changes, message", [
    (dict(num_splits=0), "num_splits=0 must be a positive integer"),
    (dict(num_splits=5), "num_splits=5 is more than the 4 K/V chunks of block_kv=16 in the longest request (64 keys)"),
    (dict(page_size=0), "page_size=0 must be a positive number of tokens per page"),
    (dict(page_size=-16), "page_size=-16 must be a positive number of tokens per page"),
    (dict(page_size=48), "page_size=48 must be a power of two >= 1"),
    (dict(block_kv=24), "block_kv=24 must be a power of two >= 16"),
    (dict(seq_kv=(64, 10)), "seq_kv has 2 cache lengths but batch=1: give one per request"),
    (dict(seq=4, seq_kv=3), "seq_kv[0]=3 < seq=4: aligned bottom-right, request 0's query row 0 would see no keys"),
    (dict(seq_kv=0), "seq_kv[0]=0: request 0 needs a positive number of cached tokens"),
    (dict(seq_kv=10.5), "seq_kv[0]=10.5 must be an integer: request 0's number of cached tokens"),
    (dict(seq_kv=True), "seq_kv[0]=True must be an integer: request 0's number of cached tokens"),
    (dict(seq_kv=[100, 1.5], batch=2), "seq_kv[1]=1.5 must be an integer: request 1's"),  # was seq_kv[0]=100.0
    (dict(seq_kv=[2**63, 5], batch=2), "seq_kv[0]=9,223,372,036,854,775,808 is more than the 1,099,511,627,776 "
                                       "(40 bits) cached tokens gpusim counts"),  # was seq_kv[0]=9.2e+18, no integer
    (dict(seq_kv=2**41), "seq_kv[0]=2,199,023,255,552 is more than the 1,099,511,627,776 (40 bits)"),  # was counted
    (dict(seq_kv=2**64), "seq_kv[0]=18,446,744,073,709,551,616 is more than"),  # was an OverflowError
    (dict(seq_kv=np.array([2**64 - 1], np.uint64)), "seq_kv[0]=18,446,744,073,709,551,615 is more than"),
    (dict(causal_align="causal"), "causal_align='causal' is not one of top_left, bottom_right"),
    (dict(heads=3, kv_heads=2), "heads=3 is not a multiple of kv_heads=2"),
    (dict(block_kv=2048, head_dim=256, gpu="A100-40GB"), "block_kv=2048, 16 query rows, head_dim=256 (fp16) need "
     "2,105,344 B of SRAM in the decode kernel; A100-40GB has 166,912 B per thread block"),
    (dict(dtype="int8"), "dtype='int8' is not supported"),
])
def test_bad_launch_gives_one_line(changes, message):
    with pytest.raises(ValueError) as err:
        decode.make_launch(**{**GOOD, "num_splits": 1, **changes})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_decode_and_a_forward_refuse_an_unknown_causal_align_in_the_same_words():
    """The decode listed its alignments in another order than the forward's (its default first)."""
    with pytest.raises(ValueError) as forward:
        gpusim.simulate("flash2", seq=64, head_dim=64, causal=True, causal_align="center")
    with pytest.raises(ValueError) as decoding:
        decode.make_launch(**{**GOOD, "causal_align": "center"})
    assert str(forward.value) == str(decoding.value) == "causal_align='center' is not one of top_left, bottom_right"


TABLE = np.array([[0, 1, 2], [3, 4, -1]])


@pytest.mark.parametrize("table, lengths, message", [
    (np.array([[0, 1, 2], [3, 99, -1]]), (40, 20), "block_table[1, 1]=99 is out of range for request 1: the cache "
                                                    "has 10 pages (0..9)"),
    (np.array([[0, -1, 2], [3, 4, -1]]), (40, 20), "block_table[0, 1]=-1 is negative for request 0"),
    (TABLE, (40, 60), "block_table has 3 pages per request but request 1 (cache_seqlens[1]=60) needs 4 pages of 16"),
    (TABLE[:1], (40, 20), "block_table is int64 (1, 3): expected integers, one row per request (2, max_pages)"),
])
def test_bad_block_table_gives_one_line(table, lengths, message):
    with pytest.raises(ValueError) as err:
        decode.check_block_table(table, lengths, num_pages=10, page_size=16)
    assert message in str(err.value) and "\n" not in str(err.value)
    decode.check_block_table(TABLE, (40, 20), num_pages=10, page_size=16)  # the -1 past request 1's pages is unused


def test_a_batch_past_the_decode_grids_is_refused_and_any_head_count_is_priced():
    """The decode kernels put the batch on their grids' y axis and the splits and query rows on z, where CUDA
    launches at most 65,535 programs; the model refuses past that, as DecodePlan does. Heads lie along x: a
    count far past any array the model could hold is priced from the first programs of the launch's tail."""
    with pytest.raises(ValueError, match=r"^batch=65,536: the decode kernels' grids hold at most 65,535 along"):
        gpusim.simulate("split_kv", seq=1, seq_kv=64, head_dim=64, heads=1, batch=65_536)
    with pytest.raises(ValueError, match=r"^seq=65,536: the decode kernels' grids hold at most 65,535 along"):
        gpusim.simulate("split_kv", seq=65_536, seq_kv=2**17, head_dim=64, heads=1)
    few, many = (gpusim.simulate("split_kv", seq=1, seq_kv=4096, head_dim=64, heads=h, num_splits=2) for h in (8, 10**12))
    assert many.hbm_read_bytes > few.hbm_read_bytes and many.predicted_time_s > 1e6 * few.predicted_time_s


LLAMA = dict(seq_kv=4096, heads=32, kv_heads=8, head_dim=128)  # Llama-3-8B's decode step


def test_the_default_chunk_is_the_largest_halving_that_fits_and_64_wherever_64_fits():
    """On a T4 (64 KiB of shared memory a block) the split kernel's 16 query rows and two stages of 64-key K and V
    chunks need 69,632 B: the default is 32, the launch block_kv=32 gives. Where 64 fits the default stays 64,
    priced as that launch."""
    t4 = gpusim.simulate("split_kv", **LLAMA, gpu="T4")
    assert t4.config.block_kv == 32 and t4.config == gpusim.simulate("split_kv", **LLAMA, gpu="T4", block_kv=32).config
    assert t4.predicted_time_s == gpusim.simulate("split_kv", **LLAMA, gpu="T4", block_kv=32).predicted_time_s
    for gpu in ("A100-40GB", "H100-SXM", "H200-measured", "RTX-4090"):
        default = gpusim.simulate("split_kv", **LLAMA, gpu=gpu)
        assert default.config.block_kv == 64
        assert default.to_dict() == gpusim.simulate("split_kv", **LLAMA, gpu=gpu, block_kv=64).to_dict()
    assert decode.halvings(64) == (64, 32, 16) and decode.halvings(16) == (16,)


@pytest.mark.parametrize("given, message", [
    (dict(block_kv=64), "block_kv=64, 16 query rows, head_dim=128 (fp16) need 69,632 B of shared memory per block in "
     "the split_kv kernel; T4 has 65,536 B per thread block; a smaller block_kv fits: block_kv=32 (--block-kv 32 on "
     "the command line)"),
    (dict(heads=64, seq=16, head_dim=256), "block_kv=16, 128 query rows, head_dim=256 (fp16) need 81,920 B of SRAM in "
     "the split_kv kernel; T4 has 65,536 B per thread block; no block_kv of 16 or more fits"),
])
def test_a_block_no_sm_holds_names_the_block_kv_to_give(given, message):
    """A given block_kv that overflows names the one that fits, as simulate's keyword and the CLI's option; where
    none down to 16 fits (here 128 query rows of d = 256), the line says so."""
    with pytest.raises(ValueError) as err:
        gpusim.simulate("split_kv", **(LLAMA | given), gpu="T4")
    assert str(err.value) == message


def test_a_list_of_cache_lengths_sets_the_batch_unless_batch_is_given():
    """seq_kv=[100, 200] is a batch of 2, as the CLI's --seq-kv 100,200 is, through simulate, decode_step and
    make_launch alike; a batch that agrees prices the same launch, one that does not is refused in one line."""
    ragged = gpusim.simulate("split_kv", seq_kv=[100, 200], head_dim=64)
    assert (ragged.config.batch, ragged.config.seq_kv) == (2, (100, 200))
    assert ragged.to_dict() == gpusim.simulate("split_kv", seq_kv=[100, 200], head_dim=64, batch=2).to_dict()
    assert gpusim.decode_step(seq_kv=np.array([100, 200, 300]), head_dim=64).config.batch == 3
    assert decode.make_launch(heads=4, kv_heads=1, head_dim=16, seq_kv=(64,)).batch == 1
    assert gpusim.simulate("split_kv", seq_kv=100, head_dim=64).config.batch == 1
    with pytest.raises(ValueError, match=r"^seq_kv has 2 cache lengths but batch=3: give one per request$"):
        gpusim.simulate("split_kv", seq_kv=[100, 200], head_dim=64, batch=3)
    with pytest.raises(ValueError, match=r"^seq_kv is empty: give one cache length per request$"):
        gpusim.simulate("split_kv", seq_kv=[], head_dim=64)


def test_the_longest_cache_counted_is_the_longest_sequence():
    """Cache lengths stop at 2**40, as seq does (gpusim.shape.MAX_SEQ), and the longest is counted exactly."""
    r = gpusim.simulate("split_kv", seq_kv=[2**40, 5], head_dim=64)
    assert r.config.seq_kv == (2**40, 5) and r.by_tensor["K"]["read_bytes"] == (2**40 + 5) * 64 * 2


def test_a_list_of_lengths_takes_an_integer_of_any_kind():
    """Each length of a list is an int where it is an integer of any kind (NumPy's, or anything with __index__, as a
    0-d torch integer), as it was before one float in a list stopped making its neighbours floats."""
    class Index:  # a 0-d torch integer's protocol
        def __index__(self):
            return 100
    r = gpusim.simulate("split_kv", seq_kv=[Index(), np.int32(200), np.uint64(300)], head_dim=64)
    assert r.config.seq_kv == (100, 200, 300) and all(type(n) is int for n in r.config.seq_kv)


def test_execute_mode_reads_no_cache_position_past_a_requests_length():
    """A real cache holds garbage past each request's length (a reused page, a longer request's tokens): no program
    reads it, so a NaN there changes nothing and is not refused; within a length it is, naming where."""
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 2, 1, 16)), rng.standard_normal((2, 1, 64, 16))
    v = k.copy()
    clean = gpusim.simulate("split_kv", q=q, k=k, v=v, seq_kv=[40, 64])
    k[0, 0, 50] = v[0, 0, 63] = np.nan  # past request 0's 40 tokens
    r = gpusim.simulate("split_kv", q=q, k=k, v=v, seq_kv=[40, 64])
    assert np.array_equal(r.output, clean.output) and r.counts == clean.counts
    v[1, 0, 39] = np.inf
    with pytest.raises(ValueError, match=r"^v holds NaN or infinity at position 39 of request 1, within its "
                                         r"cache_seqlens\[1\]=64 tokens$"):
        gpusim.simulate("split_kv", q=q, k=k, v=v, seq_kv=[40, 64])
    pages = rng.standard_normal((8, 16, 1, 16))
    table, lengths = np.array([[0, 1, 2], [3, 4, 5]]), [40, 20]  # request 1 uses pages 3 and 4; page 2 to row 7
    clean, _, _ = execute_decode(q, pages, pages, cache_seqlens=lengths, block_table=table)
    pages[2, 8:] = pages[4, 4:] = pages[5] = pages[7] = np.nan
    out, _, _ = execute_decode(q, pages, pages, cache_seqlens=lengths, block_table=table)
    assert np.array_equal(out, clean)
    pages[4, 3, 0, 5] = np.nan
    with pytest.raises(ValueError, match=r"^k_cache holds NaN or infinity at position 19 of request 1"):
        execute_decode(q, pages, pages, cache_seqlens=lengths, block_table=table)


def test_a_paged_cache_without_its_block_table_is_named():
    """Without block_table= a cache is read as contiguous (batch, kv_heads, seq_kv, head_dim): where that makes its
    batch differ from q's, the line says so and asks for the block table."""
    q, pages = np.zeros((2, 2, 1, 16)), np.zeros((8, 16, 2, 16))
    with pytest.raises(ValueError, match=r"^q has batch 2 but k_cache \(8, 16, 2, 16\) holds 8 requests \(dim 0\), "
                                         r"read as a contiguous cache \(batch, kv_heads, seq_kv, head_dim\); a paged "
                                         r"cache \(num_pages, page_size, kv_heads, head_dim\) needs its block_table=$"):
        execute_decode(q, pages, pages, cache_seqlens=[40, 20])


def test_the_split_count_a_default_chunk_chose_is_checked_against_that_chunk():
    """On a T4 at d = 128 the default chunk is 32 keys (64 overflows): the split count gpusim chose there is accepted
    when given back, and one past that chunk's count is refused against it (it was refused against 64's)."""
    shape = dict(heads=32, kv_heads=8, head_dim=128, seq_kv=129, gpu="T4")
    chosen = decode.make_launch(**shape)
    assert (chosen.block_kv, chosen.num_splits) == (32, 5)
    assert decode.make_launch(num_splits=5, **shape) == chosen
    with pytest.raises(ValueError, match=r"^num_splits=6 is more than the 5 K/V chunks of block_kv=32 in the longest"):
        decode.make_launch(num_splits=6, **shape)


def test_a_reduce_that_overflows_leaves_the_rule_one_split_and_refuses_splits_given():
    """The reduce's block (64 splits' partial rows of d + 1 fp32 values) does not depend on block_kv: where it
    overflows (a T4 at d = 256), the rule takes one split, which needs no reduce (it refused, naming that), and
    splits given are refused with one split as what fits."""
    shape = dict(heads=32, kv_heads=8, head_dim=256, seq_kv=4096, gpu="T4")
    chosen = decode.make_launch(**shape)
    assert chosen.num_splits == 1 and chosen.kernels == ("decode",) and chosen == decode.make_launch(num_splits=1,
                                                                                                   **shape)
    with pytest.raises(ValueError, match=r"in the reduce kernel; T4 has 65,536 B per thread block; one split needs no "
                                         r"reduce: num_splits=1 \(--num-splits 1 on the command line\) fits$"):
        decode.make_launch(num_splits=4, **shape)


def test_a_ragged_wave_costs_its_greater_part_and_038_of_its_lesser():
    """cost.ragged_time by hand: a batch of one 64K request beside a 4K one over pages, on H100-measured, takes the
    greater of its longest program's steps (each the longer of its chain and its tiles at the lone copy rate) and its
    bytes at the DRAM's rate, 0.38 of the lesser, its first loads and the launch; RAGGED_OVERLAP is what
    results/h100/ragged_wave.json's fit gives; a uniform batch is not ragged."""
    from benchmarks import report_gpus
    r = gpusim.simulate("split_kv", batch=2, heads=32, kv_heads=8, head_dim=128, seq_kv=[65536, 4096], page_size=16,
                        gpu="H100-measured")
    grid, step = cost.schedule(r)
    gpu = grid.cfg.gpu
    assert cost.ragged_wave(grid) and grid.programs <= grid.slots
    j = max(grid.work.values)
    steps = j * max(step.chain_s, step.step_bytes[2] / gpu.lone_copy_bytes_per_s)
    memory = sum(map(sum, grid.dram.values())) / (step.rate["dram"] * gpu.sm_count)  # the SMs' shares, the GPU's rate
    expected = (max(steps, memory) + 0.38 * min(steps, memory) + cost.first_loads(step, j) + step.fixed_compute_s
                + gpu.launch_overhead_s)
    assert r.kernels[0].predicted_time_s == pytest.approx(expected, rel=1e-9)
    assert cost.RAGGED_OVERLAP == report_gpus.ragged_overlap_fit() == 0.38
    uniform = gpusim.simulate("split_kv", batch=2, heads=32, kv_heads=8, head_dim=128, seq_kv=[65536, 65536],
                              page_size=16, gpu="H100-measured")
    assert not cost.ragged_wave(cost.schedule(uniform)[0])


# hbm_peak_bytes by hand: what kernels/decode.py's DecodePlan and run hold at once. Each term is written from the
# allocation it stands for, not from gpusim's peak_bytes: q (B, H, seq, d) in the dtype; the cache (contiguous:
# (B, kv_heads, longest, d), K and V; paged: the pages the requests hold, (pages, P, kv_heads, d), K and V, and the
# int32 block table (B, ceil(longest / P))); the int32 cache_seqlens (B,); O (B, H, seq, d) in the output dtype and
# the fp32 LSE (B, H, seq); split, the fp32 workspace o_partial (S, B, H, seq, d) and lse_partial (S, B, H, seq).
PEAK_SHAPE = dict(batch=3, heads=8, kv_heads=2, head_dim=32, seq=2, seq_kv=[100, 37, 250], block_kv=32,
                  num_splits=3, dtype="fp16", gpu="H200-measured")


def test_paged_decode_peak_memory_by_hand():
    """A paged, split decode step's peak HBM, term by term: the pages each request holds (page 16 divides none of
    100, 37, 250 keys), the block table (one row per request, as long as the longest request's pages), and the fp32
    partial O and LSE of all 3 splits, d + 1 values per query row. Fails if the block table or the LSE half of the
    workspace is left out."""
    r = gpusim.simulate("split_kv", page_size=16, **PEAK_SHAPE)
    B, H, Hkv, d, seq, S, P, e, f, idx = 3, 8, 2, 32, 2, 3, 16, 2, 4, 4  # fp16 inputs and O; fp32 stats; int32
    rows = B * H * seq  # 48 query rows
    pages = [7, 3, 16]  # ceil(100/16) = 7 (6 full + 4 keys), ceil(37/16) = 3 (2 full + 5), ceil(250/16) = 16 (15 + 10)
    q = rows * d * e  # (3, 8, 2, 32) fp16
    cache = 2 * sum(pages) * P * Hkv * d * e  # K and V: 26 pages of (16, 2, 32) fp16
    table = B * max(pages) * idx  # (3, 16) int32
    lengths = B * idx  # (3,) int32
    out = rows * d * e + rows * f  # O (3, 8, 2, 32) fp16, LSE (3, 8, 2) fp32
    workspace = S * rows * d * f + S * rows * f  # o_partial (3, 3, 8, 2, 32), lse_partial (3, 3, 8, 2), fp32
    assert r.config.num_splits == S and r.kernels[0].name == "split_kv"
    assert r.hbm_peak_bytes == q + cache + table + lengths + out + workspace


@pytest.mark.parametrize("S", [3, 1])
def test_contiguous_decode_peak_memory_by_hand(S):
    """A contiguous, split decode step's peak HBM: each request's K and V rows reserved up to the longest request
    (250 keys), no block table, and the same fp32 workspace of d + 1 values per row and split; with one split, no
    workspace at all (the decode kernel writes O and the LSE directly)."""
    B, H, Hkv, d, seq, e, f, idx = 3, 8, 2, 32, 2, 2, 4, 4
    rows = B * H * seq  # 48 query rows
    q = rows * d * e  # (3, 8, 2, 32) fp16
    cache = 2 * B * Hkv * 250 * d * e  # K and V: (3, 2, 250, 32) fp16 each
    lengths = B * idx  # (3,) int32
    out = rows * d * e + rows * f  # O fp16, LSE fp32
    workspace = S * rows * (d + 1) * f if S > 1 else 0  # o_partial (S, 3, 8, 2, 32), lse_partial (S, 3, 8, 2), fp32
    r = gpusim.simulate("split_kv", **(PEAK_SHAPE | dict(num_splits=S)))
    assert r.config.page_size is None and r.config.num_splits == S
    assert r.hbm_peak_bytes == q + cache + lengths + out + workspace


@pytest.mark.parametrize("S", [2, 1])
def test_fp8_decode_writes_o_in_fp16_and_reads_its_inputs_at_one_byte(S):
    """fp8 decoding writes O in fp16 (2 bytes, as FlashAttention-3 does), split (the reduce writes it) or not (the
    decode kernel does), while Q, K and V are read at fp8's 1 byte. Shape: B = 2, H = 8, kv_heads = 2, seq = 1,
    d = 64, 256 keys each, chunks of 64 (4 per request): 2 splits of 2 chunks, both active for every request."""
    B, H, Hkv, d, seq, n = 2, 8, 2, 64, 1, 256
    r = gpusim.simulate("split_kv", batch=B, heads=H, kv_heads=Hkv, head_dim=d, seq=seq, seq_kv=n, block_kv=64,
                        num_splits=S, dtype="fp8", gpu="H200-measured")
    assert [k.name for k in r.kernels] == (["split_kv", "reduce"] if S > 1 else ["decode"])
    t = r.by_tensor
    assert (t["O"]["read_bytes"], t["O"]["write_bytes"]) == (0, B * H * seq * d * 2)  # fp16 out
    assert t["LSE"]["write_bytes"] == B * H * seq * 4  # fp32
    assert t["Q"]["read_bytes"] == S * B * H * seq * d * 1  # each split reads its request's rows, fp8
    assert t["K"]["read_bytes"] == t["V"]["read_bytes"] == B * Hkv * n * d * 1  # once per K/V head, fp8
    # peak: q and K/V in fp8, O in fp16, the cache lengths, the LSE and (split) the fp32 workspace
    workspace = S * B * H * seq * (d + 1) * 4 if S > 1 else 0
    assert r.hbm_peak_bytes == (B * H * seq * d * 1 + 2 * B * Hkv * n * d * 1 + B * 4 + B * H * seq * d * 2
                                + B * H * seq * 4 + workspace)


@pytest.mark.parametrize("gpu", ["H200-measured", "H100-measured"])
@pytest.mark.parametrize("head_dim, block_kv", [(64, None), (128, 32)])
def test_one_more_cached_token_costs_about_one_token(gpu, head_dim, block_kv):
    """A paged split step of exactly 16 KiB (d = 64 at the default chunk; d = 128 at 32 rows): cost.lone_gather
    averaged the steps' bytes, which a partial last chunk drops under the measured steps' 16 KiB, so the 32,769th
    token nearly doubled the predicted time (0.45 -> 0.86 ms). It now reads a whole step's bytes."""
    def time(seq_kv):
        return gpusim.simulate("split_kv", seq_kv=seq_kv, heads=8, kv_heads=1, head_dim=head_dim, page_size=16,
                               num_splits=1, block_kv=block_kv, gpu=gpu).predicted_time_s
    whole, one_more, next_chunk = time(32768), time(32769), time(32768 + (block_kv or 64))
    assert whole <= one_more <= next_chunk <= 1.01 * whole
