"""The time model (gpusim/cost.py): FLOPs, occupancy, latency against the busiest unit, the schedule."""
import dataclasses

import numpy as np
import pytest

import gpusim
from gpusim import backward, cost
from gpusim.occupancy import resources
from gpusim.tiling import MAX_BINS, Tiling, ramp_work, uniform_work

H200 = "H200-measured"


def fa2(algo, seq, head_dim, **kw):
    batch, heads = gpusim.fa2_shape(seq, head_dim)
    return gpusim.simulate(algo, seq=seq, head_dim=head_dim, batch=batch, heads=heads, gpu=H200, **kw)


def test_matmul_flops_are_4_n2_d_per_head_when_tiles_divide():
    r = gpusim.simulate("flash2", seq=2048, head_dim=64, heads=4, block_q=128, block_kv=64)
    assert r.flops_matmul == 4 * 2048**2 * 64 * 4
    naive = gpusim.simulate("naive", seq=2048, head_dim=64, heads=4, block_q=64, block_kv=64)
    assert naive.flops_matmul == r.flops_matmul


def test_flash2_cuts_non_matmul_work_on_the_same_tiles():
    kw = dict(seq=4096, head_dim=128, heads=16, block_q=64, block_kv=64, gpu=H200)
    f1, f2 = gpusim.simulate("flash1", **kw), gpusim.simulate("flash2", **kw)
    assert f1.flops_matmul == f2.flops_matmul
    assert f2.flops_other < 0.8 * f1.flops_other


def test_flash1_starves_the_gpu_when_batch_times_heads_is_small():
    # FlashAttention-1: one thread block per (batch, head) -> 16 of 132 SMs busy, the rest idle throughout
    kw = dict(seq=16384, head_dim=64, heads=16, gpu="H100-SXM")
    f1 = gpusim.simulate("flash1", **kw)
    assert f1.kernels[0].programs == 16
    assert f1.kernels[0].busy_fraction == pytest.approx(16 / 132)
    assert gpusim.simulate("flash2", **kw).predicted_time_s < f1.predicted_time_s / 3


def test_occupancy_comes_from_the_compiled_kernel():
    # results/sm90_resources.json: flash2 128 x 128 at d = 128 on 8 warps keeps 226 registers and 160 KiB of
    # shared memory: one block per SM; 64 x 64 on 4 warps keeps 158 registers and 112 KiB: two.
    big = fa2("flash2", 8192, 128, block_q=128, block_kv=128).kernels[0]
    small = fa2("flash2", 8192, 128, block_q=64, block_kv=64).kernels[0]
    assert (big.registers_per_thread, big.blocks_per_sm) == (226, 1)
    assert (small.registers_per_thread, small.blocks_per_sm) == (158, 2)
    assert small.predicted_time_s < big.predicted_time_s  # the H200 measured 2.87 against 3.56 ms (tiles.json)


def test_a_latency_bound_kernel_gains_from_a_second_resident_block():
    # Little's law: a lone block waits for each load; a second one fills the wait. Halve the registers an SM
    # has and the qk kernel (94 registers x 256 threads) drops from two resident blocks to one.
    gpu = gpusim.get_gpu(H200)
    half = dataclasses.replace(gpu, name="half registers", registers_per_sm=gpu.registers_per_sm // 2)
    kw = dict(seq=4096, head_dim=64, heads=32, batch=4, block_q=128, block_kv=128)
    two, one = (gpusim.simulate("naive", gpu=g, **kw).kernels[0] for g in (gpu, half))
    assert (two.blocks_per_sm, one.blocks_per_sm) == (2, 1)
    assert one.latency_bound and not two.latency_bound and one.predicted_time_s > 1.1 * two.predicted_time_s


def test_the_last_wave_runs_the_longest_programs_last_unless_reversed():
    t = Tiling(4096, 4096, 128, 64, True)
    forward, reverse = ramp_work(t, groups=8), ramp_work(t, groups=8, order=(1, True))
    assert forward.tail[0] == t.kv_blocks_of(t.n_q_blocks - 1) == max(forward.values)  # launched last
    assert reverse.tail[0] == t.kv_blocks_of(0) == min(reverse.values)
    assert forward.values.tolist() == reverse.values.tolist() and forward.counts.tolist() == reverse.counts.tolist()
    assert reverse.longest_first and not forward.longest_first


def test_the_kept_works_fit_in_a_quarter_gibibyte():
    """The launch shapes' Works are kept for the time model; a long slider session once kept 16,384 of each, over a
    gigabyte. The largest of each kind times how many are kept stays under 256 MiB."""
    binned, flat = ramp_work(Tiling(1 << 24, 1 << 24, 64, 64, True), 64), uniform_work(1 << 20, 7)
    assert len(binned.values) == MAX_BINS  # the longest ramp: binned, its tail full

    def held(work):
        return work.values.nbytes + work.counts.nbytes + work.tail.nbytes

    kept = ramp_work.cache_info().maxsize * held(binned) + uniform_work.cache_info().maxsize * held(flat)
    assert kept <= 1 << 28


@pytest.mark.parametrize("seq,groups", [(4096 + 10, 8), (2**40, 2**40), (2**40, 2**23), (2**40, 2**39)])
def test_a_launchs_programs_and_steps_are_exact_python_ints(seq, groups):
    """int64 where they fit (the first), Python's ints where the counts (the second) or only their sum of products
    (the third: 2^24 programs a bin of J up to 2^36) pass 2^63; the fourth's counts are 2^63 each, which NumPy takes
    as uint64 (int64 wrapped them negative)."""
    t = Tiling(seq, seq, 16, 16, True)
    work = ramp_work(t, groups)
    values, counts = work.values.tolist(), work.counts.tolist()
    assert type(work.programs) is int and work.programs == sum(counts) == groups * t.n_q_blocks
    assert type(work.steps) is int and work.steps == sum(v * c for v, c in zip(values, counts))
    assert work.steps == groups * t.tiles or t.n_q_blocks > MAX_BINS  # unbinned: every visited tile
    assert min(counts) > 0 and not work.counts.flags.writeable  # kept per launch shape: read-only


def test_a_training_step_of_2_to_the_63_programs_counts_them_exactly():
    """flash1's backward at batch 2^40 x 2^23 heads: one program a head, 2^63 of them (it was -2^63, and the
    time with it, from a uint64 count cast to int64)."""
    r = gpusim.simulate("flash1", seq=4096, head_dim=64, batch=2**40, heads=2**23, backward=True)
    assert [k.programs for k in r.kernels] == [2**63, 2**63] and type(r.kernels[1].programs) is int
    assert 1e15 < r.predicted_time_s < 1e16


def hopper_launch_order(n_q, bh, lpt_heads):
    """kernels/hopper.py's _program, pid by pid, in Python: (Q block, problem) of each program in launch order."""
    g, order = max(lpt_heads, 1), []
    for pid in range(n_q * bh):
        group = pid // (n_q * g)
        heads = min(g, bh - group * g)
        r = pid - group * n_q * g
        order.append((n_q - 1 - r // heads, group * g + r % heads) if lpt_heads else (pid % n_q, pid // n_q))
    return order


@pytest.mark.parametrize("bh,lpt_heads", [(6, 4), (8, 4), (3, 4), (5, 1), (5, 0)])
def test_a_launchs_tail_is_the_kernels_launch_order_backwards(bh, lpt_heads):
    t = Tiling(3 * 64 + 10, 3 * 64 + 10, 64, 64, True)  # 4 Q blocks, J = 1, 2, 3, 4
    order = hopper_launch_order(t.n_q_blocks, bh, lpt_heads)
    assert sorted(order) == sorted((i, p) for i in range(t.n_q_blocks) for p in range(bh))  # each once
    work = ramp_work(t, bh, order=(max(lpt_heads, 1), lpt_heads > 0))
    assert list(work.tail) == [t.kv_blocks_of(i) for i, _ in reversed(order)]


def test_a_longest_first_launch_of_one_program_per_sm_is_list_scheduled(monkeypatch):
    """The Hopper kernel at d = 128, causal, groups of 4 heads, longest first, one program per SM (246 registers):
    its end is the last slot's when each program in the kernel's launch order takes the slot that frees first,
    computed here slot by slot (numpy's argmin), not by cost.list_schedule's heap."""
    r = gpusim.simulate("hopper", batch=1, heads=8, kv_heads=1, seq=3618, head_dim=128, causal=True, dtype="fp16",
                        gpu="H200-measured")
    grid, step = cost.schedule(r)
    assert (grid.resident, grid.slots, grid.programs) == (1, 132, 232) and cost.listed(grid)
    t = r.config.tiling
    free = np.zeros(grid.slots)
    for i, _ in hopper_launch_order(t.n_q_blocks, 8, 4):
        free[np.argmin(free)] += float(cost.tau(step, np.asarray([t.kv_blocks_of(i)]), 1, 1)[0])
    launch = r.config.pass_.launch_s(r.config, "hopper")
    assert r.predicted_time_s == pytest.approx(free.max() + launch, rel=1e-12)
    # the last-wave rule would price the last 100 programs (the shortest: Q blocks 0-24 of heads 4-7) as one wave
    # after the others, all starting when the first 132 end: 1.4x longer here
    monkeypatch.setattr(cost, "listed", lambda grid: False)
    assert cost.waves(step).predicted_time_s > 1.4 * r.predicted_time_s


def test_a_causal_dkdv_launch_is_list_scheduled_in_its_grids_order(monkeypatch):
    """flash2's dK/dV, causal, 16 query heads over 2 K/V heads, N = 16K, at 128 x 32 (one program per SM): the grid
    (K/V blocks, K/V heads) launches each head's blocks j = 0, 1, ..., the longest (j = 0 sees every Q block) first.
    Its end is the last slot's when each program in that order takes the slot that frees first, computed here slot by
    slot; the last-wave rule priced it 1.4x longer (measured: results/h200/dkdv_ramp.json, run 136)."""
    r = gpusim.simulate("flash2", batch=1, heads=16, kv_heads=2, seq=16384, head_dim=64, causal=True, dtype="fp16",
                        gpu="H200-measured", backward=True, backward_blocks=(128, 32))
    dkdv = next(k for k in r.kernels if k.name == "dkdv")
    grid, step = dkdv_schedule(r)
    assert (grid.resident, grid.slots, grid.programs) == (1, 132, 256) and cost.listed(grid)
    t = r.backward_config.kv_tiling
    steps = [r.backward_config.group * (t.n_q_blocks - j * t.block_kv // t.block_q) for j in range(t.n_kv_blocks)]
    free = np.zeros(grid.slots)
    for _head in range(2):
        for j in steps:
            free[np.argmin(free)] += float(cost.tau(step, np.asarray([j]), 1, 1)[0])
    launch = r.config.pass_.launch_s(r.config, "dkdv")
    assert dkdv.predicted_time_s == pytest.approx(free.max() + launch, rel=1e-12)
    monkeypatch.setattr(cost, "listed", lambda grid: False)
    assert cost.waves(step).predicted_time_s > 1.4 * dkdv.predicted_time_s
    full = gpusim.simulate("flash2", batch=1, heads=16, kv_heads=2, seq=16384, head_dim=64, dtype="fp16",
                           gpu="H200-measured", backward=True, backward_blocks=(128, 32))
    assert not dkdv_schedule(full)[0].work.longest_first  # every program alike: nothing to order


def test_a_longest_first_launch_of_several_programs_per_sm_is_list_scheduled_at_its_full_wave_taus():
    """cost.listed at b > 1: causal dK/dV at 32 x 32, d = 64, N = 1,024, five programs an SM (660 slots on 132 SMs),
    each problem's 32 programs launched longest first. 20 problems (640 programs) fill one wave; 21 (672) put 12
    programs past it, the last problem's shortest. The last-wave rule (one_slot_listed) took those for the last wave's
    longest and priced 672 programs 35% faster than 640; list-scheduled, each program holds its slot for its tau
    beside four others, and the launch costs more than 640's."""
    def launch(heads):
        r = gpusim.simulate("flash2", batch=1, heads=heads, seq=1024, head_dim=64, causal=True, dtype="fp16",
                            gpu="H100-measured", backward=True, backward_blocks=(32, 32))
        return next(k for k in r.kernels if k.name == "dkdv"), *dkdv_schedule(r)

    one, _, _ = launch(20)
    past, grid, step = launch(21)
    assert (grid.resident, grid.slots, one.programs, grid.programs) == (5, 660, 640, 672)
    assert grid.work.longest_first and cost.listed(grid)
    order = cost.tau(step, grid.work.tail[::-1], 5, 5)  # the launch order: each problem's longest first
    free = np.zeros(grid.slots)
    for t in order:  # every program is in the tail: the schedule is exact
        free[np.argmin(free)] += t
    launch_s = grid.cfg.pass_.launch_s(grid.cfg, "dkdv")
    assert len(order) == 672 and past.predicted_time_s == pytest.approx(free.max() + launch_s, rel=1e-12)
    assert past.predicted_time_s > one.predicted_time_s
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cost, "listed", lambda grid: False)  # the last-wave rule
        assert cost.wave_time(step)[0] < 0.7 * one.predicted_time_s


def test_a_launch_in_order_takes_the_last_wave_rule_and_a_longest_first_one_of_two_per_sm_the_list():
    kw = dict(batch=1, heads=8, kv_heads=1, seq=17177, causal=True, dtype="fp16", gpu="H200-measured")
    hopper, flash2 = gpusim.simulate("hopper", head_dim=64, **kw), gpusim.simulate("flash2", head_dim=128, **kw)
    for r, longest_first in ((hopper, True), (flash2, False)):
        grid, _ = cost.schedule(r)
        assert grid.programs > grid.slots and grid.work.longest_first == longest_first == cost.listed(grid)
    assert cost.schedule(hopper)[0].resident == 2


def dkdv_schedule(result):
    """cost.schedule of a training step's dK/dV launch: its Grid and Schedule."""
    dkdv = next(k for k in result.kernels if k.name == "dkdv")
    return cost.schedule(dataclasses.replace(result, kernels=(dkdv,)), result.backward_config)


def test_causal_costs_about_half_plus_the_diagonal():
    full, causal = (fa2("flash2", 8192, 64, block_q=64, block_kv=64, causal=c).predicted_time_s for c in (False, True))
    assert 0.5 < causal / full < 0.65  # half the tiles, the diagonal ones masked, the last wave longest


def test_naive_softmax_is_memory_bound():
    naive = gpusim.simulate("naive", seq=4096, head_dim=64, heads=32, batch=4, gpu=H200, block_q=128, block_kv=128)
    softmax = naive.kernels[1]
    assert softmax.name == "softmax" and softmax.flops_matmul == 0 and softmax.bound == "memory"
    floor = (softmax.dram_read_bytes + softmax.dram_write_bytes) / naive.config.gpu.hbm_bytes_per_s
    assert floor < softmax.predicted_time_s < 1.5 * floor


def test_hopper_overlap_beats_flash2_at_the_same_bytes():
    kw = dict(seq=8192, head_dim=128, heads=16, gpu=H200, block_q=128, block_kv=128)
    f2, hop = gpusim.simulate("flash2", **kw), gpusim.simulate("hopper", **kw)
    assert hop.hbm_bytes == f2.hbm_bytes and hop.kernels[0].overlap and not f2.kernels[0].overlap
    assert hop.predicted_time_s < f2.predicted_time_s
    assert gpusim.simulate("hopper", **kw, dtype="fp8").predicted_time_s < hop.predicted_time_s


def test_naive_at_128k_tokens_needs_32_gib_per_matrix_and_does_not_fit():
    r = gpusim.simulate("naive", seq=131072, head_dim=128, heads=2, gpu="H100-SXM")
    per_matrix_per_head = 131072**2 * 2
    assert per_matrix_per_head == 32 * 2**30
    assert r.hbm_peak_bytes > 2 * 2 * per_matrix_per_head and not r.fits_in_hbm
    assert gpusim.simulate("flash2", seq=131072, head_dim=128, heads=2, gpu="H100-SXM").fits_in_hbm


def test_the_predicted_speedup_is_not_flat_in_sequence_length():
    # the FlashAttention-2 benchmark shapes on the H200: at N = 512 naive attention's many short softmax rows
    # and small matmul launches cost it most (measured 4.64x at 512 against 3.09x at 4096, bench.json)
    def speedup(n):
        return fa2("naive", n, 64).predicted_time_s / fa2("flash2", n, 64).predicted_time_s
    assert speedup(512) > 1.3 * speedup(4096) > 1.3


def test_sweep_uses_the_flashattention2_benchmark_shapes():
    results = gpusim.sweep(("naive", "flash2"), (512, 8192), head_dim=128, gpu="A100-40GB")
    assert [(r.config.batch, r.config.heads) for r in results] == [(32, 16), (32, 16), (2, 16), (2, 16)]
    assert all(s > 1 for s in gpusim.speedups(results)["flash2"].values())


def test_speedup_skips_lengths_where_naive_runs_out_of_memory():
    results = gpusim.sweep(("naive", "flash2"), (4096, 65536), head_dim=64, gpu="T4")
    assert list(gpusim.speedups(results)["flash2"]) == [4096]


def test_each_spill_reload_of_a_step_waits_an_idle_l2_hit(monkeypatch):
    """flash1 at d = 64, causal, compiles spill reloads (LDL) into its step loop; one program alone is latency-bound,
    so its time is its chain, and taking the reloads out shortens it by steps x reloads x the idle L2 latency."""
    from gpusim import compiled
    kw = dict(seq=4096, head_dim=64, causal=True, gpu=H200)
    r = gpusim.simulate("flash1", **kw)
    cfg = r.config
    key = ("sm_90", "flash1", 64, "fp16", True, cfg.block_q, cfg.block_kv, 4, 1)
    registers, spill, shared, loops, issued = compiled.COMPILED[key]
    reloads = loops[-1][2]  # the step: flash1's last loop (gpusim/passes/flash1.py, issue)
    assert reloads > 0 and r.kernels[0].latency_bound
    work = cfg.pass_.work(cfg, "flash1")  # one program: batch 1, one head
    steps = work.steps
    no_reloads = loops[:-1] + (loops[-1][:2] + (0,) + loops[-1][3:],)  # the same bytes: only the waits go
    monkeypatch.setitem(compiled.COMPILED, key, (registers, spill, shared, no_reloads, issued))
    without = gpusim.simulate("flash1", **kw)
    gap = r.predicted_time_s - without.predicted_time_s
    assert gap == pytest.approx(steps * reloads * cfg.gpu.l2_idle_latency_s, rel=1e-9)


@pytest.mark.parametrize("causal", [False, True])
def test_a_lone_programs_set_up_adds_to_its_busy_time(monkeypatch, causal):
    """The Hopper kernel at d = 64, N = 2048, 8 x 32 heads, at its table's tiles (best_blocks picks 128 x 64
    non-causal here): 4,096 programs. Non-causal it is warp-specialized
    (12 warps, one block per SM): while a program sets up nothing else runs on its SM, so each of the 31 full waves and
    the last one grow by a longer set-up, even though the SM's units, not the program's chain, bound them: 32 times the
    longer set-up. Causal it is software-pipelined (its launch kind's set-up, LONE_SETUP_S: 4.4 us) and runs 2 blocks
    per SM, whose steps fill each other's set-up: a slot grows only where a program's chain, not the SM's units, bounds
    it (the short programs, whose chain the long set-up dominates), by the longer set-up, so the launch by less than
    one longer set-up a wave (4,096 programs over 264 slots: 16 waves)."""
    from gpusim.passes import hopper
    own = hopper.LAUNCHES[64, "fp16", causal]
    kw = dict(seq=2048, head_dim=64, heads=32, batch=8, causal=causal, gpu=H200, block_q=own["block_q"],
              block_kv=own["block_kv"])
    before = gpusim.simulate("hopper", **kw).kernels[0]
    assert before.blocks_per_sm == (2 if causal else 1)
    delta, kind = 0.1e-6, ("software-pipelined, causal" if causal else "warp-specialized", 64)
    monkeypatch.setitem(hopper.LONE_SETUP_S, kind, hopper.LONE_SETUP_S[kind] + delta)
    gap = gpusim.simulate("hopper", **kw).kernels[0].predicted_time_s - before.predicted_time_s
    if causal:
        assert 0 < gap < 16 * delta
    else:
        assert not before.latency_bound and gap == pytest.approx(32 * delta, rel=1e-9)


def test_flash1_issues_at_one_warp_per_schedulers_rate_however_many_are_resident(monkeypatch):
    """flash1 at d = 64 runs 4 warps a block: with one block per SM (one warp per scheduler) the per-warp line
    and flash1's flat rate agree; with two blocks per SM the line would double the issue rate, flash1's
    measured steps do not (gpusim/passes/flash1.py FLAT_ISSUE)."""
    from gpusim.passes.flash1 import Flash1 as flash1
    one = dict(seq=4096, head_dim=64, heads=32, batch=4, gpu=H200)  # 128 programs: one per SM
    two = dict(seq=512, head_dim=64, heads=32, batch=32, gpu=H200)  # 1,024 programs: two per SM
    flat = [gpusim.simulate("flash1", **kw).kernels[0] for kw in (one, two)]
    monkeypatch.setattr(flash1, "FLAT_ISSUE", ())
    line = [gpusim.simulate("flash1", **kw).kernels[0] for kw in (one, two)]
    assert [k.blocks_per_sm for k in flat] == [2, 2] and flat[0].predicted_time_s == line[0].predicted_time_s
    assert flat[1].predicted_time_s > 1.2 * line[1].predicted_time_s


def test_a_lone_program_with_one_warp_per_scheduler_issues_at_the_full_rate():
    """cost.full_issue (run 103: flash2's loop, one 4-warp program per SM, takes its matmuls plus its instructions at
    one a clock per scheduler): one such program per SM issues a step in 0.9 of the time two per SM take each (those at
    2 x ISSUE_HIDING = 0.9 of the full rate, the fitted line), where the line alone had it take twice theirs; the
    Hopper kernel, not measured so, keeps the line."""
    def issue(heads):
        grid, step = cost.schedule(gpusim.simulate("flash2", batch=1, heads=heads, seq=64, seq_kv=1024, head_dim=64,
                                                   dtype="fp16", gpu="H200-measured", tiles=gpusim.Tiles(64, 64)))
        return grid.resident, grid.res.num_warps, cost.unit_times(grid, step.rate)[0]["issue"]
    (b1, w1, lone), (b2, w2, shared) = issue(132), issue(264)
    assert (b1, w1, b2, w2) == (1, 4, 2, 4)
    assert lone / shared == pytest.approx(2 * 0.45)
    hopper = gpusim.simulate("hopper", batch=1, heads=132, seq=128, seq_kv=1024, head_dim=64, dtype="fp16",
                             gpu="H200-measured", tiles=gpusim.Tiles(128, 128, num_warps=4, num_stages=2,
                                                                     warp_specialize=False))
    grid, _ = cost.schedule(hopper)
    assert grid.res.num_warps == 4 and grid.resident == 1 and not cost.full_issue(grid)


def test_a_lone_program_with_two_warps_per_scheduler_issues_at_the_full_rate_but_not_on_32_rows():
    """cost.full_issue on 8 warps (runs 103 and 113: flash2's loop at 128 rows, one 8-warp program per SM, takes less
    than its matmuls plus its instructions at one a clock per scheduler): a step's issue alone on its SM equals that of
    two per SM (4 warps per scheduler, where the line saturates), where the line had 2 x 0.45; 32-row tiles on 4 warps
    (run 113: 1.7-1.9x that sum) keep the line, half the rate of two programs per SM."""
    def issue(block_q, block_kv, heads):
        grid, step = cost.schedule(gpusim.simulate(
            "flash2", batch=1, heads=heads, seq=block_q, seq_kv=16 * block_kv, head_dim=64, dtype="fp16",
            gpu="H200-measured", tiles=gpusim.Tiles(block_q, block_kv)))
        return grid.resident, grid.res.num_warps, cost.unit_times(grid, step.rate)[0]["issue"]
    (b1, w1, lone), (b2, w2, shared) = issue(128, 64, 132), issue(128, 64, 264)
    assert (b1, w1, b2, w2) == (1, 8, 2, 8) and lone == pytest.approx(shared)
    (b1, w1, lone), (b2, w2, shared) = issue(32, 64, 132), issue(32, 64, 264)
    assert (b1, w1, b2, w2) == (1, 4, 2, 4) and lone / shared == pytest.approx(0.9 / 0.45)


def test_a_four_warp_program_pipelined_s_deep_waits_one_round_over_s_minus_one_tiles_alone_or_beside_others(
        monkeypatch):
    """cost.lone_pipeline (lone_program.json, run 95: the cold lone steps at 3 and 4 stages) and cost.pipelined_beside
    (pipeline_beside.json, run 219): a 4-warp flash2 program of 64 rows, S > 2 stages deep, alone on its SM or beside
    others, takes max(compute, (compute + its loads) / (S - 1)) a step, and alone on 32 rows too (lone_stages.json,
    run 221); at 2 stages, or on 32 rows beside others, a step waits its compute and its whole load (8 warps: the next
    test); without pipelined_beside (before run 219), 64 rows beside others too."""
    def step(block_q, block_kv, stages, heads):
        grid, sched = cost.schedule(gpusim.simulate(
            "flash2", batch=1, heads=heads, seq=block_q, seq_kv=16 * block_kv, head_dim=64, dtype="fp16",
            gpu="H200-measured", tiles=gpusim.Tiles(block_q, block_kv, num_stages=stages)))
        return (grid.resident, grid.res.num_warps, sched.chain_s, sched.serial_s,
                cost.wait(grid.cfg.gpu, sched.step_bytes))
    for tile, stages, heads, resident in (((64, 64), 3, 132, 1), ((64, 64), 4, 132, 1), ((64, 64), 3, 264, 2),
                                          ((64, 64), 4, 396, 3), ((32, 64), 3, 132, 1), ((16, 32), 4, 132, 1)):
        b, warps, chain, serial, loads = step(*tile, stages, heads)
        assert (b, warps) == (resident, 4) and chain == max(serial, (serial + loads) / (stages - 1)) < serial + loads
    for tile, stages, heads, resident_warps in (((64, 64), 2, 132, (1, 4)), ((64, 64), 2, 264, (2, 4)),
                                                ((32, 64), 2, 132, (1, 4)), ((32, 64), 3, 264, (2, 4))):
        b, warps, chain, serial, loads = step(*tile, stages, heads)
        assert (b, warps) == resident_warps and chain == serial + loads
    monkeypatch.setattr(cost, "pipelined_beside", lambda grid: False)
    b, warps, chain, serial, loads = step(64, 64, 3, 264)
    assert (b, warps) == (2, 4) and chain == serial + loads


def test_a_lone_eight_warp_program_pipelined_s_deep_copies_its_tiles_at_the_measured_rate():
    """cost.lone_copy (lone_program.json, run 95: the cold lone steps of 128 rows at 3 and 4 stages): one 8-warp flash2
    program per SM, 16 rows per warp, S > 2 stages deep, takes the longer of its compute and its K and V tiles' bytes
    (2 x block_kv x d x 2 B in fp16) at GPU.lone_copy_bytes_per_s a step; at 2 stages, two programs per SM, 32 rows
    per warp, or on a preset that measured no such rate, it waits its compute and its whole load."""
    def step(block_q, block_kv, stages, heads, head_dim=64, gpu="H200-measured"):
        grid, sched = cost.schedule(gpusim.simulate(
            "flash2", batch=1, heads=heads, seq=block_q, seq_kv=16 * block_kv, head_dim=head_dim, dtype="fp16",
            gpu=gpu, tiles=gpusim.Tiles(block_q, block_kv, num_stages=stages)))
        return (grid.resident, grid.res.num_warps, sched.chain_s, sched.serial_s,
                cost.wait(grid.cfg.gpu, sched.step_bytes))
    rate = 1.883e10  # lone_program.json's median, as benchmarks/h200_constants.py derives it
    for head_dim, block_kv, depths in ((64, 64, (3, 4)), (64, 128, (3, 4)), (128, 64, (3, 4)), (128, 128, (3,))):
        for stages in depths:  # 128 x 128 at d = 128 holds no fourth stage in shared memory
            b, warps, chain, serial, loads = step(128, block_kv, stages, 132, head_dim)
            copy = 2 * block_kv * head_dim * 2 / rate
            assert (b, warps) == (1, 8) and chain == pytest.approx(max(serial, copy), rel=1e-12) and copy > serial
            assert chain < serial + loads
    for tile, stages, heads, resident_warps, gpu in (((128, 64), 2, 132, (1, 8), "H200-measured"),
                                                    ((128, 64), 3, 264, (2, 8), "H200-measured"),
                                                    ((256, 64), 3, 132, (1, 8), "H200-measured"),
                                                    ((128, 64), 3, 132, (1, 8), "H100-SXM")):
        b, warps, chain, serial, loads = step(*tile, stages, heads, gpu=gpu)
        assert (b, warps) == resident_warps and chain == serial + loads


def test_a_flash2_program_copies_its_own_q_and_o_tiles_at_one_programs_rate():
    """cost.own_copy (program_start.json, run 118): a flash2 program waits, besides its steps, for the latency of the
    level its Q tile comes from and then for every byte of its own tiles, Q's read and O's and LSE's written
    (block_q x d x 2 B twice, block_q x 4 B, fp16), at GPU.lone_copy_bytes_per_s, whatever the residency; without
    the rule, or on a preset that measured no such rate, it waits for Q alone at the port's rate."""
    def waited(block_q, block_kv, head_dim, heads, gpu="H200-measured"):
        grid, sched = cost.schedule(gpusim.simulate(
            "flash2", batch=1, heads=heads, seq=block_q, seq_kv=4 * block_kv, head_dim=head_dim, dtype="fp16",
            gpu=gpu, tiles=gpusim.Tiles(block_q, block_kv)))
        return grid, sched, cost.first_loads(sched, 4) - sched.setup_s
    rate = 1.883e10  # lone_program.json's median (test_a_lone_eight_warp_program_...)
    for block_q, block_kv, head_dim, heads, resident in ((128, 128, 64, 132, 1), (128, 64, 128, 2112, 1),
                                                         (64, 32, 64, 2112, 5), (64, 64, 128, 264, 2)):
        grid, sched, wait = waited(block_q, block_kv, head_dim, heads)
        assert grid.resident == resident and cost.own_copy(grid)
        q = o = block_q * head_dim * 2
        assert (sched.fixed_bytes[0], sched.fixed_bytes[2]) == (q + o + block_q * 4, q)  # SM bytes; of them read
        gpu = grid.cfg.gpu
        miss = sched.fixed_bytes[3] / sched.fixed_bytes[2]
        assert wait == pytest.approx(cost.latency(gpu, miss) + (q + o + block_q * 4) / rate, rel=1e-12)
        assert wait > cost.wait(gpu, sched.fixed_bytes)  # the port-rate wait for Q alone, before
    grid, sched, wait = waited(128, 128, 64, 132, gpu="H100-SXM")
    assert not cost.own_copy(grid) and wait == cost.wait(grid.cfg.gpu, sched.fixed_bytes)


def test_dram_streams_reads_alone_faster_than_a_copys_mix():
    """H200-measured: the read plateau (bandwidth.json) for reads alone, the copy's rate from half writes up,
    the line between them below; a preset that measured no read plateau prices everything at the copy's."""
    gpu = gpusim.get_gpu("H200-measured")
    read, copy = gpu.hbm_read_bytes_per_s, gpu.hbm_bytes_per_s
    assert read > copy
    assert gpu.dram_bytes_per_s(0.0) == read
    assert gpu.dram_bytes_per_s(0.25) == pytest.approx((read + copy) / 2)
    assert gpu.dram_bytes_per_s(0.5) == gpu.dram_bytes_per_s(1.0) == copy
    a100 = gpusim.get_gpu("A100-40GB")
    assert a100.hbm_read_bytes_per_s is None and a100.dram_bytes_per_s(0.0) == a100.hbm_bytes_per_s


def test_a_read_only_decode_is_priced_at_the_read_plateau():
    """Decoding's split kernel at 128K tokens moves K and V once and writes little: its memory-bound time
    follows the read plateau, so pricing DRAM at the copy's rate instead makes it slower by about their ratio."""
    shape = dict(batch=1, heads=32, kv_heads=8, head_dim=128, seq_kv=131072, page_size=16)
    measured = gpusim.get_gpu("H200-measured")
    copy_only = dataclasses.replace(measured, name="copy only", hbm_read_bytes_per_s=None)
    t_read, t_copy = (sum(k.predicted_time_s for k in gpusim.simulate("split_kv", **shape, gpu=g).kernels
                          if k.name == "split_kv") for g in (measured, copy_only))
    ratio = measured.hbm_read_bytes_per_s / measured.hbm_bytes_per_s
    assert t_copy / t_read == pytest.approx(ratio, rel=0.03)


@pytest.mark.parametrize("head_dim, dtype, causal", [(d, t, c) for d in (64, 128) for t in ("fp16", "bf16", "fp8")
                                                     for c in (False, True)])
def test_hopper_is_priced_at_the_tiles_its_kernel_runs_when_given_none(head_dim, dtype, causal):
    """kernels/hopper.py runs its launch table's tiles, not best_blocks' (they differ at d = 64, non-causal,
    2K tokens: 128 x 128 against 128 x 64), so simulate's default is the table's."""
    from gpusim.passes.hopper import LAUNCHES
    shape = dict(seq=2048, head_dim=head_dim, heads=2048 // head_dim, batch=8, causal=causal, dtype=dtype,
                 gpu="H200-measured")
    own, cfg = LAUNCHES[head_dim, dtype, causal], gpusim.simulate("hopper", **shape).config
    assert (cfg.block_q, cfg.block_kv) == (own["block_q"], own["block_kv"])
    if (head_dim, dtype, causal) == (64, "fp16", False):
        assert gpusim.best_blocks("hopper", **shape) == (128, 64)


def test_a_ragged_decode_batch_is_not_priced_as_all_longest_requests():
    """Issue 24: in one wave, a short request's programs finish early and free their bandwidth share, so a
    batch of one long and one short cache costs about the long one's bytes, not twice them."""
    run = lambda lengths: gpusim.simulate("split_kv", batch=len(lengths), heads=32, kv_heads=8, head_dim=128,  # noqa: E731
                                          seq_kv=lengths, page_size=16, num_splits=32, gpu="H200-measured")
    ragged, both_long = run([131072, 1024]), run([131072, 131072])
    assert ragged.predicted_time_s < 0.8 * both_long.predicted_time_s  # 0.99 before (issue 24)
    assert ragged.hbm_bytes < 0.51 * both_long.hbm_bytes


def test_a_short_training_step_costs_at_least_its_host_time():
    gpu = gpusim.get_gpu("H200-measured")
    step = gpusim.simulate("flash2", seq=256, heads=4, batch=1, head_dim=64, gpu=gpu, backward=True)
    assert sum(k.predicted_time_s for k in step.kernels) < gpu.train_step_host_s
    assert step.predicted_time_s == gpu.train_step_host_s
    forward = gpusim.simulate("flash2", seq=256, heads=4, batch=1, head_dim=64, gpu=gpu)
    assert forward.predicted_time_s < gpu.train_step_host_s  # a forward alone has no such floor


def test_naive_rows_not_a_multiple_of_16_lie_a_multiple_of_16_apart():
    """N_kv = 1016: S's and P's rows lie 1024 elements apart (kernels/naive.py), so the compiled kernels are the
    aligned ones (16-byte loads and stores: the same instructions as at N = 1008, where rows 1016 apart compiled
    to 1028, 176 and 554 in qk, the softmax and pv's loop), and 1024 columns a row move: between N = 1008 and 1024
    in time."""
    kw = dict(batch=4, heads=32, head_dim=64, block_q=128, block_kv=128, dtype="fp16", gpu=H200)
    runs = {n: gpusim.simulate("naive", seq=n, **kw) for n in (1008, 1016, 1024)}
    issued = {}
    for n in (1008, 1016):
        for k in runs[n].config.kernels:
            res = resources(runs[n].config, k)
            issued[n, k] = res.loops[0][0] if res.loops else res.issued[0]
    assert issued == {(1008, "qk"): 444, (1008, "softmax"): 160, (1008, "pv"): 162,
                      (1016, "qk"): 444, (1016, "softmax"): 160, (1016, "pv"): 162}
    assert runs[1016].counts[("qk", "S")] == (0, 4 * 32 * 1016 * 1024 * 2)
    assert runs[1016].counts[("pv", "P")] == (4 * 32 * 1016 * 1024 * 2, 0)
    assert runs[1008].predicted_time_s < runs[1016].predicted_time_s <= runs[1024].predicted_time_s


def test_a_wave_spread_unevenly_prices_its_longest_on_the_sms_holding_a_program_fewer_too():
    """cost.last_longest: flash2 at 32 x 32, d = 64, J = 16, 2 stages (pipelined by neither cost.lone_pipeline nor
    cost.pipelined_beside), one Q block per program. 132 programs hold one an SM; 136 put two on 4 SMs and leave 128
    alone, whose Schedule is a lone program's (its chain's issue unhidden by a neighbour's warps, its first loads too):
    the launch is priced on both and the slower counts, so it takes no less than 132's. Priced on the fuller SMs alone
    (report_history.even_waves, the rule before), it took 6% less."""
    def launch(programs):
        r = gpusim.simulate("flash2", batch=1, heads=programs, seq=32, seq_kv=16 * 32, head_dim=64, dtype="fp16",
                            gpu="H100-measured", tiles=gpusim.Tiles(32, 32, num_stages=2))
        return r.predicted_time_s, *cost.schedule(r)

    alone, _, _ = launch(132)
    time, grid, step = launch(136)
    assert grid.resident == 2 and grid.programs == 136
    lone = cost.one_step(dataclasses.replace(grid, resident=1, slots=132), step.rate)
    sharing = cost.wave_sharing(step, grid.work.tail[:136], 136)
    launch_s = grid.cfg.pass_.launch_s(grid.cfg, grid.kernel)
    fuller, fewer = (float(cost.tau(s, np.asarray([16]), sharing, k)[0]) for s, k in ((step, 2), (lone, 1)))
    assert fewer > 1.05 * fuller  # at this tile the lone program is the slower
    assert time == pytest.approx(fewer + launch_s, rel=1e-12) and time >= alone
    assert fuller + launch_s < 0.95 * alone


def test_a_last_wave_of_fewer_programs_than_slots_shares_each_sm_among_fewer():
    """cost.last_per_sm (last_wave.json, run 121): flash2 at 64 x 64, d = 64, holds b = 4 programs per SM; with 132 x m
    alike programs of J = 16 steps, m = 5, 6, 7 leave a last wave of k = 1, 2, 3 per SM. The waves before it are priced
    as before (one full wave, tau_b; the last wave's programs counted once, cost.before_last); the last wave lasts one
    program whose SM's units serve k programs at a bandwidth share of k, on a Schedule of its own made at k an SM
    (cost.fullest, last_alone.json, run 221: alone, a lone program's pipeline and issue rate), and alone (k = 1)
    nothing hides its first loads: busy_k = max(k m1, k c1) + contention x min(k m1, k c1) (m1, c1: one program's
    bytes over the SM's rates, its compute), its slot max(chain, busy_k + first loads if k = 1). Derived here from
    each launch's Schedule's parts."""
    def launch(m):
        r = gpusim.simulate("flash2", batch=1, heads=132 * m, seq=64, seq_kv=16 * 64, head_dim=64, dtype="fp16",
                            gpu="H200-measured", tiles=gpusim.Tiles(64, 64))
        return r.predicted_time_s, *cost.schedule(r)

    def slot(step, sharing, k, j=16):
        rate = step.rate
        m1 = max((step.fixed_bytes[0] + j * step.step_bytes[0]) / rate["l2"],
                 (step.fixed_bytes[1] + j * step.step_bytes[1]) / rate["dram"])
        c1 = step.fixed_compute_s + j * step.overlapped_s
        busy = max(sharing * m1, k * c1) + cost.CONTENTION * min(sharing * m1, k * c1)
        return max(cost.chain(step, j), busy + (k == 1) * cost.first_loads(step, j))
    full, grid, step = launch(4)
    assert grid.resident == 4 and grid.slots == 528
    launch_s = full - slot(step, 4, 4)
    wave = launch(8)[0] - full
    for k in (1, 2, 3, 4):
        time, grid, step = launch(4 + k)
        assert cost.last_per_sm(grid, 132 * k) == k
        held = cost.one_step(dataclasses.replace(grid, resident=k, slots=132 * k), step.rate) if k < 4 else step
        expected = slot(step, 4, 4) + slot(held, k, k) + launch_s
        assert time == pytest.approx(expected, rel=1e-12)
        assert time - full < 0.9 * wave if k < 4 else time - full == pytest.approx(wave, rel=1e-12)
    assert cost.last_per_sm(grid, 100) == 1 and cost.last_per_sm(grid, 133) == 2 and cost.last_per_sm(grid, 600) == 4


def test_a_steps_dots_multiply_whole_tiles_at_a_ragged_edge():
    """cost.dot_padding (ragged_tiles.json, run 122): tl.dot multiplies whole block_q x block_kv tiles, the rows and
    keys past N and N_kv masked. flash2 at 128 x 128, d = 64, N = 404: each step's dots are Q K^T and P V on one whole
    tile, 2 x 2 d Br Bc FLOPs, as at N = 512, though the counted FLOPs (4 d N N_kv) are 0.62 of those. The backward at
    Br = 64, Bc = 128, causal, GQA 8 / 2: a dK/dV step (its K/V block's 128 rows against a Q block's 64) makes S, dP,
    dV += P^T dO and dK += dS^T Q, 4 x 2 d 128 64; a dQ step S, dP and dQ += dS K, 3 x 2 d 64 128."""
    def mma(cfg, kernel, flops):
        grid = cost.occupied(cfg, kernel, {}, {}, flops)
        rate = cost.rates(grid)
        return cost.unit_times(grid, rate)[0]["mma"] * rate["tensor"] * cost.pipe(grid)  # at mma_efficiency's rate
    for seq in (404, 512):
        r = gpusim.simulate("flash2", batch=1, heads=8, seq=seq, head_dim=64, dtype="fp16", gpu="H200-measured",
                            tiles=gpusim.Tiles(128, 128))
        assert r.kernels[0].flops_matmul == 4 * 64 * seq * seq * 8
        assert mma(r.config, "flash2", (r.kernels[0].flops_matmul, 0, 0)) == pytest.approx(4 * 64 * 128 * 128,
                                                                                           rel=1e-12)
    bwd = backward.config("flash2", seq=404, head_dim=64, heads=8, kv_heads=2, block_q=64, block_kv=128, causal=True,
                          gpu="H200-measured")
    flops = bwd.pass_.flops(bwd)
    assert mma(bwd, "dkdv", flops["dkdv"]) == pytest.approx(8 * 64 * 128 * 64, rel=1e-12)
    assert mma(bwd, "dq", flops["dq"]) == pytest.approx(6 * 64 * 64 * 128, rel=1e-12)


def test_dkdv_is_timed_as_nsight_measures_it():
    """cost.measured (bwd_rates.json, run 128): flash2's dK/dV at d = 64, 64 x 64, fp16, 2 x 16 heads of 8K (two
    programs of 4 warps per SM: 2 warps per scheduler): its dots at the tensor pipe's rate, 1.113x mma_efficiency's at
    block_kv = 64; its instructions 1.184x those counted, at 0.261 a warp (2 x 0.261 = 0.522 of the full rate, where
    ISSUE_HIDING's line gives 2 x 0.45 = 0.9); its loads off its chain (prefetched). dQ and the forward keep the fitted
    line, mma_efficiency's rate and their loads on the chain."""
    cfg = backward.config("flash2", seq=8192, head_dim=64, heads=16, batch=2, block_q=64, block_kv=64,
                          gpu="H200-measured")
    result = gpusim.simulate("flash2", seq=8192, head_dim=64, heads=16, batch=2, backward=True,
                             backward_blocks=(64, 64), gpu="H200-measured")

    def parts(kernel):
        k = next(k for k in result.kernels if k.name == kernel)
        grid = cost.occupied(cfg, kernel, {t: rw for (n, t), rw in result.counts.items() if n == kernel},
                             {t: rw for (n, t), rw in result.dram.items() if n == kernel},
                             (k.flops_matmul, k.flops_other, k.exps))
        rate = cost.rates(grid)
        unit, _, _ = cost.unit_times(grid, rate)
        counted = cfg.pass_.issue(cfg, kernel, grid.res, k.flops_other, k.exps, grid.steps, grid.programs)[0]
        return grid, rate, unit, counted, cost.one_step(grid, rate).prefetched
    grid, rate, unit, counted, prefetched = parts("dkdv")
    assert grid.resident == 2 and grid.res.num_warps == 4 and prefetched and cost.pipe(grid) == 1.113
    flops = grid.flops[0] / grid.steps
    assert unit["mma"] == pytest.approx(flops / rate["tensor"] / 1.113, rel=1e-12)
    assert unit["issue"] == pytest.approx(counted * 1.184 * 4 / rate["issue"] / (2 * 0.261), rel=1e-12)
    grid, rate, unit, counted, prefetched = parts("dq")
    assert not prefetched and cost.pipe(grid) == 1.0 and unit["mma"] == pytest.approx(grid.flops[0] / grid.steps
                                                                                      / rate["tensor"], rel=1e-12)


@pytest.mark.parametrize("gpu", ["H200-measured", "H100-measured", "H200", "A100-80GB"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_no_kernel_runs_faster_than_its_own_matmuls_at_the_peak(gpu, dtype):
    """A kernel's predicted time is at least its matmul time (its FLOPs at the matmul peak, mma_efficiency's): fp32's
    dK/dV on the measured presets was priced 2% under it, the tensor pipe's ratio (measured in fp16) applied to the
    CUDA cores' fp32 rate."""
    for algo in ("flash2", "naive", "flash1"):
        for causal in (False, True):
            r = gpusim.simulate(algo, seq=16384, head_dim=128, heads=16, dtype=dtype, causal=causal, gpu=gpu,
                                backward=algo != "flash1")
            assert all(k.predicted_time_s >= k.matmul_time_s for k in r.kernels), (algo, causal, [
                (k.name, k.predicted_time_s, k.matmul_time_s) for k in r.kernels])


def test_busy_fraction_is_at_most_one():
    """A grid that fills every slot: the programs' time over the slots' summed in floats came to 1 + 7e-15."""
    r = gpusim.simulate("flash1", seq=131072, head_dim=32, heads=32, kv_heads=8, batch=8, seq_kv=17, causal=True,
                        backward=True, block_q=214, block_kv=16, gpu="RTX-4090")
    assert max(k.busy_fraction for k in r.kernels) == 1.0
