"""What notebook 2 shows from gpusim alone, as data: standard attention's time terms as a table."""
from gpusim.units import fmt_time

from ..tables import time_terms


def time_rows(result):
    """time_terms formatted for a table."""
    return [{"kernel": r["label"], "memory": fmt_time(r["t_memory"]), "matmul": fmt_time(r["t_matmul"]),
             "non-matmul": fmt_time(r["t_other"]), "SMs busy": f"{r['busy']:.0%}",
             "predicted": fmt_time(r["predicted"]), "bound by": r["bound"]} for r in time_terms(result)]
