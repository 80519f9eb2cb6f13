"""Exact values, each computed here by hand or by a loop of the test's own, never read from the code under
test: where planted bugs survived before (benchmarks/mutants.py, docs/testing.md): the backward under GQA
and a causal mask, training memory, the L2's first touch under GQA, decoding with several query rows, the
block table's boundary entry, the hopper launch, occupancy, the time model's waves and overhead, the
command line against simulate(), and bad input."""
import contextlib
import dataclasses
import io
import json
import math

import numpy as np
import pytest

import gpusim
from gpusim import backward, cli, cost, decode
from gpusim.occupancy import Resources, occupancy, resources

H200 = "H200-measured"


# The backward under GQA and a causal mask.

def test_flash2_dkdv_steps_under_gqa_and_a_causal_mask():
    """flash2's dK/dV kernel holds K/V blocks of Br = 64 rows and streams Q blocks of Bc = 32 rows; Q block i
    (rows 32i..32i+31) sees K/V block j (keys 64j..) when 32i + 31 >= 64j, top-left causal. Each program
    (batch, K/V head, block j) takes a step per query head of its group (2) and Q block that sees it."""
    cfg = backward.config("flash2", seq=256, head_dim=64, heads=4, kv_heads=2, batch=1, block_q=64, block_kv=32,
                          causal=True, gpu=H200)
    steps = sorted(2 * sum(1 for i in range(256 // 32) if 32 * i + 31 >= 64 * j) for j in range(256 // 64)
                   for _ in range(2))  # two K/V heads
    assert steps == [4, 4, 8, 8, 12, 12, 16, 16]
    work = cfg.pass_.work(cfg, "dkdv")
    assert sorted(np.repeat(work.values, work.counts).tolist()) == steps
    r = gpusim.simulate("flash2", seq=256, head_dim=64, heads=4, kv_heads=2, causal=True, gpu=H200, backward=True,
                        backward_blocks=(64, 32))
    assert next(k for k in r.kernels if k.name == "dkdv").programs == 8


def test_flash2_backward_reads_k_and_v_once_per_kv_head():
    """B = 2, H = 8, H_kv = 2, N = 256, d = 64, fp16, not causal: dkdv holds each K_j once per K/V head
    (2 * 2 * 256 * 64 * 2 B); dq streams all 256 keys past each of its 4 Q blocks of 64, per query head."""
    r = gpusim.simulate("flash2", seq=256, head_dim=64, heads=8, kv_heads=2, batch=2, gpu=H200, backward=True,
                        backward_blocks=(64, 32))
    assert r.counts["dkdv", "K"] == (2 * 2 * 256 * 64 * 2, 0)
    assert r.counts["dq", "K"] == (2 * 8 * 4 * 256 * 64 * 2, 0)


@pytest.mark.parametrize("algo, matmuls", [("naive", 4), ("flash1", 5), ("flash2", 7)])
def test_backward_matmul_flops_by_the_papers_count(algo, matmuls):
    """Not causal, N = N_kv: naive runs dV, dP, dQ, dK (4 matmuls per score), flash1 also recomputes S (5),
    flash2's dq kernel recomputes S and dP again (7); 2 d FLOPs each per score."""
    n, d, bh = 512, 64, 2 * 4
    r = gpusim.simulate(algo, seq=n, head_dim=d, heads=4, batch=2, gpu=H200, backward=True,
                        backward_blocks=(64, 64))
    assert sum(k.flops_matmul for k in r.kernels if k.pass_ == "backward") == matmuls * 2 * d * n * n * bh


def test_training_memory_plan_by_hand():
    """32 layers keep Q, K, V, O (fp16) and the LSE (fp32) of their forward; one layer's backward adds dO, dQ,
    dK, dV and D on top (Llama-sized attention: 32 heads, d = 128, N = 4,096)."""
    qkvo = 32 * 4096 * 128 * 2  # each of Q, K, V, O, dO, dQ, dK, dV
    rows = 32 * 4096 * 4  # LSE, D
    saved = 4 * qkvo + rows
    plan = backward.model_memory("flash2", layers=32, heads=32, head_dim=128, batch=1, seq=4096, gpu="H200")
    assert plan["saved_per_layer"] == saved
    assert plan["peak_bytes"] == 32 * saved + 4 * qkvo + rows


# Decoding: several query rows, the block table's boundary entry.

SPECULATIVE = dict(batch=2, heads=32, kv_heads=2, head_dim=64, seq=4, seq_kv=[100, 300], num_splits=2, block_kv=64,
                   gpu=H200)


def test_decode_with_several_query_rows_by_hand():
    """4 query rows per head, 16 query heads per K/V head: a program serves 64 rows (its tl.dot tile). Request
    0 has 2 chunks of 64 keys (one per split), request 1 has 5 (3 + 2): 4 active splits, each reading its
    request's 32 heads x 4 rows once and writing them as fp32 partials; the reduce reads every row's cache
    length and writes O once."""
    r = gpusim.simulate("split_kv", **SPECULATIVE)
    rows = 32 * 4
    assert r.counts["split_kv", "Q"] == (4 * rows * 64 * 2, 0)
    assert r.counts["split_kv", "O_partial"] == (0, 4 * rows * 64 * 4)
    assert r.counts["reduce", "cache_seqlens"] == (4 * 2 * rows, 0)
    assert r.counts["reduce", "O"] == (0, 2 * rows * 64 * 2)
    assert next(k for k in r.kernels if k.name == "split_kv").sram_bytes_per_block == 64 * 64 * 2 + 2 * 64 * 64 * 2
    assert r.dram_by_tensor["Q"]["dram_read_bytes"] == 2 * rows * 64 * 2  # re-read by splits, from DRAM once


def test_the_block_table_entry_at_a_split_boundary_is_read_by_both_splits():
    """1,000 cached tokens in pages of 64, chunks of 16, 3 splits of 21 chunks (336 keys): the boundaries at
    keys 336 and 672 fall inside pages 5 and 10, whose entries both neighbouring splits read."""
    per_split = [set(key // 64 for key in range(s * 336, min((s + 1) * 336, 1000))) for s in range(3)]
    entries = sum(len(pages) for pages in per_split)
    assert entries == 16 + 2
    r = gpusim.simulate("split_kv", batch=1, heads=1, head_dim=64, seq_kv=1000, page_size=64, block_kv=16,
                        num_splits=3, gpu=H200)
    assert r.counts["split_kv", "block_table"] == (4 * entries, 0)


# Hopper.

def test_hopper_stages_two_kv_buffers():
    """Q_i, and K_j, V_j in two TMA buffers: 128 x 128 tiles at d = 128, fp16."""
    r = gpusim.simulate("hopper", seq=4096, head_dim=128, heads=16, gpu=H200)
    assert r.sram_bytes_per_block == 128 * 128 * 2 + 2 * 2 * 128 * 128 * 2


def test_hopper_flops_by_hand():
    """flash2's operations less the multiply by log2(e) (the scores are prescaled): per score 6, per row and
    K/V block 5 + d, per row at the end 2 + d; exponentials: a score's, one per row and block, one per row."""
    n, d, tc = 4096, 128, 4096 // 128
    k = gpusim.simulate("hopper", seq=n, head_dim=d, gpu=H200).kernels[0]
    assert k.flops_other == 6 * n * n + (5 + d) * n * tc + (2 + d) * n
    assert k.exps == n * n + n * tc + n
    assert k.flops_matmul == 4 * d * n * n


def test_hopper_warp_specialized_block_has_a_producer_and_two_consumers():
    """kernels/hopper.py's warp-specialized launch (d = 128, fp16, not causal): 3 warp groups of 4 warps; the
    causal one is software-pipelined on 8 warps."""
    ws = gpusim.simulate("hopper", seq=4096, head_dim=128, heads=16, gpu=H200).config
    swp = gpusim.simulate("hopper", seq=4096, head_dim=128, heads=16, gpu=H200, causal=True).config
    assert resources(ws, "hopper").num_warps == 12 and resources(swp, "hopper").num_warps == 8


def test_the_rotated_hopper_loop_is_one_instruction_stream():
    """The launch table's causal d = 64 launch rotates its loop (overlap=True); timed it bought 0.95-1.03x over the
    same launch unrotated (docs/hopper.md), so its step is priced serially: the same launch with overlap=False
    costs the same, to the byte and the second, and only the warp-specialized launch has two streams."""
    rotated = gpusim.simulate("hopper", seq=4096, head_dim=64, heads=32, causal=True, gpu=H200)
    cfg = rotated.config
    assert cfg.pass_.tiles(cfg).overlap and cfg.pass_.streams(cfg, "hopper") == 1
    plain = dataclasses.replace(cfg, user_tiles=gpusim.Tiles(cfg.block_q, cfg.block_kv, overlap=False))
    assert not plain.pass_.tiles(plain).overlap
    grids = [cost.schedule(rotated, c) for c in (cfg, plain)]
    assert grids[0][1].serial_s == grids[1][1].serial_s == grids[0][1].overlapped_s
    ws = gpusim.simulate("hopper", seq=4096, head_dim=64, heads=32, gpu=H200).config
    assert ws.pass_.streams(ws, "hopper") == 2


def test_hopper_causal_launches_its_longest_programs_first():
    """Causal, the Hopper launch orders each head's Q blocks longest first (lpt_heads), so the last program
    launched walks one K/V block; flash2 launches them in order, so its last walks all Tr = 32."""
    shape = dict(seq=4096, head_dim=128, heads=16, causal=True, gpu=H200, block_q=128, block_kv=128)
    hop, f2 = (gpusim.simulate(algo, **shape).config for algo in ("hopper", "flash2"))
    assert hop.pass_.work(hop, "hopper").tail[0] == 1
    assert f2.pass_.work(f2, "flash2").tail[0] == 4096 // 128


# The L2.

def test_gqa_reads_each_kv_head_once_from_dram():
    """flash2, B = 2, H = 32, H_kv = 8, N = 4,096, d = 128, fp16 on the H200: K and V of the heads in flight fit
    in its L2, so DRAM sees each K/V head once (first touch), and Q once."""
    r = gpusim.simulate("flash2", batch=2, heads=32, kv_heads=8, seq=4096, head_dim=128, gpu=H200)
    assert r.dram_by_tensor["K"]["dram_read_bytes"] == 2 * 8 * 4096 * 128 * 2
    assert r.dram_by_tensor["V"]["dram_read_bytes"] == 2 * 8 * 4096 * 128 * 2
    assert r.dram_by_tensor["Q"]["dram_read_bytes"] == 2 * 32 * 4096 * 128 * 2


def test_the_l2_holds_a_kernels_last_writes_dirty():
    """Rule 4 of gpusim/l2.py: when a kernel ends, the L2 (60 MiB) holds 96.5% of its capacity of the kernel's
    most recent traffic, of which the written share is still dirty and never reaches DRAM within the kernel, up to
    46.8% of the capacity. naive's qk writes S (16 heads x 4,096^2, fp16): the cap; flash2's backward preprocess
    writes D (16 x 32 x 1,024 fp32, 2 MiB) while it reads O and dO (128 MiB): the share."""
    l2 = 60 * 2**20
    qk = gpusim.simulate("naive", heads=16, seq=4096, head_dim=64, gpu=H200).kernels[0]
    assert qk.name == "qk" and qk.write_bytes == 16 * 4096 * 4096 * 2
    assert qk.dram_write_bytes == qk.write_bytes - int(0.4676 * l2)
    step = gpusim.simulate("flash2", batch=16, heads=32, seq=1024, head_dim=64, backward=True, gpu=H200)
    pre = next(k for k in step.kernels if k.name == "preprocess")
    written, read = 16 * 32 * 1024 * 4, pre.dram_read_bytes
    assert pre.write_bytes == written and read == 2 * 16 * 32 * 1024 * 64 * 2
    assert pre.dram_write_bytes == written - int(0.9654 * l2 * written / (written + read))


# Occupancy.

A100 = gpusim.get_gpu("A100-40GB")


def test_each_block_reserves_a_kib_of_shared_memory():
    """41,000 B + the 1 KiB reserved per block, rounded to 128 B: 42,112 B; three fit in the A100's 164 KiB
    (without the reservation, 41,088 B: four)."""
    occ = occupancy(A100, Resources(4, 1, 32, 41000, 0, True))
    assert occ.blocks_per_sm == 167936 // 42112 == 3 and occ.limited_by == "shared memory"


def test_sixteen_warp_blocks_are_limited_by_the_warp_slots():
    """16-warp blocks of 24 registers per thread: 64 warp slots hold 4 (registers would allow 5)."""
    occ = occupancy(A100, Resources(16, 1, 24, 0, 0, True))
    assert occ.blocks_per_sm == 4 and occ.limited_by == "warps"


def test_the_register_estimate_spreads_the_tiles_over_the_blocks_threads():
    """No kernel compiled for the T4 (sm_75): flash2 at 64 x 64, d = 64, fp16 keeps S in fp32 and as P in fp16,
    the fp32 accumulator and Q: 64 * 64 * (4 + 2) * 2 B over 4 warps of 32 threads, 4 B a register, plus 40."""
    cfg = gpusim.simulate("flash2", seq=1024, head_dim=64, block_q=64, block_kv=64, gpu="T4").config
    assert resources(cfg, "flash2").registers_per_thread == 40 + 64 * 64 * 6 * 2 // (4 * 32 * 4)


# The time model.

def test_each_launch_pays_the_launch_overhead_once():
    """A millisecond of launch overhead makes naive attention (three launches) 3 ms slower, flash2 (one) 1 ms."""
    slow = dataclasses.replace(A100, name="slow launches", launch_overhead_s=1e-3)
    for algo, launches in (("naive", 3), ("flash2", 1)):
        shape = dict(seq=1024, head_dim=64, heads=4, block_q=64, block_kv=64)
        gap = (gpusim.simulate(algo, **shape, gpu=slow).predicted_time_s
               - gpusim.simulate(algo, **shape, gpu=A100).predicted_time_s)
        assert gap == pytest.approx(launches * (1e-3 - A100.launch_overhead_s), rel=1e-9)


def test_the_waves_add_up_program_by_program():
    """flash1's programs all walk the same steps. gpusim/cost.py's step 5: time = (the sum of every program's
    tau - the last wave's, each at b an SM: the waves before the last) / slots + the last wave's longest tau + the
    launch overhead, with P programs in S = SMs x b slots and the last wave's `last` programs timed at their own
    bandwidth share (last / SMs), each alone on its SM (112 programs on 132 SMs: one each, where a full wave holds
    b = 2); built here from cost.tau alone."""
    r = gpusim.simulate("flash1", seq=2048, head_dim=64, heads=32, batch=20, gpu=H200)
    cfg, k = r.config, r.kernels[0]
    grid, step = cost.schedule(r)
    programs, slots, sms = cfg.bh, grid.slots, cfg.gpu.sm_count
    last = programs - (math.ceil(programs / slots) - 1) * slots
    steps = cfg.tiling.tiles
    full, alone = cost.tau(step, steps, grid.resident, 2), cost.tau(step, steps, last / sms, 1)
    expected = (programs - last) * full / slots + alone + cfg.gpu.launch_overhead_s
    assert programs == 640 and slots == 264 and last == 112 and grid.resident == 2
    assert k.predicted_time_s == pytest.approx(expected, rel=1e-12)



def test_a_lone_tma_program_waits_its_set_up_and_its_first_copies_latencies_with_the_sm_idle():
    """The Hopper kernel's table launch at d = 128 holds one block per SM and loads ahead by TMA. Alone on its SM, a
    program of j steps holds its slot for its busy time (its copies' bytes among it) plus what nothing else overlaps:
    its set-up (warp-specialized at d = 128: 4.144 us, measured on run 137's lone launch) and the latencies of its first
    copies, Q's tile and its first K/V tile (each the L2's, or DRAM's for the share of its bytes that misses)."""
    r = gpusim.simulate("hopper", seq=8192, head_dim=128, heads=16, batch=4, gpu=H200)
    grid, step = cost.schedule(r)
    assert grid.resident == 1 and step.prefetched and step.setup_s == 4.144e-6
    gpu, j = r.config.gpu, r.config.tiling.tiles

    def latency(nbytes):  # nbytes: (SM bytes, DRAM bytes, SM bytes read, DRAM bytes read)
        miss = min(1.0, nbytes[3] / nbytes[2])
        return (1 - miss) * gpu.l2_latency_s + miss * gpu.hbm_latency_s
    waited = 4.144e-6 + latency(step.fixed_bytes) + latency(step.step_bytes)
    busy = cost.busy(step, j, 1, 1)
    assert cost.chain(step, j) < busy  # compute-bound: the slot time is the busy time and the waits
    assert cost.tau(step, j, 1, 1) == pytest.approx(busy + waited, rel=1e-12)


@pytest.mark.parametrize("head_dim, dtype, causal, setup_s", [
    (64, "fp16", False, 4.038e-6), (128, "bf16", False, 4.144e-6), (128, "fp8", False, 4.144e-6),  # warp-specialized
    (64, "fp8", False, 1.288e-6),  # software-pipelined
    (64, "fp16", True, 4.427e-6), (128, "fp16", True, 1.44e-6)])  # software-pipelined, causal
def test_a_hopper_launchs_set_up_is_its_launch_kinds(head_dim, dtype, causal, setup_s):
    """Each of the kernel's table launches sets up as the lone launch of its kind measured (gpusim/passes/hopper.py's
    LAUNCHES, read by hand: which launches are warp-specialized, and which software-pipelined are causal)."""
    r = gpusim.simulate("hopper", seq=4096, head_dim=head_dim, heads=16, batch=2, causal=causal, dtype=dtype, gpu=H200)
    assert cost.schedule(r)[1].setup_s == setup_s


def test_the_hopper_kernel_launches_as_a_graph_replays_an_empty_kernel_where_measured():
    """A Hopper launch adds the empty kernel's graph-replayed launch on H200-measured (0.7356 us: lone_program.json's
    132 programs, run 95), the events-timed 3.2 us where that is not measured (the datasheet H200); flash2 adds 3.2 us
    on either."""
    for gpu, hopper_s in (("H200-measured", 7.356e-07), ("H200", 3.2e-06)):
        for algo, launch_s in (("hopper", hopper_s), ("flash2", 3.2e-06)):
            cfg = gpusim.simulate(algo, seq=1024, head_dim=64, gpu=gpu).config
            assert cfg.pass_.launch_s(cfg, algo) == launch_s


def test_naives_launches_are_priced_as_a_graph_replays_them_where_measured():
    """Each of naive's three launches adds the empty kernel's graph-replayed launch on H200-measured (0.7356 us), the
    events-timed 3.2 us where that is not measured (the datasheet H200)."""
    for gpu, launch_s in (("H200-measured", 7.356e-07), ("H200", 3.2e-06)):
        cfg = gpusim.simulate("naive", seq=1024, head_dim=64, gpu=gpu).config
        assert [cfg.pass_.launch_s(cfg, k) for k in ("qk", "softmax", "pv")] == [launch_s] * 3


def test_naives_qk_stores_its_tile_after_its_loads_and_dot():
    """qk's time is its launch without S's writes plus S's bytes at GPU.store_bytes_per_s: B x H x N x N x 2 bytes of
    S at N = 1,024 (a multiple of 16: no padding), fp16, non-causal, at H200-measured's 4.568 TB/s."""
    r = gpusim.simulate("naive", batch=2, heads=4, seq=1024, head_dim=64, gpu="H200-measured", block_q=64, block_kv=64)
    counts = {t: rw for (k, t), rw in r.counts.items() if k == "qk"}
    dram = {t: rw for (k, t), rw in r.dram.items() if k == "qk"}
    assert counts["S"] == (0, 2 * 4 * 1024 * 1024 * 2)
    def unstored(nbytes):
        return {t: (read, 0 if t == "S" else write) for t, (read, write) in nbytes.items()}
    qk = r.kernels[0]
    flops = (qk.flops_matmul, qk.flops_other, qk.exps)
    alone = cost.launch_time(r.config, "qk", unstored(counts), unstored(dram), flops)
    assert qk.predicted_time_s == pytest.approx(alone.predicted_time_s + 2 * 4 * 1024 * 1024 * 2 / 4.568e12, rel=1e-12)


def test_a_lone_pv_program_keeps_its_pipelines_tiles_in_flight():
    """pv with one program per SM (4 heads x 2 Q blocks of 128 rows, 8 warps, 3 stages): a step takes one round of its
    compute and loads over the S - 1 = 2 tiles in flight (Little's law), not its compute and the whole wait."""
    r = gpusim.simulate("naive", batch=1, heads=4, seq=256, head_dim=64, gpu="H200-measured", block_q=128, block_kv=128)
    pv = r.kernels[2]
    counts = {t: rw for (k, t), rw in r.counts.items() if k == "pv"}
    dram = {t: rw for (k, t), rw in r.dram.items() if k == "pv"}
    grid = cost.occupied(r.config, "pv", counts, dram, (pv.flops_matmul, pv.flops_other, pv.exps))
    step = cost.one_step(grid, cost.rates(grid))
    assert (grid.resident, grid.res.num_warps, grid.res.num_stages) == (1, 8, 3)
    loads = cost.wait(r.config.gpu, step.step_bytes)
    assert step.chain_s == pytest.approx(max(step.serial_s, (step.serial_s + loads) / 2), rel=1e-12)
    assert step.chain_s < step.serial_s + loads


# The command line against simulate().

def cli_json(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["count", *argv, "--json"]) == 0
    return json.loads(out.getvalue())


def simulated(**kw):
    return json.loads(json.dumps(gpusim.simulate(**kw).to_dict()))


REQUIRED = dict(algo="flash2", seq=1000, head_dim=80)
OPTIONS = [("--seq-kv", "1500", dict(seq_kv=1500)), ("--kv-heads", "2", dict(heads=8, kv_heads=2)),
           ("--heads", "8", dict(heads=8)), ("--batch", "3", dict(batch=3)), ("--block-q", "32", dict(block_q=32)),
           ("--block-kv", "64", dict(block_kv=64)), ("--causal", None, dict(causal=True)),
           ("--dtype", "bf16", dict(dtype="bf16")), ("--gpu", "h100-sxm", dict(gpu="H100-SXM")),
           ("--causal-align", "bottom_right", dict(causal_align="bottom_right"))]


def argv_of(kw):
    return ["--algo", kw["algo"], "--seq", str(kw["seq"]), "--head-dim", str(kw["head_dim"])]


def test_count_without_options_is_simulate_with_its_defaults():
    assert cli_json(argv_of(REQUIRED)) == simulated(**REQUIRED)


@pytest.mark.parametrize("option, value, kw", OPTIONS, ids=[o[0] for o in OPTIONS])
def test_every_count_option_gives_what_simulate_gives(option, value, kw):
    needs = {"--kv-heads": ["--heads", "8"], "--causal-align": ["--causal"]}  # what the option applies to
    extra = [option] + ([value] if value else []) + needs.get(option, [])
    kw = kw | (dict(causal=True) if option == "--causal-align" else {})
    assert cli_json(argv_of(REQUIRED) + extra) == simulated(**REQUIRED, **kw)


def test_count_with_every_option_at_once():
    argv = argv_of(REQUIRED) + [x for option, value, _ in OPTIONS for x in [option] + ([value] if value else [])]
    kw = {k: v for _, _, options in OPTIONS for k, v in options.items()}
    assert cli_json(argv) == simulated(**REQUIRED, **kw)
    assert cli_json(argv)["config"]["block_q"] == 32 and cli_json(argv)["config"]["kv_heads"] == 2


# Bad input.

@pytest.mark.parametrize("kwargs, message", [
    (dict(seq=True), "seq=True must be a positive integer"),
    (dict(heads=0), "heads=0 must be a positive integer"),
    (dict(batch=0), "batch=0 must be a positive integer"),
    (dict(heads=np.int64(2), kv_heads=True), "kv_heads=True must be a positive integer"),
    (dict(seq=2**40 + 1), "seq=1,099,511,627,777 is more than the 1,099,511,627,776 (40 bits) gpusim counts"),
])
def test_bad_integers_are_refused(kwargs, message):
    with pytest.raises(ValueError) as err:
        gpusim.simulate("flash2", **{"seq": 1024, "head_dim": 64, "block_q": 64, "block_kv": 64, **kwargs})
    assert str(err.value) == message


def test_the_longest_sequence_counted_is_counted():
    r = gpusim.simulate("flash2", seq=2**40, head_dim=64, block_q=128, block_kv=128)
    assert r.counts["flash2", "Q"] == (2**40 * 64 * 2, 0)


def test_bottom_right_alignment_with_as_many_queries_as_keys_is_top_left():
    shape = dict(seq=300, head_dim=64, causal=True, block_q=64, block_kv=64)
    assert (gpusim.simulate("flash2", **shape, causal_align="bottom_right").counts
            == gpusim.simulate("flash2", **shape).counts)


def test_a_negative_block_table_entry_is_refused():
    with pytest.raises(ValueError) as err:
        decode.check_block_table(np.array([[0, 1], [2, -3]]), [100, 128], 4, 64)
    assert str(err.value) == "block_table[1, 1]=-3 is negative for request 1: the cache has 4 pages (0..3)"
