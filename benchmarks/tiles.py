"""The tile sweep: flash2 and the Hopper kernel over tile shapes, warps and pipeline depths, beside SDPA's
FlashAttention-2 and cuDNN backends, in one run (fp16, the FlashAttention-2 benchmark shapes: batch =
16384 / N, at least 1, heads = 2048 / d). The measured side of gpusim's tile choice (best_blocks).

    python -m benchmarks.tiles --out $OUT --max-minutes 3                   # GPU: $OUT/tiles.json
    python -m benchmarks.tiles --out $OUT --algos hopper                    # GPU: only the Hopper kernel's launches
    TRITON_INTERPRET=1 python -m benchmarks.tiles --out /tmp/probe --smoke  # CPU: every code path, tiny

Groups (d 64/128, causal or not, N 2K/8K/32K), N ascending, each measured whole before the next starts:
a run stopped by --max-minutes (checked before each group) or killed has complete groups only, except
the last. In a group:
- sdpa_flash, sdpa_cudnn: torch's scaled_dot_product_attention with one backend;
- flash2: every tile in TILES on the warps the kernel's rule gives (gpusim_kernels.launch.options: 8 for
  block_q >= 128) and on the other count (4 <-> 8), num_stages by the same rule; launched as
  flash2_attention launches it (prepare, constants), with num_warps overridden;
- hopper: the kernel's own launch for the group (gpusim_kernels.hopper.LAUNCHES) and HOPPER_VARIANTS,
  through hopper_attention's overrides.
Every configuration is compiled first, in a pool of worker processes (a launch at N = WARM_SEQ, the same
specialisation), then timed in this process: the median of its GPU work replayed from a CUDA graph (benchmarks.bench.gpu_time:
no Python between launches, as benchmarks.bench times it). TFLOP/s = 4 B H N² d, halved when
causal. rel_err: against float64 on the first and last 128 query rows of batch 0, head 0
(benchmarks.bench.reference_rows). n_regs, n_spills, shared_bytes: the compiled kernel's. default:
true for the tile and launch each kernel picks itself on this GPU.

Expected wall time on the H200, about 100 s: imports 5 s; 92 kernels (64 flash2, 28 hopper) compiled by 16
processes, ~25 s; 12 groups x 25 timings: at N = 2K and 8K ~80 ms each (do_bench's windows, 10 + 40 ms, and
its 5-call estimate; calls of 0.3-4 ms), 16 s; at N = 32K (one call 7-30 ms, 8 calls; spilling tiles up to
5x longer) ~0.3 s each, 30 s; inputs and references 5 s.
"""
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import gpusim
from benchmarks import probe
from gpusim_kernels import hopper, hopper_attention
from benchmarks.bench import reference_rows, tflops
from gpusim_kernels.flash2 import flash2_kernel
from gpusim.config import make_config
from gpusim_kernels.launch import constants, detect_gpu, options, prepare

TOKENS, MODEL_DIM = 16384, 2048
SEQS, HEAD_DIMS = (2048, 8192, 32768), (64, 128)
TILES = [(64, 32), (64, 64), (64, 128), (128, 32), (128, 64), (128, 128), (256, 64), (32, 64)]  # (Br, Bc)
HOPPER_VARIANTS = [dict(block_q=128, block_kv=128, num_stages=2, num_warps=4, warp_specialize=True),
                   dict(block_q=128, block_kv=128, num_stages=3, num_warps=8, warp_specialize=False),
                   dict(block_q=128, block_kv=128, num_stages=2, num_warps=8, warp_specialize=False),
                   dict(block_q=128, block_kv=64, num_stages=3, num_warps=8, warp_specialize=False),
                   dict(block_q=128, block_kv=64, num_stages=2, num_warps=8, warp_specialize=False),
                   dict(block_q=64, block_kv=64, num_stages=3, num_warps=4, warp_specialize=False),
                   dict(block_q=64, block_kv=128, num_stages=3, num_warps=4, warp_specialize=False)]
SDPA = {"sdpa_flash": SDPBackend.FLASH_ATTENTION, "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION}
WARM_SEQ = 256  # compiling launches: a multiple of 16 like every N above, so the same specialisation
SMOKE = dict(TOKENS=128, MODEL_DIM=128, SEQS=(64, 128), TILES=[(32, 64), (64, 32)],
             HOPPER_VARIANTS=HOPPER_VARIANTS[-2:], WARM_SEQ=128)


def flash2(q, k, v, causal, block_q, block_kv, num_warps):
    """flash2_attention's launch with num_warps overridden (None: the kernel's own rule)."""
    cfg, q, k, v = prepare("flash2", q, k, v, causal=causal, block_q=block_q, block_kv=block_kv, gpu=None)
    o = torch.empty_like(q)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    launch = constants(cfg, "flash2") | ({} if num_warps is None else {"num_warps": num_warps})
    flash2_kernel[(cfg.tiling.n_q_blocks, cfg.bh)](q, k, v, o, lse, cfg.seq, cfg.seq_kv, cfg.head_dim**-0.5, **launch)
    return o


def flash2_launch(d, causal, block_q, block_kv):
    """flash2's own num_warps and num_stages for a tile (they do not depend on N)."""
    return options(make_config("flash2", seq=WARM_SEQ, head_dim=d, block_q=block_q, block_kv=block_kv,
                                      causal=causal, gpu=gpu_name()), "flash2")


def gpu_name():
    """The gpusim preset flash2's launches check against here (the H200's on the H200)."""
    return detect_gpu(torch.device(probe.DEVICE))


def group_calls(d, causal, algos=("flash2", "hopper")):
    """(algo, launch, default) for one group, launch a dict: block_q, block_kv, num_warps, num_stages,
    warp_specialize (None where the provider decides); the SDPA backends and the kernels in algos."""
    calls = [(name, {}, True) for name in SDPA]
    own_tile = gpusim.paper_blocks("flash2", gpu_name(), d, "fp16")
    for block_q, block_kv in TILES if "flash2" in algos else ():
        rule = flash2_launch(d, causal, block_q, block_kv)
        for num_warps in (rule["num_warps"], 12 - rule["num_warps"]):
            launch = dict(block_q=block_q, block_kv=block_kv, num_warps=num_warps, num_stages=rule["num_stages"],
                          warp_specialize=False)
            calls.append(("flash2", launch, (block_q, block_kv) == own_tile and num_warps == rule["num_warps"]))
    for i, launch in enumerate(hopper_launches(d, "fp16", causal) if "hopper" in algos else ()):
        calls.append(("hopper", launch, i == 0))
    return calls


def hopper_launches(d, dtype, causal):
    """The table's launch, then HOPPER_VARIANTS' that run another launch: a variant leaves the mask and the rotated
    loop to the table (hopper.resolved_launch), so one may run the table's launch itself (timed twice in each of
    tiles.json's 12 groups, run 19: the two within 1.2% of each other)."""
    ran = {}
    for launch in [hopper.LAUNCHES[d, dtype, causal]] + HOPPER_VARIANTS:
        resolved = hopper.resolved_launch(d, dtype, causal, WARM_SEQ, launch)
        ran.setdefault(tuple(resolved.items()), launch)
    return list(ran.values())


def call(algo, launch, q, k, v, causal):
    """The call timed: a function of no arguments returning O."""
    if algo in SDPA:
        def run():
            with sdpa_kernel(SDPA[algo]):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return run
    if algo == "flash2":
        return lambda: flash2(q, k, v, causal, launch["block_q"], launch["block_kv"], launch["num_warps"])
    return lambda: hopper_attention(q, k, v, causal=causal, **launch)


def inputs(batch, heads, seq, d, device):
    gen = torch.Generator(device=device).manual_seed(seq + d)
    return [torch.randn(batch, heads, seq, d, device=device, generator=gen).half() for _ in range(3)]


def warm(item):
    """Compile one (algo, d, causal, launch) in a pool worker: one call at N = WARM_SEQ."""
    algo, d, causal, launch = item
    q, k, v = inputs(1, 1, WARM_SEQ, d, probe.DEVICE)
    call(algo, dict(launch), q, k, v, causal)()


def measure(fn, jit_fn, ref, shape, known):
    """ms, tflops and rel_err of fn(); n_regs, n_spills, shared_bytes of jit_fn's kernel, compiled or loaded by
    this first call, or remembered in `known` from an earlier group."""
    out, compiled = probe.compiled_by(jit_fn, fn) if jit_fn else (fn(), None)
    if compiled is not None:
        known.update(probe.kernel_resources(compiled))
    rows, expected = ref
    rel_err = float(torch.linalg.norm(out[0, 0, rows].double() - expected) / torch.linalg.norm(expected))
    del out
    ms = probe.graph_ms(fn)
    return {"ms": ms, "tflops": tflops(*shape, ms), "rel_err": rel_err, **known}


def key(algo, d, causal, launch):
    return algo, d, causal, tuple(sorted(launch.items()))


def run_group(results, d, causal, seq, resources, algos):
    batch, heads = max(1, TOKENS // seq), MODEL_DIM // d
    q, k, v = inputs(batch, heads, seq, d, probe.DEVICE)
    ref = reference_rows(q, k, v, causal)
    for algo, launch, default in group_calls(d, causal, algos):
        row = dict(algo=algo, dtype="fp16", head_dim=d, causal=causal, seq=seq, batch=batch, heads=heads,
                   **{name: launch.get(name) for name in ("block_q", "block_kv", "num_warps", "num_stages",
                                                          "warp_specialize")}, default=default)
        jit_fn = {"flash2": flash2_kernel, "hopper": hopper.hopper_kernel}.get(algo)
        known = resources.setdefault(key(algo, d, causal, launch), {})
        results.add(probe.attempt(row, lambda: measure(call(algo, launch, q, k, v, causal), jit_fn, ref,
                                                       (batch, heads, seq, d, causal), known)))
        print(f"d={d} causal={causal:d} N={seq:5d} {algo:10s} {row['block_q'] or ''}x{row['block_kv'] or ''} "
              f"w{row['num_warps'] or ''} s{row['num_stages'] or ''}: {row.get('tflops', 0):6.1f} TFLOP/s "
              f"regs={row.get('n_regs')} {row.get('error', '')}", flush=True)
    if probe.DEVICE == "cuda":
        torch.cuda.empty_cache()


def run(results, max_minutes, workers, skip=(), algos=("flash2", "hopper")):
    start = time.monotonic()
    groups = [(d, causal, seq) for seq in SEQS for d in HEAD_DIMS for causal in (False, True)
              if (d, causal, seq) not in skip]
    todo = [(algo, d, causal, tuple(launch.items())) for d in HEAD_DIMS for causal in (False, True)
            for algo, launch, _ in group_calls(d, causal, algos) if algo not in SDPA]
    errors = probe.compile_all(warm, todo, workers, max_minutes * 60 * 0.4)
    for item, error in errors.items():
        print(f"compile {item}: {error}")
    resources = {}
    for done, (d, causal, seq) in enumerate(groups):
        if time.monotonic() - start > max_minutes * 60:
            results.data["environment"]["truncated"] = (f"stopped by --max-minutes {max_minutes} after {done} of "
                                                        f"{len(groups)} groups")
            results.save()
            break
        run_group(results, d, causal, seq, resources, algos)


def main(argv=None):
    ap = probe.parser(__doc__, "tiles.json")
    ap.add_argument("--max-minutes", type=float, default=3.0, help="start no group after this many minutes")
    ap.add_argument("--skip", help="a tiles.json whose groups are not measured again (a run to complete)")
    ap.add_argument("--algos", default="flash2,hopper", help="the kernels swept beside SDPA (comma-separated)")
    args = ap.parse_args(argv)
    if args.smoke:
        globals().update(SMOKE)
    done = set()
    if args.skip:
        done = {(r["head_dim"], r["causal"], r["seq"]) for r in json.loads(Path(args.skip).read_text())["rows"]}
    run(probe.open_results("tiles.json", args, argv), args.max_minutes, args.workers, done, args.algos.split(","))


if __name__ == "__main__":
    main()
