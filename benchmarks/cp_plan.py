"""benchmarks/cp.py's plan, without torch: the shapes and providers of the two-GPU measurement (issue 25),
its rows, and the merge that puts the model (on the link measured in the same run) beside them.

    torchrun --nproc-per-node 2 -m benchmarks.cp --out results/h200x2            # link, project, torch_cp
    torchrun --nproc-per-node 2 -m benchmarks.cp --part check --out results/h200x2   # outputs and bytes checked
    python -m benchmarks.cp --part single --out results/h200x2                    # one GPU: flash2 and SDPA
    python -m benchmarks.cp --part merge --out results/h200x2                     # -> cp.json, with the model
    bash benchmarks/run_cp.sh                                                      # all of it, <= 9 minutes

Each part writes DIR/cp_<part>.json after every row; merge joins them into DIR/cp.json: {"environment",
"link" (the microbenchmark), "rows": [{provider, strategy, gpus, link, batch, heads, kv_heads, seq, head_dim,
causal, dtype, ms, link_send_bytes, model_ms}], "checks": the check part's rows (each project provider's
output over the whole sequence against the float64 reference, relative_error and bound, and the bytes every
rank sent beside gpusim's link_send_bytes)}. The model's link is the one measured in the same run
(NCCL send/recv and all-to-all rates, the small-message time as its per-step latency), nothing fitted.
--dry-run writes the planned rows without torch.distributed or a GPU (tests/test_cp_bench.py).
"""
import os

# NVLink multicast (NVLS, symmetric-memory multicast) is not allowed on the lent machines: keep NCCL, torch's
# symmetric memory and NVSHMEM off it, before anything initialises them.
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
os.environ.update(MULTICAST_OFF)

import datetime  # noqa: E402
import json  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402

import gpusim  # noqa: E402
from gpusim.hardware import GiB, device_preset  # noqa: E402
from gpusim.links import Link  # noqa: E402

PROJECT = {"ring": ("ring", "flash2"), "zigzag": ("zigzag", "flash2"), "ulysses": ("ulysses", "flash2"),
           "allgather": ("allgather", "flash2"), "ring_hopper": ("ring", "hopper"),
           "zigzag_hopper": ("zigzag", "hopper")}  # provider: (strategy, local kernel)
TORCH_CP = {f"torch_cp_{rotate}_{backend}": (rotate, backend) for rotate in ("allgather", "alltoall")
            for backend in ("flash", "cudnn")}  # context_parallel's rotate methods x SDPA's backends
SINGLE = ("single_flash2", "sdpa_flash", "sdpa_cudnn", "sdpa_efficient")
PARTS = ("link", "project", "torch_cp", "single", "check")
TIMED = PARTS[1:4]  # the parts whose rows are timed providers: cp.json's rows
SEQS = tuple(1024 << i for i in range(9))  # 1K .. 256K
MODEL_GPU = "H200-measured"


@dataclass(frozen=True)
class Shape:
    batch: int
    heads: int
    kv_heads: int
    seq: int
    head_dim: int
    causal: bool
    dtype: str


def shapes(smoke=False):
    """The sweep, most wanted first (a time budget cuts from the end): bf16 d128 32 heads, N 1K-256K with and
    without the causal mask (the speedup targets at N >= 64K and the overlap crossover at short shards);
    d 64 (shorter steps: the crossover moves); GQA 32/8; fp16."""
    if smoke:
        return [Shape(1, 2, 2, 128, 16, causal, "fp16") for causal in (False, True)]
    main = [Shape(1, 32, 32, n, 128, c, "bf16") for c in (False, True) for n in sorted(SEQS, key=_priority)]
    d64 = [Shape(1, 32, 32, n, 64, c, "bf16") for c in (False, True) for n in SEQS[:7]]
    gqa = [Shape(1, 32, 8, n, 128, True, "bf16") for n in (4096, 16384, 65536)]
    fp16 = [Shape(1, 32, 32, n, 128, c, "fp16") for c in (False, True) for n in (16384, 65536)]
    return main + d64 + gqa + fp16


def check_shapes(smoke=False):
    """The shapes each project provider's whole output is checked on (the check part): without and with the
    causal mask, GQA, d 64 in fp16; short enough for a float64 reference over the whole sequence on one GPU."""
    if smoke:
        return shapes(smoke)
    return [Shape(1, 8, 8, 4096, 128, c, "bf16") for c in (False, True)] + [Shape(1, 8, 2, 4096, 128, True, "bf16"),
                                                                            Shape(1, 8, 8, 4096, 64, True, "fp16")]


def _priority(n):
    """64K, 128K, 256K (the targets), then the short shards up from 1K (the crossover), then the rest."""
    return (0, n) if n >= 65536 else (1, n) if n <= 8192 else (2, n)


def row(provider, shape, gpus, ms=None, link_send_bytes=None, strategy=None, link=None, **extra):
    return {"provider": provider, "strategy": strategy, "gpus": gpus, "link": link, **asdict(shape), "ms": ms,
            "link_send_bytes": link_send_bytes, **extra}


def planned(parts, smoke=False):
    """Every row the parts would measure (or check), ms None: what --dry-run writes."""
    out = []
    for shape in shapes(smoke):
        if "project" in parts:
            out += [row(p, shape, 2, strategy=s, link="nvlink") for p, (s, _) in PROJECT.items()
                    if strategy_runs(s, shape, 2)]
        if "torch_cp" in parts:
            out += [row(p, shape, 2, strategy=rotate, link="nvlink") for p, (rotate, _) in TORCH_CP.items()]
        if "single" in parts:
            out += [row(p, shape, 1) for p in SINGLE]
    if "check" in parts:
        out += [row(p, shape, 2, strategy=s, link="nvlink") for shape, providers in checks_planned(2, smoke).items()
                for p, s, _ in providers]
    return out


def checks_planned(gpus, smoke=False, hopper=True):
    """{check shape: [(provider, strategy, local kernel)]}: the check part's work over `gpus` ranks (hopper=False:
    without the Hopper kernel's providers, which need an sm_90 GPU)."""
    return {shape: [(p, s, kernel) for p, (s, kernel) in PROJECT.items()
                    if strategy_runs(s, shape, gpus) and (hopper or kernel != "hopper")]
            for shape in check_shapes(smoke)}


def strategy_runs(strategy, shape, gpus):
    """Ulysses needs P to divide both head counts; zigzag 2P to divide N."""
    if strategy == "ulysses":
        return shape.heads % gpus == 0 and shape.kv_heads % gpus == 0
    return shape.seq % (2 * gpus) == 0


def measured_link(link_rows):
    """The model's link from the microbenchmark: NCCL send/recv's rate and all-to-all's bus rate (its algbw, a
    rank's buffer over the time, times (P-1)/P: the bytes that left it) at the largest size, the smallest exchange's
    time as the per-step latency; None where a kind has no row (NCCL failed)."""
    by = {kind: sorted((r for r in link_rows if r["kind"] == kind), key=lambda r: r["bytes"])
          for kind in ("sendrecv", "alltoall")}
    if not all(by.values()):
        return None
    return Link("nvlink-measured-this-run", by["sendrecv"][-1]["bytes_per_s"],
                alltoall_bytes_per_s=_bus(by["alltoall"][-1]), step_latency_s=by["sendrecv"][0]["ms"] / 1e3,
                source="benchmarks/cp.py's link microbenchmark, same run")


def _bus(alltoall_row):
    """An all-to-all row's bytes that left a rank per second: over its `ranks` (rows before they were kept: 2)."""
    ranks = alltoall_row.get("ranks", 2)
    return alltoall_row["bytes_per_s"] * (ranks - 1) / ranks


def model_ms(r, link, gpu=MODEL_GPU):
    """gpusim's time for a row of the project's (or the single GPU's flash2), on the measured link and gpu (a
    preset); None for PyTorch's and SDPA's kernels, which the model does not describe."""
    shape = dict(seq=r["seq"], head_dim=r["head_dim"], heads=r["heads"], kv_heads=r["kv_heads"], batch=r["batch"],
                 causal=r["causal"], dtype=r["dtype"], gpu=gpu)
    if r["provider"] in PROJECT:
        strategy, kernel = PROJECT[r["provider"]]
        return 1e3 * gpusim.simulate(kernel, gpus=r["gpus"], strategy=strategy, link=link, **shape).predicted_time_s
    if r["provider"] == "single_flash2":
        return 1e3 * gpusim.simulate("flash2", **shape).predicted_time_s
    return None


def merge(out):
    """DIR/cp_<part>.json -> DIR/cp.json, each project row with the model's time on the measured link."""
    parts = {p: json.loads((out / f"cp_{p}.json").read_text()) for p in PARTS if (out / f"cp_{p}.json").exists()}
    link = measured_link(parts["link"]["rows"]) if "link" in parts else None
    gpu = model_gpu(parts["link"]["environment"]) if link else None
    rows = [r | ({"model_ms": model_ms(r, link, gpu)} if gpu and r.get("ms") is not None else {})
            for p in TIMED if p in parts for r in parts[p]["rows"]]
    env = {p: parts[p]["environment"] for p in parts}
    checks = parts.get("check", {}).get("rows", [])
    planned = parts["check"]["environment"].get("planned_checks", len(checks)) if "check" in parts else 0
    result = {"environment": env, "link": parts.get("link", {}).get("rows", []),
              "model_link": asdict(link) if link else None, "model_gpu": gpu,
              "targets": targets(rows) | checked(checks, planned), "checks": checks, "rows": rows}
    (out / "cp.json").write_text(json.dumps(result, indent=1))
    return result


def model_gpu(environment):
    """The preset the model prices a run on: its GPU's, by the name the run recorded (an H100 pair is priced as
    H100s); MODEL_GPU where no name is a CUDA device's (the CPU smoke run); None for a GPU without a preset."""
    name = environment.get("gpu", "")
    if not name or name.startswith("cpu"):
        return MODEL_GPU
    return device_preset(name, 80 * GiB if "80GB" in name else 40 * GiB if "40GB" in name else None)


SHAPE_KEYS = ("batch", "heads", "kv_heads", "seq", "head_dim", "causal", "dtype")


def targets(rows):
    """Issue 25's targets, from the rows: per shape, two GPUs over one GPU's flash2 (ring without a mask, zigzag
    with one; >= 1.8x and >= 1.7x at N >= 64K), the project's best flash2 provider against context_parallel's
    best on SDPA's flash backend (>= 1.0x at N >= 16K) and on cuDNN (reported), and the share of the
    project's rows whose model time is within 20% of the measured one (>= 90%)."""
    ms = {}
    for r in rows:
        if r.get("ms"):
            ms.setdefault(tuple(r[k] for k in SHAPE_KEYS), {})[r["provider"]] = r["ms"]
    out = []
    for shape, got in sorted(ms.items()):
        seq, causal = shape[3], shape[5]
        ours = min((got[p] for p in ("ring", "zigzag", "ulysses", "allgather") if p in got), default=None)
        entry = dict(zip(SHAPE_KEYS, shape))
        main = "zigzag" if causal else "ring"
        if seq >= 65536 and main in got and "single_flash2" in got:
            entry[f"{main}_over_single_flash2"] = got["single_flash2"] / got[main]
        for backend in ("flash", "cudnn"):
            theirs = [v for p, v in got.items() if p.startswith("torch_cp_") and p.endswith(backend)]
            if seq >= 16384 and ours and theirs:
                entry[f"ours_over_torch_cp_{backend}"] = min(theirs) / ours
        if len(entry) > len(SHAPE_KEYS):
            out.append(entry)
    modelled = [r for r in rows if r.get("ms") and r.get("model_ms") and r["provider"] in PROJECT]
    within = sum(abs(r["model_ms"] / r["ms"] - 1) <= 0.2 for r in modelled)
    return {"by_shape": out, "model_within_20_percent": f"{within} of {len(modelled)} project rows"}


def checked(checks, planned):
    """The check part's verdicts out of the `planned` checks: outputs within their bound, and the bytes every rank
    sent equal to gpusim's count (a check that raised, or that a time budget cut, counts as failed)."""
    ran = [r for r in checks if "error" not in r]
    within = sum(r["relative_error"] <= r["bound"] for r in ran)
    exact = sum(set(r["every_rank_sent"]) == {r["gpusim_link_send_bytes"]} for r in ran)
    return {"outputs_within_bound": f"{within} of {planned} checked",
            "bytes_equal_gpusim": f"{exact} of {planned} checked"}


class Part:
    """One part's JSON, rewritten after every row (only rank 0 writes)."""

    def __init__(self, out, part, environment, write=True):
        self.path, self.write = out / f"cp_{part}.json", write
        self.data = {"environment": environment, "rows": []}
        self.save()

    def add(self, r):
        self.data["rows"].append(r)
        self.save()

    def save(self):
        if self.write:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data, indent=1))
            tmp.replace(self.path)


def environment(command):
    """GPU, driver, versions, date and command (benchmarks.bench's), the world size and the multicast
    settings; on CPU (the smoke run) what runs instead."""
    import torch
    import torch.distributed as dist
    world = dist.get_world_size() if dist.is_initialized() else 1
    if torch.cuda.is_available():
        from benchmarks.bench import environment as gpu_environment
        base = gpu_environment(command)
    else:
        base = {"gpu": "cpu (gloo, Triton interpreter: a smoke run)", "torch": torch.__version__,
                "date": datetime.date.today().isoformat(), "command": command}
    return base | {"world_size": world, "env": MULTICAST_OFF}
