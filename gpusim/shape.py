"""The plain data of one launch as the model sees it, at the bottom of gpusim's layers: a forward pass
(Config), a training step's backward (Backward) and a decoding step (DecodeLaunch). Each holds its pass
(gpusim/passes/), resolved once when the configuration is made (gpusim/config.py, backward.py, decode.py),
and asks it for what depends on the algorithm; nothing here imports a pass. The validators every maker
shares are here too: every error is one line naming the value and the limit."""
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .hardware import DTYPE_BYTES, GPU, STATS_BYTES, WARP, check_dtype
from .tiling import Tiling

MAX_SEQ = 1 << 40  # the longest sequence (and the most of any count: batch, heads) counted: closed forms are exact
#                     integers at any size, but a limit says so
MAX_WARPS = 32  # a thread block's 1,024 threads at most (CUDA C++ Programming Guide, Technical Specifications)
MIN_BLOCK = 16  # the smallest tile a tensor-core matmul takes (mma.sync m16n8k16; Triton's tl.dot needs 16)
MIN_ROWS = MIN_BLOCK  # a decode program's query rows are padded up to tl.dot's smallest tile
INDEX_BYTES = 4  # int32: block-table entries and cache lengths (kernels/decode.py)
REDUCE_SPLITS = 64  # splits the decode reduce merges per step (kernels/decode.py): one compiled kernel for any count
ALIGNS = ("top_left", "bottom_right")


def positive_int(name, value, limit=None, what="integer", zero=False):
    """value as an int, or one line naming it: not a positive integer (a positive `what`; zero=True: 0 too), or
    more than `limit`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0 or value == 0 and not zero:
        raise ValueError(f"{name}={value!r} must be a {'non-negative' if zero else 'positive'} {what}")
    if limit is not None and value > limit:
        given = f"{value:,}" if value < limit << 40 else f"an integer of {int(value).bit_length():,} bits"
        raise ValueError(f"{name}={given} is more than the {limit:,} ({limit.bit_length() - 1} bits) gpusim counts")
    return int(value)


def counts(**given):
    """{name: value as an int} for sizes that count something (batch, heads, seq, head_dim, ...), or one line for
    the first that is not a positive integer or is more than MAX_SEQ."""
    return {name: positive_int(name, value, MAX_SEQ) for name, value in given.items()}


def check_groups(heads, kv_heads):
    """One line where the query heads do not split into whole groups over the K/V heads."""
    if heads % kv_heads:
        raise ValueError(f"heads={heads} is not a multiple of kv_heads={kv_heads}")


def check_align(causal_align):
    """One line where causal_align is not one of ALIGNS (the forward's, the training step's and the decode's)."""
    if causal_align not in ALIGNS:
        raise ValueError(f"causal_align={causal_align!r} is not one of {', '.join(ALIGNS)}")


def check_causal(causal, causal_align, seq, seq_kv):
    """causal as a bool, or one line: not a bool, an unknown causal_align, or bottom_right with rows that see
    no key."""
    causal = flag("causal", causal)
    check_align(causal_align)
    if causal and causal_align == "bottom_right" and seq > seq_kv:
        raise ValueError(f"causal_align='bottom_right' with seq={seq} > seq_kv={seq_kv} leaves the first "
                         f"{seq - seq_kv} query rows without keys")
    return bool(causal)


def positive_number(name, value, zero=False):
    """value as a float, or one line naming it: not a finite positive number (a rate, a size, a time; zero=True:
    0 too)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or \
            not 0 <= value < float("inf") or value == 0 and not zero:
        raise ValueError(f"{name}={value!r} must be a {'non-negative' if zero else 'positive'} number")
    return float(value)


def flag(name, value):
    """value as a bool, or one line naming it: not True or False (a string "no" is not False)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={value!r} must be True or False")
    return bool(value)


def shown(name, value):
    """How a line names a value: name=value, or an array as `name (an array)` rather than its many lines."""
    return f"{name} (an array)" if isinstance(value, np.ndarray) else f"{name}={value!r}"


def pair(name, blocks):
    """blocks as a (block_q, block_kv) tuple, or one line naming it: not a pair, or an element (None: the rule's)
    not a positive integer."""
    if not (isinstance(blocks, (tuple, list)) and len(blocks) == 2):
        raise ValueError(f"{name}={blocks!r} must be a pair (block_q, block_kv)")
    return tuple(None if b is None else positive_int(f"{name}[{i}]", b) for i, b in enumerate(blocks))


def power_of_two(name, value, least):
    """A positive integer that is a power of two, at least `least`."""
    value = positive_int(name, value)
    if value < least or value & (value - 1):
        raise ValueError(f"{name}={value} must be a power of two >= {least}")
    return value


MASKS = ("every", "branch", "split")  # how kernels/hopper.py masks a causal row's blocks (docs/hopper.md)


@dataclass(frozen=True)
class Tiles:
    """A launch's knobs, validated when made: the tiles (Br == block_q rows of Q, Bc == block_kv rows of K and
    V), and where set Triton's num_warps and num_stages, and the Hopper kernel's own (kernels/hopper.py:
    warp_specialize, mask, overlap, lpt_heads); None: the pass's rule. Config.tiles gives the launch the model
    prices; the kernels take one as tiles= and launch what Config.tiles says.

        >>> gpusim.Tiles(64, 128, num_warps=4).blocks
        (64, 128)
    """
    block_q: int
    block_kv: int
    num_warps: int | None = None
    num_stages: int | None = None
    warp_specialize: bool | None = None
    mask: str | None = None
    overlap: bool | None = None
    lpt_heads: int | None = None

    def __post_init__(self):
        # any positive tile, as a Python int (the model runs the paper's algorithm at any; kernels take powers of 2)
        object.__setattr__(self, "block_q", positive_int("block_q", self.block_q))
        object.__setattr__(self, "block_kv", positive_int("block_kv", self.block_kv))
        if self.num_warps is not None and power_of_two("num_warps", self.num_warps, 1) > MAX_WARPS:
            raise ValueError(f"num_warps={self.num_warps} is more than the {MAX_WARPS} warps ({MAX_WARPS * WARP:,} "
                             "threads) a thread block may have")
        if self.num_stages is not None:
            positive_int("num_stages", self.num_stages)
        for name, value in self.knobs.items():
            if name in ("warp_specialize", "overlap"):
                flag(name, value)
        if self.mask is not None and self.mask not in MASKS:
            raise ValueError(f"mask={self.mask!r} is not one of {', '.join(MASKS)}")
        if self.lpt_heads is not None and self.lpt_heads != 0:
            positive_int("lpt_heads", self.lpt_heads, what="integer (or 0: programs in launch order)")

    @property
    def blocks(self):
        """(block_q, block_kv), as best_blocks and paper_blocks give them."""
        return self.block_q, self.block_kv

    @property
    def knobs(self):
        """{name: value} of the launch options set (not None), the tiles aside."""
        knobs = dict(num_warps=self.num_warps, num_stages=self.num_stages, warp_specialize=self.warp_specialize,
                     mask=self.mask, overlap=self.overlap, lpt_heads=self.lpt_heads)
        return {name: value for name, value in knobs.items() if value is not None}


def given_tiles(tiles, block_q, block_kv):
    """(block_q, block_kv, tiles) from a caller's tiles=Tiles(...) or block_q=, block_kv= (one line if both, or
    if tiles is not a Tiles)."""
    if tiles is None:
        return block_q, block_kv, None
    if not isinstance(tiles, Tiles):
        raise ValueError(f"tiles={tiles!r} must be a gpusim.Tiles")
    if block_q is not None or block_kv is not None:
        raise ValueError(f"tiles=Tiles({tiles.block_q}, {tiles.block_kv}, ...) and block_q={block_q}, "
                         f"block_kv={block_kv} were both given: give one of them")
    return tiles.block_q, tiles.block_kv, tiles


def knobs_of(pass_, tiles):
    """tiles where it sets knobs the pass's kernel takes, None where it sets none; one line naming a knob the
    kernel does not take."""
    if tiles is None or not tiles.knobs:
        return None
    for name, value in tiles.knobs.items():
        if name not in pass_.KNOBS:
            raise ValueError(f"{name}={value!r}: the {pass_.name} kernel takes {', '.join(pass_.KNOBS)}, not {name}")
    return tiles


@dataclass(frozen=True)
class Shape:
    """What every counted attention call is: the forward's Config, the backward's Backward."""
    algo: str  # the algorithm simulate() was asked for: naive, flash1, flash2, hopper
    batch: int
    heads: int
    kv_heads: int
    seq: int  # query length N
    seq_kv: int
    head_dim: int  # d
    block_q: int  # Br
    block_kv: int  # Bc
    causal: bool
    dtype: str
    gpu: GPU

    @cached_property
    def itemsize(self):
        """The dtype's bytes, checked once per configuration: the pricing of one tile reads it some thirty times."""
        return check_dtype(self.dtype)

    @property
    def bh(self):  # independent (batch, head) problems
        return self.batch * self.heads

    @property
    def group(self):  # query heads per K/V head (grouped-query attention)
        return self.heads // self.kv_heads

    def kv_head(self, h):
        """Grouped-query attention: q heads h share K/V head h // (heads / kv_heads)."""
        return h // self.group

    @property
    def kernels(self):
        return self.pass_.kernels_of(self)

    def sram_bytes(self, kernel, rows=None, keys=None):
        """Shared memory one thread block of `kernel` stages for a tile of `rows` queries and `keys` keys."""
        return self.pass_.sram_bytes(self, kernel, self.block_q if rows is None else rows,
                                     self.block_kv if keys is None else keys)

    @property
    def sram_bytes_per_block(self):
        return max(self.sram_bytes(k) for k in self.kernels)

    def tensor_bytes(self, tensor):
        """Bytes per element of each tensor as stored in HBM: statistics (l, m, LSE, D) in fp32; fp8 kernels
        write O in fp16, as FlashAttention-3 does; a pass may keep a tensor in fp32 (its TENSOR_BYTES)."""
        if tensor in ("l", "m", "LSE", "D"):
            return STATS_BYTES
        own = self.pass_.TENSOR_BYTES.get(tensor)
        if own is not None:
            return own
        if tensor == "O" and self.dtype == "fp8":
            return check_dtype("fp16")
        return self.itemsize


@dataclass(frozen=True)
class Config(Shape):
    """One forward launch (gpusim/config.py make_config)."""
    causal_align: str = "top_left"  # top_left: row r sees keys 0..r; bottom_right: 0..r + seq_kv - seq
    pass_: object = field(default=None, compare=False, repr=False)  # gpusim.passes.Pass
    user_tiles: Tiles | None = None  # a caller's Tiles, where it sets knobs (num_warps, ...): the pass's rule else

    @cached_property
    def tiling(self):
        offset = self.seq_kv - self.seq if self.causal_align == "bottom_right" else 0
        return Tiling(self.seq, self.seq_kv, self.block_q, self.block_kv, self.causal, offset)

    @property
    def softmax_fits(self):
        """Naive attention's softmax reads a whole row of S once, or streams it in passes."""
        return self.pass_.softmax_fits(self)

    @property
    def tiles(self):
        """The launch the model prices for this configuration (Tiles), as its pass says."""
        return self.pass_.tiles(self)


@dataclass(frozen=True)
class Backward(Shape):
    """The backward of one forward (gpusim/backward.py config): algo names the forward's algorithm, pass_
    its backward pass (gpusim/passes/<algo>_backward.py). Causal masks are top-left (torch's is_causal)."""
    pass_: object = field(default=None, compare=False, repr=False)
    user_tiles: Tiles | None = None  # a caller's Tiles, where it sets knobs (num_warps, ...): the pass's rule else

    @cached_property
    def tiling(self):
        """Q blocks of Br rows, K/V blocks of Bc rows: every kernel's tiles but flash2's dK/dV kernel's."""
        return Tiling(self.seq, self.seq_kv, self.block_q, self.block_kv, self.causal)

    @cached_property
    def kv_tiling(self):
        """The tiles of the kernels that hold a K/V block while Q blocks stream past (the pass says)."""
        return self.pass_.kv_tiling(self)

    @property
    def ds_fits(self):
        """naive's ds kernel holds a row of P and of dP in SRAM, or streams them in Bc chunks, twice."""
        return 2 * self.pass_.score_row(self) * self.itemsize <= self.gpu.sram_bytes_per_block

    @property
    def causal_align(self):
        return "top_left"


@dataclass(frozen=True)
class DecodeLaunch:
    """One decoding step (gpusim/decode.py make_launch): seq query rows per request over a KV cache."""
    batch: int
    heads: int
    kv_heads: int
    head_dim: int
    seq: int  # query rows per head (1 for plain decoding, more for speculative decoding)
    seq_kv: tuple  # cache_seqlens: one cache length per request
    num_splits: int
    block_kv: int  # Bc: the K/V chunk a program steps by
    page_size: int | None  # P tokens per page; None: a contiguous cache (B, kv_heads, S, d)
    grouped: bool
    causal_align: str
    dtype: str
    gpu: GPU
    pass_: object = field(default=None, compare=False, repr=False)  # gpusim.passes.split_kv.SPLIT_KV

    algo = "split_kv"
    user_tiles = None  # its launch is the pass's rule (kernels/decode.py's run takes overrides for a sweep)
    causal = True  # the cache's keys come before the query rows (aligned by causal_align)

    @property
    def block_q(self):  # Br == the rows of a program's tl.dot tile, as the time model reads a tile
        return self.padded_rows

    def sram_bytes(self, kernel):
        return self.pass_.sram_bytes(self, kernel, self.padded_rows, self.block_kv)

    @property
    def group(self):  # query heads per K/V head
        return self.heads // self.kv_heads

    @property
    def units(self):  # programs per request per split
        return self.kv_heads if self.grouped else self.heads

    @property
    def rows(self):  # query rows one program serves
        return (self.group if self.grouped else 1) * self.seq

    @property
    def padded_rows(self):  # the rows of its tl.dot tile
        return max(MIN_ROWS, 1 << (self.rows - 1).bit_length())

    @property
    def itemsize(self):
        return DTYPE_BYTES[self.dtype]

    @property
    def out_itemsize(self):  # an fp8 cache gives an fp16 output, as FlashAttention-3 does
        return DTYPE_BYTES["fp16"] if self.dtype == "fp8" else self.itemsize

    @property
    def kernels(self):
        return self.pass_.kernels_of(self)

    @property
    def keys(self):  # K_b: the keys visited per request, shape (B,)
        lengths = np.array(self.seq_kv, dtype=np.int64)
        return lengths if self.causal_align == "bottom_right" else np.minimum(lengths, self.seq)

    @property
    def chunks(self):  # n_b = ceil(K_b / Bc)
        return -(-self.keys // self.block_kv)

    @property
    def chunks_per_split(self):  # c_b = ceil(n_b / num_splits)
        return -(-self.chunks // self.num_splits)

    @property
    def active_splits(self):  # a_b: splits that hold at least one chunk
        return -(-self.chunks // self.chunks_per_split)

    def split_chunks(self, b, s):
        """The chunks [first, end) split s of request b visits (empty past its last active split)."""
        n, c = int(self.chunks[b]), int(self.chunks_per_split[b])
        return min(s * c, n), min((s + 1) * c, n)

    def kv_head(self, unit):
        return unit if self.grouped else unit // self.group

    def query_heads(self, unit):
        return range(unit * self.group, (unit + 1) * self.group) if self.grouped else range(unit, unit + 1)


def causal_align_of(causal, causal_align):
    """causal_align, or one line where there is no causal mask to align (top_left passes: any config's dict has it)."""
    if not flag("causal", causal) and causal_align not in (None, "top_left"):
        only_with("causal=False", "causal=True (the corner the causal mask starts from)", causal_align=causal_align)
    return causal_align


def only_with(what, where, **given):
    """One line for the first option given that `what` does not take."""
    for name, value in given.items():
        if value is not None:
            raise ValueError(f"{shown(name, value)} does not apply to {what}: it is for {where}")
