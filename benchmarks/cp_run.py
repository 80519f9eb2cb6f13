"""benchmarks/cp.py's measurements (torch, CUDA, NCCL): the link microbenchmark, the project's providers,
PyTorch's context_parallel and one GPU's attention. Timed with CUDA events over a window of calls after one
warm-up call (which compiles); a distributed time is the slowest rank's.

Without a GPU (--smoke, TRITON_INTERPRET=1) the same code runs on CPU over gloo at tiny sizes, the project's
flash2 providers only: wall-clock times that mean nothing, proof that every path runs (tests/test_cp_bench.py)."""
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from benchmarks.bench import error_line
import gpusim
from benchmarks.cp_plan import (MODEL_GPU, PROJECT, SINGLE, TORCH_CP, Part, checks_planned, environment, row, shapes,
                                strategy_runs)
from gpusim_kernels import context, flash2_attention, reference_attention

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
UNIT_ROUNDOFF = {"fp16": 2.0**-11, "bf16": 2.0**-8}
DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}
LINK_BYTES = (8 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30)  # per exchange: 8 KiB (latency) .. 1 GiB
SMOKE_LINK_BYTES = (8 << 10, 1 << 20)
WINDOW_S = 0.3  # each timing calls the function for about this long (at least 2, at most 20 calls)
SDPA = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION}


def rank():
    return dist.get_rank() if dist.is_initialized() else 0


def run_parts(parts, out, max_seconds, command, smoke=False):
    """Each part into out/cp_<part>.json; the distributed ones under torchrun (NCCL, one GPU per rank)."""
    if any(p != "single" for p in parts) and not dist.is_initialized():
        dist.init_process_group("nccl" if CUDA else "gloo", timeout=datetime.timedelta(seconds=120))
    if CUDA:
        torch.cuda.set_device(rank() % torch.cuda.device_count())
    elif not smoke:
        raise SystemExit("no CUDA GPU here: run on the GPUs, or on CPU as TRITON_INTERPRET=1 ... --smoke")
    for part in parts:
        results = Part(out, part, environment(command), write=rank() == 0)
        RUNNERS[part](results, time.monotonic() + max_seconds, smoke)
    me = rank()
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    return me


def _sync():
    if CUDA:
        torch.cuda.synchronize()
    if dist.is_initialized():
        dist.barrier()


def _slowest(x):
    """The largest of every rank's x."""
    if not dist.is_initialized():
        return x
    t = torch.tensor([x], dtype=torch.float64, device=DEVICE)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def timed_ms(fn):
    """ms per call: one warm-up call, then a window of calls between CUDA events; the slowest rank's."""
    _sync()
    start = time.perf_counter()
    fn()
    _sync()
    calls = int(min(20, max(2, WINDOW_S / _slowest(time.perf_counter() - start))))
    if not CUDA:  # the smoke run: one more call, on the wall clock
        start = time.perf_counter()
        fn()
        return _slowest((time.perf_counter() - start) * 1e3)
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return _slowest(begin.elapsed_time(end) / calls)


def _over(deadline):
    """Rank 0's clock decides for every rank (they must stop together)."""
    stop = torch.tensor([int(time.monotonic() > deadline)], device=DEVICE)
    if dist.is_initialized():
        dist.broadcast(stop, 0)
    return bool(stop.item())


def _attempt(results, make_row, fn):
    try:
        results.add(make_row(**fn()))
    except (RuntimeError, ValueError, torch.OutOfMemoryError) as err:
        results.add(make_row(error=error_line(err, None)))
        if CUDA:
            torch.cuda.empty_cache()


def link_part(results, deadline, smoke=False):
    """NCCL send/recv (both directions at once: bytes per direction over the time), all-to-all (algorithm
    bandwidth: one rank's buffer over the time) and a peer copy GPU 0 -> GPU 1 (rank 0 alone)."""
    world, me = dist.get_world_size(), rank()
    counter = context.LinkCounter()
    for nbytes in SMOKE_LINK_BYTES if smoke else LINK_BYTES:
        send, recv = (torch.empty(nbytes, dtype=torch.uint8, device=DEVICE) for _ in range(2))

        def exchange():
            for request in counter.exchange([send], [recv], to=(me + 1) % world, source=(me - 1) % world):
                request.wait()
        ms = timed_ms(exchange)
        results.add({"kind": "sendrecv", "bytes": nbytes, "ms": ms, "bytes_per_s": nbytes / ms * 1e3})
        ms = timed_ms(lambda: dist.all_to_all_single(recv, send))
        results.add({"kind": "alltoall", "bytes": nbytes, "ms": ms, "bytes_per_s": nbytes / ms * 1e3, "ranks": world})
        if CUDA and torch.cuda.device_count() > 1:
            peer = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{(me + 1) % torch.cuda.device_count()}")
            ms = timed_ms(lambda: peer.copy_(send) if me == 0 else None)
            results.add({"kind": "peer_copy", "bytes": nbytes, "ms": ms, "bytes_per_s": nbytes / ms * 1e3})


def _shard(shape, world, full=False):
    """Random q, k, v: this rank's (B, H, N/P, d) shards, or the whole sequence (full)."""
    n = shape.seq if full else shape.seq // world
    dtype = DTYPES[shape.dtype]
    return [torch.randn(shape.batch, h, n, shape.head_dim, device=DEVICE, dtype=dtype)
            for h in (shape.heads, shape.kv_heads, shape.kv_heads)]


def project_part(results, deadline, smoke=False):
    world = dist.get_world_size()
    for shape in shapes(smoke):
        if _over(deadline):
            results.data["environment"]["truncated"] = f"time budget spent before {shape}"
            break
        q, k, v = _shard(shape, world)
        for provider, (strategy, kernel) in PROJECT.items():
            if not strategy_runs(strategy, shape, world) or (kernel == "hopper" and not CUDA):
                continue

            def measure():
                link = context.LinkCounter()
                run = dict(strategy=strategy, causal=shape.causal, kernel=kernel, link=link)
                context.context_attention(q, k, v, **run)  # checks the shapes on every rank; compiles
                sent = link.sent_bytes  # one call's
                # timed without the shape check's all_gather and host sync: the first call made it
                return {"ms": timed_ms(lambda: context.context_attention(q, k, v, check_shapes=False, **run)),
                        "link_send_bytes": sent}
            _attempt(results, lambda **m: row(provider, shape, world, strategy=strategy, link="nvlink", **m), measure)
        del q, k, v


def torch_cp_part(results, deadline, smoke=False):
    """PyTorch's context_parallel (torch.distributed.tensor.experimental): SDPA on buffers it shards and
    patches, each rotate method with SDPA's flash and cuDNN backends. Its load balancing serves causal masks
    only, so it is switched off for the others (with it on, a non-causal call raises and leaves SDPA patched)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.experimental import context_parallel
    from torch.distributed.tensor.experimental._attention import _cp_options, set_rotate_method

    world = dist.get_world_size()
    mesh = init_device_mesh(DEVICE, (world,))
    for shape in shapes(smoke):
        if _over(deadline):
            results.data["environment"]["truncated"] = f"time budget spent before {shape}"
            break
        for provider, (rotate, backend) in TORCH_CP.items():
            def measure():
                set_rotate_method(rotate)
                _cp_options.enable_load_balance = shape.causal
                q, k, v = _shard(shape, world, full=True)  # sharded in place by context_parallel
                gqa = {"enable_gqa": True} if shape.heads != shape.kv_heads else {}
                with sdpa_kernel(SDPA[backend]), context_parallel(mesh, buffers=[q, k, v], buffer_seq_dims=[2, 2, 2]):
                    return {"ms": timed_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=shape.causal,
                                                                                  **gqa))}
            _attempt(results, lambda **m: row(provider, shape, world, strategy=rotate, link="nvlink", **m), measure)


def single_part(results, deadline, smoke=False):
    """One GPU over the whole sequence: the project's flash2 and SDPA's backends."""
    for shape in shapes(smoke):
        if _over(deadline):
            results.data["environment"]["truncated"] = f"time budget spent before {shape}"
            break
        q, k, v = _shard(shape, 1, full=True)
        gqa = {"enable_gqa": True} if shape.heads != shape.kv_heads else {}
        for provider in SINGLE if CUDA else SINGLE[:1]:
            if provider == "single_flash2":
                call = lambda: flash2_attention(q, k, v, causal=shape.causal)  # noqa: E731
            else:
                def call(backend=SDPA[provider.removeprefix("sdpa_")]):
                    with sdpa_kernel(backend):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=shape.causal, **gqa)
            _attempt(results, lambda **m: row(provider, shape, 1, **m), lambda: {"ms": timed_ms(call)})
        del q, k, v


def _whole(shape):
    """q, k, v over the whole sequence, the same on every rank (one seed, drawn on the CPU)."""
    gen = torch.Generator().manual_seed(shape.seq + shape.heads + shape.kv_heads + shape.head_dim)
    return [torch.randn(shape.batch, h, shape.seq, shape.head_dim, generator=gen).to(DEVICE, DTYPES[shape.dtype])
            for h in (shape.heads, shape.kv_heads, shape.kv_heads)]


def _relative_error(x, ref):
    return ((x.double() - ref).norm() / ref.norm()).item()


def _bound(q, k, v, causal, ref):
    """The CPU twin's bound (tests/test_context_kernels.py): the flash2 tests' (twice the error of torch's
    attention in fp32 rounded to the dtype, plus a rounding of O), plus one rounding more for the merge."""
    group = q.shape[1] // k.shape[1]
    same = F.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(group, 1),
                                          v.float().repeat_interleave(group, 1), is_causal=causal).to(q.dtype)
    return 2 * _relative_error(same, ref) + 2 * UNIT_ROUNDOFF[DTYPE_NAMES[q.dtype]]


def check_part(results, deadline, smoke=False):
    """Each project provider on whole sequences: every rank's output gathered and, on rank 0, set against the
    float64 reference within _bound; the bytes each rank sent beside gpusim's count (the CPU twin's two checks,
    on the GPUs and NCCL)."""
    world, me = dist.get_world_size(), rank()
    planned = checks_planned(world, smoke, hopper=CUDA)
    results.data["environment"]["planned_checks"] = sum(map(len, planned.values()))  # a cut run checks fewer
    for shape, providers in planned.items():
        if _over(deadline):
            results.data["environment"]["truncated"] = f"time budget spent before {shape}"
            break
        full = _whole(shape)
        ref = reference_attention(*full, causal=shape.causal) if me == 0 else None
        bound = _bound(*full, shape.causal, ref) if me == 0 else None
        for provider, strategy, kernel in providers:
            _attempt(results, lambda **m: row(provider, shape, world, strategy=strategy, link="nvlink", **m),
                     lambda: _checked(full, shape, strategy, kernel, ref, bound))
        del full, ref


def _checked(full, shape, strategy, kernel, ref, bound):
    """One provider's check: its relative error and bound (rank 0's), and the bytes every rank sent."""
    world, me = dist.get_world_size(), rank()
    cut = context.zigzag_shard if strategy == "zigzag" else context.shard
    link = context.LinkCounter()
    o = context.context_attention(*(cut(x, me, world) for x in full), strategy=strategy, causal=shape.causal,
                                  kernel=kernel, link=link)
    parts = [torch.empty_like(o) for _ in range(world)]
    dist.all_gather(parts, o)
    sent = torch.tensor([link.sent_bytes], dtype=torch.int64, device=DEVICE)
    every = [torch.empty_like(sent) for _ in range(world)]
    dist.all_gather(every, sent)
    whole = context.zigzag_unshard(parts) if strategy == "zigzag" else torch.cat(parts, dim=2)
    counted = gpusim.simulate(kernel, seq=shape.seq, head_dim=shape.head_dim, heads=shape.heads,
                              kv_heads=shape.kv_heads, causal=shape.causal, dtype=shape.dtype, gpus=world,
                              strategy=strategy, gpu=MODEL_GPU)  # bytes sent: the same on any preset
    error = _relative_error(whole, ref) if me == 0 else None
    return {"relative_error": error, "bound": bound, "link_send_bytes": link.sent_bytes,
            "every_rank_sent": [int(s.item()) for s in every], "gpusim_link_send_bytes": counted.link_send_bytes}


RUNNERS = {"link": link_part, "project": project_part, "torch_cp": torch_cp_part, "single": single_part,
           "check": check_part}
