"""Decoding and training through gpusim.simulate: the counts equal gpusim.decode's and gpusim.backward's
closed forms byte for byte, execute mode equals count mode and the float64 references, every kernel is timed
through its pass (compiled resources where benchmarks/resources.py compiled it), and bad input
gets one line."""
import numpy as np
import pytest

import gpusim
from gpusim import backward, compiled, decode, decode_execute
from gpusim.decode_execute import decode_reference
from gpusim.execute import attention_grad_reference, reference_attention
from gpusim.passes.split_kv import SPLIT_KV as split_kv
from gpusim.shape import REDUCE_SPLITS
from gpusim.simulate import TENSOR_ORDER

DECODE_CASES = [
    dict(batch=1, heads=32, kv_heads=8, head_dim=128, seq_kv=131072, page_size=16),  # the heuristic's splits
    dict(batch=3, heads=8, kv_heads=2, head_dim=64, seq_kv=[100, 4000, 77], page_size=64, num_splits=4),
    dict(batch=2, heads=4, kv_heads=4, head_dim=32, seq_kv=300, num_splits=1),  # contiguous, FlashAttention-2's path
    dict(batch=2, heads=8, kv_heads=2, head_dim=64, seq_kv=[500, 900], seq=4, grouped=False, num_splits=3),
    dict(batch=1, heads=4, kv_heads=1, head_dim=16, seq_kv=[40], seq=3, causal_align="top_left", block_kv=16),
]
TRAINING = dict(seq=96, seq_kv=80, head_dim=16, heads=4, kv_heads=2, batch=2, block_q=32, block_kv=16, gpu="H100-SXM")
# Execute mode runs in float64 on float64 arrays: forward and backward agree with the references to many
# times float64's unit roundoff (2**-53), summed over at most a few hundred terms: 1e-10 leaves room.
FLOAT64_TOLERANCE = 1e-10


def launch_of(case):
    options = {k: v for k, v in case.items() if k != "seq_kv"}
    options.setdefault("causal_align", "bottom_right")
    return decode.make_launch(seq_kv=case["seq_kv"], gpu="H200-measured", **options)


@pytest.mark.parametrize("case", DECODE_CASES, ids=str)
def test_decode_counts_through_simulate_are_gpusim_decode_counts(case):
    r = gpusim.simulate("split_kv", gpu="H200-measured", **case)
    launch = launch_of(case)
    assert r.counts == decode.count(launch)
    assert r.config == launch
    assert [k.name for k in r.kernels] == list(launch.kernels) and all(k.pass_ == "forward" for k in r.kernels)
    for k in r.kernels:
        assert k.programs == decode.programs(launch, k.name)
        assert (k.read_bytes - k.spill_read_bytes, k.write_bytes - k.spill_write_bytes) == tuple(
            sum(rw[i] for (kernel, _), rw in r.counts.items() if kernel == k.name) for i in (0, 1))
        assert k.predicted_time_s > 0 and k.sram_bytes_per_block == launch.sram_bytes(k.name)
    assert list(r.by_tensor) == sorted(r.by_tensor, key=TENSOR_ORDER.index)
    assert r.hbm_peak_bytes == split_kv.peak_bytes(launch)


def test_decode_dram_reads_the_cache_once_and_the_rest_once():
    r = gpusim.simulate("split_kv", **DECODE_CASES[1], gpu="H200-measured")
    launch = launch_of(DECODE_CASES[1])
    dram = r.dram_by_tensor
    for tensor in ("K", "V"):
        assert dram[tensor]["dram_read_bytes"] == r.by_tensor[tensor]["read_bytes"]  # read once per group
    assert dram["Q"]["dram_read_bytes"] == launch.batch * launch.heads * launch.head_dim * 2  # re-read by splits
    pages = sum(-(-n // launch.page_size) for n in launch.seq_kv)
    assert dram["block_table"]["dram_read_bytes"] == 4 * pages  # once, though each K/V head reads it
    assert dram["O_partial"]["dram_read_bytes"] == r.by_tensor["O_partial"]["read_bytes"]  # not kept in L2


@pytest.mark.parametrize("case", DECODE_CASES[1:], ids=str)
def test_decode_execute_mode_equals_count_mode_and_the_reference(case):
    rng = np.random.default_rng(0)
    launch = launch_of(case)
    q = rng.standard_normal((launch.batch, launch.heads, launch.seq, launch.head_dim))
    lengths = list(launch.seq_kv)
    if launch.page_size is None:
        k, v = (rng.standard_normal((launch.batch, launch.kv_heads, max(lengths), launch.head_dim)) for _ in "kv")
        table = None
    else:
        need = [-(-n // launch.page_size) for n in lengths]
        pages = rng.permutation(sum(need)).astype(np.int32)
        table = np.zeros((launch.batch, max(need)), np.int32)
        for b, start in enumerate(np.cumsum(need) - need):
            table[b, :need[b]] = pages[start:start + need[b]]
        k, v = (rng.standard_normal((sum(need), launch.page_size, launch.kv_heads, launch.head_dim)) for _ in "kv")
    options = {key: case[key] for key in ("num_splits", "grouped", "causal_align", "block_kv") if key in case}
    r = gpusim.simulate("split_kv", q=q, k=k, v=v, seq_kv=lengths, block_table=table, gpu="H200-measured",
                        **options)
    assert r.counts == gpusim.simulate("split_kv", gpu="H200-measured", **case).counts
    align = case.get("causal_align", "bottom_right")
    expected = decode_reference(q, k, v, cache_seqlens=lengths, block_table=table, causal_align=align)
    assert np.abs(r.output - expected).max() <= FLOAT64_TOLERANCE


def test_the_decode_reduce_merges_past_64_splits_in_steps_and_returns_the_lse():
    """69 active splits of one 16-key chunk each: the reduce merges 64, then 5, rescaling what it holds by
    exp(m_old - m_new). The last five splits' keys are scaled up so that their scores are the largest: with a
    step's rescale dropped the output is far off (random keys leave the running max where the first step put
    it). The LSE, which execute mode writes and the kernels return, is checked too."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 2, 1, 16))  # (B, H, seq, d)
    k, v = (rng.standard_normal((1, 1, 69 * 16, 16)) for _ in "kv")  # (B, kv_heads, S, d)
    k[:, :, 64 * 16:] *= 3
    out, launch, mem = decode_execute.decode_attention(q, k, v, cache_seqlens=[69 * 16], num_splits=69, block_kv=16,
                                                       gpu="H200-measured")
    assert int(launch.active_splits[0]) == 69 > REDUCE_SPLITS
    lse_s = mem.tensors["LSE_partial"][:, 0, :, 0]  # (splits, H): the last five hold each head's largest
    assert (lse_s[64:].max(axis=0) > lse_s[:64].max(axis=0)).all()
    expected, lse = decode_reference(q, k, v, cache_seqlens=[69 * 16], return_lse=True)
    assert np.abs(out - expected).max() <= FLOAT64_TOLERANCE
    assert np.abs(mem.tensors["LSE"] - lse).max() <= FLOAT64_TOLERANCE


@pytest.mark.parametrize("algo", backward.ALGOS)
@pytest.mark.parametrize("causal", [False, True])
def test_backward_adds_exactly_the_backward_kernels(algo, causal):
    r = gpusim.simulate(algo, **TRAINING, causal=causal, backward=True)
    forward = gpusim.simulate(algo, **TRAINING, causal=causal)
    bwd = r.backward_config
    blocks = (TRAINING["block_q"], TRAINING["block_kv"]) if algo == "naive" else backward.default_blocks(
        algo, "H100-SXM", TRAINING["head_dim"], "fp16")
    assert (bwd.block_q, bwd.block_kv) == blocks  # naive: the forward's tiles; flash: the backward's defaults
    assert r.counts == forward.counts | backward.count(bwd)
    assert not forward.counts.keys() & backward.count(bwd).keys()
    assert [(k.name, k.pass_) for k in r.kernels] == [(k.name, "forward") for k in forward.kernels] + [
        (name, "backward") for name in backward.KERNELS[algo]]
    assert r.kernels[:len(forward.kernels)] == forward.kernels
    assert r.hbm_peak_bytes == backward.peak_bytes(bwd)
    assert [k["pass"] for k in r.to_dict()["kernels"]] == [k.pass_ for k in r.kernels]
    tensors = list(r.by_tensor)
    assert tensors == sorted(tensors, key=TENSOR_ORDER.index)
    assert {"dO", "dQ", "dK", "dV"} <= set(tensors)
    assert ({"dP", "dS"} <= set(tensors)) == (algo == "naive") and ("D" in tensors) == (algo == "flash2")


@pytest.mark.parametrize("algo", backward.ALGOS)
def test_backward_execute_mode_equals_count_mode_and_the_reference_gradients(algo):
    rng = np.random.default_rng(1)
    shape = TRAINING
    q, do = (rng.standard_normal((shape["batch"], shape["heads"], shape["seq"], shape["head_dim"])) for _ in "qd")
    k, v = (rng.standard_normal((shape["batch"], shape["kv_heads"], shape["seq_kv"], shape["head_dim"])) for _ in "kv")
    blocks = {key: shape[key] for key in ("block_q", "block_kv")}
    r = gpusim.simulate(algo, q=q, k=k, v=v, do=do, causal=True, backward=True, gpu="H100-SXM", **blocks)
    assert r.counts == gpusim.simulate(algo, **shape, causal=True, backward=True).counts
    assert np.abs(r.output - reference_attention(q, k, v, causal=True)).max() <= FLOAT64_TOLERANCE
    for got, want in zip(r.grads, attention_grad_reference(q, k, v, do, causal=True)):
        assert got.shape == want.shape and np.abs(got - want).max() <= FLOAT64_TOLERANCE


def test_backward_trace_follows_the_forward_trace():
    r = gpusim.simulate("flash2", **TRAINING, backward=True, trace=True)
    kernels = [s.kernel for s in r.trace]
    assert kernels[0] == "flash2" and kernels[-1] == "dq"
    assert sum(n for s in r.trace for _, n in s.loads) == r.hbm_read_bytes
    assert r.grads is None  # no arrays were given: q, k, v and do were drawn


@pytest.mark.parametrize("algo, blocks", [("flash2", (64, 32)), ("flash2", (128, 64)), ("naive", (128, 128))])
def test_backward_kernels_are_timed_with_their_compiled_resources(algo, blocks):
    """bench_bwd.json's configurations on the H200: each backward kernel's key, with the launch the model
    prices, is benchmarks/resources.py's compile of it, made with the launch the kernel passes (Triton's
    defaults where it passes none): so the two launch alike."""
    r = gpusim.simulate(algo, seq=4096, head_dim=64, heads=32, batch=4, gpu="H200-measured", backward=True,
                        backward_blocks=blocks)
    cfg = r.backward_config
    module = cfg.pass_
    for k in r.kernels:
        if k.pass_ == "backward":
            key = ("sm_90", module.compiled_name(cfg, k.name), module.compiled_shape(cfg, k.name) if algo == "naive" else 64,
                   "fp16", False, *blocks, *module.launch(cfg, k.name))
            assert k.registers_per_thread == compiled.COMPILED[key][0]


def test_decode_kernels_are_timed_with_their_compiled_resources():
    """Each kernel under its own tiles: the split kernel's 16 padded query rows and chunk of 64, the reduce's one query
    row a program and the chunk (the one constant of the split kernel's it is compiled with)."""
    r = gpusim.simulate("split_kv", **DECODE_CASES[0], gpu="H200-measured")
    tiles = {"split_kv": (16, 64), "reduce": (1, 64)}
    for k in r.kernels:
        key = ("sm_90", k.name, split_kv.compiled_shape(r.config, k.name), "fp16", True, *tiles[k.name],
               *split_kv.launch(r.config, k.name))
        assert k.registers_per_thread == compiled.COMPILED[key][0]


def test_the_unsplit_kernel_is_latency_bound_at_batch_1():
    """Eight programs (one per K/V head) each walk the whole cache chunk by chunk, waiting for every load:
    splitting the cache over the SMs is the fix, and the model says how much it buys."""
    one = gpusim.simulate("split_kv", **DECODE_CASES[0], num_splits=1, gpu="H200-measured")
    split = gpusim.simulate("split_kv", **DECODE_CASES[0], gpu="H200-measured")
    assert one.kernels[0].latency_bound and one.kernels[0].programs == 8
    assert one.predicted_time_s > 5 * split.predicted_time_s


@pytest.mark.parametrize("kwargs, message", [
    (dict(algo="flash2", dtype="fp8", backward=True), "dtype='fp8': an fp8 forward has no backward"),
    (dict(algo="hopper", backward=True), "algo='hopper' has no backward here"),
    (dict(algo="flash2", do=np.zeros((1, 1, 64, 16))), "do (an array) does not apply to backward=False"),
    (dict(algo="flash2", backward_blocks=(64, 64)), "backward_blocks=(64, 64) does not apply to backward=False"),
    (dict(algo="flash2", causal=True, causal_align="bottom_right", seq_kv=128, backward=True),
     "causal_align='bottom_right' with seq=64 != seq_kv=128 has no backward here"),
    (dict(algo="flash2", seq_kv=128, causal_align="bottom_right"),  # was taken and echoed, as if it applied
     "causal_align='bottom_right' does not apply to causal=False"),
    (dict(algo="flash2", num_splits=4), "num_splits=4 does not apply to algo='flash2'"),
    (dict(algo="naive", page_size=16), "page_size=16 does not apply to algo='naive'"),
    (dict(algo="split_kv", seq_kv=256, block_q=64), "block_q=64 does not apply to algo='split_kv'"),
    (dict(algo="split_kv", seq_kv=256, backward=True), "backward=True does not apply to algo='split_kv'"),
    (dict(algo="split_kv", seq_kv=256, num_splits=0), "num_splits=0 must be a positive integer"),
    (dict(algo="split_kv", seq_kv=256, page_size=0), "page_size=0 must be a positive number"),
    (dict(algo="split_kv"), "algo='split_kv' needs head_dim and seq_kv"),
    (dict(algo="split_kv", seq_kv=256, trace=True), "trace=True for algo='split_kv' needs q"),
    (dict(algo="flash3"), "algo='flash3' is not one of naive, flash1, flash2, hopper, split_kv"),
    (dict(algo="flash2_backward"), "algo='flash2_backward' is not one of naive, flash1, flash2, hopper, split_kv"),
])
def test_bad_input_gets_one_line(kwargs, message):
    shape = dict(seq=64, head_dim=16, gpu="H200-measured") | {k: v for k, v in kwargs.items() if k != "algo"}
    with pytest.raises(ValueError) as err:
        gpusim.simulate(kwargs["algo"], **shape)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_backward_with_arrays_needs_do():
    q = np.zeros((1, 1, 32, 16))
    with pytest.raises(ValueError, match="^backward=True with q, k, v needs do"):
        gpusim.simulate("flash2", q=q, k=q, v=q, backward=True)
    with pytest.raises(ValueError, match=r"^do has shape \(1, 1, 8, 16\): expected the output's gradient, shaped like"):
        gpusim.simulate("flash2", q=q, k=q, v=q, do=q[:, :, :8], backward=True)
    with pytest.raises(ValueError, match="^do contains NaN or infinity$"):  # it named the shapes, which matched
        gpusim.simulate("flash2", q=q, k=q, v=q, do=np.full_like(q, np.nan), backward=True)
    with pytest.raises(ValueError, match="^do has dtype int64: expected a floating-point array$"):
        gpusim.simulate("flash2", q=q, k=q, v=q, do=q.astype(np.int64), backward=True)


@pytest.mark.parametrize("kw", [dict(algo="flash2", seq=300, head_dim=64, heads=4, kv_heads=2, causal=True),
                                dict(algo="naive", seq=200, head_dim=64, backward=True),
                                dict(algo="split_kv", seq_kv=[100, 2000, 37], heads=8, kv_heads=2, head_dim=64,
                                     batch=3, page_size=16)])
def test_a_configuration_is_counted_once_and_each_result_has_its_own_counts(kw, monkeypatch):
    """Count mode's bytes and the L2's split are kept per configuration (run._counted): the second simulate() of a
    configuration counts nothing and prices the same bytes, and changing one Result's dicts leaves the next's."""
    first = gpusim.simulate(**kw)
    calls = []
    for pass_ in {type(first.config.pass_), type(getattr(first.backward_config, "pass_", first.config.pass_))}:
        monkeypatch.setattr(pass_, "count", lambda self, cfg: calls.append(cfg) or {})
    first.counts.clear(), first.dram.clear()
    again = gpusim.simulate(**kw)
    assert calls == [] and again.counts and again.dram and again.predicted_time_s == first.predicted_time_s
    assert again.counts == gpusim.simulate(**kw).counts


def test_the_naive_softmax_streams_a_row_for_the_limits_it_exceeds():
    """softmax_limits names what a row of S exceeds (softmax_fits is its absence): the registers from 32,768 elements
    on every preset, the SRAM where a row is past it too (a T4's 64 KiB at 65,536 fp16 elements)."""
    from gpusim.passes.naive import softmax_limits
    fits, h100, t4 = (gpusim.simulate("naive", seq=n, head_dim=64, gpu=g).config
                      for n, g in ((32768, "H100-SXM"), (65536, "H100-SXM"), (65536, "T4")))
    limits = [softmax_limits(cfg) for cfg in (fits, h100, t4)]
    assert limits == [(), ("registers",), ("registers", "sram")]
    assert fits.softmax_fits and not h100.softmax_fits and not t4.softmax_fits
