"""What notebook 2 shows from gpusim alone, as data: the bytes of S and P, standard attention's time terms as a
table, and how much of its time is moving bytes."""
import gpusim
from gpusim.units import fmt_time

from ..tables import time_terms


def time_rows(result):
    """time_terms formatted for a table."""
    return [{"kernel": r["label"], "memory": fmt_time(r["t_memory"]), "matmul": fmt_time(r["t_matmul"]),
             "non-matmul": fmt_time(r["t_other"]), "SMs busy": f"{r['busy']:.0%}",
             "predicted": fmt_time(r["predicted"]), "bound by": r["bound"]} for r in time_terms(result)]


def sp_written_line(seq=4096, head_dim=128, dtype="fp16"):
    """The bytes standard attention writes to HBM for S, and for S and P, one head of `seq` tokens (gpusim's count)."""
    written = gpusim.simulate("naive", seq=seq, head_dim=head_dim, dtype=dtype).by_tensor
    s, p = written["S"]["write_bytes"], written["P"]["write_bytes"]
    return f"S written: {s:,} B; S and P written: {s + p:,} B"


def waiting_sentence(naive, flash, waiting_share, gpu):
    """How much of naive attention's predicted time is moving bytes (the scorecard's waiting_share, passed in),
    and how many times faster FlashAttention-2 is predicted, for two Results of the same shape."""
    c = naive.config
    return (f"gpusim on the {gpu}, N = {c.seq:,}, d = {c.head_dim}: moving the bytes takes {waiting_share:.0%} of "
            f"naive attention's predicted time; FlashAttention-2 is predicted "
            f"{naive.predicted_time_s / flash.predicted_time_s:.1f}x faster.")
