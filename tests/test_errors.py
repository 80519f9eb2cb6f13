"""Bad input: one clear ValueError naming the value and the limit, never a traceback deep inside."""
import numpy as np
import pytest

import gpusim


@pytest.mark.parametrize("kwargs, message", [
    (dict(block_q=256, block_kv=256, head_dim=128, gpu="A100-40GB"),
     "block_q=256, block_kv=256, head_dim=128 (fp16) need 196,608 B of SRAM in the flash2 kernel; "
     "A100-40GB has 166,912 B per thread block"),
    (dict(seq=0), "seq=0 must be a positive integer"),
    (dict(head_dim=-64), "head_dim=-64 must be a positive integer"),
    (dict(block_kv=12.5), "block_kv=12.5 must be a positive integer"),
    (dict(heads=6, kv_heads=4), "heads=6 is not a multiple of kv_heads=4"),
    (dict(gpu="H100"), "unknown gpu='H100': known GPUs are"),
    (dict(dtype="int8"), "dtype='int8' is not supported: choose one of fp32, fp16, bf16, fp8"),
    (dict(dtype="fp8", gpu="A100-80GB"), "dtype='fp8': A100-80GB has no fp8 tensor cores"),
    (dict(dtype="bf16", gpu="T4"), "dtype='bf16': T4 has no bf16 tensor cores"),
])
def test_bad_configuration(kwargs, message):
    with pytest.raises(ValueError) as err:
        gpusim.simulate("flash2", **{"seq": 1024, "head_dim": 64, **kwargs})
    assert message in str(err.value)


def test_unknown_gpu_suggests_close_names():
    with pytest.raises(ValueError, match="did you mean H100-SXM"):
        gpusim.get_gpu("H100-SMX")


def test_unknown_algorithm():
    with pytest.raises(ValueError, match="algo='flash4' is not one of naive, flash1, flash2, hopper"):
        gpusim.simulate("flash4", seq=8, head_dim=8)


def test_missing_shape():
    with pytest.raises(ValueError, match="seq and head_dim are required"):
        gpusim.simulate("flash2", head_dim=64)


def _qkv(q_shape=(1, 2, 8, 16), kv_shape=(1, 2, 8, 16)):
    rng = np.random.default_rng(0)
    return rng.standard_normal(q_shape), rng.standard_normal(kv_shape), rng.standard_normal(kv_shape)


@pytest.mark.parametrize("arrays, extra, message", [
    (_qkv(kv_shape=(1, 2, 8, 32)), {}, "must agree on batch (dim 0) and head_dim (dim 3)"),
    (_qkv(q_shape=(2, 8, 16)), {}, "q has shape (2, 8, 16): expected 4 dimensions"),
    (_qkv(), dict(seq=16), "seq=16 does not match the arrays, which have seq=8"),
    (_qkv(q_shape=(1, 3, 8, 16)), {}, "heads=3 is not a multiple of kv_heads=2"),
])
def test_inconsistent_arrays(arrays, extra, message):
    q, k, v = arrays
    with pytest.raises(ValueError) as err:
        gpusim.simulate("flash2", q=q, k=k, v=v, block_q=16, block_kv=16, **extra)
    assert message in str(err.value)


def test_nan_input_is_refused_not_propagated():
    q, k, v = _qkv()
    q[0, 0, 3, 3] = np.nan
    with pytest.raises(ValueError, match="q contains NaN or infinity"):
        gpusim.simulate("flash2", q=q, k=k, v=v, block_q=16, block_kv=16)


def test_only_some_arrays():
    q, k, _ = _qkv()
    with pytest.raises(ValueError, match="needs all of q, k and v"):
        gpusim.simulate("naive", q=q, k=k)


def test_execute_mode_refuses_what_would_not_finish():
    with pytest.raises(ValueError, match="execute mode would walk"):
        gpusim.simulate("flash2", seq=1 << 17, head_dim=64, block_q=16, block_kv=16, trace=True)
