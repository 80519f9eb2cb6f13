"""The L2 between the SMs and HBM: which of the counted SM-side bytes reach DRAM.

The counts everywhere else are what the SMs request (the paper's "HBM accesses", measured on a GPU as
bytes from L2 into the SMs). This module splits them with four rules, simple enough for one cell:

1. A tensor's first touch in a kernel misses: its unique bytes come from DRAM. Nothing is assumed to
   stay in L2 between kernels (the N x N matrices of naive attention are far larger than any L2, and a
   kernel reading from row 0 evicts what the previous one left at the end).
2. Re-reads hit while the working set of the thread blocks in flight fits in the L2 they can fill
   (GPU.l2_reuse_bytes: half of an L2 of two partitions for data read from every SM, two thirds for data
   read from one SM at a time): the K and V of the heads whose Q blocks are running (flash2, hopper, pv), Q
   and K of the heads whose S tiles are running (qk), one head's Q, O, l and m per block (flash1): all read
   from every SM; one row of S per block (streamed softmax): read from one.
3. When it does not fit, blocks that run together still share: a wave of blocks working on one head
   (or one group of heads, as the Hopper kernel's causal launches order them) reads each K/V tile from
   DRAM once, so K/V come from DRAM once per wave. Causal, a wave whose blocks run longest first reads
   again as far as its longest block reaches ((W + 1) / 2 reads over W waves); blocks in order extend the
   keys the wave before left in L2 (once). Other re-reads all miss.
4. L2 is write-back: a kernel's writes reach DRAM once (rewrites of the same lines are absorbed while
   they fit), except those still dirty in L2 when the kernel ends. The L2 then holds the kernel's most
   recent DRAM traffic, L2_RECENT_FRACTION of its capacity, the written share of it still dirty, but at
   most L2_DIRTY_FRACTION of the capacity dirty.
"""
import math

from .hardware import STATS_BYTES
from .occupancy import occupancy, resources

# Rule 4's two fractions of the L2, measured (results/h200/l2_dirty.json, benchmarks/l2_dirty.py: a launch that
# streams once through R bytes and writes W as it goes, under Nsight Compute's DRAM counters; derived by
# benchmarks/h200_constants.py): W <= R / 16 leaves the writes of its last 0.97 of an L2 of traffic dirty, W >= 4 R
# leaves 0.47 of the L2 dirty, however much it writes. Before (run 87) one constant, 0.44, fitted to one qk
# launch (whose traffic is nearly all writes), stood for both: a launch writing little was priced to keep half
# of what it keeps (flash2's preprocess: 20% of D, where 34-49% stayed).
L2_RECENT_FRACTION = 0.9654
L2_DIRTY_FRACTION = 0.4676


def dram(cfg, counts):
    """{(kernel, tensor): (dram_read_bytes, dram_write_bytes)} for the SM-side `counts`."""
    out = {}
    for kernel in cfg.kernels:
        sm_reads = {t: r for (k, t), (r, _) in counts.items() if k == kernel}
        # a pass whose re-reads follow none of the rules below states its own (L2_REUSE "own": dram_reads)
        own = cfg.pass_.L2_REUSE[kernel][0] == "own"
        flight = in_flight(cfg, kernel)
        reads = (cfg.pass_.dram_reads if own else _reads)(cfg, kernel, sm_reads, flight)
        writes = _writes(cfg, kernel, {t: w for (k, t), (_, w) in counts.items() if k == kernel},
                         sum(reads.values()), flight)
        out.update({(kernel, t): (reads[t], writes[t]) for t in reads})
    return out


def in_flight(cfg, kernel):
    """Thread blocks running at once: as many as occupancy keeps resident on every SM (registers, shared
    memory, warps), at most the grid."""
    per_sm = max(1, occupancy(cfg.gpu, resources(cfg, kernel)).blocks_per_sm)
    return min(cfg.pass_.programs(cfg, kernel), cfg.gpu.sm_count * per_sm)


def _rmw_fits(cfg, flight):
    """Each flash1 block keeps re-reading and rewriting its head's Q, O, l and m."""
    per_head = cfg.seq * (cfg.head_dim * (cfg.itemsize + cfg.tensor_bytes("O")) + 2 * STATS_BYTES)
    return flight * per_head <= cfg.gpu.l2_reuse_bytes(every_sm=True)


def _reads(cfg, kernel, sm_reads, flight):
    t, l2, d, e = cfg.tiling, cfg.gpu.l2_reuse_bytes(every_sm=True), cfg.head_dim, cfg.itemsize
    kv_head = t.max_keys * d * e  # K (or V) of one head, as far as it is touched
    scores = cfg.bh * t.padded_elements(cfg.pass_.score_row(cfg)) * e  # S or P, rows score_row apart
    first = {"Q": cfg.bh * cfg.seq * d * e, "K": cfg.batch * cfg.kv_heads * kv_head,
             "V": cfg.batch * cfg.kv_heads * kv_head, "S": scores, "P": scores}  # anything else (flash1's O, l, m)
    # this kernel wrote first
    pattern, reread = cfg.pass_.L2_REUSE[kernel]
    if pattern == "kv_per_q_block":  # K/V re-read by each of a head's Tr Q blocks
        heads_per_group, longest_first = cfg.pass_.launch_order(cfg)
        group = heads_per_group * t.n_q_blocks  # the programs of one group of heads
        heads = min(cfg.bh, heads_per_group * math.ceil(flight / group))
        fits = math.ceil(heads * cfg.kv_heads / cfg.heads) * len(reread) * kv_head <= l2
        waves = math.ceil(group / flight)  # each reads its group's K/V from DRAM once (rule 3); causal:
        if cfg.causal:  # longest first, wave w of W reads w / W of the keys again; in order, each wave extends
            waves = (waves + 1) / 2 if longest_first else 1  # the keys the one before left in L2
        return {x: min(r, first.get(x, 0)) if x not in reread or fits else min(r, int(cfg.bh * kv_head * waves))
                for x, r in sm_reads.items()}
    if pattern == "rmw_per_head":
        fits = _rmw_fits(cfg, flight)
    elif pattern == "tiles":  # each S tile re-reads its rows of Q and K
        fits = min(cfg.bh, math.ceil(flight / t.tiles)) * (cfg.seq * d * e + kv_head) <= l2
    else:  # row_passes: a streamed row is read three times
        fits = flight * cfg.seq_kv * e <= cfg.gpu.l2_reuse_bytes(every_sm=False)
    return {x: min(r, first.get(x, 0)) if fits else r for x, r in sm_reads.items()}


def _writes(cfg, kernel, sm_writes, dram_reads, flight):
    unique = dict(sm_writes)
    if cfg.pass_.L2_REUSE[kernel][0] == "rmw_per_head" and _rmw_fits(cfg, flight):  # absorbed
        unique = {x: cfg.bh * cfg.seq * cfg.tensor_bytes(x) * (cfg.head_dim if x == "O" else 1) if w else 0
                  for x, w in sm_writes.items()}  # O, l, m once per query head; a tensor it never writes, none
    total = sum(unique.values())
    if not total:
        return unique
    dirty = still_dirty(cfg.gpu.l2_bytes, total, dram_reads)
    return {x: w - dirty * w // total for x, w in unique.items()}


def still_dirty(l2_bytes, written, dram_reads):
    """Rule 4: of `written` bytes, those still dirty in an L2 of l2_bytes when a kernel that read dram_reads bytes
    from DRAM ends."""
    recent = int(L2_RECENT_FRACTION * l2_bytes * written / (written + dram_reads))
    return min(written, recent, int(L2_DIRTY_FRACTION * l2_bytes))
