"""Which backend torch.nn.functional.scaled_dot_product_attention runs when not forced (default settings),
read from torch.profiler: the aten op it dispatches to and the CUDA kernels that ran.

    python -m benchmarks.sdpa_pick --out DIR        # on the GPU: DIR/sdpa_pick.json (seconds)
    python -m benchmarks.sdpa_pick --out DIR --smoke  # CPU: the same code paths (CPU ops, no kernels)

Inputs: six that meet FlashAttention's conditions (fp16/bf16, d 64/128, causal or not, N 1K-4K, batch 2,
8 heads) and some that do not (fp32; d 60; d 72; d 256; an explicit boolean attn_mask). "picked": from the
aten op (_scaled_dot_product_cudnn_attention -> cudnn, _flash_attention -> flash, _efficient_attention ->
efficient, _attention_math -> math), else from the kernel names (cuDNN's contain "cudnn", flash "flash",
efficient "fmha"/"efficient"/"mem_eff", math runs matmuls and a softmax). "kernels": the CUDA kernels of
one call; "ops": the aten ops whose name holds "scaled_dot_product" or "attention".
"""
import argparse
import json
import os
import sys

from benchmarks.bench import error_line

MEETS = [("fp16", 64, False, 1024), ("fp16", 128, True, 2048), ("bf16", 64, True, 4096), ("bf16", 128, False, 1024),
         ("fp16", 64, True, 4096), ("bf16", 128, True, 2048)]
FAILS = [("fp32", 64, False, 1024, False), ("fp32", 128, True, 2048, False), ("fp16", 60, False, 1024, False),
         ("fp16", 72, True, 2048, False), ("fp16", 256, False, 1024, False), ("bf16", 256, True, 2048, False),
         ("fp16", 64, False, 1024, True), ("bf16", 128, False, 2048, True)]


def from_ops(ops):
    for op in ops:
        low = op.lower()
        for key, name in (("cudnn", "cudnn"), ("flash", "flash"), ("efficient", "efficient"), ("math", "math")):
            if "scaled_dot_product" in low and key in low:
                return name
    return None


def from_kernels(kernels):
    low = [k.lower() for k in kernels]
    if any("cudnn" in k for k in low):
        return "cudnn"
    if any("flash" in k for k in low):
        return "flash"
    if any(x in k for k in low for x in ("fmha", "efficient", "mem_eff")):
        return "efficient"
    if any("softmax" in k for k in low) and any(x in k for k in low for x in ("gemm", "sm90_xmma", "cutlass", "ampere")):
        return "math"
    return None


def probe(dtype, head_dim, causal, seq, mask, device):
    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[dtype]
    q, k, v = (torch.randn(2, 8, seq, head_dim, device=device, dtype=dt) for _ in range(3))
    attn_mask = torch.ones(seq, seq, dtype=torch.bool, device=device).tril() if mask else None
    kw = dict(attn_mask=attn_mask) if mask else dict(is_causal=causal)
    F.scaled_dot_product_attention(q, k, v, **kw)  # warm-up (cuDNN plans, lazy loads)
    if device == "cuda":
        torch.cuda.synchronize()
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=acts) as prof:
        F.scaled_dot_product_attention(q, k, v, **kw)
        if device == "cuda":
            torch.cuda.synchronize()
    kernels, ops = [], []
    for e in prof.events():
        dev_type = str(getattr(e, "device_type", ""))
        if dev_type.endswith("CUDA"):
            kernels.append(e.name)
        elif "scaled_dot_product" in e.name or "attention" in e.name:
            ops.append(e.name)
    kernels, ops = list(dict.fromkeys(kernels)), list(dict.fromkeys(ops))
    picked = from_ops(ops) or from_kernels(kernels)
    return dict(dtype=dtype, head_dim=head_dim, causal=causal, seq=seq, mask=mask, batch=2, heads=8,
                meets_flash_conditions=not mask and dtype != "fp32" and head_dim in (64, 128), picked=picked,
                picked_by_kernels=from_kernels(kernels), kernels=kernels, ops=ops)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder; writes sdpa_pick.json")
    ap.add_argument("--smoke", action="store_true", help="CPU: small inputs")
    args = ap.parse_args(argv)
    import torch
    device = "cpu" if args.smoke else "cuda"
    command = "python -m benchmarks.sdpa_pick " + " ".join(sys.argv[1:])
    if device == "cuda":
        from benchmarks.run_env import environment
        env = environment(command)
        env["backends_enabled"] = {name: bool(getattr(torch.backends.cuda, f"{name}_sdp_enabled")())
                                   for name in ("flash", "mem_efficient", "math", "cudnn")}
    else:
        env = {"gpu": None, "command": command, "smoke": True}
    result = {"environment": env, "rows": []}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "sdpa_pick.json")
    cases = [(*m, False) for m in MEETS] + FAILS
    for dtype, d, causal, seq, mask in cases:
        if args.smoke:
            seq = 64
        try:
            row = probe(dtype, d, causal, seq, mask, device)
        except Exception as err:  # noqa: BLE001
            row = dict(dtype=dtype, head_dim=d, causal=causal, seq=seq, mask=mask,
                       error=error_line(err))
        result["rows"].append(row)
        print(f"{dtype} d{d} {'causal' if causal else '-'} N{seq} mask={mask}: {row.get('picked', row.get('error'))} "
              f"{row.get('ops', '')} {[k[:60] for k in row.get('kernels', [])]}", flush=True)
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
    print(f"sdpa_pick: {len(result['rows'])} rows -> {path}")


if __name__ == "__main__":
    main()
