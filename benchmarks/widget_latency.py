"""A slider change that only needs counts must update the widget in under 200 ms. Moves each slider 50
times and prints the median and the worst time until the readout (the numbers) changed and until the whole
update (numbers and the redrawn figure) was done, with their ratio to 200 ms. Changes that recompute
curves (a new sequence length) are printed too, for comparison; they are not held to the target.

    python -m benchmarks.widget_latency
"""
import itertools
import statistics
import time

from gpusim_course.softmax import widgets as softmax_widgets
from gpusim_course.tiling import widgets as tiling_widgets

TARGET_S = 0.2
CHANGES = 50


def latencies(widget, control, values):
    """(readout seconds, total seconds) per change of `control` through `values`, CHANGES times."""
    stamp = {}
    widget.readout.observe(lambda change: stamp.setdefault("readout", time.perf_counter()), "value")
    out = []
    for value in itertools.islice(itertools.cycle(values), CHANGES):
        stamp.clear()
        start = time.perf_counter()
        control.value = value
        out.append((stamp.get("readout", time.perf_counter()) - start, time.perf_counter() - start))
    return out


def report(label, times, held=True):
    readout, total = ([t[i] * 1e3 for t in times] for i in (0, 1))
    ratio = f"{max(total) / (TARGET_S * 1e3):6.2f}" if held else "     -"
    print(f"{label:46s} {statistics.median(readout):8.1f} {max(readout):8.1f} {statistics.median(total):8.1f} "
          f"{max(total):8.1f} {ratio}")


def main():
    print(f"{'slider (50 changes each)':46s} {'readout ms':>17s} {'whole update ms':>17s} {'worst':>6s}")
    print(f"{'':46s} {'median':>8s} {'max':>8s} {'median':>8s} {'max':>8s} {'/200ms':>6s}")
    ex = tiling_widgets.TilingExplorer(gpu="A100-40GB", seq=4096, head_dim=64, heads=16)
    report("notebook 4: block_kv (counts only)", latencies(ex, ex.block_kv, [32, 64, 128, 256, 128, 64]))
    report("notebook 4: block_q (counts only)", latencies(ex, ex.block_q, [32, 64, 128, 256, 128, 64]))
    st = tiling_widgets.TileStepper(seq=256)
    report("notebook 4: tile stepper step (trace cached)", latencies(st, st.step, range(st.step.max + 1)))
    sm = softmax_widgets.OnlineSoftmaxStepper()
    report("notebook 3: online softmax step", latencies(sm, sm.step, range(sm.step.max + 1)))
    report("notebook 4: seq (recomputes the curves)", latencies(ex, ex.seq, [1024, 2048, 4096, 8192]), held=False)


if __name__ == "__main__":
    main()
