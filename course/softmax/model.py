"""What notebook 3 shows from gpusim alone, as data: the softmax variants' memory accesses."""
import numpy as np

import gpusim


def softmax_accesses(n=4096, seed=0):
    """Loads and stores per element of the three softmax variants, counted by gpusim.softmax."""
    x = np.random.default_rng(seed).standard_normal(n)
    rows = []
    for variant in ("naive", "safe", "online"):
        r = gpusim.softmax(x, variant, chunk=256)
        rows.append({"variant": variant, "loads": r.loads, "stores": r.stores,
                     "accesses per element": r.accesses_per_element})
    return rows
