"""Measurements that may or may not be in a results folder yet, read defensively: what PyTorch's SDPA picks
unforced (sdpa_pick.json, or the older probe sdpa_backends.json), whole models with eager against SDPA
attention (end_to_end.json), and the tensor pipe's share of each FlashAttention kernel's cycles
(tensor_pipe.json). Each reader returns only the rows that carry every key it needs (a row with an "error"
or a missing key counts as not measured), so a verdict can say "not measured here" instead of failing.
"""
import json
from pathlib import Path

NOT_MEASURED = "not measured here"
BACKEND_NAMES = {"flash": "flash", "flash_attention": "flash", "cudnn": "cudnn", "cudnn_attention": "cudnn",
                 "efficient": "efficient", "efficient_attention": "efficient", "mem_efficient": "efficient",
                 "math": "math"}


def rows_of(results, name, keys):
    """(rows with every key of `keys` and no "error", errors): the rows of results/<name> (a JSON object with
    "rows", or a list). A missing or unreadable file gives ([], [])."""
    path = Path(results) / name if results is not None else None
    if path is None or not path.exists():
        return [], []
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return [], []
    rows = data.get("rows", []) if isinstance(data, dict) else data
    rows = [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []
    errors = [str(r["error"]) for r in rows if r.get("error")]
    if isinstance(data, dict) and data.get("error"):
        errors.append(str(data["error"]))
    good = [r for r in rows if not r.get("error") and all(r.get(k) is not None for k in keys)]
    return good, errors


def backend(name):
    """A backend's short name (flash, cudnn, efficient, math) from either file's spelling, or None."""
    return BACKEND_NAMES.get(str(name).strip().lower())


def mask_name(mask):
    """A mask as the probe names it: "none", "causal", "boolean" or "additive"; sdpa_pick.json's True (a mask
    tensor was passed) is "boolean", its False "none"."""
    if mask is True:
        return "boolean"
    return str(mask) if mask not in (None, False, "") else "none"


def sdpa_picks(results):
    """What SDPA runs unforced on the GPU: [{dtype, head_dim, mask, causal, seq, picked, source}], from
    sdpa_pick.json (kernel names, unforced) where it exists, else from sdpa_backends.json's CUDA rows (the
    dispatcher's choice, torch._fused_sdp_choice). [] where neither was measured."""
    rows, _ = rows_of(results, "sdpa_pick.json", ("dtype", "head_dim", "picked"))
    out = [{"dtype": r["dtype"], "head_dim": int(r["head_dim"]), "mask": mask_name(r.get("mask")),
            "causal": bool(r.get("causal")), "seq": r.get("seq"), "picked": backend(r["picked"]),
            "source": "sdpa_pick.json"} for r in rows if backend(r["picked"])]
    if out:
        return out
    rows, _ = rows_of(results, "sdpa_backends.json", ("dtype", "head_dim", "picked", "device"))
    return [{"dtype": r["dtype"], "head_dim": int(r["head_dim"]), "mask": mask_name(r.get("mask")),
             "causal": r.get("mask") == "causal", "seq": None, "picked": backend(r["picked"]),
             "sm": r.get("sm"), "flash_runs": (r.get("FLASH_ATTENTION") or {}).get("ran"),
             "source": "sdpa_backends.json"} for r in rows if r["device"] == "cuda" and backend(r["picked"])]


def flash_runs(results):
    """{head_dim: whether SDPA's flash backend ran when forced} from sdpa_backends.json's CUDA rows."""
    rows, _ = rows_of(results, "sdpa_backends.json", ("dtype", "head_dim", "device"))
    return {int(r["head_dim"]): bool((r.get("FLASH_ATTENTION") or {}).get("ran")) for r in rows
            if r["device"] == "cuda" and r["dtype"] in ("fp16", "bf16") and r.get("mask", "none") == "none"}


def family(model):
    """"bert" or "gpt2" from a model name such as "bert-base-uncased" or "gpt2-medium"; None otherwise."""
    name = str(model).lower().replace("-", "").replace("_", "")
    return "bert" if "bert" in name else "gpt2" if "gpt2" in name else None


def end_to_end_ratios(results):
    """[{family, model, seq, batch, pass, eager_ms, sdpa_ms, ratio}]: one per (model, seq, batch, pass) with
    both attention implementations timed in end_to_end.json; [] where none was (or transformers failed)."""
    rows, _ = rows_of(results, "end_to_end.json", ("model", "seq", "batch", "attn_implementation", "ms"))
    timed = {}
    for r in rows:
        impl = str(r["attn_implementation"]).lower()
        if impl in ("eager", "sdpa") and family(r["model"]) and float(r["ms"]) > 0:
            key = (r["model"], int(r["seq"]), int(r["batch"]), r.get("pass") or "forward")
            timed.setdefault(key, {})[impl] = float(r["ms"])
    return [{"family": family(m), "model": m, "seq": s, "batch": b, "pass": p, "eager_ms": t["eager"],
             "sdpa_ms": t["sdpa"], "ratio": t["eager"] / t["sdpa"]}
            for (m, s, b, p), t in sorted(timed.items()) if {"eager", "sdpa"} <= t.keys()]


def end_to_end_errors(results):
    """The error texts end_to_end.json holds (e.g. transformers failed to load), [] where none."""
    return rows_of(results, "end_to_end.json", ())[1]


def tensor_shares(results):
    """[{kernel, head_dim, seq, causal, share, metric}]: the tensor pipe's active cycles over the SM's active
    cycles of the flash1 and flash2 kernels (Nsight Compute), from tensor_pipe.json; [] where not measured."""
    rows, _ = rows_of(results, "tensor_pipe.json", ("kernel",))
    out = []
    for r in rows:
        share = r.get("tensor_share")
        if share is None and r.get("tensor_cycles_active") is not None and r.get("sm_cycles_active"):
            share = r["tensor_cycles_active"] / r["sm_cycles_active"]
        if share is None or r["kernel"] not in ("flash1", "flash2"):
            continue
        out.append({"kernel": r["kernel"], "head_dim": r.get("head_dim"), "seq": r.get("seq"),
                    "causal": bool(r.get("causal")), "share": float(share), "metric": r.get("metric") or ""})
    return out
