"""Bad input: one clear ValueError naming the value and the limit, never a traceback deep inside; on the
command line, one line on stderr with a hint and exit code 2."""
import dataclasses
import subprocess
import sys

import numpy as np
import pytest

import gpusim
from gpusim import context_scaling, kvcache, theorems


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
    (dict(block_q=0), "block_q=0 must be a positive integer"),  # not taken for "none given"
    (dict(causal="yes"), "causal='yes' must be True or False"),
    (dict(backward="yes"), "backward='yes' must be True or False"),
    (dict(backward=True, backward_blocks=(64,)), "backward_blocks=(64,) must be a pair (block_q, block_kv)"),
    (dict(backward=True, backward_blocks=(0, 64)), "backward_blocks[0]=0 must be a positive integer"),  # not block_q
    (dict(gpus=2, heads=0), "heads=0 must be a positive integer"),
    (dict(gpus=2, causal="yes"), "causal='yes' must be True or False"),
    (dict(gpus=2, seq=-4), "seq=-4 must be a positive integer"),
    (dict(gpus="H100-SXM"), "gpus='H100-SXM' must be a positive integer"),
    (dict(gpus=2, gpu="RTX-4090"), "gpu='RTX-4090' has no NVLink preset: give link="),
    (dict(gpus=True), "gpus=True must be a positive integer"),  # was one GPU: True == 1
    (dict(trace=1), "trace=1 must be True or False"),
])
def test_bad_configuration(kwargs, message):
    with pytest.raises(ValueError) as err:
        gpusim.simulate("flash2", **{"seq": 1024, "head_dim": 64, **kwargs})
    assert message in str(err.value)


@pytest.mark.parametrize("call, message", [
    (lambda: gpusim.simulate("naive", seq=1024, head_dim=64, gpus=2, link="nvlink4"),
     "gpus=2, link='nvlink4': context parallelism runs the forward of flash2 or hopper, not algo='naive'"),
    (lambda: gpusim.simulate("split_kv", seq_kv=1024, head_dim=64, grouped="no"), "grouped='no' must be True or False"),
    (lambda: gpusim.best_blocks("split_kv", seq=1024, head_dim=64), "algo='split_kv' is not a forward pass"),
    (lambda: gpusim.best_blocks("flash2_backward", seq=1024, head_dim=64), "algo='flash2_backward' is a backward pass"),
    (lambda: gpusim.best_blocks("flash2", seq=1024, seq_kv=[1024], head_dim=64), "seq_kv=[1024] must be a positive"),
    (lambda: dataclasses.replace(gpusim.PRESETS["H200"], sm_count=0), "GPU 'H200': sm_count=0 must be positive"),
    (lambda: dataclasses.replace(gpusim.PRESETS["H200"], hbm_bytes_per_s=float("nan")), "hbm_bytes_per_s=nan must be"),
    (lambda: dataclasses.replace(gpusim.PRESETS["H200"], hbm_bytes_per_s=float("inf")),
     "GPU 'H200': hbm_bytes_per_s=inf must be positive and finite"),  # was a silent NaN time
    (lambda: dataclasses.replace(gpusim.PRESETS["H200"], sm_count=2.5), "sm_count=2.5 must be a whole number"),
    (lambda: gpusim.simulate("flash2", seq=1024, head_dim=64, strategy="zigzag"),
     "strategy='zigzag' without gpus=: give the GPUs the sequence is split over (gpus=1 for one)"),
    (lambda: dataclasses.replace(gpusim.PRESETS["H200"], sm_count=True), "sm_count=True must be a whole number"),
    (lambda: dataclasses.replace(gpusim.PRESETS["H200"], sram_bytes_per_block=10**9),
     "sram_bytes_per_block=1,000,000,000 is more than sram_bytes_per_sm=233,472"),
    (lambda: dataclasses.replace(gpusim.PRESETS["H200"], arch="banana"),  # was taken: no compiled kernel matched it
     "GPU 'H200': arch='banana' must be a compiler target, sm_ and a compute capability ('sm_80', 'sm_90')"),
])
def test_what_no_call_can_mean_is_refused_in_one_line(call, message):
    with pytest.raises(ValueError) as err:
        call()
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("call, message", [  # found by a fuzz of the model's functions: each crashed deep inside
    (lambda: theorems.theorem2(4096, 64, 0), "sram_elements=0 must be a positive number"),  # ZeroDivisionError
    (lambda: theorems.theorem2("4096", 64, 100), "seq='4096' must be a positive integer"),  # TypeError
    (lambda: context_scaling.minimal_shard_tokens(1e15, 0), "link_bytes_per_s=0 must be a positive number"),
    (lambda: context_scaling.minimal_shard_tokens(1e15, 1e11, heads=None), "heads=None must be a positive integer"),
    (lambda: context_scaling.max_context("ring", None), "gpus=None must be a positive integer"),
    (lambda: kvcache.max_batch("llama-3-8b", "H200", 0), "context_tokens=0 must be a positive integer"),
    (lambda: kvcache.bytes_per_token("llama-3-8b", ["fp16"]), "dtype=['fp16'] is not supported"),  # unhashable
    (lambda: kvcache.arrivals(2**40, 1, 4096), "steps=1,099,511,627,776 is more than the 8,388,608"),  # MemoryError
    (lambda: kvcache.arrivals(100, 10**6, 4096), "more than the 8,388,608 requests a serving simulation draws"),
    (lambda: kvcache.arrivals(100, 1, 1), "max_tokens=1: a request needs a prompt token and an output token"),
    (lambda: kvcache.arrivals(10, 1.0, 2**70), "max_tokens=1,180,591,620,717,411,303,424 is more than the"),  # Overflow
    (lambda: kvcache.arrivals(10, 1.0, 1024, seed="a"), "seed='a' must be a non-negative integer"),  # NumPy's line
    (lambda: kvcache.arrivals(10, 1.0, 1024, seed=-1), "seed=-1 must be a non-negative integer"),
    (lambda: kvcache.serve("llama-3-8b", [kvcache.Request(1, 0, 4, 4)] * 2, steps=3),
     "requests holds two of id 1: each request's id must be its own"),
    (lambda: kvcache.arrivals(100, 1, 4096, mean_prompt_tokens=0.5), "mean_prompt_tokens=0.5: a geometric length"),
    (lambda: kvcache.serve("llama-3-8b", [1, 2], steps=5), "requests holds 1: expected kvcache.Request items"),
    (lambda: kvcache.serve("llama-3-8b", (), steps=None), "steps=None must be a non-negative integer"),
    (lambda: gpusim.sweep("flash2"), "algos='flash2' must be a list of algorithm names, e.g. ['flash2']"),
    (lambda: gpusim.sweep(["flash2"], seqs=4096), "seqs=4096 must be a list of sequence lengths, e.g. [4096]"),
    (lambda: gpusim.sweep(["split_kv"], seqs=[1024]), "algos holds 'split_kv': a sweep runs forward passes (naive, "
     "flash1, flash2, hopper)"),  # was split_kv's own line, asking for a seq_kv the sweep does not take
    (lambda: gpusim.fa2_shape(0, 64), "seq=0 must be a positive integer"),  # ZeroDivisionError
    (lambda: gpusim.sweep(["flash2"], seqs=np.array(1024)), "seqs=array(1024) must be a list of sequence lengths, e.g. "
                                                            "[1024]"),  # a 0-d array: TypeError
    (lambda: gpusim.paper_blocks("flash2", "A100-40GB", 0), "head_dim=0 must be a positive integer"),  # ZeroDivision
    (lambda: gpusim.paper_blocks("flash2", "A100-40GB", 1000), "head_dim=1000 is outside 16..256"),  # was (16, 16)
    (lambda: gpusim.simulate("flash2", seq=8192, head_dim=128, gpus=8, gpu="H200", q=np.zeros((1, 1, 8, 16))),
     "q (an array) does not apply to gpus=8: context parallelism"),  # was the array printed over 16 lines
    (lambda: gpusim.simulate("flash2", q=np.zeros((1, 1, 16, 16), np.float32), k=np.zeros((1, 1, 16, 16)),
                             v=np.zeros((1, 1, 16, 16))),
     "q, k, v are float32, float64, float64: give them one dtype, or dtype= for the bytes counted"),  # counted fp16
    (lambda: gpusim.simulate("split_kv", q=np.zeros((1, 1, 1, 16)), k=np.zeros((1, 1, 16, 16), np.float16),
                             v=np.zeros((1, 1, 16, 16), np.float16)), "q, k, v are float64, float16, float16"),
    # found by a review's 535 bad inputs: each ran out of memory, overflowed deep inside, or answered silently
    (lambda: gpusim.simulate("flash2", seq=2**20, head_dim=64, gpu="H200", gpus=2**20),  # killed, out of memory
     "gpus=1,048,576 is more than the 1,024 GPUs gpusim splits a sequence over"),
    (lambda: gpusim.simulate("flash2", seq=1024, head_dim=64, batch=10**400),  # OverflowError in l2.py
     "batch=an integer of 1,329 bits is more than the 1,099,511,627,776 (40 bits) gpusim counts"),
    (lambda: gpusim.simulate("flash2", seq=1024, head_dim=64, heads=2**70, kv_heads=1),  # a time of 5e11 hours
     "heads=1,180,591,620,717,411,303,424 is more than the 1,099,511,627,776 (40 bits)"),
    (lambda: gpusim.simulate("split_kv", seq_kv=1024, head_dim=128, heads=2**41, kv_heads=8, gpu="H200"),
     "heads=2,199,023,255,552 is more than the 1,099,511,627,776"),
    (lambda: gpusim.simulate("flash2", seq=1024, head_dim=64, backward=True, batch=2**41), "batch=2,199,023,255,552"),
    (lambda: gpusim.simulate("hopper", seq=4096, head_dim=128, dtype="fp32", gpu="H200"),  # priced a kernel it has not
     "dtype='fp32': the hopper kernel runs fp16, bf16, fp8"),
    (lambda: gpusim.best_blocks("hopper", seq=4096, head_dim=128, dtype="fp32", gpu="H200"),
     "dtype='fp32': the hopper"),
    (lambda: gpusim.nominal_flops(1, 1, -5, 64), "seq=-5 must be a positive integer"),  # was 6,400: -5 squared
    (lambda: gpusim.nominal_flops(1, 1, 1024, 64, causal="no"), "causal='no' must be True or False"),  # was halved
    (lambda: gpusim.backward.nominal_flops(1, 1, -1, 64, False), "seq=-1 must be a positive integer"),
    (lambda: gpusim.backward.max_trainable_seq("flash2", layers=0, heads=16, head_dim=64, batch=8),  # was 5,202,237
     "layers=0 must be a positive integer"),
    (lambda: gpusim.backward.theorem5_counts(1024, 64, 0), "sram_bytes=0 must be a list of SRAM sizes in bytes"),
    (lambda: gpusim.backward.theorem5_counts(1024, 64, [0]), "sram_bytes=0 must be a positive integer"),
    (lambda: gpusim.reference_attention(*_qkv(), causal=True, causal_align="bottom-right"),  # was top-left, silently
     "causal_align='bottom-right' is not one of top_left, bottom_right"),
    (lambda: gpusim.reference_attention(*_qkv(), causal="yes"), "causal='yes' must be True or False"),
    (lambda: gpusim.reference_attention(*_qkv(q_shape=(1, 3, 8, 16))), "heads=3 is not a multiple of kv_heads=2"),
    (lambda: gpusim.reference_attention(*_qkv(kv_shape=(1, 2, 4, 16)), causal=True, causal_align="bottom_right"),
     "causal_align='bottom_right' with seq=8 > seq_kv=4 leaves the first 4 query rows without keys"),  # NaN rows
    (lambda: gpusim.reference_attention(*_qkv(q_shape=(2, 8, 16))), "q has shape (2, 8, 16): expected 4 dimensions"),
    (lambda: gpusim.simulate("flsh2", seq=1024, head_dim=64),
     "algo='flsh2' is not one of naive, flash1, flash2, hopper, split_kv; did you mean flash2 or flash1?"),
    (lambda: gpusim.simulate("flsh2", seq=1024, head_dim=64, backward=True), "did you mean flash2"),  # "no backward"
    (lambda: gpusim.simulate("flsh2", seq=1024, head_dim=64, gpus=8, gpu="H200"), "did you mean flash2"),
    (lambda: gpusim.speedups(gpusim.sweep(["flash2"], [1024]), baseline="flsh2"), "did you mean flash2"),  # was {}
    (lambda: gpusim.speedups([1, 2]), "results holds '1' (int): expected gpusim.simulate's Results"),  # AttributeError
    (lambda: gpusim.simulate("flash2", seq=1024, head_dim=64, block_q=64, block_kv=64,
                             gpu=dataclasses.replace(gpusim.PRESETS["H200"], name="t", max_warps_per_sm=1)),
     "need 4 warps per block; an SM of t holds 1"),  # was "need 57,344 B of shared memory; t has 232,448 B"
    (lambda: gpusim.simulate("flash2", seq=1024, head_dim=64,
                             gpu=dataclasses.replace(gpusim.PRESETS["H200"], name="t", max_warps_per_sm=1)),
     "no tile of 16..256 rows fits flash2 at head_dim=64 (fp16) on t: at the smallest tile, block_q=16, block_kv=16, "
     "head_dim=64 (fp16) in the flash2 kernel need 4 warps per block"),  # was the first clause alone: no reason
])
def test_the_models_other_functions_refuse_in_one_line(call, message):
    test_what_no_call_can_mean_is_refused_in_one_line(call, message)


def test_what_the_checks_must_still_take():
    """No load (a Poisson rate of 0), no steps, and an array of lengths: valid, and not refused by the checks."""
    assert kvcache.arrivals(10, 0, 4096) == () and kvcache.serve("llama-3-8b", (), steps=0).snapshots == ()
    assert len(kvcache.arrivals(10, 0.5, 4096, seed=3)) > 0
    assert [r.config.seq for r in gpusim.sweep(["flash2"], seqs=np.array([1024, 2048]))] == [1024, 2048]
    assert theorems.theorem2(4096, 64, 16384.0)["flash"] == 4096**2 * 64**2 / 16384
    q = np.zeros((1, 1, 16, 16), np.float32)  # arrays of two dtypes with dtype= given: it says the bytes counted
    assert gpusim.simulate("flash2", q=q, k=q.astype(np.float64), v=q, dtype="fp32").config.dtype == "fp32"


def test_algo_names_take_any_case_at_every_entry_point():
    """"FLASH2" is flash2 wherever a name is taken (README: names take any case): the training step, best_blocks,
    train, execute mode with do, several GPUs, and the Result's config, whose to_dict is then the command line's."""
    shape = dict(seq=64, head_dim=64)
    for upper, lower in (("FLASH2", "flash2"), ("Naive", "naive"), ("Flash1", "flash1")):
        assert gpusim.simulate(upper, **shape, backward=True).to_dict() == \
            gpusim.simulate(lower, **shape, backward=True).to_dict()
        assert gpusim.best_blocks(upper, **shape, backward=True) == gpusim.best_blocks(lower, **shape, backward=True)
        assert gpusim.train(upper, **shape).config.algo == lower
        assert gpusim.simulate(upper, **shape).to_dict() == gpusim.simulate(lower, **shape).to_dict()
    assert gpusim.simulate("Hopper", seq=4096, head_dim=64, gpu="H200", gpus=2).config.algo == "hopper"
    q, k, v = _qkv()
    upper, lower = (gpusim.simulate(a, q=q, k=k, v=v, do=q, backward=True, block_q=16, block_kv=16)
                    for a in ("FLASH2", "flash2"))
    assert upper.config.algo == "flash2" and all(np.array_equal(a, b) for a, b in zip(upper.grads, lower.grads))
    results = gpusim.sweep(["NAIVE", "Flash2"], seqs=[512])
    assert [r.config.algo for r in results] == ["naive", "flash2"] and gpusim.speedups(results, "Naive")["flash2"]
    with pytest.raises(ValueError, match="^algo='FLASH4' is not one of"):  # an unknown name is named as given
        gpusim.simulate("FLASH4", **shape)


def test_best_blocks_refuses_what_simulate_refuses_when_its_cache_holds_the_like():
    """best_blocks keeps its picks in a cache whose keys take True for 1: backward=1 was accepted (and answered
    backward=True's tiles) once backward=True had been asked, causal=1 and block_q=True likewise."""
    shape = dict(seq=64, head_dim=64)
    for good, bad, message in ((dict(backward=True), dict(backward=1), "backward=1 must be True or False"),
                               (dict(causal=True), dict(causal=1), "causal=1 must be True or False"),
                               (dict(block_q=1), dict(block_q=True), "block_q=True must be a positive integer")):
        gpusim.best_blocks("flash2", **shape, **good)
        with pytest.raises(ValueError, match=f"^{message}$"):
            gpusim.best_blocks("flash2", **shape, **bad)


def test_dtype_and_strategy_take_any_case_as_algo_gpu_and_link_do():
    """"FP16" is fp16 and "Zigzag" zigzag, as the command line takes them: the same Result."""
    shape = dict(seq=4096, head_dim=64, heads=4, gpu="H200")
    for kwargs in (dict(), dict(backward=True), dict(gpus=2, strategy="zigzag", causal=True)):
        upper = {k: v.title() if k == "strategy" else v for k, v in kwargs.items()}
        assert gpusim.simulate("flash2", **shape, dtype="FP16", **upper).to_dict() == \
            gpusim.simulate("flash2", **shape, dtype="fp16", **kwargs).to_dict()
    assert gpusim.simulate("split_kv", seq_kv=4096, head_dim=64, dtype="BF16").config.dtype == "bf16"
    assert kvcache.bytes_per_token("llama-3-8b", "FP16") == kvcache.bytes_per_token("llama-3-8b")


def test_several_gpus_default_to_the_link_their_preset_names():
    for gpu, link in (("A100-40GB", "nvlink3"), ("H100-SXM", "nvlink4"), ("H200", "nvlink4")):
        assert gpusim.simulate("flash2", seq=4096, head_dim=64, gpu=gpu, gpus=2).link.name == link


def test_unknown_gpu_suggests_close_names():
    with pytest.raises(ValueError, match="did you mean H100-SXM"):
        gpusim.get_gpu("H100-SMX")
    for typed in ("a100", "A100"):  # the names are matched without case, as the look-up is: "a100" missed A100-40GB
        with pytest.raises(ValueError, match="did you mean A100-80GB or A100-40GB"):
            gpusim.get_gpu(typed)


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


@pytest.mark.parametrize("algo, backward", [("naive", False), ("flash1", False), ("flash2", False), ("flash2", True)])
def test_finite_arrays_that_overflow_float32_are_refused_not_answered_nan(algo, backward):
    """q and k of 1e19 (finite float32): their scores, about 1e40, overflow float32, and every row came back NaN
    with NumPy's warnings only. float64 arrays of the same values run, and agree with the reference."""
    q, k, v = (x.astype(np.float32) for x in _qkv())
    big = dict(q=q * 1e19, k=k * 1e19, v=v, block_q=16, block_kv=16, backward=backward, do=v if backward else None)
    with pytest.raises(ValueError) as err:
        gpusim.simulate(algo, **big)
    assert "execute mode overflows float32 (it holds 3.4e+38)" in str(err.value) and "pass float64" in str(err.value)
    wide = gpusim.simulate(algo, **{**big, **{name: big[name].astype(np.float64) for name in "qkv"}},
                           dtype="fp32")
    np.testing.assert_allclose(wide.output, gpusim.reference_attention(q * 1e19, k * 1e19, v), rtol=1e-9, atol=1e-12)


def test_a_decode_cache_that_overflows_float32_is_refused_not_answered_zero():
    """The split-KV walk returned zeros (finite, wrong) for scores past float32's largest."""
    from gpusim import decode_execute
    rng = np.random.default_rng(0)
    q, cache = rng.standard_normal((1, 8, 1, 32), np.float32), rng.standard_normal((1, 2, 64, 32), np.float32)
    with pytest.raises(ValueError, match="execute mode overflows float32"):
        decode_execute.decode_attention(q * 1e20, cache * 1e20, cache, cache_seqlens=[64], gpu="H200")
    out = decode_execute.decode_attention(q * 1e17, cache * 1e17, cache, cache_seqlens=[64], gpu="H200")[0]
    np.testing.assert_allclose(out, decode_execute.decode_reference(q * 1e17, cache * 1e17, cache, cache_seqlens=[64]),
                               rtol=0, atol=1e-5)


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


COUNT = ["count", "--algo", "flash2", "--seq", "1024", "--head-dim", "64"]
# Every bad command line, with a part of the one line it must give. The model's refusals reach the command
# line through `count` too: add them here as they come (N past the limit, ...).
CLI_BAD_INPUTS = [
    ([], "the following arguments are required: {gpus,count,decode,sweep}"),
    (["counts"], "argument {gpus,count,decode,sweep}: invalid choice: 'counts'"),
    (["count", "--seq", "1024", "--head-dim", "64"], "the following arguments are required: --algo"),
    (COUNT + ["--bogus"], "unrecognized arguments: --bogus (try `python -m gpusim count --help`)"),
    (["decode", "--seq-kv", "4096", "--head-dim", "64", "--gpus", "2"],  # was `python -m gpusim --help`: no options
     "unrecognized arguments: --gpus 2 (try `python -m gpusim decode --help`)"),
    (["count", "--algo", "flash4", "--seq", "8", "--head-dim", "8"], "argument --algo: invalid choice: 'flash4'"),
    (["count", "--algo", "flash2", "--seq", "1e6", "--head-dim", "64"], "argument --seq: invalid int value: '1e6'"),
    (COUNT + ["--dtype", "int8"], "argument --dtype: invalid choice: 'int8'"),
    (["count", "--algo", "flash2", "--seq", "0", "--head-dim", "64"], "seq=0 must be a positive integer"),
    (COUNT + ["--gpu", "B200"], "unknown gpu='B200': known GPUs are"),
    (["count", "--algo", "flash2", "--seq", "64", "--head-dim", "128", "--block-q", "512", "--block-kv", "64", "--gpu",
      "T4"], "need 163,840 B of SRAM in the flash2 kernel; T4 has 65,536 B per thread block"),
    (COUNT + ["--heads", "6", "--kv-heads", "4"], "heads=6 is not a multiple of kv_heads=4"),
    (COUNT + ["--strategy", "zigzag"], "--strategy zigzag without --gpus: give the GPUs the sequence is split over"),
    (COUNT + ["--link", "pcie5"], "--link pcie5 without --gpus"),
    (COUNT + ["--link", ""], "--link '' without --gpus"),  # was the Python call's "link='' without gpus="
    (COUNT + ["--gpus", "2", "--gpu", "T4"], "--gpu T4 has no NVLink preset: give --link (one of nvlink4, "),  # link=
    (COUNT + ["--gpus", "2", "--gpu", "T4"], "or a topology: node8-nvlink4, nodes-nvlink4-ib-ndr)"),
    (COUNT + ["--gpus", "2", "--strategy", "usp"], "--strategy usp needs a topology: give --link (one of "
                                                   "node8-nvlink4, nodes-nvlink4-ib-ndr), not the link 'nvlink3'"),
    (COUNT + ["--gpus", "2", "--seq-kv", "512"],  # was "the forward only (no backward, decoding or arrays)"
     "seq_kv=512 does not apply to gpus=2: the context model takes seq_kv equal to seq=1024 only"),
    (COUNT + ["--gpus", "2", "--causal", "--causal-align", "bottom_right"],
     "causal_align='bottom_right' does not apply to gpus=2: the context model takes the top-left causal mask only"),
    (["sweep", "--out", "/missing/dir/x"], "argument --out: /missing/dir/x: folder /missing/dir does not exist"),
    (["sweep", "--seqs", "512,lots"], "argument --seqs: 'lots' is not an integer"),
    (["decode", "--seq-kv", "4096", "--head-dim", "7"], "head_dim=7 is outside 16..256"),
    (["decode", "--seq-kv", "4096,0", "--head-dim", "64"], "argument --seq-kv: 0 is not a positive integer"),
    (["decode", "--seq-kv", "4096", "--head-dim", "64", "--page-size", "12"], "page_size=12"),
    (["sweep", "--algos", "naive,flash4"], "argument --algos: 'flash4' is not one of naive, flash1, flash2, hopper"),
    (["sweep", "--seqs", "512,0"], "argument --seqs: 0 is not a positive integer"),
    (["sweep", "--head-dim", "0"], "argument --head-dim: 0 is not a positive integer"),
    (["decode", "--seq-kv", "9223372036854775808", "--head-dim", "64"],  # was a 37-line OverflowError
     "seq_kv[0]=9,223,372,036,854,775,808 is more than the 1,099,511,627,776 (40 bits) cached tokens gpusim counts"),
]


@pytest.mark.parametrize("argv, message", CLI_BAD_INPUTS, ids=lambda x: " ".join(x) if isinstance(x, list) else "")
def test_command_line_refuses_in_one_line(argv, message):
    p = subprocess.run([sys.executable, "-m", "gpusim", *argv], capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (2, ""), p.stderr
    assert p.stderr.startswith("gpusim: error: ") and p.stderr.count("\n") == 1, p.stderr
    assert message in p.stderr and "--help`)" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("algo, kwargs, message", [
    ("hopper", dict(head_dim=64), "algo='hopper' needs a Hopper (sm_90) GPU preset: H100-SXM, H200, H200-measured, "
                                  "H100-measured; A100-40GB is sm_80"),
    ("hopper", dict(head_dim=96, gpu="H200"), "head_dim=96: the hopper kernel runs head_dim 64 and 128"),
    ("flash2", dict(head_dim=7), "head_dim=7 is outside 16..256, the head dims the flash2 kernel runs"),
    ("naive", dict(head_dim=512), "head_dim=512 is outside 16..256, the head dims the naive kernel runs"),
    ("flash1", dict(head_dim=8, backward=True), "head_dim=8 is outside 16..256"),
    ("split_kv", dict(head_dim=8, seq_kv=100), "head_dim=8 is outside 16..256, the head dims the split_kv kernel runs"),
])
def test_what_the_kernels_cannot_run_is_refused(algo, kwargs, message):
    """The hopper pass needs a Hopper GPU and d = 64 or 128 (kernels/hopper.py); the others 16..256
    (gpusim.passes.base.Pass.HEAD_DIMS, which kernels/launch.py checks). One line, naming the value and the limit."""
    with pytest.raises(ValueError) as err:
        gpusim.simulate(algo, **{"seq": 1024, **kwargs})
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


@pytest.mark.parametrize("kwargs, message", [
    (dict(block_q=0, block_kv=64), "block_q=0 must be a positive integer"),
    (dict(block_q=64, block_kv=64, num_warps=3), "num_warps=3 must be a power of two >= 1"),
    (dict(block_q=64, block_kv=64, num_warps=64), "num_warps=64 is more than the 32 warps (1,024 threads) a thread "
                                                  "block may have"),
    (dict(block_q=64, block_kv=64, mask="diagonal"), "mask='diagonal' is not one of every, branch, split"),
])
def test_tiles_are_checked_when_made(kwargs, message):
    from gpusim.shape import Tiles
    with pytest.raises(ValueError) as err:
        Tiles(**kwargs)
    assert str(err.value) == message


def test_a_configuration_says_the_launch_it_prices():
    """kernels/hopper.py's table: d = 128, fp16, not causal is warp-specialized, 128 x 128, 4 warps a group."""
    tiles = gpusim.simulate("hopper", seq=4096, head_dim=128, gpu="H200").config.tiles
    assert (tiles.blocks, tiles.num_warps, tiles.warp_specialize, tiles.mask) == ((128, 128), 4, True, "every")
    assert gpusim.simulate("flash2", seq=4096, head_dim=64, block_q=128, block_kv=64).config.tiles.num_warps == 8


def test_execute_mode_estimates_its_time_and_refuses_what_would_take_minutes():
    """flash2 at N = 16,384, d = 128, 16 heads, 128 x 128 tiles: 262,144 steps (under the step limit) but
    2.2 TFLOP of float64 matmuls, about 147 s at NumPy's 15 GFLOP/s and 4 s of steps: refused, in one line."""
    steps, flops = 16 * 128 * 128 + 16 * 128, 4 * 128 * 16384**2 * 16
    q = np.zeros((1, 16, 16384, 128), np.float16)
    with pytest.raises(ValueError) as err:
        gpusim.simulate("flash2", q=q, k=q, v=q, block_q=128, block_kv=128)
    assert str(err.value).startswith(f"execute mode would take about {steps * 16e-6 + flops / 15e9:,.0f} s in "
                                      f"Python and NumPy (limit 120 s)")


def test_a_long_walk_reports_its_progress_on_stderr(monkeypatch, capsys):
    from gpusim import execute
    monkeypatch.setattr(execute, "PROGRESS_AFTER_S", 0.0)
    gpusim.simulate("flash2", seq=256, head_dim=16, block_q=16, block_kv=16, trace=True)
    lines = capsys.readouterr().err.splitlines()
    steps = 16 * 16 + 16  # a step per tile, one more per Q block
    assert len(lines) == 20 and lines[-1] == f"gpusim: {steps // 20 * 20:,} of {steps:,} steps"


def test_simulate_takes_a_tiles_and_refuses_it_where_it_does_not_apply():
    """simulate(tiles=gpusim.Tiles(...)): the blocks and the knobs the kernel takes, priced as launched (the same
    Config as make_config's); one line each for both blocks and tiles, a knob the kernel does not take, decoding
    and several GPUs."""
    tiles = gpusim.Tiles(64, 32, num_warps=2)
    r = gpusim.simulate("flash2", seq=1024, head_dim=64, heads=4, tiles=tiles, gpu="H200")
    assert r.config == gpusim.config.make_config("flash2", seq=1024, head_dim=64, heads=4, tiles=tiles, gpu="H200")
    assert (r.config.tiles.blocks, r.config.tiles.num_warps) == ((64, 32), 2)
    plain = gpusim.simulate("flash2", seq=1024, head_dim=64, heads=4, block_q=64, block_kv=32, gpu="H200")
    assert r.counts == plain.counts and r.predicted_time_s != plain.predicted_time_s  # 2 warps, not the rule's 4
    for kw, says in ((dict(algo="flash2", block_q=64), "were both given"),
                     (dict(algo="flash2", tiles=gpusim.Tiles(64, 32, overlap=True)), "the flash2 kernel takes"),
                     (dict(algo="split_kv", seq=None, seq_kv=1024), "does not apply to algo='split_kv'"),
                     (dict(algo="flash2", gpus=2), "its tiles given as block_q and block_kv")):
        with pytest.raises(ValueError, match=says):
            gpusim.simulate(**{"seq": 1024, "head_dim": 64, "tiles": tiles, **kw})


def test_the_overflow_check_reads_what_the_walk_reads():
    """A cache past its requests' lengths may hold anything: large finite values there were refused (the norms took
    the whole cache), NaN there was not. float64 arrays past 1e154 squared to infinity in the norms: scaled first."""
    from gpusim import decode_execute
    rng = np.random.default_rng(0)
    q, cache = rng.standard_normal((1, 8, 1, 32), np.float32), rng.standard_normal((1, 2, 64, 32), np.float32)
    cache[:, :, 40:] = 3e38  # past cache_seqlens=[40]
    out = decode_execute.decode_attention(q, cache, cache, cache_seqlens=[40], gpu="H200")[0]
    np.testing.assert_allclose(out, decode_execute.decode_reference(q, cache, cache, cache_seqlens=[40]), atol=1e-5)
    q, k, v = _qkv()
    r = gpusim.simulate("flash2", q=q * 1e160, k=k * 1e-160, v=v, block_q=16, block_kv=16)
    np.testing.assert_allclose(r.output, gpusim.reference_attention(q * 1e160, k * 1e-160, v), rtol=1e-9, atol=1e-12)


def test_best_blocks_refuses_a_mask_alignment_without_a_mask_and_empty_names_are_refused():
    """best_blocks answered causal_align='bottom_right' at causal=False, which simulate refuses; dtype='' and
    causal_align='' were read as not given (fp16, top-left), where every other unknown name is refused."""
    with pytest.raises(ValueError, match="^causal_align='bottom_right' does not apply to causal=False"):
        gpusim.best_blocks("flash2", seq=4096, head_dim=128, causal_align="bottom_right")
    assert gpusim.best_blocks("flash2", seq=4096, head_dim=128, causal=True, causal_align="bottom_right")
    for algo, kwargs in (("flash2", dict(seq=256, head_dim=64)), ("flash2", dict(seq=256, head_dim=64, gpus=2)),
                         ("split_kv", dict(seq_kv=256, head_dim=64))):
        with pytest.raises(ValueError, match="^dtype='' is not supported"):
            gpusim.simulate(algo, **kwargs, dtype="", gpu="H200")
    for algo, kwargs in (("flash2", dict(seq=256, head_dim=64, causal=True)),
                         ("split_kv", dict(seq_kv=256, head_dim=64))):
        with pytest.raises(ValueError, match="^causal_align='' is not one of (top_left, bottom_right|bottom_right, "
                                             "top_left)$"):
            gpusim.simulate(algo, **kwargs, causal_align="")
