"""Predict, then reveal, the second kind: a multiple-choice question whose answer is computed (by gpusim or from
a results file) when the cell runs, never typed. The learner picks an option and presses *reveal*; the
feedback says whether the pick was right and shows the computation behind the answer.

`Choice(question, options, answer, why)`: `options` are the labels offered, `answer` the label that the
computation gave, `why` one sentence computed beside it. `.pick(label)` and `.reveal()` do from Python what the
buttons do (tests, nbclient).
"""
from html import escape

import ipywidgets as W

import gpusim


WAITING = "<p><i>Pick one, then press reveal.</i></p>"  # the feedback before a reveal


class Choice:
    """A multiple-choice guess with a reveal button."""

    def __init__(self, question, options, answer, why=""):
        if answer not in options:
            raise ValueError(f"the computed answer {answer!r} is not one of the options {options}")
        self.answer, self.why = answer, why
        self.prompt = W.HTML(f"<p><b>Predict:</b> {escape(question)}</p>")
        self.options = W.RadioButtons(options=list(options), value=None, description="your pick",
                                      style={"description_width": "initial"}, layout=W.Layout(width="auto"))
        self.button = W.Button(description="reveal", button_style="info")
        self.feedback = W.HTML(WAITING)
        self.feedback.add_class("gpusim-choice-feedback")
        self.button.on_click(lambda _: self.reveal())
        self.options.observe(lambda _: self._hide(), "value")
        self.ui = W.VBox([self.prompt, self.options, self.button, self.feedback])

    def _hide(self):
        self.feedback.value = WAITING

    def pick(self, label):
        self.options.value = label

    def reveal(self):
        """The verdict on the pick (or the answer alone, without one) and the computation behind it."""
        picked = self.options.value
        verdict = ("no pick: " if picked is None else "right: " if picked == self.answer else
                   f"not {escape(str(picked))}: ")
        self.feedback.value = (f"<p><b>{verdict}{escape(str(self.answer))}</b>"
                               + (f". {escape(self.why)}" if self.why else "") + "</p>")
        return picked == self.answer

    def _repr_mimebundle_(self, **kwargs):
        return self.ui._repr_mimebundle_(**kwargs)


def bits_question():
    """Notebook 3: is FlashAttention-2's output bit-for-bit standard attention's? (gpusim, float32). The distance is
    relative to the output's scale, its largest magnitude, in units of float32's rounding u = 2^-24, not in ULPs of
    each element, which count many steps between two outputs near zero."""
    from .softmax import bits

    c = bits.attention_bits()
    u = 2.0**-24
    options = ("yes, every element has the same bits",
               "no, but every difference is within 64 u of the output's largest magnitude (u = 2^-24)",
               "no, and some differ by more than 64 u of the output's largest magnitude")
    answer = options[0] if c["equal_fraction"] == 1 else options[1] if c["max_difference"] <= 64 * u else options[2]
    return Choice("Run FlashAttention-2 and standard attention on the same float32 inputs. Is the output "
                  "bit-for-bit identical? If not, how far apart, relative to the output's largest magnitude?",
                  options, answer,
                  f"{c['label']}: {c['equal_fraction']:.1%} of the elements have the same bits; the largest "
                  f"difference is {c['max_difference'] / u:.1f} u of the output's largest magnitude. Counted in "
                  f"each element's own last place it is up to {c['max_ulp']:,} ULPs: outputs near zero have tiny "
                  f"ULPs")


def causal_share_question(seq=96, block_q=32, block_kv=16, head_dim=16):
    """Notebook 10, before the causal puzzle: what share of the K/V rows does a causal launch load, against the
    same launch without the mask? (gpusim's count of the puzzle's own configuration.)"""
    shape = dict(seq=seq, head_dim=head_dim, block_q=block_q, block_kv=block_kv)
    causal, full = (gpusim.simulate("flash2", causal=c, **shape).by_tensor["K"]["read_bytes"] for c in (True, False))
    shares = {"about a quarter": 1 / 4, "about half": 1 / 2, "about two thirds": 2 / 3, "all of them": 1}
    answer = min(shares, key=lambda label: abs(shares[label] - causal / full))
    return Choice(f"The causal puzzle's launch: N = {seq}, Q blocks of {block_q} rows, K/V blocks of {block_kv}. "
                  "What share of the K/V bytes a non-causal launch reads does the causal kernel read, skipping "
                  "the tiles the mask hides?", list(shares), answer,
                  f"gpusim counts {causal:,} B of K against {full:,} B without the mask: {causal / full:.1%}; Q "
                  f"block i reads the K/V blocks up to its diagonal, {block_q // block_kv} more for each block down")


def sdpa_question(results, dtype="fp16", head_dim=64, mask="none"):
    """Notebook 6: which backend does SDPA pick on the H200 for one input (sdpa_pick.json or
    sdpa_backends.json)? None where it was not measured."""
    from . import evidence

    picks = [p for p in evidence.sdpa_picks(results)
             if (p["dtype"], p["head_dim"], p["mask"]) == (dtype, head_dim, mask) and not p["causal"]]
    if not picks:
        return None
    options = ("flash", "cudnn", "efficient", "math")
    return Choice(f"On the H200, which backend does PyTorch's SDPA pick for {dtype}, d = {head_dim}, no mask, "
                  f"when nothing is forced?", options, picks[0]["picked"],
                  f"measured: {picks[0]['source']} records {picks[0]['picked']}")


def decode_question(helps_most_rows):
    """Notebook 8: is one decode step at the longest cache memory-bound? (inference.measured.helps_most)."""
    row = max((r for r in helps_most_rows if r["scenario"].startswith("decode")),
              key=lambda r: int(r["scenario"].split(",")[1].split("K")[0]))
    options = ("memory-bound", "compute-bound")
    answer = options[0] if row["memory-bound?"] == "yes" else options[1]
    cache = row["scenario"].split(",", 1)[1].strip()  # "decode, 128K cache": the question says decode already
    return Choice(f"One decode step, {cache}, batch {row['batch']}: memory-bound or compute-bound?",
                  options, answer, f"gpusim: {row['FLOPs per DRAM byte (gpusim)']:.1f} FLOPs per DRAM byte against a "
                                   f"ridge point of {row['ridge point']:.0f}")


def slope_question(slopes):
    """Notebook 9: the log-log slope of standard attention's training memory (training.plots.slopes)."""
    options = ("1: linear in N", "2: quadratic in N", "3: cubic in N")
    answer = options[min(2, max(0, round(slopes["naive"]) - 1))]
    return Choice("On the log-log plot of attention's training memory against N, what slope will standard "
                  "attention's line have?", options, answer,
                  f"fitted: standard attention {slopes['naive']:.2f}, FlashAttention-2 {slopes['flash2']:.2f}")


def wrong_question(rows):
    """Notebook 11: how many of the source's claims does the scorecard find wrong as written?"""
    from .scorecard.verdicts import counts

    wrong = counts(rows)["wrong"]
    options = ("none", "1 to 3", "4 to 6", "7 or more")
    answer = options[0] if wrong == 0 else options[1] if wrong <= 3 else options[2] if wrong <= 6 else options[3]
    return Choice(f"Of the {len(rows)} claims, how many are wrong as written?", options, answer,
                  f"the scorecard: {wrong} wrong, " + ", ".join(f"{n} {v}" for v, n in counts(rows).items()
                                                                  if v != "wrong"))


BOUND_SHARE = 0.9  # a bound that holds in 9 launches of 10 or more


def time_miss_question(ncu_rows):
    """Notebook 12: which way does gpusim's predicted time miss Nsight Compute's measured one (ncu.json)? A floor or a
    ceiling is a bound: below it (or above) in nearly every launch, BOUND_SHARE of them or more; otherwise an estimate
    that misses both ways."""
    times = [r for r in ncu_rows if r["quantity"] == "time_s" and r.get("measured")]
    below = sum(r["simulated"] < r["measured"] for r in times)
    options = ("below the measured time in nearly every launch: a floor", "above it in nearly every launch: a ceiling",
               "below in some launches, above in others: an estimate")
    share = below / len(times)
    answer = options[0] if share >= BOUND_SHARE else options[1] if 1 - share >= BOUND_SHARE else options[2]
    return Choice("gpusim's predicted kernel time against Nsight Compute's measured time: which way does it miss?",
                  options, answer, f"ncu.json: below in {below} of {len(times)} launches")
