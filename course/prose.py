"""One fact, one home: every number the notebooks' own prose states about gpusim or the H200 is registered here
with the function that computes it, and tests/test_course_prose.py checks each sentence against that function
(as tests/test_agreement.py does for the README).

`scan` finds the numbers with a unit (%, x, GB, TFLOP/s, ms, SMs, bytes, ...) and the ranges ("N = 1,024 to
32,768", "up to N = ...") in a markdown cell's own words (a lone shape such as "N = 4,096" is a choice, not a fact):
quotations of the source documents ("..." and > blocks), code spans and formulas are left out. Each number
found must lie inside a registered phrase of its notebook: a FACT, whose function returns the phrase as the
course computes it now, or a QUOTE (a source document's number the prose names, a preset's or a model's name,
an illustration), which no computation backs and none is claimed to.
"""
import json
import re
from dataclasses import dataclass
from pathlib import Path

import gpusim
from gpusim.passes.naive import MAX_ROW_ELEMENTS

from . import nsight
from .measurements import WRITE_S_P
from .practice import measured as practice_measured
from .provenance import heldout
from .scorecard import verdicts
from .standard import model as standard_model
from .tiling import measured as tiling_measured
from .tiling import model as tiling_model
from .widget import HEAD_DIMS

ROOT = Path(__file__).resolve().parents[1]
UNIT = (r"(?:%|x\b|×|\s?(?:TB/s|GB/s|TFLOP/s|GiB|MiB|KiB|GB|MB|KB|ms|µs|us|ns|SMs|registers|bytes|B\b|threads|"
        r"programs|blocks|split blocks|waves)|\s(?:on an|on the) H200)")
INT = r"\d{1,3}(?:,\d{3})*(?!\d|,\d)|\d+"  # 1,024 or 4096, without a trailing comma
INT = f"(?:{INT})"
NUMBER = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)" + UNIT
                    + r"|(?<![\w.])(?:N = )?{0} to {0}|up to N = {0}|\bto \d{{1,3}},\d{{3}}\b".format(INT))


@dataclass(frozen=True)
class Phrase:
    notebook: str  # the notebook's number, "02"
    text: str  # the words as the markdown has them
    compute: object = None  # FACT: a function returning `text` as computed now; QUOTE: None
    why: str = ""  # QUOTE: whose number it is


def _gpu(name):
    return gpusim.get_gpu(name)


def _s_mib():
    r = gpusim.simulate("naive", seq=4096, head_dim=64, dtype="fp16")
    return f"alone is {r.by_tensor['S']['write_bytes'] / 2**20:.0f} MiB"


def _sp_shares(seq=4096, gpu="A100-40GB"):
    """S and P's share of standard attention's bytes per head size, as notebook 2's traffic explorer shows them (one
    head, fp16, its tile for that head size: standard.model.traffic), each with its tile: the tile changes with d."""
    share = {d: f"{standard_model.sp_share(standard_model.traffic(seq, d, gpu)['naive']):.0%}" for d in HEAD_DIMS}

    def at(d):
        return f"at d = {d} ({' × '.join(map(str, standard_model.traffic_tile(gpu, d)))})"
    first, *middle, last = HEAD_DIMS
    return (f"{share[first]} of standard attention's bytes {at(first)}, "
            + ", ".join(f"{share[d]} {at(d)}" for d in middle) + f" and {share[last]} {at(last)}")


def _results(name):
    return json.loads((ROOT / "results" / "h200" / name).read_text())["rows"]


def _ncu_range():
    seqs = [r["seq"] for r in _results("ncu.json")]
    return f"N = {min(seqs):,} to {max(seqs):,}"


def _ncu_range_naive():
    rows = _results("ncu.json")
    short = {max(r["seq"] for r in rows if r["kernel"] == k) for k in ("qk", "softmax", "pv", "flash1")}
    assert len(short) == 1, short  # the sentence names one length for all four
    return f"{_ncu_range()} (the naive kernels and flash1 to {short.pop():,})"


def _longest_naive_run():
    rows = [r for r in _results("bench.json") if r["provider"] in WRITE_S_P and r.get("ms")]
    return f"were run up to N = {max(r['seq'] for r in rows):,}"


def _cudnn_ahead():
    """How much faster cuDNN's graph ran than the rule's graphed launch, at its best point (serving_splits.json)."""
    rows = _results("serving_splits.json")
    ms = {(r["provider"], r["default"], r["batch"], r["seq_kv"]): r["ms_per_token"]
          for r in rows if r.get("ms_per_token")}
    ahead = [1 - t / ms["plan_graph", True, b, n] for (p, _, b, n), t in ms.items() if p == "sdpa_cudnn_graph"]
    return f"ran up to {max(ahead):.0%} faster"


def _l2_half():
    g = _gpu("H200")
    return f"{g.l2_reuse_bytes(every_sm=True) / 2**20:.0f} of its {g.l2_bytes / 2**20:.0f} MiB"


def _heldout_kind_counts():
    """The fewest and most rows of one kind in a held-out set (results/h200/heldout*.json), flash2's forwards apart."""
    counts = {}
    for path in heldout.files(ROOT / "results" / "h200"):
        labels = [heldout.kind(r) for r in heldout.timed(path)]  # counted, not simulated
        for label in heldout.KINDS.values():
            counts.setdefault(label == "flash2", set()).add(labels.count(label))
    (flash2,), others = counts[True], counts[False]
    return f"88 rows hold only {min(others)} to {max(others)} of each kind but flash2's forwards ({flash2})"


def _probed_rows(seeds=None):
    """The held-out training rows measured with the host probe beside them (results/h200/heldout*.json), in the sets of
    these seeds (None: every set)."""
    return [r for path in heldout.files(ROOT / "results" / "h200") if seeds is None or int(path.stem[8:] or 2026) in seeds
            for r in heldout.timed(path) if r.get("host_probe_us")]


def _host_probe_span():
    """The host probe's span over one run: run 132's, the first whose sets carry it (seeds 2062 to 2065)."""
    probes = [r["host_probe_us"] * 1e-3 for r in _probed_rows(range(2062, 2066))]
    return f"{min(probes):.2f} to {max(probes):.2f} ms a call in one run"


def _host_probe_gain():
    """Those training steps within the band with the preset's host floor, then with the probe's."""
    rows = _probed_rows()

    def share(host_probe):
        return sum(abs(heldout.simulated(r, host_probe=host_probe).predicted_time_s / (r["ms"] * 1e-3) - 1)
                   <= heldout.WITHIN for r in rows) / len(rows)
    return f"from {share(False):.0%} to {share(True):.0%} within {heldout.WITHIN:.0%}"


def _flash1_unhinted():
    """flash1 without its loads' evict_last hint, d = 128 causal: its tensors' L2 -> SM bytes over gpusim's count."""
    over = [nsight.tensor_bytes_over_count(r["plain"], r["tensors"])
            for r in nsight.flash1_hint_rows(ROOT / "results" / "h200") if r["head_dim"] == 128 and r["causal"]]
    return f"its loads read {100 * (min(over) - 1):.0f}–{100 * (max(over) - 1):.0f}% more than counted"


def _fewest_bytes_fastest():
    """notebook 6's tile groups (results/h200/tiles.json): how often the fewest-bytes tile was the fastest."""
    groups = practice_measured.tile_launches(_results("tiles.json"), gpu="H200-measured")
    return f"was {practice_measured.fewest_phrase(groups)}"


def _filled_d128():
    """notebook 5: flash1's time over flash2's at d = 128 where flash1 keeps the GPU busy (bench.json), rounded."""
    ratios = [r for group, _, r, busy in tiling_measured.flash1_fill(_results("bench.json"))
              if busy >= 0.9 and group.startswith("d=128")]
    return f"the d = 128 shapes run nearer {sum(ratios) / len(ratios):.0f}x"


def _flash1_faster():
    saved = [1 - r["evict_last"]["ms"] / r["plain"]["ms"] for r in nsight.flash1_hint_rows(ROOT / "results" / "h200")]
    return f"cut the kernel's time by up to {max(saved):.0%}"  # time saved: "18% faster" would be 1/0.82


# The once-only blind scorings of the held-out sets (notebook 12), as benchmarks/report_heldout.py computes them.
BLIND_SCORINGS = "the 21 groups of sets from seed 2038 on had 83.5% to 97.7% of their rows within 20%"

FACTS = [
    Phrase("01", "60 MiB on the H200", lambda: f"{_gpu('H200').l2_bytes / 2**20:.0f} MiB on the H200"),
    Phrase("01", "30 of its 60 MiB", _l2_half),
    Phrase("01", "at most 164 KiB", lambda: f"at most {_gpu('A100-40GB').sram_bytes_per_sm // 1024} KiB"),
    Phrase("01", "163 KiB to any one", lambda: f"{_gpu('A100-40GB').sram_bytes_per_block // 1024} KiB to any one"),
    Phrase("02", "alone is 32 MiB", _s_mib),
    Phrase("02", "H100-SXM (80 GiB)", lambda: f"H100-SXM ({_gpu('H100-SXM').hbm_bytes / 2**30:.0f} GiB)"),
    Phrase("02", "raise `seq` to 65,536, the first stop past rows of 32,768 elements",
           lambda: f"raise `seq` to {standard_model.first_streamed_seq('A100-40GB', 64):,}, the first stop past rows "
                   f"of {MAX_ROW_ELEMENTS:,} elements"),
    Phrase("02", "73% of standard attention's bytes at d = 32 (128 × 32), 66% at d = 64 (128 × 64), 57% at d = 128 "
                 "(128 × 128) and 17% at d = 256 (32 × 64)", _sp_shares),
    Phrase("02", "on an 80 GiB GPU", lambda: f"on an {_gpu('H100-SXM').hbm_bytes / 2**30:.0f} GiB GPU"),
    Phrase("04", "T4 (64 KiB of SRAM)", lambda: f"T4 ({_gpu('T4').sram_bytes_per_block // 1024} KiB of SRAM)"),
    Phrase("05", "on the A100, 312 TFLOP/s of fp16 matmul against 19.5 TFLOP/s of fp32",
           lambda: f"on the A100, {_gpu('A100-40GB').fp16_matmul_flops_per_s / 1e12:.0f} TFLOP/s of fp16 matmul "
                   f"against {_gpu('A100-40GB').fp32_flops_per_s / 1e12:.1f} TFLOP/s of fp32"),
    Phrase("05", "49 GB/s from DRAM on the A100-40GB, 3.4x an SM's even share (1/108 of 1,555 GB/s): 32 SMs, 30% of "
                 "them, keep DRAM busy", tiling_model.sm_bandwidth_phrase),
    Phrase("05", "on the A100-40GB at N = 8,192, flash1's O, ℓ and m round trips come to 8.38 GiB and flash2's K and "
                 "V reads to 16.00 GiB; the SMs request 10.50 GiB for flash1 and 16.13 GiB for flash2, of which "
                 "10.49 GiB and 248.12 MiB reach DRAM", tiling_model.loop_order_phrase),
    Phrase("04", "was the fastest in 0 of 12 groups; the fastest requested 1.7 to 4.0x the fewest bytes",
           _fewest_bytes_fastest),
    Phrase("05", "within 1.25x of 2", lambda: f"within {verdicts.ABOUT}x of 2"),
    Phrase("05", "the d = 128 shapes run nearer 3x", _filled_d128),
    Phrase("08", "132 on an H200", lambda: f"{_gpu('H200').sm_count} on an H200"),
    Phrase("08", "ran up to 2% faster", _cudnn_ahead),
    Phrase("09", "an A100's 40 MiB L2", lambda: f"an A100's {_gpu('A100-40GB').l2_bytes / 2**20:.0f} MiB L2"),
    Phrase("06", "N = 1,024 to 32,768 (the naive kernels and flash1 to 16,384)", _ncu_range_naive),
    Phrase("12", "N = 1,024 to 32,768 (the naive kernels and flash1 to 16,384)", _ncu_range_naive),
    Phrase("12", "were run up to N = 32,768", _longest_naive_run),
    Phrase("12", "90% of a set's rows within 20% of the measured time, and 80% of each kind's",
           lambda: f"{heldout.TARGET[0]:.0%} of a set's rows within {heldout.WITHIN:.0%} of the measured time, and "
                   f"{heldout.TARGET[1]:.0%} of each kind's"),
    Phrase("12", "the target's 20%", lambda: f"the target's {heldout.WITHIN:.0%}"),
    Phrase("12", "0.33 to 0.87 ms a call in one run", _host_probe_span),
    Phrase("12", "from 86% to 92% within 20%", _host_probe_gain),
    Phrase("12", "88 rows hold only 10 to 12 of each kind but flash2's forwards (42)", _heldout_kind_counts),
    Phrase("12", "its loads read 6–8% more than counted", _flash1_unhinted),
    Phrase("12", "cut the kernel's time by up to 18%", _flash1_faster),
    Phrase("13", "(1.25x at P = 4)", lambda: f"({5 / 4}x at P = 4)"),  # the sentence's own 5/P at P = 4
]
QUOTES = [
    Phrase("01", "A100-40GB", why="a preset's name"),
    Phrase("01", "A100-80GB", why="a preset's name"),
    Phrase("01", "192 KB per A100 SM", why="the FlashAttention paper's (Sec. 2.1: 192KB of on-chip SRAM per each of "
           "108 SMs), L1 and shared memory together"),
    Phrase("02", "A100-40GB", why="a preset's name"),
    Phrase("02", "its 64 MB is S and P", why="the blog post's 64 MB"),
    Phrase("02", "7B model", why="a model's name"),
    Phrase("02", "the 90% holds", why="the blog post's 90%"),
    Phrase("05", "is it 2x?", why="the source documents' ~2x"),
    Phrase("05", "far past 2x", why="the source documents' ~2x"),
    Phrase("05", "occupies 15% of the SMs uses at most 15%", why="an illustration, no measurement"),
    Phrase("07", "~1.5x and ~2x", why="the blog post's FA-3 claims"),
    Phrase("07", "gains 2x from fp8", why="the blog post's fp8 rate claim"),
    Phrase("08", "70%", why="the blog post's 70%"),
    Phrase("08", "Llama-3-8B", why="a model's name"),
    Phrase("08", "Llama-3.1-70B", why="a model's name"),
    Phrase("08", "Llama-3-70B", why="a model's name"),
    Phrase("08", "50 users", why="the blog post's 50 users"),
    Phrase("09", "40.3 GB", why="the FlashAttention paper's Figure 2"),
    Phrase("09", "35.3 GB", why="the FlashAttention paper's Figure 2"),
    Phrase("09", "4.4 GB", why="the FlashAttention paper's Figure 2"),
    Phrase("10", "Llama 2 70B", why="a model's name"),
    Phrase("13", "Llama-3-8B", why="a model's name"),
    Phrase("12", BLIND_SCORINGS, why="docs/perf.md's blind_scorings: benchmarks/report_heldout.blind_scorings, which "
           "the course may not import; tests/test_course_prose.py recomputes it"),
    Phrase("08", "notebooks 2 to 5", why="the course's own notebooks"),
]


def _blank(match):
    return " " * len(match.group(0))


def own_words(text):
    """The markdown with quotations, code spans and formulas blanked out (same length, so positions hold)."""
    text = re.sub(r"^\s*>.*$", _blank, text, flags=re.M)
    for pattern in (r'\*"[^"]*"\*', r'"[^"\n]*"', r"`[^`]*`", r"\$\$.*?\$\$", r"\$[^$]*\$"):
        text = re.sub(pattern, _blank, text, flags=re.S)
    return text


def scan(text):
    """[(start, end, number with its unit)] in a markdown cell's own words."""
    return [(m.start(), m.end(), m.group(0)) for m in NUMBER.finditer(own_words(text))]


def markdown(path):
    """A notebook's markdown cells, each as one string."""
    cells = json.loads(Path(path).read_text())["cells"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells
            if c["cell_type"] == "markdown"]


def phrases(notebook):
    return [p for p in FACTS + QUOTES if p.notebook == notebook]


def uncovered(path):
    """The numbers of a notebook's prose that no registered phrase covers: [(number, context)]."""
    mine = phrases(Path(path).name[:2])
    out = []
    for text in markdown(path):
        spans = [(m.start(), m.start() + len(p.text)) for p in mine for m in re.finditer(re.escape(p.text), text)]
        for start, end, number in scan(text):
            if not any(a <= start and end <= b for a, b in spans):
                out.append((number, text[max(0, start - 50):end + 30].replace("\n", " ")))
    return out
