"""The CPU twin of the two-GPU run: kernels/context.py with the gloo backend in two processes (one spawn for
every case), the local kernel in Triton's interpreter. Each strategy's output equals the float64 reference
within the flash2 tests' bound, and the bytes each rank sends (counted around its send/recv, all-to-all and
all-gather calls) equal gpusim's link_send_bytes with ==."""
import os

import numpy as np
import pytest

pytest.importorskip("triton", reason="no triton: the kernels extra (Linux only; make omits it without a CPU torch)")
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import gpusim
from gpusim_kernels import context, reference_attention
from gpusim_kernels.interpreter import INTERPRETED

# make test's processes: one runs the module, so that the two-process twin (the module's fixture) is spawned once
pytestmark = [pytest.mark.skipif(not INTERPRETED, reason="the twin runs on CPU tensors: TRITON_INTERPRET=1"),
              pytest.mark.xdist_group("context_twin")]
WORLD = 2
DTYPES = {"fp32": torch.float32, "fp16": torch.float16}
UNIT_ROUNDOFF = {"fp32": 2.0**-24, "fp16": 2.0**-11}
# (strategy, causal, dtype, heads, kv_heads): batch 1, N 128, d 16
CASES = [("ring", False, "fp16", 2, 2), ("ring", True, "fp16", 4, 2), ("zigzag", True, "fp16", 2, 2),
         ("zigzag", False, "fp32", 2, 1), ("ulysses", True, "fp16", 4, 2), ("ulysses", False, "fp32", 2, 2),
         ("allgather", True, "fp16", 2, 2), ("allgather", False, "fp16", 4, 2)]
N, D = 128, 16


def inputs(dtype, heads, kv_heads, seed=0):
    gen = torch.Generator().manual_seed(seed)
    shapes = [(1, heads, N, D), (1, kv_heads, N, D), (1, kv_heads, N, D)]
    return [torch.randn(s, generator=gen).to(DTYPES[dtype]) for s in shapes]


def twin(rank, folder):
    """One rank: every case, then the refusals; what it computed and sent, saved for the parent."""
    dist.init_process_group("gloo", init_method=f"file://{folder}/store", rank=rank, world_size=WORLD)
    out = {}
    for strategy, causal, dtype, heads, kv_heads in CASES:
        cut = context.zigzag_shard if strategy == "zigzag" else context.shard
        q, k, v = (cut(x, rank, WORLD) for x in inputs(dtype, heads, kv_heads))
        link = context.LinkCounter()
        o = context.context_attention(q, k, v, strategy=strategy, causal=causal, link=link)
        out[strategy, causal, dtype] = (o, link.sent_bytes)
    q, k, v = inputs("fp16", 2, 2)
    refusals = []
    for args, strategy in [((q[:, :, : 64 - 16 * rank], k[:, :, :64], v[:, :, :64]), "zigzag"),  # rank 1: fewer
                           ((q[:, :, :33], k[:, :, :33], v[:, :, :33]), "zigzag"),  # 66 tokens are not 4 chunks
                           ((q[:, :, :32], k[:, :, :64], v[:, :, :64]), "ring"),  # causal shards of two lengths
                           ((q[:, :, :64].double(), k[:, :, :64].double(), v[:, :, :64].double()), "ring"),  # both
                           ((q[:, :, :64].to(torch.float64 if rank else torch.float16), k[:, :, :64],
                             v[:, :, :64]), "zigzag")]:  # rank 1's q alone: the kernel refuses it, on rank 1 only
        try:
            context.context_attention(*args, strategy=strategy, causal=True)
        except ValueError as err:
            refusals.append(str(err))
    shards = [x[:, :, :64] for x in (q, k, v)]
    for call in [dict(causal=rank == 0), dict(strategy=("ring", "allgather")[rank]),  # each rank its own option
                 dict(shards=[x.to((torch.float16, torch.float32)[rank]) for x in shards])]:
        try:
            context.context_attention(*call.pop("shards", shards), **call)
        except ValueError as err:
            refusals.append(str(err))
    out["refusals"] = refusals
    # the group still works: ring's sends had been posted before the kernel refused, and the next call waited forever
    out["after"] = context.context_attention(*(context.shard(x, rank, WORLD) for x in (q, k, v)), strategy="ring",
                                             causal=True)
    torch.save(out, f"{folder}/rank{rank}.pt")
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("twin")
    os.environ.setdefault("TRITON_INTERPRET", "1")
    mp.spawn(twin, args=(str(folder),), nprocs=WORLD, join=True)
    return [torch.load(folder / f"rank{r}.pt") for r in range(WORLD)]


def relative_error(x, ref):
    return ((x.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("strategy, causal, dtype, heads, kv_heads", CASES)
def test_twin_output_and_bytes(ranks, strategy, causal, dtype, heads, kv_heads):
    q, k, v = inputs(dtype, heads, kv_heads)
    parts = [r[strategy, causal, dtype][0] for r in ranks]
    o = context.zigzag_unshard(parts) if strategy == "zigzag" else torch.cat(parts, dim=2)
    ref = reference_attention(q, k, v, causal=causal)
    # the flash2 tests' bound (twice the error of torch's attention in the same precision, plus a rounding of
    # O), plus one more rounding: each step's O is rounded to the dtype before the merge
    group = heads // kv_heads
    same = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(group, 1),
                                                            v.float().repeat_interleave(group, 1),
                                                            is_causal=causal).to(q.dtype)
    assert relative_error(o, ref) <= 2 * relative_error(same, ref) + 2 * UNIT_ROUNDOFF[dtype]
    counted = gpusim.simulate("flash2", seq=N, head_dim=D, heads=heads, kv_heads=kv_heads, causal=causal, dtype=dtype,
                              gpus=WORLD, strategy=strategy).link_send_bytes
    assert [r[strategy, causal, dtype][1] for r in ranks] == [counted] * WORLD


def test_twin_refuses_unequal_shards_odd_zigzag_chunks_a_causal_mask_over_unequal_q_and_k_and_unlike_calls(ranks):
    """Ranks whose calls differed in causal (an output neither mask gives), strategy (each waiting on sends the other
    never makes), kernel or dtype (a gloo abort on send buffers of two sizes) were not refused: each now is, on every
    rank, before anything is sent."""
    for rank, r in enumerate(ranks):
        unequal, odd, causal, dtype, one_rank, *options = r["refusals"]
        assert "shards differ in shape" in unequal and "\n" not in unequal
        assert "not divisible by 2P = 4" in odd
        assert causal.startswith("causal=True, strategy='ring': q's shard has 32 tokens and k's 64")
        assert dtype.startswith("q has dtype torch.float64") and "\n" not in dtype
        assert one_rank.startswith("q has dtype torch.float64" if rank else
                                   "rank 1 of the group refused its shards (its own line says why): nothing was sent")
        assert options == [
            "the ranks called context_attention with causal True on rank 0, False on rank 1: every rank must pass the "
            "same",
            "the ranks called context_attention with strategy 'ring' on rank 0, 'allgather' on rank 1: every rank must "
            "pass the same",
            "the ranks' shards differ in dtype: torch.float16 on rank 0, torch.float32 on rank 1; every rank must hold "
            "the same dtype"]


def test_ranks_of_two_local_kernels_are_refused_by_name():
    """The gathered rows (refused, strategy, kernel, causal, shapes, dtype) of two ranks whose kernels differ: the
    twin cannot call the Hopper kernel on the CPU (it refuses there first), so its row is checked as gathered."""
    row = [0, context.STRATEGIES.index("ring"), 0, 1, *(1, 2, 64, 16) * 3, 0]
    other = [*row[:2], list(context.LOCAL).index("hopper"), *row[3:]]
    context._check_alike([row, row])
    with pytest.raises(ValueError, match="^the ranks called context_attention with kernel 'flash2' on rank 0, 'hopper' "
                                         "on rank 1: every rank must pass the same$"):
        context._check_alike([row, other])


def test_twin_runs_on_after_its_kernel_refused_shards(ranks):
    """A refusal by the local kernel (float64 shards) came after ring had posted its sends: the next call on the
    group waited forever. The kernel's checks now run before anything is sent, and every rank refuses together."""
    q, k, v = inputs("fp16", 2, 2)
    o = torch.cat([r["after"] for r in ranks], dim=2)
    assert relative_error(o, reference_attention(q, k, v, causal=True)) < 1e-2


def test_without_a_process_group_it_names_torchrun():
    q, k, v = inputs("fp16", 2, 2)
    with pytest.raises(ValueError, match="torchrun --nproc-per-node P"):
        context.context_attention(q, k, v)


def test_merge_is_attention_over_the_union_of_the_keys():
    q, k, v = (x.double() for x in inputs("fp32", 2, 2))
    s = q @ k.transpose(-1, -2) * D**-0.5
    parts = [(torch.softmax(t, -1) @ vv, torch.logsumexp(t, -1)) for t, vv in
             ((s[..., :40], v[:, :, :40]), (s[..., 40:], v[:, :, 40:]))]
    o, lse = context.merge(*parts[0], *parts[1])
    torch.testing.assert_close(o, torch.softmax(s, -1) @ v)
    torch.testing.assert_close(lse, torch.logsumexp(s, -1))


@pytest.mark.parametrize("cut, args, message", [
    ("shard", (1, 3), "x has N=128 tokens: not divisible into 3 equal chunks (1 per rank, world=3)"),
    ("zigzag_shard", (0, 3), "x has N=128 tokens: not divisible into 6 equal chunks (2 per rank, world=3)"),
    ("shard", (2, 2), "rank=2 is not a rank of world=2: it must be an integer 0 .. 1"),
    ("zigzag_shard", (-1, 2), "rank=-1 is not a rank of world=2: it must be an integer 0 .. 1"),
    ("shard", (1.0, 2), "rank=1.0 is not a rank of world=2: it must be an integer 0 .. 1"),
    ("shard", (0, 0), "world=0 must be a positive integer, the number of ranks"),
])
def test_shards_that_would_be_unequal_or_of_no_rank_are_refused_in_one_line(cut, args, message):
    """N not divisible into the world's equal shards (torch.chunk made 43, 43 and 42 tokens), a rank outside the
    world (an IndexError inside torch): one line naming the value and the limit."""
    x = inputs("fp32", 2, 2)[0]
    with pytest.raises(ValueError) as err:
        getattr(context, cut)(x, *args)
    assert str(err.value) == message


def test_shards_are_equal_and_zigzag_unshard_undoes_zigzag_shard():
    x = inputs("fp32", 2, 2)[0]
    assert torch.equal(torch.cat([context.shard(x, r, 4) for r in range(4)], dim=2), x)
    for rank in (torch.tensor(1), np.int64(1)):  # an integer of any kind is a rank, as list indexing takes it
        assert torch.equal(context.shard(x, rank, torch.tensor(4)), context.shard(x, 1, 4))
    assert torch.equal(context.zigzag_unshard([context.zigzag_shard(x, r, 4) for r in range(4)]), x)


@pytest.mark.parametrize("parts, message", [
    (lambda x: [x[:, :, :4], x[:, :, :6]], "parts are shaped [(1, 2, 4, 16), (1, 2, 6, 16)]"),  # was N = 10, silently
    (lambda x: x, "parts is shaped (1, 2, 128, 16): expected every rank's zigzag_shard, a list"),  # split along batch
    (lambda x: [], "parts is list: expected every rank's zigzag_shard"),  # torch.cat's error
    (lambda x: [x[:, :, :3]] * 2, "N/P even (two chunks)"),
])
def test_zigzag_unshard_refuses_what_no_zigzag_shard_gives_in_one_line(parts, message):
    with pytest.raises(ValueError) as err:
        context.zigzag_unshard(parts(inputs("fp32", 2, 2)[0]))
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("rows", [(40, 88), (40, 1)])
def test_merge_refuses_partials_of_other_shapes_in_one_line(rows):
    """Partials of different rows: torch's RuntimeError, or (one row) a silent broadcast; one line instead."""
    (o1, lse1), (o2, lse2) = ((torch.zeros(1, 2, n, D), torch.zeros(1, 2, n)) for n in rows)
    with pytest.raises(ValueError) as err:
        context.merge(o1, lse1, o2, lse2)
    assert str(err.value) == (f"merge: o1 (1, 2, 40, 16), lse1 (1, 2, 40), o2 (1, 2, {rows[1]}, 16), lse2 "
                              f"(1, 2, {rows[1]}): the o's must match, and each lse be its o's (B, H, n)")
