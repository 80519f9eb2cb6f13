"""Sweeps over sequence length, in the FlashAttention-2 paper's benchmark convention: batch x seq = 16k
tokens and heads x head_dim = 2048."""
import math
from collections.abc import Iterable

import numpy as np

from .passes import ALGOS, named
from .result import Result
from .shape import counts, flag, positive_int
from .simulate import simulate

TOKENS = 16384  # batch x seq: the FlashAttention-2 paper's benchmarks (section 4.1) hold 16k tokens
MODEL_DIM = 2048  # heads x head_dim: the same benchmarks' hidden dimension
SEQS = tuple(2**p for p in range(9, 18))  # 512 .. 131,072


def fa2_shape(seq, head_dim):
    """(batch, heads) of the FlashAttention-2 benchmarks for one sequence length."""
    seq, head_dim = positive_int("seq", seq), positive_int("head_dim", head_dim)
    return max(1, TOKENS // seq), max(1, MODEL_DIM // head_dim)


def nominal_flops(batch, heads, seq, head_dim, causal=False, seq_kv=None):
    """The benchmark convention for attention's forward FLOPs: 4·B·H·N·N_kv·d (two matmuls of 2·N·N_kv·d),
    halved when causal, whatever an algorithm really computes. TFLOP/s = nominal_flops / time / 1e12."""
    shape = counts(batch=batch, heads=heads, seq=seq, seq_kv=seq if seq_kv is None else seq_kv, head_dim=head_dim)
    return 4 * math.prod(shape.values()) // (2 if flag("causal", causal) else 1)


def sweep(algos=("naive", "flash1", "flash2"), seqs=SEQS, *, head_dim=64, causal=False, dtype="fp16",
          gpu="A100-40GB", block_q=None, block_kv=None, progress=None):
    """simulate() for every algorithm and sequence length; `progress(done, total)` is called as it goes."""
    algos, seqs = _several("algos", algos, "algorithm names"), _several("seqs", seqs, "sequence lengths")
    for algo in algos:
        if named(algo) not in ALGOS:
            raise ValueError(f"algos holds {algo!r}: a sweep runs forward passes ({', '.join(ALGOS)}); decoding "
                             "takes a cache, simulate('split_kv', seq_kv=...)")
    results = []
    for n, (algo, seq) in enumerate([(a, s) for s in seqs for a in algos], start=1):
        batch, heads = fa2_shape(seq, head_dim)
        results.append(simulate(algo, seq=seq, head_dim=head_dim, batch=batch, heads=heads, causal=causal,
                                dtype=dtype, gpu=gpu, block_q=block_q, block_kv=block_kv))
        if progress:
            progress(n, len(algos) * len(seqs))
    return results


def _several(name, values, what):
    """algos or seqs as a tuple, or one line: a string or number given where several are expected."""
    scalar = isinstance(values, np.ndarray) and values.ndim == 0  # iterable to the ABC, not to iter()
    if isinstance(values, str) or not isinstance(values, Iterable) or scalar:
        one = values.tolist() if scalar else values
        raise ValueError(f"{name}={values!r} must be a list of {what}, e.g. [{one!r}]")
    return tuple(values)


def _results(results):
    """results as a list of forward Results (simulate's), or one line naming the first that is not one."""
    results = list(results)
    for r in results:
        if not isinstance(r, Result):
            raise ValueError(f"results holds {str(r)[:40]!r} ({type(r).__name__}): expected gpusim.simulate's Results")
    return results


def speedups(results, baseline="naive"):
    """{algo: {seq: baseline time / algo time}} for every algorithm but the baseline. A baseline that
    does not fit in HBM has no speedup at that length; results without a baseline run give {} (the plots draw
    no speedup curve then)."""
    results, baseline = _results(results), named(baseline)  # any case: the configs name algorithms in lower case
    base = {r.config.seq: r for r in results if r.config.algo == baseline}
    out = {}
    for r in results:
        b = base.get(r.config.seq)
        if r.config.algo != baseline and b is not None and b.fits_in_hbm:
            out.setdefault(r.config.algo, {})[r.config.seq] = b.predicted_time_s / r.predicted_time_s
    return out
