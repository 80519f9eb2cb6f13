"""Counted memory for execute mode: tensors live in HBM, and every load into an SM's SRAM and every
store back is counted in bytes, by kernel and tensor. Only elements a mask lets through move, as with
Triton's masked tl.load / tl.store.
"""
import sys
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Step:
    """One step of the schedule, for stepping through in a notebook."""
    kernel: str
    program: tuple  # (batch, head, block) of the thread block doing the step
    tile: tuple  # (i, j): Q block i, K/V block j; for softmax (row, pass)
    loads: tuple  # ((tensor, bytes), ...) HBM -> SRAM
    stores: tuple  # ((tensor, bytes), ...) SRAM -> HBM
    sram_bytes: int  # what the thread block holds on chip during the step
    m_i: np.ndarray | None = None  # flash: running row max after the step, shape (Br,)
    l_i: np.ndarray | None = None  # flash: running row sum of exponentials after the step
    rescale: np.ndarray | None = None  # flash: exp(m_old - m_new), the factor old partial sums were scaled by


class Memory:
    def __init__(self, tensors, bytes_per_element, trace=False, progress=None):
        self.tensors = tensors  # name -> NumPy array, the contents of HBM
        self.bytes_per_element = bytes_per_element  # name -> bytes of one element as stored
        self.counts = {}  # (kernel, tensor) -> [read_bytes, write_bytes]
        self.steps = [] if trace else None
        self._loads, self._stores = [], []
        self.progress, self.walked = progress, 0  # the steps expected (None: say nothing), and walked so far

    def _count(self, kernel, tensor, direction, elements, pending):
        nbytes = int(elements) * self.bytes_per_element[tensor]
        self.counts.setdefault((kernel, tensor), [0, 0])[direction] += nbytes
        if self.steps is not None:
            pending.append((tensor, nbytes))

    def load(self, kernel, tensor, index, mask=None, other=0.0):
        """Copy a tile HBM -> SRAM. Elements outside `mask` are not read and come back as `other`."""
        tile = np.array(self.tensors[tensor][index])
        if mask is not None:
            tile = np.where(mask, tile, other)
        self._count(kernel, tensor, 0, tile.size if mask is None else np.count_nonzero(mask), self._loads)
        return tile

    def store(self, kernel, tensor, index, value, mask=None):
        """Copy a tile SRAM -> HBM. Elements outside `mask` are not written."""
        view = self.tensors[tensor][index]
        if mask is None:
            view[...] = value
        else:
            view[mask] = np.broadcast_to(value, view.shape)[mask]
        self._count(kernel, tensor, 1, view.size if mask is None else np.count_nonzero(mask), self._stores)

    def step(self, kernel, program, tile, sram_bytes, **stats):
        """Close a step of the trace: the loads and stores since the last step belong to it. With `progress`,
        a line on stderr every twentieth of the steps expected."""
        self.walked += 1
        if self.progress and self.walked % max(1, self.progress // 20) == 0:
            print(f"gpusim: {self.walked:,} of {self.progress:,} steps", file=sys.stderr, flush=True)
        if self.steps is None:
            return
        stats = {k: np.array(v) for k, v in stats.items()}
        self.steps.append(Step(kernel, program, tile, tuple(self._loads), tuple(self._stores), sram_bytes, **stats))
        self._loads, self._stores = [], []
