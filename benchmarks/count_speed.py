"""Count mode must be fast enough for sliders: one configuration up to N = 1,048,576 in well under 10 ms,
a sweep of 50 configurations in well under 100 ms. Prints measured times and their ratio to the target.

    python -m benchmarks.count_speed
"""
import time

import gpusim


def median_s(fn, repeat=21):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[repeat // 2]


def main():
    print(f"{'configuration':58s} {'median':>10s} {'target':>8s} {'ratio':>6s}")
    worst = [dict(algo=a, seq=1 << 20, head_dim=128, heads=32, causal=True, block_q=16, block_kv=16, gpu="H200")
             for a in gpusim.ALGOS]
    for kw in worst:
        t = median_s(lambda: gpusim.simulate(**kw))
        print(f"{kw['algo']:7s} N=1,048,576 causal, 16x16 tiles (65,536 Q blocks){'':10s} {t * 1e3:8.2f} ms {10:6d} ms {t / 10e-3:6.3f}")
    variants = [("naive", False), ("flash1", False), ("flash2", False), ("hopper", False), ("flash2", True)]
    configs = [dict(algo=a, seq=2**p, causal=c, head_dim=128, heads=16, gpu="H100-SXM")
               for p in range(9, 19) for a, c in variants]
    t = median_s(lambda: [gpusim.simulate(**kw) for kw in configs], repeat=7)
    print(f"{f'sweep of {len(configs)} configurations (4 algos, 512..262,144 tokens)':58s} {t * 1e3:8.2f} ms {100:6d} ms {t / 100e-3:6.3f}")


if __name__ == "__main__":
    main()
