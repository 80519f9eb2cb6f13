"""Planted bugs, and the test that catches each: docs/testing.md's table, checked.

    python -m benchmarks.mutants            # copies the tree aside, plants each bug, runs its test alone
    python -m benchmarks.mutants --markdown  # the same, printed as docs/testing.md's table

Each bug is one text replacement in one file (the text occurs exactly once there) that changes results for
ordinary inputs; the named test must fail with it and pass without it. Each test pins an exact value from
a computation of its own (a hand derivation, tests/brute.py's tile loop, or a loop in the test), not one
read from the code under test.
"""
import argparse
import shutil
import subprocess
import sys
import tempfile
from collections import namedtuple
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
Mutant = namedtuple("Mutant", "area bug file text replacement test")
PINS = "tests/test_pins.py::"
DK = "tests/test_decode_kernels.py::"
KEPT_C_LAUNCH = "tests/test_launch_kernels.py::test_a_cuda_launch_kept_calls_the_c_launcher_as_tritons_runner_would"
MUTANTS = [
    # counts
    Mutant("counts", "drop the LSE writes", "gpusim/passes/flash2.py",
           '(kernel, "LSE"): (0, cfg.seq * STATS_BYTES),', '(kernel, "LSE"): (0, 0),',
           "tests/test_counts.py::test_closed_forms_equal_an_independent_tile_loop"),
    Mutant("counts", "skip one causal tile too many (round the diagonal's last block down)", "gpusim/tiling.py",
           "c = br + self.offset + bc - 1", "c = br + self.offset - 1",
           "tests/test_counts.py::test_closed_forms_equal_an_independent_tile_loop"),
    Mutant("counts", "read K/V once per GQA group in flash2, whose programs re-read them per query head",
           "gpusim/passes/flash2.py", '(kernel, "K"): (t.keys_read * d * e, 0),',
           '(kernel, "K"): (t.keys_read * d * e // cfg.group, 0),',
           "tests/test_counts.py::test_closed_forms_equal_an_independent_tile_loop"),
    Mutant("counts", "count flash1's O in the dtype instead of its fp32 accumulator", "gpusim/passes/flash1.py",
           'TENSOR_BYTES = {"O": STATS_BYTES}', "TENSOR_BYTES = {}",
           "tests/test_counts.py::test_closed_forms_equal_an_independent_tile_loop"),
    Mutant("counts", "a K/V block is whole to a Q block only when its first row sees past the block's end",
           "gpusim/tiling.py", "(i * self.block_q + self.offset + 1) // self.block_kv)",
           "(i * self.block_q + self.offset) // self.block_kv)",
           "tests/test_counts.py::test_unmasked_blocks_are_the_blocks_every_row_sees_whole"),
    # backward
    Mutant("backward", "dK/dV programs find their first Q block by the wrong block size (causal)",
           "gpusim/passes/backward_base.py", "row // tiling.block_q, tr)", "row // tiling.block_kv, tr)",
           PINS + "test_flash2_dkdv_steps_under_gqa_and_a_causal_mask"),
    Mutant("backward", "dK/dV programs take one step per Q block, not one per query head of their group",
           "gpusim/passes/flash2_backward.py", "cfg.batch * cfg.kv_heads, cfg.group)", "cfg.batch * cfg.kv_heads, 1)",
           PINS + "test_flash2_dkdv_steps_under_gqa_and_a_causal_mask"),
    Mutant("backward", "the dK/dV kernel reads K once per query head under GQA", "gpusim/passes/flash2_backward.py",
           '("dkdv", "K"): (seen2 * d * e, 0)', '("dkdv", "K"): (seen2 * d * e * cfg.group, 0)',
           PINS + "test_flash2_backward_reads_k_and_v_once_per_kv_head"),
    Mutant("backward", "flash2's dq kernel recomputes S but not dP", "gpusim/passes/flash2_backward.py",
           '"dq": (6 * d * te,', '"dq": (4 * d * te,', PINS + "test_backward_matmul_flops_by_the_papers_count"),
    Mutant("backward", "training memory counts the running layer's saved tensors twice", "gpusim/backward.py",
           "peak = layers * saved + cfg.pass_.peak_bytes(cfg) - saved",
           "peak = layers * saved + cfg.pass_.peak_bytes(cfg)", PINS + "test_training_memory_plan_by_hand"),
    Mutant("backward", "training memory forgets flash2's D", "gpusim/passes/flash2_backward.py",
           '| {"D": cfg.bh * cfg.seq * STATS_BYTES}', "| {}", PINS + "test_training_memory_plan_by_hand"),
    # decode
    Mutant("decode", "the model's reduce forgets to rescale what it holds when a later step of splits has a larger max",
           "gpusim/passes/split_kv.py", "acc * alpha + w @ o_s", "acc + w @ o_s",
           "tests/test_passes.py::test_the_decode_reduce_merges_past_64_splits_in_steps_and_returns_the_lse"),
    Mutant("decode", "a program's query rows leave out the rows per head (seq)", "gpusim/shape.py",
           "return (self.group if self.grouped else 1) * self.seq", "return self.group if self.grouped else 1",
           PINS + "test_decode_with_several_query_rows_by_hand"),
    Mutant("decode", "the split kernel reads one query row per head", "gpusim/passes/split_kv.py",
           "rows = L.heads * L.seq  # query rows per request", "rows = L.heads  # query rows per request",
           PINS + "test_decode_with_several_query_rows_by_hand"),
    Mutant("decode", "Q's first touch leaves out the rows per head", "gpusim/passes/split_kv.py",
           '"Q": launch.batch * launch.heads * launch.seq * launch.head_dim',
           '"Q": launch.batch * launch.heads * launch.head_dim',
           PINS + "test_decode_with_several_query_rows_by_hand"),
    Mutant("decode", "a split boundary inside a page reads its block-table entry once", "gpusim/passes/split_kv.py",
           "return pages + boundaries - boundaries // period", "return pages + boundaries // period",
           PINS + "test_the_block_table_entry_at_a_split_boundary_is_read_by_both_splits"),
    Mutant("decode", "a reduce program's chain issues at the SM's rate, its neighbours' warps counted", "gpusim/cost.py",
           "    return issue_rate(grid, grid.res.num_warps / ISSUE_PER_CLOCK)  # its own warps, no other program's",
           "    return sm_hiding(grid)",
           "tests/test_decode.py::test_two_reduce_programs_on_an_sm_do_not_shorten_each_others_chain"),
    Mutant("decode", "a lone paged split program waits for its block table besides its copy", "gpusim/cost.py",
           "addresses = () if kernel in pass_.LONE_COPY else addresses",
           "addresses = addresses",
           "tests/test_decode.py::test_a_lone_paged_split_program_steps_at_one_programs_copy_rate_whatever_its_tile"),
    Mutant("decode", "a lone unsplit program over pages waits for its whole load", "gpusim/passes/split_kv.py",
           'LONE_COPY = ("decode", "split_kv")', 'LONE_COPY = ("split_kv",)',
           "tests/test_decode.py::test_a_lone_unsplit_program_over_pages_steps_as_a_lone_split_one"),
    Mutant("decode", "the reduce's compiled resources looked up under the split kernel's tile",
           "gpusim/passes/split_kv.py", 'return (REDUCE_ROWS, launch.block_kv) if kernel == "reduce" else',
           'return (launch.block_q, launch.block_kv) if kernel == "reduce" else',
           "tests/test_decode.py::test_the_reduce_is_priced_with_its_own_compiled_kernel_at_any_query_rows_and_chunk"),
    Mutant("decode", "the reduce's launch takes PDL's saving on GPUs without PDL", "gpusim/passes/split_kv.py",
           'pdl = kernel == "reduce" and int(launch.gpu.arch.removeprefix("sm_")) >= 90', 'pdl = kernel == "reduce"',
           "tests/test_results.py::test_pdl_hidden_s_is_the_median_saving_of_decode_splits_json_pdl_pairs"),
    Mutant("decode", "peak memory counts the split workspace's partial O but not its LSE", "gpusim/passes/split_kv.py",
           "partials = L.num_splits * rows * (d + 1) * f if", "partials = L.num_splits * rows * d * f if",
           "tests/test_decode.py::test_paged_decode_peak_memory_by_hand"),
    Mutant("decode", "peak memory leaves out the paged cache's block table", "gpusim/passes/split_kv.py",
           " + L.batch * int(pages.max()) * INDEX_BYTES", "",
           "tests/test_decode.py::test_paged_decode_peak_memory_by_hand"),
    Mutant("decode", "fp8 decoding writes O in fp8, not fp16", "gpusim/shape.py",
           'return DTYPE_BYTES["fp16"] if self.dtype == "fp8" else self.itemsize', "return self.itemsize",
           "tests/test_decode.py::test_fp8_decode_writes_o_in_fp16_and_reads_its_inputs_at_one_byte"),
    Mutant("decode", "a preempted request queues behind those already waiting", "gpusim/kvcache.py",
           "waiting.appendleft(job)", "waiting.append(job)",
           "tests/test_kvcache.py::test_a_preempted_request_resumes_before_one_that_was_already_waiting"),
    Mutant("context", "a context-parallel merge reads the step's O at fp32's 4 bytes, not the dtype's",
           "gpusim/context.py", "(n * head_dim * (4 + itemsize), n * head_dim * 4)", "(n * head_dim * 4, n * head_dim * 4)",
           "tests/test_context_model.py::test_ring_merge_bytes_by_hand"),
    Mutant("context", "a context-parallel merge reads one LSE, not the running one and the step's", "gpusim/context.py",
           '"LSE_partial": (2 * n * STATS_BYTES, n * STATS_BYTES)', '"LSE_partial": (n * STATS_BYTES, n * STATS_BYTES)',
           "tests/test_context_model.py::test_zigzag_merge_bytes_by_hand"),
    # hopper
    Mutant("hopper", "the Hopper kernel stages one K/V buffer", "gpusim/passes/hopper.py",
           "KV_BUFFERS = 2", "KV_BUFFERS = 1", PINS + "test_hopper_stages_two_kv_buffers"),
    Mutant("hopper", "the prescaled scores still pay their multiply", "gpusim/passes/hopper.py",
           "other -= bh * t.tile_elements", "other -= bh * t.tiles", PINS + "test_hopper_flops_by_hand"),
    Mutant("hopper", "a warp-specialized block has two warp groups", "gpusim/passes/hopper.py",
           "return num_warps * (3 if", "return num_warps * (2 if",
           PINS + "test_hopper_warp_specialized_block_has_a_producer_and_two_consumers"),
    Mutant("hopper", "the rotated loop counts as a second instruction stream", "gpusim/passes/hopper.py",
           'return 2 if launch_options(cfg)["warp_specialize"] else 1',
           'return 2 if launch_options(cfg)["warp_specialize"] or launch_options(cfg)["overlap"] else 1',
           PINS + "test_the_rotated_hopper_loop_is_one_instruction_stream"),
    Mutant("hopper", "causal Hopper launches keep the Q blocks in order", "gpusim/passes/hopper.py",
           "return max(1, lpt), lpt > 0", "return max(1, lpt), False",
           PINS + "test_hopper_causal_launches_its_longest_programs_first"),
    # L2
    Mutant("L2", "make the L2 model ignore its capacity", "gpusim/l2.py",
           "fits = math.ceil(heads * cfg.kv_heads / cfg.heads) * len(reread) * kv_head <= l2", "fits = True",
           "tests/test_l2.py::test_one_heads_kv_larger_than_l2_is_streamed_once_per_wave"),
    Mutant("L2", "K's first touch counts every query head under GQA", "gpusim/l2.py",
           '"K": cfg.batch * cfg.kv_heads * kv_head,', '"K": cfg.bh * kv_head,',
           PINS + "test_gqa_reads_each_kv_head_once_from_dram"),
    Mutant("L2", "Q's first touch counts one head per batch", "gpusim/l2.py",
           '"Q": cfg.bh * cfg.seq * d * e,', '"Q": cfg.batch * cfg.seq * d * e,',
           PINS + "test_gqa_reads_each_kv_head_once_from_dram"),
    Mutant("L2", "the L2's recent traffic is all writes", "gpusim/l2.py",
           "written / (written + dram_reads)", "written / written", PINS + "test_the_l2_holds_a_kernels_last_writes_dirty"),
    Mutant("L2", "the whole L2 may end dirty", "gpusim/l2.py",
           "recent, int(L2_DIRTY_FRACTION * l2_bytes))", "recent)", PINS + "test_the_l2_holds_a_kernels_last_writes_dirty"),
    Mutant("L2", "an L2 of two partitions holds a line every SM reads once", "gpusim/hardware.py",
           "(p if every_sm else 1 + (p - 1) / p)", "(1 if every_sm else 1 + (p - 1) / p)",
           "tests/test_l2.py::test_one_heads_kv_past_half_the_h200_l2_is_read_once_per_wave"),
    Mutant("L2", "causal Q blocks in order re-read K/V every wave", "gpusim/l2.py",
           "waves = (waves + 1) / 2 if longest_first else 1", "waves = (waves + 1) / 2",
           "tests/test_l2.py::test_causal_q_blocks_in_order_read_kv_once_even_past_the_l2"),
    Mutant("L2", "the blocks in flight are those the model's staged tiles allow", "gpusim/l2.py",
           "occupancy(cfg.gpu, resources(cfg, kernel)).blocks_per_sm",
           "cfg.gpu.sram_bytes_per_sm // max(1, cfg.sram_bytes(kernel))",
           "tests/test_l2.py::test_one_heads_kv_past_half_the_h200_l2_is_read_once_per_wave"),
    Mutant("backward", "the backward's re-reads past the L2 all miss", "gpusim/passes/backward_base.py",
           "return {t: min(r, first[t] * waves) for t, r in sm_reads.items()}", "return dict(sm_reads)",
           "tests/test_l2.py::test_backward_programs_running_together_share_reads_past_the_l2"),
    # occupancy
    Mutant("occupancy", "allocate registers per SM, not per sub-partition", "gpusim/occupancy.py",
           "warps_by_registers = (gpu.registers_per_sm // SUB_PARTITIONS // per_warp) * SUB_PARTITIONS",
           "warps_by_registers = gpu.registers_per_sm // per_warp",
           "tests/test_occupancy.py::test_the_best_practices_guide_example"),
    Mutant("occupancy", "allocate registers in units of 32, not 256", "gpusim/occupancy.py",
           "REGISTER_ALLOCATION_UNIT = 256", "REGISTER_ALLOCATION_UNIT = 32",
           "tests/test_occupancy.py::test_the_best_practices_guide_example"),
    Mutant("occupancy", "forget the 1 KiB of shared memory reserved per block", "gpusim/occupancy.py",
           "res.shared_bytes + gpu.sram_reserved_bytes_per_block", "res.shared_bytes + 0",
           PINS + "test_each_block_reserves_a_kib_of_shared_memory"),
    Mutant("occupancy", "count warp slots as if every block had 4 warps", "gpusim/occupancy.py",
           '"warps": gpu.max_warps_per_sm // res.num_warps', '"warps": gpu.max_warps_per_sm // 4',
           PINS + "test_sixteen_warp_blocks_are_limited_by_the_warp_slots"),
    Mutant("occupancy", "spread the register tiles over one warp", "gpusim/occupancy.py",
           "(4 * WARP * num_warps)", "(4 * WARP)",
           PINS + "test_the_register_estimate_spreads_the_tiles_over_the_blocks_threads"),
    Mutant("occupancy", "a warp-specialized Hopper block holds no epilogue scratch beside its tiles",
           "gpusim/passes/hopper.py", 'WS_SCRATCH_BYTES * own["warp_specialize"]', '0 * own["warp_specialize"]',
           "tests/test_benchmarks.py::test_hopper_shared_estimate_is_each_compiled_launchs_but_its_barriers"),
    # time
    Mutant("time", "let one block hide its own loads (no latency on the chain)", "gpusim/cost.py",
           "chain = step.serial_s + loads", "chain = step.serial_s",
           "tests/test_cost.py::test_a_latency_bound_kernel_gains_from_a_second_resident_block"),
    Mutant("time", "a lone TMA program's first K/V copy waits no latency", "gpusim/cost.py",
           "+ (j > 0) * latency(", "+ (j < 0) * latency(",
           PINS + "test_a_lone_tma_program_waits_its_set_up_and_its_first_copies_latencies_with_the_sm_idle"),
    Mutant("time", "naive's launches in the events-timed overhead, not a graph replay's", "gpusim/passes/naive.py",
           "GRAPH_LAUNCH = True", "GRAPH_LAUNCH = False",
           PINS + "test_naives_launches_are_priced_as_a_graph_replays_them_where_measured"),
    Mutant("time", "qk's store hides under its loads and dot", "gpusim/passes/naive.py",
           'STORED_AFTER = {"qk": "S"}', "STORED_AFTER = {}",
           PINS + "test_naives_qk_stores_its_tile_after_its_loads_and_dot"),
    Mutant("time", "qk's store at the copy rate, not the store stream's", "gpusim/cost.py",
           "rate = cfg.gpu.store_bytes_per_s or cfg.gpu.hbm_bytes_per_s", "rate = cfg.gpu.hbm_bytes_per_s",
           PINS + "test_naives_qk_stores_its_tile_after_its_loads_and_dot"),
    Mutant("time", "a lone pv program waits for each step's whole load", "gpusim/passes/naive.py",
           'LONE_PIPELINED = ("pv",)', "LONE_PIPELINED = ()",
           PINS + "test_a_lone_pv_program_keeps_its_pipelines_tiles_in_flight"),
    Mutant("hopper", "the Hopper kernel launches in the events-timed overhead", "gpusim/passes/hopper.py",
           "GRAPH_LAUNCH = True", "GRAPH_LAUNCH = False",
           PINS + "test_the_hopper_kernel_launches_as_a_graph_replays_an_empty_kernel_where_measured"),
    Mutant("hopper", "the causal software-pipelined launches set up as the non-causal ones", "gpusim/passes/hopper.py",
           '"software-pipelined, causal" if cfg.causal else', '"software-pipelined, causal" if not cfg.causal else',
           PINS + "test_a_hopper_launchs_set_up_is_its_launch_kinds"),
    Mutant("time", "dK/dV's instructions priced as counted, not as issued (its measured warp rate is of those issued)",
           "gpusim/cost.py", "issued = ISSUED_PER_COUNTED if measured(grid) else 1.0", "issued = 1.0",
           "tests/test_cost.py::test_dkdv_is_timed_as_nsight_measures_it"),
    Mutant("time", "a launch costs no overhead", "gpusim/cost.py", "if listed(grid) else before / slots + longest) + launch)",
           "if listed(grid) else before / slots + longest))", PINS + "test_each_launch_pays_the_launch_overhead_once"),
    Mutant("time", "a wave spread unevenly is priced on its fullest SMs alone", "gpusim/cost.py",
           "return max(longest, float(np.max(tau(held, tail_steps, sharing, fewer))))", "return longest",
           "tests/test_cost.py::test_a_wave_spread_unevenly_prices_its_longest_on_the_sms_holding_a_program_fewer_too"),
    Mutant("time", "a longest-first launch of several programs an SM priced by the last-wave rule", "gpusim/cost.py",
           "return grid.work.longest_first and grid.programs > grid.slots",
           "return grid.work.longest_first and grid.resident == 1 and grid.programs > grid.slots",
           "tests/test_cost.py::test_a_longest_first_launch_of_several_programs_per_sm_is_list_scheduled_at_its_full_wave_taus"),
    Mutant("time", "a list-scheduled program holds its slot for its tau alone on its SM", "gpusim/cost.py",
           "order = tau(step, step.grid.work.tail[::-1], b, b).tolist()",
           "order = tau(step, step.grid.work.tail[::-1], 1, 1).tolist()",
           "tests/test_cost.py::test_a_longest_first_launch_of_several_programs_per_sm_is_list_scheduled_at_its_full_wave_taus"),
    Mutant("time", "a longest-first launch's programs each wait for the whole slot array, not the slot that frees first",
           "gpusim/cost.py", "heapq.heapreplace(free, free[0] + t)", "heapq.heapreplace(free, max(free) + t)",
           "tests/test_cost.py::test_a_longest_first_launch_of_one_program_per_sm_is_list_scheduled"),
    Mutant("time", "the backward's causal dK/dV launch is priced as if it ran its shortest K/V blocks first",
           "gpusim/passes/backward_base.py", "TAIL)), longest_first=True)", "TAIL)))",
           "tests/test_cost.py::test_a_causal_dkdv_launch_is_list_scheduled_in_its_grids_order"),
    Mutant("hopper", "the Hopper kernel's longest-first launch takes each head's Q blocks in turn, not its groups of heads",
           "gpusim/tiling.py", "tail = np.repeat(ramp, last)[:n]", "tail = ramp[:n]",
           "tests/test_cost.py::test_a_launchs_tail_is_the_kernels_launch_order_backwards"),
    Mutant("time", "the last wave counts twice", "gpusim/cost.py",
           "return max(0.0, total - float(np.sum(tau(step, tail_steps, grid.resident, grid.resident))))", "return total",
           PINS + "test_the_waves_add_up_program_by_program"),
    Mutant("time", "the last wave's programs are subtracted at another bandwidth share than the sum counted them at",
           "gpusim/cost.py", "tau(step, tail_steps, grid.resident, grid.resident)", "tau(step, tail_steps, 1, grid.resident)",
           PINS + "test_the_waves_add_up_program_by_program"),
    Mutant("time", "a lone program issues on the fitted line, not at the full rate it was measured at",
           "gpusim/cost.py",
           "return 1.0 if full_issue(grid) else", "return 0.45 if full_issue(grid) else",
           "tests/test_cost.py::test_a_lone_program_with_one_warp_per_scheduler_issues_at_the_full_rate"),
    Mutant("time", "a lone program of 8 warps issues on the fitted line, not at the full rate it was measured at",
           "gpusim/cost.py", "num_warps in (ISSUE_PER_CLOCK, 2 * ISSUE_PER_CLOCK)", "num_warps in (ISSUE_PER_CLOCK,)",
           "tests/test_cost.py::test_a_lone_program_with_two_warps_per_scheduler_issues_at_the_full_rate_but_not_on_32_rows"),
    Mutant("time", "a lone program of 16 or 32 rows issues at the full rate too", "gpusim/cost.py",
           "grid.resident == 1 and grid.cfg.block_q >= 64", "grid.resident == 1 and grid.cfg.block_q >= 16",
           "tests/test_cost.py::test_a_lone_program_with_two_warps_per_scheduler_issues_at_the_full_rate_but_not_on_32_rows"),
    Mutant("time", "a lone 4-warp program pipelined 3 stages deep waits its whole load", "gpusim/cost.py",
           "return lone and grid.res.num_stages > 2", "return lone and grid.res.num_stages > 3",
           "tests/test_cost.py::test_a_four_warp_program_pipelined_s_deep_waits_one_round_over_s_minus_one_tiles_alone_or_beside_others"),
    Mutant("time", "a lone 8-warp program pipelines its loads too", "gpusim/cost.py",
           "(grid.kernel in pass_.LONE_FULL_ISSUE and grid.res.num_warps == ISSUE_PER_CLOCK)",
           "(grid.kernel in pass_.LONE_FULL_ISSUE and full_issue(grid))",
           "tests/test_cost.py::test_a_lone_eight_warp_program_pipelined_s_deep_copies_its_tiles_at_the_measured_rate"),
    Mutant("time", "a 4-warp program beside others waits its whole load, its pipeline credited alone only",
           "gpusim/cost.py", "elif lone_pipeline(grid) or pipelined_beside(grid):", "elif lone_pipeline(grid):",
           "tests/test_cost.py::"
           "test_a_four_warp_program_pipelined_s_deep_waits_one_round_over_s_minus_one_tiles_alone_or_beside_others"),
    Mutant("time", "a lone 4-warp program of 16 or 32 rows waits its whole load", "gpusim/cost.py",
           "lone = grid.resident == 1 and ((grid.kernel in pass_.LONE_FULL_ISSUE and grid.res.num_warps",
           "lone = grid.resident == 1 and ((full_issue(grid) and grid.res.num_warps",
           "tests/test_cost.py::"
           "test_a_four_warp_program_pipelined_s_deep_waits_one_round_over_s_minus_one_tiles_alone_or_beside_others"),
    Mutant("time", "a last wave of fewer programs an SM priced on the launch's Schedule at b", "gpusim/cost.py",
           "return max(tau(held, tail_steps, sharing, per_sm).tolist())",
           "return max(tau(step, tail_steps, sharing, per_sm).tolist())",
           "tests/test_cost.py::test_a_last_wave_of_fewer_programs_than_slots_shares_each_sm_among_fewer"),
    Mutant("time", "a lone pipeline keeps S tiles in flight, not S - 1", "gpusim/cost.py",
           "(step.serial_s + loads) / (stages - 1)", "(step.serial_s + loads) / stages",
           "tests/test_cost.py::test_a_four_warp_program_pipelined_s_deep_waits_one_round_over_s_minus_one_tiles_alone_or_beside_others"),
    Mutant("time", "a ragged decode wave overlaps its steps and its bytes wholly", "gpusim/cost.py",
           "max(steps, memory) + RAGGED_OVERLAP * min(steps, memory)", "max(steps, memory)",
           "tests/test_decode.py::test_a_ragged_wave_costs_its_greater_part_and_038_of_its_lesser"),
    Mutant("time", "a lone 8-warp program pipelined 3 stages deep copies its tiles at twice the measured rate",
           "gpusim/cost.py", "chain = max(step.serial_s, step.step_bytes[2] / gpu.lone_copy_bytes_per_s)",
           "chain = max(step.serial_s, step.step_bytes[2] / gpu.lone_copy_bytes_per_s / 2)",
           "tests/test_cost.py::test_a_lone_eight_warp_program_pipelined_s_deep_copies_its_tiles_at_the_measured_rate"),
    Mutant("time", "a flash2 program copies only its Q tile at one program's rate, not its O tile too", "gpusim/cost.py",
           "+ nbytes[0] / gpu.lone_copy_bytes_per_s", "+ nbytes[2] / gpu.lone_copy_bytes_per_s",
           "tests/test_cost.py::test_a_flash2_program_copies_its_own_q_and_o_tiles_at_one_programs_rate"),
    Mutant("time", "a last wave's programs share their SM with b - 1 others however few it holds", "gpusim/cost.py",
           "return min(grid.resident, math.ceil(last / grid.cfg.gpu.sm_count))", "return grid.resident",
           "tests/test_cost.py::test_a_last_wave_of_fewer_programs_than_slots_shares_each_sm_among_fewer"),
    Mutant("time", "a step's dots multiply the counted elements, not whole tiles", "gpusim/cost.py",
           "return tiling.whole_elements / tiling.tile_elements", "return 1.0",
           "tests/test_cost.py::test_a_steps_dots_multiply_whole_tiles_at_a_ragged_edge"),
    Mutant("time", "dK/dV's dots take the Q-major tiling's whole tiles", "gpusim/passes/flash2_backward.py",
           'return cfg.kv_tiling if kernel == "dkdv" else cfg.tiling', "return cfg.tiling",
           "tests/test_cost.py::test_a_steps_dots_multiply_whole_tiles_at_a_ragged_edge"),
    Mutant("time", "a spill reload waits a loaded L2's latency, not an idle one's", "gpusim/cost.py",
           "chain += step_reloads * gpu.l2_idle_latency_s", "chain += step_reloads * gpu.l2_latency_s",
           "tests/test_cost.py::test_each_spill_reload_of_a_step_waits_an_idle_l2_hit"),
    # CLI
    Mutant("CLI", "count passes --heads as the K/V heads", "gpusim/cli.py", "kv_heads=args.kv_heads,",
           "kv_heads=args.heads,", PINS + "test_every_count_option_gives_what_simulate_gives"),
    Mutant("CLI", "count swaps --block-q and --block-kv", "gpusim/cli.py",
           "seq_kv=args.seq_kv, block_q=args.block_q, block_kv=args.block_kv",
           "seq_kv=args.seq_kv, block_q=args.block_kv, block_kv=args.block_q",
           PINS + "test_every_count_option_gives_what_simulate_gives"),
    Mutant("CLI", "count ignores --seq-kv", "gpusim/cli.py", "seq_kv=args.seq_kv,", "seq_kv=None,",
           PINS + "test_every_count_option_gives_what_simulate_gives"),
    Mutant("CLI", "count's --batch defaults to 2", "gpusim/cli.py",
           'count.add_argument("--batch", type=int, default=1)', 'count.add_argument("--batch", type=int, default=2)',
           PINS + "test_count_without_options_is_simulate_with_its_defaults"),
    Mutant("CLI", "decode passes --heads as the K/V heads", "gpusim/cli.py", "gpu=args.gpu, kv_heads=args.kv_heads)",
           "gpu=args.gpu, kv_heads=args.heads)", "tests/test_cli.py::test_decode_runs_split_kv_as_simulate_does"),
    # course
    Mutant("course", "keep only the SRAM sizes where both algorithms' rule blocks run (none at d = 256)",
           "course/tiling/block_sweep.py", "if any(map(_ran, pair))]", "if all(map(_ran, pair))]",
           "tests/test_course_blocks.py::test_theorem2_curve_at_d_256_has_points_where_only_one_algorithm_runs"),
    Mutant("course", "draw each step's compute bar as long as the whole step", "course/context/model.py",
           '("compute", s.compute_s)', '("compute", s.time_s)',
           "tests/test_course_context.py::test_timeline_widget_shows_gpusims_time_and_bytes"),
    # validation
    Mutant("validation", "accept True as the integer 1", "gpusim/shape.py",
           "if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0 or value == 0 and "
           "not zero:",
           "if not isinstance(value, (int, np.integer)) or value < 0 or value == 0 and not zero:",
           PINS + "test_bad_integers_are_refused"),
    Mutant("validation", "refuse the longest sequence the limit allows", "gpusim/shape.py",
           "if limit is not None and value > limit:", "if limit is not None and value >= limit:",
           PINS + "test_the_longest_sequence_counted_is_counted"),
    Mutant("validation", "refuse bottom-right alignment with as many queries as keys", "gpusim/shape.py",
           'causal_align == "bottom_right" and seq > seq_kv:', 'causal_align == "bottom_right" and seq >= seq_kv:',
           PINS + "test_bottom_right_alignment_with_as_many_queries_as_keys_is_top_left"),
    Mutant("validation", "accept negative block-table entries", "gpusim/decode.py",
           "bad = used & ((table < 0) | (table >= num_pages))", "bad = used & (table >= num_pages)",
           PINS + "test_a_negative_block_table_entry_is_refused"),
    Mutant("validation", "take any value for a flag (causal='yes' as True)", "gpusim/shape.py",
           "if not isinstance(value, (bool, np.bool_)):", "if value is None:",
           "tests/test_errors.py::test_bad_configuration"),
    Mutant("validation", "accept a GPU of no SMs", "gpusim/hardware.py", "not 0 < value < math.inf and", "value < 0 and",
           "tests/test_errors.py::test_what_no_call_can_mean_is_refused_in_one_line"),
    Mutant("validation", "let the hopper pass run on any GPU", "gpusim/passes/hopper.py",
           'ARCHS = {"sm_90": "Hopper"}', "ARCHS = {}",
           "tests/test_errors.py::test_what_the_kernels_cannot_run_is_refused"),
    Mutant("validation", "let a decode batch past CUDA's 65,535 programs along y through", "gpusim/decode.py",
           "check_grid(batch=batch, seq=seq)", "check_grid(seq=seq)",
           "tests/test_decode.py::test_a_batch_past_the_decode_grids_is_refused_and_any_head_count_is_priced"),
    Mutant("validation", "divide by an SRAM of no elements in Theorem 2", "gpusim/theorems.py",
           'sram_elements = positive_number("sram_elements", sram_elements)', "",
           "tests/test_errors.py::test_the_models_other_functions_refuse_in_one_line"),
    # the kernels (kernels/*.py), in Triton's interpreter
    Mutant("kernels", "flash2 forgets to rescale acc when the running max moves", "kernels/flash2.py",
           "acc = acc * alpha[:, None] + tl.dot(", "acc = acc + tl.dot(",
           "tests/test_kernels.py::test_output_matches_reference[cpu-flash2-fp32-B1H1kv1-N45x37-d16-64x32-causal-A100-40GB]"),
    Mutant("kernels", "flash1's causal programs skip one Q block too many", "kernels/flash1.py",
           "first_i = (j * Bc) // Br if CAUSAL else 0", "first_i = (j * Bc + Bc - 1) // Br if CAUSAL else 0",
           "tests/test_kernels.py::test_output_matches_reference[cpu-flash1-bf16-B1H6kv2-N20x51-d16-16x64-causal-A100-40GB]"),
    Mutant("kernels", "the decode reduce forgets to rescale acc when a later step of splits has a larger max",
           "kernels/decode.py", "acc = acc * alpha + tl.sum(", "acc = acc + tl.sum(",
           DK + "test_the_reduce_merges_past_64_splits_in_steps[cpu]"),
    Mutant("kernels", "the decode reduce writes a wrong LSE", "kernels/decode.py",
           "tl.store(LSE + row, m_i + tl.log(l_i))", "tl.store(LSE + row, m_i + tl.log(l_i) + 1.0)",
           DK + "test_output_matches_reference[cpu-fp32-B1H4kv1-seq1-L158-P128-Bc32-S5-bottom_right]"),
    Mutant("kernels", "a decode program re-reads its page's table entry only at page starts, not at its split's start",
           "kernels/decode.py", "fresh = (j == first) | ((j * Bc) % P == 0)", "fresh = (j * Bc) % P == 0",
           DK + "test_output_matches_reference[cpu-fp32-B1H4kv1-seq1-L158-P128-Bc32-S5-bottom_right]"),
    Mutant("kernels", "ungrouped decode programs map query heads to K/V heads round-robin", "kernels/decode.py",
           "kvh = unit if GROUPED else unit // GROUP", "kvh = unit if GROUPED else unit % KV_HEADS",
           DK + "test_output_matches_reference[cpu-fp16-B3H8kv2-seq8-L103/11/181-P64-Bc64-S1-ungrouped-bottom_right]"),
    # the kernels' launches (kernels/launch.py)
    Mutant("launches", "key the training step's kept launches on their tensors' dtypes, not their alignment",
           "kernels/launch.py", "key = (*(arg_class(x) for _, _, args in calls",
           "key = (*(x.dtype for _, _, args in calls",
           "tests/test_launch_kernels.py::test_launches_kept_together_run_without_a_key_each_until_a_tensors_class_"
           "changes"),
    Mutant("launches", "leave Triton's launch hooks out of a launch's key", "kernels/launch.py",
           "instrumentation_mode, hooks(), torch.cuda.current_device(), classes)",
           "instrumentation_mode, torch.cuda.current_device(), classes)",
           "tests/test_launch_kernels.py::test_a_hook_added_after_a_launch_was_kept_makes_the_next_launch_ordinary"),
    Mutant("launches", "allocate a kept launch's global scratch for one program, not the grid's", "kernels/launch.py",
           "scratch_bytes = launcher.global_scratch_size * grid[0] * grid[1] * grid[2] * launcher.num_ctas",
           "scratch_bytes = launcher.global_scratch_size * launcher.num_ctas",
           KEPT_C_LAUNCH),
    Mutant("launches", "allocate a kept launch's global scratch for one CTA a program", "kernels/launch.py",
           "scratch_bytes = launcher.global_scratch_size * grid[0] * grid[1] * grid[2] * launcher.num_ctas",
           "scratch_bytes = launcher.global_scratch_size * grid[0] * grid[1] * grid[2]",
           KEPT_C_LAUNCH),
    Mutant("launches", "take the allocator Triton held when the launch was kept, not the one it holds at each launch",
           "kernels/launch.py",
           "align = launcher.global_scratch_align\n\n    def run_with_scratch(*args):\n"
           "        stream = stream_of(device)\n"
           "        scratch = _allocation._allocator.get()(scratch_bytes, align, stream)",
           "align, allocate = launcher.global_scratch_align, _allocation._allocator.get()\n\n"
           "    def run_with_scratch(*args):\n        stream = stream_of(device)\n"
           "        scratch = allocate(scratch_bytes, align, stream)",
           KEPT_C_LAUNCH),
    Mutant("launches", "keep a launch whose launcher allocates profile scratch", "kernels/launch.py",
           "if not isinstance(launcher, CudaLauncher) or launcher.profile_scratch_size or hooks() != (None, None):",
           "if not isinstance(launcher, CudaLauncher) or hooks() != (None, None):",
           KEPT_C_LAUNCH),
]


def fails(tests, mutant=None):
    """Whether `tests` fail in a copy of the tree, with the mutant's bug planted (None: as it is)."""
    with tempfile.TemporaryDirectory() as tmp:
        for part in ("gpusim", "kernels", "course", "tests", "results", "benchmarks", "pyproject.toml"):
            source = ROOT / part
            (shutil.copytree if source.is_dir() else shutil.copy)(source, Path(tmp) / part)
        for name, part in (("gpusim_course", "course"), ("gpusim_kernels", "kernels")):
            (Path(tmp) / name).symlink_to(part)  # the copy's, found on PYTHONPATH before the installed one
        if mutant:
            path = Path(tmp) / mutant.file
            original = path.read_text()
            if original.count(mutant.text) != 1:
                raise ValueError(f"{mutant.file}: the text to replace occurs {original.count(mutant.text)} times: "
                                 f"{mutant.text!r}")
            path.write_text(original.replace(mutant.text, mutant.replacement))
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
                             cwd=tmp, capture_output=True, text=True, env={"PYTHONPATH": tmp, "PATH": "/usr/bin:/bin"})
        return run.returncode != 0


def caught(mutant):
    """Whether the mutant's test fails with the bug planted (it passes without: main checks that first)."""
    return fails([mutant.test], mutant)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--markdown", action="store_true",
                        help="print docs/testing.md's table instead of a line per bug")
    markdown = parser.parse_args(argv).markdown
    if fails(sorted({m.test for m in MUTANTS})):
        print("the named tests fail without any planted bug: fix them first")
        return len(MUTANTS)
    missed = 0
    rows = ["| area | planted bug | file | caught by | |", "|---|---|---|---|---|"]
    for mutant in MUTANTS:
        ok = caught(mutant)
        missed += not ok
        rows.append(f"| {mutant.area} | {mutant.bug} | `{mutant.file}` | `{mutant.test}` | "
                    f"{'caught' if ok else 'MISSED'} |")
        if not markdown:
            print(f"{'caught' if ok else 'MISSED'}: [{mutant.area}] {mutant.bug} ({mutant.file}) by {mutant.test}",
                  flush=True)
    if markdown:
        print("\n".join(rows))
    print(f"{len(MUTANTS) - missed} of {len(MUTANTS)} caught")
    return missed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
