"""The tile geometry of attention: which (Q block, K/V block) tiles exist and which a causal mask skips,
summed in closed form so that counting any N costs O(log N) time and O(1) memory.

Names follow the FlashAttention papers: Br == block_q rows of Q per tile, Bc == block_kv rows of K/V,
Tr = ceil(N / Br) query blocks, Tc = ceil(N_kv / Bc) key/value blocks.

Causal masking: query row r sees keys 0 .. r + offset. offset = 0 is PyTorch's `is_causal=True` (top-left
aligned, also when N != N_kv); offset = N_kv - N aligns the last query with the last key (bottom-right,
FlashAttention >= 2.1, decoding with several query rows). offset >= 0, so every row sees key 0. A tile
whose keys all lie right of its last row's diagonal is skipped: never loaded, never computed, never counted.
Visited tiles are computed whole, the masked part of a tile on the diagonal included (as the kernels do).
"""
import operator
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np


def floor_sum(n, m, a, b):
    """sum(floor((a*i + b) / m) for i in range(n)) for integers n, m > 0 and a, b >= 0, in O(log) steps
    (the Euclid-like reduction: peel off whole multiples of m, then swap the roles of a and m)."""
    total = 0
    while n > 0:
        total += (a // m) * n * (n - 1) // 2 + (b // m) * n
        a, b = a % m, b % m
        y_max = a * n + b
        if y_max < m:
            break
        n, b, m, a = y_max // m, y_max % m, a, m
    return total


@dataclass(frozen=True)
class Tiling:
    """The tiles of one launch shape. Its closed forms are cached properties: pricing one tile reads them dozens of times
    (counts, FLOPs, the L2's reuse, the issue and spill rules), and a Tiling never changes."""
    seq_q: int  # N
    seq_kv: int  # N_kv
    block_q: int  # Br
    block_kv: int  # Bc
    causal: bool
    offset: int = 0  # causal: row r sees keys 0 .. r + offset

    @cached_property
    def n_q_blocks(self):  # Tr
        return -(-self.seq_q // self.block_q)

    @cached_property
    def n_kv_blocks(self):  # Tc
        return -(-self.seq_kv // self.block_kv)

    def q_rows(self, i):
        return i * self.block_q, min((i + 1) * self.block_q, self.seq_q)

    def kv_rows(self, j):
        return j * self.block_kv, min((j + 1) * self.block_kv, self.seq_kv)

    def kv_blocks_of(self, i):
        """J_i: Q block i visits K/V blocks 0 .. J_i - 1; causal, up to the block holding its last row's
        last visible key."""
        if not self.causal:
            return self.n_kv_blocks
        last_row = self.q_rows(i)[1] - 1
        return min(-(-(last_row + self.offset + 1) // self.block_kv), self.n_kv_blocks)

    def kv_blocks_at(self, i):
        """J_i for an array of Q block indices (int64): kv_blocks_of's ceil((last row + offset + 1) / Bc), the ceiling
        as (x + Bc - 1) // Bc on one array changed in place (the time model asks for thousands of J at every tile)."""
        i = np.asarray(i, dtype=np.int64)
        if not self.causal:
            return np.full(i.shape, self.n_kv_blocks, dtype=np.int64)
        keys = (i + 1) * self.block_q
        np.minimum(keys, self.seq_q, out=keys)  # the last row's index + 1
        keys += self.offset + self.block_kv - 1
        keys //= self.block_kv
        return np.minimum(keys, self.n_kv_blocks, out=keys)

    def keys_of(self, i):
        """k_i: the K/V rows Q block i loads (its visited blocks, clipped at N_kv)."""
        return min(self.kv_blocks_of(i) * self.block_kv, self.seq_kv)

    def kv_blocks(self, i):
        return range(self.kv_blocks_of(i))

    def q_blocks(self, j):
        """The Q blocks that visit K/V block j (FlashAttention-1's inner loop): i >= first_q_block(j)."""
        return range(self.first_q_block(j), self.n_q_blocks)

    def first_q_block(self, j):
        """The first Q block whose last row sees a key of block j (J_i is non-decreasing in i)."""
        if not self.causal:
            return 0
        row = max(0, j * self.block_kv - self.offset)  # the first row that sees key j * Bc
        return row // self.block_q if row < self.seq_q else self.n_q_blocks

    @cached_property
    def _full(self):
        """The Q blocks before the last one (all Br rows) split at s: blocks i < s visit J_i = f(i) < Tc
        blocks, blocks s <= i < Tr - 1 visit all Tc. f(i) = ceil(((i + 1) Br + offset) / Bc)
        = floor((Br i + Br + offset + Bc - 1) / Bc). Returns (s, sum of f(i) over i < s)."""
        full, br, bc, tc = self.n_q_blocks - 1, self.block_q, self.block_kv, self.n_kv_blocks
        if not self.causal:
            return 0, 0
        c = br + self.offset + bc - 1
        s = min(full, max(0, -(-(tc * bc - c) // br)))  # first i with f(i) >= Tc
        return s, floor_sum(s, bc, br, c)

    def _sum(self, per_block, last):
        """sum over Q blocks of per_block(J_i, k_i, n_i), given the ramp's closed form; `per_block` is linear
        in its arguments, so the ramp is summed through it once."""
        s, ramp_j = self._full
        full, tc, nk = self.n_q_blocks - 1, self.n_kv_blocks, self.seq_kv
        ramp = per_block(ramp_j, ramp_j * self.block_kv, s * self.block_q, s)
        flat = per_block((full - s) * tc, (full - s) * nk, (full - s) * self.block_q, full - s)
        return ramp + flat + last

    @cached_property
    def tiles(self):
        """(i, j) tiles computed: sum_i J_i."""
        return self._sum(lambda j, k, n, count: j, self.kv_blocks_of(self.n_q_blocks - 1))

    @cached_property
    def row_visits(self):
        """Query rows times the K/V blocks they meet: sum_i n_i J_i."""
        last = self.n_q_blocks - 1
        n_last = self.seq_q - last * self.block_q
        return self._sum(lambda j, k, n, count: self.block_q * j, n_last * self.kv_blocks_of(last))

    @cached_property
    def keys_read(self):
        """K (or V) rows loaded, once per Q block: sum_i k_i."""
        return self._sum(lambda j, k, n, count: k, self.keys_of(self.n_q_blocks - 1))

    @cached_property
    def tile_elements(self):
        """S elements computed, whole tiles (masked elements of a diagonal tile included): sum_i n_i k_i."""
        last = self.n_q_blocks - 1
        n_last = self.seq_q - last * self.block_q
        return self._sum(lambda j, k, n, count: self.block_q * k, n_last * self.keys_of(last))

    @cached_property
    def whole_elements(self):
        """S elements of the visited tiles counted whole, Br x Bc each (the rows and keys past N and N_kv included):
        what a tile's dot multiplies."""
        return self.tiles * self.block_q * self.block_kv

    def padded_elements(self, row):
        """tile_elements of a score matrix whose rows are `row` >= N_kv elements apart, written up to there: the
        rows whose Q blocks visit the last K/V block also write its row - N_kv padding (Bc a multiple of the
        padding's unit, so the blocks are the same)."""
        first = self.first_q_block(self.n_kv_blocks - 1) if self.n_kv_blocks else self.n_q_blocks
        return self.tile_elements + (row - self.seq_kv) * max(0, self.seq_q - first * self.block_q)

    def score_cols(self, j, row):
        """The columns of K/V block j in a score matrix whose rows are `row` apart: its keys, the last block's
        reaching the padding."""
        start, stop = self.kv_rows(j)
        return slice(start, row if stop == self.seq_kv else stop)

    def unmasked_blocks_of(self, i):
        """The first K/V blocks of Q block i that need no mask: whole blocks of keys that every row of the
        block sees (a kernel masks only the rest: the diagonal, and a ragged last block). Its first row sees keys
        up to i * Br + offset, so block j is whole to it when (j + 1) * Bc <= i * Br + offset + 1."""
        whole = self.seq_kv // self.block_kv
        if not self.causal:
            return whole
        return min(whole, (i * self.block_q + self.offset + 1) // self.block_kv)

    @cached_property
    def _unmasked_before_last(self):
        """sum_i (unmasked blocks of Q block i) over every Q block but the last (whose rows may be fewer)."""
        last, br, bc, whole = self.n_q_blocks - 1, self.block_q, self.block_kv, self.seq_kv // self.block_kv
        if not self.causal:
            return last * whole
        seen = self.offset + 1  # keys the first row of Q block 0 sees
        s = min(last, max(0, -(-(whole * bc - seen) // br)))  # first i whose unmasked blocks reach `whole`
        return floor_sum(s, bc, br, seen) + (last - s) * whole

    @cached_property
    def unmasked_elements(self):
        """S elements in the tiles that need no mask: sum_i n_i * Bc * (unmasked blocks of Q block i)."""
        last = self.n_q_blocks - 1
        n_last = self.seq_q - last * self.block_q
        return self.block_kv * (self.block_q * self._unmasked_before_last + n_last * self.unmasked_blocks_of(last))

    @cached_property
    def unmasked_tiles(self):
        """Tiles that need no mask: sum_i (unmasked blocks of Q block i)."""
        return self._unmasked_before_last + self.unmasked_blocks_of(self.n_q_blocks - 1)

    @cached_property
    def max_keys(self):
        """The most K/V rows one Q block loads (the last block's)."""
        return self.keys_of(self.n_q_blocks - 1)

    @property
    def kept_elements(self):
        """S elements the causal mask keeps: sum over rows r of min(r + 1 + offset, N_kv)."""
        n, nk, o = self.seq_q, self.seq_kv, self.offset
        if not self.causal:
            return n * nk
        ramp = max(0, min(n, nk - o))  # rows 0 .. ramp-1 see r + 1 + offset keys, the rest see all N_kv
        return ramp * (ramp + 1) // 2 + ramp * o + (n - ramp) * nk

    def keep(self, rows, cols):
        """Mask of S[rows, cols] that survives causal masking, or None when nothing is masked."""
        if not self.causal or cols.stop - 1 <= rows.start + self.offset:
            return None
        return np.arange(cols.start, cols.stop)[None, :] <= np.arange(rows.start, rows.stop)[:, None] + self.offset



MAX_BINS = 4096  # a ramp of more Q blocks is summed over this many equal bins of its J values
TAIL = 1 << 13  # programs at the end of the launch order kept one by one (more than any GPU holds at once)
WORKS_KEPT = 1 << 10  # Works kept per maker: a long one holds up to (2 * MAX_BINS + TAIL) * 8 B = 128 KiB, so 128 MiB


INT64_MAX = (1 << 63) - 1


def ints(x):
    """x as a 1-D integer array, read-only (a Work is kept per launch shape): NumPy's int64 where every value fits,
    Python ints (an object array) beyond. NumPy takes ints in [2^63, 2^64) as uint64, which int64 would wrap."""
    a = np.asarray(x)
    if a.dtype.kind == "u" and a.size and int(a.max()) > INT64_MAX:
        a = a.astype(object)
    a = a if a.dtype.kind in "iO" else a.astype(np.int64)
    a.flags.writeable = False
    return a


def scaled(counts, k):
    """counts * k, exact: NumPy's int64 where no product can pass 2^63 - 1, Python ints beyond."""
    counts = ints(counts)
    if counts.dtype != object and int(counts.max(initial=0)) <= INT64_MAX // max(k, 1):
        return counts * k
    return np.array([c * k for c in counts.tolist()], dtype=object)


def exact_sum(a, b=None):
    """sum(a), or sum(a * b), over arrays of non-negative integers, as a Python int: NumPy's int64 where no partial
    sum can pass 2^63 - 1, Python's ints beyond."""
    bound = int(a.max(initial=0)) * (1 if b is None else int(b.max(initial=0))) * len(a)
    if bound <= INT64_MAX and a.dtype != object and (b is None or b.dtype != object):
        return int(a.sum() if b is None else np.dot(a, b))
    return sum(a.tolist() if b is None else map(operator.mul, a.tolist(), b.tolist()))


@dataclass(frozen=True, eq=False)
class Work:
    """The steps J each program of a launch does (one K/V tile per step for the flash kernels): values and
    how many programs have each (binned for very long ramps), and the last TAIL programs' J in launch order,
    the last first (the last wave of the schedule). longest_first: the launch orders its programs longest first
    (the Hopper kernel's pass_.launch_order; the backward's K/V-major launches, causal: backward_base.column_work),
    so its last programs are its shortest. Integer arrays (ints): the time model prices every program at once."""
    values: np.ndarray  # (bins,) J
    counts: np.ndarray  # (bins,) programs with that J
    tail: np.ndarray  # (min(programs, TAIL),) J, the last program launched first
    longest_first: bool = False

    def __post_init__(self):
        object.__setattr__(self, "values", ints(self.values))  # frozen: set once, as given or converted
        object.__setattr__(self, "counts", ints(self.counts))
        object.__setattr__(self, "tail", ints(self.tail))

    @cached_property
    def programs(self):
        """The launch's programs, a Python int (exact at any count)."""
        return exact_sum(self.counts)

    @cached_property
    def steps(self):
        """The steps of all its programs together, a Python int (exact at any count)."""
        return exact_sum(self.values, self.counts)


@lru_cache(maxsize=WORKS_KEPT)
def uniform_work(programs, steps):
    """`programs` programs of `steps` steps each (kept per launch shape, as ramp_work)."""
    tail = np.full(min(programs, TAIL), steps, dtype=np.int64 if steps <= INT64_MAX else object)
    return Work((steps,), (programs,), tail)


@lru_cache(maxsize=WORKS_KEPT)
def ramp_work(tiling, groups, order=(1, False)):
    """Q block i of each of `groups` (batch, head) problems does J_i steps. order: the pass's launch_order, (heads,
    longest_first): (1, False), blocks launch in order i = 0, 1, ... within a problem, problems one after another;
    longest_first, each group of `heads` problems launches its last Q blocks first, one of each problem, then the
    block before them (kernels/hopper.py's _program). Kept per launch shape: the time model asks for it at every
    pricing of a launch (benchmarks/perf_report.py prices each under many models), WORKS_KEPT of them at most."""
    tr = tiling.n_q_blocks
    if not tiling.causal:
        return uniform_work(groups * tr, tiling.n_kv_blocks)
    if tr <= MAX_BINS:
        values, counts = runs(tiling.kv_blocks_at(np.arange(tr)))
        counts = scaled(counts, groups)
    else:  # equal bins of Q blocks, each at its middle block's J: J_i is within one of linear in i
        middles, counts = bins(tr, groups)
        values = tiling.kv_blocks_at(middles)
    return Work(values, counts, launch_tail(tiling, groups, *order), order[1])


def runs(values):
    """np.unique(values, return_counts=True) of a non-decreasing array (J_i never decreases in i), without its sort:
    the first value of each run, and the run's length."""
    starts = np.flatnonzero(values[1:] != values[:-1]) + 1
    bounds = np.concatenate(([0], starts, [len(values)]))
    return values[bounds[:-1]], np.diff(bounds)


@lru_cache(maxsize=64)
def bins(tr, groups):
    """ramp_work's MAX_BINS equal bins of tr Q blocks: each bin's middle block, and the programs in it over `groups`
    problems. They depend on tr and groups alone, which the tiles of one block_q share (a tile search weighs five
    block_kv at each): one copy of each, read-only, kept, where every Work kept (ramp_work) would hold its own."""
    edges = np.linspace(0, tr, MAX_BINS + 1).astype(np.int64)
    middles, counts = (edges[:-1] + edges[1:]) // 2, scaled(np.diff(edges), groups)
    middles.flags.writeable = counts.flags.writeable = False
    return middles, counts


def launch_tail(tiling, groups, heads, longest_first):
    """The J of a ramp's last min(programs, TAIL) programs in launch order, the last first (ramp_work's order)."""
    tr, n = tiling.n_q_blocks, min(groups * tiling.n_q_blocks, TAIL)
    if not longest_first:  # one problem's Q blocks backwards from its end, repeated where the tail holds more
        head = tiling.kv_blocks_at(np.arange(tr - 1, tr - 1 - min(tr, TAIL), -1))
        return head if len(head) == n else np.resize(head, n)
    ramp = tiling.kv_blocks_at(np.arange(min(tr, TAIL)))  # a group's last programs: its first Q blocks, one of each
    last = groups % heads or heads  # the last group may be short
    tail = np.repeat(ramp, last)[:n]
    if len(tail) < n:  # the groups of `heads` before it, each the same backwards order
        tail = np.concatenate([tail, np.resize(np.repeat(ramp, heads), n - len(tail))])
    return tail
