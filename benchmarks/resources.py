"""Registers, spills and shared memory of every configuration of the project's kernels that the tile sweep
(benchmarks/tiles.py) and the benchmark (benchmarks.bench) launch, compiled for the H200 (sm_90a) on
this machine: no GPU needed. Writes JSON: the resources gpusim's occupancy model reads.

    python -m benchmarks.resources --out results/sm90_resources.json

Each configuration is compiled by triton.compile for sm_90a with the constants and launch options the
kernel's own launch would pass on the H200 (gpusim_kernels.launch.constants; hopper's LAUNCHES and the
sweep's variants), integer and pointer arguments marked divisible by 16 as Triton specialises them at
launch for the benchmark shapes. shared_bytes is Triton's (compiled.metadata.shared); registers and spill
bytes are what ptxas -v prints for the PTX, run with the flags Triton itself runs it with (the same ptxas,
bundled with triton: the GPU's compile gives the same numbers). wgmma_serialized: the reason ptxas gives
when it serializes the wgmma instructions (too few registers for their pipeline), else null. For a
warp-specialized Hopper launch ptxas reports the registers every warp starts with; setmaxnreg then moves
registers from the producer warps to the consumers.

Configurations (fp16 and bf16, d 64/128, causal or not): flash2 at every tile of tiles.TILES and of the
held-out sets' (heldout.TILES) on the warps of its rule and the other count; naive's qk and pv at 128 x 128 and 64 x 64, its softmax at every N of the
benchmark (one row of S per program, BLOCK_N = N; head_dim does not apply); flash1 at gpusim's default
tiles for the H200; hopper at the sweep's launches (tiles.hopper_launches: its LAUNCHES launch and the variants,
each as it runs), and fp8 at its LAUNCHES launches.
The backward (kernels/backward.py, kernels/naive_backward.py; named flash2_bwd_* and naive_bwd_* here, as
gpusim's backward modules look them up), fp16 as measured: flash2's (fp16 and bf16) at the
tiles benchmarks.bench_bwd weighs, naive's at 128 x 128 and 64 x 64, its ds at every N of bench_bwd.
Decoding (kernels/decode.py), fp16 at the shape benchmarks.bench_decode measures: decode and split_kv
over a paged cache (every page size the kernel takes, 16 to 256) and a contiguous one, and the reduce (one
kernel for every split count: it merges gpusim.shape.REDUCE_SPLITS per step) at every chunk a launch takes
(split_kv.REDUCE_CHUNKS: Bc is one of its constants), keyed by its own tile (one query row a program), not the
split kernel's query rows, which it is not compiled with. decode and split_kv also at every tile (padded query rows,
chunk) a launch of 1 to QUERY_ROWS query rows takes (tile_rows: 32 and 64 rows at d = 128; at d = 64 32, 64, and 128
over chunks of 32), each at the fewest query rows that take it and keyed by the tile gpusim looks it up at
(compiled_tiles); the query rows are constants too (SEQ, ROWS), so other row counts of a tile compile a little
differently (over pages of 16 at d = 128 the 32-row split kernel holds 153 registers compiled at 5 rows,
113 at 8). Naive's kernels take the row
stride of S and P (LD, a multiple of 16) as an argument, marked divisible by 16 as at every launch: a sequence
length not a multiple of 16 compiles to the same code. Rows with a "shape" are keyed by it (model_key). One that fails to compile is an error row.

Expected wall time on 2 idle cores: about 2 minutes with Triton's cache empty (415 configurations, 220 CPU
seconds: 0.3 s for a naive kernel to 3 s for a warp-specialized one, ptxas run twice), 30 s with it warm
(ptxas once per configuration, 50 CPU seconds). 546 configurations now (results/sm90_resources.json,
2026-12-05: 144 s on 2 shared cores, Triton's cache warm but for the 60 decode configurations of more query
rows; the earlier 486 rows byte-identical).
"""
import argparse
import datetime
import inspect
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from itertools import product
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import CUDAOptions, get_ptxas
from triton.compiler import ASTSource

from gpusim import backward as training, decode
from gpusim.config import make_config, paper_blocks
from gpusim.passes.split_kv import REDUCE_CHUNKS
from gpusim.shape import REDUCE_SPLITS
from gpusim_kernels import backward, flash1, flash2, hopper, naive, naive_backward
from gpusim_kernels import decode as decode_kernels
from gpusim_kernels.backward import bwd_constants
from gpusim_kernels.launch import constants, options

from benchmarks import probe
from benchmarks.bench import SEQS
from benchmarks.bench_bwd import CANDIDATES, SEQS as BWD_SEQS
from benchmarks.bench_decode import PAGE_SIZE, SHAPE as DECODE_SHAPE
from benchmarks.heldout import TILES as HELDOUT_TILES
from benchmarks import tiles
from benchmarks.tiles import TILES

GPU, CAPABILITY, ARCH = "H200", 90, "sm_90a"
TYPES = {"fp16": "fp16", "bf16": "bf16", "fp8": "fp8e4nv"}  # Triton's names of the element types
ARG_TYPES = {"N": "i32", "N_KV": "i32", "V_STRIDE": "i32", "lpt_heads": "i32", "scale": "fp32", "qk_scale": "fp32", "o_scale": "fp32",
             "LD": "i32", "LSE": "*fp32", "l": "*fp32", "m": "*fp32", "D": "*fp32", "O_partial": "*fp32", "LSE_partial": "*fp32",
             "block_table": "*i32", "cache_seqlens": "*i32", "max_pages": "i32", "cache_len": "i32",
             "num_splits": "i32"}  # every other argument: a pointer to the inputs' type
KERNELS = {"qk": naive.qk_kernel, "softmax": naive.softmax_kernel, "pv": naive.pv_kernel,
           "flash1": flash1.flash1_kernel, "flash2": flash2.flash2_kernel, "hopper": hopper.hopper_kernel,
           "decode": decode_kernels.decode_kernel, "split_kv": decode_kernels.split_kv_kernel,
           "reduce": decode_kernels.reduce_kernel}
KERNELS |= {f"naive_bwd_{k}": getattr(naive_backward, f"{k}_kernel") for k in training.KERNELS["naive"]}
KERNELS |= {f"flash2_bwd_{k}": getattr(backward, f"{k}_kernel") for k in training.KERNELS["flash2"]}
TRITON_DEFAULT_LAUNCH = {"num_warps": CUDAOptions.num_warps, "num_stages": CUDAOptions.num_stages}  # no options
NAIVE_BLOCKS = ((128, 128), (64, 64))
PAGE_SIZES = (16, 32, 64, 128, 256, None)  # kernels/decode.py's page sizes (16 to 256) and a contiguous cache
# Decoding at d = 64 (64 query heads, 8 K/V heads: the group fills the same 16-row tile as Llama-3-8B's 4): the
# model priced it from the estimate, which knows nothing of the paged gather's address arithmetic (issue 24)
DECODE_D64 = dict(heads=64, kv_heads=8, head_dim=64)
# The most query rows a request the decode kernels are compiled for (speculative decoding's drafts, a prompt's last
# chunk: benchmarks/decode_rows.py times 1 to 16): past it a launch's tile is priced from the estimate
QUERY_ROWS = 16
# flash2's tiles the held-out sets run beyond the sweep's (32 x 32): compiled, or the model would price them from
# estimated registers and issue
MORE_TILES = [tile for tile in HELDOUT_TILES if tile not in TILES]
SPEC_SEQ = 4096  # the N the configurations are made at: nothing compiled depends on it but softmax's BLOCK_N


def signature(kernel, dtype):
    """Triton's signature of a kernel for inputs of dtype: O is fp32 in flash1 (its accumulator) and fp16 for
    fp8 inputs (the Hopper kernel's output)."""
    params = inspect.signature(KERNELS[kernel].fn).parameters.values()  # .fn: the Python function, also interpreted
    out = {"flash1": "fp32"}.get(kernel, "fp16" if dtype == "fp8" else TYPES[dtype])
    return {p.name: "constexpr" if "constexpr" in str(p.annotation) else
            ARG_TYPES.get(p.name, f"*{out}" if p.name == "O" else f"*{TYPES[dtype]}") for p in params}


def host_descriptors(fields):
    """The Hopper kernel's Q, K, V when its launch is software-pipelined: TMA descriptors the host made, one
    (batch, head) matrix per box (kernels/hopper.py _host_descriptors; fp8 V transposed). Else nothing."""
    if fields["kernel"] != "hopper" or fields["warp_specialize"]:
        return {}
    t, d, br, bc = TYPES[fields["dtype"]], fields["head_dim"], fields["block_q"], fields["block_kv"]
    v_box = [1, d, bc] if fields["dtype"] == "fp8" else [1, bc, d]
    return {"Q": f"tensordesc<{t}[1, {br}, {d}]>", "K": f"tensordesc<{t}[1, {bc}, {d}]>",
            "V": f"tensordesc<{t}{v_box}>"}


def tiled(kernel, d, dtype, causal, block_q, block_kv, num_warps=None):
    """A tiled kernel's row and compile arguments as its launch passes them (num_warps overridden if given)."""
    algo = {"qk": "naive", "pv": "naive"}.get(kernel, kernel)
    cfg = make_config(algo, seq=SPEC_SEQ, head_dim=d, block_q=block_q, block_kv=block_kv, causal=causal,
                      dtype=dtype, gpu=GPU)
    consts = constants(cfg, kernel)
    launch = {"num_warps": consts.pop("num_warps"), "num_stages": consts.pop("num_stages")}
    launch["num_warps"] = num_warps or launch["num_warps"]
    return row(kernel, d, dtype, causal, block_q, block_kv, **launch), consts, launch


def softmax(seq, dtype, causal, block_q, block_kv):
    cfg = make_config("naive", seq=seq, head_dim=64, block_q=block_q, block_kv=block_kv, causal=causal, dtype=dtype,
                      gpu=GPU)
    launch = options(cfg, "softmax")
    consts = dict(CAUSAL=causal, PADDED=False, ONE_PASS=cfg.softmax_fits, BLOCK_N=triton.next_power_of_2(seq), Br=block_q,
                  Bc=block_kv)
    return row("softmax", None, dtype, causal, block_q, block_kv, seq=seq, **launch), consts, launch


def hopper_launch(d, dtype, causal, overrides):
    """The Hopper kernel's row and compile arguments for hopper_attention(..., **overrides): the launch it runs
    (hopper.resolved_launch: the table's mask and rotated loop where the overrides leave them unset)."""
    launch = hopper.resolved_launch(d, dtype, causal, SPEC_SEQ, overrides)
    consts = dict(GROUP=1, D=d, Br=launch["block_q"], Bc=launch["block_kv"], CAUSAL=causal, RAGGED=False,
                  FP8=dtype == "fp8", STAGES=launch["num_stages"], WARP_SPECIALIZE=launch["warp_specialize"],
                  MASK=launch["mask"], OVERLAP=launch["overlap"])
    return (row("hopper", d, dtype, causal, launch["block_q"], launch["block_kv"], num_warps=launch["num_warps"],
                num_stages=launch["num_stages"], warp_specialize=launch["warp_specialize"]),
            consts, {"num_warps": launch["num_warps"]})  # the loop's depth is STAGES; the launch passes no num_stages


def hopper_launches(d, dtype, causal):
    """The launches benchmarks/tiles.py's sweep runs (the table's and its variants', each as it runs): each key of
    gpusim's table, which leaves out the mask and the rotated loop, holds the one launch the sweep ran at it."""
    return [hopper_launch(d, dtype, causal, launch) for launch in tiles.hopper_launches(d, dtype, causal)]


def row(kernel, head_dim, dtype, causal, block_q, block_kv, num_warps, num_stages, seq=None, warp_specialize=None,
        shape=None):
    out = dict(kernel=kernel, head_dim=head_dim, dtype=dtype, causal=causal, block_q=block_q, block_kv=block_kv,
               num_warps=num_warps, num_stages=num_stages, seq=seq, warp_specialize=warp_specialize)
    return out if shape is None else out | {"shape": shape}


def backward_kernel(algo, kernel, d, dtype, causal, block_q, block_kv, seq=SPEC_SEQ):
    """A backward kernel's row and compile arguments as its launch passes them: the tiled kernels' options
    (gpusim_kernels.backward.bwd_constants: gpusim's Tiles for the kernel), or none (Triton's
    defaults: preprocess, ds)."""
    cfg = training.config(algo, seq=seq, head_dim=d, block_q=block_q, block_kv=block_kv, causal=causal, dtype=dtype,
                          gpu=GPU)
    block_d, shape = triton.next_power_of_2(d), d
    if kernel == "preprocess":
        consts, launch = dict(HEAD_DIM=d, BLOCK_D=block_d, Br=block_q), dict(TRITON_DEFAULT_LAUNCH)
    elif kernel == "ds":
        shape = triton.next_power_of_2(seq)  # the row it holds, as naive's softmax
        consts = dict(CAUSAL=causal, ONE_PASS=cfg.ds_fits, BLOCK_N=shape, Br=block_q, Bc=block_kv)
        launch = dict(TRITON_DEFAULT_LAUNCH)
    else:
        consts = bwd_constants(cfg, kernel)
        launch = {"num_warps": consts.pop("num_warps"), "num_stages": consts.pop("num_stages")}
    return (row(f"{algo}_bwd_{kernel}", d, dtype, causal, block_q, block_kv, **launch,
                seq=seq if kernel == "ds" else None, shape=shape), consts, launch)


def decode_kernel(kernel, dtype, page_size, splits=2, shape=DECODE_SHAPE, block_kv=decode.DEFAULT_BLOCK_KV, seq=1):
    """A decoding kernel's row and compile arguments at bench_decode's shape, or at d = 64 the shape of
    DECODE_D64 (constants as DecodePlan passes them), at seq query rows a request, with chunks of block_kv (None:
    the chunk make_launch picks, the largest that fits the rows' tile); keyed by (head_dim, page size or 0) or, for
    the reduce, (head_dim, the splits it merges per step), and by the tiles gpusim looks it up at (compiled_tiles: the
    split kernel's padded query rows and the chunk; the reduce's own, one query row and the chunk)."""
    launch_ = decode.make_launch(batch=1, seq_kv=(block_kv or decode.DEFAULT_BLOCK_KV) * splits, seq=seq,
                                 num_splits=splits, block_kv=block_kv, page_size=page_size, dtype=dtype, gpu=GPU,
                                 **shape)
    consts = decode_kernels.constants(launch_, kernel)
    launch = {"num_warps": consts.pop("num_warps"), "num_stages": consts.pop("num_stages")}
    shape = [launch_.head_dim, REDUCE_SPLITS if kernel == "reduce" else page_size or 0]
    return (row(kernel, launch_.head_dim, dtype, True, *launch_.pass_.compiled_tiles(launch_, kernel), **launch,
                shape=shape), consts, launch)


def training_and_decoding():
    """(row, constants, options) for the backward's and decoding's configurations."""
    out = []
    for dtype, d, causal in product(("fp16",), (64, 128), (False, True)):
        out += [backward_kernel("flash2", k, d, dtype, causal, *blocks) for blocks in CANDIDATES
                for k in ("preprocess", "dkdv", "dq")]
        out += [backward_kernel("naive", k, d, dtype, causal, *blocks) for blocks in NAIVE_BLOCKS
                for k in ("dv", "dp", "dq", "dk")]
    out += flash2_backward_bf16()
    out += [backward_kernel("naive", "ds", 64, "fp16", causal, *blocks, seq=seq) for seq in BWD_SEQS
            for causal in (False, True) for blocks in NAIVE_BLOCKS]
    for shape in (DECODE_SHAPE, DECODE_D64):
        out += [decode_kernel(k, "fp16", page_size, shape=shape) for k in ("decode", "split_kv")
                for page_size in PAGE_SIZES]
        out += [decode_kernel("reduce", "fp16", PAGE_SIZE, 2 * REDUCE_SPLITS, shape, block_kv)  # one kernel, any count
                for block_kv in REDUCE_CHUNKS]
    out += [decode_kernel(k, "fp16", page_size, shape=shape, block_kv=None, seq=seq)
            for shape in (DECODE_SHAPE, DECODE_D64) for seq in tile_rows(shape)[1:] for k in ("decode", "split_kv")
            for page_size in PAGE_SIZES]
    return out


def tile_rows(shape):
    """The fewest query rows a request, of 1 to QUERY_ROWS, at which a decode launch of `shape` takes each of its
    tiles (padded query rows, chunk), in order: the rows each tile is compiled at (one compile prices every row count
    that pads to the same tile, as one query row's prices 1 to 4 of Llama-3-8B's)."""
    first = {}
    for seq in range(1, QUERY_ROWS + 1):
        launch = decode.make_launch(batch=1, seq=seq, seq_kv=decode.DEFAULT_BLOCK_KV, page_size=PAGE_SIZE, gpu=GPU,
                                    **shape)
        first.setdefault((launch.padded_rows, launch.block_kv), seq)
    return list(first.values())


def flash2_backward_bf16():
    """flash2's backward in bf16 at the same tiles: best_blocks(..., backward=True) weighs the compiled tiles of
    the dtype asked for, and without these it weighed bf16 at every tile from estimated registers and issue
    (it picked 64 x 128, never compiled, 1.08-1.32x the fastest step in tiles_bwd.json)."""
    return [backward_kernel("flash2", k, d, "bf16", causal, *blocks) for d, causal in product((64, 128), (False, True))
            for blocks in CANDIDATES for k in ("preprocess", "dkdv", "dq")]


def configs():
    """(row, constants, options) for every configuration."""
    out = []
    for dtype in ("fp16", "bf16"):
        for d in (64, 128):
            for causal in (False, True):
                for block_q, block_kv in TILES + MORE_TILES:
                    rule = tiled("flash2", d, dtype, causal, block_q, block_kv)
                    out += [rule, tiled("flash2", d, dtype, causal, block_q, block_kv, 12 - rule[2]["num_warps"])]
                out += [tiled(k, d, dtype, causal, b_q, b_kv) for k in ("qk", "pv") for b_q, b_kv in NAIVE_BLOCKS]
                out.append(tiled("flash1", d, dtype, causal, *paper_blocks("flash1", GPU, d, dtype)))
                out += hopper_launches(d, dtype, causal)
        out += [softmax(seq, dtype, causal, b_q, b_kv) for seq in SEQS for causal in (False, True)
                for b_q, b_kv in NAIVE_BLOCKS]
    out += [hopper_launch(d, "fp8", causal, hopper.LAUNCHES[d, "fp8", causal]) for d in (64, 128)
            for causal in (False, True)]
    return out + training_and_decoding()


def parse_ptxas(log):
    """Registers, spill stores and loads, and stack frame (bytes per thread) from ptxas -v's report of one kernel,
    and why ptxas serialized the kernel's wgmma instructions, if it did (info C7511: each then waits for the
    one before, so the tensor cores idle between them)."""
    fields = {"registers": r"Used (\d+) registers", "spill_store_bytes": r"(\d+) bytes spill stores",
              "spill_load_bytes": r"(\d+) bytes spill loads", "stack_bytes": r"(\d+) bytes stack frame"}
    found = {key: re.search(pattern, log) for key, pattern in fields.items()}
    missing = [key for key, match in found.items() if match is None]
    if missing:
        raise ValueError(f"ptxas -v printed no {', '.join(missing)}: {log.strip()[:200]!r}")
    serialized = re.search(r"wgmma\.mma_async instructions are serialized due to (.*?) in the function", log)
    return {**{key: int(match.group(1)) for key, match in found.items()},
            "wgmma_serialized": serialized.group(1) if serialized else None}


# Bytes a local-memory access moves per thread, by its width suffix as nvdisasm spells it (LDL, LDL.64, LDL.128,
# LDL.U8, ...; LDL.LU, a last use, is no wider): 32 bits unless the suffix says otherwise (PTX ISA, ld.local's types)
LOCAL_WIDTH = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}
LOCAL_DEFAULT = 4


def local_bytes(opcode):
    """Bytes per thread an LDL or STL opcode (with its suffixes) moves; 0 for any other opcode."""
    name, *suffixes = opcode.split(".")
    if name not in ("LDL", "STL"):
        return 0
    return next((LOCAL_WIDTH[s] for s in suffixes if s in LOCAL_WIDTH), LOCAL_DEFAULT)


def disassemble(cubin):
    """nvdisasm's text of a cubin (nvdisasm ships with triton, beside ptxas)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        return subprocess.run([os.path.join(os.path.dirname(get_ptxas(CAPABILITY).path), "nvdisasm"), "-c", path],
                              capture_output=True, text=True, check=True).stdout


def sass_ops(text):
    """(address, opcode with its suffixes, operands) of each instruction of nvdisasm's text, and the address
    of each label (.L_x_N)."""
    labels, ops, pending = {}, [], None
    for line in text.splitlines():
        label = re.match(r"\s*\.L_x_(\d+):", line)
        if label:
            pending = label.group(1)
            continue
        inst = re.search(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*)", line)
        if not inst:
            continue
        address = int(inst.group(1), 16)
        if pending is not None:
            labels[pending], pending = address, None
        ops.append((address, inst.group(2), inst.group(3)))
    return labels, ops


def sass_loops(cubin):
    """What the compiled kernel issues, from its disassembly (nvdisasm, shipped with triton): per loop (a
    backward branch, in address order), [instructions a warp issues per iteration but the tensor cores'
    HGMMA, of them MUFU (special function unit), of them LDL (spill reloads from local memory), the bytes per
    thread its LDL load and its STL store (spills)]; and the same for the whole kernel. A loop's range holds
    the loops nested in it: an outer loop's figures include its inner loop's once."""
    return loops_of(*sass_ops(disassemble(cubin)))


def loops_of(labels, ops):
    """sass_loops' figures from sass_ops' labels and instructions."""
    loops = []
    for address, op, rest in ops:
        target = re.search(r"`\(\.L_x_(\d+)\)", rest) if op.split(".")[0] == "BRA" else None
        if target and labels.get(target.group(1), address) < address:
            loops.append((labels[target.group(1)], address))

    def issued(lo, hi):
        inside = [op for a, op, _ in ops if lo <= a <= hi]
        names = [op.split(".")[0] for op in inside]
        return [sum(n != "HGMMA" for n in names), names.count("MUFU"), names.count("LDL"),
                sum(local_bytes(op) for op in inside if op.startswith("LDL")),
                sum(local_bytes(op) for op in inside if op.startswith("STL"))]
    return {"loops": [issued(lo, hi) for lo, hi in sorted(loops)], "issued": issued(0, ops[-1][0] if ops else 0)}


def ptxas_report(ptx):
    """ptxas -v on the PTX, with the flags triton's compiler passes it (backends/nvidia/compiler.py make_cubin)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "kernel.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        done = subprocess.run([get_ptxas(CAPABILITY).path, "-lineinfo", "-v", f"--gpu-name={ARCH}", src, "-o",
                               os.path.join(tmp, "kernel.cubin")], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"ptxas failed ({done.returncode}): {done.stderr.strip()[:200]}")
    return done.stdout + done.stderr


def compile_one(config, unaligned=()):
    """One configuration's row with its resources, or with the error that stopped its compile. unaligned: integer
    arguments left unmarked, as Triton leaves one whose value is not divisible by 16 (docs/perf.md, "Lengths not a
    multiple of 16 in flash2")."""
    fields, consts, launch = config
    try:
        kernel = fields["kernel"]
        sig = signature(kernel, fields["dtype"]) | host_descriptors(fields)
        unspecialized = set(KERNELS[kernel].do_not_specialize) | set(unaligned)
        attrs = {(i,): [["tt.divisibility", 16]] for i, (name, t) in enumerate(sig.items())
                 if (t.startswith("*") or t == "i32") and name not in unspecialized}
        src = ASTSource(fn=KERNELS[kernel], signature=sig, constexprs=consts, attrs=attrs)
        compiled = triton.compile(src, target=GPUTarget("cuda", CAPABILITY, 32), options=launch)
        return {**fields, **parse_ptxas(ptxas_report(compiled.asm["ptx"])), "shared_bytes": compiled.metadata.shared,
                **sass_loops(compiled.asm["cubin"])}
    except Exception as err:  # noqa: BLE001 - a configuration that does not compile is a result
        return {**fields, "error": probe.one_line(err)}


def model_table(rows, triton_version):
    """gpusim/compiled.py's text: {(arch, kernel, shape, dtype, causal, block_q, block_kv, num_warps,
    num_stages): (registers, spill bytes stored + loaded per thread, shared bytes, per loop (instructions, MUFU,
    LDL, LDL bytes, STL bytes per iteration), the same for the whole kernel)}; shape is head_dim, or for the
    softmax the row it holds (BLOCK_N)."""
    entries = {}
    for r in rows:
        if "error" in r:
            continue
        key = model_key(r)
        if key in entries:
            raise ValueError(f"two compiled launches share gpusim's key {key}: the key must tell them apart")
        loops = tuple(tuple(loop) for loop in r["loops"])
        entries[key] = (f"    {key!r}: ({r['registers']}, {r['spill_store_bytes'] + r['spill_load_bytes']}, "
                        f"{r['shared_bytes']}, {loops!r}, {tuple(r['issued'])!r}),")
    head = (COMPILED_DOC + f"TRITON = {triton_version!r}\n{issue_per_op(rows)}\nCOMPILED = {{\n")
    return head + "\n".join(sorted(entries.values())) + "\n}\n"


def model_key(r):
    """A row's key in gpusim/compiled.py: (arch, kernel, shape, dtype, causal, block_q, block_kv, num_warps,
    num_stages); shape is the row's own, else head_dim, or for the softmax the row it holds (BLOCK_N)."""
    softmax = r["kernel"] == "softmax"
    shape = r.get("shape", triton.next_power_of_2(r["seq"] or 1) if softmax else r["head_dim"])
    return (ARCH.rstrip("a"), r["kernel"], tuple(shape) if isinstance(shape, list) else shape, r["dtype"], r["causal"],
            r["block_q"], r["block_kv"], r["num_warps"], r["num_stages"])


def issue_per_op(rows):
    """ISSUE_PER_OP's line: the median, over the compiled flash2 kernels at the sweep's tiles (TILES), of the
    instructions a warp issues per unmasked step (their first loop) over the non-matmul operations gpusim counts
    for that step."""
    from gpusim.passes import flash2 as model
    ratios = sorted(r["loops"][0][0] * 32 * r["num_warps"] /
                    (model.PER_SCORE * r["block_q"] * r["block_kv"] +
                     (model.PER_ROW_STEP + model.PER_O_ELEMENT_STEP * r["head_dim"]) * r["block_q"])
                    for r in rows if r["kernel"] == "flash2" and "error" not in r and r["loops"]
                    and (r["block_q"], r["block_kv"]) in TILES)
    return (f"ISSUE_PER_OP = {ratios[len(ratios) // 2]:.3f}  # median of {len(ratios)} compiled flash2 kernels "
            f"({ratios[0]:.2f} to {ratios[-1]:.2f}): instructions per counted operation")


COMPILED_DOC = '''"""Registers, spills and shared memory of the project's Triton kernels as compiled for an architecture,
read off triton's compiler and ptxas by benchmarks/resources.py (results/sm90_resources.json holds the
same rows with the triton version; tests/test_presets.py checks the two agree). Written by
`python -m benchmarks.resources --out results/sm90_resources.json --model gpusim/compiled.py`.

Key: (arch, kernel, shape, dtype, causal, block_q, block_kv, num_warps, num_stages); shape is head_dim, or
for naive attention's softmax the row it holds in registers (its row, LD, rounded up to a power of two).
Value: (registers per thread, spill bytes per thread (stores + loads, as ptxas -v counts them in the code:
static, not per iteration), shared bytes per block, per loop in address order (instructions a warp issues
per iteration, not counting HGMMA; of them MUFU; of them LDL, spill reloads; the bytes per thread its LDL
load and its STL store), the same for the whole kernel), the loops read off the disassembly (nvdisasm). A
loop's range holds the loops nested in it, so an outer loop's figures include its inner loop's once.
"""
'''


def environment(command):
    version = subprocess.run([get_ptxas(CAPABILITY).path, "--version"], capture_output=True, text=True).stdout
    return {"gpu": f"none: compiled for {ARCH} (the H200) on CPU", "driver": None, "torch": None,
            "triton": triton.__version__, "cuda": None, "ptxas": version.strip().splitlines()[-2],
            "target": ARCH, "date": datetime.date.today().isoformat(), "command": command}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the JSON file to write")
    ap.add_argument("--workers", type=int, default=os.cpu_count(), help="compiling processes")
    ap.add_argument("--model", help="also write the table gpusim reads (gpusim/compiled.py)")
    args = ap.parse_args(argv)
    start = time.monotonic()
    results = probe.Results(args.out, environment("python -m benchmarks.resources " + " ".join(argv or sys.argv[1:])))
    with ProcessPoolExecutor(args.workers) as pool:
        for r in pool.map(compile_one, configs()):
            results.add(r)
            print(f"{r['kernel']:7s} {r['dtype']} d={r['head_dim']} causal={r['causal']:d} {r['block_q']}x{r['block_kv']} "
                  f"w{r['num_warps']} s{r['num_stages']}: {r.get('registers')} registers, spills "
                  f"{r.get('spill_store_bytes')}/{r.get('spill_load_bytes')} B, {r.get('shared_bytes')} B shared "
                  f"{r.get('error', '')}", flush=True)
    print(f"resources.py: {len(results.data['rows'])} configurations in {time.monotonic() - start:.0f} s")
    if args.model:
        Path(args.model).write_text(model_table(results.data["rows"], triton.__version__))


if __name__ == "__main__":
    main()
