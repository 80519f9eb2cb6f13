"""The kinds of kernel puzzle: what each launches, its float64 reference, its tolerances and the bytes it
should move (gpusim's count where a pass models the kernel, a closed form otherwise).

Every kind gives the checks of checker.py the same things: inputs() {name: tensor}, run(kernel, launcher,
inputs) {output name: tensor}, reference(inputs) {output name: float64 tensor}, tolerance(name, want,
inputs) (absolute), counted() {tensor: {"read_bytes", "write_bytes"}}, describe(program), and `layouts`
{tensor: names of its leading axes} for the offsets check. Flash2Puzzle and DecodePuzzle also name the first
wrong tile and program (correct_by_tile, bytes_by_program in tiles.py).
"""
from dataclasses import dataclass, replace

import numpy as np
import torch

import gpusim
from gpusim import backward, decode
from gpusim.softmax import softmax as model_softmax
from gpusim_kernels import reference_attention

U_FP16 = 2.0**-11  # unit roundoff of fp16
U_FP32 = 2.0**-24  # unit roundoff of fp32
# O: P is rounded to fp16 before P @ V and O once more on the way out, each at most u * max|v| per element
# (O is an average of rows of V); the fp32 sums add far less. Twice that worst case:
O_TOL = 4 * U_FP16  # times max |v|
LSE_TOL = 1e-4  # fp32 statistics: a blocked fp32 sum of at most a hundred terms, as tests/test_kernels.py
SEED = 14
FP32 = 4  # bytes of an fp32 statistic
SEE = "puzzles.show_accesses({!r}, ...) draws what each program loaded."  # ends a bytes verdict


def fp16(shape, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * scale).to(torch.float16)


def by_tensor(counts):
    """{(kernel, tensor): (read, write)} summed over kernels: {tensor: {"read_bytes", "write_bytes"}}."""
    out = {}
    for (_, tensor), (r, w) in counts.items():
        entry = out.setdefault(tensor, {"read_bytes": 0, "write_bytes": 0})
        entry["read_bytes"] += r
        entry["write_bytes"] += w
    return out


def lse(q, k, causal=False):
    s = q.double() @ k.double().transpose(-1, -2) * q.shape[-1] ** -0.5
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    return s.logsumexp(dim=-1)


@dataclass(frozen=True)
class Puzzle:
    """What every kind shares: its name (the solution's), hints by symptom, and the output tolerances."""
    name: str
    advice: tuple = ()  # (symptom, sentence) pairs
    outputs = ("O", "LSE")
    launcher = False  # True: the learner also writes the Python function that allocates and launches
    causal = False  # True: under the causal mask, whose masked steps the checker counts (checker.py, check 5)
    region = None  # region(p): the outputs' part program p writes, where correctness is judged tile by tile
    counted_per_program = None  # counted_per_program(): gpusim's bytes per program, where a miss is named by program
    schedule = None  # schedule(): gpusim's steps, where the kernel's loads are shown beside them step by step
    layouts = {}
    counted_by = "gpusim's count"

    def hint(self, symptom):
        return dict(self.advice).get(symptom, "")

    @property
    def judged(self):
        """The outputs in the order the correctness check looks for a wrong element: the first one found is named."""
        return self.outputs

    def symptom(self, name, index, got, inputs):
        """A symptom more telling than the wrong output's name, for its element `index` (None: the name's)."""
        return None

    def describe(self, program):
        return f"program {_ids(program)}"

    def variants(self):
        """The same puzzle at the further shapes its check runs once this one is right (none)."""
        return ()

    def keys_as_queries(self, inputs):
        """The inputs with K and V cut to as many rows as Q has, where they hold more (None: they do not): a kernel
        wrong on `inputs` and right on these takes Q's length for K's somewhere (tiles.correct_by_tile)."""
        return None

    def tolerance(self, name, want, inputs):
        """O: O_TOL x max|v| (an average of V's rows, rounded to fp16); LSE: LSE_TOL (fp32 statistics)."""
        return LSE_TOL if name.startswith("LSE") else O_TOL * float(inputs["V"].abs().max())


def _ids(program):
    return "(" + ", ".join(map(str, program)) + ")"


@dataclass(frozen=True)
class Flash2Puzzle(Puzzle):
    """A FlashAttention-2 forward kernel(Q, K, V, O, LSE, N, N_KV, scale, [H=,] D=, Br=, Bc=), grid (Tr, B*H)."""
    causal: bool = False
    seq: int = 64
    seq_kv: int | None = None  # N_KV, None: N
    block_q: int = 16
    block_kv: int = 16
    head_dim: int = 16
    batch: int = 1
    heads: int = 2
    heads_arg: bool = False  # the kernel takes H (it splits b * H + h itself)
    also: tuple = ()  # (N, Br, Bc) of the further launches the check runs: a formula right at one tile shape can be
    # wrong at another (Bc dividing Br, or not)
    layouts = {"Q": ("batch", "head"), "K": ("batch", "head"), "V": ("batch", "head"), "O": ("batch", "head"),
               "LSE": ("batch", "head")}

    @property
    def programs(self):
        return -(-self.seq // self.block_q)

    @property
    def shape(self):
        return f"N = {self.seq}, Br = {self.block_q}, Bc = {self.block_kv}"

    def variants(self):
        return tuple(replace(self, seq=n, block_q=br, block_kv=bc, also=()) for n, br, bc in self.also)

    def inputs(self):
        """Random q, k, v (q and k wide); in head 0 of request 0 the first K/V block scores about 128 above the
        rest, so that a rescale by each tile's own max rather than the running one, exp(m_i - m_ij), overflows
        fp32 there (the other heads check everything else: head 0's later blocks weigh nothing)."""
        shape = (self.batch, self.heads, self.seq, self.head_dim)  # (B, H, N, d); K and V (B, H, N_KV, d)
        kv_shape = shape[:2] + (self.seq_kv or self.seq, self.head_dim)
        x = {n: fp16(shape if n == "Q" else kv_shape, SEED + i, scale=1.5 if i < 2 else 1.0)
             for i, n in enumerate("QKV")}
        shift = 8 / self.head_dim**0.25  # q . k / sqrt(d) moves by shift^2 * sqrt(d) = 64: up in block 0, down after
        x["Q"][0, 0] += shift
        x["K"][0, 0, :self.block_kv] += shift
        x["K"][0, 0, self.block_kv:] -= shift
        return x

    def run(self, kernel, launcher, inputs):
        q, k, v = inputs["Q"], inputs["K"], inputs["V"]
        o = torch.empty_like(q)
        lse_ = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)  # (B, H, N)
        grid = (self.programs, q.shape[0] * q.shape[1])
        heads = {"H": self.heads} if self.heads_arg else {}
        kernel[grid](q, k, v, o, lse_, q.shape[2], k.shape[2], self.head_dim**-0.5, **heads, D=self.head_dim,
                     Br=self.block_q, Bc=self.block_kv)
        return {"O": o, "LSE": lse_}

    def reference(self, inputs):
        q, k, v = inputs["Q"], inputs["K"], inputs["V"]
        return {"O": reference_attention(q, k, v, causal=self.causal), "LSE": lse(q, k, self.causal)}

    def keys_as_queries(self, inputs):
        if (self.seq_kv or self.seq) <= self.seq:
            return None
        return {**inputs, **{t: inputs[t][:, :, :self.seq].contiguous() for t in "KV"}}

    def describe(self, program):
        b, h = divmod(program[1], self.heads)  # the grid (row blocks, B*H)
        return f"program {_ids(program)} (b={b}, h={h})"

    def region(self, p):
        """The part of O (B, H, N, d) and LSE (B, H, N) that program p along the grid's first axis writes."""
        return np.s_[:, :, p * self.block_q:(p + 1) * self.block_q]

    def tile(self, p, j):
        return f"tile (i, j) = ({p}, {j})"

    def block(self, p):
        return f"Q block {p} (rows {p * self.block_q}..{min((p + 1) * self.block_q, self.seq) - 1})"

    def config(self):
        return dict(seq=self.seq, seq_kv=self.seq_kv or self.seq, head_dim=self.head_dim, batch=self.batch,
                    heads=self.heads, block_q=self.block_q, block_kv=self.block_kv, causal=self.causal, dtype="fp16")

    def counted(self):
        """gpusim's bytes of the whole launch, {tensor: {"read_bytes", "write_bytes"}}."""
        return by_tensor(gpusim.simulate("flash2", **self.config()).counts)

    def counted_per_program(self):
        """gpusim's bytes per Q block (all batches and heads): {tensor: bytes read + written} from its trace."""
        out = [{} for _ in range(self.programs)]
        for s in self.schedule():
            for tensor, nbytes in s.loads + s.stores:
                out[s.program[2]][tensor] = out[s.program[2]].get(tensor, 0) + nbytes
        return out

    def schedule(self):
        """gpusim's steps of this configuration (Step: program (b, h, i), tile (i, j), loads, stores)."""
        return gpusim.simulate("flash2", trace=True, **self.config()).trace

    def tile_bytes(self):
        return self.block_kv * self.head_dim * 2 * self.batch * self.heads  # one K (or V) tile, every head


@dataclass(frozen=True)
class DecodePuzzle(Puzzle):
    """A grouped-query decode kernel, one program per (batch, K/V head): q (B, H, 1, d) over a contiguous cache
    (B, H_kv, S, d) (kernel(Q, K, V, O, LSE, cache_seqlens, scale, S, H=, H_KV=, D=, Bc=, BLOCK_R=)) or a paged
    one (page_size set: K, V (pages, page_size, H_kv, d), kernel(Q, K, V, O, LSE, block_table, cache_seqlens,
    scale, max_pages, H=, H_KV=, D=, Bc=, BLOCK_R=), a page of Bc keys)."""
    cache: int = 80
    heads: int = 8
    kv_heads: int = 2
    head_dim: int = 16
    block_kv: int = 16
    batch: int = 2
    block_r: int = 16  # tl.dot's smallest tile: the group's rows padded up to it
    page_size: int | None = None
    lengths: tuple | None = None  # each request's cached keys, at most `cache` (None: every request `cache`)
    layouts = {"Q": ("batch", "head"), "O": ("batch", "head"), "LSE": ("batch", "head"), "K": ("batch", "K/V head"),
               "V": ("batch", "K/V head")}

    def __post_init__(self):
        if self.page_size is not None:  # K, V are pages: only Q, O and LSE have batch and head axes
            object.__setattr__(self, "layouts", {t: self.layouts[t] for t in ("Q", "O", "LSE")})

    @property
    def programs(self):
        return self.batch * self.kv_heads

    @property
    def group(self):
        return self.heads // self.kv_heads

    def _contiguous(self):  # (B, H, 1, d) and the cache (B, H_kv, S, d)
        return {n: fp16((self.batch, h, s, self.head_dim), SEED + i, 1.5 if i < 2 else 1.0) for i, (n, h, s) in
                enumerate([("Q", self.heads, 1), ("K", self.kv_heads, self.cache), ("V", self.kv_heads, self.cache)])}

    def inputs(self):
        x = self._contiguous()
        if self.page_size is None:
            return x
        per_request = self.cache // self.page_size
        pages = torch.randperm(self.batch * per_request, generator=torch.Generator().manual_seed(SEED))
        table = pages.view(self.batch, per_request).to(torch.int32)  # (B, max_pages): request b's page j
        paged = {}
        for n in "KV":  # (B, H_kv, S, d) -> (pages, page_size, H_kv, d), page table[b, j] holding keys j*P..
            rows = x[n].view(self.batch, self.kv_heads, per_request, self.page_size, self.head_dim)
            paged[n] = torch.empty(self.batch * per_request, self.page_size, self.kv_heads, self.head_dim,
                                   dtype=torch.float16)
            paged[n][table.flatten().long()] = rows.permute(0, 2, 3, 1, 4).reshape(-1, self.page_size,
                                                                                  self.kv_heads, self.head_dim)
        return {"Q": x["Q"], **paged, "block_table": table}

    def run(self, kernel, launcher, inputs):
        q = inputs["Q"]
        o = torch.empty_like(q)
        lse_ = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
        paged = self.page_size is not None
        keys = self.cache if paged else inputs["K"].shape[2]  # fewer when the check cuts the cache short
        lengths = torch.tensor(self.seq_kv(keys), dtype=torch.int32, device=q.device)
        table = (inputs["block_table"],) if paged else ()
        size = inputs["block_table"].shape[1] if paged else keys  # max_pages or S
        kernel[(self.programs,)](
            q, inputs["K"], inputs["V"], o, lse_, *table, lengths, self.head_dim**-0.5, size, H=self.heads,
            H_KV=self.kv_heads, D=self.head_dim, Bc=self.block_kv, BLOCK_R=self.block_r)
        return {"O": o, "LSE": lse_}

    def seq_kv(self, keys=None):
        """Each request's cached keys in a cache of `keys` positions (the check may cut it short)."""
        keys = self.cache if keys is None else keys
        return [min(n, keys) for n in (self.lengths or (self.cache,) * self.batch)]

    def reference(self, inputs):
        x = inputs if self.page_size is None else self._contiguous()
        q, k, v = x["Q"], x["K"], x["V"]
        out = {"O": torch.empty(q.shape, dtype=torch.float64), "LSE": torch.empty(q.shape[:3], dtype=torch.float64)}
        for b, n in enumerate(self.seq_kv(k.shape[2])):  # request b over its first n keys
            qb, kb, vb = q[b:b + 1], k[b:b + 1, :, :n], v[b:b + 1, :, :n]
            out["O"][b] = reference_attention(qb, kb, vb)[0]
            out["LSE"][b] = lse(qb, kb.repeat_interleave(self.group, dim=1))[0]
        return out

    def describe(self, program):
        b, kv_head = divmod(program[0], self.kv_heads)
        return (f"program {program[0]} (request {b}, K/V head {kv_head}: query heads "
                f"{kv_head * self.group}..{(kv_head + 1) * self.group - 1})")

    def block(self, p):
        return self.describe((p,))

    def region(self, p):
        b, kv_head = divmod(p, self.kv_heads)
        return np.s_[b, kv_head * self.group:(kv_head + 1) * self.group]

    def tile(self, p, j):
        return f"K/V block {j} of program {p}"

    def launch(self, seq_kv=None, kv_heads=None):
        seq_kv = self.seq_kv() if seq_kv is None else seq_kv
        return decode.make_launch(batch=len(seq_kv), heads=self.group * (kv_heads or self.kv_heads),
                                  kv_heads=kv_heads or self.kv_heads, head_dim=self.head_dim, seq_kv=seq_kv,
                                  num_splits=1, block_kv=self.block_kv, page_size=self.page_size, grouped=True)

    def counted(self):
        return by_tensor(decode.count(self.launch()))

    def counted_per_program(self):
        """gpusim's count of a launch of each program alone (one request, one K/V head), program b * H_KV + g."""
        one = [{t: sum(rw) for (_, t), rw in decode.count(self.launch([n], kv_heads=1)).items()}
               for n in self.seq_kv()]
        return [one[p // self.kv_heads] for p in range(self.programs)]

    def tile_bytes(self):
        return self.block_kv * self.head_dim * 2


@dataclass(frozen=True)
class BackwardPuzzle(Puzzle):
    """FlashAttention-2's backward, one of its kernels (gpusim.backward's "dkdv" or "dq"), non-causal:
    kernel(Q, K, V, dO, LSE, D, <outputs>, N, scale, H=, HEAD_DIM=, Br=, Bc=), grid (row blocks, B*H). D is
    rowsum(dO ∘ O), the preprocess kernel's output; LSE the forward's."""
    kernel: str = "dkdv"
    seq: int = 40  # not a multiple of the tiles: the last K/V block and the last Q block are ragged (8 of 16 rows)
    block_q: int = 16  # Br: the rows the program holds (K/V rows in dkdv, Q rows in dq)
    block_kv: int = 16  # Bc: the rows that stream past
    head_dim: int = 16
    batch: int = 2
    heads: int = 2
    layouts = {t: ("batch", "head") for t in ("Q", "K", "V", "dO", "LSE", "D", "dQ", "dK", "dV")}

    @property
    def outputs(self):
        return ("dK", "dV") if self.kernel == "dkdv" else ("dQ",)

    def inputs(self):
        shape = (self.batch, self.heads, self.seq, self.head_dim)  # (B, H, N, d)
        x = {n: fp16(shape, SEED + i, scale=1.5 if i < 2 else 1.0) for i, n in enumerate(("Q", "K", "V", "dO"))}
        o = reference_attention(x["Q"], x["K"], x["V"])
        x["LSE"] = lse(x["Q"], x["K"]).float()  # (B, H, N) fp32, as the forward saves it
        x["D"] = (x["dO"].double() * o.to(torch.float16).double()).sum(-1).float()  # (B, H, N) fp32
        return x

    def run(self, kernel, launcher, inputs):
        out = {n: torch.empty_like(inputs["Q"]) for n in self.outputs}
        n_rows = -(-self.seq // self.block_q)
        grid = (n_rows, self.batch * self.heads)
        kernel[grid](*(inputs[n] for n in ("Q", "K", "V", "dO", "LSE", "D")), *out.values(), self.seq,
                     self.head_dim**-0.5, H=self.heads, HEAD_DIM=self.head_dim, Br=self.block_q, Bc=self.block_kv)
        return out

    def reference(self, inputs):
        q, k, v, do = (inputs[n].double().requires_grad_(n != "dO") for n in ("Q", "K", "V", "dO"))
        o = torch.softmax(q @ k.transpose(-1, -2) * self.head_dim**-0.5, -1) @ v
        grads = dict(zip(("dQ", "dK", "dV"), torch.autograd.grad(o, (q, k, v), do)))
        return {n: grads[n].detach() for n in self.outputs}

    def tolerance(self, name, want, inputs):
        """Each gradient is a sum of N products rounded to fp16 once on the way in (P, dS) and once out: a few
        units of fp16 roundoff of its largest entry; 8u leaves room for dS = P (dP - D)'s cancellation."""
        return 8 * U_FP16 * float(want.abs().max())

    describe = Flash2Puzzle.describe  # the same grid: (row blocks, B*H)

    def counted(self):
        cfg = backward.config("flash2", seq=self.seq, head_dim=self.head_dim, batch=self.batch, heads=self.heads,
                              block_q=self.block_q, block_kv=self.block_kv)
        return by_tensor({(k, t): rw for (k, t), rw in backward.count(cfg).items() if k == self.kernel})


@dataclass(frozen=True)
class MergePuzzle(Puzzle):
    """The merge of partial results (O_s, LSE_s), s = 0 .. S-1, each attention over a part of the keys, into
    attention over all of them: O = Σ_s exp(LSE_s - LSE) O_s, LSE = log Σ_s exp(LSE_s).
    splits=None: Flash-Decoding's reduce (gpusim.decode's "reduce" kernel), kernel(O_partial, LSE_partial, O,
    LSE, cache_seqlens, H=, SPLITS=, D=, Bc=), one program per (head, request), the partials of its active
    splits (a request's last splits may be empty: gpusim.decode.DecodeLaunch.active_splits). gpus=2: two GPUs' results,
    kernel(O1, LSE1, O2, LSE2, O, LSE, D=), one program per query row of (B, H, N)."""
    gpus: int | None = None
    lengths: tuple = (112, 144, 16)  # keys cached per request (the reduce): 7, 9 and 1 chunks fill 4, 3 and 1 splits
    splits: int = 4
    block_kv: int = 16
    batch: int | None = None  # requests: 2 (two GPUs); the reduce's one per length
    heads: int = 2
    seq: int = 24  # query rows per (b, h) (two GPUs)
    head_dim: int = 16

    def __post_init__(self):
        batch = len(self.lengths) if not self.gpus else 2  # the reduce: one request per length
        if self.batch not in (None, batch):
            raise ValueError(f"batch={self.batch}: this merge has {batch} requests"
                             + ("" if self.gpus else f", one per length of {self.lengths}"))
        object.__setattr__(self, "batch", batch)

    @property
    def layouts(self):
        return {} if self.gpus else {t: (None, "batch", "head") for t in ("O_partial", "LSE_partial")}

    @property
    def launcher(self):  # two GPUs: the learner allocates O and the LSE and launches
        return bool(self.gpus)

    @property
    def judged(self):
        """Two GPUs: the LSE first, since O is weighted by exp(LSE_g - LSE) and a wrong LSE makes it wrong too (the
        verdict then named O and asked for the weights the learner had right). The reduce divides O by its own sum,
        not by exp(LSE): O first, as its outputs."""
        return ("LSE", "O") if self.gpus else self.outputs

    @property
    def counted_by(self):
        return "the closed form" if self.gpus else "gpusim's count"

    def launch(self):
        return decode.make_launch(batch=self.batch, heads=self.heads, kv_heads=self.heads, head_dim=self.head_dim,
                                  seq_kv=list(self.lengths), num_splits=self.splits, block_kv=self.block_kv)

    def inputs(self):
        rows = (self.batch, self.heads, self.seq if self.gpus else 1)
        parts = self.gpus or self.splits
        o = [fp16((*rows, self.head_dim), SEED + s) for s in range(parts)]  # each a softmax average of V rows
        # LSEs near 90, as for long rows of large scores: exp(LSE) overflows fp32 (above 88.7) unless the max goes first;
        # head 1's near -90 (scores far below zero): exp(LSE - m) of a fixed m that keeps head 0 finite underflows there
        lse_ = [fp16(rows, SEED + 10 + s, scale=3.0).float() + 90.0 for s in range(parts)]
        for x in lse_:
            x[:, 1] -= 180.0
        if self.gpus:
            return {f"{n}{g + 1}": x for g in range(self.gpus) for n, x in (("O", o[g]), ("LSE", lse_[g]))}
        active = self.launch().active_splits  # (B,): a request's splits past its keys hold nothing
        for b, a in enumerate(active):
            for s in range(int(a), self.splits):
                o[s][b], lse_[s][b] = 0.0, float("-inf")
        return {"O_partial": torch.stack(o).float(), "LSE_partial": torch.stack(lse_),  # (S, B, H, 1, d), (S, B, H, 1)
                "cache_seqlens": torch.tensor(self.lengths, dtype=torch.int32)}

    def parts(self, inputs):
        if self.gpus:
            return (torch.stack([inputs[f"O{g + 1}"] for g in range(self.gpus)]),
                    torch.stack([inputs[f"LSE{g + 1}"] for g in range(self.gpus)]))
        return inputs["O_partial"], inputs["LSE_partial"]

    def run(self, kernel, launcher, inputs):
        if self.gpus:
            return dict(zip(self.outputs, launcher(*(inputs[n] for n in ("O1", "LSE1", "O2", "LSE2")))))
        o_s = inputs["O_partial"]
        o = torch.empty(o_s.shape[1:], dtype=torch.float16)
        lse_ = torch.empty(o_s.shape[1:-1], dtype=torch.float32)
        kernel[(self.heads, self.batch)](o_s, inputs["LSE_partial"], o, lse_, inputs["cache_seqlens"], H=self.heads,
                                         SPLITS=self.splits, D=self.head_dim, Bc=self.block_kv)
        return {"O": o, "LSE": lse_}

    def reference(self, inputs):
        o_s, lse_s = (x.double() for x in self.parts(inputs))
        total = lse_s.logsumexp(0)
        return {"O": (torch.exp(lse_s - total)[..., None] * o_s).sum(0), "LSE": total}

    def tolerance(self, name, want, inputs):
        """O: a convex combination of the partial O's, rounded to fp16 once: 2u x its largest entry. The LSE: m plus
        the log of an fp32 sum of a few terms, near 90 here, where an fp32 ulp is 7.6e-6; a kernel that works in
        base 2 (exp2, log2: LSE x log2(e) near 130, and back) rounds there too (1.2e-5 off): 8 fp32 unit roundoffs
        of its largest entry (4.4e-5 at 92) take either base, and any mistake the hints name is off by far more."""
        return 8 * U_FP32 * float(want.abs().max()) if name == "LSE" else 2 * U_FP16 * float(want.abs().max())

    def describe(self, program):
        if self.gpus:
            return f"program {program[0]} (query row {program[0]} of B*H*N)"
        return f"program {_ids(program[:2])} (h={program[0]}, b={program[1]}: {self.lengths[program[1]]} keys)"

    def symptom(self, name, index, got, inputs):
        """The symptom "splits" where (b, h)'s output is the merge of only the first k of the splits request b
        fills (a count of splits that is not the request's own: a constant, say)."""
        if self.gpus:
            return None
        b, h = index[:2]
        o_s, lse_s = (x[:, b, h].double() for x in self.parts(inputs))  # (S, 1, d), (S, 1)
        want = self.reference(inputs)
        for k in range(1, int(self.launch().active_splits[b])):  # the first k splits alone
            total = lse_s[:k].logsumexp(0)
            merged = {"O": (torch.exp(lse_s[:k] - total)[..., None] * o_s[:k]).sum(0), "LSE": total}[name]
            if ((got[name][b, h].double() - merged).abs() <= self.tolerance(name, want[name], inputs)).all():
                return "splits"
        return None

    def counted(self):
        if self.gpus:  # read O1, O2 (N*d each, fp16) and LSE1, LSE2 (N, fp32); write O (N*d) and the LSE (N)
            rows = self.batch * self.heads * self.seq
            return {"O1": {"read_bytes": rows * self.head_dim * 2, "write_bytes": 0},
                    "O2": {"read_bytes": rows * self.head_dim * 2, "write_bytes": 0},
                    "LSE1": {"read_bytes": rows * FP32, "write_bytes": 0},
                    "LSE2": {"read_bytes": rows * FP32, "write_bytes": 0},
                    "O": {"read_bytes": 0, "write_bytes": rows * self.head_dim * 2},
                    "LSE": {"read_bytes": 0, "write_bytes": rows * FP32}}
        return by_tensor({(k, t): rw for (k, t), rw in decode.count(self.launch()).items() if k == "reduce"})


@dataclass(frozen=True)
class LauncherPuzzle(Puzzle):
    """A warm-up: the learner writes the kernel and the Python function that allocates the output and launches
    it (launcher(*inputs) returns the output). Kinds: "tile" (copy an (M, N) matrix in masked tiles), "dot"
    (C = A @ B in tiles with tl.dot), "softmax" (one row per program, whole), "online" (the row streamed in
    chunks, Milakov & Gimelshein's online softmax: gpusim.softmax)."""
    kind: str = "tile"
    shape: tuple = (40, 50)  # (M, N); dot: (M, K, N)
    block: int = 16  # the tile's side (tile, dot) or the chunk (online)
    outputs = ("Y",)
    launcher = True

    @property
    def counted_by(self):
        return "gpusim.softmax's count" if self.kind == "online" else "the closed form"

    def inputs(self):
        if self.kind == "dot":
            m, k, n = self.shape
            return {"A": fp16((m, k), SEED), "B": fp16((k, n), SEED + 1)}
        x = fp16(self.shape, SEED, scale=40.0)  # wide: exp overflows fp32 above 88.7 without the max
        x[self.shape[0] // 2:, :self.block] += 100  # the later rows' first chunk 200 above the rest: a rescale by
        x[self.shape[0] // 2:, self.block:] -= 100  # each chunk's own max, not the running one, overflows there
        return {"X": x}

    def run(self, kernel, launcher, inputs):
        return {"Y": launcher(*inputs.values())}

    def reference(self, inputs):
        x = [t.double() for t in inputs.values()]
        return {"Y": {"tile": lambda: x[0], "dot": lambda: x[0] @ x[1]}.get(self.kind, lambda: x[0].softmax(-1))()}

    def tolerance(self, name, want, inputs):
        """tile: a copy is exact. Otherwise the fp32 result is rounded to fp16 once on the way out (u x its
        largest entry; softmax: entries <= 1); twice that leaves room for fp32's sums (K or N terms of 2^-24)."""
        return 0.0 if self.kind == "tile" else 2 * U_FP16 * float(want.abs().max())

    def counted(self):
        e = 2  # fp16
        if self.kind == "dot":  # program (i, j) reads A's row panel and B's column panel: A cdiv(N, BN) times,
            m, k, n = self.shape  # B cdiv(M, BM) times; writes C once
            return {"A": {"read_bytes": m * k * e * -(-n // self.block), "write_bytes": 0},
                    "B": {"read_bytes": k * n * e * -(-m // self.block), "write_bytes": 0},
                    "Y": {"read_bytes": 0, "write_bytes": m * n * e}}
        m, n = self.shape
        reads = 1  # tile, softmax: read M*N once, write M*N once
        if self.kind == "online":  # gpusim.softmax's online variant: 2 loads + 1 store per element
            reads = model_softmax(np.zeros(n, np.float32), "online", self.block).loads // n
        return {"X": {"read_bytes": reads * m * n * e, "write_bytes": 0},
                "Y": {"read_bytes": 0, "write_bytes": m * n * e}}
