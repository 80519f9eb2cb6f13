"""Context parallelism over torch.distributed: one attention forward split by sequence over the ranks of a
process group (NCCL on GPUs, gloo on CPU: the same code), the local attention the project's flash2 (or the
Hopper kernel) with its log-sum-exp, partial results merged with the LSE. gpusim.simulate(..., gpus=P,
strategy=...) counts what this moves: tests/test_context_kernels.py checks the bytes with ==.

Launch with `torchrun --nproc-per-node P` (and dist.init_process_group). Each rank passes its shard:
q (B, H, N/P, d), k and v (B, H_kv, N/P, d); contiguous shards (shard()) for ring, ulysses and allgather,
chunks r and 2P-1-r for zigzag (zigzag_shard()). Forward only.

    >>> link = LinkCounter()
    >>> o = context_attention(q, k, v, strategy="zigzag", causal=True, link=link)  # (B, H, N/P, d)
    >>> link.sent_bytes  # == gpusim.simulate(..., gpus=P, strategy="zigzag").link_send_bytes
"""
import torch
import torch.distributed as dist

from .flash2 import check_flash2, flash2_attention
from .hopper import check_hopper, hopper_attention
from .launch import DTYPES as KERNEL_DTYPES, as_int

STRATEGIES = ("ring", "zigzag", "ulysses", "allgather")
DTYPE_CODES = tuple(KERNEL_DTYPES)  # the dtypes the local kernels take, coded for the all_gather
LOCAL = {"flash2": (flash2_attention, check_flash2), "hopper": (hopper_attention, check_hopper)}  # (kernel, checks)


class LinkCounter:
    """The communication calls of this module, each adding the bytes this rank sends to `sent_bytes`."""

    def __init__(self, group=None):
        self.group = group
        self.sent_bytes = 0

    def exchange(self, send, recv, to, source):
        """Send the tensors `send` to rank `to` while receiving `recv` from `source`, asynchronously: NCCL runs
        it on its own stream, beside the attention on the compute stream; wait() on the requests orders them."""
        ops = [dist.P2POp(dist.isend, t, dist.get_global_rank(self.group, to) if self.group else to, self.group)
               for t in send]
        ops += [dist.P2POp(dist.irecv, t, dist.get_global_rank(self.group, source) if self.group else source,
                           self.group) for t in recv]
        self.sent_bytes += sum(t.numel() * t.element_size() for t in send)
        return dist.batch_isend_irecv(ops)

    def all_to_all(self, out, inp):
        """all_to_all_single: this rank keeps 1/P of `inp` and sends the rest."""
        world = dist.get_world_size(self.group)
        self.sent_bytes += inp.numel() * inp.element_size() * (world - 1) // world
        dist.all_to_all_single(out, inp, group=self.group)

    def all_gather(self, x):
        """Every rank's x, in rank order: this rank's x goes to the P-1 others (or along a ring, as often)."""
        world = dist.get_world_size(self.group)
        parts = [torch.empty_like(x) for _ in range(world)]
        self.sent_bytes += (world - 1) * x.numel() * x.element_size()
        dist.all_gather(parts, x.contiguous(), group=self.group)
        return parts


def merge(o1, lse1, o2, lse2):
    """Two partial softmaxes over disjoint keys, for the same query rows, into one (Ring Attention; Milakov
    and Gimelshein's online softmax): lse = logaddexp(lse1, lse2), O = exp(lse1 - lse) O1 + exp(lse2 - lse) O2.
    o: (B, H, n, d), lse: (B, H, n), fp32."""
    if not (o1.shape == o2.shape and lse1.shape == lse2.shape == o1.shape[:-1]):
        raise ValueError(f"merge: o1 {tuple(o1.shape)}, lse1 {tuple(lse1.shape)}, o2 {tuple(o2.shape)}, lse2 "
                         f"{tuple(lse2.shape)}: the o's must match, and each lse be its o's (B, H, n)")
    lse = torch.logaddexp(lse1, lse2)
    return torch.exp(lse1 - lse)[..., None] * o1 + torch.exp(lse2 - lse)[..., None] * o2, lse


def shard(x, rank, world):
    """Rank `rank`'s contiguous N/P tokens of x (B, H, N, d)."""
    rank, world = _check_shard(x, rank, world, 1)
    return x.chunk(world, dim=2)[rank]


def zigzag_shard(x, rank, world):
    """Rank r's chunks r and 2P-1-r of 2P, concatenated: (B, H, N/P, d)."""
    rank, world = _check_shard(x, rank, world, 2)
    chunks = x.chunk(2 * world, dim=2)
    return torch.cat([chunks[rank], chunks[2 * world - 1 - rank]], dim=2)


def _check_shard(x, rank, world, per_rank):
    """(rank, world) as ints, or one line: world not a positive integer, rank not one of its ranks, x not
    (B, H, N, d) with N divisible into world * per_rank equal chunks (torch.chunk would make the last ones
    shorter, or fewer of them)."""
    given_rank, given_world = rank, world
    rank, world = as_int(rank), as_int(world)  # an integer of any kind (a NumPy or a 0-d torch one) as an int
    if type(world) is not int or world < 1:
        raise ValueError(f"world={given_world!r} must be a positive integer, the number of ranks")
    if type(rank) is not int or not 0 <= rank < world:
        raise ValueError(f"rank={given_rank!r} is not a rank of world={world}: it must be an integer 0 .. {world - 1}")
    if not isinstance(x, torch.Tensor) or x.dim() != 4:
        raise ValueError(f"x is {_described(x)}: expected a 4-d tensor (B, H, N, d)")
    if x.shape[2] % (world * per_rank):
        raise ValueError(f"x has N={x.shape[2]} tokens: not divisible into {world * per_rank} equal chunks "
                         f"({per_rank} per rank, world={world})")
    return rank, world


def _described(x):
    """x's shape where it is a tensor, else its type's name."""
    return f"shaped {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__


def zigzag_unshard(parts):
    """The whole (B, H, N, d) from every rank's zigzag_shard, in rank order; one line where parts is not a list of
    equal 4-d shards of an even length (a tensor would be taken apart along its batch)."""
    if not isinstance(parts, (list, tuple)) or not parts or not all(isinstance(p, torch.Tensor) for p in parts):
        raise ValueError(f"parts is {_described(parts)}: expected every rank's zigzag_shard, a list of tensors")
    shapes = {tuple(p.shape) for p in parts}
    if len(shapes) > 1 or len(parts[0].shape) != 4 or parts[0].shape[2] % 2:
        raise ValueError(f"parts are shaped {sorted(shapes)}: every rank's zigzag_shard is one (B, H, N/P, d), "
                         f"N/P even (two chunks)")
    halves = [p.chunk(2, dim=2) for p in parts]
    return torch.cat([h[0] for h in halves] + [h[1] for h in reversed(halves)], dim=2)


def context_attention(q, k, v, *, strategy="ring", causal=False, kernel="flash2", group=None, link=None,
                      check_shapes=True):
    """This rank's rows of softmax(q kᵀ / sqrt(d)) v over the whole sequence, split over the group's ranks.
    Returns O (B, H, N/P, d) in q's dtype. Checks before anything is sent: a process group (torchrun), the
    strategy and kernel, the local kernel's own checks of this rank's shards (dtype, head_dim, device, ...),
    equal shard shapes on every rank and no rank refused (one all_gather of the shapes and a refusal flag, and a
    host sync), and the divisibility each strategy needs. check_shapes=False skips the all_gather where a first
    call with the same shards has checked them: a rank whose kernel then refuses its shards raises alone, and the
    others wait on its sends (torch.distributed's timeout)."""
    if not dist.is_available() or not dist.is_initialized():
        raise ValueError("context_attention needs an initialised process group: launch with torchrun "
                         "--nproc-per-node P and call torch.distributed.init_process_group first")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy={strategy!r}: choose one of {', '.join(STRATEGIES)}")
    if kernel not in LOCAL:
        raise ValueError(f"kernel={kernel!r}: the local kernel is one of {', '.join(LOCAL)}")
    link = link or LinkCounter(group)
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    kernel_fn, check = LOCAL[kernel]
    refused = _refusal(check, q, k, v, causal)  # the local kernel's checks, before anything is sent
    if check_shapes:
        _check_shapes(q, k, v, group, world, refused, dict(strategy=strategy, kernel=kernel, causal=bool(causal)))
    if refused:
        raise ValueError(refused)
    if strategy == "zigzag" and q.shape[2] % 2:
        raise ValueError(f"strategy='zigzag': the sequence ({world} x {q.shape[2]} tokens) is not divisible by 2P "
                         f"= {2 * world}")
    if causal and strategy != "ulysses" and q.shape[2] != k.shape[2]:
        raise ValueError(f"causal=True, strategy={strategy!r}: q's shard has {q.shape[2]} tokens and k's "
                         f"{k.shape[2]}: a causal mask over shards needs them equal (the whole sequence's diagonal)")
    if strategy == "ulysses" and (q.shape[1] % world or k.shape[1] % world):
        raise ValueError(f"strategy='ulysses': heads={q.shape[1]} and kv_heads={k.shape[1]} must both be divisible "
                         f"by {world}")
    attend = _local(kernel_fn)
    q, k, v = (x.contiguous() for x in (q, k, v))  # sent as they are
    if strategy == "ulysses":
        return _ulysses(q, k, v, causal, attend, link, world)
    if strategy == "allgather":
        return _allgather(q, k, v, causal, attend, link, world, rank)
    return _ring(q, k, v, causal, strategy == "zigzag", attend, link, world, rank)


def _local(fn):
    def attend(q, k, v, causal):
        o, lse = fn(q, k, v, causal=causal, return_lse=True)
        return o.float(), lse
    return attend


def _refusal(check, q, k, v, causal):
    """The local kernel's one line for this rank's shards, or "" where its checks pass."""
    try:
        check(q, k, v, causal)
    except (ValueError, RuntimeError) as err:  # RuntimeError: the Hopper kernel on another GPU
        return str(err)
    return ""


def _check_shapes(q, k, v, group, world, refused, options):
    """Every rank's (q, k, v) shapes, dtype and options (strategy, kernel, causal), and whether its kernel refused
    its shards, gathered before anything else is sent: one line on every rank where a rank refused (so that none
    waits on a send that never comes) or the ranks differ (ranks of two strategies would wait on each other's sends;
    of two dtypes, send buffers of two sizes; of two masks, return what neither mask gives). A refused rank's shapes
    are not read (its q may not be a tensor)."""
    codes = [STRATEGIES.index(options["strategy"]), list(LOCAL).index(options["kernel"]), int(options["causal"])]
    shapes = [0] * 13 if refused else [*q.shape, *k.shape, *v.shape, DTYPE_CODES.index(q.dtype)]
    on_gpu = isinstance(q, torch.Tensor) and q.is_cuda
    device = "cpu" if dist.get_backend(group) != "nccl" else q.device if on_gpu else torch.cuda.current_device()
    mine = torch.tensor([bool(refused), *codes, *shapes], dtype=torch.int64, device=device)
    every = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(every, mine, group=group)
    every = torch.stack(every).tolist()  # one host sync
    others = [r for r, s in enumerate(every) if s[0] and r != dist.get_rank(group)]
    if others and not refused:
        raise ValueError(f"rank {', '.join(map(str, others))} of the group refused its shards (its own line says "
                         f"why): nothing was sent")
    if refused:
        return
    _check_alike(every)


def _check_alike(every):
    """One line where the ranks' gathered rows (refused, strategy, kernel, causal, q, k, v shapes, dtype) differ."""
    named = dict(strategy=STRATEGIES, kernel=tuple(LOCAL), causal=(False, True))
    for i, (name, values) in enumerate(named.items(), start=1):
        if len({row[i] for row in every}) > 1:
            calls = ", ".join(f"{values[row[i]]!r} on rank {r}" for r, row in enumerate(every))
            raise ValueError(f"the ranks called context_attention with {name} {calls}: every rank must pass the same")
    if len({row[-1] for row in every}) > 1:
        calls = ", ".join(f"{DTYPE_CODES[row[-1]]} on rank {r}" for r, row in enumerate(every))
        raise ValueError(f"the ranks' shards differ in dtype: {calls}; every rank must hold the same dtype")
    shapes = {tuple(row[4:-1]) for row in every}
    if len(shapes) > 1:
        raise ValueError(f"the ranks' shards differ in shape (q, k, v each 4-d): {sorted(shapes)}; every rank "
                         "must hold N/P tokens of the same batch, heads and head_dim")


def _ring(q, k, v, causal, zigzag, attend, link, world, rank):
    """P steps; in step s this rank holds the K/V shard of rank j = (rank - s) mod P, passes it on to rank + 1
    (send 2*(N/P)*kv_heads*d per step, steps 0 .. P-2) while it attends to it, then merges with the LSE."""
    acc = lse = None  # the paper's running partial O (B, H, N/P, d) and its row log-sum-exp, fp32
    for s in range(world):
        if s < world - 1:  # the next shard arrives while this one is in use
            received = [torch.empty_like(k), torch.empty_like(v)]
            requests = link.exchange([k, v], received, to=(rank + 1) % world, source=(rank - 1) % world)
        rows, step = _ring_step(q, k, v, causal, zigzag, attend, s, (rank - s) % world, rank)
        if step and acc is None:
            acc, lse = step
        elif step:
            acc[:, :, rows], lse[:, :, rows] = merge(acc[:, :, rows], lse[:, :, rows], *step)
        if s < world - 1:
            for request in requests:
                request.wait()
            k, v = received
    return acc.to(q.dtype)


def _ring_step(q, k, v, causal, zigzag, attend, s, j, rank):
    """(the query rows it serves, (O, lse) or None) of one ring step on rank j's K/V shard."""
    half = q.shape[2] // 2
    if s == 0 or not causal:  # its own shard (the causal diagonal), or any shard without a mask
        return slice(None), attend(q, k, v, causal and s == 0)
    if zigzag and j < rank:  # both Q chunks see rank j's first chunk (chunk j) whole, its second not at all
        return slice(None), attend(q, k[:, :, :half], v[:, :, :half], False)
    if zigzag:  # j > rank: the late Q chunk sees both of rank j's chunks whole, the early one neither
        return slice(half, None), attend(q[:, :, half:], k, v, False)
    if j < rank:  # contiguous shards: an earlier shard whole
        return slice(None), attend(q, k, v, False)
    return slice(None), None  # a later shard is masked out entirely: this rank idles in this step


def _seq_to_heads(x, link, world):
    """(B, Hx, N/P, d) sequence-split -> (B, Hx/P, N, d) head-split: head group p goes to rank p."""
    b, h, n, d = x.shape
    send = x.reshape(b, world, h // world, n, d).transpose(0, 1).contiguous()  # (P, B, Hx/P, N/P, d)
    got = torch.empty_like(send)  # got[p]: rank p's tokens of this rank's head group
    link.all_to_all(got, send)  # send (P-1)/P * (N/P)*Hx*d
    return got.permute(1, 2, 0, 3, 4).reshape(b, h // world, world * n, d)


def _heads_to_seq(x, link, world):
    """(B, Hx/P, N, d) head-split -> (B, Hx, N/P, d) sequence-split: the inverse of _seq_to_heads."""
    b, g, n, d = x.shape
    send = x.reshape(b, g, world, n // world, d).permute(2, 0, 1, 3, 4).contiguous()  # (P, B, Hx/P, N/P, d)
    got = torch.empty_like(send)  # got[p]: rank p's head group of this rank's tokens
    link.all_to_all(got, send)
    return got.transpose(0, 1).reshape(b, g * world, n // world, d)


def _ulysses(q, k, v, causal, attend, link, world):
    """All-to-all Q, K, V to head-split, attention over the whole sequence on H/P heads, O back."""
    q, k, v = (_seq_to_heads(x, link, world) for x in (q, k, v))  # (B, H/P, N, d), (B, H_kv/P, N, d)
    o, _ = attend(q, k, v, causal)
    return _heads_to_seq(o.to(q.dtype), link, world)  # (B, H, N/P, d)


def _allgather(q, k, v, causal, attend, link, world, rank):
    """K and V gathered whole (send (P-1)*(N/P)*kv_heads*d each), then this rank's rows attend to them; causal:
    the shards before this rank's whole, its own causally, merged with the LSE."""
    keys, values = link.all_gather(k), link.all_gather(v)
    if not causal:
        o, _ = attend(q, torch.cat(keys, dim=2), torch.cat(values, dim=2), False)
        return o.to(q.dtype)
    o, lse = attend(q, k, v, True)
    if rank:
        o, _ = merge(*attend(q, torch.cat(keys[:rank], dim=2), torch.cat(values[:rank], dim=2), False), o, lse)
    return o.to(q.dtype)
