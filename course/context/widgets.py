"""Notebook 13's widget: one context-parallel forward as a timeline of its steps, per GPU, with sliders for
the GPU count, the sequence length, the link and the strategy (gpusim.simulate(..., gpus=P))."""
import ipywidgets as W

from gpusim import links

from ..widget import Live, dropdown, seq_slider
from . import model

GPUS = (2, 4, 8, 16)
SEQS = tuple(4096 << i for i in range(9))  # 4K .. 1M
STRATEGIES = ("ring", "zigzag", "ulysses", "allgather")


class TimelineExplorer(Live):
    """Compute and transfer bars of every step; the readout says whether the transfer hides."""

    def __init__(self, gpus=4, seq=65536, link="nvlink4-h200-measured", strategy="zigzag", causal=True):
        self.gpus = W.SelectionSlider(options=GPUS, value=gpus, description="GPUs (P)", continuous_update=False)
        self.seq = seq_slider(seq, SEQS)
        self.link = dropdown("link", list(links.LINKS), link)
        self.strategy = dropdown("strategy", list(STRATEGIES), strategy)
        self.causal = W.Checkbox(value=causal, description="causal")
        super().__init__([[self.gpus, self.seq], [self.link, self.strategy, self.causal]], figsize=(10, 4.2))

    def update(self):
        self.result, one = model.at_one_tile(self.gpus.value, self.seq.value, self.strategy.value, self.link.value,
                                             self.causal.value)
        r, margin = self.result, self.result.overlap_margin
        shard = self.seq.value // self.gpus.value
        crossover = model.crossover_tokens(self.link.value, heads=model.SHAPE["heads"],
                                             kv_heads=model.SHAPE["kv_heads"])
        hides = ("no K/V moves under compute in this strategy" if margin is None else
                 f"the transfer hides (compute / transfer ≥ {margin:.2f} in every step)" if margin >= 1 else
                 f"the transfer does <b>not</b> hide: a step's compute is {margin:.2f} of its transfer")
        self.readout.value = (
            f"<p>{model.speedup_sentence(r, one)}. Each GPU sends {r.link_send_bytes / 1e6:,.1f} MB; the GPUs idle "
            f"{model.idle_share(r):.0%} of the time.<br>Shard {shard:,} tokens; {hides}. Closed form at the "
            f"tensor cores' peak: a shard hides its transfer from about {crossover:,.0f} tokens.</p>")

    def draw(self):
        model.timeline_figure(self.result, ax=self.axes[0])
