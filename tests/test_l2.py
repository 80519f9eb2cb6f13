"""The L2 model: which SM-side bytes reach DRAM."""
import dataclasses

import pytest

import gpusim
from gpusim import l2


def test_flash2_reads_q_k_v_once_from_dram_while_kv_fits_in_l2():
    # h200-baselines.md: dram__bytes_read = Q + K + V when the K/V working set fits in L2
    r = gpusim.simulate("flash2", seq=4096, head_dim=64, heads=16, block_q=128, block_kv=64, gpu="H200")
    qkv = 3 * 16 * 4096 * 64 * 2
    assert r.dram_read_bytes == qkv < r.hbm_read_bytes
    assert r.dram_write_bytes < r.by_tensor["O"]["write_bytes"]  # the write-back L2 still holds some of O


def test_one_heads_kv_larger_than_l2_is_streamed_once_per_wave():
    small_l2 = dataclasses.replace(gpusim.get_gpu("H100-SXM"), l2_bytes=4 * 2**20, sm_count=16)
    kw = dict(seq=32768, head_dim=128, block_q=128, block_kv=64)
    r = gpusim.simulate("flash2", **kw, gpu=small_l2)  # K of one head: 8 MiB > 4 MiB
    waves = -(-256 // l2.in_flight(r.config, "flash2"))  # 256 Q blocks, 16 SMs' worth in flight
    assert waves > 1
    assert r.dram_by_tensor["K"]["dram_read_bytes"] == waves * 32768 * 128 * 2
    assert r.dram_by_tensor["K"]["dram_read_bytes"] < r.by_tensor["K"]["read_bytes"]


def test_naive_softmax_streams_the_whole_matrix_through_dram():
    # h200-baselines.md: at N=4096, d=64, 16 heads the softmax read 537 MB and wrote 516 MB from/to HBM
    r = gpusim.simulate("naive", seq=4096, head_dim=64, heads=16, gpu="H200")
    softmax = r.kernels[1]
    nn = 16 * 4096 * 4096 * 2
    assert softmax.dram_read_bytes == nn == 536_870_912
    assert 0.9 * nn < softmax.dram_write_bytes < nn


def test_flash1_rewrites_of_o_are_absorbed_only_while_they_fit():
    small = gpusim.simulate("flash1", seq=1024, head_dim=64, heads=4, gpu="H100-SXM")
    assert small.dram_by_tensor["O"]["dram_read_bytes"] == 0  # every re-read of O hits in L2
    big = gpusim.simulate("flash1", seq=32768, head_dim=64, heads=64, gpu="H100-SXM")
    assert big.dram_by_tensor["O"]["dram_read_bytes"] == big.by_tensor["O"]["read_bytes"]


@pytest.mark.parametrize("gpu, seq, seq_kv", [("H200", 3000, 2500), ("T4", 1000, 1000), ("RTX-4090", 1000, 1000)])
def test_dram_never_exceeds_what_the_sms_move(gpu, seq, seq_kv):
    """Per kernel and tensor, DRAM is part of what the SMs move: a tensor a kernel never writes (flash1's Q, K, V,
    whose O, l, m the L2 absorbs on the small L2s) writes nothing to DRAM."""
    for algo in gpusim.ALGOS:
        for causal in (False, True):
            if algo == "hopper" and gpu != "H200":
                continue
            r = gpusim.simulate(algo, seq=seq, seq_kv=seq_kv, head_dim=64, heads=8, kv_heads=2, causal=causal,
                                gpu=gpu)
            for key, (dr, dw) in r.dram.items():
                assert 0 <= dr <= r.counts[key][0] and 0 <= dw <= r.counts[key][1], (algo, causal, key)


MiB = 2**20


def test_an_l2_of_two_partitions_holds_half_as_much_read_from_every_sm():
    # each partition keeps a copy of a line every SM reads; a line one SM reads: its home's, and half the
    # time a copy in the reader's partition (1.5 copies)
    h200, a100, t4 = (gpusim.get_gpu(name) for name in ("H200", "A100-40GB", "T4"))
    assert (h200.l2_reuse_bytes(every_sm=True), h200.l2_reuse_bytes(every_sm=False)) == (30 * MiB, 40 * MiB)
    assert (a100.l2_reuse_bytes(every_sm=True), a100.l2_reuse_bytes(every_sm=False)) == (20 * MiB, 27_962_026)
    assert t4.l2_reuse_bytes(every_sm=True) == t4.l2_reuse_bytes(every_sm=False) == 4 * MiB


def test_one_heads_kv_past_half_the_h200_l2_is_read_once_per_wave():
    # N = 65,536, d = 128: K and V of one head are 32 MiB, within the H200's 60 MiB but past the 30 MiB that
    # data read from every SM can fill; 512 Q blocks of 128 rows in waves of 132 (one block per SM: 186
    # registers a thread, 8 warps, compiled), K and V from DRAM once a wave
    kw = dict(seq=65536, head_dim=128, heads=2, block_q=128, block_kv=64)
    k_bytes = 2 * 65536 * 128 * 2
    r = gpusim.simulate("flash2", **kw, gpu="H200")
    assert (r.kernels[0].blocks_per_sm, r.kernels[0].limited_by) == (1, "registers")
    assert l2.in_flight(r.config, "flash2") == 132
    assert r.dram_by_tensor["K"]["dram_read_bytes"] == 4 * k_bytes
    one_partition = dataclasses.replace(gpusim.get_gpu("H200"), l2_partitions=1)
    assert gpusim.simulate("flash2", **kw, gpu=one_partition).dram_by_tensor["K"]["dram_read_bytes"] == k_bytes


def test_hopper_causal_heads_launched_in_groups_share_the_l2_and_read_less_each_wave():
    # lpt_heads = 4 at d = 128: 4 heads' K/V (4 x 8 MiB at N = 16,384) in flight > 30 MiB; the group's
    # 4 x 128 Q blocks run in 4 waves of 132 (one block per SM), wave w of 4 reading w/4 of the keys: 2.5 reads
    r = gpusim.simulate("hopper", seq=16384, head_dim=128, heads=16, causal=True, gpu="H200-measured")
    assert r.config.pass_.launch_order(r.config) == (4, True)
    assert l2.in_flight(r.config, "hopper") == 132
    assert r.dram_by_tensor["K"]["dram_read_bytes"] == r.dram_by_tensor["V"]["dram_read_bytes"] \
        == int(16 * 16384 * 128 * 2 * 2.5)
    plain = gpusim.simulate("hopper", seq=16384, head_dim=128, heads=16, causal=False, gpu="H200-measured")
    assert plain.config.pass_.launch_order(plain.config) == (1, False)
    assert plain.dram_by_tensor["K"]["dram_read_bytes"] == 16 * 16384 * 128 * 2  # one head: 8 MiB fits


def test_causal_q_blocks_in_order_read_kv_once_even_past_the_l2():
    # flash2 causal, N = 65,536, d = 128: one head's K and V (32 MiB) are past the 30 MiB, but its Q blocks run in
    # order, each wave reading the keys the one before read (still in L2) and a few more (Nsight, run 66: 1.09x)
    kw = dict(seq=65536, head_dim=128, heads=2, block_q=128, block_kv=64, gpu="H200")
    assert gpusim.simulate("flash2", **kw, causal=True).dram_by_tensor["K"]["dram_read_bytes"] == 2 * 65536 * 128 * 2
    assert gpusim.simulate("flash2", **kw).dram_by_tensor["K"]["dram_read_bytes"] == 4 * 2 * 65536 * 128 * 2


def test_backward_programs_running_together_share_reads_past_the_l2():
    # dK/dV of a GQA group of 8 heads at N = 7,817, d = 64: each K/V head's programs re-read its 8 heads' Q, dO
    # and statistics (15.7 MiB); both K/V heads' 62 programs run at once (124 programs, one block per SM), 31.5
    # MiB > 30 MiB: the re-reads no longer all hit, but the programs march through Q together: once from DRAM
    r = gpusim.simulate("flash2", batch=2, heads=8, kv_heads=1, seq=7817, head_dim=64, causal=True, dtype="bf16",
                        block_q=64, block_kv=128, backward=True, backward_blocks=(128, 32), gpu="H200-measured")
    dkdv = next(k for k in r.kernels if k.name == "dkdv")
    assert (dkdv.programs, dkdv.blocks_per_sm) == (124, 1)
    q_bytes = 2 * 8 * 7817 * 64 * 2
    assert r.dram[("dkdv", "Q")][0] == q_bytes < r.counts[("dkdv", "Q")][0]
