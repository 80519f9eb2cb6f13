"""The source's claim "BERT (seq 512) 100 ms -> 45 ms, GPT-2 (seq 1K) 180 -> 62 ms", measured end to end with
Hugging Face transformers: standard attention (attn_implementation="eager") against SDPA ("sdpa",
FlashAttention-class kernels), whole model.

    python -m benchmarks.end_to_end --out DIR        # on the GPU: DIR/end_to_end.json (under a minute)

Models built from configs with random weights (nothing is downloaded): BertConfig() (bert-base: 12 layers,
hidden 768, 12 heads) as BertModel at seq 512, GPT2Config() (gpt2 small: 12 layers, 768, 12 heads) as
GPT2Model at seq 1024; batch 8; fp16 on the GPU. Rows {model, seq, batch, attn_implementation,
attn_implementation_used, pass, ms}: pass "forward" (eval, torch.no_grad) and "train" (train mode, forward and
backward of the last hidden state's mean square, grads set to None before each step); ms the median of
triton.testing.do_bench. Without transformers the file holds the import error.
"""
import argparse
import json
import os
import sys
import time

from benchmarks.bench import error_line

BATCH = 8


def build(name, impl, smoke=False):
    """The model with attn_implementation=impl, fp16 on the GPU, and the implementation it reports."""
    import torch
    import transformers as T
    small = dict(num_hidden_layers=1) if smoke else {}
    config, cls = {"bert-base": (T.BertConfig(**small), T.BertModel), "gpt2": (T.GPT2Config(**small), T.GPT2Model)}[name]
    try:
        model = cls._from_config(config, attn_implementation=impl)
    except Exception:  # noqa: BLE001 - older or newer signatures: set it on the config
        config._attn_implementation = impl
        model = cls(config)
    model = model.to("cpu", torch.float32) if smoke else model.to("cuda", torch.float16)
    used = getattr(model.config, "_attn_implementation", None)
    return model, used


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder; writes end_to_end.json")
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--smoke", action="store_true", help="CPU: one layer, seq 64, one timed call")
    args = ap.parse_args(argv)
    dev = "cpu" if args.smoke else "cuda"
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "end_to_end.json")
    command = "python -m benchmarks.end_to_end " + " ".join(sys.argv[1:])
    result = {"environment": {"command": command}, "claim": "BERT (seq 512) 100 ms -> 45 ms, GPT-2 (seq 1K) 180 -> 62 ms",
              "rows": []}
    try:
        import torch
        import triton
        import transformers
        from benchmarks.run_env import environment
        env = {"command": command, "smoke": True} if args.smoke else environment(command)
        result["environment"] = env | {"transformers": transformers.__version__}
    except Exception as err:  # noqa: BLE001
        result["error"] = f"{type(err).__name__}: {err}"[:500]
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        print("end_to_end:", result["error"])
        return
    for name, seq in (("bert-base", 512), ("gpt2", 1024)):
        seq = 64 if args.smoke else seq
        for impl in ("eager", "sdpa"):
            base = dict(model=name, seq=seq, batch=args.batch, attn_implementation=impl,
                        dtype="fp32" if args.smoke else "fp16")
            try:
                model, used = build(name, impl, args.smoke)
                base["attn_implementation_used"] = used
                base["model_class"] = type(model).__name__
                vocab = model.config.vocab_size
                ids = torch.randint(0, vocab, (args.batch, seq), device=dev)
            except Exception as err:  # noqa: BLE001
                result["rows"].append(base | {"error": f"{type(err).__name__}: {err}"[:300]})
                continue
            for pass_ in ("forward", "train"):
                row = base | {"pass": pass_}
                try:
                    if pass_ == "forward":
                        model.eval()

                        def fn():
                            with torch.no_grad():
                                return model(input_ids=ids).last_hidden_state
                    else:
                        model.train()

                        def fn():
                            model.zero_grad(set_to_none=True)
                            model(input_ids=ids).last_hidden_state.float().pow(2).mean().backward()
                    fn()
                    if args.smoke:
                        t0 = time.perf_counter()
                        fn()
                        row["ms"] = (time.perf_counter() - t0) * 1e3
                    else:
                        torch.cuda.synchronize()
                        torch.cuda.reset_peak_memory_stats()
                        row["ms"] = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
                        row["peak_bytes"] = torch.cuda.max_memory_allocated()
                except torch.cuda.OutOfMemoryError:
                    row["error"] = "OOM"
                except Exception as err:  # noqa: BLE001
                    row["error"] = error_line(err)
                result["rows"].append(row)
                print(f"{name} seq {seq} batch {args.batch} {impl} ({base.get('attn_implementation_used')}) {pass_}: "
                      f"{row.get('ms', row.get('error'))}", flush=True)
                with open(path, "w") as f:
                    json.dump(result, f, indent=1)
            model = None  # free it before the next model
            if not args.smoke:
                torch.cuda.empty_cache()
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"end_to_end: {sum('ms' in r for r in result['rows'])} rows timed -> {path}")


if __name__ == "__main__":
    main()
