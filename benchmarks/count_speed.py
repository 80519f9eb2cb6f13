"""Count mode must be fast enough for sliders: one configuration up to N = 1,048,576 in well under 10 ms,
a sweep of 50 configurations in well under 100 ms. Prints measured times and their ratio to the target.

    python -m benchmarks.count_speed

gpusim keeps what it counted per configuration, so a slider's second visit to a shape costs less than its
first: each line times first calls (every repeat a configuration not seen before, N = 1,048,576 less the
repeat's index) beside the same configuration called again, and a first call without tiles: it searches them
(`best_blocks`, kept per shape) where the kernel takes gpusim's pick, and takes its launch table's for the
Hopper kernel. Those run on the H200 preset, whose compiled tiles narrow the search; one more line times flash2's
first call without tiles on the default preset (A100-40GB), where every tile that fits is weighed.
"""
import time
import tracemalloc

import gpusim

REPEAT = 21
N = 1 << 20


def median_s(calls):
    """The median time of the calls (each a function of no arguments), in seconds."""
    times = []
    for fn in calls:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def line(label, t, target_s):
    print(f"{label:78s} {t * 1e3:8.2f} ms {target_s * 1e3:6.0f} ms {t / target_s:6.3f}")


def main():
    print(f"{'configuration':78s} {'median':>11s} {'target':>9s} {'ratio':>6s}")
    for algo in gpusim.ALGOS:
        shape = dict(algo=algo, head_dim=128, heads=32, causal=True, gpu="H200")
        first = median_s([lambda i=i: gpusim.simulate(seq=N - i, block_q=16, block_kv=16, **shape)
                          for i in range(REPEAT)])
        again = median_s([lambda: gpusim.simulate(seq=N, block_q=16, block_kv=16, **shape)] * REPEAT)
        bare = median_s([lambda i=i: gpusim.simulate(seq=N - 100 - i, **shape) for i in range(7)])
        line(f"{algo:7s} N~1,048,576 causal, 16x16 tiles, first call", first, 10e-3)
        line(f"{algo:7s} the same configuration again", again, 10e-3)
        line(f"{algo:7s} no tiles given, first call ({'its launch table' if algo == 'hopper' else 'best_blocks'})",
             bare, 10e-3)
    default = median_s([lambda i=i: gpusim.simulate("flash2", seq=N - 200 - i, head_dim=128, heads=32, causal=True)
                        for i in range(7)])  # no preset named: A100-40GB, for whose sm_80 no tile was compiled
    line("flash2  no tiles given, first call, the default preset (A100-40GB: every tile weighed)", default, 10e-3)
    for algo in gpusim.ALGOS:  # the longest a length may be: 2^40 (gpusim.shape's MAX_SEQ)
        huge = dict(algo=algo, head_dim=128, heads=32, causal=True, block_q=64, block_kv=64, gpu="H200")
        t = median_s([lambda i=i: gpusim.simulate(seq=2**40 - i, **huge) for i in range(5)])
        tracemalloc.start()
        gpusim.simulate(seq=2**40 - 99, **huge)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        line(f"{algo:7s} N~2^40 causal, 64x64 tiles, first call ({peak / 2**20:.1f} MiB allocated at most)", t, 10e-3)
    variants = [("naive", False), ("flash1", False), ("flash2", False), ("hopper", False), ("flash2", True)]
    configs = [dict(algo=a, seq=2**p, causal=c, head_dim=128, heads=16, gpu="H100-SXM")
               for p in range(9, 19) for a, c in variants]
    sweep = f"sweep of {len(configs)} configurations (4 algos, 512..262,144 tokens)"
    first = median_s([lambda i=i: [gpusim.simulate(**(kw | {"seq": kw["seq"] - 1 - i})) for kw in configs]
                      for i in range(3)])
    line(f"{sweep}, first", first, 100e-3)
    line(f"{sweep}, again", median_s([lambda: [gpusim.simulate(**kw) for kw in configs]] * 7), 100e-3)


if __name__ == "__main__":
    main()
