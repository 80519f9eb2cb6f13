"""Notebooks 4's and 5's measurements beside gpusim: Nsight Compute's bytes of the project's FlashAttention-2 kernel
(results/<gpu>/ncu.json, its tiles from the run's manifest.json) against gpusim's count for each launch (notebook 4),
and the measured speedups of results/<gpu>/bench.json against gpusim's prediction for each shape (notebook 5).
"""
import gpusim
from gpusim.units import fmt_bytes

from ..formatting import span
from ..measurements import _outcome, timed_by_seq
from ..scorecard.verdicts import about


def _speedups(rows, head_dim, causal, dtype):
    """Per length (bench.json) where both the project's naive and flash2 kernels ran: flash2's row, naive's time
    over flash2's, and PyTorch's standard attention's over SDPA flash's (or, where either did not run, why)."""
    naive, flash2 = (timed_by_seq(rows, p, dtype, head_dim, causal) for p in ("naive", "flash2"))
    group = dict(dtype=dtype, head_dim=head_dim, causal=causal)
    out = {}
    for seq in sorted(naive.keys() & flash2.keys()):
        torch_naive, sdpa = (_outcome(rows, p, seq, **group) for p in ("torch_naive", "sdpa_flash"))
        ran = isinstance(torch_naive, dict) and isinstance(sdpa, dict)
        out[seq] = (flash2[seq], naive[seq]["ms"] / flash2[seq]["ms"],
                    torch_naive["ms"] / sdpa["ms"] if ran else f"PyTorch's: {torch_naive or 'not run'}")
    return out


def speedup_rows(rows, gpu="H200-measured", head_dim=64, causal=False, dtype="fp16"):
    """Per length (bench.json): the measured speedup of the project's flash2 kernel over its naive kernels
    beside gpusim's predicted one, and of SDPA's FlashAttention-2 over PyTorch's standard attention; each column
    names its ratio (the slower one's time / the faster one's)."""
    out = []
    for seq, (r, ours, theirs) in _speedups(rows, head_dim, causal, dtype).items():
        shape = dict(seq=seq, batch=r["batch"], heads=r["heads"], head_dim=head_dim, causal=causal, dtype=dtype,
                     gpu=gpu)
        t_naive, t_flash2 = (gpusim.simulate(algo, **shape).predicted_time_s for algo in ("naive", "flash2"))
        out.append({"N": seq, "batch x heads": f"{r['batch']} x {r['heads']}",
                    "measured: naive's time / flash2's": f"{ours:.1f}x",
                    "gpusim: naive's time / flash2's": f"{t_naive / t_flash2:.1f}x",
                    "measured: PyTorch's standard attention's time / SDPA flash's":
                        f"{theirs:.1f}x" if isinstance(theirs, float) else theirs})
    return out


def speedup_trend(rows, head_dim=64, causal=False, dtype="fp16"):
    """speedup_rows' two measured speedups in words: each pair's range over N and the N where it peaks."""
    speedups = _speedups(rows, head_dim, causal, dtype)
    parts = []
    for i, pair in ((1, "the project's naive kernels over its flash2"),
                    (2, "PyTorch's standard attention over SDPA flash")):
        ratios = {seq: x[i] for seq, x in speedups.items() if isinstance(x[i], float)}
        peak = max(ratios, key=ratios.get)
        parts.append(f"{pair} {span(ratios.values(), '{:.1f}')}x, highest at N = {peak:,}")
    return "Measured, " + "; ".join(parts) + "."


def flash1_fill(rows, gpu="H200-measured", dtype="fp16"):
    """Per measured shape of bench.json where both the project's flash1 and flash2 ran: (group, N, flash1's time /
    flash2's measured, the share of SM time flash1's thread blocks keep busy at that shape in gpusim)."""
    out = []
    for head_dim in (64, 128):
        for causal in (False, True):
            f1, f2 = (timed_by_seq(rows, p, dtype, head_dim, causal) for p in ("flash1", "flash2"))
            for seq in sorted(f1.keys() & f2.keys()):
                r = gpusim.simulate("flash1", seq=seq, head_dim=head_dim, batch=f1[seq]["batch"],
                                    heads=f1[seq]["heads"], causal=causal, dtype=dtype, gpu=gpu)
                group = f"d={head_dim}{' causal' if causal else ''}"
                out.append((group, seq, f1[seq]["ms"] / f2[seq]["ms"], r.kernels[0].busy_fraction))
    return out


def fill_sentence(rows, gpu="H200-measured", full=0.9):
    """The measured flash1 / flash2 ratios split by whether flash1 fills the GPU (gpusim's busy share >= full), with
    how many lie within ~2x (the scorecard's 1.6-2.5x) and the ranges per group where it fills."""
    cases = flash1_fill(rows, gpu)
    filled = [c for c in cases if c[3] >= full]
    idle = [c for c in cases if c[3] < full]
    lo, hi = about(2)
    inside = sum(lo <= c[2] <= hi for c in filled)
    groups = dict.fromkeys(c[0] for c in filled)
    per_group = "; ".join(f"{g} {span([c[2] for c in filled if c[0] == g], '{:.2f}x')}" for g in groups)
    return (f"Where flash1's thread blocks keep at least {full:.0%} of the SMs busy (gpusim, {len(filled)} of "
            f"{len(cases)} measured shapes), flash2's speedup over flash1 (flash1's time / flash2's) is {per_group}: "
            f"within ~2x ({lo:.1f}-{hi:.1f}x) in {inside} of {len(filled)}. Where they keep "
            f"{span([c[3] for c in idle], '{:.0%}')} busy ({len(idle)} shapes), it is "
            f"{span([c[2] for c in idle], '{:.1f}x')}.")


def nsight_launches(ncu, manifest, algo="flash2"):
    """Per launch of algo that Nsight Compute profiled (ncu.json's rows, each quantity's `simulated` gpusim's count,
    `measured` Nsight's): {seq, head_dim, causal, batch, heads, block_q, block_kv, and each quantity: (simulated,
    measured)}, ordered as profiled; the tile and shape from the run's manifest (the tiles gpusim.paper_blocks gives,
    benchmarks/ncu.py). ncu.json's counts are the current model's: tests/test_results.py compares the run's raw
    profile with gpusim again and fails where the stored file differs."""
    out = {}
    for r in ncu["rows"]:
        if r["kernel"] == algo:
            key = (r["seq"], r["head_dim"], r["causal"])
            out.setdefault(key, dict(seq=key[0], head_dim=key[1], causal=key[2]))[r["quantity"]] = (
                r["simulated"], r["measured"])
    for entry in manifest["launches"]:  # (the run's set-up launch has no shape)
        key = (entry.get("seq"), entry.get("head_dim"), entry.get("causal"))
        if entry.get("algo") == algo and entry["pass"] == "forward" and key in out:
            out[key] |= {k: entry[k] for k in ("batch", "heads", "block_q", "block_kv")}
    return list(out.values())


def inputs_bytes(launch, itemsize=2):
    """Q, K and V's bytes at a launch's shape (fp16: 2 bytes an element; K and V with Q's heads)."""
    return 3 * launch["batch"] * launch["heads"] * launch["seq"] * launch["head_dim"] * itemsize


def kv_reads(launch, gpu="H200-measured"):
    """How many times FlashAttention-2 reads K and V at a launch, on average over their blocks: gpusim's tiles visited
    over the K/V blocks, once per Q block (T_r times), or with the causal mask only by the Q blocks that reach them."""
    tiling = gpusim.simulate("flash2", gpu=gpu, **{k: launch[k] for k in (
        "seq", "head_dim", "causal", "batch", "heads", "block_q", "block_kv")}).config.tiling
    return tiling.tiles / tiling.n_kv_blocks


def requested(launch):
    """(gpusim's, Nsight's) bytes the SMs requested at a launch: read from L2 and written to it."""
    return tuple(launch["l2_to_sm_bytes"][i] + launch["sm_to_l2_bytes"][i] for i in (0, 1))


def nsight_rows(launches):
    """nsight_launches' launches as notebook 4's table: the tile, how often K and V are read (kv_reads), the bytes
    the SMs requested (read and written) as Nsight counted them and as gpusim does, and the DRAM reads."""
    rows = []
    for x in launches:
        asked = requested(x)
        rows.append({"N": x["seq"], "d": x["head_dim"], "causal": "yes" if x["causal"] else "no",
                     "tile (Br x Bc)": f"{x['block_q']} x {x['block_kv']}",
                     "K, V read (times)": kv_reads(x),
                     "requested, Nsight": fmt_bytes(asked[1]), "requested, gpusim": fmt_bytes(asked[0]),
                     "equal to the byte": "yes" if asked[1] == asked[0] else "no",
                     "requested / Q, K, V": f"{asked[1] / inputs_bytes(x):.1f}x",
                     "DRAM read, Nsight": fmt_bytes(x["dram_read_bytes"][1]),
                     "DRAM read, gpusim": fmt_bytes(x["dram_read_bytes"][0]),
                     "Nsight / gpusim": f"{x['dram_read_bytes'][1] / x['dram_read_bytes'][0]:.2f}"})
    return rows


def nsight_sentence(launches, within=0.1):
    """What notebook 4's table shows, computed from it: on how many launches Nsight counted gpusim's requested bytes
    exactly, how many times the inputs' bytes the SMs requested, and where DRAM reads left gpusim's by more than
    `within` (the L2's capacity edge, notebook 12)."""
    asked = [requested(x) for x in launches]
    equal = sum(counted == measured for counted, measured in asked)
    dram = [(x, x["dram_read_bytes"][1] / x["dram_read_bytes"][0]) for x in launches]
    off = [f"N = {x['seq']:,}, d = {x['head_dim']}{', causal' if x['causal'] else ''}: {ratio:.2f}x"
           for x, ratio in dram if abs(ratio - 1) > within]
    reuse = span([measured / inputs_bytes(x) for (_, measured), x in zip(asked, launches)], "{:.1f}x")
    return (f"Nsight counted gpusim's requested bytes to the byte on {equal} of {len(launches)} launches. The SMs "
            f"requested {reuse} the bytes of Q, K and V; DRAM read within {within:.0%} of gpusim's L2 model on "
            f"{len(launches) - len(off)} of {len(launches)}" + (f" (not at {'; '.join(off)})." if off else "."))
