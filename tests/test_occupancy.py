"""Occupancy as CUDA's occupancy calculator computes it, the register estimate, and tiles that cannot run."""
import dataclasses

import pytest

import gpusim
from gpusim.occupancy import Resources, occupancy
from gpusim.simulate import BLOCKS, candidates

# A device of compute capability 7.0 (V100): 64 K registers, 64 warps, 32 blocks, 96 KiB of shared memory
# per SM (Programming Guide, Technical Specifications), no per-block reservation.
CC70 = dataclasses.replace(gpusim.get_gpu("T4"), name="cc7.0", max_warps_per_sm=64, max_blocks_per_sm=32,
                           sram_bytes_per_sm=96 * 1024, sram_bytes_per_block=96 * 1024)


def blocks(gpu, threads, registers, shared=0):
    return occupancy(gpu, Resources(threads // 32, 1, registers, shared, 0, True))


def test_the_best_practices_guide_example():
    # CUDA C++ Best Practices Guide, "Calculating Occupancy": on compute capability 7.0, 128-thread blocks of
    # 37 registers per thread reach 75% occupancy with 12 resident blocks; 320-thread blocks with the same
    # registers, 63%: only four blocks reside. (37 registers -> 1,280 per warp; 12 warps per sub-partition.)
    small, large = blocks(CC70, 128, 37), blocks(CC70, 320, 37)
    assert small.blocks_per_sm == 12 and small.blocks_per_sm * 4 / 64 == 0.75
    assert large.blocks_per_sm == 4 and large.limited_by == "registers"
    assert round(large.blocks_per_sm * 10 / 64, 2) == 0.62  # 40 of 64 warps; the guide rounds to 63%


def test_shared_memory_is_allocated_in_256_byte_units_before_compute_capability_8():
    """cuda_occupancy.h's cudaOccSMemAllocationGranularity: 256 B on cc 7.x, 128 B from 8.0 (the T4 was rounded
    to 128 B). 64 KiB over blocks of 9,300 B: 7 at 128 B units (9,344 B each), 6 at 256 B units (9,472 B)."""
    t4 = gpusim.get_gpu("T4")
    assert t4.arch == "sm_75" and t4.sram_reserved_bytes_per_block == 0 and t4.sram_bytes_per_sm == 64 * 1024
    assert blocks(t4, 128, 32, 9_300).blocks_per_sm == 6
    ampere = dataclasses.replace(t4, name="cc8.0", arch="sm_80")
    assert blocks(ampere, 128, 32, 9_300).blocks_per_sm == 7


def test_each_limit_can_be_the_one():
    h100 = gpusim.get_gpu("H100-SXM")
    assert blocks(h100, 32, 16).limited_by == "blocks"  # 1 warp a block: 32 blocks before 64 warps
    assert blocks(h100, 256, 24).limited_by == "warps"  # 8 warps: 8 blocks fill 64 warps before registers do
    assert blocks(h100, 256, 128).blocks_per_sm == 2  # 4 KiB registers per warp: 2 blocks of 8 warps
    # shared memory: 100 KiB + 1 KiB reserved per block, in 228 KiB: two blocks
    two = blocks(h100, 128, 32, shared=100 * 1024)
    assert two.blocks_per_sm == 2 and two.limited_by == "shared memory"


def test_a_block_that_cannot_be_resident_gets_none():
    h100 = gpusim.get_gpu("H100-SXM")
    assert blocks(h100, 128, 256).blocks_per_sm == 0  # over 255 registers per thread
    assert blocks(h100, 1024, 128).blocks_per_sm == 0  # 128 K registers for one block: the SM has 64 K
    assert blocks(h100, 128, 32, shared=300 * 1024).blocks_per_sm == 0


def test_register_infeasible_tiles_are_refused_in_one_line():
    with pytest.raises(ValueError) as err:
        gpusim.simulate("flash2", seq=4096, head_dim=128, block_q=256, block_kv=128, gpu="A100-40GB")
    message = str(err.value)
    assert "\n" not in message
    assert "block_q=256, block_kv=128, head_dim=128 (fp16) in the flash2 kernel need" in message
    assert "registers per thread" in message and "allows 255" in message


@pytest.mark.parametrize("algo", gpusim.ALGOS)
@pytest.mark.parametrize("gpu", ["A100-40GB", "H200-measured", "T4"])
def test_best_blocks_is_feasible_and_the_fastest(algo, gpu):
    shape = dict(seq=4096, head_dim=64, heads=8, batch=2, causal=True, gpu=gpu)
    if algo == "hopper" and gpusim.get_gpu(gpu).arch != "sm_90":
        with pytest.raises(ValueError, match="^algo='hopper' needs a Hopper"):
            gpusim.best_blocks(algo, **shape)
        return
    block_q, block_kv = gpusim.best_blocks(algo, **shape)
    best = gpusim.simulate(algo, block_q=block_q, block_kv=block_kv, **shape)
    assert all(k.blocks_per_sm >= 1 and k.registers_per_thread <= 255 for k in best.kernels)
    for other in candidates(algo, gpusim.get_gpu(gpu), 64, "fp16", True):
        try:
            assert gpusim.simulate(algo, block_q=other[0], block_kv=other[1], **shape).predicted_time_s >= \
                best.predicted_time_s
        except ValueError:
            continue  # that tile does not fit this GPU


def test_simulate_defaults_to_the_best_tile():
    shape = dict(seq=2048, head_dim=128, heads=16, gpu="H200-measured")
    assert gpusim.simulate("flash2", **shape).config.block_q == gpusim.best_blocks("flash2", **shape)[0]


def test_one_tile_given_is_paired_with_its_fastest_partner_that_fits():
    """block_q alone: the fastest block_kv beside it (of the compiled tiles with it, where there are), never the
    other half of the best pair, which need not fit beside it (A100, d = 64: the best pair has block_kv = 128, which
    beside block_q = 256 needs more registers than a thread has; 16, 32 and 64 fit)."""
    shape = dict(seq=1024, head_dim=64, gpu="A100-40GB")
    assert gpusim.best_blocks("flash2", **shape)[1] == 128
    times = {}
    for bc in BLOCKS:
        try:
            times[bc] = gpusim.simulate("flash2", block_q=256, block_kv=bc, **shape).predicted_time_s
        except ValueError:
            continue
    assert 128 not in times and len(times) >= 3
    assert gpusim.simulate("flash2", block_q=256, **shape).config.block_kv == min(times, key=times.get)
    with pytest.raises(ValueError, match="^no tile of 16..256 rows with block_q=256 fits flash2 at head_dim=256"):
        gpusim.best_blocks("flash2", seq=1024, head_dim=256, block_q=256, gpu="T4")


@pytest.mark.parametrize("given, need", [(dict(block_q=512), "need 472 registers per thread"),
                                         (dict(block_kv=512), "need 266,240 B of SRAM")])
def test_a_block_no_partner_fits_beside_is_refused_with_what_it_alone_exceeds(given, need):
    """Past the largest tile (A100, d = 128): the error of the smallest partner, whose needs are the given block's
    least: 512 query rows' fp32 tiles in registers; 16 + 2 * 512 rows of 128 fp16 elements staged in SRAM."""
    assert (16 + 2 * 512) * 128 * 2 == 266_240
    partner = dict(block_q=16, block_kv=16) | given
    with pytest.raises(ValueError) as err:
        gpusim.best_blocks("flash2", seq=8192, head_dim=128, **given)
    with pytest.raises(ValueError) as alone:
        gpusim.simulate("flash2", seq=8192, head_dim=128, **partner)
    assert str(err.value) == (f"no tile of 16..256 rows with {', '.join(f'{k}={v}' for k, v in given.items())} fits "
                              f"flash2 at head_dim=128 (fp16) on A100-40GB: at the smallest partner, {alone.value}")
    assert need in str(err.value)


@pytest.mark.parametrize("algo, gpu, dtype", [("flash2", "H200-measured", "fp16"), ("flash2", "A100-40GB", "bf16"),
                                              ("naive", "H200-measured", "fp16"), ("flash1", "A100-40GB", "fp16")])
def test_best_blocks_for_the_backward_is_the_fastest_backward(algo, gpu, dtype):
    """best_blocks(..., backward=True): of the tiles the backward kernels run (flash2 on the H200: the four
    its dkdv kernel was compiled for), the one whose backward kernels the model times fastest, found here by
    a loop of our own over those tiles; the same answer every time."""
    shape = dict(seq=2048, head_dim=64, heads=8, batch=4, causal=True, dtype=dtype, gpu=gpu)
    pick = gpusim.best_blocks(algo, **shape, backward=True)
    kernel = "flash2_bwd_dkdv" if algo == "flash2" else None
    tiles = candidates(algo, gpusim.get_gpu(gpu), 64, dtype, True, kernel)
    if (algo, gpu) == ("flash2", "H200-measured"):
        assert tiles == [(64, 32), (64, 64), (128, 32), (128, 64)]
    times = {}
    for blocks in tiles:
        try:
            r = gpusim.simulate(algo, **shape, backward=True, backward_blocks=blocks)
        except ValueError:
            continue
        times[blocks] = sum(k.predicted_time_s for k in r.kernels if k.pass_ == "backward")
    assert pick in times and times[pick] == min(times.values())
    gpusim.best_blocks.cache_clear()
    assert gpusim.best_blocks(algo, **shape, backward=True) == pick


@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_flash2_backward_is_compiled_in_bf16_at_the_fp16_tiles(head_dim, causal):
    # Issue 24 (docs/perf.md, "The backward's tiles"): without bf16 compiles, best_blocks(..., backward=True)
    # weighed bf16 at every tile from estimated registers and picked 64 x 128, whose compiled dK/dV kernel spills
    # (255 registers, 220 B per thread) and fits one block per SM. The bf16 dK/dV and dQ kernels compile to the
    # fp16 ones' resources, and the backward's candidates are the compiled tiles in both dtypes.
    from gpusim.compiled import COMPILED
    from gpusim.run import candidates as backward_candidates
    gpu = gpusim.get_gpu("H200-measured")
    tiles = {dtype: backward_candidates("flash2", gpu, head_dim, dtype, causal, "flash2_bwd_dkdv")
             for dtype in ("fp16", "bf16")}
    assert tiles["bf16"] == tiles["fp16"] == [(64, 32), (64, 64), (128, 32), (128, 64)]
    for key, value in COMPILED.items():
        if key[1] in ("flash2_bwd_dkdv", "flash2_bwd_dq") and key[2:5] == (head_dim, "fp16", causal):
            assert COMPILED[key[:3] + ("bf16",) + key[4:]] == value
    pick = gpusim.best_blocks("flash2", seq=16384, head_dim=head_dim, heads=16, batch=1, causal=causal,
                              dtype="bf16", gpu="H200-measured", backward=True)
    assert tuple(pick) in tiles["bf16"]
