"""Kernels the learner writes (notebook 10), in the style of Triton-Puzzles: a Triton kernel with blanks
(`...`), filled in by the learner and checked twice, in Triton's interpreter on the CPU (TRITON_INTERPRET=1,
set before Triton is imported) or compiled on a GPU:

1. correctness: O and the log-sum-exp against float64 attention (gpusim_kernels.reference_attention) of the
   same fp16 inputs; a wrong answer names the first wrong tile (Q block or program, and the first K/V block
   from which it goes wrong: the kernel is rerun on the first 1, 2, ... K/V blocks of keys);
2. bytes: every tl.load and tl.store, counted by gpusim_kernels.trace_io, against gpusim's count for the same
   schedule (gpusim.simulate, gpusim.decode); a wrong count names the first program whose traffic differs
   (rerun on growing prefixes of the grid) and how many K/V tiles it loaded against gpusim's schedule.

    >>> from gpusim_course import puzzles
    >>> puzzles.check("online_softmax", my_kernel)  # a Verdict: right, wrong (and where), or not yet
    >>> puzzles.solution("online_softmax")  # prints the hidden reference solution
"""
import ast
import inspect
import textwrap
from dataclasses import dataclass

import numpy as np
import torch

import gpusim
from gpusim import decode
from gpusim_kernels import reference_attention, trace_io
from gpusim_kernels.interpreter import INTERPRETED

from . import puzzle_solutions
from .checks import Stop, Verdict

U_FP16 = 2.0**-11  # unit roundoff of fp16
# O: P is rounded to fp16 before P @ V and O once more on the way out, each at most u * max|v| per element
# (O is an average of rows of V); the fp32 sums add far less. Twice that worst case:
O_TOL = 4 * U_FP16  # times max |v|
LSE_TOL = 1e-4  # fp32 statistics: a blocked fp32 sum of at most a hundred terms, as tests/test_kernels.py
SEED = 14


def _fp16(shape, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * scale).to(torch.float16)


@dataclass(frozen=True)
class Flash2Puzzle:
    """A FlashAttention-2 forward kernel(Q, K, V, O, LSE, N, N_KV, scale, D=, Br=, Bc=), grid (Tr, B*H)."""
    solution_name: str
    causal: bool
    seq: int
    block_q: int
    block_kv: int
    head_dim: int = 16
    batch: int = 1
    heads: int = 2
    advice: tuple = ()  # (symptom, sentence) pairs

    @property
    def programs(self):
        return -(-self.seq // self.block_q)

    def inputs(self):
        shape = (self.batch, self.heads, self.seq, self.head_dim)
        return [_fp16(shape, SEED + n, scale=1.5 if n < 2 else 1.0) for n in range(3)]  # q, k wide: the max moves

    def run(self, kernel, q, k, v, programs=None):
        o = torch.empty_like(q)
        lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
        grid = (self.programs if programs is None else programs, q.shape[0] * q.shape[1])
        kernel[grid](q, k, v, o, lse, q.shape[2], k.shape[2], self.head_dim**-0.5, D=self.head_dim,
                     Br=self.block_q, Bc=self.block_kv)
        return o, lse

    def reference(self, q, k, v):
        return reference_attention(q, k, v, causal=self.causal), _lse(q, k, self.causal)

    def region(self, p):
        """The part of O (B, H, N, d) and LSE (B, H, N) that program p along the grid's first axis writes."""
        return np.s_[:, :, p * self.block_q:(p + 1) * self.block_q]

    def tile(self, p, j):
        return f"tile (i, j) = ({p}, {j})"

    def describe(self, p):
        return f"Q block {p} (rows {p * self.block_q}..{min((p + 1) * self.block_q, self.seq) - 1})"

    def config(self):
        return dict(seq=self.seq, head_dim=self.head_dim, batch=self.batch, heads=self.heads, block_q=self.block_q,
                    block_kv=self.block_kv, causal=self.causal, dtype="fp16")

    def counted(self):
        """gpusim's bytes of the whole launch, {tensor: {"read_bytes", "write_bytes"}}."""
        return _by_tensor(gpusim.simulate("flash2", **self.config()).counts)

    def counted_per_program(self):
        """gpusim's bytes per Q block (all batches and heads): {tensor: bytes read + written} from its trace."""
        out = [{} for _ in range(self.programs)]
        for s in gpusim.simulate("flash2", trace=True, **self.config()).trace:
            for tensor, nbytes in s.loads + s.stores:
                out[s.program[2]][tensor] = out[s.program[2]].get(tensor, 0) + nbytes
        return out

    def tile_bytes(self):
        return self.block_kv * self.head_dim * 2 * self.batch * self.heads  # one K (or V) tile, every head


@dataclass(frozen=True)
class DecodePuzzle:
    """A grouped-query decode kernel(Q, K, V, O, LSE, cache_seqlens, scale, S, H=, H_KV=, D=, Bc=, BLOCK_R=),
    one program per (batch, K/V head): q (B, H, 1, d), a contiguous cache (B, H_kv, S, d)."""
    solution_name: str
    cache: int = 80
    heads: int = 8
    kv_heads: int = 2
    head_dim: int = 16
    block_kv: int = 16
    batch: int = 2
    block_r: int = 16  # tl.dot's smallest tile: the group's rows padded up to it
    advice: tuple = ()

    @property
    def programs(self):
        return self.batch * self.kv_heads

    @property
    def group(self):
        return self.heads // self.kv_heads

    def inputs(self):
        return [_fp16((self.batch, h, n, self.head_dim), SEED + i, 1.5 if i < 2 else 1.0)
                for i, (h, n) in enumerate([(self.heads, 1), (self.kv_heads, self.cache), (self.kv_heads, self.cache)])]

    def run(self, kernel, q, k, v, programs=None):
        o = torch.empty_like(q)
        lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
        lengths = torch.full((self.batch,), k.shape[2], dtype=torch.int32, device=q.device)
        kernel[(self.programs if programs is None else programs,)](
            q, k, v, o, lse, lengths, self.head_dim**-0.5, k.shape[2], H=self.heads, H_KV=self.kv_heads,
            D=self.head_dim, Bc=self.block_kv, BLOCK_R=self.block_r)
        return o, lse

    def reference(self, q, k, v):
        return reference_attention(q, k, v), _lse(q, k.repeat_interleave(self.group, dim=1), False)

    def region(self, p):
        b, kv_head = divmod(p, self.kv_heads)
        return np.s_[b, kv_head * self.group:(kv_head + 1) * self.group]

    def tile(self, p, j):
        return f"K/V block {j} of program {p}"

    def describe(self, p):
        b, kv_head = divmod(p, self.kv_heads)
        return (f"program {p} (request {b}, K/V head {kv_head}: query heads "
                f"{kv_head * self.group}..{(kv_head + 1) * self.group - 1})")

    def launch(self, batch=None, kv_heads=None):
        return decode.make_launch(batch=batch or self.batch, heads=self.group * (kv_heads or self.kv_heads),
                                  kv_heads=kv_heads or self.kv_heads, head_dim=self.head_dim, seq_kv=self.cache,
                                  num_splits=1, block_kv=self.block_kv, grouped=True)

    def counted(self):
        return _by_tensor(decode.count(self.launch()))

    def counted_per_program(self):
        """Every program does the same: gpusim's count of a launch of one program (one request, one K/V head)."""
        one = {t: sum(rw) for (_, t), rw in decode.count(self.launch(batch=1, kv_heads=1)).items()}
        return [one] * self.programs

    def tile_bytes(self):
        return self.block_kv * self.head_dim * 2


def _by_tensor(counts):
    """{(kernel, tensor): (read, write)} summed over kernels: {tensor: {"read_bytes", "write_bytes"}}."""
    out = {}
    for (_, tensor), (r, w) in counts.items():
        entry = out.setdefault(tensor, {"read_bytes": 0, "write_bytes": 0})
        entry["read_bytes"] += r
        entry["write_bytes"] += w
    return out


def _traced(puzzle, kernel, q, k, v, programs=None):
    """The bytes the kernel's loads and stores move (trace_io), {tensor: {"read_bytes", "write_bytes"}}."""
    try:
        with np.errstate(all="ignore"):
            return _by_tensor(trace_io(puzzle.run, kernel, q, k, v, programs, by_kernel=True))
    except Exception as err:  # e.g. a load outside the tensors, which trace_io refuses
        raise Stop("wrong", f"the kernel raised {type(err).__name__}: {_last_line(err)}") from None


def _last_line(err):
    lines = str(err).strip().splitlines()
    return lines[-1] if lines else ""


def _lse(q, k, causal):
    s = q.double() @ k.double().transpose(-1, -2) * q.shape[-1] ** -0.5
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    return s.logsumexp(dim=-1)


def blanks(kernel):
    """How many `...` blanks the kernel's source still holds (its docstring aside)."""
    fn = getattr(kernel, "fn", kernel)
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    return sum(isinstance(node, ast.Constant) and node.value is Ellipsis for node in ast.walk(tree))


def _run(puzzle, kernel, q, k, v, programs=None):
    try:
        with np.errstate(all="ignore"):  # a wrong kernel's NaNs are reported in the verdict
            return puzzle.run(kernel, q, k, v, programs)
    except Exception as err:  # the learner's bug, reported in the verdict rather than as a traceback
        raise Stop("wrong", f"the kernel raised {type(err).__name__}: {_last_line(err)}") from None


def _errors(puzzle, got, want, p, v):
    """(max |O - O_ref| / max |v|, max |LSE - LSE_ref|) over program p's rows; NaN counts as infinitely wrong."""
    (o, lse), (o_ref, lse_ref) = got, want
    at = puzzle.region(p)
    scale = float(v.abs().max())

    def worst(x, ref):
        diff = (x[at].double() - ref[at]).abs()
        return float("inf") if not torch.isfinite(diff).all() else float(diff.max())
    return worst(o, o_ref) / scale, worst(lse, lse_ref)


def _wrong(errors):
    return errors[0] > O_TOL or errors[1] > LSE_TOL


def _first_wrong_tile(puzzle, kernel, q, k, v, p):
    """The first K/V block j such that program p is wrong when the keys end after block j."""
    for j in range(-(-k.shape[2] // puzzle.block_kv)):
        n = min((j + 1) * puzzle.block_kv, k.shape[2])
        kj, vj = k[:, :, :n].contiguous(), v[:, :, :n].contiguous()
        errors = _errors(puzzle, _run(puzzle, kernel, q, kj, vj), puzzle.reference(q, kj, vj), p, v)
        if _wrong(errors):
            return j, errors
    return None, None


def _advice(puzzle, symptom):
    return dict(puzzle.advice).get(symptom, "")


def check_correct(puzzle, kernel, q, k, v):
    """Raise Stop naming the first wrong tile, or return the largest errors."""
    got, want = _run(puzzle, kernel, q, k, v), puzzle.reference(q, k, v)
    errors = [_errors(puzzle, got, want, p, v) for p in range(puzzle.programs)]
    bad = next((p for p, e in enumerate(errors) if _wrong(e)), None)
    if bad is None:
        return max(e[0] for e in errors), max(e[1] for e in errors)
    o_err, lse_err = errors[bad]
    if not np.isfinite(o_err):
        symptom, where = "nan", "its output holds NaN or infinity"
    elif o_err <= O_TOL:
        symptom, where = "lse", f"O is right but the log-sum-exp is off by {lse_err:.3g}"
    else:
        j, _ = _first_wrong_tile(puzzle, kernel, q, k, v, bad)
        symptom = "first_block" if j == 0 else "later_block"
        where = (f"its output is off by {o_err:.3g} x max|v| (tolerance {O_TOL:.2g}), first when the keys end "
                 f"after K/V block {j}: {puzzle.tile(bad, j)}" if j is not None else f"its output is off by {o_err:.3g}")
    raise Stop("wrong", f"Correctness: {puzzle.describe(bad)} is wrong: {where}. {_advice(puzzle, symptom)}")


def check_bytes(puzzle, kernel, q, k, v):
    """Raise Stop naming the first program whose traffic differs from gpusim's, or return the count."""
    moved = _traced(puzzle, kernel, q, k, v)
    counted = puzzle.counted()
    if moved == counted:
        return counted
    expected = puzzle.counted_per_program()
    before = {}
    for p in range(puzzle.programs):
        upto = {t: sum(rw.values()) for t, rw in _traced(puzzle, kernel, q, k, v, p + 1).items()}
        mine = {t: n - before.get(t, 0) for t, n in upto.items()}
        before = upto
        if {t: n for t, n in mine.items() if n} != {t: n for t, n in expected[p].items() if n}:
            break
    tiles = ", ".join(f"{t} {mine.get(t, 0) / puzzle.tile_bytes():g} tiles (gpusim: "
                      f"{expected[p].get(t, 0) / puzzle.tile_bytes():g})" for t in ("K", "V"))
    others = ", ".join(f"{t} {mine.get(t, 0):,} B (gpusim: {expected[p].get(t, 0):,} B)"
                       for t in sorted(set(mine) | set(expected[p]) - {"K", "V"})
                       if mine.get(t, 0) != expected[p].get(t, 0) and t not in ("K", "V"))
    more = any(mine.get(t, 0) > expected[p].get(t, 0) for t in ("K", "V"))
    symptom = "more_kv" if more else "other_bytes"
    return _raise_bytes(puzzle, p, tiles + (f"; {others}" if others else ""), moved, counted, symptom)


def _raise_bytes(puzzle, p, detail, moved, counted, symptom):
    total = sum(sum(rw.values()) for rw in moved.values())
    want = sum(sum(rw.values()) for rw in counted.values())
    raise Stop("wrong", f"Bytes: the output is right, but the kernel moves {total:,} B where gpusim's schedule "
                         f"moves {want:,} B. The first program that differs is {puzzle.describe(p)}: {detail}. "
                         f"{_advice(puzzle, symptom)}")


PUZZLES = {
    "online_softmax": Flash2Puzzle("online_softmax", causal=False, seq=64, block_q=16, block_kv=16, advice=(
        ("nan", "A NaN comes from exp(-inf - (-inf)) or 0 / 0: m_new must be the maximum of m_i and the tile's "
                "row max, and O = acc / l_i with l_i > 0."),
        ("first_block", "Even one K/V block is wrong, so the problem is not the rescaling: check p_ij = "
                        "exp(s_ij - m_new[:, None]), l_i's row sum and acc += p_ij @ v_j."),
        ("later_block", "The first block is right and a later one is wrong: that is where the running max grows. "
                        "Both l_i and acc hold sums taken under the old max: multiply them by alpha = "
                        "exp(m_i - m_new) before adding the new tile's terms."),
        ("lse", "The log-sum-exp is m_i + log(l_i), with the final m_i and l_i."),
        ("more_kv", "Load each K_j and V_j once per step of the loop."),
        ("other_bytes", "Q_i is loaded once before the loop (it stays in SRAM), O_i and the LSE are stored once "
                        "after it."))),
    "causal_skip": Flash2Puzzle("causal_skip", causal=True, seq=96, block_q=32, block_kv=16, advice=(
        ("nan", "A row that sees no key has l_i = 0: every Q block must visit K/V block 0 and the blocks up to "
                "the one holding its last row's key."),
        ("first_block", "The tile is wrong from the start: are the diagonal blocks masked (key <= row)?"),
        ("later_block", "A block that crosses the diagonal is unmasked, or one a row needs is not visited: mask "
                        "every block from n_whole = i * Br // Bc on, and visit blocks up to "
                        "((i + 1) * Br - 1) // Bc."),
        ("lse", "The log-sum-exp is m_i + log(l_i), with the final m_i and l_i."),
        ("more_kv", "The extra tiles lie entirely right of the diagonal: the mask hides all of them, so they "
                    "cost bytes and FLOPs for nothing. Stop the loop after the block that holds the last row's "
                    "last key: n_blocks = ((i + 1) * Br - 1) // Bc + 1 (at most cdiv(N_KV, Bc))."),
        ("other_bytes", "Q_i is loaded once, O_i and the LSE are stored once."))),
    "gqa_decode": DecodePuzzle("gqa_decode", advice=(
        ("nan", "Rows past the group are padding: load their q with a mask and store only the group's rows."),
        ("first_block", "The group's rows are not the query heads of this K/V head: query head h reads K/V head "
                        "h // GROUP, so K/V head g serves heads g * GROUP .. g * GROUP + GROUP - 1."),
        ("later_block", "The first chunk is right and a later one is wrong: rescale l_i and acc by "
                        "exp(m_i - m_new) when the running max grows."),
        ("lse", "Store the LSE of each of the group's rows: m_i + log(l_i)."),
        ("more_kv", "Each K/V chunk is loaded more than once per program: stack the group's query rows into "
                    "one tile (BLOCK_R rows, the padding masked) and load K_j, V_j once for all of them."),
        ("other_bytes", "Each program loads its group's q rows once and stores their O and LSE once; the "
                        "padding rows must be masked off."))),
}


def check(name, kernel):
    """Check the learner's Triton `kernel` for puzzle `name`; returns a Verdict (shown in color)."""
    puzzle = PUZZLES[name]
    try:
        if blanks(kernel):
            raise Stop("not yet", f"the kernel still has {blanks(kernel)} blank(s) (`...`): fill them in and run "
                                   f"the cell again.")
        q, k, v = puzzle.inputs()
        o_err, lse_err = check_correct(puzzle, kernel, q, k, v)
        if not INTERPRETED:
            return Verdict(name, "right", f"O within {o_err:.2g} x max|v| of float64 attention (the bytes are "
                                          f"counted in Triton's interpreter: run on a CPU for that check).")
        counted = check_bytes(puzzle, kernel, q, k, v)
    except Stop as stop:
        return Verdict(name, stop.status, stop.message)
    moved = ", ".join(f"{t} {rw['read_bytes'] + rw['write_bytes']:,} B" for t, rw in counted.items())
    return Verdict(name, "right", f"O within {o_err:.2g} x max|v| and the LSE within {lse_err:.1e} of float64 "
                                  f"attention, and the loads and stores equal gpusim's count to the byte: {moved}.")


def solution_source(name):
    """The source of the hidden reference solution of puzzle `name`."""
    return inspect.getsource(getattr(puzzle_solutions, PUZZLES[name].solution_name).fn)


def solution(name):
    """Print the reference solution of puzzle `name`."""
    print(solution_source(name))
