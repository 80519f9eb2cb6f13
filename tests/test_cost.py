"""FLOPs, the roofline time model and the HBM footprint."""
import dataclasses

import gpusim
from gpusim import cost


def test_matmul_flops_are_4_n2_d_per_head_when_tiles_divide():
    r = gpusim.simulate("flash2", seq=2048, head_dim=64, heads=4, block_q=128, block_kv=64)
    assert r.flops_matmul == 4 * 2048**2 * 64 * 4
    naive = gpusim.simulate("naive", seq=2048, head_dim=64, heads=4)
    assert naive.flops_matmul == r.flops_matmul


def test_flash2_cuts_non_matmul_work():
    kw = dict(seq=4096, head_dim=128, heads=16, block_q=128, block_kv=128, gpu="A100-40GB")
    f1, f2 = gpusim.simulate("flash1", **kw), gpusim.simulate("flash2", **kw)
    assert f1.flops_matmul == f2.flops_matmul
    assert f2.flops_other < 0.8 * f1.flops_other


def test_flash1_starves_the_gpu_when_batch_times_heads_is_small():
    # FlashAttention-1: one thread block per (batch, head) -> 16 of 132 SMs busy
    kw = dict(seq=16384, head_dim=64, heads=16, gpu="H100-SXM")
    f1 = gpusim.simulate("flash1", **kw)
    assert f1.kernels[0].programs == 16
    assert cost.busy_fraction(f1.config.gpu, 16, f1.sram_bytes_per_block) == 16 / 132
    assert gpusim.simulate("flash2", **kw).predicted_time_s < f1.predicted_time_s / 3


def test_busy_fraction_counts_waves():
    h100 = gpusim.get_gpu("H100-SXM")
    assert cost.busy_fraction(h100, 132, 200_000) == 1.0
    assert cost.busy_fraction(h100, 133, 200_000) == 133 / 264  # a second wave with one block
    assert cost.busy_fraction(h100, 2 * 132, 100_000) == 1.0  # two blocks fit per SM: one wave


def test_naive_softmax_is_memory_bound():
    naive = gpusim.simulate("naive", seq=4096, head_dim=64, heads=32, batch=4, gpu="H100-SXM")
    softmax = naive.kernels[1]
    assert softmax.name == "softmax" and softmax.flops_matmul == 0
    gpu = naive.config.gpu
    memory_time = (softmax.dram_read_bytes + softmax.dram_write_bytes) / gpu.hbm_bytes_per_s
    assert softmax.flops_other / gpu.fp32_flops_per_s < memory_time < softmax.predicted_time_s


def test_hopper_overlap_beats_flash2_at_the_same_bytes():
    # a Hopper whose L2 serves the K/V re-reads fast enough for the kernel to be compute-bound
    gpu = dataclasses.replace(gpusim.get_gpu("H100-SXM"), l2_bytes_per_s=10e12)
    kw = dict(seq=8192, head_dim=128, heads=16, gpu=gpu, block_q=128, block_kv=128)
    f2, hop = gpusim.simulate("flash2", **kw), gpusim.simulate("hopper", **kw)
    assert hop.hbm_bytes == f2.hbm_bytes and hop.predicted_time_s < f2.predicted_time_s
    fp8 = gpusim.simulate("hopper", **kw, dtype="fp8")
    assert fp8.predicted_time_s < hop.predicted_time_s


def test_naive_at_128k_tokens_needs_32_gib_per_matrix_and_does_not_fit():
    r = gpusim.simulate("naive", seq=131072, head_dim=128, heads=2, gpu="H100-SXM")
    per_matrix_per_head = 131072**2 * 2
    assert per_matrix_per_head == 32 * 2**30
    assert r.hbm_peak_bytes > 2 * 2 * per_matrix_per_head and not r.fits_in_hbm
    assert gpusim.simulate("flash2", seq=131072, head_dim=128, heads=2, gpu="H100-SXM").fits_in_hbm


def test_speedup_grows_with_sequence_length_at_fixed_heads():
    def speedup(n):
        kw = dict(seq=n, head_dim=128, heads=32, gpu="H100-SXM")
        return gpusim.simulate("naive", **kw).predicted_time_s / gpusim.simulate("flash2", **kw).predicted_time_s
    assert 1 < speedup(512) < speedup(4096)


def test_sweep_uses_the_flashattention2_benchmark_shapes():
    results = gpusim.sweep(("naive", "flash2"), (512, 8192), head_dim=128, gpu="A100-40GB")
    assert [(r.config.batch, r.config.heads) for r in results] == [(32, 16), (32, 16), (2, 16), (2, 16)]
    assert all(s > 1 for s in gpusim.speedups(results)["flash2"].values())


def test_speedup_skips_lengths_where_naive_runs_out_of_memory():
    results = gpusim.sweep(("naive", "flash2"), (4096, 65536), head_dim=64, gpu="T4")
    assert list(gpusim.speedups(results)["flash2"]) == [4096]
