"""flash1's loads of Q_i, O_i, l_i, m_i with L1's evict_last hint (kernels/flash1.py) and without it: L2 -> SM bytes,
L1's hits and each launch's time (results/h200/flash1_l1.json, runs 152-153; docs/perf.md, "The model against the
hardware").

Without the hint flash1 read 5-8% more from L2 than gpusim counts at d = 128 causal (run 49 placed the excess in L1):
every launch asks L1 for about 1.6x the bytes L2 sends it, the rest L1 hits, and the causal kernel, whose compile
spills 72 B a thread where the non-causal one spills 12, hit 6.5-7.4 KB a step less. evict_last (PTX's
L1::evict_last) keeps those loads' lines over the spills'. The variants are compiled from kernels/flash1.py's source:
as it is, with the hint taken off (plain), and with it on O_i's load alone.

    ncu --clock-control none --profile-from-start off --cache-control all --print-units base --csv --page raw \\
        --metrics $(python -m benchmarks.flash1_l1 metrics) --log-file raw.csv \\
        python -m benchmarks.flash1_l1 work --manifest manifest.json
    python -m benchmarks.flash1_l1 time --csv raw.csv --manifest manifest.json --out flash1_l1.json
"""
import argparse
import importlib
import json
import sys
import tempfile
from pathlib import Path

HINT = ', eviction_policy="evict_last"'
O_LOAD = "o_i = tl.load(O + q_head + q_offs, mask=q_mask, other=0.0"
METRICS = {"l2_to_sm_bytes": "l1tex__m_xbar2l1tex_read_bytes.sum",
           "l1_requested_bytes": "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum",
           "l1_hit_bytes": "l1tex__t_bytes_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
           "spill_l2_to_sm_bytes": "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss.sum",
           "ncu_s": "gpu__time_duration.sum"}
SHAPES = [dict(seq=seq, head_dim=d, causal=causal, dtype="fp16", batch=max(1, 16384 // seq), heads=2048 // d)
          for d, seqs in ((128, (1024, 4096, 16384)), (64, (1024, 4096))) for causal in (False, True) for seq in seqs]


def variants(source):
    """{variant: kernels/flash1.py's source as compiled for it}."""
    plain = source.replace(HINT, "")
    assert plain.count(O_LOAD + ")") == 1, "kernels/flash1.py's O_i load is not where flash1_l1 looks for it"
    return {"evict_last": source, "plain": plain, "evict_last_o": plain.replace(O_LOAD + ")", O_LOAD + HINT + ")")}


def kernels():
    """{variant: its flash1_kernel}, each imported from its own module."""
    from gpusim_kernels import flash1
    source = Path(flash1.__file__).read_text().replace("from .", "from gpusim_kernels.")
    folder = Path(tempfile.mkdtemp())
    sys.path.insert(0, str(folder))
    out = {}
    for name, text in variants(source).items():
        (folder / f"flash1_{name}.py").write_text(text)
        out[name] = importlib.import_module(f"flash1_{name}").flash1_kernel
    return out


def calls():
    """(row, fn) for every shape and variant, the row without its measurements."""
    import torch

    import gpusim
    from benchmarks import ncu
    from gpusim_kernels.launch import constants
    compiled = kernels()
    for shape in SHAPES:
        blocks = gpusim.paper_blocks("flash1", ncu.PRESET, shape["head_dim"], "fp16")
        cfg = gpusim.simulate("flash1", **shape, block_q=blocks[0], block_kv=blocks[1], gpu=ncu.PRESET).config
        q, k, v = (torch.randn(*[shape[x] for x in ("batch", "heads", "seq", "head_dim")], device="cuda",
                               dtype=torch.float16) for _ in range(3))
        o = torch.empty(q.shape, dtype=torch.float32, device="cuda")
        l, m = (torch.empty(q.shape[:3], dtype=torch.float32, device="cuda") for _ in range(2))
        for name, kernel in compiled.items():
            def fn(kernel=kernel, cfg=cfg, q=q, k=k, v=v, o=o, l=l, m=m):
                kernel[(cfg.bh,)](q, k, v, o, l, m, cfg.seq, cfg.seq_kv, cfg.head_dim**-0.5, **constants(cfg, "flash1"))
            yield {**shape, "variant": name, "block_q": blocks[0], "block_kv": blocks[1]}, fn


def work(manifest):
    """Each launch once inside the profiler's range (after a warm-up), and what ran, in order."""
    from benchmarks import ncu, probe
    rows = [ncu.profiled_setup()]
    for row, fn in calls():
        fn()
        probe.profiled(fn)
        rows.append(row)
        Path(manifest).write_text(json.dumps({"launches": rows}))


def time_all(csv_path, manifest, out):
    """Nsight's counters of each launch (work's, under ncu) with its time by do_bench: results/h200/flash1_l1.json."""
    import triton

    from benchmarks import ncu
    launches, units = ncu.raw_table(Path(csv_path).read_text())
    ran = [r for r in json.loads(Path(manifest).read_text())["launches"] if not r.get("setup")]
    assert len(launches) == len(ran) + 1, (len(launches), len(ran))
    measured = [{key: float(launch[metric].replace(",", "")) * ncu.UNITS[units[metric]]
                 for key, metric in METRICS.items()} for launch in launches[1:]]
    rows = []
    for (row, fn), counters, done in zip(calls(), measured, ran):
        assert row == done, (row, done)
        ms = triton.testing.do_bench(fn, warmup=10, rep=200 if row["seq"] < 16384 else 600)
        rows.append({**row, **counters, "ms": ms})
        print(row["variant"], row["seq"], row["head_dim"], row["causal"], f"{ms:.3f} ms", file=sys.stderr)
    env = ncu.environment("python -m benchmarks.flash1_l1 work under ncu (the module's docstring), then time")
    Path(out).write_text(json.dumps({"environment": env, "rows": rows}, indent=1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("metrics", "work", "time"))
    ap.add_argument("--manifest")
    ap.add_argument("--csv")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.what == "metrics":
        print(",".join(METRICS.values()))
    elif args.what == "work":
        work(args.manifest)
    else:
        time_all(args.csv, args.manifest, args.out)


if __name__ == "__main__":
    main()
