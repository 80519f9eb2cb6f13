"""SDPA in practice: torch.nn.functional.scaled_dot_product_attention picks one of several backends
(FlashAttention-2, memory-efficient, cuDNN, math) per call. This module asks PyTorch itself, on this
machine: which backend it picks for an input (torch._fused_sdp_choice, the function the dispatcher calls),
which backends run when forced one at a time (torch.nn.attention.sdpa_kernel), and why a backend refuses
(on CUDA, PyTorch's own debug reasons from torch.backends.cuda.can_use_*_attention). On the CPU every input
runs with the math backend, which is what the course checks against the float64 reference.

benchmarks/sdpa_backends.py records the same probe on the GPU (results/<gpu>/sdpa_backends.json); the
notebooks read it beside the live CPU rows. torch is imported by the functions, so gpusim_course imports
without it.
"""
import warnings

from ..measurements import environment_line, read_optional

BACKENDS = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH")
DTYPES = ("fp32", "fp16", "bf16")
# The probe's inputs: each varies one thing from (fp16, head_dim 64, no mask) that the source names.
CASES = [dict(dtype="fp16", head_dim=64, mask="none"), dict(dtype="bf16", head_dim=64, mask="none"),
         dict(dtype="fp32", head_dim=64, mask="none"), dict(dtype="fp16", head_dim=128, mask="none"),
         dict(dtype="fp16", head_dim=256, mask="none"), dict(dtype="fp16", head_dim=80, mask="none"),
         dict(dtype="fp16", head_dim=60, mask="none"), dict(dtype="fp16", head_dim=512, mask="none"),
         dict(dtype="fp16", head_dim=64, mask="causal"), dict(dtype="fp16", head_dim=64, mask="boolean"),
         dict(dtype="fp16", head_dim=64, mask="additive")]


def _torch_dtype(name):
    import torch

    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


def inputs(device, dtype="fp16", head_dim=64, mask="none", seq=128, heads=4, seed=0):
    """q, k, v (1, heads, seq, head_dim) on `device` and the keyword arguments of the mask: none, causal
    (is_causal=True), boolean (a random attn_mask, the diagonal kept) or additive (a float attn_mask)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, heads, seq, head_dim, generator=g).to(device, _torch_dtype(dtype)) for _ in range(3))
    keep = (torch.rand(seq, seq, generator=g) > 0.5) | torch.eye(seq, dtype=torch.bool)
    kwargs = {"none": {}, "causal": {"is_causal": True}, "boolean": {"attn_mask": keep.to(device)},
              "additive": {"attn_mask": torch.zeros(seq, seq).masked_fill(~keep, float("-inf")).to(
                  device, _torch_dtype(dtype))}}[mask]
    return (q, k, v), kwargs


def picked(q, k, v, **kwargs):
    """The backend PyTorch's dispatcher picks for these inputs on their device."""
    import torch
    from torch.nn.attention import SDPBackend

    return SDPBackend(torch._fused_sdp_choice(q, k, v, **kwargs)).name


def forced(backend, q, k, v, **kwargs):
    """(ran, why not): whether SDPA runs with only `backend` allowed; PyTorch's first line when it refuses."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with sdpa_kernel([getattr(SDPBackend, backend)]):
                F.scaled_dot_product_attention(q, k, v, **kwargs)
    except RuntimeError as err:
        return False, str(err).strip().splitlines()[0]
    return True, ""


def reasons(backend, q, k, v, **kwargs):
    """PyTorch's debug reasons why a CUDA backend cannot run these inputs (empty on the CPU, where the
    can_use_* checks do not apply, or when it can)."""
    import torch

    if q.device.type != "cuda" or backend == "MATH":
        return []
    check = {"FLASH_ATTENTION": torch.backends.cuda.can_use_flash_attention,
             "EFFICIENT_ATTENTION": torch.backends.cuda.can_use_efficient_attention,
             "CUDNN_ATTENTION": torch.backends.cuda.can_use_cudnn_attention}[backend]
    params = torch.backends.cuda.SDPAParams(q, k, v, kwargs.get("attn_mask"), 0.0, kwargs.get("is_causal", False),
                                            False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ok = check(params, True)
    return [] if ok else [str(w.message).strip() for w in caught]


def probe(device, cases=CASES):
    """One row per case: the inputs, the device (and its compute capability), the backend PyTorch picks,
    and per backend whether it runs when forced, with PyTorch's reason when it does not."""
    import torch

    sm = "".join(map(str, torch.cuda.get_device_capability(device))) if str(device).startswith("cuda") else None
    rows = []
    for case in cases:
        (q, k, v), kwargs = inputs(device, **case)
        row = case | {"device": str(device).split(":")[0], "sm": sm, "picked": picked(q, k, v, **kwargs)}
        for backend in BACKENDS:
            ran, why = forced(backend, q, k, v, **kwargs)
            row[backend] = {"ran": ran, "error": why, "reasons": reasons(backend, q, k, v, **kwargs)}
        rows.append(row)
    return rows


def rows_table(rows):
    """probe rows as a table: the input, the pick, and which backends ran when forced ("no" with a reason)."""
    out = []
    for r in rows:
        entry = {"device": r["device"] + (f" sm_{r['sm']}" if r.get("sm") else ""), "dtype": r["dtype"],
                 "head_dim": r["head_dim"], "mask": r["mask"], "PyTorch picks": r["picked"]}
        for b in BACKENDS:
            why = (r[b]["reasons"] or [r[b]["error"]])[0] if not r[b]["ran"] else ""
            entry[b.split("_")[0].lower()] = "runs" if r[b]["ran"] else f"no: {why[:90]}"
        out.append(entry)
    return out


def source_conditions(row):
    """Whether the source's conditions for FlashAttention hold for a probe row: "CUDA, fp16/bf16, supported
    head dimensions" (PyTorch's flash backend: up to 256; it pads a head dimension that is not a multiple of 8,
    and the H200 ran and picked it at d = 60), "Ampere or newer" (sm_80 on), and no attention-mask tensor
    (is_causal only): the summary's "constraints on attention mask patterns"."""
    return (row["device"] == "cuda" and row["dtype"] in ("fp16", "bf16") and row["head_dim"] <= 256
            and int(row["sm"] or 0) >= 80 and row["mask"] in ("none", "causal"))


def max_error(q, k, v, causal=False):
    """Max |SDPA(math backend) - float64 attention| for q, k, v (torch tensors, (B, H, N, d)) on their device:
    the float64 reference gets the same (rounded) inputs."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import gpusim

    with sdpa_kernel([SDPBackend.MATH]):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    exact = gpusim.reference_attention(*(x.double().cpu().numpy() for x in (q, k, v)), causal=causal)
    return float(abs(out.double().cpu().numpy() - exact).max())


def math_error(seq=128, head_dim=64, seed=0):
    """max_error on this machine's CPU, in fp32: the backend every device has, which the course's kernels are
    compared with too."""
    (q, k, v), _ = inputs("cpu", "fp32", head_dim, "none", seq, seed=seed)
    return max_error(q, k, v)


def math_error_sentence(q, k, v, causal=False):
    """max_error of q, k, v, in their dtype on their device, beside math_error's fp32 on the CPU."""
    dtype = next(name for name in DTYPES if _torch_dtype(name) == q.dtype)
    return (f"SDPA, math backend, {dtype} on {q.device.type}: max |error| {max_error(q, k, v, causal):.1e}; "
            f"in fp32: {math_error():.1e}")


def table_here(device):
    """probe(device) as a table and a line: on a GPU every backend with its refusals (no line); on the CPU,
    cpu_rows_table's math backend and its one line on why the GPU backends refuse."""
    rows = probe(device)
    return (rows_table(rows), "") if str(device).startswith("cuda") else cpu_rows_table(rows)


def gpu_table(results):
    """results/<gpu>/sdpa_backends.json's probe as a table and where it was measured; ([], what to run) when it
    was not measured yet."""
    probed = read_optional(f"{results}/sdpa_backends.json")
    if probed is None:
        return [], "Not measured on the GPU yet: python -m benchmarks.sdpa_backends --out $OUT/sdpa_backends.json"
    return rows_table(probed["rows"]), environment_line(probed)


def cpu_rows_table(rows):
    """probe rows taken on the CPU, without the GPU backends' refusals (one error text, repeated): the input,
    PyTorch's pick and whether the math backend runs; and the one line that says why the others refuse."""
    table = [{"dtype": r["dtype"], "head_dim": r["head_dim"], "mask": r["mask"], "PyTorch picks": r["picked"],
              "flash": "runs" if r["FLASH_ATTENTION"]["ran"] else "no", "math": "runs" if r["MATH"]["ran"] else "no"}
             for r in rows]
    refused = sorted({b.split("_")[0].lower() for r in rows for b in BACKENDS[:3] if not r[b]["ran"]})
    line = (f"On the CPU, SDPA's GPU backends ({', '.join(refused)}) refuse every input: they need a CUDA GPU. "
            "The H200's table below shows them." if refused else "")
    return table, line
