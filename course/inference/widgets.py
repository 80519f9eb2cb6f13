"""The decode notebook's widgets (Live subclasses, course/widget.py): the KV-cache calculator, the split-KV
stepper and the paged-allocation simulator. Each asks for a guess before it shows gpusim's answer (its
question(), course/widget.py)."""
from html import escape

import ipywidgets as W

from gpusim import kvcache
from gpusim.units import fmt_bytes

from ..widget import Live, Question, dropdown, seq_slider, set_step_range, step_controls
from . import model as course_decode
from .plots import OWNER_COLORS, draw_memory_map

CONTEXTS = tuple(1024 << i for i in range(8))  # 1K .. 128K tokens
DTYPES = ("fp16", "bf16", "fp8", "fp32")
GPUS = ("H200", "H100-SXM", "A100-80GB", "A100-40GB")
TENSOR_COLORS = {"Q": "tab:green", "K": "tab:blue", "V": "tab:cyan", "block_table": "tab:gray",
                 "cache_seqlens": "0.7", "O_partial": "tab:orange", "LSE_partial": "tab:red", "O": "tab:purple",
                 "LSE": "tab:pink"}


class KVCalculator(Live):
    """The KV cache of `batch` requests of `context` tokens beside a model's weights on one GPU."""

    def __init__(self, model="Llama-3-8B", context=8192, batch=16, dtype="fp16", gpu="H200"):
        self.model = dropdown("model", list(kvcache.MODELS), model)
        self.context = seq_slider(context, CONTEXTS, "context")
        self.batch = W.IntSlider(value=batch, min=1, max=512, description="batch", continuous_update=False)
        self.dtype = dropdown("KV dtype", list(DTYPES), dtype)
        self.gpu = dropdown("GPU", list(GPUS), gpu)
        super().__init__([[self.model, self.gpu, self.dtype], [self.context, self.batch]], figsize=(9, 2.6))

    def update(self):
        self.calc = c = course_decode.kv_calculator(self.model.value, self.context.value, self.batch.value,
                                                    self.dtype.value, self.gpu.value)
        fits = "fits" if c["fits"] else "<b style='color:#b00'>does not fit</b>"
        self.readout.value = (
            f"<p>{escape(c['model'])}: <b>{c['bytes per token']:,} B per token</b> of KV cache; a request of "
            f"{self.context.value:,} tokens holds {fmt_bytes(c['bytes per request'])}; {self.batch.value} of them "
            f"{fmt_bytes(c['KV cache bytes'])} beside {fmt_bytes(c['weight bytes'])} of weights in "
            f"{fmt_bytes(c['HBM bytes'])} of HBM: {fits}.</p>" + _past_longest(c, self.context.value))

    def question(self):
        most = self.calc["largest batch"]
        return Question(f"How many requests of {self.context.value:,} tokens fit beside {self.calc['model']}'s "
                        f"weights on one {self.gpu.value}, their KV cache in {self.dtype.value}?", "requests", most,
                        f"{most:,} requests")

    def draw(self):
        ax, c, gib = self.axes[0], self.calc, 2**30
        weights, cache, hbm = c["weight bytes"] / gib, c["KV cache bytes"] / gib, c["HBM bytes"] / gib
        ax.barh(0, weights, color="0.55", label="weights")
        ax.barh(0, cache, left=weights, color="tab:blue" if c["fits"] else "tab:red",
                label=f"KV cache, batch {self.batch.value}")
        ax.axvline(hbm, color="k", lw=2, label=f"{self.gpu.value} HBM")
        most = weights + c["largest batch"] * c["bytes per request"] / gib
        ax.axvline(most, color="tab:green", ls="--", lw=2, label=f"largest batch: {c['largest batch']:,}")
        ax.set(yticks=[], xlabel="GiB", xlim=(0, max(hbm, weights + cache) * 1.05))
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=4, frameon=False)


def _past_longest(calc, context):
    """A warning where the context passes the model's longest (its config's max_position_embeddings), naming the
    presets that take it; "" where it does not."""
    if context <= calc["longest context"]:
        return ""
    take = [m.name for m in kvcache.MODELS.values() if m.max_tokens >= context]
    return (f"<p><b style='color:#b00'>{context:,} tokens pass {escape(calc['model'])}'s longest context, "
            f"{calc['longest context']:,} tokens</b> (its config's max_position_embeddings): it serves no request "
            f"that long. Presets that do: {escape(', '.join(take) or 'none')}.</p>")


class SplitKVStepper(Live):
    """Flash-Decoding of one request, step by step: which split (program) reads which chunk of the cache,
    the bytes each step moves, then the reduce merging the splits' LSEs."""

    def __init__(self, seq_kv=300, num_splits=3, block_kv=64, page_size=16):
        self.seq_kv = W.IntSlider(value=seq_kv, min=32, max=1024, step=4, description="seq_kv",
                                  continuous_update=False)
        self.num_splits = W.IntSlider(value=num_splits, min=1, max=8, description="num_splits",
                                      continuous_update=False)
        self.block_kv = dropdown("block_kv (Bc)", [16, 32, 64], block_kv)
        self.page_size = dropdown("page_size", [16, 32, 64, 128], page_size)
        self.step, self.play = step_controls()
        super().__init__([[self.seq_kv, self.num_splits], [self.block_kv, self.page_size], [self.play, self.step]],
                         figsize=(9, 4.6), nrows=2)

    def update(self):
        self.steps = course_decode.split_kv_steps(self.seq_kv.value, self.num_splits.value, self.block_kv.value,
                                                  self.page_size.value)
        set_step_range(self.step, self.play, len(self.steps))
        self.at = self.steps[self.step.value - 1]
        self.total = sum(sum(s["loads"].values()) + sum(s["stores"].values()) for s in self.steps)
        self.readout.value = f"<p>Step {self.step.value} of {len(self.steps)}: {escape(describe(self.at))}</p>"

    def question(self):
        return Question(f"How many bytes does the whole launch (both kernels) move for a cache of "
                        f"{self.seq_kv.value:,} tokens in pages of {self.page_size.value}, {self.num_splits.value} "
                        f"splits, block_kv = {self.block_kv.value}?", "bytes", self.total,
                        f"{self.total:,} B ({fmt_bytes(self.total)})")

    def draw(self):
        ax_cache, ax_bytes = self.axes
        done = self.steps[: self.step.value]
        visited = {s["chunk"] for s in done if s["kernel"] != "reduce" and s.get("keys")}
        for s in self.steps:
            if s["kernel"] == "reduce" or not s.get("keys"):
                continue
            first, end = s["keys"]
            color = OWNER_COLORS[2 * (s["split"] % 10)]
            ax_cache.barh(0, end - first, left=first, color=color, alpha=1.0 if s["chunk"] in visited else 0.25,
                          edgecolor="k" if s is self.at else "white", lw=3 if s is self.at else 1)
            ax_cache.text((first + end) / 2, 0, f"split {s['split']}\nchunk {s['chunk']}", ha="center",
                          va="center", fontsize=10)
        for page in range(0, self.seq_kv.value + 1, self.page_size.value):
            ax_cache.axvline(page, color="0.3", lw=0.6, ymin=0.05, ymax=0.2)
        ax_cache.set(xlim=(0, self.seq_kv.value), yticks=[], xlabel="cached token (ticks: page boundaries)",
                     title="the cache of one request, cut into chunks of block_kv keys, split among programs")
        if self.at["kernel"] == "reduce":
            weights = self.at["weights"]
            ax_bytes.bar(range(len(weights)), weights, color=[OWNER_COLORS[2 * (s % 10)] for s in range(len(weights))])
            ax_bytes.set(xticks=range(len(weights)), xlabel="split s", ylabel="exp(LSE_s - max LSE)",
                         title=f"reduce, query head {self.at['program'][1]}: each split's weight in O", ylim=(0, 1.1))
            return
        moved = {}
        for s in done:
            for tensor, n in list(s["loads"].items()) + list(s["stores"].items()):
                moved[tensor] = moved.get(tensor, 0) + n
        names = list(moved)
        ax_bytes.barh(names, [moved[n] for n in names], color=[TENSOR_COLORS.get(n, "0.5") for n in names])
        ax_bytes.set(xlabel="bytes moved so far (split_kv kernel)", title="traffic by tensor")
        ax_bytes.invert_yaxis()


def describe(step):
    """One step of the split-KV schedule in words."""
    moved = ", ".join(f"{t} {n:,} B" for t, n in (step["loads"] | step["stores"]).items()) or "nothing"
    if step["kernel"] == "reduce":
        w = ", ".join(f"{x:.3f}" for x in step["weights"])
        return (f"reduce program {step['program']} merges the splits' partial O of one query row: weights "
                f"exp(LSE_s - max) = [{w}], sum l = {step['l_i'][0]:.3f}; moves {moved}.")
    if step["chunk"] is None:
        return f"split {step['split']} ends: stores its partial O and LSE in fp32 ({moved})."
    first, end = step["keys"]
    return (f"split {step['split']} (program {step['program']}) reads chunk {step['chunk']}: keys {first}..{end - 1} "
            f"in pages {list(step['pages'])}; moves {moved}; running max of row 0 m = {step['m_i'][0]:.3f}, "
            f"sum l = {step['l_i'][0]:.3f}.")


class PagedAllocation(Live):
    """Requests arrive and finish; the same memory is handed out in contiguous slots of max_tokens or in
    pages. Two memory maps at the chosen step and the wasted share of each over time."""

    STEPS = 240

    def __init__(self, page_size=16, slots=8, max_tokens=2048, per_step=1.0, model="Llama-3-8B"):
        self.model_name = model
        self.page_size = dropdown("page_size", [8, 16, 32, 64, 128, 256], page_size)
        self.slots = W.IntSlider(value=slots, min=2, max=16, description="slots", continuous_update=False)
        self.max_tokens = dropdown("max_tokens", [1024, 2048, 4096, 8192], max_tokens)
        self.per_step = dropdown("arrivals/step", [0.25, 0.5, 1.0, 2.0, 4.0], per_step)
        self.step, self.play = step_controls()
        self._key = None
        super().__init__([[self.page_size, self.max_tokens], [self.slots, self.per_step], [self.play, self.step]],
                         figsize=(9, 7.2), nrows=3)

    def _options(self):
        return dict(model=self.model_name, per_step=self.per_step.value, max_tokens=self.max_tokens.value,
                    page_size=self.page_size.value, slots=self.slots.value)

    def update(self):
        key = tuple(self._options().values())
        if key != self._key:
            self._key, self.runs = key, course_decode.allocation(steps=self.STEPS, **self._options())
            set_step_range(self.step, self.play, self.STEPS)
        self.now = course_decode.allocation(steps=self.STEPS, until=self.step.value, **self._options())
        lines = []
        for policy, serving in self.now.items():
            snap = serving.snapshots[-1]
            lines.append(f"<b>{policy}</b>: {snap.running} running, {snap.waiting} waiting, "
                         f"{serving.finished} finished, {serving.preemptions} preempted, "
                         f"{fmt_bytes(snap.wasted_bytes)} reserved but empty")
        self.readout.value = (f"<p>Step {self.step.value} of {self.STEPS} (one decode step each; "
                              f"{self.slots.value} x {self.max_tokens.value:,} tokens of cache): "
                              + "; ".join(lines) + ".</p>")

    def question(self):
        share = 100 * self.runs["contiguous"].wasted_fraction
        return Question(f"Over {self.STEPS} decode steps (arrivals/step = {self.per_step.value:g}, {self.slots.value} "
                        f"slots of {self.max_tokens.value:,} tokens), what share of the memory contiguous allocation "
                        f"reserves holds no token?", "percent", share, f"{share:.1f}%")

    def draw(self):
        cell = self.page_size.value
        ncols = max(16, min(64, self.max_tokens.value // cell))
        for ax, (policy, serving) in zip(self.axes, self.now.items()):
            title = (f"{policy}: a slot of {self.max_tokens.value:,} tokens per request" if policy == "contiguous"
                     else f"paged: pages of {cell} tokens")
            draw_memory_map(ax, serving, cell, ncols, title + " (faded: reserved, empty)")
        ax = self.axes[2]
        for policy, color in (("contiguous", "tab:red"), ("paged", "tab:blue")):
            snaps = self.runs[policy].snapshots
            share = [100 * s.wasted_bytes / s.reserved_bytes if s.reserved_bytes else 0 for s in snaps]
            ax.plot([s.step for s in snaps], share, color=color, label=policy)
        ax.axvline(self.step.value - 1, color="k", lw=1)  # snapshots count from 0
        ax.set(xlabel="decode step", ylabel="wasted %", ylim=(0, 100))
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
