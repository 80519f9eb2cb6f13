"""The L2 model: which SM-side bytes reach DRAM."""
import dataclasses

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


def test_dram_never_exceeds_what_the_sms_move():
    for algo in gpusim.ALGOS:
        for causal in (False, True):
            r = gpusim.simulate(algo, seq=3000, seq_kv=2500, head_dim=64, heads=8, kv_heads=2, causal=causal,
                                gpu="H200")
            for key, (dr, dw) in r.dram.items():
                assert 0 <= dr <= r.counts[key][0] and 0 <= dw <= r.counts[key][1]
