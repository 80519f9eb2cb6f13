"""gpusim_course.tiling.warps: split-K and split-Q compute the same tile update as FlashAttention's, and their
shared-memory traffic, counted as they run, is the closed form worked out by hand."""
import numpy as np
import pytest

from gpusim_course.softmax import exercises as softmax_exercises
from gpusim_course.tiling import warps


@pytest.mark.parametrize("br, bc, d, w", [(64, 64, 64, 4), (128, 32, 128, 8), (16, 48, 16, 4)])
def test_both_schemes_give_the_tile_update(br, bc, d, w):
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((n, d)) for n in (br, bc, bc))
    m, l, acc = rng.standard_normal(br), rng.random(br) + 1, rng.standard_normal((br, d))
    want = softmax_exercises.tile_update(m, l, acc, q @ k.T / np.sqrt(d), v)
    for fn in (warps.split_k, warps.split_q):
        got, _ = fn(q, k, v, m, l, acc, w, 2)
        assert all(np.allclose(a, b, rtol=1e-12) for a, b in zip(got, want))


def test_shared_memory_counts_by_hand():
    """Br = Bc = d = 64, 4 warps, fp16. split-K: each warp reads Q_i (64 x 64 x 2 = 8 KiB) and its 16 keys of
    K and V (2 x 2 KiB), writes its partial O and two statistics in fp32 (64 x 66 x 4 = 16,896 B), and the
    combine reads all four back. split-Q: each warp reads all of K_j and V_j (2 x 8 KiB), nothing else."""
    (_, k), (_, q) = warps.one_tile(64, 64, 64, 2, 4).values()
    assert k.read_bytes == 4 * (8192 + 4096) + 4 * 16896 and k.write_bytes == 4 * 16896
    assert k.exchanged_bytes == 2 * 4 * 16896 and k.barriers == 2
    assert (q.read_bytes, q.write_bytes, q.exchanged_bytes, q.barriers) == (4 * 16384, 0, 0, 1)
    assert q.per_warp[1] == "warp 1: rows 16..31, every key 0..63"
    assert k.per_warp[1] == "warp 1: keys 16..31 of every row 0..63"


def test_partition_rows_use_gpusims_tile():
    rows = warps.partition_rows("A100-40GB", seq=2048, head_dim=64)
    assert [r["scheme"] for r in rows] == list(warps.SCHEMES)
    split_k, split_q = rows
    assert split_q["of it, partials exchanged"] == 0 < split_k["of it, partials exchanged"]
    assert split_k["bytes the SMs request (gpusim)"] == split_q["bytes the SMs request (gpusim)"]
